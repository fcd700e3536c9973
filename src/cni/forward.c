/*
 * forward.c — weft-cni's one exchange with weft-agent (lib/cni_proto.h):
 *
 *   build request JSON (env + stdin) -> open CNI_NETNS (best effort)
 *     -> connect(socket) -> send frame [+ netns fd] -> recv frame
 *     -> {"exit":N,"stdout":".."} checked -> reply
 *
 * A failure to reach the agent, or an agent that hangs up or stays silent
 * for REPLY_TIMEOUT_S, is "try again later" (11), or for STATUS "plugin
 * not available" (50): the runtime retries, nothing was half done on the
 * plugin's side.
 */
#include "cni/plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/cni_proto.h"

#define SEND_TIMEOUT_S 10
#define REPLY_TIMEOUT_S 120	/* an ADD under load takes seconds, not minutes */

#define fail cni_err_set

/* The agent could not be asked, or did not answer. */
static int unreachable(struct cni_err *err, const struct plugin_env *env,
		       const char *socket_path, const char *what, int e)
{
	if (!strcmp(env->command, "STATUS"))
		return fail(err, CNI_ERR_NOT_AVAILABLE, strerror(e),
			    "weft-agent is not running at %s", socket_path);
	return fail(err, CNI_ERR_TRY_LATER, NULL, "try again later: weft-agent %s %s: %s", what,
		    socket_path, strerror(e));
}

static int add_env(json_t *req, const char *key, const char *value, const char *var,
		   struct cni_err *err)
{
	json_t *s;

	if (!value)
		return 0;
	s = json_string(value);
	if (!s || json_object_set_new(req, key, s) < 0)
		return fail(err, CNI_ERR_ENV, NULL, "%s is not valid UTF-8", var);
	return 0;
}

static int build_request(const struct plugin_env *env, const char *config, size_t config_len,
			 char **out, struct cni_err *err)
{
	json_t *req = json_object(), *conf;
	int e = -1;

	*out = NULL;
	if (!req)
		return fail(err, CNI_ERR_IO, NULL, "out of memory");
	if (add_env(req, "command", env->command, "CNI_COMMAND", err) < 0 ||
	    add_env(req, "containerID", env->container_id, "CNI_CONTAINERID", err) < 0 ||
	    add_env(req, "netns", env->netns, "CNI_NETNS", err) < 0 ||
	    add_env(req, "ifname", env->ifname, "CNI_IFNAME", err) < 0 ||
	    add_env(req, "args", env->args, "CNI_ARGS", err) < 0 ||
	    add_env(req, "path", env->path, "CNI_PATH", err) < 0)
		goto out;
	conf = json_stringn(config, config_len);
	if (!conf || json_object_set_new(req, "config", conf) < 0) {
		fail(err, CNI_ERR_DECODE, NULL, "network configuration is not valid UTF-8 text");
		goto out;
	}
	*out = json_dumps(req, JSON_COMPACT);
	if (!*out) {
		fail(err, CNI_ERR_IO, NULL, "out of memory");
		goto out;
	}
	if (strlen(*out) > CNI_PROTO_MAX) {
		fail(err, CNI_ERR_CONFIG, NULL, "request to weft-agent larger than %u bytes",
		     CNI_PROTO_MAX);
		free(*out);
		*out = NULL;
		goto out;
	}
	e = 0;
out:
	json_decref(req);
	return e;
}

static void set_timeout(int fd, int opt, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	(void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/* {"exit":N,"stdout":".."} into reply. */
static int parse_reply(const char *text, size_t len, struct plugin_reply *reply,
		       struct cni_err *err)
{
	json_t *o = json_loadb(text, len, 0, NULL);
	json_t *code = json_object_get(o, "exit"), *out = json_object_get(o, "stdout");
	int e = -1;

	if (!json_is_integer(code) || !json_is_string(out)) {
		fail(err, CNI_ERR_IO, NULL, "weft-agent sent a reply weft-cni does not understand");
		goto out;
	}
	reply->stdout_len = json_string_length(out);
	reply->stdout_text = malloc(reply->stdout_len + 1);
	if (!reply->stdout_text) {
		fail(err, CNI_ERR_IO, NULL, "out of memory");
		goto out;
	}
	memcpy(reply->stdout_text, json_string_value(out), reply->stdout_len + 1);
	reply->exit_code = json_integer_value(code) < 0 || json_integer_value(code) > 255
				   ? 1
				   : (int)json_integer_value(code);
	e = 0;
out:
	json_decref(o);
	return e;
}

int plugin_forward(const struct plugin_env *env, const char *config, size_t config_len,
		   const char *socket_path, struct plugin_reply *reply, struct cni_err *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char *request = NULL, *answer = NULL;
	int sock = -1, netns_fd = -1, e = -1, se;
	size_t len;

	memset(reply, 0, sizeof(*reply));
	if (strlen(socket_path) >= sizeof(addr.sun_path))
		return fail(err, CNI_ERR_CONFIG, NULL, "agentSocket is longer than %zu bytes",
			    sizeof(addr.sun_path) - 1);
	memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);
	if (build_request(env, config, config_len, &request, err) < 0)
		goto out;

	/* the agent may not share our mount namespace: pass the netns itself
	 * when it opens; when it does not (DEL after the pod is gone), the
	 * agent decides what that means (O_NONBLOCK: a FIFO there must not
	 * hang us) */
	if (env->netns)
		netns_fd = open(env->netns, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		fail(err, CNI_ERR_IO, NULL, "socket: %s", strerror(errno));
		goto out;
	}
	set_timeout(sock, SO_SNDTIMEO, SEND_TIMEOUT_S);
	set_timeout(sock, SO_RCVTIMEO, REPLY_TIMEOUT_S);
	while ((se = connect(sock, (struct sockaddr *)&addr, sizeof(addr))) < 0 && errno == EINTR)
		;
	if (se < 0 && errno == EISCONN)
		se = 0;		/* an interrupted connect completed meanwhile */
	if (se < 0) {
		unreachable(err, env, socket_path, "not reachable at", errno);
		goto out;
	}
	se = cni_proto_send(sock, request, strlen(request), netns_fd);
	if (se < 0) {
		unreachable(err, env, socket_path, "did not take the request at", -se);
		goto out;
	}
	se = cni_proto_recv(sock, &answer, &len, NULL);
	if (se < 0) {
		unreachable(err, env, socket_path, "did not answer at", -se);
		goto out;
	}
	e = parse_reply(answer, len, reply, err);
out:
	if (sock >= 0)
		close(sock);
	if (netns_fd >= 0)
		close(netns_fd);
	free(answer);
	free(request);
	return e;
}
