/*
 * pod.c — what CNI ADD, DEL, CHECK, GC and STATUS do to the node.
 *
 * ADD, in order; a failure undoes every step before it (pod_undo):
 *   1. lease an IP (ipam: persisted before we go on)
 *   2. veth pair: host end weft<hash of container ID and ifname>, pod end
 *      CNI_IFNAME created directly inside the pod's namespace, pod MTU
 *   3. pod side: MAC 0a:58:<IP> (derived, so a restart can rebuild the
 *      endpoint without storing it), up, IP/32, a link route to the
 *      gateway, default route via it, static neighbour gateway -> host MAC
 *   4. host side: up, route IP/32 dev host-end src gateway, static
 *      neighbour IP -> pod MAC (the node reaches its pods by kernel routes)
 *   5. tc program on the host end; endpoint and ipcache map entries
 *   6. kick the reporter (the Pod record goes to the controller, now or
 *      when it is back)
 * DEL is idempotent and best effort: it removes whatever of the above is
 * left and frees the lease, whatever else is missing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/netlink.h"

/* weft's own CNI error codes (docs/cni.md) */
#define ERR_EXHAUSTED	CNI_ERR_EXHAUSTED
#define ERR_IFACE	CNI_ERR_IF_EXISTS
#define ERR_NETNS	CNI_ERR_NETNS
#define ERR_DATAPATH	CNI_ERR_MAP_FULL
#define ERR_CHECK	CNI_ERR_CHECK

#define seterr cni_err_set

void pod_host_ifname(const char *container_id, const char *ifname, char out[16])
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a 64 */
	const char *p;

	for (p = container_id; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h = (h ^ '/') * 0x100000001b3ull;
	for (p = ifname; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	snprintf(out, 16, AGENT_VETH_PREFIX "%011llx", (unsigned long long)(h & 0xfffffffffffull));
}

void pod_mac_from_ip(in_addr_t ip, uint8_t mac[6])
{
	mac[0] = 0x0a;
	mac[1] = 0x58;
	memcpy(mac + 2, &ip, 4);
}

/* The VNID of namespace ns: from the cache, else asked of the controller
 * (a pod may start before its NetNamespace's watch event arrives), else
 * AGENT_VNID_UNKNOWN until the watch re-tags it. */
static uint32_t pod_vnid(struct agent *a, const char *ns)
{
	struct httpc_response r = { 0 };
	char path[512], err[256];
	struct httpc *h;
	json_t *j;
	uint32_t vnid;

	pthread_mutex_lock(&a->lock);
	vnid = remote_vnid_of(a, ns ? ns : "");
	pthread_mutex_unlock(&a->lock);
	if (vnid != AGENT_VNID_UNKNOWN || !ns || !*ns)
		return vnid;
	h = agent_http(a);
	if (!h)
		return vnid;
	snprintf(path, sizeof(path), "/apis/network.openshift.io/v1/netnamespaces/%s", ns);
	if (httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err)) == 0 && r.status == 200 &&
	    (j = json_loads(r.body, 0, NULL))) {
		json_int_t id = obj_int(j, "netid", -1);

		if (id >= 0 && id <= 0xffffff)
			vnid = (uint32_t)id;
		json_decref(j);
	}
	httpc_response_free(&r);
	httpc_destroy(h);
	return vnid;
}

/* Make sure policy.c knows Pod ns/name (its labels and named ports): the
 * CNI ADD may come before the watch brings the Pod.  Asked of the
 * controller when not known: 0 when known, or when the controller
 * answered (a Pod it does not have has no labels: no selector picks it);
 * a negative errno when it could not answer. */
static int pod_policy_learn(struct agent *a, const char *ns, const char *name)
{
	struct httpc_response r = { 0 };
	char path[600], err[256];
	struct httpc *h;
	json_t *j;
	int rc;

	if (!ns || !*ns || !name || !*name || policy_pod_known(a->policy, ns, name))
		return 0;
	h = agent_http(a);
	if (!h)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
	rc = httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err));
	if (rc == 0 && r.status == 200 && (j = json_loadb(r.body, r.len, 0, NULL))) {
		policy_pod_set(a->policy, j);
		json_decref(j);
	}
	if (rc == 0 && r.status >= 500)
		rc = -EIO;
	httpc_response_free(&r);
	httpc_destroy(h);
	return rc < 0 ? rc : 0;
}

