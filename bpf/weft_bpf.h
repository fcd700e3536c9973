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
 *   weft_services   hash        struct weft_svc_key -> struct weft_svc_value
 *                   (slot 0 of a frontend: the service; slots 1..count: its
 *                   backends, in scope ALL and LOCAL; see "Services" below)
 *   weft_backends   hash        __u32 backend ID -> struct weft_backend
 *   weft_ct         hash        struct weft_ct_key -> struct weft_ct_entry
 *                   (written by the programs; expired by the agent)
 *   weft_ct_opened  hash        __be32 client -> __u64 connections the
 *                   programs opened for that client, less those they
 *                   closed themselves (programs only, atomic adds)
 *   weft_ct_closed  hash        __be32 client -> __u64 connections of that
 *                   client the agent's sweep deleted (agent only)
 *   weft_affinity   LRU hash    struct weft_affinity_key -> struct weft_affinity
 *   weft_frags      LRU hash    struct weft_frag_key -> struct weft_frag
 *                   (fragmented datagrams a pod here is sending; see
 *                   "Fragments" below)
 *   weft_rev_frags  LRU hash    struct weft_frag_key -> struct weft_frag
 *                   (fragmented answers of backends on other nodes that
 *                   vxlan_ingress translated back; "Fragments")
 *   weft_policy     LPM trie    struct weft_policy_key -> struct weft_policy_value
 *                   (the rules of the pods here; see "NetworkPolicy")
 *   weft_policy_cidrs LPM trie  struct weft_policy_cidr_key -> struct weft_policy_cidr
 *                   (per rule set and direction: the prefixes its ipBlocks
 *                   name -> their CIDR identity in that rule set)
 *   weft_policy_ct  hash        struct weft_ct_key (dir 0) -> struct weft_policy_ct_entry
 *                   (connections of pods here; written by the programs,
 *                   expired by the agent)
 *   weft_policy_ct_opened, weft_policy_ct_closed
 *                   hash        __be32 client -> __u64, as weft_ct_opened/closed
 *   weft_svc_dev    array[1]    struct weft_svc_dev    the node's service device
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
 *  3. Programs never write weft_endpoints, weft_ipcache, weft_nodes,
 *     weft_node_ips, weft_services, weft_backends, weft_svc_dev, weft_policy
 *     or weft_policy_cidrs; only the agent does.
 *     Programs create weft_ct, weft_ct_opened and weft_affinity entries;
 *     the agent deletes expired ones and those of removed backends, and
 *     writes weft_ct_closed; the same for weft_policy_ct (and its opened,
 *     closed counts).  weft_frags and weft_rev_frags are the
 *     programs' alone (LRU: they never fill, entries age out by
 *     last_seen).
 *  4. Every weft_nodes entry's node_ip is a key of weft_node_ips (a node
 *     whose subnet we tunnel to is a node we accept tunnel traffic from).
 *
 * Multitenant isolation (the rule; bpf/lib/tenant.h vnid_allowed() is its
 * one implementation).  A packet from a pod of VNID src to a pod of VNID
 * dst is
 *
 *	allowed iff src == dst || src == 0 || dst == 0
 *
 * VNID 0 is global (the namespace "default", and every namespace in the
 * flat and networkpolicy modes, where the rule therefore always allows).  The source VNID is the
 * sending endpoint's (pod_ingress, which has checked that the source IP
 * and MAC are the pod's own) or the VXLAN VNI (vxlan_ingress, which has
 * checked that the outer source is a node of weft_node_ips).  The check is
 * made where the destination pod is known: pod_ingress for a pod on the
 * same node, vxlan_ingress (the receiving node) for a pod elsewhere.
 */
#ifndef WEFT_BPF_H
#define WEFT_BPF_H

#include <linux/types.h>

#define WEFT_CONFIG_VERSION	7	/* 2: vxlan_port, weft_node_ips, tenant isolation;
					 * 3: services (underlay_ifindex, service maps);
					 * 4: weft_frags, ICMP error and fragment drops;
					 * 5: open-datagram limit (weft_frag flags, next),
					 *    weft_rev_frags;
					 * 6: NetworkPolicy (identities, policy maps,
					 *    weft_policy_ct);
					 * 7: weft_policy_cidrs per rule set */

#define WEFT_MAX_ENDPOINTS	4096
#define WEFT_MAX_IPCACHE	65536
#define WEFT_MAX_NODES		4096	/* weft_nodes and weft_node_ips */

#define WEFT_VXLAN_PORT_DEFAULT	4789	/* IANA; what vxlan_port 0 means */

/* default capacities of the service maps (the agent's flags change them) */
#define WEFT_MAX_SERVICES	327680	/* weft_services entries: per frontend 1 + its
					 * backend slots (65,536 frontends with
					 * 262,144 slots) */
