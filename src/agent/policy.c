/*
 * policy.c — the NetworkPolicy compiler (policy.h says what it writes and
 * in which order; bpf/weft_bpf.h, "NetworkPolicy", what the programs do
 * with it).
 *
 * State, all under p->lock:
 *
 *	namespaces  name -> labels (kubernetes.io/metadata.name added)
 *	pods        ns/name -> labels, spec, IP, identity (latest) and the
 *	            identity last written to weft_ipcache
 *	identities  canonical (ns, labels, named ports) -> number; each with
 *	            a representative pod's labels and spec (all its pods have
 *	            the same), counted by pods and by local endpoints
 *	policies    ns/name -> parsed (model/netpol.h), a rule number for
 *	            the policy log, and for every peer of every rule the
 *	            identities it matches (the match cache)
 *	classes     identity of a local pod -> the rule set written for it
 *	            (keys, and the prefixes of its ipBlocks)
 *	locals      IP of a pod of this node -> its ns/name
 *
 * Invariants:
 *  1. An identity number is never reused, so a rule naming a number that
 *     is gone matches nothing, and weft_ipcache never names an identity
 *     whose rules are half-made (pods get their new number in step 4,
 *     after the rule sets).
 *  2. The match cache of a peer holds exactly the identities it matches,
 *     once p->matched is true and nothing is pending: a new identity is
 *     matched against every peer before the rule sets are computed, a
 *     changed policy against every identity, and a namespace whose
 *     labels changed makes every peer match again.
 *  3. A class's keys are sorted (pkey_cmp, over struct weft_policy_key
 *     with policy_id 0), and its prefixes too (pcidr_cmp), so two sets
 *     compare in one pass (policy_keys.c makes and compares them).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "agent/datapath.h"
#include "agent/policy.h"
#include "agent/policy_keys.h"
#include "lib/u64map.h"
#include "model/model.h"
#include "model/netpol.h"

#define NS_NAME_LABEL "kubernetes.io/metadata.name"

struct idlist {
	uint32_t *ids;
	size_t n, cap;
	size_t applied;		/* a match list: its first ids, those the rule
				 * sets hold keys for (a policy that stays as
				 * it is only appends to its lists) */
};

struct ident {
	uint32_t id;
	char *key;
	char *ns;
	json_t *labels;		/* a pod's, borrowed by netpol views (owned ref) */
	json_t *spec;
	size_t refs;		/* pods */
	bool pending;		/* not yet matched against the peers */
};

struct ppod {
	char *ns, *name;
	in_addr_t ip;
	struct ident *ident;
	uint32_t written;	/* identity in weft_ipcache (0: none yet) */
	size_t queued;		/* 1 + its place in p->ipq, 0 when not there */
	bool peer;		/* from the PodPeerSlices (policy_peer_set), not
				 * the Pods watch: each list sweeps its own */
	bool seen;
};

struct pns {
	char *name;
	json_t *labels;
	uint32_t log;		/* WEFT_EP_F_LOG_*: its annotation POLICY_LOG_ANNOTATION */
	bool seen;
};

struct ppol {
	char *ns, *name;
	uint32_t ref;		/* weft_policy_value.rule */
	char rv[24];		/* metadata.resourceVersion applied ("" none) */
	uint32_t log;		/* WEFT_EP_F_LOG_*: its annotation POLICY_LOG_ANNOTATION */
	struct netpol np;
	bool ok;		/* parsed */
	bool dirty;		/* match cache to recompute */
	bool touched;		/* since the last apply: its spec or what its
				 * peers match changed (its classes compute again) */
	bool any_named_egress;	/* an egress rule to every peer on a named port:
				 * it depends on every identity's ports */
	bool pod_peers;		/* a rule names pods as peers, or an egress rule a
				 * named port: names_pod_peers (counted in
				 * p->pod_peer_pols) */
	bool seen;
	struct idlist grew;	/* since the last apply, unless touched: new
				 * identities its rules give keys to (its
				 * classes add just those keys) */
	struct idlist *match[2];	/* per direction: one per (rule, peer) */
	size_t *base[2];		/* per direction: rule -> first index in match */
};

/* One found in the map by a restarted agent, with its rule set. */
struct acidr {
	uint32_t policy_id;
	struct pcidr c;
};

struct pclass {
	uint32_t ident;
	uint32_t policy_id;	/* 0: no rule set (not isolated, or refused) */
	uint32_t flags;		/* WEFT_EP_F_ISOLATE_*, WEFT_EP_F_POLICY_FULL */
	struct pkey *keys;
	size_t n;
	struct pcidr *cidrs;
	size_t ncidrs;
	struct ppol **sel;	/* the policies that selected it when computed */
	size_t nsel, cap_sel;
	bool used;
	bool computed;		/* keys and sel are those of a class_compute */
};

struct local {
	in_addr_t ip;
	char *ns, *name;
	bool synced;		/* its endpoint is known to have policy_id, flags */
	uint32_t policy_id, flags;
};

struct policy {
	pthread_mutex_t lock;
	struct datapath *dp;

	struct pns **nss;
	size_t nns, cap_ns;
	struct u64map ns_index;		/* hash(name) -> index */
	struct ppod **pods;
	size_t npods, cap_pods;
	struct u64map pod_index;	/* hash(ns/name) -> index */
	struct u64map ip_index;		/* pod IP -> index (the last pod set with it) */
	/* the pods whose weft_ipcache identity may be behind (written !=
	 * ident), for ipcache_update: only those, not every pod; all of them
	 * when a queueing found no memory (ipq_all) */
	struct ppod **ipq;
	size_t nipq, cap_ipq;
	bool ipq_all;
	struct ident **ids;
	size_t nids, cap_ids;
	struct u64map id_index;		/* hash(key) -> index */
	struct u64map id_by_num;	/* id -> index */
	struct ppol **pols;
	size_t npols, cap_pols;
	struct u64map pol_index;	/* hash(ns/name) -> index */
	struct pclass *classes;
	size_t nclasses, cap_classes;
	struct local *locals;
	size_t nlocals, cap_locals;
	struct u64map local_index;	/* IP -> index in locals */
	struct u64map class_index;	/* identity -> index in classes */

	uint32_t next_ident, next_policy_id, next_rule;
	/* what a restarted agent found in the maps (policy_adopt), until its
	 * first apply has taken it over */
	bool adopting;
	struct u64map adopt_ip;		/* pod IP -> identity in weft_ipcache */
	struct u64map adopt_ep;		/* local pod IP -> policy_id << 32 | flags */
	struct pkey *adopt_keys;	/* weft_policy, policy_id in k.policy_id */
	size_t nadopt_keys, cap_adopt_keys;
	struct acidr *adopt_cidrs;	/* weft_policy_cidrs */
	size_t nadopt_cidrs, cap_adopt_cidrs;
	/* the rule numbers a restarted agent left in weft_policy (values it
	 * did not rewrite) -> this agent's numbers for the same policies, for
	 * policy_rule_name; old numbers are never given again */
	struct u64map rule_alias;
	bool listing[POLICY_KINDS], listed[POLICY_KINDS];
	size_t pod_peer_pols;		/* policies with pod_peers: policy_needs_pods */
	bool rematch_all;		/* a namespace's labels changed */
	bool classes_all;		/* every class computes again at the next apply */
	bool removed_ids;		/* match lists hold numbers now gone */
	struct idlist gone;		/* identities gone since the last apply:
				 * their keys leave every set */
	struct policy_stats st;
};

/* ---- small helpers ---- */

