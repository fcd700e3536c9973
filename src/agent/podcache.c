/*
 * podcache.c — pods by name, by IP, by namespace and by node (podcache.h).
 *
 * Invariants:
 *  1. A pod is in c->pods under hash(ns, name), exactly once; in c->ips
 *     under its IP iff ip != 0; on its namespace group's list and its
 *     node group's list; each group's npods counts its list.
 *  2. A group is in its table iff npods > 0, or (a namespace) netns.
 *     A group whose last reason goes is freed at once (group_release).
 *  3. container_id != NULL iff the pod's node is c->self.
 *  4. podcache_set() changes nothing when it fails: what may fail (a
 *     group, the container ID, the record, table room) is done before the
 *     first change, and the inserts after it have their room reserved.
 */
#include "agent/podcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t pod_hash(const char *ns, const char *name)
{
	return hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, ns), name);
}

/* An insert whose room was reserved cannot fail. */
static void insert_reserved(struct hmap *m, struct hmap_node *node, uint64_t hash)
{
	if (hmap_insert(m, node, hash) < 0)
		abort();
}

/* ---- groups ---- */

static struct podcache_group *group_find(const struct hmap *t, const char *name)
{
	uint64_t h = hmap_hash_str(HMAP_HASH_SEED, name);

	for (struct hmap_node *e = hmap_first_with(t, h); e; e = hmap_next_with(e)) {
		struct podcache_group *g = HMAP_ENTRY(e, struct podcache_group, by_name);

		if (strcmp(g->name, name) == 0)
			return g;
	}
	return NULL;
}

static struct podcache_group *group_get(struct hmap *t, const char *name, bool of_node)
{
	struct podcache_group *g = group_find(t, name);
	size_t len = strlen(name);

	if (g)
		return g;
	g = calloc(1, sizeof(*g) + len + 1);
	if (!g)
		return NULL;
	memcpy(g->name, name, len + 1);
	dlist_init(&g->pods);
	g->of_node = of_node;
	if (hmap_insert(t, &g->by_name, hmap_hash_str(HMAP_HASH_SEED, name)) < 0) {
		free(g);
		return NULL;
	}
	return g;
}

/* Invariant 2: free g when nothing names it any more. */
static void group_release(struct hmap *t, struct podcache_group *g)
{
	if (g->npods || g->netns)
		return;
	(void)hmap_remove(t, &g->by_name);
	free(g);
}

static void groups_free(struct hmap *t)
{
	for (struct hmap_node *e = hmap_first(t), *next; e; e = next) {
		next = hmap_next(t, e);
		free(HMAP_ENTRY(e, struct podcache_group, by_name));
	}
	hmap_free(t);
}

/* ---- pods ---- */

void podcache_init(struct podcache *c, const char *self)
{
	memset(c, 0, sizeof(*c));
	c->self = self;
}

size_t podcache_count(const struct podcache *c)
{
	return c->pods.n;
}

struct podcache_pod *podcache_find(const struct podcache *c, const char *ns, const char *name)
{
	for (struct hmap_node *e = hmap_first_with(&c->pods, pod_hash(ns, name)); e; e = hmap_next_with(e)) {
		struct podcache_pod *p = HMAP_ENTRY(e, struct podcache_pod, by_name);

		if (strcmp(p->name, name) == 0 && strcmp(p->ns->name, ns) == 0)
			return p;
	}
	return NULL;
}

static void group_join(struct podcache_group *g, struct dlist *link)
{
	dlist_append(&g->pods, link);
	g->npods++;
}

static void group_leave(struct hmap *t, struct podcache_group *g, struct dlist *link)
{
	dlist_remove(link);
	g->npods--;
	group_release(t, g);
}

bool podcache_is_self(const struct podcache *c, const struct podcache_pod *p)
{
	return c->self && p->node && strcmp(p->node->name, c->self) == 0;
}

