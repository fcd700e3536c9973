/*
 * conns.c — the API's connection table (conns.h: the bounds, the life of
 * a connection, the invariants).
 *
 * Counts per client are a u64map from the IPv4 address to the number of
 * counted connections; an address leaves the map at 0, so the map holds
 * only clients with something open.  The two deadline lists are FIFOs:
 * every connection in one has the same timeout, so appending at the tail
 * keeps them in deadline order and expiry pops from the head.
 */
#include "controller/conns.h"
#include "lib/u64map.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

enum conn_state { CONN_OPENING, CONN_BUSY, CONN_IDLE, CONN_CLOSING };

struct conn {
	struct conn *prev, *next;	/* in its deadline list (OPENING, IDLE) */
	enum conn_state state;
	int64_t deadline_ms;
	uint32_t client;
	int fd;
	bool counted;
};

struct conn_list {
	struct conn *head, *tail;
};

/* A connection accepted and not yet set up (invariant 1). */
struct reservation {
	int fd;
	uint32_t client;
	int64_t at_ms;
};

struct conns {
	pthread_mutex_t lock;		/* everything below */
	struct conns_limits lim;
	struct u64map clients;		/* address → counted connections (+ reservations) */
	struct conn_list opening, idle;
	struct conns_stats stats;
	struct reservation *res;	/* unordered; a handful (accepted, MHD about to set up) */
	size_t nres, capres;
};

unsigned conns_limit_for(uint64_t nofile)
{
	uint64_t n;

	if (nofile <= CONNS_FD_RESERVE + 16)
		return 0;
	n = nofile - CONNS_FD_RESERVE;
	return n > CONNS_MAX ? CONNS_MAX : (unsigned)n;
}

