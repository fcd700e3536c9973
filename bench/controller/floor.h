/*
 * floor.h — the machine's floor for the fan-out and TLS figures: a server
 * that does the least any server must do for the benchmark's requests, so
 * that the controller's figures can be read against what this machine
 * allows at all.
 *
 * What it keeps of the controller's work:
 *   - TLS 1.3 with the controller's own certificates (pki.h, made in DIR
 *     as the controller makes them) and its priority string, or plain HTTP;
 *   - HTTP/1.1 keep-alive requests with Content-Length bodies, answered
 *     with one send each;
 *   - durability: each create is appended to a file and fdatasync'ed
 *     before it is answered or sent to a watcher;
 *   - a watch stream is chunked JSON lines with resourceVersions, every
 *     event exactly once and in order, resumable from a resourceVersion;
 *   - two worker threads (the controller's API_THREADS), each with its own
 *     epoll and its own connections.
 * What it leaves out: authentication (the token is not checked), object
 * validation, admission, the store's index and history, any event it was
 * not asked for.  A list answers only its resourceVersion (no items): the
 * benchmark reads nothing else of it.
 *
 * Fan-out: a create appends its event to a table whose blocks never move,
 * publishes the count (release) and writes every worker's eventfd once;
 * each worker then sends, on each of its own watch streams, what the
 * stream has not had, in one TLS record and one sendmsg.  That is one
 * wake-up per worker per event, not one per watcher.
 *
 * floor_main runs in a child the benchmark forked (controller_start with
 * FLOOR_PATH), serves until SIGTERM and exits 0.
 */
#ifndef WEFT_BENCH_FLOOR_H
#define WEFT_BENCH_FLOOR_H

#include "controller/pki.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define FLOOR_PATH		"(floor)"	/* controller_start: fork the floor, no exec */
#define FLOOR_THREADS		2
#define FLOOR_PRIORITIES	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"	/* the controller's */
#define FLOOR_BLOCK		4096		/* events per block */
#define FLOOR_BLOCKS		1024		/* at most 4 M events */
#define FLOOR_IN_MAX		16384		/* a request: head and body */
#define FLOOR_OBJ_MAX		2048
#define FLOOR_IO_TIMEOUT_MS	5000

struct floor_event {
	int64_t rev;
	char name[64];
	char *chunk;		/* "<hex>\r\n{"type":"ADDED","object":...}\n\r\n" */
	size_t chunk_len;
	char *object;		/* the stored object, for a GET */
	size_t object_len;
};

struct floor_conn {
	int fd;
	gnutls_session_t tls;	/* NULL: plain */
	size_t in_len;
	char in[FLOOR_IN_MAX];
	bool watching;
	uint64_t next;		/* watching: the next event index to send */
	size_t slot;		/* watching: index in the worker's watcher table */
};

struct floor_worker {
	struct floor *fl;
	pthread_t thread;
	int epfd, wake;		/* wake: eventfd, written once per published event batch */
	struct floor_conn **watchers;
	size_t nwatchers, cap;
};

struct floor {
	int listen_fd, data_fd;
	bool plain;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	pthread_mutex_t lock;		/* writers: rev, appending events */
	int64_t rev;
	uint64_t nevents;		/* published (release); blocks[] below it are complete */
	struct floor_event *blocks[FLOOR_BLOCKS];
	long watchers;			/* atomic */
	struct floor_worker w[FLOOR_THREADS];
};

static struct floor_event *floor_event_at(struct floor *fl, uint64_t i)
{
	return &fl->blocks[i / FLOOR_BLOCK][i % FLOOR_BLOCK];
}

