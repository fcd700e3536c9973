/*
 * openapi_serve_test.c — the OpenAPI endpoints as a client meets them: content
 * negotiation, ETags, 304, ?hash= (immutable, or 301 to the current one),
 * 404 and 406; what kubectl reads in the documents (each kind's paths with
 * their GVK, a PATCH's patch types, v3 references wrapped in allOf); and
 * the protobuf read back field by field (gnostic's numbers) into JSON that
 * must equal the JSON document's definitions and operations.
 */
#include "controller/openapi.h"
#include "lib/pb.h"
#include "lib/yaml.h"
#include "model/model.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct openapi *made(void)
{
	char err[512];
	struct openapi *o = openapi_create(err, sizeof(err));

	if (!o)
		test_fail(__FILE__, __LINE__, "openapi_create: %s", err);
	return o;
}

/* GET path: the answer. */
static struct openapi_answer get(const struct openapi *o, const char *path, const char *hash, const char *accept,
				 const char *inm)
{
	struct openapi_answer a;

	if (!openapi_lookup(o, path, hash, accept, inm, 1000000000, &a))
		a.code = -1;
	return a;
}

static json_t *parsed(const struct openapi_answer *a)
{
	return json_loadb(a->body, a->len, 0, NULL);
}

TEST(openapi_v2_negotiates_json_and_protobuf)
{
	struct openapi *o = made();
	struct openapi_answer a;

	CHECK(o);
	a = get(o, "/openapi/v2", NULL, NULL, NULL);
	CHECK_EQ(a.code, 200);
	CHECK_STR(a.content_type, "application/json");
	CHECK(a.body[0] == '{');
	CHECK_EQ(strlen(a.etag), 130);
	a = get(o, "/openapi/v2", NULL, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", NULL);
	CHECK_EQ(a.code, 200);
	CHECK_STR(a.content_type, OPENAPI_V2_PROTOBUF);
	CHECK(a.body[0] == 0x0a);	/* field 1 (swagger), length-delimited */
	a = get(o, "/openapi/v2", NULL, "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
		NULL);
	CHECK_STR(a.content_type, OPENAPI_V2_PROTOBUF);
	a = get(o, "/openapi/v2/", NULL, "text/html, application/*;q=0.2", NULL);
	CHECK_STR(a.content_type, "application/json");
	a = get(o, "/openapi/v2", NULL, "text/plain", NULL);
	CHECK_EQ(a.code, 406);
	a = get(o, "/openapi/v2", NULL, "application/json;q=0", NULL);
	CHECK_EQ(a.code, 406);
	openapi_destroy(o);
}

TEST(openapi_etags_and_304)
{
	struct openapi *o = made();
	struct openapi_answer a, b;
	char inm[200];

	CHECK(o);
	a = get(o, "/openapi/v2", NULL, NULL, NULL);
	b = get(o, "/openapi/v2", NULL, OPENAPI_V2_PROTOBUF, NULL);
	CHECK(strcmp(a.etag, b.etag) != 0);	/* each representation its own */
	b = get(o, "/openapi/v2", NULL, NULL, a.etag);
	CHECK_EQ(b.code, 304);
	CHECK(b.body == NULL);
	CHECK_STR(b.etag, a.etag);
	snprintf(inm, sizeof(inm), "\"abc\", W/%s", a.etag);
	CHECK_EQ(get(o, "/openapi/v2", NULL, NULL, inm).code, 304);
	CHECK_EQ(get(o, "/openapi/v2", NULL, NULL, "\"abc\"").code, 200);
	openapi_destroy(o);
}

TEST(openapi_v3_index_hashes_and_redirects)
{
	struct openapi *o = made();
	struct openapi_answer a;
	json_t *index;
	const char *url, *hash;
	char path[256];

	CHECK(o);
	a = get(o, "/openapi/v3", NULL, NULL, NULL);
	CHECK_EQ(a.code, 200);
	index = parsed(&a);
	CHECK(index);
	/* api/v1 and the six groups' versions */
	CHECK_EQ(json_object_size(json_object_get(index, "paths")), 7);
	CHECK(json_object_get(json_object_get(index, "paths"), "apis/network.weft.io/v1"));
	CHECK(json_object_get(json_object_get(index, "paths"), "apis/discovery.k8s.io/v1"));
	url = json_string_value(json_object_get(json_object_get(json_object_get(index, "paths"),
								 "apis/route.openshift.io/v1"), "serverRelativeURL"));
	CHECK(url && !strncmp(url, "/openapi/v3/apis/route.openshift.io/v1?hash=", 44));
	hash = url + 44;
	CHECK_EQ(strlen(hash), 128);
	snprintf(path, sizeof(path), "%.*s", (int)(strchr(url, '?') - url), url);
	a = get(o, path, hash, "application/json", NULL);
	CHECK_EQ(a.code, 200);
	CHECK(a.immutable);
	CHECK_STR(a.expires, "Mon, 09 Sep 2002 01:46:40 GMT");
	CHECK(!strncmp(a.etag + 1, hash, 128));
	a = get(o, path, NULL, NULL, NULL);
	CHECK(a.code == 200 && !a.immutable);
	a = get(o, path, "0123", NULL, NULL);
	CHECK_EQ(a.code, 301);
	CHECK_STR(a.location, url);
	CHECK_EQ(get(o, path, NULL, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", NULL).code, 406);
	CHECK_EQ(get(o, "/openapi/v3/apis/apps/v1", NULL, NULL, NULL).code, 404);
	CHECK_EQ(get(o, "/openapi/v3/api", NULL, NULL, NULL).code, 404);
	CHECK_EQ(get(o, "/openapi/v1", NULL, NULL, NULL).code, 404);
	CHECK_EQ(get(o, "/api/v1", NULL, NULL, NULL).code, -1);
	CHECK_EQ(get(o, "/openapix", NULL, NULL, NULL).code, -1);
	json_decref(index);
	openapi_destroy(o);
}

/* What kubectl explain (1.28, v3) follows: the paths' GVK, then the schema. */
TEST(openapi_v3_has_what_explain_follows)
{
	struct openapi *o = made();
	struct openapi_answer a;
	json_t *doc;
	const json_t *paths, *schemas, *pod, *spec;

	CHECK(o);
	a = get(o, "/openapi/v3/api/v1", NULL, NULL, NULL);
	doc = parsed(&a);
	CHECK(doc);
	paths = json_object_get(doc, "paths");
	schemas = json_object_get(json_object_get(doc, "components"), "schemas");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(json_object_get(
			  paths, "/api/v1/namespaces/{namespace}/pods"), "get"), "x-kubernetes-group-version-kind"), "kind")),
		  "Pod");
	CHECK(json_object_get(paths, "/api/v1/pods"));
	CHECK(json_object_get(paths, "/api/v1/nodes/{name}"));
	CHECK(!json_object_get(paths, "/api/v1/namespaces/{namespace}/nodes"));
	CHECK(json_object_get(json_object_get(paths, "/api/v1/namespaces/{namespace}/pods/{name}"), "patch"));
	pod = json_object_get(schemas, "io.k8s.api.core.v1.Pod");
	CHECK(pod);
	spec = json_object_get(json_object_get(pod, "properties"), "spec");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(spec, "allOf"), 0), "$ref")),
		  "#/components/schemas/io.k8s.api.core.v1.PodSpec");
	CHECK(json_object_get(schemas, "io.k8s.api.core.v1.ContainerPort"));	/* reached through PodSpec */
	CHECK(!json_object_get(schemas, "io.k8s.api.networking.v1.IngressSpec"));	/* another group's */
	json_decref(doc);
	/* a NetNamespace is only read: no post, put, patch or delete */
	a = get(o, "/openapi/v3/apis/network.openshift.io/v1", NULL, NULL, NULL);
	doc = parsed(&a);
	CHECK(doc);
	paths = json_object_get(doc, "paths");
	CHECK(json_object_get(json_object_get(paths, "/apis/network.openshift.io/v1/netnamespaces/{name}"), "get"));
	CHECK(!json_object_get(json_object_get(paths, "/apis/network.openshift.io/v1/netnamespaces/{name}"), "put"));
	CHECK(json_object_get(json_object_get(paths, "/apis/network.openshift.io/v1/hostsubnets/{name}"), "patch"));
	json_decref(doc);
	openapi_destroy(o);
}

