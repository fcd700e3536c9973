/*
 * report.c — keeps the controller's Pod records of this node equal to the
 * node's leases, so a pod added while the controller was down appears
 * once it is back, and a deleted one disappears.
 *
 * One thread, woken by report_kick() (after ADD/DEL/GC and after every
 * Pod event or relist) and every few seconds.  Each round, once the Pod
 * list has been read at least once:
 *   lease with a pod name, and no cached Pod with the same IP, node and
 *   container ID  ->  when the cache has no Pod of that name, create the
 *   record (most are new: the round's new records in one batched create,
 *   record_create_batch, or a POST when alone); when it has one, or the
 *   create finds one (409), GET the Pod (to keep what others wrote in it), set
 *   spec.nodeName, status.podIP/podIPs/hostIP/phase and the annotation
 *   weft.io/container-id, PUT it (conditional on the resourceVersion read);
 *   the main resource ignores a status it is sent, except on a create
 *   (which makes the record whole in one write), so when the answer's
 *   status is not the one sent, PUT it to NAME/status (conditional on the
 *   resourceVersion the first PUT answered);
 *   cached Pod on this node carrying a container ID that no lease has
 *   ->  DELETE it.
 * Pods that other writers put on this node without a container ID are not
 * ours and are left alone.  A failed call is retried next round.
 *
 * The controller refuses a record whose address another Pod holds (409).
 * When that Pod is the stale record of a lease this node reused the
 * address of, the same round deletes it (after the upserts: a new
 * container of the same pod must rewrite its record, labels kept, before
 * the old record's deletion is tried), and the deletion's watch event
 * wakes the next round, whose upsert goes through.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/flowserve.h"
#include "lib/hmap.h"
#include "lib/monotime.h"
#include "lib/u64map.h"

#define REPORT_PERIOD_S 5

void report_kick(struct agent *a)
{
	pthread_mutex_lock(&a->lock);
	a->kicks++;
	pthread_cond_signal(&a->kick);
	pthread_mutex_unlock(&a->lock);
}

struct lease_list {
	struct ipam_lease *v;
	size_t n, cap;
};

static int collect(const struct ipam_lease *l, void *arg)
{
	struct lease_list *ll = arg;

	if (ll->n == ll->cap) {
		size_t cap = ll->cap ? ll->cap * 2 : 64;
		struct ipam_lease *v = realloc(ll->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ll->v = v;
		ll->cap = cap;
	}
	ll->v[ll->n++] = *l;
	return 0;
}

/* Make pod lease l's record: this node's container ID, spec.nodeName,
 * and the status (returned, borrowed from pod). */
static json_t *record_fill(struct agent *a, json_t *pod, const struct ipam_lease *l, const char *ip)
{
	json_t *md = json_object_get(pod, "metadata"), *ann = json_object_get(md, "annotations"), *spec;

	if (!json_is_object(ann)) {
		ann = json_object();
		json_object_set_new(md, "annotations", ann);
	}
	json_object_set_new(ann, AGENT_ANN_CONTAINER, json_string(l->owner.container_id));
	spec = json_object_get(pod, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(pod, "spec", spec);
	}
	json_object_set_new(spec, "nodeName", json_string(a->o.node));
	json_object_set_new(pod, "status",
			    json_pack("{s:s, s:s, s:[{s:s}], s:s}", "phase", "Running", "podIP", ip,
				      "podIPs", "ip", ip, "hostIP", a->o.node_ip_str));
	return json_object_get(pod, "status");
}

static json_t *record_new(const struct ipam_lease *l)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
			 l->owner.pod_name, "namespace", l->owner.pod_namespace);
}

/* A Pod this node's cache does not have is most often new (a pod the
 * runtime started by name, whose record the agent makes): POST it, one
 * request.  1: created; 0: it exists (409), update it; <0: failed (r
 * holds the answer when the controller refused). */
static int record_create(struct agent *a, struct httpc *h, const struct ipam_lease *l, const char *ip,
			 struct httpc_response *r)
{
	char path[600], err[256];
	json_t *pod = record_new(l);
	char *body;
	int rc;

	if (!pod)
		return -ENOMEM;
	(void)record_fill(a, pod, l, ip);
	body = json_dumps(pod, JSON_COMPACT);
	json_decref(pod);
	if (!body)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", l->owner.pod_namespace);
	rc = agent_write(a, h, "POST", path, body, strlen(body), r, err, sizeof(err));
	free(body);
	if (rc < 0) {
		LOG_INFO("pod %s/%s: record not written: %s; again next round", l->owner.pod_namespace,
			 l->owner.pod_name, err);
		return rc;
	}
	if (r->status == 201)
		return 1;
	if (r->status == 409) {
		httpc_response_free(r);
		return 0;
	}
	return -EPROTO;
}

