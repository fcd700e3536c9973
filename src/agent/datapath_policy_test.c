/*
 * datapath_policy_test.c — NetworkPolicy in the data plane (bpf/lib/policy.h
 * and its callers), under BPF_PROG_TEST_RUN and, for vxlan_ingress, a real
 * VXLAN device (datapath_fixture.h says how).
 *
 * The maps are seeded directly, as the agent's compiler (policy.c) would
 * write them: identities in weft_ipcache, isolation and rule set in each
 * weft_endpoint, rule keys in weft_policy, ipBlock prefixes in
 * weft_policy_cidrs.  The node is seed_node()'s, plus pod S: a second pod
 * on the test-run ifindex, so that both ends of a connection can send.
 *
 * Every allowed connection is tracked (weft_policy_ct), and a tracked one
 * is not judged again: each test gives each connection its own ports.
 */
#include "agent/datapath.h"
#include "agent/datapath_fixture.h"
#include "test.h"

#define POD_S_IP	IP(10, 128, 0, 50)	/* a pod here that can send */
#define ID_A		16			/* pod identities */
#define ID_B		17
#define ID_S		18
#define ID_REMOTE	19
#define ID_BE		20
#define POLICY_A	100			/* rule sets */
#define POLICY_B	101
#define POLICY_S	102
#define POLICY_BE	103
#define OUTSIDE		IP(8, 8, 8, 8)

#define CHECK_DROPPED(r, reason)                                          \
	do {                                                              \
		CHECK_EQ((r).verdict, TC_ACT_SHOT);                       \
		CHECK_EQ((r).trace.action, WEFT_ACT_DROP);                \
		CHECK_EQ((r).trace.drop_reason, (reason));                \
	} while (0)

#define CHECK_ACTION(r, act)                                              \
	do {                                                              \
		CHECK((r).verdict != TC_ACT_SHOT);                        \
		CHECK_EQ((r).trace.action, (act));                        \
		CHECK_EQ((r).trace.drop_reason, WEFT_DROP_NONE);          \
	} while (0)

static int identity_put(struct datapath *dp, in_addr_t ip, in_addr_t node_ip, uint32_t id)
{
	struct weft_ipcache_entry e;

	memset(&e, 0, sizeof(e));
	e.node_ip = node_ip;
	e.vnid = VNID_A;
	e.identity = id;
	return datapath_ipcache_put(dp, ip, &e);
}

/* Pod S and the identities of A, B, S and the remote pod, on a node
 * seed_node() (or seed_services()) made. */
static int seed_policy_pods(struct datapath *dp)
{
	struct weft_endpoint s = endpoint(run_ifindex(), VNID_A, pod_a_mac, gw_a_mac);
	int rc;

	tenant_mac(POD_S_IP, s.pod_mac);
	if ((rc = datapath_endpoint_put(dp, POD_S_IP, &s)) < 0 ||
	    (rc = identity_put(dp, POD_A_IP, NODE_IP, ID_A)) < 0 ||
	    (rc = identity_put(dp, POD_B_IP, NODE_IP, ID_B)) < 0 ||
	    (rc = identity_put(dp, POD_S_IP, NODE_IP, ID_S)) < 0)
		return rc;
	return identity_put(dp, REMOTE_POD_IP, REMOTE_NODE_IP, ID_REMOTE);
}

static int seed_policy_node(struct datapath *dp)
{
	int rc = seed_node(dp);

	return rc < 0 ? rc : seed_policy_pods(dp);
}

/* ip's endpoint isolated as flags (WEFT_EP_F_ISOLATE_*, POLICY_FULL), rule set policy_id */
static int isolate(struct datapath *dp, in_addr_t ip, uint32_t flags, uint32_t policy_id)
{
	struct weft_endpoint ep;
	int rc;

	if ((rc = datapath_endpoint_get(dp, ip, &ep)) < 0)
		return rc;
	ep.flags &= ~(uint32_t)(WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT | WEFT_EP_F_POLICY_FULL);
	ep.flags |= flags;
	ep.policy_id = policy_id;
	return datapath_endpoint_put(dp, ip, &ep);
}

