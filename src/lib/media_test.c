/*
 * media_test.c — the media type of Content-Type headers as clients send
 * them: parameters, blanks, case, nothing at all.
 */
#include "lib/media.h"
#include "test.h"

TEST(media_type_drops_blanks_and_parameters)
{
	size_t n = 99;
	const char *m = media_type_of("  application/json ; charset=utf-8", &n);

	CHECK_EQ(n, strlen("application/json"));
	CHECK(strncmp(m, "application/json", n) == 0);
	CHECK(media_type_of(NULL, &n) && n == 0);
	CHECK(media_type_of(" ;x=y", &n) && n == 0);
	CHECK(media_type_is("Application/Merge-Patch+JSON;charset=utf-8", "application/merge-patch+json"));
	CHECK(media_type_is("\tapplication/json\t", "application/json"));
	CHECK(!media_type_is("application/jsonx", "application/json"));
	CHECK(!media_type_is("application/js", "application/json"));
	CHECK(!media_type_is(NULL, "application/json"));
}
