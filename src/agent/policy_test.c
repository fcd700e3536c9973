/*
 * policy_test.c — the NetworkPolicy compiler (policy.c) against a real
 * datapath's maps (datapath_fixture.h: a private bpffs; no program runs).
 *
 * Each test feeds Namespaces, Pods and NetworkPolicies as the watches do
 * (a full list of each kind), names the pods of this node as the CNI
 * server does (policy_local_set), applies, and writes the endpoints and
 * ipcache entries through policy_endpoint_write / policy_ipcache_write as
 * the agent does; then it reads weft_endpoints, weft_ipcache, weft_policy
 * and weft_policy_cidrs back.
 *
 * The cluster: namespaces web and db; pods web/a1, web/a2 (app=web, named
 * port http=8080, here), web/a3 (the same, plus an unnamed port, here),
 * web/b (app=web, no named port, elsewhere), db/c (app=web, elsewhere),
 * web/d (app=api, here).
 */
#include "agent/datapath.h"
#include "agent/datapath_fixture.h"
#include "agent/policy.h"
#include "lib/cidr.h"
#include "test.h"

#include <jansson.h>

#define A1_IP	IP(10, 128, 0, 5)
#define A2_IP	IP(10, 128, 0, 6)
#define A3_IP	IP(10, 128, 0, 8)
#define B_IP	IP(10, 128, 2, 9)
#define C_IP	IP(10, 128, 2, 10)
#define D_IP	IP(10, 128, 0, 7)
#define E_IP	IP(10, 128, 2, 11)
#define F_IP	IP(10, 128, 0, 12)

#define HTTP_PORTS "[{\"name\":\"http\",\"containerPort\":8080}]"

/* the rule of allow: app=api on http, UDP 9000-9011; 10.0.0.0/16 but
 * 10.0.2.0/24 on TCP <cidr_port> */
#define ALLOW_FMT                                                                     \
	"{\"metadata\":{\"namespace\":\"web\",\"name\":\"allow\"},"                   \
	"\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},"              \
	"\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"api\"}}}]," \
	"\"ports\":[{\"port\":\"http\"},{\"protocol\":\"UDP\",\"port\":9000,\"endPort\":9011}]}," \
	"{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\",\"except\":[\"10.0.2.0/24\"]}}]," \
	"\"ports\":[{\"port\":%d}]}]}}"

struct cluster {
	struct policy *p;
	struct datapath *dp;
};

static json_t *json_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *json_of(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return json_loads(buf, 0, NULL);
}

/* Namespace name, labelled team=team */
static int ns_set_team(struct cluster *c, const char *name, const char *team)
{
	json_t *o = json_of("{\"metadata\":{\"name\":\"%s\",\"labels\":{\"team\":\"%s\"}}}", name, team);

	if (!o)
		return -EINVAL;
	policy_namespace_set(c->p, o);
	json_decref(o);
	return 0;
}

static int ns_set(struct cluster *c, const char *name)
{
	return ns_set_team(c, name, name);
}

static int pod_set(struct cluster *c, const char *ns, const char *name, const char *labels,
		   const char *ports, in_addr_t ip)
{
	char addr[INET_ADDRSTRLEN];
	json_t *o;

	inet_ntop(AF_INET, &ip, addr, sizeof(addr));
	o = json_of("{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"labels\":%s},"
		    "\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":%s}]},"
		    "\"status\":{\"podIP\":\"%s\"}}",
		    ns, name, labels, ports, addr);
	if (!o)
		return -EINVAL;
	policy_pod_set(c->p, o);
	json_decref(o);
	return 0;
}

static int allow_set(struct cluster *c, int cidr_port)
{
	json_t *o = json_of(ALLOW_FMT, cidr_port);

	if (!o)
		return -EINVAL;
	policy_netpol_set(c->p, o);
	json_decref(o);
	return 0;
}

/* An empty PodPeerSlices list: every pod of these tests comes from the
 * Pods list, and the peers are known. */
static void peers_listed(struct policy *p)
{
	policy_begin_list(p, POLICY_PEERS);
	policy_listed(p, POLICY_PEERS);
}

/* The pods of the cluster above, in one full list of each kind; the
 * policy allow when cidr_port is not 0. */
static int cluster_list(struct cluster *c, int cidr_port)
{
	int rc;

	policy_begin_list(c->p, POLICY_NAMESPACES);
	policy_begin_list(c->p, POLICY_PODS);
	policy_begin_list(c->p, POLICY_NETPOLS);
	if ((rc = ns_set(c, "web")) < 0 || (rc = ns_set(c, "db")) < 0 ||
	    (rc = pod_set(c, "web", "a1", "{\"app\":\"web\"}", HTTP_PORTS, A1_IP)) < 0 ||
	    (rc = pod_set(c, "web", "a2", "{\"app\":\"web\"}", HTTP_PORTS, A2_IP)) < 0 ||
	    (rc = pod_set(c, "web", "a3", "{\"app\":\"web\"}",
			  "[{\"name\":\"http\",\"containerPort\":8080},{\"containerPort\":9999}]",
			  A3_IP)) < 0 ||
	    (rc = pod_set(c, "web", "b", "{\"app\":\"web\"}", "[]", B_IP)) < 0 ||
	    (rc = pod_set(c, "db", "c", "{\"app\":\"web\"}", HTTP_PORTS, C_IP)) < 0 ||
	    (rc = pod_set(c, "web", "d", "{\"app\":\"api\"}", "[]", D_IP)) < 0 ||
	    (cidr_port && (rc = allow_set(c, cidr_port)) < 0))
		return rc;
	policy_listed(c->p, POLICY_NAMESPACES);
	policy_listed(c->p, POLICY_PODS);
	policy_listed(c->p, POLICY_NETPOLS);
	peers_listed(c->p);
	policy_local_set(c->p, A1_IP, "web", "a1");
	policy_local_set(c->p, A2_IP, "web", "a2");
	policy_local_set(c->p, A3_IP, "web", "a3");
	policy_local_set(c->p, D_IP, "web", "d");
	return 0;
}

/* The endpoint of a pod here, as the CNI server writes it. */
static int endpoint_write(struct cluster *c, in_addr_t ip)
{
	struct weft_endpoint ep = endpoint(40, 0, pod_a_mac, gw_a_mac);

	return policy_endpoint_write(c->p, ip, &ep);
}

/* weft_ipcache of a pod, as the agent's sync writes it */
static int ipcache_write(struct cluster *c, in_addr_t ip, in_addr_t node)
{
	struct weft_ipcache_entry e;

	memset(&e, 0, sizeof(e));
	e.node_ip = node;
	return policy_ipcache_write(c->p, ip, &e);
}

static int entries_write(struct cluster *c)
{
	static const in_addr_t here[] = { A1_IP, A2_IP, A3_IP, D_IP };
	static const in_addr_t there[] = { B_IP, C_IP };
	int rc;

	for (size_t i = 0; i < sizeof(here) / sizeof(here[0]); i++)
		if ((rc = endpoint_write(c, here[i])) < 0 || (rc = ipcache_write(c, here[i], NODE_IP)) < 0)
			return rc;
	for (size_t i = 0; i < sizeof(there) / sizeof(there[0]); i++)
		if ((rc = ipcache_write(c, there[i], REMOTE_NODE_IP)) < 0)
			return rc;
	return 0;
}

/* The cluster listed, applied, its entries written, applied again. */
static int cluster_up(struct cluster *c, struct fixture *f, int cidr_port)
{
	int rc;

	c->dp = f->dp;
	c->p = policy_create(f->dp);
	if (!c->p)
		return -errno;
	if ((rc = cluster_list(c, cidr_port)) < 0 || (rc = policy_apply(c->p)) < 0 ||
	    (rc = entries_write(c)) < 0)
		return rc;
	return policy_apply(c->p);
}

static uint32_t identity_of(struct cluster *c, in_addr_t ip)
{
	struct weft_ipcache_entry e;

	return datapath_ipcache_get(c->dp, ip, &e) < 0 ? 0 : e.identity;
}