static struct weft_policy_key rule_key(uint32_t policy_id, uint8_t dir, uint32_t peer,
				       uint32_t prefixlen, uint8_t proto, uint16_t port)
{
	struct weft_policy_key k;

	memset(&k, 0, sizeof(k));
	k.prefixlen = prefixlen;
	k.policy_id = htonl(policy_id);
	k.peer = htonl(peer);
	k.dir = dir;
	k.proto = proto;
	k.port = htons(port);
	return k;
}

static int rule_put(struct datapath *dp, uint32_t policy_id, uint8_t dir, uint32_t peer,
		    uint32_t prefixlen, uint8_t proto, uint16_t port)
{
	struct weft_policy_key k = rule_key(policy_id, dir, peer, prefixlen, proto, port);
	struct weft_policy_value v = { .rule = 1 };

	return datapath_policy_put(dp, &k, &v);
}

static int rule_del(struct datapath *dp, uint32_t policy_id, uint8_t dir, uint32_t peer,
		    uint32_t prefixlen, uint8_t proto, uint16_t port)
{
	struct weft_policy_key k = rule_key(policy_id, dir, peer, prefixlen, proto, port);

	return datapath_policy_del(dp, &k);
}

/* The MAC pod_ingress expects of a sender on the test-run ifindex. */
static void sender_mac(in_addr_t src, uint8_t mac[6])
{
	if (src == POD_A_IP)
		memcpy(mac, pod_a_mac, 6);
	else
		tenant_mac(src, mac);
}

/* A packet of proto (TCP with flags, UDP, SCTP: ports; ICMP: an echo
 * request) from src to dst, as a pod on the test-run ifindex sends it. */
static void pkt_flow(struct pkt *p, uint8_t proto, in_addr_t src, uint16_t sport, in_addr_t dst,
		     uint16_t dport, uint8_t flags)
{
	uint8_t mac[6];

	sender_mac(src, mac);
	if (proto == IPPROTO_TCP) {
		pkt_tcp(p, gw_a_mac, mac, src, sport, dst, dport, flags, 1000, flags & TCP_ACK ? 1 : 0);
	} else if (proto == IPPROTO_ICMP) {
		pkt_ipv4_ext(p, gw_a_mac, mac, src, dst, 64, IPPROTO_ICMP, 5, 0);
		memset(l4_of(p), 0, 8);
		l4_of(p)[0] = 8;	/* echo request */
		put16(l4_of(p) + 4, sport);
		put16(l4_of(p) + 2, ip_checksum(l4_of(p), 20));
	} else {
		pkt_l4(p, gw_a_mac, mac, proto, src, sport, dst, dport, 8);
	}
}

/* pkt_flow() run through pod_ingress */
static int send_pod(struct fixture *f, uint8_t proto, in_addr_t src, uint16_t sport, in_addr_t dst,
		    uint16_t dport, uint8_t flags, struct result *r)
{
	struct pkt p;

	pkt_flow(&p, proto, src, sport, dst, dport, flags);
	return run_pod(f, &p, r);
}

static int count_policy_ct(const struct weft_ct_key *k, const struct weft_policy_ct_entry *e,
			   void *arg)
{
	(void)k;
	(void)e;
	(*(int *)arg)++;
	return 0;
}

static int policy_ct_count(struct fixture *f)
{
	int n = 0;

	return datapath_policy_ct_foreach(f->dp, count_policy_ct, &n) < 0 ? -1 : n;
}

static int policy_ct_lookup(struct fixture *f, in_addr_t saddr, uint16_t sport, in_addr_t daddr,
			    uint16_t dport, uint8_t proto, struct weft_policy_ct_entry *e)
{
	struct weft_ct_key k = ct_key(saddr, sport, daddr, dport, proto, 0);

	memset(e, 0, sizeof(*e));
	return datapath_policy_ct_get(f->dp, &k, e);
}

static uint64_t opened_of(struct fixture *f, in_addr_t client)
{
	uint64_t n = 0;

	return datapath_policy_ct_opened_get(f->dp, client, &n) < 0 ? 0 : n;
}

/* ---- 1. egress ---- */

