/*
 * nodecred.c — node credentials, the admin's verbs:
 *
 *   weftctl node-credential issue NODE [--output-file FILE]
 *   weftctl node-credential list [NODE]
 *   weftctl node-credential revoke NAME... | --node NODE
 *
 * Each node's agent should hold its own credential (docs/api.md,
 * "Who may do what"): the controller binds it to the node, so that a leaked
 * node credential opens only what that node's agent may do.  `issue`
 * POSTs a NodeCredential to /apis/weft.io/v1/nodecredentials; the answer is
 * the only place its token ever appears, so it is written at once: to FILE
 * (--output-file; not --token-file, which is weftctl's own credential)
 * (mode 0600, created next to it and renamed over it, so a reader never
 * sees half a token), or to standard output when no file is named.  The
 * token is wiped from memory after.  `revoke --node` revokes every
 * credential of that node.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/print.h"

#define CRED_PATH "/apis/weft.io/v1/nodecredentials"

static const char usage[] =
	"issue NODE [--output-file FILE] | list [NODE] | revoke NAME... | revoke --node NODE";

static int usage_error(const char *msg)
{
	fprintf(stderr, "error: %s\nusage: weftctl node-credential %s\n", msg, usage);
	return CTL_EXIT_USAGE;
}

/* token + "\n" into path, 0600, atomically.  0 or -errno. */
static int write_token(const char *path, const char *token)
{
	char tmp[4200];
	size_t len = strlen(token);
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, token, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) != 0)
		err = -(errno ? errno : EIO);
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int issue_verb(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = { { "output-file", required_argument, NULL, 't' }, { 0 } };
	const char *file = NULL, *node, *name, *tok;
	struct ctl_reply r = { 0 };
	json_t *body;
	int c, rc = CTL_EXIT_FAIL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 't')
			return usage_error("unknown flag");
		file = optarg;
	}
	if (argc - optind != 1)
		return usage_error("issue takes one NODE");
	node = argv[optind];
	if (!ctl_name_ok("node", node))
		return CTL_EXIT_USAGE;
	body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "weft.io/v1", "kind", "NodeCredential", "spec",
			 "nodeName", node);
	if (!body || ctl_call(ctl, "POST", CRED_PATH, body, &r) < 0) {
		json_decref(body);
		return CTL_EXIT_FAIL;
	}
	json_decref(body);
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	name = obj_str(r.json, "metadata.name");
	tok = obj_str(r.json, "status.token");
	if (!name || !tok) {
		fprintf(stderr, "error: the server's answer to POST %s has no token\n", CRED_PATH);
		goto out;
	}
	if (!file) {
		printf("%s\n", tok);
		rc = fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAIL;
	} else if ((c = write_token(file, tok)) < 0) {
		fprintf(stderr, "error: %s: %s (nodecredential/%s is issued: revoke it)\n", file, strerror(-c), name);
	} else {
		printf("nodecredential/%s issued for node %s; token written to %s\n", name, node, file);
		rc = CTL_EXIT_OK;
	}
out:
	/* the token, in the raw answer and in its parsed copy */
	tok = obj_str(r.json, "status.token");
	if (tok)
		explicit_bzero((char *)tok, strlen(tok));
	if (r.body)
		explicit_bzero(r.body, r.len);
	ctl_reply_free(&r);
	return rc;
}

/* The credentials (of node, or all): the items of the list, borrowed from r. */
static const json_t *fetch(struct ctl *ctl, struct ctl_reply *r)
{
	if (ctl_call(ctl, "GET", CRED_PATH, NULL, r) < 0)
		return NULL;
	if (!ctl_ok(r)) {
		ctl_print_server_error(r);
		return NULL;
	}
	return ctl_reply_items(r, "GET", CRED_PATH);
}

static int list_verb(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_reply r = { 0 };
	const json_t *items, *it;
	const char *node = argc > 1 ? argv[1] : NULL;
	size_t i, n = 0;

	if (argc > 2)
		return usage_error("list takes at most one NODE");
	if (!(items = fetch(ctl, &r))) {
		ctl_reply_free(&r);
		return CTL_EXIT_FAIL;
	}
	json_array_foreach(items, i, it) {
		const char *nn = obj_str(it, "spec.nodeName");
		if (node && (!nn || strcmp(nn, node) != 0))
			continue;
		if (n++ == 0)
			printf("%-18s %-32s %s\n", "NAME", "NODE", "CREATED");
		printf("%-18s %-32s %s\n", obj_str(it, "metadata.name") ? obj_str(it, "metadata.name") : "?",
		       nn ? nn : "?", obj_str(it, "metadata.creationTimestamp") ?
		       obj_str(it, "metadata.creationTimestamp") : "");
	}
	if (!n)
		fprintf(stderr, "No resources found\n");
	ctl_reply_free(&r);
	return CTL_EXIT_OK;
}

static int revoke_one(struct ctl *ctl, const char *name, const char *node)
{
	char path[CTL_PATH_MAX];
	struct ctl_reply r = { 0 };
	int rc = CTL_EXIT_OK;

	snprintf(path, sizeof(path), "%s/%s", CRED_PATH, name);
	if (ctl_call(ctl, "DELETE", path, NULL, &r) < 0)
		return CTL_EXIT_FAIL;
	if (ctl_ok(&r)) {
		if (node)
			printf("nodecredential/%s revoked (node %s)\n", name, node);
		else
			printf("nodecredential/%s revoked\n", name);
	} else {
		ctl_print_server_error(&r);
		rc = CTL_EXIT_FAIL;
	}
	ctl_reply_free(&r);
	return rc;
}

static int revoke_verb(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_reply r = { 0 };
	const json_t *items, *it;
	size_t i, n = 0;
	int rc = CTL_EXIT_OK;

	if (argc == 3 && strcmp(argv[1], "--node") == 0) {
		if (!(items = fetch(ctl, &r))) {
			ctl_reply_free(&r);
			return CTL_EXIT_FAIL;
		}
		json_array_foreach(items, i, it) {
			const char *nn = obj_str(it, "spec.nodeName"), *name = obj_str(it, "metadata.name");
			if (!nn || !name || strcmp(nn, argv[2]) != 0)
				continue;
			n++;
			if (revoke_one(ctl, name, nn) != CTL_EXIT_OK)
				rc = CTL_EXIT_FAIL;
		}
		if (!n) {
			fprintf(stderr, "error: node %s has no credentials\n", argv[2]);
			rc = CTL_EXIT_FAIL;
		}
		ctl_reply_free(&r);
		return rc;
	}
	if (argc < 2)
		return usage_error("revoke takes NAME... or --node NODE");
	for (int k = 1; k < argc; k++)
		if (revoke_one(ctl, argv[k], NULL) != CTL_EXIT_OK)
			rc = CTL_EXIT_FAIL;
	return rc;
}

int ctl_nodecred(struct ctl *ctl, int argc, char **argv)
{
	if (argc < 2)
		return usage_error("which: issue, list or revoke?");
	if (strcmp(argv[1], "issue") == 0)
		return issue_verb(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "list") == 0)
		return list_verb(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "revoke") == 0)
		return revoke_verb(ctl, argc - 1, argv + 1);
	return usage_error("unknown action (issue, list, revoke)");
}
