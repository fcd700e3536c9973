/*
 * flowlog_test.c — the agent's flow log (flowlog.c) on the programs as the
 * agent loads them: a drop read from weft_flows by its thread, kept and
 * counted; forwards only while someone listens, and two listeners keep
 * them on until both leave; the ring keeps the last `keep` (8 here) and
 * says which came after a sequence number.
 */
#include "agent/flowlog.h"
#include "agent/datapath_fixture.h"

/* Wait (5 s at most) until the log counted want events of kind. */
static bool counted(struct flowlog *fl, int kind, uint64_t want)
{
	uint64_t c[WEFT_FLOW_SAMPLE + 1];

	for (int i = 0; i < 500; i++) {
		flowlog_counts(fl, c);
		if (c[kind] >= want)
			return c[kind] == want;
		usleep(10 * 1000);	/* the reader polls every 200 ms at most */
	}
	return false;
}

DP_TEST(flowlog_keeps_drops_and_listened_forwards)
{
	enum { KEEP = 8 };
	static struct weft_flow got[64];
	struct datapath *dp;
	struct flowlog *fl;
	struct result r;
	struct pkt p;
	uint64_t last = 0, c[WEFT_FLOW_SAMPLE + 1];
	size_t n;
	int fd;

	CHECK_EQ(seed_node(f->dp), 0);
	if (!(dp = fixture_production(f)))
		return;
	fl = flowlog_start(dp, KEEP);
	CHECK(fl != NULL);
	if (!fl) {
		datapath_close(dp);
		return;
	}
	fd = datapath_pod_prog_fd(dp);

	pkt_ipv4(&p, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), POD_B_IP, 64);	/* a forged source */
	CHECK_EQ(run(f, fd, &p, &r), 0);
	tcp_from_a(&p, 41000, POD_B_IP, 8080, TCP_SYN);	/* nobody listens: none */
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK(counted(fl, WEFT_FLOW_DROP, 1));
	n = flowlog_since(fl, 0, got, 64, &last);
	CHECK_EQ(n, 1);
	CHECK_EQ(last, 1);
	CHECK_EQ(got[0].reason, WEFT_DROP_SPOOFED_IP);

	/* two listeners: forwards on until both leave */
	CHECK_EQ(flowlog_listen(fl, true), 0);
	CHECK_EQ(flowlog_listen(fl, true), 0);
	CHECK_EQ(flowlog_listen(fl, false), 0);
	tcp_from_a(&p, 41001, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK(counted(fl, WEFT_FLOW_NEW, 1));
	n = flowlog_since(fl, last, got, 64, &last);
	CHECK_EQ(n, 1);
	CHECK_EQ(last, 2);
	CHECK_EQ(ntohs(got[0].sport), 41001);
	CHECK_EQ(flowlog_listen(fl, false), 0);
	tcp_from_a(&p, 41002, POD_B_IP, 8080, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	pkt_ipv4(&p, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), POD_B_IP, 64);
	CHECK_EQ(run(f, fd, &p, &r), 0);	/* a drop after it: the SYN came before */
	CHECK(counted(fl, WEFT_FLOW_DROP, 2));
	flowlog_counts(fl, c);
	CHECK_EQ(c[WEFT_FLOW_NEW], 1);

	/* more than the ring keeps: the last KEEP, in order */
	for (int i = 0; i < KEEP + 10; i++)
		CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK(counted(fl, WEFT_FLOW_DROP, KEEP + 12));
	n = flowlog_since(fl, 0, got, 64, &last);
	CHECK_EQ(n, KEEP);
	CHECK_EQ(last, KEEP + 13);
	CHECK_EQ(got[0].reason, WEFT_DROP_SPOOFED_IP);
	n = flowlog_since(fl, last, got, 64, &last);
	CHECK_EQ(n, 0);
	n = flowlog_since(fl, last - 3, got, 64, &last);
	CHECK_EQ(n, 3);
	flowlog_stop(fl);
	datapath_close(dp);
}
