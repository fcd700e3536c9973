/*
 * openapi_doc.c — the v2 and v3 documents (see openapi_doc.h).
 *
 * Both are made by the same code: a kind's paths and operations, and the
 * definitions converted for the version (references prefixed; in v3, a
 * reference with a description wrapped in allOf).  Where the versions
 * differ in shape, `struct flavour` says how: a query parameter's type
 * beside it (v2) or in a schema (v3), a request body as a parameter (v2)
 * or requestBody (v3), a response's schema beside it (v2) or under
 * content (v3).
 *
 * Cost: made once, when the controller starts (openapi.c); nothing here
 * is on a request's path.
 */
#include "controller/openapi_doc.h"
#include "controller/discovery.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define STATUS_DEF "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
#define PATCH_DEF "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
#define DELETE_DEF "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
#define TITLE "weft"
#define VERSION "v" DISCOVERY_KUBE_MAJOR "." DISCOVERY_KUBE_MINOR ".0+weft." DISCOVERY_WEFT_VERSION

struct flavour {
	bool v3;
	const char *ref_prefix;		/* "#/definitions/" or "#/components/schemas/" */
};

static const struct flavour V2 = { false, "#/definitions/" };
static const struct flavour V3 = { true, "#/components/schemas/" };

struct param {
	const char *name, *type, *description;
};

/* What a list (and a watch) reads of its query (list_query.c). */
static const struct param list_params[] = {
	{ "labelSelector", "string", "Only the objects whose labels match (app=web, env in (a,b), !canary, ...)." },
	{ "fieldSelector", "string",
	  "Only the objects whose fields match: metadata.name, metadata.namespace, and spec.nodeName for pods." },
	{ "limit", "integer", "At most this many items; metadata.continue then says where the next page starts." },
	{ "continue", "string", "The metadata.continue of the page before: the next page, read at the same revision." },
	{ "resourceVersion", "string",
	  "A list: at least this revision (one newer than the store's is 504).  A watch: the changes after it." },
	{ "timeoutSeconds", "integer", "A watch ends after so many seconds (at most 1800)." },
	{ "watch", "boolean", "Stream the changes as watch events instead of answering a list." },
	{ "allowWatchBookmarks", "boolean", "A watch may carry BOOKMARK events saying how far it is." },
};

static const struct param get_params[] = {
	{ "resourceVersion", "string", "At least this revision (one newer than the store's is 504)." },
};

/* What a write (create, replace, patch) reads of its query. */
static const struct param write_params[] = {
	{ "fieldValidation", "string",
	  "What to do with fields the kind's schema does not declare: Ignore (keep them, as without the parameter), "
	  "Warn (keep them, with a Warning header naming each) or Strict (refuse the write, 400, naming them)." },
};

/* ------------------------------------------------------------------ definitions */

/* s converted in place: references prefixed, and in v3 wrapped beside a
 * description. */
static int convert(const struct flavour *f, json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	json_t *v;
	const char *name;
	char full[512];

	if (!json_is_object(s))
		return 0;
	if (ref) {
		snprintf(full, sizeof(full), "%s%s", f->ref_prefix, ref);
		if (f->v3 && json_object_size(s) > 1) {
			json_t *all = json_pack("[{s:s}]", "$ref", full);

			if (!all || json_object_del(s, "$ref") || json_object_set_new(s, "allOf", all))
				return -1;
			return 0;
		}
		return json_object_set_new(s, "$ref", json_string(full));
	}
	json_object_foreach(json_object_get(s, "properties"), name, v)
		if (convert(f, v))
			return -1;
	if (convert(f, json_object_get(s, "additionalProperties")) || convert(f, json_object_get(s, "items")))
		return -1;
	return 0;
}

static json_t *converted(const struct flavour *f, const json_t *def)
{
	json_t *c = json_deep_copy(def);

	if (c && convert(f, c)) {
		json_decref(c);
		return NULL;
	}
	return c;
}

