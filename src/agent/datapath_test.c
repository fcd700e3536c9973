/*
 * datapath_test.c — the eBPF data plane and its user-space handle.
 *
 * Every test mounts a private bpffs under its temporary directory, opens
 * the datapath there (which is also the verifier test: open loads both
 * programs), and unpins and unmounts before it returns, whether it passed
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
 * Randomized: pod_ingress's forwarding (anti-spoofing, tenants, tunnel)
 * against a naive reference (linear longest-prefix match), and the
 * endpoint map against a list.
 */
#include "agent/datapath.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/if_ether.h>
#include <netinet/ip.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* ---- fixture: a private bpffs and an open datapath ---- */

struct fixture {
	char mnt[1024];		/* bpffs mount point */
	char pin[1100];		/* pin directory inside it */
	bool mounted;
	bool rebuilt;
	struct datapath *dp;
};

/* Mounts made by the tests live in a mount namespace of this process only,
 * so even a crashed run leaves nothing mounted on the host. */
static void private_mounts(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	if (unshare(CLONE_NEWNS) == 0)
		(void)mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

static int mount_bpffs(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	private_mounts();
	snprintf(f->mnt, sizeof(f->mnt), "%s/bpffs", test_tmpdir());
	snprintf(f->pin, sizeof(f->pin), "%s/weft/node1", f->mnt);
	if (mkdir(f->mnt, 0700) < 0) {
		test_fail(__FILE__, __LINE__, "mkdir %s: %s", f->mnt, strerror(errno));
		return -1;
	}
	if (mount("bpf", f->mnt, "bpf", 0, NULL) < 0) {
		test_fail(__FILE__, __LINE__, "mount bpffs on %s: %s", f->mnt, strerror(errno));
		return -1;
	}
	f->mounted = true;
	return 0;
}

/* libbpf prints the kernel's extended ack of every failed netlink request
 * ("Parent Qdisc doesn't exists" when querying a device without clsact);
 * the tests make such requests on purpose.  Everything else still shows. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || strstr(fmt, "Kernel error message"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int fixture_up(struct fixture *f, bool trace)
{
	struct datapath_opts opts = { .trace = trace };
	char err[256] = "";
	int rc;

	libbpf_set_print(libbpf_print);
	if (mount_bpffs(f) < 0)
		return -1;
	opts.pin_dir = f->pin;
	rc = datapath_open(&opts, &f->dp, &f->rebuilt, err, sizeof(err));
	if (rc < 0) {
		test_fail(__FILE__, __LINE__, "datapath_open: %d %s", rc, err);
		return -1;
	}
	return 0;
}

static void fixture_down(struct fixture *f)
{
	int rc;

	datapath_close(f->dp);
	f->dp = NULL;
	if (!f->mounted)
		return;
	rc = datapath_unpin(f->pin);
	if (rc < 0)
		test_fail(__FILE__, __LINE__, "datapath_unpin: %d", rc);
	/* the pin dir's parent was made by datapath_open's mkdir -p */
	(void)rmdir(f->pin);
	snprintf(f->pin, sizeof(f->pin), "%s/weft", f->mnt);
	(void)rmdir(f->pin);
	if (umount2(f->mnt, 0) < 0)
		test_fail(__FILE__, __LINE__, "umount %s: %s", f->mnt, strerror(errno));
	else if (rmdir(f->mnt) < 0)
		test_fail(__FILE__, __LINE__, "rmdir %s: %s", f->mnt, strerror(errno));
	f->mounted = false;
}

/* A test with a datapath opened with trace on; the body may CHECK freely. */
#define DP_TEST(name)                                                     \
	static void name##_body(struct fixture *f);                       \
	TEST(name)                                                        \
	{                                                                 \
		struct fixture f;                                         \
		if (fixture_up(&f, true) == 0)                            \
			name##_body(&f);                                  \
		fixture_down(&f);                                         \
	}                                                                 \
	static void name##_body(struct fixture *f)

/* ---- the node the packet tests run on ---- */

/* a.b.c.d in network order, as a constant expression (htonl is not one) */
#define IP_HOST(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define IP(a, b, c, d) ((in_addr_t)__builtin_bswap32(IP_HOST(a, b, c, d)))
#else
#define IP(a, b, c, d) ((in_addr_t)IP_HOST(a, b, c, d))
#endif