#define WEFT_MAX_BACKENDS	262144
#define WEFT_MAX_CT		524288	/* two entries per connection */
#define WEFT_MAX_CT_SOURCES	65536	/* weft_ct_opened, weft_ct_closed: clients */
#define WEFT_CT_SOURCE_SHARE	16	/* by default a client holds at most
					 * 1/16 of weft_ct's connections
					 * (16,384 of 262,144: 32,768 entries) */
#define WEFT_MAX_AFFINITY	65536

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
	__u32 underlay_ifindex;	/* the device holding node_ip: NodePort/VIP
				 * traffic arrives there, and answers to
				 * outside clients leave through it */
};

/* The node's service device (weft_svc; key 0 of weft_svc_dev), written by
 * the agent when it sets the device up (before the config entry is made
 * complete).  The node's own connections to cluster IPs and VIPs leave
 * through it (svc_egress); their answers and refusals enter the node's
 * stack through its ingress, in frames addressed to its MAC (else the
 * stack would take them for another host's, PACKET_OTHERHOST, and drop
 * them).  Not every kind of device can be given a MAC (an ifb cannot), so
 * the device's own is recorded. */
struct weft_svc_dev {
	__u32 ifindex;		/* 0: no service device (yet) */
	__u8 mac[6];
	__u16 pad;		/* 0 */
};

/* a pod on this node */
struct weft_endpoint {
	__u32 ifindex;		/* host end of the pod's veth, in the node namespace */
	__u32 vnid;		/* the pod's namespace VNID (0 until multitenancy) */
	__u8 pod_mac[6];	/* MAC of the pod's eth0 */
	__u8 gw_mac[6];		/* MAC of the host end: the pod's gateway */
	__u32 flags;		/* WEFT_EP_F_* */
	__u32 policy_id;	/* its rules in weft_policy (with WEFT_EP_F_ISOLATE_*) */
	__u32 pad;		/* 0 */
};
#define WEFT_EP_F_READY		0x01
#define WEFT_EP_F_ISOLATE_IN	0x02	/* a NetworkPolicy isolates its ingress */
#define WEFT_EP_F_ISOLATE_OUT	0x04	/* ... its egress */
#define WEFT_EP_F_POLICY_FULL	0x08	/* its rules could not all be written
					 * (weft_policy full): what isolation
					 * denies is counted POLICY_MAP_FULL */
#define WEFT_EP_F_LOG_ALLOW	0x10	/* new connections policy allows are logged
					 * (rate-limited: weft_policy_log) */
#define WEFT_EP_F_LOG_DENY	0x20	/* ... those it denies */

