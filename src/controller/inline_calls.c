/*
 * inline_calls.c — see inline_calls.h.
 */
#include "controller/inline_calls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

struct inline_thread {
	atomic_int live;		/* its connections that need it (not parked) */
	_Atomic int64_t since;		/* when its call in progress started; 0: none */
};

struct inline_calls {
	uint64_t id;			/* unique in the process: whose self is whose */
	unsigned nthreads;
	atomic_uint waiting;		/* threads in a call now */
	atomic_uint turn;		/* inline_pick's start among ties */
	_Atomic int64_t backoff_until;	/* calls go to workers before this */
	atomic_uint_fast64_t inline_calls, queued_calls;
	struct inline_thread threads[];
};

static atomic_uint_fast64_t last_id;

/* The server thread's own record, and whose it is (a thread serves one
 * server; a test thread may meet several, one after another). */
static _Thread_local struct inline_thread *self;
static _Thread_local uint64_t self_of;

struct inline_calls *inline_calls_new(unsigned nthreads)
{
	struct inline_calls *ic;

	if (nthreads < 2 || nthreads > INLINE_THREADS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	ic = calloc(1, sizeof(*ic) + nthreads * sizeof(ic->threads[0]));
	if (ic) {
		ic->nthreads = nthreads;
		ic->id = atomic_fetch_add(&last_id, 1) + 1;
	}
	return ic;
}

void inline_calls_free(struct inline_calls *ic)
{
	free(ic);
}

struct inline_thread *inline_thread(struct inline_calls *ic, unsigned i)
{
	self_of = ic->id;
	self = &ic->threads[i % ic->nthreads];
	return self;
}

unsigned inline_pick(struct inline_calls *ic)
{
	unsigned start = atomic_fetch_add(&ic->turn, 1), best = start % ic->nthreads;
	int best_live = -1;

	for (unsigned k = 0; k < ic->nthreads; k++) {
		unsigned i = (start + k) % ic->nthreads;
		int live = atomic_load(&ic->threads[i].live);

		if (atomic_load(&ic->threads[i].since))
			continue;	/* waiting on the store: nothing new behind it */
		if (best_live < 0 || live < best_live) {
			best = i;
			best_live = live;
		}
	}
	return best;
}

void inline_live(struct inline_thread *t)
{
	if (t)
		atomic_fetch_add(&t->live, 1);
}

void inline_gone(struct inline_thread *t)
{
	if (t)
		atomic_fetch_sub(&t->live, 1);
}

bool inline_enter(struct inline_calls *ic, struct inline_thread *t, int64_t now_ms)
{
	unsigned n;

	if (!t || t != self || self_of != ic->id || atomic_load(&t->live) != 1 || now_ms < atomic_load(&ic->backoff_until))
		return false;
	n = atomic_fetch_add(&ic->waiting, 1);
	if (n + 1 >= ic->nthreads) {	/* one thread always left to accept and serve */
		atomic_fetch_sub(&ic->waiting, 1);
		return false;
	}
	atomic_store(&t->since, now_ms > 0 ? now_ms : 1);
	atomic_fetch_add(&ic->inline_calls, 1);
	return true;
}

static void back_off(struct inline_calls *ic, int64_t now_ms)
{
	int64_t until = now_ms + INLINE_BACKOFF_MS, was = atomic_load(&ic->backoff_until);

	while (was < until && !atomic_compare_exchange_weak(&ic->backoff_until, &was, until))
		;
}

void inline_leave(struct inline_calls *ic, struct inline_thread *t, int64_t now_ms)
{
	int64_t since = atomic_exchange(&t->since, 0);

	atomic_fetch_sub(&ic->waiting, 1);
	if (now_ms - since >= INLINE_STUCK_MS)
		back_off(ic, now_ms);
}

bool inline_watchdog(struct inline_calls *ic, int64_t now_ms, int64_t *waited)
{
	unsigned n = ic->nthreads;
	bool was_backing_off = now_ms < atomic_load(&ic->backoff_until), started = false;

	*waited = 0;
	for (unsigned i = 0; i < n; i++) {
		int64_t since = atomic_load(&ic->threads[i].since);

		if (since && now_ms - since >= INLINE_STUCK_MS) {
			back_off(ic, now_ms);
			if (now_ms - since > *waited)
				*waited = now_ms - since;
			started = !was_backing_off;
		}
	}
	return started;
}

void inline_queued(struct inline_calls *ic)
{
	atomic_fetch_add(&ic->queued_calls, 1);
}

void inline_stats(struct inline_calls *ic, int64_t now_ms, struct inline_stats *out)
{
	out->inline_calls = atomic_load(&ic->inline_calls);
	out->queued_calls = atomic_load(&ic->queued_calls);
	out->backing_off = now_ms < atomic_load(&ic->backoff_until);
}
