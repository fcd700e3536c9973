/*
 * patch_json.c — JSON Patch (RFC 6902) over JSON Pointers (RFC 6901).
 *
 * A patch is a list of operations applied in order to one copy of the
 * object; the first that fails fails the patch (patch.c drops the copy):
 *
 *   add      path, value   a member set, or a list item inserted before
 *                          the index ("-": appended); the parent must exist
 *   remove   path          the member or item must exist
 *   replace  path, value   the member or item must exist
 *   move     from, path    remove from, add at path; from must not be a
 *                          proper prefix of path (its own child)
 *   copy     from, path    a deep copy of from added at path
 *   test     path, value   the value there equals value (patch_equal)
 *
 * A pointer is "" (the whole object) or "/" tokens, ~1 in a token for '/',
 * ~0 for '~' (any other '~' is malformed).  A token names a list item by
 * its index: digits without a leading zero, below the list's size (add:
 * up to it; "-" only with add).  An index of any length is only compared
 * with the size, never used to allocate.
 *
 * Invariants
 *  1. After every operation the object is at most MODEL_MAX_DEPTH levels
 *     deep: a value placed at a pointer of n tokens may be at most
 *     MODEL_MAX_DEPTH - n deep (else -E2BIG), so every walk here stays
 *     within that bound.
 *  2. No value is shared between two places of the object or with the
 *     patch: add, replace and copy place deep copies; move places the value
 *     it removed.  (jansson values are reference counted; a shared one
 *     would change in two places.)
 *  3. copy places at most MODEL_MAX_VALUES values in all, so a patch
 *     cannot double a list onto itself until memory runs out.
 */
#include "model/patch_shared.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_ADD, OP_REMOVE, OP_REPLACE, OP_MOVE, OP_COPY, OP_TEST, OP_COUNT };

static const char *const op_names[OP_COUNT] = {
	[OP_ADD] = "add", [OP_REMOVE] = "remove", [OP_REPLACE] = "replace",
	[OP_MOVE] = "move", [OP_COPY] = "copy", [OP_TEST] = "test",
};

/* A pointer split into its tokens, unescaped (one allocation for both). */
struct pointer {
	const char *text;	/* as written (borrowed from the patch) */
	char **tok;
	size_t n;
};

/* The operation being applied, for messages. */
struct opctx {
	size_t index;
	enum op op;
	const char *path;
	char *err;
	size_t errlen;
	size_t copied;		/* values placed by copy so far (invariant 3) */
};

