/*
 * remote.c — the addresses of other nodes in weft_ipcache: the pods the
 * watches brought (the PodPeerSlices, while a policy names pods as peers:
 * peerslice.c) and the service backends the EndpointSlices name
 * (service.c counts them, backend_addrs.h).  For one address the order
 * is: a local lease's entry is pod.c's and never touched here; else a
 * watched pod's (node IP by subnet, VNID of its namespace); else a
 * backend's (the same, VNID of the namespace its slice gives); else
 * none.
 *
 * Every entry point runs under agent.lock (the watch threads).  Nothing
 * here walks what grows with the cluster per event: addresses are looked
 * up in the pod cache's and the backend table's indexes; only a
 * NetNamespace change or a list walks the remote backends.
 */
#include <arpa/inet.h>
#include <string.h>

#include "agent/agent.h"

in_addr_t remote_node_ip(struct agent *a, in_addr_t ip)
{
	uint32_t h = ntohl(ip);
	const struct nodecache_node *n = nodecache_containing(&a->nodes, h);

	if (n)
		return n->ip;
	if (cidr_contains_ip(&a->subnet, h))
		return a->node_ip;
	return 0;
}

uint32_t remote_vnid_of(struct agent *a, const char *ns)
{
	uint32_t vnid;

	return podcache_vnid(&a->pods, ns, &vnid) ? vnid : AGENT_VNID_UNKNOWN;
}

static bool is_local_lease(struct agent *a, in_addr_t ip)
{
	struct ipam_lease l;

	return ipam_find_ip(a->ipam, ip, &l) == 0;
}

/* The entry of ip on another node: node IP by its subnet, VNID vnid. */
static void put(struct agent *a, in_addr_t ip, uint32_t vnid)
{
	struct weft_ipcache_entry e = { .vnid = vnid };

	e.node_ip = remote_node_ip(a, ip);
	if (!e.node_ip || e.node_ip == a->node_ip)
		return;		/* no node's yet, or local pods: from the leases */
	(void)policy_ipcache_write(a->policy, ip, &e);
}

void remote_pod_program(struct agent *a, const struct podcache_pod *p)
{
	if (p->ip)
		put(a, p->ip, p->ns->netns ? p->ns->vnid : AGENT_VNID_UNKNOWN);
}

static void backend_program(struct agent *a, const struct backend_addr *b)
{
	put(a, b->ip, remote_vnid_of(a, b->ns));
}

void remote_release(struct agent *a, in_addr_t ip, const struct podcache_pod *leaving)
{
	const struct backend_addr *b;

	if (!ip || is_local_lease(a, ip))
		return;
	for (const struct podcache_pod *q = podcache_by_ip(&a->pods, ip); q; q = podcache_next_ip(q))
		if (q != leaving) {
			remote_pod_program(a, q);
			return;
		}
	b = backend_addrs_find(&a->backends, ip);
	if (b)
		backend_program(a, b);
	else
		(void)datapath_ipcache_del(a->dp, ip);
}

int remote_backend_ref(struct agent *a, in_addr_t ip, const char *ns)
{
	bool first;
	int rc = backend_addrs_ref(&a->backends, ip, ns, &first);

	if (rc == 0 && first && !podcache_by_ip(&a->pods, ip))
		backend_program(a, backend_addrs_find(&a->backends, ip));
	return rc;
}

void remote_backend_unref(struct agent *a, in_addr_t ip)
{
	if (backend_addrs_unref(&a->backends, ip) && !podcache_by_ip(&a->pods, ip) &&
	    !is_local_lease(a, ip))
		(void)datapath_ipcache_del(a->dp, ip);
}

void remote_backends_program(struct agent *a, const char *ns)
{
	for (const struct backend_addr *b = backend_addrs_first(&a->backends); b;
	     b = backend_addrs_next(&a->backends, b))
		if ((!ns || strcmp(b->ns, ns) == 0) && !podcache_by_ip(&a->pods, b->ip))
			backend_program(a, b);
}

/* By their IPs when s holds fewer addresses than the table holds
 * records (a node's /23: 512 lookups, whatever the cluster's size), else
 * by a walk. */
void remote_program_in(struct agent *a, const struct cidr *s)
{
	uint64_t size = cidr_size(s);
	const struct podcache_pod *p;
	const struct backend_addr *b;

	if (size <= podcache_count(&a->pods)) {
		for (uint64_t i = 0; i < size; i++)
			for (p = podcache_by_ip(&a->pods, htonl(s->addr + (uint32_t)i)); p; p = podcache_next_ip(p))
				remote_pod_program(a, p);
	} else {
		for (p = podcache_first(&a->pods); p; p = podcache_next(&a->pods, p))
			if (p->ip && cidr_contains_ip(s, ntohl(p->ip)))
				remote_pod_program(a, p);
	}
	/* and the service backends there that no pod of the watch covers */
	if (size <= backend_addrs_count(&a->backends)) {
		for (uint64_t i = 0; i < size; i++) {
			in_addr_t ip = htonl(s->addr + (uint32_t)i);

			if (!backend_addrs_in_block(&a->backends, ip)) {
				i |= 255;	/* the rest of this /24 (s is aligned: all of it, or to its end) */
				continue;
			}
			if ((b = backend_addrs_find(&a->backends, ip)) && !podcache_by_ip(&a->pods, ip))
				backend_program(a, b);
		}
		return;
	}
	for (b = backend_addrs_first(&a->backends); b; b = backend_addrs_next(&a->backends, b))
		if (cidr_contains_ip(s, ntohl(b->ip)) && !podcache_by_ip(&a->pods, b->ip))
			backend_program(a, b);
}

bool remote_keeps(struct agent *a, in_addr_t ip)
{
	return podcache_by_ip(&a->pods, ip) || backend_addrs_find(&a->backends, ip);
}
