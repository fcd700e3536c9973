/*
 * pod_ingress.bpf.c — tc ingress on the host end of a pod's veth, i.e.
 * every packet the pod sends.  The pod's only neighbour is this program:
 * it answers all of the pod's ARP and routes its IPv4 packets.
 *
 *	packet from the pod
 *	  │
 *	  ├─ config not complete ─────────────────────────── TC_ACT_OK (stack)
 *	  ├─ ARP request
 *	  │   ├─ reply, probe, gratuitous ────────────────── drop ARP
 *	  │   ├─ sender IP no endpoint on this ifindex ───── drop SPOOFED_IP
 *	  │   ├─ sender MAC or Ethernet source not its ───── drop SPOOFED_MAC
 *	  │   └─ answer "<asked IP> is at gw_mac" ────────── bpf_redirect(back to pod)
 *	  ├─ IPv4
 *	  │   ├─ malformed ───────────────────────────────── drop MALFORMED
 *	  │   ├─ source IP no endpoint on this ifindex ───── drop SPOOFED_IP
 *	  │   ├─ Ethernet source not the endpoint's MAC ──── drop SPOOFED_MAC
 *	  │   ├─ later fragment (lib/frag.h)
 *	  │   │   ├─ no record of its first fragment ──────── drop FRAG_ORPHAN
 *	  │   │   └─ addresses := the first's ─────────────── on below
 *	  │   ├─ first fragment, every slot of the pod holds
 *	  │   │  a datagram in flight (lib/frag.h) ─────────── drop FRAG_LIMIT
 *	  │   ├─ ICMP error (lib/icmp.h)
 *	  │   │   ├─ quote shorter than IP header + 8 ────── drop ICMP_TRUNCATED
 *	  │   │   ├─ quote not about a packet the pod got ─── drop ICMP_FORGED
 *	  │   │   ├─ about a service connection ── source, quote := frontend
 *	  │   │   └─ ─────────────────────────────────────── on below
 *	  │   ├─ TCP/UDP: services (lib/lb.h)
 *	  │   │   ├─ a backend here answering a translated
 *	  │   │   │  connection (REV) ── source := frontend
 *	  │   │   │   ├─ the client is outside ──────────── redirect_neigh(underlay)
 *	  │   │   │   └─ ─────────────────────────────────── on below
 *	  │   │   ├─ to a frontend (cluster IP, VIP,
 *	  │   │   │  node IP:NodePort; never a pod address)
 *	  │   │   │   ├─ no (local) backend ──────────────── TCP RST / ICMP unreachable
 *	  │   │   │   └─ destination := backend (conntrack)  on below
 *	  │   │   └─ anything else ───────────────────────── on below, untouched
 *	  │   ├─ destination a pod here (weft_endpoints)
 *	  │   │   ├─ VNID rule refuses ───────────────────── drop ISOLATED
 *	  │   │   ├─ policy (lib/policy.h): the pod's egress,
 *	  │   │   │  the destination's ingress ──────────── drop POLICY_DENIED_*
 *	  │   │   └─ ─────────────────────────────────────── bpf_redirect_peer(pod)
 *	  │   ├─ destination in another node's subnet
 *	  │   │  (weft_nodes, node_ip != ours)
 *	  │   │   ├─ policy: the pod's egress ────────────── drop POLICY_DENIED_EGRESS
 *	  │   │   └─ tunnel key (id = the sender's VNID) ─── bpf_redirect(VXLAN device)
 *	  │   ├─ cluster network, no node subnet ─────────── drop NO_SUBNET
 *	  │   └─ anything else (own subnet without pod, this
 *	  │      node, outside the cluster)
 *	  │       ├─ UDP to the VXLAN port ───────────────── drop TUNNEL_INJECT
 *	  │       ├─ policy: the pod's egress (the node
 *	  │       │  itself always passes) ───────────────── drop POLICY_DENIED_EGRESS
 *	  │       ├─ a backend's answer to the node's own
 *	  │       │  connection (REV, WEFT_CT_F_HOST) ──── redirect: ingress of
 *	  │       │                                      the service device
 *	  │       └─ ─────────────────────────────────────── TC_ACT_OK (stack:
 *	  │                                                    routes, masquerade)
 *	  └─ anything else (IPv6 included) ─────────────────── drop UNSUPPORTED_L3
 *
 * Anti-spoofing: the sender is weft_endpoints[source IP], and it must be
 * the pod behind this veth: its ifindex is skb->ifindex (the host end this
 * program runs on) and its pod_mac the Ethernet source.  Everything after
 * relies on it: the VNID of the sender is the endpoint's, so a pod that
 * could pick its source IP could pick its tenant.
 *
 * ARP: the answer for any address is the pod's gateway MAC, taken from the
 * weft_endpoints entry of the ARP sender, which must pass the same checks
 * (sender IP the endpoint on this ifindex, sender MAC and Ethernet source
 * its pod_mac): a pod's ARP cannot claim another pod's address.  A request
 * from a pod whose endpoint the agent has not written yet is dropped
 * (SPOOFED_IP) and retried by the pod.  Probes (sender 0.0.0.0, RFC 5227)
 * and gratuitous requests (sender == target) are not answered: a reply
 * would tell the pod its own address is taken.  No ARP leaves the pod, so
 * no broadcast does.
 *
 * Tunnel injection: a pod must not reach the VXLAN socket of any node (its
 * own through a node IP or the gateway, another through its node IP):
 * VXLAN it sent there would be decapsulated with a VNI of its choosing.
 * So UDP to the VXLAN port that leaves for the stack is dropped.  (The
 * gateway of another node is reached through the tunnel; vxlan_ingress
 * guards it.)  A later IPv4 fragment carries no ports: it follows its
 * first fragment's verdict (lib/frag.h), and without one it is dropped.
 * A first fragment needs a free slot of its pod (at most WEFT_FRAG_SLOTS
 * datagrams in flight: first fragments that never complete would fill
 * the reassembly memory of whoever reassembles them), taken before it is
 * translated, so a refused one leaves no conntrack entry; let through (to
 * a pod, a tunnel, the stack) it is remembered on its way out
 * (forward_ipv4).
 *
 * Fast path: an unfragmented TCP/UDP packet pays two compares for all of
 * this (frag_off, protocol); only fragments and ICMP take the new paths
 * (a fragment at most WEFT_FRAG_SLOTS lookups of weft_frags).
 *
 * Invariants:
 *  1. A packet is forwarded only while the config is complete (version and
 *     ready): a half-written state goes to the kernel stack, which has
 *     routes to every pod and node subnet.
 *  2. A forwarded packet has its TTL decremented and its checksum patched;
 *     a TTL that would reach 0 is dropped (the stack would send ICMP time
 *     exceeded; we only count).
 *  3. Every drop increments weft_drops[reason].
 *  4. No packet is forwarded, tunnelled or passed to the stack before its
 *     sender passed anti-spoofing (once the config is complete).
 *
 * Services: translation comes right after anti-spoofing and before
 * everything else, so the tenant check and the forwarding below see the
 * backend the connection was given, and the client's real address (a pod
 * reaching itself through its service gets the hairpin source
 * WEFT_HAIRPIN_IP).  The conntrack entries live on this node, the
 * client's: answers from a backend here are translated back above, from
 * a backend elsewhere by vxlan_ingress.  Pod-to-pod packets (destination
 * inside the cluster networks) skip the frontend lookup; a TCP SYN among
 * them retires the entries of a translated connection that used the same
 * addresses and ports (lb_forget_clash).
 *
 * NetworkPolicy (lib/policy.h) is judged after the translation, on the
 * backend chosen and the client's real address, right before the packet
 * leaves: the sender's egress always, the destination's ingress when it
 * is a pod here (vxlan_ingress judges a pod elsewhere on its node).  Not
 * judged again: answers of translated connections, ICMP errors (checked
 * above to be about a packet the pod received) and later fragments.
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/arp.h"
#include "lib/eth.h"
#include "lib/forward.h"
#include "lib/frag.h"
#include "lib/icmp.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/policy.h"
#include "lib/reject.h"
#include "lib/tenant.h"
#include "lib/trace.h"

/* The endpoint sending from this veth as ip, or NULL when ip is no pod
 * here or a pod behind another veth. */
