/*
 * admit_pod.c — a Pod's address: status.podIP is an address the pod's node
 * hands out, and no two pods hold one.
 *
 * Why: the endpoints controller points a Service at the status.podIP of the
 * pods it selects.  If a writer could put any address there, a pod of
 * namespace blue claiming the address of red's pod would aim blue's Service
 * at red's pod, around the check that hand-written Endpoints get
 * (admit_endpoints.c).  So, for every writer (an agent reporting its pods,
 * weftctl, the admin):
 *
 *  1. A pod with a status.podIP names its node (spec.nodeName), that node
 *     has a HostSubnet, and the address is a pod address of that subnet:
 *     inside it, and none of its network, gateway (first host) and
 *     broadcast addresses.  Otherwise 422 Invalid, naming field, value,
 *     pod, node and subnet:
 *       status.podIP 10.128.2.5: pod blue/a is on node node-1, whose subnet is 10.128.0.0/23
 *     The HostSubnet's mod_rev guards the write: a node deleted meanwhile
 *     makes the write plan again, and then it is refused.
 *  2. An address is held by one pod: the key ALLOC_PODIP<ip> → "ns/name",
 *     taken in the pod's own transaction, guarded (still absent, or still
 *     this pod's).  A pod claiming an address another pod holds: 409
 *     Conflict naming the holder:
 *       status.podIP 10.128.0.7 is held by pod red/b
 *     A key whose holder does not exist or does not have that address any
 *     more is stale (fsck names such keys) and is taken over, guarded on
 *     the key and on the holder's object.
 *  3. The key goes when the pod is deleted (pod_release), when its podIP
 *     changes or goes (pod_admit), and when its namespace is deleted
 *     (pod_release_namespace, in the cascade's transaction).  A key is
 *     only ever deleted by a pod it names: a pod that shares an address
 *     with the holder (a store from before these keys) releases nothing.
 *  4. status.podIPs lists status.podIP only (validate_pod.c); checked again
 *     here, as a hook never trusts validation alone.
 *
 * The namespace cascade deletes its pods' keys without a guard on each (a
 * namespace may hold more pods than a transaction may compare keys).  In
 * one controller nothing runs between its read and its commit (the API's
 * lock); two controllers on one store could, in that window, move an
 * address from a pod of the namespace to another pod, whose key the
 * cascade would then delete — fsck names the pod left without its key.
 *
 * The model has no spec.hostNetwork (every weft pod has an address of its
 * node's subnet, given by the node's agent): a body carrying one is checked
 * like any other.
 *
 * A store written before these keys: podip_index.c adds them at start.
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pod_address(const json_t *pod)
{
	const char *ip = obj_str(pod, "status.podIP");

	return ip && *ip ? ip : NULL;
}

void pod_owner(const json_t *pod, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", obj_namespace(pod), obj_name(pod) ? obj_name(pod) : "");
}

int pod_ip_fits_node(const char *owner, const char *ip_s, const char *node, const json_t *hs, char *why,
		     size_t len)
{
	const char *subnet_s = json_string_value(json_object_get(hs, "subnet"));
	struct cidr subnet;
	char first[IP4_STRLEN], last[IP4_STRLEN];
	const char *what = NULL;
	uint32_t ip, broadcast;

	if (!node || !*node) {
		snprintf(why, len, "status.podIP %s: pod %s has no spec.nodeName (a pod's address comes from "
			 "its node's subnet)", ip_s, owner);
		return -1;
	}
	if (!hs) {
		snprintf(why, len, "status.podIP %s: pod %s is on node %s, which has no HostSubnet (no such "
			 "node is registered)", ip_s, owner, node);
		return -1;
	}
	if (!subnet_s || cidr_parse(subnet_s, &subnet) || ip4_parse(ip_s, &ip)) {
		snprintf(why, len, "status.podIP %s: pod %s is on node %s, whose HostSubnet has no valid "
			 "subnet ('%s')", ip_s, owner, node, subnet_s ? subnet_s : "");
		return -1;
	}
	if (!cidr_contains_ip(&subnet, ip)) {
		snprintf(why, len, "status.podIP %s: pod %s is on node %s, whose subnet is %s", ip_s, owner, node,
			 subnet_s);
		return -1;
	}
	broadcast = subnet.addr | ~cidr_mask(subnet.len);
	if (ip == subnet.addr)
		what = "network";
	else if (ip == subnet.addr + 1)
		what = "gateway";
	else if (ip == broadcast)
		what = "broadcast";
	if (!what)
		return 0;
	ip4_format(subnet.addr + 2, first);
	ip4_format(broadcast - 1, last);
	if (subnet.addr + 2 <= broadcast - 1)
		snprintf(why, len, "status.podIP %s: pod %s is on node %s, and %s is the %s address of its "
			 "subnet %s (pods get %s to %s)", ip_s, owner, node, ip_s, what, subnet_s, first, last);
	else
		snprintf(why, len, "status.podIP %s: pod %s is on node %s, and %s is the %s address of its "
			 "subnet %s (which has no pod addresses)", ip_s, owner, node, ip_s, what, subnet_s);
	return -1;
}

static int store_error(struct status *st, int err)
{
	status_set(st, 500, "InternalError", "store: %s", strerror(-err));
	return -1;
}

static void podip_key(const char *ip, char *buf, size_t len)
{
	snprintf(buf, len, ALLOC_PODIP "%s", ip);
}

/* The object key of the pod named by a holder "ns/name": 0, or -EINVAL
 * when holder is not one. */
