/*
 * policylog.c — `weftctl policy-log [-n NAMESPACE | -A] [--node NODE]`: the
 * verdicts of NetworkPolicy on new connections that the nodes logged, as
 * each node's agent last reported them (the annotation weft.io/policy-log
 * on its Node: the last few records, refreshed at most every few
 * seconds).  Only pods whose Namespace or NetworkPolicy asks for it are
 * logged (the annotation weft.io/policy-log: all, deny or allow), and a
 * node logs at most a hundred a second per CPU.  Sorted by time.
 *
 * -n NAMESPACE keeps the records with an end in that namespace (the
 * default: every record, as -A).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/print.h"

struct row {
	const char *node;
	json_t *rec;		/* borrowed from its node's parsed array */
};

static int by_time(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(((const struct row *)a)->rec, "time"));
	const char *y = json_string_value(json_object_get(((const struct row *)b)->rec, "time"));

	return strcmp(x ? x : "", y ? y : "");
}

/* Does "ns/name" (or an address) lie in namespace ns? */
static bool in_ns(const json_t *rec, const char *key, const char *ns)
{
	const char *v = json_string_value(json_object_get(rec, key));
	size_t n = strlen(ns);

	return v && strncmp(v, ns, n) == 0 && v[n] == '/';
}

static void policies_of(const json_t *rec, char *buf, size_t len)
{
	const json_t *p, *arr = json_object_get(rec, "policies");
	size_t i, used = 0;

	buf[0] = 0;
	json_array_foreach(arr, i, p) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? "," : "", json_string_value(p) ? json_string_value(p) : "");

		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!buf[0]) {
		const char *reason = json_string_value(json_object_get(rec, "reason"));

		snprintf(buf, len, "%s", reason ? reason : "-");
	}
}

int ctl_policy_log(struct ctl *ctl, int argc, char **argv)
{
	const char *ns = NULL, *only = NULL;
	struct ctl_reply r = { 0 };
	struct row *rows = NULL;
	json_t **parsed = NULL, *items, *node;
	size_t i, nrows = 0, nparsed = 0;
	int rc = CTL_EXIT_FAIL;

	for (int a = 1; a < argc; a++) {
		if ((!strcmp(argv[a], "-n") || !strcmp(argv[a], "--namespace")) && a + 1 < argc) {
			ns = argv[++a];
		} else if (!strcmp(argv[a], "-A") || !strcmp(argv[a], "--all-namespaces")) {
			ns = NULL;
		} else if (!strcmp(argv[a], "--node") && a + 1 < argc) {
			only = argv[++a];
		} else if (!strcmp(argv[a], "-n") || !strcmp(argv[a], "--namespace") || !strcmp(argv[a], "--node")) {
			fprintf(stderr, "error: policy-log: %s needs a value (usage: %s policy-log "
				"[-n NAMESPACE | -A] [--node NODE])\n", argv[a], ctl->prog);
			return CTL_EXIT_USAGE;
		} else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
			printf("usage: %s policy-log [-n NAMESPACE | -A] [--node NODE]\n", ctl->prog);
			return CTL_EXIT_OK;
		} else {
			fprintf(stderr, "error: policy-log: unexpected argument '%s' (usage: %s policy-log "
				"[-n NAMESPACE | -A] [--node NODE])\n", argv[a], ctl->prog);
			return CTL_EXIT_USAGE;
		}
	}
	if ((ns && !ctl_name_ok("namespace", ns)) || (only && !ctl_name_ok("node", only)))
		return CTL_EXIT_USAGE;
	items = (json_t *)ctl_list(ctl, "/api/v1/nodes", &r);
	if (!items)
		goto out;
	parsed = calloc(json_array_size(items) + 1, sizeof(*parsed));
	if (!parsed)
		goto out;
	json_array_foreach(items, i, node) {
		const char *name = obj_str(node, "metadata.name");
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *log = json_string_value(json_object_get(ann, "weft.io/policy-log"));
		json_t *arr, *rec;
		size_t k;

		if (!name || (only && strcmp(name, only) != 0) || !log || !(arr = json_loads(log, 0, NULL)))
			continue;
		parsed[nparsed++] = arr;
		json_array_foreach(arr, k, rec) {
			struct row *nr;

			if (!json_is_object(rec) ||
			    (ns && !in_ns(rec, "source", ns) && !in_ns(rec, "destination", ns)))
				continue;
			nr = realloc(rows, (nrows + 1) * sizeof(*rows));
			if (!nr)
				goto out;
			rows = nr;
			rows[nrows].node = name;
			rows[nrows++].rec = rec;
		}
	}
	if (!nrows) {
		printf("(no policy verdicts logged%s%s; annotate a Namespace or NetworkPolicy with "
		       "weft.io/policy-log: all|deny|allow)\n", ns ? " in namespace " : "", ns ? ns : "");
		rc = CTL_EXIT_OK;
		goto out;
	}
	qsort(rows, nrows, sizeof(*rows), by_time);
	printf("%-24s %-10s %-26s %-26s %-10s %-8s %-8s %s\n", "TIME", "NODE", "SOURCE", "DESTINATION",
	       "PORT", "VERDICT", "SIDE", "POLICIES/REASON");
	for (i = 0; i < nrows; i++) {
		const json_t *rec = rows[i].rec;
		char pols[256];

		policies_of(rec, pols, sizeof(pols));
		printf("%-24s %-10s %-26s %-26s %-10s %-8s %-8s %s\n",
		       json_string_value(json_object_get(rec, "time")) ?: "-", rows[i].node,
		       json_string_value(json_object_get(rec, "source")) ?: "-",
		       json_string_value(json_object_get(rec, "destination")) ?: "-",
		       json_string_value(json_object_get(rec, "port")) ?: "-",
		       json_string_value(json_object_get(rec, "verdict")) ?: "-",
		       json_string_value(json_object_get(rec, "direction")) ?: "-", pols);
	}
	rc = CTL_EXIT_OK;
out:
	for (i = 0; i < nparsed; i++)
		json_decref(parsed[i]);
	free(parsed);
	free(rows);
	ctl_reply_free(&r);
	return rc;
}
