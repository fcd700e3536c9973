/*
 * controller.h — the controller's private interface (not for other
 * components): the registry that validates and stores objects, the
 * allocators it calls inside a write, the watch hub, metrics and the API.
 *
 * How a write works
 *   api.c parses the request → registry_create/replace/delete builds one
 *   store transaction: the object itself plus whatever the kind's admission
 *   hook adds (node ID, subnet, VNID, cluster IP, NodePorts ...), each
 *   guarded by compare-and-swap conditions (the key is still free, the
 *   object still has the mod_rev we read).  If another writer got there
 *   first the transaction fails and the whole write is planned again from a
 *   fresh read (at most REGISTRY_RETRIES times).  So two controllers on one
 *   store never hand out the same thing, and a crash at any point leaves
 *   either the whole write or none of it.
 *
 * Store keys
 *   /weft/obj/<plural>/<name>              cluster-scoped objects
 *   /weft/obj/<plural>/<namespace>/<name>  namespaced objects
 *   /weft/alloc/nodeid/<%08u>              → node name
 *   /weft/alloc/nodeip/<ip>                → node name
 *   /weft/alloc/vnid/<%08u>                → number of namespaces using it
 *   /weft/alloc/clusterip/<ip>             → "namespace/name" of the service
 *   /weft/alloc/nodeport/<port>            → "namespace/name" of the service
 *   /weft/alloc/vip/<ip>                   → "namespace/name" of the service
 *   /weft/alloc/podip/<ip>                 → "namespace/name" of the pod whose
 *                                            status.podIP it is (admit_pod.c)
 *
 * Controllers inside the controller
 *   The endpoints controller (endpoints_ctl.c) keeps an Endpoints object equal
 *   to the ready and not-ready pods of every Service with a selector.  It
 *   follows the store's events (its own writes, and other controllers' on
 *   the same store), so it runs after every write of this registry and on
 *   the API's timer; a full resync at start repairs whatever it missed.
 *
 * Objects are stored without metadata.resourceVersion; it is the key's
 * mod_rev and is added on every read (obj_from_kv).
 */
#ifndef WEFT_CONTROLLER_H
#define WEFT_CONTROLLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"
#include "model/selector.h"
#include "store/store.h"

#define WUR __attribute__((warn_unused_result))

#define OBJ_PREFIX "/weft/obj/"
#define ALLOC_NODEID "/weft/alloc/nodeid/"
#define ALLOC_NODEIP "/weft/alloc/nodeip/"
#define ALLOC_VNID "/weft/alloc/vnid/"
#define ALLOC_CLUSTERIP "/weft/alloc/clusterip/"
#define ALLOC_NODEPORT "/weft/alloc/nodeport/"
#define ALLOC_VIP "/weft/alloc/vip/"
#define ALLOC_PODIP "/weft/alloc/podip/"

#define REGISTRY_RETRIES 16
#define VNID_MIN 10
#define VNID_MAX 16777215
#define NODEPORT_MIN 30000
#define NODEPORT_MAX 32767