/* any pod in the cluster */
struct weft_ipcache_entry {
	__be32 node_ip;		/* node the pod runs on */
	__u32 vnid;
	__u32 identity;		/* its policy identity (WEFT_ID_*; this node's numbering) */
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

/*
 * Services
 *
 * A frontend is (address, port, protocol): a cluster IP, a LoadBalancer
 * VIP, or address 0 for a NodePort (any node's underlay IP).  Its entries in
 * weft_services are
 *
 *	{addr, port, proto, SCOPE_ALL,   slot 0}    the service: svc_id, counts, flags
 *	{addr, port, proto, SCOPE_ALL,   slot i}    i = 1..count: backend_id
 *	{addr, port, proto, SCOPE_LOCAL, slot i}    i = 1..local_count: backends
 *	                                            on this node (traffic policy Local)
 *
 * A new connection picks slot 1 + random % count.  The agent keeps each
 * slot array dense with O(1) writes per change: adding writes slot n+1,
 * then the count; removing slot i moves slot n into i, writes the count,
 * then deletes slot n — a reader holding the old count still finds a
 * backend in every slot it may pick.
 *
 * Connection tracking: a translated connection has two weft_ct entries on
 * the node that translated it:
 *
 *	FWD {client, frontend}          -> backend address/port (+ SNAT source)
 *	REV {backend, client as sent}   -> frontend address/port (+ original client)
 *
 * The client is a pod, an outside client (node_ingress), or the node
 * itself: a socket of the node's stack whose packets the kernel routed to
 * the service device, source the node's gateway (svc_egress; the entries
 * carry WEFT_CT_F_HOST, and the answers enter the stack through that
 * device, weft_svc_dev).
 *
 * "client as sent" is the client, or the SNAT source: WEFT_HAIRPIN_IP when
 * a pod reaches itself through its service, or, with a port from the SNAT
 * range, this node's gateway when an outside client's connection goes to a
 * backend on another node, this node's IP when it goes to a backend
 * outside the pod network (the reply must come back here).  A FWD entry is
 * used only while weft_backends[backend_id] still is that backend, so a
 * removed backend's flows choose again at their next packet.
 *
 * Conntrack admission (bpf/lib/lb.h, lb_forward): entries are written only
 * for a connection that passed every check (the tenant rule for the
 * backend chosen, later NetworkPolicy) and, for TCP, only by a SYN
 * without ACK; any other TCP packet to a frontend without an entry is
 * dropped (CT_NO_CONNECTION).  Both entries are created with BPF_NOEXIST:
 * a REV key is what the backend answers, {backend, client address and
 * port as sent}, and when another connection holds it (a client reusing
 * one source port towards two frontends that share a backend) the new
 * connection's source port is rewritten to a free one of the SNAT range
 * (WEFT_CT_F_SNAT, the client's address kept), so no connection's entry
 * is ever overwritten.  A client (the FWD key's source) holds at most
 * ct_source_max connections: weft_ct_opened[client] - weft_ct_closed[client].
 *
 * The pair lives and dies together: whoever deletes one entry deletes the
 * other (the agent's sweep deletes both when either has expired, and an
 * entry whose partner is gone at its next pass; a program deletes both on
 * a TCP RST from a pod or the node, either way, so a reset connection
 * frees its client's slot at once, and a client that opens and resets
 * connections quickly is not held back by ones already gone).
 */
#define WEFT_SCOPE_ALL		0
#define WEFT_SCOPE_LOCAL	1

struct weft_svc_key {
	__be32 addr;		/* 0 = NodePort: any node IP */
	__be16 port;
	__u8 proto;		/* IPPROTO_TCP, IPPROTO_UDP */
	__u8 scope;		/* WEFT_SCOPE_* */
	__u16 slot;		/* 0 = the service entry */
	__u16 pad;		/* 0 */
};

struct weft_svc_value {
	__u32 svc_id;		/* slot 0: the service port's ID (affinity key) */
	__u32 backend_id;	/* slot >= 1 */
	__u16 count;		/* slot 0: backends in SCOPE_ALL */
	__u16 local_count;	/* slot 0: backends in SCOPE_LOCAL */
	__u16 flags;		/* slot 0: WEFT_SVC_F_* */
	__u16 pad;
	__u32 affinity_timeout;	/* slot 0: seconds, with WEFT_SVC_F_AFFINITY */
};
#define WEFT_SVC_F_CLUSTER_IP	0x01	/* frontend kinds */
#define WEFT_SVC_F_NODE_PORT	0x02
#define WEFT_SVC_F_LOAD_BALANCER 0x04
#define WEFT_SVC_F_AFFINITY	0x08	/* sessionAffinity ClientIP */
#define WEFT_SVC_F_ETP_LOCAL	0x10	/* externalTrafficPolicy Local */
#define WEFT_SVC_F_ITP_LOCAL	0x20	/* internalTrafficPolicy Local */

struct weft_backend {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 flags;		/* WEFT_BE_F_* */
	__u32 svc_id;		/* the service port it serves */
};
#define WEFT_BE_F_LOCAL		0x01	/* a pod on this node */

#define WEFT_CT_FWD		0
#define WEFT_CT_REV		1

struct weft_ct_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 dir;		/* WEFT_CT_FWD / WEFT_CT_REV */
	__u16 pad;		/* 0 */
};

