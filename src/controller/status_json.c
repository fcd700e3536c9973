/*
 * status_json.c — a Status object and its details (status_json.h says
 * which reason gets which).
 *
 * Where the details name a resource, the message is read first: the
 * registry writes NotFound and AlreadyExists as upstream does,
 * `<resource> "<name>" ...`, so the resource and name there are the ones
 * the failure is about (a pod created in a missing namespace is
 * `namespaces "red" not found`).  A message of another form (a node's
 * Forbidden, an admission's Conflict) is about the request's own object.
 */
#include "controller/status_json.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* message opens with `<resource> "<name>" `: 0 with the two copied */
static int named_in(const char *message, char *resource, size_t rlen, char *name, size_t nlen)
{
	size_t r = 0, n;
	const char *q;

	while (islower((unsigned char)message[r]) || message[r] == '.')
		r++;
	if (r == 0 || r >= rlen || strncmp(message + r, " \"", 2) != 0)
		return -1;
	q = strchr(message + r + 2, '"');
	if (!q || (n = (size_t)(q - (message + r + 2))) == 0 || n >= nlen || q[1] != ' ')
		return -1;
	memcpy(resource, message, r);
	resource[r] = 0;
	memcpy(name, message + r + 2, n);
	name[n] = 0;
	return 0;
}

static bool about_resource(const char *reason)
{
	static const char *const reasons[] = { "NotFound", "AlreadyExists", "Conflict", "Forbidden",
					       "MethodNotAllowed" };

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(reason, reasons[i]) == 0)
			return true;
	return false;
}

/* {name, group, kind}, each only when known (upstream omits empty ones) */
static json_t *details_of(const char *kind, const char *group, const char *name)
{
	json_t *d = json_object();

	if (d && name && *name)
		json_object_set_new(d, "name", json_string(name));
	if (d && group && *group)
		json_object_set_new(d, "group", json_string(group));
	if (d && kind && *kind)
		json_object_set_new(d, "kind", json_string(kind));
	return d;
}

static json_t *details(const struct status *st, const char *message, const struct kind_info *k,
		       const char *name)
{
	const char *reason = st->reason ? st->reason : "";
	char resource[64], named[256];
	json_t *d = NULL, *causes;

	if (strcmp(reason, "Invalid") == 0) {
		d = details_of(k ? k->kind : NULL, k ? k->group : NULL, name);
		causes = model_error_causes(message);
		if (!d || !causes || json_object_set_new(d, "causes", causes)) {
			json_decref(d);
			return NULL;
		}
	} else if (about_resource(reason) && named_in(message, resource, sizeof(resource), named, sizeof(named)) == 0) {
		const struct kind_info *of = kind_lookup(resource);

		d = details_of(resource, of && strcmp(of->plural, resource) == 0 ? of->group : NULL, named);
	} else if (about_resource(reason) && k) {
		d = details_of(k->plural, k->group, name);
	}
	if (st->retry_after > 0) {
		if (!d)
			d = json_object();
		if (!d || json_object_set_new(d, "retryAfterSeconds", json_integer(st->retry_after)))
			goto fail;
		if (st->code == 504 &&
		    json_object_set_new(d, "causes", json_pack("[{s:s, s:s}]", "reason", "ResourceVersionTooLarge",
							       "message", "Too large resource version")))
			goto fail;
	}
	return d;
fail:
	json_decref(d);
	return NULL;
}

json_t *status_json_new(const struct status *st, const char *message, const struct kind_info *k,
			const char *name)
{
	json_t *o = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
			      "metadata", "status", "Failure", "message", message, "reason",
			      st->reason ? st->reason : "", "code", st->code);
	json_t *d;

	if (!o)
		return NULL;
	d = details(st, message, k, name);
	if (d && json_object_size(d) && json_object_set_new(o, "details", d)) {
		json_decref(o);
		return NULL;
	}
	if (d && !json_object_size(d))
		json_decref(d);
	return o;
}