static struct weft_endpoint endpoint_of(struct cluster *c, in_addr_t ip)
{
	struct weft_endpoint ep;

	memset(&ep, 0, sizeof(ep));
	(void)datapath_endpoint_get(c->dp, ip, &ep);
	return ep;
}

/* ---- reading weft_policy and weft_policy_cidrs back ---- */

#define MAX_KEYS 64

struct keys {
	uint32_t policy_id;	/* 0: every rule set */
	struct weft_policy_key k[MAX_KEYS];
	uint32_t rule[MAX_KEYS];
	int n, all;
};

static int collect_key(const struct weft_policy_key *k, const struct weft_policy_value *v, void *arg)
{
	struct keys *s = arg;

	s->all++;
	if (s->policy_id && ntohl(k->policy_id) != s->policy_id)
		return 0;
	if (s->n == MAX_KEYS)
		return -E2BIG;
	s->rule[s->n] = v->rule;
	s->k[s->n++] = *k;
	return 0;
}

static int keys_of(struct cluster *c, uint32_t policy_id, struct keys *s)
{
	memset(s, 0, sizeof(*s));
	s->policy_id = policy_id;
	return datapath_policy_foreach(c->dp, collect_key, s);
}

/* Does s hold the key (dir, peer, prefixlen, proto, port)? */
static bool has_dir_key(const struct keys *s, uint8_t dir, uint32_t peer, uint32_t prefixlen,
			uint8_t proto, uint16_t port)
{
	for (int i = 0; i < s->n; i++)
		if (s->k[i].prefixlen == prefixlen && ntohl(s->k[i].peer) == peer &&
		    s->k[i].dir == dir && s->k[i].proto == proto && ntohs(s->k[i].port) == port)
			return true;
	return false;
}

static bool has_key(const struct keys *s, uint32_t peer, uint32_t prefixlen, uint8_t proto,
		    uint16_t port)
{
	return has_dir_key(s, WEFT_POLICY_INGRESS, peer, prefixlen, proto, port);
}

struct cidrs {
	uint32_t policy_id;	/* 0: every rule set */
	in_addr_t addr;		/* the prefix looked for */
	int len;
	uint32_t id;		/* its identity */
	bool found;
	int n;			/* prefixes of the rule set(s) */
};

static int collect_cidr(uint32_t policy_id, int dir, in_addr_t addr, int len, uint32_t id, void *arg)
{
	struct cidrs *s = arg;

	if (s->policy_id && policy_id != s->policy_id)
		return 0;
	s->n++;
	if (dir == WEFT_POLICY_INGRESS && addr == s->addr && len == s->len) {
		s->found = true;
		s->id = id;
	}
	return 0;
}

/* Does rule set policy_id hold ingress prefix addr/len in
 * weft_policy_cidrs?  Its identity in *id; the set's prefixes (every
 * set's, for policy_id 0) in *count. */
static bool cidr_of(struct cluster *c, uint32_t policy_id, in_addr_t addr, int len, uint32_t *id,
		    int *count)
{
	struct cidrs s;

	memset(&s, 0, sizeof(s));
	s.policy_id = policy_id;
	s.addr = addr;
	s.len = len;
	if (datapath_policy_cidr_foreach(c->dp, collect_cidr, &s) < 0)
		return false;
	if (id)
		*id = s.id;
	if (count)
		*count = s.n;
	return s.found;
}

/* A test with the cluster up (allow on cidr_port, none when 0). */
#define CLUSTER_TEST(name, cidr_port)                                     \
	static void name##_cluster(struct fixture *f, struct cluster *c); \
	DP_TEST(name)                                                     \
	{                                                                 \
		struct cluster c = { NULL, NULL };                        \
		if (cluster_up(&c, f, (cidr_port)) == 0)                  \
			name##_cluster(f, &c);                            \
		else                                                      \
			test_fail(__FILE__, __LINE__, "cluster_up");      \
		policy_destroy(c.p);                                      \
	}                                                                 \
	static void name##_cluster(struct fixture *f, struct cluster *c)

/* ---- identities ---- */

CLUSTER_TEST(identities_shared_by_namespace_labels_and_named_ports, 0)
{
	uint32_t a1 = identity_of(c, A1_IP), a2 = identity_of(c, A2_IP), a3 = identity_of(c, A3_IP);
	uint32_t b = identity_of(c, B_IP), cc = identity_of(c, C_IP), d = identity_of(c, D_IP);
	struct policy_stats st;

	(void)f;
	CHECK(a1 >= WEFT_ID_FIRST && a1 < WEFT_ID_CIDR);
	CHECK_EQ(a2, a1);
	CHECK_EQ(a3, a1);	/* an unnamed port tells nothing apart */
	CHECK(b >= WEFT_ID_FIRST && b != a1);	/* no named port */
	CHECK(cc >= WEFT_ID_FIRST && cc != a1 && cc != b);	/* another namespace */
	CHECK(d >= WEFT_ID_FIRST && d != a1 && d != b && d != cc);	/* other labels */
	policy_stats(c->p, &st);
	CHECK_EQ(st.identities, 4);
	CHECK_EQ(st.policies, 0);
	CHECK_EQ(st.rules, 0);

	/* no policy: nothing isolated, no rule written */
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, 0);
	struct keys s;

	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 0);
	CHECK(policy_synced(c->p));
}

/* ---- a class and its keys ---- */

CLUSTER_TEST(class_keys_resolve_named_ports_ranges_and_ip_blocks, 443)
{
	struct weft_endpoint a1 = endpoint_of(c, A1_IP), d = endpoint_of(c, D_IP);
	uint32_t api = identity_of(c, D_IP), wide, hole;
	struct policy_stats st;
	struct keys s;
	int ncidrs = 0;
	char name[64];

	(void)f;
	CHECK_EQ(a1.flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK(a1.policy_id != 0);
	CHECK_EQ(endpoint_of(c, A2_IP).policy_id, a1.policy_id);	/* one identity, one set */
	CHECK_EQ(endpoint_of(c, A3_IP).policy_id, a1.policy_id);
	CHECK_EQ(d.flags, WEFT_EP_F_READY);				/* not selected */
	CHECK_EQ(d.policy_id, 0);

	/* the ipBlock: both prefixes, in a1's set; the except a hole */
	CHECK(cidr_of(c, a1.policy_id, IP(10, 0, 0, 0), 16, &wide, &ncidrs));
	CHECK(cidr_of(c, a1.policy_id, IP(10, 0, 2, 0), 24, &hole, NULL));
	CHECK_EQ(ncidrs, 2);
	CHECK(wide & WEFT_ID_CIDR);
	CHECK_EQ(hole, 0);
	CHECK(cidr_of(c, 0, IP(10, 0, 0, 0), 16, NULL, &ncidrs));
	CHECK_EQ(ncidrs, 2);		/* no other set has prefixes */

	CHECK_EQ(keys_of(c, a1.policy_id, &s), 0);
	CHECK_EQ(s.n, 4);
	CHECK_EQ(s.all, 4);
	CHECK(has_key(&s, api, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));	/* http on a1 */
	CHECK(has_key(&s, api, WEFT_POLICY_PREFIX_PORT - 3, IPPROTO_UDP, 9000));	/* 9000-9007 */
	CHECK(has_key(&s, api, WEFT_POLICY_PREFIX_PORT - 2, IPPROTO_UDP, 9008));	/* 9008-9011 */
	CHECK(has_key(&s, wide, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 443));
	CHECK(!has_key(&s, hole, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 443));
	for (int i = 0; i < s.n; i++) {
		CHECK_EQ(s.rule[i], s.rule[0]);
		CHECK_EQ(s.k[i].dir, WEFT_POLICY_INGRESS);
	}
	policy_rule_name(c->p, s.rule[0], name, sizeof(name));
	CHECK_STR(name, "web/allow");
	policy_stats(c->p, &st);
	CHECK_EQ(st.classes, 2);	/* a1's identity and d's */
	CHECK_EQ(st.rules, 4);
	CHECK_EQ(st.cidrs, 2);
	CHECK_EQ(st.map_full, 0);

	/* applying again writes nothing */
	uint64_t writes = st.writes;

	CHECK_EQ(policy_apply(c->p), 0);
	policy_stats(c->p, &st);
	CHECK_EQ(st.writes, writes);
}

CLUSTER_TEST(new_peer_pod_changes_the_class_in_place, 443)
{
	struct weft_endpoint before = endpoint_of(c, A1_IP);
	uint32_t e;
	struct keys s;

	(void)f;
	/* web/e: app=api with another label, elsewhere: a new identity the
	 * peer selects */
	CHECK_EQ(pod_set(c, "web", "e", "{\"app\":\"api\",\"v\":\"2\"}", "[]", E_IP), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(ipcache_write(c, E_IP, REMOTE_NODE_IP), 0);
	e = identity_of(c, E_IP);
	CHECK(e >= WEFT_ID_FIRST && e != identity_of(c, D_IP));
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, before.policy_id);
	CHECK_EQ(keys_of(c, before.policy_id, &s), 0);
	CHECK_EQ(s.n, 7);
	CHECK_EQ(s.all, 7);
	CHECK(has_key(&s, e, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));
	CHECK(has_key(&s, e, WEFT_POLICY_PREFIX_PORT - 3, IPPROTO_UDP, 9000));
	CHECK(has_key(&s, e, WEFT_POLICY_PREFIX_PORT - 2, IPPROTO_UDP, 9008));

	/* and gone again, in place */
	policy_pod_del(c->p, "web", "e");
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, before.policy_id);
	CHECK_EQ(keys_of(c, before.policy_id, &s), 0);
	CHECK_EQ(s.n, 4);
	CHECK_EQ(s.all, 4);
	CHECK(!has_key(&s, e, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));
}

