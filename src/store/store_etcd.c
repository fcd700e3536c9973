/*
 * store_etcd.c — the distributed back-end: the store on an etcd v3 cluster
 * (3.4 and later), through etcd's JSON gateway (/v3/kv/..., /v3/watch),
 * with libcurl.  No maintained C client for etcd's gRPC API exists; the
 * gateway is etcd's own translation of the same calls, so the semantics are
 * etcd's, call for call:
 *
 *   store              etcd
 *   revision           header.revision (the store revision IS etcd's)
 *   get / range        Range (linearizable), key .. range_end, limit
 *   range_at           Range with revision; count from the same answer
 *   count              Range with count_only
 *   txn                Txn: compares (MOD, CREATE, VERSION), puts and
 *                      DeleteRanges; succeeded, header.revision
 *   events             one Watch of the whole key space, cached
 *                      (store_etcd_watch.c)
 *   compact            CAS on ETCD_COMPACT_KEY, then Compaction
 *
 * URL: etcd://HOST:PORT[,HOST:PORT...][?ca=FILE&cert=FILE&key=FILE
 *      &user=NAME&password_file=FILE].  With ca= the endpoints are https
 * (their certificates verified against that CA); cert= and key= present a
 * client certificate; user= logs in with the password read from
 * password_file= and sends etcd's token, logging in again when it expires.
 * An endpoint may also be written http://HOST:PORT or https://HOST:PORT.
 *
 * Failover: requests go to one endpoint; when it cannot be reached (or, for
 * a read, has no leader) the next one is tried, each at most once per call.
 * A write is retried elsewhere only when it never reached etcd (connection
 * refused, no route): after that its outcome is unknown, and the caller gets
 * -EIO rather than a retry that could apply it twice.
 *
 * Limits (etcd's defaults, checked before sending so that the caller gets
 * -E2BIG, not a half-understood error): at most ETCD_MAX_OPS operations per
 * transaction branch and as many comparisons, at most ETCD_MAX_REQUEST bytes
 * of keys and values in one request.
 *
 * Durability: etcd acknowledges a write once a majority has it on disk, so
 * there is no group commit here (defer_sync and flush are NULL).
 *
 * Invariants
 *  1. ETCD_COMPACT_KEY is never returned by get, range, count or events,
 *     and callers cannot write it (it does not start with '/', and every
 *     caller key does... but nothing relies on that: a caller's write of it
 *     is refused with -EINVAL).
 *  2. What a thread knows of the revision (etcd_known) only grows; it is
 *     the highest revision any answer to that thread named, so its read
 *     of events after its write waits for that write.
 */
#include "store/store_etcd.h"
#include "store/store_limits.h"
#include "lib/base64.h"
#include "lib/errmsg.h"
#include "lib/secret_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ETCD_MAX_OPS 128			/* --max-txn-ops */
#define ETCD_MAX_REQUEST (1536u * 1024)		/* --max-request-bytes, 1.5 MiB */
#define ETCD_REQUEST_OVERHEAD 4096		/* what a request adds to its keys and values */
#define PASSWORD_MAX 4096

/* A byte string as a new base64 JSON string. */
static json_t *b64(const char *p, size_t n)
{
	char *t = base64_encode(p, n);
	json_t *j;

	if (!t)
		return NULL;
	j = json_string(t);
	free(t);
	return j;
}

static json_t *b64s(const char *s) { return b64(s, strlen(s)); }

