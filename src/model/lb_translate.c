/*
 * lb_translate.c — Ingresses, Routes and LoadBalancer Services into
 * virtual services, with AKO's names and sharding (docs/lb.md).
 *
 * Three passes over borrowed inputs:
 *
 *   1. claims   every (host, path) an Ingress rule or a Route asks for,
 *               with its backends and TLS, sorted oldest first
 *               (creationTimestamp, then kind, namespace, name, order in
 *               the object), so the oldest claim wins a conflict, as the
 *               OpenShift router decides
 *   2. hosts    per host, in host order: the claims it keeps, whether it
 *               is passthrough, secure (some claim has TLS: the first such
 *               gives the certificate and the port-80 policy) or plain
 *   3. objects  per host: pools, pool-group members, SNI child or
 *               passthrough entry, redirects; then the L4 VSs
 *
 *   claim ─┬─ host passthrough, claim not (or the reverse) ──► HostConflict
 *          ├─ (host, path) kept by an older claim of another object ──► PathConflict
 *          └─ kept
 *   secure host ─┬─ certificate found and valid ──► SNI child (+ 302 on 80)
 *                └─ else ──► host not built, reason on every claim of it
 *
 * Invariants
 *  1. The output depends on the inputs only, not on their order in memory:
 *     claims, hosts, members and servers are sorted.
 *  2. Every Ingress and Route of the inputs has a sources entry, so a
 *     caller can write every status (an object with nothing built too).
 *  3. A problem with one host never removes another host's objects.
 */
#include "model/lb_priv.h"
#include "model/model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LB 512

enum term { TERM_NONE, TERM_EDGE, TERM_REENCRYPT, TERM_PASSTHROUGH };

struct claim {
	const char *kind;		/* "Ingress" or "Route" */
	const char *ns, *name, *created;
	const char *host, *path;	/* path "" when none */
	int order;			/* rule/path index inside the object */
	enum term term;
	const char *insecure;		/* "Redirect", "Allow" or "None" */
	const char *secret;		/* Ingress TLS: the Secret's name */
	const json_t *obj;		/* the Ingress or Route */
	const json_t *backend;		/* Ingress: the path's backend */
};

struct translation {
	const struct lb_config *cfg;
	const struct lb_inputs *in;
	struct lb_result *out;
	struct claim *claims;
	size_t n, cap;
};

/* ------------------------------------------------------------ sources */

static json_t *source(struct translation *t, const char *kind, const char *ns, const char *name)
{
	char key[NAME_MAX_LB];
	json_t *s;

	snprintf(key, sizeof(key), "%s/%s/%s", kind, ns, name);
	s = json_object_get(t->out->sources, key);
	if (!s) {
		s = json_pack("{s:{}, s:[]}", "hosts", "problems");
		json_object_set_new(t->out->sources, key, s);
	}
	return s;
}

static void problem(struct translation *t, const struct claim *c, const char *reason, const char *msg)
{
	json_t *list = json_object_get(source(t, c->kind, c->ns, c->name), "problems");
	const json_t *p;
	size_t i;

	json_array_foreach(list, i, p)
		if (!strcmp(obj_str(p, "host"), c->host) && !strcmp(obj_str(p, "message"), msg))
			return;
	json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "host", c->host, "reason", reason,
					      "message", msg));
}

static void served(struct translation *t, const struct claim *c, const char *vs)
{
	json_object_set_new(json_object_get(source(t, c->kind, c->ns, c->name), "hosts"), c->host,
			    json_string(vs));
}

/* ------------------------------------------------------------- claims */

static int add_claim(struct translation *t, const struct claim *c)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct claim *v = realloc(t->claims, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->claims = v;
		t->cap = cap;
	}
	t->claims[t->n++] = *c;
	return 0;
}

/* The Secret of the Ingress TLS entry that lists host, or NULL. */
static const char *ingress_secret(const json_t *ing, const char *host, bool *listed)
{
	const json_t *tls, *h;
	size_t i, j;

	*listed = false;
	json_array_foreach(obj_at(ing, "spec.tls"), i, tls)
		json_array_foreach(json_object_get(tls, "hosts"), j, h)
			if (json_string_value(h) && !strcmp(json_string_value(h), host)) {
				*listed = true;
				return obj_str(tls, "secretName");
			}
	return NULL;
}