static json_t *ref_to(const struct flavour *f, const char *def)
{
	char full[512];

	snprintf(full, sizeof(full), "%s%s", f->ref_prefix, def);
	return json_pack("{s:s}", "$ref", full);
}

/* ------------------------------------------------------------------ operations */

static json_t *parameter(const struct flavour *f, const char *in, const struct param *p)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "name", p->name, "in", in, "description", p->description);

	if (o && !strcmp(in, "path"))
		json_object_set_new(o, "required", json_true());
	if (o && f->v3)
		json_object_set_new(o, "schema", json_pack("{s:s, s:b}", "type", p->type, "uniqueItems", 1));
	else if (o) {
		json_object_set_new(o, "type", json_string(p->type));
		json_object_set_new(o, "uniqueItems", json_true());
	}
	return o;
}

/* Response code -> description (and the body, a reference to def). */
static int add_response(const struct flavour *f, json_t *responses, const char *code, const char *what,
			const char *def)
{
	json_t *r = json_pack("{s:s}", "description", what);

	if (r && def && f->v3)
		json_object_set_new(r, "content", json_pack("{s:{s:o}}", "application/json", "schema", ref_to(f, def)));
	else if (r && def)
		json_object_set_new(r, "schema", ref_to(f, def));
	return r ? json_object_set_new(responses, code, r) : -1;
}

/* Upstream's spelling of a group-version in operation ids ("CoreV1",
 * "NetworkingV1", "RouteOpenshiftIoV1": the first label of a *.k8s.io
 * group, every label of another) and tags ("core_v1", "networking_v1",
 * "routeOpenshiftIo_v1"). */
static void group_words(const struct kind_info *k, char *out, size_t len, bool tag)
{
	const char *g = *k->group ? k->group : "core", *k8s = strstr(g, ".k8s.io");
	bool up = !tag;
	size_t n = 0;

	for (const char *p = g; *p && n + 1 < len && (!k8s || p < k8s); p++) {
		if (*p == '.') {
			up = true;
			continue;
		}
		out[n++] = up ? (char)toupper((unsigned char)*p) : *p;
		up = false;
	}
	out[n] = 0;
	if (tag)
		snprintf(out + n, len - n, "_%s", k->version);
	else
		snprintf(out + n, len - n, "%c%s", toupper((unsigned char)k->version[0]), k->version + 1);
}

struct op {
	const char *action;	/* x-kubernetes-action */
	const char *verb;	/* of the operation id */
	const char *before, *after;	/* the description: before, the kind (its plural: list), after */
	const char *body;	/* the request body's definition, or NULL */
	bool patch;		/* the body is a patch of one of the three types */
	const struct param *params;
	size_t nparams;
	const char *ok;		/* the 200 answer's definition */
	bool created;		/* a 201 as well */
};