static __always_inline const struct weft_endpoint *sender_lookup(struct __sk_buff *skb, __be32 ip)
{
	const struct weft_endpoint *ep = endpoint_lookup(ip);

	if (!ep || ep->ifindex != skb->ifindex)
		return NULL;
	return ep;
}

static __always_inline int answer_arp(struct __sk_buff *skb)
{
	const struct weft_endpoint *sender;
	struct arp_ipv4 *arp;
	struct ethhdr *eth;

	if (skb_linearize_head(skb, ARP_FRAME_LEN) < 0)
		return drop(WEFT_DROP_MALFORMED);
	eth = eth_header(skb);
	arp = arp_header(skb);
	if (!eth || !arp)
		return drop(WEFT_DROP_MALFORMED);
	if (arp->op != bpf_htons(ARP_OP_REQUEST))
		return drop(WEFT_DROP_ARP);
	if (arp->spa == 0 || arp->spa == arp->tpa)
		return drop(WEFT_DROP_ARP);
	sender = sender_lookup(skb, arp->spa);
	if (!sender)
		return drop(WEFT_DROP_SPOOFED_IP);
	if (!mac_equal(arp->sha, sender->pod_mac) || !mac_equal(eth->h_source, sender->pod_mac))
		return drop(WEFT_DROP_SPOOFED_MAC);
	arp_reply_in_place(eth, arp, sender->gw_mac);
	trace_verdict(WEFT_ACT_ARP_REPLY, WEFT_DROP_NONE, skb->ifindex, 0, 0);
	return bpf_redirect(skb->ifindex, 0);
}