static int ingress_claims(struct translation *t, const json_t *ing)
{
	const json_t *rule, *p;
	size_t i, j;
	int order = 0;

	source(t, "Ingress", obj_namespace(ing), obj_name(ing));
	json_array_foreach(obj_at(ing, "spec.rules"), i, rule) {
		const char *host = obj_str(rule, "host");
		bool listed;
		const char *secret = host ? ingress_secret(ing, host, &listed) : NULL;

		if (!host || !*host)
			continue;	/* a rule without a host is not served (docs/lb.md) */
		json_array_foreach(obj_at(rule, "http.paths"), j, p) {
			const char *path = obj_str(p, "path");
			struct claim c = {
				"Ingress", obj_namespace(ing), obj_name(ing),
				obj_str(ing, "metadata.creationTimestamp"), host, path ? path : "",
				order++, listed ? TERM_EDGE : TERM_NONE, "Redirect",
				secret, ing, json_object_get(p, "backend"),
			};

			if (listed && (!secret || !*secret))
				c.term = TERM_NONE;	/* TLS without a Secret: nothing to serve it with */
			if (add_claim(t, &c))
				return -ENOMEM;
		}
	}
	return 0;
}

static enum term route_term(const json_t *route)
{
	const char *term = obj_str(route, "spec.tls.termination");

	if (!term)
		return TERM_NONE;
	if (!strcmp(term, "passthrough"))
		return TERM_PASSTHROUGH;
	return !strcmp(term, "reencrypt") ? TERM_REENCRYPT : TERM_EDGE;
}

static int route_claim(struct translation *t, const json_t *route)
{
	const char *host = obj_str(route, "spec.host"), *path = obj_str(route, "spec.path");
	const char *insecure = obj_str(route, "spec.tls.insecureEdgeTerminationPolicy");
	struct claim c = {
		"Route", obj_namespace(route), obj_name(route),
		obj_str(route, "metadata.creationTimestamp"), host ? host : "", path ? path : "",
		0, route_term(route), insecure ? insecure : "None", NULL, route, NULL,
	};

	source(t, "Route", c.ns, c.name);
	if (!host || !*host) {
		problem(t, &c, "HostRequired", "spec.host is required (weft does not generate hosts)");
		return 0;
	}
	return add_claim(t, &c);
}

static int strcmp0(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int claim_cmp(const void *a, const void *b)
{
	const struct claim *x = a, *y = b;
	int c;

	if ((c = strcmp0(x->created, y->created)) || (c = strcmp(x->kind, y->kind)) ||
	    (c = strcmp(x->ns, y->ns)) || (c = strcmp(x->name, y->name)))
		return c;
	return x->order - y->order;
}

/* --------------------------------------------------------- VS objects */

static json_t *vs_get(struct translation *t, const char *name, const char *type, int shard)
{
	json_t *vs = json_object_get(t->out->vs, name), *labels;
	char num[16];

	if (vs)
		return vs;
	labels = json_pack("{s:s}", LB_LABEL_TYPE, type);
	if (shard >= 0) {
		snprintf(num, sizeof(num), "%d", shard);
		json_object_set_new(labels, LB_LABEL_SHARD, json_string(num));
	}
	vs = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:s, s:[], s:[], s:[], s:[], s:[]}}",
		       "apiVersion", LB_API_VERSION, "kind", "VirtualService",
		       "metadata", "name", name, "labels", labels,
		       "spec", "type", type, "ports", "poolGroups", "pools", "httpRedirects", "sources");
	json_object_set_new(t->out->vs, name, vs);
	return vs;
}

static json_t *vs_spec(json_t *vs, const char *field)
{
	return json_object_get(json_object_get(vs, "spec"), field);
}

static void vs_port(json_t *vs, int port, const char *protocol)
{
	json_t *ports = vs_spec(vs, "ports");
	const json_t *p;
	size_t i;

	json_array_foreach(ports, i, p)
		if (obj_int(p, "port", 0) == port && !strcmp(obj_str(p, "protocol"), protocol))
			return;
	json_array_append_new(ports, json_pack("{s:i, s:s}", "port", port, "protocol", protocol));
}

static void vs_source(json_t *vs, const char *kind, const char *ns, const char *name)
{
	json_t *list = vs_spec(vs, "sources");
	const json_t *s;
	size_t i;

	json_array_foreach(list, i, s)
		if (!strcmp(obj_str(s, "kind"), kind) && !strcmp(obj_str(s, "namespace"), ns) &&
		    !strcmp(obj_str(s, "name"), name))
			return;
	json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "kind", kind, "namespace", ns,
					      "name", name));
}

