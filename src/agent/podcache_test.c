/*
 * podcache_test.c — the pod cache against a naive model (an array of pods
 * and one of NetNamespaces, searched linearly), over random sequences of
 * what the watches bring: pods added, changed (IP, node, container),
 * deleted; relists that keep a random part and sweep every pod, the own
 * node's or the other nodes'; lists of the own node's pods and of the
 * others' open and closed apart, interleaving with each other and with
 * the events (as paged lists do); NetNamespaces set, deleted
 * and relisted.  After every step each index agrees with the model: by
 * name, by IP (several pods on one IP), by namespace, by node, the
 * container IDs kept for the own node only, the VNIDs, and what a sweep
 * removed.  Small name and address spaces make every case frequent.
 */
#include "agent/podcache.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

enum { NS = 4, NAMES = 60, NODES = 5, IPS = 24, STEPS = 30000 };

#define SELF "node-self"

struct mpod {
	bool live;
	int ns, name, node;		/* node NODES: SELF; NODES+1: "" */
	int cid;
	in_addr_t ip;
	uint32_t gen;
	bool gone;			/* scratch: the sweep reported it */
};

struct mnetns {
	bool live;
	uint32_t vnid, gen;
};

static struct mpod model[NS][NAMES];
static struct mnetns mnet[NS];
static uint32_t mgen[2], mnetgen;	/* [1]: the own node's pods, [0]: the others' */
static bool mopen[2];			/* a list of that scope begun, not swept */
static char nsname[NS][24], podname[NAMES][24], nodename[NODES + 2][24];

static void names_init(void)
{
	for (int i = 0; i < NS; i++)
		snprintf(nsname[i], sizeof(nsname[i]), "ns-%d", i);
	for (int i = 0; i < NAMES; i++)
		snprintf(podname[i], sizeof(podname[i]), "pod-%d", i);
	for (int i = 0; i < NODES; i++)
		snprintf(nodename[i], sizeof(nodename[i]), "node-%d", i);
	snprintf(nodename[NODES], sizeof(nodename[NODES]), "%s", SELF);
	nodename[NODES + 1][0] = 0;
}

static in_addr_t ip_of(int i)
{
	return i ? htonl(0x0a800000u + (uint32_t)i) : 0;
}

static void check_pod(const struct podcache *c, int ns, int name)
{
	const struct mpod *m = &model[ns][name];
	const struct podcache_pod *p = podcache_find(c, nsname[ns], podname[name]);
	char cid[16];

	CHECK_EQ(p != NULL, m->live);
	if (!p)
		return;
	CHECK_STR(p->name, podname[name]);
	CHECK_STR(p->ns->name, nsname[ns]);
	CHECK_STR(p->node->name, nodename[m->node]);
	CHECK_EQ(p->ip, m->ip);
	snprintf(cid, sizeof(cid), "c%d", m->cid);
	if (m->node == NODES) {		/* self: the container ID is kept */
		CHECK_STR(podcache_container_id(p), cid);
	} else {
		CHECK(p->container_id == NULL);
		CHECK_STR(podcache_container_id(p), "");
	}
}

static void check_ip(const struct podcache *c, int i)
{
	size_t want = 0, got = 0;

	for (int n = 0; n < NS; n++)
		for (int k = 0; k < NAMES; k++)
			want += model[n][k].live && model[n][k].ip == ip_of(i) && i;
	for (const struct podcache_pod *p = podcache_by_ip(c, ip_of(i)); p; p = podcache_next_ip(p)) {
		int n = p->ns->name[3] - '0', k = atoi(p->name + 4);

		CHECK(p->ip == ip_of(i));
		CHECK(model[n][k].live && model[n][k].ip == ip_of(i));
		got++;
	}
	CHECK_EQ(got, want);
}

static void check_ns(const struct podcache *c, int ns)
{
	const struct podcache_group *g = podcache_ns_find(c, nsname[ns]);
	size_t want = 0, got = 0;
	uint32_t vnid = 0;

	for (int k = 0; k < NAMES; k++)
		want += model[ns][k].live;
	CHECK_EQ(g != NULL, want > 0 || mnet[ns].live);	/* no empty group */
	CHECK_EQ(podcache_vnid(c, nsname[ns], &vnid), mnet[ns].live);
	if (mnet[ns].live)
		CHECK_EQ(vnid, mnet[ns].vnid);
	if (!g)
		return;
	for (const struct podcache_pod *p = podcache_group_first(g); p; p = podcache_group_next(g, p)) {
		CHECK(p->ns == g && model[ns][atoi(p->name + 4)].live);
		got++;
	}
	CHECK_EQ(got, want);
	CHECK_EQ(g->npods, want);
}

