/*
 * yaml.c — YAML 1.2 (and JSON) streams to jansson values, and back.
 *
 * Decoding: libfyaml parses and builds one document tree at a time
 * (fy_parse_load_document); we walk each tree ourselves and type plain
 * scalars with the YAML 1.2 core schema (plain_type below), so that what a
 * manifest means does not depend on libfyaml's or a YAML 1.1 reader's idea
 * of "yes" or "0755".  libfyaml reports into a fy_diag we own, configured to
 * collect errors and print nothing; the first error becomes our message.
 *
 * Invariants:
 *   1. The input handed to libfyaml is valid UTF-8 without NUL bytes (we
 *      check first: libfyaml 0.7 silently ends the stream at a bad byte).
 *   2. At most the caller's limits of JSON values and of bytes of text
 *      (struct yaml_limits; YAML_MAX_EXPANDED_NODES and _BYTES by default)
 *      are made per stream, each counted before it is made, and nesting
 *      (alias expansion included) stays under YAML_MAX_DEPTH, so an alias
 *      bomb — of many values or of one long string — fails early and
 *      small, and nothing recurses deeply.
 *   3. An alias that refers to a node being expanded (a cycle) is an error;
 *      an alias is always expanded into fresh values (no sharing), so a
 *      caller may modify one copy without changing the other.
 *   4. Aliases are resolved through our own anchor table, filled in
 *      document order (so an alias sees the latest anchor of its name
 *      defined before it), never through fy_node_resolve_alias: that one
 *      also reads "*a/b" as a path into the document (not YAML) and, in
 *      0.7.12, reads past the end of the alias text while doing so.
 *      libfyaml gets a NUL-terminated copy of the input all the same.
 *
 * Emitting: block style, two-space indentation, "- " items under their key
 * indented.  A string is plain only when reading it back gives the same
 * string under both the 1.2 core schema and YAML 1.1 readers (kubectl);
 * otherwise it is double-quoted with escapes.
 */
#include "lib/yaml.h"

#include <errno.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the core schema ---------------------------------------------------- */

enum scalar_type { SCALAR_NULL, SCALAR_BOOL, SCALAR_INT, SCALAR_FLOAT, SCALAR_STR };

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool text_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_float_text(const char *s, size_t n)
{
	size_t i = 0, digits = 0;

	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < n && is_digit(s[i]))
		i++, digits++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, digits++;
	}
	if (digits == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t exp = 0;

		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < n && is_digit(s[i]))
			i++, exp++;
		if (exp == 0)
			return false;
	}
	return i == n;
}

static bool is_special_float(const char *s, size_t n)
{
	if (n > 0 && (s[0] == '-' || s[0] == '+'))
		s++, n--;
	return text_is(s, n, ".inf") || text_is(s, n, ".Inf") || text_is(s, n, ".INF");
}

static bool is_nan(const char *s, size_t n)
{
	return text_is(s, n, ".nan") || text_is(s, n, ".NaN") || text_is(s, n, ".NAN");
}

static enum scalar_type plain_type(const char *s, size_t n)
{
	if (n == 0 || text_is(s, n, "~") || text_is(s, n, "null") || text_is(s, n, "Null") ||
	    text_is(s, n, "NULL"))
		return SCALAR_NULL;
	if (text_is(s, n, "true") || text_is(s, n, "True") || text_is(s, n, "TRUE") ||
	    text_is(s, n, "false") || text_is(s, n, "False") || text_is(s, n, "FALSE"))
		return SCALAR_BOOL;
	if (n > 2 && s[0] == '0' && s[1] == 'o' && all_of(s + 2, n - 2, "01234567"))
		return SCALAR_INT;
	if (n > 2 && s[0] == '0' && s[1] == 'x' &&
	    all_of(s + 2, n - 2, "0123456789abcdefABCDEF"))
		return SCALAR_INT;
	if ((s[0] == '-' || s[0] == '+') ? n > 1 && all_of(s + 1, n - 1, "0123456789")
					 : all_of(s, n, "0123456789"))
		return SCALAR_INT;
	if (is_float_text(s, n) || is_special_float(s, n) || is_nan(s, n))
		return SCALAR_FLOAT;
	return SCALAR_STR;
}

