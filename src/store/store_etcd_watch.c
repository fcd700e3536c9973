/*
 * store_etcd_watch.c — store_events for the etcd back-end: one etcd watch
 * of the whole key space, from the revision the handle first asked at,
 * feeds a bounded cache of events; older history is read from etcd with a
 * watch of its own that stops where the cache begins.
 *
 *   first store_events ──► cache: floor = complete = CACHE_BACKFILL
 *                          revisions back (or the last compaction); the
 *                          thread watches from complete + 1, replaying
 *                          that history first
 *
 *   watch thread:  connect ──► stream events ──► append, complete = rev
 *                    ▲              │ ended, broken, stalled, canceled
 *                    └── next endpoint, after a short pause
 *
 *   store_events(after):   (after, floor]     a one-off watch from after + 1
 *                          (floor, complete]  the cache
 *
 * Why "complete" can be the last event's revision: the watch covers every
 * key, and every revision of etcd is a transaction that changed at least
 * one key, so each revision brings events, in order, and a revision's
 * events arrive in one answer (no fragmenting is asked for).
 *
 * Read-your-writes, per thread: store_events first waits (up to
 * READ_WAIT_MS) until the cache holds the highest revision any answer to
 * the calling thread's calls named (etcd_known), so a write of this thread
 * is among the events it reads after it.  Not another thread's: a loop
 * that reads what has come, and is woken when more comes, never waits
 * under its lock for writes that other threads have in flight.
 * If the watch does not get there (its member partitioned away, say), the
 * thread is told to reconnect, and the read returns what the cache has,
 * with out->revision = complete: nothing is skipped, only later.
 *
 * Compaction: the compaction key's events (another controller compacted,
 * or this one) and a watch canceled with compact_revision both move the
 * floor up; reading from below it is -ESTORE_COMPACTED.
 *
 * Invariants
 *  1. The cache holds every event with floor < rev <= complete, in
 *     (revision, op) order, and nothing else.
 *  2. floor and complete only grow.
 *  3. Everything in struct etcd_cache but the thread's own connection is
 *     read and written under c->lock.
 */
#include "store/store_etcd.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX 65536		/* events kept; older ones are read from etcd */
#define CACHE_BACKFILL 8192	/* revisions of history the cache starts with */
#define READ_WAIT_MS 2000
#define RETRY_MS 200

struct etcd_cache {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* complete moved, or stop */
	pthread_t thread;
	bool stop;
	bool reconnect;			/* the reader saw a stall */
	int64_t started;		/* the store's revision when the cache started */
	struct httpc *http;		/* the thread's stream (cancel it to end it) */
	size_t endpoint;		/* the thread's endpoint */
	struct store_event *ring;	/* circular [head, head + n) */
	size_t head, n;
	int64_t floor, complete;
	struct etcd_store *e;
};

static struct store_event *at(struct etcd_cache *c, size_t i) { return &c->ring[(c->head + i) % CACHE_MAX]; }

static void event_free(struct store_event *ev)
{
	store_kv_free(&ev->kv);
	store_kv_free(&ev->prev);
}

static void drop_upto(struct etcd_cache *c, int64_t rev)
{
	while (c->n && at(c, 0)->kv.mod_rev <= rev) {
		event_free(at(c, 0));
		c->head = (c->head + 1) % CACHE_MAX;
		c->n--;
	}
	if (rev > c->floor)
		c->floor = rev;
	if (c->complete < c->floor)
		c->complete = c->floor;
}

/* An event of a watch answer.  0 or -errno. */
static int parse_event(const json_t *j, struct store_event *ev)
{
	const json_t *prev = json_object_get(j, "prev_kv");
	int r;

	memset(ev, 0, sizeof(*ev));
	ev->type = json_is_string(json_object_get(j, "type")) &&
				   !strcmp(json_string_value(json_object_get(j, "type")), "DELETE")
			   ? STORE_EVENT_DELETE
			   : STORE_EVENT_PUT;
	r = etcd_kv(json_object_get(j, "kv"), &ev->kv);
	if (r == 0 && json_is_object(prev))
		r = etcd_kv(prev, &ev->prev);
	if (r < 0)
		event_free(ev);
	return r;
}

/* ------------------------------------------------------------ the thread */

/* What a line of a watch stream said. */
struct answer {
	json_t *events;		/* borrowed from the parsed line */
	bool canceled;
	int64_t compact_revision;
};

