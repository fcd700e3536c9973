/*
 * request_test.c — a write's body against its path (model_request_check),
 * DeleteOptions, resourceVersions, and the limits on stored objects
 * (model_check_limits, model_encode_checked).
 *
 * The sweep test sends every kind's body to every other kind's path, as
 * the attacker did; the limits are cross-checked against a naive
 * recursive count on random trees, and model_encode_checked's text against
 * the readers' parser (it does not parse it back itself: limits.c,
 * invariant 2) on random trees of every kind of value.
 */
#include "model/model.h"
#include "test.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[2048];

static json_t *parse(const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);

	if (!j)
		fprintf(stderr, "    test JSON does not parse: %s: %s\n", je.text, s);
	return j;
}

/* model_request_check on a body given as JSON text */
static int check(const struct kind_info *k, const char *ns, const char *name, const char *body)
{
	json_t *j = parse(body);
	int rc;

	if (!j)
		return 1;
	rc = model_request_check(k, ns, name, j, err, sizeof(err));
	json_decref(j);
	return rc;
}

static const char *ns_of(const struct kind_info *k) { return k->namespaced ? "default" : NULL; }

TEST(every_kind_refuses_every_other_kinds_body)
{
	for (int p = 0; p < KIND_COUNT; p++) {
		const struct kind_info *path = kind_get((enum kind_id)p);

		for (int b = 0; b < KIND_COUNT; b++) {
			const struct kind_info *body = kind_get((enum kind_id)b);
			char text[256], want[256];

			snprintf(text, sizeof(text), "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"x\"}}",
				 body->api_version, body->kind);
			for (int verb = 0; verb < 2; verb++) {
				int rc = check(path, ns_of(path), verb ? "x" : NULL, text);

				if (p == b) {
					CHECK_EQ(rc, 0);
					continue;
				}
				CHECK_EQ(rc, -EBADMSG);
				snprintf(want, sizeof(want),
					 "body kind '%s' does not match the path's resource '%s' (kind %s)",
					 body->kind, path->plural, path->kind);
				CHECK_STR(err, want);
			}
		}
	}
}

TEST(api_version_must_match_the_path)
{
	const struct kind_info *pods = kind_get(KIND_POD), *netpol = kind_get(KIND_NETWORKPOLICY);

	CHECK_EQ(check(pods, "default", NULL, "{\"apiVersion\":\"apps/v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}"),
		 -EBADMSG);
	CHECK_STR(err, "body apiVersion 'apps/v1' does not match the path's resource 'pods' (apiVersion v1)");
	CHECK_EQ(check(netpol, "default", NULL,
		       "{\"apiVersion\":\"v1\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"a\"}}"),
		 -EBADMSG);
	CHECK(strstr(err, "(apiVersion networking.k8s.io/v1)"));
	CHECK_EQ(check(pods, "default", NULL, "{\"apiVersion\":1,\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}"),
		 -EBADMSG);
	CHECK_STR(err, "apiVersion must be a string, not an integer");
	CHECK_EQ(check(pods, "default", NULL, "{\"kind\":[\"Pod\"],\"metadata\":{\"name\":\"a\"}}"), -EBADMSG);
	CHECK_STR(err, "kind must be a string, not a list");
}

/* as kube-apiserver's decoder: an absent (or empty) kind and apiVersion
 * come from the path, and lead the object */
TEST(absent_kind_and_api_version_come_from_the_path)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"a\"},\"kind\":\"\",\"spec\":{}}");
	const char *key;
	json_t *v;
	int i = 0;
	char *s;

	CHECK(j);
	CHECK_EQ(model_request_check(kind_get(KIND_INGRESS), "red", NULL, j, err, sizeof(err)), 0);
	s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	CHECK_STR(s, "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"Ingress\","
		     "\"metadata\":{\"name\":\"a\",\"namespace\":\"red\"},\"spec\":{}}");
	free(s);
	json_object_foreach(j, key, v)
		i++;
	CHECK_EQ(i, 4);
	json_decref(j);
}

