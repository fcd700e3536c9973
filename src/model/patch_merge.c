/*
 * patch_merge.c — JSON Merge Patch (RFC 7386).
 *
 * The RFC's whole algorithm:
 *
 *   merge(target, patch):
 *     patch not an object  → the patch itself
 *     target not an object → target = {}
 *     each member name: value of patch
 *       value null → name removed from target
 *       else       → target[name] = merge(target[name], value)
 *
 * So lists are replaced whole, and a new value of the patch loses its null
 * members too (merged into nothing).  The recursion follows the patch, which
 * patch_check held to MODEL_MAX_DEPTH levels.
 */
#include "model/patch_shared.h"

#include <errno.h>

static int merge_object(json_t *target, const json_t *patch, int depth);

/* merge(absent or not an object, value): value without its null members */
static json_t *fresh(const json_t *value, int depth)
{
	json_t *v;

	if (!json_is_object(value))
		return json_deep_copy(value);
	v = json_object();
	if (v && merge_object(v, value, depth)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

/* target (an object) merged with patch (an object) in place: members keep
 * their place in target, new ones come last. */
static int merge_object(json_t *target, const json_t *patch, int depth)
{
	const char *key;
	json_t *value;

	if (depth > MODEL_MAX_DEPTH + 1)
		return -E2BIG;	/* patch_check refused such a patch */
	json_object_foreach((json_t *)patch, key, value) {
		json_t *member = json_object_get(target, key);
		int rc;

		if (json_is_null(value)) {
			json_object_del(target, key);
		} else if (json_is_object(member) && json_is_object(value)) {
			if ((rc = merge_object(member, value, depth + 1)))
				return rc;
		} else if (json_object_set_new(target, key, fresh(value, depth + 1))) {
			return -ENOMEM;
		}
	}
	return 0;
}

int patch_merge_apply(json_t **doc, const json_t *patch)
{
	json_t *v;

	if (json_is_object(*doc) && json_is_object(patch))
		return merge_object(*doc, patch, 1);
	if (!(v = fresh(patch, 1)))
		return -ENOMEM;
	json_decref(*doc);
	*doc = v;
	return 0;
}
