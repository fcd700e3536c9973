/*
 * media.c — the media type of a Content-Type header (media.h): skip the
 * blanks before it, stop at the first ';', drop the blanks before that.
 */
#include "lib/media.h"

#include <string.h>
#include <strings.h>

const char *media_type_of(const char *header, size_t *len)
{
	const char *ct = header ? header : "";
	size_t n;

	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, ";");
	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	*len = n;
	return ct;
}

bool media_type_is(const char *header, const char *want)
{
	size_t n;
	const char *ct = media_type_of(header, &n);

	return n == strlen(want) && strncasecmp(ct, want, n) == 0;
}
