/*
 * pod_egress.bpf.c — tc egress on the host end of a pod's veth: packets the
 * node's stack sends to the pod (everything from another pod or an outside
 * client arrives by redirect_peer and never passes here).
 *
 *	packet from the stack to the pod
 *	  │
 *	  ├─ config not complete, not IPv4 TCP/UDP ─── TC_ACT_OK
 *	  ├─ the answer of a translated connection
 *	  │  (REV entry: a backend outside the pod
 *	  │  network, answering through the stack) ─── source := the frontend, TC_ACT_OK
 *	  └─ anything else ─────────────────────────── TC_ACT_OK
 *
 * Why: a service backend need not be a pod.  A host-network endpoint (a
 * node's own address) answers from the node's stack, and an endpoint
 * outside the cluster answers through the node's masquerade; either way
 * the answer reaches the pod through the kernel's route to it, and the
 * pod must see it come from the address it connected to.  The translation
 * itself happened in pod_ingress, which wrote the REV entry.
 *
 * Invariants: never drops (a malformed packet is the pod's stack's to
 * judge) except when the rewrite itself fails; never redirects.
 */
#include "lib/common.h"

const volatile __u32 trace_enabled = 0;

#include "lib/eth.h"
#include "lib/ipv4.h"
#include "lib/l4.h"
#include "lib/lb.h"
#include "lib/maps.h"
#include "lib/trace.h"

SEC("tc")
int pod_egress(struct __sk_buff *skb)
{
	const struct weft_config *cfg = config_ready();
	struct l4_tuple t;
	__u16 ct_flags = 0;
	struct ethhdr *eth;
	struct iphdr *ip;
	int rc;

	if (!cfg || !l4_packet(skb, &eth, &ip, &t))
		return TC_ACT_OK;
	rc = lb_reverse(skb, &t, &ct_flags);
	if (rc < 0)
		return drop(-rc);
	return pass(0, 0);
}

char LICENSE[] SEC("license") = "GPL";