static json_t *group_get(json_t *vs, const char *name)
{
	json_t *groups = vs_spec(vs, "poolGroups"), *g;
	size_t i;

	json_array_foreach(groups, i, g)
		if (!strcmp(obj_str(g, "name"), name))
			return g;
	g = json_pack("{s:s, s:[]}", "name", name, "members");
	json_array_append_new(groups, g);
	return g;
}

static void redirect(json_t *vs, const char *name, const char *host)
{
	json_t *list = vs_spec(vs, "httpRedirects");
	const json_t *r;
	size_t i;

	json_array_foreach(list, i, r)
		if (!strcmp(obj_str(r, "host"), host))
			return;
	json_array_append_new(list, json_pack("{s:s, s:s, s:i, s:i, s:s}", "name", name, "host", host,
					      "port", 80, "code", 302, "scheme", "https"));
}

/* snprintf that says whether everything fit. */
__attribute__((format(printf, 3, 4)))
static bool fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len;
}

static bool name_fits(struct translation *t, const struct claim *c, bool fits)
{
	if (!fits)
		problem(t, c, "NameTooLong", "the host and path make an object name over 511 bytes");
	return fits;
}

/* "<host><path with / -> _>" */
static void host_path(char *buf, size_t len, const char *host, const char *path)
{
	size_t n = (size_t)snprintf(buf, len, "%s%s", host, path);

	for (size_t i = strlen(host); i < n && i < len; i++)
		if (buf[i] == '/')
			buf[i] = '_';
}

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* ------------------------------------------------------------ backends */

struct backend {
	const char *service;
	const json_t *port;	/* Ingress: service.port; Route: spec.port */
	json_int_t ratio;
};

/* The backends of a claim: an Ingress path has one, a Route its service
 * and alternates (at most 4).  Returns how many. */
static size_t backends_of(const struct claim *c, struct backend *b)
{
	const json_t *alt;
	size_t i, n = 0;

	if (!strcmp(c->kind, "Ingress")) {
		b[0] = (struct backend){ obj_str(c->backend, "service.name"),
					 obj_at(c->backend, "service.port"), LB_RATIO_DEFAULT };
		return b[0].service ? 1 : 0;
	}
	b[n++] = (struct backend){ obj_str(c->obj, "spec.to.name"), obj_at(c->obj, "spec.port"),
				   obj_int(c->obj, "spec.to.weight", LB_RATIO_DEFAULT) };
	json_array_foreach(obj_at(c->obj, "spec.alternateBackends"), i, alt) {
		if (n == 4)
			break;
		b[n++] = (struct backend){ obj_str(alt, "name"), obj_at(c->obj, "spec.port"),
					   obj_int(alt, "weight", LB_RATIO_DEFAULT) };
	}
	return b[0].service ? n : 0;
}

/* A pool of vs for one backend; NULL (a problem noted) when its port
 * cannot be resolved. */
static json_t *pool(struct translation *t, json_t *vs, const struct claim *c, const char *name,
		    const struct backend *b, const char *protocol)
{
	struct lb_members m;
	char err[256] = "";
	json_t *p;
	int rc = lb_pool_members(t->cfg, t->in, c->ns, b->service, b->port, !strcmp(c->kind, "Route"),
				 &m, err, sizeof(err));

	if (rc) {
		json_decref(m.servers);
		if (rc == -EINVAL)
			problem(t, c, "PortNotFound", err);
		return NULL;
	}
	p = json_pack("{s:s, s:{s:s, s:s, s:I}, s:s, s:{s:s}, s:o}", "name", name,
		      "service", "namespace", c->ns, "name", b->service, "port", m.service_port,
		      "protocol", protocol, "healthMonitor", "type", !strcmp(protocol, "HTTP") ? "HTTP" : "TCP",
		      "servers", m.servers);
	if (c->term == TERM_REENCRYPT && !strcmp(protocol, "HTTPS")) {
		const char *ca = obj_str(c->obj, "spec.tls.destinationCACertificate");
		json_t *tls = json_pack("{s:b}", "verify", ca && *ca);
		char profile[NAME_MAX_LB];

		if (ca && *ca) {
			snprintf(profile, sizeof(profile), "%s-pkiprofile", name);
			json_object_set_new(tls, "pkiProfile", json_string(profile));
			json_object_set_new(tls, "caCertificate", json_string(ca));
		}
		json_object_set_new(p, "tls", tls);
	}
	json_array_append_new(vs_spec(vs, "pools"), p);
	return p;
}

