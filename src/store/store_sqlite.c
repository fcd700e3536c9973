/*
 * store_sqlite.c — the embedded back-end: etcd v3 semantics on one SQLite
 * file, safe to share between processes.
 *
 * Schema (PRAGMA user_version 1, application_id 'weft'):
 *
 *   meta     (id = 0, revision, compacted)          one row
 *   current  (key, value, create_rev, mod_rev, version)    the live keys
 *   history  (rev, sub, key, type, value, create_rev, mod_rev, version,
 *             prev_value, prev_create_rev, prev_mod_rev, prev_version)
 *
 * current answers get/range/count; history is the event log, one row per
 * change, (rev, sub) being the revision and the change's position inside
 * its transaction.  A DELETE row has value x'', create_rev = version = 0
 * and mod_rev = the delete's revision, which is exactly the event's kv; the
 * prev_* columns are the key's state before the change, NULL when it had
 * none.  Keys and values are always bound as BLOBs, so every comparison is
 * memcmp order (etcd's byte order), and a prefix is the half-open range
 * [prefix, prefix with its last byte + 1), which the key index answers
 * (LIKE would not).
 *
 * A write transaction (sq_txn):
 *
 *   BEGIN IMMEDIATE ---- takes the file's write lock, waiting up to the
 *    |                   busy timeout for other processes
 *   read meta.revision
 *   evaluate every cmp against current  --> choose success or failure ops
 *   apply the ops at revision + 1: for each change one history row
 *    |   (INSERT ... SELECT from current, so prev comes from SQL) and
 *    |   the matching upsert or delete in current
 *   nothing changed? --> ROLLBACK, revision unchanged
 *   meta.revision = revision + 1
 *   COMMIT ------------- with synchronous=FULL the WAL is fsynced here
 *                        (in group commit, NORMAL: by sq_flush, later)
 *
 * Reads (range, events) run inside a deferred BEGIN ... COMMIT so the rows
 * and the revision they report come from one WAL snapshot; get is a single
 * statement and therefore a snapshot by itself.
 *
 * A range at an older revision R (sq_range_at), in one such snapshot:
 *   1. the history rows after R in the range, in order: the first row of a
 *      key holds its state at R (prev_*, NULL when it had none), the last
 *      one whether it exists now; those keys are "touched", sorted by key
 *   2. current, stepped in key order from the range's start, skipping
 *      touched keys, merged with the touched keys that existed at R, until
 *      the page is full
 *   3. the count, when asked: current's count of the range, minus the
 *      touched keys that exist now, plus those that existed at R
 * So a page costs the events of its range since R plus the page.
 *
 * Invariants
 *  1. meta.revision is the rev of the newest history row whenever history
 *     holds rows newer than meta.compacted; every current row has
 *     mod_rev <= meta.revision.
 *  2. Comparisons and the ops they guard run under one write lock, so two
 *     processes racing the same compare-and-swap cannot both succeed.
 *  3. history holds no row with rev <= meta.compacted, and
 *     meta.compacted <= meta.revision.
 *  4. A returned value is a fresh allocation of value_len + 1 bytes, the
 *     last one NUL.
 *
 * Errors: SQLite's codes become -ENOMEM, -EBUSY (the busy timeout expired:
 * another process held the write lock that long), -ENOSPC, or -EIO for the
 * rest.  Arguments were checked by store.c (see its invariants).
 *
 * Processes: each opens its own connection (never one inherited through
 * fork); the write lock, the WAL and the busy timeout do the rest.  A
 * process killed mid-transaction leaves a WAL without that transaction's
 * commit record, which the next opener ignores.
 */
#include "store/store.h"
#include "store/store_limits.h"
#include "lib/u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS	10000
/* SQLite's page cache, in KiB (its default is 2 MiB): a list of a
 * thousand Services read by a thousand agents, between the pod writes of
 * a cold start, found its pages evicted and read them again from the file
 * (pread was 6 % of the controller's CPU at 1,000 hollow nodes).  Pages
 * are taken as they are used, up to this. */
#define PAGE_CACHE_KIB	"65536"
#define SCHEMA_VERSION	1
#define APPLICATION_ID	0x77656674	/* "weft" */

enum { EVENT_PUT = 0, EVENT_DELETE = 1 };	/* history.type */

enum stmt {
	ST_BEGIN_READ,
	ST_BEGIN_WRITE,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_META,
	ST_SET_REVISION,
	ST_SET_COMPACTED,
	ST_GET,
	ST_CMP,
	ST_PUT_HISTORY,
	ST_PUT,
	ST_DELETE_HISTORY,
	ST_DELETE,
	ST_DELETE_RANGE_HISTORY,
	ST_DELETE_RANGE,
	ST_DELETE_FROM_HISTORY,	/* open-ended variants: no upper bound */
	ST_DELETE_FROM,
	ST_RANGE,
	ST_RANGE_FROM,
	ST_COUNT,
	ST_COUNT_FROM,
	ST_EVENTS,
	ST_EVENTS_FROM,
	ST_COMPACT,
	ST_COUNT_STMTS
};

#define HISTORY_COLUMNS								\
	"INSERT INTO history (rev, sub, key, type, value, create_rev, mod_rev, version, " \
	"prev_value, prev_create_rev, prev_mod_rev, prev_version) "

