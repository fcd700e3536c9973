/*
 * yaml_test.c — core-schema typing, streams, JSON input, aliases and their
 * bounds, errors with positions (and silence on stderr), and emit/decode
 * round trips of random values.
 */
#include "lib/yaml.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decodes s, expecting exactly one document. NULL (and a test failure
 * message left to the caller) otherwise. */
static json_t *one(const char *s)
{
	json_t **docs = NULL;
	size_t n = 0;
	char err[256];
	json_t *v;

	if (yaml_decode_stream(s, strlen(s), &docs, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "    decode failed: %s\n", err);
		return NULL;
	}
	if (n != 1) {
		fprintf(stderr, "    %zu documents\n", n);
		yaml_docs_free(docs, n);
		return NULL;
	}
	v = json_incref(docs[0]);
	yaml_docs_free(docs, n);
	return v;
}

/* The error for s ("" if it decoded). */
static const char *error_of(const char *s, size_t len)
{
	static char err[512];
	json_t **docs = NULL;
	size_t n = 0;

	if (yaml_decode_stream(s, len, &docs, &n, err, sizeof(err)) == 0) {
		yaml_docs_free(docs, n);
		return "";
	}
	if (docs || n)
		return "docs left behind on error";
	return err;
}
#define ERROR_OF(s) error_of((s), strlen(s))

