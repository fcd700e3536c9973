/*
 * store_test.c — the store's conformance suite: the same tests, run against
 * whichever back-end WEFT_TEST_STORE names.
 *
 *   WEFT_TEST_STORE unset                   SQLite, a new file in the test's
 *                                           temp dir (tests/run runs it so)
 *   WEFT_TEST_STORE=etcd://127.0.0.1:PORT   that etcd (tests/api/store_etcd.sh
 *     [?ca=F&cert=F&key=F&user=N&password_file=F]   starts one and runs it so)
 *
 * Every test starts from a fresh store (open_tmp): on etcd that is the same
 * etcd with its keyspace emptied first, through the v3 JSON gateway's
 * deleterange of every key (key "\0", range_end "\0"), sent with libcurl
 * and not through the back-end under test.  open_again opens the same store
 * again without emptying it (a reopen, a child process).
 *
 * Revisions.  etcd's revision is global and never goes back: a fresh etcd
 * is at 1, and the emptying is itself a revision.  So every test takes
 * base = the revision at open and checks base + N where it means "the Nth
 * write of this test".  On SQLite base is 0, not read: the SQLite run is as
 * strict as absolute revisions.  A missing key is still 0/0/0 on both.
 *
 * Where the back-ends differ (a few `if (on_etcd())` branches, each
 * commented):
 *  - etcd's limits: 128 operations per branch, 128 comparisons, 1.5 MiB of
 *    keys and values per request, -E2BIG before anything is sent; SQLite's
 *    are store_limits.h's (values up to 8 MiB).
 *  - compaction on etcd first writes the back-end's hidden bookkeeping key
 *    (one revision, when the compaction moves forward), and the compaction
 *    revision a test starts with may be an earlier test's.
 *  - a transaction branch that puts a key twice, or puts a key one of its
 *    own deletes covers: SQLite applies the ops in order, etcd refuses the
 *    whole transaction ("duplicate key given in txn request", -EINVAL); the
 *    randomized test makes mostly transactions etcd takes there.
 *  - group commit is SQLite's; etcd acknowledges only durable writes.
 *  - the SIGKILL test checks the SQLite file's integrity on SQLite only.
 * The SQLite-only tests (URL forms, foreign files, reopen of a file, group
 * commit) are store_sqlite_test.c's, a binary of their own that the etcd
 * run leaves out.
 *
 * Plain cases first (put/get, range, txn, events, compaction), then a
 * randomized cross-check against a naive in-memory model (store_model_*
 * below: arrays and linear scans, obviously right), then the multi-process
 * cases: racing compare-and-swap counters, racing slot claims, and a writer
 * killed with SIGKILL at a random moment (children that hang are killed
 * after CHILD_DEADLINE_S and fail the test).  TEST_SEED=<n> replays a
 * failed randomized run.
 */
#include "store/store.h"
#include "store/store_test_helpers.h"
#include "test.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the back-end under test ------------------------------------------- */

#define URL_MAX 4096

static const char *store_env(void)
{
	const char *u = getenv("WEFT_TEST_STORE");

	return u && u[0] ? u : NULL;
}

/* The back-end's name, from the url: "etcd" or "sqlite". */
static const char *backend_name(void)
{
	const char *u = store_env();

	return u && !strncmp(u, "etcd:", 5) ? "etcd" : "sqlite";
}

static bool on_etcd(void)
{
	return !strcmp(backend_name(), "etcd");
}

/* Refuse a WEFT_TEST_STORE this suite does not know, rather than run on
 * SQLite while the caller thinks it ran on something else. */
__attribute__((constructor)) static void backend_check(void)
{
	const char *u = store_env();

	if (!u)
		return;
	if (!on_etcd()) {
		fprintf(stderr, "store_test: WEFT_TEST_STORE=%s: want etcd://HOST:PORT[?...] (unset: SQLite)\n", u);
		exit(2);
	}
	if (strlen(u) >= URL_MAX) {
		fprintf(stderr, "store_test: WEFT_TEST_STORE is longer than %d bytes\n", URL_MAX - 1);
		exit(2);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	fprintf(stderr, "store_test: back-end %s (%s); the SQLite-only tests are store_sqlite_test's\n",
		backend_name(), u);
}

static const char *store_url(char *buf, size_t len)
{
	if (on_etcd())
		snprintf(buf, len, "%s", store_env());
	else
		snprintf(buf, len, "sqlite:%s/store.db", test_tmpdir());
	return buf;
}

/* What emptying an etcd needs of WEFT_TEST_STORE. */
struct etcd_conn {
	char server[512];	/* http://HOST:PORT, https:// when ca= is given */
	char ca[1024], cert[1024], key[1024], user[1024], password_file[1024];	/* one size: etcd_parse */
};

/* "etcd://HOST:PORT?ca=F&cert=F&key=F&user=N&password_file=F" (or with
 * "etcd:http://" / "etcd:https://").  Values are taken as they are, not
 * %-decoded: the paths the tests give have nothing to decode.  Parameters
 * the wipe does not need are left to the back-end. */
static int etcd_parse(const char *url, struct etcd_conn *c, char *err, size_t errlen)
{
	const char *p = url + 5, *scheme = NULL, *q;
	size_t hostlen;

	memset(c, 0, sizeof(*c));
	if (!strncmp(p, "//", 2))
		p += 2;
	if (!strncmp(p, "http://", 7)) {
		scheme = "http";
		p += 7;
	} else if (!strncmp(p, "https://", 8)) {
		scheme = "https";
		p += 8;
	}
	hostlen = strcspn(p, "?/");
	if (hostlen == 0 || hostlen > 200) {
		snprintf(err, errlen, "%.300s: no HOST:PORT", url);
		return -EINVAL;
	}
	q = strchr(p + hostlen, '?');
	while (q && *q) {
		const char *name = q + 1, *eq = strchr(name, '='), *end = name + strcspn(name, "&");
		static const struct {
			const char *name;
			size_t off;
		} params[] = {
			{ "ca", offsetof(struct etcd_conn, ca) },
			{ "cert", offsetof(struct etcd_conn, cert) },
			{ "key", offsetof(struct etcd_conn, key) },
			{ "user", offsetof(struct etcd_conn, user) },
			{ "password_file", offsetof(struct etcd_conn, password_file) },
		};

		if (eq && eq < end)
			for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
				if (strlen(params[i].name) == (size_t)(eq - name) &&
				    !strncmp(name, params[i].name, (size_t)(eq - name)))
					snprintf((char *)c + params[i].off, sizeof(c->ca), "%.*s",
						 (int)(end - eq - 1), eq + 1);
		q = *end ? end : NULL;
	}
	if (!scheme)
		scheme = c->ca[0] ? "https" : "http";
	snprintf(c->server, sizeof(c->server), "%s://%.*s", scheme, (int)hostlen, p);
	return 0;
}

struct http_buf {
	char *p;
	size_t n;
};

static size_t http_buf_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_buf *b = arg;
	size_t len = size * nmemb;
	char *p = realloc(b->p, b->n + len + 1);

	if (!p)
		return 0;
	memcpy(p + b->n, data, len);
	b->n += len;
	p[b->n] = 0;
	b->p = p;
	return len;
}