#define DELETE_HISTORY_SELECT							\
	HISTORY_COLUMNS								\
	"SELECT ?1, ?2 + row_number() OVER (ORDER BY key) - 1, key, 1, x'', 0, ?1, 0, " \
	"value, create_rev, mod_rev, version FROM current "

#define EVENTS_SELECT								\
	"SELECT rev, key, type, value, create_rev, mod_rev, version, "		\
	"prev_value, prev_create_rev, prev_mod_rev, prev_version FROM history "

static const char *const sql[ST_COUNT_STMTS] = {
	[ST_BEGIN_READ] = "BEGIN",
	[ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_META] = "SELECT revision, compacted FROM meta WHERE id = 0",
	[ST_SET_REVISION] = "UPDATE meta SET revision = ?1 WHERE id = 0",
	[ST_SET_COMPACTED] = "UPDATE meta SET compacted = ?1 WHERE id = 0",
	[ST_GET] = "SELECT m.revision, c.value, c.create_rev, c.mod_rev, c.version "
		   "FROM meta AS m LEFT JOIN current AS c ON c.key = ?1 WHERE m.id = 0",
	[ST_CMP] = "SELECT create_rev, mod_rev, version FROM current WHERE key = ?1",
	/* ?1 rev, ?2 sub, ?3 key, ?4 value */
	[ST_PUT_HISTORY] = HISTORY_COLUMNS
		"SELECT ?1, ?2, ?3, 0, ?4, coalesce(c.create_rev, ?1), ?1, coalesce(c.version, 0) + 1, "
		"c.value, c.create_rev, c.mod_rev, c.version "
		"FROM (SELECT 1) LEFT JOIN current AS c ON c.key = ?3",
	/* ?1 key, ?2 value, ?3 rev */
	[ST_PUT] = "INSERT INTO current (key, value, create_rev, mod_rev, version) "
		   "VALUES (?1, ?2, ?3, ?3, 1) ON CONFLICT (key) DO UPDATE SET "
		   "value = excluded.value, mod_rev = excluded.mod_rev, version = version + 1",
	/* ?1 rev, ?2 sub, ?3 key */
	[ST_DELETE_HISTORY] = DELETE_HISTORY_SELECT "WHERE key = ?3",
	[ST_DELETE] = "DELETE FROM current WHERE key = ?1",
	/* ?1 rev, ?2 first sub, ?3 low key (inclusive), ?4 high key (exclusive) */
	[ST_DELETE_RANGE_HISTORY] = DELETE_HISTORY_SELECT "WHERE key >= ?3 AND key < ?4",
	[ST_DELETE_RANGE] = "DELETE FROM current WHERE key >= ?1 AND key < ?2",
	[ST_DELETE_FROM_HISTORY] = DELETE_HISTORY_SELECT "WHERE key >= ?3",
	[ST_DELETE_FROM] = "DELETE FROM current WHERE key >= ?1",
	/* ?1 low key, ?2 limit, ?3 high key */
	[ST_RANGE] = "SELECT key, value, create_rev, mod_rev, version FROM current "
		     "WHERE key >= ?1 AND key < ?3 ORDER BY key LIMIT ?2",
	[ST_RANGE_FROM] = "SELECT key, value, create_rev, mod_rev, version FROM current "
			  "WHERE key >= ?1 ORDER BY key LIMIT ?2",
	/* ?1 low key, ?2 high key */
	[ST_COUNT] = "SELECT count(*) FROM current WHERE key >= ?1 AND key < ?2",
	[ST_COUNT_FROM] = "SELECT count(*) FROM current WHERE key >= ?1",
	/* ?1 after_rev, ?2 low key, ?3 high key.  No LIMIT: the (rev, sub)
	 * index yields rows in order, and sq_events stops stepping at a
	 * revision boundary after limit events. */
	[ST_EVENTS] = EVENTS_SELECT "WHERE rev > ?1 AND key >= ?2 AND key < ?3 ORDER BY rev, sub",
	[ST_EVENTS_FROM] = EVENTS_SELECT "WHERE rev > ?1 AND key >= ?2 ORDER BY rev, sub",
	[ST_COMPACT] = "DELETE FROM history WHERE rev <= ?1",
};

static const char schema[] =
	"CREATE TABLE meta ("
	"  id INTEGER PRIMARY KEY CHECK (id = 0),"
	"  revision INTEGER NOT NULL,"
	"  compacted INTEGER NOT NULL);"
	"INSERT INTO meta (id, revision, compacted) VALUES (0, 0, 0);"
	"CREATE TABLE current ("
	"  key BLOB NOT NULL UNIQUE,"
	"  value BLOB NOT NULL,"
	"  create_rev INTEGER NOT NULL,"
	"  mod_rev INTEGER NOT NULL,"
	"  version INTEGER NOT NULL);"
	"CREATE TABLE history ("
	"  rev INTEGER NOT NULL,"
	"  sub INTEGER NOT NULL,"
	"  key BLOB NOT NULL,"
	"  type INTEGER NOT NULL,"
	"  value BLOB NOT NULL,"
	"  create_rev INTEGER NOT NULL,"
	"  mod_rev INTEGER NOT NULL,"
	"  version INTEGER NOT NULL,"
	"  prev_value BLOB,"
	"  prev_create_rev INTEGER,"
	"  prev_mod_rev INTEGER,"
	"  prev_version INTEGER,"
	"  PRIMARY KEY (rev, sub));"
	"PRAGMA application_id = 2003134068;"	/* APPLICATION_ID */
	"PRAGMA user_version = 1;";		/* SCHEMA_VERSION */