static uint64_t hash2(const char *a, const char *b)
{
	char buf[600];
	int n = snprintf(buf, sizeof(buf), "%s/%s", a, b);

	return u64map_hash_bytes(buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static uint64_t hash1(const char *a)
{
	return u64map_hash_bytes(a, strlen(a));
}

/* Point an index entry that exists at its element's new place (a swap
 * removal moved it): a replacement, which allocates nothing. */
static void index_move(struct u64map *m, uint64_t key, size_t i)
{
	if (u64map_put(m, key, i) < 0)
		abort();	/* the key is there: put only replaces */
}

static int idlist_add(struct idlist *l, uint32_t id)
{
	if (policy_grow((void **)&l->ids, &l->cap, l->n, sizeof(*l->ids)) < 0)
		return -ENOMEM;
	l->ids[l->n++] = id;
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort l and drop its repeats, for idlist_has. */
static void idlist_sort(struct idlist *l)
{
	size_t w = 0;

	if (l->n == 0)
		return;
	qsort(l->ids, l->n, sizeof(*l->ids), u32_cmp);
	for (size_t i = 1; i < l->n; i++)
		if (l->ids[i] != l->ids[w])
			l->ids[++w] = l->ids[i];
	l->n = w + 1;
}

/* Is id in l (sorted)? */
static bool idlist_has(const struct idlist *l, uint32_t id)
{
	return l->n && bsearch(&id, l->ids, l->n, sizeof(*l->ids), u32_cmp);
}

/* The log flags an object's POLICY_LOG_ANNOTATION asks for: "all" (or
 * "true"), "deny", "allow"; anything else (or none) logs nothing. */
static uint32_t log_flags(const json_t *obj)
{
	const char *v = json_string_value(json_object_get(obj_at(obj, "metadata.annotations"),
							  POLICY_LOG_ANNOTATION));

	if (!v)
		return 0;
	if (strcmp(v, "all") == 0 || strcmp(v, "true") == 0)
		return WEFT_EP_F_LOG_ALLOW | WEFT_EP_F_LOG_DENY;
	if (strcmp(v, "deny") == 0)
		return WEFT_EP_F_LOG_DENY;
	if (strcmp(v, "allow") == 0)
		return WEFT_EP_F_LOG_ALLOW;
	return 0;
}

/* ---- namespaces ---- */

static struct pns *ns_find(struct policy *p, const char *name, size_t *at)
{
	uint64_t i;

	if (!u64map_get(&p->ns_index, hash1(name), &i) || strcmp(p->nss[i]->name, name) != 0)
		return NULL;
	if (at)
		*at = (size_t)i;
	return p->nss[i];
}

/* The labels a namespace's pods are matched with (borrowed). */
static const json_t *ns_labels(struct policy *p, const char *name)
{
	struct pns *n = ns_find(p, name, NULL);

	return n ? n->labels : NULL;
}

void policy_namespace_set(struct policy *p, const json_t *obj)
{
	const char *name = obj_name(obj);
	const json_t *given = obj_at(obj, "metadata.labels");
	json_t *labels;
	struct pns *n;

	if (!name)
		return;
	labels = json_is_object(given) ? json_deep_copy(given) : json_object();
	if (!labels)
		return;
	json_object_set_new(labels, NS_NAME_LABEL, json_string(name));
	pthread_mutex_lock(&p->lock);
	n = ns_find(p, name, NULL);
	if (n) {
		n->seen = true;
		if (n->log != log_flags(obj))
			p->classes_all = true;
		n->log = log_flags(obj);
		if (json_equal(n->labels, labels)) {
			json_decref(labels);
			goto out;
		}
		json_decref(n->labels);
		n->labels = labels;
		p->rematch_all = true;
		goto out;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name)) ||
	    policy_grow((void **)&p->nss, &p->cap_ns, p->nns, sizeof(*p->nss)) < 0 ||
	    u64map_put(&p->ns_index, hash1(name), p->nns) < 0) {
		if (n)
			free(n->name);
		free(n);
		json_decref(labels);
		goto out;
	}
	n->labels = labels;
	n->log = log_flags(obj);
	n->seen = true;
	p->nss[p->nns++] = n;
	p->classes_all = true;
	p->rematch_all = true;
out:
	pthread_mutex_unlock(&p->lock);
}

static void ns_remove_at(struct policy *p, size_t i)
{
	struct pns *n = p->nss[i];

	u64map_del(&p->ns_index, hash1(n->name));
	p->nss[i] = p->nss[--p->nns];
	if (i < p->nns)
		index_move(&p->ns_index, hash1(p->nss[i]->name), i);
	json_decref(n->labels);
	free(n->name);
	free(n);
	p->rematch_all = true;
}

void policy_namespace_del(struct policy *p, const char *name)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	if (ns_find(p, name, &i))
		ns_remove_at(p, i);
	pthread_mutex_unlock(&p->lock);
}

/* ---- identities ---- */

/* The canonical text of what policies can tell of a pod: its namespace,
 * its labels (sorted) and its named ports (as containers list them: the
 * port resolution reads the same spec).  Malloc'ed. */
static char *ident_key(const char *ns, const json_t *labels, const json_t *ports)
{
	/* no labels: "{}", as json_dumps writes an empty object */
	char *l = labels ? json_dumps(labels, JSON_SORT_KEYS | JSON_COMPACT) : strdup("{}");
	char *q = ports ? json_dumps(ports, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
	char *key = NULL;

	if (l && asprintf(&key, "%s\n%s\n%s", ns, l, q ? q : "[]") < 0)
		key = NULL;
	free(l);
	free(q);
	return key;
}

/* The named ports of a spec, for the key: [[name, proto, port]...]. */
static json_t *named_ports(const json_t *spec)
{
	json_t *out = json_array();
	const json_t *c, *port;
	size_t i, j;

	json_array_foreach(json_object_get(spec, "containers"), i, c)
		json_array_foreach(json_object_get(c, "ports"), j, port) {
			const char *name = json_string_value(json_object_get(port, "name"));
			const char *proto = json_string_value(json_object_get(port, "protocol"));

			if (name)
				json_array_append_new(out, json_pack("[s s I]", name, proto ? proto : "TCP",
							   json_integer_value(json_object_get(port, "containerPort"))));
		}
	return out;
}

static struct ident *ident_by_num(struct policy *p, uint32_t id)
{
	uint64_t i;

	return u64map_get(&p->id_by_num, id, &i) ? p->ids[i] : NULL;
}

/* The identity for (ns, labels, spec), made when new (numbered want when
 * that number is free and was the pod's before a restart, else the next);
 * its count taken. */
static struct ident *ident_get(struct policy *p, const char *ns, const json_t *labels, const json_t *spec,
			       uint32_t want)
{
	json_t *ports = named_ports(spec);
	char *key = ident_key(ns, labels, ports);
	struct ident *id = NULL;
	uint64_t h, i;

	json_decref(ports);
	if (!key)
		return NULL;
	h = hash1(key);
	if (u64map_get(&p->id_index, h, &i) && strcmp(p->ids[i]->key, key) == 0) {
		free(key);
		p->ids[i]->refs++;
		return p->ids[i];
	}
	id = calloc(1, sizeof(*id));
	if (!id || !(id->ns = strdup(ns)) ||
	    policy_grow((void **)&p->ids, &p->cap_ids, p->nids, sizeof(*p->ids)) < 0 ||
	    u64map_put(&p->id_index, h, p->nids) < 0)
		goto fail;
	id->id = want >= WEFT_ID_FIRST && want < WEFT_ID_CIDR && !ident_by_num(p, want) ? want
										   : p->next_ident++;
	if (u64map_put(&p->id_by_num, id->id, p->nids) < 0) {
		u64map_del(&p->id_index, h);
		goto fail;
	}
	id->key = key;
	id->labels = labels ? json_deep_copy(labels) : json_object();
	id->spec = spec ? json_deep_copy(spec) : json_object();
	id->refs = 1;
	id->pending = true;
	p->ids[p->nids++] = id;
	return id;
fail:
	if (id)
		free(id->ns);
	free(id);
	free(key);
	return NULL;
}

static void ident_put(struct policy *p, struct ident *id)
{
	uint64_t i;

	if (!id || --id->refs > 0)
		return;
	if (!u64map_get(&p->id_by_num, id->id, &i))
		return;
	/* its keys leave every set at the next apply */
	if (idlist_add(&p->gone, id->id) < 0)
		p->classes_all = true;
	u64map_del(&p->id_index, hash1(id->key));
	u64map_del(&p->id_by_num, id->id);
	p->ids[i] = p->ids[--p->nids];
	if (i < p->nids) {
		index_move(&p->id_index, hash1(p->ids[i]->key), i);
		index_move(&p->id_by_num, p->ids[i]->id, i);
	}
	json_decref(id->labels);
	json_decref(id->spec);
	free(id->key);
	free(id->ns);
	free(id);
	p->removed_ids = true;
}

/* ---- adoption (a restarted agent) ---- */

static uint32_t adopted_ident(struct policy *p, in_addr_t ip)
{
	uint64_t v;

	return p->adopting && ip && u64map_get(&p->adopt_ip, ip, &v) ? (uint32_t)v : 0;
}

/* ---- pods ---- */

/* Forget ip -> i (when i is what it points at: two pods may briefly
 * claim one address, the later set wins). */
static void ip_unindex(struct policy *p, in_addr_t ip, size_t i)
{
	uint64_t at;

	if (ip && u64map_get(&p->ip_index, ip, &at) && at == i)
		u64map_del(&p->ip_index, ip);
}

/* Queue pod for ipcache_update when its identity in weft_ipcache may be
 * behind its identity now. */
static void ipq_add(struct policy *p, struct ppod *pod)
{
	if (pod->queued || !pod->ip || pod->written == pod->ident->id)
		return;
	if (policy_grow((void **)&p->ipq, &p->cap_ipq, p->nipq, sizeof(*p->ipq)) < 0) {
		p->ipq_all = true;	/* the next update looks at every pod */
		return;
	}
	p->ipq[p->nipq++] = pod;
	pod->queued = p->nipq;
}

static void ipq_del(struct policy *p, struct ppod *pod)
{
	struct ppod *last;

	if (!pod->queued)
		return;
	last = p->ipq[--p->nipq];
	p->ipq[pod->queued - 1] = last;
	last->queued = pod->queued;
	pod->queued = 0;
}

static struct ppod *pod_find(struct policy *p, const char *ns, const char *name, size_t *at)
{
	uint64_t i;

	if (!u64map_get(&p->pod_index, hash2(ns, name), &i) || strcmp(p->pods[i]->name, name) != 0 ||
	    strcmp(p->pods[i]->ns, ns) != 0)
		return NULL;
	if (at)
		*at = (size_t)i;
	return p->pods[i];
}

/* Set pod ns/name (address ip, 0 none) with its labels and spec (named
 * ports), from the Pods watch or (peer) a PodPeerSlice; the later set
 * wins, whichever it came from. */
static void pod_set(struct policy *p, const char *ns, const char *name, in_addr_t ip, const json_t *labels,
		    const json_t *spec, bool peer)
{
	struct ppod *pod;
	struct ident *id;
	size_t at;

	pthread_mutex_lock(&p->lock);
	id = ident_get(p, ns, labels, spec, adopted_ident(p, ip));
	if (!id)
		goto out;
	pod = pod_find(p, ns, name, &at);
	if (pod) {
		ident_put(p, pod->ident);
		pod->ident = id;
		if (pod->ip != ip) {
			ip_unindex(p, pod->ip, at);
			pod->ip = ip;
			if (pod->ip && u64map_put(&p->ip_index, pod->ip, at) < 0)
				pod->ip = 0;	/* out of memory: known by name only */
		}
		pod->peer = peer;
		pod->seen = true;
		ipq_add(p, pod);
		goto out;
	}
	pod = calloc(1, sizeof(*pod));
	if (!pod || !(pod->ns = strdup(ns)) || !(pod->name = strdup(name)) ||
	    policy_grow((void **)&p->pods, &p->cap_pods, p->npods, sizeof(*p->pods)) < 0 ||
	    u64map_put(&p->pod_index, hash2(ns, name), p->npods) < 0) {
		if (pod) {
			free(pod->ns);
			free(pod->name);
		}
		free(pod);
		ident_put(p, id);
		goto out;
	}
	pod->ident = id;
	pod->ip = ip;
	pod->peer = peer;
	pod->seen = true;
	if (pod->ip && u64map_put(&p->ip_index, pod->ip, p->npods) < 0)
		pod->ip = 0;
	p->pods[p->npods++] = pod;
	ipq_add(p, pod);
out:
	pthread_mutex_unlock(&p->lock);
}

void policy_pod_set(struct policy *p, const json_t *obj)
{
	const char *name = obj_name(obj), *ipstr = obj_str(obj, "status.podIP");
	struct in_addr ia = { 0 };

	if (!name)
		return;
	if (ipstr)
		(void)inet_pton(AF_INET, ipstr, &ia);
	pod_set(p, obj_namespace(obj), name, ia.s_addr, obj_at(obj, "metadata.labels"), obj_at(obj, "spec"), false);
}

void policy_peer_set(struct policy *p, const char *ns, const char *name, in_addr_t ip, const json_t *labels,
		     const json_t *spec)
{
	pod_set(p, ns, name, ip, labels, spec, true);
}

static void pod_remove_at(struct policy *p, size_t i)
{
	struct ppod *pod = p->pods[i];
	uint64_t at;

	ipq_del(p, pod);
	u64map_del(&p->pod_index, hash2(pod->ns, pod->name));
	ip_unindex(p, pod->ip, i);
	p->pods[i] = p->pods[--p->npods];
	if (i < p->npods) {
		index_move(&p->pod_index, hash2(p->pods[i]->ns, p->pods[i]->name), i);
		if (p->pods[i]->ip && u64map_get(&p->ip_index, p->pods[i]->ip, &at) && at == p->npods)
			index_move(&p->ip_index, p->pods[i]->ip, i);
	}
	ident_put(p, pod->ident);
	free(pod->ns);
	free(pod->name);
	free(pod);
}

/* Forget ns/name when the source that set it last (peer or not) is the
 * one that deletes it. */
static void pod_del(struct policy *p, const char *ns, const char *name, bool peer)
{
	struct ppod *pod;
	size_t i;

	pthread_mutex_lock(&p->lock);
	pod = pod_find(p, ns, name, &i);
	if (pod && pod->peer == peer)
		pod_remove_at(p, i);
	pthread_mutex_unlock(&p->lock);
}

void policy_pod_del(struct policy *p, const char *ns, const char *name)
{
	pod_del(p, ns, name, false);
}

void policy_peer_del(struct policy *p, const char *ns, const char *name)
{
	pod_del(p, ns, name, true);
}

bool policy_pod_known(struct policy *p, const char *ns, const char *name)
{
	bool known;

	pthread_mutex_lock(&p->lock);
	known = pod_find(p, ns, name, NULL) != NULL;
	pthread_mutex_unlock(&p->lock);
	return known;
}

/* ---- policies ---- */

bool policy_namespace_has_policies(struct policy *p, const char *ns)
{
	bool has = false;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->npols && !has; i++)
		has = p->pols[i]->ok && strcmp(p->pols[i]->ns, ns) == 0;
	pthread_mutex_unlock(&p->lock);
	return has;
}

