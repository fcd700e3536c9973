/*
 * jview_test.c — the view against jansson, which is the reference: every
 * text is given to json_loadb(text, len, 0) and to jview_parse, which must
 * accept it exactly when jansson does, and then read what jansson reads.
 * What is read is compared twice: jval_to_json's tree must be json_equal
 * to jansson's, and a walk of the view with the readers (jval_first and
 * jval_next, jval_get, jval_path, jval_at, jval_str, jval_integer,
 * jval_size, jval_key, and every reader on a value of the wrong type)
 * must match jansson's tree value by value.
 *
 * The texts: random valid ones (nested objects and arrays, keys with
 * escapes and multi-byte characters that sometimes name a member twice,
 * strings with every escape and surrogate pairs, integers up to the
 * limits of int64_t and -0, reals with exponents, literals, white space
 * between tokens, and now and then a token at the edge of validity); the
 * same texts damaged (a byte removed, inserted or replaced, two bytes
 * swapped, the text cut short); many of them in one long text; and
 * hand-written cases for each rule on both sides of it (the depth limit
 * too), with jansson's verdict written down as well.  Then where errors
 * are reported, and the readers on none and on values of other types.
 */
#include "lib/jview.h"
#include "test.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct text {
	char *s;
	size_t n, cap;
};

