/*
 * flows.c — `weftctl flows [--follow|-f] [--pod NAMESPACE/NAME] [--node NAME]
 * [--verdict dropped|forwarded] [-o json]`: the flows the nodes' data planes
 * logged (drops, new connections and their replies, samples of UDP and
 * ICMP), one line each, as the controller relays them from every node
 * (docs/trace.md, "Flows").
 *
 * How: GET /apis/network.weft.io/v1/flows with the filters as query
 * parameters (follow=true, verdict=, node=, and ip= the pod's address for
 * --pod, read from the pod's status.podIP first), streamed with
 * httpc_stream: each line (application/x-ndjson, one JSON object a line,
 * empty lines as heartbeats) is printed as it arrives, stdout flushed after
 * each so that a pipe sees it at once.  flows_format_line (flows.h) makes
 * the human line; -o json prints every line as it came.
 *
 * Without --follow the command ends when the controller ends the response
 * (with the events the nodes kept); with --follow it runs until SIGINT or
 * SIGTERM, whose handler cancels the stream (httpc_cancel is
 * async-signal-safe), as `get -w` does (watch.c).
 *
 * Exit: 0 done (or interrupted); 1 the request failed (the controller
 * unreachable, an error status, a --follow stream the controller ended)
 * or a node could not be read (an error line); 2 a bad argument, or a
 * --pod that does not exist or has no address yet.
 */
#include "ctl/flows.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"
#include "ctl/stop.h"

#define FLOWS_API_PATH "/apis/network.weft.io/v1/flows"

static const char usage[] = "[--follow|-f] [--pod NAMESPACE/NAME] [--node NAME] [--verdict dropped|forwarded] [-o json]";

/* ---- one line ---- */

struct text {
	char *buf;
	size_t size, used;		/* used < size: buf is always NUL-terminated */
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->used + 1 >= t->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->used, t->size - t->used, fmt, ap);
	va_end(ap);
	if (n < 0)
		t->buf[t->used] = 0;
	else
		t->used = (size_t)n < t->size - t->used ? t->used + (size_t)n : t->size - 1;
}

/* Every control byte of s written '?': the server's text cannot drive the terminal. */
static void plain(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* n decimal digits at *p into *v, *p moved past them: 0, or -EINVAL. */
static int digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -EINVAL;
		*v = *v * 10 + (**p - '0');
	}
	return 0;
}

/* An RFC 3339 time ("2026-11-28T18:00:00.123456789Z", or with an offset)
 * as its UTC clock to the millisecond, "18:00:00.123": 0, or -EINVAL. */
static int clock_of(const char *s, char *out, size_t len)
{
	struct tm tm = { 0 };
	int year, month, day, hour, min, sec, ms = 0, oh = 0, om = 0, sign = 0, d;
	time_t t;

	if (digits(&s, 4, &year) || *s++ != '-' || digits(&s, 2, &month) || *s++ != '-' || digits(&s, 2, &day) ||
	    *s++ != 'T' || digits(&s, 2, &hour) || *s++ != ':' || digits(&s, 2, &min) || *s++ != ':' ||
	    digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		int shown = 0;

		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++)
			if (shown < 3) {
				ms = ms * 10 + (*s - '0');
				shown++;
			}
		for (; shown < 3; shown++)
			ms *= 10;
	}
	if (*s == 'Z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
		return -EINVAL;
	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm) - (time_t)sign * (oh * 3600 + om * 60);
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	d = snprintf(out, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	return d > 0 && (size_t)d < len ? 0 : -EINVAL;
}

/* One end of an event: "x/a (10.128.0.2:37264)", or "10.128.0.2:37264"
 * when the node does not know the address as a pod, without ":PORT" when
 * it has none (ICMP).  0, or -EINVAL when it has no address. */