static json_t *i64s(int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

/* The end of the range of keys starting with prefix: prefix with its last
 * byte below 0xff increased, the 0xff bytes after it cut; "\0" (to the end
 * of the key space) when there is none.  *len its length. */
static char *prefix_end(const char *prefix, size_t *len)
{
	size_t n = strlen(prefix);
	char *end = malloc(n + 1);

	if (!end)
		return NULL;
	memcpy(end, prefix, n + 1);
	while (n > 0 && (unsigned char)end[n - 1] == 0xff)
		n--;
	if (n == 0) {
		end[0] = 0;
		*len = 1;
		return end;
	}
	end[n - 1]++;
	end[n] = 0;
	*len = n;
	return end;
}

/* Sets key and range_end of a request on the keys starting with prefix
 * (after start_after, exclusive, when given).  0 or -ENOMEM. */
static int set_range(json_t *req, const char *prefix, const char *start_after)
{
	size_t elen, plen = strlen(prefix);
	char *end = prefix_end(prefix, &elen);
	json_t *k = NULL, *re = NULL;
	int r = -ENOMEM;

	if (!end)
		return -ENOMEM;
	if (start_after && strcmp(start_after, prefix) >= 0)
		k = b64(start_after, strlen(start_after) + 1);	/* the first key after it: itself + "\0" */
	else
		k = plen ? b64(prefix, plen) : b64("", 1);	/* "" is "\0": every key */
	re = b64(end, elen);
	if (k && re && !json_object_set_new(req, "key", k) && !json_object_set_new(req, "range_end", re))
		r = 0;
	else {
		json_decref(k);
		json_decref(re);
	}
	free(end);
	return r;
}

/* ------------------------------------------------------------- the calls */

static struct etcd_store *E(struct store *s) { return (struct etcd_store *)s; }

static bool hidden(const char *key) { return !strcmp(key, ETCD_COMPACT_KEY); }

static int ec_revision(struct store *s, int64_t *rev)
{
	int64_t compacted, version;

	return etcd_compact_record(E(s), &compacted, &version, rev);
}

/* Does the compaction key exist at rev?  It is never deleted, so from its
 * creation on (etcd_compact_record learns when that was). */
static int hidden_exists_at(struct etcd_store *e, int64_t rev, bool *exists)
{
	int64_t compacted, version, now;
	int r = __atomic_load_n(&e->compact_key_created, __ATOMIC_RELAXED)
			? 0 : etcd_compact_record(e, &compacted, &version, &now);	/* learns it */
	int64_t created = __atomic_load_n(&e->compact_key_created, __ATOMIC_RELAXED);

	*exists = r == 0 && created && created <= rev;
	return r;
}

static int ec_get(struct store *s, const char *key, struct store_kv *out, int64_t *rev)
{
	json_t *req = json_object(), *ans = NULL, *kvs;
	int r = -ENOMEM;

	if (req && !json_object_set_new(req, "key", b64s(key)))
		r = etcd_call(E(s), "/v3/kv/range", req, true, &ans);
	if (r == 0) {
		*rev = etcd_i64(json_object_get(ans, "header"), "revision");
		kvs = json_object_get(ans, "kvs");
		r = json_array_size(kvs) && !hidden(key) ? etcd_kv(json_array_get(kvs, 0), out) : -ENOENT;
	}
	json_decref(req);
	json_decref(ans);
	return r;
}

/* Does the range (prefix, after start_after) hold the compaction key? */
static bool covers_hidden(const char *prefix, const char *start_after)
{
	return !strncmp(ETCD_COMPACT_KEY, prefix, strlen(prefix)) &&
	       (!start_after || strcmp(start_after, ETCD_COMPACT_KEY) < 0);
}

/* Range (prefix, start_after, limit) at rev (0: now) into out; count
 * (may be NULL) gets the range's size, limit aside.  Where the range holds
 * the compaction key, one more is asked for, so that dropping it still
 * fills the page and says truly whether more follow. */
static int range(struct store *s, const char *prefix, const char *start_after, size_t limit, int64_t rev,
		 struct store_kv_list *out, size_t *count)
{
	bool hide = covers_hidden(prefix, start_after), more;
	json_t *req = json_object(), *ans = NULL, *kvs;
	int64_t total;
	size_t n;
	int r = -ENOMEM;

	if (!req || set_range(req, prefix, start_after) < 0)
		goto out;
	if (limit && json_object_set_new(req, "limit", i64s((int64_t)limit + (hide ? 1 : 0))))
		goto out;
	if (rev && json_object_set_new(req, "revision", i64s(rev)))
		goto out;
	r = etcd_call(E(s), "/v3/kv/range", req, true, &ans);
	if (r < 0)
		goto out;
	kvs = json_object_get(ans, "kvs");
	n = json_array_size(kvs);
	out->revision = rev ? rev : etcd_i64(json_object_get(ans, "header"), "revision");
	total = etcd_i64(ans, "count");
	more = json_is_true(json_object_get(ans, "more"));
	out->kvs = calloc(n ? n : 1, sizeof(*out->kvs));
	if (!out->kvs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct store_kv kv;

		r = etcd_kv(json_array_get(kvs, i), &kv);
		if (r < 0)
			goto out;
		if (hidden(kv.key)) {
			store_kv_free(&kv);
		} else if (limit && out->n == limit) {
			store_kv_free(&kv);
			more = true;
		} else {
			out->kvs[out->n++] = kv;
		}
	}
	out->more = more;
	if (count) {
		bool exists = false;

		if (hide && (r = hidden_exists_at(E(s), out->revision, &exists)) < 0)
			goto out;
		total -= exists;
		*count = total < 0 ? 0 : (size_t)total;
	}
	r = 0;
out:
	json_decref(req);
	json_decref(ans);
	return r;
}

static int ec_range(struct store *s, const char *prefix, const char *start_after, size_t limit,
		    struct store_kv_list *out)
{
	return range(s, prefix, start_after, limit, 0, out, NULL);
}

static int ec_range_at(struct store *s, const char *prefix, const char *start_after, size_t limit, int64_t rev,
		       struct store_kv_list *out, size_t *count)
{
	return range(s, prefix, start_after, limit, rev, out, count);
}

static int ec_count(struct store *s, const char *prefix, size_t *n)
{
	json_t *req = json_object(), *ans = NULL;
	bool exists = false;
	int64_t total;
	int r = -ENOMEM;

	if (req && set_range(req, prefix, NULL) == 0 && !json_object_set_new(req, "count_only", json_true()))
		r = etcd_call(E(s), "/v3/kv/range", req, true, &ans);
	if (r == 0 && covers_hidden(prefix, NULL))
		r = hidden_exists_at(E(s), etcd_i64(json_object_get(ans, "header"), "revision"), &exists);
	if (r == 0) {
		total = etcd_i64(ans, "count") - exists;
		*n = total < 0 ? 0 : (size_t)total;
	}
	json_decref(req);
	json_decref(ans);
	return r;
}

/* ---------------------------------------------------------- transactions */

static const char *const targets[] = { "MOD", "CREATE", "VERSION" };
static const char *const target_fields[] = { "mod_revision", "create_revision", "version" };
static const char *const results[] = { "EQUAL", "NOT_EQUAL", "LESS", "GREATER" };

/* A byte string as base64, into f.  false: out of memory. */
static bool put_b64(FILE *f, const char *p, size_t n)
{
	char *t = base64_encode(p, n);

	if (!t)
		return false;
	fputs(t, f);
	free(t);
	return true;
}

/* One operation of a branch as etcd's RequestOp, into f. */
static bool put_op(FILE *f, const struct store_op *op)
{
	json_t *req;
	bool ok;

	switch (op->type) {
	case STORE_OP_PUT:
		fputs("{\"request_put\":{\"key\":\"", f);
		ok = put_b64(f, op->key, strlen(op->key));
		fputs("\",\"value\":\"", f);
		ok = ok && put_b64(f, op->value ? op->value : "", op->value_len);
		fputs("\"}}", f);
		return ok;
	case STORE_OP_DELETE:
		fputs("{\"request_delete_range\":{\"key\":\"", f);
		ok = put_b64(f, op->key, strlen(op->key));
		fputs("\"}}", f);
		return ok;
	case STORE_OP_DELETE_PREFIX:
		req = json_object();
		ok = req && set_range(req, op->key, NULL) == 0;
		fputs("{\"request_delete_range\":", f);
		ok = ok && json_dumpf(req, f, JSON_COMPACT) == 0;
		fputs("}", f);
		json_decref(req);
		return ok;
	}
	return false;
}

/* The request of t as JSON text (new string, or NULL: out of memory),
 * written by hand: every string in it is base64 or one of etcd's names,
 * so nothing needs escaping, and an object's bytes are not walked through
 * jansson's objects and dump on the way (the controller's commonest call;
 * in a profile of creates, jansson's dump was about a third of the CPU
 * the controller spent in its calls to etcd). */
static char *txn_text(const struct store_txn *t)
{
	const struct store_op *branches[2] = { t->success, t->failure };
	size_t counts[2] = { t->nsuccess, t->nfailure }, len = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);
	bool ok = f != NULL;

	if (!f)
		return NULL;
	fputs("{\"compare\":[", f);
	for (size_t i = 0; ok && i < t->ncmps; i++) {
		const struct store_cmp *c = &t->cmps[i];

		fputs(i ? ",{\"key\":\"" : "{\"key\":\"", f);
		ok = put_b64(f, c->key, strlen(c->key));
		fprintf(f, "\",\"target\":\"%s\",\"result\":\"%s\",\"%s\":\"%" PRId64 "\"}", targets[c->target],
			results[c->op], target_fields[c->target], c->value);
	}
	for (int b = 0; ok && b < 2; b++) {
		fputs(b ? "],\"failure\":[" : "],\"success\":[", f);
		for (size_t i = 0; ok && i < counts[b]; i++) {
			if (i)
				fputc(',', f);
			ok = put_op(f, &branches[b][i]);
		}
	}
	fputs("]}", f);
	if (fclose(f) != 0 || !ok) {
		free(text);
		return NULL;
	}
	return text;
}

