/*
 * state.c — parsing and validating VirtualService and
 * SSLKeyAndCertificate objects (lb.weft.io/v1, docs/lb.md) into the
 * engine's state.
 *
 * Each object is parsed into a fresh struct by one function per part
 * (ports, pools, pool groups, redirects); a part that fails returns
 * -EINVAL with the field named in the message, and the partly built
 * struct is freed.  Only a complete object is appended to the state.
 *
 * Invariants:
 *   1. Nothing from the input is used before its size is checked: names
 *      against LB_NAME_MAX, hosts LB_HOST_MAX, paths LB_PATH_MAX, PEMs
 *      LB_PEM_MAX, arrays against their LB_*_MAX; strings with an embedded
 *      NUL are refused.
 *   2. Strings that end up in the HAProxy configuration or its runtime
 *      commands (names, hosts, paths) hold no whitespace, quote, '#' or
 *      control character, so the renderer never has to escape.
 */
#include "lb/state.h"

#include "lib/cidr.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parse {
	const char *kind;
	const char *name;
	char *err;
	size_t errlen;
};

static int bad(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct parse *p, const char *fmt, ...)
{
	char detail[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	errmsg(p->err, p->errlen, "%s %s: %s", p->kind, p->name ? p->name : "(unnamed)", detail);
	return -EINVAL;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* a string member: NULL when absent; -EINVAL when present and not a
 * string, empty, too long or holding a NUL */
static int get_str(struct parse *p, const json_t *o, const char *field, size_t max, const char **out)
{
	const json_t *v = json_object_get(o, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(p, "%s is not a string", field);
	if (json_string_length(v) == 0)
		return bad(p, "%s is empty", field);
	if (json_string_length(v) > max)
		return bad(p, "%s is longer than the bound", field);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(p, "%s holds a NUL character", field);
	*out = json_string_value(v);
	return 0;
}

static bool name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > LB_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* a DNS name: lowercase labels of 1..63 letters, digits and '-', not
 * starting or ending with '-' */
static bool host_ok(const char *s)
{
	size_t label = 0, n = strlen(s);

	if (n == 0 || n > LB_HOST_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (label == 0 && c == '-')
			return false;
		if (++label > 63)
			return false;
	}
	return true;
}

/* an absolute path of visible ASCII, without '#', quotes or backslash */
static bool path_ok(const char *s)
{
	if (s[0] != '/' || strlen(s) > LB_PATH_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 127 || *s == '#' || *s == '"' || *s == '\'' || *s == '\\')
			return false;
	return true;
}

static int dup_into(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

static int get_name(struct parse *p, const json_t *o, const char *field, bool required, char **out)
{
	const char *s;
	int r = get_str(p, o, field, LB_NAME_MAX, &s);

	if (r)
		return r;
	if (!s)
		return required ? bad(p, "%s is missing", field) : 0;
	if (!name_ok(s))
		return bad(p, "%s \"%.80s\" is not a name (letters, digits, '-', '_', '.')", field, s);
	return dup_into(out, s);
}

static int get_host(struct parse *p, const json_t *o, const char *field, bool required, char **out)
{
	const char *s;
	int r = get_str(p, o, field, LB_HOST_MAX, &s);

	if (r)
		return r;
	if (!s)
		return required ? bad(p, "%s is missing", field) : 0;
	if (!host_ok(s))
		return bad(p, "%s \"%.80s\" is not a lowercase DNS name (wildcards are not served)", field, s);
	return dup_into(out, s);
}

static int get_u32(struct parse *p, const json_t *o, const char *field, uint32_t min, uint32_t max,
		   bool required, uint32_t *out)
{
	const json_t *v = json_object_get(o, field);

	if (!v)
		return required ? bad(p, "%s is missing", field) : 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(p, "%s is not an integer in range", field);
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int get_ip(struct parse *p, const json_t *o, const char *field, bool *present, uint32_t *out)
{
	const char *s;
	int r = get_str(p, o, field, 64, &s);

	if (r)
		return r;
	*present = s != NULL;
	if (s && ip4_parse(s, out) != 0)
		return bad(p, "%s \"%.64s\" is not an IPv4 address (IPv6 is not served yet)", field, s);
	return 0;
}

/* an array member, NULL when absent; -EINVAL when not an array or longer
 * than max */
static int get_array(struct parse *p, const json_t *o, const char *field, size_t max, const json_t **out)
{
	const json_t *v = json_object_get(o, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(p, "%s is not an array", field);
	if (json_array_size(v) > max)
		return bad(p, "%s has more entries than the bound", field);
	*out = v;
	return 0;
}

static int get_object(struct parse *p, const json_t *o, const char *field, bool required, const json_t **out)
{
	const json_t *v = json_object_get(o, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return required ? bad(p, "%s is missing", field) : 0;
	if (!json_is_object(v))
		return bad(p, "%s is not an object", field);
	*out = v;
	return 0;
}

static int parse_proto(struct parse *p, const json_t *o, const char *field, enum lb_proto *out)
{
	static const char *names[] = { "HTTP", "HTTPS", "TCP", "UDP" };
	const char *s;
	int r = get_str(p, o, field, 16, &s);

	if (r)
		return r;
	if (!s)
		return bad(p, "%s is missing", field);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum lb_proto)i;
			return 0;
		}
	return bad(p, "%s \"%.16s\" is not HTTP, HTTPS, TCP or UDP", field, s);
}

static bool pem_has(const char *pem, const char *begin_suffix)
{
	const char *b = strstr(pem, "-----BEGIN ");

	for (; b; b = strstr(b + 1, "-----BEGIN ")) {
		const char *e = strstr(b + 11, "-----");

		if (e && (size_t)(e - b - 11) >= strlen(begin_suffix) &&
		    strncmp(e - strlen(begin_suffix), begin_suffix, strlen(begin_suffix)) == 0)
			return true;
	}
	return false;
}

static int get_pem(struct parse *p, const json_t *o, const char *field, const char *block, char **out)
{
	const char *s;
	int r = get_str(p, o, field, LB_PEM_MAX, &s);

	if (r)
		return r;
	if (!s)
		return bad(p, "%s is missing", field);
	if (!pem_has(s, block))
		return bad(p, "%s has no PEM %s block", field, block);
	return dup_into(out, s);
}

static void pool_clear(struct lb_pool *pool)
{
	free(pool->name);
	free(pool->pki_profile);
	free(pool->ca_pem);
	free(pool->servers);
}

static int server_cmp(const void *a, const void *b)
{
	const struct lb_server *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return (int)x->port - (int)y->port;
}

static int parse_servers(struct parse *p, const json_t *pool_json, struct lb_pool *pool)
{
	const json_t *arr, *v;
	size_t i;
	int r = get_array(p, pool_json, "servers", LB_SERVERS_MAX, &arr);

	if (r || !arr || json_array_size(arr) == 0)
		return r;
	pool->servers = calloc(json_array_size(arr), sizeof(*pool->servers));
	if (!pool->servers)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		struct lb_server *s = &pool->servers[i];
		uint32_t port = 0;
		bool has_ip = false;

		if (!json_is_object(v))
			return bad(p, "pool %s: a server is not an object", pool->name);
		if ((r = get_ip(p, v, "ip", &has_ip, &s->ip)) || (r = get_u32(p, v, "port", 1, 65535, true, &port)))
			return r;
		if (!has_ip)
			return bad(p, "pool %s: a server has no ip", pool->name);
		s->port = (uint16_t)port;
	}
	pool->n_servers = json_array_size(arr);
	qsort(pool->servers, pool->n_servers, sizeof(*pool->servers), server_cmp);
	for (i = 1; i < pool->n_servers; i++)
		if (server_cmp(&pool->servers[i - 1], &pool->servers[i]) == 0)
			return bad(p, "pool %s: a server is listed twice", pool->name);
	return 0;
}

static int parse_pool_tls(struct parse *p, const json_t *pool_json, struct lb_pool *pool)
{
	const json_t *tls, *verify;
	int r = get_object(p, pool_json, "tls", false, &tls);

	if (r || !tls)
		return r;
	verify = json_object_get(tls, "verify");
	if (verify && !json_is_boolean(verify))
		return bad(p, "pool %s: tls.verify is not a boolean", pool->name);
	pool->tls_verify = verify && json_is_true(verify);
	if (!pool->tls_verify)
		return 0;
	if ((r = get_name(p, tls, "pkiProfile", true, &pool->pki_profile)))
		return r;
	return get_pem(p, tls, "caCertificate", "CERTIFICATE", &pool->ca_pem);
}

static int parse_pool(struct parse *p, const json_t *v, struct lb_pool *pool)
{
	const json_t *hm;
	const char *type;
	int r;

	if (!json_is_object(v))
		return bad(p, "a pool is not an object");
	if ((r = get_name(p, v, "name", true, &pool->name)) || (r = parse_proto(p, v, "protocol", &pool->protocol)))
		return r;
	if (pool->protocol == LB_PROTO_HTTPS && (r = parse_pool_tls(p, v, pool)))
		return r;
	if ((r = get_object(p, v, "healthMonitor", false, &hm)))
		return r;
	pool->monitor_http = pool->protocol == LB_PROTO_HTTP || pool->protocol == LB_PROTO_HTTPS;
	if (hm) {
		if ((r = get_str(p, hm, "type", 16, &type)))
			return r;
		if (type && strcmp(type, "HTTP") != 0 && strcmp(type, "TCP") != 0)
			return bad(p, "healthMonitor.type \"%.16s\" is not HTTP or TCP", type);
		if (type)
			pool->monitor_http = strcmp(type, "HTTP") == 0 && pool->protocol != LB_PROTO_TCP;
	}
	return parse_servers(p, v, pool);
}

static int parse_member(struct parse *p, const json_t *v, struct lb_member *m)
{
	const char *path, *label;
	uint32_t ratio = 100;
	int r;

	if (!json_is_object(v))
		return bad(p, "a pool group member is not an object");
	if ((r = get_name(p, v, "pool", true, &m->pool)) || (r = get_host(p, v, "host", false, &m->host)) ||
	    (r = get_str(p, v, "path", LB_PATH_MAX, &path)) ||
	    (r = get_str(p, v, "priorityLabel", LB_HOST_MAX + LB_PATH_MAX, &label)) ||
	    (r = get_u32(p, v, "ratio", 0, LB_RATIO_MAX, false, &ratio)))
		return r;
	if (path && !path_ok(path))
		return bad(p, "member path \"%.80s\" is not an absolute path of visible characters", path);
	m->ratio = ratio;
	if ((r = dup_into(&m->path, path)))
		return r;
	if (label) {
		for (const char *c = label; *c; c++)
			if (*c <= ' ' || *c >= 127 || *c == '#' || *c == '"' || *c == '\'' || *c == '\\')
				return bad(p, "priorityLabel \"%.80s\" holds a character not allowed", label);
		return dup_into(&m->label, label);
	}
	if (asprintf(&m->label, "%s%s", m->host ? m->host : "", m->path ? m->path : "") < 0) {
		m->label = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void group_clear(struct lb_pool_group *g)
{
	for (size_t i = 0; g->members && i < g->n_members; i++) {
		free(g->members[i].pool);
		free(g->members[i].host);
		free(g->members[i].path);
		free(g->members[i].label);
	}
	free(g->members);
	free(g->name);
}

static int parse_group(struct parse *p, const json_t *v, struct lb_pool_group *g)
{
	const json_t *arr, *m;
	size_t i;
	int r;

	if (!json_is_object(v))
		return bad(p, "a pool group is not an object");
	if ((r = get_name(p, v, "name", true, &g->name)) ||
	    (r = get_array(p, v, "members", LB_POOLS_MAX, &arr)))
		return r;
	if (!arr || json_array_size(arr) == 0)
		return 0;
	g->members = calloc(json_array_size(arr), sizeof(*g->members));
	if (!g->members)
		return -ENOMEM;
	json_array_foreach(arr, i, m) {
		g->n_members = i + 1;
		if ((r = parse_member(p, m, &g->members[i])))
			return r;
	}
	return 0;
}

static int parse_redirect(struct parse *p, const json_t *v, struct lb_redirect *rd)
{
	const char *scheme;
	uint32_t port = 80, code = 302;
	int r;

	if (!json_is_object(v))
		return bad(p, "a redirect is not an object");
	if ((r = get_host(p, v, "host", true, &rd->host)) || (r = get_u32(p, v, "port", 1, 65535, false, &port)) ||
	    (r = get_u32(p, v, "code", 301, 308, false, &code)) || (r = get_str(p, v, "scheme", 8, &scheme)))
		return r;
	if (code != 301 && code != 302 && code != 303 && code != 307 && code != 308)
		return bad(p, "redirect code is not 301, 302, 303, 307 or 308");
	if (scheme && strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
		return bad(p, "redirect scheme \"%.8s\" is not http or https", scheme);
	rd->port = (uint16_t)port;
	rd->code = (uint16_t)code;
	rd->https = !scheme || strcmp(scheme, "https") == 0;
	return 0;
}

static void vs_clear(struct lb_vs *vs)
{
	size_t i;

	free(vs->name);
	free(vs->parent);
	free(vs->cert);
	for (i = 0; vs->hosts && i < vs->n_hosts; i++)
		free(vs->hosts[i]);
	free(vs->hosts);
	for (i = 0; vs->groups && i < vs->n_groups; i++)
		group_clear(&vs->groups[i]);
	free(vs->groups);
	for (i = 0; vs->pools && i < vs->n_pools; i++)
		pool_clear(&vs->pools[i]);
	free(vs->pools);
	for (i = 0; vs->redirects && i < vs->n_redirects; i++)
		free(vs->redirects[i].host);
	free(vs->redirects);
	memset(vs, 0, sizeof(*vs));
}

static int parse_type(struct parse *p, const json_t *spec, enum lb_vs_type *out)
{
	static const char *names[] = { "SharedL7", "SNIChild", "Passthrough", "PassthroughInsecure",
				       "Dedicated", "L4" };
	const char *s;
	int r = get_str(p, spec, "type", 32, &s);

	if (r)
		return r;
	if (!s)
		return bad(p, "spec.type is missing");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum lb_vs_type)i;
			return 0;
		}
	return bad(p, "spec.type \"%.32s\" is not a VirtualService type", s);
}

const char *lb_vs_type_name(enum lb_vs_type t)
{
	static const char *names[] = { "SharedL7", "SNIChild", "Passthrough", "PassthroughInsecure",
				       "Dedicated", "L4" };

	return (size_t)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

static int parse_ports(struct parse *p, const json_t *spec, struct lb_vs *vs)
{
	const json_t *arr, *v;
	size_t i;
	int r = get_array(p, spec, "ports", LB_PORTS_MAX, &arr);

	if (r || !arr)
		return r;
	json_array_foreach(arr, i, v) {
		uint32_t port = 0;

		if (!json_is_object(v))
			return bad(p, "spec.ports: an entry is not an object");
		if ((r = get_u32(p, v, "port", 1, 65535, true, &port)) ||
		    (r = parse_proto(p, v, "protocol", &vs->ports[i].protocol)))
			return r;
		vs->ports[i].port = (uint16_t)port;
		vs->n_ports = i + 1;
	}
	return 0;
}

static int parse_hosts(struct parse *p, const json_t *spec, struct lb_vs *vs)
{
	const json_t *arr, *v;
	size_t i;
	int r = get_array(p, spec, "hosts", LB_POOLS_MAX, &arr);

	if (r || !arr || json_array_size(arr) == 0)
		return r;
	vs->hosts = calloc(json_array_size(arr), sizeof(*vs->hosts));
	if (!vs->hosts)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v) || !host_ok(json_string_value(v)) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return bad(p, "spec.hosts[%zu] is not a lowercase DNS name", i);
		if ((r = dup_into(&vs->hosts[i], json_string_value(v))))
			return r;
		vs->n_hosts = i + 1;
	}
	return 0;
}

/* parse spec.FIELD, an array of structs of size each, with fn */
static int parse_list(struct parse *p, const json_t *spec, const char *field, size_t max, size_t each,
		      void **items, size_t *n, int (*fn)(struct parse *, const json_t *, void *))
{
	const json_t *arr, *v;
	size_t i;
	int r = get_array(p, spec, field, max, &arr);

	if (r || !arr || json_array_size(arr) == 0)
		return r;
	*items = calloc(json_array_size(arr), each);
	if (!*items)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		*n = i + 1;
		if ((r = fn(p, v, (char *)*items + i * each)))
			return r;
	}
	return 0;
}

static int pool_fn(struct parse *p, const json_t *v, void *out) { return parse_pool(p, v, out); }
static int group_fn(struct parse *p, const json_t *v, void *out) { return parse_group(p, v, out); }
static int redirect_fn(struct parse *p, const json_t *v, void *out) { return parse_redirect(p, v, out); }

static int pool_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_pool *)a)->name, ((const struct lb_pool *)b)->name);
}

