/*
 * check.c — every hollow node's maps against the cluster (check.h).
 *
 * What a node must hold, from the lists:
 *   weft_nodes     each Node's spec.podCIDR -> its InternalIP and node ID
 *                  (the annotation weft.io/node-id), and nothing else
 *   weft_node_ips  each Node's InternalIP -> its node ID, and nothing else
 *   weft_ipcache   the Pods of this node with a status.podIP; every Pod with
 *                  one when some NetworkPolicy names pods as peers; and
 *                  each address an Endpoints names in another node's
 *                  podCIDR (a service backend there): a pod's entry is its
 *                  node's InternalIP and its namespace's VNID (NetNamespace
 *                  netid), a backend's the InternalIP of the node whose
 *                  podCIDR holds it and the VNID of its targetRef's
 *                  namespace (else the Endpoints'); nothing else
 *   weft_endpoints the Pods of this node, with that VNID, and nothing else
 *   weft_services  for each Service port with a cluster IP, slot 0 with as
 *   weft_backends  many backends as its Endpoints have addresses for that
 *                  port, and the backends of slots 1..count are exactly
 *                  those addresses and the port
 * The lists are read once, after the fleet converged, while nothing
 * changes the cluster.  The nodes read EndpointSlices, not Endpoints: the
 * expectation is taken from the Endpoints (what the user wrote), so the
 * check covers the controller's mirroring of them into slices too.  So
 * with the nodes: the agents build their node table from the HostSubnets,
 * the expectation from the Nodes (each agent's registration and the
 * controller's answer to it), so the check covers the HostSubnets the
 * controller keeps beside them.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hollow/admin.h"
#include "hollow/check.h"
#include "lib/cidr.h"
#include "lib/u64map.h"
#include "model/model.h"

/* an address an Endpoints names in some node's podCIDR */
struct backend_want {
	in_addr_t node_ip;
	uint32_t vnid;
	bool pod;		/* some Pod holds it */
};

struct want {
	json_t *nodes, *pods, *netns, *services, *endpoints, *netpols;
	bool pod_peers;			/* some NetworkPolicy names pods as peers */
	struct backend_want *bk;
	size_t nbk;
	struct u64map bk_ip;		/* backend address -> index in bk */
	struct u64map bk_per_node;	/* InternalIP -> backends in its podCIDR */
	struct u64map bk_nonpod_per_node;	/* the same, held by no Pod */
	struct u64map node_ip;		/* hash(node name) -> InternalIP */
	struct u64map node_id;		/* InternalIP -> node ID (weft.io/node-id, 0 none) */
	struct u64map vnid;		/* hash(namespace) -> netid + 1 */
	struct u64map pod_ip;		/* pod IP -> index in pods */
	struct u64map eps;		/* hash(ns/name) -> index in endpoints */
	struct u64map subnets;		/* subnet << 8 | prefix length -> InternalIP */
};

static uint64_t hash_str(const char *a, const char *b)
{
	uint64_t h = 1469598103934665603ull;

	for (; a && *a; a++)
		h = (h ^ (uint8_t)*a) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (; b && *b; b++)
		h = (h ^ (uint8_t)*b) * 1099511628211ull;
	return h;
}

static in_addr_t ip_of(const char *s)
{
	struct in_addr ia;

	return s && inet_pton(AF_INET, s, &ia) == 1 ? ia.s_addr : 0;
}

static in_addr_t internal_ip(const json_t *node)
{
	const json_t *ad;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "status"), "addresses"), i, ad)
		if (json_is_string(json_object_get(ad, "type")) &&
		    strcmp(json_string_value(json_object_get(ad, "type")), "InternalIP") == 0)
			return ip_of(json_string_value(json_object_get(ad, "address")));
	return 0;
}

/* A Node's weft.io/node-id, 0 when it has none. */
static uint32_t node_id_of(const json_t *node)
{
	const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
	const char *id = json_string_value(json_object_get(ann, "weft.io/node-id"));

	return id ? (uint32_t)strtoul(id, NULL, 10) : 0;
}

