/*
 * ct.h — connection tracking for translated connections (weft_ct).
 *
 * Entries come in pairs (bpf/weft_bpf.h, "Services"): FWD, keyed by what
 * the client sends, and REV, keyed by what the backend answers.  The
 * programs create and refresh them; the agent deletes expired ones (its
 * timeouts depend on the TCP state kept in flags) and those of removed
 * backends.
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
 * FIN or RST either way makes it closing.  Writes only what changes. */
static __always_inline void ct_touch(struct weft_ct_entry *e, const struct l4_tuple *t, int reply)
{
	__u32 now = ct_now();
	__u16 flags = e->flags;

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
