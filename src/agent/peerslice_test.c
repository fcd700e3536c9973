/*
 * peerslice_test.c — the PodPeerSlices in the agent against a naive model
 * (which slice holds which pod, searched linearly), over random sequences
 * of what the watch brings: slices written (pods joining, leaving,
 * changing address or labels), deleted, listed again, and all forgotten
 * (no policy names pods as peers any more).  The agent is real but for
 * its kernel: an in-memory datapath, its pod and node caches, its policy
 * compiler.  After every step:
 *   - every pod a slice of another node holds is in the pod cache with
 *     its node and address, known to the policy as that address's pod,
 *     and in weft_ipcache with its node's IP and its namespace's VNID,
 *     and (after the policy's apply) an identity number that it shares
 *     with exactly the peers of its namespace and labels;
 *   - nothing else of another node is left in any of them (every address
 *     a peer ever had is checked);
 *   - this node's slices change nothing, and its own pods (the Pods
 *     watch's) are never touched, whatever the slices say of their names.
 */
#include "agent/agent.h"
#include "test.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

enum { NODES = 4, PER_NODE = 12, SLICES = 2, OWN = 4, STEPS = 4000 };

#define SELF "node-0"

struct mpod {
	int slice;		/* 0: in none; else 1..SLICES */
	int variant;		/* address */
	int label;		/* identity: labels v=<label> */
};

static struct mpod model[NODES][PER_NODE];

static const char *ns_of(int k)
{
	return k % 2 ? "blue" : "red";
}

static in_addr_t ip_of(int n, int k, int variant)
{
	return htonl(0x0a800000u | (uint32_t)n << 8 | (uint32_t)(2 + k + PER_NODE * variant));
}

static in_addr_t node_ip(int n)
{
	return htonl(0xc0a80001u + (uint32_t)n);
}

static void slice_name(char *buf, size_t len, int n, int s)
{
	snprintf(buf, len, "node-%d-%d", n, s);
}

/* The slice object as the controller writes it. */
static char *slice_text(int n, int s)
{
	json_t *ids = json_array(), *pods = json_array(), *obj;
	char name[32], node[24], pod[32], ip[INET_ADDRSTRLEN];
	char *text;

	slice_name(name, sizeof(name), n, s);
	snprintf(node, sizeof(node), "node-%d", n);
	for (int k = 0; k < PER_NODE; k++) {
		struct in_addr ia = { .s_addr = ip_of(n, k, model[n][k].variant) };

		if (model[n][k].slice != s)
			continue;
		inet_ntop(AF_INET, &ia, ip, sizeof(ip));
		snprintf(pod, sizeof(pod), "p%d-%d", n, k);
		json_array_append_new(ids, json_pack("{s:s, s:{s:s}, s:[{s:s, s:s, s:i}]}", "namespace", ns_of(k),
						     "labels", "v", model[n][k].label ? "one" : "two", "ports",
						     "name", "http", "protocol", "TCP", "port", 80 + k % 2));
		json_array_append_new(pods, json_pack("{s:s, s:s, s:I}", "name", pod, "ip", ip, "identity",
						      (json_int_t)json_array_size(ids) - 1));
	}
	obj = json_pack("{s:s, s:s, s:{s:s}, s:s, s:o, s:o}", "apiVersion", "network.weft.io/v1", "kind",
			"PodPeerSlice", "metadata", "name", name, "node", node, "identities", ids, "pods", pods);
	text = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return text;
}

/* Hand slice (n, s) as it is in the model to fn. */
static void deliver(struct agent *a, int n, int s, void (*fn)(struct agent *a, struct jval obj))
{
	char *text = slice_text(n, s);
	struct jview v;
	struct jview_error err;

	if (jview_parse(&v, text, strlen(text), &err) < 0) {
		test_fail(__FILE__, __LINE__, "slice text does not parse");
	} else {
		fn(a, jview_root(&v));
		jview_free(&v);
	}
	free(text);
}