static void owner_from_req(const struct cni_req *req, struct ipam_owner *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->container_id, sizeof(o->container_id), "%s", req->container_id);
	snprintf(o->ifname, sizeof(o->ifname), "%s", req->ifname);
	snprintf(o->pod_namespace, sizeof(o->pod_namespace), "%s",
		 req->pod_namespace ? req->pod_namespace : "");
	snprintf(o->pod_name, sizeof(o->pod_name), "%s", req->pod_name ? req->pod_name : "");
	pod_host_ifname(req->container_id, req->ifname, o->host_ifname);
	snprintf(o->netns, sizeof(o->netns), "%s", req->netns ? req->netns : "");
}

/* Remove what ADD made for (host ifname, ip): maps, route, veth.  ip 0
 * (no lease: a pod whose lease file is quarantined) takes the address from
 * the endpoint on the veth; the address itself stays quarantined. */
static void pod_undo(struct agent *a, struct nl *host, const char *host_ifname, in_addr_t ip)
{
	struct nl_link l;
	bool have = nl_link_get(host, host_ifname, &l) == 0;

	if (!ip && have) {
		ip = datapath_endpoint_at(a->dp, (uint32_t)l.ifindex);
		if (ip && !ipam_is_quarantined(a->ipam, ip))
			ip = 0;	/* another pod's (never ours to undo) */
	}
	if (ip) {
		(void)datapath_endpoint_del(a->dp, ip);
		(void)datapath_ipcache_del(a->dp, ip);
		(void)nl_route_del(host, ip, 32);
		policy_local_del(a->policy, ip);
		sync_policy_kick(a);	/* its rule set may have no pod left */
	}
	if (have)
		(void)nl_link_del(host, l.ifindex);
}

static int setup_pod_side(struct agent *a, int podfd, const char *ifname, in_addr_t ip,
			  const uint8_t host_mac[6], uint8_t pod_mac[6], struct cni_err *e)
{
	struct nl *pod = nl_open(podfd);
	struct nl_link l;
	struct nl_route gw = { 0 }, def = { 0 };
	char gws[INET_ADDRSTRLEN];
	int rc;

	if (!pod) {
		seterr(e, 5, strerror(errno), "cannot enter the pod's network namespace");
		return -errno;
	}
	pod_mac_from_ip(ip, pod_mac);
	rc = nl_link_get(pod, ifname, &l);
	if (rc < 0)
		goto fail;
	if ((rc = nl_link_set_mac(pod, l.ifindex, pod_mac)) < 0 ||
	    (rc = nl_link_set_up(pod, l.ifindex)) < 0 ||
	    (rc = nl_addr_add(pod, l.ifindex, ip, 32)) < 0)
		goto fail;
	gw.dst = a->gateway;
	gw.prefixlen = 32;
	gw.ifindex = l.ifindex;
	if ((rc = nl_route_replace(pod, &gw)) < 0)
		goto fail;
	def.ifindex = l.ifindex;
	def.gateway = a->gateway;
	if ((rc = nl_route_replace(pod, &def)) < 0 ||
	    (rc = nl_neigh_replace(pod, l.ifindex, a->gateway, host_mac)) < 0)
		goto fail;
	nl_close(pod);
	return 0;
fail:
	format_ip(a->gateway, gws);
	seterr(e, 5, strerror(-rc), "configuring %s in the pod (address, route via %s)", ifname, gws);
	nl_close(pod);
	return rc;
}

/* ADD's refusal on a full subnet, with the counts every report uses
 * (ipam_stats: the Node annotation weft.io/ipam has the same). */
static void seterr_exhausted(struct agent *a, struct cni_err *e)
{
	struct ipam_stats st;
	char sub[CIDR_STRLEN];

	ipam_stats(a->ipam, &st);
	cidr_format(&a->subnet, sub);
	seterr(e, ERR_EXHAUSTED, st.quarantined ? "a quarantined address returns to the pool once "
	       "an operator checks and deletes its .bad lease file (weftctl drops lists them)" : NULL,
	       "node %s: subnet %s is exhausted (%zu leased, %zu quarantined, of %zu addresses)",
	       a->o.node, sub, st.leases, st.quarantined, st.capacity);
}

int pod_maps_write(struct agent *a, const struct ipam_owner *owner, in_addr_t ip,
		struct weft_endpoint *ep)
{
	struct weft_ipcache_entry ic = { 0 };
	char ips[INET_ADDRSTRLEN];
	int rc;

