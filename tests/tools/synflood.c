/*
 * synflood.c — a TCP segment flood from this host's own address: the
 * attacker of bench/services/flood.sh and tests/e2e/drops_report.sh, fast
 * enough for the 100k pps of the flood benchmark, which the Python sender
 * (synflood.py) is not.  The scripts compile it with the project's warning
 * flags; the Makefile builds no tools.
 *
 *   synflood DST PORT [-r PPS] [-d SECONDS] [-n COUNT] [-f FLAGS]
 *                     [-s SOURCE_PORT] [-b BATCH]
 *
 * How it works:
 *   1. The source address is the one the kernel routes DST from (a UDP
 *      socket connected to DST, then getsockname): a pod's data plane
 *      drops a spoofed source before anything else, so a flood must come
 *      from the pod's own address to reach the service path at all.
 *   2. One raw IPPROTO_TCP socket; the kernel writes the IP header, the
 *      tool the 20-byte TCP header (no options) with FLAGS (default S),
 *      a checksum over the pseudo-header, a sequence number that grows
 *      per segment, and source ports SOURCE_PORT (default 20000) upwards,
 *      wrapping to 1024 after 65535, so every segment is a new 4-tuple.
 *   3. Segments go out BATCH (default 64) at a time with one sendmmsg().
 *      With -r, batch k is not sent before start + k * BATCH / PPS (an
 *      absolute schedule: a late batch is not made up by sleeping less
 *      later, it is sent at once); without it, as fast as the socket
 *      takes them.  A send refused for lack of buffer (ENOBUFS, EAGAIN)
 *      is counted and retried with the next batch; any other error ends
 *      the run (exit 1).
 *   4. It stops after SECONDS (default 5, at most 3600) or COUNT segments,
 *      whichever comes first, or at SIGINT/SIGTERM, and prints
 *          synflood: sent=N seconds=S pps=R refused=E src=A
 *      N segments the kernel took, S the wall time from the first send to
 *      the last, R = N / S, E sends refused for lack of buffer.
 *
 * Exit status: 0 done (also when stopped by a signal); 1 usage or a
 * system error (named on stderr).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define MAX_SECONDS 3600
#define PORT_LO 1024
#define TCP_HDR_LEN 20

static const char usage[] =
	"usage: synflood DST PORT [-r PPS] [-d SECONDS] [-n COUNT] [-f FLAGS]\n"
	"                         [-s SOURCE_PORT] [-b BATCH]\n";

struct flood {
	struct sockaddr_in dst, src;
	long pps, seconds, count, batch;
	uint8_t flags;
	long sport;		/* the next segment's source port */
	uint32_t seq;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

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
		fprintf(stderr, "synflood: %s '%s': expected a number from %ld to %ld\n", what, s, lo, hi);
		return -1;
	}
	return v;
}

/* TCP flag letters (F S R P A U) to the header's flag byte; -1 if unknown */
static int flag_bits(const char *s)
{
	static const char letters[] = "FSRPAU";
	int bits = 0;

	for (; *s; s++) {
		const char *l = strchr(letters, *s);

		if (!l)
			return -1;
		bits |= 1 << (l - letters);
	}
	return bits ? bits : -1;
}

static int parse(int argc, char **argv, struct flood *f)
{
	long port;
	int opt, bits;

	if (argc < 3 || inet_pton(AF_INET, argv[1], &f->dst.sin_addr) != 1) {
		fprintf(stderr, "synflood: '%s' is not an IPv4 address\n%s", argc > 1 ? argv[1] : "", usage);
		return -1;
	}
	if ((port = number("port", argv[2], 1, 65535)) < 0)
		return -1;
	f->dst.sin_family = AF_INET;
	f->dst.sin_port = htons((uint16_t)port);
	f->seconds = 5;
	f->batch = 64;
	f->flags = 0x02;
	f->sport = 20000;
	optind = 3;
	while ((opt = getopt(argc, argv, "r:d:n:f:s:b:")) != -1) {
		switch (opt) {
		case 'r': f->pps = number("rate", optarg, 1, 100000000); break;
		case 'd': f->seconds = number("seconds", optarg, 1, MAX_SECONDS); break;
		case 'n': f->count = number("count", optarg, 1, 1000000000000L); break;
		case 's': f->sport = number("source port", optarg, PORT_LO, 65535); break;
		case 'b': f->batch = number("batch", optarg, 1, MAX_BATCH); break;
		case 'f':
			if ((bits = flag_bits(optarg)) < 0) {
				fprintf(stderr, "synflood: flags '%s': expected letters of FSRPAU\n", optarg);
				return -1;
			}
			f->flags = (uint8_t)bits;
			break;
		default: fputs(usage, stderr); return -1;
		}
		if (f->pps < 0 || f->seconds < 0 || f->count < 0 || f->sport < 0 || f->batch < 0)
			return -1;
	}
	if (optind != argc) {
		fprintf(stderr, "synflood: unexpected argument '%s'\n%s", argv[optind], usage);
		return -1;
	}
	return 0;
}

