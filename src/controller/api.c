/*
 * api.c — the REST API (docs/api.md) on libmicrohttpd.
 *
 * MHD runs API_THREADS daemons of one epoll thread each; our acceptor
 * thread accepts every connection
 * and gives it to the daemon with the fewest live connections that is
 * not waiting on the store (inline_calls.h).  Everything of ours they
 * touch (registry, store, watch hub, metrics, the watch list) is guarded by
 * one mutex, the global lock, held only around dispatch() — but a watch
 * stream in step with the hub's ring is read under the hub's own lock
 * alone (watch.c, Threads), so the fan-out of an event never waits for
 * the next write's commit.  What comes before dispatch — the route, the
 * body parsed and, for a write, checked and validated (prepare), and
 * before that /healthz and authentication — takes no lock, so a health
 * check never waits behind a request and a write holds the lock only to
 * plan and commit; its answer is serialised after.
 * Discovery and the OpenAPI documents (openapi.c: made once at start,
 * read-only after) are answered there too, after authentication.
 * A list takes no global lock either: its connection is suspended while
 * the lister thread reads its page (list_page.c: one read at one revision
 * on a store handle that only that thread uses, filtered by the query's
 * selectors, cut at its limit), then list_stream.c serialises it outside
 * any lock, a piece per reader call — so a 45 MB list blocks no writer, no
 * health check and no other connection of its MHD thread.  The query of a
 * list or a watch (selectors, limit and continue, resourceVersion,
 * timeoutSeconds, allowWatchBookmarks) is checked by list_query.c before
 * any of that, without a lock; a watch's selector goes to the hub, which
 * files it in its index (watch.c).
 *
 * The expensive part of a watch, the kernel's send to each watcher,
 * happens outside every lock and alongside commits.  A watch is a
 * chunked response whose reader pulls lines from its watcher, in MHD
 * until it first has nothing to send; then the connection is suspended
 * and parked with the sender threads (watch_sender.h), which write it
 * from then on through the TLS session (or socket) MHD was using.  The
 * hub's wake, after a write, queues the parked streams it concerns; once
 * the write's locks are let go (flush_resumes) each sender thread is
 * woken once, however many streams are queued on it, and sends each
 * stream everything since its last send in one chunk, one TLS record and
 * one system call.  So thousands of watchers cost a socket and a cursor
 * each, and an event costs a send per watcher and a wake-up per thread —
 * not a wake-up, a pass of MHD's state machine and two reader calls per
 * watcher, as resuming each stream in MHD would.  A stream the sender
 * lets go (its end, its client gone, its socket full for the idle
 * timeout) is resumed in MHD, whose reader ends the response.  The main
 * thread runs the timers (api_run): events written by other controllers
 * (for the endpoints controller and the watchers), heartbeats, watch
 * deadlines.  A watch that asks for Tables (kubectl get -w) reads its
 * watcher's lines through watch_table.c: raw lines under the hub's lock,
 * each converted to a Table event outside it, so plain watchers pay
 * nothing.
 *
 * On a store over the network (etcd: store_concurrent), a get or write
 * waits on etcd in the MHD thread that read it when no other connection
 * of that thread can wait behind it and etcd answers promptly
 * (inline_calls.h: no hand-off to a worker and back, two thread wake-ups
 * saved); otherwise it goes to a pool of STORE_WORKERS workers
 * (workers.h) while its connection is suspended, as lists go to the
 * lister.  A get takes no lock (the store takes concurrent calls); a
 * write takes the global lock and lets go of it while etcd has its
 * transaction (REGISTRY_YIELD, registry_set_lock), so a controller has
 * as many writes with etcd as clients send, each planned on what it
 * read and kept whole by its compares.
 *
 * Writes are group-committed (store.h): a commit under the lock only
 * writes, and durable() flushes outside it, one flush for every thread
 * waiting at once.  Nothing read from the store leaves before the flush
 * that covers it — an answer, a list, a watch event — so a client never
 * sees a write that a power cut could take back; and the lock is not held
 * across a disk flush, so the next write plans while this one flushes.
 *
 * A batched apply (POST APPLY_PATH, apply_batch.h) runs on the applier's
 * threads, on either store, with its connection suspended: it takes as
 * long as its items, and MHD's threads serve everyone else meanwhile.
 * Each item is the call its own POST or PUT would make (registry_call);
 * the lock is taken a group of items at a time, and one flush after the
 * last item covers them all before the answer leaves.
 *
 * Connections are bounded by conns.c: in all (derived from
 * RLIMIT_NOFILE) and per client address (both refused by the acceptor;
 * watch streams of authenticated clients not counted), and in time (a request head
 * within header_timeout of accept, the next within idle_timeout of the
 * last response; the timer in api_run shuts down the late ones).  MHD's
 * own inactivity timeout, a second longer, covers a request or response
 * that stalls half-way; parked watches are exempt from it, and the
 * sender lets go of one whose socket stays full as long.
 *
 * Request life:  headers ─► (auth, Content-Type, Content-Length) ─► body
 *                 chunks (bounded) ─► prepare: route, JSON, registry's
 *                 checks (body against path, then validation) ─►
 *                 [global lock: dispatch: registry (plan, admission,
 *                 commit) ─► hub sync] ─► flush (durable) ─► streams
 *                 resumed ─► response
 *                 (a list: suspended ─► [lister thread: snapshot] ─►
 *                  resumed ─► response streamed from the snapshot)
 * A request that fails auth, is a node credential's write over its
 * budget (429 with Retry-After: within_budget, throttle.h), sends a body
 * that is not JSON (415) or declares one over the limit (413) is
 * answered at once and its body is not read.  What a body may be is decided in one place, the model's
 * request check (src/model/request.c), which the registry runs first on
 * every write; this file only parses and routes.  A PATCH is checked in
 * two steps: the patch alone in prepare, the patched object under the
 * lock, where the stored object is read (registry_patch.c).
 *
 * The API is HTTPS (GnuTLS inside MHD, TLS 1.2 and 1.3) with the
 * certificate main hands over (pki.h); plain HTTP only when main asks for
 * it, which it does only on loopback.  A client that speaks plain HTTP to
 * the TLS port fails its handshake and is closed; nothing is logged.
 */
#include "controller/controller.h"
#include "controller/answer.h"
#include "controller/apply_batch.h"
#include "controller/conns.h"
#include "controller/discovery.h"
#include "controller/flows_relay.h"
#include "controller/ui.h"
#include "controller/inline_calls.h"
#include "controller/list_page.h"
#include "controller/list_query.h"
#include "controller/list_stream.h"
#include "controller/openapi.h"
#include "controller/table.h"
#include "controller/throttle.h"
#include "controller/registry_patch.h"
#include "controller/status_json.h"
#include "controller/tls_io.h"
#include "controller/watch_sender.h"
#include "controller/watch_table.h"
#include "controller/workers.h"
#include "lib/media.h"
#include "lib/monotime.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEARTBEAT_SECONDS 30
#define BOOKMARK_SECONDS 60	/* default: Kubernetes' watch cache sends about one a minute */
/* MHD daemons, a thread each.  A call may wait in its thread: for etcd
 * (inline_calls.h), or for the flush that makes a write durable on
 * SQLite — the threads that wait at once share one flush, so this many
 * writes at most share one.  With 2 the 30,000 Pod records of a
 * 1,000-node cold start were flush-bound (bench/README.md, "scale"). */
#define API_THREADS 8
#define SENDER_THREADS 2	/* the watch sender's (watch_sender.h) */
#define STORE_WORKERS 8	/* gets and writes with a store over the network (etcd) at once */
#define APPLY_WORKERS 2	/* batched applies at once (apply_batch.h) */
#define LIST_BLOCK_BYTES (64 * 1024)	/* what one reader call of a list serialises */
/* TLS 1.2 and 1.3 only, GnuTLS's NORMAL choice of ciphers within them */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* What MHD's connection notices of daemon index get: which thread it is. */
struct daemon_ref {
	struct api *api;
	unsigned index;
};

struct api {
	pthread_mutex_t lock;		/* the global lock: everything below but mhd and what says otherwise */
	struct flows_relay *relay;	/* NULL: none (no identity); its own locks */
	pthread_mutex_t stats_lock;	/* metrics' request counters (taken inside lock, never around it) */
	struct conns *conns;		/* the connection table (its own lock) */
	struct store *reader;		/* lists' own handle on the store (borrowed; the lister's), or NULL */
	struct workers *lister;		/* one thread: list snapshots on reader, in order; or NULL */
	bool lists_stopping;		/* lists not read yet get 503 (atomic) */
	struct MHD_Daemon *mhd[API_THREADS];	/* a thread each; the acceptor gives them connections */
	struct daemon_ref refs[API_THREADS];
	unsigned ndaemons;
	int listen_fd;			/* ours: the acceptor hands connections to MHD (MHD_add_connection) */
	pthread_t acceptor;
	bool accepting;			/* acceptor started (joined at stop) */
	atomic_bool accept_stop;	/* the acceptor returns at its next turn */
	struct registry *reg;
	struct watch_hub *hub;
	struct metrics *metrics;
	char token[256];		/* the admin's (fixed at start) */
	struct creds *creds;		/* node credentials (their own lock) */
	struct openapi *openapi;	/* the OpenAPI documents (made at start, then only read: no lock) */
	size_t max_body;
	unsigned max_connections, max_per_client;	/* for /metrics */
	struct throttle_rate node_writes;	/* each node credential's write budget (fixed at start) */
	time_t last_heartbeat;
	time_t last_bookmark;
	unsigned bookmark_interval;	/* seconds between BOOKMARKs on streams that allow them */
	time_t last_tick;
	bool stopping;			/* watch streams end at their next read (set under both locks) */
	struct watch_ctx *watches;	/* every open watch, for heartbeats */
	pthread_cond_t watches_gone;	/* (with lock) stopping and the last watch freed */
	struct watch_sender *sender;	/* writes the streams MHD keeps suspended (watch_sender.h) */
	struct workers *workers;	/* gets and writes on a store that takes concurrent calls, or NULL */
	struct workers *applier;	/* batched applies (POST APPLY_PATH), on either store; or NULL */
	struct inline_calls *inl;	/* each daemon's live connections; with workers, which calls wait
					 * in MHD's thread instead of a worker's (its atomics) */
	/* api_run's wait: it sleeps until wake_at (monotime ms; INT64_MIN
	 * while it runs), and a PodPeerSlice node due earlier writes to
	 * wake_fd (an eventfd, made at its first call) to cut it short */
	bool wake_ready;
	int wake_fd;
	int64_t wake_at;
};

struct request {
	char *body;
	size_t len, cap;
	bool too_large;
	bool answered;		/* a response went out before the body was read */
	struct timespec start;
	struct list_job *list;	/* a list waiting for (or holding) its snapshot */
	struct store_job *job;	/* a get or write with a worker (or done, to be answered) */
	bool watch;		/* a watch stream: its connection does not count against its client */
	struct principal who;	/* who sent it (authenticated before anything else) */
	bool head;		/* a HEAD request: MHD sends no body */
	enum answer_form form;	/* what Accept asks for (answer.h): JSON, YAML or a Table (kubectl get) */
	enum table_include include;	/* ... and what a Table's rows carry (includeObject) */
	/* what a failure is about, for its Status' details (status_json.h):
	 * the route's kind, and its name or a create's metadata.name */
	const struct kind_info *about_kind;
	char about_name[256];
	char *warnings;		/* Warning headers of the answer, one a line (fieldValidation=Warn), or NULL */
};

/* What MHD keeps for a connection (its socket context), from
 * MHD_CONNECTION_NOTIFY_STARTED to MHD_CONNECTION_NOTIFY_CLOSED. */
struct link {
	struct conn *conn;	/* its record in the connection table, or NULL (untracked) */
	struct tls_io *tls;	/* the socket under its TLS session, or NULL (plain HTTP, or GnuTLS's own) */
	struct inline_thread *home;	/* its MHD thread's record (inline_calls.h), or NULL */
	bool parked;		/* a watch stream with the sender: not live for its thread */
};

/* A list whose connection is suspended until the lister has its page. */
struct list_job {
	struct work work;		/* first: the lister's (workers.h) */
	struct api *api;
	struct MHD_Connection *conn;
	const struct kind_info *kind;
	char ns[256];
	struct list_query q;		/* its query, checked */
	struct list_page page;		/* filled by the lister */
	struct status st;		/* ... or this, when it failed */
	int err;
};

/* A watch stream.  prev/next: the global lock; park, ended, failed,
 * heartbeat and bookmark_due: the hub's lock (watch_hub_lock). */
struct watch_ctx {
	struct api *api;
	struct MHD_Connection *conn;
	struct watcher *watcher;
	struct watch_ctx *prev, *next;
	struct sender_stream *park;	/* parked: suspended in MHD, written by the sender */
	bool ended, failed;	/* the sender let it go: MHD ends the response (failed: closes) */
	bool heartbeat;		/* send one "\n" on the next read */
	bool bookmarks;		/* allowWatchBookmarks */
	bool bookmark_due;	/* send a BOOKMARK on the next read that has nothing else */
	const struct kind_info *kind;	/* for the BOOKMARK's object */
	bool revoked;		/* its credential was revoked: the stream ends */
	char cred[17];		/* the node credential that opened it ("" the admin) */
	time_t deadline;	/* 0 = none */
	struct watch_table *table;	/* a Table watch's converter, or NULL (plain JSON) */
};

static double elapsed(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static const double latency_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					 0.1,    0.25,  0.5,    1,     2.5,  5,     10 };
#define NBOUNDS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))

/* Count an answer (stats_lock: called with and without the global lock). */
static void observe(struct api *a, int code, double secs)
{
	struct metrics *m = a->metrics;
	size_t b = 0;

	while (b < NBOUNDS && secs > latency_bounds[b])
		b++;
	pthread_mutex_lock(&a->stats_lock);
	if (code >= 100 && code < 600)
		m->requests_by_class[code / 100]++;
	m->latency_buckets[b]++;
	m->latency_sum += secs;
	m->latency_count++;
	pthread_mutex_unlock(&a->stats_lock);
}

/* MHD's socket context of c: set when MHD started it, NULL if that failed. */
static struct link *link_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/* A body MHD copies out of, a block at a time (body_reader). */
struct body {
	char *data;
	size_t len;
};

static ssize_t body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct body *b = cls;
	size_t n;

	if (pos >= b->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = b->len - (size_t)pos < max ? b->len - (size_t)pos : max;
	memcpy(buf, b->data + pos, n);
	return (ssize_t)n;
}

static void body_free(void *cls)
{
	struct body *b = cls;

	free(b->data);
	free(b);
}

#define BODY_BLOCK_MAX (64 * 1024)

/* A response whose body is data (malloc'd; taken over, freed on failure
 * too), for connection l.
 *
 * Plain HTTP: from a buffer, which MHD writes with the head in one sendmsg.
 * TLS: MHD cannot hand GnuTLS two buffers, so it writes the head, then the
 * body, and tls_io holds the head's record to send it with the body's.
 * And there the body is read through a callback, not given as a buffer:
 * for a buffer that makes a whole response under 1,400 bytes MHD writes
 * the head "not pushed", which on a TLS connection means it corks the
 * socket, and from then on pushes every response with a
 * setsockopt(TCP_NODELAY) of its own — one more system call per response.
 * A body from a callback is not "complete" to MHD, so the head is pushed,
 * the socket never corked.  (An iovec of one element MHD turns into a
 * buffer; of two, it corks for the first.)  The cost: MHD copies the body
 * into its block. */
static struct MHD_Response *response_for(struct link *l, char *data, size_t len)
{
	struct MHD_Response *resp;
	struct body *b;

	if (!l || !l->tls || len == 0) {
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(data);
		return resp;
	}
	b = malloc(sizeof(*b));
	if (!b) {
		free(data);
		return NULL;
	}
	*b = (struct body){ .data = data, .len = len };
	resp = MHD_create_response_from_callback(len, len < BODY_BLOCK_MAX ? len : BODY_BLOCK_MAX, body_reader, b,
						 body_free);
	if (!resp)
		body_free(b);
	return resp;
}

