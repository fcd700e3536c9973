/*
 * trace.c — one packet through this node's loaded programs (trace.h).
 *
 *   trace_input_parse   TraceRequest spec -> struct trace_input
 *   trace_run           entry point and frame (frame()), one test run
 *                       (datapath_trace_run), the packet as it left
 *                       (leaving()), the local pod it went to; from the
 *                       node or the outside, the stack's route between
 *                       (by_route(): the program on its device, or the
 *                       verdict the route itself is)
 *   trace_result_json   struct trace_result -> TraceRequest status
 *
 * The frame is what the entry point sees of a real packet: Ethernet from
 * the pod's MAC to its gateway's (the anti-spoofing check compares both),
 * IPv4 with TTL 64 and valid checksums, then a TCP SYN, a UDP datagram of
 * four bytes or an ICMP echo request.  The trace is the programs' own
 * record (weft_trace): the steps they took and their verdict.
 */
#include "agent/trace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/pkt_cls.h>
#include <net/if.h>

#define ETH_LEN 14
#define IP_LEN 20

static const char *const action_names[] = {
	[WEFT_ACT_NONE] = "None", [WEFT_ACT_PASS] = "Pass", [WEFT_ACT_DROP] = "Drop",
	[WEFT_ACT_ARP_REPLY] = "ArpReply", [WEFT_ACT_LOCAL] = "Local", [WEFT_ACT_TUNNEL] = "Tunnel",
	[WEFT_ACT_REJECT] = "Reject", [WEFT_ACT_UNDERLAY] = "Underlay", [WEFT_ACT_HOST] = "Host",
};

const char *trace_action_name(uint32_t action)
{
	return action < sizeof(action_names) / sizeof(action_names[0]) && action_names[action]
		       ? action_names[action] : "Unknown";
}

/* ---- the spec ---- */

static int addr(struct jval spec, const char *key, in_addr_t *out, char *err, size_t len)
{
	const char *s = jval_str(jval_get(spec, key));
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1) {
		snprintf(err, len, "spec.%s: %s", key, s ? "not an IPv4 address" : "missing");
		return -EINVAL;
	}
	*out = a.s_addr;
	return 0;
}

static int port(struct jval spec, const char *key, uint16_t *out, char *err, size_t len)
{
	struct jval v = jval_get(spec, key);
	int64_t n = jval_integer(v);

	if (!jval_is_integer(v) || n < 1 || n > 65535) {
		snprintf(err, len, "spec.%s: %s", key, jval_ok(v) ? "not a port (1-65535)" : "missing");
		return -EINVAL;
	}
	*out = (uint16_t)n;
	return 0;
}

