/*
 * watch_test.c — the watch hub and its index of selective watchers, on a
 * real SQLite store:
 *   - the index: which entries an event's buckets hold, each once, and
 *     buckets freed with their last entry
 *   - 1,000 watchers of spec.nodeName=node-i: a pod's event wakes one
 *   - plain watchers by collection: a Service's event wakes the Services
 *     watchers only, a pod's those of the pods and of its namespace; a
 *     ring that overflows ends the streams that lost something, not the
 *     others
 *   - a label change: DELETED (the object before, at the update's
 *     revision) for a watcher it left, ADDED for one it entered
 *   - a watch of one object does not stream others whose names start
 *     with its name
 *   - a randomized cross-check: random transactions of pods (and a
 *     Service with a pod's name), watchers with random selectors opened
 *     at random points (initial list, history, the ring), read in random
 *     pieces through a small ring that overflows, resumed from their last
 *     revision when they fall behind, bookmarks taken when idle — every
 *     stream equal to a naive reference that judges every write against
 *     every watcher by hand-written predicates.
 */
#include "controller/registry_fixture.h"
#include "controller/watch_index.h"
#include "test.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

static char *pod_json(const char *ns, const char *name, const char *node, const char *app)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{}}, s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata",
			      "name", name, "namespace", ns, "labels", "spec");
	char *s;

	if (app)
		json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"), "app", json_string(app));
	if (node)
		json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string(node));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static int64_t put_pod(struct store *s, const char *ns, const char *name, const char *node, const char *app)
{
	char key[256], *v = pod_json(ns, name, node, app);
	int64_t rev = -1;

	snprintf(key, sizeof(key), OBJ_PREFIX "pods/%s/%s", ns, name);
	if (store_put(s, key, v, strlen(v), &rev))
		rev = -1;
	free(v);
	return rev;
}

static struct selector parse(const char *labels, const char *fields)
{
	struct selector sel = { 0 };

	if (selector_parse_labels(&sel, labels, err, sizeof(err)) ||
	    selector_parse_fields(&sel, kind_get(KIND_POD), fields, err, sizeof(err)))
		abort();
	return sel;
}

/* ---------------------------------------------------------------- the index */

struct visits {
	int count[16];
};

static void count_visit(void *owner, void *arg)
{
	((struct visits *)arg)->count[(intptr_t)owner]++;
}

TEST(watch_index_buckets)
{
	struct watch_index ix = { 0 };
	struct watch_index_entry e[6] = { 0 };
	struct selector sel[6];
	struct visits v = { 0 };
	struct selector_view now = { .field = { "web", "red", "node-2" } };
	struct selector_view before = { .field = { "web", "red", "node-1" } };

	sel[0] = parse("", "spec.nodeName=node-1");
	sel[1] = parse("", "spec.nodeName=node-2");
	sel[2] = parse("app=x", "");				/* unindexed */
	sel[3] = parse("", "metadata.name=web,spec.nodeName=node-9");	/* by name first */
	sel[4] = parse("", "metadata.namespace=blue");
	sel[5] = parse("", "spec.nodeName!=node-1");		/* != is not an index key */
	for (int i = 0; i < 6; i++) {
		e[i].owner = (void *)(intptr_t)i;
		CHECK_EQ(watch_index_add(&ix, &e[i], "pods", &sel[i]), 0);
	}
	CHECK_EQ(ix.nbuckets, 4);
	/* a pod moving from node-1 to node-2 */
	watch_index_candidates(&ix, OBJ_PREFIX "pods/red/web", &now, &before, count_visit, &v);
	CHECK_EQ(v.count[0], 1);
	CHECK_EQ(v.count[1], 1);
	CHECK_EQ(v.count[2], 1);
	CHECK_EQ(v.count[3], 1);
	CHECK_EQ(v.count[4], 0);
	CHECK_EQ(v.count[5], 1);
	/* a Service of the same name and namespace: only the unindexed */
	memset(&v, 0, sizeof(v));
	watch_index_candidates(&ix, OBJ_PREFIX "services/red/web", &now, NULL, count_visit, &v);
	CHECK_EQ(v.count[0] + v.count[1] + v.count[3] + v.count[4], 0);
	CHECK_EQ(v.count[2], 1);
	/* the same node before and after: its bucket once (invariant 3) */
	memset(&v, 0, sizeof(v));
	before.field[SELECTOR_FIELD_NAME] = "x";
	before.field[SELECTOR_FIELD_NAMESPACE] = "blue";
	watch_index_candidates(&ix, OBJ_PREFIX "pods/blue/x", &before, &before, count_visit, &v);
	CHECK_EQ(v.count[0], 1);
	CHECK_EQ(v.count[4], 1);
	CHECK_EQ(v.count[1] + v.count[3], 0);
	for (int i = 0; i < 6; i++) {
		watch_index_remove(&ix, &e[i]);
		selector_free(&sel[i]);
	}
	CHECK_EQ(ix.nbuckets, 0);
	CHECK(ix.unindexed == NULL);
	watch_index_free(&ix);
}