/* The request's Warning headers (fieldValidation=Warn), one a line. */
static void add_warnings(struct MHD_Response *resp, const struct request *rq)
{
	for (const char *w = rq ? rq->warnings : NULL; w && *w;) {
		size_t len = strcspn(w, "\n");
		char value[1024];

		snprintf(value, sizeof(value), "%.*s", (int)(len < sizeof(value) ? len : sizeof(value) - 1), w);
		MHD_add_response_header(resp, "Warning", value);
		w += len + (w[len] == '\n');
	}
}

/* A response of body (taken over), with Retry-After when retry_after > 0. */
static enum MHD_Result send_body_retry(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				       const char *ctype, char *body, size_t len, int retry_after)
{
	struct link *l = link_of(c);
	struct MHD_Response *resp = response_for(l, body, len);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	add_warnings(resp, rq);
	if (retry_after > 0) {
		char secs[16];

		snprintf(secs, sizeof(secs), "%d", retry_after);
		MHD_add_response_header(resp, "Retry-After", secs);
	}
	/* MHD writes the head and then the body: over TLS both go out in one
	 * sendmsg.  Not for HEAD (no body follows). */
	if (l && len && rq && !rq->head)
		tls_io_join_next(l->tls);
	ret = MHD_queue_response(c, (unsigned)code, resp);
	MHD_destroy_response(resp);
	if (rq)
		observe(a, code, elapsed(&rq->start));
	return ret;
}

static enum MHD_Result send_body(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				 const char *ctype, char *body, size_t len)
{
	return send_body_retry(a, c, rq, code, ctype, body, len, 0);
}

/* obj (taken over) as the request's form (answer.h): one line of compact
 * JSON, or YAML when Accept asked for it. */
static enum MHD_Result send_json_retry(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				       json_t *obj, int retry_after)
{
	const char *ctype = "application/json";
	size_t len = 0;
	char *s = obj ? answer_text(obj, rq ? rq->form : ANSWER_JSON, &len, &ctype) : NULL;

	json_decref(obj);
	if (!s)
		return MHD_NO;
	return send_body_retry(a, c, rq, code, ctype, s, len, retry_after);
}

static enum MHD_Result send_json(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				 json_t *obj)
{
	return send_json_retry(a, c, rq, code, obj, 0);
}

static enum MHD_Result send_status(struct api *a, struct MHD_Connection *c, struct request *rq,
				   const struct status *st)
{
	const struct kind_info *k = rq ? rq->about_kind : NULL;
	const char *name = rq ? rq->about_name : NULL;
	json_t *o = status_json_new(st, st->message, k, name);

	if (!o) {
		/* a message quoting a request's bytes that are not UTF-8 (a
		 * path, a header): answer with those bytes as '?' */
		char clean[sizeof(st->message)];
		size_t i;

		for (i = 0; st->message[i] && i + 1 < sizeof(clean); i++)
			clean[i] = (unsigned char)st->message[i] < 0x20 || (unsigned char)st->message[i] >= 0x7f
				   ? '?' : st->message[i];
		clean[i] = 0;
		o = status_json_new(st, clean, k, name);
	}
	return send_json_retry(a, c, rq, st->code, o, st->retry_after);
}

__attribute__((format(printf, 6, 7))) static enum MHD_Result
fail(struct api *a, struct MHD_Connection *c, struct request *rq, int code, const char *reason,
     const char *fmt, ...)
{
	struct status st = { .code = code, .reason = reason };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st.message, sizeof(st.message), fmt, ap);
	va_end(ap);
	return send_status(a, c, rq, &st);
}

/* ------------------------------------------------------------------ request checks */

/* A request body's Content-Type: JSON or YAML, or none (kube-apiserver reads a
 * body without one as its first media type, application/json).  Anything
 * else is 415 naming it.  Parameters (charset=utf-8) are allowed. */
static bool content_type_ok(struct MHD_Connection *c, struct status *st)
{
	const char *header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	size_t n;
	const char *ct = media_type_of(header, &n);

	if (n == 0 || media_type_is(header, "application/json") || media_type_is(header, "application/yaml"))
		return true;
	status_set(st, 415, "UnsupportedMediaType",
		   "the body's Content-Type '%.*s' is not supported: send application/json or application/yaml",
		   (int)(n > 200 ? 200 : n), ct);
	return false;
}

/* A PATCH's Content-Type: one of the three patch types (model/patch.h),
 * into *t (may be NULL); anything else, or none, is 415 naming it and them. */
static bool patch_type_ok(struct MHD_Connection *c, enum patch_type *t, struct status *st)
{
	char msg[sizeof(st->message)];
	enum patch_type got;

	if (patch_type_parse(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE), &got, msg,
			     sizeof(msg))) {
		status_set(st, 415, "UnsupportedMediaType", "%s", msg);
		return false;
	}
	if (t)
		*t = got;
	return true;
}

/* A revision in a query parameter (absent and "" are none): 0 with *out
 * (-1 for none), or -1 with st set (400 naming it). */
static int query_revision(struct MHD_Connection *c, const char *param, int64_t *out, struct status *st)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, param);

	*out = -1;
	if (!v || !*v)
		return 0;
	if (model_revision_parse(v, out)) {
		status_set(st, 400, "BadRequest", "%s: '%.64s' is not a revision (decimal digits)", param, v);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ paths */

/* Split a path into segments in place; returns how many, -1 if too many or empty ones. */
static int split(char *path, char **seg, int max)
{
	int n = 0;
	char *p = path;

	while (*p == '/')
		p++;
	while (*p) {
		char *slash = strchr(p, '/');
		if (n == max)
			return -1;
		seg[n++] = p;
		if (!slash)
			break;
		*slash = 0;
		p = slash + 1;
		if (!*p)
			break;
		if (*p == '/')
			return -1;
	}
	return n;
}

int api_parse_route(const char *url, struct route *r)
{
	char path[1024];
	char *seg[8];
	int n, i = 0;
	const char *group;

	memset(r, 0, sizeof(*r));
	if (strlen(url) >= sizeof(path))
		return 404;
	strcpy(path, url);
	n = split(path, seg, 8);
	if (n < 2)
		return 404;
	if (strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0) {
		group = "";
		i = 2;
	} else if (strcmp(seg[0], "apis") == 0 && n >= 3) {
		group = seg[1];
		if (strcmp(seg[2], "v1") != 0)
			return 404;
		i = 3;
	} else {
		return 404;
	}
	if (i == n)
		return 404;
	if (strcmp(group, "network.openshift.io") == 0 && n == i + 1 && strcmp(seg[i], "podnetwork") == 0) {
		r->podnetwork = true;
		return 0;
	}
	/* /namespaces/NS/PLURAL[/NAME] */
	if (strcmp(seg[i], "namespaces") == 0 && n >= i + 3) {
		if (strlen(seg[i + 1]) >= sizeof(r->ns))
			return 404;
		strcpy(r->ns, seg[i + 1]);
		i += 2;
	}
	r->kind = kind_by_resource(group, seg[i]);
	if (!r->kind)
		return 404;
	if (r->ns[0] && !r->kind->namespaced)
		return 404;
	i++;
	if (i < n) {
		if (strlen(seg[i]) >= sizeof(r->name))
			return 404;
		strcpy(r->name, seg[i]);
		r->has_name = true;
		/* NAME/status: the status subresource, where the kind has one */
		if (i + 2 == n && strcmp(seg[i + 1], "status") == 0 && r->kind->status_subresource)
			r->status = true;
		else if (i + 1 != n)
			return 404;
	}
	return 0;
}

/* ------------------------------------------------------------------ connections */

/* The table's record of c (set when MHD started it), or NULL. */
static struct conn *conn_of(struct MHD_Connection *c)
{
	struct link *l = link_of(c);

	return l ? l->conn : NULL;
}

/* The client's IPv4 address in host order (the API listens on IPv4 only). */
static uint32_t client_of(const struct sockaddr *sa)
{
	return sa && sa->sa_family == AF_INET ? ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) : 0;
}

static void stop_daemons(struct api *a)
{
	for (unsigned i = 0; i < a->ndaemons; i++) {
		if (a->mhd[i])
			MHD_stop_daemon(a->mhd[i]);
		a->mhd[i] = NULL;
	}
}

/*
 * The acceptor: connections are accepted here and each is handed to the
 * daemon (a thread) that inline_pick names: not waiting on the store,
 * the fewest live connections.  MHD's own accepting, by whichever of its
 * threads wakes first, takes every connection pending at once (up to
 * ten): a client's connections opened together would share a thread,
 * and a store call could not wait in it (inline_calls.h).  Over the
 * server's limit, or a client at its cap, a connection is closed here,
 * before MHD sets anything up; else its place is reserved here and taken
 * when its thread sets it up (conns.h).  Between connections, every
 * ACCEPT_TICK_MS, it keeps inline_calls' watchdog: it never waits on the
 * store, so it sees a call stuck on a stalled etcd when every other
 * thread waits too.
 */
#define ACCEPT_TICK_MS 100
static void *accept_run(void *arg)
{
	struct api *a = arg;

	for (;;) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		struct pollfd p = { .fd = a->listen_fd, .events = POLLIN };
		int64_t waited;
		int fd;

		if (a->workers && inline_watchdog(a->inl, monotime_ms(), &waited))
			fprintf(stderr, "weft-controller: a call has waited %" PRId64 " ms on the store in a server "
					"thread: calls go to the workers for %d ms\n", waited, INLINE_BACKOFF_MS);
		if (atomic_load(&a->accept_stop))
			return NULL;
		if (poll(&p, 1, ACCEPT_TICK_MS) == 0)
			continue;
		fd = accept4(a->listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM ||
			    errno == EAGAIN)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				poll(NULL, 0, 100);	/* out of descriptors: the pending wait in the backlog */
				continue;
			}
			return NULL;	/* EINVAL: api_stop shut the socket down (or worse: no more accepts) */
		}
		if (!conns_reserve(a->conns, client_of((struct sockaddr *)&sa), fd, monotime_ms())) {
			close(fd);
			continue;
		}
		/* it closes fd if it cannot */
		(void)MHD_add_connection(a->mhd[inline_pick(a->inl)], fd, (struct sockaddr *)&sa, len);
	}
}

/* The listening socket of addr; -errno. */
static int listen_on(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, e;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) || listen(fd, 4096)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* MHD set a connection up (on its daemon's thread) or is about to close it. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	const struct daemon_ref *ref = cls;
	struct api *a = ref->api;
	struct link *l;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		const union MHD_ConnectionInfo *tls = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);

		/* without it the connection is untracked, as when conns_open fails
		 * (its reservation is given back after CONNS_RESERVE_MS) */
		*socket_context = l = calloc(1, sizeof(*l));
		if (!l)
			return;
		/* the acceptor reserved its place (conns_reserve) */
		l->conn = conns_open(a->conns, client_of(addr ? addr->client_addr : NULL),
				     fd ? fd->connect_fd : -1, monotime_ms());
		/* before the handshake, which is MHD's first read */
		if (fd && tls && tls->tls_session)
			l->tls = tls_io_attach(tls->tls_session, fd->connect_fd);
		l->home = inline_thread(a->inl, ref->index);
		inline_live(l->home);
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		l = *socket_context;
		if (l) {
			if (!l->parked)
				inline_gone(l->home);
			conns_close(a->conns, l->conn);
			tls_io_free(l->tls);	/* MHD freed the session before this */
			free(l);
		}
		*socket_context = NULL;
	}
}

/* ------------------------------------------------------------------ watch */

/* The stream may have something to send (hub lock held): a parked one
 * is queued on its sender thread, which flush_resumes wakes once the
 * caller has let go of its locks.  A stream not parked is in MHD, which
 * reads it anyway: it is running or about to park. */
static void watch_resume(struct watch_ctx *w)
{
	if (w->park) {
		w->api->metrics->watch_resumes++;
		watch_sender_wake(w->park);
	}
}

/* Wake the sender threads that watch_resume gave work: a system call
 * each, after every critical section that may sync the hub or resume a
 * stream, with no lock held — however many streams an event woke. */
static void flush_resumes(struct api *a)
{
	watch_sender_kick(a->sender);
}

/* Group commit (store.h): writes are committed under the lock and flushed
 * outside it.  Before anything read from the store leaves — an answer, a
 * list, watch events — the thread waits here until every commit made so
 * far is durable (a superset of what it read; one flush at most, shared by
 * every thread waiting at once).  A flush that fails leaves no way to tell
 * what the disk holds: the controller stops at once, before anyone sees
 * such a write, and the next start reads what the disk kept. */
static void durable(struct api *a)
{
	struct store *s = a->reg->store;
	int err = store_sync(s, store_commits(s));

	if (err) {
		fprintf(stderr, "weft-controller: the store's writes cannot be made durable (%s): stopping "
			"before anyone sees them\n", strerror(-err));
		_exit(EXIT_FAILURE);
	}
}

/* The hub's wake-up (its lock held, from the thread that synced it). */
static void watch_wake(void *arg)
{
	watch_resume(arg);
}

/* A BOOKMARK into buf when one is due and the stream is caught up with
 * something newer to say (hub lock held): its length, or 0. */
static ssize_t bookmark(struct watch_ctx *w, char *buf, size_t max)
{
	int64_t rev;
	int n;

	if (!w->bookmark_due)
		return 0;
	w->bookmark_due = false;
	rev = watcher_bookmark(w->watcher);
	if (rev < 0)
		return 0;
	if (w->table)
		return (ssize_t)watch_table_bookmark(w->table, rev, buf, max);
	n = snprintf(buf, max, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
		     "\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"}}}\n", w->kind->kind, w->kind->api_version, rev);
	return n > 0 && (size_t)n < max ? n : 0;
}

/* What stream w sends next into buf: its length, 0 when there is nothing
 * now, or -1 when the stream ends (hub lock held, and the global lock
 * when the watcher reads the store).  A Table watch pulls a raw line into
 * its converter instead (*pulled), to be converted outside the locks. */
static ssize_t watch_next(struct watch_ctx *w, char *buf, size_t max, bool *pulled)
{
	struct api *a = w->api;
	ssize_t n;

	if (a->stopping || w->revoked || (w->deadline && time(NULL) >= w->deadline))
		return -1;
	if ((n = w->table ? watch_table_pull(w->table, w->watcher) : watcher_read(w->watcher, buf, max)) > 0) {
		a->metrics->watch_writes++;
		*pulled = w->table != NULL;
		return n;
	}
	if (n < 0) {
		a->metrics->watchers_dropped_slow++;
		return -1;
	}
	if ((n = bookmark(w, buf, max)) > 0) {
		a->metrics->watch_writes++;
		return n;
	}
	if (w->heartbeat) {
		w->heartbeat = false;
		buf[0] = '\n';
		return 1;
	}
	return 0;
}

/* Park w with the sender (hub lock held, on MHD's thread, inside its
 * reader): MHD suspends it, and the session or socket it wrote is the
 * sender's until release.  False: not parked (the stream ends). */
static bool watch_park(struct watch_ctx *w)
{
	const union MHD_ConnectionInfo *fd = MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *tls = MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	struct link *l = link_of(w->conn);

	if (!fd)
		return false;
	w->park = watch_sender_park(w->api->sender, w, tls ? tls->tls_session : NULL, fd->connect_fd);
	if (!w->park)
		return false;
	if (l && !l->parked) {	/* the sender's now: no call of this thread waits for it */
		l->parked = true;
		inline_gone(l->home);
	}
	MHD_suspend_connection(w->conn);
	return true;
}

/* Up to max bytes of stream w into buf, for MHD's reader (reader: then
 * a stream with nothing to send is parked) or the sender's fill: their
 * count, 0 for nothing now, WATCH_END (-1) when the stream ends cleanly,
 * WATCH_FAILED (-2) when it must be cut.  Takes the locks it needs. */