struct sqlite_store {
	struct store base;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT_STMTS];
	int wal_fd;		/* group commit: the WAL, flushed by sq_flush; -1 when off */
	bool batch;		/* in a batch: each transaction is a savepoint of the batch's */
};

/* A prefix as the half-open key range [low, high); no high when the
 * prefix is empty or all 0xff bytes.  low is the prefix, or start_after
 * followed by a 0 byte (the smallest key after it) when that is larger. */
struct bounds {
	unsigned char low[STORE_KEY_MAX + 1];
	int low_len;
	unsigned char high[STORE_KEY_MAX];
	int high_len;
	bool has_high;
};

static struct sqlite_store *from(struct store *s)
{
	return (struct sqlite_store *)s;
}

static int rc_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

/* Keys and values are bound SQLITE_STATIC (borrowed from the caller), so a
 * statement forgets its bindings as soon as it is done. */
static void done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Run a statement that returns no rows. */
static int run(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	done(st);
	return rc == SQLITE_DONE ? 0 : rc_errno(rc);
}

/* Run st when its bindings went well (r == 0); either way it ends reset. */
static int run_bound(sqlite3_stmt *st, int r)
{
	if (r < 0) {
		done(st);
		return r;
	}
	return run(st);
}

static int bind_blob(sqlite3_stmt *st, int i, const void *p, size_t n)
{
	/* a NULL pointer would bind SQL NULL, not an empty blob */
	int rc = sqlite3_bind_blob(st, i, p ? p : "", (int)n, SQLITE_STATIC);

	return rc == SQLITE_OK ? 0 : rc_errno(rc);
}

static int bind_int(sqlite3_stmt *st, int i, int64_t v)
{
	int rc = sqlite3_bind_int64(st, i, v);

	return rc == SQLITE_OK ? 0 : rc_errno(rc);
}

/* LIMIT for a caller's limit: one more row than asked tells "more". */
static int64_t sql_limit(size_t limit)
{
	if (limit == 0 || limit >= (size_t)INT64_MAX)
		return -1;
	return (int64_t)limit + 1;
}

static void bounds_init(struct bounds *b, const char *prefix, const char *start_after)
{
	size_t n = strlen(prefix);

	memcpy(b->low, prefix, n);
	b->low_len = (int)n;
	if (start_after && strcmp(start_after, prefix) >= 0) {
		size_t m = strlen(start_after);

		memcpy(b->low, start_after, m);
		b->low[m] = 0;
		b->low_len = (int)m + 1;
	}
	/* the high end: drop trailing 0xff bytes, then add one to the last */
	while (n > 0 && (unsigned char)prefix[n - 1] == 0xff)
		n--;
	b->has_high = n > 0;
	if (b->has_high) {
		memcpy(b->high, prefix, n);
		b->high[n - 1]++;
		b->high_len = (int)n;
	}
}

/* Bind low to ?lo and, when there is one, high to ?hi. */
static int bind_bounds(sqlite3_stmt *st, const struct bounds *b, int lo, int hi)
{
	int r = bind_blob(st, lo, b->low, (size_t)b->low_len);

	if (r == 0 && b->has_high)
		r = bind_blob(st, hi, b->high, (size_t)b->high_len);
	return r;
}

