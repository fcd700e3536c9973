/*
 * pki.c — the cluster CA and the API's serving certificate (pki.h), with
 * GnuTLS's X.509 API.
 *
 *   pki_load_or_create
 *      ├─ wanted SANs: --listen IP (unless 0.0.0.0), 127.0.0.1, localhost, --tls-san
 *      ├─ load_or_make_ca        DIR/pki/ca.{key,crt}: keep / make / re-make the
 *      │                         certificate from the key / refuse (pki.h, 1.)
 *      ├─ bring_your_own         --tls-cert-file + --tls-key-file (pki.h, 3.)
 *      └─ load_or_make_serving   DIR/pki/apiserver.{key,crt}: keep, or why not
 *                                (serving_problem) and make new ones
 *
 * Invariants
 *  1. Private key material exists in memory only in GnuTLS key objects
 *     (gnutls_x509_privkey_deinit clears them) and in buffers this file
 *     wipes before freeing: file contents read, PEM exported, p->key_pem.
 *  2. A key file is created with O_EXCL and mode 0600 under a temporary
 *     name, then renamed: there is no moment when it exists with another
 *     mode, and a crash leaves the old file or the new one.
 *  3. The serving pair is written key first, certificate second; a crash
 *     between the two renames leaves a pair that does not match, which
 *     the next start notices (serving_problem) and replaces.
 */
#include "controller/pki.h"
#include "lib/errmsg.h"
#include "lib/secret_file.h"
#include "lib/x509.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1u << 20)	/* a certificate or key file larger than this is refused */
#define DAY 86400
#define BACKDATE 300		/* notBefore this far in the past: clocks of clients differ */
#define CA_NAME "weft-ca"
#define SERVING_NAME "weft-apiserver"

struct san {
	bool ip;
	unsigned char addr[16];
	size_t addrlen;		/* 4 or 16 */
	char name[254];		/* DNS name, lower case; or the address as text */
};

struct wanted {
	struct san sans[PKI_MAX_SANS + 3];
	size_t n;
};

static void report(struct pki *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct pki *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)errmsg_vline(p->report, sizeof(p->report), fmt, ap);
	va_end(ap);
}

static const char *date(time_t t, char buf[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%d %H:%M UTC", &tm);
	return buf;
}

/* ------------------------------------------------------------------ SANs */

static bool dns_name(const char *s)
{
	size_t n = strlen(s), label = 0;
	const char *last = strrchr(s, '.');

	if (n == 0 || n > 253 || strspn(last ? last + 1 : s, "0123456789") == strlen(last ? last + 1 : s))
		return false;	/* an all-digit last label reads as a (bad) address */
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];

		if (c == '.' || c == 0) {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   (c == '-' && label > 0)) {
			label++;
		} else {
			return false;
		}
	}
	return true;
}

static int san_parse(const char *s, struct san *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, out->addr) == 1) {
		out->ip = true;
		out->addrlen = 4;
	} else if (inet_pton(AF_INET6, s, out->addr) == 1) {
		out->ip = true;
		out->addrlen = 16;
	} else if (!dns_name(s)) {
		return -EINVAL;
	}
	snprintf(out->name, sizeof(out->name), "%s", s);
	if (!out->ip)
		for (char *c = out->name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
	return 0;
}

int pki_san_check(const char *s, char *err, size_t errlen)
{
	struct san san;

	if (san_parse(s, &san)) {
		errmsg(err, errlen, "--tls-san '%.300s': not an IP address or a DNS name (labels of a-z, 0-9 and '-')", s);
		return -EINVAL;
	}
	return 0;
}

static bool san_equal(const struct san *a, const struct san *b)
{
	if (a->ip != b->ip)
		return false;
	return a->ip ? a->addrlen == b->addrlen && memcmp(a->addr, b->addr, a->addrlen) == 0
		     : strcmp(a->name, b->name) == 0;
}