/* The value of "v" in "v: <text>" as compact JSON. */
static char *typed(const char *text)
{
	char doc[256];
	json_t *v;
	char *s;

	snprintf(doc, sizeof(doc), "v: %s\n", text);
	v = one(doc);
	if (!v)
		return strdup("(error)");
	s = json_dumps(json_object_get(v, "v"), JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(v);
	return s;
}

TEST(yaml_core_schema_types)
{
	static const struct {
		const char *text, *json;
	} cases[] = {
		{ "", "null" }, { "~", "null" }, { "null", "null" }, { "Null", "null" },
		{ "NULL", "null" }, { "nULL", "\"nULL\"" },
		{ "true", "true" }, { "True", "true" }, { "TRUE", "true" }, { "false", "false" },
		{ "FALSE", "false" }, { "tRUE", "\"tRUE\"" },
		{ "yes", "\"yes\"" }, { "no", "\"no\"" }, { "on", "\"on\"" }, { "off", "\"off\"" },
		{ "0", "0" }, { "-0", "0" }, { "+12", "12" }, { "007", "7" }, { "-42", "-42" },
		{ "0o17", "15" }, { "0x1F", "31" }, { "0xff", "255" }, { "0b101", "\"0b101\"" },
		{ "1_000", "\"1_000\"" }, { "0o8", "\"0o8\"" }, { "0x", "\"0x\"" },
		{ "9223372036854775807", "9223372036854775807" },
		{ "-9223372036854775808", "-9223372036854775808" },
		{ "0x7fffffffffffffff", "9223372036854775807" },
		{ "1.5", "1.5" }, { ".5", "0.5" }, { "1.", "1.0" }, { "-1.5e3", "-1500.0" },
		{ "1e3", "1000.0" }, { "+.5E-1", "0.050000000000000003" }, { "1e", "\"1e\"" },
		{ ".", "\".\"" }, { "1.2.3", "\"1.2.3\"" }, { "10.0.0.1", "\"10.0.0.1\"" },
		{ "12:30", "\"12:30\"" }, { "2001-12-14", "\"2001-12-14\"" },
		{ "\"1\"", "\"1\"" }, { "'true'", "\"true\"" }, { "\"\"", "\"\"" },
		{ "!!str 5", "\"5\"" }, { "!!int \"3\"", "3" }, { "!!float 1", "1.0" },
		{ "!!bool 'false'", "false" }, { "!!null ''", "null" }, { "! 12", "\"12\"" },
		{ "!local 12", "12" }, { "a b  c", "\"a b  c\"" }, { "\"a\\tb\\u00e9\"", "\"a\\tbé\"" },
		{ "[1, a, {b: c}]", "[1,\"a\",{\"b\":\"c\"}]" }, { "{}", "{}" }, { "[]", "[]" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = typed(cases[i].text);

		if (!got || strcmp(got, cases[i].json) != 0) {
			test_fail(__FILE__, __LINE__, "v: %s gave %s, want %s", cases[i].text,
				  got ? got : "(null)", cases[i].json);
			free(got);
			return;
		}
		free(got);
	}
}

TEST(yaml_block_scalars_and_nesting)
{
	json_t *v = one("a:\n  b:\n  - x\n  - y: 1\n    z: [2]\nlit: |\n  one\n  two\n"
			"fold: >\n  one\n  two\n");

	CHECK(v);
	CHECK_STR(json_string_value(json_object_get(v, "lit")), "one\ntwo\n");
	CHECK_STR(json_string_value(json_object_get(v, "fold")), "one two\n");
	json_t *b = json_object_get(json_object_get(v, "a"), "b");
	CHECK(json_is_array(b) && json_array_size(b) == 2);
	CHECK_STR(json_string_value(json_array_get(b, 0)), "x");
	CHECK_EQ(json_integer_value(json_object_get(json_array_get(b, 1), "y")), 1);
	json_decref(v);
}

TEST(yaml_rejects_unrepresentable_scalars)
{
	CHECK_CONTAINS(ERROR_OF("v: .inf\n"), "cannot be represented");
	CHECK_CONTAINS(ERROR_OF("v: -.Inf\n"), "cannot be represented");
	CHECK_CONTAINS(ERROR_OF("v: .nan\n"), "cannot be represented");
	CHECK_CONTAINS(ERROR_OF("v: 9223372036854775808\n"), "out of range");
	CHECK_CONTAINS(ERROR_OF("v: -9223372036854775809\n"), "out of range");
	CHECK_CONTAINS(ERROR_OF("v: 0x8000000000000000\n"), "out of range");
	CHECK_CONTAINS(ERROR_OF("v: 1e400\n"), "out of range");
	CHECK_CONTAINS(ERROR_OF("v: !!int abc\n"), "line 1, column 10: 'abc' is not a valid !!int");
	CHECK_CONTAINS(ERROR_OF("v: !!bool yes\n"), "is not a valid !!bool");
}

TEST(yaml_multi_document_stream)
{
	const char *s = "---\n---\na: 1\n...\n---\n# only a comment\n---\nb: 2\n---\n- 3\n---\n~\n";
	json_t **docs = NULL;
	size_t n = 0;
	char err[128];

	CHECK(yaml_decode_stream(s, strlen(s), &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(json_integer_value(json_object_get(docs[0], "a")), 1);
	CHECK_EQ(json_integer_value(json_object_get(docs[1], "b")), 2);
	CHECK(json_is_array(docs[2]));
	yaml_docs_free(docs, n);

	CHECK(yaml_decode_stream("", 0, &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 0);
	yaml_docs_free(docs, n);
	CHECK(yaml_decode_stream("# nothing\n", 10, &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 0);
	yaml_docs_free(docs, n);
	yaml_docs_free(NULL, 0);
}

TEST(yaml_reads_json)
{
	const char *s = "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
			"\t\"metadata\": {\"name\": \"a\", \"labels\": {\"app\": \"web\"}},\n"
			"\t\"list\": [1, -2.5, true, false, null, \"x\\/y\\u00e9\\n\", [], {}],\n"
			"\t\"big\": 1e2, \"s\": \"123\"}";
	json_t *v = one(s), *want;

	CHECK(v);
	want = json_loads(s, 0, NULL);
	CHECK(want);
	CHECK(json_equal(v, want));
	json_decref(want);
	json_decref(v);

	v = one("[{\"a\":1},{\"a\":2}]");
	CHECK(v && json_array_size(v) == 2);
	json_decref(v);
}

TEST(yaml_resolves_aliases_into_copies)
{
	json_t *v = one("base: &b {port: 80, tags: [a, b]}\nfirst: *b\nsecond: *b\n"
			"name: &n web\nalso: *n\n*n : keyed\n");
	json_t *first, *second;

	CHECK(v);
	first = json_object_get(v, "first");
	second = json_object_get(v, "second");
	CHECK(json_equal(first, json_object_get(v, "base")));
	CHECK(json_equal(first, second));
	CHECK(first != second);
	CHECK(json_object_get(first, "tags") != json_object_get(second, "tags"));
	CHECK_STR(json_string_value(json_object_get(v, "also")), "web");
	CHECK_STR(json_string_value(json_object_get(v, "web")), "keyed");
	json_decref(v);

	/* a redefined anchor: an alias takes the latest definition before it */
	v = one("a: &x 1\nb: *x\nc: &x 2\nd: *x\n");
	CHECK(v);
	CHECK_EQ(json_integer_value(json_object_get(v, "b")), 1);
	CHECK_EQ(json_integer_value(json_object_get(v, "d")), 2);
	json_decref(v);

	/* expanding an alias does not re-define the anchors inside it */
	v = one("a: &x [&y 1]\nb: &y 2\nc: *x\nd: *y\n");
	CHECK(v);
	CHECK_EQ(json_integer_value(json_object_get(v, "d")), 2);
	json_decref(v);

	/* anchors on keys, and names with '/' (legal YAML) */
	v = one("&k key: 1\nother: *k\nn: &a/b 5\nm: *a/b\n");
	CHECK(v);
	CHECK_STR(json_string_value(json_object_get(v, "other")), "key");
	CHECK_EQ(json_integer_value(json_object_get(v, "m")), 5);
	json_decref(v);

	/* anchors do not cross documents */
	CHECK_CONTAINS(ERROR_OF("a: &x 1\n---\nb: *x\n"), "line 3, column 5: alias '*x' refers to no anchor");
}

TEST(yaml_alias_bomb_is_an_error)
{
	char buf[4096];
	size_t k = 0;

	k += (size_t)snprintf(buf + k, sizeof(buf) - k, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < 10; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k,
				      "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n",
				      i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
				      i - 1, i - 1);
	CHECK_CONTAINS(ERROR_OF(buf), "more than 1000000 values after expanding aliases");
}

/* A caller's limits (a request body): a bomb of values or of one long
 * string fails at the limit with the caller's code, and so does nesting. */
TEST(yaml_limited_decode_stops_at_the_callers_limits)
{
	const struct yaml_limits lim = { .max_docs = 1, .max_nodes = 1000, .max_bytes = 4096, .max_depth = 8,
					 .over = -E2BIG };
	char buf[8192], err[256];
	json_t **docs = NULL;
	size_t n = 0, k = 0;

	k += (size_t)snprintf(buf + k, sizeof(buf) - k, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < 6; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, "
				      "*a%d, *a%d, *a%d]\n", i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
				      i - 1, i - 1);
	CHECK_EQ(yaml_decode_limited(buf, k, &lim, &docs, &n, err, sizeof(err)), -E2BIG);
	CHECK_CONTAINS(err, "more than 1000 values after expanding aliases");
	CHECK(docs == NULL && n == 0);

	/* one string of 1000 bytes, expanded 5 times: over 4096 bytes */
	k = (size_t)snprintf(buf, sizeof(buf), "s: &s ");
	memset(buf + k, 'y', 1000);
	k += 1000;
	k += (size_t)snprintf(buf + k, sizeof(buf) - k, "\nt: [*s, *s, *s, *s]\n");
	CHECK_EQ(yaml_decode_limited(buf, k, &lim, &docs, &n, err, sizeof(err)), -E2BIG);
	CHECK_CONTAINS(err, "more than 4096 bytes of text after expanding aliases");

	CHECK_EQ(yaml_decode_limited("a: [[[[[[[[[1]]]]]]]]]\n", strlen("a: [[[[[[[[[1]]]]]]]]]\n"), &lim, &docs, &n, err, sizeof(err)), -E2BIG);
	CHECK_CONTAINS(err, "nesting deeper than 8 levels");

	/* a second document is malformed for this caller, not too large */
	CHECK_EQ(yaml_decode_limited("a: 1\n---\nb: 2\n", strlen("a: 1\n---\nb: 2\n"), &lim, &docs, &n, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS(err, "more than 1 document");

	/* within the limits: as yaml_decode_stream */
	CHECK_EQ(yaml_decode_limited("a: &x [1, 2]\nb: *x\n", strlen("a: &x [1, 2]\nb: *x\n"), &lim, &docs, &n, err, sizeof(err)), 0);
	CHECK(n == 1 && json_array_size(json_object_get(docs[0], "b")) == 2);
	yaml_docs_free(docs, n);
}

TEST(yaml_alias_errors)
{
	CHECK_CONTAINS(ERROR_OF("a: &x [1, *x]\n"), "refers to a node that contains it");
	CHECK_CONTAINS(ERROR_OF("a: &x {b: *x}\n"), "refers to a node that contains it");
	CHECK_CONTAINS(ERROR_OF("a: *nope\n"), "alias '*nope' refers to no anchor");
	/* libfyaml's path aliases are not YAML (and over-read: found by the fuzzer) */
	CHECK_CONTAINS(ERROR_OF("a: {b: 1}\nc: */a\n"), "alias '*/a' refers to no anchor");
	CHECK_CONTAINS(ERROR_OF("- */-"), "alias '*/-' refers to no anchor");
	CHECK_CONTAINS(ERROR_OF("a: &x [1]\n*x : 2\n"), "a mapping key must be a scalar");
}

TEST(yaml_alias_depth_is_bounded)
{
	/* every level nests 40 deep and refers to the one before: 7 x 40 > 256 */
	char buf[8192];
	size_t k = 0;

	for (int level = 0; level < 7; level++) {
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "l%d: &l%d ", level, level);
		for (int i = 0; i < 40; i++)
			buf[k++] = '[';
		if (level)
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, "*l%d", level - 1);
		else
			buf[k++] = '1';
		for (int i = 0; i < 40; i++)
			buf[k++] = ']';
		buf[k++] = '\n';
	}
	buf[k] = '\0';
	CHECK_CONTAINS(ERROR_OF(buf), "nesting deeper than 256 levels");
}

TEST(yaml_duplicate_and_complex_keys)
{
	CHECK_STR(ERROR_OF("a: 1\nb: 2\na: 3\n"), "line 3, column 1: duplicate key 'a'");
	CHECK_CONTAINS(ERROR_OF("a: 1\n\"a\": 2\n"), "duplicate key 'a'");
	CHECK_CONTAINS(ERROR_OF("1: x\n\"1\": y\n"), "duplicate key '1'");
	CHECK_CONTAINS(ERROR_OF("{\"a\": 1, \"a\": 2}"), "duplicate key 'a'");
	CHECK_CONTAINS(ERROR_OF("? [a]\n: 1\n"), "line 1, column 4: a mapping key must be a scalar");
	CHECK_CONTAINS(ERROR_OF("? {a: b}\n: 1\n"), "a mapping key must be a scalar");
	CHECK_CONTAINS(ERROR_OF("\"a\\0b\": 1\n"), "NUL");
}

TEST(yaml_syntax_errors_have_positions_and_print_nothing)
{
	char path[512];
	int saved, fd;
	struct stat st;
	const char *e;

	snprintf(path, sizeof(path), "%s/stderr", test_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	close(fd);

	e = ERROR_OF("a: [1, 2\nb: 3\n");
	char e1[512];
	snprintf(e1, sizeof(e1), "%s", e);
	char e2[512];
	snprintf(e2, sizeof(e2), "%s", ERROR_OF("a: 1\n  b: 2\n"));
	char e3[512];
	snprintf(e3, sizeof(e3), "%s", ERROR_OF("ok: 1\n---\nkey: \"unterminated\n"));
	char e4[512];
	snprintf(e4, sizeof(e4), "%s", ERROR_OF("- a\nb: c\n"));

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ(st.st_size, 0);
	CHECK_CONTAINS(e1, "line 3, column 1: ");
	CHECK_CONTAINS(e2, "line 1, column 4: ");
	CHECK_CONTAINS(e3, "line ");
	CHECK(strstr(e3, "line 1,") == NULL);
	CHECK_CONTAINS(e4, "line 2, column ");
}

TEST(yaml_rejects_bad_bytes)
{
	CHECK_STR(error_of("a: 1\nb: x\0y\n", 12), "line 2, column 5: NUL character in input");
	CHECK_STR(error_of("a: 1\nbb: \xff\n", 10), "line 2, column 5: input is not valid UTF-8");
	CHECK_CONTAINS(error_of("a: \xc0\x80\n", 6), "not valid UTF-8");		/* overlong */
	CHECK_CONTAINS(error_of("a: \xed\xa0\x80\n", 7), "not valid UTF-8");	/* surrogate */
	CHECK_CONTAINS(error_of("a: \xe2\x82\n", 6), "not valid UTF-8");		/* truncated */
	CHECK_STR(error_of("a: \xc3\xa9\n", 6), "");
}

TEST(yaml_bounds_documents)
{
	size_t n = YAML_MAX_DOCS + 1, len = 0;
	char *s = malloc(n * 9 + 1);
	json_t **docs = NULL;
	size_t ndocs = 0;
	char err[128];

	CHECK(s);
	for (size_t i = 0; i < n; i++) {
		memcpy(s + len, "a: 1\n---\n", 9);
		len += 9;
	}
	s[len] = '\0';
	CHECK_CONTAINS(error_of(s, len), "more than 10000 documents");
	/* exactly the limit is fine */
	CHECK(yaml_decode_stream(s, len - 9, &docs, &ndocs, err, sizeof(err)) == 0);
	CHECK_EQ(ndocs, YAML_MAX_DOCS);
	yaml_docs_free(docs, ndocs);
	free(s);
}

TEST(yaml_error_buffer_is_optional_and_bounded)
{
	json_t **docs = NULL;
	size_t n = 0;
	char small[12];

	CHECK(yaml_decode_stream("a: [", 4, &docs, &n, NULL, 0) == -EINVAL);
	CHECK(yaml_decode_stream("a: [", 4, &docs, &n, small, sizeof(small)) == -EINVAL);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
}

static char *emit(const char *json)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
	char *s = v ? yaml_emit(v) : NULL;

	json_decref(v);
	return s;
}

TEST(yaml_emit_layout)
{
	char *s = emit("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\","
		       "\"labels\":{}},\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"},"
		       "{\"port\":443}],\"selector\":{\"app\":\"web\"},\"list\":[[1,2],[]],"
		       "\"r\":1.0}}");

	CHECK(s);
	CHECK_STR(s, "apiVersion: v1\n"
		     "kind: Service\n"
		     "metadata:\n"
		     "  name: web\n"
		     "  labels: {}\n"
		     "spec:\n"
		     "  ports:\n"
		     "  - port: 80\n"
		     "    name: http\n"
		     "  - port: 443\n"
		     "  selector:\n"
		     "    app: web\n"
		     "  list:\n"
		     "  - - 1\n"
		     "    - 2\n"
		     "  - []\n"
		     "  r: 1.0\n");
	free(s);
	s = emit("{}");
	CHECK_STR(s, "{}\n");
	free(s);
	s = emit("[]");
	CHECK_STR(s, "[]\n");
	free(s);
	s = emit("\"plain\"");
	CHECK_STR(s, "plain\n");
	free(s);
	s = emit("[null, true, -3]");
	CHECK_STR(s, "- null\n- true\n- -3\n");
	free(s);
}

TEST(yaml_emit_quotes_what_would_change)
{
	static const struct {
		const char *json, *yaml;
	} cases[] = {
		{ "\"true\"", "\"true\"\n" }, { "\"null\"", "\"null\"\n" }, { "\"\"", "\"\"\n" },
		{ "\"~\"", "\"~\"\n" }, { "\"123\"", "\"123\"\n" }, { "\"1.5\"", "\"1.5\"\n" },
		{ "\"0x1f\"", "\"0x1f\"\n" }, { "\"yes\"", "\"yes\"\n" }, { "\"a: b\"", "\"a: b\"\n" },
		{ "\"- x\"", "\"- x\"\n" }, { "\"a #b\"", "\"a #b\"\n" }, { "\"x:\"", "\"x:\"\n" },
		{ "\" lead\"", "\" lead\"\n" }, { "\"line\\nbreak\"", "\"line\\nbreak\"\n" },
		{ "\"q\\\"uote\"", "q\"uote\n" }, { "\"*star\"", "\"*star\"\n" },
		{ "\"10.0.0.1\"", "\"10.0.0.1\"\n" }, { "\"10.0.0.0/14\"", "10.0.0.0/14\n" },
		{ "\"a#b\"", "a#b\n" }, { "\"caf\\u00e9\"", "café\n" },
		{ "\"\\u2028\"", "\"\\u2028\"\n" }, { "\"tab\\there\"", "\"tab\\there\"\n" },
		{ "\"---\"", "\"---\"\n" }, { "\"<<\"", "\"<<\"\n" },
		{ "{\"true\": 1}", "\"true\": 1\n" }, { "{\"a b\": \"c d\"}", "a b: c d\n" },
		{ "{\"\": 1}", "\"\": 1\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = emit(cases[i].json);

		if (!s || strcmp(s, cases[i].yaml) != 0) {
			test_fail(__FILE__, __LINE__, "%s emitted as [%s], want [%s]", cases[i].json,
				  s ? s : "(null)", cases[i].yaml);
			free(s);
			return;
		}
		free(s);
	}
}

/* ---- random round trips ---- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static const char *fragments[] = {
	"a", "web", " ", ":", ": ", "#", " #", "-", "- ", "?", ",", "[", "]", "{", "}", "&",
	"*", "!", "|", ">", "'", "\"", "%", "@", "`", "\\", "\n", "\t", "\r", "\x01", "\x7f",
	"é", "日本", "\xc2\x85", "\xe2\x80\xa8", "\xef\xbb\xbf", "\xf0\x9f\x98\x80", "true",
	"False", "null", "~", "1", "-1", "0x1F", "0o7", ".5", "1e3", ".inf", ".nan", "yes",
	"---", "...", "<<", "=", "10.0.0.1", "/", "0", "1_0", "12:30",
};

static json_t *random_string(bool allow_nul)
{
	char buf[256];
	size_t k = 0;
	int parts = (int)(rnd() % 5);

	for (int i = 0; i < parts; i++) {
		const char *f = fragments[rnd() % (sizeof(fragments) / sizeof(fragments[0]))];

		memcpy(buf + k, f, strlen(f));
		k += strlen(f);
	}
	if (allow_nul && rnd() % 20 == 0)
		buf[k++] = '\0';
	return json_stringn(buf, k);
}

static json_t *random_value(int depth)
{
	unsigned pick = (unsigned)(rnd() % (depth < 4 ? 9 : 6));

	switch (pick) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(rnd() & 1);
	case 2: {
		static const json_int_t edge[] = { 0, -1, 1, INT64_MAX, INT64_MIN, 4789, -65536 };

		return json_integer(rnd() & 1 ? edge[rnd() % 7] : (json_int_t)rnd());
	}
	case 3: {
		double x = (double)(int64_t)rnd() / (double)(1 + rnd() % 1000000);

		if (rnd() % 4 == 0)
			x = (double)(int64_t)(rnd() % 1000);	/* integral reals */
		if (rnd() % 8 == 0 && x < 1e8 && x > -1e8)
			x *= 1e300;
		return json_real(x);
	}
	case 4:
	case 5:
		return random_string(true);
	case 6:
	case 7: {
		json_t *obj = json_object();
		int n = (int)(rnd() % 5);

		for (int i = 0; i < n; i++) {
			json_t *k = random_string(false);

			json_object_set_new(obj, json_string_value(k), random_value(depth + 1));
			json_decref(k);
		}
		return obj;
	}
	default: {
		json_t *arr = json_array();
		int n = (int)(rnd() % 5);

		for (int i = 0; i < n; i++)
			json_array_append_new(arr, random_value(depth + 1));
		return arr;
	}
	}
}

TEST(yaml_emit_decode_round_trip)
{
	rng_state = test_seed() | 1;
	for (int round = 0; round < 3000; round++) {
		json_t *v = random_value(0), **docs = NULL;
		char *text = yaml_emit(v), err[256];
		size_t n = 0;

		CHECK(text);
		if (yaml_decode_stream(text, strlen(text), &docs, &n, err, sizeof(err)) < 0) {
			test_fail(__FILE__, __LINE__, "round %d: [%s] does not decode: %s", round,
				  text, err);
			free(text);
			json_decref(v);
			return;
		}
		bool same = json_is_null(v) ? n == 0 : n == 1 && json_equal(docs[0], v);
		if (!same) {
			char *want = json_dumps(v, JSON_ENCODE_ANY);
			char *got = n ? json_dumps(docs[0], JSON_ENCODE_ANY) : NULL;

			test_fail(__FILE__, __LINE__, "round %d: [%s] read back as %s, want %s",
				  round, text, got ? got : "(nothing)", want);
			free(want);
			free(got);
		}
		yaml_docs_free(docs, n);
		free(text);
		json_decref(v);
		if (!same)
			return;
	}
}

TEST(yaml_emit_long_keys_round_trip)
{
	char key[1501];
	json_t *v, **docs = NULL;
	char *text, err[128];
	size_t n = 0;

	memset(key, 'k', 1500);
	key[1500] = '\0';
	v = json_pack("{s:{s:i}, s:[{s:s, s:i}]}", key, "a", 1, "list", key, "x", "b", 2);
	CHECK(v);
	text = yaml_emit(v);
	CHECK(text);
	CHECK_CONTAINS(text, "? \"kkk");
	CHECK(yaml_decode_stream(text, strlen(text), &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 1);
	CHECK(json_equal(docs[0], v));
	yaml_docs_free(docs, n);
	free(text);
	json_decref(v);
	CHECK(yaml_emit(NULL) == NULL);
}
