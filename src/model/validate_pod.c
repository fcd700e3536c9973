/*
 * validate_pod.c — a Pod as weft's CNI and services see it: the node it
 * runs on, its containers' ports (named ports are what Services and
 * NetworkPolicies refer to, so names are unique across the pod) and its
 * IPs.  A pod has one IPv4 address: status.podIPs, when given, lists
 * status.podIP and nothing else (Kubernetes: podIPs[0] is podIP, one
 * address per family).  Whether the address is the pod's to hold (its
 * node's subnet, no other pod's) is the controller's admission check,
 * which needs the store.
 */
#include "model/model.h"
#include "model/validate.h"

static void check_port(struct vctx *v, const json_t *port, json_t *names)
{
	const char *name;
	char q[VQUOTE_MAX];

	vget_port(v, port, "containerPort", true, NULL);
	vget_protocol(v, port, "protocol");
	vget_int_range(v, port, "hostPort", false, 0, 65535, "a valid port", NULL);
	name = vget_name(v, port, "name", false, model_iana_svc_name,
			 "a valid port name (at most 15 of a-z, 0-9 and '-', with a letter)");
	if (name && !vset_add(names, name))
		verror(v, "name", "duplicate port name %s", vquote(name, q));
}

static void check_containers(struct vctx *v, const json_t *spec, const char *field,
			     json_t *names, json_t *port_names)
{
	const json_t *list = vget_list(v, spec, field, false), *c, *ports, *p;
	size_t i, k;

	json_array_foreach(list, i, c) {
		size_t mark;

		if (vpush_item(v, field, i, c, &mark)) {
			const char *name = vget_name(v, c, "name", true, model_dns1123_label,
						     "a valid DNS-1123 label");
			char q[VQUOTE_MAX];

			if (name && !vset_add(names, name))
				verror(v, "name", "duplicate container name %s", vquote(name, q));
			vget_string(v, c, "image", false);
			ports = vget_list(v, c, "ports", false);
			json_array_foreach(ports, k, p) {
				size_t m;

				if (vpush_item(v, "ports", k, p, &m))
					check_port(v, p, port_names);
				vpop(v, m);
			}
		}
		vpop(v, mark);
	}
}

/* One status.podIPs[].ip (each, valid) against status.podIP. */
static void check_pod_ips_entry(struct vctx *v, const json_t *status, bool has_ip, uint32_t pod_ip,
				uint32_t each)
{
	const char *given = json_string_value(json_object_get(status, "podIP"));
	char q[VQUOTE_MAX], ip_s[IP4_STRLEN];

	ip4_format(each, ip_s);
	if (!has_ip && (!given || !*given))
		verror(v, "ip", "%s is given without status.podIP (podIPs lists the pod's podIP)",
		       vquote(ip_s, q));
	else if (has_ip && each != pod_ip)
		verror(v, "ip", "%s differs from status.podIP %s (a pod has one IPv4 address)",
		       vquote(ip_s, q), given);
}

void validate_pod(struct vctx *v, const json_t *obj)
{
	const json_t *spec = vget_object(v, obj, "spec", false);
	const json_t *status = vget_object(v, obj, "status", false), *ips, *ip;
	json_t *names = json_object(), *port_names = json_object();
	size_t mark, i;

	if (spec) {
		mark = vpush(v, "spec");
		vget_name(v, spec, "nodeName", false, model_dns1123_subdomain,
			  "a valid DNS-1123 subdomain");
		check_containers(v, spec, "containers", names, port_names);
		check_containers(v, spec, "initContainers", names, port_names);
		vpop(v, mark);
	}
	if (status) {
		uint32_t pod_ip = 0, each;
		bool has_ip;

		mark = vpush(v, "status");
		has_ip = vget_ip4(v, status, "podIP", false, &pod_ip);
		ips = vget_list(v, status, "podIPs", false);
		json_array_foreach(ips, i, ip) {
			size_t m;

			if (vpush_item(v, "podIPs", i, ip, &m) && vget_ip4(v, ip, "ip", true, &each))
				check_pod_ips_entry(v, status, has_ip, pod_ip, each);
			vpop(v, m);
		}
		vpop(v, mark);
	}
	json_decref(names);
	json_decref(port_names);
}
