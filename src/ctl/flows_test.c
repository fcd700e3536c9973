/*
 * flows_test.c — how `weftctl flows` prints each line of the flows stream
 * (flows_format_line): a drop and a new connection between pods, an ICMP
 * event, ends the node does not know as pods, a tunnelled event both ways,
 * times with an offset, a lost line, a node's error, and lines that are not
 * JSON or lack a field; text cut to the buffer and control bytes hidden.
 *
 * Then the command itself (ctl_flows) against a scripted HTTP server in a
 * thread of the test (127.0.0.1, plain HTTP), stdout and stderr caught in
 * files: the path and query it asks for, the pod looked up first, what it
 * prints and its exit status for each kind of line, an error status, a
 * stream the controller ends under --follow, SIGINT under --follow, and
 * bad arguments refused before any request.
 */
#include "ctl/flows.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "test.h"

static char out[FLOWS_TEXT_MAX];

static enum flows_line fmt(const char *line)
{
	return flows_format_line(line, strlen(line), out, sizeof(out));
}

TEST(flows_drop_between_pods)
{
	CHECK_EQ(fmt("{\"seq\":12,\"time\":\"2026-11-28T18:00:00.123456789Z\",\"node\":\"node-1\","
		     "\"verdict\":\"dropped\",\"event\":\"drop\",\"reason\":\"policy-denied-ingress\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.128.0.2\",\"port\":37264,\"pod\":\"x/a\"},"
		     "\"destination\":{\"ip\":\"10.128.2.2\",\"port\":80,\"pod\":\"x/b\"},\"from\":\"pod\"}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "18:00:00.123 node-1 dropped policy-denied-ingress TCP x/a (10.128.0.2:37264) -> "
		       "x/b (10.128.2.2:80) from pod");
}

TEST(flows_new_connection_from_the_tunnel)
{
	CHECK_EQ(fmt("{\"seq\":13,\"time\":\"2026-11-28T18:00:00.456Z\",\"node\":\"node-2\",\"verdict\":\"forwarded\","
		     "\"event\":\"new\",\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.128.0.9\",\"port\":41000},"
		     "\"destination\":{\"ip\":\"10.128.2.2\",\"port\":80,\"pod\":\"x/b\"},\"from\":\"tunnel\","
		     "\"tunnel\":{\"vni\":10,\"node\":\"192.168.200.11\"}}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "18:00:00.456 node-2 forwarded new TCP 10.128.0.9:41000 -> x/b (10.128.2.2:80) "
		       "from tunnel VNI 10 (node 192.168.200.11)");
}

TEST(flows_from_a_pod_into_the_tunnel)
{
	CHECK_EQ(fmt("{\"seq\":1,\"time\":\"2026-11-28T18:00:01Z\",\"node\":\"node-1\",\"verdict\":\"forwarded\","
		     "\"event\":\"reply\",\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.128.0.2\",\"port\":80,\"pod\":\"x/a\"},"
		     "\"destination\":{\"ip\":\"10.128.2.2\",\"port\":41000,\"pod\":\"x/b\"},\"from\":\"pod\","
		     "\"tunnel\":{\"vni\":10,\"node\":\"192.168.200.12\"}}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "18:00:01.000 node-1 forwarded reply TCP x/a (10.128.0.2:80) -> x/b (10.128.2.2:41000) "
		       "from pod into tunnel VNI 10 (node 192.168.200.12)");
}

TEST(flows_icmp_without_ports)
{
	CHECK_EQ(fmt("{\"seq\":2,\"time\":\"2026-11-28T18:00:02.5Z\",\"node\":\"node-1\",\"verdict\":\"forwarded\","
		     "\"event\":\"sample\",\"protocol\":\"ICMP\",\"source\":{\"ip\":\"10.128.0.2\",\"pod\":\"x/a\"},"
		     "\"destination\":{\"ip\":\"10.128.2.2\",\"pod\":\"x/b\"},\"from\":\"pod\"}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "18:00:02.500 node-1 forwarded sample ICMP x/a (10.128.0.2) -> x/b (10.128.2.2) from pod");
}

TEST(flows_ends_without_pods)
{
	CHECK_EQ(fmt("{\"seq\":3,\"time\":\"2026-11-28T18:00:03.000000001Z\",\"node\":\"node-3\",\"verdict\":\"dropped\","
		     "\"event\":\"drop\",\"reason\":\"no-endpoint\",\"protocol\":\"17\",\"source\":{\"ip\":\"192.168.200.1\"},"
		     "\"destination\":{\"ip\":\"10.128.4.7\"},\"from\":\"node\"}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "18:00:03.000 node-3 dropped no-endpoint 17 192.168.200.1 -> 10.128.4.7 from node");
}

TEST(flows_time_in_utc)
{
	/* an offset is taken back to UTC, across midnight too */
	CHECK_EQ(fmt("{\"time\":\"2026-11-29T01:30:00.25+02:00\",\"node\":\"n\",\"verdict\":\"forwarded\",\"event\":\"new\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.0.0.1\",\"port\":1},\"destination\":{\"ip\":\"10.0.0.2\","
		     "\"port\":2},\"from\":\"host-to-pod\"}"),
		 FLOWS_EVENT);
	CHECK_STR(out, "23:30:00.250 n forwarded new TCP 10.0.0.1:1 -> 10.0.0.2:2 from host-to-pod");
}

TEST(flows_lost)
{
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"lost\":12}"), FLOWS_LOST);
	CHECK_STR(out, "node-2: 12 events lost (the node's log or the relay's buffer had no room for them)");
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"lost\":1}"), FLOWS_LOST);
	CHECK_STR(out, "node-2: 1 event lost (the node's log or the relay's buffer had no room for them)");
	/* as a node's own stream says it, without its name */
	CHECK_EQ(fmt("{\"lost\":5}"), FLOWS_LOST);
	CHECK_STR(out, "5 events lost (a node's log or the relay's buffer had no room for them)");
}

TEST(flows_node_error)
{
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"error\":\"cannot reach https://192.168.200.12:9967: Connection refused\"}"),
		 FLOWS_NODE_ERROR);
	CHECK_STR(out, "weftctl flows: node-2: cannot reach https://192.168.200.12:9967: Connection refused");
	CHECK_EQ(fmt("{\"error\":\"no node serves flows\"}"), FLOWS_NODE_ERROR);
	CHECK_STR(out, "weftctl flows: no node serves flows");
}

/* following, the relay reads a node again: said, not a failure */
TEST(flows_node_read_again)
{
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"error\":\"https://192.168.200.12:9967 ended the stream\","
		     "\"retryInSeconds\":2}"), FLOWS_NODE_RETRY);
	CHECK_STR(out, "weftctl flows: node-2: https://192.168.200.12:9967 ended the stream; reading it again in 2 s");
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"resumed\":true,\"restarted\":true}"), FLOWS_NODE_RESUMED);
	CHECK_STR(out, "weftctl flows: node-2: read again (its agent restarted: a new log)");
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"resumed\":true,\"restarted\":false}"), FLOWS_NODE_RESUMED);
	CHECK_STR(out, "weftctl flows: node-2: read again (from where it stopped)");
}

