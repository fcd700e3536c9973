/*
 * stored_text_test.c — stored_text_add_revision against the naive
 * reference (obj_from_kv, then jansson's dump), over random objects as the
 * registry stores them and over those texts damaged at random: whenever
 * the splice answers, its bytes are the reference's; where jansson finds a
 * text unreadable, the splice never answers; and the objects the API
 * stores every day (no reals, no control characters) always take it.
 * A damaged text that names a key twice in one object is outside the
 * form the splice assumes (stored_text.c: no dump repeats a key): it is
 * only held to answering whole or not at all.
 */
#include "controller/controller.h"
#include "controller/stored_text.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER)

static uint64_t state;

static uint64_t rnd(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

struct out {
	char *s;
	size_t len, cap;
	int fail_after;		/* > 0: the add that fails (a full buffer) */
};

static int add(const char *piece, size_t len, void *arg)
{
	struct out *o = arg;

	if (o->fail_after && --o->fail_after == 0)
		return -1;
	if (o->len + len + 1 > o->cap) {
		o->cap = (o->len + len + 1) * 2;
		o->s = realloc(o->s, o->cap);
		if (!o->s)
			return -1;
	}
	memcpy(o->s + o->len, piece, len);
	o->len += len;
	o->s[o->len] = 0;
	return 0;
}

static char *reference(const char *text, size_t len, int64_t rev)
{
	struct store_kv kv = { .key = "/weft/obj/pods/default/p", .value = (char *)text, .value_len = len,
			       .mod_rev = rev };
	json_t *obj = obj_from_kv(&kv);
	char *s = obj ? json_dumps(obj, DUMP_FLAGS) : NULL;

	json_decref(obj);
	return s;
}

static const char *const words[] = {
	"plain", "quote \" and \\ backslash", "tab\tnewline\nreturn\rform\fbell\b", "ünïcødé ✓ 𝄞",
	"", "{\"not\":\"a key\"}", "slash / here", "del \x7f", "ctrl \x01 \x1f", "metadata", "resourceVersion",
};

/* A random JSON value of at most depth levels; reals and control
 * characters only when odd is set. */
static json_t *random_value(int depth, bool odd)
{
	unsigned pick = (unsigned)(rnd() % (depth > 0 ? 9 : 6));
	json_t *v;

	switch (pick) {
	case 0: {
		const char *w = words[rnd() % (sizeof(words) / sizeof(words[0]))];

		if (!odd && strchr(w, '\x01'))
			w = "plain";
		return json_string(w);
	}
	case 1:
		return json_integer((json_int_t)(rnd() % 2000) - 1000);
	case 2:
		return json_integer((json_int_t)(rnd() >> (rnd() % 64)) * (rnd() % 2 ? 1 : -1));
	case 3:
		return rnd() % 2 ? json_true() : json_false();
	case 4:
		return json_null();
	case 5:
		return odd ? json_real((double)(rnd() % 100000) / 7.0) : json_integer(0);
	case 6:
	case 7:
		v = json_object();
		for (unsigned i = rnd() % 5; i > 0; i--) {
			char key[40];

			snprintf(key, sizeof(key), "%s%u", rnd() % 4 ? "k" : words[rnd() % 4], (unsigned)(rnd() % 50));
			json_object_set_new(v, key, random_value(depth - 1, odd));
		}
		return v;
	default:
		v = json_array();
		for (unsigned i = rnd() % 5; i > 0; i--)
			json_array_append_new(v, random_value(depth - 1, odd));
		return v;
	}
}

/* An object as the registry stores it: usually with metadata (an object,
 * sometimes empty), sometimes without or with one of another type. */
static char *random_stored(bool odd)
{
	json_t *o = json_object(), *md;
	char *s;

	json_object_set_new(o, "apiVersion", json_string("v1"));
	json_object_set_new(o, "kind", json_string("Pod"));
	switch (rnd() % 8) {
	case 0:
		break;			/* no metadata */
	case 1:
		json_object_set_new(o, "metadata", random_value(0, odd));	/* not an object */
		break;
	case 2:
		json_object_set_new(o, "metadata", json_object());
		break;
	default:
		md = json_pack("{s:s, s:s}", "name", words[rnd() % 4], "namespace", "default");
		for (unsigned i = rnd() % 3; i > 0; i--)
			json_object_set_new(md, rnd() % 2 ? "labels" : "annotations", random_value(2, odd));
		json_object_set_new(o, "metadata", md);
	}
	for (unsigned i = rnd() % 3; i > 0; i--)
		json_object_set_new(o, rnd() % 2 ? "spec" : "status", random_value(4, odd));
	s = json_dumps(o, DUMP_FLAGS);
	json_decref(o);
	return s;
}

/* The splice's answer for text (*rc): equal to the reference when given. */
static void check_one(const char *text, size_t len, bool must_take, int *rc_out)
{
	int64_t rev = (int64_t)(rnd() % 1000000000) + 1;
	char *want = reference(text, len, rev);
	struct out o = { 0 };
	int rc = stored_text_add_revision(text, len, rev, add, &o);

	*rc_out = rc;
	if (rc == 0) {
		CHECK(want != NULL);
		if (want) {
			CHECK(o.len == strlen(want));
			CHECK_STR(o.s ? o.s : "", want);
		}
	} else {
		CHECK(rc == -EINVAL);
		CHECK(o.len == 0);	/* nothing written before the answer */
		if (must_take)
			fprintf(stderr, "not taken: %.*s\n", (int)len, text);
		CHECK(!must_take);
	}
	free(o.s);
	free(want);
}

TEST(stored_text_random_against_reference)
{
	unsigned taken = 0, odd_taken = 0;

	state = test_seed() | 1;
	for (unsigned i = 0; i < 20000 && !test_failed(); i++) {
		bool odd = i % 4 == 0;
		char *text = random_stored(odd);
		int rc;

		check_one(text, strlen(text), !odd, &rc);
		if (rc == 0)
			*(odd ? &odd_taken : &taken) += 1;
		free(text);
	}
	CHECK(taken == 15000);
	CHECK(odd_taken > 0);
}

/* Does text name one key twice in an object?  jansson reads it (the last
 * value wins) but refuses it under JSON_REJECT_DUPLICATES. */
static bool repeats_a_key(const char *text, size_t len)
{
	json_t *any = json_loadb(text, len, 0, NULL), *strict;
	bool repeats = false;

	if (any) {
		strict = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
		repeats = strict == NULL;
		json_decref(strict);
	}
	json_decref(any);
	return repeats;
}

TEST(stored_text_damaged_texts)
{
	static const char junk[] = "{}[]\",:\\-0123456789.eEtrufalsn \x01\x7f\xc3\xa9\xed\xa0\x80\xff";

	state = test_seed() | 1;
	for (unsigned i = 0; i < 20000 && !test_failed(); i++) {
		char *text = random_stored(i % 2), *t;
		size_t len = strlen(text);
		int rc;

		t = malloc(len + 8);
		memcpy(t, text, len);
		switch (rnd() % 4) {
		case 0:		/* cut short */
			len = rnd() % (len + 1);
			break;
		case 1:		/* one byte changed */
			t[rnd() % len] = junk[rnd() % (sizeof(junk) - 1)];
			break;
		case 2:		/* one byte inserted */
		{
			size_t at = rnd() % (len + 1);

			memmove(t + at + 1, t + at, len - at);
			t[at] = junk[rnd() % (sizeof(junk) - 1)];
			len++;
			break;
		}
		default:	/* something after it */
			t[len++] = rnd() % 2 ? ' ' : '}';
		}
		if (repeats_a_key(t, len)) {
			/* outside the form the splice takes (stored_text.c:
			 * no dump repeats a key), so not judged by bytes; it
			 * must still answer without writing half */
			struct out o = { 0 };

			rc = stored_text_add_revision(t, len, 1, add, &o);
			CHECK(rc == 0 || (rc == -EINVAL && o.len == 0));
			free(o.s);
		} else {
			check_one(t, len, false, &rc);
		}
		free(t);
		free(text);
	}
}

TEST(stored_text_cases)
{
	static const struct { const char *in; const char *out; } cases[] = {
		{ "{\"metadata\":{}}", "{\"metadata\":{\"resourceVersion\":\"7\"}}" },
		{ "{\"metadata\":{\"name\":\"a\"},\"x\":[{}]}",
		  "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"},\"x\":[{}]}" },
		{ "{\"a\":{\"metadata\":{}},\"metadata\":{\"l\":{\"resourceVersion\":\"1\"}}}",
		  "{\"a\":{\"metadata\":{}},\"metadata\":{\"l\":{\"resourceVersion\":\"1\"},\"resourceVersion\":\"7\"}}" },
		{ "{\"kind\":\"X\"}", "{\"kind\":\"X\"}" },
		{ "{\"metadata\":[1,2]}", "{\"metadata\":[1,2]}" },
		{ "{\"a\":[9223372036854775807,-9223372036854775808,0,-1]}",
		  "{\"a\":[9223372036854775807,-9223372036854775808,0,-1]}" },
	};
	static const char *const refused[] = {
		"", "[]", "{\"metadata\":{\"resourceVersion\":\"3\"}}", "{\"metadata\":{},\"metadata\":{}}",
		"{\"a\": 1}", "{\"a\":1.5}", "{\"a\":-0}", "{\"a\":9223372036854775808}", "{\"a\":12345678901234567890}", "{\"a\":\"\\u0041\"}",
		"{\"a\":\"\\/\"}", "{\"a\":1}\n", "{\"a\":tru}", "{\"a\":\"\xed\xa0\x80\"}",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct out o = { 0 };

		CHECK(stored_text_add_revision(cases[i].in, strlen(cases[i].in), 7, add, &o) == 0);
		CHECK_STR(o.s ? o.s : "", cases[i].out);
		free(o.s);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct out o = { 0 };

		CHECK(stored_text_add_revision(refused[i], strlen(refused[i]), 7, add, &o) == -EINVAL);
		CHECK(o.len == 0);
		free(o.s);
	}
	/* a failed add: -ENOMEM */
	{
		struct out o = { .fail_after = 2 };

		CHECK(stored_text_add_revision(cases[1].in, strlen(cases[1].in), 7, add, &o) == -ENOMEM);
		free(o.s);
	}
}

TEST(stored_text_deep_nesting)
{
	size_t depth = JSON_PARSER_MAX_DEPTH + 10, n = 0;
	char *t = malloc(2 * depth + 64);
	struct out o = { 0 };

	n += (size_t)sprintf(t, "{\"metadata\":{},\"x\":");
	for (size_t i = 0; i < depth; i++)
		t[n++] = '[';
	for (size_t i = 0; i < depth; i++)
		t[n++] = ']';
	t[n++] = '}';
	CHECK(stored_text_add_revision(t, n, 1, add, &o) == -EINVAL);	/* jansson's to refuse */
	CHECK(reference(t, n, 1) == NULL);
	free(o.s);
	free(t);
}
