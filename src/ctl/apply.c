/*
 * apply.c — `weftctl apply -f FILE|DIR|- [-f ...] [-n NS]`: create or
 * update the objects of manifests.
 *
 * 1. Every document is decoded and validated first (manifest.c); if any is
 *    wrong, every error is printed and nothing is applied: a manifest with a
 *    typo never half-applies.
 * 2. Then the documents in order, in batches of at most BATCH_ITEMS
 *    documents and BATCH_BYTES of JSON: each batch is one POST of a v1 List
 *    to /weft/v1/apply (docs/api.md, "Batched apply"), where the server
 *    applies each item as step 3 does, one after the other, and answers
 *    with every item's result, all of them on disk.  A document larger
 *    than BATCH_BYTES alone goes by step 3.  A server without the batch
 *    path (404: an older one) gets every document by step 3; one whose
 *    body limit is smaller (413) gets the document at hand by step 3 and
 *    Lists of half the bytes from then on.
 * 3. One document by itself:
 *
 *        GET object ──404──> POST collection ──> "KIND/NS/NAME created"
 *            │200
 *            v
 *        PUT object (user's object, no resourceVersion)
 *            ├─resourceVersion as before──> "... unchanged"
 *            └─otherwise────────────────> "... configured"
 *
 * Either way the output is the same, a line per document in order: a
 * server error is printed as "FILE doc N: KIND/NS/NAME: message" and the
 * next document is tried; the exit status is then 1.  A transport failure
 * or 401 stops at once (every later request would fail alike).
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
#define APPLY_PATH "/weft/v1/apply"
#define BATCH_ITEMS 500			/* the server takes up to 1000 */
#define BATCH_BYTES (2u << 20)		/* under the server's default --max-body (3 MiB) */

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

/* The server's message on d, a line at a time, as "FILE doc N: REF: line". */
static void doc_error(const struct ctl_doc *d, const char *ref, const char *p)
{
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
		char message[CTL_ERR_MAX];

		doc_error(d, ref, ctl_message(&r, message, sizeof(message)));
		rc = 1;
	}
out:
	ctl_reply_free(&r);
	json_decref(body);
	return rc;
}

/* The documents of one POST to APPLY_PATH: the List's JSON text, how
 * many documents it holds, and how large a List the server takes. */
struct batch {
	char *text;		/* malloc'd (open_memstream) */
	size_t len;
	size_t n;
	size_t max_bytes;	/* BATCH_BYTES, halved at each 413 */
	bool unsupported;	/* the server has no batch path (404), or takes too little */
};

/* The next List of docs[0..ndocs) into b: as many documents as fit in
 * b->max_bytes, up to BATCH_ITEMS (none when the first is larger alone).
 * 0, or -ENOMEM. */
static int batch_fill(struct batch *b, const struct ctl_doc *docs, size_t ndocs)
{
	static const char head[] = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[", tail[] = "]}";
	size_t len = sizeof(head) - 1;
	int rc = 0;
	FILE *f;

	free(b->text);
	b->text = NULL;
	b->len = b->n = 0;
	if (!(f = open_memstream(&b->text, &b->len)))
		return -ENOMEM;
	fputs(head, f);
	while (b->n < ndocs && b->n < BATCH_ITEMS) {
		json_t *body = body_of(docs[b->n].obj);
		char *item = body ? json_dumps(body, JSON_COMPACT) : NULL;
		size_t n = item ? strlen(item) + (b->n ? 1 : 0) : 0;

		json_decref(body);
		if (!item) {
			rc = -ENOMEM;
			break;
		}
		if (len + n + sizeof(tail) > b->max_bytes) {
			free(item);
			break;
		}
		fprintf(f, "%s%s", b->n ? "," : "", item);
		free(item);
		len += n;
		b->n++;
	}
	fputs(tail, f);
	return fclose(f) || rc ? -ENOMEM : 0;
}

/* "KIND/NS/NAME" of document d into ref. */
static const char *doc_ref(const struct ctl_doc *d, char *ref, size_t len)
{
	const json_t *md = json_object_get(d->obj, "metadata");

	return ctl_ref(d->kind, json_string_value(json_object_get(md, "namespace")),
		       json_string_value(json_object_get(md, "name")), ref, len);
}

