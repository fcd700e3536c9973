/*
 * store_etcd_conn.c — how the etcd back-end talks to etcd's JSON gateway:
 * connections (TLS, a client certificate, a login whose token is renewed
 * when etcd says it expired), a request that moves to the next member when
 * one cannot be reached (store_etcd.c, "Failover"), errors as -errno, the
 * JSON of answers (base64 bytes, int64 as strings), and the record of the
 * compaction key that both the calls (store_etcd.c) and the event cache
 * (store_etcd_watch.c) read.
 *
 * Calls come from several threads at once (store_concurrent): each takes
 * a connection of its own for its round trip, an idle one to the current
 * endpoint or a new one, and gives it back after (at most ETCD_IDLE_MAX
 * are kept).  So a controller has as many requests with etcd as it has
 * threads waiting on it, and etcd batches them into one raft round.
 * e->lock guards the idle list, the current endpoint and last_error;
 * compact_key_created is an atomic; what each thread was told of the
 * revision is its own (etcd_known).
 */
#include "store/store_etcd.h"
#include "lib/base64.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ETCD_TIMEOUT_MS 8000			/* a request; above etcd's own 5 s + an election */
#define ETCD_CONNECT_MS 3000			/* TCP and TLS handshake: etcd busy with logins (bcrypt) is slow to shake hands */
#define ETCD_AUTH_TRIES 4			/* sends of a call whose token etcd refused, a new login before each */
#define ETCD_AUTH_PAUSE_MS 25			/* times the try: time for etcd to apply the login */
#define ETCD_IDLE_MAX 8				/* connections kept between calls */

/* gRPC status codes the gateway answers with */
enum { GRPC_INVALID_ARGUMENT = 3, GRPC_OUT_OF_RANGE = 11, GRPC_UNAVAILABLE = 14, GRPC_UNAUTHENTICATED = 16 };

/* ------------------------------------------------------------------ JSON */

int64_t etcd_i64(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

int etcd_bytes(const json_t *obj, const char *name, char **out, size_t *len)
{
	const json_t *v = json_object_get(obj, name);
	unsigned char *d = NULL;
	size_t n = 0;
	int r;

	*out = NULL;
	if (len)
		*len = 0;
	if (!json_is_string(v)) {
		*out = calloc(1, 1);
		return *out ? 0 : -ENOMEM;
	}
	r = base64_decode(json_string_value(v), json_string_length(v), &d, &n);
	if (r < 0)
		return r == -ENOMEM ? r : -EIO;
	*out = (char *)d;
	if (len)
		*len = n;
	return 0;
}

int etcd_kv(const json_t *j, struct store_kv *kv)
{
	size_t klen;
	int r;

	memset(kv, 0, sizeof(*kv));
	r = etcd_bytes(j, "key", &kv->key, &klen);
	if (r == 0)
		r = etcd_bytes(j, "value", &kv->value, &kv->value_len);
	if (r < 0) {
		store_kv_free(kv);
		return r;
	}
	kv->create_rev = etcd_i64(j, "create_revision");
	kv->mod_rev = etcd_i64(j, "mod_revision");
	kv->version = etcd_i64(j, "version");
	return 0;
}

/* ------------------------------------------------------------- requests */

struct httpc *etcd_connect(struct etcd_store *e, size_t i, char *err, size_t errlen)
{
	struct httpc_options o = {
		.server = e->endpoints[i],
		.ca_file = e->ca_file,
		.cert_file = e->cert_file,
		.key_file = e->key_file,
		.auth_scheme = "",
		.connect_timeout_ms = ETCD_CONNECT_MS,
		.timeout_ms = ETCD_TIMEOUT_MS,
		.user_agent = "weft-store-etcd",
	};
	struct httpc *h = httpc_create(&o, err, errlen);

	if (h && e->user) {
		char why[300];
		int r;

		pthread_mutex_lock(&e->auth_lock);
		r = e->token ? httpc_set_token(h, e->token) : 0;
		pthread_mutex_unlock(&e->auth_lock);
		if (r == 0 && !e->token)
			r = etcd_login(e, h, why, sizeof(why));
		else if (r < 0)
			snprintf(why, sizeof(why), "%s", strerror(-r));
		if (r < 0) {
			errmsg(err, errlen, "%s: cannot log in as %s: %s", e->endpoints[i], e->user, why);
			httpc_destroy(h);
			errno = -r;
			return NULL;
		}
	}
	return h;
}

int etcd_login(struct etcd_store *e, struct httpc *h, char *why, size_t whylen)
{
	json_t *body = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
	struct httpc_response resp = { 0 };
	char *text = NULL;
	json_t *ans = NULL;
	const char *token;
	int r = -ENOMEM;

	snprintf(why, whylen, "out of memory");
	if (!body)
		return -ENOMEM;
	if ((r = httpc_set_token(h, NULL)) < 0)
		goto out;
	r = -ENOMEM;
	text = json_dumps(body, JSON_COMPACT);
	if (!text)
		goto out;
	r = httpc_request(h, "POST", "/v3/auth/authenticate", text, strlen(text), &resp, why, whylen);
	if (r < 0)
		goto out;
	ans = json_loadb(resp.body, resp.len, 0, NULL);
	token = json_string_value(json_object_get(ans, "token"));
	if (resp.status != 200 || !token) {
		const char *msg = json_string_value(json_object_get(ans, "error"));

		snprintf(why, whylen, "/v3/auth/authenticate: HTTP %ld: %.200s", resp.status,
			 msg ? msg : "no token in the answer");
		r = -EACCES;
		goto out;
	}
	pthread_mutex_lock(&e->auth_lock);
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
	}
	e->token = strdup(token);
	pthread_mutex_unlock(&e->auth_lock);
	r = e->token ? httpc_set_token(h, token) : -ENOMEM;
out:
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	json_decref(body);	/* holds the password: jansson copied it, freed here */
	json_decref(ans);
	httpc_response_free(&resp);
	return r;
}