/* NetworkPolicy on a packet the pod sends to dst (a pod here, or NULL):
 * WEFT_DROP_NONE or the reason to drop it (lib/policy.h).  pf: the flow
 * translate_l4() already read (its proto 0: none, read it here).
 * judge == 0: nothing to judge (an answer of a translated connection, an
 * ICMP error, a later fragment: its first one was judged). */
static __always_inline __u32 policy_verdict(struct __sk_buff *skb, const struct weft_config *cfg,
					    const struct iphdr *ip, const struct weft_endpoint *src,
					    const struct weft_endpoint *dst,
					    const struct policy_flow *pf, int judge)
{
	struct policy_flow f;

	if (!judge)
		return WEFT_DROP_NONE;
	if (pf->proto)
		return policy_check(cfg, src, dst, pf, 1);
	if (policy_flow_read(skb, ip, &f) < 0)
		return WEFT_DROP_MALFORMED;
	return policy_check(cfg, src, dst, &f, 1);
}

/* The way out of a packet judged and translated (ct_flags: its
 * connection's; judge: whether policy has yet to see it).  A first
 * fragment let through is remembered on its way (lib/frag.h). */
static __always_inline int forward_ipv4(struct __sk_buff *skb, const struct weft_config *cfg,
					const struct weft_endpoint *src, struct ethhdr *eth,
					struct iphdr *ip, __u16 ct_flags, const struct frag_id *fr,
					const struct policy_flow *pf, int judge)
{
	const struct weft_node_entry *node;
	const struct weft_endpoint *ep;
	__u32 reason;

	if (ct_flags & WEFT_CT_F_EXTERNAL) {
		frag_remember(&weft_frags, fr, ip, ct_flags);
		return to_underlay(skb, ip, cfg);
	}

	ep = endpoint_lookup(ip->daddr);
	if (ep) {
		if (!vnid_allowed(src->vnid, ep->vnid))
			return drop(WEFT_DROP_ISOLATED);
		reason = policy_verdict(skb, cfg, ip, src, ep, pf, judge);
		if (reason != WEFT_DROP_NONE)
			return drop(reason);
		frag_remember(&weft_frags, fr, ip, ct_flags);
		return deliver_to_pod(skb, eth, ip, ep, 0, 0);
	}

	node = node_lookup(ip->daddr);
	if (node && node->node_ip != cfg->node_ip) {
		reason = policy_verdict(skb, cfg, ip, src, NULL, pf, judge);
		if (reason != WEFT_DROP_NONE)
			return drop(reason);
		frag_remember(&weft_frags, fr, ip, ct_flags);
		return tunnel_to(skb, ip, cfg, node->node_ip, src->vnid);
	}
	/* the cluster network outside every node subnet: nobody's, and the
	 * stack would send it to the underlay from the pod's own address */
	if (!node && (ip->daddr & cfg->cluster_mask) == cfg->cluster_net)
		return drop(WEFT_DROP_NO_SUBNET);

	reason = tunnel_inject_check(skb, ip, cfg);
	if (reason == WEFT_DROP_NONE)
		reason = policy_verdict(skb, cfg, ip, src, NULL, pf, judge);
	if (reason != WEFT_DROP_NONE)
		return drop(reason);
	frag_remember(&weft_frags, fr, ip, ct_flags);
	if (ct_flags & WEFT_CT_F_HOST)
		return to_host(skb, eth, 0, 0);	/* answering the node's own connection */
	return pass(0, 0);
}

/* TCP/UDP: services (lib/lb.h).  1: the packet goes on (*done: it was
 * rewritten; *answer: it answers a translated connection, which policy
 * does not judge again; *pf: the flow as it now is, for policy, so its
 * ports are read once); 0: *verdict is the tc verdict taken. */
static __always_inline int translate_l4(struct __sk_buff *skb, const struct weft_config *cfg,
					struct iphdr *ip, const struct weft_endpoint *src,
					__u16 *ct_flags, int *done, int *answer,
					struct policy_flow *pf, int *verdict)
{
	struct l4_tuple t;
	int rc;

