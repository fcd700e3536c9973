/*
 * datapath_fixture.h — what the data-plane tests share: a private bpffs
 * with an open datapath (fixture_up/fixture_down, DP_TEST), the node the
 * packet tests run on (seed_node: pods A and B, a remote node, tenants),
 * frame builders (pkt_*, with real IP and transport checksums), test runs
 * of the programs (run, run_pod, run_node) with their trace and drop
 * counts, a private network namespace with a real VXLAN device
 * (netns_enter, vxlan_dev_up, vxlan_send), and the seeded service
 * (seed_services, svc_seeded) with conntrack look-ups (ct_get & co).
 *
 * Included by one test file per binary: everything here is static, and
 * the functions are marked unused because each test file uses some.
 * The fixture owns its datapath and mount; fixture_down releases both,
 * whether the test passed or not.
 */
#ifndef WEFT_AGENT_DATAPATH_FIXTURE_H
#define WEFT_AGENT_DATAPATH_FIXTURE_H

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
#include <time.h>
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
__attribute__((unused)) static void private_mounts(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	if (unshare(CLONE_NEWNS) == 0)
		(void)mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

__attribute__((unused)) static int mount_bpffs(struct fixture *f)
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
__attribute__((unused)) static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || strstr(fmt, "Kernel error message"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* opts without pin_dir: the fixture's is filled in */
__attribute__((unused)) static int fixture_up_opts(struct fixture *f, struct datapath_opts opts)
{
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

__attribute__((unused)) static int fixture_up(struct fixture *f, bool trace)
{
	struct datapath_opts opts = { .trace = trace };

	return fixture_up_opts(f, opts);
}

__attribute__((unused)) static void fixture_down(struct fixture *f)
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

/* A second datapath over f's pins, opened as the agent opens it (trace
 * off), as a restarted agent finds them; NULL after a failed CHECK.  The
 * caller closes it (datapath_close). */
__attribute__((unused)) static struct datapath *fixture_production(struct fixture *f)
{
	struct datapath_opts opts = { .pin_dir = f->pin, .trace = false };
	struct datapath *dp = NULL;
	char err[256] = "";

	if (datapath_open(&opts, &dp, NULL, err, sizeof(err)) < 0)
		test_fail(__FILE__, __LINE__, "datapath_open: %s", err);
	return dp;
}

/* A new fd of the map pinned as name (weft_*), or a negative errno. */
__attribute__((unused)) static int pinned_map_fd(struct fixture *f, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", f->pin, name);
	return bpf_obj_get(path);
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
__attribute__((unused)) static uint32_t run_ifindex(void)
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

__attribute__((unused)) static struct weft_config ready_config(void)
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

__attribute__((unused)) static struct weft_endpoint endpoint(uint32_t ifindex, uint32_t vnid, const uint8_t *pod_mac,
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
__attribute__((unused)) static void tenant_mac(in_addr_t ip, uint8_t mac[6])
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
__attribute__((unused)) static int seed_node(struct datapath *dp)
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

__attribute__((unused)) static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;	/* host order; 0 over a header with a valid checksum */
}

__attribute__((unused)) static struct iphdr *ip_of(struct pkt *p)
{
	return (struct iphdr *)(p->b + sizeof(struct ether_header));
}

__attribute__((unused)) static void eth_fill(struct pkt *p, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	struct ether_header eh;

	memcpy(eh.ether_dhost, dst, 6);
	memcpy(eh.ether_shost, src, 6);
	eh.ether_type = htons(type);
	memcpy(p->b, &eh, sizeof(eh));
}

/* Ethernet + IPv4 (valid checksum) + 16 bytes of UDP-ish payload (ports
 * 0x0001 -> 0x0203).  ihl > 5 adds NOPs as options. */
__attribute__((unused)) static void pkt_ipv4_ext(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac,
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

__attribute__((unused)) static void pkt_ipv4(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac,
		     in_addr_t src, in_addr_t dst, uint8_t ttl)
{
	pkt_ipv4_ext(p, dst_mac, src_mac, src, dst, ttl, IPPROTO_UDP, 5, 0);
}

/* Set the UDP destination port of a packet pkt_ipv4*() built (the first
 * 16-bit words after the IP header are the ports). */
__attribute__((unused)) static void pkt_set_dport(struct pkt *p, uint16_t port)
{
	uint8_t *l4 = p->b + sizeof(struct ether_header) + ip_of(p)->ihl * 4;

	l4[2] = (uint8_t)(port >> 8);
	l4[3] = (uint8_t)port;
}

/* A tenant pod's packet (from its own MAC) to dst. */
__attribute__((unused)) static void pkt_from_tenant(struct pkt *p, in_addr_t src, in_addr_t dst)
{
	uint8_t mac[6];

	tenant_mac(src, mac);
	pkt_ipv4(p, gw_b_mac, mac, src, dst, 64);
}

/* A pod's packet to dst: from its MAC to its gateway's. */
__attribute__((unused)) static void pkt_from_a(struct pkt *p, in_addr_t dst, uint8_t ttl)
{
	pkt_ipv4(p, gw_a_mac, pod_a_mac, POD_A_IP, dst, ttl);
}

__attribute__((unused)) static void pkt_arp(struct pkt *p, uint16_t op, const uint8_t *sha, in_addr_t spa, in_addr_t tpa)
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

__attribute__((unused)) static void pkt_ipv6(struct pkt *p)
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

/* A test run of prog_fd on in, with ctx (NULL: none): its verdict, the
 * frame out, and the trace entry. */
__attribute__((unused)) static int run_ctx(struct fixture *f, int prog_fd, const struct pkt *in,
					   struct __sk_buff *ctx, struct result *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in->b, .data_size_in = in->len,
		    .data_out = r->out.b, .data_size_out = sizeof(r->out.b), .ctx_in = ctx,
		    .ctx_size_in = ctx ? sizeof(*ctx) : 0, .repeat = 1);
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

__attribute__((unused)) static int run(struct fixture *f, int prog_fd, const struct pkt *in, struct result *r)
{
	return run_ctx(f, prog_fd, in, NULL, r);
}

/* prog of dp run as a trace runs (datapath_trace_run: armed, the mark in
 * the skb, cb[0..1] a tunnel key for vxlan_ingress), into r as run()
 * fills it. */
__attribute__((unused)) static int run_traced(struct datapath *dp, enum datapath_prog prog, const struct pkt *in,
					      uint32_t vni, uint32_t remote, struct result *r)
{
	const uint32_t cb[2] = { vni, remote };
	struct datapath_trace t;
	int rc = datapath_trace_run(dp, prog, 0, cb, in->b, in->len, &t);

	memset(r, 0, sizeof(*r));
	if (rc < 0)
		return rc;
	r->verdict = (uint32_t)t.action;
	memcpy(r->out.b, t.frame, t.len);
	r->out.len = (uint32_t)t.len;
	r->trace = t.steps;
	return 0;
}

__attribute__((unused)) static int run_pod(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_pod_prog_fd(f->dp), in, r);
}

__attribute__((unused)) static uint64_t drops_of(struct fixture *f, enum weft_drop_reason reason)
{
	uint64_t d[WEFT_DROP_MAX];

	if (datapath_drops(f->dp, d) < 0)
		return UINT64_MAX;
	return d[reason];
}

__attribute__((unused)) static uint64_t drops_total(struct fixture *f)
{
	uint64_t d[WEFT_DROP_MAX], sum = 0;

	if (datapath_drops(f->dp, d) < 0)
		return UINT64_MAX;
	for (int i = 0; i < WEFT_DROP_MAX; i++)
		sum += d[i];
	return sum;
}

/* Runs the test body in a fresh network namespace of this thread, then
 * returns to the original one; the namespace, its devices and their
 * filters go with it. */
__attribute__((unused)) static int netns_enter(int *saved)
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

__attribute__((unused)) static void netns_leave(int saved)
{
	if (saved < 0)
		return;
	if (setns(saved, CLONE_NEWNET) < 0)
		test_fail(__FILE__, __LINE__, "setns back: %s", strerror(errno));
	close(saved);
}

__attribute__((unused)) static int sh(const char *cmd)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "PATH=$PATH:/usr/sbin:/sbin; %s", cmd);
	return system(buf);
}

/* A pod of the other node (10.128.2.9) and its gateway there. */
static const uint8_t remote_pod_mac[6] = { 0x0a, 0x58, 0x0a, 0x80, 0x02, 0x09 };
static const uint8_t remote_gw_mac[6] = { 0xee, 0xee, 0x00, 0x00, 0x02, 0x01 };

/* The packet p as the other node's pod sends it over the tunnel: from its
 * MAC to its gateway's, TTL 63 (one hop done), IP checksum right. */
__attribute__((unused)) static void pkt_from_remote(struct pkt *p)
{
	memcpy(p->b, remote_gw_mac, 6);
	memcpy(p->b + 6, remote_pod_mac, 6);
	ip_of(p)->ttl = 63;
	ip_of(p)->check = 0;
	ip_of(p)->check = htons(ip_checksum(ip_of(p), 20));
}

/* weftvx0, a VXLAN device in external mode on port 4789, up in this
 * namespace (loopback up too): its ifindex, or a negative errno. */
__attribute__((unused)) static int vxlan_dev_up(void)
{
	int ifindex;

	if (sh("ip link set lo up && "
	       "ip link add weftvx0 type vxlan external dstport 4789 && "
	       "ip link set weftvx0 up") != 0)
		return -EIO;
	ifindex = (int)if_nametoindex("weftvx0");
	return ifindex > 0 ? ifindex : -ENODEV;
}

/* Send frame, VXLAN-encapsulated with vni, to this namespace's VXLAN
 * socket; wait until the program has run (the trace count moves). */
__attribute__((unused)) static int vxlan_send(struct fixture *f, uint32_t vni, const struct pkt *frame, struct result *r)
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

/* ---- services: translation, conntrack, refusals (bpf/lib/lb.h) ----
 *
 * The node of seed_node() plus a backend pod here (LOCAL_BE_IP, on the
 * test-run ifindex so that it can answer) and the underlay device's
 * ifindex in the config.  Services are written as the agent writes them:
 * backends, then slots 1..n (and the LOCAL slots), slot 0 last.  Which
 * backend a new connection gets is the program's random choice; the tests
 * assert what holds whatever it is (a backend of the right set, the same
 * one for the same tuple, every one over many tuples). */

#define SVC_IP		IP(10, 96, 0, 10)
#define SVC_PORT	80
#define SVC_ID		1
#define BE_PORT		8080
#define LOCAL_BE_IP	IP(10, 128, 0, 40)
#define REMOTE_BE_IP	REMOTE_POD_IP
#define REMOTE_BE2_IP	IP(10, 128, 2, 10)
#define NODE_PORT	30080
#define VIP_IP		IP(192, 168, 1, 250)	/* a LoadBalancer VIP */
#define OUTSIDE_IP	IP(192, 168, 1, 200)	/* a client outside the cluster */
#define UNDERLAY_IFINDEX 88

#define BE_LOCAL	101	/* backend IDs of the seeded service */
#define BE_REMOTE	102
#define BE_REMOTE2	103

static const uint8_t node_mac[6] = { 0x52, 0x54, 0x00, 0x00, 0x01, 0x0b };
static const uint8_t outside_mac[6] = { 0x52, 0x54, 0x00, 0x00, 0x01, 0xc8 };

__attribute__((unused)) static in_addr_t hairpin_ip(void)
{
	return htonl(WEFT_HAIRPIN_IP);
}

__attribute__((unused)) static int seed_services(struct datapath *dp)
{
	struct weft_config cfg = ready_config();
	struct weft_endpoint be = endpoint(run_ifindex(), VNID_A, pod_a_mac, gw_a_mac);
	int rc;

	if ((rc = seed_node(dp)) < 0)
		return rc;
	tenant_mac(LOCAL_BE_IP, be.pod_mac);
	if ((rc = datapath_endpoint_put(dp, LOCAL_BE_IP, &be)) < 0)
		return rc;
	cfg.underlay_ifindex = UNDERLAY_IFINDEX;
	return datapath_config_set(dp, &cfg);
}

__attribute__((unused)) static int backend_put(struct datapath *dp, uint32_t id, in_addr_t addr, uint16_t port,
		       uint8_t proto, bool local, uint32_t svc_id)
{
	struct weft_backend b;

	memset(&b, 0, sizeof(b));
	b.addr = addr;
	b.port = htons(port);
	b.proto = proto;
	b.flags = local ? WEFT_BE_F_LOCAL : 0;
	b.svc_id = svc_id;
	return datapath_backend_put(dp, id, &b);
}

/* The seeded service's three backends, for a TCP or UDP service. */
__attribute__((unused)) static int backends_put3(struct datapath *dp, uint8_t proto)
{
	int rc;

	if ((rc = backend_put(dp, BE_LOCAL, LOCAL_BE_IP, BE_PORT, proto, true, SVC_ID)) < 0 ||
	    (rc = backend_put(dp, BE_REMOTE, REMOTE_BE_IP, BE_PORT, proto, false, SVC_ID)) < 0)
		return rc;
	return backend_put(dp, BE_REMOTE2, REMOTE_BE2_IP, BE_PORT, proto, false, SVC_ID);
}

struct svc {
	in_addr_t addr;		/* 0: NodePort */
	uint16_t port;		/* host order */
	uint8_t proto;
	uint16_t flags;		/* WEFT_SVC_F_* */
	uint32_t affinity_timeout;
};

__attribute__((unused)) static struct weft_svc_key svc_key(const struct svc *s, uint8_t scope, uint16_t slot)
{
	struct weft_svc_key k;

	memset(&k, 0, sizeof(k));
	k.addr = s->addr;
	k.port = htons(s->port);
	k.proto = s->proto;
	k.scope = scope;
	k.slot = slot;
	return k;
}

__attribute__((unused)) static int slot_put(struct datapath *dp, const struct svc *s, uint8_t scope, uint16_t slot,
		    uint32_t backend_id)
{
	struct weft_svc_key k = svc_key(s, scope, slot);
	struct weft_svc_value v;

	memset(&v, 0, sizeof(v));
	v.backend_id = backend_id;
	return datapath_service_put(dp, &k, &v);
}

__attribute__((unused)) static int svc_head_put(struct datapath *dp, const struct svc *s, uint16_t count,
			uint16_t local_count)
{
	struct weft_svc_key k = svc_key(s, WEFT_SCOPE_ALL, 0);
	struct weft_svc_value v;

	memset(&v, 0, sizeof(v));
	v.svc_id = SVC_ID;
	v.count = count;
	v.local_count = local_count;
	v.flags = s->flags;
	v.affinity_timeout = s->affinity_timeout;
	return datapath_service_put(dp, &k, &v);
}

/* Frontend s with backends ids[0..n) (already in weft_backends) in slots
 * 1..n, those flagged LOCAL also in the LOCAL slots; slot 0 last. */
__attribute__((unused)) static int svc_put(struct datapath *dp, const struct svc *s, const uint32_t *ids, int n)
{
	uint16_t local = 0;
	int rc;

	for (int i = 0; i < n; i++) {
		struct weft_backend b;

		if ((rc = datapath_backend_get(dp, ids[i], &b)) < 0 ||
		    (rc = slot_put(dp, s, WEFT_SCOPE_ALL, (uint16_t)(i + 1), ids[i])) < 0)
			return rc;
		if ((b.flags & WEFT_BE_F_LOCAL) &&
		    (rc = slot_put(dp, s, WEFT_SCOPE_LOCAL, ++local, ids[i])) < 0)
			return rc;
	}
	return svc_head_put(dp, s, (uint16_t)n, local);
}

/* The node of seed_services(), its three backends speaking proto, and s
 * served by the n of them in ids. */
__attribute__((unused)) static int svc_seeded(struct fixture *f, const struct svc *s, uint8_t proto, const uint32_t *ids,
		      int n)
{
	int rc;

	if ((rc = seed_services(f->dp)) < 0 || (rc = backends_put3(f->dp, proto)) < 0)
		return rc;
	return svc_put(f->dp, s, ids, n);
}

static const struct svc cluster_tcp = { SVC_IP, SVC_PORT, IPPROTO_TCP, WEFT_SVC_F_CLUSTER_IP, 0 };
static const struct svc cluster_udp = { SVC_IP, 53, IPPROTO_UDP, WEFT_SVC_F_CLUSTER_IP, 0 };
static const struct svc nodeport_tcp = { 0, NODE_PORT, IPPROTO_TCP, WEFT_SVC_F_NODE_PORT, 0 };

/* ---- service packets: TCP and UDP with real checksums ---- */

__attribute__((unused)) static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

__attribute__((unused)) static void put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

__attribute__((unused)) static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

__attribute__((unused)) static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)get16(b) << 16 | get16(b + 2);
}