/* A failed request: HTTP code, Kubernetes reason and a message for people. */
struct status {
	int code;		/* 0 = success */
	const char *reason;	/* "Invalid", "Conflict", ... (static) */
	char message[1024];
	int retry_after;	/* seconds (details.retryAfterSeconds, Retry-After), 0: none */
};
void status_set(struct status *st, int code, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Metrics counters, updated by the registry and the API (the request
 * counters, requests_by_class and latency_*, under the API's stats lock;
 * the others under its global lock). */
enum alloc_pool { POOL_HOSTSUBNET, POOL_VNID, POOL_CLUSTERIP, POOL_NODEPORT, POOL_VIP, POOL_COUNT };
struct metrics {
	uint64_t requests_by_class[6];		/* 1xx..5xx by code/100 */
	uint64_t alloc_failures[POOL_COUNT];
	uint64_t latency_buckets[16];		/* request duration histogram */
	double latency_sum;
	uint64_t latency_count;
	uint64_t watch_writes;			/* reader calls that sent data */
	uint64_t watch_resumes;			/* watch streams resumed by new events */
	uint64_t watchers_dropped_slow;
	uint64_t endpoints_writes;		/* Endpoints the endpoints controller wrote */
	uint64_t endpoints_deletes;		/* ... and deleted */
	uint64_t endpoints_recomputes;		/* Services whose Endpoints it computed */
	uint64_t endpoints_failures;		/* ... writes that failed (retried) */
	uint64_t endpointslice_writes;		/* EndpointSlices it wrote (slices_ctl.c) */
	uint64_t endpointslice_deletes;		/* ... and deleted */
	uint64_t endpointslice_failures;	/* ... writes that failed (retried) */
	uint64_t podpeerslice_writes;		/* PodPeerSlices it wrote (peers_ctl.c) */
	uint64_t podpeerslice_deletes;		/* ... and deleted */
	uint64_t podpeerslice_failures;		/* ... writes that failed (retried) */
	uint64_t requests_throttled;		/* node writes answered 429 (API's stats lock) */
	uint64_t apply_items[8];		/* batched applies' items, by enum apply_result (apply_batch.h) */
};

/* ---------------------------------------------------------------- txn builder */

/* Accumulates compares and operations for one store transaction; owns the
 * strings it is given copies of. */
struct txnb {
	struct store_cmp *cmps;
	size_t ncmps, capcmps;
	struct store_op *ops;
	size_t nops, capops;
	char **strings;		/* every key/value copied in, freed by txnb_free */
	size_t nstrings, capstrings;
	int error;		/* first allocation failure (-ENOMEM), checked at commit */
};
void txnb_init(struct txnb *b);
void txnb_free(struct txnb *b);
void txnb_cmp(struct txnb *b, const char *key, enum store_cmp_target t, enum store_cmp_op op, int64_t v);
void txnb_absent(struct txnb *b, const char *key);			/* create_rev == 0 */
void txnb_unchanged(struct txnb *b, const char *key, int64_t mod_rev);	/* mod_rev == v (0 = absent) */
void txnb_put(struct txnb *b, const char *key, const char *value);
void txnb_put_json(struct txnb *b, const char *key, const json_t *obj);
void txnb_del(struct txnb *b, const char *key);
void txnb_del_prefix(struct txnb *b, const char *prefix);
/* How many of b's operations touch an API object (a key under OBJ_PREFIX,
 * or a prefix that may hold one); allocation keys do not count. */
size_t txnb_object_ops(const struct txnb *b);
/* 0 committed, -EAGAIN a compare failed (plan again), other -errno. */
int txnb_commit(struct txnb *b, struct store *s, int64_t *rev) WUR;

/* ---------------------------------------------------------------- registry */

struct endpoints_ctl;

struct registry {
	struct store *store;
	struct metrics *metrics;
	struct endpoints_ctl *endpoints;	/* owned; runs after every write */
	struct lb_ctl *lb;			/* owned; runs on the API's tick */
	struct cluster_config config;	/* cached; config_rev guards its use */
	int64_t config_rev;		/* mod_rev of the ClusterNetwork key */
	int64_t last_write_rev;		/* highest revision this registry committed */
	uint64_t rand_state;
	/* The Endpoints controller's writes are fenced when it is leader-elected
	 * (leader.c): each holds only while fence_key's mod_rev is fence_rev.
	 * NULL: not elected (one controller), nothing added. */
	const char *fence_key;
	int64_t fence_rev;
	/* The caller's lock, for REGISTRY_YIELD writes: lock(lock_arg,
	 * false) lets go of it, lock(lock_arg, true) takes it back.  NULL:
	 * it is held throughout (registry_set_lock). */
	void (*lock)(void *arg, bool take);
	void *lock_arg;
};

int obj_key(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len);
/* The object stored in kv, with metadata.resourceVersion added (new ref). */
json_t *obj_from_kv(const struct store_kv *kv);

/* Open: loads or creates the cluster config (config_obj may be NULL: the
 * stored one, or defaults on first start) and the default namespace. */
int registry_init(struct registry *r, struct store *s, struct metrics *m,
		  const json_t *config_obj, struct status *st) WUR;
/* The lock that serialises the registry's callers, for REGISTRY_YIELD
 * writes (NULL: none is ever let go). */
void registry_set_lock(struct registry *r, void (*lock)(void *arg, bool take), void *arg);
/* Frees what registry_init made (not the store).  Accepts a zeroed one. */
void registry_close(struct registry *r);
int registry_reload_config(struct registry *r) WUR;
/* A pseudo-random number (xorshift, seeded from getrandom at init) for
 * allocation start points; not for secrets. */
uint64_t registry_random(struct registry *r);

/* What every write does to a request body before planning: the body
 * agrees with the path and is within the limits (model_request_check: its
 * kind, apiVersion, name and namespace; kind, apiVersion and namespace set
 * from the path where absent), it validates, defaults are filled in.  0,
 * or -1 with st set (400 disagrees, 413 over a limit, 422 invalid). */
int registry_prepare(const struct kind_info *k, const char *ns, const char *name, json_t *obj,
		     struct status *st) WUR;

/* Each returns 0 and the stored object (new ref, *out) or -1 with st set. */
int registry_get(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		 json_t **out, struct status *st) WUR;
/* items: a new JSON array; *rev the store revision of the list. */
int registry_list(struct registry *r, const struct kind_info *k, const char *ns,
		  json_t **items, int64_t *rev, struct status *st) WUR;
/* The same collection as stored (values without resourceVersion: obj_from_kv
 * adds it), read in one transaction from s — the registry's store, or
 * another handle on it that its user guards with its own lock.  *out:
 * store_kv_list_free.  0, or -1 with st set (500). */
int registry_list_snapshot(const struct kind_info *k, const char *ns, struct store *s,
			   struct store_kv_list *out, struct status *st) WUR;
/* The revision of the stored object (its resourceVersion), without
 * parsing it: 0 with *rev, 0 when there is none; -1 with st set when the
 * store failed.  Under the caller's lock, as every call of the registry. */
int registry_revision(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		      int64_t *rev, struct status *st) WUR;
int registry_create(struct registry *r, const struct kind_info *k, const char *ns, json_t *obj,
		    json_t **out, struct status *st) WUR;
/* A create (create_only) or replace in two halves.  registry_check_write
 * is what needs no store, in the order a write reports failures:
 * registry_prepare, then the kind's own rules (a kind the controller
 * writes, the one ClusterNetwork); it touches no registry state, so the
 * API runs it before taking the lock.  registry_write_checked is the rest
 * (plan, admission, commit) for an obj that passed it with the same k, ns,
 * name and create_only.  registry_create and registry_replace are both. */
int registry_check_write(const struct kind_info *k, const char *ns, const char *name, json_t *obj,
			 bool create_only, struct status *st) WUR;
/* How registry_write_checked, registry_delete_if and registry_patch write:
 * REGISTRY_CREATE, a create (the name must be free), else a replace;
 * REGISTRY_DRY_RUN (dryRun=All), everything — reads, defaults,
 * admission, allocation planned in the transaction — but the commit:
 * the answer is what the write would answer (a create without a
 * resourceVersion, a replace at the stored one), and nothing is stored,
 * allocated, sent to watchers or moves the revision;
 * REGISTRY_STATUS, a write of the status subresource: only the body's
 * status is taken (for a Pod its labels and annotations too, as
 * kube-apiserver's pods/status), the rest of the stored object kept; the
 * object must exist;
 * REGISTRY_MAIN, a write of the main resource through the API: for a kind
 * with a status subresource the body's status is ignored (registry.c,
 * main_status).  Without it (the controller's own writers) a body's
 * status is written as sent, and a body without one keeps the stored;
 * REGISTRY_YIELD, the caller's lock (r->lock) may be let go while the
 * write's transaction is with a store that takes concurrent calls: other
 * writes plan and commit meanwhile, as another controller's would, and
 * the transaction's compares keep each whole.  Only for a caller that
 * holds the lock once and keeps nothing of the registry's across the
 * call (the API's write workers);
 * REGISTRY_OWNER, the controller's own write of a kind it derives
 * (PodPeerSlices, peers_ctl.c): the refusal of client writes to
 * controller-owned kinds is not applied.  Never set from a request.  The
 * caller runs registry_prepare first (registry_check_write would refuse). */
#define REGISTRY_CREATE 1u
#define REGISTRY_DRY_RUN 2u
#define REGISTRY_STATUS 4u
#define REGISTRY_MAIN 8u
#define REGISTRY_YIELD 16u
#define REGISTRY_OWNER 32u
int registry_write_checked(struct registry *r, const struct kind_info *k, const char *ns, json_t *obj,
			   unsigned flags, json_t **out, struct status *st) WUR;
/* A PUT of a missing object creates it (how an agent registers its node);
 * a replace that would store what is stored writes nothing and returns the
 * stored object with its resourceVersion. */
int registry_replace(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		     json_t *obj, json_t **out, struct status *st) WUR;
int registry_delete(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		    json_t **out, struct status *st) WUR;
/* The same, only while the object is at revision want_rev (0: any):
 * a DELETE with preconditions.resourceVersion.  409 otherwise. */
int registry_delete_if(struct registry *r, const struct kind_info *k, const char *ns,
		       const char *name, int64_t want_rev, unsigned flags, json_t **out, struct status *st) WUR;

/* pod-network verbs; *out = array of the changed NetNamespaces. */
enum podnet_action { PODNET_JOIN, PODNET_ISOLATE, PODNET_GLOBAL };
int registry_podnetwork(struct registry *r, enum podnet_action a, const char *to,
			const char *const *projects, size_t n, json_t **out, int64_t *rev,
			struct status *st) WUR;

/* At start: in flat and networkpolicy modes, every NetNamespace that has a
 * VNID other than 0 (a store written by a weft that gave namespaces VNIDs
 * in networkpolicy mode) is set to 0 and the VNID keys go with it; in
 * multitenant mode nothing.  *changed: how many were set.  0 or -1 with st
 * set. */
int registry_conform_vnids(struct registry *r, size_t *changed, struct status *st) WUR;

/* Consistency check of the whole store (weft-controller --fsck): every
 * allocation belongs to an object and every object's allocation exists,
 * no duplicates.  Problems are appended to report (one a line). */
int registry_fsck(struct registry *r, char *report, size_t len, size_t *problems) WUR;

/* allocation figures for /metrics */
struct alloc_usage { uint64_t used[POOL_COUNT], total[POOL_COUNT]; };
int registry_usage(struct registry *r, struct alloc_usage *u) WUR;

/* Admission hooks per kind (alloc_*.c): add to the transaction whatever the
 * kind's write needs; old is the stored object (NULL on create), obj the
 * new one (may be modified: allocated fields filled in). */
int node_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st) WUR;
int node_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st) WUR;
int namespace_admit(struct registry *r, struct txnb *b, json_t *obj, struct status *st) WUR;
int namespace_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st) WUR;
int service_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st) WUR;
int service_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st) WUR;
int config_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st) WUR;
/* Hand-written Endpoints and EndpointSlices (admit_endpoints.c): no
 * address inside the cluster network unless it is a pod's that the
 * object's namespace may reach. */
