/*
 * throttle.h — a token bucket: the write budget of one node credential
 * (cred.c keeps one per credential, api.c asks it before a node's POST,
 * PUT, PATCH or DELETE is read).
 *
 * A bucket holds up to burst tokens and gains rate tokens a second; a
 * request takes one.  A new bucket is full.  When none is left the
 * request is refused with the seconds until one is back (rounded up, at
 * least 1): the Retry-After of the 429.  Pure: the caller passes the
 * time (CLOCK_MONOTONIC milliseconds) and guards the bucket.
 */
#ifndef WEFT_CONTROLLER_THROTTLE_H
#define WEFT_CONTROLLER_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

struct throttle_rate {
	double per_second;	/* tokens gained a second (> 0) */
	unsigned burst;		/* tokens held at most (>= 1) */
};

struct throttle_bucket {
	double tokens;
	int64_t at_ms;		/* when tokens was last brought up to date */
	bool started;		/* false: a new bucket, full at its first take */
};

/* Take a token at now_ms: 0 taken, else the seconds (>= 1) until one is
 * back, and nothing taken. */
int throttle_take(struct throttle_bucket *b, const struct throttle_rate *r, int64_t now_ms);

#endif