static void want_free(struct want *w)
{
	json_decref(w->nodes);
	json_decref(w->pods);
	json_decref(w->netns);
	json_decref(w->services);
	json_decref(w->endpoints);
	json_decref(w->netpols);
	free(w->bk);
	u64map_free(&w->bk_ip);
	u64map_free(&w->bk_per_node);
	u64map_free(&w->bk_nonpod_per_node);
	u64map_free(&w->node_ip);
	u64map_free(&w->node_id);
	u64map_free(&w->vnid);
	u64map_free(&w->pod_ip);
	u64map_free(&w->eps);
	u64map_free(&w->subnets);
}

/* Does a rule of NetworkPolicy np have a peer other than an ipBlock? */
static bool names_pod_peers(const json_t *np)
{
	static const char *const dirs[][2] = { { "ingress", "from" }, { "egress", "to" } };
	const json_t *spec = json_object_get(np, "spec"), *rule, *peer;
	size_t r, q;

	for (size_t d = 0; d < 2; d++)
		json_array_foreach(json_object_get(spec, dirs[d][0]), r, rule)
			json_array_foreach(json_object_get(rule, dirs[d][1]), q, peer)
				if (!json_object_get(peer, "ipBlock"))
					return true;
	return false;
}

static uint32_t vnid_of(struct want *w, const char *ns);

/* The InternalIP of the node whose podCIDR holds ip (longest), 0: none. */
static in_addr_t subnet_node(const struct want *w, in_addr_t ip)
{
	uint64_t nip;

	for (int l = 32; l >= 0; l--) {
		uint32_t h = ntohl(ip) & (l ? ~0u << (32 - l) : 0);

		if (u64map_get(&w->subnets, (uint64_t)h << 8 | (unsigned)l, &nip))
			return (in_addr_t)nip;
	}
	return 0;
}

static int count_up(struct u64map *m, uint64_t key)
{
	uint64_t n = 0;

	(void)u64map_get(m, key, &n);
	return u64map_put(m, key, n + 1);
}

/* The addresses the Endpoints name (ready ones: the agent's backends) in
 * some node's podCIDR. */
static int backends_load(struct want *w)
{
	const json_t *ep, *sub, *ad;
	size_t i, j, k, cap = 0;

	json_array_foreach(w->endpoints, i, ep)
		json_array_foreach(json_object_get(ep, "subsets"), j, sub)
			json_array_foreach(json_object_get(sub, "addresses"), k, ad) {
				in_addr_t ip = ip_of(json_string_value(json_object_get(ad, "ip")));
				const json_t *ref = json_object_get(ad, "targetRef");
				const char *kind = json_string_value(json_object_get(ref, "kind"));
				const char *ns = json_string_value(json_object_get(ref, "namespace"));
				in_addr_t node = ip ? subnet_node(w, ip) : 0;

				if (!node || u64map_get(&w->bk_ip, ip, NULL))
					continue;
				if (!(kind && strcmp(kind, "Pod") == 0 && ns && ns[0]))
					ns = obj_namespace(ep);
				if (w->nbk == cap) {
					struct backend_want *v = realloc(w->bk, (cap = cap ? cap * 2 : 64) * sizeof(*v));

					if (!v)
						return -1;
					w->bk = v;
				}
				w->bk[w->nbk] = (struct backend_want){ .node_ip = node, .vnid = vnid_of(w, ns),
								      .pod = u64map_get(&w->pod_ip, ip, NULL) };
				if (u64map_put(&w->bk_ip, ip, w->nbk) < 0 || count_up(&w->bk_per_node, node) < 0 ||
				    (!w->bk[w->nbk].pod && count_up(&w->bk_nonpod_per_node, node) < 0))
					return -1;
				w->nbk++;
			}
	return 0;
}