static int read_answer(const char *line, size_t len, json_t **root, struct answer *a)
{
	json_t *result;

	memset(a, 0, sizeof(*a));
	*root = json_loadb(line, len, 0, NULL);
	if (!*root)
		return -EIO;
	result = json_object_get(*root, "result");
	if (!json_is_object(result))
		return -EIO;	/* {"error": ...}: the stream failed */
	a->events = json_object_get(result, "events");
	a->canceled = json_is_true(json_object_get(result, "canceled"));
	a->compact_revision = etcd_i64(result, "compact_revision");
	return 0;
}

static int on_line(const char *line, size_t len, void *arg)
{
	struct etcd_cache *c = arg;
	struct answer a;
	json_t *root = NULL;
	int64_t before;
	int r = read_answer(line, len, &root, &a);

	if (r < 0)
		goto out;
	pthread_mutex_lock(&c->lock);
	before = c->complete;	/* a revision's events come in one answer */
	if (a.canceled) {
		/* compacted past where the cache ends: what lies between is gone */
		if (a.compact_revision > 0)
			drop_upto(c, a.compact_revision - 1);
		r = 1;
	}
	for (size_t i = 0; !a.canceled && i < json_array_size(a.events); i++) {
		struct store_event ev;

		r = parse_event(json_array_get(a.events, i), &ev);
		if (r < 0)
			break;
		if (ev.kv.mod_rev <= before) {
			event_free(&ev);	/* a reconnect sent it again */
			continue;
		}
		if (!strcmp(ev.kv.key, ETCD_COMPACT_KEY)) {
			int64_t compacted = ev.type == STORE_EVENT_PUT ? strtoll(ev.kv.value, NULL, 10) : 0;

			c->complete = ev.kv.mod_rev;
			event_free(&ev);
			if (compacted > c->floor)
				drop_upto(c, compacted);
			continue;
		}
		if (c->n == CACHE_MAX) {
			/* full: the oldest revision goes, and reads below it go to etcd */
			drop_upto(c, at(c, 0)->kv.mod_rev);
		}
		*at(c, c->n) = ev;
		c->n++;
		c->complete = ev.kv.mod_rev;
	}
	if (c->stop || c->reconnect)
		r = 1;
	if (c->complete > before) {
		uint64_t one = 1;
		/* wake whoever polls store_notify_fd (the API's loop); a full
		 * counter (EAGAIN) is a wake-up already pending */
		ssize_t w = write(c->e->notify, &one, sizeof(one));

		(void)w;
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
out:
	json_decref(root);
	return r;
}

static void pause_ms(struct etcd_cache *c, long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (ms % 1000) * 1000000L;
	until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&c->lock);
	if (!c->stop)
		pthread_cond_timedwait(&c->cond, &c->lock, &until);
	pthread_mutex_unlock(&c->lock);
}

/* The body of a watch of every key from rev on. */
static char *watch_body(int64_t rev)
{
	char buf[256];

	/* key "\0" with range_end "\0" is the whole key space ("AA==") */
	snprintf(buf, sizeof(buf),
		 "{\"create_request\":{\"key\":\"AA==\",\"range_end\":\"AA==\",\"start_revision\":\"%" PRId64
		 "\",\"prev_kv\":true,\"progress_notify\":true}}",
		 rev);
	return strdup(buf);
}

static void *watch_run(void *arg)
{
	struct etcd_cache *c = arg;
	struct etcd_store *e = c->e;

	for (;;) {
		struct httpc_response resp = { 0 };
		struct httpc *h;
		char err[256], *body;
		int64_t from;
		int r;

		pthread_mutex_lock(&c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		c->reconnect = false;
		from = c->complete + 1;
		pthread_mutex_unlock(&c->lock);
		h = etcd_connect(e, c->endpoint, err, sizeof(err));
		body = watch_body(from);
		if (h && body) {
			pthread_mutex_lock(&c->lock);
			c->http = h;
			if (c->stop)
				httpc_cancel(h);
			pthread_mutex_unlock(&c->lock);
			r = httpc_stream_post(h, "/v3/watch", body, strlen(body), on_line, c, &resp, err,
					      sizeof(err));
			(void)r;
			httpc_response_free(&resp);
			pthread_mutex_lock(&c->lock);
			c->http = NULL;
			pthread_mutex_unlock(&c->lock);
		}
		free(body);
		httpc_destroy(h);
		/* whatever ended it, go on from the next member after a pause */
		c->endpoint = (c->endpoint + 1) % e->nendpoints;
		pause_ms(c, RETRY_MS);
	}
	return NULL;
}

static int cache_start(struct etcd_store *e)
{
	struct etcd_cache *c = calloc(1, sizeof(*c));
	int64_t rev = 0, compacted = 0, version;
	int r;

	if (!c)
		return -ENOMEM;
	r = etcd_compact_record(e, &compacted, &version, &rev);
	if (r < 0) {
		free(c);
		return r;
	}
	c->ring = calloc(CACHE_MAX, sizeof(*c->ring));
	if (!c->ring) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	/* the cache starts CACHE_BACKFILL revisions back (not before the
	 * last compaction): its watch replays them, so clients that resume
	 * from a recent revision — every agent of a controller that died —
	 * are served from memory, not by a one-off watch of etcd each, which
	 * etcd brings up to date only every 100 ms, and which is read with
	 * the API's lock held */
	c->floor = rev - CACHE_BACKFILL;
	if (c->floor < compacted)
		c->floor = compacted;
	if (c->floor < 1)
		c->floor = 1;	/* revision 1 of etcd is empty */
	c->complete = c->floor;
	c->started = rev;
	c->endpoint = etcd_current(e);
	c->e = e;
	r = -pthread_create(&c->thread, NULL, watch_run, c);
	if (r < 0) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		free(c->ring);
		free(c);
		return r;
	}
	e->cache = c;
	return 0;
}

