/*
 * openapi_test.c — the built-in schema loads and is complete (a definition
 * and a list for every kind of the kind table, open objects marked), a
 * broken one is refused naming what is wrong, and the schema's strategic-
 * merge annotations say what patch_strategic.c does: every list reachable
 * in every kind is patched for real and merged by its key, merged as a
 * set, or replaced, exactly as its x-kubernetes-patch-* extensions say.
 */
#include "model/openapi.h"
#include "model/patch.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct model_openapi *builtin(void)
{
	struct model_openapi *o = NULL;
	char err[512];

	if (model_openapi_load(model_openapi_files, model_openapi_files_count, &o, err, sizeof(err))) {
		test_fail(__FILE__, __LINE__, "the built-in schema does not load: %s", err);
		return NULL;
	}
	return o;
}

static const json_t *def_of(const struct model_openapi *o, const char *name)
{
	return json_object_get(model_openapi_definitions(o), name);
}

static const json_t *prop(const json_t *schema, const char *name)
{
	return json_object_get(json_object_get(schema, "properties"), name);
}

TEST(openapi_every_kind_has_a_definition_and_a_list)
{
	struct model_openapi *o = builtin();

	CHECK(o);
	for (int id = 0; id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);
		const char *name = model_openapi_kind_definition(o, (enum kind_id)id);
		const json_t *d = def_of(o, name), *l = def_of(o, model_openapi_list_definition(o, (enum kind_id)id));
		const json_t *gvk = json_array_get(json_object_get(l, "x-kubernetes-group-version-kind"), 0);
		char list_kind[64];

		snprintf(list_kind, sizeof(list_kind), "%sList", k->kind);
		CHECK(d && l);
		CHECK(prop(d, "apiVersion") && prop(d, "kind"));
		CHECK_STR(json_string_value(json_object_get(prop(d, "metadata"), "$ref")),
			  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
		CHECK_STR(json_string_value(json_object_get(gvk, "kind")), list_kind);
		CHECK_STR(json_string_value(json_object_get(gvk, "group")), k->group);
		CHECK_STR(json_string_value(json_object_get(json_object_get(prop(l, "items"), "items"), "$ref")), name);
	}
	CHECK_STR(model_openapi_kind_definition(o, KIND_POD), "io.k8s.api.core.v1.Pod");
	CHECK_STR(model_openapi_list_definition(o, KIND_ROUTE), "com.github.openshift.api.route.v1.RouteList");
	CHECK(model_openapi_kind_definition(o, KIND_COUNT) == NULL);
	model_openapi_free(o);
}

TEST(openapi_open_objects_are_marked)
{
	struct model_openapi *o = builtin();
	const json_t *spec;

	CHECK(o);
	spec = def_of(o, "io.k8s.api.core.v1.PodSpec");
	CHECK(json_is_true(json_object_get(prop(spec, "affinity"), "x-kubernetes-preserve-unknown-fields")));
	CHECK(!json_object_get(prop(spec, "nodeSelector"), "x-kubernetes-preserve-unknown-fields"));
	CHECK(!json_object_get(spec, "x-kubernetes-preserve-unknown-fields"));
	model_openapi_free(o);
}

/* load(files...) with one broken file: the error. */
static int load_with(const char *text, char *err, size_t errlen)
{
	struct embedded_file files[16];
	struct model_openapi *o = NULL;
	unsigned n = 0;
	int rc;

	for (unsigned i = 0; i < model_openapi_files_count && n < 15; i++)
		files[n++] = model_openapi_files[i];
	files[n++] = (struct embedded_file){ "broken.yaml", text, strlen(text) };
	rc = model_openapi_load(files, n, &o, err, errlen);
	model_openapi_free(o);
	return rc;
}

