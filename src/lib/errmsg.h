/*
 * errmsg.h — the one way a library fills a caller's message buffer
 * (libraries never print; STYLE: "fill a caller-owned message buffer").
 */
#ifndef WEFT_LIB_ERRMSG_H
#define WEFT_LIB_ERRMSG_H

#include <stddef.h>

/* printf into err (errlen bytes, always NUL-terminated); err NULL or
 * errlen 0: nothing. */
void errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