static int exec(struct sqlite_store *s, const char *q)
{
	int rc = sqlite3_exec(s->db, q, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : -rc_errno(rc);
}

/* In a batch a transaction is a savepoint of the batch's. */
static int begin(struct sqlite_store *s, enum stmt which)
{
	return s->batch ? exec(s, "SAVEPOINT txn") : run(s->st[which]);
}

static int commit(struct sqlite_store *s)
{
	return s->batch ? exec(s, "RELEASE txn") : run(s->st[ST_COMMIT]);
}

/* Safe to call after any failure: SQLite may have rolled back already
 * (in a batch, the whole of it: sq_batch's end then finds none). */
static void rollback(struct sqlite_store *s)
{
	if (sqlite3_get_autocommit(s->db))
		return;
	if (s->batch)
		(void)exec(s, "ROLLBACK TO txn; RELEASE txn");
	else
		(void)run(s->st[ST_ROLLBACK]);
}

static int sq_batch(struct store *base, bool on, bool commit_it)
{
	struct sqlite_store *s = from(base);
	int r = 0;

	if (on) {
		r = run(s->st[ST_BEGIN_WRITE]);
		s->batch = r == 0;
		return r;
	}
	s->batch = false;
	if (sqlite3_get_autocommit(s->db))
		return commit_it ? -EIO : 0;	/* SQLite ended it on an error: not all is written */
	if (commit_it && (r = run(s->st[ST_COMMIT])) == 0)
		return 0;
	(void)run(s->st[ST_ROLLBACK]);
	return commit_it ? r : 0;
}

static int read_meta(struct sqlite_store *s, int64_t *rev, int64_t *compacted)
{
	sqlite3_stmt *st = s->st[ST_META];
	int rc = sqlite3_step(st);
	int r = 0;

	if (rc == SQLITE_ROW) {
		*rev = sqlite3_column_int64(st, 0);
		if (compacted)
			*compacted = sqlite3_column_int64(st, 1);
	} else {
		r = rc == SQLITE_DONE ? -EIO : rc_errno(rc);	/* DONE: meta row gone */
	}
	done(st);
	return r;
}

/* Copy a BLOB column into a fresh NUL-terminated buffer. */
static int column_copy(sqlite3_stmt *st, int col, char **out, size_t *len)
{
	const void *p = sqlite3_column_blob(st, col);
	int n = sqlite3_column_bytes(st, col);
	char *v;

	v = malloc((size_t)n + 1);
	if (!v)
		return -ENOMEM;
	if (n > 0)
		memcpy(v, p, (size_t)n);
	v[n] = 0;
	*out = v;
	if (len)
		*len = (size_t)n;
	return 0;
}

/* Fill kv from columns value, create_rev, mod_rev, version starting at col;
 * the key from key_col unless that is negative. */
static int column_kv(sqlite3_stmt *st, int key_col, int col, struct store_kv *kv)
{
	int r = 0;

	if (key_col >= 0)
		r = column_copy(st, key_col, &kv->key, NULL);
	if (r == 0)
		r = column_copy(st, col, &kv->value, &kv->value_len);
	kv->create_rev = sqlite3_column_int64(st, col + 1);
	kv->mod_rev = sqlite3_column_int64(st, col + 2);
	kv->version = sqlite3_column_int64(st, col + 3);
	return r;
}

static void sq_close(struct store *base)
{
	struct sqlite_store *s = from(base);

	if (!s)
		return;
	for (int i = 0; i < ST_COUNT_STMTS; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close_v2(s->db);
	if (s->wal_fd >= 0)
		close(s->wal_fd);
	free(s);
}

static int query_int(sqlite3 *db, const char *q, int64_t *v)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*v = sqlite3_column_int64(st, 0);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* Create the schema in a new file, or check an existing one is ours.
 * Returns 0 or a negative errno with the reason in err. */
static int setup_schema(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	int64_t version = 0, app = 0, tables = 0;
	int rc;

	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto sqlite_error;
	rc = query_int(db, "PRAGMA user_version", &version);
	if (rc == SQLITE_OK)
		rc = query_int(db, "PRAGMA application_id", &app);
	if (rc == SQLITE_OK)
		rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &tables);
	if (rc != SQLITE_OK)
		goto sqlite_error;
	if (version == 0 && app == 0 && tables == 0) {
		rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto sqlite_error;
	} else if (app != APPLICATION_ID) {
		snprintf(err, errlen, "store %s: not a weft store (a SQLite file of another program)",
			 path);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -EINVAL;
	} else if (version != SCHEMA_VERSION) {
		snprintf(err, errlen, "store %s: schema version %lld, this build knows %d", path,
			 (long long)version, SCHEMA_VERSION);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -EINVAL;
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto sqlite_error;
	return 0;

sqlite_error:
	snprintf(err, errlen, "store %s: %s", path, sqlite3_errmsg(db));
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc_errno(rc);
}

#define WAL_REFUSED (-1)	/* not a SQLite code: the file system said no */

/* Switching a fresh file to WAL needs a moment alone with it; another
 * process opening the same new file can make that SQLITE_BUSY, which the
 * busy handler does not cover.  Retry for up to the busy timeout.
 * Returns a SQLite code or WAL_REFUSED. */
static int set_wal(sqlite3 *db)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int rc = SQLITE_OK;

	for (int i = 0; i < BUSY_TIMEOUT_MS / 10; i++) {
		sqlite3_stmt *st = NULL;

		rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW) {
				const unsigned char *mode = sqlite3_column_text(st, 0);

				rc = mode && !strcmp((const char *)mode, "wal") ? SQLITE_OK : WAL_REFUSED;
			}
		}
		sqlite3_finalize(st);
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			break;
		nanosleep(&pause, NULL);
	}
	return rc;
}

static struct store *sq_open(const char *path, char *err, size_t errlen)
{
	struct sqlite_store *s = NULL;
	char ignored[1];
	int rc, e = 0;

	if (!err || !errlen) {
		err = ignored;
		errlen = sizeof(ignored);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "store %s: out of memory", path);
		e = ENOMEM;
		goto out;
	}
	s->wal_fd = -1;
	rc = sqlite3_open_v2(path, &s->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "store %s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		e = s->db && sqlite3_system_errno(s->db) ? sqlite3_system_errno(s->db)
							  : -rc_errno(rc);
		goto out;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
	if (sqlite3_db_readonly(s->db, "main") == 1) {
		snprintf(err, errlen, "store %s: opened read-only (check the permissions)", path);
		e = EACCES;
		goto out;
	}
	rc = set_wal(s->db);
	if (rc == WAL_REFUSED) {
		snprintf(err, errlen, "store %s: the file system does not support SQLite's WAL mode",
			 path);
		e = ENOTSUP;
		goto out;
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "PRAGMA synchronous = FULL; PRAGMA cache_size = -" PAGE_CACHE_KIB,
				  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "store %s: %s", path, sqlite3_errmsg(s->db));
		e = -rc_errno(rc);
		goto out;
	}
	e = -setup_schema(s->db, path, err, errlen);
	if (e)
		goto out;
	for (int i = 0; i < ST_COUNT_STMTS; i++) {
		rc = sqlite3_prepare_v3(s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "store %s: preparing statement %d: %s", path, i,
				 sqlite3_errmsg(s->db));
			e = -rc_errno(rc);
			goto out;
		}
	}
