/*
 * slices_ctl.c — the EndpointSlice controller and the EndpointSlice
 * mirroring controller: for each Service, the slices that hold its
 * endpoints (docs/services.md, "EndpointSlices").  It runs inside the
 * endpoints controller (endpoints_ctl.c), which owns it: same lock, same
 * events, same synchronous path after each commit, leader-only as it is.
 * The endpoints controller decides what a Service's endpoints are and
 * calls slices_ctl_reconcile with them; this file keeps the slices equal.
 *
 * Two sets of slices per Service, each told apart by its managed-by label:
 *   ENDPOINTSLICE_MANAGER         a Service with a selector: its pods (the
 *                                 subsets model_endpoints_subsets gives,
 *                                 untruncated)
 *   ENDPOINTSLICE_MIRROR_MANAGER  a Service without one: its hand-written
 *                                 Endpoints, unless labelled skip-mirror
 * Each set is packed by slice_pack (model/slice_pack.h): an endpoint stays
 * in its slice, new ones fill slices with room first, emptied slices are
 * deleted, only changed slices are written.  A slice of any other (or no)
 * manager is never written or deleted; its name is only kept free.
 *
 * The index is a slice set (slice_set.c), owners "ns/svc":
 *   slices:     "ns/name" → {ours, owner, manager, service, group,
 *                            entries (the endpoints), irregular}  (every
 *                            slice; ours false: a name only)
 *   by_owner:   "ns/svc" → {name: true}  (our slices, both managers)
 * kept from the store's events (slices_ctl_apply) and from our own writes
 * (taken as written, so their events come back equal: no more work).
 *
 * Names: "<svc>-<n>", n the smallest number from 1 up that no slice of
 * the namespace has (a Service name is a DNS-1035 label of at most 63
 * bytes, so the name stays far inside 253).  A create that finds the name
 * taken (a slice the index did not know yet) fails and is retried at the
 * next sync, when the index knows it.
 *
 * Invariants
 *  1. A slice whose managed-by label is not one of ours is never written.
 *  2. After a reconcile that wrote successfully, the index's record of
 *     each of the Service's slices equals what is stored.
 *  3. A Service's slices after a reconcile are the desired endpoints, each
 *     once, in slices of 1..max endpoints (slice_pack's invariants).
 *
 * Threads: none; it runs under the API's lock like the registry.
 */
#include "controller/controller.h"
#include "model/slice_pack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLICE_KEY_MAX 600	/* "ns/name": a namespace <= 63, a name <= 253 */

struct slices_ctl {
	struct registry *reg;
	size_t max;		/* endpoints in one slice at most */
	struct slice_set set;
};

struct slices_ctl *slices_ctl_new(struct registry *r)
{
	struct slices_ctl *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->reg = r;
	s->max = ENDPOINTSLICE_DEFAULT_PER_SLICE;
	if (slice_set_init(&s->set)) {
		free(s);
		return NULL;
	}
	return s;
}

void slices_ctl_free(struct slices_ctl *s)
{
	if (!s)
		return;
	slice_set_free(&s->set);
	free(s);
}

void slices_ctl_clear(struct slices_ctl *s)
{
	slice_set_clear(&s->set);
}

int slices_ctl_set_capacity(struct slices_ctl *s, size_t max)
{
	if (max < 1 || max > ENDPOINTSLICE_MAX_ENDPOINTS)
		return -ERANGE;
	s->max = max;
	return 0;
}

const json_t *slices_ctl_services(const struct slices_ctl *s)
{
	return s->set.by_owner;
}

static bool is_ours(const char *manager)
{
	return manager && (!strcmp(manager, ENDPOINTSLICE_MANAGER) || !strcmp(manager, ENDPOINTSLICE_MIRROR_MANAGER));
}

static void service_key(char *buf, size_t len, const char *ns, const char *svc)
{
	snprintf(buf, len, "%s/%s", ns, svc);
}

/* What the controller compares of a stored slice. */
static json_t *record_of(const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels"), *e;
	const char *manager = json_string_value(json_object_get(labels, ENDPOINTSLICE_MANAGED_LABEL));
	const char *service = json_string_value(json_object_get(labels, ENDPOINTSLICE_SERVICE_LABEL));
	const char *type = json_string_value(json_object_get(obj, "addressType"));
	const char *ns = obj_str(obj, "metadata.namespace");
	json_t *ports, *eps, *rec;
	bool irregular = !type || strcmp(type, "IPv4") != 0;
	char *group, owner[SLICE_KEY_MAX];
	size_t i;

	if (!is_ours(manager) || !service || !*service || !ns)
		return json_pack("{s:b}", "ours", 0);
	service_key(owner, sizeof(owner), ns, service);
	ports = model_endpointslice_ports(json_object_get(obj, "ports"));
	group = ports ? model_endpointslice_group(ports) : NULL;
	json_decref(ports);
	eps = json_object();
	if (!group || !eps) {
		free(group);
		json_decref(eps);
		return NULL;
	}
	json_array_foreach(json_object_get(obj, "endpoints"), i, e) {
		const char *key = model_endpointslice_endpoint_key(e);

		if (!key || json_array_size(json_object_get(e, "addresses")) != 1 || json_object_get(eps, key))
			irregular = true;
		else
			json_object_set(eps, key, (json_t *)e);
	}
	rec = json_pack("{s:b, s:s, s:s, s:s, s:s, s:o, s:b}", "ours", 1, "owner", owner, "manager", manager,
			"service", service, "group", group, "entries", eps, "irregular", irregular);
	free(group);
	return rec;
}

