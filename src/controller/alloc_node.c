/*
 * alloc_node.c — a Node's registration: node ID, HostSubnet, unique IP.
 *
 * Node ID is the lowest free integer >= 1; with the cluster networks
 * concatenated in order, the node's subnet is the (ID - 1)-th subnet of
 * hostSubnetLength host bits (10.128.0.0/14, 9 → ID 3 = 10.128.4.0/23), so
 * OpenShift's and Contiv's formulas agree and a freed ID brings its subnet
 * back.  The Node gets spec.podCIDR(s) = its subnet, as Kubernetes' node
 * IPAM writes it, and a HostSubnet (host, hostIP, subnet, nodeID) is
 * created beside it.  All in the Node's own transaction, each allocation
 * key guarded by "still absent".
 *
 * A Node whose registration finds no free subnet is refused (409
 * Exhausted, "no subnets available in 10.128.0.0/14") and counted in
 * weft_allocation_failures_total{pool="hostsubnet"}; nothing is stored.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int subnet_for_node_id(const struct cluster_config *c, uint32_t id, struct cidr *out)
{
	uint64_t index;

	if (id < 1)
		return -EINVAL;
	index = id - 1;
	for (size_t i = 0; i < c->nnetworks; i++) {
		uint8_t sub_len = (uint8_t)(32 - c->networks[i].host_subnet_length);
		uint64_t n = cidr_subnet_count(&c->networks[i].cidr, sub_len);

		if (index < n)
			return cidr_subnet(&c->networks[i].cidr, sub_len, index, out);
		index -= n;
	}
	return -ERANGE;
}

void config_networks_string(const struct cluster_config *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < c->nnetworks && off < len; i++) {
		char s[CIDR_STRLEN];
		cidr_format(&c->networks[i].cidr, s);
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", s);
	}
}

const char *node_internal_ip(const json_t *node)
{
	json_t *addrs = json_object_get(json_object_get(node, "status"), "addresses");
	size_t i;
	json_t *a;

	json_array_foreach(addrs, i, a) {
		const char *type = json_string_value(json_object_get(a, "type"));
		if (type && strcmp(type, "InternalIP") == 0)
			return json_string_value(json_object_get(a, "address"));
	}
	return NULL;
}

/* Who holds an allocation key: 0 and the value, -ENOENT, or -errno. */
static int holder(struct registry *r, const char *key, char *buf, size_t len, int64_t *mod_rev)
{
	struct store_kv kv = { 0 };
	int err = store_get(r->store, key, &kv, NULL);

	if (err)
		return err;
	snprintf(buf, len, "%s", kv.value);
	if (mod_rev)
		*mod_rev = kv.mod_rev;
	store_kv_free(&kv);
	return 0;
}

static void set_pod_cidr(json_t *node, const char *subnet)
{
	json_t *spec = json_object_get(node, "spec");

	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(node, "spec", spec);
	}
	json_object_set_new(spec, "podCIDR", json_string(subnet));
	json_object_set_new(spec, "podCIDRs", json_pack("[s]", subnet));
}

static json_t *hostsubnet_new(const char *name, const char *ip, const char *subnet, uint32_t id)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:s, s:s, s:s, s:I}", "apiVersion", "network.openshift.io/v1",
			 "kind", "HostSubnet", "metadata", "name", name, "host", name, "hostIP", ip,
			 "subnet", subnet, "nodeID", (json_int_t)id);
}

static int lowest_free_id(struct registry *r, uint32_t *id, struct status *st)
{
	struct store_kv_list l = { 0 };
	uint32_t want = 1;
	int err = store_range(r->store, ALLOC_NODEID, NULL, 0, &l);

	if (err) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	/* keys are zero-padded, so the range is in numeric order */
	for (size_t i = 0; i < l.n; i++) {
		uint32_t have = (uint32_t)strtoul(l.kvs[i].key + strlen(ALLOC_NODEID), NULL, 10);
		if (have > want)
			break;
		if (have == want)
			want++;
	}
	store_kv_list_free(&l);
	*id = want;
	return 0;
}

static void hostsubnet_key(const char *name, char *buf, size_t len)
{
	obj_key(kind_get(KIND_HOSTSUBNET), NULL, name, buf, len);
}