TEST(name_and_namespace_against_the_path)
{
	const struct kind_info *pods = kind_get(KIND_POD), *nodes = kind_get(KIND_NODE);

	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"b\"}}"), -EBADMSG);
	CHECK_STR(err, "metadata.name: 'b' does not match the name in the path ('a')");
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{}}"), -EBADMSG);
	CHECK_STR(err, "metadata.name: (none) does not match the name in the path ('a')");
	CHECK_EQ(check(pods, "default", "a", "{\"kind\":\"Pod\"}"), -EBADMSG);
	CHECK(strstr(err, "the body has none; the path names 'a'"));
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":7}}"), -EBADMSG);
	CHECK_STR(err, "metadata.name must be a string, not an integer");
	CHECK_EQ(check(pods, "default", NULL, "{\"metadata\":\"x\"}"), -EBADMSG);
	CHECK_STR(err, "metadata must be an object, not a string");
	/* a create without metadata is validation's to report (422) */
	CHECK_EQ(check(pods, "default", NULL, "{\"kind\":\"Pod\"}"), 0);

	CHECK_EQ(check(pods, "default", NULL, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"red\"}}"), -EBADMSG);
	CHECK_STR(err, "metadata.namespace: 'red' does not match the namespace in the path ('default')");
	CHECK_EQ(check(pods, "default", NULL, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"}}"), 0);
	CHECK_EQ(check(pods, "default", NULL, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"\"}}"), 0);
	CHECK_EQ(check(pods, "default", NULL, "{\"metadata\":{\"name\":\"a\",\"namespace\":false}}"), -EBADMSG);
	CHECK_STR(err, "metadata.namespace must be a string, not a boolean");
	CHECK_EQ(check(nodes, NULL, "n", "{\"metadata\":{\"name\":\"n\",\"namespace\":\"default\"}}"), -EBADMSG);
	CHECK_STR(err, "metadata.namespace: 'default' is set, but Node is not namespaced");
	CHECK_EQ(check(nodes, NULL, "n", "{\"metadata\":{\"name\":\"n\"}}"), 0);
}

TEST(revisions_are_digits_only)
{
	static const struct {
		const char *s;
		int rc;
		int64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "58", 0, 58 },
		{ "007", 0, 7 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "9223372036854775808", -EINVAL, 0 },
		{ "99999999999999999999", -EINVAL, 0 },
		{ "58junk", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t v = -5;
		int rc = model_revision_parse(cases[i].s, &v);

		CHECK_EQ(rc, cases[i].rc);
		if (!rc)
			CHECK_EQ(v, cases[i].v);
	}
	CHECK_EQ(model_revision_parse(NULL, &(int64_t){ 0 }), -EINVAL);
}

TEST(body_resource_version_is_checked)
{
	const struct kind_info *pods = kind_get(KIND_POD);

	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"58junk\"}}"),
		 -EBADMSG);
	CHECK_STR(err, "metadata.resourceVersion: '58junk' is not a resourceVersion (decimal digits, as the "
		       "server wrote it)");
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"-1\"}}"), -EBADMSG);
	CHECK_EQ(check(pods, "default", "a",
		       "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"99999999999999999999\"}}"),
		 -EBADMSG);
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":58}}"), -EBADMSG);
	CHECK_STR(err, "metadata.resourceVersion must be a string, not an integer");
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"58\"}}"), 0);
	CHECK_EQ(check(pods, "default", "a", "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"\"}}"), 0);
}

/* ---- DeleteOptions ---- */

static int delete_options(const char *body, int64_t *rev)
{
	json_t *j = body ? parse(body) : NULL;
	int rc;

	if (body && !j)
		return 1;
	rc = model_delete_options(kind_get(KIND_INGRESS), j, rev, err, sizeof(err));
	json_decref(j);
	return rc;
}

