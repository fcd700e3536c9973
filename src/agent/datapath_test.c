/*
 * datapath_test.c — the eBPF data plane and its user-space handle.
 *
 * Every test mounts a private bpffs under its temporary directory, opens
 * the datapath there (which is also the verifier test: open loads every
 * program), and unpins and unmounts before it returns, whether it passed
 * or not (DP_TEST runs the body between fixture_up and fixture_down).
 *
 * Programs are run with BPF_PROG_TEST_RUN: a hand-built frame in, the tc
 * verdict, the frame out, weft_drops and the trace entry (the programs are
 * loaded with trace on) asserted.  In a test run a redirect is only a
 * verdict (TC_ACT_REDIRECT, 7); the trace says where it would have gone.
 *
 * A test run has no tunnel metadata, so bpf_skb_get_tunnel_key() fails
 * and vxlan_ingress can only be seen dropping with TUNNEL_KEY there.  Its
 * other paths are tested for real: in a private network namespace a VXLAN
 * device in external mode gets the program, and a UDP socket sends it
 * VXLAN frames over loopback, so the kernel decapsulates them and sets the
 * key (remote 127.0.0.1) as it would for another node.
 *
 * A tc test run hands the program an skb on the loopback device of the
 * caller's namespace (the kernel takes ctx ifindex only for a device that
 * exists), so skb->ifindex is that device's; pod_ingress's anti-spoofing
 * compares it with the sender's endpoint.  run_ifindex() asks a two-
 * instruction program what a test run sees, and the pods that send in
 * these tests sit on that ifindex; pods on any other ifindex can only be
 * destinations, or spoofed sources.
 *
 * Services (bpf/lib/lb.h): translation, conntrack and refusals through
 * test runs of pod_ingress and node_ingress, with every checksum of the
 * packet out recomputed here; answers over the tunnel through a real VXLAN
 * device as above, the packets that leave caught by packet sockets in a
 * second namespace (at the peer of a pod's veth, and of the underlay).
 *
 * Randomized: pod_ingress's forwarding (anti-spoofing, tenants, tunnel)
 * against a naive reference (linear longest-prefix match), the endpoint
 * map against a list, and the backend each connection's conntrack entry
 * holds against a model of the agent's slot writes.
 */
#include "agent/conntrack.h"
#include "agent/datapath.h"
#include "agent/datapath_fixture.h"
#include "agent/netlink.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/if_ether.h>
#include <netinet/ip.h>
#include <netpacket/packet.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* ---- loading, pins, restart ---- */

DP_TEST(open_loads_both_programs_and_pins_maps)
{
	static const char *names[] = { "weft_config", "weft_endpoints", "weft_ipcache",
				       "weft_nodes", "weft_node_ips", "weft_drops",
				       "weft_trace", "weft_svc_dev" };
	char path[PATH_MAX + 32];
	struct stat st;

	CHECK(f->rebuilt);
	CHECK(datapath_pod_prog_fd(f->dp) >= 0);
	CHECK(datapath_vxlan_prog_fd(f->dp) >= 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->pin, names[i]);
		CHECK(stat(path, &st) == 0);
	}
}

DP_TEST(reopen_keeps_entries)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct weft_config cfg = ready_config(), got;
	struct weft_endpoint ep;
	char err[256] = "";
	bool rebuilt = true;

	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;

	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(!rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &got), 0);
	CHECK(memcmp(&got, &cfg, sizeof(cfg)) == 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_B_IP, &ep), 0);
	CHECK_EQ(ep.ifindex, 42);
	CHECK(memcmp(ep.pod_mac, pod_b_mac, 6) == 0);

	/* and the reloaded programs see the kept state */
	struct pkt p;
	struct result r;

	pkt_from_a(&p, POD_B_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
}

/* A pin of another layout (an older weft) is replaced, and so is every
 * other weft map: the config comes back incomplete. */
DP_TEST(stale_pin_rebuilds_all_maps)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct weft_config cfg;
	struct weft_endpoint ep = endpoint(3, 0, pod_a_mac, gw_a_mac);
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX + 32], other[PATH_MAX + 32], err[256] = "";
	bool rebuilt = false;
	int fd, fd2;

	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;

	snprintf(path, sizeof(path), "%s/weft_endpoints", f->pin);
	snprintf(other, sizeof(other), "%s/other_map", f->pin);
	CHECK(unlink(path) == 0);
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "old", 4, 8, 16, NULL);
	CHECK(fd >= 0);
	fd2 = bpf_obj_pin(fd, path);
	if (fd2 == 0)
		fd2 = bpf_obj_pin(fd, other);	/* not ours: must survive */
	close(fd);
	CHECK_EQ(fd2, 0);

	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_B_IP, &ep), -ENOENT);
	CHECK_EQ(datapath_endpoint_put(f->dp, POD_A_IP, &ep), 0);

	fd = bpf_obj_get(path);
	CHECK(fd >= 0);
	memset(&info, 0, sizeof(info));
	fd2 = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	CHECK_EQ(fd2, 0);
	CHECK_EQ(info.value_size, sizeof(struct weft_endpoint));

	/* unpin leaves what is not weft's, and so the directory */
	datapath_close(f->dp);
	f->dp = NULL;
	CHECK_EQ(datapath_unpin(f->pin), 0);
	CHECK(access(path, F_OK) < 0);
	CHECK(access(other, F_OK) == 0);
	CHECK(unlink(other) == 0);
	CHECK_EQ(datapath_unpin(f->pin), 0);
	CHECK(access(f->pin, F_OK) < 0);
	CHECK_EQ(datapath_unpin(f->pin), 0);	/* nothing there: still fine */
}

/* A set with a map missing (removed by hand, or added by a newer weft) is
 * rebuilt as a whole, or a complete config would meet empty tables. */
DP_TEST(missing_pin_rebuilds_all_maps)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct weft_config cfg;
	struct weft_endpoint ep;
	char path[sizeof(f->pin) + 32], err[256] = "";
	bool rebuilt = false;

	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;
	snprintf(path, sizeof(path), "%s/weft_ipcache", f->pin);
	CHECK(unlink(path) == 0);

	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep), -ENOENT);
	CHECK(access(path, F_OK) == 0);
}

/* The maps that hold nothing traffic needs (weft_trace, weft_flows,
 * weft_flow_state): one of another layout (an older weft's weft_trace)
 * and one missing (a weft before the flow log) are made anew, alone; the
 * rest is kept, config and endpoints with it. */
DP_TEST(scratch_maps_are_made_anew_alone)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct weft_config cfg;
	struct weft_endpoint ep;
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char trace[sizeof(f->pin) + 32], flows[sizeof(f->pin) + 32], err[256] = "";
	bool rebuilt = true;
	int fd, rc;

	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;
	snprintf(trace, sizeof(trace), "%s/weft_trace", f->pin);
	snprintf(flows, sizeof(flows), "%s/weft_flows", f->pin);
	CHECK(unlink(trace) == 0);
	CHECK(unlink(flows) == 0);
	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "weft_trace", 4, 28, 1, NULL);	/* an older layout */
	CHECK(fd >= 0);
	CHECK_EQ(bpf_obj_pin(fd, trace), 0);
	close(fd);

	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(!rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, WEFT_CONFIG_VERSION);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_B_IP, &ep), 0);
	fd = bpf_obj_get(trace);
	CHECK(fd >= 0);
	memset(&info, 0, sizeof(info));
	rc = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(info.value_size, sizeof(struct weft_trace));
	CHECK(access(flows, F_OK) == 0);
}

/* A pin directory of weft 1: no weft_node_ips, and a weft_config of the
 * old size (56 bytes) saying version 1.  All of it is rebuilt: the config
 * comes back incomplete, the new map is there. */
DP_TEST(version1_pin_dir_is_rebuilt)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct weft_config cfg;
	struct weft_endpoint ep;
	char path[sizeof(f->pin) + 32], err[256] = "";
	uint8_t old[56];
	bool rebuilt = false;
	__u32 key = 0;
	int fd, rc;

	/* only the new map missing */
	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;
	snprintf(path, sizeof(path), "%s/weft_node_ips", f->pin);
	CHECK(unlink(path) == 0);
	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(rebuilt);
	CHECK(access(path, F_OK) == 0);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep), -ENOENT);

	/* and the old config layout besides */
	CHECK_EQ(seed_node(f->dp), 0);
	datapath_close(f->dp);
	f->dp = NULL;
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/weft_config", f->pin);
	CHECK(unlink(path) == 0);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "weft_config", 4, sizeof(old), 1, NULL);
	CHECK(fd >= 0);
	memset(old, 0, sizeof(old));
	old[0] = 1;	/* version 1 */
	old[4] = 1;	/* ready */
	rc = bpf_map_update_elem(fd, &key, old, BPF_ANY);
	if (rc == 0)
		rc = bpf_obj_pin(fd, path);
	close(fd);
	CHECK_EQ(rc, 0);
	rebuilt = false;
	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep), -ENOENT);
	snprintf(path, sizeof(path), "%s/weft_node_ips", f->pin);
	CHECK(access(path, F_OK) == 0);
	CHECK_EQ(datapath_nodeip_put(f->dp, NODE_IP, 1), 0);
}

TEST(pin_dir_must_be_on_bpffs)
{
	struct datapath_opts opts = { .trace = false };
	struct datapath *dp = NULL;
	char parent[1024], dir[1100], err[1400] = "";
	int rc;

	snprintf(parent, sizeof(parent), "%s/notbpf", test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/weft", parent);
	opts.pin_dir = dir;
	rc = datapath_open(&opts, &dp, NULL, err, sizeof(err));
	datapath_close(dp);
	CHECK_EQ(rc, -EINVAL);
	CHECK(dp == NULL);
	CHECK_CONTAINS(err, dir);
	CHECK_CONTAINS(err, "not on a bpf filesystem");
	CHECK(access(parent, F_OK) < 0);	/* nothing created on the wrong fs */
}

DP_TEST(drop_names_cover_every_reason)
{
	for (int i = 0; i < WEFT_DROP_MAX; i++)
		CHECK(datapath_drop_names[i] && datapath_drop_names[i][0]);
	CHECK_STR(datapath_drop_names[WEFT_DROP_TTL], "ttl-exceeded");
	CHECK_STR(datapath_drop_names[WEFT_DROP_UNSUPPORTED_L3], "unsupported-l3");
	CHECK_STR(datapath_drop_names[WEFT_DROP_UNKNOWN_NODE], "unknown-node");
	CHECK_STR(datapath_drop_names[WEFT_DROP_SPOOFED_IP], "spoofed-ip");
	CHECK_STR(datapath_drop_names[WEFT_DROP_SPOOFED_MAC], "spoofed-mac");
	CHECK_STR(datapath_drop_names[WEFT_DROP_ISOLATED], "isolated");
	CHECK_STR(datapath_drop_names[WEFT_DROP_TUNNEL_INJECT], "tunnel-inject");
	CHECK_STR(datapath_drop_names[WEFT_DROP_ICMP_FORGED], "icmp-forged");
	CHECK_STR(datapath_drop_names[WEFT_DROP_ICMP_TRUNCATED], "icmp-truncated");
	CHECK_STR(datapath_drop_names[WEFT_DROP_FRAG_ORPHAN], "frag-orphan");
	CHECK_STR(datapath_drop_names[WEFT_DROP_NO_SUBNET], "no-subnet");
	CHECK_STR(datapath_drop_names[WEFT_DROP_FRAG_LIMIT], "frag-limit");
}

/* ---- map operations ---- */

struct collect {
	int calls;
	int stop_after;		/* 0: never */
	bool delete;
	struct datapath *dp;
	in_addr_t ips[WEFT_MAX_ENDPOINTS];
	in_addr_t subnet;
	int prefixlen;
	struct weft_node_entry node;
};

static int collect_endpoint(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct collect *c = arg;

	(void)ep;
	if (c->delete && datapath_endpoint_del(c->dp, ip) < 0)
		return -100;
	c->ips[c->calls++] = ip;
	return c->stop_after && c->calls == c->stop_after ? 42 : 0;
}

static int collect_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	struct collect *c = arg;

	(void)e;
	c->ips[c->calls++] = ip;
	return 0;
}

static int collect_node(in_addr_t subnet, int prefixlen, const struct weft_node_entry *e, void *arg)
{
	struct collect *c = arg;

	c->calls++;
	c->subnet = subnet;
	c->prefixlen = prefixlen;
	c->node = *e;
	return 0;
}

DP_TEST(map_put_get_del_foreach)
{
	struct weft_config cfg = ready_config(), got;
	struct weft_endpoint ep = endpoint(41, 3, pod_a_mac, gw_a_mac), ep2;
	struct weft_ipcache_entry ic = { .node_ip = REMOTE_NODE_IP, .vnid = 9 }, ic2;
	struct weft_node_entry node = { .node_ip = REMOTE_NODE_IP, .node_id = 2 };
	static struct collect c;

	CHECK_EQ(datapath_config_get(f->dp, &got), 0);
	CHECK_EQ(got.version, 0);	/* a fresh config is incomplete */
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(datapath_config_get(f->dp, &got), 0);
	CHECK(memcmp(&got, &cfg, sizeof(cfg)) == 0);

	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep2), -ENOENT);
	CHECK_EQ(datapath_endpoint_put(f->dp, POD_A_IP, &ep), 0);
	ep.ifindex = 43;
	CHECK_EQ(datapath_endpoint_put(f->dp, POD_A_IP, &ep), 0);	/* replace */
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep2), 0);
	CHECK(memcmp(&ep, &ep2, sizeof(ep)) == 0);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_endpoint_foreach(f->dp, collect_endpoint, &c), 0);
	CHECK_EQ(c.calls, 1);
	CHECK_EQ(c.ips[0], POD_A_IP);
	CHECK_EQ(datapath_endpoint_del(f->dp, POD_A_IP), 0);
	CHECK_EQ(datapath_endpoint_del(f->dp, POD_A_IP), -ENOENT);

	CHECK_EQ(datapath_ipcache_put(f->dp, REMOTE_POD_IP, &ic), 0);
	CHECK_EQ(datapath_ipcache_get(f->dp, REMOTE_POD_IP, &ic2), 0);
	CHECK_EQ(ic2.node_ip, REMOTE_NODE_IP);
	CHECK_EQ(ic2.vnid, 9);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_ipcache_foreach(f->dp, collect_ipcache, &c), 0);
	CHECK_EQ(c.calls, 1);
	CHECK_EQ(c.ips[0], REMOTE_POD_IP);
	CHECK_EQ(datapath_ipcache_del(f->dp, REMOTE_POD_IP), 0);
	CHECK_EQ(datapath_ipcache_del(f->dp, REMOTE_POD_IP), -ENOENT);
	CHECK_EQ(datapath_ipcache_get(f->dp, REMOTE_POD_IP, &ic2), -ENOENT);

	/* host bits are cleared: 10.128.3.7/23 is the subnet 10.128.2.0/23 */
	CHECK_EQ(datapath_node_put(f->dp, IP(10, 128, 3, 7), 23, &node), 0);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_node_foreach(f->dp, collect_node, &c), 0);
	CHECK_EQ(c.calls, 1);
	CHECK_EQ(c.subnet, IP(10, 128, 2, 0));
	CHECK_EQ(c.prefixlen, 23);
	CHECK_EQ(c.node.node_ip, REMOTE_NODE_IP);
	CHECK_EQ(c.node.node_id, 2);
	CHECK_EQ(datapath_node_put(f->dp, IP(10, 0, 0, 0), 33, &node), -EINVAL);
	CHECK_EQ(datapath_node_put(f->dp, IP(10, 0, 0, 0), -1, &node), -EINVAL);
	CHECK_EQ(datapath_node_put(f->dp, IP(1, 2, 3, 4), 0, &node), 0);	/* default route */
	CHECK_EQ(datapath_node_del(f->dp, 0, 0), 0);
	CHECK_EQ(datapath_node_del(f->dp, IP(10, 128, 2, 0), 23), 0);
	CHECK_EQ(datapath_node_del(f->dp, IP(10, 128, 2, 0), 23), -ENOENT);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_node_foreach(f->dp, collect_node, &c), 0);
	CHECK_EQ(c.calls, 0);
}

DP_TEST(foreach_may_delete_and_stops_on_nonzero)
{
	struct weft_endpoint ep = endpoint(1, 0, pod_a_mac, gw_a_mac);
	static struct collect c;

	for (int i = 0; i < 50; i++)
		CHECK_EQ(datapath_endpoint_put(f->dp, IP(10, 128, 1, i), &ep), 0);

	memset(&c, 0, sizeof(c));
	c.stop_after = 3;
	CHECK_EQ(datapath_endpoint_foreach(f->dp, collect_endpoint, &c), 42);
	CHECK_EQ(c.calls, 3);

	memset(&c, 0, sizeof(c));
	c.delete = true;
	c.dp = f->dp;
	CHECK_EQ(datapath_endpoint_foreach(f->dp, collect_endpoint, &c), 0);
	CHECK_EQ(c.calls, 50);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_endpoint_foreach(f->dp, collect_endpoint, &c), 0);
	CHECK_EQ(c.calls, 0);
}

static int collect_nodeip(in_addr_t ip, uint32_t node_id, void *arg)
{
	struct collect *c = arg;

	if (c->delete && datapath_nodeip_del(c->dp, ip) < 0)
		return -100;
	if (ntohl(ip) - 0xc0a80000u != node_id)	/* 192.168.x.y is node x*256+y */
		return -101;
	c->ips[c->calls++] = ip;
	return c->stop_after && c->calls == c->stop_after ? 42 : 0;
}

DP_TEST(nodeip_put_del_foreach_and_full)
{
	static struct collect c;
	int rc;

	CHECK_EQ(datapath_nodeip_put(f->dp, IP(192, 168, 0, 7), 7), 0);
	CHECK_EQ(datapath_nodeip_put(f->dp, IP(192, 168, 0, 7), 7), 0);	/* replace */
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_nodeip_foreach(f->dp, collect_nodeip, &c), 0);
	CHECK_EQ(c.calls, 1);
	CHECK_EQ(c.ips[0], IP(192, 168, 0, 7));
	CHECK_EQ(datapath_nodeip_del(f->dp, IP(192, 168, 0, 7)), 0);
	CHECK_EQ(datapath_nodeip_del(f->dp, IP(192, 168, 0, 7)), -ENOENT);

	for (uint32_t i = 0; i < WEFT_MAX_NODES; i++)
		CHECK_EQ(datapath_nodeip_put(f->dp, htonl(0xc0a80000u + i), i), 0);
	rc = datapath_nodeip_put(f->dp, htonl(0xc0a80000u + WEFT_MAX_NODES), WEFT_MAX_NODES);
	CHECK(rc == -E2BIG || rc == -ENOSPC);
	memset(&c, 0, sizeof(c));
	c.stop_after = 5;
	CHECK_EQ(datapath_nodeip_foreach(f->dp, collect_nodeip, &c), 42);
	memset(&c, 0, sizeof(c));
	c.delete = true;
	c.dp = f->dp;
	CHECK_EQ(datapath_nodeip_foreach(f->dp, collect_nodeip, &c), 0);
	CHECK_EQ(c.calls, WEFT_MAX_NODES);
	memset(&c, 0, sizeof(c));
	CHECK_EQ(datapath_nodeip_foreach(f->dp, collect_nodeip, &c), 0);
	CHECK_EQ(c.calls, 0);
}

DP_TEST(endpoints_full_is_an_error)
{
	struct weft_endpoint ep = endpoint(1, 0, pod_a_mac, gw_a_mac);
	int rc;

	for (int i = 0; i < WEFT_MAX_ENDPOINTS; i++)
		CHECK_EQ(datapath_endpoint_put(f->dp, htonl(0x0a800000u + (uint32_t)i), &ep), 0);
	rc = datapath_endpoint_put(f->dp, htonl(0x0a800000u + WEFT_MAX_ENDPOINTS), &ep);
	CHECK(rc == -E2BIG || rc == -ENOSPC);
	ep.ifindex = 2;		/* replacing an entry still works when full */
	CHECK_EQ(datapath_endpoint_put(f->dp, htonl(0x0a800000u), &ep), 0);
	CHECK_EQ(datapath_endpoint_del(f->dp, htonl(0x0a800001u)), 0);
	CHECK_EQ(datapath_endpoint_put(f->dp, htonl(0x0a800000u + WEFT_MAX_ENDPOINTS), &ep), 0);
}

/* Random puts and deletes against a plain array, then foreach must list
 * exactly the array's entries with the array's values. */
static struct {
	bool present;
	uint32_t ifindex;
	int seen;
} model[64];

static int check_against_model(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	uint32_t i = ntohl(ip) - 0x0a800100u;

	(void)arg;
	if (i >= 64 || !model[i].present || model[i].ifindex != ep->ifindex || model[i].seen)
		return -1;
	model[i].seen++;
	return 0;
}

DP_TEST(endpoints_random_against_reference)
{
	uint64_t s = test_seed() | 1;
	struct weft_endpoint ep = endpoint(0, 0, pod_a_mac, gw_a_mac);

	memset(model, 0, sizeof(model));
	for (int op = 0; op < 2000; op++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		uint32_t i = (uint32_t)(s % 64);
		in_addr_t ip = htonl(0x0a800100u + i);

		if ((s >> 8) % 3 == 0) {
			int rc = datapath_endpoint_del(f->dp, ip);

			CHECK_EQ(rc, model[i].present ? 0 : -ENOENT);
			model[i].present = false;
		} else {
			ep.ifindex = (uint32_t)(s >> 16) & 0xffff;
			CHECK_EQ(datapath_endpoint_put(f->dp, ip, &ep), 0);
			model[i].present = true;
			model[i].ifindex = ep.ifindex;
		}
	}
	CHECK_EQ(datapath_endpoint_foreach(f->dp, check_against_model, NULL), 0);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(model[i].seen, model[i].present ? 1 : 0);
}

/* ---- pod_ingress ---- */

DP_TEST(pod_arp_request_is_answered_with_gateway_mac)
{
	static const in_addr_t asked[] = { GATEWAY_IP, IP(10, 128, 0, 6), IP(8, 8, 8, 8) };
	struct ether_header eh;
	struct ether_arp arp;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, asked[i]);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.out.len, p.len);
		memcpy(&eh, r.out.b, sizeof(eh));
		memcpy(&arp, r.out.b + sizeof(eh), sizeof(arp));
		CHECK(memcmp(eh.ether_dhost, pod_a_mac, 6) == 0);
		CHECK(memcmp(eh.ether_shost, gw_a_mac, 6) == 0);
		CHECK_EQ(ntohs(eh.ether_type), ETHERTYPE_ARP);
		CHECK_EQ(ntohs(arp.arp_hrd), ARPHRD_ETHER);
		CHECK_EQ(ntohs(arp.arp_pro), ETHERTYPE_IP);
		CHECK_EQ(ntohs(arp.arp_op), ARPOP_REPLY);
		CHECK(memcmp(arp.arp_sha, gw_a_mac, 6) == 0);
		CHECK(memcmp(arp.arp_spa, &asked[i], 4) == 0);
		CHECK(memcmp(arp.arp_tha, pod_a_mac, 6) == 0);
		CHECK(memcmp(arp.arp_tpa, &(in_addr_t){ POD_A_IP }, 4) == 0);
		CHECK_EQ(r.trace.action, WEFT_ACT_ARP_REPLY);
		CHECK_EQ(r.trace.count, 1);
		CHECK_EQ(r.trace.ifindex, 1);	/* test runs happen on lo */
	}
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_arp_not_answered_is_dropped)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	/* a reply */
	pkt_arp(&p, ARPOP_REPLY, pod_a_mac, POD_A_IP, GATEWAY_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ARP);
	/* a probe (RFC 5227): answering would say the address is taken */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, 0, POD_A_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	/* gratuitous */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, POD_A_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	/* sender is no pod of this node: a spoofed sender */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, IP(10, 128, 0, 99), GATEWAY_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	CHECK_EQ(drops_of(f, WEFT_DROP_ARP), 3);
	CHECK_EQ(drops_of(f, WEFT_DROP_SPOOFED_IP), 1);
	/* not Ethernet/IPv4 ARP, or cut short */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
	p.b[18] = 8;	/* hln */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
	p.len = 30;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(drops_of(f, WEFT_DROP_MALFORMED), 2);
	CHECK_EQ(drops_total(f), 6);
}

DP_TEST(pod_to_local_pod_is_routed_to_its_peer)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	pkt_from_a(&p, POD_B_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.out.len, p.len);
	CHECK(memcmp(r.out.b, pod_b_mac, 6) == 0);	/* Ethernet destination */
	CHECK(memcmp(r.out.b + 6, gw_b_mac, 6) == 0);	/* and source */
	CHECK_EQ(ip_of(&r.out)->ttl, 63);
	CHECK_EQ(ip_checksum(ip_of(&r.out), sizeof(struct iphdr)), 0);
	/* nothing else changed */
	ip_of(&r.out)->ttl = 64;
	ip_of(&r.out)->check = ip_of(&p)->check;
	CHECK(memcmp(r.out.b + 12, p.b + 12, p.len - 12) == 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 42);
	CHECK_EQ(r.trace.count, 1);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_to_remote_pod_is_tunnelled)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	pkt_from_a(&p, REMOTE_POD_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_EQ(r.trace.ifindex, VXLAN_IFINDEX);
	CHECK_EQ(r.trace.tunnel_remote, ntohl(REMOTE_NODE_IP));
	CHECK_EQ(r.trace.tunnel_id, VNID_A);
	CHECK_EQ(ip_of(&r.out)->ttl, 63);
	CHECK_EQ(ip_checksum(ip_of(&r.out), sizeof(struct iphdr)), 0);
	CHECK(memcmp(r.out.b, p.b, 12) == 0);	/* the inner MACs stay */
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_to_node_or_outside_goes_to_the_stack_unchanged)
{
	static const in_addr_t dsts[] = { NODE_IP, GATEWAY_IP, IP(10, 128, 1, 200),
					  IP(8, 8, 8, 8), IP(255, 255, 255, 255) };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		pkt_from_a(&p, dsts[i], 64);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		CHECK_EQ(r.out.len, p.len);
		CHECK(memcmp(r.out.b, p.b, p.len) == 0);
		CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	}
	/* TTL 1 to the stack is the stack's business */
	pkt_from_a(&p, IP(8, 8, 8, 8), 1);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_ttl_expiring_is_dropped_and_counted)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	pkt_from_a(&p, POD_B_IP, 1);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TTL);
	pkt_from_a(&p, REMOTE_POD_IP, 1);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	pkt_from_a(&p, REMOTE_POD_IP, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(drops_of(f, WEFT_DROP_TTL), 3);
	/* TTL 2 still goes */
	pkt_from_a(&p, POD_B_IP, 2);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ip_of(&r.out)->ttl, 1);
	CHECK_EQ(ip_checksum(ip_of(&r.out), sizeof(struct iphdr)), 0);
	CHECK_EQ(drops_total(f), 3);
}

