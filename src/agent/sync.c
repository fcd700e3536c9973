/*
 * sync.c — the agent follows the cluster: list+watch of HostSubnets, Pods,
 * NetNamespaces, Services and EndpointSlices from the controller, one thread
 * each, and keeps the node's routes and maps equal to what they say.
 *
 *   HostSubnets -> weft_nodes (subnet -> node IP; our own subnet too, so
 *             the programs know it is local), weft_node_ips (the trusted
 *             overlay) and, for other nodes, a route through the VXLAN
 *             device with the tunnel remote.  A HostSubnet (name, hostIP,
 *             subnet, nodeID: ~290 bytes) is the compact node table the
 *             controller writes in its Node's own transaction
 *             (registration, an InternalIP moved, deletion); the Nodes
 *             (~1.2 KB each with its agent's report annotations) are not
 *             watched, so no agent's report on its Node reaches another
 *   Pods   -> this node's pods (spec.nodeName, as the kubelet asks).
 *             Entries of this node's own pods in weft_ipcache come from
 *             the leases (pod.c) and are never removed by an event
 *   PodPeerSlices (peerslice.c) -> only while a NetworkPolicy names pods
 *             as peers: every other node's pods, compact (name, address,
 *             identity), into the same pod cache and to policy.c; their
 *             entries in weft_ipcache (pod IP -> node IP, VNID: remote.c)
 *   EndpointSlices (service.c) -> weft_ipcache entries of the service
 *             backends on other nodes that no watched pod covers (their
 *             VNID is what lb_admit checks a client against: remote.c,
 *             backend_addrs.h)
 *   NetNamespaces -> the VNID of each namespace; a change re-tags the
 *             namespace's pods in weft_ipcache and weft_endpoints
 *   Services, EndpointSlices -> service.c (weft_services, weft_backends)
 *   Namespaces, NetworkPolicies (and the Pods) -> policy.c, whose thread
 *             (here) writes the policy maps after each change
 *
 * Each thread: list (resourceVersion N) -> apply every item, remove what
 * the list no longer has -> watch from N, applying events as they come ->
 * on any break (controller gone, 410 Expired, heartbeat timeout) list again,
 * with a back-off while the controller is unreachable.  After the
 * HostSubnets, Pods and NetNamespaces lists have been applied once, the
 * config entry is written (version last) and the agent is ready.  The
 * revision each kind has been applied up to goes on the Node (report.c).
 *
 * What the watches tell is kept in a->nodes (nodecache.h) and a->pods
 * (podcache.h, with the NetNamespaces' VNIDs), indexed so that an event
 * costs the same at 150,000 pods as at 100: a pod found by name, the node
 * of a pod IP by subnet, a NetNamespace's pods by namespace, the pods of
 * a new node's subnet by IP.  A list is reconciled in one pass: begin
 * (a new generation), apply the items (each marked with it), listed
 * (sweep what is unmarked, then one pass over each map checking its
 * entries against the indexes).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/tracer.h"
#include "lib/hmap.h"
#include "lib/jview.h"

struct kind_sync {
	struct agent *a;
	const char *path;		/* collection path */
	const char *watch_query;	/* more of the watch's query, or NULL */
	char query[192];		/* "" or "fieldSelector=..." (list and watch carry it) */
	/* for a kind watched only while needed (PodPeerSlices): idle() waits
	 * while it is not (true: it waited, ask again), and stale() says,
	 * while a list or watch runs, that it is not needed any more (the
	 * call ends) */
	bool (*idle)(struct kind_sync *k);
	bool (*stale)(void *k);
	const char *what;		/* in the logs: "hostsubnets", "pods"... */
	struct histogram *timing;	/* its events' programming (metrics.h), or NULL */
	struct httpc **http;
	void (*begin)(struct agent *a);		/* before a list's items (may be NULL) */
	void (*apply)(struct agent *a, struct jval obj);
	void (*remove)(struct agent *a, struct jval obj);
	void (*listed)(struct agent *a);	/* after a full list, under lock */
	/* after a list (listed true) or an event, without the lock: what the
	 * kind tells others (routes pruned, reporter woken, revision applied) */
	void (*caught_up)(struct agent *a, const char *rv, bool listed);
	bool *synced;
	char rv[32];
};

/* what each watching thread follows: one set per agent */
struct sync_kinds {
	struct kind_sync nodes, pods, netns, services, slices, namespaces, netpols, peers, traces;
};

#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 3000

static void sleep_ms(struct agent *a, unsigned ms)
{
	while (ms && !atomic_load(&a->stopping)) {
		unsigned step = ms > 100 ? 100 : ms;

		usleep(step * 1000);
		ms -= step;
	}
}

/* ---- nodes: their HostSubnets ---- */

/* What a HostSubnet says of its node: its name (metadata.name, the
 * Node's), subnet, hostIP and nodeID (0 when it has none).  -EINVAL for
 * one without a valid subnet or IPv4 hostIP: skipped. */
static int parse_hostsubnet(struct jval obj, struct nodecache_in *n)
{
	const char *subnet = jval_str(jval_get(obj, "subnet"));
	const char *ip = jval_str(jval_get(obj, "hostIP"));
	const char *name = obj_view_name(obj);
	struct jval id = jval_get(obj, "nodeID");
	struct in_addr ia;

	memset(n, 0, sizeof(*n));
	n->name = name ? name : "";
	if (!subnet || cidr_parse(subnet, &n->subnet) < 0)
		return -EINVAL;
	if (!ip || inet_pton(AF_INET, ip, &ia) != 1 || !ia.s_addr)
		return -EINVAL;
	n->ip = ia.s_addr;
	if (jval_integer(id) > 0 && jval_integer(id) <= UINT32_MAX)
		n->id = (uint32_t)jval_integer(id);
	return 0;
}

static void node_program(struct agent *a, const struct nodecache_node *n)
{
	struct weft_node_entry e = { .node_ip = n->ip, .node_id = n->id };
	char sub[CIDR_STRLEN];
	int rc;

	cidr_format(&n->subnet, sub);
	rc = datapath_node_put(a->dp, htonl(n->subnet.addr), n->subnet.len, &e);
	if (rc < 0)
		LOG_ERR("node %s: weft_nodes %s: %s", n->name, sub, strerror(-rc));
	rc = datapath_nodeip_put(a->dp, n->ip, n->id);	/* the trusted overlay */
	if (rc < 0)
		LOG_ERR("node %s: weft_node_ips: %s", n->name, strerror(-rc));
	if (n->ip != a->node_ip) {
		rc = node_route_remote(a, n);
		if (rc < 0)
			LOG_ERR("node %s: route to %s: %s", n->name, sub, strerror(-rc));
	}
}