static struct ppol *pol_find(struct policy *p, const char *ns, const char *name, size_t *at)
{
	uint64_t i;

	if (!u64map_get(&p->pol_index, hash2(ns, name), &i) || strcmp(p->pols[i]->name, name) != 0 ||
	    strcmp(p->pols[i]->ns, ns) != 0)
		return NULL;
	if (at)
		*at = (size_t)i;
	return p->pols[i];
}

static void pol_clear(struct policy *p, struct ppol *pol)
{
	if (pol->pod_peers)
		p->pod_peer_pols--;
	pol->pod_peers = false;
	for (int d = 0; d < 2; d++) {
		size_t n = pol->base[d] && pol->np.nrules[d]
				   ? pol->base[d][pol->np.nrules[d]] : 0;

		for (size_t i = 0; pol->match[d] && i < n; i++)
			free(pol->match[d][i].ids);
		free(pol->match[d]);
		free(pol->base[d]);
		pol->match[d] = NULL;
		pol->base[d] = NULL;
	}
	netpol_free(&pol->np);
	pol->ok = false;
	pol->any_named_egress = false;
	free(pol->grew.ids);
	memset(&pol->grew, 0, sizeof(pol->grew));
}

/* The match cache's shape for pol's rules: base[d][r] = first index of
 * rule r's peers, base[d][nrules] = their total. */
static int pol_shape(struct ppol *pol)
{
	for (int d = 0; d < 2; d++) {
		size_t total = 0, nr = pol->np.nrules[d];

		pol->base[d] = calloc(nr + 1, sizeof(size_t));
		if (!pol->base[d])
			return -ENOMEM;
		for (size_t r = 0; r < nr; r++) {
			pol->base[d][r] = total;
			total += pol->np.rules[d][r].npeers;
		}
		pol->base[d][nr] = total;
		pol->match[d] = calloc(total ? total : 1, sizeof(struct idlist));
		if (!pol->match[d])
			return -ENOMEM;
	}
	return 0;
}

/* Does a rule of np name pods as peers (a podSelector or a
 * namespaceSelector), or an egress rule a named port (resolved on the
 * destination pod, wherever it runs)?  Then their identities, so every
 * pod of the cluster, must be known here; a rule of ipBlocks and numbers,
 * or to every peer on numbered ports, needs none. */
static bool names_pod_peers(const struct netpol *np)
{
	for (int d = 0; d < 2; d++)
		for (size_t r = 0; r < np->nrules[d]; r++) {
			const struct netpol_rule *rule = &np->rules[d][r];

			for (size_t q = 0; q < rule->npeers; q++)
				if (!rule->peers[q].is_block)
					return true;
			for (size_t q = 0; d == NETPOL_EGRESS && q < rule->nports; q++)
				if (rule->ports[q].name[0])
					return true;
		}
	return false;
}

void policy_netpol_set(struct policy *p, const json_t *obj)
{
	const char *ns = obj_namespace(obj), *name = obj_name(obj);
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	struct ppol *pol;
	char err[256];

	if (!name)
		return;
	pthread_mutex_lock(&p->lock);
	pol = pol_find(p, ns, name, NULL);
	if (pol && rv && strcmp(pol->rv, rv) == 0) {
		pol->seen = true;	/* a relist: the same object, nothing to do */
		goto out;
	}
	if (!pol) {
		pol = calloc(1, sizeof(*pol));
		if (!pol || !(pol->ns = strdup(ns)) || !(pol->name = strdup(name)) ||
		    policy_grow((void **)&p->pols, &p->cap_pols, p->npols, sizeof(*p->pols)) < 0 ||
		    u64map_put(&p->pol_index, hash2(ns, name), p->npols) < 0) {
			if (pol) {
				free(pol->ns);
				free(pol->name);
			}
			free(pol);
			goto out;
		}
		pol->ref = p->next_rule++;
		p->pols[p->npols++] = pol;
	}
	pol_clear(p, pol);
	snprintf(pol->rv, sizeof(pol->rv), "%s", rv ? rv : "");
	pol->seen = true;
	pol->dirty = true;
	pol->log = log_flags(obj);
	/* whom it selects may have changed: class_stale asks every class */
	if (netpol_parse(obj, &pol->np, err, sizeof(err)) < 0) {
		/* the controller validated it: a parse failure here is a
		 * disagreement between versions; the policy isolates nothing */
		fprintf(stderr, "weft-agent: networkpolicy %s/%s ignored: %s\n", ns, name, err);
		p->st.bad_policies++;
		goto out;
	}
	if (pol_shape(pol) < 0) {
		pol_clear(p, pol);
		goto out;
	}
	pol->ok = true;
	if ((pol->pod_peers = names_pod_peers(&pol->np)))
		p->pod_peer_pols++;
	for (size_t r = 0; r < pol->np.nrules[NETPOL_EGRESS]; r++) {
		const struct netpol_rule *rule = &pol->np.rules[NETPOL_EGRESS][r];

		for (size_t q = 0; q < rule->nports && rule->npeers == 0; q++)
			if (rule->ports[q].name[0])
				pol->any_named_egress = true;
	}
out:
	pthread_mutex_unlock(&p->lock);
}

