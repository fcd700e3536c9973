/*
 * httpc_test.c — httpc against a tiny HTTP/1.1 server in a thread of the
 * test: one listening socket on 127.0.0.1, a scripted answer for every
 * request, connections kept open until the client closes them (so keep-
 * alive can be counted).  Streams are checked against a naive split of the
 * same random text, delivered in random pieces.
 */
#include "lib/httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

struct server {
	int lfd;
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	int accepts;
	char request[65536];		/* the last request: head and body */
	size_t request_len;
	const char *answer;		/* raw bytes sent for each request */
	size_t answer_len;
	size_t slice;			/* > 0: send in random slices of at most this */
	uint64_t rng;
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool read_request(struct server *s, int fd)
{
	char buf[65536];
	size_t len = 0, need = 0;
	char *head_end = NULL;

	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			return false;
		len += (size_t)r;
		buf[len] = 0;
		if (!head_end && (head_end = strstr(buf, "\r\n\r\n"))) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");

			need = (size_t)(head_end + 4 - buf) + (cl && cl < head_end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (head_end && len >= need)
			break;
		if (len == sizeof(buf) - 1)
			return false;
	}
	pthread_mutex_lock(&s->lock);
	memcpy(s->request, buf, len + 1);
	s->request_len = len;
	pthread_mutex_unlock(&s->lock);
	return true;
}

static void send_answer(struct server *s, int fd)
{
	size_t off = 0;

	while (off < s->answer_len) {
		size_t n = s->answer_len - off;
		ssize_t w;

		if (s->slice && n > 1) {
			size_t max = n < s->slice ? n : s->slice;

			n = 1 + (size_t)(next_rand(&s->rng) % max);
		}
		w = write(fd, s->answer + off, n);
		if (w <= 0)
			return;
		off += (size_t)w;
		if (s->slice)
			usleep(50);
	}
}

static void *serve(void *arg)
{
	struct server *s = arg;

	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&s->lock);
		s->accepts++;
		pthread_mutex_unlock(&s->lock);
		while (read_request(s, fd))
			send_answer(s, fd);
		close(fd);
	}
}

static int server_start(struct server *s, const char *answer, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->answer = answer;
	s->answer_len = len;
	s->rng = test_seed() | 1;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->lfd, 8) < 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &alen) < 0)
		return -errno;
	s->port = ntohs(a.sin_port);
	return pthread_create(&s->thread, NULL, serve, s) ? -EAGAIN : 0;
}

static void server_stop(struct server *s)
{
	shutdown(s->lfd, SHUT_RDWR);
	close(s->lfd);
	pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->lock);
}

static const char *token_file(const char *content)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/token", test_tmpdir());
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(content, f);
	fclose(f);
	return path;
}

static struct httpc *client(const struct server *s, const char *token, size_t max_body, char *err, size_t errlen)
{
	char url[64];
	struct httpc_options opt = { .server = url, .max_body = max_body, .timeout_ms = 10000 };

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s->port);
	if (token)
		opt.token_file = token_file(token);
	return httpc_create(&opt, err, errlen);
}

#define OK_JSON "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"

TEST(httpc_get_sends_token_and_reads_body)
{
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h = NULL;
	char err[256];

	CHECK(server_start(&s, OK_JSON, strlen(OK_JSON)) == 0);
	h = client(&s, "s3cret \n", 0, err, sizeof(err));
	if (!h)
		test_fail(__FILE__, __LINE__, "create: %s", err);
	if (h && httpc_request(h, "GET", "/api/v1/nodes", NULL, 0, &r, err, sizeof(err)) == 0) {
		CHECK_EQ(r.status, 200);
		CHECK_STR(r.body, "{\"a\":1}");
		CHECK_EQ(r.len, 7);
		CHECK_CONTAINS(s.request, "GET /api/v1/nodes HTTP/1.1\r\n");
		CHECK_CONTAINS(s.request, "\r\nAuthorization: Bearer s3cret\r\n");
	} else if (h) {
		test_fail(__FILE__, __LINE__, "request: %s", err);
	}
	httpc_response_free(&r);
	httpc_destroy(h);
	server_stop(&s);
}