struct weft_ct_entry {
	__be32 nat_addr;	/* FWD: backend (new destination); REV: frontend (new source) */
	__be32 nat_addr2;	/* FWD: the source to send with (the client's own
				 * unless WEFT_CT_F_SNAT); REV: the original client
				 * (the new destination with WEFT_CT_F_SNAT) */
	__be16 nat_port;	/* FWD: backend port; REV: frontend port */
	__be16 nat_port2;	/* FWD: new source port with SNAT; REV: original client port */
	__u32 backend_id;	/* FWD */
	__u32 svc_id;
	__u32 last_seen;	/* WEFT_CT_TICK units of bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u16 flags;		/* WEFT_CT_F_* */
	__u16 pad;
};
#define WEFT_CT_F_SYN		0x01	/* TCP: opened by a SYN, no answer seen yet */
#define WEFT_CT_F_ESTABLISHED	0x02	/* TCP, per entry: FWD, the client sent a
					 * segment without SYN; REV, the backend
					 * answered.  The pair is established when
					 * both entries are (the agent's sweep) */
#define WEFT_CT_F_CLOSING	0x04	/* TCP: FIN, or a RST from outside the cluster,
					 * seen (a pod's or the node's RST deletes the pair) */
#define WEFT_CT_F_EXTERNAL	0x08	/* the client is outside the cluster: REV
					 * answers leave through the underlay */
#define WEFT_CT_F_SNAT		0x10	/* the source was rewritten (nat_addr2) */
#define WEFT_CT_F_HOST		0x20	/* the client is this node's stack (svc_egress):
					 * REV answers enter the stack through the
					 * service device (weft_svc_dev) */
#define WEFT_CT_F_REPLIED	0x40	/* weft_policy_ct, TCP: the answering side sent
					 * a segment */
#define WEFT_CT_F_ACKED		0x80	/* weft_policy_ct, TCP: the opening side sent
					 * one without SYN; with REPLIED: ESTABLISHED */
#define WEFT_CT_TICK_SHIFT	30	/* a tick is 2^30 ns, about 1.07 s */

#define WEFT_HAIRPIN_IP		0xa9fe2a01	/* 169.254.42.1, host order: the
						 * source a pod sees when it reaches
						 * itself through a service */
#define WEFT_SNAT_PORT_MIN	61000	/* outside Linux's ephemeral range */
#define WEFT_SNAT_PORT_MAX	65535

/*
 * NetworkPolicy
 *
 * Identities: the agent gives every pod of the cluster an identity, one
 * per distinct (namespace, labels, named ports): pods that no selector and
 * no named port can tell apart share one.  The numbers are this node's own
 * (the agent writes both the ipcache and the rules), never sent between
 * nodes.
 *
 * ipBlocks: weft_policy_cidrs holds, for each rule set and direction, the
 * prefixes its own ipBlocks name (every cidr and except), each with a CIDR
 * identity local to that rule set.  Whether an ipBlock {cidr C, except
 * E...} holds an address depends only on its longest prefix P there (the
 * prefixes holding one address nest, so P lies inside C iff the address
 * does, and the same for each E), so the agent gives P an identity for
 * what the blocks holding P allow (prefixes that allow the same share
 * one; a prefix that allows nothing, an except, has identity 0), and
 * writes a rule for each identity.  A rule set's keys are therefore
 * bounded by its own prefixes, whatever other policies name.
 *
 * Rules: weft_policy is an LPM trie over
 *
 *	{policy_id, peer, dir} (72 bits, always whole)  proto (8)  port (16)
 *
 * An endpoint's weft_endpoint.policy_id names its rule set (the agent
 * shares one among the pods of one identity, and writes a changed set
 * under a new id before it moves the endpoints over, so each endpoint
 * changes from the old set to the new in one write).  peer 0 = any peer;
 * a prefix of 72 = every protocol and port, 80 = every port of proto, 96
 * minus k = a block of 2^k ports (endPort ranges are a few such blocks).
 *
 * A new connection of a pod isolated in a direction (WEFT_EP_F_ISOLATE_*)
 * is allowed when one of three lookups matches: the peer's pod identity
 * (weft_ipcache; WEFT_ID_WORLD for an address that is no pod), its CIDR
 * identity in the rule set, or 0 (any peer).  So a connection costs at
 * most one ipcache, one weft_policy_cidrs and three weft_policy lookups
 * for each isolated end, whatever the number of policies and rules.
 * Egress is judged on
 * the source pod's node (pod_ingress), ingress on the destination pod's
 * (pod_ingress for a pod of the same node, vxlan_ingress from another
 * node, pod_egress from the node's stack, lb_admit for a service
 * connection before anything is written).  Always allowed: a pod to
 * itself (the hairpin source included), a node to its own pods and back.
 *
 * Connections: weft_policy_ct holds every connection a pod here opened or
 * accepted, keyed by its first packet as judged (after service
 * translation: the client's and the backend's real addresses), one entry
 * per connection; a packet matching an entry either way is part of an
 * allowed connection and is not judged again.  Every connection is
 * tracked, isolated or not, so a policy that starts isolating a pod does
 * not cut the answers to connections allowed before (those connections
 * live on; new ones are judged).  A TCP connection is opened by a SYN
 * alone; UDP, SCTP and ICMP by any packet.  Each client holds at most
 * policy_ct_source_max entries (weft_policy_ct_opened less
 * weft_policy_ct_closed, as for weft_ct); the agent's sweep expires them
 * with weft_ct's timeouts.  A connection that cannot be tracked (the cap,
 * a full map) is dropped (POLICY_CT_LIMIT, POLICY_CT_FULL) when an end is
 * isolated, and passes untracked when none is.
 */
#define WEFT_MAX_POLICY		1048576	/* weft_policy entries, and as many for
					 * weft_policy_cidrs (agent flag); LPM tries
					 * take memory per entry written, not per
					 * entry allowed */
#define WEFT_MAX_POLICY_CT	262144	/* weft_policy_ct connections (agent flag) */
#define WEFT_POLICY_CT_SOURCE_SHARE 16	/* a client holds at most 1/16 */

#define WEFT_ID_ANY		0	/* in a rule: any peer */
#define WEFT_ID_WORLD		1	/* an address that is no pod */
#define WEFT_ID_FIRST		16	/* pod identities from here */
#define WEFT_ID_CIDR		0x80000000u	/* set in every CIDR identity */

#define WEFT_POLICY_INGRESS	0
#define WEFT_POLICY_EGRESS	1

#define WEFT_POLICY_PREFIX_ALL	72	/* every protocol and port */
#define WEFT_POLICY_PREFIX_PROTO 80	/* every port of one protocol */
#define WEFT_POLICY_PREFIX_PORT	96	/* one port */

struct weft_policy_key {
	__u32 prefixlen;	/* bits of what follows that must match */
	__be32 policy_id;	/* network order, as every field an LPM compares */
	__be32 peer;		/* identity, network order; 0 any */
	__u8 dir;		/* WEFT_POLICY_INGRESS / EGRESS */
	__u8 proto;		/* IPPROTO_TCP, UDP, SCTP (any other: prefix 72) */
	__be16 port;
};

struct weft_policy_value {
	__u32 rule;		/* the agent's number for the rules that allow
				 * (the policy log names their policies) */
};

#define WEFT_POLICY_CIDR_PREFIX	64	/* {policy_id, dir}: always whole */

struct weft_policy_cidr_key {
	__u32 prefixlen;	/* 64 + the prefix's length */
	__be32 policy_id;	/* network order, as in weft_policy_key */
	__u8 dir;		/* WEFT_POLICY_INGRESS / EGRESS */
	__u8 pad[3];
	__be32 addr;
};

struct weft_policy_cidr {
	__u32 id;		/* WEFT_ID_CIDR | n (n local to the rule set), or
				 * 0: no ipBlock of the rule set holds it */
};

/* The policy log: a record per new connection of a pod whose rule set
 * logs (WEFT_EP_F_LOG_*), at most policy_log_rate a second on each CPU
 * (the rest are counted in weft_policy_log_state.suppressed), in the ring
 * buffer weft_policy_log, which the agent reads. */
#define WEFT_POLICY_LOG_BYTES	(256 * 1024)
#define WEFT_POLICY_LOG_RATE	100	/* records a second per CPU, by default */

struct weft_policy_event {
	__u64 time_ns;		/* bpf_ktime_get_ns */
	__be32 saddr;		/* as judged: after service translation */
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 allowed;		/* 1 allowed, 0 denied */
	__u8 dir;		/* the side that decided: WEFT_POLICY_INGRESS (the
				 * destination's rules) or EGRESS (the source's) */
	__u8 pad;
	__u32 reason;		/* denied: the drop reason */
	__u32 rule_out;		/* the egress rule that allowed (weft_policy_value.rule), 0 none */
	__u32 rule_in;		/* the ingress rule that allowed, 0 none */
};

/* per CPU: the second being counted and its records */
struct weft_policy_log_state {
	__u64 second;
	__u32 count;
	__u32 pad;
	__u64 suppressed;	/* records over the rate, or with the buffer full */
};

/* The flow log (weftctl flows): an event per dropped packet, always, and
 * while the agent listens (flows_on in each program's .bss) one per new
 * TCP connection and its answer (SYN, SYN-ACK) and one per
 * WEFT_FLOWS_SAMPLE UDP and ICMP packets forwarded (by a program's
 * decision: not what it leaves to the stack untouched); at most flows_rate
 * events a second on each CPU (the rest counted in
 * weft_flow_state.suppressed), in the ring buffer weft_flows.  A drop
 * costs its traffic a lookup and a record; a forwarded packet, while
 * nobody listens, a load and a branch. */
#define WEFT_FLOWS_BYTES	(256 * 1024)
#define WEFT_FLOWS_RATE		1000	/* events a second per CPU, by default */
#define WEFT_FLOWS_SAMPLE	16	/* UDP and ICMP: one event per this many packets */

enum weft_flow_kind {
	WEFT_FLOW_DROP = 1,	/* dropped: reason */
	WEFT_FLOW_NEW,		/* a TCP SYN forwarded: a connection opens */
	WEFT_FLOW_REPLY,	/* a TCP SYN-ACK forwarded: its answer */
	WEFT_FLOW_SAMPLE,	/* a UDP or ICMP packet forwarded (sampled) */
};

/* where the program that saw it runs */
enum weft_flow_from {
	WEFT_FROM_POD = 1,	/* pod_ingress: leaving a pod */
	WEFT_FROM_TUNNEL,	/* vxlan_ingress: from another node */
	WEFT_FROM_NODE,		/* node_ingress: into the node's underlay */
	WEFT_FROM_HOST_TO_POD,	/* pod_egress: the node's stack to a pod */
	WEFT_FROM_HOST_SVC,	/* svc_egress: the node's own service traffic */
};

struct weft_flow {
	__u64 time_ns;		/* bpf_ktime_get_ns */
	__be32 saddr;		/* as the packet was when the program ended */
	__be32 daddr;
	__be16 sport;		/* TCP, UDP; ICMP: 0 */
	__be16 dport;
	__u8 proto;
	__u8 kind;		/* enum weft_flow_kind */
	__u8 from;		/* enum weft_flow_from */
	__u8 action;		/* enum weft_action, as the program decided */
	__u32 reason;		/* DROP: enum weft_drop_reason */
	__u32 ifindex;		/* the device it came in on */
	__u32 tunnel_id;	/* TUNNEL (or from it): the VNI */
	__u32 tunnel_remote;	/* ... the other node, host order */
};

/* per CPU: the second being counted, its events, what the programs noted
 * for the event of the packet running now */
struct weft_flow_state {
	__u64 second;
	__u32 count;
	__u32 reason;		/* the last drop's (count_drop) */
	__u64 suppressed;	/* events over the rate, or with the buffer full */
	__u32 action;		/* the last verdict's, while flows_on */
	__u32 tunnel_id;
	__u32 tunnel_remote;
	__u32 sampled;		/* UDP and ICMP packets since the last sample */
};
_Static_assert(sizeof(struct weft_flow_state) % 8 == 0, "a per-CPU value's stride is its size");

struct weft_policy_ct_entry {
	__u32 last_seen;	/* conntrack ticks */
	__u16 flags;		/* WEFT_CT_F_SYN, REPLIED, ACKED, ESTABLISHED
				 * (both ways seen past the SYN), CLOSING */
	__u16 pad;
};

/*
 * Fragments
 *
 * Only the first fragment of an IPv4 datagram carries its ports (and an
 * ICMP message's type), so only it can be translated and judged.
 * pod_ingress judges it as any packet and, when it lets it through,
 * remembers the datagram in weft_frags: where it went (the addresses after
 * translation, the conntrack flags that chose the way out).  A later
 * fragment (offset > 0) follows that record: same rewrite, same way; one
 * without a record is dropped (FRAG_ORPHAN), never left to the node's
 * reassembly.
 *
 * Slots: the key is the sender and a slot, 0 .. WEFT_FRAG_SLOTS - 1; the
 * value holds the datagram's whole identity (destination, IP ID,
 * protocol).  A datagram's home slot is a hash of that identity, and its
 * probe sequence is home, home + 1, ... (mod WEFT_FRAG_SLOTS):
 *
 *  1. A first fragment takes the first slot of its sequence that is free:
 *     empty, finished (WEFT_FRAG_F_DONE), expired (older than
 *     WEFT_FRAG_TICKS conntrack ticks) or holding this very datagram.
 *  2. A later fragment looks for its identity along the same sequence and
 *     stops at the first empty slot: a slot is overwritten, never emptied,
 *     so a datagram sits before every empty slot of its sequence (only an
 *     LRU eviction could break that, and the capacity rules it out).
 *  3. A datagram is finished when its last fragment (more-fragments clear,
 *     offset > 0) comes right after the fragments before it, all seen in
 *     order (next: where they end).  A sender's stack sends a datagram's
 *     fragments in order, so every datagram it completes frees its slot;
 *     a bare last fragment after a gap frees nothing (the node's
 *     reassembly queue for it still waits for the middle).
 *
 * So a fragment costs at most WEFT_FRAG_SLOTS lookups (one in the usual
 * case: the home slot), and an unfragmented packet none.
 *
 * Per-pod bound (pod_ingress): a pod owns at most WEFT_FRAG_SLOTS entries
 * of weft_frags, and a new datagram of it can only take one of its own
 * free slots; when all of them hold live, unfinished datagrams its first
 * fragment is dropped (FRAG_LIMIT), before any translation.  A first
 * fragment that never completes opens a reassembly queue wherever it is
 * reassembled (the node's stack, masquerade's conntrack defrag, a pod),
 * so a pod opens at most WEFT_FRAG_SLOTS of them per WEFT_FRAG_TICKS.
 * The capacity (WEFT_MAX_FRAGS) holds every slot of WEFT_MAX_ENDPOINTS
 * pods, so one pod's datagrams never push out another's.
 *
 * Answers over the tunnel (vxlan_ingress, weft_rev_frags): a backend on
 * another node answering a connection this node translated sends its
 * first fragment here, where it is translated back (REV) and recorded
 * under the backend's address as received, with the same slots; its
 * later fragments get the same rewrite and way.  Nothing is dropped
 * there: with every slot busy the home slot is overwritten (the
 * backend's own node has bounded its open datagrams), and a later
 * fragment without a record passes as it came, as every fragment of
 * pod-to-pod traffic between nodes does (its first fragment was judged
 * on the sender's node).  Only answers of translated connections are
 * recorded, in a map as large as weft_frags; were it ever to evict a
 * record, that datagram's later fragments would pass untranslated.
 */
#define WEFT_FRAG_SLOTS		16	/* fragmented datagrams in flight per sender */
#define WEFT_MAX_FRAGS		(WEFT_MAX_ENDPOINTS * WEFT_FRAG_SLOTS)
#define WEFT_FRAG_TICKS		2	/* about 2 s */

struct weft_frag_key {
	__be32 saddr;		/* the sender: a pod here, or (weft_rev_frags) a
				 * backend elsewhere, as it sent the datagram */
	__u32 slot;		/* 0 .. WEFT_FRAG_SLOTS - 1 */
};

struct weft_frag {
	__be32 daddr;		/* as the sender sent it */
	__be32 nat_saddr;	/* the addresses the first fragment left with */
	__be32 nat_daddr;
	__be16 id;		/* IP identification */
	__u8 proto;
	__u8 flags;		/* WEFT_FRAG_F_* */
	__u16 ct_flags;		/* WEFT_CT_F_* of the translated connection, or 0 */
	__u16 next;		/* 8-byte units: where the fragments seen in order end */
	__u32 last_seen;	/* conntrack ticks (WEFT_CT_TICK_SHIFT), of the first fragment */
};
#define WEFT_FRAG_F_DONE	0x01	/* the last fragment came, in order: the slot is free */

struct weft_affinity_key {
	__u32 svc_id;
	__be32 client;
};

struct weft_affinity {
	__u32 backend_id;
	__u32 last_seen;	/* ticks, as weft_ct_entry */
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
	WEFT_DROP_NO_BACKEND,		/* service without (local) endpoints, and the
					 * refusal could not be sent (or it is
					 * externalTrafficPolicy Local here) */
	WEFT_DROP_CT_FULL,		/* no room in weft_ct (or no SNAT port) */
	WEFT_DROP_SERVICE_MAP,		/* a service entry points at a missing slot
					 * or backend (the agent is mid-update) */
	WEFT_DROP_NO_SERVICE,		/* svc_egress: routed to the service device
					 * (a cluster IP or VIP) but nothing to
					 * translate: no frontend for its address,
					 * port and protocol, not TCP/UDP, or not
					 * from the node's gateway address (a
					 * forwarded packet, or a socket bound to
					 * another address) */
	WEFT_DROP_EXTERNAL_BACKEND,	/* svc_egress: the node's own connection got
					 * a backend outside the pod network (host-
					 * network or hand-written endpoint): refused
					 * with a RST / ICMP unreachable, counted here */
	WEFT_DROP_CT_NO_CONNECTION,	/* TCP to a frontend that is not a SYN (or
					 * is SYN+ACK, RST, FIN) and belongs to no
					 * tracked connection: not translated, no
					 * entry written */
	WEFT_DROP_CT_SOURCE_LIMIT,	/* a new connection of a client that already
					 * holds ct_source_max connections */
	WEFT_DROP_ICMP_FORGED,		/* pod, or a pod of another node over the
					 * tunnel: an ICMP error (unreachable, time
					 * exceeded, parameter problem) that is not
					 * about a packet the sender received: the
					 * quoted destination is not the sender, the
					 * error does not go back to the quoted
					 * source, or the VNID rule refuses the
					 * quoted pair */
	WEFT_DROP_ICMP_TRUNCATED,	/* pod, tunnel: an ICMP error whose quoted IP
					 * header and 8 bytes after it do not fit */
	WEFT_DROP_FRAG_ORPHAN,		/* pod: a later IPv4 fragment whose first
					 * fragment was not let through (or too long
					 * ago, or its slot was reused) */
	WEFT_DROP_NO_SUBNET,		/* pod: to a cluster network address in no
					 * node subnet (and no service) */
	WEFT_DROP_FRAG_LIMIT,		/* pod: a first IPv4 fragment while all its
					 * WEFT_FRAG_SLOTS datagrams are open (live,
					 * unfinished): see "Fragments" */
	WEFT_DROP_POLICY_INGRESS,	/* a new connection no NetworkPolicy of the
					 * isolated destination pod allows */
	WEFT_DROP_POLICY_EGRESS,	/* ... of the isolated source pod */
	WEFT_DROP_POLICY_CT_FULL,	/* a connection of an isolated pod that
					 * weft_policy_ct has no room to track */
	WEFT_DROP_POLICY_CT_LIMIT,	/* ... of a client that holds
					 * policy_ct_source_max connections */
	WEFT_DROP_POLICY_MAP_FULL,	/* denied to a pod whose rules did not fit
					 * in weft_policy (WEFT_EP_F_POLICY_FULL) */
	WEFT_DROP_MAX
};

#define WEFT_DROP_NAMES {			\
	"none", "malformed", "not-ready",	\
	"no-endpoint", "ttl-exceeded",		\
	"tunnel-key", "unknown-node", "arp",	\
	"unsupported-l3", "spoofed-ip",		\
	"spoofed-mac", "isolated",		\
	"tunnel-inject", "no-backend",		\
	"ct-full", "service-map",		\
	"no-service", "external-backend",	\
	"ct-no-connection", "ct-source-limit",	\
	"icmp-forged", "icmp-truncated",	\
	"frag-orphan", "no-subnet",		\
	"frag-limit", "policy-denied-ingress",	\
	"policy-denied-egress", "policy-ct-full", \
	"policy-ct-source-limit", "policy-map-full" }

