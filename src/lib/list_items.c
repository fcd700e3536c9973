/*
 * list_items.c — a Kubernetes list's items, one at a time (list_items.h).
 *
 * One forward pass, no recursion: a string is skipped to its closing
 * quote (a backslash skips the byte after it), an object or array to the
 * bracket that brings the depth back to zero (strings inside skipped as
 * strings, so a bracket in a string does not count), a scalar to the
 * next delimiter.  The brackets are counted, not matched: "[}" passes
 * here, and jansson refuses it when it parses the item.
 */
#include "lib/list_items.h"

#include <errno.h>
#include <string.h>

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at '"': just past the closing quote, or NULL.  *escaped: it held a backslash. */
static const char *skip_string(const char *p, const char *end, bool *escaped)
{
	for (p++; p < end; p++) {
		if (*p == '\\') {
			*escaped = true;
			if (++p == end)
				return NULL;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

/* Just past the value at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	bool escaped = false;
	size_t depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end, &escaped);
	if (*p != '{' && *p != '[') {
		const char *s = p;

		while (p < end && !strchr(",]} \t\n\r{[\"", *p))
			p++;
		return p > s ? p : NULL;
	}
	while (p < end) {
		if (*p == '"') {
			p = skip_string(p, end, &escaped);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

static bool key_is(const char *key, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(key, name, len) == 0;
}

int list_items_find(const char *text, size_t len, struct list_items *it)
{
	const char *p = text, *end = text + len;
	bool items = false;

	memset(it, 0, sizeof(*it));
	p = skip_ws(p, end);
	if (p == end || *p++ != '{')
		return -EINVAL;
	p = skip_ws(p, end);
	if (p < end && *p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		const char *key, *val, *val_end;
		bool escaped = false;
		size_t key_len;

		if (p == end || *p != '"')
			return -EINVAL;
		key = p + 1;
		p = skip_string(p, end, &escaped);
		if (!p || escaped)
			return -EINVAL;
		key_len = (size_t)(p - 1 - key);
		p = skip_ws(p, end);
		if (p == end || *p++ != ':')
			return -EINVAL;
		val = skip_ws(p, end);
		val_end = skip_value(val, end);
		if (!val_end)
			return -EINVAL;
		if (key_is(key, key_len, "items")) {
			if (items || *val != '[')
				return -EINVAL;
			items = true;
			it->p = val + 1;
			it->end = val_end - 1;
		} else if (key_is(key, key_len, "metadata")) {
			if (it->meta || *val != '{')
				return -EINVAL;
			it->meta = val;
			it->meta_len = (size_t)(val_end - val);
		}
		p = skip_ws(val_end, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		return -EINVAL;
	}
done:
	if (skip_ws(p, end) != end)
		return -EINVAL;
	if (items && *it->end != ']')
		return -EINVAL;
	if (!items)
		it->p = it->end = end;
	return 0;
}

int list_items_next(struct list_items *it, const char **item, size_t *len)
{
	const char *p = skip_ws(it->p, it->end), *v;

	if (p == it->end)
		return 0;
	if (it->started) {
		if (*p != ',')
			return -EINVAL;
		p = skip_ws(p + 1, it->end);	/* "[1,]" is not an array: skip_value refuses */
	}
	v = skip_value(p, it->end);
	if (!v)
		return -EINVAL;
	*item = p;
	*len = (size_t)(v - p);
	it->p = v;
	it->started = true;
	return 1;
}