#define NODE_IP		IP(192, 168, 1, 11)
#define REMOTE_NODE_IP	IP(192, 168, 1, 12)
#define GATEWAY_IP	IP(10, 128, 0, 1)
#define POD_A_IP	IP(10, 128, 0, 5)
#define POD_B_IP	IP(10, 128, 0, 6)
#define REMOTE_POD_IP	IP(10, 128, 2, 9)
#define VXLAN_IFINDEX	77
#define VNID_A		7
#define VXLAN_PORT	4789

/* tenants on this node: senders on the test-run ifindex, destinations on
 * their own */
#define VNID_RED	10
#define VNID_BLUE	11
#define RED_SRC_IP	IP(10, 128, 0, 20)
#define BLUE_SRC_IP	IP(10, 128, 0, 21)
#define DEF_SRC_IP	IP(10, 128, 0, 22)
#define RED_DST_IP	IP(10, 128, 0, 30)
#define BLUE_DST_IP	IP(10, 128, 0, 31)
#define DEF_DST_IP	IP(10, 128, 0, 32)

static const uint8_t pod_a_mac[6] = { 0x0a, 0x58, 0x0a, 0x80, 0x00, 0x05 };
static const uint8_t gw_a_mac[6] = { 0xee, 0xee, 0x00, 0x00, 0x00, 0x41 };
static const uint8_t pod_b_mac[6] = { 0x0a, 0x58, 0x0a, 0x80, 0x00, 0x06 };
static const uint8_t gw_b_mac[6] = { 0xee, 0xee, 0x00, 0x00, 0x00, 0x42 };
static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* skb->ifindex as a tc test run in this namespace sees it (the loopback
 * device's), 0 when it cannot be found out.  Asked once, of a program that
 * returns it: r0 = ((struct __sk_buff *)r1)->ifindex; exit. */
static uint32_t run_ifindex(void)
{
	static uint32_t cached;
	struct bpf_insn insns[2];
	uint8_t frame[64];
	int fd;

	if (cached)
		return cached;
	memset(insns, 0, sizeof(insns));
	insns[0].code = BPF_LDX | BPF_MEM | BPF_W;
	insns[0].dst_reg = BPF_REG_0;
	insns[0].src_reg = BPF_REG_1;
	insns[0].off = offsetof(struct __sk_buff, ifindex);
	insns[1].code = BPF_JMP | BPF_EXIT;
	fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "weft_ifindex", "GPL", insns, 2, NULL);
	if (fd < 0)
		return 0;
	memset(frame, 0, sizeof(frame));
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	if (bpf_prog_test_run_opts(fd, &o) == 0)
		cached = o.retval;
	close(fd);
	return cached;
}

static struct weft_config ready_config(void)
{
	struct weft_config c;

	memset(&c, 0, sizeof(c));
	c.version = WEFT_CONFIG_VERSION;
	c.ready = 1;
	c.node_ip = NODE_IP;
	c.gateway_ip = GATEWAY_IP;
	c.subnet = IP(10, 128, 0, 0);
	c.subnet_mask = IP(255, 255, 254, 0);
	c.cluster_net = IP(10, 128, 0, 0);
	c.cluster_mask = IP(255, 252, 0, 0);
	c.vxlan_ifindex = VXLAN_IFINDEX;
	c.tunnel_ttl = 64;
	c.vxlan_port = VXLAN_PORT;
	return c;
}

static struct weft_endpoint endpoint(uint32_t ifindex, uint32_t vnid, const uint8_t *pod_mac,
				     const uint8_t *gw_mac)
{
	struct weft_endpoint ep;

	memset(&ep, 0, sizeof(ep));
	ep.ifindex = ifindex;
	ep.vnid = vnid;
	memcpy(ep.pod_mac, pod_mac, 6);
	memcpy(ep.gw_mac, gw_mac, 6);
	ep.flags = WEFT_EP_F_READY;
	return ep;
}

/* The MAC of a tenant pod: 0a:58 and its IP. */
static void tenant_mac(in_addr_t ip, uint8_t mac[6])
{
	mac[0] = 0x0a;
	mac[1] = 0x58;
	memcpy(mac + 2, &ip, 4);
}

/* Pods A (the sender: the test-run ifindex) and B (ifindex 42) here in
 * 10.128.0.0/23, both VNID_A; node 192.168.1.12 owning 10.128.2.0/23;
 * both nodes' IPs in weft_node_ips.  Tenant pods: senders red (10), blue
 * (11) and default (0) on the test-run ifindex, destinations of the same
 * VNIDs on ifindexes 51, 52, 53. */
