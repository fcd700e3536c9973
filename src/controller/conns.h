/*
 * conns.h — the API's connection table: the bounds on connections that
 * keep one client from exhausting the controller's file descriptors or
 * holding connections open without sending requests.
 *
 *  * total: at most max_total connections (set up, or accepted and about
 *    to be: refused at accept beyond that), derived from
 *    RLIMIT_NOFILE by conns_limit_for() so that the store, the log and the
 *    server's own descriptors always have room;
 *  * per client: a client address holds at most max_per_client counted
 *    connections; a new one beyond that is refused at accept (closed at
 *    once, counted).  A watch stream of an authenticated client is not
 *    counted while it streams: a client may follow a thousand watches from
 *    one address, but cannot hold more than the cap of anything else;
 *  * time: a connection must deliver a complete request head within
 *    header_timeout of being accepted, and the next one within
 *    idle_timeout of its last response — whether it sends nothing or
 *    trickles a byte at a time — else it is shut down.
 *
 * A connection's life, with the call that makes each edge:
 *
 *   conns_reserve ──► conns_open ──► OPENING ──conns_head_done──► BUSY
 *   (refused: closed)                   │ header_timeout           │ ▲
 *                                       ▼                          │ │ conns_head_done
 *                                 shut down by           conns_response_done
 *                                 conns_expire                     ▼ │
 *                                       ▲ idle_timeout            IDLE
 *                                       └──────────────────────────┘
 *   any state ──conns_close──► gone (its count is given back)
 *
 * Invariants
 *  1. A client's count is the number of its open connections that are
 *     counted (not exempted by conns_set_counted), plus its reservations
 *     (accepted, not yet opened).  The total is open connections plus
 *     reservations.  A reservation is keyed by its descriptor: one that
 *     the server dropped before opening it is given back when the
 *     descriptor is reserved again, or after CONNS_RESERVE_MS.
 *  2. OPENING and IDLE connections are each in a list in deadline order
 *     (the timeout is the same for the whole list), so conns_expire looks
 *     only at connections that are due.  BUSY ones are in no list: a
 *     request being served, a response or a watch being sent.
 *  3. conns_expire shuts a socket down (shutdown(2), never close) under
 *     the table's lock, and conns_close is called, under the same lock,
 *     before the server closes the descriptor: a descriptor that is shut
 *     down is always still the connection's.
 *
 * Ownership and threads: conns_new/conns_free; every function may be
 * called from any thread (one mutex inside, never held while calling out).
 * A struct conn belongs to the table; it is valid from conns_open until
 * conns_close.
 */
#ifndef WEFT_CONTROLLER_CONNS_H
#define WEFT_CONTROLLER_CONNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Descriptors kept back from RLIMIT_NOFILE for everything but client
 * connections: stdio, the store (two handles: database, WAL and shared
 * memory each, and SQLite's temporary files), the listening socket, the
 * server threads' epoll and wake-up descriptors, one accept in flight per
 * thread.  About 20 are in use; the rest is headroom. */
#define CONNS_FD_RESERVE 128u
/* The most connections whatever the descriptor limit (each costs the
 * server a memory pool and socket buffers). */
#define CONNS_MAX 60000u

struct conns_limits {
	unsigned max_total;		/* the server's connection limit */
	unsigned max_per_client;	/* counted connections of one client address */
	unsigned header_timeout_ms;	/* accept → complete request head */
	unsigned idle_timeout_ms;	/* response sent → next complete request head */
};

struct conns_stats {
	uint64_t open;			/* connections open now */
	uint64_t refused;		/* refused at accept: their client was at its cap */
	uint64_t over_limit;		/* refused at accept: the server held max_total */
	uint64_t header_timeouts;	/* shut down: no complete request head within header_timeout */
	uint64_t idle_timeouts;		/* shut down: no next request within idle_timeout */
};

struct conns;
struct conn;

/* Connections a process can serve with a descriptor limit of nofile:
 * nofile − CONNS_FD_RESERVE, at most CONNS_MAX; 0 when nofile leaves less
 * than 16 (too few to run with). */
unsigned conns_limit_for(uint64_t nofile);

/* A table with these limits (copied); NULL with errno ENOMEM. */
struct conns *conns_new(const struct conns_limits *lim);
/* After the server closed every connection (conns_close); accepts NULL. */
void conns_free(struct conns *t);

/* How long a reservation waits for its conns_open (a server sets a
 * connection up within milliseconds; one that did not, dropped it). */
#define CONNS_RESERVE_MS 10000

/* At accept (socket fd, from client, at now_ms), before the server sets
 * the connection up, on any thread: true reserves a place in the total
 * and in client's count, taken by conns_open of fd; false: the server
 * holds max_total, or the client is at its cap (counted as refused), and
 * the connection is to be closed at once. */
bool conns_reserve(struct conns *t, uint32_t client, int fd, int64_t now_ms);
/* The connection (socket fd, from client) is set up, at now_ms: it takes
 * fd's reservation (or counts without one) and its header deadline
 * starts.  NULL when out of memory (then untracked, uncounted). */
struct conn *conns_open(struct conns *t, uint32_t client, int fd, int64_t now_ms);
/* The server is about to close it (c may be NULL). */
void conns_close(struct conns *t, struct conn *c);

/* A complete request head arrived (c may be NULL). */
void conns_head_done(struct conns *t, struct conn *c);
/* A response went out and the connection stays open for the next request. */
void conns_response_done(struct conns *t, struct conn *c, int64_t now_ms);
/* Count c against its client's cap or not (a watch stream while it
 * streams).  Counting again may put the client over its cap: its new
 * connections are refused until it is back under. */
void conns_set_counted(struct conns *t, struct conn *c, bool counted);

/* Shut down every connection past its deadline at now_ms (invariant 3);
 * the server then sees the socket end and closes it.  Returns how many.
 * Reservations older than CONNS_RESERVE_MS are given back. */
size_t conns_expire(struct conns *t, int64_t now_ms);

void conns_stats(struct conns *t, struct conns_stats *s);
/* How many counted connections client holds (reservations included). */
unsigned conns_client_count(struct conns *t, uint32_t client);

#endif