int endpoints_admit(struct registry *r, struct txnb *b, const json_t *obj, struct status *st) WUR;
int endpointslice_admit(struct registry *r, struct txnb *b, const json_t *obj, struct status *st) WUR;

/* A Pod's address (admit_pod.c): status.podIP must be a pod address of
 * the subnet of spec.nodeName's HostSubnet (422 otherwise), and its key
 * ALLOC_PODIP<ip> is taken in the pod's transaction (409 naming the pod
 * that holds it).  pod_release drops the key of a deleted pod,
 * pod_release_namespace those of a namespace's pods (the cascade). */
int pod_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st) WUR;
int pod_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st) WUR;
int pod_release_namespace(struct registry *r, struct txnb *b, const char *ns, struct status *st) WUR;
/* A pod's status.podIP (borrowed from pod), or NULL when it has none ("" is none). */
const char *pod_address(const json_t *pod);
/* "namespace/name" of pod, the holder an ALLOC_PODIP key names. */
void pod_owner(const json_t *pod, char *buf, size_t len);
/* Whether pod owner on node (spec.nodeName; NULL: none), whose HostSubnet
 * is hs (NULL: none), may have address ip: 0, or -1 with why filled (the
 * 422 message, "status.podIP 10.128.2.5: pod blue/a is on node node-1,
 * whose subnet is 10.128.0.0/23").  Pure: for admission, fsck and start. */