DP_TEST(egress_isolated_without_rules_reaches_only_the_node)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_OUT, POLICY_A), 0);

	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40002, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, OUTSIDE, 443, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_EGRESS), 3);

	/* the node, by its gateway address and its own */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40004, GATEWAY_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40005, NODE_IP, 10250, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40006, GATEWAY_IP, 53, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);

	/* not isolated: everything goes */
	CHECK_EQ(isolate(f->dp, POD_A_IP, 0, POLICY_A), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40007, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40008, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_TUNNEL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40009, OUTSIDE, 443, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	CHECK_EQ(drops_total(f), 3);
}

DP_TEST(egress_rule_allows_its_peer_and_port_only)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_OUT, POLICY_A), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, ID_REMOTE, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 80), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_TUNNEL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40002, REMOTE_POD_IP, 81, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
}

/* ---- 2. ingress on a local pod ---- */

DP_TEST(ingress_rule_allows_peer_protocol_and_port)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 80), 0);

	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 42);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40002, POD_B_IP, 81, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40003, POD_B_IP, 80, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_ICMP, POD_A_IP, 1, POD_B_IP, 0, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	/* another peer, the right port */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40004, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 4);

	/* prefix 72: every protocol and port of A, ICMP included */
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_ALL, 0, 0), 0);
	CHECK_EQ(send_pod(f, IPPROTO_ICMP, POD_A_IP, 2, POD_B_IP, 0, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40005, POD_B_IP, 80, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40006, POD_B_IP, 81, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);

	/* peer 0: any peer, on TCP 81 */
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, WEFT_ID_ANY, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 81), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40007, POD_B_IP, 81, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40008, POD_B_IP, 82, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(rule_del(f->dp, POLICY_B, WEFT_POLICY_INGRESS, WEFT_ID_ANY, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 81), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40010, POD_B_IP, 81, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	/* a rule of another direction or rule set does not count */
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_EGRESS, ID_S, WEFT_POLICY_PREFIX_ALL, 0, 0), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_INGRESS, ID_S, WEFT_POLICY_PREFIX_ALL, 0, 0), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 40009, POD_B_IP, 82, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 8);
}

/* ---- 3. port ranges ---- */

DP_TEST(port_range_blocks_match_their_ports_only)
{
	static const struct {
		uint16_t port;
		bool allowed;
	} cases[] = {
		{ 7999, false }, { 8000, true }, { 8003, true }, { 8007, true }, { 8008, false },
		{ 8015, false }, { 8016, true }, { 8031, true }, { 8032, false }, { 1, false },
	};
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	/* 8000-8007 (2^3) and 8016-8031 (2^4) */
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT - 3,
			  IPPROTO_TCP, 8000), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT - 4,
			  IPPROTO_TCP, 8016), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, (uint16_t)(41000 + i), POD_B_IP,
				  cases[i].port, TCP_SYN, &r), 0);
		if (cases[i].allowed)
			CHECK_ACTION(r, WEFT_ACT_LOCAL);
		else
			CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	}
	/* the block is TCP's only */
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 42000, POD_B_IP, 8001, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
}

/* ---- randomized: the LPM rules against a linear scan ---- */

#define RND_RULES	12
#define RND_CIDR_ID	(WEFT_ID_CIDR | 7)	/* 10.128.0.0/24: A and S */

struct rnd_rule {
	uint32_t peer, prefixlen;
	uint8_t proto;
	uint16_t port;
};

/* Does the naive reference allow proto:port from a peer of identity id? */
static bool rnd_allows(const struct rnd_rule *rules, int n, uint32_t id, uint8_t proto,
		       uint16_t port)
{
	for (int i = 0; i < n; i++) {
		const struct rnd_rule *r = &rules[i];
		int k = WEFT_POLICY_PREFIX_PORT - (int)r->prefixlen;

		if (r->peer != id && r->peer != RND_CIDR_ID && r->peer != WEFT_ID_ANY)
			continue;
		if (r->prefixlen == WEFT_POLICY_PREFIX_ALL)
			return true;
		if (r->proto != proto)
			continue;
		if (r->prefixlen == WEFT_POLICY_PREFIX_PROTO || (port >> k) == (r->port >> k))
			return true;
	}
	return false;
}

