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
#include "lib/jview.h"

enum trace_from { TRACE_FROM_POD, TRACE_FROM_TUNNEL };

struct trace_input {
	enum trace_from from;
	uint8_t proto;			/* IPPROTO_TCP (a SYN), _UDP or _ICMP (an echo request) */
	in_addr_t saddr, daddr;		/* network order */
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
};

/* A TraceRequest's spec: 0, or -EINVAL with what is wrong in err. */
int trace_input_parse(struct jval spec, struct trace_input *in, char *err, size_t len)
	__attribute__((warn_unused_result));

/* Run in on dp (vxlan_ifindex: the node's VXLAN device).  0; -ENOENT when
 * a FROM_POD source is no pod of this node, -EOPNOTSUPP when there are no
 * programs to run (hollow nodes), or -errno; err says why. */
int trace_run(struct datapath *dp, uint32_t vxlan_ifindex, const struct trace_input *in,
	      struct trace_result *r, char *err, size_t len) __attribute__((warn_unused_result));

/* The result as a TraceRequest's status (new reference; NULL on ENOMEM). */
json_t *trace_result_json(const struct trace_input *in, const struct trace_result *r);

/* The action's name in a status ("Local", "Tunnel", "Drop"...). */
const char *trace_action_name(uint32_t action);

#endif
