/*
 * netlink_test.c — the rtnetlink calls against a real kernel, as root.
 *
 * Every test works in network namespaces it makes itself (a helper thread
 * unshares and hands back an fd); the root namespace is only read, by the
 * first and last tests, to prove it was left as it was.  Closing the fds and
 * handles frees the namespaces and every device in them.
 *
 *    ns[0] ("node")                          ns[1] ("pod")
 *   +--------------------------+            +--------------------------+
 *   | wa  10.77.0.1/24         |=== veth ===| wb  10.77.0.2/24         |
 *   | vx0 vxlan external :4789 |            |                          |
 *   +--------------------------+            +--------------------------+
 *
 * The two packet tests send a UDP datagram across wa/wb (once with ARP,
 * once with NOARP and a static neighbour) to show the configuration is the
 * kernel's, not just what a dump reads back.  Routes are also checked
 * against a naive list under random replace/delete sequences (TEST_SEED).
 */
#include "agent/netlink.h"
#include "test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NNS 2

struct env {
	int ns[NNS];
	struct nl *nl[NNS];
};

static in_addr_t ip4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		abort();
	return a.s_addr;
}

/* ---- namespaces, made and entered from short-lived threads ---------- */

static void *unshare_main(void *arg)
{
	int *fd = arg;

	*fd = unshare(CLONE_NEWNET) < 0 ? -errno : netns_open("/proc/thread-self/ns/net");
	return NULL;
}

/* A fresh network namespace: its fd, or -errno.  The caller's thread never
 * leaves its own namespace. */
static int netns_new(void)
{
	pthread_t t;
	int fd = -EINVAL;

	if (pthread_create(&t, NULL, unshare_main, &fd) != 0)
		return -EAGAIN;
	pthread_join(t, NULL);
	return fd;
}

struct udp_in_ns {
	int ns;
	int fd;
};

static void *udp_socket_main(void *arg)
{
	struct udp_in_ns *u = arg;

	if (setns(u->ns, CLONE_NEWNET) < 0) {
		u->fd = -errno;
		return NULL;
	}
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (u->fd < 0)
		u->fd = -errno;
	return NULL;
}

/* A UDP socket that lives in the namespace of ns (sockets keep the
 * namespace they were made in), or -errno. */
static int udp_socket_in(int ns)
{
	struct udp_in_ns u = { ns, -EINVAL };
	pthread_t t;

	if (pthread_create(&t, NULL, udp_socket_main, &u) != 0)
		return -EAGAIN;
	pthread_join(t, NULL);
	return u.fd;
}

static void env_fini(struct env *e)
{
	for (int i = 0; i < NNS; i++) {
		nl_close(e->nl[i]);
		if (e->ns[i] >= 0)
			close(e->ns[i]);
	}
}

static int env_init(struct env *e)
{
	for (int i = 0; i < NNS; i++) {
		e->ns[i] = -1;
		e->nl[i] = NULL;
	}
	for (int i = 0; i < NNS; i++) {
		e->ns[i] = netns_new();
		if (e->ns[i] < 0)
			return e->ns[i];
		e->nl[i] = nl_open(e->ns[i]);
		if (!e->nl[i])
			return -errno;
	}
	return 0;
}

/* Runs body with fresh namespaces and always tears them down, whether or
 * not a CHECK in body returned early. */
static void with_env(void (*body)(struct env *e))
{
	struct env e;
	int err = env_init(&e);

	if (err)
		test_fail(__FILE__, __LINE__, "making namespaces: %s", strerror(-err));
	else
		body(&e);
	env_fini(&e);
}

/* wa in ns[0] with peer wb in ns[1], both up, 10.77.0.1/24 and .2/24. */
static int make_pair(struct env *e, struct nl_link *wa, struct nl_link *wb)
{
	int err;

	if ((err = nl_veth_create(e->nl[0], "wa", "wb", e->ns[1], 0)) ||
	    (err = nl_link_get(e->nl[0], "wa", wa)) ||
	    (err = nl_link_get(e->nl[1], "wb", wb)) ||
	    (err = nl_addr_add(e->nl[0], wa->ifindex, ip4("10.77.0.1"), 24)) ||
	    (err = nl_addr_add(e->nl[1], wb->ifindex, ip4("10.77.0.2"), 24)) ||
	    (err = nl_link_set_up(e->nl[0], wa->ifindex)) ||
	    (err = nl_link_set_up(e->nl[1], wb->ifindex)))
		return err;
	return 0;
}

/* ---- the root namespace, before and after --------------------------- */

#define MAX_ROOT_LINKS 256

static struct {
	bool taken;
	int nlinks;
	char names[MAX_ROOT_LINKS][IF_NAMESIZE];
	int nfds;
	uint64_t cookie;
} root;

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own fd */
}

struct names {
	int n;
	char (*names)[IF_NAMESIZE];
};

