/*
 * registry_patch.c — PATCH of a stored object: the object read, patched
 * (model/patch.h), and written exactly as a PUT of the result would be.
 *
 *   registry_get ─► patch_apply ─► resourceVersion: the revision read,
 *        ▲          unless the patch set another ─► registry_check_write
 *        │          ─► authorize (the caller's: a node's write)
 *        │          ─► registry_write_checked ─► done
 *        │                       │
 *        └── 409, and the object ┘  (another writer got there first:
 *            changed since it was    apply the patch again to what it
 *            read                    stored; at most PATCH_RETRIES times)
 *
 * Invariants
 *  1. A patch is written only against the revision it was applied to (the
 *     write's precondition), so a write made in between is never
 *     overwritten: it makes this write fail with 409, and the patch is
 *     applied again to the object that write stored — as kube-apiserver
 *     does for a patch that names no resourceVersion.
 *  2. A patch that sets metadata.resourceVersion (to another revision than
 *     the one read) is a precondition of its own: its 409 is the answer,
 *     never retried.
 *  3. A 409 that is not the object changing (a node IP or a pod address
 *     another object holds) is answered at once: the retry reads the
 *     object at the revision it had, and stops there.
 *  4. What a PATCH may store is what a PUT of the patched object may: the
 *     same checks (body against path, controller-owned kinds, validation),
 *     admission and write.  A patch that changes the name, namespace, kind
 *     or apiVersion is the 400 such a PUT gets.
 */
#include "controller/registry_patch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* kube-apiserver's MaxRetryWhenPatchConflicts */
#define PATCH_RETRIES 5

/* st for a patch module error (model/patch.h); -1. */
static int patch_failed(int rc, const char *msg, struct status *st)
{
	if (rc == -EBADMSG)
		status_set(st, 400, "BadRequest", "%s", msg);
	else if (rc == -EINVAL)
		status_set(st, 422, "Invalid", "%s", msg);
	else if (rc == -E2BIG)
		status_set(st, 413, "RequestEntityTooLarge", "%s", msg);
	else
		status_set(st, 500, "InternalError", "%s", msg[0] ? msg : strerror(-rc));
	return -1;
}

int registry_patch_check(enum patch_type t, const json_t *patch, struct status *st)
{
	char msg[sizeof(st->message)];
	int rc = patch_check(t, patch, msg, sizeof(msg));

	return rc ? patch_failed(rc, msg, st) : 0;
}

/* The revision obj was read at (obj_from_kv set it), or 0. */
static int64_t revision_of(const json_t *obj)
{
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	int64_t rev = 0;

	return rv && model_revision_parse(rv, &rev) == 0 ? rev : 0;
}

/* obj's precondition: the revision read (rev), unless the patch set a
 * resourceVersion of its own — then true, and it stays for the write to
 * check (a malformed one: the request check's 400). */
static bool own_precondition(json_t *obj, int64_t rev)
{
	json_t *md = json_object_get(obj, "metadata");
	json_t *rv = json_object_get(md, "resourceVersion");
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, rev);
	if (rv && (!json_is_string(rv) || (json_string_length(rv) && strcmp(json_string_value(rv), text) != 0)))
		return true;
	if (json_is_object(md))
		json_object_set_new(md, "resourceVersion", json_string(text));
	return false;
}

int registry_patch(struct registry *r, const struct kind_info *k, const char *ns, const char *name,
		   enum patch_type t, const json_t *patch, unsigned flags, registry_authorize_fn authorize, void *arg,
		   json_t **out, struct status *st)
{
	struct status conflict = { 0 };
	int64_t conflict_rev = -1;
	char msg[sizeof(st->message)];

	*out = NULL;
	for (int attempt = 0; attempt <= PATCH_RETRIES; attempt++) {
		json_t *old = NULL, *obj = NULL;
		int64_t rev;
		bool own;
		int rc;

		if (registry_get(r, k, ns, name, &old, st))
			return -1;
		rev = revision_of(old);
		if (rev == conflict_rev) {
			json_decref(old);
			*st = conflict;		/* invariant 3 */
			return -1;
		}
		rc = patch_apply(t, k->id, old, patch, &obj, msg, sizeof(msg));
		json_decref(old);
		if (rc)
			return patch_failed(rc, msg, st);
		own = own_precondition(obj, rev);
		rc = registry_check_write(k, ns, name, obj, false, st);
		if (!rc && authorize)
			rc = authorize(arg, obj, st);
		if (!rc)
			rc = registry_write_checked(r, k, ns, obj, flags & ~REGISTRY_CREATE, out, st);
		json_decref(obj);
		if (!rc)
			return 0;
		if (st->code != 409 || own)
			return -1;	/* invariant 2 */
		conflict = *st;
		conflict_rev = rev;
	}
	status_set(st, 409, "Conflict", "%s \"%s\": the object kept changing under this patch (%d times); try again",
		   k->plural, name, PATCH_RETRIES + 1);
	return -1;
}