static json_t *operation(const struct flavour *f, const struct kind_info *k, const struct op *op, bool ns_scope,
			 bool all_ns)
{
	static const char *const patch_types[] = { "application/json-patch+json", "application/merge-patch+json",
						   "application/strategic-merge-patch+json" };
	char words[64], tag[64], id[160], what[160];
	json_t *o, *params = json_array(), *responses = json_object();

	group_words(k, words, sizeof(words), false);
	group_words(k, tag, sizeof(tag), true);
	snprintf(id, sizeof(id), "%s%s%s%s%s", op->verb, words, ns_scope ? "Namespaced" : "", k->kind,
		 all_ns ? "ForAllNamespaces" : "");
	snprintf(what, sizeof(what), "%s %s%s", op->before, strcmp(op->action, "list") ? k->kind : k->plural,
		 op->after);
	o = json_pack("{s:s, s:s, s:[s], s:s, s:{s:s, s:s, s:s}}", "description", what, "operationId", id, "tags", tag,
		      "x-kubernetes-action", op->action, "x-kubernetes-group-version-kind", "group", k->group, "kind",
		      k->kind, "version", k->version);
	if (!o || !params || !responses)
		goto fail;
	for (size_t i = 0; i < op->nparams; i++)
		if (op->params[i].name)
			json_array_append_new(params, parameter(f, "query", &op->params[i]));
	if (op->body && !f->v3) {
		json_array_append_new(params, json_pack("{s:s, s:s, s:b, s:o}", "name", "body", "in", "body", "required",
							!!strcmp(op->body, DELETE_DEF), "schema", ref_to(f, op->body)));
	} else if (op->body) {
		json_t *content = json_object();

		for (size_t i = 0; content && i < (op->patch ? 3u : 1u); i++)
			json_object_set_new(content, op->patch ? patch_types[i] : "*/*",
					    json_pack("{s:o}", "schema", ref_to(f, op->body)));
		json_object_set_new(o, "requestBody", json_pack("{s:o, s:b}", "content", content, "required",
								!!strcmp(op->body, DELETE_DEF)));
	}
	if (!f->v3) {
		json_t *consumes = json_array();

		for (size_t i = 0; consumes && op->body && i < (op->patch ? 3u : 1u); i++)
			json_array_append_new(consumes, json_string(op->patch ? patch_types[i] : "application/json"));
		json_object_set_new(o, "consumes", consumes);
		json_object_set_new(o, "produces", json_pack("[s]", "application/json"));
		json_object_set_new(o, "schemes", json_pack("[s]", "https"));
	}
	if (json_array_size(params))
		json_object_set(o, "parameters", params);
	if (add_response(f, responses, "200", "OK", op->ok) ||
	    (op->created && add_response(f, responses, "201", "Created", op->ok)) ||
	    add_response(f, responses, "401", "Unauthorized", NULL))
		goto fail;
	json_object_set(o, "responses", responses);
	json_decref(params);
	json_decref(responses);
	return o;
fail:
	json_decref(o);
	json_decref(params);
	json_decref(responses);
	return NULL;
}

/* The path parameters of a path (name and/or namespace). */
static json_t *path_params(const struct flavour *f, bool ns, bool name)
{
	static const struct param pns = { "namespace", "string", "The object's namespace." };
	static const struct param pname = { "name", "string", "The object's name." };
	json_t *a = json_array();

	if (a && name)
		json_array_append_new(a, parameter(f, "path", &pname));
	if (a && ns)
		json_array_append_new(a, parameter(f, "path", &pns));
	return a;
}

/* The paths of kind k added to paths. */
static int add_kind_paths(const struct flavour *f, const struct model_openapi *m, const struct kind_info *k,
			  json_t *paths)
{
	const char *def = model_openapi_kind_definition(m, k->id), *list = model_openapi_list_definition(m, k->id);
	const struct op list_op = { "list", "list", "List the", ", or watch them (watch=true).", NULL, false,
				    list_params, sizeof(list_params) / sizeof(list_params[0]), list, false };
	const struct op ops[] = {
		{ "post", "create", "Create a", ".", def, false, write_params, 1, def, true },
		{ "get", "read", "Read the", ".", NULL, false, get_params, 1, def, false },
		{ "put", "replace", "Replace the", ".", def, false, write_params, 1, def, false },
		{ "patch", "patch", "Change part of the", ": a JSON Patch, a merge patch or a strategic merge patch.",
		  PATCH_DEF, true, write_params, 1, def, false },
		{ "delete", "delete", "Delete the", "; the answer is the object as it was.", DELETE_DEF, false, NULL, 0,
		  def, false },
	};
	static const char *const verbs[] = { "create", "get", "update", "patch", "delete" };
	static const char *const methods[] = { "post", "get", "put", "patch", "delete" };
	char collection[256], one[256];
	json_t *c, *item;
	bool ns = k->namespaced;

	if (model_api_path(k, "{namespace}", NULL, collection, sizeof(collection)) < 0 ||
	    model_api_path(k, "{namespace}", "{name}", one, sizeof(one)) < 0)
		return -1;
	c = json_pack("{s:o, s:o}", "parameters", path_params(f, ns, false), "get", operation(f, k, &list_op, ns, false));
	item = json_pack("{s:o}", "parameters", path_params(f, ns, true));
	for (size_t i = 0; c && item && i < sizeof(ops) / sizeof(ops[0]); i++) {
		json_t *where = i == 0 ? c : item;

		if (discovery_allows(k, verbs[i]) &&
		    json_object_set_new(where, methods[i], operation(f, k, &ops[i], ns, false)))
			goto fail;
	}
	if (!c || !item || json_object_set_new(paths, collection, c) || json_object_set_new(paths, one, item))
		return -1;
	if (ns) {	/* the list across namespaces */
		if (model_api_path(k, NULL, NULL, collection, sizeof(collection)) < 0)
			return -1;
		c = json_pack("{s:o}", "get", operation(f, k, &list_op, false, true));
		if (!c || json_object_set_new(paths, collection, c))
			return -1;
	}
	return 0;
fail:
	json_decref(c);
	json_decref(item);
	return -1;
}