void etcd_cache_free(struct etcd_store *e)
{
	struct etcd_cache *c = e->cache;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	if (c->http)
		httpc_cancel(c->http);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	drop_upto(c, INT64_MAX);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c->ring);
	free(c);
	e->cache = NULL;
}

bool etcd_events_ready(struct store *s)
{
	struct etcd_store *e = (struct etcd_store *)s;
	struct etcd_cache *c;
	bool ready;

	pthread_mutex_lock(&e->cache_lock);
	c = e->cache;
	pthread_mutex_unlock(&e->cache_lock);
	if (!c)
		return false;
	pthread_mutex_lock(&c->lock);
	ready = c->complete >= c->started;
	pthread_mutex_unlock(&c->lock);
	return ready;
}

void etcd_cache_compacted(struct etcd_store *e, int64_t rev)
{
	struct etcd_cache *c;

	pthread_mutex_lock(&e->cache_lock);
	c = e->cache;
	pthread_mutex_unlock(&e->cache_lock);
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	if (rev > c->floor)
		drop_upto(c, rev);
	pthread_mutex_unlock(&c->lock);
}

/* --------------------------------------------------------------- reading */

/* The list being filled: events of prefix, about limit, whole revisions. */
struct reader {
	const char *prefix;
	size_t plen, limit;
	struct store_event_list *out;
	size_t cap;
	int64_t last_rev;	/* revision of the last event taken */
	int64_t seen_rev;	/* revision of the last event looked at, taken or not */
	bool cut;		/* limit reached at a revision's end */
};

/* Looks at ev (a copy is added when it is of the prefix).  0, 1 when the
 * list is full (ev belongs to a later revision than the list's last), or
 * -ENOMEM. */