/* The record of lease l exists (the cache has it, or a create found it):
 * GET it (to keep what others wrote in it), set what this node owns, PUT
 * it on the resourceVersion read, and its status to NAME/status when the
 * main resource kept the old one. */
static int record_update(struct agent *a, struct httpc *h, const struct ipam_lease *l, const char *ip)
{
	struct httpc_response r = { 0 };
	char path[1024], err[256];
	json_t *pod = NULL, *want = NULL;
	char *body = NULL;
	int rc;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", l->owner.pod_namespace,
		 l->owner.pod_name);
	rc = httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err));
	if (rc < 0)
		return rc;
	if (r.status == 200)
		pod = json_loads(r.body, 0, NULL);
	httpc_response_free(&r);
	if (!pod)
		pod = record_new(l);
	want = json_incref(record_fill(a, pod, l, ip));
	body = json_dumps(pod, JSON_COMPACT);
	rc = agent_write(a, h, "PUT", path, body, strlen(body), &r, err, sizeof(err));
	if (rc < 0)
		goto out;
	if (r.status != 200 && r.status != 201)
		goto refused;
	/* a record that existed kept its status: write ours to NAME/status */
	json_decref(pod);
	pod = json_loads(r.body, 0, NULL);
	if (!pod) {
		rc = -EPROTO;
		goto out;
	}
	if (!json_equal(json_object_get(pod, "status"), want)) {
		json_object_set(pod, "status", want);
		free(body);
		body = json_dumps(pod, JSON_COMPACT);
		httpc_response_free(&r);
		strncat(path, "/status", sizeof(path) - strlen(path) - 1);
		rc = agent_write(a, h, "PUT", path, body, strlen(body), &r, err, sizeof(err));
		if (rc < 0)
			goto out;
		if (r.status != 200)
			goto refused;
	}
	LOG_INFO("pod %s/%s: reported (%s on %s)", l->owner.pod_namespace, l->owner.pod_name, ip, a->o.node);
	goto out;
refused:
	LOG_WARN("pod %s/%s: the controller refused its record (HTTP %ld): %.300s", l->owner.pod_namespace,
		 l->owner.pod_name, r.status, r.body);
	rc = -EPROTO;
out:
	free(body);
	json_decref(want);
	json_decref(pod);
	httpc_response_free(&r);
	return rc;
}

static int upsert(struct agent *a, struct httpc *h, const struct ipam_lease *l)
{
	struct httpc_response r = { 0 };
	char ip[INET_ADDRSTRLEN];
	bool cached;
	int rc;

	format_ip(l->ip, ip);
	pthread_mutex_lock(&a->lock);
	cached = podcache_find(&a->pods, l->owner.pod_namespace, l->owner.pod_name) != NULL;
	pthread_mutex_unlock(&a->lock);
	if (cached)
		return record_update(a, h, l, ip);
	rc = record_create(a, h, l, ip, &r);
	if (rc == 1)
		LOG_INFO("pod %s/%s: reported (%s on %s)", l->owner.pod_namespace, l->owner.pod_name, ip,
			 a->o.node);
	else if (rc == -EPROTO)
		LOG_WARN("pod %s/%s: the controller refused its record (HTTP %ld): %.300s",
			 l->owner.pod_namespace, l->owner.pod_name, r.status, r.body);
	httpc_response_free(&r);
	if (rc == 0)
		return record_update(a, h, l, ip);
	return rc < 0 ? rc : 0;
}

/*
 * The records a round must create, in one request: POST
 * /weft/v1/apply?mode=create with a List of them.  Each item is created
 * as its own POST would create it (status included), and one whose Pod
 * exists fails 409 and is left as it is (not replaced: others' labels
 * stay), so it goes the way of an existing record.  The node's records
 * then reach the controller together, in one of its commits, and the
 * controller's tables derived from them (PodPeerSlices) are written once
 * for them, not once a pod.  An item refused otherwise (a full write
 * budget: 429) is tried again next round, as a refused POST is.  -1 when
 * the request as a whole failed (the caller goes one by one; a
 * controller without the path, 404, is not asked again); else 0, with
 * exists[i] set for each lease whose record must be updated.
 */
#define REPORT_BATCH_MAX 500	/* records a request (the API takes 1,000) */

