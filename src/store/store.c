/*
 * store.c — the front of the store: picks a back-end from the url, checks
 * arguments once for every back-end, and dispatches through the back-end's
 * table of function pointers (struct store_backend in store.h).
 *
 * How it works
 *   store_open parses the url ("sqlite:PATH", "sqlite://PATH" or a bare
 *   PATH) and calls the chosen back-end's open; every other call goes
 *   through s->backend.  Back-ends may assume what this file checks:
 *
 *  1. s and every out pointer are non-NULL; out structs are zeroed before
 *     the back-end sees them, so *_free is safe after any return.
 *  2. Keys are non-empty, at most STORE_KEY_MAX bytes (store_limits.h);
 *     prefixes and start_after are non-NULL (prefix may be "") and at most
 *     STORE_KEY_MAX bytes; values at most STORE_VALUE_MAX bytes, and a
 *     NULL value only with length 0; after_rev >= 0.  Too long is -E2BIG,
 *     anything else wrong -EINVAL.
 *  3. A transaction has at most STORE_TXN_MAX_CMPS comparisons and
 *     STORE_TXN_MAX_OPS operations per branch, with known enum values.
 *     Both branches are checked before anything is applied, so a bad
 *     failure branch fails the call even when the comparisons would hold.
 *
 * store_put and store_delete are one-op transactions.  store_delete of a
 * missing key returns 0 and changes nothing (etcd's DeleteRange with
 * deleted = 0).
 *
 * What every back-end promises beyond store.h:
 *  - store_events never ends a list inside a transaction: when limit falls
 *    in the middle of one revision's events, the rest of that revision is
 *    included (so the list may exceed limit), because the caller continues
 *    "after the last event" and would otherwise skip them.
 *  - A failed comparison with failure ops that change something is a new
 *    revision, as in etcd; only a transaction that changes nothing keeps
 *    the revision.
 *  - A struct store is not carried across fork(): a child opens its own.
 */
#include "store/store.h"
#include "store/store_limits.h"
#include "store/store_etcd.h"
#include "store/store_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *scheme;
	const struct store_backend *backend;	/* NULL: reserved, not built */
} backends[] = {
	{ "sqlite", &store_backend_sqlite },
	{ "etcd", &store_backend_etcd },
};

/* A url starts with a scheme when it has "letters:" before any '/'. */
static size_t scheme_len(const char *url)
{
	size_t i = 0;

	if (!((url[0] >= 'a' && url[0] <= 'z') || (url[0] >= 'A' && url[0] <= 'Z')))
		return 0;
	while (url[i] && url[i] != ':' && url[i] != '/')
		i++;
	return url[i] == ':' ? i : 0;
}

struct store *store_open(const char *url, char *err, size_t errlen)
{
	const struct store_backend *backend = NULL;
	const char *path = url;
	struct store *s;
	size_t n;

	if (err && errlen)
		err[0] = 0;
	if (!url || !url[0]) {
		if (err && errlen)
			snprintf(err, errlen, "store: empty url");
		errno = EINVAL;
		return NULL;
	}
	n = scheme_len(url);
	if (n == 0) {
		backend = &store_backend_sqlite;
	} else {
		size_t i;

		for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
			if (strlen(backends[i].scheme) == n && !strncmp(url, backends[i].scheme, n))
				break;
		if (i == sizeof(backends) / sizeof(backends[0])) {
			if (err && errlen)
				snprintf(err, errlen, "store %s: unknown scheme '%.*s' (want sqlite:PATH or etcd://HOST:PORT)",
					 url, (int)n, url);
			errno = EINVAL;
			return NULL;
		}
		if (!backends[i].backend) {
			if (err && errlen)
				snprintf(err, errlen, "store %s: %s back-end not built yet", url,
					 backends[i].scheme);
			errno = ENOTSUP;
			return NULL;
		}
		backend = backends[i].backend;
		path = url + n + 1;
		if (!strncmp(path, "//", 2))
			path += 2;
		if (!path[0]) {
			if (err && errlen)
				snprintf(err, errlen, "store %s: no path after the scheme", url);
			errno = EINVAL;
			return NULL;
		}
	}
	s = backend->open(path, err, errlen);
	if (!s)
		return NULL;
	s->backend = backend;
	s->sync = NULL;
	return s;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	store_sync_close(s);
	s->backend->close(s);
}

