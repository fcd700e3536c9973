/*
 * throttle.c — the token bucket of throttle.h.
 */
#include "controller/throttle.h"

#include <math.h>

int throttle_take(struct throttle_bucket *b, const struct throttle_rate *r, int64_t now_ms)
{
	double rate = r->per_second > 0 ? r->per_second : 1, burst = r->burst ? r->burst : 1, wait;
	int secs = 0;

	if (!b->started) {
		b->started = true;
		b->tokens = burst;
		b->at_ms = now_ms;
	}
	if (now_ms > b->at_ms) {
		b->tokens = fmin(burst, b->tokens + (double)(now_ms - b->at_ms) * rate / 1000.0);
		b->at_ms = now_ms;
	}
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
		goto out;
	}
	wait = ceil((1.0 - b->tokens) / rate);
	secs = wait < 1 ? 1 : wait > 3600 ? 3600 : (int)wait;
out:
	return secs;
}
