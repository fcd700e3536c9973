/*
 * pki_test.c — the CA and the serving certificate pki.c makes, field by
 * field as TLS clients check them (Go's crypto/x509 among them: SANs,
 * key usages, CA:TRUE critical, key IDs), and what each later start keeps
 * or makes again; refusals name the file.
 */
#include "controller/pki.h"
#include "test.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const extra_sans[] = { "api.weft.example", "10.9.8.7" };

static struct pki_config config(const char *dir, const char *listen)
{
	return (struct pki_config){ .dir = dir, .listen_host = listen, .sans = extra_sans, .nsans = 2 };
}

static char *subdir(const char *name)
{
	static char path[8][512];
	static int next;
	char *p = path[next++ % 8];

	snprintf(p, 512, "%s/%s", test_tmpdir(), name);
	mkdir(p, 0700);
	return p;
}

static char *slurp(const char *dir, const char *file)
{
	char path[1024], *buf = NULL;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/pki/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	buf = calloc(1, 1 << 16);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static unsigned mode_of(const char *dir, const char *file)
{
	char path[1024];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/pki%s%s", dir, *file ? "/" : "", file);
	return stat(path, &sb) ? 0 : (unsigned)(sb.st_mode & 0777);
}

static gnutls_x509_crt_t crt_of(const char *pem)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t d = { (unsigned char *)pem, (unsigned)strlen(pem) };

	gnutls_x509_crt_init(&crt);
	if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) < 0) {
		gnutls_x509_crt_deinit(crt);
		return NULL;
	}
	return crt;
}

static bool has_ip(gnutls_x509_crt_t crt, const unsigned char *ip, size_t len)
{
	return gnutls_x509_crt_check_ip(crt, ip, (unsigned)len, 0) != 0;
}

static bool has_dns(gnutls_x509_crt_t crt, const char *name)
{
	for (unsigned i = 0;; i++) {
		char buf[300];
		size_t size = sizeof(buf);
		int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, NULL);

		if (type < 0)
			return false;
		if (type == GNUTLS_SAN_DNSNAME && size == strlen(name) && memcmp(buf, name, size) == 0)
			return true;
	}
}

