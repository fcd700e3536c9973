/*
 * netlink.c — rtnetlink on libmnl: links (veth, VXLAN, dummy, ifb), addresses,
 * routes (with lwtunnel IP encapsulation) and neighbours, one network
 * namespace per handle.
 *
 * A handle is one NETLINK_ROUTE socket.  A socket belongs for its whole life
 * to the network namespace of the thread that created it, so nl_open()
 * enters the target namespace (setns on the calling thread), creates the
 * socket, and goes back at once; every later call is an ordinary
 * send/receive with no namespace switching.
 *
 * Every call is one exchange, request then replies up to a terminator:
 *
 *   talk():  send(seq) --> [data message]* --> NLMSG_ERROR (ack: 0 or -errno)
 *                                         \-> NLMSG_DONE  (end of a dump)
 *
 * Requests that are not dumps carry NLM_F_ACK, so even a "get" ends with an
 * explicit ack and the kernel's error, if any, is what the call returns.
 * Data messages are handed to a per-call parser; when the parser (or a
 * caller's foreach function) returns non-zero, later messages are still
 * read, up to the terminator, but no longer parsed.
 *
 * Invariants:
 *   1. Between calls the socket holds no unread message of an exchange that
 *      finished normally (talk() always reads to the terminator).
 *   2. Each exchange has a fresh sequence number.  Messages with another
 *      sequence number, or from a port other than the kernel's (0) or ours,
 *      are leftovers of an exchange cut short by a receive error and are
 *      dropped, never parsed.
 *   3. Requests are built in a fixed buffer (NL_REQ_SIZE).  Every string
 *      that goes into one is checked against IF_NAMESIZE first, so no
 *      request can outgrow it (the largest, a veth pair, is under 200 bytes).
 *   4. Replies are received into a buffer of NL_RECV_SIZE; the kernel sizes
 *      dump batches to the reader's buffer, and a message that would not
 *      fit is reported (-ENOSPC), never read truncated.
 *   5. The calling thread is always back in its own namespace when nl_open()
 *      returns.  If going back fails the process aborts: a thread silently
 *      left in another namespace would configure the wrong one.
 */
#include "agent/netlink.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/lwtunnel.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#define NL_REQ_SIZE 4096
#define NL_RECV_SIZE 32768	/* libmnl's MNL_SOCKET_DUMP_SIZE, iproute2's too */

struct nl {
	struct mnl_socket *sock;
	unsigned portid;
	unsigned seq;
	char req[NL_REQ_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
	char buf[NL_RECV_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
};

/* A parser for the data messages of one exchange: 0 to go on, non-zero to
 * stop parsing (talk() then returns that value once the exchange ends). */
typedef int (*reply_fn)(const struct nlmsghdr *nlh, void *arg);

/* ---- handles and namespaces ---------------------------------------- */

static const char self_netns[] = "/proc/thread-self/ns/net";

struct nl *nl_open(int netns_fd)
{
	struct nl *nl = NULL;
	int home = -1, err = 0;

	if (netns_fd < -1) {
		err = -EBADF;
		goto out;
	}
	nl = calloc(1, sizeof(*nl));
	if (!nl) {
		err = -ENOMEM;
		goto out;
	}
	if (netns_fd >= 0) {
		home = open(self_netns, O_RDONLY | O_CLOEXEC);
		if (home < 0) {
			err = -errno;
			goto out;
		}
		if (setns(netns_fd, CLONE_NEWNET) < 0) {
			err = -errno;
			goto out;
		}
	}
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->sock)
		err = -errno;
	if (home >= 0 && setns(home, CLONE_NEWNET) < 0)
		abort();	/* invariant 5 */
	if (err)
		goto out;
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto out;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
out:
	if (home >= 0)
		close(home);
	if (err) {
		nl_close(nl);
		errno = -err;
		return NULL;
	}
	return nl;
}

void nl_close(struct nl *nl)
{
	if (!nl)
		return;
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl);
}

