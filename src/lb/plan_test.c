/*
 * plan_test.c — which changes are runtime commands and which reload:
 * scaling within the slots, a redirect, a certificate rotation, a new
 * listener, a new backend, slots outgrown (servers added at run time),
 * past the cap.  And a randomized cross-check: the server commands of a
 * plan, played on a model of the old slots (added slots included), give
 * exactly the new slots.
 */
#include "lb/lb_fixture.h"
#include "lb/plan.h"
#include "lb/render.h"
#include "test.h"

/* the slots the tests lay pools out with (the engine's default is fewer) */
#define TEST_SLOTS 8

#include <stdio.h>

struct pair {
	struct lb_state *a, *b;
	struct lb_layout *la, *lb;
	struct lb_plan plan;
};

/* plan from objects a to objects b (consumed), b laid out sticky to a */
static int plan_of(struct pair *p, json_t **a, size_t na, json_t **b, size_t nb, size_t min_slots)
{
	memset(p, 0, sizeof(*p));
	p->a = fix_state(a, na);
	p->b = fix_state(b, nb);
	if (!p->a || !p->b)
		return -1;
	p->la = lb_layout_build(p->a, NULL, min_slots, NULL, 0);
	p->lb = lb_layout_build(p->b, p->la, min_slots, NULL, 0);
	if (!p->la || !p->lb)
		return -1;
	return lb_plan_make(p->la, p->lb, "/state", &p->plan);
}

static void pair_free(struct pair *p)
{
	lb_plan_clear(&p->plan);
	lb_layout_free(p->la);
	lb_layout_free(p->lb);
	lb_state_free(p->a);
	lb_state_free(p->b);
}

static size_t count_ops(const struct lb_plan *plan, const char *prefix)
{
	size_t n = 0;

	for (size_t i = 0; i < plan->n_ops; i++)
		n += strncmp(plan->ops[i].command, prefix, strlen(prefix)) == 0;
	return n;
}

TEST(plan_first_start_reloads)
{
	struct lb_plan plan;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	struct lb_state *s = fix_state(a, 1);
	struct lb_layout *l = lb_layout_build(s, NULL, 8, NULL, 0);

	CHECK(lb_plan_make(NULL, l, "/state", &plan) == 0);
	CHECK(plan.reload);
	lb_plan_clear(&plan);
	CHECK(lb_plan_make(l, l, "/state", &plan) == 0);
	CHECK(!plan.reload && plan.n_ops == 0);	/* nothing changed: nothing to do */
	lb_layout_free(l);
	lb_state_free(s);
}

TEST(plan_scale_1_to_50_within_slots_is_runtime)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL) };

	CHECK(plan_of(&p, a, 1, b, 1, 64) == 0);
	CHECK(!p.plan.reload);
	CHECK_EQ(p.plan.servers, 49);
	CHECK_EQ(count_ops(&p.plan, "set server weft--Shared-L7-0:a.example.com_api/api:"), 98);	/* addr + ready */
	CHECK_EQ(count_ops(&p.plan, "set weight "), 49);
	CHECK_EQ(count_ops(&p.plan, "set server weft--Shared-L7-0:a.example.com_api/api:50 addr 10.0.1.50 port 8080"), 1);
	CHECK_EQ(p.plan.maps, 0);
	pair_free(&p);
}

#define API "weft--Shared-L7-0:a.example.com_api/api:"