static void node_unprogram(struct agent *a, const struct nodecache_node *n)
{
	(void)datapath_node_del(a->dp, htonl(n->subnet.addr), n->subnet.len);
	(void)datapath_nodeip_del(a->dp, n->ip);
	if (n->ip != a->node_ip)
		(void)node_route_remote_del(a, &n->subnet);
}

/* Apply one HostSubnet (added or modified); caller holds the lock. */
static void node_apply(struct agent *a, struct jval obj)
{
	struct nodecache_in in;
	struct nodecache_node *n;
	bool moved;

	if (parse_hostsubnet(obj, &in) < 0)
		return;		/* no valid subnet or IPv4 hostIP */
	n = nodecache_find(&a->nodes, in.name);
	moved = !n || n->ip != in.ip || n->subnet.addr != in.subnet.addr || n->subnet.len != in.subnet.len;
	if (n && !moved && n->id == in.id) {
		nodecache_mark(&a->nodes, n);
		return;
	}
	if (n && moved)
		node_unprogram(a, n);
	n = nodecache_set(&a->nodes, &in);
	if (!n) {
		LOG_ERR("node %s: %s", in.name, strerror(errno));
		return;
	}
	node_program(a, n);
	/* pods of this node whose event came first (the Pods and HostSubnets
	 * lists are applied apart): remote_pod_program skipped them, their
	 * node unknown */
	if (moved)
		remote_program_in(a, &n->subnet);
}

static void node_remove_obj(struct agent *a, struct jval obj)
{
	const char *name = obj_view_name(obj);
	struct nodecache_node *n = nodecache_find(&a->nodes, name ? name : "");

	if (!n)
		return;
	node_unprogram(a, n);
	nodecache_del(&a->nodes, n);
}

/* weft_nodes entries no node owns */
static int stale_node_entry(in_addr_t subnet, int len, const struct weft_node_entry *e, void *arg)
{
	struct agent *a = arg;
	struct cidr s = { .addr = ntohl(subnet), .len = (uint8_t)len };

	(void)e;
	if (!nodecache_by_subnet(&a->nodes, &s))
		(void)datapath_node_del(a->dp, subnet, len);
	return 0;
}

/* weft_node_ips entries no node has */
static int stale_node_ip(in_addr_t ip, uint32_t id, void *arg)
{
	struct agent *a = arg;

	(void)id;
	if (!nodecache_by_ip(&a->nodes, ip))
		(void)datapath_nodeip_del(a->dp, ip);
	return 0;
}

static void nodes_begin(struct agent *a)
{
	nodecache_begin_list(&a->nodes);
}

static void node_gone(void *arg, const struct nodecache_node *n)
{
	node_unprogram(arg, n);
}

/* After a full list: one pass over the nodes, one over each map. */
static void nodes_listed(struct agent *a)
{
	nodecache_sweep(&a->nodes, node_gone, a);
	(void)datapath_node_foreach(a->dp, stale_node_entry, a);
	(void)datapath_nodeip_foreach(a->dp, stale_node_ip, a);
}

/* obj to one of policy.c's setters, which read jansson trees: a tree made
 * from the view (none when out of memory: the object is not seen). */
static void policy_set(struct policy *p, void (*set)(struct policy *p, const json_t *obj), struct jval obj)
{
	json_t *tree = jval_to_json(obj);

	if (tree)
		set(p, tree);
	json_decref(tree);
}

/* ---- pods ---- */

static void parse_pod(struct jval obj, struct podcache_in *p)
{
	const char *ip = jval_path_str(obj, "status.podIP"), *node = jval_path_str(obj, "spec.nodeName");
	const char *cid = jval_str(jval_get(jval_path(obj, "metadata.annotations"), AGENT_ANN_CONTAINER));
	struct in_addr ia = { 0 };

	p->ns = obj_view_namespace(obj);
	p->name = obj_view_name(obj) ? obj_view_name(obj) : "";
	p->node = node ? node : "";
	p->container_id = cid ? cid : "";
	if (ip && inet_pton(AF_INET, ip, &ia) == 1)
		p->ip = ia.s_addr;
	else
		p->ip = 0;
}

static void pod_apply(struct agent *a, struct jval obj)
{
	struct podcache_in in;
	struct podcache_pod *p;

	parse_pod(obj, &in);
	policy_set(a->policy, policy_pod_set, obj);
	p = podcache_find(&a->pods, in.ns, in.name);
	if (p && p->ip != in.ip)
		remote_release(a, p->ip, p);
	p = podcache_set(&a->pods, &in);
	if (!p) {
		LOG_ERR("pod %s/%s: %s", in.ns, in.name, strerror(errno));
		return;
	}
	remote_pod_program(a, p);
}

static void pod_remove_obj(struct agent *a, struct jval obj)
{
	const char *ns = obj_view_namespace(obj), *name = obj_view_name(obj) ? obj_view_name(obj) : "";
	struct podcache_pod *p = podcache_find(&a->pods, ns, name);

	policy_pod_del(a->policy, ns, name);	/* (unless a peer's now) */
	if (!p || !podcache_is_self(&a->pods, p))
		return;		/* a pod of that name on another node since: a peer */
	remote_release(a, p->ip, p);
	podcache_del(&a->pods, p);
}

/* weft_ipcache entries of other nodes' addresses that no pod of the
 * watches and no service backend has */
static int stale_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	struct agent *a = arg;

	if (e->node_ip != a->node_ip && !remote_keeps(a, ip))
		(void)datapath_ipcache_del(a->dp, ip);
	return 0;
}

/* After a list of Pods or PodPeerSlices: the entries of other nodes'
 * addresses that nothing keeps go, once the node knows every pod its
 * policies need.  Not before: a restarted agent would drop the peers'
 * entries its rules still use until their slices are listed. */
