/*
 * fsck.c — checks that the store is consistent: allocations and the objects
 * holding them agree, and nothing is allocated twice.  Used by
 * `weft-controller --fsck` and by the crash test after a SIGKILL.
 *
 * Checked:
 *  - every Node has a HostSubnet, node ID key and node IP key naming it, and
 *    its spec.podCIDR is its HostSubnet's subnet;
 *  - every HostSubnet belongs to a Node; subnets and node IDs are unique and
 *    each subnet is the one its node ID maps to;
 *  - every node ID / node IP key names an existing Node;
 *  - every Namespace has a NetNamespace and back; the VNID keys' counts equal
 *    the number of NetNamespaces using each VNID; "default" has VNID 0, and
 *    so has every NetNamespace in flat and networkpolicy modes (where,
 *    with the counts right, no VNID key exists);
 *  - every Service's cluster IP, NodePorts and VIP have keys naming it, and
 *    every such key names an existing Service that uses it;
 *  - every Pod's status.podIP is a pod address of its node's HostSubnet
 *    and has a key naming the pod (so no two pods share one), and every
 *    such key names an existing Pod that has that address (admit_pod.c;
 *    pods read a page at a time);
 *  - every object reads back and is what its key says: kind and apiVersion
 *    of the key's resource, the key's name and namespace, within the
 *    limits on stored objects (model.h; a list of it parses in every
 *    client).  Read a page at a time.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct report {
	char *buf;
	size_t len, off;
	size_t problems;
};

__attribute__((format(printf, 2, 3))) static void problem(struct report *rp, const char *fmt, ...)
{
	va_list ap;

	rp->problems++;
	if (rp->off + 2 >= rp->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(rp->buf + rp->off, rp->len - rp->off - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		rp->off += (size_t)n < rp->len - rp->off - 1 ? (size_t)n : rp->len - rp->off - 2;
	rp->buf[rp->off++] = '\n';
	rp->buf[rp->off] = 0;
}

static json_t *load_json(struct store *s, const char *key)
{
	struct store_kv kv = { 0 };
	json_t *o;

	if (store_get(s, key, &kv, NULL))
		return NULL;
	o = json_loadb(kv.value, kv.value_len, 0, NULL);
	store_kv_free(&kv);
	return o;
}

static bool key_is(struct store *s, const char *key, const char *want)
{
	struct store_kv kv = { 0 };
	bool ok;

	if (store_get(s, key, &kv, NULL))
		return false;
	ok = strcmp(kv.value, want) == 0;
	store_kv_free(&kv);
	return ok;
}

static bool exists(struct store *s, const char *key)
{
	struct store_kv kv = { 0 };

	if (store_get(s, key, &kv, NULL))
		return false;
	store_kv_free(&kv);
	return true;
}

static int check_nodes(struct registry *r, struct report *rp)
{
	struct store *s = r->store;
	struct store_kv_list l = { 0 };
	char key[512];
	int err = store_range(s, OBJ_PREFIX "nodes/", NULL, 0, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		json_t *node = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		const char *name = obj_name(node), *ip = node_internal_ip(node);
		json_t *hs;

		snprintf(key, sizeof(key), OBJ_PREFIX "hostsubnets/%s", name);
		hs = load_json(s, key);
		if (!hs) {
			problem(rp, "node %s: no HostSubnet", name);
		} else {
			json_int_t id = json_integer_value(json_object_get(hs, "nodeID"));
			const char *sub = json_string_value(json_object_get(hs, "subnet"));
			const char *pod_cidr = obj_str(node, "spec.podCIDR");
			snprintf(key, sizeof(key), ALLOC_NODEID "%08" PRIu32, (uint32_t)id);
			if (!key_is(s, key, name))
				problem(rp, "node %s: node ID %lld is not allocated to it", name, (long long)id);
			if (!sub || !pod_cidr || strcmp(sub, pod_cidr) != 0)
				problem(rp, "node %s: spec.podCIDR %s differs from its HostSubnet %s", name,
					pod_cidr ? pod_cidr : "(none)", sub ? sub : "(none)");
		}
		json_decref(hs);
		snprintf(key, sizeof(key), ALLOC_NODEIP "%s", ip ? ip : "");
		if (!ip || !key_is(s, key, name))
			problem(rp, "node %s: InternalIP %s is not allocated to it", name, ip ? ip : "(none)");
		json_decref(node);
	}
	store_kv_list_free(&l);

	/* HostSubnets: belong to nodes, unique, at the subnet their ID maps to */
	err = store_range(s, OBJ_PREFIX "hostsubnets/", NULL, 0, &l);
	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		json_t *hs = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		const char *host = json_string_value(json_object_get(hs, "host"));
		const char *sub = json_string_value(json_object_get(hs, "subnet"));
		json_int_t id = json_integer_value(json_object_get(hs, "nodeID"));
		struct cidr want;
		char want_s[CIDR_STRLEN] = "";

		snprintf(key, sizeof(key), OBJ_PREFIX "nodes/%s", host ? host : "");
		if (!exists(s, key))
			problem(rp, "hostsubnet %s: its node does not exist", obj_name(hs));
		if (id > 0 && subnet_for_node_id(&r->config, (uint32_t)id, &want) == 0)
			cidr_format(&want, want_s);
		if (!sub || strcmp(sub, want_s) != 0)
			problem(rp, "hostsubnet %s: subnet %s is not node ID %lld's (%s)", obj_name(hs),
				sub ? sub : "(none)", (long long)id, want_s);
		for (size_t j = 0; j < i; j++) {
			json_t *other = json_loadb(l.kvs[j].value, l.kvs[j].value_len, 0, NULL);
			if (json_integer_value(json_object_get(other, "nodeID")) == id)
				problem(rp, "hostsubnets %s and %s share node ID %lld", obj_name(other),
					obj_name(hs), (long long)id);
			json_decref(other);
		}
		json_decref(hs);
	}
	store_kv_list_free(&l);

	/* allocation keys point at existing nodes */
	const char *prefixes[] = { ALLOC_NODEID, ALLOC_NODEIP };
	for (size_t p = 0; p < 2; p++) {
		err = store_range(s, prefixes[p], NULL, 0, &l);
		if (err)
			return err;
		for (size_t i = 0; i < l.n; i++) {
			snprintf(key, sizeof(key), OBJ_PREFIX "nodes/%s", l.kvs[i].value);
			if (!exists(s, key))
				problem(rp, "%s: held by node %s, which does not exist", l.kvs[i].key,
					l.kvs[i].value);
		}
		store_kv_list_free(&l);
	}
	return 0;
}