/* The error of an answer as -errno; *retry set when another endpoint may do
 * better (this one is unavailable), *relogin when the token expired.
 * Unavailable is -EAGAIN ("nothing was done") only for "no leader", which
 * etcd answers before it proposes anything; any other (a leader changed
 * while the proposal waited, a request that timed out) may have been
 * applied: -ETIMEDOUT, an outcome unknown, and for a write no retry. */
static int answer_error(const json_t *ans, long status, bool *retry, bool *relogin)
{
	const char *msg = json_string_value(json_object_get(ans, "error"));
	int64_t code = etcd_i64(ans, "code");

	if (!msg)
		msg = json_string_value(json_object_get(ans, "message"));
	if (!msg)
		msg = "";
	if (strstr(msg, "required revision has been compacted"))
		return -ESTORE_COMPACTED;
	if (strstr(msg, "required revision is a future revision"))
		return -ERANGE;
	if (strstr(msg, "too many operations") || strstr(msg, "request is too large") ||
	    strstr(msg, "message larger than max") || strstr(msg, "ResourceExhausted"))
		return -E2BIG;
	if (code == GRPC_UNAUTHENTICATED || strstr(msg, "invalid auth token")) {
		*relogin = true;
		return -EACCES;
	}
	if (strstr(msg, "no leader")) {
		*retry = true;
		return -EAGAIN;
	}
	if (code == GRPC_UNAVAILABLE || strstr(msg, "leader changed") || strstr(msg, "request timed out")) {
		*retry = true;
		return -ETIMEDOUT;
	}
	if (code == GRPC_INVALID_ARGUMENT || status == 400)
		return -EINVAL;
	if (strstr(msg, "permission denied") || strstr(msg, "user name is empty"))
		return -EACCES;
	return -EIO;
}

/* A failure of the call itself that never reached etcd: safe to send again. */
static bool unreached(int r)
{
	return r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -ENETUNREACH || r == -EPROTO;
}

/* ---------------------------------------------------------- connections */

/* A connection between calls (e->idle) or in one (its caller's alone). */
struct etcd_conn {
	struct httpc *http;
	size_t endpoint;		/* the index in e->endpoints it talks to */
	struct etcd_conn *next;		/* in e->idle */
};

