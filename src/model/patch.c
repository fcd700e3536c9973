/*
 * patch.c — the entry of the patch module (patch.h): which type a
 * Content-Type names, what can be checked of a patch alone, and the
 * dispatch to the type's file; with the helpers the types share.
 *
 * How a patch is applied:
 *
 *   patch_apply ─► patch_check (shape, pointers, bounds) ─► copy of doc
 *        ─► patch_json_apply | patch_merge_apply | patch_strategic_apply
 *        ─► *out (or the copy freed: all or nothing)
 *
 * Invariants
 *  1. Nothing here recurses deeper than MODEL_MAX_DEPTH + 3 levels: the
 *     walks take a limit, and the patch is checked against MODEL_MAX_DEPTH
 *     before any type's code walks it.
 *  2. doc is never changed: every type works on a deep copy.
 */
#include "model/patch_shared.h"
#include "lib/media.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const media[] = {
	[PATCH_JSON] = PATCH_MEDIA_JSON,
	[PATCH_MERGE] = PATCH_MEDIA_MERGE,
	[PATCH_STRATEGIC] = PATCH_MEDIA_STRATEGIC,
};

/* Bytes of the UTF-8 sequence at s (1-4), or 0 when none starts there. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int patch_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		/* a message goes into a JSON answer: a name cut in the middle of
		 * a character, where a buffer ran out, loses that character */
		for (unsigned char *p = (unsigned char *)err; *p;) {
			size_t n = utf8_len(p);
			if (!n)
				*p++ = '?';
			else
				p += n;
		}
	}
	return rc;
}

const char *patch_quote(const char *s, char *buf)
{
	size_t i;

	for (i = 0; s[i] && i < PATCH_QUOTE_MAX - 8; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	/* never cut a UTF-8 sequence in two: back up to its first byte */
	if (s[i])
		while (i && ((unsigned char)s[i] & 0xc0) == 0x80)
			i--;
	strcpy(buf + i, s[i] ? "..." : "");
	return buf;
}

const char *patch_type_media(enum patch_type t)
{
	return t <= PATCH_STRATEGIC ? media[t] : "?";
}

int patch_type_parse(const char *content_type, enum patch_type *t, char *err, size_t errlen)
{
	size_t n;
	const char *ct = media_type_of(content_type, &n);

	for (size_t i = 0; i < sizeof(media) / sizeof(media[0]); i++)
		if (media_type_is(content_type, media[i])) {
			*t = (enum patch_type)i;
			return 0;
		}
	if (n == 0)
		return patch_fail(err, errlen, -EINVAL,
				  "a PATCH needs a Content-Type: %s (JSON Patch), %s or %s", PATCH_MEDIA_JSON,
				  PATCH_MEDIA_MERGE, PATCH_MEDIA_STRATEGIC);
	return patch_fail(err, errlen, -EINVAL,
			  "the body's Content-Type '%.*s' is not a patch type: send %s (JSON Patch), %s or %s",
			  (int)(n > 200 ? 200 : n), ct, PATCH_MEDIA_JSON, PATCH_MEDIA_MERGE, PATCH_MEDIA_STRATEGIC);
}

size_t patch_depth(const json_t *v, size_t limit)
{
	size_t deepest = 0, d, i;
	const char *key;
	json_t *child;

	if (!json_is_object(v) && !json_is_array(v))
		return 0;
	if (limit == 0)
		return 1;	/* one level over the limit: stop here */
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, child)
			if ((d = patch_depth(child, limit - 1)) > deepest)
				deepest = d;
	} else {
		json_array_foreach(v, i, child)
			if ((d = patch_depth(child, limit - 1)) > deepest)
				deepest = d;
	}
	return deepest + 1;
}

size_t patch_values(const json_t *v, size_t limit)
{
	size_t n = 1, i;
	const char *key;
	json_t *child;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, child)
			if ((n += patch_values(child, limit)) > limit)
				return n;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			if ((n += patch_values(child, limit)) > limit)
				return n;
	}
	return n;
}

static bool equal(const json_t *a, const json_t *b, int depth)
{
	const char *key;
	json_t *child;
	size_t i;

	if (depth > MODEL_MAX_DEPTH + 2)
		return false;
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, key, child) {
			const json_t *other = json_object_get(b, key);
			if (!other || !equal(child, other, depth + 1))
				return false;
		}
		return true;
	}
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		json_array_foreach(a, i, child)
			if (!equal(child, json_array_get(b, i), depth + 1))
				return false;
		return true;
	}
	return json_equal(a, b);	/* strings, true, false, null */
}

bool patch_equal(const json_t *a, const json_t *b)
{
	return a && b && equal(a, b, 1);
}

int patch_check(enum patch_type t, const json_t *patch, char *err, size_t errlen)
{
	if (t == PATCH_JSON)
		return patch_json_check(patch, err, errlen);
	if (!json_is_object(patch))
		return patch_fail(err, errlen, -EBADMSG, "a %s patch must be a JSON object",
				  t == PATCH_MERGE ? "merge" : "strategic merge");
	if (patch_depth(patch, MODEL_MAX_DEPTH) > MODEL_MAX_DEPTH)
		return patch_fail(err, errlen, -E2BIG, "the patch is nested deeper than %d levels (the limit)",
				  MODEL_MAX_DEPTH);
	return 0;
}

int patch_apply(enum patch_type t, enum kind_id kind, const json_t *doc, const json_t *patch, json_t **out,
		char *err, size_t errlen)
{
	json_t *work = NULL;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	rc = patch_check(t, patch, err, errlen);
	if (rc)
		goto out;
	if (!json_is_object(doc)) {
		rc = patch_fail(err, errlen, -EINVAL, "only an object can be patched");
		goto out;
	}
	work = json_deep_copy(doc);
	if (!work) {
		rc = patch_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	switch (t) {
	case PATCH_JSON:
		rc = patch_json_apply(&work, patch, err, errlen);
		break;
	case PATCH_MERGE:
		rc = patch_merge_apply(&work, patch);
		if (rc)
			patch_fail(err, errlen, rc, "out of memory");
		break;
	case PATCH_STRATEGIC:
		rc = patch_strategic_apply(kind, work, patch, err, errlen);
		break;
	default:
		rc = patch_fail(err, errlen, -EBADMSG, "unknown patch type %d", (int)t);
	}
	if (rc)
		goto out;
	if (!json_is_object(work)) {
		rc = patch_fail(err, errlen, -EINVAL, "the patched object is no longer an object");
		goto out;
	}
	*out = work;
	work = NULL;
out:
	json_decref(work);
	return rc;
}
