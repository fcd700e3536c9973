/*
 * flows_relay.c — the cluster's flows in one stream (flows_relay.h).
 *
 *   flows_stream_open ──> node thread × n: httpc_stream of the agent's
 *                         /v1/flows, each line -> put() -> buffer, wake;
 *                         following, a stream that broke read again
 *                         (node_run: retry line, wait, lookup, since)
 *                     └─> ticker: every HEARTBEAT_MS an empty line
 *   flows_stream_read (MHD's reader): the buffer, or suspend, or the end
 *   flows_stream_close (the response freed): closed, reads cancelled
 *
 * Invariants
 *  1. s->lock guards the buffer, waiting, running, closed, lost[] and the
 *     handles in nodes[].h (set and cleared by their threads).
 *  2. wake is called only with waiting true, which is then cleared, both
 *     under the lock; the reader sets waiting and suspends under the same
 *     lock, so a wake never finds the connection running.
 *  3. refs counts the node threads, the ticker and the client's side;
 *     the one that takes it to 0 frees the stream.
 *  4. relay->threads counts the node and ticker threads of every stream
 *     (under relay->lock), each until its last touch of its stream;
 *     lookup is called only by a node thread, so once the count is 0
 *     after every stream closed, none will call it again, and every
 *     stream is freed.
 */
#include "controller/flows_relay.h"
#include "lib/httpc.h"
#include "lib/monotime.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEARTBEAT_MS 5000
#define CONNECT_MS 3000
#define LINE_MAX_BYTES (64u << 10)
#define RETRY_MAX_S 5
#define HANDSHAKES_MAX 32	/* connections a relay sets up at once; the others wait their turn */
#define RETRY_RESET_S 30	/* a stream that lasted this long starts the waits over */

struct flows_relay {
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* threads reached 0 */
	size_t threads;			/* node threads of all streams (invariant 4) */
	unsigned handshaking;		/* connections being set up (HANDSHAKES_MAX) */
	pthread_cond_t turn;		/* handshaking fell */
	char *cert_file, *key_file;
	flows_lookup_fn lookup;
	void *lookup_arg;
};

struct node_read {
	struct flows_stream *s;
	struct flows_target t;
	struct httpc *h;		/* while its read runs; httpc_cancel from close */
	uint64_t lost;			/* lines the full buffer refused, not yet said */
	uint64_t seq;			/* the last line's sequence number: where to read on */
	bool lines;			/* this read handed a line on */
	bool handshaking;		/* holds one of relay->handshaking */
	bool resumed, restarted;	/* read again (a new agent): said once connected */
	pthread_t thread;
};

struct flows_stream {
	pthread_mutex_t lock;
	pthread_cond_t tick;		/* the ticker sleeps on it; close wakes it */
	char *buf;
	size_t len, off;
	bool waiting;			/* the reader's connection is suspended */
	bool closed;			/* the client is gone */
	size_t running;			/* node threads whose response goes on */
	unsigned refs;
	flows_wake_fn wake;
	void *wake_arg;
	struct flows_relay *relay;
	struct flows_query q;
	size_t n;
	struct node_read *nodes;
	pthread_t ticker;
};

/* ------------------------------------------------------------- targets */

static bool annotation_target(const char *node, const char *text, struct flows_target *t)
{
	json_t *j = json_loads(text, 0, NULL);
	const char *ep = json_string_value(json_object_get(j, "endpoint"));
	const char *pin = json_string_value(json_object_get(j, "pin"));
	bool ok = ep && pin && strncmp(ep, "https://", 8) == 0 && strlen(ep) < sizeof(t->endpoint) &&
		  strncmp(pin, "sha256//", 8) == 0 && strlen(pin) < sizeof(t->pin) && strlen(node) < sizeof(t->node);

	if (ok) {
		snprintf(t->node, sizeof(t->node), "%s", node);
		snprintf(t->endpoint, sizeof(t->endpoint), "%s", ep);
		snprintf(t->pin, sizeof(t->pin), "%s", pin);
	}
	json_decref(j);
	return ok;
}