static void member(json_t *group, const char *pool_name, const struct claim *c, json_int_t ratio)
{
	char label[NAME_MAX_LB];

	snprintf(label, sizeof(label), "%s%s", c->host, c->path);
	lower(label);
	json_array_append_new(json_object_get(group, "members"),
			      json_pack("{s:s, s:s, s:s, s:s, s:I}", "pool", pool_name, "host", c->host,
					"path", *c->path ? c->path : "/", "priorityLabel", label,
					"ratio", ratio));
}

/* The pools of one claim into group of vs.  prefix names the pools: the
 * Ingress's pool is prefix itself, a Route's are prefix-<service>.
 * Returns how many were made. */
static int claim_pools(struct translation *t, json_t *vs, json_t *group, const struct claim *c,
		       const char *prefix, const char *protocol)
{
	struct backend b[4];
	size_t n = backends_of(c, b);
	int made = 0;

	for (size_t i = 0; i < n; i++) {
		char name[NAME_MAX_LB];

		if (!name_fits(t, c, strcmp(c->kind, "Ingress")
				   ? fmt(name, sizeof(name), "%s-%s", prefix, b[i].service)
				   : fmt(name, sizeof(name), "%s", prefix)))
			continue;
		if (pool(t, vs, c, name, &b[i], protocol)) {
			member(group, name, c, b[i].ratio);
			made++;
		}
	}
	if (made)
		vs_source(vs, c->kind, c->ns, c->name);
	return made;
}

/* -------------------------------------------------------------- hosts */

/* Plain HTTP on the shared VS (or the dedicated one). */
static void insecure_claim(struct translation *t, json_t *vs, const struct claim *c)
{
	char hp[NAME_MAX_LB], prefix[NAME_MAX_LB];
	json_t *group = group_get(vs, obj_name(vs));

	host_path(hp, sizeof(hp), c->host, c->path);
	if (!name_fits(t, c, fmt(prefix, sizeof(prefix), "%s--%s-%s-%s", t->cfg->cluster, hp, c->ns,
				 c->name)))
		return;
	if (claim_pools(t, vs, group, c, prefix, "HTTP"))
		served(t, c, obj_name(vs));
}

static void secure_claim(struct translation *t, json_t *vs, const struct claim *c)
{
	char hp[NAME_MAX_LB], prefix[NAME_MAX_LB];
	const char *protocol = c->term == TERM_REENCRYPT ? "HTTPS" : "HTTP";
	json_t *group;

	host_path(hp, sizeof(hp), c->host, c->path);
	if (!name_fits(t, c, fmt(prefix, sizeof(prefix), "%s--%s-%s-%s", t->cfg->cluster, c->ns, hp,
				 c->name)))
		return;
	group = group_get(vs, prefix);
	if (claim_pools(t, vs, group, c, prefix, protocol))
		served(t, c, obj_name(vs));
}

static void passthrough_claim(struct translation *t, const struct claim *c)
{
	char vs_name[NAME_MAX_LB], prefix[NAME_MAX_LB];
	json_t *vs, *group;

	if (lb_name_passthrough_vs(t->cfg, c->host, vs_name, sizeof(vs_name)) < 0)
		return;
	vs = vs_get(t, vs_name, "Passthrough", (int)lb_shard(c->host, t->cfg->passthrough_shards));
	vs_port(vs, 443, "TCP");
	snprintf(prefix, sizeof(prefix), "%s--%s", t->cfg->cluster, c->host);
	group = group_get(vs, prefix);
	if (!claim_pools(t, vs, group, c, prefix, "TCP"))
		return;
	served(t, c, vs_name);
	if (!strcmp(c->insecure, "Redirect")) {
		char insecure[NAME_MAX_LB + 16];
		json_t *companion;

		snprintf(insecure, sizeof(insecure), "%s-insecure", vs_name);
		companion = vs_get(t, insecure, "PassthroughInsecure",
				   (int)lb_shard(c->host, t->cfg->passthrough_shards));
		json_object_set_new(json_object_get(companion, "spec"), "parent", json_string(vs_name));
		vs_port(companion, 80, "HTTP");
		redirect(companion, insecure, c->host);
		vs_source(companion, c->kind, c->ns, c->name);
	}
}

