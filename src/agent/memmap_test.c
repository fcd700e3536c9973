/*
 * memmap_test.c — the in-memory BPF map against the kernel's.
 *
 * Twins: a real map made with bpf_map_create (the unit tests run as root,
 * with BPF) and a memmap of the same type, sizes and capacity, small
 * enough to fill.  One random sequence of updates (every flag, and flags
 * the kernel refuses), deletes and look-ups goes to both; every return
 * code and every value read must be the same, and every so often and at
 * the end both are walked from a NULL key and must hold the same keys (as
 * written: an LPM entry keeps the bits past its prefix) and values.  Kinds:
 * hash with 4-byte keys (weft_ipcache's shape) preallocated or not, and
 * 16-byte keys (weft_ct's) growing to thousands and shrinking back; LPM
 * tries of IPv4 keys (weft_nodes) and of 12 data bytes (weft_policy);
 * arrays (weft_config) and per-CPU arrays (weft_drops), whose walk order
 * is the index and is compared as it comes.
 *
 * Then what only the memory table promises (memmap.h): a walk that
 * deletes as it goes, or runs while other keys come and go, sees every
 * entry present throughout exactly once, by next_key and by batches; an
 * LRU table never fills; an emptied table holds nothing; several threads
 * at once.
 */
#include "agent/memmap.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define KEY_SLOT	64	/* keys copied for sorting, zero-padded */

struct twin {
	int fd;
	struct memmap *m;
	bool array;
	uint32_t ksize, vsize, max;	/* vsize: as the syscalls pass it */
};