/* Integer text as plain_type accepted it.  0 or -ERANGE. */
static int int_value(const char *s, size_t n, json_int_t *out)
{
	unsigned base = 10;
	bool neg = false;
	unsigned long long v = 0, limit;
	size_t i = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		base = s[1] == 'o' ? 8 : 16;
		i = 2;
	} else if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		i = 1;
	}
	limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; i < n; i++) {
		unsigned d = is_digit(s[i]) ? (unsigned)(s[i] - '0')
					    : (unsigned)((s[i] | 0x20) - 'a' + 10);

		if (v > (limit - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (neg)
		*out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(json_int_t)v;
	else
		*out = (json_int_t)v;
	return 0;
}

/* ---- decoding ----------------------------------------------------------- */

#define TAG_PREFIX "tag:yaml.org,2002:"

struct decoder {
	struct yaml_limits lim;			/* what this stream may make (yaml_decode_limited) */
	size_t nodes;				/* JSON values made in this stream */
	size_t bytes;				/* bytes of strings and keys made in this stream */
	struct fy_node *open[YAML_MAX_DEPTH];	/* nodes being converted, outermost first */
	int depth;
	int line, column;			/* last position seen, 1-based */
	json_t *anchors;			/* name -> fy_node address, this document */
	int expanding;				/* > 0 inside an alias's expansion */
	int err;
	char *msg;
	size_t msglen;
};

/* Remembers where fyn starts: its own token for a scalar or alias, the
 * first one inside for a collection (libfyaml exports no node marks). */
static void note_position(struct decoder *d, struct fy_node *fyn)
{
	const struct fy_mark *m = NULL;
	struct fy_token *t;

	for (int hops = 0; fyn && hops < YAML_MAX_DEPTH; hops++) {
		void *iter = NULL;

		if (fy_node_get_type(fyn) == FYNT_SCALAR || fy_node_is_alias(fyn))
			break;
		if (fy_node_get_type(fyn) == FYNT_SEQUENCE) {
			fyn = fy_node_sequence_iterate(fyn, &iter);
		} else {
			struct fy_node_pair *pair = fy_node_mapping_iterate(fyn, &iter);

			fyn = !pair ? NULL : fy_node_pair_key(pair) ? fy_node_pair_key(pair)
								    : fy_node_pair_value(pair);
		}
	}
	t = fyn ? fy_node_get_scalar_token(fyn) : NULL;
	m = t ? fy_token_start_mark(t) : NULL;

	if (m) {
		d->line = m->line + 1;
		d->column = m->column + 1;
	}
}

/* Cuts s before a UTF-8 sequence that truncation left incomplete, so a
 * message always fits in a JSON string. */
static void trim_partial_utf8(char *s)
{
	size_t n = strlen(s), i = n, need;
	unsigned char lead;

	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || (unsigned char)s[i - 1] < 0xc0)
		return;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

__attribute__((format(printf, 3, 4)))
static void fail(struct decoder *d, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d->err)
		return;
	d->err = err;
	if (!d->msg || !d->msglen)
		return;
	n = snprintf(d->msg, d->msglen, "line %d, column %d: ", d->line, d->column);
	if (n < 0 || (size_t)n >= d->msglen)
		return;
	va_start(ap, fmt);
	vsnprintf(d->msg + n, d->msglen - (size_t)n, fmt, ap);
	va_end(ap);
	trim_partial_utf8(d->msg);
}

/* A scalar's text for a message: at most 40 bytes, no line breaks. */
static const char *excerpt(const char *s, size_t n, char buf[64])
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < 40; i++)
		buf[k++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
	if (k < n) {
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;		/* never cut a UTF-8 sequence */
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

static bool count_node(struct decoder *d)
{
	if (++d->nodes > d->lim.max_nodes) {
		fail(d, d->lim.over, "more than %zu values after expanding aliases", d->lim.max_nodes);
		return false;
	}
	return true;
}

/* Invariant 2: the bytes of text made (an alias of a long string counts
 * each time it is expanded), before they are copied. */
static bool count_bytes(struct decoder *d, size_t n)
{
	if (n > d->lim.max_bytes - d->bytes) {
		fail(d, d->lim.over, "more than %zu bytes of text after expanding aliases", d->lim.max_bytes);
		return false;
	}
	d->bytes += n;
	return true;
}

static json_t *oom(struct decoder *d)
{
	fail(d, -ENOMEM, "out of memory");
	return NULL;
}

static json_t *scalar_value(struct decoder *d, struct fy_node *fyn)
{
	size_t n = 0, taglen = 0;
	const char *s = fy_node_get_scalar(fyn, &n);
	const char *tag = fy_node_get_tag(fyn, &taglen);
	enum scalar_type want = SCALAR_STR, type;
	char ex[64];
	json_t *v;

	if (!s)
		s = "";
	if (tag && taglen == 1 && tag[0] == '!') {
		want = SCALAR_STR;		/* non-specific tag: a string */
	} else if (tag && taglen > strlen(TAG_PREFIX) &&
		   memcmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
		const char *t = tag + strlen(TAG_PREFIX);
		size_t tn = taglen - strlen(TAG_PREFIX);

		if (text_is(t, tn, "null"))
			want = SCALAR_NULL;
		else if (text_is(t, tn, "bool"))
			want = SCALAR_BOOL;
		else if (text_is(t, tn, "int"))
			want = SCALAR_INT;
		else if (text_is(t, tn, "float"))
			want = SCALAR_FLOAT;
		else if (text_is(t, tn, "str"))
			want = SCALAR_STR;
		else
			tag = NULL;		/* !!binary, !!timestamp...: by style */
	} else {
		tag = NULL;			/* local tags carry no type for JSON */
	}
	if (!tag) {
		if (fy_node_get_style(fyn) != FYNS_PLAIN)
			want = SCALAR_STR;
		else
			want = plain_type(s, n);
	}
	type = want == SCALAR_STR ? SCALAR_STR : plain_type(s, n);
	if (want == SCALAR_FLOAT && type == SCALAR_INT)
		type = SCALAR_FLOAT;
	if (type != want) {
		static const char *names[] = { "null", "bool", "int", "float", "str" };

		fail(d, -EINVAL, "'%s' is not a valid !!%s", excerpt(s, n, ex), names[want]);
		return NULL;
	}

	switch (type) {
	case SCALAR_NULL:
		v = json_null();
		break;
	case SCALAR_BOOL:
		v = json_boolean(s[0] == 't' || s[0] == 'T');
		break;
	case SCALAR_INT: {
		json_int_t i;

		if (int_value(s, n, &i) < 0) {
			fail(d, -EINVAL, "integer '%s' is out of range", excerpt(s, n, ex));
			return NULL;
		}
		v = json_integer(i);
		break;
	}
	case SCALAR_FLOAT: {
		char *copy;
		double x;

		if (is_special_float(s, n) || is_nan(s, n)) {
			fail(d, -EINVAL, "'%s' cannot be represented in JSON", excerpt(s, n, ex));
			return NULL;
		}
		copy = strndup(s, n);
		if (!copy)
			return oom(d);
		x = strtod(copy, NULL);
		free(copy);
		if (!isfinite(x)) {
			fail(d, -EINVAL, "number '%s' is out of range", excerpt(s, n, ex));
			return NULL;
		}
		v = json_real(x);
		break;
	}
	default:
		if (!count_bytes(d, n))
			return NULL;
		v = json_stringn(s, n);
		if (!v) {
			/* input is valid UTF-8, so an escape made it invalid */
			fail(d, -EINVAL, "string is not valid UTF-8");
			return NULL;
		}
		return v;
	}
	return v ? v : oom(d);
}

static json_t *convert(struct decoder *d, struct fy_node *fyn);

/* Invariant 4: anchors are recorded when first walked in document order;
 * walking them again inside an alias's expansion must not re-record them. */
static int remember_anchor(struct decoder *d, struct fy_node *fyn)
{
	struct fy_anchor *anchor = d->expanding ? NULL : fy_node_get_anchor(fyn);
	const char *name;
	size_t n = 0;
	json_t *addr;

	if (!anchor)
		return 0;
	name = fy_anchor_get_text(anchor, &n);
	if (!name)
		return 0;
	addr = json_integer((json_int_t)(uintptr_t)fyn);
	if (!addr || json_object_setn_new(d->anchors, name, n, addr) < 0) {
		oom(d);
		return d->err;
	}
	return 0;
}

/* The node an alias refers to, or NULL (reported). */
static struct fy_node *resolve(struct decoder *d, struct fy_node *alias)
{
	size_t n = 0;
	const char *name = fy_node_get_scalar(alias, &n);
	json_t *addr = name ? json_object_getn(d->anchors, name, n) : NULL;
	char ex[64];

	if (!addr) {
		fail(d, -EINVAL, "alias '*%s' refers to no anchor", excerpt(name ? name : "", n, ex));
		return NULL;
	}
	return (struct fy_node *)(uintptr_t)json_integer_value(addr);
}

/* The JSON key for a mapping key node: its scalar text. */
static int key_text(struct decoder *d, struct fy_node *key, const char **s, size_t *n)
{
	if (key && fy_node_is_alias(key)) {
		note_position(d, key);
		key = resolve(d, key);
		if (!key)
			return d->err;
	} else if (key && remember_anchor(d, key) < 0) {
		return d->err;
	}
	if (!key) {
		*s = "";
		*n = 0;
		return 0;
	}
	note_position(d, key);
	if (fy_node_get_type(key) != FYNT_SCALAR) {
		fail(d, -EINVAL, "a mapping key must be a scalar");
		return d->err;
	}
	*s = fy_node_get_scalar(key, n);
	if (!*s) {
		*s = "";
		*n = 0;
	}
	if (memchr(*s, '\0', *n)) {
		fail(d, -EINVAL, "a mapping key cannot contain a NUL character");
		return d->err;
	}
	return 0;
}

static json_t *mapping_value(struct decoder *d, struct fy_node *fyn)
{
	json_t *obj = json_object();
	struct fy_node_pair *pair;
	void *iter = NULL;

	if (!obj)
		return oom(d);
	while ((pair = fy_node_mapping_iterate(fyn, &iter))) {
		const char *ks = NULL;
		size_t kn = 0;
		char *key;
		json_t *value;
		char ex[64];

		if (key_text(d, fy_node_pair_key(pair), &ks, &kn) < 0 || !count_bytes(d, kn))
			goto fail;
		key = strndup(ks, kn);
		if (!key) {
			oom(d);
			goto fail;
		}
		if (json_object_get(obj, key)) {
			fail(d, -EINVAL, "duplicate key '%s'", excerpt(ks, kn, ex));
			free(key);
			goto fail;
		}
		value = convert(d, fy_node_pair_value(pair));
		if (!value || json_object_set_new(obj, key, value) < 0) {
			if (value)
				oom(d);
			free(key);
			goto fail;
		}
		free(key);
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

static json_t *sequence_value(struct decoder *d, struct fy_node *fyn)
{
	json_t *arr = json_array();
	struct fy_node *item;
	void *iter = NULL;

	if (!arr)
		return oom(d);
	while ((item = fy_node_sequence_iterate(fyn, &iter))) {
		json_t *value = convert(d, item);

		if (!value || json_array_append_new(arr, value) < 0) {
			if (value)
				oom(d);
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *convert(struct decoder *d, struct fy_node *fyn)
{
	json_t *v = NULL;

	if (!count_node(d))
		return NULL;
	if (!fyn)			/* an empty value ("key:" with nothing) */
		return json_null();
	note_position(d, fyn);
	if (fy_node_is_alias(fyn)) {
		struct fy_node *target = resolve(d, fyn);

		if (!target)
			return NULL;
		for (int i = 0; i < d->depth; i++) {
			if (d->open[i] == target) {
				fail(d, -EINVAL, "alias refers to a node that contains it");
				return NULL;
			}
		}
		d->nodes--;		/* the alias itself is not a value */
		d->expanding++;
		v = convert(d, target);
		d->expanding--;
		return v;
	}
	if (remember_anchor(d, fyn) < 0)
		return NULL;
	if (d->depth == d->lim.max_depth) {
		fail(d, d->lim.over, "nesting deeper than %d levels", d->lim.max_depth);
		return NULL;
	}
	d->open[d->depth++] = fyn;
	switch (fy_node_get_type(fyn)) {
	case FYNT_SCALAR:
		v = scalar_value(d, fyn);
		break;
	case FYNT_SEQUENCE:
		v = sequence_value(d, fyn);
		break;
	case FYNT_MAPPING:
		v = mapping_value(d, fyn);
		break;
	}
	d->depth--;
	return v;
}

/* Invariant 1: UTF-8 (no overlongs, surrogates or values past U+10FFFF),
 * no NUL.  0, or -EINVAL with the position of the first bad byte. */
static int check_text(const char *buf, size_t len, struct decoder *d)
{
	const unsigned char *s = (const unsigned char *)buf;
	int line = 1, column = 1;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], need, cp, min;

		if (c == 0) {
			d->line = line, d->column = column;
			fail(d, -EINVAL, "NUL character in input");
			return d->err;
		}
		if (c < 0x80) {
			need = 0, cp = c, min = 0;
		} else if ((c & 0xe0) == 0xc0) {
			need = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			need = 3, cp = c & 0x07, min = 0x10000;
		} else {
			goto bad;
		}
		if (len - i - 1 < need)
			goto bad;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				goto bad;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		if (c == '\n')
			line++, column = 1;
		else
			column++;
		i += need + 1;
	}
	return 0;
bad:
	d->line = line, d->column = column;
	fail(d, -EINVAL, "input is not valid UTF-8");
	return d->err;
}

static void discard_output(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
	(void)diag, (void)user, (void)buf, (void)len;
}

/* The first error libfyaml collected, as our message. */
static void take_diag_error(struct decoder *d, struct fy_diag *diag)
{
	struct fy_diag_error *e;
	void *iter = NULL;

	while ((e = fy_diag_errors_iterate(diag, &iter))) {
		char msg[160];
		size_t k = 0;

		if (e->type < FYET_ERROR)
			continue;
		/* libfyaml may quote a byte of the input: keep ASCII only */
		for (const char *p = e->msg ? e->msg : "invalid YAML"; *p && k < sizeof(msg) - 1; p++)
			msg[k++] = (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? '?' : *p;
		msg[k] = '\0';
		d->line = e->line;
		d->column = e->column;
		fail(d, -EINVAL, "%s", msg);
		return;
	}
	fail(d, -EINVAL, "invalid YAML");
}

void yaml_docs_free(json_t **docs, size_t ndocs)
{
	if (!docs)
		return;
	for (size_t i = 0; i < ndocs; i++)
		json_decref(docs[i]);
	free(docs);
}

int yaml_decode_stream(const char *buf, size_t len, json_t ***docs, size_t *ndocs,
		       char *err, size_t errlen)
{
	static const struct yaml_limits stream = { .max_docs = YAML_MAX_DOCS,
						   .max_nodes = YAML_MAX_EXPANDED_NODES,
						   .max_bytes = YAML_MAX_EXPANDED_BYTES,
						   .max_depth = YAML_MAX_DEPTH,
						   .over = -EINVAL };

	return yaml_decode_limited(buf, len, &stream, docs, ndocs, err, errlen);
}

int yaml_decode_limited(const char *buf, size_t len, const struct yaml_limits *lim, json_t ***docs,
			size_t *ndocs, char *err, size_t errlen)
{
	struct decoder d = { .lim = *lim, .line = 1, .column = 1, .msg = err, .msglen = errlen };
	struct fy_diag_cfg dcfg;
	struct fy_parse_cfg pcfg;
	struct fy_diag *diag = NULL;
	struct fy_parser *fyp = NULL;
	struct fy_document *fyd = NULL;
	json_t **out = NULL;
	size_t n = 0, cap = 0;
	char *text = NULL;

	if (d.lim.max_depth <= 0 || d.lim.max_depth > YAML_MAX_DEPTH)
		d.lim.max_depth = YAML_MAX_DEPTH;
	if (d.lim.over >= 0)
		d.lim.over = -EINVAL;
	*docs = NULL;
	*ndocs = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!buf)
		len = 0;
	if (check_text(buf, len, &d) < 0)
		goto out;
	if (len == 0)
		goto out;

	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = discard_output;
	dcfg.colorize = false;
	diag = fy_diag_create(&dcfg);
	if (!diag) {
		oom(&d);
		goto out;
	}
	fy_diag_set_collect_errors(diag, true);

	memset(&pcfg, 0, sizeof(pcfg));
	/* duplicates are checked on the JSON keys, which is stricter */
	pcfg.flags = FYPCF_QUIET | FYPCF_DEFAULT_VERSION_1_2 | FYPCF_ALLOW_DUPLICATE_KEYS |
		     FYPCF_JSON_NONE;
	pcfg.diag = diag;
	fyp = fy_parser_create(&pcfg);
	text = strndup(buf, len);	/* invariant 4: terminated, for libfyaml */
	if (!fyp || !text || fy_parser_set_string(fyp, text, len) < 0) {
		oom(&d);
		goto out;
	}

	for (;;) {
		json_t *v;

		fyd = fy_parse_load_document(fyp);
		if (!fyd)
			break;
		d.depth = 0;
		d.expanding = 0;
		d.anchors = json_object();
		v = d.anchors ? convert(&d, fy_document_root(fyd)) : oom(&d);
		json_decref(d.anchors);
		d.anchors = NULL;
		fy_parse_document_destroy(fyp, fyd);
		fyd = NULL;
		if (!v)
			goto out;
		if (json_is_null(v)) {		/* empty document */
			json_decref(v);
			continue;
		}
		if (n == d.lim.max_docs) {
			json_decref(v);
			fail(&d, -EINVAL, "more than %zu document%s", d.lim.max_docs, d.lim.max_docs == 1 ? "" : "s");
			goto out;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			json_t **grown = realloc(out, ncap * sizeof(*out));

			if (!grown) {
				json_decref(v);
				oom(&d);
				goto out;
			}
			out = grown;
			cap = ncap;
		}
		out[n++] = v;
	}
	if (fy_parser_get_stream_error(fyp) || fy_diag_got_error(diag))
		take_diag_error(&d, diag);
out:
	if (fyd)
		fy_parse_document_destroy(fyp, fyd);
	fy_parser_destroy(fyp);
	free(text);
	if (diag)
		fy_diag_destroy(diag);
	if (d.err) {
		yaml_docs_free(out, n);
		return d.err;
	}
	*docs = out;
	*ndocs = n;
	return 0;
}

/* ---- emitting ----------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t ncap = o->cap ? o->cap : 256;
		char *grown;

		while (ncap < o->len + n + 1)
			ncap *= 2;
		grown = realloc(o->buf, ncap);
		if (!grown) {
			o->failed = true;
			return;
		}
		o->buf = grown;
		o->cap = ncap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void indent(struct out *o, int n)
{
	static const char spaces[] = "                                ";

	while (n > 0) {
		int k = n < 32 ? n : 32;

		put(o, spaces, (size_t)k);
		n -= k;
	}
}

/* Decodes one UTF-8 sequence of a (valid, jansson-checked) string; on a
 * bad byte returns that byte as a code point and length 1. */
static unsigned next_codepoint(const unsigned char *s, size_t n, size_t *used)
{
	unsigned c = s[0], need = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : 3;
	unsigned cp = need == 0 ? c : need == 1 ? c & 0x1f : need == 2 ? c & 0x0f : c & 0x07;

	if (need >= n) {
		*used = 1;
		return c;
	}
	for (unsigned k = 1; k <= need; k++)
		cp = cp << 6 | (s[k] & 0x3f);
	*used = need + 1;
	return cp;
}

/* Code points that YAML will not take raw in a scalar (or reads as a line
 * break or byte order mark). */
static bool needs_escape(unsigned cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0xfeff;
}

/* YAML 1.1 words a kubectl-style reader takes for booleans. */
static bool yaml11_bool(const char *s, size_t n)
{
	static const char *words[] = { "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
				       "on", "On", "ON", "off", "Off", "OFF" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (text_is(s, n, words[i]))
			return true;
	return false;
}

static bool can_be_plain(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	if (n == 0 || plain_type(s, n) != SCALAR_STR || yaml11_bool(s, n) ||
	    text_is(s, n, "<<") || text_is(s, n, "="))
		return false;		/* merge and value keys of YAML 1.1 */
	if (strchr("-?:,[]{}#&*!|>'\"%@` \t", s[0]))
		return false;
	/* number-like (1.1 sexagesimal, timestamps, 1_000, 0b1): quote */
	if ((is_digit(s[0]) || ((s[0] == '-' || s[0] == '+' || s[0] == '.') && n > 1 &&
				is_digit(s[1]))) &&
	    all_of(s, n, "0123456789abcdefABCDEFxXoObB._:+- "))
		return false;
	if (s[n - 1] == ' ' || s[n - 1] == ':' || s[n - 1] == '\t')
		return false;
	if (n >= 3 && (memcmp(s, "---", 3) == 0 || memcmp(s, "...", 3) == 0))
		return false;
	for (size_t i = 0; i < n;) {
		size_t used;
		unsigned cp = next_codepoint(u + i, n - i, &used);

		if (needs_escape(cp))
			return false;
		if (cp == ':' && i + 1 < n && (s[i + 1] == ' ' || s[i + 1] == '\t'))
			return false;
		if (cp == '#' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t'))
			return false;
		i += used;
	}
	return true;
}

static void put_quoted(struct out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[16];

	put(o, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t used;
		unsigned cp = next_codepoint(u + i, n - i, &used);

		if (cp == '"' || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			put(o, esc, 2);
		} else if (cp == '\n') {
			put(o, "\\n", 2);
		} else if (cp == '\t') {
			put(o, "\\t", 2);
		} else if (cp == 0) {
			put(o, "\\0", 2);
		} else if (needs_escape(cp)) {
			if (cp <= 0xff)
				snprintf(esc, sizeof(esc), "\\x%02X", cp);
			else
				snprintf(esc, sizeof(esc), "\\u%04X", cp);
			puts_(o, esc);
		} else {
			put(o, s + i, used);
		}
		i += used;
	}
	put(o, "\"", 1);
}

static void put_string(struct out *o, const char *s, size_t n)
{
	if (can_be_plain(s, n))
		put(o, s, n);
	else
		put_quoted(o, s, n);
}

static void put_scalar(struct out *o, const json_t *v)
{
	char num[64];

	switch (json_typeof(v)) {
	case JSON_STRING:
		put_string(o, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		puts_(o, num);
		break;
	case JSON_REAL:
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		if (!strpbrk(num, ".eEn"))
			strcat(num, ".0");	/* else it reads back as an integer */
		puts_(o, num);
		break;
	case JSON_TRUE:
		puts_(o, "true");
		break;
	case JSON_FALSE:
		puts_(o, "false");
		break;
	case JSON_OBJECT:
		puts_(o, "{}");
		break;
	case JSON_ARRAY:
		puts_(o, "[]");
		break;
	default:
		puts_(o, "null");
		break;
	}
}

static bool is_block(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v) > 0) ||
	       (json_is_array(v) && json_array_size(v) > 0);
}

static void emit_block(struct out *o, const json_t *v, int level, bool inline_first);

/* The value after "key:" or "-": on the same line if a scalar, else on the
 * next lines one level deeper. */
static void emit_after_indicator(struct out *o, const json_t *v, int level, bool in_sequence)
{
	if (!is_block(v)) {
		put(o, " ", 1);
		put_scalar(o, v);
		put(o, "\n", 1);
	} else if (in_sequence) {
		put(o, " ", 1);
		emit_block(o, v, level + 2, true);
	} else if (json_is_array(v)) {
		put(o, "\n", 1);		/* "- " items at the key's indentation */
		emit_block(o, v, level, false);
	} else {
		put(o, "\n", 1);
		emit_block(o, v, level + 2, false);
	}
}

/* A non-empty map or list at indentation level; if inline_first, the
 * cursor already sits where the first line's content goes. */
static void emit_block(struct out *o, const json_t *v, int level, bool inline_first)
{
	bool first = true;

	if (json_is_object(v)) {
		const char *key;
		const json_t *value;

		json_object_foreach((json_t *)v, key, value) {
			size_t klen = strlen(key);

			if (!(first && inline_first))
				indent(o, level);
			first = false;
			if (klen > 1000) {
				/* implicit keys are limited to 1024 characters */
				put(o, "? ", 2);
				put_quoted(o, key, klen);
				put(o, "\n", 1);
				indent(o, level);
			} else {
				put_string(o, key, klen);
			}
			put(o, ":", 1);
			emit_after_indicator(o, value, level, false);
		}
	} else {
		size_t i;
		const json_t *value;

		json_array_foreach(v, i, value) {
			if (!(first && inline_first))
				indent(o, level);
			first = false;
			put(o, "-", 1);
			emit_after_indicator(o, value, level, true);
		}
	}
}

char *yaml_emit(const json_t *value)
{
	struct out o = { 0 };

	if (!value) {
		errno = EINVAL;
		return NULL;
	}
	if (is_block(value)) {
		emit_block(&o, value, 0, false);
	} else {
		put_scalar(&o, value);
		put(&o, "\n", 1);
	}
	if (o.failed) {
		free(o.buf);
		errno = ENOMEM;
		return NULL;
	}
	return o.buf;
}
