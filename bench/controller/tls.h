/*
 * tls.h — the controller benchmark's TLS client (GnuTLS).  Included by
 * controller_bench.c only: every bench/<dir>/<name>.c is a program of its
 * own, so a part of one is a header.
 *
 * A connection is a socket and, when the controller serves HTTPS (its
 * default), a client session on it that verifies the controller's
 * certificate against DIR/pki/ca.crt and the address 127.0.0.1, as any
 * client of the API must.  The handshake is blocking; the socket may be
 * made non-blocking afterwards (the watchers): tls_recv then says EAGAIN
 * as recv does, and tls_pending says when bytes are held above the socket
 * (decrypted in GnuTLS, or read ahead below it) that epoll cannot see.  A
 * NULL session is a plain socket.
 *
 * GnuTLS reads a record with two recv calls (its 5-byte header, then the
 * rest); below it sits a read-ahead buffer, so that one recv takes what
 * has arrived, as Go's crypto/tls (kubectl, client-go) reads.
 */
#ifndef WEFT_BENCH_TLS_H
#define WEFT_BENCH_TLS_H

#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tls_reader {
	int fd;
	size_t off, len;
	unsigned char buf[17 * 1024];	/* a whole record and then some */
};

static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t n)
{
	struct tls_reader *r = ptr;

	if (r->off == r->len) {
		ssize_t got = recv(r->fd, r->buf, sizeof(r->buf), 0);

		if (got <= 0)
			return got;	/* errno is recv's: GnuTLS reads it (gnutls_transport_set_errno_function not needed) */
		r->off = 0;
		r->len = (size_t)got;
	}
	if (n > r->len - r->off)
		n = r->len - r->off;
	memcpy(data, r->buf + r->off, n);
	r->off += n;
	return (ssize_t)n;
}

/* Credentials trusting ca_file only; NULL when it cannot be read (yet). */
static gnutls_certificate_credentials_t tls_trust(const char *ca_file)
{
	gnutls_certificate_credentials_t cred;

	if (access(ca_file, R_OK) || gnutls_certificate_allocate_credentials(&cred) < 0)
		return NULL;
	if (gnutls_certificate_set_x509_trust_file(cred, ca_file, GNUTLS_X509_FMT_PEM) <= 0) {
		gnutls_certificate_free_credentials(cred);
		return NULL;
	}
	return cred;
}

static void tls_end(gnutls_session_t *s)
{
	gnutls_transport_ptr_t r, send_ptr;

	if (!*s)
		return;
	gnutls_transport_get_ptr2(*s, &r, &send_ptr);
	gnutls_deinit(*s);
	free(r);
	*s = NULL;
}

/* A verified client session on the connected socket fd: 0, or -EPROTO
 * with *why set (GnuTLS's words). */
static int tls_start(int fd, gnutls_certificate_credentials_t cred, gnutls_session_t *out, const char **why)
{
	gnutls_session_t s;
	int e;

	*out = NULL;
	if ((e = gnutls_init(&s, GNUTLS_CLIENT)) < 0) {
		*why = gnutls_strerror(e);
		return -EPROTO;
	}
	if ((e = gnutls_set_default_priority(s)) < 0 || (e = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred)) < 0) {
		*why = gnutls_strerror(e);
		gnutls_deinit(s);
		return -EPROTO;
	}
	gnutls_session_set_verify_cert(s, "127.0.0.1", 0);
	{
		struct tls_reader *r = calloc(1, sizeof(*r));

		if (!r) {
			*why = "out of memory";
			gnutls_deinit(s);
			return -EPROTO;
		}
		r->fd = fd;
		gnutls_transport_set_ptr2(s, r, (gnutls_transport_ptr_t)(intptr_t)fd);
		gnutls_transport_set_pull_function(s, tls_pull);
	}
	do
		e = gnutls_handshake(s);
	while (e < 0 && !gnutls_error_is_fatal(e) && e != GNUTLS_E_AGAIN);
	if (e < 0) {
		*why = gnutls_strerror(e);
		tls_end(&s);
		return -EPROTO;
	}
	*out = s;
	return 0;
}

/* recv()'s contract: bytes, 0 at the end, or -1 with errno (EAGAIN, EINTR, EPROTO). */
static ssize_t tls_recv(int fd, gnutls_session_t s, void *buf, size_t n)
{
	ssize_t r;

	if (!s)
		return recv(fd, buf, n, 0);
	r = gnutls_record_recv(s, buf, n);
	if (r >= 0)
		return r;
	if (r == GNUTLS_E_AGAIN)
		errno = EAGAIN;
	else if (r == GNUTLS_E_INTERRUPTED)
		errno = EINTR;
	else if (r == GNUTLS_E_PREMATURE_TERMINATION)
		return 0;	/* the server closed without close_notify: an end all the same */
	else
		errno = EPROTO;
	return -1;
}

/* send()'s contract, as tls_recv. */
static ssize_t tls_send(int fd, gnutls_session_t s, const void *buf, size_t n)
{
	ssize_t w;

	if (!s)
		return send(fd, buf, n, MSG_NOSIGNAL);
	w = gnutls_record_send(s, buf, n);
	if (w >= 0)
		return w;
	errno = w == GNUTLS_E_AGAIN ? EAGAIN : w == GNUTLS_E_INTERRUPTED ? EINTR : EPIPE;
	return -1;
}

static bool tls_pending(gnutls_session_t s)
{
	struct tls_reader *r;
	gnutls_transport_ptr_t send_ptr;

	if (!s)
		return false;
	gnutls_transport_get_ptr2(s, (gnutls_transport_ptr_t *)&r, &send_ptr);
	return gnutls_record_check_pending(s) > 0 || r->off < r->len;
}

#endif
