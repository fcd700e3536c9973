/*
 * write_test.c — what agent_write waits after a 429: the Retry-After
 * header, else the Status' details.retryAfterSeconds, else 1 s, never
 * more than AGENT_RETRY_MAX_S; anything but a 429 is not retried.  And
 * agent_write against a tiny HTTP server in a thread that answers 429
 * (Retry-After: 1) and then 200: the write is sent again after the
 * second and succeeds; an agent that is stopping does not wait.
 */
#include "agent/agent.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define ANSWER_429 "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}"
#define ANSWER_200 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

/* answers[i] to the i-th request (the last one to the rest) */
struct server {
	int lfd, port, requests;
	const char *answers[4];
	int nanswers;
	pthread_t thread;
};

/* one request (head, and a body of its Content-Length): false at EOF */
static bool read_request(int fd)
{
	char buf[8192], *end, *cl;
	size_t n = 0, want;
	ssize_t r;

	while (n + 1 < sizeof(buf)) {
		if ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) <= 0)
			return false;
		n += (size_t)r;
		buf[n] = 0;
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
	}
	if (!end)
		return false;
	cl = strcasestr(buf, "Content-Length:");
	want = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
	while (n < want && n + 1 < sizeof(buf)) {
		if ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) <= 0)
			return false;
		n += (size_t)r;
	}
	return true;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	int fd;

	while ((fd = accept(s->lfd, NULL, NULL)) >= 0) {
		while (read_request(fd)) {
			const char *a = s->answers[s->requests < s->nanswers ? s->requests : s->nanswers - 1];

			s->requests++;
			if (write(fd, a, strlen(a)) < 0)
				break;
		}
		close(fd);
	}
	return NULL;
}

static int server_start(struct server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->lfd, 8) < 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &alen) < 0)
		return -1;
	s->port = ntohs(a.sin_port);
	return pthread_create(&s->thread, NULL, serve, s) ? -1 : 0;
}

static void server_stop(struct server *s)
{
	shutdown(s->lfd, SHUT_RDWR);
	close(s->lfd);
	pthread_join(s->thread, NULL);
}

/* agent_write of a PUT to s by an agent (stopping or not): its rc, the
 * answer's status in *status and the milliseconds it took in *ms */
static int write_to(struct server *s, bool stopping, long *status, long *ms)
{
	static struct agent a;
	struct httpc_response r = { 0 };
	struct timespec t0, t1;
	char url[64], err[256];
	struct httpc *h;
	int rc = -1;

	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&a.lock, NULL);
	pthread_cond_init(&a.kick, NULL);
	atomic_store(&a.stopping, stopping);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	h = httpc_create(&(struct httpc_options){ .server = url, .timeout_ms = 10000 }, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (h)
		rc = agent_write(&a, h, "PUT", "/api/v1/nodes/n", "{}", 2, &r, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*status = r.status;
	*ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	httpc_response_free(&r);
	httpc_destroy(h);
	pthread_cond_destroy(&a.kick);
	pthread_mutex_destroy(&a.lock);
	return rc;
}

/* main.c's, which a test does not link */
void agent_log(const char *level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static int wait_for_answer(long status, long retry_after, const char *body)
{
	struct httpc_response r = { .status = status, .retry_after = retry_after, .body = (char *)body };

	return agent_retry_seconds(&r);
}

TEST(write_retry_only_429)
{
	CHECK_EQ(wait_for_answer(200, 0, "{}"), -1);
	CHECK_EQ(wait_for_answer(409, 3, "{}"), -1);
	CHECK_EQ(wait_for_answer(503, 3, "{}"), -1);
	CHECK_EQ(wait_for_answer(429, 3, "{}"), 3);
}

TEST(write_retry_after_header_then_details)
{
	CHECK_EQ(wait_for_answer(429, 2, "{\"details\":{\"retryAfterSeconds\":5}}"), 2);
	CHECK_EQ(wait_for_answer(429, 0, "{\"kind\":\"Status\",\"code\":429,\"details\":{\"retryAfterSeconds\":5}}"), 5);
	CHECK_EQ(wait_for_answer(429, 0, "not json"), 1);
	CHECK_EQ(wait_for_answer(429, 0, ""), 1);
	CHECK_EQ(wait_for_answer(429, 0, NULL), 1);
	CHECK_EQ(wait_for_answer(429, 0, "{\"details\":{\"retryAfterSeconds\":-4}}"), 1);
}

TEST(write_retry_bounded)
{
	CHECK_EQ(wait_for_answer(429, 3600, "{}"), AGENT_RETRY_MAX_S);
	CHECK_EQ(wait_for_answer(429, 0, "{\"details\":{\"retryAfterSeconds\":86400}}"), AGENT_RETRY_MAX_S);
}

TEST(write_sends_again_after_429)
{
	struct server s = { .answers = { ANSWER_429, ANSWER_200 }, .nanswers = 2 };
	long status = 0, ms = 0;
	int rc;

	CHECK(server_start(&s) == 0);
	rc = write_to(&s, false, &status, &ms);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(status, 200);
	CHECK_EQ(s.requests, 2);
	CHECK(ms >= 900);	/* it waited the Retry-After of 1 s */
}

TEST(write_stopping_does_not_wait)
{
	struct server s = { .answers = { ANSWER_429, ANSWER_200 }, .nanswers = 2 };
	long status = 0, ms = 0;
	int rc;

	CHECK(server_start(&s) == 0);
	rc = write_to(&s, true, &status, &ms);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(status, 429);	/* the caller's answer, as any refusal */
	CHECK_EQ(s.requests, 1);
}
