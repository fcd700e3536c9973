/*
 * store_sqlite_test.c — the tests of what only the SQLite back-end has:
 * its url forms, refusing files that are not weft stores, a reopened file
 * keeping state and history, and group commit (store_defer_sync /
 * store_sync; etcd answers -ENOTSUP, as store_test.c checks), and
 * batches (store_batch_begin / _end: many transactions written as one).
 *
 * Everything both back-ends promise is store_test.c's conformance suite.
 * These always run on SQLite, in the test's temp dir: WEFT_TEST_STORE does
 * not apply to them, and tests/api/store_etcd.sh does not run this binary
 * (it says so), so an etcd run counts them neither passed nor failed.
 */
#include "store/store.h"
#include "store/store_test_helpers.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------- */

__attribute__((constructor)) static void note_env(void)
{
	const char *u = getenv("WEFT_TEST_STORE");

	if (u && u[0])
		fprintf(stderr, "store_sqlite_test: SQLite-only tests: WEFT_TEST_STORE=%s does not apply\n", u);
}

static const char *db_url(char *buf, size_t len)
{
	snprintf(buf, len, "sqlite:%s/store.db", test_tmpdir());
	return buf;
}

static struct store *open_tmp(void)
{
	char url[300], err[256];

	return store_open(db_url(url, sizeof(url)), err, sizeof(err));
}

/* ---- open -------------------------------------------------------------- */