/* ------------------------------------------------------------------ the protobuf read back */

static json_t *yaml_value(const uint8_t *b, size_t len)
{
	json_t **docs = NULL, *v = NULL;
	size_t n = 0;
	char err[128];

	if (yaml_decode_stream((const char *)b, len, &docs, &n, err, sizeof(err)) == 0 && n == 1)
		v = json_incref(docs[0]);
	yaml_docs_free(docs, n);
	return v;
}

/* Any{yaml 2} */
static json_t *any_value(const uint8_t *b, size_t len)
{
	const uint8_t *p = b;
	struct pb_field f;
	json_t *v = NULL;

	while (pb_read_next(&p, b + len, &f) == 1)
		if (f.number == 2 && f.wire == PB_BYTES)
			v = yaml_value(f.bytes, f.len);
	return v;
}

static json_t *text(const struct pb_field *f)
{
	return json_stringn((const char *)f->bytes, f->len);
}

/* NamedX{name 1, value 2} into o, the value read by fn. */
static void named(json_t *o, const struct pb_field *pair, json_t *(*fn)(const uint8_t *, size_t))
{
	const uint8_t *p = pair->bytes;
	struct pb_field f;
	char name[256] = "";
	json_t *v = NULL;

	while (pb_read_next(&p, pair->bytes + pair->len, &f) == 1) {
		if (f.number == 1)
			snprintf(name, sizeof(name), "%.*s", (int)f.len, (const char *)f.bytes);
		else if (f.number == 2)
			v = fn(f.bytes, f.len);
	}
	json_object_set_new(o, name, v ? v : json_null());
}