DP_TEST(pod_non_ipv4_is_dropped_and_counted)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	pkt_ipv6(&p);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNSUPPORTED_L3);
	pkt_ipv6(&p);
	p.b[12] = 0x88;	/* LLDP */
	p.b[13] = 0xcc;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(drops_of(f, WEFT_DROP_UNSUPPORTED_L3), 2);
}

DP_TEST(pod_malformed_ipv4_is_dropped_and_counted)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	/* (A frame shorter than an IPv4 header cannot be test-run: the kernel
	 * refuses it with EINVAL before the program sees it.) */
	pkt_from_a(&p, POD_B_IP, 64);
	p.len = 14 + 20;			/* the header without the 16 bytes it counts */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_MALFORMED);
	pkt_from_a(&p, POD_B_IP, 64);
	ip_of(&p)->ihl = 4;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	pkt_from_a(&p, POD_B_IP, 64);
	ip_of(&p)->version = 6;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	pkt_from_a(&p, POD_B_IP, 64);
	ip_of(&p)->tot_len = htons(200);	/* more than the frame holds */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(drops_of(f, WEFT_DROP_MALFORMED), 4);
	CHECK_EQ(drops_total(f), 4);
	/* a frame cut short of an IPv4 header never reaches the program */
	pkt_from_a(&p, POD_B_IP, 64);
	p.len = 14 + 10;
	CHECK_EQ(run_pod(f, &p, &r), -EINVAL);
}

DP_TEST(pod_incomplete_config_passes_everything_to_the_stack)
{
	struct weft_config cfg = ready_config();
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	for (int step = 0; step < 2; step++) {
		if (step == 0)
			cfg.version = 0;	/* being rebuilt */
		else
			cfg.version = WEFT_CONFIG_VERSION, cfg.ready = 0;
		CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
		pkt_from_a(&p, POD_B_IP, 64);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		CHECK(memcmp(r.out.b, p.b, p.len) == 0);
		CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
		pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		pkt_ipv6(&p);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
	}
	CHECK_EQ(drops_total(f), 0);
}

/* ---- pod_ingress: anti-spoofing, tenants, tunnel injection ---- */

/* A source IP that is not the sending pod's: another pod's (behind
 * another veth), the gateway's, a node's, nobody's. */
DP_TEST(pod_spoofed_source_ip_is_dropped)
{
	static const in_addr_t srcs[] = { POD_B_IP, RED_DST_IP, GATEWAY_IP, NODE_IP,
					  REMOTE_NODE_IP, REMOTE_POD_IP, IP(10, 128, 0, 99), 0 };
	static const in_addr_t dsts[] = { POD_B_IP, DEF_DST_IP, REMOTE_POD_IP, NODE_IP,
					  IP(8, 8, 8, 8) };
	struct result r;
	struct pkt p;
	int n = 0;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		for (size_t j = 0; j < sizeof(dsts) / sizeof(dsts[0]); j++) {
			pkt_ipv4(&p, gw_a_mac, pod_a_mac, srcs[i], dsts[j], 64);
			CHECK_EQ(run_pod(f, &p, &r), 0);
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
			n++;
		}
	}
	/* pod B's own packet, MAC and all, but not from B's veth */
	pkt_ipv4(&p, gw_b_mac, pod_b_mac, POD_B_IP, POD_A_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	n++;
	CHECK_EQ(drops_of(f, WEFT_DROP_SPOOFED_IP), n);
	CHECK_EQ(drops_total(f), n);

	/* the same packets from the pod's own address pass */
	pkt_from_a(&p, POD_B_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(drops_total(f), n);
}

DP_TEST(pod_spoofed_source_mac_is_dropped)
{
	uint8_t red_mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	tenant_mac(RED_SRC_IP, red_mac);
	/* A's IP with B's MAC, with another sender's (same veth) MAC, with
	 * one bit off; to a pod, a remote pod and outside */
	pkt_ipv4(&p, gw_a_mac, pod_b_mac, POD_A_IP, POD_B_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
	pkt_ipv4(&p, gw_a_mac, red_mac, POD_A_IP, REMOTE_POD_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
	pkt_from_a(&p, IP(8, 8, 8, 8), 64);
	p.b[6] ^= 0x02;		/* the locally administered bit */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
	CHECK_EQ(drops_of(f, WEFT_DROP_SPOOFED_MAC), 3);
	CHECK_EQ(drops_total(f), 3);
}

DP_TEST(pod_arp_claiming_another_address_is_dropped)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	/* another pod's IP (behind another veth), the gateway's, a node's */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_B_IP, GATEWAY_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	pkt_arp(&p, ARPOP_REQUEST, pod_b_mac, POD_B_IP, POD_A_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, GATEWAY_IP, POD_B_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, NODE_IP, POD_B_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	CHECK_EQ(drops_of(f, WEFT_DROP_SPOOFED_IP), 4);
	/* its own IP, but another MAC as ARP sender or as Ethernet source */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
	memcpy(p.b + 14 + 8, pod_b_mac, 6);	/* sha */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
	memcpy(p.b + 6, pod_b_mac, 6);		/* Ethernet source */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
	CHECK_EQ(drops_of(f, WEFT_DROP_SPOOFED_MAC), 2);
	/* gratuitous ARP for another pod's address: ARP, as before */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_B_IP, POD_B_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ARP);
	CHECK_EQ(drops_total(f), 7);
	/* and the honest request is still answered */
	pkt_arp(&p, ARPOP_REQUEST, pod_a_mac, POD_A_IP, GATEWAY_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_ARP_REPLY);
}

/* Same node: every sender VNID against every destination VNID. */
DP_TEST(pod_tenants_on_the_same_node)
{
	static const struct {
		in_addr_t src, dst;
		uint32_t ifindex;	/* 0: ISOLATED */
	} cases[] = {
		{ RED_SRC_IP, BLUE_DST_IP, 0 },	 { RED_SRC_IP, RED_DST_IP, 51 },
		{ RED_SRC_IP, DEF_DST_IP, 53 },	 { DEF_SRC_IP, BLUE_DST_IP, 52 },
		{ DEF_SRC_IP, RED_DST_IP, 51 },	 { DEF_SRC_IP, DEF_DST_IP, 53 },
		{ BLUE_SRC_IP, RED_DST_IP, 0 },	 { BLUE_SRC_IP, BLUE_DST_IP, 52 },
		{ BLUE_SRC_IP, DEF_DST_IP, 53 }, { BLUE_SRC_IP, POD_B_IP, 0 },
		{ RED_SRC_IP, POD_B_IP, 0 },	 { DEF_SRC_IP, POD_B_IP, 42 },
		{ POD_A_IP, RED_DST_IP, 0 },	 { POD_A_IP, DEF_DST_IP, 53 },
		{ RED_SRC_IP, RED_SRC_IP, 1 },	/* to itself: its own VNID */
	};
	struct result r;
	struct pkt p;
	int isolated = 0;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pkt_from_tenant(&p, cases[i].src, cases[i].dst);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		if (cases[i].ifindex) {
			CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
			CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
			CHECK_EQ(r.trace.ifindex, cases[i].src == cases[i].dst ? run_ifindex()
									     : cases[i].ifindex);
		} else {
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
			CHECK(memcmp(r.out.b, p.b, p.len) == 0);	/* untouched */
			isolated++;
		}
	}
	CHECK_EQ(drops_of(f, WEFT_DROP_ISOLATED), isolated);
	CHECK_EQ(drops_total(f), isolated);
}

/* Across nodes the receiver checks: the sender's VNID rides as the VNI,
 * whatever the destination (pod_ingress does not know a remote pod's). */
DP_TEST(pod_tunnel_id_is_the_sender_vnid)
{
	static const struct {
		in_addr_t src;
		uint32_t vnid;
	} senders[] = {
		{ RED_SRC_IP, VNID_RED }, { BLUE_SRC_IP, VNID_BLUE }, { DEF_SRC_IP, 0 },
		{ POD_A_IP, VNID_A },
	};
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(senders) / sizeof(senders[0]); i++) {
		pkt_from_tenant(&p, senders[i].src, REMOTE_POD_IP);
		if (senders[i].src == POD_A_IP)
			pkt_from_a(&p, REMOTE_POD_IP, 64);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
		CHECK_EQ(r.trace.tunnel_id, senders[i].vnid);
		CHECK_EQ(r.trace.tunnel_remote, ntohl(REMOTE_NODE_IP));
		/* and to the node or outside: the stack, whatever the tenant */
		pkt_from_tenant(&p, senders[i].src, NODE_IP);
		if (senders[i].src == POD_A_IP)
			pkt_from_a(&p, NODE_IP, 64);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
	}
	CHECK_EQ(drops_total(f), 0);
}

/* UDP to the VXLAN port of any node (ours through its IP or the gateway,
 * another through its IP), or anywhere the stack would route it. */
DP_TEST(pod_udp_to_the_vxlan_port_is_dropped)
{
	static const in_addr_t dsts[] = { NODE_IP, GATEWAY_IP, REMOTE_NODE_IP,
					  IP(10, 128, 1, 200), IP(8, 8, 8, 8),
					  IP(255, 255, 255, 255) };
	struct weft_config cfg = ready_config();
	struct result r;
	struct pkt p;
	int n = 0;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		pkt_from_a(&p, dsts[i], 64);
		pkt_set_dport(&p, VXLAN_PORT);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
		n++;
		/* another port of the same address is the node's business */
		pkt_set_dport(&p, VXLAN_PORT + 1);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		CHECK(memcmp(r.out.b, p.b, p.len) == 0);
	}
	/* the port behind IP options */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, NODE_IP, 64, IPPROTO_UDP, 7, 0);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	n++;
	/* a first fragment carries the ports */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, NODE_IP, 64, IPPROTO_UDP, 5, IP_MF);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	n++;
	CHECK_EQ(drops_of(f, WEFT_DROP_TUNNEL_INJECT), n);
	/* a later fragment does not: its bytes are not read as ports (it
	 * follows its first fragment, which was refused: an orphan) */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, NODE_IP, 64, IPPROTO_UDP, 5, 3);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
	n++;
	/* TCP (or anything not UDP) to that port */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, NODE_IP, 64, IPPROTO_TCP, 5, 0);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	/* pod to pod on that port is no injection: no VXLAN socket there */
	pkt_from_a(&p, POD_B_IP, 64);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(drops_total(f), n);
	n--;	/* the orphan */
	/* a UDP header that does not fit */
	pkt_from_a(&p, NODE_IP, 64);
	ip_of(&p)->tot_len = htons(20 + 4);
	ip_of(&p)->check = 0;
	ip_of(&p)->check = htons(ip_checksum(ip_of(&p), 20));
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_MALFORMED);

	/* another cluster port; 0 means the default */
	cfg.vxlan_port = 8472;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	pkt_from_a(&p, NODE_IP, 64);
	pkt_set_dport(&p, 8472);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	cfg.vxlan_port = 0;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	CHECK_EQ(drops_of(f, WEFT_DROP_TUNNEL_INJECT), n + 2);
}

/* The trace knob off: same verdicts, and the trace code is gone. */
TEST(trace_off_writes_no_trace)
{
	struct fixture fx, *f = &fx;
	struct result r;
	struct pkt p;

	if (fixture_up(f, false) == 0) {
		pkt_from_a(&p, POD_B_IP, 64);
		if (seed_node(f->dp) < 0 || run_pod(f, &p, &r) < 0)
			test_fail(__FILE__, __LINE__, "seed or run failed");
		else if (r.verdict != TC_ACT_REDIRECT || r.trace.count != 0)
			test_fail(__FILE__, __LINE__, "verdict %u, trace count %u", r.verdict,
				  r.trace.count);
	}
	fixture_down(f);
}

/* A trace (bpf/weft_bpf.h, WEFT_TRACE_MARK in the run's skb) of the
 * programs as the agent loads them, trace knob off: the verdict is
 * recorded and nothing of the programs' state is written (no conntrack
 * entry, no drop counted); the same packet without the mark records
 * nothing and makes its connection; a trace after it follows that
 * connection (reads are the live state's). */
DP_TEST(traced_run_records_its_verdict_and_writes_nothing)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = false };
	struct datapath *off = NULL;
	char err[256] = "";
	struct result r;
	struct pkt p;
	uint64_t drops;
	in_addr_t backend;
	enum datapath_prog prog;
	int fd;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 3), 0);
	CHECK_EQ(datapath_open(&opts, &off, NULL, err, sizeof(err)), 0);
	if (!off)
		return;
	fd = datapath_pod_prog_fd(off);
	prog = DATAPATH_PROG_POD;

	/* a new connection to the service, traced: a backend chosen, no entry */
	tcp_from_a(&p, 41000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_traced(off, prog, &p, 0, 0, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.tracing, 1);
	CHECK_EQ(r.trace.count, 1);
	CHECK(r.trace.action == WEFT_ACT_LOCAL || r.trace.action == WEFT_ACT_TUNNEL);
	CHECK(backend_of(&r.out) >= 0);
	CHECK_EQ(ct_count(f), 0);
	CHECK(r.trace.steps & WEFT_TRACE_S_SERVICE);
	CHECK(r.trace.steps & WEFT_TRACE_S_SVC_NEW);
	CHECK_EQ(r.trace.svc_addr, SVC_IP);
	CHECK_EQ(ntohs(r.trace.svc_port), SVC_PORT);
	CHECK_EQ(r.trace.backend_addr, ip_of(&r.out)->daddr);
	CHECK_EQ(ntohs(r.trace.backend_port), BE_PORT);

	/* a spoofed source, traced: the drop said, not counted */
	drops = drops_total(f);
	pkt_ipv4(&p, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), SVC_IP, 64);
	CHECK_EQ(run_traced(off, prog, &p, 0, 0, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
	CHECK_EQ(drops_total(f), drops);

	/* the same SYN as traffic: nothing recorded, the connection made */
	tcp_from_a(&p, 41000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run(f, fd, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.count, 0);
	CHECK_EQ(ct_count(f), 2);
	backend = ip_of(&r.out)->daddr;

	/* and traced again: it follows the connection's backend, which
	 * stays as it was (no touch: still SYN, not established) */
	tcp_from_a(&p, 41000, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_traced(off, prog, &p, 0, 0, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ip_of(&r.out)->daddr, backend);
	CHECK_EQ(r.trace.steps & (WEFT_TRACE_S_SERVICE | WEFT_TRACE_S_SVC_NEW), WEFT_TRACE_S_SERVICE);
	CHECK_EQ(r.trace.backend_addr, backend);
	{
		struct weft_ct_entry fwd;

		CHECK_EQ(ct_fwd(f, POD_A_IP, 41000, SVC_IP, SVC_PORT, &fwd), 0);
		CHECK_EQ(fwd.flags, WEFT_CT_F_SYN);
	}
	CHECK_EQ(ct_count(f), 2);
	datapath_close(off);
}

/* vxlan_ingress traced, with no VXLAN device: the tunnel key comes from
 * the run's cb (a test run has no tunnel metadata).  From a node not
 * known: a drop, said and not counted; from a known one: pod B here, the
 * VNI recorded; another tenant's VNI: ISOLATED, not counted. */
DP_TEST(traced_vxlan_ingress_takes_its_tunnel_key_from_cb)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = false };
	struct weft_config cfg = ready_config();
	struct datapath *off = NULL;
	char err[256] = "";
	struct result r;
	struct pkt p;
	enum datapath_prog prog;

	CHECK_EQ(seed_node(f->dp), 0);
	cfg.vxlan_ifindex = 9;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(datapath_open(&opts, &off, NULL, err, sizeof(err)), 0);
	if (!off)
		return;
	prog = DATAPATH_PROG_VXLAN;
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, POD_B_IP, 63);
	CHECK_EQ(run_traced(off, prog, &p, VNID_A, INADDR_LOOPBACK, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);
	CHECK_EQ(datapath_nodeip_put(f->dp, htonl(INADDR_LOOPBACK), 9), 0);
	CHECK_EQ(run_traced(off, prog, &p, VNID_A, INADDR_LOOPBACK, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 42);
	CHECK_EQ(r.trace.tunnel_id, VNID_A);
	CHECK_EQ(r.trace.steps & (WEFT_TRACE_S_TENANT | WEFT_TRACE_S_ISOLATED), WEFT_TRACE_S_TENANT);
	CHECK_EQ(r.trace.src_vnid, VNID_A);
	CHECK_EQ(run_traced(off, prog, &p, VNID_BLUE, INADDR_LOOPBACK, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
	CHECK(r.trace.steps & WEFT_TRACE_S_ISOLATED);
	CHECK_EQ(r.trace.src_vnid, VNID_BLUE);
	CHECK_EQ(r.trace.dst_vnid, VNID_A);
	CHECK_EQ(drops_total(f), 0);
	datapath_close(off);
}

/* Random destinations, sources and TTLs against a naive model of the
 * forwarding rules: linear longest-prefix match over a list of subnets
 * (nested ones included), a linear list of endpoints. */
#define RND_EPS		24
#define RND_NODES	8

static struct {
	in_addr_t ip;
	uint32_t ifindex, vnid;
} rnd_eps[RND_EPS];

static struct {
	in_addr_t subnet;
	int len;
	in_addr_t node_ip;
} rnd_nodes[RND_NODES] = {
	{ IP(10, 128, 0, 0), 23, NODE_IP },
	{ IP(10, 128, 2, 0), 23, IP(192, 168, 1, 12) },
	{ IP(10, 128, 4, 0), 23, IP(192, 168, 1, 13) },
	{ IP(10, 130, 0, 0), 16, IP(192, 168, 1, 14) },
	{ IP(10, 130, 5, 0), 24, IP(192, 168, 1, 15) },
	{ IP(10, 130, 5, 128), 25, NODE_IP },		/* nested, ours */
	{ IP(10, 140, 0, 0), 15, IP(192, 168, 1, 16) },
	{ IP(10, 140, 7, 7), 32, IP(192, 168, 1, 17) },
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int model_node(in_addr_t dst)
{
	int best = -1;

	for (int i = 0; i < RND_NODES; i++) {
		uint32_t mask = rnd_nodes[i].len ? 0xffffffffu << (32 - rnd_nodes[i].len) : 0;

		if ((ntohl(dst) & mask) == ntohl(rnd_nodes[i].subnet) &&
		    (best < 0 || rnd_nodes[i].len > rnd_nodes[best].len))
			best = i;
	}
	return best;
}

static int model_ep(in_addr_t ip)
{
	for (int i = 0; i < RND_EPS; i++)
		if (rnd_eps[i].ip == ip)
			return i;
	return -1;
}

DP_TEST(pod_forwarding_random_against_reference)
{
	struct weft_config cfg = ready_config();
	uint64_t s = test_seed() * 2654435761u | 1;
	struct result r;
	struct pkt p;

	CHECK(run_ifindex() > 0);
	for (int i = 0; i < RND_NODES; i++) {
		struct weft_node_entry e = { .node_ip = rnd_nodes[i].node_ip, .node_id = (uint32_t)i };

		CHECK_EQ(datapath_node_put(f->dp, rnd_nodes[i].subnet, rnd_nodes[i].len, &e), 0);
	}
	for (int i = 0; i < RND_EPS; i++) {
		struct weft_endpoint ep;

		rnd_eps[i].ip = i < RND_EPS / 2 ? htonl(0x0a800000u + 2 + (uint32_t)i * 7)
						: htonl(0x0a820580u + (uint32_t)i);
		/* every other one can send: it sits where test runs happen */
		rnd_eps[i].ifindex = i % 2 ? 100 + (uint32_t)i : run_ifindex();
		rnd_eps[i].vnid = (uint32_t)i % 3 ? 9 + (uint32_t)i % 3 : 0;
		ep = endpoint(rnd_eps[i].ifindex, rnd_eps[i].vnid, pod_b_mac, gw_b_mac);
		ep.pod_mac[5] = (uint8_t)i;
		CHECK_EQ(datapath_endpoint_put(f->dp, rnd_eps[i].ip, &ep), 0);
	}
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);

	for (int n = 0; n < 400; n++) {
		uint64_t x = xorshift(&s);
		in_addr_t dst, src;
		uint8_t ttl = (uint8_t[]){ 0, 1, 2, 64, 255 }[x % 5];
		int e, node, se;
		bool wrong_mac;

		switch ((x >> 8) % 4) {
		case 0:		/* a pod here */
			dst = rnd_eps[(x >> 16) % RND_EPS].ip;
			break;
		case 1: {	/* somewhere in a node subnet */
			int i = (int)((x >> 16) % RND_NODES);
			uint32_t host = rnd_nodes[i].len == 32 ? 0 :
					(uint32_t)(x >> 24) & (0xffffffffu >> rnd_nodes[i].len);

			dst = htonl(ntohl(rnd_nodes[i].subnet) | host);
			break;
		}
		case 2:		/* anywhere near */
			dst = htonl(0x0a800000u | (uint32_t)(x >> 16) % 0x200000u);
			break;
		default:	/* anywhere */
			dst = (in_addr_t)(x >> 32);
			break;
		}
		src = (x >> 40) % 4 ? rnd_eps[(x >> 44) % RND_EPS].ip : IP(10, 128, 1, 250);
		se = model_ep(src);
		wrong_mac = (x >> 50) % 8 == 0;
		pkt_ipv4(&p, gw_b_mac, pod_b_mac, src, dst, ttl);
		p.b[6 + 5] = (uint8_t)(se >= 0 ? se : 0);	/* the sender's MAC */
		if (wrong_mac)
			p.b[6 + 4] ^= 1;
		if ((x >> 53) % 4 == 0)
			pkt_set_dport(&p, VXLAN_PORT);
		CHECK_EQ(run_pod(f, &p, &r), 0);

		e = model_ep(dst);
		node = model_node(dst);
		if (se < 0 || rnd_eps[se].ifindex != run_ifindex()) {
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_IP);
		} else if (wrong_mac) {
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SPOOFED_MAC);
		} else if (e >= 0 && rnd_eps[se].vnid != rnd_eps[e].vnid && rnd_eps[se].vnid &&
			   rnd_eps[e].vnid) {
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
		} else if (e >= 0 || (node >= 0 && rnd_nodes[node].node_ip != NODE_IP)) {
			if (ttl <= 1) {
				CHECK_EQ(r.verdict, TC_ACT_SHOT);
				CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TTL);
				continue;
			}
			CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
			CHECK_EQ(ip_of(&r.out)->ttl, ttl - 1);
			CHECK_EQ(ip_checksum(ip_of(&r.out), sizeof(struct iphdr)), 0);
			if (e >= 0) {
				CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
				CHECK_EQ(r.trace.ifindex, rnd_eps[e].ifindex);
				CHECK_EQ(r.out.b[5], e);
			} else {
				CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
				CHECK_EQ(r.trace.ifindex, VXLAN_IFINDEX);
				CHECK_EQ(r.trace.tunnel_remote, ntohl(rnd_nodes[node].node_ip));
				CHECK_EQ(r.trace.tunnel_id, rnd_eps[se].vnid);
			}
		} else if (node < 0 && (ntohl(dst) & 0xfffc0000u) == 0x0a800000u) {
			/* the cluster network (ready_config's) in no node subnet */
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SUBNET);
		} else if ((p.b[14 + 20 + 2] << 8 | p.b[14 + 20 + 3]) == VXLAN_PORT) {
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
		} else {
			CHECK_EQ(r.verdict, TC_ACT_OK);
			CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
			CHECK(memcmp(r.out.b, p.b, p.len) == 0);
		}
	}
}

/* ---- vxlan_ingress under BPF_PROG_TEST_RUN ---- */

