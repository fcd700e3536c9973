/*
 * monotime.c — the monotonic clock in milliseconds (monotime.h).
 */
#include "lib/monotime.h"

int64_t monotime_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct timespec monotime_deadline(int64_t at_ms)
{
	struct timespec t = { .tv_sec = (time_t)(at_ms / 1000), .tv_nsec = (long)(at_ms % 1000) * 1000000L };

	return t;
}

int monotime_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t attr;
	int rc = pthread_condattr_init(&attr);

	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(c, &attr);
	pthread_condattr_destroy(&attr);
	return rc;
}