static void pol_remove_at(struct policy *p, size_t i)
{
	struct ppol *pol = p->pols[i];

	/* the classes it selected compute again (and forget it) */
	for (size_t j = 0; j < p->nclasses; j++)
		for (size_t k = 0; k < p->classes[j].nsel; k++)
			if (p->classes[j].sel[k] == pol) {
				p->classes[j].computed = false;
				p->classes[j].nsel = 0;
				break;
			}
	u64map_del(&p->pol_index, hash2(pol->ns, pol->name));
	p->pols[i] = p->pols[--p->npols];
	if (i < p->npols)
		index_move(&p->pol_index, hash2(p->pols[i]->ns, p->pols[i]->name), i);
	pol_clear(p, pol);
	free(pol->ns);
	free(pol->name);
	free(pol);
}

void policy_netpol_del(struct policy *p, const char *ns, const char *name)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	if (pol_find(p, ns, name, &i))
		pol_remove_at(p, i);
	pthread_mutex_unlock(&p->lock);
}

/* ---- lists ---- */

void policy_begin_list(struct policy *p, enum policy_kind k)
{
	pthread_mutex_lock(&p->lock);
	p->listing[k] = true;
	if (k == POLICY_NAMESPACES) {
		for (size_t i = 0; i < p->nns; i++)
			p->nss[i]->seen = false;
	} else if (k == POLICY_PODS || k == POLICY_PEERS) {
		for (size_t i = 0; i < p->npods; i++)
			if (p->pods[i]->peer == (k == POLICY_PEERS))
				p->pods[i]->seen = false;
	} else {
		for (size_t i = 0; i < p->npols; i++)
			p->pols[i]->seen = false;
	}
	pthread_mutex_unlock(&p->lock);
}

void policy_listed(struct policy *p, enum policy_kind k)
{
	size_t i = 0;

	pthread_mutex_lock(&p->lock);
	if (k == POLICY_NAMESPACES) {
		while (i < p->nns)
			if (!p->nss[i]->seen)
				ns_remove_at(p, i);
			else
				i++;
	} else if (k == POLICY_PODS || k == POLICY_PEERS) {
		while (i < p->npods)
			if (!p->pods[i]->seen && p->pods[i]->peer == (k == POLICY_PEERS))
				pod_remove_at(p, i);
			else
				i++;
	} else {
		while (i < p->npols)
			if (!p->pols[i]->seen)
				pol_remove_at(p, i);
			else
				i++;
	}
	p->listing[k] = false;
	p->listed[k] = true;
	pthread_mutex_unlock(&p->lock);
}

void policy_peers_forget(struct policy *p)
{
	pthread_mutex_lock(&p->lock);
	p->listed[POLICY_PEERS] = false;
	pthread_mutex_unlock(&p->lock);
}

/* Are the three lists in, and every pod a policy names as a peer? */
static bool inputs_known(struct policy *p)
{
	return p->listed[POLICY_NAMESPACES] && p->listed[POLICY_PODS] && p->listed[POLICY_NETPOLS] &&
	       (!p->pod_peer_pols || p->listed[POLICY_PEERS]);
}

bool policy_pods_known(struct policy *p)
{
	bool known;

	pthread_mutex_lock(&p->lock);
	known = !p->pod_peer_pols || p->listed[POLICY_PEERS];
	pthread_mutex_unlock(&p->lock);
	return known;
}

bool policy_needs_pods(struct policy *p)
{
	bool needs;

	pthread_mutex_lock(&p->lock);
	needs = p->pod_peer_pols > 0;
	pthread_mutex_unlock(&p->lock);
	return needs;
}

bool policy_synced(struct policy *p)
{
	bool s;

	pthread_mutex_lock(&p->lock);
	s = p->listed[POLICY_NAMESPACES] && p->listed[POLICY_PODS] && p->listed[POLICY_NETPOLS];
	pthread_mutex_unlock(&p->lock);
	return s;
}

/* ---- locals ---- */

static struct local *local_find(struct policy *p, in_addr_t ip)
{
	uint64_t i;

	return u64map_get(&p->local_index, ip, &i) ? &p->locals[i] : NULL;
}

void policy_local_set(struct policy *p, in_addr_t ip, const char *ns, const char *name)
{
	struct local *l;

	pthread_mutex_lock(&p->lock);
	l = local_find(p, ip);
	if (!l) {
		if (policy_grow((void **)&p->locals, &p->cap_locals, p->nlocals, sizeof(*p->locals)) < 0 ||
		    u64map_put(&p->local_index, ip, p->nlocals) < 0)
			goto out;
		l = &p->locals[p->nlocals++];
		memset(l, 0, sizeof(*l));
		l->ip = ip;
	}
	free(l->ns);
	free(l->name);
	l->ns = strdup(ns);
	l->name = strdup(name);
out:
	pthread_mutex_unlock(&p->lock);
}

void policy_local_del(struct policy *p, in_addr_t ip)
{
	struct local *l;

	pthread_mutex_lock(&p->lock);
	l = local_find(p, ip);
	if (l) {
		size_t i = (size_t)(l - p->locals);

		free(l->ns);
		free(l->name);
		u64map_del(&p->local_index, ip);
		*l = p->locals[--p->nlocals];
		if (i < p->nlocals)
			index_move(&p->local_index, p->locals[i].ip, i);
	}
	pthread_mutex_unlock(&p->lock);
}

/* The identity of a local endpoint: its Pod's, or (Pod not known yet) the
 * identity of a pod of its namespace without labels or ports. */
static struct ident *local_ident(struct policy *p, const struct local *l)
{
	struct ppod *pod = l->ns && l->name ? pod_find(p, l->ns, l->name, NULL) : NULL;

	return pod ? pod->ident : NULL;
}

/* ---- adoption, continued ---- */

static void cidr_delete(struct policy *p, uint32_t policy_id, const struct pcidr *x);

/* A new class for identity c->ident takes over the rule set its pods had
 * before the restart, when they all had the same: then the first apply
 * compares with what is written, and writes nothing if nothing changed. */
static void class_adopt(struct policy *p, struct pclass *c, const struct ident *id)
{
	uint64_t v, found = 0;
	bool any = false;
	size_t n = 0;

	if (!p->adopting)
		return;
	for (size_t i = 0; i < p->nlocals; i++) {
		const struct ppod *pod = p->locals[i].ns && p->locals[i].name
						 ? pod_find(p, p->locals[i].ns, p->locals[i].name, NULL)
						 : NULL;

		if (!pod || pod->ident != id || !u64map_get(&p->adopt_ep, p->locals[i].ip, &v))
			continue;
		if (any && v != found)
			return;	/* they disagree: a new set */
		found = v;
		any = true;
	}
	if (!any)
		return;
	c->policy_id = (uint32_t)(found >> 32);
	c->flags = (uint32_t)found & ~(uint32_t)WEFT_EP_F_READY;
	for (size_t i = 0; i < p->nadopt_keys; i++)
		if (ntohl(p->adopt_keys[i].k.policy_id) == c->policy_id && c->policy_id)
			n++;
	c->keys = n ? calloc(n, sizeof(*c->keys)) : NULL;
	if (n && !c->keys) {
		c->policy_id = 0;	/* out of memory: a new set */
		c->flags = 0;
		return;
	}
	c->n = 0;
	for (size_t i = 0; i < p->nadopt_keys && n; i++)
		if (ntohl(p->adopt_keys[i].k.policy_id) == c->policy_id) {
			c->keys[c->n] = p->adopt_keys[i];
			c->keys[c->n++].k.policy_id = 0;
		}
	if (c->n)
		qsort(c->keys, c->n, sizeof(*c->keys), pkey_cmp);
	n = 0;
	for (size_t i = 0; i < p->nadopt_cidrs; i++)
		n += p->adopt_cidrs[i].policy_id == c->policy_id && c->policy_id;
	c->cidrs = n ? calloc(n, sizeof(*c->cidrs)) : NULL;
	if (n && !c->cidrs) {
		free(c->keys);	/* out of memory: a new set */
		c->keys = NULL;
		c->n = 0;
		c->policy_id = 0;
		c->flags = 0;
		return;
	}
	c->ncidrs = 0;
	for (size_t i = 0; i < p->nadopt_cidrs && n; i++)
		if (p->adopt_cidrs[i].policy_id == c->policy_id)
			c->cidrs[c->ncidrs++] = p->adopt_cidrs[i].c;
	if (c->ncidrs)
		qsort(c->cidrs, c->ncidrs, sizeof(*c->cidrs), pcidr_cmp);
}

/* After the first apply: the keys and prefixes of rule sets no class
 * took over go. */