static void putn(struct text *t, const char *s, size_t n)
{
	if (t->n + n + 1 > t->cap) {
		t->cap = (t->n + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
	}
	memcpy(t->s + t->n, s, n);
	t->n += n;
	t->s[t->n] = 0;
}

static void put(struct text *t, const char *s)
{
	putn(t, s, strlen(s));
}

static const char *pick(uint64_t *st, const char *const *list, size_t n)
{
	return list[test_rnd(st, (uint32_t)n)];
}

static uint64_t rnd64(uint64_t *st)
{
	return ((uint64_t)test_rnd(st, 1u << 31) << 33) ^ ((uint64_t)test_rnd(st, 1u << 31) << 2) ^ test_rnd(st, 4);
}

/* Tokens at the edge of validity, each alone in its value's place. */
static const char *const edgy[] = {
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551616", "1e400", "-1e309", "1.8e308", "1e-400", "4.9e-324", "01", "-01", "1.",
	".5", "+1", "-", "1e", "1e+", "\"\\ud800\"", "\"\\udc00\"", "\"\\u0000\"", "\"\\ud800\\u0041\"",
	"\"\\ud800\\\"\"", "\"\\udbff\\udfff\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xed\x9f\xbf\"",
	"\"\xf4\x90\x80\x80\"", "\"\xf4\x8f\xbf\xbf\"", "\"\xe0\x9f\xbf\"", "\"\xf0\x8f\xbf\xbf\"",
	"\"\x7f\"", "\"\t\"", "\"\\x\"", "\"\\U0041\"", "tru", "nul", "falsee", "True", "[1,]", "{,}",
};

static void ws(struct text *t, uint64_t *st)
{
	static const char *const w[] = { " ", "\n", "\t", "\r\n  ", "  \t" };

	if (test_rnd(st, 4) == 0)
		put(t, pick(st, w, NELEM(w)));
}

static void string(struct text *t, uint64_t *st)
{
	static const char *const parts[] = {
		"a", "name", "svc-1", ".", " ", "{}[],:", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r",
		"\\t", "\\u0041", "\\u00e9", "\\u00E9", "\\u07ff", "\\u0800", "\\u20AC", "\\uffff",
		"\\u0001", "\\u001f", "\\uD834\\uDD1E", "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "\xc3\xa9",
		"\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xef\xbf\xbf", "\xed\x9f\xbf",
		"\xee\x80\x80", "\x7f", "0123456789abcdef0123456789abcdef",
	};
	int n = (int)test_rnd(st, 6);

	put(t, "\"");
	for (int i = 0; i < n; i++) {
		if (test_rnd(st, 4) == 0) {
			char c = (char)(' ' + test_rnd(st, 95));

			if (c == '"' || c == '\\')
				c = 'x';
			putn(t, &c, 1);
		} else {
			put(t, pick(st, parts, NELEM(parts)));
		}
	}
	put(t, "\"");
}

/* Keys from a small set, so that a name comes twice now and then (also
 * spelled two ways: "a" and "\u0061"). */
static void key(struct text *t, uint64_t *st)
{
	static const char *const keys[] = {
		"\"a\"", "\"b\"", "\"name\"", "\"metadata\"", "\"\\u0061\"", "\"\xc3\xa9\"", "\"\\u00e9\"",
		"\"k.x\"", "\"\"", "\"sp ace\"", "\"\\\"q\\\"\"",
	};

	if (test_rnd(st, 3) == 0)
		string(t, st);
	else
		put(t, pick(st, keys, NELEM(keys)));
}

static void integer(struct text *t, uint64_t *st)
{
	static const char *const fixed[] = { "0", "-0", "9223372036854775807", "-9223372036854775808", "1", "-1" };
	char b[32];

	if (test_rnd(st, 3) == 0) {
		put(t, pick(st, fixed, NELEM(fixed)));
		return;
	}
	snprintf(b, sizeof(b), "%s%" PRIu64, test_rnd(st, 2) ? "-" : "", rnd64(st) >> (1 + test_rnd(st, 63)));
	put(t, b);
}

static void real(struct text *t, uint64_t *st)
{
	static const char *const fixed[] = {
		"0.0", "-0.0", "1.5", "-2.25e-3", "1E+2", "6.02214076e23", "1.7976931348623157e308",
		"-1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308", "1e-400", "0e0",
		"123456789012345678901234567890.5", "0.1", "100e-2", "1e0", "-0E-0",
	};
	char b[64];
	int n;

	if (test_rnd(st, 3) == 0) {
		put(t, pick(st, fixed, NELEM(fixed)));
		return;
	}
	n = snprintf(b, sizeof(b), "%s%" PRIu64, test_rnd(st, 2) ? "-" : "", rnd64(st) >> test_rnd(st, 64));
	if (test_rnd(st, 2))
		n += snprintf(b + n, sizeof(b) - (size_t)n, ".%u", test_rnd(st, 100000));
	if (test_rnd(st, 2) || !strchr(b, '.'))	/* without either it is an integer */
		snprintf(b + n, sizeof(b) - (size_t)n, "%s%s%u", test_rnd(st, 2) ? "e" : "E",
			 (const char *const[]){ "", "+", "-" }[test_rnd(st, 3)], test_rnd(st, 300));
	put(t, b);
}

static void value(struct text *t, uint64_t *st, int depth);

static void container(struct text *t, uint64_t *st, int depth, bool object)
{
	int n = (int)test_rnd(st, 6);

	put(t, object ? "{" : "[");
	for (int i = 0; i < n; i++) {
		ws(t, st);
		if (i) {
			put(t, ",");
			ws(t, st);
		}
		if (object) {
			key(t, st);
			ws(t, st);
			put(t, ":");
			ws(t, st);
		}
		value(t, st, depth + 1);
	}
	ws(t, st);
	put(t, object ? "}" : "]");
}

static void value(struct text *t, uint64_t *st, int depth)
{
	static const char *const literals[] = { "true", "false", "null" };
	unsigned k = test_rnd(st, depth > 4 ? 5 : 7);

	if (test_rnd(st, 400) == 0) {
		put(t, pick(st, edgy, NELEM(edgy)));
		return;
	}
	switch (k) {
	case 0: string(t, st); break;
	case 1: integer(t, st); break;
	case 2: real(t, st); break;
	case 3: put(t, pick(st, literals, NELEM(literals))); break;
	case 4: string(t, st); break;
	case 5: container(t, st, depth, true); break;
	default: container(t, st, depth, false); break;
	}
}

static void document(struct text *t, uint64_t *st)
{
	t->n = 0;
	ws(t, st);
	container(t, st, 0, test_rnd(st, 3) != 0);
	ws(t, st);
}

/* The text for a message: printable, escaped, cut after 1600 characters. */
static const char *show(const char *s, size_t n)
{
	static char b[2048];
	size_t o = 0;

	for (size_t i = 0; i < n && o < 1600; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= ' ' && c < 0x7f && c != '\\')
			b[o++] = (char)c;
		else
			o += (size_t)snprintf(b + o, sizeof(b) - o, "\\x%02x", c);
	}
	b[o] = 0;
	return b;
}

static char why[512];