DP_TEST(ingress_verdicts_match_a_linear_scan_of_random_rules)
{
	static const uint32_t peers[] = { ID_A, ID_S, WEFT_ID_ANY, RND_CIDR_ID, ID_B };
	struct rnd_rule rules[RND_RULES];
	uint64_t rnd = test_seed() | 1;
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	for (int i = 0; i < RND_RULES; i++) {
		struct rnd_rule *x = &rules[i];
		uint32_t kind = test_rnd(&rnd, 8), k = test_rnd(&rnd, 5);

		x->peer = peers[test_rnd(&rnd, 5)];
		x->prefixlen = kind == 0 ? WEFT_POLICY_PREFIX_ALL
			     : kind == 1 ? WEFT_POLICY_PREFIX_PROTO : WEFT_POLICY_PREFIX_PORT - k;
		x->proto = test_rnd(&rnd, 2) ? IPPROTO_TCP : IPPROTO_UDP;
		x->port = (uint16_t)((1000 + test_rnd(&rnd, 64)) & ~((1u << k) - 1));
		if (x->prefixlen == WEFT_POLICY_PREFIX_ALL) {
			x->proto = 0;
			x->port = 0;
		} else if (x->prefixlen == WEFT_POLICY_PREFIX_PROTO) {
			x->port = 0;
		}
		/* one rule in three arrives only after some traffic */
		if (i % 3 != 2)
			CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, x->peer, x->prefixlen,
					  x->proto, x->port), 0);
	}
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, IP(10, 128, 0, 0), 24,
					  RND_CIDR_ID), 0);
	for (int pass = 0; pass < 2; pass++) {
		struct rnd_rule live[RND_RULES];
		int n = 0;

		for (int i = 0; i < RND_RULES; i++)
			if (pass == 1 || i % 3 != 2)
				live[n++] = rules[i];
		for (int i = 0; i < 150; i++) {
			in_addr_t src = test_rnd(&rnd, 2) ? POD_A_IP : POD_S_IP;
			uint8_t proto = test_rnd(&rnd, 2) ? IPPROTO_TCP : IPPROTO_UDP;
			uint16_t port = (uint16_t)(990 + test_rnd(&rnd, 84));
			uint16_t sport = (uint16_t)(20000 + pass * 1000 + i);	/* never tracked yet */
			bool want = rnd_allows(live, n, src == POD_A_IP ? ID_A : ID_S, proto, port);

			CHECK_EQ(send_pod(f, proto, src, sport, POD_B_IP, port, TCP_SYN, &r), 0);
			if (want != (r.trace.action == WEFT_ACT_LOCAL) ||
			    (!want && r.trace.drop_reason != WEFT_DROP_POLICY_INGRESS))
				test_fail(__FILE__, __LINE__, "pass %d: %s %s:%u: want %s, got action %u reason %u",
					  pass, src == POD_A_IP ? "A" : "S",
					  proto == IPPROTO_TCP ? "TCP" : "UDP", port,
					  want ? "allowed" : "denied", r.trace.action, r.trace.drop_reason);
			CHECK(!test_failed());
		}
		for (int i = 0; i < RND_RULES && pass == 0; i++)
			if (i % 3 == 2)
				CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, rules[i].peer,
						  rules[i].prefixlen, rules[i].proto, rules[i].port), 0);
	}
}

/* ---- 4. CIDR identities ---- */

DP_TEST(cidr_identity_is_the_longest_prefix_of_the_rule_set)
{
	const uint32_t id1 = WEFT_ID_CIDR | 1, id3 = WEFT_ID_CIDR | 3;
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	/* A's egress: 10.0.0.0/16 except 10.0.2.0/24 (a hole: identity 0) */
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, IP(10, 0, 0, 0), 16, id1), 0);
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, IP(10, 0, 2, 0), 24, 0), 0);
	/* another rule set's prefixes, and A's ingress ones, change nothing
	 * for A's egress */
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_B, WEFT_POLICY_EGRESS, IP(10, 1, 0, 0), 16, id1), 0);
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_A, WEFT_POLICY_INGRESS, IP(10, 1, 0, 0), 16, id1), 0);
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_B, WEFT_POLICY_EGRESS, IP(10, 0, 5, 0), 24, 0), 0);
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_OUT, POLICY_A), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, id1, WEFT_POLICY_PREFIX_ALL, 0, 0), 0);

	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, IP(10, 0, 5, 5), 443, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40002, IP(10, 0, 255, 1), 53, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	/* in the /24 (an except): identity 0, not id1 */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, IP(10, 0, 2, 7), 443, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40004, IP(10, 1, 0, 1), 443, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);

	/* pod addresses have CIDR identities too: B (10.128.0.6) by its /24 */
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, IP(10, 128, 0, 0), 24, id3), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, id3, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 80), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40005, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40006, POD_B_IP, 81, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	/* the remote pod is outside 10.128.0.0/24 */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40007, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
}

