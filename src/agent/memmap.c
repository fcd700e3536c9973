/*
 * memmap.c — the in-memory BPF map (memmap.h): an ordered hash table.
 *
 * Entries are records — key, (LPM: the key as written), value, hash — kept dense
 * in chunks of CHUNK (the first grows to that size, the others are made
 * whole), so a table holds little more than its entries; a deletion moves
 * the last record into the hole.  The slots hold record indexes + 1 (0:
 * empty), sorted by (hash, key bytes); a record keeps its key's hash
 * (4 bytes), so a probe or a resize compares numbers and never hashes a
 * stored key again (a thousand hollow agents' maps spent a tenth of their
 * CPU re-hashing).  The home of hash h is its top
 * bits, h >> (32 - bits); an entry sits at or after its home, and a run
 * that would wrap around spills into SPILL slots past 2^bits instead, so
 * the whole slot array is in order:
 *
 *	slot    0     1     2     3     4     5   ...  2^bits ... +SPILL
 *	       [a]   [ ]   [b]   [c]   [d]   [ ]        (spilled runs)
 *	home    0           2     2     3
 *
 * Invariants:
 *  1. Occupied slots, left to right, are strictly increasing in
 *     (hash, key bytes).
 *  2. An entry at slot p has its home <= p, and every slot from its home
 *     to p is occupied.
 *  3. n <= 3/4 of 2^bits after an insert; below 1/8 the slots are halved;
 *     an empty table holds no slots and no records.
 *  4. LPM keys are hashed and compared with the bits after their prefixlen
 *     cleared (the entry's identity); the key as written is kept beside.
 *
 * From 1 and 2 (Amble and Knuth's ordered hash table): a look-up starts at
 * the key's home and stops at the first slot that is empty or not below
 * the key, so a key that is not there has a well-defined successor (every
 * entry above it lies after that slot) — next_key and the batch token work
 * across deletions and resizes.  An insert shifts the rest of its run
 * right by one; a delete shifts back the entries that are not at their
 * home.  A resize places the entries in order at max(home, previous + 1).
 */
#include "agent/memmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>

#define MIN_BITS	3
#define SPILL		32	/* slots past 2^bits, for runs that would wrap */
#define CHUNK		256	/* records a chunk */

struct memmap {
	pthread_mutex_t lock;
	enum memmap_kind kind;
	uint32_t ksize, vsize, max;
	uint32_t max_prefixlen;		/* LPM: bits of data */
	size_t voff;			/* the value's offset in a record */
	size_t hoff;			/* the hash's */
	size_t rsize;			/* a record */
	uint32_t *slots;		/* record index + 1; 0 empty */
	uint32_t nslots;		/* 2^bits + SPILL, or 0 */
	unsigned bits;
	unsigned char **chunks;		/* chunk c: records c * CHUNK ... */
	uint32_t nchunks, chunks_cap;
	uint32_t n, cap;		/* records held, allocated */
};

/* A key as the table compares it (LPM: cleared after its prefixlen). */
struct probe {
	uint32_t hash;
	const unsigned char *key;
	unsigned char buf[MEMMAP_KEY_MAX];
};

static unsigned char *rec(const struct memmap *m, uint32_t i)
{
	return m->chunks[i / CHUNK] + (size_t)(i % CHUNK) * m->rsize;
}

static const unsigned char *rec_key(const struct memmap *m, uint32_t i)
{
	return rec(m, i);
}

/* the key as last written: what next_key and lookup_batch return */
static unsigned char *rec_written(const struct memmap *m, uint32_t i)
{
	return rec(m, i) + (m->kind == MEMMAP_LPM_TRIE ? m->ksize : 0);
}

static unsigned char *rec_value(const struct memmap *m, uint32_t i)
{
	return rec(m, i) + m->voff;
}

/* Multiplicative (Fibonacci) hashing: the top bits, the home, depend on
 * every bit of the key. */
static uint32_t hash_of(const unsigned char *key, uint32_t len)
{
	uint64_t h = len;

	for (uint32_t i = 0; i < len; i += 4) {
		uint32_t w = 0;

		memcpy(&w, key + i, len - i < 4 ? len - i : 4);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32);
}

