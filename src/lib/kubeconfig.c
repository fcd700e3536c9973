/*
 * kubeconfig.c — kubectl's configuration file, read and written (see
 * kubeconfig.h).
 *
 * Reading:
 *
 *   file ──read (bounded)──► text ──yaml_decode_stream──► one JSON object
 *     ──current-context──► contexts[name] ──.context.cluster──► clusters[name]
 *                                          ──.context.user─────► users[name]
 *
 * then every string of the tree and the text are wiped and freed; only
 * the fields of struct kubeconfig stay.
 *
 * Writing: the text is made by hand, not by yaml_emit, so that the token
 * lives only in buffers we wipe (jansson frees its strings unwiped).
 */
#include "lib/kubeconfig.h"
#include "lib/errmsg.h"
#include "lib/secret_file.h"

#include "lib/base64.h"
#include "lib/yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_SHOWN 100	/* a name from the file is shown at most this long */

/* Wipe every string of a parsed tree (object keys are names, not secrets). */
static void wipe_strings(json_t *v, int depth)
{
	const char *key;
	json_t *item;
	size_t i;

	if (!v || depth > YAML_MAX_DEPTH)
		return;
	if (json_is_string(v)) {
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, item)
			wipe_strings(item, depth + 1);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			wipe_strings(item, depth + 1);
	}
}

/* Read at most KUBECONFIG_MAX_BYTES of path into a NUL-terminated buffer. */
static int read_text(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	int rc = secret_file_read(path, KUBECONFIG_MAX_BYTES, out, outlen);

	if (rc == -EFBIG)
		errmsg(err, errlen, "kubeconfig %s: larger than %u bytes", path, KUBECONFIG_MAX_BYTES);
	else if (rc)
		errmsg(err, errlen, "kubeconfig %s: %s", path, strerror(-rc));
	return rc;
}

/* A relative path in the file is relative to the file's directory. */
static char *resolve(const char *kubeconfig_path, const char *p)
{
	const char *slash = strrchr(kubeconfig_path, '/');
	char *out = NULL;

	if (p[0] == '/' || !slash)
		return strdup(p);
	if (asprintf(&out, "%.*s/%s", (int)(slash - kubeconfig_path), kubeconfig_path, p) < 0)
		return NULL;
	return out;
}

/* The entry of list (clusters, contexts, users) named name, or NULL. */
static json_t *named(const json_t *root, const char *list, const char *name)
{
	const json_t *items = json_object_get(root, list);
	json_t *item;
	size_t i;

	json_array_foreach(items, i, item) {
		const char *n = json_string_value(json_object_get(item, "name"));

		if (n && strcmp(n, name) == 0)
			return item;
	}
	return NULL;
}

/* An optional string field: 0 (NULL when absent) or -EINVAL naming it. */
static int opt_string(const json_t *obj, const char *field, const char **out, const char *path, const char *where,
		      char *err, size_t errlen)
{
	const json_t *v = json_object_get(obj, field);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		errmsg(err, errlen, "kubeconfig %s: %s.%s: want a string", path, where, field);
		return -EINVAL;
	}
	*out = json_string_value(v);
	return 0;
}

static int take_cluster(struct kubeconfig *kc, const json_t *root, const char *name, char *err, size_t errlen)
{
	const json_t *entry = named(root, "clusters", name), *c, *insecure;
	const char *server, *data, *file, *path = kc->path;
	char where[160];

	if (!entry) {
		errmsg(err, errlen, "kubeconfig %s: contexts[%.*s].context.cluster '%.*s': no such entry in clusters", path,
		    NAME_SHOWN, kc->context, NAME_SHOWN, name);
		return -EINVAL;
	}
	snprintf(where, sizeof(where), "clusters[%.*s].cluster", NAME_SHOWN, name);
	c = json_object_get(entry, "cluster");
	if (!json_is_object(c)) {
		errmsg(err, errlen, "kubeconfig %s: %s: missing", path, where);
		return -EINVAL;
	}
	if (opt_string(c, "server", &server, path, where, err, errlen) ||
	    opt_string(c, "certificate-authority-data", &data, path, where, err, errlen) ||
	    opt_string(c, "certificate-authority", &file, path, where, err, errlen))
		return -EINVAL;
	if (!server || !*server) {
		errmsg(err, errlen, "kubeconfig %s: %s.server: missing", path, where);
		return -EINVAL;
	}
	insecure = json_object_get(c, "insecure-skip-tls-verify");
	if (insecure && !json_is_boolean(insecure) && !json_is_null(insecure)) {
		errmsg(err, errlen, "kubeconfig %s: %s.insecure-skip-tls-verify: want true or false", path, where);
		return -EINVAL;
	}
	kc->insecure_skip_tls_verify = json_is_true(insecure);
	if (kc->insecure_skip_tls_verify && ((data && *data) || (file && *file))) {
		/* as kubectl: trusting a CA and trusting anything contradict */
		errmsg(err, errlen,
		    "kubeconfig %s: %s: insecure-skip-tls-verify is true and a certificate authority is given; "
		    "keep one of them",
		    path, where);
		return -EINVAL;
	}
	if (!(kc->server = strdup(server)))
		return -ENOMEM;
	if (data && *data) {
		unsigned char *pem = NULL;
		int rc = base64_decode(data, strlen(data), &pem, &kc->ca_len);

		if (rc == -EINVAL) {
			errmsg(err, errlen, "kubeconfig %s: %s.certificate-authority-data: not base64", path, where);
			return rc;
		}
		if (rc)
			return rc;
		kc->ca_data = (char *)pem;
		if (!strstr(kc->ca_data, "-----BEGIN CERTIFICATE-----")) {
			errmsg(err, errlen,
			    "kubeconfig %s: %s.certificate-authority-data: no PEM certificate in it "
			    "(want base64 of -----BEGIN CERTIFICATE----- ...)",
			    path, where);
			return -EINVAL;
		}
	} else if (file && *file && !(kc->ca_file = resolve(path, file))) {
		return -ENOMEM;
	}
	return 0;
}