/* Print the server's answer on each document of the batch: 0 every one
 * applied, 1 some refused, -EPROTO an answer that does not fit them. */
static int batch_print(const struct ctl_doc *docs, size_t n, const json_t *items)
{
	char ref[CTL_REF_MAX];
	int rc = 0;

	if (json_array_size(items) != n) {
		fprintf(stderr, "error: the server's answer to POST %s has %zu items for the %zu sent\n", APPLY_PATH,
			json_array_size(items), n);
		return -EPROTO;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(items, i);
		const char *result = json_string_value(json_object_get(item, "result")) ?: "";
		const char *name = json_string_value(json_object_get(item, "name")) ?: "";
		const char *message = json_string_value(json_object_get(item, "message"));

		doc_ref(&docs[i], ref, sizeof(ref));
		if (strcmp(name, obj_name(docs[i].obj) ?: "") != 0) {
			fprintf(stderr, "error: the server's answer to POST %s names '%s' as item %zu, sent as %s\n",
				APPLY_PATH, name, i, ref);
			return -EPROTO;
		}
		if (!strcmp(result, "created") || !strcmp(result, "configured") || !strcmp(result, "unchanged")) {
			printf("%s %s\n", ref, result);
			continue;
		}
		doc_error(&docs[i], ref, message && *message ? message : "the server did not apply it");
		rc = 1;
	}
	return rc;
}

/*
 * The next batch of docs[0..ndocs) by one POST to APPLY_PATH: *taken of
 * them applied and printed, and 0 (all applied), 1 (some refused) or
 * < 0 (stop: printed).  *taken 0: nothing was sent or the server did not
 * take the batch as such (b->unsupported after a 404, b->max_bytes
 * halved after a 413); the caller applies docs[0] by itself.
 */
static int apply_batch(struct ctl *ctl, const struct ctl_doc *docs, size_t ndocs, struct batch *b, size_t *taken)
{
	struct ctl_reply r = { 0 };
	char ref[CTL_REF_MAX], message[CTL_ERR_MAX];
	const json_t *items;
	int rc;

	*taken = 0;
	if (batch_fill(b, docs, ndocs)) {
		fprintf(stderr, "error: out of memory\n");
		return -ENOMEM;
	}
	if (!b->n)
		return 0;
	rc = ctl_call_text(ctl, "POST", APPLY_PATH, NULL, b->text, b->len, &r);
	if (rc < 0)
		return rc;
	if (r.status == 404 || r.status == 413) {
		/* an older server, or one whose --max-body is smaller */
		b->max_bytes /= 2;
		b->unsupported = r.status == 404 || b->max_bytes < 65536;
		goto out;
	}
	if (r.status == 401) {
		ctl_print_server_error(&r);
		rc = -EACCES;
		goto out;
	}
	*taken = b->n;
	if (!ctl_ok(&r)) {	/* the batch as a whole was refused: so was each of its documents */
		ctl_message(&r, message, sizeof(message));
		for (size_t i = 0; i < b->n; i++)
			doc_error(&docs[i], doc_ref(&docs[i], ref, sizeof(ref)), message);
		rc = 1;
		goto out;
	}
	items = ctl_reply_items(&r, "POST", APPLY_PATH);
	rc = items ? batch_print(docs, b->n, items) : -EPROTO;
out:
	ctl_reply_free(&r);
	return rc;
}

/* Every document in order, by batches (step 2) or alone (step 3). */
static int apply_all(struct ctl *ctl, const struct ctl_manifest *m)
{
	struct batch b = { .max_bytes = BATCH_BYTES };
	int rc = CTL_EXIT_OK;

	for (size_t i = 0; i < m->ndocs;) {
		size_t taken = 0;
		int r = b.unsupported ? 0 : apply_batch(ctl, m->docs + i, m->ndocs - i, &b, &taken);

		if (r >= 0 && !taken) {
			r = apply_one(ctl, &m->docs[i]);
			taken = 1;
		}
		if (r)
			rc = CTL_EXIT_FAIL;
		if (r < 0)
			break;
		i += taken;
	}
	free(b.text);
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
	rc = apply_all(ctl, &m);
out:
	ctl_manifest_free(&m);
	return rc;
}
