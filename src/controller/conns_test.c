/*
 * conns_test.c — the connection table: the limit derived from the
 * descriptor limit, the total and per-client caps at accept (with watch
 * streams exempted and dropped reservations given back, by descriptor
 * and by age), header and idle deadlines on real
 * sockets, and a randomized run against a naive model (an array of
 * connections counted by a linear scan).
 */
#include "controller/conns.h"
#include "test.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct conns_limits lim = {
	.max_total = 1000, .max_per_client = 3, .header_timeout_ms = 1000, .idle_timeout_ms = 5000,
};

TEST(conns_limit_from_nofile)
{
	CHECK_EQ(conns_limit_for(1024), 1024 - CONNS_FD_RESERVE);
	CHECK_EQ(conns_limit_for(20000), 20000 - CONNS_FD_RESERVE);
	CHECK_EQ(conns_limit_for(1048576), CONNS_MAX);		/* memory bounds it, not descriptors */
	CHECK_EQ(conns_limit_for(CONNS_MAX + CONNS_FD_RESERVE), CONNS_MAX);
	CHECK_EQ(conns_limit_for(CONNS_FD_RESERVE + 17), 17);
	CHECK_EQ(conns_limit_for(CONNS_FD_RESERVE + 16), 0);	/* too few to run with */
	CHECK_EQ(conns_limit_for(64), 0);
	CHECK_EQ(conns_limit_for(0), 0);
	CHECK_EQ(conns_limit_for(UINT64_MAX), CONNS_MAX);	/* RLIM_INFINITY */
}

TEST(conns_cap_per_client)
{
	struct conns *t = conns_new(&lim);
	struct conn *c[4];
	struct conns_stats s;

	CHECK(t != NULL);
	for (int i = 0; i < 3; i++) {
		CHECK(conns_reserve(t, 1, 10 + i, 0));
		c[i] = conns_open(t, 1, 10 + i, 0);
		CHECK(c[i] != NULL);
	}
	CHECK(!conns_reserve(t, 1, 13, 0));	/* the fourth from the same address */
	CHECK(conns_reserve(t, 2, 13, 0));	/* another address is not affected */
	CHECK_EQ(conns_client_count(t, 2), 1);	/* reserved: counted before it is set up */
	c[3] = conns_open(t, 2, 13, 0);
	CHECK_EQ(conns_client_count(t, 2), 1);	/* ... and once */
	conns_close(t, c[0]);
	CHECK(conns_reserve(t, 1, 10, 0));	/* room again */
	c[0] = conns_open(t, 1, 10, 0);
	conns_stats(t, &s);
	CHECK_EQ(s.refused, 1);
	CHECK_EQ(s.over_limit, 0);
	CHECK_EQ(s.open, 4);
	CHECK_EQ(conns_client_count(t, 1), 3);
	CHECK_EQ(conns_client_count(t, 2), 1);
	for (int i = 0; i < 4; i++)
		conns_close(t, c[i]);
	conns_stats(t, &s);
	CHECK_EQ(s.open, 0);
	CHECK_EQ(conns_client_count(t, 1), 0);
	conns_free(t);
	conns_free(NULL);
}

TEST(conns_watch_streams_do_not_count)
{
	struct conns *t = conns_new(&lim);
	struct conn *c[5];

	for (int i = 0; i < 3; i++) {
		CHECK(conns_reserve(t, 1, 20 + i, 0));
		c[i] = conns_open(t, 1, 20 + i, 0);
		conns_head_done(t, c[i]);
		conns_set_counted(t, c[i], false);	/* each became a watch */
		conns_set_counted(t, c[i], false);	/* twice is once */
	}
	CHECK_EQ(conns_client_count(t, 1), 0);
	CHECK(conns_reserve(t, 1, 23, 0));
	c[3] = conns_open(t, 1, 23, 0);
	CHECK(conns_reserve(t, 1, 24, 0));
	c[4] = conns_open(t, 1, 24, 0);
	/* two watches end and their connections stay: counted again, over the cap */
	conns_set_counted(t, c[0], true);
	conns_set_counted(t, c[1], true);
	CHECK_EQ(conns_client_count(t, 1), 4);
	CHECK(!conns_reserve(t, 1, 25, 0));
	conns_close(t, c[0]);
	conns_close(t, c[1]);
	CHECK(conns_reserve(t, 1, 20, 0));	/* 2 counted + this reservation */
	CHECK_EQ(conns_client_count(t, 1), 3);
	c[0] = conns_open(t, 1, 20, 0);
	for (int i = 0; i < 5; i++)
		if (i != 1)
			conns_close(t, c[i]);
	CHECK_EQ(conns_client_count(t, 1), 0);
	conns_free(t);
}

