/*
 * endpoints_ctl.c — the endpoints controller: for every Service with a
 * selector, an Endpoints object of the same namespace and name that lists
 * the Service's pods (model_endpoints_subsets computes the content), and
 * the Service's EndpointSlices: the same pods, untruncated, in slices that
 * slices_ctl.c keeps (for a Service without a selector, its hand-written
 * Endpoints mirrored into slices).  slices_ctl.c is owned and called from
 * here, after the Endpoints of each Service it reconciles, and calls
 * nothing back: the slice events are handed to it (apply_slice).  The
 * PodPeerSlice controller (peers_ctl.c) is owned the same way: every pod
 * digest change and PodPeerSlice event is handed to it, and each sync
 * ends with peers_ctl_reconcile (the nodes whose gather is over).
 *
 * It works from an in-memory index, kept from the store's events:
 *
 *   namespaces: ns → { pods:            name → pod digest
 *                      podsByLabel:     "key=value" → {name: true}
 *                      services:        name → {svc: digest, pair: "key=value"}
 *                      servicesByLabel: "key=value" → {name: true}
 *                      endpoints:       name → {managed, truncated, subsets,
 *                                               skipMirror}
 *                      plain:           {name: true} (Services without a
 *                                        selector: their Endpoints are
 *                                        mirrored) }
 *   slices:     slices_ctl.c's index of every EndpointSlice
 *   peers:      peers_ctl.c's index: node → its pods' peer entries, every
 *               PodPeerSlice, the dirty nodes
 *   netpols:    "ns/name" → true                 (every NetworkPolicy: the
 *               PodPeerSlices are kept while there is one)
 *   podIPs:     ip → {"ns/name": true}          (for endpoints_admit)
 *   dirty:      "ns/name" → true                 (Services to recompute)
 *
 * (jansson objects serve as hash maps; a "set" is an object whose values
 * are true.)  A digest keeps only what the Endpoints depend on, so an
 * event that changes nothing else (an annotation, a status the Endpoints
 * do not read) is recognised as no change and costs no recomputation.
 *
 * A Service is indexed under one pair of its selector only, the pair with
 * the fewest Services at the time: a pod can only match a Service if it has
 * every pair, so the Services to recompute for a pod are found among those
 * indexed under the pod's own pairs (then matched in full).  A Service's
 * pods are found in the shortest podsByLabel set among its pairs.  So:
 *   pod event     → the Services matching its old or new labels
 *   service event → that Service
 *   Endpoints event (someone else wrote or deleted it) → that Service
 *   EndpointSlice event of one of ours, not as the index has it → its Service
 * and nothing is ever recomputed for all Services but at a resync.
 *
 *   endpoints_sync:  catch up (events → index, dirty) ──► reconcile dirty:
 *   (endpoints_written: the registry's own commit of one change, taken as
 *    written instead of read back, when it is the next revision)
 *      Service with a selector: desired ≠ stored (or not ours) ──► PUT
 *      no such Service (or no selector), stored one is ours    ──► DELETE
 *      otherwise nothing (no write storms: a write only on a change)
 *    then its slices (slices_ctl_reconcile): the pods' endpoints when it
 *    has a selector, its Endpoints' when it has none (mirroring), only the
 *    slices that change written
 *   the controller's own writes come back as events equal to the index:
 *   no further work.  A failed write stays dirty and is retried at the
 *   next sync (the next write, or the API's timer).
 *
 * Invariants
 *  1. Every event with revision <= cursor is in the index; none after.
 *  2. After a reconcile that wrote successfully, the index's endpoints
 *     record of a Service equals what it wrote.
 *  3. An Endpoints without ENDPOINTS_MANAGED_LABEL is never deleted, and
 *     is overwritten only when its Service has a selector (as Kubernetes).
 *  4. A Service whose endpoints could not be computed keeps its slices
 *     (an error is never taken for "no endpoints").
 *
 * Threads: none of its own; it runs under the API's lock like the registry.
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVENT_PAGE 4096
#define RECONCILE_ROUNDS 4
#define PAIR_MAX 1024		/* "key=value": a label key <= 317, value <= 63 */

struct endpoints_ctl {
	struct registry *reg;
	bool enabled;
	bool built;
	bool syncing;		/* inside endpoints_sync: nested calls return at once */
	bool writing;		/* an Endpoints write of ours is under way */
	int64_t cursor;		/* invariant 1 */
	json_t *namespaces;
	json_t *pod_ips;
	json_t *dirty;
	json_t *netpols;	/* "ns/name" → true: every NetworkPolicy (peers kept while any) */
	struct slices_ctl *slices;	/* owned: the EndpointSlices (slices_ctl.c) */
	struct peers_ctl *peers;	/* owned: the PodPeerSlices (peers_ctl.c) */
};