static int seed_node(struct datapath *dp)
{
	static const struct {
		in_addr_t ip;
		uint32_t ifindex, vnid;	/* ifindex 0: the test-run one */
	} tenants[] = {
		{ RED_SRC_IP, 0, VNID_RED }, { BLUE_SRC_IP, 0, VNID_BLUE }, { DEF_SRC_IP, 0, 0 },
		{ RED_DST_IP, 51, VNID_RED }, { BLUE_DST_IP, 52, VNID_BLUE }, { DEF_DST_IP, 53, 0 },
	};
	struct weft_config cfg = ready_config();
	struct weft_endpoint a = endpoint(run_ifindex(), VNID_A, pod_a_mac, gw_a_mac);
	struct weft_endpoint b = endpoint(42, VNID_A, pod_b_mac, gw_b_mac);
	struct weft_node_entry self = { .node_ip = NODE_IP, .node_id = 1 };
	struct weft_node_entry remote = { .node_ip = REMOTE_NODE_IP, .node_id = 2 };
	int rc;

	if (run_ifindex() == 0)
		return -ENODEV;
	if ((rc = datapath_endpoint_put(dp, POD_A_IP, &a)) < 0 ||
	    (rc = datapath_endpoint_put(dp, POD_B_IP, &b)) < 0 ||
	    (rc = datapath_node_put(dp, IP(10, 128, 0, 0), 23, &self)) < 0 ||
	    (rc = datapath_node_put(dp, IP(10, 128, 2, 0), 23, &remote)) < 0 ||
	    (rc = datapath_nodeip_put(dp, NODE_IP, 1)) < 0 ||
	    (rc = datapath_nodeip_put(dp, REMOTE_NODE_IP, 2)) < 0)
		return rc;
	for (size_t i = 0; i < sizeof(tenants) / sizeof(tenants[0]); i++) {
		struct weft_endpoint ep = endpoint(tenants[i].ifindex ? tenants[i].ifindex
								     : run_ifindex(),
						   tenants[i].vnid, pod_a_mac, gw_b_mac);

		tenant_mac(tenants[i].ip, ep.pod_mac);
		if ((rc = datapath_endpoint_put(dp, tenants[i].ip, &ep)) < 0)
			return rc;
	}
	return datapath_config_set(dp, &cfg);	/* last, as the agent does */
}

/* ---- packets ---- */

struct pkt {
	uint16_t pad;		/* so that the IP header in b is 4-byte aligned */
	uint8_t b[256];
	uint32_t len;
} __attribute__((aligned(4)));

static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;	/* host order; 0 over a header with a valid checksum */
}

static struct iphdr *ip_of(struct pkt *p)
{
	return (struct iphdr *)(p->b + sizeof(struct ether_header));
}

static void eth_fill(struct pkt *p, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	struct ether_header eh;

	memcpy(eh.ether_dhost, dst, 6);
	memcpy(eh.ether_shost, src, 6);
	eh.ether_type = htons(type);
	memcpy(p->b, &eh, sizeof(eh));
}

/* Ethernet + IPv4 (valid checksum) + 16 bytes of UDP-ish payload (ports
 * 0x0001 -> 0x0203).  ihl > 5 adds NOPs as options. */
static void pkt_ipv4_ext(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac,
			 in_addr_t src, in_addr_t dst, uint8_t ttl, uint8_t protocol,
			 unsigned ihl, uint16_t frag_off)
{
	size_t hlen = ihl * 4;
	struct iphdr *ip;
	uint8_t hdr[60];

	memset(p, 0, sizeof(*p));
	eth_fill(p, dst_mac, src_mac, ETHERTYPE_IP);
	memset(hdr, 1, sizeof(hdr));	/* options: NOP */
	ip = (struct iphdr *)hdr;
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = ihl & 0xf;
	ip->tot_len = htons((uint16_t)(hlen + 20));	/* room for a TCP header */
	ip->id = htons(0x1234);
	ip->frag_off = htons(frag_off);
	ip->ttl = ttl;
	ip->protocol = protocol;
	ip->saddr = src;
	ip->daddr = dst;
	ip->check = htons(ip_checksum(hdr, hlen));
	memcpy(ip_of(p), hdr, hlen);
	for (int i = 0; i < 20; i++)
		p->b[sizeof(struct ether_header) + hlen + i] = (uint8_t)i;
	p->len = (uint32_t)(sizeof(struct ether_header) + hlen + 20);
}

