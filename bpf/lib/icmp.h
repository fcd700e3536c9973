/*
 * icmp.h — ICMP errors a pod sends: are they about a packet the pod
 * received, and, when they are about a translated service connection,
 * the translation back to the frontend the client knows.
 *
 * An ICMP error (destination unreachable, time exceeded, parameter
 * problem) quotes the IP header and the first 8 bytes of the packet it is
 * about (RFC 792).  Whoever receives the error — a pod, or the node's own
 * stack, whose connection tracking relates it to the quoted flow and NATs
 * it to that flow's owner — acts on the quote: a socket gets
 * ECONNREFUSED, a route gets a smaller MTU.  So a pod may only quote what
 * it received itself:
 *
 *  1. the quoted destination is the pod (a pod is a host, not a router);
 *  2. the error goes back to the quoted source (outer destination ==
 *     quoted source);
 *  3. the quoted source and the pod pass the VNID rule (lib/tenant.h), as
 *     the outer packet must.
 *
 * Anything else is ICMP_FORGED; a quote that does not hold an IP header
 * and 8 bytes after it is ICMP_TRUNCATED.  Other ICMP (echo and the rest)
 * is not looked at.  pod_ingress judges the errors of its pods;
 * vxlan_ingress judges those of pods of other nodes again (the sender's
 * VNID is the VNI) before it translates them: a genuine error passes
 * both.
 *
 * Services: a backend's error about a translated connection quotes
 * {client -> backend:port}, which the client never sent.  The connection's
 * REV entry (looked up read-only, keyed as the backend's answers are)
 * gives the frontend: the quoted destination becomes the frontend and its
 * port, the outer source the frontend; with SNAT the quoted source, its
 * port and the outer destination become the original client
 * (a hairpin, or an outside client SNATed to a node's gateway).  The IP
 * checksums (outer and quoted) and the ICMP checksum are patched; the
 * quoted transport checksum covers a datagram nobody has whole and is
 * left as it is.  This is what lets path-MTU discovery work through a
 * service: "fragmentation needed" reaches the client about the address it
 * used.
 */
#ifndef WEFT_BPF_LIB_ICMP_H
#define WEFT_BPF_LIB_ICMP_H

#include "common.h"
#include "ct.h"
#include "ipv4.h"
#include "l4.h"
#include "lb.h"	/* LB_NONE, LB_DONE */
#include "maps.h"
#include "tenant.h"

#define ICMP_HLEN		8
#define ICMP_TYPE_UNREACH	3
#define ICMP_TYPE_TIME_EXCEEDED	11
#define ICMP_TYPE_PARAM_PROBLEM	12
#define ICMP_QUOTE_L4		8	/* bytes of the quoted datagram after its header */

/* an ICMP error and its quote; offsets from skb->data */
struct icmp_error {
	__u32 icmp_off;
	__u32 quote_off;	/* the quoted IP header */
	__u32 quote_l4_off;	/* the quoted transport header */
	__be32 saddr;		/* quoted */
	__be32 daddr;
	__be16 sport;		/* quoted TCP/UDP ports, else 0 */
	__be16 dport;
	__u8 proto;
};

/* Is the ICMP packet ip an error (unreachable, time exceeded, parameter
 * problem)?  Its quote is read and judged by icmp_error_read(). */
static __always_inline int icmp_is_error(struct __sk_buff *skb, const struct iphdr *ip)
{
	__u8 type;

	if (bpf_skb_load_bytes(skb, ETH_HLEN + (__u32)ip->ihl * 4, &type, 1) < 0)
		return 0;
	return type == ICMP_TYPE_UNREACH || type == ICMP_TYPE_TIME_EXCEEDED ||
	       type == ICMP_TYPE_PARAM_PROBLEM;
}

/* Is ip (a first or only fragment) an ICMP error?  1 with e filled; 0 when
 * not (another protocol, another ICMP type); a negative drop reason when
 * its quote does not fit. */
static __always_inline int icmp_error_read(struct __sk_buff *skb, const struct iphdr *ip,
					   struct icmp_error *e)
{
	__u32 hlen = (__u32)ip->ihl * 4, total = bpf_ntohs(ip->tot_len), qlen;
	struct iphdr q;
	__be16 ports[2];
	__u8 type;

	if (total < hlen + ICMP_HLEN)
		return -WEFT_DROP_MALFORMED;
	e->icmp_off = ETH_HLEN + hlen;
	if (bpf_skb_load_bytes(skb, e->icmp_off, &type, 1) < 0)
		return -WEFT_DROP_MALFORMED;
	if (type != ICMP_TYPE_UNREACH && type != ICMP_TYPE_TIME_EXCEEDED &&
	    type != ICMP_TYPE_PARAM_PROBLEM)
		return 0;
	e->quote_off = e->icmp_off + ICMP_HLEN;
	if (total < hlen + ICMP_HLEN + sizeof(q) ||
	    bpf_skb_load_bytes(skb, e->quote_off, &q, sizeof(q)) < 0)
		return -WEFT_DROP_ICMP_TRUNCATED;
	qlen = (__u32)q.ihl * 4;
	if (q.version != 4 || qlen < sizeof(q) ||
	    total < hlen + ICMP_HLEN + qlen + ICMP_QUOTE_L4)
		return -WEFT_DROP_ICMP_TRUNCATED;
	e->quote_l4_off = e->quote_off + qlen;
	e->saddr = q.saddr;
	e->daddr = q.daddr;
	e->proto = q.protocol;
	e->sport = 0;
	e->dport = 0;
	if ((q.protocol == IPPROTO_TCP || q.protocol == IPPROTO_UDP) &&
	    !(q.frag_off & bpf_htons(IPV4_FRAG_OFFSET))) {
		if (bpf_skb_load_bytes(skb, e->quote_l4_off, ports, sizeof(ports)) < 0)
			return -WEFT_DROP_ICMP_TRUNCATED;
		e->sport = ports[0];
		e->dport = ports[1];
	}
	return 1;
}