/* pool names are unique (sorted, for lb_vs_find_pool), every member names
 * one of them */
static int check_references(struct parse *p, struct lb_vs *vs)
{
	if (vs->n_pools)
		qsort(vs->pools, vs->n_pools, sizeof(*vs->pools), pool_cmp);
	for (size_t i = 1; i < vs->n_pools; i++)
		if (strcmp(vs->pools[i - 1].name, vs->pools[i].name) == 0)
			return bad(p, "pool %s is listed twice", vs->pools[i].name);
	for (size_t g = 0; g < vs->n_groups; g++)
		for (size_t m = 0; m < vs->groups[g].n_members; m++)
			if (!lb_vs_find_pool(vs, vs->groups[g].members[m].pool))
				return bad(p, "pool group member names pool %s, which is not in spec.pools",
					   vs->groups[g].members[m].pool);
	return 0;
}

static int parse_vs_spec(struct parse *p, const json_t *spec, struct lb_vs *vs)
{
	int r;

	if ((r = parse_type(p, spec, &vs->type)) || vs->type == LB_VS_L4)
		return r;
	if ((r = get_ip(p, spec, "vip", &vs->has_vip, &vs->vip)) ||
	    (r = get_name(p, spec, "parent", vs->type == LB_VS_SNI_CHILD || vs->type == LB_VS_PASSTHROUGH_INSECURE,
			  &vs->parent)) ||
	    (r = parse_ports(p, spec, vs)) || (r = parse_hosts(p, spec, vs)) ||
	    (r = get_name(p, spec, "sslKeyAndCertificate", false, &vs->cert)))
		return r;
	if ((vs->type == LB_VS_SNI_CHILD || vs->type == LB_VS_DEDICATED) && vs->n_hosts != 1)
		return bad(p, "spec.hosts must hold exactly one host for a %s VirtualService", lb_vs_type_name(vs->type));
	if ((r = parse_list(p, spec, "pools", LB_POOLS_MAX, sizeof(struct lb_pool), (void **)&vs->pools,
			    &vs->n_pools, pool_fn)) ||
	    (r = parse_list(p, spec, "poolGroups", LB_POOLS_MAX, sizeof(struct lb_pool_group), (void **)&vs->groups,
			    &vs->n_groups, group_fn)) ||
	    (r = parse_list(p, spec, "httpRedirects", LB_REDIRECTS_MAX, sizeof(struct lb_redirect),
			    (void **)&vs->redirects, &vs->n_redirects, redirect_fn)))
		return r;
	return check_references(p, vs);
}