static void conn_free(struct etcd_conn *c)
{
	while (c) {
		struct etcd_conn *next = c->next;

		httpc_destroy(c->http);
		free(c);
		c = next;
	}
}

size_t etcd_current(struct etcd_store *e)
{
	size_t cur;

	pthread_mutex_lock(&e->lock);
	cur = e->current;
	pthread_mutex_unlock(&e->lock);
	return cur;
}

/* What this thread was told, per handle: a few slots (a thread uses one
 * or two handles), the oldest reused.  A handle is named by its id, never
 * reused, so a slot of a closed handle is never taken for a new one. */
#define KNOWN_SLOTS 4
static __thread struct {
	uint64_t id;
	int64_t rev;
} known[KNOWN_SLOTS];
static __thread unsigned known_next;

void etcd_saw_revision(struct etcd_store *e, int64_t rev)
{
	size_t i;

	for (i = 0; i < KNOWN_SLOTS && known[i].id != e->id; i++)
		;
	if (i == KNOWN_SLOTS) {
		i = known_next++ % KNOWN_SLOTS;
		known[i].id = e->id;
		known[i].rev = 0;
	}
	if (rev > known[i].rev)
		known[i].rev = rev;
}

int64_t etcd_known(const struct etcd_store *e)
{
	for (size_t i = 0; i < KNOWN_SLOTS; i++)
		if (known[i].id == e->id)
			return known[i].rev;
	return 0;
}

static void set_error(struct etcd_store *e, const char *text)
{
	pthread_mutex_lock(&e->lock);
	snprintf(e->last_error, sizeof(e->last_error), "%s", text);
	pthread_mutex_unlock(&e->lock);
}

/* A connection to the current endpoint for one call: an idle one, or a
 * new one (NULL, errno set and e->last_error said why).  Idle ones to an
 * endpoint that is no longer current are closed on the way. */
static struct etcd_conn *conn_take(struct etcd_store *e)
{
	struct etcd_conn *c, *stale = NULL;
	char err[512];
	size_t cur;