TEST(openapi_refuses_broken_schemas)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "a: {type: object, properties: {b: {$ref: nowhere}}}", "a.b: $ref names no definition" },
		{ "a: {type: array}", "a: an array needs items" },
		{ "a: {type: strin}", "a: type must be" },
		{ "a: {type: string, descripton: x}", "a: unknown keyword descripton" },
		{ "a: {type: object, required: [b], properties: {c: {type: string}}}", "a: required[0]" },
		{ "a: {$ref: io.k8s.api.core.v1.Pod, type: object}", "a: a $ref has no type" },
		{ "a: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {b: {type: string}}}",
		  "open" },
		{ "io.k8s.api.core.v1.Pod: {type: string}", "in core.yaml too" },
		{ "a: {type: array, items: {$ref: io.k8s.api.core.v1.ContainerPort}, x-kubernetes-patch-merge-key: nme}",
		  "merge key nme" },
		{ "a: {type: object, x-kubernetes-group-version-kind: [{group: '', version: v1, kind: Pod}]}",
		  "kind Pod is named by" },
		{ "a: [1", "openapi/broken.yaml: line" },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (load_with(cases[i].text, err, sizeof(err)) != -EINVAL || !strstr(err, cases[i].want)) {
			test_fail(__FILE__, __LINE__, "case %zu: want '%s', got '%s'", i, cases[i].want, err);
			return;
		}
	}
}

TEST(openapi_refuses_a_kind_without_definition)
{
	struct model_openapi *o = NULL;
	char err[256];

	CHECK_EQ(model_openapi_load(model_openapi_files, 1, &o, err, sizeof(err)), -EINVAL);	/* meta.yaml alone */
	CHECK_CONTAINS(err, "has no definition");
	CHECK(o == NULL);
}

/* ------------------------------------------------------------------ against patch_strategic.c */

#define MAX_STEPS 12

/* The way down to a list: fields, and for keyed lists on the way the one
 * item (by its merge key) to go into. */
struct step {
	const char *field;
	const char *key;	/* the field is a keyed list: into its item with key = keyval */
	json_t *keyval;
};

struct cross {
	const struct model_openapi *o;
	enum kind_id kind;
	struct step steps[MAX_STEPS];
	size_t n;
	int lists;		/* lists checked */
	char failure[1024];
};

static const json_t *resolve(const struct cross *c, const json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));

	return ref ? def_of(c->o, ref) : s;
}

/* {steps...: leaf}, leaf taken. */
static json_t *nest(const struct cross *c, json_t *leaf)
{
	for (size_t i = c->n; i-- > 0;) {
		json_t *o = json_object();

		if (c->steps[i].key) {
			json_object_set(leaf, c->steps[i].key, c->steps[i].keyval);
			leaf = json_pack("[o]", leaf);
		}
		json_object_set_new(o, c->steps[i].field, leaf);
		leaf = o;
	}
	return leaf;
}

static const json_t *dig(const struct cross *c, const json_t *doc)
{
	for (size_t i = 0; doc && i < c->n; i++) {
		doc = json_object_get(doc, c->steps[i].field);
		if (c->steps[i].key)
			doc = json_array_size(doc) == 1 ? json_array_get(doc, 0) : NULL;
	}
	return doc;
}

static json_t *key_value(const json_t *item_schema)
{
	return !strcmp(json_string_value(json_object_get(item_schema, "type")) ?: "", "integer") ? json_integer(80)
												: json_string("k");
}

