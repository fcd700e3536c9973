/*
 * netpol.c — NetworkPolicy objects into struct netpol, and the evaluator
 * (netpol.h, whose comment holds the semantics, invariants 1-6).
 *
 * Parsing walks the object once, top-down, carrying the field path for
 * messages ("spec.egress[2].to[0].ipBlock.except[1]"); everything it
 * allocates hangs off the struct netpol as soon as it is made, so one
 * netpol_free on failure releases it all.
 *
 * Evaluation is direct: a side of a flow (the source's egress, the
 * destination's ingress) looks at every policy of the pod's namespace that
 * selects it and isolates that way, and at each of their rules for one
 * whose peers match the other end and whose ports match the destination
 * port.  Addresses are in network order at the API and in host order
 * inside (cidr.h's).
 */
#include "model/netpol.h"
#include "lib/errmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_NAME_LABEL "kubernetes.io/metadata.name"

struct parse {
	char *err;
	size_t errlen;
	const char *ns, *name;
};

/* rc, with err "networkpolicy NS/NAME: <fmt>". */
static int __attribute__((format(printf, 3, 4))) bad(const struct parse *p, int rc, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (rc == -ENOMEM)
		snprintf(what, sizeof(what), "out of memory");
	errmsg(p->err, p->errlen, "networkpolicy %s/%s: %s", p->ns ? p->ns : "?", p->name ? p->name : "?", what);
	return rc;
}

/* A field path into buf (cut short if it must be: it only names). */
static void __attribute__((format(printf, 3, 4))) path_at(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

const char *netpol_dir_name(enum netpol_dir d)
{
	return d == NETPOL_EGRESS ? "egress" : "ingress";
}

const char *netpol_proto_name(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP: return "TCP";
	case IPPROTO_UDP: return "UDP";
	case IPPROTO_SCTP: return "SCTP";
	}
	return NULL;
}

int netpol_proto_parse(const char *name, uint8_t *proto)
{
	static const uint8_t all[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP };

	for (size_t i = 0; name && i < sizeof(all); i++)
		if (strcmp(name, netpol_proto_name(all[i])) == 0) {
			*proto = all[i];
			return 0;
		}
	return -EINVAL;
}

/* ---------------------------------------------------------------- freeing */

static void peer_free(struct netpol_peer *p)
{
	selector_free(&p->pods);
	selector_free(&p->namespaces);
	free(p->except);
}

static void rule_free(struct netpol_rule *r)
{
	for (size_t i = 0; i < r->npeers; i++)
		peer_free(&r->peers[i]);
	free(r->peers);
	free(r->ports);
}

void netpol_free(struct netpol *np)
{
	if (!np)
		return;
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < np->nrules[d]; i++)
			rule_free(&np->rules[d][i]);
		free(np->rules[d]);
	}
	selector_free(&np->subject);
	free(np->ns);
	free(np->name);
	memset(np, 0, sizeof(*np));
}

/* ---------------------------------------------------------------- parsing */

/* The list at field of parent (absent: NULL, size 0), bounded; path names it. */
static int list_of(const struct parse *p, const json_t *parent, const char *field, const char *path,
		   const json_t **out)
{
	const json_t *l = json_object_get(parent, field);

	*out = NULL;
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_array(l))
		return bad(p, -EINVAL, "%s.%s: must be a list", path, field);
	if (json_array_size(l) > NETPOL_MAX_ITEMS)
		return bad(p, -E2BIG, "%s.%s: more than %d items (the limit)", path, field, NETPOL_MAX_ITEMS);
	*out = l;
	return 0;
}

/* calloc of a list's items (NULL for none: not an error). */
static int items(size_t n, size_t size, void **out)
{
	*out = n ? calloc(n, size) : NULL;
	return n && !*out ? -ENOMEM : 0;
}

