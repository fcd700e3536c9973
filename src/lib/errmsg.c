/* errmsg.c — see errmsg.h. */
#include "lib/errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void errmsg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int errmsg_vline(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t n = strlen(buf);

	if (n + 2 >= len)
		return -1;
	vsnprintf(buf + n, len - n - 1, fmt, ap);
	n = strlen(buf);
	buf[n] = '\n';
	buf[n + 1] = 0;
	return 0;
}

int errmsg_line(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = errmsg_vline(buf, len, fmt, ap);
	va_end(ap);
	return rc;
}