	ep->flags = WEFT_EP_F_READY;
	ep->vnid = pod_vnid(a, owner->pod_namespace);
	ic.node_ip = a->node_ip;
	ic.vnid = ep->vnid;
	/* its policies in the maps before its endpoint: isolated from its
	 * first packet */
	policy_local_set(a->policy, ip, owner->pod_namespace, owner->pod_name);
	/* a rule set that does not fit is reported, and the pod gets what
	 * policy.h promises then (isolated with no rules, its drops counted
	 * policy-map-full): the pod starts, isolated as its policies say */
	if ((rc = policy_apply(a->policy)) < 0) {
		format_ip(ip, ips);
		LOG_WARN("pod %s/%s (%s): writing its network policies: %s", owner->pod_namespace,
			 owner->pod_name, ips, strerror(-rc));
	}
	if ((rc = policy_endpoint_write(a->policy, ip, ep)) < 0 ||
	    (rc = policy_ipcache_write(a->policy, ip, &ic)) < 0)
		return rc;
	return 0;
}

static int pod_add(void *ctx, const struct cni_req *req, struct cni_add_result *res,
		   struct cni_err *e)
{
	struct agent *a = ctx;
	struct ipam_owner owner;
	struct nl *host = NULL;
	struct nl_link hl, pl;
	struct nl_route hr = { 0 };
	struct weft_endpoint ep = { 0 };
	char ips[INET_ADDRSTRLEN];
	in_addr_t ip = 0;
	int podfd = -1, rc;
	bool own_fd = false, leased = false;

	if (!atomic_load(&a->ready)) {
		seterr(e, 11, NULL, "try again later: weft-agent on %s is still starting", a->o.node);
		return -EAGAIN;
	}
	/* A pod's policies follow from its labels.  One the agent cannot
	 * learn while NetworkPolicies of its namespace exist would start
	 * open whatever they say: it waits for the controller instead (the
	 * runtime retries the ADD). */
	if (pod_policy_learn(a, req->pod_namespace, req->pod_name) < 0 &&
	    policy_namespace_has_policies(a->policy, req->pod_namespace)) {
		seterr(e, 11, "the pod's NetworkPolicies are decided from its labels",
		       "try again later: pod %s/%s: its Pod cannot be read from the controller, and "
		       "NetworkPolicies of namespace %s may select it", req->pod_namespace,
		       req->pod_name, req->pod_namespace);
		return -EAGAIN;
	}
	owner_from_req(req, &owner);
	podfd = req->netns_fd;
	if (podfd < 0) {
		podfd = netns_open(req->netns);
		if (podfd < 0) {
			seterr(e, ERR_NETNS, strerror(-podfd), "cannot open network namespace %s",
			       req->netns);
			return podfd;
		}
		own_fd = true;
	}
	host = nl_open(-1);
	if (!host) {
		seterr(e, 5, strerror(errno), "netlink");
		rc = -errno;
		goto out;
	}
	/* the interface must not exist in the pod yet */
	{
		struct nl *pod = nl_open(podfd);

		rc = pod ? nl_link_get(pod, req->ifname, &pl) : -errno;
		nl_close(pod);
		if (rc == 0) {
			seterr(e, ERR_IFACE, NULL, "interface %s already exists in %s", req->ifname,
			       req->netns ? req->netns : "the pod");
			rc = -EEXIST;
			goto out;
		}
	}
	rc = ipam_alloc(a->ipam, &owner, &ip);
	/* an operator may have just deleted a .bad file to make room: the
	 * reporter's next look may be seconds away, this ADD is now */
	if (rc == -ENOSPC && lease_report_refresh(a) > 0) {
		report_kick(a);
		rc = ipam_alloc(a->ipam, &owner, &ip);
	}
	if (rc == -ENOSPC) {
		seterr_exhausted(a, e);
		goto out;
	}
	if (rc == -EEXIST) {
		format_ip(ip, ips);
		seterr(e, ERR_IFACE, NULL, "container %s interface %s already holds %s; DEL it first",
		       req->container_id, req->ifname, ips);
		ip = 0;
		goto out;
	}
	if (rc < 0) {
		seterr(e, 5, strerror(-rc), "leasing an address on node %s", a->o.node);
		goto out;
	}
	leased = true;
	format_ip(ip, ips);
	rc = nl_veth_create(host, owner.host_ifname, req->ifname, podfd, a->mtu);
	if (rc < 0) {
		seterr(e, rc == -EEXIST ? ERR_IFACE : 5, strerror(-rc), "creating veth %s/%s",
		       owner.host_ifname, req->ifname);
		goto out;
	}
	rc = nl_link_get(host, owner.host_ifname, &hl);
	if (rc < 0) {
		seterr(e, 5, strerror(-rc), "veth %s vanished", owner.host_ifname);
		goto out;
	}
	rc = setup_pod_side(a, podfd, req->ifname, ip, hl.mac, ep.pod_mac, e);
	if (rc < 0)
		goto out;
	hr.dst = ip;
	hr.prefixlen = 32;
	hr.ifindex = hl.ifindex;
	hr.src = a->gateway;
	if ((rc = nl_link_set_up(host, hl.ifindex)) < 0 ||
	    (rc = nl_route_replace(host, &hr)) < 0 ||
	    (rc = nl_neigh_replace(host, hl.ifindex, ip, ep.pod_mac)) < 0) {
		seterr(e, 5, strerror(-rc), "configuring %s on the node (route to %s)",
		       owner.host_ifname, ips);
		goto out;
	}
	rc = datapath_attach_pod(a->dp, hl.ifindex);
	if (rc < 0) {
		seterr(e, ERR_DATAPATH, strerror(-rc), "attaching the pod program to %s",
		       owner.host_ifname);
		goto out;
	}
	ep.ifindex = (uint32_t)hl.ifindex;
	memcpy(ep.gw_mac, hl.mac, 6);
	rc = pod_maps_write(a, &owner, ip, &ep);
	if (rc < 0) {
		seterr(e, ERR_DATAPATH, strerror(-rc), "data-plane maps full or failing for %s", ips);
		goto out;
	}
	snprintf(res->host_ifname, sizeof(res->host_ifname), "%s", owner.host_ifname);
	memcpy(res->host_mac, hl.mac, 6);
	snprintf(res->pod_ifname, sizeof(res->pod_ifname), "%s", req->ifname);
	memcpy(res->pod_mac, ep.pod_mac, 6);
	res->mtu = a->mtu;
	res->ip = ip;
	res->gateway = a->gateway;
	report_kick(a);
	rc = 0;
out:
	if (rc < 0 && leased) {
		if (host)
			pod_undo(a, host, owner.host_ifname, ip);
		(void)ipam_release_ip(a->ipam, ip);
	}
	nl_close(host);
	if (own_fd)
		close(podfd);
	return rc < 0 ? rc : 0;
}