#define WATCH_END (-1)
#define WATCH_FAILED (-2)
static ssize_t watch_take(struct watch_ctx *w, char *buf, size_t max, bool reader)
{
	struct api *a = w->api;
	/* a stream in step with the ring (the usual case) reads no store: the
	 * hub's lock alone, so it never waits behind a commit */
	bool store = watcher_reads_store(w->watcher), pulled = false;
	ssize_t n;

	/* a Table watch first hands out what it converted (watch_table.h) */
	if (w->table && (n = watch_table_take(w->table, buf, max)) != 0)
		return n > 0 ? n : WATCH_FAILED;
	if (store)
		pthread_mutex_lock(&a->lock);
	watch_hub_lock(a->hub);
	if (w->ended)
		n = w->failed ? WATCH_FAILED : WATCH_END;
	else if ((n = watch_next(w, buf, max, &pulled)) < 0 || (n == 0 && reader && !watch_park(w)))
		n = WATCH_END;
	watch_hub_unlock(a->hub);
	if (store)
		pthread_mutex_unlock(&a->lock);
	if (n > 0)
		durable(a);
	if (pulled && (n = watch_table_take(w->table, buf, max)) <= 0)
		n = WATCH_FAILED;	/* out of memory */
	return n;
}

/* MHD's reader: the stream from its start until it first has nothing to
 * send, then again only to end it once the sender has let it go. */
static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	ssize_t n = watch_take(cls, buf, max, true);

	(void)pos;
	return n == WATCH_END ? MHD_CONTENT_READER_END_OF_STREAM
	       : n == WATCH_FAILED ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

/* The sender's fill: as the reader, on a sender thread. */
static ssize_t watch_fill(void *cls, char *buf, size_t max)
{
	ssize_t n = watch_take(cls, buf, max, false);

	return n == WATCH_END ? WATCH_SENDER_END : n;	/* WATCH_FAILED: the sender cuts it */
}

/* The sender let w go: MHD takes it back and its reader ends it. */
static void watch_release(void *cls, bool failed)
{
	struct watch_ctx *w = cls;
	struct api *a = w->api;

	watch_hub_lock(a->hub);
	w->park = NULL;	/* no more wakes for it */
	w->ended = true;
	w->failed = failed;
	watch_hub_unlock(a->hub);
	MHD_resume_connection(w->conn);
}

static void watch_free(void *cls)
{
	struct watch_ctx *w = cls;
	struct api *a = w->api;

	/* may run inside a handler (holding a->lock) when MHD drops the
	 * response at once, e.g. while the daemon stops: the lock is recursive */
	pthread_mutex_lock(&a->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		a->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	watcher_close(w->watcher);
	if (a->stopping && !a->watches)
		pthread_cond_signal(&a->watches_gone);
	pthread_mutex_unlock(&a->lock);
	watch_table_free(w->table);
	free(w);
}

/* What a watch of route r with query q follows (q's selector is moved
 * into sel).  A watch of one object is its namespace's (or the cluster's)
 * collection with an equality on metadata.name, read from the store under
 * its key alone: only that object streams, not others whose names start
 * with its name. */
static int watch_spec_of(const struct route *r, struct list_query *q, struct selector *sel, char *prefix,
			 size_t plen, char *key, size_t klen, struct watch_spec *spec)
{
	if (r->kind->namespaced && r->ns[0])
		snprintf(prefix, plen, OBJ_PREFIX "%s/%s/", r->kind->plural, r->ns);
	else
		snprintf(prefix, plen, OBJ_PREFIX "%s/", r->kind->plural);
	*sel = q->sel;
	memset(&q->sel, 0, sizeof(q->sel));
	*spec = (struct watch_spec){ .prefix = prefix, .sel = sel };
	if (r->has_name) {
		snprintf(key, klen, "%s%s", prefix, r->name);
		spec->scan = key;
		return selector_add_field(sel, SELECTOR_FIELD_NAME, r->name);
	}
	return 0;
}

static enum MHD_Result start_watch(struct api *a, struct MHD_Connection *c, struct request *rq,
				   const struct route *r, struct list_query *q)
{
	char prefix[600], key[900];
	struct selector sel = { 0 };
	struct watch_spec spec;
	struct status st = { 0 };
	struct watch_ctx *w;
	struct MHD_Response *resp;
	unsigned timeout = q->timeout;
	enum MHD_Result ret;

	if (a->stopping) {
		status_set(&st, 503, "ServiceUnavailable", "the controller is stopping");
		return send_status(a, c, rq, &st);
	}
	if (watch_spec_of(r, q, &sel, prefix, sizeof(prefix), key, sizeof(key), &spec)) {
		selector_free(&sel);
		return fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		selector_free(&sel);
		return MHD_NO;
	}
	if (watch_hub_sync(a->hub)) {
		free(w);
		selector_free(&sel);
		return fail(a, c, rq, 500, "InternalError", "%s", "store: cannot read events");
	}
	/* a revision the store has not reached: as Kubernetes, the watch waits
	 * for it (events after it stream when they come), until its timeout,
	 * which is then at most WATCH_TIMEOUT_MAX even when none was asked for */
	if (q->rv > watch_hub_revision(a->hub) && !timeout)
		timeout = WATCH_TIMEOUT_MAX;
	w->watcher = watcher_open(a->hub, &spec, q->rv, watch_wake, w, &st);
	selector_free(&sel);	/* taken over when the watcher opened */
	if (!w->watcher) {
		free(w);
		return send_status(a, c, rq, &st);
	}
	if (rq->form == ANSWER_TABLE && !(w->table = watch_table_new(r->kind, rq->include))) {
		watcher_close(w->watcher);
		free(w);
		return MHD_NO;
	}
	w->api = a;
	w->conn = c;
	w->kind = r->kind;
	w->bookmarks = q->bookmarks;
	snprintf(w->cred, sizeof(w->cred), "%s", rq->who.cred);
	if (timeout > 0)
		w->deadline = time(NULL) + (time_t)timeout;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, watch_reader, w, watch_free);
	if (!resp) {
		watcher_close(w->watcher);
		watch_table_free(w->table);
		free(w);
		return MHD_NO;
	}
	w->next = a->watches;
	if (a->watches)
		a->watches->prev = w;
	a->watches = w;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);	/* may run watch_free now (recursive lock) */
	observe(a, ret == MHD_YES ? 200 : 503, elapsed(&rq->start));
	if (ret == MHD_YES) {
		rq->watch = true;
		conns_set_counted(a->conns, conn_of(c), false);
	}
	return ret;
}

/* ------------------------------------------------------------------ lists */

/* A list response being sent: the stream, and what observe needs at its end. */
struct list_reply {
	struct api *api;
	struct list_stream *stream;
	struct timespec start;
	bool failed;
};

/* MHD's reader, on the connection's thread, no lock held: the stream is the reply's own. */
static ssize_t list_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct list_reply *lr = cls;
	ssize_t n = list_stream_read(lr->stream, buf, max);

	(void)pos;
	if (n < 0) {
		lr->failed = true;
		return MHD_CONTENT_READER_END_WITH_ERROR;	/* the client sees a cut response */
	}
	return n ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* When the response is done (or dropped): its whole time is the request's. */
static void list_reply_free(void *cls)
{
	struct list_reply *lr = cls;

	observe(lr->api, lr->failed ? 500 : 200, elapsed(&lr->start));
	list_stream_free(lr->stream);
	free(lr);
}

/* A list asked for as YAML: the JSON list the stream would send, read
 * whole and emitted as one YAML document (outside any lock; it costs the
 * list's size a few times over, which a client asking for YAML pays). */
static enum MHD_Result send_page_whole(struct api *a, struct MHD_Connection *c, struct request *rq,
				       const struct kind_info *k, struct list_page *page)
{
	struct list_stream *ls = list_stream_new(k, &page->items, page->cont, page->remaining);
	char *text = NULL;
	size_t len = 0, cap = 0;
	ssize_t n = ls ? 0 : -1;
	json_t *list;

	list_page_free(page);
	while (ls) {
		if (cap - len < LIST_BLOCK_BYTES) {
			char *grown = realloc(text, cap + 4 * LIST_BLOCK_BYTES);

			if (!grown) {
				n = -1;
				break;
			}
			text = grown;
			cap += 4 * LIST_BLOCK_BYTES;
		}
		n = list_stream_read(ls, text + len, LIST_BLOCK_BYTES);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	list_stream_free(ls);
	list = n < 0 ? NULL : json_loadb(text, len, 0, NULL);
	free(text);
	return list ? send_json(a, c, rq, 200, list) : fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
}

/* Answer with the list of kind k streamed from *page (its items taken over). */
static enum MHD_Result send_page(struct api *a, struct MHD_Connection *c, struct request *rq,
				 const struct kind_info *k, struct list_page *page)
{
	struct list_reply *lr;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (rq->form == ANSWER_YAML)
		return send_page_whole(a, c, rq, k, page);
	if (rq->form == ANSWER_TABLE) {
		/* rows are a few cells and the metadata: built whole, outside any lock */
		json_t *t = table_of_page(k, &page->items, page->cont, page->remaining, rq->include, time(NULL));

		list_page_free(page);
		return t ? send_json(a, c, rq, 200, t) : fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	}
	lr = calloc(1, sizeof(*lr));
	if (!lr || !(lr->stream = list_stream_new(k, &page->items, page->cont, page->remaining))) {
		list_page_free(page);
		free(lr);
		return fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	}
	list_page_free(page);
	lr->api = a;
	lr->start = rq->start;
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, LIST_BLOCK_BYTES, list_reader, lr,
						 list_reply_free);
	if (!resp) {
		list_stream_free(lr->stream);
		free(lr);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);	/* list_reply_free runs when MHD is done with it */
	return ret;
}

/* A list without a lister (no reader handle): under the global lock, on the registry's store. */
static enum MHD_Result send_list(struct api *a, struct MHD_Connection *c, struct request *rq,
				 const struct route *r, const struct list_query *q)
{
	struct list_page page;
	struct status st = { 0 };

	if (list_page_read(a->reg->store, r->kind, r->ns, q, &page, &st))
		return send_status(a, c, rq, &st);
	return send_page(a, c, rq, r->kind, &page);
}

/* The lister (a pool of one thread: reader is its alone): a snapshot,
 * then a resume of its connection, whose handler answers (list_answer).
 * Once the API stops, what is still queued gets 503. */
static void list_run(struct work *w)
{
	struct list_job *j = (struct list_job *)w;
	struct api *a = j->api;

	if (__atomic_load_n(&a->lists_stopping, __ATOMIC_ACQUIRE)) {
		status_set(&j->st, 503, "ServiceUnavailable", "the controller is stopping");
		j->err = -1;
	} else {
		j->err = list_page_read(a->reader, j->kind, j->ns, &j->q, &j->page, &j->st);
		durable(a);
	}
	MHD_resume_connection(j->conn);
}

static void list_job_free(struct list_job *j)
{
	if (!j)
		return;
	list_query_free(&j->q);
	list_page_free(&j->page);
	free(j);
}

/* The value of a query parameter, for list_query_parse. */
static const char *query_arg(void *ctx, const char *name)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

/* Hand a list to the lister and suspend its connection until it is done. */
static enum MHD_Result list_queue(struct api *a, struct MHD_Connection *c, struct request *rq,
				  const struct route *r)
{
	struct list_job *j = calloc(1, sizeof(*j));
	struct status st = { 0 };

	if (!j)
		return fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	if (list_query_parse(&j->q, r->kind, false, query_arg, c, &st)) {
		free(j);
		return send_status(a, c, rq, &st);
	}
	j->work.run = list_run;
	j->api = a;
	j->conn = c;
	j->kind = r->kind;
	snprintf(j->ns, sizeof(j->ns), "%s", r->ns);
	rq->list = j;
	MHD_suspend_connection(c);	/* before the lister can see it, so its resume finds it suspended */
	if (!workers_queue(a->lister, &j->work)) {
		status_set(&j->st, 503, "ServiceUnavailable", "the controller is stopping");
		j->err = -1;
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

/* What is queued is answered 503 (list_run), the thread joined. */
static void lister_stop(struct api *a)
{
	__atomic_store_n(&a->lists_stopping, true, __ATOMIC_RELEASE);
	workers_stop(a->lister);
}

/* The handler's call after the lister resumed the connection. */
static enum MHD_Result list_answer(struct api *a, struct MHD_Connection *c, struct request *rq)
{
	struct list_job *j = rq->list;
	enum MHD_Result ret;

	rq->list = NULL;
	if (j->err)
		ret = send_status(a, c, rq, &j->st);
	else
		ret = send_page(a, c, rq, j->kind, &j->page);
	list_job_free(j);
	return ret;
}

/* A boolean query parameter as Kubernetes parses it (Go's ParseBool):
 * 1 t T TRUE true True, 0 f F FALSE false False.  false when absent or
 * not one of these (prepare refuses those with 400). */
static bool query_true(struct MHD_Connection *c, const char *name)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcmp(v, yes[i]) == 0)
			return true;
	return false;
}

static bool query_bool_ok(struct MHD_Connection *c, const char *name)
{
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	for (size_t i = 0; v && i < sizeof(no) / sizeof(no[0]); i++)
		if (strcmp(v, no[i]) == 0)
			return true;
	return !v || query_true(c, name);
}

/* A GET of a collection (not a watch): the lister's, without the global lock. */
static bool is_list(struct MHD_Connection *c, const char *url, const char *method, struct route *r)
{
	if (strcmp(method, "GET") != 0 || api_parse_route(url, r) || r->podnetwork || r->has_name)
		return false;
	return query_bool_ok(c, "watch") && !query_true(c, "watch");
}

/* ------------------------------------------------------------------ handlers */

static enum MHD_Result handle_podnetwork(struct api *a, struct MHD_Connection *c, struct request *rq,
					 json_t *body)
{
	const char *action = json_string_value(json_object_get(body, "action"));
	const char *to = json_string_value(json_object_get(body, "to"));
	json_t *projects = json_object_get(body, "projects"), *p, *out = NULL;
	const char *names[1024];
	size_t i, n = 0;
	enum podnet_action act;
	struct status st = { 0 };
	int64_t rev = 0;

	if (!action)
		return fail(a, c, rq, 400, "BadRequest", "%s", "action: required (join-projects, isolate-projects, make-projects-global)");
	if (strcmp(action, "join-projects") == 0)
		act = PODNET_JOIN;
	else if (strcmp(action, "isolate-projects") == 0)
		act = PODNET_ISOLATE;
	else if (strcmp(action, "make-projects-global") == 0)
		act = PODNET_GLOBAL;
	else
		return fail(a, c, rq, 400, "BadRequest", "action: unknown action '%s'", action);
	if (!json_is_array(projects) || json_array_size(projects) > 1024)
		return fail(a, c, rq, 400, "BadRequest", "%s", "projects: a list of at most 1024 names is required");
	json_array_foreach(projects, i, p) {
		if (!json_is_string(p))
			return fail(a, c, rq, 400, "BadRequest", "%s", "projects: every item must be a name");
		names[n++] = json_string_value(p);
	}
	if (registry_podnetwork(a->reg, act, to, names, n, &out, &rev, &st))
		return send_status(a, c, rq, &st);
	(void)watch_hub_written(a->hub, rev);
	return send_json(a, c, rq, 200,
			 json_pack("{s:s, s:s, s:I, s:o}", "apiVersion", "network.openshift.io/v1", "kind",
				   "PodNetworkResult", "revision", (json_int_t)rev, "items", out));
}

/* ------------------------------------------------------------------ node credentials */

/* Every watch stream opened with a credential that is no longer live ends
 * at its next read (lock held). */
static void end_revoked_watches(struct api *a)
{
	watch_hub_lock(a->hub);	/* the streams' flags and resumes are under it */
	for (struct watch_ctx *w = a->watches; w; w = w->next)
		if (w->cred[0] && !w->revoked && !creds_alive(a->creds, w->cred)) {
			w->revoked = true;
			watch_resume(w);
		}
	watch_hub_unlock(a->hub);
}

/* CRED_PATH or CRED_PATH/NAME: true, *name NULL or the name. */
static bool is_cred_path(const char *url, const char **name)
{
	size_t n = strlen(CRED_PATH);

	if (strncmp(url, CRED_PATH, n) != 0)
		return false;
	*name = NULL;
	if (url[n] == 0)
		return true;
	if (url[n] == '/' && url[n + 1] && !strchr(url + n + 1, '/')) {
		*name = url + n + 1;
		return true;
	}
	return false;
}

static void wipe_text(void *p)
{
	explicit_bzero(p, strlen(p));
	free(p);
}