static int want_load(struct fleet *f, struct want *w, char *err, size_t len)
{
	const json_t *o;
	size_t i;

	if (admin_list(f->admin, "/api/v1/nodes", &w->nodes, err, len) < 0 ||
	    admin_list(f->admin, "/api/v1/pods", &w->pods, err, len) < 0 ||
	    admin_list(f->admin, "/apis/network.openshift.io/v1/netnamespaces", &w->netns, err, len) < 0 ||
	    admin_list(f->admin, "/api/v1/services", &w->services, err, len) < 0 ||
	    admin_list(f->admin, "/api/v1/endpoints", &w->endpoints, err, len) < 0 ||
	    admin_list(f->admin, "/apis/networking.k8s.io/v1/networkpolicies", &w->netpols, err, len) < 0)
		return -1;
	json_array_foreach(w->nodes, i, o) {
		struct cidr sub;

		if (u64map_put(&w->node_ip, hash_str(obj_name(o), NULL), internal_ip(o)) < 0 ||
		    u64map_put(&w->node_id, internal_ip(o), node_id_of(o)) < 0)
			goto nomem;
		if (obj_str(o, "spec.podCIDR") && cidr_parse(obj_str(o, "spec.podCIDR"), &sub) == 0 &&
		    u64map_put(&w->subnets, (uint64_t)sub.addr << 8 | sub.len, internal_ip(o)) < 0)
			goto nomem;
	}
	json_array_foreach(w->netns, i, o) {
		json_int_t id = json_integer_value(json_object_get(o, "netid"));

		if (u64map_put(&w->vnid, hash_str(obj_name(o), NULL), (uint64_t)id + 1) < 0)
			goto nomem;
	}
	json_array_foreach(w->pods, i, o) {
		in_addr_t ip = ip_of(obj_str(o, "status.podIP"));

		if (ip && u64map_put(&w->pod_ip, ip, i) < 0)
			goto nomem;
	}
	json_array_foreach(w->endpoints, i, o)
		if (u64map_put(&w->eps, hash_str(obj_namespace(o), obj_name(o)), i) < 0)
			goto nomem;
	json_array_foreach(w->netpols, i, o)
		if (names_pod_peers(o))
			w->pod_peers = true;
	if (backends_load(w) < 0)
		goto nomem;
	return 0;
nomem:
	snprintf(err, len, "out of memory");
	return -1;
}

struct node_check {
	struct want *w;
	struct hollow_node *n;
	in_addr_t my_ip;
	size_t seen, wrong;
	uint64_t checked;
	char first[400];
};

static void wrong(struct node_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wrong(struct node_check *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->wrong++) {
		va_start(ap, fmt);
		vsnprintf(c->first, sizeof(c->first), fmt, ap);
		va_end(ap);
	}
}

static uint32_t vnid_of(struct want *w, const char *ns)
{
	uint64_t v = 0;

	return u64map_get(&w->vnid, hash_str(ns, NULL), &v) && v ? (uint32_t)(v - 1) : AGENT_VNID_UNKNOWN;
}

static int check_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	struct node_check *c = arg;
	const json_t *pod = NULL;
	const char *node;
	uint64_t i, nip = 0;
	in_addr_t want_ip;
	uint32_t want_vnid;
	char s[INET_ADDRSTRLEN];

	c->seen++;
	c->checked++;
	inet_ntop(AF_INET, &ip, s, sizeof(s));
	if (u64map_get(&c->w->pod_ip, ip, &i)) {
		pod = json_array_get(c->w->pods, i);
		node = obj_str(pod, "spec.nodeName");
		if (!c->w->pod_peers && strcmp(node ? node : "", c->n->name) != 0)
			pod = NULL;	/* another node's: only as a backend */
	}
	if (pod) {
		(void)u64map_get(&c->w->node_ip, hash_str(obj_str(pod, "spec.nodeName"), NULL), &nip);
		want_ip = (in_addr_t)nip;
		want_vnid = vnid_of(c->w, obj_namespace(pod));
	} else if (u64map_get(&c->w->bk_ip, ip, &i) && c->w->bk[i].node_ip != c->my_ip) {
		want_ip = c->w->bk[i].node_ip;
		want_vnid = c->w->bk[i].vnid;
	} else {
		wrong(c, "weft_ipcache has %s, which is no Pod of this node, no service backend on "
		      "another node%s", s, c->w->pod_peers ? " and no Pod" : "");
		return 0;
	}
	if (e->node_ip != want_ip || e->vnid != want_vnid)
		wrong(c, "weft_ipcache %s%s%s%s: node IP %08x VNID %u, the cluster says %08x VNID %u",
		      s, pod ? " (pod " : " (a service backend", pod ? obj_namespace(pod) : "",
		      pod ? ")" : ")", ntohl(e->node_ip), e->vnid, ntohl(want_ip), want_vnid);
	return 0;
}

