/*
 * selector_test.c — label and field selectors: Kubernetes' examples of
 * what parses and what does not, matching, a randomized cross-check of
 * parse + match against a naive reference (terms drawn at random, written
 * out in random spellings, evaluated directly), and hostile inputs (long,
 * repeated, unbalanced, empty terms, every bound and one past it).
 */
#include "model/selector.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

static json_t *labels_of(const char *json)
{
	return json_loads(json, 0, NULL);
}

/* Does text parse, and does it select an object with these labels (JSON)? */
static int verdict(const char *text, const char *labels_json)
{
	struct selector s = { 0 };
	struct selector_view v = { .field = { "", "", "" } };
	json_t *labels = labels_of(labels_json);
	int rc = selector_parse_labels(&s, text, err, sizeof(err));

	if (rc == 0) {
		v.labels = labels;
		rc = selector_matches(&s, &v) ? 1 : 0;
	}
	selector_free(&s);
	json_decref(labels);
	return rc;
}

TEST(selector_label_matching)
{
#define L "{\"app\":\"web\",\"tier\":\"front\",\"n\":\"7\",\"in\":\"x\"}"
	static const struct {
		const char *selector, *labels;
		int want;	/* 1 selects, 0 does not, or the parse error */
	} cases[] = {
		{ "", L, 1 },
		{ "app=web", L, 1 },
		{ "app==web", L, 1 },
		{ "app = web ,  tier == front", L, 1 },
		{ "app=db", L, 0 },
		{ "app!=db", L, 1 },
		{ "env!=prod", L, 1 }, /* != matches an object without the label */
		{ "app in (db,web)", L, 1 },
		{ "app in (db)", L, 0 },
		{ "app notin (db)", L, 1 },
		{ "app notin (db,web)", L, 0 },
		{ "env notin (prod)", L, 1 },
		{ "env in (prod)", L, 0 },
		{ "app", L, 1 },
		{ "!app", L, 0 },
		{ "!env", L, 1 },
		{ "env", L, 0 },
		{ "n>6,n<8", L, 1 },
		{ "n>7", L, 0 },
		{ "app>1", L, 0 }, /* not a number: no match */
		{ "app=", L, 0 }, /* the empty value */
		{ "env=", "{\"env\":\"\"}", 1 },
		{ "env in ()", "{\"env\":\"\"}", 1 }, /* () is {""} */
		{ "env in (,a)", "{\"env\":\"\"}", 1 },
		{ "env in (a,)", "{\"env\":\"\"}", 1 },
		{ "env in (a,,b)", "{\"env\":\"\"}", 1 },
		{ "in", L, 1 }, /* "in" as a key ... */
		{ "app in (in,web)", L, 1 }, /* ... and as a value */
		{ "in=x", L, 1 },
		{ "a in=x", L, -EINVAL }, /* but an operator where one is expected */
		{ "example.com/app=web", "{\"example.com/app\":\"web\"}", 1 },
		{ "app=web", "null", 0 }, /* no labels at all */
		{ "!app", "null", 1 },
	};
#undef L

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (verdict(cases[i].selector, cases[i].labels) != cases[i].want)
			test_fail(__FILE__, __LINE__, "'%s' on %s: %d, want %d", cases[i].selector, cases[i].labels,
				  verdict(cases[i].selector, cases[i].labels), cases[i].want);
}

