/*
 * histogram.c — see histogram.h.  An observation is two relaxed atomic
 * adds and a sum; the bucket is found by a scan of 16 bounds, cheaper at
 * this size than anything cleverer.
 */
#include "lib/histogram.h"

#include <time.h>

const uint64_t histogram_bounds_ns[HISTOGRAM_BOUNDS] = {
	100000ULL,	250000ULL,	500000ULL,	1000000ULL,	2500000ULL,	5000000ULL,
	10000000ULL,	25000000ULL,	50000000ULL,	100000000ULL,	250000000ULL,	500000000ULL,
	1000000000ULL,	2500000000ULL,	5000000000ULL,	10000000000ULL,
};

void histogram_observe(struct histogram *h, uint64_t ns)
{
	int i = 0;

	while (i < HISTOGRAM_BOUNDS && ns > histogram_bounds_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

uint64_t histogram_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A bound in seconds as Prometheus clients write it: the shortest
 * decimal ("0.0001", "2.5", "10"). */
static void format_bound(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%.9g", (double)ns / 1e9);
}

void histogram_format(FILE *f, const char *name, const char *labels, const struct histogram *h)
{
	uint64_t b[HISTOGRAM_BOUNDS + 1], cum = 0, count;
	const char *sep = labels[0] ? "," : "";
	char le[32];

	/* the buckets first, then the count: a count read last is never
	 * below what the buckets add up to, as the format asks */
	for (int i = 0; i <= HISTOGRAM_BOUNDS; i++)
		b[i] = atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
	for (int i = 0; i < HISTOGRAM_BOUNDS; i++) {
		cum += b[i];
		format_bound(le, sizeof(le), histogram_bounds_ns[i]);
		fprintf(f, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, le, (unsigned long long)cum);
	}
	cum += b[HISTOGRAM_BOUNDS];
	count = atomic_load_explicit(&h->count, memory_order_relaxed);
	if (count < cum)
		count = cum;
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)count);
	fprintf(f, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		(double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9);
	fprintf(f, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		(unsigned long long)count);
}
