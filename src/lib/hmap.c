/*
 * hmap.c — separate chaining over a power-of-two bucket array (hmap.h).
 *
 * Invariants:
 *  1. A record with hash h sits in bucket u64map_mix(h) & mask, exactly
 *     once; m->n counts the records.
 *  2. m->n <= mask + 1 once buckets exist (grown before an insert would
 *     break it), so a chain is short on average whatever the load.
 */
#include "lib/hmap.h"
#include "lib/u64map.h"

#include <errno.h>
#include <stdlib.h>

static size_t bucket_of(const struct hmap *m, uint64_t hash)
{
	return (size_t)u64map_mix(hash) & m->mask;
}

/* Move every record into a new array of nb buckets. */
static int rehash(struct hmap *m, size_t nb)
{
	struct hmap_node **b = calloc(nb, sizeof(*b));
	size_t old = m->buckets ? m->mask + 1 : 0;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < old; i++) {
		struct hmap_node *e = m->buckets[i], *next;

		for (; e; e = next) {
			size_t j = (size_t)u64map_mix(e->hash) & (nb - 1);

			next = e->next;
			e->next = b[j];
			b[j] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->mask = nb - 1;
	return 0;
}

int hmap_reserve(struct hmap *m, size_t n)
{
	size_t nb = m->buckets ? m->mask + 1 : 0, want = nb ? nb : 16;

	if (n > SIZE_MAX / 2 - m->n)
		return -ENOMEM;
	while (want < m->n + n)
		want *= 2;
	return want == nb ? 0 : rehash(m, want);
}

int hmap_insert(struct hmap *m, struct hmap_node *node, uint64_t hash)
{
	size_t i;

	if (hmap_reserve(m, 1) < 0)
		return -ENOMEM;
	i = bucket_of(m, hash);
	node->hash = hash;
	node->next = m->buckets[i];
	m->buckets[i] = node;
	m->n++;
	return 0;
}

bool hmap_remove(struct hmap *m, struct hmap_node *node)
{
	struct hmap_node **pp;

	if (!m->buckets)
		return false;
	for (pp = &m->buckets[bucket_of(m, node->hash)]; *pp; pp = &(*pp)->next)
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			m->n--;
			return true;
		}
	return false;
}

static struct hmap_node *with_hash(struct hmap_node *e, uint64_t hash)
{
	while (e && e->hash != hash)
		e = e->next;
	return e;
}

struct hmap_node *hmap_first_with(const struct hmap *m, uint64_t hash)
{
	return m->buckets ? with_hash(m->buckets[bucket_of(m, hash)], hash) : NULL;
}

struct hmap_node *hmap_next_with(const struct hmap_node *node)
{
	return with_hash(node->next, node->hash);
}

/* The first record of bucket i or of a later one. */
static struct hmap_node *from_bucket(const struct hmap *m, size_t i)
{
	for (; m->buckets && i <= m->mask; i++)
		if (m->buckets[i])
			return m->buckets[i];
	return NULL;
}

struct hmap_node *hmap_first(const struct hmap *m)
{
	return from_bucket(m, 0);
}

struct hmap_node *hmap_next(const struct hmap *m, const struct hmap_node *node)
{
	return node->next ? node->next : from_bucket(m, bucket_of(m, node->hash) + 1);
}

void hmap_free(struct hmap *m)
{
	free(m->buckets);
	m->buckets = NULL;
	m->mask = m->n = 0;
}

uint64_t hmap_hash_str(uint64_t h, const char *s)
{
	const unsigned char *b = (const unsigned char *)s;

	do {
		h ^= *b;
		h *= 0x100000001b3ull;
	} while (*b++);
	return h;
}