TEST(plan_scale_1_to_50_past_the_slots_adds_servers)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL) };
	const struct lb_slot_pool *sp;
	char *cfg = NULL;

	CHECK(plan_of(&p, a, 1, b, 1, TEST_SLOTS) == 0);
	CHECK(!p.plan.reload);
	sp = &lb_layout_find_backend(p.lb, "weft--Shared-L7-0:a.example.com_api")->pools[0];
	CHECK_EQ(sp->n_slots, 64);	/* 8 doubled until 50 fit */
	CHECK_EQ(p.plan.servers, 49);
	CHECK_EQ(p.plan.added, 56);
	/* slots 2..8 filled as before: addr, weight, ready */
	CHECK_EQ(count_ops(&p.plan, "set server " API), 14);
	CHECK_EQ(count_ops(&p.plan, "set weight " API), 7);
	/* slots 9..64 added with their server line's arguments */
	CHECK_EQ(count_ops(&p.plan, "add server " API), 56);
	CHECK_EQ(count_ops(&p.plan, "add server " API "9 10.0.1.9:8080 weight 256 check inter 2s fall 2 rise 1"), 1);
	CHECK_EQ(count_ops(&p.plan, "add server " API "64 0.0.0.0:0 weight 0 disabled check inter 2s fall 2 rise 1"), 1);
	CHECK_EQ(count_ops(&p.plan, "enable health " API), 56);
	CHECK_EQ(count_ops(&p.plan, "enable server " API), 42);	/* 9..50 */
	CHECK_EQ(count_ops(&p.plan, "del server "), 0);
	/* the file says the same */
	CHECK(lb_render_cfg(p.lb, "/state", false, &cfg) == 0);
	CHECK_CONTAINS(cfg, "\tserver api:9 10.0.1.9:8080 weight 256 check inter 2s fall 2 rise 1\n");
	CHECK_CONTAINS(cfg, "\tserver api:64 0.0.0.0:0 weight 0 disabled check inter 2s fall 2 rise 1\n");
	free(cfg);
	for (size_t i = 0; i < p.plan.n_ops; i++)
		if (strncmp(p.plan.ops[i].command, "add server", 10) == 0)
			CHECK_STR(p.plan.ops[i].expect, "New server registered");
	pair_free(&p);
}

TEST(plan_scale_1_to_50_and_back_keeps_the_slots)
{
	json_t *o[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL),
			fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL),
			fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	struct lb_state *s[3];
	struct lb_layout *l[3] = { NULL, NULL, NULL };
	struct lb_plan plan[2];

	for (int i = 0; i < 3; i++) {
		s[i] = fix_state(&o[i], 1);
		l[i] = lb_layout_build(s[i], i ? l[i - 1] : NULL, TEST_SLOTS, NULL, 0);
		CHECK(l[i]);
	}
	CHECK(lb_plan_make(l[0], l[1], "/state", &plan[0]) == 0 && !plan[0].reload);
	CHECK(lb_plan_make(l[1], l[2], "/state", &plan[1]) == 0 && !plan[1].reload);
	CHECK_EQ(plan[1].added, 0);
	CHECK_EQ(count_ops(&plan[1], "set server " API), 49);	/* state maint */
	CHECK_EQ(count_ops(&plan[1], "del server "), 0);
	CHECK_EQ(lb_layout_find_backend(l[2], "weft--Shared-L7-0:a.example.com_api")->pools[0].n_slots, 64);
	for (int i = 0; i < 2; i++)
		lb_plan_clear(&plan[i]);
	for (int i = 0; i < 3; i++) {
		lb_layout_free(l[i]);
		lb_state_free(s[i]);
	}
}

/* n servers 10.1.<i / 250>.<i % 250 + 1>:8080 */
static json_t *many_servers(int n)
{
	json_t *a = json_array();
	char ip[32];

	for (int i = 0; i < n; i++) {
		snprintf(ip, sizeof(ip), "10.1.%d.%d", i / 250, i % 250 + 1);
		json_array_append_new(a, json_pack("{s:s, s:i}", "ip", ip, "port", 8080));
	}
	return a;
}

TEST(plan_slots_past_the_cap_reload)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", many_servers(1000), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", many_servers(LB_SLOTS_MAX + 1), NULL) };

	CHECK(plan_of(&p, a, 1, b, 1, TEST_SLOTS) == 0);
	CHECK(p.plan.reload);
	CHECK_CONTAINS(p.plan.reason, "pool api needs 2048 slots, more than the 1024 added at run time");
	CHECK_EQ(p.plan.n_ops, 0);
	pair_free(&p);
}

TEST(plan_slots_fewer_than_run_reload)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };

	/* b laid out sticky keeps 64; a fresh layout of b has 8 */
	CHECK(plan_of(&p, a, 1, b, 1, TEST_SLOTS) == 0);
	CHECK(!p.plan.reload);
	lb_plan_clear(&p.plan);
	lb_layout_free(p.lb);
	p.lb = lb_layout_build(p.b, NULL, TEST_SLOTS, NULL, 0);
	CHECK(p.lb && lb_plan_make(p.la, p.lb, "/state", &p.plan) == 0);
	CHECK(p.plan.reload);
	CHECK_CONTAINS(p.plan.reason, "pool api: 8 slots, 64 run");
	pair_free(&p);
}