TEST(selector_label_syntax_errors)
{
	static const char *const bad[] = {
		"x=a,y=b,", ",x=a", "x=a,,y=b", ",", "x in (a", "x in a)", "x in a", "x notin", "x==a==b",
		"!x=a", "!x in (a)", "!", "!!x", "x=a b", "(x)", "x)", "x in (a b)", "x in ((a))",
		"x in (a,,)", "x>", "x<a", "x>-1", "x>1.5", "x>99999999999999999999", "x=a=b", "x!", "=a",
		"x in (,", "x in (a,b", "-x=a", "x=-a", "x_=a", "x=a_", "a/b/c=d", "x=" "0123456789012345678901234567890123456789012345678901234567890123",
		"x y", "x,=", "x=(a)", "x in", "x in )", "notin (a)",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct selector s = { 0 };
		int rc = selector_parse_labels(&s, bad[i], err, sizeof(err));

		if (rc != -EINVAL)
			test_fail(__FILE__, __LINE__, "'%s' parsed (%d)", bad[i], rc);
		CHECK_EQ(s.nlabels, 0);
		CHECK(err[0] != 0);
		selector_free(&s);
	}
	CHECK_EQ(verdict("x in (a", "{}"), -EINVAL);
	CHECK_CONTAINS(err, "found 'end of string', expected: ',' or ')'");
	CHECK_EQ(verdict("x=a b", "{}"), -EINVAL);
	CHECK_CONTAINS(err, "found 'b', expected: ',' or 'end of string' (at byte 4)");
	CHECK_EQ(verdict("x=a_", "{}"), -EINVAL);
	CHECK_CONTAINS(err, "'a_' is not a valid label value for x");
	CHECK_EQ(verdict("-x", "{}"), -EINVAL);
	CHECK_CONTAINS(err, "'-x' is not a valid label key");
	CHECK_EQ(verdict("x notin", "{}"), -EINVAL);
	CHECK_CONTAINS(err, "expected: '('");
}

TEST(selector_failed_parse_leaves_selector)
{
	struct selector s = { 0 };

	CHECK_EQ(selector_parse_labels(&s, "a=b", err, sizeof(err)), 0);
	CHECK_EQ(selector_parse_labels(&s, "c=d,e in (", err, sizeof(err)), -EINVAL);
	CHECK_EQ(s.nlabels, 1);
	CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_POD), "metadata.name=x,spec.foo=y", err, sizeof(err)),
		 -EINVAL);
	CHECK_EQ(s.nfields, 0);
	selector_free(&s);
	selector_free(&s);	/* a freed selector is a zeroed one */
}

/* ---------------------------------------------------------------- field selectors */

static int field_verdict(enum kind_id kind, const char *text, const char *name, const char *ns, const char *node)
{
	struct selector s = { 0 };
	struct selector_view v = { .field = { name, ns, node } };
	int rc = selector_parse_fields(&s, kind_get(kind), text, err, sizeof(err));

	if (rc == 0)
		rc = selector_matches(&s, &v) ? 1 : 0;
	selector_free(&s);
	return rc;
}

TEST(selector_fields)
{
	CHECK_EQ(field_verdict(KIND_POD, "", "a", "red", "node-1"), 1);
	CHECK_EQ(field_verdict(KIND_POD, "spec.nodeName=node-1", "a", "red", "node-1"), 1);
	CHECK_EQ(field_verdict(KIND_POD, "spec.nodeName==node-1", "a", "red", "node-1"), 1);
	CHECK_EQ(field_verdict(KIND_POD, "spec.nodeName=node-2", "a", "red", "node-1"), 0);
	CHECK_EQ(field_verdict(KIND_POD, "spec.nodeName!=node-2", "a", "red", "node-1"), 1);
	CHECK_EQ(field_verdict(KIND_POD, "spec.nodeName=", "a", "red", ""), 1);	/* unscheduled */
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a,metadata.namespace=red", "a", "red", ""), 1);
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a,metadata.namespace=blue", "a", "red", ""), 0);
	CHECK_EQ(field_verdict(KIND_POD, ",metadata.name=a,,", "a", "red", ""), 1);	/* empty terms skipped */
	CHECK_EQ(field_verdict(KIND_SERVICE, "metadata.name=web", "web", "red", ""), 1);
	CHECK_EQ(field_verdict(KIND_NODE, "metadata.namespace=", "n1", "", ""), 1);
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a\\,b\\=c\\\\", "a,b=c\\", "", ""), 1);
	CHECK_EQ(field_verdict(KIND_SERVICE, "spec.nodeName=x", "web", "red", ""), -EINVAL);
	CHECK_STR(err, "field label not supported: spec.nodeName");
	CHECK_EQ(field_verdict(KIND_POD, "status.phase=Running", "a", "", ""), -EINVAL);
	CHECK_STR(err, "field label not supported: status.phase");
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name =a", "a", "", ""), -EINVAL);	/* no trimming */
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name", "a", "", ""), -EINVAL);
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a=b", "a", "", ""), -EINVAL);
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a\\x", "a", "", ""), -EINVAL);
	CHECK_CONTAINS(err, "invalid escape sequence");
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name=a\\", "a", "", ""), -EINVAL);
	CHECK_EQ(field_verdict(KIND_POD, "metadata.name>a", "a", "", ""), -EINVAL);
}