int pod_ip_fits_node(const char *owner, const char *ip, const char *node, const json_t *hs, char *why,
		     size_t len);
/* The holder of an ALLOC_PODIP key for ip is stale (1: its pod does not
 * exist or has another address; the guards that keep it so are added to
 * b) or holds it (0); -errno when the store failed. */
int pod_ip_holder_stale(struct registry *r, struct txnb *b, const char *holder, const char *ip) WUR;

/* At start (podip_index.c): a store written before the ALLOC_PODIP keys
 * has pods with addresses and no keys.  Each such pod gets its key (pods
 * whose address fits their node first, so they win over one that does not);
 * a pod whose address another pod holds, or that does not fit its node, is
 * counted and described in lines (the first few, one a line) — never
 * deleted: weft-controller logs them and --fsck names them all.
 * 0, or -1 with st set. */
struct pod_ip_index_report {
	size_t indexed;		/* keys added */
	size_t conflicts;	/* pods whose address another pod holds */
	size_t misfits;		/* pods whose address is not their node's to give */
	size_t nlines;		/* problems described in lines (at most POD_IP_INDEX_LINES) */
	char lines[4096];
};
#define POD_IP_INDEX_LINES 16
int registry_index_pod_ips(struct registry *r, struct pod_ip_index_report *rep, struct status *st) WUR;

/* VIPs of LoadBalancer Services (alloc_vip.c), called by service_admit /
 * service_release with the Service's "namespace/name" as owner. */
int vip_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, const char *owner,
	      struct status *st) WUR;
void vip_release(struct txnb *b, const json_t *old);
/* The VIP a stored Service holds (type LoadBalancer and
 * status.loadBalancer.ingress[0].ip; borrowed from svc), or NULL. */
const char *service_vip(const json_t *svc);
/* How many addresses the VIP pools hand out (network/broadcast excluded). */
uint64_t vip_pool_usable(const struct cluster_config *c);

/* A Node's status.addresses InternalIP (borrowed from node), or NULL. */
const char *node_internal_ip(const json_t *node);

/* subnet of node ID id under the config: 0, or -ERANGE when exhausted */
int subnet_for_node_id(const struct cluster_config *c, uint32_t id, struct cidr *out);
/* "10.128.0.0/14" or "10.128.0.0/14, 10.132.0.0/14" */
void config_networks_string(const struct cluster_config *c, char *buf, size_t len);

/* ---------------------------------------------------------------- endpoints controller */

/* The label on the Endpoints the controller made: only those are deleted
 * when their Service goes or loses its selector.  Set it by hand on
 * nothing. */
#define ENDPOINTS_MANAGED_LABEL "endpoints.weft.io/managed-by"
#define ENDPOINTS_MANAGER "weft-controller"
/* Kubernetes' annotation on an Endpoints that does not list every pod. */
#define ENDPOINTS_OVER_CAPACITY "endpoints.kubernetes.io/over-capacity"
#define ENDPOINTS_MAX_ADDRESSES 4096

/* Made by registry_init (enabled), freed by registry_close.  Nothing is
 * read from the store before the first call that needs the index. */
/* lb_ctl.c: the load-balancer controller (docs/lb.md); runs on the API's
 * tick under its lock, only where enabled (the leader). */
struct lb_ctl;
struct lb_ctl_stats {
	uint64_t translations;		/* times the cluster was translated */
	uint64_t writes;		/* objects written (VSs, certificates, statuses) */
	uint64_t failures;		/* transactions that failed (retried) */
};
struct lb_ctl *lb_ctl_new(struct registry *r);
void lb_ctl_free(struct lb_ctl *c);		/* accepts NULL */
void lb_ctl_enable(struct lb_ctl *c, bool on);
/* Catch up with the store's events; translate and write if any could
 * change the result.  0, or -errno (retried at the next call). */
