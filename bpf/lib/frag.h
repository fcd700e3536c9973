/*
 * frag.h — IPv4 fragments: the first fragment of a datagram is judged (and
 * translated) like any packet and what became of it is remembered; later
 * fragments, which carry no ports, follow that record (layout, slots,
 * bounds and lifetime: bpf/weft_bpf.h, "Fragments").
 *
 * Two users, each with its map (passed in):
 *  - pod_ingress, weft_frags: the datagrams a pod sends.  A first fragment
 *    needs a free slot of its pod (else FRAG_LIMIT), a later fragment a
 *    record (else FRAG_ORPHAN).
 *  - vxlan_ingress, weft_rev_frags: the answers of backends on other nodes
 *    that it translates back.  Nothing is dropped for want of a slot or a
 *    record there.
 *
 *	frag_identify()  on entry, before any rewrite: is the packet a
 *	                 fragment, which datagram (as its sender sent it), its
 *	                 home slot
 *	frag_claim()     a first fragment: the slot it will take (the first
 *	                 free one from home on), or FRAG_LIMIT
 *	frag_remember()  a first fragment let through: record the addresses it
 *	                 leaves with and its conntrack flags, in that slot
 *	frag_note_first() both, for weft_rev_frags (a slot always found)
 *	frag_follow()    a later fragment: the record of its datagram, the same
 *	                 address rewrite, the same flags; the last one in
 *	                 order finishes the datagram (its slot is free again)
 *
 * Cost: an unfragmented packet pays one test of frag_off.  A fragment pays
 * at most WEFT_FRAG_SLOTS (16) map lookups, in frag_claim() or
 * frag_follow(), and one when its home slot answers (free, its own, or
 * empty): the usual case.  A later fragment's rewrite touches the IP
 * header checksum only: the transport checksum, in the first fragment,
 * was patched there for the whole datagram.
 *
 * Why drop orphans, and bound first fragments: a later fragment whose
 * first fragment was refused (or never sent) can only wait in a
 * reassembly queue for a datagram that will never be whole, and so does
 * a first fragment whose later ones never come; sent to the node's stack
 * in numbers, either fills its reassembly memory and every real
 * fragmented datagram of the node fails.
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

/* a datagram as its sender sent it, and this fragment of it */
struct frag_id {
	__u32 kind;		/* FRAG_* */
	__be32 daddr;
	__be16 id;
	__u8 proto;
	__u8 more;		/* more fragments follow (MF) */
	__u16 offset;		/* 8-byte units */
	__u16 units;		/* payload, 8-byte units (rounded down) */
	struct weft_frag_key key;	/* the sender; the home slot until claimed */
};

static __always_inline void frag_identify(const struct iphdr *ip, struct frag_id *fr)
{
	__u16 frag_off;
	__u32 h;

	fr->kind = FRAG_NONE;
	if (!(ip->frag_off & bpf_htons(IPV4_FRAG_MORE | IPV4_FRAG_OFFSET)))
		return;
	frag_off = bpf_ntohs(ip->frag_off);
	fr->offset = frag_off & IPV4_FRAG_OFFSET;
	fr->more = (frag_off & IPV4_FRAG_MORE) != 0;
	fr->kind = fr->offset ? FRAG_LATER : FRAG_FIRST;
	/* ipv4_header() has checked tot_len >= the header */
	fr->units = (__u16)((bpf_ntohs(ip->tot_len) - (__u32)ip->ihl * 4) / 8);
	fr->daddr = ip->daddr;
	fr->id = ip->id;
	fr->proto = ip->protocol;
	/* the home slot: any spread will do, a sender only competes with itself */
	h = ip->daddr ^ ((__u32)ip->id << 8) ^ ip->protocol;
	h ^= h >> 16;
	h *= 0x45d9f3b;
	h ^= h >> 16;
	fr->key.saddr = ip->saddr;
	fr->key.slot = h & (WEFT_FRAG_SLOTS - 1);
}

static __always_inline int frag_same(const struct weft_frag *v, const struct frag_id *fr)
{
	return v->daddr == fr->daddr && v->id == fr->id && v->proto == fr->proto;
}

/* Holds a datagram still in flight: unfinished and not expired. */
static __always_inline int frag_live(const struct weft_frag *v, __u32 now)
{
	return !(v->flags & WEFT_FRAG_F_DONE) && now - v->last_seen <= WEFT_FRAG_TICKS;
}