static int take_user(struct kubeconfig *kc, const json_t *root, const char *name, char *err, size_t errlen)
{
	static const char *unsupported[] = { "client-certificate", "client-certificate-data", "client-key",
					     "client-key-data", "exec", "auth-provider", "username", "password" };
	const json_t *entry = named(root, "users", name), *u;
	const char *token, *file, *path = kc->path;
	char where[160];

	if (!entry) {
		errmsg(err, errlen, "kubeconfig %s: contexts[%.*s].context.user '%.*s': no such entry in users", path,
		    NAME_SHOWN, kc->context, NAME_SHOWN, name);
		return -EINVAL;
	}
	snprintf(where, sizeof(where), "users[%.*s].user", NAME_SHOWN, name);
	u = json_object_get(entry, "user");
	if (!json_is_object(u)) {
		errmsg(err, errlen, "kubeconfig %s: %s: missing", path, where);
		return -EINVAL;
	}
	if (opt_string(u, "token", &token, path, where, err, errlen) ||
	    opt_string(u, "tokenFile", &file, path, where, err, errlen))
		return -EINVAL;
	if ((!token || !*token) && (!file || !*file)) {
		for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
			if (json_object_get(u, unsupported[i])) {
				errmsg(err, errlen,
				    "kubeconfig %s: %s.%s: not supported; weft takes a bearer token "
				    "(token or tokenFile)",
				    path, where, unsupported[i]);
				return -EINVAL;
			}
		return 0;	/* a user without credentials: requests go without a token */
	}
	if (token && *token) {
		for (const char *p = token; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				errmsg(err, errlen, "kubeconfig %s: %s.token: contains a control character", path, where);
				return -EINVAL;
			}
		if (!(kc->token = strdup(token)))
			return -ENOMEM;
	} else if (!(kc->token_file = resolve(path, file))) {
		return -ENOMEM;
	}
	return 0;
}

static int interpret(struct kubeconfig *kc, const json_t *root, char *err, size_t errlen)
{
	const char *path = kc->path, *current, *kind, *cluster, *user, *ns;
	const json_t *entry, *ctx;
	char where[160];

	if (opt_string(root, "kind", &kind, path, "(top)", err, errlen) ||
	    opt_string(root, "current-context", &current, path, "(top)", err, errlen))
		return -EINVAL;
	if (kind && strcmp(kind, "Config") != 0) {
		errmsg(err, errlen, "kubeconfig %s: kind: '%.*s', want Config", path, NAME_SHOWN, kind);
		return -EINVAL;
	}
	if (!current || !*current) {
		errmsg(err, errlen, "kubeconfig %s: current-context: not set", path);
		return -EINVAL;
	}
	if (!(kc->context = strdup(current)))
		return -ENOMEM;
	entry = named(root, "contexts", current);
	if (!entry) {
		errmsg(err, errlen, "kubeconfig %s: current-context '%.*s': no such entry in contexts", path, NAME_SHOWN,
		    current);
		return -EINVAL;
	}
	snprintf(where, sizeof(where), "contexts[%.*s].context", NAME_SHOWN, current);
	ctx = json_object_get(entry, "context");
	if (!json_is_object(ctx)) {
		errmsg(err, errlen, "kubeconfig %s: %s: missing", path, where);
		return -EINVAL;
	}
	if (opt_string(ctx, "cluster", &cluster, path, where, err, errlen) ||
	    opt_string(ctx, "user", &user, path, where, err, errlen) ||
	    opt_string(ctx, "namespace", &ns, path, where, err, errlen))
		return -EINVAL;
	if (!cluster || !*cluster) {
		errmsg(err, errlen, "kubeconfig %s: %s.cluster: missing", path, where);
		return -EINVAL;
	}
	if (ns && *ns && !(kc->namespace = strdup(ns)))
		return -ENOMEM;
	{
		int rc = take_cluster(kc, root, cluster, err, errlen);

		if (rc)
			return rc;
	}
	return user && *user ? take_user(kc, root, user, err, errlen) : 0;
}

