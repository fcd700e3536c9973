/*
 * watch_sender_test.c — parked streams written by the sender threads,
 * over real TCP on loopback, in plain HTTP and through a TLS session on
 * tls_io as the API has them.  A feed plays the API's fill: a byte stream
 * handed out in random pieces.  The client reads the chunked body,
 * unframes it and checks it is exactly the feed's bytes, in order, while
 * small socket buffers and a client that stops reading block the stream.
 * Then the ways a stream leaves: its fill ends it, its client goes away,
 * its socket stays full past the stall limit, the sender stops.  And a
 * wake for a stream later in the batch its thread is running does not
 * cut the rest of that batch off.
 */
#include "controller/tls_pair.h"
#include "controller/watch_sender.h"
#include "test.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FEED_MAX (4u << 20)

struct feed {
	pthread_mutex_t mu;
	unsigned char *data;	/* data[0, made) is the stream; fill hands out from taken */
	size_t made, taken;
	uint64_t rng;
	bool end;		/* after the data: WATCH_SENDER_END */
	int released;
	bool failed;
};

static ssize_t feed_fill(void *ctx, char *buf, size_t max)
{
	struct feed *f = ctx;
	ssize_t n;

	pthread_mutex_lock(&f->mu);
	if (f->made == f->taken) {
		n = f->end ? WATCH_SENDER_END : 0;
	} else {
		size_t piece = 1 + test_rnd(&f->rng, (uint32_t)max);
		size_t k = f->made - f->taken < piece ? f->made - f->taken : piece;

		memcpy(buf, f->data + f->taken, k);
		f->taken += k;
		n = (ssize_t)k;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void feed_release(void *ctx, bool failed)
{
	struct feed *f = ctx;

	pthread_mutex_lock(&f->mu);
	f->released++;
	f->failed = failed;
	pthread_mutex_unlock(&f->mu);
}

static const struct watch_sender_ops ops = { .fill = feed_fill, .release = feed_release };

static void feed_init(struct feed *f, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->data = malloc(FEED_MAX);
	f->rng = seed | 1;
	for (size_t i = 0; f->data && i < FEED_MAX; i++)
		f->data[i] = (unsigned char)test_rnd(&f->rng, 256);
}

static void feed_add(struct feed *f, size_t n)
{
	pthread_mutex_lock(&f->mu);
	f->made = f->made + n > FEED_MAX ? FEED_MAX : f->made + n;
	pthread_mutex_unlock(&f->mu);
}

static void feed_state(struct feed *f, int *released, bool *failed)
{
	pthread_mutex_lock(&f->mu);
	*released = f->released;
	*failed = f->failed;
	pthread_mutex_unlock(&f->mu);
}

/* The client: reads the chunked body and unframes it into got. */
struct client {
	int fd;
	gnutls_session_t tls;	/* NULL: plain */
	enum { SIZE, DATA, DATA_END } state;
	char line[32];
	size_t line_len, left;
	unsigned char *got;
	size_t got_len;
	bool bad;		/* a framing error */
	bool eof;
};

static void unframe(struct client *c, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n && !c->bad;) {
		if (c->state == SIZE) {
			if (c->line_len + 1 >= sizeof(c->line)) {
				c->bad = true;
				break;
			}
			c->line[c->line_len++] = (char)p[i++];
			if (c->line_len >= 2 && c->line[c->line_len - 2] == '\r' && c->line[c->line_len - 1] == '\n') {
				char *end;

				c->line[c->line_len - 2] = 0;
				c->left = strtoul(c->line, &end, 16);
				c->bad = *end || c->left == 0 || c->left > WATCH_SENDER_CHUNK_MAX;
				c->line_len = 0;
				c->state = DATA;
			}
		} else if (c->state == DATA) {
			size_t k = n - i < c->left ? n - i : c->left;

			if (c->got_len + k > FEED_MAX) {
				c->bad = true;
				break;
			}
			memcpy(c->got + c->got_len, p + i, k);
			c->got_len += k;
			c->left -= k;
			i += k;
			if (!c->left) {
				c->state = DATA_END;
				c->line_len = 0;
			}
		} else {
			c->line[c->line_len++] = (char)p[i++];
			if (c->line_len == 2) {
				c->bad = memcmp(c->line, "\r\n", 2) != 0;
				c->line_len = 0;
				c->state = SIZE;
			}
		}
	}
}

/* Read what has arrived, up to budget bytes. */
static void client_read_some(struct client *c, size_t budget)
{
	unsigned char buf[4096];

	while (budget > 0 && !c->eof && !c->bad) {
		size_t want = budget < sizeof(buf) ? budget : sizeof(buf);
		ssize_t n = c->tls ? gnutls_record_recv(c->tls, buf, want) : recv(c->fd, buf, want, MSG_DONTWAIT);

		if (n == 0)
			c->eof = true;
		if (n <= 0)
			break;
		unframe(c, buf, (size_t)n);
		budget -= (size_t)n;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read until the client has n bytes (or 20 s pass): true when it has. */
static bool client_wait(struct client *c, size_t n)
{
	double until = now_s() + 20;

	while (c->got_len < n && !c->bad && !c->eof && now_s() < until) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

		if (!c->tls || !gnutls_record_check_pending(c->tls))
			(void)poll(&pfd, 1, 50);
		client_read_some(c, SIZE_MAX);
	}
	return c->got_len >= n;
}

/* Poll (20 s at most) until the sender has want blocked streams. */
static bool wait_blocked(struct watch_sender *s, size_t want)
{
	double until = now_s() + 20;
	size_t parked, blocked;

	do {
		watch_sender_count(s, &parked, &blocked);
		if (blocked == want)
			return true;
		(void)poll(NULL, 0, 5);
	} while (now_s() < until);
	return false;
}

static bool wait_released(struct feed *f, int want)
{
	double until = now_s() + 20;
	int released;
	bool failed;

	do {
		feed_state(f, &released, &failed);
		if (released >= want)
			return released == want;
		(void)poll(NULL, 0, 5);
	} while (now_s() < until);
	return false;
}

/* Small socket buffers, so that the stream blocks soon.  Not much below
 * 64 KiB on the client: a receive window under loopback's MSS stalls TCP
 * itself (the sender waits for a window an MSS wide). */
static void shrink(int sfd, int cfd)
{
	int snd = 8192, rcv = 65536;

	(void)setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
	(void)setsockopt(cfd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
}

/* Bursts of the feed, a client that reads a random amount after each
 * (and sometimes nothing until the stream has blocked): it gets exactly
 * the feed's bytes in order. */
static void stream_in_order(bool tls)
{
	uint64_t seed = test_seed(), rng = seed | 1;
	struct watch_sender *s = watch_sender_new(2, 60, &ops);
	struct client c = { .fd = -1 };
	struct sender_stream *st;
	struct pair p = { .sfd = -1, .cfd = -1 };
	int sv[2] = { -1, -1 }, blocks = 0;
	struct feed f;

	feed_init(&f, seed);
	c.got = malloc(FEED_MAX);
	CHECK(s && f.data && c.got);
	if (tls) {
		CHECK(pair_open(&p, 0) == 0);
		sv[0] = p.sfd;
		sv[1] = p.cfd;
		shrink(sv[0], sv[1]);
		c.tls = p.cli;
	} else {
		CHECK(tcp_pair(sv) == 0);
		shrink(sv[0], sv[1]);
	}
	c.fd = sv[1];
	st = s ? watch_sender_park(s, &f, tls ? p.srv : NULL, sv[0]) : NULL;
	CHECK(st != NULL);
	for (int round = 0; st && round < 60 && !test_failed(); round++) {
		feed_add(&f, 1 + test_rnd(&rng, 200000));
		watch_sender_wake(st);
		watch_sender_kick(s);
		if (test_rnd(&rng, 3) == 0 && f.made - c.got_len > 1000000) {
			/* no reading: the socket fills and the stream blocks */
			if (!wait_blocked(s, 1))
				test_fail(__FILE__, __LINE__, "seed %llu: the stream never blocked", (unsigned long long)seed);
			blocks++;
		}
		client_read_some(&c, test_rnd(&rng, 300000));
	}
	if (!client_wait(&c, f.made) || c.bad || c.got_len != f.made || memcmp(c.got, f.data, f.made) != 0)
	{
		size_t parked, blocked;

		watch_sender_count(s, &parked, &blocked);
		test_fail(__FILE__, __LINE__, "seed %llu: the client got %zu bytes%s of %zu (fill gave %zu; "
			  "%zu parked, %zu blocked)", (unsigned long long)seed, c.got_len,
			  c.bad ? " (bad framing)" : "", f.made, f.taken, parked, blocked);
	}
	if (!test_failed() && blocks == 0)
		test_fail(__FILE__, __LINE__, "seed %llu: no round blocked the stream", (unsigned long long)seed);
	/* the feed ends: the stream is released, not failed */
	pthread_mutex_lock(&f.mu);
	f.end = true;
	pthread_mutex_unlock(&f.mu);
	watch_sender_wake(st);
	watch_sender_kick(s);
	CHECK(wait_released(&f, 1));
	CHECK(!f.failed);
	watch_sender_stop(s);
	watch_sender_free(s);
	if (tls)
		pair_close(&p);
	else {
		close(sv[0]);
		close(sv[1]);
	}
	free(c.got);
	free(f.data);
}

TEST(watch_sender_plain_stream_in_order)
{
	stream_in_order(false);
}

TEST(watch_sender_tls_stream_in_order)
{
	stream_in_order(true);
}

TEST(watch_sender_releases_a_stream_whose_client_left)
{
	struct watch_sender *s = watch_sender_new(1, 60, &ops);
	int sv[2] = { -1, -1 };
	struct feed f;

	feed_init(&f, 7);
	CHECK(s && tcp_pair(sv) == 0);
	CHECK(watch_sender_park(s, &f, NULL, sv[0]) != NULL);
	close(sv[1]);	/* EPOLLRDHUP: released as failed, with nothing to send */
	CHECK(wait_released(&f, 1));
	CHECK(f.failed);
	watch_sender_stop(s);
	watch_sender_free(s);
	close(sv[0]);
	free(f.data);
}

TEST(watch_sender_releases_a_stalled_stream)
{
	struct watch_sender *s = watch_sender_new(1, 1, &ops);
	struct sender_stream *st;
	int sv[2] = { -1, -1 };
	double start;
	struct feed f;

	feed_init(&f, 11);
	CHECK(s && tcp_pair(sv) == 0);
	shrink(sv[0], sv[1]);
	st = watch_sender_park(s, &f, NULL, sv[0]);
	CHECK(st != NULL);
	feed_add(&f, FEED_MAX);
	start = now_s();
	watch_sender_wake(st);
	watch_sender_kick(s);
	/* the client never reads: blocked, then released as failed after the 1 s limit */
	CHECK(wait_released(&f, 1));
	CHECK(f.failed);
	CHECK(now_s() - start >= 1.0);
	watch_sender_stop(s);
	watch_sender_free(s);
	close(sv[0]);
	close(sv[1]);
	free(f.data);
}

TEST(watch_sender_stop_releases_every_stream)
{
	struct watch_sender *s = watch_sender_new(2, 60, &ops);
	int sv[3][2];
	struct feed f[3];
	size_t parked, blocked;

	CHECK(s != NULL);
	for (int i = 0; i < 3; i++) {
		feed_init(&f[i], (uint64_t)i + 1);
		CHECK(tcp_pair(sv[i]) == 0);
		CHECK(watch_sender_park(s, &f[i], NULL, sv[i][0]) != NULL);
	}
	watch_sender_count(s, &parked, &blocked);
	CHECK_EQ(parked, 3);
	watch_sender_stop(s);
	/* stopped: every stream released (cleanly: none was blocked), parks refused */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(f[i].released, 1);
		CHECK(!f[i].failed);
	}
	CHECK(watch_sender_park(s, &f[0], NULL, sv[0][0]) == NULL);
	watch_sender_free(s);
	for (int i = 0; i < 3; i++) {
		close(sv[i][0]);
		close(sv[i][1]);
		free(f[i].data);
	}
}

/* A stop with a stream whose client never reads (blocked, well inside its
 * stall limit) and a stream with nothing to send: both released at once,
 * the blocked one as failed (part of a chunk is still out), the other
 * cleanly — the stop waits for neither client. */
TEST(watch_sender_stop_cuts_a_blocked_stream_at_once)
{
	struct watch_sender *s = watch_sender_new(1, 60, &ops);
	struct sender_stream *st;
	int full[2] = { -1, -1 }, idle[2] = { -1, -1 };
	struct feed f[2];
	double start;

	feed_init(&f[0], 21);
	feed_init(&f[1], 22);
	CHECK(s && tcp_pair(full) == 0 && tcp_pair(idle) == 0);
	shrink(full[0], full[1]);
	st = watch_sender_park(s, &f[0], NULL, full[0]);
	CHECK(st != NULL);
	CHECK(watch_sender_park(s, &f[1], NULL, idle[0]) != NULL);
	feed_add(&f[0], FEED_MAX);
	watch_sender_wake(st);
	watch_sender_kick(s);
	CHECK(wait_blocked(s, 1));
	start = now_s();
	watch_sender_stop(s);
	CHECK(now_s() - start < 1.0);
	CHECK_EQ(f[0].released, 1);
	CHECK(f[0].failed);
	CHECK_EQ(f[1].released, 1);
	CHECK(!f[1].failed);
	watch_sender_free(s);
	for (int i = 0; i < 2; i++)
		free(f[i].data);
	close(full[0]);
	close(full[1]);
	close(idle[0]);
	close(idle[1]);
}

/* A wake that comes while the stream's thread runs a batch, for a stream
 * later in that batch (the API wakes streams from its own threads at any
 * time): the streams after it in the batch still run.  Before the batch
 * had links of its own, queueing the stream again cut the batch there,
 * and the streams after it — whose wakes were spent — waited for a wake
 * that never came (a node's Pods watch stalled half a minute). */
struct waker {
	pthread_mutex_t mu;
	struct sender_stream *wake_on_first;	/* woken from the first fill of stream 0 */
	int fills[3];
};

static struct waker waker = { .mu = PTHREAD_MUTEX_INITIALIZER };

static ssize_t waker_fill(void *ctx, char *buf, size_t max)
{
	int i = (int)(intptr_t)ctx;
	struct sender_stream *st = NULL;

	(void)buf;
	(void)max;
	pthread_mutex_lock(&waker.mu);
	if (waker.fills[i]++ == 0 && i == 0)
		st = waker.wake_on_first;
	pthread_mutex_unlock(&waker.mu);
	if (st)
		watch_sender_wake(st);	/* as the API would, from another thread */
	return 0;	/* nothing to send: the stream waits for its next wake */
}

static void waker_release(void *ctx, bool failed)
{
	(void)ctx;
	(void)failed;
}

TEST(watch_sender_a_wake_inside_a_batch_keeps_the_rest_of_it)
{
	static const struct watch_sender_ops wops = { .fill = waker_fill, .release = waker_release };
	struct watch_sender *s = watch_sender_new(1, 60, &wops);
	struct sender_stream *st[3];
	int sv[3][2];
	double until = now_s() + 20;
	int third = 0;

	CHECK(s != NULL);
	for (int i = 0; i < 3; i++) {
		CHECK(tcp_pair(sv[i]) == 0);
		st[i] = watch_sender_park(s, (void *)(intptr_t)i, NULL, sv[i][0]);
		CHECK(st[i] != NULL);
	}
	pthread_mutex_lock(&waker.mu);
	waker.wake_on_first = st[1];
	pthread_mutex_unlock(&waker.mu);
	for (int i = 0; i < 3; i++)
		watch_sender_wake(st[i]);	/* one batch: 0, 1, 2 */
	watch_sender_kick(s);
	do {
		pthread_mutex_lock(&waker.mu);
		third = waker.fills[2];
		pthread_mutex_unlock(&waker.mu);
		if (!third)
			(void)poll(NULL, 0, 5);
	} while (!third && now_s() < until);
	CHECK(third >= 1);
	CHECK(waker.fills[1] >= 1);
	watch_sender_stop(s);
	watch_sender_free(s);
	for (int i = 0; i < 3; i++) {
		close(sv[i][0]);
		close(sv[i][1]);
	}
}
