/*
 * backend_addrs_test.c — the table of remote backend addresses against a
 * naive model (a count and a namespace per address of a small space),
 * over random references and releases: after every step each address's
 * record, count and namespace agree, the walk visits exactly the live
 * addresses, the first/last reports are right, and each /24 is said to
 * hold an address exactly when some live address is in it.
 */
#include "agent/backend_addrs.h"
#include "test.h"

#include <arpa/inet.h>
#include <stdio.h>

enum { ADDRS = 50, STEPS = 40000 };

struct maddr {
	uint32_t refs;
	char ns[16];
};

static in_addr_t ip_of(int i)
{
	return htonl(0x0a800000u + (uint32_t)i * 61u);	/* a few a /24, spread over the buckets */
}

static void check_all(const struct backend_addrs *t, const struct maddr *m)
{
	size_t live = 0, walked = 0;

	for (int i = 0; i < ADDRS; i++) {
		const struct backend_addr *b = backend_addrs_find(t, ip_of(i));

		CHECK_EQ(b != NULL, m[i].refs > 0);
		if (!b)
			continue;
		live++;
		CHECK_EQ(b->refs, m[i].refs);
		CHECK_STR(b->ns, m[i].ns);
	}
	CHECK_EQ(backend_addrs_count(t), live);
	for (const struct backend_addr *b = backend_addrs_first(t); b; b = backend_addrs_next(t, b)) {
		uint32_t i = (ntohl(b->ip) - 0x0a800000u) / 61u;

		CHECK(i < ADDRS && ip_of((int)i) == b->ip && m[i].refs > 0);
		walked++;
	}
	CHECK_EQ(walked, live);
	for (uint32_t blk = 0; blk <= (ADDRS * 61u) >> 8; blk++) {
		bool any = false;

		for (int i = 0; i < ADDRS; i++)
			any |= m[i].refs > 0 && ((ntohl(ip_of(i)) - 0x0a800000u) >> 8) == blk;
		CHECK_EQ(backend_addrs_in_block(t, htonl(0x0a800000u + (blk << 8) + 200)), any);
	}
}

TEST(backend_addrs_random)
{
	struct backend_addrs t = { 0 };
	struct maddr m[ADDRS] = { 0 };
	uint64_t st = test_seed() | 1;

	for (int step = 0; step < STEPS && !test_failed(); step++) {
		int i = (int)test_rnd(&st, ADDRS);
		char ns[16];
		bool first;

		snprintf(ns, sizeof(ns), "ns-%u", test_rnd(&st, 4));
		if (test_rnd(&st, 100) < 55) {
			CHECK_EQ(backend_addrs_ref(&t, ip_of(i), ns, &first), 0);
			CHECK_EQ(first, m[i].refs == 0);
			if (!m[i].refs++)
				snprintf(m[i].ns, sizeof(m[i].ns), "%s", ns);	/* the first's */
		} else {
			bool last = backend_addrs_unref(&t, ip_of(i));

			CHECK_EQ(last, m[i].refs == 1);
			if (m[i].refs)
				m[i].refs--;
		}
		if (step % 11 == 0)
			check_all(&t, m);
	}
	check_all(&t, m);
	backend_addrs_free(&t);
	CHECK_EQ(backend_addrs_count(&t), 0);
	CHECK(!backend_addrs_first(&t));
}

/* A namespace name longer than a DNS label is cut, never overflows. */
TEST(backend_addrs_long_namespace)
{
	struct backend_addrs t = { 0 };
	char ns[200];
	bool first;

	memset(ns, 'n', sizeof(ns) - 1);
	ns[sizeof(ns) - 1] = 0;
	CHECK_EQ(backend_addrs_ref(&t, ip_of(1), ns, &first), 0);
	CHECK(first);
	CHECK_EQ(strlen(backend_addrs_find(&t, ip_of(1))->ns), BACKEND_ADDRS_NS_MAX - 1);
	CHECK(backend_addrs_unref(&t, ip_of(1)));
	CHECK(!backend_addrs_find(&t, ip_of(1)));
	CHECK(!backend_addrs_unref(&t, ip_of(1)));
	backend_addrs_free(&t);
}