/* The generation of p's scope: its node's, self or the others. */
static uint32_t *scope_gen(struct podcache *c, const struct podcache_pod *p)
{
	return podcache_is_self(c, p) ? &c->gen_self : &c->gen_others;
}

struct podcache_pod *podcache_set(struct podcache *c, const struct podcache_in *in)
{
	struct podcache_pod *p = podcache_find(c, in->ns, in->name);
	struct podcache_group *node = NULL, *ns = NULL;
	const char *node_name = in->node ? in->node : "";
	char *cid = NULL;
	bool fresh = !p;

	/* everything that may fail, before anything changes (invariant 4) */
	if (hmap_reserve(&c->pods, 1) < 0 || hmap_reserve(&c->ips, 1) < 0)
		goto fail;
	if (c->self && strcmp(node_name, c->self) == 0 &&
	    !(cid = strdup(in->container_id ? in->container_id : "")))
		goto fail;
	node = group_get(&c->nodes, node_name, true);
	ns = p ? p->ns : group_get(&c->nss, in->ns, false);
	if (!node || !ns)
		goto fail;
	if (fresh) {
		size_t len = strlen(in->name);

		p = calloc(1, sizeof(*p) + len + 1);
		if (!p)
			goto fail;
		memcpy(p->name, in->name, len + 1);
		insert_reserved(&c->pods, &p->by_name, pod_hash(in->ns, in->name));
		p->ns = ns;
		group_join(ns, &p->in_ns);
	}
	if (p->node != node) {
		if (p->node)
			group_leave(&c->nodes, p->node, &p->in_node);
		p->node = node;
		group_join(node, &p->in_node);
	}
	if (p->ip != in->ip) {
		if (p->ip)
			(void)hmap_remove(&c->ips, &p->by_ip);
		p->ip = in->ip;
		if (p->ip)
			insert_reserved(&c->ips, &p->by_ip, p->ip);
	}
	free(p->container_id);
	p->container_id = cid;
	p->gen = *scope_gen(c, p);
	return p;
fail:
	free(cid);
	if (node)
		group_release(&c->nodes, node);
	if (ns && fresh)
		group_release(&c->nss, ns);
	errno = ENOMEM;
	return NULL;
}

void podcache_del(struct podcache *c, struct podcache_pod *p)
{
	(void)hmap_remove(&c->pods, &p->by_name);
	if (p->ip)
		(void)hmap_remove(&c->ips, &p->by_ip);
	group_leave(&c->nss, p->ns, &p->in_ns);
	group_leave(&c->nodes, p->node, &p->in_node);
	free(p->container_id);
	free(p);
}

struct podcache_pod *podcache_by_ip(const struct podcache *c, in_addr_t ip)
{
	return ip ? HMAP_ENTRY(hmap_first_with(&c->ips, ip), struct podcache_pod, by_ip) : NULL;
}

/* (the hash of an IP is the IP: every record with it holds it) */
struct podcache_pod *podcache_next_ip(const struct podcache_pod *p)
{
	return HMAP_ENTRY(hmap_next_with(&p->by_ip), struct podcache_pod, by_ip);
}

struct podcache_pod *podcache_first(const struct podcache *c)
{
	return HMAP_ENTRY(hmap_first(&c->pods), struct podcache_pod, by_name);
}

struct podcache_pod *podcache_next(const struct podcache *c, const struct podcache_pod *p)
{
	return HMAP_ENTRY(hmap_next(&c->pods, &p->by_name), struct podcache_pod, by_name);
}

const char *podcache_container_id(const struct podcache_pod *p)
{
	return p->container_id ? p->container_id : "";
}

void podcache_free(struct podcache *c)
{
	for (struct podcache_pod *p = podcache_first(c), *next; p; p = next) {
		next = podcache_next(c, p);
		free(p->container_id);
		free(p);
	}
	hmap_free(&c->pods);
	hmap_free(&c->ips);
	groups_free(&c->nss);
	groups_free(&c->nodes);
	podcache_init(c, c->self);
}

