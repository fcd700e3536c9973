/*
 * get.c — `weftctl get KIND [NAME...] [-n NS | -A] [-l SELECTOR]
 * [--field-selector SELECTOR] [-o wide|json|yaml|name]`.
 *
 * Without NAME: one list request (the namespace's collection, or every
 * namespace with -A), with the selectors passed to the server as they are
 * (labelSelector, fieldSelector: the server parses and refuses them, as
 * kubectl leaves it to kube-apiserver), and the items printed in
 * (namespace, name) order;
 * -o json/yaml print the List as the server sent it.  With NAMEs: one get
 * each; a missing one is reported (exit 1) and the others still printed;
 * -o json/yaml print the object itself when there is one NAME, a List
 * otherwise.  "KIND/NAME" is accepted for "KIND NAME".
 *
 * -w (--watch) lists, then follows the changes (watch.c); --timeout bounds
 * it and is refused without -w.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"
#include "ctl/print.h"

static const char usage[] = "KIND [NAME...] [-n NAMESPACE | -A] [-l SELECTOR] [--field-selector SELECTOR] "
			    "[-o wide|json|yaml|name] [-w [--timeout SECONDS]]\n"
			    "  -w, --watch          after the list, print each change as it comes (until --timeout,\n"
			    "                       SIGINT or SIGTERM, which exit 0; a server error exits 1)\n"
			    "  --timeout SECONDS    with -w: end the command after so long (default: never)";

/* The selectors of a list, as given (NULL: none). */
struct selectors {
	const char *labels, *fields;
};

static int print_items(const struct kind_info *k, const json_t *items, enum ctl_output out, bool with_namespace)
{
	json_t *s = ctl_sort_items(items);
	int rc = 0;

	if (!s) {
		fprintf(stderr, "error: out of memory\n");
		return -ENOMEM;
	}
	if (out == CTL_OUT_NAME)
		ctl_print_names(k, s, stdout);
	else
		rc = ctl_print_table(k, s, out == CTL_OUT_WIDE, with_namespace, time(NULL), stdout);
	if (rc < 0)
		fprintf(stderr, "error: out of memory\n");
	json_decref(s);
	return rc;
}

static int print_document(const json_t *v, enum ctl_output out)
{
	int rc = out == CTL_OUT_JSON ? ctl_print_json(v, stdout) : ctl_print_yaml(v, stdout);

	if (rc < 0)
		fprintf(stderr, "error: cannot print: out of memory\n");
	return rc;
}

static int get_list(struct ctl *ctl, const struct kind_info *k, const char *ns, bool all,
		    const struct selectors *sel, enum ctl_output out)
{
	char path[CTL_LIST_PATH_MAX];
	struct ctl_reply r = { 0 };
	const json_t *items;
	int rc;

	rc = ctl_list_path(k, ns, all, sel->labels, sel->fields, path, sizeof(path));
	if (rc)
		return rc;
	rc = CTL_EXIT_FAIL;
	/* an answer that does not parse is an error, never "No resources found" */
	items = ctl_list(ctl, path, &r);
	if (!items)
		goto out;
	if (out == CTL_OUT_JSON || out == CTL_OUT_YAML) {
		rc = print_document(r.json, out) < 0 ? CTL_EXIT_FAIL : CTL_EXIT_OK;
		goto out;
	}
	if (!json_array_size(items)) {
		if (k->namespaced && !all)
			fprintf(stderr, "No resources found in %s namespace.\n", ns);
		else
			fprintf(stderr, "No resources found\n");
		rc = CTL_EXIT_OK;
		goto out;
	}
	rc = print_items(k, items, out, all && k->namespaced) < 0 ? CTL_EXIT_FAIL : CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	return rc;
}

static int get_named(struct ctl *ctl, const struct kind_info *k, const char *ns, char **names, size_t n,
		     enum ctl_output out)
{
	json_t *items = json_array();
	json_t *list = NULL;
	int rc = CTL_EXIT_OK;

