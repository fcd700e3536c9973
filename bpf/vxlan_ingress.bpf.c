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
 *	  ├─ outer source not in weft_node_ips ────────── drop UNKNOWN_NODE
 *	  ├─ ARP ──────────────────────────────────────── drop ARP
 *	  ├─ IPv4
 *	  │   ├─ malformed ────────────────────────────── drop MALFORMED
 *	  │   ├─ ICMP error whose quote does not fit ──────── drop ICMP_TRUNCATED
 *	  │   ├─ ICMP error not about a packet its sender
 *	  │   │  received (lib/icmp.h, rules 1-3) ────────── drop ICMP_FORGED
 *	  │   ├─ TCP/UDP answering a connection this node
 *	  │   │  translated (REV, lib/lb.h), a backend's ICMP
 *	  │   │  error about one (lib/icmp.h), or a later
 *	  │   │  fragment of such an answer (lib/frag.h,
 *	  │   │  weft_rev_frags) ── source := frontend
 *	  │   │   ├─ the client is outside ────────────── redirect_neigh(underlay)
 *	  │   │   └─ ──────────────────────────────────── on below
 *	  │   ├─ destination a pod here
 *	  │   │   ├─ VNID rule (VNI vs the pod's) refuses ─ drop ISOLATED
 *	  │   │   ├─ the pod's ingress policy denies
 *	  │   │   │  (lib/policy.h; not for answers and
 *	  │   │   │  later fragments) ───────────────────── drop POLICY_DENIED_INGRESS
 *	  │   │   └─ ──────────────────────────────────── bpf_redirect_peer(pod)
 *	  │   ├─ destination the gateway (a remote pod
 *	  │   │  answering this node)
 *	  │   │   ├─ UDP to the VXLAN port ────────────── drop TUNNEL_INJECT
 *	  │   │   ├─ the answer to the node's own connection
 *	  │   │   │  (REV, WEFT_CT_F_HOST) ──────────── redirect: ingress of
 *	  │   │   │                                   the service device
 *	  │   │   └─ ──────────────────────────────────── TC_ACT_OK (stack)
 *	  │   └─ anything else ────────────────────────── drop NO_ENDPOINT
 *	  └─ anything else ────────────────────────────── drop UNSUPPORTED_L3
 *
 * Trust: the VNI is the sending pod's VNID only if a node's pod_ingress
 * set it, so the outer source must be a node of the cluster (weft_node_ips,
 * checked for every VNI, 0 included: VNI 0 is the most privileged).  The
 * rest of the underlay could otherwise reach any pod with any tenant.
 *
 * Services: the node that translated a connection (the client's) keeps
 * its conntrack, so a backend on another node answers over the tunnel to
 * here, and the answer is translated back (source := the frontend) before
 * the tenant check, which compares the backend's VNID (the VNI) with the
 * client pod's.  An answer too large for one packet comes fragmented, and
 * only its first fragment has the ports the conntrack lookup needs: the
 * translation of a first fragment is recorded (weft_rev_frags, under the
 * backend's address) and its later fragments get the same one.  A later
 * fragment without a record passes as it came (pod-to-pod fragments
 * between nodes: the sender's node judged their first fragment and
 * bounded its open datagrams); this path drops no fragment for want of a
 * record or a slot.
 *
 * ICMP errors were judged on the sender's node (pod_ingress); the same
 * rules (lib/icmp.h: the quoted destination is the sender, the error goes
 * back to the quoted source, the VNID rule between the quoted source and
 * the sender, whose VNID is the VNI) are checked again here, before the
 * translation, so that nothing but a genuine error is ever turned into
 * one from a frontend.  Every error a node's pod_ingress lets through
 * passes them again: a pod's error crosses the tunnel only towards the
 * pod or gateway it quotes as source.
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
#include "lib/frag.h"
#include "lib/icmp.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/policy.h"
#include "lib/tenant.h"
#include "lib/trace.h"

/* An answer to a connection this node translated, a backend's ICMP error
 * about one, or a later fragment of such an answer: back to the frontend
 * (an ICMP error judged first, vnid its sender's).  LB_NONE (not one of them: untouched),
 * LB_DONE (*ct_flags the connection's) or a negative drop reason.
 * Invalidates packet pointers. */
static __always_inline int translate_back(struct __sk_buff *skb, const struct iphdr *ip,
					  const struct frag_id *fr, __u32 vnid, __u16 *ct_flags)
{
	struct icmp_error e;
	struct l4_tuple t;
	int rc;

	if (fr->kind == FRAG_LATER) {
		rc = frag_follow(&weft_rev_frags, skb, fr, ip, ct_flags);
		return rc > 0 ? LB_DONE : rc < 0 ? rc : LB_NONE;
	}
	if (ip->protocol == IPPROTO_ICMP) {
		rc = icmp_error_read(skb, ip, &e);
		if (rc <= 0)
			return rc;	/* not an error (LB_NONE), or truncated */
		if (icmp_error_check(&e, ip, vnid) != WEFT_DROP_NONE)
			return -WEFT_DROP_ICMP_FORGED;
		return icmp_error_translate(skb, &e, ip, ct_flags);
	}
	rc = l4_tuple_read(skb, ip, &t);
	if (rc <= 0)
		return rc < 0 ? -WEFT_DROP_MALFORMED : LB_NONE;
	return lb_reverse(skb, &t, ct_flags);
}

/* NetworkPolicy on a packet from another node to ep, a pod here: the
 * pod's ingress rules (lib/policy.h). */
static __always_inline __u32 ingress_verdict(struct __sk_buff *skb, const struct weft_config *cfg,
					     const struct iphdr *ip, const struct weft_endpoint *ep)
{
	struct policy_flow f;

	if (policy_flow_read(skb, ip, &f) < 0)
		return WEFT_DROP_MALFORMED;
	if (ip->protocol == IPPROTO_ICMP && icmp_is_error(skb, ip))
		return WEFT_DROP_NONE;	/* checked above: about a packet its sender got */
	return policy_check(cfg, NULL, ep, &f, 1);
}

static __always_inline int deliver_ipv4(struct __sk_buff *skb, const struct weft_config *cfg,
					const struct bpf_tunnel_key *key)
{
	const struct weft_endpoint *ep;
	struct frag_id fr;
	__u16 ct_flags = 0;
	struct ethhdr *eth;
	struct iphdr *ip;
	__u32 reason;
	int rc;

	if (ipv4_frame(skb, &eth, &ip) < 0)
		return drop_tunnel(WEFT_DROP_MALFORMED, key->tunnel_id, key->remote_ipv4);

	frag_identify(ip, &fr);
	rc = translate_back(skb, ip, &fr, key->tunnel_id, &ct_flags);
	if (rc < 0)
		return drop_tunnel(-rc, key->tunnel_id, key->remote_ipv4);
	if (rc == LB_DONE) {
		if (ipv4_frame(skb, &eth, &ip) < 0)
			return drop_tunnel(WEFT_DROP_MALFORMED, key->tunnel_id, key->remote_ipv4);
		/* a first fragment translated: its later ones will follow it */
		frag_note_first(&weft_rev_frags, &fr, ip, ct_flags);
		if (ct_flags & WEFT_CT_F_EXTERNAL)
			return to_underlay(skb, ip, cfg);
	}

	ep = endpoint_lookup(ip->daddr);
	if (ep) {
		if (!vnid_allowed(key->tunnel_id, ep->vnid))
			return drop_tunnel(WEFT_DROP_ISOLATED, key->tunnel_id, key->remote_ipv4);
		/* the pod's ingress policy, unless the packet answers a
		 * connection translated here or is a later fragment (its
		 * first one was judged) */
		if (rc != LB_DONE && fr.kind != FRAG_LATER) {
			reason = ingress_verdict(skb, cfg, ip, ep);
			if (reason != WEFT_DROP_NONE)
				return drop_tunnel(reason, key->tunnel_id, key->remote_ipv4);
		}
		return deliver_to_pod(skb, eth, ip, ep, key->tunnel_id, key->remote_ipv4);
	}

	if (ip->daddr == cfg->gateway_ip) {
		reason = tunnel_inject_check(skb, ip, cfg);
		if (reason != WEFT_DROP_NONE)
			return drop_tunnel(reason, key->tunnel_id, key->remote_ipv4);
		if (ct_flags & WEFT_CT_F_HOST)	/* answering the node's own connection */
			return to_host(skb, eth, key->tunnel_id, key->remote_ipv4);
		bpf_skb_change_type(skb, PACKET_HOST);
		return pass(key->tunnel_id, key->remote_ipv4);
	}
	return drop_tunnel(WEFT_DROP_NO_ENDPOINT, key->tunnel_id, key->remote_ipv4);
}

static __always_inline int vxlan_ingress_run(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	struct bpf_tunnel_key key = {};
	struct ethhdr *eth;

	trace_begin(skb);
	if (!cfg)
		return pass(0, 0);
	if (tracing()) {	/* a test run has no tunnel metadata */
		key.tunnel_id = skb->cb[0];
		key.remote_ipv4 = skb->cb[1];
	} else if (bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) < 0) {
		return drop(WEFT_DROP_TUNNEL_KEY);
	}

	if (!node_ip_known(bpf_htonl(key.remote_ipv4)))
		return drop_tunnel(WEFT_DROP_UNKNOWN_NODE, key.tunnel_id, key.remote_ipv4);

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

SEC("tc")
int vxlan_ingress(struct __sk_buff *skb)
{
	return flow_end(skb, vxlan_ingress_run(skb), WEFT_FROM_TUNNEL);
}

char LICENSE[] SEC("license") = "GPL";