static void ipcache_sweep(struct agent *a)
{
	if (a->pods_synced && a->netpols_synced && policy_pods_known(a->policy))
		(void)datapath_ipcache_foreach(a->dp, stale_ipcache, a);
}

static void pods_begin(struct agent *a)
{
	podcache_begin_list(&a->pods, PODCACHE_SELF);
	policy_begin_list(a->policy, POLICY_PODS);
}

static void pod_gone(void *arg, const struct podcache_pod *p)
{
	remote_release(arg, p->ip, p);
}

/* After a full list (this node's pods): one pass over them, one over
 * weft_ipcache. */
static void pods_listed(struct agent *a)
{
	podcache_sweep(&a->pods, PODCACHE_SELF, pod_gone, a);
	policy_listed(a->policy, POLICY_PODS);
	a->pods_synced = true;
	ipcache_sweep(a);
}

/* ---- PodPeerSlices: other nodes' pods, while a policy names pods as peers ---- */

static void peers_listed(struct agent *a)
{
	peerslice_listed(a);	/* (POLICY_PEERS listed: policy_pods_known) */
	ipcache_sweep(a);
}

static bool peers_wanted(struct agent *a)
{
	return policy_needs_pods(a->policy);
}

static bool peers_stale(void *arg)
{
	struct kind_sync *k = arg;

	return !peers_wanted(k->a);
}

/* Not needed (no policy names pods as peers, or the NetworkPolicies are
 * not listed yet): what the slices brought is forgotten, and the thread
 * waits until they are, woken when a NetworkPolicy list or event is
 * applied (netpols_caught_up: policy_needs_pods changes only there) or
 * stop.  The wait's bound is a safety net, not a poll: a thousand idle
 * agents in one process woke five thousand times a second at 200 ms. */
