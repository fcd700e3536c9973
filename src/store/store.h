/*
 * store.h — weft's revisioned key-value store, with the semantics of etcd v3.
 *
 * Everything the controller keeps lives here: objects as JSON values under
 * keys such as "/weft/pods/red/web-1".  The interface is etcd's, so that an
 * etcd back-end implements it call for call; the SQLite back-end
 * (store_sqlite.c) is the embedded default.  No SQL exists outside it.
 *
 * Invariants
 *  1. There is one global revision.  Every successful write transaction
 *     (that changes at least one key) increases it by exactly one; all puts
 *     and deletes of that transaction carry that revision as their mod_rev.
 *     A transaction whose success ops are empty, or a failed transaction,
 *     does not increase it.
 *  2. A transaction is atomic and durable before store_txn() returns: after
 *     a crash at any point either all of its operations are visible or none.
 *     A handle in group commit (store_defer_sync) moves "durable" to the
 *     next store_sync that covers the transaction; atomic it always is.
 *  3. Every key has create_rev (revision that created it, since its last
 *     delete), mod_rev (revision of its last change) and version (number of
 *     changes since creation, 1 after the create).  A key that does not exist
 *     compares as create_rev = mod_rev = version = 0.
 *  4. History: every change is kept as an event until compacted.  Events
 *     after the compaction revision can be read in revision order
 *     (store_events); asking for older ones fails with -ESTORE_COMPACTED.
 *  5. Several processes may open the same store; transactions serialise and
 *     compare-and-swap makes allocation safe across them.
 *
 * Ownership: a struct store is created by store_open and freed by
 * store_close.  Results (struct store_kv, lists, events) are owned by the
 * caller and freed with the matching *_free function.  Keys and values given
 * to the store are borrowed for the duration of the call only.
 *
 * Threads: one struct store may be used by one thread at a time, except
 * store_commits and store_sync, which any thread may call at any time —
 * unless store_concurrent says the handle takes calls from several threads
 * at once (etcd: each call its own connection).
 */
#ifndef WEFT_STORE_H
#define WEFT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_WUR __attribute__((warn_unused_result))

/* Returned (negated) when a revision older than the compaction is asked for. */
#define ESTORE_COMPACTED 1000

struct store;

struct store_kv {
	char *key;
	char *value;		/* NUL-terminated; value_len excludes the NUL */
	size_t value_len;
	int64_t create_rev;
	int64_t mod_rev;
	int64_t version;
};

struct store_kv_list {
	struct store_kv *kvs;
	size_t n;
	int64_t revision;	/* store revision the list was read at */
	bool more;		/* limit cut the list */
};

enum store_cmp_target { STORE_CMP_MOD_REV, STORE_CMP_CREATE_REV, STORE_CMP_VERSION };
enum store_cmp_op { STORE_CMP_EQ, STORE_CMP_NE, STORE_CMP_LT, STORE_CMP_GT };

/* "key does not exist" is {key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0}. */
struct store_cmp {
	const char *key;
	enum store_cmp_target target;
	enum store_cmp_op op;
	int64_t value;
};

enum store_op_type {
	STORE_OP_PUT,
	STORE_OP_DELETE,	/* one key; deleting a missing key is no change */
	STORE_OP_DELETE_PREFIX,	/* every key starting with key */
};

struct store_op {
	enum store_op_type type;
	const char *key;
	const char *value;	/* PUT only */
	size_t value_len;
};

struct store_txn {
	const struct store_cmp *cmps;	/* all must hold ... */
	size_t ncmps;
	const struct store_op *success;	/* ... then these are applied */
	size_t nsuccess;
	const struct store_op *failure;	/* ... else these */
	size_t nfailure;
};

struct store_txn_result {
	bool succeeded;		/* the comparisons held */
	int64_t revision;	/* store revision after the transaction */
};

enum store_event_type { STORE_EVENT_PUT, STORE_EVENT_DELETE };

struct store_event {
	enum store_event_type type;
	struct store_kv kv;	/* DELETE: key, mod_rev = the delete's revision, value empty */
	struct store_kv prev;	/* the value before this event; key NULL if none */
};

struct store_event_list {
	struct store_event *events;
	size_t n;
	int64_t revision;	/* store revision when read */
	bool more;		/* limit cut the list: ask again after the last event */
};

/*
 * Open the store named by url:
 *   "sqlite:/path/to/file.db"  (or a bare path) — the SQLite back-end.
 *   "etcd:http://host:2379"    — reserved for the etcd back-end.
 * Returns NULL with errno set, and a message in err.
 */