/* Everything DEL frees, for one lease (or for no lease: the veth). */
static void release(struct agent *a, struct nl *host, const char *container_id,
		    const char *ifname)
{
	struct ipam_lease l;
	char hname[16];

	pod_host_ifname(container_id, ifname, hname);
	if (ipam_find(a->ipam, container_id, ifname, &l) == 0) {
		pod_undo(a, host, l.owner.host_ifname[0] ? l.owner.host_ifname : hname, l.ip);
		(void)ipam_release_ip(a->ipam, l.ip);
	} else {
		pod_undo(a, host, hname, 0);
	}
}

static int pod_del(void *ctx, const struct cni_req *req, struct cni_err *e)
{
	struct agent *a = ctx;
	struct nl *host = nl_open(-1);

	if (!host) {
		seterr(e, 5, strerror(errno), "netlink");
		return -errno;
	}
	release(a, host, req->container_id, req->ifname);
	nl_close(host);
	report_kick(a);
	return 0;
}

static int check_fail(struct cni_err *e, const char *what, int rc)
{
	seterr(e, ERR_CHECK, rc ? strerror(-rc) : NULL, "check failed: %s", what);
	return rc ? rc : -EINVAL;
}

static int pod_check(void *ctx, const struct cni_req *req, struct cni_err *e)
{
	struct agent *a = ctx;
	struct ipam_lease l;
	struct nl *host = NULL, *pod = NULL;
	struct nl_link hl, pl;
	struct weft_endpoint ep;
	char what[512], ips[INET_ADDRSTRLEN];
	int podfd = req->netns_fd, rc;
	bool own_fd = false;
	const json_t *ipl, *it;
	size_t i;

	if (ipam_find(a->ipam, req->container_id, req->ifname, &l) < 0) {
		seterr(e, 3, NULL, "container %s interface %s is unknown to weft on %s",
		       req->container_id, req->ifname, a->o.node);
		return -ENOENT;
	}
	format_ip(l.ip, ips);
	/* prevResult, when given, must name the leased address */
	ipl = req->prev_result ? json_object_get(req->prev_result, "ips") : NULL;
	json_array_foreach(ipl, i, it) {
		const char *addr = json_string_value(json_object_get(it, "address"));
		char want[INET_ADDRSTRLEN + 4];

		snprintf(want, sizeof(want), "%s/32", ips);
		if (addr && strcmp(addr, want) != 0) {
			snprintf(what, sizeof(what), "prevResult has %s, the lease is %s", addr, want);
			return check_fail(e, what, 0);
		}
	}
	host = nl_open(-1);
	if (!host)
		return check_fail(e, "netlink", -errno);
	rc = nl_link_get(host, l.owner.host_ifname, &hl);
	if (rc < 0) {
		snprintf(what, sizeof(what), "host interface %s is gone", l.owner.host_ifname);
		check_fail(e, what, rc);
		goto out;
	}
	if ((rc = datapath_attached(a->dp, hl.ifindex)) != 1) {
		snprintf(what, sizeof(what), "no weft program on %s", l.owner.host_ifname);
		check_fail(e, what, rc < 0 ? rc : 0);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = datapath_endpoint_get(a->dp, l.ip, &ep)) < 0 || ep.ifindex != (uint32_t)hl.ifindex) {
		snprintf(what, sizeof(what), "no data-plane endpoint for %s on %s", ips,
			 l.owner.host_ifname);
		check_fail(e, what, rc < 0 ? rc : 0);
		rc = -EINVAL;
		goto out;
	}
	if (podfd < 0 && req->netns) {
		podfd = netns_open(req->netns);
		own_fd = podfd >= 0;
	}
	if (podfd < 0) {
		snprintf(what, sizeof(what), "network namespace %s is gone",
			 req->netns ? req->netns : "(none)");
		check_fail(e, what, podfd);
		rc = -ENOENT;
		goto out;
	}
	pod = nl_open(podfd);
	if (!pod || nl_link_get(pod, req->ifname, &pl) < 0) {
		snprintf(what, sizeof(what), "interface %s is gone from the pod", req->ifname);
		rc = check_fail(e, what, 0);
		goto out;
	}
	if (!(pl.flags & IFF_UP) || pl.mtu != a->mtu || memcmp(pl.mac, ep.pod_mac, 6)) {
		snprintf(what, sizeof(what), "%s in the pod: down, MTU %d (want %d) or MAC changed",
			 req->ifname, pl.mtu, a->mtu);
		rc = check_fail(e, what, 0);
		goto out;
	}
	{
		int ifx = 0;

		if (nl_addr_find(pod, l.ip, &ifx) < 0 || ifx != pl.ifindex) {
			snprintf(what, sizeof(what), "%s lost its address %s", req->ifname, ips);
			rc = check_fail(e, what, 0);
			goto out;
		}
	}
	rc = 0;
