/*
 * store_etcd.h — what the etcd back-end's files share (private to
 * src/store): store_etcd_conn.c talks to etcd's JSON gateway (connections,
 * requests, answers); store_etcd.c makes the store's calls of it (keys,
 * ranges, transactions, compaction); store_etcd_watch.c keeps the event
 * cache that one etcd watch feeds and answers store_events from it.
 *
 *   store_etcd.c ──► store_etcd_watch.c ──► store_etcd_conn.c
 *        └──────────────────────────────────────┘
 */
#ifndef WEFT_STORE_ETCD_H
#define WEFT_STORE_ETCD_H

#include "store/store.h"
#include "lib/httpc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define ETCD_MAX_ENDPOINTS 16
/* The key compaction is coordinated on, as kube-apiserver does: a
 * controller compacts only after a compare-and-swap of this key.  It is
 * the back-end's, never shown to callers (range, count, events skip it). */
#define ETCD_COMPACT_KEY "compact_rev_key"

struct etcd_cache;
struct etcd_conn;

struct etcd_store {
	struct store base;
	char *endpoints[ETCD_MAX_ENDPOINTS];	/* "http://host:port" or https */
	size_t nendpoints;
	pthread_mutex_t lock;		/* current, idle, nidle, last_error (store_etcd_conn.c) */
	size_t current;			/* the endpoint requests go to */
	struct etcd_conn *idle;		/* connections between calls, to any endpoint */
	size_t nidle;
	char *ca_file, *cert_file, *key_file;	/* TLS; ca_file set means https */
	char *user;			/* etcd user, or NULL */
	char *password;			/* read from the password file; wiped at close */
	char *token;			/* etcd's auth token, or NULL; wiped at close */
	pthread_mutex_t auth_lock;	/* token: the watch thread logs in too */
	uint64_t id;			/* unique among the process's handles (etcd_known's record) */
	int64_t compact_key_created;	/* create_revision of ETCD_COMPACT_KEY (0: not seen; atomic) */
	pthread_mutex_t cache_lock;	/* the start of cache */
	int notify;			/* eventfd: the cache got events (store_notify_fd) */
	char last_error[512];		/* why the last failed call failed, for messages */
	struct etcd_cache *cache;	/* store_etcd_watch.c; NULL until the first store_events */
};

/* A handle on endpoint i of e, with e's TLS and token (NULL, errno set). */
struct httpc *etcd_connect(struct etcd_store *e, size_t i, char *err, size_t errlen);
/* The endpoint calls go to now (an index in e->endpoints). */
size_t etcd_current(struct etcd_store *e);
/* An answer to the calling thread named revision rev: what it knows of
 * e moves up to it.  Read-your-writes is per thread: etcd_known is the
 * highest revision any answer to this thread's calls on e named (0:
 * none), what its reads of events wait for (store_etcd_watch.c) — never
 * for another thread's writes, which that thread waits for itself. */
void etcd_saw_revision(struct etcd_store *e, int64_t rev);
int64_t etcd_known(const struct etcd_store *e);
/* Close the idle connections (at close: no call in progress). */
void etcd_conns_free(struct etcd_store *e);
/* POST path with body on e's current endpoint (a connection of this
 * call's own: any thread, at any time), moving to the next one
 * when it cannot be reached (and, for reads, when it has no leader).
 * *out: the parsed answer (new ref).  0 or a negative errno:
 * -ESTORE_COMPACTED, -ERANGE (future revision), -E2BIG (etcd's limits),
 * -EINVAL (etcd refused the request), -EIO (anything else, or a write
 * whose outcome is unknown). */
int etcd_call(struct etcd_store *e, const char *path, json_t *body, bool idempotent, json_t **out);
/* The same with the body as JSON text (borrowed). */
int etcd_call_text(struct etcd_store *e, const char *path, const char *text, bool idempotent, json_t **out);
/* The JSON gateway writes int64 as strings; either form, or 0 when absent. */
int64_t etcd_i64(const json_t *obj, const char *name);
/* A base64 field decoded (NUL-terminated copy; "" when absent). */
int etcd_bytes(const json_t *obj, const char *name, char **out, size_t *len);
/* A kv of an answer into a store_kv.  0 or -errno. */
int etcd_kv(const json_t *j, struct store_kv *kv);
/* Log in (again, when the token expired).  0, or -errno with why in why. */
int etcd_login(struct etcd_store *e, struct httpc *h, char *why, size_t whylen);
/* The compaction key's record: the last compaction revision (0: never),
 * the key's version, and the store's revision when read.  0 or -errno. */
int etcd_compact_record(struct etcd_store *e, int64_t *rev, int64_t *version, int64_t *now);

/* store_etcd_watch.c */
int etcd_events(struct store *s, const char *prefix, int64_t after_rev, size_t limit,
		struct store_event_list *out);
/* The cache has replayed what it starts with, up to the revision at its
 * start (store_events_ready). */
bool etcd_events_ready(struct store *s);
/* Tell the cache the compaction revision is now rev (drops what it held). */
void etcd_cache_compacted(struct etcd_store *e, int64_t rev);
void etcd_cache_free(struct etcd_store *e);

extern const struct store_backend store_backend_etcd;

#endif