struct store *store_open(const char *url, char *err, size_t errlen);
void store_close(struct store *s);

/* Current revision (0 for an empty store). */
int store_revision(struct store *s, int64_t *rev) WEFT_WUR;

/* One key.  Returns 0, -ENOENT when missing, or another negative errno.
 * rev (may be NULL) receives the store revision it was read at. */
int store_get(struct store *s, const char *key, struct store_kv *out, int64_t *rev) WEFT_WUR;

/* Every key starting with prefix, in key order, at most limit (0 = all),
 * starting at start_after (exclusive; NULL = from the start of the prefix). */
int store_range(struct store *s, const char *prefix, const char *start_after,
		size_t limit, struct store_kv_list *out) WEFT_WUR;

/* store_range as the store was at revision rev (0: now), read in one
 * snapshot, as etcd's Range with a revision: out->revision is rev (or the
 * current revision for 0).  count (may be NULL) receives how many keys the
 * range (prefix, after start_after) held then, limit aside.  Costs the
 * page plus the events of the range since rev (and a count of the range
 * when count is asked for).  -ESTORE_COMPACTED when rev is older than the
 * compaction, -ERANGE when it is newer than the store, -ENOTSUP from a
 * back-end without history reads. */
int store_range_at(struct store *s, const char *prefix, const char *start_after, size_t limit, int64_t rev,
		   struct store_kv_list *out, size_t *count) WEFT_WUR;

/* Count keys under a prefix. */
int store_count(struct store *s, const char *prefix, size_t *n) WEFT_WUR;

/* Compare-and-swap transaction.  Returns 0 (check res->succeeded) or a
 * negative errno when the store failed (nothing applied). */
int store_txn(struct store *s, const struct store_txn *txn, struct store_txn_result *res) WEFT_WUR;

/* Conveniences built on store_txn. */
int store_put(struct store *s, const char *key, const char *value, size_t len, int64_t *rev) WEFT_WUR;
int store_delete(struct store *s, const char *key, int64_t *rev) WEFT_WUR;

/* Events with revision > after_rev on keys starting with prefix, in
 * revision order (then in the order of the ops in the transaction), about
 * limit (0 = all): a list never ends inside a transaction, so it may exceed
 * limit by the rest of one transaction's events and "ask again after the
 * last event's revision" never skips anything.  -ESTORE_COMPACTED if
 * after_rev < the compaction revision. */
int store_events(struct store *s, const char *prefix, int64_t after_rev, size_t limit,
		 struct store_event_list *out) WEFT_WUR;

/* Drop the history of revisions <= rev (the current values stay). */
int store_compact(struct store *s, int64_t rev) WEFT_WUR;
/* The compaction revision (0 if never compacted). */
int store_compacted(struct store *s, int64_t *rev) WEFT_WUR;

/* Group commit (store_sync.c).  store_defer_sync switches this handle's
 * write transactions to "written, not yet flushed": store_txn returns once
 * the commit is written, and store_sync(s, n) returns once the first n
 * commits of the handle are durable; threads that wait at once share one
 * flush.  So a server commits under its lock and flushes outside it, and
 * waits, before it lets anyone see a write (the writer's answer, a read, a
 * watch event), until store_sync covers what it read: nothing is seen that
 * a power cut could take back.  A process killed without a flush loses
 * nothing either: the written commits are the kernel's.  -ENOTSUP from a
 * back-end without it.  A failed flush is final: every later store_sync
 * returns its error (a flush's failure does not say what reached the disk). */
int store_defer_sync(struct store *s) WEFT_WUR;
/* Commits made on s so far (0 when not deferred). */
uint64_t store_commits(struct store *s);
/* Returns 0 once commits 1..upto are durable (at once when they are), or
 * the flush's -errno.  Any thread, no lock of the caller's needed. */
int store_sync(struct store *s, uint64_t upto) WEFT_WUR;

/* A batch: the transactions of this handle between store_batch_begin and
 * store_batch_end are written as one transaction of the back-end (SQLite:
 * one file lock, one set of WAL frames), each still with its own revision
 * and events, and one that fails undone alone.  For a writer that makes
 * many small writes in a row under its lock (a batched apply), whose
 * per-transaction cost is most of theirs.  Until the end only this handle
 * reads them (its caller must not let anything it reads leave: a watch
 * event, an answer); another handle (a reader's connection) sees all or
 * none of them; for group commit they are one commit, counted at the end.
 * store_batch_end(s, false), or an end that fails, undoes them all (and
 * their revisions are given again): the writer cannot go on as if they
 * were written.  -ENOTSUP from a back-end without batches (etcd), -EINVAL
 * for a batch in a batch. */