/* no kind: a NodeCredential (weft.io), selected by name and by node */
TEST(selector_fields_of_node_credentials)
{
	struct selector s = { 0 };
	struct selector_view v = { .field = { "0123456789abcdef", "", "node-1" } };

	CHECK_EQ(selector_parse_fields(&s, NULL, "spec.nodeName=node-1,metadata.name=0123456789abcdef", err,
				       sizeof(err)), 0);
	CHECK(selector_matches(&s, &v));
	selector_free(&s);
	CHECK_EQ(selector_parse_fields(&s, NULL, "spec.nodeName=node-2", err, sizeof(err)), 0);
	CHECK(!selector_matches(&s, &v));
	selector_free(&s);
	CHECK_EQ(selector_parse_fields(&s, NULL, "status.token=x", err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "field label not supported: status.token");
}

TEST(selector_exact_and_view)
{
	struct selector s = { 0 };
	struct selector_view v;
	json_t *pod = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"red\",\"labels\":{\"a\":\"b\"}},"
				 "\"spec\":{\"nodeName\":\"node-3\"}}", 0, NULL);

	CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_POD), "spec.nodeName!=x,spec.nodeName=node-3", err,
				       sizeof(err)), 0);
	CHECK_EQ(selector_add_field(&s, SELECTOR_FIELD_NAME, "p"), 0);
	CHECK_STR(selector_exact(&s, SELECTOR_FIELD_NODE_NAME), "node-3");
	CHECK_STR(selector_exact(&s, SELECTOR_FIELD_NAME), "p");
	CHECK(selector_exact(&s, SELECTOR_FIELD_NAMESPACE) == NULL);
	CHECK_EQ(selector_parse_labels(&s, "a=b", err, sizeof(err)), 0);
	selector_view_of(pod, &v);
	CHECK_STR(v.field[SELECTOR_FIELD_NAMESPACE], "red");
	CHECK(selector_matches(&s, &v));
	CHECK(!selector_empty(&s));
	selector_free(&s);
	CHECK(selector_empty(&s));
	json_decref(pod);
}

/* ---------------------------------------------------------------- randomized against a reference */

/* The reference: a term as data, evaluated directly. */
enum { KEYS = 4, VALS = 4 };
static const char *const keys[KEYS] = { "app", "tier", "example.com/role", "n" };
static const char *const vals[VALS] = { "", "web", "1", "20" };

struct ref_term {
	enum selector_op op;
	int key;
	int values[4];
	int nvalues;
};

static bool number(const char *v)
{
	return *v && strspn(v, "0123456789") == strlen(v);
}

static bool ref_match(const struct ref_term *t, int nterms, const int *label /* -1: absent */)
{
	for (int i = 0; i < nterms; i++) {
		int v = label[t[i].key];
		bool in = false;

		for (int j = 0; j < t[i].nvalues; j++)
			in |= v >= 0 && t[i].values[j] == v;
		switch (t[i].op) {
		case SELECTOR_EQ: case SELECTOR_IN: if (!in) return false; break;
		case SELECTOR_NE: case SELECTOR_NOTIN: if (in) return false; break;
		case SELECTOR_EXISTS: if (v < 0) return false; break;
		case SELECTOR_ABSENT: if (v >= 0) return false; break;
		case SELECTOR_GT:
		case SELECTOR_LT:
			if (v < 0 || !number(vals[v]) || (t[i].op == SELECTOR_GT ? !(atoi(vals[v]) > atoi(vals[t[i].values[0]]))
									      : !(atoi(vals[v]) < atoi(vals[t[i].values[0]]))))
				return false;
			break;
		}
	}
	return true;
}

