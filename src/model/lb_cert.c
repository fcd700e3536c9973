/*
 * lb_cert.c — a TLS key and certificate object (SSLKeyAndCertificate) from
 * where Kubernetes keeps them: an Ingress's Secret (data "tls.crt" and
 * "tls.key", base64, or stringData in the clear) or a Route's spec.tls
 * (certificate, key, and caCertificate appended to the chain).
 *
 * A Secret that is missing is "SecretNotFound"; one without both PEM
 * blocks, or whose key does not belong to its certificate (cfg->check_pair),
 * is "SecretInvalid"; a Route edge or reencrypt without a certificate and
 * key is "CertificateMissing".  The key's text is wiped before it is freed.
 */
#include "model/lb_priv.h"
#include "model/model.h"
#include "lib/base64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEM_MAX (1 << 20)

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* The value of key in a Secret, as a new NUL-terminated string. */
static char *secret_value(const json_t *secret, const char *key)
{
	const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
	const char *plain = json_string_value(json_object_get(json_object_get(secret, "stringData"), key));
	unsigned char *raw = NULL;
	size_t n = 0;

	if (plain)
		return strndup(plain, PEM_MAX);
	if (!b64 || base64_decode(b64, strlen(b64), &raw, &n) || n > PEM_MAX ||
	    memchr(raw, '\0', n)) {
		if (raw)
			explicit_bzero(raw, n);
		free(raw);
		return NULL;
	}
	return (char *)raw;	/* base64_decode NUL-terminates */
}

static bool has_pem(const char *text, const char *what)
{
	char begin[64];

	snprintf(begin, sizeof(begin), "-----BEGIN %s", what);
	return text && strstr(text, begin) && strstr(text, "-----END ");
}

static json_t *cert_object(const char *name, const char *cert, const char *key, const char *kind,
			   const char *ns, const char *src)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:s, s:s}}}",
			 "apiVersion", LB_API_VERSION, "kind", "SSLKeyAndCertificate",
			 "metadata", "name", name,
			 "spec", "certificate", cert, "key", key,
			 "source", "kind", kind, "namespace", ns, "name", src);
}

static json_t *checked(const struct lb_config *cfg, const char *name, const char *cert,
		       const char *key, const char *kind, const char *ns, const char *src,
		       const char **reason, char *msg, size_t msglen)
{
	char why[256] = "";

	if (!has_pem(cert, "CERTIFICATE") || !has_pem(key, "") || !strstr(key, "PRIVATE KEY")) {
		*reason = "SecretInvalid";
		snprintf(msg, msglen, "%s %s/%s: needs a PEM certificate and a PEM private key",
			 kind, ns, src);
		return NULL;
	}
	if (cfg->check_pair && cfg->check_pair(cert, key, why, sizeof(why))) {
		*reason = "SecretInvalid";
		snprintf(msg, msglen, "%s %s/%s: %s", kind, ns, src, why);
		return NULL;
	}
	return cert_object(name, cert, key, kind, ns, src);
}

json_t *lb_cert_object(const struct lb_config *cfg, const struct lb_inputs *in, const char *name,
		       const char *ns, const char *secret, const json_t *route,
		       const char **reason, char *msg, size_t msglen)
{
	char key_of[512], *cert = NULL, *key = NULL;
	const json_t *s;
	json_t *out = NULL;

	if (route) {
		const char *c = obj_str(route, "spec.tls.certificate");
		const char *k = obj_str(route, "spec.tls.key");
		const char *ca = obj_str(route, "spec.tls.caCertificate");

		if (!c || !*c || !k || !*k) {
			*reason = "CertificateMissing";
			snprintf(msg, msglen, "route %s/%s: spec.tls needs a certificate and a key",
				 ns, obj_name(route));
			return NULL;
		}
		if (asprintf(&cert, "%s%s%s", c, ca && *ca && c[strlen(c) - 1] != '\n' ? "\n" : "",
			     ca ? ca : "") < 0)
			return NULL;
		out = checked(cfg, name, cert, k, "Route", ns, obj_name(route), reason, msg, msglen);
		free(cert);
		return out;
	}
	snprintf(key_of, sizeof(key_of), "%s/%s", ns, secret);
	s = json_object_get(in->secrets, key_of);
	if (!s) {
		*reason = "SecretNotFound";
		snprintf(msg, msglen, "secret %s not found", key_of);
		return NULL;
	}
	cert = secret_value(s, "tls.crt");
	key = secret_value(s, "tls.key");
	out = checked(cfg, name, cert, key, "Secret", ns, secret, reason, msg, msglen);
	free(cert);
	wipe_free(key);
	return out;
}
