/*
 * alloc_vnid.c — VNIDs: a Namespace's NetNamespace, the pod-network verbs
 * (join, isolate, make global), and bringing stored VNIDs in line with the
 * cluster's mode at start.  What the modes and VNIDs mean for users:
 * docs/api.md, "Cluster modes and VNIDs"; how the data plane enforces
 * them: docs/agent.md, "Tenants".
 *
 * Invariants
 *  1. VNID 0 is global: the namespace "default" always has it, and in flat
 *     and networkpolicy modes every namespace has it
 *     (cluster_mode_gives_vnids).  1..9 are reserved; in multitenant mode
 *     every other namespace gets the lowest free VNID from 10.
 *  2. Each VNID other than 0 in use has an allocation key holding how many
 *     NetNamespaces use it; the key is deleted when that count reaches 0
 *     (the VNID is free again).  VNID 0 has no key, so in flat and
 *     networkpolicy modes there are no VNID keys at all.
 *  3. The pod-network verbs change VNIDs in multitenant mode only.
 *
 * A write loads the whole VNID view (keys with counts and mod_revs),
 * changes it in memory, and emits one guarded put/delete per changed key,
 * so concurrent writers on other namespaces retry instead of sharing a VNID.
 * Every write also guards the ClusterNetwork's revision: a mode change in
 * between makes it plan again under the new mode.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vnid_entry {
	uint32_t vnid;
	int64_t count;		/* now, after the planned changes */
	int64_t mod_rev;	/* 0 = the key did not exist */
	bool changed;
};

struct vnid_view {
	struct vnid_entry *e;
	size_t n, cap;
};

static void view_free(struct vnid_view *v) { free(v->e); }

static int view_load(struct registry *r, struct vnid_view *v, struct status *st)
{
	struct store_kv_list l = { 0 };
	int err = store_range(r->store, ALLOC_VNID, NULL, 0, &l);

	memset(v, 0, sizeof(*v));
	if (err) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	v->cap = l.n + 16;
	v->e = calloc(v->cap, sizeof(*v->e));
	if (!v->e) {
		store_kv_list_free(&l);
		status_set(st, 500, "InternalError", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < l.n; i++) {
		v->e[v->n++] = (struct vnid_entry){
			.vnid = (uint32_t)strtoul(l.kvs[i].key + strlen(ALLOC_VNID), NULL, 10),
			.count = strtoll(l.kvs[i].value, NULL, 10),
			.mod_rev = l.kvs[i].mod_rev,
		};
	}
	store_kv_list_free(&l);
	return 0;
}

static struct vnid_entry *view_find(struct vnid_view *v, uint32_t vnid)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->e[i].vnid == vnid)
			return &v->e[i];
	return NULL;
}

static int view_adjust(struct vnid_view *v, uint32_t vnid, int delta)
{
	struct vnid_entry *e;

	if (vnid == 0)
		return 0;
	e = view_find(v, vnid);
	if (!e) {
		if (v->n == v->cap) {
			size_t ncap = v->cap ? v->cap * 2 : 16;
			struct vnid_entry *p = realloc(v->e, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			v->e = p;
			v->cap = ncap;
		}
		e = &v->e[v->n++];
		*e = (struct vnid_entry){ .vnid = vnid };
	}
	e->count += delta;
	if (e->count < 0)
		e->count = 0;
	e->changed = true;
	return 0;
}

/* Lowest VNID >= VNID_MIN that no namespace uses (after planned changes). */
static int view_lowest_free(struct vnid_view *v, uint32_t *out)
{
	/* v is small next to the 2^24 space: test candidates in order */
	for (uint32_t cand = VNID_MIN; cand <= VNID_MAX; cand++) {
		struct vnid_entry *e = view_find(v, cand);
		if (!e || e->count == 0) {
			*out = cand;
			return 0;
		}
	}
	return -ENOSPC;
}

static void view_emit(struct vnid_view *v, struct txnb *b)
{
	for (size_t i = 0; i < v->n; i++) {
		struct vnid_entry *e = &v->e[i];
		char key[64], val[24];

		if (!e->changed)
			continue;
		snprintf(key, sizeof(key), ALLOC_VNID "%08" PRIu32, e->vnid);
		if (e->mod_rev)
			txnb_unchanged(b, key, e->mod_rev);
		else
			txnb_absent(b, key);
		if (e->count > 0) {
			snprintf(val, sizeof(val), "%" PRId64, e->count);
			txnb_put(b, key, val);
		} else if (e->mod_rev) {
			txnb_del(b, key);
		}
	}
}

static json_t *netnamespace_new(const char *name, uint32_t vnid)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:s, s:I}", "apiVersion", "network.openshift.io/v1", "kind",
			 "NetNamespace", "metadata", "name", name, "netname", name, "netid",
			 (json_int_t)vnid);
}

