/*
 * peerslice.c — the PodPeerSlices in the agent (peerslice.h says what they
 * are for).
 *
 * A slice event:
 *
 *	slice of this node ─────────────────────────── ignored (its Pods watch)
 *	otherwise: its identities read (each built into the labels and the
 *	spec the policy compiler reads, once, when a pod uses it), then for
 *	each pod:
 *	    a pod of this node holds the name ──────── left to the Pods watch
 *	    else ─── pod cache (its node, address) ── weft_ipcache (remote.c)
 *	         └── policy_peer_set ──────────────── its identity
 *	then each pod the slice held before and holds no more is forgotten,
 *	when the cache still has it on the slice's node (a newer source wins).
 *
 * A slice is sent whole when any of its pods changes (up to
 * PODPEERSLICE_MAX_PODS of them for one pod added), so a pod the record
 * already has with the same address and the same identity (a hash of the
 * identity's namespace, labels and ports as written) costs a lookup and
 * nothing else: only the pods that changed reach the cache and the policy.
 * Not while a list is applied: every pod of a list is set again, as the
 * sweeps that follow it need.
 *
 * Invariants:
 *  1. A slice's record lists, sorted by "ns/name", every pod its last
 *     applied event held (valid ones only), with its address and the hash
 *     of its identity.
 *  2. Every pod the pod cache holds on another node came from a record
 *     (or the list being applied); so peerslice_clear, a list that sweeps
 *     the cache's other nodes (PODCACHE_OTHERS) and POLICY_PEERS, leaves
 *     no other node's pod behind.
 *
 * Cost: an event costs its slice's pods (at most PODPEERSLICE_MAX_PODS),
 * whatever the cluster's size: lookups by name in the pod cache, a merge
 * of two sorted lists.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/peerslice.h"
#include "lib/jview.h"
#include "model/model.h"

/* A pod of a slice's record. */
struct pentry {
	char *key;		/* "ns/name" */
	in_addr_t ip;
	uint64_t ident;		/* its identity's hash (ident_hash) */
};

struct pslice {
	struct hmap_node by_name;
	char *node;
	struct pentry *e;	/* sorted by key (invariant 1) */
	size_t n;
	uint32_t gen;
	char name[];
};

/* An identity of the slice being applied, built when first used. */
struct pident {
	struct jval v;
	const char *ns;
	uint64_t hash;
	json_t *labels, *spec;	/* owned; NULL until built */
	bool built, ok;
};

static struct pslice *slice_find(struct peerslice_table *t, const char *name)
{
	uint64_t h = hmap_hash_str(HMAP_HASH_SEED, name);

	for (struct hmap_node *n = hmap_first_with(&t->slices, h); n; n = hmap_next_with(n)) {
		struct pslice *s = HMAP_ENTRY(n, struct pslice, by_name);

		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

static void entries_free(struct pentry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].key);
	free(e);
}

static void slice_drop(struct peerslice_table *t, struct pslice *s)
{
	hmap_remove(&t->slices, &s->by_name);
	t->pods -= s->n;
	entries_free(s->e, s->n);
	free(s->node);
	free(s);
}

static int entry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct pentry *)x)->key, ((const struct pentry *)y)->key);
}

/* The record's entry of key, or NULL. */
static const struct pentry *entry_find(const struct pslice *s, const char *key)
{
	struct pentry k = { .key = (char *)key };

	return s && s->n ? bsearch(&k, s->e, s->n, sizeof(*s->e), entry_cmp) : NULL;
}

/* A hash of v as written: types, keys, strings and numbers, in order (the
 * controller writes an identity the same way each time). */
static uint64_t value_hash(struct jval v, uint64_t h)
{
	enum jval_type t = jval_type(v);
	char num[24];

	h = (h ^ (uint64_t)t) * 0x100000001b3ull;
	switch (t) {
	case JVAL_OBJECT:
	case JVAL_ARRAY:
		for (struct jval e = jval_first(v); jval_ok(e); e = jval_next(e)) {
			if (jval_key(e))
				h = hmap_hash_str(h, jval_key(e));
			h = value_hash(e, h);
		}
		return h;
	case JVAL_STRING:
		return hmap_hash_str(h, jval_str(v));
	case JVAL_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)jval_integer(v));
		return hmap_hash_str(h, num);
	default:
		return h;
	}
}

/* The labels and spec of identity id: {containers: [{ports: [{name,
 * protocol, containerPort}]}]}, as a Pod's spec names its ports. */
