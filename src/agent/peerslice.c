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
 * Invariants:
 *  1. A slice's record lists, sorted, the "ns/name" of every pod its last
 *     applied event held (valid ones only).
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

struct pslice {
	struct hmap_node by_name;
	char *node;
	char **keys;		/* "ns/name", sorted (invariant 1) */
	size_t n;
	uint32_t gen;
	char name[];
};

/* An identity of the slice being applied, built when first used. */
struct pident {
	struct jval v;
	const char *ns;
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

static void keys_free(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

static void slice_drop(struct peerslice_table *t, struct pslice *s)
{
	hmap_remove(&t->slices, &s->by_name);
	t->pods -= s->n;
	keys_free(s->keys, s->n);
	free(s->node);
	free(s);
}

static int key_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
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
	remote_pod_program(a, p);
	policy_peer_set(a->policy, ns, name, ip, id->labels, id->spec);
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

/* The pods of slice obj (node's), applied; their keys, sorted, into
 * *keys_out and *n.  -ENOMEM when the keys could not be kept (the pods
 * are applied all the same): then the slice's record stays as it was,
 * and nothing is forgotten until the next event or list. */
static int apply_pods(struct agent *a, struct jval obj, const char *node, char ***keys_out, size_t *n_out)
{
	struct pident ids[PODPEERSLICE_MAX_PODS];
	struct jval list = jval_array(jval_get(obj, "pods"));
	size_t nids = 0, n = 0, cap = jval_size(list);
	char **keys = calloc(cap ? cap : 1, sizeof(*keys));
	bool lost = !keys;

	for (struct jval v = jval_first(jval_array(jval_get(obj, "identities")));
	     jval_ok(v) && nids < PODPEERSLICE_MAX_PODS; v = jval_next(v))
		ids[nids++] = (struct pident){ .v = v };
	for (struct jval e = jval_first(list); jval_ok(e); e = jval_next(e)) {
		const char *name = jval_str(jval_get(e, "name")), *ip = jval_str(jval_get(e, "ip"));
		int64_t i = jval_integer(jval_get(e, "identity"));
		struct in_addr ia;

		if (!name || !name[0] || strchr(name, '/') || !ip || inet_pton(AF_INET, ip, &ia) != 1 ||
		    !ia.s_addr || !jval_is_integer(jval_get(e, "identity")) || i < 0 || (size_t)i >= nids ||
		    !ident_build(&ids[i]))
			continue;	/* not as the controller writes it: skipped */
		take(a, ids[i].ns, name, node, ia.s_addr, &ids[i]);
		if (!lost && n < cap && asprintf(&keys[n], "%s/%s", ids[i].ns, name) >= 0)
			n++;
		else
			lost = true;
	}
	for (size_t i = 0; i < nids; i++) {
		json_decref(ids[i].labels);
		json_decref(ids[i].spec);
	}
	if (lost) {
		keys_free(keys, n);
		return -ENOMEM;
	}
	qsort(keys, n, sizeof(*keys), key_cmp);
	*keys_out = keys;
	*n_out = n;
	return 0;
}

void peerslice_apply(struct agent *a, struct jval obj)
{
	struct peerslice_table *t = &a->peers;
	const char *name = obj_view_name(obj), *node = jval_str(jval_get(obj, "node"));
	struct pslice *s;
	char **keys;
	size_t n, i = 0, j = 0;

	if (!name || !node || !node[0])
		return;
	s = slice_find(t, name);
	if (strcmp(node, a->o.node) == 0) {
		if (s)
			peerslice_remove(a, obj);	/* (a slice never changes node; still) */
		return;
	}
	if (apply_pods(a, obj, node, &keys, &n) < 0) {
		LOG_ERR("podpeerslice %s: no memory to keep its pods; the next list sweeps", name);
		return;
	}
	if (s) {
		/* merge: what the record held and the event no more */
		while (i < s->n) {
			int c = j < n ? strcmp(s->keys[i], keys[j]) : -1;

			if (c < 0)
				forget(a, s->keys[i++], s->node);
			else if (c == 0)
				i++, j++;
			else
				j++;
		}
		t->pods -= s->n;
		keys_free(s->keys, s->n);
		s->keys = NULL;
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
			keys_free(keys, n);
			LOG_ERR("podpeerslice %s: no memory to keep it; the next list sweeps", name);
			return;
		}
		strcpy(s->name, name);
	}
	s->keys = keys;
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
		forget(a, s->keys[i], s->node);
	slice_drop(&a->peers, s);
}

void peerslice_begin(struct agent *a)
{
	a->peers.gen++;
	podcache_begin_list(&a->pods);
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
