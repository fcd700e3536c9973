/*
 * datapath_flows_test.c — the flow log (bpf/lib/flow.h) on the programs
 * as the agent loads them (trace off), read back from weft_flows as the
 * agent reads it (ring_buffer__consume): a drop is an event whatever the
 * listening, with its reason and the packet's addresses; a forwarded SYN
 * and one in WEFT_FLOWS_SAMPLE UDP packets are events only while
 * datapath_flows_listen is on, and only where a program decided them
 * (not the overlay's own datagrams); a trace's drop is none; past
 * flows_rate a second the events are counted as suppressed instead.
 */
#include "agent/datapath_fixture.h"

#include <bpf/libbpf.h>
#include <sched.h>

#define FLOWS_MAX 2048

struct seen {
	struct weft_flow ev[FLOWS_MAX];
	size_t n;
};

static int on_flow(void *ctx, void *data, size_t len)
{
	struct seen *s = ctx;

	if (len == sizeof(struct weft_flow) && s->n < FLOWS_MAX)
		memcpy(&s->ev[s->n++], data, sizeof(struct weft_flow));
	return 0;
}

/* Everything weft_flows holds now, into s (emptied first). */
static int drain(struct datapath *dp, struct seen *s)
{
	struct ring_buffer *rb = ring_buffer__new(datapath_flows_fd(dp), on_flow, s, NULL);
	int rc;

	s->n = 0;
	if (!rb)
		return -errno;
	rc = ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return rc < 0 ? rc : 0;
}

/* weft_flows holds one event, of this kind, action, place and source */
#define CHECK_ONE_EVENT(dp, s, k, act, place, src)                       \
	do {                                                              \
		CHECK_EQ(drain(dp, &(s)), 0);                             \
		CHECK_EQ((s).n, 1);                                       \
		CHECK_EQ((s).ev[0].kind, (k));                            \
		CHECK_EQ((s).ev[0].action, (act));                        \
		CHECK_EQ((s).ev[0].from, (place));                        \
		CHECK_EQ((s).ev[0].saddr, (src));                         \
	} while (0)

/* p through fd n times in one run (the kernel's repeat count: the same
 * skb each time, so only for a packet the program does not rewrite) */
static int run_n(int fd, const struct pkt *p, unsigned n)
{
	struct pkt out;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = p->len, .data_out = out.b,
		    .data_size_out = sizeof(out.b), .repeat = n);

	return bpf_prog_test_run_opts(fd, &o);
}

DP_TEST(flow_log_drops_always_forwards_while_listened)
{
	static struct seen s;
	struct datapath *dp;
	struct result r;
	struct pkt p;
	int fd;

	CHECK_EQ(seed_node(f->dp), 0);
	if (!(dp = fixture_production(f)))
		return;
	fd = datapath_pod_prog_fd(dp);

	/* nobody listens: a forwarded packet is no event, a drop is */
	tcp_from_a(&p, 41000, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	pkt_ipv4(&p, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), POD_B_IP, 64);	/* a forged source */
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_ONE_EVENT(dp, s, WEFT_FLOW_DROP, WEFT_ACT_DROP, WEFT_FROM_POD, IP(10, 128, 0, 77));
	CHECK_EQ(s.ev[0].reason, WEFT_DROP_SPOOFED_IP);
	CHECK_EQ(s.ev[0].daddr, POD_B_IP);
	CHECK_EQ(s.ev[0].proto, IPPROTO_UDP);
	CHECK(s.ev[0].time_ns > 0);

	/* a trace of the same drop is none */
	CHECK_EQ(run_traced(dp, DATAPATH_PROG_POD, &p, 0, 0, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 0);

	/* listened: the SYN is a new connection, delivered here */
	CHECK_EQ(datapath_flows_listen(dp, true), 0);
	tcp_from_a(&p, 41001, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	tcp_from_a(&p, 41001, POD_B_IP, 8080, TCP_ACK);	/* its next packet: none */
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.ev[0].kind, WEFT_FLOW_NEW);
	CHECK_EQ(s.ev[0].action, WEFT_ACT_LOCAL);
	CHECK_EQ(s.ev[0].saddr, POD_A_IP);
	CHECK_EQ(ntohs(s.ev[0].sport), 41001);
	CHECK_EQ(ntohs(s.ev[0].dport), 8080);
	/* to another node: the tunnel key it was given */
	tcp_from_a(&p, 41002, REMOTE_POD_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.ev[0].action, WEFT_ACT_TUNNEL);
	CHECK_EQ(s.ev[0].tunnel_id, VNID_A);
	CHECK_EQ(htonl(s.ev[0].tunnel_remote), REMOTE_NODE_IP);
	/* UDP: one event in WEFT_FLOWS_SAMPLE packets (each its own run: a
	 * repeated run keeps the first run's rewrites) */
	pkt_from_a(&p, POD_B_IP, 64);
	for (int i = 0; i < 4 * WEFT_FLOWS_SAMPLE; i++)
		CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 4);
	CHECK_EQ(s.ev[3].kind, WEFT_FLOW_SAMPLE);

	/* not listened again: the SYN is no event */
	CHECK_EQ(datapath_flows_listen(dp, false), 0);
	tcp_from_a(&p, 41003, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 0);
	datapath_close(dp);
}

