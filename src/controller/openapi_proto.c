/*
 * openapi_proto.c — a v2 document as gnostic's openapi.v2.Document (see
 * openapi_proto.h), by tables: each message the documents use is a table
 * of its JSON members, their field numbers (OpenAPIv2.proto's) and how
 * each is written.  Fields are written in number order, the entries of a
 * map in key order.
 *
 *   Document  swagger 1, info 2, paths 8 (Paths: path 2 = NamedPathItem),
 *             definitions 9 (Definitions: additional_properties 1 =
 *             NamedSchema), vendor_extension 16
 *   PathItem  get 2, put 3, post 4, delete 5, patch 8, parameters 9
 *   Operation tags 1, description 3, operation_id 5, produces 6,
 *             consumes 7, parameters 8, responses 9, schemes 10,
 *             vendor_extension 13
 *   Schema    _ref 1, format 2, description 4, required 19, enum 20,
 *             additional_properties 21, type 22, items 23, all_of 24,
 *             properties 25, vendor_extension 31
 *   a parameter: ParametersItem{parameter 1: Parameter{body_parameter 1 |
 *             non_body_parameter 2: NonBodyParameter{query 3 | path 4}}}
 *   a response: Responses{response_code 1: NamedResponseValue{name 1,
 *             value 2: ResponseValue{response 1: Response{description 1,
 *             schema 2: SchemaItem{schema 1}}}}}
 *   Named*: name 1, value 2;  Any: yaml 2
 */
#include "controller/openapi_proto.h"
#include "lib/yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64		/* the documents' schemas nest far less */

enum how {
	STR,		/* string */
	BOOL,		/* bool */
	NUM,		/* double */
	INT,		/* int64 */
	STRS,		/* repeated string, from a list of strings */
	ANY,		/* Any{yaml} of the value */
	ANYS,		/* repeated Any, from a list */
	MSG,		/* a message, from an object */
	NAMED,		/* a wrapper message whose field `inner` repeats Named{name, value: msg} */
	SPECIAL,	/* written by the message's own function */
};

struct message;

struct member {
	const char *json;
	uint32_t number;
	enum how how;
	const struct message *msg;	/* MSG, NAMED: the (value) message */
	uint32_t inner;			/* NAMED: the repeated field in the wrapper */
};

struct ctx;
typedef int (*special_fn)(struct ctx *c, const struct member *m, const json_t *v);

struct message {
	const char *name;
	const struct member *members;
	size_t n;
	uint32_t vendor;	/* the vendor_extension field, 0: none */
	special_fn special;	/* for SPECIAL members */
};

struct ctx {
	struct pb *b;
	char *err;
	size_t errlen;
	char path[512];
	int depth;
};

__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->errlen)
		snprintf(c->err, c->errlen, "%s: %s", c->path[0] ? c->path : "(document)", what);
	return -EINVAL;
}

static size_t push(struct ctx *c, const char *name)
{
	size_t mark = strlen(c->path);

	snprintf(c->path + mark, sizeof(c->path) - mark, "%s%s", mark ? "." : "", name);
	return mark;
}

