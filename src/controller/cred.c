/*
 * cred.c — node credentials: bearer tokens each bound to one node, issued
 * and revoked by the admin, checked on every request.
 *
 * A token is "<name>.<secret>": name 16 hex characters (8 random bytes),
 * secret 64 hex characters (32 random bytes).  The store keeps only what
 * identifies and verifies it, never the secret:
 *
 *   /weft/cred/node/<name>  →  {"node":"node-1","sha256":"<hex of SHA-256(secret)>",
 *                               "created":"2026-11-25T21:00:00Z"}
 *
 * so a copy of the store (a backup, an etcd member) opens nothing.  The
 * token itself exists only in the answer to the request that issued it.
 *
 * Authentication runs on MHD's threads before any lock of the API's is
 * taken, so it reads an in-memory table, not the store: name → (node,
 * hash), under a read-write lock of its own.  The table follows the store:
 *
 *   creds_load   at start: the whole prefix
 *   creds_issue  this controller's writes: store first, then the table
 *   creds_revoke
 *   creds_sync   every tick: the prefix's events since the last revision
 *                seen, so a credential issued or revoked by another
 *                controller on the same store counts here within a tick
 *                (a compacted history: load the prefix again)
 *
 * Invariants
 *   1. A token is accepted only if its name is in the table and the
 *      SHA-256 of its secret equals the stored hash, compared in constant
 *      time; its node is the table's, never the client's word.
 *   2. A revoked credential leaves the table before creds_revoke returns,
 *      so the next request with it is refused (the API then ends its open
 *      watch streams: api.c).
 *   3. The secret is wiped from every buffer that held it (explicit_bzero)
 *      before the buffer is freed or reused.
 *   4. Each credential in the table carries its write budget (throttle.h),
 *      made with it and freed with it: state for credentials that exist,
 *      never for a client that did not authenticate.  A credential put
 *      again (its own issue's event) keeps its budget; creds_load, which
 *      clears the table (at start, after a compacted history), refills them.
 */
#include "controller/controller.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "controller/throttle.h"
#include "lib/u64map.h"

#define NAME_HEX 16
#define SECRET_HEX 64
#define HASH_BYTES 32

struct cred {
	char name[NAME_HEX + 1];
	char node[254];
	char created[32];
	unsigned char hash[HASH_BYTES];
	struct throttle_bucket writes;	/* its write budget (creds_throttle) */
};