TEST(pki_first_start_makes_ca_and_serving_certificate)
{
	const char *dir = subdir("first");
	struct pki_config cfg = config(dir, "192.168.200.2");
	struct pki p;
	char err[1024] = "", *ca_file;
	gnutls_x509_crt_t ca = NULL, srv = NULL;
	unsigned int crit = 0, usage = 0, status = 99, ca_flag = 0;
	int pathlen = 0;
	unsigned char ski[64], aki[64], oid[128];
	size_t skilen = sizeof(ski), akilen = sizeof(aki), oidlen = sizeof(oid);
	static const unsigned char listen_ip[4] = { 192, 168, 200, 2 }, lo[4] = { 127, 0, 0, 1 },
				   extra_ip[4] = { 10, 9, 8, 7 };
	time_t now = time(NULL);

	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "/pki/ca.crt: made");
	CHECK_CONTAINS(p.report, "serving certificate");
	CHECK_CONTAINS(p.report, "made for IP:192.168.200.2, IP:127.0.0.1, DNS:localhost, DNS:api.weft.example, IP:10.9.8.7");
	CHECK(!strstr(p.report, "PRIVATE"));
	CHECK_EQ(mode_of(dir, ""), 0700);
	CHECK_EQ(mode_of(dir, "ca.key"), 0600);
	CHECK_EQ(mode_of(dir, "apiserver.key"), 0600);
	CHECK_EQ(mode_of(dir, "ca.crt"), 0644);
	CHECK_EQ(mode_of(dir, "apiserver.crt"), 0644);
	ca_file = slurp(dir, "ca.crt");
	CHECK(ca_file && strcmp(ca_file, p.ca_pem) == 0);
	free(ca_file);
	CHECK_CONTAINS(p.key_pem, "-----BEGIN PRIVATE KEY-----");
	ca = crt_of(p.ca_pem);
	srv = crt_of(p.cert_pem);
	CHECK(ca && srv);

	/* the CA */
	CHECK_EQ(gnutls_x509_crt_get_version(ca), 3);
	CHECK(gnutls_x509_crt_get_basic_constraints(ca, &crit, &ca_flag, &pathlen) >= 0);
	CHECK(ca_flag == 1 && crit == 1);
	CHECK(gnutls_x509_crt_get_key_usage(ca, &usage, &crit) >= 0);
	CHECK(crit && (usage & GNUTLS_KEY_KEY_CERT_SIGN) && (usage & GNUTLS_KEY_CRL_SIGN));
	CHECK(gnutls_x509_crt_get_subject_key_id(ca, ski, &skilen, NULL) >= 0);
	CHECK(gnutls_x509_crt_get_pk_algorithm(ca, NULL) == GNUTLS_PK_ECDSA);
	CHECK(gnutls_x509_crt_get_expiration_time(ca) - now > (time_t)(PKI_CA_DAYS - 1) * 86400);
	CHECK(gnutls_x509_crt_get_expiration_time(ca) - now <= (time_t)PKI_CA_DAYS * 86400);
	CHECK(gnutls_x509_crt_get_activation_time(ca) <= now);

	/* the serving certificate */
	CHECK(gnutls_x509_crt_verify(srv, &ca, 1, 0, &status) >= 0 && status == 0);
	CHECK_EQ(gnutls_x509_crt_get_version(srv), 3);
	CHECK(gnutls_x509_crt_get_basic_constraints(srv, &crit, &ca_flag, &pathlen) >= 0 && ca_flag == 0);
	CHECK(gnutls_x509_crt_get_key_usage(srv, &usage, &crit) >= 0);
	CHECK(usage == GNUTLS_KEY_DIGITAL_SIGNATURE);
	CHECK(gnutls_x509_crt_get_key_purpose_oid(srv, 0, oid, &oidlen, NULL) >= 0);
	CHECK_STR((char *)oid, GNUTLS_KP_TLS_WWW_SERVER);
	CHECK(gnutls_x509_crt_get_authority_key_id(srv, aki, &akilen, NULL) >= 0);
	CHECK(akilen == skilen && memcmp(aki, ski, skilen) == 0);
	CHECK(has_ip(srv, listen_ip, 4) && has_ip(srv, lo, 4) && has_ip(srv, extra_ip, 4));
	CHECK(has_dns(srv, "localhost") && has_dns(srv, "api.weft.example"));
	CHECK(gnutls_x509_crt_get_expiration_time(srv) - now > (time_t)(PKI_SERVING_DAYS - 1) * 86400);
	CHECK(gnutls_x509_crt_get_expiration_time(srv) - now <= (time_t)PKI_SERVING_DAYS * 86400);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(srv);
	pki_free(&p);
	CHECK(p.key_pem == NULL);
}

TEST(pki_later_starts_keep_or_renew)
{
	const char *dir = subdir("later");
	struct pki_config cfg = config(dir, "127.0.0.1");
	struct pki first, p;
	char err[1024] = "";

	CHECK(pki_load_or_create(&cfg, &first, err, sizeof(err)) == 0);
	/* same flags: everything kept, byte for byte */
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "ca.crt: kept");
	CHECK_CONTAINS(p.report, "apiserver.crt: kept");
	CHECK_STR(p.ca_pem, first.ca_pem);
	CHECK_STR(p.cert_pem, first.cert_pem);
	CHECK_STR(p.key_pem, first.key_pem);
	pki_free(&p);
	/* another listen address: a new serving certificate, the same CA */
	cfg.listen_host = "10.0.0.7";
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "made again, because it does not name IP:10.0.0.7");
	CHECK_STR(p.ca_pem, first.ca_pem);
	CHECK(strcmp(p.cert_pem, first.cert_pem) != 0);
	pki_free(&p);
	/* 340 days on: fewer than 30 left, renewed */
	cfg.now = time(NULL) + 340 * 86400;
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "made again, because it expires on");
	CHECK_STR(p.ca_pem, first.ca_pem);
	pki_free(&p);
	pki_free(&first);
}

TEST(pki_ca_certificate_made_again_from_its_key)
{
	const char *dir = subdir("cakey");
	struct pki_config cfg = config(dir, "127.0.0.1");
	struct pki first, p;
	char err[1024] = "", path[1024];
	gnutls_x509_crt_t a, b;
	unsigned char ida[64], idb[64];
	size_t la = sizeof(ida), lb = sizeof(idb);

	CHECK(pki_load_or_create(&cfg, &first, err, sizeof(err)) == 0);
	snprintf(path, sizeof(path), "%s/pki/ca.crt", dir);
	CHECK(unlink(path) == 0);
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "ca.crt: made again from its key");
	CHECK_CONTAINS(p.report, "apiserver.crt: kept");	/* same key and name: still signed by it */
	a = crt_of(first.ca_pem);
	b = crt_of(p.ca_pem);
	CHECK(a && b);
	CHECK(gnutls_x509_crt_get_key_id(a, 0, ida, &la) >= 0 && gnutls_x509_crt_get_key_id(b, 0, idb, &lb) >= 0);
	CHECK(la == lb && memcmp(ida, idb, la) == 0);
	gnutls_x509_crt_deinit(a);
	gnutls_x509_crt_deinit(b);
	pki_free(&p);
	pki_free(&first);
}