static int record_create_batch(struct agent *a, struct httpc *h, const struct ipam_lease *l, size_t n,
			       bool *exists)
{
	struct httpc_response r = { 0 };
	char err[256], ip[INET_ADDRSTRLEN];
	json_t *items = json_array(), *list = NULL, *answer = NULL, *results;
	char *body = NULL;
	int rc = -1;

	if (!items)
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_t *pod = record_new(&l[i]);

		format_ip(l[i].ip, ip);
		if (!pod || json_array_append_new(items, pod))
			goto out;
		(void)record_fill(a, pod, &l[i], ip);
	}
	list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", items);
	body = list ? json_dumps(list, JSON_COMPACT) : NULL;
	if (!body || agent_write(a, h, "POST", "/weft/v1/apply?mode=create", body, strlen(body), &r, err,
				 sizeof(err)) < 0)
		goto out;
	if (r.status == 404 || r.status == 405) {
		LOG_INFO("the controller has no batched create (HTTP %ld): records go one by one", r.status);
		a->records_one_by_one = true;
		goto out;
	}
	if (r.status != 200 || !(answer = json_loadb(r.body, r.len, 0, NULL)))
		goto out;
	results = json_object_get(answer, "items");
	if (json_array_size(results) != n)
		goto out;
	for (size_t i = 0; i < n; i++) {
		json_t *it = json_array_get(results, i);
		json_int_t code = json_integer_value(json_object_get(it, "code"));

		format_ip(l[i].ip, ip);
		exists[i] = code == 409;
		if (code == 201)
			LOG_INFO("pod %s/%s: reported (%s on %s)", l[i].owner.pod_namespace, l[i].owner.pod_name,
				 ip, a->o.node);
		else if (code != 409)
			LOG_WARN("pod %s/%s: the controller refused its record (HTTP %lld): %.300s; again next "
				 "round", l[i].owner.pod_namespace, l[i].owner.pod_name, (long long)code,
				 json_string_value(json_object_get(it, "message")) ?: "");
	}
	rc = 0;
out:
	free(body);
	json_decref(answer);
	json_decref(list);
	json_decref(items);
	httpc_response_free(&r);
	return rc;
}

/* Report leases l[0..n) (missing or different records): those whose Pod
 * the cache does not have created together, the others (and those a
 * create found) updated one by one. */
static void records_report(struct agent *a, struct httpc *h, struct ipam_lease *l, size_t n)
{
	size_t fresh = 0, answered = 0, i;
	bool *exists = NULL;

	/* the leases whose Pod the cache lacks first: they are created */
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < n; i++)
		if (!podcache_find(&a->pods, l[i].owner.pod_namespace, l[i].owner.pod_name)) {
			struct ipam_lease t = l[fresh];

			l[fresh++] = l[i];
			l[i] = t;
		}
	pthread_mutex_unlock(&a->lock);
	if (fresh > 1 && !a->records_one_by_one)
		exists = calloc(fresh, sizeof(*exists));
	for (i = 0; exists && i < fresh && !atomic_load(&a->stopping); i += REPORT_BATCH_MAX) {
		size_t m = fresh - i < REPORT_BATCH_MAX ? fresh - i : REPORT_BATCH_MAX;

		if (record_create_batch(a, h, l + i, m, exists + i) < 0)
			break;
		answered = i + m;
	}
	for (size_t j = 0; j < n && !atomic_load(&a->stopping); j++) {
		char ip[INET_ADDRSTRLEN];

		if (j < answered) {	/* in a batch that was answered */
			format_ip(l[j].ip, ip);
			if (exists[j])
				(void)record_update(a, h, &l[j], ip);
			continue;
		}
		(void)upsert(a, h, &l[j]);
	}
	free(exists);
}

/* A Pod record of this node as the cache has it, copied out for the
 * writes made without the lock. */
struct seen_record {
	char ns[256], name[256];
	char container_id[IPAM_ID_MAX];
	in_addr_t ip;
};

static void record_copy(struct seen_record *r, const struct podcache_pod *p)
{
	snprintf(r->ns, sizeof(r->ns), "%s", p->ns->name);
	snprintf(r->name, sizeof(r->name), "%s", p->name);
	snprintf(r->container_id, sizeof(r->container_id), "%s", podcache_container_id(p));
	r->ip = p->ip;
}

/* DELETE the record when it is still this node's for container p's
 * (read first: the watch does not send updates that change nothing on
 * the network, so the cache's resourceVersion may be older), on the
 * resourceVersion read: a record rewritten meanwhile — by our own upsert
 * for a new container of the same pod, or by someone else — is not this
 * one, and stays. */
