/*
 * layout.c — from the engine's state to what HAProxy runs (layout.h has
 * the mapping, slot and weight rules).
 *
 * How a build works:
 *   1. Every VS but the SNI children, in name order: its backends are built
 *      into a scratch list (struct part), its listeners checked against
 *      those taken (a u64map keyed by VIP:port) and its backend names
 *      against those taken (a u64map keyed by a hash of the name); on a
 *      conflict the scratch is freed and the VS reported, else it is moved
 *      into the layout.
 *   2. The SNI children the same way, their routes and certificates going
 *      to their parent's HTTPS listener (found by a u64map keyed by the
 *      parent's name).
 *   3. Per frontend, routes are sorted longest key first and SNI entries
 *      by file; a second entry for the same key or file is dropped and
 *      reported (two children claiming one host).
 *   4. Frontends and backends are sorted by name.
 * Each step is O(n log n) in the objects; nothing is scanned per object.
 */
#include "lb/layout.h"

#include "lib/errmsg.h"
#include "lib/u64map.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a growable array of *n items: its capacity is implied by n (0, then
 * powers of two from 8), so no capacity is stored; an array shortened
 * in place keeps at least the implied capacity.  Returns the new zeroed
 * element, or NULL with errno ENOMEM, or E2BIG past max. */
static void *push(void **items, size_t *n, size_t each, size_t max)
{
	void *a;

	if (*n >= max) {
		errno = E2BIG;
		return NULL;
	}
	if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0)) {
		a = realloc(*items, (*n ? *n * 2 : 8) * each);
		if (!a) {
			errno = ENOMEM;
			return NULL;
		}
		*items = a;
	}
	a = (char *)*items + (*n)++ * each;
	memset(a, 0, each);
	return a;
}

static uint64_t hash_str(const char *s)
{
	return u64map_hash_bytes(s, strlen(s));
}

size_t lb_slots_for(size_t n, size_t min)
{
	size_t s = min;

	while (s < n)
		s *= 2;
	return s;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void backend_clear(struct lb_backend *b)
{
	for (size_t i = 0; b->pools && i < b->n_pools; i++) {
		free(b->pools[i].pool);
		free(b->pools[i].ca_file);
		free(b->pools[i].ca_pem);
		free(b->pools[i].slots);
	}
	free(b->pools);
	free(b->name);
}

static void frontend_clear(struct lb_frontend *f)
{
	size_t i;

	for (i = 0; i < f->n_routes; i++) {
		free(f->routes[i].key);
		free(f->routes[i].backend);
	}
	for (i = 0; i < f->n_redirects; i++) {
		free(f->redirects[i].host);
		free(f->redirects[i].location);
	}
	for (i = 0; i < f->n_snis; i++) {
		free(f->snis[i].host);
		free(f->snis[i].file);
		wipe_free(f->snis[i].pem);
	}
	free(f->routes);
	free(f->redirects);
	free(f->snis);
	free(f->name);
}

void lb_layout_free(struct lb_layout *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_frontends; i++)
		frontend_clear(&l->frontends[i]);
	for (size_t i = 0; i < l->n_backends; i++)
		backend_clear(&l->backends[i]);
	free(l->frontends);
	free(l->backends);
	free(l);
}

static int backend_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_backend *)a)->name, ((const struct lb_backend *)b)->name);
}

static int frontend_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_frontend *)a)->name, ((const struct lb_frontend *)b)->name);
}

const struct lb_backend *lb_layout_find_backend(const struct lb_layout *l, const char *name)
{
	struct lb_backend key = { .name = (char *)name };

	return l && l->n_backends ? bsearch(&key, l->backends, l->n_backends, sizeof(key), backend_cmp) : NULL;
}

const struct lb_frontend *lb_layout_find_frontend(const struct lb_layout *l, const char *name)
{
	struct lb_frontend key = { .name = (char *)name };

	return l && l->n_frontends ? bsearch(&key, l->frontends, l->n_frontends, sizeof(key), frontend_cmp) : NULL;
}