static json_t *schema_of(const uint8_t *b, size_t len);

/* the first (or only) field 1 of a wrapper message, read by fn; bool 2 as is */
static json_t *wrapped(const uint8_t *b, size_t len, bool many)
{
	const uint8_t *p = b;
	struct pb_field f;
	json_t *list = json_array();

	while (pb_read_next(&p, b + len, &f) == 1) {
		if (f.number == 2 && f.wire == PB_VARINT) {
			json_decref(list);
			return json_boolean(f.value);
		}
		json_array_append_new(list, f.wire == PB_BYTES && many == false ? schema_of(f.bytes, f.len) : text(&f));
	}
	if (json_array_size(list) == 1) {
		json_t *one = json_incref(json_array_get(list, 0));

		json_decref(list);
		return one;
	}
	return list;
}

static json_t *schema_of(const uint8_t *b, size_t len)
{
	const uint8_t *p = b, *q;
	struct pb_field f, g;
	json_t *s = json_object();

	while (pb_read_next(&p, b + len, &f) == 1) {
		json_t *list;

		switch (f.number) {
		case 1: json_object_set_new(s, "$ref", text(&f)); break;
		case 2: json_object_set_new(s, "format", text(&f)); break;
		case 4: json_object_set_new(s, "description", text(&f)); break;
		case 19:
		case 20:
			list = json_object_get(s, f.number == 19 ? "required" : "enum");
			if (!list)
				json_object_set_new(s, f.number == 19 ? "required" : "enum", list = json_array());
			json_array_append_new(list, f.number == 19 ? text(&f) : any_value(f.bytes, f.len));
			break;
		case 21: json_object_set_new(s, "additionalProperties", wrapped(f.bytes, f.len, false)); break;
		case 22: json_object_set_new(s, "type", wrapped(f.bytes, f.len, true)); break;
		case 23: json_object_set_new(s, "items", wrapped(f.bytes, f.len, false)); break;
		case 25:
			list = json_object();
			q = f.bytes;
			while (pb_read_next(&q, f.bytes + f.len, &g) == 1)
				named(list, &g, schema_of);
			json_object_set_new(s, "properties", list);
			break;
		case 31: named(s, &f, any_value); break;
		default: json_object_set_new(s, "?", json_integer(f.number));
		}
	}
	return s;
}

