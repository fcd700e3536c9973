/*
 * test.h — the unit-test harness.
 *
 * A test file defines TEST(name) { ... } blocks; they register themselves
 * before main() and test.c runs them in file order.  A failed CHECK records
 * the file, line and expression and ends that test; the others still run.
 * The binary ends with one line "<binary>: N passed, N failed" that
 * tests/run adds up.
 *
 *   TEST(cidr_parses_prefix) {
 *       struct cidr c;
 *       CHECK(cidr_parse("10.0.0.0/8", &c) == 0);
 *       CHECK_EQ(c.len, 8);
 *   }
 */
#ifndef WEFT_TEST_H
#define WEFT_TEST_H

#include <stdint.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int test_failed(void);		/* the current test has failed already */
const char *test_tmpdir(void);	/* a fresh directory for this test, removed after */
uint64_t test_seed(void);	/* TEST_SEED from the environment, or time-based */
/* The next number below n (n > 0) of the xorshift sequence in *state
 * (seed it with test_seed() | 1), for randomized tests. */
uint32_t test_rnd(uint64_t *state, uint32_t n);

#define TEST(name)                                                          \
	static void name(void);                                             \
	__attribute__((constructor)) static void register_##name(void)      \
	{                                                                   \
		test_register(#name, name);                                 \
	}                                                                   \
	static void name(void)

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			test_fail(__FILE__, __LINE__, "%s", #cond);         \
			return;                                             \
		}                                                           \
	} while (0)

#define CHECK_EQ(a, b)                                                      \
	do {                                                                \
		long long a_ = (long long)(a), b_ = (long long)(b);         \
		if (a_ != b_) {                                             \
			test_fail(__FILE__, __LINE__, "%s == %s (%lld != %lld)", \
				  #a, #b, a_, b_);                          \
			return;                                             \
		}                                                           \
	} while (0)

#define CHECK_STR(a, b)                                                     \
	do {                                                                \
		const char *a_ = (a), *b_ = (b);                            \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                    \
			test_fail(__FILE__, __LINE__, "%s == %s (\"%s\" != \"%s\")", \
				  #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
			return;                                             \
		}                                                           \
	} while (0)

/* substring check, for error messages */
#define CHECK_CONTAINS(hay, needle)                                         \
	do {                                                                \
		const char *h_ = (hay), *n_ = (needle);                     \
		if (!h_ || !strstr(h_, n_)) {                               \
			test_fail(__FILE__, __LINE__, "%s contains \"%s\" (got \"%s\")", \
				  #hay, n_, h_ ? h_ : "(null)");            \
			return;                                             \
		}                                                           \
	} while (0)

#endif
