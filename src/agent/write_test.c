/*
 * write_test.c — what agent_write waits after a 429: the Retry-After
 * header, else the Status' details.retryAfterSeconds, else 1 s, never
 * more than AGENT_RETRY_MAX_S; anything but a 429 is not retried.
 */
#include "agent/agent.h"
#include "test.h"

/* main.c's, which a test does not link */
void agent_log(const char *level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static int wait_for_answer(long status, long retry_after, const char *body)
{
	struct httpc_response r = { .status = status, .retry_after = retry_after, .body = (char *)body };

	return agent_retry_seconds(&r);
}

TEST(write_retry_only_429)
{
	CHECK_EQ(wait_for_answer(200, 0, "{}"), -1);
	CHECK_EQ(wait_for_answer(409, 3, "{}"), -1);
	CHECK_EQ(wait_for_answer(503, 3, "{}"), -1);
	CHECK_EQ(wait_for_answer(429, 3, "{}"), 3);
}

TEST(write_retry_after_header_then_details)
{
	CHECK_EQ(wait_for_answer(429, 2, "{\"details\":{\"retryAfterSeconds\":5}}"), 2);
	CHECK_EQ(wait_for_answer(429, 0, "{\"kind\":\"Status\",\"code\":429,\"details\":{\"retryAfterSeconds\":5}}"), 5);
	CHECK_EQ(wait_for_answer(429, 0, "not json"), 1);
	CHECK_EQ(wait_for_answer(429, 0, ""), 1);
	CHECK_EQ(wait_for_answer(429, 0, NULL), 1);
	CHECK_EQ(wait_for_answer(429, 0, "{\"details\":{\"retryAfterSeconds\":-4}}"), 1);
}

TEST(write_retry_bounded)
{
	CHECK_EQ(wait_for_answer(429, 3600, "{}"), AGENT_RETRY_MAX_S);
	CHECK_EQ(wait_for_answer(429, 0, "{\"details\":{\"retryAfterSeconds\":86400}}"), AGENT_RETRY_MAX_S);
}