/* An answer that carries a secret: its text is wiped when MHD is done. */
static enum MHD_Result send_secret_json(struct api *a, struct MHD_Connection *c, struct request *rq,
					int code, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!s)
		return MHD_NO;
	resp = MHD_create_response_from_buffer_with_free_callback(strlen(s), s, wipe_text);
	if (!resp) {
		wipe_text(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, (unsigned)code, resp);
	MHD_destroy_response(resp);
	observe(a, code, elapsed(&rq->start));
	return ret;
}

/* POST: {"apiVersion":"weft.io/v1","kind":"NodeCredential","spec":{"nodeName":N}}
 * (apiVersion and kind may be left out; metadata is ignored: the name is
 * made).  The answer is the only place the token ever appears. */
static enum MHD_Result issue_cred(struct api *a, struct MHD_Connection *c, struct request *rq, json_t *body)
{
	const char *av = json_string_value(json_object_get(body, "apiVersion"));
	const char *kind = json_string_value(json_object_get(body, "kind"));
	json_t *spec = json_object_get(body, "spec"), *out = NULL;
	const char *node = json_string_value(json_object_get(spec, "nodeName"));
	char token[CRED_TOKEN_LEN + 1];
	struct status st = { 0 };
	enum MHD_Result ret;
	const char *key;
	json_t *v;

	if ((json_object_get(body, "apiVersion") && (!av || strcmp(av, CRED_API_VERSION) != 0)) ||
	    (json_object_get(body, "kind") && (!kind || strcmp(kind, "NodeCredential") != 0)))
		return fail(a, c, rq, 400, "BadRequest", "%s", "the body must be a NodeCredential of " CRED_API_VERSION);
	json_object_foreach(body, key, v)
		if (strcmp(key, "apiVersion") && strcmp(key, "kind") && strcmp(key, "metadata") && strcmp(key, "spec"))
			return fail(a, c, rq, 400, "BadRequest", "%.64s: unknown field of a NodeCredential", key);
	if (!node)
		return fail(a, c, rq, 422, "Invalid", "%s", "spec.nodeName: required (the node the credential is for)");
	if (creds_issue(a->creds, a->reg->store, node, token, sizeof(token), &out, &st))
		return send_status(a, c, rq, &st);
	explicit_bzero(token, sizeof(token));
	ret = send_secret_json(a, c, rq, 201, out);
	/* jansson's copy of the token, before the object is freed */
	v = json_object_get(json_object_get(out, "status"), "token");
	if (json_string_value(v))
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
	json_decref(out);
	return ret;
}

/* A credential list's labelSelector and fieldSelector (metadata.name,
 * metadata.namespace, always "", and spec.nodeName: selector.h), as any
 * list's: items keeps what they select.  0, or -1 with st set (400 naming
 * the parameter, as list_query.c). */
static int creds_select(struct MHD_Connection *c, json_t *items, struct status *st)
{
	const char *labels = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labelSelector");
	const char *fields = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");
	struct selector sel = { 0 };
	struct selector_view v;
	char why[512];
	int rc = -1;

	if (selector_parse_labels(&sel, labels, why, sizeof(why))) {
		status_set(st, 400, "BadRequest", "labelSelector '%.200s': %s", labels, why);
		goto out;
	}
	if (selector_parse_fields(&sel, NULL, fields, why, sizeof(why))) {
		status_set(st, 400, "BadRequest", "fieldSelector '%.200s': %s", fields, why);
		goto out;
	}
	for (size_t i = json_array_size(items); i-- > 0;) {
		selector_view_of(json_array_get(items, i), &v);
		if (!selector_matches(&sel, &v))
			json_array_remove(items, i);
	}
	rc = 0;
out:
	selector_free(&sel);
	return rc;
}

/* /apis/weft.io/v1/nodecredentials[/NAME]: the admin's only (authz_route). */
static enum MHD_Result handle_creds(struct api *a, struct MHD_Connection *c, struct request *rq,
				    const char *method, const char *name, json_t *body)
{
	struct status st = { 0 };
	json_t *out = NULL;
	int err;

	if (strcmp(method, "GET") == 0 && !name) {
		if (creds_list(a->reg->store, &out, &st) || creds_select(c, out, &st)) {
			json_decref(out);
			return send_status(a, c, rq, &st);
		}
		return send_json(a, c, rq, 200,
				 json_pack("{s:s, s:s, s:{}, s:o}", "apiVersion", CRED_API_VERSION, "kind",
					   "NodeCredentialList", "metadata", "items", out));
	}
	if (strcmp(method, "POST") == 0 && !name)
		return issue_cred(a, c, rq, body);
	if (strcmp(method, "GET") == 0 && name)
		err = creds_get(a->reg->store, name, &out, &st);
	else if (strcmp(method, "DELETE") == 0 && name) {
		err = creds_revoke(a->creds, a->reg->store, name, &out, &st);
		if (!err)
			end_revoked_watches(a);
	} else
		return fail(a, c, rq, 405, "MethodNotAllowed", "%s is not allowed on this path", method);
	if (err)
		return send_status(a, c, rq, &st);
	return send_json(a, c, rq, 200, out);
}

/* A metric made from one integer field of a JSON annotation on each Node. */
struct node_gauge {
	const char *key, *metric, *help, *type;
};

/* One gauge (or counter) per entry of m, per node whose annotation ann
 * parses and carries the entry's key as an integer. */
static void annotation_metrics(FILE *f, const json_t *items, const char *ann_name,
			       const struct node_gauge *m, size_t n)
{
	const json_t *node;
	size_t i;

	for (size_t k = 0; k < n; k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m[k].metric, m[k].help, m[k].metric, m[k].type);
		json_array_foreach(items, i, node) {
			const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
			const char *r = json_string_value(json_object_get(ann, ann_name));
			json_t *o, *v;

			if (!r || !obj_name(node) || !(o = json_loads(r, 0, NULL)))
				continue;
			v = json_object_get(o, m[k].key);
			if (json_is_integer(v))
				fprintf(f, "%s{node=\"%s\"} %" JSON_INTEGER_FORMAT "\n", m[k].metric,
					obj_name(node), json_integer_value(v));
			json_decref(o);
		}
	}
}

/* NetworkPolicy on each node (the annotation weft.io/policy): its maps'
 * pressure, as gauges per node. */
static void policy_metrics(FILE *f, const json_t *items)
{
	static const struct node_gauge m[] = {
		{ "rules", "weft_policy_rules", "NetworkPolicy rules (weft_policy keys) a node wrote.", "gauge" },
		{ "rulesCapacity", "weft_policy_rules_capacity", "Capacity of a node's weft_policy.", "gauge" },
		{ "mapFull", "weft_policy_map_full_total", "Rule sets or prefixes a node could not write "
		  "for lack of room, since its agent started.", "counter" },
		{ "connections", "weft_policy_connections", "Connections a node tracks for NetworkPolicy "
		  "(weft_policy_ct entries).", "gauge" },
		{ "connectionsCapacity", "weft_policy_connections_capacity", "Capacity of a node's "
		  "weft_policy_ct.", "gauge" },
	};

	annotation_metrics(f, items, "weft.io/policy", m, sizeof(m) / sizeof(m[0]));
}

/* Pod addresses on each node (the annotation weft.io/ipam): leased,
 * quarantined (held out of the pool by a .bad lease file until an operator
 * deletes it) and the subnet's capacity; an ADD is refused once the first
 * two add up to the third. */
static void ipam_metrics(FILE *f, const json_t *items)
{
	static const struct node_gauge m[] = {
		{ "leases", "weft_ipam_leases", "Pod addresses a node has leased.", "gauge" },
		{ "quarantined", "weft_ipam_quarantined", "Pod addresses a node holds out of its pool "
		  "for quarantined lease files (<ip>.bad; deleting the file returns the address).",
		  "gauge" },
		{ "capacity", "weft_ipam_capacity", "Pod addresses in a node's subnet (hosts less the "
		  "gateway).", "gauge" },
	};

	annotation_metrics(f, items, "weft.io/ipam", m, sizeof(m) / sizeof(m[0]));
}

/* What the agents report on their Nodes (annotations weft.io/drops and
 * weft.io/applied-revision), as metrics per node. */
static void node_metrics(struct api *a, FILE *f)
{
	json_t *items = NULL, *node, *drops;
	struct status st = { 0 };
	int64_t rev;
	size_t i;

	if (registry_list(a->reg, kind_get(KIND_NODE), NULL, &items, &rev, &st) < 0)
		return;
	fprintf(f, "# HELP weft_drops_total Packets the data plane dropped, by node and reason "
		   "(as the node's agent last reported).\n# TYPE weft_drops_total counter\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *d = json_string_value(json_object_get(ann, "weft.io/drops"));
		const char *name = obj_name(node), *reason;
		json_t *count;

		if (!d || !name || !(drops = json_loads(d, 0, NULL)))
			continue;
		json_object_foreach(drops, reason, count)
			if (json_is_integer(count) && model_dns1123_label(reason))
				fprintf(f, "weft_drops_total{node=\"%s\",reason=\"%s\"} %" JSON_INTEGER_FORMAT "\n",
					name, reason, json_integer_value(count));
		json_decref(drops);
	}
	fprintf(f, "# HELP weft_node_applied_revision Store revision of the NetNamespaces a node's "
		   "data plane has applied.\n# TYPE weft_node_applied_revision gauge\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *r = json_string_value(json_object_get(ann, "weft.io/applied-revision"));

		if (r && obj_name(node))
			fprintf(f, "weft_node_applied_revision{node=\"%s\"} %lld\n", obj_name(node),
				strtoll(r, NULL, 10));
	}
	fprintf(f, "# HELP weft_service_map_full_total Service map writes a node's agent could not "
		   "make for lack of room, since it started.\n"
		   "# TYPE weft_service_map_full_total counter\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *r = json_string_value(json_object_get(ann, "weft.io/service-map-full"));

		if (r && obj_name(node))
			fprintf(f, "weft_service_map_full_total{node=\"%s\"} %llu\n", obj_name(node),
				strtoull(r, NULL, 10));
	}
	policy_metrics(f, items);
	ipam_metrics(f, items);
	json_decref(items);
}

static void conns_metrics(struct api *a, FILE *f)
{
	struct conns_stats s;

	conns_stats(a->conns, &s);
	fprintf(f, "# HELP weft_connections_open Client connections open.\n"
		   "# TYPE weft_connections_open gauge\nweft_connections_open %" PRIu64 "\n", s.open);
	fprintf(f, "# HELP weft_connections_limit Client connections the controller serves at most "
		   "(--max-connections).\n# TYPE weft_connections_limit gauge\nweft_connections_limit %u\n",
		a->max_connections);
	fprintf(f, "# HELP weft_connections_per_client_limit Connections one client address may hold, "
		   "watch streams not counted (--max-connections-per-client).\n"
		   "# TYPE weft_connections_per_client_limit gauge\nweft_connections_per_client_limit %u\n",
		a->max_per_client);
	fprintf(f, "# HELP weft_connections_refused_total Connections refused at accept: their client "
		   "address held its limit.\n# TYPE weft_connections_refused_total counter\n"
		   "weft_connections_refused_total %" PRIu64 "\n", s.refused);
	fprintf(f, "# HELP weft_connections_over_limit_total Connections refused at accept: the server "
		   "held its limit (--max-connections).\n# TYPE weft_connections_over_limit_total counter\n"
		   "weft_connections_over_limit_total %" PRIu64 "\n", s.over_limit);
	fprintf(f, "# HELP weft_connections_timeouts_total Connections shut down for want of a complete "
		   "request head: within --header-timeout of accept (phase header) or --idle-timeout of "
		   "the last response (phase idle).\n# TYPE weft_connections_timeouts_total counter\n"
		   "weft_connections_timeouts_total{phase=\"header\"} %" PRIu64 "\n"
		   "weft_connections_timeouts_total{phase=\"idle\"} %" PRIu64 "\n",
		s.header_timeouts, s.idle_timeouts);
}

/* ------------------------------------------------------------------ page */

/* GET /ui/FILE: the cluster page's file, with the headers that keep it
 * from loading anything but its own files and the API, or being framed;
 * /ui goes to /ui/. */
static enum MHD_Result answer_ui(struct api *a, struct MHD_Connection *c, struct request *rq, const char *url)
{
	const struct embedded_file *f;
	struct MHD_Response *resp;
	const char *type = NULL;
	enum MHD_Result ret;
	unsigned code = 200;

	if (strcmp(url, "/ui") == 0) {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		code = 301;
		if (resp)
			MHD_add_response_header(resp, "Location", UI_PREFIX);
	} else if (!(f = ui_file(url, &type))) {
		return fail(a, c, rq, 404, "NotFound", "the server could not find the requested resource (%.200s)", url);
	} else {
		resp = MHD_create_response_from_buffer(f->len, (void *)f->text, MHD_RESPMEM_PERSISTENT);
		if (resp)
			MHD_add_response_header(resp, "Content-Type", type);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	observe(a, (int)code, elapsed(&rq->start));
	return ret;
}

/* ------------------------------------------------------------------ flows */

/* One client of the flows relay (flows_relay.h): its connection, suspended
 * while the stream has nothing, resumed by the stream's threads. */
struct flows_client {
	struct MHD_Connection *conn;
	struct flows_stream *s;
};

static void flows_suspend(void *arg)
{
	MHD_suspend_connection(((struct flows_client *)arg)->conn);
}

static void flows_wake(void *arg)
{
	MHD_resume_connection(((struct flows_client *)arg)->conn);
}

static ssize_t flows_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct flows_client *fc = cls;
	ssize_t n = flows_stream_read(fc->s, buf, max, flows_suspend, fc);

	(void)pos;
	return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void flows_client_free(void *cls)
{
	struct flows_client *fc = cls;

	flows_stream_close(fc->s);	/* no wake after it: fc may go */
	free(fc);
}

/* flows_lookup_fn: where node serves its flows now, from its stored Node
 * (a relay's node thread, reading a node again; the global lock for the
 * store, which api_stop outlives: flows_relay_destroy waits for these
 * threads). */
static int flows_lookup(void *arg, const char *node, struct flows_target *out)
{
	struct api *a = arg;
	struct store_kv kv = { 0 };
	char key[512];
	json_t *obj;
	int rc;

	if (obj_key(kind_get(KIND_NODE), NULL, node, key, sizeof(key)) < 0)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	rc = a->stopping ? -ECANCELED : store_get(a->reg->store, key, &kv, NULL);
	pthread_mutex_unlock(&a->lock);
	if (rc < 0)
		return rc;
	obj = json_loadb(kv.value, kv.value_len, 0, NULL);
	store_kv_free(&kv);
	rc = obj ? flows_target_of(obj, out) : -EIO;
	json_decref(obj);
	return rc;
}

/* The stored Nodes as a JSON array (new ref), or NULL. */
static json_t *stored_nodes(struct api *a)
{
	struct store_kv_list l = { 0 };
	char prefix[128];
	json_t *arr = json_array();

	snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", kind_get(KIND_NODE)->plural);
	if (!arr || store_range(a->reg->store, prefix, NULL, 0, &l)) {
		json_decref(arr);
		return NULL;
	}
	for (size_t i = 0; i < l.n; i++) {
		json_t *o = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);

		if (o)
			json_array_append_new(arr, o);
	}
	store_kv_list_free(&l);
	return arr;
}

/* GET /apis/network.weft.io/v1/flows[?follow=true&node=&verdict=&ip=]: the
 * admin's (permitted: no route, so no node's); under the global lock, for
 * the read of the Nodes. */