/* ------------------------------------------------------------------ documents */

json_t *openapi_doc_v2(const struct model_openapi *m)
{
	json_t *doc = json_pack("{s:s, s:{s:s, s:s}, s:{}, s:{}}", "swagger", "2.0", "info", "title", TITLE, "version",
				VERSION, "paths", "definitions");
	json_t *paths = json_object_get(doc, "paths"), *defs = json_object_get(doc, "definitions"), *def;
	const char *name;

	if (!doc)
		return NULL;
	for (int id = 0; id < KIND_COUNT; id++)
		if (add_kind_paths(&V2, m, kind_get((enum kind_id)id), paths))
			goto fail;
	json_object_foreach((json_t *)model_openapi_definitions(m), name, def)
		if (json_object_set_new(defs, name, converted(&V2, def)))
			goto fail;
	return doc;
fail:
	json_decref(doc);
	return NULL;
}

/* The names s refers to (bare, as the model writes them) added to want. */
static void refs_of(const json_t *s, json_t *want)
{
	const char *ref = json_string_value(json_object_get(s, "$ref")), *name;
	const json_t *v;

	if (!json_is_object(s))
		return;
	if (ref)
		json_object_set_new(want, ref, json_true());
	json_object_foreach((json_t *)json_object_get(s, "properties"), name, v)
		refs_of(v, want);
	refs_of(json_object_get(s, "additionalProperties"), want);
	refs_of(json_object_get(s, "items"), want);
}

json_t *openapi_doc_v3(const struct model_openapi *m, const char *group, const char *version)
{
	json_t *doc = json_pack("{s:s, s:{s:s, s:s}, s:{}, s:{s:{}}}", "openapi", "3.0.0", "info", "title", TITLE,
				"version", VERSION, "paths", "components", "schemas");
	json_t *paths = json_object_get(doc, "paths");
	json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
	json_t *want = json_pack("{s:b, s:b, s:b}", STATUS_DEF, 1, PATCH_DEF, 1, DELETE_DEF, 1);
	const json_t *defs = model_openapi_definitions(m);
	bool any = false, grew = true;
	const char *name;
	json_t *v;

	if (!doc || !want)
		goto fail;
	for (int id = 0; id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);

		if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
			continue;
		any = true;
		if (add_kind_paths(&V3, m, k, paths))
			goto fail;
		json_object_set_new(want, model_openapi_kind_definition(m, k->id), json_true());
		json_object_set_new(want, model_openapi_list_definition(m, k->id), json_true());
	}
	if (!any)
		goto fail;
	while (grew) {	/* what the kinds reach, and what that reaches */
		size_t before = json_object_size(want);
		json_t *round = json_deep_copy(want);

		json_object_foreach(round, name, v)
			refs_of(json_object_get(defs, name), want);
		json_decref(round);
		grew = json_object_size(want) > before;
	}
	json_object_foreach(want, name, v)
		if (json_object_set_new(schemas, name, converted(&V3, json_object_get(defs, name))))
			goto fail;
	json_decref(want);
	return doc;
fail:
	json_decref(want);
	json_decref(doc);
	return NULL;
}