__attribute__((format(printf, 1, 2)))
static bool differ(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

static bool same(struct jval x, const json_t *j, struct jval root, const char *path);

/* Every reader of another type answers none, NULL or 0. */
static bool wrong_types(struct jval x)
{
	enum jval_type t = jval_type(x);

	if (t != JVAL_STRING && (jval_str(x) || jval_strlen(x)))
		return differ("a string read from a value of type %d", t);
	if (t != JVAL_INTEGER && jval_integer(x))
		return differ("an integer read from a value of type %d", t);
	if (t != JVAL_OBJECT && t != JVAL_ARRAY && (jval_size(x) || jval_ok(jval_first(x))))
		return differ("members read from a value of type %d", t);
	if (t != JVAL_OBJECT && (jval_ok(jval_get(x, "a")) || jval_ok(jval_get(x, ""))))
		return differ("a member got from a value of type %d", t);
	if (t != JVAL_ARRAY && jval_ok(jval_at(x, 0)))
		return differ("an element got from a value of type %d", t);
	return true;
}

static bool same_object(struct jval x, const json_t *j, struct jval root, const char *path)
{
	size_t members = 0, distinct = 0;

	for (struct jval m = jval_first(x); jval_ok(m); m = jval_next(m)) {
		const char *k = jval_key(m), *sub = NULL;
		char buf[1024];
		const json_t *jm;

		members++;
		if (!k)
			return differ("a member without a key");
		if (jval_get(x, k).at != m.at)
			continue;	/* an earlier member of a name that comes again */
		distinct++;
		if (!(jm = json_object_get(j, k)))
			return differ("key \"%s\" is not in jansson's object", k);
		if (!strchr(k, '.') && x.at == root.at) {
			sub = k;
		} else if (!strchr(k, '.') && path &&
			   (size_t)snprintf(buf, sizeof(buf), "%s.%s", path, k) < sizeof(buf)) {
			sub = buf;
		}
		if (!same(m, jm, root, sub))
			return false;
	}
	if (members != jval_size(x))
		return differ("%zu members walked, jval_size %zu", members, jval_size(x));
	if (distinct != json_object_size(j))
		return differ("%zu distinct keys, jansson %zu", distinct, json_object_size(j));
	if (jval_ok(jval_get(x, "\x01 absent")) || jval_ok(jval_at(x, 0)))
		return differ("an absent member found");
	return true;
}

static bool same_array(struct jval x, const json_t *j, struct jval root)
{
	size_t i = 0;

	for (struct jval e = jval_first(x); jval_ok(e); e = jval_next(e), i++) {
		if (i >= json_array_size(j))
			return differ("more elements than jansson's %zu", json_array_size(j));
		if (jval_key(e))
			return differ("element %zu has a key", i);
		if (jval_at(x, i).at != e.at)
			return differ("jval_at(%zu) is not the walk's element", i);
		if (!same(e, json_array_get(j, i), root, NULL))
			return false;
	}
	if (i != json_array_size(j) || jval_size(x) != i || jval_ok(jval_at(x, i)))
		return differ("%zu elements walked, jval_size %zu, jansson %zu", i, jval_size(x),
			      json_array_size(j));
	return true;
}

static bool same_real(struct jval x, const json_t *j)
{
	json_t *mine = jval_to_json(x);
	double a = json_real_value(mine), b = json_real_value(j);

	json_decref(mine);
	if (a != b || !signbit(a) != !signbit(b))
		return differ("real %.17g, jansson %.17g", a, b);
	return true;
}

/* x reads as jansson's j; path: x's dotted path from root, when it has one
 * (no key on the way holds a '.' or is named twice). */
static bool same(struct jval x, const json_t *j, struct jval root, const char *path)
{
	if (!wrong_types(x))
		return false;
	if (path && jval_path(root, path).at != x.at)
		return differ("jval_path(\"%s\") is not the value", path);
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		if (!jval_is_object(x))
			return differ("type %d, jansson an object", jval_type(x));
		return same_object(x, j, root, path);
	case JSON_ARRAY:
		if (!jval_is_array(x))
			return differ("type %d, jansson an array", jval_type(x));
		return same_array(x, j, root);
	case JSON_STRING:
		if (!jval_is_string(x) || jval_strlen(x) != json_string_length(j) ||
		    memcmp(jval_str(x), json_string_value(j), jval_strlen(x)) != 0 ||
		    jval_str(x)[jval_strlen(x)] != 0)
			return differ("string \"%s\", jansson \"%s\"", jval_str(x), json_string_value(j));
		if (path && jval_path_str(root, path) != jval_str(x))
			return differ("jval_path_str(\"%s\") is not the string", path);
		return true;
	case JSON_INTEGER:
		if (!jval_is_integer(x) || jval_integer(x) != json_integer_value(j))
			return differ("integer %" PRId64 " (type %d), jansson %" PRId64, jval_integer(x),
				      jval_type(x), (int64_t)json_integer_value(j));
		return true;
	case JSON_REAL:
		if (jval_type(x) != JVAL_REAL)
			return differ("type %d, jansson a real", jval_type(x));
		return same_real(x, j);
	case JSON_TRUE:
		return jval_type(x) == JVAL_TRUE || differ("type %d, jansson true", jval_type(x));
	case JSON_FALSE:
		return jval_is_false(x) || differ("type %d, jansson false", jval_type(x));
	case JSON_NULL:
		return jval_type(x) == JVAL_NULL || differ("type %d, jansson null", jval_type(x));
	}
	return differ("jansson type %d", json_typeof(j));
}

