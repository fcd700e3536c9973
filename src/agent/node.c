/*
 * node.c — the agent's node: who it is in the cluster and the devices that
 * make it a weft node.
 *
 * Registration: GET the Node (to keep what others set on it), set the
 * InternalIP, PUT it; the controller answers with spec.podCIDR (the node
 * subnet) and the annotation weft.io/node-id.  The answer and the cluster
 * configuration are saved in STATE/node.json, so a restart while the
 * controller is down still knows its subnet.  A refusal (409: duplicate IP,
 * no subnet left) is final: the agent exits naming it.
 *
 * Devices, all idempotent (a restart finds them and keeps them):
 *   weft_vxlan   VXLAN, external (collect-metadata) mode, on the cluster's
 *                port; NOARP; MTU = pod MTU; carries the gateway address
 *                (first host of the subnet) as a /32
 *   routes       unreachable <own subnet> (a pod that is gone answers
 *                "unreachable" instead of leaking to the default route);
 *                <remote subnet> dev weft_vxlan src <gateway>
 *                encap ip id 0 dst <node IP>, so the node reaches every pod
 *   weft_svc     the service device: a dummy (an ifb where the kernel has
 *                no dummy driver: both are Ethernet devices that discard
 *                what they are sent); NOARP, IPv6 off, MTU = pod MTU, no
 *                address; tc egress program svc_egress.  Routes: the service network and
 *                every VIP network dev weft_svc src <gateway>, so a
 *                socket of the node (the node itself, a host-network pod)
 *                that connects to a cluster IP or VIP sends from the
 *                gateway into svc_egress, which translates it as a pod's
 *                connection (bpf/svc_egress.bpf.c); routes on it that the
 *                cluster config no longer names are removed.  Its ifindex
 *                and MAC go into weft_svc_dev: the answers enter the
 *                stack through it.  A VIP network holding the
 *                node's own IP is not routed there (it would cut the node
 *                off its underlay).
 *   nftables     table ip weft: masquerade pod traffic leaving the
 *                cluster network, to the node's address (never what
 *                leaves by weft_vxlan or weft_svc: the gateway's own
 *                connections to pods and services); and no
 *                connection tracking for the tunnel's UDP port, in and
 *                out: node-to-node VXLAN needs no NAT, the data plane
 *                checks the sender (weft_node_ips), and a conntrack
 *                lookup per packet cost both nodes of every cross-node
 *                path (nf_conntrack_in and its hash lookup were ~1.5 %
 *                of the samples of a cross-node iperf3 profile)
 * MTU: the underlay is the device that holds the node IP; pod MTU =
 * underlay − 50 (VXLAN over IPv4) unless --mtu or the cluster sets one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/netlink.h"

#define VXLAN_OVERHEAD 50

void format_ip(in_addr_t ip, char buf[INET_ADDRSTRLEN])
{
	struct in_addr a = { .s_addr = ip };

	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

struct httpc *agent_http(struct agent *a)
{
	struct httpc_options ho = {
		.server = a->o.controller,
		.token_file = a->o.token_file,
		.ca_file = a->o.ca_file,
		.connect_timeout_ms = 2000,
		.user_agent = "weft-agent",
	};
	char err[256];
	struct httpc *h = httpc_create(&ho, err, sizeof(err));

	if (!h)
		LOG_ERR("controller client: %s", err);
	return h;
}

static int write_file_atomic(const char *path, const char *data)
{
	char tmp[4300];
	int fd, rc = 0;
	size_t len = strlen(data);

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		rc = -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static int parse_node_answer(struct agent *a, const json_t *node)
{
	const char *cidr = obj_str(node, "spec.podCIDR");
	json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
	const char *id = json_string_value(json_object_get(ann, "weft.io/node-id"));

	if (!cidr || cidr_parse(cidr, &a->subnet) < 0) {
		LOG_ERR("node %s: the controller gave no valid spec.podCIDR", a->o.node);
		return -EPROTO;
	}
	a->node_id = id ? (uint32_t)strtoul(id, NULL, 10) : 0;
	a->gateway = htonl(a->subnet.addr + 1);
	return 0;
}

static int save_node_json(struct agent *a, const json_t *cn)
{
	char path[4100], sub[CIDR_STRLEN];
	json_t *j;
	char *s;
	int rc;

	cidr_format(&a->subnet, sub);
	j = json_pack("{s:s, s:s, s:i, s:s, s:O}", "node", a->o.node, "nodeIP", a->o.node_ip_str,
		      "nodeID", (int)a->node_id, "subnet", sub, "clusterNetwork", cn);
	if (!j)
		return -ENOMEM;
	s = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	if (!s)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/node.json", a->o.state_dir);
	rc = write_file_atomic(path, s);
	free(s);
	return rc;
}

static int load_node_json(struct agent *a)
{
	char path[4200], err[256];
	json_error_t je;
	json_t *j, *cn;
	const char *sub, *name, *ip;
	int rc = -EINVAL;

	snprintf(path, sizeof(path), "%s/node.json", a->o.state_dir);
	j = json_load_file(path, 0, &je);
	if (!j)
		return -ENOENT;
	name = json_string_value(json_object_get(j, "node"));
	ip = json_string_value(json_object_get(j, "nodeIP"));
	sub = json_string_value(json_object_get(j, "subnet"));
	cn = json_object_get(j, "clusterNetwork");
	if (!name || !ip || !sub || strcmp(name, a->o.node) || strcmp(ip, a->o.node_ip_str)) {
		LOG_WARN("%s: for another node or address; ignored", path);
		goto out;
	}
	if (cidr_parse(sub, &a->subnet) < 0)
		goto out;
	a->node_id = (uint32_t)json_integer_value(json_object_get(j, "nodeID"));
	a->gateway = htonl(a->subnet.addr + 1);
	if (cn && cluster_config_from_json(cn, &a->cc, err, sizeof(err)) < 0) {
		LOG_WARN("%s: cluster network: %s", path, err);
		goto out;
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}

/* GET the ClusterNetwork "default"; 404 means the defaults. *cn new ref. */
static int fetch_cluster(struct agent *a, struct httpc *h, json_t **cn)
{
	struct httpc_response r = { 0 };
	char err[256];
	json_t *j = NULL;
	int rc;

	rc = httpc_request(h, "GET", "/apis/network.openshift.io/v1/clusternetworks/default",
			   NULL, 0, &r, err, sizeof(err));
	if (rc == -EPROTO) {
		/* TLS (a certificate that does not verify): said, then retried as unreachable */
		static unsigned said;

		if (said++ % 20 == 0)
			LOG_ERR("controller: %s", err);
		return -EHOSTUNREACH;
	}
	if (rc < 0)
		return rc;
	if (r.status == 404) {
		cluster_config_default(&a->cc);
		*cn = cluster_config_to_json(&a->cc);
		rc = 0;
		goto out;
	}
	if (r.status != 200 || !(j = json_loads(r.body, 0, NULL))) {
		LOG_ERR("cluster network: HTTP %ld: %.200s", r.status, r.body);
		rc = -EPROTO;
		goto out;
	}
	rc = cluster_config_from_json(j, &a->cc, err, sizeof(err));
	if (rc < 0) {
		LOG_ERR("cluster network: %s", err);
		goto out;
	}
	*cn = j;
	j = NULL;
out:
	json_decref(j);
	httpc_response_free(&r);
	return rc;
}

