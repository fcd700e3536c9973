/*
 * patch_shared.h — what the patch files share (internal to src/model):
 * patch.c (the entry: media types, checks, dispatch), patch_json.c (RFC
 * 6902), patch_merge.c (RFC 7386) and patch_strategic.c (Kubernetes'
 * strategic merge patch).  Errors as in patch.h.
 */
#ifndef WEFT_MODEL_PATCH_SHARED_H
#define WEFT_MODEL_PATCH_SHARED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/patch.h"

/* rc, after writing the message to err (errlen may be 0). */
int patch_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Levels of objects and lists in v, as the model counts them (a scalar 0,
 * {} 1, {"a":[]} 2); counting stops at limit + 1, so the walk never goes
 * deeper than that. */
size_t patch_depth(const json_t *v, size_t limit);

/* JSON values in v (the model's count: every value, containers too),
 * counting only up to limit + 1.  v is no deeper than MODEL_MAX_DEPTH. */
size_t patch_values(const json_t *v, size_t limit);

/* RFC 6902's equality (used by `test` and by merge keys): numbers by value
 * (1 equals 1.0), objects by members in any order, lists in order.  Values
 * deeper than MODEL_MAX_DEPTH + 2 are never equal. */
bool patch_equal(const json_t *a, const json_t *b);

/* A JSON string for messages: at most 120 bytes of s, control characters
 * as '?', "..." when cut.  buf: PATCH_QUOTE_MAX bytes. */
#define PATCH_QUOTE_MAX 128
const char *patch_quote(const char *s, char *buf);

int patch_json_check(const json_t *ops, char *err, size_t errlen);
/* *doc (owned; may be replaced, e.g. by an operation on the root) patched
 * in place.  ops passed patch_json_check. */
int patch_json_apply(json_t **doc, const json_t *ops, char *err, size_t errlen);
/* *doc merged with patch (RFC 7386) in place; patch is no deeper than
 * MODEL_MAX_DEPTH.  0 or -ENOMEM. */
int patch_merge_apply(json_t **doc, const json_t *patch);
/* doc (owned, an object) merged with patch (an object no deeper than
 * MODEL_MAX_DEPTH) in place. */
int patch_strategic_apply(enum kind_id kind, json_t *doc, const json_t *patch, char *err, size_t errlen);

#endif