static int want(struct wanted *w, const char *s, char *err, size_t errlen)
{
	struct san san;

	if (san_parse(s, &san)) {
		errmsg(err, errlen, "--tls-san '%.300s': not an IP address or a DNS name (labels of a-z, 0-9 and '-')", s);
		return -EINVAL;
	}
	for (size_t i = 0; i < w->n; i++)
		if (san_equal(&w->sans[i], &san))
			return 0;
	if (w->n == sizeof(w->sans) / sizeof(w->sans[0])) {
		errmsg(err, errlen, "--tls-san: more than %d names", PKI_MAX_SANS);
		return -EINVAL;
	}
	w->sans[w->n++] = san;
	return 0;
}

static void sans_text(const struct wanted *w, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < w->n && o < len; i++) {
		int n = snprintf(buf + o, len - o, "%s%s:%s", i ? ", " : "", w->sans[i].ip ? "IP" : "DNS",
				 w->sans[i].name);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/* Does crt name san among its subject alternative names (exactly)? */
static bool crt_has_san(gnutls_x509_crt_t crt, const struct san *san)
{
	for (unsigned i = 0;; i++) {
		unsigned char buf[300];
		size_t size = sizeof(buf) - 1;
		int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, NULL);

		if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			return false;
		if (type < 0)
			continue;
		if (san->ip && type == GNUTLS_SAN_IPADDRESS && size == san->addrlen &&
		    memcmp(buf, san->addr, size) == 0)
			return true;
		if (!san->ip && type == GNUTLS_SAN_DNSNAME && size == strlen(san->name) &&
		    strncasecmp((char *)buf, san->name, size) == 0)
			return true;
	}
}

/* ------------------------------------------------------------------ files */

static int read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	int rc = secret_file_read(path, FILE_MAX, out, outlen);

	if (rc == -EFBIG)
		errmsg(err, errlen, "%s: larger than %u bytes", path, FILE_MAX);
	else if (rc)
		errmsg(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

/* Write path through path.tmp (O_EXCL, mode from the start), fsync, rename (invariant 2). */
static int write_file(const char *path, const void *data, size_t len, mode_t mode, char *err, size_t errlen)
{
	char tmp[4200];
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errmsg(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		rc = -errno;
		errmsg(err, errlen, "%s: %s", tmp, strerror(errno));
		return rc;
	}
	if (fchmod(fd, mode) || write(fd, data, len) != (ssize_t)len || fsync(fd))
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		errmsg(err, errlen, "%s: %s", path, strerror(-rc));
		(void)unlink(tmp);
	}
	return rc;
}

