/*
 * watch.c — the watch hub: one stream of store events fanned out to many
 * watchers, each serialised once.
 *
 * The hub pulls events from the store (watch_hub_sync, after every local
 * write and periodically for other writers) into a ring of ready-to-send
 * JSON lines.  A watcher is a cursor into that ring plus a prefix filter;
 * reading copies the lines it has not sent into the caller's buffer.  A
 * watcher that starts before what the ring holds first reads the store's
 * history in pages (backlog), then joins the ring.  A watcher without a
 * revision starts with an ADDED event for every object: it keeps the
 * store's snapshot and serialises it a read at a time (INITIAL), so a
 * watch of a big collection never holds the caller's lock for the whole
 * of it.
 *
 *      watcher_open ──► [INITIAL] ──► BACKLOG ──(history read up to the ring's floor)──► RING
 *                          │ store_events pages                             │
 *                          ▼                                                ▼
 *                     watcher_read copies lines        the ring overwrote its cursor:
 *                                                      watcher_read returns -1 (END)
 *
 * Threads: two locks.  The caller's store lock (the API's global lock)
 * covers every store read: watch_hub_sync's, watcher_open's and a
 * watcher's outside the ring (backlog).  The hub's own lock (h->lock)
 * covers the ring, the watcher list and every watcher's cursor: the hub
 * takes it itself, but for watcher_read, whose caller holds it
 * (watch_hub_lock) so that what it does on a 0 — suspend its stream — is
 * one critical section with the wake-up that ends it (wake functions run
 * with the lock held).  watch_hub_sync reads and serialises new events
 * under the store lock only and takes the hub's lock just to append them
 * and wake; so a watcher in the ring is read under the hub's lock alone
 * and never waits for a commit.  Order: store lock, then hub lock.
 *
 * Invariants
 *  1. Every event with revision > floor_rev that the hub has pulled is in
 *     the ring, in (revision, op) order.
 *  2. A watcher's ring cursor only moves by whole revisions: a transaction's
 *     events are copied (into the caller's buffer or the watcher's pending
 *     buffer) together, so a stream that ends, ends between revisions and
 *     the client resumes exactly from the last resourceVersion it saw.
 *  3. A watcher never sends an event with revision <= its sent_rev.
 *  4. Only the watcher's own watcher_read moves it between backlog and
 *     ring (in_ring), so its caller may ask watcher_reads_store unlocked.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKLOG_PAGE 512

struct ring_event {
	int64_t rev;
	char *key;
	char *line;		/* "{...}\n" */
	size_t len;
};

struct buf {
	char *data;
	size_t len, off, cap;
};

struct watcher {
	struct watch_hub *hub;
	struct watcher *prev, *next;
	char *prefix;
	size_t prefix_len;
	int64_t sent_rev;	/* everything <= this is sent (or queued) */
	bool in_ring;
	uint64_t seq;		/* ring mode: next ring slot to look at */
	bool history_done;	/* backlog mode: the store had nothing more */
	struct buf out;		/* lines queued but not yet copied out */
	struct store_kv_list initial;	/* INITIAL: objects not yet sent as ADDED */
	size_t initial_next;
	bool waiting;
	bool behind;
	watcher_wake_fn wake;
	void *arg;
};

struct watch_hub {
	pthread_mutex_t lock;		/* all below but store (see Threads) */
	struct store *store;
	struct ring_event *ring;
	size_t cap;
	uint64_t first_seq, next_seq;	/* ring holds [first_seq, next_seq) */
	int64_t rev;			/* pulled up to this revision */
	int64_t floor_rev;		/* invariant 1 */
	struct watcher *watchers;
	size_t nwatchers;
};

