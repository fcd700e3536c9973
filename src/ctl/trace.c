/*
 * trace.c — `weftctl trace FROM TO[:PORT[/PROTO]]`: one packet through the
 * loaded programs of the nodes it crosses, with their live maps, and what
 * each step did (docs/trace.md).
 *
 *   FROM   NAMESPACE/POD; NODE (a node's name or address): the node's own
 *          stack; or an IPv4 address outside the cluster, arriving at the
 *          node --node names (or the node TO is)
 *   TO     NAMESPACE/POD, svc/NAMESPACE/NAME, NODE or an IPv4 address;
 *          PORT (and /TCP, the default, or /UDP), or none for an ICMP
 *          echo.  A Service with one port needs none.  From outside, a
 *          Service is its LoadBalancer address, else its NodePort on the
 *          arrival node.
 *
 * How: a TraceRequest (network.weft.io/v1) for FROM's node, from its pod,
 * its stack (from Node) or its underlay (from Outside); the node's agent
 * runs the packet through its programs as a test run (nothing is sent, no
 * state written) and answers in its status.  When the answer is Tunnel, a
 * second request goes to the node that owns the tunnel's remote address,
 * from the tunnel, with the packet as it left the first node and its key.
 * The requests are deleted after (--keep keeps them).
 *
 * Exit: 0 delivered (to a pod, or to a node's stack or the outside),
 * 1 dropped or refused, 2 no answer (a bad argument, an unknown pod or
 * service, a node that did not answer within --timeout, or one that could
 * not run it), so a script never reads a failure as a verdict.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "lib/cidr.h"

enum { TRACE_NO_ANSWER = CTL_EXIT_USAGE, TRACE_HOPS_MAX = 2 };

static const char usage[] =
	"FROM TO[:PORT[/PROTO]] [--source-port N] [--source ADDRESS] [--node NODE] [--timeout SECONDS] [--keep]\n"
	"       [-o json]\n"
	"       (FROM: NAMESPACE/POD, a node (its name or address), or an address outside the cluster\n"
	"       arriving at --node; TO: NAMESPACE/POD, svc/NAMESPACE/NAME, a node or an IPv4 address;\n"
	"       PROTO: TCP (default) or UDP; no PORT: an ICMP echo)";

enum from { FROM_POD, FROM_NODE, FROM_OUTSIDE };
static const char *const from_names[] = { [FROM_POD] = "Pod", [FROM_NODE] = "Node", [FROM_OUTSIDE] = "Outside" };

struct packet {
	const char *proto;		/* "TCP", "UDP", "ICMP" */
	char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
	long sport, dport;		/* 0: none (ICMP) */
};

struct hop {
	char name[64];			/* the TraceRequest's */
	char node[254];
	json_t *spec;			/* owned */
	json_t *status;			/* owned; NULL: no answer */
	bool created;
	bool port_drawn;		/* the last node's SNAT draws the source
					 * port at random: traced with FROM's */
};

struct trace {
	struct ctl *ctl;
	long timeout;
	bool keep, json;
	enum from from;
	json_t *subnets;		/* the HostSubnets (owned), once asked */
	char arrival_ip[INET_ADDRSTRLEN];	/* from Outside: the node's address */
	char from_label[520], to_label[600];
	struct hop hops[TRACE_HOPS_MAX];
	int nhops;
};

/* ---- the ends ---- */

static int split_ns_name(const char *what, const char *arg, char *ns, size_t nslen, char *name, size_t namelen)
{
	const char *slash = strchr(arg, '/');

	if (!slash || strchr(slash + 1, '/') || (size_t)(slash - arg) >= nslen || strlen(slash + 1) >= namelen) {
		fprintf(stderr, "error: %s \"%s\": want NAMESPACE/NAME\n", what, arg);
		return TRACE_NO_ANSWER;
	}
	snprintf(ns, nslen, "%.*s", (int)(slash - arg), arg);
	snprintf(name, namelen, "%s", slash + 1);
	return ctl_name_ok("namespace", ns) && ctl_name_ok("name", name) ? 0 : TRACE_NO_ANSWER;
}