int lb_ctl_sync(struct lb_ctl *c);
const struct lb_ctl_stats *lb_ctl_stats(const struct lb_ctl *c);

struct endpoints_ctl *endpoints_ctl_new(struct registry *r);
void endpoints_ctl_free(struct endpoints_ctl *c);
/* Disabled: nothing is written, and the index is brought up to date only
 * when endpoints_admit needs it (endpoints_catch_up) or rebuilt by
 * endpoints_resync (weft-controller --no-endpoints-controller, a
 * controller that does not lead, and tests). */
void endpoints_ctl_enable(struct endpoints_ctl *c, bool on);
/* Apply the store's events since the last call to the index and rewrite
 * the Endpoints of the Services they touch; O(what changed).  Called by the
 * registry after each of its commits and by the API's timer (other
 * writers).  A nested call (from the controller's own writes) returns at
 * once.  0, or -errno when the store failed (the next call goes on from
 * where this one stopped; failed Endpoints writes are retried then). */
int endpoints_sync(struct endpoints_ctl *c);
/* Rebuild the index from a full listing, then check every Service with a
 * selector and every controller-made Endpoints (at start: repairs what a
 * crash or a stop missed).  0 or -errno. */
int endpoints_resync(struct endpoints_ctl *c) WUR;
/* After a commit at rev whose only change was key, now obj (NULL: key
 * deleted): what endpoints_sync does, but when the index is at rev - 1 it
 * takes obj as written instead of reading the event back and parsing it;
 * when it is not (others wrote in between) and the store wakes the loop
 * on events (store_notify_fd: etcd), it reads nothing and leaves them to
 * the loop's endpoints_sync.  obj is borrowed.  0 or -errno. */
int endpoints_written(struct endpoints_ctl *c, const char *key, const json_t *obj, int64_t rev);
/* For endpoints_admit: bring the index up to date (reads events, writes
 * nothing), then the "namespace/name"s of the pods whose status.podIP is ip
 * (a JSON object used as a set, borrowed until the next call), or NULL. */
int endpoints_catch_up(struct endpoints_ctl *c) WUR;
const json_t *endpoints_pods_with_ip(struct endpoints_ctl *c, const char *ip);
/* The controller is writing an Endpoints of its own (its addresses are the
 * Service's namespace's pods: endpoints_admit has nothing to check). */
bool endpoints_writing(const struct endpoints_ctl *c);
/* Services with a selector in the index (for the start-up line). */
size_t endpoints_services(const struct endpoints_ctl *c);
/* Endpoints in one EndpointSlice at most (weft-controller
 * --max-endpoints-per-slice): 1..ENDPOINTSLICE_MAX_ENDPOINTS, else
 * -ERANGE.  Slices already stored are cut down to it at their next write. */
int endpoints_ctl_set_slice_capacity(struct endpoints_ctl *c, size_t max) WUR;
/* When the API's timer must run next for the PodPeerSlices (a dirty node's
 * gather ends): ms from now (0: at once), -1 when nothing is due or the
 * controller is disabled.  api_run shortens its wait to it. */
int64_t endpoints_ctl_due_ms(const struct endpoints_ctl *c);
/* Who to tell when that comes earlier than it was (the API's loop, so that
 * its wait ends in time): peers_ctl_set_wake. */
void endpoints_ctl_set_wake(struct endpoints_ctl *c, void (*wake)(void *arg, int64_t in_ms), void *arg);
/* The PodPeerSlice controller it owns (for tests: its clock, capacity). */
struct peers_ctl *endpoints_ctl_peers(struct endpoints_ctl *c);

/* ---------------------------------------------------------------- slice sets */

/* slice_set.c: the index of one kind's slices and the plan that makes an
 * owner's slices hold what is wanted, shared by the EndpointSlice and
 * PodPeerSlice controllers (the records' members: slice_set.c). */
struct slice_pack_plan;
struct slice_set {
	json_t *slices;		/* "ns/name" (or "name") → record */
	json_t *by_owner;	/* owner → {name: true}: the slices of ours */
};
int slice_set_init(struct slice_set *s) WUR;	/* 0 or -ENOMEM (then freed) */
void slice_set_free(struct slice_set *s);	/* accepts a zeroed or freed one */
void slice_set_clear(struct slice_set *s);
/* The record of slice ns/name (ns NULL or "": cluster-scoped), borrowed;
 * NULL when there is no such slice. */
const json_t *slice_set_get(const struct slice_set *s, const char *ns, const char *name);
/* A record's owner when it is ours, else NULL (borrowed from rec). */
const char *slice_set_owner(const json_t *rec);
/* Slice ns/name now has rec (taken; NULL: it is gone); by_owner follows.
 * Records and owner strings read before are invalid after. */
void slice_set_put(struct slice_set *s, const char *ns, const char *name, json_t *rec);
/* slice_pack's plan for owner's slices (those of manager; NULL: all) to
 * hold want (group → {key → entry}), at most max a slice.  *held keeps
 * the names and records the plan borrows (json_decref it after the
 * plan, which slice_pack_plan_free frees).  0, or -ENOMEM / -EINVAL
 * (then nothing to free). */