/* POST body (JSON) to the gateway's path; a 200's JSON answer in *out. */
static int etcd_post(const struct etcd_conn *c, const char *token, const char *path, const char *body,
		     json_t **out, char *err, size_t errlen)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL, *more;
	struct http_buf b = { 0 };
	char url[700], auth[2048];
	long status = 0;
	CURLcode rc = CURLE_OK;
	int r = 0;

	*out = NULL;
	if (!h) {
		snprintf(err, errlen, "curl_easy_init failed");
		return -ENOMEM;
	}
	snprintf(url, sizeof(url), "%s%s", c->server, path);
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (hdr && token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		more = curl_slist_append(hdr, auth);
		if (!more)
			rc = CURLE_OUT_OF_MEMORY;
		else
			hdr = more;
	}
	if (!hdr)
		rc = CURLE_OUT_OF_MEMORY;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(h, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_HTTPHEADER, hdr);
	SET(CURLOPT_POSTFIELDS, body);
	SET(CURLOPT_WRITEFUNCTION, http_buf_write);
	SET(CURLOPT_WRITEDATA, &b);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_TIMEOUT, 60L);
	if (c->ca[0])
		SET(CURLOPT_CAINFO, c->ca);
	if (c->cert[0])
		SET(CURLOPT_SSLCERT, c->cert);
	if (c->key[0])
		SET(CURLOPT_SSLKEY, c->key);
#undef SET
	if (rc == CURLE_OK)
		rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "POST %.300s: %s", url, curl_easy_strerror(rc));
		r = -EIO;
	} else if (status != 200) {
		snprintf(err, errlen, "POST %.300s: HTTP %ld: %.300s", url, status, b.p ? b.p : "");
		r = -EPROTO;
	} else if (!(*out = json_loads(b.p ? b.p : "", 0, NULL))) {
		snprintf(err, errlen, "POST %.300s: not JSON: %.300s", url, b.p ? b.p : "");
		r = -EPROTO;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	free(b.p);
	return r;
}

/* With user= and password_file=: the gateway's token for that user. */
static int etcd_login(const struct etcd_conn *c, char **token, char *err, size_t errlen)
{
	char password[1024] = "";
	json_t *req, *ans = NULL;
	char *body = NULL;
	size_t n;
	FILE *f;
	int r;

	*token = NULL;
	f = fopen(c->password_file, "r");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%.300s: %s", c->password_file, strerror(errno));
		return r;
	}
	n = fread(password, 1, sizeof(password) - 1, f);
	fclose(f);
	while (n && (password[n - 1] == '\n' || password[n - 1] == '\r' || password[n - 1] == ' '))
		n--;
	password[n] = 0;
	req = json_pack("{s:s, s:s}", "name", c->user, "password", password);
	body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	memset(password, 0, sizeof(password));
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = etcd_post(c, NULL, "/v3/auth/authenticate", body, &ans, err, errlen);
	free(body);
	if (r == 0) {
		const char *t = json_string_value(json_object_get(ans, "token"));

		if (!t) {
			snprintf(err, errlen, "%.300s/v3/auth/authenticate: no token in the answer", c->server);
			r = -EPROTO;
		} else if (!(*token = strdup(t))) {
			r = -ENOMEM;
		}
	}
	json_decref(ans);
	return r;
}

/* Delete every key of the etcd WEFT_TEST_STORE names. */
static int etcd_wipe(char *err, size_t errlen)
{
	struct etcd_conn c;
	json_t *ans = NULL;
	char *token = NULL;
	int r = etcd_parse(store_env(), &c, err, errlen);

	if (r == 0 && c.user[0])
		r = etcd_login(&c, &token, err, errlen);
	if (r == 0)
		r = etcd_post(&c, token, "/v3/kv/deleterange", "{\"key\":\"AA==\",\"range_end\":\"AA==\"}", &ans,
			      err, errlen);
	json_decref(ans);
	free(token);
	return r;
}

/* The revision of this test's fresh store at open (see the top comment). */
static int64_t base;

/* The handles open_tmp and open_again gave that close_store has not closed.
 * A failed CHECK returns without closing; on etcd a handle may run a watch
 * thread, and a later test's fork() must not copy a process whose other
 * thread holds a lock (the child can hang in malloc): open_tmp closes them
 * first. */
#define OPEN_MAX 8
static struct store *open_stores[OPEN_MAX];

static void keep_open(struct store *s)
{
	for (int i = 0; i < OPEN_MAX; i++)
		if (!open_stores[i]) {
			open_stores[i] = s;
			return;
		}
}

static void close_store(struct store *s)
{
	for (int i = 0; i < OPEN_MAX; i++)
		if (open_stores[i] == s)
			open_stores[i] = NULL;
	store_close(s);
}

static void close_leftovers(void)
{
	for (int i = 0; i < OPEN_MAX; i++)
		if (open_stores[i]) {
			store_close(open_stores[i]);
			open_stores[i] = NULL;
		}
}

/* A fresh store: SQLite's new file, or the etcd emptied. */
static struct store *open_tmp(void)
{
	char url[URL_MAX], err[1024] = "";
	struct store *s;

	close_leftovers();
	store_url(url, sizeof(url));
	if (on_etcd() && etcd_wipe(err, sizeof(err)) < 0) {
		test_fail(__FILE__, __LINE__, "emptying %s: %s", url, err);
		return NULL;
	}
	s = store_open(url, err, sizeof(err));
	if (!s) {
		test_fail(__FILE__, __LINE__, "store_open %s: %s (%s)", url, err, strerror(errno));
		return NULL;
	}
	base = 0;
	if (on_etcd() && (store_revision(s, &base) < 0 || base < 1)) {
		test_fail(__FILE__, __LINE__, "%s: no revision after emptying it (%" PRId64 ")", url, base);
		store_close(s);
		return NULL;
	}
	keep_open(s);
	return s;
}

/* The same store again, as it is. */
static struct store *open_again(void)
{
	char url[URL_MAX], err[1024] = "";
	struct store *s = store_open(store_url(url, sizeof(url)), err, sizeof(err));

	if (!s)
		test_fail(__FILE__, __LINE__, "store_open %s: %s (%s)", url, err, strerror(errno));
	else
		keep_open(s);
	return s;
}

/* Revisions a compaction that moves forward adds: etcd's back-end first
 * writes its hidden bookkeeping key with compare-and-swap (as kube-apiserver
 * does with "compact_rev_key"); SQLite writes nothing. */
static int64_t compaction_writes(void)
{
	return on_etcd() ? 1 : 0;
}

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

/* ---- open -------------------------------------------------------------- */

/* The back-end opens and answers.  Alone (`store_test store_open_backend`)
 * it is tests/api/store_etcd.sh's probe: it empties nothing, so it tries
 * the url's credentials and nothing else. */