CLUSTER_TEST(changed_port_moves_endpoints_to_a_new_set, 443)
{
	uint32_t old = endpoint_of(c, A1_IP).policy_id, now, wide;
	struct keys s;
	int n = -1;

	(void)f;
	CHECK_EQ(allow_set(c, 444), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	now = endpoint_of(c, A1_IP).policy_id;
	CHECK(now != 0 && now != old);
	CHECK_EQ(endpoint_of(c, A2_IP).policy_id, now);
	CHECK_EQ(endpoint_of(c, A3_IP).policy_id, now);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK_EQ(keys_of(c, old, &s), 0);
	CHECK_EQ(s.n, 0);		/* the old keys are gone */
	CHECK_EQ(s.all, 4);
	CHECK_EQ(keys_of(c, now, &s), 0);
	CHECK_EQ(s.n, 4);
	/* the prefixes moved with the keys */
	CHECK(cidr_of(c, now, IP(10, 0, 0, 0), 16, &wide, NULL));
	CHECK(cidr_of(c, now, IP(10, 0, 2, 0), 24, NULL, NULL));
	CHECK(!cidr_of(c, old, IP(10, 0, 0, 0), 16, NULL, &n));
	CHECK_EQ(n, 0);
	CHECK(has_key(&s, wide, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 444));
	CHECK(!has_key(&s, wide, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 443));
}

CLUSTER_TEST(deleted_policy_leaves_no_key_behind, 443)
{
	struct policy_stats st;
	struct keys s;
	int ncidrs = -1;

	(void)f;
	policy_netpol_del(c->p, "web", "allow");
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 0);
	CHECK(!cidr_of(c, 0, IP(10, 0, 0, 0), 16, NULL, &ncidrs));
	CHECK_EQ(ncidrs, 0);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, 0);
	policy_stats(c->p, &st);
	CHECK_EQ(st.rules, 0);
	CHECK_EQ(st.cidrs, 0);

	/* a relist without it does the same: the policy back, then listed away */
	CHECK_EQ(allow_set(c, 443), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 4);
	policy_begin_list(c->p, POLICY_NETPOLS);
	policy_listed(c->p, POLICY_NETPOLS);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 0);
	CHECK_EQ(endpoint_of(c, A2_IP).flags, WEFT_EP_F_READY);
}

CLUSTER_TEST(relabelled_pod_moves_identity_and_set, 443)
{
	uint32_t a1 = endpoint_of(c, A1_IP).policy_id, b = identity_of(c, B_IP), wide;
	struct weft_endpoint d;
	struct keys s;

	(void)f;
	/* d (app=api) becomes app=web without named ports: b's identity, now
	 * selected; a1's set loses its api peer in place */
	CHECK_EQ(pod_set(c, "web", "d", "{\"app\":\"web\"}", "[]", D_IP), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(identity_of(c, D_IP), b);
	d = endpoint_of(c, D_IP);
	CHECK_EQ(d.flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK(d.policy_id != 0 && d.policy_id != a1);
	CHECK(cidr_of(c, d.policy_id, IP(10, 0, 0, 0), 16, &wide, NULL));
	CHECK_EQ(keys_of(c, d.policy_id, &s), 0);
	CHECK_EQ(s.n, 1);	/* no pod is app=api any more: the ipBlock alone */
	CHECK(has_key(&s, wide, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 443));
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, a1);
	CHECK_EQ(keys_of(c, a1, &s), 0);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.all, 2);
}

CLUSTER_TEST(egress_named_port_resolves_on_each_destination, 0)
{
	uint32_t a1 = identity_of(c, A1_IP), b = identity_of(c, B_IP), cc = identity_of(c, C_IP);
	uint32_t id;
	json_t *np;
	struct keys s;

	(void)f;
	np = json_loads("{\"metadata\":{\"namespace\":\"web\",\"name\":\"out\"},"
			"\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"api\"}},"
			"\"policyTypes\":[\"Egress\"],"
			"\"egress\":[{\"to\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}}},"
			"{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"db\"}}}],"
			"\"ports\":[{\"port\":\"http\"}]}]}}", 0, NULL);
	CHECK(np != NULL);
	policy_netpol_set(c->p, np);
	json_decref(np);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(endpoint_of(c, D_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_OUT);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY);
	id = endpoint_of(c, D_IP).policy_id;
	CHECK(id != 0);
	CHECK_EQ(keys_of(c, id, &s), 0);
	CHECK_EQ(s.n, 2);
	CHECK(has_dir_key(&s, WEFT_POLICY_EGRESS, a1, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));
	CHECK(has_dir_key(&s, WEFT_POLICY_EGRESS, cc, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));
	for (int i = 0; i < s.n; i++)
		CHECK(ntohl(s.k[i].peer) != b);	/* b has no port named http */

	/* db no longer team=db: its pods drop out, in place */
	CHECK_EQ(ns_set_team(c, "db", "other"), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(endpoint_of(c, D_IP).policy_id, id);
	CHECK_EQ(keys_of(c, id, &s), 0);
	CHECK_EQ(s.n, 1);
	CHECK(has_dir_key(&s, WEFT_POLICY_EGRESS, a1, WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));
}

/* Which policies make a node need every pod of the cluster: pods named
 * as peers, or a named port in an egress rule (the destination resolves
 * it, wherever it runs); ipBlocks, numbered ports, every peer do not. */
CLUSTER_TEST(needs_every_pod_for_pod_peers_and_egress_named_ports, 0)
{
	static const struct { const char *spec; bool needs; } cases[] = {
		{ "\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\"}}],\"ports\":[{\"port\":80}]}]", false },
		{ "\"ingress\":[{\"ports\":[{\"port\":\"http\"}]}]", false },
		{ "\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":81}]}]", false },
		{ "\"ingress\":[{\"from\":[{\"podSelector\":{}}]}]", true },
		{ "\"ingress\":[{\"from\":[{\"namespaceSelector\":{}}]}]", true },
		{ "\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"http\"}]}]", true },
		{ "\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\"}}],"
		  "\"ports\":[{\"port\":\"http\"}]}]", true },
	};

	(void)f;
	CHECK(!policy_needs_pods(c->p));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *np = json_of("{\"metadata\":{\"namespace\":\"web\",\"name\":\"n%zu\"},"
				     "\"spec\":{\"podSelector\":{},%s}}", i, cases[i].spec);
		char name[16];

		CHECK(np != NULL);
		policy_netpol_set(c->p, np);
		json_decref(np);
		if (policy_needs_pods(c->p) != cases[i].needs)
			test_fail(__FILE__, __LINE__, "case %zu: needs every pod %d", i, !cases[i].needs);
		snprintf(name, sizeof(name), "n%zu", i);
		policy_netpol_del(c->p, "web", name);
		CHECK(!policy_needs_pods(c->p));
	}
}