static uint32_t rec_hash(const struct memmap *m, uint32_t i)
{
	uint32_t h;

	memcpy(&h, rec(m, i) + m->hoff, sizeof(h));
	return h;
}

static uint32_t home_of(uint32_t h, unsigned bits)
{
	return bits ? h >> (32 - bits) : 0;
}

/* The LPM key of prefixlen bits of key's data, the rest cleared, in out.
 * -EINVAL beyond the data. */
static int lpm_cut(const struct memmap *m, const void *key, uint32_t prefixlen, unsigned char *out)
{
	const unsigned char *k = key;
	uint32_t whole = prefixlen / 8, rest = prefixlen % 8;

	if (prefixlen > m->max_prefixlen)
		return -EINVAL;
	memset(out, 0, m->ksize);
	memcpy(out, &prefixlen, sizeof(prefixlen));
	memcpy(out + 4, k + 4, whole);
	if (rest)
		out[4 + whole] = k[4 + whole] & (unsigned char)(0xff00u >> rest);
	return 0;
}

static uint32_t prefixlen_of(const void *key)
{
	uint32_t prefixlen;

	memcpy(&prefixlen, key, sizeof(prefixlen));
	return prefixlen;
}

static int prepare(const struct memmap *m, const void *key, struct probe *pr)
{
	pr->key = key;
	if (m->kind == MEMMAP_LPM_TRIE) {
		int err = lpm_cut(m, key, prefixlen_of(key), pr->buf);

		if (err < 0)
			return err;
		pr->key = pr->buf;
	}
	pr->hash = hash_of(pr->key, m->ksize);
	return 0;
}

/* <0, 0, >0: record i against (h, key); a NULL key is below every key of
 * hash h */
static int order(const struct memmap *m, uint32_t i, uint32_t h, const unsigned char *key)
{
	uint32_t rh = rec_hash(m, i);

	if (rh != h)
		return rh < h ? -1 : 1;
	return key ? memcmp(rec_key(m, i), key, m->ksize) : 1;
}

/* The first slot from h's home that is empty or not below (h, key): where
 * key is (*found), or where it would go. */
static uint32_t seek(const struct memmap *m, uint32_t h, const unsigned char *key, bool *found)
{
	uint32_t p = home_of(h, m->bits);

	*found = false;
	for (; p < m->nslots && m->slots[p]; p++) {
		int c = order(m, m->slots[p] - 1, h, key);

		if (c >= 0) {
			*found = c == 0;
			break;
		}
	}
	return p;
}

static uint32_t occupied_from(const struct memmap *m, uint32_t p)
{
	while (p < m->nslots && !m->slots[p])
		p++;
	return p;
}

/* The slots again at 2^bits (0: none, for an empty table).  -ENOSPC when
 * a run would spill past SPILL. */
