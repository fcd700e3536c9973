/*
 * hollow.c — a hollow node, as kubemark has hollow kubelets: the agent's
 * own code, on maps that live in memory (datapath_opts.in_memory), with
 * no kernel of its own.  Many run in one process (weft-hollow).
 *
 * What a hollow node does not do is what agent_kernel says a node does to
 * its kernel: no devices, routes or masquerade, no veths to find at start.
 * Its pods come from its runner instead of a CNI socket, but what makes a
 * pod is the same code as a CNI ADD's past the veth: the lease
 * (ipam_alloc, a lease file in the node's state directory), the maps
 * (pod_maps_write: policies, endpoint, ipcache) and the Pod record
 * (report.c, woken by report_kick).  The veth a hollow pod would have is
 * a number (ifindex) and the MACs derive from the address, as a real
 * pod's do.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

/* the gateway MAC every hollow pod sees: locally administered */
static const uint8_t hollow_gw_mac[6] = { 0x0a, 0x58, 0xff, 0xff, 0xff, 0x01 };

static int no_setup(struct agent *a)
{
	a->underlay_mtu = 1500;
	a->mtu = a->o.mtu ? a->o.mtu : a->cc.mtu ? (int)a->cc.mtu : 1450;
	return 0;
}

static int no_masquerade(struct agent *a)
{
	(void)a;
	return 0;
}

static int no_route(struct agent *a, const struct nodecache_node *n)
{
	(void)a;
	(void)n;
	return 0;
}

static int no_route_del(struct agent *a, const struct cidr *subnet)
{
	(void)a;
	(void)subnet;
	return 0;
}

static int no_prune(struct agent *a)
{
	(void)a;
	return 0;
}

struct lease_ips {
	in_addr_t *v;
	size_t n, cap;
};

static int collect_ip(const struct ipam_lease *l, void *arg)
{
	struct lease_ips *c = arg;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		in_addr_t *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = l->ip;
	return 0;
}

/* A hollow node's maps start empty: a lease left by an earlier run has no
 * pod behind it any more, and is released (its Pod record goes with the
 * reporter's next round, as a real node's does after a GC). */
static int release_all(struct agent *a)
{
	struct lease_ips c = { 0 };
	int rc = ipam_foreach(a->ipam, collect_ip, &c);

	for (size_t i = 0; rc == 0 && i < c.n; i++)
		(void)ipam_release_ip(a->ipam, c.v[i]);
	free(c.v);
	return rc;
}

const struct agent_kernel agent_kernel_hollow = {
	.setup_devices = no_setup,
	.setup_masquerade = no_masquerade,
	.route_remote = no_route,
	.route_remote_del = no_route_del,
	.routes_prune = no_prune,
	.startup_gc = release_all,
};

int hollow_pod_add(struct agent *a, const char *ns, const char *name, in_addr_t *ip_out)
{
	struct ipam_owner *o = calloc(1, sizeof(*o));
	struct weft_endpoint ep = { 0 };
	in_addr_t ip = 0;
	int rc;

	if (!o)
		return -ENOMEM;
	if (!atomic_load(&a->ready)) {
		rc = -EAGAIN;
		goto out;
	}
	/* a container ID as a runtime makes one: unique per pod and node */
	snprintf(o->container_id, sizeof(o->container_id), "hollow-%s-%s-%s", a->o.node, ns, name);
	snprintf(o->ifname, sizeof(o->ifname), "eth0");
	snprintf(o->pod_namespace, sizeof(o->pod_namespace), "%s", ns);
	snprintf(o->pod_name, sizeof(o->pod_name), "%s", name);
	pod_host_ifname(o->container_id, o->ifname, o->host_ifname);
	rc = ipam_alloc(a->ipam, o, &ip);
	if (rc < 0)
		goto out;
	pthread_mutex_lock(&a->lock);
	ep.ifindex = ++a->hollow_ifindex;
	pthread_mutex_unlock(&a->lock);
	memcpy(ep.gw_mac, hollow_gw_mac, 6);
	pod_mac_from_ip(ip, ep.pod_mac);
	rc = pod_maps_write(a, o, ip, &ep);
	if (rc < 0) {
		(void)datapath_endpoint_del(a->dp, ip);
		(void)datapath_ipcache_del(a->dp, ip);
		policy_local_del(a->policy, ip);
		(void)ipam_release_ip(a->ipam, ip);
		goto out;
	}
	report_kick(a);
	*ip_out = ip;
out:
	free(o);
	return rc;
}

int hollow_pod_del(struct agent *a, in_addr_t ip)
{
	int rc = ipam_release_ip(a->ipam, ip);

	if (rc < 0)
		return rc;
	(void)datapath_endpoint_del(a->dp, ip);
	(void)datapath_ipcache_del(a->dp, ip);
	policy_local_del(a->policy, ip);
	sync_policy_kick(a);
	report_kick(a);
	return 0;
}
