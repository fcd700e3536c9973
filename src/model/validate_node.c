/*
 * validate_node.c — a Node's addresses: each typed, and exactly one
 * InternalIP (the address its pods' traffic is tunnelled to).
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

static bool any(const char *s) { return s != NULL; }

void validate_node(struct vctx *v, const json_t *obj)
{
	static const char *const types[] = { "InternalIP", "ExternalIP", "Hostname",
					     "InternalDNS", "ExternalDNS", NULL };
	const json_t *status = vget_object(v, obj, "status", false), *addrs = NULL, *a;
	size_t mark, i, internal = 0;

	mark = vpush(v, "status");
	if (status)
		addrs = vget_list(v, status, "addresses", false);
	json_array_foreach(addrs, i, a) {
		size_t m;

		if (vpush_item(v, "addresses", i, a, &m)) {
			const char *type = vget_enum(v, a, "type", true, types);

			if (type && !strcmp(type, "InternalIP")) {
				if (++internal == 2)
					verror(v, "type", "a second InternalIP address (a Node has "
					       "exactly one)");
				vget_ip4(v, a, "address", true, NULL);
			} else {
				vget_name(v, a, "address", true, any, "an address");
			}
		}
		vpop(v, m);
	}
	vpop(v, mark);
	if (internal == 0)
		verror(v, "status.addresses", "a Node needs an InternalIP address");
}