TEST(httpc_keeps_the_connection_alive)
{
	struct server s;
	struct httpc *h;
	char err[256];
	int rc = 0;

	CHECK(server_start(&s, OK_JSON, strlen(OK_JSON)) == 0);
	h = client(&s, "t", 0, err, sizeof(err));
	for (int i = 0; h && i < 5 && rc == 0; i++) {
		struct httpc_response r;

		rc = httpc_request(h, i % 2 ? "DELETE" : "GET", "/x", NULL, 0, &r, err, sizeof(err));
		httpc_response_free(&r);
	}
	httpc_destroy(h);
	server_stop(&s);
	CHECK(h != NULL);
	CHECK_EQ(rc, 0);
	CHECK_EQ(s.accepts, 1);
}

TEST(httpc_post_sends_json_body)
{
	static const char body[] = "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"red\"}}";
	static const char answer[] = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}";
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h;
	char err[256];
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, "t", 0, err, sizeof(err));
	if (h)
		rc = httpc_request(h, "POST", "/api/v1/namespaces", body, strlen(body), &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.status, 201);
	CHECK_CONTAINS(s.request, "POST /api/v1/namespaces HTTP/1.1\r\n");
	CHECK_CONTAINS(s.request, "\r\nContent-Type: application/json\r\n");
	CHECK_CONTAINS(s.request, "\r\n\r\n{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"red\"}}");
	CHECK(strstr(s.request, "Expect:") == NULL);
	httpc_response_free(&r);
}

TEST(httpc_typed_request_sends_its_content_type_only)
{
	static const char body[] = "{\"metadata\":{\"labels\":{\"a\":null}}}";
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h;
	char err[256];
	int rc = -1, bad = 0;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, "t", 0, err, sizeof(err));
	if (h) {
		bad = httpc_request_typed(h, "PATCH", "/x", "a\r\nX-Evil: 1", body, strlen(body), &r, err, sizeof(err));
		rc = httpc_request_typed(h, "PATCH", "/api/v1/namespaces/red", "application/merge-patch+json", body,
					 strlen(body), &r, err, sizeof(err));
	}
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(bad, -EINVAL);
	CHECK_EQ(rc, 0);
	CHECK_CONTAINS(s.request, "PATCH /api/v1/namespaces/red HTTP/1.1\r\n");
	CHECK_CONTAINS(s.request, "\r\nContent-Type: application/merge-patch+json\r\n");
	CHECK_CONTAINS(s.request, "\r\nAuthorization: Bearer t\r\n");
	CHECK(strstr(s.request, "Content-Type: application/json\r\n") == NULL);
	CHECK(strstr(s.request, "X-Evil") == NULL);
	httpc_response_free(&r);
}

