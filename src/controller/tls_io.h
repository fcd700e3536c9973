/*
 * tls_io.h — the socket under one HTTPS connection's GnuTLS session: what
 * GnuTLS reads from and writes to in place of its own recv and sendmsg,
 * so that a request costs one recv and a response one sendmsg, as they do
 * on a plain HTTP connection.
 *
 * MHD runs the session; tls_io_attach, called when MHD has set the
 * connection up and before the handshake, puts these functions under it:
 *
 *  - reads ahead: GnuTLS reads a record in two calls, its 5-byte header
 *    and then the rest.  Below it one recv takes what has arrived (up to
 *    TLS_IO_READ_AHEAD bytes: a whole request, usually) and the calls are
 *    served from that.
 *  - joins a response's head to its body: MHD hands GnuTLS a response's
 *    headers and its body in two calls (on a plain connection it writes
 *    both with one sendmsg), so they are two records.  After
 *    tls_io_join_next the next record written is held and goes out in one
 *    sendmsg with the record after it.
 *
 * Invariants
 *  1. Bytes reach the socket in the order GnuTLS wrote them: held bytes
 *     always go before anything written after them.
 *  2. At most one record is held, and only on request (tls_io_join_next):
 *     the API asks only for a response whose head MHD sends with its body
 *     right after it (a body in one buffer, not to a HEAD request).  Any
 *     later write, and tls_io_flush, sends it.
 *  3. A read says EAGAIN only when nothing is buffered and the socket had
 *     nothing: MHD's epoll is edge-triggered and it reads until EAGAIN, so
 *     bytes read ahead are never left waiting for an event that will not
 *     come.
 *
 * Ownership and threads: tls_io_attach allocates; tls_io_free after MHD is
 * done with the session (its NOTIFY_CLOSED comes after gnutls_deinit) and
 * accepts NULL.  One connection is served by one MHD thread at a time,
 * and so is its tls_io.
 */
#ifndef WEFT_CONTROLLER_TLS_IO_H
#define WEFT_CONTROLLER_TLS_IO_H

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>

#define TLS_IO_READ_AHEAD 4096	/* bytes one recv takes below a session */
#define TLS_IO_HOLD_MAX 1024	/* a record larger than this is written at once, never held */

struct tls_io;

/* Read and write session's records on the connected socket fd through a
 * new tls_io.  NULL (errno ENOMEM): the session keeps its own transport. */
struct tls_io *tls_io_attach(gnutls_session_t session, int fd);
void tls_io_free(struct tls_io *io);

/* Hold the next record written, to send it with the one after it. */
void tls_io_join_next(struct tls_io *io);
/* Send a held record now, if any (the next write would): 0, or -errno
 * (-EAGAIN: the socket is full; it stays held and goes first next time). */
int tls_io_flush(struct tls_io *io);
/* Bytes held (for tests and assertions). */
size_t tls_io_held(const struct tls_io *io);

#endif