static int check_namespaces(struct registry *r, struct report *rp)
{
	struct store *s = r->store;
	struct store_kv_list l = { 0 }, keys = { 0 };
	char key[512];
	int err = store_range(s, OBJ_PREFIX "namespaces/", NULL, 0, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		const char *name = l.kvs[i].key + strlen(OBJ_PREFIX "namespaces/");
		snprintf(key, sizeof(key), OBJ_PREFIX "netnamespaces/%s", name);
		if (!exists(s, key))
			problem(rp, "namespace %s: no NetNamespace", name);
	}
	store_kv_list_free(&l);

	err = store_range(s, OBJ_PREFIX "netnamespaces/", NULL, 0, &l);
	if (err)
		return err;
	err = store_range(s, ALLOC_VNID, NULL, 0, &keys);
	if (err) {
		store_kv_list_free(&l);
		return err;
	}
	for (size_t i = 0; i < l.n; i++) {
		json_t *nn = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		json_int_t vnid = json_integer_value(json_object_get(nn, "netid"));
		snprintf(key, sizeof(key), OBJ_PREFIX "namespaces/%s", obj_name(nn));
		if (!exists(s, key))
			problem(rp, "netnamespace %s: its namespace does not exist", obj_name(nn));
		if (vnid != 0 && obj_name(nn) && strcmp(obj_name(nn), "default") == 0)
			problem(rp, "netnamespace default: VNID %lld; it is always 0 (global)", (long long)vnid);
		else if (vnid != 0 && !cluster_mode_gives_vnids(r->config.mode))
			problem(rp, "netnamespace %s: VNID %lld in %s mode, where every namespace has VNID 0 "
				    "(weft-controller sets it to 0 when it starts)",
				obj_name(nn), (long long)vnid, cluster_mode_name(r->config.mode));
		json_decref(nn);
	}
	/* counts: each VNID key equals the number of users; every used VNID has a key */
	for (size_t k = 0; k < keys.n; k++) {
		uint32_t vnid = (uint32_t)strtoul(keys.kvs[k].key + strlen(ALLOC_VNID), NULL, 10);
		long long want = strtoll(keys.kvs[k].value, NULL, 10), have = 0;
		for (size_t i = 0; i < l.n; i++) {
			json_t *nn = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
			have += (uint32_t)json_integer_value(json_object_get(nn, "netid")) == vnid;
			json_decref(nn);
		}
		if (have != want)
			problem(rp, "VNID %u: key counts %lld namespaces, %lld use it", vnid, want, have);
	}
	for (size_t i = 0; i < l.n; i++) {
		json_t *nn = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		uint32_t vnid = (uint32_t)json_integer_value(json_object_get(nn, "netid"));
		snprintf(key, sizeof(key), ALLOC_VNID "%08" PRIu32, vnid);
		if (vnid && !exists(s, key))
			problem(rp, "netnamespace %s: VNID %u has no allocation key", obj_name(nn), vnid);
		json_decref(nn);
	}
	store_kv_list_free(&keys);
	store_kv_list_free(&l);
	return 0;
}