DP_TEST(vxlan_test_run_has_no_tunnel_key)
{
	struct weft_config cfg = ready_config();
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	pkt_ipv4(&p, gw_b_mac, pod_a_mac, REMOTE_POD_IP, POD_B_IP, 64);
	CHECK_EQ(run(f, datapath_vxlan_prog_fd(f->dp), &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_KEY);
	CHECK_EQ(drops_of(f, WEFT_DROP_TUNNEL_KEY), 1);

	cfg.version = 0;	/* incomplete: to the stack, before any key */
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(run(f, datapath_vxlan_prog_fd(f->dp), &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(drops_total(f), 1);
}

/* ---- tc attach and vxlan_ingress on a real VXLAN device ---- */

static void tc_attach_body(struct fixture *f)
{
	CHECK_EQ(datapath_attached(f->dp, 1), 0);		/* no clsact yet */
	CHECK_EQ(datapath_attach_pod(f->dp, 1), 0);
	CHECK_EQ(datapath_attached(f->dp, 1), 1);
	CHECK_EQ(datapath_attach_pod(f->dp, 1), 0);		/* replaced in place */
	CHECK_EQ(datapath_attached(f->dp, 1), 1);
	CHECK_EQ(sh("tc filter show dev lo ingress | grep -c 'pod_ingress' | grep -qx 1"), 0);
	CHECK(datapath_attach_pod(f->dp, 9999) < 0);		/* no such device */
	CHECK(datapath_attached(f->dp, 9999) <= 0);

	/* a restarted agent attaches its new program over the old one */
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = true };
	struct datapath *again = NULL;
	char err[256] = "";
	bool rebuilt = true;

	CHECK_EQ(datapath_open(&opts, &again, &rebuilt, err, sizeof(err)), 0);
	CHECK(!rebuilt);
	int rc = datapath_attach_pod(again, 1);

	datapath_close(again);
	CHECK_EQ(rc, 0);
	CHECK_EQ(datapath_attached(f->dp, 1), 1);
	CHECK_EQ(sh("tc filter show dev lo ingress | grep -c 'pod_ingress' | grep -qx 1"), 0);
}

DP_TEST(tc_attach_query_replace)
{
	int saved;

	CHECK_EQ(netns_enter(&saved), 0);
	tc_attach_body(f);
	netns_leave(saved);
}

static void vxlan_device_body(struct fixture *f)
{
	struct weft_config cfg = ready_config();
	struct result r;
	struct pkt p;
	int ifindex;

	ifindex = vxlan_dev_up();
	CHECK(ifindex > 0);
	CHECK_EQ(seed_node(f->dp), 0);
	cfg.vxlan_ifindex = (uint32_t)ifindex;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(datapath_attach_vxlan(f->dp, ifindex), 0);
	CHECK_EQ(datapath_attached(f->dp, ifindex), 1);

	/* the sender, 127.0.0.1, is no node yet: nothing it sends is
	 * trusted, whatever the VNI */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, POD_B_IP, 63);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);
	CHECK_EQ(vxlan_send(f, 0, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, GATEWAY_IP, 63);
	CHECK_EQ(vxlan_send(f, 0, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	CHECK_EQ(drops_of(f, WEFT_DROP_UNKNOWN_NODE), 3);
	CHECK_EQ(datapath_nodeip_put(f->dp, htonl(INADDR_LOOPBACK), 9), 0);

	/* a remote pod to pod B here, same VNID */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, POD_B_IP, 63);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 42);
	CHECK_EQ(r.trace.tunnel_id, VNID_A);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);

	/* tenants: VNI = the remote sender's VNID, against the pod's */
	static const struct {
		uint32_t vni;
		in_addr_t dst;
		uint32_t ifindex;	/* 0: ISOLATED */
	} tenants[] = {
		{ VNID_BLUE, RED_DST_IP, 0 },	{ VNID_RED, RED_DST_IP, 51 },
		{ 0, RED_DST_IP, 51 },		{ VNID_BLUE, DEF_DST_IP, 53 },
		{ VNID_RED, BLUE_DST_IP, 0 },	{ VNID_A, BLUE_DST_IP, 0 },
		{ VNID_BLUE, POD_B_IP, 0 },	{ 0, POD_B_IP, 42 },
	};
	for (size_t i = 0; i < sizeof(tenants) / sizeof(tenants[0]); i++) {
		pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, tenants[i].dst, 63);
		CHECK_EQ(vxlan_send(f, tenants[i].vni, &p, &r), 0);
		CHECK_EQ(r.trace.tunnel_id, tenants[i].vni);
		if (tenants[i].ifindex) {
			CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
			CHECK_EQ(r.trace.ifindex, tenants[i].ifindex);
		} else {
			CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
		}
	}
	CHECK_EQ(drops_of(f, WEFT_DROP_ISOLATED), 4);

	/* a remote pod answering this node */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, GATEWAY_IP, 63);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	CHECK_EQ(r.trace.tunnel_id, 5);

	/* a remote pod injecting VXLAN into this node's socket via the
	 * gateway; another UDP port is fine */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, GATEWAY_IP, 63);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	pkt_set_dport(&p, VXLAN_PORT + 1);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);

	/* nobody here */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, IP(10, 128, 0, 99), 63);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_ENDPOINT);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_ENDPOINT), 1);

	/* TTL, ARP and IPv6 over the tunnel */
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, POD_B_IP, 1);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TTL);
	pkt_arp(&p, ARPOP_REQUEST, remote_pod_mac, REMOTE_POD_IP, POD_B_IP);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ARP);
	pkt_ipv6(&p);
	memcpy(p.b + 6, remote_pod_mac, 6);
	CHECK_EQ(vxlan_send(f, 5, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNSUPPORTED_L3);

	/* a node removed is no longer trusted */
	CHECK_EQ(datapath_nodeip_del(f->dp, htonl(INADDR_LOOPBACK)), 0);
	pkt_ipv4(&p, remote_gw_mac, remote_pod_mac, REMOTE_POD_IP, POD_B_IP, 63);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	CHECK_EQ(drops_of(f, WEFT_DROP_UNKNOWN_NODE), 4);
	CHECK_EQ(drops_of(f, WEFT_DROP_TUNNEL_INJECT), 1);
	CHECK_EQ(drops_total(f), 4 + 4 + 1 + 4);
}

DP_TEST(vxlan_device_delivers_by_tunnel_key)
{
	int saved;

	CHECK_EQ(netns_enter(&saved), 0);
	vxlan_device_body(f);
	netns_leave(saved);
}

/* ---- services: translation, conntrack, refusals (bpf/lib/lb.h; the
 * seeded service and its helpers: datapath_fixture.h) ---- */

DP_TEST(svc_tcp_syn_goes_to_a_backend_with_conntrack)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	bool seen_local = false, seen_remote = false;
	struct weft_ct_entry fwd, rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 3), 0);

	for (uint16_t sport = 40000; sport < 40064 && !(seen_local && seen_remote); sport++) {
		int b;

		tcp_from_a(&p, sport, SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		b = backend_of(&r.out);
		CHECK(b >= 0);
		CHECK_TUPLE(&r.out, POD_A_IP, sport, ip_of(&r.out)->daddr, BE_PORT);
		CHECK_FORWARDED(&p, &r.out);
		CHECK_EQ(r.trace.count, 1);
		if (b == 0) {
			seen_local = true;
			CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
			CHECK_EQ(r.trace.ifindex, run_ifindex());
		} else {
			seen_remote = true;
			CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
			CHECK_EQ(r.trace.ifindex, VXLAN_IFINDEX);
			CHECK_EQ(r.trace.tunnel_id, VNID_A);
			CHECK_EQ(r.trace.tunnel_remote, ntohl(REMOTE_NODE_IP));
		}

		/* FWD {client, frontend} and REV {backend, client} */
		CHECK_EQ(ct_fwd(f, POD_A_IP, sport, SVC_IP, SVC_PORT, &fwd), 0);
		CHECK_CT(fwd, ip_of(&r.out)->daddr, BE_PORT, POD_A_IP, sport, ids[b],
			 WEFT_CT_F_SYN);
		CHECK_EQ(ct_get(f, ip_of(&r.out)->daddr, BE_PORT, POD_A_IP, sport, IPPROTO_TCP,
				WEFT_CT_REV, &rev), 0);
		CHECK_CT(rev, SVC_IP, SVC_PORT, POD_A_IP, sport, ids[b], WEFT_CT_F_SYN);
		CHECK_EQ(ct_count(f), 2 * (sport - 40000 + 1));

		/* the rest of the connection follows its entry */
		for (int i = 0; i < 5; i++) {
			in_addr_t first = ip_of(&r.out)->daddr;

			tcp_from_a(&p, sport, SVC_IP, SVC_PORT, i == 0 ? TCP_SYN : TCP_ACK);
			CHECK_EQ(run_pod(f, &p, &r), 0);
			CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
			CHECK_TUPLE(&r.out, POD_A_IP, sport, first, BE_PORT);
			CHECK_FORWARDED(&p, &r.out);
		}
		CHECK_EQ(ct_fwd(f, POD_A_IP, sport, SVC_IP, SVC_PORT, &fwd), 0);
		CHECK_EQ(fwd.flags, WEFT_CT_F_ESTABLISHED);
		CHECK_EQ(ct_count(f), 2 * (sport - 40000 + 1));
	}
	CHECK(seen_local && seen_remote);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_reply_from_a_local_backend_comes_from_the_frontend)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_ct_entry rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);

	tcp_from_a(&p, 40100, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 40100, LOCAL_BE_IP, BE_PORT);

	/* the backend answers the client it saw */
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, 40100, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, run_ifindex());
	CHECK_TUPLE(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 40100);
	CHECK_FORWARDED(&p, &r.out);
	CHECK(memcmp(r.out.b, pod_a_mac, 6) == 0);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, 40100, &rev), 0);
	CHECK_CT(rev, SVC_IP, SVC_PORT, POD_A_IP, 40100, BE_LOCAL, WEFT_CT_F_ESTABLISHED);

	/* a packet of the backend's that answers nothing translated stays as it is */
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, 40101, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, LOCAL_BE_IP, BE_PORT, POD_A_IP, 40101);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(drops_total(f), 0);
}

/* Linux picks source ports per destination: after a connection through
 * the service, the client may open one straight to the backend from the
 * same port.  Its SYN retires the old entries, so the backend's answers
 * are not taken for the old connection's. */
DP_TEST(svc_direct_connection_reusing_a_port_retires_the_old_entries)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_ct_entry e;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);
	tcp_from_a(&p, 40200, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_TUPLE(&r.out, POD_A_IP, 40200, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 2);

	/* not a new connection: the entries stay */
	tcp_from_a(&p, 40200, LOCAL_BE_IP, BE_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(ct_count(f), 2);

	/* a SYN straight to the backend from that port */
	tcp_from_a(&p, 40200, LOCAL_BE_IP, BE_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 40200, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 0);
	CHECK(ct_rev(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, 40200, &e) != 0);

	/* the backend's answer reaches the client from the backend */
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, 40200, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, LOCAL_BE_IP, BE_PORT, POD_A_IP, 40200);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_udp_is_translated_both_ways_and_checksum_0_stays_0)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_ct_entry fwd, rev;
	uint8_t be_mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_udp, IPPROTO_UDP, ids, 1), 0);
	tenant_mac(LOCAL_BE_IP, be_mac);

	for (int zero = 0; zero < 2; zero++) {
		uint16_t sport = (uint16_t)(40200 + zero);

		pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, sport, SVC_IP, 53, 12);
		if (zero)
			put16(l4_check_field(&p), 0);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
		CHECK_TUPLE(&r.out, POD_A_IP, sport, LOCAL_BE_IP, BE_PORT);
		if (zero) {
			CHECK_EQ(get16(l4_check_field(&r.out)), 0);
			l4_checksum_fill(&p);	/* for CHECK_FORWARDED */
			l4_checksum_fill(&r.out);
		}
		CHECK_FORWARDED(&p, &r.out);
		CHECK_EQ(ct_get(f, POD_A_IP, sport, SVC_IP, 53, IPPROTO_UDP, WEFT_CT_FWD, &fwd), 0);
		CHECK_CT(fwd, LOCAL_BE_IP, BE_PORT, POD_A_IP, sport, BE_LOCAL, 0);
		CHECK_EQ(ct_get(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, sport, IPPROTO_UDP, WEFT_CT_REV,
				&rev), 0);
		CHECK_CT(rev, SVC_IP, 53, POD_A_IP, sport, BE_LOCAL, 0);

		/* the answer */
		pkt_l4(&p, gw_a_mac, be_mac, IPPROTO_UDP, LOCAL_BE_IP, BE_PORT, POD_A_IP, sport,
		       30);
		if (zero)
			put16(l4_check_field(&p), 0);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_TUPLE(&r.out, SVC_IP, 53, POD_A_IP, sport);
		if (zero) {
			CHECK_EQ(get16(l4_check_field(&r.out)), 0);
			l4_checksum_fill(&p);
			l4_checksum_fill(&r.out);
		}
		CHECK_FORWARDED(&p, &r.out);
	}
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(drops_total(f), 0);
}

/* Slots beyond the count (left by a removal in progress, or garbage) point
 * at a trap backend: never chosen. */
DP_TEST(svc_new_connections_spread_over_all_slots_and_no_further)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	const in_addr_t trap = IP(10, 128, 2, 99);
	int seen[3] = { 0, 0, 0 };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(backend_put(f->dp, 99, trap, BE_PORT, IPPROTO_TCP, true, SVC_ID), 0);
	CHECK_EQ(slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_ALL, 4, 99), 0);
	CHECK_EQ(slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_ALL, 5, 99), 0);
	CHECK_EQ(slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_ALL, 0xffff, 99), 0);
	CHECK_EQ(slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_LOCAL, 2, 99), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 3), 0);

	for (int i = 0; i < 300; i++) {
		int b;

		tcp_from_a(&p, (uint16_t)(20000 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK(ip_of(&r.out)->daddr != trap);
		b = backend_of(&r.out);
		CHECK(b >= 0);
		seen[b]++;
	}
	/* 100 each expected; below 50 is a 1e-8 event for a fair choice */
	for (int b = 0; b < 3; b++)
		if (seen[b] < 50)
			test_fail(__FILE__, __LINE__, "backend %d chosen %d times of 300", b,
				  seen[b]);

	/* internalTrafficPolicy Local: the LOCAL slots (one), never the trap in slot 2 */
	struct svc itp = cluster_tcp;

	itp.flags |= WEFT_SVC_F_ITP_LOCAL;
	CHECK_EQ(svc_put(f->dp, &itp, ids, 3), 0);
	for (int i = 0; i < 50; i++) {
		tcp_from_a(&p, (uint16_t)(21000 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_TUPLE(&r.out, POD_A_IP, 21000 + i, LOCAL_BE_IP, BE_PORT);
	}
	CHECK_EQ(drops_total(f), 0);
}

/* internalTrafficPolicy narrows cluster IPs only: a pod reaching the same
 * service's NodePort uses every backend. */
DP_TEST(svc_internal_policy_local_does_not_narrow_a_nodeport)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct svc np = nodeport_tcp;
	bool remote = false;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	np.flags |= WEFT_SVC_F_ITP_LOCAL;
	CHECK_EQ(svc_put(f->dp, &np, ids, 3), 0);
	for (int i = 0; i < 64 && !remote; i++) {
		tcp_from_a(&p, (uint16_t)(22000 + i), NODE_IP, NODE_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK(backend_of(&r.out) >= 0);
		remote = backend_of(&r.out) > 0;
	}
	CHECK(remote);
}

DP_TEST(svc_stale_backend_is_replaced_with_its_entries)
{
	static const uint32_t both[] = { BE_REMOTE, BE_REMOTE2 };
	const in_addr_t moved = IP(10, 128, 2, 77);
	struct weft_ct_entry fwd, rev;
	uint32_t first, other;
	in_addr_t first_ip, other_ip;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, both, 2), 0);

	tcp_from_a(&p, 40300, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	first_ip = ip_of(&r.out)->daddr;
	CHECK(first_ip == REMOTE_BE_IP || first_ip == REMOTE_BE2_IP);
	first = first_ip == REMOTE_BE_IP ? BE_REMOTE : BE_REMOTE2;
	other = first == BE_REMOTE ? BE_REMOTE2 : BE_REMOTE;
	other_ip = first == BE_REMOTE ? REMOTE_BE2_IP : REMOTE_BE_IP;

	/* the agent removes the chosen backend (slots first, then the
	 * backend) but has not purged conntrack yet */
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, &other, 1), 0);
	{
		struct weft_svc_key k = svc_key(&cluster_tcp, WEFT_SCOPE_ALL, 2);

		CHECK_EQ(datapath_service_del(f->dp, &k), 0);
	}
	CHECK_EQ(datapath_backend_del(f->dp, first), 0);
	CHECK_EQ(ct_count(f), 2);

	/* the connection's next segment: its pair goes, the client is told
	 * (RST), and only its next SYN opens a connection again */
	tcp_from_a(&p, 40300, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(ct_count(f), 0);
	tcp_from_a(&p, 40300, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 40300, other_ip, BE_PORT);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 40300, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, other_ip, BE_PORT, POD_A_IP, 40300, other, WEFT_CT_F_SYN);
	CHECK_EQ(ct_rev(f, other_ip, BE_PORT, POD_A_IP, 40300, &rev), 0);
	CHECK_EQ(ct_rev(f, first_ip, BE_PORT, POD_A_IP, 40300, &rev), -ENOENT);
	CHECK_EQ(ct_count(f), 2);

	/* the remaining backend's ID now names another address (and port) */
	CHECK_EQ(backend_put(f->dp, other, moved, BE_PORT + 1, IPPROTO_TCP, false, SVC_ID), 0);
	tcp_from_a(&p, 40300, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 40300, moved, BE_PORT + 1);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 40300, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, moved, BE_PORT + 1, POD_A_IP, 40300, other, WEFT_CT_F_SYN);
	CHECK_EQ(ct_rev(f, moved, BE_PORT + 1, POD_A_IP, 40300, &rev), 0);
	CHECK_EQ(ct_rev(f, other_ip, BE_PORT, POD_A_IP, 40300, &rev), -ENOENT);
	CHECK_EQ(ct_count(f), 2);

	/* and the last one goes: the stale pair goes, the connection is refused */
	CHECK_EQ(svc_head_put(f->dp, &cluster_tcp, 0, 0), 0);
	CHECK_EQ(datapath_backend_del(f->dp, other), 0);
	tcp_from_a(&p, 40300, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 0);
}

/* A RST as reject_tcp builds it, to (client, cport) from (src, sport). */
#define CHECK_RST(out, src, sport, client, cport, fl, sq, ak)             \
	do {                                                              \
		CHECK_EQ((out)->len, 54);                                 \
		CHECK_EQ(ntohs(ip_of(out)->tot_len), 40);                 \
		CHECK_EQ(ip_of(out)->protocol, IPPROTO_TCP);              \
		CHECK_TUPLE(out, src, sport, client, cport);              \
		CHECK_CSUMS(out);                                         \
		CHECK_EQ(l4_of(out)[12], 5 << 4);                         \
		CHECK_EQ(l4_of(out)[13], (fl));                           \
		CHECK_EQ(get32(l4_of(out) + 4), (sq));                    \
		CHECK_EQ(get32(l4_of(out) + 8), (ak));                    \
	} while (0)

DP_TEST(svc_without_backends_refuses_tcp_with_rst)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(svc_head_put(f->dp, &cluster_tcp, 0, 0), 0);

	/* a SYN: RST|ACK, ack = seq + 1 */
	pkt_tcp(&p, gw_a_mac, pod_a_mac, POD_A_IP, 40400, SVC_IP, SVC_PORT, TCP_SYN,
		0xfffffff0u, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(r.trace.ifindex, run_ifindex());
	CHECK(memcmp(r.out.b, pod_a_mac, 6) == 0);	/* MACs swapped */
	CHECK(memcmp(r.out.b + 6, gw_a_mac, 6) == 0);
	CHECK_RST(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 40400, TCP_RST | TCP_ACK, 0, 0xfffffff1u);

	/* a SYN carrying data: ack covers it too (and wraps) */
	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_TCP, POD_A_IP, 40401, SVC_IP, SVC_PORT, 10);
	put32(l4_of(&p) + 4, 0xfffffffbu);
	l4_of(&p)[13] = TCP_SYN;
	l4_checksum_fill(&p);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_RST(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 40401, TCP_RST | TCP_ACK, 0, 0x6u);

	/* with ACK: RST, seq = its ack */
	pkt_tcp(&p, gw_a_mac, pod_a_mac, POD_A_IP, 40402, SVC_IP, SVC_PORT, TCP_ACK, 1234,
		0xdeadbeef);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_RST(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 40402, TCP_RST, 0xdeadbeef, 0);

	/* a RST is never answered */
	CHECK_EQ(drops_total(f), 0);
	pkt_tcp(&p, gw_a_mac, pod_a_mac, POD_A_IP, 40403, SVC_IP, SVC_PORT, TCP_RST | TCP_ACK,
		1, 2);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_BACKEND);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_BACKEND), 1);
	CHECK_EQ(ct_count(f), 0);
}

DP_TEST(svc_without_backends_refuses_udp_with_port_unreachable)
{
	struct result r;
	struct pkt p;
	uint8_t *icmp;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(svc_head_put(f->dp, &cluster_udp, 0, 0), 0);

	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, 40500, SVC_IP, 53, 150);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(r.trace.ifindex, run_ifindex());
	CHECK_EQ(r.out.len, 14 + 20 + 8 + 28);
	CHECK(memcmp(r.out.b, pod_a_mac, 6) == 0);
	CHECK(memcmp(r.out.b + 6, gw_a_mac, 6) == 0);
	CHECK_EQ(ntohs(*(uint16_t *)(r.out.b + 12)), ETHERTYPE_IP);
	CHECK_EQ(ip_of(&r.out)->protocol, IPPROTO_ICMP);
	CHECK_EQ(ip_of(&r.out)->saddr, SVC_IP);
	CHECK_EQ(ip_of(&r.out)->daddr, POD_A_IP);
	CHECK_EQ(ntohs(ip_of(&r.out)->tot_len), 20 + 8 + 28);
	CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
	icmp = l4_of(&r.out);
	CHECK_EQ(icmp[0], 3);
	CHECK_EQ(icmp[1], 3);
	CHECK_EQ(fold(sum16(0, icmp, 8 + 28)), 0);
	CHECK(memcmp(icmp + 8, p.b + 14, 28) == 0);	/* the client's IP and UDP headers */
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_hairpin_client_sees_the_hairpin_address)
{
	static const uint32_t ids[] = { 7 };
	struct weft_ct_entry fwd, rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backend_put(f->dp, 7, POD_A_IP, BE_PORT, IPPROTO_TCP, true, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	tcp_from_a(&p, 40600, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, run_ifindex());
	CHECK_TUPLE(&r.out, hairpin_ip(), 40600, POD_A_IP, BE_PORT);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 40600, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, POD_A_IP, BE_PORT, hairpin_ip(), 40600, 7, WEFT_CT_F_SYN | WEFT_CT_F_SNAT);
	CHECK_EQ(ct_rev(f, POD_A_IP, BE_PORT, hairpin_ip(), 40600, &rev), 0);
	CHECK_CT(rev, SVC_IP, SVC_PORT, POD_A_IP, 40600, 7, WEFT_CT_F_SYN | WEFT_CT_F_SNAT);
	CHECK_EQ(ct_count(f), 2);

	/* the pod answers the hairpin address; it gets back to itself from the frontend */
	pkt_tcp(&p, gw_a_mac, pod_a_mac, POD_A_IP, BE_PORT, hairpin_ip(), 40600,
		TCP_SYN | TCP_ACK, 9, 1001);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_TUPLE(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 40600);
	CHECK_FORWARDED(&p, &r.out);

	/* later packets keep the hairpin source */
	tcp_from_a(&p, 40600, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_TUPLE(&r.out, hairpin_ip(), 40600, POD_A_IP, BE_PORT);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(drops_total(f), 0);
}

/* fd: weft_affinity */
static void affinity_body(struct fixture *f, int fd)
{
	const in_addr_t aside = IP(10, 128, 2, 55);	/* backend 55: in no slot */
	struct weft_affinity_key ak = { .svc_id = SVC_ID, .client = POD_A_IP };
	struct weft_affinity a;
	in_addr_t first = 0;
	uint32_t want = BE_REMOTE2;
	struct result r;
	struct pkt p;

	for (int i = 0; i < 20; i++) {
		tcp_from_a(&p, (uint16_t)(40700 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK(backend_of(&r.out) >= 0);
		if (i == 0)
			first = ip_of(&r.out)->daddr;
		CHECK_EQ(ip_of(&r.out)->daddr, first);
	}
	if (first == LOCAL_BE_IP)
		want = BE_LOCAL;
	else if (first == REMOTE_BE_IP)
		want = BE_REMOTE;
	CHECK_EQ(bpf_map_lookup_elem(fd, &ak, &a), 0);
	CHECK_EQ(a.backend_id, want);
	CHECK(recent(a.last_seen));

	/* a fresh entry wins over the slots, even for a backend in none */
	a.backend_id = 55;
	a.last_seen = now_ticks() - 5;		/* 5.4 s ago, timeout 10 s */
	CHECK_EQ(bpf_map_update_elem(fd, &ak, &a, BPF_ANY), 0);
	tcp_from_a(&p, 40750, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_TUPLE(&r.out, POD_A_IP, 40750, aside, BE_PORT);

	/* an expired one is not followed, and is replaced */
	a.backend_id = 55;
	a.last_seen = now_ticks() - 20;		/* 21 s ago */
	CHECK_EQ(bpf_map_update_elem(fd, &ak, &a, BPF_ANY), 0);
	tcp_from_a(&p, 40751, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK(backend_of(&r.out) >= 0);
	CHECK_EQ(bpf_map_lookup_elem(fd, &ak, &a), 0);
	CHECK(a.backend_id != 55);
	CHECK(recent(a.last_seen));

	/* an entry naming a backend of another service is not followed */
	a.backend_id = 56;
	a.last_seen = now_ticks();
	CHECK_EQ(bpf_map_update_elem(fd, &ak, &a, BPF_ANY), 0);
	tcp_from_a(&p, 40752, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK(backend_of(&r.out) >= 0);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_affinity_keeps_a_client_on_its_backend_until_the_timeout)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct svc s = cluster_tcp;
	int fd;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(backend_put(f->dp, 55, IP(10, 128, 2, 55), BE_PORT, IPPROTO_TCP, false, SVC_ID),
		 0);
	CHECK_EQ(backend_put(f->dp, 56, IP(10, 128, 2, 56), BE_PORT, IPPROTO_TCP, false,
			     SVC_ID + 1), 0);
	s.flags |= WEFT_SVC_F_AFFINITY;
	s.affinity_timeout = 10;
	CHECK_EQ(svc_put(f->dp, &s, ids, 3), 0);
	fd = pinned_map_fd(f, "weft_affinity");
	CHECK(fd >= 0);
	affinity_body(f, fd);
	close(fd);
}

DP_TEST(svc_nodeport_from_a_pod_via_any_node_ip)
{
	static const uint32_t ids[] = { BE_REMOTE };
	static const struct {
		in_addr_t dst;
		uint16_t port;
		bool translated;
	} cases[] = {
		{ NODE_IP, NODE_PORT, true },
		{ REMOTE_NODE_IP, NODE_PORT, true },
		{ IP(192, 168, 1, 99), NODE_PORT, false },	/* no node */
		{ GATEWAY_IP, NODE_PORT, false },
		{ NODE_IP, NODE_PORT + 1, false },		/* no frontend */
		{ REMOTE_NODE_IP, 22, false },
	};
	struct weft_ct_entry rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &nodeport_tcp, IPPROTO_TCP, ids, 1), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint16_t sport = (uint16_t)(40800 + i);

		tcp_from_a(&p, sport, cases[i].dst, cases[i].port, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		if (!cases[i].translated) {
			CHECK_EQ(r.verdict, TC_ACT_OK);
			CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
			CHECK_EQ(r.out.len, p.len);
			CHECK(memcmp(r.out.b, p.b, p.len) == 0);
			continue;
		}
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
		CHECK_TUPLE(&r.out, POD_A_IP, sport, REMOTE_BE_IP, BE_PORT);
		CHECK_FORWARDED(&p, &r.out);
		/* the answer will come from the address the pod dialled */
		CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, POD_A_IP, sport, &rev), 0);
		CHECK_CT(rev, cases[i].dst, NODE_PORT, POD_A_IP, sport, BE_REMOTE, WEFT_CT_F_SYN);
	}
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(drops_total(f), 0);
}

/* ---- services from outside: node_ingress ---- */

DP_TEST(node_nodeport_to_a_local_backend_keeps_the_client_address)
{
	static const uint32_t ids[] = { BE_LOCAL };
	const uint16_t flags = WEFT_CT_F_SYN | WEFT_CT_F_EXTERNAL;
	struct weft_ct_entry fwd, rev;
	uint8_t be_mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &nodeport_tcp, IPPROTO_TCP, ids, 1), 0);
	tenant_mac(LOCAL_BE_IP, be_mac);

	tcp_from_outside(&p, 50000, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, run_ifindex());
	CHECK_TUPLE(&r.out, OUTSIDE_IP, 50000, LOCAL_BE_IP, BE_PORT);
	CHECK_FORWARDED(&p, &r.out);
	CHECK(memcmp(r.out.b, be_mac, 6) == 0);
	CHECK(memcmp(r.out.b + 6, gw_a_mac, 6) == 0);
	CHECK_EQ(ct_fwd(f, OUTSIDE_IP, 50000, NODE_IP, NODE_PORT, &fwd), 0);
	CHECK_CT(fwd, LOCAL_BE_IP, BE_PORT, OUTSIDE_IP, 50000, BE_LOCAL, flags);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, OUTSIDE_IP, 50000, &rev), 0);
	CHECK_CT(rev, NODE_IP, NODE_PORT, OUTSIDE_IP, 50000, BE_LOCAL, flags);

	/* the backend's answer leaves through the underlay, from the node port */
	tcp_from_local_be(&p, BE_PORT, OUTSIDE_IP, 50000, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_UNDERLAY);
	CHECK_EQ(r.trace.ifindex, UNDERLAY_IFINDEX);
	CHECK_TUPLE(&r.out, NODE_IP, NODE_PORT, OUTSIDE_IP, 50000);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, OUTSIDE_IP, 50000, &rev), 0);
	CHECK_EQ(rev.flags, WEFT_CT_F_ESTABLISHED | WEFT_CT_F_EXTERNAL);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(node_nodeport_to_a_remote_backend_is_snatted_and_tunnelled)
{
	static const uint32_t ids[] = { BE_REMOTE };
	const uint16_t flags = WEFT_CT_F_SYN | WEFT_CT_F_EXTERNAL | WEFT_CT_F_SNAT;
	uint16_t ports[40];
	struct weft_ct_entry fwd, rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &nodeport_tcp, IPPROTO_TCP, ids, 1), 0);

	for (int i = 0; i < 40; i++) {
		uint16_t cport = (uint16_t)(50100 + i), snat;

		tcp_from_outside(&p, cport, NODE_IP, NODE_PORT, TCP_SYN);
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
		CHECK_EQ(r.trace.ifindex, VXLAN_IFINDEX);
		CHECK_EQ(r.trace.tunnel_id, 0);
		CHECK_EQ(r.trace.tunnel_remote, ntohl(REMOTE_NODE_IP));
		snat = sport_of(&r.out);
		CHECK(snat >= WEFT_SNAT_PORT_MIN);	/* and <= 65535, as a __u16 is */
		CHECK_TUPLE(&r.out, GATEWAY_IP, snat, REMOTE_BE_IP, BE_PORT);
		CHECK_FORWARDED(&p, &r.out);
		for (int j = 0; j < i; j++)
			CHECK(ports[j] != snat);	/* REV keys differ */
		ports[i] = snat;
		CHECK_EQ(ct_fwd(f, OUTSIDE_IP, cport, NODE_IP, NODE_PORT, &fwd), 0);
		CHECK_CT(fwd, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat, BE_REMOTE, flags);
		CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat, &rev), 0);
		CHECK_CT(rev, NODE_IP, NODE_PORT, OUTSIDE_IP, cport, BE_REMOTE, flags);

		/* a retransmission keeps backend and port */
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_TUPLE(&r.out, GATEWAY_IP, snat, REMOTE_BE_IP, BE_PORT);
		CHECK_FORWARDED(&p, &r.out);
	}
	CHECK_EQ(ct_count(f), 80);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(node_external_policy_local_without_local_backend_drops)
{
	static const uint32_t remote[] = { BE_REMOTE, BE_REMOTE2 };
	static const uint32_t mixed[] = { BE_REMOTE, BE_LOCAL, BE_REMOTE2 };
	struct svc s = nodeport_tcp;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	s.flags |= WEFT_SVC_F_ETP_LOCAL;
	CHECK_EQ(svc_put(f->dp, &s, remote, 2), 0);

	tcp_from_outside(&p, 50200, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_BACKEND);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_BACKEND), 1);
	CHECK_EQ(ct_count(f), 0);

	/* a pod reaching it uses every backend */
	tcp_from_a(&p, 50201, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK(backend_of(&r.out) > 0);

	/* with a local backend: only that one, client address kept */
	CHECK_EQ(svc_put(f->dp, &s, mixed, 3), 0);
	for (int i = 0; i < 30; i++) {
		tcp_from_outside(&p, (uint16_t)(50210 + i), NODE_IP, NODE_PORT, TCP_SYN);
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_TUPLE(&r.out, OUTSIDE_IP, 50210 + i, LOCAL_BE_IP, BE_PORT);
	}

	/* no backend anywhere: refused like a closed port, from the node port */
	CHECK_EQ(svc_head_put(f->dp, &s, 0, 0), 0);
	tcp_from_outside(&p, 50250, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK(memcmp(r.out.b, outside_mac, 6) == 0);
	CHECK_RST(&r.out, NODE_IP, NODE_PORT, OUTSIDE_IP, 50250, TCP_RST | TCP_ACK, 0, 3001);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_BACKEND), 1);
}

