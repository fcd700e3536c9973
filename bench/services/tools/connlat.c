/*
 * connlat.c — TCP connect latency, the first-packet cost of a service path.
 * A tool of bench/services/run.sh, which compiles it (the Makefile builds
 * every bench/DIR/NAME.c as a benchmark of its own; this is not one).
 *
 *   connlat client IP PORT [-n COUNT] [-w WARMUP] [-t TIMEOUT_MS] [-f MAX_FAIL]
 *                          [-p SOURCE_PORT] [-o FILE]
 *       COUNT (default 1000) sequential connects to IP:PORT after WARMUP
 *       (default 50) unrecorded ones.  Each: socket(), then a blocking
 *       connect() timed with CLOCK_MONOTONIC from just before the call to
 *       its return (SYN out, SYN-ACK back: one round trip through the
 *       path, with the path's per-connection work), then close() with
 *       SO_LINGER 0 (an RST: no TIME_WAIT, so ports never run out).  The
 *       timeout is SO_SNDTIMEO, which bounds a blocking connect.  With -p,
 *       connect i is bound (before the clock starts) to source port
 *       SOURCE_PORT + i, wrapping from 65535 to 1024, so that a caller can
 *       make sure no 4-tuple repeats across runs and every connect is a
 *       new flow to any conntrack on the path; a port that is taken is
 *       skipped.  Without -p the kernel picks ephemeral ports.  Prints
 *           connlat: n=N failed=F p50_us=.. p90_us=.. p99_us=.. max_us=.. mean_us=..
 *       (nearest-rank percentiles of the successful connects); -o FILE also
 *       writes every sample in microseconds, one a line.  MAX_FAIL
 *       (default 10) consecutive failures abort the run (exit 2), so a path
 *       that does not work costs seconds, not COUNT timeouts.
 *   connlat probe IP PORT [-t TIMEOUT_MS]
 *       one connect, then reads what the server sends until EOF and prints
 *       it (the server's ID).  Exit 0 when connected and an ID came, 2
 *       when the connection failed or timed out (the reason on stderr).
 *   connlat server IP PORT [-i ID] [-P POLL_US]
 *       listens on IP:PORT (SO_REUSEADDR, backlog 4096); for every
 *       connection accepted: send ID (default "connlat") plus a newline,
 *       close.  Runs until killed.  With -P, the listening socket is
 *       non-blocking and the server accepts whatever is queued, then
 *       sleeps POLL_US microseconds when nothing was: nobody waits on the
 *       socket, so a new connection wakes no process.  Without -P a
 *       blocking accept() sleeps on the socket, and every handshake's last
 *       ACK wakes it -- on a client's CPU, inside the client's timed
 *       connect() when client and server share a kernel, as here (on
 *       two machines that wake-up happens on the server's and is never
 *       part of the client's connect time).
 *
 * Exit status: 0 done; 1 usage or a system error (named); 2 the path
 * failed (probe) or the client aborted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNT 10000000L
#define MAX_ID 64

static const char usage[] =
	"usage: connlat client IP PORT [-n COUNT] [-w WARMUP] [-t TIMEOUT_MS] [-f MAX_FAIL]\n"
	"                          [-p SOURCE_PORT] [-o FILE]\n"
	"       connlat probe IP PORT [-t TIMEOUT_MS]\n"
	"       connlat server IP PORT [-i ID] [-P POLL_US]\n";

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A number in [lo, hi] from s, else -1 with a message naming what. */
static long number(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "connlat: %s '%s': expected a number from %ld to %ld\n", what, s, lo, hi);
		return -1;
	}
	return v;
}

static int address(const char *ip, const char *port, struct sockaddr_in *sa)
{
	long p = number("port", port, 1, 65535);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1) {
		fprintf(stderr, "connlat: '%s' is not an IPv4 address\n", ip);
		return -1;
	}
	if (p < 0)
		return -1;
	sa->sin_port = htons((uint16_t)p);
	return 0;
}

#define PORT_LO 1024
#define PORT_HI 65535
#define PORT_TRIES 100		/* taken source ports skipped before giving up */

static long next_port(long p) { return p >= PORT_HI ? PORT_LO : p + 1; }

