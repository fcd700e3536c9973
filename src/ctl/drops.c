/*
 * drops.c — `weftctl drops [NODE...]`: why the data plane refused traffic,
 * per node and reason, as each node's agent last reported it (the
 * annotation weft.io/drops on its Node, a JSON object reason -> packets,
 * refreshed at most every few seconds).  Sorted by node, then reason.
 *
 * Then the pressure on each node's conntrack table (the annotation
 * weft.io/conntrack, from the agent's last sweep): entries in use of the
 * capacity, the per-client cap, the client holding the most connections,
 * and how many pairs the sweeps expired and orphans they removed.  The
 * refusals themselves are drop reasons above (ct-full, ct-source-limit,
 * ct-no-connection).
 *
 * Then NetworkPolicy on each node (the annotation weft.io/policy): rules
 * written of the policy map's capacity, rule sets refused for lack of
 * room, and the connections tracked for policy of their table's
 * capacity.  Its refusals are drop reasons too (policy-denied-ingress,
 * policy-denied-egress, policy-ct-full, policy-ct-source-limit,
 * policy-map-full).
 *
 * Last, a line per node holding quarantined lease files (the annotation
 * weft.io/ipam): each address with its file and why it was set aside, and
 * how to resolve it.  A quarantined address is out of the pod pool until
 * an operator checks its <ip>.bad file and deletes it; the agent sees the
 * file gone within seconds (or at the next ADD that finds the subnet full)
 * and the address returns, no restart needed.
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

static json_int_t int_of(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void print_conntrack(json_t *items, int argc, char **argv)
{
	bool header = false;
	json_t *node;
	size_t i;

	json_array_foreach(items, i, node) {
		const char *name = obj_str(node, "metadata.name");
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *c = json_string_value(json_object_get(ann, "weft.io/conntrack"));
		json_t *ct;

		if (!name || !wanted(name, argc, argv) || !c || !(ct = json_loads(c, 0, NULL)))
			continue;
		if (!header) {
			printf("\n%-24s %-18s %-12s %-28s %-10s %s\n", "NODE", "CONNTRACK",
			       "PER-CLIENT", "TOP CLIENT", "EXPIRED", "ORPHANS");
			header = true;
		}
		char used[32], top[64];

		snprintf(used, sizeof(used), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			 int_of(ct, "entries"), int_of(ct, "capacity"));
		snprintf(top, sizeof(top), "%s (%" JSON_INTEGER_FORMAT " conn)",
			 json_string_value(json_object_get(ct, "topClient")) &&
				 *json_string_value(json_object_get(ct, "topClient"))
			 ? json_string_value(json_object_get(ct, "topClient")) : "-",
			 int_of(ct, "topClientConnections"));
		printf("%-24s %-18s %-12" JSON_INTEGER_FORMAT " %-28s %-10" JSON_INTEGER_FORMAT
		       " %" JSON_INTEGER_FORMAT "\n", name, used, int_of(ct, "perClientMax"), top,
		       int_of(ct, "expiredPairs"), int_of(ct, "orphans"));
		json_decref(ct);
	}
}

static void print_policy(json_t *items, int argc, char **argv)
{
	bool header = false;
	json_t *node;
	size_t i;

	json_array_foreach(items, i, node) {
		const char *name = obj_str(node, "metadata.name");
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *c = json_string_value(json_object_get(ann, "weft.io/policy"));
		char rules[32], conns[32];
		json_t *pol;

		if (!name || !wanted(name, argc, argv) || !c || !(pol = json_loads(c, 0, NULL)))
			continue;
		if (!header) {
			printf("\n%-24s %-10s %-18s %-10s %-18s %s\n", "NODE", "POLICIES", "POLICY RULES",
			       "MAP FULL", "POLICY CONNS", "PER-CLIENT");
			header = true;
		}
		snprintf(rules, sizeof(rules), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			 int_of(pol, "rules"), int_of(pol, "rulesCapacity"));
		snprintf(conns, sizeof(conns), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			 int_of(pol, "connections"), int_of(pol, "connectionsCapacity"));
		printf("%-24s %-10" JSON_INTEGER_FORMAT " %-18s %-10" JSON_INTEGER_FORMAT " %-18s %"
		       JSON_INTEGER_FORMAT "\n", name, int_of(pol, "policies"), rules,
		       int_of(pol, "mapFull"), conns, int_of(pol, "perClientMax"));
		json_decref(pol);
	}
}

/* "ADDR (FILE: REASON), ..." of a node's quarantine list, "and N more"
 * when the agent listed fewer than it has. */
static void print_quarantine_line(const char *name, const json_t *ipam)
{
	const json_t *list = json_object_get(ipam, "quarantine"), *q;
	json_int_t files = int_of(ipam, "quarantineFiles");
	size_t i;

	printf("%-24s quarantined leases:", name);
	json_array_foreach(list, i, q)
		printf("%s %s (%s: %s)", i ? "," : "",
		       json_string_value(json_object_get(q, "ip")) ?: "?",
		       json_string_value(json_object_get(q, "file")) ?: "?",
		       json_string_value(json_object_get(q, "reason")) ?: "?");
	if (files > (json_int_t)json_array_size(list))
		printf(", and %" JSON_INTEGER_FORMAT " more (the agent's log names them)",
		       files - (json_int_t)json_array_size(list));
	printf("\n");
}

static void print_quarantine(json_t *items, int argc, char **argv)
{
	bool any = false;
	json_t *node;
	size_t i;

	json_array_foreach(items, i, node) {
		const char *name = obj_str(node, "metadata.name");
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *c = json_string_value(json_object_get(ann, "weft.io/ipam"));
		json_t *ipam;

		if (!name || !wanted(name, argc, argv) || !c || !(ipam = json_loads(c, 0, NULL)))
			continue;
		if (int_of(ipam, "quarantineFiles") > 0) {
			if (!any)
				printf("\n");
			print_quarantine_line(name, ipam);
			any = true;
		}
		json_decref(ipam);
	}
	if (any)
		printf("A quarantined address is held out of the pod pool: check its file (a pod may "
		       "still use the address), then delete it; the agent returns the address within "
		       "seconds, without a restart.\n");
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
	items = (json_t *)ctl_list(ctl, "/api/v1/nodes", &r);
	if (!items)
		goto out;
	json_array_foreach(items, i, node)	/* names first: an error prints no table */
		if (obj_str(node, "metadata.name") &&
		    wanted(obj_str(node, "metadata.name"), argc, argv))
			found++;
	if (argc >= 2 && found < (size_t)(argc - 1)) {
		fprintf(stderr, "error: %zu of the %d node(s) named do not exist\n",
			(size_t)(argc - 1) - found, argc - 1);
		goto out;
	}
	printf("%-24s %-20s %s\n", "NODE", "REASON", "PACKETS");
	json_array_foreach(items, i, node) {
		const char *name = obj_str(node, "metadata.name");
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
	print_conntrack(items, argc, argv);
	print_policy(items, argc, argv);
	print_quarantine(items, argc, argv);
	rc = CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	return rc;
}