static const char *blank(uint64_t *st)
{
	static const char *const b[] = { "", "", " ", "  ", "\t" };
	return b[test_rnd(st, 5)];
}

/* Write the terms out in a random spelling of the same meaning. */
static void render(const struct ref_term *t, int n, uint64_t *st, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (int i = 0; i < n; i++) {
		const char *k = keys[t[i].key];

		o += (size_t)snprintf(out + o, len - o, "%s%s%s", i ? "," : "", blank(st), blank(st));
		switch (t[i].op) {
		case SELECTOR_EQ:
		case SELECTOR_NE:
		case SELECTOR_GT:
		case SELECTOR_LT:
			o += (size_t)snprintf(out + o, len - o, "%s%s%s%s%s", k, blank(st),
					      t[i].op == SELECTOR_EQ ? (test_rnd(st, 2) ? "=" : "==")
					      : t[i].op == SELECTOR_NE ? "!=" : t[i].op == SELECTOR_GT ? ">" : "<",
					      blank(st), vals[t[i].values[0]]);
			break;
		case SELECTOR_IN:
		case SELECTOR_NOTIN:
			o += (size_t)snprintf(out + o, len - o, "%s %s%s(", k, t[i].op == SELECTOR_IN ? "in" : "notin",
					      blank(st));
			for (int j = 0; j < t[i].nvalues; j++)
				o += (size_t)snprintf(out + o, len - o, "%s%s%s%s", j ? "," : "", blank(st),
						      vals[t[i].values[j]], blank(st));
			o += (size_t)snprintf(out + o, len - o, ")");
			break;
		case SELECTOR_EXISTS:
			o += (size_t)snprintf(out + o, len - o, "%s", k);
			break;
		case SELECTOR_ABSENT:
			o += (size_t)snprintf(out + o, len - o, "!%s%s", blank(st), k);
			break;
		}
		o += (size_t)snprintf(out + o, len - o, "%s", blank(st));
	}
}

TEST(selector_random_against_reference)
{
	uint64_t st = test_seed() | 1;

	for (int round = 0; round < 20000 && !test_failed(); round++) {
		struct ref_term t[6];
		int n = (int)test_rnd(&st, 6);
		char text[1024];
		struct selector s = { 0 };

		for (int i = 0; i < n; i++) {
			t[i].op = (enum selector_op)test_rnd(&st, 8);
			t[i].key = (int)test_rnd(&st, KEYS);
			t[i].nvalues = t[i].op == SELECTOR_IN || t[i].op == SELECTOR_NOTIN ? 1 + (int)test_rnd(&st, 4)
				       : t[i].op == SELECTOR_EXISTS || t[i].op == SELECTOR_ABSENT ? 0 : 1;
			for (int j = 0; j < t[i].nvalues; j++)
				t[i].values[j] = (int)test_rnd(&st, VALS);
			if (t[i].op == SELECTOR_GT || t[i].op == SELECTOR_LT)
				t[i].values[0] = 2 + (int)test_rnd(&st, 2);	/* an integer is required there */
			if (t[i].nvalues > 1 && vals[t[i].values[t[i].nvalues - 1]][0] == 0)
				t[i].values[t[i].nvalues - 1] = 1;	/* "(a,,)" is malformed, as in Kubernetes */
		}
		render(t, n, &st, text, sizeof(text));
		if (selector_parse_labels(&s, text, err, sizeof(err))) {
			test_fail(__FILE__, __LINE__, "'%s' did not parse: %s", text, err);
			break;
		}
		CHECK_EQ(s.nlabels, n);
		for (int probe = 0; probe < 16 && !test_failed(); probe++) {
			int label[KEYS];
			json_t *labels = json_object();
			struct selector_view v = { .field = { "", "", "" }, .labels = labels };

			for (int k = 0; k < KEYS; k++) {
				label[k] = (int)test_rnd(&st, VALS + 1) - 1;
				if (label[k] >= 0)
					json_object_set_new(labels, keys[k], json_string(vals[label[k]]));
			}
			if (selector_matches(&s, &v) != ref_match(t, n, label))
				test_fail(__FILE__, __LINE__, "'%s' on %s: %d", text, json_dumps(labels, JSON_COMPACT),
					  selector_matches(&s, &v));
			json_decref(labels);
		}
		selector_free(&s);
	}
}

