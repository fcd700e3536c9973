/*
 * config.c — changes to the ClusterNetwork, refused when they would orphan
 * what is allocated:
 *   - every HostSubnet must still be the subnet its node ID maps to (so
 *     cluster networks may be appended, and a network that holds no
 *     allocated subnet may be dropped or resized, but nothing moves);
 *   - every allocated cluster IP must stay inside the service network;
 *   - every allocated VIP must stay inside a VIP pool (vipNetworks);
 *   - the mode may change only while no project other than "default"
 *     exists (VNIDs would have to be handed out or taken back).
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int store_error(struct status *st, int err)
{
	status_set(st, 500, "InternalError", "store: %s", strerror(-err));
	return -1;
}

int config_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st)
{
	struct cluster_config next;
	struct store_kv_list l = { 0 };
	char err_msg[512];
	int err;

	(void)b;
	(void)old;
	if (cluster_config_from_json(obj, &next, err_msg, sizeof(err_msg))) {
		status_set(st, 422, "Invalid", "%s", err_msg);
		return -1;
	}

	err = store_range(r->store, OBJ_PREFIX "hostsubnets/", NULL, 0, &l);
	if (err)
		return store_error(st, err);
	for (size_t i = 0; i < l.n; i++) {
		json_t *hs = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		json_int_t id = json_integer_value(json_object_get(hs, "nodeID"));
		const char *subnet = json_string_value(json_object_get(hs, "subnet"));
		struct cidr want;
		char want_s[CIDR_STRLEN] = "";

		if (id > 0 && subnet_for_node_id(&next, (uint32_t)id, &want) == 0)
			cidr_format(&want, want_s);
		if (!subnet || strcmp(want_s, subnet) != 0) {
			status_set(st, 409, "Conflict",
				   "clusterNetworks: the change would orphan HostSubnet %s (%s, node ID %lld); "
				   "delete that node first or keep its cluster network",
				   json_string_value(json_object_get(hs, "host")), subnet ? subnet : "?",
				   (long long)id);
			json_decref(hs);
			store_kv_list_free(&l);
			return -1;
		}
		json_decref(hs);
	}
	store_kv_list_free(&l);

	err = store_range(r->store, ALLOC_CLUSTERIP, NULL, 0, &l);
	if (err)
		return store_error(st, err);
	for (size_t i = 0; i < l.n; i++) {
		uint32_t ip;
		const char *ip_s = l.kvs[i].key + strlen(ALLOC_CLUSTERIP);

		if (ip4_parse(ip_s, &ip) == 0 && !cidr_contains_ip(&next.service_network, ip)) {
			status_set(st, 409, "Conflict",
				   "serviceNetwork: the change would orphan cluster IP %s of service %s", ip_s,
				   l.kvs[i].value);
			store_kv_list_free(&l);
			return -1;
		}
	}
	store_kv_list_free(&l);

	err = store_range(r->store, ALLOC_VIP, NULL, 0, &l);
	if (err)
		return store_error(st, err);
	for (size_t i = 0; i < l.n; i++) {
		uint32_t ip;
		const char *ip_s = l.kvs[i].key + strlen(ALLOC_VIP);
		bool inside = false;

		if (ip4_parse(ip_s, &ip))
			continue;
		for (size_t p = 0; p < next.nvip_networks; p++)
			inside |= cidr_contains_ip(&next.vip_networks[p], ip);
		if (!inside) {
			status_set(st, 409, "Conflict",
				   "vipNetworks: the change would orphan VIP %s of service %s", ip_s, l.kvs[i].value);
			store_kv_list_free(&l);
			return -1;
		}
	}
	store_kv_list_free(&l);

	if (next.mode != r->config.mode) {
		size_t n = 0;
		err = store_count(r->store, OBJ_PREFIX "netnamespaces/", &n);
		if (err)
			return store_error(st, err);
		if (n > 1) {
			status_set(st, 409, "Conflict",
				   "mode: cannot change from %s to %s while projects other than 'default' exist (%zu)",
				   cluster_mode_name(r->config.mode), cluster_mode_name(next.mode), n - 1);
			return -1;
		}
	}
	return 0;
}