/* Operation: operationId 5, consumes 7, vendor 13 (what kubectl reads). */
static json_t *operation_of(const uint8_t *b, size_t len)
{
	const uint8_t *p = b;
	struct pb_field f;
	json_t *op = json_object();

	while (pb_read_next(&p, b + len, &f) == 1) {
		if (f.number == 5)
			json_object_set_new(op, "operationId", text(&f));
		else if (f.number == 7) {
			if (!json_object_get(op, "consumes"))
				json_object_set_new(op, "consumes", json_array());
			json_array_append_new(json_object_get(op, "consumes"), text(&f));
		} else if (f.number == 13)
			named(op, &f, any_value);
	}
	return op;
}

/* PathItem: get 2, put 3, post 4, delete 5, patch 8. */
static json_t *path_item_of(const uint8_t *b, size_t len)
{
	static const char *const methods[9] = { [2] = "get", [3] = "put", [4] = "post", [5] = "delete", [8] = "patch" };
	const uint8_t *p = b;
	struct pb_field f;
	json_t *item = json_object();

	while (pb_read_next(&p, b + len, &f) == 1)
		if (f.number < 9 && methods[f.number])
			json_object_set_new(item, methods[f.number], operation_of(f.bytes, f.len));
	return item;
}

/* The JSON document's operations, cut to what operation_of reads. */
static json_t *operations_cut(const json_t *paths)
{
	json_t *out = json_object(), *item, *op;
	const char *path, *method, *key;
	json_t *v;

	json_object_foreach((json_t *)paths, path, item) {
		json_t *cut = json_object();

		json_object_foreach(item, method, op) {
			json_t *o;

			if (!strcmp(method, "parameters"))
				continue;
			o = json_object();
			json_object_foreach(op, key, v)
				if (!strcmp(key, "operationId") || !strncmp(key, "x-", 2) ||
				    (!strcmp(key, "consumes") && json_array_size(v)))
					json_object_set(o, key, v);
			json_object_set_new(cut, method, o);
		}
		json_object_set_new(out, path, cut);
	}
	return out;
}

