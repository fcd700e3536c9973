/*
 * eth.h — the Ethernet header: bounds-checked access and MAC rewrite.
 */
#ifndef WEFT_BPF_LIB_ETH_H
#define WEFT_BPF_LIB_ETH_H

#include "common.h"

/* The Ethernet header at skb->data, or NULL when the linear data is
 * shorter than one (the verifier needs the check before any access). */
static __always_inline struct ethhdr *eth_header(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	return eth;
}

/* Make the frame look sent by src to dst (both 6 bytes). */
static __always_inline void eth_rewrite(struct ethhdr *eth, const __u8 *src, const __u8 *dst)
{
	__builtin_memcpy(eth->h_source, src, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, dst, ETH_ALEN);
}

/* a == b, for two 6-byte MACs (in the packet or a map value: byte loads,
 * no alignment assumed). */
static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) |
		(a[3] ^ b[3]) | (a[4] ^ b[4]) | (a[5] ^ b[5])) == 0;
}

#endif