	rc = l4_tuple_read(skb, ip, &t);
	if (rc < 0) {
		*verdict = drop(WEFT_DROP_MALFORMED);
		return 0;
	}
	if (rc == 0)
		return 1;
	rc = lb_reverse(skb, &t, ct_flags);
	*answer = rc == LB_DONE;
	/* frontends are never pod addresses: pod to pod traffic, the
	 * bulk, skips the conntrack and frontend lookups */
	if (rc == LB_NONE && (t.daddr & cfg->cluster_mask) != cfg->cluster_net)
		rc = lb_forward(skb, cfg, &t, LB_FROM_POD, src, ct_flags);
	else if (rc == LB_NONE)
		lb_forget_clash(&t);
	if (rc < 0) {
		*verdict = drop(-rc);
		return 0;
	}
	if (rc == LB_REJECT) {
		*verdict = reject_connection(skb, &t);
		return 0;
	}
	*done = rc == LB_DONE;
	pf->saddr = t.saddr;
	pf->daddr = t.daddr;
	pf->sport = t.sport;
	pf->dport = t.dport;
	pf->proto = t.proto;
	pf->tcp_flags = t.tcp_flags;
	return 1;
}

/* An ICMP error from the pod: judged (lib/icmp.h), and translated back
 * when it is about a service connection.  As translate_l4(). */
static __always_inline int judge_icmp(struct __sk_buff *skb, struct iphdr *ip,
				      const struct weft_endpoint *src, __u16 *ct_flags, int *done,
				      int *answer, int *verdict)
{
	struct icmp_error e;
	__u32 reason;
	int rc;

	rc = icmp_error_read(skb, ip, &e);
	if (rc == 0)
		return 1;
	if (rc < 0) {
		*verdict = drop(-rc);
		return 0;
	}
	*answer = 1;	/* about a packet the pod received: not judged again */
	reason = icmp_error_check(&e, ip, src->vnid);
	if (reason != WEFT_DROP_NONE) {
		*verdict = drop(reason);
		return 0;
	}
	rc = icmp_error_translate(skb, &e, ip, ct_flags);
	if (rc < 0) {
		*verdict = drop(-rc);
		return 0;
	}
	*done = rc == LB_DONE;
	return 1;
}

static __always_inline int route_ipv4(struct __sk_buff *skb, const struct weft_config *cfg)
{
	const struct weft_endpoint *src;
	struct frag_id fr;
	__u16 ct_flags = 0;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct policy_flow pf = { .proto = 0 };
	int rc, done = 0, answer = 0, verdict = TC_ACT_SHOT;

	if (ipv4_frame(skb, &eth, &ip) < 0)
		return drop(WEFT_DROP_MALFORMED);

	src = sender_lookup(skb, ip->saddr);
	if (!src)
		return drop(WEFT_DROP_SPOOFED_IP);
	if (!mac_equal(eth->h_source, src->pod_mac))
		return drop(WEFT_DROP_SPOOFED_MAC);

	frag_identify(ip, &fr);
	if (fr.kind == FRAG_LATER) {
		rc = frag_follow(&weft_frags, skb, &fr, ip, &ct_flags);
		if (rc <= 0)
			return drop(rc < 0 ? -rc : WEFT_DROP_FRAG_ORPHAN);
		done = 1;
		answer = 1;	/* its first fragment was judged */
	} else {
		/* a first fragment takes its slot before anything is written */
		if (fr.kind == FRAG_FIRST && (rc = frag_claim(&weft_frags, &fr)) < 0)
			return drop(-rc);
		if (ip->protocol == IPPROTO_ICMP) {
			if (!judge_icmp(skb, ip, src, &ct_flags, &done, &answer, &verdict))
				return verdict;
		} else if (!translate_l4(skb, cfg, ip, src, &ct_flags, &done, &answer, &pf, &verdict)) {
			return verdict;
		}
	}
	/* a rewrite may have moved the data */
	if (done && ipv4_frame(skb, &eth, &ip) < 0)
		return drop(WEFT_DROP_MALFORMED);
	return forward_ipv4(skb, cfg, src, eth, ip, ct_flags, &fr, &pf, !answer);
}

static __always_inline int pod_ingress_run(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	struct ethhdr *eth;

	trace_begin(skb);
	if (!cfg)
		return pass(0, 0);
	eth = eth_header(skb);
	if (!eth)
		return drop(WEFT_DROP_MALFORMED);
	switch (eth->h_proto) {
	case bpf_htons(ETH_P_ARP):
		return answer_arp(skb);
	case bpf_htons(ETH_P_IP):
		return route_ipv4(skb, cfg);
	default:
		return drop(WEFT_DROP_UNSUPPORTED_L3);
	}
}

SEC("tc")
int pod_ingress(struct __sk_buff *skb)
{
	return flow_end(skb, pod_ingress_run(skb), WEFT_FROM_POD);
}

char LICENSE[] SEC("license") = "GPL";
