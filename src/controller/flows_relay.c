/*
 * flows_relay.c — the cluster's flows in one stream (flows_relay.h).
 *
 *   flows_stream_open ──> node thread × n: httpc_stream of the agent's
 *                         /v1/flows, each line -> put() -> buffer, wake
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
 */
#include "controller/flows_relay.h"
#include "lib/httpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEARTBEAT_MS 5000
#define CONNECT_MS 3000
#define LINE_MAX_BYTES (64u << 10)

struct node_read {
	struct flows_stream *s;
	struct flows_target t;
	struct httpc *h;		/* while its read runs; httpc_cancel from close */
	uint64_t lost;			/* lines the full buffer refused, not yet said */
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
	struct flows_relay_identity id;
	char *cert_file, *key_file;
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
		json_t *md = json_object_get(o, "metadata");
		const char *name = json_string_value(json_object_get(md, "name"));
		const char *ann = json_string_value(json_object_get(json_object_get(md, "annotations"), FLOWS_ANNOTATION));

		if (!name || (only && strcmp(only, name)))
			continue;
		if (!ann || !annotation_target(name, ann, &(*out)[*n])) {
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
	free(s->cert_file);
	free(s->key_file);
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

/* A JSON line of the relay's own about node r: {"node":..., key: value} */
static char *own_line(const struct node_read *r, const char *key, json_t *value)
{
	json_t *o = json_pack("{s:s, s:o}", "node", r->t.node, key, value);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
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
		lost = own_line(r, "lost", json_integer((json_int_t)r->lost));
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

/* A node's line, handed on with its "node" set to the node it came from:
 * a node's credential writes its own flows, never another's.  A line that
 * is no JSON object is dropped. */
static int on_line(const char *line, size_t len, void *arg)
{
	struct node_read *r = arg;
	json_t *o;
	char *text;
	bool closed;

	pthread_mutex_lock(&r->s->lock);
	closed = r->s->closed;
	pthread_mutex_unlock(&r->s->lock);
	if (closed)
		return 1;
	o = json_loadb(line, len, 0, NULL);
	if (!json_is_object(o) || json_object_set_new(o, "node", json_string(r->t.node))) {
		json_decref(o);
		return 0;
	}
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (text)
		put(r, text, strlen(text));
	free(text);
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
	line = own_line(r, "error", json_string(msg));
	if (line)
		put(r, line, strlen(line));
	free(line);
}

static void *node_run(void *arg)
{
	struct node_read *r = arg;
	struct flows_stream *s = r->s;
	struct httpc_options o = { .server = r->t.endpoint, .pinned_key = r->t.pin, .cert_file = s->cert_file,
				   .key_file = s->key_file, .connect_timeout_ms = CONNECT_MS,
				   .max_body = LINE_MAX_BYTES, .user_agent = "weft-flows-relay" };
	struct httpc_response resp = { 0 };
	char path[160], err[512];
	struct httpc *h = httpc_create(&o, err, sizeof(err));
	int rc;

	snprintf(path, sizeof(path), "/v1/flows?since=0%s%s%s%s%s", s->q.follow ? "&follow=true" : "",
		 s->q.verdict[0] ? "&verdict=" : "", s->q.verdict, s->q.ip[0] ? "&ip=" : "", s->q.ip);
	if (!h) {
		say_error(r, "%s", err);
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	r->h = s->closed ? NULL : h;
	pthread_mutex_unlock(&s->lock);
	if (!r->h)
		goto out;
	rc = httpc_stream(h, path, on_line, r, &resp, err, sizeof(err));
	pthread_mutex_lock(&s->lock);
	r->h = NULL;
	pthread_mutex_unlock(&s->lock);
	if (rc < 0 && rc != -ECANCELED)
		say_error(r, "%s", err);
	else if (rc == 0 && resp.status && (resp.status < 200 || resp.status > 299))
		say_error(r, "%s answered HTTP %ld: %.300s", r->t.endpoint, resp.status, resp.body ? resp.body : "");
out:
	httpc_response_free(&resp);
	httpc_destroy(h);
	pthread_mutex_lock(&s->lock);
	s->running--;
	if (!s->running)
		pthread_cond_broadcast(&s->tick);	/* the ticker ends with the last node */
	wake_locked(s);		/* the end, or the error, to send */
	pthread_mutex_unlock(&s->lock);
	unref(s);
	return NULL;
}

/* An empty line every HEARTBEAT_MS while the reader waits: a client that
 * went away is found at the write, and the stream closed. */
static void *ticker_run(void *arg)
{
	struct flows_stream *s = arg;
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
	return NULL;
}

/* -------------------------------------------------------------- stream */

struct flows_stream *flows_stream_open(const struct flows_relay_identity *id, const struct flows_target *t, size_t n,
				       const struct flows_query *q, flows_wake_fn wake, void *wake_arg)
{
	struct flows_stream *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	size_t started = 0;

	if (!s)
		return NULL;
	s->buf = malloc(FLOWS_RELAY_BUFFER);
	s->nodes = calloc(n ? n : 1, sizeof(*s->nodes));
	s->cert_file = strdup(id->cert_file);
	s->key_file = strdup(id->key_file);
	if (!s->buf || !s->nodes || !s->cert_file || !s->key_file) {
		free(s->buf);
		free(s->nodes);
		free(s->cert_file);
		free(s->key_file);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->tick, &ca);
	pthread_condattr_destroy(&ca);
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
		if (pthread_create(&r->thread, NULL, node_run, r)) {
			s->refs--;
			s->running--;
			continue;
		}
		pthread_detach(r->thread);
		started++;
	}
	if (s->running) {
		s->refs++;
		if (pthread_create(&s->ticker, NULL, ticker_run, s))
			s->refs--;
		else
			pthread_detach(s->ticker);
	}
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