TEST(conns_dropped_reservation_is_given_back)
{
	struct conns *t = conns_new(&lim);
	struct conn *c;
	struct conns_stats s;

	/* accepted as descriptor 30 and dropped before it was set up; 30 is
	 * accepted again, from another client: the first is given back */
	CHECK(conns_reserve(t, 7, 30, 0));
	CHECK_EQ(conns_client_count(t, 7), 1);
	CHECK(conns_reserve(t, 8, 30, 0));
	CHECK_EQ(conns_client_count(t, 7), 0);
	c = conns_open(t, 8, 30, 0);
	CHECK_EQ(conns_client_count(t, 8), 1);
	conns_close(t, c);
	CHECK_EQ(conns_client_count(t, 8), 0);
	/* one never set up is given back after CONNS_RESERVE_MS */
	CHECK(conns_reserve(t, 9, 31, 1000));
	CHECK_EQ(conns_expire(t, 1000 + CONNS_RESERVE_MS - 1), 0);
	CHECK_EQ(conns_client_count(t, 9), 1);
	(void)conns_expire(t, 1000 + CONNS_RESERVE_MS);
	CHECK_EQ(conns_client_count(t, 9), 0);
	/* opening without a reservation still counts */
	c = conns_open(t, 9, 32, 0);
	CHECK_EQ(conns_client_count(t, 9), 1);
	conns_close(t, c);
	CHECK_EQ(conns_client_count(t, 9), 0);
	conns_stats(t, &s);
	CHECK_EQ(s.open, 0);
	conns_free(t);
}

TEST(conns_total_limit_at_accept)
{
	struct conns_limits small = lim;
	struct conns *t;
	struct conn *c[4];
	struct conns_stats s;

	small.max_total = 4;
	small.max_per_client = 100;
	t = conns_new(&small);
	/* reservations count in the total before anything is set up: a burst
	 * of accepts cannot pass the limit while the server catches up */
	for (int i = 0; i < 4; i++)
		CHECK(conns_reserve(t, (uint32_t)i, 40 + i, 0));
	CHECK(!conns_reserve(t, 9, 44, 0));
	for (int i = 0; i < 4; i++)
		c[i] = conns_open(t, (uint32_t)i, 40 + i, 0);
	CHECK(!conns_reserve(t, 9, 44, 0));		/* open ones as much */
	conns_close(t, c[0]);
	CHECK(conns_reserve(t, 9, 44, 0));
	conns_stats(t, &s);
	CHECK_EQ(s.over_limit, 2);
	CHECK_EQ(s.refused, 0);
	c[0] = conns_open(t, 9, 44, 0);
	for (int i = 0; i < 4; i++)
		conns_close(t, c[i]);
	conns_free(t);
}

/* Has the server's end of the pair been shut down?  The client's end reads EOF. */
static int peer_sees_eof(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	return poll(&p, 1, 0) == 1 && recv(fd, &b, 1, MSG_DONTWAIT) == 0;
}

