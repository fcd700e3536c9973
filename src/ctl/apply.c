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
 *        unchanged(user's object as the server would store it, stored)?
 *            ├─yes──> "... unchanged"
 *            └─no───> PUT object (user's object, no resourceVersion)
 *                                ──> "... configured"
 *
 *    A server error is printed as "FILE doc N: KIND/NS/NAME: message" and
 *    the next document is tried; the exit status is then 1.  A transport
 *    failure or 401 stops at once (every later request would fail alike).
 *
 * The comparison simulates the replace of docs/api.md: the user's object
 * gets the model's defaults, keeps what the controller allocated (a
 * Service's clusterIP, nodePorts; a Node's podCIDR and weft.io/node-id)
 * when it leaves them empty, and a Namespace gets its
 * kubernetes.io/metadata.name label; status counts
 * only when the user wrote one.  Labels, annotations and every top-level
 * field but apiVersion, kind, metadata (and status) are compared.
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

static bool empty(const json_t *v)
{
	if (!v || json_is_null(v))
		return true;
	if (json_is_string(v))
		return !json_string_value(v)[0];
	if (json_is_integer(v))
		return json_integer_value(v) == 0;
	if (json_is_object(v))
		return json_object_size(v) == 0;
	if (json_is_array(v))
		return json_array_size(v) == 0;
	return false;
}

static void keep(json_t *want, const json_t *stored, const char *key)
{
	json_t *v = json_object_get(stored, key);

	if (empty(json_object_get(want, key)) && !empty(v))
		json_object_set_new(want, key, json_deep_copy(v));
}

/* The stored port a port takes its NodePort from: the same name, or the
 * same port and protocol (as the controller matches them). */
static const json_t *matching_port(const json_t *port, const json_t *stored_ports)
{
	const char *name = json_string_value(json_object_get(port, "name"));
	size_t i;
	json_t *p;

	json_array_foreach(stored_ports, i, p) {
		const char *pname = json_string_value(json_object_get(p, "name"));

		if ((name && pname && !strcmp(name, pname)) ||
		    (json_equal(json_object_get(port, "port"), json_object_get(p, "port")) &&
		     json_equal(json_object_get(port, "protocol"), json_object_get(p, "protocol"))))
			return p;
	}
	return NULL;
}

/* A Namespace carries the label kubernetes.io/metadata.name=NAME, set by
 * the server as Kubernetes does. */
static void namespace_label(json_t *want)
{
	json_t *meta = json_object_get(want, "metadata");
	json_t *labels = json_object_get(meta, "labels");
	json_t *name = json_object_get(meta, "name");

	if (!json_is_object(meta) || !json_is_string(name))
		return;
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(meta, "labels", labels);
	}
	json_object_set(labels, "kubernetes.io/metadata.name", name);
}

/* What the server adds to a replace: the label of a Namespace, and the
 * fields a replace keeps when the body leaves them empty (docs/api.md). */
static void as_stored(json_t *want, const json_t *stored)
{
	const char *kind = json_string_value(json_object_get(want, "kind")) ?: "";
	json_t *wspec = json_object_get(want, "spec");
	const json_t *sspec = json_object_get(stored, "spec");
	json_t *ports = json_object_get(wspec, "ports");
	size_t i;
	json_t *p;

	if (!strcmp(kind, "Namespace"))
		namespace_label(want);
	if (!strcmp(kind, "Node")) {
		/* a node keeps its ID and subnet for life */
		json_t *wmeta = json_object_get(want, "metadata");
		const json_t *id = json_object_get(json_object_get(json_object_get(stored, "metadata"), "annotations"),
						   "weft.io/node-id");

		if (!json_is_object(wspec) && json_is_object(sspec) && json_object_get(sspec, "podCIDR")) {
			wspec = json_object();
			json_object_set_new(want, "spec", wspec);
		}
		keep(wspec, sspec, "podCIDR");
		keep(wspec, sspec, "podCIDRs");
		if (id && json_is_object(wmeta)) {
			json_t *ann = json_object_get(wmeta, "annotations");

			if (!json_is_object(ann)) {
				ann = json_object();
				json_object_set_new(wmeta, "annotations", ann);
			}
			json_object_set(ann, "weft.io/node-id", (json_t *)id);
		}
		return;
	}
	if (strcmp(kind, "Service") || !json_is_object(wspec))
		return;
	keep(wspec, sspec, "clusterIP");
	keep(wspec, sspec, "clusterIPs");
	keep(wspec, sspec, "healthCheckNodePort");
	json_array_foreach(ports, i, p) {
		const json_t *sp = matching_port(p, json_object_get(sspec, "ports"));

		if (json_is_object(p) && sp)
			keep(p, sp, "nodePort");
	}
}

static bool same(const json_t *a, const json_t *b)
{
	if (empty(a) && empty(b))
		return true;
	return a && b && json_equal(a, b);
}

static bool skipped_key(const char *key)
{
	return !strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata") || !strcmp(key, "status");
}

static bool unchanged(const json_t *want, const json_t *stored)
{
	const json_t *wmeta = json_object_get(want, "metadata"), *smeta = json_object_get(stored, "metadata");
	const char *key;
	json_t *v;

	if (!same(json_object_get(wmeta, "labels"), json_object_get(smeta, "labels")) ||
	    !same(json_object_get(wmeta, "annotations"), json_object_get(smeta, "annotations")))
		return false;
	if (json_object_get(want, "status") && !same(json_object_get(want, "status"), json_object_get(stored, "status")))
		return false;
	json_object_foreach((json_t *)want, key, v)
		if (!skipped_key(key) && !same(v, json_object_get(stored, key)))
			return false;
	json_object_foreach((json_t *)stored, key, v)
		if (!skipped_key(key) && !json_object_get(want, key) && !empty(v))
			return false;
	return true;
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
	json_t *body = NULL, *want = NULL;
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
		want = json_deep_copy(body);
		if (!want || !json_is_object(r.json)) {
			rc = -ENOMEM;
			fprintf(stderr, "error: %s: %s\n", ref, want ? "the server's answer is not an object" : "out of memory");
			goto out;
		}
		model_default(want);
		as_stored(want, r.json);
		if (unchanged(want, r.json)) {
			printf("%s unchanged\n", ref);
			rc = 0;
			goto out;
		}
		ctl_reply_free(&r);
		rc = ctl_call(ctl, "PUT", path, body, &r);
		if (rc < 0)
			goto out;
		done = "configured";
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
	json_decref(want);
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
