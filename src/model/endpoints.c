/*
 * endpoints.c — how a Service's Endpoints follow from its pods: the
 * computation of the Kubernetes endpoints controller, as a pure function
 * of a Service and candidate Pods (the controller's index decides which
 * pods are candidates; src/controller/endpoints_ctl.c).
 *
 * For each candidate pod:
 *   1. it must be in the Service's namespace, its labels must match the
 *      Service's selector (every pair present) and it must have
 *      status.podIP; pods in a terminal phase (Succeeded, Failed) are left
 *      out, as Kubernetes does;
 *   2. ready (→ addresses) or not ready (→ notReadyAddresses), see
 *      model_pod_endpoint_state; spec.publishNotReadyAddresses puts every
 *      address in addresses;
 *   3. each Service port's targetPort is resolved for the pod (a number as
 *      is, a name through the pod's container ports with the same
 *      protocol); a port the pod cannot resolve is left out for that pod,
 *      and a pod that resolves none of the Service's ports is left out
 *      (a Service without ports — headless — takes every pod, portless).
 * Pods are grouped into subsets by their resolved port set: one subset per
 * distinct set, so an address appears in one subset only.
 *
 * Determinism (the controller writes only when the result changes, so the
 * same input must give the same bytes): addresses are sorted by IP
 * (numerically), then pod name; subsets by their port set (numerically,
 * port by port); ports in the Service's port order.  At most max_addresses addresses are kept, the
 * lowest IPs (the controller marks such an Endpoints as truncated).
 *
 * Ownership: arguments are borrowed; the result is a new reference.
 */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool model_selector_matches(const json_t *selector, const json_t *labels)
{
	const char *key;
	json_t *want;

	if (!json_is_object(selector) || json_object_size(selector) == 0)
		return false;
	json_object_foreach((json_t *)selector, key, want) {
		const json_t *have = json_is_object(labels) ? json_object_get(labels, key) : NULL;

		if (!json_is_string(want) || !json_is_string(have) ||
		    strcmp(json_string_value(want), json_string_value(have)) != 0)
			return false;
	}
	return true;
}

enum pod_endpoint_state model_pod_endpoint_state(const json_t *pod)
{
	const char *ip = obj_str(pod, "status.podIP");
	const char *phase = obj_str(pod, "status.phase");
	const json_t *conds = json_object_get(json_object_get(pod, "status"), "conditions"), *c;
	const json_t *deleted = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
	uint32_t addr;
	size_t i;

	if (!ip || ip4_parse(ip, &addr) < 0)
		return POD_ENDPOINT_NONE;
	if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
		return POD_ENDPOINT_NONE;
	if (phase && strcmp(phase, "Running") != 0)
		return POD_ENDPOINT_NOT_READY;
	if (deleted && !json_is_null(deleted))
		return POD_ENDPOINT_NOT_READY;
	json_array_foreach(conds, i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *status = json_string_value(json_object_get(c, "status"));

		if (type && status && !strcmp(type, "Ready") && !strcmp(status, "False"))
			return POD_ENDPOINT_NOT_READY;
	}
	return POD_ENDPOINT_READY;
}

static const char *protocol_of(const json_t *port)
{
	const char *p = json_string_value(json_object_get(port, "protocol"));

	return p && *p ? p : "TCP";
}

json_int_t model_pod_target_port(const json_t *pod, const json_t *svc_port)
{
	const json_t *target = json_object_get(svc_port, "targetPort");
	const json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers"), *c, *p;
	const char *proto = protocol_of(svc_port), *name;
	size_t i, k;

	if (!target || json_is_null(target))
		target = json_object_get(svc_port, "port");
	if (json_is_integer(target)) {
		json_int_t n = json_integer_value(target);
		return n >= 1 && n <= 65535 ? n : 0;
	}
	name = json_string_value(target);
	if (!name || !*name)
		return 0;
	json_array_foreach(containers, i, c) {
		json_array_foreach(json_object_get(c, "ports"), k, p) {
			const char *pn = json_string_value(json_object_get(p, "name"));
			json_int_t n = json_integer_value(json_object_get(p, "containerPort"));

			if (pn && !strcmp(pn, name) && !strcmp(protocol_of(p), proto) && n >= 1 && n <= 65535)
				return n;
		}
	}
	return 0;
}

/* One pod's place in the result. */
struct entry {
	uint32_t ip;
	const json_t *pod;
	bool ready;
	char *portset;		/* "i:port,..." over the Service's ports; "" when it has none */
};

static int cmp_ip(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return strcmp(obj_name(x->pod) ?: "", obj_name(y->pod) ?: "");
}

/* Port sets in numeric order: element by element, (service port index,
 * port); a set that is a prefix of another comes first. */
