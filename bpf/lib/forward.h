/*
 * forward.h — the last steps the programs share: deliver an IPv4 packet to
 * a pod on this node, tunnel it to another node, or send it out of the
 * underlay device to a client outside the cluster.
 *
 * The packet leaves as a router would send it: TTL one less, Ethernet
 * source the pod's gateway (the host end of its veth), destination the
 * pod.  bpf_redirect_peer() then hands it straight to the ingress of the
 * pod's eth0 inside the pod's namespace, skipping the host end's backlog.
 *
 * pkt_type: the kernel classified the frame against the MAC of the device
 * it arrived on (on the VXLAN device the inner destination is the sending
 * node's gateway MAC, so PACKET_OTHERHOST), and redirect_peer keeps that
 * classification; ip_rcv() in the pod drops anything but PACKET_HOST.
 * The frame is now addressed to the pod, so say so.
 */
#ifndef WEFT_BPF_LIB_FORWARD_H
#define WEFT_BPF_LIB_FORWARD_H

#include "common.h"
#include "eth.h"
#include "ipv4.h"
#include "trace.h"

/* eth and ip point into skb; ep is the destination pod.  tunnel_id and
 * tunnel_remote only go to the trace (0 when the packet came from a pod).
 * Returns the tc verdict. */
static __always_inline int deliver_to_pod(struct __sk_buff *skb, struct ethhdr *eth,
					  struct iphdr *ip, const struct weft_endpoint *ep,
					  __u32 tunnel_id, __u32 tunnel_remote)
{
	__u32 ifindex = ep->ifindex;

	if (ip->ttl <= 1)
		return drop_tunnel(WEFT_DROP_TTL, tunnel_id, tunnel_remote);
	eth_rewrite(eth, ep->gw_mac, ep->pod_mac);
	if (ipv4_ttl_decrement(skb, ip) < 0)
		return drop_tunnel(WEFT_DROP_MALFORMED, tunnel_id, tunnel_remote);
	bpf_skb_change_type(skb, PACKET_HOST);
	trace_verdict(WEFT_ACT_LOCAL, WEFT_DROP_NONE, ifindex, tunnel_id, tunnel_remote);
	return bpf_redirect_peer(ifindex, 0);
}

/* To a pod of another node over VXLAN: the VXLAN device (collect-metadata
 * mode) encapsulates with the key set here; vnid is the sender's (the
 * receiving node checks it; 0 for traffic this node sends on behalf of an
 * outside client). */
static __always_inline int tunnel_to(struct __sk_buff *skb, struct iphdr *ip,
				     const struct weft_config *cfg, __be32 node_ip, __u32 vnid)
{
	struct bpf_tunnel_key key = {};
	__u32 ifindex = cfg->vxlan_ifindex;

	key.remote_ipv4 = bpf_ntohl(node_ip);
	key.tunnel_id = vnid;
	key.tunnel_ttl = cfg->tunnel_ttl ? cfg->tunnel_ttl : WEFT_TUNNEL_TTL_DEFAULT;
	if (ip->ttl <= 1)
		return drop_tunnel(WEFT_DROP_TTL, key.tunnel_id, key.remote_ipv4);
	if (ipv4_ttl_decrement(skb, ip) < 0)
		return drop_tunnel(WEFT_DROP_MALFORMED, key.tunnel_id, key.remote_ipv4);
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0) < 0)
		return drop_tunnel(WEFT_DROP_TUNNEL_KEY, key.tunnel_id, key.remote_ipv4);
	trace_verdict(WEFT_ACT_TUNNEL, WEFT_DROP_NONE, ifindex, key.tunnel_id, key.remote_ipv4);
	return bpf_redirect(ifindex, 0);
}

/* To a client outside the cluster (the answer of a NodePort or VIP
 * connection, its source already the frontend): out of the underlay
 * device, next hop and MACs from the kernel's FIB and neighbours.  Not
 * through the stack: the source is this node's own address, which the
 * stack would take for a martian, and masquerade must not touch it. */
static __always_inline int to_underlay(struct __sk_buff *skb, struct iphdr *ip,
				       const struct weft_config *cfg)
{
	__u32 ifindex = cfg->underlay_ifindex;

	if (ip->ttl <= 1)
		return drop(WEFT_DROP_TTL);
	if (ipv4_ttl_decrement(skb, ip) < 0)
		return drop(WEFT_DROP_MALFORMED);
	trace_verdict(WEFT_ACT_UNDERLAY, WEFT_DROP_NONE, ifindex, 0, 0);
	return bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

#endif