#define PEERS_IDLE_MAX_MS 5000
static bool peers_idle(struct kind_sync *k)
{
	struct agent *a = k->a;
	struct timespec until;
	bool synced;

	pthread_mutex_lock(&a->lock);
	synced = a->netpols_synced;
	pthread_mutex_unlock(&a->lock);
	if (synced && peers_wanted(a))
		return false;
	pthread_mutex_lock(&a->lock);
	if (synced) {
		bool held = a->peers.pods || a->peers.slices.n;

		if (held)
			peerslice_clear(a);
		policy_peers_forget(a->policy);	/* (idempotent) */
		if (held)
			LOG_INFO("podpeerslices: no policy names pods as peers now; other nodes' pods forgotten");
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PEERS_IDLE_MAX_MS / 1000;
	until.tv_nsec += (PEERS_IDLE_MAX_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (!atomic_load(&a->stopping))
		pthread_cond_timedwait(&a->listed, &a->lock, &until);
	pthread_mutex_unlock(&a->lock);
	return true;
}

/* ---- NetNamespaces: the VNID of every namespace ---- */

struct retag_ctx {
	struct agent *a;
	const char *ns;		/* NULL: every lease */
	unsigned n;
};

/* Give a local pod the VNID its namespace has now (endpoint and ipcache). */
static int retag_lease(const struct ipam_lease *l, void *arg)
{
	struct retag_ctx *c = arg;
	struct agent *a = c->a;
	struct weft_endpoint ep;
	struct weft_ipcache_entry ic = { .node_ip = a->node_ip };
	uint32_t vnid;

	if (c->ns && strcmp(l->owner.pod_namespace, c->ns) != 0)
		return 0;
	vnid = remote_vnid_of(a, l->owner.pod_namespace);
	if (datapath_endpoint_get(a->dp, l->ip, &ep) < 0 || ep.vnid == vnid)
		return 0;
	ep.vnid = vnid;
	ic.vnid = vnid;
	if (policy_endpoint_write(a->policy, l->ip, &ep) == 0 &&
	    policy_ipcache_write(a->policy, l->ip, &ic) == 0)
		c->n++;
	return 0;
}

/* Caller holds the lock.  The node's leases, and the cluster's pods of
 * namespace ns (all, when ns is NULL: once per list): by the namespace
 * index, not a walk of every pod. */
static void retag(struct agent *a, const char *ns)
{
	struct retag_ctx c = { .a = a, .ns = ns };
	const struct podcache_group *g = ns ? podcache_ns_find(&a->pods, ns) : NULL;
	const struct podcache_pod *p;

	(void)ipam_foreach(a->ipam, retag_lease, &c);
	if (ns)
		for (p = podcache_group_first(g); p; p = podcache_group_next(g, p))
			remote_pod_program(a, p);
	else
		for (p = podcache_first(&a->pods); p; p = podcache_next(&a->pods, p))
			remote_pod_program(a, p);
	remote_backends_program(a, ns);
	if (c.n)
		LOG_INFO("%u local pod(s)%s%s re-tagged with their namespace's VNID", c.n,
			 ns ? " of " : "", ns ? ns : "");
}

static void netns_apply(struct agent *a, struct jval obj)
{
	const char *name = obj_view_name(obj);
	struct jval netid = jval_get(obj, "netid");
	int64_t id = jval_is_integer(netid) ? jval_integer(netid) : -1;
	bool changed = false;

	if (!name || id < 0 || id > 0xffffff)
		return;
	if (podcache_netns_set(&a->pods, name, (uint32_t)id, &changed) < 0) {
		LOG_ERR("netnamespace %s: %s", name, strerror(ENOMEM));
		return;
	}
	if (changed && a->netns_synced)
		retag(a, name);
}

static void netns_remove_obj(struct agent *a, struct jval obj)
{
	if (obj_view_name(obj))
		podcache_netns_del(&a->pods, obj_view_name(obj));
}

static void netns_begin(struct agent *a)
{
	podcache_begin_netns_list(&a->pods);
}

static void netns_listed(struct agent *a)
{
	(void)podcache_netns_sweep(&a->pods);
	retag(a, NULL);		/* the whole node, once per list */
}

/* ---- the watch loop, shared by every kind ---- */

static void nodes_caught_up(struct agent *a, const char *rv, bool listed)
{
	if (listed)
		(void)node_routes_prune(a);
}

/* The Pods question: this node's pods (spec.nodeName, as the kubelet
 * asks).  A remote pod is not needed: forwarding goes by node subnet, the
 * tenant check is the receiver's (the VNID travels in the VXLAN header),
 * a service backend's VNID comes from its EndpointSlice
 * (backend_addrs.h), and a policy peer's identity from its PodPeerSlice. */
static void pods_question(struct kind_sync *k)
{
	snprintf(k->query, sizeof(k->query), "fieldSelector=spec.nodeName%%3D%s", k->a->o.node);
}

/* ---- TraceRequests: this node's, to its tracer (tracer.h) ---- */

static void trace_apply(struct agent *a, struct jval obj)
{
	tracer_offer(a->tracer, obj);
}

static void trace_nothing(struct agent *a, struct jval obj)
{
	(void)a;
	(void)obj;
}

static void traces_listed(struct agent *a)
{
	(void)a;
}

static void traces_caught_up(struct agent *a, const char *rv, bool listed)
{
	(void)a;
	(void)rv;
	(void)listed;
}

static void pods_caught_up(struct agent *a, const char *rv, bool listed)
{
	(void)rv;
	(void)listed;
	sync_policy_kick(a);	/* a pod's labels, or a new identity */
	report_kick(a);		/* the Pod records may differ from the leases */
}

/* The NetNamespaces are applied up to rv: the reporter tells the controller. */
static void netns_caught_up(struct agent *a, const char *rv, bool listed)
{
	int64_t r = strtoll(rv, NULL, 10);

	pthread_mutex_lock(&a->lock);
	if (listed || r > a->applied_rev)
		a->applied_rev = r;
	pthread_mutex_unlock(&a->lock);
	report_kick(a);
}

static void set_controller_up(struct agent *a, bool up)
{
	pthread_mutex_lock(&a->lock);
	if (a->controller_up != up)
		LOG_INFO("controller %s %s", a->o.controller, up ? "reachable" : "unreachable");
	a->controller_up = up;
	pthread_mutex_unlock(&a->lock);
}

/* ---- namespaces and network policies: policy.c's alone ---- */

static void namespaces_begin(struct agent *a)
{
	policy_begin_list(a->policy, POLICY_NAMESPACES);
}

static void namespace_apply(struct agent *a, struct jval obj)
{
	policy_set(a->policy, policy_namespace_set, obj);
}

static void namespace_remove(struct agent *a, struct jval obj)
{
	policy_namespace_del(a->policy, obj_view_name(obj) ? obj_view_name(obj) : "");
}

static void namespaces_listed(struct agent *a)
{
	policy_listed(a->policy, POLICY_NAMESPACES);
}

static void netpols_begin(struct agent *a)
{
	policy_begin_list(a->policy, POLICY_NETPOLS);
}

static void netpol_apply(struct agent *a, struct jval obj)
{
	policy_set(a->policy, policy_netpol_set, obj);
}

static void netpol_remove(struct agent *a, struct jval obj)
{
	policy_netpol_del(a->policy, obj_view_namespace(obj), obj_view_name(obj) ? obj_view_name(obj) : "");
}

static void netpols_listed(struct agent *a)
{
	policy_listed(a->policy, POLICY_NETPOLS);
	a->netpols_synced = true;	/* (list_once says so too, after this) */
	ipcache_sweep(a);
}

static void policy_caught_up(struct agent *a, const char *rv, bool listed)
{
	(void)rv;
	(void)listed;
	sync_policy_kick(a);
}

/* The NetworkPolicies received up to rv: in the maps once the policy
 * thread's next apply succeeds (reported as "networkpolicies" in
 * AGENT_ANN_APPLIED_KINDS). */
static void netpols_caught_up(struct agent *a, const char *rv, bool listed)
{
	int64_t r = strtoll(rv, NULL, 10);

	pthread_mutex_lock(&a->policy_lock);
	if (listed || r > a->np_caught_rev)
		a->np_caught_rev = r;
	pthread_mutex_unlock(&a->policy_lock);
	sync_policy_kick(a);
	/* whether policies name pods as peers may have changed: the
	 * PodPeerSlices' thread looks again (peers_idle) */
	pthread_mutex_lock(&a->lock);
	pthread_cond_broadcast(&a->listed);
	pthread_mutex_unlock(&a->lock);
}

void sync_policy_kick(struct agent *a)
{
	pthread_mutex_lock(&a->policy_lock);
	a->policy_dirty = true;
	pthread_cond_signal(&a->policy_cond);
	pthread_mutex_unlock(&a->policy_lock);
}

/* Applies the policy inputs after each change, batching what comes while
 * it works; a failed apply (a map write: full, usually) is tried again
 * after 1 s, then 2, 4 ... up to 30 s while it keeps failing, sooner when
 * an input changes. */
static void *policy_thread(void *arg)
{
	struct agent *a = arg;
	int retry_s = 0;	/* 0: the last apply succeeded */

	for (;;) {
		int64_t caught;
		uint64_t t0;
		int rc;

		pthread_mutex_lock(&a->policy_lock);
		if (retry_s && !a->policy_dirty && !atomic_load(&a->stopping)) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += retry_s;
			pthread_cond_timedwait(&a->policy_cond, &a->policy_lock, &until);
		}
		while (!retry_s && !a->policy_dirty && !atomic_load(&a->stopping))
			pthread_cond_wait(&a->policy_cond, &a->policy_lock);
		a->policy_dirty = false;
		caught = a->np_caught_rev;
		pthread_mutex_unlock(&a->policy_lock);
		if (atomic_load(&a->stopping))
			break;
		/* a policy naming pods as peers is applied once every pod is
		 * known: before, policy_apply writes nothing and says 1 (the
		 * PodPeerSlices list kicks this thread again).  It decides
		 * under its own lock, with the inputs it applies: a check
		 * here could see the NetworkPolicies before their list and
		 * the apply after it. */
		t0 = histogram_now();
		rc = policy_apply(a->policy);
		if (rc == 1) {
			retry_s = 0;
			continue;
		}
		if (rc == 0)
			metrics_policy_applied(a, histogram_now() - t0);
		if (rc < 0 && !retry_s)
			LOG_WARN("network policy: writing the policy maps: %s; trying again",
				 strerror(-rc));
		if (rc == 0 && caught) {
			bool moved;

			pthread_mutex_lock(&a->lock);
			moved = a->np_applied_rev != caught;
			a->np_applied_rev = caught;
			pthread_mutex_unlock(&a->lock);
			if (moved)
				report_kick(a);
		}
		retry_s = rc == 0 ? 0 : retry_s ? (retry_s * 2 > 30 ? 30 : retry_s * 2) : 1;
	}
	return NULL;
}

static void maybe_ready(struct agent *a)
{
	bool all;

	pthread_mutex_lock(&a->lock);
	all = a->nodes_synced && a->pods_synced && a->netns_synced && a->namespaces_synced &&
	      a->netpols_synced;
	pthread_mutex_unlock(&a->lock);
	if (!all)
		return;
	/* the policy maps before the config: no pod is opened by a
	 * half-applied view of the policies.  Once ready, the policy thread
	 * applies what a later list brought (each list kicks it).  While a
	 * policy names pods as peers, every pod must be known first
	 * (policy_apply says 1 until the PodPeerSlices list is in; that list
	 * ends with this again) */
	if (!atomic_load(&a->ready)) {
		int rc = policy_apply(a->policy);

		if (rc == 1)
			return;	/* the peers are needed, their list not in yet */
		if (rc < 0)
			LOG_WARN("network policy: the first apply did not write everything; retrying");
	}
	(void)sync_mark_ready(a);
}

/* A list is read in pages of --list-page-size items (AGENT_LIST_PAGE,
 * 500, unless set; limit and continue, as
 * client-go's reflectors ask), so an agent's memory for a list is a
 * page's, whatever the cluster's size: a page's answer is parsed whole
 * into a view (lib/jview.h: two allocations, however many items) before
 * the lock is taken, then applied under it.  Every page is read at the
 * first page's revision (the controller's continue token carries it), so
 * the pages together are one snapshot: begin before the first page's
 * items, listed after the last page's.  Between pages the lock is free;
 * what is not yet listed again keeps its entries until listed sweeps.
 * Nothing is applied from an answer that does not parse, or is not a
 * list: its objects would look deleted.  A token expired between pages
 * (410) starts the list again from its first page, LIST_RESTARTS times at
 * most (then the list fails, and is tried again after the back-off).  A
 * controller without paging answers everything on the first page, with
 * no token. */
#define LIST_RESTARTS 5
struct list_page {
	struct httpc_response r;
	struct jview v;
	struct jval items;
	const char *rv;		/* the snapshot's revision, in v */
	const char *cont;	/* the next page's token, in v, or NULL */
};

static void list_page_free(struct list_page *pg)
{
	jview_free(&pg->v);
	httpc_response_free(&pg->r);
	*pg = (struct list_page){ 0 };
}

/* A continue token goes back in the next request's query as it came:
 * base64url, bounded. */
static bool token_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 4096)
		return false;
	return strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* One page, from cont (NULL: the first): 0, -EAGAIN when the token
 * expired (410: list again from the start), or < 0 (said in the log). */
