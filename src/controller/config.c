/*
 * config.c — changes to the ClusterNetwork, refused when they would orphan
 * what is allocated:
 *   - every HostSubnet must still be the subnet its node ID maps to (so
 *     cluster networks may be appended, and a network that holds no
 *     allocated subnet may be dropped or resized, but nothing moves);
 *   - every allocated cluster IP must stay inside the service network;
 *   - every allocated VIP must stay inside a VIP pool (vipNetworks);
 *   - the mode may change only when the stored VNIDs are already what the
 *     new mode gives (nothing is handed out or taken back behind the
 *     admin's back; docs/api.md, "Cluster modes and VNIDs"):
 *       to flat or networkpolicy: no VNID is allocated, i.e. every
 *         NetNamespace has VNID 0 (a multitenant cluster gets there with
 *         make-projects-global);
 *       to multitenant: no project other than "default" exists (each
 *         would need a VNID of its own).
 *     So flat <-> networkpolicy is always allowed.
 *
 * The checks read the store outside the transaction; namespace writes
 * guard the ClusterNetwork's revision, and one controller serialises the
 * API's writes (api.c), so a namespace cannot slip in between.
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

/* "blue (VNID 10), red (VNID 11) and 2 more": the projects with a VNID other
 * than 0, for a refusal. */
static int vnid_holders(struct registry *r, char *buf, size_t len, struct status *st)
{
	struct store_kv_list l = { 0 };
	size_t named = 0, more = 0, off = 0;
	int err = store_range(r->store, OBJ_PREFIX "netnamespaces/", NULL, 0, &l);

	if (err)
		return store_error(st, err);
	buf[0] = 0;
	for (size_t i = 0; i < l.n; i++) {
		json_t *nn = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		json_int_t vnid = json_integer_value(json_object_get(nn, "netid"));

		if (vnid != 0 && named == 3) {
			more++;
		} else if (vnid != 0 && off < len) {
			int n = snprintf(buf + off, len - off, "%s%s (VNID %lld)", named ? ", " : "",
					 obj_name(nn) ? obj_name(nn) : "?", (long long)vnid);
			off += n > 0 ? (size_t)n : 0;
			named++;
		}
		json_decref(nn);
	}
	store_kv_list_free(&l);
	if (more && off < len)
		snprintf(buf + off, len - off, " and %zu more", more);
	return 0;
}

static int mode_change_admit(struct registry *r, enum cluster_mode to, struct status *st)
{
	const char *from_s = cluster_mode_name(r->config.mode), *to_s = cluster_mode_name(to);
	char holders[512];
	size_t n = 0;
	int err;

	if (to == r->config.mode)
		return 0;
	if (cluster_mode_gives_vnids(to)) {
		err = store_count(r->store, OBJ_PREFIX "netnamespaces/", &n);
		if (err)
			return store_error(st, err);
		if (n > 1) {
			status_set(st, 409, "Conflict",
				   "mode: cannot change from %s to %s while projects other than 'default' exist "
				   "(%zu): each would need a VNID of its own; delete them first or keep the mode",
				   from_s, to_s, n - 1);
			return -1;
		}
		return 0;
	}
	err = store_count(r->store, ALLOC_VNID, &n);
	if (err)
		return store_error(st, err);
	if (n == 0)
		return 0;
	if (vnid_holders(r, holders, sizeof(holders), st))
		return -1;
	status_set(st, 409, "Conflict",
		   "mode: cannot change from %s to %s while projects have VNIDs of their own (%s): in %s mode "
		   "every project has VNID 0; make them global first (weftctl pod-network "
		   "make-projects-global) or delete them",
		   from_s, to_s, holders, to_s);
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

	return mode_change_admit(r, next.mode, st);
}
