/*
 * validate_ingress.c — an Ingress (networking.k8s.io/v1): host rules with
 * paths to Service backends, a default backend, and TLS hosts with their
 * Secret.  Hosts are DNS names, "*." wildcards allowed as the whole first
 * label only, never IP addresses.
 */
#include "model/model.h"
#include "model/validate.h"

#include <stdio.h>
#include <string.h>

static void check_host(struct vctx *v, const char *field, const json_t *j, bool required)
{
	const char *host = vval_string(v, field, j, required);
	char q[VQUOTE_MAX];
	uint32_t ip;

	if (!host || (!*host && !required))
		return;
	if (ip4_parse(host, &ip) == 0)
		verror(v, field, "%s must be a DNS name, not an IP address", vquote(host, q));
	else if (!model_dns_host(host, true))
		verror(v, field, "%s is not a valid DNS name", vquote(host, q));
}

static void check_backend(struct vctx *v, const json_t *parent, const char *field,
			  bool required)
{
	const json_t *backend = vget_object(v, parent, field, required), *service, *port;
	size_t mark;

	if (!backend)
		return;
	mark = vpush(v, field);
	if (json_object_get(backend, "resource"))
		verror(v, "resource", "resource backends are not supported (use service)");
	service = vget_object(v, backend, "service", true);
	if (service) {
		vpush(v, "service");
		vget_name(v, service, "name", true, model_dns1123_label, "a valid DNS-1123 label");
		port = vget_object(v, service, "port", true);
		if (port) {
			bool number = json_object_get(port, "number") != NULL;
			bool name = json_object_get(port, "name") != NULL;

			vpush(v, "port");
			if (number && name)
				verror(v, NULL, "number and name are mutually exclusive");
			else if (!number && !name)
				verror(v, NULL, "needs a number or a name");
			vget_port(v, port, "number", false, NULL);
			vget_name(v, port, "name", false, model_iana_svc_name, "a valid port name");
		}
	}
	vpop(v, mark);
}

static void check_paths(struct vctx *v, const json_t *http)
{
	static const char *const types[] = { "Exact", "Prefix", "ImplementationSpecific", NULL };
	const json_t *paths = vget_list(v, http, "paths", true), *p;
	size_t i;

	if (paths && json_array_size(paths) == 0)
		verror(v, "paths", "must not be empty");
	json_array_foreach(paths, i, p) {
		size_t m;

		if (vpush_item(v, "paths", i, p, &m)) {
			const char *type = vget_enum(v, p, "pathType", true, types);
			bool exact_or_prefix = type && strcmp(type, "ImplementationSpecific") != 0;
			const char *path = vget_string(v, p, "path", exact_or_prefix);
			char q[VQUOTE_MAX];

			if (path && *path != '/' && (*path || exact_or_prefix))
				verror(v, "path", "%s must start with '/'", vquote(path, q));
			check_backend(v, p, "backend", true);
		}
		vpop(v, m);
	}
}

void validate_ingress(struct vctx *v, const json_t *obj)
{
	const json_t *spec = vget_object(v, obj, "spec", true), *rules, *r, *tls, *t;
	size_t mark, i, k;

	if (!spec)
		return;
	mark = vpush(v, "spec");
	vget_name(v, spec, "ingressClassName", false, model_dns1123_subdomain,
		  "a valid DNS-1123 subdomain");
	check_backend(v, spec, "defaultBackend", false);
	rules = vget_list(v, spec, "rules", false);
	if (!json_array_size(rules) && !json_object_get(spec, "defaultBackend"))
		verror(v, NULL, "must have rules or a defaultBackend");
	json_array_foreach(rules, i, r) {
		size_t m;

		if (vpush_item(v, "rules", i, r, &m)) {
			const json_t *http = vget_object(v, r, "http", false);

			check_host(v, "host", json_object_get(r, "host"), false);
			if (http) {
				vpush(v, "http");
				check_paths(v, http);
			}
		}
		vpop(v, m);
	}
	tls = vget_list(v, spec, "tls", false);
	json_array_foreach(tls, i, t) {
		size_t m;

		if (vpush_item(v, "tls", i, t, &m)) {
			const json_t *hosts = vget_list(v, t, "hosts", false), *h;

			json_array_foreach(hosts, k, h) {
				char field[32];

				snprintf(field, sizeof(field), "hosts[%zu]", k);
				check_host(v, field, h, true);
			}
			vget_name(v, t, "secretName", false, model_dns1123_subdomain,
				  "a valid DNS-1123 subdomain");
		}
		vpop(v, m);
	}
	vpop(v, mark);
}
