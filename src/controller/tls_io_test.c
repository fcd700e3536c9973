/*
 * tls_io_test.c — the socket under a server's TLS session: a GnuTLS server
 * on tls_io (with pki.c's certificate, as the API serves it) and a client
 * on GnuTLS's own transport, over TCP on loopback, both non-blocking as
 * MHD's are.  Records are read ahead (one recv for several), a joined head and
 * body arrive together, and a randomized run with a small socket buffer
 * checks that what the client reads is exactly what the server wrote, in
 * order, through partial writes, held records and large reads.
 */
#include "controller/pki.h"
#include "controller/tls_io.h"
#include "controller/tls_pair.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* The client's next record, as a string ("" when none has arrived). */
static const char *client_read(struct pair *p)
{
	static char buf[256];
	ssize_t n = gnutls_record_recv(p->cli, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = 0;
	return buf;
}

TEST(tls_io_reads_ahead)
{
	struct pair p;
	char buf[64], peek;
	ssize_t n;

	CHECK(pair_open(&p, 0) == 0);
	CHECK_EQ(gnutls_record_send(p.cli, "one", 3), 3);
	CHECK_EQ(gnutls_record_send(p.cli, "two", 3), 3);
	CHECK_EQ(gnutls_record_send(p.cli, "three", 5), 5);
	n = gnutls_record_recv(p.srv, buf, sizeof(buf));
	CHECK_EQ(n, 3);
	CHECK(memcmp(buf, "one", 3) == 0);
	/* one recv took all three records: the socket is empty now */
	CHECK_EQ(recv(p.sfd, &peek, 1, MSG_PEEK | MSG_DONTWAIT), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(gnutls_record_recv(p.srv, buf, sizeof(buf)), 3);
	CHECK(memcmp(buf, "two", 3) == 0);
	CHECK_EQ(gnutls_record_recv(p.srv, buf, sizeof(buf)), 5);
	CHECK(memcmp(buf, "three", 5) == 0);
	CHECK_EQ(gnutls_record_recv(p.srv, buf, sizeof(buf)), GNUTLS_E_AGAIN);
	pair_close(&p);
}

TEST(tls_io_joins_head_and_body)
{
	struct pair p;

	CHECK(pair_open(&p, 0) == 0);
	tls_io_join_next(p.io);
	CHECK_EQ(gnutls_record_send(p.srv, "HEAD", 4), 4);
	CHECK(tls_io_held(p.io) > 0);
	CHECK(!readable(p.cfd));		/* held, not written */
	CHECK_EQ(gnutls_record_send(p.srv, "BODY", 4), 4);
	CHECK_EQ(tls_io_held(p.io), 0);
	CHECK(readable(p.cfd));
	CHECK_STR(client_read(&p), "HEAD");
	CHECK_STR(client_read(&p), "BODY");

	/* only the next record is held */
	tls_io_join_next(p.io);
	CHECK_EQ(gnutls_record_send(p.srv, "a", 1), 1);
	CHECK_EQ(gnutls_record_send(p.srv, "b", 1), 1);
	CHECK_EQ(gnutls_record_send(p.srv, "c", 1), 1);
	CHECK_STR(client_read(&p), "a");
	CHECK_STR(client_read(&p), "b");
	CHECK_STR(client_read(&p), "c");

	/* no body after it (a HEAD request): a flush sends it */
	tls_io_join_next(p.io);
	CHECK_EQ(gnutls_record_send(p.srv, "alone", 5), 5);
	CHECK(!readable(p.cfd));
	CHECK_EQ(tls_io_flush(p.io), 0);
	CHECK_EQ(tls_io_held(p.io), 0);
	CHECK_STR(client_read(&p), "alone");
	CHECK_EQ(tls_io_flush(p.io), 0);		/* nothing held: nothing to do */

	/* a record too large to hold goes at once */
	{
		static char big[TLS_IO_HOLD_MAX * 2];

		memset(big, 'x', sizeof(big));
		tls_io_join_next(p.io);
		CHECK_EQ(gnutls_record_send(p.srv, big, sizeof(big)), (ssize_t)sizeof(big));
		CHECK_EQ(tls_io_held(p.io), 0);
		CHECK(readable(p.cfd));
	}
	pair_close(&p);
}

/* Randomized: the server writes records of 1..10,000 bytes (some joined to
 * the next) into a small socket buffer while the client reads a little at
 * a time; what the client gets must be the server's bytes in order. */
TEST(tls_io_keeps_order_when_the_socket_fills)
{
	enum { TOTAL = 1 << 18, MAXREC = 10000 };
	unsigned char *sent = malloc(TOTAL), *got = malloc(TOTAL + 16384);
	size_t nsent = 0, ngot = 0, pending = 0;
	uint64_t seed = test_seed();
	struct pair p;
	int stalls = 0, fills = 0, holds = 0;

	CHECK(sent && got);
	CHECK(pair_open(&p, 4096) == 0);
	for (size_t i = 0; i < TOTAL; i++)
		sent[i] = (unsigned char)(i * 131 + (i >> 8));
	srand((unsigned)seed);
	while (ngot < TOTAL) {
		/* server: the pending record again (GnuTLS's rule after EAGAIN), or a new one */
		if (nsent < TOTAL && rand() % 3) {
			ssize_t w;

			if (!pending) {
				int size = rand() % 20;

				/* mostly small (the socket frees up a record at a time) */
				pending = 1 + (size_t)rand() % (size < 14 ? 150 : size < 19 ? 600 : MAXREC);
				if (pending > TOTAL - nsent)
					pending = TOTAL - nsent;
				if (rand() % 2)
					tls_io_join_next(p.io);
			}
			w = gnutls_record_send(p.srv, sent + nsent, pending);
			holds += tls_io_held(p.io) > 0;
			fills += w == GNUTLS_E_AGAIN;
			if (w > 0) {
				nsent += (size_t)w;
				pending -= (size_t)w;
			} else if (w != GNUTLS_E_AGAIN) {
				test_fail(__FILE__, __LINE__, "seed %llu: gnutls_record_send: %s",
					  (unsigned long long)seed, gnutls_strerror((int)w));
				break;
			}
		}
		if (nsent == TOTAL && !pending)
			(void)tls_io_flush(p.io);	/* a last record may be held */
		/* client: now and then a few short reads, so the socket is full most of the time */
		size_t checked = ngot;

		for (int r = rand() % 2 ? -1 : rand() % 4; r >= 0; r--) {
			ssize_t n = gnutls_record_recv(p.cli, got + ngot, 1 + (size_t)rand() % 300);

			if (n == GNUTLS_E_AGAIN)
				break;
			if (n <= 0) {
				test_fail(__FILE__, __LINE__, "seed %llu: gnutls_record_recv: %s",
					  (unsigned long long)seed, gnutls_strerror((int)n));
				goto out;
			}
			ngot += (size_t)n;
		}
		if (ngot > nsent || memcmp(got + checked, sent + checked, ngot - checked) != 0) {
			test_fail(__FILE__, __LINE__, "seed %llu: the client read bytes the server did not write "
				  "there (%zu read, %zu written)", (unsigned long long)seed, ngot, nsent);
			break;
		}
		if (++stalls > 10000000) {
			test_fail(__FILE__, __LINE__, "seed %llu: stuck at %zu of %zu bytes (%zu held)",
				  (unsigned long long)seed, ngot, nsent, tls_io_held(p.io));
			break;
		}
	}
	/* the run went through what it is for */
	if (!test_failed() && (fills == 0 || holds == 0))
		test_fail(__FILE__, __LINE__, "seed %llu: the socket filled %d times, records were held %d times",
			  (unsigned long long)seed, fills, holds);
out:
	pair_close(&p);
	free(sent);
	free(got);
}