DP_TEST(node_only_load_balancer_frontends_and_own_node_ports_are_translated)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct svc vip = { VIP_IP, 443, IPPROTO_TCP, WEFT_SVC_F_LOAD_BALANCER, 0 };
	struct svc vxlan_np = { 0, VXLAN_PORT, IPPROTO_UDP, WEFT_SVC_F_NODE_PORT, 0 };
	static const struct {
		in_addr_t dst;
		uint16_t port;
		uint8_t proto;
	} untouched[] = {
		{ SVC_IP, SVC_PORT, IPPROTO_TCP },		/* cluster IP */
		{ REMOTE_NODE_IP, NODE_PORT, IPPROTO_TCP },	/* another node's */
		{ NODE_IP, NODE_PORT + 1, IPPROTO_TCP },	/* no frontend */
		{ NODE_IP, VXLAN_PORT, IPPROTO_UDP },		/* the overlay */
		{ VIP_IP, 444, IPPROTO_TCP },
	};
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(backend_put(f->dp, 9, LOCAL_BE_IP, BE_PORT, IPPROTO_UDP, true, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);
	CHECK_EQ(svc_put(f->dp, &nodeport_tcp, ids, 1), 0);
	CHECK_EQ(svc_put(f->dp, &vip, ids, 1), 0);
	CHECK_EQ(svc_put(f->dp, &vxlan_np, (const uint32_t[]){ 9 }, 1), 0);

	for (size_t i = 0; i < sizeof(untouched) / sizeof(untouched[0]); i++) {
		pkt_l4(&p, node_mac, outside_mac, untouched[i].proto, OUTSIDE_IP,
		       (uint16_t)(50300 + i), untouched[i].dst, untouched[i].port, 8);
		if (untouched[i].proto == IPPROTO_TCP) {
			l4_of(&p)[13] = TCP_SYN;
			l4_checksum_fill(&p);
		}
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		CHECK_EQ(r.out.len, p.len);
		CHECK(memcmp(r.out.b, p.b, p.len) == 0);
	}
	CHECK_EQ(ct_count(f), 0);

	tcp_from_outside(&p, 50400, VIP_IP, 443, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_TUPLE(&r.out, OUTSIDE_IP, 50400, LOCAL_BE_IP, BE_PORT);
	CHECK_FORWARDED(&p, &r.out);
	tcp_from_outside(&p, 50401, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, OUTSIDE_IP, 50401, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_map_mid_update_and_non_translatable_packets)
{
	static const uint32_t ids[] = { BE_REMOTE, BE_REMOTE2 };
	int ok = 0;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 2), 0);

	/* not TCP or UDP (an ICMP echo: type 0x00 here), not translated; a
	 * later fragment without its first: no ports, dropped */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, SVC_IP, 64, IPPROTO_ICMP, 5, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK(memcmp(r.out.b, p.b, p.len) == 0);
	tcp_from_a(&p, 44000, SVC_IP, SVC_PORT, TCP_SYN);
	ip_of(&p)->frag_off = htons(100);
	ip_of(&p)->check = 0;
	ip_of(&p)->check = htons(ip_checksum(ip_of(&p), 20));
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
	CHECK_EQ(ct_count(f), 0);

	/* the count ahead of the slots, a slot naming a missing backend */
	CHECK_EQ(svc_head_put(f->dp, &cluster_tcp, 3, 0), 0);
	CHECK_EQ(datapath_backend_del(f->dp, BE_REMOTE2), 0);
	for (int i = 0; i < 40 && drops_of(f, WEFT_DROP_SERVICE_MAP) < 10; i++) {
		tcp_from_a(&p, (uint16_t)(44100 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		if (r.verdict == TC_ACT_SHOT) {
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_SERVICE_MAP);
		} else {
			CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
			CHECK_TUPLE(&r.out, POD_A_IP, 44100 + i, REMOTE_BE_IP, BE_PORT);
			ok++;
		}
	}
	CHECK_EQ(drops_of(f, WEFT_DROP_SERVICE_MAP), 10);
	CHECK_EQ(ct_count(f), 2 * ok);
}

/* The VNID rule applies to the backend the connection was translated to. */
DP_TEST(svc_tenant_rule_applies_to_the_backend)
{
	static const uint32_t ids[] = { 31 };
	uint8_t mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backend_put(f->dp, 31, BLUE_DST_IP, BE_PORT, IPPROTO_TCP, true, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	tenant_mac(RED_SRC_IP, mac);
	pkt_tcp(&p, gw_b_mac, mac, RED_SRC_IP, 44200, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
	tenant_mac(BLUE_SRC_IP, mac);
	pkt_tcp(&p, gw_b_mac, mac, BLUE_SRC_IP, 44201, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 52);
	CHECK_TUPLE(&r.out, BLUE_SRC_IP, 44201, BLUE_DST_IP, BE_PORT);
	CHECK_EQ(drops_of(f, WEFT_DROP_ISOLATED), 1);
}

/* ---- conntrack admission: what may write weft_ct ---- */

static uint64_t opened_of(struct fixture *f, in_addr_t client)
{
	uint64_t n = 0;

	return datapath_ct_opened_get(f->dp, client, &n) < 0 ? 0 : n;
}

/* A SYN the tenant rule refuses writes nothing, for a backend here and
 * one on another node (known by weft_ipcache); the same SYN from the
 * backend's tenant is the control that makes a pair. */
DP_TEST(ct_tenant_refused_syn_writes_no_entry)
{
	static const uint32_t here[] = { 31 }, there[] = { 32 };
	const in_addr_t remote_blue = IP(10, 128, 2, 31);
	struct weft_ipcache_entry ic = { .node_ip = REMOTE_NODE_IP, .vnid = VNID_BLUE };
	const struct svc remote_svc = { IP(10, 96, 0, 12), SVC_PORT, IPPROTO_TCP,
					WEFT_SVC_F_CLUSTER_IP, 0 };
	uint8_t red[6], blue[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backend_put(f->dp, 31, BLUE_DST_IP, BE_PORT, IPPROTO_TCP, true, SVC_ID), 0);
	CHECK_EQ(backend_put(f->dp, 32, remote_blue, BE_PORT, IPPROTO_TCP, false, SVC_ID), 0);
	CHECK_EQ(datapath_ipcache_put(f->dp, remote_blue, &ic), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, here, 1), 0);
	CHECK_EQ(svc_put(f->dp, &remote_svc, there, 1), 0);
	tenant_mac(RED_SRC_IP, red);
	tenant_mac(BLUE_SRC_IP, blue);

	for (int i = 0; i < 50; i++) {
		pkt_tcp(&p, gw_b_mac, red, RED_SRC_IP, (uint16_t)(45000 + i),
			i % 2 ? remote_svc.addr : SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ISOLATED);
	}
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(opened_of(f, RED_SRC_IP), 0);
	CHECK_EQ(drops_of(f, WEFT_DROP_ISOLATED), 50);

	/* control: blue reaches both */
	pkt_tcp(&p, gw_b_mac, blue, BLUE_SRC_IP, 45100, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, BLUE_SRC_IP, 45100, BLUE_DST_IP, BE_PORT);
	pkt_tcp(&p, gw_b_mac, blue, BLUE_SRC_IP, 45101, remote_svc.addr, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(opened_of(f, BLUE_SRC_IP), 2);
}

/* TCP without a SYN (an ACK, RST, FIN or SYN+ACK storm) opens nothing,
 * from a pod or from outside; the SYN after them is the control. */
DP_TEST(ct_lone_ack_or_rst_writes_no_entry)
{
	static const uint32_t ids[] = { BE_REMOTE, BE_REMOTE2 };
	static const uint8_t storms[] = { TCP_ACK, TCP_RST, TCP_RST | TCP_ACK, TCP_FIN | TCP_ACK,
					  TCP_SYN | TCP_ACK, TCP_SYN | TCP_RST, TCP_FIN };
	int n = 0;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 2), 0);
	CHECK_EQ(svc_put(f->dp, &nodeport_tcp, ids, 2), 0);
	for (size_t i = 0; i < sizeof(storms); i++)
		for (int j = 0; j < 20; j++, n += 2) {
			tcp_from_a(&p, (uint16_t)(46000 + n), SVC_IP, SVC_PORT, storms[i]);
			CHECK_EQ(run_pod(f, &p, &r), 0);
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_NO_CONNECTION);
			tcp_from_outside(&p, (uint16_t)(46001 + n), NODE_IP, NODE_PORT, storms[i]);
			CHECK_EQ(run_node(f, &p, &r), 0);
			CHECK_EQ(r.verdict, TC_ACT_SHOT);
			CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_NO_CONNECTION);
		}
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(opened_of(f, POD_A_IP), 0);
	CHECK_EQ(drops_of(f, WEFT_DROP_CT_NO_CONNECTION), (uint64_t)n);

	/* control: a SYN from each opens a connection */
	tcp_from_a(&p, 46999, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	tcp_from_outside(&p, 46998, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_count(f), 4);
	/* and an ACK of that connection follows it */
	tcp_from_a(&p, 46999, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(drops_of(f, WEFT_DROP_CT_NO_CONNECTION), (uint64_t)n);
}

/* A SYN makes a pair whose halves name each other, and counts one
 * connection for its client. */
DP_TEST(ct_syn_creates_a_pair)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct weft_ct_entry fwd, rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);
	tcp_from_a(&p, 47000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 47000, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, REMOTE_BE_IP, BE_PORT, POD_A_IP, 47000, BE_REMOTE, WEFT_CT_F_SYN);
	CHECK_EQ(ct_rev(f, fwd.nat_addr, ntohs(fwd.nat_port), fwd.nat_addr2, ntohs(fwd.nat_port2),
			&rev), 0);
	CHECK_CT(rev, SVC_IP, SVC_PORT, POD_A_IP, 47000, BE_REMOTE, WEFT_CT_F_SYN);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(opened_of(f, POD_A_IP), 1);
	/* its SYN again (a retransmission) makes nothing new */
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(opened_of(f, POD_A_IP), 1);
}

/* One client port towards two frontends that share a backend: the
 * backend would see one 4-tuple for both, so the second connection gets
 * another source port (the client's address kept), each REV entry stays
 * its connection's, and each answer comes back from its own frontend. */
DP_TEST(ct_rev_unique_for_one_client_port_to_two_frontends)
{
	static const uint32_t ids[] = { BE_LOCAL };
	const struct svc second = { IP(10, 96, 0, 11), SVC_PORT, IPPROTO_TCP,
				    WEFT_SVC_F_CLUSTER_IP, 0 };
	struct weft_ct_entry fwd1, fwd2, rev1, rev2;
	uint16_t port2;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);
	CHECK_EQ(svc_put(f->dp, &second, ids, 1), 0);

	tcp_from_a(&p, 47100, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 47100, LOCAL_BE_IP, BE_PORT);
	tcp_from_a(&p, 47100, second.addr, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_FORWARDED(&p, &r.out);
	CHECK_EQ(ip_of(&r.out)->saddr, POD_A_IP);
	CHECK_EQ(ip_of(&r.out)->daddr, LOCAL_BE_IP);
	port2 = sport_of(&r.out);
	CHECK(port2 >= WEFT_SNAT_PORT_MIN);
	CHECK_EQ(ct_count(f), 4);

	CHECK_EQ(ct_fwd(f, POD_A_IP, 47100, SVC_IP, SVC_PORT, &fwd1), 0);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 47100, second.addr, SVC_PORT, &fwd2), 0);
	CHECK_EQ(fwd1.flags, WEFT_CT_F_SYN);
	CHECK_CT(fwd2, LOCAL_BE_IP, BE_PORT, POD_A_IP, port2, BE_LOCAL,
		 WEFT_CT_F_SYN | WEFT_CT_F_SNAT);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, 47100, &rev1), 0);
	CHECK_CT(rev1, SVC_IP, SVC_PORT, POD_A_IP, 47100, BE_LOCAL, WEFT_CT_F_SYN);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, port2, &rev2), 0);
	CHECK_CT(rev2, second.addr, SVC_PORT, POD_A_IP, 47100, BE_LOCAL,
		 WEFT_CT_F_SYN | WEFT_CT_F_SNAT);

	/* the answers: each from its frontend, both to the client's port */
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, 47100, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 47100);
	CHECK_CSUMS(&r.out);
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, port2, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, second.addr, SVC_PORT, POD_A_IP, 47100);
	CHECK_CSUMS(&r.out);
	/* the client's next segments keep their own translations */
	tcp_from_a(&p, 47100, second.addr, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_TUPLE(&r.out, POD_A_IP, port2, LOCAL_BE_IP, BE_PORT);
	tcp_from_a(&p, 47100, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_TUPLE(&r.out, POD_A_IP, 47100, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(drops_total(f), 0);
}

/* The cluster IP with backend id alone behind it, and n connections of
 * pod A to it from ports port0, port0 + 1, ...: 0, or -1 when one was
 * not let through. */
static int ct_open_from_a(struct fixture *f, uint32_t id, uint16_t port0, int n)
{
	struct result r;
	struct pkt p;

	if (svc_seeded(f, &cluster_tcp, IPPROTO_TCP, &id, 1) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		tcp_from_a(&p, (uint16_t)(port0 + i), SVC_IP, SVC_PORT, TCP_SYN);
		if (run_pod(f, &p, &r) < 0 || r.verdict != TC_ACT_REDIRECT)
			return -1;
	}
	return 0;
}

/* A client holds at most ct_source_max connections (3 here): the 4th is
 * refused and counted, another client is not affected, and once the
 * sweep frees one of the first client's pairs it may open one again. */
static void ct_source_cap_body(struct fixture *f)
{
	struct conntrack_stats st;
	struct weft_ct_entry fwd, rev;
	struct weft_ct_key k;
	uint8_t mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(ct_open_from_a(f, BE_REMOTE, 47200, 3), 0);
	for (int i = 3; i < 10; i++) {
		tcp_from_a(&p, (uint16_t)(47200 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_SOURCE_LIMIT);
	}
	CHECK_EQ(ct_count(f), 6);
	CHECK_EQ(opened_of(f, POD_A_IP), 3);
	CHECK_EQ(drops_of(f, WEFT_DROP_CT_SOURCE_LIMIT), 7);
	/* another client */
	tenant_mac(DEF_SRC_IP, mac);
	pkt_tcp(&p, gw_b_mac, mac, DEF_SRC_IP, 47300, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_count(f), 8);

	/* the first connection was reset a while ago: the sweep frees it */
	CHECK_EQ(ct_fwd(f, POD_A_IP, 47200, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, POD_A_IP, 47200, &rev), 0);
	fwd.flags |= WEFT_CT_F_CLOSING;
	fwd.last_seen -= 30;
	rev.last_seen -= 30;
	k = ct_key(POD_A_IP, 47200, SVC_IP, SVC_PORT, IPPROTO_TCP, WEFT_CT_FWD);
	CHECK_EQ(datapath_ct_put(f->dp, &k, &fwd), 0);
	k = ct_key(REMOTE_BE_IP, BE_PORT, POD_A_IP, 47200, IPPROTO_TCP, WEFT_CT_REV);
	CHECK_EQ(datapath_ct_put(f->dp, &k, &rev), 0);
	CHECK_EQ(conntrack_sweep(f->dp, conntrack_now(), &st), 0);
	CHECK_EQ(st.expired_pairs, 1);
	CHECK_EQ(ct_count(f), 6);
	tcp_from_a(&p, 47210, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	tcp_from_a(&p, 47211, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_SOURCE_LIMIT);
}

TEST(ct_per_client_cap)
{
	struct datapath_opts opts = { .trace = true, .ct_source_max = 3 };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		ct_source_cap_body(&f);
	fixture_down(&f);
}

/* A RST from either end deletes the connection's pair at once and gives
 * its client's slot back (cap 3 here): a client that opens and resets
 * connections quickly is never refused for ones already gone.  The RST
 * itself is still translated; a FIN only marks the pair closing. */
static void ct_reset_body(struct fixture *f)
{
	struct weft_ct_entry e;
	struct result r;
	struct pkt p;

	CHECK_EQ(ct_open_from_a(f, BE_LOCAL, 47400, 3), 0);
	tcp_from_a(&p, 47403, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_SOURCE_LIMIT);
	CHECK_EQ(ct_count(f), 6);

	/* the client resets its first connection: translated, then gone */
	tcp_from_a(&p, 47400, SVC_IP, SVC_PORT, TCP_RST | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 47400, LOCAL_BE_IP, BE_PORT);
	CHECK_CSUMS(&r.out);
	CHECK_EQ(ct_count(f), 4);
	CHECK(ct_fwd(f, POD_A_IP, 47400, SVC_IP, SVC_PORT, &e) != 0);
	CHECK(ct_rev(f, LOCAL_BE_IP, BE_PORT, POD_A_IP, 47400, &e) != 0);
	CHECK_EQ(opened_of(f, POD_A_IP), 2);

	/* the backend resets the second: the client gets it from the frontend */
	tcp_from_local_be(&p, BE_PORT, POD_A_IP, 47401, TCP_RST);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, SVC_IP, SVC_PORT, POD_A_IP, 47401);
	CHECK_CSUMS(&r.out);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(opened_of(f, POD_A_IP), 1);

	/* a FIN only marks the third closing: it keeps its slot until the sweep */
	tcp_from_a(&p, 47402, SVC_IP, SVC_PORT, TCP_FIN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_fwd(f, POD_A_IP, 47402, SVC_IP, SVC_PORT, &e), 0);
	CHECK(e.flags & WEFT_CT_F_CLOSING);
	CHECK_EQ(ct_count(f), 2);

	/* two slots are free again: the next two open, the third is over */
	for (int i = 0; i < 3; i++) {
		tcp_from_a(&p, (uint16_t)(47410 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, i < 2 ? TC_ACT_REDIRECT : TC_ACT_SHOT);
	}
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_SOURCE_LIMIT);

	/* a RST of no connection still opens and deletes nothing */
	tcp_from_a(&p, 47400, SVC_IP, SVC_PORT, TCP_RST);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_NO_CONNECTION);
	CHECK_EQ(ct_count(f), 6);
	CHECK_EQ(opened_of(f, POD_A_IP), 3);
}

/* An outside client's RST could be forged by anyone on the underlay (no
 * sequence number is checked): it marks the pair closing, as a FIN, and
 * the pair stays until the sweep. */
DP_TEST(ct_reset_from_outside_only_marks_the_pair_closing)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_ct_entry e;
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &nodeport_tcp, IPPROTO_TCP, ids, 1), 0);
	tcp_from_outside(&p, 50600, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_count(f), 2);
	tcp_from_outside(&p, 50600, NODE_IP, NODE_PORT, TCP_RST);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(ct_fwd(f, OUTSIDE_IP, 50600, NODE_IP, NODE_PORT, &e), 0);
	CHECK(e.flags & WEFT_CT_F_CLOSING);
	CHECK_EQ(drops_total(f), 0);
}

TEST(ct_reset_frees_the_pair_and_the_slot_at_once)
{
	struct datapath_opts opts = { .trace = true, .ct_source_max = 3 };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		ct_reset_body(&f);
	fixture_down(&f);
}

/* ---- the sweep: pairs live and die together, orphans go ---- */

static void ct_put_pair(struct fixture *f, in_addr_t client, uint16_t cport, uint16_t fwd_flags,
			uint32_t fwd_seen, uint16_t rev_flags, uint32_t rev_seen, bool fwd, bool rev)
{
	struct weft_ct_entry e;
	struct weft_ct_key k;

	memset(&e, 0, sizeof(e));
	e.nat_addr = REMOTE_BE_IP;
	e.nat_port = htons(BE_PORT);
	e.nat_addr2 = client;
	e.nat_port2 = htons(cport);
	e.backend_id = BE_REMOTE;
	e.svc_id = SVC_ID;
	e.flags = fwd_flags;
	e.last_seen = fwd_seen;
	k = ct_key(client, cport, SVC_IP, SVC_PORT, IPPROTO_TCP, WEFT_CT_FWD);
	if (fwd)
		CHECK_EQ(datapath_ct_put(f->dp, &k, &e), 0);
	e.nat_addr = SVC_IP;
	e.nat_port = htons(SVC_PORT);
	e.flags = rev_flags;
	e.last_seen = rev_seen;
	k = ct_key(REMOTE_BE_IP, BE_PORT, client, cport, IPPROTO_TCP, WEFT_CT_REV);
	if (rev)
		CHECK_EQ(datapath_ct_put(f->dp, &k, &e), 0);
}

static bool ct_has(struct fixture *f, in_addr_t client, uint16_t cport, uint8_t dir)
{
	struct weft_ct_entry e;

	return dir == WEFT_CT_FWD ? ct_fwd(f, client, cport, SVC_IP, SVC_PORT, &e) == 0
				  : ct_rev(f, REMOTE_BE_IP, BE_PORT, client, cport, &e) == 0;
}

