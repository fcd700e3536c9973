/*
 * openapi_fields.c — the fields a write carries that its kind's schema
 * does not declare (openapi.h): what ?fieldValidation=Strict refuses and
 * =Warn warns of, named as kube-apiserver names them
 * ("spec.containers[0].bogus").
 *
 * The walk follows the value and the schema together: an object member
 * not among the schema's properties is unknown (its value is not walked);
 * one that is, or a map's (additionalProperties) value, or a list's item,
 * is walked with its own schema.  An open object (no properties, no
 * additionalProperties) takes anything, and a value whose type is not the
 * schema's is validation's to refuse, not this walk's.
 *
 * Patches: a merge or strategic merge patch has the object's shape, so it
 * is walked as one, with its directives ("$patch", "$retainKeys",
 * "$setElementOrder/...", "$deleteFromPrimitiveList/...") and nulls (a
 * removal of whatever field) passed over.  A JSON Patch's add, replace,
 * move and copy operations name a place, whose steps are walked through
 * the schema ("/spec/foo" names spec.foo), and add's and replace's value
 * is walked there.
 *
 * Only what the client sends is judged, never what is stored: weft keeps
 * unknown fields written without Strict, and a later strict patch that
 * does not touch them is not refused for them.
 *
 * Bounds: the walk follows the value, which the request checks held to
 * MODEL_MAX_DEPTH levels; the names kept are cut at the caller's buffer,
 * the count is exact.
 */
#include "model/openapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_TEXT 512

struct walk {
	const json_t *defs;
	bool patch;		/* skip directives and nulls */
	char *out;
	size_t outlen, used;
	size_t count;
	char path[PATH_MAX_TEXT];
};

static const json_t *resolve(const struct walk *w, const json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));

	return ref ? json_object_get(w->defs, ref) : s;
}

/* path + step (".name" or "[i]"): the mark to restore. */
static size_t step(struct walk *w, const char *fmt_dot, const char *name, size_t index)
{
	size_t mark = strlen(w->path);

	if (name)
		snprintf(w->path + mark, sizeof(w->path) - mark, "%s%s", mark && fmt_dot ? "." : "", name);
	else
		snprintf(w->path + mark, sizeof(w->path) - mark, "[%zu]", index);
	return mark;
}

static void unknown(struct walk *w)
{
	size_t n = strlen(w->path);

	w->count++;
	if (!w->outlen || w->used + n + 2 > w->outlen)
		return;
	if (w->used)
		w->out[w->used++] = '\n';
	for (size_t i = 0; i < n; i++)	/* a key's control bytes (a newline) as '?' */
		w->out[w->used++] = (unsigned char)w->path[i] < 0x20 || w->path[i] == 0x7f ? '?' : w->path[i];
	w->out[w->used] = 0;
}

static void walk(struct walk *w, const json_t *schema, const json_t *v, int depth)
{
	const json_t *s = resolve(w, schema), *props, *more, *x;
	const char *name;
	size_t i, mark;

	if (!s || depth > MODEL_MAX_DEPTH + 2)
		return;
	props = json_object_get(s, "properties");
	more = json_object_get(s, "additionalProperties");
	if (json_is_object(v) && (props || more)) {
		json_object_foreach((json_t *)v, name, x) {
			const json_t *p = props ? json_object_get(props, name) : more;

			if (w->patch && (name[0] == '$' || json_is_null(x)))
				continue;
			mark = step(w, ".", name, 0);
			if (!p)
				unknown(w);
			else
				walk(w, p, x, depth + 1);
			w->path[mark] = 0;
		}
	} else if (json_is_array(v) && json_object_get(s, "items")) {
		json_array_foreach(v, i, x) {
			mark = step(w, NULL, NULL, i);
			walk(w, json_object_get(s, "items"), x, depth + 1);
			w->path[mark] = 0;
		}
	}
}

static void start(struct walk *w, const struct model_openapi *m, bool patch, char *out, size_t outlen)
{
	memset(w, 0, sizeof(*w));
	w->defs = model_openapi_definitions(m);
	w->patch = patch;
	w->out = out;
	w->outlen = outlen;
	if (outlen)
		out[0] = 0;
}

size_t model_openapi_unknown_fields(const struct model_openapi *m, enum kind_id id, const json_t *obj, bool patch,
				    char *out, size_t outlen)
{
	struct walk w;

	start(&w, m, patch, out, outlen);
	walk(&w, json_object_get(w.defs, model_openapi_kind_definition(m, id)), obj, 0);
	return w.count;
}

/* The schema at JSON Pointer ptr below s, w->path set to its dotted name;
 * NULL when a step is unknown (counted) or leaves the schema (not ours to
 * judge: a list index of a non-list, a step into an open object). */
static const json_t *follow(struct walk *w, const json_t *s, const char *ptr, bool *gone)
{
	char token[256];

	*gone = false;
	while (s && *ptr == '/') {
		size_t len = strcspn(ptr + 1, "/"), k = 0;
		const json_t *props, *more;

		for (size_t i = 0; i < len && k + 1 < sizeof(token); i++) {	/* ~1 is '/', ~0 is '~' */
			char ch = ptr[1 + i];

			if (ch == '~' && i + 1 < len && (ptr[2 + i] == '0' || ptr[2 + i] == '1'))
				ch = ptr[2 + i++] == '1' ? '/' : '~';
			token[k++] = ch;
		}
		token[k] = 0;
		ptr += 1 + len;
		s = resolve(w, s);
		props = json_object_get(s, "properties");
		more = json_object_get(s, "additionalProperties");
		if (json_object_get(s, "items")) {
			step(w, NULL, NULL, strcmp(token, "-") ? strtoul(token, NULL, 10) : 0);
			s = json_object_get(s, "items");
		} else if (props || more) {
			step(w, ".", token, 0);
			s = props ? json_object_get(props, token) : more;
			if (!s) {
				unknown(w);
				*gone = true;
			}
		} else {
			return NULL;
		}
	}
	return s;
}

size_t model_openapi_unknown_json_patch(const struct model_openapi *m, enum kind_id id, const json_t *ops, char *out,
					size_t outlen)
{
	const json_t *root, *op;
	struct walk w;
	size_t i;

	start(&w, m, false, out, outlen);
	root = json_object_get(w.defs, model_openapi_kind_definition(m, id));
	json_array_foreach(ops, i, op) {
		const char *what = json_string_value(json_object_get(op, "op"));
		const char *ptr = json_string_value(json_object_get(op, "path"));
		const json_t *at;
		bool gone;

		if (!what || !ptr || (strcmp(what, "add") && strcmp(what, "replace") && strcmp(what, "move") &&
				      strcmp(what, "copy")))
			continue;
		w.path[0] = 0;
		at = follow(&w, root, ptr, &gone);
		if (at && !gone && (!strcmp(what, "add") || !strcmp(what, "replace")))
			walk(&w, at, json_object_get(op, "value"), 0);
	}
	return w.count;
}
