/*
 * slice_pack.h — stable packing of a Service's endpoints into slices
 * (EndpointSlices): which slices to keep, rewrite, create or delete so
 * that the slices hold exactly the desired endpoints, writing as few as
 * possible.  Pure: no store, no names (the caller names new slices).
 *
 * Ownership: have and want are borrowed for the call; the plan's steps
 * borrow their name and group from have and want (valid while those are),
 * and own their endpoints map; slice_pack_plan_free frees it (and accepts a
 * zeroed plan).
 */
#ifndef WEFT_MODEL_SLICE_PACK_H
#define WEFT_MODEL_SLICE_PACK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A slice as stored: its group (the key of its port list) and endpoints
 * (key → endpoint).  irregular: stored unlike the controller writes it (an
 * endpoint of several addresses, a key twice): rewritten if it is kept. */
struct slice_pack_have {
	const char *name;
	const char *group;
	const json_t *endpoints;
	bool irregular;
};

enum slice_pack_action {
	SLICE_PACK_KEEP,	/* as stored: nothing to write */
	SLICE_PACK_WRITE,	/* have[i] with new endpoints */
	SLICE_PACK_CREATE,	/* a new slice */
	SLICE_PACK_DELETE,	/* have[i], emptied */
};

struct slice_pack_step {
	enum slice_pack_action action;
	const char *name;	/* have's; NULL for CREATE */
	const char *group;
	json_t *endpoints;	/* key → endpoint (owned); empty for DELETE */
};

struct slice_pack_plan {
	struct slice_pack_step *steps;
	size_t n;
};

/* want: group → {key → endpoint}; max: endpoints a slice holds at most
 * (>= 1).  The plan has one step for each of have, in have's order, then
 * the creates.  0, -EINVAL (max 0), -ENOMEM. */
int slice_pack(const struct slice_pack_have *have, size_t nhave, const json_t *want, size_t max,
	       struct slice_pack_plan *plan) __attribute__((warn_unused_result));
void slice_pack_plan_free(struct slice_pack_plan *plan);
/* Steps of the plan that write (WRITE, CREATE, DELETE). */
size_t slice_pack_writes(const struct slice_pack_plan *plan);

#endif