/* A key file may not be readable by others (strict: nor by its group). */
static int key_mode_ok(const char *path, bool strict, char *err, size_t errlen)
{
	struct stat sb;
	mode_t bad = strict ? 077 : 007;

	if (stat(path, &sb)) {
		int rc = -errno;
		errmsg(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (sb.st_mode & bad) {
		errmsg(err, errlen, "%s: a private key readable by %s (mode %03o); make it %s", path,
		    strict ? "others" : "everyone", (unsigned)(sb.st_mode & 0777), strict ? "0600" : "0600 or 0640");
		return -EPERM;
	}
	return 0;
}

/* ------------------------------------------------------------------ GnuTLS objects */

static int load_key(const char *path, bool strict, gnutls_x509_privkey_t *key, char *err, size_t errlen)
{
	gnutls_datum_t d;
	char *text = NULL;
	size_t len = 0;
	int rc, e;

	*key = NULL;
	if ((rc = key_mode_ok(path, strict, err, errlen)) || (rc = read_file(path, &text, &len, err, errlen)))
		return rc;
	d.data = (unsigned char *)text;
	d.size = (unsigned)len;
	if ((e = gnutls_x509_privkey_init(key)) < 0 ||
	    (e = gnutls_x509_privkey_import2(*key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		errmsg(err, errlen, "%s: not a PEM private key: %s", path, gnutls_strerror(e));
		gnutls_x509_privkey_deinit(*key);
		*key = NULL;
		rc = -EINVAL;
	}
	secret_free(text, len);
	return rc;
}

/* Every certificate of a PEM file (a chain), at least one. */
static int load_crts(const char *path, gnutls_x509_crt_t **list, unsigned *n, char *err, size_t errlen)
{
	gnutls_datum_t d;
	char *text = NULL;
	size_t len = 0;
	int rc, e;

	*list = NULL;
	*n = 0;
	if ((rc = read_file(path, &text, &len, err, errlen)))
		return rc;
	d.data = (unsigned char *)text;
	d.size = (unsigned)len;
	e = gnutls_x509_crt_list_import2(list, n, &d, GNUTLS_X509_FMT_PEM, 0);
	if (e < 0 || *n == 0) {
		errmsg(err, errlen, "%s: not a PEM certificate: %s", path, e < 0 ? gnutls_strerror(e) : "none found");
		*list = NULL;
		*n = 0;
		rc = -EINVAL;
	}
	free(text);
	return rc;
}

static void crts_free(gnutls_x509_crt_t *list, unsigned n)
{
	for (unsigned i = 0; list && i < n; i++)
		gnutls_x509_crt_deinit(list[i]);
	gnutls_free(list);
}

static bool key_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
	unsigned char a[64], b[64];
	size_t la = sizeof(a), lb = sizeof(b);

	return gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, a, &la) >= 0 &&
	       gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, b, &lb) >= 0 && la == lb &&
	       memcmp(a, b, la) == 0;
}

static int new_key(gnutls_x509_privkey_t *key)
{
	int e;

	if ((e = gnutls_x509_privkey_init(key)) < 0)
		return e;
	e = gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (e < 0) {
		gnutls_x509_privkey_deinit(*key);
		*key = NULL;
	}
	return e;
}

/* The parts both certificates share: version, serial, names, validity, key, SKI. */
static int make_ca_crt(gnutls_x509_privkey_t key, time_t now, gnutls_x509_crt_t *crt)
{
	int e;

	if ((e = gnutls_x509_crt_init(crt)) < 0)
		return e;
	if ((e = x509_crt_base(*crt, key, CA_NAME, now - BACKDATE, now + (time_t)PKI_CA_DAYS * DAY)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(*crt, 1, -1)) < 0 ||
	    (e = gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
							     GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (e = gnutls_x509_crt_sign2(*crt, *crt, key, GNUTLS_DIG_SHA256, 0)) < 0) {
		gnutls_x509_crt_deinit(*crt);
		*crt = NULL;
	}
	return e;
}

static int make_serving_crt(gnutls_x509_crt_t ca, gnutls_x509_privkey_t ca_key, gnutls_x509_privkey_t key,
			    const struct wanted *w, time_t now, gnutls_x509_crt_t *crt)
{
	time_t until = now + (time_t)PKI_SERVING_DAYS * DAY, ca_until = gnutls_x509_crt_get_expiration_time(ca);
	unsigned char aki[64];
	size_t akilen = sizeof(aki);
	int e;

	if (ca_until != (time_t)-1 && until > ca_until)
		until = ca_until;
	if ((e = gnutls_x509_crt_init(crt)) < 0)
		return e;
	if ((e = x509_crt_base(*crt, key, SERVING_NAME, now - BACKDATE, until)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(*crt, 0, -1)) < 0 ||
	    (e = gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (e = gnutls_x509_crt_set_key_purpose_oid(*crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
	    (e = gnutls_x509_crt_get_subject_key_id(ca, aki, &akilen, NULL)) < 0 ||
	    (e = gnutls_x509_crt_set_authority_key_id(*crt, aki, akilen)) < 0)
		goto fail;
	for (size_t i = 0; i < w->n; i++) {
		const struct san *s = &w->sans[i];

		e = s->ip ? gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_IPADDRESS, s->addr,
								 (unsigned)s->addrlen, GNUTLS_FSAN_APPEND)
			  : gnutls_x509_crt_set_subject_alt_name(*crt, GNUTLS_SAN_DNSNAME, s->name,
								 (unsigned)strlen(s->name), GNUTLS_FSAN_APPEND);
		if (e < 0)
			goto fail;
	}
	if ((e = gnutls_x509_crt_sign2(*crt, ca, ca_key, GNUTLS_DIG_SHA256, 0)) < 0)
		goto fail;
	return 0;
fail:
	gnutls_x509_crt_deinit(*crt);
	*crt = NULL;
	return e;
}

static void fingerprint(gnutls_x509_crt_t crt, char *buf, size_t len)
{
	unsigned char fp[32];
	size_t n = sizeof(fp), o = 0;

	buf[0] = 0;
	if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, fp, &n) < 0)
		return;
	for (size_t i = 0; i < n && o + 4 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%02X", i ? ":" : "", fp[i]);
}

/* ------------------------------------------------------------------ steps */

struct paths {
	char dir[4096], ca_key[4200], ca_crt[4200], key[4200], crt[4200];
};

/* DIR/pki/ca.{key,crt} (pki.h, 1.). */
static int load_or_make_ca(const struct paths *pp, time_t now, gnutls_x509_crt_t *ca, gnutls_x509_privkey_t *ca_key,
			   struct pki *p, char *err, size_t errlen)
{
	bool have_key = access(pp->ca_key, F_OK) == 0, have_crt = access(pp->ca_crt, F_OK) == 0;
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	char *pem = NULL, *kpem = NULL, when[32], fp[128];
	size_t len = 0, klen = 0;
	const char *what = "kept";
	int rc = 0, e;

	*ca = NULL;
	*ca_key = NULL;
	if (have_crt && !have_key) {
		errmsg(err, errlen,
		    "%s is missing, so nothing can be signed by %s; restore it, or remove %s to make a new CA "
		    "(every kubeconfig that trusts the old one must then be replaced)",
		    pp->ca_key, pp->ca_crt, pp->ca_crt);
		return -ENOENT;
	}
	if (have_key) {
		if ((rc = load_key(pp->ca_key, true, ca_key, err, errlen)))
			goto out;
	} else {
		if ((e = new_key(ca_key)) < 0 || (e = x509_key_pem(*ca_key, &kpem, &klen)) < 0) {
			errmsg(err, errlen, "%s: cannot make a key: %s", pp->ca_key, gnutls_strerror(e));
			rc = -EIO;
			goto out;
		}
		if ((rc = write_file(pp->ca_key, kpem, klen, 0600, err, errlen)))
			goto out;
		what = "made";
	}
	if (have_crt) {
		if ((rc = load_crts(pp->ca_crt, &list, &n, err, errlen)))
			goto out;
		*ca = list[0];
		list[0] = NULL;
		if (!key_matches(*ca, *ca_key)) {
			errmsg(err, errlen, "%s does not match %s (another CA's key?)", pp->ca_key, pp->ca_crt);
			rc = -EINVAL;
			goto out;
		}
	} else {
		if ((e = make_ca_crt(*ca_key, now, ca)) < 0) {
			errmsg(err, errlen, "%s: cannot make the CA certificate: %s", pp->ca_crt, gnutls_strerror(e));
			rc = -EIO;
			goto out;
		}
		if ((e = x509_crt_pem(*ca, &pem, &len)) < 0) {
			errmsg(err, errlen, "%s: %s", pp->ca_crt, gnutls_strerror(e));
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = write_file(pp->ca_crt, pem, len, 0644, err, errlen)))
			goto out;
		if (have_key)
			what = "made again from its key";
		/* use the certificate as written: GnuTLS verifies against a
		 * freshly signed object differently than against a parsed one */
		gnutls_x509_crt_deinit(*ca);
		*ca = NULL;
		if ((rc = load_crts(pp->ca_crt, &list, &n, err, errlen)))
			goto out;
		*ca = list[0];
		list[0] = NULL;
	}
	if (gnutls_x509_crt_get_expiration_time(*ca) <= now) {
		errmsg(err, errlen, "%s expired on %s; a new CA means new kubeconfigs for every client: move %s away "
				 "to make one",
		    pp->ca_crt, date(gnutls_x509_crt_get_expiration_time(*ca), when), pp->dir);
		rc = -EKEYEXPIRED;
		goto out;
	}
	fingerprint(*ca, fp, sizeof(fp));
	report(p, "CA %s: %s (valid until %s; SHA-256 fingerprint %s)", pp->ca_crt, what,
	       date(gnutls_x509_crt_get_expiration_time(*ca), when), fp);
out:
	crts_free(list, n);
	free(pem);
	secret_free(kpem, klen);
	if (rc) {
		gnutls_x509_crt_deinit(*ca);
		gnutls_x509_privkey_deinit(*ca_key);
		*ca = NULL;
		*ca_key = NULL;
	}
	return rc;
}

/* Why the serving pair on disk cannot be kept, in words; NULL when it can. */
static const char *serving_problem(const struct paths *pp, gnutls_x509_crt_t ca, const struct wanted *w, time_t now,
				   char *why, size_t len)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0, status = 0;
	char err[300], when[32];
	time_t until;
	bool ok = false;

	if (access(pp->crt, F_OK) || access(pp->key, F_OK)) {
		snprintf(why, len, "%s", "none yet");
		return why;
	}
	if (load_crts(pp->crt, &list, &n, err, sizeof(err)) || load_key(pp->key, true, &key, err, sizeof(err))) {
		snprintf(why, len, "%s", err);
		goto out;
	}
	until = gnutls_x509_crt_get_expiration_time(list[0]);
	if (!key_matches(list[0], key)) {
		snprintf(why, len, "%s", "apiserver.key does not match it");
	} else if (gnutls_x509_crt_verify(list[0], &ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status) < 0 || status) {
		snprintf(why, len, "%s", "it is not signed by the CA");
	} else if (until - now < (time_t)PKI_RENEW_DAYS * DAY) {
		snprintf(why, len, "it expire%s on %s (renewed %d days ahead)", until > now ? "s" : "d",
			 date(until, when), PKI_RENEW_DAYS);
	} else {
		ok = true;
		for (size_t i = 0; i < w->n && ok; i++)
			if (!crt_has_san(list[0], &w->sans[i])) {
				snprintf(why, len, "it does not name %s:%s", w->sans[i].ip ? "IP" : "DNS",
					 w->sans[i].name);
				ok = false;
			}
	}
out:
	crts_free(list, n);
	gnutls_x509_privkey_deinit(key);
	return ok ? NULL : why;
}

/* DIR/pki/apiserver.{key,crt} (pki.h, 2.), into p->cert_pem and p->key_pem. */
static int load_or_make_serving(const struct paths *pp, gnutls_x509_crt_t ca, gnutls_x509_privkey_t ca_key,
				const struct wanted *w, time_t now, struct pki *p, char *err, size_t errlen)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	char why[400], names[1024], when[32];
	const char *problem = serving_problem(pp, ca, w, now, why, sizeof(why));
	int rc, e;

	sans_text(w, names, sizeof(names));
	if (!problem) {
		gnutls_x509_crt_t *list = NULL;
		unsigned n = 0;

		if ((rc = read_file(pp->crt, &p->cert_pem, &p->cert_len, err, errlen)) ||
		    (rc = key_mode_ok(pp->key, true, err, errlen)) ||
		    (rc = read_file(pp->key, &p->key_pem, &p->key_len, err, errlen)))
			return rc;
		if (load_crts(pp->crt, &list, &n, err, errlen) == 0) {
			report(p, "serving certificate %s: kept (%s; valid until %s)", pp->crt, names,
			       date(gnutls_x509_crt_get_expiration_time(list[0]), when));
			crts_free(list, n);
		}
		return 0;
	}
	if ((e = new_key(&key)) < 0 || (e = make_serving_crt(ca, ca_key, key, w, now, &crt)) < 0 ||
	    (e = x509_key_pem(key, &p->key_pem, &p->key_len)) < 0 || (e = x509_crt_pem(crt, &p->cert_pem, &p->cert_len)) < 0) {
		errmsg(err, errlen, "%s: cannot make the serving certificate: %s", pp->crt, gnutls_strerror(e));
		rc = -EIO;
		goto out;
	}
	/* key first, then the certificate (invariant 3) */
	if ((rc = write_file(pp->key, p->key_pem, p->key_len, 0600, err, errlen)) ||
	    (rc = write_file(pp->crt, p->cert_pem, p->cert_len, 0644, err, errlen)))
		goto out;
	if (strcmp(problem, "none yet") == 0)
		report(p, "serving certificate %s: made for %s (valid until %s)", pp->crt, names,
		       date(gnutls_x509_crt_get_expiration_time(crt), when));
	else
		report(p, "serving certificate %s: made again, because %s; now for %s (valid until %s)", pp->crt,
		       problem, names, date(gnutls_x509_crt_get_expiration_time(crt), when));
out:
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

/* DIR/pki/flows-relay.{key,crt}: a client certificate for TLS clients,
 * CommonName PKI_RELAY_NAME, signed by the CA, valid as the serving one;
 * made anew at every start (no file to keep in step with the CA). */
static int make_relay(const struct paths *pp, gnutls_x509_crt_t ca, gnutls_x509_privkey_t ca_key, time_t now,
		      struct pki *p, char *err, size_t errlen)
{
	time_t until = now + (time_t)PKI_SERVING_DAYS * DAY, ca_until = gnutls_x509_crt_get_expiration_time(ca);
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	char *kpem = NULL, *cpem = NULL, key_path[4200], crt_path[4200];
	unsigned char aki[64];
	size_t akilen = sizeof(aki), klen = 0, clen = 0;
	int rc = 0, e;

	if (ca_until != (time_t)-1 && until > ca_until)
		until = ca_until;
	snprintf(key_path, sizeof(key_path), "%s/flows-relay.key", pp->dir);
	snprintf(crt_path, sizeof(crt_path), "%s/flows-relay.crt", pp->dir);
	if ((e = new_key(&key)) < 0 || (e = gnutls_x509_crt_init(&crt)) < 0 ||
	    (e = x509_crt_base(crt, key, PKI_RELAY_NAME, now - BACKDATE, until)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (e = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (e = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0)) < 0 ||
	    (e = gnutls_x509_crt_get_subject_key_id(ca, aki, &akilen, NULL)) < 0 ||
	    (e = gnutls_x509_crt_set_authority_key_id(crt, aki, akilen)) < 0 ||
	    (e = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (e = x509_key_pem(key, &kpem, &klen)) < 0 || (e = x509_crt_pem(crt, &cpem, &clen)) < 0) {
		errmsg(err, errlen, "%s: cannot make the flows relay's certificate: %s", crt_path, gnutls_strerror(e));
		rc = -EIO;
		goto out;
	}
	if ((rc = write_file(key_path, kpem, klen, 0600, err, errlen)) ||
	    (rc = write_file(crt_path, cpem, clen, 0644, err, errlen)))
		goto out;
	snprintf(p->relay_key, sizeof(p->relay_key), "%s", key_path);
	snprintf(p->relay_cert, sizeof(p->relay_cert), "%s", crt_path);
	report(p, "flows relay certificate %s: made (CN %s, for TLS clients)", crt_path, PKI_RELAY_NAME);
out:
	secret_free(kpem, klen);
	free(cpem);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

/* --tls-cert-file and --tls-key-file (pki.h, 3.). */
static int bring_your_own(const struct pki_config *cfg, time_t now, struct pki *p, char *err, size_t errlen)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	char when[32], fp[128];
	time_t until;
	int rc, e;

	if ((rc = load_crts(cfg->cert_file, &list, &n, err, errlen)) ||
	    (rc = load_key(cfg->key_file, false, &key, err, errlen)))
		goto out;
	if (!key_matches(list[0], key)) {
		errmsg(err, errlen, "--tls-key-file %s does not match the certificate of --tls-cert-file %s", cfg->key_file,
		    cfg->cert_file);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = read_file(cfg->cert_file, &p->cert_pem, &p->cert_len, err, errlen)) ||
	    (rc = read_file(cfg->key_file, &p->key_pem, &p->key_len, err, errlen)))
		goto out;
	free(p->ca_pem);
	p->ca_pem = NULL;
	if ((e = x509_crt_pem(list[n - 1], &p->ca_pem, &p->ca_len)) < 0) {
		errmsg(err, errlen, "%s: %s", cfg->cert_file, gnutls_strerror(e));
		rc = -ENOMEM;
		goto out;
	}
	until = gnutls_x509_crt_get_expiration_time(list[0]);
	fingerprint(list[n - 1], fp, sizeof(fp));
	report(p, "serving certificate %s (--tls-cert-file, %u certificate%s) with key %s: valid until %s%s; "
		  "clients trust its last certificate (SHA-256 fingerprint %s)",
	       cfg->cert_file, n, n == 1 ? "" : "s", cfg->key_file, date(until, when),
	       until <= now ? " -- EXPIRED: clients will refuse it" : "", fp);
out:
	crts_free(list, n);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

int pki_load_or_create(const struct pki_config *cfg, struct pki *p, char *err, size_t errlen)
{
	time_t now = cfg->now ? cfg->now : time(NULL);
	gnutls_x509_crt_t ca = NULL;
	gnutls_x509_privkey_t ca_key = NULL;
	struct wanted *w = NULL;
	struct paths pp;
	int rc, e;

	memset(p, 0, sizeof(*p));
	if (!!cfg->cert_file != !!cfg->key_file) {
		errmsg(err, errlen, "%s", "--tls-cert-file and --tls-key-file go together");
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errmsg(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (cfg->listen_host && strcmp(cfg->listen_host, "0.0.0.0") != 0 &&
	    (rc = want(w, cfg->listen_host, err, errlen)))
		goto out;
	if ((rc = want(w, "127.0.0.1", err, errlen)) || (rc = want(w, "localhost", err, errlen)))
		goto out;
	for (size_t i = 0; i < cfg->nsans; i++)
		if ((rc = want(w, cfg->sans[i], err, errlen)))
			goto out;
	snprintf(pp.dir, sizeof(pp.dir), "%s/pki", cfg->dir);
	snprintf(pp.ca_key, sizeof(pp.ca_key), "%s/ca.key", pp.dir);
	snprintf(pp.ca_crt, sizeof(pp.ca_crt), "%s/ca.crt", pp.dir);
	snprintf(pp.key, sizeof(pp.key), "%s/apiserver.key", pp.dir);
	snprintf(pp.crt, sizeof(pp.crt), "%s/apiserver.crt", pp.dir);
	if (mkdir(pp.dir, 0700) && errno != EEXIST) {
		rc = -errno;
		errmsg(err, errlen, "%s: %s", pp.dir, strerror(errno));
		goto out;
	}
	if ((rc = load_or_make_ca(&pp, now, &ca, &ca_key, p, err, errlen)))
		goto out;
	if ((e = x509_crt_pem(ca, &p->ca_pem, &p->ca_len)) < 0) {
		errmsg(err, errlen, "%s: %s", pp.ca_crt, gnutls_strerror(e));
		rc = -ENOMEM;
		goto out;
	}
	if (cfg->cert_file)
		rc = bring_your_own(cfg, now, p, err, errlen);
	else
		rc = load_or_make_serving(&pp, ca, ca_key, w, now, p, err, errlen);
	if (!rc)
		rc = make_relay(&pp, ca, ca_key, now, p, err, errlen);
out:
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_privkey_deinit(ca_key);
	free(w);
	if (rc)
		pki_free(p);
	return rc;
}

void pki_free(struct pki *p)
{
	if (!p)
		return;
	free(p->ca_pem);
	free(p->cert_pem);
	secret_free(p->key_pem, p->key_len);
	memset(p, 0, sizeof(*p));
}