static int holder_key(const char *holder, char *buf, size_t len)
{
	const char *slash = strchr(holder, '/');
	char ns[256];

	if (!slash || slash == holder || !slash[1] || strchr(slash + 1, '/') ||
	    (size_t)(slash - holder) >= sizeof(ns))
		return -EINVAL;
	memcpy(ns, holder, (size_t)(slash - holder));
	ns[slash - holder] = 0;
	return obj_key(kind_get(KIND_POD), ns, slash + 1, buf, len);
}

int pod_ip_holder_stale(struct registry *r, struct txnb *b, const char *holder, const char *ip)
{
	char key[1024];
	struct store_kv kv = { 0 };
	json_t *pod;
	const char *has;
	bool stale;
	int err;

	if (holder_key(holder, key, sizeof(key)))
		return 1;	/* names no pod: nothing to guard but the key */
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT) {
		txnb_absent(b, key);
		return 1;
	}
	if (err)
		return err;
	pod = json_loadb(kv.value, kv.value_len, 0, NULL);
	has = pod_address(pod);
	stale = !has || strcmp(has, ip) != 0;
	if (stale)
		txnb_unchanged(b, key, kv.mod_rev);
	json_decref(pod);
	store_kv_free(&kv);
	return stale ? 1 : 0;
}

/* Rule 2: owner takes ip's key in b.  0, or -1 with st set. */
static int claim(struct registry *r, struct txnb *b, const char *ip, const char *owner, struct status *st)
{
	char key[128], who[600];
	struct store_kv kv = { 0 };
	int64_t key_rev;
	int err;

	podip_key(ip, key, sizeof(key));
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT) {
		txnb_absent(b, key);
		txnb_put(b, key, owner);
		return 0;
	}
	if (err)
		return store_error(st, err);
	snprintf(who, sizeof(who), "%s", kv.value);
	key_rev = kv.mod_rev;
	store_kv_free(&kv);
	if (strcmp(who, owner) == 0) {
		txnb_unchanged(b, key, key_rev);
		return 0;
	}
	err = pod_ip_holder_stale(r, b, who, ip);
	if (err < 0)
		return store_error(st, err);
	if (err == 0) {
		status_set(st, 409, "Conflict", "status.podIP %s is held by pod %s", ip, who);
		return -1;
	}
	txnb_unchanged(b, key, key_rev);
	txnb_put(b, key, owner);
	return 0;
}

/* Rule 3: ip's key goes in b when owner holds it (guarded on it when
 * guard).  0, or -1 with st set. */
