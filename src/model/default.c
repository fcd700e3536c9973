/*
 * default.c — model_default: what a user may leave out, filled in the way
 * Kubernetes and OpenShift do, so that the rest of weft reads one form.
 *
 * Only absent (or null) fields are set; a present field is never changed.
 * Every step checks the types it relies on, so an object that did not
 * validate is left alone where it is malformed rather than crashing.
 */
#include "model/model.h"

#include <string.h>

#define AFFINITY_TIMEOUT_DEFAULT 10800
#define VXLAN_PORT_DEFAULT 4789
#define ROUTE_WEIGHT_DEFAULT 100

/* obj is an object without a (non-null) field. */
static bool absent(const json_t *obj, const char *field)
{
	const json_t *j;

	if (!json_is_object(obj))
		return false;
	j = json_object_get(obj, field);
	return !j || json_is_null(j);
}

static bool str_is(const json_t *j, const char *s)
{
	return json_is_string(j) && strcmp(json_string_value(j), s) == 0;
}

static void set_str(json_t *obj, const char *field, const char *value)
{
	if (absent(obj, field))
		json_object_set_new(obj, field, json_string(value));
}

static void set_int(json_t *obj, const char *field, json_int_t value)
{
	if (absent(obj, field))
		json_object_set_new(obj, field, json_integer(value));
}

/* The object at obj.field, created if absent; NULL if something else. */
static json_t *child_object(json_t *obj, const char *field)
{
	json_t *c;

	if (absent(obj, field))
		json_object_set_new(obj, field, json_object());
	c = json_object_get(obj, field);
	return json_is_object(c) ? c : NULL;
}

static void default_ports_protocol(json_t *ports)
{
	size_t i;
	json_t *p;

	json_array_foreach(ports, i, p)
		set_str(p, "protocol", "TCP");
}

static void default_service(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec"), *p;
	json_t *type;
	size_t i;

	if (!json_is_object(spec))
		return;
	set_str(spec, "type", "ClusterIP");
	type = json_object_get(spec, "type");
	json_array_foreach(json_object_get(spec, "ports"), i, p) {
		set_str(p, "protocol", "TCP");
		if (json_is_object(p) && absent(p, "targetPort") &&
		    json_is_integer(json_object_get(p, "port")))
			json_object_set_new(p, "targetPort",
					    json_integer(json_integer_value(json_object_get(p, "port"))));
	}
	set_str(spec, "sessionAffinity", "None");
	/* as Kubernetes: no affinity, no affinity config (an apply that drops
	 * sessionAffinity: ClientIP leaves none of the timeout behind) */
	if (str_is(json_object_get(spec, "sessionAffinity"), "None"))
		json_object_del(spec, "sessionAffinityConfig");
	if (str_is(json_object_get(spec, "sessionAffinity"), "ClientIP")) {
		json_t *cfg = child_object(spec, "sessionAffinityConfig");
		json_t *client = cfg ? child_object(cfg, "clientIP") : NULL;

		if (client)
			set_int(client, "timeoutSeconds", AFFINITY_TIMEOUT_DEFAULT);
	}
	if (str_is(type, "NodePort") || str_is(type, "LoadBalancer"))
		set_str(spec, "externalTrafficPolicy", "Cluster");
	set_str(spec, "internalTrafficPolicy", "Cluster");
}

static void default_pod(json_t *obj)
{
	static const char *const lists[] = { "containers", "initContainers" };
	json_t *spec = json_object_get(obj, "spec"), *c;
	size_t i;

	for (int l = 0; l < 2; l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, c)
			if (json_is_object(c))
				default_ports_protocol(json_object_get(c, "ports"));
}

static void default_endpoints(json_t *obj)
{
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(obj, "subsets"), i, s)
		if (json_is_object(s))
			default_ports_protocol(json_object_get(s, "ports"));
}

static void default_networkpolicy(json_t *obj)
{
	static const char *const rules[] = { "ingress", "egress" };
	json_t *spec = json_object_get(obj, "spec"), *types, *r;
	size_t i;

	if (!json_is_object(spec))
		return;
	types = json_object_get(spec, "policyTypes");
	if (!types || json_is_null(types) || (json_is_array(types) && !json_array_size(types))) {
		/* as Kubernetes defaults it: Ingress always, Egress when
		 * there is an egress rule (an empty list isolates nothing) */
		types = json_array();
		json_array_append_new(types, json_string("Ingress"));
		if (json_array_size(json_object_get(spec, "egress")) > 0)
			json_array_append_new(types, json_string("Egress"));
		json_object_set_new(spec, "policyTypes", types);
	}
	for (int k = 0; k < 2; k++)
		json_array_foreach(json_object_get(spec, rules[k]), i, r)
			if (json_is_object(r))
				default_ports_protocol(json_object_get(r, "ports"));
}

static void default_backend(json_t *to)
{
	if (!json_is_object(to))
		return;
	set_str(to, "kind", "Service");
	set_int(to, "weight", ROUTE_WEIGHT_DEFAULT);
}

static void default_route(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec"), *b, *tls;
	size_t i;

	if (!json_is_object(spec))
		return;
	default_backend(json_object_get(spec, "to"));
	json_array_foreach(json_object_get(spec, "alternateBackends"), i, b)
		default_backend(b);
	set_str(spec, "wildcardPolicy", "None");
	tls = json_object_get(spec, "tls");
	if (json_is_object(tls) && json_is_string(json_object_get(tls, "termination")))
		set_str(tls, "insecureEdgeTerminationPolicy", "None");
}

static void default_clusternetwork(json_t *obj)
{
	set_str(obj, "mode", "multitenant");
	set_int(obj, "vxlanPort", VXLAN_PORT_DEFAULT);
	set_int(obj, "mtu", 0);
}

void model_default(json_t *obj)
{
	const struct kind_info *k = kind_by_kind(obj_kind(obj));

	if (!k || !json_is_object(obj))
		return;
	switch (k->id) {
	case KIND_SERVICE:
		default_service(obj);
		break;
	case KIND_POD:
		default_pod(obj);
		break;
	case KIND_ENDPOINTS:
		default_endpoints(obj);
		break;
	case KIND_ENDPOINTSLICE:
		default_ports_protocol(json_object_get(obj, "ports"));
		break;
	case KIND_PODPEERSLICE: {
		const json_t *id;
		size_t i;

		json_array_foreach(json_object_get(obj, "identities"), i, id)
			default_ports_protocol(json_object_get(id, "ports"));
		break;
	}
	case KIND_NETWORKPOLICY:
		default_networkpolicy(obj);
		break;
	case KIND_ROUTE:
		default_route(obj);
		break;
	case KIND_SECRET:
		set_str(obj, "type", "Opaque");
		break;
	case KIND_CLUSTERNETWORK:
		default_clusternetwork(obj);
		break;
	default:
		break;
	}
}