int trace_input_parse(struct jval spec, struct trace_input *in, char *err, size_t len)
{
	const char *from = jval_str(jval_get(spec, "from"));
	const char *proto = jval_str(jval_get(spec, "protocol"));

	memset(in, 0, sizeof(*in));
	if (from && strcmp(from, "Pod") == 0) {
		in->from = TRACE_FROM_POD;
	} else if (from && strcmp(from, "Tunnel") == 0) {
		in->from = TRACE_FROM_TUNNEL;
	} else if (from && strcmp(from, "Node") == 0) {
		in->from = TRACE_FROM_NODE;
	} else if (from && strcmp(from, "Outside") == 0) {
		in->from = TRACE_FROM_OUTSIDE;
	} else {
		snprintf(err, len, "spec.from: %s", from ? "not Pod, Tunnel, Node or Outside" : "missing");
		return -EINVAL;
	}
	if (!proto || strcmp(proto, "TCP") == 0) {
		in->proto = IPPROTO_TCP;
	} else if (strcmp(proto, "UDP") == 0) {
		in->proto = IPPROTO_UDP;
	} else if (strcmp(proto, "ICMP") == 0) {
		in->proto = IPPROTO_ICMP;
	} else {
		snprintf(err, len, "spec.protocol: not TCP, UDP or ICMP");
		return -EINVAL;
	}
	/* from the node, the route picks the source unless it is given */
	if ((in->from != TRACE_FROM_NODE || jval_ok(jval_get(spec, "source"))) &&
	    addr(spec, "source", &in->saddr, err, len) < 0)
		return -EINVAL;
	if (addr(spec, "destination", &in->daddr, err, len) < 0)
		return -EINVAL;
	in->pod = in->saddr;
	if (jval_ok(jval_get(spec, "pod")) && addr(spec, "pod", &in->pod, err, len) < 0)
		return -EINVAL;
	if (in->proto != IPPROTO_ICMP &&
	    (port(spec, "sourcePort", &in->sport, err, len) < 0 ||
	     port(spec, "destinationPort", &in->dport, err, len) < 0))
		return -EINVAL;
	if (in->from == TRACE_FROM_TUNNEL) {
		struct jval tun = jval_get(spec, "tunnel");
		int64_t vni = jval_integer(jval_get(tun, "vni"));

		if (!jval_is_integer(jval_get(tun, "vni")) || vni < 0 || vni > 0xffffff) {
			snprintf(err, len, "spec.tunnel.vni: %s", jval_ok(jval_get(tun, "vni"))
				 ? "not a VNI (0-16777215)" : "missing (from Tunnel)");
			return -EINVAL;
		}
		in->vni = (uint32_t)vni;
		if (addr(tun, "remote", &in->remote, err, len) < 0) {
			snprintf(err, len, "spec.tunnel.remote: not the sending node's IPv4 address");
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the frame ---- */

static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* in as a frame from smac to dmac, into f (DATAPATH_TRACE_FRAME_MAX
 * bytes): its length. */
static size_t frame(const struct trace_input *in, const uint8_t smac[6], const uint8_t dmac[6], uint8_t *f)
{
	uint8_t *ip = f + ETH_LEN, *l4 = ip + IP_LEN, ph[12];
	size_t l4len = in->proto == IPPROTO_TCP ? 20 : 12;
	uint16_t check;

	memset(f, 0, ETH_LEN + IP_LEN + l4len);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IP_LEN + l4len));
	put16(ip + 6, 0x4000);	/* DF */
	ip[8] = 64;
	ip[9] = in->proto;
	memcpy(ip + 12, &in->saddr, 4);
	memcpy(ip + 16, &in->daddr, 4);
	check = fold(sum16(0, ip, IP_LEN));
	memcpy(ip + 10, &check, 2);
	if (in->proto == IPPROTO_ICMP) {
		l4[0] = 8;	/* echo request, id 0x7765 ("we"), sequence 1 */
		put16(l4 + 4, 0x7765);
		put16(l4 + 6, 1);
		memcpy(l4 + 8, "weft", 4);
		check = fold(sum16(0, l4, l4len));
		memcpy(l4 + 2, &check, 2);
		return ETH_LEN + IP_LEN + l4len;
	}
	put16(l4, in->sport);
	put16(l4 + 2, in->dport);
	if (in->proto == IPPROTO_TCP) {
		put16(l4 + 4, 0x7765);	/* sequence number: any */
		l4[12] = 5 << 4;	/* data offset */
		l4[13] = 0x02;		/* SYN */
		put16(l4 + 14, 64240);	/* window */
	} else {
		put16(l4 + 4, (uint16_t)l4len);
		memcpy(l4 + 8, "weft", 4);
	}
	memcpy(ph, &in->saddr, 4);
	memcpy(ph + 4, &in->daddr, 4);
	ph[8] = 0;
	ph[9] = in->proto;
	put16(ph + 10, (uint16_t)l4len);
	check = fold(sum16(sum16(0, ph, sizeof(ph)), l4, l4len));
	memcpy(l4 + (in->proto == IPPROTO_TCP ? 16 : 6), &check, 2);
	return ETH_LEN + IP_LEN + l4len;
}

/* The addresses and ports of the frame as it left the program. */
static void leaving(struct trace_result *r)
{
	const uint8_t *f = r->run.frame, *ip = f + ETH_LEN;
	size_t ihl;

	if (r->run.len < ETH_LEN + IP_LEN || f[12] != 0x08 || f[13] != 0x00 || (ip[0] >> 4) != 4)
		return;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	memcpy(&r->out_saddr, ip + 12, 4);
	memcpy(&r->out_daddr, ip + 16, 4);
	if ((ip[9] == IPPROTO_TCP || ip[9] == IPPROTO_UDP) && r->run.len >= ETH_LEN + ihl + 4) {
		r->out_sport = (uint16_t)(ip[ihl] << 8 | ip[ihl + 1]);
		r->out_dport = (uint16_t)(ip[ihl + 2] << 8 | ip[ihl + 3]);
	}
	r->out_parsed = true;
}

/* the frames' made-up MACs: an outside neighbour, a tunnel's ends, the
 * service device (the programs compare none of them) */
static const uint8_t mac_far[6] = { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 };
static const uint8_t mac_near[6] = { 0x02, 0x77, 0x65, 0x66, 0x74, 0x02 };

static int run(struct datapath *dp, enum datapath_prog prog, uint32_t ifindex, const uint32_t cb[2],
	       const struct trace_input *in, const uint8_t smac[6], const uint8_t dmac[6], struct trace_result *r)
{
	uint8_t f[DATAPATH_TRACE_FRAME_MAX];
	int rc = datapath_trace_run(dp, prog, ifindex, cb, f, frame(in, smac, dmac, f), &r->run);

	if (rc < 0)
		return rc;
	r->runs++;
	leaving(r);
	if (r->run.steps.action == WEFT_ACT_LOCAL)
		r->delivered_to = datapath_endpoint_at(dp, r->run.steps.ifindex);
	return 0;
}

/* The program left the packet to the stack (or to the device it was
 * going to) untouched in its course: no verdict of its own. */
static bool passed(const struct trace_result *r)
{
	return r->run.action == TC_ACT_OK &&
	       (r->run.steps.action == WEFT_ACT_NONE || r->run.steps.action == WEFT_ACT_PASS);
}

/* A verdict the stack took, no program: the steps hold it alone. */
static void stack_verdict(struct trace_result *r, uint32_t action, const char *drop)
{
	memset(&r->run, 0, sizeof(r->run));
	r->run.steps.action = action;
	r->route_drop = drop;
	if (action == WEFT_ACT_DROP)
		r->run.steps.drop_reason = WEFT_DROP_NONE;
	if (action == WEFT_ACT_TUNNEL) {
		r->run.steps.tunnel_id = (uint32_t)r->route.encap_id;
		r->run.steps.tunnel_remote = ntohl(r->route.encap_dst);
	}
}

/* in, from the node's stack (the node's own, or forwarded by it): its
 * route, then the program on the route's device.  A forwarded packet not
 * for the node goes on only when the node forwards. */
static int by_route(struct datapath *dp, const struct trace_node *node, struct trace_input *in, bool forwarded,
		    struct trace_result *r)
{
	struct weft_endpoint ep;
	int rc;

	if (!node->route) {
		stack_verdict(r, WEFT_ACT_HOST, NULL);
		return 0;
	}
	if ((rc = node->route(node->route_arg, in->daddr, &r->route)) < 0)
		return rc;
	if (!in->saddr)
		in->saddr = r->route.src ? r->route.src : node->node_ip;
	r->source = in->saddr;
	if (r->route.type == NL_ROUTE_LOCAL) {
		r->route_via = "Local";
		stack_verdict(r, WEFT_ACT_HOST, NULL);
	} else if (forwarded && !node->forwarding) {
		r->route_via = "None";
		stack_verdict(r, WEFT_ACT_DROP, "not-forwarded");
	} else if (r->route.type != NL_ROUTE_UNICAST || r->route.ifindex <= 0) {
		r->route_via = "None";
		stack_verdict(r, WEFT_ACT_DROP, "no-route");
	} else if ((uint32_t)r->route.ifindex == node->svc_ifindex) {
		r->route_via = "ServiceDevice";
		return run(dp, DATAPATH_PROG_SVC, node->svc_ifindex, NULL, in, mac_near, mac_near, r);
	} else if (datapath_endpoint_get(dp, in->daddr, &ep) == 0 && ep.ifindex == (uint32_t)r->route.ifindex) {
		r->route_via = "Pod";
		if ((rc = run(dp, DATAPATH_PROG_POD_EGRESS, ep.ifindex, NULL, in, ep.gw_mac, ep.pod_mac, r)) < 0)
			return rc;
		if (passed(r)) {	/* the veth hands it to the pod */
			r->run.steps.action = WEFT_ACT_LOCAL;
			r->delivered_to = in->daddr;
		}
	} else if (r->route.encap) {
		r->route_via = "Tunnel";
		stack_verdict(r, WEFT_ACT_TUNNEL, NULL);
		r->out_saddr = in->saddr;
		r->out_daddr = in->daddr;
		r->out_sport = in->sport;
		r->out_dport = in->dport;
		r->out_parsed = true;
	} else {
		r->route_via = "Device";
		stack_verdict(r, WEFT_ACT_UNDERLAY, NULL);
	}
	return 0;
}

int trace_run(struct datapath *dp, const struct trace_node *node, const struct trace_input *in,
	      struct trace_result *r, char *err, size_t len)
{
	struct trace_input pkt = *in;
	struct weft_endpoint ep;
	char ip[INET_ADDRSTRLEN];
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->source = in->saddr;
	switch (in->from) {
	case TRACE_FROM_POD:
		if (datapath_endpoint_get(dp, in->pod ? in->pod : in->saddr, &ep) < 0) {
			inet_ntop(AF_INET, in->pod ? &in->pod : &in->saddr, ip, sizeof(ip));
			snprintf(err, len, "%s is no pod of this node", ip);
			return -ENOENT;
		}
		rc = run(dp, DATAPATH_PROG_POD, ep.ifindex, NULL, in, ep.pod_mac, ep.gw_mac, r);
		break;
	case TRACE_FROM_TUNNEL: {
		const uint32_t cb[2] = { in->vni, ntohl(in->remote) };

		rc = run(dp, DATAPATH_PROG_VXLAN, node->vxlan_ifindex, cb, in, mac_far, mac_near, r);
		break;
	}
	case TRACE_FROM_NODE:
		/* (no programs, a hollow node: the route alone would say nothing true) */
		rc = datapath_svc_prog_fd(dp) < 0 ? -EOPNOTSUPP : by_route(dp, node, &pkt, false, r);
		break;
	case TRACE_FROM_OUTSIDE:
		rc = run(dp, DATAPATH_PROG_NODE, node->underlay_ifindex, NULL, in, mac_far, mac_near, r);
		if (rc < 0 || !passed(r))
			break;
		/* to the stack: the node's, or forwarded by its route */
		if (r->out_parsed)
			pkt.daddr = r->out_daddr, pkt.saddr = r->out_saddr;
		rc = by_route(dp, node, &pkt, true, r);
		break;
	}
	if (rc < 0) {
		snprintf(err, len, "%s", rc == -EOPNOTSUPP ? "this node has no programs to run (a hollow node)"
							: strerror(-rc));
		return rc;
	}
	return 0;
}

/* ---- the status ---- */

static json_t *addr_json(in_addr_t a)
{
	char s[INET_ADDRSTRLEN];

	return json_string(inet_ntop(AF_INET, &a, s, sizeof(s)) ? s : "");
}

static json_t *endpoint_json(in_addr_t a, uint16_t port)
{
	char s[INET_ADDRSTRLEN + 8], ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	if (port)
		snprintf(s, sizeof(s), "%s:%u", ip, port);
	else
		snprintf(s, sizeof(s), "%s", ip);
	return json_string(s);
}

static json_t *steps_json(const struct trace_input *in, const struct trace_result *r)
{
	const struct weft_trace *t = &r->run.steps;
	json_t *steps = json_array();

	if (!steps)
		return NULL;
	if (r->route_via) {	/* the stack's route, before the program on its device */
		char dev[IF_NAMESIZE] = "";
		json_t *s = json_pack("{s:s, s:s, s:o, s:b}", "step", "Route", "via", r->route_via,
				      "source", addr_json(r->source), "forwarded",
				      in->from == TRACE_FROM_OUTSIDE && r->route.type != NL_ROUTE_LOCAL &&
				      !r->route_drop);

		if (s && r->route.type == NL_ROUTE_UNICAST && r->route.ifindex > 0 &&
		    if_indextoname((unsigned)r->route.ifindex, dev))
			json_object_set_new(s, "device", json_string(dev));
		json_array_append_new(steps, s);
	}
	if (in->from == TRACE_FROM_TUNNEL)	/* where it came from: the first step */
		json_array_append_new(steps, json_pack("{s:s, s:I, s:o}", "step", "Tunnel",
						       "vni", (json_int_t)t->tunnel_id,
						       "remote", addr_json(htonl(t->tunnel_remote))));
	if (t->steps & WEFT_TRACE_S_SERVICE) {
		bool fresh = t->steps & WEFT_TRACE_S_SVC_NEW, held = t->steps & WEFT_TRACE_S_SVC_AFFINITY;
		char note[160] = "";
		json_t *s;

		/* what the trace cannot know, said: a new connection's
		 * backend is drawn at random per connection */
		if (fresh && !held)
			snprintf(note, sizeof(note), "a new connection goes to one of %u backends, drawn at random: "
				 "this run drew this one", t->candidates);
		s = json_pack("{s:s, s:o, s:o, s:I, s:s}", "step", "Service",
			      "frontend", endpoint_json(t->svc_addr, ntohs(t->svc_port)),
			      "backend", endpoint_json(t->backend_addr, ntohs(t->backend_port)),
			      "backendID", (json_int_t)t->backend_id,
			      "chosen", !fresh ? "Connection" : held ? "Affinity" : "Random");
		if (s && fresh && !held)
			json_object_set_new(s, "candidates", json_integer(t->candidates));
		if (s && note[0])
			json_object_set_new(s, "note", json_string(note));
		json_array_append_new(steps, s);
	}
	if (t->steps & WEFT_TRACE_S_SVC_REPLY)
		json_array_append_new(steps, json_pack("{s:s, s:o, s:o}", "step", "ServiceReply",
						       "frontend", endpoint_json(t->svc_addr, ntohs(t->svc_port)),
						       "backend", endpoint_json(t->backend_addr,
										ntohs(t->backend_port))));
	if (t->steps & WEFT_TRACE_S_TENANT)
		json_array_append_new(steps, json_pack("{s:s, s:I, s:I, s:b}", "step", "Tenant",
						       "sourceVNID", (json_int_t)t->src_vnid,
						       "destinationVNID", (json_int_t)t->dst_vnid,
						       "allowed", !(t->steps & WEFT_TRACE_S_ISOLATED)));
	if (t->steps & WEFT_TRACE_S_POLICY_CT)
		json_array_append_new(steps, json_pack("{s:s, s:s}", "step", "NetworkPolicy",
						       "decision", "Connection"));
	else if (t->steps & WEFT_TRACE_S_POLICY)
		json_array_append_new(steps, json_pack("{s:s, s:s, s:I, s:I}", "step", "NetworkPolicy",
						       "decision", t->action == WEFT_ACT_DROP &&
						       (t->drop_reason == WEFT_DROP_POLICY_EGRESS ||
							t->drop_reason == WEFT_DROP_POLICY_INGRESS) ? "Denied" : "Allowed",
						       "egressRule", (json_int_t)t->rule_out,
						       "ingressRule", (json_int_t)t->rule_in));
	if (t->action == WEFT_ACT_TUNNEL && in->from != TRACE_FROM_TUNNEL)	/* where it goes: the last */
		json_array_append_new(steps, json_pack("{s:s, s:I, s:o}", "step", "Tunnel",
						       "vni", (json_int_t)t->tunnel_id,
						       "remote", addr_json(htonl(t->tunnel_remote))));
	return steps;
}

json_t *trace_result_json(const struct trace_input *in, const struct trace_result *r)
{
	const struct weft_trace *t = &r->run.steps;
	json_t *st = json_pack("{s:s, s:o}", "action", trace_action_name(t->action), "steps", steps_json(in, r));

	if (!st)
		return NULL;
	if (t->action == WEFT_ACT_DROP)
		json_object_set_new(st, "dropReason", json_string(r->route_drop ? r->route_drop
								  : t->drop_reason < WEFT_DROP_MAX
								  ? datapath_drop_names[t->drop_reason] : "unknown"));
	if (in->from == TRACE_FROM_NODE && r->source)	/* the route's choice */
		json_object_set_new(st, "source", addr_json(r->source));
	if (r->delivered_to)
		json_object_set_new(st, "deliveredTo", addr_json(r->delivered_to));
	if (r->out_parsed)
		json_object_set_new(st, "packetOut", json_pack(
			"{s:o, s:o, s:I, s:I}", "source", addr_json(r->out_saddr),
			"destination", addr_json(r->out_daddr), "sourcePort", (json_int_t)r->out_sport,
			"destinationPort", (json_int_t)r->out_dport));
	return st;
}
