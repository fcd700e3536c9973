/*
 * datapath_priv.h — the inside of struct datapath, for the files that make
 * up the datapath module (datapath.c: loading, tc, the core maps;
 * datapath_policy.c: the NetworkPolicy maps).  Nothing outside them
 * includes it.
 */
#ifndef WEFT_AGENT_DATAPATH_PRIV_H
#define WEFT_AGENT_DATAPATH_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "agent/datapath.h"

#define DP_NOBJS		5	/* skeletons */

struct datapath {
	struct pod_ingress *pod;
	struct vxlan_ingress *vxlan;
	struct node_ingress *node;
	struct pod_egress *pod_out;
	struct svc_egress *svc;
	struct bpf_object *objs[DP_NOBJS];	/* the skeletons' objects, for loops */
	const char *names[DP_NOBJS];
	int services_fd;
	int backends_fd;
	int ct_fd;
	int ct_opened_fd;
	int ct_closed_fd;
	int affinity_fd;
	uint32_t max_services, max_backends, max_ct;
	uint32_t ct_source_max;
	int policy_fd;
	int policy_cidrs_fd;
	int policy_ct_fd;
	int policy_ct_opened_fd;
	int policy_ct_closed_fd;
	int policy_log_fd;
	uint32_t max_policy, max_policy_ct;
	uint32_t policy_ct_source_max;
	int config_fd;
	int endpoints_fd;
	int ipcache_fd;
	int nodes_fd;
	int nodeips_fd;
	int drops_fd;
	int trace_fd;
	int svcdev_fd;
};

/* The keys of map fd at this moment, at most max (the map's capacity:
 * a walk that restarts because its key was deleted meanwhile cannot run
 * away).  *keys is the caller's to free. */
int datapath_snapshot_keys(int fd, size_t key_size, size_t max, void **keys, size_t *n);

/* weft_ct's and weft_policy_ct's per-client counts (datapath_ct_closed_add
 * & co. for each). */
int datapath_counts_closed_add(int closed_fd, in_addr_t client, uint64_t n);
int datapath_counts_forget(int opened_fd, int closed_fd, in_addr_t client);
int datapath_counts_closed_foreach(int closed_fd,
				   int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg);

/* Every entry of a hash map of up to max entries, read in batches; fn
 * gets copies (it may delete).  fn's non-zero return stops the walk. */
int datapath_batch_foreach(int fd, size_t ksize, size_t vsize, size_t max,
			   int (*fn)(const void *k, const void *v, void *arg), void *arg);

/* The trie key of subnet/prefixlen, host bits cleared.  -EINVAL beyond 32. */
int datapath_lpm_key(in_addr_t subnet, int prefixlen, struct weft_lpm_key *key);

#endif
