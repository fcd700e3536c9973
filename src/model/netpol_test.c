/*
 * netpol_test.c — NetworkPolicy parsing and evaluation (netpol.h): the
 * policyTypes default, every peer form (AND within a peer, OR across
 * peers), matchExpressions' four operators, ipBlock with except on pods
 * and other addresses, named ports (per destination pod, protocol
 * included), endPort ranges, SCTP, empty vs absent from/ports, the union
 * over policies, a pod to itself; hostile objects; and a randomized
 * cross-check of netpol_decide against a naive evaluator that walks the
 * policies' JSON directly (fixed seed, TEST_SEED overrides).
 *
 * The cluster of the fixtures is the upstream truth table's: namespaces
 * x, y, z, pods a, b, c in each (label pod=<name>; b also app=web), pod IP
 * 10.0.<ns 1..3>.<pod 1..3>; every pod serves serve-80-tcp on 80, except
 * c, whose serve-80-tcp is 8080.
 */
#include "model/netpol.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char err[512];

/* JSON with ' for " (readable fixtures). */
static json_t *J(const char *s)
{
	char buf[8192];
	json_error_t e;
	json_t *j;
	size_t i;

	for (i = 0; s[i] && i + 1 < sizeof(buf); i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = 0;
	j = json_loads(buf, 0, &e);
	if (!j)
		fprintf(stderr, "bad test JSON: %s: %s\n", e.text, buf);
	return j;
}

/* ---------------------------------------------------------------- the cluster */

enum { NNS = 3, NPODS = 3, NALL = NNS * NPODS };
static const char *const ns_names[NNS] = { "x", "y", "z" };
static const char *const pod_names[NPODS] = { "a", "b", "c" };

struct cluster {
	json_t *ns_labels[NNS], *labels[NALL], *spec[NALL];
	struct netpol_pod pod[NALL];
};

static in_addr_t ip_of(int ns, int pod)
{
	return htonl(0x0a000000u | (uint32_t)(ns + 1) << 8 | (uint32_t)(pod + 1));
}

static const char pod_spec[] =
	"{'containers':[{'name':'s','ports':["
	"{'name':'serve-80-tcp','containerPort':%d},"
	"{'name':'serve-80-udp','containerPort':80,'protocol':'UDP'},"
	"{'name':'serve-81-tcp','containerPort':81,'protocol':'TCP'},"
	"{'name':'serve-81-udp','containerPort':81,'protocol':'UDP'},"
	"{'name':'serve-82-sctp','containerPort':82,'protocol':'SCTP'}]}]}";

static void cluster_make(struct cluster *c)
{
	for (int n = 0; n < NNS; n++) {
		c->ns_labels[n] = json_pack("{s:s, s:s}", "kubernetes.io/metadata.name", ns_names[n], "ns", ns_names[n]);
		if (n == 1)
			json_object_set_new(c->ns_labels[n], "team", json_string("blue"));
		for (int p = 0; p < NPODS; p++) {
			int i = n * NPODS + p;
			char spec[1024];

			snprintf(spec, sizeof(spec), pod_spec, p == 2 ? 8080 : 80);
			c->labels[i] = json_pack("{s:s}", "pod", pod_names[p]);
			if (p == 1)
				json_object_set_new(c->labels[i], "app", json_string("web"));
			c->spec[i] = J(spec);
			c->pod[i] = (struct netpol_pod){ .ns = ns_names[n], .ns_labels = c->ns_labels[n],
							 .name = pod_names[p], .labels = c->labels[i],
							 .spec = c->spec[i], .ip = ip_of(n, p) };
		}
	}
}

static void cluster_free(struct cluster *c)
{
	for (int n = 0; n < NNS; n++)
		json_decref(c->ns_labels[n]);
	for (int i = 0; i < NALL; i++) {
		json_decref(c->labels[i]);
		json_decref(c->spec[i]);
	}
}

/* "x/a" -> its pod */
static const struct netpol_pod *P(struct cluster *c, const char *ref)
{
	return &c->pod[(ref[0] - 'x') * NPODS + (ref[2] - 'a')];
}

/* ---------------------------------------------------------------- policies */

#define MAXPOL 8
struct pols {
	struct netpol np[MAXPOL];
	const struct netpol *ptr[MAXPOL];
	size_t n;
};

/* Parse a policy NS/NAME with this spec (JSON, ' for "); its rc. */
static int add(struct pols *ps, const char *ns, const char *name, const char *spec)
{
	char buf[4096];
	json_t *o;
	int rc;

	snprintf(buf, sizeof(buf), "{'metadata':{'namespace':'%s','name':'%s'},'spec':%s}", ns, name, spec);
	o = J(buf);
	rc = o ? netpol_parse(o, &ps->np[ps->n], err, sizeof(err)) : -EINVAL;
	if (rc == 0) {
		ps->ptr[ps->n] = &ps->np[ps->n];
		ps->n++;
	}
	json_decref(o);
	return rc;
}

static void pols_free(struct pols *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		netpol_free(&ps->np[i]);
	ps->n = 0;
}

/* Is the flow allowed?  1 / 0, or -1 on an error. */
static int flow(struct pols *ps, const struct netpol_pod *src, in_addr_t src_ip, const struct netpol_pod *dst,
		in_addr_t dst_ip, uint8_t proto, uint16_t port)
{
	struct netpol_verdict v;

	if (netpol_decide(ps->ptr, ps->n, src, src_ip, dst, dst_ip, proto, port, &v))
		return -1;
	return v.allowed;
}

static int tcp(struct pols *ps, struct cluster *c, const char *from, const char *to, uint16_t port)
{
	return flow(ps, P(c, from), 0, P(c, to), 0, IPPROTO_TCP, port);
}

/* The truth table for TCP/port: a 9x9 string of 0/1 rows (x/a..z/c),
 * self always 1. */
static void table(struct pols *ps, struct cluster *c, uint16_t port, char out[NALL * NALL + 1])
{
	for (int s = 0; s < NALL; s++)
		for (int d = 0; d < NALL; d++)
			out[s * NALL + d] = '0' + flow(ps, &c->pod[s], 0, &c->pod[d], 0, IPPROTO_TCP, port);
	out[NALL * NALL] = 0;
}

/* ---------------------------------------------------------------- tests */

TEST(netpol_policy_types_default)
{
	struct pols ps = { 0 };

	CHECK_EQ(add(&ps, "x", "a", "{'podSelector':{}}"), 0);
	CHECK(ps.np[0].isolates[NETPOL_INGRESS] && !ps.np[0].isolates[NETPOL_EGRESS]);
	CHECK_EQ(add(&ps, "x", "b", "{'podSelector':{},'egress':[{}]}"), 0);
	CHECK(ps.np[1].isolates[NETPOL_INGRESS] && ps.np[1].isolates[NETPOL_EGRESS]);
	CHECK_EQ(add(&ps, "x", "c", "{'podSelector':{},'egress':[]}"), 0);	/* no egress rules */
	CHECK(ps.np[2].isolates[NETPOL_INGRESS] && !ps.np[2].isolates[NETPOL_EGRESS]);
	CHECK_EQ(add(&ps, "x", "d", "{'podSelector':{},'policyTypes':['Egress'],'ingress':[{}]}"), 0);
	CHECK(!ps.np[3].isolates[NETPOL_INGRESS] && ps.np[3].isolates[NETPOL_EGRESS]);
	CHECK_EQ(add(&ps, "x", "e", "{'podSelector':{},'policyTypes':['Ingress','Egress']}"), 0);
	CHECK(ps.np[4].isolates[NETPOL_INGRESS] && ps.np[4].isolates[NETPOL_EGRESS]);
	CHECK_EQ(ps.np[4].nrules[0] + ps.np[4].nrules[1], 0);
	CHECK_STR(ps.np[4].ns, "x");
	CHECK_STR(ps.np[4].name, "e");
	pols_free(&ps);
}

TEST(netpol_peer_forms)
{
	struct cluster c;
	struct pols ps = { 0 };
	char t[NALL * NALL + 1];

	cluster_make(&c);
	/* both in one peer: AND -> only x/a reaches y/b */
	CHECK_EQ(add(&ps, "y", "and", "{'podSelector':{'matchLabels':{'pod':'b'}},'ingress':[{'from':["
		     "{'podSelector':{'matchLabels':{'pod':'a'}},'namespaceSelector':{'matchLabels':{'ns':'x'}}}]}]}"), 0);
	table(&ps, &c, 80, t);
	for (int s = 0; s < NALL; s++)		/* y/b's column: x/a and itself */
		for (int d = 0; d < NALL; d++)
			if (t[s * NALL + d] != (d != 4 || s == 0 || s == 4 ? '1' : '0'))
				test_fail(__FILE__, __LINE__, "%s -> %s: %c", c.pod[s].name, c.pod[d].name, t[s * NALL + d]);
	CHECK_EQ(tcp(&ps, &c, "y/a", "y/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "x/b", "y/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "z/a", "y/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/b", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "y/b", "y/b", 80), 1);	/* itself */
	pols_free(&ps);

	/* two peers: OR -> every pod of x, and y/a */
	CHECK_EQ(add(&ps, "y", "or", "{'podSelector':{'matchLabels':{'pod':'b'}},'ingress':[{'from':["
		     "{'podSelector':{'matchLabels':{'pod':'a'}}},{'namespaceSelector':{'matchLabels':{'ns':'x'}}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "y/a", "y/b", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/b", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "z/a", "y/b", 80), 0);	/* podSelector alone: y's pods only */
	CHECK_EQ(tcp(&ps, &c, "y/c", "y/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "y/c", "y/a", 80), 1);	/* y/a is not selected */
	pols_free(&ps);

	/* namespaceSelector {} : every pod of every namespace; podSelector {} : y's */
	CHECK_EQ(add(&ps, "y", "allns", "{'podSelector':{},'ingress':[{'from':[{'namespaceSelector':{}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "z/c", "y/a", 80), 1);
	CHECK_EQ(flow(&ps, NULL, inet_addr("10.0.9.9"), P(&c, "y/a"), 0, IPPROTO_TCP, 80), 0);
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "ns", "{'podSelector':{},'ingress':[{'from':[{'podSelector':{}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "y/c", "y/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/a", 80), 0);
	/* the namespace's name label */
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "byname", "{'podSelector':{},'ingress':[{'from':[{'namespaceSelector':"
		     "{'matchLabels':{'kubernetes.io/metadata.name':'z'}}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "z/c", "y/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/a", 80), 0);
	pols_free(&ps);

	/* egress: x/a may reach only z's pods */
	CHECK_EQ(add(&ps, "x", "out", "{'podSelector':{'matchLabels':{'pod':'a'}},'policyTypes':['Egress'],"
		     "'egress':[{'to':[{'namespaceSelector':{'matchLabels':{'ns':'z'}}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "z/b", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "x/b", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "x/b", "y/b", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "y/b", "x/a", 80), 1);	/* ingress not isolated */
	pols_free(&ps);
	cluster_free(&c);
}

TEST(netpol_match_expressions)
{
	struct cluster c;
	struct pols ps = { 0 };

	cluster_make(&c);
	CHECK_EQ(add(&ps, "y", "in", "{'podSelector':{'matchExpressions':[{'key':'pod','operator':'In',"
		     "'values':['a','b']}]}}"), 0);
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/a")->labels));
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/b")->labels));
	CHECK(!netpol_selects(&ps.np[0], "y", P(&c, "y/c")->labels));
	CHECK(!netpol_selects(&ps.np[0], "x", P(&c, "x/a")->labels));	/* another namespace */
	pols_free(&ps);
	/* NotIn matches a pod without the key: c has no app */
	CHECK_EQ(add(&ps, "y", "notin", "{'podSelector':{'matchExpressions':[{'key':'app','operator':'NotIn',"
		     "'values':['web']}]}}"), 0);
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/a")->labels));
	CHECK(!netpol_selects(&ps.np[0], "y", P(&c, "y/b")->labels));
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/c")->labels));
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "exists", "{'podSelector':{'matchExpressions':[{'key':'app','operator':'Exists'}]}}"), 0);
	CHECK(!netpol_selects(&ps.np[0], "y", P(&c, "y/a")->labels));
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/b")->labels));
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "absent", "{'podSelector':{'matchExpressions':[{'key':'app','operator':"
		     "'DoesNotExist','values':[]}],'matchLabels':{'pod':'c'}}}"), 0);	/* ANDed */
	CHECK(!netpol_selects(&ps.np[0], "y", P(&c, "y/a")->labels));
	CHECK(!netpol_selects(&ps.np[0], "y", P(&c, "y/b")->labels));
	CHECK(netpol_selects(&ps.np[0], "y", P(&c, "y/c")->labels));
	pols_free(&ps);
	/* on namespaces: team notin (blue) = x and z (no team label) */
	CHECK_EQ(add(&ps, "x", "nsx", "{'podSelector':{},'ingress':[{'from':[{'namespaceSelector':"
		     "{'matchExpressions':[{'key':'team','operator':'NotIn','values':['blue']}]}}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "z/a", "x/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/b", "x/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "y/a", "x/a", 80), 0);
	pols_free(&ps);
	cluster_free(&c);
}

TEST(netpol_ip_block)
{
	struct cluster c;
	struct pols ps = { 0 };
	const struct netpol_peer *peer;

	cluster_make(&c);
	CHECK_EQ(add(&ps, "y", "block", "{'podSelector':{},'policyTypes':['Ingress','Egress'],"
		     "'ingress':[{'from':[{'ipBlock':{'cidr':'10.0.0.0/16','except':['10.0.1.0/24','10.0.3.3/32']}}]}],"
		     "'egress':[{'to':[{'ipBlock':{'cidr':'0.0.0.0/0','except':['10.0.0.0/8']}}]}]}"), 0);
	peer = &ps.np[0].rules[NETPOL_INGRESS][0].peers[0];
	CHECK(peer->is_block && peer->nexcept == 2 && peer->block.len == 16);
	CHECK(netpol_peer_matches_addr(peer, inet_addr("10.0.200.1")));
	CHECK(!netpol_peer_matches_addr(peer, inet_addr("10.0.1.7")));
	CHECK(!netpol_peer_matches_addr(peer, inet_addr("10.1.0.1")));
	/* pod IPs match too: x (10.0.1.*) is excepted, z/c (10.0.3.3) too */
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "z/a", "y/a", 80), 1);	/* 10.0.3.1: inside, not excepted */
	CHECK_EQ(flow(&ps, P(&c, "z/b"), 0, P(&c, "y/a"), 0, IPPROTO_TCP, 80), 1);
	CHECK_EQ(flow(&ps, P(&c, "z/c"), 0, P(&c, "y/a"), 0, IPPROTO_TCP, 80), 0);
	CHECK_EQ(flow(&ps, NULL, inet_addr("10.0.77.1"), P(&c, "y/a"), 0, IPPROTO_TCP, 80), 1);
	CHECK_EQ(flow(&ps, NULL, inet_addr("10.0.1.99"), P(&c, "y/a"), 0, IPPROTO_TCP, 80), 0);
	/* egress: outside 10/8 only; pods of the cluster are inside it */
	CHECK_EQ(flow(&ps, P(&c, "y/a"), 0, NULL, inet_addr("8.8.8.8"), IPPROTO_UDP, 53), 1);
	CHECK_EQ(flow(&ps, P(&c, "y/a"), 0, NULL, inet_addr("10.9.9.9"), IPPROTO_UDP, 53), 0);
	CHECK_EQ(tcp(&ps, &c, "y/a", "z/b", 80), 0);
	/* a pod without an IP matches no ipBlock */
	{
		struct netpol_pod nip = *P(&c, "z/b");

		nip.ip = 0;
		CHECK(!netpol_peer_matches_pod(&ps.np[0], peer, &nip));
		CHECK(netpol_peer_matches_pod(&ps.np[0], peer, P(&c, "z/b")));
	}
	pols_free(&ps);
	cluster_free(&c);
}

TEST(netpol_ports)
{
	struct cluster c;
	struct pols ps = { 0 };
	uint16_t lo, hi;

	cluster_make(&c);
	CHECK_EQ(add(&ps, "y", "named", "{'podSelector':{},'ingress':[{'ports':[{'port':'serve-80-tcp'}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/c", 80), 0);		/* c's serve-80-tcp is 8080 */
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/c", 8080), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 81), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_UDP, 80), 0);
	CHECK_EQ(netpol_port_range(&ps.np[0].rules[0][0].ports[0], P(&c, "y/c"), &lo, &hi), 0);
	CHECK(lo == 8080 && hi == 8080);
	CHECK_EQ(netpol_port_range(&ps.np[0].rules[0][0].ports[0], NULL, &lo, &hi), -ENOENT);
	pols_free(&ps);
	/* the name must be of the rule's protocol */
	CHECK_EQ(add(&ps, "y", "udpname", "{'podSelector':{},'ingress':[{'ports':[{'protocol':'UDP','port':"
		     "'serve-80-tcp'},{'protocol':'UDP','port':'serve-81-udp'}]}]}"), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_UDP, 80), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_UDP, 81), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 81), 0);
	CHECK_EQ(netpol_port_range(&ps.np[0].rules[0][0].ports[0], P(&c, "y/a"), &lo, &hi), -ENOENT);
	pols_free(&ps);
	/* egress to a named port: resolved on the destination pod, not on the source */
	CHECK_EQ(add(&ps, "x", "egress-named", "{'podSelector':{'matchLabels':{'pod':'c'}},'policyTypes':['Egress'],"
		     "'egress':[{'ports':[{'port':'serve-80-tcp'}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/a", 80), 1);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/a", 8080), 0);
	CHECK_EQ(tcp(&ps, &c, "x/c", "y/c", 8080), 1);
	CHECK_EQ(flow(&ps, P(&c, "x/c"), 0, NULL, inet_addr("1.1.1.1"), IPPROTO_TCP, 80), 0);	/* not a pod */
	pols_free(&ps);
	/* endPort: an inclusive range; a port alone; no port: every port of the protocol */
	CHECK_EQ(add(&ps, "y", "range", "{'podSelector':{},'ingress':[{'ports':[{'port':8000,'endPort':8010},"
		     "{'port':81,'protocol':'UDP'},{'protocol':'SCTP'}]}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 7999), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 8000), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 8010), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 8011), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 81), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_UDP, 81), 1);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_UDP, 82), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_SCTP, 82), 1);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_SCTP, 65535), 1);
	CHECK_EQ(ps.np[0].rules[0][0].ports[0].end_port, 8010);
	CHECK_EQ(ps.np[0].rules[0][0].ports[1].end_port, 81);
	CHECK_EQ(netpol_port_range(&ps.np[0].rules[0][0].ports[2], NULL, &lo, &hi), 0);
	CHECK(lo == 0 && hi == 65535);
	pols_free(&ps);
	/* SCTP by name */
	CHECK_EQ(add(&ps, "y", "sctp", "{'podSelector':{},'ingress':[{'ports':[{'protocol':'SCTP','port':'serve-82-sctp'}]}]}"), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_SCTP, 82), 1);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 82), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, P(&c, "y/a"), 0, 1 /* ICMP */, 82), -1);
	pols_free(&ps);
	cluster_free(&c);
}