size_t lb_layout_servers(const struct lb_layout *l)
{
	size_t n = 0;

	for (size_t b = 0; b < l->n_backends; b++)
		for (size_t p = 0; p < l->backends[b].n_pools; p++)
			for (size_t s = 0; s < l->backends[b].pools[p].n_slots; s++)
				n += l->backends[b].pools[p].slots[s].used;
	return n;
}

/* ---- one VS's contribution, built aside before it is committed ---- */

struct part {
	struct lb_backend *backends;
	size_t n_backends;
	struct lb_frontend *frontends;	/* its own listeners */
	size_t n_frontends;
	struct lb_route *routes;	/* one per backend, to it */
	size_t n_routes;
	struct lb_sni *snis;		/* SNI child: its certificate */
	size_t n_snis;
};

static void part_clear(struct part *p)
{
	size_t i;

	for (i = 0; i < p->n_backends; i++)
		backend_clear(&p->backends[i]);
	for (i = 0; i < p->n_frontends; i++)
		frontend_clear(&p->frontends[i]);
	for (i = 0; i < p->n_routes; i++) {
		free(p->routes[i].key);
		free(p->routes[i].backend);
	}
	for (i = 0; i < p->n_snis; i++) {
		free(p->snis[i].host);
		free(p->snis[i].file);
		wipe_free(p->snis[i].pem);
	}
	free(p->backends);
	free(p->frontends);
	free(p->routes);
	free(p->snis);
	memset(p, 0, sizeof(*p));
}

struct builder {
	const struct lb_state *state;
	const struct lb_layout *prev;
	size_t min_slots;
	struct lb_layout *l;
	struct u64map listeners;	/* VIP << 16 | port -> 1 */
	struct u64map backend_names;	/* hash(name) -> 1 */
	struct u64map https_of_vs;	/* hash(VS name) -> index of its HTTPS frontend */
	char *report;
	size_t len;
	char why[256];			/* why the VS at hand was left out */
};

static char *sanitize(const char *s)
{
	char *o = strdup(s);

	for (char *c = o; c && *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '_' || *c == '.' || *c == ':'))
			*c = '_';
	return o;
}

static uint64_t server_key(uint32_t ip, uint16_t port)
{
	return (uint64_t)ip << 16 | port;
}

static const struct lb_slot_pool *prev_pool(const struct builder *b, const char *backend, const char *pool)
{
	const struct lb_backend *pb = lb_layout_find_backend(b->prev, backend);

	for (size_t i = 0; pb && i < pb->n_pools; i++)
		if (strcmp(pb->pools[i].pool, pool) == 0)
			return &pb->pools[i];
	return NULL;
}

/* fill sp's slots with pool's servers, sticky to prev (layout.h) */
static int assign_slots(struct lb_slot_pool *sp, const struct lb_pool *pool, const struct lb_slot_pool *prev,
			size_t min_slots)
{
	struct u64map wanted = { 0 };
	size_t next = 0;
	int r = 0;

	sp->n_slots = lb_slots_for(pool->n_servers, min_slots);
	if (prev) {
		sp->n_slots = prev->n_slots;
		while (sp->n_slots < pool->n_servers)
			sp->n_slots *= 2;
	}
	sp->slots = calloc(sp->n_slots, sizeof(*sp->slots));
	if (!sp->slots)
		return -ENOMEM;
	/* wanted: server -> 1 while unplaced */
	for (size_t i = 0; i < pool->n_servers; i++)
		if ((r = u64map_put(&wanted, server_key(pool->servers[i].ip, pool->servers[i].port), 1)))
			goto out;
	for (size_t i = 0; prev && i < prev->n_slots && i < sp->n_slots; i++) {
		const struct lb_slot *ps = &prev->slots[i];

		if (ps->used && u64map_del(&wanted, server_key(ps->ip, ps->port)))
			sp->slots[i] = (struct lb_slot){ .used = true, .ip = ps->ip, .port = ps->port };
	}
	for (size_t i = 0; i < pool->n_servers; i++) {
		const struct lb_server *s = &pool->servers[i];

		if (!u64map_get(&wanted, server_key(s->ip, s->port), NULL))
			continue;
		while (sp->slots[next].used)
			next++;
		sp->slots[next] = (struct lb_slot){ .used = true, .ip = s->ip, .port = s->port };
	}
out:
	u64map_free(&wanted);
	return r;
}