/* The address the kernel sends to f->dst from (1. above). */
static int source_address(struct flood *f)
{
	socklen_t len = sizeof(f->src);
	int fd, rc = -1;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&f->dst, sizeof(f->dst)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&f->src, &len) < 0)
		fprintf(stderr, "synflood: no route from here to %s: %s\n",
			inet_ntoa(f->dst.sin_addr), strerror(errno));
	else
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

static uint32_t sum16(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	return sum;
}

/* The next segment into hdr (2. above). */
static void segment(struct flood *f, uint8_t hdr[TCP_HDR_LEN])
{
	uint8_t pseudo[12];
	uint32_t sum;

	memset(hdr, 0, TCP_HDR_LEN);
	hdr[0] = (uint8_t)(f->sport >> 8);
	hdr[1] = (uint8_t)f->sport;
	memcpy(hdr + 2, &f->dst.sin_port, 2);
	hdr[4] = (uint8_t)(f->seq >> 24);
	hdr[5] = (uint8_t)(f->seq >> 16);
	hdr[6] = (uint8_t)(f->seq >> 8);
	hdr[7] = (uint8_t)f->seq;
	if (f->flags & 0x10)	/* an ACK acknowledges something */
		hdr[11] = 1;
	hdr[12] = (TCP_HDR_LEN / 4) << 4;
	hdr[13] = f->flags;
	hdr[14] = 0xfa;		/* window 64240 */
	hdr[15] = 0xf0;
	memcpy(pseudo, &f->src.sin_addr, 4);
	memcpy(pseudo + 4, &f->dst.sin_addr, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	pseudo[10] = 0;
	pseudo[11] = TCP_HDR_LEN;
	sum = sum16(hdr, TCP_HDR_LEN, sum16(pseudo, sizeof(pseudo), 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	hdr[16] = (uint8_t)(sum >> 8);
	hdr[17] = (uint8_t)sum;
	f->sport = f->sport >= 65535 ? PORT_LO : f->sport + 1;
	f->seq += 1000;
}

static void sleep_until(int64_t due)
{
	struct timespec ts = { .tv_sec = due / 1000000000, .tv_nsec = due % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
		;
}

int main(int argc, char **argv)
{
	static uint8_t hdrs[MAX_BATCH][TCP_HDR_LEN];
	static struct iovec iov[MAX_BATCH];
	static struct mmsghdr msgs[MAX_BATCH];
	struct flood f = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	long long sent = 0, refused = 0, batches = 0;
	int64_t start, end, deadline;
	int fd = -1, rc = 1, sndbuf = 4 << 20;
	double secs;

	if (parse(argc, argv, &f) < 0 || source_address(&f) < 0)
		goto out;
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0) {
		fprintf(stderr, "synflood: raw socket: %s (needs CAP_NET_RAW)\n", strerror(errno));
		goto out;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));	/* a hint */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long i = 0; i < f.batch; i++) {
		iov[i] = (struct iovec){ .iov_base = hdrs[i], .iov_len = TCP_HDR_LEN };
		msgs[i].msg_hdr = (struct msghdr){ .msg_name = &f.dst, .msg_namelen = sizeof(f.dst),
						   .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	start = end = now_ns();
	deadline = start + (int64_t)f.seconds * 1000000000;
	while (!stop && (!f.count || sent < f.count)) {
		long n = f.batch, k;

		if (f.count && f.count - sent < n)
			n = f.count - sent;
		if (f.pps) {
			int64_t due = start + (int64_t)((double)batches * f.batch * 1e9 / f.pps);

			if (due >= deadline)
				break;
			if (now_ns() < due)
				sleep_until(due);
		}
		if (now_ns() >= deadline)
			break;
		for (k = 0; k < n; k++)
			segment(&f, hdrs[k]);
		batches++;
		k = sendmmsg(fd, msgs, (unsigned)n, 0);
		end = now_ns();
		if (k < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
			refused++;
			continue;
		}
		if (k < 0) {
			fprintf(stderr, "synflood: sendmmsg to %s: %s\n", inet_ntoa(f.dst.sin_addr),
				strerror(errno));
			goto out;
		}
		sent += k;
	}
	secs = (double)(end - start) / 1e9;
	printf("synflood: sent=%lld seconds=%.3f pps=%.0f refused=%lld src=%s\n", sent, secs,
	       secs > 0 ? (double)sent / secs : 0.0, refused, inet_ntoa(f.src.sin_addr));
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}
