/*
 * leader_test.c — leader election on a real store, two candidates on two
 * handles, with the clock given by the test: one leads at a time, a
 * holder that stops renewing is replaced after one duration of the
 * follower's own clock and not before, the old holder finds out at its
 * next tick, its fence no longer holds, and a released lease is taken at
 * once.
 */
#include "controller/leader.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define KEY "/weft/leader/test"
#define DURATION 300

static struct store *open_store(void)
{
	char url[512], err[256];

	snprintf(url, sizeof(url), "sqlite:%s/leader.db", test_tmpdir());
	return store_open(url, err, sizeof(err));
}

/* A write fenced as registry.c fences the Endpoints controller's. */
static bool fenced_write(struct store *s, int64_t fence)
{
	struct store_cmp c = { KEY, STORE_CMP_MOD_REV, STORE_CMP_EQ, fence };
	struct store_op op = { .type = STORE_OP_PUT, .key = "/weft/obj/endpoints/x/y", .value = "{}", .value_len = 2 };
	struct store_txn t = { .cmps = &c, .ncmps = 1, .success = &op, .nsuccess = 1 };
	struct store_txn_result res;

	return store_txn(s, &t, &res) == 0 && res.succeeded;
}

TEST(leader_one_at_a_time_and_takeover_after_a_duration)
{
	struct store *sa = open_store(), *sb = open_store();
	struct leader *a = NULL, *b = NULL;
	int64_t fence_a;

	CHECK(sa && sb);
	a = leader_new(sa, KEY, "ctrl-a", DURATION);
	b = leader_new(sb, KEY, "ctrl-b", DURATION);
	CHECK(a && b);
	CHECK(leader_new(sa, KEY, "x", 10) == NULL);	/* too short to renew in time */
	if (!a || !b)
		goto out;

	CHECK(leader_tick(a, 0));
	CHECK(!leader_tick(b, 0));
	CHECK_STR(leader_holder(b), "ctrl-a");
	fence_a = leader_fence(a);
	CHECK(fenced_write(sa, fence_a));

	/* a renews every third of the duration; b sees it move and waits on */
	CHECK(leader_tick(a, 50));			/* nothing due: no store call */
	CHECK_EQ(leader_fence(a), fence_a);
	CHECK(leader_tick(a, 100));			/* renewed */
	CHECK(leader_fence(a) > fence_a);
	CHECK(!fenced_write(sa, fence_a));		/* a renew moves the fence on */
	fence_a = leader_fence(a);
	CHECK(!leader_tick(b, 200));
	CHECK(!leader_tick(b, 450));			/* unchanged for 250 ms of b's clock: not yet */
	CHECK(leader_held(a));

	/* a stops; b takes over one duration after it last saw a change */
	CHECK(leader_tick(b, 500));
	CHECK_STR(leader_holder(b), "ctrl-b");
	CHECK(!fenced_write(sa, fence_a));		/* a's fence no longer holds */
	CHECK(fenced_write(sb, leader_fence(b)));
	CHECK(!leader_tick(a, 510));			/* a learns it at its next tick */
	CHECK_STR(leader_holder(a), "ctrl-b");

	/* b gives it up: a takes it at its next read (a tenth of the
	 * duration after its last), no duration to wait */
	CHECK_EQ(leader_release(b), 0);
	CHECK(!leader_held(b));
	CHECK(!leader_tick(a, 520));			/* read at 510: not due */
	CHECK(leader_tick(a, 540));
	CHECK(!leader_tick(b, 550));
out:
	leader_free(a);
	leader_free(b);
	store_close(sa);
	store_close(sb);
}

/* Two candidates see the lease expire at once: the first to take it over
 * moves its mod_rev, so the second starts waiting again. */
TEST(leader_a_takeover_stops_the_other_candidate)
{
	struct store *s0 = open_store(), *sa = open_store(), *sb = open_store();
	struct leader *old = leader_new(s0, KEY, "old", DURATION);
	struct leader *a = leader_new(sa, KEY, "a", DURATION), *b = leader_new(sb, KEY, "b", DURATION);

	CHECK(old && a && b);
	if (!old || !a || !b)
		goto out;
	CHECK(leader_tick(old, 0));
	CHECK(!leader_tick(a, 0));
	CHECK(!leader_tick(b, 0));
	/* both decide at once that old stopped: their take-overs race */
	CHECK_EQ((int)leader_tick(a, 1000) + (int)leader_tick(b, 1000), 1);
	CHECK_EQ((int)leader_held(a) + (int)leader_held(b), 1);
out:
	leader_free(old);
	leader_free(a);
	leader_free(b);
	store_close(s0);
	store_close(sa);
	store_close(sb);
}
