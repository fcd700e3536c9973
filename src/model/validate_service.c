/*
 * validate_service.c — a Service: its type, cluster IP (or None for a
 * headless one), ports (name, protocol, port, targetPort, nodePort),
 * selector, session affinity and traffic policies.
 *
 * Relations checked: names are unique and required with several ports;
 * (port, protocol) pairs are unique; nodePort only with NodePort or
 * LoadBalancer; headless services are ClusterIP; externalTrafficPolicy
 * Local only where there are node ports.
 */
#include "model/model.h"
#include "model/validate.h"

#include <stdio.h>
#include <string.h>

#define NODEPORT_MIN 30000
#define NODEPORT_MAX 32767
#define AFFINITY_TIMEOUT_MAX 86400

static void check_port(struct vctx *v, const json_t *p, size_t nports, bool node_ports,
		       json_t *names, json_t *pairs)
{
	const char *name = NULL, *proto;
	char q[VQUOTE_MAX], pair[48];
	json_int_t port, node_port;

	if (nports > 1 && (!json_is_string(json_object_get(p, "name")) ||
			   !*json_string_value(json_object_get(p, "name"))))
		verror(v, "name", "required when a Service has more than one port");
	else
		name = vget_name(v, p, "name", false, model_dns1123_label,
				 "a valid DNS-1123 label");
	if (name && !vset_add(names, name))
		verror(v, "name", "duplicate port name %s", vquote(name, q));
	proto = vget_protocol(v, p, "protocol");
	/* absent or null: TCP once defaulted, so a duplicate of an 80/TCP too */
	if (!proto && (!json_object_get(p, "protocol") || json_is_null(json_object_get(p, "protocol"))))
		proto = "TCP";
	if (vget_port(v, p, "port", true, &port) && proto) {
		snprintf(pair, sizeof(pair), "%" JSON_INTEGER_FORMAT "/%s", port, proto);
		if (!vset_add(pairs, pair))
			verror(v, "port", "duplicate port %s", pair);
	}
	vget_port_or_name(v, p, "targetPort", false, 1, NULL);
	if (vget_int(v, p, "nodePort", false, &node_port) && node_port != 0) {
		if (node_port < NODEPORT_MIN || node_port > NODEPORT_MAX)
			verror(v, "nodePort", "%" JSON_INTEGER_FORMAT " is outside the NodePort "
			       "range %d-%d", node_port, NODEPORT_MIN, NODEPORT_MAX);
		if (!node_ports)
			verror(v, "nodePort", "only allowed for type NodePort or LoadBalancer");
	}
}

void validate_service(struct vctx *v, const json_t *obj)
{
	static const char *const types[] = { "ClusterIP", "NodePort", "LoadBalancer", NULL };
	static const char *const affinities[] = { "None", "ClientIP", NULL };
	static const char *const policies[] = { "Cluster", "Local", NULL };
	const json_t *spec = vget_object(v, obj, "spec", true), *ports, *p, *cfg, *ips;
	const char *type, *cluster_ip, *policy;
	json_t *names, *pairs;
	bool headless = false, node_ports;
	char q[VQUOTE_MAX];
	size_t mark, i;

	if (!spec)
		return;
	mark = vpush(v, "spec");
	type = vget_enum(v, spec, "type", false, types);
	if (!type && !json_object_get(spec, "type"))
		type = "ClusterIP";
	node_ports = type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer"));

	cluster_ip = vget_string(v, spec, "clusterIP", false);
	if (cluster_ip && !strcmp(cluster_ip, "None")) {
		headless = true;
		if (node_ports)
			verror(v, "clusterIP", "a headless Service (clusterIP None) cannot be of "
			       "type %s", type);
	} else if (cluster_ip && *cluster_ip) {
		uint32_t ip;

		if (ip4_parse(cluster_ip, &ip) < 0)
			verror(v, "clusterIP", "%s is not a valid IPv4 address, '' or 'None'",
			       vquote(cluster_ip, q));
	}

	ports = vget_list(v, spec, "ports", !headless);
	if (ports && json_array_size(ports) == 0 && !headless)
		verror(v, "ports", "must not be empty");
	names = json_object();
	pairs = json_object();
	json_array_foreach(ports, i, p) {
		size_t m;

		if (vpush_item(v, "ports", i, p, &m))
			check_port(v, p, json_array_size(ports), node_ports, names, pairs);
		vpop(v, m);
	}
	json_decref(names);
	json_decref(pairs);

	vcheck_label_map(v, spec, "selector");
	vget_enum(v, spec, "sessionAffinity", false, affinities);
	cfg = vget_object(v, spec, "sessionAffinityConfig", false);
	if (cfg) {
		size_t m = vpush(v, "sessionAffinityConfig");
		const json_t *client = vget_object(v, cfg, "clientIP", false);

		if (client) {
			vpush(v, "clientIP");
			vget_int_range(v, client, "timeoutSeconds", false, 1, AFFINITY_TIMEOUT_MAX,
				       "a valid timeout", NULL);
		}
		vpop(v, m);
	}
	policy = vget_enum(v, spec, "externalTrafficPolicy", false, policies);
	if (policy && !strcmp(policy, "Local") && !node_ports)
		verror(v, "externalTrafficPolicy", "Local is only valid for type NodePort or "
		       "LoadBalancer");
	vget_enum(v, spec, "internalTrafficPolicy", false, policies);
	ips = vget_list(v, spec, "externalIPs", false);
	json_array_foreach(ips, i, p) {
		uint32_t ip;

		if (!json_is_string(p) || ip4_parse(json_string_value(p), &ip) < 0) {
			size_t m = vpush(v, "externalIPs");

			vpush_index(v, i);
			verror(v, NULL, "%s is not a valid IPv4 address",
			       json_is_string(p) ? vquote(json_string_value(p), q) : "(not a string)");
			vpop(v, m);
		}
	}
	vget_ip4(v, spec, "loadBalancerIP", false, NULL);
	vpop(v, mark);
}
