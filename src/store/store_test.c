/*
 * store_test.c — the store's unit tests, run against the SQLite back-end.
 *
 * Plain cases first (open, put/get, range, txn, events, compaction,
 * reopen), then a randomized cross-check against a naive in-memory model
 * (store_model_* below: arrays and linear scans, obviously right), then the
 * multi-process cases: racing compare-and-swap counters, racing slot claims,
 * and a writer killed with SIGKILL at a random moment.  TEST_SEED=<n>
 * replays a failed randomized run.
 */
#include "store/store.h"
#include "test.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)	/* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rng() % n);
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

static int put_str(struct store *s, const char *key, const char *value, int64_t *rev)
{
	return store_put(s, key, value, strlen(value), rev);
}

static int64_t revision_of(struct store *s)
{
	int64_t rev = -1;

	if (store_revision(s, &rev) < 0)
		return -1;
	return rev;
}

/* Keys of a range, joined by spaces. */
static const char *range_keys(struct store *s, const char *prefix, char *buf, size_t len)
{
	struct store_kv_list l;
	size_t used = 0;

	buf[0] = 0;
	if (store_range(s, prefix, NULL, 0, &l) < 0) {
		snprintf(buf, len, "(error)");
		return buf;
	}
	for (size_t i = 0; i < l.n; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", l.kvs[i].key);
	store_kv_list_free(&l);
	return buf;
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

	errno = 0;
	CHECK(store_open("etcd:http://127.0.0.1:2379", err, sizeof(err)) == NULL);
	CHECK_EQ(errno, ENOTSUP);
	CHECK_CONTAINS(err, "etcd back-end not built yet");

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

/* ---- single keys --------------------------------------------------------- */

TEST(store_put_get_delete_revisions)
{
	struct store *s = open_tmp();
	struct store_kv kv;
	int64_t rev = -1;

	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), 0);
	CHECK_EQ(store_get(s, "/a", &kv, &rev), -ENOENT);
	CHECK_EQ(rev, 0);
	CHECK(kv.key == NULL && kv.value == NULL);

	CHECK(put_str(s, "/a", "one", &rev) == 0);
	CHECK_EQ(rev, 1);
	CHECK(store_get(s, "/a", &kv, &rev) == 0);
	CHECK_STR(kv.key, "/a");
	CHECK_STR(kv.value, "one");
	CHECK_EQ(kv.value_len, 3);
	CHECK_EQ(kv.create_rev, 1);
	CHECK_EQ(kv.mod_rev, 1);
	CHECK_EQ(kv.version, 1);
	CHECK_EQ(rev, 1);
	store_kv_free(&kv);

	CHECK(put_str(s, "/a", "two", &rev) == 0);
	CHECK_EQ(rev, 2);
	CHECK(put_str(s, "/b", "bee", &rev) == 0);
	CHECK_EQ(rev, 3);
	CHECK(store_get(s, "/a", &kv, &rev) == 0);
	CHECK_STR(kv.value, "two");
	CHECK_EQ(kv.create_rev, 1);
	CHECK_EQ(kv.mod_rev, 2);
	CHECK_EQ(kv.version, 2);
	CHECK_EQ(rev, 3);
	store_kv_free(&kv);

	CHECK(store_delete(s, "/a", &rev) == 0);
	CHECK_EQ(rev, 4);
	CHECK_EQ(store_get(s, "/a", &kv, NULL), -ENOENT);
	/* deleting a missing key changes nothing, not even the revision */
	CHECK(store_delete(s, "/a", &rev) == 0);
	CHECK_EQ(rev, 4);
	CHECK(store_delete(s, "/never", &rev) == 0);
	CHECK_EQ(revision_of(s), 4);

	/* re-created: a new life, create_rev and version start again */
	CHECK(put_str(s, "/a", "three", &rev) == 0);
	CHECK_EQ(rev, 5);
	CHECK(store_get(s, "/a", &kv, NULL) == 0);
	CHECK_EQ(kv.create_rev, 5);
	CHECK_EQ(kv.mod_rev, 5);
	CHECK_EQ(kv.version, 1);
	store_kv_free(&kv);

	/* putting the same value again is still a change */
	CHECK(put_str(s, "/a", "three", &rev) == 0);
	CHECK_EQ(rev, 6);
	store_close(s);
}

TEST(store_values_empty_binary_large)
{
	struct store *s = open_tmp();
	static const char bin[] = { 'a', 0, 'b', (char)0xff, 0 };
	size_t big_len = 8u << 20;
	struct store_kv kv;
	char *big = NULL;

	CHECK(s != NULL);
	CHECK(store_put(s, "/empty", "", 0, NULL) == 0);
	CHECK(store_put(s, "/null", NULL, 0, NULL) == 0);
	CHECK(store_get(s, "/empty", &kv, NULL) == 0);
	CHECK(kv.value != NULL);
	CHECK_EQ(kv.value_len, 0);
	CHECK_EQ(kv.value[0], 0);
	store_kv_free(&kv);
	CHECK(store_get(s, "/null", &kv, NULL) == 0);
	CHECK(kv.value != NULL && kv.value_len == 0);
	store_kv_free(&kv);

	CHECK(store_put(s, "/bin", bin, sizeof(bin), NULL) == 0);
	CHECK(store_get(s, "/bin", &kv, NULL) == 0);
	CHECK_EQ(kv.value_len, sizeof(bin));
	CHECK(memcmp(kv.value, bin, sizeof(bin)) == 0);
	CHECK_EQ(kv.value[kv.value_len], 0);
	store_kv_free(&kv);

	big = malloc(big_len);
	CHECK(big != NULL);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)(i * 7 + (i >> 13));
	if (store_put(s, "/big", big, big_len, NULL) != 0 || store_get(s, "/big", &kv, NULL) != 0)
		test_fail(__FILE__, __LINE__, "8 MiB value put/get");
	else if (kv.value_len != big_len || memcmp(kv.value, big, big_len) || kv.value[big_len])
		test_fail(__FILE__, __LINE__, "8 MiB value round trip differs");
	store_kv_free(&kv);
	free(big);
	store_close(s);
}