__attribute__((unused)) static uint8_t *l4_of(struct pkt *p)
{
	return p->b + sizeof(struct ether_header) + ip_of(p)->ihl * 4;
}

__attribute__((unused)) static uint16_t sport_of(struct pkt *p)
{
	return get16(l4_of(p));
}

__attribute__((unused)) static uint16_t dport_of(struct pkt *p)
{
	return get16(l4_of(p) + 2);
}

/* ones' complement sum of len bytes as 16-bit big-endian words (an odd
 * last byte padded with 0), added to sum */
__attribute__((unused)) static uint32_t sum16(uint32_t sum, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)b[i] << 8 | (i + 1 < len ? b[i + 1] : 0);
	return sum;
}

__attribute__((unused)) static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The TCP/UDP checksum of p computed over pseudo-header and segment,
 * checksum field included: 0 when the field is right. */
__attribute__((unused)) static uint16_t l4_checksum(struct pkt *p)
{
	struct iphdr *ip = ip_of(p);
	uint32_t len = ntohs(ip->tot_len) - ip->ihl * 4u;
	uint8_t ph[12];

	memcpy(ph, &ip->saddr, 4);
	memcpy(ph + 4, &ip->daddr, 4);
	ph[8] = 0;
	ph[9] = ip->protocol;
	put16(ph + 10, (uint16_t)len);
	return fold(sum16(sum16(0, ph, sizeof(ph)), l4_of(p), len));
}

