/*
 * slice_set_test.c — the slice set shared by the two slice controllers
 * (slice_set.c): a randomized run of puts and deletes, namespaced and
 * cluster-scoped, ours under a few owners or someone else's, checked
 * after every step against a naive model (a list of every slice); and the
 * plan for an owner, which must list exactly that owner's slices of the
 * asked manager, in name order, and make them hold what is wanted.
 */
#include "controller/controller.h"
#include "model/slice_pack.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES 24
#define OWNERS 4

/* The naive model: for each (namespace, name), what the index should hold. */
struct slot {
	bool present, ours;
	int owner;		/* 0..OWNERS-1 when ours */
	int manager;		/* 0 or 1 when ours */
};

static const char *const nss[] = { "", "red" };	/* "" is cluster-scoped */

static void name_of(char *buf, size_t len, int i)
{
	snprintf(buf, len, "s-%02d", i);
}

/* An owner's slices are all in one namespace (a Service's, or the
 * cluster-scoped ones of a node), so owners are named with theirs. */
static void owner_of(char *buf, size_t len, int n, int o)
{
	snprintf(buf, len, "%s%sowner-%d", nss[n], n ? "/" : "", o);
}

static json_t *record(int n, const struct slot *s)
{
	char owner[32];

	if (!s->ours)
		return json_pack("{s:b}", "ours", 0);
	owner_of(owner, sizeof(owner), n, s->owner);
	return json_pack("{s:b, s:s, s:s, s:s, s:{}, s:b}", "ours", 1, "owner", owner, "manager",
			 s->manager ? "m1" : "m0", "group", "g", "entries", "irregular", 0);
}

/* The index equals the model: every slice's record, and by_owner exactly.
 * 0, or which part differs. */
static int agrees(const struct slice_set *set, struct slot m[2][NAMES])
{
	json_t *by_owner = json_object();
	int rc = 0;

	for (int n = 0; n < 2 && !rc; n++)
		for (int i = 0; i < NAMES && !rc; i++) {
			char name[16], owner[32];
			const json_t *rec;
			json_t *names;

			name_of(name, sizeof(name), i);
			rec = slice_set_get(set, nss[n], name);
			if (!rec != !m[n][i].present)
				rc = -1;
			else if (rec && !slice_set_owner(rec) != !m[n][i].ours)
				rc = -2;
			if (rc || !rec || !m[n][i].ours)
				continue;
			owner_of(owner, sizeof(owner), n, m[n][i].owner);
			if (strcmp(slice_set_owner(rec), owner))
				rc = -3;
			names = json_object_get(by_owner, owner);
			if (!names)
				json_object_set_new(by_owner, owner, names = json_object());
			json_object_set_new(names, name, json_true());
		}
	if (!rc && !json_equal(by_owner, set->by_owner))
		rc = -4;
	json_decref(by_owner);
	return rc;
}

TEST(slice_set_index_matches_a_naive_model)
{
	uint64_t seed = test_seed() | 1;
	struct slice_set set = { 0 };
	struct slot m[2][NAMES];

	memset(m, 0, sizeof(m));
	CHECK(slice_set_init(&set) == 0);
	for (int step = 0; step < 4000; step++) {
		int n = (int)test_rnd(&seed, 2), i = (int)test_rnd(&seed, NAMES), rc;
		struct slot *s = &m[n][i];
		char name[16];

		name_of(name, sizeof(name), i);
		if (test_rnd(&seed, 4) == 0) {
			s->present = false;
			slice_set_put(&set, nss[n], name, NULL);
		} else {
			s->present = true;
			s->ours = test_rnd(&seed, 5) != 0;
			s->owner = (int)test_rnd(&seed, OWNERS);
			s->manager = (int)test_rnd(&seed, 2);
			slice_set_put(&set, nss[n], name, record(n, s));
		}
		rc = agrees(&set, m);
		if (rc)
			test_fail(__FILE__, __LINE__, "step %d (%s/%s): the index differs from the model (%d)", step,
				  nss[n], name, rc);
		CHECK(!test_failed());
		if (step % 1000 == 999) {
			slice_set_clear(&set);
			memset(m, 0, sizeof(m));
			CHECK(json_object_size(set.by_owner) == 0);
		}
	}
	slice_set_free(&set);
	slice_set_free(&set);	/* a freed one again: nothing */
}

/* Owner-0's slices of manager m0, every other slice elsewhere: the plan
 * names exactly them, sorted, and fills them with the wanted entries. */
TEST(slice_set_plan_covers_the_owner_and_manager_only)
{
	struct slice_set set = { 0 };
	struct slice_pack_plan plan = { 0 };
	json_t *held = NULL, *want;
	const char *prev = "";
	size_t kept = 0, created = 0, entries = 0;

	CHECK(slice_set_init(&set) == 0);
	for (int i = 0; i < 10; i++) {
		struct slot s = { .present = true, .ours = i != 7, .owner = i % 3 == 0 ? 1 : 0, .manager = i == 5 };
		char name[16];

		name_of(name, sizeof(name), 9 - i);	/* put in reverse order */
		slice_set_put(&set, "red", name, record(1, &s));
		slice_set_put(&set, "", name, record(0, &s));	/* the same names, cluster-scoped */
	}
	want = json_pack("{s:{s:{}, s:{}, s:{}}}", "g", "a", "b", "c");
	CHECK(slice_set_plan(&set, "red", "red/owner-0", "m0", want, 2, &plan, &held) == 0);
	for (size_t i = 0; i < plan.n; i++) {
		const struct slice_pack_step *st = &plan.steps[i];

		entries += json_object_size(st->endpoints);
		if (st->action == SLICE_PACK_CREATE) {
			created++;
			continue;
		}
		CHECK(st->name);
		CHECK(strcmp(prev, st->name) < 0);	/* in name order */
		prev = st->name;
		kept++;
		/* red/owner-0's, of m0 */
		{
			const json_t *rec = slice_set_get(&set, "red", st->name);

			CHECK(rec);
			CHECK_STR(slice_set_owner(rec), "red/owner-0");
			CHECK_STR(json_string_value(json_object_get(rec, "manager")), "m0");
		}
	}
	/* i = 1, 2, 4, 8 are owner-0 with m0 (0, 3, 6, 9 owner-1; 5 m1; 7 not ours) */
	CHECK_EQ(kept, 4);
	CHECK_EQ(created, 0);
	CHECK_EQ(entries, 3);
	slice_pack_plan_free(&plan);
	json_decref(held);
	/* an owner with nothing: only creates */
	CHECK(slice_set_plan(&set, "", "owner-9", NULL, want, 2, &plan, &held) == 0);
	CHECK_EQ(plan.n, 2);
	CHECK(plan.steps[0].action == SLICE_PACK_CREATE && plan.steps[1].action == SLICE_PACK_CREATE);
	slice_pack_plan_free(&plan);
	json_decref(held);
	json_decref(want);
	slice_set_free(&set);
}
