/*
 * openapi.c — the schema files read into one set of definitions, completed
 * and checked (openapi.h says what is added and what is checked).
 *
 *   files ──yaml_decode_stream──► defs (name -> schema; a name twice is an
 *     error naming both files) ──complete_kinds──► + apiVersion, kind,
 *     metadata on each kind, + its List ──check (every schema, depth
 *     first)──► open objects marked; refs, types, items, required,
 *     list keys checked
 *
 * The walk follows properties, additionalProperties and items; it is
 * bounded by SCHEMA_MAX_DEPTH (the files are ours, but a loop of nested
 * objects written by mistake must not run away).
 */
#include "model/openapi.h"
#include "lib/yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_MAX_DEPTH 32
#define OBJECT_META "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#define LIST_META "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
#define PRESERVE "x-kubernetes-preserve-unknown-fields"

struct model_openapi {
	json_t *defs;
	char *kind_def[KIND_COUNT];
	char *list_def[KIND_COUNT];
};

__attribute__((format(printf, 3, 4))) static int failed(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void model_openapi_free(struct model_openapi *o)
{
	if (!o)
		return;
	json_decref(o->defs);
	for (int i = 0; i < KIND_COUNT; i++) {
		free(o->kind_def[i]);
		free(o->list_def[i]);
	}
	free(o);
}

const json_t *model_openapi_definitions(const struct model_openapi *o)
{
	return o->defs;
}

const char *model_openapi_kind_definition(const struct model_openapi *o, enum kind_id id)
{
	return (unsigned)id < KIND_COUNT ? o->kind_def[id] : NULL;
}

const char *model_openapi_list_definition(const struct model_openapi *o, enum kind_id id)
{
	return (unsigned)id < KIND_COUNT ? o->list_def[id] : NULL;
}

/* ------------------------------------------------------------------ reading */

/* One file's definitions into defs; from names each definition's file. */
static int read_file(const struct embedded_file *f, json_t *defs, json_t *from, char *err, size_t errlen)
{
	json_t **docs = NULL, *v;
	size_t ndocs = 0;
	const char *name;
	char msg[256];
	int rc;

	rc = yaml_decode_stream(f->text, f->len, &docs, &ndocs, msg, sizeof(msg));
	if (rc < 0) {
		rc = rc == -ENOMEM ? rc : failed(err, errlen, "openapi/%s: %s", f->name, msg);
		goto out;
	}
	if (ndocs != 1 || !json_is_object(docs[0])) {
		rc = failed(err, errlen, "openapi/%s: not one map of definitions", f->name);
		goto out;
	}
	json_object_foreach(docs[0], name, v) {
		if (json_object_get(defs, name)) {
			rc = failed(err, errlen, "openapi/%s: definition %s is in %s too", f->name, name,
				    json_string_value(json_object_get(from, name)));
			goto out;
		}
		if (json_object_set(defs, name, v) || json_object_set_new(from, name, json_string(f->name))) {
			rc = -ENOMEM;
			goto out;
		}
	}
out:
	yaml_docs_free(docs, ndocs);
	return rc;
}

/* ------------------------------------------------------------------ kinds */

static bool names_kind(const json_t *gvks, const char *group, const char *version, const char *kind)
{
	const json_t *g;
	size_t i;

	json_array_foreach(gvks, i, g) {
		const char *gg = json_string_value(json_object_get(g, "group"));
		const char *gv = json_string_value(json_object_get(g, "version"));
		const char *gk = json_string_value(json_object_get(g, "kind"));

		if (gg && gv && gk && !strcmp(gg, group) && !strcmp(gv, version) && !strcmp(gk, kind))
			return true;
	}
	return false;
}

/* A string property described as "<what> <value>." */
static json_t *string_schema(const char *what, const char *value)
{
	char text[256];

	snprintf(text, sizeof(text), "%s %s.", what, value);
	return json_pack("{s:s, s:s}", "description", text, "type", "string");
}

/* apiVersion, kind and metadata first, then the definition's own. */
static int add_common(const struct kind_info *k, json_t *def, const char *def_name, char *err, size_t errlen)
{
	json_t *own = json_object_get(def, "properties"), *props, *v;
	const char *name;

	if (own && !json_is_object(own))
		return failed(err, errlen, "%s: properties is not a map", def_name);
	props = json_pack("{s:o, s:o, s:{s:s, s:s}}", "apiVersion",
			  string_schema("The kind's API group and version:", k->api_version), "kind",
			  string_schema("The kind:", k->kind), "metadata", "description",
			  "The object's name, namespace, labels and annotations, and what the controller sets on "
			  "every write (resourceVersion, uid, creationTimestamp).",
			  "$ref", OBJECT_META);
	if (!props)
		return -ENOMEM;
	json_object_foreach(own, name, v) {
		if (json_object_get(props, name)) {
			json_decref(props);
			return failed(err, errlen, "%s: %s is added to every kind; leave it out", def_name, name);
		}
		if (json_object_set(props, name, v)) {
			json_decref(props);
			return -ENOMEM;
		}
	}
	return json_object_set_new(def, "properties", props) ? -ENOMEM : 0;
}

static json_t *list_of(const struct kind_info *k, const char *def_name)
{
	char kind[96], text[256];
	json_t *l;

	snprintf(kind, sizeof(kind), "%sList", k->kind);
	snprintf(text, sizeof(text),
		 "A list of %s objects, as a GET of the collection answers: read at one revision "
		 "(metadata.resourceVersion), one page of several when metadata.continue is set.", k->kind);
	l = json_pack("{s:s, s:s, s:[s], s:{s:o, s:o, s:{s:s, s:s}, s:{s:s, s:s, s:{s:s}}}, s:[{s:s, s:s, s:s}]}",
		      "description", text, "type", "object", "required", "items", "properties", "apiVersion",
		      string_schema("The kind's API group and version:", k->api_version), "kind",
		      string_schema("The kind:", kind), "metadata", "description",
		      "The revision the list was read at, and where the next page starts.", "$ref", LIST_META,
		      "items", "description", "The objects.", "type", "array", "items", "$ref", def_name,
		      "x-kubernetes-group-version-kind", "group", k->group, "kind", kind, "version", k->version);
	return l;
}

static int complete_kinds(struct model_openapi *o, char *err, size_t errlen)
{
	for (int id = 0; id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);
		const char *name, *found = NULL;
		char list[256];
		json_t *def, *l;
		int rc;

		json_object_foreach(o->defs, name, def) {
			if (!names_kind(json_object_get(def, "x-kubernetes-group-version-kind"), k->group, k->version,
					k->kind))
				continue;
			if (found)
				return failed(err, errlen, "kind %s is named by %s and %s", k->kind, found, name);
			found = name;
		}
		if (!found)
			return failed(err, errlen, "kind %s (%s) has no definition", k->kind, k->api_version);
		rc = add_common(k, json_object_get(o->defs, found), found, err, errlen);
		if (rc)
			return rc;
		snprintf(list, sizeof(list), "%sList", found);
		if (json_object_get(o->defs, list))
			return failed(err, errlen, "%s: lists of kinds are added; leave it out", list);
		l = list_of(k, found);
		o->kind_def[id] = strdup(found);
		o->list_def[id] = strdup(list);
		if (!l || !o->kind_def[id] || !o->list_def[id] || json_object_set_new(o->defs, list, l))
			return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ checks */

struct walk {
	const json_t *defs;
	char *err;
	size_t errlen;
};

static bool is_type(const char *t)
{
	static const char *const types[] = { "string", "integer", "number", "boolean", "object", "array" };

	for (size_t i = 0; t && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i]))
			return true;
	return false;
}

