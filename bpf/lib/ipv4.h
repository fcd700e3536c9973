/*
 * ipv4.h — the IPv4 header: validation and the forwarding TTL decrement.
 *
 * Routers check what they rely on (RFC 1812 5.2.2): version, header length
 * and that the total length fits the frame.  The header checksum is not
 * verified: the receiving host does that, and a forwarder only keeps it
 * consistent (incrementally, RFC 1624) when it changes the TTL.
 */
#ifndef WEFT_BPF_LIB_IPV4_H
#define WEFT_BPF_LIB_IPV4_H

#include "common.h"

#define IPV4_FRAME_MIN	(ETH_HLEN + sizeof(struct iphdr))	/* 34 */

/* The IPv4 header after the Ethernet header, or NULL when malformed.  Call
 * skb_linearize_head(skb, IPV4_FRAME_MIN) first.  Options, if any, stay
 * unread (nothing here needs them). */
static __always_inline struct iphdr *ipv4_header(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + ETH_HLEN;
	__u32 total;

	if ((void *)(ip + 1) > data_end)
		return NULL;
	if (ip->version != 4 || ip->ihl < 5)
		return NULL;
	total = bpf_ntohs(ip->tot_len);
	if (total < (__u32)ip->ihl * 4 || total > skb->len - ETH_HLEN)
		return NULL;
	return ip;
}

/* The Ethernet and IPv4 headers of skb, pulled into the linear part
 * first: what every program does on entry and again after a rewrite
 * (which invalidates packet pointers).  0, or -1 when the packet is no
 * valid IPv4 frame. */
static __always_inline int ipv4_frame(struct __sk_buff *skb, struct ethhdr **eth,
				      struct iphdr **ip)
{
	if (skb_linearize_head(skb, IPV4_FRAME_MIN) < 0)
		return -1;
	*eth = (void *)(long)skb->data;
	if ((void *)(*eth + 1) > (void *)(long)skb->data_end)
		return -1;
	*ip = ipv4_header(skb);
	return *ip ? 0 : -1;
}

/* The 16-bit header word holding TTL and protocol, as the checksum sees it. */
static __always_inline __be16 ipv4_ttl_word(__u8 ttl, __u8 protocol)
{
	return bpf_htons((__u16)((__u16)ttl << 8 | protocol));
}

/* Decrement the TTL of a packet being forwarded and patch the checksum.
 * The caller has checked ttl > 1 (a TTL that would reach 0 is a drop).
 * Invalidates every packet pointer (bpf_l3_csum_replace may move data).
 * 0 or -1. */
static __always_inline int ipv4_ttl_decrement(struct __sk_buff *skb, struct iphdr *ip)
{
	__be16 before = ipv4_ttl_word(ip->ttl, ip->protocol);
	__be16 after = ipv4_ttl_word(ip->ttl - 1, ip->protocol);

	ip->ttl--;
	if (bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check),
				before, after, sizeof(__u16)) < 0)
		return -1;
	return 0;
}

#define IPV4_FRAG_OFFSET	0x1fff	/* in frag_off, host order */
#define IPV4_FRAG_MORE		0x2000	/* MF */
#define UDP_HLEN		8

/* Replace the source (src != 0) or destination address of the IPv4
 * header, patching its checksum only: for packets whose transport
 * checksum does not cover the address (ICMP, a later fragment).
 * Invalidates packet pointers.  0 or -1. */
static __always_inline int ipv4_set_addr(struct __sk_buff *skb, int src, __be32 old, __be32 new)
{
	__u32 off = ETH_HLEN + (src ? __builtin_offsetof(struct iphdr, saddr)
				    : __builtin_offsetof(struct iphdr, daddr));

	if (old == new)
		return 0;
	if (bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check),
				old, new, sizeof(new)) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0) < 0 ? -1 : 0;
}

/* The UDP destination port (host order) of ip into *port.  1 when read;
 * 0 when there is none to read: not UDP, or a later fragment (offset > 0:
 * its payload is the middle of a datagram, whose ports only the first
 * fragment carries, so a later fragment's bytes must not be taken for
 * them); -1 when a UDP header the packet claims to start with does not
 * fit in it (malformed).  ipv4_header() has checked tot_len against the
 * frame, so the load cannot run past it. */
static __always_inline int ipv4_udp_dport(struct __sk_buff *skb, const struct iphdr *ip,
					  __u16 *port)
{
	__u32 hlen = (__u32)ip->ihl * 4;
	__be16 dport;

	if (ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->frag_off & bpf_htons(IPV4_FRAG_OFFSET))
		return 0;
	if (bpf_ntohs(ip->tot_len) < hlen + UDP_HLEN)
		return -1;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + hlen + 2, &dport, sizeof(dport)) < 0)
		return -1;
	*port = bpf_ntohs(dport);
	return 1;
}

#endif