int slice_set_plan(const struct slice_set *s, const char *ns, const char *owner, const char *manager,
		   const json_t *want, size_t max, struct slice_pack_plan *plan, json_t **held) WUR;

/* ---------------------------------------------------------------- EndpointSlice controller */

/* slices_ctl.c: the slices of every Service, kept inside the endpoints
 * controller (which owns it and calls it; it calls nothing of it). */
#define ENDPOINTSLICE_MANAGER "endpointslice-controller.weft.io"
#define ENDPOINTSLICE_MIRROR_MANAGER "endpointslicemirroring-controller.weft.io"
#define ENDPOINTSLICE_DEFAULT_PER_SLICE 100

struct slices_ctl;
struct slices_ctl *slices_ctl_new(struct registry *r);
void slices_ctl_free(struct slices_ctl *s);		/* accepts NULL */
/* Forget the index (before a rebuild from a listing). */
void slices_ctl_clear(struct slices_ctl *s);
int slices_ctl_set_capacity(struct slices_ctl *s, size_t max) WUR;
/* The slice ns/name is now obj (NULL: deleted).  true when the index
 * changed; service then holds the Service (of ns) whose slices it was or
 * is, when the slice is (or was) one of ours ("" otherwise).  obj is
 * borrowed. */
bool slices_ctl_apply(struct slices_ctl *s, const char *ns, const char *name, const json_t *obj, char *service,
		      size_t len);
/* The Services that have slices of ours: "ns/svc" → {name: true}
 * (borrowed, until the next call that changes the index). */
const json_t *slices_ctl_services(const struct slices_ctl *s);
/* Make the slices of ns/svc hold managed (the subsets of a Service with a
 * selector) and mirrored (those of its hand-written Endpoints): NULL for
 * none, which deletes that set's slices.  Writes only changed slices.  0,
 * or -1 when a write failed (the caller retries later).  Borrowed. */
int slices_ctl_reconcile(struct slices_ctl *s, const char *ns, const char *svc, const json_t *managed,
			 const json_t *mirrored);

/* ---------------------------------------------------------------- PodPeerSlice controller */

/* peers_ctl.c: every node's pods with an address as NetworkPolicy peers
 * (model.h, "PodPeerSlices"), kept inside the endpoints controller (which
 * owns it and calls it; it calls nothing of it).  A node's slices are
 * written at most once every PODPEERS_GATHER_MS: at once when they were
 * not written within the last one, else when it ends.  A slice holds
 * PODPEERS_PER_SLICE pods (peers_ctl_set_capacity: 1 to
 * PODPEERSLICE_MAX_PODS). */
#define PODPEERS_GATHER_MS 100
#define PODPEERS_PER_SLICE 10

struct peers_ctl;
struct peers_ctl *peers_ctl_new(struct registry *r);
void peers_ctl_free(struct peers_ctl *p);		/* accepts NULL */
/* Forget the index (before a rebuild from a listing); dirty nodes stay. */
void peers_ctl_clear(struct peers_ctl *p);
/* Pods in one slice at most: 1..PODPEERSLICE_MAX_PODS (tests), else -ERANGE. */
int peers_ctl_set_capacity(struct peers_ctl *p, size_t max) WUR;
/* The gather delay and the clock it is measured on (now: ms on any
 * monotonic scale; NULL: monotime_ms).  For tests. */
void peers_ctl_set_clock(struct peers_ctl *p, int64_t gather_ms, int64_t (*now)(void *arg), void *arg);
/* Pod ns/name's digest (endpoints_ctl.c's pod_digest) went from old to now
 * (either NULL: none).  dirty: mark the nodes whose entries changed.
 * Borrowed; O(the pod). */
void peers_ctl_pod(struct peers_ctl *p, const char *ns, const char *name, const json_t *old, const json_t *now,
		   bool dirty);
/* The PodPeerSlice name is now obj (NULL: deleted); true when the index
 * changed (the node of one of ours is marked, when dirty).  Borrowed. */
bool peers_ctl_apply(struct peers_ctl *p, const char *name, const json_t *obj, bool dirty);
/* Every node with pods or slices of ours → dirty, due at once (resync). */
void peers_ctl_mark_all(struct peers_ctl *p);
/* Keep slices (on: the cluster has a NetworkPolicy) or not (off: the
 * entries are forgotten and every slice of ours is due for deletion at
 * once).  Turned on, the caller hands every pod in with peers_ctl_pod
 * (dirty: each node is due at once, as it was not written within the
 * gather).  A new controller is off; peers_ctl_pod does nothing while
 * off. */
void peers_ctl_set_active(struct peers_ctl *p, bool on);
bool peers_ctl_active(const struct peers_ctl *p);
/* Reconcile the nodes whose gather is over: only changed slices written.
 * 0, or -1 when a write failed (its node is retried a gather later). */