static int check_endpoint(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct node_check *c = arg;
	const json_t *pod;
	uint64_t i;
	char s[INET_ADDRSTRLEN];

	c->seen++;
	c->checked++;
	inet_ntop(AF_INET, &ip, s, sizeof(s));
	if (!u64map_get(&c->w->pod_ip, ip, &i)) {
		wrong(c, "weft_endpoints has %s, which no Pod holds", s);
		return 0;
	}
	pod = json_array_get(c->w->pods, i);
	if (strcmp(obj_str(pod, "spec.nodeName") ? obj_str(pod, "spec.nodeName") : "", c->n->name) != 0 ||
	    ep->vnid != vnid_of(c->w, obj_namespace(pod)))
		wrong(c, "weft_endpoints %s: pod %s/%s is on %s with VNID %u, the entry has VNID %u",
		      s, obj_namespace(pod), obj_name(pod), obj_str(pod, "spec.nodeName"),
		      vnid_of(c->w, obj_namespace(pod)), ep->vnid);
	return 0;
}

static int check_node_entry(in_addr_t subnet, int plen, const struct weft_node_entry *e, void *arg)
{
	struct node_check *c = arg;
	uint64_t ip, id = 0;

	c->seen++;
	c->checked++;
	if (!u64map_get(&c->w->subnets, (uint64_t)ntohl(subnet) << 8 | (unsigned)plen, &ip)) {
		wrong(c, "weft_nodes has %08x/%d, which no Node's podCIDR is", ntohl(subnet), plen);
		return 0;
	}
	(void)u64map_get(&c->w->node_id, ip, &id);
	if ((in_addr_t)ip != e->node_ip)
		wrong(c, "weft_nodes %08x/%d: node IP %08x, the Node's InternalIP is %08x", ntohl(subnet),
		      plen, ntohl(e->node_ip), ntohl((in_addr_t)ip));
	else if (id != e->node_id)
		wrong(c, "weft_nodes %08x/%d: node ID %u, the Node's weft.io/node-id is %u", ntohl(subnet),
		      plen, e->node_id, (unsigned)id);
	return 0;
}

static int check_node_ip(in_addr_t ip, uint32_t node_id, void *arg)
{
	struct node_check *c = arg;
	uint64_t id;
	char s[INET_ADDRSTRLEN];

	c->seen++;
	c->checked++;
	inet_ntop(AF_INET, &ip, s, sizeof(s));
	if (!u64map_get(&c->w->node_id, ip, &id))
		wrong(c, "weft_node_ips has %s, which is no Node's InternalIP", s);
	else if (id != node_id)
		wrong(c, "weft_node_ips %s: node ID %u, the Node's weft.io/node-id is %u", s, node_id,
		      (unsigned)id);
	return 0;
}

/* Service ports: slot 0's count and the backends of its slots */
static void check_services(struct node_check *c)
{
	const json_t *svc, *port;
	size_t i, j;

	json_array_foreach(c->w->services, i, svc) {
		in_addr_t cip = ip_of(obj_str(svc, "spec.clusterIP"));
		uint64_t ei;
		const json_t *ep = NULL;

		if (!cip)
			continue;
		if (u64map_get(&c->w->eps, hash_str(obj_namespace(svc), obj_name(svc)), &ei))
			ep = json_array_get(c->w->endpoints, ei);
		json_array_foreach(json_object_get(json_object_get(svc, "spec"), "ports"), j, port) {
			struct weft_svc_key k = { .addr = cip, .proto = 6, .scope = WEFT_SCOPE_ALL };
			struct weft_svc_value v;
			const json_t *sub, *addr;
			size_t s, a, want = 0;

			k.port = htons((uint16_t)json_integer_value(json_object_get(port, "port")));
			json_array_foreach(json_object_get(ep, "subsets"), s, sub)
				want += json_array_size(json_object_get(sub, "addresses"));
			c->checked++;
			if (datapath_service_get(c->n->a.dp, &k, &v) < 0) {
				if (want)
					wrong(c, "service %s/%s: no frontend", obj_namespace(svc), obj_name(svc));
				continue;
			}
			if (v.count != want) {
				wrong(c, "service %s/%s: %u backends, its Endpoints have %zu",
				      obj_namespace(svc), obj_name(svc), v.count, want);
				continue;
			}
			/* every slot's backend is one of the Endpoints' addresses */
			for (uint16_t slot = 1; slot <= v.count; slot++) {
				struct weft_svc_value sv;
				struct weft_backend b;
				bool found = false;

				k.slot = slot;
				c->checked++;
				if (datapath_service_get(c->n->a.dp, &k, &sv) < 0 ||
				    datapath_backend_get(c->n->a.dp, sv.backend_id, &b) < 0) {
					wrong(c, "service %s/%s: slot %u unreadable", obj_namespace(svc),
					      obj_name(svc), slot);
					break;
				}
				json_array_foreach(json_object_get(ep, "subsets"), s, sub)
					json_array_foreach(json_object_get(sub, "addresses"), a, addr)
						if (ip_of(json_string_value(json_object_get(addr, "ip"))) == b.addr)
							found = true;
				if (!found)
					wrong(c, "service %s/%s: slot %u's backend is no address of its Endpoints",
					      obj_namespace(svc), obj_name(svc), slot);
			}
			k.slot = 0;
		}
	}
}