bool slices_ctl_apply(struct slices_ctl *s, const char *ns, const char *name, const json_t *obj, char *service,
		      size_t len)
{
	const json_t *old = slice_set_get(&s->set, ns, name);
	json_t *now = obj ? record_of(obj) : NULL;
	const char *svc = NULL;
	bool changed;

	service[0] = 0;
	changed = !(old ? now && json_equal(old, now) : !now);
	if (!changed) {
		json_decref(now);	/* our own write coming back */
		return false;
	}
	/* the Service whose slices these were or are: someone else changed one */
	if (now && json_is_true(json_object_get(now, "ours")))
		svc = json_string_value(json_object_get(now, "service"));
	else if (old && json_is_true(json_object_get(old, "ours")))
		svc = json_string_value(json_object_get(old, "service"));
	if (svc)
		snprintf(service, len, "%s", svc);
	slice_set_put(&s->set, ns, name, now);
	return true;
}

/* "<svc>-<n>", free in the namespace. */
static int new_name(struct slices_ctl *s, const char *ns, const char *svc, char *name, size_t len)
{
	for (unsigned n = 1; n < 1000000; n++) {
		snprintf(name, len, "%s-%u", svc, n);
		if (!slice_set_get(&s->set, ns, name))
			return 0;
	}
	return -ENOSPC;
}

/* One step of a plan: 0 done, -1 failed (retried at the next sync). */
static int write_step(struct slices_ctl *s, const char *ns, const char *svc, const char *manager,
		      const struct slice_pack_step *st, const json_t *groups)
{
	struct registry *r = s->reg;
	const struct kind_info *k = kind_get(KIND_ENDPOINTSLICE);
	json_t *obj = NULL, *out = NULL;
	struct status status = { 0 };
	char name[300];
	int rc = 0, err;

	if (st->action == SLICE_PACK_KEEP)
		return 0;
	if (st->action == SLICE_PACK_CREATE) {
		if (new_name(s, ns, svc, name, sizeof(name)))
			return -1;
	} else {
		snprintf(name, sizeof(name), "%s", st->name);
	}
	if (st->action == SLICE_PACK_DELETE) {
		err = registry_delete(r, k, ns, name, &out, &status);
		if (err && status.code != 404) {
			r->metrics->endpointslice_failures++;
			rc = -1;
			goto out;
		}
		if (!err)
			r->metrics->endpointslice_deletes++;
		slice_set_put(&s->set, ns, name, NULL);
		goto out;
	}
	obj = model_endpointslice_object(ns, name, svc, manager,
					 json_object_get(json_object_get(groups, st->group), "ports"), st->endpoints);
	if (!obj) {
		rc = -1;
		goto out;
	}
	if (st->action == SLICE_PACK_CREATE)
		err = registry_create(r, k, ns, obj, &out, &status);
	else
		err = registry_replace(r, k, ns, name, obj, &out, &status);
	if (err) {
		/* a namespace being deleted takes the Service along: done */
		if (status.code != 404) {
			r->metrics->endpointslice_failures++;
			rc = -1;
		}
		goto out;
	}
	r->metrics->endpointslice_writes++;
	slice_set_put(&s->set, ns, name, record_of(out));
out:
	json_decref(obj);
	json_decref(out);
	return rc;
}

/* One set (manager's) of ns/svc to the endpoints of subsets (NULL: none). */
static int reconcile_set(struct slices_ctl *s, const char *ns, const char *svc, const char *manager,
			 const json_t *subsets)
{
	char owner[SLICE_KEY_MAX];
	json_t *groups = subsets ? model_endpointslice_groups(subsets) : json_object();
	json_t *want = json_object(), *held = NULL, *g;
	struct slice_pack_plan plan = { 0 };
	const char *gk;
	int rc = -1;

	if (!groups || !want)
		goto out;
	json_object_foreach(groups, gk, g)
		json_object_set(want, gk, json_object_get(g, "endpoints"));
	service_key(owner, sizeof(owner), ns, svc);
	if (!subsets && !json_object_size(json_object_get(s->set.by_owner, owner))) {
		rc = 0;		/* nothing wanted, nothing there: most Services' mirrored set */
		goto out;
	}
	if (slice_set_plan(&s->set, ns, owner, manager, want, s->max, &plan, &held))
		goto out;
	rc = 0;
	for (size_t i = 0; i < plan.n; i++)
		if (write_step(s, ns, svc, manager, &plan.steps[i], groups))
			rc = -1;
out:
	slice_pack_plan_free(&plan);
	json_decref(held);
	json_decref(want);
	json_decref(groups);
	return rc;
}

int slices_ctl_reconcile(struct slices_ctl *s, const char *ns, const char *svc, const json_t *managed,
			 const json_t *mirrored)
{
	int a = reconcile_set(s, ns, svc, ENDPOINTSLICE_MANAGER, managed);
	int b = reconcile_set(s, ns, svc, ENDPOINTSLICE_MIRROR_MANAGER, mirrored);

	return a || b ? -1 : 0;
}