static int cmp_portset(const char *a, const char *b)
{
	while (*a && *b) {
		char *ea, *eb;
		unsigned long ia = strtoul(a, &ea, 10), ib = strtoul(b, &eb, 10);
		unsigned long pa = strtoul(ea + 1, &ea, 10), pb = strtoul(eb + 1, &eb, 10);

		if (ia != ib)
			return ia < ib ? -1 : 1;
		if (pa != pb)
			return pa < pb ? -1 : 1;
		a = *ea ? ea + 1 : ea;
		b = *eb ? eb + 1 : eb;
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int cmp_portset_ip(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = cmp_portset(x->portset, y->portset);

	return c ? c : cmp_ip(a, b);
}

/* The resolved ports of pod as "index:port," pairs (malloc'd); NULL when
 * it resolves none of the Service's (non-empty) ports, or on ENOMEM. */
static char *portset_of(const json_t *pod, const json_t *ports)
{
	size_t cap = json_array_size(ports) * 12 + 1, len = 0, i;	/* "4095:65535," */
	char *buf = malloc(cap);
	const json_t *p;

	if (!buf)
		return NULL;
	buf[0] = 0;
	json_array_foreach(ports, i, p) {
		json_int_t n = model_pod_target_port(pod, p);
		int w;

		if (!n)
			continue;
		w = snprintf(buf + len, cap - len, "%zu:%d,", i, (int)n);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
	if (!len && json_array_size(ports)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static json_t *address_of(const struct entry *e)
{
	char ip[IP4_STRLEN];
	const char *node = obj_str(e->pod, "spec.nodeName");
	json_t *a;

	ip4_format(e->ip, ip);
	a = json_pack("{s:s}", "ip", ip);
	if (a && node && *node)
		json_object_set_new(a, "nodeName", json_string(node));
	if (a)
		json_object_set_new(a, "targetRef",
				    json_pack("{s:s, s:s, s:s}", "kind", "Pod", "namespace",
					      obj_namespace(e->pod), "name", obj_name(e->pod) ?: ""));
	return a;
}

/* The subset's ports from a portset string "i:port,...". */
static json_t *ports_of(const char *portset, const json_t *svc_ports)
{
	json_t *out = json_array();
	const char *s = portset;

	while (out && *s) {
		char *end;
		unsigned long idx = strtoul(s, &end, 10);
		long port = strtol(end + 1, &end, 10);
		const json_t *sp = json_array_get(svc_ports, idx);
		const char *name = json_string_value(json_object_get(sp, "name"));
		json_t *p = json_object();

		if (name && *name)
			json_object_set_new(p, "name", json_string(name));
		json_object_set_new(p, "port", json_integer(port));
		json_object_set_new(p, "protocol", json_string(protocol_of(sp)));
		json_array_append_new(out, p);
		s = *end == ',' ? end + 1 : end;
	}
	return out;
}

json_t *model_endpoints_subsets(const json_t *svc, const json_t *const *pods, size_t npods,
				size_t max_addresses, bool *truncated)
{
	const json_t *spec = json_object_get(svc, "spec");
	const json_t *selector = json_object_get(spec, "selector");
	const json_t *ports = json_object_get(spec, "ports");
	bool publish = json_is_true(json_object_get(spec, "publishNotReadyAddresses"));
	const char *ns = obj_namespace(svc);
	struct entry *v = NULL;
	json_t *subsets = json_array();
	size_t n = 0, i;

	if (truncated)
		*truncated = false;
	if (!subsets)
		return NULL;
	if (npods) {
		v = calloc(npods, sizeof(*v));
		if (!v)
			goto fail;
	}
	for (i = 0; i < npods; i++) {
		const json_t *pod = pods[i];
		enum pod_endpoint_state state;

		if (strcmp(obj_namespace(pod), ns) != 0 ||
		    !model_selector_matches(selector, json_object_get(json_object_get(pod, "metadata"), "labels")))
			continue;
		state = model_pod_endpoint_state(pod);
		if (state == POD_ENDPOINT_NONE)
			continue;
		if (ip4_parse(obj_str(pod, "status.podIP"), &v[n].ip) < 0)
			continue;
		v[n].portset = portset_of(pod, ports);
		if (!v[n].portset)
			continue;	/* resolves none of the ports (or ENOMEM: left out) */
		v[n].pod = pod;
		v[n].ready = state == POD_ENDPOINT_READY || publish;
		n++;
	}
	if (n > max_addresses) {	/* (n > 0 here: v is not NULL) */
		/* keep the lowest IPs, deterministically */
		qsort(v, n, sizeof(*v), cmp_ip);
		for (i = max_addresses; i < n; i++)
			free(v[i].portset);
		n = max_addresses;
		if (truncated)
			*truncated = true;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_portset_ip);
	for (i = 0; i < n;) {
		size_t j = i;
		json_t *ready = json_array(), *not_ready = json_array(), *subset = json_object();

		for (; j < n && !strcmp(v[j].portset, v[i].portset); j++)
			json_array_append_new(v[j].ready ? ready : not_ready, address_of(&v[j]));
		if (json_array_size(ready))
			json_object_set(subset, "addresses", ready);
		if (json_array_size(not_ready))
			json_object_set(subset, "notReadyAddresses", not_ready);
		if (v[i].portset[0])
			json_object_set_new(subset, "ports", ports_of(v[i].portset, ports));
		json_decref(ready);
		json_decref(not_ready);
		if (json_array_append_new(subsets, subset) < 0)
			goto fail;
		i = j;
	}
	for (i = 0; i < n; i++)
		free(v[i].portset);
	free(v);
	return subsets;
fail:
	for (i = 0; v && i < n; i++)
		free(v[i].portset);
	free(v);
	json_decref(subsets);
	return NULL;
}
