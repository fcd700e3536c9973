/*
 * errmsg.h — the one way a library fills a caller's message buffer
 * (libraries never print; STYLE: "fill a caller-owned message buffer").
 */
#ifndef WEFT_LIB_ERRMSG_H
#define WEFT_LIB_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/* printf into err (errlen bytes, always NUL-terminated); err NULL or
 * errlen 0: nothing. */
void errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append one line (printf, then a newline) to the text in buf (len bytes,
 * NUL-terminated), for a report of several lines: a line that does not
 * fit whole is cut short; with no room left for a character and its
 * newline, nothing.  0 appended, -1 not. */
int errmsg_line(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int errmsg_vline(char *buf, size_t len, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif
