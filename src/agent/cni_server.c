/*
 * cni_server.c — the agent's CNI socket (cni_server.h): requests from
 * weft-cni checked against the CNI specification, turned into calls of
 * the agent's cni_ops, and answered with a result or a CNI error.
 *
 * One request, from bytes to reply (handle):
 *
 *   request JSON --parse_request--> command + environment     (6, 4)
 *        |  check_env: required variables, ID, ifname, netns  (4)
 *        v
 *   config JSON --parse_config--> name, cniVersion, gates     (6, 7, 1)
 *        |  parse_args: CNI_ARGS K=V;..                       (4, 2)
 *        |  prevResult (CHECK), valid attachments (GC)        (7)
 *        v
 *   run: ops->add/del/check/gc/status under the GC lock
 *        |  (read side; GC takes the write side)
 *        v
 *   format_add (ADD) or "" --envelope--> {"exit":N,"stdout":".."}
 *
 * Any step that fails fills a struct cni_err; the reply is then the CNI
 * error object in the configuration's version (once known) with exit 1.
 *
 * Threads:
 *
 *   acceptor: wait for a free slot (active < CNI_SERVER_MAX_ACTIVE)
 *             -> poll(listen socket, wake pipe) -> accept -> worker thread
 *   worker:   recv frame (SO_RCVTIMEO) -> handle -> send -> close
 *             -> active-- (signal)
 *   stop:     stopping = 1, wake the acceptor, join it, wait active == 0
 *
 * Invariants
 *  1. At most CNI_SERVER_MAX_ACTIVE workers exist; the acceptor does not
 *     accept while that many run, so the rest wait in the listen backlog.
 *  2. A worker touches the server only before its final "active--" under
 *     srv->lock; cni_server_stop frees nothing before active is 0.
 *  3. GC holds gc_lock for writing, every other op for reading, so GC never
 *     overlaps ADD/DEL/CHECK/STATUS; the lock prefers writers, so a stream
 *     of ADDs cannot starve a GC.
 *  4. Everything taken from the request is bounded before use: the frame
 *     by CNI_PROTO_MAX, IDs by CNI_ID_MAX, netns by CNI_NETNS_MAX, ifnames
 *     by CNI_IFNAME_MAX; values quoted in messages are cut and made
 *     printable (show).
 */
#include "agent/cni_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/cni_proto.h"
#include "lib/histogram.h"

#define LISTEN_BACKLOG 256
#define SEND_TIMEOUT_MS 5000
#define POD_NAME_MAX 253	/* a Kubernetes name or namespace */
#define SHOW_MAX 64		/* bytes of a hostile value quoted in a message */

struct cni_server {
	const struct cni_ops *ops;
	void *ctx;
	int listen_fd;
	int wake[2];			/* stop writes, the acceptor polls */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;			/* the socket file we made */
	ino_t ino;
	pthread_t acceptor;
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* active or stopping changed */
	unsigned active;
	bool stopping;
	pthread_rwlock_t gc_lock;
};

/* Everything one request owns while it is handled. */
struct call {
	json_t *request;
	json_t *config;
	char *args;			/* CNI_ARGS, split in place */
	struct cni_attachment *valid;
	bool version_only;		/* VERSION: answered here */
	struct cni_req req;		/* pointers into the above */
};

static const struct {
	const char *name;
	enum cni_cmd cmd;
} commands[] = {
	{ "ADD", CNI_ADD },	{ "DEL", CNI_DEL },	  { "CHECK", CNI_CHECK },
	{ "GC", CNI_GC },	{ "STATUS", CNI_STATUS },
};

static const char *cmd_name(enum cni_cmd cmd)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].cmd == cmd)
			return commands[i].name;
	return "?";
}

#define fail cni_err_set

/* A value from the request, fit to quote in a message: at most SHOW_MAX
 * bytes, non-printable bytes as '?', "..." when cut. */