static void own_pods(struct agent *a)
{
	for (int k = 0; k < OWN; k++) {
		char name[32], ip[INET_ADDRSTRLEN];
		struct in_addr ia = { .s_addr = ip_of(0, k, 3) };
		json_t *pod;

		snprintf(name, sizeof(name), "p0-%d", k);
		inet_ntop(AF_INET, &ia, ip, sizeof(ip));
		pod = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s}}", "metadata", "name", name, "namespace",
				ns_of(k), "labels", "own", "yes", "spec", "nodeName", SELF, "status", "podIP", ip);
		CHECK(podcache_set(&a->pods, &(struct podcache_in){ .ns = ns_of(k), .name = name, .node = SELF,
								   .container_id = "c", .ip = ia.s_addr }));
		policy_pod_set(a->policy, pod);
		json_decref(pod);
	}
}

/* After an apply, peers share an identity number exactly when they share
 * namespace and labels (their ports follow the namespace here). */
static void check_identities(struct agent *a)
{
	uint32_t seen[2][2] = { { 0 } };	/* [namespace][label] */

	CHECK_EQ(policy_apply(a->policy), 0);
	for (int n = 1; n < NODES; n++)
		for (int k = 0; k < PER_NODE; k++) {
			const struct mpod *m = &model[n][k];
			struct weft_ipcache_entry e;
			uint32_t *id = &seen[k % 2][m->label];

			if (!m->slice)
				continue;
			CHECK_EQ(datapath_ipcache_get(a->dp, ip_of(n, k, m->variant), &e), 0);
			CHECK(e.identity != 0);
			if (!*id)
				*id = e.identity;
			CHECK_EQ(e.identity, *id);
		}
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			CHECK(!seen[i / 2][i % 2] || seen[i / 2][i % 2] != seen[j / 2][j % 2]);
}

static void check_all(struct agent *a)
{
	size_t others = 0, want = 0;

	for (int n = 0; n < NODES; n++)
		for (int k = 0; k < PER_NODE; k++) {
			const struct mpod *m = &model[n][k];
			bool own = n == 0 && k < OWN, peer = n > 0 && m->slice;
			char name[32], node[24], who[64], want_who[96];
			const struct podcache_pod *p;

			snprintf(name, sizeof(name), "p%d-%d", n, k);
			snprintf(node, sizeof(node), "node-%d", n);
			p = podcache_find(&a->pods, ns_of(k), name);
			CHECK_EQ(p != NULL, own || peer);
			CHECK_EQ(policy_pod_known(a->policy, ns_of(k), name), own || peer);
			want += peer;
			if (p) {
				CHECK_STR(p->node->name, node);
				CHECK(p->ip == ip_of(n, k, own ? 3 : m->variant));
				CHECK_STR(podcache_container_id(p), own ? "c" : "");
			}
			for (int v = 0; v < 3; v++) {
				struct weft_ipcache_entry e;
				bool held = peer && m->variant == v;
				in_addr_t ip = ip_of(n, k, v);

				if (n == 0)
					continue;	/* this node's: the leases' */
				CHECK_EQ(datapath_ipcache_get(a->dp, ip, &e) == 0, held);
				if (!held)
					continue;
				CHECK(e.node_ip == node_ip(n));
				CHECK_EQ(e.vnid, k % 2 ? 20 : 10);
				policy_describe_addr(a->policy, ip, who, sizeof(who));
				snprintf(want_who, sizeof(want_who), "%s/%s", ns_of(k), name);
				CHECK_STR(who, want_who);
			}
		}
	for (const struct podcache_pod *p = podcache_first(&a->pods); p; p = podcache_next(&a->pods, p))
		others += !podcache_is_self(&a->pods, p);
	CHECK_EQ(others, want);
	CHECK_EQ(a->peers.pods, want);
}

