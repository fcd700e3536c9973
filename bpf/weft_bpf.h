/*
 * weft_bpf.h — the one header shared by the eBPF programs (bpf/NAME.bpf.c) and
 * user space (src/agent/datapath.c): map names, key and value layouts, the
 * config entry and the drop reasons.  Changing a layout changes the map's
 * value size, and libbpf then refuses to reuse an old pin (the agent
 * rebuilds), so layouts carry a version in the config entry too.
 *
 * Byte order: IPv4 addresses are kept in network order (__be32) everywhere,
 * as they sit in the packet.  Ifindexes and counters are host order.
 *
 * Maps (pinned by name under the agent's --bpf-pin-dir):
 *
 *   weft_config     array[1]    struct weft_config     node-wide settings
 *   weft_endpoints  hash        __be32 pod IP  -> struct weft_endpoint  (pods on this node)
 *   weft_ipcache    hash        __be32 pod IP  -> struct weft_ipcache_entry (all pods)
 *   weft_nodes      LPM trie    struct weft_lpm_key (subnet) -> struct weft_node_entry
 *   weft_node_ips   hash        __be32 node underlay IP -> struct weft_node_ip
 *                   (every node of the cluster, this one included: the
 *                   only outer sources vxlan_ingress accepts)
 *   weft_drops      percpu array[WEFT_DROP_MAX] __u64 packets dropped, per reason
 *   weft_trace      percpu array[1] struct weft_trace  (only written when the
 *                   program's trace knob is set, i.e. in BPF_PROG_TEST_RUN tests)
 *
 * Invariants:
 *  1. weft_config.version is written last by the agent after a full sync; a
 *     reader that finds version != WEFT_CONFIG_VERSION or ready == 0 treats
 *     the whole pinned state as half-written and rebuilds it.
 *  2. Every weft_endpoints entry has a weft_ipcache entry with the same IP
 *     and node_ip == weft_config.node_ip.
 *  3. Programs never write weft_endpoints, weft_ipcache, weft_nodes or
 *     weft_node_ips; only the agent does.
 *  4. Every weft_nodes entry's node_ip is a key of weft_node_ips (a node
 *     whose subnet we tunnel to is a node we accept tunnel traffic from).
 *
 * Multitenant isolation (the rule; bpf/lib/tenant.h vnid_allowed() is its
 * one implementation).  A packet from a pod of VNID src to a pod of VNID
 * dst is
 *
 *	allowed iff src == dst || src == 0 || dst == 0
 *
 * VNID 0 is global (the namespace "default", and every namespace in flat
 * mode, where the rule therefore always allows).  The source VNID is the
 * sending endpoint's (pod_ingress, which has checked that the source IP
 * and MAC are the pod's own) or the VXLAN VNI (vxlan_ingress, which has
 * checked that the outer source is a node of weft_node_ips).  The check is
 * made where the destination pod is known: pod_ingress for a pod on the
 * same node, vxlan_ingress (the receiving node) for a pod elsewhere.
 */
#ifndef WEFT_BPF_H
#define WEFT_BPF_H

#include <linux/types.h>

#define WEFT_CONFIG_VERSION	2	/* 2: vxlan_port, weft_node_ips, tenant isolation */

#define WEFT_MAX_ENDPOINTS	4096
#define WEFT_MAX_IPCACHE	65536
#define WEFT_MAX_NODES		4096	/* weft_nodes and weft_node_ips */

#define WEFT_VXLAN_PORT_DEFAULT	4789	/* IANA; what vxlan_port 0 means */

/* node-wide settings; key 0 of weft_config.  64 bytes, 8-byte aligned
 * (version 1 was 56: a pin of that size is stale and rebuilt). */
struct weft_config {
	__u32 version;		/* WEFT_CONFIG_VERSION once complete, 0 while (re)building */
	__u32 ready;		/* 1 after the first full sync */
	__be32 node_ip;		/* this node's underlay (InternalIP) address */
	__be32 gateway_ip;	/* first host of the node subnet, on the VXLAN device */
	__be32 subnet;		/* node subnet, network address */
	__be32 subnet_mask;	/* node subnet mask, network order */
	__be32 cluster_net;	/* first cluster network (for masquerade decisions) */
	__be32 cluster_mask;
	__u32 vxlan_ifindex;	/* the node's VXLAN device (collect-metadata mode) */
	__u32 tunnel_ttl;	/* outer TTL, 64 */
	__u64 netns_cookie;	/* identity of the node's network namespace
				 * (SO_NETNS_COOKIE, never reused); a different
				 * one means the node "rebooted": rebuild */
	__u64 generation;	/* bumped by the agent on every full reconcile */
	__u16 vxlan_port;	/* host order: the cluster's VXLAN UDP port (every
				 * node's); pods may not send UDP to it. 0 = 4789 */
	__u16 pad16;		/* 0 */
	__u32 pad32;		/* 0 */
};