TEST(flows_unreadable_lines)
{
	char big[600];

	CHECK_EQ(fmt("not json"), FLOWS_UNREADABLE);
	CHECK_STR(out, "weftctl flows: unreadable line: not json");
	CHECK_EQ(fmt("[1,2]"), FLOWS_UNREADABLE);
	CHECK_STR(out, "weftctl flows: unreadable line: [1,2]");
	/* an event without its destination */
	CHECK_EQ(fmt("{\"time\":\"2026-11-28T18:00:00Z\",\"node\":\"n\",\"verdict\":\"forwarded\",\"event\":\"new\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.0.0.1\"},\"from\":\"pod\"}"),
		 FLOWS_UNREADABLE);
	CHECK_CONTAINS(out, "weftctl flows: unreadable line: {\"time\"");
	/* a drop without its reason */
	CHECK_EQ(fmt("{\"time\":\"2026-11-28T18:00:00Z\",\"node\":\"n\",\"verdict\":\"dropped\",\"event\":\"drop\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.0.0.1\"},\"destination\":{\"ip\":\"10.0.0.2\"},"
		     "\"from\":\"pod\"}"),
		 FLOWS_UNREADABLE);
	/* a time that is not RFC 3339 */
	CHECK_EQ(fmt("{\"time\":\"yesterday\",\"node\":\"n\",\"verdict\":\"forwarded\",\"event\":\"new\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.0.0.1\"},\"destination\":{\"ip\":\"10.0.0.2\"},"
		     "\"from\":\"pod\"}"),
		 FLOWS_UNREADABLE);
	CHECK_EQ(fmt("{\"time\":\"2026-11-28T18:00:00\",\"node\":\"n\",\"verdict\":\"forwarded\",\"event\":\"new\","
		     "\"protocol\":\"TCP\",\"source\":{\"ip\":\"10.0.0.1\"},\"destination\":{\"ip\":\"10.0.0.2\"},"
		     "\"from\":\"pod\"}"),
		 FLOWS_UNREADABLE);
	/* a lost count that is not a count */
	CHECK_EQ(fmt("{\"node\":\"n\",\"lost\":\"many\"}"), FLOWS_UNREADABLE);
	/* only the first 200 bytes are shown */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ(fmt(big), FLOWS_UNREADABLE);
	CHECK_EQ(strlen(out), strlen("weftctl flows: unreadable line: ") + FLOWS_UNREADABLE_SHOWN);
}

