/*
 * media.h — the media type a Content-Type header names, as HTTP servers
 * compare it: blanks around it and its parameters ("; charset=utf-8") left
 * out, any case.  Pure; nothing is copied (the span is borrowed from the
 * header's text).
 */
#ifndef WEFT_MEDIA_H
#define WEFT_MEDIA_H

#include <stdbool.h>
#include <stddef.h>

/* The media type of header (NULL: none): its first byte, with its length
 * in *len (0 when there is none). */
const char *media_type_of(const char *header, size_t *len);
/* Whether header's media type is want (any case). */
bool media_type_is(const char *header, const char *want);

#endif