out:
	if (e) {
		if (s) {
			s->base.backend = &store_backend_sqlite;
			sq_close(&s->base);
		}
		errno = e;
		return NULL;
	}
	return &s->base;
}

/* Group commit (store_sync.c): a commit writes its WAL frames and returns;
 * sq_flush makes them durable.  In WAL mode that is what synchronous=FULL
 * does at every commit (fsync of the WAL), and synchronous=NORMAL still
 * flushes the WAL before a checkpoint copies it into the database, so the
 * file is never left half-copied.  The WAL exists from the first read of a
 * WAL database (setup_schema's) until the last connection closes; this one
 * keeps it open, so the descriptor names the live WAL for as long as it is
 * open (SQLite resets and truncates it in place, never replaces it). */
static int sq_defer_sync(struct store *base)
{
	struct sqlite_store *s = from(base);
	const char *wal = sqlite3_filename_wal(sqlite3_db_filename(s->db, "main"));
	int rc;

	if (s->wal_fd < 0) {
		if (!wal || !*wal)
			return -ENOTSUP;	/* an in-memory database */
		s->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
		if (s->wal_fd < 0)
			return -errno;
	}
	rc = sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : -rc_errno(rc);
}

static int sq_flush(struct store *base)
{
	struct sqlite_store *s = from(base);

	return fdatasync(s->wal_fd) ? -errno : 0;
}

static int sq_revision(struct store *base, int64_t *rev)
{
	return read_meta(from(base), rev, NULL);
}

static int sq_compacted(struct store *base, int64_t *rev)
{
	int64_t ignored;

	return read_meta(from(base), &ignored, rev);
}

static int sq_get(struct store *base, const char *key, struct store_kv *out, int64_t *rev)
{
	struct sqlite_store *s = from(base);
	sqlite3_stmt *st = s->st[ST_GET];
	int r, rc;

	r = bind_blob(st, 1, key, strlen(key));
	if (r < 0)
		goto out;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		r = rc == SQLITE_DONE ? -EIO : rc_errno(rc);
		goto out;
	}
	*rev = sqlite3_column_int64(st, 0);
	if (sqlite3_column_type(st, 1) == SQLITE_NULL) {
		r = -ENOENT;
		goto out;
	}
	out->key = strdup(key);
	if (!out->key) {
		r = -ENOMEM;
		goto out;
	}
	r = column_kv(st, -1, 1, out);
out:
	done(st);
	if (r < 0)
		store_kv_free(out);
	return r;
}

static int sq_range(struct store *base, const char *prefix, const char *start_after, size_t limit,
		    struct store_kv_list *out)
{
	struct sqlite_store *s = from(base);
	struct bounds b;
	sqlite3_stmt *st;
	size_t cap = 0;
	int r, rc = SQLITE_DONE;

	bounds_init(&b, prefix, start_after);
	st = s->st[b.has_high ? ST_RANGE : ST_RANGE_FROM];
	r = begin(s, ST_BEGIN_READ);
	if (r < 0)
		return r;
	r = read_meta(s, &out->revision, NULL);
	if (r == 0)
		r = bind_bounds(st, &b, 1, 3);
	if (r == 0)
		r = bind_int(st, 2, sql_limit(limit));
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (limit && out->n == limit) {
			out->more = true;
			break;
		}
		if (out->n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct store_kv *kvs = realloc(out->kvs, ncap * sizeof(*kvs));

			if (!kvs) {
				r = -ENOMEM;
				break;
			}
			out->kvs = kvs;
			cap = ncap;
		}
		memset(&out->kvs[out->n], 0, sizeof(out->kvs[0]));
		out->n++;
		r = column_kv(st, 0, 1, &out->kvs[out->n - 1]);
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = rc_errno(rc);
	done(st);
	if (r == 0)
		r = commit(s);
	if (r < 0)
		rollback(s);
	return r;
}

/* A key changed after the revision a range is read at (sq_range_at). */
struct touched {
	struct store_kv then;	/* its state at the revision; key set, value NULL when it had none */
	bool now;		/* it exists now */
};

struct touched_set {
	struct touched *t;
	size_t n, cap;
	struct u64map index;	/* hash of the key (probed on collision) -> position + 1 */
};

static void touched_free(struct touched_set *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		store_kv_free(&ts->t[i].then);
	free(ts->t);
	u64map_free(&ts->index);
}

static int by_touched_key(const void *a, const void *b)
{
	return strcmp(((const struct touched *)a)->then.key, ((const struct touched *)b)->then.key);
}

/* The touched entry of the history row st is on (columns as EVENTS_SELECT):
 * the first row of a key records its state before; every row its presence. */