TEST(delete_options_are_checked)
{
	int64_t rev = -1;

	CHECK_EQ(delete_options(NULL, &rev), 0);
	CHECK_EQ(rev, 0);
	CHECK_EQ(delete_options("{}", &rev), 0);
	CHECK_EQ(delete_options("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}",
				&rev), 0);
	CHECK_EQ(delete_options("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"meta.k8s.io/v1\"}", &rev), 0);
	CHECK_EQ(delete_options("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"networking.k8s.io/v1\"}", &rev), 0);
	CHECK_EQ(delete_options("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"route.openshift.io/v1\"}", &rev),
		 -EBADMSG);
	CHECK_EQ(delete_options("{\"kind\":\"Ingress\",\"apiVersion\":\"networking.k8s.io/v1\"}", &rev), -EBADMSG);
	CHECK_STR(err, "body kind 'Ingress' is not DeleteOptions (a DELETE of 'ingresses' takes DeleteOptions or "
		       "no body)");
	CHECK_EQ(delete_options("[]", &rev), -EBADMSG);
	CHECK_EQ(delete_options("{\"preconditions\":{\"resourceVersion\":\"12\"}}", &rev), 0);
	CHECK_EQ(rev, 12);
	CHECK_EQ(delete_options("{\"preconditions\":{\"resourceVersion\":\"58junk\"}}", &rev), -EBADMSG);
	CHECK_STR(err, "preconditions.resourceVersion: '58junk' is not a revision");
	CHECK_EQ(rev, 0);
	CHECK_EQ(delete_options("{\"preconditions\":{\"resourceVersion\":\"0\"}}", &rev), -EBADMSG);
	CHECK_EQ(delete_options("{\"preconditions\":{\"resourceVersion\":\"-3\"}}", &rev), -EBADMSG);
	CHECK_EQ(delete_options("{\"preconditions\":{\"resourceVersion\":12}}", &rev), -EBADMSG);
	CHECK_STR(err, "preconditions.resourceVersion must be a string, not an integer");
	CHECK_EQ(delete_options("{\"preconditions\":\"12\"}", &rev), -EBADMSG);
	CHECK_EQ(delete_options("{\"preconditions\":{\"uid\":\"u\"}}", &rev), -EBADMSG);
	CHECK(strstr(err, "preconditions.uid: not supported"));
	CHECK_EQ(delete_options("{\"dryRun\":[\"All\"]}", &rev), -EBADMSG);
	CHECK_EQ(delete_options("{\"dryRun\":[]}", &rev), 0);
}

/* ---- limits ---- */

/* {"a":{"a":...{"a":1}}}: depth objects */
static json_t *nested(int depth)
{
	json_t *j = json_integer(1);

	for (int i = 0; i < depth; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "a", j);
		j = o;
	}
	return j;
}

TEST(depth_limit_names_the_path)
{
	json_t *ok = nested(MODEL_MAX_DEPTH), *deep = nested(MODEL_MAX_DEPTH + 1);
	json_t *list = json_pack("{s:[[{}]]}", "spec");
	char want[512] = "";

	CHECK_EQ(model_check_limits(ok, err, sizeof(err)), 0);
	CHECK_EQ(model_check_limits(deep, err, sizeof(err)), -E2BIG);
	for (int i = 0; i < MODEL_MAX_DEPTH; i++)
		strcat(want, i ? ".a" : "a");
	strcat(want, ": nested deeper than 32 levels (the limit)");
	CHECK_STR(err, want);
	CHECK_EQ(model_check_limits(list, err, sizeof(err)), 0);	/* 4 levels */
	json_decref(ok);
	json_decref(deep);
	json_decref(list);
}

TEST(depth_limit_path_is_bounded_and_clean)
{
	json_t *j = json_integer(1);
	char key[300];
	int rc;

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	key[3] = '\n';
	for (int i = 0; i <= MODEL_MAX_DEPTH; i++) {
		json_t *o = i % 2 ? json_array() : json_object();

		if (i % 2)
			json_array_append_new(o, j);
		else
			json_object_set_new(o, key, j);
		j = o;
	}
	rc = model_check_limits(j, err, sizeof(err));
	json_decref(j);
	CHECK_EQ(rc, -E2BIG);
	CHECK(strlen(err) < 320);
	CHECK(!strchr(err, '\n'));
	CHECK(!strncmp(err, "kkk?kkk", 7));
	CHECK(strstr(err, "k...[0].kkk?"));
	CHECK(strstr(err, "nested deeper than 32 levels"));
}

TEST(value_limit)
{
	json_t *items = json_array(), *obj = json_pack("{s:{s:o}}", "spec", "items", items);

	for (int i = 0; i < MODEL_MAX_VALUES - 3; i++)	/* obj, spec, items: 3 more */
		json_array_append_new(items, json_true());
	CHECK_EQ(model_check_limits(obj, err, sizeof(err)), 0);
	json_array_append_new(items, json_true());
	CHECK_EQ(model_check_limits(obj, err, sizeof(err)), -E2BIG);
	CHECK(strstr(err, "spec.items[99997]: more than 100000 JSON values in one object (the limit)"));
	json_decref(obj);
}

/* A random tree of objects, lists and scalars. */
static json_t *random_tree(uint64_t *seed, int depth, size_t *budget)
{
	uint64_t r;
	json_t *j;

	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	r = *seed >> 33;
	if (!*budget || r % 4 == 0 || depth > 40) {
		if (*budget)
			(*budget)--;
		return r % 2 ? json_integer((json_int_t)r) : json_string("s");
	}
	(*budget)--;
	j = r % 3 ? json_object() : json_array();
	for (uint64_t n = r % 5; n > 0; n--) {
		json_t *child = random_tree(seed, depth + 1, budget);
		char key[24];

		if (json_is_object(j)) {
			snprintf(key, sizeof(key), "k%" PRIu64, n);
			json_object_set_new(j, key, child);
		} else {
			json_array_append_new(j, child);
		}
	}
	return j;
}