/* One registration attempt: 0, -EAGAIN (unreachable: retry), or final. */
static int register_once(struct agent *a, struct httpc *h)
{
	struct httpc_response r = { 0 };
	char path[512], err[256];
	json_t *node = NULL, *ans = NULL, *cn = NULL, *status, *addrs;
	char *body = NULL;
	int rc;

	rc = fetch_cluster(a, h, &cn);
	if (rc < 0)
		return rc == -EPROTO ? rc : -EAGAIN;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", a->o.node);
	rc = httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err));
	if (rc < 0) {
		rc = -EAGAIN;
		goto out;
	}
	if (r.status == 200)
		node = json_loads(r.body, 0, NULL);
	httpc_response_free(&r);
	if (!node)
		node = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node",
				 "metadata", "name", a->o.node);
	/* unconditional replace of what we read: drop the resourceVersion */
	json_object_del(json_object_get(node, "metadata"), "resourceVersion");
	status = json_object_get(node, "status");
	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(node, "status", status);
	}
	addrs = json_pack("[{s:s, s:s}, {s:s, s:s}]", "type", "InternalIP", "address",
			  a->o.node_ip_str, "type", "Hostname", "address", a->o.node);
	json_object_set_new(status, "addresses", addrs);
	body = json_dumps(node, JSON_COMPACT);
	rc = agent_write(a, h, "PUT", path, body, strlen(body), &r, err, sizeof(err));
	if (rc < 0) {
		rc = -EAGAIN;
		goto out;
	}
	if (r.status != 200 && r.status != 201) {
		json_t *st = json_loads(r.body, 0, NULL);
		const char *msg = st ? json_string_value(json_object_get(st, "message")) : NULL;

		LOG_ERR("node %s: the controller refused the registration (HTTP %ld): %s",
			a->o.node, r.status, msg ? msg : r.body);
		json_decref(st);
		rc = r.status >= 500 ? -EAGAIN : -EPERM;
		goto out;
	}
	ans = json_loads(r.body, 0, NULL);
	if (!ans || (rc = parse_node_answer(a, ans)) < 0) {
		rc = rc ? rc : -EPROTO;
		goto out;
	}
	rc = save_node_json(a, cn);
	if (rc < 0)
		LOG_WARN("%s/node.json: cannot save: %s", a->o.state_dir, strerror(-rc));
	rc = 0;