static int grow(void **arr, size_t n, size_t each)
{
	void *a;

	if (n >= LB_OBJECTS_MAX)
		return -E2BIG;
	if (n & (n - 1) && n)	/* capacity doubles at powers of two */
		return 0;
	a = realloc(*arr, (n ? n * 2 : 8) * each);
	if (!a)
		return -ENOMEM;
	*arr = a;
	return 0;
}

static int add_vs(struct lb_state *s, struct parse *p, const json_t *obj, bool *skipped)
{
	struct lb_vs vs = { 0 };
	const json_t *spec;
	int r;

	if ((r = dup_into(&vs.name, p->name)) || (r = get_object(p, obj, "spec", true, &spec)) ||
	    (r = parse_vs_spec(p, spec, &vs)))
		goto out;
	if (vs.type == LB_VS_L4) {
		*skipped = true;
		goto out;
	}
	if ((r = grow((void **)&s->vs, s->n_vs, sizeof(vs))))
		goto out;
	vs.seq = s->next_seq++;
	s->vs[s->n_vs++] = vs;
	return 0;
out:
	vs_clear(&vs);
	return r;
}

static int add_cert(struct lb_state *s, struct parse *p, const json_t *obj)
{
	struct lb_cert c = { 0 };
	const json_t *spec;
	int r;

	if ((r = dup_into(&c.name, p->name)) || (r = get_object(p, obj, "spec", true, &spec)) ||
	    (r = get_pem(p, spec, "certificate", "CERTIFICATE", &c.certificate)) ||
	    (r = get_pem(p, spec, "key", "PRIVATE KEY", &c.key)) ||
	    (r = grow((void **)&s->certs, s->n_certs, sizeof(c))))
		goto out;
	c.seq = s->next_seq++;
	s->certs[s->n_certs++] = c;
	return 0;
out:
	free(c.name);
	free(c.certificate);
	wipe_free(c.key);
	return r;
}