/* Write all of p, waiting for the socket when it is full.  0 or -1. */
static int floor_send(struct floor_conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t w = c->tls ? gnutls_record_send(c->tls, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (c->tls ? (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) : (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

			if (poll(&pfd, 1, FLOOR_IO_TIMEOUT_MS) <= 0)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

static int floor_answer(struct floor_conn *c, int status, const char *body, size_t len)
{
	char out[FLOOR_OBJ_MAX + 256];
	int n = snprintf(out, sizeof(out), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
			 status, status == 200 ? "OK" : status == 201 ? "Created" : status == 404 ? "Not Found" : "Bad Request",
			 len);

	if (n < 0 || (size_t)n + len > sizeof(out))
		return -1;
	memcpy(out + n, body, len);
	return floor_send(c, out, (size_t)n + len);
}

/* Send the stream what it has not had, in one record. */
static int floor_catch_up(struct floor *fl, struct floor_conn *c)
{
	uint64_t end = __atomic_load_n(&fl->nevents, __ATOMIC_ACQUIRE);
	char buf[64 * 1024];
	size_t n = 0;

	while (c->next < end) {
		const struct floor_event *e = floor_event_at(fl, c->next);

		if (n + e->chunk_len > sizeof(buf)) {
			if (!n)
				return -1;
			if (floor_send(c, buf, n))
				return -1;
			n = 0;
			continue;
		}
		memcpy(buf + n, e->chunk, e->chunk_len);
		n += e->chunk_len;
		c->next++;
	}
	return n ? floor_send(c, buf, n) : 0;
}

static void floor_close(struct floor_worker *wk, struct floor_conn *c)
{
	if (c->watching) {
		wk->watchers[c->slot] = wk->watchers[--wk->nwatchers];
		wk->watchers[c->slot]->slot = c->slot;
		__atomic_sub_fetch(&wk->fl->watchers, 1, __ATOMIC_RELAXED);
	}
	if (c->tls)
		gnutls_deinit(c->tls);
	close(c->fd);	/* also leaves the epoll set */
	free(c);
}

/* A create: stored (appended, fdatasync), then published.  The object
 * answered is the body with metadata.resourceVersion set. */
static int floor_create(struct floor *fl, struct floor_conn *c, const char *body, size_t len, bool pod)
{
	static const char meta[] = "\"metadata\":{", added[] = "{\"type\":\"ADDED\",\"object\":";
	const char *m = memmem(body, len, meta, sizeof(meta) - 1), *name;
	char obj[FLOOR_OBJ_MAX], head[32];
	struct floor_event *e = NULL;
	size_t at, olen;
	int n;

	if (!m || len + 48 > sizeof(obj))
		return floor_answer(c, 400, "{}", 2);
	at = (size_t)(m - body) + sizeof(meta) - 1;
	pthread_mutex_lock(&fl->lock);
	fl->rev++;
	n = snprintf(obj, sizeof(obj), "%.*s\"resourceVersion\":\"%" PRId64 "\",%.*s", (int)at, body, fl->rev,
		     (int)(len - at), body + at);
	olen = (size_t)n;
	if (write(fl->data_fd, obj, olen) != (ssize_t)olen || fdatasync(fl->data_fd)) {
		pthread_mutex_unlock(&fl->lock);
		return -1;
	}
	if (pod) {
		uint64_t i = fl->nevents;

		if (i / FLOOR_BLOCK >= FLOOR_BLOCKS ||
		    (!fl->blocks[i / FLOOR_BLOCK] && !(fl->blocks[i / FLOOR_BLOCK] = calloc(FLOOR_BLOCK, sizeof(*e))))) {
			pthread_mutex_unlock(&fl->lock);
			return -1;
		}
		e = floor_event_at(fl, i);
		e->rev = fl->rev;
		name = strstr(obj, "\"name\":\"");
		if (name)
			snprintf(e->name, sizeof(e->name), "%.*s", (int)strcspn(name + 8, "\""), name + 8);
		e->object = malloc(olen);
		e->chunk = malloc(olen + 64);
		if (!e->object || !e->chunk) {
			pthread_mutex_unlock(&fl->lock);
			return -1;
		}
		memcpy(e->object, obj, olen);
		e->object_len = olen;
		n = snprintf(head, sizeof(head), "%zx\r\n", sizeof(added) - 1 + olen + 2);	/* the line: added, obj, "}\n" */
		e->chunk_len = (size_t)sprintf(e->chunk, "%s%s%.*s}\n\r\n", head, added, (int)olen, obj);
		__atomic_store_n(&fl->nevents, i + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fl->lock);
	if (pod) {
		uint64_t one = 1;

		for (int k = 0; k < FLOOR_THREADS; k++)
			if (write(fl->w[k].wake, &one, sizeof(one)) < 0)
				return -1;
	}
	return floor_answer(c, 201, obj, olen);
}

static int floor_request(struct floor_worker *wk, struct floor_conn *c, const char *req, const char *body, size_t len)
{
	static const char pods[] = "/api/v1/namespaces/default/pods";
	struct floor *fl = wk->fl;
	char path[512], out[256];
	int n;

	if (sscanf(req, "%*s %511s", path) != 1)
		return -1;
	if (strncmp(req, "POST ", 5) == 0)
		return floor_create(fl, c, body, len, strcmp(path, pods) == 0);
	if (strcmp(path, "/healthz") == 0)
		return floor_answer(c, 200, "ok", 2);
	if (strcmp(path, "/metrics") == 0) {
		n = snprintf(out, sizeof(out), "# the floor server\nweft_watchers %ld\n",
			     __atomic_load_n(&fl->watchers, __ATOMIC_RELAXED));
		return floor_answer(c, 200, out, (size_t)n);
	}
	if (strcmp(path, pods) == 0) {
		pthread_mutex_lock(&fl->lock);
		n = snprintf(out, sizeof(out), "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
					       "{\"resourceVersion\":\"%" PRId64 "\"},\"items\":[]}", fl->rev);
		pthread_mutex_unlock(&fl->lock);
		return floor_answer(c, 200, out, (size_t)n);
	}
	if (strncmp(path, pods, sizeof(pods) - 1) == 0 && path[sizeof(pods) - 1] == '?') {
		const char *rv = strstr(path, "resourceVersion=");
		int64_t after = rv ? strtoll(rv + 16, NULL, 10) : 0;
		static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
					   "Transfer-Encoding: chunked\r\n\r\n";
		uint64_t end = __atomic_load_n(&fl->nevents, __ATOMIC_ACQUIRE);

		c->next = 0;
		while (c->next < end && floor_event_at(fl, c->next)->rev <= after)
			c->next++;
		if (wk->nwatchers == wk->cap) {
			size_t cap = wk->cap ? 2 * wk->cap : 256;
			struct floor_conn **t = realloc(wk->watchers, cap * sizeof(*t));

			if (!t)
				return -1;
			wk->watchers = t;
			wk->cap = cap;
		}
		c->watching = true;
		c->slot = wk->nwatchers;
		wk->watchers[wk->nwatchers++] = c;
		__atomic_add_fetch(&fl->watchers, 1, __ATOMIC_RELAXED);
		return floor_send(c, head, sizeof(head) - 1) ? -1 : floor_catch_up(fl, c);
	}
	if (strncmp(path, pods, sizeof(pods) - 1) == 0 && path[sizeof(pods) - 1] == '/') {
		uint64_t end = __atomic_load_n(&fl->nevents, __ATOMIC_ACQUIRE);

		for (uint64_t i = 0; i < end; i++) {
			const struct floor_event *e = floor_event_at(fl, i);

			if (strcmp(e->name, path + sizeof(pods)) == 0)
				return floor_answer(c, 200, e->object, e->object_len);
		}
	}
	return floor_answer(c, 404, "{}", 2);
}

/* Requests whole in c->in, answered in order.  0, or -1: close. */
static int floor_input(struct floor_worker *wk, struct floor_conn *c)
{
	for (;;) {
		char *eoh = memmem(c->in, c->in_len, "\r\n\r\n", 4), *cl;
		size_t hlen, blen = 0, used;

		if (!eoh)
			return c->in_len < sizeof(c->in) ? 0 : -1;
		*eoh = 0;
		hlen = (size_t)(eoh - c->in) + 4;
		for (cl = c->in; (cl = strchr(cl, '\n')); cl++)
			if (strncasecmp(cl + 1, "content-length:", 15) == 0)
				blen = strtoul(cl + 16, NULL, 10);
		if (hlen + blen > sizeof(c->in))
			return -1;
		if (c->in_len < hlen + blen) {
			*eoh = '\r';
			return 0;
		}
		if (floor_request(wk, c, c->in, c->in + hlen, blen))
			return -1;
		used = hlen + blen;
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
	}
}

static void floor_accept(struct floor_worker *wk)
{
	struct floor *fl = wk->fl;
	struct timeval tv = { .tv_sec = FLOOR_IO_TIMEOUT_MS / 1000 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct floor_conn *c;
	int fd = accept4(fl->listen_fd, NULL, NULL, SOCK_CLOEXEC), one = 1, r;

	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!fl->plain) {
		/* the handshake blocking (bounded by the socket timeouts), then on */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (gnutls_init(&c->tls, GNUTLS_SERVER) < 0 || gnutls_priority_set(c->tls, fl->prio) < 0 ||
		    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, fl->cred) < 0)
			goto fail;
		gnutls_transport_set_int(c->tls, fd);
		do
			r = gnutls_handshake(c->tls);
		while (r < 0 && !gnutls_error_is_fatal(r));
		if (r < 0)
			goto fail;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	ev.data.ptr = c;
	if (epoll_ctl(wk->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return;
fail:
	if (c->tls)
		gnutls_deinit(c->tls);
	close(fd);
	free(c);
}

static void floor_readable(struct floor_worker *wk, struct floor_conn *c)
{
	for (;;) {
		ssize_t r;

		if (c->in_len == sizeof(c->in))
			return floor_close(wk, c);
		r = c->tls ? gnutls_record_recv(c->tls, c->in + c->in_len, sizeof(c->in) - c->in_len)
			   : recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
		if (r > 0) {
			c->in_len += (size_t)r;
			if (floor_input(wk, c))
				return floor_close(wk, c);
			if (c->tls && gnutls_record_check_pending(c->tls))
				continue;
			return;
		}
		if (c->tls ? (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) : (errno == EAGAIN || errno == EINTR))
			return;
		return floor_close(wk, c);
	}
}

static void *floor_worker_run(void *arg)
{
	struct floor_worker *wk = arg;
	struct epoll_event evs[256];

	for (;;) {
		int n = epoll_wait(wk->epfd, evs, 256, -1);

		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &wk->fl->listen_fd) {
				floor_accept(wk);
			} else if (p == &wk->wake) {
				uint64_t v;

				if (read(wk->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
					return NULL;
				for (size_t k = 0; k < wk->nwatchers; k++) {
					struct floor_conn *c = wk->watchers[k];

					if (floor_catch_up(wk->fl, c)) {
						floor_close(wk, c);
						k--;	/* the last watcher moved into slot k */
					}
				}
			} else {
				floor_readable(wk, p);
			}
		}
	}
	return NULL;
}

static void floor_on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* The child's whole life: serve 127.0.0.1:port until SIGTERM.  Never returns. */
static void floor_main(const char *dir, int port, bool plain)
{
	static struct floor fl;
	struct pki_config pcfg = { .dir = dir, .listen_host = "127.0.0.1" };
	struct pki pki = { 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char path[4200], err[512];
	int one = 1;
	FILE *tok;

	signal(SIGTERM, floor_on_term);
	signal(SIGINT, SIG_IGN);
	fl.plain = plain;
	pthread_mutex_init(&fl.lock, NULL);
	if (pki_load_or_create(&pcfg, &pki, err, sizeof(err))) {
		fprintf(stderr, "floor: %s\n", err);
		_exit(1);
	}
	if (!plain) {
		gnutls_datum_t cert = { (unsigned char *)pki.cert_pem, (unsigned)pki.cert_len };
		gnutls_datum_t key = { (unsigned char *)pki.key_pem, (unsigned)pki.key_len };

		if (gnutls_certificate_allocate_credentials(&fl.cred) < 0 ||
		    gnutls_certificate_set_x509_key_mem(fl.cred, &cert, &key, GNUTLS_X509_FMT_PEM) < 0 ||
		    gnutls_priority_init(&fl.prio, FLOOR_PRIORITIES, NULL) < 0) {
			fprintf(stderr, "floor: TLS set-up failed\n");
			_exit(1);
		}
	}
	snprintf(path, sizeof(path), "%s/admin.token", dir);
	tok = fopen(path, "w");
	if (!tok || fputs("floor\n", tok) < 0 || fclose(tok)) {
		fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
		_exit(1);
	}
	snprintf(path, sizeof(path), "%s/floor.data", dir);
	fl.data_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	fl.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fl.data_fd < 0 || fl.listen_fd < 0 || setsockopt(fl.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fl.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fl.listen_fd, 4096)) {
		fprintf(stderr, "floor: listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
		_exit(1);
	}
	for (int k = 0; k < FLOOR_THREADS; k++) {
		struct floor_worker *wk = &fl.w[k];
		struct epoll_event lev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &fl.listen_fd };
		struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &wk->wake };

		wk->fl = &fl;
		wk->epfd = epoll_create1(EPOLL_CLOEXEC);
		wk->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (wk->epfd < 0 || wk->wake < 0 || epoll_ctl(wk->epfd, EPOLL_CTL_ADD, fl.listen_fd, &lev) ||
		    epoll_ctl(wk->epfd, EPOLL_CTL_ADD, wk->wake, &wev) ||
		    (k + 1 < FLOOR_THREADS && pthread_create(&wk->thread, NULL, floor_worker_run, wk))) {
			fprintf(stderr, "floor: worker %d: %s\n", k, strerror(errno));
			_exit(1);
		}
	}
	floor_worker_run(&fl.w[FLOOR_THREADS - 1]);
	_exit(1);
}

#endif