/* GET one object of kind k: 0 with *out (owned), or the exit code. */
static int get_object(struct ctl *ctl, enum kind_id kind, const char *ns, const char *name, json_t **out)
{
	const struct kind_info *k = kind_get(kind);
	struct ctl_reply r = { 0 };
	const json_t *o;
	char path[1024];

	*out = NULL;
	ctl_path(k, ns, name, path, sizeof(path));
	if (ctl_call(ctl, "GET", path, NULL, &r) < 0)
		return TRACE_NO_ANSWER;
	if (r.status == 404) {
		ctl_print_not_found(k, name);
		ctl_reply_free(&r);
		return TRACE_NO_ANSWER;
	}
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		ctl_reply_free(&r);
		return TRACE_NO_ANSWER;
	}
	if ((o = ctl_reply_object(&r, "GET", path)))
		*out = json_incref((json_t *)o);
	ctl_reply_free(&r);
	return *out ? 0 : TRACE_NO_ANSWER;
}

/* The HostSubnets (t->subnets, asked once): the array, or NULL (said). */
static const json_t *subnets(struct trace *t)
{
	struct ctl_reply r = { 0 };
	const json_t *items;

	if (t->subnets)
		return t->subnets;
	items = ctl_list(t->ctl, "/apis/network.openshift.io/v1/hostsubnets", &r);
	if (items)
		t->subnets = json_incref((json_t *)items);
	ctl_reply_free(&r);
	return t->subnets;
}

/* The HostSubnet whose field ("host", "hostIP") is v; NULL when none. */
static const json_t *subnet_by(const json_t *items, const char *field, const char *v)
{
	const json_t *hs;
	size_t i;

	json_array_foreach(items, i, hs)
		if (obj_str(hs, field) && !strcmp(obj_str(hs, field), v))
			return hs;
	return NULL;
}

/* The HostSubnet whose pod subnet holds the address addr; NULL when none. */
static const json_t *subnet_holding(const json_t *items, const char *addr)
{
	const json_t *hs;
	struct cidr c;
	uint32_t ip;
	size_t i;

	if (ip4_parse(addr, &ip) < 0)
		return NULL;
	json_array_foreach(items, i, hs)
		if (cidr_parse(obj_str(hs, "subnet"), &c) == 0 && cidr_contains_ip(&c, ip))
			return hs;
	return NULL;
}

/* FROM: its address and node. */
static int from_pod(struct trace *t, const char *arg, struct packet *p, char *node, size_t nodelen)
{
	char ns[254], name[254];
	const char *ip, *n;
	json_t *pod;
	int rc;

	if ((rc = split_ns_name("FROM", arg, ns, sizeof(ns), name, sizeof(name))) ||
	    (rc = get_object(t->ctl, KIND_POD, ns, name, &pod)))
		return rc;
	ip = obj_str(pod, "status.podIP");
	n = obj_str(pod, "spec.nodeName");
	if (!ip || !n) {
		fprintf(stderr, "error: pod %s/%s has %s yet: it has not started on a node\n", ns, name,
			!n ? "no node" : "no address");
		json_decref(pod);
		return TRACE_NO_ANSWER;
	}
	snprintf(p->src, sizeof(p->src), "%s", ip);
	snprintf(node, nodelen, "%s", n);
	snprintf(t->from_label, sizeof(t->from_label), "%s/%s (%s, on %s)", ns, name, ip, n);
	json_decref(pod);
	return 0;
}

/* PORT[/PROTO] after TO's ':', or none (ICMP). */
static int port_parse(const char *arg, struct packet *p)
{
	char *end;

	p->proto = "ICMP";
	if (!arg)
		return 0;
	errno = 0;
	p->dport = isdigit((unsigned char)arg[0]) ? strtol(arg, &end, 10) : -1;
	if (p->dport < 1 || p->dport > 65535 || errno || (*end && *end != '/')) {
		fprintf(stderr, "error: port \"%s\": want a number from 1 to 65535, then optionally /TCP or /UDP\n", arg);
		return TRACE_NO_ANSWER;
	}
	p->proto = "TCP";
	if (*end == '/') {
		if (!strcasecmp(end + 1, "TCP")) {
			p->proto = "TCP";
		} else if (!strcasecmp(end + 1, "UDP")) {
			p->proto = "UDP";
		} else {
			fprintf(stderr, "error: protocol \"%s\": want TCP or UDP\n", end + 1);
			return TRACE_NO_ANSWER;
		}
	}
	return 0;
}

