/*
 * svc_egress.bpf.c — tc egress on the node's service device (weft_svc, a
 * dummy, or an ifb on a kernel without the dummy driver): the node's own
 * connections to cluster IPs and LoadBalancer VIPs.
 *
 * Pods' connections to services are translated by pod_ingress before the
 * kernel routes them, outside clients' by node_ingress; a socket of the
 * node's own stack (the node itself, a host-network pod) has no program on
 * its path.  So the agent routes the service network and every VIP network
 * to this device, source the node's gateway address:
 *
 *	172.30.0.0/16 dev weft_svc src <gateway>	(serviceNetwork)
 *	<VIP network> dev weft_svc src <gateway>	(each of vipNetworks)
 *
 * and everything the stack sends there passes this program and never
 * reaches the device itself (it would discard it).  The device is NOARP,
 * so the neighbour layer gives each frame the device's own MAC as source
 * and destination: swapped for a refusal, they still address it.
 *
 *	frame the stack sends to the service device
 *	  │
 *	  ├─ config not complete ─────────────────────────── drop NOT_READY
 *	  ├─ not IPv4 ────────────────────────────────────── drop UNSUPPORTED_L3
 *	  ├─ malformed ───────────────────────────────────── drop MALFORMED
 *	  ├─ not TCP/UDP (ping, a later fragment), or the
 *	  │  source is not the gateway (forwarded: an outside
 *	  │  client, a pod's packet to no frontend; or a
 *	  │  socket bound to another address) ────────────── drop NO_SERVICE
 *	  ├─ lb_forward(LB_FROM_HOST) (lib/lb.h: conntrack, as for a pod)
 *	  │   ├─ no frontend for address, port, protocol ─── drop NO_SERVICE
 *	  │   ├─ frontend without (local) backends ───────── TCP RST / ICMP port
 *	  │   │                                               unreachable, into the
 *	  │   │                                               stack (ingress here)
 *	  │   ├─ backend outside the pod network ─────────── count EXTERNAL_BACKEND,
 *	  │   │                                               then refused as above
 *	  │   └─ translated (FWD/REV with WEFT_CT_F_HOST)
 *	  │       ├─ backend a pod here ──────────────────── MACs gw → pod,
 *	  │       │                                           bpf_redirect(its veth)
 *	  │       ├─ backend on another node ─── tunnel key (VNI 0, the node's:
 *	  │       │                              global) ──── bpf_redirect(VXLAN)
 *	  │       └─ backend in this node's subnet, no pod ── drop NO_ENDPOINT
 *	  └─ (a drop reason from lb_forward: CT_FULL, SERVICE_MAP)
 *
 * The answers: the backend answers the gateway.  A pod here sends it into
 * pod_ingress, a pod elsewhere over the tunnel into vxlan_ingress; both
 * translate it back first (lb_reverse: source := the frontend), see
 * WEFT_CT_F_HOST and hand it to the stack through the ingress of this
 * device (lib/forward.h, to_host(); map weft_svc_dev), addressed to its
 * MAC, where rp_filter finds the frontend's route.  The node's socket sees the
 * frontend it connected to, and so does its conntrack entry.
 *
 * Decisions:
 *  - Only packets from the gateway address are translated: that is the
 *    source the route gives a socket that does not choose one, and no
 *    forwarded packet can carry it (the stack drops local sources arriving
 *    from elsewhere, pod_ingress a pod's spoofed one).  Cluster IPs stay
 *    unreachable from outside the cluster, even through a node.
 *  - The node is a client like a pod (scope ALL; internalTrafficPolicy
 *    Local means this node's backends), but only pods can be its backends:
 *    a host-network or hand-written endpoint outside the pod network would
 *    answer the gateway on a path no program sees (this node's loopback,
 *    or another node's stack and masquerade), and the socket would wait for
 *    an answer that never matches.  Such a connection is refused at once
 *    and counted (external-backend), never left hanging.
 *  - A destination that is no frontend (an unallocated or deleted cluster
 *    IP, another port) is dropped and counted (no-service), as a cluster
 *    IP that no rule matches is on kube-proxy's nodes.
 *  - The node's packets are sent, not forwarded: TTL kept.
 *
 * Invariants: as pod_ingress.bpf.c 1 (nothing is translated while the
 * config is incomplete: the stack then reaches no cluster IP) and 3; the
 * device never gets a frame (every verdict is a redirect or a drop).
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/eth.h"
#include "lib/forward.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/reject.h"
#include "lib/trace.h"

/* Refuse the node's connection t: the answer goes back into the stack
 * through this device.  reason: counted first when not NONE. */
static __always_inline int refuse(struct __sk_buff *skb, const struct l4_tuple *t, __u32 reason)
{
	if (reason != WEFT_DROP_NONE)
		count_drop(reason);
	return reject_connection_via(skb, t, BPF_F_INGRESS);
}

static __always_inline int svc_egress_run(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	const struct weft_node_entry *node;
	const struct weft_endpoint *ep;
	struct l4_tuple t;
	__u16 ct_flags = 0;
	struct ethhdr *eth;
	struct iphdr *ip;
	int rc;

	trace_begin(skb);
	if (!cfg)
		return drop(WEFT_DROP_NOT_READY);
	eth = eth_header(skb);
	if (!eth)
		return drop(WEFT_DROP_MALFORMED);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return drop(WEFT_DROP_UNSUPPORTED_L3);
	if (ipv4_frame(skb, &eth, &ip) < 0)
		return drop(WEFT_DROP_MALFORMED);
	rc = l4_tuple_read(skb, ip, &t);
	if (rc < 0)
		return drop(WEFT_DROP_MALFORMED);
	if (rc == 0 || t.saddr != cfg->gateway_ip)
		return drop(WEFT_DROP_NO_SERVICE);

	rc = lb_forward(skb, cfg, &t, LB_FROM_HOST, NULL, &ct_flags);
	if (rc == LB_NONE)
		return drop(WEFT_DROP_NO_SERVICE);
	if (rc < 0)
		return drop(-rc);
	if (rc == LB_REJECT)
		return refuse(skb, &t, WEFT_DROP_NONE);
	if (rc == LB_REFUSE)
		return refuse(skb, &t, WEFT_DROP_EXTERNAL_BACKEND);

	/* the rewrite may have moved the data */
	if (ipv4_frame(skb, &eth, &ip) < 0)
		return drop(WEFT_DROP_MALFORMED);
	ep = endpoint_lookup(ip->daddr);
	if (ep)
		return send_to_pod(skb, eth, ep);
	node = node_lookup(ip->daddr);
	if (node && node->node_ip != cfg->node_ip)
		return tunnel_redirect(skb, cfg, node->node_ip, 0);
	return drop(WEFT_DROP_NO_ENDPOINT);	/* a pod here that is gone */
}

SEC("tc")
int svc_egress(struct __sk_buff *skb)
{
	return flow_end(skb, svc_egress_run(skb), WEFT_FROM_HOST_SVC);
}

char LICENSE[] SEC("license") = "GPL";
