/*
 * common.h — what every weft eBPF program includes first: the kernel UAPI
 * headers a tc program needs, libbpf's helper declarations and the layouts
 * shared with user space (bpf/weft_bpf.h).
 *
 * The programs are built against UAPI headers only (no vmlinux.h): they read
 * packets and maps, never kernel structures, so they need no CO-RE.
 */
#ifndef WEFT_BPF_LIB_COMMON_H
#define WEFT_BPF_LIB_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "bpf/weft_bpf.h"

#ifndef PACKET_HOST
#define PACKET_HOST	0	/* linux/if_packet.h, which drags in more than we need */
#endif

#define WEFT_TUNNEL_TTL_DEFAULT	64

/* Bytes at the front of the packet that the caller wants to read or write
 * in place.  tc programs see only the linear part of the skb through
 * skb->data; headers of a GSO packet from a veth are normally linear, but
 * nothing promises it, so pull when they are not.  Pulling invalidates
 * every packet pointer: call this before deriving any.  0, or -1 when the
 * packet is shorter than len or the pull failed. */
static __always_inline int skb_linearize_head(struct __sk_buff *skb, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if (data + len <= data_end)
		return 0;
	if (skb->len < len)
		return -1;
	return bpf_skb_pull_data(skb, len) < 0 ? -1 : 0;
}

#endif
