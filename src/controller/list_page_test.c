/*
 * list_page_test.c — lists in pages on a real SQLite store: 25 pods in
 * pages of 10 with remainingItemCount, every page read at the first one's
 * revision whatever is written between them, selectors with limits (the
 * pages together are the filtered list), a continue token whose revision
 * is compacted (410), tokens this server did not make (400), a
 * resourceVersion from the future (504), the query's own checks; and a
 * randomized run: every way of paging a random collection gives the
 * naive filtered list of the snapshot.
 */
#include "controller/registry_fixture.h"
#include "controller/list_page.h"
#include "controller/list_query.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Query parameters for list_query_parse: name=value pairs, NULL-terminated. */
static const char *param(void *ctx, const char *name)
{
	const char *const *kv = ctx;

	for (; kv[0]; kv += 2)
		if (!strcmp(kv[0], name))
			return kv[1];
	return NULL;
}

static int query(struct list_query *q, const char *const *kv, struct status *st)
{
	return list_query_parse(q, kind_get(KIND_POD), false, param, (void *)kv, st);
}

static int64_t put_pod(struct store *s, const char *ns, int i, const char *app)
{
	char key[128], name[32], *v;
	json_t *o;
	int64_t rev = -1;

	snprintf(name, sizeof(name), "pod-%02d", i);
	snprintf(key, sizeof(key), OBJ_PREFIX "pods/%s/%s", ns, name);
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
		      "namespace", ns, "labels", "app", app);
	v = json_dumps(o, JSON_COMPACT);
	if (store_put(s, key, v, strlen(v), &rev))
		rev = -1;
	free(v);
	json_decref(o);
	return rev;
}

/* The names of a page, joined by ',' */
static const char *page_names(const struct list_page *p, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < p->items.n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", strrchr(p->items.kvs[i].key, '/') + 1);
	return buf;
}

