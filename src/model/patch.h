/*
 * patch.h — PATCH as Kubernetes has it: a patch document applied to an
 * object gives the object that a PUT then writes.  Three types, chosen by
 * the request's Content-Type:
 *
 *   application/json-patch+json             JSON Patch (RFC 6902): a list
 *       of operations (add, remove, replace, move, copy, test) on JSON
 *       Pointers (RFC 6901: "/spec/containers/0/image", ~0 for '~', ~1 for
 *       '/', "-" the end of a list); all or nothing
 *   application/merge-patch+json            JSON Merge Patch (RFC 7386): an
 *       object merged into the object, null removes, lists replaced
 *   application/strategic-merge-patch+json  Kubernetes' strategic merge
 *       patch: a merge patch whose lists are merged by key where the kind's
 *       field says so (containers by name, ports by port and protocol, ...)
 *       and that takes directives ($patch, $retainKeys, $setElementOrder/,
 *       $deleteFromPrimitiveList/); patch_strategic.c has the fields
 *
 * Pure: JSON in, JSON out; no I/O, nothing printed, no state.  The caller
 * owns what it passes (borrowed for the call) and what it gets (*out, a new
 * reference).  A patch is applied to a copy: a failed one leaves nothing
 * half-done.
 *
 * Bounds (whatever the body): at most PATCH_MAX_OPERATIONS operations in a
 * JSON Patch (kube-apiserver's number); a patch nested at most
 * MODEL_MAX_DEPTH levels (a JSON Patch: its values, below the list and the
 * operation); the patched object never nested deeper than MODEL_MAX_DEPTH
 * (an operation that would is refused, so nothing here recurses deeper
 * than that whatever it is given); values copied by JSON Patch `copy` at
 * most MODEL_MAX_VALUES in all (copying a list into itself doubles it).
 * The caller checks the result against the model's limits as for any write.
 *
 * Errors: 0, or a negative errno with one line in err naming what is
 * wrong and where ("operation 2 (test /metadata/labels/app): the value is
 * 'web', not 'db'"):
 *   -EBADMSG  the patch is malformed in itself (not its type's shape, an
 *             unknown operation or directive, a pointer not starting with
 *             '/'): HTTP 400
 *   -EINVAL   it does not apply to this object (a path that is not there,
 *             an index out of range, a failed test, a list element without
 *             its merge key): HTTP 422, as kube-apiserver answers
 *   -E2BIG    over a bound above: HTTP 413
 *   -ENOMEM
 */
#ifndef WEFT_MODEL_PATCH_H
#define WEFT_MODEL_PATCH_H

#include <jansson.h>
#include <stddef.h>

#include "model/model.h"

enum patch_type { PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC };

#define PATCH_MAX_OPERATIONS 10000
#define PATCH_MEDIA_JSON "application/json-patch+json"
#define PATCH_MEDIA_MERGE "application/merge-patch+json"
#define PATCH_MEDIA_STRATEGIC "application/strategic-merge-patch+json"

/* The type a Content-Type header names (media type in any case, parameters
 * such as "; charset=utf-8" allowed).  0 with *t, or -EINVAL (none, or
 * another media type) with the message a 415 carries in err, naming it and
 * the three accepted. */
int patch_type_parse(const char *content_type, enum patch_type *t, char *err, size_t errlen)
	__attribute__((warn_unused_result));
const char *patch_type_media(enum patch_type t);

/* What can be known of a patch without the object: its type's shape (a
 * list of well-formed operations; an object), its pointers' syntax and the
 * bounds.  0, -EBADMSG or -E2BIG with err.  patch_apply checks it again. */
int patch_check(enum patch_type t, const json_t *patch, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* doc patched: 0 with *out (a new object; doc is not changed), or an error
 * above.  kind decides a strategic merge patch's merge keys. */
int patch_apply(enum patch_type t, enum kind_id kind, const json_t *doc, const json_t *patch, json_t **out,
		char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