/* Patches the list at the steps (the last is the list) and compares. */
static void check_list(struct cross *c, const json_t *list_schema)
{
	const json_t *items = resolve(c, json_object_get(list_schema, "items"));
	const char *key = json_string_value(json_object_get(list_schema, "x-kubernetes-patch-merge-key"));
	const char *strategy = json_string_value(json_object_get(list_schema, "x-kubernetes-patch-strategy"));
	bool merge = strategy && !strncmp(strategy, "merge", 5), objects = json_object_get(items, "properties") ||
		     json_is_true(json_object_get(items, "x-kubernetes-preserve-unknown-fields"));
	json_t *stored, *patch, *out = NULL, *a, *b;
	const json_t *got;
	char err[256], where[256] = "";
	bool ok;

	for (size_t i = 0; i < c->n; i++)
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%s%s", i ? "." : "", c->steps[i].field,
			 i + 1 < c->n && c->steps[i].key ? "[]" : "");
	a = objects ? json_pack("{s:s}", "x", "1") : json_string("a");
	b = objects ? json_pack("{s:s}", "y", "2") : json_string("b");
	if (key) {
		const json_t *key_schema = resolve(c, json_object_get(json_object_get(items, "properties"), key));

		json_object_set_new(a, key, key_value(key_schema ? key_schema : items));
		json_object_set_new(b, key, key_value(key_schema ? key_schema : items));
	}
	stored = nest(c, json_pack("[o]", a));
	patch = nest(c, json_pack("[o]", b));
	if (patch_apply(PATCH_STRATEGIC, c->kind, stored, patch, &out, err, sizeof(err)) != 0) {
		snprintf(c->failure, sizeof(c->failure), "%s %s: the patch fails: %s", kind_get(c->kind)->kind, where, err);
		goto out;
	}
	got = dig(c, out);
	if (key && merge)	/* one item, both members */
		ok = json_array_size(got) == 1 && json_object_get(json_array_get(got, 0), "x") &&
		     json_object_get(json_array_get(got, 0), "y");
	else if (merge)		/* a set: both values */
		ok = json_array_size(got) == 2;
	else			/* replaced: the patch's item only */
		ok = json_array_size(got) == 1 && json_equal(json_array_get(got, 0), json_array_get(dig(c, patch), 0));
	if (!ok) {
		char *s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);

		snprintf(c->failure, sizeof(c->failure), "%s %s: the schema says %s, the patch gives %s",
			 kind_get(c->kind)->kind, where, key && merge ? "merged by key" : merge ? "a set" : "replaced",
			 s ? s : "?");
		free(s);
	}
	c->lists++;
out:
	json_decref(stored);
	json_decref(patch);
	json_decref(out);
}

static void walk(struct cross *c, const json_t *schema, int depth)
{
	const json_t *s = resolve(c, schema), *v;
	const char *name;

	if (!s || depth > 10 || c->failure[0] || c->n >= MAX_STEPS)
		return;
	json_object_foreach(json_object_get(s, "properties"), name, v) {
		const json_t *r = resolve(c, v);
		const char *type = json_string_value(json_object_get(r, "type"));
		const char *key = json_string_value(json_object_get(r, "x-kubernetes-patch-merge-key"));

		c->steps[c->n++] = (struct step){ .field = name };
		if (type && !strcmp(type, "array")) {
			const json_t *items = resolve(c, json_object_get(r, "items"));

			check_list(c, r);
			if (key && json_object_get(items, "properties")) {	/* into the item */
				json_t *kv = key_value(resolve(c, json_object_get(json_object_get(items, "properties"), key)));

				c->steps[c->n - 1].key = key;
				c->steps[c->n - 1].keyval = kv;
				walk(c, items, depth + 1);
				json_decref(kv);
			}
		} else if (type && !strcmp(type, "object")) {
			walk(c, r, depth + 1);
		}
		c->n--;
	}
}

TEST(openapi_patch_annotations_match_strategic_merge)
{
	struct model_openapi *o = builtin();
	struct cross c = { 0 };

	CHECK(o);
	c.o = o;
	for (int id = 0; id < KIND_COUNT && !c.failure[0]; id++) {
		c.kind = (enum kind_id)id;
		c.n = 0;
		walk(&c, def_of(o, model_openapi_kind_definition(o, c.kind)), 0);
	}
	model_openapi_free(o);
	if (c.failure[0]) {
		test_fail(__FILE__, __LINE__, "%s", c.failure);
		return;
	}
	CHECK(c.lists > 100);	/* every kind's lists, ObjectMeta's in each */
}

/* ------------------------------------------------------------------ unknown fields */