/* The claims [first, end) of one host, oldest first: which are kept. */
static void keep_claims(struct translation *t, const struct claim *cl, size_t n, bool *kept,
			size_t *tls_claim)
{
	bool passthrough = cl[0].term == TERM_PASSTHROUGH;

	*tls_claim = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct claim *c = &cl[i];
		char msg[NAME_MAX_LB];

		kept[i] = false;
		if ((c->term == TERM_PASSTHROUGH) != passthrough) {
			const struct claim *o = &cl[0];

			snprintf(msg, sizeof(msg), "host %s is %s by %s %s/%s", c->host,
				 passthrough ? "passthrough" : "terminated", o->kind, o->ns, o->name);
			problem(t, c, "HostConflict", msg);
			continue;
		}
		kept[i] = true;
		for (size_t j = 0; j < i && kept[i]; j++) {
			const struct claim *o = &cl[j];

			if (kept[j] && (passthrough || !strcmp(o->path, c->path)) &&
			    (strcmp(o->kind, c->kind) || strcmp(o->ns, c->ns) || strcmp(o->name, c->name))) {
				snprintf(msg, sizeof(msg), "%s%s is already served for %s %s/%s", c->host,
					 c->path, o->kind, o->ns, o->name);
				problem(t, c, "PathConflict", msg);
				kept[i] = false;
			}
		}
		if (kept[i] && *tls_claim == SIZE_MAX &&
		    (c->term == TERM_EDGE || c->term == TERM_REENCRYPT))
			*tls_claim = i;
	}
}

/* A secure host: its certificate, its SNI child (or dedicated VS) and
 * the parent's redirect.  Returns the VS, or NULL when the certificate
 * is missing or invalid (then the host is not built at all). */
static json_t *secure_vs(struct translation *t, const struct claim *tc, const struct claim *cl, size_t n,
			 const bool *kept, const char *parent)
{
	char name[NAME_MAX_LB], cert_name[NAME_MAX_LB], msg[NAME_MAX_LB];
	const char *reason = NULL;
	bool route = !strcmp(tc->kind, "Route");
	json_t *cert, *vs;

	if (route)
		snprintf(cert_name, sizeof(cert_name), "%s--%s", t->cfg->cluster, tc->host);
	else
		snprintf(cert_name, sizeof(cert_name), "%s--%s-%s", t->cfg->cluster, tc->ns, tc->secret);
	cert = lb_cert_object(t->cfg, t->in, cert_name, tc->ns, tc->secret, route ? tc->obj : NULL,
			      &reason, msg, sizeof(msg));
	if (!cert) {
		char full[NAME_MAX_LB * 2];

		snprintf(full, sizeof(full), "host %s: %s", tc->host, msg);
		for (size_t i = 0; i < n; i++)
			if (kept[i])
				problem(t, &cl[i], reason ? reason : "SecretInvalid", full);
		return NULL;
	}
	json_object_set_new(t->out->certs, cert_name, cert);
	if (t->cfg->shards) {
		snprintf(name, sizeof(name), "%s--%s", t->cfg->cluster, tc->host);
		vs = vs_get(t, name, "SNIChild", (int)lb_shard(tc->host, t->cfg->shards));
		json_object_set_new(json_object_get(vs, "spec"), "parent", json_string(parent));
	} else {
		vs = vs_get(t, parent, "Dedicated", -1);
		vs_port(vs, 80, "HTTP");
	}
	vs_port(vs, 443, "HTTPS");
	json_object_set_new(json_object_get(vs, "spec"), "hosts", json_pack("[s]", tc->host));
	json_object_set_new(json_object_get(vs, "spec"), "sslKeyAndCertificate", json_string(cert_name));
	return vs;
}