int peers_ctl_reconcile(struct peers_ctl *p);
/* Milliseconds until the next dirty node is due (0: now), -1 when none. */
int64_t peers_ctl_due_ms(const struct peers_ctl *p);
/* wake(arg, in_ms) is called (under the caller's lock, as every call
 * here) whenever the next due instant comes earlier: in_ms from now.
 * NULL: none. */
void peers_ctl_set_wake(struct peers_ctl *p, void (*wake)(void *arg, int64_t in_ms), void *arg);

/* ---------------------------------------------------------------- watch hub */

/* Threads (watch.c): the hub has a lock of its own and takes it in every
 * call but watcher_read and watcher_bookmark, whose caller holds it
 * (watch_hub_lock) so that what it does on a 0 is atomic with the wake-up
 * that ends it: wake functions run with it held (and must not take it,
 * nor the store lock).  Calls that read the store or change the set of
 * watchers also need the caller's store lock, taken first:
 * watch_hub_sync, watch_hub_written, watcher_open, watcher_close and
 * watcher_read while watcher_reads_store says so.  So a watcher in
 * step with the ring is read without the store lock, and never waits for
 * a commit. */
struct watch_hub;
struct watch_hub *watch_hub_new(struct store *s, size_t ring_events);
void watch_hub_free(struct watch_hub *h);
void watch_hub_lock(struct watch_hub *h);
void watch_hub_unlock(struct watch_hub *h);
/* Pull new events from the store into the ring and wake watchers.  Called
 * after every local write and periodically (other writers). */
int watch_hub_sync(struct watch_hub *h);
/* After a local write that committed at revision rev: the same as
 * watch_hub_sync, but with no watchers it needs no store read at all. */
int watch_hub_written(struct watch_hub *h, int64_t rev);
size_t watch_hub_watchers(struct watch_hub *h);
int64_t watch_hub_revision(struct watch_hub *h);

/* What a watcher follows: the keys under prefix (a collection, or one
 * namespace's) that sel selects (taken over, left zeroed; NULL or empty:
 * every key).  scan, when set, is a narrower prefix holding every key sel
 * can select (a watch of one object: its key), which the watcher's store
 * reads (the initial list, history) use instead of prefix. */
struct watch_spec {
	const char *prefix;
	const char *scan;
	struct selector *sel;
};

/* A watcher follows spec from after_rev (exclusive).  after_rev < 0:
 * first an ADDED event for every current object selected, then the
 * changes.  Events come as newline-terminated JSON lines, a transaction's
 * events never split across a disconnect point; with a selector, an
 * update that takes an object out of the selection is a DELETED of it and
 * one that brings it in an ADDED (watch_event.h).  wake(arg) is called
 * (from watch_hub_sync) when a watcher that read 0 has data again. */
struct watcher;
typedef void (*watcher_wake_fn)(void *arg);
struct watcher *watcher_open(struct watch_hub *h, struct watch_spec *spec, int64_t after_rev, watcher_wake_fn wake,
			     void *arg, struct status *st);
/* >0 bytes copied; 0 nothing now (wake will be called); -1 the stream ends
 * (fell too far behind: the client resumes from its last revision).
 * With the hub lock held, and the store lock too if watcher_reads_store. */
ssize_t watcher_read(struct watcher *w, char *buf, size_t max);
/* Its next watcher_read may read the store (it is behind the ring).  Only
 * its own watcher_read changes this, so its reader may ask without a lock. */
bool watcher_reads_store(const struct watcher *w);
/* After a watcher_read that returned 0 (hub lock held): the revision a
 * BOOKMARK may carry now — every event up to it that the watcher is to see
 * has been copied out, and none at or below it will come — or -1 (not
 * caught up, or nothing newer than what it last carried). */
int64_t watcher_bookmark(struct watcher *w);
void watcher_close(struct watcher *w);

/* ---------------------------------------------------------------- api */

struct api_config {
	const char *listen;		/* "127.0.0.1:8080" */
	const char *token;		/* admin token (borrowed) */
	size_t max_body;		/* bytes */
	unsigned max_connections;	/* in all (conns_limit_for: under RLIMIT_NOFILE) */
	unsigned max_per_client;	/* of one client address, watch streams not counted */
	unsigned header_timeout;	/* seconds from accept to a complete request head */
	unsigned idle_timeout;		/* seconds from a response to the next request head */
	unsigned bookmark_interval;	/* seconds between BOOKMARKs of idle watches that allow them (0: 60) */
	struct store *reader;		/* a second handle on the store, for lists (borrowed; NULL:
					 * lists read the registry's, under the global lock) */
	/* HTTPS: the served certificate (chain) and its key, PEM, borrowed
	 * until api_stop; both NULL: plain HTTP (main allows it on loopback only) */
	const char *tls_cert;
	const char *tls_key;
	/* the flows relay's client certificate and key files (pki.h), copied;
	 * NULL: GET /apis/network.weft.io/v1/flows answers 503 */
	const char *flows_cert_file;
	const char *flows_key_file;
	/* each node credential's budget of writes (POST, PUT, PATCH, DELETE):
	 * per second and at most at once; 0: the defaults (API_NODE_WRITE_*) */
	double node_write_rate;
	unsigned node_write_burst;
};
/* See docs/api.md, "Errors": a busy node's agent writes a few times a
 * second at most; a node starting with a full subnet of pods writes two
 * records each in one round.  These leave that room and more. */
