/*
 * cidr_test.c — parse/format, containment and subnet carving, with a
 * randomized cross-check against a naive reference that enumerates
 * addresses of small blocks.
 */
#include "lib/cidr.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>

TEST(ip4_round_trips)
{
	static const char *good[] = { "0.0.0.0", "10.128.0.1", "255.255.255.255",
				      "1.2.3.4", "192.168.100.200" };
	char buf[IP4_STRLEN];
	uint32_t a;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(ip4_parse(good[i], &a) == 0);
		ip4_format(a, buf);
		CHECK_STR(buf, good[i]);
	}
	CHECK(ip4_parse("10.1.2.3", &a) == 0);
	CHECK_EQ(a, 0x0a010203u);
}

TEST(ip4_rejects)
{
	static const char *bad[] = { "", "1", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.256",
				     "1.2.3.1000", "010.1.1.1", "1.02.3.4", "1.2.3.00", "1.2.3.4 ",
				     " 1.2.3.4", "1.2.3.4x", "1..3.4", "1.2.3.", ".1.2.3",
				     "1.2.3.-4", "+1.2.3.4", "0x1.2.3.4", "1.2.3.4/32", "1,2,3,4" };
	uint32_t a = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ip4_parse(bad[i], &a) != -EINVAL) {
			test_fail(__FILE__, __LINE__, "ip4_parse accepted '%s'", bad[i]);
			return;
		}
	}
	CHECK(ip4_parse(NULL, &a) == -EINVAL);
	CHECK_EQ(a, 7);
}

TEST(cidr_round_trips)
{
	static const char *good[] = { "0.0.0.0/0", "10.128.0.0/14", "172.30.0.0/16",
				      "10.0.0.1/32", "192.168.1.0/24", "128.0.0.0/1",
				      "10.131.254.0/23" };
	char buf[CIDR_STRLEN];
	struct cidr c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(cidr_parse(good[i], &c) == 0);
		cidr_format(&c, buf);
		CHECK_STR(buf, good[i]);
	}
	CHECK(cidr_parse("10.128.0.0/14", &c) == 0);
	CHECK_EQ(c.addr, 0x0a800000u);
	CHECK_EQ(c.len, 14);
	c.addr = 0xffffffffu;
	c.len = 32;
	cidr_format(&c, buf);
	CHECK_STR(buf, "255.255.255.255/32");
}

TEST(cidr_rejects_syntax)
{
	static const char *bad[] = { "10.0.0.0", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/99",
				     "10.0.0.0/100", "300.0.0.0/8", "10.0.0.256/32",
				     "010.0.0.0/8", "10.0.0.0/08", "10.0.0.0/8 ", "10.0.0.0/8x",
				     "10.0.0.0/8/8", "10.0.0/8", "/8", "", "10.0.0.0/-1",
				     "10.0.0.0/+8", "10.0.0.0 /8", "10.0.0.0/ 8" };
	struct cidr c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cidr_parse(bad[i], &c) != -EINVAL) {
			test_fail(__FILE__, __LINE__, "cidr_parse accepted '%s'", bad[i]);
			return;
		}
	}
}

TEST(cidr_rejects_host_bits)
{
	struct cidr c;
	char buf[CIDR_STRLEN];

	CHECK(cidr_parse("10.0.0.1/8", &c) == -EDOM);
	cidr_format(&c, buf);
	CHECK_STR(buf, "10.0.0.0/8");
	CHECK(cidr_parse("10.129.0.0/14", &c) == -EDOM);
	CHECK(cidr_parse("0.0.0.1/0", &c) == -EDOM);
	CHECK(cidr_parse("10.0.0.1/31", &c) == -EDOM);
	CHECK(cidr_parse("10.0.0.1/32", &c) == 0);
}

TEST(cidr_mask_and_size)
{
	struct cidr c = { 0, 0 };

	CHECK_EQ(cidr_mask(0), 0);
	CHECK_EQ(cidr_mask(1), 0x80000000u);
	CHECK_EQ(cidr_mask(14), 0xfffc0000u);
	CHECK_EQ(cidr_mask(32), 0xffffffffu);
	CHECK(cidr_size(&c) == 1ull << 32);
	c.len = 32;
	CHECK_EQ(cidr_size(&c), 1);
	c.len = 23;
	CHECK_EQ(cidr_size(&c), 512);
}

TEST(cidr_contains_and_overlaps)
{
	struct cidr big, small, other, all, host;
	uint32_t ip;

	CHECK(cidr_parse("10.128.0.0/14", &big) == 0);
	CHECK(cidr_parse("10.130.4.0/23", &small) == 0);
	CHECK(cidr_parse("10.132.0.0/14", &other) == 0);
	CHECK(cidr_parse("0.0.0.0/0", &all) == 0);
	CHECK(cidr_parse("10.131.255.255/32", &host) == 0);
	CHECK(cidr_contains(&big, &small));
	CHECK(!cidr_contains(&small, &big));
	CHECK(cidr_contains(&big, &big));
	CHECK(cidr_contains(&big, &host));
	CHECK(!cidr_contains(&other, &host));
	CHECK(cidr_contains(&all, &big));
	CHECK(cidr_overlaps(&big, &small));
	CHECK(cidr_overlaps(&small, &big));
	CHECK(!cidr_overlaps(&big, &other));
	CHECK(cidr_overlaps(&all, &other));
	CHECK(ip4_parse("10.131.255.255", &ip) == 0);
	CHECK(cidr_contains_ip(&big, ip));
	CHECK(ip4_parse("10.132.0.0", &ip) == 0);
	CHECK(!cidr_contains_ip(&big, ip));
	CHECK(cidr_contains_ip(&all, ip));
}