CLUSTER_TEST(default_deny_then_allow_then_deny_again, 0)
{
	json_t *deny = json_loads("{\"metadata\":{\"namespace\":\"web\",\"name\":\"deny\"},"
				  "\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"]}}",
				  0, NULL);
	uint32_t id;
	struct keys s;

	(void)f;
	CHECK(deny != NULL);
	policy_netpol_set(c->p, deny);
	json_decref(deny);
	CHECK_EQ(policy_apply(c->p), 0);
	/* isolated, with no rule set at all */
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, 0);
	CHECK_EQ(endpoint_of(c, D_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 0);

	/* allow on top: a1's identity gets a set */
	CHECK_EQ(allow_set(c, 443), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	id = endpoint_of(c, A1_IP).policy_id;
	CHECK(id != 0);
	CHECK_EQ(endpoint_of(c, D_IP).policy_id, 0);
	CHECK_EQ(keys_of(c, id, &s), 0);
	CHECK_EQ(s.n, 4);

	/* allow gone: its keys removed in place, the set's ID kept with none
	 * (what policy_adopt must see in weft_endpoints) */
	policy_netpol_del(c->p, "web", "allow");
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, id);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 0);
}

/* ---- endPort blocks against a naive reference ---- */

/* Does key k (prefix 80..96) cover port? */
static bool key_covers(const struct weft_policy_key *k, uint16_t port)
{
	uint32_t mask = (0xffffu << (WEFT_POLICY_PREFIX_PORT - k->prefixlen)) & 0xffffu;

	return (port & mask) == (ntohs(k->port) & mask);
}

static int range_set(struct cluster *c, unsigned lo, unsigned hi)
{
	json_t *o = json_of("{\"metadata\":{\"namespace\":\"web\",\"name\":\"range\"},"
			    "\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},"
			    "\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"api\"}}}],"
			    "\"ports\":[{\"port\":%u,\"endPort\":%u}]}]}}",
			    lo, hi);

	if (!o)
		return -EINVAL;
	policy_netpol_set(c->p, o);
	json_decref(o);
	return 0;
}

/* Random ranges (some at the edges of the port space): the keys, as the
 * LPM trie reads them, cover exactly lo..hi, without overlap, in at most
 * 2 x 15 blocks. */
CLUSTER_TEST(end_port_blocks_cover_exactly_the_range, 0)
{
	uint64_t rnd = test_seed() | 1;
	struct keys s;

	(void)f;
	for (int it = 0; it < 40; it++) {
		unsigned lo = 1 + test_rnd(&rnd, 65535), hi, id;

		hi = lo + test_rnd(&rnd, it % 4 == 0 ? 65536 - lo : 3000);
		if (hi > 65535)
			hi = 65535;
		if (it == 0) {
			lo = 1;
			hi = 65535;
		}
		CHECK_EQ(range_set(c, lo, hi), 0);
		CHECK_EQ(policy_apply(c->p), 0);
		id = endpoint_of(c, A1_IP).policy_id;
		CHECK(id != 0);
		CHECK_EQ(keys_of(c, id, &s), 0);
		CHECK(s.n >= 1 && s.n <= 30);
		for (int probe = 0; probe < 64; probe++) {
			unsigned port = probe == 0 ? lo - 1 : probe == 1 ? lo : probe == 2 ? hi
				      : probe == 3 ? hi + 1 : test_rnd(&rnd, 65536);
			int covering = 0;

			if (port > 65535)
				continue;
			for (int i = 0; i < s.n; i++) {
				CHECK(s.k[i].prefixlen >= WEFT_POLICY_PREFIX_PROTO &&
				      s.k[i].prefixlen <= WEFT_POLICY_PREFIX_PORT);
				CHECK_EQ(s.k[i].proto, IPPROTO_TCP);
				covering += key_covers(&s.k[i], (uint16_t)port);
			}
			if (covering != (port >= lo && port <= hi))
				test_fail(__FILE__, __LINE__, "range %u-%u: port %u covered by %d keys",
					  lo, hi, port, covering);
			CHECK(!test_failed());
		}
	}
}

/* ---- ipBlocks against the spec ---- */

struct blk {
	struct cidr block, except[2];
	int nexcept;
	int port;		/* TCP; 0: every port */
};

static uint32_t mask_of(int len)
{
	return len ? ~0u << (32 - len) : 0;
}

/* A random prefix in 10.0-3.0-3.0/24, or inside outer when given. */
static struct cidr blk_prefix(uint64_t *rnd, const struct cidr *outer)
{
	static const uint8_t lens[] = { 8, 14, 16, 20, 24, 26, 30, 32 };
	struct cidr c;

	if (outer) {
		c.len = (uint8_t)(outer->len + 1 + test_rnd(rnd, 32u - outer->len));
		c.addr = outer->addr | (test_rnd(rnd, 1u << 24) & ~mask_of(outer->len));
	} else {
		c.len = lens[test_rnd(rnd, sizeof(lens))];
		c.addr = 10u << 24 | test_rnd(rnd, 4) << 16 | test_rnd(rnd, 4) << 8 | test_rnd(rnd, 256);
	}
	c.addr &= mask_of(c.len);
	return c;
}

static void cidr_str(const struct cidr *c, char *buf, size_t len)
{
	struct in_addr x = { .s_addr = htonl(c->addr) };
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &x, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, c->len);
}

/* Policy ns/name selecting app=sel, one ingress rule per block. */
static int blk_policy(struct cluster *c, const char *ns, const char *name, const char *sel,
		      const struct blk *b, int n)
{
	char buf[8192], cs[3][24];
	size_t at;
	json_t *o;

	at = (size_t)snprintf(buf, sizeof(buf),
			      "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{"
			      "\"podSelector\":{\"matchLabels\":{\"app\":\"%s\"}},\"ingress\":[",
			      ns, name, sel);
	for (int i = 0; i < n && at < sizeof(buf); i++) {
		cidr_str(&b[i].block, cs[0], sizeof(cs[0]));
		for (int e = 0; e < b[i].nexcept; e++)
			cidr_str(&b[i].except[e], cs[1 + e], sizeof(cs[1 + e]));
		at += (size_t)snprintf(buf + at, sizeof(buf) - at,
				       "%s{\"from\":[{\"ipBlock\":{\"cidr\":\"%s\",\"except\":[%s%s%s%s%s%s%s]}}]",
				       i ? "," : "", cs[0],
				       b[i].nexcept > 0 ? "\"" : "", b[i].nexcept > 0 ? cs[1] : "",
				       b[i].nexcept > 0 ? "\"" : "", b[i].nexcept > 1 ? ",\"" : "",
				       b[i].nexcept > 1 ? cs[2] : "", b[i].nexcept > 1 ? "\"" : "", "");
		if (b[i].port && at < sizeof(buf))
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, ",\"ports\":[{\"port\":%d}]",
					       b[i].port);
		if (at < sizeof(buf))
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "}");
	}
	if (at >= sizeof(buf) - 4)
		return -E2BIG;
	snprintf(buf + at, sizeof(buf) - at, "]}}");
	o = json_loads(buf, 0, NULL);
	if (!o)
		return -EINVAL;
	policy_netpol_set(c->p, o);
	json_decref(o);
	return 0;
}

struct set_view {
	uint32_t policy_id;
	struct { uint32_t addr; int len; uint32_t id; } e[256];
	int n, all;
	struct weft_policy_key *k;	/* its keys */
	int nk, capk;
};