static int touched_row(struct touched_set *ts, sqlite3_stmt *st)
{
	const char *key = (const char *)sqlite3_column_blob(st, 1);
	size_t len = (size_t)sqlite3_column_bytes(st, 1);
	uint64_t h = u64map_hash_bytes(key, len), pos;
	struct touched *t;
	int r;

	while (u64map_get(&ts->index, h, &pos)) {
		t = &ts->t[pos - 1];
		if (strlen(t->then.key) == len && !memcmp(t->then.key, key, len)) {
			t->now = sqlite3_column_int(st, 2) != EVENT_DELETE;
			return 0;
		}
		h = h * 0x100000001b3ull + 1;	/* another key with this hash: probe on */
	}
	if (ts->n == ts->cap) {
		size_t ncap = ts->cap ? 2 * ts->cap : 16;
		struct touched *nt = realloc(ts->t, ncap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		ts->t = nt;
		ts->cap = ncap;
	}
	t = &ts->t[ts->n];
	memset(t, 0, sizeof(*t));
	r = sqlite3_column_type(st, 9) != SQLITE_NULL ? column_kv(st, 1, 7, &t->then)
						      : column_copy(st, 1, &t->then.key, NULL);
	if (r == 0)
		r = u64map_put(&ts->index, h, ts->n + 1);
	if (r < 0) {
		store_kv_free(&t->then);
		return r;
	}
	t->now = sqlite3_column_int(st, 2) != EVENT_DELETE;
	ts->n++;
	return 0;
}

/* Step 1: every key of b changed after rev. */
static int touched_since(struct sqlite_store *s, const struct bounds *b, int64_t rev, struct touched_set *ts)
{
	sqlite3_stmt *st = s->st[b->has_high ? ST_EVENTS : ST_EVENTS_FROM];
	int r = bind_int(st, 1, rev), rc = SQLITE_DONE;

	if (r == 0)
		r = bind_bounds(st, b, 2, 3);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = touched_row(ts, st);
	if (r == 0 && rc != SQLITE_DONE)
		r = rc_errno(rc);
	done(st);
	if (r == 0 && ts->n)
		qsort(ts->t, ts->n, sizeof(*ts->t), by_touched_key);
	return r;
}

static struct touched *touched_find(const struct touched_set *ts, const char *key)
{
	struct touched probe = { .then.key = (char *)key };

	return ts->n ? bsearch(&probe, ts->t, ts->n, sizeof(*ts->t), by_touched_key) : NULL;
}

static int kv_copy(const struct store_kv *from, struct store_kv *to)
{
	*to = *from;
	to->key = strdup(from->key);
	to->value = malloc(from->value_len + 1);
	if (!to->key || !to->value) {
		store_kv_free(to);
		return -ENOMEM;
	}
	memcpy(to->value, from->value, from->value_len + 1);
	return 0;
}

static int list_push(struct store_kv_list *out, size_t *cap, struct store_kv *kv)
{
	if (out->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		struct store_kv *kvs = realloc(out->kvs, ncap * sizeof(*kvs));

		if (!kvs) {
			store_kv_free(kv);
			return -ENOMEM;
		}
		out->kvs = kvs;
		*cap = ncap;
	}
	out->kvs[out->n++] = *kv;
	memset(kv, 0, sizeof(*kv));
	return 0;
}

/* Step 2: current merged with the touched keys' states at the revision. */
static int merge_page(struct sqlite_store *s, const struct bounds *b, size_t limit, struct touched_set *ts,
		      struct store_kv_list *out)
{
	sqlite3_stmt *st = s->st[b->has_high ? ST_RANGE : ST_RANGE_FROM];
	struct store_kv row = { 0 };
	size_t cap = 0, ti = 0;
	bool have_row = false;
	int r = bind_bounds(st, b, 1, 3), rc = SQLITE_ROW;

	if (r == 0)
		r = bind_int(st, 2, -1);
	while (r == 0) {
		bool from_touched;

		while (!have_row && rc == SQLITE_ROW) {
			rc = sqlite3_step(st);
			if (rc != SQLITE_ROW)
				break;
			r = column_kv(st, 0, 1, &row);
			if (r < 0)
				break;
			have_row = !touched_find(ts, row.key);
			if (!have_row)
				store_kv_free(&row);	/* its state at the revision is the touched one */
		}
		if (r < 0)
			break;
		while (ti < ts->n && !ts->t[ti].then.value)
			ti++;
		if (!have_row && ti == ts->n)
			break;
		if (limit && out->n == limit) {
			out->more = true;
			break;
		}
		from_touched = ti < ts->n && (!have_row || strcmp(ts->t[ti].then.key, row.key) < 0);
		if (from_touched) {
			struct store_kv copy;	/* the set stays whole: it is searched on */

			r = kv_copy(&ts->t[ti++].then, &copy);
			if (r == 0)
				r = list_push(out, &cap, &copy);
		} else {
			r = list_push(out, &cap, &row);
			have_row = false;
		}
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = rc_errno(rc);
	store_kv_free(&row);
	done(st);
	return r;
}

/* Step 3: how many keys b held at the revision. */
static int count_then(struct sqlite_store *s, const struct bounds *b, const struct touched_set *ts, size_t *count)
{
	sqlite3_stmt *st = s->st[b->has_high ? ST_COUNT : ST_COUNT_FROM];
	int r = bind_bounds(st, b, 1, 2), rc;
	int64_t n = 0;

	if (r == 0) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		else
			r = rc_errno(rc);
	}
	done(st);
	for (size_t i = 0; r == 0 && i < ts->n; i++)
		n += (ts->t[i].then.key && ts->t[i].then.value ? 1 : 0) - (ts->t[i].now ? 1 : 0);
	*count = n > 0 ? (size_t)n : 0;
	return r;
}

static int sq_range_at(struct store *base, const char *prefix, const char *start_after, size_t limit,
		       int64_t rev, struct store_kv_list *out, size_t *count)
{
	struct sqlite_store *s = from(base);
	struct touched_set ts = { 0 };
	int64_t current, compacted;
	struct bounds b;
	int r;

	bounds_init(&b, prefix, start_after);
	r = begin(s, ST_BEGIN_READ);
	if (r < 0)
		return r;
	r = read_meta(s, &current, &compacted);
	if (r == 0 && rev == 0)
		rev = current;
	if (r == 0 && rev > current)
		r = -ERANGE;
	if (r == 0 && rev < compacted)
		r = -ESTORE_COMPACTED;
	out->revision = rev;
	if (r == 0 && rev < current)
		r = touched_since(s, &b, rev, &ts);
	if (r == 0)
		r = merge_page(s, &b, limit, &ts, out);
	if (r == 0 && count)
		r = count_then(s, &b, &ts, count);
	touched_free(&ts);
	if (r == 0)
		r = commit(s);
	if (r < 0)
		rollback(s);
	return r;
}

static int sq_count(struct store *base, const char *prefix, size_t *n)
{
	struct sqlite_store *s = from(base);
	struct bounds b;
	sqlite3_stmt *st;
	int r, rc;

	bounds_init(&b, prefix, NULL);
	st = s->st[b.has_high ? ST_COUNT : ST_COUNT_FROM];
	r = bind_bounds(st, &b, 1, 2);
	if (r == 0) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*n = (size_t)sqlite3_column_int64(st, 0);
		else
			r = rc_errno(rc);
	}
	done(st);
	return r;
}