/* ---------------------------------------------------------------- the hub */

struct reader {
	struct watcher *w;
	int wakes;
	char pending[1 << 16];	/* bytes of a line not yet complete */
	size_t npending;
	char lines[64][4096];	/* complete lines read so far (the first 64) */
	int nlines;
	/* set: each line goes here instead of lines */
	void (*on_line)(struct reader *r, const char *line);
};

static void on_wake(void *arg)
{
	((struct reader *)arg)->wakes++;
}

/* Read everything there is: the number of lines added, or -1 (ended). */
static int drain(struct reader *r)
{
	char buf[700];
	ssize_t n;
	int added = 0;

	while ((n = watcher_read(r->w, buf, sizeof(buf))) > 0) {
		memcpy(r->pending + r->npending, buf, (size_t)n);
		r->npending += (size_t)n;
		for (char *nl; (nl = memchr(r->pending, '\n', r->npending));) {
			size_t len = (size_t)(nl - r->pending);

			*nl = 0;
			if (r->on_line)
				r->on_line(r, r->pending);
			else if (r->nlines < 64)
				snprintf(r->lines[r->nlines++], sizeof(r->lines[0]), "%.4000s", r->pending);
			added++;
			memmove(r->pending, nl + 1, r->npending - len - 1);
			r->npending -= len + 1;
		}
	}
	return n < 0 ? -1 : added;
}

/* "TYPE name rv" of a line */
static const char *line_summary(const char *line, char *buf, size_t len)
{
	json_t *e = json_loads(line, 0, NULL), *md = json_object_get(json_object_get(e, "object"), "metadata");

	snprintf(buf, len, "%s %s %s", json_string_value(json_object_get(e, "type")),
		 json_string_value(json_object_get(md, "name")) ?: "-",
		 json_string_value(json_object_get(md, "resourceVersion")) ?: "-");
	json_decref(e);
	return buf;
}

static const char *summary(const struct reader *r, int i, char *buf, size_t len)
{
	return line_summary(r->lines[i], buf, len);
}

static struct watcher *open_watcher(struct watch_hub *h, const char *prefix, const char *scan, const char *labels,
				    const char *fields, int64_t after, struct reader *r)
{
	struct selector sel = parse(labels, fields);
	struct watch_spec spec = { .prefix = prefix, .scan = scan, .sel = &sel };
	struct status st = { 0 };

	r->w = watcher_open(h, &spec, after, on_wake, r, &st);
	selector_free(&sel);
	return r->w;
}

