/*
 * forward.h — the last step both programs share: deliver an IPv4 packet to
 * a pod on this node.
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

#endif