static void adopt_finish(struct policy *p)
{
	for (size_t i = 0; i < p->nadopt_keys; i++) {
		uint32_t id = ntohl(p->adopt_keys[i].k.policy_id);
		bool used = false;

		for (size_t c = 0; c < p->nclasses && !used; c++)
			used = p->classes[c].policy_id == id;
		if (!used) {
			p->st.writes++;
			(void)datapath_policy_del(p->dp, &p->adopt_keys[i].k);
		}
	}
	for (size_t i = 0; i < p->nadopt_cidrs; i++) {
		const struct acidr *x = &p->adopt_cidrs[i];
		bool used = false;

		for (size_t c = 0; c < p->nclasses && !used; c++)
			used = p->classes[c].policy_id == x->policy_id;
		if (!used)
			cidr_delete(p, x->policy_id, &x->c);
	}
	free(p->adopt_keys);
	p->adopt_keys = NULL;
	p->nadopt_keys = p->cap_adopt_keys = 0;
	free(p->adopt_cidrs);
	p->adopt_cidrs = NULL;
	p->nadopt_cidrs = p->cap_adopt_cidrs = 0;
	u64map_free(&p->adopt_ip);
	u64map_free(&p->adopt_ep);
	p->adopting = false;
}

/* ---- matching (step 2) ---- */

static void view_of(struct policy *p, const struct ident *id, struct netpol_pod *v)
{
	memset(v, 0, sizeof(*v));
	v->ns = id->ns;
	v->ns_labels = ns_labels(p, id->ns);
	v->labels = id->labels;
	v->spec = id->spec;
}

/* Does one of pol's egress rules to every peer name a port that id's pods
 * have?  Only then does id add keys to (or take them from) pol's sets
 * beyond what its peers match. */
static bool names_egress_port(struct policy *p, const struct ppol *pol, const struct ident *id)
{
	struct netpol_pod v;

	if (!pol->ok || !pol->any_named_egress)
		return false;
	view_of(p, id, &v);
	for (size_t r = 0; r < pol->np.nrules[NETPOL_EGRESS]; r++) {
		const struct netpol_rule *rule = &pol->np.rules[NETPOL_EGRESS][r];
		uint16_t lo, hi;

		for (size_t q = 0; q < rule->nports && rule->npeers == 0; q++)
			if (rule->ports[q].name[0] && netpol_port_range(&rule->ports[q], &v, &lo, &hi) == 0)
				return true;
	}
	return false;
}

/* Add id to the match lists of pol's peers that select it; *hit says
 * whether any did. */
static int match_ident(struct policy *p, struct ppol *pol, struct ident *id, bool *hit)
{
	struct netpol_pod v;

	if (!pol->ok)
		return 0;
	view_of(p, id, &v);
	if (!v.ns_labels)
		return 0;	/* its Namespace is not known: no selector matches it */
	for (int d = 0; d < 2; d++)
		for (size_t r = 0; r < pol->np.nrules[d]; r++) {
			const struct netpol_rule *rule = &pol->np.rules[d][r];

			for (size_t k = 0; k < rule->npeers; k++) {
				const struct netpol_peer *peer = &rule->peers[k];

				if (peer->is_block || !netpol_peer_matches_pod(&pol->np, peer, &v))
					continue;
				if (idlist_add(&pol->match[d][pol->base[d][r] + k], id->id) < 0)
					return -ENOMEM;
				*hit = true;
			}
		}
	return 0;
}

static void pol_unmatch(struct ppol *pol)
{
	for (int d = 0; d < 2 && pol->ok; d++)
		for (size_t i = 0; i < pol->base[d][pol->np.nrules[d]]; i++)
			pol->match[d][i].n = pol->match[d][i].applied = 0;
}

static int rematch(struct policy *p)
{
	bool all = p->rematch_all;
	int err = 0;

	/* new identities against the policies that stay as they are: each
	 * such policy's classes only gain the keys of the identities its
	 * peers (or its named egress ports) now take in */
	for (size_t j = 0; j < p->nids && err == 0 && !all; j++) {
		if (!p->ids[j]->pending)
			continue;
		for (size_t i = 0; i < p->npols && err == 0; i++) {
			struct ppol *pol = p->pols[i];
			bool hit = false;

			if (pol->dirty)
				continue;
			err = match_ident(p, pol, p->ids[j], &hit);
			if (err == 0 && (hit || names_egress_port(p, pol, p->ids[j])))
				err = idlist_add(&pol->grew, p->ids[j]->id);
		}
	}
	/* changed policies (every policy after a namespace change) against
	 * every identity */
	for (size_t i = 0; i < p->npols && err == 0; i++) {
		struct ppol *pol = p->pols[i];
		bool hit = false;	/* all its classes compute again anyway */

		if (!all && !pol->dirty)
			continue;
		pol->touched = true;
		pol_unmatch(pol);
		for (size_t j = 0; j < p->nids && err == 0; j++)
			err = match_ident(p, pol, p->ids[j], &hit);
	}
	if (p->removed_ids && !all && err == 0) {
		/* drop the numbers that are gone (their keys: p->gone) */
		for (size_t i = 0; i < p->npols; i++)
			for (int d = 0; d < 2 && p->pols[i]->ok; d++)
				for (size_t m = 0; m < p->pols[i]->base[d][p->pols[i]->np.nrules[d]]; m++) {
					struct idlist *l = &p->pols[i]->match[d][m];
					size_t w = 0, applied = 0;

					for (size_t x = 0; x < l->n; x++)
						if (ident_by_num(p, l->ids[x])) {
							applied += x < l->applied;
							l->ids[w++] = l->ids[x];
						}
					l->n = w;
					l->applied = applied;
				}
	}
	if (err < 0) {
		p->rematch_all = true;	/* out of memory halfway: start over next time */
		return err;
	}
	if (all)
		p->classes_all = true;
	for (size_t j = 0; j < p->nids; j++)
		p->ids[j]->pending = false;
	for (size_t i = 0; i < p->npols; i++)
		p->pols[i]->dirty = false;
	p->rematch_all = false;
	p->removed_ids = false;
	return 0;
}

/* ---- rule sets (step 3) ---- */

/* The keys of one rule of pol for the local identity self (its ipBlock
 * peers go to bl, for blocks_compile); with only (pol's grew), just the
 * keys of identities new to pol: those its match lists gained since the
 * sets were written, and only's for its named egress ports (bl unused). */
static int rule_keys(struct policy *p, const struct ppol *pol, int dir, size_t r, const struct ident *self,
		     struct keyset *s, struct blockset *bl, const struct idlist *only)
{
	const struct netpol_rule *rule = &pol->np.rules[dir][r];
	struct idlist peers = { 0 }, named = { 0 };
	struct netpol_pod selfv;
	int err = 0;

	/* the peers: any, or the identities matched; ipBlocks apart */
	if (rule->npeers == 0 && !only)
		err = idlist_add(&peers, WEFT_ID_ANY);
	for (size_t k = 0; k < rule->npeers && err == 0; k++) {
		const struct netpol_peer *peer = &rule->peers[k];
		const struct idlist *m = &pol->match[dir][pol->base[dir][r] + k];

		if (peer->is_block && only)
			continue;
		if (peer->is_block) {
			if (policy_grow((void **)&bl->b, &bl->cap, bl->n, sizeof(*bl->b)) < 0) {
				err = -ENOMEM;
				break;
			}
			bl->b[bl->n++] = (struct blockref){ .peer = peer, .rule = rule, .ref = pol->ref, .dir = dir };
			continue;
		}
		for (size_t i = only ? m->applied : 0; i < m->n && err == 0; i++)
			err = idlist_add(&peers, m->ids[i]);
		for (size_t i = only ? m->applied : 0; i < m->n && err == 0; i++)
			err = idlist_add(&named, m->ids[i]);	/* egress named ports resolve on these */
	}
	if (rule->npeers == 0 && only)
		for (size_t i = 0; i < only->n && err == 0; i++)
			err = idlist_add(&named, only->ids[i]);
	else if (rule->npeers == 0)
		for (size_t i = 0; i < p->nids && err == 0; i++)
			err = idlist_add(&named, p->ids[i]->id);
	view_of(p, self, &selfv);
	for (size_t i = 0; i < peers.n && err == 0; i++)
		err = port_keys(s, dir, peers.ids[i], rule, &selfv, pol->ref);
	/* egress to a named port: the port each destination identity gives
	 * the name (an ipBlock peer has no name to resolve: it adds none) */
	for (size_t q = 0; q < rule->nports && err == 0 && dir == NETPOL_EGRESS; q++) {
		const struct netpol_port *port = &rule->ports[q];

		if (!port->name[0])
			continue;
		for (size_t i = 0; i < named.n && err == 0; i++) {
			struct ident *dst = ident_by_num(p, named.ids[i]);
			struct netpol_pod dv;
			uint16_t lo, hi;

			if (!dst)
				continue;
			view_of(p, dst, &dv);
			if (netpol_port_range(port, &dv, &lo, &hi) == 0)
				err = key_add_range(s, (uint32_t)dir, dst->id, port->proto, lo, hi, pol->ref);
		}
	}
	free(peers.ids);
	free(named.ids);
	return err;
}