/* a pod on this node */
struct weft_endpoint {
	__u32 ifindex;		/* host end of the pod's veth, in the node namespace */
	__u32 vnid;		/* the pod's namespace VNID (0 until multitenancy) */
	__u8 pod_mac[6];	/* MAC of the pod's eth0 */
	__u8 gw_mac[6];		/* MAC of the host end: the pod's gateway */
	__u32 flags;		/* WEFT_EP_F_* */
};
#define WEFT_EP_F_READY 1

/* any pod in the cluster */
struct weft_ipcache_entry {
	__be32 node_ip;		/* node the pod runs on */
	__u32 vnid;
};

struct weft_lpm_key {
	__u32 prefixlen;	/* 0..32 */
	__be32 addr;
};

/* a node subnet */
struct weft_node_entry {
	__be32 node_ip;		/* where the subnet lives: tunnel remote */
	__u32 node_id;
};

/* a node's underlay address; the key of weft_node_ips is the __be32 IP */
struct weft_node_ip {
	__u32 node_id;
};

/* why a packet was dropped; index into weft_drops; names in weft_drop_names */
enum weft_drop_reason {
	WEFT_DROP_NONE = 0,
	WEFT_DROP_MALFORMED,		/* short or invalid header */
	WEFT_DROP_NOT_READY,		/* config missing or incomplete */
	WEFT_DROP_NO_ENDPOINT,		/* VXLAN: destination is no local pod */
	WEFT_DROP_TTL,			/* TTL would reach 0 */
	WEFT_DROP_TUNNEL_KEY,		/* bpf_skb_get/set_tunnel_key failed */
	WEFT_DROP_UNKNOWN_NODE,		/* VXLAN: outer source not in weft_node_ips */
	WEFT_DROP_ARP,			/* ARP we do not answer: not a request, a probe or
				 * gratuitous one, or ARP arriving over the
				 * tunnel (a sender that is not the pod: SPOOFED_*) */
	WEFT_DROP_UNSUPPORTED_L3,	/* not IPv4 or ARP (IPv6 is not supported yet) */
	WEFT_DROP_SPOOFED_IP,		/* pod: source IP (or ARP sender IP) is not the
					 * sending pod's (no endpoint on this ifindex) */
	WEFT_DROP_SPOOFED_MAC,		/* pod: Ethernet source (or ARP sender MAC) is
					 * not the sending pod's */
	WEFT_DROP_ISOLATED,		/* the VNID rule refused it (see above) */
	WEFT_DROP_TUNNEL_INJECT,	/* UDP to the VXLAN port of a node: a pod
					 * trying to inject tunnel traffic */
	WEFT_DROP_MAX
};

#define WEFT_DROP_NAMES {			\
	"none", "malformed", "not-ready",	\
	"no-endpoint", "ttl-exceeded",		\
	"tunnel-key", "unknown-node", "arp",	\
	"unsupported-l3", "spoofed-ip",		\
	"spoofed-mac", "isolated",		\
	"tunnel-inject" }

/* what a program decided, for tests (written only when trace is on) */
enum weft_action {
	WEFT_ACT_NONE = 0,
	WEFT_ACT_PASS,		/* to the host stack (TC_ACT_OK) */
	WEFT_ACT_DROP,
	WEFT_ACT_ARP_REPLY,	/* ARP answered, redirected back out ifindex */
	WEFT_ACT_LOCAL,		/* redirect_peer to a local pod */
	WEFT_ACT_TUNNEL,	/* tunnel key set, redirected to the VXLAN device */
};

struct weft_trace {
	__u32 action;		/* enum weft_action */
	__u32 drop_reason;	/* enum weft_drop_reason when action == DROP */
	__u32 ifindex;		/* redirect target */
	__u32 tunnel_id;	/* VNI set or read */
	__u32 tunnel_remote;	/* host order, as bpf_tunnel_key has it */
	__u32 count;		/* programs runs that wrote this entry */
};

#endif