static int twin_up(struct twin *t, enum bpf_map_type type, uint32_t flags, uint32_t ksize,
		   uint32_t vsize, uint32_t max)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	enum memmap_kind kind = type == BPF_MAP_TYPE_LPM_TRIE ? MEMMAP_LPM_TRIE
			      : type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY
				? MEMMAP_ARRAY : MEMMAP_HASH;

	t->array = kind == MEMMAP_ARRAY;
	t->ksize = ksize;
	t->max = max;
	t->vsize = vsize;
	if (type == BPF_MAP_TYPE_PERCPU_ARRAY)
		t->vsize = (uint32_t)libbpf_num_possible_cpus() * ((vsize + 7) & ~7u);
	t->fd = bpf_map_create(type, "memmap_twin", ksize, vsize, max, &o);
	if (t->fd < 0) {
		test_fail(__FILE__, __LINE__, "bpf_map_create: %s", strerror(-t->fd));
		return -1;
	}
	t->m = memmap_new(kind, ksize, t->vsize, max);
	if (!t->m) {
		test_fail(__FILE__, __LINE__, "memmap_new: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void twin_down(struct twin *t)
{
	if (t->fd >= 0)
		close(t->fd);
	memmap_free(t->m);
}

static uint32_t count_of(struct memmap *m)
{
	uint32_t count;
	size_t bytes;

	memmap_usage(m, &count, &bytes);
	return count;
}

static size_t bytes_of(struct memmap *m)
{
	uint32_t count;
	size_t bytes;

	memmap_usage(m, &count, &bytes);
	return bytes;
}

static int cmp_slot(const void *a, const void *b)
{
	return memcmp(a, b, KEY_SLOT);
}

/* The keys of a walk from NULL, sorted; -1 when the walk is longer than
 * max (a repeat) or fails otherwise than -ENOENT. */
static long walk_keys(struct twin *t, bool kernel, unsigned char *out, size_t max)
{
	unsigned char prev[KEY_SLOT], next[KEY_SLOT];
	size_t n = 0;

	for (;;) {
		int rc = kernel ? bpf_map_get_next_key(t->fd, n ? prev : NULL, next)
				: memmap_next_key(t->m, n ? prev : NULL, next);

		if (rc == -ENOENT)
			break;
		if (rc < 0 || n == max)
			return -1;
		memset(out + n * KEY_SLOT, 0, KEY_SLOT);
		memcpy(out + n * KEY_SLOT, next, t->ksize);
		memcpy(prev, next, t->ksize);
		n++;
	}
	qsort(out, n, KEY_SLOT, cmp_slot);
	return (long)n;
}

/* Both hold the same keys, as written, with the same values. */
static void same_contents(struct twin *t)
{
	size_t max = (size_t)t->max + 1;
	unsigned char *a = calloc(max, KEY_SLOT), *b = calloc(max, KEY_SLOT);
	unsigned char *va = malloc(t->vsize), *vb = malloc(t->vsize);
	long na, nb;

	if (!a || !b || !va || !vb) {
		test_fail(__FILE__, __LINE__, "out of memory");
		goto out;
	}
	na = walk_keys(t, true, a, max);
	nb = walk_keys(t, false, b, max);
	if (na < 0 || na != nb || memcmp(a, b, (size_t)na * KEY_SLOT) != 0) {
		test_fail(__FILE__, __LINE__, "walks differ: kernel %ld keys, memory %ld", na, nb);
		goto out;
	}
	if (!t->array && count_of(t->m) != (uint32_t)nb) {
		test_fail(__FILE__, __LINE__, "count %u, walk %ld", count_of(t->m), nb);
		goto out;
	}
	for (long i = 0; i < na; i++) {
		int ra = bpf_map_lookup_elem(t->fd, a + i * KEY_SLOT, va);
		int rb = memmap_lookup(t->m, a + i * KEY_SLOT, vb);

		if (ra != 0 || rb != 0 || memcmp(va, vb, t->vsize) != 0) {
			test_fail(__FILE__, __LINE__, "entry %ld: kernel %d, memory %d, values %s", i,
				  ra, rb, memcmp(va, vb, t->vsize) ? "differ" : "equal");
			goto out;
		}
	}
out:
	free(a);
	free(b);
	free(va);
	free(vb);
}

static void random_bytes(uint64_t *s, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)test_rnd(s, 256);
}

static uint64_t random_flags(uint64_t *s)
{
	static const uint64_t flags[] = { BPF_ANY, BPF_ANY, BPF_NOEXIST, BPF_EXIST, BPF_NOEXIST,
					  BPF_EXIST, BPF_F_LOCK, 8 };

	return flags[test_rnd(s, test_rnd(s, 50) ? 6 : 8)];
}

/* One random operation on key: update, delete, look-up or next_key, the
 * same on both; the step fails the test on any difference. */
static void step(struct twin *t, uint64_t *s, const void *key)
{
	unsigned char v[1024], va[1024], vb[1024], na[KEY_SLOT], nb[KEY_SLOT];
	uint32_t what = test_rnd(s, 100);
	int ra, rb;

	if (what < 50) {
		uint64_t flags = random_flags(s);

		random_bytes(s, v, t->vsize);
		ra = bpf_map_update_elem(t->fd, key, v, flags);
		rb = memmap_update(t->m, key, v, flags);
		if (ra != rb)
			test_fail(__FILE__, __LINE__, "update flags %llu: kernel %d, memory %d",
				  (unsigned long long)flags, ra, rb);
	} else if (what < 75) {
		ra = bpf_map_delete_elem(t->fd, key);
		rb = memmap_delete(t->m, key);
		if (ra != rb)
			test_fail(__FILE__, __LINE__, "delete: kernel %d, memory %d", ra, rb);
	} else if (what < 95 || !t->array) {
		memset(va, 0xa5, sizeof(va));
		memset(vb, 0x5a, sizeof(vb));
		ra = bpf_map_lookup_elem(t->fd, key, va);
		rb = memmap_lookup(t->m, key, vb);
		if (ra != rb || (ra == 0 && memcmp(va, vb, t->vsize) != 0))
			test_fail(__FILE__, __LINE__, "lookup: kernel %d, memory %d%s", ra, rb,
				  ra == rb ? ", values differ" : "");
	} else {	/* an array's walk order is the index: compared as it comes */
		const void *from = test_rnd(s, 4) ? key : NULL;

		memset(na, 0, sizeof(na));
		memset(nb, 0, sizeof(nb));
		ra = bpf_map_get_next_key(t->fd, from, na);
		rb = memmap_next_key(t->m, from, nb);
		if (ra != rb || memcmp(na, nb, t->ksize) != 0)
			test_fail(__FILE__, __LINE__, "next_key: kernel %d, memory %d", ra, rb);
	}
}

/* ops random steps on keys from keys (n of them, ksize apart); the
 * contents compared every 500 steps and at the end. */
static void run_twins(struct twin *t, uint64_t *s, const unsigned char *keys, uint32_t n, int ops)
{
	for (int op = 0; op < ops && !test_failed(); op++) {
		step(t, s, keys + (size_t)test_rnd(s, n) * t->ksize);
		if (op % 500 == 499)
			same_contents(t);
	}
	if (!test_failed())
		same_contents(t);
}

/* Hash keys: i in the first bytes, the rest a pattern of i (all bytes
 * count for the hash and the compare). */
static unsigned char *hash_keys(uint32_t n, uint32_t ksize)
{
	unsigned char *keys = calloc(n, ksize);

	for (uint32_t i = 0; keys && i < n; i++) {
		uint32_t x = i * 2654435761u;

		memcpy(keys + (size_t)i * ksize, &i, 4);
		for (uint32_t b = 4; b < ksize; b++)
			keys[(size_t)i * ksize + b] = (unsigned char)(x >> (8 * (b % 4)));
	}
	return keys;
}

static void hash_case(enum bpf_map_type type, uint32_t flags, uint32_t ksize, uint32_t vsize,
		      uint32_t max, uint32_t universe, int ops)
{
	uint64_t s = test_seed() | 1;
	unsigned char *keys = hash_keys(universe, ksize);
	struct twin t = { .fd = -1 };

	if (keys && twin_up(&t, type, flags, ksize, vsize, max) == 0)
		run_twins(&t, &s, keys, universe, ops);
	for (uint32_t i = 0; keys && i < universe && !test_failed(); i++) {	/* drain */
		const unsigned char *k = keys + (size_t)i * ksize;
		int ra = bpf_map_delete_elem(t.fd, k), rb = memmap_delete(t.m, k);

		CHECK_EQ(ra, rb);
		if (i % 500 == 0)
			same_contents(&t);
	}
	if (!test_failed())
		same_contents(&t);
	twin_down(&t);
	free(keys);
}

TEST(hash_small_full_matches_kernel)
{
	hash_case(BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC, 4, 12, 48, 80, 20000);
}

TEST(hash_preallocated_full_matches_kernel)
{
	hash_case(BPF_MAP_TYPE_HASH, 0, 4, 12, 48, 80, 20000);
}

TEST(hash_growing_and_shrinking_matches_kernel)
{
	hash_case(BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC, 16, 40, 3000, 4000, 60000);
}

/* LPM keys near a few bases, with random bits past any prefix, and a
 * prefixlen from 0 to one beyond the data (refused). */
static void lpm_case(uint32_t data_size, uint32_t max, int ops)
{
	uint64_t s = test_seed() | 1;
	uint32_t ksize = 4 + data_size, n = 4000;
	unsigned char bases[4][32], *keys = calloc(n, ksize);
	struct twin t = { .fd = -1 };

	for (int b = 0; b < 4; b++)
		random_bytes(&s, bases[b], data_size);
	for (uint32_t i = 0; keys && i < n; i++) {
		unsigned char *k = keys + (size_t)i * ksize;
		uint32_t prefixlen = test_rnd(&s, data_size * 8 + 2);

		memcpy(k, &prefixlen, 4);
		memcpy(k + 4, bases[test_rnd(&s, 4)], data_size);
		k[4 + test_rnd(&s, data_size)] ^= (unsigned char)(1u << test_rnd(&s, 8));
		if (test_rnd(&s, 2))
			k[3 + data_size] ^= (unsigned char)test_rnd(&s, 256);
	}
	if (keys && twin_up(&t, BPF_MAP_TYPE_LPM_TRIE, BPF_F_NO_PREALLOC, ksize, 8, max) == 0)
		run_twins(&t, &s, keys, n, ops);
	twin_down(&t);
	free(keys);
}

TEST(lpm_ipv4_matches_kernel)
{
	lpm_case(4, 40, 20000);
}

TEST(lpm_policy_key_matches_kernel)
{
	lpm_case(12, 64, 20000);
}

static void array_case(enum bpf_map_type type, uint32_t vsize, uint32_t max, int ops)
{
	uint64_t s = test_seed() | 1;
	uint32_t keys[64];
	struct twin t = { .fd = -1 };

	for (uint32_t i = 0; i < 64; i++)
		keys[i] = i < max + 4 ? i : 0xffffffffu - i;	/* some beyond max */
	if (twin_up(&t, type, 0, 4, vsize, max) == 0)
		run_twins(&t, &s, (const unsigned char *)keys, max + 8 < 64 ? max + 8 : 64, ops);
	twin_down(&t);
}

TEST(array_matches_kernel)
{
	array_case(BPF_MAP_TYPE_ARRAY, 64, 1, 3000);
	array_case(BPF_MAP_TYPE_ARRAY, 16, 20, 5000);
}

TEST(percpu_array_matches_kernel)
{
	array_case(BPF_MAP_TYPE_PERCPU_ARRAY, 8, 30, 5000);
	array_case(BPF_MAP_TYPE_PERCPU_ARRAY, 20, 1, 2000);
}

/* Every walk of the same kernel map in batches returns what its key walk
 * does; the memory table's batches of any size (1 to 9) do too, and never
 * repeat an entry. */
TEST(batches_match_the_kernel_walk)
{
	uint64_t s = test_seed() | 1;
	unsigned char *keys = hash_keys(3000, 16), *got = calloc(3001, KEY_SLOT);
	unsigned char *want = calloc(3001, KEY_SLOT), *vals = malloc(3001 * 8);
	unsigned char kbuf[9 * 16];
	uint32_t token = 0, next = 0, count;
	size_t n = 0;
	long nwant;
	struct twin t = { .fd = -1 };
	int rc;

	CHECK(keys && got && want && vals);
	if (twin_up(&t, BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC, 16, 8, 3000) == 0) {
		for (int i = 0; i < 6000; i++)
			step(&t, &s, keys + (size_t)test_rnd(&s, 3000) * 16);
		do {
			count = 1 + test_rnd(&s, 9);
			rc = memmap_lookup_batch(t.m, n ? &token : NULL, &next, kbuf, vals, &count);
			for (uint32_t i = 0; i < count && n < 3001; i++, n++)
				memcpy(got + n * KEY_SLOT, kbuf + (size_t)i * 16, 16);
			token = next;
			if (rc == -ENOSPC)	/* a hash value's entries > count: larger */
				rc = 0;
		} while (rc == 0 && n < 3001);
		CHECK_EQ(rc, -ENOENT);
		qsort(got, n, KEY_SLOT, cmp_slot);
		nwant = walk_keys(&t, true, want, 3001);
		CHECK_EQ((long)n, nwant);
		CHECK(memcmp(got, want, n * KEY_SLOT) == 0);
	}
	twin_down(&t);
	free(keys);
	free(got);
	free(want);
	free(vals);
}

/* ---- what the memory table alone promises ---- */

TEST(walk_deleting_as_it_goes_sees_each_entry_once)
{
	struct memmap *m = memmap_new(MEMMAP_HASH, 4, 8, 5000);
	size_t empty;
	uint64_t v = 7;
	uint32_t prev = 0, next, seen = 0;
	int rc;

	CHECK(m);
	empty = bytes_of(m);
	for (uint32_t k = 0; k < 5000; k++)
		CHECK_EQ(memmap_update(m, &k, &v, BPF_NOEXIST), 0);
	CHECK(bytes_of(m) > empty);
	while ((rc = memmap_next_key(m, seen ? &prev : NULL, &next)) == 0) {
		if (seen)
			CHECK_EQ(memmap_delete(m, &prev), 0);
		prev = next;
		seen++;
	}
	CHECK_EQ(rc, -ENOENT);
	CHECK_EQ(memmap_delete(m, &prev), 0);
	CHECK_EQ(seen, 5000);
	CHECK_EQ(count_of(m), 0);
	CHECK_EQ(bytes_of(m), empty);	/* an emptied table holds nothing */
	memmap_free(m);
}

/* Keys 0..999 stay; keys from 1000 come and go while the table is walked
 * by next_key and by batches: every staying key is seen exactly once. */
TEST(walk_among_churn_sees_every_staying_entry_once)
{
	uint64_t s = test_seed() | 1, v = 1;
	struct memmap *m = memmap_new(MEMMAP_HASH, 4, 8, 20000);
	uint8_t seen[1000];
	uint32_t keys[4], next, token = 0, out = 0;
	uint64_t vals[4];

	CHECK(m);
	for (uint32_t k = 0; k < 1000; k++)
		CHECK_EQ(memmap_update(m, &k, &v, BPF_ANY), 0);
	for (int by_batch = 0; by_batch < 2; by_batch++) {
		bool first = true;
		int rc;

		memset(seen, 0, sizeof(seen));
		do {
			uint32_t count = 4;

			for (int i = 0; i < 20; i++) {	/* churn: grows, shrinks, moves runs */
				uint32_t k = 1000 + test_rnd(&s, 15000);

				if (test_rnd(&s, 2))
					(void)memmap_update(m, &k, &v, BPF_ANY);
				else
					(void)memmap_delete(m, &k);
			}
			if (by_batch) {
				rc = memmap_lookup_batch(m, first ? NULL : &token, &out, keys, vals,
							 &count);
				token = out;
			} else {
				rc = memmap_next_key(m, first ? NULL : &keys[0], &next);
				count = rc == 0;
				keys[0] = next;
			}
			for (uint32_t i = 0; i < count; i++)
				if (keys[i] < 1000)
					CHECK_EQ(++seen[keys[i]], 1);
			first = false;
		} while (rc == 0);
		CHECK_EQ(rc, -ENOENT);
		for (uint32_t k = 0; k < 1000; k++)
			CHECK_EQ(seen[k], 1);
	}
	memmap_free(m);
}

TEST(lru_full_evicts_instead_of_failing)
{
	struct memmap *m = memmap_new(MEMMAP_LRU_HASH, 4, 8, 16);
	uint64_t v = 3;

	CHECK(m);
	for (uint32_t k = 0; k < 100; k++) {
		CHECK_EQ(memmap_update(m, &k, &v, BPF_NOEXIST), 0);
		CHECK_EQ(memmap_lookup(m, &k, &v), 0);	/* the new one is kept */
		CHECK(count_of(m) <= 16);
	}
	CHECK_EQ(count_of(m), 16);
	memmap_free(m);
}

TEST(sizes_the_kernel_refuses_are_refused)
{
	CHECK(!memmap_new(MEMMAP_ARRAY, 8, 8, 4));
	CHECK(!memmap_new(MEMMAP_LPM_TRIE, 4, 8, 4));
	CHECK(!memmap_new(MEMMAP_HASH, 4, 8, 0));
	CHECK(!memmap_new(MEMMAP_HASH, 0, 8, 4));
	CHECK(!memmap_new(MEMMAP_HASH, MEMMAP_KEY_MAX + 1, 8, 4));
	CHECK_EQ(errno, EINVAL);
}

struct worker {
	struct memmap *m;
	uint32_t base;
	uint8_t present[2000];
	int err;
};

static void *churn(void *arg)
{
	struct worker *w = arg;
	uint64_t s = (test_seed() + w->base) | 1;

	for (int op = 0; op < 50000 && !w->err; op++) {
		uint32_t i = test_rnd(&s, 2000), k = w->base + i;
		uint64_t v = k, got;
		int rc;

		if (test_rnd(&s, 2)) {
			rc = memmap_update(w->m, &k, &v, BPF_ANY);
			w->present[i] = 1;
		} else {
			rc = memmap_delete(w->m, &k);
			rc = rc == (w->present[i] ? 0 : -ENOENT) ? 0 : -1;
			w->present[i] = 0;
		}
		if (rc == 0 && w->present[i])
			rc = memmap_lookup(w->m, &k, &got) == 0 && got == v ? 0 : -1;
		w->err = rc;
	}
	return NULL;
}

/* Four writers on their own keys and a reader walking all the while. */
TEST(threads_at_once_keep_every_table_consistent)
{
	struct memmap *m = memmap_new(MEMMAP_HASH, 4, 8, 8000);
	struct worker w[4];
	pthread_t th[4];
	uint32_t total = 0;

	CHECK(m);
	for (int i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].m = m;
		w[i].base = (uint32_t)i * 100000;
		CHECK_EQ(pthread_create(&th[i], NULL, churn, &w[i]), 0);
	}
	for (int walk = 0; walk < 20; walk++) {
		uint32_t k, n = 0;

		for (int rc = memmap_next_key(m, NULL, &k); rc == 0; rc = memmap_next_key(m, &k, &k))
			n++;
		CHECK(n <= 8000);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].err, 0);
		for (int j = 0; j < 2000; j++)
			total += w[i].present[j];
	}
	CHECK_EQ(count_of(m), total);
	memmap_free(m);
}