static int take(struct reader *rd, const struct store_event *ev)
{
	struct store_event *slot;

	if (strncmp(ev->kv.key, rd->prefix, rd->plen) || !strcmp(ev->kv.key, ETCD_COMPACT_KEY)) {
		rd->seen_rev = ev->kv.mod_rev;
		return 0;
	}
	if (rd->limit && rd->out->n >= rd->limit && ev->kv.mod_rev != rd->last_rev) {
		rd->cut = true;	/* only an event of the prefix can be "more" */
		return 1;
	}
	rd->last_rev = rd->seen_rev = ev->kv.mod_rev;
	if (rd->out->n == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 64;
		struct store_event *grown = realloc(rd->out->events, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		rd->out->events = grown;
		rd->cap = cap;
	}
	slot = &rd->out->events[rd->out->n];
	memset(slot, 0, sizeof(*slot));
	slot->type = ev->type;
	slot->kv = ev->kv;
	slot->prev = ev->prev;
	slot->kv.key = strdup(ev->kv.key);
	slot->kv.value = malloc(ev->kv.value_len + 1);
	if (slot->kv.value)
		memcpy(slot->kv.value, ev->kv.value, ev->kv.value_len + 1);
	if (ev->prev.key) {
		slot->prev.key = strdup(ev->prev.key);
		slot->prev.value = malloc(ev->prev.value_len + 1);
		if (slot->prev.value)
			memcpy(slot->prev.value, ev->prev.value, ev->prev.value_len + 1);
	}
	rd->out->n++;
	if (!slot->kv.key || !slot->kv.value || (ev->prev.key && (!slot->prev.key || !slot->prev.value)))
		return -ENOMEM;
	return 0;
}

/* The history (after, upto] from etcd itself, with a watch of its own. */
struct backlog {
	struct reader *rd;
	int64_t upto;
	int err;
};

static int backlog_line(const char *line, size_t len, void *arg)
{
	struct backlog *b = arg;
	struct answer a;
	json_t *root = NULL;
	int r = read_answer(line, len, &root, &a);

	if (r == 0 && a.canceled)
		r = a.compact_revision > 0 ? -ESTORE_COMPACTED : -EIO;
	for (size_t i = 0; r == 0 && i < json_array_size(a.events); i++) {
		struct store_event ev;

		r = parse_event(json_array_get(a.events, i), &ev);
		if (r < 0)
			break;
		if (ev.kv.mod_rev > b->upto) {
			event_free(&ev);
			r = 1;
			break;
		}
		r = take(b->rd, &ev);
		event_free(&ev);
	}
	if (r == 0 && b->rd->seen_rev == b->upto)
		r = 1;	/* the backlog's last revision, whole: a revision comes in one answer */
	if (r < 0)
		b->err = r;
	json_decref(root);
	return r;
}

static int read_backlog(struct etcd_store *e, int64_t after, int64_t upto, struct reader *rd)
{
	struct backlog b = { .rd = rd, .upto = upto };
	struct httpc_response resp = { 0 };
	char err[256], *body = watch_body(after + 1);
	struct httpc *h = NULL;
	int r = -ENOMEM;

	for (size_t tried = 0; body && tried < e->nendpoints; tried++) {
		size_t i = (etcd_current(e) + tried) % e->nendpoints;

		h = etcd_connect(e, i, err, sizeof(err));
		if (!h) {
			r = -errno;
			continue;
		}
		r = httpc_stream_post(h, "/v3/watch", body, strlen(body), backlog_line, &b, &resp, err, sizeof(err));
		httpc_response_free(&resp);
		httpc_destroy(h);
		if (b.err)
			r = b.err;
		if (r == 0 && (rd->seen_rev == upto || rd->cut))
			break;
		if (r == 0)
			r = -EIO;	/* the stream ended before the backlog did */
		if (r == -ESTORE_COMPACTED || r == -ENOMEM)
			break;
	}
	free(body);
	return r;
}

int etcd_events(struct store *s, const char *prefix, int64_t after_rev, size_t limit,
		struct store_event_list *out)
{
	struct etcd_store *e = (struct etcd_store *)s;
	struct reader rd = { .prefix = prefix, .plen = strlen(prefix), .limit = limit, .out = out };
	struct etcd_cache *c;
	struct timespec until;
	int64_t compacted = 0, floor, target = etcd_known(e);
	int r = 0;

	pthread_mutex_lock(&e->cache_lock);	/* the first call starts it, whichever thread */
	if (!e->cache)
		r = cache_start(e);
	c = e->cache;
	pthread_mutex_unlock(&e->cache_lock);
	if (r < 0)
		return r;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += READ_WAIT_MS / 1000;
	pthread_mutex_lock(&c->lock);
	while (c->complete < target && !c->stop)
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until)) {
			/* stalled: let the thread try another member */
			c->reconnect = true;
			if (c->http)
				httpc_cancel(c->http);
			break;
		}
	floor = c->floor;
	pthread_mutex_unlock(&c->lock);

	if (after_rev < floor && floor > 1) {	/* revision 1 of etcd is empty */
		int64_t version, now;

		r = etcd_compact_record(e, &compacted, &version, &now);
		if (r < 0)
			return r;
		if (after_rev < compacted)
			return -ESTORE_COMPACTED;
		r = read_backlog(e, after_rev, floor, &rd);
		if (r < 0)
			return r;
		if (rd.cut) {
			out->more = true;
			pthread_mutex_lock(&c->lock);
			out->revision = c->complete;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		after_rev = floor;
	}
	pthread_mutex_lock(&c->lock);
	if (after_rev < c->floor) {
		/* the cache moved on while the backlog was read: ask again */
		out->more = true;
		out->revision = c->complete;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	{
		size_t lo = 0, hi = c->n;

		while (lo < hi) {	/* the first event after after_rev */
			size_t mid = lo + (hi - lo) / 2;

			if (at(c, mid)->kv.mod_rev <= after_rev)
				lo = mid + 1;
			else
				hi = mid;
		}
		r = 0;
		for (size_t i = lo; i < c->n && r == 0; i++)
			r = take(&rd, at(c, i));
	}
	out->revision = c->complete;
	out->more = rd.cut;
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : 0;
}
