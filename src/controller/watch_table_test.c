/*
 * watch_table_test.c — watch events as Tables, read from a real hub on a
 * real store: the column definitions on the first event only, a row's
 * object as includeObject asks, lines handed out whole through a buffer
 * smaller than a line, the plain stream unchanged beside a Table one, and
 * the BOOKMARK's shape.
 */
#include "controller/registry_fixture.h"
#include "controller/watch_table.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_wake(void *arg)
{
	(*(int *)arg)++;
}

static int64_t put_pod(struct store *s, const char *name, const char *node)
{
	char key[256], v[512];
	int64_t rev = -1;

	snprintf(key, sizeof(key), OBJ_PREFIX "pods/red/%s", name);
	snprintf(v, sizeof(v),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"red\","
		 "\"annotations\":{\"pad\":\"%0300d\"}},\"spec\":{\"nodeName\":\"%s\"},"
		 "\"status\":{\"podIP\":\"10.128.0.9\"}}", name, 0, node);
	if (store_put(s, key, v, strlen(v), &rev))
		rev = -1;
	return rev;
}

/* Every whole line the stream hands out now, through a buffer of max
 * bytes, parsed into lines[] (at most 8); -1 when it ended. */
static int drain(struct watch_table *t, struct watcher *w, size_t max, json_t **lines)
{
	char buf[64 * 1024], chunk[4096];
	size_t len = 0;
	int n = 0;

	for (;;) {
		ssize_t got = watch_table_take(t, chunk, max);

		if (got == 0) {
			ssize_t pulled = watch_table_pull(t, w);

			if (pulled < 0)
				return -1;
			if (pulled == 0)
				break;
			continue;
		}
		if (got < 0 || (size_t)got > max || len + (size_t)got > sizeof(buf))
			return -1;
		memcpy(buf + len, chunk, (size_t)got);
		len += (size_t)got;
	}
	for (char *p = buf, *nl; n < 8 && (nl = memchr(p, '\n', (size_t)(buf + len - p))); p = nl + 1)
		lines[n++] = json_loadb(p, (size_t)(nl - p), 0, NULL);
	return n;
}

static struct watcher *open_pods(struct watch_hub *h, int64_t after, int *wakes)
{
	struct selector sel = { 0 };
	struct watch_spec spec = { .prefix = OBJ_PREFIX "pods/", .sel = &sel };
	struct status st = { 0 };

	if (watch_hub_sync(h))	/* as the API does before it opens a watch */
		return NULL;
	return watcher_open(h, &spec, after, on_wake, wakes, &st);
}

