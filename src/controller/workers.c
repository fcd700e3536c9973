/*
 * workers.c — the pool of workers.h: a FIFO under one mutex, a condition
 * variable the workers sleep on.
 *
 * Invariants
 *  1. head/tail, stopping and the threads' count change only under lock.
 *  2. Once stopping is set nothing more is queued, and a worker exits only
 *     when the queue is empty: every queued job runs exactly once.
 */
#include "controller/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define WORKERS_MAX 64

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a job was queued, or stopping */
	struct work *head, *tail;
	bool stopping;
	unsigned n;
	pthread_t threads[WORKERS_MAX];
};

static void *worker_run(void *arg)
{
	struct workers *p = arg;

	for (;;) {
		struct work *w;

		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		w = p->head;
		if (w && !(p->head = w->next))
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		if (!w)
			return NULL;	/* stopping, and nothing left (invariant 2) */
		w->next = NULL;
		w->run(w);
	}
}

struct workers *workers_start(unsigned n)
{
	struct workers *p;

	if (n < 1 || n > WORKERS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (; p->n < n; p->n++) {
		int err = pthread_create(&p->threads[p->n], NULL, worker_run, p);

		if (err) {
			workers_free(p);
			errno = err;
			return NULL;
		}
	}
	return p;
}

bool workers_queue(struct workers *p, struct work *w)
{
	bool queued;

	pthread_mutex_lock(&p->lock);
	queued = !p->stopping;
	if (queued) {
		w->next = NULL;
		if (p->tail)
			p->tail->next = w;
		else
			p->head = w;
		p->tail = w;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return queued;
}

void workers_stop(struct workers *p)
{
	unsigned n;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	n = p->n;
	p->n = 0;	/* joined once */
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(p->threads[i], NULL);
}

void workers_free(struct workers *p)
{
	if (!p)
		return;
	workers_stop(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