TEST(watch_hub_wakes_only_the_selected)
{
	enum { N = 1000 };
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 1024) : NULL;
	struct reader *r = calloc(N + 1, sizeof(*r));
	int woken = 0;
	int64_t rev;

	CHECK(h && r);
	for (int i = 0; i < N; i++) {
		char f[64];

		snprintf(f, sizeof(f), "spec.nodeName=node-%d", i);
		CHECK(open_watcher(h, OBJ_PREFIX "pods/", NULL, "", f, watch_hub_revision(h), &r[i]));
		CHECK_EQ(drain(&r[i]), 0);	/* waiting */
	}
	CHECK(open_watcher(h, OBJ_PREFIX "pods/", NULL, "", "", watch_hub_revision(h), &r[N]));
	CHECK_EQ(drain(&r[N]), 0);
	rev = put_pod(s, "red", "a", "node-7", NULL);
	CHECK(rev > 0);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	for (int i = 0; i < N; i++)
		woken += r[i].wakes;
	CHECK_EQ(woken, 1);
	CHECK_EQ(r[7].wakes, 1);
	CHECK_EQ(r[N].wakes, 1);		/* the plain watcher as before */
	CHECK_EQ(drain(&r[7]), 1);
	CHECK_EQ(drain(&r[N]), 1);
	CHECK_EQ(drain(&r[8]), 0);
	/* a pod moved from node-7 to node-8: DELETED for 7, ADDED for 8, nobody else */
	rev = put_pod(s, "red", "a", "node-8", NULL);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	woken = 0;
	for (int i = 0; i < N; i++)
		woken += r[i].wakes;
	CHECK_EQ(woken, 3);
	CHECK_EQ(drain(&r[7]), 1);
	CHECK_EQ(drain(&r[8]), 1);
	CHECK(strstr(r[7].lines[1], "\"type\":\"DELETED\""));
	CHECK(strstr(r[7].lines[1], "\"nodeName\":\"node-7\""));	/* the object before ... */
	{
		char at[64];

		snprintf(at, sizeof(at), "\"resourceVersion\":\"%" PRId64 "\"", rev);
		CHECK(strstr(r[7].lines[1], at));	/* ... at the update's revision */
	}
	CHECK(strstr(r[8].lines[0], "\"type\":\"ADDED\""));
	CHECK_EQ(watch_hub_watchers(h), N + 1);
	for (int i = 0; i <= N; i++)
		watcher_close(r[i].w);
	CHECK_EQ(watch_hub_watchers(h), 0);
	free(r);
	watch_hub_free(h);
	store_close(s);
}

/* Plain watchers are filed by collection: a Service's write wakes the
 * Services watchers only, a pod's the pods watchers of the whole
 * collection and of its namespace, not those of another namespace; and
 * a cursor the ring overwrote while its watcher waited ends its stream
 * at the next read. */
TEST(watch_hub_plain_wakes_by_collection)
{
	enum { N = 200 };
	static const char svc[] = "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":"
				  "{\"name\":\"s\",\"namespace\":\"red\"}}";
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 16) : NULL;
	struct reader *r = calloc(N + 3, sizeof(*r));
	int woken = 0;
	int64_t rev;

	CHECK(h && r);
	for (int i = 0; i < N; i++) {
		CHECK(open_watcher(h, OBJ_PREFIX "services/", NULL, "", "", watch_hub_revision(h), &r[i]));
		CHECK_EQ(drain(&r[i]), 0);
	}
	CHECK(open_watcher(h, OBJ_PREFIX "pods/", NULL, "", "", watch_hub_revision(h), &r[N]));
	CHECK(open_watcher(h, OBJ_PREFIX "pods/red/", NULL, "", "", watch_hub_revision(h), &r[N + 1]));
	CHECK(open_watcher(h, OBJ_PREFIX "pods/blue/", NULL, "", "", watch_hub_revision(h), &r[N + 2]));
	for (int i = N; i < N + 3; i++)
		CHECK_EQ(drain(&r[i]), 0);
	rev = put_pod(s, "red", "a", "node-1", NULL);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	for (int i = 0; i < N; i++)
		woken += r[i].wakes;
	CHECK_EQ(woken, 0);
	CHECK_EQ(r[N].wakes, 1);
	CHECK_EQ(r[N + 1].wakes, 1);
	CHECK_EQ(r[N + 2].wakes, 0);
	CHECK_EQ(drain(&r[N]), 1);
	CHECK_EQ(drain(&r[N + 1]), 1);
	CHECK_EQ(drain(&r[N + 2]), 0);		/* waiting again, nothing for it */
	CHECK(store_put(s, OBJ_PREFIX "services/red/s", svc, strlen(svc), &rev) == 0);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(r[i].wakes, 1);
		CHECK_EQ(drain(&r[i]), 1);
	}
	CHECK_EQ(r[N].wakes, 1);		/* not again */
	/* 20 pod writes in blue overwrite the 16-slot ring: the pods
	 * watchers that had not read them lost some and end at their next
	 * read (their clients resume); the Services watchers lost nothing of
	 * theirs, and go on */
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "b%d", i);
		rev = put_pod(s, "blue", name, "node-1", NULL);
		CHECK_EQ(watch_hub_written(h, rev), 0);
	}
	CHECK_EQ(r[0].wakes, 1);
	CHECK_EQ(r[N + 2].wakes, 1);		/* once: it has not read since */
	CHECK_EQ(drain(&r[N]), -1);
	CHECK_EQ(drain(&r[N + 2]), -1);
	CHECK_EQ(drain(&r[N + 1]), -1);		/* red too: the ring counts by collection */
	CHECK_EQ(drain(&r[0]), 0);
	CHECK(store_put(s, OBJ_PREFIX "services/red/s", svc, strlen(svc), &rev) == 0);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	CHECK_EQ(r[0].wakes, 2);
	CHECK_EQ(drain(&r[0]), 1);		/* the Services watchers go on */
	for (int i = 0; i < N + 3; i++)
		watcher_close(r[i].w);
	free(r);
	watch_hub_free(h);
	store_close(s);
}

