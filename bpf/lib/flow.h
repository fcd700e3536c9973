/*
 * flow.h — the flow log (bpf/weft_bpf.h, "The flow log"): events for
 * weftctl flows, in the ring buffer weft_flows.
 *
 * Each program's entry ends with flow_end() (trace.h), which sees its tc
 * verdict: a drop (TC_ACT_SHOT) is an event whenever it happens; a
 * forwarded TCP SYN or SYN-ACK, and one in WEFT_FLOWS_SAMPLE forwarded UDP
 * and ICMP packets, only while flows_on.  What the verdict was beyond the
 * tc code comes from what the program noted on its way: count_drop notes
 * the drop's reason (flow_note_drop), trace_verdict the action and tunnel
 * key (flow_note_verdict: a drop's always, a forward's while flows_on).
 *
 * A forward is an event only when the program decided it (noted an
 * action: pass, a redirect, the tunnel).  What a program returns to the
 * stack without a verdict is not weft's traffic to report: the overlay's
 * own VXLAN datagrams on the underlay (vxlan_ingress reports the packets
 * inside them), the node's own connections, what is not IPv4.  Else a
 * listener would cost the cross-node traffic one event per
 * WEFT_FLOWS_SAMPLE of its tunnel packets, on each node, and drown the
 * log in them.
 *
 * flows_on is in each program's .bss: the agent sets it in all of them
 * while someone listens (datapath_flows_listen).  While it is 0 a packet
 * that is not dropped pays one load and a branch here.
 *
 * At most flows_rate events a second on each CPU; the rest, and those
 * that find the ring full, are counted in weft_flow_state.suppressed.
 */
#ifndef WEFT_BPF_LIB_FLOW_H
#define WEFT_BPF_LIB_FLOW_H

#include "common.h"
#include "maps.h"

/* 1 while the agent listens (set in this program's .bss) */
volatile __u32 flows_on = 0;
/* events a second per CPU; the agent sets it before load */
const volatile __u32 flows_rate = WEFT_FLOWS_RATE;

static __always_inline struct weft_flow_state *flow_state(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&weft_flow_state, &key);
}

/* count_drop: the reason of the packet being dropped (a drop's path). */
static __always_inline void flow_note_drop(__u32 reason)
{
	struct weft_flow_state *st = flow_state();

	if (st)
		st->reason = reason;
}

/* trace_verdict: the action and tunnel key, of a drop always, of a
 * forward while flows_on. */
static __always_inline void flow_note_verdict(__u32 action, __u32 tunnel_id, __u32 tunnel_remote)
{
	struct weft_flow_state *st;

	if (!flows_on && action != WEFT_ACT_DROP)
		return;
	st = flow_state();
	if (!st)
		return;
	st->action = action;
	st->tunnel_id = tunnel_id;
	st->tunnel_remote = tunnel_remote;
}

/* The packet's addresses, protocol, ports and TCP flags as it is now;
 * zero where it has none (not IPv4, a fragment after the first).  Read in
 * place (no helper call: this runs for every forwarded packet while
 * someone listens), or copied out when the headers are not all in the
 * linear part. */
static __always_inline void flow_tuple(struct __sk_buff *skb, struct weft_flow *e, __u8 *tcp_flags)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr), copy;
	struct { __be16 sport, dport; } ports;
	__u32 off;
	__u8 *l4;
	int copied = 0;

	*tcp_flags = 0;
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return;
	if ((void *)(ip + 1) > end) {
		if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr), &copy, sizeof(copy)) < 0)
			return;
		ip = &copy;
		copied = 1;
	}
	if (ip->version != 4)
		return;
	e->saddr = ip->saddr;
	e->daddr = ip->daddr;
	e->proto = ip->protocol;
	if ((ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP) || (ip->frag_off & bpf_htons(0x1fff)))
		return;
	off = sizeof(struct ethhdr) + ((__u32)ip->ihl & 0xf) * 4;
	l4 = data + off;
	if (!copied && (void *)(l4 + 14) <= end) {
		e->sport = *(__be16 *)l4;
		e->dport = *(__be16 *)(l4 + 2);
		if (ip->protocol == IPPROTO_TCP)
			*tcp_flags = l4[13];
		return;
	}
	if (bpf_skb_load_bytes(skb, off, &ports, sizeof(ports)) < 0)
		return;
	e->sport = ports.sport;
	e->dport = ports.dport;
	if (ip->protocol == IPPROTO_TCP && bpf_skb_load_bytes(skb, off + 13, tcp_flags, 1) < 0)
		*tcp_flags = 0;
}

/* e as an event, at most flows_rate a second on this CPU. */
static __always_inline void flow_emit(struct weft_flow_state *st, const struct weft_flow *e)
{
	struct weft_flow *out;
	__u64 now = bpf_ktime_get_ns(), second = now / 1000000000ull;

	if (st->second != second) {
		st->second = second;
		st->count = 0;
	}
	if (st->count >= flows_rate) {
		st->suppressed++;
		return;
	}
	out = bpf_ringbuf_reserve(&weft_flows, sizeof(*out), 0);
	if (!out) {
		st->suppressed++;
		return;
	}
	st->count++;
	*out = *e;
	out->time_ns = now;
	bpf_ringbuf_submit(out, 0);
}

/* The event of a packet whose program returned rc (not a trace's: the
 * caller checks), from the program's place. */
static __always_inline void flow_record(struct __sk_buff *skb, int rc, __u8 from)
{
	struct weft_flow_state *st = flow_state();
	struct weft_flow e = { .from = from, .ifindex = skb->ifindex };
	__u8 flags, syn_ack;

	if (!st)
		return;
	if (rc != TC_ACT_SHOT && st->action == WEFT_ACT_NONE)
		return;		/* left to the stack undecided: nothing noted to clear */
	flow_tuple(skb, &e, &flags);
	syn_ack = flags & 0x12;		/* SYN 0x02, ACK 0x10 */
	if (rc == TC_ACT_SHOT) {
		e.kind = WEFT_FLOW_DROP;
		e.action = WEFT_ACT_DROP;
		e.reason = st->reason;
	} else if (e.proto == IPPROTO_TCP && (syn_ack == 0x02 || syn_ack == 0x12)) {
		e.kind = syn_ack == 0x02 ? WEFT_FLOW_NEW : WEFT_FLOW_REPLY;
		e.action = (__u8)st->action;
	} else if (e.proto == IPPROTO_UDP || e.proto == IPPROTO_ICMP) {
		if (++st->sampled < WEFT_FLOWS_SAMPLE)
			goto out;
		st->sampled = 0;
		e.kind = WEFT_FLOW_SAMPLE;
		e.action = (__u8)st->action;
	} else {
		goto out;
	}
	e.tunnel_id = st->tunnel_id;
	e.tunnel_remote = st->tunnel_remote;
	flow_emit(st, &e);
out:
	st->action = 0;		/* (while flows_on: the next packet notes its own) */
	st->tunnel_id = 0;
	st->tunnel_remote = 0;
}

#endif