static void build_host(struct translation *t, const struct claim *cl, size_t n)
{
	const char *host = cl[0].host;
	char parent[NAME_MAX_LB];
	size_t tls = SIZE_MAX;
	bool *kept = calloc(n, sizeof(*kept));
	json_t *shared, *svs = NULL;

	if (!kept)
		return;
	keep_claims(t, cl, n, kept, &tls);
	if (cl[0].term == TERM_PASSTHROUGH) {
		for (size_t i = 0; i < n; i++)
			if (kept[i])
				passthrough_claim(t, &cl[i]);
		free(kept);
		return;
	}
	if (lb_name_shared_vs(t->cfg, host, parent, sizeof(parent)) < 0) {
		free(kept);
		return;
	}
	if (tls != SIZE_MAX) {
		const struct claim *tc = &cl[tls];

		svs = secure_vs(t, tc, cl, n, kept, parent);
		if (!svs) {
			free(kept);
			return;
		}
	}
	shared = vs_get(t, parent, t->cfg->shards ? "SharedL7" : "Dedicated",
			t->cfg->shards ? (int)lb_shard(host, t->cfg->shards) : -1);
	vs_port(shared, 80, "HTTP");
	if (t->cfg->shards)
		vs_port(shared, 443, "HTTPS");
	for (size_t i = 0; i < n; i++) {
		const struct claim *c = &cl[i];
		const char *policy = svs ? cl[tls].insecure : NULL;

		if (!kept[i])
			continue;
		if (!svs) {
			insecure_claim(t, shared, c);
			continue;
		}
		secure_claim(t, svs, c);
		if (!strcmp(c->kind, "Route") && !strcmp(c->insecure, "Allow") && t->cfg->shards)
			insecure_claim(t, shared, c);
		if (!strcmp(policy, "Redirect") && json_object_size(json_object_get(
			    source(t, c->kind, c->ns, c->name), "hosts")))
			redirect(shared, parent, host);
	}
	free(kept);
}

/* Host first, then the oldest claim first. */
static int host_claim_cmp(const void *a, const void *b)
{
	const struct claim *x = a, *y = b;
	int c = strcmp(x->host, y->host);

	return c ? c : claim_cmp(a, b);
}

static void build_hosts(struct translation *t)
{
	if (t->n)
		qsort(t->claims, t->n, sizeof(*t->claims), host_claim_cmp);
	for (size_t i = 0, j; i < t->n; i = j) {
		for (j = i + 1; j < t->n && !strcmp(t->claims[j].host, t->claims[i].host); j++)
			;
		build_host(t, t->claims + i, j - i);
	}
}

/* ----------------------------------------------------------------- L4 */

static void l4_vs(struct translation *t, const json_t *svc)
{
	const char *ns = obj_namespace(svc), *name = obj_name(svc);
	const char *vip = obj_str(json_array_get(obj_at(svc, "status.loadBalancer.ingress"), 0), "ip");
	char vs_name[NAME_MAX_LB];
	const json_t *p;
	json_t *vs;
	size_t i;

	snprintf(vs_name, sizeof(vs_name), "%s--%s-%s", t->cfg->cluster, ns, name);
	vs = vs_get(t, vs_name, "L4", -1);
	if (vip && *vip)
		json_object_set_new(json_object_get(vs, "spec"), "vip", json_string(vip));
	vs_source(vs, "Service", ns, name);
	json_array_foreach(obj_at(svc, "spec.ports"), i, p) {
		const char *proto = obj_str(p, "protocol") ? obj_str(p, "protocol") : "TCP";
		json_int_t port = obj_int(p, "port", 0);
		const char *port_name = obj_str(p, "name");
		json_t *number = port_name && *port_name ? json_pack("{s:s}", "name", port_name)
							 : json_pack("{s:I}", "number", port);
		struct claim c = { "Service", ns, name, NULL, "", "", 0, TERM_NONE, "None", NULL, svc, NULL };
		struct backend b = { name, number, LB_RATIO_DEFAULT };
		char pool_name[NAME_MAX_LB];

		vs_port(vs, (int)port, proto);
		if (fmt(pool_name, sizeof(pool_name), "%s-%s-%" JSON_INTEGER_FORMAT, vs_name, proto, port))
			pool(t, vs, &c, pool_name, &b, proto);
		json_decref(number);
	}
}

/* --------------------------------------------------------------- prune */

/* Pool groups without members go; a shared VS with no group, redirect or
 * SNI child left goes too (a host whose every claim failed leaves none). */