int lb_state_add_json(struct lb_state *s, const json_t *obj, bool *skipped, char *err, size_t errlen)
{
	struct parse p = { .kind = "object", .err = err, .errlen = errlen };
	const json_t *meta;
	const char *api, *kind;
	bool skip = false;
	int r;

	if (!json_is_object(obj)) {
		errmsg(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	if ((r = get_str(&p, obj, "apiVersion", 64, &api)) || (r = get_str(&p, obj, "kind", 64, &kind)))
		return r;
	if (!kind || (strcmp(kind, "VirtualService") != 0 && strcmp(kind, "SSLKeyAndCertificate") != 0))
		return bad(&p, "kind \"%.64s\" is not VirtualService or SSLKeyAndCertificate", kind ? kind : "");
	p.kind = kind;
	if (!api || strcmp(api, "lb.weft.io/v1") != 0)
		return bad(&p, "apiVersion is not lb.weft.io/v1");
	if ((r = get_object(&p, obj, "metadata", true, &meta)) || (r = get_str(&p, meta, "name", LB_NAME_MAX, &p.name)))
		return r;
	if (!p.name || !name_ok(p.name)) {
		p.name = NULL;
		return bad(&p, "metadata.name is missing or not a name");
	}
	r = strcmp(kind, "VirtualService") == 0 ? add_vs(s, &p, obj, &skip) : add_cert(s, &p, obj);
	if (skipped)
		*skipped = skip;
	return r;
}

static int vs_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_vs *)a)->name, ((const struct lb_vs *)b)->name);
}