static int check_services(struct registry *r, struct report *rp)
{
	struct store *s = r->store;
	struct store_kv_list l = { 0 };
	char key[512], owner[512];
	int err = store_range(s, OBJ_PREFIX "services/", NULL, 0, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		json_t *svc = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		const char *ip = obj_str(svc, "spec.clusterIP");
		json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports"), *p;
		size_t j;

		snprintf(owner, sizeof(owner), "%s/%s", obj_namespace(svc), obj_name(svc));
		if (ip && *ip && strcmp(ip, "None") != 0) {
			snprintf(key, sizeof(key), ALLOC_CLUSTERIP "%s", ip);
			if (!key_is(s, key, owner))
				problem(rp, "service %s: cluster IP %s is not allocated to it", owner, ip);
		}
		json_array_foreach(ports, j, p) {
			json_int_t np = json_integer_value(json_object_get(p, "nodePort"));
			if (!np)
				continue;
			snprintf(key, sizeof(key), ALLOC_NODEPORT "%d", (int)np);
			if (!key_is(s, key, owner))
				problem(rp, "service %s: NodePort %d is not allocated to it", owner, (int)np);
		}
		if (service_vip(svc)) {
			snprintf(key, sizeof(key), ALLOC_VIP "%s", service_vip(svc));
			if (!key_is(s, key, owner))
				problem(rp, "service %s: VIP %s is not allocated to it", owner, service_vip(svc));
		}
		json_decref(svc);
	}
	store_kv_list_free(&l);

	const char *prefixes[] = { ALLOC_CLUSTERIP, ALLOC_NODEPORT, ALLOC_VIP };
	for (size_t p = 0; p < 3; p++) {
		err = store_range(s, prefixes[p], NULL, 0, &l);
		if (err)
			return err;
		for (size_t i = 0; i < l.n; i++) {
			const char *slash = strchr(l.kvs[i].value, '/');
			json_t *svc;
			bool used = false;

			if (!slash) {
				problem(rp, "%s: bad holder '%s'", l.kvs[i].key, l.kvs[i].value);
				continue;
			}
			snprintf(key, sizeof(key), OBJ_PREFIX "services/%s", l.kvs[i].value);
			svc = load_json(s, key);
			if (svc) {
				const char *what = l.kvs[i].key + strlen(prefixes[p]);
				if (p == 0) {
					used = obj_str(svc, "spec.clusterIP") &&
					       strcmp(obj_str(svc, "spec.clusterIP"), what) == 0;
				} else if (p == 2) {
					used = service_vip(svc) && strcmp(service_vip(svc), what) == 0;
				} else {
					json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports"), *pp;
					size_t j;
					json_array_foreach(ports, j, pp)
						used |= json_integer_value(json_object_get(pp, "nodePort")) ==
							strtol(what, NULL, 10);
				}
				json_decref(svc);
			}
			if (!used)
				problem(rp, "%s: held by service %s, which does not use it", l.kvs[i].key,
					l.kvs[i].value);
		}
		store_kv_list_free(&l);
	}
	return 0;
}

