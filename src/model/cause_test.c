/*
 * cause_test.c — model_error_causes: the field and reason of each line of
 * the validators' own error texts (produced by model_validate here, not
 * written by hand), and the edge cases of the line reader.
 */
#include "model/model.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static char err[4096];

/* the cause at i of text: its field ("" none), reason and message */
static bool cause_is(const json_t *causes, size_t i, const char *field, const char *reason, const char *message)
{
	const json_t *c = json_array_get(causes, i);
	const char *f = json_string_value(json_object_get(c, "field"));

	return c && strcmp(f ? f : "", field) == 0 &&
	       strcmp(json_string_value(json_object_get(c, "reason")), reason) == 0 &&
	       (!message || strcmp(json_string_value(json_object_get(c, "message")), message) == 0);
}

static json_t *causes_of_body(const char *body)
{
	json_t *obj = json_loads(body, 0, NULL);

	err[0] = 0;
	if (!obj || model_validate(obj, err, sizeof(err)) == 0) {
		json_decref(obj);
		return NULL;
	}
	json_decref(obj);
	return model_error_causes(err);
}

TEST(causes_of_a_pod)
{
	json_t *c = causes_of_body("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"Bad_Name\","
				   "\"namespace\":\"a\"},\"spec\":{\"containers\":[{\"image\":\"x\"},"
				   "{\"name\":\"b\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"x\"}]}}");

	CHECK(c);
	CHECK_EQ(json_array_size(c), 3);
	CHECK(cause_is(c, 0, "metadata.name", "FieldValueInvalid", NULL));
	CHECK(cause_is(c, 1, "spec.containers[0].name", "FieldValueRequired", "required"));
	CHECK(cause_is(c, 2, "spec.containers[2].name", "FieldValueDuplicate", NULL));
	json_decref(c);
}

TEST(causes_of_a_service)
{
	json_t *c = causes_of_body("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\","
				   "\"namespace\":\"a\"},\"spec\":{\"type\":\"Weird\",\"ports\":[{\"port\":80,"
				   "\"protocol\":\"TCP\"}]}}");

	CHECK(c);
	CHECK(json_array_size(c) >= 1);
	CHECK(cause_is(c, 0, "spec.type", "FieldValueNotSupported", NULL));
	json_decref(c);
}

TEST(causes_line_forms)
{
	json_t *c = model_error_causes("metadata.labels[app.kubernetes.io/x y]: 'v' is not a valid label value\n"
				       "status.podIP 10.128.2.5: pod blue/c is on node node-1, whose subnet is x\n"
				       "\n"
				       "(more errors)\n"
				       "spec: too many entries (5000, at most 4096)\n"
				       "metadata.name: too long (at most 253)");

	CHECK(c);
	CHECK_EQ(json_array_size(c), 5);
	CHECK(cause_is(c, 0, "metadata.labels[app.kubernetes.io/x y]", "FieldValueInvalid",
		       "'v' is not a valid label value"));
	CHECK(cause_is(c, 1, "status.podIP", "FieldValueInvalid",
		       "status.podIP 10.128.2.5: pod blue/c is on node node-1, whose subnet is x"));
	CHECK(cause_is(c, 2, "", "FieldValueInvalid", "(more errors)"));
	CHECK(cause_is(c, 3, "spec", "FieldValueTooMany", NULL));
	CHECK(cause_is(c, 4, "metadata.name", "FieldValueTooLong", NULL));
	json_decref(c);

	c = model_error_causes("");
	CHECK(c && json_array_size(c) == 0);
	json_decref(c);
	c = model_error_causes("a message: of no path, with spaces");
	CHECK(c && json_array_size(c) == 1 && cause_is(c, 0, "", "FieldValueInvalid", NULL));
	json_decref(c);
}

TEST(causes_bounded)
{
	static char text[MODEL_MAX_CAUSES * 32];
	size_t n = 0;
	json_t *c;

	for (int i = 0; i < MODEL_MAX_CAUSES + 10; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "a.b%d: required\n", i % 10);
	c = model_error_causes(text);
	CHECK(c && json_array_size(c) == MODEL_MAX_CAUSES);
	json_decref(c);
}
