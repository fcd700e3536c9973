/*
 * trace_test.c — trace.c on the real programs (BPF_PROG_TEST_RUN in a
 * private bpffs, datapath_fixture.h), built as the agent loads them
 * (trace off): the spec parsed and refused, then traces from a pod (to a
 * pod here, to a service, to a pod on another node, with a forged
 * source) and from the tunnel (a tenant allowed, another refused).  Each
 * is checked against the programs' own answer for the same frame as
 * traffic, and a trace leaves the maps as they were.
 */
#include "agent/trace.h"
#include "agent/datapath_fixture.h"

static int parse(const char *text, struct trace_input *in, char *err, size_t len)
{
	struct jview v;
	struct jview_error jerr;
	int rc = jview_parse(&v, text, strlen(text), &jerr);

	if (rc < 0)
		return rc;
	rc = trace_input_parse(jview_root(&v), in, err, len);
	jview_free(&v);
	return rc;
}

TEST(trace_spec_parsed_and_refused)
{
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "{}", "spec.from: missing" },
		{ "{\"from\":\"Host\"}", "spec.from: not Pod, Tunnel, Node or Outside" },
		{ "{\"from\":\"Outside\",\"protocol\":\"ICMP\",\"destination\":\"10.0.0.1\"}",
		  "spec.source: missing" },
		{ "{\"from\":\"Pod\",\"protocol\":\"SCTP\"}", "spec.protocol: not TCP, UDP or ICMP" },
		{ "{\"from\":\"Pod\",\"destination\":\"10.0.0.1\"}", "spec.source: missing" },
		{ "{\"from\":\"Pod\",\"source\":\"10.0.0.300\",\"destination\":\"10.0.0.1\"}",
		  "spec.source: not an IPv4 address" },
		{ "{\"from\":\"Pod\",\"source\":\"10.0.0.2\",\"destination\":\"10.0.0.1\"}", "spec.sourcePort: missing" },
		{ "{\"from\":\"Pod\",\"source\":\"10.0.0.2\",\"destination\":\"10.0.0.1\",\"sourcePort\":1,"
		  "\"destinationPort\":65536}", "spec.destinationPort: not a port (1-65535)" },
		{ "{\"from\":\"Tunnel\",\"protocol\":\"ICMP\",\"source\":\"10.0.0.2\",\"destination\":\"10.0.0.1\"}",
		  "spec.tunnel.vni: missing (from Tunnel)" },
		{ "{\"from\":\"Tunnel\",\"protocol\":\"ICMP\",\"source\":\"10.0.0.2\",\"destination\":\"10.0.0.1\","
		  "\"tunnel\":{\"vni\":16777216}}", "spec.tunnel.vni: not a VNI (0-16777215)" },
		{ "{\"from\":\"Tunnel\",\"protocol\":\"ICMP\",\"source\":\"10.0.0.2\",\"destination\":\"10.0.0.1\","
		  "\"tunnel\":{\"vni\":7}}", "spec.tunnel.remote: not the sending node's IPv4 address" },
	};
	struct trace_input in;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_EQ(parse(bad[i].spec, &in, err, sizeof(err)), -EINVAL);
		CHECK_STR(err, bad[i].why);
	}
	CHECK_EQ(parse("{\"from\":\"Pod\",\"source\":\"10.128.0.5\",\"destination\":\"10.96.0.10\","
		       "\"sourcePort\":41000,\"destinationPort\":80}", &in, err, sizeof(err)), 0);
	CHECK_EQ(in.from, TRACE_FROM_POD);
	CHECK_EQ(in.proto, IPPROTO_TCP);	/* TCP unless said */
	CHECK_EQ(in.saddr, POD_A_IP);
	CHECK_EQ(in.pod, POD_A_IP);		/* its own veth unless said */
	CHECK_EQ(in.daddr, SVC_IP);
	CHECK_EQ(in.sport, 41000);
	CHECK_EQ(in.dport, 80);
	CHECK_EQ(parse("{\"from\":\"Tunnel\",\"protocol\":\"ICMP\",\"source\":\"10.128.2.9\","
		       "\"destination\":\"10.128.0.6\",\"tunnel\":{\"vni\":7,\"remote\":\"192.168.1.12\"}}",
		       &in, err, sizeof(err)), 0);
	CHECK_EQ(in.from, TRACE_FROM_TUNNEL);
	CHECK_EQ(in.proto, IPPROTO_ICMP);
	CHECK_EQ(in.vni, 7);
	CHECK_EQ(in.remote, REMOTE_NODE_IP);
	/* from the node: the route picks the source unless given */
	CHECK_EQ(parse("{\"from\":\"Node\",\"protocol\":\"ICMP\",\"destination\":\"10.128.0.6\"}",
		       &in, err, sizeof(err)), 0);
	CHECK_EQ(in.from, TRACE_FROM_NODE);
	CHECK_EQ(in.saddr, 0);
	CHECK_EQ(parse("{\"from\":\"Outside\",\"source\":\"192.168.1.200\",\"destination\":\"192.168.1.11\","
		       "\"sourcePort\":5000,\"destinationPort\":30080}", &in, err, sizeof(err)), 0);
	CHECK_EQ(in.from, TRACE_FROM_OUTSIDE);
	CHECK_EQ(in.saddr, OUTSIDE_IP);
}