__attribute__((unused)) static uint8_t *l4_check_field(struct pkt *p)
{
	return l4_of(p) + (ip_of(p)->protocol == IPPROTO_TCP ? 16 : 6);
}

__attribute__((unused)) static void l4_checksum_fill(struct pkt *p)
{
	uint16_t c;

	put16(l4_check_field(p), 0);
	c = l4_checksum(p);
	if (c == 0 && ip_of(p)->protocol == IPPROTO_UDP)
		c = 0xffff;	/* 0 would mean "no checksum" */
	put16(l4_check_field(p), c);
}

/* Ethernet + IPv4 (TTL 64) + a 20-byte TCP or 8-byte UDP header + payload
 * bytes 0xa0, 0xa1 ...; every checksum valid. */
__attribute__((unused)) static void pkt_l4(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac, uint8_t proto,
		   in_addr_t src, uint16_t sport, in_addr_t dst, uint16_t dport, size_t payload)
{
	size_t hlen = proto == IPPROTO_TCP ? 20 : 8;
	struct iphdr *ip;
	uint8_t *l4;

	pkt_ipv4_ext(p, dst_mac, src_mac, src, dst, 64, proto, 5, 0);
	ip = ip_of(p);
	ip->tot_len = htons((uint16_t)(sizeof(struct iphdr) + hlen + payload));
	ip->check = 0;
	ip->check = htons(ip_checksum(ip, sizeof(*ip)));
	l4 = l4_of(p);
	memset(l4, 0, hlen);
	put16(l4, sport);
	put16(l4 + 2, dport);
	if (proto == IPPROTO_TCP) {
		l4[12] = 5 << 4;
		put16(l4 + 14, 64240);
	} else {
		put16(l4 + 4, (uint16_t)(hlen + payload));
	}
	for (size_t i = 0; i < payload; i++)
		l4[hlen + i] = (uint8_t)(0xa0 + i);
	p->len = (uint32_t)(sizeof(struct ether_header) + sizeof(struct iphdr) + hlen + payload);
	l4_checksum_fill(p);
}