TEST(conns_header_and_idle_deadlines)
{
	struct conns *t = conns_new(&lim);
	int a[2], b[2], d[2];
	struct conn *ca, *cb, *cd;
	struct conns_stats s;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, d), 0);
	ca = conns_open(t, 1, a[0], 0);	/* never sends a head */
	cb = conns_open(t, 1, b[0], 500);	/* sends one at 800 */
	cd = conns_open(t, 2, d[0], 600);
	CHECK_EQ(conns_expire(t, 999), 0);
	conns_head_done(t, cb);
	CHECK_EQ(conns_expire(t, 1000), 1);	/* a: its head was due at 1000 */
	CHECK(peer_sees_eof(a[1]));
	CHECK(!peer_sees_eof(b[1]));
	CHECK(!peer_sees_eof(d[1]));
	conns_head_done(t, ca);			/* too late: it stays shut */
	conns_response_done(t, ca, 1000);
	conns_response_done(t, cb, 2000);	/* b: idle from 2000, next head due at 7000 */
	conns_head_done(t, cd);
	conns_response_done(t, cd, 2500);
	CHECK_EQ(conns_expire(t, 6999), 0);
	CHECK_EQ(conns_expire(t, 7000), 1);
	CHECK(peer_sees_eof(b[1]));
	CHECK(!peer_sees_eof(d[1]));
	CHECK_EQ(conns_expire(t, 100000), 1);	/* d */
	conns_stats(t, &s);
	CHECK_EQ(s.header_timeouts, 1);
	CHECK_EQ(s.idle_timeouts, 2);
	CHECK_EQ(s.open, 3);			/* shut down, not closed: the server closes them */
	conns_close(t, ca);
	conns_close(t, cb);
	conns_close(t, cd);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
		close(d[i]);
	}
	conns_free(t);
}

/* The naive model: every connection with its client, counted flag and
 * deadline; counts by linear scan. */
struct model_conn {
	struct conn *c;
	uint32_t client;
	bool counted, busy, shut;
	uint64_t deadline;
};

static uint64_t state;

static uint64_t rnd(void)
{
	state = state * 6364136223846793005ull + 1442695040888963407ull;
	return state >> 11;
}

static unsigned model_count(const struct model_conn *m, size_t n, uint32_t client)
{
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += m[i].client == client && m[i].counted;
	return k;
}

TEST(conns_random_against_model)
{
	static struct model_conn m[512];
	struct conns_limits l = { .max_total = 512, .max_per_client = 5, .header_timeout_ms = 100,
				  .idle_timeout_ms = 300 };
	struct conns *t = conns_new(&l);
	uint64_t now = 0, refused = 0, timeouts = 0;
	size_t n = 0;
	struct conns_stats s;

	state = test_seed();
	for (int step = 0; step < 20000 && !test_failed(); step++) {
		uint32_t client = (uint32_t)(rnd() % 6);
		size_t i = n ? rnd() % n : 0;

		now += rnd() % 7;
		switch (rnd() % 6) {
		case 0:	/* accept */
			if (n == 512)
				break;
			/* descriptors no test socket has (expiry shuts them down) */
			if (conns_reserve(t, client, 100000 + step, now)) {
				CHECK(model_count(m, n, client) < l.max_per_client);
				m[n] = (struct model_conn){ .client = client, .counted = true,
							    .deadline = now + l.header_timeout_ms };
				m[n].c = conns_open(t, client, 100000 + step, now);
				CHECK(m[n].c != NULL);
				n++;
			} else {
				CHECK(model_count(m, n, client) >= l.max_per_client);
				refused++;
			}
			break;
		case 1:	/* close */
			if (!n)
				break;
			conns_close(t, m[i].c);
			m[i] = m[--n];
			break;
		case 2:	/* a head arrives */
			if (n && !m[i].shut) {
				conns_head_done(t, m[i].c);
				m[i].busy = true;
			}
			break;
		case 3:	/* a response went out */
			if (n && m[i].busy && !m[i].shut) {
				conns_response_done(t, m[i].c, now);
				m[i].busy = false;
				m[i].deadline = now + l.idle_timeout_ms;
			}
			break;
		case 4:	/* a watch starts or ends */
			if (n) {
				m[i].counted = !m[i].counted;
				conns_set_counted(t, m[i].c, m[i].counted);
			}
			break;
		case 5: {	/* the timer */
			size_t due = 0;
			for (size_t k = 0; k < n; k++)
				if (!m[k].busy && !m[k].shut && m[k].deadline <= now) {
					m[k].shut = true;
					due++;
				}
			CHECK_EQ(conns_expire(t, now), due);
			timeouts += due;
			break;
		}
		}
		CHECK_EQ(conns_client_count(t, client), model_count(m, n, client));
	}
	conns_stats(t, &s);
	CHECK(refused > 0 && timeouts > 0);	/* the run reached the cap and the deadlines */
	CHECK_EQ(s.open, n);
	CHECK_EQ(s.refused, refused);
	CHECK_EQ(s.header_timeouts + s.idle_timeouts, timeouts);
	while (n)
		conns_close(t, m[--n].c);
	conns_free(t);
}