static bool zeroed(const struct jview *v)
{
	return !v->text && !v->tok && !v->len && !v->n && !v->cap;
}

/* Parse text both ways; fails the test when they disagree.  1: both
 * accepted it, 0: both refused it. */
static int check(const char *text, size_t len, int line)
{
	json_t *j = json_loadb(text, len, 0, NULL), *mine;
	struct jview v;
	struct jview_error err;
	int rc = jview_parse(&v, text, len, &err), ok = 1;

	if ((rc == 0) != (j != NULL)) {
		test_fail(__FILE__, line, "jview %d (%s), jansson %s: %s", rc, rc ? err.text : "",
			  j ? "accepts" : "refuses", show(text, len));
		json_decref(j);
		jview_free(&v);
		return -1;
	}
	if (rc) {
		if (rc != -EINVAL || !zeroed(&v) || !err.text[0] || err.line < 1 || err.column < 1 ||
		    err.position > len)
			test_fail(__FILE__, line, "refused with %d, \"%s\" at %d:%d (%zu): %s", rc, err.text,
				  err.line, err.column, err.position, show(text, len));
		jview_free(&v);
		return 0;
	}
	mine = jval_to_json(jview_root(&v));
	if (!json_equal(mine, j)) {
		test_fail(__FILE__, line, "jval_to_json differs: %s", show(text, len));
		ok = -1;
	} else if (!same(jview_root(&v), j, jview_root(&v), NULL)) {
		test_fail(__FILE__, line, "%s: %s", why, show(text, len));
		ok = -1;
	}
	json_decref(mine);
	json_decref(j);
	jview_free(&v);
	return ok;
}

/* A text with its exact length: ASan sees a read past it. */
static int check_exact(const char *text, size_t len, int line)
{
	char *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, text, len);
	rc = check(copy, len, line);
	free(copy);
	return rc;
}

TEST(jview_random_texts)
{
	uint64_t st = test_seed() | 1;
	struct text t = { 0 };
	int accepted = 0, rounds = 4000;

	for (int round = 0; round < rounds && !test_failed(); round++) {
		document(&t, &st);
		accepted += check_exact(t.s, t.n, __LINE__) == 1;
	}
	free(t.s);
	CHECK(test_failed() || accepted > rounds / 2);
}

TEST(jview_damaged_texts)
{
	static const char bytes[] = { 0x00, 0x1f, 0x7f, (char)0x80, (char)0xbf, (char)0xc0, (char)0xc3,
				      (char)0xe0, (char)0xed, (char)0xf0, (char)0xf4, (char)0xf5, (char)0xff,
				      '"', '\\', 'u', 'd', 'D', '8', 'c', '0', '1', '9', '.', 'e', 'E', '-',
				      '+', '[', ']', '{', '}', ',', ':', ' ', '\t', '\n', 'a', 't', 'n', '/' };
	uint64_t st = test_seed() | 1;
	struct text t = { 0 };
	int accepted = 0, rounds = 20000;

	for (int round = 0; round < rounds && !test_failed(); round++) {
		char *c;
		size_t n, at;

		document(&t, &st);
		n = t.n;
		c = malloc(n + 1);
		memcpy(c, t.s, n);
		at = test_rnd(&st, (uint32_t)n);
		switch (test_rnd(&st, 5)) {
		case 0:
			memmove(c + at, c + at + 1, n - at - 1);
			n--;
			break;
		case 1:
			c[at] = bytes[test_rnd(&st, sizeof(bytes))];
			break;
		case 2:
			n = at;
			break;
		case 3:
			if (at + 1 < n) {
				char x = c[at];

				c[at] = c[at + 1];
				c[at + 1] = x;
			}
			break;
		default:
			memmove(c + at + 1, c + at, n - at);
			c[at] = bytes[test_rnd(&st, sizeof(bytes))];
			n++;
		}
		accepted += check_exact(c, n, __LINE__) == 1;
		free(c);
	}
	free(t.s);
	CHECK(test_failed() || (accepted > rounds / 20 && accepted < rounds * 19 / 20));
}

/* Texts with many more tokens than the first guess of the token array
 * (a token for every two bytes), and long ones: many random texts in one
 * array. */