/* ------------------------------------------------------------------ index */

static json_t *ns_index(struct endpoints_ctl *c, const char *ns, bool create)
{
	static const char *const maps[] = { "pods", "podsByLabel", "services", "servicesByLabel", "endpoints",
					    "plain" };
	json_t *nsx = json_object_get(c->namespaces, ns);

	if (nsx || !create)
		return nsx;
	nsx = json_object();
	for (size_t i = 0; nsx && i < sizeof(maps) / sizeof(maps[0]); i++)
		json_object_set_new(nsx, maps[i], json_object());
	if (json_object_set_new(c->namespaces, ns, nsx) < 0)
		return NULL;
	return nsx;
}

/* Drop a namespace's index when nothing is left in it. */
static void ns_gc(struct endpoints_ctl *c, const char *ns)
{
	json_t *nsx = json_object_get(c->namespaces, ns);

	if (nsx && !json_object_size(json_object_get(nsx, "pods")) &&
	    !json_object_size(json_object_get(nsx, "services")) &&
	    !json_object_size(json_object_get(nsx, "endpoints")) &&
	    !json_object_size(json_object_get(nsx, "plain")))
		json_object_del(c->namespaces, ns);
}

static bool pair_key(char *buf, size_t len, const char *key, const json_t *value)
{
	int n;

	if (!json_is_string(value))
		return false;
	n = snprintf(buf, len, "%s=%s", key, json_string_value(value));
	return n > 0 && (size_t)n < len;
}

static void set_add(json_t *map, const char *set_name, const char *member)
{
	json_t *set = json_object_get(map, set_name);

	if (!set) {
		set = json_object();
		if (json_object_set_new(map, set_name, set) < 0)
			return;
	}
	json_object_set_new(set, member, json_true());
}

static void set_del(json_t *map, const char *set_name, const char *member)
{
	json_t *set = json_object_get(map, set_name);

	if (!set)
		return;
	json_object_del(set, member);
	if (!json_object_size(set))
		json_object_del(map, set_name);
}

static void mark(struct endpoints_ctl *c, const char *ns, const char *name)
{
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	json_object_set_new(c->dirty, key, json_true());
}

/* Copy obj[field] into out when it is there. */
static void copy_field(json_t *out, const json_t *obj, const char *field)
{
	json_t *v = json_object_get(obj, field);

	if (v && !json_is_null(v))
		json_object_set(out, field, v);
}

/* What the Endpoints read of a pod (in the pod's shape, for the model). */
static json_t *pod_digest(const json_t *pod)
{
	const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	const json_t *status = json_object_get(pod, "status");
	json_t *x;
	json_t *d = json_pack("{s:{}, s:{}, s:{}}", "metadata", "spec", "status");
	json_t *dm, *ds, *dst, *containers, *conds;
	size_t i;

	if (!d)
		return NULL;
	dm = json_object_get(d, "metadata");
	ds = json_object_get(d, "spec");
	dst = json_object_get(d, "status");
	copy_field(dm, meta, "name");
	copy_field(dm, meta, "namespace");
	copy_field(dm, meta, "labels");
	copy_field(dm, meta, "deletionTimestamp");
	copy_field(ds, spec, "nodeName");
	containers = json_array();
	json_array_foreach(json_object_get(spec, "containers"), i, x) {
		json_t *c = json_object();
		copy_field(c, x, "ports");
		json_array_append_new(containers, c);
	}
	json_object_set_new(ds, "containers", containers);
	copy_field(dst, status, "podIP");
	copy_field(dst, status, "phase");
	conds = json_array();
	json_array_foreach(json_object_get(status, "conditions"), i, x) {
		const char *type = json_string_value(json_object_get(x, "type"));
		if (type && !strcmp(type, "Ready"))
			json_array_append(conds, x);
	}
	if (json_array_size(conds))
		json_object_set(dst, "conditions", conds);
	json_decref(conds);
	return d;
}

/* What the Endpoints read of a Service; NULL when it has no selector. */
static json_t *service_digest(const json_t *svc)
{
	const json_t *spec = json_object_get(svc, "spec");
	const json_t *sel = json_object_get(spec, "selector");
	json_t *d, *ds;

	if (!json_is_object(sel) || !json_object_size(sel))
		return NULL;
	d = json_pack("{s:{s:s, s:s}, s:{}}", "metadata", "name", obj_name(svc) ?: "", "namespace",
		      obj_namespace(svc), "spec");
	if (!d)
		return NULL;
	ds = json_object_get(d, "spec");
	copy_field(ds, spec, "selector");
	copy_field(ds, spec, "ports");
	copy_field(ds, spec, "publishNotReadyAddresses");
	return d;
}