__attribute__((unused)) static void pkt_tcp(struct pkt *p, const uint8_t *dst_mac, const uint8_t *src_mac, in_addr_t src,
		    uint16_t sport, in_addr_t dst, uint16_t dport, uint8_t flags, uint32_t seq,
		    uint32_t ack)
{
	pkt_l4(p, dst_mac, src_mac, IPPROTO_TCP, src, sport, dst, dport, 0);
	put32(l4_of(p) + 4, seq);
	put32(l4_of(p) + 8, ack);
	l4_of(p)[13] = flags;
	l4_checksum_fill(p);
}

/* From pod A, and from the local backend (its MAC is tenant_mac's). */
__attribute__((unused)) static void tcp_from_a(struct pkt *p, uint16_t sport, in_addr_t dst, uint16_t dport, uint8_t flags)
{
	pkt_tcp(p, gw_a_mac, pod_a_mac, POD_A_IP, sport, dst, dport, flags, 1000, 0);
}

__attribute__((unused)) static void tcp_from_local_be(struct pkt *p, uint16_t sport, in_addr_t dst, uint16_t dport,
			      uint8_t flags)
{
	uint8_t mac[6];

	tenant_mac(LOCAL_BE_IP, mac);
	pkt_tcp(p, gw_a_mac, mac, LOCAL_BE_IP, sport, dst, dport, flags, 5000, 1001);
}