static void netns_key(const char *name, char *buf, size_t len)
{
	obj_key(kind_get(KIND_NETNAMESPACE), NULL, name, buf, len);
}

static int exhausted(struct registry *r, struct status *st)
{
	r->metrics->alloc_failures[POOL_VNID]++;
	status_set(st, 409, "Exhausted", "no VNIDs available (%d-%d all in use)", VNID_MIN, VNID_MAX);
	return -1;
}

int namespace_admit(struct registry *r, struct txnb *b, json_t *obj, struct status *st)
{
	const char *name = obj_name(obj);
	struct vnid_view v;
	uint32_t vnid = 0;
	char key[512];
	json_t *nn;

	netns_key(name, key, sizeof(key));
	txnb_unchanged(b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
	txnb_absent(b, key);
	if (cluster_mode_gives_vnids(r->config.mode) && strcmp(name, "default") != 0) {
		if (view_load(r, &v, st))
			return -1;
		if (view_lowest_free(&v, &vnid)) {
			view_free(&v);
			return exhausted(r, st);
		}
		if (view_adjust(&v, vnid, +1)) {
			view_free(&v);
			status_set(st, 500, "InternalError", "out of memory");
			return -1;
		}
		view_emit(&v, b);
		view_free(&v);
	}
	nn = netnamespace_new(name, vnid);
	{
		json_object_set(json_object_get(nn, "metadata"), "uid",
				json_object_get(json_object_get(obj, "metadata"), "uid"));
		json_object_set(json_object_get(nn, "metadata"), "creationTimestamp",
				json_object_get(json_object_get(obj, "metadata"), "creationTimestamp"));
	}
	txnb_put_json(b, key, nn);
	json_decref(nn);
	return 0;
}

int namespace_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st)
{
	const char *name = obj_name(old);
	char key[512];
	struct store_kv kv = { 0 };
	struct store_kv_list svcs = { 0 };
	int err;

	/* the NetNamespace and its VNID */
	netns_key(name, key, sizeof(key));
	err = store_get(r->store, key, &kv, NULL);
	if (err == 0) {
		json_t *nn = json_loadb(kv.value, kv.value_len, 0, NULL);
		uint32_t vnid = (uint32_t)json_integer_value(json_object_get(nn, "netid"));
		struct vnid_view v;

		json_decref(nn);
		txnb_unchanged(b, key, kv.mod_rev);
		txnb_del(b, key);
		store_kv_free(&kv);
		if (vnid) {
			if (view_load(r, &v, st))
				return -1;
			if (view_adjust(&v, vnid, -1) == 0)
				view_emit(&v, b);
			view_free(&v);
		}
	} else if (err != -ENOENT) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}

	/* services hold allocations: release them, then drop every object */
	snprintf(key, sizeof(key), OBJ_PREFIX "services/%s/", name);
	err = store_range(r->store, key, NULL, 0, &svcs);
	if (err) {
		status_set(st, 500, "InternalError", "store: %s", strerror(-err));
		return -1;
	}
	for (size_t i = 0; i < svcs.n; i++) {
		json_t *svc = json_loadb(svcs.kvs[i].value, svcs.kvs[i].value_len, 0, NULL);
		int e = svc ? service_release(r, b, svc, st) : 0;

		txnb_unchanged(b, svcs.kvs[i].key, svcs.kvs[i].mod_rev);
		json_decref(svc);
		if (e) {
			store_kv_list_free(&svcs);
			return -1;
		}
	}
	store_kv_list_free(&svcs);
	/* pods hold their addresses (admit_pod.c) */
	if (pod_release_namespace(r, b, name, st))
		return -1;
	for (int k = 0; k < KIND_COUNT; k++) {
		const struct kind_info *ki = kind_get((enum kind_id)k);
		if (!ki->namespaced)
			continue;
		snprintf(key, sizeof(key), OBJ_PREFIX "%s/%s/", ki->plural, name);
		txnb_del_prefix(b, key);
	}
	return 0;
}