static int put_end(struct text *t, const json_t *end)
{
	const char *ip = json_string_value(json_object_get(end, "ip"));
	const char *pod = json_string_value(json_object_get(end, "pod"));
	const json_t *port = json_object_get(end, "port");

	if (!ip)
		return -EINVAL;
	if (pod)
		put(t, "%s (", pod);
	put(t, "%s", ip);
	if (json_is_integer(port))
		put(t, ":%" JSON_INTEGER_FORMAT, json_integer_value(port));
	if (pod)
		put(t, ")");
	return 0;
}

/* An event's line: 0, or -EINVAL when it lacks a field. */
static int format_event(const json_t *o, struct text *t)
{
	const char *node = json_string_value(json_object_get(o, "node"));
	const char *verdict = json_string_value(json_object_get(o, "verdict"));
	const char *protocol = json_string_value(json_object_get(o, "protocol"));
	const char *from = json_string_value(json_object_get(o, "from"));
	const char *when = json_string_value(json_object_get(o, "time"));
	const json_t *tunnel = json_object_get(o, "tunnel");
	const char *what;	/* a drop's reason, else the event */
	char clock[32];

	if (!verdict)
		return -EINVAL;
	what = json_string_value(json_object_get(o, !strcmp(verdict, "dropped") ? "reason" : "event"));
	if (!when || clock_of(when, clock, sizeof(clock)) || !node || !what || !protocol || !from ||
	    !json_is_string(json_object_get(json_object_get(o, "source"), "ip")) ||
	    !json_is_string(json_object_get(json_object_get(o, "destination"), "ip")))
		return -EINVAL;
	put(t, "%s %s %s %s %s ", clock, node, verdict, what, protocol);
	put_end(t, json_object_get(o, "source"));
	put(t, " -> ");
	put_end(t, json_object_get(o, "destination"));
	put(t, " from %s", from);
	if (json_is_object(tunnel)) {
		const json_t *vni = json_object_get(tunnel, "vni");
		const char *remote = json_string_value(json_object_get(tunnel, "node"));

		/* from the tunnel: the node it came from; else the one it goes to */
		if (strcmp(from, "tunnel"))
			put(t, " into tunnel");
		if (json_is_integer(vni))
			put(t, " VNI %" JSON_INTEGER_FORMAT, json_integer_value(vni));
		if (remote)
			put(t, " (node %s)", remote);
	}
	return 0;
}

enum flows_line flows_format_line(const char *line, size_t len, char *out, size_t outlen)
{
	struct text t = { .buf = out, .size = outlen };
	enum flows_line kind = FLOWS_UNREADABLE;
	json_t *o = json_loadb(line, len, 0, NULL);
	const json_t *error = json_object_get(o, "error"), *lost = json_object_get(o, "lost");
	const char *node = json_string_value(json_object_get(o, "node"));

	if (outlen)
		out[0] = 0;
	if (!json_is_object(o)) {
		/* not JSON, or not an object */
	} else if (json_is_string(error) && json_is_integer(json_object_get(o, "retryInSeconds"))) {
		put(&t, "weftctl flows: %s%s%s; reading it again in %" JSON_INTEGER_FORMAT " s", node ? node : "",
		    node ? ": " : "", json_string_value(error), json_integer_value(json_object_get(o, "retryInSeconds")));
		kind = FLOWS_NODE_RETRY;
	} else if (json_is_string(error)) {
		put(&t, "weftctl flows: %s%s%s", node ? node : "", node ? ": " : "", json_string_value(error));
		kind = FLOWS_NODE_ERROR;
	} else if (json_is_true(json_object_get(o, "resumed"))) {
		put(&t, "weftctl flows: %s%sread again (%s)", node ? node : "", node ? ": " : "",
		    json_is_true(json_object_get(o, "restarted")) ? "its agent restarted: a new log"
								  : "from where it stopped");
		kind = FLOWS_NODE_RESUMED;
	} else if (json_is_integer(lost) && json_integer_value(lost) >= 0) {
		json_int_t n = json_integer_value(lost);

		if (node)
			put(&t, "%s: %" JSON_INTEGER_FORMAT " event%s lost (the node's log or the relay's buffer had no room for them)", node, n,
			    n == 1 ? "" : "s");
		else
			put(&t, "%" JSON_INTEGER_FORMAT " event%s lost (a node's log or the relay's buffer had no room for them)", n,
			    n == 1 ? "" : "s");
		kind = FLOWS_LOST;
	} else if (format_event(o, &t) == 0) {
		kind = FLOWS_EVENT;
	}
	if (kind == FLOWS_UNREADABLE) {
		size_t shown = len < FLOWS_UNREADABLE_SHOWN ? len : FLOWS_UNREADABLE_SHOWN;

		/* not in the middle of a UTF-8 character */
		while (shown < len && shown > 0 && ((unsigned char)line[shown] & 0xc0) == 0x80)
			shown--;
		t.used = 0;
		if (outlen)
			out[0] = 0;
		put(&t, "weftctl flows: unreadable line: %.*s", (int)shown, line);
	}
	if (outlen)
		plain(out);
	json_decref(o);
	return kind;
}