int kubeconfig_parse(const char *path, const char *text, size_t len, struct kubeconfig *kc, char *err,
		     size_t errlen)
{
	json_t **docs = NULL;
	size_t ndocs = 0;
	char yerr[300];
	int rc;

	memset(kc, 0, sizeof(*kc));
	if (!(kc->path = strdup(path)))
		return -ENOMEM;
	rc = yaml_decode_stream(text, len, &docs, &ndocs, yerr, sizeof(yerr));
	if (rc) {
		errmsg(err, errlen, "kubeconfig %s: %s", path, rc == -ENOMEM ? "out of memory" : yerr);
		goto out;
	}
	if (ndocs != 1 || !json_is_object(docs[0])) {
		rc = -EINVAL;
		errmsg(err, errlen, "kubeconfig %s: want one YAML (or JSON) document that is a mapping, found %s", path,
		    ndocs == 0 ? "none" : ndocs == 1 ? "another kind of value" : "several");
		goto out;
	}
	rc = interpret(kc, docs[0], err, errlen);
	if (rc == -ENOMEM)
		errmsg(err, errlen, "kubeconfig %s: out of memory", path);
out:
	for (size_t i = 0; i < ndocs; i++)
		wipe_strings(docs[i], 0);
	yaml_docs_free(docs, ndocs);
	if (rc)
		kubeconfig_free(kc);
	return rc;
}

int kubeconfig_load(const char *path, struct kubeconfig *kc, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	memset(kc, 0, sizeof(*kc));
	rc = read_text(path, &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = kubeconfig_parse(path, text, len, kc, err, errlen);
	secret_free(text, len);
	return rc;
}

void kubeconfig_free(struct kubeconfig *kc)
{
	if (!kc)
		return;
	free(kc->path);
	free(kc->context);
	free(kc->server);
	secret_free(kc->ca_data, kc->ca_len);
	free(kc->ca_file);
	secret_free(kc->token, kc->token ? strlen(kc->token) : 0);
	free(kc->token_file);
	free(kc->namespace);
	memset(kc, 0, sizeof(*kc));
}

/* ------------------------------------------------------------------ writing */

/* A name we put in the file as a plain scalar: letters, digits, - . _ @ */
static bool plain_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("-._@", *s)))
			return false;
	return true;
}

/* A double-quoted scalar is safe for any printable ASCII without '"' and '\'. */
static bool quotable(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e || *s == '"' || *s == '\\')
			return false;
	return s != NULL;
}

char *kubeconfig_format(const struct kubeconfig_admin *a)
{
	char *ca64 = NULL, *text = NULL;
	int n;

	if (!plain_name(a->cluster) || !plain_name(a->user) || !quotable(a->server) || !quotable(a->token) ||
	    !*a->token) {
		errno = EINVAL;
		return NULL;
	}
	if (a->ca_pem && !(ca64 = base64_encode(a->ca_pem, a->ca_len)))
		return NULL;
	n = asprintf(&text,
		     "apiVersion: v1\n"
		     "kind: Config\n"
		     "clusters:\n"
		     "- name: %s\n"
		     "  cluster:\n"
		     "    server: \"%s\"\n"
		     "%s%s%s"
		     "contexts:\n"
		     "- name: %s@%s\n"
		     "  context:\n"
		     "    cluster: %s\n"
		     "    user: %s\n"
		     "current-context: %s@%s\n"
		     "preferences: {}\n"
		     "users:\n"
		     "- name: %s\n"
		     "  user:\n"
		     "    token: \"%s\"\n",
		     a->cluster, a->server, ca64 ? "    certificate-authority-data: " : "", ca64 ? ca64 : "",
		     ca64 ? "\n" : "", a->user, a->cluster, a->cluster, a->user, a->user, a->cluster, a->user, a->token);
	free(ca64);
	if (n < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return text;
}

int kubeconfig_write(const char *path, const struct kubeconfig_admin *a, bool *changed, char *err, size_t errlen)
{
	char *text = kubeconfig_format(a), *old = NULL, tmp[4200] = "";
	size_t len, oldlen = 0;
	int fd = -1, rc;

	*changed = false;
	if (!text) {
		rc = -errno;
		errmsg(err, errlen, "%s: %s", path, errno == EINVAL ? "a name, server or token cannot be written" :
								     strerror(errno));
		return rc;
	}
	len = strlen(text);
	if (read_text(path, &old, &oldlen, NULL, 0) == 0 && oldlen == len && memcmp(old, text, len) == 0) {
		rc = chmod(path, 0600) ? -errno : 0;
		if (rc)
			errmsg(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		rc = -ENAMETOOLONG;
		errmsg(err, errlen, "%s: path too long", path);
		goto out;
	}
	(void)unlink(tmp);
	errno = 0;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) || write(fd, text, len) != (ssize_t)len || fsync(fd)) {
		rc = errno ? -errno : -EIO;
		errmsg(err, errlen, "%s: %s", tmp, strerror(-rc));
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		rc = -errno;
		errmsg(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path)) {
		rc = -errno;
		errmsg(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	*changed = true;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc && tmp[0])
		(void)unlink(tmp);
	secret_free(old, oldlen);
	secret_free(text, len);
	return rc;
}
