/*
 * registry.c — validated, allocated, atomic reads and writes of objects.
 *
 * Every write is planned from a fresh read and committed as one store
 * transaction guarded by compare-and-swap (see controller.h).  The state
 * machine of one write:
 *
 *     plan ──commit──► done
 *      ▲        │
 *      └─EAGAIN─┘   (someone else wrote first: reload, plan again;
 *                    after REGISTRY_RETRIES, 409 Conflict)
 *
 * Invariants
 *  1. Nothing is written unless the object validated and every admission
 *     hook succeeded; a failed write changes nothing.
 *  2. An object's key exists iff the object does; allocation keys exist iff
 *     the object holding the allocation does (checked by registry_fsck).
 *  3. After every commit the endpoints controller catches up
 *     (after_commit), so the Endpoints a pod or Service write changes are
 *     stored before the write returns — when nobody else wrote in
 *     between, or the store has no notify (SQLite).  On etcd, where other
 *     writers' events come through the watch, a write that others
 *     preceded leaves the Endpoints to the loop's next turn (milliseconds
 *     later), as those writers' own changes are: Kubernetes' Endpoints
 *     controller follows as asynchronously.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define CONFIG_KEY OBJ_PREFIX "clusternetworks/default"

void status_set(struct status *st, int code, const char *reason, const char *fmt, ...)
{
	va_list ap;

	st->code = code;
	st->reason = reason;
	st->retry_after = 0;
	va_start(ap, fmt);
	vsnprintf(st->message, sizeof(st->message), fmt, ap);
	va_end(ap);
}

static int store_failed(struct status *st, int err)
{
	switch (err) {
	case -E2BIG:	/* etcd: 1.5 MiB and 128 operations per write */
		status_set(st, 413, "RequestEntityTooLarge",
			   "store: the write is larger than the store takes in one transaction");
		break;
	case -EAGAIN:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		status_set(st, 503, "ServiceUnavailable", "store: unavailable (%s); nothing was written",
			   strerror(-err));
		st->retry_after = 1;
		break;
	case -ETIMEDOUT:
		status_set(st, 504, "Timeout", "store: no answer in time; the write may or may not have been applied");
		break;
	default:
		status_set(st, 500, "InternalError", "store: %s", strerror(err < 0 ? -err : err));
	}
	return -1;
}