#define API_NODE_WRITE_RATE 50
#define API_NODE_WRITE_BURST 1200
struct api;

/* A request path: /api/v1[/namespaces/NS]/PLURAL[/NAME] or /apis/G/v1/... */
struct route {
	const struct kind_info *kind;
	char ns[256];
	char name[256];
	bool has_name;
	bool status;		/* NAME/status: the status subresource (kind->status_subresource) */
	bool podnetwork;
};
/* 0 with r filled, or 404 when the path names nothing. */
int api_parse_route(const char *url, struct route *r);

struct api *api_start(const struct api_config *cfg, struct registry *r, struct watch_hub *h,
		      struct metrics *m, char *err, size_t errlen);
void api_stop(struct api *a);
/* The main thread's timers: wait timeout_ms, then pull events written by
 * other controllers, end expired watches, send heartbeats and bookmarks. */
int api_run(struct api *a, int timeout_ms) WUR;
/* The API's threads share the registry, store and hub: any other thread
 * that uses them (compaction in main) holds this lock. */
void api_lock(struct api *a);
void api_unlock(struct api *a);

/* ---------------------------------------------------------------- node credentials (cred.c) */

#define CRED_PREFIX "/weft/cred/node/"	/* + name → {"node","sha256","created"} */
#define CRED_API_VERSION "weft.io/v1"
#define CRED_PATH "/apis/weft.io/v1/nodecredentials"
#define CRED_TOKEN_LEN 81		/* "<16 hex>.<64 hex>" */

/* Who a request comes from: the admin, or the node a credential is bound to. */
struct principal {
	bool admin;
	char node[254];		/* a node credential's node */
	char cred[17];		/* ... and its name */
};

struct creds;
struct creds *creds_new(void);
void creds_free(struct creds *c);	/* accepts NULL */
/* The whole table from the store (at start).  0 or -errno. */
int creds_load(struct creds *c, struct store *s) WUR;
/* Events since the table's revision (other controllers' issues and
 * revocations); *changed when any.  0 or -errno. */
int creds_sync(struct creds *c, struct store *s, bool *changed) WUR;
/* true and *p (a node principal) when token is a live node credential's. */
bool creds_authenticate(struct creds *c, const char *token, struct principal *p);
bool creds_alive(struct creds *c, const char *name);
/* Take one write from credential name's budget (throttle.h) at now_ms
 * (CLOCK_MONOTONIC): 0 taken (or no such credential: authentication
 * decides that), else the seconds until the budget has one again. */
struct throttle_rate;
int creds_throttle(struct creds *c, const char *name, const struct throttle_rate *r, int64_t now_ms);
/* A new credential for node: token (>= CRED_TOKEN_LEN + 1 bytes) receives
 * it, *out the NodeCredential with status.token (new ref).  The caller
 * wipes token.  0, or -1 with st set. */
int creds_issue(struct creds *c, struct store *s, const char *node, char *token, size_t len,
		json_t **out, struct status *st) WUR;
/* Delete it from the store and the table; *out what it was (new ref).
 * 0, or -1 with st set (404 unknown). */
int creds_revoke(struct creds *c, struct store *s, const char *name, json_t **out, struct status *st) WUR;
int creds_get(struct store *s, const char *name, json_t **out, struct status *st) WUR;
/* Every credential, without tokens: *items a new array.  0 or -1, st set. */
int creds_list(struct store *s, json_t **items, struct status *st) WUR;

/* ---------------------------------------------------------------- authorization (authz.c) */

enum authz_verb { AUTHZ_GET, AUTHZ_LIST, AUTHZ_WATCH, AUTHZ_CREATE, AUTHZ_UPDATE, AUTHZ_DELETE };
const char *authz_verb_name(enum authz_verb v);
/* What a node may do, by the request alone (no lock; r NULL for a path
 * that is not an object route: /metrics, pod-network, credentials): 0 it
 * may, or may if the object agrees (authz_write decides then); -1 with st
 * set (403) it may not.  The admin may do everything. */
int authz_route(const struct principal *p, enum authz_verb v, const struct route *r, struct status *st) WUR;
/* A node's write against the stored object (under the global lock):
 * its own Node, HostSubnet annotations, Pods bound to it (before and
 * after), its own unprogrammed-annotation on a Service.  *pin_rev: the
 * revision of the stored object the decision read (0 none), which the
 * write must still find.  0 allowed, -1 with st set (403, or 500). */
int authz_write(struct registry *reg, const struct principal *p, enum authz_verb v, const struct route *r,
		const json_t *body, int64_t *pin_rev, struct status *st) WUR;

/* ---------------------------------------------------------------- token */

/* Read DIR/admin.token, or create it (0600, 32 random bytes as hex). */
int token_load_or_create(const char *dir, char *token, size_t len, char *err, size_t errlen) WUR;
bool token_equal(const char *a, const char *b);	/* constant time in the length of b */

#endif
