/*
 * controller_bench.c — how fast weft-controller writes and fans out, as
 * ratios against references measured in the same run (the machine is shared
 * and noisy; absolute figures are printed too, the goals are ratios).
 *
 *   build/release/bench/controller/controller_bench
 *
 * Phases, each on a fresh temporary directory:
 *
 *   1. store ceiling   store_open("sqlite:DIR/bench.db") (the controller's
 *                      code and settings) and N create transactions shaped
 *                      like a pod create: compare "key absent", put a
 *                      600-byte pod under /weft/obj/pods/default/p-<i>.
 *                      Measured before and after phase 2; the reference is
 *                      the mean of the two, and their spread shows the noise.
 *   2. API             a real weft-controller; over one keep-alive HTTP/1.1
 *                      connection: node registrations/s, then pod creates/s
 *                      (the same 600-byte pods), each as a ratio of 1.
 *   2b. TLS cost       two controllers, one serving HTTPS, one plain HTTP
 *                      (--insecure-http, loopback); GETs of one pod on one
 *                      keep-alive connection to each, then on several,
 *                      interleaved; client on CPU 0, controllers on CPU 1.
 *                      Ratio = HTTPS rate / plain rate.
 *   2c. TLS floor      the same against the floor server (floor.h): the
 *                      least any server must do for these GETs, with the
 *                      controller's certificates and TLS priorities.
 *   3. watch fan-out   for W = 1 and W = BENCH_WATCHERS, a fresh controller,
 *                      W watch streams on raw sockets in one epoll thread
 *                      (from the pod list's resourceVersion), then C pod
 *                      creates from the main thread on one keep-alive
 *                      connection.  Latency of one delivery = arrival at a
 *                      watcher − CLOCK_MONOTONIC just before the create was
 *                      sent.  Every watcher must see every pod exactly once.
 *                      Then W = 1 and W = BENCH_WATCHERS against the floor
 *                      server, with the same client and churn: what this
 *                      machine allows a server that does nothing else.
 *   3b. selected       W = BENCH_WATCHERS watchers of the controller, each
 *                      asking fieldSelector=spec.nodeName=node-<i mod N>
 *                      (N = min(W, 510) nodes), and pod j created on
 *                      node-<j mod N>: each create is for W/N watchers, a
 *                      pod delivered to a watcher of another node is an
 *                      error.  Ratio = its p99 ÷ the unfiltered W's p99.
 *   4. controller RSS  VmHWM of the W = BENCH_WATCHERS controller.
 *   5. big lists       BENCH_LIST_PODS pods of BENCH_LIST_BYTES (a big
 *                      annotation) written straight into a fresh store,
 *                      a controller on it; GET /healthz and a small GET
 *                      probed on their own connections, first idle (2 s),
 *                      then while BENCH_LISTS clients each list every pod
 *                      BENCH_LIST_ROUNDS times.  Ratio = p99 busy ÷ p99 idle.
 *
 * Every controller serves HTTPS as it does by default (but the plain one of
 * 2b), and the client verifies its certificate against DIR/pki/ca.crt
 * (tls.h), as every client of the API must.
 *
 * Output: a table, then one "GOAL name: value (goal X) PASS|FAIL" line per
 * goal.  Exit 0 when the measurement completed (goals may fail), 1 when the
 * benchmark broke (controller did not start or died, a request failed, an
 * event was missing or duplicated), 2 on a bad environment variable.
 *
 * Environment: BENCH_TXNS (phase 1 and 2 pod count, 5000, at most 130304:
 * phase 2 creates twice as many, 509 on each of at most 512 nodes),
 * BENCH_NODES (500, at most 510: the default cluster network has 512
 * subnets), BENCH_WATCHERS (1000), BENCH_CHURN (10000, at most 260608), BENCH_GETS (20000, phase 2b), BENCH_LIST_PODS
 * (20000; 0 skips phase 5), BENCH_LIST_BYTES (2250), BENCH_LISTS (8),
 * BENCH_LIST_ROUNDS (2), WEFT_CONTROLLER (build/release/bin/weft-controller),
 * TMPDIR (/tmp).
 *
 * The watch client, per connection:
 *
 *   HEADERS ──(status 200, chunked)──► CHUNK_SIZE ──► CHUNK_DATA ──► CHUNK_CRLF ─┐
 *      │                                   ▲  └─(size 0)──► END                 │
 *      └─(other status)──► failed           └────────────────────────────────────┘
 *
 * CHUNK_DATA bytes go to a line splitter (lines may span chunks and reads);
 * a blank line is a heartbeat.  A stream that ends before the watcher has
 * every pod is reopened from the last resourceVersion it saw (the API lets
 * the controller drop a slow watcher); such resumes are counted and shown.
 *
 * Invariants
 *  1. Only the controllers this program forked are signalled, by PID, and
 *     only the directories it made are removed.
 *  2. t0[i] is written (release) before create i is sent; a watcher reads
 *     it (acquire) after the event arrived, so it never reads a stale 0.
 */
#include "store/store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"
#include "tls.h"

#define POD_BYTES		600
#define MAX_NODES		510
#define HEALTH_TIMEOUT_S	20
#define READY_TIMEOUT_S		60
#define DRAIN_IDLE_S		10	/* churn done and no event for this long: stop waiting */
#define IO_TIMEOUT_S		30	/* one HTTP request on the main connection */
#define MAX_RESUMES		50	/* per watcher */
#define LINE_MAX_BYTES		(1u << 20)
#define BODY_MAX_BYTES		(64u << 20)
#define HEADER_MAX_BYTES	8192

/* ------------------------------------------------------------------ time */

/* creates/s of the churn; 0 = closed loop (next create when the last is answered) */
static unsigned churn_rate;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double seconds_since(uint64_t start)
{
	return (double)(now_ns() - start) / 1e9;
}

/* ------------------------------------------------------------------ cleanup */

static char *tmp_dirs[16];	/* every phase's, removed at the end */
static size_t ntmp_dirs;
static volatile sig_atomic_t interrupted;
static volatile pid_t running_controller;	/* killed by the signal handler (invariant 1) */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static char *tmpdir_new(void)
{
	const char *base = getenv("TMPDIR");
	char path[4096], *d;

	if (ntmp_dirs == sizeof(tmp_dirs) / sizeof(tmp_dirs[0])) {
		fprintf(stderr, "bench: more than %zu temporary directories\n", ntmp_dirs);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/weft-bench.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(path)) {
		fprintf(stderr, "bench: mkdtemp %s: %s\n", path, strerror(errno));
		return NULL;
	}
	d = strdup(path);
	if (!d) {
		rmdir(path);
		return NULL;
	}
	tmp_dirs[ntmp_dirs++] = d;
	return d;
}

