/*
 * watch.c — the watch hub: one stream of store events fanned out to many
 * watchers, each serialised once.
 *
 * The hub pulls events from the store (watch_hub_sync, after every local
 * write and periodically for other writers) into a ring of ready-to-send
 * JSON lines.  A plain watcher is a cursor into that ring plus a prefix
 * filter; reading copies the lines it has not sent into the caller's
 * buffer.  Plain watchers are filed by collection (each ring slot carries
 * its collection's number), so a write wakes, and costs, only the
 * watchers of its collection: thousands of agents watch half a dozen
 * collections each, and a Node's report must not cost all of them.  A
 * watcher that starts before what the ring holds first reads the
 * store's history in pages (backlog), then joins the ring.  A watcher
 * without a revision starts with an ADDED event for every object: it keeps
 * the store's snapshot and serialises it a read at a time (INITIAL), so a
 * watch of a big collection never holds the caller's lock for the whole
 * of it.
 *
 *      watcher_open ──► [INITIAL] ──► BACKLOG ──(history read up to the ring's floor)──► RING
 *                          │ store_events pages                             │
 *                          ▼                                                ▼
 *                     watcher_read copies lines        the ring overwrote its cursor:
 *                                                      watcher_read returns -1 (END)
 *
 * Selective watchers.  A watcher with a selector (labelSelector,
 * fieldSelector, or the name of a watch of one object) does not scan the
 * ring: it is filed in the hub's index (watch_index.c) by the exact field
 * value it requires, and watch_hub_sync, which has every new event parsed
 * anyway, asks the index which watchers the event may concern, judges
 * those by their selector (watch_event.c: an update out of a selection is
 * a DELETED for it, into it an ADDED) and queues (ring slot, what to send)
 * on each that is sent something, waking it.  So an event costs the
 * unindexed selective watchers plus its buckets, not every watcher, and a
 * selective watcher is woken only for what it is sent.  Plain watchers do
 * not pay for any of it: without selective watchers the sync parses and
 * serialises exactly as before, and with them it parses an update's old
 * value once more.  A selective watcher reads every event from before it
 * was opened from the store (its backlog ends at the hub's revision when
 * it opened, join_rev), since the index never saw those; an update that
 * moves an object out of some watcher's selection gets its DELETED line
 * made once, kept in the ring slot beside the event's own line.
 *
 * Threads: two locks.  The caller's store lock (the API's global lock)
 * covers every store read: watch_hub_sync's, watcher_open's and a
 * watcher's outside the ring (backlog); and the set of watchers and the
 * index, which only watcher_open and watcher_close change and
 * watch_hub_sync reads.  The hub's own lock (h->lock) covers the ring,
 * the watcher lists and every watcher's cursor and queue: the hub takes it
 * itself, but for watcher_read and watcher_bookmark, whose caller holds it
 * (watch_hub_lock) so that what it does on a 0 — suspend its stream — is
 * one critical section with the wake-up that ends it (wake functions run
 * with the lock held).  watch_hub_sync reads, serialises and judges new
 * events under the store lock only and takes the hub's lock just to append
 * a page of them, queue and wake; so a watcher in the ring is read under
 * the hub's lock alone and never waits for a commit.  Order: store lock,
 * then hub lock.
 *
 * Invariants
 *  1. Every event with revision > floor_rev that the hub has pulled is in
 *     the ring, in (revision, op) order.
 *  2. A watcher's ring cursor (or queue) only moves by whole revisions: a
 *     transaction's events are appended to the ring in one critical
 *     section, and copied (into the caller's buffer or the watcher's
 *     pending buffer) together, so a stream that ends, ends between
 *     revisions and the client resumes exactly from the last
 *     resourceVersion it saw.
 *  3. A watcher never sends an event with revision <= its sent_rev.
 *  4. Only the watcher's own watcher_read moves it between backlog and
 *     ring (in_ring), so its caller may ask watcher_reads_store unlocked.
 *  5. A selective watcher is in the index from watcher_open to
 *     watcher_close, so every event with revision > join_rev is judged for
 *     it at the sync that pulls it; it joins the ring only once sent_rev >=
 *     max(join_rev, floor_rev).
 *  6. A selective watcher's queue holds (seq, rev) in ring order, at most
 *     QUEUE_MAX (an eighth of the ring's capacity) of them; an entry whose slot the
 *     ring overwrote, or that a full queue dropped, ends the stream (like a
 *     plain cursor overtaken) unless its revision was sent.
 */