static int label_selector(const struct parse *p, const json_t *ls, const char *path, struct selector *s)
{
	char why[256] = "";
	int rc = selector_from_label_selector(s, ls, why, sizeof(why));

	if (rc)
		return bad(p, rc, "%s%s%s", path, strstr(why, ": ") ? "." : ": ", why);
	return 0;
}

static int cidr_field(const struct parse *p, const json_t *v, const char *path, struct cidr *c)
{
	const char *s = json_string_value(v);
	char fixed[CIDR_STRLEN];
	int rc;

	if (!s)
		return bad(p, -EINVAL, "%s: required, a CIDR string", path);
	rc = cidr_parse(s, c);
	if (rc == -EDOM) {
		cidr_format(c, fixed);
		return bad(p, -EINVAL, "%s: '%.40s' has host bits set (%s?)", path, s, fixed);
	}
	if (rc)
		return bad(p, -EINVAL, "%s: '%.40s' is not an IPv4 CIDR", path, s);
	return 0;
}

static int ip_block(const struct parse *p, const json_t *b, const char *path, struct netpol_peer *peer)
{
	char at[160];
	const json_t *except, *e;
	size_t i;
	int rc;

	if (!json_is_object(b))
		return bad(p, -EINVAL, "%s: must be an object", path);
	peer->is_block = true;
	path_at(at, sizeof(at), "%s.cidr", path);
	rc = cidr_field(p, json_object_get(b, "cidr"), at, &peer->block);
	if (rc == 0)
		rc = list_of(p, b, "except", path, &except);
	if (rc == 0)
		rc = items(json_array_size(except), sizeof(*peer->except), (void **)&peer->except);
	if (rc)
		return rc == -ENOMEM ? bad(p, rc, "%s", path) : rc;
	json_array_foreach(except, i, e) {
		struct cidr *c = &peer->except[peer->nexcept];

		path_at(at, sizeof(at), "%s.except[%zu]", path, i);
		rc = cidr_field(p, e, at, c);
		if (rc)
			return rc;
		if (!cidr_contains(&peer->block, c) || c->len <= peer->block.len)
			return bad(p, -EINVAL, "%s: %s is not strictly inside the cidr", at,
				   json_string_value(e));
		peer->nexcept++;
	}
	return 0;
}

static int peer_parse(const struct parse *p, const json_t *o, const char *path, struct netpol_peer *peer)
{
	const json_t *pods = json_object_get(o, "podSelector"), *nss = json_object_get(o, "namespaceSelector");
	const json_t *block = json_object_get(o, "ipBlock");
	char at[160];
	int rc = 0;

	if (!json_is_object(o))
		return bad(p, -EINVAL, "%s: must be an object", path);
	if (!pods && !nss && !block)
		return bad(p, -EINVAL, "%s: must have podSelector, namespaceSelector or ipBlock", path);
	if (block && (pods || nss))
		return bad(p, -EINVAL, "%s: ipBlock cannot be combined with podSelector or namespaceSelector", path);
	if (block) {
		path_at(at, sizeof(at), "%s.ipBlock", path);
		return ip_block(p, block, at, peer);
	}
	peer->has_pods = pods != NULL;
	peer->has_namespaces = nss != NULL;
	path_at(at, sizeof(at), "%s.podSelector", path);
	if (pods)
		rc = label_selector(p, pods, at, &peer->pods);
	path_at(at, sizeof(at), "%s.namespaceSelector", path);
	if (rc == 0 && nss)
		rc = label_selector(p, nss, at, &peer->namespaces);
	return rc;
}

