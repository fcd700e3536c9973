/*
 * conntrack.c — the sweep of weft_ct: a translated connection's FWD and
 * REV entries (bpf/weft_bpf.h, "Services") live and die together.
 *
 *	read      datapath_ct_foreach(): the whole table, in batches, copied
 *	index     an open-addressing hash of the copied keys, so a partner
 *	          is found in memory
 *	judge     per pair (visited from its FWD entry): state = the union of
 *	          both entries' flags, except that it is established only
 *	          when both entries are (the client went past its SYN, and the
 *	          backend answered: a half-open pair, answered or not, lives
 *	          CONNTRACK_TCP_SYN_S, not 6 h); age = since the later
 *	          last_seen; dead when older than conntrack_timeout(state) →
 *	          both deleted.
 *	          An entry whose partner is missing and older than the grace
 *	          is an orphan → deleted.
 *	count     every FWD entry deleted here (pair or orphan) is one
 *	          connection of its client (the FWD key's source) closed:
 *	          weft_ct_closed[client] += n.  Clients left with no entry
 *	          and equal counts are forgotten.
 *
 * Partners (ct.h, lb.h write them so):
 *
 *	FWD {client, frontend}         nat: backend, source as sent
 *	REV {backend, source as sent}  nat: frontend, client
 *
 * so FWD k, e → REV {e.nat_addr:e.nat_port, e.nat_addr2:e.nat_port2} and
 * REV k, e → FWD {e.nat_addr2:e.nat_port2, e.nat_addr:e.nat_port}.
 *
 * Invariants:
 *  1. A pair is deleted REV first, then FWD (the order the programs undo
 *     a half-made pair), and the client counted only when the FWD delete
 *     succeeded: an entry a program deleted meanwhile is not counted
 *     twice (the program counted it).
 *  2. Nothing is deleted that was written less than the grace ago unless
 *     its partner is there too (then the pair's age decides).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/conntrack.h"
#include "agent/datapath.h"

struct snapshot {
	struct weft_ct_key *keys;
	struct weft_ct_entry *vals;
	size_t n, cap;
	uint32_t *slots;	/* index + 1; 0 = empty */
	size_t mask;
	bool *gone;		/* deleted by this sweep */
};

uint32_t conntrack_timeout(uint8_t proto, uint16_t flags)
{
	if (proto != IPPROTO_TCP)
		return CONNTRACK_UDP_S;
	if (flags & WEFT_CT_F_CLOSING)
		return CONNTRACK_TCP_CLOSING_S;
	if (flags & WEFT_CT_F_ESTABLISHED)
		return CONNTRACK_TCP_ESTABLISHED_S;
	return CONNTRACK_TCP_SYN_S;
}

uint32_t conntrack_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)(((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) >>
			  WEFT_CT_TICK_SHIFT);
}

/* seconds -> ticks, rounded up */
static uint32_t ticks_of(uint32_t seconds)
{
	return (uint32_t)((((uint64_t)seconds * 1000000000ull) >> WEFT_CT_TICK_SHIFT) + 1);
}

uint32_t conntrack_timeout_ticks(uint8_t proto, uint16_t flags)
{
	return ticks_of(conntrack_timeout(proto, flags));
}

static uint64_t key_hash(const struct weft_ct_key *k)
{
	uint64_t h = 1469598103934665603ull;
	const unsigned char *b = (const unsigned char *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static int copy_one(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	struct snapshot *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		struct weft_ct_key *keys = realloc(s->keys, cap * sizeof(*keys));

		if (!keys)
			return -ENOMEM;
		s->keys = keys;
		struct weft_ct_entry *vals = realloc(s->vals, cap * sizeof(*vals));

		if (!vals)
			return -ENOMEM;
		s->vals = vals;
		s->cap = cap;
	}
	s->keys[s->n] = *k;
	s->vals[s->n] = *e;
	s->n++;
	return 0;
}

static int index_build(struct snapshot *s)
{
	size_t size = 16;

	while (size < 2 * s->n)
		size *= 2;
	s->slots = calloc(size, sizeof(*s->slots));
	s->gone = calloc(s->n ? s->n : 1, sizeof(*s->gone));
	if (!s->slots || !s->gone)
		return -ENOMEM;
	s->mask = size - 1;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = (size_t)key_hash(&s->keys[i]) & s->mask;

		while (s->slots[j])
			j = (j + 1) & s->mask;
		s->slots[j] = (uint32_t)(i + 1);
	}
	return 0;
}

