/*
 * main.c — weft-cni, the CNI plugin (docs/cni.md): the container
 * runtime runs it with CNI_* in the environment and the network
 * configuration on stdin; it forwards the request to weft-agent on the
 * node and prints what the agent answers.
 *
 *   CNI_COMMAND --commands[]--> VERSION: answered here
 *                          \--> ADD DEL CHECK GC STATUS:
 *        stdin (<= CNI_CONFIG_MAX) -> required variables, container ID,
 *        ifname -> config is JSON -> agentSocket -> forward -> print
 *
 * Exit status: the agent's (0 or 1); 1 with a CNI error object on stdout
 * and one line on stderr for every error found here.  Nothing here keeps
 * state: a failed call can simply be repeated.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cni/plugin.h"
#include "lib/cni_proto.h"

enum need { NEED_ID = 1, NEED_NETNS = 2, NEED_IFNAME = 4 };

struct plugin {
	struct plugin_env env;
	char *config;			/* stdin, NUL-terminated */
	size_t config_len;
	json_t *conf;			/* config parsed, or NULL */
	const char *version;		/* the config's cniVersion, for errors */
	bool id_ok;			/* container ID fit for a log line */
};

static int version(struct plugin *p);
static int forward(struct plugin *p);

static const struct command {
	const char *name;
	int (*run)(struct plugin *p);
	unsigned need;
} commands[] = {
	{ "ADD", forward, NEED_ID | NEED_NETNS | NEED_IFNAME },
	{ "DEL", forward, NEED_ID | NEED_IFNAME },
	{ "CHECK", forward, NEED_ID | NEED_NETNS | NEED_IFNAME },
	{ "GC", forward, 0 },
	{ "STATUS", forward, 0 },
	{ "VERSION", version, 0 },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Prints a CNI error on stdout and a line on stderr; returns exit status 1. */
static int error(const struct plugin *p, int code, const char *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int error(const struct plugin *p, int code, const char *details, const char *fmt, ...)
{
	char msg[768];
	char *json;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json = cni_proto_error_json(p->version, code, msg, details);
	if (json)
		fputs(json, stdout);
	else
		printf("{\"cniVersion\":\"%s\",\"code\":%d,\"msg\":\"out of memory\"}\n",
		       CNI_PROTO_VERSION, code);
	fflush(stdout);
	free(json);
	fprintf(stderr, "weft-cni: %s%s%.255s%s%s%s%s (code %d)\n",
		p->env.command ? p->env.command : "", p->id_ok ? " " : "",
		p->id_ok ? p->env.container_id : "", p->env.command ? ": " : "", msg,
		details && details[0] ? ": " : "", details ? details : "", code);
	return 1;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

/* stdin into p->config: 0, -EFBIG over CNI_CONFIG_MAX, or -errno. */
static int read_stdin(struct plugin *p)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *bigger;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap - 1) {
			if (cap > CNI_CONFIG_MAX) {
				free(buf);
				return -EFBIG;
			}
			bigger = realloc(buf, cap * 2);
			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		n = read(STDIN_FILENO, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;

			free(buf);
			return e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > CNI_CONFIG_MAX) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	p->config = buf;
	p->config_len = len;
	return 0;
}

static int version(struct plugin *p)
{
	fputs(CNI_PROTO_VERSION_REPLY, stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* The log line for an error the agent answered. */
static void log_agent_error(const struct plugin *p, const struct plugin_reply *r)
{
	json_t *o = json_loadb(r->stdout_text, r->stdout_len, 0, NULL);
	const char *msg = json_string_value(json_object_get(o, "msg"));
	const char *details = json_string_value(json_object_get(o, "details"));

	fprintf(stderr, "weft-cni: %s%s%.255s: %s%s%s (code %lld, from weft-agent)\n",
		p->env.command, p->id_ok ? " " : "", p->id_ok ? p->env.container_id : "",
		msg ? msg : "failed", details && details[0] ? ": " : "", details ? details : "",
		(long long)json_integer_value(json_object_get(o, "code")));
	json_decref(o);
}

static int forward(struct plugin *p)
{
	const char *socket_path = CNI_DEFAULT_SOCKET;
	struct plugin_reply reply;
	struct cni_err err;
	json_t *s;
	int status;

	if (!json_is_object(p->conf))
		return error(p, CNI_ERR_DECODE, NULL, "network configuration is not a JSON object");
	s = json_object_get(p->conf, "agentSocket");
	if (s) {
		if (!json_is_string(s) || json_string_value(s)[0] != '/')
			return error(p, CNI_ERR_CONFIG, NULL,
				     "agentSocket must be the absolute path of weft-agent's socket");
		socket_path = json_string_value(s);
	}
	if (plugin_forward(&p->env, p->config, p->config_len, socket_path, &reply, &err) < 0)
		return error(p, err.code, err.details, "%s", err.msg);
	fwrite(reply.stdout_text, 1, reply.stdout_len, stdout);
	status = fflush(stdout) == 0 ? reply.exit_code : 1;
	if (reply.exit_code != 0)
		log_agent_error(p, &reply);
	free(reply.stdout_text);
	return status;
}

int main(void)
{
	struct plugin p = { 0 };
	const struct command *cmd = NULL;
	char missing[80] = "";
	const char *why;
	json_error_t jerr;
	int status, e;

	p.env.command = env("CNI_COMMAND");
	p.env.container_id = env("CNI_CONTAINERID");
	p.env.netns = env("CNI_NETNS");
	p.env.ifname = env("CNI_IFNAME");
	p.env.args = env("CNI_ARGS");
	p.env.path = env("CNI_PATH");

	if (!p.env.command)
		return error(&p, CNI_ERR_ENV, NULL,
			     "required environment variables missing: CNI_COMMAND");
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(p.env.command, commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		return error(&p, CNI_ERR_ENV, "known: ADD, DEL, CHECK, GC, STATUS, VERSION",
			     "unknown CNI_COMMAND \"%.64s\"", p.env.command);
	/* VERSION needs no configuration; do not wait on a terminal for one */
	if (cmd->run == version && isatty(STDIN_FILENO))
		return version(&p);

	e = read_stdin(&p);
	if (e == -EFBIG)
		return error(&p, CNI_ERR_CONFIG, NULL,
			     "network configuration on stdin is larger than %u bytes",
			     CNI_CONFIG_MAX);
	if (e < 0)
		return error(&p, CNI_ERR_IO, strerror(-e), "reading the network configuration");
	p.conf = json_loadb(p.config, p.config_len, 0, &jerr);
	p.version = json_string_value(json_object_get(p.conf, "cniVersion"));

	if ((cmd->need & NEED_ID) && !p.env.container_id)
		strcat(missing, ", CNI_CONTAINERID");
	if ((cmd->need & NEED_NETNS) && !p.env.netns)
		strcat(missing, ", CNI_NETNS");
	if ((cmd->need & NEED_IFNAME) && !p.env.ifname)
		strcat(missing, ", CNI_IFNAME");
	if (missing[0]) {
		status = error(&p, CNI_ERR_ENV, NULL, "required environment variables missing: %s",
			       missing + 2);
		goto out;
	}
	if (cmd->need & NEED_ID) {
		e = cni_proto_check_id(p.env.container_id);
		if (e < 0) {
			char shown[68];

			snprintf(shown, sizeof(shown), "%.64s", p.env.container_id);
			status = error(&p, CNI_ERR_ENV, shown,
				       e == -ENAMETOOLONG
					       ? "CNI_CONTAINERID is longer than 255 bytes"
					       : "invalid characters in CNI_CONTAINERID (must match "
						 "^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$)");
			goto out;
		}
		p.id_ok = true;
		if (cni_proto_check_ifname(p.env.ifname, &why) < 0) {
			status = error(&p, CNI_ERR_ENV, NULL, "invalid CNI_IFNAME \"%.64s\": %s",
				       p.env.ifname, why);
			goto out;
		}
		if (p.env.netns && strlen(p.env.netns) > CNI_NETNS_MAX) {
			status = error(&p, CNI_ERR_ENV, NULL, "CNI_NETNS is longer than %d bytes",
				       CNI_NETNS_MAX);
			goto out;
		}
	}
	if (!p.conf && cmd->run != version) {
		status = error(&p, CNI_ERR_DECODE, NULL,
			       "network configuration is not valid JSON: line %d column %d: %s",
			       jerr.line, jerr.column, jerr.text);
		goto out;
	}
	status = cmd->run(&p);
out:
	json_decref(p.conf);
	free(p.config);
	return status;
}
