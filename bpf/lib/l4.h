/*
 * l4.h — the transport ports of an IPv4 packet, and rewriting addresses
 * and ports with their checksums kept right.
 *
 * Only TCP and UDP carry ports that services translate.  A later IPv4
 * fragment (offset > 0) carries none: it is not read here; pod_ingress
 * makes it follow its first fragment (lib/frag.h).
 *
 * Checksums: an address is part of the TCP/UDP pseudo-header, so changing
 * one patches the IP header checksum and the transport checksum
 * (BPF_F_PSEUDO_HDR, which also does the right thing for a GSO packet whose
 * checksum is still partial); a port patches the transport checksum only.
 * A UDP checksum of 0 means "none" and stays 0 (BPF_F_MARK_MANGLED_0).
 * Every rewrite may move the packet data: packet pointers must be derived
 * again afterwards.
 */
#ifndef WEFT_BPF_LIB_L4_H
#define WEFT_BPF_LIB_L4_H

#include "common.h"
#include "ipv4.h"

#define TCP_HLEN	20
#define TCP_F_FIN	0x01
#define TCP_F_SYN	0x02
#define TCP_F_RST	0x04
#define TCP_F_ACK	0x10

struct l4_tuple {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 tcp_flags;		/* TCP: header byte 13 (FIN, SYN, RST, ACK ...) */
	__u16 l4_off;		/* offset of the TCP/UDP header from skb->data */
};

/* Fill t from ip.  1 when the packet is TCP or UDP with its ports read;
 * 0 when it has none (another protocol, a later fragment); -1 when its
 * header does not fit in the packet.  ipv4_header() has checked tot_len
 * against the frame. */
static __always_inline int l4_tuple_read(struct __sk_buff *skb, const struct iphdr *ip,
					 struct l4_tuple *t)
{
	__u32 hlen = (__u32)ip->ihl * 4;
	__u32 off = ETH_HLEN + hlen;
	__be16 ports[2];

	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->frag_off & bpf_htons(IPV4_FRAG_OFFSET))
		return 0;
	if (bpf_ntohs(ip->tot_len) < hlen + (ip->protocol == IPPROTO_TCP ? TCP_HLEN : UDP_HLEN))
		return -1;
	if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
		return -1;
	t->tcp_flags = 0;
	if (ip->protocol == IPPROTO_TCP &&
	    bpf_skb_load_bytes(skb, off + 13, &t->tcp_flags, 1) < 0)
		return -1;
	t->saddr = ip->saddr;
	t->daddr = ip->daddr;
	t->sport = ports[0];
	t->dport = ports[1];
	t->proto = ip->protocol;
	t->l4_off = (__u16)off;
	return 1;
}

/* For programs that only look at TCP/UDP over IPv4 and pass everything
 * else on untouched: 1 with eth, ip and t filled, else 0. */
static __always_inline int l4_packet(struct __sk_buff *skb, struct ethhdr **eth,
				     struct iphdr **ip, struct l4_tuple *t)
{
	struct ethhdr *e = (void *)(long)skb->data;

	if ((void *)(e + 1) > (void *)(long)skb->data_end || e->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	if (ipv4_frame(skb, eth, ip) < 0)
		return 0;
	return l4_tuple_read(skb, *ip, t) > 0;
}

static __always_inline __u32 l4_csum_off(const struct l4_tuple *t)
{
	return t->l4_off + (t->proto == IPPROTO_TCP ? 16 : 6);
}

static __always_inline __u64 l4_csum_flags(const struct l4_tuple *t, __u64 size)
{
	return size | (t->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0);
}

/* Replace the source (src != 0) or destination address.  0 or -1. */
static __always_inline int l4_set_addr(struct __sk_buff *skb, const struct l4_tuple *t, int src,
				       __be32 old, __be32 new)
{
	__u32 off = ETH_HLEN + (src ? __builtin_offsetof(struct iphdr, saddr)
				    : __builtin_offsetof(struct iphdr, daddr));

	if (old == new)
		return 0;
	if (bpf_l4_csum_replace(skb, l4_csum_off(t), old, new,
				l4_csum_flags(t, BPF_F_PSEUDO_HDR | sizeof(new))) < 0)
		return -1;
	if (bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check),
				old, new, sizeof(new)) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0) < 0 ? -1 : 0;
}

/* Replace the source (src != 0) or destination port.  0 or -1. */
static __always_inline int l4_set_port(struct __sk_buff *skb, const struct l4_tuple *t, int src,
				       __be16 old, __be16 new)
{
	if (old == new)
		return 0;
	if (bpf_l4_csum_replace(skb, l4_csum_off(t), old, new, l4_csum_flags(t, sizeof(new))) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, t->l4_off + (src ? 0 : 2), &new, sizeof(new), 0) < 0 ? -1 : 0;
}

#endif
