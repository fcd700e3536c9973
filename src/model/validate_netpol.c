/*
 * validate_netpol.c — a NetworkPolicy (networking.k8s.io/v1): the pods it
 * selects, its policy types, and its ingress/egress rules of peers
 * (selectors or an ipBlock with exceptions inside it) and ports (a number,
 * a named port, or a numeric range up to endPort).
 */
#include "model/model.h"
#include "model/validate.h"

#include <stdio.h>
#include <string.h>

static void check_ip_block(struct vctx *v, const json_t *peer)
{
	const json_t *block = vget_object(v, peer, "ipBlock", false), *except, *e;
	struct cidr outer, inner;
	bool have_outer;
	size_t mark, i;

	if (!block)
		return;
	mark = vpush(v, "ipBlock");
	have_outer = vget_cidr(v, block, "cidr", true, &outer);
	except = vget_list(v, block, "except", false);
	json_array_foreach(except, i, e) {
		char field[32], a[CIDR_STRLEN], b[CIDR_STRLEN];

		snprintf(field, sizeof(field), "except[%zu]", i);
		if (vval_cidr(v, field, e, true, &inner) && have_outer &&
		    !(cidr_contains(&outer, &inner) && inner.len > outer.len)) {
			cidr_format(&inner, a);
			cidr_format(&outer, b);
			verror(v, field, "%s is not strictly inside %s", a, b);
		}
	}
	vpop(v, mark);
}

static void check_peers(struct vctx *v, const json_t *rule, const char *field)
{
	const json_t *peers = vget_list(v, rule, field, false), *peer;
	size_t i;

	json_array_foreach(peers, i, peer) {
		size_t m;

		if (vpush_item(v, field, i, peer, &m)) {
			bool pods = json_object_get(peer, "podSelector") != NULL;
			bool nss = json_object_get(peer, "namespaceSelector") != NULL;
			bool block = json_object_get(peer, "ipBlock") != NULL;

			if (!pods && !nss && !block)
				verror(v, NULL, "must have podSelector, namespaceSelector or ipBlock");
			if (block && (pods || nss))
				verror(v, NULL, "ipBlock cannot be combined with podSelector or "
				       "namespaceSelector");
			vcheck_label_selector(v, peer, "podSelector", false);
			vcheck_label_selector(v, peer, "namespaceSelector", false);
			check_ip_block(v, peer);
		}
		vpop(v, m);
	}
}

static void check_ports(struct vctx *v, const json_t *rule)
{
	const json_t *ports = vget_list(v, rule, "ports", false), *p;
	size_t i;

	json_array_foreach(ports, i, p) {
		size_t m;

		if (vpush_item(v, "ports", i, p, &m)) {
			const json_t *port = json_object_get(p, "port");
			json_int_t end;

			vget_protocol(v, p, "protocol");
			vget_port_or_name(v, p, "port", false, 1, NULL);
			if (vget_port(v, p, "endPort", false, &end)) {
				if (!json_is_integer(port))
					verror(v, "endPort", "requires a numeric port");
				else if (end < json_integer_value(port))
					verror(v, "endPort", "%" JSON_INTEGER_FORMAT " is less than "
					       "port %" JSON_INTEGER_FORMAT, end,
					       json_integer_value(port));
			}
		}
		vpop(v, m);
	}
}

static void check_rules(struct vctx *v, const json_t *spec, const char *field, const char *peers)
{
	const json_t *rules = vget_list(v, spec, field, false), *r;
	size_t i;

	json_array_foreach(rules, i, r) {
		size_t m;

		if (vpush_item(v, field, i, r, &m)) {
			check_peers(v, r, peers);
			check_ports(v, r);
		}
		vpop(v, m);
	}
}

void validate_networkpolicy(struct vctx *v, const json_t *obj)
{
	static const char *const types[] = { "Ingress", "Egress", NULL };
	const json_t *spec = vget_object(v, obj, "spec", true), *list, *t;
	bool seen[2] = { false, false };
	size_t mark, i;

	if (!spec)
		return;
	mark = vpush(v, "spec");
	vcheck_label_selector(v, spec, "podSelector", true);
	list = vget_list(v, spec, "policyTypes", false);
	json_array_foreach(list, i, t) {
		char field[48];
		const char *type;

		snprintf(field, sizeof(field), "policyTypes[%zu]", i);
		type = vval_enum(v, field, t, true, types);
		if (type) {
			bool *s = &seen[!strcmp(type, "Egress")];

			if (*s)
				verror(v, field, "duplicate '%s'", type);
			*s = true;
		}
	}
	check_rules(v, spec, "ingress", "from");
	check_rules(v, spec, "egress", "to");
	vpop(v, mark);
}