int node_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st)
{
	const char *name = obj_name(obj);
	const char *ip = node_internal_ip(obj);
	char ipkey[128], idkey[64], hskey[512], who[512];
	struct cidr subnet;
	char subnet_s[CIDR_STRLEN];
	uint32_t id;
	int err;

	/* The registry hands over only validated Nodes (request.c makes sure
	 * the body is one), which have both; a hook never trusts that alone. */
	if (!name || !ip) {
		status_set(st, 422, "Invalid", "%s: a Node needs metadata.name and an InternalIP address",
			   name ? name : "node");
		return -1;
	}
	snprintf(ipkey, sizeof(ipkey), ALLOC_NODEIP "%s", ip);
	hostsubnet_key(name, hskey, sizeof(hskey));

	if (old) {
		/* a node keeps its ID and subnet for life; only its IP may move */
		const char *old_ip = node_internal_ip(old);
		const char *pod_cidr = obj_str(old, "spec.podCIDR");
		json_t *hs = NULL;
		struct store_kv kv = { 0 };

		json_t *old_ann = json_object_get(json_object_get(old, "metadata"), "annotations");
		json_t *id_ann = json_object_get(old_ann, "weft.io/node-id");

		if (pod_cidr)
			set_pod_cidr(obj, pod_cidr);
		if (id_ann) {
			json_t *meta = json_object_get(obj, "metadata");
			json_t *ann = json_object_get(meta, "annotations");
			if (!json_is_object(ann)) {
				ann = json_object();
				json_object_set_new(meta, "annotations", ann);
			}
			json_object_set(ann, "weft.io/node-id", id_ann);
		}
		if (!old_ip || strcmp(old_ip, ip) == 0)
			return 0;
		err = holder(r, ipkey, who, sizeof(who), NULL);
		if (err == 0 && strcmp(who, name) != 0) {
			status_set(st, 409, "Conflict", "node %s: InternalIP %s is already used by node %s",
				   name, ip, who);
			return -1;
		}
		txnb_absent(b, ipkey);
		txnb_put(b, ipkey, name);
		snprintf(who, sizeof(who), ALLOC_NODEIP "%s", old_ip);
		txnb_del(b, who);
		err = store_get(r->store, hskey, &kv, NULL);
		if (err == 0) {
			hs = json_loadb(kv.value, kv.value_len, 0, NULL);
			if (hs) {
				json_object_set_new(hs, "hostIP", json_string(ip));
				txnb_unchanged(b, hskey, kv.mod_rev);
				txnb_put_json(b, hskey, hs);
				json_decref(hs);
			}
			store_kv_free(&kv);
		}
		return 0;
	}

	err = holder(r, ipkey, who, sizeof(who), NULL);
	if (err == 0) {
		status_set(st, 409, "Conflict", "node %s: InternalIP %s is already used by node %s", name, ip,
			   who);
		return -1;
	}
	if (err != -ENOENT) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	if (lowest_free_id(r, &id, st))
		return -1;
	if (subnet_for_node_id(&r->config, id, &subnet)) {
		char nets[512];
		config_networks_string(&r->config, nets, sizeof(nets));
		r->metrics->alloc_failures[POOL_HOSTSUBNET]++;
		status_set(st, 409, "Exhausted", "node %s: no subnets available in %s", name, nets);
		return -1;
	}
	cidr_format(&subnet, subnet_s);
	snprintf(idkey, sizeof(idkey), ALLOC_NODEID "%08" PRIu32, id);

	txnb_unchanged(b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
	txnb_absent(b, idkey);
	txnb_put(b, idkey, name);
	txnb_absent(b, ipkey);
	txnb_put(b, ipkey, name);
	txnb_absent(b, hskey);
	{
		json_t *hs = hostsubnet_new(name, ip, subnet_s, id);
		char idstr[16];
		json_t *meta = json_object_get(obj, "metadata");
		json_t *ann = json_object_get(meta, "annotations");

		/* its identity is its Node's, as a NetNamespace's is its Namespace's */
		json_object_set(json_object_get(hs, "metadata"), "uid", json_object_get(meta, "uid"));
		json_object_set(json_object_get(hs, "metadata"), "creationTimestamp",
				json_object_get(meta, "creationTimestamp"));
		txnb_put_json(b, hskey, hs);
		json_decref(hs);
		set_pod_cidr(obj, subnet_s);
		if (!json_is_object(ann)) {
			ann = json_object();
			json_object_set_new(meta, "annotations", ann);
		}
		snprintf(idstr, sizeof(idstr), "%" PRIu32, id);
		json_object_set_new(ann, "weft.io/node-id", json_string(idstr));
	}
	return 0;
}

int node_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st)
{
	const char *name = obj_name(old);
	const char *ip = node_internal_ip(old);
	char key[512], hskey[512];
	struct store_kv kv = { 0 };
	int err;

	if (ip) {
		snprintf(key, sizeof(key), ALLOC_NODEIP "%s", ip);
		txnb_del(b, key);
	}
	/* the HostSubnet is the record of the node's ID */
	hostsubnet_key(name, hskey, sizeof(hskey));
	err = store_get(r->store, hskey, &kv, NULL);
	if (err == 0) {
		json_t *hs = json_loadb(kv.value, kv.value_len, 0, NULL);
		json_int_t id = json_integer_value(json_object_get(hs, "nodeID"));

		if (id > 0) {
			snprintf(key, sizeof(key), ALLOC_NODEID "%08" PRIu32, (uint32_t)id);
			txnb_del(b, key);
		}
		txnb_unchanged(b, hskey, kv.mod_rev);
		txnb_del(b, hskey);
		json_decref(hs);
		store_kv_free(&kv);
	} else if (err != -ENOENT) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	return 0;
}