out:
	free(body);
	json_decref(node);
	json_decref(ans);
	json_decref(cn);
	httpc_response_free(&r);
	return rc;
}

int node_register(struct agent *a)
{
	struct httpc *h = agent_http(a);
	char sub[CIDR_STRLEN];
	int rc, tries = 0;

	if (!h)
		return -EINVAL;
	cluster_config_default(&a->cc);
	for (;;) {
		rc = register_once(a, h);
		if (rc != -EAGAIN || atomic_load(&a->stopping))
			break;
		if (tries == 0 && load_node_json(a) == 0) {
			cidr_format(&a->subnet, sub);
			LOG_WARN("controller %s unreachable: starting with the saved registration "
				 "(node ID %u, subnet %s)", a->o.controller, a->node_id, sub);
			rc = 0;
			break;
		}
		if (tries++ % 20 == 0)
			LOG_WARN("controller %s unreachable; retrying registration", a->o.controller);
		usleep(500 * 1000);
	}
	httpc_destroy(h);
	if (rc == 0) {
		cidr_format(&a->subnet, sub);
		LOG_INFO("node %s: ID %u, subnet %s", a->o.node, a->node_id, sub);
	}
	return rc;
}

static int write_sysctl(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int detect_mtu(struct agent *a, struct nl *nl)
{
	struct nl_link l;
	int ifindex, rc;

	rc = nl_addr_find(nl, a->node_ip, &ifindex);
	if (rc < 0) {
		LOG_ERR("node IP %s is on no device of this node: %s", a->o.node_ip_str,
			strerror(-rc));
		return rc;
	}
	rc = nl_link_get_index(nl, ifindex, &l);
	if (rc < 0)
		return rc;
	a->underlay_mtu = l.mtu;
	a->underlay_ifindex = ifindex;
	if (a->o.mtu)
		a->mtu = a->o.mtu;
	else if (a->cc.mtu)
		a->mtu = (int)a->cc.mtu;
	else
		a->mtu = l.mtu - VXLAN_OVERHEAD;
	if (a->mtu < 576 || a->mtu > 65535 - VXLAN_OVERHEAD) {
		LOG_ERR("pod MTU %d out of range (underlay %s MTU %d)", a->mtu, l.name, l.mtu);
		return -EINVAL;
	}
	if (a->mtu > l.mtu - VXLAN_OVERHEAD)
		LOG_WARN("pod MTU %d > underlay %s MTU %d - %d: full segments will fragment",
			 a->mtu, l.name, l.mtu, VXLAN_OVERHEAD);
	LOG_INFO("underlay %s MTU %d, pod MTU %d", l.name, l.mtu, a->mtu);
	return 0;
}

/* The kinds the service device may be, by preference.  Both discard what
 * they are sent, which never happens: svc_egress redirects or drops every
 * frame first. */
static const char *const svc_kinds[] = { "dummy", "ifb" };

static bool svc_kind_ok(const char *kind)
{
	for (size_t i = 0; i < sizeof(svc_kinds) / sizeof(svc_kinds[0]); i++)
		if (strcmp(kind, svc_kinds[i]) == 0)
			return true;
	return false;
}

static int svc_device(struct agent *a, struct nl *nl, struct nl_link *l)
{
	char path[128];
	int rc = nl_link_get(nl, AGENT_SVC_NAME, l);

	if (rc == 0 && !svc_kind_ok(l->kind)) {
		LOG_WARN("%s: a %s device, not ours; re-creating it", AGENT_SVC_NAME,
			 l->kind[0] ? l->kind : "plain");
		(void)nl_link_del(nl, l->ifindex);
		rc = -ENODEV;
	}
	if (rc == -ENODEV) {
		for (size_t i = 0; i < sizeof(svc_kinds) / sizeof(svc_kinds[0]); i++) {
			rc = nl_link_create(nl, AGENT_SVC_NAME, svc_kinds[i], a->mtu);
			if (rc != -EOPNOTSUPP)
				break;
		}
		if (rc < 0) {
			LOG_ERR("create %s (dummy or ifb): %s", AGENT_SVC_NAME, strerror(-rc));
			return rc;
		}
		rc = nl_link_get(nl, AGENT_SVC_NAME, l);
		if (rc == 0)
			LOG_INFO("%s: created (%s)", AGENT_SVC_NAME, l->kind);
	}
	if (rc < 0)
		return rc;
	/* no IPv6 (no link-local address, no router solicitations): before up */
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", AGENT_SVC_NAME);
	rc = write_sysctl(path, "1");
	if (rc < 0 && rc != -ENOENT)	/* ENOENT: no IPv6 in this kernel */
		LOG_WARN("%s: %s", path, strerror(-rc));
	return 0;
}

struct svc_prune {
	struct agent *a;
	int ifindex;
	struct nl_route stale[64];
	size_t n;
};

static bool svc_net_routed(const struct agent *a, const struct cidr *c)
{
	return !cidr_contains_ip(c, ntohl(a->node_ip));
}

static bool svc_route_wanted(const struct agent *a, in_addr_t dst, int len)
{
	const struct cidr *sn = &a->cc.service_network;

	if (htonl(sn->addr) == dst && sn->len == len)
		return true;
	for (size_t i = 0; i < a->cc.nvip_networks && i < CLUSTER_MAX_NETWORKS; i++)
		if (htonl(a->cc.vip_networks[i].addr) == dst && a->cc.vip_networks[i].len == len &&
		    svc_net_routed(a, &a->cc.vip_networks[i]))
			return true;
	return false;
}

static int collect_svc_stale(const struct nl_route *r, void *arg)
{
	struct svc_prune *c = arg;

	if (r->ifindex != c->ifindex || svc_route_wanted(c->a, r->dst, r->prefixlen))
		return 0;
	if (c->n < sizeof(c->stale) / sizeof(c->stale[0]))
		c->stale[c->n++] = *r;
	return 0;
}

/* <net> dev weft_svc src <gateway> for the service network and each VIP
 * network (replace: idempotent), then the routes on weft_svc no longer
 * wanted go. */
static int svc_routes(struct agent *a, struct nl *nl, int ifindex)
{
	struct svc_prune c = { .a = a, .ifindex = ifindex };
	char net[CIDR_STRLEN];
	int rc;

	for (size_t i = 0; i <= a->cc.nvip_networks && i <= CLUSTER_MAX_NETWORKS; i++) {
		const struct cidr *n = i == 0 ? &a->cc.service_network : &a->cc.vip_networks[i - 1];
		struct nl_route r = {
			.dst = htonl(n->addr),
			.prefixlen = n->len,
			.ifindex = ifindex,
			.src = a->gateway,
		};

		cidr_format(n, net);
		if (i > 0 && !svc_net_routed(a, n)) {
			LOG_WARN("VIP network %s holds this node's IP %s: not routed to %s",
				 net, a->o.node_ip_str, AGENT_SVC_NAME);
			continue;
		}
		rc = nl_route_replace(nl, &r);
		if (rc < 0) {
			LOG_ERR("route %s dev %s: %s", net, AGENT_SVC_NAME, strerror(-rc));
			return rc;
		}
	}
	rc = nl_route_foreach(nl, collect_svc_stale, &c);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < c.n; i++) {
		char ip[INET_ADDRSTRLEN];

		format_ip(c.stale[i].dst, ip);
		LOG_INFO("route %s/%d dev %s: no longer in the cluster config; removed", ip,
			 c.stale[i].prefixlen, AGENT_SVC_NAME);
		(void)nl_route_del_dev(nl, c.stale[i].dst, c.stale[i].prefixlen, ifindex);
	}
	return 0;
}