TEST(httpc_http_error_is_not_a_failure)
{
	static const char answer[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 13\r\n\r\n{\"code\":404}\n";
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h;
	char err[256];
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 0, err, sizeof(err));
	if (h)
		rc = httpc_request(h, "GET", "/api/v1/pods/x", NULL, 0, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.status, 404);
	CHECK_STR(r.body, "{\"code\":404}\n");
	CHECK(strstr(s.request, "Authorization") == NULL);
	httpc_response_free(&r);
}

TEST(httpc_reads_retry_after)
{
	static const char answer[] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 13\r\n\r\n"
				     "{\"code\":429}\n";
	static const char plain[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
	struct server s, p;
	struct httpc_response r = { 0 }, q = { 0 };
	struct httpc *h = NULL, *hp = NULL;
	char err[256];
	int rc = -1, rcp = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	if (server_start(&p, plain, strlen(plain)) == 0) {
		h = client(&s, NULL, 0, err, sizeof(err));
		hp = client(&p, NULL, 0, err, sizeof(err));
		if (h && hp) {
			rc = httpc_request(h, "PUT", "/api/v1/nodes/a", "{}", 2, &r, err, sizeof(err));
			rcp = httpc_request(hp, "PUT", "/api/v1/nodes/a", "{}", 2, &q, err, sizeof(err));
		}
		httpc_destroy(hp);
		server_stop(&p);
	}
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(rcp, 0);
	CHECK_EQ(r.status, 429);
	CHECK_EQ(r.retry_after, 7);
	CHECK_EQ(q.status, 200);
	CHECK_EQ(q.retry_after, 0);
	httpc_response_free(&r);
	httpc_response_free(&q);
}

/* A port with no listener: bound a moment ago and closed. */
static int dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

TEST(httpc_refused_names_the_server)
{
	struct httpc_options opt = { 0 };
	struct httpc_response r = { .status = 99 };
	struct httpc *h;
	char url[64], want[128], err[256];
	int port = dead_port(), rc;

	CHECK(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	opt.server = url;
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h != NULL);
	rc = httpc_request(h, "GET", "/healthz", NULL, 0, &r, err, sizeof(err));
	httpc_destroy(h);
	CHECK_EQ(rc, -ECONNREFUSED);
	snprintf(want, sizeof(want), "cannot reach %s: Connection refused", url);
	CHECK_STR(err, want);
	CHECK(r.body == NULL && r.status == 0);
}

TEST(httpc_bounds_the_body)
{
	static char answer[4096];
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h;
	char err[256];
	int rc = 0, n;

	n = snprintf(answer, sizeof(answer), "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n");
	memset(answer + n, 'x', 2000);
	CHECK(server_start(&s, answer, (size_t)n + 2000) == 0);
	h = client(&s, NULL, 1000, err, sizeof(err));
	if (h)
		rc = httpc_request(h, "GET", "/big", NULL, 0, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, -EMSGSIZE);
	CHECK_CONTAINS(err, "larger than 1000 bytes");
	CHECK(r.body == NULL);
}

TEST(httpc_exact_bound_is_allowed)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
	struct server s;
	struct httpc_response r = { 0 };
	struct httpc *h;
	char err[256];
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 10, err, sizeof(err));
	if (h)
		rc = httpc_request(h, "GET", "/ten", NULL, 0, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_STR(r.body, "0123456789");
	httpc_response_free(&r);
}

struct lines {
	char **v;
	size_t n;
	int stop_after;		/* > 0: return stop_rc after this many lines */
	int stop_rc;
};

static int collect(const char *line, size_t len, void *arg)
{
	struct lines *l = arg;

	if (strlen(line) != len)
		return -EPROTO;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = strdup(line);
	if (l->stop_after && (int)l->n == l->stop_after)
		return l->stop_rc;
	return 0;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* text as a chunked response, in chunks of random sizes */
static char *chunked(const char *text, size_t len, uint64_t *rng, size_t *outlen)
{
	size_t cap = len * 2 + 1024, n = 0, off = 0;
	char *out = malloc(cap);

	n += (size_t)sprintf(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	while (off < len) {
		size_t c = 1 + (size_t)(next_rand(rng) % 97);

		if (c > len - off)
			c = len - off;
		if (n + c + 32 > cap)
			out = realloc(out, cap = cap * 2 + c + 32);
		n += (size_t)sprintf(out + n, "%zx\r\n", c);
		memcpy(out + n, text + off, c);
		n += c;
		n += (size_t)sprintf(out + n, "\r\n");
		off += c;
	}
	if (n + 8 > cap)
		out = realloc(out, cap + 8);
	n += (size_t)sprintf(out + n, "0\r\n\r\n");
	*outlen = n;
	return out;
}

TEST(httpc_stream_matches_naive_split)
{
	uint64_t rng = test_seed() | 1;
	struct lines got = { 0 }, want = { 0 };
	struct httpc_response r = { 0 };
	struct server s;
	struct httpc *h = NULL;
	char *text, *answer, err[256];
	size_t len = 0, alen, nlines = 200 + next_rand(&rng) % 200;
	int rc = -1;

	text = malloc(nlines * 604 + 1);
	for (size_t i = 0; i < nlines; i++) {
		size_t n = next_rand(&rng) % 5 == 0 ? 0 : next_rand(&rng) % 600;

		for (size_t j = 0; j < n; j++)
			text[len++] = (char)(' ' + 1 + next_rand(&rng) % 94);
		if (next_rand(&rng) % 4 == 0)
			text[len++] = '\r';
		text[len++] = '\n';
	}
	text[len] = 0;
	/* the naive reference: split on '\n', drop a '\r' before it, skip empty */
	for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
		size_t n = (size_t)(nl - p);

		if (n && p[n - 1] == '\r')
			n--;
		if (n) {
			char save = p[n];

			p[n] = 0;
			collect(p, n, &want);
			p[n] = save;
		}
	}
	answer = chunked(text, len, &rng, &alen);
	if (server_start(&s, answer, alen) == 0) {
		s.slice = 700;
		h = client(&s, "t", 4096, err, sizeof(err));
		if (h)
			rc = httpc_stream(h, "/api/v1/pods?watch=1", collect, &got, &r, err, sizeof(err));
		httpc_destroy(h);
		server_stop(&s);
	}
	free(answer);
	free(text);
	if (rc)
		test_fail(__FILE__, __LINE__, "stream: %d %s", rc, err);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.status, 200);
	CHECK_EQ(got.n, want.n);
	for (size_t i = 0; i < want.n; i++)
		CHECK_STR(got.v[i], want.v[i]);
	httpc_response_free(&r);
	lines_free(&got);
	lines_free(&want);
}

TEST(httpc_stream_last_line_without_newline)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\none\ntwo\nx";
	struct lines got = { 0 };
	struct httpc_response r = { 0 };
	struct server s;
	struct httpc *h;
	char err[256];
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 0, err, sizeof(err));
	if (h)
		rc = httpc_stream(h, "/w", collect, &got, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(got.n, 3);
	CHECK_STR(got.v[2], "x");
	httpc_response_free(&r);
	lines_free(&got);
}