TEST(netpol_empty_and_absent)
{
	struct cluster c;
	struct pols ps = { 0 };

	cluster_make(&c);
	CHECK_EQ(add(&ps, "y", "deny", "{'podSelector':{},'ingress':[]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "y/b", "y/a", 80), 0);
	CHECK_EQ(tcp(&ps, &c, "y/a", "y/a", 80), 1);	/* itself */
	CHECK_EQ(tcp(&ps, &c, "y/a", "x/a", 80), 1);	/* egress not isolated */
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "deny-absent", "{'podSelector':{}}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 0);
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "all", "{'podSelector':{},'ingress':[{}]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 1);
	CHECK_EQ(flow(&ps, NULL, inet_addr("203.0.113.5"), P(&c, "y/a"), 0, IPPROTO_SCTP, 9), 1);
	pols_free(&ps);
	CHECK_EQ(add(&ps, "y", "all-empty", "{'podSelector':{},'ingress':[{'from':[],'ports':[]}]}"), 0);
	CHECK_EQ(ps.np[0].nrules[0], 1);
	CHECK_EQ(ps.np[0].rules[0][0].npeers, 0);
	CHECK_EQ(ps.np[0].rules[0][0].nports, 0);
	CHECK_EQ(tcp(&ps, &c, "z/c", "y/a", 1), 1);
	pols_free(&ps);
	/* egress [] with Egress in policyTypes: deny all egress */
	CHECK_EQ(add(&ps, "x", "no-out", "{'podSelector':{},'policyTypes':['Egress'],'egress':[]}"), 0);
	CHECK_EQ(tcp(&ps, &c, "x/a", "y/a", 80), 0);
	CHECK_EQ(flow(&ps, P(&c, "x/a"), 0, NULL, inet_addr("8.8.8.8"), IPPROTO_UDP, 53), 0);
	CHECK_EQ(tcp(&ps, &c, "y/a", "x/a", 80), 1);
	pols_free(&ps);
	cluster_free(&c);
}

TEST(netpol_union_and_verdict)
{
	struct cluster c;
	struct pols ps = { 0 };
	struct netpol_verdict v;

	cluster_make(&c);
	CHECK_EQ(add(&ps, "y", "deny-all", "{'podSelector':{}}"), 0);
	CHECK_EQ(add(&ps, "y", "allow-x", "{'podSelector':{'matchLabels':{'pod':'b'}},'ingress':[{'from':"
		     "[{'namespaceSelector':{'matchLabels':{'ns':'x'}}}],'ports':[{'port':80}]}]}"), 0);
	CHECK_EQ(add(&ps, "y", "allow-z81", "{'podSelector':{'matchLabels':{'app':'web'}},'ingress':[{'from':"
		     "[{'namespaceSelector':{'matchLabels':{'ns':'z'}}}],'ports':[{'port':81}]}]}"), 0);
	CHECK_EQ(add(&ps, "x", "elsewhere", "{'podSelector':{},'ingress':[{}]}"), 0);
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, P(&c, "x/a"), 0, P(&c, "y/b"), 0, IPPROTO_TCP, 80, &v), 0);
	CHECK(v.allowed && !v.self);
	CHECK(!v.side[NETPOL_EGRESS].isolated && v.side[NETPOL_EGRESS].allowed && v.side[NETPOL_EGRESS].pod);
	CHECK(v.side[NETPOL_INGRESS].isolated);
	CHECK_EQ(v.side[NETPOL_INGRESS].nisolated_by, 3);
	CHECK_EQ(v.side[NETPOL_INGRESS].nallowed_by, 1);
	CHECK_STR(v.side[NETPOL_INGRESS].allowed_by[0]->name, "allow-x");
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, P(&c, "z/a"), 0, P(&c, "y/b"), 0, IPPROTO_TCP, 81, &v), 0);
	CHECK(v.allowed);
	CHECK_STR(v.side[NETPOL_INGRESS].allowed_by[0]->name, "allow-z81");
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, P(&c, "z/a"), 0, P(&c, "y/b"), 0, IPPROTO_TCP, 80, &v), 0);
	CHECK(!v.allowed && !v.side[NETPOL_INGRESS].allowed);
	CHECK_EQ(v.side[NETPOL_INGRESS].nallowed_by, 0);
	CHECK_STR(v.side[NETPOL_INGRESS].isolated_by[0]->name, "deny-all");
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, P(&c, "x/a"), 0, P(&c, "y/a"), 0, IPPROTO_TCP, 80, &v), 0);
	CHECK(!v.allowed);
	CHECK_EQ(v.side[NETPOL_INGRESS].nisolated_by, 1);
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, P(&c, "y/a"), 0, P(&c, "y/a"), 0, IPPROTO_TCP, 80, &v), 0);
	CHECK(v.allowed && v.self);
	CHECK_EQ(netpol_decide(ps.ptr, ps.n, NULL, inet_addr("10.0.2.2"), NULL, inet_addr("10.0.2.1"),
			       IPPROTO_TCP, 80, &v), 0);
	CHECK(v.allowed && !v.side[0].pod && !v.side[1].pod);	/* no pods, nothing isolated */
	pols_free(&ps);
	cluster_free(&c);
}