int netns_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* SO_NETNS_COOKIE (Linux 5.14): a namespace's cookie is never reused, unlike
 * the inode number of its nsfs file, which a re-created namespace often
 * gets again. */
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint64_t netns_cookie(int netns_fd)
{
	struct nl *nl = nl_open(netns_fd);
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (!nl)
		return 0;
	if (getsockopt(mnl_socket_get_fd(nl->sock), SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0)
		cookie = 0;
	nl_close(nl);
	return cookie;
}

/* ---- one exchange --------------------------------------------------- */

/* flags: NLM_F_DUMP for a dump (it ends with NLMSG_DONE), else the NEW
 * flags, and the request asks for an ack.  (Test the whole of NLM_F_DUMP:
 * its bits are NLM_F_REPLACE and NLM_F_EXCL in a NEW request.) */
static struct nlmsghdr *req_start(struct nl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->req);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	if (flags != NLM_F_DUMP)
		nlh->nlmsg_flags |= NLM_F_ACK;
	return nlh;
}

/* Send nlh and read every reply up to the ack or NLMSG_DONE, handing data
 * messages to fn until it returns non-zero.  Returns the kernel's error,
 * else fn's non-zero value, else -EINTR if a dump was interrupted by a
 * concurrent change (its data may be inconsistent; the caller may retry),
 * else 0. */
static int talk(struct nl *nl, struct nlmsghdr *nlh, reply_fn fn, void *arg)
{
	int result = 0;
	bool interrupted = false;

	if (++nl->seq == 0)
		nl->seq = 1;
	nlh->nlmsg_seq = nl->seq;
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		const struct nlmsghdr *m = (const struct nlmsghdr *)nl->buf;
		ssize_t n = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;	/* ENOSPC: a message beyond NL_RECV_SIZE */
		}
		len = (int)n;
		for (; mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
			if (m->nlmsg_seq != nl->seq || !mnl_nlmsg_portid_ok(m, nl->portid))
				continue;	/* invariant 2 */
			if (m->nlmsg_flags & NLM_F_DUMP_INTR)
				interrupted = true;
			if (m->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);

				if (mnl_nlmsg_get_payload_len(m) < sizeof(*e))
					return -EBADMSG;
				if (e->error)
					return e->error > 0 ? -e->error : e->error;
				return result;
			}
			if (m->nlmsg_type == NLMSG_DONE) {
				/* since 4.x the kernel says why a dump ended early */
				if (mnl_nlmsg_get_payload_len(m) >= sizeof(int)) {
					int e;

					memcpy(&e, mnl_nlmsg_get_payload(m), sizeof(e));
					if (e < 0)
						return e;
				}
				if (result)
					return result;
				return interrupted ? -EINTR : 0;
			}
			if (m->nlmsg_type == NLMSG_OVERRUN)
				return -ENOBUFS;
			if (m->nlmsg_type < NLMSG_MIN_TYPE || !fn || result)
				continue;
			result = fn(m, arg);
		}
	}
}

/* ---- attributes ----------------------------------------------------- */

struct attrs {
	const struct nlattr **tb;
	int max;
};

static int attr_store(const struct nlattr *a, void *data)
{
	const struct attrs *t = data;
	int type = mnl_attr_get_type(a);

	if (type <= t->max)
		t->tb[type] = a;	/* unknown (newer) attributes are skipped */
	return MNL_CB_OK;
}

static void parse_attrs(const struct nlmsghdr *nlh, size_t hdrlen, const struct nlattr **tb, int max)
{
	struct attrs t = { tb, max };

	memset(tb, 0, (size_t)(max + 1) * sizeof(*tb));
	mnl_attr_parse(nlh, (unsigned)hdrlen, attr_store, &t);
}

/* 0 or -EBADMSG when a is not a well-formed nest. */
static int parse_nested(const struct nlattr *a, const struct nlattr **tb, int max)
{
	struct attrs t = { tb, max };

	memset(tb, 0, (size_t)(max + 1) * sizeof(*tb));
	if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
		return -EBADMSG;
	mnl_attr_parse_nested(a, attr_store, &t);
	return 0;
}