TEST(plan_scale_down_is_runtime)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 8, 0xff), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 8, 0x01), NULL) };

	CHECK(plan_of(&p, a, 1, b, 1, 8) == 0);
	CHECK(!p.plan.reload);
	CHECK_EQ(count_ops(&p.plan, "set server weft--Shared-L7-0:a.example.com_api/api:"), 7);
	CHECK_CONTAINS(p.plan.ops[0].command, "state maint");
	pair_free(&p);
}

TEST(plan_redirect_is_a_map_replace)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), "s.example.com") };

	CHECK(plan_of(&p, a, 1, b, 1, 8) == 0);
	CHECK(!p.plan.reload);
	CHECK_EQ(p.plan.n_ops, 1);
	CHECK_EQ(p.plan.ops[0].kind, LB_OP_MAP_REPLACE);
	CHECK_STR(p.plan.ops[0].command, "/state/maps/weft--Shared-L7-0:80.redirects.map");
	CHECK_STR(p.plan.ops[0].payload, "s.example.com 302~https://s.example.com\n");
	pair_free(&p);
}

TEST(plan_certificate_rotation_is_runtime)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL), fix_child("t.example.com", "tls"),
			fix_cert("tls", "OLD") };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL), fix_child("t.example.com", "tls"),
			fix_cert("tls", "NEW") };

	CHECK(plan_of(&p, a, 3, b, 3, 8) == 0);
	CHECK(!p.plan.reload);
	CHECK_EQ(p.plan.n_ops, 2);
	CHECK_STR(p.plan.ops[0].command, "set ssl cert /state/certs/weft--Shared-L7-0:443/t.example.com.pem");
	CHECK_CONTAINS(p.plan.ops[0].payload, "NEW");
	CHECK(p.plan.ops[0].secret);
	CHECK_STR(p.plan.ops[1].command, "commit ssl cert /state/certs/weft--Shared-L7-0:443/t.example.com.pem");
	pair_free(&p);
}

TEST(plan_new_sni_child_is_a_new_backend_so_reload)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL), fix_cert("tls", "T") };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL), fix_child("t.example.com", "tls"),
			fix_cert("tls", "T") };

	CHECK(plan_of(&p, a, 2, b, 3, 8) == 0);
	CHECK(p.plan.reload);
	CHECK_CONTAINS(p.plan.reason, "backend weft--shop-t.example.com-s:t.example.com");
	pair_free(&p);
}

TEST(plan_new_listener_reloads)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.2", fix_servers(1, 1, 1), NULL) };

	CHECK(plan_of(&p, a, 1, b, 1, 8) == 0);
	CHECK(p.plan.reload);
	CHECK_CONTAINS(p.plan.reason, "bind 192.168.202.2:");
	pair_free(&p);
}

/* a model of the slots: name -> used, ip, port, weight; health: its
 * check was enabled */
struct model_slot {
	char name[160];
	bool used, health;
	uint32_t ip;
	unsigned port, weight;
};

#define MODEL_MAX 256