static void tmpdirs_remove(void)
{
	for (size_t i = 0; i < ntmp_dirs; i++) {
		(void)nftw(tmp_dirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(tmp_dirs[i]);
	}
	ntmp_dirs = 0;
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (running_controller > 0)
		kill(running_controller, SIGKILL);	/* every blocked request then fails */
}

/* ------------------------------------------------------------------ bodies */

/* A pod of exactly POD_BYTES bytes (padded by an annotation); its name
 * appears once, as metadata.name "p-<i>".  Its node and address are ones
 * the controller accepts (a pod's address is its node's to give, one pod
 * an address): pods fill node-0's subnet, then node-1's, ...; node-k has
 * the k-th /23 of 10.128.0.0/14 when it is the (k+1)-th node registered
 * on a fresh store (bench_nodes, pod_nodes register them in that order). */
#define POD_HEAD								\
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%u\","	\
	"\"namespace\":\"default\",\"labels\":{\"app\":\"bench\",\"tier\":\"web\","		\
	"\"release\":\"stable\"},\"annotations\":{\"bench.weft.io/pad\":\""
#define POD_TAIL								\
	"\"}},\"spec\":{\"nodeName\":\"node-%u\",\"containers\":[{\"name\":\"app\","		\
	"\"image\":\"registry.example.com/bench/web:1.2.3\",\"ports\":["		\
	"{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"},"		\
	"{\"name\":\"metrics\",\"containerPort\":9090,\"protocol\":\"TCP\"}]}]},"	\
	"\"status\":{\"podIP\":\"%u.%u.%u.%u\"}}"
#define PODS_PER_NODE 509	/* a /23 without its network, gateway and broadcast */

/* Where pod i goes: packed (node 0 until its subnet is full, then node
 * 1, ...), or, while pod_spread is set (the selective fan-out run), pod i
 * on node i % pod_spread, so that every node gets pods from the start. */
static unsigned pod_spread;
static unsigned pod_node(unsigned i) { return pod_spread ? i % pod_spread : i / PODS_PER_NODE; }
static unsigned pod_slot(unsigned i) { return pod_spread ? i / pod_spread : i % PODS_PER_NODE; }
/* Nodes that npods > 0 pods occupy: node-0 .. node-(n-1). */
static unsigned pod_node_count(unsigned npods)
{
	return pod_spread ? (npods < pod_spread ? npods : pod_spread) : pod_node(npods - 1) + 1;
}

static int pod_json(char *buf, size_t len, unsigned i)
{
	uint32_t ip = 0x0a800000u + pod_node(i) * 512u + 2 + pod_slot(i);
	char h[512], t[512];
	int hn, tn, pad;

	hn = snprintf(h, sizeof(h), POD_HEAD, i);
	tn = snprintf(t, sizeof(t), POD_TAIL, pod_node(i), ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	pad = POD_BYTES - hn - tn;
	if (pad < 0 || (size_t)POD_BYTES + 1 > len)
		return -1;
	memcpy(buf, h, (size_t)hn);
	memset(buf + hn, 'x', (size_t)pad);
	memcpy(buf + hn + pad, t, (size_t)tn + 1);
	return POD_BYTES;
}

static int node_json(char *buf, size_t len, unsigned i)
{
	return snprintf(buf, len,
			"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%u\"},"
			"\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"192.168.%u.%u\"}]}}",
			i, i / 250, i % 250 + 1);
}

/* ------------------------------------------------------------------ 1. store */

static int bench_store(const char *dir, const char *file, unsigned n, double *secs)
{
	char url[4200], key[128], value[POD_BYTES + 1], err[512];
	struct store *s;
	uint64_t start;
	int rc = 0;

	snprintf(url, sizeof(url), "sqlite:%s/%s", dir, file);
	s = store_open(url, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "bench: store_open %s: %s\n", url, err);
		return -1;
	}
	start = now_ns();
	for (unsigned i = 0; i < n && !interrupted; i++) {
		struct store_cmp cmp = { key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 };
		struct store_op op = { STORE_OP_PUT, key, value, 0 };
		struct store_txn txn = { &cmp, 1, &op, 1, NULL, 0 };
		struct store_txn_result res;
		int e;

		snprintf(key, sizeof(key), "/weft/obj/pods/default/p-%u", i);
		op.value_len = (size_t)pod_json(value, sizeof(value), i);
		e = store_txn(s, &txn, &res);
		if (e || !res.succeeded) {
			fprintf(stderr, "bench: store txn %u (%s): %s\n", i, key,
				e ? strerror(-e) : "compare failed on a fresh store");
			rc = -1;
			break;
		}
	}
	*secs = seconds_since(start);
	store_close(s);
	return interrupted ? -1 : rc;
}

/* ------------------------------------------------------------------ HTTP client */

struct dbuf {
	char *data;
	size_t len, cap;
};

static int dbuf_add(struct dbuf *b, const char *s, size_t n, size_t max)
{
	if (b->len + n + 1 > max)
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

static int tcp_connect(int port, bool blocking_timeouts)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		close(fd);
		return -e;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (blocking_timeouts) {
		struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static int write_all(int fd, gnutls_session_t tls, const char *p, size_t n)
{
	while (n) {
		ssize_t w = tls_send(fd, tls, p, n);
		if (w < 0) {
			if (errno == EINTR && !interrupted)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Chunked transfer decoding (RFC 9112 §7.1), fed any slice of the stream. */
enum chunk_state { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER, CK_END };

struct chunked {
	enum chunk_state state;
	uint64_t remain;	/* CK_DATA: bytes left in this chunk */
	unsigned digits;
	bool trailer_empty;	/* CK_TRAILER: the current trailer line is empty so far */
};

typedef int (*chunk_sink)(void *arg, const char *data, size_t n);

/* 0: consumed all of in; 1: the last chunk and trailers ended (*used bytes
 * consumed); -EPROTO: malformed; or the sink's error. */
static int chunked_feed(struct chunked *c, const char *in, size_t n, size_t *used, chunk_sink sink, void *arg)
{
	size_t i = 0;

	while (i < n) {
		char ch = in[i];

		switch (c->state) {
		case CK_SIZE:
			if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')) {
				int v = ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
				if (++c->digits > 15)
					return -EPROTO;
				c->remain = c->remain * 16 + (uint64_t)v;
			} else if (c->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
				c->state = CK_EXT;
			} else if (c->digits && ch == '\r') {
				c->state = CK_SIZE_LF;
			} else {
				return -EPROTO;
			}
			i++;
			break;
		case CK_EXT:
			if (ch == '\r')
				c->state = CK_SIZE_LF;
			i++;
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				return -EPROTO;
			i++;
			c->digits = 0;
			if (c->remain == 0) {
				c->state = CK_TRAILER;
				c->trailer_empty = true;
			} else {
				c->state = CK_DATA;
			}
			break;
		case CK_DATA: {
			size_t take = n - i < c->remain ? n - i : (size_t)c->remain;
			int e = sink(arg, in + i, take);
			if (e)
				return e;
			i += take;
			c->remain -= take;
			if (c->remain == 0)
				c->state = CK_DATA_CR;
			break;
		}
		case CK_DATA_CR:
			if (ch != '\r')
				return -EPROTO;
			c->state = CK_DATA_LF;
			i++;
			break;
		case CK_DATA_LF:
			if (ch != '\n')
				return -EPROTO;
			c->state = CK_SIZE;
			i++;
			break;
		case CK_TRAILER:
			i++;
			if (ch == '\n') {
				if (c->trailer_empty) {
					c->state = CK_END;
					*used = i;
					return 1;
				}
				c->trailer_empty = true;
			} else if (ch != '\r') {
				c->trailer_empty = false;
			}
			break;
		case CK_END:
			*used = i;
			return 1;
		}
	}
	*used = i;
	return 0;
}

/* Parsed response head. */
struct head {
	int status;
	bool chunked;
	bool close;
	long long content_length;	/* -1: none */
};

/* Parse "HTTP/1.x NNN ...\r\n(headers)\r\n\r\n" of length n. */
static int head_parse(const char *h, size_t n, struct head *out)
{
	const char *p = h, *end = h + n, *eol;

	memset(out, 0, sizeof(*out));
	out->content_length = -1;
	if (n < 12 || strncmp(h, "HTTP/1.", 7) != 0)
		return -EPROTO;
	out->status = atoi(h + 9);
	if (out->status < 100 || out->status > 599)
		return -EPROTO;
	if (h[7] == '0')
		out->close = true;
	while ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) && eol != p) {
		size_t len = (size_t)(eol - p);
		if (len > 15 && strncasecmp(p, "content-length:", 15) == 0)
			out->content_length = strtoll(p + 15, NULL, 10);
		else if (len > 18 && strncasecmp(p, "transfer-encoding:", 18) == 0 &&
			 memmem(p, len, "chunked", 7))
			out->chunked = true;
		else if (len > 11 && strncasecmp(p, "connection:", 11) == 0 && memmem(p, len, "close", 5))
			out->close = true;
		p = eol + 2;
	}
	return 0;
}

/* One keep-alive connection for plain requests. */
struct http {
	int fd;
	gnutls_session_t tls;			/* on fd; NULL: plain HTTP */
	gnutls_certificate_credentials_t cred;	/* the controller's CA; NULL: it serves plain HTTP */
	int port;
	const char *token;
	struct dbuf in;		/* bytes read past the last response */
	unsigned connects;	/* 1 when keep-alive held throughout */
};

static int body_sink(void *arg, const char *data, size_t n)
{
	return dbuf_add(arg, data, n, BODY_MAX_BYTES);
}

/* Fill h->in until it holds more than have bytes.  0, or -errno / -EPIPE at EOF. */
static int http_fill(struct http *h, size_t have)
{
	char tmp[65536];

	while (h->in.len <= have) {
		ssize_t r = tls_recv(h->fd, h->tls, tmp, sizeof(tmp));
		if (r == 0)
			return -EPIPE;
		if (r < 0) {
			if (errno == EINTR && !interrupted)
				continue;
			return -errno;
		}
		if (dbuf_add(&h->in, tmp, (size_t)r, BODY_MAX_BYTES + HEADER_MAX_BYTES))
			return -E2BIG;
	}
	return 0;
}

static void http_consume(struct http *h, size_t n)
{
	memmove(h->in.data, h->in.data + n, h->in.len - n);
	h->in.len -= n;
}

static void http_drop(struct http *h)
{
	tls_end(&h->tls);
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->in.len = 0;
}

/* One request; resp receives the body (NUL-terminated).  Returns 0 and
 * *status, or -errno when the exchange failed. */
static int http_do(struct http *h, const char *method, const char *path, const char *body, size_t len,
		   int *status, struct dbuf *resp)
{
	char req[8192];
	struct dbuf out = { 0 };
	struct head hd;
	char *eoh;
	size_t hlen;
	int n, e;

	resp->len = 0;
	if (h->fd < 0) {
		h->fd = tcp_connect(h->port, true);
		if (h->fd < 0) {
			e = h->fd;
			h->fd = -1;
			return e;
		}
		if (h->cred) {
			const char *why = "";

			if ((e = tls_start(h->fd, h->cred, &h->tls, &why))) {
				fprintf(stderr, "bench: TLS with 127.0.0.1:%d: %s\n", h->port, why);
				http_drop(h);
				return e;
			}
		}
		h->connects++;
	}
	n = snprintf(req, sizeof(req),
		     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%s"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		     method, path, h->port, h->token ? "Authorization: Bearer " : "", h->token ? h->token : "",
		     h->token ? "\r\n" : "", body ? len : 0);
	if (n < 0 || (size_t)n >= sizeof(req))
		return -E2BIG;
	/* one send of head and body: no Nagle/delayed-ACK stall between them */
	if ((e = dbuf_add(&out, req, (size_t)n, BODY_MAX_BYTES)) || (body && (e = dbuf_add(&out, body, len, BODY_MAX_BYTES))))
		goto out;
	if ((e = write_all(h->fd, h->tls, out.data, out.len)))
		goto fail;
	while (!(eoh = h->in.len ? memmem(h->in.data, h->in.len, "\r\n\r\n", 4) : NULL)) {
		if (h->in.len > HEADER_MAX_BYTES) {
			e = -EPROTO;
			goto fail;
		}
		if ((e = http_fill(h, h->in.len)))
			goto fail;
	}
	hlen = (size_t)(eoh - h->in.data) + 4;
	if ((e = head_parse(h->in.data, hlen, &hd)))
		goto fail;
	http_consume(h, hlen);
	if (hd.chunked) {
		struct chunked ck = { 0 };
		for (;;) {
			size_t used = 0;
			if (h->in.len) {
				e = chunked_feed(&ck, h->in.data, h->in.len, &used, body_sink, resp);
				http_consume(h, used);
				if (e == 1)
					break;
				if (e)
					goto fail;
			}
			if ((e = http_fill(h, 0)))
				goto fail;
		}
	} else if (hd.content_length >= 0) {
		if ((unsigned long long)hd.content_length > BODY_MAX_BYTES) {
			e = -E2BIG;
			goto fail;
		}
		if (hd.content_length > 0 && (e = http_fill(h, (size_t)hd.content_length - 1)))
			goto fail;
		e = dbuf_add(resp, h->in.data ? h->in.data : "", (size_t)hd.content_length, BODY_MAX_BYTES);
		if (e)
			goto fail;
		http_consume(h, (size_t)hd.content_length);
	} else {
		/* delimited by close */
		while ((e = http_fill(h, h->in.len)) == 0)
			;
		if ((e = dbuf_add(resp, h->in.data ? h->in.data : "", h->in.len, BODY_MAX_BYTES)))
			goto fail;
		hd.close = true;
	}
	if (!resp->data && (e = dbuf_add(resp, "", 0, 1)))
		goto fail;
	*status = hd.status;
	if (hd.close)
		http_drop(h);
	e = 0;
	goto out;
fail:
	http_drop(h);
out:
	free(out.data);
	return e;
}

/* http_do with a diagnostic for anything but want; 0 when answered want. */
static int http_expect(struct http *h, const char *method, const char *path, const char *body, size_t len,
		       int want, struct dbuf *resp)
{
	int status = 0, e = http_do(h, method, path, body, len, &status, resp);

	if (e) {
		fprintf(stderr, "bench: %s %s: %s\n", method, path, strerror(-e));
		return -1;
	}
	if (status != want) {
		fprintf(stderr, "bench: %s %s: HTTP %d (want %d): %.300s\n", method, path, status, want,
			resp->data ? resp->data : "");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ controller process */

struct controller {
	pid_t pid;
	int port;
	bool plain;				/* started with --insecure-http */
	gnutls_certificate_credentials_t cred;	/* trusts its DIR/pki/ca.crt; NULL when plain */
	char dir[4096];
	char token[256];
	int exit_status;	/* from waitpid, once reaped */
	bool reaped;
};

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static void controller_log_tail(const struct controller *c)
{
	char path[4200], line[1024];
	char *lines[20] = { 0 };
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/controller.log", c->dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		free(lines[n % 20]);
		lines[n % 20] = strdup(line);
		n++;
	}
	fclose(f);
	fprintf(stderr, "bench: last lines of %s:\n", path);
	for (size_t i = n > 20 ? n - 20 : 0; i < n; i++)
		fprintf(stderr, "  %s", lines[i % 20] ? lines[i % 20] : "\n");
	for (size_t i = 0; i < 20; i++)
		free(lines[i]);
}

/* Is it still running?  Reaps it if not. */
static bool controller_alive(struct controller *c)
{
	int ws;

	if (c->pid <= 0 || c->reaped)
		return false;
	if (waitpid(c->pid, &ws, WNOHANG) == c->pid) {
		c->reaped = true;
		c->exit_status = ws;
		running_controller = 0;
		return false;
	}
	return true;
}

static void describe_exit(int ws, char *buf, size_t len)
{
	if (WIFSIGNALED(ws))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
	else
		snprintf(buf, len, "exit status %d", WEXITSTATUS(ws));
}

/* Start a controller on dir: HTTPS, or with plain (--insecure-http, on
 * loopback as it must be) plain HTTP; on CPU cpu only when cpu >= 0.
 * Ready when GET /healthz answers, over TLS verified against the CA it
 * made. */
static int controller_start(struct controller *c, const char *path, const char *dir, bool plain, int cpu)
{
	char listen_addr[64], tok_path[4200], ca_path[4200];
	uint64_t deadline;
	struct dbuf resp = { 0 };
	FILE *f;
	int log;

	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->plain = plain;
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	snprintf(ca_path, sizeof(ca_path), "%s/pki/ca.crt", dir);
	c->port = free_port();
	if (c->port < 0) {
		fprintf(stderr, "bench: no free port: %s\n", strerror(errno));
		return -1;
	}
	snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%d", c->port);
	snprintf(tok_path, sizeof(tok_path), "%s/controller.log", dir);
	log = open(tok_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log < 0) {
		fprintf(stderr, "bench: %s: %s\n", tok_path, strerror(errno));
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0) {
		fprintf(stderr, "bench: fork: %s\n", strerror(errno));
		close(log);
		return -1;
	}
	if (c->pid == 0) {
		char *argv[] = { (char *)path, "--data-dir", (char *)dir, "--listen", listen_addr,
				 plain ? "--insecure-http" : NULL, NULL };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			(void)sched_setaffinity(0, sizeof(set), &set);
		}
		dup2(log, 1);
		dup2(log, 2);
		signal(SIGINT, SIG_IGN);	/* ^C reaches the bench, which stops its controller */
		if (strcmp(path, FLOOR_PATH) == 0)
			floor_main(dir, c->port, plain);	/* never returns */
		execv(path, argv);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(log);
	running_controller = c->pid;

	deadline = now_ns() + (uint64_t)HEALTH_TIMEOUT_S * 1000000000u;
	for (;;) {
		struct http h = { .fd = -1, .port = c->port };
		int status = 0, e = -EAGAIN;

		if (!plain && !c->cred)
			c->cred = tls_trust(ca_path);	/* made by the controller as it starts */
		h.cred = c->cred;
		if (plain || c->cred)
			e = http_do(&h, "GET", "/healthz", NULL, 0, &status, &resp);
		http_drop(&h);
		free(h.in.data);
		if (!e && status == 200)
			break;
		if (!controller_alive(c) || interrupted || now_ns() > deadline) {
			char why[128] = "did not answer GET /healthz within 20 s";
			if (c->reaped)
				describe_exit(c->exit_status, why, sizeof(why));
			fprintf(stderr, "bench: %s --data-dir %s --listen %s: %s\n", path, dir, listen_addr, why);
			controller_log_tail(c);
			free(resp.data);
			return -1;
		}
		usleep(50000);
	}
	free(resp.data);
	snprintf(tok_path, sizeof(tok_path), "%s/admin.token", dir);
	f = fopen(tok_path, "r");
	if (!f || !fgets(c->token, sizeof(c->token), f)) {
		fprintf(stderr, "bench: cannot read %s\n", tok_path);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	c->token[strcspn(c->token, "\r\n")] = 0;
	return 0;
}

/* SIGTERM, wait up to 10 s, then SIGKILL.  A controller that does not stop
 * cleanly (exit status 0) is reported, but the figures taken before stand. */
static void controller_stop(struct controller *c)
{
	char why[128];

	if (c->pid <= 0)
		return;
	if (controller_alive(c)) {
		uint64_t deadline = now_ns() + 10ull * 1000000000u;
		kill(c->pid, SIGTERM);
		while (controller_alive(c) && now_ns() < deadline)
			usleep(20000);
	}
	if (!c->reaped) {
		fprintf(stderr, "bench: WARNING controller %d ignored SIGTERM for 10 s; killing it\n", (int)c->pid);
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &c->exit_status, 0);
	} else if (!interrupted && (!WIFEXITED(c->exit_status) || WEXITSTATUS(c->exit_status) != 0)) {
		describe_exit(c->exit_status, why, sizeof(why));
		fprintf(stderr, "bench: WARNING controller %d (data %s) did not stop cleanly: %s\n", (int)c->pid,
			c->dir, why);
		controller_log_tail(c);
	}
	running_controller = 0;
	c->pid = -1;
	explicit_bzero(c->token, sizeof(c->token));
	if (c->cred)
		gnutls_certificate_free_credentials(c->cred);
	c->cred = NULL;
}

/* VmHWM and VmRSS in KiB from /proc/PID/status. */
static int controller_memory(pid_t pid, long *hwm_kib, long *rss_kib)
{
	char path[64], line[256];
	FILE *f;

	*hwm_kib = *rss_kib = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm_kib = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmRSS:", 6) == 0)
			*rss_kib = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	return *hwm_kib < 0 ? -1 : 0;
}

/* CPU seconds (user + system) the process has used, from /proc/PID/stat. */
static int process_cpu(pid_t pid, double *user_s, double *sys_s)
{
	char path[64], buf[2048], *p;
	unsigned long long utime, stime;
	double tick = (double)sysconf(_SC_CLK_TCK);
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the command name may hold spaces */
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
		return -1;
	*user_s = (double)utime / tick;
	*sys_s = (double)stime / tick;
	return 0;
}

static double thread_cpu(pthread_t t)
{
	clockid_t clock;
	struct timespec ts;

	if (pthread_getcpuclockid(t, &clock) || clock_gettime(clock, &ts))
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ 2. API rates */

static int bench_nodes(struct http *h, unsigned n, double *secs)
{
	char body[512];
	struct dbuf resp = { 0 };
	uint64_t start = now_ns();
	int rc = 0;

	for (unsigned i = 0; i < n && rc == 0; i++) {
		int len = node_json(body, sizeof(body), i);
		rc = http_expect(h, "POST", "/api/v1/nodes", body, (size_t)len, 201, &resp);
	}
	*secs = seconds_since(start);
	free(resp.data);
	return rc;
}

/* The nodes pods 0..npods-1 are on (pod_json), registered on a controller
 * that has node-0..node-(have-1) already: 0, or -1 (said). */
static int pod_nodes(struct http *h, unsigned have, unsigned npods)
{
	char body[512];
	struct dbuf resp = { 0 };
	int rc = 0;

	for (unsigned i = have; npods && i < pod_node_count(npods) && rc == 0; i++) {
		int len = node_json(body, sizeof(body), i);
		rc = http_expect(h, "POST", "/api/v1/nodes", body, (size_t)len, 201, &resp);
	}
	free(resp.data);
	return rc;
}

static int bench_pods(struct http *h, unsigned n, double *secs)
{
	char body[POD_BYTES + 1];
	struct dbuf resp = { 0 };
	uint64_t start = now_ns();
	int rc = 0;

	for (unsigned i = 0; i < n && rc == 0; i++) {
		int len = pod_json(body, sizeof(body), i);
		rc = http_expect(h, "POST", "/api/v1/namespaces/default/pods", body, (size_t)len, 201, &resp);
	}
	*secs = seconds_since(start);
	free(resp.data);
	return rc;
}

/* The same creates from several keep-alive connections at once (as many
 * agents report pods at once): client k creates pods k, k+K, k+2K, ... */
struct pods_client {
	struct http h;
	unsigned first, step, n;
	int rc;
};

static void *pods_client_run(void *arg)
{
	struct pods_client *pc = arg;
	char body[POD_BYTES + 1];
	struct dbuf resp = { 0 };

	pc->h.fd = -1;
	for (unsigned i = pc->first; i < pc->n && pc->rc == 0; i += pc->step) {
		int len = pod_json(body, sizeof(body), i);
		pc->rc = http_expect(&pc->h, "POST", "/api/v1/namespaces/default/pods", body, (size_t)len, 201, &resp);
	}
	free(resp.data);
	http_drop(&pc->h);
	return NULL;
}

/* Pods numbered from base (so the names differ from bench_pods'). */
static int bench_pods_concurrent(const struct http *proto, unsigned n, unsigned clients, unsigned base,
				 double *secs)
{
	struct pods_client pc[64];
	pthread_t t[64];
	uint64_t start;
	int rc = 0;

	if (clients > 64)
		clients = 64;
	for (unsigned k = 0; k < clients; k++) {
		memset(&pc[k], 0, sizeof(pc[k]));
		pc[k].h.port = proto->port;
		pc[k].h.token = proto->token;
		pc[k].h.cred = proto->cred;
		pc[k].first = base + k;
		pc[k].step = clients;
		pc[k].n = base + n;
	}
	start = now_ns();
	for (unsigned k = 0; k < clients; k++)
		pthread_create(&t[k], NULL, pods_client_run, &pc[k]);
	for (unsigned k = 0; k < clients; k++) {
		pthread_join(t[k], NULL);
		rc |= pc[k].rc;
	}
	*secs = seconds_since(start);
	return rc;
}

/* ------------------------------------------------------------------ 2b. the price of TLS */

/* One client of the TLS-cost phase: GETs of one pod on its own keep-alive
 * connection (kept across rounds). */
struct getter {
	struct http h;
	unsigned n;
	int rc;
};

#define TLS_ROUNDS 10
#define GET_PATH "/api/v1/namespaces/default/pods/p-0"

static void *getter_run(void *arg)
{
	struct getter *g = arg;
	struct dbuf resp = { 0 };

	for (unsigned i = 0; i < g->n && g->rc == 0 && !interrupted; i++)
		g->rc = http_expect(&g->h, "GET", GET_PATH, NULL, 0, 200, &resp);
	free(resp.data);
	return NULL;
}

/* n GETs spread over k getters at once; adds the wall time to *secs. */
static int timed_gets(struct getter *g, unsigned k, unsigned n, double *secs)
{
	pthread_t t[64];
	uint64_t start = now_ns();
	int rc = 0;

	for (unsigned i = 0; i < k; i++) {
		g[i].n = n / k + (i < n % k);
		if (k > 1 && pthread_create(&t[i], NULL, getter_run, &g[i]))
			return -1;
	}
	if (k == 1)
		getter_run(&g[0]);
	for (unsigned i = 0; k > 1 && i < k; i++)
		pthread_join(t[i], NULL);
	*secs += seconds_since(start);
	for (unsigned i = 0; i < k; i++)
		rc |= g[i].rc;
	return rc || interrupted ? -1 : 0;
}

struct tls_cost {
	unsigned gets, clients;
	double tls_secs1, plain_secs1;	/* one connection */
	double tls_secs, plain_secs;	/* clients connections at once */
	unsigned tls_connects, plain_connects;
	bool pinned;			/* client on CPU 0, controllers on CPU 1 */
};

/*
 * Two controllers at once on fresh directories, one serving HTTPS and one
 * plain HTTP (--insecure-http, on loopback), each holding the same pod.
 * In TLS_ROUNDS rounds, alternating which goes first, gets/TLS_ROUNDS GETs
 * of the pod on one keep-alive connection to each, then the same from
 * `clients` connections at once: both are measured on the same machine in
 * the same minutes.
 */
static int bench_tls_cost(const char *path, unsigned gets, unsigned clients, struct tls_cost *out)
{
	struct controller c[2] = { { .pid = -1 }, { .pid = -1 } };	/* 0 TLS, 1 plain */
	struct getter one[2], many[2][64];
	char body[POD_BYTES + 1];
	struct dbuf resp = { 0 };
	int rc = -1, len = pod_json(body, sizeof(body), 0);
	cpu_set_t before, client_cpu;

	memset(out, 0, sizeof(*out));
	/* the client on CPU 0, both controllers on CPU 1, as if a network were
	 * between them: unpinned, the scheduler sometimes runs a client and its
	 * server on one CPU (no cross-CPU wake-up: up to 3x the rate), and the
	 * figures swing with that, not with TLS */
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2 && pthread_getaffinity_np(pthread_self(), sizeof(before), &before) == 0) {
		CPU_ZERO(&client_cpu);
		CPU_SET(0, &client_cpu);
		out->pinned = pthread_setaffinity_np(pthread_self(), sizeof(client_cpu), &client_cpu) == 0;
	}
	memset(one, 0, sizeof(one));
	memset(many, 0, sizeof(many));
	out->gets = gets;
	out->clients = clients = clients > 64 ? 64 : clients;
	for (int m = 0; m < 2; m++) {
		char *dir = tmpdir_new();

		if (!dir || controller_start(&c[m], path, dir, m == 1, out->pinned ? 1 : -1))
			goto out;
		for (unsigned k = 0; k < 1 + clients; k++) {
			struct http *h = k ? &many[m][k - 1].h : &one[m].h;

			h->fd = -1;
			h->port = c[m].port;
			h->token = c[m].token;
			h->cred = c[m].cred;
		}
		if (pod_nodes(&one[m].h, 0, 1) ||
		    http_expect(&one[m].h, "POST", "/api/v1/namespaces/default/pods", body, (size_t)len, 201, &resp))
			goto out;
	}
	for (unsigned r = 0; r < TLS_ROUNDS; r++) {
		for (int i = 0; i < 2; i++) {
			int m = (int)(r + (unsigned)i) % 2;	/* TLS first in even rounds */

			if (timed_gets(&one[m], 1, gets / TLS_ROUNDS, m ? &out->plain_secs1 : &out->tls_secs1))
				goto out;
		}
		for (int i = 0; i < 2; i++) {
			int m = (int)(r + (unsigned)i) % 2;

			if (timed_gets(many[m], clients, gets / TLS_ROUNDS, m ? &out->plain_secs : &out->tls_secs))
				goto out;
		}
	}
	out->tls_connects = one[0].h.connects;
	out->plain_connects = one[1].h.connects;
	for (unsigned k = 0; k < clients; k++) {
		out->tls_connects += many[0][k].h.connects;
		out->plain_connects += many[1][k].h.connects;
	}
	rc = 0;
out:
	for (int m = 0; m < 2; m++) {
		http_drop(&one[m].h);
		free(one[m].h.in.data);
		for (unsigned k = 0; k < clients; k++) {
			http_drop(&many[m][k].h);
			free(many[m][k].h.in.data);
		}
		controller_stop(&c[m]);
	}
	free(resp.data);
	if (out->pinned)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(before), &before);
	return rc;
}

/* ------------------------------------------------------------------ latency histogram */

/* Log-linear buckets of microseconds: exact below 1024 µs, then 512 per
 * power of two (relative error < 0.2 %), up to 2^41 µs. */
#define HIST_BUCKETS (1024 + 32 * 512)

static unsigned hist_bucket(uint64_t us)
{
	unsigned e;

	if (us < 1024)
		return (unsigned)us;
	e = 63u - (unsigned)__builtin_clzll(us);	/* >= 10 */
	if (e > 41)
		return HIST_BUCKETS - 1;
	return 1024 + (e - 10) * 512 + (unsigned)((us >> (e - 9)) - 512);
}

static double hist_value_ms(unsigned b)
{
	unsigned k, e, m;

	if (b < 1024)
		return b / 1000.0;
	k = b - 1024;
	e = k / 512 + 10;
	m = k % 512 + 512;
	/* middle of the bucket */
	return ((double)((uint64_t)m << (e - 9)) + (double)(1ull << (e - 9)) / 2) / 1000.0;
}

static double hist_quantile_ms(const uint64_t *h, uint64_t total, double q)
{
	uint64_t rank, seen = 0;

	if (!total)
		return 0;
	rank = (uint64_t)(q * (double)total);
	if (rank >= total)
		rank = total - 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h[b];
		if (seen > rank)
			return hist_value_ms(b);
	}
	return hist_value_ms(HIST_BUCKETS - 1);
}

/* ------------------------------------------------------------------ 3. watch fan-out */

enum wstate { W_HEADERS, W_CHUNKED, W_IDENTITY, W_DONE, W_FAILED };

struct fanout;

struct watch_conn {
	struct fanout *f;
	int fd;
	gnutls_session_t tls;		/* on fd; NULL: plain HTTP */
	enum wstate state;
	char head[HEADER_MAX_BYTES];
	size_t head_len;
	struct chunked ck;
	struct dbuf line;	/* a line split across reads or chunks */
	uint64_t received;	/* distinct pods */
	uint64_t expect;	/* pods it should receive: all, or its node's */
	unsigned node;		/* selective: it watches the pods of node-<node> */
	uint64_t last_index;	/* +1; 0 = none yet */
	int64_t last_rv;
	unsigned resumes;
	bool got_headers;
};

struct fanout {
	int port;
	const char *token;
	gnutls_certificate_credentials_t cred;	/* NULL: plain HTTP */
	unsigned watchers;
	unsigned churn;
	bool select;			/* each watcher selects one node's pods (fieldSelector) */
	int64_t list_rv;
	struct watch_conn *conns;
	uint8_t *seen;			/* watchers × churn bits */
	uint64_t *t0;			/* per pod, ns (invariant 2) */
	uint64_t hist[HIST_BUCKETS];
	uint64_t samples;
	/* problems */
	uint64_t duplicates, out_of_order, unknown_lines, not_added, before_send, heartbeats, resumes;
	uint64_t misrouted;		/* selective: a pod of another node */
	unsigned failed_watchers;
	char first_error[512];
	/* shared with the main thread */
	unsigned connected;		/* atomic */
	uint64_t events_total;		/* atomic: distinct deliveries so far */
	uint64_t last_event_ns;		/* atomic: arrival of the newest new event */
	int stop;			/* atomic: main says stop */
	int setup_failed;		/* atomic */
	unsigned complete;		/* atomic: watchers holding every pod */
	uint64_t batch_now;		/* arrival time of the bytes being parsed */
	double cpu_at_exit;		/* the thread's CPU seconds when it ended */
};

static void fanout_error(struct fanout *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fanout_error(struct fanout *f, const char *fmt, ...)
{
	va_list ap;

	if (f->first_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(f->first_error, sizeof(f->first_error), fmt, ap);
	va_end(ap);
}

static void watch_event(struct watch_conn *w, const char *line, size_t len)
{
	static const char name_key[] = "\"name\":\"p-", rv_key[] = "\"resourceVersion\":\"";
	struct fanout *f = w->f;
	const char *p;
	char num[24];
	size_t k = 0;
	uint64_t idx, bit, t0, lat;

	p = memmem(line, len, name_key, sizeof(name_key) - 1);
	if (!p) {
		f->unknown_lines++;
		fanout_error(f, "watch line without a pod name: %.200s", line);
		return;
	}
	p += sizeof(name_key) - 1;
	while (p < line + len && *p >= '0' && *p <= '9' && k < sizeof(num) - 1)
		num[k++] = *p++;
	num[k] = 0;
	idx = strtoull(num, NULL, 10);
	if (!k || idx >= f->churn) {
		f->unknown_lines++;
		fanout_error(f, "watch event for an unknown pod: %.200s", line);
		return;
	}
	if (f->select && pod_node((unsigned)idx) != w->node) {
		f->misrouted++;
		fanout_error(f, "watcher of node-%u got pod p-%" PRIu64 " of node-%u", w->node, idx,
			     pod_node((unsigned)idx));
		return;
	}
	if (len < 20 || memcmp(line, "{\"type\":\"ADDED\"", 15) != 0)
		f->not_added++;
	p = memmem(line, len, rv_key, sizeof(rv_key) - 1);
	if (p)
		w->last_rv = strtoll(p + sizeof(rv_key) - 1, NULL, 10);
	bit = (uint64_t)(w - f->conns) * f->churn + idx;
	if (f->seen[bit / 8] & (1u << (bit % 8))) {
		f->duplicates++;
		return;
	}
	f->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
	if (idx + 1 < w->last_index)
		f->out_of_order++;
	w->last_index = idx + 1;
	t0 = __atomic_load_n(&f->t0[idx], __ATOMIC_ACQUIRE);
	if (!t0 || t0 > f->batch_now) {
		f->before_send++;
	} else {
		lat = (f->batch_now - t0) / 1000;
		f->hist[hist_bucket(lat)]++;
		f->samples++;
	}
	__atomic_add_fetch(&f->events_total, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f->last_event_ns, f->batch_now, __ATOMIC_RELAXED);
	if (++w->received == w->expect)
		__atomic_add_fetch(&f->complete, 1, __ATOMIC_RELEASE);
}

static int watch_data(void *arg, const char *data, size_t n)
{
	struct watch_conn *w = arg;

	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) + 1 : n;

		if (!nl) {
			if (w->line.len + n > LINE_MAX_BYTES)
				return -E2BIG;
			return dbuf_add(&w->line, data, n, LINE_MAX_BYTES + 1);
		}
		if (w->line.len) {
			int e = dbuf_add(&w->line, data, take, LINE_MAX_BYTES + 1);
			if (e)
				return e;
			if (w->line.len == 1)
				w->f->heartbeats++;
			else
				watch_event(w, w->line.data, w->line.len - 1);
			w->line.len = 0;
		} else if (take == 1) {
			w->f->heartbeats++;
		} else {
			watch_event(w, data, take - 1);
		}
		data += take;
		n -= take;
	}
	return 0;
}

static int watch_send_request(struct watch_conn *w, int64_t rv)
{
	char req[1024], sel[64] = "";
	int n;

	if (w->f->select)
		snprintf(sel, sizeof(sel), "&fieldSelector=spec.nodeName%%3Dnode-%u", w->node);
	n = snprintf(req, sizeof(req),
		     "GET /api/v1/namespaces/default/pods?watch=1&resourceVersion=%" PRId64 "%s HTTP/1.1\r\n"
		     "Host: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\nAccept: application/json\r\n\r\n",
		     rv, sel, w->f->port, w->f->token);

	if (n < 0 || (size_t)n >= sizeof(req))
		return -E2BIG;
	return write_all(w->fd, w->tls, req, (size_t)n);
}

/* Connect and send the watch request; the socket is then non-blocking. */
static int watch_open(struct watch_conn *w, int epfd, int64_t rv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int e;

	w->fd = tcp_connect(w->f->port, w->f->cred != NULL);	/* timeouts for the handshake */
	if (w->fd < 0) {
		e = w->fd;
		w->fd = -1;
		return e;
	}
	if (w->f->cred) {
		const char *why = "";

		if ((e = tls_start(w->fd, w->f->cred, &w->tls, &why)))
			return e;
	}
	if ((e = watch_send_request(w, rv)))
		return e;
	if (fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK))
		return -errno;
	ev.data.ptr = w;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, w->fd, &ev))
		return -errno;
	w->state = W_HEADERS;
	w->head_len = 0;
	w->line.len = 0;
	memset(&w->ck, 0, sizeof(w->ck));
	return 0;
}