static int port_parse(const struct parse *p, const json_t *o, const char *path, struct netpol_port *port)
{
	const json_t *proto = json_object_get(o, "protocol"), *num = json_object_get(o, "port");
	const json_t *end = json_object_get(o, "endPort");
	const char *name = json_string_value(num);

	if (!json_is_object(o))
		return bad(p, -EINVAL, "%s: must be an object", path);
	port->proto = IPPROTO_TCP;
	if (proto && netpol_proto_parse(json_string_value(proto), &port->proto))
		return bad(p, -EINVAL, "%s.protocol: must be TCP, UDP or SCTP", path);
	if (name) {
		if (!*name || strlen(name) >= sizeof(port->name))
			return bad(p, -EINVAL, "%s.port: '%.40s' is not a port name (1 to %d bytes)", path, name,
				   NETPOL_PORT_NAME_MAX - 1);
		strcpy(port->name, name);
	} else if (num && !json_is_null(num)) {
		if (!json_is_integer(num) || json_integer_value(num) < 1 || json_integer_value(num) > 65535)
			return bad(p, -EINVAL, "%s.port: must be a number from 1 to 65535 or a port name", path);
		port->port = (uint16_t)json_integer_value(num);
	}
	port->end_port = port->port;
	if (!end || json_is_null(end))
		return 0;
	if (!port->port)
		return bad(p, -EINVAL, "%s.endPort: requires a numeric port", path);
	if (!json_is_integer(end) || json_integer_value(end) < port->port || json_integer_value(end) > 65535)
		return bad(p, -EINVAL, "%s.endPort: must be a number from port (%u) to 65535", path, port->port);
	port->end_port = (uint16_t)json_integer_value(end);
	return 0;
}

static int rule_parse(const struct parse *p, const json_t *o, enum netpol_dir d, const char *path,
		      struct netpol_rule *r)
{
	const char *field = d == NETPOL_EGRESS ? "to" : "from";
	const json_t *peers, *ports, *e;
	char at[128];
	size_t i;
	int rc;

	if (!json_is_object(o))
		return bad(p, -EINVAL, "%s: must be an object", path);
	rc = list_of(p, o, field, path, &peers);
	if (rc == 0)
		rc = list_of(p, o, "ports", path, &ports);
	if (rc)
		return rc;
	if (items(json_array_size(peers), sizeof(*r->peers), (void **)&r->peers) ||
	    items(json_array_size(ports), sizeof(*r->ports), (void **)&r->ports))
		return bad(p, -ENOMEM, "%s", path);
	json_array_foreach(peers, i, e) {
		path_at(at, sizeof(at), "%s.%s[%zu]", path, field, i);
		r->npeers++;	/* owned from here on, for netpol_free */
		rc = peer_parse(p, e, at, &r->peers[i]);
		if (rc)
			return rc;
	}
	json_array_foreach(ports, i, e) {
		path_at(at, sizeof(at), "%s.ports[%zu]", path, i);
		rc = port_parse(p, e, at, &r->ports[r->nports++]);
		if (rc)
			return rc;
	}
	return 0;
}

