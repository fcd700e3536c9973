/*
 * ct.h — connection tracking for translated connections (weft_ct).
 *
 * Entries come in pairs (bpf/weft_bpf.h, "Services"): FWD, keyed by what
 * the client sends, and REV, keyed by what the backend answers.  The
 * programs create and refresh them; the agent deletes expired ones (its
 * timeouts depend on the TCP state kept in flags) and those of removed
 * backends.
 *
 * A client (the FWD key's source: a pod, an outside address, the node's
 * gateway) may hold at most ct_source_max connections: the count is
 * weft_ct_opened[client] (added to atomically here, +1 for a pair made,
 * -1 for a pair a program deletes: a TCP RST, a backend gone, a clash)
 * less weft_ct_closed[client] (pairs the agent's sweep deleted; only the
 * agent writes it).  Two counters with one writer each, so neither side
 * ever overwrites the other's updates.  A connection reset by a pod or
 * the node gives its slot back at once; one closed by FIN (or reset from
 * outside the cluster) holds it until the sweep deletes the pair
 * (CONNTRACK_TCP_CLOSING_S after the last packet).
 *
 * Time is in ticks of 2^30 ns (WEFT_CT_TICK_SHIFT) of CLOCK_MONOTONIC, so
 * an entry fits a __u32 clock and a busy flow writes its entry at most
 * about once a second, not once a packet.
 */
#ifndef WEFT_BPF_LIB_CT_H
#define WEFT_BPF_LIB_CT_H

#include "common.h"
#include "l4.h"
#include "maps.h"
#include "trace.h"

/* connections one client may hold; the agent sets it before load */
const volatile __u32 ct_source_max = (WEFT_MAX_CT / 2) / WEFT_CT_SOURCE_SHARE;

#define CT_EEXIST	17	/* the kernel's EEXIST: a BPF_NOEXIST key is taken */

/* Count a new connection of client in opened (the programs' counts; closed
 * is the agent's): 0, or -WEFT_DROP_CT_SOURCE_LIMIT (max held already:
 * nothing counted) or -WEFT_DROP_CT_FULL (no room for the counter).
 * Added first and taken back when over, so CPUs racing cannot pass the
 * cap together.  weft_ct's and weft_policy_ct's clients each have a pair
 * of counters. */
static __always_inline int source_take(void *opened_map, void *closed_map, __u32 max,
				       __be32 client)
{
	__u64 zero = 0, *opened, *closed, held;

	opened = bpf_map_lookup_elem(opened_map, &client);
	if (tracing()) {	/* what it would answer, nothing counted */
		closed = bpf_map_lookup_elem(closed_map, &client);
		held = (opened ? *opened : 0) - (closed ? *closed : 0);
		return (__s64)held >= (__s64)max ? -WEFT_DROP_CT_SOURCE_LIMIT : 0;
	}
	if (!opened) {
		bpf_map_update_elem(opened_map, &client, &zero, BPF_NOEXIST);
		opened = bpf_map_lookup_elem(opened_map, &client);
		if (!opened)
			return -WEFT_DROP_CT_FULL;
	}
	held = __sync_fetch_and_add(opened, 1);
	closed = bpf_map_lookup_elem(closed_map, &client);
	if (closed)
		held -= *closed;
	if ((__s64)held >= (__s64)max) {
		__sync_fetch_and_add(opened, -1);
		return -WEFT_DROP_CT_SOURCE_LIMIT;
	}
	return 0;
}

/* A connection of client counted by source_take() is gone (a program
 * deleted it, or failed to write it). */
static __always_inline void source_put(void *opened_map, __be32 client)
{
	__u64 *opened;

	if (tracing())
		return;
	opened = bpf_map_lookup_elem(opened_map, &client);
	if (opened)
		__sync_fetch_and_add(opened, -1);
}

static __always_inline int ct_source_take(__be32 client)
{
	return source_take(&weft_ct_opened, &weft_ct_closed, ct_source_max, client);
}

static __always_inline void ct_source_put(__be32 client)
{
	source_put(&weft_ct_opened, client);
}

static __always_inline __u32 ct_now(void)
{
	return (__u32)(bpf_ktime_get_ns() >> WEFT_CT_TICK_SHIFT);
}

static __always_inline void ct_key(struct weft_ct_key *k, __be32 saddr, __be32 daddr,
				   __be16 sport, __be16 dport, __u8 proto, __u8 dir)
{
	k->saddr = saddr;
	k->daddr = daddr;
	k->sport = sport;
	k->dport = dport;
	k->proto = proto;
	k->dir = dir;
	k->pad = 0;
}

static __always_inline struct weft_ct_entry *ct_lookup(const struct l4_tuple *t, __u8 dir)
{
	struct weft_ct_key k;

	ct_key(&k, t->saddr, t->daddr, t->sport, t->dport, t->proto, dir);
	return bpf_map_lookup_elem(&weft_ct, &k);
}

/* A packet of the entry's direction went through: refresh last_seen and
 * the TCP state.  A reply (REV) to a TCP connection makes it established;
 * FIN or RST either way makes it closing (a RST from a pod or the node
 * deletes the pair instead: lb.h, lb_resets).  Writes only what changes. */
static __always_inline void ct_touch(struct weft_ct_entry *e, const struct l4_tuple *t, int reply)
{
	__u32 now = ct_now();
	__u16 flags = e->flags;

	if (tracing())
		return;

	if (t->proto == IPPROTO_TCP) {
		/* a new connection on the tuple of a closed one starts over */
		if (!reply && (t->tcp_flags & (TCP_F_SYN | TCP_F_ACK)) == TCP_F_SYN)
			flags = (flags & (WEFT_CT_F_EXTERNAL | WEFT_CT_F_SNAT | WEFT_CT_F_HOST)) |
				WEFT_CT_F_SYN;
		else if (t->tcp_flags & (TCP_F_FIN | TCP_F_RST))
			flags |= WEFT_CT_F_CLOSING;
		else if (reply || !(t->tcp_flags & TCP_F_SYN))
			flags = (flags & ~WEFT_CT_F_SYN) | WEFT_CT_F_ESTABLISHED;
	}
	if (e->last_seen != now)
		e->last_seen = now;
	if (e->flags != flags)
		e->flags = flags;
}

#endif
