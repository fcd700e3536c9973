/*
 * list_items_test.c — the item walk against jansson: random lists (keys
 * in any order, white space anywhere between tokens, strings holding
 * brackets, quotes and escapes, extra keys, nesting) give exactly the
 * items and metadata jansson reads from the whole text; then the same
 * texts damaged at random (a byte removed, inserted or changed, the text
 * cut short): whenever jansson still reads a list from one, the walk
 * either declines (-EINVAL: the caller parses whole) or gives the same
 * items — it never stops halfway through a list jansson reads; and it
 * never reads out of bounds (ASan).
 */
#include "lib/list_items.h"
#include "test.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
	char *s;
	size_t n, cap;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->n + n + 1 > t->cap) {
		t->cap = (t->n + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
	}
	memcpy(t->s + t->n, s, n + 1);
	t->n += n;
}

static void ws(struct text *t, uint64_t *st)
{
	static const char *const w[] = { "", "", "", " ", "\n", "\t ", "\r\n  " };

	put(t, w[test_rnd(st, 7)]);
}

static void string(struct text *t, uint64_t *st)
{
	static const char *const parts[] = { "a", "svc", "{", "}", "[", "]", ",", ":", " ", "\\\"", "\\\\",
					     "\\n", "\\u0041", "\\/", "\xc3\xa9", "items", "metadata" };
	int n = (int)test_rnd(st, 6);

	put(t, "\"");
	for (int i = 0; i < n; i++)
		put(t, parts[test_rnd(st, sizeof(parts) / sizeof(parts[0]))]);
	put(t, "\"");
}

static void value(struct text *t, uint64_t *st, int depth)
{
	static const char *const scalars[] = { "0", "-12", "3.5e2", "42", "true", "false", "null" };
	unsigned k = depth > 3 ? 2 + test_rnd(st, 2) : test_rnd(st, 4);

	if (k == 0 || k == 1) {
		int n = (int)test_rnd(st, 4);

		put(t, k == 0 ? "{" : "[");
		for (int i = 0; i < n; i++) {
			ws(t, st);
			if (i)
				put(t, ",");
			ws(t, st);
			if (k == 0) {
				char key[16];

				snprintf(key, sizeof(key), "\"k%d\"", i);	/* distinct keys */
				put(t, key);
				ws(t, st);
				put(t, ":");
				ws(t, st);
			}
			value(t, st, depth + 1);
		}
		ws(t, st);
		put(t, k == 0 ? "}" : "]");
	} else if (k == 2) {
		string(t, st);
	} else {
		put(t, scalars[test_rnd(st, 7)]);
	}
}