TEST(jview_large_texts)
{
	uint64_t st = test_seed() | 1;
	struct text t = { 0 }, one = { 0 };
	struct jview v;

	put(&t, "[");
	for (int i = 0; i < 5000; i++)
		put(&t, i ? ",0" : "0");
	put(&t, "]");
	CHECK_EQ(jview_parse(&v, t.s, t.n, NULL), 0);
	CHECK_EQ(jval_size(jview_root(&v)), 5000);
	CHECK(jval_is_integer(jval_at(jview_root(&v), 4999)));
	jview_free(&v);
	CHECK_EQ(check(t.s, t.n, __LINE__), 1);
	for (int round = 0; round < 20 && !test_failed(); round++) {
		t.n = 0;
		put(&t, "[");
		for (int i = 0; i < 200; i++) {
			document(&one, &st);
			if (i)
				put(&t, ",");
			putn(&t, one.s, one.n);
		}
		put(&t, "]");
		(void)check_exact(t.s, t.n, __LINE__);
	}
	free(t.s);
	free(one.s);
}

struct edge {
	const char *text;
	size_t len;
	int rc;			/* what jansson says, 0 or -EINVAL */
};

#define OK(s) { s, sizeof(s) - 1, 0 }
#define NO(s) { s, sizeof(s) - 1, -EINVAL }

TEST(jview_edges)
{
	static const struct edge edges[] = {
		/* the top value, and what may surround it */
		OK("{}"), OK("[]"), OK(" [1] "), OK("\t\r\n{\n}\n"), NO(""), NO("  "), NO("1"), NO("\"a\""),
		NO("null"), NO("true"), NO("[1] x"), NO("[1]]"), NO("[1] [2]"), NO("[1]\f"), NO("[1]\0"),
		NO("\0[1]"), NO("\xef\xbb\xbf[1]"), NO("[1] \xff"), NO("[[1]"), NO("{\"a\":1"), NO("["),
		/* grammar */
		NO("[1,]"), NO("[,1]"), NO("[1 2]"), NO("{\"a\":1,}"), NO("{\"a\"}"), NO("{\"a\" 1}"),
		NO("{1:1}"), NO("{\"a\":1 \"b\":2}"), NO("[\"a\"\"b\"]"), NO("[}"), NO("{]"), NO("{,}"),
		OK("{\"\":0}"), OK("[[],{},[{}]]"),
		/* literals */
		OK("[true,false,null]"), NO("[truex]"), NO("[True]"), NO("[nul]"), NO("[tru]"), NO("[true1]"),
		NO("[nulll]"), NO("[f]"),
		/* integers */
		OK("[9223372036854775807]"), NO("[9223372036854775808]"), OK("[-9223372036854775808]"),
		NO("[-9223372036854775809]"), NO("[99999999999999999999]"), NO("[-18446744073709551616]"),
		OK("[-0]"), OK("[0]"), NO("[01]"), NO("[-01]"), NO("[00]"), NO("[-]"), NO("[+1]"), NO("[- 1]"),
		NO("[0x10]"), NO("[1a]"),
		/* reals */
		OK("[1.5]"), OK("[-0.0]"), OK("[1E+2]"), OK("[1e-2]"), OK("[0e0]"), NO("[1.]"), NO("[.5]"),
		NO("[1e]"), NO("[1e+]"), NO("[1.e5]"), NO("[1.5e]"), NO("[1ee5]"), NO("[1.2.3]"),
		NO("[1e400]"), NO("[-1e400]"), OK("[1e-400]"), OK("[-1e-400]"), OK("[4.9e-324]"),
		OK("[2e-324]"), OK("[1.7976931348623157e308]"), NO("[1.7976931348623159e308]"),
		OK("[1.7976931348623158e308]"), NO("[NaN]"), NO("[Infinity]"), NO("[-Infinity]"),
		/* strings: escapes */
		OK("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]"), OK("[\"\\u0041\\u00e9\\u00E9\\u20ac\\uFFFF\"]"),
		NO("[\"\\x\"]"), NO("[\"\\U0041\"]"), NO("[\"\\u004\"]"), NO("[\"\\u00zz\"]"), NO("[\"\\\"]"),
		NO("[\"\\"), NO("[\"\\u00"), NO("[\"\\'\"]"), NO("[\"\\a\"]"), NO("[\"\\0\"]"),
		NO("[\"\\u0000\"]"), NO("{\"\\u0000\":1}"), NO("[\"a\\u0000b\"]"), OK("[\"\\u0001\"]"),
		/* strings: \u surrogates */
		OK("[\"\\ud800\\udc00\"]"), OK("[\"\\uD834\\uDD1E\"]"), OK("[\"\\udbff\\udfff\"]"),
		NO("[\"\\ud800\"]"), NO("[\"\\udbff\"]"), NO("[\"\\udc00\"]"), NO("[\"\\udfff\"]"),
		NO("[\"\\udc00\\ud800\"]"), NO("[\"\\ud800\\u0041\"]"), NO("[\"\\ud800\\ud800\"]"),
		NO("[\"\\ud800x\"]"), NO("[\"\\ud800\\n\"]"), NO("[\"\\ud800\\u\"]"), NO("[\"\\ud800\\uDC0\"]"),
		NO("[\"\\ud800\\u0000\"]"), OK("[\"\\ud7ff\\ue000\"]"), NO("{\"\\udc00\":1}"),
		/* strings: raw bytes */
		OK("[\"\x7f\"]"), NO("[\"\x01\"]"), NO("[\"\x1f\"]"), NO("[\"\t\"]"), NO("[\"\n\"]"),
		NO("[\"a\0b\"]"), NO("{\"a\0\":1}"), NO("[\"abc"), NO("[\""),
		/* strings: UTF-8 */
		OK("[\"\xc2\x80\"]"), OK("[\"\xdf\xbf\"]"), OK("[\"\xe0\xa0\x80\"]"), OK("[\"\xed\x9f\xbf\"]"),
		OK("[\"\xee\x80\x80\"]"), OK("[\"\xef\xbf\xbf\"]"), OK("[\"\xf0\x90\x80\x80\"]"),
		OK("[\"\xf4\x8f\xbf\xbf\"]"), NO("[\"\xc0\x80\"]"), NO("[\"\xc1\xbf\"]"), NO("[\"\xe0\x9f\xbf\"]"),
		NO("[\"\xf0\x8f\xbf\xbf\"]"), NO("[\"\xed\xa0\x80\"]"), NO("[\"\xed\xbf\xbf\"]"),
		NO("[\"\xf4\x90\x80\x80\"]"), NO("[\"\xf5\x80\x80\x80\"]"), NO("[\"\xff\"]"), NO("[\"\x80\"]"),
		NO("[\"\xbf\"]"), NO("[\"\xc3\"]"), NO("[\"\xc3"), NO("[\"\xe2\x82\"]"), NO("[\"\xf0\x9f\x98\"]"),
		NO("[\"\xc3\xc3\xa9\"]"), NO("[\"\xe2\x82\xac\x80\"]"), NO("{\"\xc0\x80\":1}"),
		/* one NUL right after a number or a literal passes (jansson puts the
		 * byte after them back, and loses a NUL doing so); none elsewhere */
		OK("[1\0]"), OK("[true\0]"), OK("[false\0]"), OK("[null\0 ]"), OK("[1.5\0]"), OK("[1e5\0]"),
		OK("[-0\0]"), OK("{\"a\":1\0}"), OK("[1\0,2]"), OK("[1\0\n]"), NO("[1\0\0]"), NO("[1 \0]"),
		NO("[1\0"), NO("[1\0x]"), NO("[1\0" "5]"), NO("[1\0.5]"), NO("[tr\0ue]"), NO("[\"a\"\0]"),
		NO("[[]\0]"), NO("[{}\0]"), NO("{\"a\"\0:1}"), NO("[1,\0 2]"), NO("[1\0]\0"), NO("[-\0" "1]"),
		/* duplicate keys */
		OK("{\"a\":1,\"a\":2}"), OK("{\"a\":1,\"b\":2,\"\\u0061\":3}"),
	};

	for (size_t i = 0; i < NELEM(edges) && !test_failed(); i++) {
		const struct edge *e = &edges[i];
		struct jview v;
		int rc = jview_parse(&v, e->text, e->len, NULL);

		jview_free(&v);
		if (rc != e->rc)
			test_fail(__FILE__, __LINE__, "case %zu: %d, expected %d: %s", i, rc, e->rc,
				  show(e->text, e->len));
		else
			(void)check_exact(e->text, e->len, __LINE__);
	}
}