/* What the rule set of identity self should be: flags, keys and ipBlock
 * prefixes; c->sel gets the policies that select it. */
static int class_compute(struct policy *p, struct pclass *c, const struct ident *self, uint32_t *flags,
			 struct keyset *s, struct cidrset *cs)
{
	const struct pns *ns = ns_find(p, self->ns, NULL);
	struct blockset bl = { 0 };
	struct netpol_pod selfv;
	int err = 0;

	*flags = ns ? ns->log : 0;
	c->nsel = 0;
	for (size_t i = 0; i < p->npols && err == 0; i++) {
		struct ppol *pol = p->pols[i];

		if (!pol->ok || strcmp(pol->ns, self->ns) != 0 ||
		    !netpol_selects(&pol->np, self->ns, self->labels))
			continue;
		if (policy_grow((void **)&c->sel, &c->cap_sel, c->nsel, sizeof(*c->sel)) < 0) {
			err = -ENOMEM;
			break;
		}
		c->sel[c->nsel++] = pol;
		*flags |= pol->log;
		for (int d = 0; d < 2 && err == 0; d++) {
			if (!pol->np.isolates[d])
				continue;
			*flags |= d == NETPOL_INGRESS ? WEFT_EP_F_ISOLATE_IN : WEFT_EP_F_ISOLATE_OUT;
			for (size_t r = 0; r < pol->np.nrules[d] && err == 0; r++)
				err = rule_keys(p, pol, d, r, self, s, &bl, NULL);
		}
	}
	view_of(p, self, &selfv);
	for (int d = 0; d < 2 && err == 0 && bl.n; d++)
		err = blocks_compile(&bl, d, &selfv, s, cs);
	free(bl.b);
	keyset_normalize(s);
	return err;
}

enum stale { STALE_NO, STALE_DELTA, STALE_ALL };

/* Must c compute again?  All of it when new, when everything must, when
 * a policy that selected it changed or now matches other peers, or when
 * a changed policy selects it now; only the keys of new identities (its
 * policies' grew) and of identities gone (p->gone) otherwise. */
static enum stale class_stale(const struct policy *p, const struct pclass *c, const struct ident *self)
{
	bool delta = p->gone.n > 0;

	if (p->classes_all || !c->computed)
		return STALE_ALL;
	for (size_t i = 0; i < c->nsel; i++) {
		if (c->sel[i]->touched)
			return STALE_ALL;
		if (c->sel[i]->grew.n)
			delta = true;
	}
	for (size_t i = 0; i < p->npols; i++) {
		const struct ppol *pol = p->pols[i];

		if (pol->touched && pol->ok && strcmp(pol->ns, self->ns) == 0 &&
		    netpol_selects(&pol->np, self->ns, self->labels))
			return STALE_ALL;	/* selected now (before: in sel) */
	}
	return delta ? STALE_DELTA : STALE_NO;
}

/* The set c holds, less the keys of identities gone, plus the keys its
 * policies give identities new to them (c's policies and flags stay as
 * they are): 0 and the set in s, 1 when that is c's set as it is, or a
 * negative errno. */
static int class_delta(struct policy *p, const struct pclass *c, const struct ident *self, struct keyset *s)
{
	struct keyset add = { 0 };
	size_t i = 0, j = 0;
	int err = 0;

	for (size_t x = 0; x < c->nsel && err == 0; x++) {
		const struct ppol *pol = c->sel[x];

		for (int d = 0; d < 2 && err == 0 && pol->grew.n; d++) {
			if (!pol->np.isolates[d])
				continue;
			for (size_t r = 0; r < pol->np.nrules[d] && err == 0; r++)
				err = rule_keys(p, pol, d, r, self, &add, NULL, &pol->grew);
		}
	}
	keyset_normalize(&add);
	if (err == 0 && add.n == 0) {
		size_t x = 0;

		while (x < c->n && !idlist_has(&p->gone, ntohl(c->keys[x].k.peer)))
			x++;
		if (x == c->n) {
			free(add.keys);
			return 1;	/* nothing new, nothing gone */
		}
	}
	/* merge the two sorted runs; a key in both keeps c's rule number */
	while (err == 0 && (i < c->n || j < add.n)) {
		int o = i == c->n ? 1 : j == add.n ? -1 : pkey_cmp(&c->keys[i], &add.keys[j]);
		const struct pkey *k = o <= 0 ? &c->keys[i] : &add.keys[j];

		if (o <= 0)
			i++;
		if (o >= 0)
			j++;
		if (o < 0 && idlist_has(&p->gone, ntohl(k->k.peer)))
			continue;
		if ((err = policy_grow((void **)&s->keys, &s->cap, s->n, sizeof(*s->keys))) == 0)
			s->keys[s->n++] = *k;
	}
	free(add.keys);
	return err;
}

static struct pclass *class_find(struct policy *p, uint32_t ident)
{
	uint64_t i;

	return u64map_get(&p->class_index, ident, &i) ? &p->classes[i] : NULL;
}

static int key_write(struct policy *p, uint32_t policy_id, const struct pkey *k)
{
	struct weft_policy_key key = k->k;
	struct weft_policy_value v = { .rule = k->rule };

	key.policy_id = htonl(policy_id);
	p->st.writes++;
	return datapath_policy_put(p->dp, &key, &v);
}

static void key_delete(struct policy *p, uint32_t policy_id, const struct pkey *k)
{
	struct weft_policy_key key = k->k;

	key.policy_id = htonl(policy_id);
	p->st.writes++;
	(void)datapath_policy_del(p->dp, &key);
}

static int cidr_write(struct policy *p, uint32_t policy_id, const struct pcidr *x)
{
	p->st.writes++;
	return datapath_policy_cidr_put(p->dp, policy_id, x->dir, x->addr, x->len, x->id);
}

static void cidr_delete(struct policy *p, uint32_t policy_id, const struct pcidr *x)
{
	p->st.writes++;
	(void)datapath_policy_cidr_del(p->dp, policy_id, x->dir, x->addr, x->len);
}

/* Delete rule set policy_id: its keys, then its prefixes. */
static void set_delete(struct policy *p, uint32_t policy_id, const struct pkey *keys, size_t n,
		       const struct pcidr *cidrs, size_t ncidrs)
{
	for (size_t i = 0; i < n && policy_id; i++)
		key_delete(p, policy_id, &keys[i]);
	for (size_t i = 0; i < ncidrs && policy_id; i++)
		cidr_delete(p, policy_id, &cidrs[i]);
}

/* Move every local endpoint of identity c->ident to c's rule set. */
static void endpoints_move(struct policy *p, const struct pclass *c)
{
	for (size_t i = 0; i < p->nlocals; i++) {
		struct ident *id = local_ident(p, &p->locals[i]);
		struct weft_endpoint ep;

		p->locals[i].synced = false;	/* endpoints_sync looks again */
		if (!id || id->id != c->ident ||
		    datapath_endpoint_get(p->dp, p->locals[i].ip, &ep) < 0)
			continue;
		if (ep.policy_id == c->policy_id && (ep.flags & ~(uint32_t)WEFT_EP_F_READY) == c->flags)
			continue;
		ep.policy_id = c->policy_id;
		ep.flags = (ep.flags & WEFT_EP_F_READY) | c->flags;
		p->st.writes++;
		(void)datapath_endpoint_put(p->dp, p->locals[i].ip, &ep);
	}
}

/* A class taken over from before a restart holds the old agent's rule
 * numbers (weft_policy_value.rule), and this agent numbered the policies
 * anew.  Where a key is the same, the old number becomes an alias of the
 * new one (the policy log names policies by the number the map holds)
 * instead of a write of the value: so a restart still writes nothing. */
static void rules_adopt(struct policy *p, struct pclass *c, const struct keyset *s)
{
	for (size_t i = 0, j = 0; i < s->n; i++) {
		while (j < c->n && pkey_cmp(&c->keys[j], &s->keys[i]) < 0)
			j++;
		if (j == c->n || pkey_cmp(&c->keys[j], &s->keys[i]) != 0 ||
		    c->keys[j].rule == s->keys[i].rule)
			continue;
		if (u64map_put(&p->rule_alias, c->keys[j].rule, s->keys[i].rule) == 0)
			c->keys[j].rule = s->keys[i].rule;
	}
}

/* Bring class c to (flags, s, cs): in place when only adding or only
 * removing keys (the prefixes the same, or all gone), else a whole new
 * set under a new ID.  Takes s's keys and cs's prefixes. */
static int class_write(struct policy *p, struct pclass *c, uint32_t flags, struct keyset *s,
		       struct cidrset *cs)
{
	bool same_cidrs = cidrs_equal(c->cidrs, c->ncidrs, cs->c, cs->n);
	bool same = c->flags == flags && same_cidrs;
	size_t nk = 0, nc = 0;
	uint32_t id;
	int err = 0;

