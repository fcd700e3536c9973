/*
 * status_json_test.c — the Status objects of each reason and their
 * details, built the way the API builds them (status_set, then
 * status_json_new with the request's kind and name).  The 429 and 504
 * cases are here because a test cannot provoke them without a load or a
 * race: their details and (status.retry_after, which the API sends as
 * Retry-After) are checked on the builder.
 */
#include "controller/status_json.h"
#include "test.h"

#include <string.h>

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return json_string_value(b ? json_object_get(v, b) : v);
}

static json_t *build(int code, const char *reason, const char *message, const struct kind_info *k,
		     const char *name, int retry_after)
{
	struct status st;

	status_set(&st, code, reason, "%s", message);
	st.retry_after = retry_after;
	return status_json_new(&st, st.message, k, name);
}

TEST(status_not_found_from_message_or_route)
{
	const struct kind_info *pods = kind_get(KIND_POD), *routes = kind_get(KIND_ROUTE);
	json_t *o = build(404, "NotFound", "namespaces \"red\" not found", pods, "web", 0);

	CHECK(o);
	CHECK_STR(str_at(o, "kind", NULL), "Status");
	CHECK_STR(str_at(o, "status", NULL), "Failure");
	CHECK_EQ(json_integer_value(json_object_get(o, "code")), 404);
	/* the thing missing is the namespace, not the pod of the path */
	CHECK_STR(str_at(o, "details", "kind"), "namespaces");
	CHECK_STR(str_at(o, "details", "name"), "red");
	CHECK(json_object_get(json_object_get(o, "details"), "group") == NULL);	/* core: omitted */
	json_decref(o);

	o = build(404, "NotFound", "routes \"r\" not found", routes, "r", 0);
	CHECK_STR(str_at(o, "details", "group"), "route.openshift.io");
	json_decref(o);

	/* a message of another form: the request's own object */
	o = build(409, "Conflict", "status.podIP 10.128.0.7 is held by pod red/b", pods, "a", 0);
	CHECK_STR(str_at(o, "details", "kind"), "pods");
	CHECK_STR(str_at(o, "details", "name"), "a");
	json_decref(o);

	o = build(409, "AlreadyExists", "pods \"web\" already exists", pods, "web", 0);
	CHECK_STR(str_at(o, "details", "kind"), "pods");
	CHECK_STR(str_at(o, "details", "name"), "web");
	json_decref(o);

	/* a path that names nothing: no details */
	o = build(404, "NotFound", "the server could not find the requested resource (/x)", NULL, NULL, 0);
	CHECK(json_object_get(o, "details") == NULL);
	json_decref(o);
}

TEST(status_invalid_causes)
{
	json_t *o = build(422, "Invalid", "metadata.name: 'Bad_Name' is not a valid DNS-1123 subdomain\n"
			  "spec.containers[0].name: required", kind_get(KIND_POD), "Bad_Name", 0);
	json_t *causes = json_object_get(json_object_get(o, "details"), "causes");

	CHECK(o);
	CHECK_STR(str_at(o, "details", "kind"), "Pod");	/* the Kind, as upstream's NewInvalid */
	CHECK_STR(str_at(o, "details", "name"), "Bad_Name");
	CHECK_EQ(json_array_size(causes), 2);
	CHECK_STR(str_at(json_array_get(causes, 1), "field", NULL), "spec.containers[0].name");
	CHECK_STR(str_at(json_array_get(causes, 1), "reason", NULL), "FieldValueRequired");
	json_decref(o);
}

TEST(status_retry_after)
{
	json_t *o = build(429, "TooManyRequests", "too many requests, please try again later", NULL, NULL, 1);

	CHECK(o);
	CHECK_EQ(json_integer_value(json_object_get(json_object_get(o, "details"), "retryAfterSeconds")), 1);
	CHECK(json_object_get(json_object_get(o, "details"), "causes") == NULL);
	json_decref(o);

	o = build(504, "Timeout", "Too large resource version: 9, current: 3", kind_get(KIND_POD), NULL, 1);
	CHECK_EQ(json_integer_value(json_object_get(json_object_get(o, "details"), "retryAfterSeconds")), 1);
	CHECK_STR(str_at(json_array_get(json_object_get(json_object_get(o, "details"), "causes"), 0), "reason", NULL),
		  "ResourceVersionTooLarge");
	json_decref(o);
}

TEST(status_without_details)
{
	static const struct { int code; const char *reason; } plain[] = {
		{ 410, "Expired" }, { 413, "RequestEntityTooLarge" }, { 400, "BadRequest" }, { 500, "InternalError" },
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		json_t *o = build(plain[i].code, plain[i].reason, "pods \"x\" whatever", kind_get(KIND_POD), "x", 0);

		CHECK(o && json_object_get(o, "details") == NULL);
		CHECK_STR(str_at(o, "reason", NULL), plain[i].reason);
		json_decref(o);
	}
}