static void check_node(const struct podcache *c, int node)
{
	const struct podcache_group *g = podcache_node_find(c, nodename[node]);
	size_t want = 0, got = 0;

	for (int n = 0; n < NS; n++)
		for (int k = 0; k < NAMES; k++)
			want += model[n][k].live && model[n][k].node == node;
	CHECK_EQ(g != NULL, want > 0);
	if (!g)
		return;
	for (const struct podcache_pod *p = podcache_group_first(g); p; p = podcache_group_next(g, p)) {
		const struct mpod *m = &model[p->ns->name[3] - '0'][atoi(p->name + 4)];

		CHECK(p->node == g && m->live && m->node == node);
		got++;
	}
	CHECK_EQ(got, want);
}

static void check_all(const struct podcache *c)
{
	size_t live = 0, walked = 0;

	for (int n = 0; n < NS && !test_failed(); n++)
		for (int k = 0; k < NAMES && !test_failed(); k++) {
			live += model[n][k].live;
			check_pod(c, n, k);
		}
	for (int i = 0; i < IPS && !test_failed(); i++)
		check_ip(c, i);
	for (int n = 0; n < NS && !test_failed(); n++)
		check_ns(c, n);
	for (int d = 0; d < NODES + 2 && !test_failed(); d++)
		check_node(c, d);
	for (const struct podcache_pod *p = podcache_first(c); p; p = podcache_next(c, p))
		walked++;
	CHECK_EQ(podcache_count(c), live);
	CHECK_EQ(walked, live);
}

static void set_pod(struct podcache *c, uint64_t *st, int n, int k)
{
	struct mpod *m = &model[n][k];
	char cid[16];
	struct podcache_in in;

	m->node = (int)test_rnd(st, NODES + 2);
	m->ip = ip_of((int)test_rnd(st, IPS));
	m->cid = (int)test_rnd(st, 1000);
	snprintf(cid, sizeof(cid), "c%d", m->cid);
	in = (struct podcache_in){ .ns = nsname[n], .name = podname[k], .node = nodename[m->node],
				   .container_id = cid, .ip = m->ip };
	CHECK(podcache_set(c, &in) != NULL);
	m->live = true;
	m->gen = mgen[m->node == NODES];
}

static void on_gone(void *arg, const struct podcache_pod *p)
{
	struct mpod *m = &model[p->ns->name[3] - '0'][atoi(p->name + 4)];

	(void)arg;
	m->gone = true;
}

static bool in_scope(const struct mpod *m, enum podcache_scope scope)
{
	return scope == PODCACHE_EVERY || (scope == PODCACHE_SELF) == (m->node == NODES);
}

static void list_begin(struct podcache *c, enum podcache_scope scope)
{
	podcache_begin_list(c, scope);
	if (scope != PODCACHE_OTHERS)
		mgen[1]++;
	if (scope != PODCACHE_SELF)
		mgen[0]++;
}

/* the end of a list: what of its scope was not set since its begin goes */
static void list_sweep(struct podcache *c, enum podcache_scope scope)
{
	for (int n = 0; n < NS; n++)
		for (int k = 0; k < NAMES; k++)
			model[n][k].gone = false;
	podcache_sweep(c, scope, on_gone, NULL);
	for (int n = 0; n < NS; n++)
		for (int k = 0; k < NAMES; k++) {
			struct mpod *m = &model[n][k];
			bool stale = m->live && in_scope(m, scope) && m->gen != mgen[m->node == NODES];

			CHECK_EQ(m->gone, stale);
			if (stale)
				m->live = false;
		}
}

/* a relist at once: a random part of the model listed again (some
 * changed), a few new, the rest of a random scope swept (every pod,
 * self's, or the other nodes') */
static void relist(struct podcache *c, uint64_t *st)
{
	uint32_t keep = test_rnd(st, 101);
	enum podcache_scope scope = (enum podcache_scope)test_rnd(st, 3);

	list_begin(c, scope);
	for (int n = 0; n < NS; n++)
		for (int k = 0; k < NAMES; k++)
			if ((model[n][k].live && test_rnd(st, 100) < keep) || test_rnd(st, 50) == 0)
				set_pod(c, st, n, k);
	list_sweep(c, scope);
}

