/*
 * podnetwork.c — the `oc adm pod-network` verbs of multitenant mode:
 *
 *   weftctl pod-network join-projects --to=A B...     B... take A's VNID
 *   weftctl pod-network isolate-projects B...         B... get fresh VNIDs
 *   weftctl pod-network make-projects-global B...     B... get VNID 0
 *
 * One POST /apis/network.openshift.io/v1/podnetwork (docs/api.md) applies
 * the change as one transaction; each resulting NetNamespace is printed
 * as "netnamespace/NAME netid N".
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/print.h"

static const char usage[] =
	"join-projects --to=PROJECT PROJECT... | isolate-projects PROJECT... | make-projects-global PROJECT...";

static const char *const actions[] = { "join-projects", "isolate-projects", "make-projects-global" };

int ctl_podnetwork(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *action = NULL, *to = NULL;
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
	items = json_object_get(r.json, "items");
	if (!json_is_array(items)) {
		fprintf(stderr, "error: the server's answer to POST %s has no items\n", path);
		goto out;
	}
	json_array_foreach(items, i, item) {
		char netid[64];

		ctl_scalar(json_object_get(item, "netid"), netid, sizeof(netid));
		printf("netnamespace/%s netid %s\n", ctl_str_at(item, "metadata.name") ?: "?", netid[0] ? netid : "?");
	}
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
