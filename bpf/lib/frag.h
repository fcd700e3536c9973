/*
 * frag.h — IPv4 fragments a pod sends: the first fragment is judged (and
 * translated) like any packet, and what became of it is remembered in
 * weft_frags; later fragments, which carry no ports, follow that record
 * or are dropped (layout, per-pod bound and lifetime: bpf/weft_bpf.h,
 * "Fragments").
 *
 *	frag_identify()  on entry, before any rewrite: is the packet a
 *	                 fragment, and which datagram (as the pod sent it)
 *	frag_remember()  a first fragment is let through: record the
 *	                 addresses it leaves with and its conntrack flags
 *	frag_follow()    a later fragment: the record of its datagram, the
 *	                 same address rewrite, the same flags; no record (or
 *	                 an old one, or another datagram's) is FRAG_ORPHAN
 *
 * Only fragments take these paths: an unfragmented packet costs one test
 * of frag_off.  A later fragment's rewrite touches the IP header checksum
 * only: the transport checksum, in the first fragment, was patched there
 * for the whole datagram.
 *
 * Why drop orphans: a later fragment whose first fragment was refused (or
 * never sent) can only wait in a reassembly queue for a datagram that
 * will never be whole; sent to the node's stack in numbers, they fill its
 * reassembly memory and every real fragmented datagram of the node fails.
 */
#ifndef WEFT_BPF_LIB_FRAG_H
#define WEFT_BPF_LIB_FRAG_H

#include "common.h"
#include "ct.h"
#include "ipv4.h"
#include "maps.h"

#define FRAG_NONE	0
#define FRAG_FIRST	1	/* offset 0, more fragments */
#define FRAG_LATER	2	/* offset > 0 */

/* a datagram as the pod sent it */
struct frag_id {
	__u32 kind;		/* FRAG_* */
	__be32 daddr;
	__be16 id;
	__u8 proto;
	struct weft_frag_key key;
};

static __always_inline void frag_identify(const struct iphdr *ip, struct frag_id *fr)
{
	__u32 h;

	fr->kind = FRAG_NONE;
	if (!(ip->frag_off & bpf_htons(IPV4_FRAG_MORE | IPV4_FRAG_OFFSET)))
		return;
	fr->kind = (ip->frag_off & bpf_htons(IPV4_FRAG_OFFSET)) ? FRAG_LATER : FRAG_FIRST;
	fr->daddr = ip->daddr;
	fr->id = ip->id;
	fr->proto = ip->protocol;
	/* the slot: any spread will do, the pod only competes with itself */
	h = ip->daddr ^ ((__u32)ip->id << 8) ^ ip->protocol;
	h ^= h >> 16;
	h *= 0x45d9f3b;
	h ^= h >> 16;
	fr->key.saddr = ip->saddr;
	fr->key.slot = h & (WEFT_FRAG_SLOTS - 1);
}

/* A first fragment leaves with ip's addresses (after translation). */
static __always_inline void frag_remember(const struct frag_id *fr, const struct iphdr *ip,
					  __u16 ct_flags)
{
	struct weft_frag v = {};

	if (fr->kind != FRAG_FIRST)
		return;
	v.daddr = fr->daddr;
	v.nat_saddr = ip->saddr;
	v.nat_daddr = ip->daddr;
	v.id = fr->id;
	v.proto = fr->proto;
	v.ct_flags = ct_flags;
	v.last_seen = ct_now();
	bpf_map_update_elem(&weft_frags, &fr->key, &v, BPF_ANY);	/* LRU: never full */
}

/* A later fragment: rewrite it as its first fragment was, *ct_flags its
 * flags.  0, or a negative drop reason.  Invalidates packet pointers. */
static __always_inline int frag_follow(struct __sk_buff *skb, const struct frag_id *fr,
				       const struct iphdr *ip, __u16 *ct_flags)
{
	const struct weft_frag *v = bpf_map_lookup_elem(&weft_frags, &fr->key);
	__be32 saddr = ip->saddr, daddr = ip->daddr, nat_saddr, nat_daddr;

	if (!v || v->daddr != fr->daddr || v->id != fr->id || v->proto != fr->proto ||
	    ct_now() - v->last_seen > WEFT_FRAG_TICKS)
		return -WEFT_DROP_FRAG_ORPHAN;
	nat_saddr = v->nat_saddr;
	nat_daddr = v->nat_daddr;
	*ct_flags = v->ct_flags;
	if (ipv4_set_addr(skb, 1, saddr, nat_saddr) < 0 ||
	    ipv4_set_addr(skb, 0, daddr, nat_daddr) < 0)
		return -WEFT_DROP_MALFORMED;
	return 0;
}

#endif