out:
	nl_close(pod);
	nl_close(host);
	if (own_fd)
		close(podfd);
	return rc < 0 ? rc : 0;
}

struct gc_ctx {
	struct agent *a;
	const struct cni_req *req;
	struct nl *host;
	unsigned freed;
};

static int gc_one(const struct ipam_lease *l, void *arg)
{
	struct gc_ctx *c = arg;
	size_t i;

	for (i = 0; i < c->req->n_valid; i++)
		if (strcmp(c->req->valid[i].container_id, l->owner.container_id) == 0 &&
		    strcmp(c->req->valid[i].ifname, l->owner.ifname) == 0)
			return 0;
	release(c->a, c->host, l->owner.container_id, l->owner.ifname);
	c->freed++;
	return 0;
}

static int pod_gc(void *ctx, const struct cni_req *req, struct cni_err *e)
{
	struct gc_ctx c = { .a = ctx, .req = req };

	c.host = nl_open(-1);
	if (!c.host) {
		seterr(e, 5, strerror(errno), "netlink");
		return -errno;
	}
	(void)ipam_foreach(c.a->ipam, gc_one, &c);
	nl_close(c.host);
	if (c.freed) {
		LOG_INFO("cni gc: released %u attachment(s) not in the valid list", c.freed);
		report_kick(c.a);
	}
	return 0;
}