static int attr_u32(const struct nlattr *a, uint32_t *v)
{
	if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
		return -EBADMSG;
	*v = mnl_attr_get_u32(a);
	return 0;
}

/* Copies a string attribute (NUL-terminated or not) into dst[size]:
 * -EBADMSG when it would not fit. */
static int attr_str(const struct nlattr *a, char *dst, size_t size)
{
	const char *s = mnl_attr_get_payload(a);
	size_t n = strnlen(s, mnl_attr_get_payload_len(a));

	if (n >= size)
		return -EBADMSG;
	memcpy(dst, s, n);
	dst[n] = 0;
	return 0;
}

static bool name_ok(const char *name)
{
	size_t n = name ? strnlen(name, IF_NAMESIZE) : 0;

	return n > 0 && n < IF_NAMESIZE;
}

/* ---- links ---------------------------------------------------------- */

struct vxlan_attrs {
	bool external;
	uint16_t port;		/* host order, 0 when absent */
};

static int parse_link(const struct nlmsghdr *nlh, struct nl_link *l, struct vxlan_attrs *vx)
{
	const struct nlattr *tb[IFLA_MAX + 1], *info[IFLA_INFO_MAX + 1];
	const struct nlattr *vtb[IFLA_VXLAN_MAX + 1];
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	uint32_t v;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifm))
		return -EBADMSG;
	parse_attrs(nlh, sizeof(*ifm), tb, IFLA_MAX);
	memset(l, 0, sizeof(*l));
	l->ifindex = ifm->ifi_index;
	l->flags = ifm->ifi_flags;
	if (!tb[IFLA_IFNAME] || attr_str(tb[IFLA_IFNAME], l->name, sizeof(l->name)) < 0)
		return -EBADMSG;
	if (tb[IFLA_MTU]) {
		if (attr_u32(tb[IFLA_MTU], &v) < 0 || v > INT32_MAX)
			return -EBADMSG;
		l->mtu = (int)v;
	}
	if (tb[IFLA_MASTER]) {
		if (attr_u32(tb[IFLA_MASTER], &v) < 0 || v > INT32_MAX)
			return -EBADMSG;
		l->master = (int)v;
	}
	/* only Ethernet-like addresses; tunnels without one leave mac zero */
	if (tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(tb[IFLA_ADDRESS]) == sizeof(l->mac))
		memcpy(l->mac, mnl_attr_get_payload(tb[IFLA_ADDRESS]), sizeof(l->mac));
	if (vx)
		memset(vx, 0, sizeof(*vx));
	if (!tb[IFLA_LINKINFO])
		return 0;
	if (parse_nested(tb[IFLA_LINKINFO], info, IFLA_INFO_MAX) < 0)
		return -EBADMSG;
	/* a kind too long for l->kind (none is, today) is reported as none */
	if (info[IFLA_INFO_KIND] && attr_str(info[IFLA_INFO_KIND], l->kind, sizeof(l->kind)) < 0)
		l->kind[0] = 0;
	if (!vx || strcmp(l->kind, "vxlan") != 0 || !info[IFLA_INFO_DATA])
		return 0;
	if (parse_nested(info[IFLA_INFO_DATA], vtb, IFLA_VXLAN_MAX) < 0)
		return -EBADMSG;
	if (vtb[IFLA_VXLAN_COLLECT_METADATA]) {
		if (mnl_attr_validate(vtb[IFLA_VXLAN_COLLECT_METADATA], MNL_TYPE_U8) < 0)
			return -EBADMSG;
		vx->external = mnl_attr_get_u8(vtb[IFLA_VXLAN_COLLECT_METADATA]) != 0;
	}
	if (vtb[IFLA_VXLAN_PORT]) {
		if (mnl_attr_validate(vtb[IFLA_VXLAN_PORT], MNL_TYPE_U16) < 0)
			return -EBADMSG;
		vx->port = ntohs(mnl_attr_get_u16(vtb[IFLA_VXLAN_PORT]));
	}
	return 0;
}