/* a list in pages: its begin or its end, for the own node's pods or the
 * others'; the sets between are the steps' own */
static void list_step(struct podcache *c, uint64_t *st)
{
	int self = (int)test_rnd(st, 2);
	enum podcache_scope scope = self ? PODCACHE_SELF : PODCACHE_OTHERS;

	if (!mopen[self])
		list_begin(c, scope);
	else
		list_sweep(c, scope);
	mopen[self] = !mopen[self];
}

static void netns_relist(struct podcache *c, uint64_t *st)
{
	size_t want = 0;

	podcache_begin_netns_list(c);
	mnetgen++;
	for (int n = 0; n < NS; n++)
		if (test_rnd(st, 2)) {
			bool changed;

			CHECK_EQ(podcache_netns_set(c, nsname[n], n, &changed), 0);
			mnet[n] = (struct mnetns){ .live = true, .vnid = (uint32_t)n, .gen = mnetgen };
		}
	for (int n = 0; n < NS; n++)
		want += mnet[n].live && mnet[n].gen != mnetgen;
	CHECK_EQ(podcache_netns_sweep(c), want);
	for (int n = 0; n < NS; n++)
		if (mnet[n].gen != mnetgen)
			mnet[n].live = false;
}

TEST(podcache_random_against_model)
{
	struct podcache c;
	uint64_t st = test_seed() | 1;

	names_init();
	memset(model, 0, sizeof(model));
	memset(mnet, 0, sizeof(mnet));
	mgen[0] = mgen[1] = mnetgen = 0;
	mopen[0] = mopen[1] = false;
	podcache_init(&c, SELF);
	for (int step = 0; step < STEPS && !test_failed(); step++) {
		int n = (int)test_rnd(&st, NS), k = (int)test_rnd(&st, NAMES);
		uint32_t op = test_rnd(&st, 100);

		if (op < 50) {
			set_pod(&c, &st, n, k);
		} else if (op < 80) {
			struct podcache_pod *p = podcache_find(&c, nsname[n], podname[k]);

			CHECK_EQ(p != NULL, model[n][k].live);
			if (p)
				podcache_del(&c, p);
			model[n][k].live = false;
		} else if (op < 81) {
			if (!mopen[0] && !mopen[1])
				relist(&c, &st);
		} else if (op < 82) {
			list_step(&c, &st);
		} else if (op < 90) {
			bool changed = false;
			uint32_t vnid = test_rnd(&st, 3);

			CHECK_EQ(podcache_netns_set(&c, nsname[n], vnid, &changed), 0);
			CHECK_EQ(changed, !mnet[n].live || mnet[n].vnid != vnid);
			mnet[n] = (struct mnetns){ .live = true, .vnid = vnid, .gen = mnetgen };
		} else if (op < 95) {
			podcache_netns_del(&c, nsname[n]);
			mnet[n].live = false;
		} else if (op < 96) {
			netns_relist(&c, &st);
		}
		if (step % 7 == 0 || op >= 80)
			check_all(&c);
	}
	check_all(&c);
	podcache_free(&c);
	CHECK_EQ(podcache_count(&c), 0);
	CHECK(!podcache_first(&c));
}

/* Names of any length are kept whole (no fixed-size arrays). */
TEST(podcache_long_names)
{
	struct podcache c;
	char ns[300], name[300];
	struct podcache_pod *p;

	memset(ns, 'n', sizeof(ns) - 1);
	ns[sizeof(ns) - 1] = 0;
	memset(name, 'p', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	podcache_init(&c, SELF);
	p = podcache_set(&c, &(struct podcache_in){ .ns = ns, .name = name, .node = SELF,
						    .container_id = "abc", .ip = 0 });
	CHECK(p != NULL);
	CHECK(podcache_find(&c, ns, name) == p);
	CHECK_EQ(strlen(p->name), 299);
	CHECK_STR(podcache_container_id(p), "abc");
	CHECK(!podcache_by_ip(&c, 0));	/* no IP: not indexed by one */
	/* an update keeps the record where it is */
	CHECK(podcache_set(&c, &(struct podcache_in){ .ns = ns, .name = name, .node = "other",
						      .ip = ip_of(3) }) == p);
	CHECK(podcache_by_ip(&c, ip_of(3)) == p);
	CHECK_STR(podcache_container_id(p), "");
	CHECK(!podcache_node_find(&c, SELF));	/* its last pod left */
	podcache_free(&c);
}