static int cert_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_cert *)a)->name, ((const struct lb_cert *)b)->name);
}

/* name, then input order: qsort is not stable */
static int vs_seq_cmp(const void *a, const void *b)
{
	const struct lb_vs *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->seq < y->seq ? -1 : 1);
}

static int cert_seq_cmp(const void *a, const void *b)
{
	const struct lb_cert *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->seq < y->seq ? -1 : 1);
}

size_t lb_state_finish(struct lb_state *s, char *report, size_t len)
{
	size_t dropped = 0, w, i;

	/* stable order: the first of equal names (in input order) is kept */
	if (s->n_vs)
		qsort(s->vs, s->n_vs, sizeof(*s->vs), vs_seq_cmp);
	for (w = 0, i = 0; i < s->n_vs; i++) {
		if (w && strcmp(s->vs[w - 1].name, s->vs[i].name) == 0) {
			errmsg_line(report, len, "VirtualService %s: defined twice; the second is ignored", s->vs[i].name);
			vs_clear(&s->vs[i]);
			dropped++;
			continue;
		}
		s->vs[w++] = s->vs[i];
	}
	s->n_vs = w;
	if (s->n_certs)
		qsort(s->certs, s->n_certs, sizeof(*s->certs), cert_seq_cmp);
	for (w = 0, i = 0; i < s->n_certs; i++) {
		if (w && strcmp(s->certs[w - 1].name, s->certs[i].name) == 0) {
			errmsg_line(report, len, "SSLKeyAndCertificate %s: defined twice; the second is ignored",
				    s->certs[i].name);
			free(s->certs[i].name);
			free(s->certs[i].certificate);
			wipe_free(s->certs[i].key);
			dropped++;
			continue;
		}
		s->certs[w++] = s->certs[i];
	}
	s->n_certs = w;
	return dropped;
}