static void watch_close(struct watch_conn *w)
{
	tls_end(&w->tls);
	if (w->fd >= 0)
		close(w->fd);	/* also leaves the epoll set */
	w->fd = -1;
}

static void watch_fail(struct watch_conn *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void watch_fail(struct watch_conn *w, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fanout_error(w->f, "watcher %zu: %s", (size_t)(w - w->f->conns), msg);
	watch_close(w);
	w->state = W_FAILED;
	__atomic_add_fetch(&w->f->failed_watchers, 1, __ATOMIC_RELEASE);
}

/* The stream ended (EOF, reset or the last chunk). */
static void watch_ended(struct watch_conn *w, int epfd, const char *why)
{
	int e;

	if (w->received == w->expect) {
		watch_close(w);
		w->state = W_DONE;
		return;
	}
	if (__atomic_load_n(&w->f->stop, __ATOMIC_RELAXED))
		return watch_fail(w, "stream ended (%s) with %" PRIu64 " of %" PRIu64 " pods", why, w->received,
				  w->expect);
	if (!w->got_headers || w->resumes >= MAX_RESUMES)
		return watch_fail(w, "stream ended (%s) %s", why, w->got_headers ? "too often" : "before a response");
	watch_close(w);
	w->resumes++;
	w->f->resumes++;
	e = watch_open(w, epfd, w->last_rv ? w->last_rv : w->f->list_rv);
	if (e)
		watch_fail(w, "resume after %s: %s", why, strerror(-e));
}

static void watch_input(struct watch_conn *w, int epfd, const char *data, size_t n)
{
	size_t used;
	int e;

	if (w->state == W_HEADERS) {
		size_t prev = w->head_len, room = sizeof(w->head) - prev - 1, take = n < room ? n : room, hlen;
		struct head hd;
		char *eoh;

		memcpy(w->head + prev, data, take);
		w->head_len += take;
		w->head[w->head_len] = 0;
		eoh = memmem(w->head, w->head_len, "\r\n\r\n", 4);
		if (!eoh) {
			if (w->head_len >= sizeof(w->head) - 1)
				watch_fail(w, "response head over %d bytes", HEADER_MAX_BYTES);
			return;
		}
		hlen = (size_t)(eoh - w->head) + 4;	/* > prev: the end was not there before */
		if (head_parse(w->head, hlen, &hd))
			return watch_fail(w, "malformed response head: %.100s", w->head);
		if (hd.status != 200)
			return watch_fail(w, "watch answered HTTP %d: %.300s", hd.status, w->head + hlen);
		w->got_headers = true;
		w->state = hd.chunked ? W_CHUNKED : W_IDENTITY;
		data += hlen - prev;	/* the rest of this read is stream */
		n -= hlen - prev;
	}
	if (w->state == W_IDENTITY) {
		if ((e = watch_data(w, data, n)))
			watch_fail(w, "stream: %s", strerror(-e));
		return;
	}
	if (w->state != W_CHUNKED)
		return;
	e = chunked_feed(&w->ck, data, n, &used, watch_data, w);
	if (e == 1)
		return watch_ended(w, epfd, "last chunk");
	if (e)
		watch_fail(w, "chunked stream: %s", e == -EPROTO ? "malformed chunk framing" : strerror(-e));
}

static void *fanout_thread(void *arg)
{
	struct fanout *f = arg;
	struct epoll_event evs[256];
	static char buf[256 * 1024];
	int epfd = epoll_create1(EPOLL_CLOEXEC);

	if (epfd < 0) {
		fanout_error(f, "epoll_create1: %s", strerror(errno));
		__atomic_store_n(&f->setup_failed, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	for (unsigned i = 0; i < f->watchers; i++) {
		struct watch_conn *w = &f->conns[i];
		int e;

		w->f = f;
		e = watch_open(w, epfd, f->list_rv);
		if (e) {
			fanout_error(f, "watcher %u: connect/request: %s", i, strerror(-e));
			__atomic_store_n(&f->setup_failed, 1, __ATOMIC_RELEASE);
			break;
		}
		__atomic_add_fetch(&f->connected, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE) && !__atomic_load_n(&f->setup_failed, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&f->complete, __ATOMIC_ACQUIRE) + __atomic_load_n(&f->failed_watchers, __ATOMIC_ACQUIRE) <
		       f->watchers) {
		int n = epoll_wait(epfd, evs, 256, 100);

		if (n < 0 && errno != EINTR) {
			fanout_error(f, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			struct watch_conn *w = evs[i].data.ptr;

			/* a few reads per wake-up: level-triggered, fair across sockets;
			 * then on while GnuTLS holds decrypted bytes (epoll cannot see them) */
			for (int r = 0; w->fd >= 0 && (r < 4 || tls_pending(w->tls)) &&
					(w->state == W_HEADERS || w->state == W_CHUNKED || w->state == W_IDENTITY);
			     r++) {
				ssize_t got = tls_recv(w->fd, w->tls, buf, sizeof(buf));

				if (got < 0 && (errno == EAGAIN || errno == EINTR))
					break;
				if (got <= 0) {
					watch_ended(w, epfd, got == 0 ? "EOF" : strerror(errno));
					break;
				}
				f->batch_now = now_ns();
				watch_input(w, epfd, buf, (size_t)got);
				/* drained: plain, a short read; TLS (a read is one record),
				 * nothing held above the socket (one recv less per wake-up) */
				if (w->tls ? !tls_pending(w->tls) : (size_t)got < sizeof(buf))
					break;
			}
		}
	}
	{
		struct timespec ts;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		f->cpu_at_exit = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	}
	for (unsigned i = 0; i < f->watchers; i++)
		watch_close(&f->conns[i]);
	close(epfd);
	return NULL;
}

struct fanout_result {
	unsigned watchers, churn;
	bool select;			/* each watcher selected one node's pods */
	uint64_t misrouted;		/* ... and got a pod of another node */
	uint64_t expected, delivered;
	double p50_ms, p99_ms, max_ms;
	double churn_secs;		/* the C creates */
	double drain_ms;		/* last create answered → last event delivered */
	uint64_t duplicates, out_of_order, unknown_lines, not_added, before_send, heartbeats, resumes;
	unsigned failed_watchers;
	double ctl_user_s, ctl_sys_s;	/* controller CPU from the first create to the drain */
	double client_s;		/* CPU of the watch thread over the same span */
	double wall_s;			/* the same span */
	unsigned incomplete;		/* watchers missing at least one pod */
	uint64_t fewest;		/* pods the worst watcher got */
	long hwm_kib, rss_kib;
	bool ok;
};

static int metrics_watchers(struct http *h, long *n)
{
	struct dbuf resp = { 0 };
	const char *p;
	int rc = -1;

	if (http_expect(h, "GET", "/metrics", NULL, 0, 200, &resp) == 0) {
		p = strstr(resp.data, "\nweft_watchers ");
		if (p) {
			*n = strtol(p + 15, NULL, 10);
			rc = 0;
		} else {
			fprintf(stderr, "bench: GET /metrics has no weft_watchers line\n");
		}
	}
	free(resp.data);
	return rc;
}

static int list_revision(struct http *h, int64_t *rv)
{
	struct dbuf resp = { 0 };
	json_t *list = NULL;
	const char *s;
	int rc = -1;

	if (http_expect(h, "GET", "/api/v1/namespaces/default/pods", NULL, 0, 200, &resp) == 0) {
		list = json_loadb(resp.data, resp.len, 0, NULL);
		s = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
		if (s && (*rv = strtoll(s, NULL, 10)) >= 0)
			rc = 0;
		else
			fprintf(stderr, "bench: pod list without metadata.resourceVersion: %.200s\n", resp.data);
	}
	json_decref(list);
	free(resp.data);
	return rc;
}

/* W watchers of every pod, or (select) each of one node's pods, against
 * churn creates. */
static int bench_fanout(const char *controller_path, unsigned watchers, unsigned churn, bool select,
			struct fanout_result *res)
{
	struct controller c = { .pid = -1 };
	struct http h = { .fd = -1 };
	struct fanout *f = NULL;
	struct dbuf resp = { 0 };
	pthread_t thread;
	bool thread_started = false;
	char body[POD_BYTES + 1];
	uint64_t start, deadline, churn_end, last_progress_count = 0, last_progress_at;
	long now_watchers = 0;
	double cpu_user0 = -1, cpu_sys0 = -1, client0 = 0;
	char *dir;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	res->watchers = watchers;
	res->churn = churn;
	res->select = select;
	res->hwm_kib = res->rss_kib = -1;
	pod_spread = select ? (watchers < MAX_NODES ? watchers : MAX_NODES) : 0;
	dir = tmpdir_new();
	if (!dir || controller_start(&c, controller_path, dir, false, -1))
		goto out;
	h.port = c.port;
	h.token = c.token;
	h.cred = c.cred;
	if (pod_nodes(&h, 0, churn))
		goto out;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->conns = calloc(watchers, sizeof(*f->conns))) ||
	    !(f->seen = calloc(((size_t)watchers * churn + 7) / 8, 1)) || !(f->t0 = calloc(churn, sizeof(*f->t0)))) {
		fprintf(stderr, "bench: out of memory for %u watchers × %u pods\n", watchers, churn);
		goto out;
	}
	for (unsigned i = 0; i < watchers; i++) {
		struct watch_conn *w = &f->conns[i];

		w->fd = -1;
		w->expect = churn;
		if (select) {
			/* pods j with j % spread == node */
			w->node = i % pod_spread;
			w->expect = churn / pod_spread + (w->node < churn % pod_spread);
			if (!w->expect)
				__atomic_add_fetch(&f->complete, 1, __ATOMIC_RELAXED);
		}
		res->expected += w->expect;
	}
	f->select = select;
	f->port = c.port;
	f->token = c.token;
	f->cred = c.cred;
	f->watchers = watchers;
	f->churn = churn;
	if (list_revision(&h, &f->list_rv))
		goto out;
	if (pthread_create(&thread, NULL, fanout_thread, f)) {
		fprintf(stderr, "bench: pthread_create failed\n");
		goto out;
	}
	thread_started = true;

	/* every stream open on the controller before the first create */
	deadline = now_ns() + (uint64_t)READY_TIMEOUT_S * 1000000000u;
	for (;;) {
		if (__atomic_load_n(&f->setup_failed, __ATOMIC_ACQUIRE)) {
			fprintf(stderr, "bench: W=%u: %s\n", watchers, f->first_error);
			goto out;
		}
		if (__atomic_load_n(&f->connected, __ATOMIC_ACQUIRE) == watchers) {
			if (metrics_watchers(&h, &now_watchers))
				goto out;
			if (now_watchers >= (long)watchers)
				break;
		}
		if (now_ns() > deadline || interrupted || !controller_alive(&c)) {
			fprintf(stderr, "bench: W=%u: only %ld watch streams open after %d s (%u connected)%s\n",
				watchers, now_watchers, READY_TIMEOUT_S, __atomic_load_n(&f->connected, __ATOMIC_ACQUIRE),
				c.reaped ? "; the controller exited" : "");
			goto out;
		}
		usleep(20000);
	}

	/* churn: C creates, sequential, one keep-alive connection */
	if (process_cpu(c.pid, &cpu_user0, &cpu_sys0))
		cpu_user0 = cpu_sys0 = -1;
	client0 = thread_cpu(thread);
	start = now_ns();
	for (unsigned i = 0; i < churn; i++) {
		int len = pod_json(body, sizeof(body), i);
		uint64_t sent = now_ns();

		if (churn_rate) {
			/* open loop: create i is due at start + i/rate; latency counts
			 * from when it was due, so a slow server is not excused by a
			 * client that waited for it (no coordinated omission) */
			uint64_t due = start + (uint64_t)i * 1000000000ull / churn_rate;
			if (sent < due) {
				struct timespec ts = { .tv_sec = (time_t)((due - sent) / 1000000000ull),
						       .tv_nsec = (long)((due - sent) % 1000000000ull) };
				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
			}
			sent = due;
		}
		__atomic_store_n(&f->t0[i], sent, __ATOMIC_RELEASE);
		if (http_expect(&h, "POST", "/api/v1/namespaces/default/pods", body, (size_t)len, 201, &resp)) {
			fprintf(stderr, "bench: W=%u: create %u of %u failed%s\n", watchers, i, churn,
				controller_alive(&c) ? "" : " (the controller exited)");
			goto out;
		}
	}
	churn_end = now_ns();
	res->churn_secs = (double)(churn_end - start) / 1e9;

	/* wait for the streams to drain: all complete, or no progress for DRAIN_IDLE_S */
	last_progress_at = now_ns();
	while (__atomic_load_n(&f->complete, __ATOMIC_ACQUIRE) + __atomic_load_n(&f->failed_watchers, __ATOMIC_RELAXED) <
	       watchers) {
		uint64_t n = __atomic_load_n(&f->events_total, __ATOMIC_RELAXED);
		if (n != last_progress_count) {
			last_progress_count = n;
			last_progress_at = now_ns();
		} else if (now_ns() - last_progress_at > (uint64_t)DRAIN_IDLE_S * 1000000000u || interrupted) {
			break;
		}
		usleep(10000);
	}
	res->wall_s = seconds_since(start);
	if (cpu_user0 >= 0 && process_cpu(c.pid, &res->ctl_user_s, &res->ctl_sys_s) == 0) {
		res->ctl_user_s -= cpu_user0;
		res->ctl_sys_s -= cpu_sys0;
	}
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	thread_started = false;
	res->client_s = f->cpu_at_exit - client0;	/* it may have ended on its own */

	{
		uint64_t last = __atomic_load_n(&f->last_event_ns, __ATOMIC_RELAXED);
		res->drain_ms = last > churn_end ? (double)(last - churn_end) / 1e6 : 0;
	}
	if (getenv("BENCH_DEBUG")) {
		/* the controller's own view of the fan-out */
		struct dbuf mresp = { 0 };
		if (http_expect(&h, "GET", "/metrics", NULL, 0, 200, &mresp) == 0) {
			for (char *line = strtok(mresp.data, "\n"); line; line = strtok(NULL, "\n"))
				if (strncmp(line, "weft_watch", 10) == 0)
					fprintf(stderr, "bench: W=%u: %s\n", watchers, line);
		}
		free(mresp.data);
	}
	res->delivered = f->events_total;
	res->p50_ms = hist_quantile_ms(f->hist, f->samples, 0.50);
	res->p99_ms = hist_quantile_ms(f->hist, f->samples, 0.99);
	res->max_ms = hist_quantile_ms(f->hist, f->samples, 1.0);
	res->duplicates = f->duplicates;
	res->out_of_order = f->out_of_order;
	res->unknown_lines = f->unknown_lines;
	res->not_added = f->not_added;
	res->before_send = f->before_send;
	res->heartbeats = f->heartbeats;
	res->resumes = f->resumes;
	res->misrouted = f->misrouted;
	res->failed_watchers = f->failed_watchers;
	res->fewest = churn;
	for (unsigned i = 0; i < watchers; i++) {
		if (f->conns[i].received < f->conns[i].expect)
			res->incomplete++;
		if (f->conns[i].received < res->fewest)
			res->fewest = f->conns[i].received;
	}
	if (f->first_error[0])
		fprintf(stderr, "bench: W=%u: first problem: %s\n", watchers, f->first_error);
	if (!controller_alive(&c)) {
		fprintf(stderr, "bench: W=%u: the controller exited during the run\n", watchers);
		goto out;
	}
	if (controller_memory(c.pid, &res->hwm_kib, &res->rss_kib))
		fprintf(stderr, "bench: cannot read /proc/%d/status\n", (int)c.pid);
	res->ok = res->delivered == res->expected && !res->duplicates && !res->unknown_lines && !res->not_added &&
		  !res->failed_watchers && !res->before_send && !res->misrouted;
	rc = 0;
out:
	if (thread_started) {
		__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		pthread_join(thread, NULL);
	}
	http_drop(&h);
	free(h.in.data);
	free(resp.data);
	controller_stop(&c);
	pod_spread = 0;
	if (f) {
		for (unsigned i = 0; f->conns && i < watchers; i++)
			free(f->conns[i].line.data);
		free(f->conns);
		free(f->seen);
		free(f->t0);
		free(f);
	}
	return rc;
}

/* ------------------------------------------------------------------ 5. health under big lists */

/* A pod of list_pod_bytes bytes (a big annotation), named "big-<i>". */
static int big_pod_json(char *buf, size_t len, unsigned i, unsigned bytes)
{
	int hn = snprintf(buf, len,
			  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big-%u\","
			  "\"namespace\":\"default\",\"annotations\":{\"bench.weft.io/pad\":\"", i);
	static const char tail[] = "\"}},\"spec\":{\"nodeName\":\"node-1\"}}";
	size_t pad;

	if (hn < 0 || (size_t)hn + sizeof(tail) > bytes || bytes + 1 > len)
		return -1;
	pad = bytes - (size_t)hn - (sizeof(tail) - 1);
	memset(buf + hn, 'x', pad);
	memcpy(buf + (size_t)hn + pad, tail, sizeof(tail));
	return (int)bytes;
}

/* Write n big pods straight into DIR/weft.db (the controller's default
 * store) before the controller starts: 1000 puts a transaction. */
static int lists_populate(const char *dir, unsigned n, unsigned bytes)
{
	char url[4200], err[512];
	struct store_op *ops = calloc(1000, sizeof(*ops));
	char *values = malloc((size_t)1000 * (bytes + 1)), (*keys)[64] = calloc(1000, 64);
	struct store *s = NULL;
	int rc = -1;

	snprintf(url, sizeof(url), "sqlite:%s/weft.db", dir);
	if (!ops || !values || !keys || !(s = store_open(url, err, sizeof(err)))) {
		fprintf(stderr, "bench: %s: %s\n", url, ops && values && keys ? err : "out of memory");
		goto out;
	}
	for (unsigned base = 0; base < n && !interrupted; base += 1000) {
		unsigned k = n - base < 1000 ? n - base : 1000;
		struct store_txn txn = { NULL, 0, ops, k, NULL, 0 };
		struct store_txn_result res;
		int e;

		for (unsigned j = 0; j < k; j++) {
			snprintf(keys[j], 64, "/weft/obj/pods/default/big-%u", base + j);
			ops[j] = (struct store_op){ STORE_OP_PUT, keys[j], values + (size_t)j * (bytes + 1), 0 };
			ops[j].value_len = (size_t)big_pod_json(values + (size_t)j * (bytes + 1), bytes + 1, base + j, bytes);
		}
		if ((e = store_txn(s, &txn, &res)) || !res.succeeded) {
			fprintf(stderr, "bench: %s: writing pods %u..: %s\n", url, base, e ? strerror(-e) : "failed");
			goto out;
		}
	}
	rc = interrupted ? -1 : 0;
out:
	store_close(s);
	free(ops);
	free(values);
	free(keys);
	return rc;
}

/* GET path every PROBE_PAUSE_US on its own keep-alive connection until
 * *stop; each answer's time goes into hist. */
#define PROBE_PAUSE_US 10000
struct prober {
	struct http h;
	const char *path;
	int *stop;
	uint64_t hist[HIST_BUCKETS];
	uint64_t n;
	int rc;
};

static void *prober_run(void *arg)
{
	struct prober *p = arg;
	struct dbuf resp = { 0 };

	p->h.fd = -1;
	while (!__atomic_load_n(p->stop, __ATOMIC_ACQUIRE) && !interrupted && p->rc == 0) {
		uint64_t t = now_ns();

		p->rc = http_expect(&p->h, "GET", p->path, NULL, 0, 200, &resp);
		p->hist[hist_bucket((now_ns() - t) / 1000)]++;
		p->n++;
		usleep(PROBE_PAUSE_US);
	}
	free(resp.data);
	http_drop(&p->h);
	free(p->h.in.data);
	return NULL;
}

/* rounds full lists of the big pods, each checked for every pod. */
struct lister {
	struct http h;
	unsigned rounds, pods;
	double secs;
	size_t bytes;
	int rc;
};

static void *lister_run(void *arg)
{
	struct lister *l = arg;
	struct dbuf resp = { 0 };
	uint64_t t = now_ns();

	l->h.fd = -1;
	for (unsigned r = 0; r < l->rounds && l->rc == 0 && !interrupted; r++) {
		unsigned found = 0;

		l->rc = http_expect(&l->h, "GET", "/api/v1/namespaces/default/pods", NULL, 0, 200, &resp);
		for (const char *p = resp.data; !l->rc && (p = memmem(p, resp.len - (size_t)(p - resp.data),
									"\"name\":\"big-", 12)); p += 12)
			found++;
		if (!l->rc && found != l->pods) {
			fprintf(stderr, "bench: a list held %u of the %u pods\n", found, l->pods);
			l->rc = -1;
		}
		l->bytes = resp.len;
	}
	l->secs = seconds_since(t);
	free(resp.data);
	http_drop(&l->h);
	free(l->h.in.data);
	return NULL;
}

struct lists_result {
	unsigned pods, lists, rounds;
	double mib;			/* one list's body */
	double list_secs;		/* mean time of one lister's rounds */
	double idle_p50[2], idle_p99[2], idle_max[2];	/* [0] /healthz, [1] small GET */
	double busy_p50[2], busy_p99[2], busy_max[2];
	uint64_t idle_n[2], busy_n[2];
	long hwm_kib, rss_kib;
};

/* Both probers for secs (idle), or until the listers end (busy). */
static int probe(const struct controller *c, struct lister *ls, unsigned nls, double secs, double *p50,
		 double *p99, double *max, uint64_t *n)
{
	static const char *paths[2] = { "/healthz", "/api/v1/namespaces/default" };
	struct prober *pr = calloc(2, sizeof(*pr));
	pthread_t pt[2], lt[64];
	int stop = 0, rc = 0;

	if (!pr)
		return -1;
	for (int k = 0; k < 2; k++) {
		pr[k].h.port = c->port;
		pr[k].h.cred = c->cred;
		pr[k].h.token = k ? c->token : NULL;
		pr[k].path = paths[k];
		pr[k].stop = &stop;
		pthread_create(&pt[k], NULL, prober_run, &pr[k]);
	}
	if (nls) {
		for (unsigned i = 0; i < nls; i++)
			pthread_create(&lt[i], NULL, lister_run, &ls[i]);
		for (unsigned i = 0; i < nls; i++) {
			pthread_join(lt[i], NULL);
			rc |= ls[i].rc;
		}
	} else {
		usleep((useconds_t)(secs * 1e6));
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int k = 0; k < 2; k++) {
		pthread_join(pt[k], NULL);
		rc |= pr[k].rc;
		p50[k] = hist_quantile_ms(pr[k].hist, pr[k].n, 0.50);
		p99[k] = hist_quantile_ms(pr[k].hist, pr[k].n, 0.99);
		max[k] = hist_quantile_ms(pr[k].hist, pr[k].n, 1.0);
		n[k] = pr[k].n;
	}
	free(pr);
	return rc;
}

static int bench_lists(const char *controller_path, unsigned pods, unsigned bytes, unsigned nlists,
		       unsigned rounds, struct lists_result *res)
{
	struct controller c = { .pid = -1 };
	struct lister ls[64];
	char *dir = tmpdir_new();
	int rc = -1;

	memset(res, 0, sizeof(*res));
	res->pods = pods;
	res->lists = nlists;
	res->rounds = rounds;
	if (!dir || lists_populate(dir, pods, bytes) || controller_start(&c, controller_path, dir, false, -1))
		goto out;
	if (probe(&c, NULL, 0, 2.0, res->idle_p50, res->idle_p99, res->idle_max, res->idle_n))
		goto out;
	memset(ls, 0, sizeof(ls));
	for (unsigned i = 0; i < nlists; i++) {
		ls[i].h.port = c.port;
		ls[i].h.cred = c.cred;
		ls[i].h.token = c.token;
		ls[i].rounds = rounds;
		ls[i].pods = pods;
	}
	if (probe(&c, ls, nlists, 0, res->busy_p50, res->busy_p99, res->busy_max, res->busy_n))
		goto out;
	for (unsigned i = 0; i < nlists; i++)
		res->list_secs += ls[i].secs / rounds / nlists;
	res->mib = (double)ls[0].bytes / (1 << 20);
	if (!controller_alive(&c)) {
		fprintf(stderr, "bench: lists: the controller exited during the run\n");
		goto out;
	}
	if (controller_memory(c.pid, &res->hwm_kib, &res->rss_kib))
		fprintf(stderr, "bench: cannot read /proc/%d/status\n", (int)c.pid);
	rc = 0;
out:
	controller_stop(&c);
	return rc;
}

/* ------------------------------------------------------------------ main */

static int env_unsigned(const char *name, unsigned def, unsigned min, unsigned max, unsigned *out)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		fprintf(stderr, "bench: %s=%s: want a whole number in %u..%u\n", name, s, min, max);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int raise_fd_limit(unsigned need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return -1;
	}
	return rl.rlim_cur >= need ? 0 : -1;
}

static const char *pass(bool ok)
{
	return ok ? "PASS" : "FAIL";
}

int main(void)
{
	const char *controller_path = getenv("WEFT_CONTROLLER");
	unsigned txns, nodes, watchers, churn, clients, gets, list_pods, list_bytes, nlists, list_rounds;
	struct tls_cost tc;
	double store_before = 0, store_after = 0, node_secs = 0, pod_secs = 0, conc_secs = 0;
	double store_rate, node_rate, pod_rate, conc_rate;
	struct controller c = { .pid = -1 };
	struct http h = { .fd = -1 };
	struct fanout_result one, many, floor_one, floor_many, selected;
	struct tls_cost floor_tc;
	struct lists_result lr = { 0 };
	unsigned keepalive_connects;
	char *dir;
	int rc = 1;

	if (!controller_path || !*controller_path)
		controller_path = "build/release/bin/weft-controller";
	/* pods on at most the 512 nodes of the default cluster network (pod_json) */
	if (env_unsigned("BENCH_TXNS", 5000, 1, 512 * PODS_PER_NODE / 2, &txns) ||
	    env_unsigned("BENCH_NODES", 500, 1, MAX_NODES, &nodes) ||
	    env_unsigned("BENCH_WATCHERS", 1000, 1, 100000, &watchers) ||
	    env_unsigned("BENCH_CHURN", 10000, 1, 512 * PODS_PER_NODE, &churn) ||
	    env_unsigned("BENCH_RATE", 50, 0, 1000000, &churn_rate) ||
	    env_unsigned("BENCH_CLIENTS", 4, 1, 64, &clients) ||
	    env_unsigned("BENCH_GETS", 20000, TLS_ROUNDS, 10000000, &gets) ||
	    env_unsigned("BENCH_LIST_PODS", 20000, 0, 1000000, &list_pods) ||
	    env_unsigned("BENCH_LIST_BYTES", 2250, 256, 65536, &list_bytes) ||
	    env_unsigned("BENCH_LISTS", 8, 1, 64, &nlists) ||
	    env_unsigned("BENCH_LIST_ROUNDS", 2, 1, 100, &list_rounds))
		return 2;
	if (access(controller_path, X_OK)) {
		fprintf(stderr, "bench: %s: %s (build it with make, or set WEFT_CONTROLLER)\n", controller_path,
			strerror(errno));
		return 1;
	}
	if (raise_fd_limit(watchers + 256)) {
		fprintf(stderr, "bench: BENCH_WATCHERS=%u needs %u open files; RLIMIT_NOFILE allows fewer\n", watchers,
			watchers + 256);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa = { .sa_handler = on_signal };
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("weft controller benchmark: %ld CPUs online, temp %s, controller %s\n", sysconf(_SC_NPROCESSORS_ONLN),
	       getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", controller_path);
	printf("  pods %u B, store/API creates %u, nodes %u, watchers %u, churn %u\n", POD_BYTES, txns, nodes,
	       watchers, churn);
	if (churn_rate)
		printf("  churn: open loop at %u creates/s (BENCH_RATE); latency counts from each create's due time\n\n",
		       churn_rate);
	else
		printf("  churn: closed loop (BENCH_RATE=0: each create as soon as the last is answered)\n\n");

	/* 1 (before) */
	if (!(dir = tmpdir_new()) || bench_store(dir, "bench.db", txns, &store_before))
		goto out;
	/* 2 */
	if (!(dir = tmpdir_new()) || controller_start(&c, controller_path, dir, false, -1))
		goto out;
	h.port = c.port;
	h.token = c.token;
	h.cred = c.cred;
	if (bench_nodes(&h, nodes, &node_secs) || pod_nodes(&h, nodes, 2 * txns) || bench_pods(&h, txns, &pod_secs) ||
	    bench_pods_concurrent(&h, txns, clients, txns, &conc_secs))
		goto out;
	if (getenv("BENCH_DEBUG")) {
		/* the controller's own time per request, to split client-seen time */
		struct dbuf mresp = { 0 };
		if (http_expect(&h, "GET", "/metrics", NULL, 0, 200, &mresp) == 0) {
			const char *sum = strstr(mresp.data, "\nweft_http_request_duration_seconds_sum ");
			const char *cnt = strstr(mresp.data, "\nweft_http_request_duration_seconds_count ");
			if (sum && cnt) {
				double s = strtod(strchr(sum + 1, ' ') + 1, NULL);
				double n = strtod(strchr(cnt + 1, ' ') + 1, NULL);
				fprintf(stderr, "bench: API: %.0f requests, %.1f us each inside the controller "
						"(client saw %.1f us per pod create)\n",
					n, n > 0 ? s / n * 1e6 : 0, pod_secs / txns * 1e6);
			}
		}
		free(mresp.data);
	}
	keepalive_connects = h.connects;
	http_drop(&h);
	controller_stop(&c);
	/* 1 (after) */
	if (!(dir = tmpdir_new()) || bench_store(dir, "bench.db", txns, &store_after))
		goto out;

	store_rate = (txns / store_before + txns / store_after) / 2;
	node_rate = nodes / node_secs;
	pod_rate = txns / pod_secs;
	conc_rate = txns / conc_secs;
	printf("%-44s %9s %9s %11s %8s\n", "throughput", "count", "seconds", "per second", "ratio");
	printf("%-44s %9u %9.3f %11.1f %8s\n", "store txn, pod-shaped create (before)", txns, store_before,
	       txns / store_before, "");
	printf("%-44s %9u %9.3f %11.1f %8s\n", "store txn, pod-shaped create (after)", txns, store_after,
	       txns / store_after, "");
	printf("%-44s %9s %9s %11.1f %8.2f\n", "store reference (mean of the two)", "", "", store_rate, 1.0);
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "API node registrations (POST /api/v1/nodes)", nodes, node_secs,
	       node_rate, node_rate / store_rate);
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "API pod creates, 1 connection", txns, pod_secs, pod_rate,
	       pod_rate / store_rate);
	{
		char label[64];
		snprintf(label, sizeof(label), "API pod creates, %u connections at once", clients);
		printf("%-44s %9u %9.3f %11.1f %8.2f\n", label, txns, conc_secs, conc_rate, conc_rate / store_rate);
	}
	printf("  (API over %u TLS connection%s: %s)\n\n", keepalive_connects, keepalive_connects == 1 ? "" : "s",
	       keepalive_connects == 1 ? "keep-alive held" : "the server closed keep-alive connections");

	/* 2b */
	if (bench_tls_cost(controller_path, gets, clients, &tc))
		goto out;
	printf("%-44s %9s %9s %11s %8s\n", "GET " GET_PATH, "count", "seconds", "per second", "ratio");
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "  plain HTTP (--insecure-http), 1 connection", gets, tc.plain_secs1,
	       gets / tc.plain_secs1, 1.0);
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "  HTTPS, 1 connection", gets, tc.tls_secs1, gets / tc.tls_secs1,
	       tc.plain_secs1 / tc.tls_secs1);
	{
		char label[2][64];
		snprintf(label[0], sizeof(label[0]), "  plain HTTP, %u connections at once", clients);
		snprintf(label[1], sizeof(label[1]), "  HTTPS, %u connections at once", clients);
		printf("%-44s %9u %9.3f %11.1f %8.2f\n", label[0], gets, tc.plain_secs, gets / tc.plain_secs, 1.0);
		printf("%-44s %9u %9.3f %11.1f %8.2f\n", label[1], gets, tc.tls_secs, gets / tc.tls_secs,
		       tc.plain_secs / tc.tls_secs);
	}
	printf("  (%d interleaved rounds%s; %u TLS and %u plain connections: %s)\n\n", TLS_ROUNDS,
	       tc.pinned ? ", clients on CPU 0, controllers on CPU 1" : "", tc.tls_connects, tc.plain_connects,
	       tc.tls_connects == 1 + clients && tc.plain_connects == 1 + clients ? "keep-alive held"
										 : "the server closed keep-alive connections");

	/* 2c: the same against the floor server (floor.h) */
	if (bench_tls_cost(FLOOR_PATH, gets, clients, &floor_tc))
		goto out;
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "  floor server: plain HTTP, 1 connection", gets, floor_tc.plain_secs1,
	       gets / floor_tc.plain_secs1, 1.0);
	printf("%-44s %9u %9.3f %11.1f %8.2f\n", "  floor server: HTTPS, 1 connection", gets, floor_tc.tls_secs1,
	       gets / floor_tc.tls_secs1, floor_tc.plain_secs1 / floor_tc.tls_secs1);
	printf("  (the floor: the least any server must do for these GETs, with the controller's certificates and\n"
	       "   TLS priorities, measured the same way; %u TLS and %u plain connections)\n\n",
	       floor_tc.tls_connects, floor_tc.plain_connects);

	/* 3, then the same against the floor server */
	if (bench_fanout(controller_path, 1, churn, false, &one))
		goto out;
	if (bench_fanout(controller_path, watchers, churn, false, &many))
		goto out;
	if (bench_fanout(FLOOR_PATH, 1, churn, false, &floor_one))
		goto out;
	if (bench_fanout(FLOOR_PATH, watchers, churn, false, &floor_many))
		goto out;
	/* 3b: each watcher selects one node's pods */
	if (bench_fanout(controller_path, watchers, churn, true, &selected))
		goto out;

	printf("%-9s %7s %11s %11s %8s %5s %5s %7s %8s %8s %8s %9s %9s\n", "watch", "churn", "expected", "delivered",
	       "missing", "dup", "ooo", "resumes", "p50 ms", "p99 ms", "max ms", "creates/s", "drain ms");
	for (int k = 0; k < 5; k++) {
		struct fanout_result *r = k == 0 ? &one : k == 1 ? &many : k == 2 ? &floor_one : k == 3 ? &floor_many
													  : &selected;
		char label[32];
		snprintf(label, sizeof(label), "%sW=%u%s", k == 2 || k == 3 ? "floor " : "", r->watchers,
			 r->select ? " sel" : "");
		printf("%-9s %7u %11" PRIu64 " %11" PRIu64 " %8" PRIu64 " %5" PRIu64 " %5" PRIu64 " %7" PRIu64
		       " %8.2f %8.2f %8.2f %9.1f %9.1f\n",
		       label, r->churn, r->expected, r->delivered, r->expected - r->delivered, r->duplicates,
		       r->out_of_order, r->resumes, r->p50_ms, r->p99_ms, r->max_ms, r->churn / r->churn_secs,
		       r->drain_ms);
		if (r->unknown_lines || r->not_added || r->before_send || r->failed_watchers || r->incomplete ||
		    r->misrouted)
			printf("  W=%u: %u watchers incomplete (the worst got %" PRIu64 " of %u), %u streams failed, %" PRIu64
			       " unparsable lines, %" PRIu64 " non-ADDED events, %" PRIu64
			       " events before their create was sent, %" PRIu64 " pods sent to a watcher of another node\n",
			       r->watchers, r->incomplete, r->fewest, r->churn, r->failed_watchers, r->unknown_lines,
			       r->not_added, r->before_send, r->misrouted);
	}
	printf("  (W=%u sel: each watcher asks fieldSelector=spec.nodeName=node-<i mod %u> and pod j runs on\n"
	       "   node-<j mod %u>: a create is for %u watchers, and a pod of another node is an error)\n",
	       watchers, watchers < MAX_NODES ? watchers : MAX_NODES, watchers < MAX_NODES ? watchers : MAX_NODES,
	       (watchers + MAX_NODES - 1) / MAX_NODES);
	printf("  (latency = arrival at the watcher - %s; %" PRIu64 "/%" PRIu64 " heartbeat lines)\n",
	       churn_rate ? "the create's due time (open loop)" : "just before the create was sent (closed loop)",
	       one.heartbeats, many.heartbeats);
	for (int k = 0; k < 4; k++) {
		struct fanout_result *r = k == 0 ? &one : k == 1 ? &many : k == 2 ? &floor_one : &floor_many;
		printf("  %sW=%u, churn and drain: %.1f s wall; CPU: %s %.1f s (user %.1f, sys %.1f), "
		       "watch client thread %.1f s\n",
		       k < 2 ? "" : "floor ", r->watchers, r->wall_s, k < 2 ? "controller" : "floor server",
		       r->ctl_user_s + r->ctl_sys_s, r->ctl_user_s, r->ctl_sys_s, r->client_s);
	}
	printf("  (floor: the same client against the floor server, floor.h: TLS, an fdatasync per create, each\n"
	       "   event sent once per stream with one wake-up per worker thread, nothing else)\n");
	printf("%-44s VmHWM %.1f MiB, VmRSS %.1f MiB\n", "controller memory after W=1:", one.hwm_kib / 1024.0,
	       one.rss_kib / 1024.0);
	{
		char label[64];
		snprintf(label, sizeof(label), "controller memory after W=%u:", watchers);
		printf("%-44s VmHWM %.1f MiB, VmRSS %.1f MiB\n\n", label, many.hwm_kib / 1024.0, many.rss_kib / 1024.0);
	}

	/* 5 */
	if (list_pods) {
		static const char *what[2] = { "GET /healthz", "GET /api/v1/namespaces/default" };
		if (bench_lists(controller_path, list_pods, list_bytes, nlists, list_rounds, &lr))
			goto out;
		printf("%-44s %9s %9s %9s %9s %8s\n", "answers while big lists are served", "samples", "p50 ms",
		       "p99 ms", "max ms", "ratio");
		for (int k = 0; k < 2; k++) {
			char label[96];
			printf("%-44s %9" PRIu64 " %9.2f %9.2f %9.2f %8.2f\n", what[k], lr.idle_n[k], lr.idle_p50[k],
			       lr.idle_p99[k], lr.idle_max[k], 1.0);
			snprintf(label, sizeof(label), "  ... during %u lists at once", nlists);
			printf("%-44s %9" PRIu64 " %9.2f %9.2f %9.2f %8.2f\n", label, lr.busy_n[k], lr.busy_p50[k],
			       lr.busy_p99[k], lr.busy_max[k], lr.idle_p99[k] > 0 ? lr.busy_p99[k] / lr.idle_p99[k] : 0);
		}
		printf("  (%u clients x %u lists of %u pods, %.1f MiB each, %.2f s per list; ratio = p99 ÷ idle p99;\n"
		       "   controller VmHWM %.1f MiB)\n\n",
		       nlists, list_rounds, list_pods, lr.mib, lr.list_secs, lr.hwm_kib / 1024.0);
	}

	{
		double pod_ratio = conc_rate / store_rate;
		double fan_ratio = one.p99_ms > 0 ? many.p99_ms / one.p99_ms : 0;
		double floor_fan = floor_one.p99_ms > 0 ? floor_many.p99_ms / floor_one.p99_ms : 0;
		double hwm_mib = many.hwm_kib / 1024.0;
		bool delivered = one.ok && many.ok && floor_one.ok && floor_many.ok;
		double sel_ratio = many.p99_ms > 0 ? selected.p99_ms / many.p99_ms : 0;

		printf("GOAL pod_create_rate: %.2fx the raw store rate (%.1f/s from %u connections vs %.1f/s; "
		       "1 connection: %.2fx) (goal >= 0.5x) %s\n",
		       pod_ratio, conc_rate, clients, store_rate, pod_rate / store_rate, pass(pod_ratio >= 0.5));
		printf("GOAL watch_p99_fanout: %.2fx (p99 %.2f ms at W=%u vs %.2f ms at W=1; the floor server: %.2fx, "
		       "%.2f vs %.2f ms) (goal <= 5x) %s\n",
		       fan_ratio, many.p99_ms, watchers, one.p99_ms, floor_fan, floor_many.p99_ms, floor_one.p99_ms,
		       pass(one.p99_ms > 0 && fan_ratio <= 5));
		printf("GOAL controller_rss: VmHWM %.1f MiB after W=%u (goal <= 256 MiB) %s\n", hwm_mib, watchers,
		       pass(many.hwm_kib >= 0 && hwm_mib <= 256));
		printf("GOAL tls_request_rate: %.2fx plain HTTP (GET of a pod on one keep-alive connection: HTTPS %.1f/s vs "
		       "%.1f/s; %u connections: %.2fx; the floor server: %.2fx) (goal >= 0.9x) %s\n",
		       tc.plain_secs1 / tc.tls_secs1, gets / tc.tls_secs1, gets / tc.plain_secs1, clients,
		       tc.plain_secs / tc.tls_secs, floor_tc.plain_secs1 / floor_tc.tls_secs1,
		       pass(tc.plain_secs1 / tc.tls_secs1 >= 0.9));
		printf("GOAL watch_delivery: %" PRIu64 "/%" PRIu64 " at W=1, %" PRIu64 "/%" PRIu64
		       " at W=%u, %" PRIu64 " duplicates (goal every event exactly once) %s\n",
		       one.delivered, one.expected, many.delivered, many.expected, watchers,
		       one.duplicates + many.duplicates, pass(delivered));
		printf("GOAL watch_p99_selected: %.2fx the unfiltered fan-out (p99 %.2f ms with %u watchers each selecting "
		       "one node's pods vs %.2f ms with %u watching all; %" PRIu64 "/%" PRIu64
		       " delivered, %" PRIu64 " to a watcher of another node) (goal <= 1x, each create only where "
		       "it matches) %s\n",
		       sel_ratio, selected.p99_ms, watchers, many.p99_ms, watchers, selected.delivered, selected.expected,
		       selected.misrouted, pass(many.p99_ms > 0 && sel_ratio <= 1 && selected.ok));
		rc = delivered && selected.ok ? 0 : 1;
	}
out:
	http_drop(&h);
	free(h.in.data);
	controller_stop(&c);
	tmpdirs_remove();
	if (rc)
		fprintf(stderr, "bench: controller benchmark %s\n", interrupted ? "interrupted" : "broke (see above)");
	return rc;
}
