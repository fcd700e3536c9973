/*
 * watch_sender.h — the threads that write watch streams which MHD keeps
 * suspended ("parked"), so that an event reaches a thousand watchers with
 * a thousand sends and a wake-up per thread, not a thousand wake-ups.
 *
 * MHD serves a watch response until its reader first has nothing to
 * send.  Then the API suspends the connection and parks it here with the
 * TLS session (or socket) MHD was writing: MHD does not touch a suspended
 * connection, and from then on a sender thread is its only writer.  A
 * wake (watch_sender_wake, from the hub's wake-up) queues the stream on
 * its thread; watch_sender_kick, after the caller's locks are let go,
 * wakes each thread that was given work (one eventfd write each); the
 * thread asks the API what to send (fill) and writes it as HTTP/1.1
 * chunks, each in one TLS record.  A stream leaves when fill says it
 * ends, when its client goes away, or when its socket has stayed full for
 * the stall limit: the thread takes it out of its epoll and calls
 * release(ctx, failed), with which the API hands it back to MHD to end
 * the response (failed: close the connection).
 *
 *   watch_sender_park ──► PARKED ──(wake; kick)──► thread: fill, write ──► PARKED
 *                            ▲                          │ socket full
 *                            │                          ▼
 *                            └──────(EPOLLOUT)─────── BLOCKED
 *   fill says end, client gone (EPOLLRDHUP), BLOCKED past the stall
 *   limit ──► release(ctx, failed): gone from here
 *   watch_sender_stop (threads joined) ──► release(ctx, failed), on the
 *   stopping thread, for every stream left
 *
 * Threads and locks: park and wake may be called under the caller's
 * locks (each takes only its thread's own mutex, innermost); kick takes
 * none and makes system calls, so it is called after the caller's locks
 * are let go.  fill and release run on a sender thread (release also on
 * the thread of watch_sender_stop) with none of this module's locks held:
 * they may take the caller's.
 *
 * Ownership: watch_sender_park returns the stream's handle, valid until
 * its release returns; release is the last call about it.  The caller
 * keeps ctx, the session and the socket alive until then.
 */
#ifndef WEFT_CONTROLLER_WATCH_SENDER_H
#define WEFT_CONTROLLER_WATCH_SENDER_H

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What fill returns when the stream ends cleanly. */
#define WATCH_SENDER_END ((ssize_t)-1)
/* Payload bytes of one chunk: with its framing it fits one TLS record. */
#define WATCH_SENDER_CHUNK_MAX (16384 - 16)

struct watch_sender;
struct sender_stream;

struct watch_sender_ops {
	/* Up to max bytes for stream ctx into buf: their count, 0 (nothing
	 * now: the stream waits for its next wake), WATCH_SENDER_END, or
	 * another negative number: the stream fails (released as failed). */
	ssize_t (*fill)(void *ctx, char *buf, size_t max);
	/* The stream has left the sender (failed: its connection must close). */
	void (*release)(void *ctx, bool failed);
};

/* threads sender threads; a stream whose socket stays full stall_seconds
 * is released as failed.  NULL with errno set. */
struct watch_sender *watch_sender_new(unsigned threads, unsigned stall_seconds, const struct watch_sender_ops *ops);
/* Join the threads, then release every stream on the caller's thread,
 * with no fill and no write: as failed when bytes of a chunk are still
 * out (blocked), its client went away or it stalled; else cleanly.  Time
 * bounded whatever the clients do: a join and a release per stream.
 * Parks are refused from the call on. */
void watch_sender_stop(struct watch_sender *s);
/* After watch_sender_stop; accepts NULL. */
void watch_sender_free(struct watch_sender *s);

/* Park the stream ctx written through session (NULL: plain HTTP, straight
 * to fd): its handle, or NULL with errno set (the sender is stopping, or
 * no memory) — then nothing is parked. */
struct sender_stream *watch_sender_park(struct watch_sender *s, void *ctx, gnutls_session_t session, int fd);
/* The stream may have something to send: queue it on its thread. */
void watch_sender_wake(struct sender_stream *st);
/* Wake every thread that was queued work since the last kick. */
void watch_sender_kick(struct watch_sender *s);
/* Streams parked now, and how many of them wait for a full socket. */
void watch_sender_count(struct watch_sender *s, size_t *parked, size_t *blocked);

#endif