static bool ident_build(struct pident *id)
{
	json_t *ports;

	if (id->built)
		return id->ok;
	id->built = true;
	id->ns = jval_str(jval_get(id->v, "namespace"));
	if (!id->ns || !id->ns[0])
		return false;
	id->labels = jval_is_object(jval_get(id->v, "labels")) ? jval_to_json(jval_get(id->v, "labels"))
							      : json_object();
	ports = json_array();
	for (struct jval p = jval_first(jval_array(jval_get(id->v, "ports"))); jval_ok(p); p = jval_next(p)) {
		const char *name = jval_str(jval_get(p, "name"));
		const char *proto = jval_str(jval_get(p, "protocol"));
		int64_t port = jval_integer(jval_get(p, "port"));

		if (name && port > 0 && port <= 65535)
			json_array_append_new(ports, json_pack("{s:s, s:s, s:I}", "name", name, "protocol",
							       proto ? proto : "TCP", "containerPort",
							       (json_int_t)port));
	}
	id->spec = json_pack("{s:[{s:o}]}", "containers", "ports", ports);
	id->ok = id->labels && id->spec;
	return id->ok;
}

/* Pod ns/name of node, at ip, with identity id. */
static void take(struct agent *a, const char *ns, const char *name, const char *node, in_addr_t ip,
		 const struct pident *id)
{
	struct podcache_pod *p = podcache_find(&a->pods, ns, name);

	if (p && podcache_is_self(&a->pods, p))
		return;		/* the Pods watch's */
	if (p && p->ip != ip)
		remote_release(a, p->ip, p);
	p = podcache_set(&a->pods, &(struct podcache_in){ .ns = ns, .name = name, .node = node,
							  .container_id = "", .ip = ip });
	if (!p) {
		LOG_ERR("podpeerslice: pod %s/%s: %s", ns, name, strerror(errno));
		return;
	}
	/* the policy first: a new entry is written with its identity */
	policy_peer_set(a->policy, ns, name, ip, id->labels, id->spec);
	remote_pod_program(a, p);
}

/* "ns/name", which left a slice of node: forgotten unless a newer
 * source holds it (the cache has it on this node, or on another). */
static void forget(struct agent *a, const char *key, const char *node)
{
	const char *slash = strchr(key, '/');
	char ns[256];
	struct podcache_pod *p;

	if (!slash || (size_t)(slash - key) >= sizeof(ns))
		return;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = 0;
	p = podcache_find(&a->pods, ns, slash + 1);
	if (!p || podcache_is_self(&a->pods, p) || !p->node || strcmp(p->node->name, node) != 0)
		return;
	policy_peer_del(a->policy, ns, slash + 1);
	remote_release(a, p->ip, p);
	podcache_del(&a->pods, p);
}

/* The pods of slice obj (node's), applied, but those record s (may be
 * NULL) already holds as they are (unless listing); its new entries,
 * sorted, into *out and *n.  -ENOMEM when they could not be kept (the
 * pods are applied all the same): then the slice's record stays as it
 * was, and nothing is forgotten until the next event or list. */
static int apply_pods(struct agent *a, struct jval obj, const char *node, const struct pslice *s, bool listing,
		      struct pentry **out, size_t *n_out)
{
	struct pident ids[PODPEERSLICE_MAX_PODS];
	struct jval list = jval_array(jval_get(obj, "pods"));
	size_t nids = 0, n = 0, cap = jval_size(list);
	struct pentry *e = calloc(cap ? cap : 1, sizeof(*e));
	bool lost = !e;

	for (struct jval v = jval_first(jval_array(jval_get(obj, "identities")));
	     jval_ok(v) && nids < PODPEERSLICE_MAX_PODS; v = jval_next(v)) {
		const char *ns = jval_str(jval_get(v, "namespace"));

		ids[nids++] = (struct pident){ .v = v, .ns = ns, .hash = value_hash(v, HMAP_HASH_SEED),
					       .built = !ns || !ns[0] };
	}
	for (struct jval it = jval_first(list); jval_ok(it); it = jval_next(it)) {
		const char *name = jval_str(jval_get(it, "name")), *ip = jval_str(jval_get(it, "ip"));
		int64_t i = jval_integer(jval_get(it, "identity"));
		const struct pentry *was;
		struct in_addr ia;
		char *key;

		if (!name || !name[0] || strchr(name, '/') || !ip || inet_pton(AF_INET, ip, &ia) != 1 ||
		    !ia.s_addr || !jval_is_integer(jval_get(it, "identity")) || i < 0 || (size_t)i >= nids ||
		    !ids[i].ns || !ids[i].ns[0])
			continue;	/* not as the controller writes it: skipped */
		if (asprintf(&key, "%s/%s", ids[i].ns, name) < 0) {
			lost = true;
			key = NULL;
		}
		was = key ? entry_find(s, key) : NULL;
		if (listing || !was || was->ip != ia.s_addr || was->ident != ids[i].hash) {
			if (!ident_build(&ids[i])) {
				free(key);
				continue;
			}
			take(a, ids[i].ns, name, node, ia.s_addr, &ids[i]);
		}
		if (!lost && key && n < cap) {
			e[n++] = (struct pentry){ .key = key, .ip = ia.s_addr, .ident = ids[i].hash };
		} else {
			free(key);
			lost = true;
		}
	}
	for (size_t i = 0; i < nids; i++) {
		json_decref(ids[i].labels);
		json_decref(ids[i].spec);
	}
	if (lost) {
		entries_free(e, n);
		return -ENOMEM;
	}
	qsort(e, n, sizeof(*e), entry_cmp);
	*out = e;
	*n_out = n;
	return 0;
}