static int check_key(const char *key)
{
	size_t n;

	if (!key || !key[0])
		return -EINVAL;
	n = strnlen(key, STORE_KEY_MAX + 1);
	return n > STORE_KEY_MAX ? -E2BIG : 0;
}

/* A prefix may be empty: "every key". */
static int check_prefix(const char *prefix)
{
	if (!prefix)
		return -EINVAL;
	return strnlen(prefix, STORE_KEY_MAX + 1) > STORE_KEY_MAX ? -E2BIG : 0;
}

static int check_ops(const struct store_op *ops, size_t n)
{
	if (n > STORE_TXN_MAX_OPS)
		return -E2BIG;
	if (n && !ops)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const struct store_op *op = &ops[i];
		int r;

		switch (op->type) {
		case STORE_OP_PUT:
			if (op->value_len > STORE_VALUE_MAX)
				return -E2BIG;
			if (!op->value && op->value_len)
				return -EINVAL;
			/* fall through */
		case STORE_OP_DELETE:
		case STORE_OP_DELETE_PREFIX:
			/* an empty DELETE_PREFIX (everything) is refused like an
			 * empty key: no caller wipes the store by accident */
			r = check_key(op->key);
			break;
		default:
			return -EINVAL;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_txn(const struct store_txn *txn)
{
	int r;

	if (txn->ncmps > STORE_TXN_MAX_CMPS)
		return -E2BIG;
	if (txn->ncmps && !txn->cmps)
		return -EINVAL;
	for (size_t i = 0; i < txn->ncmps; i++) {
		const struct store_cmp *c = &txn->cmps[i];

		r = check_key(c->key);
		if (r < 0)
			return r;
		if ((unsigned)c->target > STORE_CMP_VERSION || (unsigned)c->op > STORE_CMP_GT)
			return -EINVAL;
	}
	r = check_ops(txn->success, txn->nsuccess);
	if (r < 0)
		return r;
	return check_ops(txn->failure, txn->nfailure);
}

int store_revision(struct store *s, int64_t *rev)
{
	if (!s || !rev)
		return -EINVAL;
	*rev = 0;
	return s->backend->revision(s, rev);
}

int store_get(struct store *s, const char *key, struct store_kv *out, int64_t *rev)
{
	int64_t ignored;
	int r;

	if (!s || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	r = check_key(key);
	if (r < 0)
		return r;
	return s->backend->get(s, key, out, rev ? rev : &ignored);
}

/* The arguments of a range (invariants 1 and 2); out zeroed. */
static int check_range(struct store *s, const char *prefix, const char *start_after, struct store_kv_list *out)
{
	int r;

	if (!s || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	r = check_prefix(prefix);
	if (r == 0 && start_after)
		r = check_prefix(start_after);
	return r;
}

int store_range(struct store *s, const char *prefix, const char *start_after, size_t limit,
		struct store_kv_list *out)
{
	int r = check_range(s, prefix, start_after, out);

	if (r < 0)
		return r;
	r = s->backend->range(s, prefix, start_after, limit, out);
	if (r < 0)
		store_kv_list_free(out);
	return r;
}

int store_range_at(struct store *s, const char *prefix, const char *start_after, size_t limit, int64_t rev,
		   struct store_kv_list *out, size_t *count)
{
	size_t ignored;
	int r = check_range(s, prefix, start_after, out);

	if (r < 0)
		return r;
	if (rev < 0)
		return -EINVAL;
	if (!s->backend->range_at)
		return -ENOTSUP;
	r = s->backend->range_at(s, prefix, start_after, limit, rev, out, count ? count : &ignored);
	if (r < 0)
		store_kv_list_free(out);
	return r;
}

int store_count(struct store *s, const char *prefix, size_t *n)
{
	int r;

	if (!s || !n)
		return -EINVAL;
	*n = 0;
	r = check_prefix(prefix);
	if (r < 0)
		return r;
	return s->backend->count(s, prefix, n);
}

int store_txn(struct store *s, const struct store_txn *txn, struct store_txn_result *res)
{
	int r;

	if (!s || !txn || !res)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	r = check_txn(txn);
	if (r < 0)
		return r;
	r = s->backend->txn(s, txn, res);
	if (r == 0 && s->in_batch)
		s->batch_commits++;	/* counted once, at its end */
	else if (r == 0 && s->sync)
		store_sync_committed(s);
	return r;
}

int store_batch_begin(struct store *s)
{
	int r;

	if (!s || s->in_batch)
		return -EINVAL;
	if (!s->backend->batch)
		return -ENOTSUP;
	r = s->backend->batch(s, true, false);
	if (r == 0) {
		s->in_batch = true;
		s->batch_commits = 0;
	}
	return r;
}

int store_batch_end(struct store *s, bool commit)
{
	int r;

	if (!s || !s->in_batch)
		return -EINVAL;
	r = s->backend->batch(s, false, commit);
	s->in_batch = false;
	if (r == 0 && commit && s->batch_commits && s->sync)
		store_sync_committed(s);
	return r;
}

bool store_in_batch(const struct store *s)
{
	return s && s->in_batch;
}

int store_put(struct store *s, const char *key, const char *value, size_t len, int64_t *rev)
{
	struct store_op op = { .type = STORE_OP_PUT, .key = key, .value = value, .value_len = len };
	struct store_txn txn = { .success = &op, .nsuccess = 1 };
	struct store_txn_result res;
	int r;

	r = store_txn(s, &txn, &res);
	if (r == 0 && rev)
		*rev = res.revision;
	return r;
}

int store_delete(struct store *s, const char *key, int64_t *rev)
{
	struct store_op op = { .type = STORE_OP_DELETE, .key = key };
	struct store_txn txn = { .success = &op, .nsuccess = 1 };
	struct store_txn_result res;
	int r;

	r = store_txn(s, &txn, &res);
	if (r == 0 && rev)
		*rev = res.revision;
	return r;
}

int store_events(struct store *s, const char *prefix, int64_t after_rev, size_t limit,
		 struct store_event_list *out)
{
	int r;

	if (!s || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	r = check_prefix(prefix);
	if (r < 0)
		return r;
	if (after_rev < 0)
		return -EINVAL;
	r = s->backend->events(s, prefix, after_rev, limit, out);
	if (r < 0)
		store_event_list_free(out);
	return r;
}

int store_compact(struct store *s, int64_t rev)
{
	if (!s || rev < 0)
		return -EINVAL;
	return s->backend->compact(s, rev);
}

int store_compacted(struct store *s, int64_t *rev)
{
	if (!s || !rev)
		return -EINVAL;
	*rev = 0;
	return s->backend->compacted(s, rev);
}

int store_notify_fd(struct store *s)
{
	return s && s->backend->notify_fd ? s->backend->notify_fd(s) : -1;
}

bool store_concurrent(const struct store *s) { return s && s->backend->concurrent; }

bool store_events_ready(struct store *s)
{
	return s && (!s->backend->events_ready || s->backend->events_ready(s));
}

void store_notify_clear(struct store *s)
{
	int fd = store_notify_fd(s);
	uint64_t n;

	/* an eventfd (non-blocking): one read empties it */
	if (fd >= 0 && read(fd, &n, sizeof(n)) < 0)
		return;
}

void store_kv_free(struct store_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void store_kv_list_free(struct store_kv_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		store_kv_free(&l->kvs[i]);
	free(l->kvs);
	memset(l, 0, sizeof(*l));
}

void store_event_list_free(struct store_event_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		store_kv_free(&l->events[i].kv);
		store_kv_free(&l->events[i].prev);
	}
	free(l->events);
	memset(l, 0, sizeof(*l));
}
