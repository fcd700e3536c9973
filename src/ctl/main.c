/*
 * main.c — weftctl, the command line of weft.
 *
 *   weftctl [--kubeconfig FILE] [--server URL] [--token-file FILE]
 *           [--certificate-authority FILE] VERB [ARGS...]
 *
 * The global flags may stand anywhere before a "--" (so `weftctl get pods
 * --server URL` works too); $WEFT_SERVER and $WEFT_TOKEN_FILE stand in for
 * --server and --token-file, and a kubeconfig (--kubeconfig, $KUBECONFIG,
 * ~/.kube/config) gives what neither does (ctl.h).  Then the verb is looked up in `verbs` and runs with argv[0] = its
 * name.  Exit status: 0 done, 1 failed (server or input), 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

static int help(struct ctl *ctl, int argc, char **argv);
static int version(struct ctl *ctl, int argc, char **argv);

static const struct ctl_verb verbs[] = {
	{ "apply", ctl_apply, "-f FILE|DIR|- [-f ...] [-n NAMESPACE]",
	  "create or update the objects of manifests (all validated first)" },
	{ "get", ctl_get, "KIND [NAME...] [-n NAMESPACE | -A] [-l SELECTOR] [--field-selector SELECTOR] [-o wide|json|yaml|name]\n"
	  "       [-w|--watch [--timeout SECONDS]]",
	  "list objects, or show some by name; -w: then print each change as it comes" },
	{ "describe", ctl_describe, "KIND NAME [-n NAMESPACE]", "show one object in detail" },
	{ "patch", ctl_patch, "KIND NAME -p PATCH [--type strategic|merge|json] [-n NAMESPACE]",
	  "change fields of one object (strategic merge, JSON merge or JSON Patch)" },
	{ "delete", ctl_delete,
	  "KIND NAME... [-n NAMESPACE] | KIND -l SELECTOR [--field-selector SELECTOR] [-n NAMESPACE | -A]\n"
	  "       | -f FILE|DIR|-",
	  "delete objects: by name, by selector, or those of manifests" },
	{ "can-reach", ctl_can_reach, "SRC DST PORT[/PROTO]   (SRC, DST: NAMESPACE/POD or an IPv4 address)",
	  "may SRC open a connection to DST on PORT under the NetworkPolicies now? (exit 0 yes, 1 no, 2 no answer)" },
	{ "trace", ctl_trace,
	  "FROM TO[:PORT[/PROTO]] [--source-port N] [--source ADDRESS] [--node NODE] [--timeout SECONDS] [--keep]\n"
	  "       [-o json]   (FROM: NAMESPACE/POD, a node, or an address outside arriving at --node;\n"
	  "       TO: NAMESPACE/POD, svc/NAMESPACE/NAME, a node or an IPv4 address)",
	  "run one packet through the real programs of the nodes it crosses, step by step "
	  "(exit 0 delivered, 1 dropped, 2 no answer)" },
	{ "flows", ctl_flows, "[--follow|-f] [--pod NAMESPACE/NAME] [--node NAME] [--verdict dropped|forwarded] [-o json]",
	  "the flows the nodes' data planes logged (drops, new connections), one a line; --follow: as they come "
	  "(exit 0 done, 1 failed or a node could not be read, 2 bad argument or unknown pod)" },
	{ "pod-network", ctl_podnetwork,
	  "join-projects --to=PROJECT PROJECT... | isolate-projects PROJECT... | make-projects-global PROJECT...",
	  "change which projects' pods can reach each other (multitenant mode)" },
	{ "drops", ctl_drops, "[NODE...]",
	  "packets the data plane dropped, per node and reason (as the agents report them)" },
	{ "policy-log", ctl_policy_log, "[-n NAMESPACE | -A] [--node NODE]",
	  "NetworkPolicy verdicts the nodes logged (for Namespaces and NetworkPolicies annotated weft.io/policy-log)" },
	{ "node-credential", ctl_nodecred, "issue NODE [--output-file FILE] | list [NODE] | revoke NAME...|--node NODE",
	  "issue, list and revoke the credentials that bind each node's agent to its node" },
	{ "version", version, "", "print weftctl's version" },
	{ "help", help, "[VERB]", "show this help, or a verb's usage" },
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [--kubeconfig FILE] [--server URL] [--token-file FILE]\n"
		   "       %*s [--certificate-authority FILE] VERB [ARGS...]\n\n",
		prog, (int)strlen(prog), "");
	fprintf(f, "Verbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-16s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nUsage of each verb:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %s %s %s\n", prog, verbs[i].name, verbs[i].usage);
	fprintf(f, "\nKINDS: clusternetworks (cn), nodes (no), hostsubnets (hs), namespaces (ns),\n"
		   "  netnamespaces (netns), pods (po), services (svc), endpoints (ep),\n"
		   "  networkpolicies (netpol), ingresses (ing), routes, secrets\n"
		   "  (singular, plural or short name, any case)\n");
	fprintf(f, "\nGlobal flags (anywhere on the line):\n"
		   "  --kubeconfig FILE   server, CA and token, as kubectl reads them (default: the first\n"
		   "                      file of $KUBECONFIG that exists, else ~/.kube/config);\n"
		   "                      weft-controller writes <data-dir>/admin.kubeconfig\n"
		   "  --server URL        the controller (default $WEFT_SERVER, else the kubeconfig's,\n"
		   "                      else %s)\n"
		   "  --token-file FILE   bearer token (default $WEFT_TOKEN_FILE, else the kubeconfig's);\n"
		   "                      weft-controller writes <data-dir>/admin.token\n"
		   "  --certificate-authority FILE\n"
		   "                      trust the server certificate if this CA signed it (default: the\n"
		   "                      kubeconfig's, else the system's; <data-dir>/pki/ca.crt)\n",
		CTL_DEFAULT_SERVER);
}

static int help(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1) {
		for (size_t i = 0; i < NVERBS; i++)
			if (!strcmp(argv[1], verbs[i].name)) {
				printf("usage: %s %s %s\n  %s\n", ctl->prog, verbs[i].name, verbs[i].usage,
				       verbs[i].summary);
				return CTL_EXIT_OK;
			}
		fprintf(stderr, "error: unknown verb \"%s\"\n", argv[1]);
		usage(stderr, ctl->prog);
		return CTL_EXIT_USAGE;
	}
	usage(stdout, ctl->prog);
	return CTL_EXIT_OK;
}

static int version(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "error: version takes no arguments\n");
		return ctl_usage(ctl, "version", "");
	}
	printf("weftctl %s\n", CTL_VERSION);
	return CTL_EXIT_OK;
}

/*
 * Take the global flags (--server or -s, --token-file, --kubeconfig,
 * --certificate-authority) out of argv wherever they are
 * before a "--", keeping the other arguments in order.  Returns the new
 * argc, or -1 after printing when a flag lacks its value.
 */