static void pkt_ipv4(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac,
		     in_addr_t src, in_addr_t dst, uint8_t ttl)
{
	pkt_ipv4_ext(p, dst_mac, src_mac, src, dst, ttl, IPPROTO_UDP, 5, 0);
}

/* Set the UDP destination port of a packet pkt_ipv4*() built (the first
 * 16-bit words after the IP header are the ports). */
static void pkt_set_dport(struct pkt *p, uint16_t port)
{
	uint8_t *l4 = p->b + sizeof(struct ether_header) + ip_of(p)->ihl * 4;

	l4[2] = (uint8_t)(port >> 8);
	l4[3] = (uint8_t)port;
}

/* A tenant pod's packet (from its own MAC) to dst. */
static void pkt_from_tenant(struct pkt *p, in_addr_t src, in_addr_t dst)
{
	uint8_t mac[6];

	tenant_mac(src, mac);
	pkt_ipv4(p, gw_b_mac, mac, src, dst, 64);
}

/* A pod's packet to dst: from its MAC to its gateway's. */
static void pkt_from_a(struct pkt *p, in_addr_t dst, uint8_t ttl)
{
	pkt_ipv4(p, gw_a_mac, pod_a_mac, POD_A_IP, dst, ttl);
}

static void pkt_arp(struct pkt *p, uint16_t op, const uint8_t *sha, in_addr_t spa, in_addr_t tpa)
{
	struct ether_arp arp;

	memset(p, 0, sizeof(*p));
	eth_fill(p, broadcast, sha, ETHERTYPE_ARP);
	memset(&arp, 0, sizeof(arp));
	arp.arp_hrd = htons(ARPHRD_ETHER);
	arp.arp_pro = htons(ETHERTYPE_IP);
	arp.arp_hln = 6;
	arp.arp_pln = 4;
	arp.arp_op = htons(op);
	memcpy(arp.arp_sha, sha, 6);
	memcpy(arp.arp_spa, &spa, 4);
	memcpy(arp.arp_tpa, &tpa, 4);
	memcpy(p->b + sizeof(struct ether_header), &arp, sizeof(arp));
	p->len = sizeof(struct ether_header) + sizeof(arp);
}

static void pkt_ipv6(struct pkt *p)
{
	memset(p, 0, sizeof(*p));
	eth_fill(p, gw_a_mac, pod_a_mac, ETHERTYPE_IPV6);
	p->b[14] = 0x60;	/* version 6; the rest does not matter */
	p->len = 14 + 40;
}

/* ---- running a program ---- */

struct result {
	uint32_t verdict;
	struct pkt out;
	struct weft_trace trace;
};

static int run(struct fixture *f, int prog_fd, const struct pkt *in, struct result *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in->b, .data_size_in = in->len,
		    .data_out = r->out.b, .data_size_out = sizeof(r->out.b), .repeat = 1);
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = datapath_trace_reset(f->dp)) < 0)
		return rc;
	if ((rc = bpf_prog_test_run_opts(prog_fd, &o)) < 0)
		return rc;
	r->verdict = o.retval;
	r->out.len = o.data_size_out;
	return datapath_trace_read(f->dp, &r->trace);
}

static int run_pod(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_pod_prog_fd(f->dp), in, r);
}

static uint64_t drops_of(struct fixture *f, enum weft_drop_reason reason)
{
	uint64_t d[WEFT_DROP_MAX];

	if (datapath_drops(f->dp, d) < 0)
		return UINT64_MAX;
	return d[reason];
}

static uint64_t drops_total(struct fixture *f)
{
	uint64_t d[WEFT_DROP_MAX], sum = 0;

	if (datapath_drops(f->dp, d) < 0)
		return UINT64_MAX;
	for (int i = 0; i < WEFT_DROP_MAX; i++)
		sum += d[i];
	return sum;
}

/* ---- loading, pins, restart ---- */