__attribute__((format(printf, 3, 4)))
static int op_fail(const struct opctx *o, int rc, const char *fmt, ...)
{
	char what[512], quoted[PATCH_QUOTE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return patch_fail(o->err, o->errlen, rc, "operation %zu (%s %s): %s", o->index, op_names[o->op],
			  patch_quote(o->path, quoted), what);
}

/* "" or "/..." with only ~0 and ~1 escapes: 0, or -EBADMSG with why. */
static int pointer_syntax(const char *s, const char **why)
{
	if (*s && *s != '/') {
		*why = "a JSON Pointer is \"\" or starts with '/'";
		return -EBADMSG;
	}
	for (; *s; s++)
		if (*s == '~' && s[1] != '0' && s[1] != '1') {
			*why = "'~' in a JSON Pointer is followed by 0 or 1";
			return -EBADMSG;
		}
	return 0;
}

/* s, which passed pointer_syntax, split.  0 or -ENOMEM. */
static int pointer_parse(const char *s, struct pointer *p)
{
	size_t len = strlen(s), n = 0, t = 0;
	char *buf, *w;

	for (const char *c = s; *c; c++)
		n += *c == '/';
	p->text = s;
	p->n = n;
	/* the token pointers, then the tokens' text (never longer than s) */
	p->tok = malloc(n * sizeof(char *) + len + 1);
	if (!p->tok)
		return -ENOMEM;
	buf = (char *)(p->tok + n);
	w = buf;
	for (const char *c = s; *c; c++) {
		if (*c == '/') {
			if (t)
				*w++ = 0;
			p->tok[t++] = w;
		} else if (*c == '~') {
			*w++ = *++c == '0' ? '~' : '/';
		} else {
			*w++ = *c;
		}
	}
	*w = 0;
	return 0;
}

/* Bytes of p's text that name its first m tokens ("/a/b/c", 2: 4). */
static int prefix_len(const struct pointer *p, size_t m)
{
	const char *c = p->text;
	size_t seen = 0;

	while (*c && !(*c == '/' && seen++ == m))
		c++;
	return (int)(c - p->text);
}

/* The first m tokens of p as written, for messages ("" reads "the object"). */
static const char *prefix_text(const struct pointer *p, size_t m, char *buf, size_t len)
{
	int n = prefix_len(p, m);
	char quoted[PATCH_QUOTE_MAX];

	if (n == 0)
		return "the object";
	snprintf(buf, len, "%.*s", n, p->text);
	snprintf(buf, len, "%s", patch_quote(buf, quoted));
	return buf;
}

/* A list index token against a list of size items: 0 with *i; -EINVAL
 * when it is no index, or past the end (end_ok: the end itself, and "-",
 * are allowed). */
static int list_index(const char *tok, size_t size, bool end_ok, size_t *i)
{
	size_t v = 0;

	if (strcmp(tok, "-") == 0) {
		*i = size;
		return end_ok ? 0 : -EINVAL;
	}
	if (!*tok || (tok[0] == '0' && tok[1]))
		return -EINVAL;
	for (const char *c = tok; *c; c++) {
		if (*c < '0' || *c > '9' || v > size)
			return -EINVAL;		/* past any list: no need to read on */
		v = v * 10 + (size_t)(*c - '0');
	}
	if (v > size || (v == size && !end_ok))
		return -EINVAL;
	*i = v;
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* The value the first m tokens of p name in doc, or NULL after op_fail
 * (its code in *rc). */
static json_t *walk(const struct opctx *o, json_t *doc, const struct pointer *p, size_t m, int *rc)
{
	json_t *cur = doc;
	char where[PATCH_QUOTE_MAX];

	for (size_t t = 0; t < m; t++) {
		const char *tok = p->tok[t];
		json_t *next = NULL;
		size_t i;

		if (json_is_object(cur)) {
			next = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			if (list_index(tok, json_array_size(cur), false, &i) == 0)
				next = json_array_get(cur, i);
		} else {
			*rc = op_fail(o, -EINVAL, "%s is %s, not an object or a list",
				      prefix_text(p, t, where, sizeof(where)), type_name(cur));
			return NULL;
		}
		if (!next) {
			*rc = op_fail(o, -EINVAL, "%s does not exist", prefix_text(p, t + 1, where, sizeof(where)));
			return NULL;
		}
		cur = next;
	}
	return cur;
}

/* Place value (a new reference, taken over) at p in *doc: add (the parent
 * must exist; a list takes an insert) or replace (the target must exist). */
static int place(const struct opctx *o, json_t **doc, const struct pointer *p, json_t *value, bool add)
{
	char where[PATCH_QUOTE_MAX];
	json_t *parent;
	const char *last;
	size_t i;
	int rc = 0;

	if (p->n + patch_depth(value, MODEL_MAX_DEPTH) > MODEL_MAX_DEPTH) {
		rc = op_fail(o, -E2BIG, "the object would be nested deeper than %d levels (the limit)", MODEL_MAX_DEPTH);
		goto out;
	}
	if (p->n == 0) {
		json_decref(*doc);
		*doc = value;
		return 0;
	}
	parent = walk(o, *doc, p, p->n - 1, &rc);
	if (!parent)
		goto out;
	last = p->tok[p->n - 1];
	if (json_is_object(parent)) {
		if (!add && !json_object_get(parent, last)) {
			rc = op_fail(o, -EINVAL, "%s does not exist", prefix_text(p, p->n, where, sizeof(where)));
			goto out;
		}
		rc = json_object_set_new(parent, last, value) ? -ENOMEM : 0;
		value = NULL;
	} else if (json_is_array(parent)) {
		if (list_index(last, json_array_size(parent), add, &i)) {
			rc = op_fail(o, -EINVAL, "'%s' is not an index of %s (%zu items)",
				     patch_quote(last, where), add ? "or the end of the list" : "the list",
				     json_array_size(parent));
			goto out;
		}
		rc = (add ? json_array_insert_new(parent, i, value) : json_array_set_new(parent, i, value)) ? -ENOMEM : 0;
		value = NULL;
	} else {
		rc = op_fail(o, -EINVAL, "%s is %s, not an object or a list",
			     prefix_text(p, p->n - 1, where, sizeof(where)), type_name(parent));
	}
	if (rc == -ENOMEM)
		op_fail(o, rc, "out of memory");
out:
	json_decref(value);
	return rc;
}

/* Take the value at p out of doc: *taken (a new reference; NULL: only
 * remove it).  The whole object cannot be removed. */
static int take(const struct opctx *o, json_t *doc, const struct pointer *p, json_t **taken)
{
	json_t *target, *parent;
	size_t i;
	int rc = 0;

	if (taken)
		*taken = NULL;
	if (p->n == 0)
		return op_fail(o, -EINVAL, "the whole object cannot be removed");
	target = walk(o, doc, p, p->n, &rc);
	if (!target)
		return rc;
	parent = walk(o, doc, p, p->n - 1, &rc);	/* there: it holds target */
	if (taken)
		*taken = json_incref(target);
	if (json_is_object(parent))
		json_object_del(parent, p->tok[p->n - 1]);
	else if (list_index(p->tok[p->n - 1], json_array_size(parent), false, &i) == 0)
		json_array_remove(parent, i);
	return 0;
}

/* a's tokens are the first of b's: b is a itself (or_equal) or inside it */
static bool is_prefix(const struct pointer *a, const struct pointer *b, bool or_equal)
{
	if (a->n > b->n || (a->n == b->n && !or_equal))
		return false;
	for (size_t t = 0; t < a->n; t++)
		if (strcmp(a->tok[t], b->tok[t]) != 0)
			return false;
	return true;
}

/* A value for a message: compact JSON, cut. */
static const char *shown(const json_t *v, char *buf)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!s)
		return "?";
	patch_quote(s, buf);
	free(s);
	return buf;
}