/* what a program decided, for tests (written only when trace is on) */
enum weft_action {
	WEFT_ACT_NONE = 0,
	WEFT_ACT_PASS,		/* to the host stack (TC_ACT_OK) */
	WEFT_ACT_DROP,
	WEFT_ACT_ARP_REPLY,	/* ARP answered, redirected back out ifindex */
	WEFT_ACT_LOCAL,		/* to a local pod: redirect_peer (svc_egress:
				 * redirect to the host end of its veth) */
	WEFT_ACT_TUNNEL,	/* tunnel key set, redirected to the VXLAN device */
	WEFT_ACT_REJECT,	/* TCP RST / ICMP unreachable sent back out ifindex */
	WEFT_ACT_UNDERLAY,	/* redirect_neigh out of the underlay device */
	WEFT_ACT_HOST,		/* into the node's stack through the service
				 * device (redirect to its ingress) */
};

/* A trace (weftctl trace): BPF_PROG_TEST_RUN of the loaded programs with
 * WEFT_TRACE_MARK as the skb's mark in its ctx.  Such a run changes no
 * state of the programs (conntrack, affinity, fragments, per-client
 * counts, drops, the policy log): it writes only its CPU's weft_trace
 * entry, which says what it decided.  No traffic carries the mark: a
 * packet crossing into the node's namespace has its mark scrubbed, and a
 * test run holds its CPU (bottom halves off) until it returns, so no
 * packet runs there meanwhile.  vxlan_ingress takes a traced packet's
 * tunnel key from cb[0] (VNI) and cb[1] (the sending node, host order):
 * a test run has no tunnel metadata. */