static int list_page_get(struct kind_sync *k, const char *cont, struct list_page *pg)
{
	struct jview_error jerr;
	struct jval root;
	char err[256], *path = NULL;
	int rc;

	if (asprintf(&path, "%s?limit=%u%s%s%s%s", k->path,
		     k->a->o.list_page ? k->a->o.list_page : AGENT_LIST_PAGE, cont ? "&continue=" : "",
		     cont ? cont : "", k->query[0] ? "&" : "", k->query) < 0)
		return -ENOMEM;
	rc = httpc_request(*k->http, "GET", path, NULL, 0, &pg->r, err, sizeof(err));
	if (rc < 0)
		goto out;	/* unreachable (set_controller_up says so once), or asked again */
	if (pg->r.status == 410 && cont) {
		LOG_INFO("list %s: the list's revision was compacted between pages; listing again",
			 k->what);
		rc = -EAGAIN;
		goto out;
	}
	if (pg->r.status != 200) {
		LOG_WARN("list %s: GET %s: HTTP %ld: %.200s; retrying", k->what, path, pg->r.status,
			 pg->r.body);
		rc = -EPROTO;
		goto out;
	}
	rc = jview_parse(&pg->v, pg->r.body, pg->r.len, &jerr);
	if (rc < 0) {
		if (rc == -EINVAL)
			LOG_ERR("list %s: GET %s: the controller's answer (HTTP 200, %zu bytes) is not valid "
				"JSON: line %d, column %d: %s; nothing applied, retrying", k->what, path,
				pg->r.len, jerr.line, jerr.column, jerr.text);
		else
			LOG_ERR("list %s: GET %s: reading the answer (%zu bytes): %s; retrying", k->what, path,
				pg->r.len, strerror(-rc));
		rc = -EPROTO;
		goto out;
	}
	/* the text is in the view now */
	httpc_response_free(&pg->r);
	root = jview_root(&pg->v);
	pg->items = jval_get(root, "items");
	pg->rv = jval_path_str(root, "metadata.resourceVersion");
	pg->cont = jval_path_str(root, "metadata.continue");
	if (pg->cont && !pg->cont[0])
		pg->cont = NULL;
	if (!jval_is_object(root) || (jval_ok(pg->items) && !jval_is_array(pg->items)) ||
	    (pg->cont && !token_ok(pg->cont))) {
		LOG_ERR("list %s: GET %s: the controller's answer is not a list%s; nothing applied, retrying",
			k->what, path, pg->cont ? " (or its continue token is malformed)" : "");
		rc = -EPROTO;
	}
out:
	free(path);
	return rc;
}