static const char *show(const char *s, char buf[SHOW_MAX + 4])
{
	size_t i;

	for (i = 0; s[i] && i < SHOW_MAX; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* "X.Y.Z" with decimal parts of at most 4 digits: 0, or -EINVAL. */
static int version_parse(const char *s, unsigned v[3])
{
	for (int part = 0; part < 3; part++) {
		int digits = 0;

		v[part] = 0;
		while (*s >= '0' && *s <= '9') {
			if (++digits > 4)
				return -EINVAL;
			v[part] = v[part] * 10 + (unsigned)(*s++ - '0');
		}
		if (!digits || *s != (part < 2 ? '.' : '\0'))
			return -EINVAL;
		s++;
	}
	return 0;
}

/* a >= b, both parseable */
static bool version_at_least(const char *a, const char *b)
{
	unsigned va[3], vb[3];

	if (version_parse(a, va) < 0 || version_parse(b, vb) < 0)
		return false;
	for (int i = 0; i < 3; i++)
		if (va[i] != vb[i])
			return va[i] > vb[i];
	return true;
}

/* A string member of the request, NULL when absent or empty. */
static int request_string(json_t *request, const char *key, const char **out,
			  struct cni_err *err)
{
	json_t *v = json_object_get(request, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return fail(err, CNI_ERR_DECODE, NULL,
			    "bad request from weft-cni: \"%s\" is not a string", key);
	if (json_string_value(v)[0])
		*out = json_string_value(v);
	return 0;
}

static int parse_request(struct call *c, const char *request, const char **command,
			 const char **args, const char **config, struct cni_err *err)
{
	json_error_t jerr;
	char show_buf[SHOW_MAX + 4];

	c->request = json_loads(request, 0, &jerr);
	if (!c->request || !json_is_object(c->request))
		return fail(err, CNI_ERR_DECODE, c->request ? NULL : jerr.text,
			    "bad request from weft-cni: not a JSON object");
	if (request_string(c->request, "command", command, err) < 0 ||
	    request_string(c->request, "containerID", &c->req.container_id, err) < 0 ||
	    request_string(c->request, "netns", &c->req.netns, err) < 0 ||
	    request_string(c->request, "ifname", &c->req.ifname, err) < 0 ||
	    request_string(c->request, "args", args, err) < 0 ||
	    request_string(c->request, "config", config, err) < 0)
		return -1;
	if (!*command)
		return fail(err, CNI_ERR_ENV, NULL,
			    "required environment variables missing: CNI_COMMAND");
	if (!strcmp(*command, "VERSION")) {
		c->version_only = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(*command, commands[i].name))
			c->req.cmd = commands[i].cmd;
	if (!c->req.cmd)
		return fail(err, CNI_ERR_ENV, "known: ADD, DEL, CHECK, GC, STATUS, VERSION",
			    "unknown CNI_COMMAND \"%s\"", show(*command, show_buf));
	return 0;
}

/* The environment a command needs (cni.md "Invocation"), every missing
 * variable named at once. */
static int check_env(struct cni_req *req, struct cni_err *err)
{
	bool need_id = req->cmd == CNI_ADD || req->cmd == CNI_DEL || req->cmd == CNI_CHECK;
	bool need_netns = req->cmd == CNI_ADD || req->cmd == CNI_CHECK;
	char missing[128] = "", show_buf[SHOW_MAX + 4];
	const char *why;
	int e;

	if (need_id && !req->container_id)
		strcat(missing, ", CNI_CONTAINERID");
	if (need_netns && !req->netns)
		strcat(missing, ", CNI_NETNS");
	if (need_id && !req->ifname)
		strcat(missing, ", CNI_IFNAME");
	if (missing[0])
		return fail(err, CNI_ERR_ENV, NULL, "required environment variables missing: %s",
			    missing + 2);
	if (!need_id) {
		/* GC and STATUS concern the whole network, not one container */
		req->container_id = req->ifname = req->netns = NULL;
		return 0;
	}
	e = cni_proto_check_id(req->container_id);
	if (e == -ENAMETOOLONG)
		return fail(err, CNI_ERR_ENV, NULL, "CNI_CONTAINERID is longer than %d bytes",
			    CNI_ID_MAX);
	if (e < 0)
		return fail(err, CNI_ERR_ENV, show(req->container_id, show_buf),
			    "invalid characters in CNI_CONTAINERID (must match "
			    "^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$)");
	if (cni_proto_check_ifname(req->ifname, &why) < 0)
		return fail(err, CNI_ERR_ENV, show(req->ifname, show_buf),
			    "invalid CNI_IFNAME: %s", why);
	if (req->netns && strlen(req->netns) > CNI_NETNS_MAX)
		return fail(err, CNI_ERR_ENV, NULL, "CNI_NETNS is longer than %d bytes",
			    CNI_NETNS_MAX);
	return 0;
}

/* cniVersion, or the highest supported of a 1.1.0 list's cniVersions. */
static int pick_version(struct call *c, struct cni_err *err)
{
	json_t *v = json_object_get(c->config, "cniVersion");
	json_t *list = json_object_get(c->config, "cniVersions"), *item;
	char show_buf[SHOW_MAX + 4];
	unsigned parts[3];
	size_t i;

	if (!v && list) {
		if (!json_is_array(list))
			return fail(err, CNI_ERR_DECODE, NULL, "cniVersions is not a list");
		json_array_foreach(list, i, item) {
			const char *s = json_string_value(item);

			if (!s)
				return fail(err, CNI_ERR_DECODE, NULL,
					    "cniVersions[%zu] is not a string", i);
			if (cni_proto_version_supported(s) &&
			    (!c->req.cni_version || version_at_least(s, c->req.cni_version)))
				c->req.cni_version = s;
		}
		if (!c->req.cni_version)
			return fail(err, CNI_ERR_VERSION,
				    "weft-cni supports 0.1.0 to " CNI_PROTO_VERSION,
				    "incompatible CNI versions: none of cniVersions is supported");
		return 0;
	}
	if (!v)
		return fail(err, CNI_ERR_DECODE, NULL, "network configuration has no cniVersion");
	if (!json_is_string(v) || version_parse(json_string_value(v), parts) < 0)
		return fail(err, CNI_ERR_DECODE, NULL,
			    "cniVersion %s is not a version (X.Y.Z)",
			    json_is_string(v) ? show(json_string_value(v), show_buf) : "(not a string)");
	if (!cni_proto_version_supported(json_string_value(v)))
		return fail(err, CNI_ERR_VERSION,
			    "weft-cni supports 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0",
			    "incompatible CNI version %s", json_string_value(v));
	c->req.cni_version = json_string_value(v);
	return 0;
}

static int parse_config(struct call *c, const char *config, struct cni_err *err)
{
	struct cni_req *req = &c->req;
	json_error_t jerr;
	json_t *name, *prev;
	char details[sizeof(jerr.text) + 64], show_buf[SHOW_MAX + 4];
	int e;

	if (!config)
		return fail(err, CNI_ERR_DECODE, NULL, "no network configuration on stdin");
	c->config = json_loads(config, 0, &jerr);
	if (!c->config) {
		snprintf(details, sizeof(details), "line %d column %d: %s", jerr.line,
			 jerr.column, jerr.text);
		return fail(err, CNI_ERR_DECODE, details,
			    "network configuration is not valid JSON");
	}
	if (!json_is_object(c->config))
		return fail(err, CNI_ERR_DECODE, NULL,
			    "network configuration is not a JSON object");
	req->config = c->config;

	/* the version first: every later error is reported in it */
	if (pick_version(c, err) < 0)
		return -1;
	if (req->cmd == CNI_CHECK && !version_at_least(req->cni_version, "0.4.0"))
		return fail(err, CNI_ERR_VERSION, NULL,
			    "CHECK needs cniVersion 0.4.0 or later, the configuration has %s",
			    req->cni_version);
	if ((req->cmd == CNI_GC || req->cmd == CNI_STATUS) &&
	    !version_at_least(req->cni_version, "1.1.0"))
		return fail(err, CNI_ERR_VERSION, NULL,
			    "%s needs cniVersion 1.1.0 or later, the configuration has %s",
			    cmd_name(req->cmd), req->cni_version);

	name = json_object_get(c->config, "name");
	if (!json_is_string(name))
		return fail(err, CNI_ERR_CONFIG, NULL,
			    name ? "network \"name\" is not a string"
				 : "network configuration has no \"name\"");
	req->network = json_string_value(name);
	e = cni_proto_check_id(req->network);
	if (e == -ENAMETOOLONG)
		return fail(err, CNI_ERR_CONFIG, NULL, "network name is longer than %d bytes",
			    CNI_ID_MAX);
	if (e < 0)
		return fail(err, CNI_ERR_CONFIG, "must match ^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$",
			    "invalid network name \"%s\"", show(req->network, show_buf));

	prev = json_object_get(c->config, "prevResult");
	if (prev && !json_is_null(prev)) {
		if (!json_is_object(prev))
			return fail(err, CNI_ERR_CONFIG, NULL, "prevResult is not an object");
		req->prev_result = prev;
	}
	if (req->cmd == CNI_CHECK && !req->prev_result)
		return fail(err, CNI_ERR_CONFIG, NULL, "CHECK needs prevResult in the configuration");
	return 0;
}

/* CNI_ARGS "K=V;K=V": K8S_POD_NAMESPACE and K8S_POD_NAME kept; every K8S_*
 * key and IgnoreUnknown known; any other key an error unless
 * IgnoreUnknown is 1/true. */
static int parse_args(struct call *c, const char *args, struct cni_err *err)
{
	struct cni_req *req = &c->req;
	const char *unknown_key = NULL, *unknown_value = NULL;
	char show_key[SHOW_MAX + 4], show_value[SHOW_MAX + 4];
	bool ignore_unknown = false;
	char *pair, *next;

	if (!args)
		return 0;
	c->args = strdup(args);
	if (!c->args)
		return fail(err, CNI_ERR_IO, NULL, "out of memory");
	for (pair = c->args; pair; pair = next) {
		char *eq, *key, *value;

		next = strchr(pair, ';');
		if (next)
			*next++ = '\0';
		if (!pair[0])
			continue;		/* "A=1;;B=2", a trailing ';' */
		eq = strchr(pair, '=');
		if (!eq || eq == pair)
			return fail(err, CNI_ERR_ENV, "CNI_ARGS is K=V;K=V",
				    "invalid CNI_ARGS pair \"%s\"", show(pair, show_key));
		*eq = '\0';
		key = pair;
		value = eq + 1;
		if (!strcmp(key, "IgnoreUnknown")) {
			ignore_unknown = !strcmp(value, "1") || !strcasecmp(value, "true");
		} else if (!strcmp(key, "K8S_POD_NAMESPACE") || !strcmp(key, "K8S_POD_NAME")) {
			if (strlen(value) > POD_NAME_MAX)
				return fail(err, CNI_ERR_ENV, NULL,
					    "CNI_ARGS %s is longer than %d bytes", key,
					    POD_NAME_MAX);
			if (!strcmp(key, "K8S_POD_NAMESPACE"))
				req->pod_namespace = value[0] ? value : NULL;
			else
				req->pod_name = value[0] ? value : NULL;
		} else if (strncmp(key, "K8S_", 4) != 0 && !unknown_key) {
			unknown_key = key;
			unknown_value = value;
		}
	}
	if (unknown_key && !ignore_unknown)
		return fail(err, CNI_ERR_UNSUPPORTED_FIELD,
			    "set IgnoreUnknown=1 in CNI_ARGS to ignore keys weft does not know",
			    "unknown CNI_ARGS key \"%s\" (value \"%s\")",
			    show(unknown_key, show_key), show(unknown_value, show_value));
	return 0;
}

/* GC: the attachments to keep, [{containerID, ifname}] under
 * cni.dev/valid-attachments (or the older cni.dev/attachments).  A list
 * that is absent is an error (keeping nothing by mistake would cut every
 * pod off); null is an empty list. */
static int parse_gc(struct call *c, struct cni_err *err)
{
	const char *key = "cni.dev/valid-attachments";
	json_t *list = json_object_get(c->config, key), *item;
	size_t i;

	if (!list) {
		key = "cni.dev/attachments";
		list = json_object_get(c->config, key);
	}
	if (!list)
		return fail(err, CNI_ERR_CONFIG, NULL,
			    "GC needs cni.dev/valid-attachments in the configuration");
	if (json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return fail(err, CNI_ERR_CONFIG, NULL, "%s is not a list", key);
	if (json_array_size(list) == 0)
		return 0;
	c->valid = calloc(json_array_size(list), sizeof(*c->valid));
	if (!c->valid)
		return fail(err, CNI_ERR_IO, NULL, "out of memory");
	json_array_foreach(list, i, item) {
		const char *id = json_string_value(json_object_get(item, "containerID"));
		const char *ifname = json_string_value(json_object_get(item, "ifname"));

		if (!id || !ifname)
			return fail(err, CNI_ERR_CONFIG, NULL,
				    "%s[%zu] needs string containerID and ifname", key, i);
		c->valid[i].container_id = id;
		c->valid[i].ifname = ifname;
	}
	c->req.valid = c->valid;
	c->req.n_valid = json_array_size(list);
	return 0;
}

static int prepare(struct call *c, const char *request, struct cni_err *err)
{
	const char *command = NULL, *args = NULL, *config = NULL;

	if (parse_request(c, request, &command, &args, &config, err) < 0)
		return -1;
	if (c->version_only)
		return 0;
	if (check_env(&c->req, err) < 0 || parse_config(c, config, err) < 0 ||
	    parse_args(c, args, err) < 0)
		return -1;
	if (c->req.cmd == CNI_GC && parse_gc(c, err) < 0)
		return -1;
	return 0;
}

static void format_mac(const uint8_t mac[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		 mac[4], mac[5]);
}

/* The ADD result in the configuration's version (cni.md "Result"):
 * 1.1.0 with the pod's MTU, 1.0.0 without, 0.3.x/0.4.0 with "version":"4"
 * on the IPs, 0.1.0/0.2.0 as the old "ip4" object.  NULL when out of
 * memory or when the op's names are not text. */
static char *format_add(const struct cni_req *req, struct cni_add_result *r)
{
	const char *v = req->cni_version;
	char ip[INET_ADDRSTRLEN + 3], gw[INET_ADDRSTRLEN], host_mac[18], pod_mac[18];
	json_t *o = NULL, *ifs, *pod, *ipc;
	char *line = NULL;
	struct in_addr a;

	r->host_ifname[sizeof(r->host_ifname) - 1] = '\0';
	r->pod_ifname[sizeof(r->pod_ifname) - 1] = '\0';
	a.s_addr = r->ip;
	inet_ntop(AF_INET, &a, ip, INET_ADDRSTRLEN);
	strcat(ip, "/32");
	a.s_addr = r->gateway;
	inet_ntop(AF_INET, &a, gw, sizeof(gw));
	format_mac(r->host_mac, host_mac);
	format_mac(r->pod_mac, pod_mac);

	if (!version_at_least(v, "0.3.0")) {
		o = json_pack("{s:s,s:{s:s,s:s,s:[{s:s,s:s}]},s:{}}", "cniVersion", v, "ip4",
			      "ip", ip, "gateway", gw, "routes", "dst", "0.0.0.0/0", "gw", gw,
			      "dns");
		goto dump;
	}
	pod = json_pack("{s:s,s:s}", "name", r->pod_ifname, "mac", pod_mac);
	if (pod && version_at_least(v, "1.1.0") && r->mtu > 0)
		json_object_set_new(pod, "mtu", json_integer(r->mtu));
	if (pod)
		json_object_set_new(pod, "sandbox", json_string(req->netns ? req->netns : ""));
	ifs = json_pack("[{s:s,s:s},o]", "name", r->host_ifname, "mac", host_mac, pod);
	ipc = json_pack("{s:s,s:s,s:i}", "address", ip, "gateway", gw, "interface", 1);
	if (ipc && !version_at_least(v, "1.0.0"))
		json_object_set_new(ipc, "version", json_string("4"));
	o = json_pack("{s:s,s:o,s:[o],s:[{s:s,s:s}],s:{}}", "cniVersion", v, "interfaces", ifs,
		      "ips", ipc, "routes", "dst", "0.0.0.0/0", "gw", gw, "dns");
dump:
	if (!o)
		goto out;
	line = cni_proto_json_line(o);
out:
	json_decref(o);
	return line;
}

static int run(const struct cni_ops *ops, void *ctx, struct call *c, pthread_rwlock_t *gc_lock,
	       char **out, struct cni_err *err)
{
	const struct cni_req *req = &c->req;
	struct cni_add_result res;
	uint64_t t0 = histogram_now();
	int rc;

	memset(&res, 0, sizeof(res));
	memset(err, 0, sizeof(*err));
	if (gc_lock) {
		if (req->cmd == CNI_GC)
			pthread_rwlock_wrlock(gc_lock);
		else
			pthread_rwlock_rdlock(gc_lock);
	}
	switch (req->cmd) {
	case CNI_ADD:
		rc = ops->add ? ops->add(ctx, req, &res, err) : -1;
		break;
	case CNI_DEL:
		rc = ops->del ? ops->del(ctx, req, err) : -1;
		break;
	case CNI_CHECK:
		rc = ops->check ? ops->check(ctx, req, err) : -1;
		break;
	case CNI_GC:
		rc = ops->gc ? ops->gc(ctx, req, err) : -1;
		break;
	case CNI_STATUS:
	default:
		rc = ops->status ? ops->status(ctx, req, err) : -1;
		break;
	}
	if (gc_lock)
		pthread_rwlock_unlock(gc_lock);
	if (ops->done)
		ops->done(ctx, req->cmd, histogram_now() - t0, rc != 0);

	if (rc != 0) {
		/* an op that failed without saying how is an agent bug */
		err->msg[sizeof(err->msg) - 1] = '\0';
		err->details[sizeof(err->details) - 1] = '\0';
		if (err->code <= 0)
			err->code = CNI_ERR_IO;
		if (!err->msg[0])
			snprintf(err->msg, sizeof(err->msg), "%s failed in weft-agent",
				 cmd_name(req->cmd));
		return -1;
	}
	if (req->cmd == CNI_ADD) {
		*out = format_add(req, &res);
		if (!*out)
			return fail(err, CNI_ERR_IO, NULL, "weft-agent could not format the result");
	}
	return 0;
}

static char *envelope(int exit_code, const char *stdout_text)
{
	json_t *o = json_pack("{s:i,s:s}", "exit", exit_code, "stdout", stdout_text);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

static char *handle(const struct cni_ops *ops, void *ctx, const char *request, int netns_fd,
		    pthread_rwlock_t *gc_lock)
{
	struct cni_err err;
	struct call c;
	char *out = NULL, *reply;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	c.req.netns_fd = netns_fd;
	rc = prepare(&c, request ? request : "", &err);
	if (rc == 0 && c.version_only) {
		out = strdup(CNI_PROTO_VERSION_REPLY);
		if (!out)
			rc = fail(&err, CNI_ERR_IO, NULL, "out of memory");
	} else if (rc == 0) {
		rc = run(ops, ctx, &c, gc_lock, &out, &err);
	}
	if (rc != 0) {
		const char *version = c.req.cni_version;

		/* before the version was settled, echo the config's if it is one */
		if (!version && c.config)
			version = json_string_value(json_object_get(c.config, "cniVersion"));
		free(out);
		out = cni_proto_error_json(version, err.code, err.msg, err.details);
	}
	reply = out || rc == 0 ? envelope(rc ? 1 : 0, out ? out : "") : NULL;
	free(out);
	free(c.valid);
	free(c.args);
	json_decref(c.config);
	json_decref(c.request);
	return reply;
}

char *cni_server_handle(const struct cni_ops *ops, void *ctx, const char *request, int netns_fd)
{
	return handle(ops, ctx, request, netns_fd, NULL);
}

/* ---- the socket and its threads ---- */

struct worker_arg {
	struct cni_server *srv;
	int fd;
};

static void set_timeout(int fd, int opt, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

static void *worker(void *p)
{
	struct worker_arg *arg = p;
	struct cni_server *srv = arg->srv;
	char *request = NULL, *reply = NULL;
	int netns_fd = -1, e;
	size_t len;

	e = cni_proto_recv(arg->fd, &request, &len, &netns_fd);
	if (e == -EMSGSIZE) {
		char *text = cni_proto_error_json(NULL, CNI_ERR_IO, "request larger than 1 MiB", NULL);

		reply = text ? envelope(1, text) : NULL;
		free(text);
	} else if (e == 0) {
		reply = handle(srv->ops, srv->ctx, request, netns_fd, &srv->gc_lock);
	}
	/* a reply that cannot be sent: the plugin is gone or stuck, and says so */
	if (reply)
		(void)!cni_proto_send(arg->fd, reply, strlen(reply), -1);
	free(reply);
	free(request);
	if (netns_fd >= 0)
		close(netns_fd);
	close(arg->fd);
	free(arg);

	pthread_mutex_lock(&srv->lock);
	srv->active--;
	pthread_cond_broadcast(&srv->changed);
	pthread_mutex_unlock(&srv->lock);	/* srv may be freed from here on */
	return NULL;
}

static void pause_briefly(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void *acceptor(void *p)
{
	struct cni_server *srv = p;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = srv->listen_fd, .events = POLLIN },
			{ .fd = srv->wake[0], .events = POLLIN },
		};
		struct worker_arg *arg;
		pthread_t t;
		int fd;

		pthread_mutex_lock(&srv->lock);
		while (srv->active >= CNI_SERVER_MAX_ACTIVE && !srv->stopping)
			pthread_cond_wait(&srv->changed, &srv->lock);
		if (srv->stopping) {
			pthread_mutex_unlock(&srv->lock);
			break;
		}
		pthread_mutex_unlock(&srv->lock);

		if (poll(pfd, 2, -1) < 0) {
			if (errno != EINTR)
				pause_briefly();
			continue;
		}
		if (pfd[1].revents)
			continue;	/* stopping: seen at the top */
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* EMFILE and friends: the connection waits, we retry */
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				pause_briefly();
			continue;
		}
		set_timeout(fd, SO_RCVTIMEO, CNI_SERVER_RECV_TIMEOUT_MS);
		set_timeout(fd, SO_SNDTIMEO, SEND_TIMEOUT_MS);
		arg = malloc(sizeof(*arg));
		if (!arg) {
			close(fd);
			pause_briefly();
			continue;
		}
		arg->srv = srv;
		arg->fd = fd;
		pthread_mutex_lock(&srv->lock);
		srv->active++;
		pthread_mutex_unlock(&srv->lock);
		if (pthread_create(&t, &attr, worker, arg) != 0) {
			/* the plugin sees the connection close: "try again later" */
			close(fd);
			free(arg);
			pthread_mutex_lock(&srv->lock);
			srv->active--;
			pthread_mutex_unlock(&srv->lock);
			pause_briefly();
		}
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

/* An existing file at path: a socket nobody answers on is stale (removed);
 * one that answers belongs to a running agent (-EADDRINUSE); anything else
 * is not ours to remove (-EEXIST). */
static int clear_stale(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, e = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0)
		e = -EADDRINUSE;
	else if (unlink(path) < 0 && errno != ENOENT)
		e = -errno;
	close(fd);
	return e;
}

/* mkdir of the socket's directory (one level, 0755), when missing */
static void make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	(void)mkdir(dir, 0755);
}

struct cni_server *cni_server_start(const char *path, const struct cni_ops *ops, void *ctx,
				    char *errbuf, size_t errlen)
{
	struct cni_server *srv = NULL;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	pthread_rwlockattr_t rwattr;
	const char *step = "";
	struct stat st;
	int e = 0, stage = 0;

	if (!path || !ops || !ops->add || !ops->del || !ops->check || !ops->gc || !ops->status) {
		e = -EINVAL;
		step = "every cni_ops member is needed";
		goto out;
	}
	if (strlen(path) >= sizeof(addr.sun_path)) {
		e = -ENAMETOOLONG;
		step = "socket path";
		goto out;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		e = -ENOMEM;
		goto out;
	}
	srv->ops = ops;
	srv->ctx = ctx;
	srv->listen_fd = srv->wake[0] = srv->wake[1] = -1;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->changed, NULL);
	pthread_rwlockattr_init(&rwattr);
	pthread_rwlockattr_setkind_np(&rwattr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&srv->gc_lock, &rwattr);
	pthread_rwlockattr_destroy(&rwattr);
	stage = 1;

	make_parent(path);
	e = clear_stale(path, &addr);
	if (e < 0) {
		step = e == -EADDRINUSE ? "another weft-agent is serving it"
		     : e == -EEXIST	? "exists and is not a socket"
					: "removing the stale socket";
		goto out;
	}
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (srv->listen_fd < 0) {
		e = -errno;
		step = "socket";
		goto out;
	}
	/* the mode bind gives the file comes from the socket inode: no window
	 * in which others may connect (chmod below for the record) */
	(void)fchmod(srv->listen_fd, 0600);
	if (bind(srv->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		e = -errno;
		step = "bind";
		goto out;
	}
	if (chmod(path, 0600) < 0 || stat(path, &st) < 0) {
		e = -errno;
		step = "chmod";
		unlink(path);
		goto out;
	}
	srv->dev = st.st_dev;
	srv->ino = st.st_ino;
	if (listen(srv->listen_fd, LISTEN_BACKLOG) < 0 ||
	    pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		e = -errno;
		step = "listen";
		unlink(path);
		goto out;
	}
	e = -pthread_create(&srv->acceptor, NULL, acceptor, srv);
	if (e < 0) {
		step = "starting the accept thread";
		unlink(path);
		goto out;
	}
out:
	if (e < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "CNI socket %s: %s%s%s", path ? path : "(null)",
				 step, step[0] ? ": " : "", strerror(-e));
		if (srv) {
			if (srv->listen_fd >= 0)
				close(srv->listen_fd);
			if (srv->wake[0] >= 0)
				close(srv->wake[0]);
			if (srv->wake[1] >= 0)
				close(srv->wake[1]);
			if (stage) {
				pthread_rwlock_destroy(&srv->gc_lock);
				pthread_cond_destroy(&srv->changed);
				pthread_mutex_destroy(&srv->lock);
			}
			free(srv);
		}
		errno = -e;
		return NULL;
	}
	return srv;
}

void cni_server_stop(struct cni_server *srv)
{
	struct stat st;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->changed);
	pthread_mutex_unlock(&srv->lock);
	(void)!write(srv->wake[1], "x", 1);
	pthread_join(srv->acceptor, NULL);

	/* connections still in the backlog are reset here; their plugins
	 * report "try again later" */
	close(srv->listen_fd);
	pthread_mutex_lock(&srv->lock);
	while (srv->active > 0)
		pthread_cond_wait(&srv->changed, &srv->lock);
	pthread_mutex_unlock(&srv->lock);

	/* remove the socket file only if it is still the one we made */
	if (stat(srv->path, &st) == 0 && st.st_dev == srv->dev && st.st_ino == srv->ino)
		unlink(srv->path);
	close(srv->wake[0]);
	close(srv->wake[1]);
	pthread_rwlock_destroy(&srv->gc_lock);
	pthread_cond_destroy(&srv->changed);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