TEST(openapi_protobuf_reads_back_as_the_json)
{
	struct openapi *o = made();
	struct openapi_answer a, b;
	json_t *doc, *defs = json_object(), *paths = json_object(), *want_ops;
	const uint8_t *p, *q;
	struct pb_field f, g;
	char swagger[8] = "";
	size_t n = 0;

	CHECK(o);
	a = get(o, "/openapi/v2", NULL, NULL, NULL);
	b = get(o, "/openapi/v2", NULL, OPENAPI_V2_PROTOBUF, NULL);
	doc = parsed(&a);
	CHECK(doc);
	p = (const uint8_t *)b.body;
	while (pb_read_next(&p, (const uint8_t *)b.body + b.len, &f) == 1) {
		q = f.bytes;
		if (f.number == 1)
			snprintf(swagger, sizeof(swagger), "%.*s", (int)f.len, (const char *)f.bytes);
		else if (f.number == 9)	/* Definitions{additional_properties 1} */
			while (pb_read_next(&q, f.bytes + f.len, &g) == 1)
				named(defs, &g, schema_of), n++;
		else if (f.number == 8)	/* Paths{path 2} */
			while (pb_read_next(&q, f.bytes + f.len, &g) == 1)
				if (g.number == 2)
					named(paths, &g, path_item_of);
	}
	CHECK(p == (const uint8_t *)b.body + b.len);	/* read to the end, nothing malformed */
	CHECK_STR(swagger, "2.0");
	CHECK(n > 60);
	want_ops = operations_cut(json_object_get(doc, "paths"));
	if (!json_equal(defs, json_object_get(doc, "definitions")) || !json_equal(paths, want_ops)) {
		const char *name;
		json_t *v;

		json_object_foreach(json_object_get(doc, "definitions"), name, v)
			if (!json_equal(v, json_object_get(defs, name))) {
				char *x = json_dumps(json_object_get(defs, name), JSON_COMPACT | JSON_SORT_KEYS);

				test_fail(__FILE__, __LINE__, "definition %s reads back as %.300s", name, x);
				free(x);
				break;
			}
		if (!test_failed())
			test_fail(__FILE__, __LINE__, "the paths read back differ");
	}
	json_decref(want_ops);
	json_decref(defs);
	json_decref(paths);
	json_decref(doc);
	openapi_destroy(o);
}

/* ------------------------------------------------------------------ fieldValidation */

TEST(openapi_field_validation_modes)
{
	struct openapi *o = made();
	const struct kind_info *pod = kind_get(KIND_POD);
	json_t *body = json_loads("{\"spec\":{\"foo\":1,\"containers\":[{\"name\":\"c\",\"a\\\"b\\n\":2}]}}", 0, NULL);
	json_t *ok = json_loads("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", 0, NULL);
	json_t *ops = json_loads("[{\"op\":\"add\",\"path\":\"/spec/bar\",\"value\":1}]", 0, NULL);
	char *w = (char *)"x", msg[1024];

	CHECK(o && body && ok && ops);
	CHECK_EQ(openapi_field_validation(o, NULL, pod, OPENAPI_OBJECT, body, &w, msg, sizeof(msg)), 0);
	CHECK(w == NULL);
	CHECK_EQ(openapi_field_validation(o, "Ignore", pod, OPENAPI_OBJECT, body, &w, msg, sizeof(msg)), 0);
	CHECK_EQ(openapi_field_validation(o, "Strict", pod, OPENAPI_OBJECT, ok, &w, msg, sizeof(msg)), 0);
	CHECK_EQ(openapi_field_validation(o, "Strict", pod, OPENAPI_OBJECT, body, &w, msg, sizeof(msg)), -EINVAL);
	CHECK_STR(msg, "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field "
		       "\"spec.foo\", unknown field \"spec.containers[0].a\"b?\"");
	CHECK_EQ(openapi_field_validation(o, "Strict", pod, OPENAPI_JSON_PATCH, ops, &w, msg, sizeof(msg)), -EINVAL);
	CHECK_CONTAINS(msg, "unknown field \"spec.bar\"");
	CHECK_EQ(openapi_field_validation(o, "Warn", pod, OPENAPI_OBJECT, body, &w, msg, sizeof(msg)), 0);
	/* one header value a line; the path's quote escaped, its newline '?' */
	CHECK_STR(w, "299 - \"unknown field \\\"spec.foo\\\"\"\n299 - \"unknown field \\\"spec.containers[0].a\\\"b?\\\"\"");
	free(w);
	CHECK_EQ(openapi_field_validation(o, "strict", pod, OPENAPI_OBJECT, ok, &w, msg, sizeof(msg)), -EINVAL);
	CHECK_STR(msg, "fieldValidation: Unsupported value: \"strict\": supported values: \"Ignore\", \"Strict\", \"Warn\"");
	json_decref(body);
	json_decref(ok);
	json_decref(ops);
	openapi_destroy(o);
}
