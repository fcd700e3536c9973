/*
 * secret_file.h — small whole files that may hold secrets (a token, a
 * private key, a kubeconfig): read with a bound, wiped when freed.
 *
 * Ownership: secret_file_read hands the caller a NUL-terminated buffer of
 * len + 1 bytes, freed with secret_free(buf, len + 1).  Nothing prints.
 */
#ifndef WEFT_LIB_SECRET_FILE_H
#define WEFT_LIB_SECRET_FILE_H

#include <stddef.h>

/* All of path, at most max bytes, into *out (NUL-terminated) and *len.
 * 0, or -errno: the open's or read's, -EFBIG when the file is larger than
 * max, -ENOMEM.  On failure *out is NULL and what was read is wiped. */
int secret_file_read(const char *path, size_t max, char **out, size_t *len)
	__attribute__((warn_unused_result));

/* Wipe len bytes of data, then free it; NULL is fine. */
void secret_free(void *data, size_t len);

#endif
