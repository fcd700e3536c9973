/*
 * admit_endpoints.c — the check on hand-written Endpoints (for Services
 * without a selector) and hand-written EndpointSlices.  Either sends a
 * Service's traffic wherever it says; OpenShift needed an admission check
 * so that a project cannot aim its Service at another project's pods (the
 * isolation check in the data plane sees the Service's client, not who
 * wrote the Endpoints).  Both kinds go through one check of one address
 * (check_address); only the walk over their addresses differs:
 *   Endpoints      subsets[i].addresses[j].ip, subsets[i].notReadyAddresses[j].ip
 *   EndpointSlice  endpoints[i].addresses[j]
 *
 * Every address (ready or not) is looked at:
 *   outside every cluster network (an external backend)      ──► allowed
 *   inside, and the status.podIP of a pod that the Endpoints'
 *   namespace may reach                                       ──► allowed
 *      reach (multitenant mode): same namespace, or VNIDs a == b, or
 *      either is 0 (global); in flat and networkpolicy modes any pod
 *      (every NetNamespace has VNID 0 there, so the data plane lets the
 *      Service's clients through to it)
 *   inside, and no pod's address (it could become another
 *   project's pod tomorrow)                                   ──► 403
 *   inside, a pod the namespace may not reach                 ──► 403
 * The message names the field and the address.
 *
 * The pods come from the endpoints controller's index (brought up to date
 * from the store's events first); the VNIDs from the NetNamespaces, whose
 * mod_revs guard the write (an isolate-projects racing with it makes it
 * plan again).  Endpoints and slices the endpoints controller writes
 * itself are not checked: their addresses are the Service's own
 * namespace's pods, and each such address is that pod's alone
 * (admit_pod.c), or those of a hand-written Endpoints it mirrors, which
 * this check admitted.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The VNID of namespace ns: from cache (ns → netid) or the store, with a
 * guard on the NetNamespace.  0 with *vnid, or -1 with st set. */
static int vnid_of(struct registry *r, struct txnb *b, json_t *cache, const char *ns, uint32_t *vnid,
		   struct status *st)
{
	json_t *hit = json_object_get(cache, ns), *nn;
	struct store_kv kv = { 0 };
	char key[512];
	int err;

	if (hit) {
		*vnid = (uint32_t)json_integer_value(hit);
		return 0;
	}
	obj_key(kind_get(KIND_NETNAMESPACE), NULL, ns, key, sizeof(key));
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT) {
		/* a namespace being created or deleted: nobody may reach into it */
		status_set(st, 403, "Forbidden", "namespace %s has no NetNamespace (VNID)", ns);
		return -1;
	}
	if (err) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	nn = json_loadb(kv.value, kv.value_len, 0, NULL);
	*vnid = (uint32_t)json_integer_value(json_object_get(nn, "netid"));
	json_decref(nn);
	txnb_unchanged(b, key, kv.mod_rev);
	store_kv_free(&kv);
	json_object_set_new(cache, ns, json_integer(*vnid));
	return 0;
}

static bool in_cluster_network(const struct cluster_config *c, uint32_t ip)
{
	for (size_t i = 0; i < c->nnetworks; i++)
		if (cidr_contains_ip(&c->networks[i].cidr, ip))
			return true;
	return false;
}

/* One address: 0 allowed, -1 refused (st set). */
static int check_address(struct registry *r, struct txnb *b, json_t *cache, const char *ns,
			 const char *field, const char *ip_s, struct status *st)
{
	const json_t *pods, *t;
	const char *who;
	uint32_t ip, mine, theirs;
	char nets[256];

	if (ip4_parse(ip_s, &ip) < 0 || !in_cluster_network(&r->config, ip))
		return 0;
	pods = endpoints_pods_with_ip(r->endpoints, ip_s);
	if (!json_object_size(pods)) {
		config_networks_string(&r->config, nets, sizeof(nets));
		status_set(st, 403, "Forbidden",
			   "%s: %s is inside the cluster network (%s) but is no pod's address "
			   "(it could become another project's pod)", field, ip_s, nets);
		return -1;
	}
	json_object_foreach((json_t *)pods, who, t) {
		size_t nslen = strcspn(who, "/");
		char pod_ns[256];

		if (nslen >= sizeof(pod_ns))
			continue;
		memcpy(pod_ns, who, nslen);
		pod_ns[nslen] = 0;
		if (!strcmp(pod_ns, ns) || !cluster_mode_gives_vnids(r->config.mode))
			continue;
		if (vnid_of(r, b, cache, ns, &mine, st) || vnid_of(r, b, cache, pod_ns, &theirs, st))
			return -1;
		if (mine == theirs || mine == 0 || theirs == 0)
			continue;
		status_set(st, 403, "Forbidden",
			   "%s: %s is pod %s (VNID %" PRIu32 "), which namespace %s (VNID %" PRIu32 ") may not reach",
			   field, ip_s, who, theirs, ns, mine);
		return -1;
	}
	return 0;
}

/* Before the addresses of a hand-written object with items (subsets,
 * endpoints) are looked at: 1 nothing to check (none, or the controller
 * is writing), 0 check them (the pod index is up to date), -1 st set. */
static int admit_begin(struct registry *r, const json_t *items, struct status *st)
{
	int err;

	if (!r->endpoints) {
		status_set(st, 500, "InternalError", "the endpoints index is not running");
		return -1;
	}
	if (endpoints_writing(r->endpoints) || !json_array_size(items))
		return 1;
	err = endpoints_catch_up(r->endpoints);
	if (err) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	return 0;
}

int endpoints_admit(struct registry *r, struct txnb *b, const json_t *obj, struct status *st)
{
	static const char *const lists[] = { "addresses", "notReadyAddresses" };
	const json_t *subsets = json_object_get(obj, "subsets"), *ss, *a;
	const char *ns = obj_namespace(obj);
	json_t *cache;
	size_t i, j;
	int rc = admit_begin(r, subsets, st);

	if (rc)
		return rc < 0 ? -1 : 0;
	cache = json_object();
	json_array_foreach(subsets, i, ss) {
		for (int l = 0; l < 2 && !rc; l++) {
			json_array_foreach(json_object_get(ss, lists[l]), j, a) {
				char field[96];

				snprintf(field, sizeof(field), "subsets[%zu].%s[%zu].ip", i, lists[l], j);
				rc = check_address(r, b, cache, ns, field,
						   json_string_value(json_object_get(a, "ip")) ?: "", st);
				if (rc)
					break;
			}
		}
		if (rc)
			break;
	}
	json_decref(cache);
	return rc;
}

int endpointslice_admit(struct registry *r, struct txnb *b, const json_t *obj, struct status *st)
{
	const json_t *endpoints = json_object_get(obj, "endpoints"), *e, *a;
	const char *ns = obj_namespace(obj);
	json_t *cache;
	size_t i, j;
	int rc = admit_begin(r, endpoints, st);

	if (rc)
		return rc < 0 ? -1 : 0;
	cache = json_object();
	json_array_foreach(endpoints, i, e) {
		json_array_foreach(json_object_get(e, "addresses"), j, a) {
			char field[96];

			snprintf(field, sizeof(field), "endpoints[%zu].addresses[%zu]", i, j);
			rc = check_address(r, b, cache, ns, field, json_string_value(a) ?: "", st);
			if (rc)
				break;
		}
		if (rc)
			break;
	}
	json_decref(cache);
	return rc;
}
