/*
 * limits.c — the bounds on one stored object (model.h): nesting depth,
 * number of JSON values, bytes of its text; and the encoding every stored
 * object goes through, which keeps to them.
 *
 * How it works: one depth-first walk counts values and levels and stops at
 * the first one over a limit.  It keeps only a stack of the keys (or list
 * indexes) that lead to the value being looked at — at most MODEL_MAX_DEPTH
 * frames, since the walk never goes deeper — and formats a field path from
 * it only when it reports.  So the walk is O(values) and allocates nothing.
 *
 * Invariants
 *  1. An object model_check_limits accepts is at most MODEL_MAX_DEPTH deep
 *     and has at most MODEL_MAX_VALUES values; the walk's recursion is
 *     bounded by MODEL_MAX_DEPTH + 1 whatever it is given.
 *  2. model_encode_checked hands out text only for an object the walk
 *     accepted with no string holding a NUL byte, and only text within
 *     MODEL_MAX_OBJECT_BYTES.  That is what makes the text read back to an
 *     equal object with the readers' parser settings (flags 0): jansson
 *     encodes any json_t it holds as valid JSON (strings and keys UTF-8 by
 *     construction, no duplicate keys, no NaN or infinity, reals with 17
 *     digits), its parser takes 2048 levels, far over MODEL_MAX_DEPTH, and
 *     the one thing it encodes but will not read is \u0000, which
 *     json_stringn lets into a string (the YAML decoder makes one of "\0")
 *     and the walk refuses (-EPROTO).  The text is not parsed back on every
 *     write (that was half a write's JSON work); the unit tests and the API
 *     fuzzer, on every body it accepts, parse it back and compare.
 */
#include "model/model.h"
#include "model/validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_KEY_MAX 40		/* bytes of one key in a reported path */
#define STR_(x) #x
#define STR(x) STR_(x)

struct frame {
	const char *key;	/* NULL: a list item */
	size_t index;
};

struct walk {
	size_t values;
	bool no_nul;		/* refuse a string holding a NUL byte (model_encode_checked) */
	struct frame stack[MODEL_MAX_DEPTH + 1];
	char *err;
	size_t errlen;
};

/* "spec.a[3].b" from the first n frames; keys cut at PATH_KEY_MAX bytes,
 * control characters as '?', the whole at VPATH_MAX bytes. */
static void format_path(const struct walk *w, int n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; i < n && off + 1 < len; i++) {
		const struct frame *f = &w->stack[i];
		char key[PATH_KEY_MAX + 4];
		size_t k = 0;
		int wrote;

		if (!f->key) {
			wrote = snprintf(buf + off, len - off, "[%zu]", f->index);
		} else {
			for (const char *p = f->key; *p && k < PATH_KEY_MAX; p++)
				key[k++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
			if (f->key[k])
				k += (size_t)snprintf(key + k, sizeof(key) - k, "...");
			key[k] = 0;
			wrote = snprintf(buf + off, len - off, "%s%s", off ? "." : "", key);
		}
		if (wrote < 0)
			break;
		off += (size_t)wrote < len - off ? (size_t)wrote : len - off - 1;
	}
}

/* rc with "<path>: what" in w->err for the value at depth. */
static int report(struct walk *w, int depth, const char *what, int rc)
{
	char path[VPATH_MAX];

	format_path(w, depth - 1, path, sizeof(path));
	if (w->errlen)
		snprintf(w->err, w->errlen, "%s%s%s", path, path[0] ? ": " : "", what);
	return rc;
}

static int over(struct walk *w, int depth, const char *what)
{
	return report(w, depth, what, -E2BIG);
}

/* j is at level depth (the object itself: 1); frames [0, depth-1) lead to it. */
static int walk(struct walk *w, const json_t *j, int depth)
{
	const char *key;
	const json_t *child;
	size_t i;
	int rc;

	if (++w->values > MODEL_MAX_VALUES)
		return over(w, depth, "more than " STR(MODEL_MAX_VALUES) " JSON values in one object (the limit)");
	if (!json_is_object(j) && !json_is_array(j)) {
		if (w->no_nul && json_is_string(j) && memchr(json_string_value(j), 0, json_string_length(j)))
			return report(w, depth, "a string holding a NUL byte (readers refuse \\u0000)", -EPROTO);
		return 0;
	}
	if (depth > MODEL_MAX_DEPTH)
		return over(w, depth, "nested deeper than " STR(MODEL_MAX_DEPTH) " levels (the limit)");
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, key, child) {
			w->stack[depth - 1] = (struct frame){ .key = key };
			if ((rc = walk(w, child, depth + 1)))
				return rc;
		}
	} else {
		json_array_foreach(j, i, child) {
			w->stack[depth - 1] = (struct frame){ .index = i };
			if ((rc = walk(w, child, depth + 1)))
				return rc;
		}
	}
	return 0;
}

int model_check_limits(const json_t *obj, char *err, size_t errlen)
{
	struct walk w = { .err = err, .errlen = err ? errlen : 0 };

	if (w.errlen)
		err[0] = 0;
	return walk(&w, obj, 1);
}

int model_encode_checked(const json_t *obj, char **text, size_t *len, char *err, size_t errlen)
{
	struct walk w = { .no_nul = true, .err = err, .errlen = err ? errlen : 0 };
	char *s = NULL;
	size_t n;
	int rc;

	*text = NULL;
	*len = 0;
	if (w.errlen)
		err[0] = 0;
	rc = walk(&w, obj, 1);
	if (rc)
		goto out;
	s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	n = strlen(s);
	if (n > MODEL_MAX_OBJECT_BYTES) {
		rc = -E2BIG;
		snprintf(err, errlen, "the object as stored is %zu bytes, more than %u (the limit)", n,
			 MODEL_MAX_OBJECT_BYTES);
		goto out;
	}
	*text = s;
	*len = n;
	s = NULL;
	rc = 0;
out:
	free(s);
	return rc;
}