/* STATUS: ready to serve ADD and DEL in general (CNI spec).  A full
 * subnet is not unreadiness: DEL works, ADD says "exhausted" with the
 * counts, and a runtime (or weft-lab) that waits for ready must not wait
 * on a full node forever. */
static int pod_status(void *ctx, const struct cni_req *req, struct cni_err *e)
{
	struct agent *a = ctx;

	if (!atomic_load(&a->ready)) {
		seterr(e, 50, NULL, "weft-agent on %s is starting (data plane not synced yet)",
		       a->o.node);
		return -EAGAIN;
	}
	return 0;
}

static void pod_cni_done(void *ctx, enum cni_cmd cmd, uint64_t ns, bool failed)
{
	metrics_cni_done(ctx, (int)cmd, ns, failed);
}

const struct cni_ops pod_cni_ops = {
	.add = pod_add,
	.del = pod_del,
	.check = pod_check,
	.gc = pod_gc,
	.status = pod_status,
	.done = pod_cni_done,
};

/* ---- quarantine settled by the node ----
 *
 * A lease file ipam_open could not use is quarantined (<ip>.bad), and its
 * IP stays out of circulation "since a pod may still be using it".  What
 * the node shows settles which pod holds which address: a pod's MAC is
 * 0a:58:<its IP>, its endpoint sits on its veth, and the veth's name is a
 * hash of its container ID and interface.
 *
 *	a lease names an owner whose pod holds another address, quarantined
 *	with a file naming the same owner (a lease file copied over) ──────
 *	        the pod's own lease is restored; the copy is quarantined
 *	a veth without a lease carries an endpoint whose address is
 *	quarantined ────── kept, with its endpoint (the pod keeps working)
 *	its Pod, once known, names that address, and the veth's name is its
 *	container's ───── the lease is written again from the Pod
 *	(pod_settle_quarantined, from the reporter)
 */

/* The IP a pod MAC names (0a:58:<IP>), or 0. */
static in_addr_t ip_of_pod_mac(const uint8_t mac[6])
{
	in_addr_t ip;

	if (mac[0] != 0x0a || mac[1] != 0x58)
		return 0;
	memcpy(&ip, mac + 2, 4);
	return ip;
}

/* The address the pod of lease l holds by its interface's MAC, or 0 when
 * its namespace or interface cannot be seen. */
static in_addr_t pod_held_ip(const struct ipam_lease *l)
{
	struct nl_link pl;
	struct nl *pod;
	in_addr_t ip = 0;
	int fd;

	if (!l->owner.netns[0] || (fd = netns_open(l->owner.netns)) < 0)
		return 0;
	pod = nl_open(fd);
	if (pod && nl_link_get(pod, l->owner.ifname, &pl) == 0)
		ip = ip_of_pod_mac(pl.mac);
	nl_close(pod);
	close(fd);
	return ip;
}

/* Lease l names a pod that holds another address, quarantined with a file
 * naming the same owner: swap them.  1 with *out the pod's own lease, or
 * 0 (l is the pod's, or nothing can tell). */
static int settle_duplicate(struct agent *a, const struct ipam_lease *l, struct ipam_lease *out)
{
	char copy[INET_ADDRSTRLEN], own[INET_ADDRSTRLEN];
	in_addr_t held = pod_held_ip(l);
	struct ipam_lease q;
	int rc;

	if (!held || held == l->ip || ipam_quarantined_lease(a->ipam, held, &q) < 0 ||
	    strcmp(q.owner.container_id, l->owner.container_id) != 0 ||
	    strcmp(q.owner.ifname, l->owner.ifname) != 0)
		return 0;
	format_ip(l->ip, copy);
	format_ip(held, own);
	rc = ipam_quarantine(a->ipam, l->ip);
	if (rc == 0)
		rc = ipam_reclaim(a->ipam, held, &q.owner, q.created);
	if (rc < 0) {
		LOG_ERR("pod %s/%s holds %s, but the lease of %s names it: settling them: %s",
			l->owner.pod_namespace, l->owner.pod_name, own, copy, strerror(-rc));
		return 0;
	}
	LOG_WARN("pod %s/%s holds %s (its MAC says so), but the lease of %s named it too: "
		 "%s's lease restored from its quarantine, %s's quarantined instead",
		 l->owner.pod_namespace, l->owner.pod_name, own, copy, own, copy);
	q.ip = held;
	*out = q;
	return 1;
}

