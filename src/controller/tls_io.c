/*
 * tls_io.c — the socket under one HTTPS connection's GnuTLS session (see
 * tls_io.h for why and the invariants).
 *
 * GnuTLS calls three functions of ours with the tls_io as its transport
 * pointer:
 *
 *   pull          serve from in[]; when it is empty, one recv refills it
 *                 (or, for a read as large as in[], goes straight into
 *                 GnuTLS's buffer)
 *   pull_timeout  what GnuTLS's own does (poll the socket), but true at
 *                 once while in[] holds bytes
 *   push          records to write, as an iovec:
 *
 *        hold set, record fits held[] ──► copy it to held[], clear hold,
 *                                          say "written"
 *        otherwise ──► one sendmsg of held[] (if any) and the records;
 *                      what the socket did not take of held[] stays there
 *                      (invariant 1), and GnuTLS is told how much of its
 *                      own bytes went (EAGAIN for none: it keeps the rest
 *                      and MHD waits until the socket is writable)
 *
 * errno is what GnuTLS reads after a -1 (its default errno function).
 */
#include "controller/tls_io.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define PUSH_IOV_MAX 32		/* GnuTLS queues at most this many records (MAX_QUEUE) */

struct tls_io {
	int fd;
	bool hold;			/* hold the next record (tls_io_join_next) */
	size_t in_off, in_len;		/* in[in_off, in_len) not yet handed to GnuTLS */
	size_t held_len;		/* held[0, held_len) not yet written */
	unsigned char in[TLS_IO_READ_AHEAD];
	unsigned char held[TLS_IO_HOLD_MAX];
};

static ssize_t pull(gnutls_transport_ptr_t ptr, void *data, size_t n)
{
	struct tls_io *io = ptr;
	size_t have = io->in_len - io->in_off;

	if (have == 0) {
		ssize_t got;

		if (n >= sizeof(io->in))
			return recv(io->fd, data, n, 0);
		got = recv(io->fd, io->in, sizeof(io->in), 0);
		if (got <= 0)
			return got;
		io->in_off = 0;
		io->in_len = (size_t)got;
		have = (size_t)got;
	}
	if (n > have)
		n = have;
	memcpy(data, io->in + io->in_off, n);
	io->in_off += n;
	return (ssize_t)n;
}

static int pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
	struct tls_io *io = ptr;
	struct pollfd pfd = { .fd = io->fd, .events = POLLIN };
	int r;

	if (io->in_off < io->in_len)
		return 1;
	do
		r = poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : ms > INT_MAX ? INT_MAX : (int)ms);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Drop the first n held bytes (the socket took them). */
static void held_consume(struct tls_io *io, size_t n)
{
	memmove(io->held, io->held + n, io->held_len - n);
	io->held_len -= n;
}

static ssize_t send_iov(int fd, struct iovec *iov, int n)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)n };

	return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

int tls_io_flush(struct tls_io *io)
{
	struct iovec v;
	ssize_t w;

	if (!io || io->held_len == 0)
		return 0;
	v = (struct iovec){ .iov_base = io->held, .iov_len = io->held_len };
	w = send_iov(io->fd, &v, 1);
	if (w < 0)
		return -errno;
	held_consume(io, (size_t)w);
	return io->held_len ? -EAGAIN : 0;
}

static ssize_t push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
	struct tls_io *io = ptr;
	struct iovec v[1 + PUSH_IOV_MAX];
	size_t total = 0;
	ssize_t w;
	int n = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (io->hold && iovcnt <= PUSH_IOV_MAX && total <= sizeof(io->held) - io->held_len) {
		io->hold = false;
		for (int i = 0; i < iovcnt; i++) {
			memcpy(io->held + io->held_len, iov[i].iov_base, iov[i].iov_len);
			io->held_len += iov[i].iov_len;
		}
		return (ssize_t)total;
	}
	io->hold = false;
	if (io->held_len && iovcnt > PUSH_IOV_MAX) {
		/* cannot happen with GnuTLS's queue; keep the order anyway */
		int e = tls_io_flush(io);

		if (e) {
			errno = -e;
			return -1;
		}
	}
	if (io->held_len)
		v[n++] = (struct iovec){ .iov_base = io->held, .iov_len = io->held_len };
	for (int i = 0; i < iovcnt && n < 1 + PUSH_IOV_MAX; i++)
		v[n++] = (struct iovec){ .iov_base = iov[i].iov_base, .iov_len = iov[i].iov_len };
	w = send_iov(io->fd, v, n);
	if (w < 0 || io->held_len == 0)
		return w;
	if ((size_t)w <= io->held_len) {
		/* none of GnuTLS's bytes went: it keeps them, MHD waits for the socket */
		held_consume(io, (size_t)w);
		errno = EAGAIN;
		return -1;
	}
	w -= (ssize_t)io->held_len;
	io->held_len = 0;
	return w;
}

struct tls_io *tls_io_attach(gnutls_session_t session, int fd)
{
	struct tls_io *io = malloc(sizeof(*io));

	if (!io) {
		errno = ENOMEM;
		return NULL;
	}
	io->fd = fd;
	io->hold = false;
	io->in_off = io->in_len = 0;
	io->held_len = 0;
	gnutls_transport_set_ptr2(session, io, io);
	gnutls_transport_set_pull_function(session, pull);
	gnutls_transport_set_pull_timeout_function(session, pull_timeout);
	gnutls_transport_set_vec_push_function(session, push);
	return io;
}

void tls_io_free(struct tls_io *io)
{
	free(io);
}

void tls_io_join_next(struct tls_io *io)
{
	if (io)
		io->hold = true;
}

size_t tls_io_held(const struct tls_io *io)
{
	return io ? io->held_len : 0;
}