/* Listened, a forward is an event only where a program decided it: on
 * the underlay the overlay's own datagrams and the node's own connections
 * pass unreported (the packets inside the tunnel are reported where
 * vxlan_ingress delivers them); a connection from the node's stack to its
 * pod is one, as pod_egress passes it. */
DP_TEST(flow_log_reports_what_the_programs_decide)
{
	static struct seen s;
	cpu_set_t one, all;
	struct datapath *dp;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	if (!(dp = fixture_production(f)))
		return;
	CHECK_EQ(datapath_flows_listen(dp, true), 0);
	pkt_ipv4(&p, node_mac, outside_mac, REMOTE_NODE_IP, NODE_IP, 64);
	pkt_set_dport(&p, VXLAN_PORT);
	for (int i = 0; i < 4 * WEFT_FLOWS_SAMPLE; i++) {
		CHECK_EQ(run(f, datapath_node_prog_fd(dp), &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
	}
	tcp_from_outside(&p, 40000, NODE_IP, 22, TCP_SYN);
	CHECK_EQ(run(f, datapath_node_prog_fd(dp), &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 0);

	pkt_tcp(&p, pod_a_mac, gw_a_mac, GATEWAY_IP, 40001, POD_A_IP, 8080, TCP_SYN, 1, 0);
	CHECK_EQ(run(f, datapath_pod_egress_prog_fd(dp), &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_ONE_EVENT(dp, s, WEFT_FLOW_NEW, WEFT_ACT_PASS, WEFT_FROM_HOST_TO_POD, GATEWAY_IP);
	CHECK_EQ(s.ev[0].daddr, POD_A_IP);

	/* a trace's forward notes nothing that the next packet could take
	 * for its own verdict (the note is per CPU: both runs on one) */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	CHECK_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	tcp_from_a(&p, 41005, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run_traced(dp, DATAPATH_PROG_POD, &p, 0, 0, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	tcp_from_outside(&p, 40002, NODE_IP, 22, TCP_SYN);	/* the node's own: no event */
	CHECK_EQ(run(f, datapath_node_prog_fd(dp), &p, &r), 0);
	CHECK_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK_EQ(s.n, 0);
	CHECK_EQ(datapath_flows_listen(dp, false), 0);
	datapath_close(dp);
}

/* A pod that sends nothing but what is dropped gets its drops reported at
 * most flows_rate a second on a CPU; the rest are counted. */
DP_TEST(flow_log_is_rate_limited)
{
	static struct seen s;
	struct datapath *dp;
	struct pkt p;
	uint64_t before, after;

	CHECK_EQ(seed_node(f->dp), 0);
	if (!(dp = fixture_production(f)))
		return;
	CHECK_EQ(datapath_flows_suppressed(dp, &before), 0);
	pkt_ipv4(&p, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), POD_B_IP, 64);
	/* one run of 1,500 on one CPU, well inside a second */
	CHECK_EQ(run_n(datapath_pod_prog_fd(dp), &p, WEFT_FLOWS_RATE + 500), 0);
	CHECK_EQ(drain(dp, &s), 0);
	CHECK(s.n <= WEFT_FLOWS_RATE);
	CHECK(s.n >= 1);
	CHECK_EQ(datapath_flows_suppressed(dp, &after), 0);
	CHECK_EQ(after - before + s.n, WEFT_FLOWS_RATE + 500);
	datapath_close(dp);
}
