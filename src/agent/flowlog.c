/*
 * flowlog.c — the node's flow log as the agent holds it (flowlog.h).
 *
 *   reader thread: ring_buffer__poll on weft_flows (at most POLL_MS
 *   between looks at stop) -> on_event: into the ring (seq, event),
 *   counted by kind
 *
 * Invariants
 *  1. ring[seq % keep] holds event seq for seq in
 *     (next - min(next, keep), next]; next is the last seq given.
 *  2. The programs report forwards exactly while listeners > 0 (the
 *     count changes and the telling happen under the lock).
 */
#include "agent/flowlog.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#define POLL_MS 200

struct flowlog {
	struct datapath *dp;
	struct ring_buffer *rb;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;		/* the ring, the counts, listeners */
	pthread_cond_t more;		/* broadcast at each event kept */
	struct weft_flow *ring;		/* keep of them */
	size_t keep;
	uint64_t next;			/* the last sequence number given */
	uint64_t counts[WEFT_FLOW_SAMPLE + 1];
	unsigned listeners;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct flowlog *fl = ctx;
	const struct weft_flow *e = data;

	if (len < sizeof(*e))
		return 0;	/* not ours: the layout is the programs' */
	pthread_mutex_lock(&fl->lock);
	fl->next++;
	fl->ring[fl->next % fl->keep] = *e;
	if (e->kind >= 1 && e->kind <= WEFT_FLOW_SAMPLE)
		fl->counts[e->kind]++;
	pthread_cond_broadcast(&fl->more);
	pthread_mutex_unlock(&fl->lock);
	return 0;
}

static void *reader(void *arg)
{
	struct flowlog *fl = arg;

	while (!atomic_load(&fl->stop))
		if (ring_buffer__poll(fl->rb, POLL_MS) < 0 && errno != EINTR)
			break;
	return NULL;
}

struct flowlog *flowlog_start(struct datapath *dp, size_t keep)
{
	struct flowlog *fl;
	int fd = datapath_flows_fd(dp), rc;

	if (fd < 0 || !keep) {
		errno = fd < 0 ? -fd : EINVAL;
		return NULL;
	}
	if (!(fl = calloc(1, sizeof(*fl))))
		return NULL;
	if (!(fl->ring = calloc(keep, sizeof(*fl->ring)))) {
		free(fl);
		return NULL;
	}
	fl->keep = keep;
	fl->dp = dp;
	pthread_mutex_init(&fl->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&fl->more, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (!(fl->rb = ring_buffer__new(fd, on_event, fl, NULL))) {
		rc = errno;
		pthread_cond_destroy(&fl->more);
		pthread_mutex_destroy(&fl->lock);
		free(fl->ring);
		free(fl);
		errno = rc;
		return NULL;
	}
	if ((rc = pthread_create(&fl->thread, NULL, reader, fl)) != 0) {
		ring_buffer__free(fl->rb);
		pthread_cond_destroy(&fl->more);
		pthread_mutex_destroy(&fl->lock);
		free(fl->ring);
		free(fl);
		errno = rc;
		return NULL;
	}
	return fl;
}

void flowlog_stop(struct flowlog *fl)
{
	if (!fl)
		return;
	atomic_store(&fl->stop, true);
	pthread_join(fl->thread, NULL);
	if (fl->listeners && datapath_flows_listen(fl->dp, false) < 0)
		fl->listeners = 0;	/* (the programs keep reporting forwards: nobody reads them) */
	ring_buffer__free(fl->rb);
	pthread_cond_destroy(&fl->more);
	pthread_mutex_destroy(&fl->lock);
	free(fl->ring);
	free(fl);
}

int flowlog_listen(struct flowlog *fl, bool on)
{
	int rc = 0;

	pthread_mutex_lock(&fl->lock);
	if (on && fl->listeners++ == 0)
		rc = datapath_flows_listen(fl->dp, true);
	else if (!on && fl->listeners && --fl->listeners == 0)
		rc = datapath_flows_listen(fl->dp, false);
	pthread_mutex_unlock(&fl->lock);
	return rc;
}

unsigned flowlog_listeners(struct flowlog *fl)
{
	unsigned n;

	pthread_mutex_lock(&fl->lock);
	n = fl->listeners;
	pthread_mutex_unlock(&fl->lock);
	return n;
}

size_t flowlog_since(struct flowlog *fl, uint64_t after, struct weft_flow *out, size_t max, uint64_t *last)
{
	size_t n = 0;
	uint64_t first;

	pthread_mutex_lock(&fl->lock);
	first = fl->next > fl->keep ? fl->next - fl->keep + 1 : 1;
	if (after + 1 > first)
		first = after + 1;
	*last = after;
	for (uint64_t s = first; s <= fl->next && n < max; s++) {
		out[n++] = fl->ring[s % fl->keep];
		*last = s;
	}
	pthread_mutex_unlock(&fl->lock);
	return n;
}

int flowlog_wait(struct flowlog *fl, uint64_t after, unsigned ms)
{
	struct timespec until;
	int more;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fl->lock);
	while (fl->next <= after && pthread_cond_timedwait(&fl->more, &fl->lock, &until) == 0)
		;
	more = fl->next > after;
	pthread_mutex_unlock(&fl->lock);
	return more;
}

uint64_t flowlog_first(struct flowlog *fl)
{
	uint64_t first;

	pthread_mutex_lock(&fl->lock);
	first = fl->next > fl->keep ? fl->next - fl->keep + 1 : 1;
	pthread_mutex_unlock(&fl->lock);
	return first;
}

void flowlog_counts(struct flowlog *fl, uint64_t counts[WEFT_FLOW_SAMPLE + 1])
{
	pthread_mutex_lock(&fl->lock);
	memcpy(counts, fl->counts, sizeof(fl->counts));
	pthread_mutex_unlock(&fl->lock);
}