/* Rules 1-3 above for an error sent from ip->saddr, of VNID src_vnid: a
 * pod here (anti-spoofed), or a pod of another node (vxlan_ingress: the
 * VNI; its node judged the error already, and a genuine error passes
 * again).  WEFT_DROP_NONE or WEFT_DROP_ICMP_FORGED. */
static __always_inline __u32 icmp_error_check(const struct icmp_error *e, const struct iphdr *ip,
					      __u32 src_vnid)
{
	const struct weft_ipcache_entry *peer;
	__be32 quoted_src = e->saddr;

	if (e->daddr != ip->saddr || ip->daddr != e->saddr)
		return WEFT_DROP_ICMP_FORGED;
	peer = bpf_map_lookup_elem(&weft_ipcache, &quoted_src);
	if (peer && !vnid_allowed(src_vnid, peer->vnid))
		return WEFT_DROP_ICMP_FORGED;
	return WEFT_DROP_NONE;
}

/* The REV entry of the translated connection the quote is about: keyed as
 * the backend's answers are, {backend, client as sent}.  The one place
 * that knows the REV key. */
static __always_inline const struct weft_ct_entry *icmp_ct_rev(const struct icmp_error *e)
{
	struct l4_tuple t = {
		.saddr = e->daddr, .daddr = e->saddr,
		.sport = e->dport, .dport = e->sport, .proto = e->proto,
	};

	return ct_lookup(&t, WEFT_CT_REV);
}

/* Replace 4 bytes of the quoted IP header at off (an address): the quoted
 * header checksum, then the ICMP checksum over both changes.  0 or -1. */
static __always_inline int icmp_quote_set_addr(struct __sk_buff *skb, const struct icmp_error *e,
					       __u32 off, __be32 old, __be32 new)
{
	__u32 qcheck = e->quote_off + __builtin_offsetof(struct iphdr, check);
	__u32 icheck = e->icmp_off + 2;
	__be16 c_old, c_new;

	if (old == new)
		return 0;
	if (bpf_skb_load_bytes(skb, qcheck, &c_old, sizeof(c_old)) < 0 ||
	    bpf_l3_csum_replace(skb, qcheck, old, new, sizeof(new)) < 0 ||
	    bpf_skb_load_bytes(skb, qcheck, &c_new, sizeof(c_new)) < 0 ||
	    bpf_l4_csum_replace(skb, icheck, old, new, sizeof(new)) < 0 ||
	    bpf_l4_csum_replace(skb, icheck, c_old, c_new, sizeof(c_new)) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0) < 0 ? -1 : 0;
}

/* Replace a quoted port at off: the ICMP checksum.  0 or -1. */
static __always_inline int icmp_quote_set_port(struct __sk_buff *skb, const struct icmp_error *e,
					       __u32 off, __be16 old, __be16 new)
{
	if (old == new)
		return 0;
	if (bpf_l4_csum_replace(skb, e->icmp_off + 2, old, new, sizeof(new)) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0) < 0 ? -1 : 0;
}

/* A backend's error about a translated connection: back to the frontend
 * (see above).  LB_NONE (not about one), LB_DONE (*ct_flags the
 * connection's), or a negative drop reason.  Invalidates packet pointers. */
static __always_inline int icmp_error_translate(struct __sk_buff *skb, const struct icmp_error *e,
						const struct iphdr *ip, __u16 *ct_flags)
{
	const struct weft_ct_entry *rev;
	__be32 outer_src = ip->saddr, outer_dst = ip->daddr, frontend, client;
	__be16 fport, cport;
	__u16 flags;

	if (e->proto != IPPROTO_TCP && e->proto != IPPROTO_UDP)
		return LB_NONE;
	rev = icmp_ct_rev(e);
	if (!rev)
		return LB_NONE;
	frontend = rev->nat_addr;
	fport = rev->nat_port;
	client = rev->nat_addr2;
	cport = rev->nat_port2;
	flags = rev->flags;
	if (ipv4_set_addr(skb, 1, outer_src, frontend) < 0 ||
	    icmp_quote_set_addr(skb, e, e->quote_off + __builtin_offsetof(struct iphdr, daddr),
				e->daddr, frontend) < 0 ||
	    icmp_quote_set_port(skb, e, e->quote_l4_off + 2, e->dport, fport) < 0)
		return -WEFT_DROP_MALFORMED;
	if ((flags & WEFT_CT_F_SNAT) &&
	    (ipv4_set_addr(skb, 0, outer_dst, client) < 0 ||
	     icmp_quote_set_addr(skb, e, e->quote_off + __builtin_offsetof(struct iphdr, saddr),
				 e->saddr, client) < 0 ||
	     icmp_quote_set_port(skb, e, e->quote_l4_off, e->sport, cport) < 0))
		return -WEFT_DROP_MALFORMED;
	*ct_flags = flags;
	return LB_DONE;
}

#endif