struct conns *conns_new(const struct conns_limits *lim)
{
	struct conns *t = calloc(1, sizeof(*t));

	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->lim = *lim;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

static void list_remove(struct conn_list *l, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
}

static void list_append(struct conn_list *l, struct conn *c)
{
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

static struct conn_list *list_of(struct conns *t, struct conn *c)
{
	return c->state == CONN_OPENING ? &t->opening : c->state == CONN_IDLE ? &t->idle : NULL;
}

/* Move c to state s (out of its list, into the new one with deadline). */
static void set_state(struct conns *t, struct conn *c, enum conn_state s, int64_t deadline_ms)
{
	struct conn_list *l = list_of(t, c);

	if (l)
		list_remove(l, c);
	c->state = s;
	c->deadline_ms = deadline_ms;
	l = list_of(t, c);
	if (l)
		list_append(l, c);
}

/* Room for one more reservation (lock held): 0, or -ENOMEM. */
static int grow_reservations(struct conns *t)
{
	size_t cap = t->capres ? 2 * t->capres : 16;
	struct reservation *r = realloc(t->res, cap * sizeof(*r));

	if (!r)
		return -ENOMEM;
	t->res = r;
	t->capres = cap;
	return 0;
}

static unsigned client_count(struct conns *t, uint32_t client)
{
	uint64_t n = 0;

	(void)u64map_get(&t->clients, client, &n);
	return (unsigned)n;
}

/* Add d (+1 or −1) to client's count: true when done.  An increment that
 * finds no memory leaves the count as it was (the connection goes
 * uncounted); a decrement always succeeds. */
static bool client_add(struct conns *t, uint32_t client, int d)
{
	unsigned n = client_count(t, client);

	if (d < 0) {
		/* delete, then put back one less: after a delete a put never
		 * grows the map (it holds at most half its capacity), so a
		 * decrement cannot fail */
		(void)u64map_del(&t->clients, client);
		return n <= 1 || u64map_put(&t->clients, client, n - 1) == 0;
	}
	return u64map_put(&t->clients, client, (uint64_t)n + 1) == 0;
}

void conns_free(struct conns *t)
{
	if (!t)
		return;
	free(t->res);
	u64map_free(&t->clients);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Give reservation i back (lock held). */
static void unreserve(struct conns *t, size_t i)
{
	client_add(t, t->res[i].client, -1);
	t->res[i] = t->res[--t->nres];
}

static ssize_t reservation_of(struct conns *t, int fd)
{
	for (size_t i = 0; i < t->nres; i++)
		if (t->res[i].fd == fd)
			return (ssize_t)i;
	return -1;
}

bool conns_reserve(struct conns *t, uint32_t client, int fd, int64_t now_ms)
{
	ssize_t old;
	bool ok = false;

	pthread_mutex_lock(&t->lock);
	if ((old = reservation_of(t, fd)) >= 0)
		unreserve(t, (size_t)old);	/* the server dropped it; fd was reused */
	if (t->stats.open + t->nres >= t->lim.max_total)
		t->stats.over_limit++;
	else if (client_count(t, client) >= t->lim.max_per_client)
		t->stats.refused++;
	else if (t->nres == t->capres && grow_reservations(t))
		;	/* out of memory: refused, uncounted */
	else if (client_add(t, client, +1)) {
		t->res[t->nres++] = (struct reservation){ .fd = fd, .client = client, .at_ms = now_ms };
		ok = true;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

struct conn *conns_open(struct conns *t, uint32_t client, int fd, int64_t now_ms)
{
	struct conn *c = calloc(1, sizeof(*c));
	bool had_reservation;
	ssize_t r;

	pthread_mutex_lock(&t->lock);
	r = reservation_of(t, fd);
	had_reservation = r >= 0 && t->res[r].client == client;
	if (r >= 0 && !had_reservation)
		unreserve(t, (size_t)r);	/* another client's: not this one */
	else if (had_reservation)
		t->res[r] = t->res[--t->nres];	/* its count becomes the connection's */
	if (!c) {
		if (had_reservation)
			client_add(t, client, -1);
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	c->client = client;
	c->fd = fd;
	c->counted = had_reservation || client_add(t, client, +1);
	c->state = CONN_BUSY;
	set_state(t, c, CONN_OPENING, now_ms + t->lim.header_timeout_ms);
	t->stats.open++;
	pthread_mutex_unlock(&t->lock);
	return c;
}

void conns_close(struct conns *t, struct conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	set_state(t, c, CONN_CLOSING, 0);
	if (c->counted)
		client_add(t, c->client, -1);
	t->stats.open--;
	pthread_mutex_unlock(&t->lock);
	free(c);
}

void conns_head_done(struct conns *t, struct conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	if (c->state != CONN_CLOSING)
		set_state(t, c, CONN_BUSY, 0);
	pthread_mutex_unlock(&t->lock);
}

void conns_response_done(struct conns *t, struct conn *c, int64_t now_ms)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	if (c->state != CONN_CLOSING)
		set_state(t, c, CONN_IDLE, now_ms + t->lim.idle_timeout_ms);
	pthread_mutex_unlock(&t->lock);
}

void conns_set_counted(struct conns *t, struct conn *c, bool counted)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	if (counted != c->counted) {
		if (!counted)
			c->counted = !client_add(t, c->client, -1);
		else
			c->counted = client_add(t, c->client, +1);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Pop and shut down the due connections at the head of l. */
static size_t expire_list(struct conn_list *l, int64_t now_ms)
{
	size_t n = 0;

	while (l->head && l->head->deadline_ms <= now_ms) {
		struct conn *c = l->head;

		list_remove(l, c);
		c->state = CONN_CLOSING;
		(void)shutdown(c->fd, SHUT_RDWR);
		n++;
	}
	return n;
}

size_t conns_expire(struct conns *t, int64_t now_ms)
{
	size_t head, idle;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nres;)
		if (now_ms >= t->res[i].at_ms && now_ms - t->res[i].at_ms >= CONNS_RESERVE_MS)
			unreserve(t, i);	/* dropped before it was set up */
		else
			i++;
	head = expire_list(&t->opening, now_ms);
	idle = expire_list(&t->idle, now_ms);
	t->stats.header_timeouts += head;
	t->stats.idle_timeouts += idle;
	pthread_mutex_unlock(&t->lock);
	return head + idle;
}

void conns_stats(struct conns *t, struct conns_stats *s)
{
	pthread_mutex_lock(&t->lock);
	*s = t->stats;
	pthread_mutex_unlock(&t->lock);
}

unsigned conns_client_count(struct conns *t, uint32_t client)
{
	unsigned n;

	pthread_mutex_lock(&t->lock);
	n = client_count(t, client);
	pthread_mutex_unlock(&t->lock);
	return n;
}