/* index of k in the snapshot, or -1 */
static long find(const struct snapshot *s, const struct weft_ct_key *k)
{
	for (size_t j = (size_t)key_hash(k) & s->mask; s->slots[j]; j = (j + 1) & s->mask) {
		uint32_t i = s->slots[j] - 1;

		if (memcmp(&s->keys[i], k, sizeof(*k)) == 0)
			return i;
	}
	return -1;
}

static struct weft_ct_key partner_of(const struct weft_ct_key *k, const struct weft_ct_entry *e)
{
	struct weft_ct_key p;

	memset(&p, 0, sizeof(p));
	p.proto = k->proto;
	if (k->dir == WEFT_CT_FWD) {
		p.saddr = e->nat_addr;
		p.sport = e->nat_port;
		p.daddr = e->nat_addr2;
		p.dport = e->nat_port2;
		p.dir = WEFT_CT_REV;
	} else {
		p.saddr = e->nat_addr2;
		p.sport = e->nat_port2;
		p.daddr = e->nat_addr;
		p.dport = e->nat_port;
		p.dir = WEFT_CT_FWD;
	}
	return p;
}

/* clients whose connections this sweep closed, and how many */
struct closed_count {
	in_addr_t client;
	uint64_t n;
};

struct sweep {
	struct datapath *dp;
	struct snapshot s;
	uint32_t now;
	struct conntrack_stats st;
	struct closed_count *closed;	/* one per FWD deleted, summed later */
	size_t nclosed, capclosed;
	in_addr_t *held;		/* FWD sources left, sorted */
	size_t nheld;
};

