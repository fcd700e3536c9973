/*
 * progrun.c — the per-packet cost of the loaded programs, without the
 * network around them: BPF_PROG_TEST_RUN of pod_ingress (as the agent
 * loads it: trace off) with a repeat count, in a private bpffs with the
 * data-plane tests' node (src/agent/datapath_fixture.h), for the paths a
 * packet leaving a pod takes:
 *
 *   local     to a pod of the same node (redirect to its veth)
 *   tunnel    to a pod of another node (tunnel key, redirect to VXLAN)
 *   service   a packet of a translated connection to a backend on another
 *             node (its conntrack entry followed, the backend's address
 *             written, then as tunnel)
 *
 * The kernel times each run of `repeat` packets (bpf_test_run's
 * duration: nanoseconds a packet); each figure is the median of
 * BENCH_PROGRUN_RUNS runs.  Two builds compared run their own binaries
 * one after the other, interleaved, on the same machine (bench/README.md,
 * "progrun"): the ratio is what one build's programs cost more per packet.
 *
 *   BENCH_PROGRUN_RUNS    runs of each figure  (15)
 *   BENCH_PROGRUN_REPEAT  packets a run        (200000)
 *
 * Needs root (a bpffs mount, BPF programs).  Prints one line a path:
 *   progrun local 87.3 ns/packet (15 runs of 200000)
 */
#include "agent/datapath_fixture.h"

#include <stdlib.h>

/* the fixture's needs of the test harness: failures are fatal here */
void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "progrun: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

int test_failed(void) { return 0; }

static char tmp[] = "/tmp/weft-progrun.XXXXXX";

/* the bpffs mount point's parent: made once, removed at the end */
const char *test_tmpdir(void)
{
	static bool made;

	if (!made && !mkdtemp(tmp))
		test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
	made = true;
	return tmp;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over runs of the kernel's ns a packet for p through fd. */
static double ns_per_packet(int fd, const struct pkt *p, unsigned runs, unsigned repeat)
{
	double v[256];
	struct pkt out;

	if (runs > 256)
		runs = 256;
	for (unsigned i = 0; i < runs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = p->len, .data_out = out.b,
			    .data_size_out = sizeof(out.b), .repeat = repeat);

		if (bpf_prog_test_run_opts(fd, &o) < 0)
			test_fail(__FILE__, __LINE__, "BPF_PROG_TEST_RUN: %s", strerror(errno));
		v[i] = (double)o.duration;
	}
	qsort(v, runs, sizeof(v[0]), cmp_double);
	return v[runs / 2];
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned lo, unsigned hi)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi) {
		fprintf(stderr, "progrun: %s=%s: want %u..%u\n", name, s, lo, hi);
		exit(2);
	}
	return (unsigned)v;
}

int main(void)
{
	static const uint32_t ids[] = { BE_REMOTE };	/* one backend: every run the same path */
	unsigned runs = env_uint("BENCH_PROGRUN_RUNS", 15, 1, 256);
	unsigned repeat = env_uint("BENCH_PROGRUN_REPEAT", 200000, 1, 100000000);
	struct fixture f;
	struct result r;
	struct pkt p;
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr, "progrun: needs root (a bpffs mount, BPF programs)\n");
		return 2;
	}
	if (fixture_up(&f, false) < 0)
		return 1;
	if (seed_node(f.dp) < 0 || svc_seeded(&f, &cluster_tcp, IPPROTO_TCP, ids, 1) < 0)
		test_fail(__FILE__, __LINE__, "seeding the node");
	fd = datapath_pod_prog_fd(f.dp);

	tcp_from_a(&p, 41000, POD_B_IP, 8080, TCP_ACK);
	printf("progrun local %.1f ns/packet (%u runs of %u)\n", ns_per_packet(fd, &p, runs, repeat), runs, repeat);
	tcp_from_a(&p, 41000, REMOTE_POD_IP, 8080, TCP_ACK);
	printf("progrun tunnel %.1f ns/packet (%u runs of %u)\n", ns_per_packet(fd, &p, runs, repeat), runs, repeat);
	/* the connection first (its SYN), then its packets */
	tcp_from_a(&p, 41001, SVC_IP, SVC_PORT, TCP_SYN);
	if (run(&f, fd, &p, &r) < 0 || r.verdict != TC_ACT_REDIRECT)
		test_fail(__FILE__, __LINE__, "the service connection's SYN: verdict %u", r.verdict);
	tcp_from_a(&p, 41001, SVC_IP, SVC_PORT, TCP_ACK);
	printf("progrun service %.1f ns/packet (%u runs of %u)\n", ns_per_packet(fd, &p, runs, repeat), runs,
	       repeat);
	fixture_down(&f);
	(void)rmdir(f.mnt);
	(void)rmdir(tmp);
	return 0;
}