int obj_key(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len)
{
	int n;

	if (k->namespaced)
		n = snprintf(buf, len, OBJ_PREFIX "%s/%s/%s", k->plural, ns ? ns : "", name ? name : "");
	else
		n = snprintf(buf, len, OBJ_PREFIX "%s/%s", k->plural, name ? name : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void collection_prefix(const struct kind_info *k, const char *ns, char *buf, size_t len)
{
	if (k->namespaced && ns && *ns)
		snprintf(buf, len, OBJ_PREFIX "%s/%s/", k->plural, ns);
	else
		snprintf(buf, len, OBJ_PREFIX "%s/", k->plural);
}

json_t *obj_from_kv(const struct store_kv *kv)
{
	json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
	json_t *meta;
	char rv[24];

	if (!obj)
		return NULL;
	meta = json_object_get(obj, "metadata");
	if (json_is_object(meta)) {
		snprintf(rv, sizeof(rv), "%" PRId64, kv->mod_rev);
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	}
	return obj;
}

/* Read one key as an object: 0, -ENOENT, or another -errno. */
static int load(struct registry *r, const char *key, json_t **obj, int64_t *mod_rev)
{
	struct store_kv kv = { 0 };
	int err = store_get(r->store, key, &kv, NULL);

	if (err)
		return err;
	*obj = obj_from_kv(&kv);
	if (mod_rev)
		*mod_rev = kv.mod_rev;
	store_kv_free(&kv);
	return *obj ? 0 : -EIO;
}

static void now_rfc3339(char buf[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static uint64_t next_random(struct registry *r)
{
	/* xorshift64*, seeded from getrandom in registry_init */
	uint64_t x = r->rand_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->rand_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t registry_random(struct registry *r) { return next_random(r); }

static void set_identity(struct registry *r, json_t *obj, const json_t *old)
{
	json_t *meta = json_object_get(obj, "metadata");
	const json_t *old_meta = old ? json_object_get(old, "metadata") : NULL;
	json_t *v;
	char buf[40];

	json_object_del(meta, "resourceVersion");
	if (old_meta && (v = json_object_get(old_meta, "uid"))) {
		json_object_set(meta, "uid", v);
	} else {
		uint64_t a = next_random(r), b = next_random(r);
		snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012" PRIx64,
			 (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
			 (unsigned)((b >> 48) & 0x3fff) | 0x8000, (uint64_t)(b & 0xffffffffffffULL));
		json_object_set_new(meta, "uid", json_string(buf));
	}
	if (old_meta && (v = json_object_get(old_meta, "creationTimestamp"))) {
		json_object_set(meta, "creationTimestamp", v);
	} else {
		now_rfc3339(buf);
		json_object_set_new(meta, "creationTimestamp", json_string(buf));
	}
}

/* The body against the path, before anything else looks at it (request.c):
 * 400 when they disagree, 413 over a limit. */
static int check_request(const struct kind_info *k, const char *ns, const char *name, json_t *obj,
			 struct status *st)
{
	char err[sizeof(st->message)];
	int rc = model_request_check(k, ns, name, obj, err, sizeof(err));

	if (rc == -EBADMSG)
		status_set(st, 400, "BadRequest", "%s", err);
	else if (rc == -E2BIG)
		status_set(st, 413, "RequestEntityTooLarge", "%s", err);
	else if (rc)
		status_set(st, 500, "InternalError", "%s", strerror(-rc));
	return rc ? -1 : 0;
}

static int validate(json_t *obj, struct status *st)
{
	char err[sizeof(st->message)];

	if (model_validate(obj, err, sizeof(err))) {
		size_t n = strlen(err);
		while (n && err[n - 1] == '\n')
			err[--n] = 0;
		status_set(st, 422, "Invalid", "%s", err);
		return -1;
	}
	model_default(obj);
	return 0;
}

int registry_prepare(const struct kind_info *k, const char *ns, const char *name, json_t *obj,
		     struct status *st)
{
	if (check_request(k, ns, name, obj, st) || validate(obj, st))
		return -1;
	return 0;
}

static void ensure_namespace_label(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *labels = json_object_get(meta, "labels");

	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(meta, "labels", labels);
	}
	json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(obj_name(obj)));
}

int registry_reload_config(struct registry *r)
{
	json_t *obj = NULL;
	int64_t rev = 0;
	char err[256];
	int e = load(r, CONFIG_KEY, &obj, &rev);

	if (e)
		return e;
	e = cluster_config_from_json(obj, &r->config, err, sizeof(err));
	json_decref(obj);
	if (e)
		return e;
	r->config_rev = rev;
	return 0;
}

/* A replace whose body has no status (absent or null) keeps the stored one:
 * `weftctl apply -f pod.yaml` must not wipe the status.podIP an agent
 * wrote, nor a Service apply its status.loadBalancer.  This is the rule of
 * the controller's own writers (registry_replace: the allocators, the
 * endpoints controller) and of the kinds without a status subresource;
 * the API's writes of pods, services, ingresses and routes go by
 * main_status below. */
static void keep_status(json_t *work, const json_t *old)
{
	json_t *had = old ? json_object_get(old, "status") : NULL;
	json_t *now = json_object_get(work, "status");

	if (now && !json_is_null(now))
		return;
	if (had && !json_is_null(had))
		json_object_set_new(work, "status", json_deep_copy(had));	/* hooks may change it */
	else if (now)
		json_object_del(work, "status");
}

/* A write of the main resource of a kind with a status subresource
 * (REGISTRY_MAIN), as kube-apiserver: the body's status is ignored.  A
 * replace keeps the stored status; a create of a Service, Ingress or
 * Route starts without one (upstream's PrepareForCreate; a Service's
 * status.loadBalancer is then the VIP allocator's, alloc_vip.c).  A Pod's
 * create keeps the status it is sent, where upstream resets it: weft's
 * agent creates a pod's record whole — nodeName, container ID and
 * status.podIP in one transaction, admitted against the node's subnet
 * (admit_pod.c) — so that no one sees a pod on a node without its
 * address.  Every later change of a status goes through NAME/status. */
static void main_status(const struct kind_info *k, json_t *work, const json_t *old)
{
	json_t *had = old ? json_object_get(old, "status") : NULL;

	if (!old && k->id == KIND_POD)
		return;
	if (had && !json_is_null(had))
		json_object_set_new(work, "status", json_deep_copy(had));
	else
		json_object_del(work, "status");
}

/* work (about to be stored) equals old (as read, with its resourceVersion) */
static bool same_as_stored(const json_t *work, const json_t *old)
{
	json_t *o = json_deep_copy(old);
	bool same;

	json_object_del(json_object_get(o, "metadata"), "resourceVersion");
	same = json_equal(work, o);
	json_decref(o);
	return same;
}

/* body differs from old (as read) in metadata.annotations at most */
static bool same_but_annotations(const json_t *body, const json_t *old)
{
	json_t *w = json_deep_copy(body), *o = json_deep_copy(old);
	bool same;

	json_object_del(json_object_get(w, "metadata"), "annotations");
	json_object_del(json_object_get(w, "metadata"), "resourceVersion");
	json_object_del(json_object_get(o, "metadata"), "annotations");
	json_object_del(json_object_get(o, "metadata"), "resourceVersion");
	same = w && o && json_equal(w, o);
	json_decref(w);
	json_decref(o);
	return same;
}

/* Commit b; a write of the Endpoints controller (when leader-elected)
 * carries its fence, and one the fence refused is -ESTALE: another
 * controller leads now, so trying again would not help.  A
 * REGISTRY_YIELD write lets go of the caller's lock while etcd has it
 * (controller.h); nothing of r is read in between. */
static int commit(struct registry *r, struct txnb *b, unsigned flags, int64_t *rev)
{
	bool fenced = r->fence_key && endpoints_writing(r->endpoints);
	bool yield = (flags & REGISTRY_YIELD) && r->lock && store_concurrent(r->store) &&
		     !endpoints_writing(r->endpoints);
	int err;

	if (fenced)
		txnb_unchanged(b, r->fence_key, r->fence_rev);
	if (yield)
		r->lock(r->lock_arg, false);
	err = txnb_commit(b, r->store, rev);
	if (yield)
		r->lock(r->lock_arg, true);
	if (err == -EAGAIN && fenced) {
		struct store_kv kv;
		int64_t at;
		int e = store_get(r->store, r->fence_key, &kv, &at);

		if (e == -ENOENT || (e == 0 && kv.mod_rev != r->fence_rev))
			err = -ESTALE;
		store_kv_free(&kv);
	}
	if (err == 0 && *rev > r->last_write_rev)
		r->last_write_rev = *rev;
	return err;
}

void registry_set_lock(struct registry *r, void (*lock)(void *arg, bool take), void *arg)
{
	r->lock = lock;
	r->lock_arg = arg;
}

static int fenced_out(struct registry *r, struct status *st, const char *what)
{
	status_set(st, 409, "Conflict", "%s: not written: this controller no longer holds %s", what, r->fence_key);
	return -1;
}

static int retry_exhausted(struct status *st, const char *what)
{
	status_set(st, 409, "Conflict",
		   "%s: the object kept changing under this write; try again", what);
	return -1;
}

static int run_hooks_admit(struct registry *r, const struct kind_info *k, struct txnb *b,
			   const json_t *old, json_t *obj, struct status *st)
{
	switch (k->id) {
	case KIND_NODE:
		return node_admit(r, b, old, obj, st);
	case KIND_NAMESPACE:
		ensure_namespace_label(obj);
		return old ? 0 : namespace_admit(r, b, obj, st);
	case KIND_SERVICE:
		return service_admit(r, b, old, obj, st);
	case KIND_CLUSTERNETWORK:
		return config_admit(r, b, old, obj, st);
	case KIND_ENDPOINTS:
		return endpoints_admit(r, b, obj, st);
	case KIND_ENDPOINTSLICE:
		return endpointslice_admit(r, b, obj, st);
	case KIND_POD:
		return pod_admit(r, b, old, obj, st);
	default:
		return 0;
	}
}

/* Whether a write of obj has a hook with something to check (a pod
 * without an address has nothing: its creates stay optimistic). */
static bool has_admission(const struct kind_info *k, const json_t *obj)
{
	if (k->id == KIND_POD)
		return pod_address(obj) != NULL;
	return k->id == KIND_NODE || k->id == KIND_NAMESPACE || k->id == KIND_SERVICE ||
	       k->id == KIND_CLUSTERNETWORK || k->id == KIND_ENDPOINTS || k->id == KIND_ENDPOINTSLICE;
}

static int namespace_exists(struct registry *r, const char *ns, int64_t *mod_rev, struct status *st)
{
	char key[512];
	struct store_kv kv = { 0 };
	int err;

	obj_key(kind_get(KIND_NAMESPACE), NULL, ns, key, sizeof(key));
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT) {
		status_set(st, 404, "NotFound", "namespaces \"%s\" not found", ns);
		return -1;
	}
	if (err)
		return store_failed(st, err);
	*mod_rev = kv.mod_rev;
	store_kv_free(&kv);
	return 0;
}

/* What follows every commit: the controllers inside the controller catch
 * up (endpoints_ctl.c: a pod or Service write updates Endpoints before the
 * caller answers).  Their failures are theirs: counted, retried.  A
 * commit at rev that changed only key (now obj, or deleted: NULL) is
 * handed over as it is; key NULL: read the events. */
static void after_commit(struct registry *r, const char *key, const json_t *obj, int64_t rev)
{
	if (!r->endpoints)
		return;
	if (key)
		(void)endpoints_written(r->endpoints, key, obj, rev);
	else
		(void)endpoints_sync(r->endpoints);
}

/* The text work is stored as (model_encode_checked: within the limits and
 * known to read back), put under key in b.  0, or -1 with st set. */
static int put_checked(struct txnb *b, const char *key, const json_t *work, struct status *st)
{
	char msg[sizeof(st->message)], *text = NULL;
	size_t len = 0;
	int rc = model_encode_checked(work, &text, &len, msg, sizeof(msg));

	if (rc == -E2BIG) {
		status_set(st, 413, "RequestEntityTooLarge", "%s", msg);
		return -1;
	}
	if (rc) {
		status_set(st, 500, "InternalError", "%s; nothing was stored", msg);
		return -1;
	}
	txnb_put(b, key, text);
	free(text);
	return 0;
}

/* PodPeerSlices are derived from Pods as a whole: no client writes any
 * part of one (create, replace, patch, delete), the admin included; the
 * controller's own writes say so (REGISTRY_OWNER). */
static const char derived_refusal[] =
	"podpeerslices are derived from Pods by the controller and cannot be written through the API";

int registry_check_write(const struct kind_info *k, const char *ns, const char *name, json_t *obj,
			 bool create_only, struct status *st)
{
	char key[1024];

	/* the body against the path first: nothing below reads a body of
	 * another kind, another object or over the limits */
	if (check_request(k, ns, name, obj, st))
		return -1;
	/* a HostSubnet's annotations are anyone's (its node's agent may keep
	 * notes there); the rest of it, and NetNamespaces, the controller's */
	/* ... and a VirtualService's status, its service engines' (a replace
	 * of anything else of it is refused below) */
	if (k->id == KIND_PODPEERSLICE) {
		status_set(st, 405, "MethodNotAllowed", "%s", derived_refusal);
		return -1;
	}
	if (k->controller_owned && !((k->id == KIND_HOSTSUBNET || k->id == KIND_VIRTUALSERVICE) && !create_only)) {
		status_set(st, 405, "MethodNotAllowed",
			   "%s objects are written by the controller (a %s creates them)", k->kind,
			   k->id == KIND_HOSTSUBNET ? "Node registration"
			   : k->id == KIND_NETNAMESPACE ? "Namespace" : "Service, Ingress or Route");
		return -1;
	}
	if (create_only && k->id == KIND_CLUSTERNETWORK) {
		status_set(st, 409, "AlreadyExists",
			   "clusternetworks \"default\" already exists: change it with a replace (apply)");
		return -1;
	}
	if (validate(obj, st))
		return -1;
	name = obj_name(obj);
	if (k->id == KIND_CLUSTERNETWORK && strcmp(name, "default") != 0) {
		status_set(st, 422, "Invalid", "metadata.name: the ClusterNetwork must be named 'default'");
		return -1;
	}
	if (obj_key(k, ns, name, key, sizeof(key))) {
		status_set(st, 422, "Invalid", "metadata.name: too long");
		return -1;
	}
	return 0;
}

/* A status write's object: old with body's status (and, for a Pod, its
 * labels and annotations); a new reference, or NULL out of memory. */
static json_t *status_update(const struct kind_info *k, const json_t *old, const json_t *body)
{
	json_t *work = json_deep_copy(old), *status = json_object_get(body, "status");
	json_t *md = json_object_get(work, "metadata"), *bmd = json_object_get(body, "metadata");

	if (!work)
		return NULL;
	if (status && !json_is_null(status))
		json_object_set_new(work, "status", json_deep_copy(status));
	else
		json_object_del(work, "status");
	if (k->id == KIND_POD && json_is_object(md)) {
		static const char *const kept[] = { "labels", "annotations" };

		for (size_t i = 0; i < 2; i++) {
			json_t *v = json_object_get(bmd, kept[i]);

			if (v)
				json_object_set_new(md, kept[i], json_deep_copy(v));
			else
				json_object_del(md, kept[i]);
		}
	}
	return work;
}

/* The answer of a dry run: work as it would be stored, at the revision it
 * has now (a create: none). */
static void dry_run_revision(json_t *work, int64_t old_rev)
{
	json_t *md = json_object_get(work, "metadata");
	char rv[24];

	if (!old_rev) {
		json_object_del(md, "resourceVersion");
		return;
	}
	snprintf(rv, sizeof(rv), "%" PRId64, old_rev);
	json_object_set_new(md, "resourceVersion", json_string(rv));
}

int registry_write_checked(struct registry *r, const struct kind_info *k, const char *ns, json_t *obj,
			   unsigned flags, json_t **out, struct status *st)
{
	bool create_only = flags & REGISTRY_CREATE, dry_run = flags & REGISTRY_DRY_RUN,
	     status_only = flags & REGISTRY_STATUS, main_only = (flags & REGISTRY_MAIN) && k->status_subresource,
	     owner = flags & REGISTRY_OWNER;
	const char *name = obj_name(obj);
	char key[1024];
	const char *user_rv;
	int64_t want_rv = 0;
	bool has_rv;
	int err;

	if (obj_key(k, ns, name, key, sizeof(key))) {	/* registry_check_write refused these */
		status_set(st, 422, "Invalid", "metadata.name: too long");
		return -1;
	}
	/* check_request refused anything but digits */
	user_rv = obj_str(obj, "metadata.resourceVersion");
	has_rv = user_rv && *user_rv && model_revision_parse(user_rv, &want_rv) == 0;

	for (int attempt = 0; attempt < REGISTRY_RETRIES; attempt++) {
		json_t *old = NULL, *work = NULL;
		int64_t old_rev = 0, ns_rev = 0, rev = 0;
		struct txnb b;
		bool single;
		/* A create that no admission hook has anything to check in
		 * (has_admission) first tries without reading: the
		 * transaction's compares (name free, namespace present) decide,
		 * and only a failed attempt reads to find out why.  The others
		 * read first, so that a taken name is reported before what a
		 * hook would find. */
		bool optimistic = create_only && attempt == 0 && !has_admission(k, obj) && !dry_run;

		err = optimistic ? -ENOENT : load(r, key, &old, &old_rev);
		if (err && err != -ENOENT)
			return store_failed(st, err);
		if (old && create_only) {
			json_decref(old);
			status_set(st, 409, "AlreadyExists", "%s \"%s\" already exists", k->plural, name);
			return -1;
		}
		if (!old && k->id == KIND_CLUSTERNETWORK) {
			status_set(st, 404, "NotFound", "clusternetworks \"%s\" not found", name);
			return -1;
		}
		if (old && has_rv && want_rv != old_rev) {
			status_set(st, 409, "Conflict",
				   "%s \"%s\": the object has been modified (resourceVersion %" PRId64 ", stored %" PRId64
				   "); read it again and apply your changes to the latest version",
				   k->plural, name, want_rv, old_rev);
			json_decref(old);
			return -1;
		}
		if (!old && (has_rv || status_only)) {
			status_set(st, 404, "NotFound", "%s \"%s\" not found", k->plural, name);
			return -1;
		}
		if (k->namespaced && !optimistic && namespace_exists(r, ns, &ns_rev, st)) {
			json_decref(old);
			return -1;
		}

		if (k->controller_owned && !old && !owner) {
			status_set(st, 405, "MethodNotAllowed",
				   "%s objects are written by the controller (a Node registration creates them)",
				   k->kind);
			return -1;
		}
		/* the optimistic create takes the body itself, not a copy: a
		 * retry after it redoes what it changed (identity, status) the
		 * same way, as a create, from a body that lacked them */
		work = optimistic ? json_incref(obj) : status_only ? status_update(k, old, obj) : json_deep_copy(obj);
		if (!work) {
			json_decref(old);
			return store_failed(st, -ENOMEM);
		}
		set_identity(r, work, old);
		if (main_only && !status_only)
			main_status(k, work, old);
		else if (!status_only)
			keep_status(work, old);
		/* the body, not work: HostSubnets are made without uid or
		 * creationTimestamp, which set_identity adds */
		if (k->controller_owned && !owner && !(status_only && k->status_subresource) &&
		    !same_but_annotations(obj, old)) {
			status_set(st, 405, "MethodNotAllowed",
				   "%s \"%s\": written by the controller; only metadata.annotations may change",
				   k->plural, name);
			json_decref(old);
			json_decref(work);
			return -1;
		}

		txnb_init(&b);
		if (old)
			txnb_unchanged(&b, key, old_rev);
		else
			txnb_absent(&b, key);
		if (k->namespaced) {
			char nskey[512];
			obj_key(kind_get(KIND_NAMESPACE), NULL, ns, nskey, sizeof(nskey));
			txnb_cmp(&b, nskey, STORE_CMP_CREATE_REV, STORE_CMP_GT, 0);
		}
		if (run_hooks_admit(r, k, &b, old, work, st)) {
			txnb_free(&b);
			json_decref(old);
			json_decref(work);
			return -1;
		}
		if (old && same_as_stored(work, old)) {
			/* a replace that changes nothing writes nothing: the
			 * revision stays, watchers see no event (as Kubernetes) */
			txnb_free(&b);
			json_decref(work);
			*out = old;
			return 0;
		}
		if (put_checked(&b, key, work, st)) {
			txnb_free(&b);
			json_decref(old);
			json_decref(work);
			return -1;
		}
		if (dry_run) {
			/* everything was planned into b; without its commit
			 * nothing of it happens (allocations included) */
			txnb_free(&b);
			json_decref(old);
			dry_run_revision(work, old_rev);
			*out = work;
			return 0;
		}
		/* no admission hook wrote another object besides (an
		 * allocation key, as a pod's address, is none of the
		 * endpoints controller's business) */
		single = txnb_object_ops(&b) == 1;
		err = commit(r, &b, flags, &rev);
		txnb_free(&b);
		json_decref(old);
		if (err == 0) {
			char rv[24];
			snprintf(rv, sizeof(rv), "%" PRId64, rev);
			json_object_set_new(json_object_get(work, "metadata"), "resourceVersion", json_string(rv));
			if (k->id == KIND_CLUSTERNETWORK && registry_reload_config(r)) {
				json_decref(work);
				return store_failed(st, -EIO);
			}
			after_commit(r, single ? key : NULL, work, rev);
			*out = work;
			return 0;
		}
		json_decref(work);
		if (err == -ESTALE)
			return fenced_out(r, st, name);
		if (err != -EAGAIN)
			return store_failed(st, err);
		err = registry_reload_config(r);
		if (err)
			return store_failed(st, err);
	}
	return retry_exhausted(st, name);
}

int registry_create(struct registry *r, const struct kind_info *k, const char *ns, json_t *obj,
		    json_t **out, struct status *st)
{
	if (registry_check_write(k, ns, NULL, obj, true, st))
		return -1;
	return registry_write_checked(r, k, ns, obj, REGISTRY_CREATE, out, st);
}

int registry_replace(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		     json_t *obj, json_t **out, struct status *st)
{
	if (registry_check_write(k, ns, name, obj, false, st))
		return -1;
	return registry_write_checked(r, k, ns, obj, 0, out, st);
}

int registry_get(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		 json_t **out, struct status *st)
{
	char key[1024];
	int err;

	if (obj_key(k, ns, name, key, sizeof(key))) {
		status_set(st, 404, "NotFound", "%s \"%s\" not found", k->plural, name);
		return -1;
	}
	err = load(r, key, out, NULL);
	if (err == -ENOENT) {
		status_set(st, 404, "NotFound", "%s \"%s\" not found", k->plural, name);
		return -1;
	}
	return err ? store_failed(st, err) : 0;
}

int registry_revision(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		      int64_t *rev, struct status *st)
{
	struct store_kv kv = { 0 };
	char key[1024];
	int err;

	*rev = 0;
	if (obj_key(k, ns, name, key, sizeof(key)))
		return 0;	/* no such key can exist */
	err = store_get(r->store, key, &kv, NULL);
	if (err == -ENOENT)
		return 0;
	if (err)
		return store_failed(st, err);
	*rev = kv.mod_rev;
	store_kv_free(&kv);
	return 0;
}

int registry_list_snapshot(const struct kind_info *k, const char *ns, struct store *s,
			   struct store_kv_list *out, struct status *st)
{
	char prefix[512];
	int err;

	collection_prefix(k, ns, prefix, sizeof(prefix));
	err = store_range(s, prefix, NULL, 0, out);
	return err ? store_failed(st, err) : 0;
}

int registry_list(struct registry *r, const struct kind_info *k, const char *ns, json_t **items,
		  int64_t *rev, struct status *st)
{
	struct store_kv_list l = { 0 };

	if (registry_list_snapshot(k, ns, r->store, &l, st))
		return -1;
	*items = json_array();
	for (size_t i = 0; i < l.n; i++) {
		json_t *o = obj_from_kv(&l.kvs[i]);
		if (o)
			json_array_append_new(*items, o);
	}
	*rev = l.revision;
	store_kv_list_free(&l);
	return 0;
}

int registry_delete(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		    json_t **out, struct status *st)
{
	return registry_delete_if(r, k, ns, name, 0, 0, out, st);
}

int registry_delete_if(struct registry *r, const struct kind_info *k, const char *ns,
		       const char *name, int64_t want_rev, unsigned flags, json_t **out, struct status *st)
{
	char key[1024];
	int err;

	if (k->id == KIND_PODPEERSLICE && !(flags & REGISTRY_OWNER)) {
		status_set(st, 405, "MethodNotAllowed", "%s", derived_refusal);
		return -1;
	}
	if ((k->controller_owned && k->id != KIND_PODPEERSLICE) || k->id == KIND_CLUSTERNETWORK) {
		status_set(st, 405, "MethodNotAllowed", "%s objects cannot be deleted through the API%s",
			   k->kind,
			   k->id == KIND_HOSTSUBNET ? " (delete the Node)"
			   : k->id == KIND_NETNAMESPACE ? " (delete the Namespace)" : "");
		return -1;
	}
	if (k->id == KIND_NAMESPACE && name && strcmp(name, "default") == 0) {
		status_set(st, 403, "Forbidden", "namespaces \"default\" may not be deleted");
		return -1;
	}
	if (obj_key(k, ns, name, key, sizeof(key))) {
		status_set(st, 404, "NotFound", "%s \"%s\" not found", k->plural, name);
		return -1;
	}
	for (int attempt = 0; attempt < REGISTRY_RETRIES; attempt++) {
		json_t *old = NULL;
		int64_t old_rev = 0, rev = 0;
		struct txnb b;
		int hook = 0;
		bool single;

		err = load(r, key, &old, &old_rev);
		if (err == -ENOENT) {
			status_set(st, 404, "NotFound", "%s \"%s\" not found", k->plural, name);
			return -1;
		}
		if (err)
			return store_failed(st, err);
		if (want_rev && old_rev != want_rev) {
			status_set(st, 409, "Conflict",
				   "%s \"%s\": precondition failed: resourceVersion is %lld, not %lld",
				   k->plural, name, (long long)old_rev, (long long)want_rev);
			json_decref(old);
			return -1;
		}
		txnb_init(&b);
		txnb_unchanged(&b, key, old_rev);
		txnb_del(&b, key);
		if (k->id == KIND_NODE)
			hook = node_release(r, &b, old, st);
		else if (k->id == KIND_NAMESPACE)
			hook = namespace_release(r, &b, old, st);
		else if (k->id == KIND_SERVICE)
			hook = service_release(r, &b, old, st);
		else if (k->id == KIND_POD)
			hook = pod_release(r, &b, old, st);
		if (hook || (flags & REGISTRY_DRY_RUN)) {
			txnb_free(&b);
			if (hook) {
				json_decref(old);
				return -1;
			}
			*out = old;	/* what the delete would answer; nothing released */
			return 0;
		}
		single = txnb_object_ops(&b) == 1;
		err = commit(r, &b, flags, &rev);
		txnb_free(&b);
		if (err == 0) {
			after_commit(r, single ? key : NULL, NULL, rev);
			*out = old;
			return 0;
		}
		json_decref(old);
		if (err == -ESTALE)
			return fenced_out(r, st, name);
		if (err != -EAGAIN)
			return store_failed(st, err);
	}
	return retry_exhausted(st, name);
}

static int bootstrap_config(struct registry *r, const json_t *given, struct status *st)
{
	json_t *stored = NULL, *out = NULL, *obj;
	int err = load(r, CONFIG_KEY, &stored, NULL);

	if (err && err != -ENOENT)
		return store_failed(st, err);
	if (stored) {
		json_decref(stored);
		if (registry_reload_config(r))
			return store_failed(st, -EIO);
		if (!given)
			return 0;
		obj = json_deep_copy(given);
		err = registry_replace(r, kind_get(KIND_CLUSTERNETWORK), NULL, "default", obj, &out, st);
		json_decref(obj);
		json_decref(out);
		return err;
	}
	if (given) {
		obj = json_deep_copy(given);
	} else {
		struct cluster_config def;
		cluster_config_default(&def);
		obj = cluster_config_to_json(&def);
	}
	if (registry_prepare(kind_get(KIND_CLUSTERNETWORK), NULL, "default", obj, st)) {
		json_decref(obj);
		return -1;
	}
	set_identity(r, obj, NULL);
	{
		struct txnb b;
		txnb_init(&b);
		txnb_absent(&b, CONFIG_KEY);
		if (put_checked(&b, CONFIG_KEY, obj, st)) {
			txnb_free(&b);
			json_decref(obj);
			return -1;
		}
		err = txnb_commit(&b, r->store, NULL);
		txnb_free(&b);
	}
	json_decref(obj);
	if (err && err != -EAGAIN) /* EAGAIN: another controller bootstrapped first */
		return store_failed(st, err);
	if (registry_reload_config(r))
		return store_failed(st, -EIO);
	return 0;
}

/* Made last, so the bootstrap writes above do not build its index. */
static int start_controllers(struct registry *r, struct status *st)
{
	r->endpoints = endpoints_ctl_new(r);
	r->lb = lb_ctl_new(r);
	if (!r->endpoints || !r->lb) {
		status_set(st, 500, "InternalError", "out of memory");
		return -1;
	}
	return 0;
}

int registry_init(struct registry *r, struct store *s, struct metrics *m, const json_t *config_obj,
		  struct status *st)
{
	json_t *ns = NULL, *out = NULL;
	int err;

	memset(r, 0, sizeof(*r));
	r->store = s;
	r->metrics = m;
	if (getrandom(&r->rand_state, sizeof(r->rand_state), 0) != sizeof(r->rand_state) || !r->rand_state)
		r->rand_state = (uint64_t)time(NULL) | 1;
	if (bootstrap_config(r, config_obj, st))
		return -1;
	err = registry_get(r, kind_get(KIND_NAMESPACE), NULL, "default", &out, st);
	json_decref(out);
	if (err == 0)
		return start_controllers(r, st);
	if (st->code != 404)
		return -1;
	ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
		       "default");
	out = NULL;
	err = registry_create(r, kind_get(KIND_NAMESPACE), NULL, ns, &out, st);
	json_decref(ns);
	json_decref(out);
	if (err && st->code != 409)
		return err;
	return start_controllers(r, st);
}

void registry_close(struct registry *r)
{
	if (!r)
		return;
	endpoints_ctl_free(r->endpoints);
	r->endpoints = NULL;
	lb_ctl_free(r->lb);
	r->lb = NULL;
}