/* n containers one in another around inner ("[[...[inner]...]]", or
 * objects with key "a"). */
static char *nested(int n, const char *inner, bool objects, size_t *len)
{
	struct text t = { 0 };

	for (int i = 0; i < n; i++)
		put(&t, objects ? "{\"a\":" : "[");
	put(&t, inner);
	for (int i = 0; i < n; i++)
		put(&t, objects ? "}" : "]");
	*len = t.n;
	return t.s;
}

TEST(jview_depth)
{
	static const struct {
		int n;
		const char *inner;
		int rc;
	} cases[] = {
		{ JVIEW_MAX_DEPTH - 1, "", 0 }, { JVIEW_MAX_DEPTH, "", 0 }, { JVIEW_MAX_DEPTH + 1, "", -EINVAL },
		{ JVIEW_MAX_DEPTH - 1, "1", 0 }, { JVIEW_MAX_DEPTH, "1", -EINVAL },	/* a scalar counts */
		{ JVIEW_MAX_DEPTH - 1, "{}", 0 }, { JVIEW_MAX_DEPTH, "{}", -EINVAL },
		{ JVIEW_MAX_DEPTH - 1, "\"s\"", 0 }, { JVIEW_MAX_DEPTH, "\"s\"", -EINVAL },
	};

	for (size_t i = 0; i < NELEM(cases) && !test_failed(); i++) {
		for (int objects = 0; objects < 2; objects++) {
			int n = cases[i].n;
			const char *inner = cases[i].inner;
			size_t len;
			char *s;
			struct jview v;
			struct jview_error err;

			if (objects && !*inner) {
				n--;	/* the innermost container: an empty object */
				inner = "{}";
			}
			s = nested(n, inner, objects, &len);
			CHECK_EQ(jview_parse(&v, s, len, &err), cases[i].rc);
			if (cases[i].rc)
				CHECK_CONTAINS(err.text, "deep");
			jview_free(&v);
			(void)check(s, len, __LINE__);
			free(s);
		}
	}
}