/* ---------------------------------------------------------------- hostile input */

static int bad_policy(const char *spec)
{
	struct pols ps = { 0 };
	int rc = add(&ps, "y", "bad", spec);

	pols_free(&ps);
	return rc;
}

TEST(netpol_hostile)
{
	static const struct {
		const char *spec, *field;
	} cases[] = {
		{ "[]", "spec: required" },
		{ "{}", "spec.podSelector: required" },
		{ "{'podSelector':[]}", "spec.podSelector: must be an object" },
		{ "{'podSelector':{'matchLabels':{'a':1}}}", "spec.podSelector.matchLabels: must be a string" },
		{ "{'podSelector':{'matchLabels':{'bad key!':'v'}}}", "spec.podSelector.matchLabels: 'bad key!'" },
		{ "{'podSelector':{'matchExpressions':[{'key':'a','operator':'Has'}]}}",
		  "spec.podSelector.matchExpressions[0].operator: 'Has' is not In" },
		{ "{'podSelector':{'matchExpressions':[{'key':'a','operator':'In'}]}}",
		  "spec.podSelector.matchExpressions[0].values: must be non-empty" },
		{ "{'podSelector':{'matchExpressions':[{'key':'a','operator':'Exists','values':['x']}]}}",
		  "spec.podSelector.matchExpressions[0].values: must be empty" },
		{ "{'podSelector':{'matchExpressions':[{'operator':'Exists'}]}}",
		  "spec.podSelector.matchExpressions[0].key: required" },
		{ "{'podSelector':{},'policyTypes':['Sideways']}", "spec.policyTypes[0]: must be Ingress or Egress" },
		{ "{'podSelector':{},'policyTypes':'Ingress'}", "spec.policyTypes: must be a list" },
		{ "{'podSelector':{},'ingress':{}}", "spec.ingress: must be a list" },
		{ "{'podSelector':{},'ingress':[7]}", "spec.ingress[0]: must be an object" },
		{ "{'podSelector':{},'ingress':[{'from':[{}]}]}",
		  "spec.ingress[0].from[0]: must have podSelector, namespaceSelector or ipBlock" },
		{ "{'podSelector':{},'egress':[{'to':[{'ipBlock':{'cidr':'10.0.0.0/8'},'podSelector':{}}]}]}",
		  "spec.egress[0].to[0]: ipBlock cannot be combined" },
		{ "{'podSelector':{},'ingress':[{},{'from':[{'ipBlock':{'cidr':'10.0.0.1/8'}}]}]}",
		  "spec.ingress[1].from[0].ipBlock.cidr: '10.0.0.1/8' has host bits set (10.0.0.0/8?)" },
		{ "{'podSelector':{},'ingress':[{'from':[{'ipBlock':{'cidr':'fe80::/10'}}]}]}",
		  "spec.ingress[0].from[0].ipBlock.cidr: 'fe80::/10' is not an IPv4 CIDR" },
		{ "{'podSelector':{},'ingress':[{'from':[{'ipBlock':{}}]}]}",
		  "spec.ingress[0].from[0].ipBlock.cidr: required" },
		{ "{'podSelector':{},'ingress':[{'from':[{'ipBlock':{'cidr':'10.0.0.0/16','except':['10.1.0.0/24']}}]}]}",
		  "spec.ingress[0].from[0].ipBlock.except[0]: 10.1.0.0/24 is not strictly inside" },
		{ "{'podSelector':{},'ingress':[{'from':[{'ipBlock':{'cidr':'10.0.0.0/16','except':['10.0.0.0/16']}}]}]}",
		  "ipBlock.except[0]" },
		{ "{'podSelector':{},'ingress':[{'from':[{'namespaceSelector':{'matchExpressions':{}}}]}]}",
		  "spec.ingress[0].from[0].namespaceSelector.matchExpressions: must be a list" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':0}]}]}", "spec.ingress[0].ports[0].port: must be" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':65536}]}]}", "spec.ingress[0].ports[0].port" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':''}]}]}", "spec.ingress[0].ports[0].port: '' is not" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':'a-very-long-port-name'}]}]}",
		  "spec.ingress[0].ports[0].port: 'a-very-long-port-name' is not a port name" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':80,'protocol':'ICMP'}]}]}",
		  "spec.ingress[0].ports[0].protocol: must be TCP, UDP or SCTP" },
		{ "{'podSelector':{},'ingress':[{'ports':[{'port':80,'protocol':'tcp'}]}]}",
		  "spec.ingress[0].ports[0].protocol" },
		{ "{'podSelector':{},'egress':[{'ports':[{'port':'http','endPort':90}]}]}",
		  "spec.egress[0].ports[0].endPort: requires a numeric port" },
		{ "{'podSelector':{},'egress':[{'ports':[{'port':90,'endPort':80}]}]}",
		  "spec.egress[0].ports[0].endPort: must be a number from port (90)" },
		{ "{'podSelector':{},'egress':[{'ports':[{'endPort':80}]}]}", "endPort: requires a numeric port" },
	};
	struct netpol np;
	json_t *o;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (bad_policy(cases[i].spec) != -EINVAL)
			test_fail(__FILE__, __LINE__, "%s: not -EINVAL", cases[i].spec);
		CHECK_CONTAINS(err, "networkpolicy y/bad: ");
		CHECK_CONTAINS(err, cases[i].field);
	}
	o = J("{'metadata':{'name':'n'},'spec':{'podSelector':{}}}");
	CHECK_EQ(netpol_parse(o, &np, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS(err, "metadata: a namespace and a name are required");
	json_decref(o);
	o = J("[1,2]");
	CHECK_EQ(netpol_parse(o, &np, err, sizeof(err)), -EINVAL);
	json_decref(o);
	netpol_free(&np);	/* zeroed by the failed parse */
	netpol_free(NULL);
	/* over the bound on rules */
	o = J("{'metadata':{'namespace':'y','name':'big'},'spec':{'podSelector':{},'ingress':[]}}");
	for (int i = 0; i <= NETPOL_MAX_ITEMS; i++)
		json_array_append_new(json_object_get(json_object_get(o, "spec"), "ingress"), json_object());
	CHECK_EQ(netpol_parse(o, &np, err, sizeof(err)), -E2BIG);
	CHECK_CONTAINS(err, "spec.ingress: more than 1024 items");
	json_decref(o);
}

/* ---------------------------------------------------------------- randomized against a naive evaluator */

/* The reference works on the policies' JSON as written, with its own CIDR
 * arithmetic and its own port table: nothing of netpol.c's. */
static bool ref_selector(const json_t *ls, const json_t *labels)
{
	const char *k;
	const json_t *v, *e;
	size_t i, j;

	json_object_foreach((json_t *)json_object_get(ls, "matchLabels"), k, v) {
		const char *have = json_string_value(json_object_get(labels, k));

		if (!have || strcmp(have, json_string_value(v)))
			return false;
	}
	json_array_foreach(json_object_get(ls, "matchExpressions"), i, e) {
		const char *op = json_string_value(json_object_get(e, "operator"));
		const char *have = json_string_value(json_object_get(labels, json_string_value(json_object_get(e, "key"))));
		bool in = false;

		json_array_foreach(json_object_get(e, "values"), j, v)
			in = in || (have && !strcmp(have, json_string_value(v)));
		if ((!strcmp(op, "In") && !in) || (!strcmp(op, "NotIn") && in) ||
		    (!strcmp(op, "Exists") && !have) || (!strcmp(op, "DoesNotExist") && have))
			return false;
	}
	return true;
}

static bool ref_in(const char *cidr, uint32_t ip /* host order */)
{
	unsigned a, b, c, d, len;
	uint32_t net;

	sscanf(cidr, "%u.%u.%u.%u/%u", &a, &b, &c, &d, &len);
	net = a << 24 | b << 16 | c << 8 | d;
	return len == 0 || (ip >> (32 - len)) == (net >> (32 - len));
}

/* An end of a flow: a pod index, or -1 and an address. */
struct end {
	int pod;
	uint32_t ip;	/* host order */
};

static bool ref_peer(struct cluster *cl, const char *pol_ns, const json_t *peer, struct end e)
{
	const json_t *block = json_object_get(peer, "ipBlock"), *x;
	const json_t *pods = json_object_get(peer, "podSelector"), *nss = json_object_get(peer, "namespaceSelector");
	size_t i;

	if (block) {
		if (!ref_in(json_string_value(json_object_get(block, "cidr")), e.ip))
			return false;
		json_array_foreach(json_object_get(block, "except"), i, x)
			if (ref_in(json_string_value(x), e.ip))
				return false;
		return true;
	}
	if (e.pod < 0)
		return false;
	if (nss ? !ref_selector(nss, cl->ns_labels[e.pod / NPODS]) : strcmp(ns_names[e.pod / NPODS], pol_ns))
		return false;
	return !pods || ref_selector(pods, cl->labels[e.pod]);
}

/* The destination's port named name (the fixture's table, not its spec). */
static int ref_named(int pod, const char *name, const char *proto)
{
	static const struct { const char *name, *proto; int port; } t[] = {
		{ "serve-80-tcp", "TCP", 80 }, { "serve-80-udp", "UDP", 80 }, { "serve-81-tcp", "TCP", 81 },
		{ "serve-81-udp", "UDP", 81 }, { "serve-82-sctp", "SCTP", 82 },
	};

	for (size_t i = 0; pod >= 0 && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].name, name) && !strcmp(t[i].proto, proto))
			return i == 0 && pod % NPODS == 2 ? 8080 : t[i].port;
	return -1;
}