struct creds {
	pthread_rwlock_t lock;	/* guards map and every cred in it */
	struct u64map map;	/* name (as a number) → struct cred * */
	int64_t rev;		/* store revision the table is complete up to */
};

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* n hex characters (lower case) into bytes; false if any is not one */
static bool unhex(const char *s, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

static void tohex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* A credential's name as the map's key; false when it is not 16 hex. */
static bool name_key(const char *name, uint64_t *key)
{
	unsigned char b[NAME_HEX / 2];

	if (strlen(name) != NAME_HEX || !unhex(name, NAME_HEX, b))
		return false;
	*key = 0;
	for (size_t i = 0; i < sizeof(b); i++)
		*key = *key << 8 | b[i];
	return true;
}

static int sha256(const char *secret, size_t len, unsigned char out[HASH_BYTES])
{
	return gnutls_hash_fast(GNUTLS_DIG_SHA256, secret, len, out) == 0 ? 0 : -EIO;
}

struct creds *creds_new(void)
{
	struct creds *c = calloc(1, sizeof(*c));

	if (c)
		pthread_rwlock_init(&c->lock, NULL);
	return c;
}

static void clear_map(struct creds *c)
{
	for (size_t i = 0; i < c->map.cap; i++)
		if (c->map.used[i]) {
			struct cred *e = (struct cred *)(uintptr_t)c->map.vals[i];
			explicit_bzero(e, sizeof(*e));
			free(e);
		}
	u64map_free(&c->map);
}

void creds_free(struct creds *c)
{
	if (!c)
		return;
	clear_map(c);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

/* The stored value of key into a new cred; NULL if it is not one of ours. */
static struct cred *cred_parse(const char *key, const char *value)
{
	const char *name = key + strlen(CRED_PREFIX);
	json_t *o = json_loads(value, 0, NULL);
	const char *node = json_string_value(json_object_get(o, "node"));
	const char *hash = json_string_value(json_object_get(o, "sha256"));
	const char *created = json_string_value(json_object_get(o, "created"));
	struct cred *e = NULL;
	uint64_t k;

	if (node && hash && strlen(hash) == 2 * HASH_BYTES && strlen(node) < sizeof(e->node) &&
	    name_key(name, &k) && (e = calloc(1, sizeof(*e)))) {
		snprintf(e->name, sizeof(e->name), "%s", name);
		snprintf(e->node, sizeof(e->node), "%s", node);
		snprintf(e->created, sizeof(e->created), "%s", created ? created : "");
		if (!unhex(hash, 2 * HASH_BYTES, e->hash)) {
			free(e);
			e = NULL;
		}
	}
	json_decref(o);
	return e;
}

/* Put e in the table (replacing one of the same name); takes e. */
static int table_put(struct creds *c, struct cred *e)
{
	uint64_t k, old;

	if (!name_key(e->name, &k)) {
		free(e);
		return -EINVAL;
	}
	if (u64map_get(&c->map, k, &old)) {
		/* the same credential seen again (its event after our issue, a
		 * reload): its budget goes on, not refilled */
		e->writes = ((struct cred *)(uintptr_t)old)->writes;
		free((struct cred *)(uintptr_t)old);
		(void)u64map_del(&c->map, k);
	}
	if (u64map_put(&c->map, k, (uint64_t)(uintptr_t)e)) {
		free(e);
		return -ENOMEM;
	}
	return 0;
}

static void table_del(struct creds *c, const char *name)
{
	uint64_t k, old;

	if (name_key(name, &k) && u64map_get(&c->map, k, &old)) {
		free((struct cred *)(uintptr_t)old);
		(void)u64map_del(&c->map, k);
	}
}

int creds_load(struct creds *c, struct store *s)
{
	struct store_kv_list l = { 0 };
	int err = store_range(s, CRED_PREFIX, NULL, 0, &l);

	if (err)
		return err;
	pthread_rwlock_wrlock(&c->lock);
	clear_map(c);
	for (size_t i = 0; i < l.n && !err; i++) {
		struct cred *e = cred_parse(l.kvs[i].key, l.kvs[i].value);
		if (e)
			err = table_put(c, e);	/* a value not ours is not a credential */
	}
	c->rev = l.revision;
	pthread_rwlock_unlock(&c->lock);
	store_kv_list_free(&l);
	return err;
}

int creds_sync(struct creds *c, struct store *s, bool *changed)
{
	struct store_event_list ev = { 0 };
	int64_t after;
	int err;

	*changed = false;
	pthread_rwlock_rdlock(&c->lock);
	after = c->rev;
	pthread_rwlock_unlock(&c->lock);
	err = store_events(s, CRED_PREFIX, after, 0, &ev);
	if (err == -ESTORE_COMPACTED) {
		*changed = true;
		return creds_load(c, s);
	}
	if (err)
		return err;
	pthread_rwlock_wrlock(&c->lock);
	for (size_t i = 0; i < ev.n; i++) {
		const struct store_event *e = &ev.events[i];
		*changed = true;
		if (e->type == STORE_EVENT_DELETE) {
			table_del(c, e->kv.key + strlen(CRED_PREFIX));
		} else {
			struct cred *n = cred_parse(e->kv.key, e->kv.value);
			if (n)
				(void)table_put(c, n);
		}
	}
	if (ev.revision > c->rev)
		c->rev = ev.revision;
	pthread_rwlock_unlock(&c->lock);
	store_event_list_free(&ev);
	return 0;
}

int creds_throttle(struct creds *c, const char *name, const struct throttle_rate *r, int64_t now_ms)
{
	uint64_t k, v;
	int wait = 0;

	if (!name_key(name, &k))
		return 0;
	pthread_rwlock_wrlock(&c->lock);
	if (u64map_get(&c->map, k, &v))
		wait = throttle_take(&((struct cred *)(uintptr_t)v)->writes, r, now_ms);
	pthread_rwlock_unlock(&c->lock);
	return wait;
}

bool creds_authenticate(struct creds *c, const char *token, struct principal *p)
{
	unsigned char hash[HASH_BYTES];
	uint64_t k, v;
	char name[NAME_HEX + 1];
	bool ok = false;

	if (strlen(token) != NAME_HEX + 1 + SECRET_HEX || token[NAME_HEX] != '.')
		return false;
	memcpy(name, token, NAME_HEX);
	name[NAME_HEX] = 0;
	if (!name_key(name, &k) || sha256(token + NAME_HEX + 1, SECRET_HEX, hash))
		return false;
	pthread_rwlock_rdlock(&c->lock);
	if (u64map_get(&c->map, k, &v)) {
		const struct cred *e = (const struct cred *)(uintptr_t)v;
		unsigned char diff = 0;

		for (size_t i = 0; i < HASH_BYTES; i++)
			diff |= (unsigned char)(e->hash[i] ^ hash[i]);
		if (diff == 0) {
			memset(p, 0, sizeof(*p));
			snprintf(p->node, sizeof(p->node), "%s", e->node);
			snprintf(p->cred, sizeof(p->cred), "%s", e->name);
			ok = true;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	explicit_bzero(hash, sizeof(hash));
	return ok;
}

bool creds_alive(struct creds *c, const char *name)
{
	uint64_t k;
	bool alive;

	if (!name_key(name, &k))
		return false;
	pthread_rwlock_rdlock(&c->lock);
	alive = u64map_get(&c->map, k, NULL);
	pthread_rwlock_unlock(&c->lock);
	return alive;
}

/* The API's view of a credential: never the hash, the token only when
 * given (the answer to its issue). */
static json_t *cred_object(const struct cred *e, const char *token)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", CRED_API_VERSION, "kind",
			      "NodeCredential", "metadata", "name", e->name, "creationTimestamp", e->created,
			      "spec", "nodeName", e->node);

	if (o && token)
		json_object_set_new(o, "status", json_pack("{s:s}", "token", token));
	return o;
}

int creds_issue(struct creds *c, struct store *s, const char *node, char *token, size_t len,
		json_t **out, struct status *st)
{
	unsigned char raw[NAME_HEX / 2 + SECRET_HEX / 2];
	char key[sizeof(CRED_PREFIX) + NAME_HEX], hashhex[2 * HASH_BYTES + 1], *value = NULL;
	struct cred *e = NULL;
	struct store_txn_result res;
	int err;

	if (!model_dns1123_subdomain(node)) {
		status_set(st, 422, "Invalid", "spec.nodeName \"%s\": not a node name (a DNS-1123 subdomain)", node);
		return -1;
	}
	if (len < NAME_HEX + 1 + SECRET_HEX + 1 || !(e = calloc(1, sizeof(*e)))) {
		status_set(st, 500, "InternalError", "out of memory");
		return -1;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		free(e);
		status_set(st, 500, "InternalError", "no randomness for a token");
		return -1;
	}
	tohex(raw, NAME_HEX / 2, e->name);
	tohex(raw, sizeof(raw), token);		/* name then secret, 80 hex */
	explicit_bzero(raw, sizeof(raw));
	memmove(token + NAME_HEX + 1, token + NAME_HEX, SECRET_HEX + 1);
	token[NAME_HEX] = '.';
	snprintf(e->node, sizeof(e->node), "%s", node);
	{
		time_t t = time(NULL);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(e->created, sizeof(e->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (sha256(token + NAME_HEX + 1, SECRET_HEX, e->hash)) {
		explicit_bzero(token, len);
		free(e);
		status_set(st, 500, "InternalError", "cannot hash the token");
		return -1;
	}
	tohex(e->hash, HASH_BYTES, hashhex);
	snprintf(key, sizeof(key), "%s%s", CRED_PREFIX, e->name);
	{
		json_t *v = json_pack("{s:s, s:s, s:s}", "node", e->node, "sha256", hashhex, "created", e->created);
		value = v ? json_dumps(v, JSON_COMPACT) : NULL;
		json_decref(v);
	}
	/* a name that is taken (1 in 2^64) is never overwritten */
	err = !value ? -ENOMEM :
	      store_txn(s, &(struct store_txn){
			   .cmps = &(struct store_cmp){ key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 }, .ncmps = 1,
			   .success = &(struct store_op){ STORE_OP_PUT, key, value, strlen(value) }, .nsuccess = 1 },
			&res);
	free(value);
	if (err || !res.succeeded) {
		explicit_bzero(token, len);
		free(e);
		status_set(st, err ? 500 : 409, err ? "InternalError" : "Conflict", "%s",
			   err ? "the store failed; no credential was issued" : "name taken; issue again");
		return -1;
	}
	*out = cred_object(e, token);
	pthread_rwlock_wrlock(&c->lock);
	err = table_put(c, e);
	pthread_rwlock_unlock(&c->lock);
	if (err || !*out) {
		status_set(st, 500, "InternalError", "out of memory (the credential %s is stored: revoke it)",
			   key + strlen(CRED_PREFIX));
		json_decref(*out);
		*out = NULL;
		explicit_bzero(token, len);
		return -1;
	}
	return 0;
}

/* The stored credential name (its value in *kv); -1 with st set (404). */
static int read_cred(struct store *s, const char *name, struct store_kv *kv, struct cred **e,
		     struct status *st)
{
	char key[512];
	uint64_t k;
	int err;

	snprintf(key, sizeof(key), "%s%s", CRED_PREFIX, name);
	err = name_key(name, &k) ? store_get(s, key, kv, NULL) : -ENOENT;
	if (err == -ENOENT) {
		status_set(st, 404, "NotFound", "nodecredentials \"%s\" not found", name);
		return -1;
	}
	if (err || !(*e = cred_parse(kv->key, kv->value))) {
		store_kv_free(kv);
		status_set(st, 500, "InternalError", "nodecredentials \"%s\": the store failed", name);
		return -1;
	}
	return 0;
}

int creds_get(struct store *s, const char *name, json_t **out, struct status *st)
{
	struct store_kv kv = { 0 };
	struct cred *e = NULL;

	if (read_cred(s, name, &kv, &e, st))
		return -1;
	*out = cred_object(e, NULL);
	free(e);
	store_kv_free(&kv);
	return 0;
}

int creds_revoke(struct creds *c, struct store *s, const char *name, json_t **out, struct status *st)
{
	struct store_kv kv = { 0 };
	struct store_txn_result res;
	struct cred *e = NULL;
	int err;

	if (read_cred(s, name, &kv, &e, st))
		return -1;
	err = store_txn(s, &(struct store_txn){
			       .cmps = &(struct store_cmp){ kv.key, STORE_CMP_MOD_REV, STORE_CMP_EQ, kv.mod_rev },
			       .ncmps = 1, .success = &(struct store_op){ STORE_OP_DELETE, kv.key, NULL, 0 },
			       .nsuccess = 1 },
			&res);
	store_kv_free(&kv);
	if (err || !res.succeeded) {
		free(e);
		status_set(st, err ? 500 : 409, err ? "InternalError" : "Conflict",
			   "nodecredentials \"%s\": %s", name,
			   err ? "the store failed; it is not revoked" : "changed meanwhile; revoke again");
		return -1;
	}
	pthread_rwlock_wrlock(&c->lock);
	table_del(c, name);
	pthread_rwlock_unlock(&c->lock);
	*out = cred_object(e, NULL);
	free(e);
	return 0;
}

int creds_list(struct store *s, json_t **items, struct status *st)
{
	struct store_kv_list l = { 0 };
	int err = store_range(s, CRED_PREFIX, NULL, 0, &l);

	if (err) {
		status_set(st, 500, "InternalError", "the store failed listing nodecredentials");
		return -1;
	}
	*items = json_array();
	for (size_t i = 0; i < l.n && *items; i++) {
		struct cred *e = cred_parse(l.kvs[i].key, l.kvs[i].value);
		if (e)
			json_array_append_new(*items, cred_object(e, NULL));
		free(e);
	}
	store_kv_list_free(&l);
	if (!*items) {
		status_set(st, 500, "InternalError", "out of memory");
		return -1;
	}
	return 0;
}