DP_TEST(ct_sweep_deletes_pairs_together_and_orphans)
{
	const uint32_t now = 100000, est = WEFT_CT_F_ESTABLISHED;
	const in_addr_t c1 = POD_A_IP, c2 = IP(10, 128, 0, 77);
	struct conntrack_stats st;
	uint64_t closed = 0;

	/* 1 established, both fresh: kept */
	ct_put_pair(f, c1, 1001, est, now - 1, est, now, true, true);
	/* 2 the REV saw a FIN 20 s ago, the FWD a packet 1 s ago: the pair is
	 * closing, its last packet 1 s ago: kept (closing lasts 10 s) */
	ct_put_pair(f, c1, 1002, est, now - 1, est | WEFT_CT_F_CLOSING, now - 20, true, true);
	/* 3 closing, quiet for 15 s: both go */
	ct_put_pair(f, c1, 1003, est | WEFT_CT_F_CLOSING, now - 15, est, now - 15, true, true);
	/* 4 a SYN 8 s ago, never answered: both go (half-open: 5 s) */
	ct_put_pair(f, c2, 1004, WEFT_CT_F_SYN, now - 8, WEFT_CT_F_SYN, now - 8, true, true);
	/* 5 a REV whose FWD is gone (answered once, 6 h to live alone before) */
	ct_put_pair(f, c2, 1005, est, now, est, now - 3, false, true);
	/* 6 a FWD whose REV is gone */
	ct_put_pair(f, c2, 1006, est, now - 3, est, now, true, false);
	/* 7 a REV written this instant (its FWD comes next): kept */
	ct_put_pair(f, c2, 1007, WEFT_CT_F_SYN, now, WEFT_CT_F_SYN, now, false, true);
	/* 8 established, the FWD quiet for 7 h, answers flowing: kept */
	ct_put_pair(f, c1, 1008, est, now - 7 * 3600, est, now, true, true);
	/* 9 established, both quiet for 7 h: both go */
	ct_put_pair(f, c1, 1009, est, now - 7 * 3600, est, now - 7 * 3600, true, true);
	/* 10 half-open, answered: a SYN and the backend's SYN+ACK 8 s ago, no
	 * ACK from the client (its stack drops the answers): both go (5 s) */
	ct_put_pair(f, c2, 1010, WEFT_CT_F_SYN, now - 8, est, now - 8, true, true);
	/* 11 the client went on past its SYN, never answered: both go */
	ct_put_pair(f, c2, 1011, est, now - 8, WEFT_CT_F_SYN, now - 8, true, true);
	CHECK_EQ(ct_count(f), 19);

	CHECK_EQ(conntrack_sweep(f->dp, now, &st), 0);
	CHECK_EQ(st.entries, 19);
	CHECK_EQ(st.expired_pairs, 5);
	CHECK_EQ(st.orphans, 2);
	CHECK(ct_has(f, c1, 1001, WEFT_CT_FWD) && ct_has(f, c1, 1001, WEFT_CT_REV));
	CHECK(ct_has(f, c1, 1002, WEFT_CT_FWD) && ct_has(f, c1, 1002, WEFT_CT_REV));
	CHECK(!ct_has(f, c1, 1003, WEFT_CT_FWD) && !ct_has(f, c1, 1003, WEFT_CT_REV));
	CHECK(!ct_has(f, c2, 1004, WEFT_CT_FWD) && !ct_has(f, c2, 1004, WEFT_CT_REV));
	CHECK(!ct_has(f, c2, 1005, WEFT_CT_REV));
	CHECK(!ct_has(f, c2, 1006, WEFT_CT_FWD));
	CHECK(ct_has(f, c2, 1007, WEFT_CT_REV));
	CHECK(ct_has(f, c1, 1008, WEFT_CT_FWD) && ct_has(f, c1, 1008, WEFT_CT_REV));
	CHECK(!ct_has(f, c1, 1009, WEFT_CT_FWD) && !ct_has(f, c1, 1009, WEFT_CT_REV));
	CHECK(!ct_has(f, c2, 1010, WEFT_CT_FWD) && !ct_has(f, c2, 1010, WEFT_CT_REV));
	CHECK(!ct_has(f, c2, 1011, WEFT_CT_FWD) && !ct_has(f, c2, 1011, WEFT_CT_REV));
	CHECK_EQ(ct_count(f), 7);
	/* connections closed per client: FWD entries deleted (c1: 3 and 9;
	 * c2: 4, 10, 11 and the orphan FWD 6) */
	CHECK_EQ(datapath_ct_closed_get(f->dp, c1, &closed), 0);
	CHECK_EQ(closed, 2);
	CHECK_EQ(datapath_ct_closed_get(f->dp, c2, &closed), 0);
	CHECK_EQ(closed, 4);
	CHECK_EQ(st.sources, 1);	/* c1 holds 3 FWD entries, c2 none */
	CHECK_EQ(st.top_source, c1);
	CHECK_EQ(st.top_source_connections, 3);

	/* the fresh orphan past its grace goes at the next sweep */
	CHECK_EQ(conntrack_sweep(f->dp, now + CONNTRACK_ORPHAN_GRACE_TICKS + 1, &st), 0);
	CHECK_EQ(st.orphans, 1);
	CHECK(!ct_has(f, c2, 1007, WEFT_CT_REV));
	CHECK_EQ(ct_count(f), 6);
}

/* The sweep of a full table: one batched read, no syscall per entry to
 * find partners; 200,000 live entries and 50,000 orphans. */
static void ct_sweep_large_body(struct fixture *f)
{
	const uint32_t now = conntrack_now();
	struct conntrack_stats st;

	for (uint32_t i = 0; i < 100000; i++)
		ct_put_pair(f, IP(10, 128, 1, 0) + htonl(i >> 16), (uint16_t)i,
			    WEFT_CT_F_ESTABLISHED, now, WEFT_CT_F_ESTABLISHED, now, true, true);
	for (uint32_t i = 0; i < 50000; i++)
		ct_put_pair(f, IP(10, 128, 3, 0) + htonl(i >> 16), (uint16_t)i,
			    WEFT_CT_F_ESTABLISHED, now, WEFT_CT_F_ESTABLISHED, now - 10, false, true);
	CHECK_EQ(conntrack_sweep(f->dp, now, &st), 0);
	CHECK_EQ(st.entries, 250000);
	CHECK_EQ(st.orphans, 50000);
	CHECK_EQ(st.expired_pairs, 0);
	CHECK_EQ(ct_count(f), 200000);
	printf("  sweep of 250000 entries (50000 orphans): %llu ms\n",
	       (unsigned long long)(st.duration_us / 1000));
	CHECK(st.duration_us < 10 * 1000 * 1000);
}

TEST(ct_sweep_of_a_large_table_is_batched)
{
	struct datapath_opts opts = { .trace = true };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		ct_sweep_large_body(&f);
	fixture_down(&f);
}

/* weft_ct of 3 entries: the second connection's REV fits, its FWD does
 * not; the REV is taken back and the packet dropped as ct-full. */
static void svc_conntrack_full_body(struct fixture *f)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 1), 0);
	tcp_from_a(&p, 44300, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	tcp_from_a(&p, 44301, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_CT_FULL);
	CHECK_EQ(ct_count(f), 2);
	/* the first connection goes on */
	tcp_from_a(&p, 44300, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_TUPLE(&r.out, POD_A_IP, 44300, REMOTE_BE_IP, BE_PORT);
	CHECK_EQ(drops_of(f, WEFT_DROP_CT_FULL), 1);
}

TEST(svc_conntrack_full_drops_and_leaves_no_half_pair)
{
	struct datapath_opts opts = { .trace = true, .max_ct = 3, .ct_source_max = 100 };
	struct fixture f;

	if (fixture_up_opts(&f, opts) == 0)
		svc_conntrack_full_body(&f);
	fixture_down(&f);
}

/* datapath_ct_foreach reads conntrack in batches: every entry once, and a
 * callback may delete what it is shown. */
struct ct_walk {
	struct datapath *dp;
	size_t n, deleted;
	uint8_t *seen;		/* by sport - 1000 */
	bool twice;
};

static int ct_walk_one(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	struct ct_walk *w = arg;
	uint16_t i = (uint16_t)(ntohs(k->sport) - 1000);

	if (e->backend_id != i)
		return -EBADMSG;	/* the value is not the key's */
	w->twice |= w->seen[i]++ != 0;
	w->n++;
	if (i % 2 == 0 && datapath_ct_del(w->dp, k) == 0)
		w->deleted++;
	return 0;
}

DP_TEST(ct_foreach_sees_every_entry_once_in_batches)
{
	enum { N = 10000 };	/* more than one batch */
	static uint8_t seen[N];
	struct ct_walk w = { .dp = f->dp, .seen = seen };

	for (uint32_t i = 0; i < N; i++) {
		struct weft_ct_key k = { .saddr = POD_A_IP, .daddr = SVC_IP,
					 .sport = htons((uint16_t)(1000 + i)), .dport = htons(80),
					 .proto = IPPROTO_TCP, .dir = WEFT_CT_FWD };
		struct weft_ct_entry e = { .backend_id = i };

		CHECK_EQ(datapath_ct_put(f->dp, &k, &e), 0);
	}
	memset(seen, 0, sizeof(seen));
	CHECK_EQ(datapath_ct_foreach(f->dp, ct_walk_one, &w), 0);
	CHECK_EQ(w.n, N);
	CHECK(!w.twice);
	CHECK_EQ(w.deleted, N / 2);
	CHECK_EQ(ct_count(f), N / 2);
	memset(seen, 0, sizeof(seen));
	w.n = w.deleted = 0;
	CHECK_EQ(datapath_ct_foreach(f->dp, ct_walk_one, &w), 0);
	CHECK_EQ(w.n, N / 2);
	for (uint32_t i = 0; i < N; i++)
		CHECK_EQ(seen[i], i % 2 ? 1 : 0);
}

/* ---- randomized: which backend a connection's FWD entry holds ----
 *
 * Random sequences of the agent's changes to one service (backends added
 * at the end, removed by moving the last slot into the gap, an ID given
 * another address; conntrack never purged) and of TCP packets of a few
 * tuples, against a naive model: per tuple the backend its FWD entry
 * holds.  The entry is kept while its backend ID still names the address
 * it holds, else replaced by a backend of the current slots (the program's
 * random pick: any of them is right), or removed when there is none.
 * Checked after every packet: the packet, the FWD entry, its REV partner;
 * and that conntrack holds exactly two entries per modelled connection. */

#define RND_SVC_CLIENTS	4
#define RND_SVC_PORTS	3
#define RND_SVC_MAXBE	5
#define RND_SVC_IDS	12

static const in_addr_t rnd_svc_clients[RND_SVC_CLIENTS] = { POD_A_IP, RED_SRC_IP, BLUE_SRC_IP,
							    DEF_SRC_IP };

struct rnd_svc {
	uint32_t slots[RND_SVC_MAXBE];	/* backend IDs in slots 1..n */
	int n;
	struct {
		bool live;
		in_addr_t addr;
		uint16_t port;
	} be[RND_SVC_IDS + 1];		/* weft_backends, by ID 1.. */
	struct {
		bool has;
		uint32_t id;
		in_addr_t addr;
		uint16_t port;
		uint16_t flags;
	} conn[RND_SVC_CLIENTS][RND_SVC_PORTS];
	uint32_t next_addr;
	int no_connection;	/* packets that should be dropped as ct-no-connection */
	int no_backend;		/* RSTs to the frontend without backends (dropped) */
};

static in_addr_t rnd_svc_addr(struct rnd_svc *m)
{
	/* unique, in the remote node's 10.128.2.0/23 */
	return htonl(0x0a800264u + m->next_addr++);
}

static int rnd_svc_step(struct fixture *f, struct rnd_svc *m, uint64_t x, int *packets)
{
	int op = (int)(x % 10);

	if (op <= 1 && m->n < RND_SVC_MAXBE) {		/* add a backend */
		uint32_t id = 1 + (uint32_t)((x >> 8) % RND_SVC_IDS);

		while (m->be[id].live)
			id = id % RND_SVC_IDS + 1;
		m->be[id].live = true;
		m->be[id].addr = rnd_svc_addr(m);
		m->be[id].port = (uint16_t)(8000 + (x >> 16) % 100);
		m->slots[m->n++] = id;
		if (backend_put(f->dp, id, m->be[id].addr, m->be[id].port, IPPROTO_TCP, false,
				SVC_ID) < 0 ||
		    slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_ALL, (uint16_t)m->n, id) < 0 ||
		    svc_head_put(f->dp, &cluster_tcp, (uint16_t)m->n, 0) < 0)
			return -1;
		return 0;
	}
	if (op == 2 && m->n > 0) {			/* remove slot i */
		int i = (int)((x >> 8) % (uint64_t)m->n);
		uint32_t id = m->slots[i];
		struct weft_svc_key k = svc_key(&cluster_tcp, WEFT_SCOPE_ALL, (uint16_t)m->n);

		m->slots[i] = m->slots[m->n - 1];
		if (slot_put(f->dp, &cluster_tcp, WEFT_SCOPE_ALL, (uint16_t)(i + 1),
			     m->slots[i]) < 0 ||
		    svc_head_put(f->dp, &cluster_tcp, (uint16_t)(m->n - 1), 0) < 0 ||
		    datapath_service_del(f->dp, &k) < 0 || datapath_backend_del(f->dp, id) < 0)
			return -1;
		m->n--;
		m->be[id].live = false;
		return 0;
	}
	if (op == 3 && m->n > 0) {			/* an ID names another address */
		uint32_t id = m->slots[(x >> 8) % (uint64_t)m->n];

		m->be[id].addr = rnd_svc_addr(m);
		return backend_put(f->dp, id, m->be[id].addr, m->be[id].port, IPPROTO_TCP, false,
				   SVC_ID) < 0 ? -1 : 0;
	}

	/* a packet */
	static const uint8_t flag_choice[] = { TCP_SYN, TCP_ACK, TCP_ACK, TCP_FIN | TCP_ACK,
					       TCP_SYN, TCP_ACK, TCP_ACK, TCP_RST | TCP_ACK };
	int c = (int)((x >> 8) % RND_SVC_CLIENTS), k = (int)((x >> 12) % RND_SVC_PORTS);
	uint8_t fl = flag_choice[(x >> 16) % 8];
	in_addr_t client = rnd_svc_clients[c];
	uint16_t sport = (uint16_t)(41000 + k);
	uint8_t mac[6];
	struct weft_ct_entry e;
	struct result r;
	struct pkt p;
	bool kept, stale;
	__typeof__(m->conn[0][0]) *cn = &m->conn[c][k];

	(*packets)++;
	if (c == 0)
		memcpy(mac, pod_a_mac, 6);
	else
		tenant_mac(client, mac);
	pkt_tcp(&p, gw_a_mac, mac, client, sport, SVC_IP, SVC_PORT, fl, 100, 200);
	if (run_pod(f, &p, &r) < 0)
		return -1;

	kept = cn->has && m->be[cn->id].live && m->be[cn->id].addr == cn->addr &&
	       m->be[cn->id].port == cn->port;
	stale = !kept && cn->has;
	if (stale)
		cn->has = false;	/* the program forgets it */
	if (!kept && m->n > 0 && fl != TCP_SYN) {
		/* no connection to follow: a removed backend's is refused, a
		 * packet of none dropped; nothing written either way */
		/* (a RST is never answered with one) */
		bool refused = stale && !(fl & TCP_RST);

		if (refused ? r.verdict != TC_ACT_REDIRECT || r.trace.action != WEFT_ACT_REJECT
			    : r.verdict != TC_ACT_SHOT ||
				      r.trace.drop_reason != WEFT_DROP_CT_NO_CONNECTION) {
			test_fail(__FILE__, __LINE__, "not a SYN, %s: verdict %u action %u",
				  stale ? "stale" : "no entry", r.verdict, r.trace.action);
			return -1;
		}
		m->no_connection += !refused;
	} else if (!kept && m->n == 0 && (fl & TCP_RST)) {
		/* no backend, and a RST is not answered: dropped */
		if (r.verdict != TC_ACT_SHOT || r.trace.drop_reason != WEFT_DROP_NO_BACKEND) {
			test_fail(__FILE__, __LINE__, "RST, no backend: verdict %u reason %u",
				  r.verdict, r.trace.drop_reason);
			return -1;
		}
		m->no_backend++;
	} else if (!kept && m->n == 0) {
		if (r.verdict != TC_ACT_REDIRECT || r.trace.action != WEFT_ACT_REJECT ||
		    r.out.len != 54 ||
		    l4_of(&r.out)[13] != (fl & TCP_ACK ? TCP_RST : TCP_RST | TCP_ACK)) {
			test_fail(__FILE__, __LINE__, "no backend: verdict %u action %u len %u",
				  r.verdict, r.trace.action, r.out.len);
			return -1;
		}
	} else {
		if (r.verdict != TC_ACT_REDIRECT || r.trace.action != WEFT_ACT_TUNNEL ||
		    ip_of(&r.out)->saddr != client || sport_of(&r.out) != sport ||
		    ip_checksum(ip_of(&r.out), 20) != 0 || l4_checksum(&r.out) != 0) {
			test_fail(__FILE__, __LINE__, "verdict %u action %u", r.verdict,
				  r.trace.action);
			return -1;
		}
		if (kept) {
			if (ip_of(&r.out)->daddr != cn->addr || dport_of(&r.out) != cn->port) {
				test_fail(__FILE__, __LINE__, "connection left backend %u",
					  cn->id);
				return -1;
			}
			if ((fl & (TCP_SYN | TCP_ACK)) == TCP_SYN)
				cn->flags = WEFT_CT_F_SYN;
			else if (fl & TCP_RST)
				cn->has = false;	/* the pair is deleted */
			else if (fl & TCP_FIN)
				cn->flags |= WEFT_CT_F_CLOSING;
			else
				cn->flags = (uint16_t)((cn->flags & ~WEFT_CT_F_SYN) |
						       WEFT_CT_F_ESTABLISHED);
		} else {
			int i;

			for (i = 0; i < m->n; i++)
				if (m->be[m->slots[i]].addr == ip_of(&r.out)->daddr &&
				    m->be[m->slots[i]].port == dport_of(&r.out))
					break;
			if (i == m->n) {
				test_fail(__FILE__, __LINE__, "new connection: backend in no slot");
				return -1;
			}
			cn->has = true;
			cn->id = m->slots[i];
			cn->addr = m->be[cn->id].addr;
			cn->port = m->be[cn->id].port;
			cn->flags = WEFT_CT_F_SYN;
		}
	}

	/* the entries */
	if (ct_fwd(f, client, sport, SVC_IP, SVC_PORT, &e) == 0) {
		if (!cn->has || e.backend_id != cn->id || e.nat_addr != cn->addr ||
		    ntohs(e.nat_port) != cn->port || e.flags != cn->flags) {
			test_fail(__FILE__, __LINE__,
				  "FWD entry: backend %u flags %#x, model %s %u flags %#x",
				  e.backend_id, e.flags, cn->has ? "backend" : "none", cn->id,
				  cn->flags);
			return -1;
		}
	} else if (cn->has) {
		test_fail(__FILE__, __LINE__, "FWD entry missing");
		return -1;
	}
	if (cn->has &&
	    (ct_rev(f, cn->addr, cn->port, client, sport, &e) < 0 ||
	     e.nat_addr != SVC_IP || ntohs(e.nat_port) != SVC_PORT || e.backend_id != cn->id)) {
		test_fail(__FILE__, __LINE__, "REV entry missing or wrong");
		return -1;
	}
	return 0;
}

static int rnd_svc_connections(const struct rnd_svc *m)
{
	int n = 0;

	for (int c = 0; c < RND_SVC_CLIENTS; c++)
		for (int k = 0; k < RND_SVC_PORTS; k++)
			n += m->conn[c][k].has;
	return n;
}

DP_TEST(svc_backend_choice_random_against_model)
{
	uint64_t s = test_seed() * 0x9e3779b97f4a7c15ull | 1;
	struct rnd_svc m;
	int packets = 0;

	memset(&m, 0, sizeof(m));
	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(svc_head_put(f->dp, &cluster_tcp, 0, 0), 0);
	for (int step = 0; step < 800; step++) {
		CHECK_EQ(rnd_svc_step(f, &m, xorshift(&s), &packets), 0);
		if (step % 20 == 19)
			CHECK_EQ(ct_count(f), 2 * rnd_svc_connections(&m));
	}
	CHECK_EQ(ct_count(f), 2 * rnd_svc_connections(&m));
	CHECK(packets > 400);
	CHECK_EQ(drops_of(f, WEFT_DROP_CT_NO_CONNECTION), (uint64_t)m.no_connection);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_BACKEND), (uint64_t)m.no_backend);
	CHECK_EQ(drops_total(f), (uint64_t)(m.no_connection + m.no_backend));
}

/* ---- services: answers over the tunnel (vxlan_ingress on a real device) ----
 *
 *   this test's namespace (as in vxlan_device_delivers_by_tunnel_key)
 *     weftvx0  VXLAN, external, port 4789; the "remote node" is 127.0.0.1
 *     weftpod  veth, host end of pod A ────────── eth0  in a second namespace
 *     weftul0  veth, the underlay, 192.168.1.11/24 ── ul1 in the second namespace
 *
 * The connections are opened by test runs of pod_ingress and node_ingress
 * (skb->ifindex 1 here too); the answers come in over VXLAN and are caught
 * by packet sockets on eth0 (redirect_peer to pod A) and ul1 (redirect_neigh
 * out of the underlay). */

struct svc_netns {
	int here, other;	/* namespace fds */
	int pod_sock, ul_sock;	/* packet sockets in the other namespace */
	struct nl *nl, *nl_other;
};

/* A packet socket bound to name in the namespace other (then back here). */
static int packet_socket_in(int other, int here, const char *name)
{
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_ll sll;
	int fd, err = 0;

	if (setns(other, CLONE_NEWNET) < 0)
		return -errno;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(name);
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0 || sll.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		err = errno ? -errno : -ENODEV;
	if (setns(here, CLONE_NEWNET) < 0 && !err)
		err = -errno;
	if (err < 0 && fd >= 0)
		close(fd);
	return err < 0 ? err : fd;
}

static void drain(int fd)
{
	uint8_t buf[2048];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* The next IPv4 frame of protocol proto on fd (others, e.g. IPv6
 * neighbour discovery, skipped); 0 or -ETIMEDOUT. */
static int capture_ipv4(int fd, uint8_t proto, struct pkt *p)
{
	for (int i = 0; i < 64; i++) {
		ssize_t n;

		memset(p, 0, sizeof(*p));
		n = recv(fd, p->b, sizeof(p->b), 0);
		if (n < 0)
			return -ETIMEDOUT;
		if (n >= 34 && get16(p->b + 12) == ETHERTYPE_IP && ip_of(p)->protocol == proto) {
			p->len = (uint32_t)n;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static int svc_netns_up(struct svc_netns *n)
{
	struct nl_link l;
	int rc;

	n->here = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (n->here < 0 || unshare(CLONE_NEWNET) < 0)
		return -errno;
	n->other = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	rc = n->other < 0 ? -errno : 0;
	if (setns(n->here, CLONE_NEWNET) < 0)
		return -errno;
	if (rc < 0)
		return rc;
	n->nl = nl_open(-1);
	n->nl_other = nl_open(n->other);
	if (!n->nl || !n->nl_other)
		return -errno;
	if ((rc = nl_veth_create(n->nl, "weftpod", "eth0", n->other, 0)) < 0 ||
	    (rc = nl_veth_create(n->nl, "weftul0", "ul1", n->other, 0)) < 0)
		return rc;
	for (int i = 0; i < 2; i++) {
		if ((rc = nl_link_get(n->nl, i ? "weftul0" : "weftpod", &l)) < 0 ||
		    (rc = nl_link_set_up(n->nl, l.ifindex)) < 0 ||
		    (rc = nl_link_get(n->nl_other, i ? "ul1" : "eth0", &l)) < 0 ||
		    (rc = nl_link_set_up(n->nl_other, l.ifindex)) < 0)
			return rc;
	}
	if ((rc = nl_link_get(n->nl, "weftul0", &l)) < 0 ||
	    (rc = nl_addr_add(n->nl, l.ifindex, NODE_IP, 24)) < 0 ||
	    (rc = nl_neigh_replace(n->nl, l.ifindex, OUTSIDE_IP, outside_mac)) < 0)
		return rc;
	n->pod_sock = packet_socket_in(n->other, n->here, "eth0");
	if (n->pod_sock < 0)
		return n->pod_sock;
	n->ul_sock = packet_socket_in(n->other, n->here, "ul1");
	return n->ul_sock < 0 ? n->ul_sock : 0;
}

static void svc_netns_down(struct svc_netns *n)
{
	nl_close(n->nl);
	nl_close(n->nl_other);
	if (n->pod_sock >= 0)
		close(n->pod_sock);
	if (n->ul_sock >= 0)
		close(n->ul_sock);
	if (n->other >= 0)
		close(n->other);
	if (n->here >= 0)
		close(n->here);
}

/* body in a namespace of its own, with n's second one (svc_netns_up, by
 * the body) taken down after it */
static void in_svc_netns(struct fixture *f, void (*body)(struct fixture *, struct svc_netns *))
{
	struct svc_netns n = { -1, -1, -1, -1, NULL, NULL };
	int saved;

	CHECK_EQ(netns_enter(&saved), 0);
	body(f, &n);
	svc_netns_down(&n);
	netns_leave(saved);
}

/* The services' node of seed_services() with the devices above: weftvx0
 * with vxlan_ingress (127.0.0.1 a node), the pod and underlay veths
 * (*pod, *ul).  0 or a negative errno. */
static int svc_vxlan_up(struct fixture *f, struct svc_netns *n, struct nl_link *pod,
			struct nl_link *ul)
{
	struct weft_config cfg = ready_config();
	int vx = vxlan_dev_up(), rc;

	if (vx < 0)
		return vx;
	if ((rc = svc_netns_up(n)) < 0 || (rc = nl_link_get(n->nl, "weftpod", pod)) < 0 ||
	    (rc = nl_link_get(n->nl, "weftul0", ul)) < 0 || (rc = seed_services(f->dp)) < 0)
		return rc;
	cfg.vxlan_ifindex = (uint32_t)vx;
	cfg.underlay_ifindex = (uint32_t)ul->ifindex;
	if ((rc = datapath_config_set(f->dp, &cfg)) < 0 ||
	    (rc = datapath_nodeip_put(f->dp, htonl(INADDR_LOOPBACK), 9)) < 0)
		return rc;
	return datapath_attach_vxlan(f->dp, vx);
}

/* Pod A (which opened its connections through test runs, on the test-run
 * ifindex) is now the pod behind weftpod, where what reaches it is caught. */
static int pod_a_behind(struct fixture *f, const struct nl_link *pod)
{
	struct weft_endpoint a = endpoint((uint32_t)pod->ifindex, VNID_A, pod_a_mac, gw_a_mac);

	return datapath_endpoint_put(f->dp, POD_A_IP, &a);
}

static void svc_vxlan_body(struct fixture *f, struct svc_netns *n)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct weft_ct_entry rev;
	struct nl_link pod, ul;
	struct result r;
	struct pkt p, got;
	uint16_t snat;

	CHECK_EQ(svc_vxlan_up(f, n, &pod, &ul), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);
	CHECK_EQ(svc_put(f->dp, &nodeport_tcp, ids, 1), 0);

	/* pod A opens a connection to the cluster IP: tunnelled to the backend */
	tcp_from_a(&p, 43000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_TUPLE(&r.out, POD_A_IP, 43000, REMOTE_BE_IP, BE_PORT);
	CHECK_EQ(pod_a_behind(f, &pod), 0);

	/* the backend's node sends the answer back; it reaches A from the cluster IP */
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_BE_IP, BE_PORT, POD_A_IP, 43000,
		TCP_SYN | TCP_ACK, 7000, 1001);
	pkt_from_remote(&p);
	drain(n->pod_sock);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, pod.ifindex);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);
	CHECK_EQ(capture_ipv4(n->pod_sock, IPPROTO_TCP, &got), 0);
	CHECK_TUPLE(&got, SVC_IP, SVC_PORT, POD_A_IP, 43000);
	CHECK_FORWARDED(&p, &got);
	CHECK(memcmp(got.b, pod_a_mac, 6) == 0);
	CHECK(memcmp(got.b + 6, gw_a_mac, 6) == 0);
	CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, POD_A_IP, 43000, &rev), 0);
	CHECK_EQ(rev.flags, WEFT_CT_F_ESTABLISHED);

	/* an outside client's NodePort connection, SNATed to the gateway */
	tcp_from_outside(&p, 51000, NODE_IP, NODE_PORT, TCP_SYN);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	snat = sport_of(&r.out);
	CHECK_TUPLE(&r.out, GATEWAY_IP, snat, REMOTE_BE_IP, BE_PORT);

	/* the answer to the gateway port leaves through the underlay, from
	 * the node port, to the client */
	pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat,
		TCP_SYN | TCP_ACK, 8000, 3001);
	pkt_from_remote(&p);
	drain(n->ul_sock);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_UNDERLAY);
	CHECK_EQ(r.trace.ifindex, ul.ifindex);
	CHECK_EQ(capture_ipv4(n->ul_sock, IPPROTO_TCP, &got), 0);
	CHECK_TUPLE(&got, NODE_IP, NODE_PORT, OUTSIDE_IP, 51000);
	CHECK_FORWARDED(&p, &got);
	CHECK(memcmp(got.b, outside_mac, 6) == 0);		/* the neighbour's */
	CHECK(memcmp(got.b + 6, ul.mac, 6) == 0);		/* the underlay's */
	CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat, &rev), 0);
	CHECK_EQ(rev.flags, WEFT_CT_F_ESTABLISHED | WEFT_CT_F_EXTERNAL | WEFT_CT_F_SNAT);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_vxlan_answers_are_translated_back)
{
	in_svc_netns(f, svc_vxlan_body);
}