	if (!items) {
		fprintf(stderr, "error: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++) {
		char path[CTL_PATH_MAX];
		struct ctl_reply r = { 0 };

		if (!ctl_name_ok("name", names[i])) {
			rc = CTL_EXIT_FAIL;
			continue;
		}
		if (ctl_call(ctl, "GET", ctl_path(k, ns, names[i], path, sizeof(path)), NULL, &r) < 0) {
			rc = CTL_EXIT_FAIL;
			break;
		}
		if (r.status == 404)
			ctl_print_not_found(k, names[i]);
		else if (!ctl_ok(&r))
			ctl_print_server_error(&r);
		else if (!ctl_reply_object(&r, "GET", path))
			;	/* printed */
		else
			json_array_append(items, r.json);
		if (!ctl_ok(&r) || !json_is_object(r.json))
			rc = CTL_EXIT_FAIL;
		ctl_reply_free(&r);
	}
	if (!json_array_size(items))
		goto out;
	if (out == CTL_OUT_JSON || out == CTL_OUT_YAML) {
		if (n == 1) {
			if (print_document(json_array_get(items, 0), out) < 0)
				rc = CTL_EXIT_FAIL;
			goto out;
		}
		list = json_pack("{s:s, s:s, s:{}, s:O}", "apiVersion", "v1", "kind", "List", "metadata", "items", items);
		if (!list || print_document(list, out) < 0)
			rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (print_items(k, items, out, false) < 0)
		rc = CTL_EXIT_FAIL;
out:
	json_decref(list);
	json_decref(items);
	return rc;
}

int ctl_get(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "output", required_argument, NULL, 'o' },
		{ "selector", required_argument, NULL, 'l' },
		{ "field-selector", required_argument, NULL, 'F' },
		{ "watch", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct selectors sel = { NULL, NULL };
	const char *ns = NULL, *output = "";
	bool all = false, watch = false;
	long timeout_s = -1;
	enum ctl_output out;
	const struct kind_info *k;
	char kind[256], *slash, **names;
	char *one[1];
	size_t nnames;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:Ao:l:wh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!ctl_name_ok("namespace", optarg))
				return CTL_EXIT_USAGE;
			ns = optarg;
			break;
		case 'A':
			all = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'l':
			sel.labels = optarg;
			break;
		case 'F':
			sel.fields = optarg;
			break;
		case 'w':
			watch = true;
			break;
		case 'T':
			if (ctl_seconds_parse(optarg, &timeout_s) < 0) {
				fprintf(stderr, "error: --timeout %s: want whole seconds from 0 (none) to 31536000\n",
					optarg);
				return ctl_usage(ctl, "get", usage);
			}
			break;
		case 'h':
			printf("usage: %s get %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "get", usage);
		}
	}
	if (ctl_output_parse(output, &out) < 0) {
		fprintf(stderr, "error: unknown output format \"%s\" (want wide, json, yaml or name)\n", output);
		return ctl_usage(ctl, "get", usage);
	}
	if (optind >= argc) {
		fprintf(stderr, "error: get needs a KIND (e.g. pods, services, nodes, hostsubnets)\n");
		return ctl_usage(ctl, "get", usage);
	}
	snprintf(kind, sizeof(kind), "%s", argv[optind++]);
	names = argv + optind;
	nnames = (size_t)(argc - optind);
	slash = strchr(kind, '/');
	if (slash) {
		if (nnames) {
			fprintf(stderr, "error: there is no need to give a NAME after KIND/NAME\n");
			return ctl_usage(ctl, "get", usage);
		}
		*slash = 0;
		one[0] = argv[optind - 1] + (slash - kind) + 1;
		names = one;
		nnames = 1;
	}
	k = ctl_kind(kind);
	if (!k)
		return CTL_EXIT_FAIL;
	if (all && ns) {
		fprintf(stderr, "error: -A and -n exclude each other\n");
		return ctl_usage(ctl, "get", usage);
	}
	if (all && nnames) {
		fprintf(stderr, "error: a resource cannot be retrieved by name across all namespaces\n");
		return ctl_usage(ctl, "get", usage);
	}
	if (nnames && (sel.labels || sel.fields)) {
		fprintf(stderr, "error: selectors cannot be used with names (they select from a list)\n");
		return ctl_usage(ctl, "get", usage);
	}
	if (!k->namespaced) {
		ns = NULL;
		all = false;
	} else if (!ns) {
		ns = CTL_DEFAULT_NAMESPACE;
	}
	if (timeout_s >= 0 && !watch) {
		fprintf(stderr, "error: --timeout goes with -w (--watch)\n");
		return ctl_usage(ctl, "get", usage);
	}
	if (watch) {
		struct ctl_watch_opts wo = {
			.k = k, .ns = ns, .all = all, .labels = sel.labels, .fields = sel.fields,
			.names = names, .nnames = nnames, .out = out, .timeout_s = timeout_s > 0 ? timeout_s : 0,
		};

		for (size_t i = 0; i < nnames; i++)
			if (!ctl_name_ok("name", names[i]))
				return CTL_EXIT_FAIL;
		return ctl_watch(ctl, &wo);
	}
	if (nnames)
		return get_named(ctl, k, ns, names, nnames, out);
	return get_list(ctl, k, ns, all, &sel, out);
}