/* Within etcd's limits, and not writing the back-end's own key. */
static int txn_fits(const struct store_txn *t)
{
	size_t bytes = ETCD_REQUEST_OVERHEAD;
	const struct store_op *branches[2] = { t->success, t->failure };
	size_t counts[2] = { t->nsuccess, t->nfailure };

	if (t->ncmps > ETCD_MAX_OPS || t->nsuccess > ETCD_MAX_OPS || t->nfailure > ETCD_MAX_OPS)
		return -E2BIG;
	for (size_t i = 0; i < t->ncmps; i++)
		bytes += strlen(t->cmps[i].key) + 32;
	for (int b = 0; b < 2; b++)
		for (size_t i = 0; i < counts[b]; i++) {
			const struct store_op *op = &branches[b][i];

			if (op->type != STORE_OP_DELETE_PREFIX && hidden(op->key))
				return -EINVAL;
			bytes += 2 * strlen(op->key) + 16 + (op->type == STORE_OP_PUT ? op->value_len : 0);
			if (bytes > ETCD_MAX_REQUEST)
				return -E2BIG;
		}
	return 0;
}

static int ec_txn(struct store *s, const struct store_txn *t, struct store_txn_result *res)
{
	json_t *ans = NULL;
	char *text = NULL;
	int r = txn_fits(t);

	if (r == 0 && !(text = txn_text(t)))
		r = -ENOMEM;
	if (r == 0)
		r = etcd_call_text(E(s), "/v3/kv/txn", text, false, &ans);
	if (r == 0) {
		res->succeeded = json_is_true(json_object_get(ans, "succeeded"));
		res->revision = etcd_i64(json_object_get(ans, "header"), "revision");
	}
	free(text);
	json_decref(ans);
	return r;
}

