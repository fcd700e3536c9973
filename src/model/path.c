/*
 * path.c — the REST path of a kind's collection or of one object.
 */
#include "model/model.h"

#include <errno.h>
#include <stdio.h>

int model_api_path(const struct kind_info *k, const char *ns, const char *name, char *buf,
		   size_t len)
{
	int n;

	if (!k || !buf)
		return -EINVAL;
	if (!k->namespaced)
		ns = NULL;
	if (k->group[0])
		n = snprintf(buf, len, "/apis/%s/%s", k->group, k->version);
	else
		n = snprintf(buf, len, "/api/%s", k->version);
	if (n >= 0 && (size_t)n < len && ns && *ns)
		n += snprintf(buf + n, len - (size_t)n, "/namespaces/%s", ns);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "/%s", k->plural);
	if (n >= 0 && (size_t)n < len && name)
		n += snprintf(buf + n, len - (size_t)n, "/%s", name);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return n;
}
