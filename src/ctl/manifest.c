/*
 * manifest.c — manifests read, decoded, namespaced and checked for apply
 * and delete -f (see manifest.h).
 *
 * load:  for each path ── directory? → its manifest files, sorted
 *                      └─ read_file (bounded) → model_decode_manifest
 *        for each document: place_namespace → model_validate (apply)
 *                                           → identity check (delete)
 * Every error is printed; a single one fails the whole load.
 */
#include "ctl/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "lib/yaml.h"

#define ERR_MAX 65536

/* Each non-empty line of text on stderr, as "PREFIX<line>". */
static void print_lines(const char *prefix, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);

		if (n)
			fprintf(stderr, "%s%.*s\n", prefix, (int)n, text);
		text += n + (nl ? 1 : 0);
	}
}

static int read_file(const char *path, const char *label, char **out, size_t *outlen)
{
	bool is_stdin = !strcmp(path, "-");
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "error: %s: %s\n", label, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 65536) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nbuf;

			if (ncap > CTL_MANIFEST_MAX_BYTES + 1)
				ncap = CTL_MANIFEST_MAX_BYTES + 1;
			if (ncap <= len) {
				rc = -EFBIG;
				fprintf(stderr, "error: %s: larger than %u bytes\n", label, CTL_MANIFEST_MAX_BYTES);
				goto out;
			}
			nbuf = realloc(buf, ncap + 1);
			if (!nbuf) {
				rc = -ENOMEM;
				fprintf(stderr, "error: %s: out of memory\n", label);
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			fprintf(stderr, "error: %s: %s\n", label, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (!buf && !(buf = malloc(1))) {
		rc = -ENOMEM;
		goto out;
	}
	buf[len] = 0;
	*out = buf;
	*outlen = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	if (fd >= 0 && !is_stdin)
		close(fd);
	return rc;
}

static bool manifest_name(const char *name)
{
	size_t n = strlen(name);

	if (name[0] == '.')
		return false;
	return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml")) ||
	       (n > 5 && !strcmp(name + n - 5, ".json"));
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_source(struct ctl_manifest *m, const char *label, char **copy)
{
	char **s = realloc(m->sources, (m->nsources + 1) * sizeof(*s));

	if (!s)
		return -ENOMEM;
	m->sources = s;
	s[m->nsources] = strdup(label);
	if (!s[m->nsources])
		return -ENOMEM;
	*copy = s[m->nsources++];
	return 0;
}

/* Give a namespaced document its namespace.  0, or -EINVAL after printing. */
static int place_namespace(const struct ctl_doc *d, const char *ns_flag)
{
	json_t *meta = json_object_get(d->obj, "metadata");
	json_t *ns;

	if (!d->kind || !d->kind->namespaced)
		return 0;
	if (!meta) {
		meta = json_object();
		if (!meta || json_object_set_new(d->obj, "metadata", meta) < 0)
			return -ENOMEM;
	}
	if (!json_is_object(meta))
		return 0;		/* validation says what is wrong */
	ns = json_object_get(meta, "namespace");
	if (!ns || json_is_null(ns) || (json_is_string(ns) && !json_string_value(ns)[0]))
		return json_object_set_new(meta, "namespace",
					   json_string(ns_flag ? ns_flag : CTL_DEFAULT_NAMESPACE)) < 0 ? -ENOMEM : 0;
	if (ns_flag && json_is_string(ns) && strcmp(json_string_value(ns), ns_flag)) {
		fprintf(stderr, "%s doc %zu: metadata.namespace: \"%s\" does not match the namespace \"%s\" given with -n\n",
			d->source, d->index, json_string_value(ns), ns_flag);
		return -EINVAL;
	}
	return 0;
}

/* What delete -f needs: a known kind and a usable name. */
static int check_identity(const struct ctl_doc *d)
{
	const char *kind = json_string_value(json_object_get(d->obj, "kind"));
	const char *name = json_string_value(json_object_get(json_object_get(d->obj, "metadata"), "name"));
	const char *ns;

	if (!d->kind) {
		fprintf(stderr, "%s doc %zu: kind: unknown kind '%s'\n", d->source, d->index, kind ? kind : "");
		return -EINVAL;
	}
	if (!name || !name[0]) {
		fprintf(stderr, "%s doc %zu: metadata.name: required\n", d->source, d->index);
		return -EINVAL;
	}
	if (!model_dns1123_subdomain(name)) {
		fprintf(stderr, "%s doc %zu: metadata.name: '%s' is not a valid name\n", d->source, d->index, name);
		return -EINVAL;
	}
	ns = json_string_value(json_object_get(json_object_get(d->obj, "metadata"), "namespace"));
	if (d->kind->namespaced && (!ns || !model_dns1123_label(ns))) {
		fprintf(stderr, "%s doc %zu: metadata.namespace: '%s' is not a valid namespace\n", d->source, d->index,
			ns ? ns : "");
		return -EINVAL;
	}
	return 0;
}

static int check_doc(const struct ctl_doc *d, const struct ctl_manifest_opts *opts, char *err)
{
	char prefix[CTL_PATH_MAX];
	int rc;

	if (!json_is_object(d->obj)) {
		fprintf(stderr, "%s doc %zu: not an object\n", d->source, d->index);
		return -EINVAL;
	}
	rc = place_namespace(d, opts->ns);
	if (rc < 0)
		return rc;
	if (!opts->validate)
		return check_identity(d);
	err[0] = 0;
	if (model_validate(d->obj, err, ERR_MAX) < 0) {
		snprintf(prefix, sizeof(prefix), "%s doc %zu: ", d->source, d->index);
		print_lines(prefix, err[0] ? err : "invalid");
		return -EINVAL;
	}
	return 0;
}

static int load_file(const char *path, const char *label_in, const struct ctl_manifest_opts *opts,
		     struct ctl_manifest *m, char *err)
{
	json_t **docs = NULL;
	size_t ndocs = 0;
	char *buf = NULL, *label;
	size_t len = 0;
	int rc, bad = 0;

	rc = add_source(m, !strcmp(label_in, "-") ? "stdin" : label_in, &label);
	if (rc < 0) {
		fprintf(stderr, "error: out of memory\n");
		return rc;
	}
	rc = read_file(path, label, &buf, &len);
	if (rc < 0)
		return rc;
	err[0] = 0;
	rc = model_decode_manifest(buf, len, &docs, &ndocs, err, ERR_MAX);
	free(buf);
	if (rc < 0) {
		char prefix[CTL_PATH_MAX];

		/* "doc N: ..." reads as "FILE doc N: ...", anything else as "FILE: ..." */
		snprintf(prefix, sizeof(prefix), "%s%s", label, !strncmp(err, "doc ", 4) ? " " : ": ");
		print_lines(prefix, err[0] ? err : "cannot decode");
		return -EINVAL;
	}
	if (ndocs) {
		struct ctl_doc *d = realloc(m->docs, (m->ndocs + ndocs) * sizeof(*d));

		if (!d) {
			yaml_docs_free(docs, ndocs);
			fprintf(stderr, "error: out of memory\n");
			return -ENOMEM;
		}
		m->docs = d;
	}
	for (size_t i = 0; i < ndocs; i++) {
		struct ctl_doc *d = &m->docs[m->ndocs++];

		d->source = label;
		d->index = i + 1;
		d->obj = json_incref(docs[i]);
		d->kind = kind_by_kind(json_string_value(json_object_get(d->obj, "kind")) ?: "");
		if (check_doc(d, opts, err) < 0)
			bad = 1;
	}
	yaml_docs_free(docs, ndocs);
	return bad ? -EINVAL : 0;
}

static int load_dir(const char *path, const struct ctl_manifest_opts *opts, struct ctl_manifest *m, char *err)
{
	char *names[CTL_MANIFEST_MAX_FILES];
	size_t n = 0;
	struct dirent *e;
	DIR *dir = opendir(path);
	int rc = 0;

	if (!dir) {
		fprintf(stderr, "error: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while ((e = readdir(dir))) {
		if (!manifest_name(e->d_name))
			continue;
		if (n == CTL_MANIFEST_MAX_FILES) {
			fprintf(stderr, "error: %s: more than %d manifest files\n", path, CTL_MANIFEST_MAX_FILES);
			rc = -E2BIG;
			goto out;
		}
		if (asprintf(&names[n], "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", e->d_name) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(names[0]), cmp_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(names[i], &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (load_file(names[i], names[i], opts, m, err) < 0)
			rc = -EINVAL;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	closedir(dir);
	return rc;
}

int ctl_manifest_load(char *const *paths, size_t npaths, const struct ctl_manifest_opts *opts, struct ctl_manifest *m)
{
	char *err = malloc(ERR_MAX);
	bool stdin_used = false;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	if (!err) {
		fprintf(stderr, "error: out of memory\n");
		return -ENOMEM;
	}
	for (size_t i = 0; i < npaths; i++) {
		struct stat st;

		if (!strcmp(paths[i], "-")) {
			if (stdin_used) {
				fprintf(stderr, "error: -f - given twice: stdin can be read once\n");
				rc = -EINVAL;
				continue;
			}
			stdin_used = true;
		} else if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (load_dir(paths[i], opts, m, err) < 0)
				rc = -EINVAL;
			continue;
		}
		if (load_file(paths[i], paths[i], opts, m, err) < 0)
			rc = -EINVAL;
	}
	free(err);
	if (rc < 0)
		ctl_manifest_free(m);
	return rc;
}

void ctl_manifest_free(struct ctl_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ndocs; i++)
		json_decref(m->docs[i].obj);
	for (size_t i = 0; i < m->nsources; i++)
		free(m->sources[i]);
	free(m->docs);
	free(m->sources);
	memset(m, 0, sizeof(*m));
}
