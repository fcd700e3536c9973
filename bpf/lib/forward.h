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
 *
 * The node's own packets (svc_egress, tc egress of the service device)
 * are not forwarded but sent: their TTL stays, as on the kernel's routes
 * to pods.  redirect_peer works only at tc ingress, so a pod here gets
 * them by a redirect to the host end of its veth (egress: the pod's
 * stack classifies the frame against its own MAC, PACKET_HOST).
 *
 * Answers to the node's own connections (WEFT_CT_F_HOST) enter the node's
 * stack through the service device (to_host): the reverse path of their
 * source, a cluster IP or VIP, is that device, so strict rp_filter
 * accepts them, whatever device they arrived on.
 */
#ifndef WEFT_BPF_LIB_FORWARD_H
#define WEFT_BPF_LIB_FORWARD_H

#include "common.h"
#include "eth.h"
#include "ipv4.h"
#include "maps.h"
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

/* Set the tunnel key (remote node_ip, id vnid) and redirect to the VXLAN
 * device, which (collect-metadata mode) encapsulates with it. */
static __always_inline int tunnel_redirect(struct __sk_buff *skb, const struct weft_config *cfg,
					   __be32 node_ip, __u32 vnid)
{
	struct bpf_tunnel_key key = {};
	__u32 ifindex = cfg->vxlan_ifindex;

	key.remote_ipv4 = bpf_ntohl(node_ip);
	key.tunnel_id = vnid;
	key.tunnel_ttl = cfg->tunnel_ttl ? cfg->tunnel_ttl : WEFT_TUNNEL_TTL_DEFAULT;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0) < 0)
		return drop_tunnel(WEFT_DROP_TUNNEL_KEY, key.tunnel_id, key.remote_ipv4);
	trace_verdict(WEFT_ACT_TUNNEL, WEFT_DROP_NONE, ifindex, key.tunnel_id, key.remote_ipv4);
	return bpf_redirect(ifindex, 0);
}

/* To a pod of another node over VXLAN; vnid is the sender's (the
 * receiving node checks it; 0 for traffic this node sends on behalf of an
 * outside client, or of its own stack). */
static __always_inline int tunnel_to(struct __sk_buff *skb, struct iphdr *ip,
				     const struct weft_config *cfg, __be32 node_ip, __u32 vnid)
{
	if (ip->ttl <= 1)
		return drop_tunnel(WEFT_DROP_TTL, vnid, bpf_ntohl(node_ip));
	if (ipv4_ttl_decrement(skb, ip) < 0)
		return drop_tunnel(WEFT_DROP_MALFORMED, vnid, bpf_ntohl(node_ip));
	return tunnel_redirect(skb, cfg, node_ip, vnid);
}

/* The node's own packet (svc_egress) to a pod here: addressed as a router
 * would (source the pod's gateway, destination the pod), out of the host
 * end of its veth, TTL kept. */
static __always_inline int send_to_pod(struct __sk_buff *skb, struct ethhdr *eth,
				       const struct weft_endpoint *ep)
{
	__u32 ifindex = ep->ifindex;

	eth_rewrite(eth, ep->gw_mac, ep->pod_mac);
	trace_verdict(WEFT_ACT_LOCAL, WEFT_DROP_NONE, ifindex, 0, 0);
	return bpf_redirect(ifindex, 0);
}

/* An answer to the node's own connection (its REV entry has
 * WEFT_CT_F_HOST; source already the frontend): into the node's stack
 * through the service device (weft_svc_dev), the frame addressed to it.
 * tunnel_id and tunnel_remote only go to the trace.  Without a service
 * device recorded (an agent that has not set it up yet) the stack gets it
 * where it is. */
static __always_inline int to_host(struct __sk_buff *skb, struct ethhdr *eth,
				   __u32 tunnel_id, __u32 tunnel_remote)
{
	const struct weft_svc_dev *dev = svc_dev_lookup();
	__u32 ifindex;

	bpf_skb_change_type(skb, PACKET_HOST);
	if (!dev)
		return pass(tunnel_id, tunnel_remote);
	ifindex = dev->ifindex;
	eth_rewrite(eth, dev->mac, dev->mac);
	trace_verdict(WEFT_ACT_HOST, WEFT_DROP_NONE, ifindex, tunnel_id, tunnel_remote);
	return bpf_redirect(ifindex, BPF_F_INGRESS);
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
