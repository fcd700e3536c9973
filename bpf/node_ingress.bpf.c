/*
 * node_ingress.bpf.c — tc ingress on the node's underlay device (the one
 * holding its node IP): NodePorts and LoadBalancer VIPs for clients
 * outside the cluster.
 *
 *	packet arriving on the underlay
 *	  │
 *	  ├─ config not complete, not IPv4 ─────────────── TC_ACT_OK (stack)
 *	  ├─ a later fragment of a datagram whose first
 *	  │  fragment was translated here (lib/frag.h,
 *	  │  weft_rev_frags) ── the same rewrite ─────────── on as below (by
 *	  │                                                   its new destination)
 *	  ├─ not TCP/UDP, or a later fragment of another ─ TC_ACT_OK (stack)
 *	  ├─ UDP to the VXLAN port (the overlay) ────────── TC_ACT_OK
 *	  ├─ the answer of a backend outside the cluster
 *	  │  to a connection SNATed here (REV) ─── source := frontend,
 *	  │                                 destination := client ─ redirect_neigh
 *	  ├─ no frontend (node IP + NodePort, or a VIP) ─── TC_ACT_OK
 *	  ├─ frontend without backends
 *	  │   ├─ externalTrafficPolicy Local, backends
 *	  │   │  only elsewhere ───────────────────────────── drop NO_BACKEND
 *	  │   └─ ─────────────────────────────────────────── TCP RST / ICMP unreachable
 *	  └─ translated (lib/lb.h; conntrack on this node)
 *	      ├─ backend a pod here ──────────────────────── bpf_redirect_peer(pod),
 *	      │                                               client IP kept
 *	      ├─ backend on another node ──── SNAT to this node's gateway,
 *	      │                               tunnel key (VNI 0) ─ bpf_redirect(VXLAN)
 *	      ├─ backend in this node's subnet, no pod ─────── drop NO_ENDPOINT
 *	      └─ backend outside the pod network ── SNAT to this node's IP
 *	                                             ─────────── redirect_neigh(underlay)
 *
 * The answers come back translated by pod_ingress (backend here) or
 * vxlan_ingress (backend elsewhere, answering the gateway) and leave
 * through this device with bpf_redirect_neigh, source the frontend.
 *
 * Fragments: only a datagram's first fragment has the ports that find its
 * frontend or its conntrack entry.  When a first fragment is translated
 * (an outside client's datagram to a NodePort or VIP, or a backend
 * outside the cluster answering one SNATed here), what it became is
 * recorded under its sender's address (weft_rev_frags, as vxlan_ingress
 * and pod_egress do) and the later fragments get the same rewrite and go
 * where it went; otherwise they would wait in this node's reassembly
 * memory for a first fragment that went elsewhere.  A later fragment of
 * anything else goes to the stack as before (it may be the node's own).
 *
 * Cost for everything else: the overlay's own packets return after the
 * config lookup and the UDP port; other packets after one or two hash
 * lookups (a miss).
 *
 * Invariants: as pod_ingress.bpf.c 1-3.  Cluster IPs are not reachable
 * from outside (only frontends flagged LOAD_BALANCER, and NodePorts of
 * this node's IP); the tenant rule does not apply (a VIP or NodePort is
 * published to everyone, VNID 0 on the tunnel).
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/eth.h"
#include "lib/forward.h"
#include "lib/frag.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/reject.h"
#include "lib/tenant.h"
#include "lib/trace.h"

/* A translated packet (or a later fragment given its first's rewrite) on
 * to where its destination now is: a pod here, a pod of another node (the
 * tunnel), or the underlay (an outside backend, or an answer's client). */
static __always_inline int send_on(struct __sk_buff *skb, const struct weft_config *cfg)
{
	const struct weft_node_entry *node;
	const struct weft_endpoint *ep;
	struct ethhdr *eth;
	struct iphdr *ip;

	if (ipv4_frame(skb, &eth, &ip) < 0)
		return drop(WEFT_DROP_MALFORMED);
	ep = endpoint_lookup(ip->daddr);
	if (ep)
		return deliver_to_pod(skb, eth, ip, ep, 0, 0);
	node = node_lookup(ip->daddr);
	if (node && node->node_ip != cfg->node_ip)
		return tunnel_to(skb, ip, cfg, node->node_ip, 0);
	if (node)
		return drop(WEFT_DROP_NO_ENDPOINT);	/* a pod here that is gone */
	return to_underlay(skb, ip, cfg);
}

/* A first fragment was translated: record what it became, for the rest. */
static __always_inline int remember_first(struct __sk_buff *skb, struct frag_id *fr, __u16 ct_flags)
{
	struct ethhdr *eth;
	struct iphdr *ip;

	if (fr->kind != FRAG_FIRST)
		return 0;
	if (ipv4_frame(skb, &eth, &ip) < 0)
		return -WEFT_DROP_MALFORMED;
	frag_note_first(&weft_rev_frags, fr, ip, ct_flags);
	return 0;
}

static __always_inline int node_ingress_run(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	struct frag_id fr;
	struct l4_tuple t;
	__u16 ct_flags = 0;
	struct ethhdr *eth;
	struct iphdr *ip;
	int rc;

	trace_begin(skb);
	if (!cfg || skb->protocol != bpf_htons(ETH_P_IP) || ipv4_frame(skb, &eth, &ip) < 0 ||
	    eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;	/* the stack judges what is not ours */
	frag_identify(ip, &fr);
	if (fr.kind == FRAG_LATER) {
		rc = frag_follow(&weft_rev_frags, skb, &fr, ip, &ct_flags);
		if (rc < 0)
			return drop(-rc);
		return rc ? send_on(skb, cfg) : TC_ACT_OK;
	}
	if (l4_tuple_read(skb, ip, &t) <= 0)
		return TC_ACT_OK;
	if (t.proto == IPPROTO_UDP && t.dport == bpf_htons(vxlan_port(cfg)))
		return TC_ACT_OK;

	rc = lb_reverse(skb, &t, &ct_flags);
	if (rc < 0)
		return drop(-rc);
	if (rc == LB_DONE) {
		if ((rc = remember_first(skb, &fr, ct_flags)) < 0 ||
		    ipv4_frame(skb, &eth, &ip) < 0)
			return drop(rc < 0 ? -rc : WEFT_DROP_MALFORMED);
		return to_underlay(skb, ip, cfg);
	}

	rc = lb_forward(skb, cfg, &t, LB_FROM_OUTSIDE, NULL, &ct_flags);
	if (rc == LB_NONE)
		return TC_ACT_OK;
	if (rc < 0)
		return drop(-rc);
	if (rc == LB_REJECT)
		return reject_connection(skb, &t);
	rc = remember_first(skb, &fr, ct_flags);
	if (rc < 0)
		return drop(-rc);
	return send_on(skb, cfg);
}

SEC("tc")
int node_ingress(struct __sk_buff *skb)
{
	return flow_end(skb, node_ingress_run(skb), WEFT_FROM_NODE);
}

char LICENSE[] SEC("license") = "GPL";
