/*
 * test.c — runs the TEST() blocks registered by a test file, in order.
 *
 * Usage: <test-binary> [NAME-SUBSTRING]
 * Each test gets a fresh temporary directory (test_tmpdir) that is removed
 * afterwards.  Exit status is 0 only if every test passed.
 */
#include "test.h"

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_TESTS 1024

static struct {
	const char *name;
	test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static int failed_now;
static char tmpdir[256];
static uint64_t seed;

void test_register(const char *name, test_fn fn)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "test: more than %d tests\n", MAX_TESTS);
		abort();
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	failed_now = 1;
	fprintf(stderr, "    %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int test_failed(void) { return failed_now; }

const char *test_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/weft-test.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			abort();
		}
	}
	return tmpdir;
}

uint64_t test_seed(void) { return seed; }

uint32_t test_rnd(uint64_t *state, uint32_t n)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (uint32_t)(*state % n);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	const char *env = getenv("TEST_SEED");
	int passed = 0, failed = 0;
	struct timeval tv;

	gettimeofday(&tv, NULL);
	seed = env ? strtoull(env, NULL, 0) : (uint64_t)tv.tv_sec * 1000003u + (uint64_t)tv.tv_usec;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < ntests; i++) {
		if (only && !strstr(tests[i].name, only))
			continue;
		failed_now = 0;
		tmpdir[0] = 0;
		tests[i].fn();
		if (tmpdir[0])
			nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		if (failed_now) {
			failed++;
			printf("  FAIL %s (TEST_SEED=%llu)\n", tests[i].name, (unsigned long long)seed);
		} else {
			passed++;
			printf("  ok   %s\n", tests[i].name);
		}
	}
	printf("%s: %d passed, %d failed\n", basename(argv[0]), passed, failed);
	return failed ? 1 : 0;
}