/* A backend outside the pod network: a host-network pod on this node (its
 * Endpoints address is the node IP), as the Endpoints of a host-network
 * workload or of the API server are.  pod_ingress translates the pod's SYN
 * to NODE_IP:8080 and hands it to the stack; the node's socket answers
 * through the route to the pod (IP/32 dev host end), which no weft
 * program sees.  The answer must still come from the frontend the pod
 * dialled, or the pod's stack does not know it.
 *
 *   this namespace: weftpod (pod_ingress) ── eth0 in the other namespace
 *   (no address: nothing answers there; the packet socket sends and sees) */
static void host_backend_body(struct fixture *f, struct svc_netns *n)
{
	static const uint32_t ids[] = { 60 };
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(BE_PORT) };
	struct nl_link pod, eth0;
	struct weft_endpoint a;
	struct pkt p, got;
	int lfd = -1, one = 1, rc;

	CHECK_EQ(sh("ip link set lo up"), 0);
	CHECK_EQ(svc_netns_up(n), 0);
	CHECK_EQ(nl_link_get(n->nl, "weftpod", &pod), 0);
	CHECK_EQ(nl_link_get(n->nl_other, "eth0", &eth0), 0);
	{
		struct nl_route hr = { .dst = POD_A_IP, .prefixlen = 32, .ifindex = pod.ifindex };

		CHECK_EQ(nl_route_replace(n->nl, &hr), 0);
	}
	CHECK_EQ(nl_neigh_replace(n->nl, pod.ifindex, POD_A_IP, eth0.mac), 0);
	CHECK_EQ(seed_services(f->dp), 0);
	a = endpoint((uint32_t)pod.ifindex, VNID_A, eth0.mac, pod.mac);
	CHECK_EQ(datapath_endpoint_put(f->dp, POD_A_IP, &a), 0);
	CHECK_EQ(datapath_attach_pod(f->dp, pod.ifindex), 0);
	CHECK_EQ(backend_put(f->dp, 60, NODE_IP, BE_PORT, IPPROTO_TCP, false, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	/* the host-network backend: a listening socket of the node */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(lfd >= 0);
	rc = setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	     bind(lfd, (struct sockaddr *)&any, sizeof(any)) < 0 || listen(lfd, 4) < 0 ? -errno : 0;
	if (rc < 0) {
		close(lfd);
		CHECK_EQ(rc, 0);
	}

	/* the pod's SYN to the cluster IP */
	pkt_tcp(&p, pod.mac, eth0.mac, POD_A_IP, 45000, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	drain(n->pod_sock);
	rc = send(n->pod_sock, p.b, p.len, 0) == (ssize_t)p.len ? 0 : -errno;
	if (rc == 0)
		rc = capture_ipv4(n->pod_sock, IPPROTO_TCP, &got);	/* its own SYN, outgoing */
	for (int i = 0; rc == 0 && i < 8 && l4_of(&got)[13] != (TCP_SYN | TCP_ACK); i++)
		rc = capture_ipv4(n->pod_sock, IPPROTO_TCP, &got);
	close(lfd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(l4_of(&got)[13], TCP_SYN | TCP_ACK);	/* the backend got it and answered */
	CHECK_TUPLE(&got, SVC_IP, SVC_PORT, POD_A_IP, 45000);
}

DP_TEST(svc_answer_of_a_backend_outside_the_pod_network_comes_from_the_frontend)
{
	in_svc_netns(f, host_backend_body);
}

/* ---- services from the node itself: svc_egress ----
 *
 * The node's own sockets reach cluster IPs and VIPs through the service
 * device (routes to it, source the gateway): svc_egress translates their
 * packets as pod_ingress does a pod's (test runs: verdict, packet out,
 * the conntrack pair, flagged HOST), and the answers, translated back by
 * pod_ingress or vxlan_ingress, enter the stack through that device
 * (WEFT_ACT_HOST, the frame addressed to its MAC; both in weft_svc_dev).
 *
 * A test run shows neither a redirect's flags nor whether the stack takes
 * what it is given, so svc_real_* run the node's connections for real in
 * a private namespace: a service device with svc_egress, a pod behind a
 * veth with pod_ingress, sockets on both sides. */

#define SVC_IFINDEX	66	/* the service device in test runs, and its MAC */

static const uint8_t svc_mac[6] = { 0x52, 0x54, 0x00, 0x00, 0x05, 0x66 };

static int run_svc(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_svc_prog_fd(f->dp), in, r);
}

/* seed_services, and the service device (ifindex, mac) in weft_svc_dev */
static int seed_host_services(struct datapath *dp, uint32_t ifindex, const uint8_t *mac)
{
	struct weft_svc_dev d;
	int rc;

	if ((rc = seed_services(dp)) < 0)
		return rc;
	memset(&d, 0, sizeof(d));
	d.ifindex = ifindex;
	memcpy(d.mac, mac, 6);
	return datapath_svc_dev_set(dp, &d);
}

/* The node's segment as the stack hands it to the service device: from
 * the gateway, the device's own MAC as source and destination (NOARP). */
static void tcp_from_host(struct pkt *p, uint16_t sport, in_addr_t dst, uint16_t dport,
			  uint8_t flags)
{
	pkt_tcp(p, svc_mac, svc_mac, GATEWAY_IP, sport, dst, dport, flags, 7000, 0);
}

/* out is in translated and sent on (not forwarded: TTL kept): same
 * length, the bytes after the ports unchanged but for the checksum */
#define CHECK_SENT(in, out)                                               \
	do {                                                              \
		CHECK_EQ((out)->len, (in)->len);                          \
		CHECK_EQ(ip_of(out)->ttl, ip_of(in)->ttl);                \
		CHECK_EQ(ip_of(out)->protocol, ip_of(in)->protocol);      \
		CHECK_CSUMS(out);                                         \
		CHECK(memcmp(l4_of(out) + 4, l4_of(in) + 4, 12) == 0);   \
	} while (0)

DP_TEST(svc_host_connection_to_a_local_backend_and_its_answer)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_ct_entry fwd, rev;
	uint8_t be_mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);
	tenant_mac(LOCAL_BE_IP, be_mac);

	/* the SYN goes out of the backend's veth, addressed to it, TTL kept */
	tcp_from_host(&p, 41000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, run_ifindex());	/* the local backend's host end */
	CHECK_TUPLE(&r.out, GATEWAY_IP, 41000, LOCAL_BE_IP, BE_PORT);
	CHECK_SENT(&p, &r.out);
	CHECK(memcmp(r.out.b, be_mac, 6) == 0);
	CHECK(memcmp(r.out.b + 6, gw_a_mac, 6) == 0);
	CHECK_EQ(ct_fwd(f, GATEWAY_IP, 41000, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, LOCAL_BE_IP, BE_PORT, GATEWAY_IP, 41000, BE_LOCAL,
		 WEFT_CT_F_SYN | WEFT_CT_F_HOST);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, GATEWAY_IP, 41000, &rev), 0);
	CHECK_CT(rev, SVC_IP, SVC_PORT, GATEWAY_IP, 41000, BE_LOCAL,
		 WEFT_CT_F_SYN | WEFT_CT_F_HOST);
	CHECK_EQ(ct_count(f), 2);

	/* the backend answers the gateway: pod_ingress makes it come from the
	 * cluster IP and hands it to the stack through the service device */
	tcp_from_local_be(&p, BE_PORT, GATEWAY_IP, 41000, TCP_SYN | TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_HOST);
	CHECK_EQ(r.trace.ifindex, SVC_IFINDEX);
	CHECK_TUPLE(&r.out, SVC_IP, SVC_PORT, GATEWAY_IP, 41000);
	CHECK_SENT(&p, &r.out);
	CHECK(memcmp(r.out.b, svc_mac, 6) == 0);
	CHECK(memcmp(r.out.b + 6, svc_mac, 6) == 0);
	CHECK_EQ(ct_rev(f, LOCAL_BE_IP, BE_PORT, GATEWAY_IP, 41000, &rev), 0);
	CHECK_EQ(rev.flags, WEFT_CT_F_ESTABLISHED | WEFT_CT_F_HOST);

	/* the rest of the connection follows its entry */
	tcp_from_host(&p, 41000, SVC_IP, SVC_PORT, TCP_ACK);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_TUPLE(&r.out, GATEWAY_IP, 41000, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(ct_fwd(f, GATEWAY_IP, 41000, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_EQ(fwd.flags, WEFT_CT_F_ESTABLISHED | WEFT_CT_F_HOST);

	/* a backend's packet that answers nothing translated still reaches
	 * the stack where it is (it is no answer to a connection of ours) */
	tcp_from_local_be(&p, BE_PORT, GATEWAY_IP, 41001, TCP_ACK);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	CHECK_EQ(ct_count(f), 2);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_host_connection_to_a_remote_backend_is_tunnelled_with_vni_0)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct weft_ct_entry fwd, rev;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	tcp_from_host(&p, 41100, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_EQ(r.trace.ifindex, VXLAN_IFINDEX);
	CHECK_EQ(r.trace.tunnel_id, 0);		/* the node's VNID: global */
	CHECK_EQ(r.trace.tunnel_remote, ntohl(REMOTE_NODE_IP));
	CHECK_TUPLE(&r.out, GATEWAY_IP, 41100, REMOTE_BE_IP, BE_PORT);
	CHECK_SENT(&p, &r.out);
	CHECK(memcmp(r.out.b, p.b, 12) == 0);	/* the receiving node sets the MACs */
	CHECK_EQ(ct_fwd(f, GATEWAY_IP, 41100, SVC_IP, SVC_PORT, &fwd), 0);
	CHECK_CT(fwd, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, 41100, BE_REMOTE,
		 WEFT_CT_F_SYN | WEFT_CT_F_HOST);
	CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, 41100, &rev), 0);
	CHECK_CT(rev, SVC_IP, SVC_PORT, GATEWAY_IP, 41100, BE_REMOTE,
		 WEFT_CT_F_SYN | WEFT_CT_F_HOST);

	/* a VIP (the service's LoadBalancer frontend) from the node: every
	 * backend, as for a pod */
	{
		const struct svc vip = { VIP_IP, 80, IPPROTO_TCP, WEFT_SVC_F_LOAD_BALANCER, 0 };

		CHECK_EQ(svc_put(f->dp, &vip, ids, 1), 0);
		tcp_from_host(&p, 41101, VIP_IP, 80, TCP_SYN);
		CHECK_EQ(run_svc(f, &p, &r), 0);
		CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
		CHECK_TUPLE(&r.out, GATEWAY_IP, 41101, REMOTE_BE_IP, BE_PORT);
		CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, 41101, &rev), 0);
		CHECK_CT(rev, VIP_IP, 80, GATEWAY_IP, 41101, BE_REMOTE,
			 WEFT_CT_F_SYN | WEFT_CT_F_HOST);
	}
	CHECK_EQ(ct_count(f), 4);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_host_internal_policy_local_uses_this_nodes_backends)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct svc itp = cluster_tcp;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	itp.flags |= WEFT_SVC_F_ITP_LOCAL;
	CHECK_EQ(svc_put(f->dp, &itp, ids, 3), 0);
	for (int i = 0; i < 30; i++) {
		tcp_from_host(&p, (uint16_t)(41200 + i), SVC_IP, SVC_PORT, TCP_SYN);
		CHECK_EQ(run_svc(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_TUPLE(&r.out, GATEWAY_IP, 41200 + i, LOCAL_BE_IP, BE_PORT);
	}
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_host_without_backends_is_refused_into_the_stack)
{
	struct result r;
	struct pkt p;
	uint8_t *icmp;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(svc_head_put(f->dp, &cluster_tcp, 0, 0), 0);
	CHECK_EQ(svc_head_put(f->dp, &cluster_udp, 0, 0), 0);

	/* a SYN: RST|ACK from the cluster IP to the gateway; the frame keeps
	 * the device's MAC both ways (the stack takes it as its own) */
	pkt_tcp(&p, svc_mac, svc_mac, GATEWAY_IP, 41300, SVC_IP, SVC_PORT, TCP_SYN, 0x100, 0);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(r.trace.ifindex, run_ifindex());	/* skb->ifindex: the device itself */
	CHECK(memcmp(r.out.b, svc_mac, 6) == 0);
	CHECK(memcmp(r.out.b + 6, svc_mac, 6) == 0);
	CHECK_RST(&r.out, SVC_IP, SVC_PORT, GATEWAY_IP, 41300, TCP_RST | TCP_ACK, 0, 0x101);

	/* UDP: port unreachable quoting the datagram as sent */
	pkt_l4(&p, svc_mac, svc_mac, IPPROTO_UDP, GATEWAY_IP, 41301, SVC_IP, 53, 20);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_EQ(ip_of(&r.out)->protocol, IPPROTO_ICMP);
	CHECK_EQ(ip_of(&r.out)->saddr, SVC_IP);
	CHECK_EQ(ip_of(&r.out)->daddr, GATEWAY_IP);
	CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
	icmp = l4_of(&r.out);
	CHECK_EQ(icmp[0], 3);
	CHECK_EQ(icmp[1], 3);
	CHECK_EQ(fold(sum16(0, icmp, 8 + 28)), 0);
	CHECK(memcmp(icmp + 8, p.b + 14, 28) == 0);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 0);
}

/* A backend outside the pod network would answer the gateway where no
 * program sees it: the node's connection is refused and counted, nothing
 * is written (and a ClientIP affinity to it is forgotten). */
DP_TEST(svc_host_backend_outside_the_pod_network_is_refused_and_counted)
{
	static const uint32_t ids[] = { 60 };
	struct svc sticky = cluster_tcp;
	struct weft_affinity_key ak = { .svc_id = SVC_ID, .client = GATEWAY_IP };
	struct weft_affinity av;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(backend_put(f->dp, 60, OUTSIDE_IP, BE_PORT, IPPROTO_TCP, false, SVC_ID), 0);
	sticky.flags |= WEFT_SVC_F_AFFINITY;
	sticky.affinity_timeout = 60;
	CHECK_EQ(svc_put(f->dp, &sticky, ids, 1), 0);

	tcp_from_host(&p, 41400, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_REJECT);
	CHECK_RST(&r.out, SVC_IP, SVC_PORT, GATEWAY_IP, 41400, TCP_RST | TCP_ACK, 0, 7001);
	CHECK_EQ(drops_of(f, WEFT_DROP_EXTERNAL_BACKEND), 1);
	CHECK_EQ(drops_total(f), 1);
	CHECK_EQ(ct_count(f), 0);
	CHECK(bpf_map_lookup_elem(pinned_map_fd(f, "weft_affinity"), &ak, &av) != 0);

	/* a pod's connection to the same backend is its business (pod_egress) */
	tcp_from_a(&p, 41401, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_TUPLE(&r.out, POD_A_IP, 41401, OUTSIDE_IP, BE_PORT);
	CHECK_EQ(ct_count(f), 2);
}

DP_TEST(svc_host_what_is_no_frontend_is_dropped_and_counted)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct weft_config cfg = ready_config();
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_host_services(f->dp, SVC_IFINDEX, svc_mac), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	/* another port of the cluster IP; an address no service has */
	tcp_from_host(&p, 41500, SVC_IP, SVC_PORT + 1, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SERVICE);
	tcp_from_host(&p, 41501, IP(10, 96, 0, 99), SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SERVICE);

	/* a ping of the cluster IP */
	pkt_ipv4_ext(&p, svc_mac, svc_mac, GATEWAY_IP, SVC_IP, 64, IPPROTO_ICMP, 5, 0);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SERVICE);

	/* forwarded to the cluster IP (an outside client's, routed here by a
	 * node): not the gateway's, never translated */
	pkt_tcp(&p, svc_mac, svc_mac, OUTSIDE_IP, 41502, SVC_IP, SVC_PORT, TCP_SYN, 1, 0);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SERVICE);
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_SERVICE), 4);
	CHECK_EQ(ct_count(f), 0);

	/* not IPv4 */
	pkt_ipv6(&p);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_UNSUPPORTED_L3);

	/* a half-written config translates nothing */
	cfg.version = 0;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	tcp_from_host(&p, 41503, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NOT_READY);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 6);
}

/* the service device as the agent makes it: a dummy, else an ifb (a
 * kernel without the dummy driver), NOARP, up */
static int svc_device_up(struct nl *nl, const char *name, struct nl_link *l)
{
	static const char *const kinds[] = { "dummy", "ifb" };
	int rc = -EOPNOTSUPP;

	for (size_t i = 0; i < 2 && rc == -EOPNOTSUPP; i++)
		rc = nl_link_create(nl, name, kinds[i], 0);
	if (rc < 0)
		return rc;
	if ((rc = nl_link_get(nl, name, l)) < 0 ||
	    (rc = nl_link_set_noarp(nl, l->ifindex, true)) < 0 ||
	    (rc = nl_link_set_up(nl, l->ifindex)) < 0)
		return rc;
	return nl_link_get(nl, name, l);
}

/* The answer of a backend on another node comes over the tunnel:
 * vxlan_ingress translates it back and hands it to the service device's
 * ingress, where a packet socket sees it arrive from the cluster IP. */
static void svc_host_vxlan_body(struct fixture *f, struct nl *nl)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct weft_config cfg = ready_config();
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct timeval tv = { .tv_sec = 2 };
	struct weft_ct_entry rev;
	struct nl_link svc;
	struct result r;
	struct pkt p, got;
	int vx, sock = -1, rc;

	vx = vxlan_dev_up();
	CHECK(vx > 0);
	CHECK_EQ(svc_device_up(nl, "weftsvc0", &svc), 0);
	CHECK_EQ(seed_host_services(f->dp, (uint32_t)svc.ifindex, svc.mac), 0);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	cfg.vxlan_ifindex = (uint32_t)vx;
	CHECK_EQ(datapath_config_set(f->dp, &cfg), 0);
	CHECK_EQ(datapath_nodeip_put(f->dp, htonl(INADDR_LOOPBACK), 9), 0);
	CHECK_EQ(datapath_attach_vxlan(f->dp, vx), 0);
	CHECK_EQ(datapath_attach_svc(f->dp, svc.ifindex), 0);
	CHECK_EQ(sh("tc filter show dev weftsvc0 egress | grep -q svc_egress"), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);

	tcp_from_host(&p, 43100, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run_svc(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_TUPLE(&r.out, GATEWAY_IP, 43100, REMOTE_BE_IP, BE_PORT);

	sock = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	CHECK(sock >= 0);
	sll.sll_ifindex = svc.ifindex;
	rc = bind(sock, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	     setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ? -errno : 0;
	if (rc == 0) {
		pkt_tcp(&p, remote_gw_mac, remote_pod_mac, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, 43100,
			TCP_SYN | TCP_ACK, 9000, 7001);
		pkt_from_remote(&p);
		drain(sock);
		rc = vxlan_send(f, VNID_A, &p, &r);
		if (rc == 0)
			rc = capture_ipv4(sock, IPPROTO_TCP, &got);
	}
	close(sock);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_HOST);
	CHECK_EQ(r.trace.ifindex, svc.ifindex);
	CHECK_EQ(r.trace.tunnel_remote, INADDR_LOOPBACK);
	CHECK_TUPLE(&got, SVC_IP, SVC_PORT, GATEWAY_IP, 43100);
	CHECK_SENT(&p, &got);
	CHECK(memcmp(got.b, svc.mac, 6) == 0);		/* the stack takes it as its own */
	CHECK_EQ(ct_rev(f, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, 43100, &rev), 0);
	CHECK_EQ(rev.flags, WEFT_CT_F_ESTABLISHED | WEFT_CT_F_HOST);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(svc_host_answer_over_the_tunnel_enters_by_the_service_device)
{
	struct nl *nl = NULL;
	int saved;

	CHECK_EQ(netns_enter(&saved), 0);
	nl = nl_open(-1);
	if (nl)
		svc_host_vxlan_body(f, nl);
	else
		test_fail(__FILE__, __LINE__, "nl_open: %s", strerror(errno));
	nl_close(nl);
	netns_leave(saved);
}

/* A socket of this namespace (the node) connecting to addr:port: 0 when
 * connected within a second, else -errno (ECONNREFUSED for a refusal,
 * EINPROGRESS when nothing answered).  *fd gets the socket when connected. */
static int host_connect(int type, in_addr_t addr, uint16_t port, int timeout_ms, int *fd)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = addr };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	char buf[8] = "who";
	int s, rc = 0;

	*fd = -1;
	s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(s, (struct sockaddr *)&to, sizeof(to)) < 0)
		rc = -errno;
	if (rc == 0 && type == SOCK_DGRAM) {	/* an ICMP refusal shows on the next call */
		if (send(s, buf, 4, 0) < 0 || recv(s, buf, sizeof(buf), 0) < 0)
			rc = -errno;
	}
	if (rc < 0) {
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

/*   this namespace (the node): lo 10.128.0.1 (the gateway), weftsvc0 (the
 *     service device, svc_egress; 10.96.0.0/16 dev weftsvc0 src gateway),
 *     weftpod (host end of the backend's veth: pod_ingress, pod_egress)
 *   the other namespace (the backend pod): eth0 10.128.0.40, listening
 *     on 8080; the gateway on-link */
static void svc_real_body(struct fixture *f, struct svc_netns *n)
{
	static const uint32_t ids[] = { BE_LOCAL };
	const struct svc empty = { SVC_IP, SVC_PORT + 1, IPPROTO_TCP, WEFT_SVC_F_CLUSTER_IP, 0 };
	const struct svc outside = { SVC_IP, SVC_PORT + 3, IPPROTO_TCP, WEFT_SVC_F_CLUSTER_IP, 0 };
	const uint32_t ext[] = { 60 };
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(BE_PORT) };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	struct nl_route r = { .dst = IP(10, 96, 0, 0), .prefixlen = 16, .src = GATEWAY_IP };
	struct nl_link svc, pod, eth0;
	struct weft_endpoint be;
	struct timespec t0, t1;
	int lfd = -1, cfd = -1, afd = -1, one = 1, rc;
	long ms;

	CHECK_EQ(sh("ip link set lo up && ip addr add 10.128.0.1/32 dev lo"), 0);
	CHECK_EQ(svc_netns_up(n), 0);
	CHECK_EQ(svc_device_up(n->nl, "weftsvc0", &svc), 0);
	CHECK_EQ(nl_link_get(n->nl, "weftpod", &pod), 0);
	CHECK_EQ(nl_link_get(n->nl_other, "eth0", &eth0), 0);
	r.ifindex = svc.ifindex;
	CHECK_EQ(nl_route_replace(n->nl, &r), 0);
	/* the backend pod: its address, the gateway on-link through the veth */
	{
		struct nl_route gw = { .dst = GATEWAY_IP, .prefixlen = 32, .ifindex = eth0.ifindex };

		CHECK_EQ(nl_addr_add(n->nl_other, eth0.ifindex, LOCAL_BE_IP, 32), 0);
		CHECK_EQ(nl_route_replace(n->nl_other, &gw), 0);
		CHECK_EQ(nl_neigh_replace(n->nl_other, eth0.ifindex, GATEWAY_IP, pod.mac), 0);
	}
	CHECK_EQ(seed_host_services(f->dp, (uint32_t)svc.ifindex, svc.mac), 0);
	be = endpoint((uint32_t)pod.ifindex, VNID_A, eth0.mac, pod.mac);
	CHECK_EQ(datapath_endpoint_put(f->dp, LOCAL_BE_IP, &be), 0);
	CHECK_EQ(datapath_attach_pod(f->dp, pod.ifindex), 0);
	CHECK_EQ(datapath_attach_svc(f->dp, svc.ifindex), 0);
	CHECK_EQ(backends_put3(f->dp, IPPROTO_TCP), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_tcp, ids, 1), 0);
	CHECK_EQ(svc_head_put(f->dp, &empty, 0, 0), 0);
	CHECK_EQ(backend_put(f->dp, 60, OUTSIDE_IP, BE_PORT, IPPROTO_TCP, false, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &outside, ext, 1), 0);

	/* the backend listens in its namespace */
	CHECK_EQ(setns(n->other, CLONE_NEWNET), 0);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rc = lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	     bind(lfd, (struct sockaddr *)&any, sizeof(any)) < 0 || listen(lfd, 4) < 0 ? -errno : 0;
	if (setns(n->here, CLONE_NEWNET) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		if (lfd >= 0)
			close(lfd);
		CHECK_EQ(rc, 0);
	}

	/* the node connects to the cluster IP: the backend sees the gateway,
	 * the node's socket the cluster IP */
	rc = host_connect(SOCK_STREAM, SVC_IP, SVC_PORT, 2000, &cfd);
	if (rc == 0) {
		struct timeval tv = { .tv_sec = 2 };

		setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		afd = accept(lfd, (struct sockaddr *)&peer, &plen);
		rc = afd < 0 ? -errno : 0;
	}
	if (afd >= 0)
		close(afd);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(peer.sin_addr.s_addr, GATEWAY_IP);

	/* refused at once: no backends (RST), a backend outside the pod
	 * network (RST, counted) */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(host_connect(SOCK_STREAM, SVC_IP, SVC_PORT + 1, 2000, &cfd), -ECONNREFUSED);
	CHECK_EQ(host_connect(SOCK_STREAM, SVC_IP, SVC_PORT + 3, 2000, &cfd), -ECONNREFUSED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms < 1000);
	CHECK_EQ(drops_of(f, WEFT_DROP_EXTERNAL_BACKEND), 1);

	/* UDP without backends: port unreachable */
	CHECK_EQ(svc_head_put(f->dp, &cluster_udp, 0, 0), 0);
	CHECK_EQ(host_connect(SOCK_DGRAM, SVC_IP, 53, 2000, &cfd), -ECONNREFUSED);

	/* no frontend: dropped, counted, unanswered */
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_SERVICE), 0);
	rc = host_connect(SOCK_STREAM, SVC_IP, SVC_PORT + 2, 300, &cfd);
	if (cfd >= 0)
		close(cfd);
	CHECK(rc == -EINPROGRESS || rc == -ETIMEDOUT || rc == -EAGAIN);
	CHECK(drops_of(f, WEFT_DROP_NO_SERVICE) >= 1);
}