TEST(store_rejects_bad_arguments)
{
	struct store *s = open_tmp();
	char long_key[4098];
	struct store_kv kv;
	struct store_kv_list l;
	struct store_event_list ev;
	struct store_txn_result res;
	size_t n;
	int64_t rev;

	CHECK(s != NULL);
	CHECK_EQ(store_put(s, NULL, "v", 1, NULL), -EINVAL);
	CHECK_EQ(store_put(s, "", "v", 1, NULL), -EINVAL);
	CHECK_EQ(store_put(s, "/k", NULL, 1, NULL), -EINVAL);
	CHECK_EQ(store_put(s, "/k", "v", (8u << 20) + 1, NULL), -E2BIG);	/* not read */
	CHECK_EQ(store_get(s, "", &kv, NULL), -EINVAL);
	CHECK_EQ(store_get(s, "/k", NULL, NULL), -EINVAL);
	CHECK_EQ(store_get(NULL, "/k", &kv, NULL), -EINVAL);
	CHECK_EQ(store_delete(s, "", NULL), -EINVAL);

	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[0] = '/';
	long_key[4097] = 0;				/* 4097 bytes */
	CHECK_EQ(store_put(s, long_key, "v", 1, NULL), -E2BIG);
	CHECK_EQ(store_range(s, long_key, NULL, 0, &l), -E2BIG);
	long_key[4096] = 0;				/* 4096 bytes: the most allowed */
	CHECK(store_put(s, long_key, "v", 1, NULL) == 0);
	CHECK(store_get(s, long_key, &kv, NULL) == 0);
	CHECK_EQ(strlen(kv.key), 4096);
	store_kv_free(&kv);

	CHECK_EQ(store_range(s, NULL, NULL, 0, &l), -EINVAL);
	CHECK_EQ(store_count(s, NULL, &n), -EINVAL);
	CHECK_EQ(store_events(s, "", -1, 0, &ev), -EINVAL);
	CHECK_EQ(store_compact(s, 99), -EINVAL);	/* beyond the revision */
	CHECK_EQ(store_compact(s, -1), -EINVAL);

	{
		struct store_op bad_type = { .type = (enum store_op_type)7, .key = "/k" };
		struct store_op wipe = { .type = STORE_OP_DELETE_PREFIX, .key = "" };
		struct store_op ok = { .type = STORE_OP_PUT, .key = "/k", .value = "v", .value_len = 1 };
		struct store_cmp bad_cmp = { "/k", (enum store_cmp_target)9, STORE_CMP_EQ, 0 };
		struct store_txn t1 = { .success = &bad_type, .nsuccess = 1 };
		struct store_txn t2 = { .success = &wipe, .nsuccess = 1 };
		/* a bad failure branch fails the call although the success one
		 * would run */
		struct store_txn t3 = { .success = &ok, .nsuccess = 1, .failure = &wipe, .nfailure = 1 };
		struct store_txn t4 = { .cmps = &bad_cmp, .ncmps = 1, .success = &ok, .nsuccess = 1 };
		struct store_txn t5 = { .success = NULL, .nsuccess = 1 };

		CHECK_EQ(store_txn(s, &t1, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &t2, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &t3, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &t4, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &t5, &res), -EINVAL);
		CHECK_EQ(store_txn(s, NULL, &res), -EINVAL);
	}
	CHECK(store_revision(s, &rev) == 0);
	CHECK_EQ(rev, 1);		/* only the 4096-byte key went in */
	store_close(s);
}

/* ---- ranges ------------------------------------------------------------- */

TEST(store_range_prefix_does_not_leak)
{
	static const char *const keys[] = {
		"/a/b", "/a/b/", "/a/b/c", "/a/bc", "/a/a", "/a/c", "/a/b0", "/a/b.",
		"/a/b\xff", "/a/b\xff\xff", "/a/c\xff", "x\xff", "x\xff\xff", "y", "\xff",
		"\xff\xff\x61",	/* \x61 is 'a' */
	};
	struct store *s = open_tmp();
	struct store_kv_list l;
	char buf[512];
	size_t n;

	CHECK(s != NULL);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		CHECK(put_str(s, keys[i], keys[i], NULL) == 0);

	CHECK_STR(range_keys(s, "/a/b", buf, sizeof(buf)),
		  "/a/b /a/b. /a/b/ /a/b/c /a/b0 /a/bc /a/b\xff /a/b\xff\xff");
	CHECK_STR(range_keys(s, "/a/b/", buf, sizeof(buf)), "/a/b/ /a/b/c");
	CHECK_STR(range_keys(s, "/a/bc", buf, sizeof(buf)), "/a/bc");
	CHECK_STR(range_keys(s, "/a/b\xff", buf, sizeof(buf)), "/a/b\xff /a/b\xff\xff");
	CHECK_STR(range_keys(s, "/a/c", buf, sizeof(buf)), "/a/c /a/c\xff");
	CHECK_STR(range_keys(s, "/a/d", buf, sizeof(buf)), "");
	CHECK_STR(range_keys(s, "x\xff", buf, sizeof(buf)), "x\xff x\xff\xff");
	CHECK_STR(range_keys(s, "\xff", buf, sizeof(buf)), "\xff \xff\xff\x61");	/* no end */
	CHECK_STR(range_keys(s, "/a/b/c/d", buf, sizeof(buf)), "");

	CHECK(store_count(s, "/a/b", &n) == 0);
	CHECK_EQ(n, 8);
	CHECK(store_count(s, "/a/b/", &n) == 0);
	CHECK_EQ(n, 2);
	CHECK(store_count(s, "\xff", &n) == 0);
	CHECK_EQ(n, 2);
	CHECK(store_count(s, "", &n) == 0);
	CHECK_EQ(n, sizeof(keys) / sizeof(keys[0]));

	CHECK(store_range(s, "", NULL, 0, &l) == 0);
	CHECK_EQ(l.n, sizeof(keys) / sizeof(keys[0]));
	CHECK_EQ(l.revision, (int64_t)(sizeof(keys) / sizeof(keys[0])));
	CHECK(!l.more);
	for (size_t i = 1; i < l.n; i++)
		CHECK(strcmp(l.kvs[i - 1].key, l.kvs[i].key) < 0);	/* byte order */
	CHECK_STR(l.kvs[0].value, l.kvs[0].key);
	store_kv_list_free(&l);
	store_close(s);
}

TEST(store_range_paging)
{
	struct store *s = open_tmp();
	struct store_kv_list l;
	char key[32], after[32] = "";
	size_t seen = 0, pages = 0;

	CHECK(s != NULL);
	for (int i = 0; i < 25; i++) {
		snprintf(key, sizeof(key), "/p/%02d", i);
		CHECK(put_str(s, key, key, NULL) == 0);
	}
	CHECK(put_str(s, "/o", "before", NULL) == 0);
	CHECK(put_str(s, "/q", "after", NULL) == 0);

	for (;;) {
		CHECK(store_range(s, "/p/", after[0] ? after : NULL, 7, &l) == 0);
		pages++;
		CHECK(l.n <= 7);
		for (size_t i = 0; i < l.n; i++) {
			snprintf(key, sizeof(key), "/p/%02zu", seen + i);
			CHECK_STR(l.kvs[i].key, key);
		}
		seen += l.n;
		CHECK_EQ(l.more, seen < 25);
		if (l.n)
			snprintf(after, sizeof(after), "%s", l.kvs[l.n - 1].key);
		bool more = l.more;
		store_kv_list_free(&l);
		if (!more)
			break;
	}
	CHECK_EQ(seen, 25);
	CHECK_EQ(pages, 4);

	CHECK(store_range(s, "/p/", NULL, 25, &l) == 0);	/* exactly all: no more */
	CHECK_EQ(l.n, 25);
	CHECK(!l.more);
	store_kv_list_free(&l);
	CHECK(store_range(s, "/p/", "/a", 3, &l) == 0);		/* before the prefix */
	CHECK_EQ(l.n, 3);
	CHECK_STR(l.kvs[0].key, "/p/00");
	store_kv_list_free(&l);
	CHECK(store_range(s, "/p/", "/p/12x", 0, &l) == 0);	/* between keys */
	CHECK_EQ(l.n, 12);
	CHECK_STR(l.kvs[0].key, "/p/13");
	store_kv_list_free(&l);
	CHECK(store_range(s, "/p/", "/z", 0, &l) == 0);		/* after the prefix */
	CHECK_EQ(l.n, 0);
	CHECK(!l.more);
	store_kv_list_free(&l);
	store_close(s);
}