int flows_target_of(const json_t *node, struct flows_target *t)
{
	json_t *md = json_object_get(node, "metadata");
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ann = json_string_value(json_object_get(json_object_get(md, "annotations"), FLOWS_ANNOTATION));

	return name && ann && annotation_target(name, ann, t) ? 0 : -ENOENT;
}

int flows_targets(const json_t *objs, const char *only, struct flows_target **out, size_t *n, size_t *skipped)
{
	size_t i, cap = json_array_size(objs);
	json_t *o;

	*out = NULL;
	*n = *skipped = 0;
	if (!cap)
		return 0;
	if (!(*out = calloc(cap, sizeof(**out))))
		return -ENOMEM;
	json_array_foreach(objs, i, o) {
		const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));

		if (!name || (only && strcmp(only, name)))
			continue;
		if (flows_target_of(o, &(*out)[*n]) < 0) {
			(*skipped)++;
			continue;
		}
		if (++*n > FLOWS_RELAY_NODES_MAX) {
			free(*out);
			*out = NULL;
			*n = 0;
			return -E2BIG;
		}
	}
	return 0;
}

/* -------------------------------------------------------------- buffer */

static void unref(struct flows_stream *s)
{
	bool last;

	pthread_mutex_lock(&s->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->tick);
	free(s->nodes);
	free(s->buf);
	free(s);
}

/* caller holds s->lock: the reader waits no more (invariant 2) */
static void wake_locked(struct flows_stream *s)
{
	if (s->waiting && !s->closed) {
		s->waiting = false;
		s->wake(s->wake_arg);
	}
}

/* caller holds s->lock: room for len bytes, the read part moved out */
static bool room(struct flows_stream *s, size_t len)
{
	if (s->off) {
		memmove(s->buf, s->buf + s->off, s->len - s->off);
		s->len -= s->off;
		s->off = 0;
	}
	return FLOWS_RELAY_BUFFER - s->len >= len;
}

/* A JSON line of the relay's own about node r: {"node": ..., then the
 * members of fields (stolen)}; NULL on ENOMEM. */
static char *own_line(const struct node_read *r, json_t *fields)
{
	json_t *o = json_pack("{s:s}", "node", r->t.node);
	char *text = o && fields && !json_object_update(o, fields) ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)
								    : NULL;

	json_decref(o);
	json_decref(fields);
	return text;
}

/* line (len bytes, no newline) of node r into the buffer, after what r
 * lost when there is room for both */
static void put(struct node_read *r, const char *line, size_t len)
{
	struct flows_stream *s = r->s;
	char *lost = NULL;

	pthread_mutex_lock(&s->lock);
	if (r->lost) {
		pthread_mutex_unlock(&s->lock);
		lost = own_line(r, json_pack("{s:I}", "lost", (json_int_t)r->lost));
		pthread_mutex_lock(&s->lock);
	}
	if (!room(s, len + 1 + (lost ? strlen(lost) + 1 : 0))) {
		r->lost++;
	} else {
		if (lost) {
			memcpy(s->buf + s->len, lost, strlen(lost));
			s->len += strlen(lost);
			s->buf[s->len++] = '\n';
			r->lost = 0;
		}
		memcpy(s->buf + s->len, line, len);
		s->len += len;
		s->buf[s->len++] = '\n';
		wake_locked(s);
	}
	pthread_mutex_unlock(&s->lock);
	free(lost);
}

/* --------------------------------------------------------------- nodes */

static bool closed(struct flows_stream *s)
{
	bool c;

	pthread_mutex_lock(&s->lock);
	c = s->closed;
	pthread_mutex_unlock(&s->lock);
	return c;
}

/* A node's line, handed on with its "node" set to the node it came from:
 * a node's credential writes its own flows, never another's.  A line that
 * is no JSON object is dropped. */