/* 1 if the comparison holds, 0 if not, or a negative errno. */
static int cmp_holds(struct sqlite_store *s, const struct store_cmp *c)
{
	sqlite3_stmt *st = s->st[ST_CMP];
	int64_t revs[3] = { 0, 0, 0 };	/* create_rev, mod_rev, version */
	int64_t v;
	int r, rc;

	r = bind_blob(st, 1, c->key, strlen(c->key));
	if (r < 0)
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		for (int i = 0; i < 3; i++)
			revs[i] = sqlite3_column_int64(st, i);
	} else if (rc != SQLITE_DONE) {
		r = rc_errno(rc);
		goto out;
	}
	switch (c->target) {
	case STORE_CMP_CREATE_REV:
		v = revs[0];
		break;
	case STORE_CMP_MOD_REV:
		v = revs[1];
		break;
	default:
		v = revs[2];
		break;
	}
	switch (c->op) {
	case STORE_CMP_EQ:
		r = v == c->value;
		break;
	case STORE_CMP_NE:
		r = v != c->value;
		break;
	case STORE_CMP_LT:
		r = v < c->value;
		break;
	default:
		r = v > c->value;
		break;
	}
out:
	done(st);
	return r;
}

/* Apply one op at revision rev; *sub counts the changes made so far in
 * this transaction and numbers the history rows. */
static int apply(struct sqlite_store *s, const struct store_op *op, int64_t rev, int64_t *sub)
{
	size_t key_len = strlen(op->key);
	sqlite3_stmt *hist, *cur;
	struct bounds b;
	int r, changes;

	switch (op->type) {
	case STORE_OP_PUT:
		hist = s->st[ST_PUT_HISTORY];
		r = bind_int(hist, 1, rev);
		if (r == 0)
			r = bind_int(hist, 2, *sub);
		if (r == 0)
			r = bind_blob(hist, 3, op->key, key_len);
		if (r == 0)
			r = bind_blob(hist, 4, op->value, op->value_len);
		r = run_bound(hist, r);
		if (r < 0)
			return r;
		cur = s->st[ST_PUT];
		r = bind_blob(cur, 1, op->key, key_len);
		if (r == 0)
			r = bind_blob(cur, 2, op->value, op->value_len);
		if (r == 0)
			r = bind_int(cur, 3, rev);
		r = run_bound(cur, r);
		if (r < 0)
			return r;
		(*sub)++;
		return 0;
	case STORE_OP_DELETE:
		hist = s->st[ST_DELETE_HISTORY];
		cur = s->st[ST_DELETE];
		r = bind_blob(cur, 1, op->key, key_len);
		if (r == 0)
			r = bind_blob(hist, 3, op->key, key_len);
		break;
	default:
		bounds_init(&b, op->key, NULL);
		hist = s->st[b.has_high ? ST_DELETE_RANGE_HISTORY : ST_DELETE_FROM_HISTORY];
		cur = s->st[b.has_high ? ST_DELETE_RANGE : ST_DELETE_FROM];
		r = bind_bounds(cur, &b, 1, 2);
		if (r == 0)
			r = bind_bounds(hist, &b, 3, 4);
		break;
	}
	/* both deletes: history rows first (they read current), then current */
	if (r == 0)
		r = bind_int(hist, 1, rev);
	if (r == 0)
		r = bind_int(hist, 2, *sub);
	if (r < 0) {
		done(hist);
		done(cur);
		return r;
	}
	r = run(hist);
	changes = sqlite3_changes(s->db);
	if (r < 0 || changes == 0) {
		done(cur);
		return r;
	}
	*sub += changes;
	return run(cur);
}

