/*
 * base64.h — RFC 4648 base64 (standard alphabet, '=' padding), as
 * kubeconfig files carry certificates (certificate-authority-data).
 *
 * Ownership: both functions return a malloc'd buffer the caller frees
 * (wiping it first when it held a secret).
 */
#ifndef WEFT_BASE64_H
#define WEFT_BASE64_H

#include <stddef.h>

/* len bytes as base64, NUL-terminated, without line breaks; NULL with
 * errno ENOMEM, or EOVERFLOW when len is absurd. */
char *base64_encode(const void *data, size_t len);

/* Decode text (len characters; '\r' and '\n' anywhere are skipped, as Go's
 * decoder does).  0 with *out (NUL-terminated for convenience, *outlen
 * bytes without the NUL), -EINVAL when the text is not base64 (a character
 * outside the alphabet, wrong padding, a length that is not a multiple of
 * 4 or non-zero bits after the last byte), -ENOMEM.  On failure *out is NULL. */
int base64_decode(const char *text, size_t len, unsigned char **out, size_t *outlen)
	__attribute__((warn_unused_result));

#endif
