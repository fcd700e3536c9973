/*
 * histogram_test.c — the histogram against a naive reference (a sorted
 * list of every observation, counted against each bound), through the
 * text it writes; the edges (a value equal to a bound is in that bucket,
 * "le"); and observers on several threads at once.
 */
#include "lib/histogram.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The value of the line of text that starts with prefix; -1 if none. */
static double value_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0)
			return strtod(p + n, NULL);
	return -1;
}

static char *format(const struct histogram *h, const char *labels)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	histogram_format(f, "weft_x_seconds", labels, h);
	fclose(f);
	return buf;
}

TEST(buckets_are_cumulative_and_match_a_naive_count)
{
	static struct histogram h;
	static uint64_t seen[4000];
	uint64_t rnd = test_seed() | 1, sum = 0;
	int n = 0;
	char *text, prefix[96];

	for (int i = 0; i < 4000; i++) {
		/* spread over 10 µs .. 20 s, and some exactly on a bound */
		uint64_t v = test_rnd(&rnd, 4) == 0 ? histogram_bounds_ns[test_rnd(&rnd, HISTOGRAM_BOUNDS)]
						    : (uint64_t)10000 << test_rnd(&rnd, 21);

		v += test_rnd(&rnd, 2) ? 0 : test_rnd(&rnd, 1000);
		histogram_observe(&h, v);
		seen[n++] = v;
		sum += v;
	}
	text = format(&h, "command=\"ADD\"");
	CHECK(text != NULL);
	for (int b = 0; b < HISTOGRAM_BOUNDS && text; b++) {
		char le[32];
		uint64_t want = 0;

		for (int i = 0; i < n; i++)
			want += seen[i] <= histogram_bounds_ns[b];
		snprintf(le, sizeof(le), "%.9g", (double)histogram_bounds_ns[b] / 1e9);
		snprintf(prefix, sizeof(prefix), "weft_x_seconds_bucket{command=\"ADD\",le=\"%s\"} ", le);
		CHECK_EQ((uint64_t)value_of(text, prefix), want);
	}
	if (text) {
		CHECK_EQ((uint64_t)value_of(text, "weft_x_seconds_bucket{command=\"ADD\",le=\"+Inf\"} "), 4000);
		CHECK_EQ((uint64_t)value_of(text, "weft_x_seconds_count{command=\"ADD\"} "), 4000);
		CHECK(value_of(text, "weft_x_seconds_sum{command=\"ADD\"} ") > (double)sum / 1e9 * 0.999999);
		CHECK(value_of(text, "weft_x_seconds_sum{command=\"ADD\"} ") < (double)sum / 1e9 * 1.000001);
		CHECK_CONTAINS(text, "le=\"0.0001\"");
		CHECK_CONTAINS(text, "le=\"2.5\"");
		CHECK_CONTAINS(text, "le=\"10\"");
	}
	free(text);
}

TEST(without_labels_and_empty)
{
	struct histogram h;
	char *text;

	memset(&h, 0, sizeof(h));
	text = format(&h, "");
	CHECK(text != NULL);
	if (text) {
		CHECK_CONTAINS(text, "weft_x_seconds_bucket{le=\"0.0001\"} 0\n");
		CHECK_CONTAINS(text, "weft_x_seconds_bucket{le=\"+Inf\"} 0\n");
		CHECK_CONTAINS(text, "weft_x_seconds_count 0\n");
		CHECK_CONTAINS(text, "weft_x_seconds_sum 0.000000000\n");
	}
	free(text);
	histogram_observe(&h, histogram_bounds_ns[0]);	/* on the bound: in it */
	histogram_observe(&h, histogram_bounds_ns[0] + 1);
	text = format(&h, "");
	if (text) {
		CHECK_CONTAINS(text, "weft_x_seconds_bucket{le=\"0.0001\"} 1\n");
		CHECK_CONTAINS(text, "weft_x_seconds_bucket{le=\"0.00025\"} 2\n");
	}
	free(text);
}

#define THREADS 4
#define EACH 20000

static void *observer(void *arg)
{
	struct histogram *h = arg;

	for (int i = 0; i < EACH; i++)
		histogram_observe(h, (uint64_t)(i % 7) * 1000000ULL);
	return NULL;
}

TEST(observers_on_several_threads_lose_nothing)
{
	static struct histogram h;
	pthread_t t[THREADS];
	char *text;

	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, observer, &h), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	text = format(&h, "");
	CHECK(text != NULL);
	if (text)
		CHECK_EQ((uint64_t)value_of(text, "weft_x_seconds_count "), (uint64_t)THREADS * EACH);
	free(text);
}