/* ---- 5. SCTP ---- */

DP_TEST(sctp_rule_allows_its_port_only)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT,
			  132, 5000), 0);
	CHECK_EQ(send_pod(f, 132, POD_A_IP, 40001, POD_B_IP, 5000, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, 132, POD_A_IP, 40002, POD_B_IP, 5001, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, POD_B_IP, 5000, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40004, POD_B_IP, 5000, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
}

/* ---- 6. conntrack ---- */

DP_TEST(policy_ct_tracks_allowed_connections_both_ways)
{
	struct weft_policy_ct_entry e;
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	/* S takes A's connections on 80 */
	CHECK_EQ(isolate(f->dp, POD_S_IP, WEFT_EP_F_ISOLATE_IN, POLICY_S), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_S, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 80), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_S_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(policy_ct_count(f), 1);
	CHECK_EQ(policy_ct_lookup(f, POD_A_IP, 40001, POD_S_IP, 80, IPPROTO_TCP, &e), 0);
	CHECK_EQ(e.flags, WEFT_CT_F_SYN);
	CHECK_EQ(opened_of(f, POD_A_IP), 1);

	/* S now isolated both ways with no rule: its answer is a reply */
	CHECK_EQ(isolate(f->dp, POD_S_IP, WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT, POLICY_S + 50), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 80, POD_A_IP, 40001, TCP_SYN | TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_S_IP, 80, TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(policy_ct_lookup(f, POD_A_IP, 40001, POD_S_IP, 80, IPPROTO_TCP, &e), 0);
	CHECK_EQ(e.flags & WEFT_CT_F_ESTABLISHED, WEFT_CT_F_ESTABLISHED);
	CHECK_EQ(policy_ct_count(f), 1);

	/* new connections either way are judged, and denied */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 50000, POD_A_IP, 22, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40002, POD_S_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	/* a bare ACK opens nothing and is judged as well */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, POD_S_IP, 80, TCP_ACK, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	/* the established one lives on, both ways */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_S_IP, 80, TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 80, POD_A_IP, 40001, TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(policy_ct_count(f), 1);

	/* S's RST ends it at once and gives A's slot back */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 80, POD_A_IP, 40001, TCP_RST, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(policy_ct_count(f), 0);
	CHECK_EQ(opened_of(f, POD_A_IP), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_S_IP, 80, TCP_ACK, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 3);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_EGRESS), 1);
}