TEST(httpc_stream_error_status_is_gathered)
{
	static const char answer[] =
		"HTTP/1.1 410 Gone\r\nContent-Length: 31\r\n\r\n{\"reason\":\"Expired\"}\n{\"more\":1}";
	struct lines got = { 0 };
	struct httpc_response r = { 0 };
	struct server s;
	struct httpc *h;
	char err[256];
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 0, err, sizeof(err));
	if (h)
		rc = httpc_stream(h, "/w", collect, &got, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.status, 410);
	CHECK_EQ(got.n, 0);
	CHECK_STR(r.body, "{\"reason\":\"Expired\"}\n{\"more\":1}");
	httpc_response_free(&r);
	lines_free(&got);
}

TEST(httpc_stream_stops_when_told)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\na\nb\nc\nd\n";
	struct server s;
	struct httpc *h;
	char err[256];
	int rc1 = -1, rc2 = -1;
	struct lines clean = { .stop_after = 2, .stop_rc = 1 }, failed = { .stop_after = 1, .stop_rc = -ECANCELED };

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 0, err, sizeof(err));
	if (h) {
		struct httpc_response r;

		rc1 = httpc_stream(h, "/w", collect, &clean, &r, err, sizeof(err));
		httpc_response_free(&r);
		rc2 = httpc_stream(h, "/w", collect, &failed, &r, err, sizeof(err));
		httpc_response_free(&r);
	}
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc1, 0);
	CHECK_EQ(clean.n, 2);
	CHECK_EQ(rc2, -ECANCELED);
	CHECK_EQ(failed.n, 1);
	lines_free(&clean);
	lines_free(&failed);
}

/* A stream that stays open: the interrupt ends it with -EINTR once its
 * question says so (here: after the first line), within about a second,
 * and the handle serves the next call. */