static bool ref_ports(const json_t *ports, int dst, const char *proto, int port)
{
	const json_t *p;
	size_t i;

	if (json_array_size(ports) == 0)
		return true;
	json_array_foreach(ports, i, p) {
		const char *pr = json_string_value(json_object_get(p, "protocol"));
		const json_t *num = json_object_get(p, "port"), *end = json_object_get(p, "endPort");

		if (strcmp(pr ? pr : "TCP", proto))
			continue;
		if (!num)
			return true;
		if (json_is_string(num) && ref_named(dst, json_string_value(num), proto) == port)
			return true;
		if (json_is_integer(num) && port >= json_integer_value(num) &&
		    port <= json_integer_value(end ? end : num))
			return true;
	}
	return false;
}

/* Does this side of the flow pass?  pod's direction dir ("ingress"/"egress"). */
static bool ref_side(struct cluster *cl, json_t **pols, int n, const char *dir, int pod, struct end other, int dst,
		     const char *proto, int port)
{
	bool isolated = false, allowed = false;

	if (pod < 0)
		return true;
	for (int i = 0; i < n; i++) {
		const json_t *spec = json_object_get(pols[i], "spec"), *types = json_object_get(spec, "policyTypes");
		const char *ns = json_string_value(json_object_get(json_object_get(pols[i], "metadata"), "namespace"));
		bool mine = false, t;
		const json_t *r, *pe, *ty;
		size_t j, k;

		if (strcmp(ns, ns_names[pod / NPODS]) || !ref_selector(json_object_get(spec, "podSelector"), cl->labels[pod]))
			continue;
		json_array_foreach(types, j, ty)
			mine = mine || !strcasecmp(json_string_value(ty), dir);
		if (json_array_size(types) == 0)
			mine = !strcmp(dir, "ingress") || json_array_size(json_object_get(spec, "egress")) > 0;
		if (!mine)
			continue;
		isolated = true;
		json_array_foreach(json_object_get(spec, dir), j, r) {
			const json_t *peers = json_object_get(r, !strcmp(dir, "ingress") ? "from" : "to");

			t = json_array_size(peers) == 0;
			json_array_foreach(peers, k, pe)
				t = t || ref_peer(cl, ns, pe, other);
			allowed = allowed || (t && ref_ports(json_object_get(r, "ports"), dst, proto, port));
		}
	}
	return !isolated || allowed;
}

