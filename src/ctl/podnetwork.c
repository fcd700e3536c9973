/*
 * podnetwork.c — the `oc adm pod-network` verbs of multitenant mode:
 *
 *   weftctl pod-network join-projects --to=A B...     B... take A's VNID
 *   weftctl pod-network isolate-projects B...         B... get fresh VNIDs
 *   weftctl pod-network make-projects-global B...     B... get VNID 0
 *
 * One POST /apis/network.openshift.io/v1/podnetwork (docs/api.md) applies
 * the change as one transaction; each resulting NetNamespace is printed
 * as "netnamespace/NAME netid N".  Then the command waits until every
 * node's agent reports (weft.io/applied-revision on its Node) that its data
 * plane has applied that revision, or fails after --timeout naming the
 * nodes that have not.
 */
#include <getopt.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/print.h"
#include "model/columns.h"

static const char usage[] =
	"join-projects --to=PROJECT PROJECT... | isolate-projects PROJECT... | make-projects-global PROJECT...\n"
	"  [--timeout SECONDS]  wait until every node applied the change (default 30, 0: do not wait)";

static const char *const actions[] = { "join-projects", "isolate-projects", "make-projects-global" };

/*
 * Wait until every node's agent reports (annotation weft.io/applied-revision
 * on its Node) that its data plane applied revision rev, polling the Nodes.
 * A node whose agent never reported is not waited for (said on stderr).
 * 0 when applied everywhere; else 1 with the nodes that were late named.
 */
static int wait_applied(struct ctl *ctl, int64_t rev, double timeout_s)
{
	struct timespec t0, now;
	char late[1024];
	size_t napplied = 0, nskipped;
	int rc = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct ctl_reply r = { 0 };
		json_t *items, *node;
		size_t i, nlate = 0;
		double dt;
		int n = 0;

		late[0] = 0;
		napplied = nskipped = 0;
		if (ctl_call(ctl, "GET", "/api/v1/nodes", NULL, &r) < 0 || !ctl_ok(&r)) {
			ctl_print_server_error(&r);
			ctl_reply_free(&r);
			return 1;
		}
		items = (json_t *)ctl_reply_items(&r, "GET", "/api/v1/nodes");
		if (!items) {
			ctl_reply_free(&r);
			return 1;
		}
		json_array_foreach(items, i, node) {
			const char *name = obj_str(node, "metadata.name");
			const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
			const char *at = json_string_value(json_object_get(ann, "weft.io/applied-revision"));

			if (!at) {
				nskipped++;
				continue;
			}
			if (strtoll(at, NULL, 10) >= rev) {
				napplied++;
				continue;
			}
			nlate++;
			if (n >= 0 && (size_t)n < sizeof(late))
				n += snprintf(late + n, sizeof(late) - (size_t)n, "%s%s (at revision %s)",
					      nlate > 1 ? ", " : "", name ? name : "?", at);
		}
		ctl_reply_free(&r);
		clock_gettime(CLOCK_MONOTONIC, &now);
		dt = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (nlate == 0) {
			if (napplied)
				printf("applied on %zu node(s) in %.2f s (revision %lld)\n", napplied, dt,
				       (long long)rev);
			if (nskipped)
				fprintf(stderr, "note: %zu node(s) have no agent report and were not waited for\n",
					nskipped);
			rc = 0;
			break;
		}
		if (dt >= timeout_s) {
			fprintf(stderr, "error: the change (revision %lld) is stored but was not applied within "
					"%.0f s on: %s\n", (long long)rev, timeout_s, late);
			break;
		}
		usleep(50 * 1000);
	}
	return rc;
}

int ctl_podnetwork(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *action = NULL, *to = NULL;
	double timeout_s = 30;
	json_int_t rev;
	char path[CTL_PATH_MAX];
	const struct kind_info *netns = kind_get(KIND_NETNAMESPACE);
	struct ctl_reply r = { 0 };
	json_t *body = NULL, *projects = NULL, *items, *item;
	size_t i;
	int c, rc = CTL_EXIT_FAIL;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: %s pod-network %s\n", ctl->prog, usage);
		return CTL_EXIT_OK;
	}
	for (i = 0; argc >= 2 && i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(argv[1], actions[i]))
			action = actions[i];
	if (!action) {
		if (argc < 2)
			fprintf(stderr, "error: pod-network needs an action\n");
		else
			fprintf(stderr, "error: unknown pod-network action \"%s\"\n", argv[1]);
		return ctl_usage(ctl, "pod-network", usage);
	}
	argc--;
	argv++;		/* argv[0] is now the action */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			to = optarg;
			break;
		case 'T': {
			char *end;

			timeout_s = strtod(optarg, &end);
			if (*end || timeout_s < 0 || timeout_s > 3600) {
				fprintf(stderr, "error: --timeout %s: seconds from 0 (do not wait) to 3600\n",
					optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		}
		case 'h':
			printf("usage: %s pod-network %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "pod-network", usage);
		}
	}
	if (!strcmp(action, "join-projects") && (!to || !to[0])) {
		fprintf(stderr, "error: join-projects needs --to=PROJECT\n");
		return ctl_usage(ctl, "pod-network", usage);
	}
	if (strcmp(action, "join-projects") && to) {
		fprintf(stderr, "error: --to is for join-projects only\n");
		return ctl_usage(ctl, "pod-network", usage);
	}
	if (optind >= argc) {
		fprintf(stderr, "error: %s needs at least one PROJECT\n", action);
		return ctl_usage(ctl, "pod-network", usage);
	}
	if (to && !ctl_name_ok("project", to))
		return CTL_EXIT_USAGE;
	projects = json_array();
	body = json_pack("{s:s}", "action", action);
	if (!projects || !body)
		goto nomem;
	for (int a = optind; a < argc; a++) {
		if (!ctl_name_ok("project", argv[a])) {
			rc = CTL_EXIT_USAGE;
			goto out;
		}
		if (json_array_append_new(projects, json_string(argv[a])) < 0)
			goto nomem;
	}
	if ((to && json_object_set_new(body, "to", json_string(to)) < 0) ||
	    json_object_set(body, "projects", projects) < 0)
		goto nomem;
	snprintf(path, sizeof(path), "/apis/%s/%s/podnetwork", netns->group, netns->version);
	if (ctl_call(ctl, "POST", path, body, &r) < 0)
		goto out;
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	items = (json_t *)ctl_reply_items(&r, "POST", path);
	if (!items)
		goto out;
	json_array_foreach(items, i, item) {
		char netid[64];

		columns_scalar(json_object_get(item, "netid"), netid, sizeof(netid));
		printf("netnamespace/%s netid %s\n", obj_str(item, "metadata.name") ?: "?", netid[0] ? netid : "?");
	}
	fflush(stdout);
	rev = json_integer_value(json_object_get(r.json, "revision"));
	if (timeout_s > 0 && rev > 0 && wait_applied(ctl, rev, timeout_s) != 0)
		goto out;
	rc = CTL_EXIT_OK;
	goto out;
nomem:
	fprintf(stderr, "error: out of memory\n");
out:
	ctl_reply_free(&r);
	json_decref(body);
	json_decref(projects);
	return rc;
}