/* the naive reference: depth of containers and number of values */
static void measure(const json_t *j, int level, int *depth, size_t *values)
{
	const char *k;
	json_t *c;
	size_t i;

	(*values)++;
	if (!json_is_object(j) && !json_is_array(j))
		return;
	if (level > *depth)
		*depth = level;
	if (json_is_object(j))
		json_object_foreach((json_t *)j, k, c)
			measure(c, level + 1, depth, values);
	else
		json_array_foreach(j, i, c)
			measure(c, level + 1, depth, values);
}

TEST(limits_randomized_against_a_naive_count)
{
	uint64_t seed = test_seed();

	for (int round = 0; round < 400; round++) {
		size_t budget = 50 + (size_t)(seed % 3000), values = 0;
		json_t *j = random_tree(&seed, 1, &budget);
		int depth = 0, rc;

		measure(j, 1, &depth, &values);
		rc = model_check_limits(j, err, sizeof(err));
		if ((rc == 0) != (depth <= MODEL_MAX_DEPTH && values <= MODEL_MAX_VALUES)) {
			test_fail(__FILE__, __LINE__, "round %d: depth %d, %zu values: rc %d (%s)", round, depth,
				  values, rc, err);
			json_decref(j);
			return;
		}
		json_decref(j);
	}
}

static uint64_t next(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return *seed >> 33;
}

/* A random valid UTF-8 string of up to 8 code points (any plane, no
 * surrogates), with a NUL byte in it when nul. */