static bool asked_again(void *arg)
{
	const struct lines *l = arg;

	return l->n >= 1;
}

TEST(httpc_interrupt_ends_an_open_stream)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				     "6\r\nfirst\n\r\n";	/* no last chunk: it stays open */
	struct lines got = { 0 };
	struct httpc_response r = { 0 };
	struct timespec t0, t1;
	struct server s;
	struct httpc *h;
	char err[256] = "";
	int rc = -1;

	CHECK(server_start(&s, answer, strlen(answer)) == 0);
	h = client(&s, NULL, 0, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (h) {
		httpc_set_interrupt(h, asked_again, &got);
		rc = httpc_stream(h, "/w", collect, &got, &r, err, sizeof(err));
		httpc_response_free(&r);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ(rc, -EINTR);
	CHECK(strstr(err, "interrupted") != NULL);
	CHECK_EQ(got.n, 1);
	CHECK(t1.tv_sec - t0.tv_sec < 5);
	/* the next call on the handle is not interrupted by the last one's
	 * question once the question is gone */
	if (h) {
		httpc_set_interrupt(h, NULL, NULL);
		got.stop_after = 2;
		got.stop_rc = 1;
		rc = httpc_stream(h, "/w", collect, &got, &r, err, sizeof(err));
		httpc_response_free(&r);
		CHECK_EQ(rc, 0);
		CHECK_EQ(got.n, 2);
	}
	httpc_destroy(h);
	server_stop(&s);
	lines_free(&got);
}

TEST(httpc_stream_line_bound)
{
	static char answer[8192];
	struct lines got = { 0 };
	struct httpc_response r = { 0 };
	struct server s;
	struct httpc *h;
	char err[256];
	int rc = 0, n;

	n = snprintf(answer, sizeof(answer), "HTTP/1.1 200 OK\r\nContent-Length: 3002\r\n\r\nok\n");
	memset(answer + n, 'y', 2999);
	CHECK(server_start(&s, answer, (size_t)n + 3002) == 0);
	h = client(&s, NULL, 1000, err, sizeof(err));
	if (h)
		rc = httpc_stream(h, "/w", collect, &got, &r, err, sizeof(err));
	httpc_destroy(h);
	server_stop(&s);
	CHECK_EQ(rc, -EMSGSIZE);
	CHECK_EQ(got.n, 1);
	lines_free(&got);
}

TEST(httpc_token_file_errors)
{
	struct httpc_options opt = { .server = "http://127.0.0.1:1" };
	char path[512], err[512];
	struct httpc *h;
	FILE *f;

	snprintf(path, sizeof(path), "%s/missing", test_tmpdir());
	opt.token_file = path;
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK_CONTAINS(err, path);

	snprintf(path, sizeof(path), "%s/empty", test_tmpdir());
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("\n\n", f);
	fclose(f);
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_CONTAINS(err, "is empty");

	snprintf(path, sizeof(path), "%s/two-lines", test_tmpdir());
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("abc\nX-Evil: 1\n", f);
	fclose(f);
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(strstr(err, "X-Evil") == NULL);
}

TEST(httpc_bad_arguments)
{
	struct httpc_options opt = { .server = "ftp://x" };
	struct httpc_response r;
	struct httpc *h;
	char err[256];

	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	opt.server = "http://";
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	opt.server = "http://127.0.0.1:1";
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h != NULL);
	CHECK_STR(httpc_server(h), "http://127.0.0.1:1");
	CHECK_EQ(httpc_request(h, "get", "/x", NULL, 0, &r, err, sizeof(err)), -EINVAL);
	CHECK_EQ(httpc_request(h, "GET", "x", NULL, 0, &r, err, sizeof(err)), -EINVAL);
	CHECK_EQ(httpc_request(h, "GET", "/a b", NULL, 0, &r, err, sizeof(err)), -EINVAL);
	httpc_cancel(h);
	CHECK_EQ(httpc_request(h, "GET", "/x", NULL, 0, &r, err, sizeof(err)), -ECANCELED);
	httpc_destroy(h);
	httpc_destroy(NULL);
}

