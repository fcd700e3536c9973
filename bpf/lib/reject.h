/*
 * reject.h — refusing a connection to a service that has no backend, at
 * once, as a host without a listener would: a TCP RST for TCP, an ICMP
 * port unreachable for UDP.  The client's packet is turned into the
 * answer in place and sent back out of the device it came from (the pod's
 * veth, or the underlay for an outside client), or, for a client in the
 * node's own stack (svc_egress, tc egress of the service device), back in
 * through that device's ingress (BPF_F_INGRESS): the frame's MACs are the
 * device's own, so swapped they still address it.
 *
 * Only plain first packets are answered: no IP options, no GSO packet (a
 * new connection starts with a small one), and never a RST with a RST.
 * Anything else is dropped and counted as no-backend.
 *
 * The answer comes from the address the client asked for (the frontend),
 * so the client's stack matches it to its socket.  Checksums are computed
 * in full (bpf_csum_diff over the new headers).
 */
#ifndef WEFT_BPF_LIB_REJECT_H
#define WEFT_BPF_LIB_REJECT_H

#include "common.h"
#include "l4.h"
#include "trace.h"

#define ICMP_DEST_UNREACH	3
#define ICMP_PORT_UNREACH	3

struct reject_ip {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__be16 check;
	__be32 saddr;
	__be32 daddr;
};

struct reject_tcp_frame {
	__u8 dst[ETH_ALEN];
	__u8 src[ETH_ALEN];
	__be16 proto;
	struct reject_ip ip;
	__be16 sport;
	__be16 dport;
	__be32 seq;
	__be32 ack;
	__u8 doff;
	__u8 flags;
	__be16 window;
	__be16 check;
	__be16 urg;
} __attribute__((packed));

struct reject_icmp_frame {
	__u8 dst[ETH_ALEN];
	__u8 src[ETH_ALEN];
	__be16 proto;
	struct reject_ip ip;
	__u8 type;
	__u8 code;
	__be16 check;
	__be32 unused;
	__u8 quote[sizeof(struct iphdr) + UDP_HLEN];	/* the client's IP and UDP headers */
} __attribute__((packed));

/* the TCP pseudo-header and header, contiguous for one checksum */
struct reject_tcp_sum {
	__be32 saddr;
	__be32 daddr;
	__u8 zero;
	__u8 proto;
	__be16 len;
	__be16 sport;
	__be16 dport;
	__be32 seq;
	__be32 ack;
	__u8 doff;
	__u8 flags;
	__be16 window;
	__be16 check;
	__be16 urg;
} __attribute__((packed));

