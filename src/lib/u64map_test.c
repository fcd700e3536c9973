/*
 * u64map_test.c — the hash map against a naive reference (an array of
 * key/value pairs searched linearly), over random operations on a small
 * key space so that probe runs collide, wrap and shift often.
 */
#include "lib/u64map.h"
#include "test.h"

#include <stdlib.h>

static uint64_t state;

static uint64_t rnd(void)
{
	state = state * 6364136223846793005ull + 1442695040888963407ull;
	return state >> 11;
}

TEST(u64map_basic)
{
	struct u64map m = { 0 };
	uint64_t v = 0;

	CHECK(!u64map_get(&m, 0, &v));
	CHECK(!u64map_del(&m, 0));
	CHECK_EQ(u64map_put(&m, 0, 7), 0);	/* key 0 is a key like any other */
	CHECK(u64map_get(&m, 0, &v));
	CHECK_EQ(v, 7);
	CHECK_EQ(u64map_put(&m, 0, 8), 0);
	CHECK(u64map_get(&m, 0, &v));
	CHECK_EQ(v, 8);
	CHECK_EQ(m.n, 1);
	CHECK(u64map_del(&m, 0));
	CHECK(!u64map_get(&m, 0, NULL));
	CHECK_EQ(m.n, 0);
	u64map_free(&m);
	u64map_free(&m);	/* twice: a freed map is a zeroed one */
}

TEST(u64map_random_against_reference)
{
	enum { OPS = 200000, SPACE = 600 };
	static uint64_t ref_val[SPACE];
	static bool ref_has[SPACE];
	struct u64map m = { 0 };
	size_t n = 0;

	state = test_seed();
	for (int op = 0; op < OPS && !test_failed(); op++) {
		uint64_t k = rnd() % SPACE, v = rnd(), got = 0;
		/* keys far apart in value, close in the table: multiples */
		uint64_t key = k * 0x10000000000ull;

		switch (rnd() % 3) {
		case 0:
			CHECK_EQ(u64map_put(&m, key, v), 0);
			n += !ref_has[k];
			ref_has[k] = true;
			ref_val[k] = v;
			break;
		case 1:
			CHECK_EQ(u64map_del(&m, key), ref_has[k]);
			n -= ref_has[k];
			ref_has[k] = false;
			break;
		default:
			CHECK_EQ(u64map_get(&m, key, &got), ref_has[k]);
			if (ref_has[k])
				CHECK_EQ(got, ref_val[k]);
		}
		CHECK_EQ(m.n, n);
	}
	for (uint64_t k = 0; k < SPACE && !test_failed(); k++) {
		uint64_t got = 0;

		CHECK_EQ(u64map_get(&m, k * 0x10000000000ull, &got), ref_has[k]);
		if (ref_has[k])
			CHECK_EQ(got, ref_val[k]);
	}
	u64map_free(&m);
}

TEST(u64map_hash_bytes_differs)
{
	CHECK(u64map_hash_bytes("a", 1) != u64map_hash_bytes("b", 1));
	CHECK(u64map_hash_bytes("ab", 2) != u64map_hash_bytes("ba", 2));
	CHECK_EQ(u64map_hash_bytes("", 0), 0xcbf29ce484222325ull);
}