static void assign_weights(struct lb_backend *be)
{
	double max = 0;

	for (size_t i = 0; i < be->n_pools; i++) {
		const struct lb_slot_pool *sp = &be->pools[i];
		size_t n = 0;

		for (size_t s = 0; s < sp->n_slots; s++)
			n += sp->slots[s].used;
		if (n && sp->ratio && (double)sp->ratio / (double)n > max)
			max = (double)sp->ratio / (double)n;
	}
	for (size_t i = 0; i < be->n_pools; i++) {
		struct lb_slot_pool *sp = &be->pools[i];
		size_t n = 0;
		long w = 0;

		for (size_t s = 0; s < sp->n_slots; s++)
			n += sp->slots[s].used;
		if (n && sp->ratio && max > 0) {
			w = lround(LB_WEIGHT_MAX * ((double)sp->ratio / (double)n) / max);
			w = w < 1 ? 1 : w > LB_WEIGHT_MAX ? LB_WEIGHT_MAX : w;
		}
		for (size_t s = 0; s < sp->n_slots; s++)
			sp->slots[s].weight = sp->slots[s].used ? (uint16_t)w : 0;
	}
}

static int add_slot_pool(struct builder *b, struct lb_backend *be, const struct lb_vs *vs,
			 const struct lb_member *m)
{
	const struct lb_pool *pool = lb_vs_find_pool(vs, m->pool);
	struct lb_slot_pool *sp;

	for (size_t i = 0; i < be->n_pools; i++)
		if (strcmp(be->pools[i].pool, m->pool) == 0) {
			snprintf(b->why, sizeof(b->why), "pool %s is a member twice under label %s", m->pool,
				 m->label);
			return -EINVAL;
		}
	sp = push((void **)&be->pools, &be->n_pools, sizeof(*sp), LB_POOLS_MAX);
	if (!sp)
		return -errno;
	sp->pool = strdup(pool->name);
	sp->protocol = pool->protocol;
	sp->tls_verify = pool->tls_verify;
	sp->monitor_http = pool->monitor_http;
	sp->ratio = m->ratio;
	if (!sp->pool)
		return -ENOMEM;
	if (pool->protocol == LB_PROTO_HTTPS && pool->tls_verify) {
		if (asprintf(&sp->ca_file, "ca/%s-%016llx.pem", pool->pki_profile,
			     (unsigned long long)hash_str(pool->ca_pem)) < 0) {
			sp->ca_file = NULL;
			return -ENOMEM;
		}
		if (!(sp->ca_pem = strdup(pool->ca_pem)))
			return -ENOMEM;
	}
	return assign_slots(sp, pool, prev_pool(b, be->name, pool->name), b->min_slots);
}

/* the route key of a member: host + path ("/" when none), or for a
 * passthrough listener the host alone */
static int route_key(const struct lb_vs *vs, const struct lb_member *m, bool passthrough, char **out)
{
	const char *host = m->host ? m->host : vs->n_hosts ? vs->hosts[0] : NULL;

	*out = NULL;
	if (!host)
		return -EINVAL;
	if (passthrough)
		*out = strdup(host);
	else if (asprintf(out, "%s%s", host, m->path ? m->path : "/") < 0)
		*out = NULL;
	return *out ? 0 : -ENOMEM;
}

static bool tcp_pool(const struct lb_vs *vs, const char *name)
{
	const struct lb_pool *p = lb_vs_find_pool(vs, name);

	return p->protocol == LB_PROTO_TCP || p->protocol == LB_PROTO_UDP;
}

/* the backends of vs into part, one per (pool group, label), and the
 * routes to them (into routes: one per backend) */
