/*
 * store_etcd_conn.c — how the etcd back-end talks to etcd's JSON gateway:
 * a connection per endpoint (TLS, a client certificate, a login whose token
 * is renewed when etcd says it expired), a request that moves to the next
 * member when one cannot be reached (store_etcd.c, "Failover"), errors as
 * -errno, the JSON of answers (base64 bytes, int64 as strings), and the
 * record of the compaction key that both the calls (store_etcd.c) and the
 * event cache (store_etcd_watch.c) read.
 */
#include "store/store_etcd.h"
#include "lib/base64.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ETCD_TIMEOUT_MS 8000			/* a request; above etcd's own 5 s + an election */
#define ETCD_CONNECT_MS 1000

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
		int r;

		pthread_mutex_lock(&e->auth_lock);
		r = e->token ? httpc_set_token(h, e->token) : 0;
		pthread_mutex_unlock(&e->auth_lock);
		if (r == 0 && !e->token)
			r = etcd_login(e, h);
		if (r < 0) {
			errmsg(err, errlen, "%s: cannot log in as %s: %s", e->endpoints[i], e->user, strerror(-r));
			httpc_destroy(h);
			errno = -r;
			return NULL;
		}
	}
	return h;
}

int etcd_login(struct etcd_store *e, struct httpc *h)
{
	json_t *body = json_pack("{s:s, s:s}", "name", e->user, "password", e->password);
	struct httpc_response resp = { 0 };
	char err[256], *text = NULL;
	json_t *ans = NULL;
	const char *token;
	int r = -ENOMEM;

	if (!body)
		return -ENOMEM;
	if ((r = httpc_set_token(h, NULL)) < 0)
		goto out;
	r = -ENOMEM;
	text = json_dumps(body, JSON_COMPACT);
	if (!text)
		goto out;
	r = httpc_request(h, "POST", "/v3/auth/authenticate", text, strlen(text), &resp, err, sizeof(err));
	if (r < 0)
		goto out;
	ans = json_loadb(resp.body, resp.len, 0, NULL);
	token = json_string_value(json_object_get(ans, "token"));
	if (resp.status != 200 || !token) {
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

static int call_once(struct etcd_store *e, const char *path, const char *text, bool idempotent, json_t **out,
		     bool *next)
{
	bool retry = false, relogin = false;
	struct httpc_response resp = { 0 };
	char err[512];
	json_t *ans = NULL;
	int r;

	*next = false;
	if (!e->http) {
		e->http = etcd_connect(e, e->current, err, sizeof(err));
		if (!e->http) {
			errmsg(e->last_error, sizeof(e->last_error), "%.500s", err);
			*next = true;
			return -errno;
		}
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		r = httpc_request(e->http, "POST", path, text, strlen(text), &resp, err, sizeof(err));
		if (r < 0) {
			errmsg(e->last_error, sizeof(e->last_error), "%.500s", err);
			*next = unreached(r) || (idempotent && (r == -ETIMEDOUT || r == -EIO));
			return r == -EPROTO ? -EIO : r;
		}
		ans = json_loadb(resp.body, resp.len, 0, NULL);
		if (resp.status == 200 && ans) {
			int64_t rev = etcd_i64(json_object_get(ans, "header"), "revision");

			if (rev > e->known)
				e->known = rev;
			httpc_response_free(&resp);
			*out = ans;
			return 0;
		}
		r = ans ? answer_error(ans, resp.status, &retry, &relogin) : -EIO;
		{
			const char *msg = json_string_value(json_object_get(ans, "error"));

			snprintf(e->last_error, sizeof(e->last_error), "%s%s: %s", e->endpoints[e->current], path,
				 msg ? msg : "HTTP error");
		}
		httpc_response_free(&resp);
		json_decref(ans);
		ans = NULL;
		if (!relogin || !e->user || attempt || etcd_login(e, e->http) < 0)
			break;
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
	int r = -ENOMEM;

	*out = NULL;
	if (!text)
		return -ENOMEM;
	for (size_t tried = 0; tried < e->nendpoints; tried++) {
		bool next;

		r = call_once(e, path, text, idempotent, out, &next);
		if (r == 0 || !next)
			break;
		httpc_destroy(e->http);
		e->http = NULL;
		e->current = (e->current + 1) % e->nendpoints;
	}
	free(text);
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
				e->compact_key_created = kv.create_rev;
				store_kv_free(&kv);
			}
		}
	}
	json_decref(req);
	json_decref(ans);
	return r;
}