static int view_cidr(uint32_t policy_id, int dir, in_addr_t addr, int len, uint32_t id, void *arg)
{
	struct set_view *v = arg;

	v->all++;
	if (policy_id != v->policy_id || dir != WEFT_POLICY_INGRESS)
		return 0;
	if (v->n == 256)
		return -E2BIG;
	v->e[v->n].addr = ntohl(addr);
	v->e[v->n].len = len;
	v->e[v->n++].id = id;
	return 0;
}

static int view_key(const struct weft_policy_key *k, const struct weft_policy_value *val, void *arg)
{
	struct set_view *v = arg;

	(void)val;
	if (ntohl(k->policy_id) != v->policy_id)
		return 0;
	if (v->nk == v->capk) {
		void *p = realloc(v->k, (size_t)(v->capk = v->capk ? v->capk * 2 : 64) * sizeof(*v->k));

		if (!p)
			return -ENOMEM;
		v->k = p;
	}
	v->k[v->nk++] = *k;
	return 0;
}

/* What the data plane decides for TCP from addr to port, read from the
 * maps as the programs look them up: the set's longest prefix, then its
 * identity's keys. */
static bool view_allows(const struct set_view *v, uint32_t addr, uint16_t port)
{
	int best = -1;

	for (int i = 0; i < v->n; i++)
		if ((addr & mask_of(v->e[i].len)) == v->e[i].addr && (best < 0 || v->e[i].len > v->e[best].len))
			best = i;
	if (best < 0 || v->e[best].id == 0)
		return false;
	for (int i = 0; i < v->nk; i++) {
		const struct weft_policy_key *k = &v->k[i];

		if (ntohl(k->peer) != v->e[best].id || k->dir != WEFT_POLICY_INGRESS)
			continue;
		if (k->prefixlen == WEFT_POLICY_PREFIX_ALL ||
		    (k->proto == IPPROTO_TCP &&
		     (k->prefixlen == WEFT_POLICY_PREFIX_PROTO || key_covers(k, port))))
			return true;
	}
	return false;
}

static bool blk_allows(const struct blk *b, int n, uint32_t addr, uint16_t port)
{
	for (int i = 0; i < n; i++) {
		bool in = cidr_contains_ip(&b[i].block, addr);

		for (int e = 0; e < b[i].nexcept && in; e++)
			in = !cidr_contains_ip(&b[i].except[e], addr);
		if (in && (b[i].port == 0 || b[i].port == port))
			return true;
	}
	return false;
}

/* Random ipBlocks with excepts, in several policies selecting a1, and
 * many more selecting only d: a1's rule set decides as the spec says for
 * every address probed, holds no prefix but its own, and no set is left
 * behind when the policies change. */
CLUSTER_TEST(ip_blocks_decide_as_the_spec_within_their_own_set, 0)
{
	static const int ports[] = { 0, 80, 443 };
	uint64_t rnd = test_seed() | 1;
	struct blk b[12], noise[40];
	int nb = 0;

	(void)f;
	for (int i = 0; i < 40; i++) {
		noise[i].block = blk_prefix(&rnd, NULL);
		noise[i].nexcept = 0;
		noise[i].port = 8000 + i;
	}
	CHECK_EQ(blk_policy(c, "web", "noise", "api", noise, 40), 0);
	for (int it = 0; it < 30; it++) {
		struct set_view v;
		struct policy_stats st;
		uint32_t id;
		int prefixes = 0, all = 0;

		nb = 1 + (int)test_rnd(&rnd, 12);
		for (int i = 0; i < nb; i++) {
			b[i].block = blk_prefix(&rnd, NULL);
			b[i].nexcept = b[i].block.len < 31 ? (int)test_rnd(&rnd, 3) : 0;
			for (int e = 0; e < b[i].nexcept; e++)
				b[i].except[e] = blk_prefix(&rnd, &b[i].block);
			b[i].port = ports[test_rnd(&rnd, 3)];
			prefixes += 1 + b[i].nexcept;
		}
		/* the blocks spread over three policies */
		for (int k = 0; k < 3; k++) {
			char name[16];
			int lo = nb * k / 3, hi = nb * (k + 1) / 3;

			snprintf(name, sizeof(name), "blk%d", k);
			if (hi > lo)
				CHECK_EQ(blk_policy(c, "web", name, "web", b + lo, hi - lo), 0);
			else
				policy_netpol_del(c->p, "web", name);
		}
		CHECK_EQ(policy_apply(c->p), 0);
		id = endpoint_of(c, A1_IP).policy_id;
		CHECK(id != 0);
		memset(&v, 0, sizeof(v));
		v.policy_id = id;
		CHECK_EQ(datapath_policy_cidr_foreach(c->dp, view_cidr, &v), 0);
		CHECK_EQ(datapath_policy_foreach(c->dp, view_key, &v), 0);
		/* bounded by its own prefixes, whatever d's policy names */
		CHECK(v.n >= 1 && v.n <= prefixes);
		CHECK(v.nk <= v.n * 3);	/* at most every port, 80 and 443 */
		policy_stats(c->p, &st);
		all = v.all;
		CHECK_EQ((size_t)all, st.cidrs);	/* no set left behind */
		for (int probe = 0; probe < 400; probe++) {
			const struct blk *at = &b[test_rnd(&rnd, (uint32_t)nb)];
			uint32_t addr;
			uint16_t port = (uint16_t)(test_rnd(&rnd, 2) ? 80 : 443);

			switch (probe % 4) {
			case 0: addr = at->block.addr; break;
			case 1: addr = at->block.addr | ~mask_of(at->block.len); break;
			case 2: addr = at->nexcept ? at->except[0].addr | (test_rnd(&rnd, 1u << 30) & ~mask_of(at->except[0].len))
						  : at->block.addr - 1; break;
			default: addr = blk_prefix(&rnd, NULL).addr | test_rnd(&rnd, 256); break;
			}
			if (view_allows(&v, addr, port) != blk_allows(b, nb, addr, port)) {
				struct in_addr x = { .s_addr = htonl(addr) };

				test_fail(__FILE__, __LINE__, "iteration %d: %s port %u: spec %s, maps %s", it,
					  inet_ntoa(x), port, blk_allows(b, nb, addr, port) ? "allows" : "denies",
					  view_allows(&v, addr, port) ? "allow" : "deny");
				break;
			}
		}
		free(v.k);
		CHECK(!test_failed());
	}
}

/* ---- map full ---- */

static void map_full_body(struct fixture *f, struct cluster *c)
{
	struct policy_stats st;
	uint32_t id, rules = 0, ct = 0;
	struct weft_endpoint ep;
	struct keys s;

	datapath_policy_capacities(f->dp, &rules, &ct);
	CHECK_EQ(rules, 5);
	CHECK_EQ(cluster_up(c, f, 443), 0);
	id = endpoint_of(c, A1_IP).policy_id;
	CHECK(id != 0);
	CHECK_EQ(keys_of(c, id, &s), 0);
	CHECK_EQ(s.n, 4);

	/* a peer more needs 3 keys more: they do not fit, the old set stays */
	CHECK_EQ(pod_set(c, "web", "e", "{\"app\":\"api\",\"v\":\"2\"}", "[]", E_IP), 0);
	CHECK(policy_apply(c->p) < 0);
	policy_stats(c->p, &st);
	CHECK_EQ(st.map_full, 1);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, id);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 4);
	CHECK_EQ(s.n, 4);
	CHECK(has_key(&s, identity_of(c, D_IP), WEFT_POLICY_PREFIX_PORT, IPPROTO_TCP, 8080));

	/* a new pod here of a new identity the policy selects: no room for
	 * its set, so it is isolated with none, and says why */
	CHECK_EQ(pod_set(c, "web", "f", "{\"app\":\"web\",\"v\":\"2\"}", HTTP_PORTS, F_IP), 0);
	policy_local_set(c->p, F_IP, "web", "f");
	CHECK(policy_apply(c->p) < 0);
	CHECK_EQ(endpoint_write(c, F_IP), 0);
	ep = endpoint_of(c, F_IP);
	CHECK_EQ(ep.flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_POLICY_FULL);
	CHECK_EQ(ep.policy_id, 0);
	policy_stats(c->p, &st);
	CHECK(st.map_full >= 2);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 4);

	/* room again (the extra peer gone): every set whole, the flag gone */
	policy_pod_del(c->p, "web", "e");
	policy_pod_del(c->p, "web", "f");
	policy_local_del(c->p, F_IP);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(keys_of(c, 0, &s), 0);
	CHECK_EQ(s.all, 4);
}

