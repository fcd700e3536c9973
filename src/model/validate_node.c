/*
 * validate_node.c — a Node's addresses: each typed, and exactly one
 * InternalIP (the address its pods' traffic is tunnelled to).
 *
 * The InternalIP must be a unicast address another host can send to.
 * Refused (Kubernetes itself does not check; weft's tunnels would point
 * nowhere): 0.0.0.0/8 ("this network", 0.0.0.0 included), 127.0.0.0/8
 * loopback, 169.254.0.0/16 link-local, 224.0.0.0/4 multicast and
 * 240.0.0.0/4 reserved (255.255.255.255, the limited broadcast, included).
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

static bool any(const char *s) { return s != NULL; }

/* Why a node cannot be reached at ip (host order), or NULL. */
static const char *unusable(uint32_t ip)
{
	static const struct {
		uint32_t net, mask;
		const char *what;
	} ranges[] = {
		{ 0x00000000, 0xff000000, "in 0.0.0.0/8 (\"this network\", not an address a host has)" },
		{ 0x7f000000, 0xff000000, "a loopback address (127.0.0.0/8)" },
		{ 0xa9fe0000, 0xffff0000, "a link-local address (169.254.0.0/16)" },
		{ 0xe0000000, 0xf0000000, "a multicast address (224.0.0.0/4)" },
		{ 0xffffffff, 0xffffffff, "the broadcast address" },
		{ 0xf0000000, 0xf0000000, "a reserved address (240.0.0.0/4)" },
	};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if ((ip & ranges[i].mask) == ranges[i].net)
			return ranges[i].what;
	return NULL;
}

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
				uint32_t ip;
				const char *why;

				if (vget_ip4(v, a, "address", true, &ip) && (why = unusable(ip)))
					verror(v, "address", "%s is %s: an InternalIP must be a unicast "
					       "address other nodes can reach",
					       json_string_value(json_object_get(a, "address")), why);
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
