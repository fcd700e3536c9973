/*
 * slice_pack.c — stable packing of endpoints into slices (slice_pack.h),
 * the point of EndpointSlices: a change of one endpoint writes one slice.
 *
 *   1. keep   each stored slice keeps the endpoints it has that are still
 *             wanted in its group (a changed endpoint is kept, updated, in
 *             its slice), at most max of them, each endpoint in the first
 *             slice that has it; a slice that lost or changed anything is
 *             WRITE, else KEEP
 *   2. fill   the wanted endpoints no slice kept, in address order
 *             (model_endpointslice_key_cmp), go into
 *             the group's slices with room: first those already written in
 *             this plan (their write is paid for), then the rest, each in
 *             have's order
 *   3. create what is left, in new slices of max endpoints
 *   4. delete a stored slice left empty
 * Nothing is moved to balance the slices (Kubernetes does not either):
 * an endpoint stays in the slice it is in for as long as it is wanted.
 *
 * Invariants of the result:
 *   a. the union of the slices (all but DELETE) is want, each endpoint
 *      once, equal to want's value;
 *   b. no slice holds more than max, none is empty;
 *   c. from a stored state that was (a) and (b) for the want before, a
 *      want that adds, removes or changes one endpoint gives one write.
 * slice_pack_test.c checks them against a naive model.
 */
#include "model/slice_pack.h"

#include "model/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_address(const void *a, const void *b)
{
	return model_endpointslice_key_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of map, sorted by cmp (malloc'd array of borrowed strings). */
static const char **sorted_keys(const json_t *map, size_t *n, int (*cmp)(const void *, const void *))
{
	const char **keys = calloc(json_object_size(map) + 1, sizeof(*keys));
	const char *key;
	json_t *v;
	size_t i = 0;

	if (!keys)
		return NULL;
	json_object_foreach((json_t *)map, key, v)
		keys[i++] = key;
	qsort(keys, i, sizeof(*keys), cmp);
	*n = i;
	return keys;
}

static int push(struct slice_pack_plan *p, size_t *cap, enum slice_pack_action a, const char *name,
		const char *group)
{
	if (p->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct slice_pack_step *s = realloc(p->steps, ncap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		p->steps = s;
		*cap = ncap;
	}
	p->steps[p->n] = (struct slice_pack_step){ a, name, group, json_object() };
	if (!p->steps[p->n].endpoints)
		return -ENOMEM;
	p->n++;
	return 0;
}

/* Step 1 for one stored slice; placed: group → {key: true}. */
static int keep(struct slice_pack_plan *p, size_t *cap, const struct slice_pack_have *h, const json_t *want,
		size_t max, json_t *placed)
{
	const json_t *wg = json_object_get(want, h->group);
	json_t *done = json_object_get(placed, h->group), *e;
	bool changed = h->irregular;
	struct slice_pack_step *s;
	const char *key;
	int err = push(p, cap, SLICE_PACK_KEEP, h->name, h->group);

	if (err)
		return err;
	s = &p->steps[p->n - 1];
	if (wg && !done) {
		done = json_object();
		if (!done || json_object_set_new(placed, h->group, done) < 0)
			return -ENOMEM;
	}
	json_object_foreach((json_t *)h->endpoints, key, e) {
		json_t *d = json_object_get(wg, key);

		if (!d || json_object_get(done, key) || json_object_size(s->endpoints) >= max) {
			changed = true;
			continue;
		}
		if (!json_equal(d, e))
			changed = true;
		if (json_object_set(s->endpoints, key, d) < 0 || json_object_set_new(done, key, json_true()) < 0)
			return -ENOMEM;
	}
	if (changed)
		s->action = SLICE_PACK_WRITE;
	return 0;
}

/* Put the keys from *i on that are not placed yet into st until it holds
 * max (*i moves past what it took); 0 or -ENOMEM.  *took: st got one. */
static int take(struct slice_pack_step *st, const char **keys, size_t *i, size_t n, const json_t *wanted,
		const json_t *done, size_t max, bool *took)
{
	for (; *i < n && json_object_size(st->endpoints) < max; (*i)++) {
		if (json_object_get(done, keys[*i]))
			continue;
		if (json_object_set(st->endpoints, keys[*i], json_object_get(wanted, keys[*i])) < 0)
			return -ENOMEM;
		*took = true;
	}
	return 0;
}

/* Steps 2 and 3 for one group: the keys not placed yet. */
static int fill(struct slice_pack_plan *p, size_t *cap, const char *group, const json_t *wanted,
		const json_t *done, size_t max)
{
	size_t n = 0, i = 0, nsteps = p->n;
	const char **keys = sorted_keys(wanted, &n, cmp_address);
	int err = 0;

	if (!keys)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t s = 0; s < nsteps && i < n; s++) {
			struct slice_pack_step *st = &p->steps[s];

			bool took = false;

			if (strcmp(st->group, group) || (st->action == SLICE_PACK_WRITE) != (pass == 0))
				continue;
			if ((err = take(st, keys, &i, n, wanted, done, max, &took)))
				goto out;
			if (took)
				st->action = SLICE_PACK_WRITE;
		}
	}
	while (i < n) {
		struct slice_pack_step *st;

		if (json_object_get(done, keys[i])) {
			i++;
			continue;
		}
		if ((err = push(p, cap, SLICE_PACK_CREATE, NULL, group)))
			goto out;
		st = &p->steps[p->n - 1];
		if ((err = take(st, keys, &i, n, wanted, done, max, &(bool){ false })))
			goto out;
	}
out:
	free(keys);
	return err;
}

int slice_pack(const struct slice_pack_have *have, size_t nhave, const json_t *want, size_t max,
	       struct slice_pack_plan *plan)
{
	json_t *placed = json_object();
	const char **groups = NULL;
	size_t cap = 0, ngroups = 0;
	int err = 0;

	*plan = (struct slice_pack_plan){ 0 };
	if (!max) {
		err = -EINVAL;
		goto out;
	}
	if (!placed) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nhave && !err; i++)
		err = keep(plan, &cap, &have[i], want, max, placed);
	if (err)
		goto out;
	groups = sorted_keys(want, &ngroups, cmp_str);
	if (!groups) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t g = 0; g < ngroups && !err; g++)
		err = fill(plan, &cap, groups[g], json_object_get(want, groups[g]),
			   json_object_get(placed, groups[g]), max);
	for (size_t i = 0; !err && i < plan->n; i++)
		if (!json_object_size(plan->steps[i].endpoints))
			plan->steps[i].action = SLICE_PACK_DELETE;
out:
	free(groups);
	json_decref(placed);
	if (err)
		slice_pack_plan_free(plan);
	return err;
}

void slice_pack_plan_free(struct slice_pack_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->n; i++)
		json_decref(plan->steps[i].endpoints);
	free(plan->steps);
	*plan = (struct slice_pack_plan){ 0 };
}

size_t slice_pack_writes(const struct slice_pack_plan *plan)
{
	size_t n = 0;

	for (size_t i = 0; i < plan->n; i++)
		n += plan->steps[i].action != SLICE_PACK_KEEP;
	return n;
}