TEST(cidr_subnet_carves)
{
	struct cidr net, s;
	char buf[CIDR_STRLEN];

	CHECK(cidr_parse("10.128.0.0/14", &net) == 0);
	CHECK_EQ(cidr_subnet_count(&net, 23), 512);
	CHECK(cidr_subnet(&net, 23, 0, &s) == 0);
	cidr_format(&s, buf);
	CHECK_STR(buf, "10.128.0.0/23");
	CHECK(cidr_subnet(&net, 23, 2, &s) == 0);
	cidr_format(&s, buf);
	CHECK_STR(buf, "10.128.4.0/23");
	CHECK(cidr_subnet(&net, 23, 511, &s) == 0);
	cidr_format(&s, buf);
	CHECK_STR(buf, "10.131.254.0/23");
	CHECK(cidr_subnet(&net, 23, 512, &s) == -ERANGE);
	CHECK(cidr_subnet(&net, 13, 0, &s) == -EINVAL);
	CHECK(cidr_subnet(&net, 33, 0, &s) == -EINVAL);
	CHECK_EQ(cidr_subnet_count(&net, 13), 0);
	CHECK_EQ(cidr_subnet_count(&net, 33), 0);
	CHECK(cidr_subnet(&net, 14, 0, &s) == 0);
	CHECK(s.addr == net.addr && s.len == 14);

	net.addr = 0;
	net.len = 0;
	CHECK(cidr_subnet_count(&net, 32) == 1ull << 32);
	CHECK(cidr_subnet(&net, 32, 0xffffffffull, &s) == 0);
	CHECK_EQ(s.addr, 0xffffffffu);
	CHECK(cidr_subnet(&net, 32, 1ull << 32, &s) == -ERANGE);
	CHECK(cidr_subnet(&net, 0, 0, &s) == 0);
	CHECK(s.addr == 0 && s.len == 0);
}

/* xorshift64*, seeded from test_seed() so a failure can be replayed. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* A random block of 2^k addresses (k <= 8), clustered in one /20 so that
 * random pairs overlap often enough to exercise both outcomes. */
static struct cidr random_small_block(void)
{
	struct cidr c;

	c.len = (uint8_t)(24 + rnd() % 9);
	c.addr = (0x0a000000u | (uint32_t)(rnd() & 0xfffu)) & cidr_mask(c.len);
	return c;
}

static bool naive_contains_ip(const struct cidr *c, uint32_t ip)
{
	uint64_t n = 1ull << (32 - c->len);

	for (uint64_t i = 0; i < n; i++)
		if (c->addr + (uint32_t)i == ip)
			return true;
	return false;
}

static bool naive_contains(const struct cidr *outer, const struct cidr *inner)
{
	uint64_t n = 1ull << (32 - inner->len);

	for (uint64_t i = 0; i < n; i++)
		if (!naive_contains_ip(outer, inner->addr + (uint32_t)i))
			return false;
	return true;
}

static bool naive_overlaps(const struct cidr *a, const struct cidr *b)
{
	uint64_t n = 1ull << (32 - a->len);

	for (uint64_t i = 0; i < n; i++)
		if (naive_contains_ip(b, a->addr + (uint32_t)i))
			return true;
	return false;
}

TEST(cidr_random_cross_check)
{
	rng_state = test_seed() | 1;
	for (int round = 0; round < 3000; round++) {
		struct cidr a = random_small_block(), b = random_small_block(), s;
		uint32_t ip = 0x0a000000u | (uint32_t)(rnd() & 0xfffu);
		char sa[CIDR_STRLEN], sb[CIDR_STRLEN], back[CIDR_STRLEN];
		struct cidr parsed;

		cidr_format(&a, sa);
		cidr_format(&b, sb);
		CHECK(cidr_parse(sa, &parsed) == 0);
		cidr_format(&parsed, back);
		CHECK_STR(back, sa);
		if (cidr_contains_ip(&a, ip) != naive_contains_ip(&a, ip) ||
		    cidr_contains(&a, &b) != naive_contains(&a, &b) ||
		    cidr_overlaps(&a, &b) != naive_overlaps(&a, &b)) {
			test_fail(__FILE__, __LINE__, "mismatch for %s, %s (round %d)", sa, sb, round);
			return;
		}

		/* Subnets: consecutive, disjoint, inside, covering net. */
		uint8_t sub_len = (uint8_t)(a.len + rnd() % (33u - a.len));
		uint64_t count = cidr_subnet_count(&a, sub_len);
		uint32_t expect = a.addr;

		CHECK(count == 1ull << (sub_len - a.len));
		for (uint64_t i = 0; i < count; i++) {
			CHECK(cidr_subnet(&a, sub_len, i, &s) == 0);
			CHECK_EQ(s.addr, expect);
			CHECK_EQ(s.len, sub_len);
			CHECK(naive_contains(&a, &s));
			expect += (uint32_t)(1ull << (32 - sub_len));
		}
		CHECK_EQ(expect, a.addr + (uint32_t)cidr_size(&a));
		CHECK(cidr_subnet(&a, sub_len, count, &s) == -ERANGE);
	}
}
