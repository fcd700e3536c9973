/*
 * pki.h — the controller's TLS material: the cluster CA and the API's
 * serving certificate, made at first start as kubeadm makes them, or the
 * certificate and key a user brings.
 *
 *   DIR/pki/ca.key          the CA's private key (0600)
 *   DIR/pki/ca.crt          the CA certificate clients trust (0644)
 *   DIR/pki/apiserver.key   the serving key (0600)
 *   DIR/pki/apiserver.crt   the serving certificate, signed by the CA (0644)
 *   DIR/pki/flows-relay.key the flows relay's client key (0600) ...
 *   DIR/pki/flows-relay.crt ... and certificate, signed by the CA: the
 *                           controller reads the agents' flows with it
 *                           (flows_relay.h); made anew at every start
 *
 * Keys are ECDSA P-256, signatures SHA-256.  The CA is valid 10 years,
 * CA:TRUE (critical), keyCertSign + cRLSign + digitalSignature; the serving
 * certificate 1 year (never past the CA), CA:FALSE, digitalSignature,
 * extKeyUsage serverAuth, subject alternative names (what TLS clients
 * check; Go ignores the CN); both carry subject and authority key IDs.
 *
 * At every start:
 *   1. The CA is kept.  It is never replaced on its own: every kubeconfig
 *      trusts it.  Both files missing: a new CA.  Only ca.key: ca.crt is
 *      made again from it (same key and name, so clients that trust the
 *      old certificate still verify).  Only ca.crt, an unreadable file, a
 *      key that does not match, an expired CA or a key file readable by
 *      others: an error naming the file.
 *   2. The serving certificate is kept if it names every address wanted
 *      (the --listen IP unless 0.0.0.0, 127.0.0.1, localhost, each
 *      --tls-san), is signed by the CA, matches its key and has 30 days or
 *      more to run; otherwise a new key and certificate are made and the
 *      report says why.
 *   3. With cert_file and key_file (bring your own) nothing is made for
 *      serving: the files are read, the key must match the first
 *      certificate, and clients are told to trust the file's last
 *      certificate (its issuer's, when the chain ends with it; the
 *      certificate itself when it is self-signed).  The CA of 1. is still
 *      made or kept.
 * Files are written to a temporary name and renamed, keys with O_EXCL and
 * mode 0600 from the start.  Nothing here logs; p->report says what
 * happened, without key material.
 *
 * Ownership: pki_load_or_create fills a caller-owned struct pki with
 * malloc'd PEM text; pki_free wipes the key and frees everything (it
 * accepts a zeroed struct).  cfg and its strings are borrowed.
 */
#ifndef WEFT_PKI_H
#define WEFT_PKI_H

#include <stddef.h>
#include <time.h>

#define PKI_CA_DAYS 3650
#define PKI_SERVING_DAYS 365
#define PKI_RENEW_DAYS 30	/* a serving certificate with fewer left is made again */
#define PKI_RELAY_NAME "weft-flows-relay"	/* the relay's CommonName (the agents' FLOWSERVE_CLIENT_CN) */
#define PKI_MAX_SANS 64

struct pki_config {
	const char *dir;		/* the data dir; files go under DIR/pki */
	const char *listen_host;	/* IPv4 address of --listen; "0.0.0.0" gives no SAN */
	const char *const *sans;	/* --tls-san: DNS names or IP addresses */
	size_t nsans;
	const char *cert_file;		/* --tls-cert-file: serve this chain (with key_file) */
	const char *key_file;		/* --tls-key-file */
	time_t now;			/* 0: time(NULL) (tests set it) */
};

struct pki {
	char *ca_pem;			/* what clients trust (kubeconfig certificate-authority-data) */
	size_t ca_len;
	char *cert_pem;			/* what is served: the certificate, then its chain */
	size_t cert_len;
	char *key_pem;			/* its key, PEM; wiped by pki_free */
	size_t key_len;
	char report[2048];		/* lines for the log: what was made, kept or renewed, and why */
	char relay_cert[4200];		/* DIR/pki/flows-relay.crt, or "" when none was made */
	char relay_key[4200];
};

/* 0, or -EINVAL (a bad --tls-san, a file that is not what it must be),
 * -EPERM (a key readable by others), -errno of a file, -ENOMEM; err names
 * the file or flag. */
int pki_load_or_create(const struct pki_config *cfg, struct pki *p, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void pki_free(struct pki *p);

/* Is s a --tls-san we take: an IPv4 or IPv6 address, or a DNS name
 * (labels of a-z 0-9 -, any case)? */
int pki_san_check(const char *s, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