TEST(watch_table_events)
{
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 64) : NULL;
	struct watch_table *t = watch_table_new(kind_get(KIND_POD), TABLE_INCLUDE_METADATA);
	struct watcher *w = NULL, *plain = NULL;
	json_t *l[8] = { 0 }, *p[8] = { 0 };
	int wakes = 0, plain_wakes = 0;
	int64_t rev;
	char text[300];

	CHECK(h && t);
	CHECK(put_pod(s, "a", "node-1") > 0);
	w = open_pods(h, 0, &wakes);		/* no revision: ADDED for a first */
	plain = open_pods(h, 0, &plain_wakes);
	CHECK(w && plain);
	watch_hub_lock(h);		/* as the API reads: the hub's lock held */
	/* 100 bytes at a time: every line is longer, and still arrives whole */
	CHECK_EQ(drain(t, w, 100, l), 1);
	CHECK_STR(json_string_value(json_object_get(l[0], "type")), "ADDED");
	CHECK_STR(json_string_value(json_object_get(json_object_get(l[0], "object"), "kind")), "Table");
	CHECK_EQ(json_array_size(json_object_get(json_object_get(l[0], "object"), "columnDefinitions")), 5);
	CHECK_STR(json_string_value(json_array_get(json_object_get(json_array_get(json_object_get(
		  json_object_get(l[0], "object"), "rows"), 0), "cells"), 0)), "a");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(
		  json_object_get(l[0], "object"), "rows"), 0), "object"), "kind")), "PartialObjectMetadata");
	watch_hub_unlock(h);

	rev = put_pod(s, "b", "node-2");
	CHECK_EQ(watch_hub_written(h, rev), 0);
	CHECK(wakes > 0);
	watch_hub_lock(h);
	CHECK_EQ(drain(t, w, 16 * 1024, l + 1), 1);
	{
		json_t *table = json_object_get(l[1], "object"), *row = json_array_get(json_object_get(table, "rows"), 0);

		/* later events: no column definitions (kubectl keeps the first's) */
		CHECK(json_is_array(json_object_get(table, "columnDefinitions")));
		CHECK_EQ(json_array_size(json_object_get(table, "columnDefinitions")), 0);
		CHECK_STR(json_string_value(json_array_get(json_object_get(row, "cells"), 0)), "b");
		CHECK_STR(json_string_value(json_array_get(json_object_get(row, "cells"), 2)), "node-2");
		snprintf(text, sizeof(text), "%" PRId64, rev);
		CHECK_STR(json_string_value(json_object_get(json_object_get(table, "metadata"), "resourceVersion")),
			  text);
	}
	/* the plain watcher beside it reads the hub's lines as they are */
	{
		char buf[8192];
		ssize_t n = watcher_read(plain, buf, sizeof(buf) - 1);

		CHECK(n > 0);
		buf[n > 0 ? n : 0] = 0;
		CHECK(strstr(buf, "\"kind\":\"Pod\""));
		CHECK(!strstr(buf, "Table"));
	}
	/* nothing more: 0, and the watcher waits for its wake */
	CHECK_EQ(drain(t, w, 100, p), 0);
	CHECK_EQ(watch_table_bookmark(t, 42, text, sizeof(text)) > 0, 1);
	p[0] = json_loads(text, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(p[0], "type")), "BOOKMARK");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(p[0], "object"), "metadata"),
						    "resourceVersion")), "42");
	CHECK_EQ(json_array_size(json_object_get(json_object_get(p[0], "object"), "rows")), 0);
	CHECK_EQ(watch_table_bookmark(t, 42, text, 20), 0);	/* does not fit: nothing */
	watch_hub_unlock(h);

	for (int i = 0; i < 8; i++) {
		json_decref(l[i]);
		json_decref(p[i]);
	}
	watcher_close(w);
	watcher_close(plain);
	watch_table_free(t);
	watch_hub_free(h);
	store_close(s);
}

TEST(watch_table_include_object)
{
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 64) : NULL;
	struct watch_table *full = watch_table_new(kind_get(KIND_POD), TABLE_INCLUDE_OBJECT);
	struct watch_table *none = watch_table_new(kind_get(KIND_POD), TABLE_INCLUDE_NONE);
	struct watcher *wf = NULL, *wn = NULL;
	json_t *lf[8] = { 0 }, *ln[8] = { 0 };
	enum table_include inc;
	int wakes = 0;

	CHECK(h && full && none);
	CHECK(put_pod(s, "a", "node-1") > 0);
	wf = open_pods(h, 0, &wakes);
	wn = open_pods(h, 0, &wakes);
	watch_hub_lock(h);
	CHECK_EQ(drain(full, wf, 4096, lf), 1);
	CHECK_EQ(drain(none, wn, 4096, ln), 1);
	watch_hub_unlock(h);
	{
		json_t *rf = json_array_get(json_object_get(json_object_get(lf[0], "object"), "rows"), 0);
		json_t *rn = json_array_get(json_object_get(json_object_get(ln[0], "object"), "rows"), 0);

		CHECK_STR(json_string_value(json_object_get(json_object_get(rf, "object"), "kind")), "Pod");
		CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(rf, "object"), "spec"),
							    "nodeName")), "node-1");
		CHECK(rn && !json_object_get(rn, "object"));
		CHECK_EQ(json_array_size(json_object_get(rn, "cells")), 5);
	}
	CHECK_EQ(table_include_parse(NULL, &inc), 0);
	CHECK_EQ(inc, TABLE_INCLUDE_METADATA);
	CHECK_EQ(table_include_parse("Object", &inc), 0);
	CHECK_EQ(inc, TABLE_INCLUDE_OBJECT);
	CHECK_EQ(table_include_parse("None", &inc), 0);
	CHECK_EQ(inc, TABLE_INCLUDE_NONE);
	CHECK(table_include_parse("object", &inc) < 0);
	json_decref(lf[0]);
	json_decref(ln[0]);
	watcher_close(wf);
	watcher_close(wn);
	watch_table_free(full);
	watch_table_free(none);
	watch_hub_free(h);
	store_close(s);
}