static int remove_record(struct agent *a, struct httpc *h, const struct seen_record *p)
{
	struct httpc_response r = { 0 };
	char path[1024], err[256], body[128];
	const char *rv = NULL, *node, *cid;
	json_t *now = NULL;
	int rc, n = 0;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", p->ns, p->name);
	rc = httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err));
	if (rc < 0)
		return rc;
	if (r.status == 404) {
		httpc_response_free(&r);
		return 0;
	}
	now = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
	httpc_response_free(&r);
	if (!now)
		return -EPROTO;
	node = obj_str(now, "spec.nodeName");
	cid = json_string_value(json_object_get(json_object_get(json_object_get(now, "metadata"),
								"annotations"), AGENT_ANN_CONTAINER));
	if (!node || strcmp(node, a->o.node) != 0 || !cid || strcmp(cid, p->container_id) != 0) {
		LOG_INFO("pod %s/%s: record changed since seen; kept", p->ns, p->name);
		json_decref(now);
		return 0;
	}
	rv = obj_str(now, "metadata.resourceVersion");
	if (rv)
		n = snprintf(body, sizeof(body), "{\"preconditions\":{\"resourceVersion\":\"%.40s\"}}", rv);
	json_decref(now);
	rc = agent_write(a, h, "DELETE", path, n ? body : NULL, (size_t)n, &r, err, sizeof(err));
	if (rc == 0 && r.status == 409) {
		LOG_INFO("pod %s/%s: record changed since seen; kept", p->ns, p->name);
		httpc_response_free(&r);
		return 0;
	}
	if (rc == 0 && r.status != 200 && r.status != 404)
		rc = -EPROTO;
	if (rc == 0)
		LOG_INFO("pod %s/%s: record removed", p->ns, p->name);
	httpc_response_free(&r);
	return rc;
}

/*
 * The Node's annotations carry what the agent has applied:
 *   weft.io/applied-revision  NetNamespaces applied up to this revision
 *                             (weftctl pod-network waits for every node)
 *   weft.io/applied-revisions {"netnamespaces": R, "services": R,
 *                             "endpoints": R, "networkpolicies": R}: each
 *                             kind applied to the maps up to R (a change
 *                             written at R is in this node's maps once
 *                             its kind is >= R)
 *   weft.io/service-map-full  service map writes refused for lack of room
 *   weft.io/drops             {"reason": packets, ...} from weft_drops
 *   weft.io/conntrack         weft_ct as the last sweep found it:
 *                             {"entries", "capacity", "perClientMax",
 *                             "clients", "topClient", "topClientConnections",
 *                             "expiredPairs", "orphans" (totals since start),
 *                             "sweepMicros"}
 *   weft.io/ipam              lease counts and quarantined lease files
 *                             (lease_report.c)
 * written when they change (drops, conntrack, policy and ipam at most every
 * DROPS_PERIOD_S; the applied revisions at once after a quiet period,
 * else when it has passed: a burst of changes costs the controller one
 * write a node a period, not one a change), with a conditional PUT of
 * the Node as the last PUT answered (a.node_written; read with a GET
 * only at the first report, or after a 409 says someone else wrote it:
 * a report is one request, where a GET and a PUT each cost the
 * controller about as much).  The period is a millisecond a node of the
 * cluster, from 100 ms to 5 s: the reports of all nodes together come at
 * most about a thousand a second up to 5,000 nodes (a change reaches
 * every node's annotation within 100 ms in a small lab, within a second
 * at a thousand nodes).
 */
#define DROPS_PERIOD_S 5
#define REVISIONS_PERIOD_MIN_MS 100
#define REVISIONS_PERIOD_MAX_MS 5000
/* the policy log's annotation: at most every LOG_PERIOD_S */
#define LOG_PERIOD_S 2