TEST(watch_hub_label_changes)
{
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 0) : NULL;
	struct reader *r = calloc(1, sizeof(*r));
	char key[128], sum[128];
	int64_t rev;

	CHECK(h && r);
	CHECK(open_watcher(h, OBJ_PREFIX "pods/", NULL, "app=web", "", watch_hub_revision(h), r));
	CHECK_EQ(drain(r), 0);
	CHECK(put_pod(s, "red", "p", NULL, "web") > 0);		/* 1: ADDED */
	CHECK(put_pod(s, "red", "q", NULL, "db") > 0);		/* 2: nothing */
	CHECK(put_pod(s, "red", "p", NULL, "db") > 0);		/* 3: left: DELETED */
	CHECK(put_pod(s, "red", "p", NULL, "db") > 0);		/* 4: nothing */
	CHECK(put_pod(s, "red", "p", NULL, "web") > 0);		/* 5: entered: ADDED */
	CHECK(put_pod(s, "red", "p", "node-1", "web") > 0);	/* 6: MODIFIED */
	snprintf(key, sizeof(key), OBJ_PREFIX "pods/red/p");
	CHECK(store_delete(s, key, &rev) == 0);			/* 7: DELETED */
	CHECK_EQ(watch_hub_written(h, rev), 0);
	CHECK_EQ(drain(r), 5);
	CHECK_STR(summary(r, 0, sum, sizeof(sum)), "ADDED p 1");
	CHECK_STR(summary(r, 1, sum, sizeof(sum)), "DELETED p 3");
	CHECK(strstr(r->lines[1], "\"app\":\"web\""));	/* the object as it was selected */
	CHECK_STR(summary(r, 2, sum, sizeof(sum)), "ADDED p 5");
	CHECK_STR(summary(r, 3, sum, sizeof(sum)), "MODIFIED p 6");
	CHECK_STR(summary(r, 4, sum, sizeof(sum)), "DELETED p 7");
	watcher_close(r->w);

	/* the same from the store's history (a watcher opened at 0) */
	memset(r, 0, sizeof(*r));
	CHECK(open_watcher(h, OBJ_PREFIX "pods/", NULL, "app=web", "", 0, r));
	CHECK(watcher_reads_store(r->w));
	CHECK_EQ(drain(r), 5);
	CHECK_STR(summary(r, 1, sum, sizeof(sum)), "DELETED p 3");
	CHECK_STR(summary(r, 2, sum, sizeof(sum)), "ADDED p 5");
	watcher_close(r->w);
	free(r);
	watch_hub_free(h);
	store_close(s);
}

TEST(watch_hub_one_object)
{
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 0) : NULL;
	struct reader *r = calloc(2, sizeof(*r));
	int64_t rev = 0;

	CHECK(h && r);
	CHECK(put_pod(s, "red", "web", NULL, NULL) > 0);
	CHECK(put_pod(s, "red", "web-lb", NULL, NULL) > 0);
	/* initial list and changes, as the API opens a watch of red/web */
	CHECK(open_watcher(h, OBJ_PREFIX "pods/red/", OBJ_PREFIX "pods/red/web", "", "metadata.name=web", -1, &r[0]));
	CHECK(open_watcher(h, OBJ_PREFIX "pods/red/", OBJ_PREFIX "pods/red/web", "", "metadata.name=web", 0, &r[1]));
	CHECK(put_pod(s, "red", "web-np", NULL, NULL) > 0);
	CHECK(put_pod(s, "red", "web-lb", "n", NULL) > 0);
	rev = put_pod(s, "red", "web", "n", NULL);
	CHECK_EQ(watch_hub_written(h, rev), 0);
	CHECK_EQ(drain(&r[0]), 2);	/* ADDED web, MODIFIED web */
	CHECK_EQ(drain(&r[1]), 2);	/* ADDED web (its create), MODIFIED web */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < r[i].nlines; j++)
			CHECK(!strstr(r[i].lines[j], "web-"));
	watcher_close(r[0].w);
	watcher_close(r[1].w);
	free(r);
	watch_hub_free(h);
	store_close(s);
}