/* A first fragment: the slot of its sender it will take, into
 * fr->key.slot: the first one from home on that is empty, finished,
 * expired or its own datagram's.  0, or -WEFT_DROP_FRAG_LIMIT when every
 * slot holds another datagram in flight (fr->key.slot stays home). */
static __always_inline int frag_claim(void *map, struct frag_id *fr)
{
	struct weft_frag_key k = fr->key;
	__u32 now = ct_now(), home = fr->key.slot;

	for (__u32 i = 0; i < WEFT_FRAG_SLOTS; i++) {
		const struct weft_frag *v;

		k.slot = (home + i) & (WEFT_FRAG_SLOTS - 1);
		v = bpf_map_lookup_elem(map, &k);
		if (!v || !frag_live(v, now) || frag_same(v, fr)) {
			fr->key.slot = k.slot;
			return 0;
		}
	}
	return -WEFT_DROP_FRAG_LIMIT;
}

/* A first fragment leaves with ip's addresses (after translation): record
 * it in the slot frag_claim() chose. */
static __always_inline void frag_remember(void *map, const struct frag_id *fr,
					  const struct iphdr *ip, __u16 ct_flags)
{
	struct weft_frag v = {};

	if (fr->kind != FRAG_FIRST || tracing())
		return;
	v.daddr = fr->daddr;
	v.nat_saddr = ip->saddr;
	v.nat_daddr = ip->daddr;
	v.id = fr->id;
	v.proto = fr->proto;
	v.ct_flags = ct_flags;
	v.next = fr->units;
	v.last_seen = ct_now();
	bpf_map_update_elem(map, &fr->key, &v, BPF_ANY);	/* LRU: never full */
}

/* A translated answer's first fragment (weft_rev_frags' users) leaves with
 * ip's addresses: record it in the first free slot from home, or, every
 * slot busy, in the home slot (nothing is refused for want of a slot
 * there).  Anything but a first fragment: nothing. */
static __always_inline void frag_note_first(void *map, struct frag_id *fr, const struct iphdr *ip,
					    __u16 ct_flags)
{
	if (fr->kind != FRAG_FIRST)
		return;
	(void)frag_claim(map, fr);
	frag_remember(map, fr, ip, ct_flags);
}

/* The record of fr's datagram, or NULL: along the slots from home, up to
 * the first empty one (a slot is never emptied, only overwritten). */
static __always_inline struct weft_frag *frag_find(void *map, const struct frag_id *fr)
{
	struct weft_frag_key k = fr->key;

	for (__u32 i = 0; i < WEFT_FRAG_SLOTS; i++) {
		struct weft_frag *v;

		k.slot = (fr->key.slot + i) & (WEFT_FRAG_SLOTS - 1);
		v = bpf_map_lookup_elem(map, &k);
		if (!v)
			return NULL;
		if (frag_same(v, fr))
			return v;
	}
	return NULL;
}

/* A later fragment: rewrite it as its first fragment was, *ct_flags its
 * flags.  1 when it followed its record; 0 when it has none (none, or an
 * expired one): untouched; a negative drop reason.  Invalidates packet
 * pointers. */
static __always_inline int frag_follow(void *map, struct __sk_buff *skb, const struct frag_id *fr,
				       const struct iphdr *ip, __u16 *ct_flags)
{
	struct weft_frag *v = frag_find(map, fr);
	__be32 saddr = ip->saddr, daddr = ip->daddr, nat_saddr, nat_daddr;

	if (!v || ct_now() - v->last_seen > WEFT_FRAG_TICKS)
		return 0;
	if (fr->offset == v->next && !tracing()) {	/* in order after all before it */
		if (fr->more)
			v->next = fr->offset + fr->units;
		else
			v->flags |= WEFT_FRAG_F_DONE;
	}
	nat_saddr = v->nat_saddr;
	nat_daddr = v->nat_daddr;
	*ct_flags = v->ct_flags;
	if (ipv4_set_addr(skb, 1, saddr, nat_saddr) < 0 ||
	    ipv4_set_addr(skb, 0, daddr, nat_daddr) < 0)
		return -WEFT_DROP_MALFORMED;
	return 1;
}

#endif
