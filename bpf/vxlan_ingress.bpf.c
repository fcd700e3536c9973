/*
 * vxlan_ingress.bpf.c — tc ingress on the node's VXLAN device (external,
 * i.e. collect-metadata, mode): every packet another node tunnels to this
 * one, already decapsulated; the outer header survives as the tunnel key
 * (remote = the sending node, id = the sending pod's VNID).
 *
 *	decapsulated packet
 *	  │
 *	  ├─ config not complete ──────────────────────── TC_ACT_OK (stack)
 *	  ├─ no tunnel key ────────────────────────────── drop TUNNEL_KEY
 *	  ├─ [later: outer source no known node ───────── drop UNKNOWN_NODE]
 *	  ├─ ARP ──────────────────────────────────────── drop ARP
 *	  ├─ IPv4
 *	  │   ├─ malformed ────────────────────────────── drop MALFORMED
 *	  │   ├─ destination a pod here ── [later: tenant
 *	  │   │  and ingress policy] ──────────────────── bpf_redirect_peer(pod)
 *	  │   ├─ destination the gateway (a remote pod
 *	  │   │  answering this node) ─────────────────── TC_ACT_OK (stack)
 *	  │   └─ anything else ────────────────────────── drop NO_ENDPOINT
 *	  └─ anything else ────────────────────────────── drop UNSUPPORTED_L3
 *
 * Nobody sends ARP over the tunnel (pod_ingress answers every pod's ARP on
 * its own node), so ARP here is noise or an attack.
 *
 * pkt_type: the inner destination MAC is the sending pod's gateway, not
 * this device's address, so the kernel marked the frame PACKET_OTHERHOST;
 * packets this program hands on are set to PACKET_HOST (forward.h, and
 * before TC_ACT_OK, or ip_rcv() would drop them).
 *
 * Invariants: as pod_ingress.bpf.c 1-3; and a packet is delivered only to
 * a pod of this node or to the gateway address, never routed onwards.
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/eth.h"
#include "lib/forward.h"
#include "lib/ipv4.h"
#include "lib/maps.h"
#include "lib/trace.h"

static __always_inline int deliver_ipv4(struct __sk_buff *skb, const struct weft_config *cfg,
					const struct bpf_tunnel_key *key)
{
	const struct weft_endpoint *ep;
	struct ethhdr *eth;
	struct iphdr *ip;

	if (skb_linearize_head(skb, IPV4_FRAME_MIN) < 0)
		return drop_tunnel(WEFT_DROP_MALFORMED, key->tunnel_id, key->remote_ipv4);
	eth = eth_header(skb);
	ip = ipv4_header(skb);
	if (!eth || !ip)
		return drop_tunnel(WEFT_DROP_MALFORMED, key->tunnel_id, key->remote_ipv4);

	/* Later: source VNID = key->tunnel_id; tenant check and ingress
	 * policy for the destination pod go here. */
	ep = endpoint_lookup(ip->daddr);
	if (ep)
		return deliver_to_pod(skb, eth, ip, ep, key->tunnel_id, key->remote_ipv4);

	if (ip->daddr == cfg->gateway_ip) {
		bpf_skb_change_type(skb, PACKET_HOST);
		return pass(key->tunnel_id, key->remote_ipv4);
	}
	return drop_tunnel(WEFT_DROP_NO_ENDPOINT, key->tunnel_id, key->remote_ipv4);
}

SEC("tc")
int vxlan_ingress(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	struct bpf_tunnel_key key = {};
	struct ethhdr *eth;

	if (!cfg)
		return pass(0, 0);
	if (bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) < 0)
		return drop(WEFT_DROP_TUNNEL_KEY);

	/* Later: key.remote_ipv4 must be a known node's IP, else
	 * drop_tunnel(WEFT_DROP_UNKNOWN_NODE, ...). */

	eth = eth_header(skb);
	if (!eth)
		return drop_tunnel(WEFT_DROP_MALFORMED, key.tunnel_id, key.remote_ipv4);
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		return drop_tunnel(WEFT_DROP_ARP, key.tunnel_id, key.remote_ipv4);
	case bpf_htons(ETH_P_IP):
		return deliver_ipv4(skb, cfg, &key);
	default:
		return drop_tunnel(WEFT_DROP_UNSUPPORTED_L3, key.tunnel_id, key.remote_ipv4);
	}
}

char LICENSE[] SEC("license") = "GPL";
