/*
 * tenant.h — multitenant isolation: the VNID rule, and the guard that keeps
 * pods away from the nodes' VXLAN sockets (through which they could send
 * tunnel traffic with a VNI of their choosing).
 *
 * The rule (bpf/weft_bpf.h states it with where it is enforced): a packet
 * from VNID src may reach a pod of VNID dst iff
 *
 *	src == dst || src == 0 || dst == 0
 *
 * VNID 0 is global; in flat mode every VNID is 0, so everything passes.
 * The callers establish src before asking: pod_ingress only after anti-
 * spoofing (the source IP, MAC and ifindex are the sending pod's), and
 * vxlan_ingress only after the outer source is a known node.
 */
#ifndef WEFT_BPF_LIB_TENANT_H
#define WEFT_BPF_LIB_TENANT_H

#include "common.h"
#include "ipv4.h"
#include "trace.h"

static __always_inline int vnid_allowed(__u32 src_vnid, __u32 dst_vnid)
{
	int allowed = src_vnid == dst_vnid || src_vnid == 0 || dst_vnid == 0;

	trace_tenants(src_vnid, dst_vnid, allowed);
	return allowed;
}

/* The VXLAN UDP port of every node (the cluster has one), host order. */
static __always_inline __u16 vxlan_port(const struct weft_config *cfg)
{
	return cfg->vxlan_port ? cfg->vxlan_port : WEFT_VXLAN_PORT_DEFAULT;
}

/* For a packet about to reach a node's stack: WEFT_DROP_TUNNEL_INJECT when
 * it is UDP to the VXLAN port, WEFT_DROP_MALFORMED when it claims a UDP
 * header it does not hold, else WEFT_DROP_NONE.  Later fragments carry no
 * ports and pass: the first fragment alone decides, and without it the
 * datagram never reassembles. */
static __always_inline __u32 tunnel_inject_check(struct __sk_buff *skb, const struct iphdr *ip,
						 const struct weft_config *cfg)
{
	__u16 port = 0;
	int rc = ipv4_udp_dport(skb, ip, &port);

	if (rc < 0)
		return WEFT_DROP_MALFORMED;
	if (rc > 0 && port == vxlan_port(cfg))
		return WEFT_DROP_TUNNEL_INJECT;
	return WEFT_DROP_NONE;
}

#endif