/* A Service's port: the one asked for, or its only one (*out, borrowed). */
static int service_port(const json_t *svc, const char *label, struct packet *p, bool given, const json_t **out)
{
	const json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports"), *port;
	size_t i;

	if (!given && json_array_size(ports) == 1) {
		const char *proto = obj_str(json_array_get(ports, 0), "protocol");

		*out = json_array_get(ports, 0);
		p->dport = (long)json_integer_value(json_object_get(*out, "port"));
		p->proto = proto && !strcmp(proto, "UDP") ? "UDP" : "TCP";
		return 0;
	}
	json_array_foreach(ports, i, port) {
		const char *proto = obj_str(port, "protocol");

		if (given && json_integer_value(json_object_get(port, "port")) == p->dport &&
		    !strcmp(proto ? proto : "TCP", p->proto)) {
			*out = port;
			return 0;
		}
	}
	fprintf(stderr, "error: service %s has %s: name one of its ports (TO:PORT[/PROTO])\n", label,
		given ? "no such port" : "several ports");
	return TRACE_NO_ANSWER;
}

/* From outside, a Service is reached at its LoadBalancer address, else
 * at its NodePort on the arrival node: p->dst and p->dport so. */
static int service_from_outside(struct trace *t, const json_t *svc, const json_t *port, struct packet *p)
{
	const char *vip = obj_str(json_array_get(json_object_get(json_object_get(json_object_get(svc, "status"),
		"loadBalancer"), "ingress"), 0), "ip");
	json_int_t node_port = json_integer_value(json_object_get(port, "nodePort"));

	if (vip) {
		snprintf(p->dst, sizeof(p->dst), "%s", vip);
		return 0;
	}
	if (!node_port) {
		fprintf(stderr, "error: %s has neither a LoadBalancer address nor a NodePort: nothing outside the "
				"cluster reaches it\n", t->to_label);
		return TRACE_NO_ANSWER;
	}
	if (!t->arrival_ip[0]) {
		fprintf(stderr, "error: %s is reached from outside on its NodePort %lld: name the node with --node "
				"NODE\n", t->to_label, (long long)node_port);
		return TRACE_NO_ANSWER;
	}
	snprintf(p->dst, sizeof(p->dst), "%s", t->arrival_ip);
	p->dport = (long)node_port;
	return 0;
}