/* ---- relists ---- */

void podcache_begin_list(struct podcache *c, enum podcache_scope scope)
{
	if (scope != PODCACHE_OTHERS)
		c->gen_self++;
	if (scope != PODCACHE_SELF)
		c->gen_others++;
}

static void sweep_one(struct podcache *c, struct podcache_pod *p,
		      void (*gone)(void *arg, const struct podcache_pod *p), void *arg)
{
	if (p->gen == *scope_gen(c, p))
		return;
	if (gone)
		gone(arg, p);
	podcache_del(c, p);
}

void podcache_sweep(struct podcache *c, enum podcache_scope scope,
		    void (*gone)(void *arg, const struct podcache_pod *p), void *arg)
{
	if (scope == PODCACHE_SELF) {
		struct podcache_group *g = c->self ? podcache_node_find(c, c->self) : NULL;

		/* (next taken first: the group goes with its last pod) */
		for (struct podcache_pod *p = podcache_group_first(g), *next; p; p = next) {
			next = podcache_group_next(g, p);
			sweep_one(c, p, gone, arg);
		}
		return;
	}
	for (struct podcache_pod *p = podcache_first(c), *next; p; p = next) {
		next = podcache_next(c, p);
		if (scope == PODCACHE_EVERY || !podcache_is_self(c, p))
			sweep_one(c, p, gone, arg);
	}
}

/* ---- groups ---- */

struct podcache_group *podcache_ns_find(const struct podcache *c, const char *ns)
{
	return group_find(&c->nss, ns);
}

struct podcache_group *podcache_node_find(const struct podcache *c, const char *node)
{
	return group_find(&c->nodes, node);
}

/* The pod on g's list at link e (NULL at its end). */
static struct podcache_pod *member(const struct podcache_group *g, const struct dlist *e)
{
	if (!e)
		return NULL;
	return g->of_node ? DLIST_ENTRY(e, struct podcache_pod, in_node) : DLIST_ENTRY(e, struct podcache_pod, in_ns);
}

struct podcache_pod *podcache_group_first(const struct podcache_group *g)
{
	return g ? member(g, dlist_first(&g->pods)) : NULL;
}

struct podcache_pod *podcache_group_next(const struct podcache_group *g, const struct podcache_pod *p)
{
	return member(g, dlist_next(&g->pods, g->of_node ? &p->in_node : &p->in_ns));
}

/* ---- NetNamespaces ---- */

int podcache_netns_set(struct podcache *c, const char *ns, uint32_t vnid, bool *changed)
{
	struct podcache_group *g = group_get(&c->nss, ns, false);

	if (!g)
		return -ENOMEM;
	*changed = !g->netns || g->vnid != vnid;
	g->netns = true;
	g->vnid = vnid;
	g->gen = c->netns_gen;
	return 0;
}

static void netns_forget(struct podcache *c, struct podcache_group *g)
{
	g->netns = false;
	g->vnid = 0;
	group_release(&c->nss, g);
}

void podcache_netns_del(struct podcache *c, const char *ns)
{
	struct podcache_group *g = group_find(&c->nss, ns);

	if (g && g->netns)
		netns_forget(c, g);
}

bool podcache_vnid(const struct podcache *c, const char *ns, uint32_t *vnid)
{
	const struct podcache_group *g = group_find(&c->nss, ns);

	if (!g || !g->netns)
		return false;
	*vnid = g->vnid;
	return true;
}

void podcache_begin_netns_list(struct podcache *c)
{
	c->netns_gen++;
}

size_t podcache_netns_sweep(struct podcache *c)
{
	size_t n = 0;

	for (struct hmap_node *e = hmap_first(&c->nss), *next; e; e = next) {
		struct podcache_group *g = HMAP_ENTRY(e, struct podcache_group, by_name);

		next = hmap_next(&c->nss, e);
		if (g->netns && g->gen != c->netns_gen) {
			netns_forget(c, g);
			n++;
		}
	}
	return n;
}
