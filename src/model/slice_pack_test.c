/*
 * slice_pack_test.c — the packing of endpoints into slices: small cases by
 * hand, then random sequences of endpoint sets, each step packed and
 * applied to a simulated store of slices, checked against a naive model (a
 * plain list of the wanted (group, key, value) triples):
 *   - the union of the slices is the model, each endpoint once;
 *   - no slice is over the limit, none empty;
 *   - an endpoint stays in the slice it was in while it is wanted;
 *   - a step that adds, removes or changes one endpoint writes one slice,
 *     a step that changes nothing writes none.
 * TEST_SEED=N replays a run.
 */
#include "model/slice_pack.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUPS 3
#define KEYS 400
#define SLICES_MAX 1024

/* the simulated store */
struct slice {
	char name[32];
	char group[16];
	json_t *endpoints;
};

/* the naive model: for each key, its group (-1: not wanted) and value */
struct model {
	int group[KEYS];
	int value[KEYS];
};

static const char *group_name(int g)
{
	static const char *const names[GROUPS] = { "[80]", "[80,443]", "[]" };

	return names[g];
}

static void key_of(int k, char *buf, size_t len)
{
	snprintf(buf, len, "10.0.%d.%d", k / 256, k % 256);
}

static json_t *endpoint(int k, int value)
{
	char key[32];

	key_of(k, key, sizeof(key));
	return json_pack("{s:[s], s:i}", "addresses", key, "v", value);
}

static json_t *want_of(const struct model *m)
{
	json_t *want = json_object();

	for (int k = 0; k < KEYS; k++) {
		const char *g = m->group[k] >= 0 ? group_name(m->group[k]) : NULL;
		char key[32];

		if (!g)
			continue;
		if (!json_object_get(want, g))
			json_object_set_new(want, g, json_object());
		key_of(k, key, sizeof(key));
		json_object_set_new(json_object_get(want, g), key, endpoint(k, m->value[k]));
	}
	return want;
}

/* Pack, check the plan against the model and apply it to the store.
 * *writes: the plan's writes.  0, or -1 after test_fail. */