#define WEFT_TRACE_MARK 0x77656674u	/* "weft" */

struct weft_trace {
	__u32 action;		/* enum weft_action */
	__u32 drop_reason;	/* enum weft_drop_reason when action == DROP */
	__u32 ifindex;		/* redirect target */
	__u32 tunnel_id;	/* VNI set or read */
	__u32 tunnel_remote;	/* host order, as bpf_tunnel_key has it */
	__u32 count;		/* programs runs that wrote this entry */
	__u32 tracing;		/* 1: the run on this CPU is a trace (trace_begin) */
	/* what a trace run went through (WEFT_TRACE_S_*), and what each
	 * step found (zero where it did not run) */
	__u32 steps;
	__be32 svc_addr;	/* the frontend: what the client sent to */
	__be16 svc_port;
	__be16 backend_port;
	__be32 backend_addr;	/* the backend the connection goes to */
	__u32 backend_id;
	__u32 src_vnid;		/* the tenants compared last */
	__u32 dst_vnid;
	__u32 rule_out;		/* NetworkPolicy: the rules that allowed each side */
	__u32 rule_in;		/* (0: that side not isolated, or denied) */
	__u32 candidates;	/* a new connection's backend: drawn at random
				 * among this many (0: the client's session
				 * affinity named it) */
	__u32 pad;		/* 0 */
};

/* weft_trace.steps */
#define WEFT_TRACE_S_SERVICE	0x01	/* sent to a frontend: translated to a backend */
#define WEFT_TRACE_S_SVC_NEW	0x02	/* ... chosen now: a new connection (else its entry's) */
#define WEFT_TRACE_S_SVC_REPLY	0x04	/* an answer of a translated connection, sent back
					 * as from its frontend */
#define WEFT_TRACE_S_TENANT	0x08	/* tenants compared: src_vnid, dst_vnid */
#define WEFT_TRACE_S_ISOLATED	0x10	/* ... and they may not talk */
#define WEFT_TRACE_S_POLICY	0x20	/* NetworkPolicy judged a new connection: rule_out,
					 * rule_in; denied: the drop says which side */
#define WEFT_TRACE_S_POLICY_CT	0x40	/* a connection NetworkPolicy already admitted */
#define WEFT_TRACE_S_SVC_AFFINITY 0x80	/* a new connection's backend: the one the
					 * client's session affinity holds */

#endif
