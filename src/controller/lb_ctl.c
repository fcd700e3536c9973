/*
 * lb_ctl.c — the load-balancer controller: keeps the VirtualService and
 * SSLKeyAndCertificate objects equal to the translation of the cluster
 * (lb_translate, docs/lb.md), gives the shared VSs their VIPs, and writes
 * back to every Ingress and Route what became of it.
 *
 *   lb_ctl_sync (the API's tick, under its lock):
 *     events since cursor ──► any that can change the translation?
 *        (an Ingress, Route, Secret or the ClusterNetwork; a Service or
 *         Endpoints that a pool or L4 VS names, or a LoadBalancer Service;
 *         a Node in NodePort mode)
 *          no  ──► cursor moves on, nothing else
 *          yes ──► read the inputs, translate, then write what differs:
 *                  VSs and certificates (put / delete, each guarded by the
 *                  mod_rev it was read at), then the sources' statuses
 *
 * VIPs: a SharedL7, Passthrough or Dedicated VS keeps the VIP it has while
 * that VIP is inside loadBalancer.vipNetworks; otherwise it gets the
 * lowest free address of those pools (neither network nor broadcast
 * address of a pool longer than /31), free meaning held by no stored or
 * desired VS.  SNI children and the -insecure companion show their
 * parent's.  No pool, or every address taken: no VIP (the VS waits, and
 * the Ingress's status has none).
 *
 * Invariants
 *  1. Every write is guarded by the revision it was computed from: a
 *     concurrent change (another controller, a user) fails the compare,
 *     and the next sync recomputes.
 *  2. Only the leader runs it (main.c elects it with the Endpoints
 *     controller), so two controllers never hand out one VIP.
 *  3. A write happens only when something differs: a sync that changes
 *     nothing writes nothing (its own status writes come back as events,
 *     are translated once more, and stop there).
 *
 * The translation is recomputed whole when it runs; see docs/lb.md for
 * what that costs and what is next.
 */
#include "controller/controller.h"
#include "model/lb.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVENT_PAGE 4096
#define TXN_OPS_MAX 100			/* under etcd's 128 operations a transaction */
#define PREFIX(plural) OBJ_PREFIX plural "/"

struct lb_ctl {
	struct registry *reg;
	bool enabled;
	bool dirty;			/* translate at the next sync */
	int64_t cursor;			/* events up to here are looked at */
	json_t *watched;		/* "ns/name" -> true: the Services the last translation read */
	bool nodeport;
	struct lb_ctl_stats stats;
};

/* ------------------------------------------------------------ relevance */

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* Whether an event on key (value: the new object, or NULL) can change the
 * translation. */
static bool relevant(struct lb_ctl *c, const char *key, const char *value, size_t len)
{
	static const char *const always[] = { PREFIX("ingresses"), PREFIX("routes"), PREFIX("secrets"),
					      PREFIX("clusternetworks") };
	const char *rest;

	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		if (has_prefix(key, always[i]))
			return true;
	if (c->nodeport && has_prefix(key, PREFIX("nodes")))
		return true;
	if (has_prefix(key, PREFIX("services")))
		rest = key + strlen(PREFIX("services"));
	else if (has_prefix(key, PREFIX("endpoints")))
		rest = key + strlen(PREFIX("endpoints"));
	else
		return false;
	if (json_object_get(c->watched, rest))
		return true;
	/* a Service that became a LoadBalancer (its text says so) */
	return value && has_prefix(key, PREFIX("services")) && memmem(value, len, "\"LoadBalancer\"", 14);
}