/* ---- transactions ---------------------------------------------------------- */

/* One cmp on "/k", success puts "/s", failure puts "/f": which ran? */
static int cmp_outcome(struct store *s, enum store_cmp_target target, enum store_cmp_op op,
		       int64_t value)
{
	struct store_cmp c = { "/k", target, op, value };
	struct store_op yes = { STORE_OP_PUT, "/s", "y", 1 };
	struct store_op no = { STORE_OP_PUT, "/f", "n", 1 };
	struct store_txn t = { &c, 1, &yes, 1, &no, 1 };
	struct store_txn_result res;
	int64_t before = revision_of(s);
	int r = store_txn(s, &t, &res);

	if (r < 0)
		return r;
	if (res.revision != before + 1)
		return -1000;
	return res.succeeded;
}

TEST(store_txn_compare_targets_and_ops)
{
	struct store *s = open_tmp();
	struct store_kv kv;
	int64_t rev;

	CHECK(s != NULL);
	/* missing key compares as 0 on every target */
	CHECK_EQ(cmp_outcome(s, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0), 1);
	CHECK_EQ(cmp_outcome(s, STORE_CMP_MOD_REV, STORE_CMP_EQ, 0), 1);
	CHECK_EQ(cmp_outcome(s, STORE_CMP_VERSION, STORE_CMP_EQ, 0), 1);
	CHECK_EQ(cmp_outcome(s, STORE_CMP_VERSION, STORE_CMP_GT, 0), 0);
	CHECK_EQ(cmp_outcome(s, STORE_CMP_VERSION, STORE_CMP_LT, 1), 1);
	CHECK_EQ(cmp_outcome(s, STORE_CMP_MOD_REV, STORE_CMP_NE, 0), 0);

	CHECK(put_str(s, "/k", "a", &rev) == 0);	/* create_rev = rev */
	int64_t created = rev;
	CHECK(put_str(s, "/k", "b", &rev) == 0);	/* mod_rev = rev, version 2 */
	int64_t modified = rev;

	static const struct {
		enum store_cmp_target target;
		enum store_cmp_op op;
		int64_t delta;	/* added to the key's actual value */
		int holds;
	} cases[] = {
		{ STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0, 1 }, { STORE_CMP_CREATE_REV, STORE_CMP_EQ, 1, 0 },
		{ STORE_CMP_CREATE_REV, STORE_CMP_NE, 0, 0 }, { STORE_CMP_CREATE_REV, STORE_CMP_NE, -1, 1 },
		{ STORE_CMP_CREATE_REV, STORE_CMP_LT, 1, 1 }, { STORE_CMP_CREATE_REV, STORE_CMP_LT, 0, 0 },
		{ STORE_CMP_CREATE_REV, STORE_CMP_GT, -1, 1 }, { STORE_CMP_CREATE_REV, STORE_CMP_GT, 0, 0 },
		{ STORE_CMP_MOD_REV, STORE_CMP_EQ, 0, 1 }, { STORE_CMP_MOD_REV, STORE_CMP_EQ, -1, 0 },
		{ STORE_CMP_MOD_REV, STORE_CMP_NE, 0, 0 }, { STORE_CMP_MOD_REV, STORE_CMP_NE, 5, 1 },
		{ STORE_CMP_MOD_REV, STORE_CMP_LT, 1, 1 }, { STORE_CMP_MOD_REV, STORE_CMP_LT, 0, 0 },
		{ STORE_CMP_MOD_REV, STORE_CMP_GT, -1, 1 }, { STORE_CMP_MOD_REV, STORE_CMP_GT, 0, 0 },
		{ STORE_CMP_VERSION, STORE_CMP_EQ, 0, 1 }, { STORE_CMP_VERSION, STORE_CMP_EQ, 1, 0 },
		{ STORE_CMP_VERSION, STORE_CMP_NE, 0, 0 }, { STORE_CMP_VERSION, STORE_CMP_NE, 1, 1 },
		{ STORE_CMP_VERSION, STORE_CMP_LT, 1, 1 }, { STORE_CMP_VERSION, STORE_CMP_LT, 0, 0 },
		{ STORE_CMP_VERSION, STORE_CMP_GT, -1, 1 }, { STORE_CMP_VERSION, STORE_CMP_GT, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t actual = cases[i].target == STORE_CMP_CREATE_REV ? created
			       : cases[i].target == STORE_CMP_MOD_REV	 ? modified
									 : 2;
		int got = cmp_outcome(s, cases[i].target, cases[i].op, actual + cases[i].delta);

		if (got != cases[i].holds) {
			test_fail(__FILE__, __LINE__, "case %zu: got %d, want %d", i, got,
				  cases[i].holds);
			return;
		}
	}
	/* "/s" and "/f" were written by the branches that ran */
	CHECK(store_get(s, "/s", &kv, NULL) == 0);
	store_kv_free(&kv);
	CHECK(store_get(s, "/f", &kv, NULL) == 0);
	store_kv_free(&kv);
	store_close(s);
}

TEST(store_txn_branches_and_revision_rules)
{
	struct store *s = open_tmp();
	struct store_txn_result res;
	struct store_kv kv;
	int64_t rev;

	CHECK(s != NULL);
	CHECK(put_str(s, "/x", "1", &rev) == 0);
	CHECK_EQ(rev, 1);

	{	/* empty txn: succeeds, no revision */
		struct store_txn t = { 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, 1);
	}
	{	/* failed compare without failure ops: nothing, no revision */
		struct store_cmp c = { "/x", STORE_CMP_VERSION, STORE_CMP_EQ, 7 };
		struct store_op op = { STORE_OP_PUT, "/x", "2", 1 };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(!res.succeeded);
		CHECK_EQ(res.revision, 1);
		CHECK(store_get(s, "/x", &kv, NULL) == 0);
		CHECK_STR(kv.value, "1");
		store_kv_free(&kv);
	}
	{	/* failure branch writes: that is a change, one revision */
		struct store_cmp c = { "/x", STORE_CMP_VERSION, STORE_CMP_EQ, 7 };
		struct store_op yes = { STORE_OP_PUT, "/x", "2", 1 };
		struct store_op no[] = {
			{ STORE_OP_PUT, "/why", "version was not 7", 17 },
			{ STORE_OP_PUT, "/x", "3", 1 },
		};
		struct store_txn t = { &c, 1, &yes, 1, no, 2 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(!res.succeeded);
		CHECK_EQ(res.revision, 2);
		CHECK(store_get(s, "/x", &kv, NULL) == 0);
		CHECK_STR(kv.value, "3");
		CHECK_EQ(kv.mod_rev, 2);
		store_kv_free(&kv);
	}
	{	/* only no-op deletes: no revision */
		struct store_op ops[] = {
			{ STORE_OP_DELETE, "/missing", NULL, 0 },
			{ STORE_OP_DELETE_PREFIX, "/nothing/", NULL, 0 },
		};
		struct store_txn t = { NULL, 0, ops, 2, NULL, 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, 2);
	}
	{	/* every compare must hold */
		struct store_cmp c[] = {
			{ "/x", STORE_CMP_MOD_REV, STORE_CMP_EQ, 2 },
			{ "/nope", STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 },
			{ "/why", STORE_CMP_VERSION, STORE_CMP_GT, 1 },	/* is 1 */
		};
		struct store_op op = { STORE_OP_PUT, "/x", "4", 1 };
		struct store_txn t = { c, 3, &op, 1, NULL, 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(!res.succeeded);
		t.ncmps = 2;
		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, 3);
	}
	store_close(s);
}

TEST(store_txn_multi_op_is_one_revision)
{
	struct store *s = open_tmp();
	struct store_txn_result res;
	struct store_kv_list l;
	struct store_event_list ev;
	struct store_kv kv;
	char buf[256];

	CHECK(s != NULL);
	CHECK(put_str(s, "/c", "sea", NULL) == 0);
	CHECK(put_str(s, "/d/1", "one", NULL) == 0);
	CHECK(put_str(s, "/d/2", "two", NULL) == 0);
	CHECK(put_str(s, "/d2", "not under /d/", NULL) == 0);
	CHECK_EQ(revision_of(s), 4);

	struct store_op ops[] = {
		{ STORE_OP_PUT, "/a", "A", 1 },
		{ STORE_OP_PUT, "/b", "B", 1 },
		{ STORE_OP_DELETE, "/c", NULL, 0 },
		{ STORE_OP_DELETE_PREFIX, "/d/", NULL, 0 },
		{ STORE_OP_DELETE, "/missing", NULL, 0 },
		{ STORE_OP_PUT, "/a", "A2", 2 },	/* ops apply in order */
		{ STORE_OP_PUT, "/e", "E", 1 },
		{ STORE_OP_DELETE, "/e", NULL, 0 },
	};
	struct store_txn t = { NULL, 0, ops, sizeof(ops) / sizeof(ops[0]), NULL, 0 };

	CHECK(store_txn(s, &t, &res) == 0);
	CHECK(res.succeeded);
	CHECK_EQ(res.revision, 5);
	CHECK_STR(range_keys(s, "/", buf, sizeof(buf)), "/a /b /d2");
	CHECK(store_range(s, "/", NULL, 0, &l) == 0);
	CHECK_EQ(l.kvs[0].mod_rev, 5);
	CHECK_EQ(l.kvs[0].version, 2);
	CHECK_EQ(l.kvs[0].create_rev, 5);
	CHECK_STR(l.kvs[0].value, "A2");
	CHECK_EQ(l.kvs[1].mod_rev, 5);
	CHECK_EQ(l.kvs[2].mod_rev, 4);
	store_kv_list_free(&l);
	CHECK_EQ(store_get(s, "/c", &kv, NULL), -ENOENT);

	/* the events of revision 5 in op order, deletes carrying prev */
	CHECK(store_events(s, "", 4, 0, &ev) == 0);
	CHECK_EQ(ev.n, 8);
	static const struct {
		enum store_event_type type;
		const char *key, *value, *prev;
	} want[] = {
		{ STORE_EVENT_PUT, "/a", "A", NULL },	    { STORE_EVENT_PUT, "/b", "B", NULL },
		{ STORE_EVENT_DELETE, "/c", "", "sea" },    { STORE_EVENT_DELETE, "/d/1", "", "one" },
		{ STORE_EVENT_DELETE, "/d/2", "", "two" },  { STORE_EVENT_PUT, "/a", "A2", "A" },
		{ STORE_EVENT_PUT, "/e", "E", NULL },	    { STORE_EVENT_DELETE, "/e", "", "E" },
	};
	for (size_t i = 0; i < ev.n; i++) {
		const struct store_event *e = &ev.events[i];

		CHECK_EQ(e->type, want[i].type);
		CHECK_STR(e->kv.key, want[i].key);
		CHECK_STR(e->kv.value, want[i].value);
		CHECK_EQ(e->kv.mod_rev, 5);
		if (want[i].prev) {
			CHECK_STR(e->prev.key, want[i].key);
			CHECK_STR(e->prev.value, want[i].prev);
		} else {
			CHECK(e->prev.key == NULL && e->prev.value == NULL);
		}
	}
	store_event_list_free(&ev);
	store_close(s);
}

/* ---- events and compaction --------------------------------------------------- */

TEST(store_events_order_types_prev_and_paging)
{
	struct store *s = open_tmp();
	struct store_event_list ev;
	int64_t after;
	size_t total;

	CHECK(s != NULL);
	CHECK(put_str(s, "/w/a", "1", NULL) == 0);		/* rev 1 */
	CHECK(put_str(s, "/other", "x", NULL) == 0);		/* rev 2 */
	CHECK(put_str(s, "/w/a", "2", NULL) == 0);		/* rev 3 */
	CHECK(put_str(s, "/w/b", "3", NULL) == 0);		/* rev 4 */
	CHECK(store_delete(s, "/w/a", NULL) == 0);		/* rev 5 */

	CHECK(store_events(s, "/w/", 0, 0, &ev) == 0);
	CHECK_EQ(ev.n, 4);
	CHECK_EQ(ev.revision, 5);
	CHECK(!ev.more);
	CHECK_EQ(ev.events[0].type, STORE_EVENT_PUT);
	CHECK_STR(ev.events[0].kv.key, "/w/a");
	CHECK_STR(ev.events[0].kv.value, "1");
	CHECK_EQ(ev.events[0].kv.create_rev, 1);
	CHECK_EQ(ev.events[0].kv.mod_rev, 1);
	CHECK_EQ(ev.events[0].kv.version, 1);
	CHECK(ev.events[0].prev.key == NULL);

	CHECK_EQ(ev.events[1].type, STORE_EVENT_PUT);
	CHECK_STR(ev.events[1].kv.value, "2");
	CHECK_EQ(ev.events[1].kv.create_rev, 1);
	CHECK_EQ(ev.events[1].kv.mod_rev, 3);
	CHECK_EQ(ev.events[1].kv.version, 2);
	CHECK_STR(ev.events[1].prev.key, "/w/a");
	CHECK_STR(ev.events[1].prev.value, "1");
	CHECK_EQ(ev.events[1].prev.mod_rev, 1);
	CHECK_EQ(ev.events[1].prev.version, 1);

	CHECK_STR(ev.events[2].kv.key, "/w/b");
	CHECK_EQ(ev.events[2].kv.mod_rev, 4);

	CHECK_EQ(ev.events[3].type, STORE_EVENT_DELETE);
	CHECK_STR(ev.events[3].kv.key, "/w/a");
	CHECK(ev.events[3].kv.value != NULL);
	CHECK_EQ(ev.events[3].kv.value_len, 0);
	CHECK_EQ(ev.events[3].kv.mod_rev, 5);
	CHECK_EQ(ev.events[3].kv.create_rev, 0);
	CHECK_EQ(ev.events[3].kv.version, 0);
	CHECK_STR(ev.events[3].prev.value, "2");
	CHECK_EQ(ev.events[3].prev.create_rev, 1);
	CHECK_EQ(ev.events[3].prev.mod_rev, 3);
	CHECK_EQ(ev.events[3].prev.version, 2);
	store_event_list_free(&ev);

	CHECK(store_events(s, "", 0, 0, &ev) == 0);	/* every key */
	CHECK_EQ(ev.n, 5);
	CHECK_STR(ev.events[1].kv.key, "/other");
	store_event_list_free(&ev);
	CHECK(store_events(s, "/w/", 5, 0, &ev) == 0);	/* nothing newer */
	CHECK_EQ(ev.n, 0);
	CHECK(!ev.more);
	store_event_list_free(&ev);
	CHECK(store_events(s, "/w/", 99, 0, &ev) == 0);	/* future: empty, not an error */
	CHECK_EQ(ev.n, 0);
	store_event_list_free(&ev);

	/* paging with limit 1: ask again after the last event */
	after = 0;
	total = 0;
	for (;;) {
		CHECK(store_events(s, "/w/", after, 1, &ev) == 0);
		CHECK(ev.n <= 1);
		total += ev.n;
		if (ev.n)
			after = ev.events[ev.n - 1].kv.mod_rev;
		bool more = ev.more;
		store_event_list_free(&ev);
		if (!more)
			break;
	}
	CHECK_EQ(total, 4);
	store_close(s);
}

TEST(store_events_limit_keeps_transactions_whole)
{
	struct store *s = open_tmp();
	struct store_event_list ev;
	struct store_txn_result res;
	struct store_op three[] = {
		{ STORE_OP_PUT, "/t/1", "a", 1 },
		{ STORE_OP_PUT, "/t/2", "b", 1 },
		{ STORE_OP_PUT, "/t/3", "c", 1 },
	};
	struct store_txn t = { NULL, 0, three, 3, NULL, 0 };

	CHECK(s != NULL);
	CHECK(put_str(s, "/t/0", "z", NULL) == 0);	/* rev 1 */
	CHECK(store_txn(s, &t, &res) == 0);		/* rev 2: three events */
	CHECK(put_str(s, "/t/4", "d", NULL) == 0);	/* rev 3 */

	/* a limit of 2 would cut revision 2; the list ends after it instead */
	CHECK(store_events(s, "/t/", 0, 2, &ev) == 0);
	CHECK_EQ(ev.n, 4);
	CHECK(ev.more);
	CHECK_EQ(ev.events[3].kv.mod_rev, 2);
	store_event_list_free(&ev);
	CHECK(store_events(s, "/t/", 2, 2, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK(!ev.more);
	store_event_list_free(&ev);
	CHECK(store_events(s, "/t/", 0, 1, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK(ev.more);
	store_event_list_free(&ev);
	store_close(s);
}

TEST(store_compaction)
{
	struct store *s = open_tmp();
	struct store_event_list ev;
	struct store_kv kv;
	int64_t c;

	CHECK(s != NULL);
	for (int i = 0; i < 6; i++)
		CHECK(put_str(s, i % 2 ? "/c/odd" : "/c/even", "v", NULL) == 0);
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, 0);
	CHECK(store_compact(s, 3) == 0);
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, 3);

	CHECK_EQ(store_events(s, "", 2, 0, &ev), -ESTORE_COMPACTED);
	CHECK_EQ(store_events(s, "/c/", 0, 0, &ev), -ESTORE_COMPACTED);
	CHECK(store_events(s, "", 3, 0, &ev) == 0);	/* == compaction is fine */
	CHECK_EQ(ev.n, 3);
	CHECK_EQ(ev.events[0].kv.mod_rev, 4);
	store_event_list_free(&ev);

	CHECK(store_compact(s, 2) == 0);		/* older: no-op */
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, 3);
	CHECK_EQ(store_compact(s, 7), -EINVAL);		/* future */
	CHECK(store_compact(s, 6) == 0);		/* everything */
	CHECK(store_events(s, "", 6, 0, &ev) == 0);
	CHECK_EQ(ev.n, 0);
	store_event_list_free(&ev);

	/* values stay; history continues */
	CHECK(store_get(s, "/c/odd", &kv, NULL) == 0);
	CHECK_EQ(kv.version, 3);
	CHECK_EQ(kv.mod_rev, 6);
	store_kv_free(&kv);
	CHECK(put_str(s, "/c/odd", "w", NULL) == 0);
	CHECK(store_events(s, "", 6, 0, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK_STR(ev.events[0].prev.value, "v");
	store_event_list_free(&ev);
	store_close(s);
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

/* ---- randomized cross-check against a naive model ---------------------------- */

#define MODEL_KEYS	10
#define MODEL_VALUE	24

static const char *model_keys[MODEL_KEYS] = {
	"/m/c/d", "/m", "/m/a", "/n/a", "/m/a/x", "/m/ab", "/m/a/y", "/m/b", "/m/b/x", "/m/c",
};
static const char *const model_prefixes[] = {
	"/m", "/m/", "/m/a", "/m/a/", "/m/ab", "/m/b", "/m/c/", "/n", "/", "/m/a/x", "/z",
};

struct model_kv {
	bool exists;
	char value[MODEL_VALUE];
	size_t len;
	int64_t create_rev, mod_rev, version;
};

struct model_event {
	enum store_event_type type;
	int key;
	struct model_kv kv, prev;	/* prev.exists: there was one */
};

struct model {
	struct model_kv kv[MODEL_KEYS];
	int64_t revision, compacted;
	struct model_event *events;
	size_t nevents, cap;
};

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool has_prefix(const char *key, const char *prefix)
{
	return !strncmp(key, prefix, strlen(prefix));
}

static int64_t model_target(const struct model_kv *k, enum store_cmp_target t)
{
	if (!k->exists)
		return 0;
	return t == STORE_CMP_CREATE_REV ? k->create_rev : t == STORE_CMP_MOD_REV ? k->mod_rev
										 : k->version;
}

static int model_key_index(const char *key)
{
	for (int i = 0; i < MODEL_KEYS; i++)
		if (!strcmp(model_keys[i], key))
			return i;
	return -1;
}

static void model_event_add(struct model *m, enum store_event_type type, int key,
			    const struct model_kv *kv, const struct model_kv *prev)
{
	if (m->nevents == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 1024;
		m->events = realloc(m->events, m->cap * sizeof(*m->events));
		if (!m->events)
			abort();
	}
	m->events[m->nevents++] = (struct model_event){ type, key, *kv, *prev };
}

static void model_delete(struct model *m, int i, int64_t rev, int *changes)
{
	struct model_kv gone = { .exists = true, .mod_rev = rev };
	struct model_kv prev = m->kv[i];

	model_event_add(m, STORE_EVENT_DELETE, i, &gone, &prev);
	memset(&m->kv[i], 0, sizeof(m->kv[i]));
	(*changes)++;
}

/* The model's store_txn: returns whether the compares held. */
static bool model_txn(struct model *m, const struct store_txn *t)
{
	int64_t rev = m->revision + 1;
	const struct store_op *ops;
	bool holds = true;
	int changes = 0;
	size_t n;

	for (size_t i = 0; i < t->ncmps; i++) {
		const struct store_cmp *c = &t->cmps[i];
		int64_t v = model_target(&m->kv[model_key_index(c->key)], c->target);

		switch (c->op) {
		case STORE_CMP_EQ: holds = holds && v == c->value; break;
		case STORE_CMP_NE: holds = holds && v != c->value; break;
		case STORE_CMP_LT: holds = holds && v < c->value; break;
		case STORE_CMP_GT: holds = holds && v > c->value; break;
		}
	}
	ops = holds ? t->success : t->failure;
	n = holds ? t->nsuccess : t->nfailure;
	for (size_t i = 0; i < n; i++) {
		const struct store_op *op = &ops[i];

		if (op->type == STORE_OP_PUT) {
			int k = model_key_index(op->key);
			struct model_kv prev = m->kv[k], *kv = &m->kv[k];

			if (!kv->exists) {
				kv->exists = true;
				kv->create_rev = rev;
				kv->version = 0;
			}
			memcpy(kv->value, op->value, op->value_len);
			kv->len = op->value_len;
			kv->mod_rev = rev;
			kv->version++;
			model_event_add(m, STORE_EVENT_PUT, k, kv, &prev);
			changes++;
		} else if (op->type == STORE_OP_DELETE) {
			int k = model_key_index(op->key);

			if (m->kv[k].exists)
				model_delete(m, k, rev, &changes);
		} else {
			for (int k = 0; k < MODEL_KEYS; k++)	/* keys are sorted */
				if (m->kv[k].exists && has_prefix(model_keys[k], op->key))
					model_delete(m, k, rev, &changes);
		}
	}
	if (changes)
		m->revision = rev;
	return holds;
}

static bool kv_matches(const struct store_kv *got, const char *key, const struct model_kv *want)
{
	return got->key && !strcmp(got->key, key) && got->value &&
	       got->value_len == want->len && !memcmp(got->value, want->value, want->len) &&
	       got->value[got->value_len] == 0 && got->create_rev == want->create_rev &&
	       got->mod_rev == want->mod_rev && got->version == want->version;
}

/* Compare every key, one random range page, a count and the revision. */
static void model_check_state(struct store *s, const struct model *m, int step)
{
	const char *prefix = model_prefixes[pick(sizeof(model_prefixes) / sizeof(model_prefixes[0]))];
	const char *after = pick(3) ? NULL : model_keys[pick(MODEL_KEYS)];
	size_t limit = pick(5), want_n = 0, n;
	struct store_kv_list l;
	bool more = false;
	int64_t rev;

	for (int i = 0; i < MODEL_KEYS; i++) {
		struct store_kv kv;
		int r = store_get(s, model_keys[i], &kv, &rev);

		if (m->kv[i].exists ? r != 0 || !kv_matches(&kv, model_keys[i], &m->kv[i])
				    : r != -ENOENT) {
			test_fail(__FILE__, __LINE__, "step %d: get %s: r=%d exists=%d", step,
				  model_keys[i], r, m->kv[i].exists);
			store_kv_free(&kv);
			return;
		}
		store_kv_free(&kv);
		if (rev != m->revision) {
			test_fail(__FILE__, __LINE__, "step %d: revision %" PRId64 " != %" PRId64,
				  step, rev, m->revision);
			return;
		}
	}
	if (store_range(s, prefix, after, limit, &l) != 0) {
		test_fail(__FILE__, __LINE__, "step %d: range %s failed", step, prefix);
		return;
	}
	for (int i = 0; i < MODEL_KEYS; i++) {
		if (!m->kv[i].exists || !has_prefix(model_keys[i], prefix) ||
		    (after && strcmp(model_keys[i], after) <= 0))
			continue;
		if (limit && want_n == limit) {
			more = true;
			break;
		}
		if (want_n >= l.n || !kv_matches(&l.kvs[want_n], model_keys[i], &m->kv[i])) {
			test_fail(__FILE__, __LINE__, "step %d: range %s after %s limit %zu: item %zu",
				  step, prefix, after ? after : "-", limit, want_n);
			store_kv_list_free(&l);
			return;
		}
		want_n++;
	}
	if (l.n != want_n || l.more != more || l.revision != m->revision) {
		test_fail(__FILE__, __LINE__, "step %d: range %s: n %zu/%zu more %d/%d", step, prefix,
			  l.n, want_n, l.more, more);
		store_kv_list_free(&l);
		return;
	}
	store_kv_list_free(&l);

	want_n = 0;
	for (int i = 0; i < MODEL_KEYS; i++)
		want_n += m->kv[i].exists && has_prefix(model_keys[i], prefix);
	if (store_count(s, prefix, &n) != 0 || n != want_n)
		test_fail(__FILE__, __LINE__, "step %d: count %s: %zu != %zu", step, prefix, n, want_n);
}

static void model_check_events(struct store *s, const struct model *m, int step)
{
	const char *prefix = model_prefixes[pick(sizeof(model_prefixes) / sizeof(model_prefixes[0]))];
	int64_t after = m->compacted + (int64_t)pick((unsigned)(m->revision - m->compacted + 2));
	size_t limit = pick(4) ? 0 : 1 + pick(20), got = 0;
	struct store_event_list ev;
	int64_t last_rev = -1;
	bool more = false;
	int r;

	if (m->compacted > 0) {
		r = store_events(s, prefix, m->compacted - 1, 0, &ev);
		if (r != -ESTORE_COMPACTED) {
			test_fail(__FILE__, __LINE__, "step %d: events before compaction: %d", step, r);
			store_event_list_free(&ev);
			return;
		}
	}
	r = store_events(s, prefix, after, limit, &ev);
	if (r != 0) {
		test_fail(__FILE__, __LINE__, "step %d: events: %d", step, r);
		return;
	}
	for (size_t i = 0; i < m->nevents; i++) {
		const struct model_event *w = &m->events[i];
		const struct store_event *e;
		const char *key = model_keys[w->key];

		if (w->kv.mod_rev <= after || !has_prefix(key, prefix))
			continue;
		if (limit && got >= limit && w->kv.mod_rev != last_rev) {
			more = true;
			break;
		}
		last_rev = w->kv.mod_rev;
		e = got < ev.n ? &ev.events[got] : NULL;
		if (!e || e->type != w->type || !kv_matches(&e->kv, key, &w->kv) ||
		    (w->prev.exists ? !kv_matches(&e->prev, key, &w->prev)
				    : e->prev.key != NULL || e->prev.value != NULL)) {
			test_fail(__FILE__, __LINE__, "step %d: events %s after %" PRId64 ": event %zu",
				  step, prefix, after, got);
			store_event_list_free(&ev);
			return;
		}
		got++;
	}
	if (ev.n != got || ev.more != more || ev.revision != m->revision)
		test_fail(__FILE__, __LINE__, "step %d: events %s: n %zu/%zu more %d/%d", step,
			  prefix, ev.n, got, ev.more, more);
	store_event_list_free(&ev);
}

/* store_range_at against the model's state at a random revision (its
 * events replayed up to it): keys, values, revisions, paging and count. */
static void model_check_range_at(struct store *s, const struct model *m, int step)
{
	const char *prefix = model_prefixes[pick(sizeof(model_prefixes) / sizeof(model_prefixes[0]))];
	const char *after = pick(3) ? NULL : model_keys[pick(MODEL_KEYS)];
	int64_t at = pick(4) ? m->compacted + (int64_t)pick((unsigned)(m->revision - m->compacted + 1)) : 0;
	size_t limit = pick(5), want_n = 0, count = 0, want_count = 0;
	struct model_kv then[MODEL_KEYS] = { 0 };
	struct store_kv_list l;
	bool more = false;
	int r;

	for (size_t i = 0; i < m->nevents && m->events[i].kv.mod_rev <= (at ? at : m->revision); i++) {
		const struct model_event *e = &m->events[i];

		if (e->type == STORE_EVENT_PUT)
			then[e->key] = e->kv;
		else
			memset(&then[e->key], 0, sizeof(then[e->key]));
	}
	r = store_range_at(s, prefix, after, limit, at, &l, &count);
	if (r != 0) {
		test_fail(__FILE__, __LINE__, "step %d: range_at %s rev %" PRId64 ": %d", step, prefix, at, r);
		return;
	}
	for (int i = 0; i < MODEL_KEYS; i++) {
		if (!then[i].exists || !has_prefix(model_keys[i], prefix) || (after && strcmp(model_keys[i], after) <= 0))
			continue;
		want_count++;
		if (more || (limit && want_n == limit)) {
			more = true;
			continue;
		}
		if (want_n >= l.n || !kv_matches(&l.kvs[want_n], model_keys[i], &then[i])) {
			test_fail(__FILE__, __LINE__, "step %d: range_at %s after %s limit %zu rev %" PRId64 ": item %zu",
				  step, prefix, after ? after : "-", limit, at, want_n);
			store_kv_list_free(&l);
			return;
		}
		want_n++;
	}
	if (l.n != want_n || l.more != more || l.revision != (at ? at : m->revision) || count != want_count)
		test_fail(__FILE__, __LINE__, "step %d: range_at %s rev %" PRId64 ": n %zu/%zu more %d/%d count %zu/%zu",
			  step, prefix, at, l.n, want_n, l.more, more, count, want_count);
	store_kv_list_free(&l);
	if (m->compacted > 0 && store_range_at(s, prefix, NULL, 0, m->compacted - 1, &l, NULL) != -ESTORE_COMPACTED)
		test_fail(__FILE__, __LINE__, "step %d: range_at before the compaction did not fail", step);
	if (store_range_at(s, prefix, NULL, 0, m->revision + 1, &l, NULL) != -ERANGE)
		test_fail(__FILE__, __LINE__, "step %d: range_at a future revision did not fail", step);
}

static void random_op(struct store_op *op, char *value)
{
	unsigned kind = pick(20);

	memset(op, 0, sizeof(*op));
	if (kind < 12) {
		op->type = STORE_OP_PUT;
		op->key = model_keys[pick(MODEL_KEYS)];
		op->value = value;
		op->value_len = pick(8) ? (size_t)snprintf(value, MODEL_VALUE, "v%u", pick(1000)) : 0;
	} else if (kind < 17) {
		op->type = STORE_OP_DELETE;
		op->key = model_keys[pick(MODEL_KEYS)];
	} else {
		op->type = STORE_OP_DELETE_PREFIX;
		op->key = model_prefixes[pick(sizeof(model_prefixes) / sizeof(model_prefixes[0]))];
	}
}

TEST(store_matches_model_randomized)
{
	struct model m = { 0 };
	struct store *s = open_tmp();
	int steps = 3000;

	rng_state = test_seed() ^ 0x5eed;
	qsort(model_keys, MODEL_KEYS, sizeof(model_keys[0]), by_string);
	CHECK(s != NULL);
	for (int step = 0; step < steps && !test_failed(); step++) {
		struct store_cmp cmps[3];
		struct store_op success[4], failure[3];
		char values[7][MODEL_VALUE];
		struct store_txn t = { cmps, pick(4), success, pick(5), failure, pick(4) };
		struct store_txn_result res;
		bool holds;
		int r;

		if (t.ncmps > 3)
			t.ncmps = 3;
		for (size_t i = 0; i < t.ncmps; i++) {
			int k = (int)pick(MODEL_KEYS);

			cmps[i].key = model_keys[k];
			cmps[i].target = (enum store_cmp_target)pick(3);
			cmps[i].op = (enum store_cmp_op)pick(4);
			/* near the real value, so both outcomes happen */
			cmps[i].value = model_target(&m.kv[k], cmps[i].target) + (int64_t)pick(3) - 1;
			if (pick(4) == 0)
				cmps[i].value = 0;
		}
		for (size_t i = 0; i < t.nsuccess; i++)
			random_op(&success[i], values[i]);
		for (size_t i = 0; i < t.nfailure; i++)
			random_op(&failure[i], values[4 + i]);

		r = store_txn(s, &t, &res);
		holds = model_txn(&m, &t);
		if (r != 0 || res.succeeded != holds || res.revision != m.revision) {
			test_fail(__FILE__, __LINE__,
				  "step %d: txn r=%d succeeded %d/%d revision %" PRId64 "/%" PRId64,
				  step, r, res.succeeded, holds, res.revision, m.revision);
			break;
		}
		model_check_state(s, &m, step);
		if (step % 25 == 0)
			model_check_events(s, &m, step);
		if (step % 5 == 0)
			model_check_range_at(s, &m, step);
		if (step % 400 == 399) {
			int64_t to = m.compacted + (int64_t)pick((unsigned)(m.revision - m.compacted + 1));

			if (store_compact(s, to) != 0) {
				test_fail(__FILE__, __LINE__, "step %d: compact %" PRId64, step, to);
				break;
			}
			if (to > m.compacted)
				m.compacted = to;
		}
		if (step % 1000 == 999) {	/* and it all survives a reopen */
			store_close(s);
			s = open_tmp();
			if (!s) {
				test_fail(__FILE__, __LINE__, "step %d: reopen", step);
				break;
			}
		}
	}
	if (!test_failed())
		model_check_events(s, &m, steps);
	free(m.events);
	store_close(s);
}

/* ---- several processes ---------------------------------------------------------- */

#define RACERS 4

static bool wait_children(pid_t *pids, int n)
{
	bool ok = true;

	for (int i = 0; i < n; i++) {
		int status = 0;

		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			ok = false;
	}
	return ok;
}

/* read-modify-write "/counter" k times through compare-and-swap */
static int counter_child(const char *url, int k)
{
	char err[256];
	struct store *s = store_open(url, err, sizeof(err));

	if (!s)
		return 10;
	for (int finished = 0; finished < k;) {
		struct store_kv kv;
		char next[32];

		if (store_get(s, "/counter", &kv, NULL) != 0)
			return 11;
		struct store_cmp c = { "/counter", STORE_CMP_MOD_REV, STORE_CMP_EQ, kv.mod_rev };
		struct store_op op = { STORE_OP_PUT, "/counter", next,
				       (size_t)snprintf(next, sizeof(next), "%lld",
							atoll(kv.value) + 1) };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;

		store_kv_free(&kv);
		if (store_txn(s, &t, &res) != 0)
			return 12;
		finished += res.succeeded;
	}
	store_close(s);
	return 0;
}

TEST(store_cas_counter_race)
{
	const int k = 150;
	struct store *s = open_tmp();
	struct store_event_list ev;
	pid_t pids[RACERS];
	struct store_kv kv;
	char url[300];

	CHECK(s != NULL);
	CHECK(put_str(s, "/counter", "0", NULL) == 0);
	db_url(url, sizeof(url));
	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		CHECK(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(counter_child(url, k));
	}
	CHECK(wait_children(pids, RACERS));
	CHECK(store_get(s, "/counter", &kv, NULL) == 0);
	CHECK_EQ(atoll(kv.value), RACERS * k);
	CHECK_EQ(kv.version, RACERS * k + 1);
	CHECK_EQ(kv.mod_rev, RACERS * k + 1);
	store_kv_free(&kv);
	CHECK_EQ(revision_of(s), RACERS * k + 1);

	/* the history shows one increment per revision, none lost */
	CHECK(store_events(s, "/counter", 1, 0, &ev) == 0);
	CHECK_EQ(ev.n, RACERS * k);
	for (size_t i = 0; i < ev.n; i++) {
		CHECK_EQ(atoll(ev.events[i].kv.value), (long long)i + 1);
		CHECK_EQ(atoll(ev.events[i].prev.value), (long long)i);
	}
	store_event_list_free(&ev);
	store_close(s);
}

/* claim `claims` slots, each time the lowest free one, via create_rev == 0 */
static int claim_child(const char *url, int id, int claims)
{
	char err[256], owner[16];
	struct store *s = store_open(url, err, sizeof(err));

	if (!s)
		return 10;
	snprintf(owner, sizeof(owner), "%d", id);
	for (int claimed = 0; claimed < claims;) {
		struct store_kv_list l;
		char key[32];
		size_t slot = 0;

		if (store_range(s, "/slot/", NULL, 0, &l) != 0)
			return 11;
		/* slots are dense from 0 when nobody fails: the first gap */
		while (slot < l.n) {
			snprintf(key, sizeof(key), "/slot/%04zu", slot);
			if (strcmp(l.kvs[slot].key, key))
				break;
			slot++;
		}
		store_kv_list_free(&l);
		snprintf(key, sizeof(key), "/slot/%04zu", slot);

		struct store_cmp c = { key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 };
		struct store_op op = { STORE_OP_PUT, key, owner, strlen(owner) };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;

		if (store_txn(s, &t, &res) != 0)
			return 12;
		claimed += res.succeeded;
	}
	store_close(s);
	return 0;
}

TEST(store_slot_claim_race)
{
	const int claims = 40;
	struct store *s = open_tmp();
	int per_owner[RACERS] = { 0 };
	struct store_kv_list l;
	pid_t pids[RACERS];
	char url[300];

	CHECK(s != NULL);
	db_url(url, sizeof(url));
	for (int i = 0; i < RACERS; i++) {
		pids[i] = fork();
		CHECK(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(claim_child(url, i, claims));
	}
	CHECK(wait_children(pids, RACERS));
	CHECK(store_range(s, "/slot/", NULL, 0, &l) == 0);
	CHECK_EQ(l.n, RACERS * claims);
	for (size_t i = 0; i < l.n; i++) {
		char key[32];
		int owner = atoi(l.kvs[i].value);

		snprintf(key, sizeof(key), "/slot/%04zu", i);
		CHECK_STR(l.kvs[i].key, key);		/* dense: the lowest were taken */
		CHECK_EQ(l.kvs[i].version, 1);		/* never claimed twice */
		CHECK(owner >= 0 && owner < RACERS);
		per_owner[owner]++;
	}
	for (int i = 0; i < RACERS; i++)
		CHECK_EQ(per_owner[i], claims);
	CHECK_EQ(revision_of(s), RACERS * claims);
	store_kv_list_free(&l);
	store_close(s);
}

/* ---- crash safety ----------------------------------------------------------------- */

/* Transaction i puts "/crash/{x,y,z}" = i, except every fourth deletes all
 * three; after each commit it reports i on fd. */
static bool crash_txn_deletes(long i)
{
	return i % 4 == 3;
}

/* deferred: in group commit and never flushed (store_sync), so what the
 * parent finds is what the kernel held when the process died */
static int crash_child(const char *url, long first, int fd, bool deferred)
{
	static const char *const keys[] = { "/crash/x", "/crash/y", "/crash/z" };
	char err[256];
	struct store *s = store_open(url, err, sizeof(err));

	if (!s)
		return 10;
	if (deferred && store_defer_sync(s))
		return 13;
	for (long i = first;; i++) {
		struct store_op ops[3];
		char value[32];
		size_t len = (size_t)snprintf(value, sizeof(value), "%ld", i);
		struct store_txn t = { NULL, 0, ops, 3, NULL, 0 };
		struct store_txn_result res;

		for (int k = 0; k < 3; k++)
			ops[k] = (struct store_op){ crash_txn_deletes(i) ? STORE_OP_DELETE : STORE_OP_PUT,
						    keys[k], value, len };
		if (store_txn(s, &t, &res) != 0)
			return 11;
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			return 12;
	}
}

TEST(store_survives_sigkill_mid_transaction)
{
	const int rounds = 6;	/* odd rounds in group commit, never flushed */
	char url[300], path[300];
	long first = 1;

	rng_state = test_seed() ^ 0xc4a54;
	db_url(url, sizeof(url));
	for (int round = 0; round < rounds; round++) {
		struct store_kv kv[3];
		long reported = 0, i, committed;
		struct timespec pause;
		int fds[2], status, present = 0;
		struct store *s;
		sqlite3 *db = NULL;
		pid_t pid;

		CHECK(pipe(fds) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			_exit(crash_child(url, first, fds[1], round % 2 == 1));
		}
		close(fds[1]);
		/* wait for the first commit, then kill at a random moment */
		CHECK(read(fds[0], &reported, sizeof(reported)) == sizeof(reported));
		pause = (struct timespec){ 0, (long)(5 + pick(120)) * 1000000L };
		nanosleep(&pause, NULL);
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		while (read(fds[0], &i, sizeof(i)) == sizeof(i))
			reported = i;
		close(fds[0]);

		s = store_open(url, NULL, 0);
		CHECK(s != NULL);
		for (int k = 0; k < 3; k++) {
			static const char *const keys[] = { "/crash/x", "/crash/y", "/crash/z" };
			int r = store_get(s, keys[k], &kv[k], NULL);

			CHECK(r == 0 || r == -ENOENT);
			present += r == 0;
		}
		/* the last reported commit, or the one after it when the kill
		 * came between commit and report */
		if (present == 3) {
			committed = atol(kv[0].value);
			CHECK_STR(kv[1].value, kv[0].value);
			CHECK_STR(kv[2].value, kv[0].value);
			CHECK_EQ(kv[1].mod_rev, kv[0].mod_rev);
			CHECK_EQ(kv[2].mod_rev, kv[0].mod_rev);
			CHECK_EQ(revision_of(s), kv[0].mod_rev);
			CHECK(!crash_txn_deletes(committed));
			CHECK(committed == reported || committed == reported + 1);
		} else {
			CHECK_EQ(present, 0);
			CHECK(crash_txn_deletes(reported) || crash_txn_deletes(reported + 1));
		}
		for (int k = 0; k < 3; k++)
			store_kv_free(&kv[k]);
		store_close(s);

		snprintf(path, sizeof(path), "%s/store.db", test_tmpdir());
		CHECK(sqlite3_open(path, &db) == SQLITE_OK);
		{
			sqlite3_stmt *st = NULL;

			CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
			CHECK(sqlite3_step(st) == SQLITE_ROW);
			if (strcmp((const char *)sqlite3_column_text(st, 0), "ok"))
				test_fail(__FILE__, __LINE__, "integrity_check: %s",
					  sqlite3_column_text(st, 0));
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
		if (test_failed())
			return;
		first = reported + 2;	/* unique values in the next round */
	}
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