TEST(flows_control_bytes_hidden)
{
	CHECK_EQ(fmt("{\"node\":\"node-2\",\"error\":\"bad\\u001b[2Jthing\\nmore\"}"), FLOWS_NODE_ERROR);
	CHECK_STR(out, "weftctl flows: node-2: bad?[2Jthing?more");
	CHECK_EQ(fmt("\x1b[31mred"), FLOWS_UNREADABLE);
	CHECK_STR(out, "weftctl flows: unreadable line: ?[31mred");
}

TEST(flows_text_cut_to_the_buffer)
{
	const char *line = "{\"node\":\"node-2\",\"lost\":12}";
	char small[16];

	CHECK_EQ(flows_format_line(line, strlen(line), small, sizeof(small)), FLOWS_LOST);
	CHECK_STR(small, "node-2: 12 even");
	/* no room at all: still the kind */
	CHECK_EQ(flows_format_line(line, strlen(line), small, 0), FLOWS_LOST);
}

/* ---- the command, against a scripted server ---- */

struct route {
	const char *path;		/* the request's path without its query */
	const char *answer;		/* raw: head and body */
	bool close;			/* close the connection after the answer (a stream's end) */
	bool hold;			/* ... or keep it open, send SIGINT once the command printed, and
					 * wait for the client to go */
};

struct fake {
	int lfd, port;
	pthread_t thread;
	const struct route *routes;
	char printed[512];		/* the command's stdout (run), for hold */
	pthread_mutex_t lock;
	char paths[4][1024];		/* the first requests' paths, with their queries */
	int requests;
};