static int catch_up(struct lb_ctl *c)
{
	bool more = true;
	int err;

	if (!c->cursor) {
		/* the first sync translates everything: events start from now */
		c->dirty = true;
		return store_revision(c->reg->store, &c->cursor);
	}
	while (more) {
		struct store_event_list l = { 0 };

		err = store_events(c->reg->store, OBJ_PREFIX, c->cursor, EVENT_PAGE, &l);
		if (err == -ESTORE_COMPACTED) {
			c->dirty = true;
			return store_revision(c->reg->store, &c->cursor);
		}
		if (err)
			return err;
		for (size_t i = 0; i < l.n && !c->dirty; i++) {
			const struct store_event *e = &l.events[i];

			if (relevant(c, e->kv.key, e->type == STORE_EVENT_DELETE ? NULL : e->kv.value,
				     e->kv.value_len))
				c->dirty = true;
		}
		if (l.n)
			c->cursor = l.events[l.n - 1].kv.mod_rev;
		if (!l.more && l.revision > c->cursor)
			c->cursor = l.revision;
		more = l.more && l.n;	/* a page without events ends it (never spin) */
		store_event_list_free(&l);
	}
	return 0;
}

/* --------------------------------------------------------------- inputs */

/* Every object under prefix, keyed by what follows it ("ns/name"), and
 * (kvs) the stored texts' mod_revs by the same key.  New references. */
static int read_all(struct store *s, const char *prefix, json_t **objs, json_t *revs)
{
	struct store_kv_list l = { 0 };
	int err = store_range(s, prefix, NULL, 0, &l);

	*objs = json_object();
	if (err || !*objs) {
		store_kv_list_free(&l);
		return err ? err : -ENOMEM;
	}
	for (size_t i = 0; i < l.n; i++) {
		json_t *o = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);
		const char *k = l.kvs[i].key + strlen(prefix);

		if (!o)
			continue;
		json_object_set_new(*objs, k, o);
		if (revs)
			json_object_set_new(revs, l.kvs[i].key, json_integer(l.kvs[i].mod_rev));
	}
	store_kv_list_free(&l);
	return 0;
}

/* -------------------------------------------------------------- the pair */

/* Whether a PEM chain's first certificate and a PEM key belong together. */
static int check_pair(const char *cert, const char *key, char *err, size_t errlen)
{
	gnutls_x509_crt_t crt = NULL;
	gnutls_x509_privkey_t pk = NULL;
	gnutls_datum_t c = { (unsigned char *)cert, (unsigned)strlen(cert) };
	gnutls_datum_t k = { (unsigned char *)key, (unsigned)strlen(key) };
	unsigned char a[64], b[64];
	size_t na = sizeof(a), nb = sizeof(b);
	int rc = -EINVAL;

	if (gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_privkey_init(&pk) < 0)
		goto out;
	if (gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM) < 0) {
		snprintf(err, errlen, "the certificate is not a PEM X.509 certificate");
		goto out;
	}
	if (gnutls_x509_privkey_import(pk, &k, GNUTLS_X509_FMT_PEM) < 0) {
		snprintf(err, errlen, "the key is not a PEM private key");
		goto out;
	}
	if (gnutls_x509_crt_get_key_id(crt, 0, a, &na) < 0 || gnutls_x509_privkey_get_key_id(pk, 0, b, &nb) < 0 ||
	    na != nb || memcmp(a, b, na)) {
		snprintf(err, errlen, "the key does not belong to the certificate");
		goto out;
	}
	rc = 0;
out:
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(pk);
	return rc;
}

/* ------------------------------------------------------------------ VIPs */

static bool needs_vip(const char *type)
{
	return !strcmp(type, "SharedL7") || !strcmp(type, "Passthrough") || !strcmp(type, "Dedicated");
}

static bool in_pools(const json_t *pools, uint32_t ip)
{
	const json_t *p;
	size_t i;

	json_array_foreach(pools, i, p) {
		struct cidr c;

		if (json_string_value(p) && cidr_parse(json_string_value(p), &c) == 0 && cidr_contains_ip(&c, ip))
			return true;
	}
	return false;
}

static bool vip_parse(const char *s, uint32_t *ip)
{
	return s && ip4_parse(s, ip) == 0;
}

