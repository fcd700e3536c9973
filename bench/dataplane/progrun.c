/*
 * progrun.c — the per-packet cost of the loaded programs, without the
 * network around them: BPF_PROG_TEST_RUN of pod_ingress (as the agent
 * loads it: trace off), one packet a run, in a private bpffs with the
 * data-plane tests' node (src/agent/datapath_fixture.h), for the paths a
 * packet leaving a pod takes:
 *
 *   local     to a pod of the same node (redirect to its veth)
 *   tunnel    to a pod of another node (tunnel key, redirect to VXLAN)
 *   service   a packet of a translated connection to a backend on another
 *             node (its conntrack entry followed, the backend's address
 *             written, then as tunnel)
 *
 * One packet a run, not the kernel's repeat count: a repeated run runs
 * the program again on the same skb, which the first run rewrote (MACs,
 * TTL, tunnel key), so the runs after it take the drop paths.  The kernel
 * times each run (bpf_test_run's duration, in nanoseconds, the timing's
 * own cost included, the same for every build); each figure is the median
 * of BENCH_PROGRUN_PACKETS runs.  Two builds compared run their own
 * binaries one after the other, interleaved, on the same machine
 * (bench/README.md, "progrun"): the difference is what one build's
 * programs cost more per packet.
 *
 *   BENCH_PROGRUN_PACKETS  runs of each figure  (20000)
 *
 * Needs root (a bpffs mount, BPF programs).  Prints one line a path:
 *   progrun local 87 ns/packet (median of 20000 runs)
 */
#include "agent/datapath_fixture.h"
#include "bench/dataplane/progrun_harness.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over runs of the kernel's ns for p through fd, one a run;
 * every run must end in verdict (the path measured is the one meant). */
static double ns_per_packet(int fd, const struct pkt *p, unsigned runs, int verdict)
{
	double *v = calloc(runs, sizeof(*v)), med;
	struct pkt out;

	if (!v)
		test_fail(__FILE__, __LINE__, "out of memory");
	for (unsigned i = 0; i < runs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = p->len, .data_out = out.b,
			    .data_size_out = sizeof(out.b), .repeat = 1);

		if (bpf_prog_test_run_opts(fd, &o) < 0)
			test_fail(__FILE__, __LINE__, "BPF_PROG_TEST_RUN: %s", strerror(errno));
		if ((int)o.retval != verdict)
			test_fail(__FILE__, __LINE__, "verdict %u, not %d", o.retval, verdict);
		v[i] = (double)o.duration;
	}
	qsort(v, runs, sizeof(v[0]), cmp_double);
	med = v[runs / 2];
	free(v);
	return med;
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
	unsigned runs = env_uint("BENCH_PROGRUN_PACKETS", 20000, 1, 10000000);
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
	printf("progrun local %.0f ns/packet (median of %u runs)\n", ns_per_packet(fd, &p, runs, TC_ACT_REDIRECT),
	       runs);
	tcp_from_a(&p, 41000, REMOTE_POD_IP, 8080, TCP_ACK);
	printf("progrun tunnel %.0f ns/packet (median of %u runs)\n", ns_per_packet(fd, &p, runs, TC_ACT_REDIRECT),
	       runs);
	/* the connection first (its SYN), then its packets */
	tcp_from_a(&p, 41001, SVC_IP, SVC_PORT, TCP_SYN);
	if (run(&f, fd, &p, &r) < 0 || r.verdict != TC_ACT_REDIRECT)
		test_fail(__FILE__, __LINE__, "the service connection's SYN: verdict %u", r.verdict);
	tcp_from_a(&p, 41001, SVC_IP, SVC_PORT, TCP_ACK);
	printf("progrun service %.0f ns/packet (median of %u runs)\n",
	       ns_per_packet(fd, &p, runs, TC_ACT_REDIRECT), runs);
	/* the same paths while someone listens to the flow log (weftctl
	 * flows --follow): every forwarded packet is looked at for an event */
	if (datapath_flows_listen(f.dp, true) < 0)
		test_fail(__FILE__, __LINE__, "the flow log's listener: %s", strerror(errno));
	tcp_from_a(&p, 41000, POD_B_IP, 8080, TCP_ACK);
	printf("progrun local-listened %.0f ns/packet (median of %u runs)\n",
	       ns_per_packet(fd, &p, runs, TC_ACT_REDIRECT), runs);
	tcp_from_a(&p, 41000, REMOTE_POD_IP, 8080, TCP_ACK);
	printf("progrun tunnel-listened %.0f ns/packet (median of %u runs)\n",
	       ns_per_packet(fd, &p, runs, TC_ACT_REDIRECT), runs);
	fixture_down(&f);
	(void)rmdir(f.mnt);
	progrun_tmpdir_remove();
	return 0;
}
