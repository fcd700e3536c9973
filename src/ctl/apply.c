/*
 * apply.c — `weftctl apply -f FILE|DIR|- [-f ...] [-n NS]`: create or
 * update the objects of manifests.
 *
 * 1. Every document is decoded and validated first (manifest.c); if any is
 *    wrong, every error is printed and nothing is applied: a manifest with a
 *    typo never half-applies.
 * 2. Then each document in order:
 *
 *        GET object ──404──> POST collection ──> "KIND/NS/NAME created"
 *            │200
 *            v
 *        PUT object (user's object, no resourceVersion)
 *            ├─resourceVersion as before──> "... unchanged"
 *            └─otherwise────────────────> "... configured"
 *
 *    A server error is printed as "FILE doc N: KIND/NS/NAME: message" and
 *    the next document is tried; the exit status is then 1.  A transport
 *    failure or 401 stops at once (every later request would fail alike).
 *
 * The server decides what changed: a replace that would store the object
 * as it is (after its defaults, what the controller allocated, and, for
 * the kinds with a status subresource, the stored status, which a write
 * to the main resource never changes: docs/api.md) writes nothing and
 * keeps the resourceVersion.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/manifest.h"
#include "ctl/print.h"

#define MAX_FILES 256

static const char usage[] = "-f FILE|DIR|- [-f ...] [-n NAMESPACE]";

static const char *resource_version(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

/* The body to send: the user's object without what the server owns. */
static json_t *body_of(const json_t *obj)
{
	json_t *body = json_deep_copy(obj);
	json_t *meta = json_object_get(body, "metadata");

	if (json_is_object(meta)) {
		json_object_del(meta, "resourceVersion");
		json_object_del(meta, "uid");
		json_object_del(meta, "creationTimestamp");
	}
	return body;
}

static void doc_error(const struct ctl_doc *d, const char *ref, const struct ctl_reply *r)
{
	char message[CTL_ERR_MAX];
	const char *p = ctl_message(r, message, sizeof(message));

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n)
			fprintf(stderr, "%s doc %zu: %s: %.*s\n", d->source, d->index, ref, (int)n, p);
		p += n + (nl ? 1 : 0);
	}
}

/* 0 applied, 1 refused by the server (printed), < 0 stop (printed). */
static int apply_one(struct ctl *ctl, const struct ctl_doc *d)
{
	const struct kind_info *k = d->kind;
	const char *name = json_string_value(json_object_get(json_object_get(d->obj, "metadata"), "name"));
	const char *ns = json_string_value(json_object_get(json_object_get(d->obj, "metadata"), "namespace"));
	char path[CTL_PATH_MAX], ref[CTL_REF_MAX];
	struct ctl_reply r = { 0 };
	json_t *body = NULL;
	char before[32] = "";
	const char *done;
	int rc;

	ctl_ref(k, ns, name, ref, sizeof(ref));
	body = body_of(d->obj);
	if (!body) {
		rc = -ENOMEM;
		fprintf(stderr, "error: out of memory\n");
		goto out;
	}
	rc = ctl_call(ctl, "GET", ctl_path(k, ns, name, path, sizeof(path)), NULL, &r);
	if (rc < 0)
		goto out;
	if (r.status == 404) {
		ctl_reply_free(&r);
		rc = ctl_call(ctl, "POST", ctl_path(k, ns, NULL, path, sizeof(path)), body, &r);
		if (rc < 0)
			goto out;
		done = "created";
	} else if (ctl_ok(&r)) {
		/* the server writes nothing for a replace that changes nothing
		 * (its resourceVersion stays): that is "unchanged" */
		snprintf(before, sizeof(before), "%s", resource_version(r.json) ?: "");
		ctl_reply_free(&r);
		rc = ctl_call(ctl, "PUT", path, body, &r);
		if (rc < 0)
			goto out;
		done = ctl_ok(&r) && before[0] && resource_version(r.json) &&
			       strcmp(before, resource_version(r.json)) == 0
			       ? "unchanged" : "configured";
	} else {
		done = NULL;
	}
	if (done && ctl_ok(&r)) {
		printf("%s %s\n", ref, done);
		rc = 0;
	} else if (r.status == 401) {
		ctl_print_server_error(&r);
		rc = -EACCES;
	} else {
		doc_error(d, ref, &r);
		rc = 1;
	}
out:
	ctl_reply_free(&r);
	json_decref(body);
	return rc;
}

int ctl_apply(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "filename", required_argument, NULL, 'f' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char *files[MAX_FILES];
	size_t nfiles = 0;
	struct ctl_manifest_opts opts = { .validate = true };
	struct ctl_manifest m = { 0 };
	int c, rc = CTL_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (nfiles == MAX_FILES) {
				fprintf(stderr, "error: more than %d -f flags\n", MAX_FILES);
				return CTL_EXIT_USAGE;
			}
			files[nfiles++] = optarg;
			break;
		case 'n':
			if (!ctl_name_ok("namespace", optarg))
				return CTL_EXIT_USAGE;
			opts.ns = optarg;
			break;
		case 'h':
			printf("usage: %s apply %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "apply", usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
		return ctl_usage(ctl, "apply", usage);
	}
	if (!nfiles) {
		fprintf(stderr, "error: apply needs -f FILE\n");
		return ctl_usage(ctl, "apply", usage);
	}
	if (ctl_manifest_load(files, nfiles, &opts, &m) < 0)
		return CTL_EXIT_FAIL;
	if (!m.ndocs) {
		fprintf(stderr, "error: no objects passed to apply\n");
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < m.ndocs; i++) {
		int r = apply_one(ctl, &m.docs[i]);

		if (r)
			rc = CTL_EXIT_FAIL;
		if (r < 0)
			break;
	}
out:
	ctl_manifest_free(&m);
	return rc;
}
