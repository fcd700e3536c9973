/*
 * nodecache.c — nodes by name, by subnet and by IP (nodecache.h).
 *
 * Invariants:
 *  1. A node is in c->names under the hash of its name, in c->subnets
 *     under subnet_key(subnet) and in c->ips under its IP, once each.
 *  2. c->nlen[l] counts the nodes whose subnet length is l, so
 *     nodecache_containing probes only the lengths in use.
 *  3. nodecache_set() changes nothing when it fails: the record and the
 *     tables' room come first, and the inserts after them cannot fail.
 */
#include "agent/nodecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t subnet_key(uint32_t addr, uint8_t len)
{
	return (uint64_t)addr << 8 | len;
}

static void insert_reserved(struct hmap *m, struct hmap_node *node, uint64_t hash)
{
	if (hmap_insert(m, node, hash) < 0)
		abort();	/* room was reserved */
}

struct nodecache_node *nodecache_find(const struct nodecache *c, const char *name)
{
	uint64_t h = hmap_hash_str(HMAP_HASH_SEED, name);

	for (struct hmap_node *e = hmap_first_with(&c->names, h); e; e = hmap_next_with(e)) {
		struct nodecache_node *n = HMAP_ENTRY(e, struct nodecache_node, by_name);

		if (strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

/* Index n's subnet and IP (room reserved). */
static void index_addresses(struct nodecache *c, struct nodecache_node *n)
{
	insert_reserved(&c->subnets, &n->by_subnet, subnet_key(n->subnet.addr, n->subnet.len));
	insert_reserved(&c->ips, &n->by_ip, n->ip);
	c->nlen[n->subnet.len]++;
}

static void unindex_addresses(struct nodecache *c, struct nodecache_node *n)
{
	(void)hmap_remove(&c->subnets, &n->by_subnet);
	(void)hmap_remove(&c->ips, &n->by_ip);
	c->nlen[n->subnet.len]--;
}

struct nodecache_node *nodecache_set(struct nodecache *c, const struct nodecache_in *in)
{
	struct nodecache_node *n = nodecache_find(c, in->name);

	if (in->subnet.len > 32 || hmap_reserve(&c->names, 1) < 0 || hmap_reserve(&c->subnets, 1) < 0 ||
	    hmap_reserve(&c->ips, 1) < 0) {
		errno = in->subnet.len > 32 ? EINVAL : ENOMEM;
		return NULL;
	}
	if (!n) {
		size_t len = strlen(in->name);

		n = calloc(1, sizeof(*n) + len + 1);
		if (!n) {
			errno = ENOMEM;
			return NULL;
		}
		memcpy(n->name, in->name, len + 1);
		insert_reserved(&c->names, &n->by_name, hmap_hash_str(HMAP_HASH_SEED, in->name));
	} else {
		unindex_addresses(c, n);
	}
	n->ip = in->ip;
	n->subnet = in->subnet;
	n->id = in->id;
	n->gen = c->gen;
	index_addresses(c, n);
	return n;
}

void nodecache_begin_list(struct nodecache *c)
{
	c->gen++;
}

void nodecache_mark(struct nodecache *c, struct nodecache_node *n)
{
	n->gen = c->gen;
}

void nodecache_del(struct nodecache *c, struct nodecache_node *n)
{
	(void)hmap_remove(&c->names, &n->by_name);
	unindex_addresses(c, n);
	free(n);
}

size_t nodecache_count(const struct nodecache *c)
{
	return c->names.n;
}

struct nodecache_node *nodecache_first(const struct nodecache *c)
{
	return HMAP_ENTRY(hmap_first(&c->names), struct nodecache_node, by_name);
}

struct nodecache_node *nodecache_next(const struct nodecache *c, const struct nodecache_node *n)
{
	return HMAP_ENTRY(hmap_next(&c->names, &n->by_name), struct nodecache_node, by_name);
}

/* The first node at or after e (a chain of c->subnets) whose subnet is
 * addr/len. */
static struct nodecache_node *subnet_match(struct hmap_node *e, uint32_t addr, uint8_t len)
{
	for (; e; e = hmap_next_with(e)) {
		struct nodecache_node *n = HMAP_ENTRY(e, struct nodecache_node, by_subnet);

		if (n->subnet.addr == addr && n->subnet.len == len)
			return n;
	}
	return NULL;
}

struct nodecache_node *nodecache_by_subnet(const struct nodecache *c, const struct cidr *s)
{
	return subnet_match(hmap_first_with(&c->subnets, subnet_key(s->addr, s->len)), s->addr, s->len);
}

struct nodecache_node *nodecache_next_subnet(const struct nodecache_node *n)
{
	return subnet_match(hmap_next_with(&n->by_subnet), n->subnet.addr, n->subnet.len);
}

struct nodecache_node *nodecache_containing(const struct nodecache *c, uint32_t ip)
{
	for (int len = 32; len >= 0; len--) {
		struct cidr s = { .len = (uint8_t)len };
		struct nodecache_node *n;

		if (!c->nlen[len])
			continue;
		s.addr = ip & cidr_mask(s.len);
		if ((n = nodecache_by_subnet(c, &s)))
			return n;
	}
	return NULL;
}

struct nodecache_node *nodecache_by_ip(const struct nodecache *c, in_addr_t ip)
{
	return HMAP_ENTRY(hmap_first_with(&c->ips, ip), struct nodecache_node, by_ip);
}

/* every node chained with this hash has this IP: the hash is the IP */
struct nodecache_node *nodecache_next_ip(const struct nodecache_node *n)
{
	return HMAP_ENTRY(hmap_next_with(&n->by_ip), struct nodecache_node, by_ip);
}

void nodecache_sweep(struct nodecache *c, void (*gone)(void *arg, const struct nodecache_node *n), void *arg)
{
	struct nodecache_node *n = nodecache_first(c), *next;

	for (; n; n = next) {
		next = nodecache_next(c, n);
		if (n->gen != c->gen && gone)
			gone(arg, n);
		if (n->gen != c->gen)
			nodecache_del(c, n);
	}
}

void nodecache_free(struct nodecache *c)
{
	for (struct nodecache_node *n = nodecache_first(c), *next; n; n = next) {
		next = nodecache_next(c, n);
		free(n);
	}
	hmap_free(&c->names);
	hmap_free(&c->subnets);
	hmap_free(&c->ips);
	memset(c, 0, sizeof(*c));
}
