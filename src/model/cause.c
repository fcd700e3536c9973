/*
 * cause.c — the causes of an Invalid answer (Kubernetes' StatusCause list)
 * read from the error text the validators write.
 *
 * The validators (validate.h) and the admission hooks report one problem
 * a line, "<field path>: <message>", the path made by vpush as they walk
 * the object (metadata.name, spec.containers[0].ports[1].name,
 * metadata.labels[app.kubernetes.io/name]).  So a line's field is what
 * comes before its first ": " outside brackets, provided it is made of a
 * path's characters only (letters, digits, '.', '_', '-' outside
 * brackets; anything but ']' inside).  The admission hooks' form
 * "status.podIP 10.0.0.9: ..." (a dotted path, then the value it refused)
 * names its field the same way, its whole line the message.  A line that
 * does not open with a path ("(more errors)", a message about the whole object) becomes a
 * cause without a field.
 *
 * The reason is read from the message's words, the few the validators use
 * (one place to keep in step with them, validate_test.c and cause_test.c
 * hold the pairs):
 *   "required...", "must not be empty"  FieldValueRequired
 *   "duplicate ..."                     FieldValueDuplicate
 *   "... is not one of ...",
 *   "... not supported ..."             FieldValueNotSupported
 *   "too long ...", "too large ..."     FieldValueTooLong
 *   "too many ..."                      FieldValueTooMany
 *   anything else                       FieldValueInvalid
 *
 * Bounds: at most MODEL_MAX_CAUSES causes (the rest are not listed; the
 * message still has them), a field of at most VPATH_MAX bytes.
 */
#include "model/model.h"
#include "model/validate.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

static bool starts(const char *s, size_t n, const char *word)
{
	size_t k = strlen(word);

	return n >= k && strncmp(s, word, k) == 0;
}

static bool has(const char *s, size_t n, const char *word)
{
	size_t k = strlen(word);

	for (size_t i = 0; i + k <= n; i++)
		if (strncmp(s + i, word, k) == 0)
			return true;
	return false;
}

static const char *reason_of(const char *m, size_t n)
{
	if (starts(m, n, "required") || starts(m, n, "must not be empty"))
		return "FieldValueRequired";
	if (starts(m, n, "duplicate"))
		return "FieldValueDuplicate";
	if (has(m, n, " is not one of ") || has(m, n, "not supported"))
		return "FieldValueNotSupported";
	if (starts(m, n, "too long") || starts(m, n, "too large"))
		return "FieldValueTooLong";
	if (starts(m, n, "too many"))
		return "FieldValueTooMany";
	return "FieldValueInvalid";
}

/* The length of the field path that opens line (n bytes), 0 when it does
 * not open with one; *skip, how much of line comes before its message:
 * the path and ": " ("spec.x: message"), or nothing when the path is
 * followed by a value ("status.podIP 10.0.0.9: ...", admit_pod.c's form,
 * whose whole line is the message). */
static size_t field_len(const char *line, size_t n, size_t *skip)
{
	bool bracket = false, dotted = false;

	*skip = 0;
	for (size_t i = 0; i < n && i < VPATH_MAX; i++) {
		unsigned char c = (unsigned char)line[i];

		if (bracket) {
			bracket = c != ']';
			continue;
		}
		if (c == '[') {
			bracket = true;
			continue;
		}
		if (c == ':' && i > 0 && i + 1 < n && line[i + 1] == ' ') {
			*skip = i + 2;
			return i;
		}
		if (c == ' ' && dotted && has(line + i, n - i, ": "))
			return i;
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return 0;
		dotted |= c == '.';
	}
	return 0;
}

static int add_cause(json_t *causes, const char *line, size_t n)
{
	size_t skip, f = field_len(line, n, &skip);
	const char *m = line + skip;
	size_t mn = n - skip;
	json_t *c = json_object();

	if (!c)
		return -1;
	if (json_object_set_new(c, "reason", json_string(reason_of(m, mn))) ||
	    json_object_set_new(c, "message", json_stringn(m, mn)) ||
	    (f && json_object_set_new(c, "field", json_stringn(line, f))) ||
	    json_array_append_new(causes, c))
		return -1;
	return 0;
}

json_t *model_error_causes(const char *text)
{
	json_t *causes = json_array();
	const char *line = text ? text : "";

	while (causes && *line && json_array_size(causes) < MODEL_MAX_CAUSES) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (n && add_cause(causes, line, n)) {
			json_decref(causes);
			return NULL;
		}
		line += n + (end ? 1 : 0);
	}
	return causes;
}
