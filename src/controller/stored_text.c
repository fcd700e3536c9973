/*
 * stored_text.c — a stored object's text with its resourceVersion spliced
 * in, byte for byte what parsing it and dumping it again would write
 * (stored_text.h).
 *
 * How: one pass over the text checks that it is in the form jansson's
 * compact dump writes, and finds where the top-level "metadata" object
 * closes; the output is the text up to there, ',"resourceVersion":"REV"',
 * and the rest.  No tree, no allocation.
 *
 * The form recognised — what json_dumps(obj, JSON_COMPACT |
 * JSON_PRESERVE_ORDER) writes, the way registry.c stores every object,
 * restricted to what survives json_loadb + the same dump unchanged:
 *   - a top-level object; nothing before or after it; no white space
 *     outside strings;
 *   - strings of valid UTF-8 without control characters, whose escapes
 *     are \" \\ \b \f \n \r \t (a \u escape, or any other, is left to
 *     jansson: \u0000 is refused there, and its dump writes escapes of
 *     its own choosing);
 *   - integers that fit in 64 bits, no "-0" (a real, or a bigger
 *     integer, is left to jansson);
 *   - true, false, null; nesting at most JSON_PARSER_MAX_DEPTH deep;
 *   - one top-level "metadata" key, whose object (if it is one) has no
 *     "resourceVersion" of its own (obj_from_kv would replace it in
 *     place).
 * Anything else returns -EINVAL before any output, and the caller parses:
 * the answer is then jansson's, including "unreadable".  One difference
 * is not checked, because no dump writes it: a key repeated in one object
 * (jansson keeps the last value at the first one's place; this copies
 * both).
 */
#include "controller/stored_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#define MAX_DEPTH JSON_PARSER_MAX_DEPTH
#define INT64_DIGITS 19	/* 9223372036854775807 */

/* The length of the UTF-8 sequence at p (first byte >= 0x80), 0 when it
 * is not valid: overlong, a surrogate, beyond U+10FFFF, or cut short. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	uint32_t v;

	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return n;
}

/* p at '"': just past the closing quote, or NULL. */
static const unsigned char *skip_string(const unsigned char *p, const unsigned char *end)
{
	for (p++; p < end;) {
		unsigned c = *p;
		size_t n;

		if (c == '"')
			return p + 1;
		if (c == '\\') {
			if (end - p < 2 || !strchr("\"\\bfnrt", p[1]) || !p[1])
				return NULL;
			p += 2;
		} else if (c < 0x20) {
			return NULL;
		} else if (c < 0x80) {
			p++;
		} else if ((n = utf8_seq(p, end))) {
			p += n;
		} else {
			return NULL;
		}
	}
	return NULL;
}

/* p at an integer: just past it, or NULL. */
static const unsigned char *skip_integer(const unsigned char *p, const unsigned char *end)
{
	bool negative = *p == '-';
	const unsigned char *digits = negative ? p + 1 : p;

	p = digits;
	if (p < end && *p == '0' && !negative) {	/* "0"; "-0" is jansson's */
		p++;
	} else {
		if (p >= end || *p < '1' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if (p - digits > INT64_DIGITS ||
		    (p - digits == INT64_DIGITS &&
		     memcmp(digits, negative ? "9223372036854775808" : "9223372036854775807", INT64_DIGITS) > 0))
			return NULL;	/* beyond 64 bits: jansson refuses it */
	}
	if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
		return NULL;
	return p;
}

/* p at a string, number or literal: just past it, or NULL. */
static const unsigned char *skip_scalar(const unsigned char *p, const unsigned char *end)
{
	static const char *const literals[] = { "true", "false", "null" };

	if (*p == '"')
		return skip_string(p, end);
	if (*p == '-' || (*p >= '0' && *p <= '9'))
		return skip_integer(p, end);
	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		size_t n = strlen(literals[i]);

		if ((size_t)(end - p) >= n && memcmp(p, literals[i], n) == 0)
			return p + n;
	}
	return NULL;
}

static bool is_key(const unsigned char *key, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len == n + 2 && memcmp(key + 1, name, n) == 0;
}

/* Where the top-level "metadata" object closes (*close: its '}', NULL:
 * no such object) and whether it is empty.  0, or -EINVAL. */
static int scan(const unsigned char *p, const unsigned char *end, const unsigned char **close, bool *empty)
{
	enum { KEY_OR_CLOSE, KEY, VALUE_OR_CLOSE, VALUE, AFTER_VALUE } expect = KEY_OR_CLOSE;
	unsigned char stack[MAX_DEPTH];
	int depth = 1, meta_depth = 0;
	bool meta_seen = false, meta_next = false;

	*close = NULL;
	*empty = false;
	if (p == end || *p++ != '{')
		return -EINVAL;
	stack[0] = '{';
	while (p < end) {
		const unsigned char *key;
		unsigned char c = *p;

		switch (expect) {
		case KEY_OR_CLOSE:
		case VALUE_OR_CLOSE:
			if (c == (expect == KEY_OR_CLOSE ? '}' : ']'))
				goto close_one;
			expect = expect == KEY_OR_CLOSE ? KEY : VALUE;
			continue;
		case KEY:
			key = p;
			if (c != '"' || !(p = skip_string(p, end)) || p == end || *p++ != ':')
				return -EINVAL;
			if (depth == 1 && is_key(key, (size_t)(p - 1 - key), "metadata")) {
				if (meta_seen)
					return -EINVAL;
				meta_seen = meta_next = true;
			} else if (depth == meta_depth && is_key(key, (size_t)(p - 1 - key), "resourceVersion")) {
				return -EINVAL;
			}
			expect = VALUE;
			continue;
		case VALUE:
			if (c == '{' || c == '[') {
				if (depth == MAX_DEPTH)
					return -EINVAL;
				if (meta_next && c == '{')
					meta_depth = depth + 1;
				meta_next = false;
				stack[depth++] = c;
				p++;
				expect = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
				continue;
			}
			meta_next = false;
			if (!(p = skip_scalar(p, end)))
				return -EINVAL;
			expect = AFTER_VALUE;
			continue;
		case AFTER_VALUE:
			if (c == ',') {
				p++;
				expect = stack[depth - 1] == '{' ? KEY : VALUE;
				continue;
			}
			if (c != (stack[depth - 1] == '{' ? '}' : ']'))
				return -EINVAL;
			goto close_one;
		}
close_one:
		if (depth == meta_depth) {
			*close = p;
			*empty = p[-1] == '{';
			meta_depth = 0;
		}
		p++;
		if (--depth == 0)
			return p == end ? 0 : -EINVAL;
		expect = AFTER_VALUE;
	}
	return -EINVAL;
}

int stored_text_add_revision(const char *text, size_t len, int64_t rev, stored_text_add_fn add, void *arg)
{
	const unsigned char *start = (const unsigned char *)text, *close;
	char field[64];
	bool empty;
	int n;

	if (scan(start, start + len, &close, &empty))
		return -EINVAL;
	if (!close)
		return add(text, len, arg) ? -ENOMEM : 0;
	n = snprintf(field, sizeof(field), "%s\"resourceVersion\":\"%" PRId64 "\"", empty ? "" : ",", rev);
	if (add(text, (size_t)(close - start), arg) || add(field, (size_t)n, arg) ||
	    add((const char *)close, len - (size_t)(close - start), arg))
		return -ENOMEM;
	return 0;
}