static int take_global_flags(struct ctl *ctl, int argc, char **argv)
{
	static const struct { const char *flag; size_t offset; } globals[] = {
		{ "--server", offsetof(struct ctl, server) },
		{ "-s", offsetof(struct ctl, server) },
		{ "--token-file", offsetof(struct ctl, token_file) },
		{ "--kubeconfig", offsetof(struct ctl, kubeconfig) },
		{ "--certificate-authority", offsetof(struct ctl, ca_file) },
	};
	int out = 1, i = 1;

	while (i < argc) {
		bool taken = false;

		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		for (size_t g = 0; g < sizeof(globals) / sizeof(globals[0]) && !taken; g++) {
			const char **slot = (const char **)((char *)ctl + globals[g].offset);
			size_t n = strlen(globals[g].flag);

			if (!strcmp(argv[i], globals[g].flag)) {
				if (i + 1 >= argc) {
					fprintf(stderr, "error: flag %s needs a value\n", argv[i]);
					return -1;
				}
				*slot = argv[i + 1];
				i += 2;
				taken = true;
			} else if (n > 2 && !strncmp(argv[i], globals[g].flag, n) && argv[i][n] == '=') {
				*slot = argv[i] + n + 1;
				i++;
				taken = true;
			}
		}
		if (!taken)
			argv[out++] = argv[i++];
	}
	argv[out] = NULL;
	return out;
}

int main(int argc, char **argv)
{
	struct ctl ctl = {
		.prog = "weftctl",
		.server = getenv("WEFT_SERVER"),
		.token_file = getenv("WEFT_TOKEN_FILE"),
	};
	int rc;

	argc = take_global_flags(&ctl, argc, argv);
	if (argc < 0)
		return CTL_EXIT_USAGE;
	if (argc < 2) {
		usage(stderr, ctl.prog);
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return help(&ctl, 1, argv + 1);
	if (!strcmp(argv[1], "--version"))
		return version(&ctl, 1, argv + 1);
	for (size_t i = 0; i < NVERBS; i++) {
		if (strcmp(argv[1], verbs[i].name))
			continue;
		rc = verbs[i].run(&ctl, argc - 1, argv + 1);
		httpc_destroy(ctl.http);
		if (fflush(stdout) != 0 && rc == CTL_EXIT_OK) {
			perror("error: writing the output");
			rc = CTL_EXIT_FAIL;
		}
		return rc;
	}
	if (argv[1][0] == '-')
		fprintf(stderr, "error: unknown flag %s before the verb\n", argv[1]);
	else
		fprintf(stderr, "error: unknown verb \"%s\"\n", argv[1]);
	usage(stderr, ctl.prog);
	return CTL_EXIT_USAGE;
}