TEST(jview_errors)
{
	static const struct {
		const char *text, *what;
		int line;
	} cases[] = {
		{ "[1,\n2,\n x]", "value expected", 3 },
		{ "{\"a\":\n\"b\",\n\"c\":\"\\q\"}", "invalid escape", 3 },
		{ "[\n\n\"\x01\"]", "control character 0x1", 3 },
		{ "[\n\n\"\xc0\x80\"]", "invalid UTF-8", 3 },
		{ "[\n\n99999999999999999999]", "too big integer", 3 },
		{ "[\n\n-99999999999999999999]", "too big negative integer", 3 },
		{ "[\n\n1e999]", "real number overflow", 3 },
		{ "{\n\"a\":1\n\"b\":2}", "',' or '}' expected", 3 },
		{ "[1,\n2\n}", "',' or ']' expected", 3 },
		{ "{\n\n1:2}", "string or '}' expected", 3 },
		{ "[1]\n\n x", "end of text expected", 3 },
		{ "\n\n x", "'[' or '{' expected", 3 },
		{ "[\n\n\"\\ud800\"]", "surrogate", 3 },
	};
	struct jview v;
	struct jview_error err;

	for (size_t i = 0; i < NELEM(cases); i++) {
		const char *s = cases[i].text;
		json_error_t jerr;
		json_t *j = json_loadb(s, strlen(s), 0, &jerr);

		CHECK(!j);
		memset(&v, 0xa5, sizeof(v));
		CHECK_EQ(jview_parse(&v, s, strlen(s), &err), -EINVAL);
		CHECK(zeroed(&v));
		CHECK_CONTAINS(err.text, cases[i].what);
		CHECK_EQ(err.line, cases[i].line);
		CHECK_EQ(jerr.line, cases[i].line);
		CHECK(err.position < strlen(s) && err.column >= 1);
		jview_free(&v);
	}
	/* the column (in characters) and position of the offending byte: the 'x' */
	CHECK_EQ(jview_parse(&v, "[1,\n2,\n\"\xc3\xa9\" x]", 14, &err), -EINVAL);
	CHECK_EQ(err.line, 3);
	CHECK_EQ(err.column, 5);
	CHECK_EQ(err.position, 12);
	CHECK_EQ(jview_parse(&v, "[]", (size_t)JVIEW_MAX_BYTES + 1, &err), -E2BIG);	/* not read */
	CHECK(zeroed(&v));
	CHECK_EQ(jview_parse(&v, NULL, 0, NULL), -EINVAL);
	CHECK(zeroed(&v));
	jview_free(&v);
}

TEST(jview_duplicate_keys)
{
	static const char text[] = "{\"a\":1,\"b\":{\"c\":\"x\"},\"\\u0061\":3,\"b\":{\"c\":\"y\"}}";
	static const char *const keys[] = { "a", "b", "a", "b" };
	struct jview v;
	struct jval root, m;
	json_t *j, *mine;
	size_t i = 0;

	CHECK_EQ(jview_parse(&v, text, sizeof(text) - 1, NULL), 0);
	root = jview_root(&v);
	CHECK_EQ(jval_size(root), 4);	/* every member, as written */
	CHECK_EQ(jval_integer(jval_get(root, "a")), 3);
	CHECK_STR(jval_path_str(root, "b.c"), "y");
	for (m = jval_first(root); jval_ok(m); m = jval_next(m), i++)
		CHECK_STR(jval_key(m), keys[i]);
	CHECK_EQ(i, 4);
	j = json_loads(text, 0, NULL);
	mine = jval_to_json(root);
	CHECK(j && mine && json_equal(j, mine) && json_object_size(mine) == 2);
	json_decref(j);
	json_decref(mine);
	jview_free(&v);
}

