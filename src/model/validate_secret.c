/*
 * validate_secret.c — a Secret: base64 data and plain stringData under
 * ConfigMap-style keys, a type (kubernetes.io/tls needs tls.crt and
 * tls.key), at most 1 MiB in all.
 *
 * Secret values never appear in a message, not even quoted back.
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

#define SECRET_MAX_BYTES (1024 * 1024)
#define SECRET_TYPE_MAX 253

static bool key_ok(const char *s)
{
	size_t n = strnlen(s, 254);

	if (n == 0 || n > 253 || !strcmp(s, ".") || !strncmp(s, "..", 2))
		return false;
	return model_key_chars(s, n);
}

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

/* Standard base64 with padding (line breaks ignored, as Go's decoder does).
 * The decoded size, or -1. */
static long long b64_decoded_size(const char *s, size_t n)
{
	size_t chars = 0, pad = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' || s[i] == '\n')
			continue;
		if (s[i] == '=') {
			pad++;
		} else if (pad || !b64_char(s[i])) {
			return -1;	/* data after padding, or not base64 */
		}
		chars++;
	}
	if (chars % 4 != 0 || pad > 2)
		return -1;
	return (long long)(chars / 4 * 3 - pad);
}

static void check_map(struct vctx *v, const json_t *secret, const char *field, bool base64,
		      long long *total)
{
	const json_t *map = vget_object(v, secret, field, false), *value;
	const char *key;
	char q[VQUOTE_MAX];
	size_t mark;

	if (!map)
		return;
	if (json_object_size(map) > MODEL_MAX_ITEMS) {
		verror(v, field, "too many entries (%zu, at most %d)", json_object_size(map),
		       MODEL_MAX_ITEMS);
		return;
	}
	mark = vpush(v, field);
	json_object_foreach((json_t *)map, key, value) {
		size_t m;

		if (!key_ok(key)) {
			verror(v, NULL, "%s is not a valid key ([-._a-zA-Z0-9]+, at most 253)",
			       vquote(key, q));
			continue;
		}
		m = vpush_key(v, key);
		if (!json_is_string(value)) {
			verror(v, NULL, "must be a string");
		} else if (base64) {
			long long n = b64_decoded_size(json_string_value(value),
						       json_string_length(value));

			if (n < 0)
				verror(v, NULL, "must be valid base64");
			else
				*total += n;
		} else {
			*total += (long long)json_string_length(value);
		}
		vpop(v, m);
		if (*total > SECRET_MAX_BYTES)
			break;
	}
	vpop(v, mark);
}

static bool has_key(const json_t *secret, const char *key)
{
	return json_object_get(json_object_get(secret, "data"), key) ||
	       json_object_get(json_object_get(secret, "stringData"), key);
}

void validate_secret(struct vctx *v, const json_t *obj)
{
	const char *type = vget_string(v, obj, "type", false);
	long long total = 0;
	bool immutable;

	if (type && strnlen(type, SECRET_TYPE_MAX + 1) > SECRET_TYPE_MAX)
		verror(v, "type", "too long (at most %d)", SECRET_TYPE_MAX);
	check_map(v, obj, "data", true, &total);
	if (total <= SECRET_MAX_BYTES)
		check_map(v, obj, "stringData", false, &total);
	if (total > SECRET_MAX_BYTES)
		verror(v, "data", "too large (more than %d bytes)", SECRET_MAX_BYTES);
	if (type && !strcmp(type, "kubernetes.io/tls")) {
		if (!has_key(obj, "tls.crt"))
			verror(v, "data", "a kubernetes.io/tls Secret needs 'tls.crt'");
		if (!has_key(obj, "tls.key"))
			verror(v, "data", "a kubernetes.io/tls Secret needs 'tls.key'");
	}
	vget_bool(v, obj, "immutable", false, &immutable);
}
