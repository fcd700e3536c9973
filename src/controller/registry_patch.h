/*
 * registry_patch.h — PATCH in the registry (registry_patch.c): the stored
 * object patched (model/patch.h), then checked and written as
 * registry_replace would write it, against the revision it was read at.
 * A write in between makes it read and patch again (at most 5 times, as
 * kube-apiserver), unless the patch set its own resourceVersion.
 *
 * Like the other registry calls: 0 and *out (the stored object, a new
 * reference), or -1 with st set — 404 for a missing object; 400, 422 or
 * 413 for a patch that is malformed, does not apply, or is over a bound;
 * and whatever a PUT of the patched object would get.  The patch is
 * borrowed.  Called under the API's global lock, as every registry write.
 */
#ifndef WEFT_CONTROLLER_REGISTRY_PATCH_H
#define WEFT_CONTROLLER_REGISTRY_PATCH_H

#include "controller/controller.h"
#include "model/patch.h"

/* Sees each patched object just before it is written (the API's node
 * authorizer): 0, or -1 with st set, and nothing is written. */
typedef int (*registry_authorize_fn)(void *arg, json_t *obj, struct status *st);

/* What can be refused without the object: the patch's shape and bounds. */
int registry_patch_check(enum patch_type t, const json_t *patch, struct status *st) WUR;
/* authorize may be NULL (no check).  flags: REGISTRY_DRY_RUN,
 * REGISTRY_STATUS (the patch applies to the whole object; what of it is
 * written is registry_write_checked's). */
int registry_patch(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		   enum patch_type t, const json_t *patch, unsigned flags, registry_authorize_fn authorize, void *arg,
		   json_t **out, struct status *st) WUR;

#endif
