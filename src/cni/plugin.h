/*
 * plugin.h — the parts of weft-cni, the CNI plugin binary (private to
 * src/cni):
 *
 *   main.c     environment and stdin checked, the command table, printing
 *   forward.c  one request to weft-agent over its socket, and its reply
 *
 * The plugin is thin on purpose (it runs once per pod start): it checks
 * what it can without the agent (the environment, the size of stdin, that
 * stdin is JSON), answers VERSION itself and forwards the rest.  The agent
 * checks everything again and does the work.
 */
#ifndef WEFT_CNI_PLUGIN_H
#define WEFT_CNI_PLUGIN_H

#include <stddef.h>

#include "lib/cni_proto.h"

/* The CNI_* environment; NULL when unset or empty.  Borrowed. */
struct plugin_env {
	const char *command;
	const char *container_id;
	const char *netns;
	const char *ifname;
	const char *args;
	const char *path;
};


/* What the agent answered: the plugin prints stdout_text verbatim and
 * exits with exit_code.  stdout_text is malloc'ed, the caller frees. */
struct plugin_reply {
	int exit_code;
	char *stdout_text;
	size_t stdout_len;
};

/* Send env and the configuration (stdin, verbatim) to the agent at
 * socket_path, passing CNI_NETNS as an fd when it opens, and wait for the
 * reply.  0, or -1 with err filled: 11 "try again later" when the agent
 * is unreachable (50 for STATUS), 5 for a reply that makes no sense, 4/6/7
 * for input that cannot be sent.  Never prints. */
int plugin_forward(const struct plugin_env *env, const char *config, size_t config_len,
		   const char *socket_path, struct plugin_reply *reply, struct cni_err *err)
	__attribute__((warn_unused_result));

#endif
