/*
 * datapath_policy.c — the NetworkPolicy maps of the data plane (layouts:
 * bpf/weft_bpf.h, "NetworkPolicy"): the rules (weft_policy) and each rule
 * set's ipBlock prefixes (weft_policy_cidrs), which only the agent writes,
 * and the connections the programs track (weft_policy_ct, with its
 * per-client counts), which the agent's sweep expires.  Each call is one syscall or
 * a walk; see datapath.h for the conventions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <linux/bpf.h>

#include "agent/datapath.h"
#include "agent/datapath_priv.h"

int datapath_policy_put(struct datapath *dp, const struct weft_policy_key *k,
			const struct weft_policy_value *v)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_POLICY), k, v, BPF_ANY);
}

int datapath_policy_del(struct datapath *dp, const struct weft_policy_key *k)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_POLICY), k);
}

int datapath_policy_foreach(struct datapath *dp,
			    int (*fn)(const struct weft_policy_key *k, const struct weft_policy_value *v,
				      void *arg),
			    void *arg)
{
	struct weft_policy_key *keys = NULL;
	struct weft_policy_value v;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_POLICY), sizeof(*keys), dp->max_policy,
				     (void **)&keys, &n);
	for (size_t i = 0; err == 0 && i < n; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_POLICY), &keys[i], &v) < 0)
			continue;
		err = fn(&keys[i], &v, arg);
	}
	free(keys);
	return err;
}

static int cidr_key(uint32_t policy_id, int dir, in_addr_t addr, int prefixlen,
		    struct weft_policy_cidr_key *k)
{
	if (prefixlen < 0 || prefixlen > 32 || (dir != WEFT_POLICY_INGRESS && dir != WEFT_POLICY_EGRESS))
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->prefixlen = WEFT_POLICY_CIDR_PREFIX + (uint32_t)prefixlen;
	k->policy_id = htonl(policy_id);
	k->dir = (uint8_t)dir;
	k->addr = prefixlen ? addr & htonl(~0u << (32 - prefixlen)) : 0;
	return 0;
}

int datapath_policy_cidr_put(struct datapath *dp, uint32_t policy_id, int dir, in_addr_t addr,
			     int prefixlen, uint32_t id)
{
	struct weft_policy_cidr v = { .id = id };
	struct weft_policy_cidr_key key;
	int err = cidr_key(policy_id, dir, addr, prefixlen, &key);

	if (err < 0)
		return err;
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_POLICY_CIDRS), &key, &v, BPF_ANY);
}

int datapath_policy_cidr_del(struct datapath *dp, uint32_t policy_id, int dir, in_addr_t addr,
			     int prefixlen)
{
	struct weft_policy_cidr_key key;
	int err = cidr_key(policy_id, dir, addr, prefixlen, &key);

	if (err < 0)
		return err;
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_POLICY_CIDRS), &key);
}

int datapath_policy_cidr_foreach(struct datapath *dp,
				 int (*fn)(uint32_t policy_id, int dir, in_addr_t addr, int prefixlen,
					   uint32_t id, void *arg),
				 void *arg)
{
	struct weft_policy_cidr_key *keys = NULL;
	struct weft_policy_cidr v;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_POLICY_CIDRS), sizeof(*keys), dp->max_policy,
				     (void **)&keys, &n);
	for (size_t i = 0; err == 0 && i < n; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_POLICY_CIDRS), &keys[i], &v) < 0 ||
		    keys[i].prefixlen < WEFT_POLICY_CIDR_PREFIX)
			continue;
		err = fn(ntohl(keys[i].policy_id), keys[i].dir, keys[i].addr,
			 (int)(keys[i].prefixlen - WEFT_POLICY_CIDR_PREFIX), v.id, arg);
	}
	free(keys);
	return err;
}

int datapath_policy_ct_get(struct datapath *dp, const struct weft_ct_key *k,
			   struct weft_policy_ct_entry *e)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_POLICY_CT), k, e);
}

int datapath_policy_ct_put(struct datapath *dp, const struct weft_ct_key *k,
			   const struct weft_policy_ct_entry *e)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_POLICY_CT), k, e, BPF_ANY);
}

int datapath_policy_ct_del(struct datapath *dp, const struct weft_ct_key *k)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_POLICY_CT), k);
}

struct pct_walk {
	int (*fn)(const struct weft_ct_key *k, const struct weft_policy_ct_entry *e, void *arg);
	void *arg;
};

static int pct_walk_one(const void *k, const void *v, void *arg)
{
	const struct pct_walk *w = arg;

	return w->fn(k, v, w->arg);
}

int datapath_policy_ct_foreach(struct datapath *dp,
			       int (*fn)(const struct weft_ct_key *k,
					 const struct weft_policy_ct_entry *e, void *arg),
			       void *arg)
{
	struct pct_walk w = { fn, arg };

	return datapath_batch_foreach(dp_map(dp, DATAPATH_MAP_POLICY_CT), sizeof(struct weft_ct_key),
				      sizeof(struct weft_policy_ct_entry), dp->max_policy_ct,
				      pct_walk_one, &w);
}

int datapath_policy_ct_opened_get(struct datapath *dp, in_addr_t client, uint64_t *n)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_POLICY_CT_OPENED), &client, n);
}

int datapath_policy_ct_closed_add(struct datapath *dp, in_addr_t client, uint64_t n)
{
	return datapath_counts_closed_add(dp_map(dp, DATAPATH_MAP_POLICY_CT_CLOSED), client, n);
}

int datapath_policy_ct_source_forget(struct datapath *dp, in_addr_t client)
{
	return datapath_counts_forget(dp_map(dp, DATAPATH_MAP_POLICY_CT_OPENED),
				      dp_map(dp, DATAPATH_MAP_POLICY_CT_CLOSED), client);
}

int datapath_policy_ct_closed_foreach(struct datapath *dp,
				      int (*fn)(in_addr_t client, uint64_t closed, void *arg),
				      void *arg)
{
	return datapath_counts_closed_foreach(dp_map(dp, DATAPATH_MAP_POLICY_CT_CLOSED), fn, arg);
}

int datapath_policy_log_fd(struct datapath *dp)
{
	return dp->policy_log_fd;	/* -EOPNOTSUPP in memory */
}

uint32_t datapath_policy_ct_source_max(struct datapath *dp)
{
	return dp->policy_ct_source_max;
}

void datapath_policy_capacities(struct datapath *dp, uint32_t *rules, uint32_t *ct)
{
	*rules = dp->max_policy;
	*ct = dp->max_policy_ct;
}