/* The traced node as the tests see it: VXLAN_IFINDEX its VXLAN device
 * (no device here: the runs from the tunnel use none, node0), the
 * test-run device its service device; routes from routes[]. */
static const struct {
	in_addr_t dst;
	struct nl_route r;
} routes[] = {
	{ NODE_IP, { .type = NL_ROUTE_LOCAL } },
	{ POD_A_IP, { .type = NL_ROUTE_UNICAST, .src = GATEWAY_IP } },	/* ifindex: run_ifindex() */
	{ SVC_IP, { .type = NL_ROUTE_UNICAST, .src = GATEWAY_IP } },	/* the service device, ditto */
	{ REMOTE_POD_IP, { .type = NL_ROUTE_UNICAST, .ifindex = VXLAN_IFINDEX, .src = GATEWAY_IP, .encap = true,
			   .encap_id = 0, .encap_dst = REMOTE_NODE_IP } },
	{ IP(192, 168, 7, 7), { .type = NL_ROUTE_UNICAST, .ifindex = UNDERLAY_IFINDEX, .src = NODE_IP } },
};

static int route_of(void *arg, in_addr_t dst, struct nl_route *out)
{
	(void)arg;
	memset(out, 0, sizeof(*out));
	out->type = NL_ROUTE_UNREACHABLE;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].dst == dst) {
			*out = routes[i].r;
			if (out->type == NL_ROUTE_UNICAST && !out->ifindex)
				out->ifindex = (int)run_ifindex();
		}
	return 0;
}

static const struct trace_node node_vx = { .vxlan_ifindex = VXLAN_IFINDEX };
static const struct trace_node node0 = { 0 };

static const char *status_str(json_t *st, const char *key)
{
	return json_string_value(json_object_get(st, key));
}

/* The status's step named name, or NULL. */
static json_t *step(json_t *st, const char *name)
{
	json_t *steps = json_object_get(st, "steps"), *s;
	size_t i;

	json_array_foreach(steps, i, s)
		if (!strcmp(json_string_value(json_object_get(s, "step")) ?: "", name))
			return s;
	return NULL;
}