static int apply_one(struct opctx *o, json_t **doc, const json_t *op)
{
	const json_t *value = json_object_get(op, "value");
	const char *from_text = json_string_value(json_object_get(op, "from"));
	struct pointer path = { 0 }, from = { 0 };
	char a[PATCH_QUOTE_MAX], b[PATCH_QUOTE_MAX];
	json_t *v = NULL, *at;
	int rc;

	rc = pointer_parse(o->path, &path);
	if (!rc && from_text)
		rc = pointer_parse(from_text, &from);
	if (rc) {
		op_fail(o, rc, "out of memory");
		goto out;
	}
	switch (o->op) {
	case OP_ADD:
	case OP_REPLACE:
		v = json_deep_copy(value);
		rc = v ? place(o, doc, &path, v, o->op == OP_ADD) : op_fail(o, -ENOMEM, "out of memory");
		break;
	case OP_REMOVE:
		rc = take(o, *doc, &path, NULL);
		break;
	case OP_MOVE:
		if (is_prefix(&from, &path, false)) {
			rc = op_fail(o, -EINVAL, "%s cannot be moved into its own child", patch_quote(from_text, a));
			break;
		}
		if (is_prefix(&path, &from, true) && path.n == from.n) {
			/* onto itself: nothing moves, but from must exist */
			if (walk(o, *doc, &from, from.n, &rc))
				rc = 0;
			break;
		}
		rc = take(o, *doc, &from, &v);
		if (!rc)
			rc = place(o, doc, &path, v, true);
		break;
	case OP_COPY:
		at = walk(o, *doc, &from, from.n, &rc);
		if (!at)
			break;
		o->copied += patch_values(at, MODEL_MAX_VALUES);
		if (o->copied > MODEL_MAX_VALUES) {
			rc = op_fail(o, -E2BIG, "copies more than %d JSON values in all (the limit)", MODEL_MAX_VALUES);
			break;
		}
		v = json_deep_copy(at);
		rc = v ? place(o, doc, &path, v, true) : op_fail(o, -ENOMEM, "out of memory");
		break;
	case OP_TEST:
		at = walk(o, *doc, &path, path.n, &rc);
		if (at && !patch_equal(at, value))
			rc = op_fail(o, -EINVAL, "the value is %s, not %s", shown(at, a), shown(value, b));
		break;
	default:
		rc = op_fail(o, -EBADMSG, "unknown operation");
	}
out:
	free(path.tok);
	free(from.tok);
	return rc;
}