static int list_once(struct kind_sync *k)
{
	struct agent *a = k->a;
	struct list_page pg = { 0 };
	char *cont = NULL;
	size_t n = 0, pages = 0;
	int rc, restarts = 0;

	for (;;) {
		rc = list_page_get(k, cont, &pg);
		if (rc == -EAGAIN && ++restarts > LIST_RESTARTS) {
			LOG_WARN("list %s: its revision was compacted between pages %d times; trying again later",
				 k->what, LIST_RESTARTS);
			rc = -EPROTO;
		}
		if (rc == -EAGAIN) {	/* the snapshot expired: from the start */
			free(cont);
			cont = NULL;
			n = pages = 0;
			list_page_free(&pg);
			continue;
		}
		if (rc < 0)
			goto out;
		if (!cont)	/* the first page's revision is every page's */
			snprintf(k->rv, sizeof(k->rv), "%s", pg.rv ? pg.rv : "0");
		free(cont);
		cont = NULL;
		if (pg.cont && !(cont = strdup(pg.cont))) {
			rc = -ENOMEM;
			goto out;
		}
		pthread_mutex_lock(&a->lock);
		if (!pages && k->begin)
			k->begin(a);
		for (struct jval it = jval_first(pg.items); jval_ok(it); it = jval_next(it))
			k->apply(a, it);
		if (!cont) {
			k->listed(a);
			*k->synced = true;
			pthread_cond_broadcast(&a->listed);	/* peers_idle waits for the NetworkPolicies list */
		}
		pthread_mutex_unlock(&a->lock);
		n += jval_size(pg.items);
		pages++;
		list_page_free(&pg);
		if (!cont)
			break;
		if (atomic_load(&a->stopping)) {
			rc = -ECANCELED;
			goto out;
		}
	}
	LOG_INFO("list %s%s%s: %zu at revision %s (%zu page%s)", k->what, k->query[0] ? " " : "", k->query,
		 n, k->rv, pages, pages == 1 ? "" : "s");
	k->caught_up(a, k->rv, true);
	rc = 0;
out:
	free(cont);
	list_page_free(&pg);
	return rc;
}

static int on_event(const char *line, size_t len, void *arg)
{
	struct kind_sync *k = arg;
	struct agent *a = k->a;
	struct jview v;
	struct jview_error jerr;
	struct jval ev, obj;
	const char *type, *rv;
	int rc = jview_parse(&v, line, len, &jerr);

	if (rc < 0) {
		if (rc == -EINVAL)
			LOG_ERR("watch %s: an event (%zu bytes) is not valid JSON: line %d, column %d: %s; "
				"listing again", k->what, len, jerr.line, jerr.column, jerr.text);
		else
			LOG_ERR("watch %s: reading an event (%zu bytes): %s; listing again", k->what, len,
				strerror(-rc));
		return -EPROTO;
	}
	ev = jview_root(&v);
	type = jval_str(jval_get(ev, "type"));
	obj = jval_get(ev, "object");
	if (type && strcmp(type, "ERROR") == 0) {
		/* a Status in the stream (an expired revision, usually): what
		 * came since is lost to this watch */
		const char *msg = jval_str(jval_get(obj, "message"));

		LOG_INFO("watch %s: the controller ended the stream: %.200s; listing again", k->what,
			 msg ? msg : "(no message)");
		jview_free(&v);
		return -EPROTO;
	}
	if (type && jval_is_object(obj)) {
		uint64_t t0 = histogram_now();

		pthread_mutex_lock(&a->lock);
		if (strcmp(type, "DELETED") == 0)
			k->remove(a, obj);
		else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
			k->apply(a, obj);
		pthread_mutex_unlock(&a->lock);
		if (k->timing)
			histogram_observe(k->timing, histogram_now() - t0);
		rv = jval_path_str(obj, "metadata.resourceVersion");
		if (rv)
			snprintf(k->rv, sizeof(k->rv), "%s", rv);
		k->caught_up(a, k->rv, false);
	}
	jview_free(&v);
	return atomic_load(&a->stopping) ? 1 : 0;
}

/* Some controller of the list answers /healthz now; say (log) why not. */
static bool controller_answers(struct httpc *h, bool say)
{
	struct httpc_response r = { 0 };
	char err[256];
	int rc = httpc_request(h, "GET", "/healthz", NULL, 0, &r, err, sizeof(err));
	bool up = rc == 0 && r.status == 200;

	if (!up && say)
		LOG_INFO("controller %s: /healthz: %s", httpc_server(h), rc < 0 ? err : "not 200");
	httpc_response_free(&r);
	return up;
}

/* The length of one watch request: --watch-timeout W, stretched by a
 * random part to [W, 2W), as client-go's reflectors do: agents started
 * together (a cluster's cold start, a restart of every node) would
 * otherwise renew every watch at the same moment every W seconds, each
 * with a TLS handshake, and a controller with thousands of them misses
 * its handshakes' deadlines. */
static unsigned watch_seconds(const struct agent *a, unsigned *seed)
{
	unsigned w = a->o.watch_timeout ? a->o.watch_timeout : 300;

	return w + (unsigned)rand_r(seed) % w;
}