static enum MHD_Result handle_flows(struct api *a, struct MHD_Connection *c, struct request *rq)
{
	const char *follow = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	const char *verdict = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "verdict");
	const char *ip = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ip");
	const char *node = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "node");
	struct flows_query q = { 0 };
	struct flows_target *t = NULL;
	struct flows_client *fc;
	struct MHD_Response *resp;
	size_t n = 0, skipped = 0;
	struct in_addr addr;
	enum MHD_Result ret;
	json_t *nodes;
	int rc;

	if (!a->relay)
		return fail(a, c, rq, 503, "ServiceUnavailable", "%s",
			    "flows: this controller has no relay certificate (it serves plain HTTP)");
	if (follow && strcmp(follow, "true") && strcmp(follow, "false"))
		return fail(a, c, rq, 400, "BadRequest", "follow: want true or false, not \"%.32s\"", follow);
	if (verdict && strcmp(verdict, "dropped") && strcmp(verdict, "forwarded"))
		return fail(a, c, rq, 400, "BadRequest", "verdict: want dropped or forwarded, not \"%.32s\"", verdict);
	if (ip && inet_pton(AF_INET, ip, &addr) != 1)
		return fail(a, c, rq, 400, "BadRequest", "ip: want an IPv4 address, not \"%.32s\"", ip);
	q.follow = follow && strcmp(follow, "true") == 0;
	snprintf(q.verdict, sizeof(q.verdict), "%s", verdict ? verdict : "");
	snprintf(q.ip, sizeof(q.ip), "%s", ip ? ip : "");
	if (!(nodes = stored_nodes(a)))
		return fail(a, c, rq, 500, "InternalError", "%s", "flows: cannot read the Nodes");
	rc = flows_targets(nodes, node, &t, &n, &skipped);
	json_decref(nodes);
	if (rc == -E2BIG)
		return fail(a, c, rq, 400, "BadRequest", "flows: more than %d nodes; name one with ?node=",
			    FLOWS_RELAY_NODES_MAX);
	if (rc < 0)
		return MHD_NO;
	if (!n) {
		free(t);
		return fail(a, c, rq, 404, "NotFound", "flows: %s%s%s serves none (no %s annotation)",
			    node ? "node \"" : "no node", node ? node : "", node ? "\"" : "", FLOWS_ANNOTATION);
	}
	if (!(fc = calloc(1, sizeof(*fc)))) {
		free(t);
		return MHD_NO;
	}
	fc->conn = c;
	fc->s = flows_stream_open(a->relay, t, n, &q, flows_wake, fc);
	free(t);
	if (!fc->s) {
		free(fc);
		return fail(a, c, rq, 503, "ServiceUnavailable", "flows: cannot start the relay: %s", strerror(errno));
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, flows_reader, fc, flows_client_free);
	if (!resp) {
		flows_client_free(fc);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	observe(a, ret == MHD_YES ? 200 : 503, elapsed(&rq->start));
	if (ret == MHD_YES && q.follow)
		conns_set_counted(a->conns, conn_of(c), false);	/* a stream, as a watch */
	(void)skipped;
	return ret;
}

static enum MHD_Result handle_metrics(struct api *a, struct MHD_Connection *c, struct request *rq)
{
	struct alloc_usage u;
	static const char *pools[POOL_COUNT] = { "hostsubnet", "vnid", "clusterip", "nodeport", "vip" };
	struct metrics *m = a->metrics;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint64_t cum = 0, resumes, writes, dropped;
	int64_t rev = 0;

	if (!f)
		return MHD_NO;
	fprintf(f, "# HELP weft_objects Objects stored, by kind.\n# TYPE weft_objects gauge\n");
	for (int k = 0; k < KIND_COUNT; k++) {
		const struct kind_info *ki = kind_get((enum kind_id)k);
		char prefix[128];
		size_t n = 0;
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", ki->plural);
		if (store_count(a->reg->store, prefix, &n) == 0)
			fprintf(f, "weft_objects{kind=\"%s\"} %zu\n", ki->kind, n);
	}
	if (registry_usage(a->reg, &u) == 0) {
		fprintf(f, "# HELP weft_allocations_used Allocated items, by pool.\n# TYPE weft_allocations_used gauge\n");
		for (int p = 0; p < POOL_COUNT; p++)
			fprintf(f, "weft_allocations_used{pool=\"%s\"} %" PRIu64 "\n", pools[p], u.used[p]);
		fprintf(f, "# HELP weft_allocations_free Free items, by pool.\n# TYPE weft_allocations_free gauge\n");
		for (int p = 0; p < POOL_COUNT; p++)
			fprintf(f, "weft_allocations_free{pool=\"%s\"} %" PRIu64 "\n", pools[p],
				u.total[p] > u.used[p] ? u.total[p] - u.used[p] : 0);
	}
	fprintf(f, "# HELP weft_allocation_failures_total Allocations refused because a pool was full.\n"
		   "# TYPE weft_allocation_failures_total counter\n");
	for (int p = 0; p < POOL_COUNT; p++)
		fprintf(f, "weft_allocation_failures_total{pool=\"%s\"} %" PRIu64 "\n", pools[p],
			m->alloc_failures[p]);
	fprintf(f, "# HELP weft_endpoints_writes_total Endpoints written by the endpoints controller.\n"
		   "# TYPE weft_endpoints_writes_total counter\nweft_endpoints_writes_total %" PRIu64 "\n",
		m->endpoints_writes);
	fprintf(f, "# HELP weft_endpoints_deletes_total Endpoints deleted by the endpoints controller.\n"
		   "# TYPE weft_endpoints_deletes_total counter\nweft_endpoints_deletes_total %" PRIu64 "\n",
		m->endpoints_deletes);
	fprintf(f, "# HELP weft_endpoints_recomputed_total Services whose Endpoints the endpoints controller computed.\n"
		   "# TYPE weft_endpoints_recomputed_total counter\nweft_endpoints_recomputed_total %" PRIu64 "\n",
		   m->endpoints_recomputes);
	fprintf(f, "# HELP weft_endpoints_failures_total Endpoints writes that failed (retried).\n"
		   "# TYPE weft_endpoints_failures_total counter\nweft_endpoints_failures_total %" PRIu64 "\n",
		m->endpoints_failures);
	fprintf(f, "# HELP weft_endpointslice_writes_total EndpointSlices written by the endpoints controller.\n"
		   "# TYPE weft_endpointslice_writes_total counter\nweft_endpointslice_writes_total %" PRIu64 "\n",
		m->endpointslice_writes);
	fprintf(f, "# HELP weft_endpointslice_deletes_total EndpointSlices deleted by the endpoints controller.\n"
		   "# TYPE weft_endpointslice_deletes_total counter\nweft_endpointslice_deletes_total %" PRIu64 "\n",
		m->endpointslice_deletes);
	fprintf(f, "# HELP weft_endpointslice_failures_total EndpointSlice writes that failed (retried).\n"
		   "# TYPE weft_endpointslice_failures_total counter\nweft_endpointslice_failures_total %" PRIu64 "\n",
		m->endpointslice_failures);
	fprintf(f, "# HELP weft_podpeerslice_writes_total PodPeerSlices written by the endpoints controller.\n"
		   "# TYPE weft_podpeerslice_writes_total counter\nweft_podpeerslice_writes_total %" PRIu64 "\n",
		m->podpeerslice_writes);
	fprintf(f, "# HELP weft_podpeerslice_deletes_total PodPeerSlices deleted by the endpoints controller.\n"
		   "# TYPE weft_podpeerslice_deletes_total counter\nweft_podpeerslice_deletes_total %" PRIu64 "\n",
		m->podpeerslice_deletes);
	fprintf(f, "# HELP weft_podpeerslice_failures_total PodPeerSlice writes that failed (retried).\n"
		   "# TYPE weft_podpeerslice_failures_total counter\nweft_podpeerslice_failures_total %" PRIu64 "\n",
		m->podpeerslice_failures);
	watch_hub_lock(a->hub);	/* the streams count under it */
	resumes = m->watch_resumes;
	writes = m->watch_writes;
	dropped = m->watchers_dropped_slow;
	watch_hub_unlock(a->hub);
	fprintf(f, "# HELP weft_watchers Open watch streams.\n# TYPE weft_watchers gauge\nweft_watchers %zu\n",
		watch_hub_watchers(a->hub));
	fprintf(f, "# HELP weft_watch_resumes_total Watch streams woken because events arrived.\n"
		   "# TYPE weft_watch_resumes_total counter\nweft_watch_resumes_total %" PRIu64 "\n",
		resumes);
	fprintf(f, "# HELP weft_watch_writes_total Writes of event data to watch streams.\n"
		   "# TYPE weft_watch_writes_total counter\nweft_watch_writes_total %" PRIu64 "\n",
		writes);
	fprintf(f, "# HELP weft_watchers_dropped_total Watch streams ended because they fell behind.\n"
		   "# TYPE weft_watchers_dropped_total counter\nweft_watchers_dropped_total %" PRIu64 "\n",
		dropped);
	{
		size_t parked, blocked;

		watch_sender_count(a->sender, &parked, &blocked);
		fprintf(f, "# HELP weft_watch_streams_parked Watch streams written by the sender threads.\n"
			   "# TYPE weft_watch_streams_parked gauge\nweft_watch_streams_parked %zu\n", parked);
		fprintf(f, "# HELP weft_watch_streams_blocked Parked watch streams waiting for a full socket.\n"
			   "# TYPE weft_watch_streams_blocked gauge\nweft_watch_streams_blocked %zu\n", blocked);
	}
	conns_metrics(a, f);
	if (store_revision(a->reg->store, &rev) == 0)
		fprintf(f, "# HELP weft_store_revision The store's revision.\n# TYPE weft_store_revision gauge\n"
			   "weft_store_revision %" PRId64 "\n", rev);
	node_metrics(a, f);
	if (a->workers) {
		struct inline_stats is;

		inline_stats(a->inl, monotime_ms(), &is);
		fprintf(f, "# HELP weft_store_calls_total Gets and writes on the store (etcd), by the thread that "
			   "waited on it: the server thread that read the request, or a worker.\n"
			   "# TYPE weft_store_calls_total counter\n"
			   "weft_store_calls_total{thread=\"server\"} %" PRIu64 "\n"
			   "weft_store_calls_total{thread=\"worker\"} %" PRIu64 "\n"
			   "# HELP weft_store_calls_backing_off 1 while a slow store sends every call to the workers.\n"
			   "# TYPE weft_store_calls_backing_off gauge\nweft_store_calls_backing_off %d\n",
			is.inline_calls, is.queued_calls, is.backing_off ? 1 : 0);
	}
	pthread_mutex_lock(&a->stats_lock);
	fprintf(f, "# HELP weft_http_requests_total HTTP requests answered, by status class.\n"
		   "# TYPE weft_http_requests_total counter\n");
	for (int k = 1; k < 6; k++)
		fprintf(f, "weft_http_requests_total{code=\"%dxx\"} %" PRIu64 "\n", k, m->requests_by_class[k]);
	fprintf(f, "# HELP weft_http_request_duration_seconds Time to answer a request.\n"
		   "# TYPE weft_http_request_duration_seconds histogram\n");
	for (size_t b = 0; b < NBOUNDS; b++) {
		cum += m->latency_buckets[b];
		fprintf(f, "weft_http_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", latency_bounds[b], cum);
	}
	cum += m->latency_buckets[NBOUNDS];
	fprintf(f, "weft_http_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
	fprintf(f, "weft_http_request_duration_seconds_sum %g\n", m->latency_sum);
	fprintf(f, "weft_http_request_duration_seconds_count %" PRIu64 "\n", m->latency_count);
	fprintf(f, "# HELP weft_requests_throttled_total Node credentials' writes refused over their budget (429).\n"
		   "# TYPE weft_requests_throttled_total counter\nweft_requests_throttled_total %" PRIu64 "\n",
		m->requests_throttled);
	fprintf(f, "# HELP weft_apply_items_total Items of batched applies (POST " APPLY_PATH "), by result.\n"
		   "# TYPE weft_apply_items_total counter\n");
	for (int r = APPLY_CREATED; r < APPLY_RESULTS; r++)
		fprintf(f, "weft_apply_items_total{result=\"%s\"} %" PRIu64 "\n", apply_result_name((enum apply_result)r),
			m->apply_items[r]);
	pthread_mutex_unlock(&a->stats_lock);
	fclose(f);
	return send_body(a, c, rq, 200, "text/plain; version=0.0.4", buf, len);
}

/* A request as prepare() leaves it for dispatch(). */
struct call {
	enum { CALL_METRICS, CALL_FLOWS, CALL_WATCH, CALL_LIST, CALL_GET, CALL_CREATE, CALL_REPLACE, CALL_DELETE,
	       CALL_PODNETWORK, CALL_CREDS, CALL_PATCH, CALL_APPLY } what;
	struct route r;
	const char *method;	/* CALL_CREDS: the request's (MHD's) */
	const char *cred_name;	/* CALL_CREDS: the credential the path names, or NULL */
	json_t *body;		/* a write's, checked (registry_check_write); a DELETE's options; a PATCH's patch; or NULL */
	enum patch_type patch_type;	/* CALL_PATCH: its Content-Type's */
	int64_t want_rev;	/* a DELETE's precondition (0: none) */
	json_t *out;		/* dispatch's answer, sent after the lock (code) */
	int code;
	struct list_query q;	/* CALL_WATCH, CALL_LIST: the query, checked (list_query_free) */
	int64_t get_rv;		/* CALL_GET: resourceVersion, -1 none */
	bool dry_run;		/* dryRun=All: everything but the commit */
	struct apply_batch batch;	/* CALL_APPLY: its items (apply_batch_free) */
};

/* A write's registry flags (controller.h). */
static unsigned write_flags(const struct call *call)
{
	return (call->what == CALL_CREATE ? REGISTRY_CREATE : 0) | (call->dry_run ? REGISTRY_DRY_RUN : 0) |
	       (call->r.status ? REGISTRY_STATUS : REGISTRY_MAIN);
}

/* DeleteOptions' dryRun (kubectl delete --dry-run=server sends it in the
 * body): [] or ["All"], taken out of body into *dry_run; anything else is
 * -EBADMSG, as the query parameter. */
static int delete_dry_run(json_t *body, bool *dry_run, char *msg, size_t len)
{
	json_t *v = json_object_get(body, "dryRun"), *item;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 1)
		goto bad;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item) || strcmp(json_string_value(item), "All") != 0)
			goto bad;
		*dry_run = true;
	}
	json_object_del(body, "dryRun");
	return 0;
bad:
	snprintf(msg, len, "%s", "dryRun: unsupported value (supported: [\"All\"])");
	return -EBADMSG;
}

/* ?fieldValidation= of a create, replace or patch (openapi.h): Warn
 * keeps the Warning headers for the answer, Strict and a bad value are
 * 400.  0, or -1 with st. */
static int field_validation(struct api *a, struct MHD_Connection *c, struct request *rq, const struct call *call,
			    struct status *st)
{
	enum openapi_body what = call->what != CALL_PATCH	     ? OPENAPI_OBJECT :
				 call->patch_type == PATCH_JSON ? OPENAPI_JSON_PATCH : OPENAPI_MERGE_PATCH;
	char msg[sizeof(st->message)];
	int rc;

	free(rq->warnings);
	rc = openapi_field_validation(a->openapi, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldValidation"),
				      call->r.kind, what, call->body, &rq->warnings, msg, sizeof(msg));
	if (rc == 0)
		return 0;
	if (rc == -ENOMEM)
		status_set(st, 500, "InternalError", "%s", "out of memory");
	else
		status_set(st, 400, "BadRequest", "%s", msg);
	return -1;
}

/* The request's body as JSON: JSON, or YAML (application/yaml, when
 * yaml_ok) decoded to JSON once, and an object unless it may be any
 * value (!yaml_ok: a patch's shape is its type's).  false with *body (a
 * new reference), or true when it answered (*ret: 400, 413). */
static bool decode_body(struct api *a, struct MHD_Connection *c, struct request *rq, bool yaml_ok, json_t **body,
			enum MHD_Result *ret)
{
	bool yaml = yaml_ok && media_type_is(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
					     "application/yaml");
	char msg[sizeof(((struct status *)0)->message)];
	int rc = model_body_decode(rq->body, rq->len, yaml, body, msg, sizeof(msg));

	if (rc) {
		*ret = rc == -E2BIG ? fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg)
		     : rc == -EBADMSG ? fail(a, c, rq, 400, "BadRequest", "%s", msg)
				      : fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
		return true;
	}
	if (!json_is_object(*body) && yaml_ok) {
		json_decref(*body);
		*body = NULL;
		*ret = fail(a, c, rq, 400, "BadRequest", "%s", "the body must be a JSON object");
		return true;
	}
	return false;
}

/* POST APPLY_PATH (apply_batch.h): the List parsed and its items named,
 * without a lock; the applier does the rest.  true when it answered. */
