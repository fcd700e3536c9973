/*
 * histogram.h — a duration histogram in Prometheus' form: fixed bucket
 * bounds in seconds, counted without a lock (relaxed atomics: a reader
 * may see an observation in count before its bucket, never a bucket
 * going back), written out as the text exposition format's
 * NAME_bucket{le=...} (cumulative), NAME_sum and NAME_count.
 *
 * The bounds, 100 µs to 10 s, suit what a node's agent times: a CNI
 * request, a watch event's map writes, a policy apply.
 *
 * Ownership: a histogram is plain memory (zeroed: empty); nothing to
 * free.  Thread-safe: any number of observers and readers at once.
 */
#ifndef WEFT_LIB_HISTOGRAM_H
#define WEFT_LIB_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define HISTOGRAM_BOUNDS 16

/* The upper bounds of the buckets, in nanoseconds, increasing; a last
 * bucket (+Inf) takes what is above them all. */
extern const uint64_t histogram_bounds_ns[HISTOGRAM_BOUNDS];

struct histogram {
	_Atomic uint64_t bucket[HISTOGRAM_BOUNDS + 1];	/* not cumulative */
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
};

/* Count one duration (ns) in its bucket: the first whose bound is >= it. */
void histogram_observe(struct histogram *h, uint64_t ns);

/* Nanoseconds since an earlier CLOCK_MONOTONIC reading of the same kind
 * (histogram_now()), for the callers' timings. */
uint64_t histogram_now(void);

/* Append h's series to f: labels is "" or a label list without braces
 * (`command="ADD"`), already escaped.  The caller writes the family's
 * # HELP and # TYPE (histogram) lines once, before its series. */
void histogram_format(FILE *f, const char *name, const char *labels, const struct histogram *h);

#endif