static void pop(struct ctx *c, size_t mark)
{
	c->path[mark] = 0;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of o, sorted (malloc'd array of borrowed keys), or NULL with
 * *n 0 for an empty object. */
static const char **sorted_keys(const json_t *o, size_t *n)
{
	const char **keys, *k;
	const json_t *v;
	size_t i = 0;

	*n = json_object_size(o);
	if (!*n)
		return NULL;
	keys = malloc(*n * sizeof(*keys));
	if (!keys)
		return NULL;
	json_object_foreach((json_t *)o, k, v)
		keys[i++] = k;
	qsort(keys, *n, sizeof(*keys), cmp_keys);
	return keys;
}

static int write_any(struct ctx *c, uint32_t number, const json_t *v)
{
	char *yaml = yaml_emit(v);
	size_t m;

	if (!yaml)
		return -ENOMEM;
	m = pb_open(c->b, number);
	pb_put_string(c->b, 2, yaml);
	pb_close(c->b, m);
	free(yaml);
	return 0;
}

static int write_message(struct ctx *c, const struct message *msg, const json_t *o);

/* A message field: number, holding msg written from o. */
static int write_sub(struct ctx *c, uint32_t number, const struct message *msg, const json_t *o)
{
	size_t m = pb_open(c->b, number);
	int rc = write_message(c, msg, o);

	pb_close(c->b, m);
	return rc;
}

/* A wrapper at number whose field inner repeats Named{name 1, value 2: msg}. */
static int write_named(struct ctx *c, uint32_t number, uint32_t inner, const struct message *msg, const json_t *o)
{
	size_t n, outer, mark;
	const char **keys;
	int rc = 0;

	if (!json_is_object(o))
		return fail(c, "not a map");
	keys = sorted_keys(o, &n);
	if (n && !keys)
		return -ENOMEM;
	outer = pb_open(c->b, number);
	for (size_t i = 0; !rc && i < n; i++) {
		size_t pair = pb_open(c->b, inner);

		pb_put_string(c->b, 1, keys[i]);
		mark = push(c, keys[i]);
		rc = write_sub(c, 2, msg, json_object_get(o, keys[i]));
		pop(c, mark);
		pb_close(c->b, pair);
	}
	pb_close(c->b, outer);
	free(keys);
	return rc;
}

static int write_member(struct ctx *c, const struct message *msg, const struct member *m, const json_t *v)
{
	const json_t *x;
	size_t i;
	int rc;

	switch (m->how) {
	case STR:
		if (!json_is_string(v))
			return fail(c, "not a string");
		pb_put_string(c->b, m->number, json_string_value(v));
		return 0;
	case BOOL:
		if (!json_is_boolean(v))
			return fail(c, "not a boolean");
		pb_put_bool(c->b, m->number, json_is_true(v));
		return 0;
	case NUM:
		if (!json_is_number(v))
			return fail(c, "not a number");
		pb_put_double(c->b, m->number, json_number_value(v));
		return 0;
	case INT:
		if (!json_is_integer(v))
			return fail(c, "not an integer");
		pb_put_varint(c->b, m->number, (uint64_t)json_integer_value(v));
		return 0;
	case STRS:
		if (!json_is_array(v))
			return fail(c, "not a list");
		json_array_foreach(v, i, x) {
			if (!json_is_string(x))
				return fail(c, "item %zu is not a string", i);
			pb_put_string(c->b, m->number, json_string_value(x));
		}
		return 0;
	case ANY:
		return write_any(c, m->number, v);
	case ANYS:
		if (!json_is_array(v))
			return fail(c, "not a list");
		json_array_foreach(v, i, x)
			if ((rc = write_any(c, m->number, x)))
				return rc;
		return 0;
	case MSG:
		return write_sub(c, m->number, m->msg, v);
	case NAMED:
		return write_named(c, m->number, m->inner, m->msg, v);
	default:
		return msg->special(c, m, v);
	}
}

static const struct member *member_of(const struct message *msg, const char *key)
{
	for (size_t j = 0; j < msg->n; j++)
		if (!strcmp(msg->members[j].json, key))
			return &msg->members[j];
	return NULL;
}

/* o's members in field-number order (as protobuf writers do), then its
 * vendor extensions in key order; a member the message lacks is an error. */
static int write_message(struct ctx *c, const struct message *msg, const json_t *o)
{
	size_t n, mark;
	const char **keys;
	int rc = 0;

	if (!json_is_object(o))
		return fail(c, "a %s must be a map", msg->name);
	if (++c->depth > MAX_DEPTH) {
		c->depth--;
		return fail(c, "nested deeper than %d", MAX_DEPTH);
	}
	keys = sorted_keys(o, &n);
	if (n && !keys) {
		c->depth--;
		return -ENOMEM;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		mark = push(c, keys[i]);
		if (!strncmp(keys[i], "x-", 2) ? !msg->vendor : !member_of(msg, keys[i]))
			rc = fail(c, "a %s has no such member", msg->name);
		pop(c, mark);
	}
	for (size_t j = 0; !rc && j < msg->n; j++) {
		const json_t *v = json_object_get(o, msg->members[j].json);

		if (!v)
			continue;
		mark = push(c, msg->members[j].json);
		rc = write_member(c, msg, &msg->members[j], v);
		pop(c, mark);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		size_t pair;

		if (strncmp(keys[i], "x-", 2) != 0)
			continue;
		mark = push(c, keys[i]);
		pair = pb_open(c->b, msg->vendor);
		pb_put_string(c->b, 1, keys[i]);
		rc = write_any(c, 2, json_object_get(o, keys[i]));
		pb_close(c->b, pair);
		pop(c, mark);
	}
	free(keys);
	c->depth--;
	return rc;
}

/* ------------------------------------------------------------------ the messages */

static int schema_special(struct ctx *c, const struct member *m, const json_t *v);
static int operation_special(struct ctx *c, const struct member *m, const json_t *v);

static const struct member schema_members[] = {
	{ "$ref", 1, STR, NULL, 0 },
	{ "format", 2, STR, NULL, 0 },
	{ "title", 3, STR, NULL, 0 },
	{ "description", 4, STR, NULL, 0 },
	{ "default", 5, ANY, NULL, 0 },
	{ "multipleOf", 6, NUM, NULL, 0 },
	{ "maximum", 7, NUM, NULL, 0 },
	{ "exclusiveMaximum", 8, BOOL, NULL, 0 },
	{ "minimum", 9, NUM, NULL, 0 },
	{ "exclusiveMinimum", 10, BOOL, NULL, 0 },
	{ "maxLength", 11, INT, NULL, 0 },
	{ "minLength", 12, INT, NULL, 0 },
	{ "pattern", 13, STR, NULL, 0 },
	{ "maxItems", 14, INT, NULL, 0 },
	{ "minItems", 15, INT, NULL, 0 },
	{ "uniqueItems", 16, BOOL, NULL, 0 },
	{ "maxProperties", 17, INT, NULL, 0 },
	{ "minProperties", 18, INT, NULL, 0 },
	{ "required", 19, STRS, NULL, 0 },
	{ "enum", 20, ANYS, NULL, 0 },
	{ "additionalProperties", 21, SPECIAL, NULL, 0 },
	{ "type", 22, SPECIAL, NULL, 0 },
	{ "items", 23, SPECIAL, NULL, 0 },
	{ "allOf", 24, SPECIAL, NULL, 0 },
	{ "properties", 25, SPECIAL, NULL, 0 },
	{ "discriminator", 26, STR, NULL, 0 },
	{ "readOnly", 27, BOOL, NULL, 0 },
	{ "example", 30, ANY, NULL, 0 },
};
static const struct message schema = { "Schema", schema_members, sizeof(schema_members) / sizeof(schema_members[0]),
				       31, schema_special };

static int schema_special(struct ctx *c, const struct member *m, const json_t *v)
{
	const json_t *x;
	size_t i, mark;
	int rc = 0;

	switch (m->number) {
	case 21:	/* AdditionalPropertiesItem{schema 1 | boolean 2} */
		mark = pb_open(c->b, 21);
		if (json_is_boolean(v))
			pb_put_bool(c->b, 2, json_is_true(v));
		else
			rc = write_sub(c, 1, &schema, v);
		pb_close(c->b, mark);
		return rc;
	case 22:	/* TypeItem{repeated value 1} */
		mark = pb_open(c->b, 22);
		if (json_is_string(v))
			pb_put_string(c->b, 1, json_string_value(v));
		else
			rc = write_member(c, &schema, &(struct member){ "type", 1, STRS, NULL, 0 }, v);
		pb_close(c->b, mark);
		return rc;
	case 23:	/* ItemsItem{repeated schema 1} */
		mark = pb_open(c->b, 23);
		if (json_is_array(v)) {
			json_array_foreach(v, i, x)
				if ((rc = write_sub(c, 1, &schema, x)))
					break;
		} else {
			rc = write_sub(c, 1, &schema, v);
		}
		pb_close(c->b, mark);
		return rc;
	case 24:	/* repeated Schema */
		if (!json_is_array(v))
			return fail(c, "not a list");
		json_array_foreach(v, i, x)
			if ((rc = write_sub(c, 24, &schema, x)))
				return rc;
		return 0;
	default:	/* 25: Properties{repeated NamedSchema 1} */
		return write_named(c, 25, 1, &schema, v);
	}
}

static const struct member info_members[] = {
	{ "title", 1, STR, NULL, 0 },
	{ "version", 2, STR, NULL, 0 },
	{ "description", 3, STR, NULL, 0 },
};
static const struct message info = { "Info", info_members, 3, 7, NULL };

/* Parameters: the sub-schema messages of NonBodyParameter share their
 * leading members but not their numbers past `name`. */
static const struct member body_param_members[] = {
	{ "description", 1, STR, NULL, 0 },
	{ "name", 2, STR, NULL, 0 },
	{ "in", 3, STR, NULL, 0 },
	{ "required", 4, BOOL, NULL, 0 },
	{ "schema", 5, MSG, &schema, 0 },
};
static const struct message body_param = { "BodyParameter", body_param_members, 5, 6, NULL };

static const struct member query_param_members[] = {
	{ "required", 1, BOOL, NULL, 0 },
	{ "in", 2, STR, NULL, 0 },
	{ "description", 3, STR, NULL, 0 },
	{ "name", 4, STR, NULL, 0 },
	{ "allowEmptyValue", 5, BOOL, NULL, 0 },
	{ "type", 6, STR, NULL, 0 },
	{ "format", 7, STR, NULL, 0 },
	{ "collectionFormat", 9, STR, NULL, 0 },
	{ "default", 10, ANY, NULL, 0 },
	{ "uniqueItems", 20, BOOL, NULL, 0 },
	{ "enum", 21, ANYS, NULL, 0 },
};
static const struct message query_param = { "QueryParameterSubSchema", query_param_members, 11, 23, NULL };

static const struct member path_param_members[] = {
	{ "required", 1, BOOL, NULL, 0 },
	{ "in", 2, STR, NULL, 0 },
	{ "description", 3, STR, NULL, 0 },
	{ "name", 4, STR, NULL, 0 },
	{ "type", 5, STR, NULL, 0 },
	{ "format", 6, STR, NULL, 0 },
	{ "collectionFormat", 8, STR, NULL, 0 },
	{ "default", 9, ANY, NULL, 0 },
	{ "uniqueItems", 19, BOOL, NULL, 0 },
	{ "enum", 20, ANYS, NULL, 0 },
};
static const struct message path_param = { "PathParameterSubSchema", path_param_members, 10, 22, NULL };

/* One ParametersItem (field number) from a parameter object. */
static int write_parameter(struct ctx *c, uint32_t number, const json_t *p)
{
	const char *in = json_string_value(json_object_get(p, "in"));
	size_t item, param, nonbody;
	int rc;

	item = pb_open(c->b, number);
	param = pb_open(c->b, 1);
	if (in && !strcmp(in, "body")) {
		rc = write_sub(c, 1, &body_param, p);
	} else if (in && (!strcmp(in, "query") || !strcmp(in, "path"))) {
		nonbody = pb_open(c->b, 2);
		rc = !strcmp(in, "query") ? write_sub(c, 3, &query_param, p) : write_sub(c, 4, &path_param, p);
		pb_close(c->b, nonbody);
	} else {
		rc = fail(c, "a parameter in %s", in ? in : "(nowhere)");
	}
	pb_close(c->b, param);
	pb_close(c->b, item);
	return rc;
}

static int write_parameters(struct ctx *c, uint32_t number, const json_t *v)
{
	const json_t *p;
	size_t i;
	int rc;

	if (!json_is_array(v))
		return fail(c, "not a list");
	json_array_foreach(v, i, p)
		if ((rc = write_parameter(c, number, p)))
			return rc;
	return 0;
}

static const struct member response_members[] = {
	{ "description", 1, STR, NULL, 0 },
	{ "schema", 2, SPECIAL, NULL, 0 },
};
static int response_special(struct ctx *c, const struct member *m, const json_t *v)
{
	size_t mark = pb_open(c->b, 2);	/* SchemaItem{schema 1} */
	int rc = write_sub(c, 1, &schema, v);

	(void)m;
	pb_close(c->b, mark);
	return rc;
}
static const struct message response = { "Response", response_members, 2, 5, response_special };

/* Responses{response_code 1: NamedResponseValue{name, value: ResponseValue{response 1}}} */
static int write_responses(struct ctx *c, const json_t *v)
{
	size_t n, outer, mark;
	const char **keys;
	int rc = 0;

	if (!json_is_object(v))
		return fail(c, "not a map");
	keys = sorted_keys(v, &n);
	if (n && !keys)
		return -ENOMEM;
	outer = pb_open(c->b, 9);
	for (size_t i = 0; !rc && i < n; i++) {
		size_t pair = pb_open(c->b, 1), value;

		pb_put_string(c->b, 1, keys[i]);
		value = pb_open(c->b, 2);
		mark = push(c, keys[i]);
		rc = write_sub(c, 1, &response, json_object_get(v, keys[i]));
		pop(c, mark);
		pb_close(c->b, value);
		pb_close(c->b, pair);
	}
	pb_close(c->b, outer);
	free(keys);
	return rc;
}

static const struct member operation_members[] = {
	{ "tags", 1, STRS, NULL, 0 },
	{ "summary", 2, STR, NULL, 0 },
	{ "description", 3, STR, NULL, 0 },
	{ "operationId", 5, STR, NULL, 0 },
	{ "produces", 6, STRS, NULL, 0 },
	{ "consumes", 7, STRS, NULL, 0 },
	{ "parameters", 8, SPECIAL, NULL, 0 },
	{ "responses", 9, SPECIAL, NULL, 0 },
	{ "schemes", 10, STRS, NULL, 0 },
	{ "deprecated", 11, BOOL, NULL, 0 },
};
static const struct message operation = { "Operation", operation_members, 10, 13, operation_special };

static int operation_special(struct ctx *c, const struct member *m, const json_t *v)
{
	return m->number == 8 ? write_parameters(c, 8, v) : write_responses(c, v);
}

static int path_item_special(struct ctx *c, const struct member *m, const json_t *v)
{
	return write_parameters(c, m->number, v);
}

static const struct member path_item_members[] = {
	{ "$ref", 1, STR, NULL, 0 },
	{ "get", 2, MSG, &operation, 0 },
	{ "put", 3, MSG, &operation, 0 },
	{ "post", 4, MSG, &operation, 0 },
	{ "delete", 5, MSG, &operation, 0 },
	{ "options", 6, MSG, &operation, 0 },
	{ "head", 7, MSG, &operation, 0 },
	{ "patch", 8, MSG, &operation, 0 },
	{ "parameters", 9, SPECIAL, NULL, 0 },
};
static const struct message path_item = { "PathItem", path_item_members, 9, 10, path_item_special };

static const struct member document_members[] = {
	{ "swagger", 1, STR, NULL, 0 },
	{ "info", 2, MSG, &info, 0 },
	{ "host", 3, STR, NULL, 0 },
	{ "basePath", 4, STR, NULL, 0 },
	{ "schemes", 5, STRS, NULL, 0 },
	{ "consumes", 6, STRS, NULL, 0 },
	{ "produces", 7, STRS, NULL, 0 },
	{ "paths", 8, NAMED, &path_item, 2 },
	{ "definitions", 9, NAMED, &schema, 1 },
};
static const struct message document = { "Document", document_members, 9, 16, NULL };

int openapi_proto_v2(const json_t *doc, struct pb *out, char *err, size_t errlen)
{
	struct ctx c = { .b = out, .err = err, .errlen = errlen };
	int rc = write_message(&c, &document, doc);

	if (rc)
		return rc;
	return pb_error(out);
}