TEST(selector_random_fields_escape)
{
	static const char alphabet[] = "ab,=\\!-.";
	uint64_t st = test_seed() | 1;

	for (int round = 0; round < 5000 && !test_failed(); round++) {
		char value[16], escaped[40], text[80];
		size_t n = test_rnd(&st, sizeof(value)), e = 0;
		struct selector s = { 0 };
		struct selector_view v = { .field = { value, "", "" } };

		for (size_t i = 0; i < n; i++) {
			value[i] = alphabet[test_rnd(&st, sizeof(alphabet) - 1)];
			if (value[i] == ',' || value[i] == '=' || value[i] == '\\')
				escaped[e++] = '\\';
			escaped[e++] = value[i];
		}
		value[n] = 0;
		escaped[e] = 0;
		snprintf(text, sizeof(text), "metadata.name%s%s", test_rnd(&st, 2) ? "==" : "=", escaped);
		CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_NODE), text, err, sizeof(err)), 0);
		CHECK_STR(selector_exact(&s, SELECTOR_FIELD_NAME), value);
		CHECK(selector_matches(&s, &v));
		selector_free(&s);
	}
}

/* ---------------------------------------------------------------- hostile inputs */

static char *repeat(const char *unit, size_t times, const char *sep)
{
	size_t u = strlen(unit), s = strlen(sep);
	char *out = malloc(times * (u + s) + 1), *p = out;

	for (size_t i = 0; out && i < times; i++) {
		if (i) {
			memcpy(p, sep, s);
			p += s;
		}
		memcpy(p, unit, u);
		p += u;
	}
	if (out)
		*p = 0;
	return out;
}

static int parse_text(const char *text)
{
	struct selector s = { 0 };
	int rc = selector_parse_labels(&s, text, err, sizeof(err));

	selector_free(&s);
	return rc;
}

TEST(selector_hostile_bounds)
{
	char *t;
	struct selector s = { 0 };

	t = repeat("a", 100, ",");		/* 100 requirements: the limit */
	CHECK_EQ(parse_text(t), 0);
	free(t);
	t = repeat("a", 101, ",");
	CHECK_EQ(parse_text(t), -E2BIG);
	CHECK_CONTAINS(err, "more than 100 requirements");
	free(t);
	t = repeat("a", 5000, "");		/* one very long identifier */
	CHECK_EQ(parse_text(t), -E2BIG);
	CHECK_CONTAINS(err, "longer than 4096 bytes");
	free(t);
	t = repeat("a", 2048, ",");		/* 4095 bytes: within the length, over the terms */
	CHECK_EQ(parse_text(t), -E2BIG);
	free(t);
	t = repeat("(", 4000, "");		/* deeply repeated, unbalanced */
	CHECK_EQ(parse_text(t), -EINVAL);
	free(t);
	t = repeat("a in (b", 500, ",");	/* unbalanced, repeated */
	CHECK_EQ(parse_text(t), -EINVAL);
	free(t);
	t = repeat(",", 4000, "");		/* nothing but empty terms */
	CHECK_EQ(parse_text(t), -EINVAL);
	free(t);
	t = repeat(")", 100, " ");
	CHECK_EQ(parse_text(t), -EINVAL);
	free(t);
	{
		char text[1024];
		size_t o = (size_t)snprintf(text, sizeof(text), "a in (");

		for (int i = 0; i < 100; i++)
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%sv%d", i ? "," : "", i);
		snprintf(text + o, sizeof(text) - o, ")");
		CHECK_EQ(parse_text(text), 0);	/* 100 values: the limit */
		snprintf(text + o, sizeof(text) - o, ",x)");
		CHECK_EQ(parse_text(text), -E2BIG);
		CHECK_CONTAINS(err, "more than 100 values in one set");
	}
	/* a key of 253 + 1 + 63 bytes is valid; one more is not */
	{
		char *prefix = repeat("a", 253, ""), *name = repeat("b", 63, ""), text[400];

		snprintf(text, sizeof(text), "%s/%s=v", prefix, name);
		CHECK_EQ(parse_text(text), 0);
		snprintf(text, sizeof(text), "%s/%sb=v", prefix, name);
		CHECK_EQ(parse_text(text), -EINVAL);
		free(prefix);
		free(name);
	}
	t = repeat("metadata.name=a", 101, ",");
	CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_POD), t, err, sizeof(err)), -E2BIG);
	free(t);
	t = repeat("x", 5000, "");
	CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_POD), t, err, sizeof(err)), -E2BIG);
	free(t);
	t = repeat(",", 4096, "");
	CHECK_EQ(selector_parse_fields(&s, kind_get(KIND_POD), t, err, sizeof(err)), 0);	/* all empty */
	free(t);
	CHECK(selector_empty(&s));
	selector_free(&s);
}