TEST(store_open_backend)
{
	char url[URL_MAX], err[1024] = "";
	struct store *s;
	int64_t rev = -1;

	errno = 0;
	s = store_open(store_url(url, sizeof(url)), err, sizeof(err));
	if (!s) {
		int e = errno;

		test_fail(__FILE__, __LINE__, "store_open %s: %s (%s)", url, err, strerror(e));
		if (e == ENOTSUP)
			printf("store_test: the %s back-end is not built (store_open: ENOTSUP)\n", backend_name());
		return;
	}
	CHECK_EQ(store_revision(s, &rev), 0);
	CHECK(on_etcd() ? rev >= 1 : rev == 0);		/* a fresh etcd is at 1 */
	{	/* reads of keys too (what an etcd with auth on lets only users do) */
		struct store_kv kv;
		size_t n;
		int r = store_get(s, "/weft-store-test-probe", &kv, NULL);

		store_kv_free(&kv);
		if (r != 0 && r != -ENOENT)
			test_fail(__FILE__, __LINE__, "get: %d (%s)", r, strerror(-r));
		else
			CHECK_EQ(store_count(s, "/", &n), 0);
	}
	close_store(s);
}

/* ---- single keys --------------------------------------------------------- */

TEST(store_put_get_delete_revisions)
{
	struct store *s = open_tmp();
	struct store_kv kv;
	int64_t rev = -1;

	CHECK(s != NULL);
	CHECK_EQ(revision_of(s), base);
	CHECK_EQ(store_get(s, "/a", &kv, &rev), -ENOENT);
	CHECK_EQ(rev, base);
	CHECK(kv.key == NULL && kv.value == NULL);

	CHECK(put_str(s, "/a", "one", &rev) == 0);
	CHECK_EQ(rev, base + 1);
	CHECK(store_get(s, "/a", &kv, &rev) == 0);
	CHECK_STR(kv.key, "/a");
	CHECK_STR(kv.value, "one");
	CHECK_EQ(kv.value_len, 3);
	CHECK_EQ(kv.create_rev, base + 1);
	CHECK_EQ(kv.mod_rev, base + 1);
	CHECK_EQ(kv.version, 1);
	CHECK_EQ(rev, base + 1);
	store_kv_free(&kv);

	CHECK(put_str(s, "/a", "two", &rev) == 0);
	CHECK_EQ(rev, base + 2);
	CHECK(put_str(s, "/b", "bee", &rev) == 0);
	CHECK_EQ(rev, base + 3);
	CHECK(store_get(s, "/a", &kv, &rev) == 0);
	CHECK_STR(kv.value, "two");
	CHECK_EQ(kv.create_rev, base + 1);
	CHECK_EQ(kv.mod_rev, base + 2);
	CHECK_EQ(kv.version, 2);
	CHECK_EQ(rev, base + 3);
	store_kv_free(&kv);

	CHECK(store_delete(s, "/a", &rev) == 0);
	CHECK_EQ(rev, base + 4);
	CHECK_EQ(store_get(s, "/a", &kv, NULL), -ENOENT);
	/* deleting a missing key changes nothing, not even the revision */
	CHECK(store_delete(s, "/a", &rev) == 0);
	CHECK_EQ(rev, base + 4);
	CHECK(store_delete(s, "/never", &rev) == 0);
	CHECK_EQ(revision_of(s), base + 4);

	/* re-created: a new life, create_rev and version start again */
	CHECK(put_str(s, "/a", "three", &rev) == 0);
	CHECK_EQ(rev, base + 5);
	CHECK(store_get(s, "/a", &kv, NULL) == 0);
	CHECK_EQ(kv.create_rev, base + 5);
	CHECK_EQ(kv.mod_rev, base + 5);
	CHECK_EQ(kv.version, 1);
	store_kv_free(&kv);

	/* putting the same value again is still a change */
	CHECK(put_str(s, "/a", "three", &rev) == 0);
	CHECK_EQ(rev, base + 6);
	close_store(s);
}

/* A value of len bytes, the same pattern every time. */
static char *pattern(size_t len)
{
	char *p = malloc(len ? len : 1);

	for (size_t i = 0; p && i < len; i++)
		p[i] = (char)(i * 7 + (i >> 13));
	return p;
}

/* key holds len bytes of pattern(), or the test failed (0 / -1). */
static int holds_pattern(struct store *s, const char *key, const char *big, size_t len, int line)
{
	struct store_kv kv;
	int r = store_get(s, key, &kv, NULL);

	if (r != 0)
		test_fail(__FILE__, line, "get %s of %zu bytes: %d", key, len, r);
	else if (kv.value_len != len || memcmp(kv.value, big, len) || kv.value[len])
		test_fail(__FILE__, line, "%s: %zu-byte value round trip differs (got %zu bytes)", key, len,
			  kv.value_len);
	store_kv_free(&kv);
	return test_failed() ? -1 : 0;
}

TEST(store_values_empty_binary_large)
{
	struct store *s = open_tmp();
	static const char bin[] = { 'a', 0, 'b', (char)0xff, 0 };
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

	if (!on_etcd()) {
		/* SQLite takes values up to STORE_VALUE_MAX, 8 MiB */
		size_t big_len = 8u << 20;

		big = pattern(big_len);
		CHECK(big != NULL);
		if (store_put(s, "/big", big, big_len, NULL) != 0)
			test_fail(__FILE__, __LINE__, "8 MiB value put");
		else
			holds_pattern(s, "/big", big, big_len, __LINE__);
		free(big);
		close_store(s);
		return;
	}

	/* etcd refuses a request of more than 1.5 MiB of keys and values,
	 * and the back-end says -E2BIG before it sends one: 1 MiB goes, 2 MiB
	 * (alone, or as two 1 MiB puts in one transaction) changes nothing */
	const size_t mib = 1u << 20, limit = 1572864;
	int64_t before;
	int r;

	big = pattern(2 * mib);
	CHECK(big != NULL);
	if (store_put(s, "/big", big, mib, NULL) != 0)
		test_fail(__FILE__, __LINE__, "1 MiB value put");
	else if (holds_pattern(s, "/big", big, mib, __LINE__) == 0) {
		struct store_op two[] = {
			{ STORE_OP_PUT, "/big2/a", big, mib },
			{ STORE_OP_PUT, "/big2/b", big, mib },
		};
		struct store_txn t = { NULL, 0, two, 2, NULL, 0 };
		struct store_txn_result res;
		size_t n = 1;

		before = revision_of(s);
		if (store_put(s, "/big2/a", big, 2 * mib, NULL) != -E2BIG)
			test_fail(__FILE__, __LINE__, "a 2 MiB value was not -E2BIG");
		else if (store_txn(s, &t, &res) != -E2BIG)
			test_fail(__FILE__, __LINE__, "two 1 MiB puts in one transaction were not -E2BIG");
		else if (revision_of(s) != before || store_count(s, "/big2/", &n) != 0 || n != 0)
			test_fail(__FILE__, __LINE__, "a refused request changed the store");
	}
	/* at the limit itself (key and value 1.5 MiB): written, or -E2BIG and
	 * nothing changed; never another error */
	if (!test_failed()) {
		before = revision_of(s);
		r = store_put(s, "/l", big, limit - 2, NULL);
		if (r == 0)
			holds_pattern(s, "/l", big, limit - 2, __LINE__);
		else if (r != -E2BIG || revision_of(s) != before)
			test_fail(__FILE__, __LINE__, "a put of key and value 1.5 MiB: %d (want 0 or -E2BIG)", r);
	}
	free(big);
	close_store(s);
}

/* etcd's 128 operations per branch and 128 comparisons; SQLite's limits
 * are store_limits.h's, so there 129 of each is fine. */