static int collect_name(const struct nl_link *l, void *arg)
{
	struct names *c = arg;

	if (c->n == MAX_ROOT_LINKS)
		return -ENOSPC;
	snprintf(c->names[c->n++], IF_NAMESIZE, "%s", l->name);
	return 0;
}

TEST(netlink_root_snapshot)
{
	static char now[MAX_ROOT_LINKS][IF_NAMESIZE];
	struct names c = { 0, now };
	struct nl *nl = nl_open(-1);

	CHECK(nl != NULL);
	CHECK_EQ(nl_link_foreach(nl, collect_name, &c), 0);
	nl_close(nl);
	CHECK(c.n > 0);		/* lo at least */
	memcpy(root.names, now, sizeof(now));
	root.nlinks = c.n;
	root.cookie = netns_cookie(-1);
	root.nfds = count_fds();
	root.taken = true;
	CHECK(root.cookie != 0);
}

/* ---- namespaces and handles ----------------------------------------- */

TEST(netlink_netns_open_and_cookie)
{
	uint64_t home = netns_cookie(-1);
	int ns = netns_new(), bad;
	struct nl *nl;

	CHECK(ns >= 0);
	CHECK(home != 0);
	CHECK(netns_cookie(ns) != 0);
	CHECK(netns_cookie(ns) != home);
	nl = nl_open(ns);
	if (!nl)
		close(ns);
	CHECK(nl != NULL);
	CHECK_EQ(netns_cookie(-1), home);	/* the thread came back */
	nl_close(nl);
	close(ns);
	CHECK_EQ(netns_open("/nonexistent/netns"), -ENOENT);
	CHECK_EQ(netns_cookie(987654), 0);

	/* an fd that is not a namespace: NULL, EINVAL, still at home */
	bad = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(bad >= 0);
	errno = 0;
	nl = nl_open(bad);
	close(bad);
	CHECK(nl == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(netns_cookie(-1), home);
}

/* ---- links ---------------------------------------------------------- */

static void veth_body(struct env *e)
{
	struct nl_link a, b, again;

	CHECK_EQ(nl_veth_create(e->nl[0], "wa", "wb", e->ns[1], 1400), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wa", &a), 0);
	CHECK_STR(a.name, "wa");
	CHECK_STR(a.kind, "veth");
	CHECK_EQ(a.mtu, 1400);
	CHECK(!(a.flags & IFF_UP));
	CHECK_EQ(a.master, 0);
	CHECK(a.mac[0] | a.mac[1] | a.mac[2] | a.mac[3] | a.mac[4] | a.mac[5]);

	/* the peer is in the other namespace, and only there */
	CHECK_EQ(nl_link_get(e->nl[1], "wb", &b), 0);
	CHECK_STR(b.kind, "veth");
	CHECK_EQ(b.mtu, 1400);
	CHECK(memcmp(a.mac, b.mac, 6) != 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wb", &again), -ENODEV);
	CHECK_EQ(nl_link_get(e->nl[1], "wa", &again), -ENODEV);

	CHECK_EQ(nl_link_get_index(e->nl[0], a.ifindex, &again), 0);
	CHECK_STR(again.name, "wa");
	CHECK(memcmp(again.mac, a.mac, 6) == 0);

	/* either name taken: -EEXIST and nothing made */
	CHECK_EQ(nl_veth_create(e->nl[0], "wa", "wb", e->ns[1], 1400), -EEXIST);
	CHECK_EQ(nl_veth_create(e->nl[0], "wc", "wb", e->ns[1], 0), -EEXIST);
	CHECK_EQ(nl_link_get(e->nl[0], "wc", &again), -ENODEV);
	CHECK_EQ(nl_veth_create(e->nl[0], "wa", "wd", e->ns[1], 0), -EEXIST);
	CHECK_EQ(nl_link_get(e->nl[1], "wd", &again), -ENODEV);

	/* MTU 0: the kernel's default */
	CHECK_EQ(nl_veth_create(e->nl[0], "we", "wf", -1, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wf", &again), 0);
	CHECK_EQ(again.mtu, 1500);

	CHECK_EQ(nl_link_get(e->nl[0], "a-name-far-too-long", &again), -EINVAL);
	CHECK_EQ(nl_veth_create(e->nl[0], "a-name-far-too-long", "x", -1, 0), -EINVAL);
}

TEST(netlink_veth_peer_in_other_netns) { with_env(veth_body); }

static void link_change_body(struct env *e)
{
	struct nl_link a, b;

	CHECK_EQ(nl_veth_create(e->nl[0], "wa", "wb", -1, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wa", &a), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wb", &b), 0);

	CHECK_EQ(nl_link_set_up(e->nl[0], a.ifindex), 0);
	CHECK_EQ(nl_link_set_mtu(e->nl[0], a.ifindex, 1300), 0);
	CHECK_EQ(nl_link_set_noarp(e->nl[0], a.ifindex, true), 0);
	CHECK_EQ(nl_link_get_index(e->nl[0], a.ifindex, &a), 0);
	CHECK(a.flags & IFF_UP);
	CHECK(a.flags & IFF_NOARP);
	CHECK_EQ(a.mtu, 1300);
	CHECK_EQ(nl_link_set_noarp(e->nl[0], a.ifindex, false), 0);
	CHECK_EQ(nl_link_get_index(e->nl[0], a.ifindex, &a), 0);
	CHECK(!(a.flags & IFF_NOARP));
	CHECK(a.flags & IFF_UP);	/* ifi_change touched only NOARP */

	CHECK_EQ(nl_link_del(e->nl[0], a.ifindex), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wa", &a), -ENODEV);
	CHECK_EQ(nl_link_get_index(e->nl[0], b.ifindex, &b), -ENODEV);	/* the pair */
	CHECK_EQ(nl_link_del(e->nl[0], a.ifindex), -ENODEV);
	CHECK_EQ(nl_link_set_up(e->nl[0], a.ifindex), -ENODEV);
	CHECK_EQ(nl_link_set_mtu(e->nl[0], 1, 0), -EINVAL);
}

TEST(netlink_link_up_mtu_noarp_del) { with_env(link_change_body); }

static void vxlan_body(struct env *e)
{
	struct nl_link vx, lo;
	bool external = false;
	uint16_t port = 0;

	CHECK_EQ(nl_vxlan_create(e->nl[0], "vx0", 4789, 1450), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "vx0", &vx), 0);
	CHECK_STR(vx.kind, "vxlan");
	CHECK_EQ(vx.mtu, 1450);
	CHECK_EQ(nl_vxlan_info(e->nl[0], vx.ifindex, &external, &port), 0);
	CHECK(external);
	CHECK_EQ(port, 4789);
	CHECK_EQ(nl_vxlan_create(e->nl[0], "vx0", 4789, 1450), -EEXIST);
	CHECK_EQ(nl_link_set_up(e->nl[0], vx.ifindex), 0);

	/* a second device on another port, host order in and out */
	CHECK_EQ(nl_vxlan_create(e->nl[1], "vx1", 8472, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[1], "vx1", &vx), 0);
	CHECK_EQ(nl_vxlan_info(e->nl[1], vx.ifindex, &external, &port), 0);
	CHECK_EQ(port, 8472);

	CHECK_EQ(nl_link_get(e->nl[0], "lo", &lo), 0);
	CHECK_STR(lo.kind, "");
	CHECK_EQ(nl_vxlan_info(e->nl[0], lo.ifindex, &external, &port), -EINVAL);
	CHECK_EQ(nl_vxlan_info(e->nl[0], 4242, &external, &port), -ENODEV);
}

TEST(netlink_vxlan_external) { with_env(vxlan_body); }

/* ---- addresses ------------------------------------------------------ */

static void addr_body(struct env *e)
{
	struct nl_link a, b;
	int ifindex = 0;

	CHECK_EQ(nl_veth_create(e->nl[0], "wa", "wb", -1, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wa", &a), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "wb", &b), 0);

	CHECK_EQ(nl_addr_add(e->nl[0], a.ifindex, ip4("10.1.0.1"), 24), 0);
	CHECK_EQ(nl_addr_add(e->nl[0], a.ifindex, ip4("10.1.0.1"), 24), 0);
	CHECK_EQ(nl_addr_add(e->nl[0], b.ifindex, ip4("10.1.1.1"), 32), 0);
	CHECK_EQ(nl_addr_find(e->nl[0], ip4("10.1.0.1"), &ifindex), 0);
	CHECK_EQ(ifindex, a.ifindex);
	CHECK_EQ(nl_addr_find(e->nl[0], ip4("10.1.1.1"), &ifindex), 0);
	CHECK_EQ(ifindex, b.ifindex);
	CHECK_EQ(nl_addr_find(e->nl[0], ip4("10.1.0.2"), &ifindex), -ENOENT);
	CHECK_EQ(nl_addr_find(e->nl[1], ip4("10.1.0.1"), &ifindex), -ENOENT);

	CHECK_EQ(nl_addr_del(e->nl[0], a.ifindex, ip4("10.1.0.1"), 24), 0);
	CHECK_EQ(nl_addr_find(e->nl[0], ip4("10.1.0.1"), &ifindex), -ENOENT);
	CHECK_EQ(nl_addr_del(e->nl[0], a.ifindex, ip4("10.1.0.1"), 24), -EADDRNOTAVAIL);
	CHECK_EQ(nl_addr_add(e->nl[0], 4242, ip4("10.1.0.1"), 24), -ENODEV);
	CHECK_EQ(nl_addr_add(e->nl[0], a.ifindex, ip4("10.1.0.1"), 33), -EINVAL);
}

TEST(netlink_addresses) { with_env(addr_body); }

/* ---- routes --------------------------------------------------------- */

#define MAX_ROUTES 512

struct route_list {
	int n;
	struct nl_route r[MAX_ROUTES];
};

static int collect_route(const struct nl_route *r, void *arg)
{
	struct route_list *l = arg;

	if (l->n == MAX_ROUTES)
		return -ENOSPC;
	l->r[l->n++] = *r;
	return 0;
}

static const struct nl_route *route_find(const struct route_list *l, const char *dst, int len)
{
	for (int i = 0; i < l->n; i++)
		if (l->r[i].dst == ip4(dst) && l->r[i].prefixlen == len)
			return &l->r[i];
	return NULL;
}

static int route_count(const struct route_list *l, const char *dst, int len)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		n += l->r[i].dst == ip4(dst) && l->r[i].prefixlen == len;
	return n;
}

static void routes_body(struct env *e)
{
	static struct route_list l;
	struct nl_link wa, wb, vx;
	const struct nl_route *got;
	struct nl_route r;

	CHECK_EQ(make_pair(e, &wa, &wb), 0);
	CHECK_EQ(nl_vxlan_create(e->nl[0], "vx0", 4789, 1450), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "vx0", &vx), 0);
	CHECK_EQ(nl_link_set_up(e->nl[0], vx.ifindex), 0);

	/* via a gateway, with a preferred source and an MTU */
	r = (struct nl_route){ .dst = ip4("10.2.0.0"), .prefixlen = 24, .ifindex = wa.ifindex,
			       .gateway = ip4("10.77.0.2"), .src = ip4("10.77.0.1"), .mtu = 1300 };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	/* on the link */
	r = (struct nl_route){ .dst = ip4("10.3.0.0"), .prefixlen = 24, .ifindex = wa.ifindex };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	/* a gateway outside every subnet: only with onlink */
	r = (struct nl_route){ .dst = ip4("10.4.0.0"), .prefixlen = 24, .ifindex = wa.ifindex,
			       .gateway = ip4("192.168.9.9") };
	CHECK(nl_route_replace(e->nl[0], &r) < 0);
	r.onlink = true;
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	r = (struct nl_route){ .dst = ip4("10.5.0.0"), .prefixlen = 24, .type = NL_ROUTE_UNREACHABLE };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	r = (struct nl_route){ .dst = ip4("10.6.0.0"), .prefixlen = 16, .type = NL_ROUTE_BLACKHOLE };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	/* through the collect-metadata device, VNI and remote per route */
	r = (struct nl_route){ .dst = ip4("10.7.0.0"), .prefixlen = 24, .ifindex = vx.ifindex,
			       .encap = true, .encap_id = 0xabcdef, .encap_dst = ip4("192.168.1.7") };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	r = (struct nl_route){ .dst = ip4("10.8.0.5"), .prefixlen = 32, .ifindex = vx.ifindex,
			       .encap = true, .encap_id = 7, .encap_dst = ip4("192.168.1.8"),
			       .mtu = 1400 };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);

	l.n = 0;
	CHECK_EQ(nl_route_foreach(e->nl[0], collect_route, &l), 0);

	CHECK((got = route_find(&l, "10.77.0.0", 24)));		/* the kernel's own */
	CHECK_EQ(got->ifindex, wa.ifindex);
	CHECK_EQ(got->src, ip4("10.77.0.1"));

	CHECK((got = route_find(&l, "10.2.0.0", 24)));
	CHECK_EQ(got->type, NL_ROUTE_UNICAST);
	CHECK_EQ(got->ifindex, wa.ifindex);
	CHECK_EQ(got->gateway, ip4("10.77.0.2"));
	CHECK_EQ(got->src, ip4("10.77.0.1"));
	CHECK_EQ(got->mtu, 1300);
	CHECK(!got->onlink && !got->encap);

	CHECK((got = route_find(&l, "10.3.0.0", 24)));
	CHECK_EQ(got->ifindex, wa.ifindex);
	CHECK_EQ(got->gateway, 0);
	CHECK_EQ(got->mtu, 0);

	CHECK((got = route_find(&l, "10.4.0.0", 24)));
	CHECK(got->onlink);
	CHECK_EQ(got->gateway, ip4("192.168.9.9"));

	CHECK((got = route_find(&l, "10.5.0.0", 24)));
	CHECK_EQ(got->type, NL_ROUTE_UNREACHABLE);
	CHECK_EQ(got->ifindex, 0);
	CHECK((got = route_find(&l, "10.6.0.0", 16)));
	CHECK_EQ(got->type, NL_ROUTE_BLACKHOLE);

	CHECK((got = route_find(&l, "10.7.0.0", 24)));
	CHECK(got->encap);
	CHECK_EQ(got->encap_id, 0xabcdef);
	CHECK_EQ(got->encap_dst, ip4("192.168.1.7"));
	CHECK_EQ(got->ifindex, vx.ifindex);
	CHECK((got = route_find(&l, "10.8.0.5", 32)));
	CHECK(got->encap);
	CHECK_EQ(got->encap_id, 7);
	CHECK_EQ(got->encap_dst, ip4("192.168.1.8"));
	CHECK_EQ(got->mtu, 1400);

	/* the kernel's lookup for one address (nl_route_get, `ip route get`) */
	{
		struct nl_route q;

		CHECK_EQ(nl_route_get(e->nl[0], ip4("10.7.0.42"), &q), 0);
		CHECK_EQ(q.type, NL_ROUTE_UNICAST);
		CHECK_EQ(q.ifindex, vx.ifindex);
		CHECK(q.encap);
		CHECK_EQ(q.encap_id, 0xabcdef);
		CHECK_EQ(q.encap_dst, ip4("192.168.1.7"));
		CHECK_EQ(nl_route_get(e->nl[0], ip4("10.3.0.9"), &q), 0);
		CHECK_EQ(q.type, NL_ROUTE_UNICAST);
		CHECK_EQ(q.ifindex, wa.ifindex);
		CHECK(!q.encap);
		CHECK_EQ(nl_route_get(e->nl[0], ip4("10.77.0.1"), &q), 0);	/* its own address */
		CHECK_EQ(q.type, NL_ROUTE_LOCAL);
		CHECK_EQ(nl_route_get(e->nl[0], ip4("10.5.0.1"), &q), 0);
		CHECK_EQ(q.type, NL_ROUTE_UNREACHABLE);
		CHECK_EQ(nl_route_get(e->nl[0], ip4("10.6.1.1"), &q), 0);	/* blackhole */
		CHECK_EQ(q.type, NL_ROUTE_UNREACHABLE);
		CHECK_EQ(q.ifindex, 0);
	}

	/* replace changes the route in place: one route, the new type */
	r = (struct nl_route){ .dst = ip4("10.3.0.0"), .prefixlen = 24, .type = NL_ROUTE_UNREACHABLE };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	r = (struct nl_route){ .dst = ip4("10.7.0.0"), .prefixlen = 24, .ifindex = vx.ifindex,
			       .encap = true, .encap_id = 99, .encap_dst = ip4("192.168.1.9") };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
	l.n = 0;
	CHECK_EQ(nl_route_foreach(e->nl[0], collect_route, &l), 0);
	CHECK_EQ(route_count(&l, "10.3.0.0", 24), 1);
	CHECK_EQ(route_find(&l, "10.3.0.0", 24)->type, NL_ROUTE_UNREACHABLE);
	CHECK_EQ(route_count(&l, "10.7.0.0", 24), 1);
	CHECK_EQ(route_find(&l, "10.7.0.0", 24)->encap_id, 99);
	CHECK_EQ(route_find(&l, "10.7.0.0", 24)->encap_dst, ip4("192.168.1.9"));

	CHECK_EQ(nl_route_del(e->nl[0], ip4("10.2.0.0"), 24), 0);
	CHECK_EQ(nl_route_del(e->nl[0], ip4("10.2.0.0"), 24), -ESRCH);
	CHECK_EQ(nl_route_del(e->nl[0], ip4("10.5.0.0"), 24), 0);
	CHECK_EQ(nl_route_del(e->nl[0], ip4("10.6.0.0"), 24), -ESRCH);	/* it is a /16 */
	l.n = 0;
	CHECK_EQ(nl_route_foreach(e->nl[0], collect_route, &l), 0);
	CHECK(!route_find(&l, "10.2.0.0", 24));
	CHECK(!route_find(&l, "10.5.0.0", 24));
	CHECK(route_find(&l, "10.6.0.0", 16));

	/* host bits set, bad prefix: the kernel's EINVAL, or ours */
	r = (struct nl_route){ .dst = ip4("10.9.0.1"), .prefixlen = 24, .type = NL_ROUTE_BLACKHOLE };
	CHECK_EQ(nl_route_replace(e->nl[0], &r), -EINVAL);
	r.prefixlen = 40;
	CHECK_EQ(nl_route_replace(e->nl[0], &r), -EINVAL);
}

TEST(netlink_routes_round_trip) { with_env(routes_body); }

/* Random replace/delete of routes under 10.200.0.0/16 against a plain
 * array; after every round the dump must equal the array. */
struct ref_route {
	bool present;
	in_addr_t dst;
	int prefixlen;
	struct nl_route r;
};

#define REF_SLOTS 64

static uint64_t rng_state;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static bool routes_match(const struct route_list *l, const struct ref_route *ref)
{
	int seen = 0;

	for (int i = 0; i < l->n; i++) {
		const struct nl_route *r = &l->r[i];
		const struct ref_route *want = NULL;

		if ((ntohl(r->dst) >> 16) != ((10u << 8) | 200u))
			continue;
		for (int s = 0; s < REF_SLOTS; s++)
			if (ref[s].present && ref[s].dst == r->dst && ref[s].prefixlen == r->prefixlen)
				want = &ref[s];
		if (!want || want->r.type != r->type || want->r.ifindex != r->ifindex ||
		    want->r.encap != r->encap || want->r.encap_id != r->encap_id ||
		    want->r.encap_dst != r->encap_dst || want->r.mtu != r->mtu)
			return false;
		seen++;
	}
	for (int s = 0; s < REF_SLOTS; s++)
		seen -= ref[s].present;
	return seen == 0;
}

static void routes_random_body(struct env *e)
{
	static struct ref_route ref[REF_SLOTS];
	static struct route_list l;
	struct nl_link wa, wb, vx;

	rng_state = test_seed() | 1;
	memset(ref, 0, sizeof(ref));
	CHECK_EQ(make_pair(e, &wa, &wb), 0);
	CHECK_EQ(nl_vxlan_create(e->nl[0], "vx0", 4789, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "vx0", &vx), 0);
	CHECK_EQ(nl_link_set_up(e->nl[0], vx.ifindex), 0);
	/* slot s is one fixed prefix: 10.200.s.0/24, or 10.200.s.1/32 */
	for (int s = 0; s < REF_SLOTS; s++) {
		ref[s].prefixlen = s % 2 ? 32 : 24;
		ref[s].dst = htonl((10u << 24) | (200u << 16) | ((unsigned)s << 8) | (s % 2));
	}
	for (int round = 0; round < 8; round++) {
		for (int op = 0; op < 64; op++) {
			struct ref_route *x = &ref[rng() % REF_SLOTS];
			struct nl_route r = { .dst = x->dst, .prefixlen = x->prefixlen };
			int err;

			if (rng() % 4 == 0) {
				err = nl_route_del(e->nl[0], x->dst, x->prefixlen);
				CHECK_EQ(err, x->present ? 0 : -ESRCH);
				x->present = false;
				continue;
			}
			switch (rng() % 4) {
			case 0: r.type = NL_ROUTE_UNREACHABLE; break;
			case 1: r.type = NL_ROUTE_BLACKHOLE; break;
			case 2: r.ifindex = wa.ifindex; r.mtu = rng() % 2 ? 1200 + (int)(rng() % 200) : 0; break;
			default:
				r.ifindex = vx.ifindex;
				r.encap = true;
				r.encap_id = rng() & 0xffffff;
				r.encap_dst = htonl(0xc0a80000u | (rng() & 0xffff));
				break;
			}
			CHECK_EQ(nl_route_replace(e->nl[0], &r), 0);
			x->present = true;
			x->r = r;
		}
		l.n = 0;
		CHECK_EQ(nl_route_foreach(e->nl[0], collect_route, &l), 0);
		CHECK(routes_match(&l, ref));
	}
}

TEST(netlink_routes_random_against_list) { with_env(routes_random_body); }

/* ---- neighbours, route lookups -------------------------------------- */

static void neigh_body(struct env *e)
{
	const uint8_t mac[6] = { 0x02, 0x00, 0x0a, 0x4d, 0x00, 0x09 };
	struct nl_link wa, wb;
	in_addr_t src = 0;
	int ifindex = 0;

	CHECK_EQ(make_pair(e, &wa, &wb), 0);
	CHECK_EQ(nl_neigh_replace(e->nl[0], wa.ifindex, ip4("10.77.0.9"), mac), 0);
	CHECK_EQ(nl_neigh_replace(e->nl[0], wa.ifindex, ip4("10.77.0.9"), wb.mac), 0);
	CHECK_EQ(nl_neigh_replace(e->nl[0], 4242, ip4("10.77.0.9"), mac), -ENODEV);

	CHECK_EQ(nl_route_get_dev(e->nl[0], ip4("10.77.0.9"), &ifindex, &src), 0);
	CHECK_EQ(ifindex, wa.ifindex);
	CHECK_EQ(src, ip4("10.77.0.1"));
	CHECK_EQ(nl_route_get_dev(e->nl[1], ip4("10.77.0.1"), &ifindex, NULL), 0);
	CHECK_EQ(ifindex, wb.ifindex);
	CHECK_EQ(nl_route_get_dev(e->nl[0], ip4("8.8.8.8"), &ifindex, &src), -ENETUNREACH);
}

TEST(netlink_neighbour_and_route_get) { with_env(neigh_body); }

/* ---- packets -------------------------------------------------------- */

/* Sends from a socket in ns[from] to to_ip:port until a socket bound in
 * ns[to] receives "weft", for at most ~3 s.  0, or -ETIMEDOUT / -errno. */
static int udp_crosses(struct env *e, int from, int to, in_addr_t from_ip, in_addr_t to_ip)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7777),
				   .sin_addr.s_addr = to_ip };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	int tx = -1, rx = -1, err = -ETIMEDOUT;
	char buf[16];

	tx = udp_socket_in(e->ns[from]);
	rx = udp_socket_in(e->ns[to]);
	if (tx < 0 || rx < 0) {
		err = tx < 0 ? tx : rx;
		goto out;
	}
	if (bind(rx, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		err = -errno;
		goto out;
	}
	for (int i = 0; i < 30; i++) {
		struct pollfd p = { .fd = rx, .events = POLLIN };

		if (sendto(tx, "weft", 4, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0 &&
		    errno != EAGAIN) {
			err = -errno;
			goto out;
		}
		if (poll(&p, 1, 100) == 1) {
			ssize_t n = recvfrom(rx, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);

			if (n == 4 && memcmp(buf, "weft", 4) == 0 && peer.sin_addr.s_addr == from_ip)
				err = 0;
			else
				err = -EBADMSG;
			goto out;
		}
	}
out:
	if (tx >= 0)
		close(tx);
	if (rx >= 0)
		close(rx);
	return err;
}

static void packet_body(struct env *e)
{
	struct nl_link wa, wb;

	CHECK_EQ(make_pair(e, &wa, &wb), 0);
	CHECK_EQ(udp_crosses(e, 0, 1, ip4("10.77.0.1"), ip4("10.77.0.2")), 0);
}

TEST(netlink_packet_crosses_veth) { with_env(packet_body); }

static void noarp_body(struct env *e)
{
	struct nl_link wa, wb;

	/* without ARP, wb would send to its own MAC; the static entry gives
	 * the right one */
	CHECK_EQ(make_pair(e, &wa, &wb), 0);
	CHECK_EQ(nl_link_set_noarp(e->nl[1], wb.ifindex, true), 0);
	CHECK_EQ(nl_neigh_replace(e->nl[1], wb.ifindex, ip4("10.77.0.1"), wa.mac), 0);
	CHECK_EQ(udp_crosses(e, 1, 0, ip4("10.77.0.2"), ip4("10.77.0.1")), 0);
}

TEST(netlink_packet_noarp_static_neighbour) { with_env(noarp_body); }

/* A namespace's devices go with it, the far end of a veth included. */
static void teardown_body(struct env *e)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	struct nl_link l;
	struct nl *nl;
	int ns, err = 0;

	ns = netns_new();
	CHECK(ns >= 0);
	nl = nl_open(ns);
	if (nl)
		err = nl_veth_create(nl, "gone", "gone-peer", e->ns[1], 0);
	nl_close(nl);
	close(ns);
	CHECK(nl != NULL);
	CHECK_EQ(err, 0);
	/* namespaces are dismantled asynchronously: poll, up to ~5 s */
	for (int i = 0; i < 250 && nl_link_get(e->nl[1], "gone-peer", &l) == 0; i++)
		nanosleep(&tick, NULL);
	CHECK_EQ(nl_link_get(e->nl[1], "gone-peer", &l), -ENODEV);
}

TEST(netlink_namespace_teardown_removes_devices) { with_env(teardown_body); }

/* ---- handles and threads -------------------------------------------- */

struct worker {
	int ns;
	int id;
	int rounds_done;
	int err;
	const char *line;
};

#define WCHECK(w, expr)                                                     \
	do {                                                                \
		int e_ = (expr);                                            \
		if (e_) {                                                   \
			(w)->err = e_;                                      \
			(w)->line = #expr;                                  \
			goto out;                                           \
		}                                                           \
	} while (0)

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t home = netns_cookie(-1);
	char mine[IF_NAMESIZE], theirs[IF_NAMESIZE], a[IF_NAMESIZE], b[IF_NAMESIZE];
	struct nl_link l;
	struct nl *nl = nl_open(w->ns);
	int ifindex;

	if (!nl) {
		w->err = -errno;
		w->line = "nl_open";
		return NULL;
	}
	WCHECK(w, netns_cookie(-1) != home);
	snprintf(mine, sizeof(mine), "m%d", w->id);
	snprintf(theirs, sizeof(theirs), "m%d", 1 - w->id);
	WCHECK(w, nl_veth_create(nl, mine, "mpeer", -1, 0));
	for (int i = 0; i < 100; i++) {
		in_addr_t ip = htonl(0x0a580000u | (unsigned)i);

		snprintf(a, sizeof(a), "t%d-%d", w->id, i);
		snprintf(b, sizeof(b), "u%d-%d", w->id, i);
		WCHECK(w, nl_veth_create(nl, a, b, -1, 1400));
		WCHECK(w, nl_link_get(nl, a, &l));
		WCHECK(w, nl_addr_add(nl, l.ifindex, ip, 32));
		WCHECK(w, nl_addr_find(nl, ip, &ifindex));
		WCHECK(w, ifindex != l.ifindex);
		WCHECK(w, nl_link_get(nl, theirs, &l) != -ENODEV);
		WCHECK(w, nl_link_del(nl, ifindex));
		w->rounds_done++;
	}
	WCHECK(w, nl_link_get(nl, mine, &l));
out:
	nl_close(nl);
	return NULL;
}

static void threads_body(struct env *e)
{
	struct worker w[NNS];
	pthread_t t[NNS];
	struct nl_link l;

	for (int i = 0; i < NNS; i++) {
		w[i] = (struct worker){ .ns = e->ns[i], .id = i, .line = "" };
		CHECK_EQ(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < NNS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NNS; i++) {
		if (w[i].err)
			test_fail(__FILE__, __LINE__, "worker %d: %s: %d", i, w[i].line, w[i].err);
		CHECK_EQ(w[i].err, 0);
		CHECK_EQ(w[i].rounds_done, 100);
	}
	/* each made its device in its own namespace */
	CHECK_EQ(nl_link_get(e->nl[0], "m0", &l), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "m1", &l), -ENODEV);
	CHECK_EQ(nl_link_get(e->nl[1], "m1", &l), 0);
	CHECK_EQ(nl_link_get(e->nl[1], "m0", &l), -ENODEV);
}

TEST(netlink_two_threads_two_namespaces) { with_env(threads_body); }

static void one_thread_body(struct env *e)
{
	struct nl_link a, b;

	/* the same name in two namespaces, from one thread */
	CHECK_EQ(nl_veth_create(e->nl[0], "same", "same-peer", -1, 0), 0);
	CHECK_EQ(nl_veth_create(e->nl[1], "same", "same-peer", -1, 0), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "same", &a), 0);
	CHECK_EQ(nl_link_get(e->nl[1], "same", &b), 0);
	CHECK(memcmp(a.mac, b.mac, 6) != 0);
	CHECK_EQ(nl_link_del(e->nl[0], a.ifindex), 0);
	CHECK_EQ(nl_link_get(e->nl[0], "same", &a), -ENODEV);
	CHECK_EQ(nl_link_get(e->nl[1], "same", &b), 0);
}