DP_TEST(open_loads_both_programs_and_pins_maps)
{
	static const char *names[] = { "weft_config", "weft_endpoints", "weft_ipcache",
				       "weft_nodes", "weft_node_ips", "weft_drops",
				       "weft_trace" };
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
	snprintf(path, sizeof(path), "%s/weft_trace", f->pin);
	CHECK(unlink(path) == 0);

	CHECK_EQ(datapath_open(&opts, &f->dp, &rebuilt, err, sizeof(err)), 0);
	CHECK(rebuilt);
	CHECK_EQ(datapath_config_get(f->dp, &cfg), 0);
	CHECK_EQ(cfg.version, 0);
	CHECK_EQ(datapath_endpoint_get(f->dp, POD_A_IP, &ep), -ENOENT);
	CHECK(access(path, F_OK) == 0);
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
	/* a later fragment does not: its bytes are not read as ports */
	pkt_ipv4_ext(&p, gw_a_mac, pod_a_mac, POD_A_IP, NODE_IP, 64, IPPROTO_UDP, 5, 3);
	pkt_set_dport(&p, VXLAN_PORT);
	CHECK_EQ(run_pod(f, &p, &r), 0);
	CHECK_EQ(r.verdict, TC_ACT_OK);
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

static uint32_t xlated_len(int prog_fd)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) < 0)
		return 0;
	return info.xlated_prog_len;
}

/* With the knob off the verifier removes the trace code (the knob is a
 * known constant in frozen .rodata): the programs are shorter. */
DP_TEST(trace_off_removes_the_trace_code)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = false };
	struct datapath *off = NULL;
	char err[256] = "";
	uint32_t pod_on, pod_off, vxlan_on, vxlan_off;

	CHECK_EQ(datapath_open(&opts, &off, NULL, err, sizeof(err)), 0);
	pod_on = xlated_len(datapath_pod_prog_fd(f->dp));
	pod_off = xlated_len(datapath_pod_prog_fd(off));
	vxlan_on = xlated_len(datapath_vxlan_prog_fd(f->dp));
	vxlan_off = xlated_len(datapath_vxlan_prog_fd(off));
	datapath_close(off);
	CHECK(pod_off > 0 && vxlan_off > 0);
	CHECK(pod_off < pod_on);
	CHECK(vxlan_off < vxlan_on);
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

/* Runs the test body in a fresh network namespace of this thread, then
 * returns to the original one; the namespace, its devices and their
 * filters go with it. */
static int netns_enter(int *saved)
{
	*saved = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*saved < 0)
		return -errno;
	if (unshare(CLONE_NEWNET) < 0) {
		int err = -errno;

		close(*saved);
		*saved = -1;
		return err;
	}
	return 0;
}

static void netns_leave(int saved)
{
	if (saved < 0)
		return;
	if (setns(saved, CLONE_NEWNET) < 0)
		test_fail(__FILE__, __LINE__, "setns back: %s", strerror(errno));
	close(saved);
}

static int sh(const char *cmd)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "PATH=$PATH:/usr/sbin:/sbin; %s", cmd);
	return system(buf);
}

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

/* Send frame, VXLAN-encapsulated with vni, to this namespace's VXLAN
 * socket; wait until the program has run (the trace count moves). */
static int vxlan_send(struct fixture *f, uint32_t vni, const struct pkt *frame, struct result *r)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4789),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t buf[8 + sizeof(frame->b)];
	int fd, rc;

	memset(r, 0, sizeof(*r));
	if ((rc = datapath_trace_reset(f->dp)) < 0)
		return rc;
	memset(buf, 0, 8);
	buf[0] = 0x08;		/* I: the VNI is valid */
	buf[4] = (uint8_t)(vni >> 16);
	buf[5] = (uint8_t)(vni >> 8);
	buf[6] = (uint8_t)vni;
	memcpy(buf + 8, frame->b, frame->len);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = sendto(fd, buf, 8 + frame->len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	for (int i = 0; i < 200; i++) {
		if ((rc = datapath_trace_read(f->dp, &r->trace)) < 0)
			return rc;
		if (r->trace.count > 0)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static void vxlan_device_body(struct fixture *f)
{
	struct weft_config cfg = ready_config();
	uint8_t remote_pod_mac[6] = { 0x0a, 0x58, 0x0a, 0x80, 0x02, 0x09 };
	uint8_t remote_gw_mac[6] = { 0xee, 0xee, 0x00, 0x00, 0x02, 0x01 };
	struct result r;
	struct pkt p;
	int ifindex;

	CHECK_EQ(sh("ip link set lo up && "
		    "ip link add weftvx0 type vxlan external dstport 4789 && "
		    "ip link set weftvx0 up"), 0);
	ifindex = (int)if_nametoindex("weftvx0");
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