/* ---------------------------------------------------------------- randomized against a reference */

enum { NAMES = 4, NSS = 2, NODES = 3, APPS = 3, SELECTORS = 10, WATCHERS = 24 };
static const char *const names[NAMES] = { "p1", "p1-lb", "p2", "p3" };
static const char *const nss[NSS] = { "red", "blue" };
static const char *const nodes[NODES] = { NULL, "node-1", "node-2" };
static const char *const apps[APPS] = { NULL, "web", "db" };

struct pod {
	bool exists;
	int node, app;
};

struct pick {
	const char *labels, *fields;
	bool (*match)(int ns, int name, const struct pod *p);
};

static bool all(int ns, int name, const struct pod *p) { (void)ns; (void)name; (void)p; return true; }
static bool web(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->app == 1; }
static bool not_web(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->app != 1; }
static bool web_or_db(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->app != 0; }
static bool no_app(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->app == 0; }
static bool node1(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->node == 1; }
static bool not_node1(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->node != 1; }
static bool unscheduled(int ns, int name, const struct pod *p) { (void)ns; (void)name; return p->node == 0; }
static bool p1(int ns, int name, const struct pod *p) { (void)ns; (void)p; return name == 0; }
static bool node2_db_blue(int ns, int name, const struct pod *p) { (void)name; return ns == 1 && p->node == 2 && p->app == 2; }

static const struct pick picks[SELECTORS] = {
	{ "", "", all },
	{ "app=web", "", web },
	{ "app!=web", "", not_web },
	{ "app in (web,db)", "", web_or_db },
	{ "!app", "", no_app },
	{ "", "spec.nodeName=node-1", node1 },
	{ "", "spec.nodeName!=node-1", not_node1 },
	{ "", "spec.nodeName=", unscheduled },
	{ "", "metadata.name=p1", p1 },
	{ "app==db", "spec.nodeName=node-2,metadata.namespace=blue", node2_db_blue },
};

struct write {
	int64_t rev;
	int ns, name;
	struct pod before, after;
};

struct rwatcher {
	struct reader r;	/* first: on_line gets the rwatcher */
	int pick;
	int ns;			/* -1: every namespace */
	bool one;		/* a watch of red/p1 by its path */
	int64_t from;		/* its stream starts after this revision */
	int64_t resume;		/* revision to resume from when it ends */
	size_t expected;	/* reference events seen so far */
	char initial[NSS * NAMES][32];	/* an initial list still to come: "ADDED name" */
	int ninitial, initial_next;
	bool open;
};

static struct write *writes;
static size_t nwrites;
static struct pod state[NSS][NAMES];

static bool ref_match(const struct rwatcher *w, int ns, int name, const struct pod *p)
{
	if (!p->exists || (w->ns >= 0 && ns != w->ns) || (w->one && name != 0))
		return false;
	return picks[w->pick].match(ns, name, p);
}

/* What the watcher must be sent for write i ("" nothing): "TYPE name rev". */
static const char *ref_event(const struct rwatcher *w, size_t i, char *buf, size_t len)
{
	const struct write *x = &writes[i];
	bool now = ref_match(w, x->ns, x->name, &x->after), was = ref_match(w, x->ns, x->name, &x->before);

	buf[0] = 0;
	if (now || was)
		snprintf(buf, len, "%s %s %" PRId64, now && was ? "MODIFIED" : now ? "ADDED" : "DELETED",
			 names[x->name], x->rev);
	return buf;
}