static int note_closed(struct sweep *w, in_addr_t client)
{
	if (w->nclosed == w->capclosed) {
		size_t cap = w->capclosed ? w->capclosed * 2 : 1024;
		struct closed_count *v = realloc(w->closed, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->closed = v;
		w->capclosed = cap;
	}
	w->closed[w->nclosed].client = client;
	w->closed[w->nclosed].n = 1;
	w->nclosed++;
	return 0;
}

/* delete entry i of the snapshot; a FWD counts its client */
static int delete_entry(struct sweep *w, size_t i)
{
	const struct weft_ct_key *k = &w->s.keys[i];

	w->s.gone[i] = true;
	if (datapath_ct_del(w->dp, k) < 0)
		return 0;	/* a program deleted it (and counted it) */
	return k->dir == WEFT_CT_FWD ? note_closed(w, k->saddr) : 0;
}

static uint32_t later(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0 ? a : b;
}

static int judge(struct sweep *w, size_t i)
{
	const struct weft_ct_key *k = &w->s.keys[i];
	const struct weft_ct_entry *e = &w->s.vals[i];
	struct weft_ct_key pk = partner_of(k, e);
	long j = find(&w->s, &pk);
	uint32_t last;
	uint16_t flags;
	int err;

	if (j < 0) {
		if (w->now - e->last_seen <= CONNTRACK_ORPHAN_GRACE_TICKS)
			return 0;
		w->st.orphans++;
		return delete_entry(w, i);
	}
	if (k->dir != WEFT_CT_FWD)
		return 0;	/* the pair is judged from its FWD entry */
	last = later(e->last_seen, w->s.vals[j].last_seen);
	flags = e->flags | w->s.vals[j].flags;
	/* established takes both: the client past its SYN and an answer */
	if ((flags & WEFT_CT_F_CLOSING) || !(e->flags & w->s.vals[j].flags & WEFT_CT_F_ESTABLISHED))
		flags &= (uint16_t)~WEFT_CT_F_ESTABLISHED;
	if (w->now - last <= ticks_of(conntrack_timeout(k->proto, flags)))
		return 0;
	w->st.expired_pairs++;
	err = delete_entry(w, (size_t)j);	/* REV first */
	return err < 0 ? err : delete_entry(w, i);
}

static int cmp_closed(const void *x, const void *y)
{
	in_addr_t a = ((const struct closed_count *)x)->client;
	in_addr_t b = ((const struct closed_count *)y)->client;

	return a < b ? -1 : a > b;
}

static int cmp_addr(const void *x, const void *y)
{
	in_addr_t a = *(const in_addr_t *)x, b = *(const in_addr_t *)y;

	return a < b ? -1 : a > b;
}

/* weft_ct_closed[client] += connections closed, one write per client */
static int write_closed(struct sweep *w)
{
	size_t i = 0;

	if (!w->nclosed)
		return 0;
	qsort(w->closed, w->nclosed, sizeof(*w->closed), cmp_closed);
	while (i < w->nclosed) {
		size_t j = i + 1;
		int err;

		while (j < w->nclosed && w->closed[j].client == w->closed[i].client)
			j++;
		err = datapath_ct_closed_add(w->dp, w->closed[i].client, j - i);
		if (err < 0)
			return err;
		i = j;
	}
	return 0;
}

/* the FWD sources still in the table, sorted; the busiest one noted */
static int collect_held(struct sweep *w)
{
	w->held = malloc((w->s.n ? w->s.n : 1) * sizeof(*w->held));
	if (!w->held)
		return -ENOMEM;
	for (size_t i = 0; i < w->s.n; i++)
		if (!w->s.gone[i] && w->s.keys[i].dir == WEFT_CT_FWD)
			w->held[w->nheld++] = w->s.keys[i].saddr;
	if (w->nheld)
		qsort(w->held, w->nheld, sizeof(*w->held), cmp_addr);
	for (size_t i = 0; i < w->nheld;) {
		size_t j = i + 1;

		while (j < w->nheld && w->held[j] == w->held[i])
			j++;
		w->st.sources++;
		if (j - i > w->st.top_source_connections) {
			w->st.top_source_connections = j - i;
			w->st.top_source = w->held[i];
		}
		i = j;
	}
	return 0;
}

static int forget_idle(in_addr_t client, uint64_t closed, void *arg)
{
	struct sweep *w = arg;

	(void)closed;
	/* no client held: no array to search (bsearch wants one) */
	if (!w->nheld || !bsearch(&client, w->held, w->nheld, sizeof(*w->held), cmp_addr))
		(void)datapath_ct_source_forget(w->dp, client);	/* -EBUSY: still counted */
	return 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

int conntrack_sweep(struct datapath *dp, uint32_t now, struct conntrack_stats *st)
{
	struct sweep w;
	uint32_t services, backends, ct;
	uint64_t t0 = now_us();
	int err;

	memset(&w, 0, sizeof(w));
	w.dp = dp;
	w.now = now;
	err = datapath_ct_foreach(dp, copy_one, &w.s);
	if (err < 0)
		goto out;
	err = index_build(&w.s);
	if (err < 0)
		goto out;
	w.st.entries = w.s.n;
	for (size_t i = 0; i < w.s.n && err == 0; i++)
		if (!w.s.gone[i])
			err = judge(&w, i);
	if (err == 0)
		err = write_closed(&w);
	if (err == 0)
		err = collect_held(&w);
	if (err == 0)
		err = datapath_ct_closed_foreach(dp, forget_idle, &w);
out:
	datapath_capacities(dp, &services, &backends, &ct);
	w.st.capacity = ct;
	w.st.duration_us = now_us() - t0;
	if (st)
		*st = w.st;
	free(w.s.keys);
	free(w.s.vals);
	free(w.s.slots);
	free(w.s.gone);
	free(w.closed);
	free(w.held);
	return err;
}