DP_TEST(svc_real_node_connects_and_is_refused_through_the_service_device)
{
	in_svc_netns(f, svc_real_body);
}

/* ---- ICMP errors, fragments and the cluster network from pods ---- */

#define ICMP_UNREACH		3
#define ICMP_FRAG_NEEDED	4
#define OUT_HOST_IP		IP(192, 0, 2, 7)	/* a host outside the cluster */

static uint8_t *icmp_of(struct pkt *p)
{
	return l4_of(p);
}

static struct iphdr *quote_of(struct pkt *p)
{
	return (struct iphdr *)(icmp_of(p) + 8);
}

/* the ICMP checksum over the whole message: 0 when right */
static uint16_t icmp_checksum(struct pkt *p)
{
	return fold(sum16(0, icmp_of(p), ntohs(ip_of(p)->tot_len) - ip_of(p)->ihl * 4u));
}

/* An ICMP error from (src_mac, src) to dst quoting a UDP header
 * qsrc:qsport -> qdst:qdport; every checksum valid. */
static void pkt_icmp_error(struct pkt *p, const uint8_t *src_mac, in_addr_t src, in_addr_t dst,
			   uint8_t type, uint8_t code, in_addr_t qsrc, uint16_t qsport,
			   in_addr_t qdst, uint16_t qdport)
{
	struct iphdr *ip, *q;
	uint8_t *icmp, *udp;

	pkt_ipv4_ext(p, gw_a_mac, src_mac, src, dst, 64, IPPROTO_ICMP, 5, 0);
	ip = ip_of(p);
	ip->tot_len = htons(20 + 8 + 20 + 8);
	ip->check = 0;
	ip->check = htons(ip_checksum(ip, 20));
	icmp = icmp_of(p);
	memset(icmp, 0, 8 + 20 + 8);
	icmp[0] = type;
	icmp[1] = code;
	if (type == ICMP_UNREACH && code == ICMP_FRAG_NEEDED)
		put16(icmp + 6, 552);	/* next-hop MTU */
	q = quote_of(p);
	q->version = 4;
	q->ihl = 5;
	q->tot_len = htons(1400);
	q->id = htons(77);
	q->ttl = 63;
	q->protocol = IPPROTO_UDP;
	q->saddr = qsrc;
	q->daddr = qdst;
	q->check = htons(ip_checksum(q, 20));
	udp = icmp + 8 + 20;
	put16(udp, qsport);
	put16(udp + 2, qdport);
	put16(udp + 4, 1380);
	put16(udp + 6, 0x1234);
	put16(icmp + 2, icmp_checksum(p));
	p->len = 14 + 20 + 8 + 20 + 8;
}

static void tenant_error(struct pkt *p, in_addr_t src, in_addr_t dst, in_addr_t qsrc,
			 in_addr_t qdst)
{
	uint8_t mac[6];

	tenant_mac(src, mac);
	pkt_icmp_error(p, mac, src, dst, ICMP_UNREACH, 3, qsrc, 9999, qdst, 40000);
}

DP_TEST(pod_icmp_error_not_about_its_own_packet_is_dropped)
{
	struct weft_ipcache_entry red = { .node_ip = NODE_IP, .vnid = VNID_RED };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	CHECK_EQ(datapath_ipcache_put(f->dp, RED_DST_IP, &red), 0);

	/* the attack: quoting a flow of the node's masquerade (a red pod's) */
	tenant_error(&p, BLUE_SRC_IP, NODE_IP, NODE_IP, OUT_HOST_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	/* frag-needed, quoting a red pod as the receiver */
	pkt_icmp_error(&p, (uint8_t[]){ 0x0a, 0x58, 10, 128, 0, 21 }, BLUE_SRC_IP, NODE_IP,
		       ICMP_UNREACH, ICMP_FRAG_NEEDED, OUT_HOST_IP, 9999, RED_DST_IP, 40000);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	/* about the pod's own packet, but not sent back to its source */
	tenant_error(&p, BLUE_SRC_IP, NODE_IP, OUT_HOST_IP, BLUE_SRC_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	/* time exceeded and parameter problem are errors too */
	tenant_error(&p, BLUE_SRC_IP, NODE_IP, NODE_IP, OUT_HOST_IP);
	icmp_of(&p)[0] = 11;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	icmp_of(&p)[0] = 12;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	/* about a packet from a pod of another tenant (it could not have
	 * been received): the quoted pair fails the VNID rule */
	tenant_error(&p, BLUE_SRC_IP, RED_DST_IP, RED_DST_IP, BLUE_SRC_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	CHECK_EQ(drops_of(f, WEFT_DROP_ICMP_FORGED), 6);
	CHECK_EQ(drops_total(f), 6);

	/* an echo request quoting nothing is not an error: not looked at */
	tenant_error(&p, BLUE_SRC_IP, NODE_IP, NODE_IP, OUT_HOST_IP);
	icmp_of(&p)[0] = 8;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
}

DP_TEST(pod_icmp_error_about_its_own_packet_passes)
{
	struct weft_ipcache_entry def = { .node_ip = NODE_IP, .vnid = 0 };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	CHECK_EQ(datapath_ipcache_put(f->dp, DEF_DST_IP, &def), 0);

	/* to a host outside: to the stack, untouched */
	tenant_error(&p, BLUE_SRC_IP, OUT_HOST_IP, OUT_HOST_IP, BLUE_SRC_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(r.trace.action, WEFT_ACT_PASS);
	CHECK(memcmp(r.out.b, p.b, p.len) == 0);
	/* to a pod it may talk to (default, VNID 0), here */
	tenant_error(&p, BLUE_SRC_IP, DEF_DST_IP, DEF_DST_IP, BLUE_SRC_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, 53);
	CHECK_EQ(icmp_checksum(&r.out), 0);
	/* to the node (its health check): the stack */
	tenant_error(&p, BLUE_SRC_IP, GATEWAY_IP, GATEWAY_IP, BLUE_SRC_IP);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_icmp_error_with_a_truncated_quote_is_dropped)
{
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	/* the quoted IP header cut short */
	for (int cut = 1; cut <= 24; cut += 4) {
		tenant_error(&p, BLUE_SRC_IP, OUT_HOST_IP, OUT_HOST_IP, BLUE_SRC_IP);
		ip_of(&p)->tot_len = htons((uint16_t)(20 + 8 + 20 + 8 - cut));
		ip_of(&p)->check = 0;
		ip_of(&p)->check = htons(ip_checksum(ip_of(&p), 20));
		p.len -= (uint32_t)cut;
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_TRUNCATED);
	}
	/* a quoted header length that runs past the message */
	tenant_error(&p, BLUE_SRC_IP, OUT_HOST_IP, OUT_HOST_IP, BLUE_SRC_IP);
	quote_of(&p)->ihl = 15;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_TRUNCATED);
	/* not IPv4, or a length below the minimum */
	quote_of(&p)->ihl = 4;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_TRUNCATED);
	quote_of(&p)->ihl = 5;
	quote_of(&p)->version = 6;
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_TRUNCATED);
	CHECK_EQ(drops_of(f, WEFT_DROP_ICMP_TRUNCATED), 9);
	/* no room for the ICMP header itself */
	tenant_error(&p, BLUE_SRC_IP, OUT_HOST_IP, OUT_HOST_IP, BLUE_SRC_IP);
	ip_of(&p)->tot_len = htons(20 + 4);
	ip_of(&p)->check = 0;
	ip_of(&p)->check = htons(ip_checksum(ip_of(&p), 20));
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_MALFORMED);
}

/* seed_services() with the UDP backends, BE_LOCAL (a pod here) behind
 * cluster_udp, and pod A's datagram from sport to the cluster IP
 * delivered to it.  0, a negative errno, or -EPROTO when it went astray. */
static int udp_svc_local(struct fixture *f, uint16_t sport)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct result r;
	struct pkt p;
	int rc;

	if ((rc = seed_services(f->dp)) < 0 || (rc = backends_put3(f->dp, IPPROTO_UDP)) < 0 ||
	    (rc = svc_put(f->dp, &cluster_udp, ids, 1)) < 0)
		return rc;
	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, sport, SVC_IP, 53, 12);
	if ((rc = run_pod(f, &p, &r)) < 0)
		return rc;
	if (r.verdict != TC_ACT_REDIRECT || ip_of(&r.out)->daddr != LOCAL_BE_IP ||
	    dport_of(&r.out) != BE_PORT)
		return -EPROTO;
	return 0;
}

DP_TEST(svc_backend_icmp_error_is_translated_to_the_frontend)
{
	uint8_t be_mac[6];
	struct result r;
	struct pkt p;

	/* pod A's datagram to the service reached the local backend */
	CHECK_EQ(udp_svc_local(f, 40300), 0);
	tenant_mac(LOCAL_BE_IP, be_mac);

	/* the backend says "fragmentation needed" about it */
	pkt_icmp_error(&p, be_mac, LOCAL_BE_IP, POD_A_IP, ICMP_UNREACH, ICMP_FRAG_NEEDED,
		       POD_A_IP, 40300, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, run_ifindex());	/* pod A */
	CHECK_EQ(ip_of(&r.out)->saddr, SVC_IP);
	CHECK_EQ(ip_of(&r.out)->daddr, POD_A_IP);
	CHECK_EQ(quote_of(&r.out)->saddr, POD_A_IP);
	CHECK_EQ(quote_of(&r.out)->daddr, SVC_IP);
	CHECK_EQ(get16(icmp_of(&r.out) + 8 + 20), 40300);
	CHECK_EQ(get16(icmp_of(&r.out) + 8 + 20 + 2), 53);
	CHECK_EQ(get16(icmp_of(&r.out) + 6), 552);	/* the MTU kept */
	CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
	CHECK_EQ(ip_checksum(quote_of(&r.out), 20), 0);
	CHECK_EQ(icmp_checksum(&r.out), 0);
	CHECK_EQ(r.out.len, p.len);

	/* an error about a flow no service translated stays as it is */
	pkt_icmp_error(&p, be_mac, LOCAL_BE_IP, POD_A_IP, ICMP_UNREACH, ICMP_FRAG_NEEDED,
		       POD_A_IP, 40301, LOCAL_BE_IP, BE_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(ip_of(&r.out)->saddr, LOCAL_BE_IP);
	CHECK_EQ(quote_of(&r.out)->daddr, LOCAL_BE_IP);
	CHECK_EQ(drops_total(f), 0);
}

/* r: a later fragment of pod A's, to the service, went the way of its
 * first: tunnelled to the backend's node, to the backend, its IP header
 * checksum right */
#define CHECK_FOLLOWED_TO_REMOTE_BACKEND(r)                                 \
	do {                                                                \
		CHECK_EQ((r)->verdict, TC_ACT_REDIRECT);                    \
		CHECK_EQ((r)->trace.action, WEFT_ACT_TUNNEL);               \
		CHECK_EQ((r)->trace.tunnel_remote, ntohl(REMOTE_NODE_IP));  \
		CHECK_EQ(ip_of(&(r)->out)->saddr, POD_A_IP);                \
		CHECK_EQ(ip_of(&(r)->out)->daddr, REMOTE_BE_IP);            \
		CHECK_EQ(ip_checksum(ip_of(&(r)->out), 20), 0);             \
	} while (0)

/* Make p a fragment: IP ID id, at offset (8-byte units), more: more
 * fragments follow; the IP checksum made right again. */
static void pkt_fragment(struct pkt *p, uint16_t id, uint16_t offset, bool more)
{
	ip_of(p)->id = htons(id);
	ip_of(p)->frag_off = htons((uint16_t)((more ? IP_MF : 0) | offset));
	ip_of(p)->check = 0;
	ip_of(p)->check = htons(ip_checksum(ip_of(p), 20));
}

/* A fragment of a UDP datagram from pod A, 32 bytes of it (4 units of
 * 8): at offset (in units), more: more fragments follow.  Offset 0 holds
 * the UDP header. */
static void udp_fragment_at(struct pkt *p, in_addr_t dst, uint16_t dport, uint16_t id,
			    uint16_t offset, bool more)
{
	pkt_l4(p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, 40400, dst, dport, 24);
	pkt_fragment(p, id, offset, more);
}

/* The first fragment (offset 0, MF), or the last one right after it
 * (offset 32 bytes, the datagram's end). */
static void udp_fragment(struct pkt *p, in_addr_t dst, uint16_t dport, uint16_t id, bool first)
{
	udp_fragment_at(p, dst, dport, id, first ? 0 : 4, first);
}

DP_TEST(pod_later_fragments_follow_their_first)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_udp, IPPROTO_UDP, ids, 1), 0);

	/* to a service: the first fragment is translated and tunnelled ... */
	udp_fragment(&p, SVC_IP, 53, 901, true);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_EQ(ip_of(&r.out)->daddr, REMOTE_BE_IP);
	/* ... and so is the later one, by the record */
	udp_fragment(&p, SVC_IP, 53, 901, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_FOLLOWED_TO_REMOTE_BACKEND(&r);
	CHECK(memcmp(l4_of(&r.out), l4_of(&p), 8 + 24) == 0);	/* payload untouched */

	/* to the outside: both to the stack */
	udp_fragment(&p, OUT_HOST_IP, 9999, 902, true);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	udp_fragment(&p, OUT_HOST_IP, 9999, 902, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK(memcmp(r.out.b, p.b, p.len) == 0);
	CHECK_EQ(drops_total(f), 0);

	/* a refused first fragment leaves its later ones orphans */
	udp_fragment(&p, OUT_HOST_IP, VXLAN_PORT, 903, true);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_TUNNEL_INJECT);
	udp_fragment(&p, OUT_HOST_IP, VXLAN_PORT, 903, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_SHOT);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
}