struct link_get {
	struct nl_link *link;
	struct vxlan_attrs *vx;
	bool found;
};

static int link_get_reply(const struct nlmsghdr *nlh, void *arg)
{
	struct link_get *q = arg;
	int err;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return 0;
	err = parse_link(nlh, q->link, q->vx);
	if (err)
		return err;
	q->found = true;
	return 1;	/* one link is all a get returns */
}

static struct ifinfomsg *link_req(struct nl *nl, struct nlmsghdr **nlhp, uint16_t type,
				  uint16_t flags, int ifindex)
{
	struct nlmsghdr *nlh = req_start(nl, type, flags);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	*nlhp = nlh;
	return ifm;
}

static int link_get(struct nl *nl, const char *name, int ifindex, struct nl_link *out,
		    struct vxlan_attrs *vx)
{
	struct link_get q = { out, vx, false };
	struct nlmsghdr *nlh;
	int err;

	link_req(nl, &nlh, RTM_GETLINK, 0, ifindex);
	if (name)
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	err = talk(nl, nlh, link_get_reply, &q);
	if (err < 0)
		return err;
	return q.found ? 0 : -ENODEV;
}

int nl_link_get(struct nl *nl, const char *name, struct nl_link *out)
{
	if (!name_ok(name))
		return -EINVAL;
	return link_get(nl, name, 0, out, NULL);
}

int nl_link_get_index(struct nl *nl, int ifindex, struct nl_link *out)
{
	if (ifindex <= 0)
		return -EINVAL;
	return link_get(nl, NULL, ifindex, out, NULL);
}

struct link_walk {
	int (*fn)(const struct nl_link *l, void *arg);
	void *arg;
};

static int link_walk_reply(const struct nlmsghdr *nlh, void *arg)
{
	struct link_walk *w = arg;
	struct nl_link l;
	int err;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return 0;
	err = parse_link(nlh, &l, NULL);
	if (err)
		return err;
	return w->fn(&l, w->arg);
}

int nl_link_foreach(struct nl *nl, int (*fn)(const struct nl_link *l, void *arg), void *arg)
{
	struct link_walk w = { fn, arg };
	struct nlmsghdr *nlh;

	link_req(nl, &nlh, RTM_GETLINK, NLM_F_DUMP, 0);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return talk(nl, nlh, link_walk_reply, &w);
}

int nl_veth_create(struct nl *nl, const char *host_name, const char *peer_name,
		   int peer_netns_fd, int mtu)
{
	struct nlattr *linkinfo, *data, *peer;
	struct ifinfomsg *peer_ifm;
	struct nlmsghdr *nlh;

	if (!name_ok(host_name) || !name_ok(peer_name) || mtu < 0 || peer_netns_fd < -1)
		return -EINVAL;
	link_req(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host_name);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* the peer is described by a whole ifinfomsg and its attributes */
	peer_ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*peer_ifm));
	peer_ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_name);
	if (peer_netns_fd >= 0)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return talk(nl, nlh, NULL, NULL);
}

int nl_vxlan_create(struct nl *nl, const char *name, uint16_t port, int mtu)
{
	struct nlattr *linkinfo, *data;
	struct nlmsghdr *nlh;

	if (!name_ok(name) || mtu < 0)
		return -EINVAL;
	link_req(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "vxlan");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	mnl_attr_put_u8(nlh, IFLA_VXLAN_COLLECT_METADATA, 1);
	mnl_attr_put_u16(nlh, IFLA_VXLAN_PORT, htons(port));
	mnl_attr_put_u8(nlh, IFLA_VXLAN_LEARNING, 0);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return talk(nl, nlh, NULL, NULL);
}