/* The lowest usable address of pools held by no one in used, or 0. */
static uint32_t lowest_free(const json_t *pools, const json_t *used)
{
	const json_t *p;
	size_t i;

	json_array_foreach(pools, i, p) {
		struct cidr c;
		uint32_t first, last;

		if (!json_string_value(p) || cidr_parse(json_string_value(p), &c))
			continue;
		first = c.addr;
		last = c.addr | ~cidr_mask(c.len);
		if (c.len <= 30) {
			first++;
			last--;
		}
		for (uint64_t ip = first; ip <= last; ip++) {
			char s[IP4_STRLEN];

			ip4_format((uint32_t)ip, s);
			if (!json_object_get(used, s))
				return (uint32_t)ip;
		}
	}
	return 0;
}

/* Gives every VS of want its VIP (see the top of the file). */
static void assign_vips(json_t *want, const json_t *stored, const json_t *pools)
{
	json_t *used = json_object(), *vs;
	const char *name;

	/* keep what is kept first, so a new VS never takes a kept address */
	json_object_foreach(want, name, vs) {
		const char *old = obj_str(json_object_get(stored, name), "spec.vip");
		uint32_t ip;

		if (needs_vip(obj_str(vs, "spec.type")) && vip_parse(old, &ip) && in_pools(pools, ip) &&
		    !json_object_get(used, old)) {
			json_object_set_new(json_object_get(vs, "spec"), "vip", json_string(old));
			json_object_set_new(used, old, json_true());
		}
	}
	json_object_foreach(want, name, vs) {
		uint32_t ip;
		char s[IP4_STRLEN];

		if (!needs_vip(obj_str(vs, "spec.type")) || obj_str(vs, "spec.vip"))
			continue;
		ip = lowest_free(pools, used);
		if (!ip)
			continue;
		ip4_format(ip, s);
		json_object_set_new(json_object_get(vs, "spec"), "vip", json_string(s));
		json_object_set_new(used, s, json_true());
	}
	json_object_foreach(want, name, vs) {
		const char *parent = obj_str(vs, "spec.parent");
		const char *vip = parent ? obj_str(json_object_get(want, parent), "spec.vip") : NULL;

		if (vip)
			json_object_set_new(json_object_get(vs, "spec"), "vip", json_string(vip));
	}
	json_decref(used);
}

/* ---------------------------------------------------------------- writes */

struct batch {
	struct lb_ctl *c;
	struct txnb b;
	size_t n;
	int failed;			/* a compare failed or the store did: dirty again */
};

static void batch_flush(struct batch *w)
{
	int64_t rev;
	int err;

	if (w->n) {
		err = txnb_commit(&w->b, w->c->reg->store, &rev);
		if (err) {
			w->failed = err;
			w->c->stats.failures++;
		} else {
			w->c->stats.writes += w->n;
			if (rev > w->c->reg->last_write_rev)
				w->c->reg->last_write_rev = rev;
		}
	}
	txnb_free(&w->b);
	txnb_init(&w->b);
	w->n = 0;
}

static void batch_put(struct batch *w, const char *key, int64_t mod_rev, const json_t *obj)
{
	txnb_unchanged(&w->b, key, mod_rev);
	if (obj)
		txnb_put_json(&w->b, key, obj);
	else
		txnb_del(&w->b, key);
	if (++w->n >= TXN_OPS_MAX)
		batch_flush(w);
}

static int64_t rev_of(const json_t *revs, const char *key)
{
	return json_integer_value(json_object_get(revs, key));
}

/* Makes the objects under plural equal to want (name -> object). */
static void converge(struct batch *w, const char *plural, json_t *want, const json_t *stored,
		     const json_t *revs)
{
	const char *name;
	json_t *obj;
	char key[1024];

	json_object_foreach(want, name, obj) {
		const json_t *old = json_object_get(stored, name);
		const char *created = obj_str(old, "metadata.creationTimestamp");
		char now[32];
		time_t t = time(NULL);

		if (!created) {
			strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
			created = now;
		}
		json_object_set_new(json_object_get(obj, "metadata"), "creationTimestamp", json_string(created));
		/* the status is the service engines' (a VirtualService's): kept */
		if (json_object_get(old, "status"))
			json_object_set(obj, "status", json_object_get(old, "status"));
		if (old && json_equal(old, obj))
			continue;
		snprintf(key, sizeof(key), OBJ_PREFIX "%s/%s", plural, name);
		batch_put(w, key, rev_of(revs, key), obj);
	}
	json_object_foreach((json_t *)stored, name, obj) {
		if (json_object_get(want, name))
			continue;
		snprintf(key, sizeof(key), OBJ_PREFIX "%s/%s", plural, name);
		batch_put(w, key, rev_of(revs, key), NULL);
	}
}

