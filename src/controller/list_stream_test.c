/*
 * list_stream_test.c — the streamed list against the naive reference (the
 * whole list object built with obj_from_kv and dumped at once, as the API
 * did before it streamed), over random snapshots read in random piece
 * sizes: every kind, empty lists, values that are not JSON, escapes and
 * non-ASCII text, objects with and without metadata.
 */
#include "controller/controller.h"
#include "controller/list_stream.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state;

static uint64_t rnd(void)
{
	state = state * 6364136223846793005ull + 1442695040888963407ull;
	return state >> 11;
}

/* A stored value: usually an object with metadata, sometimes not JSON. */
static char *random_value(unsigned i)
{
	static const char *texts[] = { "plain", "quote \" and \\ backslash", "tab\tnewline\n", "ünïcødé ✓",
				       "", "{\"not\":\"an object key\"}" };
	json_t *o;
	char *s;

	switch (rnd() % 8) {
	case 0:
		return strdup("{not json");
	case 1:
		o = json_pack("{s:s, s:i}", "kind", "Thing", "n", (int)i);	/* no metadata */
		break;
	default:
		o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:[i, b, n, f]}}", "apiVersion", "v1", "kind",
			      "Pod", "metadata", "name", texts[rnd() % 6], "namespace", "default", "annotations",
			      "a", texts[rnd() % 6], "spec", "x", (int)(rnd() % 1000), (int)(rnd() % 2), 0.5);
	}
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static void random_snapshot(struct store_kv_list *l, size_t n)
{
	memset(l, 0, sizeof(*l));
	l->kvs = calloc(n ? n : 1, sizeof(*l->kvs));
	l->n = n;
	l->revision = (int64_t)(rnd() % 100000);
	for (size_t i = 0; i < n; i++) {
		char key[64];
		snprintf(key, sizeof(key), "/weft/obj/pods/default/p-%zu", i);
		l->kvs[i].key = strdup(key);
		l->kvs[i].value = random_value((unsigned)i);
		l->kvs[i].value_len = strlen(l->kvs[i].value);
		l->kvs[i].mod_rev = (int64_t)(rnd() % 100000) + 1;
		l->kvs[i].create_rev = 1;
		l->kvs[i].version = 1;
	}
}

/* What the API answered before it streamed: the whole object, dumped. */
static char *reference(const struct kind_info *k, const struct store_kv_list *l, const char *cont, int64_t remaining)
{
	json_t *items = json_array(), *list;
	char kind[80], rv[24], *s, *line;

	for (size_t i = 0; i < l->n; i++) {
		json_t *o = obj_from_kv(&l->kvs[i]);
		if (o)
			json_array_append_new(items, o);
	}
	snprintf(kind, sizeof(kind), "%sList", k->kind);
	snprintf(rv, sizeof(rv), "%" PRId64, l->revision);
	list = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", k->api_version, "kind", kind, "metadata",
			 "resourceVersion", rv);
	if (cont)
		json_object_set_new(json_object_get(list, "metadata"), "continue", json_string(cont));
	if (remaining >= 0)
		json_object_set_new(json_object_get(list, "metadata"), "remainingItemCount", json_integer(remaining));
	json_object_set_new(list, "items", items);
	s = json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(list);
	line = malloc(strlen(s) + 2);
	sprintf(line, "%s\n", s);
	free(s);
	return line;
}

/* Read the whole stream in pieces of 1..max_piece bytes. */
static char *read_all(struct list_stream *ls, size_t max_piece, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *out = malloc(cap);
	ssize_t r;

	for (;;) {
		size_t want = 1 + rnd() % max_piece;
		if (n + want + 1 > cap) {
			while (n + want + 1 > cap)
				cap *= 2;
			out = realloc(out, cap);
		}
		r = list_stream_read(ls, out + n, want);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	out[n] = 0;
	*len = n;
	return r < 0 ? (free(out), NULL) : out;
}

TEST(list_stream_empty)
{
	struct store_kv_list l = { .revision = 7 };
	struct list_stream *ls = list_stream_new(kind_get(KIND_POD), &l, NULL, -1);
	char buf[256];
	ssize_t n;

	CHECK(ls != NULL);
	n = list_stream_read(ls, buf, sizeof(buf) - 1);
	CHECK(n > 0);
	buf[n] = 0;
	CHECK_STR(buf, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[]}\n");
	CHECK_EQ(list_stream_read(ls, buf, sizeof(buf)), 0);
	CHECK_EQ(list_stream_read(ls, buf, sizeof(buf)), 0);	/* stays at the end */
	list_stream_free(ls);
	list_stream_free(NULL);
}

TEST(list_stream_random_against_reference)
{
	state = test_seed();
	for (int round = 0; round < 300 && !test_failed(); round++) {
		const struct kind_info *k = kind_get((enum kind_id)(rnd() % KIND_COUNT));
		size_t n = rnd() % 4 == 0 ? 0 : rnd() % 60, got_len = 0;
		struct store_kv_list l;
		struct list_stream *ls;
		char *want, *got;
		/* a page of a longer list, sometimes */
		const char *cont = rnd() % 2 ? "eyJ2IjoxfQ" : NULL;
		int64_t remaining = cont && rnd() % 2 ? (int64_t)(rnd() % 1000) : -1;

		random_snapshot(&l, n);
		want = reference(k, &l, cont, remaining);
		ls = list_stream_new(k, &l, cont, remaining);
		CHECK(ls != NULL);
		CHECK_EQ(l.n, 0);	/* taken over */
		got = read_all(ls, rnd() % 2 ? 7 : 5000, &got_len);
		list_stream_free(ls);
		if (!got || strcmp(got, want) != 0) {
			test_fail(__FILE__, __LINE__, "round %d (%s, %zu items): got %.200s want %.200s", round,
				  k->kind, n, got ? got : "(error)", want);
		}
		CHECK_EQ(got_len, strlen(want));
		free(got);
		free(want);
	}
}

TEST(list_stream_frees_before_the_end)
{
	/* a stream dropped half-way (the client went away) frees what is left */
	struct store_kv_list l;
	struct list_stream *ls;
	char buf[100];

	state = test_seed() + 1;
	random_snapshot(&l, 50);
	ls = list_stream_new(kind_get(KIND_NODE), &l, NULL, -1);
	CHECK(ls != NULL);
	CHECK(list_stream_read(ls, buf, sizeof(buf)) > 0);
	list_stream_free(ls);	/* LeakSanitizer checks the rest */
}
