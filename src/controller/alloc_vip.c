/*
 * alloc_vip.c — the VIP of a Service of type LoadBalancer, from the
 * cluster's VIP pools (ClusterNetwork vipNetworks), published where
 * Kubernetes users look for it: status.loadBalancer.ingress: [{ip: X}].
 *
 * Called by service_admit/service_release (alloc_service.c), inside the
 * same transaction as the Service write; the allocation key
 * ALLOC_VIP<ip> holds "namespace/name" and is guarded by "still absent",
 * so two controllers never hand out one VIP.
 *
 *   type LoadBalancer, had a VIP, no other one asked for ──► keep it
 *   spec.loadBalancerIP X (deprecated in Kubernetes, still common)
 *        X inside a pool, usable, free (or already ours) ──► X (the old one,
 *                                                          if any, released)
 *        else ──► 422 naming X
 *   otherwise: no pool configured ──► no VIP: status.loadBalancer {}
 *              (as Kubernetes without a load-balancer controller: pending)
 *              the lowest free usable address of the pools, in the order
 *              they are listed; none free ──► 409 Exhausted naming the
 *              pools, nothing stored
 *   type changes away from LoadBalancer, or the Service is deleted
 *        ──► the VIP key is deleted, status.loadBalancer becomes {}
 *
 * Usable addresses: a pool's network and broadcast addresses are never
 * handed out (a /31 or /32 pool has neither: every address is usable).
 * The controller owns status.loadBalancer of Services: what a client
 * writes there is replaced.  A pending Service gets its VIP on its next
 * write (e.g. `weftctl apply` after vipNetworks was set).
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_load_balancer(const json_t *svc)
{
	const char *type = obj_str(svc, "spec.type");

	return type && strcmp(type, "LoadBalancer") == 0;
}

const char *service_vip(const json_t *svc)
{
	const json_t *ingress = json_object_get(
		json_object_get(json_object_get(svc, "status"), "loadBalancer"), "ingress");
	const char *ip = json_string_value(json_object_get(json_array_get(ingress, 0), "ip"));

	return is_load_balancer(svc) && ip && *ip ? ip : NULL;
}

/* The usable addresses of a pool: [first, last]. */
static void pool_range(const struct cidr *c, uint32_t *first, uint32_t *last)
{
	uint32_t broadcast = c->addr | ~cidr_mask(c->len);

	if (c->len <= 30) {
		*first = c->addr + 1;
		*last = broadcast - 1;
	} else {
		*first = c->addr;
		*last = broadcast;
	}
}

uint64_t vip_pool_usable(const struct cluster_config *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->nvip_networks; i++) {
		uint32_t first, last;

		pool_range(&c->vip_networks[i], &first, &last);
		n += (uint64_t)(last - first) + 1;
	}
	return n;
}

static void pools_string(const struct cluster_config *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < c->nvip_networks && off + 2 < len; i++) {
		char s[CIDR_STRLEN];
		int n;

		cidr_format(&c->vip_networks[i], s);
		n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", s);
		if (n < 0)
			break;
		off += (size_t)n < len - off ? (size_t)n : len - off - 1;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every allocated VIP, sorted: *out malloc'd (free it), or -errno. */
static int used_vips(struct registry *r, uint32_t **out, size_t *n)
{
	struct store_kv_list l = { 0 };
	int err = store_range(r->store, ALLOC_VIP, NULL, 0, &l);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	*out = malloc((l.n ? l.n : 1) * sizeof(**out));
	if (!*out) {
		store_kv_list_free(&l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l.n; i++)
		if (ip4_parse(l.kvs[i].key + strlen(ALLOC_VIP), &(*out)[*n]) == 0)
			(*n)++;
	store_kv_list_free(&l);
	qsort(*out, *n, sizeof(**out), cmp_u32);
	return 0;
}

/* The lowest usable free address of the pools, in their order: 0 with *ip,
 * -ENOSPC when every one is taken, or -errno. */
static int lowest_free(struct registry *r, uint32_t *ip)
{
	uint32_t *used = NULL;
	size_t nused = 0;
	int err = used_vips(r, &used, &nused);

	if (err)
		return err;
	err = -ENOSPC;
	for (size_t p = 0; p < r->config.nvip_networks && err; p++) {
		uint32_t first, last, cand;
		size_t k = 0;

		pool_range(&r->config.vip_networks[p], &first, &last);
		/* walk the candidates and the sorted used list together */
		for (cand = first;; cand++) {
			while (k < nused && used[k] < cand)
				k++;
			if (k == nused || used[k] != cand) {
				*ip = cand;
				err = 0;
				break;
			}
			if (cand == last)
				break;
		}
	}
	free(used);
	return err;
}

static void set_load_balancer(json_t *obj, const char *ip)
{
	json_t *status = json_object_get(obj, "status");

	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(obj, "status", status);
	}
	if (ip)
		json_object_set_new(status, "loadBalancer",
				    json_pack("{s:[{s:s}]}", "ingress", "ip", ip));
	else
		json_object_set_new(status, "loadBalancer", json_object());
}

static void release(struct txnb *b, const char *ip)
{
	char key[128];

	snprintf(key, sizeof(key), ALLOC_VIP "%s", ip);
	txnb_del(b, key);
}

static int store_error(struct status *st, int err)
{
	status_set(st, 500, "InternalError", "store: %s", strerror(err < 0 ? -err : err));
	return -1;
}

int vip_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, const char *owner,
	      struct status *st)
{
	const char *had = old ? service_vip(old) : NULL;
	const char *want = obj_str(obj, "spec.loadBalancerIP");
	char key[128], who[512], ipbuf[IP4_STRLEN], pools[CLUSTER_MAX_NETWORKS * (CIDR_STRLEN + 2)];
	struct store_kv kv = { 0 };
	uint32_t ip;
	int err;

