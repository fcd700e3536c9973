/*
 * inline_calls_test.c — a call waits in its server thread only when its
 * connection is that thread's one live connection, only on the thread's
 * own record, never in every thread at once, and never while a slow store
 * backs calls off; new connections go to the thread with the fewest live
 * connections that is not waiting on the store.
 */
#include "controller/inline_calls.h"
#include "test.h"

#include <pthread.h>

TEST(inline_sizes)
{
	CHECK(inline_calls_new(1) == NULL);
	CHECK(inline_calls_new(INLINE_THREADS_MAX + 1) == NULL);
	inline_calls_free(inline_calls_new(INLINE_THREADS_MAX));
}

TEST(inline_only_live_connection)
{
	struct inline_calls *ic = inline_calls_new(4);
	struct inline_thread *t = inline_thread(ic, 0);
	struct inline_stats st;

	CHECK(!inline_enter(ic, t, 1000));	/* no connection: nothing to serve */
	inline_live(t);
	CHECK(inline_enter(ic, t, 1000));	/* the one live connection */
	inline_leave(ic, t, 1001);
	inline_live(t);				/* a second: it would wait behind */
	CHECK(!inline_enter(ic, t, 1002));
	inline_gone(t);				/* parked with the sender, or closed */
	CHECK(inline_enter(ic, t, 1003));
	inline_leave(ic, t, 1004);
	inline_queued(ic);
	inline_stats(ic, 1005, &st);
	CHECK_EQ(st.inline_calls, 2);
	CHECK_EQ(st.queued_calls, 1);
	CHECK(!st.backing_off);
	inline_calls_free(ic);
}

struct other {
	struct inline_calls *ic;
	struct inline_thread *mine, *theirs;
	bool entered_theirs, entered_mine;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;

	o->mine = inline_thread(o->ic, 1);
	inline_live(o->mine);
	o->entered_theirs = inline_enter(o->ic, o->theirs, 2000);
	o->entered_mine = inline_enter(o->ic, o->mine, 2000);
	if (o->entered_mine)
		inline_leave(o->ic, o->mine, 2001);
	return NULL;
}

TEST(inline_own_thread_and_one_left)
{
	struct inline_calls *ic = inline_calls_new(2);
	struct inline_thread *t = inline_thread(ic, 0);
	struct other o = { .ic = ic, .theirs = t };
	pthread_t th;

	inline_live(t);
	CHECK_EQ(pthread_create(&th, NULL, other_thread, &o), 0);
	pthread_join(th, NULL);
	CHECK(!o.entered_theirs);		/* another thread's record: never */
	CHECK(o.entered_mine);
	/* 2 threads: while this one waits, the other may not */
	CHECK(inline_enter(ic, t, 3000));
	CHECK(!inline_enter(ic, o.mine, 3000));	/* not this thread's either */
	inline_gone(o.mine);			/* its connection closed; the next run opens one */
	CHECK_EQ(pthread_create(&th, NULL, other_thread, &o), 0);
	pthread_join(th, NULL);
	CHECK(!o.entered_mine);			/* one thread always left to serve */
	inline_leave(ic, t, 3001);
	inline_calls_free(ic);
}

TEST(inline_backs_off_when_slow)
{
	struct inline_calls *ic = inline_calls_new(4);
	struct inline_thread *t = inline_thread(ic, 2);
	struct inline_stats st;
	int64_t waited;

	inline_live(t);
	/* a call that took INLINE_STUCK_MS backs every call off */
	CHECK(inline_enter(ic, t, 10000));
	inline_leave(ic, t, 10000 + INLINE_STUCK_MS);
	CHECK(!inline_enter(ic, t, 10000 + INLINE_STUCK_MS + 1));
	inline_stats(ic, 10000 + INLINE_STUCK_MS + 1, &st);
	CHECK(st.backing_off);
	CHECK(inline_enter(ic, t, 10000 + INLINE_STUCK_MS + INLINE_BACKOFF_MS));
	inline_leave(ic, t, 10000 + INLINE_STUCK_MS + INLINE_BACKOFF_MS + 1);
	/* a call still waiting: the watchdog backs off, once, and says how long */
	CHECK(inline_enter(ic, t, 20000));
	CHECK(!inline_watchdog(ic, 20000 + INLINE_STUCK_MS - 1, &waited));
	CHECK(inline_watchdog(ic, 20000 + INLINE_STUCK_MS, &waited));
	CHECK(waited >= INLINE_STUCK_MS);
	CHECK(!inline_watchdog(ic, 20000 + INLINE_STUCK_MS + 100, &waited));	/* already backing off */
	inline_leave(ic, t, 20000 + INLINE_STUCK_MS + 200);
	CHECK(!inline_enter(ic, t, 20000 + INLINE_STUCK_MS + 300));
	inline_calls_free(ic);
}

TEST(inline_pick_least_live_not_waiting)
{
	struct inline_calls *ic = inline_calls_new(3);
	struct inline_thread *t0 = inline_thread(ic, 0), *t1, *t2;
	int seen[3] = { 0 };

	t1 = inline_thread(ic, 1);
	t2 = inline_thread(ic, 2);
	for (int i = 0; i < 30; i++)
		seen[inline_pick(ic)]++;
	CHECK_EQ(seen[0], 10);			/* all equal: taken in turn */
	CHECK_EQ(seen[1], 10);
	CHECK_EQ(seen[2], 10);
	inline_live(t0);
	inline_live(t0);
	inline_live(t1);
	inline_live(t2);
	for (int i = 0; i < 5; i++)
		CHECK(inline_pick(ic) != 0);	/* t0 has two */
	CHECK(inline_enter(ic, t2, 5000));	/* this thread claimed record 2 last */
	for (int i = 0; i < 5; i++)
		CHECK_EQ(inline_pick(ic), 1);	/* t2 waits on the store: t1 */
	inline_leave(ic, t2, 5001);
	inline_calls_free(ic);
}