#define FSCK_PAGE 1000

/* One pod with an address: it fits its node, its key names it. */
static void check_pod(struct store *s, const json_t *subnets, const json_t *pod, struct report *rp)
{
	const char *ip = pod_address(pod), *node = obj_str(pod, "spec.nodeName");
	char owner[600], key[128], why[1024];
	struct store_kv kv = { 0 };

	if (!ip)
		return;
	pod_owner(pod, owner, sizeof(owner));
	if (pod_ip_fits_node(owner, ip, node, node ? json_object_get(subnets, node) : NULL, why, sizeof(why)))
		problem(rp, "%s", why);
	snprintf(key, sizeof(key), ALLOC_PODIP "%s", ip);
	if (store_get(s, key, &kv, NULL)) {
		problem(rp, "pod %s: podIP %s is not allocated to it (no key)", owner, ip);
		return;
	}
	if (strcmp(kv.value, owner) != 0)
		problem(rp, "pod %s: podIP %s is not allocated to it (held by pod %s)", owner, ip, kv.value);
	store_kv_free(&kv);
}

static int check_pods(struct registry *r, struct report *rp)
{
	struct store *s = r->store;
	struct store_kv_list l = { 0 };
	json_t *subnets = json_object();
	char after[1024] = "", key[1024];
	int err = subnets ? store_range(s, OBJ_PREFIX "hostsubnets/", NULL, 0, &l) : -ENOMEM;

	if (err)
		goto out;
	for (size_t i = 0; i < l.n; i++) {
		json_t *hs = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		if (hs && obj_name(hs))
			json_object_set(subnets, obj_name(hs), hs);
		json_decref(hs);
	}
	store_kv_list_free(&l);
	for (bool more = true; more;) {
		err = store_range(s, OBJ_PREFIX "pods/", after[0] ? after : NULL, FSCK_PAGE, &l);
		if (err)
			goto out;
		for (size_t i = 0; i < l.n; i++) {
			json_t *pod = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
			check_pod(s, subnets, pod, rp);
			json_decref(pod);
		}
		more = l.n == FSCK_PAGE;
		if (l.n)
			snprintf(after, sizeof(after), "%s", l.kvs[l.n - 1].key);
		store_kv_list_free(&l);
	}

	/* keys name existing pods that have the address */
	err = store_range(s, ALLOC_PODIP, NULL, 0, &l);
	if (err)
		goto out;
	for (size_t i = 0; i < l.n; i++) {
		const char *ip = l.kvs[i].key + strlen(ALLOC_PODIP), *holder = l.kvs[i].value, *slash;
		json_t *pod;

		slash = strchr(holder, '/');
		if (!slash || slash == holder || !slash[1] || strchr(slash + 1, '/')) {
			problem(rp, "%s: bad holder '%s'", l.kvs[i].key, holder);
			continue;
		}
		snprintf(key, sizeof(key), OBJ_PREFIX "pods/%s", holder);
		pod = load_json(s, key);
		if (!pod)
			problem(rp, "%s: held by pod %s, which does not exist", l.kvs[i].key, holder);
		else if (!pod_address(pod) || strcmp(pod_address(pod), ip) != 0)
			problem(rp, "%s: held by pod %s, which does not use it", l.kvs[i].key, holder);
		json_decref(pod);
	}
	store_kv_list_free(&l);
out:
	json_decref(subnets);
	return err;
}