TEST(list_pages_of_ten)
{
	struct store *s = fx_store("p.db");
	struct list_query q;
	struct list_page p;
	struct status st = { 0 };
	char names[1024], cont[LIST_CONTINUE_MAX + 1], key[128];
	int64_t rev = 0, list_rev;

	CHECK(s);
	for (int i = 0; i < 25; i++)
		CHECK((rev = put_pod(s, "red", i, i % 2 ? "web" : "db")) > 0);
	CHECK(put_pod(s, "blue", 0, "web") > 0);	/* another namespace */

	CHECK_EQ(query(&q, (const char *const[]){ "limit", "10", NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), 0);
	CHECK_EQ(p.items.n, 10);
	CHECK_STR(page_names(&p, names, sizeof(names)), "pod-00,pod-01,pod-02,pod-03,pod-04,pod-05,pod-06,pod-07,pod-08,pod-09");
	CHECK(p.cont != NULL);
	CHECK_EQ(p.remaining, 15);
	list_rev = p.items.revision;
	snprintf(cont, sizeof(cont), "%s", p.cont);
	list_page_free(&p);
	list_query_free(&q);

	/* between the pages: pod-12 deleted, pod-99 created, pod-15 changed */
	snprintf(key, sizeof(key), OBJ_PREFIX "pods/red/pod-12");
	CHECK(store_delete(s, key, NULL) == 0);
	CHECK(put_pod(s, "red", 99, "web") > 0);
	CHECK(put_pod(s, "red", 15, "changed") > 0);

	CHECK_EQ(query(&q, (const char *const[]){ "limit", "10", "continue", cont, NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), 0);
	CHECK_STR(page_names(&p, names, sizeof(names)), "pod-10,pod-11,pod-12,pod-13,pod-14,pod-15,pod-16,pod-17,pod-18,pod-19");
	CHECK_EQ(p.items.revision, list_rev);		/* the same snapshot */
	CHECK(strstr(p.items.kvs[5].value, "\"web\""));	/* pod-15 as it was */
	CHECK_EQ(p.remaining, 5);
	snprintf(cont, sizeof(cont), "%s", p.cont);
	list_page_free(&p);
	list_query_free(&q);

	CHECK_EQ(query(&q, (const char *const[]){ "limit", "10", "continue", cont, NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), 0);
	CHECK_STR(page_names(&p, names, sizeof(names)), "pod-20,pod-21,pod-22,pod-23,pod-24");
	CHECK(p.cont == NULL);			/* the last page */
	CHECK_EQ(p.remaining, -1);
	list_page_free(&p);
	list_query_free(&q);

	/* without a limit: everything now, at the store's revision */
	CHECK_EQ(query(&q, (const char *const[]){ NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), 0);
	CHECK_EQ(p.items.n, 25);
	CHECK(p.cont == NULL);
	list_page_free(&p);
	list_query_free(&q);
	store_close(s);
}

TEST(list_pages_with_selectors)
{
	struct store *s = fx_store("p.db");
	struct list_query q;
	struct list_page p;
	struct status st = { 0 };
	char names[1024], all[4096] = "", cont[LIST_CONTINUE_MAX + 1] = "";
	int pages = 0;

	CHECK(s);
	for (int i = 0; i < 25; i++)
		CHECK(put_pod(s, i < 12 ? "red" : "blue", i, i % 3 ? "db" : "web") > 0);
	do {
		const char *const kv[] = { "limit", "3", "labelSelector", "app=web", "continue", cont, NULL };

		CHECK_EQ(query(&q, kv, &st), 0);
		CHECK_EQ(list_page_read(s, kind_get(KIND_POD), NULL, &q, &p, &st), 0);
		CHECK(p.items.n <= 3);
		CHECK_EQ(p.remaining, -1);	/* unknown with a selector */
		if (p.items.n)
			snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", all[0] ? "," : "",
				 page_names(&p, names, sizeof(names)));
		snprintf(cont, sizeof(cont), "%s", p.cont ? p.cont : "");
		list_page_free(&p);
		list_query_free(&q);
		pages++;
	} while (cont[0] && pages < 20);
	/* blue's (12..24) before red's (0..11), in key order */
	CHECK_STR(all, "pod-12,pod-15,pod-18,pod-21,pod-24,pod-00,pod-03,pod-06,pod-09");
	CHECK_EQ(pages, 4);	/* the third is full with keys after it: a fourth, empty one ends the list */

	CHECK_EQ(query(&q, (const char *const[]){ "fieldSelector", "metadata.name=pod-03", NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), NULL, &q, &p, &st), 0);
	CHECK_STR(page_names(&p, names, sizeof(names)), "pod-03");
	list_page_free(&p);
	list_query_free(&q);
	store_close(s);
}

TEST(list_page_refusals)
{
	struct store *s = fx_store("p.db");
	struct list_query q;
	struct list_page p;
	struct status st = { 0 };
	char cont[LIST_CONTINUE_MAX + 1];
	int64_t rev = 0;
	static const char *const bad_tokens[] = {
		"!!!", "abc", "eyJ2IjoxfQ",	/* {"v":1}: fields missing */
		"eyJ2IjoxLCJydiI6MCwic3RhcnQiOiIiLCJuIjowLCJ0b3RhbCI6LTF9",	/* rv 0 */
		"eyJ2IjoyLCJydiI6MSwic3RhcnQiOiIiLCJuIjowLCJ0b3RhbCI6LTF9",	/* v 2 */
	};

	CHECK(s);
	for (int i = 0; i < 6; i++)
		CHECK((rev = put_pod(s, "red", i, "web")) > 0);
	CHECK_EQ(query(&q, (const char *const[]){ "limit", "2", NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), 0);
	snprintf(cont, sizeof(cont), "%s", p.cont);
	list_page_free(&p);
	list_query_free(&q);

	for (size_t i = 0; i < sizeof(bad_tokens) / sizeof(bad_tokens[0]); i++) {
		CHECK_EQ(query(&q, (const char *const[]){ "continue", bad_tokens[i], NULL }, &st), 0);
		CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), -1);
		CHECK_EQ(st.code, 400);
		list_query_free(&q);
	}
	/* a resourceVersion from the future: 504 Timeout, retry after 1 s */
	{
		char future[32];

		snprintf(future, sizeof(future), "%" PRId64, rev + 5);
		CHECK_EQ(query(&q, (const char *const[]){ "resourceVersion", future, NULL }, &st), 0);
		CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), -1);
		CHECK_EQ(st.code, 504);
		CHECK_STR(st.reason, "Timeout");
		CHECK_EQ(st.retry_after, 1);
		CHECK_CONTAINS(st.message, "Too large resource version");
		list_query_free(&q);
	}
	/* the token's revision compacted: 410 Expired */
	for (int i = 0; i < 3; i++)
		CHECK((rev = put_pod(s, "red", i, "db")) > 0);
	CHECK(store_compact(s, rev) == 0);
	CHECK_EQ(query(&q, (const char *const[]){ "limit", "2", "continue", cont, NULL }, &st), 0);
	CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "red", &q, &p, &st), -1);
	CHECK_EQ(st.code, 410);
	CHECK_STR(st.reason, "Expired");
	list_query_free(&q);

	/* the query's own checks */
	CHECK_EQ(query(&q, (const char *const[]){ "limit", "-1", NULL }, &st), -1);
	CHECK_EQ(st.code, 400);
	CHECK_EQ(query(&q, (const char *const[]){ "limit", "ten", NULL }, &st), -1);
	CHECK_EQ(query(&q, (const char *const[]){ "resourceVersion", "5", "continue", cont, NULL }, &st), -1);
	CHECK_CONTAINS(st.message, "continue");
	CHECK_EQ(query(&q, (const char *const[]){ "labelSelector", "a in (b", NULL }, &st), -1);
	CHECK_CONTAINS(st.message, "labelSelector 'a in (b'");
	CHECK_EQ(query(&q, (const char *const[]){ "fieldSelector", "spec.host=x", NULL }, &st), -1);
	CHECK_CONTAINS(st.message, "field label not supported: spec.host");
	CHECK_EQ(query(&q, (const char *const[]){ "limit", "99999999999999999999999", NULL }, &st), 0);
	list_query_free(&q);
	CHECK_EQ(list_query_parse(&q, kind_get(KIND_POD), true, param,
				  (void *)(const char *const[]){ "timeoutSeconds", "99999999999999999999", NULL }, &st), 0);
	CHECK_EQ(q.timeout, WATCH_TIMEOUT_MAX);
	list_query_free(&q);
	CHECK_EQ(list_query_parse(&q, kind_get(KIND_POD), true, param,
				  (void *)(const char *const[]){ "timeoutSeconds", "-5", NULL }, &st), -1);
	CHECK_EQ(list_query_parse(&q, kind_get(KIND_POD), true, param,
				  (void *)(const char *const[]){ "allowWatchBookmarks", "yes", NULL }, &st), -1);
	CHECK_EQ(list_query_parse(&q, kind_get(KIND_POD), true, param,
				  (void *)(const char *const[]){ "allowWatchBookmarks", "true", "timeoutSeconds", "30",
								 NULL }, &st), 0);
	CHECK(q.bookmarks);
	CHECK_EQ(q.timeout, 30);
	list_query_free(&q);
	store_close(s);
}