/* Every line a watcher reads, against the reference as it comes. */
static void check_line(struct reader *r, const char *line)
{
	struct rwatcher *w = (struct rwatcher *)r;
	char want[128], got[128];

	if (test_failed())
		return;
	line_summary(line, got, sizeof(got));
	if (w->initial_next < w->ninitial) {
		/* the initial list: ADDED for what it selects, in key order */
		if (strncmp(got, w->initial[w->initial_next], strlen(w->initial[w->initial_next])))
			test_fail(__FILE__, __LINE__, "initial list: got '%s', want '%s'", got,
				  w->initial[w->initial_next]);
		w->initial_next++;
		return;
	}
	if (!strncmp(got, "BOOKMARK", 8)) {
		int64_t b = atoll(strrchr(got, ' ') + 1);

		/* everything up to b was sent before it */
		for (; w->expected < nwrites && writes[w->expected].rev <= b; w->expected++)
			if (*ref_event(w, w->expected, want, sizeof(want)))
				test_fail(__FILE__, __LINE__, "bookmark %" PRId64 " before %s", b, want);
		w->resume = b;
		return;
	}
	while (w->expected < nwrites && !*ref_event(w, w->expected, want, sizeof(want)))
		w->expected++;
	if (w->expected == nwrites || strcmp(got, want)) {
		test_fail(__FILE__, __LINE__, "watcher (%s|%s ns %d%s from %" PRId64 "): got '%s', want '%s'",
			  picks[w->pick].labels, picks[w->pick].fields, w->ns, w->one ? " one" : "", w->from, got,
			  w->expected == nwrites ? "nothing" : want);
		return;
	}
	w->expected++;
	w->resume = atoll(strrchr(got, ' ') + 1);
}

/* Open (or resume) w after revision from (-1: with the initial list). */
static void ropen(struct watch_hub *h, struct rwatcher *w, int64_t from)
{
	static const int order[NSS] = { 1, 0 };	/* key order: "blue" < "red" */
	char prefix[64], key[80];

	w->ninitial = w->initial_next = 0;
	if (from < 0)
		for (int k = 0; k < NSS; k++)
			for (int n = 0; n < NAMES; n++)
				if (ref_match(w, order[k], n, &state[order[k]][n]))
					snprintf(w->initial[w->ninitial++], sizeof(w->initial[0]), "ADDED %s ", names[n]);
	snprintf(prefix, sizeof(prefix), OBJ_PREFIX "pods/%s", w->ns >= 0 ? nss[w->ns] : "");
	if (w->ns >= 0)
		strcat(prefix, "/");
	snprintf(key, sizeof(key), "%sp1", prefix);
	w->r.npending = 0;
	w->r.on_line = check_line;
	w->open = open_watcher(h, prefix, w->one ? key : NULL, picks[w->pick].labels,
			       w->one ? "metadata.name=p1" : picks[w->pick].fields, from, &w->r) != NULL;
}

/* A write of the random test: a transaction of 1-3 pods, sometimes with a
 * Service named like a pod (no pod watcher may see it).  Its revision. */
static int64_t random_write(struct store *s, uint64_t *st)
{
	static const char svc[] = "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":"
				  "{\"name\":\"p1\",\"namespace\":\"red\",\"labels\":{\"app\":\"web\"}}}";
	struct store_op ops[4];
	char keys[3][128], *vals[3] = { 0 };
	int n = 1 + (int)test_rnd(st, 3), used[NSS][NAMES] = { { 0 } };
	size_t pods = 0;
	struct store_txn t = { .success = ops };
	struct store_txn_result res = { 0 };

	for (int i = 0; i < n; i++) {
		int ns = (int)test_rnd(st, NSS), name = (int)test_rnd(st, NAMES);
		struct pod *p = &state[ns][name], after = { true, (int)test_rnd(st, NODES), (int)test_rnd(st, APPS) };

		if (used[ns][name]++)
			continue;	/* one op per key in a transaction */
		memset(&ops[pods], 0, sizeof(ops[0]));
		snprintf(keys[pods], sizeof(keys[0]), OBJ_PREFIX "pods/%s/%s", nss[ns], names[name]);
		ops[pods].key = keys[pods];
		if (p->exists && test_rnd(st, 4) == 0) {
			ops[pods].type = STORE_OP_DELETE;
			after.exists = false;
		} else {
			vals[pods] = pod_json(nss[ns], names[name], nodes[after.node], apps[after.app]);
			ops[pods].type = STORE_OP_PUT;
			ops[pods].value = vals[pods];
			ops[pods].value_len = strlen(vals[pods]);
		}
		writes[nwrites + pods] = (struct write){ 0, ns, name, *p, after };
		*p = after;
		pods++;
	}
	t.nsuccess = pods;
	if (test_rnd(st, 5) == 0)
		ops[t.nsuccess++] = (struct store_op){ .type = STORE_OP_PUT, .key = OBJ_PREFIX "services/red/p1",
						       .value = svc, .value_len = strlen(svc) };
	if (store_txn(s, &t, &res) || !res.succeeded)
		res.revision = -1;
	for (size_t i = 0; i < pods; i++)
		writes[nwrites++].rev = res.revision;
	for (size_t i = 0; i < pods; i++)
		free(vals[i]);
	return res.revision;
}