/* The service device, its program, weft_svc_dev (what the programs that
 * hand answers to the stack through it need: its ifindex and MAC), then
 * the routes that bring the node's packets to it. */
static int setup_svc(struct agent *a, struct nl *nl)
{
	struct weft_svc_dev d = { 0 };
	struct nl_link l;
	int rc;

	rc = svc_device(a, nl, &l);
	if (rc < 0)
		return rc;
	if ((rc = nl_link_set_mtu(nl, l.ifindex, a->mtu)) < 0 ||
	    (rc = nl_link_set_noarp(nl, l.ifindex, true)) < 0 ||
	    (rc = nl_link_set_up(nl, l.ifindex)) < 0) {
		LOG_ERR("configure %s: %s", AGENT_SVC_NAME, strerror(-rc));
		return rc;
	}
	a->svc_ifindex = l.ifindex;
	rc = datapath_attach_svc(a->dp, l.ifindex);
	if (rc < 0) {
		LOG_ERR("attach the service program to %s: %s", AGENT_SVC_NAME, strerror(-rc));
		return rc;
	}
	d.ifindex = (uint32_t)l.ifindex;
	memcpy(d.mac, l.mac, sizeof(d.mac));
	rc = datapath_svc_dev_set(a->dp, &d);
	if (rc < 0) {
		LOG_ERR("writing %s into weft_svc_dev: %s", AGENT_SVC_NAME, strerror(-rc));
		return rc;
	}
	return svc_routes(a, nl, l.ifindex);
}

