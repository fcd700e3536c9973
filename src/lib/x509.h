/*
 * x509.h — what the controller's PKI (src/controller/pki.c) and the
 * agent's own TLS identity (src/agent/flowserve.c) both do with GnuTLS's
 * X.509 API: the fields every weft certificate has, PEM out of a key or a
 * certificate, and the pin of a certificate's public key.
 *
 * GnuTLS error codes (negative) are returned as they are; the caller
 * names them with gnutls_strerror.  Key material leaves GnuTLS only in
 * buffers these functions wipe, or in the PEM the caller owns and wipes.
 */
#ifndef WEFT_LIB_X509_H
#define WEFT_LIB_X509_H

#include <stddef.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/* "sha256//" + base64 of 32 bytes + NUL */
#define X509_PIN_MAX 60

/* Wipe a datum GnuTLS gave (a key's export) and free it; data NULL after. */
void x509_datum_wipe(gnutls_datum_t *d);

/* Version 3, a random positive 16-byte serial, CN cn and O "weft", valid
 * from..until, key's public key, its subject key ID.  0 or a GnuTLS error. */
int x509_crt_base(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, time_t from, time_t until)
	__attribute__((warn_unused_result));

/* PEM of a certificate (*pem malloc'd, NUL-terminated, *len without the
 * NUL).  0 or a GnuTLS error. */
int x509_crt_pem(gnutls_x509_crt_t crt, char **pem, size_t *len) __attribute__((warn_unused_result));

/* PEM (PKCS #8, unencrypted) of a key, malloc'd; the caller wipes it
 * before freeing (secret_free).  0 or a GnuTLS error. */
int x509_key_pem(gnutls_x509_privkey_t key, char **pem, size_t *len) __attribute__((warn_unused_result));

/* The pin of crt's public key as curl's CURLOPT_PINNEDPUBLICKEY takes it:
 * "sha256//" and the base64 of the SHA-256 of its SubjectPublicKeyInfo
 * (RFC 7469's pin-sha256).  0 or a GnuTLS error. */
int x509_pin(gnutls_x509_crt_t crt, char pin[X509_PIN_MAX]) __attribute__((warn_unused_result));

#endif