static int build_backends(struct builder *b, const struct lb_vs *vs, struct part *p)
{
	bool passthrough = vs->type == LB_VS_PASSTHROUGH;
	struct u64map by_label = { 0 };
	int r = 0;

	for (size_t g = 0; g < vs->n_groups; g++) {
		const struct lb_pool_group *grp = &vs->groups[g];
		size_t first = p->n_backends;

		u64map_free(&by_label);
		for (size_t i = 0; i < grp->n_members; i++) {
			const struct lb_member *m = &grp->members[i];
			struct lb_backend *be;
			struct lb_route *rt;
			uint64_t at;
			char *label;

			if (tcp_pool(vs, m->pool) != passthrough) {
				snprintf(b->why, sizeof(b->why), "pool %s: protocol %s does not fit a %s listener",
					 m->pool, passthrough ? "HTTP" : "TCP", passthrough ? "passthrough" : "HTTP");
				r = -EINVAL;
				goto out;
			}
			if (u64map_get(&by_label, hash_str(m->label), &at)) {
				be = &p->backends[first + at];
			} else {
				if ((r = u64map_put(&by_label, hash_str(m->label), p->n_backends - first)))
					goto out;
				be = push((void **)&p->backends, &p->n_backends, sizeof(*be),
					  LB_BACKENDS_MAX);
				rt = push((void **)&p->routes, &p->n_routes, sizeof(*rt),
					  LB_BACKENDS_MAX);
				if (!be || !rt) {
					r = -errno;
					goto out;
				}
				be->tcp = passthrough;
				be->http_check = !passthrough;
				label = sanitize(m->label);
				if (!label || asprintf(&be->name, "%s:%s", grp->name, label) < 0)
					be->name = NULL;
				free(label);
				if (!be->name || !(rt->backend = strdup(be->name))) {
					r = -ENOMEM;
					goto out;
				}
				if (route_key(vs, m, passthrough, &rt->key)) {
					snprintf(b->why, sizeof(b->why), "pool group %s: member %s has no host",
						 grp->name, m->pool);
					r = -EINVAL;
					goto out;
				}
				be->n_pools = 0;
			}
			if ((r = add_slot_pool(b, be, vs, m)))
				goto out;
			if (!lb_vs_find_pool(vs, m->pool)->monitor_http)
				be->http_check = false;
		}
	}
	for (size_t i = 0; i < p->n_backends; i++)
		assign_weights(&p->backends[i]);
out:
	u64map_free(&by_label);
	return r;
}