static const json_t *labels_of(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "labels");
}

static bool is_managed(const json_t *ep)
{
	const json_t *labels = json_object_get(json_object_get(ep, "metadata"), "labels");
	const char *by = json_string_value(json_object_get(labels, ENDPOINTS_MANAGED_LABEL));

	return by && !strcmp(by, ENDPOINTS_MANAGER);
}

/* The index's record of an Endpoints: what the controller compares. */
static json_t *endpoints_record(bool managed, bool truncated, json_t *subsets)
{
	json_t *rec = json_pack("{s:b, s:b}", "managed", managed, "truncated", truncated);

	if (rec && json_array_size(subsets))
		json_object_set(rec, "subsets", subsets);
	return rec;
}

static json_t *record_of(const json_t *ep)
{
	const json_t *ann = json_object_get(json_object_get(ep, "metadata"), "annotations");
	const char *over = json_string_value(json_object_get(ann, ENDPOINTS_OVER_CAPACITY));
	const char *skip = json_string_value(json_object_get(labels_of(ep), ENDPOINTSLICE_SKIP_MIRROR_LABEL));
	json_t *rec = endpoints_record(is_managed(ep), over && !strcmp(over, "truncated"),
				       json_object_get(ep, "subsets"));

	/* (only when set: the controller's own records never have it) */
	if (rec && skip && !strcmp(skip, "true"))
		json_object_set_new(rec, "skipMirror", json_true());
	return rec;
}

/* Services in nsx matching labels → dirty. */
static void mark_matching(struct endpoints_ctl *c, const char *ns, json_t *nsx, const json_t *labels)
{
	json_t *by = json_object_get(nsx, "servicesByLabel"), *svcs = json_object_get(nsx, "services");
	const char *key, *name;
	json_t *v, *t;
	char pair[PAIR_MAX];

	json_object_foreach((json_t *)labels, key, v) {
		if (!pair_key(pair, sizeof(pair), key, v))
			continue;
		json_object_foreach(json_object_get(by, pair), name, t) {
			const json_t *svc = json_object_get(json_object_get(svcs, name), "svc");

			if (model_selector_matches(json_object_get(json_object_get(svc, "spec"), "selector"), labels))
				mark(c, ns, name);
		}
	}
}

/* Add the pod to (or take it out of) its namespace's label index and the
 * pod IP index. */
static void pod_index_set(struct endpoints_ctl *c, const char *ns, const char *name, json_t *nsx,
			  const json_t *pod, bool add)
{
	json_t *by = json_object_get(nsx, "podsByLabel");
	const char *key, *ip = obj_str(pod, "status.podIP");
	json_t *v;
	char pair[PAIR_MAX], member[600];

	json_object_foreach((json_t *)labels_of(pod), key, v)
		if (pair_key(pair, sizeof(pair), key, v))
			(add ? set_add : set_del)(by, pair, name);
	if (ip) {
		snprintf(member, sizeof(member), "%s/%s", ns, name);
		(add ? set_add : set_del)(c->pod_ips, ip, member);
	}
}

static void pod_unindex(struct endpoints_ctl *c, const char *ns, const char *name, json_t *nsx, const json_t *pod)
{
	pod_index_set(c, ns, name, nsx, pod, false);
}

static void pod_index(struct endpoints_ctl *c, const char *ns, const char *name, json_t *nsx, const json_t *pod)
{
	pod_index_set(c, ns, name, nsx, pod, true);
}

/* A pod was written (obj) or deleted (obj NULL). */
static void apply_pod(struct endpoints_ctl *c, const char *ns, const char *name, const json_t *obj, bool dirty)
{
	json_t *nsx = ns_index(c, ns, obj != NULL), *pods, *old, *now;

	if (!nsx)
		return;
	pods = json_object_get(nsx, "pods");
	old = json_object_get(pods, name);
	now = obj ? pod_digest(obj) : NULL;
	if ((!old && !now) || (old && now && json_equal(old, now))) {
		json_decref(now);
		return;
	}
	peers_ctl_pod(c->peers, ns, name, old, now, dirty);
	if (old) {
		if (dirty)
			mark_matching(c, ns, nsx, labels_of(old));
		pod_unindex(c, ns, name, nsx, old);
	}
	if (now) {
		pod_index(c, ns, name, nsx, now);
		json_object_set_new(pods, name, now);	/* (frees old) */
		if (dirty)
			mark_matching(c, ns, nsx, labels_of(now));
	} else {
		json_object_del(pods, name);
		ns_gc(c, ns);
	}
}