static int to_end(struct trace *t, const char *arg, struct packet *p)
{
	char what[600], ns[254], name[254];
	const char *colon = strrchr(arg, ':'), *ip;
	const json_t *port = NULL, *hs;
	struct in_addr a;
	json_t *o;
	int rc;

	snprintf(what, sizeof(what), "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg);
	if ((rc = port_parse(colon ? colon + 1 : NULL, p)))
		return rc;
	if (inet_pton(AF_INET, what, &a) == 1) {
		inet_ntop(AF_INET, &a, p->dst, sizeof(p->dst));
		snprintf(t->to_label, sizeof(t->to_label), "%s", p->dst);
		return 0;
	}
	if (!strncmp(what, "svc/", 4)) {
		if ((rc = split_ns_name("TO", what + 4, ns, sizeof(ns), name, sizeof(name))) ||
		    (rc = get_object(t->ctl, KIND_SERVICE, ns, name, &o)))
			return rc;
		ip = obj_str(o, "spec.clusterIP");
		if (!ip || inet_pton(AF_INET, ip, &a) != 1) {
			fprintf(stderr, "error: service %s/%s has no cluster IP (headless?): trace one of its pods\n", ns,
				name);
			json_decref(o);
			return TRACE_NO_ANSWER;
		}
		snprintf(t->to_label, sizeof(t->to_label), "service %s/%s", ns, name);
		rc = service_port(o, t->to_label + 8, p, colon != NULL, &port);
		snprintf(p->dst, sizeof(p->dst), "%s", ip);
		if (rc == 0 && t->from == FROM_OUTSIDE)
			rc = service_from_outside(t, o, port, p);
		json_decref(o);
		return rc;
	}
	if (!strchr(what, '/')) {	/* a node, by name */
		if (!subnets(t))
			return TRACE_NO_ANSWER;
		if (!(hs = subnet_by(subnets(t), "host", what))) {
			fprintf(stderr, "error: TO \"%s\": no node has this name (weftctl get nodes), and it is not "
					"NAMESPACE/POD, svc/NAMESPACE/NAME or an IPv4 address\n", what);
			return TRACE_NO_ANSWER;
		}
		snprintf(p->dst, sizeof(p->dst), "%s", obj_str(hs, "hostIP"));
		snprintf(t->to_label, sizeof(t->to_label), "node %.253s (%s)", what, p->dst);
		return 0;
	}
	if ((rc = split_ns_name("TO", what, ns, sizeof(ns), name, sizeof(name))) ||
	    (rc = get_object(t->ctl, KIND_POD, ns, name, &o)))
		return rc;
	ip = obj_str(o, "status.podIP");
	if (!ip) {
		fprintf(stderr, "error: pod %s/%s has no address yet\n", ns, name);
		json_decref(o);
		return TRACE_NO_ANSWER;
	}
	snprintf(p->dst, sizeof(p->dst), "%s", ip);
	snprintf(t->to_label, sizeof(t->to_label), "%s/%s", ns, name);
	json_decref(o);
	return 0;
}

/* ---- the requests ---- */

static json_t *spec_of(const char *node, const char *from, const struct packet *p)
{
	json_t *s = json_pack("{s:s, s:s, s:s, s:s}", "nodeName", node, "from", from, "protocol", p->proto,
			      "destination", p->dst);

	if (s && p->src[0])	/* (from a node: its route's, unless given) */
		json_object_set_new(s, "source", json_string(p->src));
	if (s && p->sport)
		json_object_set_new(s, "sourcePort", json_integer(p->sport));
	if (s && p->dport)
		json_object_set_new(s, "destinationPort", json_integer(p->dport));
	return s;
}

static const char *path_of(const char *name, char *buf, size_t len)
{
	return ctl_path(kind_get(KIND_TRACEREQUEST), NULL, name, buf, len);
}

/* Create h (its spec set) and wait for its answer: 0, or the exit code. */
static int ask(struct trace *t, struct hop *h)
{
	struct ctl_reply r = { 0 };
	unsigned char rnd[5];
	char path[512];
	json_t *o;
	struct timespec t0, now;
	unsigned wait_ms = 20;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	snprintf(h->name, sizeof(h->name), "trace-%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4]);
	o = json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", "network.weft.io/v1", "kind", "TraceRequest",
		      "metadata", "name", h->name, "spec", h->spec);
	path_of(NULL, path, sizeof(path));
	if (!o || ctl_call(t->ctl, "POST", path, o, &r) < 0) {
		json_decref(o);
		return TRACE_NO_ANSWER;
	}
	json_decref(o);
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		ctl_reply_free(&r);
		return TRACE_NO_ANSWER;
	}
	ctl_reply_free(&r);
	h->created = true;
	path_of(h->name, path, sizeof(path));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		const json_t *got, *st;

		if (ctl_call(t->ctl, "GET", path, NULL, &r) < 0)
			return TRACE_NO_ANSWER;
		if (!ctl_ok(&r)) {
			ctl_print_server_error(&r);
			ctl_reply_free(&r);
			return TRACE_NO_ANSWER;
		}
		got = ctl_reply_object(&r, "GET", path);
		st = got ? json_object_get(got, "status") : NULL;
		if (st && (json_object_get(st, "action") || json_object_get(st, "error"))) {
			h->status = json_deep_copy(st);
			ctl_reply_free(&r);
			return 0;
		}
		ctl_reply_free(&r);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= t->timeout * 1000) {
			fprintf(stderr, "error: node %s did not answer %s within %ld s (is its agent running?)\n",
				h->node, h->name, t->timeout);
			return TRACE_NO_ANSWER;
		}
		usleep(wait_ms * 1000);	/* the answer comes in milliseconds: a short wait, then longer */
		wait_ms = wait_ms * 2 > 500 ? 500 : wait_ms * 2;
	}
}

/* The node whose HostSubnet has hostIP ip, and (self) the address of node
 * name: 0, or the exit code. */
static int nodes_lookup(struct trace *t, const char *ip, char *node, size_t nodelen, const char *name,
			char *name_ip, size_t iplen)
{
	const json_t *items = subnets(t), *hs;

	node[0] = name_ip[0] = 0;
	if (!items)
		return TRACE_NO_ANSWER;
	if ((hs = subnet_by(items, "hostIP", ip)))
		snprintf(node, nodelen, "%s", obj_str(hs, "host"));
	if ((hs = subnet_by(items, "host", name)))
		snprintf(name_ip, iplen, "%s", obj_str(hs, "hostIP"));
	return 0;
}

/* FROM a node (by name or address) or an address outside the cluster:
 * which, and the node where the trace starts (from outside: --node, or
 * later the node TO is; node[0] 0 until known). */
