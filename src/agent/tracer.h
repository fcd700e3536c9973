/*
 * tracer.h — this node's answers to TraceRequests (docs/trace.md).
 *
 *   sync.c's "tracerequests" watch        (this node's only: fieldSelector
 *     └─ tracer_offer, under agent.lock    spec.nodeName)
 *          └─ queue (TRACER_QUEUE_MAX)
 *               └─ the tracer's thread: trace_run on the loaded programs,
 *                  then PUT NAME/status with the answer
 *
 * A request is offered while it has no answer (status.action or
 * status.error); the thread runs one at a time (weft_trace is one entry
 * per CPU), once the data plane is ready (a trace of half-programmed maps
 * would answer for a node that does not exist; after TRACER_READY_WAIT_S
 * the answer says so instead).  An answer written against a request that
 * changed or went in between is dropped (409, 404): the next offer, if
 * any, has the new one.  A request offered while the queue is full is
 * not queued (logged): its requester's wait ends without an answer.
 *
 * Hollow nodes have no programs to run: they do not watch TraceRequests.
 * Ownership: the tracer owns its queue's copies and its HTTP handle.
 */
#ifndef WEFT_AGENT_TRACER_H
#define WEFT_AGENT_TRACER_H

#include "lib/jview.h"

#define TRACER_QUEUE_MAX 64
#define TRACER_READY_WAIT_S 10

struct agent;
struct tracer;

/* The thread and its queue; NULL with errno set. */
struct tracer *tracer_start(struct agent *a);
/* Queue obj (a TraceRequest for this node) unless it has its answer or
 * is queued already.  Under agent.lock; copies what it keeps. */
void tracer_offer(struct tracer *t, struct jval obj);
/* Stop the thread (agent.stopping is set), free everything.  NULL: nothing. */
void tracer_stop(struct tracer *t);

#endif