/*
 * Where the mode gives no VNIDs (invariant 1) a store may still hold some:
 * weft before this rule gave every namespace one in networkpolicy mode.
 * registry_conform_vnids walks the NetNamespaces in pages of CONFORM_PAGE
 * keys (after *cursor, the last key of the page before); one transaction
 * per page sets those with a VNID to 0 and takes them off their VNID keys'
 * counts, guarded like any write.  Only the keys a page touches are read,
 * so the walk is O(namespaces) and each transaction's comparisons stay
 * under the store's limit however many namespaces there are.
 */
#define CONFORM_PAGE 256

/* Add VNID vnid's key (count and mod_rev; absent: 0) to v, once. */
static int view_load_one(struct registry *r, struct vnid_view *v, uint32_t vnid)
{
	struct store_kv kv = { 0 };
	char key[64];
	int err;

	if (view_find(v, vnid))
		return 0;
	snprintf(key, sizeof(key), ALLOC_VNID "%08" PRIu32, vnid);
	err = store_get(r->store, key, &kv, NULL);
	if (err && err != -ENOENT)
		return err;
	err = view_adjust(v, vnid, 0);
	if (err == 0) {
		struct vnid_entry *e = view_find(v, vnid);
		e->count = kv.key ? strtoll(kv.value, NULL, 10) : 0;
		e->mod_rev = kv.key ? kv.mod_rev : 0;
		e->changed = false;
	}
	store_kv_free(&kv);
	return err;
}

/* One page: 0 with *changed and *more set (cursor moved on), -EAGAIN when
 * a guard failed (cursor kept), or another -errno. */