/* Random bytes from the grammar's alphabet: never a crash, a leak or an
 * answer other than parsed / malformed / too big; what parses parses the
 * same again. */
TEST(selector_hostile_random)
{
	static const char alphabet[] = "ab!=(),<> \tin1_-./";
	uint64_t st = test_seed() | 1;

	for (int round = 0; round < 50000 && !test_failed(); round++) {
		char text[64];
		size_t n = test_rnd(&st, sizeof(text));
		struct selector s = { 0 }, again = { 0 };
		int rc;

		for (size_t i = 0; i < n; i++)
			text[i] = alphabet[test_rnd(&st, sizeof(alphabet) - 1)];
		text[n] = 0;
		rc = selector_parse_labels(&s, text, err, sizeof(err));
		if (rc != 0 && rc != -EINVAL && rc != -E2BIG)
			test_fail(__FILE__, __LINE__, "'%s': %d", text, rc);
		if (rc == 0) {
			CHECK_EQ(selector_parse_labels(&again, text, err, sizeof(err)), 0);
			CHECK_EQ(again.nlabels, s.nlabels);
		} else {
			CHECK_EQ(s.nlabels, 0);
		}
		rc = selector_parse_fields(&s, kind_get(KIND_POD), text, err, sizeof(err));
		if (rc != 0 && rc != -EINVAL && rc != -E2BIG)
			test_fail(__FILE__, __LINE__, "'%s' (fields): %d", text, rc);
		selector_free(&s);
		selector_free(&again);
	}
}

/* ---------------------------------------------------------------- LabelSelector objects */

static int object_verdict(const char *ls_json, const char *labels_json)
{
	struct selector s = { 0 };
	struct selector_view v = { .field = { "", "", "" } };
	json_t *ls = ls_json ? labels_of(ls_json) : NULL, *labels = labels_of(labels_json);
	int rc = selector_from_label_selector(&s, ls, err, sizeof(err));

	if (rc == 0) {
		v.labels = labels;
		rc = selector_matches(&s, &v) ? 1 : 0;
	}
	selector_free(&s);
	json_decref(ls);
	json_decref(labels);
	return rc;
}

