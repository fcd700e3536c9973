/*
 * store_sync.c — group commit: many commits, one flush.
 *
 * Why: a commit that flushes (fsync) before it returns holds whatever lock
 * its caller holds across the flush, so a server that writes under one lock
 * makes one write per flush, however many clients wait.  Here a commit only
 * writes; the flush comes after, outside the caller's lock, and every
 * thread that needs one while it runs waits for the next, which covers them
 * all.
 *
 * State (written under mu, except committed; committed and durable are
 * atomics, so the common case — nothing to flush — takes no lock: a
 * server calls store_sync before every answer, from several threads):
 *   committed  commits counted so far (store_sync_committed, after each)
 *   durable    commits known flushed: 1..durable
 *   flushing   a thread (the leader) is in the back-end's flush; it
 *              flushes what was counted when it started (target)
 *   failed     a flush's error, final
 *
 *   store_sync(upto):
 *     durable >= upto ──────────────────────────────► 0
 *     failed ───────────────────────────────────────► failed
 *     nobody flushing ─► leader: target = committed, flush (mu released),
 *                        durable = target, wake everyone ─► check again
 *     someone flushing ─► wait for the leader's wake ─► check again
 *
 * Invariants
 *  1. durable <= committed, and commit i <= durable was counted before a
 *     flush began that ended without error: the back-end's flush covers
 *     every commit written before it starts, and a commit is counted only
 *     after it is written.
 *  2. At most one flush runs at a time per handle; waiters never spin.
 */
#include "store/store_sync.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct store_sync {
	pthread_mutex_t mu;
	pthread_cond_t done;
	uint64_t committed, durable;
	bool flushing;
	int failed;
};

int store_defer_sync(struct store *s)
{
	struct store_sync *g;
	int err;

	if (!s)
		return -EINVAL;
	if (s->sync)
		return 0;
	if (!s->backend->defer_sync || !s->backend->flush)
		return -ENOTSUP;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->done, NULL);
	err = s->backend->defer_sync(s);
	if (err) {
		pthread_cond_destroy(&g->done);
		pthread_mutex_destroy(&g->mu);
		free(g);
		return err;
	}
	s->sync = g;
	return 0;
}

void store_sync_committed(struct store *s)
{
	__atomic_add_fetch(&s->sync->committed, 1, __ATOMIC_RELEASE);
}

uint64_t store_commits(struct store *s)
{
	struct store_sync *g = s ? s->sync : NULL;

	return g ? __atomic_load_n(&g->committed, __ATOMIC_ACQUIRE) : 0;
}

int store_sync(struct store *s, uint64_t upto)
{
	struct store_sync *g = s ? s->sync : NULL;
	int err = 0;

	if (!g || __atomic_load_n(&g->durable, __ATOMIC_ACQUIRE) >= upto)
		return 0;
	pthread_mutex_lock(&g->mu);
	while (g->durable < upto && !g->failed) {
		uint64_t target;

		if (g->flushing) {
			pthread_cond_wait(&g->done, &g->mu);
			continue;
		}
		g->flushing = true;
		target = __atomic_load_n(&g->committed, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&g->mu);
		err = s->backend->flush(s);
		pthread_mutex_lock(&g->mu);
		g->flushing = false;
		if (err)
			g->failed = err;
		else if (target > g->durable)
			__atomic_store_n(&g->durable, target, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&g->done);
	}
	if (g->durable < upto)
		err = g->failed;
	pthread_mutex_unlock(&g->mu);
	return err;
}

void store_sync_close(struct store *s)
{
	struct store_sync *g = s->sync;
	int err;

	if (!g)
		return;
	/* a closing caller has nobody to tell: a failed flush was already
	 * reported to every store_sync since */
	err = store_sync(s, store_commits(s));
	(void)err;
	s->sync = NULL;
	pthread_cond_destroy(&g->done);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