/* --------------------------------------------------------------- statuses */

static const char *vip_serving(const json_t *vs_map, const char *vs_name)
{
	return obj_str(json_object_get(vs_map, vs_name), "spec.vip");
}

static json_t *ingress_status(const json_t *src, const json_t *vs_map, const json_t *old_status)
{
	json_t *status = old_status ? json_deep_copy(old_status) : json_object(), *list = json_array();
	const char *host;
	json_t *vs, *p, *conds = json_array();
	size_t i;

	json_object_foreach(json_object_get(src, "hosts"), host, vs) {
		const char *vip = vip_serving(vs_map, json_string_value(vs));

		if (vip)
			json_array_append_new(list, json_pack("{s:s, s:s}", "ip", vip, "hostname", host));
	}
	json_object_set_new(status, "loadBalancer", json_pack("{s:o}", "ingress", list));
	json_array_foreach(json_object_get(src, "problems"), i, p)
		json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s}", "type", "HostsBuilt",
						       "status", "False", "reason", obj_str(p, "reason"),
						       "message", obj_str(p, "message")));
	if (json_array_size(conds))
		json_object_set_new(status, "conditions", conds);
	else {
		json_decref(conds);
		json_object_del(status, "conditions");
	}
	return status;
}

static json_t *route_status(const json_t *route, const json_t *src, const json_t *vs_map)
{
	const char *host = obj_str(route, "spec.host");
	const json_t *p = json_array_get(json_object_get(src, "problems"), 0);
	const char *vs = json_string_value(json_object_get(json_object_get(src, "hosts"), host ? host : ""));
	const char *vip = vs ? vip_serving(vs_map, vs) : NULL;
	json_t *entry = json_pack("{s:s, s:s}", "host", host ? host : "", "routerName", "weft-lb");
	json_t *cond;

	if (p)
		cond = json_pack("{s:s, s:s, s:s, s:s}", "type", "Admitted", "status", "False",
				 "reason", obj_str(p, "reason"), "message", obj_str(p, "message"));
	else if (!vs)
		cond = json_pack("{s:s, s:s, s:s}", "type", "Admitted", "status", "False",
				 "reason", "NoBackend");
	else
		cond = json_pack("{s:s, s:s}", "type", "Admitted", "status", "True");
	if (vip)
		json_object_set_new(entry, "vip", json_string(vip));
	json_object_set_new(entry, "conditions", json_pack("[o]", cond));
	return json_pack("{s:[o]}", "ingress", entry);
}

/* Writes the status of every Ingress and Route whose status differs. */
static void write_statuses(struct batch *w, const struct lb_result *r, const json_t *ingresses,
			   const json_t *routes, const json_t *revs)
{
	const char *id;
	json_t *src;

	json_object_foreach(r->sources, id, src) {
		bool is_ingress = has_prefix(id, "Ingress/");
		const char *nsname = strchr(id, '/') + 1;
		const json_t *obj = json_object_get(is_ingress ? ingresses : routes, nsname);
		json_t *status, *copy;
		char key[1024];

		if (!obj)
			continue;
		status = is_ingress ? ingress_status(src, r->vs, json_object_get(obj, "status"))
				    : route_status(obj, src, r->vs);
		if (json_equal(status, json_object_get(obj, "status"))) {
			json_decref(status);
			continue;
		}
		copy = json_deep_copy(obj);
		json_object_set_new(copy, "status", status);
		snprintf(key, sizeof(key), OBJ_PREFIX "%s/%s", is_ingress ? "ingresses" : "routes", nsname);
		batch_put(w, key, rev_of(revs, key), copy);
		json_decref(copy);
	}
}

/* ------------------------------------------------------------- translate */