TEST(selector_label_selector_object)
{
#define L "{\"app\":\"web\",\"tier\":\"front\"}"
	struct selector s = { 0 };
	json_t *bad;

	CHECK_EQ(object_verdict(NULL, L), 1);
	CHECK_EQ(object_verdict("{}", L), 1);
	CHECK_EQ(object_verdict("{\"matchLabels\":{\"app\":\"web\",\"tier\":\"front\"}}", L), 1);
	CHECK_EQ(object_verdict("{\"matchLabels\":{\"app\":\"web\",\"tier\":\"back\"}}", L), 0);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"db\",\"web\"]}]}", L), 1);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"prod\"]}]}", L), 1);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":[\"web\"]}]}", L), 0);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}", L), 1);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"DoesNotExist\"}]}", L), 0);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}],"
				"\"matchLabels\":{\"tier\":\"back\"}}", L), 0);
	CHECK_EQ(object_verdict("{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}", L),
		 -EINVAL);
	CHECK_CONTAINS(err, "matchExpressions[0].operator: 'Gt'");
	CHECK_EQ(object_verdict("{\"matchLabels\":{\"app\":\"not a value\"}}", L), -EINVAL);
	CHECK_CONTAINS(err, "matchLabels: 'not a value' is not a valid label value");
	CHECK_EQ(object_verdict("[]", L), -EINVAL);
	/* a failed call leaves s as it was */
	CHECK_EQ(selector_parse_labels(&s, "app=web", err, sizeof(err)), 0);
	bad = labels_of("{\"matchLabels\":{\"a\":\"b\"},\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"In\"}]}");
	CHECK_EQ(selector_from_label_selector(&s, bad, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS(err, "matchExpressions[0].values: must be non-empty for operator In");
	CHECK_EQ(s.nlabels, 1);
	json_decref(bad);
	selector_free(&s);
#undef L
}

/* selector_network_changed: what an agent's changes=network watch is sent */
static int net_changed(const char *old, const char *now)
{
	json_t *a = json_loads(old, 0, NULL), *b = json_loads(now, 0, NULL);
	int r = a && b ? selector_network_changed(a, b) : -1;

	json_decref(a);
	json_decref(b);
	return r;
}

TEST(selector_network_changes)
{
#define NODE(ann, cidr, ip) "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"annotations\":{" ann "}}," \
	"\"spec\":{\"podCIDR\":\"" cidr "\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"" ip "\"}]}}"
	/* an agent's reports on its Node: nothing; the subnet, address, node ID: changed */
	CHECK_EQ(net_changed(NODE("\"weft.io/drops\":\"1\"", "10.128.0.0/23", "1.2.3.4"),
			     NODE("\"weft.io/drops\":\"2\"", "10.128.0.0/23", "1.2.3.4")), 0);
	CHECK_EQ(net_changed(NODE("", "10.128.0.0/23", "1.2.3.4"), NODE("", "10.128.2.0/23", "1.2.3.4")), 1);
	CHECK_EQ(net_changed(NODE("", "10.128.0.0/23", "1.2.3.4"), NODE("", "10.128.0.0/23", "1.2.3.5")), 1);
	CHECK_EQ(net_changed(NODE("\"weft.io/node-id\":\"1\"", "10.128.0.0/23", "1.2.3.4"),
			     NODE("\"weft.io/node-id\":\"2\"", "10.128.0.0/23", "1.2.3.4")), 1);
	CHECK_EQ(net_changed(NODE("", "10.128.0.0/23", "1.2.3.4"),
			     NODE("\"weft.io/node-id\":\"2\"", "10.128.0.0/23", "1.2.3.4")), 1);
#define POD(labels, ann, spec, status) "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{" labels "}," \
	"\"annotations\":{" ann "}},\"spec\":{" spec "},\"status\":{" status "}}"
	CHECK_EQ(net_changed(POD("", "\"note\":\"a\"", "\"nodeName\":\"n\"", "\"phase\":\"Pending\""),
			     POD("", "\"note\":\"b\"", "\"nodeName\":\"n\"", "\"phase\":\"Running\"")), 0);
	CHECK_EQ(net_changed(POD("\"app\":\"a\"", "", "", ""), POD("\"app\":\"b\"", "", "", "")), 1);
	CHECK_EQ(net_changed(POD("", "", "\"nodeName\":\"n\"", ""), POD("", "", "\"nodeName\":\"m\"", "")), 1);
	CHECK_EQ(net_changed(POD("", "", "", ""), POD("", "", "", "\"podIP\":\"10.128.0.2\"")), 1);
	CHECK_EQ(net_changed(POD("", "\"weft.io/container-id\":\"a\"", "", ""),
			     POD("", "\"weft.io/container-id\":\"b\"", "", "")), 1);
	/* other kinds: every change counts */
	CHECK_EQ(net_changed("{\"kind\":\"Service\",\"metadata\":{\"annotations\":{\"a\":\"1\"}}}",
			     "{\"kind\":\"Service\",\"metadata\":{\"annotations\":{\"a\":\"2\"}}}"), 1);
#undef NODE
#undef POD
}
