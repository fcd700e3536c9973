/*
 * trace.h — verdicts that leave a record: drop counting and the test trace.
 *
 * Every drop increments weft_drops[reason] (a per-CPU counter: no atomics;
 * user space sums the CPUs).  When the program's trace knob is on, each
 * verdict also overwrites the single weft_trace entry of the CPU that ran,
 * so a BPF_PROG_TEST_RUN test can read what the program decided beyond the
 * tc return code (which device, which tunnel key).
 *
 * The including program defines, before including this file,
 *
 *	const volatile __u32 trace_enabled = 0;
 *
 * User space sets it through the skeleton's rodata before load.  .rodata is
 * frozen at load, so the verifier knows the value and removes the trace
 * code entirely when it is 0: production programs pay nothing for it.
 */
#ifndef WEFT_BPF_LIB_TRACE_H
#define WEFT_BPF_LIB_TRACE_H

#include "common.h"
#include "maps.h"

static __always_inline void trace_verdict(__u32 action, __u32 reason, __u32 ifindex,
					  __u32 tunnel_id, __u32 tunnel_remote)
{
	struct weft_trace *t;
	__u32 key = 0;

	if (!trace_enabled)
		return;
	t = bpf_map_lookup_elem(&weft_trace, &key);
	if (!t)
		return;
	t->action = action;
	t->drop_reason = reason;
	t->ifindex = ifindex;
	t->tunnel_id = tunnel_id;
	t->tunnel_remote = tunnel_remote;
	t->count++;
}

/* Count reason in weft_drops: for a drop, and for a packet refused by an
 * answer that user space should still be able to count (svc_egress). */
static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&weft_drops, &reason);

	if (n)
		*n += 1;
}

/* Count the drop and return the tc verdict for it.  tunnel_id and
 * tunnel_remote (host order) only go to the trace; 0 when unknown. */
static __always_inline int drop_tunnel(__u32 reason, __u32 tunnel_id, __u32 tunnel_remote)
{
	count_drop(reason);
	trace_verdict(WEFT_ACT_DROP, reason, 0, tunnel_id, tunnel_remote);
	return TC_ACT_SHOT;
}

static __always_inline int drop(__u32 reason)
{
	return drop_tunnel(reason, 0, 0);
}

/* To the host stack, unchanged. */
static __always_inline int pass(__u32 tunnel_id, __u32 tunnel_remote)
{
	trace_verdict(WEFT_ACT_PASS, WEFT_DROP_NONE, 0, tunnel_id, tunnel_remote);
	return TC_ACT_OK;
}

#endif
