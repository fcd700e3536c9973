/*
 * nodecache_test.c — the node cache against a naive model (an array of
 * nodes searched linearly), over random adds, changes (IP, subnet, ID),
 * deletions and relists.  Subnets come from a few overlapping candidates
 * of different lengths and IPs from a few values, so that two nodes
 * share a subnet or an IP and the longest-prefix lookup has to choose.
 */
#include "agent/nodecache.h"
#include "test.h"

#include <stdio.h>

enum { NODES = 40, ADDRS = 6, STEPS = 30000 };

static const char *const subnets[] = {
	"10.128.0.0/23", "10.128.2.0/23", "10.128.4.0/23", "10.128.4.0/24",
	"10.128.0.0/16", "10.129.0.0/23", "10.128.5.128/25",
};
#define NSUBNETS (sizeof(subnets) / sizeof(subnets[0]))

struct mnode {
	bool live, gone;
	in_addr_t ip;
	struct cidr subnet;
	uint32_t id, gen;
};

static struct mnode model[NODES];
static char names[NODES][24];
static uint32_t mgen;

static void check_node(const struct nodecache *c, int i)
{
	const struct nodecache_node *n = nodecache_find(c, names[i]);

	CHECK_EQ(n != NULL, model[i].live);
	if (!n)
		return;
	CHECK_STR(n->name, names[i]);
	CHECK_EQ(n->ip, model[i].ip);
	CHECK_EQ(n->subnet.addr, model[i].subnet.addr);
	CHECK_EQ(n->subnet.len, model[i].subnet.len);
	CHECK_EQ(n->id, model[i].id);
}

static int index_of(const struct nodecache_node *n)
{
	int i;

	(void)sscanf(n->name, "node-%d", &i);
	return i;
}

static void check_subnet(const struct nodecache *c, const struct cidr *s)
{
	size_t want = 0, got = 0;

	for (int i = 0; i < NODES; i++)
		want += model[i].live && model[i].subnet.addr == s->addr && model[i].subnet.len == s->len;
	for (const struct nodecache_node *n = nodecache_by_subnet(c, s); n; n = nodecache_next_subnet(n)) {
		CHECK(n->subnet.addr == s->addr && n->subnet.len == s->len && model[index_of(n)].live);
		got++;
	}
	CHECK_EQ(got, want);
}

static void check_ip(const struct nodecache *c, in_addr_t ip)
{
	size_t want = 0, got = 0;

	for (int i = 0; i < NODES; i++)
		want += model[i].live && model[i].ip == ip;
	for (const struct nodecache_node *n = nodecache_by_ip(c, ip); n; n = nodecache_next_ip(n)) {
		CHECK(n->ip == ip && model[index_of(n)].live);
		got++;
	}
	CHECK_EQ(got, want);
}

/* the longest live subnet holding ip, as a linear search finds it */
static void check_containing(const struct nodecache *c, uint32_t ip)
{
	const struct nodecache_node *n = nodecache_containing(c, ip);
	int best = -1;

	for (int i = 0; i < NODES; i++)
		if (model[i].live && cidr_contains_ip(&model[i].subnet, ip) &&
		    (best < 0 || model[i].subnet.len > model[best].subnet.len))
			best = i;
	CHECK_EQ(n != NULL, best >= 0);
	if (n) {
		CHECK(cidr_contains_ip(&n->subnet, ip));
		CHECK_EQ(n->subnet.len, model[best].subnet.len);
	}
}

static void check_all(const struct nodecache *c, uint64_t *st)
{
	size_t live = 0, walked = 0;

	for (int i = 0; i < NODES && !test_failed(); i++) {
		live += model[i].live;
		check_node(c, i);
	}
	for (size_t s = 0; s < NSUBNETS && !test_failed(); s++) {
		struct cidr x;

		CHECK_EQ(cidr_parse(subnets[s], &x), 0);
		check_subnet(c, &x);
	}
	for (int a = 0; a < ADDRS && !test_failed(); a++)
		check_ip(c, htonl(0xc0a80001u + (uint32_t)a));
	for (int k = 0; k < 50 && !test_failed(); k++)	/* inside and around the subnets */
		check_containing(c, 0x0a800000u + test_rnd(st, 0x30000));
	for (const struct nodecache_node *n = nodecache_first(c); n; n = nodecache_next(c, n))
		walked++;
	CHECK_EQ(nodecache_count(c), live);
	CHECK_EQ(walked, live);
}

static void set_node(struct nodecache *c, uint64_t *st, int i)
{
	struct mnode *m = &model[i];
	struct nodecache_in in = { .name = names[i] };

	CHECK_EQ(cidr_parse(subnets[test_rnd(st, NSUBNETS)], &m->subnet), 0);
	m->ip = htonl(0xc0a80001u + test_rnd(st, ADDRS));
	m->id = test_rnd(st, 5);
	in.ip = m->ip;
	in.subnet = m->subnet;
	in.id = m->id;
	CHECK(nodecache_set(c, &in) != NULL);
	m->live = true;
	m->gen = mgen;
}

static void on_gone(void *arg, const struct nodecache_node *n)
{
	(void)arg;
	model[index_of(n)].gone = true;
}

TEST(nodecache_random_against_model)
{
	struct nodecache c = { 0 };
	uint64_t st = test_seed() | 1;

	for (int i = 0; i < NODES; i++)
		snprintf(names[i], sizeof(names[i]), "node-%d", i);
	memset(model, 0, sizeof(model));
	mgen = 0;
	for (int step = 0; step < STEPS && !test_failed(); step++) {
		int i = (int)test_rnd(&st, NODES);
		uint32_t op = test_rnd(&st, 100);

		if (op < 55) {
			set_node(&c, &st, i);
		} else if (op < 90) {
			struct nodecache_node *n = nodecache_find(&c, names[i]);

			if (n)
				nodecache_del(&c, n);
			model[i].live = false;
		} else if (op < 93) {	/* a relist keeping a random part */
			uint32_t keep = test_rnd(&st, 101);

			nodecache_begin_list(&c);
			mgen++;
			for (int j = 0; j < NODES; j++) {
				model[j].gone = false;
				if ((model[j].live && test_rnd(&st, 100) < keep) || test_rnd(&st, 20) == 0)
					set_node(&c, &st, j);
			}
			nodecache_sweep(&c, on_gone, NULL);
			for (int j = 0; j < NODES; j++) {
				bool stale = model[j].live && model[j].gen != mgen;

				CHECK_EQ(model[j].gone, stale);
				if (stale)
					model[j].live = false;
			}
		}
		if (step % 5 == 0 || op >= 90)
			check_all(&c, &st);
	}
	check_all(&c, &st);
	nodecache_free(&c);
	CHECK_EQ(nodecache_count(&c), 0);
}

TEST(nodecache_refuses_bad_length)
{
	struct nodecache c = { 0 };
	struct nodecache_in in = { .name = "n", .subnet = { .addr = 0, .len = 33 } };

	CHECK(nodecache_set(&c, &in) == NULL);
	CHECK_EQ(nodecache_count(&c), 0);
	nodecache_free(&c);
}
