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
 *   /apis/apiextensions.k8s.io/v1/customresourcedefinitions
 *                         an empty CustomResourceDefinitionList (kubectl's
 *                         CRD check; the group is not discovered)
 *
 * A resource is a stored kind of the kind table (model.h) or one of the
 * few objects the API serves beside them (resources[] below: weft's
 * NodeCredential), each as a `struct resource`; discovery walks both
 * through one index, kinds first.  A trailing slash is accepted, as
 * kube-apiserver does.
 */
#include "controller/discovery.h"

#include <stdbool.h>
#include <string.h>

#include "controller/controller.h"
#include "model/model.h"

/* What discovery says of one resource. */
struct resource {
	const char *group, *version, *api_version;
	const char *plural, *singular, *kind;
	bool namespaced;
	const char *verbs[8];		/* NULL-terminated */
	const char *shortnames[3];	/* NULL-terminated */
	const char *category;		/* or NULL */
	bool status;			/* has NAME/status (a stored kind's status_subresource) */
};

/* Served by the API beside the stored kinds (api.c's routes for them). */
static const struct resource resources[] = {
	/* CRED_PATH: issued, listed, read and revoked by the admin */
	{ "weft.io", "v1", CRED_API_VERSION, "nodecredentials", "nodecredential", "NodeCredential", false,
	  { "create", "delete", "get", "list", NULL }, { "nodecred", NULL }, "weft", false },
};
#define RESOURCE_COUNT (KIND_COUNT + (int)(sizeof(resources) / sizeof(resources[0])))

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

/* Resource i: kind i of the kind table, then resources[]. */
static struct resource resource_get(int i)
{
	const struct kind_info *k;
	const char *const *verbs;
	struct resource r;
	size_t n;

	if (i >= KIND_COUNT)
		return resources[i - KIND_COUNT];
	k = kind_get((enum kind_id)i);
	r = (struct resource){ k->group, k->version, k->api_version, k->plural, k->singular, k->kind,
			       k->namespaced, { NULL }, { NULL }, NULL, false };
	verbs = discovery_verbs(k, &n);
	for (size_t v = 0; v < n && v < 7; v++)
		r.verbs[v] = verbs[v];
	for (int j = 0; j < 3 && k->shortnames[j]; j++)
		r.shortnames[j] = k->shortnames[j];
	/* `kubectl get all`, as Kubernetes files them; `kubectl get weft`:
	 * the cluster network's own objects */
	if (k->id == KIND_POD || k->id == KIND_SERVICE)
		r.category = "all";
	else if (k->id == KIND_CLUSTERNETWORK || k->id == KIND_HOSTSUBNET || k->id == KIND_NETNAMESPACE)
		r.category = "weft";
	r.status = k->status_subresource;
	return r;
}

static json_t *strings_of(const char *const *v, size_t max)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < max && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *resource_of(const struct resource *k)
{
	json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", k->plural, "singularName", k->singular,
			      "namespaced", k->namespaced, "kind", k->kind, "verbs", strings_of(k->verbs, 8));
	json_t *shorts = strings_of(k->shortnames, 3);

	if (r && shorts && json_array_size(shorts))
		json_object_set(r, "shortNames", shorts);
	json_decref(shorts);
	if (r && k->category)
		json_object_set_new(r, "categories", json_pack("[s]", k->category));
	return r;
}

static json_t *status_of(const struct resource *k)
{
	char name[96];

	snprintf(name, sizeof(name), "%s/status", k->plural);
	return json_pack("{s:s, s:s, s:b, s:s, s:[s,s,s]}", "name", name, "singularName", "", "namespaced",
			 k->namespaced, "kind", k->kind, "verbs", "get", "patch", "update");
}

static json_t *resource_list(const char *group, const char *version)
{
	const char *gv = NULL;
	json_t *items = json_array();

	for (int i = 0; items && i < RESOURCE_COUNT; i++) {
		struct resource k = resource_get(i);

		if (strcmp(k.group, group) == 0 && strcmp(k.version, version) == 0) {
			json_array_append_new(items, resource_of(&k));
			/* as kube-apiserver lists pods/status: name, kind, verbs */
			if (k.status)
				json_array_append_new(items, status_of(&k));
			gv = k.api_version;
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
static json_t *group_of(const struct resource *k, bool document)
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

	for (int i = 0; groups && i < RESOURCE_COUNT; i++) {
		struct resource k = resource_get(i);
		bool seen = !*k.group;	/* the core group is /api's */

		for (int j = 0; !seen && j < i; j++)
			seen = strcmp(resource_get(j).group, k.group) == 0;
		if (!seen)
			json_array_append_new(groups, group_of(&k, false));
	}
	return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups);
}

/* The first resource of group (len bytes) into *out; false if none. */
static bool first_in_group(const char *group, size_t len, struct resource *out)
{
	for (int i = 0; i < RESOURCE_COUNT; i++) {
		struct resource k = resource_get(i);

		if (*k.group && strlen(k.group) == len && strncmp(k.group, group, len) == 0) {
			*out = k;
			return true;
		}
	}
	return false;
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
	/* kubectl (1.26 on) decides whether to leave field validation to the
	 * server by the PATCH of the object's kind in the OpenAPI documents;
	 * a kind without one (a NetNamespace, a NodeCredential) it takes for
	 * a possible custom resource and lists the CRDs, and a 404 there is
	 * fatal to apply and create ("failed to check CRD").  weft has no
	 * CRDs: the list is empty, and kubectl validates on the client and
	 * sends the write, whose answer (405 for a NetNamespace) it prints. */
	if (is(path, len, CRD_LIST_PATH)) {
		*out = json_pack("{s:s, s:s, s:{s:s}, s:[]}", "kind", "CustomResourceDefinitionList", "apiVersion",
				 "apiextensions.k8s.io/v1", "metadata", "resourceVersion", "0", "items");
		return true;
	}
	if (len <= 6 || strncmp(path, "/apis/", 6) != 0)
		return false;
	rest = path + 6;
	slash = memchr(rest, '/', len - 6);
	if (!slash) {
		struct resource k;

		*out = first_in_group(rest, len - 6, &k) ? group_of(&k, true) : NULL;
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