#include "controller/controller.h"
#include "controller/watch_event.h"
#include "controller/watch_index.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKLOG_PAGE 512
/* Events queued on a selective watcher that has not read them: an eighth
 * of the ring (8,192 of the controller's 65,536), at least 16. */
#define QUEUE_MAX(cap) ((cap) / 8 > 16 ? (cap) / 8 : (cap) < 16 ? (cap) : 16)

struct ring_event {
	int64_t rev;
	char *key;
	uint16_t coll;		/* its collection in the hub's table (0: none) */
	char *line;		/* "{...}\n" */
	size_t len;
	char *left;		/* the DELETED line for watchers an update left (or NULL) */
	size_t left_len;
	/* how to judge it for a selective watcher that opens later (NULL:
	 * pulled while there was none; such a watcher reads the store) */
	struct watch_judge *judge;
};

struct buf {
	char *data;
	size_t len, off, cap;
};

/* What the hub dispatched to a selective watcher: ring slot seq (of
 * revision rev), to be sent as how. */
struct queued {
	uint64_t seq;
	int64_t rev;
	enum watch_delivery how;
};

struct queue {
	struct queued *q;	/* circular: [head, head + n) modulo cap */
	size_t head, n, cap;
};

struct watcher {
	struct watch_hub *hub;
	struct watcher *prev, *next;		/* every watcher */
	struct watcher *plain_prev, *plain_next;	/* plain: its collection's list */
	char *prefix;
	size_t prefix_len;
	uint16_t coll;		/* plain: the collection its prefix is in (0: none) */
	bool whole;		/* plain: its prefix is the whole collection */
	char *scan;		/* what its store reads cover: prefix, or narrower (struct watch_spec) */
	struct selector sel;
	bool selective;
	struct watch_index_entry entry;		/* selective: in the hub's index (invariant 5) */
	int64_t join_rev;			/* selective: the ring serves it after this */
	int64_t sent_rev;	/* everything <= this is sent (or queued) */
	bool in_ring;
	uint64_t seq;		/* plain, ring mode: next ring slot to look at */
	struct queue queue;	/* selective: what the sync sent it (invariant 6) */
	struct buf out;		/* lines queued but not yet copied out */
	struct store_kv_list initial;	/* INITIAL: objects not yet sent as ADDED */
	size_t initial_next;
	bool waiting;
	bool behind;
	watcher_wake_fn wake;
	void *arg;
};

/* A collection ("/weft/obj/pods/") and its plain watchers.  Entry 0 is
 * for prefixes in no collection (or past the table's room). */
struct collection {
	char *prefix;			/* owned; NULL for entry 0 */
	size_t len;
	struct watcher *plain;		/* its plain watchers (hub lock) */
	uint64_t dropped;		/* 1 + the last ring slot of it overwritten, 0: none (hub lock) */
};

#define HUB_COLLECTIONS 64