/* caller holds the lock */
static char *applied_kinds_json(struct agent *a)
{
	json_t *o = json_object();
	char *s;

	if (!o)
		return NULL;
	if (a->netns_synced)
		json_object_set_new(o, "netnamespaces", json_integer(a->applied_rev));
	if (a->services_synced)
		json_object_set_new(o, "services", json_integer(a->svc_applied_rev));
	if (a->slices_synced)
		json_object_set_new(o, "endpointslices", json_integer(a->slices_applied_rev));
	if (a->np_applied_rev)
		json_object_set_new(o, "networkpolicies", json_integer(a->np_applied_rev));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

static char *drops_json(struct agent *a)
{
	uint64_t d[WEFT_DROP_MAX];
	json_t *o = json_object();
	char *s;
	int i;

	if (!o || datapath_drops(a->dp, d) < 0) {
		json_decref(o);
		return NULL;
	}
	for (i = 1; i < WEFT_DROP_MAX; i++)
		if (d[i])
			json_object_set_new(o, datapath_drop_names[i], json_integer((json_int_t)d[i]));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

static char *conntrack_json(struct agent *a)
{
	struct conntrack_stats st;
	uint64_t expired, orphans;
	char top[INET_ADDRSTRLEN] = "";
	json_t *o;
	char *s;

	pthread_mutex_lock(&a->ct_lock);
	if (!a->ct_swept) {
		pthread_mutex_unlock(&a->ct_lock);
		return NULL;
	}
	st = a->ct_stats;
	expired = a->ct_expired_total;
	orphans = a->ct_orphans_total;
	pthread_mutex_unlock(&a->ct_lock);
	if (st.top_source)
		inet_ntop(AF_INET, &st.top_source, top, sizeof(top));
	o = json_pack("{s:I,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I}",
		      "entries", (json_int_t)st.entries, "capacity", (json_int_t)st.capacity,
		      "perClientMax", (json_int_t)datapath_ct_source_max(a->dp),
		      "clients", (json_int_t)st.sources, "topClient", top,
		      "topClientConnections", (json_int_t)st.top_source_connections,
		      "expiredPairs", (json_int_t)expired, "orphans", (json_int_t)orphans,
		      "sweepMicros", (json_int_t)st.duration_us);
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* NetworkPolicy on this node: what the compiler holds and wrote, how full
 * the policy maps are, and the connections tracked for policy. */
static char *policy_json(struct agent *a)
{
	struct policy_stats ps;
	struct conntrack_stats ct;
	uint32_t rules_cap, ct_cap;
	uint64_t expired;
	json_t *o;
	char *s;

	policy_stats(a->policy, &ps);
	datapath_policy_capacities(a->dp, &rules_cap, &ct_cap);
	pthread_mutex_lock(&a->ct_lock);
	ct = a->pct_stats;
	expired = a->pct_expired_total;
	pthread_mutex_unlock(&a->ct_lock);
	o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		      "policies", (json_int_t)ps.policies, "identities", (json_int_t)ps.identities,
		      "ruleSets", (json_int_t)ps.classes, "rules", (json_int_t)ps.rules,
		      "rulesCapacity", (json_int_t)rules_cap, "cidrs", (json_int_t)ps.cidrs,
		      "mapFull", (json_int_t)ps.map_full, "ignoredPolicies", (json_int_t)ps.bad_policies,
		      "connections", (json_int_t)ct.entries, "connectionsCapacity", (json_int_t)ct_cap,
		      "perClientMax", (json_int_t)datapath_policy_ct_source_max(a->dp),
		      "expiredConnections", (json_int_t)expired);
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* AGENT_ANN_FLOWS's JSON (malloc'ed), or NULL when the node serves none */
static char *flows_json(struct agent *a)
{
	struct sockaddr_in sa;
	json_t *o;
	char url[96], *s;

	if (!a->flowserve)
		return NULL;
	if (metrics_address_parse(a->o.flows_address, &sa) < 0)
		return NULL;
	if (sa.sin_addr.s_addr == INADDR_ANY)	/* every address: the node's is one */
		snprintf(url, sizeof(url), "https://%s:%u", a->o.node_ip_str, ntohs(sa.sin_port));
	else
		snprintf(url, sizeof(url), "https://%s", a->o.flows_address);
	o = json_pack("{s:s, s:s}", "endpoint", url, "pin", flowserve_pin(a->flowserve));
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

static void report_node_status(struct agent *a, struct httpc *h)
{
	struct httpc_response r = { 0 };
	char path[512], err[256], rev[24];
	json_t *node = NULL, *md, *ann;
	char *drops = NULL, *body = NULL, *ct = NULL, *pol = NULL, *plog = NULL, *ipam = NULL, *flows = NULL;
	uint64_t log_seq = 0;
	bool send_log, send_ipam, send_flows;
	char *kinds = NULL, full[24];
	int64_t applied;
	uint64_t map_full;
	bool send_drops, send_kinds, send_ct, send_pol, revs_changed, revs_due;
	time_t now = time(NULL);
	int64_t now_ms = monotime_ms(), period_ms;

	pthread_mutex_lock(&a->lock);
	applied = a->netns_synced ? a->applied_rev : -1;
	kinds = applied_kinds_json(a);
	map_full = service_map_full_count(a);
	period_ms = (int64_t)nodecache_count(&a->nodes);
	pthread_mutex_unlock(&a->lock);
	if (period_ms < REVISIONS_PERIOD_MIN_MS)
		period_ms = REVISIONS_PERIOD_MIN_MS;
	if (period_ms > REVISIONS_PERIOD_MAX_MS)
		period_ms = REVISIONS_PERIOD_MAX_MS;
	drops = drops_json(a);
	send_drops = drops && (!a->reported_drops || strcmp(drops, a->reported_drops) != 0) &&
		     now - a->drops_at >= DROPS_PERIOD_S;
	send_kinds = kinds && (!a->reported_kinds || strcmp(kinds, a->reported_kinds) != 0);
	ct = conntrack_json(a);
	send_ct = ct && (!a->reported_ct || strcmp(ct, a->reported_ct) != 0) &&
		  now - a->drops_at >= DROPS_PERIOD_S;
	pol = policy_json(a);
	send_pol = pol && (!a->reported_policy || strcmp(pol, a->reported_policy) != 0) &&
		   now - a->drops_at >= DROPS_PERIOD_S;
	/* its own clock: the lease count changes with every ADD and DEL */
	ipam = lease_report_json(a);
	send_ipam = ipam && (!a->reported_ipam || strcmp(ipam, a->reported_ipam) != 0) &&
		    now - a->ipam_at >= DROPS_PERIOD_S;
	flows = flows_json(a);
	send_flows = flows && (!a->reported_flows || strcmp(flows, a->reported_flows) != 0);
	plog = policy_log_json(a->plog, &log_seq);
	send_log = plog && log_seq != a->reported_log_seq && now - a->log_at >= LOG_PERIOD_S;
	if (!send_log) {
		free(plog);
		plog = NULL;
	}
	revs_changed = (applied >= 0 && applied != a->reported_rev) || send_kinds;
	revs_due = revs_changed && now_ms - a->revs_at_ms >= period_ms;
	if (revs_changed && !revs_due)
		a->report_due_ms = a->revs_at_ms + period_ms;	/* the thread wakes then */
	if (!revs_due && !send_drops && !send_ct && !send_pol && !send_log && !send_ipam && !send_flows &&
	    map_full == a->reported_map_full)
		goto out;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", a->o.node);
	/* the Node as our last PUT left it, unless someone wrote it since (the
	 * PUT is conditional: a 409 says so, and the next round reads it) */
	node = a->node_written;
	a->node_written = NULL;
	if (!node && (httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err)) < 0 || r.status != 200 ||
		      !(node = json_loads(r.body, 0, NULL))))
		goto out;
	httpc_response_free(&r);
	md = json_object_get(node, "metadata");
	ann = json_object_get(md, "annotations");
	if (!json_is_object(ann)) {
		ann = json_object();
		json_object_set_new(md, "annotations", ann);
	}
	if (applied >= 0) {
		snprintf(rev, sizeof(rev), "%lld", (long long)applied);
		json_object_set_new(ann, AGENT_ANN_APPLIED, json_string(rev));
	}
	if (drops)
		json_object_set_new(ann, AGENT_ANN_DROPS, json_string(drops));
	if (ct)
		json_object_set_new(ann, AGENT_ANN_CONNTRACK, json_string(ct));
	if (pol)
		json_object_set_new(ann, AGENT_ANN_POLICY, json_string(pol));
	if (plog)
		json_object_set_new(ann, AGENT_ANN_POLICY_LOG, json_string(plog));
	if (ipam)
		json_object_set_new(ann, AGENT_ANN_IPAM, json_string(ipam));
	if (flows)
		json_object_set_new(ann, AGENT_ANN_FLOWS, json_string(flows));
	if (kinds)
		json_object_set_new(ann, AGENT_ANN_APPLIED_KINDS, json_string(kinds));
	snprintf(full, sizeof(full), "%llu", (unsigned long long)map_full);
	json_object_set_new(ann, AGENT_ANN_MAP_FULL, json_string(full));
	body = json_dumps(node, JSON_COMPACT);	/* carries resourceVersion: conditional */
	if (!body || agent_write(a, h, "PUT", path, body, strlen(body), &r, err, sizeof(err)) < 0)
		goto out;
	if (r.status == 200) {
		a->node_written = json_loadb(r.body, r.len, 0, NULL);
		a->reported_rev = applied;
		a->reported_map_full = map_full;
		a->revs_at_ms = now_ms;
		a->report_due_ms = 0;
		if (kinds) {
			free(a->reported_kinds);
			a->reported_kinds = kinds;
			kinds = NULL;
		}
		if (drops) {
			free(a->reported_drops);
			a->reported_drops = drops;
			drops = NULL;
			a->drops_at = now;
		}
		if (ct) {
			free(a->reported_ct);
			a->reported_ct = ct;
			ct = NULL;
		}
		if (pol) {
			free(a->reported_policy);
			a->reported_policy = pol;
			pol = NULL;
		}
		if (plog) {
			a->reported_log_seq = log_seq;
			a->log_at = now;
		}
		if (ipam) {
			free(a->reported_ipam);
			a->reported_ipam = ipam;
			ipam = NULL;
			a->ipam_at = now;
		}
		if (flows) {
			free(a->reported_flows);
			a->reported_flows = flows;
			flows = NULL;
		}
	} else if (r.status == 409) {
		report_kick(a);		/* someone wrote the Node meanwhile: again */
	}
out:
	free(body);
	free(flows);
	free(ipam);
	free(plog);
	free(pol);
	free(ct);
	free(drops);
	free(kinds);
	json_decref(node);
	httpc_response_free(&r);
}

/* One Service's annotation weft.io/unprogrammed.NODE set to msg, or
 * removed when msg is "".  0 done (or the Service is gone), -1 retry. */
static int report_service(struct agent *a, struct httpc *h, const struct service_report *sr)
{
	struct httpc_response r = { 0 };
	char path[800], err[256], key[320];
	json_t *svc = NULL, *md, *ann;
	char *body = NULL;
	int rc = -1;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/%s", sr->ns, sr->name);
	snprintf(key, sizeof(key), "%s%s", AGENT_ANN_UNPROGRAMMED, a->o.node);
	if (httpc_request(h, "GET", path, NULL, 0, &r, err, sizeof(err)) < 0)
		goto out;
	if (r.status == 404) {
		rc = 0;
		goto out;
	}
	if (r.status != 200 || !(svc = json_loads(r.body, 0, NULL)))
		goto out;
	httpc_response_free(&r);
	md = json_object_get(svc, "metadata");
	ann = json_object_get(md, "annotations");
	if (!json_is_object(ann)) {
		if (!sr->msg[0]) {
			rc = 0;
			goto out;
		}
		ann = json_object();
		json_object_set_new(md, "annotations", ann);
	}
	if (sr->msg[0])
		json_object_set_new(ann, key, json_string(sr->msg));
	else if (json_object_del(ann, key) < 0) {
		rc = 0;		/* nothing to clear */
		goto out;
	}
	body = json_dumps(svc, JSON_COMPACT);
	if (!body || agent_write(a, h, "PUT", path, body, strlen(body), &r, err, sizeof(err)) < 0)
		goto out;
	rc = r.status == 200 || r.status == 404 ? 0 : -1;
out:
	if (rc < 0)
		LOG_WARN("service %s/%s: writing %s: %s", sr->ns, sr->name, key,
			 r.status ? "HTTP error" : err);
	free(body);
	json_decref(svc);
	httpc_response_free(&r);
	return rc;
}

static void report_services(struct agent *a, struct httpc *h)
{
	struct service_report *v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&a->lock);
	(void)service_reports_take(a, &v, &n);
	pthread_mutex_unlock(&a->lock);
	for (size_t i = 0; i < n && !atomic_load(&a->stopping); i++) {
		if (report_service(a, h, &v[i]) == 0)
			continue;
		pthread_mutex_lock(&a->lock);
		service_report_failed(a, &v[i]);
		pthread_mutex_unlock(&a->lock);
	}
	free(v);
}