static int from_elsewhere(struct trace *t, const char *arg, const char *arrival, struct packet *p, char *node,
			  size_t nodelen)
{
	const json_t *items = subnets(t), *hs;
	struct in_addr a;
	bool addr = inet_pton(AF_INET, arg, &a) == 1;

	if (!items)
		return TRACE_NO_ANSWER;
	if ((hs = subnet_by(items, addr ? "hostIP" : "host", arg))) {
		t->from = FROM_NODE;
		snprintf(node, nodelen, "%s", obj_str(hs, "host"));
		snprintf(t->from_label, sizeof(t->from_label), "node %s (%s)", obj_str(hs, "host"),
			 obj_str(hs, "hostIP"));
		return 0;
	}
	if (!addr) {
		fprintf(stderr, "error: FROM \"%s\": no node has this name (weftctl get nodes), and it is not an "
				"IPv4 address\n", arg);
		return TRACE_NO_ANSWER;
	}
	if ((hs = subnet_holding(items, arg))) {
		fprintf(stderr, "error: FROM %s is in node %s's pod subnet %s: trace from its pod (NAMESPACE/POD)\n",
			arg, obj_str(hs, "host"), obj_str(hs, "subnet"));
		return TRACE_NO_ANSWER;
	}
	t->from = FROM_OUTSIDE;
	inet_ntop(AF_INET, &a, p->src, sizeof(p->src));
	node[0] = 0;
	if (arrival) {
		if (!(hs = subnet_by(items, "host", arrival))) {
			fprintf(stderr, "error: --node %s: no such node (weftctl get nodes)\n", arrival);
			return TRACE_NO_ANSWER;
		}
		snprintf(node, nodelen, "%s", arrival);
		snprintf(t->arrival_ip, sizeof(t->arrival_ip), "%s", obj_str(hs, "hostIP"));
	}
	return 0;
}

/* From outside without --node: the node TO is, if it is one. */
static int arrival_node(struct trace *t, const struct packet *p, char *node, size_t nodelen)
{
	const json_t *hs = subnet_by(subnets(t), "hostIP", p->dst);

	if (!node[0] && !hs) {
		fprintf(stderr, "error: from outside, a packet arrives at a node: name it with --node NODE "
				"(%s is no node's address)\n", p->dst);
		return TRACE_NO_ANSWER;
	}
	if (!node[0])
		snprintf(node, nodelen, "%s", obj_str(hs, "host"));
	snprintf(t->from_label + strlen(t->from_label), sizeof(t->from_label) - strlen(t->from_label),
		 "%s (outside, arriving at %s)", p->src, node);
	return 0;
}

static const json_t *step_of(const json_t *status, const char *name)
{
	const json_t *steps = json_object_get(status, "steps"), *s;
	size_t i;

	json_array_foreach(steps, i, s)
		if (!strcmp(obj_str(s, "step") ? obj_str(s, "step") : "", name))
			return s;
	return NULL;
}

/* The tunnelled packet's hop: 0 (t->nhops grown), 1 when there is none to
 * make (no node owns the remote), or the exit code. */
static int next_hop(struct trace *t, const struct packet *p)
{
	const struct hop *h = &t->hops[t->nhops - 1];
	const json_t *tun = step_of(h->status, "Tunnel"), *out = json_object_get(h->status, "packetOut");
	const char *remote = tun ? obj_str(tun, "remote") : NULL;
	struct hop *n = &t->hops[t->nhops];
	struct packet q = *p;
	char self_ip[INET_ADDRSTRLEN + 1];
	int rc;

	if (!remote || !out)
		return 1;
	if ((rc = nodes_lookup(t, remote, n->node, sizeof(n->node), h->node, self_ip, sizeof(self_ip))))
		return rc;
	if (!n->node[0] || !self_ip[0])
		return 1;
	snprintf(q.src, sizeof(q.src), "%s", obj_str(out, "source") ? obj_str(out, "source") : p->src);
	snprintf(q.dst, sizeof(q.dst), "%s", obj_str(out, "destination") ? obj_str(out, "destination") : p->dst);
	if (p->sport && !(q.sport = (long)json_integer_value(json_object_get(out, "sourcePort")))) {
		q.sport = p->sport;	/* (port 0: drawn at random by the SNAT) */
		n->port_drawn = true;
	}
	if (p->dport)
		q.dport = (long)json_integer_value(json_object_get(out, "destinationPort"));
	n->spec = spec_of(n->node, "Tunnel", &q);
	if (!n->spec)
		return TRACE_NO_ANSWER;
	json_object_set_new(n->spec, "tunnel", json_pack("{s:I, s:s}", "vni", json_integer_value(json_object_get(tun,
							 "vni")), "remote", self_ip));
	t->nhops++;
	return ask(t, n);
}

