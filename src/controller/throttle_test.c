/*
 * throttle_test.c — the token bucket: a new bucket lets burst requests
 * through, then refuses with the seconds until a token is back; it
 * refills at its rate and never past its burst; time that goes backwards
 * takes nothing.
 */
#include "controller/throttle.h"
#include "test.h"

TEST(throttle_burst_then_refused)
{
	struct throttle_bucket b = { 0 };
	struct throttle_rate r = { .per_second = 5, .burst = 10 };

	for (int i = 0; i < 10; i++)
		CHECK_EQ(throttle_take(&b, &r, 1000), 0);
	CHECK_EQ(throttle_take(&b, &r, 1000), 1);	/* 0.2 s away: rounded up to 1 */
	CHECK_EQ(throttle_take(&b, &r, 1100), 1);	/* refused takes nothing */
	CHECK_EQ(throttle_take(&b, &r, 1200), 0);	/* one token back after 200 ms */
	CHECK_EQ(throttle_take(&b, &r, 1200), 1);
}

TEST(throttle_refills_to_burst_only)
{
	struct throttle_bucket b = { 0 };
	struct throttle_rate r = { .per_second = 5, .burst = 10 };
	int taken = 0;

	for (int i = 0; i < 10; i++)
		CHECK_EQ(throttle_take(&b, &r, 0), 0);
	/* an hour later: full again, but no fuller than burst */
	while (throttle_take(&b, &r, 3600 * 1000) == 0 && taken < 100)
		taken++;
	CHECK_EQ(taken, 10);
}

TEST(throttle_slow_rate_waits_longer)
{
	struct throttle_bucket b = { 0 };
	struct throttle_rate r = { .per_second = 1, .burst = 1 };

	CHECK_EQ(throttle_take(&b, &r, 5000), 0);
	CHECK_EQ(throttle_take(&b, &r, 5000), 1);
	CHECK_EQ(throttle_take(&b, &r, 5500), 1);
	CHECK_EQ(throttle_take(&b, &r, 6000), 0);
}

TEST(throttle_clock_backwards_gives_nothing)
{
	struct throttle_bucket b = { 0 };
	struct throttle_rate r = { .per_second = 100, .burst = 1 };

	CHECK_EQ(throttle_take(&b, &r, 10000), 0);
	CHECK_EQ(throttle_take(&b, &r, 5000), 1);
	CHECK_EQ(throttle_take(&b, &r, 10000), 1);
	CHECK_EQ(throttle_take(&b, &r, 10010), 0);
}

TEST(throttle_fractional_rate)
{
	struct throttle_bucket b = { 0 };
	struct throttle_rate r = { .per_second = 0.1, .burst = 2 };

	CHECK_EQ(throttle_take(&b, &r, 0), 0);
	CHECK_EQ(throttle_take(&b, &r, 0), 0);
	CHECK_EQ(throttle_take(&b, &r, 0), 10);	/* one every 10 s */
	CHECK_EQ(throttle_take(&b, &r, 4000), 6);
	CHECK_EQ(throttle_take(&b, &r, 10000), 0);
}