/* Slice (n, s) changes: some of its pods leave, some pods of no slice
 * join, some move address or labels. */
static void change(uint64_t *st, int n, int s)
{
	for (int k = 0; k < PER_NODE; k++) {
		struct mpod *m = &model[n][k];

		if (m->slice == s && test_rnd(st, 4) == 0)
			m->slice = 0;
		else if (!m->slice && test_rnd(st, 3) == 0)
			m->slice = s;
		if (m->slice == s && test_rnd(st, 5) == 0)
			m->variant = (int)test_rnd(st, 3);
		if (m->slice == s && test_rnd(st, 5) == 0)
			m->label = (int)test_rnd(st, 2);
	}
}

TEST(peerslice_random_against_model)
{
	struct datapath_opts opts = { .in_memory = true };
	struct agent *a = calloc(1, sizeof(*a));
	uint64_t st = test_seed() | 1;
	char err[256];
	bool rebuilt;
	bool changed;

	CHECK(a);
	memset(model, 0, sizeof(model));
	a->o.node = SELF;
	a->node_ip = node_ip(0);
	a->subnet = (struct cidr){ .addr = 0x0a800000u, .len = 24 };
	CHECK_EQ(datapath_open(&opts, &a->dp, &rebuilt, err, sizeof(err)), 0);
	a->policy = policy_create(a->dp);
	CHECK(a->policy);
	podcache_init(&a->pods, SELF);
	for (int n = 0; n < NODES; n++) {
		char name[24];

		snprintf(name, sizeof(name), "node-%d", n);
		CHECK(nodecache_set(&a->nodes, &(struct nodecache_in){
			.name = name, .ip = node_ip(n), .id = (uint32_t)n + 1,
			.subnet = { .addr = 0x0a800000u | (uint32_t)n << 8, .len = 24 } }));
	}
	CHECK_EQ(podcache_netns_set(&a->pods, "red", 10, &changed), 0);
	CHECK_EQ(podcache_netns_set(&a->pods, "blue", 20, &changed), 0);
	policy_begin_list(a->policy, POLICY_NAMESPACES);
	policy_begin_list(a->policy, POLICY_PODS);
	policy_begin_list(a->policy, POLICY_NETPOLS);
	own_pods(a);
	policy_listed(a->policy, POLICY_NAMESPACES);
	policy_listed(a->policy, POLICY_PODS);
	policy_listed(a->policy, POLICY_NETPOLS);
	for (int step = 0; step < STEPS && !test_failed(); step++) {
		int n = (int)test_rnd(&st, NODES), s = 1 + (int)test_rnd(&st, SLICES);
		uint32_t op = test_rnd(&st, 100);

		if (op < 70) {
			change(&st, n, s);
			deliver(a, n, s, peerslice_apply);
		} else if (op < 85) {
			deliver(a, n, s, peerslice_remove);	/* its last state */
			for (int k = 0; k < PER_NODE; k++)
				if (model[n][k].slice == s)
					model[n][k].slice = 0;
		} else if (op < 97) {
			/* a relist: every slice as it is now, some changed, some
			 * gone (never sent) */
			peerslice_begin(a);
			for (int m = 0; m < NODES; m++)
				for (int t = 1; t <= SLICES; t++) {
					if (test_rnd(&st, 6) == 0) {
						for (int k = 0; k < PER_NODE; k++)
							if (model[m][k].slice == t)
								model[m][k].slice = 0;
						continue;
					}
					if (test_rnd(&st, 2))
						change(&st, m, t);
					deliver(a, m, t, peerslice_apply);
				}
			peerslice_listed(a);
		} else {
			peerslice_clear(a);
			memset(model, 0, sizeof(model));
		}
		check_all(a);
		check_identities(a);
	}
	peerslice_free(&a->peers);
	podcache_free(&a->pods);
	nodecache_free(&a->nodes);
	policy_destroy(a->policy);
	datapath_close(a->dp);
	free(a);
}