/* A Service was written (obj) or deleted (obj NULL). */
static void apply_service(struct endpoints_ctl *c, const char *ns, const char *name, const json_t *obj, bool dirty)
{
	json_t *nsx = ns_index(c, ns, obj != NULL), *svcs, *by, *plain, *old, *now, *rec;
	const char *key, *best = NULL;
	size_t best_n = (size_t)-1;
	json_t *v;
	char pair[PAIR_MAX], chosen[PAIR_MAX];
	bool is_plain;

	if (!nsx)
		return;
	svcs = json_object_get(nsx, "services");
	by = json_object_get(nsx, "servicesByLabel");
	plain = json_object_get(nsx, "plain");
	old = json_object_get(svcs, name);
	now = obj ? service_digest(obj) : NULL;
	/* a Service without a selector: its hand-written Endpoints are mirrored */
	is_plain = obj && !now;
	if (is_plain != (json_object_get(plain, name) != NULL)) {
		if (is_plain)
			json_object_set_new(plain, name, json_true());
		else
			json_object_del(plain, name);
		if (dirty)
			mark(c, ns, name);
	}
	if ((!old && !now) || (old && now && json_equal(json_object_get(old, "svc"), now))) {
		json_decref(now);
		if (dirty && obj && !now)
			mark(c, ns, name);	/* no selector: its Endpoints may be ours to delete */
		if (!obj)
			ns_gc(c, ns);
		return;
	}
	if (dirty)
		mark(c, ns, name);
	if (old)
		set_del(by, obj_str(old, "pair") ?: "", name);
	if (!now) {
		json_object_del(svcs, name);
		ns_gc(c, ns);
		return;
	}
	json_object_foreach(json_object_get(json_object_get(now, "spec"), "selector"), key, v) {
		size_t n;

		if (!pair_key(pair, sizeof(pair), key, v))
			continue;
		n = json_object_size(json_object_get(by, pair));
		if (n < best_n) {
			best_n = n;
			snprintf(chosen, sizeof(chosen), "%s", pair);
			best = chosen;
		}
	}
	if (!best) {
		json_decref(now);
		json_object_del(svcs, name);
		return;
	}
	rec = json_pack("{s:o, s:s}", "svc", now, "pair", best);
	if (!rec)
		return;
	set_add(by, best, name);
	json_object_set_new(svcs, name, rec);
}

/* An Endpoints was written (obj) or deleted (obj NULL). */
static void apply_endpoints(struct endpoints_ctl *c, const char *ns, const char *name, const json_t *obj, bool dirty)
{
	json_t *nsx = ns_index(c, ns, obj != NULL), *eps, *old, *now;

	if (!nsx)
		return;
	eps = json_object_get(nsx, "endpoints");
	old = json_object_get(eps, name);
	now = obj ? record_of(obj) : NULL;
	if ((!old && !now) || (old && now && json_equal(old, now))) {
		json_decref(now);	/* our own write coming back: nothing to do */
		return;
	}
	if (dirty)
		mark(c, ns, name);
	if (now) {
		json_object_set_new(eps, name, now);
	} else {
		json_object_del(eps, name);
		ns_gc(c, ns);
	}
}

/* An EndpointSlice was written (obj) or deleted (obj NULL): when it is (or
 * was) one of ours and it is not what the index has (someone else changed
 * it), its Service's slices are checked again. */
static void apply_slice(struct endpoints_ctl *c, const char *ns, const char *name, const json_t *obj, bool dirty)
{
	char svc[256];

	if (slices_ctl_apply(c->slices, ns, name, obj, svc, sizeof(svc)) && dirty && svc[0])
		mark(c, ns, svc);
}

/* The PodPeerSlices are kept while the cluster has a NetworkPolicy
 * (peers_ctl.c, invariant 5): turned on, every pod of the index is handed
 * in. */
static void peers_follow_policies(struct endpoints_ctl *c, bool dirty)
{
	bool want = json_object_size(c->netpols) > 0;
	const char *ns, *name;
	json_t *nsx, *digest;

	if (want == peers_ctl_active(c->peers))
		return;
	peers_ctl_set_active(c->peers, want);
	if (!want)
		return;
	json_object_foreach(c->namespaces, ns, nsx)
		json_object_foreach(json_object_get(nsx, "pods"), name, digest)
			peers_ctl_pod(c->peers, ns, name, NULL, digest, dirty);
}

/* A NetworkPolicy was written (obj) or deleted (obj NULL). */
static void apply_netpol(struct endpoints_ctl *c, const char *ns, const char *name, const json_t *obj, bool dirty)
{
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (obj)
		json_object_set_new(c->netpols, key, json_true());
	else
		json_object_del(c->netpols, key);
	peers_follow_policies(c, dirty);
}

enum watched { W_NONE, W_POD, W_SERVICE, W_ENDPOINTS, W_SLICE, W_PEERS, W_NETPOL };

#define PEERS_PREFIX OBJ_PREFIX "podpeerslices/"