TEST(map_full_keeps_the_old_set_whole_and_flags_new_pods)
{
	struct datapath_opts opts = { .max_policy = 5 };
	struct cluster c = { NULL, NULL };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		map_full_body(&f, &c);
	policy_destroy(c.p);
	fixture_down(&f);
}

/* ---- restart ---- */

/* What an agent before left: an identity, a rule naming another identity
 * and a CIDR one, a prefix, and an endpoint still on a rule set whose
 * keys were all removed in place (its ID is in weft_endpoints alone). */
static int seed_leftovers(struct datapath *dp)
{
	struct weft_ipcache_entry e = { .node_ip = REMOTE_NODE_IP, .identity = 500 };
	struct weft_endpoint ep = endpoint(40, 0, pod_a_mac, gw_a_mac);
	struct weft_policy_value v = { .rule = 30 };
	struct weft_policy_key k;
	int rc;

	memset(&k, 0, sizeof(k));
	k.prefixlen = WEFT_POLICY_PREFIX_ALL;
	k.policy_id = htonl(70);
	k.peer = htonl(600);
	ep.flags |= WEFT_EP_F_ISOLATE_IN;
	ep.policy_id = 90;
	if ((rc = datapath_ipcache_put(dp, IP(10, 128, 4, 4), &e)) < 0 ||
	    (rc = datapath_policy_put(dp, &k, &v)) < 0)
		return rc;
	k.peer = htonl(WEFT_ID_CIDR | 40);
	if ((rc = datapath_policy_put(dp, &k, &v)) < 0 ||
	    (rc = datapath_policy_cidr_put(dp, 70, WEFT_POLICY_INGRESS, IP(172, 16, 0, 0), 12,
					   WEFT_ID_CIDR | 45)) < 0 ||
	    (rc = datapath_policy_cidr_put(dp, 95, WEFT_POLICY_INGRESS, IP(172, 16, 0, 0), 12,
					   WEFT_ID_CIDR | 45)) < 0)
		return rc;
	return datapath_endpoint_put(dp, IP(10, 128, 0, 99), &ep);
}

