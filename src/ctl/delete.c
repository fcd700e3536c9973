/*
 * delete.c — `weftctl delete KIND NAME... [-n NS]` and
 * `weftctl delete -f FILE|DIR|- [-f ...] [-n NS]` and
 * `weftctl delete KIND -l SELECTOR [--field-selector SELECTOR] [-n NS | -A]`.
 *
 * With a selector (-l and/or --field-selector): one list with the
 * selectors (the server judges them, as for get), then a delete of each
 * object listed, in (namespace, name) order, printed as a delete by name
 * is ("pod/web-1 deleted", "pod/red/web-1 deleted" with -A); an object
 * gone between the list and its delete counts as deleted (it is what was
 * asked).  "No resources found" on stderr and exit 0 when nothing matches.
 *
 * Every name (or document) is deleted even when another one fails; a
 * missing object is reported and makes the exit status 1 (unless
 * --ignore-not-found).  With -f the documents are first all checked (known
 * kind, a name) — nothing is deleted when one is wrong — and then deleted
 * in reverse order, so that `delete -f` undoes `apply -f` (a Namespace
 * listed first goes last, after the objects in it).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/manifest.h"
#include "ctl/print.h"

#define MAX_FILES 256

static const char usage[] = "KIND NAME... [-n NAMESPACE] [--ignore-not-found] | -f FILE|DIR|- [-f ...]\n"
			    "       | KIND -l SELECTOR [--field-selector SELECTOR] [-n NAMESPACE | -A]";

/* 0 deleted (or absent and ignored), 1 failed (printed), < 0 stop. */
static int delete_one(struct ctl *ctl, const struct kind_info *k, const char *ns, const char *name,
		      const char *ref_ns, bool ignore_missing)
{
	char path[CTL_PATH_MAX], ref[CTL_REF_MAX];
	struct ctl_reply r = { 0 };
	int rc;

	rc = ctl_call(ctl, "DELETE", ctl_path(k, ns, name, path, sizeof(path)), NULL, &r);
	if (rc < 0)
		return rc;
	ctl_ref(k, ref_ns, name, ref, sizeof(ref));
	if (ctl_ok(&r)) {
		printf("%s deleted\n", ref);
		rc = 0;
	} else if (r.status == 404) {
		if (!ignore_missing)
			ctl_print_not_found(k, name);
		rc = ignore_missing ? 0 : 1;
	} else {
		ctl_print_server_error(&r);
		rc = r.status == 401 ? -EACCES : 1;
	}
	ctl_reply_free(&r);
	return rc;
}

static int delete_files(struct ctl *ctl, char **files, size_t nfiles, const char *ns, bool ignore_missing)
{
	struct ctl_manifest_opts opts = { .ns = ns, .validate = false };
	struct ctl_manifest m = { 0 };
	int rc = CTL_EXIT_OK;

	if (ctl_manifest_load(files, nfiles, &opts, &m) < 0)
		return CTL_EXIT_FAIL;
	if (!m.ndocs) {
		fprintf(stderr, "error: no objects passed to delete\n");
		rc = CTL_EXIT_FAIL;
	}
	for (size_t i = m.ndocs; i-- > 0;) {
		const struct ctl_doc *d = &m.docs[i];
		const json_t *meta = json_object_get(d->obj, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));
		const char *dns = json_string_value(json_object_get(meta, "namespace"));
		int r = delete_one(ctl, d->kind, dns, name, dns, ignore_missing);

		if (r)
			rc = CTL_EXIT_FAIL;
		if (r < 0)
			break;
	}
	ctl_manifest_free(&m);
	return rc;
}