/*
 * One timed connect, from source port *sport (advanced past the port used,
 * and past taken ones) when *sport > 0.  Returns the socket (connected)
 * and sets *ns, or -1 with why[] filled.  The socket is the caller's to
 * close.
 */
static int connect_once(const struct sockaddr_in *sa, long timeout_ms, long *sport, int64_t *ns,
			char *why, size_t whylen)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int64_t t0;
	int fd, rc, err, tries;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		snprintf(why, whylen, "SO_SNDTIMEO: %s", strerror(errno));
		close(fd);
		return -1;
	}
	for (tries = 0; sport && *sport > 0; tries++) {
		struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*sport) };

		*sport = next_port(*sport);
		if (bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0)
			break;
		if (errno != EADDRINUSE || tries + 1 >= PORT_TRIES) {
			snprintf(why, whylen, "bind to source port %u: %s", ntohs(src.sin_port),
				 strerror(errno));
			close(fd);
			return -1;
		}
	}
	t0 = now_ns();
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	*ns = now_ns() - t0;
	if (rc == 0)
		return fd;
	err = errno;
	if (err == EINPROGRESS || err == EAGAIN)	/* SO_SNDTIMEO expired */
		snprintf(why, whylen, "timed out after %ld ms", timeout_ms);
	else
		snprintf(why, whylen, "%s", strerror(err));
	close(fd);
	return -1;
}

static void close_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank: the smallest sample with at least p% of them <= it */
static double pct_us(const int64_t *s, long n, double p)
{
	long k = (long)((p / 100.0) * (double)n + 0.999999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)s[k - 1] / 1000.0;
}

static int client(int argc, char **argv)
{
	long count = 1000, warmup = 50, timeout_ms = 1000, max_fail = 10, ok = 0, failed = 0,
	     streak = 0, sport = 0, i;
	const char *out = NULL;
	struct sockaddr_in sa;
	int64_t *s = NULL, ns, sum = 0;
	char why[256] = "", ip[INET_ADDRSTRLEN];
	int c, rc = 1;

	if (argc < 3 || address(argv[1], argv[2], &sa) < 0) {
		fputs(usage, stderr);
		return 1;
	}
	optind = 3;
	while ((c = getopt(argc, argv, "n:w:t:f:p:o:")) != -1) {
		switch (c) {
		case 'n': count = number("-n", optarg, 1, MAX_COUNT); break;
		case 'w': warmup = number("-w", optarg, 0, MAX_COUNT); break;
		case 't': timeout_ms = number("-t", optarg, 1, 600000); break;
		case 'f': max_fail = number("-f", optarg, 1, MAX_COUNT); break;
		case 'p': sport = number("-p", optarg, PORT_LO, PORT_HI); break;
		case 'o': out = optarg; break;
		default: fputs(usage, stderr); return 1;
		}
		if (count < 0 || warmup < 0 || timeout_ms < 0 || max_fail < 0 || sport < 0)
			return 1;
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 1;
	}
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	s = malloc((size_t)count * sizeof(*s));
	if (!s) {
		fprintf(stderr, "connlat: no memory for %ld samples\n", count);
		return 1;
	}
	for (i = 0; i < warmup + count; i++) {
		int fd = connect_once(&sa, timeout_ms, &sport, &ns, why, sizeof(why));

		if (fd < 0) {
			if (i >= warmup)
				failed++;
			if (++streak >= max_fail) {
				fprintf(stderr, "connlat: %s:%u: aborted after %ld consecutive failed connects (last: %s)\n",
					ip, ntohs(sa.sin_port), streak, why);
				rc = 2;
				goto out;
			}
			continue;
		}
		streak = 0;
		close_rst(fd);
		if (i >= warmup) {
			s[ok++] = ns;
			sum += ns;
		}
	}
	if (failed)
		fprintf(stderr, "connlat: %s:%u: %ld of %ld connects failed (last: %s)\n", ip,
			ntohs(sa.sin_port), failed, count, why);
	if (!ok) {
		fprintf(stderr, "connlat: %s:%u: no connect succeeded\n", ip, ntohs(sa.sin_port));
		rc = 2;
		goto out;
	}
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f) {
			fprintf(stderr, "connlat: %s: %s\n", out, strerror(errno));
			goto out;
		}
		for (i = 0; i < ok; i++)
			fprintf(f, "%.3f\n", (double)s[i] / 1000.0);
		if (fclose(f) != 0) {
			fprintf(stderr, "connlat: %s: %s\n", out, strerror(errno));
			goto out;
		}
	}
	qsort(s, (size_t)ok, sizeof(*s), cmp_i64);
	printf("connlat: n=%ld failed=%ld p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f\n",
	       ok, failed, pct_us(s, ok, 50), pct_us(s, ok, 90), pct_us(s, ok, 99),
	       (double)s[ok - 1] / 1000.0, (double)sum / (double)ok / 1000.0);
	rc = 0;
