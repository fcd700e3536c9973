/*
 * discovery.c — the discovery documents (see discovery.h), built from the
 * kind table on each request: a few hundred bytes of JSON, read once per
 * client session (kubectl caches them), so nothing is kept.
 *
 *   /version              Info: the Kubernetes release followed, weft's own
 *   /api                  APIVersions: ["v1"]
 *   /api/v1               APIResourceList of the core kinds
 *   /apis                 APIGroupList: every group with a kind, in table order
 *   /apis/GROUP           APIGroup
 *   /apis/GROUP/VERSION   APIResourceList of the group's kinds
 *
 * A trailing slash is accepted, as kube-apiserver does.
 */
#include "controller/discovery.h"

#include <stdbool.h>
#include <string.h>

#include "model/model.h"

const char *const *discovery_verbs(const struct kind_info *k, size_t *n)
{
	static const char *const all[] = { "create", "delete", "get", "list", "patch", "update", "watch" };
	static const char *const annotate[] = { "get", "list", "patch", "update", "watch" };
	static const char *const read[] = { "get", "list", "watch" };

	/* a HostSubnet's annotations are its node's to write (docs/api.md) */
	if (!k->controller_owned) {
		*n = sizeof(all) / sizeof(all[0]);
		return all;
	}
	if (k->id == KIND_HOSTSUBNET) {
		*n = sizeof(annotate) / sizeof(annotate[0]);
		return annotate;
	}
	*n = sizeof(read) / sizeof(read[0]);
	return read;
}

bool discovery_allows(const struct kind_info *k, const char *verb)
{
	size_t n;
	const char *const *v = discovery_verbs(k, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], verb))
			return true;
	return false;
}

static json_t *verbs_of(const struct kind_info *k)
{
	size_t n;
	const char *const *v = discovery_verbs(k, &n);
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *resource_of(const struct kind_info *k)
{
	json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", k->plural, "singularName", k->singular,
			      "namespaced", k->namespaced, "kind", k->kind, "verbs", verbs_of(k));
	json_t *shorts = json_array();

	for (int i = 0; shorts && i < 3 && k->shortnames[i]; i++)
		json_array_append_new(shorts, json_string(k->shortnames[i]));
	if (r && shorts && json_array_size(shorts))
		json_object_set(r, "shortNames", shorts);
	json_decref(shorts);
	/* `kubectl get all`, as Kubernetes files them */
	if (r && (k->id == KIND_POD || k->id == KIND_SERVICE))
		json_object_set_new(r, "categories", json_pack("[s]", "all"));
	return r;
}

static json_t *resource_list(const char *group, const char *version)
{
	const char *gv = NULL;
	json_t *items = json_array();

	for (int id = 0; items && id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);

		if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0) {
			json_array_append_new(items, resource_of(k));
			gv = k->api_version;
		}
	}
	if (!gv) {
		json_decref(items);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1", "groupVersion", gv,
			 "resources", items);
}

/* The group's entry of an APIGroupList, or the APIGroup itself (with kind). */
static json_t *group_of(const struct kind_info *k, bool document)
{
	json_t *gv = json_pack("{s:s, s:s}", "groupVersion", k->api_version, "version", k->version);
	json_t *g = json_pack("{s:s, s:[O], s:O}", "name", k->group, "versions", gv, "preferredVersion", gv);

	json_decref(gv);
	if (g && document) {
		json_object_set_new(g, "kind", json_string("APIGroup"));
		json_object_set_new(g, "apiVersion", json_string("v1"));
	}
	return g;
}

static json_t *group_list(void)
{
	json_t *groups = json_array();

	for (int id = 0; groups && id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);
		bool seen = !*k->group;	/* the core group is /api's */

		for (int j = 0; !seen && j < id; j++)
			seen = strcmp(kind_get((enum kind_id)j)->group, k->group) == 0;
		if (!seen)
			json_array_append_new(groups, group_of(k, false));
	}
	return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups);
}

static const struct kind_info *first_in_group(const char *group, size_t len)
{
	for (int id = 0; id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);

		if (*k->group && strlen(k->group) == len && strncmp(k->group, group, len) == 0)
			return k;
	}
	return NULL;
}

static json_t *version_info(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", DISCOVERY_KUBE_MAJOR, "minor",
			 DISCOVERY_KUBE_MINOR, "gitVersion",
			 "v" DISCOVERY_KUBE_MAJOR "." DISCOVERY_KUBE_MINOR ".0+weft." DISCOVERY_WEFT_VERSION,
			 "gitCommit", "", "gitTreeState", "", "goVersion", "", "platform", "linux/amd64");
}

static bool is(const char *path, size_t len, const char *want)
{
	return strlen(want) == len && strncmp(path, want, len) == 0;
}

bool discovery_lookup(const char *path, const char *server, json_t **out)
{
	size_t len = strlen(path);
	const char *rest, *slash;

	if (len > 1 && path[len - 1] == '/')
		len--;
	if (is(path, len, "/version")) {
		*out = version_info();
		return true;
	}
	if (is(path, len, "/api")) {
		*out = json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
				 "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
				 server ? server : "");
		return true;
	}
	if (is(path, len, "/api/v1")) {
		*out = resource_list("", "v1");
		return true;
	}
	if (is(path, len, "/apis")) {
		*out = group_list();
		return true;
	}
	if (len <= 6 || strncmp(path, "/apis/", 6) != 0)
		return false;
	rest = path + 6;
	slash = memchr(rest, '/', len - 6);
	if (!slash) {
		const struct kind_info *k = first_in_group(rest, len - 6);

		*out = k ? group_of(k, true) : NULL;
		return true;
	}
	if (memchr(slash + 1, '/', (size_t)(path + len - slash - 1)))
		return false;	/* deeper: an object path */
	{
		char group[256], version[64];
		size_t gl = (size_t)(slash - rest), vl = (size_t)(path + len - slash - 1);

		if (gl == 0 || gl >= sizeof(group) || vl == 0 || vl >= sizeof(version)) {
			*out = NULL;
			return true;
		}
		memcpy(group, rest, gl);
		group[gl] = 0;
		memcpy(version, slash + 1, vl);
		version[vl] = 0;
		*out = resource_list(group, version);
	}
	return true;
}
