/*
 * watch_sender.c — the threads that write parked watch streams (see
 * watch_sender.h for why, the states and the ownership).
 *
 * Each thread has an epoll set holding its streams' sockets (EPOLLRDHUP:
 * the client went away; EPOLLOUT, edge-triggered: a full socket has room
 * again) and an eventfd that watch_sender_kick writes, and a queue of
 * streams to run.  A turn of its loop: wait (not at all while the queue
 * holds something), turn events into queued streams, take the whole
 * queue, run each.  Running a stream: a blocked one first writes what it
 * kept; then fill and write, a chunk at a time, until fill has nothing
 * (RUN_CHUNKS at most, then it goes to the back of the queue so that one
 * busy stream does not hold up the others).
 *
 * Stopping: the threads are joined first (each leaves its loop, and its
 * batch, at the next stream), then the caller's thread releases every
 * stream still parked, without a fill or a write: one release each, a
 * blocked one (bytes of a chunk still out) as failed.  So a stop costs a
 * release per stream whatever the clients do — nothing waits for a
 * client to read.
 *
 * A chunk is "<hex size>\r\n<payload>\r\n", built in the thread's buffer
 * around the payload fill put there: one TLS record, one sendmsg.  When
 * the socket takes only part of it, the rest is copied to the stream
 * (out) and the stream is blocked: nothing more is filled until that is
 * written.  GnuTLS, on EAGAIN, keeps the record it was writing and wants
 * the next call to be gnutls_record_send(NULL, 0), which answers for that
 * record's bytes (in_flight).
 *
 * Invariants
 *  1. A stream is in its thread's queue at most once (queued, under mu),
 *     and in its thread's list of streams (all, under mu) from park until
 *     its release has returned.  The batch a thread takes from its queue
 *     is linked apart (bnext): a wake may queue a stream of the batch
 *     again before its turn, and the batch goes on past it.
 *  2. Its socket is in the thread's epoll set from park until just before
 *     release: an event never names a stream that is gone.
 *  3. Bytes go out in the order fill gave them, and every chunk whole: a
 *     blocked stream writes what it kept before it fills again, and a
 *     stream that fails is released as failed (its connection closes), so
 *     a client never sees half a chunk followed by anything else.
 *  4. Only the stream's own thread writes its session or socket, and
 *     never after calling release; once the threads are joined
 *     (watch_sender_stop), nothing writes them.
 */
#include "controller/watch_sender.h"
#include "lib/monotime.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define RUN_CHUNKS 8		/* chunks a stream sends in one run before the others' turn */
#define EVENTS 64
#define CHUNK_HEAD 8		/* room before the payload for "<hex>\r\n" */

struct sender_thread;

struct sender_stream {
	struct sender_thread *t;
	void *ctx;
	gnutls_session_t session;	/* NULL: plain HTTP on fd */
	int fd;
	struct sender_stream *qnext;		/* in t->queue (mu) */
	struct sender_stream *bnext;		/* in the batch the thread runs (thread) */
	struct sender_stream *prev, *next;	/* in t->all (mu) */
	bool queued;		/* mu */
	bool gone;		/* the client went away (thread) */
	bool stalled;		/* blocked past the stall limit (mu) */
	bool blocked;		/* out holds bytes the socket did not take (mu for the stall scan) */
	bool in_flight;		/* GnuTLS holds a record of out[off..] (thread) */
	int64_t since;		/* blocked since (monotime_ms) */
	char *out;		/* blocked: out[off, len) still to write */
	size_t off, len;
};

struct sender_thread {
	struct watch_sender *s;
	pthread_t tid;
	bool started;
	int ep, efd;
	pthread_mutex_t mu;
	struct sender_stream *qhead, *qtail;	/* mu */
	bool kick_due;				/* mu: the queue became non-empty since the last kick */
	struct sender_stream *all;		/* mu */
	size_t nblocked;			/* mu */
	int64_t last_scan;	/* monotime_ms */
	char buf[CHUNK_HEAD + WATCH_SENDER_CHUNK_MAX + 2];
};