TEST(pki_refusals_name_the_file)
{
	const char *dir = subdir("refuse");
	struct pki_config cfg = config(dir, "127.0.0.1");
	struct pki p;
	char err[1024] = "", path[1024];

	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	pki_free(&p);
	snprintf(path, sizeof(path), "%s/pki/ca.key", dir);
	CHECK(chmod(path, 0640) == 0);
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == -EPERM);
	CHECK_CONTAINS(err, path);
	CHECK_CONTAINS(err, "readable by others (mode 640)");
	CHECK(chmod(path, 0600) == 0);
	CHECK(rename(path, "/dev/null/x") != 0);
	{
		char moved[1100];
		snprintf(moved, sizeof(moved), "%s.moved", path);
		CHECK(rename(path, moved) == 0);
		CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == -ENOENT);
		CHECK_CONTAINS(err, "ca.key is missing");
		CHECK(rename(moved, path) == 0);
	}
	{
		const char *bad[] = { "", "-x.example", "a..b", "under_score", "x y", "a.-b" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct pki_config c = cfg;
			c.sans = &bad[i];
			c.nsans = 1;
			if (pki_load_or_create(&c, &p, err, sizeof(err)) != -EINVAL || !strstr(err, "--tls-san")) {
				test_fail(__FILE__, __LINE__, "--tls-san '%s' accepted (%s)", bad[i], err);
				return;
			}
		}
		CHECK(pki_san_check("fe80::1", err, sizeof(err)) == 0);
		CHECK(pki_san_check("Node-1.Example", err, sizeof(err)) == 0);
		CHECK(pki_san_check("300.1.1.1", err, sizeof(err)) == -EINVAL);
	}
	/* a damaged serving certificate is made again (it is derived material) */
	snprintf(path, sizeof(path), "%s/pki/apiserver.crt", dir);
	{
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		fputs("garbage\n", f);
		fclose(f);
	}
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_CONTAINS(p.report, "made again, because");
	CHECK_CONTAINS(p.report, "not a PEM certificate");
	pki_free(&p);
}

TEST(pki_bring_your_own)
{
	const char *a = subdir("byo-a"), *b = subdir("byo-b"), *dir = subdir("byo");
	struct pki_config ca = config(a, "127.0.0.1"), cb = config(b, "127.0.0.1"), cfg = config(dir, "127.0.0.1");
	struct pki pa, pb, p;
	char err[1024] = "", crt[600], key[600], other_key[600];

	CHECK(pki_load_or_create(&ca, &pa, err, sizeof(err)) == 0);
	CHECK(pki_load_or_create(&cb, &pb, err, sizeof(err)) == 0);
	snprintf(crt, sizeof(crt), "%s/pki/apiserver.crt", a);
	snprintf(key, sizeof(key), "%s/pki/apiserver.key", a);
	snprintf(other_key, sizeof(other_key), "%s/pki/apiserver.key", b);
	cfg.cert_file = crt;
	cfg.key_file = key;
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == 0);
	CHECK_STR(p.cert_pem, pa.cert_pem);
	CHECK_STR(p.key_pem, pa.key_pem);
	CHECK_STR(p.ca_pem, pa.cert_pem);	/* one certificate: clients trust it */
	CHECK_CONTAINS(p.report, "--tls-cert-file");
	CHECK_EQ(mode_of(dir, "ca.key"), 0600);	/* the cluster CA exists all the same */
	CHECK_EQ(mode_of(dir, "apiserver.key"), 0);	/* nothing made for serving */
	pki_free(&p);
	cfg.key_file = other_key;
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "does not match the certificate of --tls-cert-file");
	cfg.key_file = NULL;
	CHECK(pki_load_or_create(&cfg, &p, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "go together");
	pki_free(&pa);
	pki_free(&pb);
}