static int conform_page(struct registry *r, char *cursor, size_t cursor_len, size_t *changed, bool *more)
{
	struct store_kv_list l = { 0 };
	struct vnid_view v = { 0 };
	struct txnb b;
	int err;

	*changed = 0;
	*more = false;
	err = store_range(r->store, OBJ_PREFIX "netnamespaces/", cursor[0] ? cursor : NULL, CONFORM_PAGE, &l);
	if (err)
		return err;
	txnb_init(&b);
	txnb_unchanged(&b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
	for (size_t i = 0; i < l.n && !err; i++) {
		json_t *nn = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		uint32_t vnid = (uint32_t)json_integer_value(json_object_get(nn, "netid"));

		if (nn && vnid != 0) {
			json_object_set_new(nn, "netid", json_integer(0));
			txnb_unchanged(&b, l.kvs[i].key, l.kvs[i].mod_rev);
			txnb_put_json(&b, l.kvs[i].key, nn);
			err = view_load_one(r, &v, vnid);
			if (!err)
				err = view_adjust(&v, vnid, -1);
			(*changed)++;
		}
		json_decref(nn);
	}
	if (!err && *changed) {
		view_emit(&v, &b);
		err = txnb_commit(&b, r->store, &r->last_write_rev);
	}
	if (!err && l.n) {
		snprintf(cursor, cursor_len, "%s", l.kvs[l.n - 1].key);
		*more = l.n == CONFORM_PAGE;
	}
	txnb_free(&b);
	view_free(&v);
	store_kv_list_free(&l);
	return err;
}

int registry_conform_vnids(struct registry *r, size_t *changed, struct status *st)
{
	char cursor[512] = "";
	int conflicts = 0;
	bool more = true;

	*changed = 0;
	while (more && !cluster_mode_gives_vnids(r->config.mode)) {
		size_t n = 0;
		int err = conform_page(r, cursor, sizeof(cursor), &n, &more);

		if (err == 0) {
			*changed += n;
			continue;
		}
		if (err != -EAGAIN) {
			status_set(st, 500, "InternalError", "store: %s", strerror(-err));
			return -1;
		}
		if (++conflicts == REGISTRY_RETRIES) {
			status_set(st, 409, "Conflict", "NetNamespaces: they kept changing while being set to VNID 0");
			return -1;
		}
		if (registry_reload_config(r)) {
			status_set(st, 500, "InternalError", "store: cannot reload the cluster config");
			return -1;
		}
		more = true;
	}
	return 0;
}

static const char *action_name(enum podnet_action a)
{
	return a == PODNET_JOIN ? "join-projects" : a == PODNET_ISOLATE ? "isolate-projects"
									: "make-projects-global";
}

int registry_podnetwork(struct registry *r, enum podnet_action a, const char *to,
			const char *const *projects, size_t n, json_t **out, int64_t *rev, struct status *st)
{
	if (!cluster_mode_gives_vnids(r->config.mode)) {
		status_set(st, 409, "Conflict",
			   "%s works in multitenant mode only; this cluster's mode is %s, where every project "
			   "has VNID 0 and reaches every other",
			   action_name(a), cluster_mode_name(r->config.mode));
		return -1;
	}
	if (n == 0) {
		status_set(st, 422, "Invalid", "%s: no projects given", action_name(a));
		return -1;
	}
	if (a == PODNET_JOIN && (!to || !*to)) {
		status_set(st, 422, "Invalid", "join-projects: 'to' (the project to join) is required");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (a == PODNET_ISOLATE && strcmp(projects[i], "default") == 0) {
			status_set(st, 422, "Invalid", "isolate-projects: the project 'default' cannot be isolated (it is global: VNID 0)");
			return -1;
		}
	}

	for (int attempt = 0; attempt < REGISTRY_RETRIES; attempt++) {
		struct vnid_view v;
		struct txnb b;
		json_t *changed = json_array();
		uint32_t to_vnid = 0;
		int err = 0;
		char key[512];

		if (view_load(r, &v, st)) {
			json_decref(changed);
			return -1;
		}
		txnb_init(&b);
		txnb_unchanged(&b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
		if (a == PODNET_JOIN) {
			struct store_kv kv = { 0 };
			netns_key(to, key, sizeof(key));
			err = store_get(r->store, key, &kv, NULL);
			if (err) {
				if (err == -ENOENT)
					status_set(st, 404, "NotFound", "project \"%s\" not found", to);
				else
					status_set(st, 500, "InternalError", "store: %s", strerror(-err));
				goto fail;
			}
			json_t *nn = json_loadb(kv.value, kv.value_len, 0, NULL);
			to_vnid = (uint32_t)json_integer_value(json_object_get(nn, "netid"));
			json_decref(nn);
			txnb_unchanged(&b, key, kv.mod_rev);
			store_kv_free(&kv);
		}
		for (size_t i = 0; i < n; i++) {
			struct store_kv kv = { 0 };
			json_t *nn;
			uint32_t cur, next;

			/* a project named twice is done once */
			bool dup = false;
			for (size_t j = 0; j < i; j++)
				dup |= strcmp(projects[j], projects[i]) == 0;
			if (dup || (a == PODNET_JOIN && strcmp(projects[i], to) == 0))
				continue;
			netns_key(projects[i], key, sizeof(key));
			err = store_get(r->store, key, &kv, NULL);
			if (err) {
				if (err == -ENOENT)
					status_set(st, 404, "NotFound", "project \"%s\" not found", projects[i]);
				else
					status_set(st, 500, "InternalError", "store: %s", strerror(-err));
				goto fail;
			}
			nn = json_loadb(kv.value, kv.value_len, 0, NULL);
			cur = (uint32_t)json_integer_value(json_object_get(nn, "netid"));
			if (a == PODNET_JOIN) {
				next = to_vnid;
			} else if (a == PODNET_GLOBAL) {
				next = 0;
			} else {
				struct vnid_entry *e = view_find(&v, cur);
				/* already alone in its own VNID: it is isolated */
				if (cur != 0 && e && e->count == 1)
					next = cur;
				else if (view_lowest_free(&v, &next)) {
					json_decref(nn);
					store_kv_free(&kv);
					exhausted(r, st);
					goto fail;
				}
			}
			if (next != cur) {
				if (view_adjust(&v, cur, -1) || view_adjust(&v, next, +1)) {
					json_decref(nn);
					store_kv_free(&kv);
					status_set(st, 500, "InternalError", "out of memory");
					goto fail;
				}
				json_object_set_new(nn, "netid", json_integer(next));
				txnb_unchanged(&b, key, kv.mod_rev);
				txnb_put_json(&b, key, nn);
			}
			json_array_append_new(changed, nn);
			store_kv_free(&kv);
		}
		view_emit(&v, &b);
		view_free(&v);
		err = txnb_commit(&b, r->store, rev);
		txnb_free(&b);
		if (err == 0) {
			r->last_write_rev = *rev;
			*out = changed;
			return 0;
		}
		json_decref(changed);
		if (err != -EAGAIN) {
			status_set(st, 500, "InternalError", "store: %s", strerror(-err));
			return -1;
		}
		if (registry_reload_config(r)) {
			status_set(st, 500, "InternalError", "store: cannot reload the cluster config");
			return -1;
		}
		continue;
fail:
		view_free(&v);
		txnb_free(&b);
		json_decref(changed);
		return -1;
	}
	status_set(st, 409, "Conflict", "%s: the projects kept changing; try again", action_name(a));
	return -1;
}