static int step(struct slice *s, size_t *n, int *next_name, const struct model *m, size_t max, size_t *writes)
{
	struct slice_pack_have have[SLICES_MAX];
	struct slice_pack_plan plan = { 0 };
	json_t *want = want_of(m), *before = json_object(), *seen = json_object();
	size_t out = 0;
	struct slice next[SLICES_MAX];
	int rc = -1;

	for (size_t i = 0; i < *n; i++) {
		const char *key;
		json_t *v;

		have[i] = (struct slice_pack_have){ s[i].name, s[i].group, s[i].endpoints, false };
		json_object_foreach(s[i].endpoints, key, v)
			json_object_set_new(before, key, json_string(s[i].name));
	}
	if (slice_pack(have, *n, want, max, &plan)) {
		test_fail(__FILE__, __LINE__, "slice_pack failed");
		goto out;
	}
	if (plan.n < *n) {
		test_fail(__FILE__, __LINE__, "plan of %zu steps for %zu slices", plan.n, *n);
		goto out;
	}
	*writes = slice_pack_writes(&plan);
	for (size_t i = 0; i < plan.n; i++) {
		const struct slice_pack_step *st = &plan.steps[i];
		const char *key;
		json_t *v;

		if (st->action == SLICE_PACK_DELETE)
			continue;
		if (st->action == SLICE_PACK_KEEP && !json_equal(st->endpoints, s[i].endpoints)) {
			test_fail(__FILE__, __LINE__, "slice %s kept but its endpoints differ", s[i].name);
			goto out;
		}
		if (!json_object_size(st->endpoints) || json_object_size(st->endpoints) > max) {
			test_fail(__FILE__, __LINE__, "a slice of %zu endpoints (limit %zu)",
				  json_object_size(st->endpoints), max);
			goto out;
		}
		if (out == SLICES_MAX) {
			test_fail(__FILE__, __LINE__, "too many slices");
			goto out;
		}
		if (st->action == SLICE_PACK_CREATE) {
			snprintf(next[out].name, sizeof(next[out].name), "s-%d", (*next_name)++);
			snprintf(next[out].group, sizeof(next[out].group), "%s", st->group);
		} else {
			next[out] = s[i];
		}
		next[out].endpoints = json_incref(st->endpoints);
		json_object_foreach(st->endpoints, key, v) {
			const char *was = json_string_value(json_object_get(before, key));
			int k = atoi(strrchr(key, '.') + 1) + 256 * atoi(strchr(strchr(key, '.') + 1, '.') + 1);

			if (json_object_get(seen, key)) {
				test_fail(__FILE__, __LINE__, "%s in two slices", key);
				goto out;
			}
			json_object_set_new(seen, key, json_true());
			if (k >= KEYS || m->group[k] < 0 || strcmp(group_name(m->group[k]), next[out].group)) {
				test_fail(__FILE__, __LINE__, "%s in slice %s of group %s: not wanted there", key,
					  next[out].name, next[out].group);
				goto out;
			}
			if (!json_equal(v, json_object_get(json_object_get(want, next[out].group), key))) {
				test_fail(__FILE__, __LINE__, "%s: not the wanted value", key);
				goto out;
			}
			/* stable: a wanted endpoint stays where it was, in its group */
			if (was && st->action != SLICE_PACK_CREATE && strcmp(was, next[out].name)) {
				bool moved_group = true;

				for (size_t j = 0; j < *n; j++)
					if (!strcmp(s[j].name, was))
						moved_group = strcmp(s[j].group, next[out].group) != 0;
				if (!moved_group) {
					test_fail(__FILE__, __LINE__, "%s moved from slice %s to %s", key, was,
						  next[out].name);
					goto out;
				}
			}
		}
		out++;
	}
	for (int k = 0; k < KEYS; k++) {
		char key[32];

		key_of(k, key, sizeof(key));
		if (m->group[k] >= 0 && !json_object_get(seen, key)) {
			test_fail(__FILE__, __LINE__, "%s wanted (group %s) but in no slice", key,
				  group_name(m->group[k]));
			goto out;
		}
	}
	for (size_t i = 0; i < *n; i++)
		json_decref(s[i].endpoints);
	memcpy(s, next, out * sizeof(*s));
	*n = out;
	rc = 0;
out:
	if (rc) {
		/* the run ends: the store goes */
		for (size_t i = 0; i < out; i++)
			json_decref(next[i].endpoints);
		for (size_t i = 0; i < *n; i++)
			json_decref(s[i].endpoints);
		*n = 0;
	}
	slice_pack_plan_free(&plan);
	json_decref(want);
	json_decref(before);
	json_decref(seen);
	return rc;
}

static void store_free(struct slice *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(s[i].endpoints);
}

TEST(slice_pack_by_hand)
{
	json_t *want = json_pack("{s:{s:{s:[s]}, s:{s:[s]}, s:{s:[s]}}}", "[80]", "10.0.0.1", "addresses",
				 "10.0.0.1", "10.0.0.2", "addresses", "10.0.0.2", "10.0.0.3", "addresses",
				 "10.0.0.3");
	json_t *full = json_pack("{s:{s:[s]}, s:{s:[s]}}", "10.0.0.1", "addresses", "10.0.0.1", "10.0.0.9",
				 "addresses", "10.0.0.9");
	struct slice_pack_have have[] = { { "a-1", "[80]", full, false } };
	struct slice_pack_plan plan = { 0 };

	CHECK(slice_pack(have, 1, want, 2, &plan) == 0);
	/* a-1 keeps 10.0.0.1, loses .9, takes .2; .3 goes to a new slice */
	CHECK_EQ(plan.n, 2);
	CHECK_EQ(plan.steps[0].action, SLICE_PACK_WRITE);
	CHECK(json_object_get(plan.steps[0].endpoints, "10.0.0.1") && json_object_get(plan.steps[0].endpoints, "10.0.0.2"));
	CHECK_EQ(plan.steps[1].action, SLICE_PACK_CREATE);
	CHECK(json_object_get(plan.steps[1].endpoints, "10.0.0.3"));
	CHECK_EQ(slice_pack_writes(&plan), 2);
	slice_pack_plan_free(&plan);
	CHECK(slice_pack(have, 1, want, 0, &plan) != 0);
	/* nothing wanted: the slice goes */
	json_object_clear(want);
	CHECK(slice_pack(have, 1, want, 2, &plan) == 0);
	CHECK_EQ(plan.n, 1);
	CHECK_EQ(plan.steps[0].action, SLICE_PACK_DELETE);
	slice_pack_plan_free(&plan);
	json_decref(want);
	json_decref(full);
}