static __always_inline __u16 csum_fold32(__s64 sum)
{
	__u32 c = (__u32)sum;

	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

static __always_inline void reject_ip_fill(struct reject_ip *ip, __u16 len, __u8 proto,
					   __be32 saddr, __be32 daddr)
{
	ip->ver_ihl = 0x45;
	ip->tos = 0;
	ip->tot_len = bpf_htons(len);
	ip->id = 0;
	ip->frag_off = 0;
	ip->ttl = 64;
	ip->protocol = proto;
	ip->check = 0;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip->check = csum_fold32(bpf_csum_diff(NULL, 0, (__be32 *)ip, sizeof(*ip), 0));
}

/* The Ethernet addresses of the answer: the client's, swapped. */
static __always_inline int reject_macs(struct __sk_buff *skb, __u8 *dst, __u8 *src)
{
	__u8 macs[2 * ETH_ALEN];

	if (bpf_skb_load_bytes(skb, 0, macs, sizeof(macs)) < 0)
		return -1;
	__builtin_memcpy(dst, macs + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(src, macs, ETH_ALEN);
	return 0;
}

static __always_inline int reject_tcp(struct __sk_buff *skb, const struct l4_tuple *t,
				      __u64 redirect_flags)
{
	struct reject_tcp_frame f = {};
	struct reject_tcp_sum s = {};
	struct reject_ip iph;
	__be32 seqack[2];
	__u8 doff;
	__u32 len, payload, seq;

	if (t->tcp_flags & TCP_F_RST)
		return drop(WEFT_DROP_NO_BACKEND);
	if (bpf_skb_load_bytes(skb, t->l4_off + 4, seqack, sizeof(seqack)) < 0 ||
	    bpf_skb_load_bytes(skb, t->l4_off + 12, &doff, 1) < 0 ||
	    bpf_skb_load_bytes(skb, ETH_HLEN + 2, &f.ip.tot_len, sizeof(f.ip.tot_len)) < 0)
		return drop(WEFT_DROP_MALFORMED);
	len = bpf_ntohs(f.ip.tot_len);
	doff = (doff >> 4) * 4;
	if (doff < TCP_HLEN || len < sizeof(struct iphdr) + doff)
		return drop(WEFT_DROP_MALFORMED);
	payload = len - sizeof(struct iphdr) - doff;
	if (reject_macs(skb, f.dst, f.src) < 0)
		return drop(WEFT_DROP_MALFORMED);

	f.proto = bpf_htons(ETH_P_IP);
	reject_ip_fill(&iph, sizeof(struct iphdr) + TCP_HLEN, IPPROTO_TCP, t->daddr, t->saddr);
	__builtin_memcpy((__u8 *)&f + ETH_HLEN, &iph, sizeof(iph));
	f.sport = t->dport;
	f.dport = t->sport;
	f.doff = (TCP_HLEN / 4) << 4;
	if (t->tcp_flags & TCP_F_ACK) {		/* RFC 9293 3.10.7.1 */
		f.seq = seqack[1];
		f.ack = 0;
		f.flags = TCP_F_RST;
	} else {
		seq = bpf_ntohl(seqack[0]) + payload;
		if (t->tcp_flags & TCP_F_SYN)
			seq++;
		if (t->tcp_flags & TCP_F_FIN)
			seq++;
		f.seq = 0;
		f.ack = bpf_htonl(seq);
		f.flags = TCP_F_RST | TCP_F_ACK;
	}
	s.saddr = iph.saddr;
	s.daddr = iph.daddr;
	s.proto = IPPROTO_TCP;
	s.len = bpf_htons(TCP_HLEN);
	s.sport = f.sport;
	s.dport = f.dport;
	s.seq = f.seq;
	s.ack = f.ack;
	s.doff = f.doff;
	s.flags = f.flags;
	f.check = csum_fold32(bpf_csum_diff(NULL, 0, (__be32 *)&s, sizeof(s), 0));

	if (bpf_skb_change_tail(skb, sizeof(f), 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, &f, sizeof(f), BPF_F_INVALIDATE_HASH) < 0)
		return drop(WEFT_DROP_NO_BACKEND);
	trace_verdict(WEFT_ACT_REJECT, WEFT_DROP_NONE, skb->ifindex, 0, 0);
	return bpf_redirect(skb->ifindex, redirect_flags);
}

static __always_inline int reject_udp(struct __sk_buff *skb, const struct l4_tuple *t,
				      __u64 redirect_flags)
{
	struct reject_icmp_frame f = {};
	struct reject_ip iph;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, f.quote, sizeof(f.quote)) < 0)
		return drop(WEFT_DROP_MALFORMED);
	if (reject_macs(skb, f.dst, f.src) < 0)
		return drop(WEFT_DROP_MALFORMED);
	f.proto = bpf_htons(ETH_P_IP);
	reject_ip_fill(&iph, sizeof(f) - ETH_HLEN, IPPROTO_ICMP, t->daddr, t->saddr);
	__builtin_memcpy((__u8 *)&f + ETH_HLEN, &iph, sizeof(iph));
	f.type = ICMP_DEST_UNREACH;
	f.code = ICMP_PORT_UNREACH;
	f.check = csum_fold32(bpf_csum_diff(NULL, 0, (__be32 *)&f.type,
					    sizeof(f) - ETH_HLEN - sizeof(f.ip), 0));

	if (bpf_skb_change_tail(skb, sizeof(f), 0) < 0 ||
	    bpf_skb_store_bytes(skb, 0, &f, sizeof(f), BPF_F_INVALIDATE_HASH) < 0)
		return drop(WEFT_DROP_NO_BACKEND);
	trace_verdict(WEFT_ACT_REJECT, WEFT_DROP_NONE, skb->ifindex, 0, 0);
	return bpf_redirect(skb->ifindex, redirect_flags);
}

/* Refuse the connection t of skb (a service without backends), the
 * answer redirected to skb->ifindex with redirect_flags (0: out of it;
 * BPF_F_INGRESS: into the stack through it).  Returns the tc verdict. */
static __always_inline int reject_connection_via(struct __sk_buff *skb, const struct l4_tuple *t,
						 __u64 redirect_flags)
{
	if (t->l4_off != ETH_HLEN + sizeof(struct iphdr) || skb->gso_segs > 1)
		return drop(WEFT_DROP_NO_BACKEND);
	if (t->proto == IPPROTO_TCP)
		return reject_tcp(skb, t, redirect_flags);
	return reject_udp(skb, t, redirect_flags);
}

/* The same, back out of the device the client's packet came in by. */
static __always_inline int reject_connection(struct __sk_buff *skb, const struct l4_tuple *t)
{
	return reject_connection_via(skb, t, 0);
}

#endif