static bool prepare_apply(struct api *a, struct MHD_Connection *c, struct request *rq, const char *method,
			  struct call *call, enum MHD_Result *ret)
{
	static const char *const refused[] = { "dryRun", "fieldValidation" };
	struct status st = { 0 };
	const char *mode;
	json_t *body = NULL;

	if (strcmp(method, "POST") != 0) {
		*ret = fail(a, c, rq, 405, "MethodNotAllowed", "%s is not allowed on %s (POST a v1 List)", method,
			    APPLY_PATH);
		return true;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, refused[i])) {
			*ret = fail(a, c, rq, 400, "BadRequest", "%s: not supported on %s", refused[i], APPLY_PATH);
			return true;
		}
	mode = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
	if (mode && strcmp(mode, "apply") != 0 && strcmp(mode, "create") != 0) {
		*ret = fail(a, c, rq, 400, "BadRequest", "mode: Unsupported value: \"%.64s\": supported values: "
			    "\"apply\", \"create\"", mode);
		return true;
	}
	if (decode_body(a, c, rq, true, &body, ret))
		return true;
	if (apply_batch_parse(body, APPLY_MAX_ITEMS, &call->batch, &st)) {
		json_decref(body);
		*ret = send_status(a, c, rq, &st);
		return true;
	}
	json_decref(body);
	call->batch.create_only = mode && strcmp(mode, "create") == 0;
	call->what = CALL_APPLY;
	return false;
}

/* Everything about a request that needs no lock, in the order its
 * failures are reported: the route, the body (parsed, and for a create or
 * replace checked against the path and validated), the query.  true when
 * it answered (*ret), else call is for dispatch. */
static bool prepare(struct api *a, struct MHD_Connection *c, struct request *rq, const char *url,
		    const char *method, struct call *call, enum MHD_Result *ret)
{
	struct route *r = &call->r;
	struct status st = { 0 };
	json_t *body = NULL;
	bool is_get = strcmp(method, "GET") == 0, is_post = strcmp(method, "POST") == 0,
	     is_put = strcmp(method, "PUT") == 0, is_delete = strcmp(method, "DELETE") == 0,
	     is_patch = strcmp(method, "PATCH") == 0;
	const char *dry_run = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "dryRun");
	const char *cred_name = NULL;
	bool cred_path = is_cred_path(url, &cred_name);

	memset(call, 0, sizeof(*call));
	if (strcmp(url, "/metrics") == 0 && is_get) {
		call->what = CALL_METRICS;
		return false;
	}
	if (strcmp(url, FLOWS_PATH) == 0 && is_get) {
		call->what = CALL_FLOWS;
		return false;
	}
	if (strcmp(url, APPLY_PATH) == 0)
		return prepare_apply(a, c, rq, method, call, ret);
	if (api_parse_route(url, r) && !cred_path) {
		*ret = fail(a, c, rq, 404, "NotFound", "the server could not find the requested resource (%s)", url);
		return true;
	}
	if (is_delete && rq->len && !content_type_ok(c, &st)) {
		*ret = send_status(a, c, rq, &st);
		return true;
	}
	/* as kube-apiserver: "All" is the one dry run; empty is none */
	if ((is_post || is_put || is_delete || is_patch) && dry_run && *dry_run) {
		if (strcmp(dry_run, "All") != 0) {
			*ret = fail(a, c, rq, 400, "BadRequest", "dryRun: unsupported value '%.64s' (supported: All)",
				    dry_run);
			return true;
		}
		call->dry_run = true;
	}
	if ((is_post || is_put || is_patch || (is_delete && rq->len)) && decode_body(a, c, rq, !is_patch, &body, ret))
		return true;
	call->body = body;
	if (r->kind && !cred_path) {
		const char *named = r->has_name ? r->name : json_is_object(body) ? obj_name(body) : NULL;

		rq->about_kind = r->kind;
		snprintf(rq->about_name, sizeof(rq->about_name), "%s", named ? named : "");
	}
	if (cred_path) {
		call->what = CALL_CREDS;
		call->method = method;
		call->cred_name = cred_name;
		return false;
	}
	if (r->podnetwork) {
		if (!is_post)
			goto not_allowed_podnetwork;
		call->what = CALL_PODNETWORK;
		return false;
	}
	if (r->kind->namespaced && !r->ns[0] && (is_post || r->has_name)) {
		*ret = fail(a, c, rq, 404, "NotFound", "%s: a namespaced resource needs /namespaces/NS/ in its path",
			    url);
		goto answered;
	}
	if (r->status && !is_get && !is_put && !is_patch) {
		*ret = fail(a, c, rq, 405, "MethodNotAllowed", "%s is not allowed on a status subresource (GET, PUT, PATCH)",
			    method);
		goto answered;
	}
	if (is_get) {
		bool watching;

		if (!query_bool_ok(c, "watch")) {
			*ret = fail(a, c, rq, 400, "BadRequest", "watch: '%.64s' is not a boolean",
				    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch"));
			goto answered;
		}
		watching = query_true(c, "watch");
		call->what = watching ? CALL_WATCH : r->has_name ? CALL_GET : CALL_LIST;
		if (watching && r->status) {
			*ret = fail(a, c, rq, 405, "MethodNotAllowed", "%s", "watch is not allowed on a status subresource");
			goto answered;
		}
		/* a get or list is served from the latest state, but a
		 * resourceVersion that is not one, or is one from the future,
		 * is still an error */
		if (call->what == CALL_GET ? query_revision(c, "resourceVersion", &call->get_rv, &st)
					   : list_query_parse(&call->q, r->kind, watching, query_arg, c, &st)) {
			*ret = send_status(a, c, rq, &st);
			goto answered;
		}
		return false;
	}
	if ((is_post && !r->has_name) || (is_put && r->has_name)) {
		/* the registry's own first steps, which read nothing of its state */
		call->what = is_post ? CALL_CREATE : CALL_REPLACE;
		if (registry_check_write(r->kind, r->ns, is_put ? r->name : NULL, body, is_post && !r->status, &st) ||
		    field_validation(a, c, rq, call, &st)) {
			*ret = send_status(a, c, rq, &st);
			goto answered;
		}
		return false;
	}
	if (is_delete && r->has_name) {
		/* DeleteOptions: only preconditions.resourceVersion is honoured */
		char msg[sizeof(st.message)];
		int rc = delete_dry_run(body, &call->dry_run, msg, sizeof(msg));

		if (!rc)
			rc = model_delete_options(r->kind, body, &call->want_rev, msg, sizeof(msg));

		if (rc) {
			*ret = rc == -E2BIG ? fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg)
					    : fail(a, c, rq, 400, "BadRequest", "%s", msg);
			goto answered;
		}
		call->what = CALL_DELETE;
		return false;
	}
	if (is_patch && r->has_name) {
		/* the Content-Type was checked before the body was read */
		call->what = CALL_PATCH;
		if (!patch_type_ok(c, &call->patch_type, &st) || registry_patch_check(call->patch_type, body, &st) ||
		    field_validation(a, c, rq, call, &st)) {
			*ret = send_status(a, c, rq, &st);
			goto answered;
		}
		return false;
	}
	*ret = fail(a, c, rq, 405, "MethodNotAllowed", "%s is not allowed on this path", method);
	goto answered;
not_allowed_podnetwork:
	*ret = fail(a, c, rq, 405, "MethodNotAllowed", "%s", "podnetwork takes POST");
answered:
	json_decref(body);
	call->body = NULL;
	return true;
}

/* A node's write, decided against what is stored (authz_write, under the
 * global lock); the write then goes only to the object that was checked:
 * a precondition on the revision that was read.  0, or -1 with st set. */
static int authorize_write(struct api *a, struct request *rq, struct call *call, struct status *st)
{
	enum authz_verb v = call->what == CALL_CREATE ? AUTHZ_CREATE :
			    call->what == CALL_REPLACE ? AUTHZ_UPDATE : AUTHZ_DELETE;
	int64_t pin = 0;

	if (rq->who.admin)
		return 0;
	if (authz_write(a->reg, &rq->who, v, &call->r, call->body, &pin, st))
		return -1;
	if (pin && v == AUTHZ_DELETE && !call->want_rev)
		call->want_rev = pin;
	if (pin && v == AUTHZ_UPDATE) {
		json_t *md = json_object_get(call->body, "metadata");
		const char *rv = obj_str(call->body, "metadata.resourceVersion");
		char text[24];

		snprintf(text, sizeof(text), "%" PRId64, pin);
		if (json_is_object(md) && (!rv || !*rv))
			json_object_set_new(md, "resourceVersion", json_string(text));
	}
	return 0;
}

/* A PATCH's patched object, just before it is written (registry_patch):
 * a node's PATCH is the update a PUT of that object would be. */
struct patch_authz {
	struct api *api;
	struct request *rq;
	const struct call *call;
};

static int authorize_patched(void *arg, json_t *obj, struct status *st)
{
	struct patch_authz *p = arg;
	struct call replace = *p->call;

	replace.what = CALL_REPLACE;
	replace.body = obj;
	return authorize_write(p->api, p->rq, &replace, st);
}

/* A get or a write (create, replace, patch, delete) of one object: 0 and
 * call->out (its answer, for the caller to serialise once the lock is
 * free) and call->code, or -1 and st.  A write runs under the global
 * lock, and with yield (REGISTRY_YIELD) lets go of it while etcd has its
 * transaction; a get needs the store alone (the global lock, or a store
 * that takes concurrent calls). */
static int registry_call(struct api *a, struct request *rq, struct call *call, unsigned yield, struct status *st)
{
	struct route *r = &call->r;
	int err;

	call->code = call->what == CALL_CREATE ? 201 : 200;
	switch (call->what) {
	case CALL_GET:
		err = list_revision_check(a->reg->store, call->get_rv, st);
		return err ? err : registry_get(a->reg, r->kind, r->ns, r->name, &call->out, st);
	case CALL_CREATE:
	case CALL_REPLACE:
		if (authorize_write(a, rq, call, st))
			return -1;
		err = registry_write_checked(a->reg, r->kind, r->ns, call->body, write_flags(call) | yield, &call->out,
					     st);
		break;
	case CALL_PATCH:
		err = registry_patch(a->reg, r->kind, r->ns, r->name, call->patch_type, call->body,
				     write_flags(call) | yield, authorize_patched,
				     &(struct patch_authz){ .api = a, .rq = rq, .call = call }, &call->out, st);
		break;
	case CALL_DELETE:
		if (authorize_write(a, rq, call, st))
			return -1;
		err = registry_delete_if(a->reg, r->kind, r->ns, r->name, call->want_rev, write_flags(call) | yield,
					 &call->out, st);
		break;
	default:
		status_set(st, 500, "InternalError", "%s", "not a call of the registry");
		return -1;
	}
	if (err) {
		call->out = NULL;
		return -1;
	}
	/* the write's events to the watchers now; but a write that let go
	 * of the lock on a store that wakes the loop when events come (etcd)
	 * leaves that to the loop: here it would wait, holding the lock, for
	 * its event to come back through the store's watch */
	if (!call->dry_run && !(yield && store_notify_fd(a->reg->store) >= 0) && !store_in_batch(a->reg->store))
		(void)watch_hub_written(a->hub, a->reg->last_write_rev);
	return 0;
}

/* Under the global lock: what needs the registry, the store or the hub.
 * A successful get or write leaves its answer in call->out for the caller
 * to serialise and send once the lock is free; the rest answer here. */
static enum MHD_Result dispatch(struct api *a, struct MHD_Connection *c, struct request *rq, struct call *call)
{
	struct status st = { 0 };

	switch (call->what) {
	case CALL_METRICS:
		return handle_metrics(a, c, rq);
	case CALL_FLOWS:
		return handle_flows(a, c, rq);
	case CALL_WATCH:
		return start_watch(a, c, rq, &call->r, &call->q);
	case CALL_LIST:
		return send_list(a, c, rq, &call->r, &call->q);
	case CALL_PODNETWORK:
		return handle_podnetwork(a, c, rq, call->body);
	case CALL_CREDS:
		return handle_creds(a, c, rq, call->method, call->cred_name, call->body);
	case CALL_GET:
	case CALL_CREATE:
	case CALL_REPLACE:
	case CALL_PATCH:
	case CALL_DELETE:
		return registry_call(a, rq, call, 0, &st) ? send_status(a, c, rq, &st) : MHD_YES;
	default:
		return MHD_NO;
	}
}

/* ------------------------------------------------------- store workers */

/* A get or write on a store that takes concurrent calls (etcd), handed to
 * a worker (workers.h) while its connection is suspended: MHD's threads
 * never wait on the network, and as many calls are with etcd at once as
 * there are workers.  A write takes the global lock and lets go of it
 * while etcd has its transaction (REGISTRY_YIELD); a get takes none. */
struct store_job {
	struct work work;		/* first: the pool's */
	struct api *api;
	struct MHD_Connection *conn;
	struct request *rq;		/* the connection's; alive while it is suspended */
	struct call call;
	struct status st;		/* err: the answer */
	int err;
};

static bool is_store_call(const struct call *call)
{
	return call->what == CALL_GET || call->what == CALL_CREATE || call->what == CALL_REPLACE ||
	       call->what == CALL_PATCH || call->what == CALL_DELETE;
}

static int apply_call(struct api *a, struct request *rq, struct call *call, struct status *st);

/* Run call (a worker's or, inline, an MHD thread's): a write takes the
 * global lock and lets go of it while the store has it; a batch takes it
 * a group at a time.  Its body, query and batch are used up; its answer
 * is call->out, or err with st. */
static int store_call(struct api *a, struct request *rq, struct call *call, struct status *st)
{
	bool write = call->what != CALL_GET;
	int err;

	if (call->what == CALL_APPLY) {
		err = apply_call(a, rq, call, st);	/* takes the lock a group at a time */
	} else {
		if (write)
			pthread_mutex_lock(&a->lock);
		err = registry_call(a, rq, call, REGISTRY_YIELD, st);
		if (write)
			pthread_mutex_unlock(&a->lock);
	}
	json_decref(call->body);
	call->body = NULL;
	list_query_free(&call->q);
	apply_batch_free(&call->batch);
	durable(a);		/* before the answer leaves */
	flush_resumes(a);	/* the streams a write woke */
	return err;
}

static void store_job_run(struct work *w)
{
	struct store_job *j = (struct store_job *)w;

	j->err = store_call(j->api, j->rq, &j->call, &j->st);
	MHD_resume_connection(j->conn);	/* its handler answers (store_answer) */
}

static void store_job_free(struct store_job *j)
{
	if (!j)
		return;
	json_decref(j->call.body);
	json_decref(j->call.out);
	list_query_free(&j->call.q);
	apply_batch_free(&j->call.batch);
	free(j);
}

/* Hand call (its body, query and batch now the job's) to a worker of
 * pool and suspend the connection until it is done. */