/* ------------------------------------------------------------ compaction */

static int ec_compacted(struct store *s, int64_t *rev)
{
	int64_t version, now;

	return etcd_compact_record(E(s), rev, &version, &now);
}

/*
 * As kube-apiserver: whoever moves the compaction key forward with a
 * compare-and-swap on its version compacts; a controller that loses the
 * race sees the winner's revision and has nothing to do.  Then etcd's
 * Compaction; "already compacted" (someone compacted further by hand) is
 * done too.
 */
static int ec_compact(struct store *s, int64_t rev)
{
	struct etcd_store *e = E(s);
	json_t *req = NULL, *ans = NULL;
	char *text;
	int r;

	for (int attempt = 0; attempt < 8; attempt++) {
		int64_t done, version, now;
		char value[24];
		struct store_cmp c = { ETCD_COMPACT_KEY, STORE_CMP_VERSION, STORE_CMP_EQ, 0 };
		struct store_op op = { .type = STORE_OP_PUT, .key = ETCD_COMPACT_KEY, .value = value };
		struct store_txn_result res;

		r = etcd_compact_record(e, &done, &version, &now);
		if (r < 0)
			return r;
		if (rev > now)
			return -EINVAL;
		if (rev <= done)
			return 0;
		c.value = version;
		op.value_len = (size_t)snprintf(value, sizeof(value), "%" PRId64, rev);
		/* store_txn's checks would refuse the key: the request is sent here */
		text = txn_text(&(struct store_txn){ .cmps = &c, .ncmps = 1, .success = &op, .nsuccess = 1 });
		if (!text)
			return -ENOMEM;
		r = etcd_call_text(e, "/v3/kv/txn", text, false, &ans);
		free(text);
		res.succeeded = r == 0 && json_is_true(json_object_get(ans, "succeeded"));
		json_decref(ans);
		ans = NULL;
		if (r < 0)
			return r;
		if (!res.succeeded)
			continue;	/* another controller moved it: look again */
		req = json_pack("{s:o, s:b}", "revision", i64s(rev), "physical", 0);
		if (!req)
			return -ENOMEM;
		r = etcd_call(e, "/v3/kv/compaction", req, true, &ans);
		json_decref(req);
		json_decref(ans);
		if (r == -ESTORE_COMPACTED)
			r = 0;
		if (r == 0)
			etcd_cache_compacted(e, rev);
		return r;
	}
	return -EBUSY;
}

