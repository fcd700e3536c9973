/*
 * netlink.h — the rtnetlink calls the agent needs, on libmnl: links (veth,
 * VXLAN in collect-metadata mode, dummy, ifb), addresses, routes (with IP tunnel
 * encapsulation), neighbours, all in one network namespace per handle.
 *
 * A handle is bound to the network namespace it was opened in: nl_open(fd)
 * switches the calling thread into that namespace only long enough to create
 * the socket, then switches back, so one thread can drive several
 * namespaces through several handles.  A handle is not thread-safe: use one
 * per thread (they are cheap: one socket).
 *
 * Every call returns 0 or a negative errno (the kernel's, e.g. -EEXIST,
 * -ENODEV), and never prints.  Addresses are IPv4 in network order.
 */
#ifndef WEFT_AGENT_NETLINK_H
#define WEFT_AGENT_NETLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>

struct nl;

/* Open a handle in the namespace of netns_fd (-1: the caller's).  NULL with
 * errno set on failure.  The fd stays the caller's. */
struct nl *nl_open(int netns_fd) __attribute__((warn_unused_result));
void nl_close(struct nl *nl);		/* accepts NULL */

/* Open a network namespace by path (e.g. /run/netns/x): fd or -errno. */
int netns_open(const char *path);
/* The kernel's cookie of a namespace (SO_NETNS_COOKIE; never reused, unlike
 * the nsfs inode number), netns_fd -1: the caller's.  0 on error. */
uint64_t netns_cookie(int netns_fd);

struct nl_link {
	int ifindex;
	char name[IF_NAMESIZE];
	char kind[16];		/* "veth", "vxlan", ... ("" when none) */
	uint8_t mac[6];
	int mtu;
	unsigned flags;		/* IFF_* */
	int master;		/* 0 when none */
};

int nl_link_get(struct nl *nl, const char *name, struct nl_link *out);	/* -ENODEV */
int nl_link_get_index(struct nl *nl, int ifindex, struct nl_link *out);
/* Call fn for every link; stops and returns fn's value when it is not 0.
 * -EINTR when the kernel flags the dump as interrupted by a concurrent
 * change (fn has seen a possibly inconsistent list; call again). */
int nl_link_foreach(struct nl *nl, int (*fn)(const struct nl_link *l, void *arg), void *arg);

/* Create a veth pair: host_name here, peer_name in the namespace of
 * peer_netns_fd, both with mtu (0: kernel default).  -EEXIST when either
 * name exists (the pair is not created).  Neither end is set up. */
int nl_veth_create(struct nl *nl, const char *host_name, const char *peer_name,
		   int peer_netns_fd, int mtu) __attribute__((warn_unused_result));
/* Create a VXLAN device in external (collect-metadata) mode on UDP port
 * (host order), learning off, with mtu.  -EEXIST when name exists. */
int nl_vxlan_create(struct nl *nl, const char *name, uint16_t port, int mtu)
	__attribute__((warn_unused_result));
/* Create a device of a kind that needs no attributes ("dummy", "ifb")
 * with mtu (0: kernel default), down.  -EEXIST when name exists,
 * -EOPNOTSUPP when the kernel has no such kind. */
int nl_link_create(struct nl *nl, const char *name, const char *kind, int mtu)
	__attribute__((warn_unused_result));
/* For an existing VXLAN device: is it external mode, and on which port? */
int nl_vxlan_info(struct nl *nl, int ifindex, bool *external, uint16_t *port);

int nl_link_set_up(struct nl *nl, int ifindex);
int nl_link_set_mtu(struct nl *nl, int ifindex, int mtu);
int nl_link_set_noarp(struct nl *nl, int ifindex, bool noarp);
int nl_link_set_mac(struct nl *nl, int ifindex, const uint8_t mac[6]);	/* IFLA_ADDRESS */
int nl_link_del(struct nl *nl, int ifindex);		/* -ENODEV when gone */

/* Add ip/prefixlen to ifindex; an address already there is success. */
int nl_addr_add(struct nl *nl, int ifindex, in_addr_t ip, int prefixlen);
int nl_addr_del(struct nl *nl, int ifindex, in_addr_t ip, int prefixlen);

enum nl_route_type { NL_ROUTE_UNICAST = 0, NL_ROUTE_UNREACHABLE, NL_ROUTE_BLACKHOLE,
		     NL_ROUTE_LOCAL /* nl_route_get only: an address of the namespace */ };

struct nl_route {
	in_addr_t dst;		/* network */
	int prefixlen;
	int ifindex;		/* 0 for unreachable/blackhole */
	in_addr_t gateway;	/* 0: none (scope link) */
	in_addr_t src;		/* preferred source, 0: none */
	enum nl_route_type type;
	bool onlink;		/* RTNH_F_ONLINK with a gateway */
	bool encap;		/* lwtunnel IP encapsulation (for a collect-metadata device) */
	uint64_t encap_id;	/* VNI */
	in_addr_t encap_dst;	/* tunnel remote */
	int mtu;		/* RTAX_MTU metric, 0: none */
};

/* Create or replace a route in the main table (NLM_F_CREATE|NLM_F_REPLACE). */
int nl_route_replace(struct nl *nl, const struct nl_route *r);
/* Delete the route to dst/prefixlen in the main table; -ESRCH when none. */
int nl_route_del(struct nl *nl, in_addr_t dst, int prefixlen);
/* The same, only the route through device ifindex. */
int nl_route_del_dev(struct nl *nl, in_addr_t dst, int prefixlen, int ifindex);
/* Call fn for every IPv4 route of the main table (fields filled as above,
 * encap included; other types, e.g. prohibit, are skipped; a multipath
 * route comes with ifindex and gateway 0); stops and returns fn's value
 * when it is not 0.  -EINTR as for nl_link_foreach. */
int nl_route_foreach(struct nl *nl, int (*fn)(const struct nl_route *r, void *arg), void *arg);

/* The link that carries ip as one of its addresses: -ENOENT when none. */
int nl_addr_find(struct nl *nl, in_addr_t ip, int *ifindex);

/* Permanent neighbour entry ip -> mac on ifindex (replace). */
int nl_neigh_replace(struct nl *nl, int ifindex, in_addr_t ip, const uint8_t mac[6]);

/* The kernel's route to dst in this namespace (RTM_GETROUTE, as `ip route
 * get`): out->type NL_ROUTE_LOCAL for one of its own addresses,
 * NL_ROUTE_UNREACHABLE when there is none (or an unreachable or
 * blackhole route: the kernel answers all three with an error), else
 * NL_ROUTE_UNICAST with the device, preferred source, gateway and encap
 * (a route to a collect-metadata device).  0, or -errno for a failed
 * request. */
int nl_route_get(struct nl *nl, in_addr_t dst, struct nl_route *out) __attribute__((warn_unused_result));

/* Find the device the namespace uses to reach dst (RTM_GETROUTE), e.g. the
 * underlay interface toward a peer node, and the source address it would
 * use (src may be NULL; 0 when the route has none).  -ENETUNREACH when no
 * route; nl_link_get_index() gives the device's MTU. */
int nl_route_get_dev(struct nl *nl, in_addr_t dst, int *ifindex, in_addr_t *src);

#endif
