/*
 * validate_endpoints.c — Endpoints: the ready and not-ready addresses of a
 * Service's backends, per subset, and the ports they serve.
 */
#include "model/model.h"
#include "model/validate.h"

static void check_addresses(struct vctx *v, const json_t *subset, const char *field)
{
	const json_t *list = vget_list(v, subset, field, false), *a;
	size_t i;

	json_array_foreach(list, i, a) {
		size_t m;

		if (vpush_item(v, field, i, a, &m)) {
			vget_ip4(v, a, "ip", true, NULL);
			vget_name(v, a, "hostname", false, model_dns1123_label,
				  "a valid DNS-1123 label");
			vget_name(v, a, "nodeName", false, model_dns1123_subdomain,
				  "a valid DNS-1123 subdomain");
			vget_object(v, a, "targetRef", false);
		}
		vpop(v, m);
	}
}

void validate_endpoints(struct vctx *v, const json_t *obj)
{
	const json_t *subsets = vget_list(v, obj, "subsets", false), *s, *ports, *p;
	size_t i, k;

	json_array_foreach(subsets, i, s) {
		size_t mark;

		if (vpush_item(v, "subsets", i, s, &mark)) {
			check_addresses(v, s, "addresses");
			check_addresses(v, s, "notReadyAddresses");
			ports = vget_list(v, s, "ports", false);
			json_array_foreach(ports, k, p) {
				size_t m;

				if (vpush_item(v, "ports", k, p, &m)) {
					vget_name(v, p, "name", false, model_dns1123_label,
						  "a valid DNS-1123 label");
					vget_port(v, p, "port", true, NULL);
					vget_protocol(v, p, "protocol");
				}
				vpop(v, m);
			}
		}
		vpop(v, mark);
	}
}