TEST(store_open_url_forms)
{
	char url[300], err[256], path[280];
	struct store *s;

	snprintf(path, sizeof(path), "%s/a.db", test_tmpdir());
	s = store_open(path, err, sizeof(err));		/* bare path */
	CHECK(s != NULL);
	CHECK(put_str(s, "/k", "v", NULL) == 0);
	store_close(s);

	snprintf(url, sizeof(url), "sqlite:%s", path);
	s = store_open(url, err, sizeof(err));
	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), 1);
	store_close(s);

	snprintf(url, sizeof(url), "sqlite://%s", path);
	s = store_open(url, err, sizeof(err));
	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), 1);
	store_close(s);

	/* an etcd url without an address opens nothing (the etcd back-end
	 * itself is store_test.c's, run by tests/api/store_etcd.sh) */
	CHECK(store_open("etcd:", err, sizeof(err)) == NULL);

	errno = 0;
	CHECK(store_open("bogus:/x", err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_CONTAINS(err, "bogus");

	CHECK(store_open("", err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(store_open("sqlite:", err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);

	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", test_tmpdir());
	CHECK(store_open(path, err, sizeof(err)) == NULL);
	CHECK(errno != 0);
	CHECK_CONTAINS(err, path);

	CHECK(store_open(path, NULL, 0) == NULL);	/* no message buffer: still fails cleanly */
	store_close(NULL);
}

TEST(store_open_refuses_foreign_files)
{
	char path[280], err[256];
	sqlite3 *db = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/other.db", test_tmpdir());
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(store_open(path, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, path);
	CHECK_CONTAINS(err, "not a weft store");

	snprintf(path, sizeof(path), "%s/garbage.db", test_tmpdir());
	f = fopen(path, "w");
	CHECK(f != NULL);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database ", f);
	fclose(f);
	CHECK(store_open(path, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, path);
}

/* ---- durability --------------------------------------------------------------- */

TEST(store_reopen_keeps_state_and_history)
{
	struct store *s = open_tmp(), *other = NULL;
	struct store_event_list ev;
	struct store_kv kv;
	char before[512], after_buf[512];
	int64_t rev, c;

	CHECK(s != NULL);
	for (int i = 0; i < 20; i++) {
		char key[32], value[32];

		snprintf(key, sizeof(key), "/r/%d", i % 7);
		snprintf(value, sizeof(value), "v%d", i);
		CHECK(put_str(s, key, value, NULL) == 0);
	}
	CHECK(store_delete(s, "/r/3", NULL) == 0);
	CHECK(store_compact(s, 10) == 0);
	range_keys(s, "/r/", before, sizeof(before));

	/* a second handle on the same file sees the same and can write */
	other = open_tmp();
	CHECK(other != NULL);
	CHECK_EQ(revision_of(other), 21);
	CHECK(put_str(other, "/r/x", "from the other handle", &rev) == 0);
	CHECK_EQ(rev, 22);
	store_close(other);
	CHECK_EQ(revision_of(s), 22);
	store_close(s);

	s = open_tmp();
	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), 22);
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, 10);
	range_keys(s, "/r/", after_buf, sizeof(after_buf));
	CHECK_STR(after_buf, "/r/0 /r/1 /r/2 /r/4 /r/5 /r/6 /r/x");
	CHECK(strncmp(before, after_buf, strlen(before)) == 0);
	CHECK(store_get(s, "/r/6", &kv, NULL) == 0);
	CHECK_STR(kv.value, "v13");
	CHECK_EQ(kv.version, 2);
	store_kv_free(&kv);
	CHECK(store_events(s, "/r/", 10, 0, &ev) == 0);
	CHECK_EQ(ev.n, 12);
	CHECK_EQ(ev.events[0].kv.mod_rev, 11);
	CHECK_EQ(ev.events[10].type, STORE_EVENT_DELETE);
	CHECK_STR(ev.events[10].prev.value, "v17");
	store_event_list_free(&ev);
	CHECK(put_str(s, "/r/y", "after reopen", &rev) == 0);
	CHECK_EQ(rev, 23);
	store_close(s);
}

/* ---- group commit ------------------------------------------------------- */

struct syncer {
	struct store *s;
	volatile bool *stop;
	long syncs;
	int err;
};

static void *syncer_run(void *arg)
{
	struct syncer *y = arg;

	while (!*y->stop && !y->err) {
		y->err = store_sync(y->s, store_commits(y->s));
		y->syncs++;
	}
	return NULL;
}

TEST(store_group_commit)
{
	char url[300];
	struct store *s = open_tmp(), *other;
	struct store_kv kv;
	volatile bool stop = false;
	struct syncer y[3];
	pthread_t th[3];
	int64_t rev;

	CHECK(s != NULL);
	/* off: every commit is durable at once; nothing to wait for */
	CHECK_EQ(store_commits(s), 0);
	CHECK_EQ(store_sync(s, 5), 0);
	CHECK_EQ(put_str(s, "/g/a", "1", &rev), 0);
	CHECK_EQ(store_commits(s), 0);

	CHECK_EQ(store_defer_sync(s), 0);
	CHECK_EQ(store_defer_sync(s), 0);	/* twice is once */
	CHECK_EQ(put_str(s, "/g/a", "2", &rev), 0);
	CHECK_EQ(put_str(s, "/g/b", "3", &rev), 0);
	CHECK_EQ(store_commits(s), 2);
	/* a commit is visible at once, to another handle too ... */
	other = store_open(db_url(url, sizeof(url)), NULL, 0);
	CHECK(other != NULL);
	CHECK_EQ(store_get(other, "/g/b", &kv, NULL), 0);
	CHECK_STR(kv.value, "3");
	store_kv_free(&kv);
	/* ... and durable once a sync covers it */
	CHECK_EQ(store_sync(s, 2), 0);
	CHECK_EQ(store_sync(s, 1), 0);
	/* a failed compare commits nothing but still counts: a sync too many
	 * is harmless, one too few would not be */
	{
		struct store_cmp c = { "/g/a", STORE_CMP_MOD_REV, STORE_CMP_EQ, 1 };
		struct store_op op = { STORE_OP_PUT, "/g/c", "x", 1 };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;

		CHECK_EQ(store_txn(s, &t, &res), 0);
		CHECK(!res.succeeded);
		CHECK_EQ(store_commits(s), 3);
	}

	/* threads that sync while one thread commits: each returns 0, none
	 * hangs, and every commit is covered when the writer's own sync is */
	for (int i = 0; i < 3; i++) {
		y[i] = (struct syncer){ .s = s, .stop = &stop };
		CHECK_EQ(pthread_create(&th[i], NULL, syncer_run, &y[i]), 0);
	}
	for (int i = 0; i < 200; i++) {
		char value[16];

		snprintf(value, sizeof(value), "%d", i);
		CHECK_EQ(put_str(s, "/g/n", value, &rev), 0);
		CHECK_EQ(store_sync(s, store_commits(s)), 0);
	}
	stop = true;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(pthread_join(th[i], NULL), 0);
		CHECK_EQ(y[i].err, 0);
		CHECK(y[i].syncs > 0);
	}
	CHECK_EQ(store_commits(s), 203);
	store_close(s);	/* flushes what is left */

	CHECK_EQ(store_get(other, "/g/n", &kv, NULL), 0);
	CHECK_STR(kv.value, "199");
	store_kv_free(&kv);
	store_close(other);
}

/* ---- batches ------------------------------------------------------------- */

TEST(store_batch)
{
	char url[300];
	struct store *s = open_tmp(), *other = NULL;
	struct store_event_list ev;
	struct store_kv kv;
	int64_t rev;

	CHECK(s != NULL);
	CHECK_EQ(store_defer_sync(s), 0);
	CHECK_EQ(put_str(s, "/b/a", "1", &rev), 0);
	CHECK_EQ(rev, 1);
	CHECK_EQ(store_commits(s), 1);
	other = store_open(db_url(url, sizeof(url)), NULL, 0);
	CHECK(other != NULL);
	CHECK_EQ(store_batch_end(s, true), -EINVAL);	/* none open */

	/* each write its own revision; the handle reads them, no other does */
	CHECK_EQ(store_batch_begin(s), 0);
	CHECK(store_in_batch(s));
	CHECK_EQ(store_batch_begin(s), -EINVAL);	/* no batch in a batch */
	CHECK_EQ(put_str(s, "/b/a", "2", &rev), 0);
	CHECK_EQ(rev, 2);
	{	/* a failed compare writes nothing, and spoils nothing else */
		struct store_cmp c = { "/b/a", STORE_CMP_MOD_REV, STORE_CMP_EQ, 1 };
		struct store_op op = { STORE_OP_PUT, "/b/z", "x", 1 };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;

		CHECK_EQ(store_txn(s, &t, &res), 0);
		CHECK(!res.succeeded);
		CHECK_EQ(res.revision, 2);
	}
	CHECK_EQ(put_str(s, "/b/b", "3", &rev), 0);
	CHECK_EQ(rev, 3);
	CHECK_EQ(store_get(s, "/b/b", &kv, NULL), 0);
	CHECK_STR(kv.value, "3");
	store_kv_free(&kv);
	CHECK_EQ(store_events(s, "/b/", 1, 0, &ev), 0);
	CHECK_EQ(ev.n, 2);
	store_event_list_free(&ev);
	CHECK_EQ(store_get(other, "/b/b", &kv, NULL), -ENOENT);
	CHECK_EQ(revision_of(other), 1);
	CHECK_EQ(store_commits(s), 1);		/* counted at the end */
	CHECK_EQ(store_batch_end(s, true), 0);
	CHECK(!store_in_batch(s));
	CHECK_EQ(store_commits(s), 2);
	CHECK_EQ(store_sync(s, store_commits(s)), 0);
	CHECK_EQ(revision_of(other), 3);
	CHECK_EQ(store_get(other, "/b/a", &kv, NULL), 0);
	CHECK_STR(kv.value, "2");
	store_kv_free(&kv);
	CHECK_EQ(store_get(other, "/b/z", &kv, NULL), -ENOENT);
	CHECK_EQ(store_events(other, "/b/", 1, 0, &ev), 0);
	CHECK_EQ(ev.n, 2);
	CHECK_EQ(ev.events[0].kv.mod_rev, 2);
	CHECK_EQ(ev.events[1].kv.mod_rev, 3);
	store_event_list_free(&ev);

	/* ended without a commit: nothing of it stays, its revisions come again */
	CHECK_EQ(store_batch_begin(s), 0);
	CHECK_EQ(put_str(s, "/b/c", "4", &rev), 0);
	CHECK_EQ(rev, 4);
	CHECK_EQ(store_batch_end(s, false), 0);
	CHECK_EQ(store_commits(s), 2);
	CHECK_EQ(store_get(s, "/b/c", &kv, NULL), -ENOENT);
	CHECK_EQ(revision_of(s), 3);
	CHECK_EQ(put_str(s, "/b/d", "5", &rev), 0);
	CHECK_EQ(rev, 4);
	store_close(other);
	store_close(s);

	/* what a batch committed is there after a reopen */
	s = open_tmp();
	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), 4);
	CHECK_EQ(store_get(s, "/b/b", &kv, NULL), 0);
	CHECK_STR(kv.value, "3");
	store_kv_free(&kv);
	store_close(s);
}
