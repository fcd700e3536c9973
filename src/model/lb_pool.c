/*
 * lb_pool.c — the members of a pool: which port of a Service a backend
 * means, and the addresses behind it.
 *
 *   Ingress backend  service.port.number N   the Service port N
 *                    service.port.name X     the Service port named X
 *   Route            port.targetPort N       the Service port whose
 *                                            targetPort is N, or whose
 *                                            named targetPort is N on the
 *                                            pods (the Endpoints port of
 *                                            that name), or whose port is N
 *                    port.targetPort X       the Service port named X, or
 *                                            whose targetPort is X
 *                    no port                 the Service's only port; a
 *                                            Service of several ports is
 *                                            an error (the Route must say)
 *
 * Members, ClusterIP mode: the ready addresses of the Service's Endpoints,
 * at the port of the Endpoints port named like the Service port (the only
 * port of a subset when the Service port has no name).  NodePort mode: the
 * InternalIP of every Node matching the configured selector, at the
 * Service port's nodePort.  Members are sorted and unique, so the same
 * cluster always gives the same pool.
 *
 * A Service that does not exist (yet) gives a pool without members, as
 * AKO builds it: the host is served (503) and fills in when it appears.
 */
#include "model/lb_priv.h"
#include "model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool port_name_is(const json_t *p, const char *name)
{
	const char *n = obj_str(p, "name");

	return n && name && !strcmp(n, name);
}

/* The name of the Endpoints port numbered n, or NULL. */
static const char *endpoints_port_name(const json_t *ep, json_int_t n)
{
	const json_t *subset, *p;
	size_t i, j;

	json_array_foreach(json_object_get(ep, "subsets"), i, subset)
		json_array_foreach(json_object_get(subset, "ports"), j, p)
			if (obj_int(p, "port", 0) == n && obj_str(p, "name"))
				return obj_str(p, "name");
	return NULL;
}

/* The Service port a Route's targetPort means (a number may be a named
 * targetPort's number on the pods: the Endpoints say which). */
static const json_t *route_port(const json_t *ports, const json_t *target, const json_t *ep)
{
	const json_t *p;
	size_t i;

	if (json_is_integer(target)) {
		json_int_t n = json_integer_value(target);
		const char *name = endpoints_port_name(ep, n);

		json_array_foreach(ports, i, p)
			if (obj_int(p, "targetPort", obj_int(p, "port", 0)) == n)
				return p;
		json_array_foreach(ports, i, p)
			if (name && port_name_is(p, name))
				return p;
		json_array_foreach(ports, i, p)
			if (obj_int(p, "port", 0) == n)
				return p;
		return NULL;
	}
	json_array_foreach(ports, i, p)
		if (port_name_is(p, json_string_value(target)))
			return p;
	json_array_foreach(ports, i, p) {
		const char *tp = obj_str(p, "targetPort");

		if (tp && json_string_value(target) && !strcmp(tp, json_string_value(target)))
			return p;
	}
	return NULL;
}

static const json_t *ingress_port(const json_t *ports, const json_t *port)
{
	const char *name = obj_str(port, "name");
	json_int_t number = obj_int(port, "number", 0);
	const json_t *p;
	size_t i;

	json_array_foreach(ports, i, p)
		if (name ? port_name_is(p, name) : obj_int(p, "port", 0) == number)
			return p;
	return NULL;
}

static int server_cmp(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	int c = strcmp(obj_str(x, "ip"), obj_str(y, "ip"));

	return c ? c : (int)(obj_int(x, "port", 0) - obj_int(y, "port", 0));
}

/* Sorts and de-duplicates a new array of {ip, port}. */
static json_t *sorted(json_t *servers)
{
	size_t n = json_array_size(servers), k = 0;
	json_t **v = n ? calloc(n, sizeof(*v)) : NULL, *out = json_array();

	if (n && !v) {
		json_decref(out);
		json_decref(servers);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(servers, i);
	if (n > 1)
		qsort(v, n, sizeof(*v), server_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || server_cmp(&v[i], &v[k - 1]) != 0)
			v[k++] = v[i];
	for (size_t i = 0; i < k && out; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(servers);
	return out;
}

static void add_server(json_t *servers, const char *ip, json_int_t port)
{
	if (ip && port > 0 && port <= 65535)
		json_array_append_new(servers, json_pack("{s:s, s:I}", "ip", ip, "port", port));
}

static void endpoint_servers(const json_t *ep, const json_t *svc_port, json_t *servers)
{
	const char *want = obj_str(svc_port, "name");
	const json_t *subset, *p, *a;
	size_t i, j, k;

	json_array_foreach(json_object_get(ep, "subsets"), i, subset) {
		const json_t *ports = json_object_get(subset, "ports");
		json_int_t port = 0;

		json_array_foreach(ports, j, p)
			if ((want && *want) ? port_name_is(p, want) : json_array_size(ports) == 1)
				port = obj_int(p, "port", 0);
		json_array_foreach(json_object_get(subset, "addresses"), k, a)
			add_server(servers, obj_str(a, "ip"), port);
	}
}

static void node_servers(const struct lb_config *cfg, const json_t *nodes, const json_t *svc_port,
			 json_t *servers)
{
	json_int_t port = obj_int(svc_port, "nodePort", 0);
	const char *key;
	const json_t *node, *ad;
	size_t i;

	json_object_foreach((json_t *)nodes, key, node) {
		if (cfg->node_selector && json_object_size(cfg->node_selector) &&
		    !model_selector_matches(cfg->node_selector, obj_at(node, "metadata.labels")))
			continue;
		json_array_foreach(obj_at(node, "status.addresses"), i, ad)
			if (!strcmp(obj_str(ad, "type") ? obj_str(ad, "type") : "", "InternalIP"))
				add_server(servers, obj_str(ad, "address"), port);
	}
}

int lb_pool_members(const struct lb_config *cfg, const struct lb_inputs *in, const char *ns,
		    const char *service, const json_t *port, bool route, struct lb_members *m,
		    char *err, size_t errlen)
{
	char key[512];
	const json_t *svc, *ports, *p;

	m->servers = json_array();
	m->service_port = route ? 0 : obj_int(port, "number", 0);
	if (!m->servers)
		return -ENOMEM;
	snprintf(key, sizeof(key), "%s/%s", ns, service);
	svc = json_object_get(in->services, key);
	if (!svc)
		return 0;
	ports = obj_at(svc, "spec.ports");
	if (route) {
		const json_t *target = json_object_get(port, "targetPort");

		if (!target && json_array_size(ports) != 1) {
			snprintf(err, errlen, "service %s has %zu ports: spec.port.targetPort must name one",
				 key, json_array_size(ports));
			return -EINVAL;
		}
		p = target ? route_port(ports, target, json_object_get(in->endpoints, key))
			   : json_array_get(ports, 0);
	} else {
		p = ingress_port(ports, port);
	}
	if (!p) {
		snprintf(err, errlen, "service %s has no such port", key);
		return -EINVAL;
	}
	m->service_port = obj_int(p, "port", 0);
	if (cfg->nodeport)
		node_servers(cfg, in->nodes, p, m->servers);
	else
		endpoint_servers(json_object_get(in->endpoints, key), p, m->servers);
	m->servers = sorted(m->servers);
	return m->servers ? 0 : -ENOMEM;
}
