/*
 * flows_relay.h — the cluster's flows in one stream: the controller reads
 * every node's (the agents' GET /v1/flows, src/agent/flowserve.h) and
 * hands the lines on, as they come, to one client of
 * GET /apis/network.weft.io/v1/flows (docs/trace.md, "Flows").
 *
 * The relay is the agents' one client: it presents the certificate the
 * controller's PKI made for it (pki.h: CommonName weft-flows-relay,
 * signed by the cluster CA), and trusts each agent by the pin of its key
 * that the agent published on its Node (annotation weft.io/flows), which
 * only that node's credential and the admin may write.
 *
 * Each line is handed on with its "node" set to the node it was read from:
 * a node's credential speaks for that node only.  One stream is one
 * request: a thread a node reads it (an httpc stream; FLOWS_RELAY_STACK
 * bytes of stack each, so that a stream of FLOWS_RELAY_NODES_MAX nodes
 * costs tens of MB, not GB), and a ticker thread wakes the client every
 * HEARTBEAT seconds, so that a client gone away is noticed at the next
 * write.  The lines wait in a buffer of FLOWS_RELAY_BUFFER bytes; a line
 * that finds it full is counted and said as {"node": N, "lost": K} once
 * there is room.  A node that cannot be read is said as
 * {"node": N, "error": "..."}, and the others go on.
 *
 * Following, a node whose stream broke (its agent restarted, the
 * connection was lost) is read again: the relay says
 * {"node": N, "error": "...", "retryInSeconds": S}, waits S (1, 2, 4, then
 * 5 s), asks lookup where the node serves now (a restarted agent has a
 * new key, so a new pin), and reads from the sequence number after the
 * last line it handed on; from 0 when the pin changed (a new agent, a new
 * log).  Connected again, it says {"node": N, "resumed": true,
 * "restarted": BOOL}.  At most HANDSHAKES_MAX connections of the relay
 * are being set up at once (flows_relay.c): the others wait their turn,
 * so that a stream of thousands of nodes does not time its own TLS
 * handshakes out.
 *
 * struct flows_relay is the controller's, for all streams: the relay's
 * identity, the lookup, and a count of the node threads, so that
 * flows_relay_destroy can wait until no thread can call lookup any more.
 *
 * Threads: flows_stream_read is MHD's reader (one thread at a time); the
 * node threads and the ticker call the wake function, under the stream's
 * lock, only while the reader said it waits (flows_stream_read returned 0
 * and the caller suspended the connection within the same call): so a
 * wake always finds the connection suspended.
 *
 * Ownership: flows_stream_open copies targets and query; the stream lives
 * until flows_stream_close (the client's side) and the last of its
 * threads have let go of it.
 */
#ifndef WEFT_FLOWS_RELAY_H
#define WEFT_FLOWS_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "lib/x509.h"

#define FLOWS_PATH "/apis/network.weft.io/v1/flows"
#define FLOWS_ANNOTATION "weft.io/flows"	/* the agent's AGENT_ANN_FLOWS */
#define FLOWS_RELAY_BUFFER (1u << 20)
#define FLOWS_RELAY_NODES_MAX 5000		/* nodes one stream reads (Kubernetes' largest cluster) */
#define FLOWS_RELAY_STACK (256u << 10)		/* a node thread's stack */

struct flows_target {
	char node[254];
	char endpoint[128];		/* "https://IP:PORT" */
	char pin[X509_PIN_MAX];
};

struct flows_query {
	bool follow;
	char verdict[16];		/* "", "dropped", "forwarded" */
	char ip[16];			/* "" or an IPv4 address */
};

/* The nodes to read, from the stored Nodes (objs: a JSON array of Node
 * objects): those with a well-formed flows annotation, only `only` when
 * it is not NULL.  *skipped counts the nodes without one (or with a bad
 * one).  0, or -ENOMEM; -E2BIG past FLOWS_RELAY_NODES_MAX. */
int flows_targets(const json_t *objs, const char *only, struct flows_target **out, size_t *n, size_t *skipped);

/* The target of one stored Node object (borrowed) into *t: 0, or -ENOENT
 * when it has no name or no well-formed flows annotation. */
int flows_target_of(const json_t *node, struct flows_target *t);

/* Where node serves its flows now, from its stored Node: 0 with *out,
 * -ENOENT when it serves none (no node, no annotation), or -errno.
 * Called from a stream's node thread, with no lock of the relay held. */
typedef int (*flows_lookup_fn)(void *arg, const char *node, struct flows_target *out);

struct flows_relay;

/* The relay, with its client certificate and key (pki.h; the paths are
 * copied) and lookup; NULL with errno set. */
struct flows_relay *flows_relay_create(const char *cert_file, const char *key_file, flows_lookup_fn lookup,
				       void *lookup_arg);
/* Wait until every stream's threads have ended, then free r: call
 * after every stream was closed (the server closed its connections).
 * Accepts NULL. */
void flows_relay_destroy(struct flows_relay *r);

struct flows_stream;

/* wake(arg): the reader's connection has data (or its end) to send now */
typedef void (*flows_wake_fn)(void *arg);

/* A stream over the n targets; NULL with errno set. */
struct flows_stream *flows_stream_open(struct flows_relay *relay, const struct flows_target *t, size_t n,
				       const struct flows_query *q, flows_wake_fn wake, void *wake_arg);

/* Up to max bytes of lines into buf: their count; or, with nothing to
 * send now, 0 after suspend(arg) was called under the stream's lock (the
 * caller's connection waits for wake); -1 when the stream has ended (every
 * node's response is over, and all was read). */
ssize_t flows_stream_read(struct flows_stream *s, char *buf, size_t max, void (*suspend)(void *arg), void *arg);

/* The client is gone: every node's read is cancelled; the stream is
 * freed by the last of its threads. */
void flows_stream_close(struct flows_stream *s);

#endif