static struct model_slot *find(struct model_slot *m, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

static size_t model_of(const struct lb_layout *l, struct model_slot *m, size_t cap)
{
	size_t n = 0;

	for (size_t b = 0; b < l->n_backends; b++)
		for (size_t p = 0; p < l->backends[b].n_pools; p++)
			for (size_t s = 0; s < l->backends[b].pools[p].n_slots && n < cap; s++, n++) {
				const struct lb_slot *sl = &l->backends[b].pools[p].slots[s];

				snprintf(m[n].name, sizeof(m[n].name), "%s/%s:%zu", l->backends[b].name,
					 l->backends[b].pools[p].pool, s + 1);
				m[n].used = sl->used;
				m[n].health = true;
				m[n].ip = sl->used ? sl->ip : 0;
				m[n].port = sl->used ? sl->port : 0;
				m[n].weight = sl->weight;
			}
	return n;
}

/* play one command on the model (*n slots, MODEL_MAX room): 0, or -1 */
static int play(struct model_slot *m, size_t *n, const char *command)
{
	char name[160], what[16], rest[256];
	unsigned a, b, c, d, port, w;
	struct model_slot *s;

	if (sscanf(command, "set weight %159s %u", name, &w) == 2 && (s = find(m, *n, name))) {
		s->weight = w;
		return 0;
	}
	if (sscanf(command, "set server %159s addr %u.%u.%u.%u port %u", name, &a, &b, &c, &d, &port) == 6 &&
	    (s = find(m, *n, name))) {
		s->ip = a << 24 | b << 16 | c << 8 | d;
		s->port = port;
		return 0;
	}
	if (sscanf(command, "set server %159s state %15s", name, what) == 2 && (s = find(m, *n, name))) {
		s->used = strcmp(what, "ready") == 0;
		if (!s->used)
			s->ip = s->port = s->weight = 0;	/* a freed slot: its address no longer counts */
		return 0;
	}
	/* a dynamic server: in maintenance, its check off, until enabled */
	if (sscanf(command, "add server %159s %u.%u.%u.%u:%u weight %u %255[^\n]", name, &a, &b, &c, &d, &port, &w,
		   rest) == 8 && !find(m, *n, name) && *n < MODEL_MAX && strstr(rest, "check")) {
		s = &m[(*n)++];
		*s = (struct model_slot){ .ip = a << 24 | b << 16 | c << 8 | d, .port = port, .weight = w };
		snprintf(s->name, sizeof(s->name), "%s", name);
		return 0;
	}
	if (sscanf(command, "enable health %159s", name) == 1 && (s = find(m, *n, name)) && !s->health) {
		s->health = true;
		return 0;
	}
	if (sscanf(command, "enable server %159s", name) == 1 && (s = find(m, *n, name)) && !s->used) {
		s->used = true;
		return 0;
	}
	return -1;
}

/* the model and the slots of l hold the same, slot by slot */
static bool model_is(struct model_slot *m, size_t n, const struct lb_layout *l)
{
	static struct model_slot want[MODEL_MAX];
	size_t nw = model_of(l, want, MODEL_MAX);

	if (nw != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct model_slot *s = find(m, n, want[i].name);

		if (!s || s->used != want[i].used || !s->health)
			return false;
		if (s->used && (s->ip != want[i].ip || s->port != want[i].port || s->weight != want[i].weight))
			return false;
	}
	return true;
}

TEST(plan_server_commands_reach_the_new_slots_randomized)
{
	uint64_t rnd = test_seed() | 1;
	unsigned long long mask = 1;
	struct lb_state *s = NULL;
	struct lb_layout *applied = NULL;
	static struct model_slot model[MODEL_MAX];
	size_t grown = 0;

	{
		json_t *o = fix_shared("192.168.202.1", fix_servers(1, 60, mask), NULL);

		s = fix_state(&o, 1);
		applied = lb_layout_build(s, NULL, TEST_SLOTS, NULL, 0);
	}
	CHECK(applied);
	for (int round = 0; round < 300; round++) {
		/* few servers at first, then any of 60: slots grow 8 -> 64 */
		unsigned bits = round < 100 ? 8 + (unsigned)round / 2 : 60;
		unsigned long long next = ((unsigned long long)test_rnd(&rnd, 1u << 30) << 30 |
					   test_rnd(&rnd, 1u << 30)) & ((1ull << bits) - 1);
		json_t *o = fix_shared("192.168.202.1", fix_servers(1, 60, next), NULL);
		struct lb_state *ns = fix_state(&o, 1);
		struct lb_layout *nl = lb_layout_build(ns, applied, TEST_SLOTS, NULL, 0);
		struct lb_plan plan;
		size_t n = model_of(applied, model, MODEL_MAX);
		bool bad = false;

		if (!nl || lb_plan_make(applied, nl, "/state", &plan) != 0 || plan.reload) {
			test_fail(__FILE__, __LINE__, "round %d: no runtime plan", round);
			lb_layout_free(nl);
			lb_state_free(ns);
			break;
		}
		grown += plan.added;
		for (size_t i = 0; i < plan.n_ops && !bad; i++)
			bad = play(model, &n, plan.ops[i].command) != 0;
		if (bad || !model_is(model, n, nl)) {
			test_fail(__FILE__, __LINE__, "round %d: the commands do not give the new slots", round);
			round = 300;
		}
		lb_plan_clear(&plan);
		lb_layout_free(applied);
		lb_state_free(s);
		applied = nl;
		s = ns;
		mask = next;
	}
	CHECK(grown >= 56);	/* the slots did grow: 8 -> 64 at least */
	lb_layout_free(applied);
	lb_state_free(s);
}