__attribute__((unused)) static void tcp_from_outside(struct pkt *p, uint16_t sport, in_addr_t dst, uint16_t dport,
			     uint8_t flags)
{
	pkt_tcp(p, node_mac, outside_mac, OUTSIDE_IP, sport, dst, dport, flags, 3000, 0);
}

#define TCP_FIN	0x01
#define TCP_SYN	0x02
#define TCP_RST	0x04
#define TCP_ACK	0x10

/* p's addresses and ports (host-order ports) */
#define CHECK_TUPLE(p, s, sp, d, dp)                                      \
	do {                                                              \
		CHECK_EQ(ip_of(p)->saddr, (s));                           \
		CHECK_EQ(sport_of(p), (sp));                              \
		CHECK_EQ(ip_of(p)->daddr, (d));                           \
		CHECK_EQ(dport_of(p), (dp));                              \
	} while (0)

/* IP and transport checksums of p right */
#define CHECK_CSUMS(p)                                                    \
	do {                                                              \
		CHECK_EQ(ip_checksum(ip_of(p), ip_of(p)->ihl * 4u), 0);   \
		CHECK_EQ(l4_checksum(p), 0);                              \
	} while (0)

/* out is in translated and forwarded: same length, TTL one less, the
 * bytes after the ports unchanged but for the checksum, checksums right */
