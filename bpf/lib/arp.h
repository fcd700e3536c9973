/*
 * arp.h — ARP for IPv4 over Ethernet (RFC 826): parsing and turning a
 * request into its reply in place.  What to answer is the program's
 * decision (pod_ingress.bpf.c); this file only knows the format.
 *
 * Layout after the Ethernet header (28 bytes, no padding; spa and tpa are
 * not 4-byte aligned, hence the packed struct and byte-wise access):
 *
 *	hrd(2) pro(2) hln(1) pln(1) op(2) sha(6) spa(4) tha(6) tpa(4)
 */
#ifndef WEFT_BPF_LIB_ARP_H
#define WEFT_BPF_LIB_ARP_H

#include "common.h"

#define ARP_HRD_ETHER	1
#define ARP_OP_REQUEST	1
#define ARP_OP_REPLY	2

struct arp_ipv4 {
	__be16 hrd;
	__be16 pro;
	__u8 hln;
	__u8 pln;
	__be16 op;
	__u8 sha[ETH_ALEN];
	__be32 spa;
	__u8 tha[ETH_ALEN];
	__be32 tpa;
} __attribute__((packed));

#define ARP_FRAME_LEN	(ETH_HLEN + sizeof(struct arp_ipv4))	/* 42 */

/* The ARP body after the Ethernet header, or NULL when it is short or not
 * Ethernet/IPv4 ARP.  Call skb_linearize_head(skb, ARP_FRAME_LEN) first. */
static __always_inline struct arp_ipv4 *arp_header(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct arp_ipv4 *arp = data + ETH_HLEN;

	if ((void *)(arp + 1) > data_end)
		return NULL;
	if (arp->hrd != bpf_htons(ARP_HRD_ETHER) || arp->pro != bpf_htons(ETH_P_IP) ||
	    arp->hln != ETH_ALEN || arp->pln != 4)
		return NULL;
	return arp;
}

/* Turn the request in eth/arp into the reply "tpa is at mac", addressed to
 * the requester: Ethernet and ARP target = the requester's, sender = mac
 * and the address asked for. */
static __always_inline void arp_reply_in_place(struct ethhdr *eth, struct arp_ipv4 *arp,
					       const __u8 *mac)
{
	__be32 asked = arp->tpa;

	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	arp->op = bpf_htons(ARP_OP_REPLY);
	__builtin_memcpy(arp->tha, arp->sha, ETH_ALEN);
	arp->tpa = arp->spa;
	__builtin_memcpy(arp->sha, mac, ETH_ALEN);
	arp->spa = asked;
}

#endif