/* A request's head into buf: true, or false when the client closed. */
static bool read_head(int fd, char *buf, size_t len)
{
	size_t used = 0;

	while (used + 1 < len) {
		ssize_t r = read(fd, buf + used, len - 1 - used);

		if (r <= 0)
			return false;
		used += (size_t)r;
		buf[used] = 0;
		if (strstr(buf, "\r\n\r\n"))
			return true;
	}
	return false;
}

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	char head[8192];

	for (;;) {
		int fd = accept(f->lfd, NULL, NULL);
		bool open = true;

		if (fd < 0)
			return NULL;
		while (open && read_head(fd, head, sizeof(head))) {
			char path[1024] = "";
			const struct route *r;

			sscanf(head, "GET %1023s", path);
			pthread_mutex_lock(&f->lock);
			if (f->requests < 4)
				snprintf(f->paths[f->requests], sizeof(f->paths[0]), "%s", path);
			f->requests++;
			pthread_mutex_unlock(&f->lock);
			path[strcspn(path, "?")] = 0;
			for (r = f->routes; r->path && strcmp(r->path, path); r++)
				;
			if (!r->path) {
				static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

				(void)!send(fd, nf, strlen(nf), MSG_NOSIGNAL);
				continue;
			}
			(void)!send(fd, r->answer, strlen(r->answer), MSG_NOSIGNAL);
			if (r->hold) {
				struct stat st;

				for (int i = 0; i < 500 && (stat(f->printed, &st) || !st.st_size); i++)
					usleep(10 * 1000);
				kill(getpid(), SIGINT);
				while (read(fd, head, sizeof(head)) > 0)
					;
			}
			open = !r->close && !r->hold;
		}
		close(fd);
	}
}

static int fake_start(struct fake *f, const struct route *routes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->routes = routes;
	snprintf(f->printed, sizeof(f->printed), "%s/stdout", test_tmpdir());
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(f->lfd, 8) < 0 ||
	    getsockname(f->lfd, (struct sockaddr *)&a, &alen) < 0)
		return -errno;
	f->port = ntohs(a.sin_port);
	return pthread_create(&f->thread, NULL, fake_serve, f) ? -EAGAIN : 0;
}

static void fake_stop(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	close(f->lfd);
	pthread_join(f->thread, NULL);
	pthread_mutex_destroy(&f->lock);
}

static char got_out[8192], got_err[8192];

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
}

/* `weftctl flows ARGS...` against port (0: nothing listens there): its
 * exit status, its stdout in got_out and its stderr in got_err. */
static int run(int port, const char *const *args)
{
	char server[64], token[512], out_path[512], err_path[512], *argv[16];
	struct ctl ctl = { .prog = "weftctl", .server = server, .token_file = token };
	int argc = 0, saved_out, saved_err, fd_out, fd_err, rc;
	FILE *t;

	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port ? port : 1);
	snprintf(token, sizeof(token), "%s/token", test_tmpdir());
	snprintf(out_path, sizeof(out_path), "%s/stdout", test_tmpdir());
	snprintf(err_path, sizeof(err_path), "%s/stderr", test_tmpdir());
	t = fopen(token, "w");
	if (t) {
		fputs("admin-token\n", t);
		fclose(t);
	}
	setenv("KUBECONFIG", "/nonexistent/kubeconfig", 1);
	argv[argc++] = (char *)"flows";
	for (; *args && argc < 15; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(1);
	saved_err = dup(2);
	fd_out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fd_err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	dup2(fd_out, 1);
	dup2(fd_err, 2);
	rc = ctl_flows(&ctl, argc, argv);
	httpc_destroy(ctl.http);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	close(fd_out);
	close(fd_err);
	slurp(out_path, got_out, sizeof(got_out));
	slurp(err_path, got_err, sizeof(got_err));
	return rc;
}

#define STREAM_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n"
#define DROP_LINE                                                                                          \
	"{\"seq\":12,\"time\":\"2026-11-28T18:00:00.123456789Z\",\"node\":\"node-1\",\"verdict\":\"dropped\","  \
	"\"event\":\"drop\",\"reason\":\"policy-denied-ingress\",\"protocol\":\"TCP\",\"source\":{\"ip\":"       \
	"\"10.128.0.2\",\"port\":37264,\"pod\":\"x/a\"},\"destination\":{\"ip\":\"10.128.2.2\",\"port\":80,"    \
	"\"pod\":\"x/b\"},\"from\":\"pod\"}"