TEST(jview_kubernetes_object)
{
	static const char text[] =
		"{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\","
		"\"labels\":{\"app.kubernetes.io/name\":\"web\"},\"resourceVersion\":\"42\"},\"spec\":{\"ports\":"
		"[{\"port\":80,\"targetPort\":8080,\"protocol\":\"TCP\"},{\"port\":443}],\"clusterIP\":\"10.0.0.1\"}}";
	struct jview v;
	struct jval root, ports, labels;

	CHECK_EQ(jview_parse(&v, text, sizeof(text) - 1, NULL), 0);
	root = jview_root(&v);
	CHECK_STR(jval_str(jval_get(jval_get(root, "metadata"), "name")), "web");
	CHECK_STR(jval_path_str(root, "metadata.namespace"), "default");
	CHECK_EQ(jval_strlen(jval_path(root, "spec.clusterIP")), 8);
	ports = jval_path(root, "spec.ports");
	CHECK_EQ(jval_size(ports), 2);
	CHECK_EQ(jval_integer(jval_get(jval_at(ports, 0), "targetPort")), 8080);
	CHECK_EQ(jval_integer(jval_get(jval_at(ports, 1), "port")), 443);
	CHECK(!jval_ok(jval_at(ports, 2)));
	CHECK(!jval_ok(jval_path(root, "metadata.labels.app.kubernetes.io/name")));	/* a '.' in the key */
	labels = jval_path(root, "metadata.labels");
	CHECK_STR(jval_str(jval_get(labels, "app.kubernetes.io/name")), "web");
	CHECK(!jval_ok(jval_path(root, "metadata.")));
	CHECK(!jval_ok(jval_path(root, "")));
	CHECK(!jval_ok(jval_path(root, "spec.ports.port")));
	CHECK(!jval_ok(jval_path(root, NULL)));
	CHECK(!jval_ok(jval_get(root, NULL)));
	CHECK(!jval_ok(jval_get(root, "metadat")));
	jview_free(&v);
	jview_free(&v);		/* a zeroed view again */
}

static bool none_everywhere(struct jval x)
{
	json_t *j = jval_to_json(x);

	json_decref(j);
	return !jval_ok(x) && jval_type(x) == JVAL_NONE && !jval_is_object(x) && !jval_is_array(x) &&
	       !jval_is_string(x) && !jval_is_integer(x) && !jval_is_false(x) && !jval_ok(jval_get(x, "a")) &&
	       !jval_ok(jval_path(x, "a.b")) && !jval_str(x) && !jval_strlen(x) && !jval_path_str(x, "a") &&
	       !jval_integer(x) && !jval_size(x) && !jval_ok(jval_first(x)) && !jval_ok(jval_next(x)) &&
	       !jval_key(x) && !jval_ok(jval_at(x, 0)) && !j;
}

TEST(jview_readers_on_none)
{
	static const char text[] = "{\"s\":\"x\",\"i\":5,\"r\":1.5,\"t\":true,\"f\":false,\"n\":null,\"o\":{},\"a\":[]}";
	struct jview v = { 0 };
	struct jval root;

	CHECK(none_everywhere(jview_root(NULL)));
	CHECK(none_everywhere(jview_root(&v)));		/* a zeroed view */
	CHECK(none_everywhere((struct jval){ .view = NULL, .at = 0 }));
	jview_free(&v);
	CHECK_EQ(jview_parse(&v, text, sizeof(text) - 1, NULL), 0);
	root = jview_root(&v);
	CHECK(none_everywhere((struct jval){ .view = &v, .at = UINT32_MAX }));
	CHECK(none_everywhere((struct jval){ .view = &v, .at = v.n }));
	CHECK(none_everywhere(jval_get(root, "absent")));
	CHECK(none_everywhere(jval_next(root)));	/* the top value has no next */
	CHECK(none_everywhere(jval_first(jval_get(root, "o"))));
	CHECK(none_everywhere(jval_first(jval_get(root, "a"))));
	CHECK(none_everywhere(jval_next(jval_get(root, "a"))));	/* the last member */
	for (struct jval m = jval_first(root); jval_ok(m); m = jval_next(m))
		if (!wrong_types(m))
			test_fail(__FILE__, __LINE__, "member %s: %s", jval_key(m), why);
	CHECK_EQ(jval_type(jval_get(root, "r")), JVAL_REAL);
	CHECK(jval_is_false(jval_get(root, "f")));
	CHECK_EQ(jval_type(jval_get(root, "n")), JVAL_NULL);
	CHECK(!jval_key(root));
	jview_free(&v);
}