/* The operation of op, or OP_COUNT after op_fail (checked before). */
static enum op op_of(const json_t *op)
{
	const char *name = json_string_value(json_object_get(op, "op"));

	for (int i = 0; name && i < OP_COUNT; i++)
		if (strcmp(name, op_names[i]) == 0)
			return (enum op)i;
	return OP_COUNT;
}

/* One operation's shape: "op" known, "path" (and "from") pointers, "value"
 * where the operation takes one, within the depth bound. */
static int check_one(size_t index, const json_t *op, char *err, size_t errlen)
{
	const json_t *path = json_object_get(op, "path"), *from = json_object_get(op, "from");
	const json_t *value = json_object_get(op, "value");
	const char *why = NULL, *name;
	char quoted[PATCH_QUOTE_MAX];
	enum op o;

	if (!json_is_object(op))
		return patch_fail(err, errlen, -EBADMSG, "operation %zu: %s, not an object", index, type_name(op));
	o = op_of(op);
	name = json_string_value(json_object_get(op, "op"));
	if (o == OP_COUNT)
		return patch_fail(err, errlen, -EBADMSG,
				  "operation %zu: op %s%s%s is not one of add, remove, replace, move, copy, test", index,
				  name ? "'" : "", name ? patch_quote(name, quoted) : "is missing or not a string",
				  name ? "'" : "");
	if (!json_is_string(path))
		return patch_fail(err, errlen, -EBADMSG, "operation %zu (%s): path is missing or not a string", index,
				  op_names[o]);
	if (pointer_syntax(json_string_value(path), &why))
		return patch_fail(err, errlen, -EBADMSG, "operation %zu (%s %s): %s", index, op_names[o],
				  patch_quote(json_string_value(path), quoted), why);
	if (o == OP_MOVE || o == OP_COPY) {
		if (!json_is_string(from))
			return patch_fail(err, errlen, -EBADMSG, "operation %zu (%s %s): from is missing or not a string",
					  index, op_names[o], patch_quote(json_string_value(path), quoted));
		if (pointer_syntax(json_string_value(from), &why))
			return patch_fail(err, errlen, -EBADMSG, "operation %zu (%s from %s): %s", index, op_names[o],
					  patch_quote(json_string_value(from), quoted), why);
	}
	if (o == OP_ADD || o == OP_REPLACE || o == OP_TEST) {
		if (!value)
			return patch_fail(err, errlen, -EBADMSG, "operation %zu (%s %s): value is missing", index,
					  op_names[o], patch_quote(json_string_value(path), quoted));
		if (patch_depth(value, MODEL_MAX_DEPTH) > MODEL_MAX_DEPTH)
			return patch_fail(err, errlen, -E2BIG,
					  "operation %zu (%s %s): the value is nested deeper than %d levels (the limit)",
					  index, op_names[o], patch_quote(json_string_value(path), quoted), MODEL_MAX_DEPTH);
	}
	return 0;
}

int patch_json_check(const json_t *ops, char *err, size_t errlen)
{
	const json_t *op;
	size_t i;
	int rc;

	if (!json_is_array(ops))
		return patch_fail(err, errlen, -EBADMSG, "a JSON Patch must be a list of operations, not %s",
				  type_name(ops));
	if (json_array_size(ops) > PATCH_MAX_OPERATIONS)
		return patch_fail(err, errlen, -E2BIG, "the JSON Patch has %zu operations; the limit is %d",
				  json_array_size(ops), PATCH_MAX_OPERATIONS);
	json_array_foreach(ops, i, op)
		if ((rc = check_one(i, op, err, errlen)))
			return rc;
	return 0;
}

int patch_json_apply(json_t **doc, const json_t *ops, char *err, size_t errlen)
{
	struct opctx o = { .err = err, .errlen = errlen };
	const json_t *op;
	size_t i;
	int rc;

	json_array_foreach(ops, i, op) {
		o.index = i;
		o.op = op_of(op);
		o.path = json_string_value(json_object_get(op, "path"));
		if ((rc = apply_one(&o, doc, op)))
			return rc;
	}
	return 0;
}