struct watch_hub {
	pthread_mutex_t lock;		/* all below but store, index, ncoll (see Threads) */
	struct store *store;
	struct ring_event *ring;
	size_t cap;
	uint64_t first_seq, next_seq;	/* ring holds [first_seq, next_seq) */
	int64_t rev;			/* pulled up to this revision */
	int64_t floor_rev;		/* invariant 1 */
	struct watcher *watchers;	/* all */
	/* the collections seen, filed as met (the caller's store lock:
	 * entries are only added); each holds its plain watchers */
	struct collection coll[HUB_COLLECTIONS];
	size_t ncoll;
	size_t nwatchers, nselective;
	struct watch_index index;	/* the selective ones */
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

static bool buf_empty(const struct buf *b)
{
	return b->len == b->off;
}

static bool has_prefix(const char *key, const char *prefix, size_t len)
{
	return strncmp(key, prefix, len) == 0;
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
	h->ncoll = 1;
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

void watch_hub_lock(struct watch_hub *h) { pthread_mutex_lock(&h->lock); }
void watch_hub_unlock(struct watch_hub *h) { pthread_mutex_unlock(&h->lock); }

static void ring_slot_free(struct ring_event *e)
{
	free(e->key);
	free(e->line);
	free(e->left);
	watch_judge_free(e->judge);
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
	for (size_t c = 1; c < h->ncoll; c++)
		free(h->coll[c].prefix);
	watch_index_free(&h->index);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

size_t watch_hub_watchers(struct watch_hub *h) { return h->nwatchers; }
int64_t watch_hub_revision(struct watch_hub *h) { return h->rev; }

/* Append one event (hub lock held); its slot is h->next_seq - 1 after. */
static void ring_push(struct watch_hub *h, struct ring_event *e)
{
	if (h->next_seq - h->first_seq == h->cap) {
		struct ring_event *old = &h->ring[h->first_seq % h->cap];
		if (old->rev > h->floor_rev)
			h->floor_rev = old->rev;
		/* a plain cursor it overtakes finds out at its next read (ring_fill) */
		h->coll[old->coll].dropped = h->first_seq + 1;
		ring_slot_free(old);
		h->first_seq++;
	}
	h->ring[h->next_seq % h->cap] = *e;
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

/* Wake w if it waits (hub lock held). */
static void wake_one(struct watcher *w)
{
	if (w->waiting) {
		w->waiting = false;
		if (w->wake)
			w->wake(w->arg);
	}
}

/* The length of the collection prefix of key ("/weft/obj/pods/" of
 * "/weft/obj/pods/ns/name"), 0 when it has none. */
static size_t collection_len(const char *key)
{
	const char *slash = strncmp(key, OBJ_PREFIX, strlen(OBJ_PREFIX)) == 0 ? strchr(key + strlen(OBJ_PREFIX), '/')
									      : NULL;

	return slash ? (size_t)(slash + 1 - key) : 0;
}

/* The collection key is in, filed in the table if new (caller's store
 * lock); 0 when it has none or the table has no room (such keys and
 * watchers are compared the slow way, by prefix). */
static uint16_t collection_id(struct watch_hub *h, const char *key)
{
	size_t n = collection_len(key), c;

	if (!n)
		return 0;
	for (c = 1; c < h->ncoll; c++)
		if (h->coll[c].len == n && memcmp(h->coll[c].prefix, key, n) == 0)
			return (uint16_t)c;
	if (h->ncoll == HUB_COLLECTIONS || !(h->coll[c].prefix = strndup(key, n)))
		return 0;
	h->coll[c].len = n;
	h->ncoll++;
	return (uint16_t)c;
}

/* Does ring slot e concern plain watcher w? */
static bool plain_wants(const struct watcher *w, const struct ring_event *e)
{
	if (w->coll && e->coll != w->coll)
		return e->coll == 0 && has_prefix(e->key, w->prefix, w->prefix_len);
	return w->whole || has_prefix(e->key, w->prefix, w->prefix_len);
}

/* Wake the waiting plain watchers that have something in the ring from
 * slot before on (hub lock held).  The new slots' collections are marked
 * first (a sync's events are of a few kinds); then only the watchers of
 * those collections are looked at, and a watcher of a whole collection
 * is woken without comparing keys: a write costs the watchers it
 * concerns, not every agent's every watch.  Watchers of less than a
 * collection (one namespace), and of prefixes in none, compare keys. */
static void wake_waiting(struct watch_hub *h, uint64_t before)
{
	bool seen[HUB_COLLECTIONS] = { false };
	uint64_t from = before > h->first_seq ? before : h->first_seq;

	for (uint64_t s = from; s < h->next_seq; s++)
		seen[h->ring[s % h->cap].coll] = true;
	for (size_t c = 0; c < h->ncoll; c++) {
		/* entry 0's watchers may want a slot of any collection, and a
		 * slot of entry 0 may be any watcher's */
		if (!seen[c] && c && !seen[0])
			continue;
		for (struct watcher *w = h->coll[c].plain, *next; w; w = next) {
			bool wake = seen[c] && w->whole;

			next = w->plain_next;
			if (!w->waiting)
				continue;
			for (uint64_t s = from; !wake && s < h->next_seq; s++)
				wake = plain_wants(w, &h->ring[s % h->cap]);
			if (wake)
				wake_one(w);
		}
	}
}

/* ------------------------------------------------------------------ dispatch to selective watchers */

/* Queue (seq, rev, how) on w (hub lock held).  A queue holds at most
 * QUEUE_MAX entries (never more than the ring): when full, the oldest
 * goes, and if it was still to be sent the stream ends (behind) and its
 * client resumes, as a plain watcher the ring overtakes (invariant 6). */
static void queue_add(struct watch_hub *h, struct watcher *w, uint64_t seq, int64_t rev, enum watch_delivery how)
{
	struct queue *q = &w->queue;
	size_t max = QUEUE_MAX(h->cap);

	if (q->n == q->cap && q->cap < max) {
		size_t ncap = q->cap ? 2 * q->cap : 16;
		struct queued *nq;

		if (ncap > max)
			ncap = max;
		nq = malloc(ncap * sizeof(*nq));
		if (!nq) {
			w->behind = true;	/* the stream ends and resumes */
			wake_one(w);
			return;
		}
		for (size_t i = 0; i < q->n; i++)
			nq[i] = q->q[(q->head + i) % q->cap];
		free(q->q);
		q->q = nq;
		q->head = 0;
		q->cap = ncap;
	}
	if (q->n == q->cap) {
		const struct queued *old = &q->q[q->head];

		/* lost if still to be sent: from the ring now, or later (its slot is live) */
		if (old->rev > w->sent_rev && (w->in_ring || old->seq >= h->first_seq))
			w->behind = true;
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
	q->q[(q->head + q->n) % q->cap] = (struct queued){ seq, rev, how };
	q->n++;
	wake_one(w);
}

/* A page of events being judged for the selective watchers (store lock
 * held, hub lock not): for each event, the watchers sent something. */
struct target {
	size_t event;		/* index in the page */
	struct watcher *w;
	enum watch_delivery how;
};

struct dispatch {
	struct target *t;
	size_t n, cap;
	struct watch_event *ev;		/* the event being judged (judge may fill its network cache) */
	size_t event;
	const char *key;
	bool left;			/* some watcher is sent WATCH_LEFT for it */
	int error;
};

static void judge(void *owner, void *arg)
{
	struct watcher *w = owner;
	struct dispatch *d = arg;
	enum watch_delivery how;

	if (!has_prefix(d->key, w->prefix, w->prefix_len))
		return;
	how = watch_event_delivery(d->ev, &w->sel);
	if (how == WATCH_NOTHING)
		return;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? 2 * d->cap : 64;
		struct target *nt = realloc(d->t, ncap * sizeof(*nt));

		if (!nt) {
			d->error = -ENOMEM;	/* append_page ends the selective streams: they resume */
			return;
		}
		d->t = nt;
		d->cap = ncap;
	}
	d->t[d->n++] = (struct target){ d->event, w, how };
	d->left |= how == WATCH_LEFT;
}

/* One store event made ready for the ring: its line, and for the
 * selective watchers the targets it has (added to d). */
static void prepare(struct watch_hub *h, const struct store_event *e, size_t i, struct dispatch *d,
		    struct ring_event *out)
{
	struct watch_event ev;

	memset(out, 0, sizeof(*out));
	if (watch_event_parse(e, h->nselective > 0, &ev))
		return;
	out->rev = e->kv.mod_rev;
	out->key = strdup(e->kv.key);
	out->coll = collection_id(h, e->kv.key);
	out->line = watch_event_line(ev.type, ev.obj, &out->len);
	if (out->key && out->line && h->nselective) {
		d->ev = &ev;
		d->event = i;
		d->key = e->kv.key;
		d->left = false;
		watch_index_candidates(&h->index, e->kv.key, ev.has_now ? &ev.now : NULL,
				       ev.has_before ? &ev.before : NULL, judge, d);
		if (d->left)
			out->left = watch_event_line_for(&ev, WATCH_LEFT, &out->left_len);
		out->judge = watch_judge_of(&ev);	/* NULL: later watchers read the store */
	}
	if (!out->key || !out->line)
		ring_slot_free(out);
	watch_event_free(&ev);
}

/* Append a prepared page to the ring and queue its targets (hub lock held). */
static void append_page(struct watch_hub *h, struct ring_event *page, size_t n, const struct dispatch *d)
{
	uint64_t *seq = d->n ? calloc(n, sizeof(*seq)) : NULL;
	size_t t = 0;

	for (size_t i = 0; i < n; i++) {
		if (!page[i].line)
			continue;
		if (seq)
			seq[i] = h->next_seq;
		ring_push(h, &page[i]);
		memset(&page[i], 0, sizeof(page[i]));
	}
	for (struct watcher *w = d->error ? h->watchers : NULL; w; w = w->next)
		if (w->selective) {
			w->behind = true;
			wake_one(w);
		}
	for (; t < d->n; t++) {
		struct target *x = &d->t[t];

		if (!seq || (x->how == WATCH_LEFT && !h->ring[seq[x->event] % h->cap].left))
			x->w->behind = true;	/* out of memory: the stream ends and resumes */
		else
			queue_add(h, x->w, seq[x->event], h->ring[seq[x->event] % h->cap].rev, x->how);
		if (x->w->behind)
			wake_one(x->w);
	}
	free(seq);
}

int watch_hub_sync(struct watch_hub *h)
{
	uint64_t before;
	bool more = true;

	/* h->rev and nwatchers change only under the caller's store lock, which it holds */
	if (h->nwatchers == 0) {
		/* nobody to serve: move the floor instead of serialising events;
		 * a later watcher from an older revision reads the store's
		 * history.  Where to: the revision any read of events is
		 * complete up to (etcd answers it from its event cache, where
		 * store_revision would be a round trip at every turn of the
		 * loop, that is at every write of another controller) */
		struct store_event_list l = { 0 };
		int64_t rev;
		int err = store_events(h->store, OBJ_PREFIX, h->rev, 1, &l);

		rev = l.revision;
		store_event_list_free(&l);
		if (err == -ESTORE_COMPACTED)
			err = store_revision(h->store, &rev);
		if (err)
			return -EIO;
		pthread_mutex_lock(&h->lock);
		if (rev > h->rev)
			ring_drop(h, rev);
		pthread_mutex_unlock(&h->lock);
		return 0;
	}

	pthread_mutex_lock(&h->lock);
	before = h->next_seq;
	pthread_mutex_unlock(&h->lock);
	while (more) {
		struct store_event_list l = { 0 };
		struct dispatch d = { 0 };
		struct ring_event *page;
		int err = store_events(h->store, OBJ_PREFIX, h->rev, 4096, &l);

		if (err == -ESTORE_COMPACTED) {
			/* someone compacted past us: nobody can be served from before */
			int64_t rev;
			if (store_revision(h->store, &rev))
				return -EIO;
			pthread_mutex_lock(&h->lock);
			h->rev = h->floor_rev = rev;
			for (struct watcher *w = h->watchers; w; w = w->next) {
				w->behind = true;
				wake_one(w);
			}
			pthread_mutex_unlock(&h->lock);
			break;
		}
		if (err)
			return err;
		page = calloc(l.n ? l.n : 1, sizeof(*page));
		if (!page) {
			store_event_list_free(&l);
			return -ENOMEM;
		}
		/* serialised and judged outside the hub's lock: readers go on meanwhile */
		for (size_t i = 0; i < l.n; i++)
			prepare(h, &l.events[i], i, &d, &page[i]);
		pthread_mutex_lock(&h->lock);
		append_page(h, page, l.n, &d);	/* a page holds whole revisions: invariant 2 */
		if (l.n)
			h->rev = l.events[l.n - 1].kv.mod_rev;
		if (!l.more && l.revision > h->rev)
			h->rev = l.revision;
		pthread_mutex_unlock(&h->lock);
		for (size_t i = 0; i < l.n; i++)
			ring_slot_free(&page[i]);
		free(page);
		free(d.t);
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

/* ------------------------------------------------------------------ watchers */

/* The resource a prefix is of (/weft/obj/pods/... -> "pods"), into buf. */
static const char *resource_of(const char *prefix, char *buf, size_t len)
{
	const char *r = prefix + strlen(OBJ_PREFIX), *slash = strchr(r, '/');
	size_t n = slash ? (size_t)(slash - r) : strlen(r);

	if (n >= len)
		n = len - 1;
	memcpy(buf, r, n);
	buf[n] = 0;
	return buf;
}

/* File w in the hub's lists and index (store and hub locks held). */
static int watcher_link(struct watch_hub *h, struct watcher *w)
{
	if (w->selective) {
		char resource[128];
		int err;

		w->entry.owner = w;
		err = watch_index_add(&h->index, &w->entry, resource_of(w->prefix, resource, sizeof(resource)),
				      &w->sel);
		if (err)
			return err;
		h->nselective++;
	} else {
		struct collection *c;

		w->coll = collection_id(h, w->prefix);
		w->whole = w->coll && h->coll[w->coll].len == w->prefix_len;
		c = &h->coll[w->coll];
		w->plain_next = c->plain;
		if (c->plain)
			c->plain->plain_prev = w;
		c->plain = w;
	}
	w->next = h->watchers;
	if (h->watchers)
		h->watchers->prev = w;
	h->watchers = w;
	h->nwatchers++;
	return 0;
}

static void watcher_unlink(struct watch_hub *h, struct watcher *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		h->watchers = w->next;
	if (w->next)
		w->next->prev = w->prev;
	if (w->selective) {
		watch_index_remove(&h->index, &w->entry);
		h->nselective--;
	} else {
		if (w->plain_prev)
			w->plain_prev->plain_next = w->plain_next;
		else
			h->coll[w->coll].plain = w->plain_next;
		if (w->plain_next)
			w->plain_next->plain_prev = w->plain_prev;
	}
	h->nwatchers--;
}

static void watcher_free(struct watcher *w)
{
	if (!w)
		return;
	store_kv_list_free(&w->initial);
	selector_free(&w->sel);
	free(w->queue.q);
	free(w->out.data);
	if (w->scan != w->prefix)
		free(w->scan);
	free(w->prefix);
	free(w);
}

/* The revision from which the ring serves w. */
static int64_t ring_from(const struct watch_hub *h, const struct watcher *w)
{
	return w->selective && w->join_rev > h->floor_rev ? w->join_rev : h->floor_rev;
}

struct watcher *watcher_open(struct watch_hub *h, struct watch_spec *spec, int64_t after_rev, watcher_wake_fn wake,
			     void *arg, struct status *st)
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
	if (w && (w->prefix = strdup(spec->prefix)))
		w->scan = spec->scan ? strdup(spec->scan) : w->prefix;
	if (!w || !w->prefix || !w->scan) {
		watcher_free(w);
		status_set(st, 500, "InternalError", "out of memory");
		return NULL;
	}
	w->hub = h;
	w->prefix_len = strlen(w->prefix);
	w->wake = wake;
	w->arg = arg;
	if (spec->sel) {
		w->sel = *spec->sel;	/* taken over */
		memset(spec->sel, 0, sizeof(*spec->sel));
		w->selective = !selector_empty(&w->sel);
	}

	if (after_rev < 0) {
		/* the initial list: ADDED for every current object, made as it is read */
		if (store_range(h->store, w->scan, NULL, 0, &w->initial)) {
			status_set(st, 500, "InternalError", "store: cannot list %s", w->scan);
			watcher_free(w);
			return NULL;
		}
		after_rev = w->initial.revision;
	}
	w->sent_rev = after_rev;
	pthread_mutex_lock(&h->lock);
	w->join_rev = h->rev;	/* invariant 5: later events are judged for it */
	if (watcher_link(h, w)) {
		pthread_mutex_unlock(&h->lock);
		status_set(st, 500, "InternalError", "out of memory");
		watcher_free(w);
		return NULL;
	}
	if (after_rev >= ring_from(h, w)) {
		w->in_ring = true;
		w->seq = ring_seek(h, after_rev);
	}
	pthread_mutex_unlock(&h->lock);
	return w;
}

bool watcher_reads_store(const struct watcher *w)
{
	return !w->in_ring;	/* invariant 4 */
}

/* The line for a store event that w is sent, appended to out (a
 * selective watcher's are judged here: the index never saw these). */
static int backlog_event(struct watcher *w, const struct store_event *e)
{
	struct watch_event ev;
	enum watch_delivery how;
	char *line;
	size_t len;
	int err;

	if (watch_event_parse(e, w->selective, &ev))
		return 0;
	how = w->selective ? watch_event_delivery(&ev, &w->sel) : WATCH_AS_IS;
	line = how == WATCH_NOTHING ? NULL : watch_event_line_for(&ev, how, &len);
	err = how != WATCH_NOTHING && !line ? -ENOMEM : 0;
	if (line)
		err = buf_append(&w->out, line, len);
	free(line);
	watch_event_free(&ev);
	return err;
}

static void queued_line(struct watcher *w, const struct queued *x);

/* w's delivery of ring slot e, or -1 when the ring cannot tell it (no
 * judge record, or a DELETED line it does not hold): the store must. */
static int ring_delivery(const struct watcher *w, const struct ring_event *e)
{
	enum watch_delivery how;

	if (!e->judge)
		return -1;
	how = watch_judge_delivery(e->judge, &w->sel);
	return how == WATCH_LEFT && !e->left ? -1 : (int)how;
}

/* Backlog mode, selective, from the ring: the events up to join_rev that
 * the index never judged for w are judged from their slots' records, a
 * revision at a time (invariant 2), so a watcher that opens in a burst of
 * writes costs no parse and no store read.  1: progress (or joined the
 * ring), 0: the ring cannot serve it from here (the store must). */
static int ring_backlog(struct watcher *w)
{
	struct watch_hub *h = w->hub;
	size_t scan_len = strlen(w->scan), budget = BACKLOG_PAGE;
	bool progress = false;
	uint64_t seq;

	if (!w->selective || w->sent_rev < h->floor_rev)
		return 0;
	seq = ring_seek(h, w->sent_rev);
	while (seq < h->next_seq && h->ring[seq % h->cap].rev <= w->join_rev && budget) {
		int64_t rev = h->ring[seq % h->cap].rev;
		uint64_t end;

		for (end = seq; end < h->next_seq && h->ring[end % h->cap].rev == rev; end++) {
			const struct ring_event *e = &h->ring[end % h->cap];

			if (has_prefix(e->key, w->scan, scan_len) && ring_delivery(w, e) < 0)
				return progress;
		}
		for (; seq < end; seq++) {
			const struct ring_event *e = &h->ring[seq % h->cap];
			struct queued x = { .seq = seq, .rev = rev };

			if (!has_prefix(e->key, w->scan, scan_len))
				continue;
			x.how = (enum watch_delivery)ring_delivery(w, e);
			queued_line(w, &x);
		}
		w->sent_rev = rev;
		progress = true;
		budget--;
	}
	if (seq == h->next_seq || h->ring[seq % h->cap].rev > w->join_rev) {
		/* every event up to join_rev is in the ring (invariant 1) and was judged */
		if (w->join_rev > w->sent_rev)
			w->sent_rev = w->join_rev;
		w->in_ring = true;
	}
	return 1;
}

/* Backlog mode: read the next page of history into out. */
static int backlog_fill(struct watcher *w)
{
	struct watch_hub *h = w->hub;
	struct store_event_list l = { 0 };
	int err;

	if (ring_backlog(w))
		return 0;
	err = store_events(h->store, w->scan, w->sent_rev, BACKLOG_PAGE, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n && !err; i++) {
		err = backlog_event(w, &l.events[i]);
		w->sent_rev = l.events[i].kv.mod_rev;
	}
	if (!err && !l.more) {
		if (l.revision > w->sent_rev)
			w->sent_rev = l.revision;
		if (w->sent_rev >= ring_from(h, w)) {
			w->in_ring = true;
			w->seq = ring_seek(h, w->sent_rev);
		}
	}
	store_event_list_free(&l);
	return err;
}

/* INITIAL: queue ADDED lines for the snapshot's objects (those the
 * selector selects) until max bytes are queued, freeing each object once
 * queued. */
static void initial_fill(struct watcher *w, size_t max)
{
	while (w->initial_next < w->initial.n && w->out.len - w->out.off < max) {
		struct store_event e = { .type = STORE_EVENT_PUT, .kv = w->initial.kvs[w->initial_next] };

		e.kv.create_rev = e.kv.mod_rev;	/* ADDED */
		(void)backlog_event(w, &e);
		store_kv_free(&w->initial.kvs[w->initial_next++]);
	}
	if (w->initial_next == w->initial.n) {
		store_kv_list_free(&w->initial);
		w->initial_next = 0;
	}
}

/* Ring mode, plain: queue whole revisions from the cursor until max
 * bytes are queued.  -1: the ring overwrote a slot of its collection
 * that it had not read (the stream ends and its client resumes); a
 * cursor overtaken by other collections' writes only moves on, so an
 * agent's watch of NetNamespaces outlives any number of pod writes. */
static int ring_fill(struct watcher *w, size_t max)
{
	struct watch_hub *h = w->hub;

	if (w->seq < h->first_seq) {
		if (!w->coll || h->coll[w->coll].dropped > w->seq || h->coll[0].dropped > w->seq)
			return -1;
		w->seq = h->first_seq;
	}
	while (w->seq < h->next_seq && w->out.len - w->out.off < max) {
		int64_t rev = h->ring[w->seq % h->cap].rev;

		while (w->seq < h->next_seq && h->ring[w->seq % h->cap].rev == rev) {
			struct ring_event *e = &h->ring[w->seq % h->cap];
			if (rev > w->sent_rev && plain_wants(w, e))
				(void)buf_append(&w->out, e->line, e->len);
			w->seq++;
		}
		if (rev > w->sent_rev)
			w->sent_rev = rev;
	}
	return 0;
}

/* One queued line into out. */
static void queued_line(struct watcher *w, const struct queued *x)
{
	const struct ring_event *e = &w->hub->ring[x->seq % w->hub->cap];
	size_t head = strlen(WATCH_MODIFIED_HEAD);

	switch (x->how) {
	case WATCH_ENTERED:
		/* the update's line, as an ADDED */
		if (e->len > head && !memcmp(e->line, WATCH_MODIFIED_HEAD, head)) {
			(void)buf_append(&w->out, WATCH_ADDED_HEAD, strlen(WATCH_ADDED_HEAD));
			(void)buf_append(&w->out, e->line + head, e->len - head);
			break;
		}
		/* not an update's line (cannot happen): as is */
		/* fall through */
	case WATCH_AS_IS:
		(void)buf_append(&w->out, e->line, e->len);
		break;
	case WATCH_LEFT:
		(void)buf_append(&w->out, e->left, e->left_len);
		break;
	case WATCH_NOTHING:
		break;
	}
}

/* Ring mode, selective: queue whole revisions of what the sync queued
 * until max bytes are queued.  -1: a slot it was to send is overwritten. */
static int queue_fill(struct watcher *w, size_t max)
{
	struct watch_hub *h = w->hub;
	struct queue *q = &w->queue;

	while (q->n && w->out.len - w->out.off < max) {
		int64_t rev = q->q[q->head].rev;

		if (rev > w->sent_rev) {
			for (size_t i = 0; i < q->n && q->q[(q->head + i) % q->cap].rev == rev; i++)
				if (q->q[(q->head + i) % q->cap].seq < h->first_seq)
					return -1;	/* invariant 6 */
		}
		while (q->n && q->q[q->head].rev == rev) {
			if (rev > w->sent_rev)
				queued_line(w, &q->q[q->head]);
			q->head = (q->head + 1) % q->cap;
			q->n--;
		}
		if (rev > w->sent_rev)
			w->sent_rev = rev;
	}
	return 0;
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
			if (buf_empty(&w->out) && !w->in_ring)
				continue;
		} else if (w->selective) {
			if (queue_fill(w, max - n))
				return n ? (ssize_t)n : -1;
			if (buf_empty(&w->out))
				break;
		} else {
			if (ring_fill(w, max - n)) {
				w->behind = true;
				return n ? (ssize_t)n : -1;
			}
			if (buf_empty(&w->out))
				break;
		}
	}
	if (n == 0)
		w->waiting = true;
	return (ssize_t)n;
}

int64_t watcher_bookmark(struct watcher *w)
{
	struct watch_hub *h = w->hub;

	/* caught up: everything up to the hub's revision was judged for it and
	 * what it was sent has left */
	if (!w->in_ring || w->initial.n || w->behind || !buf_empty(&w->out) || h->rev <= w->sent_rev)
		return -1;
	if (w->selective ? w->queue.n != 0 : w->seq != h->next_seq)
		return -1;
	w->sent_rev = h->rev;	/* invariant 3: nothing at or below it comes later */
	return h->rev;
}

void watcher_close(struct watcher *w)
{
	struct watch_hub *h;

	if (!w)
		return;
	h = w->hub;
	pthread_mutex_lock(&h->lock);
	watcher_unlink(h, w);
	pthread_mutex_unlock(&h->lock);
	watcher_free(w);
}
