/*
 * datapath_priv.h — the inside of struct datapath, for the files that make
 * up the datapath module (datapath.c: loading, tc, the core maps;
 * datapath_policy.c: the NetworkPolicy maps).  Nothing outside them
 * includes it.
 */
#ifndef WEFT_AGENT_DATAPATH_PRIV_H
#define WEFT_AGENT_DATAPATH_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "agent/datapath.h"
#include "agent/datapath_map.h"

#define DP_NOBJS		5	/* skeletons */

struct datapath {
	bool in_memory;		/* datapath_opts.in_memory: no skeletons below */
	struct pod_ingress *pod;
	struct vxlan_ingress *vxlan;
	struct node_ingress *node;
	struct pod_egress *pod_out;
	struct svc_egress *svc;
	struct bpf_object *objs[DP_NOBJS];	/* the skeletons' objects, for loops */
	const char *names[DP_NOBJS];
	struct datapath_map maps[DATAPATH_NMAPS];
	uint32_t capacity[DATAPATH_NMAPS];	/* max_entries of each */
	uint32_t max_services, max_backends, max_ct;
	uint32_t ct_source_max;
	uint32_t max_policy, max_policy_ct;
	uint32_t policy_ct_source_max;
	int policy_log_fd;	/* -EOPNOTSUPP in memory */
	int flows_fd;		/* weft_flows; -EOPNOTSUPP in memory */
};

/* The map of id (datapath_map.h for its calls). */
static inline const struct datapath_map *dp_map(const struct datapath *dp, enum datapath_map_id id)
{
	return &dp->maps[id];
}

/* The keys of map m at this moment, at most max (the map's capacity:
 * a walk that restarts because its key was deleted meanwhile cannot run
 * away).  *keys is the caller's to free. */
int datapath_snapshot_keys(const struct datapath_map *m, size_t key_size, size_t max, void **keys,
			   size_t *n);

/* weft_ct's and weft_policy_ct's per-client counts (datapath_ct_closed_add
 * & co. for each). */
int datapath_counts_closed_add(const struct datapath_map *closed, in_addr_t client, uint64_t n);
int datapath_counts_forget(const struct datapath_map *opened, const struct datapath_map *closed,
			   in_addr_t client);
int datapath_counts_closed_foreach(const struct datapath_map *closed,
				   int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg);

/* Every entry of a hash map of up to max entries, read in batches; fn
 * gets copies (it may delete).  fn's non-zero return stops the walk. */
int datapath_batch_foreach(const struct datapath_map *m, size_t ksize, size_t vsize, size_t max,
			   int (*fn)(const void *k, const void *v, void *arg), void *arg);

/* The trie key of subnet/prefixlen, host bits cleared.  -EINVAL beyond 32. */
int datapath_lpm_key(in_addr_t subnet, int prefixlen, struct weft_lpm_key *key);

#endif