DP_TEST(policy_ct_keeps_connections_of_a_newly_isolated_pod)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	/* nobody isolated: tracked anyway, UDP by its first datagram */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_S_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40002, POD_S_IP, 53, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(policy_ct_count(f), 2);

	CHECK_EQ(isolate(f->dp, POD_S_IP, WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT, POLICY_S), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, 80, POD_A_IP, 40001, TCP_SYN | TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_S_IP, 53, POD_A_IP, 40002, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40002, POD_S_IP, 53, 0, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_EQ(send_pod(f, IPPROTO_UDP, POD_A_IP, 40003, POD_S_IP, 53, 0, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40004, POD_S_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(policy_ct_count(f), 2);
}

/* ---- 7. the cap ---- */

static void policy_ct_cap_body(struct fixture *f)
{
	struct result r;
	int i;

	CHECK_EQ(datapath_policy_ct_source_max(f->dp), 4);
	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, WEFT_ID_ANY, WEFT_POLICY_PREFIX_PROTO,
			  IPPROTO_TCP, 0), 0);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, (uint16_t)(40000 + i), POD_B_IP, 80,
				  TCP_SYN, &r), 0);
		CHECK_ACTION(r, WEFT_ACT_LOCAL);
	}
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40004, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_CT_LIMIT);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_CT_LIMIT), 1);
	CHECK_EQ(opened_of(f, POD_A_IP), 4);
	CHECK_EQ(policy_ct_count(f), 4);
	/* its tracked connections still pass */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40000, POD_B_IP, 80, TCP_ACK, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);

	/* S to A, neither isolated: over the cap it passes, untracked */
	for (i = 0; i < 6; i++) {
		CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_S_IP, (uint16_t)(50000 + i), POD_A_IP, 80,
				  TCP_SYN, &r), 0);
		CHECK_ACTION(r, WEFT_ACT_LOCAL);
	}
	CHECK_EQ(opened_of(f, POD_S_IP), 4);
	CHECK_EQ(policy_ct_count(f), 8);
	CHECK_EQ(drops_total(f), 1);
}

TEST(policy_ct_cap_drops_only_connections_with_an_isolated_end)
{
	struct datapath_opts opts = { .trace = true, .policy_ct_source_max = 4 };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		policy_ct_cap_body(&f);
	fixture_down(&f);
}

/* ---- 8. vxlan_ingress ---- */

static void vxlan_policy_body(struct fixture *f)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct weft_config cfg = ready_config();
	struct weft_ct_key k;
	struct result r;
	struct pkt p;
	int vx;

	vx = vxlan_dev_up();
	CHECK(vx > 0);
	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(seed_policy_pods(f->dp), 0);
	cfg.vxlan_ifindex = (uint32_t)vx;
	cfg.underlay_ifindex = UNDERLAY_IFINDEX;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(datapath_nodeip_put(f->dp, htonl(INADDR_LOOPBACK), 9), 0);
	CHECK_EQ(datapath_attach_vxlan(f->dp, vx), 0);

	/* the remote pod to B, isolated for ingress without a rule */
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN, POLICY_B), 0);
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, 45000, POD_B_IP, 80, TCP_SYN, 1, 0);
	pkt_from_remote(&p);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 1);

	/* a rule for the remote pod's identity on 80 */
	CHECK_EQ(rule_put(f->dp, POLICY_B, WEFT_POLICY_INGRESS, ID_REMOTE, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, 80), 0);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 42);
	CHECK_EQ(policy_ct_count(f), 1);
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, 45001, POD_B_IP, 81, TCP_SYN, 1, 0);
	pkt_from_remote(&p);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_POLICY_INGRESS);

	/* A (isolated for ingress, no rule) opens a connection to a service
	 * whose backend is the remote pod: the answer, translated back here,
	 * is not judged, even without its policy conntrack entry */
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_IN, POLICY_A), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);
	tcp_from_a(&p, 43000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	k = ct_key(POD_A_IP, 43000, REMOTE_BE_IP, BE_PORT, IPPROTO_TCP, 0);
	CHECK_EQ(datapath_policy_ct_del(f->dp, &k), 0);
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_BE_IP, BE_PORT, POD_A_IP, 43000,
		TCP_SYN | TCP_ACK, 7000, 1001);
	pkt_from_remote(&p);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	/* the same backend, not an answer: judged, and denied */
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_BE_IP, BE_PORT, POD_A_IP, 43001,
		TCP_SYN | TCP_ACK, 7000, 1001);
	pkt_from_remote(&p);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 3);
}

DP_TEST(vxlan_ingress_judges_remote_peers_not_translated_answers)
{
	int saved;

	CHECK_EQ(netns_enter(&saved), 0);
	vxlan_policy_body(f);
	netns_leave(saved);
}

/* ---- 9. pod_egress ---- */

static int run_pod_egress(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_pod_egress_prog_fd(f->dp), in, r);
}

