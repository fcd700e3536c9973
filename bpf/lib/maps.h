/*
 * maps.h — the weft maps, defined once for every program.
 *
 * Each map is pinned by name (LIBBPF_PIN_BY_NAME): user space opens every
 * program with the same pin_root_path, so the first load creates and pins
 * a map and every later load (the other program, or the agent after a
 * restart) reuses the pinned one.  Two programs therefore share one set of
 * maps, and that only works while both are built from these definitions:
 * libbpf refuses to reuse a pin whose type, key size, value size, capacity
 * or flags differ.  Layouts and capacities are in bpf/weft_bpf.h.
 *
 * Invariant: the programs write only weft_drops, weft_trace, weft_flows,
 * weft_flow_state, weft_ct,
 * weft_ct_opened, weft_affinity, weft_frags, weft_rev_frags,
 * weft_policy_ct and weft_policy_ct_opened; the other
 * maps belong to the agent (weft_bpf.h invariant 3).
 */
#ifndef WEFT_BPF_LIB_MAPS_H
#define WEFT_BPF_LIB_MAPS_H

#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weft_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_ENDPOINTS);
	__type(key, __be32);
	__type(value, struct weft_endpoint);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_endpoints SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_IPCACHE);
	__type(key, __be32);
	__type(value, struct weft_ipcache_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_ipcache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, WEFT_MAX_NODES);
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* required for LPM tries */
	__type(key, struct weft_lpm_key);
	__type(value, struct weft_node_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_NODES);
	__type(key, __be32);
	__type(value, struct weft_node_ip);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_node_ips SEC(".maps");

/* The service maps are allocated as entries come (their capacities are
 * large and the agent's flags may raise them): no preallocation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_SERVICES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct weft_svc_key);
	__type(value, struct weft_svc_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_BACKENDS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct weft_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_CT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct weft_ct_key);
	__type(value, struct weft_ct_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_ct SEC(".maps");

/* per-client connection counts (weft_bpf.h, "Services"): opened by the
 * programs, closed by the agent's sweep */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_CT_SOURCES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_ct_opened SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_CT_SOURCES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_ct_closed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WEFT_MAX_AFFINITY);
	__type(key, struct weft_affinity_key);
	__type(value, struct weft_affinity);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_affinity SEC(".maps");

/* LRU: a full map forgets the least recently used datagram; the keys
 * bound what one pod can hold (weft_bpf.h, "Fragments"). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WEFT_MAX_FRAGS);
	__type(key, struct weft_frag_key);
	__type(value, struct weft_frag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_frags SEC(".maps");

/* the same for answers translated back over the tunnel (vxlan_ingress):
 * keyed by the backend that sent them */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WEFT_MAX_FRAGS);
	__type(key, struct weft_frag_key);
	__type(value, struct weft_frag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_rev_frags SEC(".maps");

/* NetworkPolicy (weft_bpf.h, "NetworkPolicy"): the rules and the CIDR
 * identities, the agent's; the tracked connections, the programs'. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, WEFT_MAX_POLICY);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct weft_policy_key);
	__type(value, struct weft_policy_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, WEFT_MAX_POLICY);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct weft_policy_cidr_key);
	__type(value, struct weft_policy_cidr);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_cidrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_POLICY_CT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct weft_ct_key);
	__type(value, struct weft_policy_ct_entry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_ct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_CT_SOURCES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_ct_opened SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WEFT_MAX_CT_SOURCES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_ct_closed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, WEFT_POLICY_LOG_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_log SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weft_policy_log_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_policy_log_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, WEFT_FLOWS_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weft_flow_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_flow_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weft_svc_dev);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_svc_dev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEFT_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weft_trace);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} weft_trace SEC(".maps");

/* The node config when it is complete (weft_bpf.h invariant 1), else NULL:
 * a half-written state must not steer packets. */
static __always_inline const struct weft_config *config_ready(void)
{
	__u32 key = 0;
	const struct weft_config *cfg = bpf_map_lookup_elem(&weft_config, &key);

	if (!cfg || cfg->version != WEFT_CONFIG_VERSION || cfg->ready != 1)
		return NULL;
	return cfg;
}

static __always_inline const struct weft_endpoint *endpoint_lookup(__be32 ip)
{
	return bpf_map_lookup_elem(&weft_endpoints, &ip);
}

/* The node's service device, or NULL when there is none yet. */
static __always_inline const struct weft_svc_dev *svc_dev_lookup(void)
{
	__u32 key = 0;
	const struct weft_svc_dev *d = bpf_map_lookup_elem(&weft_svc_dev, &key);

	return d && d->ifindex ? d : NULL;
}

/* Longest-prefix match of ip among the node subnets. */
static __always_inline const struct weft_node_entry *node_lookup(__be32 ip)
{
	struct weft_lpm_key key = { .prefixlen = 32, .addr = ip };

	return bpf_map_lookup_elem(&weft_nodes, &key);
}

/* Is ip (network order) the underlay address of a node of the cluster? */
static __always_inline int node_ip_known(__be32 ip)
{
	return bpf_map_lookup_elem(&weft_node_ips, &ip) != NULL;
}

#endif