#define CHECK_FORWARDED(in, out)                                          \
	do {                                                              \
		CHECK_EQ((out)->len, (in)->len);                          \
		CHECK_EQ(ip_of(out)->ttl, ip_of(in)->ttl - 1);            \
		CHECK_EQ(ip_of(out)->protocol, ip_of(in)->protocol);      \
		CHECK_CSUMS(out);                                         \
		if (ip_of(in)->protocol == IPPROTO_TCP) {                 \
			CHECK(memcmp(l4_of(out) + 4, l4_of(in) + 4, 12) == 0); \
			CHECK(memcmp(l4_of(out) + 18, l4_of(in) + 18,     \
				     (in)->len - 34 - 18) == 0);           \
		} else {                                                  \
			CHECK(memcmp(l4_of(out) + 4, l4_of(in) + 4, 2) == 0); \
			CHECK(memcmp(l4_of(out) + 8, l4_of(in) + 8,       \
				     (in)->len - 34 - 8) == 0);            \
		}                                                         \
	} while (0)

__attribute__((unused)) static int run_node(struct fixture *f, const struct pkt *in, struct result *r)
{
	return run(f, datapath_node_prog_fd(f->dp), in, r);
}

__attribute__((unused)) static struct weft_ct_key ct_key(in_addr_t saddr, uint16_t sport, in_addr_t daddr, uint16_t dport,
				 uint8_t proto, uint8_t dir)
{
	struct weft_ct_key k;

	memset(&k, 0, sizeof(k));
	k.saddr = saddr;
	k.daddr = daddr;
	k.sport = htons(sport);
	k.dport = htons(dport);
	k.proto = proto;
	k.dir = dir;
	return k;
}