DP_TEST(trace_from_a_pod_matches_traffic_and_writes_nothing)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct datapath *dp;
	struct trace_input in = { .from = TRACE_FROM_POD, .proto = IPPROTO_TCP, .saddr = POD_A_IP,
				  .pod = POD_A_IP, .sport = 41000 };
	struct trace_result r;
	struct result real;
	struct pkt p;
	char err[256] = "";
	json_t *st;

	CHECK_EQ(seed_node(f->dp), 0);
	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 3), 0);
	if (!(dp = fixture_production(f)))
		return;

	/* to pod B here: delivered to it */
	in.daddr = POD_B_IP;
	in.dport = 8080;
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.run.action, TC_ACT_REDIRECT);
	CHECK_STR(trace_action_name(r.run.steps.action), "Local");
	CHECK_EQ(r.run.steps.ifindex, 42);
	CHECK_EQ(r.delivered_to, POD_B_IP);
	CHECK(r.run.steps.steps & WEFT_TRACE_S_TENANT);
	CHECK(!(r.run.steps.steps & WEFT_TRACE_S_ISOLATED));

	/* to the service: a backend chosen as for a new connection, nothing made */
	in.daddr = SVC_IP;
	in.dport = SVC_PORT;
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), 0);
	CHECK(r.run.steps.steps & WEFT_TRACE_S_SVC_NEW);
	CHECK(r.out_parsed);
	CHECK_EQ(r.out_daddr, r.run.steps.backend_addr);
	CHECK_EQ(r.out_dport, BE_PORT);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 0);
	st = trace_result_json(&in, &r);
	CHECK(st != NULL);
	CHECK(!strcmp(status_str(st, "action"), "Local") || !strcmp(status_str(st, "action"), "Tunnel"));
	CHECK_STR(json_string_value(json_object_get(step(st, "Service"), "frontend")), "10.96.0.10:80");
	CHECK_STR(json_string_value(json_object_get(step(st, "Service"), "chosen")), "Random");
	CHECK_EQ(json_integer_value(json_object_get(step(st, "Service"), "candidates")), 3);
	CHECK(strstr(json_string_value(json_object_get(step(st, "Service"), "note")) ?: "",
		     "one of 3 backends, drawn at random") != NULL);
	json_decref(st);
	/* the same SYN as traffic: to one of the three (each draws its own) */
	tcp_from_a(&p, 41000, SVC_IP, SVC_PORT, TCP_SYN);
	CHECK_EQ(run(f, datapath_pod_prog_fd(dp), &p, &real), 0);
	CHECK_EQ((int)real.verdict, TC_ACT_REDIRECT);
	CHECK(backend_of(&real.out) >= 0);
	CHECK_EQ(ct_count(f), 2);
	/* and a trace of it now follows its connection: the same backend */
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.out_daddr, ip_of(&real.out)->daddr);
	st = trace_result_json(&in, &r);
	CHECK_STR(json_string_value(json_object_get(step(st, "Service"), "chosen")), "Connection");
	CHECK(!json_object_get(step(st, "Service"), "note"));
	json_decref(st);
	CHECK_EQ(ct_count(f), 2);

	/* to a pod on the other node: the tunnel key it would carry */
	in.daddr = REMOTE_POD_IP;
	in.dport = 8080;
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Tunnel");
	CHECK_EQ(r.run.steps.tunnel_id, VNID_A);
	CHECK_EQ(htonl(r.run.steps.tunnel_remote), REMOTE_NODE_IP);
	st = trace_result_json(&in, &r);
	CHECK_STR(json_string_value(json_object_get(step(st, "Tunnel"), "remote")), "192.168.1.12");
	CHECK_EQ(json_integer_value(json_object_get(step(st, "Tunnel"), "vni")), VNID_A);
	json_decref(st);

	/* a forged source on pod A's veth: dropped, and said why, not counted */
	in.saddr = IP(10, 128, 0, 77);
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.run.action, TC_ACT_SHOT);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "action"), "Drop");
	CHECK_STR(status_str(st, "dropReason"), datapath_drop_names[WEFT_DROP_SPOOFED_IP]);
	json_decref(st);
	CHECK_EQ(drops_total(f), 0);

	/* a source that is no pod here */
	in.pod = in.saddr;
	CHECK_EQ(trace_run(dp, &node_vx, &in, &r, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "10.128.0.77 is no pod of this node");
	datapath_close(dp);
}

/* From the node's stack: the route's device decides the program (or is
 * the verdict itself), and its source is the packet's. */
DP_TEST(trace_from_the_node_follows_its_routes)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct trace_node node = { .svc_ifindex = run_ifindex(), .node_ip = NODE_IP, .route = route_of };
	struct trace_input in = { .from = TRACE_FROM_NODE, .proto = IPPROTO_TCP, .sport = 41000, .dport = 8080 };
	struct datapath *dp;
	struct trace_result r;
	char err[256] = "";
	json_t *st;

	CHECK_EQ(svc_seeded(f, &cluster_tcp, IPPROTO_TCP, ids, 3), 0);
	if (!(dp = fixture_production(f)))
		return;
	/* a service: the service device's program translates it */
	in.daddr = SVC_IP;
	in.dport = SVC_PORT;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.runs, 1);
	CHECK_EQ(r.source, GATEWAY_IP);
	CHECK(r.run.steps.steps & WEFT_TRACE_S_SVC_NEW);
	CHECK(r.out_daddr == LOCAL_BE_IP || r.out_daddr == REMOTE_BE_IP || r.out_daddr == REMOTE_BE2_IP);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "source"), "10.128.0.1");
	CHECK_STR(json_string_value(json_object_get(step(st, "Route"), "via")), "ServiceDevice");
	CHECK(!strcmp(status_str(st, "action"), "Local") || !strcmp(status_str(st, "action"), "Tunnel"));
	json_decref(st);
	CHECK_EQ(ct_count(f), 0);

	/* a pod here: the veth's program, then the pod */
	node.svc_ifindex = 0;
	in.daddr = POD_A_IP;
	in.dport = 8080;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Local");
	CHECK_EQ(r.delivered_to, POD_A_IP);
	st = trace_result_json(&in, &r);
	CHECK_STR(json_string_value(json_object_get(step(st, "Route"), "via")), "Pod");
	json_decref(st);

	/* a pod elsewhere: the route's tunnel key, no program here */
	in.daddr = REMOTE_POD_IP;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.runs, 0);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "action"), "Tunnel");
	CHECK_EQ(json_integer_value(json_object_get(step(st, "Tunnel"), "vni")), 0);
	CHECK_STR(json_string_value(json_object_get(step(st, "Tunnel"), "remote")), "192.168.1.12");
	CHECK_STR(json_string_value(json_object_get(json_object_get(st, "packetOut"), "destination")),
		  "10.128.2.9");
	json_decref(st);

	/* its own address; out of the node; nowhere */
	in.daddr = NODE_IP;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Host");
	in.daddr = IP(192, 168, 7, 7);
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Underlay");
	CHECK_EQ(r.source, NODE_IP);
	in.daddr = IP(203, 0, 113, 1);
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "action"), "Drop");
	CHECK_STR(status_str(st, "dropReason"), "no-route");
	json_decref(st);
	CHECK_EQ(drops_total(f), 0);
	datapath_close(dp);
}