static int rebuild(struct memmap *m, unsigned bits)
{
	uint32_t nslots = bits ? (1u << bits) + SPILL : 0, next = 0;
	uint32_t *slots = NULL;

	if (nslots && !(slots = calloc(nslots, sizeof(*slots))))
		return -ENOMEM;
	for (uint32_t p = 0; p < m->nslots; p++) {
		uint32_t at;

		if (!m->slots[p])
			continue;
		at = home_of(rec_hash(m, m->slots[p] - 1), bits);
		if (at < next)
			at = next;
		if (at >= nslots) {
			free(slots);
			return -ENOSPC;
		}
		slots[at] = m->slots[p];
		next = at + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	m->bits = bits;
	return 0;
}

static int resize(struct memmap *m, unsigned bits)
{
	int err;

	while ((err = rebuild(m, bits)) == -ENOSPC && bits < 31)
		bits++;
	return err;
}

/* Room for another record: the first chunk grows by half up to CHUNK
 * (and max), then whole chunks follow. */
static int more_records(struct memmap *m)
{
	unsigned char *c;

	if (!m->chunks) {
		m->chunks = calloc(1, sizeof(*m->chunks));
		if (!m->chunks)
			return -ENOMEM;
		m->chunks_cap = 1;
	}
	if (m->cap < CHUNK) {
		uint32_t cap = m->cap < 8 ? 8 : m->cap + m->cap / 2;

		cap = cap > CHUNK ? CHUNK : cap > m->max ? m->max : cap;
		c = realloc(m->chunks[0], (size_t)cap * m->rsize);
		if (!c)
			return -ENOMEM;
		m->chunks[0] = c;
		m->nchunks = 1;
		m->cap = cap;
		return 0;
	}
	if (m->nchunks == m->chunks_cap) {
		unsigned char **chunks = realloc(m->chunks, 2 * m->chunks_cap * sizeof(*chunks));

		if (!chunks)
			return -ENOMEM;
		m->chunks = chunks;
		m->chunks_cap *= 2;
	}
	c = malloc((size_t)CHUNK * m->rsize);
	if (!c)
		return -ENOMEM;
	m->chunks[m->nchunks++] = c;
	m->cap += CHUNK;
	return 0;
}

/* Room for one more entry (invariant 3). */
static int reserve(struct memmap *m)
{
	if (m->n == m->cap) {
		int err = more_records(m);

		if (err < 0)
			return err;
	}
	if (m->bits && (uint64_t)(m->n + 1) * 4 <= (uint64_t)3 << m->bits)
		return 0;
	return resize(m, m->bits ? m->bits + 1 : MIN_BITS);
}

static int insert(struct memmap *m, const struct probe *pr, const void *written, const void *value)
{
	uint32_t p, q;
	bool found;
	int err = reserve(m);

	if (err < 0)
		return err;
	for (;;) {
		p = seek(m, pr->hash, pr->key, &found);
		q = p;
		while (q < m->nslots && m->slots[q])
			q++;
		if (q < m->nslots)
			break;
		err = resize(m, m->bits + 1);	/* the run spilled over */
		if (err < 0)
			return err;
	}
	memmove(&m->slots[p + 1], &m->slots[p], (size_t)(q - p) * sizeof(*m->slots));
	m->slots[p] = m->n + 1;
	memcpy(rec(m, m->n), pr->key, m->ksize);
	memcpy(rec_written(m, m->n), written, m->ksize);
	memcpy(rec_value(m, m->n), value, m->vsize);
	memcpy(rec(m, m->n) + m->hoff, &pr->hash, sizeof(pr->hash));
	m->n++;
	return 0;
}

static void free_records(struct memmap *m)
{
	for (uint32_t c = 0; c < m->nchunks; c++)
		free(m->chunks[c]);
	free(m->chunks);
	m->chunks = NULL;
	m->nchunks = 0;
	m->chunks_cap = 0;
	m->cap = 0;
}

/* Smaller slots and records after deletions: a last chunk once half of
 * the one before it is free too, the first by halves; failing to shrink
 * is harmless. */
static void shrink(struct memmap *m)
{
	if (m->n == 0) {
		free(m->slots);
		m->slots = NULL;
		m->nslots = 0;
		m->bits = 0;
		free_records(m);
		return;
	}
	if (m->bits > MIN_BITS && (uint64_t)m->n * 8 < (uint64_t)1 << m->bits)
		(void)resize(m, m->bits - 1);
	if (m->nchunks > 1 && m->n + CHUNK / 2 < m->cap - CHUNK) {
		free(m->chunks[--m->nchunks]);
		m->cap -= CHUNK;
	} else if (m->nchunks == 1 && m->cap > 8 && m->n < m->cap / 4) {
		unsigned char *c = realloc(m->chunks[0], (size_t)(m->cap / 2) * m->rsize);

		if (c) {
			m->chunks[0] = c;
			m->cap /= 2;
		}
	}
}

static void remove_at(struct memmap *m, uint32_t p)
{
	uint32_t i = m->slots[p] - 1, last = m->n - 1, q;

	for (q = p + 1; q < m->nslots && m->slots[q] &&
			home_of(rec_hash(m, m->slots[q] - 1), m->bits) < q; q++)
		m->slots[q - 1] = m->slots[q];
	m->slots[q - 1] = 0;
	if (i != last) {	/* the last record fills the hole */
		bool found;

		memcpy(rec(m, i), rec(m, last), m->rsize);
		m->slots[seek(m, rec_hash(m, i), rec_key(m, i), &found)] = i + 1;
	}
	m->n--;
	shrink(m);
}

struct memmap *memmap_new(enum memmap_kind kind, uint32_t key_size, uint32_t value_size,
			  uint32_t max_entries)
{
	struct memmap *m;

	if (!key_size || !value_size || !max_entries || key_size > MEMMAP_KEY_MAX ||
	    (kind == MEMMAP_ARRAY && key_size != 4) || (kind == MEMMAP_LPM_TRIE && key_size <= 4) ||
	    (kind != MEMMAP_HASH && kind != MEMMAP_LRU_HASH && kind != MEMMAP_ARRAY &&
	     kind != MEMMAP_LPM_TRIE)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->kind = kind;
	m->ksize = key_size;
	m->vsize = value_size;
	m->max = max_entries;
	m->max_prefixlen = kind == MEMMAP_LPM_TRIE ? (key_size - 4) * 8 : 0;
	m->voff = (size_t)key_size * (kind == MEMMAP_LPM_TRIE ? 2 : 1);
	m->hoff = m->voff + value_size;
	m->rsize = m->hoff + sizeof(uint32_t);
	return m;
}

void memmap_free(struct memmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free_records(m);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static uint32_t array_index(const void *key)
{
	uint32_t i;

	memcpy(&i, key, sizeof(i));
	return i;
}

/* A new key in a full table: the kernel's answer, or (LRU) room made. */
static int full(struct memmap *m, uint32_t p)
{
	if (m->kind == MEMMAP_HASH)
		return -E2BIG;
	if (m->kind == MEMMAP_LPM_TRIE)
		return -ENOSPC;
	p = occupied_from(m, p);	/* LRU: evict the key's successor */
	remove_at(m, p < m->nslots ? p : occupied_from(m, 0));
	return 0;
}

int memmap_update(struct memmap *m, const void *key, const void *value, uint64_t flags)
{
	struct probe pr;
	bool found;
	uint32_t p;
	int err;

	if (flags > BPF_EXIST)
		return -EINVAL;
	if (m->kind == MEMMAP_ARRAY) {
		if (array_index(key) >= m->max)
			return -E2BIG;
		if (flags == BPF_NOEXIST)
			return -EEXIST;	/* every index exists */
	}
	err = prepare(m, key, &pr);
	if (err < 0)
		return err;
	pthread_mutex_lock(&m->lock);
	p = seek(m, pr.hash, pr.key, &found);
	if (found) {
		if (flags == BPF_NOEXIST) {
			err = -EEXIST;
		} else {
			memcpy(rec_written(m, m->slots[p] - 1), key, m->ksize);
			memcpy(rec_value(m, m->slots[p] - 1), value, m->vsize);
		}
	} else if (flags == BPF_EXIST && m->kind != MEMMAP_ARRAY) {
		err = -ENOENT;
	} else {
		if (m->n >= m->max)
			err = full(m, p);
		if (err == 0)
			err = insert(m, &pr, key, value);
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* The longest stored prefix of key no longer than its prefixlen. */
static int lpm_lookup(struct memmap *m, const void *key, void *value)
{
	struct probe pr;
	int err = -ENOENT;

	if (prefixlen_of(key) > m->max_prefixlen)
		return -ENOENT;
	pthread_mutex_lock(&m->lock);
	for (int64_t len = prefixlen_of(key); len >= 0 && err < 0 && m->n; len--) {
		bool found;
		uint32_t p;

		(void)lpm_cut(m, key, (uint32_t)len, pr.buf);
		p = seek(m, hash_of(pr.buf, m->ksize), pr.buf, &found);
		if (found) {
			memcpy(value, rec_value(m, m->slots[p] - 1), m->vsize);
			err = 0;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

int memmap_lookup(struct memmap *m, const void *key, void *value)
{
	struct probe pr;
	bool found;
	uint32_t p;
	int err = 0;

	if (m->kind == MEMMAP_LPM_TRIE)
		return lpm_lookup(m, key, value);
	if (m->kind == MEMMAP_ARRAY && array_index(key) >= m->max)
		return -ENOENT;
	(void)prepare(m, key, &pr);
	pthread_mutex_lock(&m->lock);
	p = seek(m, pr.hash, pr.key, &found);
	if (found)
		memcpy(value, rec_value(m, m->slots[p] - 1), m->vsize);
	else if (m->kind == MEMMAP_ARRAY)
		memset(value, 0, m->vsize);	/* never written: zero */
	else
		err = -ENOENT;
	pthread_mutex_unlock(&m->lock);
	return err;
}

int memmap_delete(struct memmap *m, const void *key)
{
	struct probe pr;
	bool found;
	uint32_t p;
	int err;

	if (m->kind == MEMMAP_ARRAY)
		return -EINVAL;
	err = prepare(m, key, &pr);
	if (err < 0)
		return err;
	pthread_mutex_lock(&m->lock);
	p = seek(m, pr.hash, pr.key, &found);
	if (found)
		remove_at(m, p);
	else
		err = -ENOENT;
	pthread_mutex_unlock(&m->lock);
	return err;
}

static int array_next_key(const struct memmap *m, const void *key, void *next)
{
	uint32_t i = key ? array_index(key) : m->max;

	if (i >= m->max)
		i = 0;
	else if (i + 1 == m->max)
		return -ENOENT;
	else
		i++;
	memcpy(next, &i, sizeof(i));
	return 0;
}

int memmap_next_key(struct memmap *m, const void *key, void *next)
{
	struct probe pr;
	uint32_t p = 0;
	int err = 0;

	if (m->kind == MEMMAP_ARRAY)
		return array_next_key(m, key, next);
	pthread_mutex_lock(&m->lock);
	if (key && prepare(m, key, &pr) == 0) {	/* else: from the start */
		bool found;

		p = seek(m, pr.hash, pr.key, &found);
		p += found;
	}
	p = occupied_from(m, p);
	if (p < m->nslots)
		memcpy(next, rec_written(m, m->slots[p] - 1), m->ksize);
	else
		err = -ENOENT;
	pthread_mutex_unlock(&m->lock);
	return err;
}

int memmap_lookup_batch(struct memmap *m, const uint32_t *in_token, uint32_t *out_token,
			void *keys, void *values, uint32_t *count)
{
	uint32_t want = *count, got = 0, p = 0;
	int err = 0;

	if (m->kind != MEMMAP_HASH && m->kind != MEMMAP_LRU_HASH)
		return -EINVAL;
	if (!want)
		return 0;
	pthread_mutex_lock(&m->lock);
	if (in_token) {
		bool found;

		p = seek(m, *in_token, NULL, &found);
	}
	for (;;) {
		uint32_t q, h;

		p = occupied_from(m, p);
		if (p == m->nslots) {
			err = -ENOENT;
			break;
		}
		h = rec_hash(m, m->slots[p] - 1);
		for (q = p + 1; q < m->nslots && m->slots[q] && rec_hash(m, m->slots[q] - 1) == h; q++)
			;
		if (q - p > want - got) {	/* one hash is never split */
			if (!got)
				err = -ENOSPC;
			*out_token = h;
			break;
		}
		for (; p < q; p++, got++) {
			memcpy((unsigned char *)keys + (size_t)got * m->ksize,
			       rec_written(m, m->slots[p] - 1), m->ksize);
			memcpy((unsigned char *)values + (size_t)got * m->vsize,
			       rec_value(m, m->slots[p] - 1), m->vsize);
		}
	}
	*count = got;
	pthread_mutex_unlock(&m->lock);
	return err;
}

void memmap_usage(struct memmap *m, uint32_t *count, size_t *bytes)
{
	pthread_mutex_lock(&m->lock);
	*count = m->n;
	*bytes = sizeof(*m) + (size_t)m->nslots * sizeof(*m->slots) + (size_t)m->cap * m->rsize +
		 (size_t)m->chunks_cap * sizeof(*m->chunks);
	pthread_mutex_unlock(&m->lock);
}