static int real_setup_devices(struct agent *a)
{
	struct nl *nl = nl_open(-1);
	struct nl_link l;
	struct nl_route r = { 0 };
	bool external = false;
	uint16_t port = 0;
	int rc;

	if (!nl)
		return -errno;
	rc = detect_mtu(a, nl);
	if (rc < 0)
		goto out;
	rc = nl_link_get(nl, AGENT_VXLAN_NAME, &l);
	if (rc == 0 && (nl_vxlan_info(nl, l.ifindex, &external, &port) < 0 || !external ||
			port != a->cc.vxlan_port)) {
		LOG_WARN("%s: not external mode on port %u; re-creating it", AGENT_VXLAN_NAME,
			 a->cc.vxlan_port);
		(void)nl_link_del(nl, l.ifindex);
		rc = -ENODEV;
	}
	if (rc == -ENODEV) {
		rc = nl_vxlan_create(nl, AGENT_VXLAN_NAME, a->cc.vxlan_port, a->mtu);
		if (rc < 0) {
			LOG_ERR("create %s (port %u): %s", AGENT_VXLAN_NAME, a->cc.vxlan_port,
				strerror(-rc));
			goto out;
		}
		rc = nl_link_get(nl, AGENT_VXLAN_NAME, &l);
	}
	if (rc < 0)
		goto out;
	a->vxlan_ifindex = l.ifindex;
	if ((rc = nl_link_set_mtu(nl, l.ifindex, a->mtu)) < 0 ||
	    (rc = nl_link_set_noarp(nl, l.ifindex, true)) < 0 ||
	    (rc = nl_addr_add(nl, l.ifindex, a->gateway, 32)) < 0 ||
	    (rc = nl_link_set_up(nl, l.ifindex)) < 0) {
		LOG_ERR("configure %s: %s", AGENT_VXLAN_NAME, strerror(-rc));
		goto out;
	}
	r.dst = htonl(a->subnet.addr);
	r.prefixlen = a->subnet.len;
	r.type = NL_ROUTE_UNREACHABLE;
	rc = nl_route_replace(nl, &r);
	if (rc < 0) {
		LOG_ERR("route unreachable to the node subnet: %s", strerror(-rc));
		goto out;
	}
	rc = write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
	if (rc < 0) {
		LOG_ERR("net.ipv4.ip_forward: %s", strerror(-rc));
		goto out;
	}
	rc = datapath_attach_vxlan(a->dp, l.ifindex);
	if (rc < 0) {
		LOG_ERR("attach the VXLAN program to %s: %s", AGENT_VXLAN_NAME, strerror(-rc));
		goto out;
	}
	rc = datapath_attach_node(a->dp, a->underlay_ifindex);
	if (rc < 0) {
		LOG_ERR("attach the NodePort program to the underlay (ifindex %d): %s",
			a->underlay_ifindex, strerror(-rc));
		goto out;
	}
	rc = setup_svc(a, nl);
out:
	nl_close(nl);
	return rc;
}

static int real_route_remote(struct agent *a, const struct nodecache_node *n)
{
	struct nl *nl = nl_open(-1);
	struct nl_route r = {
		.dst = htonl(n->subnet.addr),
		.prefixlen = n->subnet.len,
		.ifindex = a->vxlan_ifindex,
		.src = a->gateway,
		.encap = true,
		.encap_id = 0,
		.encap_dst = n->ip,
	};
	int rc;

	if (!nl)
		return -errno;
	rc = nl_route_replace(nl, &r);
	nl_close(nl);
	return rc;
}