/* "/weft/obj/pods/NS/NAME" → W_POD, ns, name; "/weft/obj/podpeerslices/NAME"
 * → W_PEERS, "", name (cluster-scoped). */
static enum watched parse_key(const char *key, char *ns, size_t nslen, const char **name)
{
	if (!strncmp(key, PEERS_PREFIX, strlen(PEERS_PREFIX))) {
		*name = key + strlen(PEERS_PREFIX);
		ns[0] = 0;
		return **name && !strchr(*name, '/') ? W_PEERS : W_NONE;
	}
	static const struct { const char *prefix; enum watched w; } kinds[] = {
		{ OBJ_PREFIX "pods/", W_POD },
		{ OBJ_PREFIX "services/", W_SERVICE },
		{ OBJ_PREFIX "endpoints/", W_ENDPOINTS },
		{ OBJ_PREFIX "endpointslices/", W_SLICE },
		{ OBJ_PREFIX "networkpolicies/", W_NETPOL },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].prefix);
		const char *rest, *slash;

		if (strncmp(key, kinds[i].prefix, n) != 0)
			continue;
		rest = key + n;
		slash = strchr(rest, '/');
		if (!slash || (size_t)(slash - rest) >= nslen || !slash[1])
			return W_NONE;
		memcpy(ns, rest, (size_t)(slash - rest));
		ns[slash - rest] = 0;
		*name = slash + 1;
		return kinds[i].w;
	}
	return W_NONE;
}

/* key now holds obj, or nothing (NULL). */
static void apply_object(struct endpoints_ctl *c, const char *key, const json_t *obj, bool dirty)
{
	char ns[256];
	const char *name;
	enum watched w = parse_key(key, ns, sizeof(ns), &name);

	if (w == W_POD)
		apply_pod(c, ns, name, obj, dirty);
	else if (w == W_SERVICE)
		apply_service(c, ns, name, obj, dirty);
	else if (w == W_ENDPOINTS)
		apply_endpoints(c, ns, name, obj, dirty);
	else if (w == W_SLICE)
		apply_slice(c, ns, name, obj, dirty);
	else if (w == W_PEERS)
		(void)peers_ctl_apply(c->peers, name, obj, dirty);
	else if (w == W_NETPOL)
		apply_netpol(c, ns, name, obj, dirty);
}

/* key now holds the JSON text value, or nothing (NULL). */
static void apply(struct endpoints_ctl *c, const char *key, const char *value, size_t len, bool dirty)
{
	char ns[256];
	const char *name;
	json_t *obj = NULL;
	enum watched w = parse_key(key, ns, sizeof(ns), &name);

	if (w == W_NONE)
		return;
	if (w == W_NETPOL) {	/* only whether it exists matters */
		apply_netpol(c, ns, name, value ? json_true() : NULL, dirty);
		return;
	}
	if (value) {
		obj = json_loadb(value, len, 0, NULL);
		if (!obj)
			return;
	}
	apply_object(c, key, obj, dirty);
	json_decref(obj);
}

static void clear(struct endpoints_ctl *c)
{
	json_object_clear(c->namespaces);
	json_object_clear(c->pod_ips);
	json_object_clear(c->netpols);
	slices_ctl_clear(c->slices);
	peers_ctl_clear(c->peers);
	peers_ctl_set_active(c->peers, false);
	c->built = false;
	c->cursor = 0;
}

/* The index from a full listing.  The store's revision is read first, so
 * the events replayed after it may repeat what the listing showed (applying
 * an event again is harmless) but miss nothing. */
static int build(struct endpoints_ctl *c)
{
	static const char *const prefixes[] = { OBJ_PREFIX "networkpolicies/", OBJ_PREFIX "pods/",
						OBJ_PREFIX "services/", OBJ_PREFIX "endpoints/",
						OBJ_PREFIX "endpointslices/", PEERS_PREFIX };
	int64_t rev = 0;
	int err;

	clear(c);
	err = store_revision(c->reg->store, &rev);
	if (err)
		return err;
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		struct store_kv_list l = { 0 };

		err = store_range(c->reg->store, prefixes[p], NULL, 0, &l);
		if (err)
			return err;
		for (size_t i = 0; i < l.n; i++)
			apply(c, l.kvs[i].key, l.kvs[i].value, l.kvs[i].value_len, false);
		store_kv_list_free(&l);
	}
	c->cursor = rev;
	c->built = true;
	return 0;
}

/* Every Service with a selector, every Endpoints of ours, every
 * Service without one that has Endpoints (mirrored) and every Service
 * with slices of ours → dirty. */