TEST(netlink_one_thread_many_handles) { with_env(one_thread_body); }

/* ---- dumps that stop early ------------------------------------------ */

static int stop_at_three(const struct nl_link *l, void *arg)
{
	int *n = arg;

	return ++*n == 3 ? 42 : 0;
}

static int count_link(const struct nl_link *l, void *arg)
{
	++*(int *)arg;
	return 0;
}

static int stop_route(const struct nl_route *r, void *arg)
{
	return -ECANCELED;
}

static void stop_body(struct env *e)
{
	char a[IF_NAMESIZE], b[IF_NAMESIZE];
	struct nl_link l;
	int n = 0;

	/* enough links that one dump takes several reads */
	for (int i = 0; i < 80; i++) {
		snprintf(a, sizeof(a), "s%d", i);
		snprintf(b, sizeof(b), "p%d", i);
		CHECK_EQ(nl_veth_create(e->nl[0], a, b, -1, 0), 0);
	}
	CHECK_EQ(nl_link_foreach(e->nl[0], stop_at_three, &n), 42);
	CHECK_EQ(n, 3);
	/* the rest of that dump was read: the next calls see their own replies */
	CHECK_EQ(nl_link_get(e->nl[0], "s79", &l), 0);
	CHECK_STR(l.name, "s79");
	n = 0;
	CHECK_EQ(nl_link_foreach(e->nl[0], count_link, &n), 0);
	CHECK_EQ(n, 161);
	CHECK_EQ(nl_addr_add(e->nl[0], l.ifindex, ip4("10.9.9.9"), 24), 0);
	CHECK_EQ(nl_link_set_up(e->nl[0], l.ifindex), 0);
	CHECK_EQ(nl_route_foreach(e->nl[0], stop_route, NULL), -ECANCELED);
	CHECK_EQ(nl_route_del(e->nl[0], ip4("10.1.2.0"), 24), -ESRCH);
}