int nl_link_create(struct nl *nl, const char *name, const char *kind, int mtu)
{
	struct nlattr *linkinfo;
	struct nlmsghdr *nlh;

	if (!name_ok(name) || !kind || !*kind || strlen(kind) >= sizeof(((struct nl_link *)0)->kind) ||
	    mtu < 0)
		return -EINVAL;
	link_req(nl, &nlh, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind);
	mnl_attr_nest_end(nlh, linkinfo);
	return talk(nl, nlh, NULL, NULL);
}

int nl_vxlan_info(struct nl *nl, int ifindex, bool *external, uint16_t *port)
{
	struct vxlan_attrs vx;
	struct nl_link l;
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	err = link_get(nl, NULL, ifindex, &l, &vx);
	if (err)
		return err;
	if (strcmp(l.kind, "vxlan") != 0)
		return -EINVAL;
	if (external)
		*external = vx.external;
	if (port)
		*port = vx.port;
	return 0;
}

/* RTM_NEWLINK on an existing link (no NLM_F_CREATE: -ENODEV when gone). */
static int link_change(struct nl *nl, int ifindex, unsigned flags, unsigned change, int mtu)
{
	struct ifinfomsg *ifm;
	struct nlmsghdr *nlh;

	if (ifindex <= 0)
		return -EINVAL;
	ifm = link_req(nl, &nlh, RTM_NEWLINK, 0, ifindex);
	ifm->ifi_flags = flags;
	ifm->ifi_change = change;
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	return talk(nl, nlh, NULL, NULL);
}

int nl_link_set_up(struct nl *nl, int ifindex)
{
	return link_change(nl, ifindex, IFF_UP, IFF_UP, 0);
}

int nl_link_set_mtu(struct nl *nl, int ifindex, int mtu)
{
	if (mtu <= 0)
		return -EINVAL;
	return link_change(nl, ifindex, 0, 0, mtu);
}

int nl_link_set_noarp(struct nl *nl, int ifindex, bool noarp)
{
	return link_change(nl, ifindex, noarp ? IFF_NOARP : 0, IFF_NOARP, 0);
}

int nl_link_set_mac(struct nl *nl, int ifindex, const uint8_t mac[6])
{
	struct nlmsghdr *nlh;

	if (ifindex <= 0)
		return -EINVAL;
	link_req(nl, &nlh, RTM_NEWLINK, 0, ifindex);
	mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
	return talk(nl, nlh, NULL, NULL);
}

int nl_link_del(struct nl *nl, int ifindex)
{
	struct nlmsghdr *nlh;

	if (ifindex <= 0)
		return -EINVAL;
	link_req(nl, &nlh, RTM_DELLINK, 0, ifindex);
	return talk(nl, nlh, NULL, NULL);
}

/* ---- addresses ------------------------------------------------------ */

static int addr_change(struct nl *nl, uint16_t type, uint16_t flags, int ifindex, in_addr_t ip,
		       int prefixlen)
{
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;

	if (ifindex <= 0 || prefixlen < 0 || prefixlen > 32)
		return -EINVAL;
	nlh = req_start(nl, type, flags);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (uint8_t)prefixlen;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;
	mnl_attr_put_u32(nlh, IFA_LOCAL, ip);
	mnl_attr_put_u32(nlh, IFA_ADDRESS, ip);
	return talk(nl, nlh, NULL, NULL);
}

int nl_addr_add(struct nl *nl, int ifindex, in_addr_t ip, int prefixlen)
{
	/* the kernel says EEXIST only for the same address and mask on the
	 * same link, which is exactly "already there" */
	int err = addr_change(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, ip, prefixlen);

	return err == -EEXIST ? 0 : err;
}

int nl_addr_del(struct nl *nl, int ifindex, in_addr_t ip, int prefixlen)
{
	return addr_change(nl, RTM_DELADDR, 0, ifindex, ip, prefixlen);
}

struct addr_find {
	in_addr_t ip;
	int ifindex;
};