static size_t unknown_of(const struct model_openapi *o, enum kind_id id, const char *text, int how, char *out,
			 size_t outlen)
{
	json_t *v = json_loads(text, JSON_ALLOW_NUL, NULL);
	size_t n;

	if (!v) {
		snprintf(out, outlen, "(not JSON)");
		return 999;
	}
	n = how == 2 ? model_openapi_unknown_json_patch(o, id, v, out, outlen)
		     : model_openapi_unknown_fields(o, id, v, how == 1, out, outlen);
	json_decref(v);
	return n;
}

TEST(openapi_unknown_fields_are_named)
{
	static const struct {
		enum kind_id kind;
		int how;	/* 0 object, 1 merge or strategic patch, 2 JSON Patch */
		const char *text, *want;
		size_t count;
	} cases[] = {
		{ KIND_POD, 0, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"y\"}},"
		  "\"spec\":{\"foo\":1,\"containers\":[{\"name\":\"c\",\"resources\":{\"any\":{\"thing\":1}},"
		  "\"ports\":[{\"containerPort\":80},{\"containerPort\":81,\"bogus\":true}]}]}}",
		  "spec.foo\nspec.containers[0].ports[1].bogus", 2 },
		{ KIND_POD, 0, "{\"spec\":{\"affinity\":{\"whatever\":{}},\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}", "", 0 },
		{ KIND_SERVICE, 0, "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":\"http\"}]},\"extra\":1}", "extra", 1 },
		{ KIND_HOSTSUBNET, 0, "{\"host\":\"n\",\"subnet\":\"10.0.0.0/23\",\"metadata\":{\"annotations\":{\"a\":\"b\"}}}", "", 0 },
		{ KIND_ROUTE, 0, "{\"spec\":{\"to\":{\"name\":\"s\",\"wieght\":1}}}", "spec.to.wieght", 1 },
		{ KIND_POD, 1, "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"}],\"containers\":[{\"name\":\"c\","
		  "\"$patch\":\"delete\"}],\"gone\":null,\"foo\":{}}}", "spec.foo", 1 },
		{ KIND_SERVICE, 1, "{\"metadata\":{\"labels\":{\"a\":null}},\"spec\":{\"$retainKeys\":[\"type\"]}}", "", 0 },
		{ KIND_POD, 2, "[{\"op\":\"add\",\"path\":\"/spec/foo\",\"value\":1},{\"op\":\"remove\",\"path\":\"/spec/bar\"},"
		  "{\"op\":\"replace\",\"path\":\"/spec/containers/0\",\"value\":{\"name\":\"c\",\"nope\":1}},"
		  "{\"op\":\"add\",\"path\":\"/metadata/labels/a~1b\",\"value\":\"x\"},"
		  "{\"op\":\"add\",\"path\":\"/spec/containers/-\",\"value\":{\"name\":\"d\"}},"
		  "{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/status/what\"}]",
		  "spec.foo\nspec.containers[0].nope\nstatus.what", 3 },
		{ KIND_POD, 2, "[{\"op\":\"add\",\"path\":\"/spec/affinity/a/b\",\"value\":{\"c\":1}}]", "", 0 },
	};
	struct model_openapi *o = builtin();
	char out[512];

	CHECK(o);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = unknown_of(o, cases[i].kind, cases[i].text, cases[i].how, out, sizeof(out));

		if (n != cases[i].count || strcmp(out, cases[i].want) != 0) {
			test_fail(__FILE__, __LINE__, "case %zu: %zu '%s', want %zu '%s'", i, n, out, cases[i].count,
				  cases[i].want);
			break;
		}
	}
	/* a short buffer: the count is exact, the names cut */
	CHECK_EQ(unknown_of(o, KIND_POD, "{\"a\":1,\"b\":2,\"cccccccccccccccc\":3}", 0, out, 6), 3);
	CHECK_STR(out, "a\nb");
	model_openapi_free(o);
}
