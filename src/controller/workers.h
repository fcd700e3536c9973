/*
 * workers.h — a fixed pool of threads that run queued jobs, first come
 * first served.  The API hands them the gets and writes that wait on a
 * store over the network (etcd) when the MHD thread that read one serves
 * other connections too (inline_calls.h), so that those never wait
 * behind it; as many calls are with the store at once as there are
 * workers, besides those waiting in MHD's threads.
 *
 *   workers_queue ──► queue ──► a worker: job->run(job) ──► (the job's own
 *                                                            end: it owns
 *                                                            itself)
 *   workers_stop: no more queued (false); what is queued still runs; joined.
 *   workers_free: after workers_stop, once nothing can call workers_queue.
 *
 * Ownership: a job belongs to the caller until queued, then to its run,
 * which frees it if it must (the pool never touches a job after run).
 */
#ifndef WEFT_CONTROLLER_WORKERS_H
#define WEFT_CONTROLLER_WORKERS_H

#include <stdbool.h>

struct work {
	void (*run)(struct work *w);
	struct work *next;	/* the pool's */
};

struct workers;

/* n threads (1..64).  NULL with errno. */
struct workers *workers_start(unsigned n);
/* Queue w for a worker: true; false when the pool is stopping (w not
 * queued: still the caller's). */
bool workers_queue(struct workers *p, struct work *w);
/* Stop taking jobs (workers_queue answers false from now on), let the
 * workers finish what is queued, join them.  Accepts NULL; idempotent. */
void workers_stop(struct workers *p);
/* Free p (stopped first if it was not).  Accepts NULL. */
void workers_free(struct workers *p);

#endif