static int addr_find_reply(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[IFA_MAX + 1], *a;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_find *q = arg;
	uint32_t ip;

	if (nlh->nlmsg_type != RTM_NEWADDR)
		return 0;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifa))
		return -EBADMSG;
	if (ifa->ifa_family != AF_INET)
		return 0;
	parse_attrs(nlh, sizeof(*ifa), tb, IFA_MAX);
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!a)
		return 0;
	if (attr_u32(a, &ip) < 0)
		return -EBADMSG;
	if (ip != q->ip || ifa->ifa_index == 0 || ifa->ifa_index > INT32_MAX)
		return 0;
	q->ifindex = (int)ifa->ifa_index;
	return 1;
}

int nl_addr_find(struct nl *nl, in_addr_t ip, int *ifindex)
{
	struct addr_find q = { ip, 0 };
	struct nlmsghdr *nlh = req_start(nl, RTM_GETADDR, NLM_F_DUMP);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	int err;

	ifa->ifa_family = AF_INET;
	err = talk(nl, nlh, addr_find_reply, &q);
	if (err < 0)
		return err;
	if (!q.ifindex)
		return -ENOENT;
	*ifindex = q.ifindex;
	return 0;
}

/* ---- routes --------------------------------------------------------- */

static const uint8_t route_rtn[] = {
	[NL_ROUTE_UNICAST] = RTN_UNICAST,
	[NL_ROUTE_UNREACHABLE] = RTN_UNREACHABLE,
	[NL_ROUTE_BLACKHOLE] = RTN_BLACKHOLE,
};

static bool prefix_ok(int prefixlen)
{
	return prefixlen >= 0 && prefixlen <= 32;
}

static struct rtmsg *route_req(struct nl *nl, struct nlmsghdr **nlhp, uint16_t type,
			       uint16_t flags)
{
	struct nlmsghdr *nlh = req_start(nl, type, flags);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

	rtm->rtm_family = AF_INET;
	*nlhp = nlh;
	return rtm;
}

int nl_route_replace(struct nl *nl, const struct nl_route *r)
{
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	if (!prefix_ok(r->prefixlen) || r->ifindex < 0 || r->mtu < 0 ||
	    (unsigned)r->type >= sizeof(route_rtn))
		return -EINVAL;
	rtm = route_req(nl, &nlh, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	rtm->rtm_dst_len = (uint8_t)r->prefixlen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_type = route_rtn[r->type];
	rtm->rtm_scope = r->type == NL_ROUTE_UNICAST && !r->gateway ? RT_SCOPE_LINK
								     : RT_SCOPE_UNIVERSE;
	if (r->onlink)
		rtm->rtm_flags |= RTNH_F_ONLINK;
	if (r->prefixlen)
		mnl_attr_put_u32(nlh, RTA_DST, r->dst);
	if (r->ifindex)
		mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)r->ifindex);
	if (r->gateway)
		mnl_attr_put_u32(nlh, RTA_GATEWAY, r->gateway);
	if (r->src)
		mnl_attr_put_u32(nlh, RTA_PREFSRC, r->src);
	if (r->mtu) {
		struct nlattr *metrics = mnl_attr_nest_start(nlh, RTA_METRICS);

		mnl_attr_put_u32(nlh, RTAX_MTU, (uint32_t)r->mtu);
		mnl_attr_nest_end(nlh, metrics);
	}
	if (r->encap) {
		struct nlattr *encap;

		mnl_attr_put_u16(nlh, RTA_ENCAP_TYPE, LWTUNNEL_ENCAP_IP);
		encap = mnl_attr_nest_start(nlh, RTA_ENCAP);
		mnl_attr_put_u64(nlh, LWTUNNEL_IP_ID, htobe64(r->encap_id));
		mnl_attr_put_u32(nlh, LWTUNNEL_IP_DST, r->encap_dst);
		mnl_attr_nest_end(nlh, encap);
	}
	return talk(nl, nlh, NULL, NULL);
}

