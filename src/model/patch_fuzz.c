/*
 * patch_fuzz.c — libFuzzer target: an object and a patch, as two JSON
 * texts (split at the first newline; the first byte picks the patch type
 * and the kind), through patch_apply.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks, and
 * aborts when one fails:
 *   1. every message is valid UTF-8 — it goes into a JSON answer;
 *   2. the object given is never changed;
 *   3. a result is an object, no deeper than MODEL_MAX_DEPTH when the
 *      object given was not;
 *   4. a JSON Merge Patch is idempotent: applied to its own result it
 *      gives that result again (RFC 7386).
 */
#include "model/patch.h"
#include "model/patch_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_message(const char *msg)
{
	json_t *s = json_string(msg);

	if (!s)
		abort();	/* property 1 */
	json_decref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char err[1024];
	const char *nl;
	json_t *doc, *patch, *copy, *out = NULL, *again = NULL;
	enum patch_type t;
	enum kind_id k;
	int rc;

	if (size < 2)
		return 0;
	t = (enum patch_type)(data[0] % 3);
	k = (enum kind_id)((data[0] / 3) % KIND_COUNT);
	nl = memchr(data + 1, '\n', size - 1);
	if (!nl)
		return 0;
	doc = json_loadb((const char *)data + 1, (size_t)(nl - (const char *)data - 1), 0, NULL);
	patch = json_loadb(nl + 1, size - (size_t)(nl + 1 - (const char *)data), JSON_DECODE_ANY, NULL);
	if (!doc || !patch)
		goto out;
	copy = json_deep_copy(doc);
	rc = patch_apply(t, k, doc, patch, &out, err, sizeof(err));
	if (!json_equal(doc, copy))
		abort();	/* property 2 */
	json_decref(copy);
	if (rc) {
		check_message(err);
		goto out;
	}
	if (!json_is_object(out) ||
	    (patch_depth(doc, MODEL_MAX_DEPTH) <= MODEL_MAX_DEPTH && patch_depth(out, MODEL_MAX_DEPTH) > MODEL_MAX_DEPTH))
		abort();	/* property 3 */
	if (t == PATCH_MERGE) {
		if (patch_apply(t, k, out, patch, &again, err, sizeof(err)) || !json_equal(out, again))
			abort();	/* property 4 */
	}
out:
	json_decref(doc);
	json_decref(patch);
	json_decref(out);
	json_decref(again);
	return 0;
}