/* ---- the answer ---- */

static bool delivered(const json_t *status)
{
	const char *a = obj_str(status, "action");

	return a && (!strcmp(a, "Local") || !strcmp(a, "Pass") || !strcmp(a, "Host") || !strcmp(a, "Underlay"));
}

/* One side of NetworkPolicy's verdict: the policies that allowed it, or
 * that it was not isolated, or where it is judged instead. */
static void policy_side(const char *dir, const char *by, bool judged_here)
{
	if (by)
		printf("; %s by %s", dir, by);
	else if (judged_here)
		printf("; %s not isolated", dir);
	else
		printf("; %s judged on the %s node", dir, !strcmp(dir, "egress") ? "source's" : "destination's");
}

/* The stack's route, said. */
static void print_route(const json_t *s)
{
	const char *via = obj_str(s, "via") ?: "", *dev = obj_str(s, "device");

	printf("  route       %s", json_is_true(json_object_get(s, "forwarded")) ? "forwarded by the node: " : "");
	if (!strcmp(via, "Local"))
		printf("an address of the node itself");
	else if (!strcmp(via, "ServiceDevice"))
		printf("to the service device %s, source %s", dev ?: "", obj_str(s, "source"));
	else if (!strcmp(via, "Pod"))
		printf("to the pod's veth %s, source %s", dev ?: "", obj_str(s, "source"));
	else if (!strcmp(via, "Tunnel"))
		printf("through the VXLAN device %s, source %s", dev ?: "", obj_str(s, "source"));
	else if (!strcmp(via, "Device"))
		printf("out of device %s, source %s", dev ?: "?", obj_str(s, "source"));
	else
		printf("none");
	printf("\n");
}

/* s, a step of a hop from `from` (Pod, Tunnel, Node, Outside) that ended
 * in action */
static void print_step(const json_t *s, const char *from, const char *action)
{
	const char *what = obj_str(s, "step");
	bool from_pod = !strcmp(from, "Pod");

	if (!strcmp(what, "Route")) {
		print_route(s);
	} else if (!strcmp(what, "Service")) {
		const char *chosen = obj_str(s, "chosen");

		printf("  service     %s -> %s (backend %lld", obj_str(s, "frontend"), obj_str(s, "backend"),
		       (long long)json_integer_value(json_object_get(s, "backendID")));
		if (chosen && !strcmp(chosen, "Random"))
			printf(": a new connection's, drawn at random among %lld",
			       (long long)json_integer_value(json_object_get(s, "candidates")));
		else if (chosen && !strcmp(chosen, "Affinity"))
			printf(": the one the client's session affinity holds");
		else
			printf(": its connection's");
		printf(")\n");
	} else if (!strcmp(what, "ServiceReply")) {
		printf("  service     reply from %s, sent as from %s\n", obj_str(s, "backend"), obj_str(s, "frontend"));
	} else if (!strcmp(what, "Tenant")) {
		printf("  tenant      VNID %lld -> VNID %lld: %s\n",
		       (long long)json_integer_value(json_object_get(s, "sourceVNID")),
		       (long long)json_integer_value(json_object_get(s, "destinationVNID")),
		       json_is_true(json_object_get(s, "allowed")) ? "allowed" : "isolated");
	} else if (!strcmp(what, "NetworkPolicy")) {
		const char *d = obj_str(s, "decision"), *out = obj_str(s, "egressPolicies"),
			   *in = obj_str(s, "ingressPolicies");

		if (d && !strcmp(d, "Connection")) {
			printf("  policy      allowed: a connection it admitted already\n");
		} else if (d && !strcmp(d, "Denied")) {
			printf("  policy      denied: no rule of the policies isolating it allows the flow\n");
		} else {
			/* a node judges egress for its own pods, ingress for
			 * what it delivers to its own */
			printf("  policy      allowed");
			policy_side("egress", out, from_pod);
			policy_side("ingress", in, action && !strcmp(action, "Local"));
			printf("\n");
		}
	} else if (!strcmp(what, "Tunnel")) {
		printf("  tunnel      VNI %lld, %s node %s\n", (long long)json_integer_value(json_object_get(s, "vni")),
		       strcmp(from, "Tunnel") ? "to" : "from", obj_str(s, "remote"));
	}
}

