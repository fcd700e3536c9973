/*
 * jview_fuzz.c — libFuzzer target for the JSON view the agent reads every
 * list and watch event through (jview.h), against jansson as the
 * reference: the view accepts a text exactly when json_loadb accepts it,
 * and then the tree made from the view is json_equal to jansson's.  Also
 * walked: every element and member reached by jval_first/jval_next, with
 * every reader on each (the sanitizers watch the reads).
 */
#include "lib/jview.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t walk(struct jval x, int depth)
{
	uint64_t h = (uint64_t)jval_type(x) + jval_size(x) + (uint64_t)jval_integer(x);
	const char *s = jval_str(x), *k;

	if (s)
		h += strlen(s) + jval_strlen(x);
	if (depth > 64)
		return h;
	for (struct jval e = jval_first(x); jval_ok(e); e = jval_next(e)) {
		k = jval_key(e);
		if (k && jval_type(jval_get(x, k)) == JVAL_NONE)
			abort();	/* a member walked to is found by its key */
		h += walk(e, depth + 1);
	}
	return h + (uint64_t)jval_type(jval_at(x, 0)) + (uint64_t)jval_type(jval_path(x, "a.b"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jview v;
	struct jview_error err;
	json_t *ref = json_loadb((const char *)data, size, 0, NULL), *mine;
	int rc = jview_parse(&v, (const char *)data, size, &err);
	volatile uint64_t h;

	if (rc == -ENOMEM)
		goto out;
	if ((rc == 0) != (ref != NULL))
		abort();	/* the verdicts differ */
	if (rc == 0) {
		mine = jval_to_json(jview_root(&v));
		if (mine && !json_equal(mine, ref))
			abort();	/* the values differ */
		json_decref(mine);
		h = walk(jview_root(&v), 0);
		(void)h;
		jview_free(&v);
	}
out:
	json_decref(ref);
	return 0;
}