int pod_settle_quarantined(struct agent *a, const char *ns, const char *name,
			   const char *container_id, in_addr_t ip)
{
	struct ipam_owner owner = { 0 };
	struct weft_endpoint ep;
	struct nl_link hl;
	struct nl *host;
	char ips[INET_ADDRSTRLEN], want[16];
	uint8_t mac[6];
	int rc;

	if (!ipam_is_quarantined(a->ipam, ip) || datapath_endpoint_get(a->dp, ip, &ep) < 0)
		return 0;
	pod_mac_from_ip(ip, mac);
	if (memcmp(ep.pod_mac, mac, 6) != 0 || !(host = nl_open(-1)))
		return 0;
	rc = nl_link_get_index(host, (int)ep.ifindex, &hl);
	nl_close(host);
	/* the runtime's interface name is not in the Pod: the one every
	 * Kubernetes runtime gives (CNI_IFNAME), checked by the veth's name */
	pod_host_ifname(container_id, "eth0", want);
	if (rc < 0 || strcmp(hl.name, want) != 0)
		return 0;
	snprintf(owner.container_id, sizeof(owner.container_id), "%s", container_id);
	snprintf(owner.ifname, sizeof(owner.ifname), "eth0");
	snprintf(owner.pod_namespace, sizeof(owner.pod_namespace), "%s", ns);
	snprintf(owner.pod_name, sizeof(owner.pod_name), "%s", name);
	snprintf(owner.host_ifname, sizeof(owner.host_ifname), "%s", hl.name);
	format_ip(ip, ips);
	rc = ipam_reclaim(a->ipam, ip, &owner, time(NULL));
	if (rc < 0) {
		LOG_ERR("pod %s/%s (%s): writing its lease again: %s", ns, name, ips, strerror(-rc));
		return rc;
	}
	LOG_WARN("pod %s/%s (%s): its lease file was quarantined; written again from its Pod "
		 "(container %.12s, interface %s, MAC and endpoint agree)", ns, name, ips,
		 container_id, hl.name);
	policy_local_set(a->policy, ip, ns, name);
	sync_policy_kick(a);
	return 1;
}

/* ---- start-up GC ---- */

struct startup_ctx {
	struct agent *a;
	struct nl *host;
	unsigned kept, released;
};

static int startup_one(const struct ipam_lease *lease, void *arg)
{
	struct startup_ctx *c = arg;
	struct agent *a = c->a;
	const struct ipam_lease *l = lease;
	struct ipam_lease own;
	struct nl_link hl;
	struct weft_endpoint ep = { 0 };
	struct weft_ipcache_entry ic = { .node_ip = a->node_ip };
	char ips[INET_ADDRSTRLEN];
	int rc;

	if (settle_duplicate(a, lease, &own))
		l = &own;
	format_ip(l->ip, ips);
	rc = nl_link_get(c->host, l->owner.host_ifname, &hl);
	if (rc < 0) {
		LOG_INFO("pod %s/%s (%s): interface %s is gone; lease released",
			 l->owner.pod_namespace, l->owner.pod_name, ips, l->owner.host_ifname);
		(void)datapath_endpoint_del(a->dp, l->ip);
		(void)datapath_ipcache_del(a->dp, l->ip);
		policy_local_del(a->policy, l->ip);
		(void)ipam_release_ip(a->ipam, l->ip);
		c->released++;
		return 0;
	}
	{
		struct weft_endpoint old;

		/* kept state keeps its VNID; else unknown until the
		 * NetNamespace list re-tags it (never global by accident) */
		ep.vnid = datapath_endpoint_get(a->dp, l->ip, &old) == 0 ? old.vnid
									 : AGENT_VNID_UNKNOWN;
		ic.vnid = ep.vnid;
	}
	ep.ifindex = (uint32_t)hl.ifindex;
	pod_mac_from_ip(l->ip, ep.pod_mac);
	memcpy(ep.gw_mac, hl.mac, 6);
	ep.flags = WEFT_EP_F_READY;
	/* a kept entry keeps its rule set until the policies are applied */
	policy_local_set(a->policy, l->ip, l->owner.pod_namespace, l->owner.pod_name);
	if ((rc = datapath_attach_pod(a->dp, hl.ifindex)) < 0 ||
	    (rc = policy_endpoint_write(a->policy, l->ip, &ep)) < 0 ||
	    (rc = policy_ipcache_write(a->policy, l->ip, &ic)) < 0)
		LOG_ERR("pod %s/%s (%s): restoring its data-plane state: %s", l->owner.pod_namespace,
			l->owner.pod_name, ips, strerror(-rc));
	c->kept++;
	return 0;
}