/* A list: apiVersion, kind, metadata, items and an extra key, in random order. */
static void list(struct text *t, uint64_t *st, bool with_items)
{
	int order[5] = { 0, 1, 2, 3, 4 }, n = with_items ? 5 : 4;

	for (int i = n - 1; i > 0; i--) {
		int j = (int)test_rnd(st, (uint32_t)i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	ws(t, st);
	put(t, "{");
	for (int i = 0; i < n; i++) {
		int nitems = (int)test_rnd(st, 6);

		ws(t, st);
		if (i)
			put(t, ",");
		ws(t, st);
		switch (with_items ? order[i] : order[i] == 3 ? 4 : order[i]) {
		case 0: put(t, "\"apiVersion\":\"v1\""); break;
		case 1: put(t, "\"kind\":"); ws(t, st); string(t, st); break;
		case 2: put(t, "\"metadata\""); ws(t, st); put(t, ":"); ws(t, st);
			put(t, "{\"resourceVersion\":"); ws(t, st); put(t, "\"123\"}"); break;
		case 3:
			put(t, "\"items\":");
			ws(t, st);
			put(t, "[");
			for (int j = 0; j < nitems; j++) {
				ws(t, st);
				if (j)
					put(t, ",");
				ws(t, st);
				value(t, st, 1);
			}
			ws(t, st);
			put(t, "]");
			break;
		default: put(t, "\"extra\":"); value(t, st, 1); break;
		}
	}
	ws(t, st);
	put(t, "}");
	ws(t, st);
}

/* Walk text; compare with jansson's reading of it.  Returns 1 when the
 * walk gave the items, 0 when it declined; fails the test otherwise. */
static int compare(const char *text, size_t len, bool must_read)
{
	json_t *whole = json_loadb(text, len, 0, NULL), *items = json_object_get(whole, "items");
	bool reads = json_is_object(whole) && (!items || json_is_array(items));
	struct list_items it;
	const char *item;
	size_t ilen, i = 0;
	int rc, got = 0;

	if (must_read && !reads)
		test_fail(__FILE__, __LINE__, "generator: jansson does not read %.*s", (int)len, text);
	if (list_items_find(text, len, &it) < 0) {
		if (must_read)
			test_fail(__FILE__, __LINE__, "declined a valid list: %.*s", (int)len, text);
		json_decref(whole);
		return 0;
	}
	if (reads && it.meta) {
		json_t *m = json_loadb(it.meta, it.meta_len, 0, NULL);

		if (!json_equal(m, json_object_get(whole, "metadata")))
			test_fail(__FILE__, __LINE__, "metadata differs: %.*s", (int)len, text);
		json_decref(m);
	}
	while ((rc = list_items_next(&it, &item, &ilen)) == 1) {
		json_t *x = json_loadb(item, ilen, JSON_DECODE_ANY, NULL);

		if (reads && (i >= json_array_size(items) || !json_equal(x, json_array_get(items, i))))
			test_fail(__FILE__, __LINE__, "item %zu differs: %.*s", i, (int)len, text);
		json_decref(x);
		i++;
		got = 1;
	}
	if (reads && rc < 0)
		test_fail(__FILE__, __LINE__, "stopped at item %zu of a list jansson reads: %.*s", i, (int)len, text);
	if (reads && rc == 0 && i != json_array_size(items))
		test_fail(__FILE__, __LINE__, "%zu items, jansson %zu: %.*s", i, json_array_size(items), (int)len, text);
	json_decref(whole);
	return got || rc == 0;
}

TEST(list_items_against_jansson)
{
	uint64_t st = test_seed() | 1;
	struct text t = { 0 };

	for (int round = 0; round < 3000 && !test_failed(); round++) {
		t.n = 0;
		list(&t, &st, test_rnd(&st, 8) != 0);
		(void)compare(t.s, t.n, true);
	}
	free(t.s);
}

TEST(list_items_damaged)
{
	static const char bytes[] = "{}[]\",:\\ a1";
	uint64_t st = test_seed() | 1;
	struct text t = { 0 };

	for (int round = 0; round < 20000 && !test_failed(); round++) {
		char *copy;
		size_t n, at;

		t.n = 0;
		list(&t, &st, true);
		n = t.n;
		copy = malloc(n + 1);	/* exactly the text: ASan sees a read past it */
		memcpy(copy, t.s, n);
		at = test_rnd(&st, (uint32_t)n);
		switch (test_rnd(&st, 4)) {
		case 0: memmove(copy + at, copy + at + 1, n - at - 1); n--; break;
		case 1: copy[at] = bytes[test_rnd(&st, sizeof(bytes) - 1)]; break;
		case 2: n = at; break;
		default:
			copy = realloc(copy, n + 2);
			memmove(copy + at + 1, copy + at, n - at);
			copy[at] = bytes[test_rnd(&st, sizeof(bytes) - 1)];
			n++;
		}
		(void)compare(copy, n, false);
		free(copy);
	}
	free(t.s);
}

TEST(list_items_shapes)
{
	struct list_items it;
	const char *item;
	size_t len;

	CHECK_EQ(list_items_find("{\"items\":[]}", 12, &it), 0);
	CHECK_EQ(list_items_next(&it, &item, &len), 0);
	CHECK_EQ(list_items_find("{\"kind\":\"List\"}", 15, &it), 0);	/* no items: none */
	CHECK_EQ(list_items_next(&it, &item, &len), 0);
	CHECK_EQ(list_items_find("{\"it\\u0065ms\":[1]}", 18, &it), -EINVAL);	/* it might be "items" */
	CHECK_EQ(list_items_find("{\"items\":[1],\"items\":[2]}", 25, &it), -EINVAL);
	CHECK_EQ(list_items_find("{\"items\":{}}", 12, &it), -EINVAL);
	CHECK_EQ(list_items_find("{\"items\":[1]} x", 15, &it), -EINVAL);
	CHECK_EQ(list_items_find("[1]", 3, &it), -EINVAL);
	CHECK_EQ(list_items_find("{\"items\":[1,]}", 14, &it), 0);
	CHECK_EQ(list_items_next(&it, &item, &len), 1);
	CHECK_EQ(list_items_next(&it, &item, &len), -EINVAL);	/* a trailing comma */
	CHECK_EQ(list_items_find("{\"items\":[\"]\",{\"a\":\"}\"}]}", 25, &it), 0);
	CHECK_EQ(list_items_next(&it, &item, &len), 1);
	CHECK(len == 3 && memcmp(item, "\"]\"", 3) == 0);
	CHECK_EQ(list_items_next(&it, &item, &len), 1);
	CHECK(len == 9 && memcmp(item, "{\"a\":\"}\"}", 9) == 0);
	CHECK_EQ(list_items_next(&it, &item, &len), 0);
}
