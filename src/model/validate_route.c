/*
 * validate_route.c — an OpenShift Route: host and path, the Service it
 * sends to (and up to three alternate backends with weights), the target
 * port, TLS termination and the wildcard policy.
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

#define ROUTE_MAX_ALTERNATES 3
#define ROUTE_MAX_WEIGHT 256

static bool is_service(const char *s) { return strcmp(s, "Service") == 0; }
static bool dns_name(const char *s) { return model_dns_host(s, false); }

static void check_target(struct vctx *v, const json_t *to)
{
	vget_name(v, to, "kind", false, is_service, "supported (only Service)");
	vget_name(v, to, "name", true, model_dns1123_label, "a valid DNS-1123 label");
	vget_int_range(v, to, "weight", false, 0, ROUTE_MAX_WEIGHT, "a valid weight", NULL);
}

/* The termination, if valid. */
static const char *check_tls(struct vctx *v, const json_t *spec)
{
	static const char *const terminations[] = { "edge", "passthrough", "reencrypt", NULL };
	static const char *const insecure[] = { "None", "Allow", "Redirect", NULL };
	const json_t *tls = vget_object(v, spec, "tls", false);
	const char *term, *policy;
	size_t mark;

	if (!tls)
		return NULL;
	mark = vpush(v, "tls");
	term = vget_enum(v, tls, "termination", true, terminations);
	policy = vget_enum(v, tls, "insecureEdgeTerminationPolicy", false, insecure);
	vget_string(v, tls, "certificate", false);
	vget_string(v, tls, "key", false);
	vget_string(v, tls, "caCertificate", false);
	vget_string(v, tls, "destinationCACertificate", false);
	if (term && !strcmp(term, "passthrough")) {
		static const char *const certs[] = { "certificate", "key", "caCertificate", NULL };

		if (policy && !strcmp(policy, "Allow"))
			verror(v, "insecureEdgeTerminationPolicy", "Allow is not valid with "
			       "passthrough termination");
		for (int i = 0; certs[i]; i++) {
			const char *s = json_string_value(json_object_get(tls, certs[i]));

			if (s && *s)
				verror(v, certs[i], "must be empty with passthrough termination "
				       "(the backend terminates TLS)");
		}
	}
	if (term && strcmp(term, "reencrypt") != 0) {
		const char *s = json_string_value(json_object_get(tls, "destinationCACertificate"));

		if (s && *s)
			verror(v, "destinationCACertificate", "only valid with reencrypt "
			       "termination");
	}
	vpop(v, mark);
	return term;
}

void validate_route(struct vctx *v, const json_t *obj)
{
	static const char *const wildcards[] = { "None", "Subdomain", NULL };
	const json_t *spec = vget_object(v, obj, "spec", true), *to, *alts, *a, *port;
	const char *path, *host, *wildcard, *term;
	char q[VQUOTE_MAX];
	size_t mark, i;

	if (!spec)
		return;
	mark = vpush(v, "spec");
	vget_name(v, spec, "host", false, dns_name, "a valid DNS name");
	path = vget_string(v, spec, "path", false);
	if (path && *path && *path != '/')
		verror(v, "path", "%s must start with '/'", vquote(path, q));
	to = vget_object(v, spec, "to", true);
	if (to) {
		size_t m = vpush(v, "to");

		check_target(v, to);
		vpop(v, m);
	}
	alts = vget_list(v, spec, "alternateBackends", false);
	if (alts && json_array_size(alts) > ROUTE_MAX_ALTERNATES) {
		verror(v, "alternateBackends", "too many backends (%zu, at most %d)",
		       json_array_size(alts), ROUTE_MAX_ALTERNATES);
		alts = NULL;
	}
	json_array_foreach(alts, i, a) {
		size_t m;

		if (vpush_item(v, "alternateBackends", i, a, &m))
			check_target(v, a);
		vpop(v, m);
	}
	port = vget_object(v, spec, "port", false);
	if (port) {
		size_t m = vpush(v, "port");

		vget_port_or_name(v, port, "targetPort", true, 1, model_dns1123_label);
		vpop(v, m);
	}
	term = check_tls(v, spec);
	if (term && !strcmp(term, "passthrough") && path && *path)
		verror(v, "path", "a passthrough route cannot have a path");
	wildcard = vget_enum(v, spec, "wildcardPolicy", false, wildcards);
	host = json_string_value(json_object_get(spec, "host"));
	if (wildcard && !strcmp(wildcard, "Subdomain") && !(host && *host))
		verror(v, "host", "required with wildcardPolicy Subdomain");
	vpop(v, mark);
}