static int rules_parse(const struct parse *p, const json_t *spec, enum netpol_dir d, struct netpol *np)
{
	const json_t *rules, *o;
	char at[64];
	size_t i;
	int rc = list_of(p, spec, netpol_dir_name(d), "spec", &rules);

	if (rc)
		return rc;
	if (items(json_array_size(rules), sizeof(*np->rules[d]), (void **)&np->rules[d]))
		return bad(p, -ENOMEM, "spec");
	json_array_foreach(rules, i, o) {
		path_at(at, sizeof(at), "spec.%s[%zu]", netpol_dir_name(d), i);
		np->nrules[d]++;
		rc = rule_parse(p, o, d, at, &np->rules[d][i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* policyTypes, or their default (invariant 1 of netpol.h). */
static int policy_types(const struct parse *p, const json_t *spec, struct netpol *np)
{
	const json_t *types, *t;
	size_t i;
	int rc = list_of(p, spec, "policyTypes", "spec", &types);

	if (rc)
		return rc;
	if (json_array_size(types) == 0) {
		np->isolates[NETPOL_INGRESS] = true;
		np->isolates[NETPOL_EGRESS] = json_array_size(json_object_get(spec, "egress")) > 0;
		return 0;
	}
	json_array_foreach(types, i, t) {
		const char *s = json_string_value(t);

		if (s && !strcmp(s, "Ingress"))
			np->isolates[NETPOL_INGRESS] = true;
		else if (s && !strcmp(s, "Egress"))
			np->isolates[NETPOL_EGRESS] = true;
		else
			return bad(p, -EINVAL, "spec.policyTypes[%zu]: must be Ingress or Egress", i);
	}
	return 0;
}

int netpol_parse(const json_t *obj, struct netpol *np, char *err, size_t errlen)
{
	const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
	struct parse p = { .err = err, .errlen = errlen };
	int rc;

	memset(np, 0, sizeof(*np));
	p.ns = json_string_value(json_object_get(md, "namespace"));
	p.name = json_string_value(json_object_get(md, "name"));
	if (!json_is_object(obj) || !p.ns || !*p.ns || !p.name || !*p.name)
		return bad(&p, -EINVAL, "metadata: a namespace and a name are required");
	np->ns = strdup(p.ns);
	np->name = strdup(p.name);
	if (!np->ns || !np->name) {
		rc = bad(&p, -ENOMEM, "metadata");
		goto out;
	}
	if (!json_is_object(spec)) {
		rc = bad(&p, -EINVAL, "spec: required, an object");
		goto out;
	}
	if (!json_object_get(spec, "podSelector")) {
		rc = bad(&p, -EINVAL, "spec.podSelector: required ({} selects every pod)");
		goto out;
	}
	rc = label_selector(&p, json_object_get(spec, "podSelector"), "spec.podSelector", &np->subject);
	if (rc == 0)
		rc = policy_types(&p, spec, np);
	if (rc == 0)
		rc = rules_parse(&p, spec, NETPOL_INGRESS, np);
	if (rc == 0)
		rc = rules_parse(&p, spec, NETPOL_EGRESS, np);
out:
	if (rc)
		netpol_free(np);
	return rc;
}

/* ---------------------------------------------------------------- evaluation */

static bool labels_match(const struct selector *s, const json_t *labels)
{
	struct selector_view v = { .field = { "", "", "" }, .labels = json_is_object(labels) ? labels : NULL };

	return selector_matches(s, &v);
}

bool netpol_selects(const struct netpol *np, const char *pod_ns, const json_t *pod_labels)
{
	return pod_ns && strcmp(np->ns, pod_ns) == 0 && labels_match(&np->subject, pod_labels);
}

bool netpol_peer_matches_addr(const struct netpol_peer *p, in_addr_t ip)
{
	uint32_t a = ntohl(ip);

	if (!p->is_block || !cidr_contains_ip(&p->block, a))
		return false;
	for (size_t i = 0; i < p->nexcept; i++)
		if (cidr_contains_ip(&p->except[i], a))
			return false;
	return true;
}

bool netpol_peer_matches_pod(const struct netpol *np, const struct netpol_peer *p, const struct netpol_pod *pod)
{
	if (p->is_block)
		return pod->ip && netpol_peer_matches_addr(p, pod->ip);
	if (!p->has_namespaces && strcmp(np->ns, pod->ns) != 0)
		return false;	/* podSelector alone: the policy's namespace */
	if (p->has_namespaces && !labels_match(&p->namespaces, pod->ns_labels))
		return false;
	return !p->has_pods || labels_match(&p->pods, pod->labels);
}

/* The containerPort named name for proto in spec's containers, or 0. */
static uint16_t named_port(const json_t *spec, const char *name, uint8_t proto)
{
	const json_t *c, *port;
	size_t i, j;

	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		json_array_foreach(json_object_get(c, "ports"), j, port) {
			const char *n = json_string_value(json_object_get(port, "name"));
			const char *pr = json_string_value(json_object_get(port, "protocol"));
			json_int_t num = json_integer_value(json_object_get(port, "containerPort"));
			uint8_t have = IPPROTO_TCP;

			if (!n || strcmp(n, name) || (pr && netpol_proto_parse(pr, &have)) || have != proto)
				continue;
			if (num >= 1 && num <= 65535)
				return (uint16_t)num;
		}
	}
	return 0;
}

int netpol_port_range(const struct netpol_port *p, const struct netpol_pod *dst, uint16_t *lo, uint16_t *hi)
{
	if (p->name[0]) {
		uint16_t n = dst ? named_port(dst->spec, p->name, p->proto) : 0;

		if (!n)
			return -ENOENT;
		*lo = *hi = n;
		return 0;
	}
	*lo = p->port;
	*hi = p->port ? p->end_port : 65535;
	return 0;
}

static bool port_matches(const struct netpol_rule *r, const struct netpol_pod *dst, uint8_t proto, uint16_t port)
{
	if (r->nports == 0)
		return true;
	for (size_t i = 0; i < r->nports; i++) {
		uint16_t lo, hi;

		if (r->ports[i].proto == proto && netpol_port_range(&r->ports[i], dst, &lo, &hi) == 0 &&
		    lo <= port && port <= hi)
			return true;
	}
	return false;
}

/* Does a peer of r (a rule of np) match the other end of the flow? */
static bool peer_matches(const struct netpol *np, const struct netpol_rule *r, const struct netpol_pod *other,
			 in_addr_t other_ip)
{
	if (r->npeers == 0)
		return true;
	for (size_t i = 0; i < r->npeers; i++)
		if (other ? netpol_peer_matches_pod(np, &r->peers[i], other)
			  : netpol_peer_matches_addr(&r->peers[i], other_ip))
			return true;
	return false;
}

static void note(const struct netpol **list, size_t *n, const struct netpol *np)
{
	if (*n < NETPOL_VERDICT_MAX)
		list[*n] = np;
	(*n)++;
}

/* One side: pod's direction d, the other end other/other_ip, the
 * destination dst (whose ports the rules name). */
static void side_decide(const struct netpol *const *pols, size_t n, enum netpol_dir d, const struct netpol_pod *pod,
			const struct netpol_pod *other, in_addr_t other_ip, const struct netpol_pod *dst,
			uint8_t proto, uint16_t port, struct netpol_side *s)
{
	s->pod = pod != NULL;
	for (size_t i = 0; pod && i < n; i++) {
		const struct netpol *np = pols[i];
		bool allows = false;

		if (!np->isolates[d] || !netpol_selects(np, pod->ns, pod->labels))
			continue;
		s->isolated = true;
		note(s->isolated_by, &s->nisolated_by, np);
		for (size_t r = 0; r < np->nrules[d] && !allows; r++)
			allows = peer_matches(np, &np->rules[d][r], other, other_ip) &&
				 port_matches(&np->rules[d][r], dst, proto, port);
		if (allows)
			note(s->allowed_by, &s->nallowed_by, np);
	}
	s->allowed = !s->isolated || s->nallowed_by > 0;
}

static bool same_pod(const struct netpol_pod *a, const struct netpol_pod *b)
{
	return a && b && (a == b || (!strcmp(a->ns, b->ns) && !strcmp(a->name, b->name)));
}

int netpol_decide(const struct netpol *const *pols, size_t n, const struct netpol_pod *src, in_addr_t src_ip,
		  const struct netpol_pod *dst, in_addr_t dst_ip, uint8_t proto, uint16_t port,
		  struct netpol_verdict *v)
{
	memset(v, 0, sizeof(*v));
	if (!netpol_proto_name(proto))
		return -EINVAL;
	if (src)
		src_ip = src->ip;
	if (dst)
		dst_ip = dst->ip;
	side_decide(pols, n, NETPOL_EGRESS, src, dst, dst_ip, dst, proto, port, &v->side[NETPOL_EGRESS]);
	side_decide(pols, n, NETPOL_INGRESS, dst, src, src_ip, dst, proto, port, &v->side[NETPOL_INGRESS]);
	v->self = same_pod(src, dst);
	v->allowed = v->self || (v->side[NETPOL_EGRESS].allowed && v->side[NETPOL_INGRESS].allowed);
	return 0;
}