static void random_open(struct watch_hub *h, struct rwatcher *w, int64_t rev, uint64_t *st)
{
	memset(w, 0, sizeof(*w));
	w->pick = (int)test_rnd(st, SELECTORS);
	w->ns = (int)test_rnd(st, NSS + 1) - 1;
	w->one = w->ns == 0 && test_rnd(st, 4) == 0;
	if (w->one)
		w->pick = (int)test_rnd(st, 5);	/* its name, and a label selector */
	switch (test_rnd(st, 3)) {
	case 0:	/* with the initial list */
		w->from = rev;
		ropen(h, w, -1);
		break;
	case 1:	/* from a past revision: the store's history */
		w->from = (int64_t)test_rnd(st, (uint32_t)rev + 1);
		ropen(h, w, w->from);
		break;
	default:	/* from now */
		w->from = rev;
		ropen(h, w, w->from);
	}
	while (w->expected < nwrites && writes[w->expected].rev <= w->from)
		w->expected++;
	w->resume = w->from;
}

/* Read w; resume it when it ended; take a bookmark now and then. */
static void random_read(struct watch_hub *h, struct rwatcher *w, int64_t rev, uint64_t *st)
{
	int64_t b;

	if (drain(&w->r) < 0) {
		watcher_close(w->r.w);
		ropen(h, w, w->resume);
		return;
	}
	if (test_rnd(st, 3))
		return;
	watch_hub_lock(h);
	b = watcher_bookmark(w->r.w);
	watch_hub_unlock(h);
	if (b >= 0) {
		char line[160];

		if (b != rev)
			test_fail(__FILE__, __LINE__, "bookmark %" PRId64 ", the hub is at %" PRId64, b, rev);
		snprintf(line, sizeof(line),
			 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"}}}", b);
		check_line(&w->r, line);
	}
}

TEST(watch_hub_random_against_reference)
{
	struct store *s = fx_store("w.db");
	struct watch_hub *h = s ? watch_hub_new(s, 48) : NULL;	/* small: it overflows */
	struct rwatcher *ws = calloc(WATCHERS, sizeof(*ws));
	uint64_t st = test_seed() | 1;
	int64_t rev = 0;

	writes = calloc(8192, sizeof(*writes));
	nwrites = 0;
	memset(state, 0, sizeof(state));
	CHECK(h && ws && writes);
	for (int step = 0; step < 2000 && !test_failed(); step++) {
		int action = (int)test_rnd(&st, 10);

		if (action < 6) {
			rev = random_write(s, &st);
			CHECK(rev > 0);
			if (test_rnd(&st, 3))
				CHECK_EQ(watch_hub_written(h, rev), 0);
		} else if (action < 8) {
			struct rwatcher *w = &ws[test_rnd(&st, WATCHERS)];

			if (w->open) {
				watcher_close(w->r.w);
				w->open = false;
				continue;
			}
			random_open(h, w, rev, &st);
			CHECK(w->open);
		} else {
			CHECK_EQ(watch_hub_sync(h), 0);
			for (int i = 0; i < WATCHERS && !test_failed(); i++)
				if (ws[i].open)
					random_read(h, &ws[i], rev, &st);
		}
	}
	/* the end: everyone has everything */
	CHECK_EQ(watch_hub_sync(h), 0);
	for (int i = 0; i < WATCHERS && !test_failed(); i++) {
		struct rwatcher *w = &ws[i];
		char want[128];

		if (!w->open)
			continue;
		while (drain(&w->r) < 0) {
			watcher_close(w->r.w);
			ropen(h, w, w->resume);
		}
		if (w->initial_next < w->ninitial)
			test_fail(__FILE__, __LINE__, "initial list: %s never sent", w->initial[w->initial_next]);
		for (; w->expected < nwrites; w->expected++)
			if (*ref_event(w, w->expected, want, sizeof(want)))
				test_fail(__FILE__, __LINE__, "never sent: %s", want);
		watcher_close(w->r.w);
	}
	free(writes);
	free(ws);
	watch_hub_free(h);
	store_close(s);
}