DP_TEST(pod_egress_allows_the_node_and_answers_only)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_IN, POLICY_A), 0);

	pkt_tcp(&p, pod_a_mac, gw_a_mac, NODE_IP, 50000, POD_A_IP, 8080, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	pkt_tcp(&p, pod_a_mac, gw_a_mac, OUTSIDE, 50001, POD_A_IP, 8080, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);

	/* A's own connection out: its answer comes back through the stack */
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, OUTSIDE, 443, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_PASS);
	pkt_tcp(&p, pod_a_mac, gw_a_mac, OUTSIDE, 443, POD_A_IP, 40001, TCP_SYN | TCP_ACK, 1, 1001);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	/* the outside's RST is not trusted: the connection stays tracked */
	pkt_tcp(&p, pod_a_mac, gw_a_mac, OUTSIDE, 443, POD_A_IP, 40001, TCP_RST, 1, 1001);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(policy_ct_count(f), 1);

	/* an ipBlock rule for the outside's prefix on 8080 (an address that
	 * is no pod has no pod identity a rule could name) */
	CHECK_EQ(datapath_policy_cidr_put(f->dp, POLICY_A, WEFT_POLICY_INGRESS, IP(8, 8, 8, 0), 24,
					  WEFT_ID_CIDR | 1), 0);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_INGRESS, WEFT_ID_CIDR | 1,
			  WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080), 0);
	pkt_tcp(&p, pod_a_mac, gw_a_mac, OUTSIDE, 50002, POD_A_IP, 8080, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	CHECK_EQ(drops_total(f), 1);
}

/* ---- 10. map full ---- */

DP_TEST(policy_full_endpoint_drops_count_as_map_full)
{
	struct result r;

	CHECK_EQ(seed_policy_node(f->dp), 0);
	CHECK_EQ(isolate(f->dp, POD_B_IP, WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_POLICY_FULL, POLICY_B), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40001, POD_B_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_MAP_FULL);
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_OUT | WEFT_EP_F_POLICY_FULL, POLICY_A), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40002, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_MAP_FULL);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_MAP_FULL), 2);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 0);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_EGRESS), 0);
	/* what its rules allow still passes */
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, ID_REMOTE, WEFT_POLICY_PREFIX_ALL, 0, 0), 0);
	CHECK_EQ(send_pod(f, IPPROTO_TCP, POD_A_IP, 40003, REMOTE_POD_IP, 80, TCP_SYN, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_TUNNEL);
}

/* ---- 11. services ---- */

DP_TEST(service_backend_ingress_is_judged_before_conntrack)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);
	CHECK_EQ(seed_policy_pods(f->dp), 0);
	CHECK_EQ(identity_put(f->dp, LOCAL_BE_IP, NODE_IP, ID_BE), 0);
	CHECK_EQ(isolate(f->dp, LOCAL_BE_IP, WEFT_EP_F_ISOLATE_IN, POLICY_BE), 0);

	tcp_from_a(&p, 43000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(policy_ct_count(f), 0);

	/* a rule on the service port is no rule for the backend's port */
	CHECK_EQ(rule_put(f->dp, POLICY_BE, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, SVC_PORT), 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_INGRESS);
	CHECK_EQ(ct_count(f), 0);

	CHECK_EQ(rule_put(f->dp, POLICY_BE, WEFT_POLICY_INGRESS, ID_A, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, BE_PORT), 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_TUPLE(&r.out, POD_A_IP, 43000, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(policy_ct_count(f), 1);
	CHECK_EQ(drops_of(f, WEFT_DROP_POLICY_INGRESS), 2);

	/* the client's egress is judged there too, against the backend (a
	 * rule for the service's address and port would be none) */
	CHECK_EQ(isolate(f->dp, POD_A_IP, WEFT_EP_F_ISOLATE_OUT, POLICY_A), 0);
	tcp_from_a(&p, 43001, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_DROPPED(r, WEFT_DROP_POLICY_EGRESS);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(rule_put(f->dp, POLICY_A, WEFT_POLICY_EGRESS, ID_BE, WEFT_POLICY_PREFIX_PORT,
			  IPPROTO_TCP, BE_PORT), 0);
	tcp_from_a(&p, 43002, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_ACTION(r, WEFT_ACT_LOCAL);
	CHECK_TUPLE(&r.out, POD_A_IP, 43002, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(policy_ct_count(f), 2);
}