static const char *pick(uint64_t *st, const char *const *from, uint32_t n)
{
	return from[test_rnd(st, n)];
}
#define PICK(st, arr) pick((st), (arr), sizeof(arr) / sizeof(arr[0]))

static json_t *rnd_selector(uint64_t *st, bool namespaces)
{
	static const char *const pod_keys[] = { "pod", "app" }, *const ns_keys[] = { "ns", "team" };
	static const char *const pod_vals[] = { "a", "b", "c", "web" }, *const ns_vals[] = { "x", "y", "z", "blue" };
	static const char *const ops[] = { "In", "NotIn", "Exists", "DoesNotExist" };
	json_t *ls = json_object();
	uint32_t n = test_rnd(st, 3);

	if (test_rnd(st, 2))
		json_object_set_new(ls, "matchLabels", json_pack("{s:s}", namespaces ? PICK(st, ns_keys) : PICK(st, pod_keys),
								  namespaces ? PICK(st, ns_vals) : PICK(st, pod_vals)));
	for (uint32_t i = 0; i < n; i++) {
		const char *op = PICK(st, ops);
		json_t *e = json_pack("{s:s, s:s}", "key", namespaces ? PICK(st, ns_keys) : PICK(st, pod_keys),
				      "operator", op);

		if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
			json_t *v = json_array();

			for (uint32_t k = 1 + test_rnd(st, 2); k > 0; k--)
				json_array_append_new(v, json_string(namespaces ? PICK(st, ns_vals) : PICK(st, pod_vals)));
			json_object_set_new(e, "values", v);
		}
		if (!json_object_get(ls, "matchExpressions"))
			json_object_set_new(ls, "matchExpressions", json_array());
		json_array_append_new(json_object_get(ls, "matchExpressions"), e);
	}
	return ls;
}