TEST(store_txn_size_limits)
{
	enum { N = 129 };
	struct store *s = open_tmp();
	struct store_op ops[N], wipe = { STORE_OP_DELETE_PREFIX, "/n/", NULL, 0 };
	struct store_cmp cmps[N];
	struct store_txn_result res;
	char keys[N][16];
	int64_t before;
	size_t n;

	CHECK(s != NULL);
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/n/%03d", i);
		ops[i] = (struct store_op){ STORE_OP_PUT, keys[i], "v", 1 };
		cmps[i] = (struct store_cmp){ keys[i], STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 };
	}
	struct store_txn ops129 = { NULL, 0, ops, N, NULL, 0 };
	struct store_txn failure129 = { cmps, 1, ops, 1, ops, N };	/* fails once "/n/000" exists */
	struct store_txn cmps129 = { cmps, N, ops, 1, NULL, 0 };
	struct store_txn clear = { NULL, 0, &wipe, 1, NULL, 0 };

	if (on_etcd()) {	/* -E2BIG before sending: nothing changes */
		CHECK_EQ(store_txn(s, &ops129, &res), -E2BIG);
		CHECK_EQ(store_txn(s, &failure129, &res), -E2BIG);
		CHECK_EQ(store_txn(s, &cmps129, &res), -E2BIG);
		CHECK_EQ(revision_of(s), base);
		CHECK(store_count(s, "/n/", &n) == 0);
		CHECK_EQ(n, 0);
	} else {
		CHECK_EQ(store_txn(s, &cmps129, &res), 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, base + 1);
		CHECK_EQ(store_txn(s, &ops129, &res), 0);
		CHECK_EQ(res.revision, base + 2);
		CHECK_EQ(store_txn(s, &failure129, &res), 0);
		CHECK(!res.succeeded);
		CHECK_EQ(res.revision, base + 3);
		CHECK(store_count(s, "/n/", &n) == 0);
		CHECK_EQ(n, N);
		CHECK_EQ(store_txn(s, &clear, &res), 0);
		CHECK_EQ(res.revision, base + 4);
	}

	/* 128 of each goes, as one revision, on both */
	struct store_txn ops128 = { cmps, N - 1, ops, N - 1, NULL, 0 };
	struct store_txn failure128 = { cmps, N - 1, NULL, 0, ops, N - 1 };	/* the keys exist now */

	before = revision_of(s);
	CHECK_EQ(store_txn(s, &ops128, &res), 0);
	CHECK(res.succeeded);
	CHECK_EQ(res.revision, before + 1);
	CHECK(store_count(s, "/n/", &n) == 0);
	CHECK_EQ(n, N - 1);
	CHECK_EQ(store_txn(s, &failure128, &res), 0);
	CHECK(!res.succeeded);
	CHECK_EQ(res.revision, before + 2);
	CHECK_EQ(store_txn(s, &clear, &res), 0);
	CHECK_EQ(res.revision, before + 3);
	close_store(s);
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
	CHECK_EQ(store_compact(s, base + 99), -EINVAL);	/* beyond the revision */
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
	CHECK_EQ(rev, base + 1);	/* only the 4096-byte key went in */
	close_store(s);
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
	CHECK_EQ(l.revision, base + (int64_t)(sizeof(keys) / sizeof(keys[0])));
	CHECK(!l.more);
	for (size_t i = 1; i < l.n; i++)
		CHECK(strcmp(l.kvs[i - 1].key, l.kvs[i].key) < 0);	/* byte order */
	CHECK_STR(l.kvs[0].value, l.kvs[0].key);
	store_kv_list_free(&l);
	close_store(s);
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
	close_store(s);
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
	close_store(s);
}

TEST(store_txn_branches_and_revision_rules)
{
	struct store *s = open_tmp();
	struct store_txn_result res;
	struct store_kv kv;
	int64_t rev;

	CHECK(s != NULL);
	CHECK(put_str(s, "/x", "1", &rev) == 0);
	CHECK_EQ(rev, base + 1);

	{	/* empty txn: succeeds, no revision */
		struct store_txn t = { 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, base + 1);
	}
	{	/* failed compare without failure ops: nothing, no revision */
		struct store_cmp c = { "/x", STORE_CMP_VERSION, STORE_CMP_EQ, 7 };
		struct store_op op = { STORE_OP_PUT, "/x", "2", 1 };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };

		CHECK(store_txn(s, &t, &res) == 0);
		CHECK(!res.succeeded);
		CHECK_EQ(res.revision, base + 1);
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
		CHECK_EQ(res.revision, base + 2);
		CHECK(store_get(s, "/x", &kv, NULL) == 0);
		CHECK_STR(kv.value, "3");
		CHECK_EQ(kv.mod_rev, base + 2);
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
		CHECK_EQ(res.revision, base + 2);
	}
	{	/* every compare must hold */
		struct store_cmp c[] = {
			{ "/x", STORE_CMP_MOD_REV, STORE_CMP_EQ, base + 2 },
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
		CHECK_EQ(res.revision, base + 3);
	}
	close_store(s);
}

/* The events of after_rev + 1, each "P key=value" or "D key", with prev
 * values as "<value", joined by spaces; all at revision after_rev + 1. */
static const char *events_of(struct store *s, int64_t after_rev, char *buf, size_t len)
{
	struct store_event_list ev;
	size_t used = 0;

	buf[0] = 0;
	if (store_events(s, "", after_rev, 0, &ev) < 0) {
		snprintf(buf, len, "(error)");
		return buf;
	}
	for (size_t i = 0; i < ev.n && used < len; i++) {
		const struct store_event *e = &ev.events[i];

		if (!e->kv.key || !e->kv.value || e->kv.mod_rev != after_rev + 1 ||
		    (e->prev.key && strcmp(e->prev.key, e->kv.key)) || (!e->prev.key && e->prev.value) ||
		    (e->type == STORE_EVENT_DELETE && (e->kv.value_len || e->kv.version || e->kv.create_rev))) {
			snprintf(buf, len, "(event %zu: %s at %" PRId64 ")", i, e->kv.key ? e->kv.key : "(null)",
				 e->kv.mod_rev);
			break;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s%s%s%s%s", i ? " " : "",
					 e->type == STORE_EVENT_PUT ? "P" : "D", e->kv.key,
					 e->type == STORE_EVENT_PUT ? "=" : "",
					 e->type == STORE_EVENT_PUT ? e->kv.value : "",
					 e->prev.key ? "<" : "", e->prev.key ? e->prev.value : "");
	}
	store_event_list_free(&ev);
	return buf;
}