static int real_route_remote_del(struct agent *a, const struct cidr *subnet)
{
	struct nl *nl = nl_open(-1);
	int rc;

	if (!nl)
		return -errno;
	rc = nl_route_del(nl, htonl(subnet->addr), subnet->len);
	nl_close(nl);
	return rc == -ESRCH ? 0 : rc;
}

struct prune_ctx {
	struct agent *a;
	struct nl_route stale[256];
	size_t n;
};

static int collect_stale(const struct nl_route *r, void *arg)
{
	struct prune_ctx *c = arg;
	struct agent *a = c->a;
	struct cidr s = { .addr = ntohl(r->dst), .len = (uint8_t)r->prefixlen };
	const struct nodecache_node *n;

	if (r->ifindex != a->vxlan_ifindex || !r->encap || r->prefixlen < 0 || r->prefixlen >= 32)
		return 0;
	for (n = nodecache_by_subnet(&a->nodes, &s); n; n = nodecache_next_subnet(n))
		if (n->ip != a->node_ip)
			return 0;
	if (c->n < sizeof(c->stale) / sizeof(c->stale[0]))
		c->stale[c->n++] = *r;
	return 0;
}

static int real_routes_prune(struct agent *a)
{
	struct prune_ctx *c = calloc(1, sizeof(*c));
	struct nl *nl = nl_open(-1);
	size_t i;
	int rc = 0;

	if (!c || !nl) {
		rc = -ENOMEM;
		goto out;
	}
	c->a = a;
	pthread_mutex_lock(&a->lock);
	rc = nl_route_foreach(nl, collect_stale, c);
	pthread_mutex_unlock(&a->lock);
	for (i = 0; i < c->n; i++) {
		char ip[INET_ADDRSTRLEN];

		format_ip(c->stale[i].dst, ip);
		LOG_INFO("route %s/%d: no node owns it; removed", ip, c->stale[i].prefixlen);
		(void)nl_route_del(nl, c->stale[i].dst, c->stale[i].prefixlen);
	}
out:
	nl_close(nl);
	free(c);
	return rc;
}

static int real_setup_masquerade(struct agent *a)
{
	char nets[CLUSTER_MAX_NETWORKS * (CIDR_STRLEN + 2)] = "", c[CIDR_STRLEN];
	char script[4096];
	int pipefd[2], status, n;
	pid_t pid;
	size_t i;

	for (i = 0; i < a->cc.nnetworks; i++) {
		cidr_format(&a->cc.networks[i].cidr, c);
		strcat(nets, i ? ", " : "");
		strcat(nets, c);
	}
	/* "add table; delete table" makes the whole script idempotent */
	n = snprintf(script, sizeof(script),
		     "add table ip weft\n"
		     "delete table ip weft\n"
		     "table ip weft {\n"
		     "  chain prerouting_raw {\n"
		     "    type filter hook prerouting priority raw; policy accept;\n"
		     "    udp dport %u notrack\n"
		     "  }\n"
		     "  chain output_raw {\n"
		     "    type filter hook output priority raw; policy accept;\n"
		     "    udp dport %u notrack\n"
		     "  }\n"
		     "  chain postrouting {\n"
		     "    type nat hook postrouting priority srcnat; policy accept;\n"
		     "    ip saddr { %s } ip daddr != { %s } oifname != { \"%s\", \"%s\" } masquerade\n"
		     "  }\n"
		     "}\n",
		     a->cc.vxlan_port, a->cc.vxlan_port, nets, nets, AGENT_VXLAN_NAME, AGENT_SVC_NAME);
	if (n < 0 || (size_t)n >= sizeof(script))
		return -E2BIG;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(pipefd[0], 0);
		execl("/usr/sbin/nft", "nft", "-f", "-", (char *)NULL);
		_exit(127);
	}
	close(pipefd[0]);
	if (write(pipefd[1], script, (size_t)n) != n)
		LOG_WARN("nft: short write");
	close(pipefd[1]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		LOG_ERR("nft: installing the masquerade rule failed (exit %d)",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -EIO;
	}
	LOG_INFO("masquerade: %s -> node address", nets);
	return 0;
}

const struct agent_kernel agent_kernel_real = {
	.setup_devices = real_setup_devices,
	.setup_masquerade = real_setup_masquerade,
	.route_remote = real_route_remote,
	.route_remote_del = real_route_remote_del,
	.routes_prune = real_routes_prune,
	.startup_gc = pod_startup_gc,
};