static void mark_all(struct endpoints_ctl *c)
{
	const char *ns, *name;
	json_t *nsx, *v;

	json_object_foreach(c->namespaces, ns, nsx) {
		json_object_foreach(json_object_get(nsx, "services"), name, v)
			mark(c, ns, name);
		json_object_foreach(json_object_get(nsx, "endpoints"), name, v)
			if (json_is_true(json_object_get(v, "managed")) ||
			    json_object_get(json_object_get(nsx, "plain"), name))
				mark(c, ns, name);
	}
	json_object_foreach((json_t *)slices_ctl_services(c->slices), name, v)
		json_object_set_new(c->dirty, name, json_true());
	peers_ctl_mark_all(c->peers);
}

int endpoints_catch_up(struct endpoints_ctl *c)
{
	bool more = true;
	int err;

	if (!c->built && (err = build(c)))
		return err;
	while (more) {
		struct store_event_list l = { 0 };

		err = store_events(c->reg->store, OBJ_PREFIX, c->cursor, EVENT_PAGE, &l);
		if (err == -ESTORE_COMPACTED) {
			/* history we needed is gone: start over, check everything */
			if ((err = build(c)))
				return err;
			mark_all(c);
			continue;
		}
		if (err)
			return err;
		for (size_t i = 0; i < l.n; i++) {
			const struct store_event *e = &l.events[i];

			if (e->type == STORE_EVENT_DELETE)
				apply(c, e->kv.key, NULL, 0, true);
			else
				apply(c, e->kv.key, e->kv.value, e->kv.value_len, true);
			c->cursor = e->kv.mod_rev;
		}
		if (!l.more && l.revision > c->cursor)
			c->cursor = l.revision;
		more = l.more;
		store_event_list_free(&l);
	}
	return 0;
}

/* ------------------------------------------------------------------ reconcile */

/* The desired record of a Service (rec from the index), and its subsets.
 *
 * Whose addresses these are: the candidates are the pods of the Service's
 * own namespace (nsx, the index of one namespace), and
 * model_endpoints_subsets drops any pod of another namespace again.  A
 * pod's status.podIP is its own (admit_pod.c, for every writer: an address
 * of its node's subnet, held by no other pod), so a namespace cannot lend
 * its Service another tenant's pod by claiming that pod's address.  That is
 * why the Endpoints written here skip endpoints_admit (endpoints_writing):
 * the only addresses they carry are the Service's namespace's pods'.  (A
 * store from before that check may still hold two pods with one address;
 * the controller names them at start and --fsck does: see podip_index.c.) */
static size_t addresses_in(const json_t *subsets)
{
	const json_t *ss;
	size_t i, n = 0;

	json_array_foreach(subsets, i, ss)
		n += json_array_size(json_object_get(ss, "addresses")) +
		     json_array_size(json_object_get(ss, "notReadyAddresses"));
	return n;
}

/* ... *all_out: the same subsets untruncated, for the Service's slices
 * (a slice set is not cut at ENDPOINTS_MAX_ADDRESSES). */
static json_t *desired(json_t *nsx, const json_t *rec, json_t **subsets_out, json_t **all_out)
{
	const json_t *svc = json_object_get(rec, "svc");
	json_t *by = json_object_get(nsx, "podsByLabel"), *pods = json_object_get(nsx, "pods");
	const json_t *best = NULL, *set, *v;
	size_t best_n = (size_t)-1, n = 0;
	const json_t **cand = NULL;
	const char *key, *name;
	json_t *subsets, *all, *out;
	char pair[PAIR_MAX];
	bool truncated = false;

	json_object_foreach(json_object_get(json_object_get(svc, "spec"), "selector"), key, v) {
		size_t k;

		if (!pair_key(pair, sizeof(pair), key, v))
			continue;
		set = json_object_get(by, pair);
		k = json_object_size(set);
		if (k < best_n) {
			best_n = k;
			best = set;
		}
	}
	if (best && best_n) {
		cand = malloc(best_n * sizeof(*cand));
		if (!cand)
			return NULL;
		json_object_foreach((json_t *)best, name, v) {
			const json_t *pod = json_object_get(pods, name);
			if (pod && n < best_n)
				cand[n++] = pod;
		}
	}
	all = model_endpoints_subsets(svc, (const json_t *const *)cand, n, (size_t)-1, NULL);
	if (all && addresses_in(all) > ENDPOINTS_MAX_ADDRESSES)
		subsets = model_endpoints_subsets(svc, (const json_t *const *)cand, n, ENDPOINTS_MAX_ADDRESSES,
						  &truncated);
	else
		subsets = json_incref(all);
	free(cand);
	out = subsets ? endpoints_record(true, truncated, subsets) : NULL;
	if (!out) {
		json_decref(subsets);
		json_decref(all);
		return NULL;
	}
	*subsets_out = subsets;
	*all_out = all;
	return out;
}

