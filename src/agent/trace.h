/*
 * trace.h — one packet through this node's loaded programs, with their
 * live maps, and what each step did (weftctl trace; docs/trace.md).
 *
 * A trace enters where a real packet would:
 *   TRACE_FROM_POD     leaving a pod of this node: pod_ingress on the host
 *                      end of its veth, the frame from the pod's MAC to
 *                      its gateway's
 *   TRACE_FROM_TUNNEL  arriving from another node over VXLAN:
 *                      vxlan_ingress with the tunnel key the sending node
 *                      set (its trace's answer), the inner frame as
 *                      decapsulated
 *   TRACE_FROM_NODE    sent by the node's own stack: the kernel's route
 *                      for the destination (trace_node.route, asked of
 *                      the kernel) picks the source and the device, and
 *                      the program on that device runs: svc_egress (the
 *                      service device), pod_egress (a pod's veth), none
 *                      (a route through the VXLAN device: its key is the
 *                      route's; another device: out of the node)
 *   TRACE_FROM_OUTSIDE arriving on the node's underlay device from an
 *                      address outside the cluster: node_ingress, then,
 *                      when it leaves the packet to the stack, the route
 *                      as above (a local address: the node's own; else
 *                      forwarded, if the node forwards at all)
 *
 * The stack itself is not simulated: the route is the kernel's answer for
 * the destination, and netfilter (the node's masquerade, any firewall) is
 * not traced; the status says which route it took.
 * The run is datapath_trace_run's: nothing is sent and no state of the
 * programs is written, so a trace never changes what traffic meets.
 *
 * What it cannot know is said, not guessed: a new connection's backend
 * is drawn at random among the service's (the status says among how
 * many, and which this run drew), unless the client's session affinity
 * holds one; an address translated for a port the node would draw at
 * random (SNAT) comes back with port 0.
 *
 * Not thread-safe: one trace at a time per datapath (the caller's).
 */
#ifndef WEFT_AGENT_TRACE_H
#define WEFT_AGENT_TRACE_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdint.h>

#include "agent/datapath.h"
#include "agent/netlink.h"
#include "lib/jview.h"

enum trace_from { TRACE_FROM_POD, TRACE_FROM_TUNNEL, TRACE_FROM_NODE, TRACE_FROM_OUTSIDE };

/* What a trace needs of the node beyond its programs. */
struct trace_node {
	uint32_t vxlan_ifindex, underlay_ifindex, svc_ifindex;
	in_addr_t node_ip;		/* network order */
	bool forwarding;		/* net.ipv4.ip_forward: the stack forwards */
	/* the kernel's route to dst (network order) in the node's
	 * namespace, as nl_route_get answers: 0 or -errno; NULL: the node
	 * has none to ask (the stack is then taken for the node's own) */
	int (*route)(void *arg, in_addr_t dst, struct nl_route *out);
	void *route_arg;
};

struct trace_input {
	enum trace_from from;
	uint8_t proto;			/* IPPROTO_TCP (a SYN), _UDP or _ICMP (an echo request) */
	in_addr_t saddr, daddr;		/* network order; NODE: saddr 0, the
					 * route's source */
	in_addr_t pod;			/* POD: the pod whose veth it leaves (network
					 * order); saddr unless another is given (a
					 * spoofed source) */
	uint16_t sport, dport;		/* host order (ICMP: none) */
	uint32_t vni;			/* TUNNEL: the key's VNI */
	in_addr_t remote;		/* TUNNEL: the sending node's IP, network order */
};

struct trace_result {
	struct datapath_trace run;
	/* the packet as it left, when it left as IPv4 */
	in_addr_t out_saddr, out_daddr;
	uint16_t out_sport, out_dport;
	bool out_parsed;
	in_addr_t delivered_to;		/* LOCAL: the local pod's IP (0 unknown) */
	in_addr_t source;		/* the packet's source as it entered */
	struct nl_route route;		/* NODE, OUTSIDE: the stack's route, if
					 * route_via says one was taken */
	const char *route_via;		/* the route, said: "Local" (an address of
					 * the node), "ServiceDevice", "Pod",
					 * "Tunnel", "Device" (out of the node),
					 * "None" */
	const char *route_drop;		/* the stack dropped it: why ("no-route",
					 * "not-forwarded"), else NULL */
	int runs;			/* programs run: 0 (the stack only), 1, 2 */
};

/* A TraceRequest's spec: 0, or -EINVAL with what is wrong in err. */
int trace_input_parse(struct jval spec, struct trace_input *in, char *err, size_t len)
	__attribute__((warn_unused_result));

/* Run in on dp, of node.  0; -ENOENT when a FROM_POD source is no pod of
 * this node, -EOPNOTSUPP when there are no programs to run (hollow
 * nodes), or -errno; err says why.  r->run.steps holds the last
 * program's steps and the verdict (one the stack took too: HOST,
 * UNDERLAY, TUNNEL by a route, DROP with route_drop). */
int trace_run(struct datapath *dp, const struct trace_node *node, const struct trace_input *in,
	      struct trace_result *r, char *err, size_t len) __attribute__((warn_unused_result));

/* The result as a TraceRequest's status (new reference; NULL on ENOMEM). */
json_t *trace_result_json(const struct trace_input *in, const struct trace_result *r);

/* The action's name in a status ("Local", "Tunnel", "Drop"...). */
const char *trace_action_name(uint32_t action);

#endif