TEST(store_txn_multi_op_is_one_revision)
{
	struct store *s = open_tmp();
	struct store_txn_result res;
	struct store_kv_list l;
	struct store_kv kv;
	char buf[512];

	CHECK(s != NULL);
	CHECK(put_str(s, "/c", "sea", NULL) == 0);
	CHECK(put_str(s, "/d/1", "one", NULL) == 0);
	CHECK(put_str(s, "/d/2", "two", NULL) == 0);
	CHECK(put_str(s, "/d2", "not under /d/", NULL) == 0);
	CHECK_EQ(revision_of(s), base + 4);

	/* every key once: one revision, its events in op order, deletes
	 * carrying prev */
	struct store_op ops[] = {
		{ STORE_OP_PUT, "/a", "A", 1 },
		{ STORE_OP_PUT, "/b", "B", 1 },
		{ STORE_OP_DELETE, "/c", NULL, 0 },
		{ STORE_OP_DELETE_PREFIX, "/d/", NULL, 0 },
		{ STORE_OP_DELETE, "/missing", NULL, 0 },
		{ STORE_OP_PUT, "/e", "E", 1 },
	};
	struct store_txn t = { NULL, 0, ops, sizeof(ops) / sizeof(ops[0]), NULL, 0 };

	CHECK(store_txn(s, &t, &res) == 0);
	CHECK(res.succeeded);
	CHECK_EQ(res.revision, base + 5);
	CHECK_STR(range_keys(s, "/", buf, sizeof(buf)), "/a /b /d2 /e");
	CHECK(store_range(s, "/", NULL, 0, &l) == 0);
	CHECK_EQ(l.kvs[0].mod_rev, base + 5);
	CHECK_EQ(l.kvs[0].version, 1);
	CHECK_EQ(l.kvs[0].create_rev, base + 5);
	CHECK_STR(l.kvs[0].value, "A");
	CHECK_EQ(l.kvs[1].mod_rev, base + 5);
	CHECK_EQ(l.kvs[2].mod_rev, base + 4);
	store_kv_list_free(&l);
	CHECK_EQ(store_get(s, "/c", &kv, NULL), -ENOENT);
	CHECK_STR(events_of(s, base + 4, buf, sizeof(buf)),
		  "P /a=A P /b=B D /c<sea D /d/1<one D /d/2<two P /e=E");

	/* one key twice in a branch: put twice, put then delete, put under
	 * the branch's own prefix delete */
	struct store_op twice[] = {
		{ STORE_OP_PUT, "/a", "A2", 2 },
		{ STORE_OP_DELETE_PREFIX, "/d", NULL, 0 },
		{ STORE_OP_PUT, "/a", "A3", 2 },
		{ STORE_OP_DELETE, "/e", NULL, 0 },
		{ STORE_OP_PUT, "/e", "E2", 2 },
		{ STORE_OP_PUT, "/d3", "D3", 2 },
	};
	t = (struct store_txn){ NULL, 0, twice, sizeof(twice) / sizeof(twice[0]), NULL, 0 };
	if (on_etcd()) {
		/* etcd refuses a branch that puts a key twice or puts a key
		 * one of its deletes covers ("duplicate key given in txn
		 * request"): -EINVAL, nothing changed.  Each alone is fine. */
		struct store_txn put_put = { NULL, 0, twice, 3, NULL, 0 };	/* /a, /d, /a */
		struct store_txn del_put = { NULL, 0, twice + 3, 2, NULL, 0 };	/* /e, /e */
		struct store_txn prefix_put = { NULL, 0, twice + 1, 1, twice + 5, 1 };
		/* the overlap in the branch that would not run */
		struct store_txn in_failure = { &(struct store_cmp){ "/a", STORE_CMP_VERSION, STORE_CMP_EQ, 1 }, 1,
						twice, 1, twice + 3, 2 };

		CHECK_EQ(store_txn(s, &t, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &put_put, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &del_put, &res), -EINVAL);
		CHECK_EQ(store_txn(s, &in_failure, &res), -EINVAL);
		CHECK_EQ(revision_of(s), base + 5);
		CHECK_STR(range_keys(s, "/", buf, sizeof(buf)), "/a /b /d2 /e");
		/* a prefix delete in one branch, a put under it in the other */
		CHECK_EQ(store_txn(s, &prefix_put, &res), 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, base + 6);
		CHECK_STR(range_keys(s, "/", buf, sizeof(buf)), "/a /b /e");
	} else {
		/* SQLite applies the ops in order */
		CHECK_EQ(store_txn(s, &t, &res), 0);
		CHECK(res.succeeded);
		CHECK_EQ(res.revision, base + 6);
		CHECK_STR(range_keys(s, "/", buf, sizeof(buf)), "/a /b /d3 /e");
		CHECK(store_get(s, "/a", &kv, NULL) == 0);
		CHECK_STR(kv.value, "A3");
		CHECK_EQ(kv.version, 3);
		CHECK_EQ(kv.create_rev, base + 5);
		CHECK_EQ(kv.mod_rev, base + 6);
		store_kv_free(&kv);
		CHECK(store_get(s, "/e", &kv, NULL) == 0);
		CHECK_EQ(kv.version, 1);			/* a new life */
		CHECK_EQ(kv.create_rev, base + 6);
		store_kv_free(&kv);
		CHECK_STR(events_of(s, base + 5, buf, sizeof(buf)),
			  "P /a=A2<A D /d2<not under /d/ P /a=A3<A2 D /e<E P /e=E2 P /d3=D3");
	}
	close_store(s);
}

/* ---- events and compaction --------------------------------------------------- */