/* ---- the command ---- */

struct flows {
	bool json;
	bool node_failed;		/* an error line was seen: exit 1 */
	int output_errno;		/* > 0: stdout could not be written, why */
};

/* One line of the stream: 0 go on, 1 stop (a signal), -EIO stdout failed. */
static int on_line(const char *line, size_t len, void *arg)
{
	struct flows *f = arg;
	char text[FLOWS_TEXT_MAX];
	enum flows_line kind = flows_format_line(line, len, text, sizeof(text));

	if (kind == FLOWS_NODE_ERROR)
		f->node_failed = true;
	if (f->json) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
	} else if (kind == FLOWS_EVENT || kind == FLOWS_LOST) {
		printf("%s\n", text);
	} else {
		fprintf(stderr, "%s\n", text);
	}
	if (fflush(stdout) != 0) {
		f->output_errno = errno ? errno : EIO;
		return -EIO;
	}
	return ctl_stopped() ? 1 : 0;
}

/* NAMESPACE/NAME's status.podIP into ip: 0, or the exit code after printing why. */
static int pod_address(struct ctl *ctl, const char *arg, char *ip, size_t iplen)
{
	const char *slash = strchr(arg, '/'), *addr;
	struct ctl_reply r = { 0 };
	char ns[254], name[254], path[CTL_PATH_MAX];
	const json_t *pod;
	int rc = CTL_EXIT_FAIL;

	if (!slash || slash == arg || !slash[1] || strchr(slash + 1, '/') || (size_t)(slash - arg) >= sizeof(ns) ||
	    strlen(slash + 1) >= sizeof(name)) {
		fprintf(stderr, "weftctl flows: --pod \"%s\": want NAMESPACE/NAME\n", arg);
		return CTL_EXIT_USAGE;
	}
	snprintf(ns, sizeof(ns), "%.*s", (int)(slash - arg), arg);
	snprintf(name, sizeof(name), "%s", slash + 1);
	if (!ctl_name_ok("namespace", ns) || !ctl_name_ok("pod name", name))
		return CTL_EXIT_USAGE;
	ctl_path(kind_get(KIND_POD), ns, name, path, sizeof(path));
	if (ctl_call(ctl, "GET", path, NULL, &r) < 0)
		return CTL_EXIT_FAIL;	/* printed */
	if (r.status == 404) {
		fprintf(stderr, "weftctl flows: pod %s/%s: not found\n", ns, name);
		rc = CTL_EXIT_USAGE;
		goto out;
	}
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	pod = ctl_reply_object(&r, "GET", path);
	if (!pod)
		goto out;
	addr = obj_str(pod, "status.podIP");
	if (!addr || !addr[0] || strlen(addr) >= iplen) {
		fprintf(stderr, "weftctl flows: pod %s/%s has no IP address yet (status.podIP is empty: it has not "
				"started on a node)\n", ns, name);
		rc = CTL_EXIT_USAGE;
		goto out;
	}
	snprintf(ip, iplen, "%s", addr);
	rc = CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	return rc;
}