TEST(list_pages_random_against_snapshot)
{
	struct store *s = fx_store("p.db");
	uint64_t st_rnd = test_seed() | 1;
	static const char *const apps[] = { "web", "db", "cache" };
	static const char *const selectors[] = { "", "app=web", "app!=db", "app in (web,cache)" };

	CHECK(s);
	for (int round = 0; round < 40 && !test_failed(); round++) {
		struct status st = { 0 };
		int n = (int)test_rnd(&st_rnd, 40), sel = (int)test_rnd(&st_rnd, 4);
		char limit[16], cont[LIST_CONTINUE_MAX + 1] = "", want[8192] = "", got[8192] = "", names[4096];
		struct list_query q;
		struct list_page p;
		int64_t first_rev = -1;

		for (int i = 0; i < n; i++)
			CHECK(put_pod(s, "ns", (int)test_rnd(&st_rnd, 60), apps[test_rnd(&st_rnd, 3)]) > 0);
		/* the reference: the whole filtered list at once */
		CHECK_EQ(query(&q, (const char *const[]){ "labelSelector", selectors[sel], NULL }, &st), 0);
		CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "ns", &q, &p, &st), 0);
		page_names(&p, want, sizeof(want));
		list_page_free(&p);
		list_query_free(&q);
		snprintf(limit, sizeof(limit), "%u", 1 + test_rnd(&st_rnd, 12));
		for (int pages = 0; pages < 100; pages++) {
			const char *const kv[] = { "limit", limit, "labelSelector", selectors[sel], "continue", cont, NULL };

			CHECK_EQ(query(&q, kv, &st), 0);
			CHECK_EQ(list_page_read(s, kind_get(KIND_POD), "ns", &q, &p, &st), 0);
			if (first_rev < 0)
				first_rev = p.items.revision;
			CHECK_EQ(p.items.revision, first_rev);
			if (p.items.n)
				snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", got[0] ? "," : "",
					 page_names(&p, names, sizeof(names)));
			snprintf(cont, sizeof(cont), "%s", p.cont ? p.cont : "");
			list_page_free(&p);
			list_query_free(&q);
			if (!cont[0])
				break;
			/* writes between pages change nothing of this list */
			CHECK(put_pod(s, "ns", (int)test_rnd(&st_rnd, 60), apps[test_rnd(&st_rnd, 3)]) > 0);
		}
		if (strcmp(got, want))
			test_fail(__FILE__, __LINE__, "limit %s, selector '%s': got %s, want %s", limit, selectors[sel], got,
				  want);
	}
	store_close(s);
}