	pthread_mutex_lock(&e->lock);
	cur = e->current;
	while ((c = e->idle)) {
		e->idle = c->next;
		e->nidle--;
		c->next = NULL;
		if (c->endpoint == cur)
			break;
		c->next = stale;
		stale = c;
	}
	pthread_mutex_unlock(&e->lock);
	conn_free(stale);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c) {
		set_error(e, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	c->endpoint = cur;
	c->http = etcd_connect(e, cur, err, sizeof(err));
	if (!c->http) {
		int en = errno;

		set_error(e, err);
		free(c);
		errno = en;
		return NULL;
	}
	return c;
}

/* c's call is over: kept for the next one (up to ETCD_IDLE_MAX), else closed. */
static void conn_give(struct etcd_store *e, struct etcd_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&e->lock);
	if (e->nidle < ETCD_IDLE_MAX && c->endpoint == e->current) {
		c->next = e->idle;
		e->idle = c;
		e->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	conn_free(c);
}

/* endpoint could not serve: the next calls go to the one after it (unless
 * another call already moved on). */
static void endpoint_failed(struct etcd_store *e, size_t endpoint)
{
	pthread_mutex_lock(&e->lock);
	if (e->current == endpoint)
		e->current = (endpoint + 1) % e->nendpoints;
	pthread_mutex_unlock(&e->lock);
}

void etcd_conns_free(struct etcd_store *e)
{
	conn_free(e->idle);
	e->idle = NULL;
	e->nidle = 0;
}

/* ------------------------------------------------------------- requests */

/* Tokens.  A call etcd answers "invalid auth token" (Unauthenticated) was
 * refused before anything was proposed, so it is sent again after a new
 * login, up to ETCD_AUTH_TRIES times, a pause growing by
 * ETCD_AUTH_PAUSE_MS before each.  The pause is for etcd's simple tokens:
 * a member resolves one only once it has applied the entry that made it,
 * and under concurrent logins it can refuse a token it just issued
 * (etcd-io/etcd#18437); JWT tokens, which etcd recommends for production,
 * do not have this.  A token that expired takes one new login. */
static int call_once(struct etcd_store *e, struct etcd_conn *c, const char *path, const char *text,
		     bool idempotent, json_t **out, bool *next)
{
	bool retry = false, relogin = false;
	struct httpc_response resp = { 0 };
	char err[512];
	json_t *ans = NULL;
	int r;

	*next = false;
	for (int attempt = 0; attempt < ETCD_AUTH_TRIES; attempt++) {
		if (attempt) {	/* after a new login: see "Tokens" above */
			struct timespec t = { 0, ETCD_AUTH_PAUSE_MS * attempt * 1000000L };

			nanosleep(&t, NULL);
		}
		r = httpc_request(c->http, "POST", path, text, strlen(text), &resp, err, sizeof(err));
		if (r < 0) {
			set_error(e, err);
			*next = unreached(r) || (idempotent && (r == -ETIMEDOUT || r == -EIO));
			return r == -EPROTO ? -EIO : r;
		}
		ans = json_loadb(resp.body, resp.len, 0, NULL);
		if (resp.status == 200 && ans) {
			etcd_saw_revision(e, etcd_i64(json_object_get(ans, "header"), "revision"));
			httpc_response_free(&resp);
			*out = ans;
			return 0;
		}
		r = ans ? answer_error(ans, resp.status, &retry, &relogin) : -EIO;
		{
			const char *msg = json_string_value(json_object_get(ans, "error"));

			snprintf(err, sizeof(err), "%s%s: %s", e->endpoints[c->endpoint], path,
				 msg ? msg : "HTTP error");
			set_error(e, err);
		}
		httpc_response_free(&resp);
		json_decref(ans);
		ans = NULL;
		if (!relogin || !e->user || attempt + 1 == ETCD_AUTH_TRIES)
			break;
		if (etcd_login(e, c->http, err, sizeof(err)) < 0) {
			set_error(e, err);
			break;
		}
		relogin = false;
	}
	/* unavailable: a read goes elsewhere; a write only when etcd said
	 * "no leader" (answered before proposing: nothing was done) */
	*next = retry && (idempotent || r == -EAGAIN);
	return r;
}

int etcd_call(struct etcd_store *e, const char *path, json_t *body, bool idempotent, json_t **out)
{
	char *text = json_dumps(body, JSON_COMPACT);
	int r;

	*out = NULL;
	if (!text)
		return -ENOMEM;
	r = etcd_call_text(e, path, text, idempotent, out);
	free(text);
	return r;
}

int etcd_call_text(struct etcd_store *e, const char *path, const char *text, bool idempotent, json_t **out)
{
	int r = -EIO;

	*out = NULL;
	for (size_t tried = 0; tried < e->nendpoints; tried++) {
		struct etcd_conn *c = conn_take(e);
		bool next = true;

		if (c)
			r = call_once(e, c, path, text, idempotent, out, &next);
		else
			r = -errno;
		if (r == 0 || !next) {
			conn_give(e, c);
			break;
		}
		endpoint_failed(e, c ? c->endpoint : etcd_current(e));
		conn_free(c);
	}
	return r;
}

/* The compaction key's value (the last compaction revision) and version. */
int etcd_compact_record(struct etcd_store *e, int64_t *rev, int64_t *version, int64_t *now)
{
	char *key = base64_encode(ETCD_COMPACT_KEY, strlen(ETCD_COMPACT_KEY));
	json_t *req = key ? json_pack("{s:s}", "key", key) : NULL, *ans = NULL, *kvs;
	int r = -ENOMEM;

	free(key);
	*rev = *version = 0;
	if (req)
		r = etcd_call(e, "/v3/kv/range", req, true, &ans);
	if (r == 0) {
		*now = etcd_i64(json_object_get(ans, "header"), "revision");
		kvs = json_object_get(ans, "kvs");
		if (json_array_size(kvs)) {
			struct store_kv kv;

			r = etcd_kv(json_array_get(kvs, 0), &kv);
			if (r == 0) {
				*rev = strtoll(kv.value, NULL, 10);
				*version = kv.version;
				__atomic_store_n(&e->compact_key_created, kv.create_rev, __ATOMIC_RELAXED);
				store_kv_free(&kv);
			}
		}
	}
	json_decref(req);
	json_decref(ans);
	return r;
}

