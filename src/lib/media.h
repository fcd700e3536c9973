/*
 * media.h — the media type a Content-Type header names, as HTTP servers
 * compare it: blanks around it and its parameters ("; charset=utf-8") left
 * out, any case; and which of a server's media types an Accept header
 * prefers (RFC 9110 12.5.1, with Kubernetes' profile parameters as, g and
 * v).  Pure; nothing is copied (spans are borrowed from the header's text)
 * and nothing is allocated.
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

/* A media type a server answers with.  as, g, v (or NULL) are the
 * parameters a client names to ask for it, as Kubernetes' Table is
 * "application/json;as=Table;g=meta.k8s.io;v=v1"; an offer with as is
 * matched only by a range that names all three, equal. */
struct media_offer {
	const char *type;
	const char *as, *g, *v;
};

#define MEDIA_ACCEPT_MAX_RANGES 64	/* ranges of one Accept header read; the rest ignored */

/* The index into offers[n] of what accept prefers, or -1 when it accepts
 * none of them.  No header, or one without a range, accepts offers[0].
 * Ranges are taken by q (highest first; q=0 accepts nothing), equal q in
 * the header's order; a range matches an offer when its type is the
 * offer's (any case), "type/ *" of the offer's type or "* / *" (without
 * the blanks), and its as, g and v are the offer's (absent when the
 * offer has none).  Other parameters (charset, pretty) are ignored. */
int media_accept_pick(const char *accept, const struct media_offer *offers, size_t n);

#endif