/* Random sequences: single changes (one write each), no change (none),
 * and bulk changes (only the union and limits checked). */
TEST(slice_pack_random_against_model)
{
	uint64_t rs = test_seed() | 1;

	for (int run = 0; run < 40 && !test_failed(); run++) {
		struct slice s[SLICES_MAX];
		struct model m;
		size_t n = 0, writes = 0, max = 1 + test_rnd(&rs, run % 4 ? 12 : 120);
		int next_name = 1;

		for (int k = 0; k < KEYS; k++) {
			m.group[k] = -1;
			m.value[k] = 0;
		}
		for (int t = 0; t < 300; t++) {
			uint32_t op = test_rnd(&rs, 10);
			int k = (int)test_rnd(&rs, KEYS), expect = -1;

			if (op < 3 && m.group[k] < 0) {		/* add one */
				m.group[k] = (int)test_rnd(&rs, GROUPS);
				expect = 1;
			} else if (op < 5 && m.group[k] >= 0) {	/* remove one */
				m.group[k] = -1;
				expect = 1;
			} else if (op < 6 && m.group[k] >= 0) {	/* change one */
				m.value[k]++;
				expect = 1;
			} else if (op < 7) {			/* nothing */
				expect = 0;
			} else {				/* many at once */
				int changes = 1 + (int)test_rnd(&rs, 80);

				for (int c = 0; c < changes; c++) {
					int j = (int)test_rnd(&rs, KEYS);

					m.group[j] = test_rnd(&rs, 3) ? (int)test_rnd(&rs, GROUPS) : -1;
					m.value[j] += (int)test_rnd(&rs, 2);
				}
			}
			if (step(s, &n, &next_name, &m, max, &writes))
				break;
			if (expect >= 0 && writes != (size_t)expect) {
				test_fail(__FILE__, __LINE__, "run %d step %d (op %u, key %d, limit %zu): %zu writes, want %d",
					  run, t, op, k, max, writes, expect);
				break;
			}
		}
		store_free(s, n);
	}
}

/* A new limit: slices over it are cut down, the rest moves to others. */
TEST(slice_pack_smaller_limit)
{
	struct slice s[SLICES_MAX];
	struct model m;
	size_t n = 0, writes = 0;
	int next_name = 1;

	for (int k = 0; k < KEYS; k++) {
		m.group[k] = k < 250 ? 0 : -1;
		m.value[k] = 0;
	}
	CHECK(step(s, &n, &next_name, &m, 100, &writes) == 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(writes, 3);
	CHECK(step(s, &n, &next_name, &m, 100, &writes) == 0);
	CHECK_EQ(writes, 0);
	m.group[17] = -1;
	CHECK(step(s, &n, &next_name, &m, 100, &writes) == 0);
	CHECK_EQ(writes, 1);
	if (step(s, &n, &next_name, &m, 30, &writes) == 0) {
		CHECK_EQ(n, 9);	/* 249 endpoints, 30 a slice */
	}
	store_free(s, n);
}