#define DROP_TEXT                                                                                          \
	"18:00:00.123 node-1 dropped policy-denied-ingress TCP x/a (10.128.0.2:37264) -> x/b (10.128.2.2:80) " \
	"from pod"
#define POD_A                                                                                              \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 86\r\n\r\n"                   \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"x\"},\"status\":{\"podIP\":\"10.128.0.2\"}}"

TEST(flows_command_asks_and_prints)
{
	static const struct route routes[] = {
		{ "/api/v1/namespaces/x/pods/a", POD_A, false, false },
		{ "/apis/network.weft.io/v1/flows",
		  STREAM_HEAD DROP_LINE "\n\n{\"node\":\"node-2\",\"lost\":12}\nnot json\n", true, false },
		{ 0 }
	};
	static const char *const args[] = { "--pod", "x/a", "--verdict", "dropped", "--node", "node-1", NULL };
	struct fake f;
	int rc;

	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	CHECK_EQ(rc, 0);
	CHECK_EQ(f.requests, 2);
	CHECK_STR(f.paths[0], "/api/v1/namespaces/x/pods/a");
	CHECK_STR(f.paths[1], "/apis/network.weft.io/v1/flows?verdict=dropped&node=node-1&ip=10.128.0.2");
	CHECK_STR(got_out, DROP_TEXT "\nnode-2: 12 events lost (the node's log or the relay's buffer had no room for them)\n");
	CHECK_STR(got_err, "weftctl flows: unreadable line: not json\n");
}

TEST(flows_command_json_as_it_came)
{
	static const struct route routes[] = {
		{ "/apis/network.weft.io/v1/flows",
		  STREAM_HEAD DROP_LINE "\n{\"node\":\"node-2\",\"lost\":12}\n{\"node\":\"node-3\",\"error\":\"refused\"}\n",
		  true, false },
		{ 0 }
	};
	static const char *const args[] = { "-o", "json", NULL };
	struct fake f;
	int rc;

	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	CHECK_EQ(rc, 1);	/* a node could not be read */
	CHECK_STR(f.paths[0], "/apis/network.weft.io/v1/flows");
	CHECK_STR(got_out, DROP_LINE "\n{\"node\":\"node-2\",\"lost\":12}\n{\"node\":\"node-3\",\"error\":\"refused\"}\n");
	CHECK_STR(got_err, "");
}

TEST(flows_command_node_error_goes_on)
{
	static const struct route routes[] = {
		{ "/apis/network.weft.io/v1/flows",
		  STREAM_HEAD "{\"node\":\"node-2\",\"error\":\"cannot reach https://192.168.200.12:9967: Connection "
			      "refused\"}\n" DROP_LINE "\n",
		  true, false },
		{ 0 }
	};
	static const char *const args[] = { NULL };
	struct fake f;
	int rc;

	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	CHECK_EQ(rc, 1);
	CHECK_STR(got_out, DROP_TEXT "\n");
	CHECK_STR(got_err, "weftctl flows: node-2: cannot reach https://192.168.200.12:9967: Connection refused\n");
}