	if (p->adopting)
		rules_adopt(p, c, s);
	if (same && keys_equal(c->keys, c->n, s->keys, s->n) && (c->policy_id != 0 || s->n == 0)) {
		free(s->keys);
		free(cs->c);
		return 0;
	}
	if (c->policy_id && same && keys_subset(c->keys, c->n, s->keys, s->n)) {
		for (size_t i = 0, j = 0; i < s->n && err == 0; i++) {
			while (j < c->n && pkey_cmp(&c->keys[j], &s->keys[i]) < 0)
				j++;
			if (j < c->n && pkey_cmp(&c->keys[j], &s->keys[i]) == 0 &&
			    c->keys[j].rule == s->keys[i].rule)
				continue;
			err = key_write(p, c->policy_id, &s->keys[i]);	/* new, or its rule number */
		}
		if (err == 0)
			goto adopt;
	} else if (c->policy_id && c->flags == flags && (same_cidrs || cs->n == 0) &&
		   keys_subset(s->keys, s->n, c->keys, c->n)) {
		for (size_t i = 0, j = 0; i < c->n; i++) {
			while (j < s->n && pkey_cmp(&s->keys[j], &c->keys[i]) < 0)
				j++;
			if (j < s->n && pkey_cmp(&s->keys[j], &c->keys[i]) == 0)
				continue;
			key_delete(p, c->policy_id, &c->keys[i]);
		}
		if (!same_cidrs) {
			/* every ipBlock gone: its prefixes, whose identities
			 * now allow nothing, after the keys */
			set_delete(p, c->policy_id, NULL, 0, c->cidrs, c->ncidrs);
			free(c->cidrs);
			c->cidrs = NULL;
			c->ncidrs = 0;
		}
		goto adopt;
	}
	if (err < 0) {
		/* the in-place additions did not fit: take back what was
		 * added; the old set stays whole */
		for (size_t i = 0, j = 0; i < s->n; i++) {
			while (j < c->n && pkey_cmp(&c->keys[j], &s->keys[i]) < 0)
				j++;
			if (j < c->n && pkey_cmp(&c->keys[j], &s->keys[i]) == 0)
				continue;
			key_delete(p, c->policy_id, &s->keys[i]);
		}
		goto full;
	}
	/* a whole new set (its prefixes, then its keys), then the
	 * endpoints, then the old set goes */
	id = s->n || cs->n ? p->next_policy_id++ : 0;
	while (nc < cs->n && (err = cidr_write(p, id, &cs->c[nc])) == 0)
		nc++;
	while (err == 0 && nk < s->n && (err = key_write(p, id, &s->keys[nk])) == 0)
		nk++;
	if (err < 0) {
		set_delete(p, id, s->keys, nk, cs->c, nc);
		goto full;
	}
	{
		uint32_t old_id = c->policy_id;
		struct pkey *old = c->keys;
		struct pcidr *old_cidrs = c->cidrs;
		size_t nold = c->n, nold_cidrs = c->ncidrs;

		c->policy_id = id;
		c->flags = flags;
		c->keys = s->keys;
		c->n = s->n;
		c->cidrs = cs->c;
		c->ncidrs = cs->n;
		endpoints_move(p, c);
		set_delete(p, old_id, old, nold, old_cidrs, nold_cidrs);
		free(old);
		free(old_cidrs);
	}
	p->st.applies++;
	return 0;
adopt:
	free(c->keys);
	free(cs->c);	/* the same as c's, or none */
	c->keys = s->keys;
	c->n = s->n;
	p->st.applies++;
	return 0;
full:
	p->st.map_full++;
	free(s->keys);
	free(cs->c);
	if (c->policy_id == 0 && c->flags != (flags | WEFT_EP_F_POLICY_FULL)) {
		/* nothing whole to keep: deny what isolation denies, and say why */
		c->flags = flags | WEFT_EP_F_POLICY_FULL;
		free(c->keys);
		c->keys = NULL;
		c->n = 0;
		endpoints_move(p, c);
	}
	return err;
}

static void class_drop(struct policy *p, size_t i)
{
	struct pclass *c = &p->classes[i];

	set_delete(p, c->policy_id, c->keys, c->n, c->cidrs, c->ncidrs);
	free(c->keys);
	free(c->cidrs);
	free(c->sel);
	u64map_del(&p->class_index, c->ident);
	p->classes[i] = p->classes[--p->nclasses];
	if (i < p->nclasses)
		index_move(&p->class_index, p->classes[i].ident, i);
}

/* Every local endpoint on its identity's rule set (one write for each
 * that is not: a pod whose identity changed moves to its new set here,
 * before the old set can go). */
static void endpoints_sync(struct policy *p)
{
	for (size_t i = 0; i < p->nlocals; i++) {
		struct local *l = &p->locals[i];
		struct ident *id = local_ident(p, l);
		const struct pclass *c = id ? class_find(p, id->id) : NULL;
		struct weft_endpoint ep;

		if (!c || (l->synced && l->policy_id == c->policy_id && l->flags == c->flags))
			continue;
		if (datapath_endpoint_get(p->dp, l->ip, &ep) < 0)
			continue;	/* not written yet: policy_endpoint_write fills it */
		l->synced = true;
		l->policy_id = c->policy_id;
		l->flags = c->flags;
		if (ep.policy_id == c->policy_id && (ep.flags & ~(uint32_t)WEFT_EP_F_READY) == c->flags)
			continue;
		ep.policy_id = c->policy_id;
		ep.flags = (ep.flags & WEFT_EP_F_READY) | c->flags;
		p->st.writes++;
		(void)datapath_endpoint_put(p->dp, l->ip, &ep);
	}
}

static int classes_apply(struct policy *p)
{
	int err = 0;

	for (size_t i = 0; i < p->npols; i++)
		idlist_sort(&p->pols[i]->grew);
	idlist_sort(&p->gone);
	for (size_t i = 0; i < p->nclasses; i++)
		p->classes[i].used = false;
	for (size_t i = 0; i < p->nlocals; i++) {
		struct ident *id = local_ident(p, &p->locals[i]);
		struct pclass *c;
		struct keyset s = { 0 };
		struct cidrset cs = { 0 };
		enum stale stale;
		uint32_t flags;
		int rc;

		if (!id)
			continue;
		c = class_find(p, id->id);
		if (c && c->used)
			continue;
		if (!c) {
			if (policy_grow((void **)&p->classes, &p->cap_classes, p->nclasses, sizeof(*p->classes)) < 0 ||
			    u64map_put(&p->class_index, id->id, p->nclasses) < 0)
				return -ENOMEM;
			c = &p->classes[p->nclasses++];
			memset(c, 0, sizeof(*c));
			c->ident = id->id;
			class_adopt(p, c, id);
		}
		c->used = true;
		stale = class_stale(p, c, id);
		if (stale == STALE_NO)
			continue;
		if (stale == STALE_DELTA) {
			flags = c->flags;
			rc = class_delta(p, c, id, &s);
			if (rc == 1)
				continue;
			p->st.patched++;
			if (rc == 0 && c->ncidrs &&
			    !(cs.c = malloc(c->ncidrs * sizeof(*cs.c))))
				rc = -ENOMEM;
			if (rc == 0 && c->ncidrs) {
				memcpy(cs.c, c->cidrs, c->ncidrs * sizeof(*cs.c));
				cs.n = cs.cap = c->ncidrs;
			}
		} else {
			p->st.computed++;
			rc = class_compute(p, c, id, &flags, &s, &cs);
		}
		if (rc < 0) {
			free(s.keys);
			free(cs.c);
			c->computed = false;
			err = rc;
			continue;
		}
		rc = class_write(p, c, flags, &s, &cs);
		c->computed = rc == 0;
		if (rc < 0)
			err = rc;
	}
	endpoints_sync(p);
	for (size_t i = 0; i < p->nclasses;)
		if (!p->classes[i].used)
			class_drop(p, i);
		else
			i++;
	if (err == 0) {
		for (size_t i = 0; i < p->npols; i++) {
			struct ppol *pol = p->pols[i];

			pol->touched = false;
			pol->grew.n = 0;
			for (int d = 0; d < 2 && pol->ok; d++)
				for (size_t m = 0; m < pol->base[d][pol->np.nrules[d]]; m++)
					pol->match[d][m].applied = pol->match[d][m].n;
		}
		p->gone.n = 0;
		p->classes_all = false;
	}
	return err;
}

/* ---- apply ---- */

/* Give pod's weft_ipcache entry the pod's identity now. */
static void ipcache_sync_pod(struct policy *p, struct ppod *pod)
{
	struct weft_ipcache_entry e;

	if (!pod->ip || pod->written == pod->ident->id)
		return;
	if (datapath_ipcache_get(p->dp, pod->ip, &e) < 0)
		return;	/* not programmed yet: its writer fills it in */
	pod->written = pod->ident->id;
	if (e.identity == pod->written)
		return;
	e.identity = pod->written;
	p->st.writes++;
	(void)datapath_ipcache_put(p->dp, pod->ip, &e);
}

/* The queued pods only (policy_pod_set queues a pod whose identity
 * moved): O(changed pods), not O(pods), per apply. */
static void ipcache_update(struct policy *p)
{
	if (p->ipq_all) {
		p->ipq_all = false;
		for (size_t i = 0; i < p->npods; i++)
			ipcache_sync_pod(p, p->pods[i]);
	}
	while (p->nipq) {
		struct ppod *pod = p->ipq[p->nipq - 1];

		ipq_del(p, pod);
		ipcache_sync_pod(p, pod);
	}
}