static void *sync_thread(void *arg)
{
	struct kind_sync *k = arg;
	struct agent *a = k->a;
	/* this watch's own sequence: the node's name and the kind */
	unsigned seed = (unsigned)(hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, a->o.node), k->what) ^
				   (uint64_t)time(NULL));
	unsigned backoff = BACKOFF_MIN_MS;
	char path[512], err[256];

	k->timing = metrics_program_timing(a, k->what);	/* once: events pay no lookup */
	if (k->stale)	/* its question can change: a running call ends then */
		httpc_set_interrupt(*k->http, k->stale, k);

	while (!atomic_load(&a->stopping)) {
		struct httpc_response r = { 0 };
		int rc;

		if (k->idle && k->idle(k))
			continue;	/* not needed now */
		rc = list_once(k);

		if (rc == -EINTR)
			continue;	/* the question changed while listing */
		if (rc < 0) {
			set_controller_up(a, false);
			sleep_ms(a, backoff);
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			continue;
		}
		set_controller_up(a, true);
		backoff = BACKOFF_MIN_MS;
		maybe_ready(a);
		/* A watch that ends cleanly (its timeout, or the controller
		 * closing a stream that fell behind) goes on from the last
		 * revision applied, as a reflector does: the controller sends
		 * what came since from its history.  So does a broken one (the
		 * controller died or restarted): the next request goes to
		 * whichever of the controller's replicas answers (httpc), from
		 * the same revision, at once and then with back-off; and so
		 * does a 503 (a controller that is stopping says so).  Only a
		 * compacted revision (410) or another status lists again. */
		unsigned resume = 0;

		for (;;) {
			char from[sizeof(k->rv)];
			struct timespec t0, t1;

			snprintf(from, sizeof(from), "%s", k->rv);
			snprintf(path, sizeof(path), "%s?watch=1&resourceVersion=%s&timeoutSeconds=%u%s%s%s%s",
				 k->path, k->rv, watch_seconds(a, &seed),
				 k->watch_query ? "&" : "", k->watch_query ? k->watch_query : "",
				 k->query[0] ? "&" : "", k->query);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			rc = httpc_stream(*k->http, path, on_event, k, &r, err, sizeof(err));
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (rc == -EINTR) {
				LOG_INFO("watch %s: the question changed; listing again", k->what);
				httpc_response_free(&r);
				break;
			}
			/* broken, unreachable, or a controller that is stopping (503) */
			if (((rc < 0 && rc != -ECANCELED) || (rc == 0 && r.status == 503)) &&
			    !atomic_load(&a->stopping)) {
				if (strcmp(from, k->rv) || t1.tv_sec - t0.tv_sec >= 2)
					resume = 0;	/* it had been streaming: a new break */
				LOG_WARN("watch %s: %s; resuming from revision %s", k->what,
					 rc < 0 ? err : "HTTP 503 (the controller is stopping)", k->rv);
				httpc_response_free(&r);
				set_controller_up(a, false);
				/* a stream says nothing until an event, so whether a
				 * controller answers is asked first (the reporter
				 * waits for it): at once, then with back-off */
				while (!atomic_load(&a->stopping)) {
					if (resume)
						sleep_ms(a, resume);
					resume = resume ? (resume * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : resume * 2)
							: BACKOFF_MIN_MS;
					if (controller_answers(*k->http, resume <= BACKOFF_MIN_MS)) {
						set_controller_up(a, true);
						break;
					}
				}
				continue;
			}
			if (r.status == 410)
				LOG_INFO("watch %s: revision %s compacted; listing again", k->what, k->rv);
			else if (rc == 0 && r.status != 200)
				LOG_WARN("watch %s: HTTP %ld: %.200s; listing again", k->what, r.status,
					 r.body ? r.body : "");
			if (rc != 0 || r.status != 200 || atomic_load(&a->stopping)) {
				httpc_response_free(&r);
				break;
			}
			httpc_response_free(&r);
			if (resume) {
				set_controller_up(a, true);
				resume = 0;
			}
			/* a stream that ended at once with nothing in it: not
			 * again at once */
			if (strcmp(from, k->rv) == 0 && t1.tv_sec - t0.tv_sec < 1)
				sleep_ms(a, BACKOFF_MIN_MS);
		}
	}
	return NULL;
}

/* services and their slices: the sweep of a restart's leftovers waits
 * for the first list of both */
static void services_listed(struct agent *a)
{
	service_listed(a);
	if (a->slices_synced)
		service_sweep(a);
}

static void slices_listed(struct agent *a)
{
	endpointslice_listed(a);
	if (a->services_synced)
		service_sweep(a);
}

static void caught_up_kind(struct agent *a, int64_t *applied, const char *rv, bool listed)
{
	int64_t r = strtoll(rv, NULL, 10);

	pthread_mutex_lock(&a->lock);
	if (listed || r > *applied)
		*applied = r;
	pthread_mutex_unlock(&a->lock);
	report_kick(a);
}

static void services_caught_up(struct agent *a, const char *rv, bool listed)
{
	caught_up_kind(a, &a->svc_applied_rev, rv, listed);
}

static void slices_caught_up(struct agent *a, const char *rv, bool listed)
{
	caught_up_kind(a, &a->slices_applied_rev, rv, listed);
}



int sync_start(struct agent *a)
{
	struct sync_kinds *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return -ENOMEM;
	a->kinds = k;
	pthread_mutex_lock(&a->lock);
	podcache_init(&a->pods, a->o.node);	/* its own pods keep their container IDs */
	pthread_mutex_unlock(&a->lock);

	a->http_nodes = agent_http(a);
	a->http_pods = agent_http(a);
	a->http_netns = agent_http(a);
	if (!a->http_nodes || !a->http_pods || !a->http_netns)
		return -EINVAL;
	/* The node table from the HostSubnets: they change only with a
	 * node's registration, IP move or deletion (or an annotation a user
	 * writes), so every update is asked for.  Pods: a pod's conditions
	 * change nothing here, and would reach every node watching it: not
	 * sent */
	k->nodes = (struct kind_sync){ .a = a, .path = "/apis/network.openshift.io/v1/hostsubnets",
				       .what = "hostsubnets", .http = &a->http_nodes,
				       .begin = nodes_begin, .apply = node_apply,
				       .remove = node_remove_obj, .listed = nodes_listed,
				       .caught_up = nodes_caught_up, .synced = &a->nodes_synced };
	k->pods = (struct kind_sync){ .a = a, .path = "/api/v1/pods", .what = "pods",
				      .watch_query = "changes=network",
				      .http = &a->http_pods, .begin = pods_begin, .apply = pod_apply,
				      .remove = pod_remove_obj, .listed = pods_listed,
				      .caught_up = pods_caught_up, .synced = &a->pods_synced };
	pods_question(&k->pods);
	k->netns = (struct kind_sync){ .a = a,
				       .path = "/apis/network.openshift.io/v1/netnamespaces",
				       .what = "netnamespaces", .http = &a->http_netns,
				       .begin = netns_begin, .apply = netns_apply, .remove = netns_remove_obj,
				       .listed = netns_listed, .caught_up = netns_caught_up,
				       .synced = &a->netns_synced };
	a->http_services = agent_http(a);
	a->http_slices = agent_http(a);
	if (!a->http_services || !a->http_slices)
		return -EINVAL;
	k->services = (struct kind_sync){ .a = a, .path = "/api/v1/services", .what = "services",
					  .http = &a->http_services, .apply = service_apply,
					  .remove = service_remove, .listed = services_listed,
					  .caught_up = services_caught_up,
					  .synced = &a->services_synced };
	k->slices = (struct kind_sync){ .a = a, .path = "/apis/discovery.k8s.io/v1/endpointslices",
					.what = "endpointslices", .http = &a->http_slices,
					.apply = endpointslice_apply, .remove = endpointslice_remove,
					.listed = slices_listed, .caught_up = slices_caught_up,
					.synced = &a->slices_synced };
	a->http_namespaces = agent_http(a);
	a->http_netpols = agent_http(a);
	if (!a->http_namespaces || !a->http_netpols)
		return -EINVAL;
	k->namespaces = (struct kind_sync){ .a = a, .path = "/api/v1/namespaces", .what = "namespaces",
					    .http = &a->http_namespaces, .begin = namespaces_begin,
					    .apply = namespace_apply, .remove = namespace_remove,
					    .listed = namespaces_listed, .caught_up = policy_caught_up,
					    .synced = &a->namespaces_synced };
	k->netpols = (struct kind_sync){ .a = a,
					 .path = "/apis/networking.k8s.io/v1/networkpolicies",
					 .what = "networkpolicies", .http = &a->http_netpols,
					 .begin = netpols_begin, .apply = netpol_apply,
					 .remove = netpol_remove, .listed = netpols_listed,
					 .caught_up = netpols_caught_up, .synced = &a->netpols_synced };
	/* other nodes' pods as policy peers, only while a policy needs them */
	a->http_peers = agent_http(a);
	if (!a->http_peers)
		return -EINVAL;
	k->peers = (struct kind_sync){ .a = a, .path = PODPEERSLICE_PATH, .what = "podpeerslices",
				       .idle = peers_idle, .stale = peers_stale, .http = &a->http_peers,
				       .begin = peerslice_begin, .apply = peerslice_apply,
				       .remove = peerslice_remove, .listed = peers_listed,
				       .caught_up = policy_caught_up, .synced = &a->peers_synced };
	rc = pthread_create(&a->t_policy, NULL, policy_thread, a);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_namespaces, NULL, sync_thread, &k->namespaces);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_netpols, NULL, sync_thread, &k->netpols);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_services, NULL, sync_thread, &k->services);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_slices, NULL, sync_thread, &k->slices);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_netns, NULL, sync_thread, &k->netns);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_nodes, NULL, sync_thread, &k->nodes);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_pods, NULL, sync_thread, &k->pods);
	if (rc)
		return -rc;
	rc = pthread_create(&a->t_peers, NULL, sync_thread, &k->peers);
	if (rc)
		return -rc;
	if (a->tracer) {	/* this node's TraceRequests (not on hollow nodes) */
		if (!(a->http_traces = agent_http(a)))
			return -EINVAL;
		k->traces = (struct kind_sync){ .a = a, .path = TRACEREQUEST_PATH, .what = "tracerequests",
						.http = &a->http_traces, .apply = trace_apply,
						.remove = trace_nothing, .listed = traces_listed,
						.caught_up = traces_caught_up, .synced = &a->traces_synced };
		pods_question(&k->traces);	/* spec.nodeName: this node's */
		rc = pthread_create(&a->t_traces, NULL, sync_thread, &k->traces);
		if (rc)
			return -rc;
	}
	return 0;
}