/* The stream, printed: the exit code. */
static int stream(struct ctl *ctl, const char *path, struct flows *f, bool follow)
{
	struct httpc_response resp = { 0 };
	struct httpc *h = ctl_http(ctl);
	char err[1024];
	int rc;

	if (!h)
		return CTL_EXIT_FAIL;	/* printed */
	ctl_stop_catch(h, false);
	rc = httpc_stream(h, path, on_line, f, &resp, err, sizeof(err));
	ctl_stop_release();
	if (f->output_errno) {
		fprintf(stderr, "error: writing the output: %s\n", strerror(f->output_errno));
		rc = CTL_EXIT_FAIL;
	} else if (ctl_stopped()) {
		rc = f->node_failed ? CTL_EXIT_FAIL : CTL_EXIT_OK;
	} else if (rc < 0) {
		fprintf(stderr, "error: %s\n", err);
		if (rc == -EPROTO)
			fprintf(stderr, "  (the server's certificate was checked against %s)\n", ctl->trust);
		rc = CTL_EXIT_FAIL;
	} else if (resp.status < 200 || resp.status >= 300) {
		ctl_print_stream_error(&resp);
		rc = CTL_EXIT_FAIL;
	} else if (follow) {
		fprintf(stderr, "weftctl flows: the controller ended the stream\n");
		rc = CTL_EXIT_FAIL;
	} else {
		rc = f->node_failed ? CTL_EXIT_FAIL : CTL_EXIT_OK;
	}
	httpc_response_free(&resp);
	return rc;
}

int ctl_flows(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "follow", no_argument, NULL, 'f' }, { "pod", required_argument, NULL, 'p' },
		{ "node", required_argument, NULL, 'n' }, { "verdict", required_argument, NULL, 'v' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *pod = NULL, *node = NULL, *verdict = NULL;
	struct flows f = { 0 };
	bool follow = false;
	char path[CTL_PATH_MAX] = FLOWS_API_PATH, ip[64] = "";
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hfo:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: %s flows %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		case 'f': follow = true; break;
		case 'p': pod = optarg; break;
		case 'n': node = optarg; break;
		case 'v':
			if (strcmp(optarg, "dropped") && strcmp(optarg, "forwarded")) {
				fprintf(stderr, "weftctl flows: --verdict \"%s\": want dropped or forwarded\n", optarg);
				return CTL_EXIT_USAGE;
			}
			verdict = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "json")) {
				fprintf(stderr, "weftctl flows: -o \"%s\": want json (or no -o, for lines to read)\n",
					optarg);
				return CTL_EXIT_USAGE;
			}
			f.json = true;
			break;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "flows", usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "weftctl flows: unexpected argument \"%s\" (name a pod with --pod, a node with "
				"--node)\n", argv[optind]);
		return ctl_usage(ctl, "flows", usage);
	}
	if (node && !ctl_name_ok("node", node))
		return CTL_EXIT_USAGE;
	if (pod && (rc = pod_address(ctl, pod, ip, sizeof(ip))))
		return rc;
	if ((follow && !ctl_path_add_query(path, sizeof(path), "follow", "true")) ||
	    (verdict && !ctl_path_add_query(path, sizeof(path), "verdict", verdict)) ||
	    (node && !ctl_path_add_query(path, sizeof(path), "node", node)) ||
	    (ip[0] && !ctl_path_add_query(path, sizeof(path), "ip", ip))) {
		fprintf(stderr, "weftctl flows: the request's path is too long\n");
		return CTL_EXIT_USAGE;
	}
	return stream(ctl, path, &f, follow);
}
