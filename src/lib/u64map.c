/*
 * u64map.c — open addressing, linear probing, backward-shift deletion
 * (u64map.h).
 *
 * Invariant: for every used slot i holding key k, every slot from k's
 * home (hash(k) & mask) up to i is used — so a lookup may stop at the
 * first empty slot.  Deletion keeps it by moving later entries of the
 * same run back into the hole when their home is not inside (hole, slot].
 */
#include "lib/u64map.h"

#include <errno.h>
#include <stdlib.h>

uint64_t u64map_mix(uint64_t k)
{
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebull;
	k ^= k >> 31;
	return k;
}

static size_t home(uint64_t k, size_t mask)
{
	return (size_t)u64map_mix(k) & mask;
}

static int resize(struct u64map *m, size_t cap)
{
	struct u64map nm = { 0 };

	nm.keys = malloc(cap * sizeof(*nm.keys));
	nm.vals = malloc(cap * sizeof(*nm.vals));
	nm.used = calloc(cap, 1);
	nm.cap = cap;
	if (!nm.keys || !nm.vals || !nm.used) {
		u64map_free(&nm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->used[i])
			continue;
		for (j = home(m->keys[i], cap - 1); nm.used[j]; j = (j + 1) & (cap - 1))
			;
		nm.used[j] = 1;
		nm.keys[j] = m->keys[i];
		nm.vals[j] = m->vals[i];
		nm.n++;
	}
	u64map_free(m);
	*m = nm;
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && resize(m, m->cap ? m->cap * 2 : 16) < 0)
		return -ENOMEM;
	for (i = home(key, m->cap - 1); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

bool u64map_get(const struct u64map *m, uint64_t key, uint64_t *val)
{
	if (!m->cap)
		return false;
	for (size_t i = home(key, m->cap - 1); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			if (val)
				*val = m->vals[i];
			return true;
		}
	return false;
}

bool u64map_del(struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i, j;

	if (!m->cap)
		return false;
	for (i = home(key, mask); m->used[i] && m->keys[i] != key; i = (i + 1) & mask)
		;
	if (!m->used[i])
		return false;
	/* i is the hole; pull back every later entry of the run that may sit in it */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t h = home(m->keys[j], mask);

		/* j stays when its home lies cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->used[i] = 0;
	m->n--;
	return true;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	m->keys = m->vals = NULL;
	m->used = NULL;
	m->cap = m->n = 0;
}

uint64_t u64map_hash_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