TEST(httpc_tls_options_errors)
{
	struct httpc_options opt = { .server = "https://127.0.0.1:1" };
	char path[512], err[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/no-ca", test_tmpdir());
	opt.ca_file = path;
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK_CONTAINS(err, path);
	snprintf(path, sizeof(path), "%s/not-pem", test_tmpdir());
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("hello\n", f);
	fclose(f);
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_CONTAINS(err, "no PEM certificate");
	/* past the bound (1 MiB), a certificate in it or not */
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("-----BEGIN CERTIFICATE-----\n", f);
	for (int i = 0; i < (1 << 20) / 64 + 1; i++)
		fputs("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", f);
	fclose(f);
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EFBIG);
	CHECK_CONTAINS(err, "larger than 1048576 bytes");
	opt.ca_file = NULL;
	opt.ca_pem = "x";
	opt.ca_len = 1;
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, "not PEM certificates");
	opt.ca_pem = NULL;
	opt.token = "a\nX-Evil: 1";
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(strstr(err, "X-Evil") == NULL);
	opt.token = "abc";
	opt.token_file = path;
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, "both given");
}

/* The token given as a string goes out as the file's does. */
TEST(httpc_token_string)
{
	struct server s;
	struct httpc_options opt = { .token = "s3cret" };
	struct httpc_response r;
	struct httpc *h;
	char url[64], err[256];

	CHECK(server_start(&s, OK_JSON, sizeof(OK_JSON) - 1) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	opt.server = url;
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h != NULL);
	CHECK_EQ(httpc_request(h, "GET", "/x", NULL, 0, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	httpc_destroy(h);
	server_stop(&s);
	CHECK_CONTAINS(s.request, "Authorization: Bearer s3cret\r\n");
}


/* Several replicas: a request skips the ones that refuse, stays on the
 * first that answers, and moves on again when that one goes. */
#define CLOSE_JSON "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 7\r\n\r\n{\"a\":1}"

TEST(httpc_fails_over_to_the_next_replica)
{
	struct server a, b;
	struct httpc_options opt = { 0 };
	struct httpc_response r = { 0 };
	struct httpc *h;
	char url[256], want[64], err[256];
	int dead = dead_port();

	CHECK(dead > 0);
	/* each answer closes its connection, so that a server can stop */
	CHECK(server_start(&a, CLOSE_JSON, sizeof(CLOSE_JSON) - 1) == 0);
	CHECK(server_start(&b, CLOSE_JSON, sizeof(CLOSE_JSON) - 1) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d,http://127.0.0.1:%d/,http://127.0.0.1:%d", dead, a.port,
		 b.port);
	opt.server = url;
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h != NULL);
	CHECK_EQ(httpc_request(h, "POST", "/x", "{}", 2, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.status, 200);
	httpc_response_free(&r);
	snprintf(want, sizeof(want), "http://127.0.0.1:%d", a.port);
	CHECK_STR(httpc_server(h), want);
	CHECK_EQ(httpc_request(h, "GET", "/y", NULL, 0, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	CHECK_EQ(a.accepts, 2);		/* stayed on it */
	CHECK_EQ(b.accepts, 0);
	server_stop(&a);
	CHECK_EQ(httpc_request(h, "GET", "/z", NULL, 0, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	snprintf(want, sizeof(want), "http://127.0.0.1:%d", b.port);
	CHECK_STR(httpc_server(h), want);
	CHECK_CONTAINS(b.request, "GET /z HTTP/1.1\r\n");
	server_stop(&b);
	/* none left: the error names the last one tried */
	CHECK_EQ(httpc_request(h, "GET", "/z", NULL, 0, &r, err, sizeof(err)), -ECONNREFUSED);
	CHECK_CONTAINS(err, "cannot reach http://127.0.0.1:");
	httpc_destroy(h);

	opt.server = "http://127.0.0.1:1,ftp://x";
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, "invalid server URL 'ftp://x'");
	opt.server = "http://127.0.0.1:1,";
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, "invalid server URL ''");
}

/* etcd's gateway: a bare token, replaced after a login; a watch is a POST. */
TEST(httpc_bare_token_and_post_stream)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"a\":1}\n{\"b\"";
	struct server s;
	struct httpc_options opt = { .token = "first", .auth_scheme = "" };
	struct httpc_response r;
	struct httpc *h;
	char url[64], err[256];
	struct lines log = { 0 };

	CHECK(server_start(&s, answer, sizeof(answer) - 1) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	opt.server = url;
	h = httpc_create(&opt, err, sizeof(err));
	CHECK(h != NULL);
	CHECK_EQ(httpc_request(h, "GET", "/x", NULL, 0, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	CHECK_CONTAINS(s.request, "\r\nAuthorization: first\r\n");
	CHECK_EQ(httpc_set_token(h, "a\r\nX-Evil: 1"), -EINVAL);
	CHECK_EQ(httpc_set_token(h, "second"), 0);
	CHECK_EQ(httpc_stream_post(h, "/v3/watch", "{\"w\":1}", 7, collect, &log, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	CHECK_CONTAINS(s.request, "POST /v3/watch HTTP/1.1\r\n");
	CHECK_CONTAINS(s.request, "\r\nAuthorization: second\r\n");
	CHECK_CONTAINS(s.request, "\r\n\r\n{\"w\":1}");
	CHECK_EQ(log.n, 2);
	if (log.n == 2) {
		CHECK_STR(log.v[0], "{\"a\":1}");
		CHECK_STR(log.v[1], "{\"b\"");
	}
	lines_free(&log);
	CHECK_EQ(httpc_set_token(h, NULL), 0);
	CHECK_EQ(httpc_request(h, "GET", "/x", NULL, 0, &r, err, sizeof(err)), 0);
	httpc_response_free(&r);
	CHECK(strstr(s.request, "Authorization") == NULL);
	httpc_destroy(h);
	server_stop(&s);

	opt.token = NULL;
	opt.cert_file = "/nonexistent/client.crt";
	CHECK(httpc_create(&opt, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_CONTAINS(err, "a client certificate without its key");
}

static void count_connected(void *arg)
{
	(*(int *)arg)++;
}

/* options.connected: for each request once its connection is up (the
 * second on the connection kept alive: no new one), never when none is
 * made */
TEST(httpc_says_when_connected)
{
	struct server s;
	struct httpc *h = NULL;
	char url[64], err[256];
	int connected = 0, rc0 = -1, rc1 = -1, rc2 = 0;

	CHECK(server_start(&s, OK_JSON, strlen(OK_JSON)) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	{
		struct httpc_options opt = { .server = url, .timeout_ms = 10000, .connected = count_connected,
					     .connected_arg = &connected };
		struct httpc_response r;

		h = httpc_create(&opt, err, sizeof(err));
		if (h) {
			rc0 = httpc_request(h, "GET", "/x", NULL, 0, &r, err, sizeof(err));
			httpc_response_free(&r);
			rc1 = httpc_request(h, "GET", "/y", NULL, 0, &r, err, sizeof(err));
			httpc_response_free(&r);
		}
	}
	httpc_destroy(h);
	server_stop(&s);
	{	/* nobody listens there now */
		struct httpc_options opt = { .server = url, .connect_timeout_ms = 2000, .connected = count_connected,
					     .connected_arg = &connected };
		struct httpc_response r;

		h = httpc_create(&opt, err, sizeof(err));
		if (h)
			rc2 = httpc_request(h, "GET", "/z", NULL, 0, &r, err, sizeof(err));
		httpc_destroy(h);
	}
	CHECK_EQ(rc0, 0);
	CHECK_EQ(rc1, 0);
	CHECK(rc2 < 0);
	CHECK_EQ(connected, 2);
	CHECK_EQ(s.accepts, 1);
}