int policy_apply(struct policy *p)
{
	int err;

	pthread_mutex_lock(&p->lock);
	if (!inputs_known(p)) {
		pthread_mutex_unlock(&p->lock);
		return 1;
	}
	err = rematch(p);
	if (err == 0) {
		err = classes_apply(p);
		ipcache_update(p);
		if (err == 0 && p->adopting)
			adopt_finish(p);
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* ---- writers of entries ---- */

int policy_endpoint_write(struct policy *p, in_addr_t ip, struct weft_endpoint *ep)
{
	struct local *l;
	struct ident *id;
	struct pclass *c;
	int err;

	pthread_mutex_lock(&p->lock);
	l = local_find(p, ip);
	id = l ? local_ident(p, l) : NULL;
	c = id ? class_find(p, id->id) : NULL;
	ep->flags &= WEFT_EP_F_READY;
	if (c) {
		ep->policy_id = c->policy_id;
		ep->flags |= c->flags;
	} else {
		/* no rule set computed (yet): keep what the map has, so a
		 * restart does not open an isolated pod; a new pod whose set
		 * waits for the peers is isolated until it is computed */
		struct weft_endpoint old;

		if (datapath_endpoint_get(p->dp, ip, &old) == 0) {
			ep->policy_id = old.policy_id;
			ep->flags |= old.flags & ~(uint32_t)WEFT_EP_F_READY;
		} else if (id && !inputs_known(p)) {
			ep->policy_id = 0;
			ep->flags |= WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT;
		}
	}
	err = datapath_endpoint_put(p->dp, ip, ep);
	if (l) {
		l->synced = err == 0 && c;
		l->policy_id = ep->policy_id;
		l->flags = ep->flags & ~(uint32_t)WEFT_EP_F_READY;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}

int policy_ipcache_write(struct policy *p, in_addr_t ip, struct weft_ipcache_entry *e)
{
	struct weft_ipcache_entry old;
	int err;

	pthread_mutex_lock(&p->lock);
	/* the identity already written stays until policy_apply moves it
	 * (invariant 1); a new entry gets its pod's, if known */
	if (datapath_ipcache_get(p->dp, ip, &old) == 0 && old.identity) {
		e->identity = old.identity;
	} else {
		uint64_t at;

		e->identity = 0;
		if (u64map_get(&p->ip_index, ip, &at)) {
			e->identity = p->pods[at]->ident->id;
			p->pods[at]->written = e->identity;
		}
		if (!e->identity) {
			struct local *l = local_find(p, ip);
			struct ident *id = l ? local_ident(p, l) : NULL;

			e->identity = id ? id->id : 0;
		}
	}
	err = datapath_ipcache_put(p->dp, ip, e);
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* ---- start-up ---- */

static int adopt_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	struct policy *p = arg;

	if (e->identity >= p->next_ident && e->identity < WEFT_ID_CIDR)
		p->next_ident = e->identity + 1;
	if (e->identity >= WEFT_ID_FIRST && u64map_put(&p->adopt_ip, ip, e->identity) < 0)
		return -ENOMEM;
	return 0;
}

/* An endpoint's rule set may have no key left (its keys all removed in
 * place), so weft_policy alone does not name every ID in use. */
static int adopt_endpoint(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct policy *p = arg;

	if (ep->policy_id >= p->next_policy_id)
		p->next_policy_id = ep->policy_id + 1;
	return u64map_put(&p->adopt_ep, ip, (uint64_t)ep->policy_id << 32 | ep->flags) < 0 ? -ENOMEM : 0;
}

static int adopt_policy(const struct weft_policy_key *k, const struct weft_policy_value *v, void *arg)
{
	struct policy *p = arg;
	uint32_t id = ntohl(k->policy_id), peer = ntohl(k->peer);
	struct pkey *x;

	if (id >= p->next_policy_id)
		p->next_policy_id = id + 1;
	if (!(peer & WEFT_ID_CIDR) && peer >= p->next_ident)
		p->next_ident = peer + 1;
	if (v->rule >= p->next_rule)
		p->next_rule = v->rule + 1;
	if (policy_grow((void **)&p->adopt_keys, &p->cap_adopt_keys, p->nadopt_keys, sizeof(*p->adopt_keys)) < 0)
		return -ENOMEM;
	x = &p->adopt_keys[p->nadopt_keys++];
	x->k = *k;
	x->rule = v->rule;
	return 0;
}

static int adopt_cidr(uint32_t policy_id, int dir, in_addr_t addr, int len, uint32_t id, void *arg)
{
	struct policy *p = arg;
	struct acidr *x;

	if (policy_id >= p->next_policy_id)
		p->next_policy_id = policy_id + 1;
	if (policy_grow((void **)&p->adopt_cidrs, &p->cap_adopt_cidrs, p->nadopt_cidrs, sizeof(*p->adopt_cidrs)) < 0)
		return -ENOMEM;
	x = &p->adopt_cidrs[p->nadopt_cidrs++];
	x->policy_id = policy_id;
	x->c = (struct pcidr){ .addr = addr, .len = (uint8_t)len, .dir = (uint8_t)dir, .id = id };
	return 0;
}

/* A restarted agent keeps the numbers the maps hold: a pod keeps its
 * identity (when its namespace, labels and ports are still those of the
 * others with that number), a rule set its ID, keys and prefixes; and
 * numbers anything new above them.  So the first apply after a restart
 * that finds the cluster as it was writes nothing, and traffic sees no
 * moment without the rules. */
int policy_adopt(struct policy *p)
{
	int err;

	pthread_mutex_lock(&p->lock);
	p->adopting = true;
	err = datapath_ipcache_foreach(p->dp, adopt_ipcache, p);
	if (err == 0)
		err = datapath_endpoint_foreach(p->dp, adopt_endpoint, p);
	if (err == 0)
		err = datapath_policy_foreach(p->dp, adopt_policy, p);
	if (err == 0)
		err = datapath_policy_cidr_foreach(p->dp, adopt_cidr, p);
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* ---- the rest ---- */

void policy_describe_addr(struct policy *p, in_addr_t ip, char *buf, size_t len)
{
	struct local *l;
	uint64_t at;

	pthread_mutex_lock(&p->lock);
	l = local_find(p, ip);
	if (u64map_get(&p->ip_index, ip, &at))
		snprintf(buf, len, "%s/%s", p->pods[at]->ns, p->pods[at]->name);
	else if (l && l->ns && l->name)
		snprintf(buf, len, "%s/%s", l->ns, l->name);
	else
		inet_ntop(AF_INET, &ip, buf, (socklen_t)len);
	pthread_mutex_unlock(&p->lock);
}

void policy_rule_name(struct policy *p, uint32_t rule, char *buf, size_t len)
{
	uint64_t alias;

	pthread_mutex_lock(&p->lock);
	if (u64map_get(&p->rule_alias, rule, &alias))
		rule = (uint32_t)alias;	/* a number from before a restart */
	snprintf(buf, len, "%s", "");
	for (size_t i = 0; i < p->npols; i++)
		if (p->pols[i]->ref == rule) {
			snprintf(buf, len, "%s/%s", p->pols[i]->ns, p->pols[i]->name);
			break;
		}
	pthread_mutex_unlock(&p->lock);
}

void policy_stats(struct policy *p, struct policy_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->identities = p->nids;
	st->policies = p->npols;
	st->classes = p->nclasses;
	st->rules = 0;
	st->cidrs = 0;
	for (size_t i = 0; i < p->nclasses; i++) {
		st->rules += p->classes[i].n;
		st->cidrs += p->classes[i].ncidrs;
	}
	pthread_mutex_unlock(&p->lock);
}

struct policy *policy_create(struct datapath *dp)
{
	struct policy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->dp = dp;
	p->next_ident = WEFT_ID_FIRST;
	p->next_policy_id = 1;
	p->next_rule = 1;
	return p;
}

void policy_destroy(struct policy *p)
{
	if (!p)
		return;
	while (p->npols)
		pol_remove_at(p, p->npols - 1);
	while (p->npods)
		pod_remove_at(p, p->npods - 1);
	while (p->nns)
		ns_remove_at(p, p->nns - 1);
	for (size_t i = 0; i < p->nclasses; i++) {
		free(p->classes[i].keys);
		free(p->classes[i].cidrs);
		free(p->classes[i].sel);
	}
	for (size_t i = 0; i < p->nlocals; i++) {
		free(p->locals[i].ns);
		free(p->locals[i].name);
	}
	free(p->classes);
	free(p->locals);
	free(p->pols);
	free(p->pods);
	free(p->ipq);
	free(p->nss);
	free(p->ids);
	u64map_free(&p->ns_index);
	u64map_free(&p->pod_index);
	u64map_free(&p->ip_index);
	u64map_free(&p->id_index);
	u64map_free(&p->id_by_num);
	u64map_free(&p->pol_index);
	u64map_free(&p->adopt_ip);
	u64map_free(&p->adopt_ep);
	u64map_free(&p->local_index);
	u64map_free(&p->class_index);
	u64map_free(&p->rule_alias);
	free(p->adopt_keys);
	free(p->adopt_cidrs);
	free(p->gone.ids);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
