/*
 * validate_endpointslice.c — EndpointSlice (discovery.k8s.io/v1): a share
 * of a Service's endpoints, checked as Kubernetes checks it, IPv4 only:
 *
 *   addressType   required, "IPv4" (weft has no IPv6 and no FQDN backends)
 *   endpoints     at most ENDPOINTSLICE_MAX_ENDPOINTS, each with
 *                 1..ENDPOINTSLICE_MAX_ADDRESSES IPv4 addresses, optional
 *                 conditions {ready, serving, terminating} (booleans),
 *                 nodeName, hostname, zone, targetRef {kind, namespace, name}
 *   ports         at most ENDPOINTSLICE_MAX_PORTS, each {name (a DNS-1123
 *                 label, optional), protocol TCP|UDP|SCTP, port 1-65535},
 *                 names unique
 * The label kubernetes.io/service-name is optional (metadata's checks see
 * that it is a valid label value).
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

static void check_list_size(struct vctx *v, const json_t *list, const char *field, size_t lo, size_t hi)
{
	size_t n = json_array_size(list);

	if (n < lo)
		verror(v, field, "must have at least %zu item%s", lo, lo == 1 ? "" : "s");
	else if (n > hi)
		verror(v, field, "too many items (%zu, at most %zu)", n, hi);
}

static void check_conditions(struct vctx *v, const json_t *endpoint)
{
	static const char *const flags[] = { "ready", "serving", "terminating" };
	const json_t *c = vget_object(v, endpoint, "conditions", false);
	size_t m;

	if (!c)
		return;
	m = vpush(v, "conditions");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		bool b;

		(void)vget_bool(v, c, flags[i], false, &b);
	}
	vpop(v, m);
}

static void check_target_ref(struct vctx *v, const json_t *endpoint)
{
	const json_t *t = vget_object(v, endpoint, "targetRef", false);
	size_t m;

	if (!t)
		return;
	m = vpush(v, "targetRef");
	vget_string(v, t, "kind", false);
	vget_name(v, t, "namespace", false, model_dns1123_label, "a valid DNS-1123 label");
	vget_string(v, t, "name", false);
	vget_string(v, t, "uid", false);
	vpop(v, m);
}

static void check_endpoint(struct vctx *v, const json_t *e)
{
	const json_t *addrs = vget_list(v, e, "addresses", true), *a;
	size_t i;

	if (addrs) {
		check_list_size(v, addrs, "addresses", 1, ENDPOINTSLICE_MAX_ADDRESSES);
		json_array_foreach(addrs, i, a) {
			size_t m = vpush(v, "addresses");
			const char *s;
			char q[VQUOTE_MAX];
			uint32_t ip;

			vpush_index(v, i);
			s = vval_string(v, NULL, a, true);
			if (s && ip4_parse(s, &ip) < 0)
				verror(v, NULL, "%s is not a valid IPv4 address", vquote(s, q));
			vpop(v, m);
		}
	}
	check_conditions(v, e);
	vget_name(v, e, "nodeName", false, model_dns1123_subdomain, "a valid DNS-1123 subdomain");
	vget_name(v, e, "hostname", false, model_dns1123_label, "a valid DNS-1123 label");
	vget_string(v, e, "zone", false);
	check_target_ref(v, e);
}

static void check_ports(struct vctx *v, const json_t *obj)
{
	const json_t *ports = vget_list(v, obj, "ports", false), *p;
	json_t *names = json_object();
	size_t i;

	if (ports)
		check_list_size(v, ports, "ports", 0, ENDPOINTSLICE_MAX_PORTS);
	json_array_foreach(ports, i, p) {
		size_t m;

		if (vpush_item(v, "ports", i, p, &m)) {
			const char *name = json_string_value(json_object_get(p, "name"));
			char q[VQUOTE_MAX];

			if (name && *name)
				vget_name(v, p, "name", false, model_dns1123_label, "a valid DNS-1123 label");
			else
				vget_string(v, p, "name", false);
			if (names && !vset_add(names, name ? name : ""))
				verror(v, "name", "%s is the name of an earlier port too", vquote(name ? name : "", q));
			vget_port(v, p, "port", true, NULL);
			vget_protocol(v, p, "protocol");
			vget_string(v, p, "appProtocol", false);
		}
		vpop(v, m);
	}
	json_decref(names);
}

void validate_endpointslice(struct vctx *v, const json_t *obj)
{
	const char *type = vget_string(v, obj, "addressType", true);
	const json_t *eps = vget_list(v, obj, "endpoints", false), *e;
	char q[VQUOTE_MAX];
	size_t i;

	if (type && strcmp(type, "IPv4") != 0)
		verror(v, "addressType", "%s is not supported: weft is IPv4 only (must be 'IPv4')", vquote(type, q));
	if (eps)
		check_list_size(v, eps, "endpoints", 0, ENDPOINTSLICE_MAX_ENDPOINTS);
	json_array_foreach(eps, i, e) {
		size_t m;

		if (vpush_item(v, "endpoints", i, e, &m))
			check_endpoint(v, e);
		vpop(v, m);
	}
	check_ports(v, obj);
}