static int release(struct registry *r, struct txnb *b, const char *ip, const char *owner, bool guard,
		   struct status *st)
{
	char key[128];
	struct store_kv kv = { 0 };
	int err;

	podip_key(ip, key, sizeof(key));
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT)
		return 0;
	if (err)
		return store_error(st, err);
	if (strcmp(kv.value, owner) == 0) {
		if (guard)
			txnb_unchanged(b, key, kv.mod_rev);
		txnb_del(b, key);
	}
	store_kv_free(&kv);
	return 0;
}

/* Rule 1, with the HostSubnet's guard in b.  0, or -1 with st set. */
static int fits_node(struct registry *r, struct txnb *b, const json_t *pod, const char *owner, const char *ip,
		     struct status *st)
{
	const char *node = obj_str(pod, "spec.nodeName");
	char key[512] = "", why[sizeof(st->message)];
	struct store_kv kv = { 0 };
	json_t *hs = NULL;
	int rc;

	if (node && *node) {
		int err;

		obj_key(kind_get(KIND_HOSTSUBNET), NULL, node, key, sizeof(key));
		err = store_get(r->store, key, &kv, NULL);
		if (err && err != -ENOENT)
			return store_error(st, err);
		/* one that does not read back has no valid subnet */
		if (!err && !(hs = json_loadb(kv.value, kv.value_len, 0, NULL)))
			hs = json_object();
	}
	rc = pod_ip_fits_node(owner, ip, node, hs, why, sizeof(why));
	if (rc == 0)
		txnb_unchanged(b, key, kv.mod_rev);
	else
		status_set(st, 422, "Invalid", "%s", why);
	json_decref(hs);
	store_kv_free(&kv);
	return rc;
}

/* Rule 4. */
static int podips_agree(const json_t *pod, const char *ip, struct status *st)
{
	const json_t *ips = json_object_get(json_object_get(pod, "status"), "podIPs"), *e;
	size_t i;

	json_array_foreach(ips, i, e) {
		const char *each = json_string_value(json_object_get(e, "ip"));

		if (!each || strcmp(each, ip) != 0) {
			status_set(st, 422, "Invalid", "status.podIPs[%zu].ip: %s differs from status.podIP %s "
				   "(a pod has one IPv4 address)", i, each ? each : "(none)", ip);
			return -1;
		}
	}
	return 0;
}

int pod_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st)
{
	const char *ip = pod_address(obj), *had = old ? pod_address(old) : NULL;
	char owner[600];

	pod_owner(obj, owner, sizeof(owner));
	if (!ip && json_array_size(json_object_get(json_object_get(obj, "status"), "podIPs"))) {
		status_set(st, 422, "Invalid", "status.podIPs: given without status.podIP");
		return -1;
	}
	if (had && (!ip || strcmp(had, ip) != 0) && release(r, b, had, owner, true, st))
		return -1;
	if (!ip)
		return 0;
	if (podips_agree(obj, ip, st) || fits_node(r, b, obj, owner, ip, st))
		return -1;
	return claim(r, b, ip, owner, st);
}

int pod_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st)
{
	const char *ip = pod_address(old);
	char owner[600];

	if (!ip)
		return 0;
	pod_owner(old, owner, sizeof(owner));
	return release(r, b, ip, owner, true, st);
}

int pod_release_namespace(struct registry *r, struct txnb *b, const char *ns, struct status *st)
{
	struct store_kv_list l = { 0 };
	char prefix[512];
	int err, rc = 0;

	snprintf(prefix, sizeof(prefix), OBJ_PREFIX "pods/%s/", ns);
	err = store_range(r->store, prefix, NULL, 0, &l);
	if (err)
		return store_error(st, err);
	for (size_t i = 0; i < l.n && !rc; i++) {
		json_t *pod = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		const char *ip = pod_address(pod);
		char owner[600];

		if (ip) {
			pod_owner(pod, owner, sizeof(owner));
			rc = release(r, b, ip, owner, false, st);
		}
		json_decref(pod);
	}
	store_kv_list_free(&l);
	return rc;
}