TEST(store_events_order_types_prev_and_paging)
{
	struct store *s = open_tmp();
	struct store_event_list ev;
	int64_t after;
	size_t total;

	CHECK(s != NULL);
	CHECK(put_str(s, "/w/a", "1", NULL) == 0);		/* base + 1 */
	CHECK(put_str(s, "/other", "x", NULL) == 0);		/* base + 2 */
	CHECK(put_str(s, "/w/a", "2", NULL) == 0);		/* base + 3 */
	CHECK(put_str(s, "/w/b", "3", NULL) == 0);		/* base + 4 */
	CHECK(store_delete(s, "/w/a", NULL) == 0);		/* base + 5 */

	CHECK(store_events(s, "/w/", base, 0, &ev) == 0);
	CHECK_EQ(ev.n, 4);
	CHECK_EQ(ev.revision, base + 5);
	CHECK(!ev.more);
	CHECK_EQ(ev.events[0].type, STORE_EVENT_PUT);
	CHECK_STR(ev.events[0].kv.key, "/w/a");
	CHECK_STR(ev.events[0].kv.value, "1");
	CHECK_EQ(ev.events[0].kv.create_rev, base + 1);
	CHECK_EQ(ev.events[0].kv.mod_rev, base + 1);
	CHECK_EQ(ev.events[0].kv.version, 1);
	CHECK(ev.events[0].prev.key == NULL);

	CHECK_EQ(ev.events[1].type, STORE_EVENT_PUT);
	CHECK_STR(ev.events[1].kv.value, "2");
	CHECK_EQ(ev.events[1].kv.create_rev, base + 1);
	CHECK_EQ(ev.events[1].kv.mod_rev, base + 3);
	CHECK_EQ(ev.events[1].kv.version, 2);
	CHECK_STR(ev.events[1].prev.key, "/w/a");
	CHECK_STR(ev.events[1].prev.value, "1");
	CHECK_EQ(ev.events[1].prev.mod_rev, base + 1);
	CHECK_EQ(ev.events[1].prev.version, 1);

	CHECK_STR(ev.events[2].kv.key, "/w/b");
	CHECK_EQ(ev.events[2].kv.mod_rev, base + 4);

	CHECK_EQ(ev.events[3].type, STORE_EVENT_DELETE);
	CHECK_STR(ev.events[3].kv.key, "/w/a");
	CHECK(ev.events[3].kv.value != NULL);
	CHECK_EQ(ev.events[3].kv.value_len, 0);
	CHECK_EQ(ev.events[3].kv.mod_rev, base + 5);
	CHECK_EQ(ev.events[3].kv.create_rev, 0);
	CHECK_EQ(ev.events[3].kv.version, 0);
	CHECK_STR(ev.events[3].prev.value, "2");
	CHECK_EQ(ev.events[3].prev.create_rev, base + 1);
	CHECK_EQ(ev.events[3].prev.mod_rev, base + 3);
	CHECK_EQ(ev.events[3].prev.version, 2);
	store_event_list_free(&ev);

	CHECK(store_events(s, "", base, 0, &ev) == 0);	/* every key */
	CHECK_EQ(ev.n, 5);
	CHECK_STR(ev.events[1].kv.key, "/other");
	store_event_list_free(&ev);
	CHECK(store_events(s, "/w/", base + 5, 0, &ev) == 0);	/* nothing newer */
	CHECK_EQ(ev.n, 0);
	CHECK(!ev.more);
	store_event_list_free(&ev);
	CHECK(store_events(s, "/w/", base + 99, 0, &ev) == 0);	/* future: empty, not an error */
	CHECK_EQ(ev.n, 0);
	store_event_list_free(&ev);

	/* paging with limit 1: ask again after the last event */
	after = base;
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
	close_store(s);
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
	CHECK(put_str(s, "/t/0", "z", NULL) == 0);	/* base + 1 */
	CHECK(store_txn(s, &t, &res) == 0);		/* base + 2: three events */
	CHECK(put_str(s, "/t/4", "d", NULL) == 0);	/* base + 3 */

	/* a limit of 2 would cut revision base + 2; the list ends after it instead */
	CHECK(store_events(s, "/t/", base, 2, &ev) == 0);
	CHECK_EQ(ev.n, 4);
	CHECK(ev.more);
	CHECK_EQ(ev.events[3].kv.mod_rev, base + 2);
	CHECK_EQ(ev.revision, base + 3);	/* the store's, cut or not */
	store_event_list_free(&ev);
	CHECK(store_events(s, "/t/", base + 2, 2, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK(!ev.more);
	store_event_list_free(&ev);
	CHECK(store_events(s, "/t/", base, 1, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK(ev.more);
	store_event_list_free(&ev);
	close_store(s);
}

/* Revisions come from the puts' answers and revision_of(), compaction
 * adding compaction_writes() when it moves forward. */
TEST(store_compaction)
{
	struct store *s = open_tmp();
	struct store_event_list ev;
	struct store_kv_list l;
	struct store_kv kv;
	int64_t revs[6], c, c0, now, rev;
	char buf[256];
	size_t n;

	CHECK(s != NULL);
	/* 0 on a new SQLite store; on a reused etcd what an earlier test left,
	 * never past this test's start */
	CHECK(store_compacted(s, &c0) == 0);
	CHECK(c0 >= 0 && c0 <= base);
	for (int i = 0; i < 6; i++)
		CHECK(put_str(s, i % 2 ? "/c/odd" : "/c/even", "v", &revs[i]) == 0);
	CHECK_EQ(revs[0], base + 1);
	CHECK_EQ(revs[5], base + 6);
	CHECK(store_compact(s, revs[2]) == 0);
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, revs[2]);
	CHECK_EQ(revision_of(s), revs[5] + compaction_writes());

	CHECK_EQ(store_events(s, "", revs[1], 0, &ev), -ESTORE_COMPACTED);
	CHECK_EQ(store_events(s, "/c/", base, 0, &ev), -ESTORE_COMPACTED);
	CHECK(store_events(s, "", revs[2], 0, &ev) == 0);	/* == compaction is fine */
	CHECK_EQ(ev.n, 3);		/* and a bookkeeping write is no event */
	CHECK_EQ(ev.events[0].kv.mod_rev, revs[3]);
	CHECK_EQ(ev.events[2].kv.mod_rev, revs[5]);
	store_event_list_free(&ev);
	CHECK_EQ(store_range_at(s, "", NULL, 0, revs[1], &l, NULL), -ESTORE_COMPACTED);
	CHECK(store_range_at(s, "", NULL, 0, revs[2], &l, &n) == 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(l.revision, revs[2]);
	store_kv_list_free(&l);

	now = revision_of(s);
	CHECK(store_compact(s, revs[1]) == 0);		/* older: no-op */
	CHECK(store_compact(s, revs[2]) == 0);		/* the same: no-op */
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, revs[2]);
	CHECK_EQ(revision_of(s), now);			/* no write either */
	CHECK_EQ(store_compact(s, now + 1), -EINVAL);	/* future */
	CHECK_EQ(revision_of(s), now);
	CHECK(store_compact(s, now) == 0);		/* everything */
	CHECK(store_compacted(s, &c) == 0);
	CHECK_EQ(c, now);
	CHECK_EQ(revision_of(s), now + compaction_writes());
	CHECK(store_events(s, "", now, 0, &ev) == 0);
	CHECK_EQ(ev.n, 0);
	store_event_list_free(&ev);

	/* a bookkeeping key is nowhere to be seen */
	CHECK_STR(range_keys(s, "", buf, sizeof(buf)), "/c/even /c/odd");
	CHECK(store_count(s, "", &n) == 0);
	CHECK_EQ(n, 2);
	CHECK(store_range_at(s, "", NULL, 0, 0, &l, &n) == 0);
	CHECK_EQ(l.n, 2);
	CHECK_EQ(n, 2);
	store_kv_list_free(&l);

	/* values stay; history continues */
	CHECK(store_get(s, "/c/odd", &kv, NULL) == 0);
	CHECK_EQ(kv.version, 3);
	CHECK_EQ(kv.mod_rev, revs[5]);
	store_kv_free(&kv);
	CHECK(put_str(s, "/c/odd", "w", &rev) == 0);
	CHECK_EQ(rev, now + compaction_writes() + 1);
	CHECK(store_events(s, "", now, 0, &ev) == 0);
	CHECK_EQ(ev.n, 1);
	CHECK_EQ(ev.events[0].kv.mod_rev, rev);
	CHECK_STR(ev.events[0].prev.value, "v");
	store_event_list_free(&ev);
	close_store(s);
}

/* ---- randomized cross-check against a naive model ---------------------------- */

/* The keys, values and transactions (at most 3 comparisons and 4 ops a
 * branch, values under 24 bytes) are well inside what etcd takes. */
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
	int64_t base;		/* the store's revision at open: the model's history starts after it */
	int64_t revision, compacted;
	struct model_event *events;
	size_t nevents, cap;
};

/* The oldest revision whose history the model knows and the store still
 * has: the compaction, or the open when that is later (before it, on etcd,
 * are earlier tests' revisions). */
static int64_t model_oldest(const struct model *m)
{
	return m->compacted > m->base ? m->compacted : m->base;
}

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
	int64_t oldest = model_oldest(m);
	int64_t after = oldest + (int64_t)pick((unsigned)(m->revision - oldest + 2));
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
		test_fail(__FILE__, __LINE__, "step %d: events %s after %" PRId64 " limit %zu: n %zu/%zu more %d/%d"
			  " revision %" PRId64 "/%" PRId64, step, prefix, after, limit, ev.n, got, ev.more, more,
			  ev.revision, m->revision);
	store_event_list_free(&ev);
}

/* store_range_at against the model's state at a random revision (its
 * events replayed up to it): keys, values, revisions, paging and count. */
static void model_check_range_at(struct store *s, const struct model *m, int step)
{
	const char *prefix = model_prefixes[pick(sizeof(model_prefixes) / sizeof(model_prefixes[0]))];
	const char *after = pick(3) ? NULL : model_keys[pick(MODEL_KEYS)];
	int64_t oldest = model_oldest(m);
	int64_t at = pick(4) ? oldest + (int64_t)pick((unsigned)(m->revision - oldest + 1)) : 0;
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

/* etcd refuses a branch that puts a key twice or puts a key one of the
 * branch's deletes covers ("duplicate key given in txn request"). */
static bool etcd_refuses(const struct store_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n && ops[i].type == STORE_OP_PUT; j++)
			if (j != i && (ops[j].type == STORE_OP_DELETE_PREFIX ? has_prefix(ops[i].key, ops[j].key)
									     : !strcmp(ops[i].key, ops[j].key)))
				return true;
	return false;
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
	m.base = m.revision = base;
	CHECK(store_compacted(s, &m.compacted) == 0);	/* an earlier test's, on etcd */
	CHECK(m.compacted <= base);
	for (int step = 0; step < steps && !test_failed(); step++) {
		struct store_cmp cmps[3];
		struct store_op success[4], failure[3];
		char values[7][MODEL_VALUE];
		struct store_txn t = { cmps, pick(4), success, pick(5), failure, pick(4) };
		struct store_txn_result res;
		bool holds, refused;
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
		do {
			for (size_t i = 0; i < t.nsuccess; i++)
				random_op(&success[i], values[i]);
			for (size_t i = 0; i < t.nfailure; i++)
				random_op(&failure[i], values[4 + i]);
			refused = on_etcd() && (etcd_refuses(success, t.nsuccess) || etcd_refuses(failure, t.nfailure));
			/* on etcd, mostly transactions it takes; the others
			 * must be -EINVAL and change nothing */
		} while (refused && pick(8));

		r = store_txn(s, &t, &res);
		if (refused && r != -EINVAL) {
			test_fail(__FILE__, __LINE__, "step %d: a branch touching a key twice: %d, want -EINVAL",
				  step, r);
			break;
		}
		holds = !refused && model_txn(&m, &t);
		if (!refused && (r != 0 || res.succeeded != holds || res.revision != m.revision)) {
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
			int64_t oldest = model_oldest(&m), c = -1;
			int64_t to = oldest + (int64_t)pick((unsigned)(m.revision - oldest + 1));

			if (store_compact(s, to) != 0) {
				test_fail(__FILE__, __LINE__, "step %d: compact %" PRId64, step, to);
				break;
			}
			if (to > m.compacted) {
				m.compacted = to;
				m.revision += compaction_writes();
			}
			if (store_compacted(s, &c) != 0 || c != m.compacted) {
				test_fail(__FILE__, __LINE__, "step %d: compacted %" PRId64 " after compact %" PRId64
					  ", want %" PRId64, step, c, to, m.compacted);
				break;
			}
		}
		if (step % 1000 == 999) {	/* and it all survives a reopen */
			close_store(s);
			s = open_again();
			if (!s)
				break;
		}
	}
	if (!test_failed())
		model_check_events(s, &m, steps);
	free(m.events);
	close_store(s);
}

/* ---- several processes ---------------------------------------------------------- */

#define RACERS 4

#define CHILD_DEADLINE_S 300	/* a child that takes longer is stuck: killed, the test fails */

/* Every child exited 0, within CHILD_DEADLINE_S of the call. */
static bool wait_children(pid_t *pids, int n)
{
	time_t deadline = time(NULL) + CHILD_DEADLINE_S;
	int left = n;
	bool ok = true;

	while (left > 0) {
		for (int i = 0; i < n; i++) {
			int status = 0;
			pid_t r;

			if (pids[i] <= 0)
				continue;
			r = waitpid(pids[i], &status, time(NULL) < deadline ? WNOHANG : 0);
			if (r == 0 && time(NULL) >= deadline) {
				test_fail(__FILE__, __LINE__, "child %d still runs after %d s: killed", (int)pids[i],
					  CHILD_DEADLINE_S);
				kill(pids[i], SIGKILL);
				continue;	/* reaped next round */
			}
			if (r == 0)
				continue;
			if (r != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				test_fail(__FILE__, __LINE__, "child %d: %s %d", (int)pids[i],
					  r == pids[i] && WIFEXITED(status) ? "exit" : "signal/status",
					  r == pids[i] && WIFEXITED(status) ? WEXITSTATUS(status) : status);
				ok = false;
			}
			pids[i] = 0;
			left--;
		}
		if (left > 0) {
			struct timespec t = { 0, 20 * 1000000L };

			nanosleep(&t, NULL);
		}
	}
	return ok;
}

/* A child's store, or NULL with why it could not open one on stderr (the
 * parent sees only the exit code) */
static struct store *child_open(const char *url, const char *who)
{
	char err[256];
	struct store *s = store_open(url, err, sizeof(err));

	if (!s)
		fprintf(stderr, "%s child %d: store_open: %s\n", who, (int)getpid(), err);
	return s;
}

/* read-modify-write "/counter" k times through compare-and-swap */
static int counter_child(const char *url, int k)
{
	struct store *s = child_open(url, "counter");

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
	close_store(s);
	return 0;
}

TEST(store_cas_counter_race)
{
	const int k = 150;
	struct store *s = open_tmp();
	struct store_event_list ev;
	pid_t pids[RACERS];
	struct store_kv kv;
	char url[URL_MAX];

	CHECK(s != NULL);
	CHECK(put_str(s, "/counter", "0", NULL) == 0);
	store_url(url, sizeof(url));
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
	CHECK_EQ(kv.mod_rev, base + RACERS * k + 1);
	store_kv_free(&kv);
	CHECK_EQ(revision_of(s), base + RACERS * k + 1);

	/* the history shows one increment per revision, none lost */
	CHECK(store_events(s, "/counter", base + 1, 0, &ev) == 0);
	CHECK_EQ(ev.n, RACERS * k);
	for (size_t i = 0; i < ev.n; i++) {
		CHECK_EQ(atoll(ev.events[i].kv.value), (long long)i + 1);
		CHECK_EQ(atoll(ev.events[i].prev.value), (long long)i);
	}
	store_event_list_free(&ev);
	close_store(s);
}

/* One thread of store_concurrent_calls: k increments of "/counter" by
 * compare-and-swap on the shared handle, and after each of its writes a
 * read of events that must hold it (read-your-writes is per thread). */
struct racer {
	struct store *s;
	int k;
	int err;		/* 0, or which step failed */
	int unseen;		/* own writes missing from the events read after them */
};

static void *racer_run(void *arg)
{
	struct racer *r = arg;

	for (int finished = 0; finished < r->k && !r->err;) {
		struct store_kv kv;
		char next[32];

		if (store_get(r->s, "/counter", &kv, NULL) != 0) {
			r->err = 1;
			break;
		}
		struct store_cmp c = { "/counter", STORE_CMP_MOD_REV, STORE_CMP_EQ, kv.mod_rev };
		struct store_op op = { STORE_OP_PUT, "/counter", next,
				       (size_t)snprintf(next, sizeof(next), "%lld", atoll(kv.value) + 1) };
		struct store_txn t = { &c, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;
		struct store_event_list ev = { 0 };

		store_kv_free(&kv);
		if (store_txn(r->s, &t, &res) != 0) {
			r->err = 2;
			break;
		}
		if (!res.succeeded)
			continue;
		finished++;
		if (store_events(r->s, "/counter", res.revision - 1, 0, &ev) != 0) {
			r->err = 3;
			break;
		}
		if (!ev.n || ev.events[0].kv.mod_rev != res.revision)
			r->unseen++;
		store_event_list_free(&ev);
	}
	return NULL;
}

/* A back-end that takes calls from several threads at once
 * (store_concurrent: etcd) keeps every one whole on one handle: racing
 * compare-and-swap increments lose none, and each thread reads its own
 * writes back from the events.  SQLite says it does not, and is not
 * called so. */
TEST(store_concurrent_calls)
{
	enum { THREADS = 4, K = 60 };
	struct store *s = open_tmp();
	struct racer r[THREADS];
	pthread_t t[THREADS];
	struct store_kv kv;

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(store_concurrent(s), on_etcd());
	if (!store_concurrent(s)) {
		close_store(s);
		return;
	}
	CHECK(put_str(s, "/counter", "0", NULL) == 0);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct racer){ .s = s, .k = K };
		CHECK(pthread_create(&t[i], NULL, racer_run, &r[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(r[i].err, 0);
		CHECK_EQ(r[i].unseen, 0);
	}
	CHECK(store_get(s, "/counter", &kv, NULL) == 0);
	CHECK_EQ(atoll(kv.value), THREADS * K);
	CHECK_EQ(kv.version, THREADS * K + 1);
	store_kv_free(&kv);
	close_store(s);
}

/* claim `claims` slots, each time the lowest free one, via create_rev == 0 */
static int claim_child(const char *url, int id, int claims)
{
	char owner[16];
	struct store *s = child_open(url, "claim");

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
	close_store(s);
	return 0;
}

TEST(store_slot_claim_race)
{
	const int claims = 40;
	struct store *s = open_tmp();
	int per_owner[RACERS] = { 0 };
	struct store_kv_list l;
	pid_t pids[RACERS];
	char url[URL_MAX];

	CHECK(s != NULL);
	store_url(url, sizeof(url));
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
	CHECK_EQ(revision_of(s), base + RACERS * claims);
	store_kv_list_free(&l);
	close_store(s);
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
	struct store *s = child_open(url, "crash");

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
	const int rounds = 6;	/* odd rounds in group commit (SQLite), never flushed */
	char url[URL_MAX], path[300];
	struct store *s = open_tmp();
	long first = 1;

	CHECK(s != NULL);
	close_store(s);
	rng_state = test_seed() ^ 0xc4a54;
	store_url(url, sizeof(url));
	for (int round = 0; round < rounds; round++) {
		struct store_kv_list l;
		long reported = 0, i, committed;
		struct timespec pause;
		int fds[2], status;
		pid_t pid;

		CHECK(pipe(fds) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			/* etcd has no group commit: it acknowledges durable writes */
			_exit(crash_child(url, first, fds[1], round % 2 == 1 && !on_etcd()));
		}
		close(fds[1]);
		/* wait for the first commit, then kill at a random moment */
		{
			struct pollfd p = { .fd = fds[0], .events = POLLIN };

			if (poll(&p, 1, CHILD_DEADLINE_S * 1000) != 1) {
				test_fail(__FILE__, __LINE__, "round %d: no commit in %d s", round, CHILD_DEADLINE_S);
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				close(fds[0]);
				return;
			}
		}
		CHECK(read(fds[0], &reported, sizeof(reported)) == sizeof(reported));
		pause = (struct timespec){ 0, (long)(5 + pick(120)) * 1000000L };
		nanosleep(&pause, NULL);
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		while (read(fds[0], &i, sizeof(i)) == sizeof(i))
			reported = i;
		close(fds[0]);

		/* one read, one snapshot: on etcd the transaction the child had
		 * sent may still land after the kill, but never in part */
		s = open_again();
		CHECK(s != NULL);
		if (store_range(s, "/crash/", NULL, 0, &l) != 0) {
			test_fail(__FILE__, __LINE__, "range /crash/ after the kill");
			close_store(s);
			return;
		}
		/* the last reported commit, or the one after it when the kill
		 * came between commit and report */
		if (l.n == 3) {
			committed = atol(l.kvs[0].value);
			if (strcmp(l.kvs[1].value, l.kvs[0].value) || strcmp(l.kvs[2].value, l.kvs[0].value) ||
			    l.kvs[1].mod_rev != l.kvs[0].mod_rev || l.kvs[2].mod_rev != l.kvs[0].mod_rev ||
			    l.revision != l.kvs[0].mod_rev || crash_txn_deletes(committed) ||
			    !(committed == reported || committed == reported + 1))
				test_fail(__FILE__, __LINE__,
					  "round %d: after commit %ld: %s=%s@%" PRId64 " %s=%s@%" PRId64 " %s=%s@%" PRId64
					  " at revision %" PRId64, round, reported,
					  l.kvs[0].key, l.kvs[0].value, l.kvs[0].mod_rev,
					  l.kvs[1].key, l.kvs[1].value, l.kvs[1].mod_rev,
					  l.kvs[2].key, l.kvs[2].value, l.kvs[2].mod_rev, l.revision);
		} else if (l.n != 0 || !(crash_txn_deletes(reported) || crash_txn_deletes(reported + 1))) {
			test_fail(__FILE__, __LINE__, "round %d: after commit %ld: %zu of the 3 keys", round,
				  reported, l.n);
		}
		store_kv_list_free(&l);
		close_store(s);
		if (test_failed())
			return;

		if (!on_etcd()) {	/* SQLite's file is whole */
			sqlite3 *db = NULL;
			sqlite3_stmt *st = NULL;

			snprintf(path, sizeof(path), "%s/store.db", test_tmpdir());
			CHECK(sqlite3_open(path, &db) == SQLITE_OK);
			CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
			CHECK(sqlite3_step(st) == SQLITE_ROW);
			if (strcmp((const char *)sqlite3_column_text(st, 0), "ok"))
				test_fail(__FILE__, __LINE__, "integrity_check: %s",
					  sqlite3_column_text(st, 0));
			sqlite3_finalize(st);
			sqlite3_close(db);
		}
		if (test_failed())
			return;
		first = reported + 2;	/* unique values in the next round */
	}
}

/* ---- group commit ------------------------------------------------------- */

/* Group commit itself is tested in store_sqlite_test.c.  Here: SQLite
 * has it, etcd says -ENOTSUP (every write it acknowledges is durable
 * already), and either way store_commits / store_sync stay consistent. */
TEST(store_defer_sync_per_backend)
{
	struct store *s = open_tmp();
	int64_t rev;

	CHECK(s != NULL);
	CHECK_EQ(store_defer_sync(s), on_etcd() ? -ENOTSUP : 0);
	CHECK_EQ(put_str(s, "/d", "1", &rev), 0);
	CHECK_EQ(rev, base + 1);
	CHECK_EQ(store_commits(s), on_etcd() ? 0 : 1);
	CHECK_EQ(store_sync(s, store_commits(s)), 0);
	close_store(s);
}