/* delete KIND -l/--field-selector: list, then delete each. */
static int delete_selected(struct ctl *ctl, const struct kind_info *k, const char *ns, bool all, const char *labels,
			   const char *fields)
{
	char path[CTL_LIST_PATH_MAX];
	struct ctl_reply r = { 0 };
	const json_t *items;
	json_t *sorted = NULL, *obj;
	size_t i;
	int rc;

	rc = ctl_list_path(k, ns, all, labels, fields, path, sizeof(path));
	if (rc)
		return rc;
	rc = CTL_EXIT_FAIL;
	items = ctl_list(ctl, path, &r);
	if (!items)
		goto out;
	rc = CTL_EXIT_OK;
	if (!json_array_size(items)) {
		if (k->namespaced && !all)
			fprintf(stderr, "No resources found in %s namespace.\n", ns);
		else
			fprintf(stderr, "No resources found\n");
		goto out;
	}
	sorted = ctl_sort_items(items);
	if (!sorted) {
		fprintf(stderr, "error: out of memory\n");
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	json_array_foreach(sorted, i, obj) {
		const char *name = obj_str(obj, "metadata.name");
		const char *ons = k->namespaced ? obj_str(obj, "metadata.namespace") : NULL;
		int d;

		if (!name || !ctl_name_ok("name in the list", name) ||
		    (k->namespaced && (!ons || !ctl_name_ok("namespace in the list", ons)))) {
			rc = CTL_EXIT_FAIL;
			continue;
		}
		d = delete_one(ctl, k, ons, name, all ? ons : NULL, true);
		if (d)
			rc = CTL_EXIT_FAIL;
		if (d < 0)
			break;
	}
out:
	json_decref(sorted);
	ctl_reply_free(&r);
	return rc;
}

int ctl_delete(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "filename", required_argument, NULL, 'f' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "ignore-not-found", no_argument, NULL, 'i' },
		{ "selector", required_argument, NULL, 'l' },
		{ "field-selector", required_argument, NULL, 'F' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char *files[MAX_FILES];
	size_t nfiles = 0;
	const char *ns = NULL, *labels = NULL, *fields = NULL;
	const struct kind_info *k;
	bool ignore_missing = false, all = false;
	char kind[256], *slash, **names, *one[1];
	size_t nnames;
	int c, rc = CTL_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:l:Ah", longopts, NULL)) != -1) {
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
			ns = optarg;
			break;
		case 'i':
			ignore_missing = true;
			break;
		case 'l':
			labels = optarg;
			break;
		case 'F':
			fields = optarg;
			break;
		case 'A':
			all = true;
			break;
		case 'h':
			printf("usage: %s delete %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "delete", usage);
		}
	}
	if (all && ns) {
		fprintf(stderr, "error: -A and -n exclude each other\n");
		return ctl_usage(ctl, "delete", usage);
	}
	if (all && !labels && !fields) {
		fprintf(stderr, "error: delete -A needs a selector (-l or --field-selector)\n");
		return ctl_usage(ctl, "delete", usage);
	}
	if (nfiles && (labels || fields)) {
		fprintf(stderr, "error: give either -f FILE or a selector, not both\n");
		return ctl_usage(ctl, "delete", usage);
	}
	if (nfiles) {
		if (optind < argc) {
			fprintf(stderr, "error: give either -f FILE or KIND NAME, not both\n");
			return ctl_usage(ctl, "delete", usage);
		}
		return delete_files(ctl, files, nfiles, ns, ignore_missing);
	}
	if (optind >= argc) {
		fprintf(stderr, "error: delete needs KIND NAME or -f FILE\n");
		return ctl_usage(ctl, "delete", usage);
	}
	snprintf(kind, sizeof(kind), "%s", argv[optind++]);
	names = argv + optind;
	nnames = (size_t)(argc - optind);
	slash = strchr(kind, '/');
	if (slash) {
		*slash = 0;
		one[0] = argv[optind - 1] + (slash - kind) + 1;
		if (nnames) {
			fprintf(stderr, "error: there is no need to give a NAME after KIND/NAME\n");
			return ctl_usage(ctl, "delete", usage);
		}
		names = one;
		nnames = 1;
	}
	if (nnames && (labels || fields)) {
		fprintf(stderr, "error: give either NAMEs or a selector (-l, --field-selector), not both\n");
		return ctl_usage(ctl, "delete", usage);
	}
	k = ctl_kind(kind);
	if (!k)
		return CTL_EXIT_FAIL;
	if (labels || fields) {
		if (!k->namespaced) {
			ns = NULL;
			all = false;
		} else if (!ns && !all) {
			ns = CTL_DEFAULT_NAMESPACE;
		}
		return delete_selected(ctl, k, ns, all, labels, fields);
	}
	if (!nnames) {
		fprintf(stderr, "error: delete %s needs a NAME or a selector (deleting every object of a kind is not supported)\n",
			k->plural);
		return ctl_usage(ctl, "delete", usage);
	}
	if (!ns)
		ns = CTL_DEFAULT_NAMESPACE;
	for (size_t i = 0; i < nnames; i++) {
		int r;

		if (!ctl_name_ok("name", names[i])) {
			rc = CTL_EXIT_FAIL;
			continue;
		}
		r = delete_one(ctl, k, ns, names[i], NULL, ignore_missing);
		if (r)
			rc = CTL_EXIT_FAIL;
		if (r < 0)
			break;
	}
	return rc;
}