static json_t *endpoints_object(const char *ns, const char *name, const json_t *rec)
{
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "Endpoints",
				"metadata", "name", name, "namespace", ns, "labels", ENDPOINTS_MANAGED_LABEL,
				ENDPOINTS_MANAGER);

	if (!obj)
		return NULL;
	if (json_is_true(json_object_get(rec, "truncated")))
		json_object_set_new(json_object_get(obj, "metadata"), "annotations",
				    json_pack("{s:s}", ENDPOINTS_OVER_CAPACITY, "truncated"));
	if (json_object_get(rec, "subsets"))
		json_object_set(obj, "subsets", json_object_get(rec, "subsets"));
	return obj;
}

/* The Endpoints of ns/name.  *all: the Service's endpoints (untruncated
 * subsets) when it has a selector, else NULL.  0 done (or nothing to do),
 * -1 failed: retry later; -2 nothing could be computed (*all NULL
 * although the Service has a selector: its slices are left alone). */
static int reconcile_endpoints(struct endpoints_ctl *c, const char *ns, const char *name, json_t **all)
{
	struct registry *r = c->reg;
	json_t *nsx = ns_index(c, ns, false);
	json_t *svc = nsx ? json_object_get(json_object_get(nsx, "services"), name) : NULL;
	json_t *stored = nsx ? json_object_get(json_object_get(nsx, "endpoints"), name) : NULL;
	json_t *want = NULL, *subsets = NULL, *obj = NULL, *out = NULL;
	struct status st = { 0 };
	int rc = 0, err;

	*all = NULL;
	if (svc) {
		want = desired(nsx, svc, &subsets, all);
		if (!want)
			return -2;
		r->metrics->endpoints_recomputes++;
		if (stored && json_equal(stored, want))
			goto out;
		obj = endpoints_object(ns, name, want);
		if (!obj) {
			rc = -1;
			goto out;
		}
		c->writing = true;
		err = registry_replace(r, kind_get(KIND_ENDPOINTS), ns, name, obj, &out, &st);
		c->writing = false;
		if (err) {
			/* a namespace being deleted takes the Service along: done */
			if (st.code != 404) {
				r->metrics->endpoints_failures++;
				rc = -1;
			}
			goto out;
		}
		r->metrics->endpoints_writes++;
		nsx = ns_index(c, ns, true);	/* (re-read: the write may have run catch-up) */
		if (nsx)
			json_object_set(json_object_get(nsx, "endpoints"), name, want);
	} else if (stored && json_is_true(json_object_get(stored, "managed"))) {
		c->writing = true;
		err = registry_delete(r, kind_get(KIND_ENDPOINTS), ns, name, &out, &st);
		c->writing = false;
		if (err && st.code != 404) {
			r->metrics->endpoints_failures++;
			rc = -1;
			goto out;
		}
		if (!err)
			r->metrics->endpoints_deletes++;
		json_object_del(json_object_get(nsx, "endpoints"), name);
		ns_gc(c, ns);
	}
out:
	json_decref(want);
	json_decref(subsets);
	json_decref(obj);
	json_decref(out);
	return rc;
}

/* What the mirroring controller mirrors for ns/name: the subsets of its
 * hand-written Endpoints when the Service exists without a selector and
 * the Endpoints are not the endpoints controller's nor labelled
 * skip-mirror; else NULL.  A new reference. */
static json_t *mirrored(struct endpoints_ctl *c, const char *ns, const char *name)
{
	json_t *nsx = ns_index(c, ns, false);
	const json_t *ep = json_object_get(json_object_get(nsx, "endpoints"), name);

	if (!ep || !json_object_get(json_object_get(nsx, "plain"), name) ||
	    json_is_true(json_object_get(ep, "managed")) || json_is_true(json_object_get(ep, "skipMirror")))
		return NULL;
	return json_incref(json_object_get(ep, "subsets")) ?: json_array();
}

/* The Endpoints of ns/name, then its slices.  0 done, -1 retry later. */
static int reconcile_one(struct endpoints_ctl *c, const char *ns, const char *name)
{
	json_t *all = NULL, *mirror;
	int rc = reconcile_endpoints(c, ns, name, &all);

	if (rc == -2)
		return -1;
	mirror = mirrored(c, ns, name);
	c->writing = true;
	if (slices_ctl_reconcile(c->slices, ns, name, all, mirror))
		rc = -1;
	c->writing = false;
	json_decref(all);
	json_decref(mirror);
	return rc;
}

