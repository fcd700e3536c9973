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
 * code entirely when it is 0.
 *
 * A trace of the loaded programs (weft_bpf.h, WEFT_TRACE_MARK) is told at
 * run time.  User space arms the program first (trace_armed, in its
 * .bss: the skeleton writes it) and disarms it after; while it is not
 * armed, every trace step below costs one load and a branch, no lookup.
 * While armed, each program's first step is trace_begin(), which marks its
 * CPU's entry (a trace: the mark) or unmarks it (a packet of traffic on
 * another CPU meanwhile).  While it is marked, tracing() is true: the
 * verdict is recorded, and every write of the programs' own state is
 * skipped (count_drop here; conntrack, affinity, fragments, per-client
 * counts and the policy log where they are written).
 */
#ifndef WEFT_BPF_LIB_TRACE_H
#define WEFT_BPF_LIB_TRACE_H

#include "common.h"
#include "flow.h"
#include "maps.h"

/* 1 while user space runs a trace of this program (datapath_trace_run) */
volatile __u32 trace_armed = 0;

static __always_inline struct weft_trace *trace_entry(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&weft_trace, &key);
}

/* The program's first step: is this run a trace? */
static __always_inline void trace_begin(struct __sk_buff *skb)
{
	struct weft_trace *t;

	if (!trace_armed)
		return;
	t = trace_entry();
	if (!t)
		return;
	if (skb->mark == WEFT_TRACE_MARK) {
		__builtin_memset(t, 0, sizeof(*t));
		t->tracing = 1;
	} else if (t->tracing) {
		t->tracing = 0;
	}
}

/* The trace entry of this CPU's run when it is a trace, else NULL: the
 * steps record only then. */
static __always_inline struct weft_trace *trace_active(void)
{
	struct weft_trace *t;

	if (!trace_armed)
		return NULL;
	t = trace_entry();
	return t && t->tracing ? t : NULL;
}

/* Is the run on this CPU a trace?  Then it writes no state of its own. */
static __always_inline int tracing(void)
{
	return trace_active() != NULL;
}

/* The steps, recorded in a trace run only. */
static __always_inline void trace_service(__u32 steps, __be32 svc_addr, __be16 svc_port,
					  __be32 backend_addr, __be16 backend_port, __u32 backend_id)
{
	struct weft_trace *t = trace_active();

	if (!t)
		return;
	t->steps |= steps;
	t->svc_addr = svc_addr;
	t->svc_port = svc_port;
	t->backend_addr = backend_addr;
	t->backend_port = backend_port;
	t->backend_id = backend_id;
}

/* How a new connection's backend was chosen: among candidates at
 * random, or (candidates 0) by the client's affinity. */
static __always_inline void trace_choice(__u32 candidates)
{
	struct weft_trace *t = trace_active();

	if (!t)
		return;
	t->candidates = candidates;
	if (!candidates)
		t->steps |= WEFT_TRACE_S_SVC_AFFINITY;
}

static __always_inline void trace_tenants(__u32 src_vnid, __u32 dst_vnid, int allowed)
{
	struct weft_trace *t = trace_active();

	if (!t)
		return;
	t->steps |= WEFT_TRACE_S_TENANT | (allowed ? 0 : WEFT_TRACE_S_ISOLATED);
	t->src_vnid = src_vnid;
	t->dst_vnid = dst_vnid;
}

static __always_inline void trace_policy(__u32 steps, __u32 rule_out, __u32 rule_in)
{
	struct weft_trace *t = trace_active();

	if (!t)
		return;
	t->steps |= steps;
	t->rule_out = rule_out;
	t->rule_in = rule_in;
}

static __always_inline void trace_verdict(__u32 action, __u32 reason, __u32 ifindex,
					  __u32 tunnel_id, __u32 tunnel_remote)
{
	struct weft_trace *t;

	if (!trace_armed || !tracing())	/* a trace's verdict is no flow's to note */
		flow_note_verdict(action, tunnel_id, tunnel_remote);
	if (!trace_enabled && !trace_armed)
		return;
	t = trace_entry();
	if (!t || (!trace_enabled && !t->tracing))
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
	__u64 *n;

	if (tracing())
		return;
	flow_note_drop(reason);
	n = bpf_map_lookup_elem(&weft_drops, &reason);
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

/* Each program's last step: its tc verdict rc, as the flow log sees it
 * (flow.h: a drop always, a forward while flows_on; a trace's never). */
static __always_inline int flow_end(struct __sk_buff *skb, int rc, __u8 from)
{
	if (rc != TC_ACT_SHOT && !flows_on)
		return rc;
	if (!tracing())
		flow_record(skb, rc, from);
	return rc;
}

#endif