const struct lb_vs *lb_state_find_vs(const struct lb_state *s, const char *name)
{
	struct lb_vs key = { .name = (char *)name };

	return s->n_vs ? bsearch(&key, s->vs, s->n_vs, sizeof(key), vs_cmp) : NULL;
}

const struct lb_cert *lb_state_find_cert(const struct lb_state *s, const char *name)
{
	struct lb_cert key = { .name = (char *)name };

	return s->n_certs ? bsearch(&key, s->certs, s->n_certs, sizeof(key), cert_cmp) : NULL;
}

const struct lb_pool *lb_vs_find_pool(const struct lb_vs *vs, const char *name)
{
	struct lb_pool key = { .name = (char *)name };

	return vs->n_pools ? bsearch(&key, vs->pools, vs->n_pools, sizeof(key), pool_cmp) : NULL;
}

struct lb_state *lb_state_new(void)
{
	return calloc(1, sizeof(struct lb_state));
}

void lb_state_free(struct lb_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_vs; i++)
		vs_clear(&s->vs[i]);
	for (size_t i = 0; i < s->n_certs; i++) {
		free(s->certs[i].name);
		free(s->certs[i].certificate);
		wipe_free(s->certs[i].key);
	}
	free(s->vs);
	free(s->certs);
	free(s);
}