TEST(flows_command_server_refuses)
{
	static const char body[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,"
				   "\"message\":\"a node's credential may not read the cluster's flows\"}";
	char answer[512];
	struct route routes[2] = { { "/apis/network.weft.io/v1/flows", answer, false, false }, { 0 } };
	static const char *const args[] = { NULL };
	struct fake f;
	int rc;

	snprintf(answer, sizeof(answer), "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
					 "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	CHECK_EQ(rc, 1);
	CHECK_STR(got_out, "");
	CHECK_STR(got_err, "Error from server (Forbidden): a node's credential may not read the cluster's flows\n");
}

TEST(flows_command_pod_unknown_or_without_address)
{
	static const struct route routes[] = {
		{ "/api/v1/namespaces/x/pods/pending",
		  "HTTP/1.1 200 OK\r\nContent-Length: 56\r\n\r\n"
		  "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"pending\"},\"status\":{}}",
		  false, false },
		{ 0 }
	};
	static const char *const unknown[] = { "--pod", "x/nope", NULL };
	static const char *const pending[] = { "--pod", "x/pending", NULL };
	struct fake f;
	int rc1, rc2;

	CHECK(fake_start(&f, routes) == 0);
	rc1 = run(f.port, unknown);
	CHECK_STR(got_err, "weftctl flows: pod x/nope: not found\n");
	rc2 = run(f.port, pending);
	fake_stop(&f);
	CHECK_EQ(rc1, 2);
	CHECK_EQ(rc2, 2);
	CHECK_CONTAINS(got_err, "weftctl flows: pod x/pending has no IP address yet");
	CHECK_EQ(f.requests, 2);	/* no flows asked for */
}

TEST(flows_command_follow_until_sigint)
{
	static const struct route routes[] = {
		{ "/apis/network.weft.io/v1/flows", STREAM_HEAD DROP_LINE "\n\n", false, true },
		{ 0 }
	};
	static const char *const args[] = { "-f", "--verdict", "forwarded", NULL };
	struct sigaction old;
	struct fake f;
	int rc;

	sigaction(SIGINT, NULL, &old);
	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	sigaction(SIGINT, &old, NULL);
	CHECK_EQ(rc, 0);
	CHECK_STR(f.paths[0], "/apis/network.weft.io/v1/flows?follow=true&verdict=forwarded");
	CHECK_STR(got_out, DROP_TEXT "\n");
	CHECK_STR(got_err, "");
}

TEST(flows_command_follow_ended_by_the_controller)
{
	static const struct route routes[] = {
		{ "/apis/network.weft.io/v1/flows", STREAM_HEAD DROP_LINE "\n", true, false },
		{ 0 }
	};
	static const char *const args[] = { "--follow", NULL };
	struct sigaction old;
	struct fake f;
	int rc;

	sigaction(SIGINT, NULL, &old);
	CHECK(fake_start(&f, routes) == 0);
	rc = run(f.port, args);
	fake_stop(&f);
	sigaction(SIGINT, &old, NULL);
	CHECK_EQ(rc, 1);
	CHECK_STR(got_out, DROP_TEXT "\n");
	CHECK_STR(got_err, "weftctl flows: the controller ended the stream\n");
}

TEST(flows_command_unreachable)
{
	static const char *const args[] = { NULL };

	CHECK_EQ(run(0, args), 1);
	CHECK_CONTAINS(got_err, "error: cannot reach http://127.0.0.1:1");
}

TEST(flows_command_bad_arguments)
{
	static const char *const no_slash[] = { "--pod", "xa", NULL };
	static const char *const verdict[] = { "--verdict", "denied", NULL };
	static const char *const output[] = { "-o", "yaml", NULL };
	static const char *const extra[] = { "node-1", NULL };
	static const char *const node[] = { "--node", "a b", NULL };
	static const char *const flag[] = { "--since", "5m", NULL };

	/* nothing listens: each is refused before any request */
	CHECK_EQ(run(0, no_slash), 2);
	CHECK_STR(got_err, "weftctl flows: --pod \"xa\": want NAMESPACE/NAME\n");
	CHECK_EQ(run(0, verdict), 2);
	CHECK_STR(got_err, "weftctl flows: --verdict \"denied\": want dropped or forwarded\n");
	CHECK_EQ(run(0, output), 2);
	CHECK_CONTAINS(got_err, "-o \"yaml\"");
	CHECK_EQ(run(0, extra), 2);
	CHECK_CONTAINS(got_err, "unexpected argument \"node-1\"");
	CHECK_EQ(run(0, node), 2);
	CHECK_STR(got_err, "error: invalid node \"a b\"\n");
	CHECK_EQ(run(0, flag), 2);
	CHECK_CONTAINS(got_err, "error: unknown flag --since");
}