static void print_hop(const struct hop *h, int i)
{
	const json_t *st = h->status, *s;
	const char *action = obj_str(st, "action"), *pod = obj_str(st, "deliveredToPod");
	size_t k;

	printf("%s %s (%s)\n", i ? "then on" : "on", h->node, h->name);
	if (h->port_drawn)
		printf("  note        the source port is the previous node's SNAT's, drawn at random: traced as %lld\n",
		       (long long)json_integer_value(json_object_get(h->spec, "sourcePort")));
	if (obj_str(st, "error")) {
		printf("  error       %s\n", obj_str(st, "error"));
		return;
	}
	json_array_foreach(json_object_get(st, "steps"), k, s)
		print_step(s, obj_str(h->spec, "from"), action);
	if (!strcmp(action, "Local"))
		printf("  delivered   to %s%s%s%s\n", pod ? pod : obj_str(st, "deliveredTo"), pod ? " (" : "",
		       pod ? obj_str(st, "deliveredTo") : "", pod ? ")" : "");
	else if (!strcmp(action, "Drop") && obj_str(st, "dropReason") && !strcmp(obj_str(st, "dropReason"), "no-route"))
		printf("  dropped     no-route (the node's stack has no route to it)\n");
	else if (!strcmp(action, "Drop") && obj_str(st, "dropReason") &&
		 !strcmp(obj_str(st, "dropReason"), "not-forwarded"))
		printf("  dropped     not-forwarded (not an address of the node, and the node forwards nothing: "
		       "net.ipv4.ip_forward is 0)\n");
	else if (!strcmp(action, "Drop"))
		printf("  dropped     %s\n", obj_str(st, "dropReason"));
	else if (!strcmp(action, "Reject"))
		printf("  refused     at once (TCP reset or ICMP unreachable back to the sender)\n");
	else if (!strcmp(action, "Host"))
		printf("  delivered   to the node's own stack\n");
	else if (!strcmp(action, "Pass"))
		printf("  delivered   to the node's own stack (the node, or the outside through it)\n");
	else if (!strcmp(action, "Underlay"))
		printf("  delivered   out of the node's underlay device\n");
	else if (strcmp(action, "Tunnel"))
		printf("  action      %s\n", action);
}

static int report(struct trace *t, const struct packet *p)
{
	const struct hop *last = &t->hops[t->nhops - 1];
	const char *verdict;
	int rc;

	if (obj_str(last->status, "error"))
		verdict = "no answer", rc = TRACE_NO_ANSWER;
	else if (delivered(last->status))
		verdict = "delivered", rc = CTL_EXIT_OK;
	else if (!strcmp(obj_str(last->status, "action"), "Tunnel"))
		verdict = "tunnelled to a node weft does not know", rc = CTL_EXIT_FAIL;
	else
		verdict = "dropped", rc = CTL_EXIT_FAIL;
	if (t->json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:[]}", "from", t->from_label, "to", t->to_label, "verdict",
				      verdict, "hops");

		for (int i = 0; o && i < t->nhops; i++)
			json_array_append_new(json_object_get(o, "hops"),
					      json_pack("{s:s, s:s, s:O, s:O}", "node", t->hops[i].node, "request",
							t->hops[i].name, "spec", t->hops[i].spec, "status",
							t->hops[i].status));
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(o);
		return rc;
	}
	printf("trace %s -> %s: %s", t->from_label, t->to_label, p->proto);
	if (p->dport)
		printf(" %s:%ld -> %s:%ld\n", p->src, p->sport, p->dst, p->dport);
	else
		printf(" echo %s -> %s\n", p->src, p->dst);
	for (int i = 0; i < t->nhops; i++)
		print_hop(&t->hops[i], i);
	printf("%s\n", verdict);
	return rc;
}

static void cleanup(struct trace *t)
{
	for (int i = 0; i < t->nhops; i++) {
		struct hop *h = &t->hops[i];
		struct ctl_reply r = { 0 };
		char path[512];

		if (h->created && !t->keep && ctl_call(t->ctl, "DELETE", path_of(h->name, path, sizeof(path)), NULL,
						       &r) == 0)
			ctl_reply_free(&r);
		json_decref(h->spec);
		json_decref(h->status);
	}
	json_decref(t->subnets);
}

