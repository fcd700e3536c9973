/*
 * base64_test.c — RFC 4648's vectors, refusals, and a randomized
 * cross-check against a naive reference that works one bit at a time.
 */
#include "lib/base64.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>

/* The naive reference: the bits of the input, six at a time. */
static void naive_encode(const unsigned char *p, size_t n, char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t bits = n * 8, o = 0;

	for (size_t b = 0; b < bits; b += 6) {
		unsigned v = 0;

		for (size_t j = 0; j < 6; j++) {
			size_t bit = b + j;

			v = v << 1 | (bit < bits ? (p[bit / 8] >> (7 - bit % 8)) & 1u : 0u);
		}
		out[o++] = a[v];
	}
	while (o % 4)
		out[o++] = '=';
	out[o] = 0;
}

TEST(base64_rfc4648_vectors)
{
	static const char *in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *want[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *e = base64_encode(in[i], strlen(in[i]));
		unsigned char *d = NULL;
		size_t n = 0;

		CHECK_STR(e, want[i]);
		free(e);
		CHECK(base64_decode(want[i], strlen(want[i]), &d, &n) == 0);
		CHECK_EQ(n, strlen(in[i]));
		CHECK_STR((char *)d, in[i]);
		free(d);
	}
}

TEST(base64_skips_line_breaks)
{
	unsigned char *d = NULL;
	size_t n = 0;

	CHECK(base64_decode("Zm9v\r\nYmFy\n", 11, &d, &n) == 0);
	CHECK_EQ(n, 6);
	CHECK_STR((char *)d, "foobar");
	free(d);
}

TEST(base64_refuses)
{
	static const char *bad[] = { "Z", "Zm", "Zm9", "Zg=", "Zg", "Z===", "====", "=Zg=", "Zg==Zg==",
				     "Zh==", "Zm9=", "Zm8 ", "Zm-v", "Zm_v", "Zg=a", "Zm9vY", "Zm9v=" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char *d = (unsigned char *)"x";
		size_t n = 9;

		if (base64_decode(bad[i], strlen(bad[i]), &d, &n) != -EINVAL || d || n) {
			test_fail(__FILE__, __LINE__, "base64_decode accepted '%s'", bad[i]);
			return;
		}
	}
}

TEST(base64_matches_naive_reference)
{
	uint64_t s = test_seed() | 1;
	unsigned char in[200];
	char want[300];

	for (int round = 0; round < 5000; round++) {
		size_t n;
		char *e;
		unsigned char *d = NULL;
		size_t dn = 0;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		n = s % sizeof(in);
		for (size_t i = 0; i < n; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			in[i] = (unsigned char)s;
		}
		naive_encode(in, n, want);
		e = base64_encode(in, n);
		CHECK_STR(e, want);
		CHECK(base64_decode(e, strlen(e), &d, &dn) == 0);
		free(e);
		CHECK_EQ(dn, n);
		CHECK(memcmp(d, in, n) == 0);
		free(d);
	}
}