/* True when the cache has lease l's Pod as this node reported it: its
 * address, this node, its container. */
static bool record_matches(struct agent *a, const struct ipam_lease *l)
{
	const struct podcache_pod *p;

	if (!l->owner.pod_name[0] || !l->owner.pod_namespace[0])
		return true;	/* no Pod to report */
	p = podcache_find(&a->pods, l->owner.pod_namespace, l->owner.pod_name);
	return p && p->ip == l->ip && strcmp(p->node->name, a->o.node) == 0 &&
	       strcmp(podcache_container_id(p), l->owner.container_id) == 0;
}

/* One round: the leases whose record is missing or differs are reported,
 * the records of this node whose container holds no lease deleted.  By
 * the cache's indexes: O(leases + this node's pods), whatever the
 * cluster's size. */
static void round_once(struct agent *a, struct httpc *h)
{
	struct lease_list ll = { 0 };
	struct u64map leased_ids = { 0 };
	struct seen_record *gone = NULL, *held = NULL;
	const struct podcache_group *mine;
	const struct podcache_pod *p;
	size_t i, ngone = 0, nheld = 0, nmine;

	if (ipam_foreach(a->ipam, collect, &ll) < 0)
		goto out;
	/* the containers that hold a lease: a record of one of them is not
	 * gone, whatever address it shows yet (a record is written in two
	 * steps, its status last, and the round may see the first) */
	for (i = 0; i < ll.n; i++)
		if (u64map_put(&leased_ids, hmap_hash_str(HMAP_HASH_SEED, ll.v[i].owner.container_id), 1) < 0)
			goto out;
	pthread_mutex_lock(&a->lock);
	if (!a->pods_synced || !a->controller_up) {
		pthread_mutex_unlock(&a->lock);
		goto out;
	}
	/* keep in ll only the leases whose record is missing or differs */
	for (i = 0; i < ll.n;) {
		if (record_matches(a, &ll.v[i]))
			ll.v[i] = ll.v[--ll.n];
		else
			i++;
	}
	mine = podcache_node_find(&a->pods, a->o.node);
	nmine = mine ? mine->npods : 0;
	gone = calloc(nmine ? nmine : 1, sizeof(*gone));
	held = calloc(nmine ? nmine : 1, sizeof(*held));
	for (p = gone && held ? podcache_group_first(mine) : NULL; p; p = podcache_group_next(mine, p)) {
		const char *cid = podcache_container_id(p);
		bool leased;

		if (!cid[0])
			continue;
		leased = u64map_get(&leased_ids, hmap_hash_str(HMAP_HASH_SEED, cid), NULL);
		if (!leased && p->ip && ipam_is_quarantined(a->ipam, p->ip))
			record_copy(&held[nheld++], p);	/* its lease file is quarantined: not gone */
		else if (!leased)
			record_copy(&gone[ngone++], p);
	}
	pthread_mutex_unlock(&a->lock);
	for (i = 0; i < nheld && !atomic_load(&a->stopping); i++)
		(void)pod_settle_quarantined(a, held[i].ns, held[i].name, held[i].container_id,
					     held[i].ip);
	records_report(a, h, ll.v, ll.n);
	for (i = 0; i < ngone && !atomic_load(&a->stopping); i++)
		(void)remove_record(a, h, &gone[i]);
	report_node_status(a, h);
	report_services(a, h);
out:
	free(gone);
	free(held);
	free(ll.v);
	u64map_free(&leased_ids);
}