int ctl_trace(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "source-port", required_argument, NULL, 'p' }, { "source", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' }, { "keep", no_argument, NULL, 'k' },
		{ "node", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct trace t = { .ctl = ctl, .timeout = 10 };
	struct packet p = { 0 };
	const char *forged = NULL, *arrival = NULL;
	long sport = 0;
	char node[254];
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'h':
			printf("usage: %s trace %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		case 'p':
			errno = 0;
			sport = strtol(optarg, &end, 10);
			if (*end || errno || sport < 1 || sport > 65535) {
				fprintf(stderr, "error: --source-port %s: want 1 to 65535\n", optarg);
				return TRACE_NO_ANSWER;
			}
			break;
		case 's': forged = optarg; break;
		case 'n': arrival = optarg; break;
		case 't':
			if (ctl_seconds_parse(optarg, &t.timeout) < 0 || t.timeout < 1) {
				fprintf(stderr, "error: --timeout %s: want seconds, at least 1\n", optarg);
				return TRACE_NO_ANSWER;
			}
			break;
		case 'k': t.keep = true; break;
		case 'o':
			if (strcmp(optarg, "json")) {
				fprintf(stderr, "error: -o %s: only json\n", optarg);
				return TRACE_NO_ANSWER;
			}
			t.json = true;
			break;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "trace", usage);
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "error: trace takes FROM and TO\n");
		return ctl_usage(ctl, "trace", usage);
	}
	if (!strncmp(argv[optind], "svc/", 4)) {
		fprintf(stderr, "error: FROM \"%s\": a service only receives: trace from one of its pods, a node or "
				"an address\n", argv[optind]);
		return TRACE_NO_ANSWER;
	}
	rc = strchr(argv[optind], '/') ? from_pod(&t, argv[optind], &p, node, sizeof(node))
				       : from_elsewhere(&t, argv[optind], arrival, &p, node, sizeof(node));
	if (rc == 0 && arrival && t.from != FROM_OUTSIDE) {
		fprintf(stderr, "error: --node %s: only a trace from outside arrives at a node of its choosing\n",
			arrival);
		rc = TRACE_NO_ANSWER;
	}
	if (rc == 0 && forged && t.from != FROM_POD) {
		fprintf(stderr, "error: --source %s: only a pod's packet can be forged (from a node or outside, "
				"FROM is the source)\n", forged);
		rc = TRACE_NO_ANSWER;
	}
	if (rc || (rc = to_end(&t, argv[optind + 1], &p)) ||
	    (t.from == FROM_OUTSIDE && (rc = arrival_node(&t, &p, node, sizeof(node))))) {
		json_decref(t.subnets);
		return rc;
	}
	if (strcmp(p.proto, "ICMP")) {
		unsigned short r = 0;

		/* a new connection's port, as Linux draws them, unless given */
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (unsigned short)getpid();
		p.sport = sport ? sport : 32768 + r % 28232;
	}
	t.hops[0].spec = spec_of(node, from_names[t.from], &p);
	snprintf(t.hops[0].node, sizeof(t.hops[0].node), "%s", node);
	if (!t.hops[0].spec) {
		json_decref(t.subnets);
		return TRACE_NO_ANSWER;
	}
	if (forged) {	/* the packet leaves FROM's veth with another source */
		struct in_addr a;

		if (inet_pton(AF_INET, forged, &a) != 1) {
			fprintf(stderr, "error: --source %s: not an IPv4 address\n", forged);
			json_decref(t.hops[0].spec);
			json_decref(t.subnets);
			return TRACE_NO_ANSWER;
		}
		json_object_set_new(t.hops[0].spec, "pod", json_string(p.src));
		json_object_set_new(t.hops[0].spec, "source", json_string(forged));
		snprintf(p.src, sizeof(p.src), "%s", forged);
	}
	t.nhops = 1;
	rc = ask(&t, &t.hops[0]);
	if (rc == 0 && !p.src[0])	/* from a node: the source its route chose */
		snprintf(p.src, sizeof(p.src), "%s", obj_str(t.hops[0].status, "source") ?: "?");
	while (rc == 0 && t.nhops < TRACE_HOPS_MAX && !obj_str(t.hops[t.nhops - 1].status, "error") &&
	       !strcmp(obj_str(t.hops[t.nhops - 1].status, "action"), "Tunnel"))
		if ((rc = next_hop(&t, &p)) == 1) {
			rc = 0;
			break;
		}
	if (rc == 0)
		rc = report(&t, &p);
	cleanup(&t);
	return rc;
}
