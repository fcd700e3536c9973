/*
 * drops.c — `weftctl drops [NODE...]`: why the data plane refused traffic,
 * per node and reason, as each node's agent last reported it (the
 * annotation weft.io/drops on its Node, a JSON object reason -> packets,
 * refreshed at most every few seconds).  Sorted by node, then reason.
 */
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/print.h"

static bool wanted(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int ctl_drops(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_reply r = { 0 };
	json_t *items, *node;
	size_t i, rows = 0, found = 0;
	int rc = CTL_EXIT_FAIL;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: %s drops [NODE...]\n", ctl->prog);
		return CTL_EXIT_OK;
	}
	for (int a = 1; a < argc; a++)
		if (!ctl_name_ok("node", argv[a]))
			return CTL_EXIT_USAGE;
	if (ctl_call(ctl, "GET", "/api/v1/nodes", NULL, &r) < 0)
		goto out;
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	items = (json_t *)ctl_reply_items(&r, "GET", "/api/v1/nodes");
	if (!items)
		goto out;
	json_array_foreach(items, i, node)	/* names first: an error prints no table */
		if (ctl_str_at(node, "metadata.name") &&
		    wanted(ctl_str_at(node, "metadata.name"), argc, argv))
			found++;
	if (argc >= 2 && found < (size_t)(argc - 1)) {
		fprintf(stderr, "error: %zu of the %d node(s) named do not exist\n",
			(size_t)(argc - 1) - found, argc - 1);
		goto out;
	}
	printf("%-24s %-20s %s\n", "NODE", "REASON", "PACKETS");
	json_array_foreach(items, i, node) {
		const char *name = ctl_str_at(node, "metadata.name");
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *d = json_string_value(json_object_get(ann, "weft.io/drops"));
		json_t *drops, *count;
		const char *reason;

		if (!name || !wanted(name, argc, argv))
			continue;
		if (!d || !(drops = json_loads(d, 0, NULL)))
			continue;
		json_object_foreach(drops, reason, count) {
			printf("%-24s %-20s %" JSON_INTEGER_FORMAT "\n", name, reason,
			       json_integer_value(count));
			rows++;
		}
		json_decref(drops);
	}
	if (!rows)
		printf("(no drops reported)\n");
	rc = CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	return rc;
}