static enum MHD_Result store_queue(struct api *a, struct workers *pool, struct MHD_Connection *c, struct request *rq,
				   struct call *call)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (!j) {
		json_decref(call->body);
		list_query_free(&call->q);
		apply_batch_free(&call->batch);
		return fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	}
	j->work.run = store_job_run;
	j->api = a;
	j->conn = c;
	j->rq = rq;
	j->call = *call;
	rq->job = j;
	MHD_suspend_connection(c);	/* before a worker can resume it */
	if (!workers_queue(pool, &j->work)) {
		j->err = -1;
		status_set(&j->st, 503, "ServiceUnavailable", "%s", "the controller is stopping");
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

/* A call's answer: the object (as a Table when asked, for a get), serialised here, outside every lock. */
static enum MHD_Result answer_call(struct api *a, struct MHD_Connection *c, struct request *rq, struct call *call)
{
	json_t *out = call->out;

	call->out = NULL;
	if (out && rq->form == ANSWER_TABLE && call->code == 200 && call->r.has_name && call->r.kind &&
	    call->what == CALL_GET) {
		json_t *t = table_of_object(call->r.kind, out, rq->include, time(NULL));

		json_decref(out);
		out = t;
		if (!t)
			return fail(a, c, rq, 500, "InternalError", "%s", "out of memory");
	}
	return out ? send_json(a, c, rq, call->code, out) : MHD_YES;
}

/* A store call in the MHD thread that read it, when nothing else of the
 * thread can wait behind it (inline_calls.h): no hand-off to a worker
 * and back.  Otherwise, to a worker (store_queue). */
static enum MHD_Result store_inline_or_queue(struct api *a, struct MHD_Connection *c, struct request *rq,
					     struct call *call)
{
	struct link *l = link_of(c);
	struct inline_thread *t = l ? l->home : NULL;
	struct status st = { 0 };
	int err;

	if (!inline_enter(a->inl, t, monotime_ms())) {
		inline_queued(a->inl);
		return store_queue(a, a->workers, c, rq, call);
	}
	err = store_call(a, rq, call, &st);
	inline_leave(a->inl, t, monotime_ms());
	if (err) {
		json_decref(call->out);
		call->out = NULL;
		return send_status(a, c, rq, &st);
	}
	return answer_call(a, c, rq, call);
}

/* The handler's call after the worker resumed the connection. */
static enum MHD_Result store_answer(struct api *a, struct MHD_Connection *c, struct request *rq)
{
	struct store_job *j = rq->job;
	enum MHD_Result ret;

	rq->job = NULL;
	ret = j->err ? send_status(a, c, rq, &j->st) : answer_call(a, c, rq, &j->call);
	store_job_free(j);
	return ret;
}

/* ------------------------------------------------------- batched apply */

static bool within_budget(struct api *a, const char *method, const struct principal *who, struct status *st);

/* A batch's items are applied as the requests of their own that weftctl
 * apply would send for each, by the batch's client (apply_batch.h). */
struct apply_ctx {
	struct api *api;
	struct request *rq;
	bool batch;		/* the group's writes are one store batch (apply_lock) */
};

/* The read weftctl apply starts an object with (GET of its path); for a
 * node, a write of its budget for each item after the first (the request
 * spent one, within_budget). */
static int apply_admit(void *arg, size_t index, const struct route *r, struct status *st)
{
	struct apply_ctx *x = arg;

	if (index && !within_budget(x->api, "POST", &x->rq->who, st))
		return -1;
	return authz_route(&x->rq->who, AUTHZ_GET, r, st);
}

/* The POST (create) or PUT of body to r: the very call of those requests,
 * the node's authorization against what is stored included. */
static int apply_write(void *arg, const struct route *r, bool create, json_t *body, json_t **out, struct status *st)
{
	struct apply_ctx *x = arg;
	struct call call = { .what = create ? CALL_CREATE : CALL_REPLACE, .r = *r, .body = body };
	int err;

	if (create) {	/* a POST names its object in the body alone */
		call.r.has_name = false;
		call.r.name[0] = 0;
	}
	err = registry_call(x->api, x->rq, &call, x->api->workers ? REGISTRY_YIELD : 0, st);
	*out = call.out;
	return err;
}

/* A group of items is written under one hold of the lock and, where the
 * store has batches (SQLite), as one batch (store.h): each item is still
 * its own transaction (one that fails spoils no other), but the group
 * pays one commit, not one an item and one for each Endpoints and
 * EndpointSlice they make the controller write.  Its events reach the
 * watchers once it is written (registry_call leaves them while a batch is
 * open); a batch the store cannot write ends the controller, as a flush
 * that fails does (durable): the items were planned on writes that are
 * not there, and the next start reads what the disk kept. */
static void apply_lock(void *arg, bool take)
{
	struct apply_ctx *x = arg;
	struct store *s = x->api->reg->store;
	int err;

	if (take) {
		pthread_mutex_lock(&x->api->lock);
		x->batch = store_batch_begin(s) == 0;
		return;
	}
	if (x->batch && (err = store_batch_end(s, true))) {
		fprintf(stderr, "weft-controller: a batch of writes could not be committed (%s): stopping "
			"before anyone sees them\n", strerror(-err));
		_exit(EXIT_FAILURE);
	}
	if (x->batch)
		(void)watch_hub_written(x->api->hub, x->api->reg->last_write_rev);
	x->batch = false;
	pthread_mutex_unlock(&x->api->lock);
	flush_resumes(x->api);	/* the streams the group woke: watchers follow the batch as it goes */
}

/* A batch (CALL_APPLY): every item applied, its answer in call->out (200)
 * and the items counted for /metrics; -1 with st only out of memory.
 * Durability is the caller's (store_call: one flush for the batch). */
static int apply_call(struct api *a, struct request *rq, struct call *call, struct status *st)
{
	struct apply_ctx x = { .api = a, .rq = rq };
	struct apply_ops ops = { .arg = &x, .admit = apply_admit, .write = apply_write, .lock = apply_lock };
	uint64_t counts[APPLY_RESULTS] = { 0 };

	apply_batch_run(&call->batch, a->reg, &ops);
	for (size_t i = 0; i < call->batch.n; i++)
		counts[call->batch.items[i].result]++;
	pthread_mutex_lock(&a->stats_lock);
	for (int r = 0; r < APPLY_RESULTS; r++)
		a->metrics->apply_items[r] += counts[r];
	pthread_mutex_unlock(&a->stats_lock);
	call->code = 200;
	call->out = apply_batch_answer(&call->batch);
	if (!call->out) {
		status_set(st, 500, "InternalError", "%s", "out of memory");
		return -1;
	}
	return 0;
}

/* A batch goes to the applier's threads, on either store: it takes as
 * long as its items, and MHD's threads serve other connections meanwhile.
 * Without the applier, here. */
static enum MHD_Result apply_queue(struct api *a, struct MHD_Connection *c, struct request *rq, struct call *call)
{
	struct status st = { 0 };

	if (a->applier)
		return store_queue(a, a->applier, c, rq, call);
	if (store_call(a, rq, call, &st))
		return send_status(a, c, rq, &st);
	return answer_call(a, c, rq, call);
}

static void registry_lock(void *arg, bool take)
{
	struct api *a = arg;

	if (take)
		pthread_mutex_lock(&a->lock);
	else
		pthread_mutex_unlock(&a->lock);
}

/* The admin token, or a live node credential (cred.c): *who filled. */
static bool authenticate(struct api *a, struct MHD_Connection *c, struct principal *who)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	memset(who, 0, sizeof(*who));
	if (!h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	if (token_equal(h + 7, a->token)) {
		who->admin = true;
		return true;
	}
	return creds_authenticate(a->creds, h + 7, who);
}

/* What the request does, for authz_route: a GET of a collection is a list
 * or a watch; any other method than these (PUT, PATCH) is checked as an
 * update. */
static enum authz_verb verb_of(struct MHD_Connection *c, const char *method, const struct route *r)
{
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
		if (query_true(c, "watch"))
			return AUTHZ_WATCH;
		return r && r->has_name ? AUTHZ_GET : AUTHZ_LIST;
	}
	if (strcmp(method, "POST") == 0)
		return AUTHZ_CREATE;
	if (strcmp(method, "DELETE") == 0)
		return AUTHZ_DELETE;
	return AUTHZ_UPDATE;
}

/* The admin passes; a node only where authz_route lets it (paths that are
 * not object routes — /metrics, pod-network, credentials, unknown ones —
 * are the admin's). */
static bool permitted(struct MHD_Connection *c, const char *url, const char *method,
		      const struct principal *who, struct status *st)
{
	struct route r;
	bool routed;

	if (who->admin || strcmp(url, APPLY_PATH) == 0)	/* a batch's items: each authorized (apply_admit) */
		return true;
	routed = api_parse_route(url, &r) == 0;
	if (!routed) {
		status_set(st, 403, "Forbidden", "User \"system:node:%s\" cannot %.16s %.300s: only the admin may",
			   who->node, method, url);
		return false;
	}
	return authz_route(who, verb_of(c, method, &r), &r, st) == 0;
}

/* A node credential's POST, PUT, PATCH or DELETE within its budget
 * (cred.c, throttle.h): true, or false with st set to 429 TooManyRequests
 * and its retry_after (Kubernetes' API Priority and Fairness answer).  As
 * there, after authentication and before authorization, so a node's
 * forbidden writes spend its budget too.  The admin is never throttled;
 * reads are not. */
static bool within_budget(struct api *a, const char *method, const struct principal *who, struct status *st)
{
	bool writes = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0 ||
		      strcmp(method, "DELETE") == 0;
	int wait;

	if (who->admin || !writes)
		return true;
	wait = creds_throttle(a->creds, who->cred, &a->node_writes, monotime_ms());
	if (!wait)
		return true;
	status_set(st, 429, "TooManyRequests",
		   "too many requests, please try again later: node \"%s\" is over its write budget "
		   "(%g a second, %u at once)", who->node, a->node_writes.per_second, a->node_writes.burst);
	st->retry_after = wait;
	pthread_mutex_lock(&a->stats_lock);
	a->metrics->requests_throttled++;
	pthread_mutex_unlock(&a->stats_lock);
	return false;
}

static enum MHD_Result handle_request(struct api *a, struct MHD_Connection *c, const char *url,
				      const char *method, const char *upload, size_t *upload_size, void **ctx);

/* A discovery path (discovery.h): true and *ret when url is one. */
static bool answer_discovery_if(struct api *a, struct MHD_Connection *c, struct request *rq, const char *url,
				enum MHD_Result *ret)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	json_t *doc = NULL;

	if (!discovery_lookup(url, host, &doc))
		return false;
	rq->answered = true;
	*ret = doc ? send_json(a, c, rq, 200, doc)
		   : fail(a, c, rq, 404, "NotFound", "the server could not find the requested resource (%s)", url);
	return true;
}

/* An OpenAPI path (openapi.h): true and *ret when url is one. */
static bool answer_openapi_if(struct api *a, struct MHD_Connection *c, struct request *rq, const char *url,
			      enum MHD_Result *ret)
{
	struct openapi_answer ans;
	struct MHD_Response *resp;
	struct link *l = link_of(c);
	char *body = NULL;

	if (!openapi_lookup(a->openapi, url, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "hash"),
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH), time(NULL),
			    &ans))
		return false;
	rq->answered = true;
	*ret = MHD_NO;
	if (ans.code == 404 || ans.code == 406) {
		*ret = fail(a, c, rq, ans.code, ans.code == 404 ? "NotFound" : "NotAcceptable", "%s", ans.message);
		return true;
	}
	if (ans.len && !(body = malloc(ans.len)))	/* the documents stay; MHD frees its copy */
		return true;
	if (ans.len)
		memcpy(body, ans.body, ans.len);
	if (!(resp = response_for(l, body, ans.len)))
		return true;
	MHD_add_response_header(resp, "Vary", "Accept");
	if (ans.content_type)
		MHD_add_response_header(resp, "Content-Type", ans.content_type);
	if (ans.etag[0])
		MHD_add_response_header(resp, "ETag", ans.etag);
	if (ans.location[0])
		MHD_add_response_header(resp, "Location", ans.location);
	if (ans.immutable) {
		MHD_add_response_header(resp, "Cache-Control", "public, immutable");
		MHD_add_response_header(resp, "Expires", ans.expires);
	}
	if (l && ans.len && !rq->head)
		tls_io_join_next(l->tls);
	*ret = MHD_queue_response(c, (unsigned)ans.code, resp);
	MHD_destroy_response(resp);
	observe(a, ans.code, elapsed(&rq->start));
	return true;
}

static enum MHD_Result answer_discovery(struct api *a, struct MHD_Connection *c, struct request *rq,
					const char *url)
{
	enum MHD_Result ret = MHD_NO;

	(void)answer_discovery_if(a, c, rq, url, &ret);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	(void)version;
	return handle_request(cls, c, url, method, upload, upload_size, ctx);
}