static int buf_append(struct buf *b, const char *s, size_t n)
{
	if (b->off && b->off == b->len) {
		b->off = b->len = 0;
	}
	if (b->len + n > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;
		char *p;
		while (ncap < b->len + n)
			ncap *= 2;
		p = realloc(b->data, ncap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = ncap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

static size_t buf_take(struct buf *b, char *dst, size_t max)
{
	size_t n = b->len - b->off;

	if (n > max)
		n = max;
	if (n == 0)
		return 0;
	memcpy(dst, b->data + b->off, n);
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
	return n;
}

static bool has_prefix(const char *key, const char *prefix, size_t len)
{
	return strncmp(key, prefix, len) == 0;
}

/* The JSON line for one store event: {"type":..,"object":..}\n (malloc'd). */
static char *event_line(const struct store_event *e, size_t *len)
{
	const struct store_kv *src = e->type == STORE_EVENT_DELETE ? &e->prev : &e->kv;
	struct store_kv kv;
	json_t *obj, *ev;
	const char *type;
	char *s, *line;

	if (!src->key)
		return NULL;
	kv = *src;
	kv.mod_rev = e->kv.mod_rev;	/* a deleted object carries the delete's revision */
	obj = obj_from_kv(&kv);
	if (!obj)
		return NULL;
	if (e->type == STORE_EVENT_DELETE)
		type = "DELETED";
	else
		type = e->kv.create_rev == e->kv.mod_rev ? "ADDED" : "MODIFIED";
	ev = json_pack("{s:s, s:o}", "type", type, "object", obj);
	s = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(ev);
	if (!s)
		return NULL;
	*len = strlen(s) + 1;
	line = realloc(s, *len + 1);
	if (!line) {
		free(s);
		return NULL;
	}
	line[*len - 1] = '\n';
	line[*len] = 0;
	return line;
}

struct watch_hub *watch_hub_new(struct store *s, size_t ring_events)
{
	struct watch_hub *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->store = s;
	h->cap = ring_events ? ring_events : 65536;
	h->ring = calloc(h->cap, sizeof(*h->ring));
	if (!h->ring || store_revision(s, &h->rev)) {
		free(h->ring);
		free(h);
		return NULL;
	}
	h->floor_rev = h->rev;
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

void watch_hub_lock(struct watch_hub *h) { pthread_mutex_lock(&h->lock); }
void watch_hub_unlock(struct watch_hub *h) { pthread_mutex_unlock(&h->lock); }

static void ring_slot_free(struct ring_event *e)
{
	free(e->key);
	free(e->line);
	memset(e, 0, sizeof(*e));
}

void watch_hub_free(struct watch_hub *h)
{
	if (!h)
		return;
	while (h->watchers)
		watcher_close(h->watchers);
	for (uint64_t s = h->first_seq; s < h->next_seq; s++)
		ring_slot_free(&h->ring[s % h->cap]);
	free(h->ring);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

size_t watch_hub_watchers(struct watch_hub *h) { return h->nwatchers; }
int64_t watch_hub_revision(struct watch_hub *h) { return h->rev; }

static void ring_push(struct watch_hub *h, int64_t rev, char *key, char *line, size_t len)
{
	if (h->next_seq - h->first_seq == h->cap) {
		struct ring_event *old = &h->ring[h->first_seq % h->cap];
		if (old->rev > h->floor_rev)
			h->floor_rev = old->rev;
		for (struct watcher *w = h->watchers; w; w = w->next)
			if (w->in_ring && w->seq <= h->first_seq)
				w->behind = true;
		ring_slot_free(old);
		h->first_seq++;
	}
	h->ring[h->next_seq % h->cap] = (struct ring_event){ rev, key, line, len };
	h->next_seq++;
}

/* First ring slot whose revision is > rev. */
static uint64_t ring_seek(struct watch_hub *h, int64_t rev)
{
	uint64_t lo = h->first_seq, hi = h->next_seq;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (h->ring[mid % h->cap].rev <= rev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* No watchers: forget the ring, the floor moves to rev (hub lock held). */
static void ring_drop(struct watch_hub *h, int64_t rev)
{
	for (; h->first_seq < h->next_seq; h->first_seq++)
		ring_slot_free(&h->ring[h->first_seq % h->cap]);
	h->rev = h->floor_rev = rev;
}

/* Wake the waiting watchers that have something in the ring from slot
 * before on (hub lock held). */
static void wake_waiting(struct watch_hub *h, uint64_t before)
{
	for (struct watcher *w = h->watchers, *next; w; w = next) {
		bool wake = w->behind;

		next = w->next;
		if (!w->waiting)
			continue;
		for (uint64_t s = before > h->first_seq ? before : h->first_seq; !wake && s < h->next_seq; s++)
			wake = has_prefix(h->ring[s % h->cap].key, w->prefix, w->prefix_len);
		if (wake) {
			w->waiting = false;
			if (w->wake)
				w->wake(w->arg);
		}
	}
}

int watch_hub_sync(struct watch_hub *h)
{
	uint64_t before;
	bool more = true;

	/* h->rev and nwatchers change only under the caller's store lock, which it holds */
	if (h->nwatchers == 0) {
		/* nobody to serve: move the floor instead of serialising events;
		 * a later watcher from an older revision reads the store's history */
		int64_t rev;
		if (store_revision(h->store, &rev))
			return -EIO;
		pthread_mutex_lock(&h->lock);
		ring_drop(h, rev);
		pthread_mutex_unlock(&h->lock);
		return 0;
	}

	pthread_mutex_lock(&h->lock);
	before = h->next_seq;
	pthread_mutex_unlock(&h->lock);
	while (more) {
		struct store_event_list l = { 0 };
		int err = store_events(h->store, OBJ_PREFIX, h->rev, 4096, &l);

		if (err == -ESTORE_COMPACTED) {
			/* someone compacted past us: nobody can be served from before */
			int64_t rev;
			if (store_revision(h->store, &rev))
				return -EIO;
			pthread_mutex_lock(&h->lock);
			h->rev = h->floor_rev = rev;
			for (struct watcher *w = h->watchers; w; w = w->next)
				w->behind = true;
			pthread_mutex_unlock(&h->lock);
			break;
		}
		if (err)
			return err;
		for (size_t i = 0; i < l.n; i++) {
			const struct store_event *e = &l.events[i];
			size_t len = 0;
			/* serialised outside the hub's lock: readers go on meanwhile */
			char *line = event_line(e, &len);
			char *key = strdup(e->kv.key);

			if (!line || !key) {
				free(line);
				free(key);
				continue;
			}
			pthread_mutex_lock(&h->lock);
			ring_push(h, e->kv.mod_rev, key, line, len);
			h->rev = e->kv.mod_rev;
			pthread_mutex_unlock(&h->lock);
		}
		if (!l.more && l.revision > h->rev) {
			pthread_mutex_lock(&h->lock);
			h->rev = l.revision;
			pthread_mutex_unlock(&h->lock);
		}
		more = l.more;
		store_event_list_free(&l);
	}

	pthread_mutex_lock(&h->lock);
	wake_waiting(h, before);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

int watch_hub_written(struct watch_hub *h, int64_t rev)
{
	if (h->nwatchers == 0 && rev > h->rev) {
		pthread_mutex_lock(&h->lock);
		ring_drop(h, rev);
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	return watch_hub_sync(h);
}

struct watcher *watcher_open(struct watch_hub *h, const char *prefix, int64_t after_rev,
			     watcher_wake_fn wake, void *arg, struct status *st)
{
	struct watcher *w;
	int64_t compacted = 0;

	if (store_compacted(h->store, &compacted)) {
		status_set(st, 500, "InternalError", "store: cannot read the compaction revision");
		return NULL;
	}
	if (after_rev >= 0 && after_rev < compacted) {
		status_set(st, 410, "Expired",
			   "too old resource version: %" PRId64 " (compacted to %" PRId64 "); list again",
			   after_rev, compacted);
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->prefix = strdup(prefix))) {
		free(w);
		status_set(st, 500, "InternalError", "out of memory");
		return NULL;
	}
	w->hub = h;
	w->prefix_len = strlen(prefix);
	w->wake = wake;
	w->arg = arg;

	if (after_rev < 0) {
		/* the initial list: ADDED for every current object, made as it is read */
		if (store_range(h->store, prefix, NULL, 0, &w->initial)) {
			status_set(st, 500, "InternalError", "store: cannot list %s", prefix);
			free(w->prefix);
			free(w);
			return NULL;
		}
		after_rev = w->initial.revision;
	}
	w->sent_rev = after_rev;
	pthread_mutex_lock(&h->lock);
	if (after_rev >= h->floor_rev) {
		w->in_ring = true;
		w->seq = ring_seek(h, after_rev);
	}
	w->next = h->watchers;
	if (h->watchers)
		h->watchers->prev = w;
	h->watchers = w;
	h->nwatchers++;
	pthread_mutex_unlock(&h->lock);
	return w;
}

bool watcher_reads_store(const struct watcher *w)
{
	return !w->in_ring;	/* invariant 4 */
}

/* Backlog mode: read the next page of history into out. */
static int backlog_fill(struct watcher *w)
{
	struct watch_hub *h = w->hub;
	struct store_event_list l = { 0 };
	int err = store_events(h->store, w->prefix, w->sent_rev, BACKLOG_PAGE, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		size_t len;
		char *line = event_line(&l.events[i], &len);
		if (line) {
			err = buf_append(&w->out, line, len);
			free(line);
			if (err)
				break;
		}
		w->sent_rev = l.events[i].kv.mod_rev;
	}
	if (!l.more) {
		if (l.revision > w->sent_rev)
			w->sent_rev = l.revision;
		if (w->sent_rev >= h->floor_rev) {
			w->in_ring = true;
			w->seq = ring_seek(h, w->sent_rev);
		}
	}
	store_event_list_free(&l);
	return err;
}

/* INITIAL: queue ADDED lines for the snapshot's objects until max bytes
 * are queued, freeing each object once queued. */
static void initial_fill(struct watcher *w, size_t max)
{
	while (w->initial_next < w->initial.n && w->out.len - w->out.off < max) {
		struct store_event e = { .type = STORE_EVENT_PUT, .kv = w->initial.kvs[w->initial_next] };
		size_t len;
		char *line;

		e.kv.create_rev = e.kv.mod_rev;	/* ADDED */
		line = event_line(&e, &len);
		if (line)
			(void)buf_append(&w->out, line, len);
		free(line);
		store_kv_free(&w->initial.kvs[w->initial_next++]);
	}
	if (w->initial_next == w->initial.n) {
		store_kv_list_free(&w->initial);
		w->initial_next = 0;
	}
}

/* Ring mode: queue whole revisions from the cursor until max bytes are queued. */
static void ring_fill(struct watcher *w, size_t max)
{
	struct watch_hub *h = w->hub;

	while (w->seq < h->next_seq && w->out.len - w->out.off < max) {
		int64_t rev = h->ring[w->seq % h->cap].rev;

		while (w->seq < h->next_seq && h->ring[w->seq % h->cap].rev == rev) {
			struct ring_event *e = &h->ring[w->seq % h->cap];
			if (rev > w->sent_rev && has_prefix(e->key, w->prefix, w->prefix_len))
				(void)buf_append(&w->out, e->line, e->len);
			w->seq++;
		}
		if (rev > w->sent_rev)
			w->sent_rev = rev;
	}
}

ssize_t watcher_read(struct watcher *w, char *dst, size_t max)
{
	size_t n = 0;

	for (;;) {
		n += buf_take(&w->out, dst + n, max - n);
		if (n == max)
			return (ssize_t)n;
		if (w->initial.n) {
			initial_fill(w, max - n);
			continue;
		}
		if (w->behind)
			return n ? (ssize_t)n : -1;
		if (!w->in_ring) {
			if (backlog_fill(w))
				return n ? (ssize_t)n : -1;
			if (w->out.len == w->out.off && !w->in_ring)
				continue;
		} else {
			ring_fill(w, max - n);
			if (w->out.len == w->out.off)
				break;
		}
	}
	if (n == 0)
		w->waiting = true;
	return (ssize_t)n;
}

void watcher_close(struct watcher *w)
{
	struct watch_hub *h;

	if (!w)
		return;
	h = w->hub;
	pthread_mutex_lock(&h->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		h->watchers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	h->nwatchers--;
	pthread_mutex_unlock(&h->lock);
	store_kv_list_free(&w->initial);
	free(w->out.data);
	free(w->prefix);
	free(w);
}