__attribute__((unused)) static int ct_get(struct fixture *f, in_addr_t saddr, uint16_t sport, in_addr_t daddr,
		  uint16_t dport, uint8_t proto, uint8_t dir, struct weft_ct_entry *e)
{
	struct weft_ct_key k = ct_key(saddr, sport, daddr, dport, proto, dir);

	memset(e, 0, sizeof(*e));
	return datapath_ct_get(f->dp, &k, e);
}

/* the TCP connection's FWD and REV entries, keyed as the packets are */
__attribute__((unused)) static int ct_fwd(struct fixture *f, in_addr_t client, uint16_t cport, in_addr_t frontend,
		  uint16_t fport, struct weft_ct_entry *e)
{
	return ct_get(f, client, cport, frontend, fport, IPPROTO_TCP, WEFT_CT_FWD, e);
}

__attribute__((unused)) static int ct_rev(struct fixture *f, in_addr_t backend, uint16_t bport, in_addr_t client,
		  uint16_t cport, struct weft_ct_entry *e)
{
	return ct_get(f, backend, bport, client, cport, IPPROTO_TCP, WEFT_CT_REV, e);
}

__attribute__((unused)) static int count_one(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	(void)k;
	(void)e;
	(*(int *)arg)++;
	return 0;
}

__attribute__((unused)) static int ct_count(struct fixture *f)
{
	int n = 0;

	return datapath_ct_foreach(f->dp, count_one, &n) < 0 ? -1 : n;
}

/* CLOCK_MONOTONIC in conntrack ticks, as the programs' ct_now() */
__attribute__((unused)) static uint32_t now_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)(((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) >>
			  WEFT_CT_TICK_SHIFT);
}

__attribute__((unused)) static bool recent(uint32_t ticks)
{
	return now_ticks() - ticks <= 2;
}

/* An entry e as lb_forward writes it: nat fields, IDs, flags, fresh. */
#define CHECK_CT(e, a1, p1, a2, p2, id, fl)                               \
	do {                                                              \
		CHECK_EQ((e).nat_addr, (a1));                             \
		CHECK_EQ(ntohs((e).nat_port), (p1));                      \
		CHECK_EQ((e).nat_addr2, (a2));                            \
		CHECK_EQ(ntohs((e).nat_port2), (p2));                     \
		CHECK_EQ((e).backend_id, (id));                           \
		CHECK_EQ((e).svc_id, SVC_ID);                             \
		CHECK_EQ((e).flags, (fl));                                \
		CHECK(recent((e).last_seen));                             \
	} while (0)

/* which of the three seeded backends out goes to (-1: none) */
__attribute__((unused)) static int backend_of(struct pkt *out)
{
	static const in_addr_t addrs[] = { LOCAL_BE_IP, REMOTE_BE_IP, REMOTE_BE2_IP };

	for (int i = 0; i < 3; i++)
		if (ip_of(out)->daddr == addrs[i])
			return i;
	return -1;
}

#endif