static json_t *rnd_peer(uint64_t *st)
{
	static const char *const blocks[][3] = {
		{ "10.0.0.0/16", "10.0.2.0/24", "10.0.1.1/32" }, { "10.0.1.0/24", "10.0.1.2/31", "10.0.1.3/32" },
		{ "0.0.0.0/0", "10.0.0.0/8", "192.168.0.0/16" }, { "192.168.0.0/16", "192.168.1.0/24", "192.168.2.2/32" },
		{ "10.0.3.3/32", NULL, NULL },
	};
	json_t *peer = json_object();

	switch (test_rnd(st, 4)) {
	case 0: {
		uint32_t b = test_rnd(st, sizeof(blocks) / sizeof(blocks[0]));
		json_t *block = json_pack("{s:s}", "cidr", blocks[b][0]), *ex = json_array();

		for (int i = 1; i < 3; i++)
			if (blocks[b][i] && test_rnd(st, 2))
				json_array_append_new(ex, json_string(blocks[b][i]));
		json_object_set_new(block, "except", ex);
		json_object_set_new(peer, "ipBlock", block);
		return peer;
	}
	case 1:
		json_object_set_new(peer, "podSelector", rnd_selector(st, false));
		return peer;
	case 2:
		json_object_set_new(peer, "namespaceSelector", rnd_selector(st, true));
		return peer;
	default:
		json_object_set_new(peer, "podSelector", rnd_selector(st, false));
		json_object_set_new(peer, "namespaceSelector", rnd_selector(st, true));
		return peer;
	}
}