static void *report_thread(void *arg)
{
	struct agent *a = arg;
	unsigned seen = 0;

	while (!atomic_load(&a->stopping)) {
		struct timespec ts;
		int64_t wait_ms = REPORT_PERIOD_S * 1000;

		/* a held-back write of the applied revisions: due sooner */
		if (a->report_due_ms) {
			int64_t left = a->report_due_ms - monotime_ms();

			wait_ms = left < 1 ? 1 : left < wait_ms ? left : wait_ms;
		}
		pthread_mutex_lock(&a->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += wait_ms / 1000;
		ts.tv_nsec += (wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (a->kicks == seen && !atomic_load(&a->stopping))
			if (pthread_cond_timedwait(&a->kick, &a->lock, &ts) == ETIMEDOUT)
				break;
		seen = a->kicks;
		pthread_mutex_unlock(&a->lock);
		if (atomic_load(&a->stopping))
			break;
		/* a .bad lease file an operator deleted: its address back in
		 * the pool within a period, and reported by this round */
		(void)lease_report_refresh(a);
		round_once(a, a->http_report);
	}
	return NULL;
}

int report_start(struct agent *a)
{
	int rc;

	a->reported_rev = -1;
	a->http_report = agent_http(a);
	if (!a->http_report)
		return -EINVAL;
	rc = pthread_create(&a->t_report, NULL, report_thread, a);
	return -rc;
}

void report_stop(struct agent *a)
{
	pthread_mutex_lock(&a->lock);
	pthread_cond_broadcast(&a->kick);
	pthread_mutex_unlock(&a->lock);
	if (a->http_report)
		httpc_cancel(a->http_report);
	if (a->t_report)
		pthread_join(a->t_report, NULL);
	httpc_destroy(a->http_report);
	a->http_report = NULL;
	free(a->reported_drops);
	a->reported_drops = NULL;
	free(a->reported_ct);
	a->reported_ct = NULL;
	free(a->reported_policy);
	a->reported_policy = NULL;
	free(a->reported_kinds);
	a->reported_kinds = NULL;
	free(a->reported_ipam);
	a->reported_ipam = NULL;
	free(a->reported_flows);
	a->reported_flows = NULL;
	json_decref(a->node_written);
	a->node_written = NULL;
}
