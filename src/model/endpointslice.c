/*
 * endpointslice.c — how EndpointSlices are made of an Endpoints' subsets:
 * the shape of a slice's endpoints and ports, and the slice object, as pure
 * functions (the packing into slices is slice_pack.c's; the controller,
 * src/controller/slices_ctl.c, writes them).
 *
 * Both the EndpointSlice controller (subsets computed from the pods by
 * model_endpoints_subsets, untruncated) and the mirroring controller (a
 * hand-written Endpoints' subsets) start from the same subsets shape, so
 * one function turns either into groups: one group per port list, the key
 * the port list's canonical JSON text, so two subsets with the same ports
 * (possible in a hand-written Endpoints) share a group.
 *
 * Determinism (the controller writes only what changed, comparing what it
 * would write with what is stored): an endpoint carries only the fields it
 * is given, in one shape; a slice lists its endpoints in address order
 * (numeric), so the same endpoints give the same bytes.
 *
 * Ownership: arguments are borrowed; results are new references (or
 * malloc'd text) the caller frees.
 */
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

const char *model_endpointslice_endpoint_key(const json_t *endpoint)
{
	return json_string_value(json_array_get(json_object_get(endpoint, "addresses"), 0));
}

json_t *model_endpointslice_ports(const json_t *ports)
{
	json_t *out = json_array(), *p;
	size_t i;

	json_array_foreach(ports, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *proto = json_string_value(json_object_get(p, "protocol"));
		json_t *app = json_object_get(p, "appProtocol");
		json_t *q = json_object();

		if (!q)
			break;
		if (name && *name)
			json_object_set_new(q, "name", json_string(name));
		json_object_set(q, "port", json_object_get(p, "port"));
		json_object_set_new(q, "protocol", json_string(proto && *proto ? proto : "TCP"));
		if (json_is_string(app))
			json_object_set(q, "appProtocol", app);
		json_array_append_new(out, q);
	}
	return out;
}

char *model_endpointslice_group(const json_t *ports)
{
	return json_dumps(ports, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void copy(json_t *to, const json_t *from, const char *field)
{
	json_t *v = json_object_get(from, field);

	if (json_is_string(v) && json_string_length(v))
		json_object_set(to, field, v);
}

/* One address of an Endpoints as a slice endpoint. */
static json_t *endpoint_of(const json_t *address, bool ready)
{
	const json_t *ref = json_object_get(address, "targetRef");
	json_t *e = json_pack("{s:[O], s:{s:b, s:b, s:b}}", "addresses", json_object_get(address, "ip"),
			      "conditions", "ready", ready, "serving", ready, "terminating", 0);

	if (!e)
		return NULL;
	copy(e, address, "nodeName");
	copy(e, address, "hostname");
	if (json_is_object(ref)) {
		json_t *r = json_object();

		copy(r, ref, "kind");
		copy(r, ref, "namespace");
		copy(r, ref, "name");
		copy(r, ref, "uid");
		json_object_set_new(e, "targetRef", r);
	}
	return e;
}

json_t *model_endpointslice_groups(const json_t *subsets)
{
	static const char *const lists[] = { "addresses", "notReadyAddresses" };
	json_t *groups = json_object(), *ss, *a;
	size_t i, j;

	if (!groups)
		return NULL;
	json_array_foreach(subsets, i, ss) {
		json_t *ports = model_endpointslice_ports(json_object_get(ss, "ports"));
		char *key = ports ? model_endpointslice_group(ports) : NULL;
		json_t *g, *eps;

		if (!key) {
			json_decref(ports);
			goto fail;
		}
		g = json_object_get(groups, key);
		if (!g) {
			g = json_pack("{s:O, s:{}}", "ports", ports, "endpoints");
			if (!g || json_object_set_new(groups, key, g) < 0) {
				free(key);
				json_decref(ports);
				goto fail;
			}
		}
		free(key);
		json_decref(ports);
		eps = json_object_get(g, "endpoints");
		for (int l = 0; l < 2; l++) {
			json_array_foreach(json_object_get(ss, lists[l]), j, a) {
				const char *ip = json_string_value(json_object_get(a, "ip"));

				if (!ip || json_object_get(eps, ip))
					continue;
				if (json_object_set_new(eps, ip, endpoint_of(a, l == 0)) < 0)
					goto fail;
			}
		}
	}
	return groups;
fail:
	json_decref(groups);
	return NULL;
}

int model_endpointslice_key_cmp(const char *x, const char *y)
{
	uint32_t ix, iy;
	bool px = ip4_parse(x, &ix) == 0, py = ip4_parse(y, &iy) == 0;

	if (px && py && ix != iy)
		return ix < iy ? -1 : 1;
	if (px != py)
		return px ? -1 : 1;
	return strcmp(x, y);
}

static int cmp_key(const void *a, const void *b)
{
	return model_endpointslice_key_cmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *model_endpointslice_object(const char *ns, const char *name, const char *service,
				   const char *manager, const json_t *ports, const json_t *endpoints)
{
	size_t n = json_object_size(endpoints), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	json_t *obj = NULL, *list, *v;
	const char *key;

	if (!keys)
		return NULL;
	json_object_foreach((json_t *)endpoints, key, v)
		keys[i++] = key;
	qsort(keys, n, sizeof(*keys), cmp_key);
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s, s:O, s:[]}", "apiVersion",
			"discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "name", name, "namespace", ns,
			"labels", ENDPOINTSLICE_SERVICE_LABEL, service, ENDPOINTSLICE_MANAGED_LABEL, manager,
			"addressType", "IPv4", "ports", ports, "endpoints");
	list = json_object_get(obj, "endpoints");
	for (i = 0; list && i < n; i++)
		json_array_append(list, json_object_get(endpoints, keys[i]));
	free(keys);
	return obj;
}
