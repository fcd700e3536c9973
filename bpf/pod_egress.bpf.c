/*
 * pod_egress.bpf.c — tc egress on the host end of a pod's veth: packets the
 * node's stack sends to the pod (everything from another pod or an outside
 * client arrives by redirect_peer and never passes here).
 *
 *	packet from the stack to the pod
 *	  │
 *	  ├─ config not complete, not IPv4 ──────────── TC_ACT_OK
 *	  ├─ a later fragment of a translated answer
 *	  │  (lib/frag.h, weft_rev_frags) ─────────────── source := the frontend, TC_ACT_OK
 *	  ├─ the answer of a translated connection
 *	  │  (REV entry: a backend outside the pod
 *	  │  network, answering through the stack) ─── source := the frontend, TC_ACT_OK
 *	  │                                             (a first fragment: recorded)
 *	  ├─ the pod's ingress policy denies (lib/policy.h;
 *	  │  the node itself and answers always pass) ─── drop POLICY_DENIED_INGRESS
 *	  └─ anything else ─────────────────────────── TC_ACT_OK
 *
 * Why: a service backend need not be a pod.  A host-network endpoint (a
 * node's own address) answers from the node's stack, and an endpoint
 * outside the cluster answers through the node's masquerade; either way
 * the answer reaches the pod through the kernel's route to it, and the
 * pod must see it come from the address it connected to.  The translation
 * itself happened in pod_ingress, which wrote the REV entry.
 *
 * An answer larger than the pod's MTU leaves the stack in fragments, and
 * only the first has the ports the REV lookup needs: its translation is
 * recorded under the backend's address (weft_rev_frags, as vxlan_ingress
 * does for backends on other nodes) and the later fragments get the same
 * one, so the pod can reassemble them.  A later fragment without a record
 * passes as it came (the stack sends the pod fragments of its own).
 *
 * Invariants: drops only what the pod's ingress policy denies, or when
 * the rewrite itself fails (a malformed packet is the pod's stack's to
 * judge); never redirects.
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/eth.h"
#include "lib/frag.h"
#include "lib/icmp.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/policy.h"
#include "lib/trace.h"

/* The pod's ingress policy on a packet from the stack (lib/policy.h): the
 * node itself always passes, and so do the answers of the pod's own
 * connections (the masquerade's included: they were tracked before the
 * rewrite, and come back to the same addresses).  The sender may be any
 * address the stack forwards from, so its RST only marks a connection
 * closing.  ICMP errors pass: the stack sends them about packets it saw. */
static __always_inline int judge_ingress(struct __sk_buff *skb, const struct weft_config *cfg,
					 const struct iphdr *ip)
{
	const struct weft_endpoint *ep = endpoint_lookup(ip->daddr);
	struct policy_flow f;
	__u32 reason;

	if (!ep || ep->ifindex != skb->ifindex)
		return TC_ACT_OK;	/* not this pod's: the stack's own business */
	if (!(ep->flags & WEFT_EP_F_ISOLATE_IN))
		return pass(0, 0);	/* decided: a flow to the pod, for the flow log */
	if (ip->protocol == IPPROTO_ICMP && icmp_is_error(skb, ip))
		return TC_ACT_OK;
	if (policy_flow_read(skb, ip, &f) < 0)
		return drop(WEFT_DROP_MALFORMED);
	reason = policy_check(cfg, NULL, ep, &f, 0);
	return reason == WEFT_DROP_NONE ? pass(0, 0) : drop(reason);
}

static __always_inline int pod_egress_run(struct __sk_buff *skb)
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
		return TC_ACT_OK;
	frag_identify(ip, &fr);
	if (fr.kind == FRAG_LATER) {
		rc = frag_follow(&weft_rev_frags, skb, &fr, ip, &ct_flags);
		return rc < 0 ? drop(-rc) : pass(0, 0);
	}
	rc = l4_tuple_read(skb, ip, &t);
	if (rc < 0)
		return TC_ACT_OK;	/* the pod's stack judges a malformed packet */
	rc = rc > 0 ? lb_reverse(skb, &t, &ct_flags) : LB_NONE;
	if (rc < 0)
		return drop(-rc);
	if (rc == LB_NONE)
		return judge_ingress(skb, cfg, ip);
	if (fr.kind == FRAG_FIRST) {
		if (ipv4_frame(skb, &eth, &ip) < 0)
			return drop(WEFT_DROP_MALFORMED);
		frag_note_first(&weft_rev_frags, &fr, ip, ct_flags);
	}
	return pass(0, 0);
}

SEC("tc")
int pod_egress(struct __sk_buff *skb)
{
	return flow_end(skb, pod_egress_run(skb), WEFT_FROM_HOST_TO_POD);
}

char LICENSE[] SEC("license") = "GPL";