/* ---------------------------------------------------------------- open */

static void ec_close(struct store *s)
{
	struct etcd_store *e = E(s);

	etcd_cache_free(e);
	if (e->notify >= 0)
		close(e->notify);
	etcd_conns_free(e);
	for (size_t i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	free(e->user);
	if (e->password) {
		explicit_bzero(e->password, strlen(e->password));
		free(e->password);
	}
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
	}
	pthread_mutex_destroy(&e->auth_lock);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->cache_lock);
	free(e);
}

/* One "name=value" of the query into e.  0 or -1 with err set. */
static int query_param(struct etcd_store *e, const char *url, char *param, char *err, size_t errlen)
{
	char *eq = strchr(param, '='), **slot = NULL;
	const char *name = param;

	if (!eq || !eq[1]) {
		errmsg(err, errlen, "store etcd://%s: '%s' is not NAME=VALUE", url, param);
		return -1;
	}
	*eq = 0;
	if (!strcmp(name, "ca"))
		slot = &e->ca_file;
	else if (!strcmp(name, "cert"))
		slot = &e->cert_file;
	else if (!strcmp(name, "key"))
		slot = &e->key_file;
	else if (!strcmp(name, "user"))
		slot = &e->user;
	if (slot) {
		free(*slot);
		*slot = strdup(eq + 1);
		return *slot ? 0 : (errmsg(err, errlen, "out of memory"), -1);
	}
	if (!strcmp(name, "password_file")) {
		char *text = NULL;
		size_t len = 0;
		int r = secret_file_read(eq + 1, PASSWORD_MAX, &text, &len);

		if (r < 0) {
			errmsg(err, errlen, "store etcd://%s: password_file %s: %s", url, eq + 1, strerror(-r));
			return -1;
		}
		while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
			text[--len] = 0;
		e->password = text;
		return 0;
	}
	errmsg(err, errlen, "store etcd://%s: unknown parameter '%s' (want ca, cert, key, user, password_file)", url,
	       name);
	return -1;
}

