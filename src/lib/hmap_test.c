/*
 * hmap_test.c — the intrusive hash table against a naive reference (a
 * flag per record, "in the table", searched linearly), over random
 * inserts, removals, lookups and walks.  Hashes come from a small space
 * so that many records share one (a multimap, and collisions of
 * different keys) and chains are long; the table grows as it fills.
 */
#include "lib/hmap.h"
#include "test.h"

#include <stdlib.h>

enum { RECORDS = 3000, HASHES = 400 };

struct rec {
	struct hmap_node node;
	uint64_t hash;		/* what it is (or would be) inserted under */
	bool in;		/* the reference: in the table */
	bool found;		/* scratch: met by a walk */
};

static struct rec recs[RECORDS];

/* every record the table gives for hash h is in, has h, and comes once;
 * every record the reference has under h is given */
static void check_hash(struct hmap *m, uint64_t h)
{
	size_t want = 0, got = 0;

	for (size_t i = 0; i < RECORDS; i++) {
		recs[i].found = false;
		want += recs[i].in && recs[i].hash == h;
	}
	for (struct hmap_node *e = hmap_first_with(m, h); e; e = hmap_next_with(e)) {
		struct rec *r = HMAP_ENTRY(e, struct rec, node);

		CHECK(r->in && r->hash == h && !r->found);
		r->found = true;
		got++;
	}
	CHECK_EQ(got, want);
}

/* a walk meets every record in once */
static void check_walk(struct hmap *m)
{
	size_t want = 0, got = 0;

	for (size_t i = 0; i < RECORDS; i++) {
		recs[i].found = false;
		want += recs[i].in;
	}
	for (struct hmap_node *e = hmap_first(m); e; e = hmap_next(m, e)) {
		struct rec *r = HMAP_ENTRY(e, struct rec, node);

		CHECK(r->in && !r->found);
		r->found = true;
		got++;
	}
	CHECK_EQ(got, want);
	CHECK_EQ(m->n, want);
}

TEST(hmap_basic)
{
	struct hmap m = { 0 };
	struct rec a = { 0 }, b = { 0 };

	CHECK(!hmap_first(&m));
	CHECK(!hmap_first_with(&m, 7));
	CHECK(!hmap_remove(&m, &a.node));
	CHECK_EQ(hmap_insert(&m, &a.node, 7), 0);
	CHECK_EQ(hmap_insert(&m, &b.node, 7), 0);	/* one hash, two records */
	CHECK(hmap_first_with(&m, 7) == &b.node);	/* newest first */
	CHECK(hmap_next_with(&b.node) == &a.node);
	CHECK(!hmap_next_with(&a.node));
	CHECK(!hmap_first_with(&m, 8));
	CHECK(hmap_remove(&m, &b.node));
	CHECK(!hmap_remove(&m, &b.node));
	CHECK(hmap_first_with(&m, 7) == &a.node);
	CHECK_EQ(m.n, 1);
	hmap_free(&m);
	hmap_free(&m);	/* twice: a freed table is a zeroed one */
	CHECK(!hmap_first(&m));
}

TEST(hmap_random_against_reference)
{
	struct hmap m = { 0 };
	uint64_t st = test_seed() | 1;

	memset(recs, 0, sizeof(recs));
	for (int op = 0; op < 200000 && !test_failed(); op++) {
		struct rec *r = &recs[test_rnd(&st, RECORDS)];
		/* far apart in value: only the mixer spreads them */
		uint64_t h = (uint64_t)test_rnd(&st, HASHES) << 40;

		switch (test_rnd(&st, 6)) {
		case 0:
		case 1:
			if (r->in)
				break;
			CHECK_EQ(hmap_insert(&m, &r->node, h), 0);
			r->hash = h;
			r->in = true;
			break;
		case 2:
			CHECK_EQ(hmap_remove(&m, &r->node), r->in);
			r->in = false;
			break;
		case 3:
			check_hash(&m, h);
			break;
		case 4:
			if (r->in)
				check_hash(&m, r->hash);
			break;
		default:
			if (test_rnd(&st, 100) == 0)
				check_walk(&m);
		}
	}
	check_walk(&m);
	hmap_free(&m);
}

/* a walk that removes the record it stands on (the relist sweep) */
TEST(hmap_walk_removing)
{
	struct hmap m = { 0 };
	uint64_t st = test_seed() | 1;
	size_t kept = 0;

	memset(recs, 0, sizeof(recs));
	for (size_t i = 0; i < RECORDS; i++) {
		recs[i].hash = test_rnd(&st, HASHES);
		CHECK_EQ(hmap_insert(&m, &recs[i].node, recs[i].hash), 0);
		recs[i].in = true;
	}
	for (struct hmap_node *e = hmap_first(&m), *next; e; e = next) {
		struct rec *r = HMAP_ENTRY(e, struct rec, node);

		next = hmap_next(&m, e);
		if (test_rnd(&st, 2)) {
			CHECK(hmap_remove(&m, e));
			r->in = false;
		}
	}
	for (size_t i = 0; i < RECORDS; i++)
		kept += recs[i].in;
	CHECK_EQ(m.n, kept);
	check_walk(&m);
	for (uint64_t h = 0; h < HASHES && !test_failed(); h++)
		check_hash(&m, h);
	hmap_free(&m);
}

TEST(hmap_reserve_then_insert)
{
	struct hmap m = { 0 };
	struct hmap_node **b;

	memset(recs, 0, sizeof(recs));
	CHECK_EQ(hmap_reserve(&m, 1000), 0);
	CHECK(m.mask + 1 >= 1000);
	b = m.buckets;
	for (size_t i = 0; i < 1000; i++)
		CHECK_EQ(hmap_insert(&m, &recs[i].node, i), 0);
	CHECK(m.buckets == b);	/* no growth: nothing could fail */
	CHECK(hmap_reserve(&m, SIZE_MAX) < 0);
	CHECK(m.buckets == b && m.n == 1000);
	hmap_free(&m);
}

TEST(hmap_hash_str_pairs)
{
	uint64_t ab_c = hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, "ab"), "c");
	uint64_t a_bc = hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, "a"), "bc");

	CHECK(ab_c != a_bc);
	CHECK(hmap_hash_str(HMAP_HASH_SEED, "") != HMAP_HASH_SEED);
	CHECK(hmap_hash_str(HMAP_HASH_SEED, "x") == hmap_hash_str(HMAP_HASH_SEED, "x"));
}