static void reconcile(struct endpoints_ctl *c)
{
	json_t *retry = json_object();

	for (int round = 0; round < RECONCILE_ROUNDS && json_object_size(c->dirty); round++) {
		json_t *todo = c->dirty, *v;
		const char *key;

		c->dirty = json_object();
		json_object_foreach(todo, key, v) {
			const char *slash = strchr(key, '/');
			char ns[256];

			if (!slash || (size_t)(slash - key) >= sizeof(ns))
				continue;
			memcpy(ns, key, (size_t)(slash - key));
			ns[slash - key] = 0;
			if (reconcile_one(c, ns, slash + 1))
				json_object_set_new(retry, key, json_true());
		}
		json_decref(todo);
		/* our writes come back as events equal to the index: usually
		 * nothing new; what others changed meanwhile is taken now */
		if (endpoints_catch_up(c))
			break;
	}
	json_object_update(c->dirty, retry);
	json_decref(retry);
	/* the nodes whose gather is over (peers_ctl.c): fenced as ours */
	c->writing = true;
	(void)peers_ctl_reconcile(c->peers);
	c->writing = false;
}

/* ------------------------------------------------------------------ interface */

struct endpoints_ctl *endpoints_ctl_new(struct registry *r)
{
	struct endpoints_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->reg = r;
	c->enabled = true;
	c->namespaces = json_object();
	c->pod_ips = json_object();
	c->dirty = json_object();
	c->netpols = json_object();
	c->slices = slices_ctl_new(r);
	c->peers = peers_ctl_new(r);
	if (!c->namespaces || !c->pod_ips || !c->dirty || !c->netpols || !c->slices || !c->peers) {
		endpoints_ctl_free(c);
		return NULL;
	}
	return c;
}

void endpoints_ctl_free(struct endpoints_ctl *c)
{
	if (!c)
		return;
	json_decref(c->namespaces);
	json_decref(c->pod_ips);
	json_decref(c->dirty);
	json_decref(c->netpols);
	slices_ctl_free(c->slices);
	peers_ctl_free(c->peers);
	free(c);
}

void endpoints_ctl_enable(struct endpoints_ctl *c, bool on) { c->enabled = on; }
int endpoints_ctl_set_slice_capacity(struct endpoints_ctl *c, size_t max)
{
	return slices_ctl_set_capacity(c->slices, max);
}
bool endpoints_writing(const struct endpoints_ctl *c) { return c->writing; }
struct peers_ctl *endpoints_ctl_peers(struct endpoints_ctl *c) { return c->peers; }

int64_t endpoints_ctl_due_ms(const struct endpoints_ctl *c)
{
	return c && c->enabled ? peers_ctl_due_ms(c->peers) : -1;
}

void endpoints_ctl_set_wake(struct endpoints_ctl *c, void (*wake)(void *arg, int64_t in_ms), void *arg)
{
	peers_ctl_set_wake(c->peers, wake, arg);
}

int endpoints_sync(struct endpoints_ctl *c)
{
	int err;

	/* disabled, nothing is written from the index: it is brought up to
	 * date when admission needs it (endpoints_catch_up), or rebuilt when
	 * this controller comes to lead (endpoints_resync), not at every
	 * event of every pod */
	if (!c || c->syncing || !c->enabled)
		return 0;
	c->syncing = true;
	err = endpoints_catch_up(c);
	if (!err && c->enabled)
		reconcile(c);
	c->syncing = false;
	return err;
}

int endpoints_written(struct endpoints_ctl *c, const char *key, const json_t *obj, int64_t rev)
{
	if (!c || c->syncing || !c->enabled)
		return 0;	/* as endpoints_sync */
	if (!c->built || rev != c->cursor + 1) {
		/* events before it to read first.  A store that wakes the
		 * loop when events come (etcd: store_notify_fd) has them read
		 * there, at its next turn (api_run), as another controller's
		 * writes are: a write does not wait for its event to come
		 * back through the store's watch.  Without one (SQLite: the
		 * one writer), now. */
		return store_notify_fd(c->reg->store) >= 0 ? 0 : endpoints_sync(c);
	}
	/* the index is at rev - 1 and rev is this one change: take it as it is */
	c->syncing = true;
	apply_object(c, key, obj, true);
	c->cursor = rev;
	if (c->enabled)
		reconcile(c);
	c->syncing = false;
	return 0;
}

int endpoints_resync(struct endpoints_ctl *c)
{
	int err;

	if (c->syncing)
		return -EBUSY;
	err = build(c);
	if (err)
		return err;
	mark_all(c);
	return endpoints_sync(c);
}

const json_t *endpoints_pods_with_ip(struct endpoints_ctl *c, const char *ip)
{
	return json_object_get(c->pod_ips, ip);
}

size_t endpoints_services(const struct endpoints_ctl *c)
{
	const char *ns;
	json_t *nsx;
	size_t n = 0;

	json_object_foreach(c->namespaces, ns, nsx)
		n += json_object_size(json_object_get(nsx, "services"));
	return n;
}