DP_TEST(pod_orphan_later_fragments_are_dropped)
{
	struct result r;
	struct pkt p;
	int n = 0;

	CHECK_EQ(seed_services(f->dp), 0);
	/* no first fragment at all, to every kind of destination */
	for (uint16_t id = 1; id <= 64; id++) {
		udp_fragment(&p, id % 2 ? SVC_IP : NODE_IP, 53, id, false);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
		n++;
	}
	/* a first fragment of another datagram (ID, destination) is no
	 * licence: the record holds the whole identity */
	udp_fragment(&p, OUT_HOST_IP, 9999, 500, true);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	udp_fragment(&p, OUT_HOST_IP, 9999, 501, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
	udp_fragment(&p, NODE_IP, 9999, 500, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_FRAG_ORPHAN);
	CHECK_EQ(drops_of(f, WEFT_DROP_FRAG_ORPHAN), n + 2);
}

/* ---- fragments: the open-datagram limit and the slots (lib/frag.h) ---- */

/* lib/frag.h's home slot of a datagram (daddr as sent, id host order) */
static uint32_t frag_home(in_addr_t daddr, uint16_t id, uint8_t proto)
{
	uint32_t h = (uint32_t)daddr ^ ((uint32_t)htons(id) << 8) ^ proto;

	h ^= h >> 16;
	h *= 0x45d9f3b;
	h ^= h >> 16;
	return h & (WEFT_FRAG_SLOTS - 1);
}

/* The record of sender saddr in slot of the pinned map (weft_frags or
 * weft_rev_frags).  0 or a negative errno. */
static int frag_get(struct fixture *f, const char *map, in_addr_t saddr, uint32_t slot,
		    struct weft_frag *v)
{
	struct weft_frag_key k = { .saddr = saddr, .slot = slot };
	int fd = pinned_map_fd(f, map), rc;

	if (fd < 0)
		return fd;
	memset(v, 0, sizeof(*v));
	rc = bpf_map_lookup_elem(fd, &k, v) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static int frag_put(struct fixture *f, const char *map, in_addr_t saddr, uint32_t slot,
		    const struct weft_frag *v)
{
	struct weft_frag_key k = { .saddr = saddr, .slot = slot };
	int fd = pinned_map_fd(f, map), rc;

	if (fd < 0)
		return fd;
	rc = bpf_map_update_elem(fd, &k, v, BPF_EXIST) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* The slot of pod A's weft_frags holding datagram id, or -1. */
static int frag_slot_of(struct fixture *f, uint16_t id)
{
	struct weft_frag v;

	for (uint32_t slot = 0; slot < WEFT_FRAG_SLOTS; slot++)
		if (frag_get(f, "weft_frags", POD_A_IP, slot, &v) == 0 && v.id == htons(id))
			return (int)slot;
	return -1;
}

/* pod A's fragment through pod_ingress: the verdict, and the drop reason
 * when it is a drop */
#define CHECK_FRAGMENT(f, p, verdict_, reason)                             \
	do {                                                               \
		struct result r_;                                          \
		CHECK_EQ(run_pod((f), (p), &r_), 0);                       \
		CHECK_EQ(r_.verdict, (verdict_));                          \
		if ((verdict_) == TC_ACT_SHOT)                             \
			CHECK_EQ(r_.trace.drop_reason, (reason));          \
	} while (0)

/* Datagrams pod A opens (first fragment) to OUT_HOST_IP:9999 with IDs
 * first .. first + n - 1, each let through. */
static void open_datagrams(struct fixture *f, uint16_t first, int n)
{
	struct pkt p;

	for (int i = 0; i < n; i++) {
		udp_fragment(&p, OUT_HOST_IP, 9999, (uint16_t)(first + i), true);
		CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	}
}

DP_TEST(pod_first_fragment_beyond_16_open_datagrams_is_dropped)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &cluster_udp, IPPROTO_UDP, ids, 1), 0);

	/* 16 datagrams opened and never finished: every slot in flight */
	open_datagrams(f, 1, WEFT_FRAG_SLOTS);
	for (uint16_t id = 1; id <= WEFT_FRAG_SLOTS; id++)
		CHECK(frag_slot_of(f, id) >= 0);
	CHECK_EQ(drops_total(f), 0);

	/* the 17th first fragment: dropped, counted */
	udp_fragment(&p, OUT_HOST_IP, 9999, 100, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_LIMIT);
	CHECK_EQ(drops_of(f, WEFT_DROP_FRAG_LIMIT), 1);
	CHECK_EQ(frag_slot_of(f, 100), -1);
	/* to a service, refused before it is translated: no conntrack entry */
	udp_fragment(&p, SVC_IP, 53, 101, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_LIMIT);
	CHECK_EQ(ct_count(f), 0);
	/* its later fragment has no record: an orphan */
	udp_fragment(&p, OUT_HOST_IP, 9999, 100, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_ORPHAN);
	/* an unfragmented packet does not care */
	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, 40400, OUT_HOST_IP, 9999, 24);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	/* the first fragment of an open datagram again: it keeps its slot */
	udp_fragment(&p, OUT_HOST_IP, 9999, 5, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);

	/* the open datagrams' middle fragments follow their records */
	for (uint16_t id = 1; id <= WEFT_FRAG_SLOTS; id++) {
		udp_fragment_at(&p, OUT_HOST_IP, 9999, id, 4, true);
		CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	}
	/* a last fragment after a gap (bytes 64..95 never sent) frees
	 * nothing: whoever reassembles still waits for the middle */
	udp_fragment_at(&p, OUT_HOST_IP, 9999, 1, 12, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	udp_fragment(&p, OUT_HOST_IP, 9999, 102, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_LIMIT);

	/* the last fragment of datagram 2, in order: its slot is free ... */
	udp_fragment_at(&p, OUT_HOST_IP, 9999, 2, 8, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	/* ... and a new datagram takes it, one only */
	udp_fragment(&p, OUT_HOST_IP, 9999, 103, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(frag_slot_of(f, 2), -1);
	CHECK(frag_slot_of(f, 103) >= 0);
	udp_fragment(&p, OUT_HOST_IP, 9999, 104, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_LIMIT);
	/* another pod has slots of its own */
	pkt_l4(&p, gw_b_mac, (uint8_t[]){ 0x0a, 0x58, 10, 128, 0, 21 }, IPPROTO_UDP, BLUE_SRC_IP,
	       40400, OUT_HOST_IP, 9999, 24);
	pkt_fragment(&p, 1, 0, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(drops_of(f, WEFT_DROP_FRAG_LIMIT), 4);
	CHECK_EQ(drops_of(f, WEFT_DROP_FRAG_ORPHAN), 1);
	CHECK_EQ(drops_total(f), 5);
}

DP_TEST(pod_fragmented_datagrams_in_a_stream_never_reach_the_limit)
{
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	/* 300 datagrams of three fragments each, as a pod's stack sends a
	 * stream of them, to two destinations */
	for (uint16_t id = 1; id <= 300; id++) {
		in_addr_t dst = id % 2 ? OUT_HOST_IP : NODE_IP;

		udp_fragment_at(&p, dst, 9999, id, 0, true);
		CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
		udp_fragment_at(&p, dst, 9999, id, 4, true);
		CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
		udp_fragment_at(&p, dst, 9999, id, 8, false);
		CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	}
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_expired_fragment_slot_is_reused)
{
	struct weft_frag v;
	struct pkt p;
	int slot;

	CHECK_EQ(seed_node(f->dp), 0);
	open_datagrams(f, 1, WEFT_FRAG_SLOTS);
	udp_fragment(&p, OUT_HOST_IP, 9999, 200, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_LIMIT);

	/* datagram 7 opened longer ago than WEFT_FRAG_TICKS */
	slot = frag_slot_of(f, 7);
	CHECK(slot >= 0);
	CHECK_EQ(frag_get(f, "weft_frags", POD_A_IP, (uint32_t)slot, &v), 0);
	CHECK(recent(v.last_seen));
	CHECK_EQ(v.flags, 0);
	v.last_seen = now_ticks() - WEFT_FRAG_TICKS - 2;
	CHECK_EQ(frag_put(f, "weft_frags", POD_A_IP, (uint32_t)slot, &v), 0);

	/* its slot takes the next datagram, which its fragments follow */
	udp_fragment(&p, OUT_HOST_IP, 9999, 200, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(frag_slot_of(f, 200), slot);
	udp_fragment(&p, OUT_HOST_IP, 9999, 200, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	/* datagram 7's are orphans now; the others still follow */
	udp_fragment(&p, OUT_HOST_IP, 9999, 7, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_SHOT, WEFT_DROP_FRAG_ORPHAN);
	udp_fragment(&p, OUT_HOST_IP, 9999, 8, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(drops_of(f, WEFT_DROP_FRAG_LIMIT), 1);
	CHECK_EQ(drops_total(f), 2);
}

DP_TEST(pod_later_fragments_find_their_first_in_another_slot)
{
	static const uint32_t ids[] = { BE_REMOTE };
	uint32_t home = frag_home(SVC_IP, 300, IPPROTO_UDP);
	struct weft_frag v;
	struct result r;
	struct pkt p;
	uint16_t other = 0;

	CHECK_EQ(svc_seeded(f, &cluster_udp, IPPROTO_UDP, ids, 1), 0);
	/* a datagram to the outside with the same home slot as datagram 300
	 * to the service */
	for (uint16_t id = 1; id < 5000 && !other; id++)
		if (frag_home(OUT_HOST_IP, id, IPPROTO_UDP) == home)
			other = id;
	CHECK(other != 0);

	/* it goes first, and takes its home slot */
	udp_fragment(&p, OUT_HOST_IP, 9999, other, true);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(frag_slot_of(f, other), (int)home);

	/* the service's first fragment: translated, tunnelled, recorded in
	 * the next slot */
	udp_fragment(&p, SVC_IP, 53, 300, true);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	CHECK_EQ(ip_of(&r.out)->daddr, REMOTE_BE_IP);
	CHECK_EQ(frag_slot_of(f, 300), (int)((home + 1) % WEFT_FRAG_SLOTS));
	CHECK_EQ(frag_get(f, "weft_frags", POD_A_IP, (home + 1) % WEFT_FRAG_SLOTS, &v), 0);
	CHECK_EQ(v.daddr, SVC_IP);
	CHECK_EQ(v.nat_daddr, REMOTE_BE_IP);

	/* its later fragment finds it there, and goes the same way */
	udp_fragment(&p, SVC_IP, 53, 300, false);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_FOLLOWED_TO_REMOTE_BACKEND(&r);
	/* and the one in the home slot still finds its own */
	udp_fragment(&p, OUT_HOST_IP, 9999, other, false);
	CHECK_FRAGMENT(f, &p, TC_ACT_OK, 0);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(pod_later_fragments_of_a_local_backends_answer_are_translated)
{
	uint8_t be_mac[6];
	struct result r;
	struct pkt p;

	CHECK_EQ(udp_svc_local(f, 40400), 0);
	tenant_mac(LOCAL_BE_IP, be_mac);

	/* the backend here answers in two fragments: both reach A from the
	 * cluster IP (pod_ingress's own records: the backend is the sender) */
	for (uint16_t off = 0; off <= 4; off += 4) {
		pkt_l4(&p, gw_a_mac, be_mac, IPPROTO_UDP, LOCAL_BE_IP, BE_PORT, POD_A_IP, 40400, 24);
		pkt_fragment(&p, 900, off, off == 0);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
		CHECK_EQ(ip_of(&r.out)->saddr, SVC_IP);
		CHECK_EQ(ip_of(&r.out)->daddr, POD_A_IP);
		CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
	}
	CHECK_EQ(drops_total(f), 0);
}

static int run_pod_egress(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_pod_egress_prog_fd(f->dp), in, r);
}

/* A backend outside the pod network answers through the node's stack,
 * which hands pod_egress the answer in fragments when it is larger than
 * the pod's MTU: the first is translated by its REV entry and recorded,
 * the later ones follow the record (source := the cluster IP), so the pod
 * can put the datagram together.  Another datagram's later fragment from
 * the stack passes as it came. */
DP_TEST(pod_egress_later_fragments_of_an_outside_backends_answer_are_translated)
{
	static const uint32_t ids[] = { 60 };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backend_put(f->dp, 60, OUTSIDE_IP, BE_PORT, IPPROTO_UDP, false, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &cluster_udp, ids, 1), 0);
	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, 40500, SVC_IP, 53, 12);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);	/* to the stack: masquerade */
	CHECK_TUPLE(&r.out, POD_A_IP, 40500, OUTSIDE_IP, BE_PORT);

	for (uint16_t off = 0; off <= 8; off += 4) {
		pkt_l4(&p, pod_a_mac, gw_a_mac, IPPROTO_UDP, OUTSIDE_IP, BE_PORT, POD_A_IP, 40500, 24);
		pkt_fragment(&p, 700, off, off < 8);
		CHECK_EQ(run_pod_egress(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_OK);
		CHECK_EQ(ip_of(&r.out)->saddr, SVC_IP);
		CHECK_EQ(ip_of(&r.out)->daddr, POD_A_IP);
		CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
		if (off == 0)
			CHECK_EQ(sport_of(&r.out), 53);
	}
	/* a later fragment of a datagram nobody translated: untouched */
	pkt_l4(&p, pod_a_mac, gw_a_mac, IPPROTO_UDP, OUTSIDE_IP, BE_PORT, POD_A_IP, 40500, 24);
	pkt_fragment(&p, 701, 4, false);
	CHECK_EQ(run_pod_egress(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(ip_of(&r.out)->saddr, OUTSIDE_IP);
	CHECK_EQ(drops_total(f), 0);
}

/* ---- fragments of answers over the tunnel (vxlan_ingress, weft_rev_frags) ----
 *
 * On the real VXLAN device of svc_vxlan_up(): a backend on "another node"
 * (127.0.0.1) answers with fragmented datagrams; what reaches pod A (or
 * the underlay) is caught and read. */

static const struct svc nodeport_udp = { 0, NODE_PORT, IPPROTO_UDP, WEFT_SVC_F_NODE_PORT, 0 };

/* A fragment of a UDP datagram from a pod of the other node, as its node
 * tunnels it: 32 bytes at offset (8-byte units). */
static void remote_fragment(struct pkt *p, in_addr_t src, uint16_t sport, in_addr_t dst,
			    uint16_t dport, uint16_t id, uint16_t offset, bool more)
{
	pkt_l4(p, remote_gw_mac, remote_pod_mac, IPPROTO_UDP, src, sport, dst, dport, 24);
	pkt_fragment(p, id, offset, more);
	pkt_from_remote(p);
}

/* svc_vxlan_up() with the UDP backends, BE_REMOTE (on the other node)
 * behind cluster_udp and nodeport_udp, and pod A's datagram from sport to
 * the cluster IP sent (tunnelled to the backend) before A moves behind
 * *pod.  0, a negative errno, or -EPROTO when the datagram went astray. */
static int udp_svc_over_tunnel(struct fixture *f, struct svc_netns *n, uint16_t sport,
			       struct nl_link *pod, struct nl_link *ul)
{
	static const uint32_t ids[] = { BE_REMOTE };
	struct result r;
	struct pkt p;
	int rc;

	if ((rc = svc_vxlan_up(f, n, pod, ul)) < 0 ||
	    (rc = backends_put3(f->dp, IPPROTO_UDP)) < 0 ||
	    (rc = svc_put(f->dp, &cluster_udp, ids, 1)) < 0 ||
	    (rc = svc_put(f->dp, &nodeport_udp, ids, 1)) < 0)
		return rc;
	pkt_l4(&p, gw_a_mac, pod_a_mac, IPPROTO_UDP, POD_A_IP, sport, SVC_IP, 53, 12);
	if ((rc = run_pod(f, &p, &r)) < 0)
		return rc;
	if (r.trace.action != WEFT_ACT_TUNNEL || ip_of(&r.out)->saddr != POD_A_IP ||
	    ip_of(&r.out)->daddr != REMOTE_BE_IP || dport_of(&r.out) != BE_PORT)
		return -EPROTO;
	return pod_a_behind(f, pod);
}

/* An outside client's datagram to a NodePort, in fragments: the first is
 * translated to the backend pod here, the later one follows it there (it
 * would otherwise wait in the node's reassembly memory); a later fragment
 * of a datagram nobody translated goes to the stack. */
DP_TEST(node_later_fragments_of_an_outside_clients_datagram_follow_the_first)
{
	static const uint32_t ids[] = { BE_LOCAL };
	struct result r;
	struct pkt p;

	CHECK_EQ(svc_seeded(f, &nodeport_udp, IPPROTO_UDP, ids, 1), 0);
	for (uint16_t off = 0; off <= 8; off += 4) {
		pkt_l4(&p, node_mac, outside_mac, IPPROTO_UDP, OUTSIDE_IP, 51100, NODE_IP, NODE_PORT, 24);
		pkt_fragment(&p, 800, off, off < 8);
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
		CHECK_EQ(ip_of(&r.out)->saddr, OUTSIDE_IP);
		CHECK_EQ(ip_of(&r.out)->daddr, LOCAL_BE_IP);
		CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
		if (off == 0)
			CHECK_EQ(dport_of(&r.out), BE_PORT);
	}
	pkt_l4(&p, node_mac, outside_mac, IPPROTO_UDP, OUTSIDE_IP, 51100, NODE_IP, NODE_PORT, 24);
	pkt_fragment(&p, 801, 4, false);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(ip_of(&r.out)->daddr, NODE_IP);
	CHECK_EQ(drops_total(f), 0);
}

/* A backend outside the pod network answers an outside client's datagram
 * SNATed to this node's IP, in fragments: the first is translated back
 * (source the NodePort, destination the client), the later ones follow. */
DP_TEST(node_later_fragments_of_an_outside_backends_answer_follow_the_first)
{
	static const in_addr_t far_be = IP(192, 168, 1, 50);
	static const uint32_t ids[] = { 61 };
	uint16_t snat;
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_services(f->dp), 0);
	CHECK_EQ(backend_put(f->dp, 61, far_be, BE_PORT, IPPROTO_UDP, false, SVC_ID), 0);
	CHECK_EQ(svc_put(f->dp, &nodeport_udp, ids, 1), 0);
	pkt_l4(&p, node_mac, outside_mac, IPPROTO_UDP, OUTSIDE_IP, 51200, NODE_IP, NODE_PORT, 12);
	CHECK_EQ(run_node(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_UNDERLAY);
	CHECK_EQ(ip_of(&r.out)->saddr, NODE_IP);
	CHECK_EQ(ip_of(&r.out)->daddr, far_be);
	snat = sport_of(&r.out);

	for (uint16_t off = 0; off <= 8; off += 4) {
		pkt_l4(&p, node_mac, outside_mac, IPPROTO_UDP, far_be, BE_PORT, NODE_IP, snat, 24);
		pkt_fragment(&p, 900, off, off < 8);
		CHECK_EQ(run_node(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_REDIRECT);
		CHECK_EQ(r.trace.action, WEFT_ACT_UNDERLAY);
		CHECK_EQ(ip_of(&r.out)->saddr, NODE_IP);
		CHECK_EQ(ip_of(&r.out)->daddr, OUTSIDE_IP);
		CHECK_EQ(ip_checksum(ip_of(&r.out), 20), 0);
		if (off == 0)
			CHECK_TUPLE(&r.out, NODE_IP, NODE_PORT, OUTSIDE_IP, 51200);
	}
	CHECK_EQ(drops_total(f), 0);
}

/* An outside client's datagram OUTSIDE_IP:51000 -> NODE_IP:NODE_PORT
 * (nodeport_udp), sent on to the backend on the other node from the
 * gateway: *snat the gateway's port.  0, a negative errno, or -EPROTO. */
static int udp_nodeport_over_tunnel(struct fixture *f, uint16_t *snat)
{
	struct result r;
	struct pkt p;
	int rc;

	pkt_l4(&p, node_mac, outside_mac, IPPROTO_UDP, OUTSIDE_IP, 51000, NODE_IP, NODE_PORT, 12);
	if ((rc = run_node(f, &p, &r)) < 0)
		return rc;
	if (r.trace.action != WEFT_ACT_TUNNEL || ip_of(&r.out)->saddr != GATEWAY_IP ||
	    ip_of(&r.out)->daddr != REMOTE_BE_IP || dport_of(&r.out) != BE_PORT)
		return -EPROTO;
	*snat = sport_of(&r.out);
	return 0;
}

/* p sent over the tunnel (VNI VNID_A) reaches sock as *got, with the
 * trace's action; the payload after the IP header as sent. */
#define CHECK_TUNNELLED_TO(f, p, sock, action_, got)                        \
	do {                                                                \
		struct result r_;                                           \
		drain(sock);                                                \
		CHECK_EQ(vxlan_send((f), VNID_A, (p), &r_), 0);             \
		CHECK_EQ(r_.trace.action, (action_));                       \
		CHECK_EQ(capture_ipv4((sock), IPPROTO_UDP, (got)), 0);      \
		CHECK_EQ(ip_checksum(ip_of(got), 20), 0);                   \
		CHECK_EQ(ip_of(got)->ttl, ip_of(p)->ttl - 1);               \
		CHECK_EQ(ip_of(got)->frag_off, ip_of(p)->frag_off);         \
	} while (0)

static void vxlan_answer_fragments_body(struct fixture *f, struct svc_netns *n)
{
	uint32_t home = frag_home(POD_A_IP, 700, IPPROTO_UDP);
	struct nl_link pod, ul;
	struct weft_frag v;
	struct pkt p, got;
	uint16_t snat;

	/* pod A's datagram to the cluster IP went to the backend elsewhere */
	CHECK_EQ(udp_svc_over_tunnel(f, n, 40400, &pod, &ul), 0);

	/* its answer, fragmented: the first fragment is translated by the
	 * conntrack, and recorded under the backend's address */
	remote_fragment(&p, REMOTE_BE_IP, BE_PORT, POD_A_IP, 40400, 700, 0, true);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_TUPLE(&got, SVC_IP, 53, POD_A_IP, 40400);
	CHECK_EQ(frag_get(f, "weft_rev_frags", REMOTE_BE_IP, home, &v), 0);
	CHECK_EQ(v.daddr, POD_A_IP);
	CHECK_EQ(v.nat_saddr, SVC_IP);
	CHECK_EQ(v.nat_daddr, POD_A_IP);
	CHECK_EQ(v.id, htons(700));
	/* the later fragment, no ports in it, is translated the same way */
	remote_fragment(&p, REMOTE_BE_IP, BE_PORT, POD_A_IP, 40400, 700, 4, false);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_EQ(ip_of(&got)->saddr, SVC_IP);
	CHECK_EQ(ip_of(&got)->daddr, POD_A_IP);
	CHECK(memcmp(l4_of(&got), l4_of(&p), 32) == 0);		/* payload untouched */
	CHECK_EQ(frag_get(f, "weft_rev_frags", REMOTE_BE_IP, home, &v), 0);
	CHECK_EQ(v.flags, WEFT_FRAG_F_DONE);
	/* another datagram of the backend's to A (not an answer: another
	 * port) keeps its address, first and later fragment alike */
	remote_fragment(&p, REMOTE_BE_IP, 9000, POD_A_IP, 40400, 701, 0, true);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_EQ(ip_of(&got)->saddr, REMOTE_BE_IP);
	remote_fragment(&p, REMOTE_BE_IP, 9000, POD_A_IP, 40400, 701, 4, false);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_EQ(ip_of(&got)->saddr, REMOTE_BE_IP);

	/* an outside client's NodePort datagram, SNATed to the gateway ... */
	CHECK_EQ(udp_nodeport_over_tunnel(f, &snat), 0);
	/* ... answered in three fragments: all leave through the underlay,
	 * from the node port to the client */
	remote_fragment(&p, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat, 702, 0, true);
	CHECK_TUNNELLED_TO(f, &p, n->ul_sock, WEFT_ACT_UNDERLAY, &got);
	CHECK_TUPLE(&got, NODE_IP, NODE_PORT, OUTSIDE_IP, 51000);
	for (uint16_t off = 4; off <= 8; off += 4) {
		remote_fragment(&p, REMOTE_BE_IP, BE_PORT, GATEWAY_IP, snat, 702, off, off < 8);
		CHECK_TUNNELLED_TO(f, &p, n->ul_sock, WEFT_ACT_UNDERLAY, &got);
		CHECK_EQ(ip_of(&got)->saddr, NODE_IP);
		CHECK_EQ(ip_of(&got)->daddr, OUTSIDE_IP);
		CHECK(memcmp(l4_of(&got), l4_of(&p), 32) == 0);
	}
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(vxlan_later_fragments_of_an_answer_are_translated_as_the_first)
{
	in_svc_netns(f, vxlan_answer_fragments_body);
}

static void vxlan_pod_fragments_body(struct fixture *f, struct svc_netns *n)
{
	struct nl_link pod, ul;
	struct weft_frag v;
	struct pkt p, got;

	CHECK_EQ(svc_vxlan_up(f, n, &pod, &ul), 0);
	CHECK_EQ(pod_a_behind(f, &pod), 0);

	/* a remote pod's fragmented datagram to pod A: no service, nothing
	 * to translate, nothing recorded; delivered as it came */
	remote_fragment(&p, REMOTE_BE2_IP, 9000, POD_A_IP, 40400, 800, 0, true);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_TUPLE(&got, REMOTE_BE2_IP, 9000, POD_A_IP, 40400);
	CHECK(memcmp(l4_of(&got), l4_of(&p), 32) == 0);
	for (uint32_t slot = 0; slot < WEFT_FRAG_SLOTS; slot++)
		CHECK_EQ(frag_get(f, "weft_rev_frags", REMOTE_BE2_IP, slot, &v), -ENOENT);
	for (uint16_t off = 4; off <= 8; off += 4) {
		remote_fragment(&p, REMOTE_BE2_IP, 9000, POD_A_IP, 40400, 800, off, off < 8);
		CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
		CHECK_EQ(ip_of(&got)->saddr, REMOTE_BE2_IP);
		CHECK(memcmp(l4_of(&got), l4_of(&p), 32) == 0);
	}
	/* a later fragment whose first this node never saw: not this path's
	 * to judge (the sender's node did), delivered */
	remote_fragment(&p, REMOTE_BE2_IP, 9000, POD_A_IP, 40400, 801, 4, false);
	CHECK_TUNNELLED_TO(f, &p, n->pod_sock, WEFT_ACT_LOCAL, &got);
	CHECK_EQ(ip_of(&got)->saddr, REMOTE_BE2_IP);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(vxlan_pod_to_pod_fragments_are_delivered_untranslated)
{
	in_svc_netns(f, vxlan_pod_fragments_body);
}

/* ---- ICMP errors over the tunnel (vxlan_ingress, lib/icmp.h) ---- */

/* An ICMP error from the backend on the other node, as its node tunnels
 * it (pkt_icmp_error's quote: UDP qsrc:qsport -> qdst:qdport). */
static void remote_icmp_error(struct pkt *p, in_addr_t dst, uint8_t code, in_addr_t qsrc,
			      uint16_t qsport, in_addr_t qdst, uint16_t qdport)
{
	pkt_icmp_error(p, remote_pod_mac, REMOTE_BE_IP, dst, ICMP_UNREACH, code, qsrc, qsport,
		       qdst, qdport);
	pkt_from_remote(p);
}

/* got is the ICMP error p translated and forwarded: the outer and quoted
 * addresses and the quoted ports as given, the rest of p kept (TTL one
 * less, the next-hop MTU, the quoted transport checksum, which covers a
 * datagram nobody has whole), every checksum it carries right again. */
#define CHECK_ICMP_TRANSLATED(p, got, src, dst, qsrc, qsport, qdst, qdport)  \
	do {                                                                 \
		CHECK_EQ((got)->len, (p)->len);                              \
		CHECK_EQ(ip_of(got)->saddr, (src));                          \
		CHECK_EQ(ip_of(got)->daddr, (dst));                          \
		CHECK_EQ(ip_of(got)->ttl, ip_of(p)->ttl - 1);                \
		CHECK_EQ(quote_of(got)->saddr, (qsrc));                      \
		CHECK_EQ(quote_of(got)->daddr, (qdst));                      \
		CHECK_EQ(get16(icmp_of(got) + 8 + 20), (qsport));            \
		CHECK_EQ(get16(icmp_of(got) + 8 + 20 + 2), (qdport));        \
		CHECK_EQ(get16(icmp_of(got) + 6), 552);                      \
		CHECK_EQ(get16(icmp_of(got) + 8 + 20 + 6), 0x1234);          \
		CHECK_EQ(ip_checksum(ip_of(got), 20), 0);                    \
		CHECK_EQ(ip_checksum(quote_of(got), 20), 0);                 \
		CHECK_EQ(icmp_checksum(got), 0);                             \
	} while (0)

static void vxlan_icmp_error_body(struct fixture *f, struct svc_netns *n)
{
	struct nl_link pod, ul;
	struct result r;
	struct pkt p, got;
	uint16_t snat;

	/* pod A's datagram to the cluster IP, translated to the backend on
	 * the other node */
	CHECK_EQ(udp_svc_over_tunnel(f, n, 40300, &pod, &ul), 0);

	/* the backend says "fragmentation needed" about it: A gets it from
	 * the cluster IP, about the cluster IP and port it sent to */
	remote_icmp_error(&p, POD_A_IP, ICMP_FRAG_NEEDED, POD_A_IP, 40300, REMOTE_BE_IP, BE_PORT);
	drain(n->pod_sock);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(r.trace.ifindex, pod.ifindex);
	CHECK_EQ(capture_ipv4(n->pod_sock, IPPROTO_ICMP, &got), 0);
	CHECK_ICMP_TRANSLATED(&p, &got, SVC_IP, POD_A_IP, POD_A_IP, 40300, SVC_IP, 53);

	/* an outside client's NodePort datagram, SNATed to the gateway: the
	 * backend's error about it leaves through the underlay, from the node
	 * IP to the client, quoting the client and the node port */
	CHECK_EQ(udp_nodeport_over_tunnel(f, &snat), 0);
	remote_icmp_error(&p, GATEWAY_IP, ICMP_FRAG_NEEDED, GATEWAY_IP, snat, REMOTE_BE_IP, BE_PORT);
	drain(n->ul_sock);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_UNDERLAY);
	CHECK_EQ(capture_ipv4(n->ul_sock, IPPROTO_ICMP, &got), 0);
	CHECK_ICMP_TRANSLATED(&p, &got, NODE_IP, OUTSIDE_IP, OUTSIDE_IP, 51000, NODE_IP, NODE_PORT);

	/* an error about a flow no service translated (the backend's own
	 * with A): delivered as it came */
	remote_icmp_error(&p, POD_A_IP, 3, POD_A_IP, 40301, REMOTE_BE_IP, 9000);
	drain(n->pod_sock);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(capture_ipv4(n->pod_sock, IPPROTO_ICMP, &got), 0);
	CHECK(memcmp(l4_of(&got), l4_of(&p), 8 + 20 + 8) == 0);
	CHECK_EQ(ip_of(&got)->saddr, REMOTE_BE_IP);
	CHECK_EQ(drops_total(f), 0);
}

DP_TEST(vxlan_backend_icmp_error_is_translated_to_the_frontend)
{
	in_svc_netns(f, vxlan_icmp_error_body);
}

static void vxlan_forged_icmp_body(struct fixture *f, struct svc_netns *n)
{
	static const struct {
		in_addr_t dst, qsrc, qdst;	/* outer destination, quoted pair */
		uint16_t qdport;
	} forged[] = {
		/* A's connection to the service (as A sent it, to the
		 * cluster IP): not what the backend received */
		{ POD_A_IP, POD_A_IP, SVC_IP, 53 },
		/* A's packet to another pod of that node */
		{ POD_A_IP, POD_A_IP, REMOTE_BE2_IP, BE_PORT },
		/* pod B's packet, the error sent to A */
		{ POD_A_IP, POD_B_IP, REMOTE_BE_IP, BE_PORT },
		/* A's connection, the error sent to the gateway */
		{ GATEWAY_IP, POD_A_IP, REMOTE_BE_IP, BE_PORT },
	};
	struct nl_link pod, ul;
	struct weft_ct_entry rev;
	struct result r;
	struct pkt p;

	/* A's connection through the service to the backend */
	CHECK_EQ(udp_svc_over_tunnel(f, n, 40500, &pod, &ul), 0);
	CHECK_EQ(ct_get(f, REMOTE_BE_IP, BE_PORT, POD_A_IP, 40500, IPPROTO_UDP, WEFT_CT_REV, &rev),
		 0);

	/* the backend quotes what it never received, or sends the error
	 * elsewhere than the quoted source: dropped before any translation */
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		remote_icmp_error(&p, forged[i].dst, 3, forged[i].qsrc, 40500, forged[i].qdst,
				  forged[i].qdport);
		CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
		CHECK_EQ(r.trace.action, WEFT_ACT_DROP);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	}
	CHECK_EQ(drops_of(f, WEFT_DROP_ICMP_FORGED), sizeof(forged) / sizeof(forged[0]));
	/* a tenant the quoted source may not hear from (VNI) */
	remote_icmp_error(&p, POD_A_IP, 3, POD_A_IP, 40500, REMOTE_BE_IP, BE_PORT);
	{
		struct weft_ipcache_entry a = { .node_ip = NODE_IP, .vnid = VNID_A };

		CHECK_EQ(datapath_ipcache_put(f->dp, POD_A_IP, &a), 0);
	}
	CHECK_EQ(vxlan_send(f, VNID_RED, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_FORGED);
	/* a quote cut short */
	remote_icmp_error(&p, POD_A_IP, 3, POD_A_IP, 40500, REMOTE_BE_IP, BE_PORT);
	ip_of(&p)->tot_len = htons(20 + 8 + 20);
	pkt_from_remote(&p);
	p.len -= 8;
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.drop_reason, WEFT_DROP_ICMP_TRUNCATED);
	/* the genuine error still passes, translated */
	remote_icmp_error(&p, POD_A_IP, 3, POD_A_IP, 40500, REMOTE_BE_IP, BE_PORT);
	CHECK_EQ(vxlan_send(f, VNID_A, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_LOCAL);
	CHECK_EQ(drops_total(f), sizeof(forged) / sizeof(forged[0]) + 2);
}

DP_TEST(vxlan_forged_icmp_error_is_dropped)
{
	in_svc_netns(f, vxlan_forged_icmp_body);
}

DP_TEST(pod_cluster_address_outside_every_subnet_is_dropped)
{
	static const in_addr_t dsts[] = { IP(10, 131, 255, 255), IP(10, 129, 0, 5),
					  IP(10, 128, 4, 1) };
	struct result r;
	struct pkt p;

	CHECK_EQ(seed_node(f->dp), 0);
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		pkt_from_a(&p, dsts[i], 64);
		CHECK_EQ(run_pod(f, &p, &r), 0);
		CHECK_EQ(r.verdict, TC_ACT_SHOT);
		CHECK_EQ(r.trace.drop_reason, WEFT_DROP_NO_SUBNET);
	}
	CHECK_EQ(drops_of(f, WEFT_DROP_NO_SUBNET), 3);
	/* node subnets, and outside the cluster network, as before */
	pkt_from_a(&p, REMOTE_POD_IP, 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.trace.action, WEFT_ACT_TUNNEL);
	pkt_from_a(&p, IP(10, 128, 1, 200), 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	pkt_from_a(&p, IP(10, 132, 0, 1), 64);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
	CHECK_EQ(drops_total(f), 3);
}
