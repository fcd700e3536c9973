/*
 * workers_test.c — the pool runs every job queued, once each, from many
 * queuing threads at once; stop lets what is queued finish and then
 * refuses more; a job may free itself in its run.
 */
#include "controller/workers.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>

#define QUEUERS 4
#define JOBS 500

struct counted {
	struct work work;	/* first: the pool's */
	int *runs;		/* this job's slot */
	pthread_mutex_t *lock;
	int *total;
};

static void counted_run(struct work *w)
{
	struct counted *c = (struct counted *)w;

	pthread_mutex_lock(c->lock);
	(*c->runs)++;
	(*c->total)++;
	pthread_mutex_unlock(c->lock);
	free(c);	/* the job is its run's */
}

struct queuer {
	struct workers *pool;
	int runs[JOBS];
	pthread_mutex_t *lock;
	int *total;
	int refused;
};

static void *queue_all(void *arg)
{
	struct queuer *q = arg;

	for (int i = 0; i < JOBS; i++) {
		struct counted *c = malloc(sizeof(*c));

		if (!c)
			continue;
		*c = (struct counted){ .work.run = counted_run, .runs = &q->runs[i], .lock = q->lock, .total = q->total };
		if (!workers_queue(q->pool, &c->work)) {
			q->refused++;
			free(c);
		}
	}
	return NULL;
}

TEST(workers_run_every_job_once)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct workers *pool = workers_start(3);
	static struct queuer q[QUEUERS];
	pthread_t t[QUEUERS];
	int total = 0;

	CHECK(pool != NULL);
	if (!pool)
		return;
	for (int i = 0; i < QUEUERS; i++) {
		q[i] = (struct queuer){ .pool = pool, .lock = &lock, .total = &total };
		CHECK(pthread_create(&t[i], NULL, queue_all, &q[i]) == 0);
	}
	for (int i = 0; i < QUEUERS; i++)
		pthread_join(t[i], NULL);
	workers_stop(pool);	/* what is queued still runs */
	CHECK_EQ(total, QUEUERS * JOBS);
	for (int i = 0; i < QUEUERS; i++) {
		CHECK_EQ(q[i].refused, 0);
		for (int j = 0; j < JOBS; j++)
			CHECK_EQ(q[i].runs[j], 1);
	}
	/* stopped: refused, the job still the caller's */
	{
		struct counted late = { .work.run = counted_run };

		CHECK(!workers_queue(pool, &late.work));
	}
	workers_stop(pool);	/* again: nothing */
	workers_free(pool);
	workers_free(NULL);
}

TEST(workers_refuse_a_bad_size)
{
	CHECK(workers_start(0) == NULL);
	CHECK(workers_start(65) == NULL);
}