static bool known_keyword(const char *key)
{
	static const char *const words[] = { "description", "type", "format", "properties", "additionalProperties",
					     "items", "required", "enum", "$ref" };

	if (!strncmp(key, "x-", 2))
		return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(key, words[i]))
			return true;
	return false;
}

/* The schema a $ref names, or s itself. */
static const json_t *resolved(const struct walk *w, const json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));

	return ref ? json_object_get(w->defs, ref) : s;
}

/* A list's merge keys are properties of its items (unless they are open). */
static int check_list_keys(const struct walk *w, const json_t *s, const char *at)
{
	const json_t *item = resolved(w, json_object_get(s, "items")), *keys, *key;
	const json_t *props = json_object_get(item, "properties");
	const char *merge = json_string_value(json_object_get(s, "x-kubernetes-patch-merge-key"));
	size_t i;

	if (!props)
		return 0;
	if (merge && !json_object_get(props, merge))
		return failed(w->err, w->errlen, "%s: merge key %s is no property of the items", at, merge);
	keys = json_object_get(s, "x-kubernetes-list-map-keys");
	json_array_foreach(keys, i, key) {
		if (!json_is_string(key) || !json_object_get(props, json_string_value(key)))
			return failed(w->err, w->errlen, "%s: list map key %zu is no property of the items", at, i);
	}
	return 0;
}

static int check_schema(const struct walk *w, json_t *s, const char *at, int depth);