static json_t *rnd_port(uint64_t *st)
{
	static const char *const protos[] = { NULL, "TCP", "UDP", "SCTP" };
	static const char *const names[] = { "serve-80-tcp", "serve-80-udp", "serve-81-tcp", "serve-82-sctp", "none" };
	const char *proto = PICK(st, protos);
	json_t *p = json_object();

	if (proto)
		json_object_set_new(p, "protocol", json_string(proto));
	switch (test_rnd(st, 4)) {
	case 0:
		break;
	case 1:
		json_object_set_new(p, "port", json_string(PICK(st, names)));
		break;
	case 2:
		json_object_set_new(p, "port", json_integer(80 + test_rnd(st, 3)));
		break;
	default:
		json_object_set_new(p, "port", json_integer(79 + test_rnd(st, 3)));
		json_object_set_new(p, "endPort", json_integer(81 + test_rnd(st, 8000)));
	}
	return p;
}

/* A list of up to max items made by make, or (1 time in 4) no key at all. */
static void rnd_list(uint64_t *st, json_t *o, const char *key, uint32_t max, json_t *(*make)(uint64_t *))
{
	json_t *l;

	if (test_rnd(st, 4) == 0)
		return;
	l = json_array();
	for (uint32_t n = test_rnd(st, max + 1); n > 0; n--)
		json_array_append_new(l, make(st));
	json_object_set_new(o, key, l);
}