static int on_line(const char *line, size_t len, void *arg)
{
	struct node_read *r = arg;
	json_t *o;
	char *text;

	if (closed(r->s))
		return 1;
	o = json_loadb(line, len, 0, NULL);
	if (!json_is_object(o) || json_object_set_new(o, "node", json_string(r->t.node))) {
		json_decref(o);
		return 0;
	}
	if (json_is_integer(json_object_get(o, "seq")) && json_integer_value(json_object_get(o, "seq")) > 0)
		r->seq = (uint64_t)json_integer_value(json_object_get(o, "seq"));
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (text)
		put(r, text, strlen(text));
	free(text);
	r->lines = true;
	return 0;
}

static void say_error(struct node_read *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_error(struct node_read *r, const char *fmt, ...)
{
	char msg[600], *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	line = own_line(r, json_pack("{s:s}", "error", msg));
	if (line)
		put(r, line, strlen(line));
	free(line);
}

/* relay->threads (invariant 4): one more, one fewer */
static void thread_enter(struct flows_relay *relay)
{
	pthread_mutex_lock(&relay->lock);
	relay->threads++;
	pthread_mutex_unlock(&relay->lock);
}

static void thread_leave(struct flows_relay *relay)
{
	pthread_mutex_lock(&relay->lock);
	if (--relay->threads == 0)
		pthread_cond_broadcast(&relay->idle);
	pthread_mutex_unlock(&relay->lock);
}

/* A turn to set up a connection (at most HANDSHAKES_MAX at once, so that
 * a stream of thousands of nodes does not time its own handshakes out):
 * false when the client went while r waited. */
static bool turn_take(struct node_read *r)
{
	struct flows_relay *relay = r->s->relay;
	struct timespec until;

	pthread_mutex_lock(&relay->lock);
	while (relay->handshaking >= HANDSHAKES_MAX) {
		pthread_mutex_unlock(&relay->lock);
		if (closed(r->s))
			return false;
		pthread_mutex_lock(&relay->lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 100 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&relay->turn, &relay->lock, &until);
	}
	relay->handshaking++;
	r->handshaking = true;
	pthread_mutex_unlock(&relay->lock);
	return true;
}

static void turn_give(struct node_read *r)
{
	struct flows_relay *relay = r->s->relay;

	if (!r->handshaking)
		return;
	r->handshaking = false;
	pthread_mutex_lock(&relay->lock);
	relay->handshaking--;
	pthread_cond_signal(&relay->turn);
	pthread_mutex_unlock(&relay->lock);
}

/* httpc's connected (one request a handle: once): r's node is reached,
 * TLS too: the turn given back;
 * a node read again says so now */
static void on_connected(void *arg)
{
	struct node_read *r = arg;

	turn_give(r);
	if (r->resumed) {
		char *back = own_line(r, json_pack("{s:b, s:b}", "resumed", 1, "restarted", r->restarted));

		if (back)
			put(r, back, strlen(back));
		free(back);
		r->resumed = r->restarted = false;
	}
}

/* One read of r's node from r->seq on: 0 when it ended (why says how),
 * -ECANCELED when the client went, or -errno with why. */
static int read_once(struct node_read *r, char *why, size_t len)
{
	struct flows_stream *s = r->s;
	struct httpc_options o = { .server = r->t.endpoint, .pinned_key = r->t.pin,
				   .cert_file = s->relay->cert_file, .key_file = s->relay->key_file,
				   .connect_timeout_ms = CONNECT_MS, .max_body = LINE_MAX_BYTES,
				   .user_agent = "weft-flows-relay", .connected = on_connected, .connected_arg = r };
	struct httpc_response resp = { 0 };
	struct httpc *h = httpc_create(&o, why, len);
	char path[200];
	int rc;

	if (!h)
		return -EINVAL;
	snprintf(path, sizeof(path), "/v1/flows?since=%llu%s%s%s%s%s", (unsigned long long)r->seq,
		 s->q.follow ? "&follow=true" : "", s->q.verdict[0] ? "&verdict=" : "", s->q.verdict,
		 s->q.ip[0] ? "&ip=" : "", s->q.ip);
	pthread_mutex_lock(&s->lock);
	r->h = s->closed ? NULL : h;
	pthread_mutex_unlock(&s->lock);
	if (!r->h) {
		httpc_destroy(h);
		return -ECANCELED;
	}
	r->lines = false;
	if (!turn_take(r)) {
		pthread_mutex_lock(&s->lock);
		r->h = NULL;
		pthread_mutex_unlock(&s->lock);
		httpc_destroy(h);
		return -ECANCELED;
	}
	rc = httpc_stream(h, path, on_line, r, &resp, why, len);
	turn_give(r);	/* (not connected: given back here) */
	pthread_mutex_lock(&s->lock);
	r->h = NULL;
	pthread_mutex_unlock(&s->lock);
	if (rc == 0 && resp.status && (resp.status < 200 || resp.status > 299)) {
		snprintf(why, len, "%s answered HTTP %ld: %.300s", r->t.endpoint, resp.status,
			 resp.body ? resp.body : "");
		rc = -EPROTO;
	} else if (rc == 0) {
		snprintf(why, len, "%s ended the stream", r->t.endpoint);
	}
	httpc_response_free(&resp);
	httpc_destroy(h);
	return rc;
}

/* Wait seconds unless the client goes first: still wanted? */
static bool pause_open(struct flows_stream *s, int seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&s->lock);
	while (!s->closed && pthread_cond_timedwait(&s->tick, &s->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s->lock);
	return !closed(s);
}

/* Following: where r's node serves now.  A new pin is a new agent, with
 * a new log: read it from the start.  A node that serves none (yet: a
 * restarted agent publishes its new pin once it is up) keeps its last. */
static void look_again(struct node_read *r)
{
	struct flows_relay *relay = r->s->relay;
	struct flows_target t;

	if (relay->lookup(relay->lookup_arg, r->t.node, &t) < 0)
		return;
	if (strcmp(t.pin, r->t.pin)) {
		r->seq = 0;
		r->restarted = true;
	}
	snprintf(r->t.endpoint, sizeof(r->t.endpoint), "%s", t.endpoint);
	snprintf(r->t.pin, sizeof(r->t.pin), "%s", t.pin);
}

static void *node_run(void *arg)
{
	struct node_read *r = arg;
	struct flows_stream *s = r->s;
	struct flows_relay *relay = s->relay;
	unsigned attempt = 0;

	for (;;) {
		struct timespec t0, t1;
		char why[512] = "";
		int rc, wait_s;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = read_once(r, why, sizeof(why));
		if (rc == -ECANCELED || closed(s))
			break;
		if (!s->q.follow) {	/* one read: its error, if any, said */
			if (rc < 0)
				say_error(r, "%s", why);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (r->lines || t1.tv_sec - t0.tv_sec >= RETRY_RESET_S)
			attempt = 0;
		wait_s = attempt >= 3 ? RETRY_MAX_S : 1 << attempt;
		attempt++;
		{
			char *line = own_line(r, json_pack("{s:s, s:i}", "error", why, "retryInSeconds", wait_s));

			if (line)
				put(r, line, strlen(line));
			free(line);
		}
		if (!pause_open(s, wait_s))
			break;
		look_again(r);
		r->resumed = true;
	}
	pthread_mutex_lock(&s->lock);
	s->running--;
	if (!s->running)
		pthread_cond_broadcast(&s->tick);	/* the ticker ends with the last node */
	wake_locked(s);		/* the end, or the error, to send */
	pthread_mutex_unlock(&s->lock);
	unref(s);
	thread_leave(relay);
	return NULL;
}

/* An empty line every HEARTBEAT_MS while the reader waits: a client that
 * went away is found at the write, and the stream closed. */
static void *ticker_run(void *arg)
{
	struct flows_stream *s = arg;
	struct flows_relay *relay = s->relay;
	struct timespec until;

	pthread_mutex_lock(&s->lock);
	while (!s->closed && s->running) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += HEARTBEAT_MS / 1000;
		if (pthread_cond_timedwait(&s->tick, &s->lock, &until) == ETIMEDOUT && s->waiting && room(s, 1)) {
			s->buf[s->len++] = '\n';
			wake_locked(s);
		}
	}
	pthread_mutex_unlock(&s->lock);
	unref(s);
	thread_leave(relay);
	return NULL;
}

/* -------------------------------------------------------------- stream */

struct flows_relay *flows_relay_create(const char *cert_file, const char *key_file, flows_lookup_fn lookup,
				       void *lookup_arg)
{
	struct flows_relay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cert_file = strdup(cert_file);
	r->key_file = strdup(key_file);
	if (!r->cert_file || !r->key_file) {
		free(r->cert_file);
		free(r->key_file);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	(void)monotime_cond_init(&r->turn);
	r->lookup = lookup;
	r->lookup_arg = lookup_arg;
	return r;
}

void flows_relay_destroy(struct flows_relay *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	while (r->threads)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->turn);
	free(r->cert_file);
	free(r->key_file);
	free(r);
}

struct flows_stream *flows_stream_open(struct flows_relay *relay, const struct flows_target *t, size_t n,
				       const struct flows_query *q, flows_wake_fn wake, void *wake_arg)
{
	struct flows_stream *s = calloc(1, sizeof(*s));
	pthread_attr_t ta;
	size_t started = 0;

	if (!s)
		return NULL;
	s->buf = malloc(FLOWS_RELAY_BUFFER);
	s->nodes = calloc(n ? n : 1, sizeof(*s->nodes));
	if (!s->buf || !s->nodes) {
		free(s->buf);
		free(s->nodes);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	(void)monotime_cond_init(&s->tick);
	pthread_attr_init(&ta);
	pthread_attr_setstacksize(&ta, FLOWS_RELAY_STACK);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	s->relay = relay;
	s->wake = wake;
	s->wake_arg = wake_arg;
	s->q = *q;
	s->n = n;
	pthread_mutex_lock(&s->lock);
	s->refs = 1;		/* the client's side */
	for (size_t i = 0; i < n; i++) {
		struct node_read *r = &s->nodes[i];

		r->s = s;
		r->t = t[i];
		s->refs++;
		s->running++;
		thread_enter(relay);
		if (pthread_create(&r->thread, &ta, node_run, r)) {
			s->refs--;
			s->running--;
			thread_leave(relay);
			continue;
		}
		started++;
	}
	if (s->running) {
		s->refs++;
		thread_enter(relay);
		if (pthread_create(&s->ticker, &ta, ticker_run, s)) {
			s->refs--;
			thread_leave(relay);
		}
	}
	pthread_attr_destroy(&ta);
	pthread_mutex_unlock(&s->lock);
	if (n && !started) {	/* no thread: nothing will ever come */
		flows_stream_close(s);
		errno = EAGAIN;
		return NULL;
	}
	return s;
}

ssize_t flows_stream_read(struct flows_stream *s, char *buf, size_t max, void (*suspend)(void *arg), void *arg)
{
	ssize_t n;

	pthread_mutex_lock(&s->lock);
	if (s->off < s->len) {
		n = (ssize_t)(s->len - s->off < max ? s->len - s->off : max);
		memcpy(buf, s->buf + s->off, (size_t)n);
		s->off += (size_t)n;
	} else if (!s->running) {
		n = -1;
	} else {
		s->waiting = true;
		suspend(arg);
		n = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

void flows_stream_close(struct flows_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->closed = true;
	s->waiting = false;
	for (size_t i = 0; i < s->n; i++)
		if (s->nodes[i].h)
			httpc_cancel(s->nodes[i].h);
	pthread_cond_broadcast(&s->tick);
	pthread_mutex_unlock(&s->lock);
	unref(s);
}