static int sq_txn(struct store *base, const struct store_txn *txn, struct store_txn_result *res)
{
	struct sqlite_store *s = from(base);
	const struct store_op *ops;
	int64_t rev, sub = 0;
	bool holds = true;
	size_t nops;
	int r;

	r = begin(s, ST_BEGIN_WRITE);
	if (r < 0)
		return r;
	r = read_meta(s, &rev, NULL);
	for (size_t i = 0; r == 0 && holds && i < txn->ncmps; i++) {
		r = cmp_holds(s, &txn->cmps[i]);
		if (r >= 0) {
			holds = r;
			r = 0;
		}
	}
	if (r < 0)
		goto out;
	ops = holds ? txn->success : txn->failure;
	nops = holds ? txn->nsuccess : txn->nfailure;
	for (size_t i = 0; r == 0 && i < nops; i++)
		r = apply(s, &ops[i], rev + 1, &sub);
	if (r < 0)
		goto out;
	if (sub == 0) {
		rollback(s);	/* nothing changed: no new revision */
	} else {
		sqlite3_stmt *st = s->st[ST_SET_REVISION];

		r = bind_int(st, 1, rev + 1);
		r = run_bound(st, r);
		if (r == 0)
			r = commit(s);
		if (r < 0)
			goto out;
		rev++;
	}
	res->succeeded = holds;
	res->revision = rev;
out:
	if (r < 0)
		rollback(s);
	return r;
}

static int sq_events(struct store *base, const char *prefix, int64_t after_rev, size_t limit,
		     struct store_event_list *out)
{
	struct sqlite_store *s = from(base);
	int64_t compacted, last_rev = -1;
	struct bounds b;
	sqlite3_stmt *st;
	size_t cap = 0;
	int r, rc = SQLITE_DONE;

	bounds_init(&b, prefix, NULL);
	st = s->st[b.has_high ? ST_EVENTS : ST_EVENTS_FROM];
	r = begin(s, ST_BEGIN_READ);
	if (r < 0)
		return r;
	r = read_meta(s, &out->revision, &compacted);
	if (r == 0 && after_rev < compacted)
		r = -ESTORE_COMPACTED;
	if (r == 0)
		r = bind_int(st, 1, after_rev);
	if (r == 0)
		r = bind_bounds(st, &b, 2, 3);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t rev = sqlite3_column_int64(st, 0);
		struct store_event *ev;

		/* never end inside a transaction: "ask again after the last
		 * event" would skip the rest of its revision */
		if (limit && out->n >= limit && rev != last_rev) {
			out->more = true;
			break;
		}
		last_rev = rev;
		if (out->n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct store_event *evs = realloc(out->events, ncap * sizeof(*evs));

			if (!evs) {
				r = -ENOMEM;
				break;
			}
			out->events = evs;
			cap = ncap;
		}
		ev = &out->events[out->n++];
		memset(ev, 0, sizeof(*ev));
		ev->type = sqlite3_column_int(st, 2) == EVENT_DELETE ? STORE_EVENT_DELETE
								     : STORE_EVENT_PUT;
		/* columns: 0 rev, 1 key, 2 type, 3..6 kv, 7..10 prev */
		r = column_kv(st, 1, 3, &ev->kv);
		if (r == 0 && sqlite3_column_type(st, 9) != SQLITE_NULL)
			r = column_kv(st, 1, 7, &ev->prev);
	}
	if (r == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = rc_errno(rc);
	done(st);
	if (r == 0)
		r = commit(s);
	if (r < 0)
		rollback(s);
	return r;
}

static int sq_compact(struct store *base, int64_t rev)
{
	struct sqlite_store *s = from(base);
	int64_t current, compacted;
	sqlite3_stmt *st;
	int r;

	r = begin(s, ST_BEGIN_WRITE);
	if (r < 0)
		return r;
	r = read_meta(s, &current, &compacted);
	if (r < 0)
		goto out;
	if (rev > current) {
		r = -EINVAL;
		goto out;
	}
	if (rev <= compacted) {
		rollback(s);	/* already compacted that far */
		return 0;
	}
	st = s->st[ST_COMPACT];
	r = bind_int(st, 1, rev);
	r = run_bound(st, r);
	if (r < 0)
		goto out;
	st = s->st[ST_SET_COMPACTED];
	r = bind_int(st, 1, rev);
	r = run_bound(st, r);
	if (r == 0)
		r = commit(s);
out:
	if (r < 0)
		rollback(s);
	return r;
}

const struct store_backend store_backend_sqlite = {
	.scheme = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.revision = sq_revision,
	.get = sq_get,
	.range = sq_range,
	.range_at = sq_range_at,
	.count = sq_count,
	.txn = sq_txn,
	.events = sq_events,
	.compact = sq_compact,
	.compacted = sq_compacted,
	.defer_sync = sq_defer_sync,
	.flush = sq_flush,
	.batch = sq_batch,
};