void sync_stop(struct agent *a)
{
	if (a->http_nodes)
		httpc_cancel(a->http_nodes);
	if (a->http_pods)
		httpc_cancel(a->http_pods);
	if (a->http_netns)
		httpc_cancel(a->http_netns);
	if (a->http_services)
		httpc_cancel(a->http_services);
	if (a->http_slices)
		httpc_cancel(a->http_slices);
	if (a->http_namespaces)
		httpc_cancel(a->http_namespaces);
	if (a->http_netpols)
		httpc_cancel(a->http_netpols);
	if (a->http_peers)
		httpc_cancel(a->http_peers);
	if (a->http_traces)
		httpc_cancel(a->http_traces);
	if (a->t_traces)
		pthread_join(a->t_traces, NULL);
	httpc_destroy(a->http_traces);
	a->http_traces = NULL;
	if (a->t_namespaces)
		pthread_join(a->t_namespaces, NULL);
	if (a->t_netpols)
		pthread_join(a->t_netpols, NULL);
	httpc_destroy(a->http_namespaces);
	httpc_destroy(a->http_netpols);
	a->http_namespaces = a->http_netpols = NULL;
	if (a->t_policy) {
		sync_policy_kick(a);	/* stopping is set: it ends */
		pthread_join(a->t_policy, NULL);
	}
	if (a->t_services)
		pthread_join(a->t_services, NULL);
	if (a->t_slices)
		pthread_join(a->t_slices, NULL);
	httpc_destroy(a->http_services);
	httpc_destroy(a->http_slices);
	a->http_services = a->http_slices = NULL;
	if (a->t_netns)
		pthread_join(a->t_netns, NULL);
	if (a->t_nodes)
		pthread_join(a->t_nodes, NULL);
	if (a->t_pods)
		pthread_join(a->t_pods, NULL);
	if (a->t_peers)
		pthread_join(a->t_peers, NULL);
	httpc_destroy(a->http_peers);
	a->http_peers = NULL;
	httpc_destroy(a->http_nodes);
	httpc_destroy(a->http_pods);
	httpc_destroy(a->http_netns);
	a->http_nodes = a->http_pods = a->http_netns = NULL;
	free(a->kinds);
	a->kinds = NULL;
	pthread_mutex_lock(&a->lock);
	peerslice_free(&a->peers);
	podcache_free(&a->pods);
	nodecache_free(&a->nodes);
	backend_addrs_free(&a->backends);
	pthread_mutex_unlock(&a->lock);
}

int sync_mark_ready(struct agent *a)
{
	struct weft_config c = { 0 };
	int rc;

	(void)datapath_config_get(a->dp, &c);
	c.node_ip = a->node_ip;
	c.gateway_ip = a->gateway;
	c.subnet = htonl(a->subnet.addr);
	c.subnet_mask = htonl(cidr_mask(a->subnet.len));
	if (a->cc.nnetworks) {
		c.cluster_net = htonl(a->cc.networks[0].cidr.addr);
		c.cluster_mask = htonl(cidr_mask(a->cc.networks[0].cidr.len));
	}
	c.vxlan_ifindex = (uint32_t)a->vxlan_ifindex;
	c.underlay_ifindex = (uint32_t)a->underlay_ifindex;
	c.tunnel_ttl = 64;
	c.vxlan_port = a->cc.vxlan_port;
	c.netns_cookie = a->netns_cookie;
	c.generation++;
	c.ready = 1;
	c.version = WEFT_CONFIG_VERSION;	/* the one write makes it complete */
	rc = datapath_config_set(a->dp, &c);
	if (rc < 0) {
		LOG_ERR("writing the data-plane config: %s", strerror(-rc));
		return rc;
	}
	if (!atomic_exchange(&a->ready, true))
		LOG_INFO("data plane synced: ready");
	return 0;
}