int store_batch_begin(struct store *s) WEFT_WUR;
int store_batch_end(struct store *s, bool commit) WEFT_WUR;
bool store_in_batch(const struct store *s);

/* Copy every key under prefix of src (read at one revision) into dst,
 * which must hold none, then carry dst's revision past src's and compact
 * it there, so that a resourceVersion of src is 410 on dst (store_copy.c).
 * 0, or a negative errno (-EEXIST: dst is not empty, or became so; -EBUSY:
 * src changed meanwhile) with a message in err. */
struct store_copy_report {
	size_t keys;			/* copied */
	int64_t source_revision;	/* src was read at */
	int64_t padding;		/* scratch writes that carried dst's revision past it */
	int64_t destination_revision;	/* dst's revision, and its compaction, at the end */
};
int store_copy(struct store *src, struct store *dst, const char *prefix, struct store_copy_report *rep, char *err,
	       size_t errlen) WEFT_WUR;

/* A descriptor that turns readable when events may have come that this
 * handle has not read (another controller's writes, as etcd's watch brings
 * them), or -1 when the back-end has none (SQLite: its user reads on a
 * timer).  Borrowed: valid until store_close.  Any thread may poll it;
 * store_notify_clear empties it (before reading the events, so that none
 * slips between). */
int store_notify_fd(struct store *s);
void store_notify_clear(struct store *s);

/* True when any call on s may come from several threads at once, each
 * call its own round trip (etcd): a caller that serialises its callers
 * with a lock may let it go while a call waits.  False (SQLite): one
 * thread at a time, as "Threads" above. */
bool store_concurrent(const struct store *s);

/* Whether events are served from the back-end's own record of them yet:
 * etcd's event cache has replayed the history it starts with (false until
 * the first store_events starts it); SQLite always.  A controller is
 * ready (/readyz) when it is.  Any thread. */
bool store_events_ready(struct store *s);

void store_kv_free(struct store_kv *kv);		/* frees the members, not kv */
void store_kv_list_free(struct store_kv_list *l);
void store_event_list_free(struct store_event_list *l);

/* Back-end table: one per back-end, chosen once in store_open. */
struct store_backend {
	const char *scheme;
	struct store *(*open)(const char *path, char *err, size_t errlen);
	void (*close)(struct store *s);
	int (*revision)(struct store *s, int64_t *rev);
	int (*get)(struct store *s, const char *key, struct store_kv *out, int64_t *rev);
	int (*range)(struct store *s, const char *prefix, const char *start_after, size_t limit,
		     struct store_kv_list *out);
	int (*range_at)(struct store *s, const char *prefix, const char *start_after, size_t limit, int64_t rev,
			struct store_kv_list *out, size_t *count);	/* NULL: not supported */
	int (*count)(struct store *s, const char *prefix, size_t *n);
	int (*txn)(struct store *s, const struct store_txn *txn, struct store_txn_result *res);
	int (*events)(struct store *s, const char *prefix, int64_t after_rev, size_t limit,
		      struct store_event_list *out);
	int (*compact)(struct store *s, int64_t rev);
	int (*compacted)(struct store *s, int64_t *rev);
	int (*notify_fd)(struct store *s);	/* NULL: none (store_notify_fd) */
	/* group commit: both NULL when the back-end has none */
	int (*defer_sync)(struct store *s);	/* commits from now on are not flushed */
	int (*flush)(struct store *s);		/* flush every commit written so far; thread-safe */
	/* store_batch_begin (on) and _end (off, with commit or rollback);
	 * NULL when the back-end has none */
	int (*batch)(struct store *s, bool on, bool commit);
	bool concurrent;			/* store_concurrent */
	bool (*events_ready)(struct store *s);	/* NULL: always (store_events_ready) */
};

struct store_sync;

/* Every back-end's struct store begins with this. */
struct store {
	const struct store_backend *backend;
	struct store_sync *sync;	/* group commit's state (store_sync.c), NULL when off */
	bool in_batch;			/* between store_batch_begin and _end */
	size_t batch_commits;		/* its transactions that changed something */
};


extern const struct store_backend store_backend_sqlite;

#endif
