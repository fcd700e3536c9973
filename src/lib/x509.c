/*
 * x509.c — certificates' common fields, PEM, public-key pins (x509.h).
 */
#include "lib/x509.h"
#include "lib/base64.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void x509_datum_wipe(gnutls_datum_t *d)
{
	if (d->data) {
		explicit_bzero(d->data, d->size);
		gnutls_free(d->data);
	}
	d->data = NULL;
	d->size = 0;
}

int x509_crt_base(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, time_t from, time_t until)
{
	unsigned char serial[16], id[64];
	size_t idlen = sizeof(id);
	int e;

	if ((e = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		return e;
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);	/* positive, 16 bytes */
	if ((e = gnutls_x509_crt_set_version(crt, 3)) < 0 || (e = gnutls_x509_crt_set_serial(crt, serial, 16)) < 0 ||
	    (e = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn))) < 0 ||
	    (e = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "weft", 4)) < 0 ||
	    (e = gnutls_x509_crt_set_activation_time(crt, from)) < 0 ||
	    (e = gnutls_x509_crt_set_expiration_time(crt, until)) < 0 || (e = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (e = gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA1, id, &idlen)) < 0 ||
	    (e = gnutls_x509_crt_set_subject_key_id(crt, id, idlen)) < 0)
		return e;
	return 0;
}

/* d's bytes as a malloc'd NUL-terminated string */
static int copy_out(const gnutls_datum_t *d, char **pem, size_t *len)
{
	*pem = malloc(d->size + 1);
	if (!*pem)
		return GNUTLS_E_MEMORY_ERROR;
	memcpy(*pem, d->data, d->size);
	(*pem)[d->size] = 0;
	*len = d->size;
	return 0;
}

int x509_crt_pem(gnutls_x509_crt_t crt, char **pem, size_t *len)
{
	gnutls_datum_t d = { 0 };
	int e = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d);

	if (e < 0)
		return e;
	e = copy_out(&d, pem, len);
	gnutls_free(d.data);
	return e;
}

int x509_key_pem(gnutls_x509_privkey_t key, char **pem, size_t *len)
{
	gnutls_datum_t d = { 0 };
	int e = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d);

	if (e < 0)
		return e;
	e = copy_out(&d, pem, len);
	x509_datum_wipe(&d);
	return e;
}

int x509_pin(gnutls_x509_crt_t crt, char pin[X509_PIN_MAX])
{
	gnutls_pubkey_t pub = NULL;
	gnutls_datum_t spki = { 0 };
	unsigned char sum[32];
	char *b64 = NULL;
	int e;

	if ((e = gnutls_pubkey_init(&pub)) < 0)
		return e;
	if ((e = gnutls_pubkey_import_x509(pub, crt, 0)) < 0 ||
	    (e = gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &spki)) < 0 ||
	    (e = gnutls_hash_fast(GNUTLS_DIG_SHA256, spki.data, spki.size, sum)) < 0)
		goto out;
	if (!(b64 = base64_encode(sum, sizeof(sum)))) {
		e = GNUTLS_E_MEMORY_ERROR;
		goto out;
	}
	snprintf(pin, X509_PIN_MAX, "sha256//%s", b64);
out:
	free(b64);
	gnutls_free(spki.data);
	gnutls_pubkey_deinit(pub);
	return e < 0 ? e : 0;
}