static json_t *rnd_ingress_rule(uint64_t *st)
{
	json_t *r = json_object();

	rnd_list(st, r, "from", 2, rnd_peer);
	rnd_list(st, r, "ports", 2, rnd_port);
	return r;
}

static json_t *rnd_egress_rule(uint64_t *st)
{
	json_t *r = json_object();

	rnd_list(st, r, "to", 2, rnd_peer);
	rnd_list(st, r, "ports", 2, rnd_port);
	return r;
}

static json_t *rnd_policy(uint64_t *st, int i)
{
	static const char *const types[][2] = { { NULL, NULL }, { "Ingress", NULL }, { "Egress", NULL },
						{ "Ingress", "Egress" } };
	uint32_t t = test_rnd(st, 4);
	char name[16];
	json_t *spec = json_object(), *o;

	snprintf(name, sizeof(name), "p%d", i);
	json_object_set_new(spec, "podSelector", test_rnd(st, 3) ? rnd_selector(st, false) : json_object());
	if (t) {
		json_t *l = json_array();

		for (int k = 0; k < 2; k++)
			if (types[t][k])
				json_array_append_new(l, json_string(types[t][k]));
		json_object_set_new(spec, "policyTypes", l);
	}
	rnd_list(st, spec, "ingress", 2, rnd_ingress_rule);
	rnd_list(st, spec, "egress", 2, rnd_egress_rule);
	o = json_pack("{s:{s:s, s:s}, s:o}", "metadata", "namespace", ns_names[test_rnd(st, NNS)], "name", name,
		      "spec", spec);
	return o;
}

TEST(netpol_random_against_reference)
{
	static const char *const protos[] = { "TCP", "UDP", "SCTP" };
	static const uint8_t proto_nums[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP };
	static const uint16_t ports[] = { 79, 80, 81, 82, 8080, 9000 };
	static const uint32_t outside[] = { 0x0a000909, 0xc0a80101, 0xc0a80202, 0x08080808, 0x0a000102 /* no pod */ };
	const char *env = getenv("TEST_SEED");
	uint64_t st = (env ? test_seed() : 0x6e6574706f6cull) | 1;
	struct cluster cl;
	long checked = 0;

	cluster_make(&cl);
	for (int round = 0; round < 2000 && !test_failed(); round++) {
		json_t *js[MAXPOL];
		struct pols ps = { 0 };
		int n = 1 + (int)test_rnd(&st, MAXPOL - 1);

		for (int i = 0; i < n; i++) {
			js[i] = rnd_policy(&st, i);
			if (netpol_parse(js[i], &ps.np[i], err, sizeof(err))) {
				char *t = json_dumps(js[i], JSON_COMPACT);

				test_fail(__FILE__, __LINE__, "%s: %s", t, err);
				free(t);
			}
			ps.ptr[i] = &ps.np[i];
		}
		ps.n = (size_t)n;
		for (int probe = 0; probe < 40 && !test_failed(); probe++) {
			struct end s = { (int)test_rnd(&st, NALL + 1) - 1, 0 }, d = { (int)test_rnd(&st, NALL + 1) - 1, 0 };
			uint32_t pr = test_rnd(&st, 3);
			uint16_t port = ports[test_rnd(&st, sizeof(ports) / sizeof(ports[0]))];
			struct netpol_verdict v;
			bool want;

			if (s.pod < 0 && d.pod < 0)
				d.pod = 0;	/* one end at least is a pod */
			s.ip = s.pod >= 0 ? ntohl(cl.pod[s.pod].ip) : outside[test_rnd(&st, 5)];
			d.ip = d.pod >= 0 ? ntohl(cl.pod[d.pod].ip) : outside[test_rnd(&st, 5)];
			want = (s.pod >= 0 && s.pod == d.pod) ||
			       (ref_side(&cl, js, n, "egress", s.pod, d, d.pod, protos[pr], port) &&
				ref_side(&cl, js, n, "ingress", d.pod, s, d.pod, protos[pr], port));
			CHECK_EQ(netpol_decide(ps.ptr, ps.n, s.pod >= 0 ? &cl.pod[s.pod] : NULL, htonl(s.ip),
					       d.pod >= 0 ? &cl.pod[d.pod] : NULL, htonl(d.ip), proto_nums[pr], port, &v), 0);
			if (v.allowed != want) {
				char *t = json_dumps(js[0], JSON_COMPACT);

				test_fail(__FILE__, __LINE__, "round %d: %d -> %d %s/%u: got %d, reference %d (first "
					  "policy of %d: %s)", round, s.pod, d.pod, protos[pr], port, v.allowed, want, n, t);
				free(t);
			}
			checked++;
		}
		pols_free(&ps);
		for (int i = 0; i < n; i++)
			json_decref(js[i]);
	}
	CHECK(checked > 1000);
	cluster_free(&cl);
}
