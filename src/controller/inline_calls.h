/*
 * inline_calls.h — whether a store call may wait on the store in the
 * server thread that read its request, rather than be handed to a worker.
 *
 * On a store over the network (etcd) a get or write waits about one of
 * etcd's round trips (1–2 ms).  Handing it to a worker (workers.h) costs
 * two thread wake-ups on its path: the worker's, and the server thread's
 * to send the answer; on a busy machine each is a wait in the run queue
 * (about 0.1 ms measured on 2 CPUs at 87% busy).  Waiting in the server
 * thread costs none, but every other connection of that thread waits
 * with it.  So a call waits in its thread only when nothing can wait
 * behind it:
 *
 *  1. its connection is the only live one of the thread: a watch stream
 *     parked with the sender (watch_sender.h) is not live, the sender
 *     writes it; a connection suspended for a worker or the lister is,
 *     its answer needs the thread.  A new connection goes to the thread
 *     inline_pick names: one not waiting on the store, with the fewest
 *     live connections;
 *  2. fewer than all but one of the threads are in such a call, so one
 *     always accepts and serves;
 *  3. the store answers promptly: a call that has waited INLINE_STUCK_MS
 *     (inline_watchdog, from the API's loop, or the call itself when it
 *     ends) sends every call to the workers for INLINE_BACKOFF_MS.
 *
 *   connection opened ─► thread's live +1     parked ─► −1   back from
 *   the sender (its request completed) ─► +1   closed (not parked) ─► −1
 *   inline_enter (true) ─► the call ─► inline_leave
 *
 * Threads: server thread i claims record i (inline_thread, from the
 * thread, at each of its connections); every other call may come from
 * any thread (atomics only).
 * The counts are advice for one decision: a count off by one for an
 * instant sends a call the other way, never loses a connection.
 */
#ifndef WEFT_CONTROLLER_INLINE_CALLS_H
#define WEFT_CONTROLLER_INLINE_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#define INLINE_STUCK_MS 250	/* a call with the store this long: the store is in trouble */
#define INLINE_BACKOFF_MS 2000	/* ... and calls go to the workers this long after */
#define INLINE_THREADS_MAX 64

struct inline_calls;
struct inline_thread;

/* For a server of nthreads threads (2..INLINE_THREADS_MAX); NULL with errno. */
struct inline_calls *inline_calls_new(unsigned nthreads);
void inline_calls_free(struct inline_calls *ic);

/* Record i (< nthreads), claimed by the calling server thread (only its
 * own thread may enter a call on it). */
struct inline_thread *inline_thread(struct inline_calls *ic, unsigned i);

/* The thread for a new connection: of those not waiting on the store,
 * one with the fewest live connections (ties taken in turn). */
unsigned inline_pick(struct inline_calls *ic);

/* A connection of t opened, or became live again (its watch stream came
 * back from the sender); t may be NULL. */
void inline_live(struct inline_thread *t);
/* A connection of t closed, or was parked with the sender; t may be NULL. */
void inline_gone(struct inline_thread *t);

/* May the calling thread t wait on the store for a call of one of its
 * connections, at now_ms?  true: it is counted in until inline_leave. */
bool inline_enter(struct inline_calls *ic, struct inline_thread *t, int64_t now_ms);
/* The call of inline_enter ended at now_ms: a slow one starts a back-off. */
void inline_leave(struct inline_calls *ic, struct inline_thread *t, int64_t now_ms);

/* From the API's loop: a call waiting since INLINE_STUCK_MS or more
 * starts (or extends) a back-off.  True when this turn started one (the
 * caller says so in its log); *waited: that call's wait so far. */
bool inline_watchdog(struct inline_calls *ic, int64_t now_ms, int64_t *waited);

/* Calls that waited inline, and calls handed to a worker (inline_queued). */
struct inline_stats {
	uint64_t inline_calls, queued_calls;
	bool backing_off;
};
void inline_queued(struct inline_calls *ic);
void inline_stats(struct inline_calls *ic, int64_t now_ms, struct inline_stats *out);

#endif
