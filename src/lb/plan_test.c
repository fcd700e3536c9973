/*
 * plan_test.c — which changes are runtime commands and which reload:
 * scaling within the slots, a redirect, a certificate rotation, a new
 * listener, a new backend, slots outgrown.  And a randomized cross-check:
 * the server commands of a plan, played on a model of the old slots,
 * give exactly the new slots.
 */
#include "lb/lb_fixture.h"
#include "lb/plan.h"
#include "test.h"

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

TEST(plan_scale_past_the_slots_reloads)
{
	struct pair p;
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL) };

	CHECK(plan_of(&p, a, 1, b, 1, 8) == 0);
	CHECK(p.plan.reload);
	CHECK_CONTAINS(p.plan.reason, "server api:9 SLOT");
	CHECK_EQ(p.plan.n_ops, 0);
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

/* a model of the slots: name -> used, ip, port, weight */
struct model_slot {
	char name[160];
	bool used;
	uint32_t ip;
	unsigned port, weight;
};

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
				m[n].ip = sl->used ? sl->ip : 0;
				m[n].port = sl->used ? sl->port : 0;
				m[n].weight = sl->weight;
			}
	return n;
}

/* play one "set server|set weight" command on the model: 0, or -1 */
static int play(struct model_slot *m, size_t n, const char *command)
{
	char name[160], what[16];
	unsigned a, b, c, d, port, w;
	struct model_slot *s;

	if (sscanf(command, "set weight %159s %u", name, &w) == 2 && (s = find(m, n, name))) {
		s->weight = w;
		return 0;
	}
	if (sscanf(command, "set server %159s addr %u.%u.%u.%u port %u", name, &a, &b, &c, &d, &port) == 6 &&
	    (s = find(m, n, name))) {
		s->ip = a << 24 | b << 16 | c << 8 | d;
		s->port = port;
		return 0;
	}
	if (sscanf(command, "set server %159s state %15s", name, what) == 2 && (s = find(m, n, name))) {
		s->used = strcmp(what, "ready") == 0;
		if (!s->used)
			s->ip = s->port = s->weight = 0;	/* a freed slot: its address no longer counts */
		return 0;
	}
	return -1;
}

TEST(plan_server_commands_reach_the_new_slots_randomized)
{
	uint64_t rnd = test_seed() | 1;
	unsigned long long mask = 1;
	struct lb_state *s = NULL;
	struct lb_layout *applied = NULL;
	static struct model_slot model[256], want[256];

	{
		json_t *o = fix_shared("192.168.202.1", fix_servers(1, 40, mask), NULL);

		s = fix_state(&o, 1);
		applied = lb_layout_build(s, NULL, 64, NULL, 0);
	}
	CHECK(applied);
	for (int round = 0; round < 300; round++) {
		unsigned long long next = ((unsigned long long)test_rnd(&rnd, 1u << 20) << 20 |
					   test_rnd(&rnd, 1u << 20)) & ((1ull << 40) - 1);
		json_t *o = fix_shared("192.168.202.1", fix_servers(1, 40, next), NULL);
		struct lb_state *ns = fix_state(&o, 1);
		struct lb_layout *nl = lb_layout_build(ns, applied, 64, NULL, 0);
		struct lb_plan plan;
		size_t n = model_of(applied, model, 256), nw;
		bool bad = false;

		if (!nl || lb_plan_make(applied, nl, "/state", &plan) != 0 || plan.reload) {
			test_fail(__FILE__, __LINE__, "round %d: no runtime plan", round);
			lb_layout_free(nl);
			lb_state_free(ns);
			break;
		}
		for (size_t i = 0; i < plan.n_ops && !bad; i++)
			bad = play(model, n, plan.ops[i].command) != 0;
		for (size_t i = 0; i < n; i++)	/* free slots: only whether they are used counts */
			if (!model[i].used)
				model[i].ip = model[i].port = model[i].weight = 0;
		nw = model_of(nl, want, 256);
		for (size_t i = 0; i < nw; i++)
			if (!want[i].used)
				want[i].ip = want[i].port = want[i].weight = 0;
		if (bad || nw != n || memcmp(model, want, n * sizeof(*model)) != 0) {
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
	lb_layout_free(applied);
	lb_state_free(s);
}