/* Backends held by no Pod, on every node. */
static size_t backends_without_pod(const struct want *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->nbk; i++)
		n += !w->bk[i].pod;
	return n;
}

static void check_node(struct node_check *c)
{
	size_t pods_with_ip = 0, mine = 0;
	const json_t *pod;
	size_t i;

	json_array_foreach(c->w->pods, i, pod)
		if (ip_of(obj_str(pod, "status.podIP"))) {
			pods_with_ip++;
			if (obj_str(pod, "spec.nodeName") && strcmp(obj_str(pod, "spec.nodeName"), c->n->name) == 0)
				mine++;
		}
	/* mine, and: every other pod (peers) and the backends of other
	 * nodes no pod holds; or the backends of other nodes */
	uint64_t bk_mine = 0, bk_nonpod_mine = 0;
	size_t want_n;

	(void)u64map_get(&c->w->bk_per_node, c->my_ip, &bk_mine);
	(void)u64map_get(&c->w->bk_nonpod_per_node, c->my_ip, &bk_nonpod_mine);
	if (c->w->pod_peers)
		want_n = pods_with_ip + (backends_without_pod(c->w) - bk_nonpod_mine);
	else
		want_n = mine + (c->w->nbk - bk_mine);
	c->seen = 0;
	(void)datapath_ipcache_foreach(c->n->a.dp, check_ipcache, c);
	if (c->seen != want_n)
		wrong(c, "weft_ipcache has %zu entries, the node needs %zu (%zu pods of its own%s, "
		      "service backends on other nodes)", c->seen, want_n, mine,
		      c->w->pod_peers ? ", every other pod" : "");
	c->seen = 0;
	(void)datapath_endpoint_foreach(c->n->a.dp, check_endpoint, c);
	if (c->seen != mine)
		wrong(c, "weft_endpoints has %zu entries, the node %zu pods", c->seen, mine);
	c->seen = 0;
	(void)datapath_node_foreach(c->n->a.dp, check_node_entry, c);
	if (c->seen != json_array_size(c->w->nodes))
		wrong(c, "weft_nodes has %zu entries, the cluster %zu nodes", c->seen,
		      json_array_size(c->w->nodes));
	c->seen = 0;
	(void)datapath_nodeip_foreach(c->n->a.dp, check_node_ip, c);
	if (c->seen != c->w->node_id.n)
		wrong(c, "weft_node_ips has %zu entries, the cluster %zu node IPs", c->seen,
		      c->w->node_id.n);
	check_services(c);
}

int check_fleet(struct fleet *f, struct check_result *res, char *err, size_t len)
{
	struct want w = { 0 };

	memset(res, 0, sizeof(*res));
	if (want_load(f, &w, err, len) < 0) {
		want_free(&w);
		return -1;
	}
	for (unsigned i = f->lo; i < f->hi; i++) {
		struct node_check c = { .w = &w, .n = &f->nodes[i], .my_ip = f->nodes[i].a.node_ip };

		check_node(&c);
		res->nodes_checked++;
		res->entries_checked += c.checked;
		if (c.wrong) {
			if (!res->nodes_wrong)
				snprintf(res->first, sizeof(res->first), "node %s: %s (%zu differences)",
					 f->nodes[i].name, c.first, c.wrong);
			res->nodes_wrong++;
		}
	}
	want_free(&w);
	return 0;
}