static int route_del(struct nl *nl, in_addr_t dst, int prefixlen, int ifindex)
{
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	if (!prefix_ok(prefixlen) || ifindex < 0)
		return -EINVAL;
	rtm = route_req(nl, &nlh, RTM_DELROUTE, 0);
	rtm->rtm_dst_len = (uint8_t)prefixlen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_scope = RT_SCOPE_NOWHERE;	/* any scope, any type, any protocol */
	if (prefixlen)
		mnl_attr_put_u32(nlh, RTA_DST, dst);
	if (ifindex)
		mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	return talk(nl, nlh, NULL, NULL);
}

int nl_route_del(struct nl *nl, in_addr_t dst, int prefixlen)
{
	return route_del(nl, dst, prefixlen, 0);
}

int nl_route_del_dev(struct nl *nl, in_addr_t dst, int prefixlen, int ifindex)
{
	if (ifindex <= 0)
		return -EINVAL;
	return route_del(nl, dst, prefixlen, ifindex);
}

static int parse_encap(const struct nlattr *a, struct nl_route *r)
{
	const struct nlattr *tb[LWTUNNEL_IP_MAX + 1];
	uint64_t id;

	if (parse_nested(a, tb, LWTUNNEL_IP_MAX) < 0)
		return -EBADMSG;
	if (tb[LWTUNNEL_IP_ID]) {
		if (mnl_attr_validate(tb[LWTUNNEL_IP_ID], MNL_TYPE_U64) < 0)
			return -EBADMSG;
		/* 4-byte aligned in the message: no direct 64-bit load */
		memcpy(&id, mnl_attr_get_payload(tb[LWTUNNEL_IP_ID]), sizeof(id));
		r->encap_id = be64toh(id);
	}
	if (tb[LWTUNNEL_IP_DST] && attr_u32(tb[LWTUNNEL_IP_DST], &r->encap_dst) < 0)
		return -EBADMSG;
	r->encap = true;
	return 0;
}

/* 0: r filled; 1: not an IPv4 main-table route of a type we report;
 * -EBADMSG.  lookup: the answer to RTM_GETROUTE for one address (any
 * table; a local address's route is NL_ROUTE_LOCAL). */
static int parse_route(const struct nlmsghdr *nlh, struct nl_route *r, bool lookup)
{
	const struct nlattr *tb[RTA_MAX + 1];
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	uint32_t table, v;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return -EBADMSG;
	if (rtm->rtm_family != AF_INET || rtm->rtm_dst_len > 32)
		return 1;
	parse_attrs(nlh, sizeof(*rtm), tb, RTA_MAX);
	table = rtm->rtm_table;
	if (tb[RTA_TABLE] && attr_u32(tb[RTA_TABLE], &table) < 0)
		return -EBADMSG;
	if (table != RT_TABLE_MAIN && !lookup)
		return 1;
	memset(r, 0, sizeof(*r));
	switch (rtm->rtm_type) {
	case RTN_UNICAST: r->type = NL_ROUTE_UNICAST; break;
	case RTN_LOCAL:
		if (!lookup)
			return 1;
		r->type = NL_ROUTE_LOCAL;
		break;
	case RTN_UNREACHABLE: r->type = NL_ROUTE_UNREACHABLE; break;
	case RTN_BLACKHOLE: r->type = NL_ROUTE_BLACKHOLE; break;
	default: return 1;
	}
	r->prefixlen = rtm->rtm_dst_len;
	r->onlink = rtm->rtm_flags & RTNH_F_ONLINK;
	if (tb[RTA_DST] && attr_u32(tb[RTA_DST], &r->dst) < 0)
		return -EBADMSG;
	if (tb[RTA_OIF]) {
		if (attr_u32(tb[RTA_OIF], &v) < 0 || v > INT32_MAX)
			return -EBADMSG;
		r->ifindex = (int)v;
	}
	if (tb[RTA_GATEWAY] && attr_u32(tb[RTA_GATEWAY], &r->gateway) < 0)
		return -EBADMSG;
	if (tb[RTA_PREFSRC] && attr_u32(tb[RTA_PREFSRC], &r->src) < 0)
		return -EBADMSG;
	if (tb[RTA_METRICS]) {
		const struct nlattr *mx[RTAX_MAX + 1];

		if (parse_nested(tb[RTA_METRICS], mx, RTAX_MAX) < 0)
			return -EBADMSG;
		if (mx[RTAX_MTU]) {
			if (attr_u32(mx[RTAX_MTU], &v) < 0 || v > INT32_MAX)
				return -EBADMSG;
			r->mtu = (int)v;
		}
	}
	if (tb[RTA_ENCAP_TYPE] && tb[RTA_ENCAP]) {
		if (mnl_attr_validate(tb[RTA_ENCAP_TYPE], MNL_TYPE_U16) < 0)
			return -EBADMSG;
		if (mnl_attr_get_u16(tb[RTA_ENCAP_TYPE]) == LWTUNNEL_ENCAP_IP &&
		    parse_encap(tb[RTA_ENCAP], r) < 0)
			return -EBADMSG;
	}
	return 0;
}