struct watch_sender {
	struct watch_sender_ops ops;
	unsigned stall_seconds;
	unsigned nthreads;
	unsigned next;		/* round robin of parks (atomic) */
	bool stopping;		/* atomic */
	struct sender_thread *threads;
};

/* Queue st on its thread (mu held). */
static void enqueue(struct sender_thread *t, struct sender_stream *st)
{
	if (st->queued)
		return;
	st->queued = true;
	st->qnext = NULL;
	if (t->qtail)
		t->qtail->qnext = st;
	else {
		t->qhead = st;
		t->kick_due = true;
	}
	t->qtail = st;
}

static void dequeue(struct sender_thread *t, struct sender_stream *st)
{
	struct sender_stream **pp, *prev = NULL;

	if (!st->queued)
		return;
	for (pp = &t->qhead; *pp && *pp != st; pp = &(*pp)->qnext)
		prev = *pp;
	if (*pp) {
		*pp = st->qnext;
		if (t->qtail == st)
			t->qtail = prev;
	}
	st->queued = false;
}

void watch_sender_wake(struct sender_stream *st)
{
	struct sender_thread *t = st->t;

	pthread_mutex_lock(&t->mu);
	enqueue(t, st);
	pthread_mutex_unlock(&t->mu);
}

static void signal_thread(struct sender_thread *t)
{
	uint64_t one = 1;

	while (write(t->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void watch_sender_kick(struct watch_sender *s)
{
	for (unsigned i = 0; s && i < s->nthreads; i++) {
		struct sender_thread *t = &s->threads[i];
		bool due;

		pthread_mutex_lock(&t->mu);
		due = t->kick_due;
		t->kick_due = false;
		pthread_mutex_unlock(&t->mu);
		if (due)
			signal_thread(t);
	}
}

void watch_sender_count(struct watch_sender *s, size_t *parked, size_t *blocked)
{
	*parked = *blocked = 0;
	for (unsigned i = 0; s && i < s->nthreads; i++) {
		struct sender_thread *t = &s->threads[i];

		pthread_mutex_lock(&t->mu);
		for (struct sender_stream *st = t->all; st; st = st->next)
			++*parked;
		*blocked += t->nblocked;
		pthread_mutex_unlock(&t->mu);
	}
}

struct sender_stream *watch_sender_park(struct watch_sender *s, void *ctx, gnutls_session_t session, int fd)
{
	struct sender_thread *t = &s->threads[__atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED) % s->nthreads];
	struct sender_stream *st = calloc(1, sizeof(*st));
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLRDHUP | EPOLLET };
	int err = 0;

	if (!st)
		return NULL;
	st->t = t;
	st->ctx = ctx;
	st->session = session;
	st->fd = fd;
	ev.data.ptr = st;
	pthread_mutex_lock(&t->mu);
	if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
		err = ESHUTDOWN;
	else if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		err = errno;
	else {
		st->next = t->all;
		if (t->all)
			t->all->prev = st;
		t->all = st;
	}
	pthread_mutex_unlock(&t->mu);
	if (err) {
		free(st);
		errno = err;
		return NULL;
	}
	return st;
}

/* Write data[0, len): 0 when all of it went, -EAGAIN when the socket is
 * full, another -errno when the connection failed; *done: bytes that went. */
static int drain(struct sender_stream *st, const char *data, size_t len, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t n;

		if (st->session) {
			n = st->in_flight ? gnutls_record_send(st->session, NULL, 0)
					  : gnutls_record_send(st->session, data + *done, len - *done);
			if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
				st->in_flight = true;	/* the same record goes next */
				if (n == GNUTLS_E_AGAIN)
					return -EAGAIN;
				continue;
			}
			st->in_flight = false;
			if (n <= 0)
				return -EPIPE;
		} else {
			n = send(st->fd, data + *done, len - *done, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		*done += (size_t)n;
	}
	return 0;
}

/* Block st with data[0, len) still to write (mu taken here). */
static int keep(struct sender_thread *t, struct sender_stream *st, const char *data, size_t len)
{
	char *out = malloc(len);

	if (!out)
		return -ENOMEM;
	memcpy(out, data, len);
	st->out = out;
	st->off = 0;
	st->len = len;
	pthread_mutex_lock(&t->mu);
	st->blocked = true;
	st->since = monotime_ms();
	t->nblocked++;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* A blocked stream writes what it kept: 0 when it is all out, -EAGAIN,
 * or -errno. */
static int unblock(struct sender_thread *t, struct sender_stream *st)
{
	size_t done;
	int err = drain(st, st->out + st->off, st->len - st->off, &done);

	st->off += done;
	if (err)
		return err;
	free(st->out);
	st->out = NULL;
	pthread_mutex_lock(&t->mu);
	st->blocked = false;
	t->nblocked--;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* st leaves: out of the epoll set, release (after which nothing of its
 * connection is ours), then out of the lists and freed. */
static void release(struct sender_thread *t, struct sender_stream *st, bool failed)
{
	(void)epoll_ctl(t->ep, EPOLL_CTL_DEL, st->fd, NULL);
	t->s->ops.release(st->ctx, failed);
	pthread_mutex_lock(&t->mu);
	dequeue(t, st);	/* a wake may have queued it again before release */
	if (st->prev)
		st->prev->next = st->next;
	else
		t->all = st->next;
	if (st->next)
		st->next->prev = st->prev;
	if (st->blocked)
		t->nblocked--;
	pthread_mutex_unlock(&t->mu);
	free(st->out);
	free(st);
}

/* Frame buf[CHUNK_HEAD, CHUNK_HEAD + n) as a chunk: where it starts. */
static char *frame(char *buf, size_t n, size_t *len)
{
	char head[CHUNK_HEAD + 1];
	int h = snprintf(head, sizeof(head), "%zx\r\n", n);
	char *start = buf + CHUNK_HEAD - h;

	memcpy(start, head, (size_t)h);
	memcpy(buf + CHUNK_HEAD + n, "\r\n", 2);
	*len = (size_t)h + n + 2;
	return start;
}

static void run(struct sender_thread *t, struct sender_stream *st)
{
	bool stalled;
	int err;

	pthread_mutex_lock(&t->mu);
	stalled = st->stalled;
	pthread_mutex_unlock(&t->mu);
	if (st->gone || stalled) {
		release(t, st, true);
		return;
	}
	if (st->blocked && (err = unblock(t, st)) != 0) {
		if (err != -EAGAIN)
			release(t, st, true);
		return;
	}
	for (int i = 0; i < RUN_CHUNKS; i++) {
		ssize_t n = t->s->ops.fill(st->ctx, t->buf + CHUNK_HEAD, WATCH_SENDER_CHUNK_MAX);
		size_t len, done;
		char *chunk;

		if (n == 0)
			return;
		if (n < 0 || (size_t)n > WATCH_SENDER_CHUNK_MAX) {
			release(t, st, n != WATCH_SENDER_END);
			return;
		}
		chunk = frame(t->buf, (size_t)n, &len);
		err = drain(st, chunk, len, &done);
		if (err == -EAGAIN)
			err = keep(t, st, chunk + done, len - done);
		if (err) {
			release(t, st, true);
			return;
		}
		if (st->blocked)
			return;	/* EPOLLOUT brings it back */
	}
	pthread_mutex_lock(&t->mu);
	enqueue(t, st);	/* more may be waiting: after the others */
	pthread_mutex_unlock(&t->mu);
}

/* Streams blocked past the stall limit join the queue (mu held). */
static void sweep(struct sender_thread *t, int64_t now)
{
	for (struct sender_stream *st = t->all; st; st = st->next) {
		if (st->blocked && now - st->since >= (int64_t)t->s->stall_seconds * 1000)
			st->stalled = true;
		if (st->stalled)
			enqueue(t, st);
	}
}

static bool stopping(const struct watch_sender *s)
{
	return __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE);
}

static void *thread_main(void *arg)
{
	struct sender_thread *t = arg;
	struct epoll_event evs[EVENTS];

	while (!stopping(t->s)) {
		struct sender_stream *batch;
		int64_t now;
		int timeout, n;

		pthread_mutex_lock(&t->mu);
		timeout = t->qhead ? 0 : t->nblocked ? 250 : -1;
		pthread_mutex_unlock(&t->mu);
		n = epoll_wait(t->ep, evs, EVENTS, timeout);
		pthread_mutex_lock(&t->mu);
		for (int i = 0; i < n; i++) {
			struct sender_stream *st = evs[i].data.ptr;

			if (!st) {
				uint64_t v;

				(void)!read(t->efd, &v, sizeof(v));
				continue;
			}
			if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				st->gone = true;
			if (st->gone || st->blocked)
				enqueue(t, st);
		}
		now = monotime_ms();
		if (t->nblocked && now - t->last_scan >= 250) {
			t->last_scan = now;
			sweep(t, now);
		}
		/* the batch has links of its own: a stream of it that a wake
		 * queues again before its turn (its qnext rewritten) must not
		 * cut off the streams after it, whose wakes are spent */
		batch = t->qhead;
		for (struct sender_stream *st = batch; st; st = st->qnext) {
			st->queued = false;
			st->bnext = st->qnext;
		}
		t->qhead = t->qtail = NULL;
		pthread_mutex_unlock(&t->mu);
		/* stopping: the rest of the batch is left to watch_sender_stop */
		while (batch && !stopping(t->s)) {
			struct sender_stream *st = batch;

			batch = st->bnext;	/* run may free st or queue it again */
			run(t, st);
		}
	}
	return NULL;
}

struct watch_sender *watch_sender_new(unsigned threads, unsigned stall_seconds, const struct watch_sender_ops *ops)
{
	struct watch_sender *s = calloc(1, sizeof(*s));
	int err = 0;

	if (!s)
		return NULL;
	s->ops = *ops;
	s->stall_seconds = stall_seconds ? stall_seconds : 1;
	s->threads = calloc(threads ? threads : 1, sizeof(*s->threads));
	if (!s->threads) {
		free(s);
		return NULL;
	}
	for (unsigned i = 0; i < (threads ? threads : 1) && !err; i++) {
		struct sender_thread *t = &s->threads[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

		t->s = s;
		t->ep = epoll_create1(EPOLL_CLOEXEC);
		t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		pthread_mutex_init(&t->mu, NULL);
		s->nthreads = i + 1;
		if (t->ep < 0 || t->efd < 0 || epoll_ctl(t->ep, EPOLL_CTL_ADD, t->efd, &ev) < 0)
			err = errno;
		else if ((err = pthread_create(&t->tid, NULL, thread_main, t)) == 0)
			t->started = true;
	}
	if (err) {
		watch_sender_stop(s);
		watch_sender_free(s);
		errno = err;
		return NULL;
	}
	return s;
}

void watch_sender_stop(struct watch_sender *s)
{
	if (!s)
		return;
	/* parks check the flag under their thread's mu: none lands after the
	 * lists below are read */
	__atomic_store_n(&s->stopping, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct sender_thread *t = &s->threads[i];

		if (t->started) {
			signal_thread(t);
			pthread_join(t->tid, NULL);
			t->started = false;
		}
	}
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct sender_thread *t = &s->threads[i];

		pthread_mutex_lock(&t->mu);
		while (t->all) {
			struct sender_stream *st = t->all;
			bool cut = st->blocked || st->in_flight || st->gone || st->stalled;

			pthread_mutex_unlock(&t->mu);
			release(t, st, cut);	/* takes mu, unlists st */
			pthread_mutex_lock(&t->mu);
		}
		pthread_mutex_unlock(&t->mu);
	}
}

void watch_sender_free(struct watch_sender *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct sender_thread *t = &s->threads[i];

		if (t->ep >= 0)
			close(t->ep);
		if (t->efd >= 0)
			close(t->efd);
		pthread_mutex_destroy(&t->mu);
	}
	free(s->threads);
	free(s);
}