/* One endpoint of the list: HOST:PORT, http://HOST:PORT or https://... */
static int endpoint(struct etcd_store *e, const char *url, const char *item, char *err, size_t errlen)
{
	const char *scheme = e->ca_file ? "https://" : "http://";
	const char *hostport = item;
	char *colon;

	if (!strncmp(item, "http://", 7) || !strncmp(item, "https://", 8)) {
		scheme = "";
		hostport = strstr(item, "//") + 2;
	}
	colon = strrchr(hostport, ':');
	if (!hostport[0] || !colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strpbrk(item, "/?#@ ") != (scheme[0] ? NULL : strstr(item, "//"))) {
		errmsg(err, errlen, "store etcd://%s: endpoint '%s' is not HOST:PORT", url, item);
		return -1;
	}
	if (e->nendpoints == ETCD_MAX_ENDPOINTS) {
		errmsg(err, errlen, "store etcd://%s: more than %d endpoints", url, ETCD_MAX_ENDPOINTS);
		return -1;
	}
	if (asprintf(&e->endpoints[e->nendpoints], "%s%s", scheme, item) < 0) {
		e->endpoints[e->nendpoints] = NULL;
		errmsg(err, errlen, "out of memory");
		return -1;
	}
	e->nendpoints++;
	return 0;
}

static int ec_notify_fd(struct store *s) { return E(s)->notify; }

static struct store *ec_open(const char *url, char *err, size_t errlen)
{
	struct etcd_store *e = calloc(1, sizeof(*e));
	char *copy = strdup(url), *query, *save = NULL;
	int64_t rev;
	int r;

	if (!e || !copy) {
		errmsg(err, errlen, "out of memory");
		free(copy);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&e->auth_lock, NULL);
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->cache_lock, NULL);
	{
		static uint64_t handles;

		e->id = __atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
	}
	e->base.backend = &store_backend_etcd;
	e->notify = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->notify < 0) {
		errmsg(err, errlen, "store etcd://%s: eventfd: %s", url, strerror(errno));
		free(copy);
		ec_close(&e->base);
		errno = EMFILE;
		return NULL;
	}
	query = strchr(copy, '?');
	if (query) {
		*query++ = 0;
		for (char *p = strtok_r(query, "&", &save); p; p = strtok_r(NULL, "&", &save))
			if (query_param(e, url, p, err, errlen) < 0)
				goto fail;
	}
	if (!e->cert_file != !e->key_file) {
		errmsg(err, errlen, "store etcd://%s: cert= and key= go together", url);
		goto fail;
	}
	if (!e->user != !e->password) {
		errmsg(err, errlen, "store etcd://%s: user= and password_file= go together", url);
		goto fail;
	}
	for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (endpoint(e, url, p, err, errlen) < 0)
			goto fail;
	if (!e->nendpoints) {
		errmsg(err, errlen, "store etcd://%s: no endpoint (want etcd://HOST:PORT[,HOST:PORT...])", url);
		goto fail;
	}
	free(copy);
	copy = NULL;
	/* reach one member now: a wrong address or credential is said at open */
	r = ec_revision(&e->base, &rev);
	if (r < 0) {
		errmsg(err, errlen, "store etcd://%s: no endpoint answered: %s (%s)", url,
		       r == -EACCES ? "permission denied (user or password)" : strerror(-r), e->last_error);
		errno = -r;
		ec_close(&e->base);
		return NULL;
	}
	return &e->base;
fail:
	free(copy);
	ec_close(&e->base);
	errno = EINVAL;
	return NULL;
}

const struct store_backend store_backend_etcd = {
	.scheme = "etcd",
	.open = ec_open,
	.close = ec_close,
	.revision = ec_revision,
	.get = ec_get,
	.range = ec_range,
	.range_at = ec_range_at,
	.count = ec_count,
	.txn = ec_txn,
	.events = etcd_events,
	.compact = ec_compact,
	.compacted = ec_compacted,
	.notify_fd = ec_notify_fd,
	.concurrent = true,	/* store_etcd_conn.c: a connection per call */
	.events_ready = etcd_events_ready,
};