/* One stored object against its key (OBJ_PREFIX<plural>/[<ns>/]<name>). */
static void check_object(const struct kind_info *k, const struct store_kv *kv, struct report *rp)
{
	const char *rest = kv->key + strlen(OBJ_PREFIX) + strlen(k->plural) + 1;
	const char *slash = strchr(rest, '/');
	char ns[256] = "", why[512];
	json_error_t jerr;
	json_t *o = json_loadb(kv->value, kv->value_len, 0, &jerr);

	if (!o) {
		problem(rp, "%s: does not read back: %s", kv->key, jerr.text);
		return;
	}
	if (k->namespaced && slash && (size_t)(slash - rest) < sizeof(ns)) {
		memcpy(ns, rest, (size_t)(slash - rest));
		ns[slash - rest] = 0;
		rest = slash + 1;
	}
	if (!obj_kind(o) || strcmp(obj_kind(o), k->kind) != 0 || !obj_str(o, "apiVersion") ||
	    strcmp(obj_str(o, "apiVersion"), k->api_version) != 0)
		problem(rp, "%s: holds a %s (%s), not a %s", kv->key, obj_kind(o) ? obj_kind(o) : "(no kind)",
			obj_str(o, "apiVersion") ? obj_str(o, "apiVersion") : "no apiVersion", k->kind);
	if (!obj_name(o) || strcmp(obj_name(o), rest) != 0 || strcmp(obj_namespace(o), ns) != 0)
		problem(rp, "%s: holds %s%s%s", kv->key, obj_namespace(o), *obj_namespace(o) ? "/" : "",
			obj_name(o) ? obj_name(o) : "(no name)");
	if (kv->value_len > MODEL_MAX_OBJECT_BYTES)
		problem(rp, "%s: %zu bytes, more than %u", kv->key, kv->value_len, MODEL_MAX_OBJECT_BYTES);
	if (model_check_limits(o, why, sizeof(why)))
		problem(rp, "%s: %s", kv->key, why);
	json_decref(o);
}

static int check_objects(struct registry *r, struct report *rp)
{
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_info *k = kind_get((enum kind_id)i);
		char prefix[128], after[4096] = "";

		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", k->plural);
		for (;;) {
			struct store_kv_list l = { 0 };
			int err = store_range(r->store, prefix, after[0] ? after : NULL, FSCK_PAGE, &l);
			size_t n = l.n;

			if (err)
				return err;
			for (size_t j = 0; j < n; j++)
				check_object(k, &l.kvs[j], rp);
			if (n)
				snprintf(after, sizeof(after), "%s", l.kvs[n - 1].key);
			store_kv_list_free(&l);
			if (n < FSCK_PAGE)
				break;
		}
	}
	return 0;
}

int registry_fsck(struct registry *r, char *report, size_t len, size_t *problems)
{
	struct report rp = { report, len, 0, 0 };
	int err;

	if (len)
		report[0] = 0;
	if ((err = check_objects(r, &rp)) || (err = check_nodes(r, &rp)) || (err = check_namespaces(r, &rp)) ||
	    (err = check_services(r, &rp)) || (err = check_pods(r, &rp)))
		return err;
	*problems = rp.problems;
	return 0;
}

int registry_usage(struct registry *r, struct alloc_usage *u)
{
	const char *prefixes[POOL_COUNT] = { ALLOC_NODEID, ALLOC_VNID, ALLOC_CLUSTERIP, ALLOC_NODEPORT, ALLOC_VIP };
	uint64_t subnets = 0;
	int err;

	for (size_t i = 0; i < r->config.nnetworks; i++)
		subnets += cidr_subnet_count(&r->config.networks[i].cidr,
					     (uint8_t)(32 - r->config.networks[i].host_subnet_length));
	u->total[POOL_HOSTSUBNET] = subnets;
	u->total[POOL_VNID] = VNID_MAX - VNID_MIN + 1;
	u->total[POOL_CLUSTERIP] = cidr_size(&r->config.service_network) > 2
				   ? cidr_size(&r->config.service_network) - 2 : 0;
	u->total[POOL_NODEPORT] = NODEPORT_MAX - NODEPORT_MIN + 1;
	u->total[POOL_VIP] = vip_pool_usable(&r->config);
	for (int p = 0; p < POOL_COUNT; p++) {
		size_t n = 0;
		if ((err = store_count(r->store, prefixes[p], &n)))
			return err;
		u->used[p] = n;
	}
	return 0;
}