static json_t *random_string(uint64_t *seed, bool nul)
{
	char buf[64];
	size_t n = 0;

	for (uint64_t k = next(seed) % 9; k > 0; k--) {
		uint32_t cp = (uint32_t)next(seed);

		switch (cp % 4) {
		case 0: cp = 1 + cp % 0x7f; break;		/* ASCII, control characters too */
		case 1: cp = 0x80 + cp % 0x780; break;
		case 2: cp = 0x800 + cp % 0xf800; break;
		default: cp = 0x10000 + cp % 0x100000; break;
		}
		if (cp >= 0xd800 && cp <= 0xdfff)
			cp = '?';
		if (cp < 0x80) {
			buf[n++] = (char)cp;
		} else if (cp < 0x800) {
			buf[n++] = (char)(0xc0 | cp >> 6);
			buf[n++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			buf[n++] = (char)(0xe0 | cp >> 12);
			buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (cp & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | cp >> 18);
			buf[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
			buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	if (nul)
		buf[n++] = 0;
	return json_stringn(buf, n);
}

/* the naive reference: a string anywhere with a NUL byte */
static bool holds_nul(const json_t *j)
{
	const char *k;
	json_t *c;
	size_t i;

	if (json_is_string(j))
		return strlen(json_string_value(j)) != json_string_length(j);
	if (json_is_object(j))
		json_object_foreach((json_t *)j, k, c)
			if (holds_nul(c))
				return true;
	if (json_is_array(j))
		json_array_foreach(j, i, c)
			if (holds_nul(c))
				return true;
	return false;
}

static json_t *random_scalar(uint64_t *seed)
{
	static const double reals[] = { 0.0, -0.0, 1.0, -1.5, 0.1, 1e300, -1e-300, DBL_MAX, DBL_MIN, 5e-324,
					123456789.123456789 };
	uint64_t r = next(seed);

	switch (r % 8) {
	case 0: return json_integer(r % 2 ? INT64_MAX : INT64_MIN + (json_int_t)(r % 3));
	case 1: return json_integer((json_int_t)next(seed) - (1 << 30));
	case 2: return json_real(reals[next(seed) % (sizeof(reals) / sizeof(reals[0]))]);
	case 3: return json_real(ldexp((double)next(seed), (int)(next(seed) % 200) - 100));
	case 4: return r % 3 ? json_true() : r % 3 == 1 ? json_false() : json_null();
	case 5: return random_string(seed, next(seed) % 16 == 0);
	default: return random_string(seed, false);
	}
}

static json_t *random_values(uint64_t *seed, int depth, size_t *budget)
{
	uint64_t r = next(seed);
	json_t *j;

	if (!*budget || r % 3 == 0 || depth > 6) {
		if (*budget)
			(*budget)--;
		return random_scalar(seed);
	}
	(*budget)--;
	j = r % 2 ? json_object() : json_array();
	for (uint64_t n = r % 6; n > 0; n--) {
		json_t *child = random_values(seed, depth + 1, budget);

		if (json_is_object(j)) {
			json_t *key = random_string(seed, false);

			json_object_set_new(j, json_string_value(key), child);
			json_decref(key);
		} else {
			json_array_append_new(j, child);
		}
	}
	return j;
}

/* What the walk promises against the reference, the readers' parser:
 * accepted text parses back (flags 0) to an equal object; only a string
 * with a NUL byte is refused (-EPROTO), and such text would not parse. */
TEST(encode_checked_randomized_against_the_parser)
{
	uint64_t seed = test_seed();

	for (int round = 0; round < 2000; round++) {
		size_t budget = 1 + (size_t)(next(&seed) % 200), len = 0;
		/* a stored object is an object (the encoder takes no other root) */
		json_t *j = json_pack("{s:o}", "spec", random_values(&seed, 2, &budget)), *back;
		char *text = NULL, *raw;
		int rc = model_encode_checked(j, &text, &len, err, sizeof(err));

		if (holds_nul(j)) {
			raw = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
			back = raw ? json_loads(raw, 0, NULL) : NULL;
			if (rc != -EPROTO || text || back || !strstr(err, "NUL byte"))
				test_fail(__FILE__, __LINE__, "round %d: a NUL string: rc %d (%s), parses %s", round, rc,
					  err, back ? "yes" : "no");
			json_decref(back);
			free(raw);
		} else {
			back = rc == 0 ? json_loadb(text, len, 0, NULL) : NULL;
			if (rc != 0 || len != strlen(text) || !back || !json_equal(back, j))
				test_fail(__FILE__, __LINE__, "round %d: rc %d (%s), text %.200s reads back %s", round,
					  rc, err, text ? text : "(none)", back ? "unequal" : "not at all");
			json_decref(back);
		}
		free(text);
		json_decref(j);
		if (test_failed())
			return;
	}
}

TEST(encode_checked_refuses_a_nul_in_a_string)
{
	json_t *j = json_pack("{s:{s:{s:o}}}", "metadata", "annotations", "x", json_stringn("a\0b", 3));
	char *text = NULL;
	size_t len = 0;

	CHECK(j);
	CHECK_EQ(model_encode_checked(j, &text, &len, err, sizeof(err)), -EPROTO);
	CHECK(text == NULL);
	CHECK_CONTAINS(err, "metadata.annotations.x: a string holding a NUL byte");
	CHECK_EQ(model_check_limits(j, err, sizeof(err)), 0);	/* a limit it is not */
	json_decref(j);
}

TEST(encode_checked_reads_back)
{
	json_t *j = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},\"x\":[1.5,\"\\u00e9\"]}");
	json_t *big, *back;
	char *text = NULL, *pad;
	size_t len = 0;

	CHECK(j);
	CHECK_EQ(model_encode_checked(j, &text, &len, err, sizeof(err)), 0);
	CHECK_EQ(len, strlen(text));
	back = json_loads(text, 0, NULL);
	CHECK(back && json_equal(back, j));
	json_decref(back);
	free(text);

	pad = malloc(MODEL_MAX_OBJECT_BYTES + 1);
	CHECK(pad);
	memset(pad, 'x', MODEL_MAX_OBJECT_BYTES);
	pad[MODEL_MAX_OBJECT_BYTES] = 0;
	big = json_pack("{s:s}", "data", pad);
	free(pad);
	CHECK_EQ(model_encode_checked(big, &text, &len, err, sizeof(err)), -E2BIG);
	CHECK(text == NULL);
	CHECK(strstr(err, "bytes, more than 3145728 (the limit)"));
	json_decref(big);

	big = nested(MODEL_MAX_DEPTH + 1);
	CHECK_EQ(model_encode_checked(big, &text, &len, err, sizeof(err)), -E2BIG);
	json_decref(big);
	json_decref(j);
}

/* the limits go through model_request_check too, as a 413 */
TEST(request_over_a_limit)
{
	json_t *body = json_pack("{s:{s:s}, s:o}", "metadata", "name", "a", "spec", nested(MODEL_MAX_DEPTH));

	CHECK_EQ(model_request_check(kind_get(KIND_POD), "default", NULL, body, err, sizeof(err)), -E2BIG);
	CHECK(!strncmp(err, "the body is over a limit: spec.a.a", 34));
	json_decref(body);
}