static void watch_services(struct lb_ctl *c, const json_t *vs_map)
{
	const char *name;
	json_t *vs, *pool;
	size_t i;

	json_object_clear(c->watched);
	json_object_foreach((json_t *)vs_map, name, vs)
		json_array_foreach(obj_at(vs, "spec.pools"), i, pool) {
			char id[512];

			snprintf(id, sizeof(id), "%s/%s", obj_str(pool, "service.namespace"),
				 obj_str(pool, "service.name"));
			json_object_set_new(c->watched, id, json_true());
		}
}

static int translate(struct lb_ctl *c)
{
	struct store *s = c->reg->store;
	json_t *revs = json_object(), *cn = NULL, *svc = NULL, *ep = NULL, *ing = NULL, *rt = NULL;
	json_t *sec = NULL, *nodes = NULL, *vs = NULL, *certs = NULL;
	struct lb_result r = { 0 };
	struct lb_config cfg;
	struct batch w = { c, { 0 }, 0, 0 };
	int err;

	txnb_init(&w.b);
	if ((err = read_all(s, PREFIX("clusternetworks"), &cn, NULL)) ||
	    (err = read_all(s, PREFIX("services"), &svc, NULL)) ||
	    (err = read_all(s, PREFIX("endpoints"), &ep, NULL)) ||
	    (err = read_all(s, PREFIX("ingresses"), &ing, revs)) ||
	    (err = read_all(s, PREFIX("routes"), &rt, revs)) ||
	    (err = read_all(s, PREFIX("secrets"), &sec, NULL)) ||
	    (err = read_all(s, PREFIX("nodes"), &nodes, NULL)) ||
	    (err = read_all(s, PREFIX("virtualservices"), &vs, revs)) ||
	    (err = read_all(s, PREFIX("sslkeyandcertificates"), &certs, revs)))
		goto out;
	lb_config_from_cluster(json_object_get(cn, "default"), &cfg);
	cfg.check_pair = check_pair;
	c->nodeport = cfg.nodeport;
	{
		struct lb_inputs in = { svc, ep, ing, rt, sec, nodes };

		if ((err = lb_translate(&cfg, &in, &r)))
			goto out;
	}
	assign_vips(r.vs, vs, obj_at(json_object_get(cn, "default"), "loadBalancer.vipNetworks"));
	watch_services(c, r.vs);
	c->stats.translations++;
	/* certificates before the VSs that name them; statuses last */
	converge(&w, "sslkeyandcertificates", r.certs, certs, revs);
	converge(&w, "virtualservices", r.vs, vs, revs);
	write_statuses(&w, &r, ing, rt, revs);
	batch_flush(&w);
	err = w.failed;
out:
	txnb_free(&w.b);
	lb_result_clear(&r);
	json_decref(revs);
	json_decref(cn);
	json_decref(svc);
	json_decref(ep);
	json_decref(ing);
	json_decref(rt);
	json_decref(sec);
	json_decref(nodes);
	json_decref(vs);
	json_decref(certs);
	return err;
}

/* -------------------------------------------------------------------- API */

struct lb_ctl *lb_ctl_new(struct registry *r)
{
	struct lb_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->reg = r;
	c->dirty = true;
	c->watched = json_object();
	if (!c->watched) {
		free(c);
		return NULL;
	}
	return c;
}

void lb_ctl_free(struct lb_ctl *c)
{
	if (!c)
		return;
	json_decref(c->watched);
	free(c);
}

void lb_ctl_enable(struct lb_ctl *c, bool on)
{
	if (on && !c->enabled) {
		c->dirty = true;	/* a new leader starts from the whole cluster */
		c->cursor = 0;
	}
	c->enabled = on;
}

const struct lb_ctl_stats *lb_ctl_stats(const struct lb_ctl *c) { return &c->stats; }

int lb_ctl_sync(struct lb_ctl *c)
{
	int err;

	if (!c || !c->enabled)
		return 0;
	if ((err = catch_up(c)))
		return err;
	if (!c->dirty)
		return 0;
	c->dirty = false;
	err = translate(c);
	if (err)
		c->dirty = true;	/* again at the next tick */
	return err;
}