static int add_redirects(const struct lb_vs *vs, struct lb_frontend *fe)
{
	for (size_t i = 0; i < vs->n_redirects; i++) {
		const struct lb_redirect *rd = &vs->redirects[i];
		struct lb_redirect_entry *e;

		if (rd->port != fe->port)
			continue;
		e = push((void **)&fe->redirects, &fe->n_redirects, sizeof(*e), LB_REDIRECTS_MAX);
		if (!e)
			return -errno;
		e->code = rd->code;
		if (!(e->host = strdup(rd->host)) ||
		    asprintf(&e->location, "%s://%s", rd->https ? "https" : "http", rd->host) < 0) {
			e->location = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static int copy_routes(const struct part *p, struct lb_route **routes, size_t *n)
{
	for (size_t i = 0; i < p->n_routes; i++) {
		struct lb_route *rt = push((void **)routes, n, sizeof(*rt), LB_BACKENDS_MAX);

		if (!rt)
			return -errno;
		rt->key = strdup(p->routes[i].key);
		rt->backend = strdup(p->routes[i].backend);
		if (!rt->key || !rt->backend)
			return -ENOMEM;
	}
	return 0;
}

/* the SNI entry of host with certificate name cert, for frontend fe */
static int make_sni(struct builder *b, const char *fe, const char *host, const char *cert, struct lb_sni *out)
{
	const struct lb_cert *c = lb_state_find_cert(b->state, cert);
	size_t n = 0;

	if (!c) {
		snprintf(b->why, sizeof(b->why), "SSLKeyAndCertificate %s not found", cert);
		return -ENOENT;
	}
	n = strlen(c->certificate);
	out->host = strdup(host);
	if (asprintf(&out->file, "certs/%s/%s.pem", fe, host) < 0)
		out->file = NULL;
	if (asprintf(&out->pem, "%s%s%s", c->certificate, n && c->certificate[n - 1] == '\n' ? "" : "\n",
		     c->key) < 0)
		out->pem = NULL;
	return out->host && out->file && out->pem ? 0 : -ENOMEM;
}

static int add_listener(struct builder *b, const struct lb_vs *vs, struct part *p, uint16_t port,
			enum lb_listener kind)
{
	struct lb_frontend *fe;
	int r;

	fe = push((void **)&p->frontends, &p->n_frontends, sizeof(*fe), LB_PORTS_MAX);
	if (!fe)
		return -errno;
	fe->vip = vs->vip;
	fe->port = port;
	fe->kind = kind;
	if (asprintf(&fe->name, "%s:%u", vs->name, port) < 0) {
		fe->name = NULL;
		return -ENOMEM;
	}
	if (kind == LB_LISTEN_HTTP && (r = add_redirects(vs, fe)))
		return r;
	/* own routes: not on a SharedL7's HTTPS listener (its children's),
	 * never on the insecure passthrough companion (redirects only) */
	if (vs->type != LB_VS_PASSTHROUGH_INSECURE && !(vs->type == LB_VS_SHARED_L7 && kind == LB_LISTEN_HTTPS) &&
	    (r = copy_routes(p, &fe->routes, &fe->n_routes)))
		return r;
	if (vs->type == LB_VS_DEDICATED && kind == LB_LISTEN_HTTPS) {
		struct lb_sni *s = push((void **)&fe->snis, &fe->n_snis, sizeof(*s), 1);

		if (!s)
			return -errno;
		if (!vs->cert) {
			snprintf(b->why, sizeof(b->why), "port %u is HTTPS but sslKeyAndCertificate is not set", port);
			return -EINVAL;
		}
		return make_sni(b, fe->name, vs->hosts[0], vs->cert, s);
	}
	return 0;
}

static int build_listeners(struct builder *b, const struct lb_vs *vs, struct part *p)
{
	int r;

	for (size_t i = 0; i < vs->n_ports; i++) {
		enum lb_proto proto = vs->ports[i].protocol;
		enum lb_listener kind = LB_LISTEN_HTTP;
		uint64_t key = (uint64_t)vs->vip << 16 | vs->ports[i].port;

		if (vs->type == LB_VS_PASSTHROUGH)
			kind = LB_LISTEN_TLS_PASSTHROUGH;
		else if (proto == LB_PROTO_HTTPS)
			kind = LB_LISTEN_HTTPS;
		else if (proto != LB_PROTO_HTTP) {
			snprintf(b->why, sizeof(b->why), "port %u: protocol is not HTTP or HTTPS", vs->ports[i].port);
			return -EINVAL;
		}
		if (vs->type == LB_VS_PASSTHROUGH_INSECURE && kind != LB_LISTEN_HTTP)
			continue;
		if (u64map_get(&b->listeners, key, NULL)) {
			snprintf(b->why, sizeof(b->why), "VIP %u.%u.%u.%u port %u is taken by another VirtualService",
				 vs->vip >> 24, vs->vip >> 16 & 255, vs->vip >> 8 & 255, vs->vip & 255,
				 vs->ports[i].port);
			return -EEXIST;
		}
		for (size_t j = 0; j < i; j++)
			if (vs->ports[j].port == vs->ports[i].port) {
				snprintf(b->why, sizeof(b->why), "port %u is listed twice", vs->ports[i].port);
				return -EINVAL;
			}
		if ((r = add_listener(b, vs, p, vs->ports[i].port, kind)))
			return r;
	}
	return 0;
}

static int check_backend_names(struct builder *b, const struct part *p)
{
	struct u64map mine = { 0 };
	int r = 0;

	for (size_t i = 0; i < p->n_backends && !r; i++) {
		uint64_t h = hash_str(p->backends[i].name);

		if (u64map_get(&b->backend_names, h, NULL) || u64map_get(&mine, h, NULL)) {
			snprintf(b->why, sizeof(b->why), "backend name %.200s is used twice", p->backends[i].name);
			r = -EEXIST;
		} else {
			r = u64map_put(&mine, h, 1);
		}
	}
	u64map_free(&mine);
	return r;
}

/* move part's backends (and own frontends) into the layout */
static int commit_part(struct builder *b, const struct lb_vs *vs, struct part *p)
{
	struct lb_layout *l = b->l;
	int r;

	for (size_t i = 0; i < p->n_backends; i++) {
		struct lb_backend *be = push((void **)&l->backends, &l->n_backends, sizeof(*be),
					     LB_BACKENDS_MAX);
		if (!be)
			return -errno;
		*be = p->backends[i];
		if ((r = u64map_put(&b->backend_names, hash_str(be->name), 1)))
			return r;
	}
	p->n_backends = 0;
	for (size_t i = 0; i < p->n_frontends; i++) {
		struct lb_frontend *fe = push((void **)&l->frontends, &l->n_frontends,
					      sizeof(*fe), LB_FRONTENDS_MAX);
		if (!fe)
			return -errno;
		*fe = p->frontends[i];
		if ((r = u64map_put(&b->listeners, (uint64_t)fe->vip << 16 | fe->port, 1)))
			return r;
		if (fe->kind == LB_LISTEN_HTTPS &&
		    (r = u64map_put(&b->https_of_vs, hash_str(vs->name), l->n_frontends - 1)))
			return r;
	}
	p->n_frontends = 0;
	return 0;
}

static int lay_vs(struct builder *b, const struct lb_vs *vs)
{
	struct part p = { 0 };
	int r;

	b->why[0] = '\0';
	if ((r = build_backends(b, vs, &p)) || (r = build_listeners(b, vs, &p)) ||
	    (r = check_backend_names(b, &p)))
		goto out;
	r = commit_part(b, vs, &p);
out:
	part_clear(&p);
	return r;
}

/* an SNI child: backends, and routes and its certificate on the parent's
 * HTTPS listener */
static int lay_child(struct builder *b, const struct lb_vs *vs)
{
	struct part p = { 0 };
	struct lb_frontend *fe;
	struct lb_sni *s;
	uint64_t at;
	int r;

	b->why[0] = '\0';
	if (!u64map_get(&b->https_of_vs, hash_str(vs->parent), &at)) {
		snprintf(b->why, sizeof(b->why), "parent %s has no HTTPS listener here", vs->parent);
		return -ENOENT;
	}
	fe = &b->l->frontends[at];
	if (!vs->cert) {
		snprintf(b->why, sizeof(b->why), "sslKeyAndCertificate is not set");
		return -EINVAL;
	}
	s = push((void **)&p.snis, &p.n_snis, sizeof(*s), 1);
	if (!s) {
		r = -errno;
		goto out;
	}
	if ((r = make_sni(b, fe->name, vs->hosts[0], vs->cert, s)) || (r = build_backends(b, vs, &p)) ||
	    (r = check_backend_names(b, &p)))
		goto out;
	if ((r = copy_routes(&p, &fe->routes, &fe->n_routes)))
		goto out;
	s = push((void **)&fe->snis, &fe->n_snis, sizeof(*s), LB_BACKENDS_MAX);
	if (!s) {
		r = -errno;
		goto out;
	}
	*s = p.snis[0];
	p.n_snis = 0;
	r = commit_part(b, vs, &p);
out:
	part_clear(&p);
	return r;
}

static int route_cmp(const void *a, const void *b)
{
	const struct lb_route *x = a, *y = b;
	size_t lx = strlen(x->key), ly = strlen(y->key);

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int sni_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_sni *)a)->file, ((const struct lb_sni *)b)->file);
}