static void adopt_body(struct fixture *f, struct cluster *c)
{
	struct weft_endpoint ep;
	struct keys s;
	int n = -1;

	CHECK_EQ(seed_leftovers(f->dp), 0);
	c->dp = f->dp;
	c->p = policy_create(f->dp);
	CHECK(c->p != NULL);
	CHECK_EQ(policy_adopt(c->p), 0);
	CHECK_EQ(cluster_list(c, 443), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(entries_write(c), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	ep = endpoint_of(c, A1_IP);
	CHECK(identity_of(c, A1_IP) > 600);
	CHECK(identity_of(c, D_IP) > 600);
	CHECK(ep.policy_id > 95);	/* above the sets the maps held */
	CHECK(cidr_of(c, ep.policy_id, IP(10, 0, 0, 0), 16, NULL, NULL));
	CHECK(cidr_of(c, ep.policy_id, IP(10, 0, 2, 0), 24, NULL, NULL));
	/* the leftover sets' prefixes are gone */
	CHECK(!cidr_of(c, 70, IP(172, 16, 0, 0), 12, NULL, &n));
	CHECK_EQ(n, 0);
	CHECK(!cidr_of(c, 95, IP(172, 16, 0, 0), 12, NULL, &n));
	CHECK_EQ(n, 0);
	CHECK_EQ(keys_of(c, ep.policy_id, &s), 0);
	CHECK_EQ(s.n, 4);
	CHECK(s.rule[0] > 30);
}

DP_TEST(adopt_numbers_above_what_the_maps_hold)
{
	struct cluster c = { NULL, NULL };

	adopt_body(f, &c);
	policy_destroy(c.p);
}

/* Another node's pod, as a PodPeerSlice gives it (policy_peer_set). */
static int peer_set(struct cluster *c, const char *ns, const char *name, const char *labels,
		    const char *ports, in_addr_t ip)
{
	json_t *l = json_loads(labels, 0, NULL);
	json_t *spec = json_of("{\"containers\":[{\"name\":\"c\",\"ports\":%s}]}", ports);
	int rc = l && spec ? 0 : -EINVAL;

	if (rc == 0)
		policy_peer_set(c->p, ns, name, ip, l, spec);
	json_decref(l);
	json_decref(spec);
	return rc;
}

static bool keys_equal(const struct keys *x, const struct keys *y)
{
	return x->n == y->n && x->all == y->all && memcmp(x->k, y->k, sizeof(x->k[0]) * (size_t)x->n) == 0 &&
	       memcmp(x->rule, y->rule, sizeof(x->rule[0]) * (size_t)x->n) == 0;
}

/* A restarted agent's lists race: it may have the NetworkPolicies (which
 * name pods as peers) before the PodPeerSlices.  Until those are in, it
 * writes nothing; then it finds every number it had (web/e, a peer on
 * another node, keeps its identity), and nothing is written at all. */
CLUSTER_TEST(restart_with_the_peers_listed_last_writes_nothing, 443)
{
	struct keys before, after;
	struct cluster r = { NULL, c->dp };
	struct policy_stats st;
	uint32_t e, a1_set = endpoint_of(c, A1_IP).policy_id;

	(void)f;
	CHECK_EQ(pod_set(c, "web", "e", "{\"app\":\"api\",\"v\":\"2\"}", "[]", E_IP), 0);
	CHECK_EQ(policy_apply(c->p), 0);
	CHECK_EQ(ipcache_write(c, E_IP, REMOTE_NODE_IP), 0);
	e = identity_of(c, E_IP);
	CHECK_EQ(keys_of(c, 0, &before), 0);
	CHECK_EQ(before.n, 7);

	CHECK((r.p = policy_create(c->dp)) != NULL);
	CHECK_EQ(policy_adopt(r.p), 0);
	policy_begin_list(r.p, POLICY_NAMESPACES);
	policy_begin_list(r.p, POLICY_PODS);
	policy_begin_list(r.p, POLICY_NETPOLS);
	CHECK_EQ(ns_set(&r, "web"), 0);
	CHECK_EQ(ns_set(&r, "db"), 0);
	CHECK_EQ(pod_set(&r, "web", "a1", "{\"app\":\"web\"}", HTTP_PORTS, A1_IP), 0);
	CHECK_EQ(pod_set(&r, "web", "a2", "{\"app\":\"web\"}", HTTP_PORTS, A2_IP), 0);
	CHECK_EQ(pod_set(&r, "web", "a3", "{\"app\":\"web\"}",
			 "[{\"name\":\"http\",\"containerPort\":8080},{\"containerPort\":9999}]", A3_IP), 0);
	CHECK_EQ(pod_set(&r, "web", "d", "{\"app\":\"api\"}", "[]", D_IP), 0);
	CHECK_EQ(allow_set(&r, 443), 0);
	policy_listed(r.p, POLICY_NAMESPACES);
	policy_listed(r.p, POLICY_PODS);
	policy_listed(r.p, POLICY_NETPOLS);
	policy_local_set(r.p, A1_IP, "web", "a1");
	policy_local_set(r.p, A2_IP, "web", "a2");
	policy_local_set(r.p, A3_IP, "web", "a3");
	policy_local_set(r.p, D_IP, "web", "d");
	CHECK(policy_needs_pods(r.p));
	CHECK_EQ(policy_apply(r.p), 1);		/* the peers are not known yet */
	CHECK_EQ(keys_of(&r, 0, &after), 0);
	CHECK(keys_equal(&after, &before));

	/* the other nodes' pods arrive */
	policy_begin_list(r.p, POLICY_PEERS);
	CHECK_EQ(peer_set(&r, "web", "b", "{\"app\":\"web\"}", "[]", B_IP), 0);
	CHECK_EQ(peer_set(&r, "db", "c", "{\"app\":\"web\"}", HTTP_PORTS, C_IP), 0);
	CHECK_EQ(peer_set(&r, "web", "e", "{\"app\":\"api\",\"v\":\"2\"}", "[]", E_IP), 0);
	policy_listed(r.p, POLICY_PEERS);
	CHECK_EQ(policy_apply(r.p), 0);
	CHECK_EQ(identity_of(&r, E_IP), e);
	CHECK_EQ(endpoint_of(&r, A1_IP).policy_id, a1_set);
	CHECK_EQ(keys_of(&r, 0, &after), 0);
	CHECK(keys_equal(&after, &before));
	policy_stats(r.p, &st);
	CHECK_EQ(st.writes, 0);
	policy_destroy(r.p);
}

/* The peers forgotten (their watch ended), then needed again: a new pod
 * of a new identity, whose rule set waits for them, starts isolated both
 * ways, and the pods already there keep theirs; once the peers are
 * listed, it gets its set. */
CLUSTER_TEST(new_pod_while_the_peers_are_unknown_starts_isolated, 443)
{
	struct weft_endpoint a1 = endpoint_of(c, A1_IP), ep;
	struct keys before, after;

	(void)f;
	CHECK_EQ(keys_of(c, 0, &before), 0);
	policy_peers_forget(c->p);
	CHECK_EQ(pod_set(c, "web", "f", "{\"app\":\"web\",\"v\":\"3\"}", HTTP_PORTS, F_IP), 0);
	policy_local_set(c->p, F_IP, "web", "f");
	CHECK_EQ(policy_apply(c->p), 1);
	CHECK_EQ(endpoint_write(c, F_IP), 0);
	ep = endpoint_of(c, F_IP);
	CHECK_EQ(ep.flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT);
	CHECK_EQ(ep.policy_id, 0);
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, a1.policy_id);
	CHECK_EQ(endpoint_of(c, A1_IP).flags, a1.flags);
	CHECK_EQ(keys_of(c, 0, &after), 0);
	CHECK(keys_equal(&after, &before));

	peers_listed(c->p);
	CHECK_EQ(policy_apply(c->p), 0);
	ep = endpoint_of(c, F_IP);
	CHECK(ep.policy_id != 0);
	CHECK_EQ(ep.flags, WEFT_EP_F_READY | WEFT_EP_F_ISOLATE_IN);	/* allow selects it */
	CHECK_EQ(endpoint_of(c, A1_IP).policy_id, a1.policy_id);
}

/* ---- kept up to date against computed whole ---- */

#define INC_PODS 20
#define INC_POLS 8
#define INC_PROBES 5

struct inc_pod {
	bool on, here;
	int ns, app, ports;
};

struct inc {
	struct cluster c;
	struct inc_pod pod[INC_PODS];
	json_t *pol[INC_POLS];	/* NULL: none */
	uint64_t rnd;
};

static const char *const inc_ns[] = { "web", "db" };
static const char *const inc_app[] = { "web", "api", "x", "y" };
static const char *const inc_ports[] = {
	"[]", HTTP_PORTS, "[{\"name\":\"http\",\"containerPort\":9005},{\"name\":\"dns\",\"containerPort\":53,\"protocol\":\"UDP\"}]"
};
static const struct { uint8_t proto; uint16_t port; } inc_probe[INC_PROBES] = {
	{ IPPROTO_TCP, 80 }, { IPPROTO_TCP, 8080 }, { IPPROTO_TCP, 9005 }, { IPPROTO_UDP, 53 }, { IPPROTO_UDP, 9004 },
};

static in_addr_t inc_ip(int i)
{
	return i % 2 ? IP(10, 128, 2, 20 + i) : IP(10, 128, 0, 20 + i);
}

static void inc_name(int i, char *buf, size_t len)
{
	snprintf(buf, len, "p%d", i);
}

static int inc_pod_set(struct inc *s, int i)
{
	char name[16], labels[64];

	inc_name(i, name, sizeof(name));
	snprintf(labels, sizeof(labels), "{\"app\":\"%s\"}", inc_app[s->pod[i].app]);
	return pod_set(&s->c, inc_ns[s->pod[i].ns], name, labels, inc_ports[s->pod[i].ports], inc_ip(i));
}

/* A random peer, rule and policy of the shapes the compiler tells apart:
 * pod, namespace and both selectors, all peers; numbered and named ports
 * and a range, all ports; egress to every peer on a named port. */
static void inc_peer(struct inc *s, char *buf, size_t len)
{
	switch (test_rnd(&s->rnd, 4)) {
	case 0:
		snprintf(buf, len, "{\"podSelector\":{\"matchLabels\":{\"app\":\"%s\"}}}", inc_app[test_rnd(&s->rnd, 4)]);
		break;
	case 1:
		snprintf(buf, len, "{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"%s\"}}}", inc_ns[test_rnd(&s->rnd, 2)]);
		break;
	case 2:
		snprintf(buf, len, "{\"namespaceSelector\":{},\"podSelector\":{\"matchLabels\":{\"app\":\"%s\"}}}",
			 inc_app[test_rnd(&s->rnd, 4)]);
		break;
	default:
		snprintf(buf, len, "{\"namespaceSelector\":{}}");
	}
}

static void inc_rule(struct inc *s, bool egress, char *buf, size_t len)
{
	static const char *const ports[] = {
		"", "\"ports\":[{\"port\":80}]", "\"ports\":[{\"port\":\"http\"}]",
		"\"ports\":[{\"protocol\":\"UDP\",\"port\":9000,\"endPort\":9011},{\"protocol\":\"UDP\",\"port\":\"dns\"}]",
	};
	char p1[160], p2[160];
	uint32_t npeers = test_rnd(&s->rnd, 3);
	const char *pt = ports[test_rnd(&s->rnd, 4)];

	inc_peer(s, p1, sizeof(p1));
	inc_peer(s, p2, sizeof(p2));
	snprintf(buf, len, "{\"%s\":[%s%s%s]%s%s}", egress ? "to" : "from", npeers > 0 ? p1 : "",
		 npeers > 1 ? "," : "", npeers > 1 ? p2 : "", *pt ? "," : "", pt);
}

static json_t *inc_policy(struct inc *s, int i)
{
	char in[400], out[400], sel[80];
	uint32_t types = 1 + test_rnd(&s->rnd, 3);	/* 1 ingress, 2 egress, 3 both */
	uint32_t app = test_rnd(&s->rnd, 5);

	inc_rule(s, false, in, sizeof(in));
	inc_rule(s, true, out, sizeof(out));
	if (app == 4)
		snprintf(sel, sizeof(sel), "{}");
	else
		snprintf(sel, sizeof(sel), "{\"matchLabels\":{\"app\":\"%s\"}}", inc_app[app]);
	return json_of("{\"metadata\":{\"namespace\":\"%s\",\"name\":\"n%d\",\"resourceVersion\":\"%u\"},"
		       "\"spec\":{\"podSelector\":%s,\"policyTypes\":[%s%s%s],\"ingress\":[%s],\"egress\":[%s]}}",
		       inc_ns[i % 2], i, test_rnd(&s->rnd, 1u << 30), sel, types & 1 ? "\"Ingress\"" : "",
		       types == 3 ? "," : "", types & 2 ? "\"Egress\"" : "", in, out);
}

/* The endpoints and ipcache entries of the pods on, as the agent writes
 * them; then the policies applied again. */
static int inc_entries(struct inc *s)
{
	int rc;

	if ((rc = policy_apply(s->c.p)) < 0)
		return rc;
	for (int i = 0; i < INC_PODS; i++) {
		if (!s->pod[i].on)
			continue;
		if (s->pod[i].here && (rc = endpoint_write(&s->c, inc_ip(i))) < 0)
			return rc;
		if ((rc = ipcache_write(&s->c, inc_ip(i), s->pod[i].here ? NODE_IP : REMOTE_NODE_IP)) < 0)
			return rc;
	}
	return policy_apply(s->c.p);
}

/* A fresh compiler over the maps, as a restarted agent: every input in one
 * list, every set computed whole. */
static int inc_restart(struct inc *s)
{
	char name[16];
	int rc;

	policy_destroy(s->c.p);
	if (!(s->c.p = policy_create(s->c.dp)))
		return -ENOMEM;
	if ((rc = policy_adopt(s->c.p)) < 0)
		return rc;
	policy_begin_list(s->c.p, POLICY_NAMESPACES);
	policy_begin_list(s->c.p, POLICY_PODS);
	policy_begin_list(s->c.p, POLICY_NETPOLS);
	if ((rc = ns_set(&s->c, "web")) < 0 || (rc = ns_set(&s->c, "db")) < 0)
		return rc;
	for (int i = 0; i < INC_PODS; i++)
		if (s->pod[i].on && (rc = inc_pod_set(s, i)) < 0)
			return rc;
	for (int i = 0; i < INC_POLS; i++)
		if (s->pol[i])
			policy_netpol_set(s->c.p, s->pol[i]);
	policy_listed(s->c.p, POLICY_NAMESPACES);
	policy_listed(s->c.p, POLICY_PODS);
	policy_listed(s->c.p, POLICY_NETPOLS);
	peers_listed(s->c.p);
	for (int i = 0; i < INC_PODS; i++)
		if (s->pod[i].on && s->pod[i].here) {
			inc_name(i, name, sizeof(name));
			policy_local_set(s->c.p, inc_ip(i), inc_ns[s->pod[i].ns], name);
		}
	return inc_entries(s);
}

/* One random change: a pod made, deleted or relabelled (new identities,
 * identities gone), a policy made, changed or deleted. */
static int inc_step(struct inc *s)
{
	uint32_t what = test_rnd(&s->rnd, 5);
	int i;
	char name[16];

	if (what <= 2) {
		i = (int)test_rnd(&s->rnd, INC_PODS);
		inc_name(i, name, sizeof(name));
		if (s->pod[i].on && what == 0) {
			s->pod[i].on = false;
			policy_pod_del(s->c.p, inc_ns[s->pod[i].ns], name);
			if (s->pod[i].here)
				policy_local_del(s->c.p, inc_ip(i));
			return 0;
		}
		if (!s->pod[i].on) {
			s->pod[i].ns = (int)test_rnd(&s->rnd, 2);
			s->pod[i].here = test_rnd(&s->rnd, 2);
		}
		s->pod[i].app = (int)test_rnd(&s->rnd, 4);
		s->pod[i].ports = (int)test_rnd(&s->rnd, 3);
		if (inc_pod_set(s, i) < 0)
			return -ENOMEM;
		if (!s->pod[i].on && s->pod[i].here)
			policy_local_set(s->c.p, inc_ip(i), inc_ns[s->pod[i].ns], name);
		s->pod[i].on = true;
		return 0;
	}
	i = (int)test_rnd(&s->rnd, INC_POLS);
	if (s->pol[i] && what == 3) {
		snprintf(name, sizeof(name), "n%d", i);
		policy_netpol_del(s->c.p, inc_ns[i % 2], name);
		json_decref(s->pol[i]);
		s->pol[i] = NULL;
		return 0;
	}
	json_decref(s->pol[i]);
	if (!(s->pol[i] = inc_policy(s, i)))
		return -EINVAL;
	policy_netpol_set(s->c.p, s->pol[i]);
	return 0;
}

/* What the maps decide for every pod here against every pod, both ways,
 * on each probe, as the programs look it up: 1 allowed, 0 denied. */
static int inc_table(struct inc *s, int fd, uint8_t *t)
{
	size_t n = 0;

	for (int l = 0; l < INC_PODS; l++)
		for (int r = 0; r < INC_PODS; r++)
			for (int d = 0; d < 2; d++)
				for (int q = 0; q < INC_PROBES; q++) {
					struct weft_endpoint ep;
					struct weft_policy_key k;
					struct weft_policy_value v;
					uint32_t iso = d == WEFT_POLICY_INGRESS ? WEFT_EP_F_ISOLATE_IN : WEFT_EP_F_ISOLATE_OUT;
					uint8_t verdict = 2;	/* not probed */

					if (s->pod[l].on && s->pod[l].here && s->pod[r].on) {
						ep = endpoint_of(&s->c, inc_ip(l));
						if (ep.flags & WEFT_EP_F_POLICY_FULL)
							return -ENOSPC;
						memset(&k, 0, sizeof(k));
						k.prefixlen = WEFT_POLICY_PREFIX_PORT;
						k.policy_id = htonl(ep.policy_id);
						k.peer = htonl(identity_of(&s->c, inc_ip(r)));
						k.dir = (uint8_t)d;
						k.proto = inc_probe[q].proto;
						k.port = htons(inc_probe[q].port);
						verdict = !(ep.flags & iso) || bpf_map_lookup_elem(fd, &k, &v) == 0;
						k.peer = 0;
						verdict = verdict || bpf_map_lookup_elem(fd, &k, &v) == 0;
					}
					t[n++] = verdict;
				}
	return 0;
}

#define INC_TABLE (INC_PODS * INC_PODS * 2 * INC_PROBES)

static int count_key(const struct weft_policy_key *k, const struct weft_policy_value *v, void *arg)
{
	(void)k;
	(void)v;
	++*(int *)arg;
	return 0;
}

/* Random changes kept up to date as they come (a new identity adds only
 * its keys, one gone takes only its keys, a changed policy computes the
 * sets it selects before or after) decide every probe exactly as the same
 * inputs computed whole by a fresh compiler; and the patching is used. */
DP_TEST(kept_up_to_date_decides_as_computed_whole)
{
	static uint8_t kept[INC_TABLE], whole[INC_TABLE];
	struct inc s;
	struct policy_stats st;
	uint64_t patched = 0;
	int nkept, nwhole;
	int fd = pinned_map_fd(f, "weft_policy");

	memset(&s, 0, sizeof(s));
	s.rnd = test_seed() | 1;
	s.c.dp = f->dp;
	CHECK(fd >= 0);
	CHECK((s.c.p = policy_create(f->dp)) != NULL);
	CHECK_EQ(inc_restart(&s), 0);
	for (int round = 0; round < 12 && !test_failed(); round++) {
		for (int step = 0; step < 8; step++) {
			CHECK_EQ(inc_step(&s), 0);
			CHECK_EQ(inc_entries(&s), 0);
		}
		policy_stats(s.c.p, &st);
		patched += st.patched;
		CHECK_EQ(inc_table(&s, fd, kept), 0);
		nkept = nwhole = 0;
		CHECK_EQ(datapath_policy_foreach(f->dp, count_key, &nkept), 0);
		CHECK_EQ(inc_restart(&s), 0);
		CHECK_EQ(inc_table(&s, fd, whole), 0);
		CHECK_EQ(datapath_policy_foreach(f->dp, count_key, &nwhole), 0);
		if (nkept != nwhole)	/* no key of an identity gone stays behind */
			test_fail(__FILE__, __LINE__, "round %d: %d keys kept, %d computed whole", round, nkept,
				  nwhole);
		for (size_t i = 0; i < INC_TABLE; i++)
			if (kept[i] != whole[i]) {
				size_t q = i % INC_PROBES, d = i / INC_PROBES % 2, r = i / INC_PROBES / 2 % INC_PODS,
				       l = i / INC_PROBES / 2 / INC_PODS;

				test_fail(__FILE__, __LINE__, "round %d: p%zu %s p%zu %s/%u: kept %d, computed whole %d",
					  round, l, d ? "->" : "<-", r, inc_probe[q].proto == IPPROTO_TCP ? "TCP" : "UDP",
					  inc_probe[q].port, kept[i], whole[i]);
				break;
			}
	}
	CHECK(patched > 0);
	policy_destroy(s.c.p);
	for (int i = 0; i < INC_POLS; i++)
		json_decref(s.pol[i]);
	close(fd);
}