/* No lock held: everything before dispatch() is the request's own or fixed at start. */
static enum MHD_Result handle_request(struct api *a, struct MHD_Connection *c, const char *url,
				      const char *method, const char *upload, size_t *upload_size, void **ctx)
{
	struct request *rq = *ctx;
	struct route route;
	struct call call;
	enum MHD_Result ret;

	if (!rq) {
		const char *cl;

		conns_head_done(a->conns, conn_of(c));
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		rq->head = strcmp(method, "HEAD") == 0;
		*ctx = rq;
		if (strcmp(url, "/healthz") == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
			/* MHD sends no body for a HEAD, the headers as for GET */
			rq->answered = true;
			return send_body(a, c, rq, 200, "text/plain", strdup("ok\n"), 3);
		}
		/* ready: as kube-apiserver's /readyz, once its caches are up (the
		 * store's events served from its own record: etcd's event cache
		 * has replayed what it starts with); a load balancer or a test
		 * sends traffic then.  No token, no lock, as /healthz */
		if (strcmp(url, "/readyz") == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
			static const char wait[] = "the store's event cache is catching up\n";

			rq->answered = true;
			return store_events_ready(a->reg->store)
				       ? send_body(a, c, rq, 200, "text/plain", strdup("ok\n"), 3)
				       : send_body(a, c, rq, 503, "text/plain", strdup(wait), sizeof(wait) - 1);
		}
		/* the cluster page's files are anyone's: they hold no data (ui.h) */
		if ((strcmp(url, "/ui") == 0 || strncmp(url, UI_PREFIX, strlen(UI_PREFIX)) == 0) &&
		    (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
			rq->answered = true;
			return answer_ui(a, c, rq, url);
		}
		/* /version is anyone's, as /healthz (Kubernetes' public-info-viewer) */
		if (strcmp(url, "/version") == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
			return answer_discovery(a, c, rq, url);
		if (!authenticate(a, c, &rq->who)) {
			rq->answered = true;
			return fail(a, c, rq, 401, "Unauthorized", "%s",
				    "a valid bearer token is required (Authorization: Bearer <token>)");
		}
		/* discovery and the OpenAPI schema are every authenticated
		 * client's (Kubernetes' system:discovery) */
		if ((strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) &&
		    (answer_discovery_if(a, c, rq, url, &ret) || answer_openapi_if(a, c, rq, url, &ret)))
			return ret;
		{
			struct status st = { 0 };

			if (!within_budget(a, method, &rq->who, &st) || !permitted(c, url, method, &rq->who, &st)) {
				rq->answered = true;
				return send_status(a, c, rq, &st);
			}
			/* as kube-apiserver, what the answer may be before the
			 * body is read (an object route's; /metrics is text) */
			if (api_parse_route(url, &route) == 0 &&
			    answer_negotiate(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
					     strcmp(method, "GET") == 0 && query_true(c, "watch"), &rq->form, &st)) {
				rq->answered = true;
				return send_status(a, c, rq, &st);
			}
		}
		if (rq->form == ANSWER_TABLE && table_include_parse(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "includeObject"),
						     &rq->include)) {
			rq->answered = true;
			return fail(a, c, rq, 400, "BadRequest", "unrecognized includeObject value: \"%.64s\"",
				    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "includeObject"));
		}
		if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
			/* as kube-apiserver: the media type before the body is read */
			struct status st = { 0 };

			if (strcmp(method, "PATCH") == 0 ? !patch_type_ok(c, NULL, &st) : !content_type_ok(c, &st)) {
				rq->answered = true;
				return send_status(a, c, rq, &st);
			}
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > a->max_body) {
			char msg[128];
			rq->answered = true;
			snprintf(msg, sizeof(msg), "the request body is %s bytes; the limit is %zu", cl, a->max_body);
			return fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->answered && !rq->too_large) {
			if (rq->len + *upload_size > a->max_body) {
				rq->too_large = true;
				free(rq->body);
				rq->body = NULL;
				rq->len = rq->cap = 0;
			} else {
				if (rq->len + *upload_size + 1 > rq->cap) {
					size_t ncap = rq->cap ? rq->cap : 4096;
					char *p;
					while (ncap < rq->len + *upload_size + 1)
						ncap *= 2;
					p = realloc(rq->body, ncap);
					if (!p)
						return MHD_NO;
					rq->body = p;
					rq->cap = ncap;
				}
				memcpy(rq->body + rq->len, upload, *upload_size);
				rq->len += *upload_size;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->list)
		return list_answer(a, c, rq);
	if (rq->job)
		return store_answer(a, c, rq);
	if (rq->answered)
		return MHD_YES;
	rq->answered = true;
	if (rq->too_large) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the request body is over the limit of %zu bytes", a->max_body);
		return fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg);
	}
	if (a->lister && is_list(c, url, method, &route))
		return list_queue(a, c, rq, &route);
	if (prepare(a, c, rq, url, method, &call, &ret))
		return ret;
	if (call.what == CALL_APPLY)
		return apply_queue(a, c, rq, &call);
	if (a->workers && is_store_call(&call))
		return store_inline_or_queue(a, c, rq, &call);
	pthread_mutex_lock(&a->lock);
	ret = dispatch(a, c, rq, &call);
	pthread_mutex_unlock(&a->lock);
	json_decref(call.body);
	list_query_free(&call.q);
	durable(a);		/* before the answer (queued or not) leaves */
	flush_resumes(a);	/* the streams a write woke */
	if (call.out)
		ret = answer_call(a, c, rq, &call);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode t)
{
	struct api *a = cls;
	struct request *rq = *ctx;
	struct link *home = link_of(c);

	if (home && home->parked) {	/* back from the sender: its thread's again */
		home->parked = false;
		inline_live(home->home);
	}
	if (rq && rq->watch)
		conns_set_counted(a->conns, conn_of(c), true);	/* the stream ended; the connection may stay */
	if (t == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		struct link *l = link_of(c);

		/* a head held for a body that did not follow: not expected
		 * (send_body joins only when one does), but never leave it */
		if (l && tls_io_held(l->tls))
			(void)tls_io_flush(l->tls);
		conns_response_done(a->conns, conn_of(c), monotime_ms());	/* the next head is due */
	}
	if (rq) {
		/* resumed, then closed before its handler ran: the lister
		 * (or worker) is done with it */
		list_job_free(rq->list);
		store_job_free(rq->job);
		free(rq->body);
		free(rq->warnings);
		free(rq);
		*ctx = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap;	/* MHD's own chatter (client resets) is not the operator's business */
}

/* a->ndaemons daemons of one thread each, with TLS options tls (ending
 * in MHD_OPTION_END); 0, or -1 with errno (those started are stopped). */
static int start_daemons(struct api *a, struct MHD_OptionItem *tls, const struct api_config *cfg)
{
	bool https = tls->option != MHD_OPTION_END;

	for (unsigned i = 0; i < a->ndaemons; i++) {
		a->refs[i] = (struct daemon_ref){ .api = a, .index = i };
		/* MHD's inactivity timeout, a second after ours (so conns_expire
		 * counts the idle ones), only ends requests and responses
		 * stalled half-way; conns.c keeps the total (each daemon may
		 * hold up to all of it: parked streams weigh on none) */
		a->mhd[i] = MHD_start_daemon(
			MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
				MHD_USE_NO_LISTEN_SOCKET | (https ? MHD_USE_TLS : 0),
			0, NULL, NULL, on_request, a, MHD_OPTION_ARRAY, tls, MHD_OPTION_CONNECTION_LIMIT,
			cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout + 1,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, &a->refs[i], MHD_OPTION_NOTIFY_COMPLETED,
			on_completed, a, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
		if (!a->mhd[i]) {
			int e = errno;

			stop_daemons(a);
			errno = e;
			return -1;
		}
	}
	return 0;
}

struct api *api_start(const struct api_config *cfg, struct registry *r, struct watch_hub *h,
		      struct metrics *m, char *err, size_t errlen)
{
	struct api *a = calloc(1, sizeof(*a));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[256];
	const char *colon = strrchr(cfg->listen, ':');
	long port;
	/* HTTPS unless main asked for plain HTTP (MHD copies nothing: the PEM stays cfg's) */
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES },
		{ MHD_OPTION_END, 0, NULL },
	};
	bool https = cfg->tls_cert && cfg->tls_key;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (https && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "this libmicrohttpd has no TLS: it cannot serve HTTPS");
		free(a);
		return NULL;
	}
	if (!colon || (size_t)(colon - cfg->listen) >= sizeof(host)) {
		snprintf(err, errlen, "--listen %s: want HOST:PORT", cfg->listen);
		free(a);
		return NULL;
	}
	memcpy(host, cfg->listen, (size_t)(colon - cfg->listen));
	host[colon - cfg->listen] = 0;
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "--listen %s: want an IPv4 address and a port 1-65535", cfg->listen);
		free(a);
		return NULL;
	}
	sa.sin_port = htons((uint16_t)port);
	a->openapi = openapi_create(err, errlen);
	if (!a->openapi) {
		free(a);
		return NULL;
	}
	a->creds = creds_new();
	if (!a->creds || creds_load(a->creds, r->store)) {
		snprintf(err, errlen, "cannot read the node credentials from the store");
		creds_free(a->creds);
		openapi_destroy(a->openapi);
		free(a);
		return NULL;
	}
	if (cfg->flows_cert_file && cfg->flows_key_file &&
	    !(a->relay = flows_relay_create(cfg->flows_cert_file, cfg->flows_key_file, flows_lookup, a))) {
		snprintf(err, errlen, "the flows relay: %s", strerror(errno));
		creds_free(a->creds);
		openapi_destroy(a->openapi);
		free(a);
		return NULL;
	}
	{
		pthread_mutexattr_t attr;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&a->lock, &attr);
		pthread_mutexattr_destroy(&attr);
	}
	(void)monotime_cond_init(&a->watches_gone);	/* wait_watches_gone's wait has a deadline */
	pthread_mutex_init(&a->stats_lock, NULL);
	a->reader = cfg->reader;
	snprintf(a->token, sizeof(a->token), "%s", cfg->token);
	a->reg = r;
	a->hub = h;
	a->metrics = m;
	a->max_body = cfg->max_body;
	a->max_connections = cfg->max_connections;
	a->max_per_client = cfg->max_per_client;
	a->node_writes.per_second = cfg->node_write_rate > 0 ? cfg->node_write_rate : API_NODE_WRITE_RATE;
	a->node_writes.burst = cfg->node_write_burst ? cfg->node_write_burst : API_NODE_WRITE_BURST;
	a->last_heartbeat = a->last_bookmark = time(NULL);
	a->bookmark_interval = cfg->bookmark_interval ? cfg->bookmark_interval : BOOKMARK_SECONDS;
	/* without a lister (no reader handle, or no thread) lists are served under the global lock */
	a->lister = a->reader ? workers_start(1) : NULL;
	/* a store over the network (etcd): gets and writes go to workers,
	 * writes let go of the lock while etcd has them; without workers (no
	 * thread) they are served in MHD's threads under the lock, one at a time */
	if (store_concurrent(r->store) && (a->workers = workers_start(STORE_WORKERS)))
		registry_set_lock(r, registry_lock, a);
	a->applier = workers_start(APPLY_WORKERS);	/* without it, batches run in MHD's threads */
	a->ndaemons = API_THREADS;
	a->inl = inline_calls_new(a->ndaemons);
	a->sender = watch_sender_new(SENDER_THREADS, cfg->idle_timeout,
				     &(struct watch_sender_ops){ .fill = watch_fill, .release = watch_release });
	a->conns = !a->sender || !a->inl ? NULL : conns_new(&(struct conns_limits){ .max_total = cfg->max_connections,
						       .max_per_client = cfg->max_per_client,
						       .header_timeout_ms = cfg->header_timeout * 1000u,
						       .idle_timeout_ms = cfg->idle_timeout * 1000u });
	a->listen_fd = !a->conns ? -ENOMEM : listen_on(&sa);
	if (a->listen_fd < 0)
		snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(-a->listen_fd));
	else if (start_daemons(a, https ? tls : tls + 3, cfg))
		snprintf(err, errlen, "cannot start the HTTP server on %s: %s", cfg->listen,
			 strerror(errno ? errno : ENOMEM));
	else if ((errno = pthread_create(&a->acceptor, NULL, accept_run, a)) != 0)
		snprintf(err, errlen, "cannot start the acceptor thread: %s", strerror(errno));
	else
		a->accepting = true;
	if (!a->accepting) {
		stop_daemons(a);
		if (a->listen_fd >= 0)
			close(a->listen_fd);
		lister_stop(a);
		workers_free(a->lister);
		workers_free(a->workers);
		workers_free(a->applier);
		inline_calls_free(a->inl);
		registry_set_lock(r, NULL, NULL);
		watch_sender_stop(a->sender);
		watch_sender_free(a->sender);
		conns_free(a->conns);
		creds_free(a->creds);
		flows_relay_destroy(a->relay);	/* (no stream: MHD never started) */
		openapi_destroy(a->openapi);
		explicit_bzero(a->token, sizeof(a->token));
		pthread_cond_destroy(&a->watches_gone);
		pthread_mutex_destroy(&a->lock);
		pthread_mutex_destroy(&a->stats_lock);
		free(a);
		return NULL;
	}
	return a;
}

void api_lock(struct api *a) { pthread_mutex_lock(&a->lock); }

void api_unlock(struct api *a)
{
	pthread_mutex_unlock(&a->lock);
	flush_resumes(a);
}

/* Until every watch is freed (its last chunk out and its response done)
 * or STOP_GRACE_MS pass: the stream's clients that read get a clean end;
 * the others are cut by MHD_stop_daemon, which waits for no client. */
#define STOP_GRACE_MS 1000
static void wait_watches_gone(struct api *a)
{
	struct timespec until = monotime_deadline(monotime_ms() + STOP_GRACE_MS);

	pthread_mutex_lock(&a->lock);
	while (a->watches && pthread_cond_timedwait(&a->watches_gone, &a->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&a->lock);
}

/*
 * The stop, in bounded time whatever the clients do (none is waited for
 * beyond STOP_GRACE_MS):
 *   1. no new connection: the acceptor is joined and the socket closed;
 *   2. the lister and the workers answer what they hold (503) and resume
 *      it: MHD_stop_daemon may not find a connection suspended;
 *   3. the watches end: stopping set (a stream in MHD ends at its next
 *      read, a new one at once, a park is refused), then the sender's
 *      threads are joined and every parked stream handed back to MHD
 *      with one resume each (watch_sender_stop); MHD's reader ends it;
 *   4. a grace for the readers' last chunks (wait_watches_gone);
 *   5. the daemons stop: MHD shuts every connection down and closes it,
 *      whether its client reads or not.
 */
void api_stop(struct api *a)
{
	if (!a)
		return;
	/* 1: the acceptor wakes (EINVAL) or sees the flag */
	atomic_store(&a->accept_stop, true);
	shutdown(a->listen_fd, SHUT_RDWR);
	if (a->accepting)
		pthread_join(a->acceptor, NULL);
	close(a->listen_fd);
	/* 2 */
	lister_stop(a);
	workers_stop(a->workers);
	workers_stop(a->applier);
	/* 3 */
	pthread_mutex_lock(&a->lock);
	watch_hub_lock(a->hub);
	a->stopping = true;
	watch_hub_unlock(a->hub);
	pthread_mutex_unlock(&a->lock);
	watch_sender_stop(a->sender);
	/* 4, 5 */
	wait_watches_gone(a);
	stop_daemons(a);
	flows_relay_destroy(a->relay);	/* every stream closed: waits for their node threads */
	workers_free(a->lister);	/* nothing can queue now */
	workers_free(a->workers);
	workers_free(a->applier);
	inline_calls_free(a->inl);	/* MHD's threads are gone */
	registry_set_lock(a->reg, NULL, NULL);
	if (a->wake_ready) {
		endpoints_ctl_set_wake(a->reg->endpoints, NULL, NULL);
		if (a->wake_fd >= 0)
			close(a->wake_fd);
	}
	watch_sender_free(a->sender);
	conns_free(a->conns);	/* MHD closed every connection */
	creds_free(a->creds);
	openapi_destroy(a->openapi);
	explicit_bzero(a->token, sizeof(a->token));
	pthread_cond_destroy(&a->watches_gone);
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->stats_lock);
	free(a);
}

#define NOTIFY_GATHER_MS 5

/* endpoints_ctl's wake callback, under the lock: a PodPeerSlice node is
 * due in in_ms, earlier than the loop's wait may end. */
static void wake_loop(void *arg, int64_t in_ms)
{
	struct api *a = arg;
	int64_t at = monotime_ms() + in_ms;

	if (a->wake_fd >= 0 && at < a->wake_at) {
		uint64_t one = 1;

		a->wake_at = at;
		(void)!write(a->wake_fd, &one, sizeof(one));
	}
}

/* Sleep until timeout_ms from now, a PodPeerSlice node's gather ends
 * (peers_ctl.c: not at the next tick, so a new pod is seen by other nodes'
 * policies about PODPEERS_GATHER_MS after its write), or the store says
 * another controller's writes arrived (etcd).  0 or -errno. */
static int wait_turn(struct api *a, int timeout_ms)
{
	int64_t deadline = monotime_ms() + timeout_ms;

	for (;;) {
		/* the store's notice: synced then, not at the next tick; but at
		 * most once every NOTIFY_GATHER_MS, so that a stream of them is
		 * taken in batches and leaves the lock to this controller's own
		 * writes */
		struct pollfd p[2] = { { .fd = store_notify_fd(a->reg->store), .events = POLLIN },
				       { .fd = -1, .events = POLLIN } };
		int64_t due, now, wait;

		pthread_mutex_lock(&a->lock);
		if (!a->wake_ready) {
			a->wake_ready = true;
			a->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			endpoints_ctl_set_wake(a->reg->endpoints, wake_loop, a);
		}
		p[1].fd = a->wake_fd;
		now = monotime_ms();
		wait = deadline > now ? deadline - now : 0;
		due = endpoints_ctl_due_ms(a->reg->endpoints);
		if (due >= 0 && due < wait)
			wait = due;
		a->wake_at = now + wait;
		pthread_mutex_unlock(&a->lock);
		if (poll(p, 2, (int)wait) < 0 && errno != EINTR)
			return -errno;
		if (p[0].fd >= 0 && (p[0].revents & POLLIN)) {
			(void)poll(NULL, 0, NOTIFY_GATHER_MS);
			store_notify_clear(a->reg->store);
			return 0;
		}
		if (p[1].fd >= 0 && (p[1].revents & POLLIN)) {
			uint64_t n;

			(void)!read(p[1].fd, &n, sizeof(n));
			continue;	/* a new due instant: wait again, until it */
		}
		return 0;
	}
}

int api_run(struct api *a, int timeout_ms)
{
	time_t now;
	int err = wait_turn(a, timeout_ms);

	if (err)
		return err;
	(void)conns_expire(a->conns, monotime_ms());	/* before the global lock: never waits behind a request */
	pthread_mutex_lock(&a->lock);
	a->wake_at = INT64_MIN;	/* running: nothing to cut short until the next wait */
	/* writes by other controllers on the same store: Endpoints follow
	 * them (and this retries failed Endpoints writes), watchers wake */
	(void)endpoints_sync(a->reg->endpoints);
	(void)lb_ctl_sync(a->reg->lb);
	(void)watch_hub_sync(a->hub);
	{
		/* credentials issued or revoked through another controller */
		bool changed = false;

		if (creds_sync(a->creds, a->reg->store, &changed) == 0 && changed)
			end_revoked_watches(a);
	}
	now = time(NULL);
	watch_hub_lock(a->hub);
	if (now != a->last_tick) {
		/* watches past their timeoutSeconds end even when idle */
		a->last_tick = now;
		for (struct watch_ctx *w = a->watches; w; w = w->next)
			if (w->deadline && now >= w->deadline)
				watch_resume(w);
	}
	if (now - a->last_bookmark >= (time_t)a->bookmark_interval) {
		/* streams that allow bookmarks get one when idle and behind the hub */
		a->last_bookmark = now;
		for (struct watch_ctx *w = a->watches; w; w = w->next)
			if (w->bookmarks) {
				w->bookmark_due = true;
				watch_resume(w);
			}
	}
	if (now - a->last_heartbeat >= HEARTBEAT_SECONDS) {
		/* an idle stream sends a blank line now and then: dead clients are found and closed */
		a->last_heartbeat = now;
		for (struct watch_ctx *w = a->watches; w; w = w->next) {
			w->heartbeat = true;
			watch_resume(w);
		}
	}
	watch_hub_unlock(a->hub);
	pthread_mutex_unlock(&a->lock);
	durable(a);	/* the timers' writes (Endpoints) are flushed within a tick */
	flush_resumes(a);
	return 0;
}