struct orphan_ctx {
	struct agent *a;
	int ifindex[1024];
	char names[1024][IF_NAMESIZE];
	size_t n;
	/* endpoints whose address is quarantined, and of those the ones on a
	 * veth without a lease (kept) */
	struct held { in_addr_t ip; int ifindex; bool kept; } held[256];
	size_t nheld;
};

static int find_held(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct orphan_ctx *c = arg;
	uint8_t mac[6];

	pod_mac_from_ip(ip, mac);
	if (c->nheld < sizeof(c->held) / sizeof(c->held[0]) && ipam_is_quarantined(c->a->ipam, ip) &&
	    memcmp(ep->pod_mac, mac, 6) == 0)
		c->held[c->nheld++] = (struct held){ .ip = ip, .ifindex = (int)ep->ifindex };
	return 0;
}

static int has_lease_for(const struct ipam_lease *l, void *arg)
{
	const char *name = arg;

	return strcmp(l->owner.host_ifname, name) == 0 ? 1 : 0;
}

static int find_orphan(const struct nl_link *l, void *arg)
{
	struct orphan_ctx *c = arg;

	if (strncmp(l->name, AGENT_VETH_PREFIX, strlen(AGENT_VETH_PREFIX)) != 0 ||
	    strcmp(l->kind, "veth") != 0)
		return 0;
	if (ipam_foreach(c->a->ipam, has_lease_for, (void *)l->name) == 1)
		return 0;
	for (size_t i = 0; i < c->nheld; i++) {
		char ips[INET_ADDRSTRLEN];
		int rc;

		if (c->held[i].ifindex != l->ifindex)
			continue;
		c->held[i].kept = true;
		format_ip(c->held[i].ip, ips);
		rc = datapath_attach_pod(c->a->dp, l->ifindex);
		LOG_WARN("interface %s has no lease, but carries %s, whose lease file is quarantined: "
			 "kept (its Pod, once known, settles it)%s%s", l->name, ips,
			 rc < 0 ? "; attaching its program: " : "", rc < 0 ? strerror(-rc) : "");
		return 0;
	}
	if (c->n < 1024) {
		c->ifindex[c->n] = l->ifindex;
		snprintf(c->names[c->n], IF_NAMESIZE, "%s", l->name);
		c->n++;
	}
	return 0;
}

/* endpoint entries whose IP has no lease (but those kept above) */
static int stale_endpoint(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct orphan_ctx *c = arg;
	struct agent *a = c->a;
	struct ipam_lease l;

	for (size_t i = 0; i < c->nheld; i++)
		if (c->held[i].kept && c->held[i].ip == ip && c->held[i].ifindex == (int)ep->ifindex)
			return 0;
	if (ipam_find_ip(a->ipam, ip, &l) < 0) {
		(void)datapath_endpoint_del(a->dp, ip);
		(void)datapath_ipcache_del(a->dp, ip);
	}
	return 0;
}

int pod_startup_gc(struct agent *a)
{
	struct startup_ctx c = { .a = a };
	struct orphan_ctx *o = calloc(1, sizeof(*o));
	size_t i;
	int rc = 0;

	c.host = nl_open(-1);
	if (!c.host || !o) {
		rc = -ENOMEM;
		goto out;
	}
	(void)ipam_foreach(a->ipam, startup_one, &c);
	o->a = a;
	(void)datapath_endpoint_foreach(a->dp, find_held, o);
	(void)nl_link_foreach(c.host, find_orphan, o);
	for (i = 0; i < o->n; i++) {
		LOG_INFO("interface %s has no lease; removed", o->names[i]);
		(void)nl_link_del(c.host, o->ifindex[i]);
	}
	(void)datapath_endpoint_foreach(a->dp, stale_endpoint, o);
	LOG_INFO("start-up: %u pod(s) kept, %u lease(s) released, %zu orphan interface(s) removed",
		 c.kept, c.released, o->n);
out:
	nl_close(c.host);
	free(o);
	return rc;
}