static int redirect_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_redirect_entry *)a)->host, ((const struct lb_redirect_entry *)b)->host);
}

/* sort a frontend's entries; drop later duplicates, reporting them */
static void tidy_frontend(struct builder *b, struct lb_frontend *fe)
{
	size_t w, i;

	if (fe->n_routes)
		qsort(fe->routes, fe->n_routes, sizeof(*fe->routes), route_cmp);
	for (w = 0, i = 0; i < fe->n_routes; i++) {
		if (w && strcmp(fe->routes[w - 1].key, fe->routes[i].key) == 0) {
			errmsg_line(b->report, b->len, "listener %s: route %s to %s dropped: %s has it already",
				    fe->name, fe->routes[i].key, fe->routes[i].backend, fe->routes[w - 1].backend);
			free(fe->routes[i].key);
			free(fe->routes[i].backend);
			continue;
		}
		fe->routes[w++] = fe->routes[i];
	}
	fe->n_routes = w;
	if (fe->n_snis)
		qsort(fe->snis, fe->n_snis, sizeof(*fe->snis), sni_cmp);
	for (w = 0, i = 0; i < fe->n_snis; i++) {
		if (w && strcmp(fe->snis[w - 1].file, fe->snis[i].file) == 0) {
			errmsg_line(b->report, b->len, "listener %s: a second certificate for %s dropped", fe->name,
				    fe->snis[i].host);
			free(fe->snis[i].host);
			free(fe->snis[i].file);
			wipe_free(fe->snis[i].pem);
			continue;
		}
		fe->snis[w++] = fe->snis[i];
	}
	fe->n_snis = w;
	if (fe->n_redirects)
		qsort(fe->redirects, fe->n_redirects, sizeof(*fe->redirects), redirect_cmp);
	for (w = 0, i = 0; i < fe->n_redirects; i++) {
		if (w && strcmp(fe->redirects[w - 1].host, fe->redirects[i].host) == 0) {
			free(fe->redirects[i].host);
			free(fe->redirects[i].location);
			continue;
		}
		fe->redirects[w++] = fe->redirects[i];
	}
	fe->n_redirects = w;
}