static int check_object(const struct walk *w, json_t *s, const char *at, int depth)
{
	json_t *props = json_object_get(s, "properties"), *more = json_object_get(s, "additionalProperties");
	const json_t *req = json_object_get(s, "required"), *r;
	char sub[512];
	const char *name;
	json_t *v;
	size_t i;
	int rc;

	if (props && !json_is_object(props))
		return failed(w->err, w->errlen, "%s: properties is not a map", at);
	if (more && !json_is_object(more))
		return failed(w->err, w->errlen, "%s: additionalProperties is not a schema", at);
	if (!props && !more && json_object_set_new(s, PRESERVE, json_true()))
		return -ENOMEM;
	if (props && json_is_true(json_object_get(s, PRESERVE)))
		return failed(w->err, w->errlen, "%s: open (" PRESERVE ") and with properties", at);
	json_object_foreach(props, name, v) {
		snprintf(sub, sizeof(sub), "%s.%s", at, name);
		rc = check_schema(w, v, sub, depth + 1);
		if (rc)
			return rc;
	}
	if (more) {
		snprintf(sub, sizeof(sub), "%s.additionalProperties", at);
		rc = check_schema(w, more, sub, depth + 1);
		if (rc)
			return rc;
	}
	if (req && !json_is_array(req))
		return failed(w->err, w->errlen, "%s: required is not a list", at);
	json_array_foreach(req, i, r) {
		if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
			return failed(w->err, w->errlen, "%s: required[%zu] is not one of its properties", at, i);
	}
	return 0;
}

static int check_schema(const struct walk *w, json_t *s, const char *at, int depth)
{
	const char *type, *ref, *key;
	json_t *v;
	char sub[512];
	int rc;

	if (depth > SCHEMA_MAX_DEPTH)
		return failed(w->err, w->errlen, "%s: nested deeper than %d", at, SCHEMA_MAX_DEPTH);
	if (!json_is_object(s))
		return failed(w->err, w->errlen, "%s: a schema must be a map", at);
	json_object_foreach(s, key, v) {
		if (!known_keyword(key))
			return failed(w->err, w->errlen, "%s: unknown keyword %s", at, key);
	}
	if (!json_is_string(json_object_get(s, "description")) && json_object_get(s, "description"))
		return failed(w->err, w->errlen, "%s: description is not text", at);
	ref = json_string_value(json_object_get(s, "$ref"));
	if (json_object_get(s, "$ref")) {
		if (!ref || !json_object_get(w->defs, ref))
			return failed(w->err, w->errlen, "%s: $ref names no definition", at);
		if (json_object_get(s, "type") || json_object_get(s, "properties") || json_object_get(s, "items"))
			return failed(w->err, w->errlen, "%s: a $ref has no type, properties or items of its own", at);
		return 0;
	}
	type = json_string_value(json_object_get(s, "type"));
	if (!is_type(type))
		return failed(w->err, w->errlen, "%s: type must be string, integer, number, boolean, object or array", at);
	if (json_object_get(s, "enum") && !json_is_array(json_object_get(s, "enum")))
		return failed(w->err, w->errlen, "%s: enum is not a list", at);
	if (!strcmp(type, "object"))
		return check_object(w, s, at, depth);
	if (json_object_get(s, "properties") || json_object_get(s, "additionalProperties"))
		return failed(w->err, w->errlen, "%s: properties on a %s", at, type);
	if (strcmp(type, "array") != 0)
		return json_object_get(s, "items") ? failed(w->err, w->errlen, "%s: items on a %s", at, type) : 0;
	if (!json_is_object(json_object_get(s, "items")))
		return failed(w->err, w->errlen, "%s: an array needs items", at);
	snprintf(sub, sizeof(sub), "%s[]", at);
	rc = check_schema(w, json_object_get(s, "items"), sub, depth + 1);
	return rc ? rc : check_list_keys(w, s, at);
}

/* ------------------------------------------------------------------ load */

int model_openapi_load(const struct embedded_file *files, size_t n, struct model_openapi **out, char *err,
		       size_t errlen)
{
	struct model_openapi *o = calloc(1, sizeof(*o));
	json_t *from = json_object();
	struct walk w = { .err = err, .errlen = errlen };
	const char *name;
	json_t *def;
	int rc = -ENOMEM;

	*out = NULL;
	if (!o || !from || !(o->defs = json_object()))
		goto out;
	for (size_t i = 0; i < n; i++) {
		rc = read_file(&files[i], o->defs, from, err, errlen);
		if (rc)
			goto out;
	}
	rc = complete_kinds(o, err, errlen);
	if (rc)
		goto out;
	w.defs = o->defs;
	json_object_foreach(o->defs, name, def) {
		rc = check_schema(&w, def, name, 0);
		if (rc)
			goto out;
	}
	*out = o;
	o = NULL;
out:
	json_decref(from);
	model_openapi_free(o);
	return rc;
}