out:
	free(s);
	return rc;
}

static int probe(int argc, char **argv)
{
	long timeout_ms = 1000;
	struct sockaddr_in sa;
	char why[256], buf[MAX_ID + 2];
	size_t got = 0;
	int64_t ns, deadline;
	int fd, c;

	if (argc < 3 || address(argv[1], argv[2], &sa) < 0) {
		fputs(usage, stderr);
		return 1;
	}
	optind = 3;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't' || (timeout_ms = number("-t", optarg, 1, 600000)) < 0) {
			fputs(usage, stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 1;
	}
	fd = connect_once(&sa, timeout_ms, NULL, &ns, why, sizeof(why));
	if (fd < 0) {
		fprintf(stderr, "connlat: connect to %s:%s: %s\n", argv[1], argv[2], why);
		return 2;
	}
	deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (deadline - now_ns()) / 1000000;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			fprintf(stderr, "connlat: %s:%s: connected, but no answer within %ld ms\n", argv[1],
				argv[2], timeout_ms);
			close(fd);
			return 2;
		}
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0) {
			fprintf(stderr, "connlat: %s:%s: read: %s\n", argv[1], argv[2], strerror(errno));
			close(fd);
			return 2;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	if (!buf[0]) {
		fprintf(stderr, "connlat: %s:%s: connected, but the server sent no ID\n", argv[1], argv[2]);
		return 2;
	}
	printf("%s\n", buf);
	return 0;
}

static int server(int argc, char **argv)
{
	const char *id = "connlat";
	struct sockaddr_in sa;
	char msg[MAX_ID + 2];
	long poll_us = 0;
	size_t len;
	int fd, c, one = 1;

	if (argc < 3 || address(argv[1], argv[2], &sa) < 0) {
		fputs(usage, stderr);
		return 1;
	}
	optind = 3;
	while ((c = getopt(argc, argv, "i:P:")) != -1) {
		if (c == 'i') {
			id = optarg;
		} else if (c == 'P') {
			char *end;

			errno = 0;
			poll_us = strtol(optarg, &end, 10);
			if (errno || *end || poll_us < 1 || poll_us > 1000000) {
				fprintf(stderr, "connlat: server: -P '%s': microseconds, 1 to 1000000\n",
					optarg);
				return 1;
			}
		} else {
			fputs(usage, stderr);
			return 1;
		}
	}
	if (optind != argc || !*id || strlen(id) > MAX_ID || strpbrk(id, "\r\n")) {
		fprintf(stderr, "connlat: server: the ID must be 1 to %d characters on one line\n", MAX_ID);
		return 1;
	}
	len = (size_t)snprintf(msg, sizeof(msg), "%s\n", id);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (poll_us ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		fprintf(stderr, "connlat: server %s:%s: %s\n", argv[1], argv[2], strerror(errno));
		return 1;
	}
	for (;;) {
		int c2 = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c2 < 0) {
			if (poll_us && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				struct timespec ts = { poll_us / 1000000, (poll_us % 1000000) * 1000 };

				(void)nanosleep(&ts, NULL);
				continue;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "connlat: server %s:%s: accept: %s\n", argv[1], argv[2],
				strerror(errno));
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				usleep(10000);
				continue;
			}
			return 1;
		}
		/* the client may have reset already: nothing to do about it */
		(void)send(c2, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(c2);
	}
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "client"))
		return client(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return probe(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return server(argc - 1, argv + 1);
	fputs(usage, stderr);
	return 1;
}