static int lay_all(struct builder *b, bool children)
{
	for (size_t i = 0; i < b->state->n_vs; i++) {
		const struct lb_vs *vs = &b->state->vs[i];
		int r;

		if ((vs->type == LB_VS_SNI_CHILD) != children || vs->type == LB_VS_L4)
			continue;
		if (!children && !vs->has_vip)
			continue;	/* waits for a VIP */
		r = children ? lay_child(b, vs) : lay_vs(b, vs);
		if (r == -ENOMEM || r == -E2BIG)
			return r;
		if (r)
			errmsg_line(b->report, b->len, "VirtualService %s: left out: %s", vs->name,
				    b->why[0] ? b->why : strerror(-r));
	}
	return 0;
}

struct lb_layout *lb_layout_build(const struct lb_state *s, const struct lb_layout *prev, size_t min_slots,
				  char *report, size_t len)
{
	struct builder b = { .state = s, .prev = prev, .min_slots = min_slots, .report = report, .len = len };
	int r;

	if (min_slots < LB_SLOTS_MIN || min_slots > LB_SLOTS_MAX || (min_slots & (min_slots - 1))) {
		errno = EINVAL;
		return NULL;
	}
	b.l = calloc(1, sizeof(*b.l));
	if (!b.l) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = lay_all(&b, false)) || (r = lay_all(&b, true)))
		goto out;
	for (size_t i = 0; i < b.l->n_frontends; i++)
		tidy_frontend(&b, &b.l->frontends[i]);
	if (b.l->n_frontends)
		qsort(b.l->frontends, b.l->n_frontends, sizeof(*b.l->frontends), frontend_cmp);
	if (b.l->n_backends)
		qsort(b.l->backends, b.l->n_backends, sizeof(*b.l->backends), backend_cmp);
out:
	u64map_free(&b.listeners);
	u64map_free(&b.backend_names);
	u64map_free(&b.https_of_vs);
	if (r) {
		lb_layout_free(b.l);
		errno = -r;
		return NULL;
	}
	return b.l;
}