/* From outside: the underlay's program, and the stack after it when it
 * leaves the packet there. */
DP_TEST(trace_from_outside_enters_on_the_underlay)
{
	static const uint32_t ids[] = { BE_LOCAL, BE_REMOTE, BE_REMOTE2 };
	struct trace_node node = { .node_ip = NODE_IP, .route = route_of };
	struct trace_input in = { .from = TRACE_FROM_OUTSIDE, .proto = IPPROTO_TCP, .saddr = OUTSIDE_IP,
				  .daddr = NODE_IP, .sport = 5000, .dport = NODE_PORT };
	struct datapath *dp;
	struct trace_result r;
	char err[256] = "";
	json_t *st;

	CHECK_EQ(svc_seeded(f, &nodeport_tcp, IPPROTO_TCP, ids, 3), 0);
	if (!(dp = fixture_production(f)))
		return;
	/* a NodePort: translated on the underlay, to a backend */
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.runs, 1);
	CHECK(r.run.steps.steps & WEFT_TRACE_S_SERVICE);
	CHECK(r.out_daddr == LOCAL_BE_IP || r.out_daddr == REMOTE_BE_IP || r.out_daddr == REMOTE_BE2_IP);
	/* another port of the node: its own stack */
	in.dport = 22;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Host");
	/* a pod's address: forwarded only by a node that forwards */
	in.daddr = POD_A_IP;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "action"), "Drop");
	CHECK_STR(status_str(st, "dropReason"), "not-forwarded");
	json_decref(st);
	node.forwarding = true;
	CHECK_EQ(trace_run(dp, &node, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.runs, 2);
	CHECK_STR(trace_action_name(r.run.steps.action), "Local");
	st = trace_result_json(&in, &r);
	CHECK(json_is_true(json_object_get(step(st, "Route"), "forwarded")));
	CHECK_STR(json_string_value(json_object_get(step(st, "Route"), "source")), "192.168.1.200");
	json_decref(st);
	CHECK_EQ(ct_count(f), 0);
	CHECK_EQ(drops_total(f), 0);
	datapath_close(dp);
}

DP_TEST(trace_from_the_tunnel_checks_the_tenants)
{
	struct datapath *dp;
	struct trace_input in = { .from = TRACE_FROM_TUNNEL, .proto = IPPROTO_ICMP, .saddr = REMOTE_POD_IP,
				  .daddr = POD_B_IP, .vni = VNID_A, .remote = REMOTE_NODE_IP };
	struct trace_result r;
	char err[256] = "";
	json_t *st;

	CHECK_EQ(seed_node(f->dp), 0);
	if (!(dp = fixture_production(f)))
		return;
	/* (the test-run device: VXLAN_IFINDEX is no device of this namespace) */
	CHECK_EQ(trace_run(dp, &node0, &in, &r, err, sizeof(err)), 0);
	CHECK_STR(trace_action_name(r.run.steps.action), "Local");
	CHECK_EQ(r.delivered_to, POD_B_IP);
	in.vni = VNID_BLUE;	/* another tenant's */
	CHECK_EQ(trace_run(dp, &node0, &in, &r, err, sizeof(err)), 0);
	st = trace_result_json(&in, &r);
	CHECK_STR(status_str(st, "action"), "Drop");
	CHECK_STR(status_str(st, "dropReason"), datapath_drop_names[WEFT_DROP_ISOLATED]);
	CHECK_EQ(json_integer_value(json_object_get(step(st, "Tenant"), "sourceVNID")), VNID_BLUE);
	CHECK(json_is_false(json_object_get(step(st, "Tenant"), "allowed")));
	json_decref(st);
	in.remote = IP(192, 168, 1, 99);	/* no node of the cluster */
	in.vni = VNID_A;
	CHECK_EQ(trace_run(dp, &node0, &in, &r, err, sizeof(err)), 0);
	CHECK_EQ(r.run.steps.drop_reason, WEFT_DROP_UNKNOWN_NODE);
	CHECK_EQ(drops_total(f), 0);
	datapath_close(dp);
}