TEST(netlink_foreach_stops_early) { with_env(stop_body); }

/* ---- last: the root namespace is as it was -------------------------- */

/* Names this file gives devices (other tests on the machine may add and
 * remove their own root links meanwhile, so only ours are looked for). */
static bool ours(const char *name)
{
	static const char *const exact[] = { "wa", "wb", "wc", "wd", "we", "wf", "vx0", "vx1",
					     "m0", "m1", "mpeer", "same", "same-peer",
					     "gone", "gone-peer" };
	unsigned n;
	char c;

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(name, exact[i]) == 0)
			return true;
	return sscanf(name, "%1[sp]%u%c", (char[2]){ 0 }, &n, &c) == 2 ||
	       sscanf(name, "%1[tu]%u-%u%c", (char[2]){ 0 }, &n, &n, &c) == 3;
}

TEST(netlink_root_untouched)
{
	static char now[MAX_ROOT_LINKS][IF_NAMESIZE];
	struct names c = { 0, now };
	struct nl *nl;

	CHECK(root.taken);
	CHECK_EQ(netns_cookie(-1), root.cookie);
	nl = nl_open(-1);
	CHECK(nl != NULL);
	CHECK_EQ(nl_link_foreach(nl, collect_name, &c), 0);
	nl_close(nl);
	for (int i = 0; i < c.n; i++) {
		bool before = false;

		for (int j = 0; j < root.nlinks; j++)
			before |= strcmp(now[i], root.names[j]) == 0;
		if (!before && ours(now[i]))
			test_fail(__FILE__, __LINE__, "root namespace has our link %s", now[i]);
	}
	CHECK(!test_failed());
	/* every namespace fd and handle closed: the namespaces are gone */
	CHECK_EQ(count_fds(), root.nfds);
}
