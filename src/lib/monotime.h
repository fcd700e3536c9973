/*
 * monotime.h — the monotonic clock in milliseconds, for periods,
 * deadlines and timeouts (never for dates: CLOCK_MONOTONIC does not jump
 * when the wall clock is set).
 *
 * A condition variable waited on with monotime_deadline() must use
 * CLOCK_MONOTONIC (pthread_condattr_setclock): monotime_cond_init() makes
 * one.
 */
#ifndef WEFT_LIB_MONOTIME_H
#define WEFT_LIB_MONOTIME_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds since an arbitrary start (the boot), never going back. */
int64_t monotime_ms(void);
/* The CLOCK_MONOTONIC instant at monotime_ms() == at_ms, for
 * pthread_cond_timedwait. */
struct timespec monotime_deadline(int64_t at_ms);
/* pthread_cond_init with CLOCK_MONOTONIC.  0 or a positive errno. */
int monotime_cond_init(pthread_cond_t *c);

#endif