	if (!is_load_balancer(obj)) {
		if (had)
			release(b, had);
		if (json_object_get(json_object_get(obj, "status"), "loadBalancer"))
			set_load_balancer(obj, NULL);
		return 0;
	}
	if (want && !*want)
		want = NULL;
	if (had && (!want || strcmp(want, had) == 0)) {
		set_load_balancer(obj, had);
		return 0;
	}
	pools_string(&r->config, pools, sizeof(pools));
	txnb_unchanged(b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
	if (want) {
		bool inside = false, usable = false;

		if (ip4_parse(want, &ip) == 0) {
			for (size_t p = 0; p < r->config.nvip_networks; p++) {
				uint32_t first, last;

				if (!cidr_contains_ip(&r->config.vip_networks[p], ip))
					continue;
				inside = true;
				pool_range(&r->config.vip_networks[p], &first, &last);
				usable = ip >= first && ip <= last;
			}
		}
		if (!inside) {
			status_set(st, 422, "Invalid", "spec.loadBalancerIP: %s is not inside a VIP pool (%s)", want,
				   pools[0] ? pools : "none is configured: set vipNetworks in the ClusterNetwork");
			return -1;
		}
		if (!usable) {
			status_set(st, 422, "Invalid",
				   "spec.loadBalancerIP: %s is the network or broadcast address of its VIP pool (%s)",
				   want, pools);
			return -1;
		}
		snprintf(key, sizeof(key), ALLOC_VIP "%s", want);
		err = store_get(r->store, key, &kv, NULL);
		if (err == 0) {
			snprintf(who, sizeof(who), "%s", kv.value);
			store_kv_free(&kv);
			if (strcmp(who, owner) != 0) {
				status_set(st, 422, "Invalid",
					   "spec.loadBalancerIP: %s is already allocated (to service %s)", want, who);
				return -1;
			}
			/* ours already (a half-seen earlier write): keep the key as it is */
		} else if (err == -ENOENT) {
			txnb_absent(b, key);
			txnb_put(b, key, owner);
		} else {
			return store_error(st, err);
		}
		if (had)
			release(b, had);
		ip4_format(ip, ipbuf);
		set_load_balancer(obj, ipbuf);
		return 0;
	}
	if (!r->config.nvip_networks) {
		set_load_balancer(obj, NULL);	/* pending, as without a load-balancer controller */
		return 0;
	}
	err = lowest_free(r, &ip);
	if (err == -ENOSPC) {
		r->metrics->alloc_failures[POOL_VIP]++;
		status_set(st, 409, "Exhausted", "no VIPs available in the VIP pool%s %s (service %s)",
			   r->config.nvip_networks > 1 ? "s" : "", pools, owner);
		return -1;
	}
	if (err)
		return store_error(st, err);
	ip4_format(ip, ipbuf);
	snprintf(key, sizeof(key), ALLOC_VIP "%s", ipbuf);
	txnb_absent(b, key);
	txnb_put(b, key, owner);
	set_load_balancer(obj, ipbuf);
	return 0;
}

void vip_release(struct txnb *b, const json_t *old)
{
	const char *had = service_vip(old);

	if (had)
		release(b, had);
}