void peerslice_apply(struct agent *a, struct jval obj)
{
	struct peerslice_table *t = &a->peers;
	const char *name = obj_view_name(obj), *node = jval_str(jval_get(obj, "node"));
	struct pslice *s;
	struct pentry *e;
	size_t n, i = 0, j = 0;

	if (!name || !node || !node[0])
		return;
	s = slice_find(t, name);
	if (strcmp(node, a->o.node) == 0) {
		if (s)
			peerslice_remove(a, obj);	/* (a slice never changes node; still) */
		return;
	}
	if (apply_pods(a, obj, node, s, t->listing, &e, &n) < 0) {
		LOG_ERR("podpeerslice %s: no memory to keep its pods; the next list sweeps", name);
		return;
	}
	if (s) {
		/* merge: what the record held and the event no more */
		while (i < s->n) {
			int c = j < n ? strcmp(s->e[i].key, e[j].key) : -1;

			if (c < 0)
				forget(a, s->e[i++].key, s->node);
			else if (c == 0)
				i++, j++;
			else
				j++;
		}
		t->pods -= s->n;
		entries_free(s->e, s->n);
		s->e = NULL;
		s->n = 0;
		if (strcmp(s->node, node) != 0) {
			char *dup = strdup(node);

			if (dup) {
				free(s->node);
				s->node = dup;
			}
		}
	} else {
		s = calloc(1, sizeof(*s) + strlen(name) + 1);
		if (!s || !(s->node = strdup(node)) ||
		    hmap_insert(&t->slices, &s->by_name, hmap_hash_str(HMAP_HASH_SEED, name)) < 0) {
			if (s)
				free(s->node);
			free(s);
			entries_free(e, n);
			LOG_ERR("podpeerslice %s: no memory to keep it; the next list sweeps", name);
			return;
		}
		strcpy(s->name, name);
	}
	s->e = e;
	s->n = n;
	s->gen = t->gen;
	t->pods += n;
}

void peerslice_remove(struct agent *a, struct jval obj)
{
	const char *name = obj_view_name(obj);
	struct pslice *s = name ? slice_find(&a->peers, name) : NULL;

	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		forget(a, s->e[i].key, s->node);
	slice_drop(&a->peers, s);
}

void peerslice_begin(struct agent *a)
{
	a->peers.gen++;
	a->peers.listing = true;
	podcache_begin_list(&a->pods, PODCACHE_OTHERS);
	policy_begin_list(a->policy, POLICY_PEERS);
}

static void pod_gone(void *arg, const struct podcache_pod *p)
{
	remote_release(arg, p->ip, p);
}

void peerslice_listed(struct agent *a)
{
	struct peerslice_table *t = &a->peers;

	for (struct hmap_node *n = hmap_first(&t->slices), *next; n; n = next) {
		struct pslice *s = HMAP_ENTRY(n, struct pslice, by_name);

		next = hmap_next(&t->slices, n);
		if (s->gen != t->gen)
			slice_drop(t, s);	/* its pods: swept just below */
	}
	podcache_sweep(&a->pods, PODCACHE_OTHERS, pod_gone, a);
	policy_listed(a->policy, POLICY_PEERS);
	t->listing = false;
}

void peerslice_clear(struct agent *a)
{
	peerslice_begin(a);
	peerslice_listed(a);
}

void peerslice_free(struct peerslice_table *t)
{
	for (struct hmap_node *n = hmap_first(&t->slices), *next; n; n = next) {
		next = hmap_next(&t->slices, n);
		slice_drop(t, HMAP_ENTRY(n, struct pslice, by_name));
	}
	hmap_free(&t->slices);
	t->pods = 0;
}