static void prune(json_t *vs_map)
{
	const char *name, *parent;
	json_t *vs, *groups, *keep = json_object();
	void *tmp;

	json_object_foreach(vs_map, name, vs) {
		groups = vs_spec(vs, "poolGroups");
		for (size_t i = json_array_size(groups); i-- > 0;)
			if (!json_array_size(json_object_get(json_array_get(groups, i), "members")))
				json_array_remove(groups, i);
		parent = obj_str(json_object_get(vs, "spec"), "parent");
		if (parent)
			json_object_set_new(keep, parent, json_true());
	}
	json_object_foreach_safe(vs_map, tmp, name, vs) {
		const char *type = obj_str(vs, "spec.type");

		if ((!strcmp(type, "SharedL7") || !strcmp(type, "Passthrough")) &&
		    !json_array_size(vs_spec(vs, "poolGroups")) &&
		    !json_array_size(vs_spec(vs, "httpRedirects")) && !json_object_get(keep, name))
			json_object_del(vs_map, name);
	}
	json_decref(keep);
}

/* ---------------------------------------------------------- ordering */

static int member_cmp(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	const char *px = obj_str(x, "path"), *py = obj_str(y, "path");
	int c = strcmp(obj_str(x, "host"), obj_str(y, "host"));

	if (c)
		return c;
	if (strlen(px) != strlen(py))
		return strlen(px) > strlen(py) ? -1 : 1;
	if ((c = strcmp(px, py)))
		return c;
	return strcmp(obj_str(x, "pool"), obj_str(y, "pool"));
}

static int named_cmp(const void *a, const void *b)
{
	return strcmp(obj_str(*(const json_t *const *)a, "name"), obj_str(*(const json_t *const *)b, "name"));
}

static int group_cmp(const void *a, const void *b)
{
	const json_t *x = json_array_get(json_object_get(*(const json_t *const *)a, "members"), 0);
	const json_t *y = json_array_get(json_object_get(*(const json_t *const *)b, "members"), 0);

	if (!x || !y)
		return named_cmp(a, b);
	return member_cmp(&x, &y) ? member_cmp(&x, &y) : named_cmp(a, b);
}

static int port_cmp(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	json_int_t d = obj_int(x, "port", 0) - obj_int(y, "port", 0);

	return d ? (d < 0 ? -1 : 1) : strcmp(obj_str(x, "protocol"), obj_str(y, "protocol"));
}

/* Sorts a JSON array in place. */
static int sort_array(json_t *arr, int (*cmp)(const void *, const void *))
{
	size_t n = json_array_size(arr);
	json_t **v;

	if (n < 2)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), cmp);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
	return 0;
}

static int order(json_t *vs_map)
{
	const char *name;
	json_t *vs, *g;
	size_t i;
	int rc = 0;

	json_object_foreach(vs_map, name, vs) {
		json_array_foreach(vs_spec(vs, "poolGroups"), i, g)
			rc |= sort_array(json_object_get(g, "members"), member_cmp);
		rc |= sort_array(vs_spec(vs, "poolGroups"), group_cmp);
		rc |= sort_array(vs_spec(vs, "pools"), named_cmp);
		rc |= sort_array(vs_spec(vs, "ports"), port_cmp);
		rc |= sort_array(vs_spec(vs, "httpRedirects"), member_cmp);
	}
	return rc ? -ENOMEM : 0;
}

/* ---------------------------------------------------------------- API */

void lb_result_clear(struct lb_result *r)
{
	json_decref(r->vs);
	json_decref(r->certs);
	json_decref(r->sources);
	r->vs = r->certs = r->sources = NULL;
}

int lb_translate(const struct lb_config *cfg, const struct lb_inputs *in, struct lb_result *out)
{
	struct translation t = { cfg, in, out, NULL, 0, 0 };
	const char *key;
	const json_t *obj;
	int rc = 0;

	out->vs = json_object();
	out->certs = json_object();
	out->sources = json_object();
	if (!out->vs || !out->certs || !out->sources) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_foreach((json_t *)in->ingresses, key, obj)
		if ((rc = ingress_claims(&t, obj)))
			goto out;
	json_object_foreach((json_t *)in->routes, key, obj)
		if ((rc = route_claim(&t, obj)))
			goto out;
	build_hosts(&t);
	json_object_foreach((json_t *)in->services, key, obj)
		if (!strcmp(obj_str(obj, "spec.type") ? obj_str(obj, "spec.type") : "", "LoadBalancer"))
			l4_vs(&t, obj);
	prune(out->vs);
	rc = order(out->vs);
out:
	free(t.claims);
	if (rc)
		lb_result_clear(out);
	return rc;
}
