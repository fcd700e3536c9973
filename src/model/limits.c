/*
 * limits.c — the bounds on one stored object (model.h): nesting depth,
 * number of JSON values, bytes of its text; and the encoding that proves
 * an object can be read back before it is stored.
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
 *  2. model_encode_checked hands out text only after parsing it back with
 *     the flags every reader uses (0: jansson's defaults) to an object
 *     json_equal to the one given.
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

static int over(struct walk *w, int depth, const char *what)
{
	char path[VPATH_MAX];

	format_path(w, depth - 1, path, sizeof(path));
	if (w->errlen)
		snprintf(w->err, w->errlen, "%s%s%s", path, path[0] ? ": " : "", what);
	return -E2BIG;
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
	if (!json_is_object(j) && !json_is_array(j))
		return 0;
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
	json_error_t jerr;
	json_t *back = NULL;
	char *s = NULL;
	size_t n;
	int rc;

	*text = NULL;
	*len = 0;
	rc = model_check_limits(obj, err, errlen);
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
	back = json_loadb(s, n, 0, &jerr);
	if (!back || !json_equal(back, obj)) {
		rc = -EPROTO;
		snprintf(err, errlen, "the object as stored does not read back%s%s",
			 back ? " equal" : ": ", back ? "" : jerr.text);
		goto out;
	}
	*text = s;
	*len = n;
	s = NULL;
	rc = 0;
out:
	json_decref(back);
	free(s);
	return rc;
}