struct route_walk {
	int (*fn)(const struct nl_route *r, void *arg);
	void *arg;
};

static int route_walk_reply(const struct nlmsghdr *nlh, void *arg)
{
	struct route_walk *w = arg;
	struct nl_route r;
	int err;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return 0;
	err = parse_route(nlh, &r, false);
	if (err)
		return err < 0 ? err : 0;
	return w->fn(&r, w->arg);
}

int nl_route_foreach(struct nl *nl, int (*fn)(const struct nl_route *r, void *arg), void *arg)
{
	struct route_walk w = { fn, arg };
	struct nlmsghdr *nlh;

	route_req(nl, &nlh, RTM_GETROUTE, NLM_F_DUMP);
	return talk(nl, nlh, route_walk_reply, &w);
}

static int route_get_reply(const struct nlmsghdr *nlh, void *arg)
{
	struct nl_route *r = arg;
	int err;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return 0;
	err = parse_route(nlh, r, true);
	return err < 0 ? err : 1;
}

int nl_route_get(struct nl *nl, in_addr_t dst, struct nl_route *out)
{
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int err;

	memset(out, 0, sizeof(*out));
	out->type = NL_ROUTE_UNREACHABLE;
	rtm = route_req(nl, &nlh, RTM_GETROUTE, 0);
	rtm->rtm_dst_len = 32;
	mnl_attr_put_u32(nlh, RTA_DST, dst);
	err = talk(nl, nlh, route_get_reply, out);
	if (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -EINVAL || err == -EACCES)
		out->type = NL_ROUTE_UNREACHABLE;	/* (an unreachable route answers so) */
	else if (err < 0)
		return err;
	out->dst = dst;
	out->prefixlen = 32;
	return 0;
}

int nl_route_get_dev(struct nl *nl, in_addr_t dst, int *ifindex, in_addr_t *src)
{
	struct nl_route r;
	int err = nl_route_get(nl, dst, &r);

	if (err < 0)
		return err;
	if (!r.ifindex || r.type != NL_ROUTE_UNICAST)
		return -ENETUNREACH;
	*ifindex = r.ifindex;
	if (src)
		*src = r.src;
	return 0;
}

/* ---- neighbours ----------------------------------------------------- */

int nl_neigh_replace(struct nl *nl, int ifindex, in_addr_t ip, const uint8_t mac[6])
{
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;

	if (ifindex <= 0)
		return -EINVAL;
	nlh = req_start(nl, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE);
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = AF_INET;
	ndm->ndm_ifindex = ifindex;
	ndm->ndm_state = NUD_PERMANENT;
	mnl_attr_put_u32(nlh, NDA_DST, ip);
	mnl_attr_put(nlh, NDA_LLADDR, 6, mac);
	return talk(nl, nlh, NULL, NULL);
}
