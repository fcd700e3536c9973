/*
 * canreach.c — `weftctl can-reach SRC DST PORT[/PROTO]`: may SRC open a
 * connection to DST on PORT, as the cluster's NetworkPolicies stand now?
 *
 * SRC and DST are NS/POD or an IPv4 address (an address that is a pod's
 * status.podIP is that pod).  The controller's Pods, Namespaces and
 * NetworkPolicies are listed and model/netpol.h decides, as the agents'
 * data plane does; one line says why, naming the policies that decide:
 *
 *   allowed: x/a egress not isolated; y/b ingress allowed by y/allow-x
 *   denied: y/b ingress isolated by y/deny-all, y/web; no rule allows x/a on 80/TCP
 *
 * The node's own traffic to its pods (always allowed by the data plane)
 * is not modelled: an address that is not a pod is judged by ipBlocks.
 *
 * Exit: 0 allowed, 1 denied (as `kubectl auth can-i`), 2 no answer (a bad
 * argument, an unknown pod, or the controller could not be asked), so a
 * script never reads a failure as a denial.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl/ctl.h"
#include "ctl/netview.h"
#include "lib/cidr.h"

enum { CANREACH_NO_ANSWER = CTL_EXIT_USAGE };

static const char usage[] = "SRC DST PORT[/PROTO]   (SRC, DST: NAMESPACE/POD or an IPv4 address; "
			    "PROTO: TCP (default), UDP, SCTP)";

/* One end as typed: a pod's name, or an address. */
struct end {
	const char *arg;
	char ns[254], name[254];	/* ns[0] == 0: an address */
	in_addr_t ip;			/* network order */
	const struct netpol_pod *pod;	/* resolved in the view */
	char label[520];		/* how the verdict names it */
};

static int end_parse(const char *what, const char *arg, struct end *e)
{
	const char *slash = strchr(arg, '/');
	uint32_t addr;

	e->arg = arg;
	if (!slash) {
		if (ip4_parse(arg, &addr)) {
			fprintf(stderr, "error: %s \"%s\" is neither NAMESPACE/POD nor an IPv4 address\n", what, arg);
			return CANREACH_NO_ANSWER;
		}
		e->ip = htonl(addr);
		return 0;
	}
	if ((size_t)(slash - arg) >= sizeof(e->ns) || strlen(slash + 1) >= sizeof(e->name)) {
		fprintf(stderr, "error: %s \"%.80s...\": a name is too long\n", what, arg);
		return CANREACH_NO_ANSWER;
	}
	snprintf(e->ns, sizeof(e->ns), "%.*s", (int)(slash - arg), arg);
	snprintf(e->name, sizeof(e->name), "%s", slash + 1);
	if (!ctl_name_ok("namespace", e->ns) || !ctl_name_ok("pod name", e->name))
		return CANREACH_NO_ANSWER;
	return 0;
}

/* PORT[/PROTO]: 0, or the exit code after printing why. */
static int port_parse(const char *arg, uint16_t *port, uint8_t *proto)
{
	const char *slash = strchr(arg, '/');
	char name[8];
	char *end;
	long n;

	errno = 0;
	n = isdigit((unsigned char)arg[0]) ? strtol(arg, &end, 10) : -1;
	if (n < 1 || n > 65535 || errno || (*end && end != slash)) {
		fprintf(stderr, "error: port \"%s\": want a number from 1 to 65535, then optionally /TCP, /UDP or /SCTP\n",
			arg);
		return CANREACH_NO_ANSWER;
	}
	*port = (uint16_t)n;
	*proto = IPPROTO_TCP;
	if (!slash)
		return 0;
	for (size_t i = 0; i < sizeof(name); i++) {
		name[i] = (char)toupper((unsigned char)slash[1 + i]);
		if (!name[i])
			break;
	}
	name[sizeof(name) - 1] = 0;
	if (strlen(slash + 1) >= sizeof(name) || netpol_proto_parse(name, proto)) {
		fprintf(stderr, "error: protocol \"%s\": want TCP, UDP or SCTP\n", slash + 1);
		return CANREACH_NO_ANSWER;
	}
	return 0;
}

/* Find e's pod in the view (or the pod at its address). */
static int end_resolve(const struct netview *v, struct end *e)
{
	char ip[IP4_STRLEN];

	if (e->ns[0]) {
		e->pod = netview_pod(v, e->ns, e->name);
		if (!e->pod) {
			fprintf(stderr, "error: pod %s/%s not found\n", e->ns, e->name);
			return CANREACH_NO_ANSWER;
		}
		snprintf(e->label, sizeof(e->label), "%s/%s", e->ns, e->name);
		return 0;
	}
	e->pod = netview_pod_at(v, e->ip);
	ip4_format(ntohl(e->ip), ip);
	if (e->pod)
		snprintf(e->label, sizeof(e->label), "%s/%s", e->pod->ns, e->pod->name);
	else
		snprintf(e->label, sizeof(e->label), "%s", ip);
	return 0;
}

/* "x/p1, x/p2" (and how many more) */
static void names(const struct netpol *const *pols, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && i < NETPOL_VERDICT_MAX && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s/%s", i ? ", " : "", pols[i]->ns, pols[i]->name);
	if (n > NETPOL_VERDICT_MAX && o < len)
		snprintf(buf + o, len - o, " and %zu more", n - NETPOL_VERDICT_MAX);
}

/* One side of the verdict, in words: who, its direction, why. */
static void side_words(const struct netpol_side *s, enum netpol_dir d, const struct end *who, const struct end *other,
		       uint16_t port, uint8_t proto, char *buf, size_t len)
{
	char list[1024];

	if (!s->pod) {
		snprintf(buf, len, "%s is not a pod (no policy isolates it)", who->label);
	} else if (!s->isolated) {
		snprintf(buf, len, "%s %s not isolated", who->label, netpol_dir_name(d));
	} else if (s->allowed) {
		names(s->allowed_by, s->nallowed_by, list, sizeof(list));
		snprintf(buf, len, "%s %s allowed by %s", who->label, netpol_dir_name(d), list);
	} else {
		names(s->isolated_by, s->nisolated_by, list, sizeof(list));
		snprintf(buf, len, "%s %s isolated by %s; no rule allows %s on %u/%s", who->label,
			 netpol_dir_name(d), list, other->label, port, netpol_proto_name(proto));
	}
}

static void print_verdict(const struct netpol_verdict *v, const struct end *src, const struct end *dst,
			  uint16_t port, uint8_t proto)
{
	char out[2][2200];
	const struct netpol_side *e = &v->side[NETPOL_EGRESS], *i = &v->side[NETPOL_INGRESS];

	if (v->self) {
		printf("allowed: %s to itself (a pod may always reach itself)\n", src->label);
		return;
	}
	side_words(e, NETPOL_EGRESS, src, dst, port, proto, out[0], sizeof(out[0]));
	side_words(i, NETPOL_INGRESS, dst, src, port, proto, out[1], sizeof(out[1]));
	if (v->allowed)
		printf("allowed: %s; %s\n", out[0], out[1]);
	else if (!e->allowed && !i->allowed)
		printf("denied: %s; %s\n", out[0], out[1]);
	else
		printf("denied: %s\n", out[e->allowed]);
}

int ctl_can_reach(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	struct end src = { 0 }, dst = { 0 };
	struct netview view = { 0 };
	struct netpol_verdict v;
	uint16_t port;
	uint8_t proto;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: %s can-reach %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		}
		ctl_bad_flag(c, argv);
		return ctl_usage(ctl, "can-reach", usage);
	}
	if (argc - optind != 3) {
		fprintf(stderr, "error: can-reach takes SRC, DST and PORT\n");
		return ctl_usage(ctl, "can-reach", usage);
	}
	if ((rc = end_parse("SRC", argv[optind], &src)) || (rc = end_parse("DST", argv[optind + 1], &dst)) ||
	    (rc = port_parse(argv[optind + 2], &port, &proto)))
		return rc;
	rc = netview_load(ctl, &view, true) ? CANREACH_NO_ANSWER : 0;
	if (rc == 0 && !(rc = end_resolve(&view, &src)) && !(rc = end_resolve(&view, &dst))) {
		if (netpol_decide(view.pol_ptrs, view.npols, src.pod, src.ip, dst.pod, dst.ip, proto, port, &v)) {
			fprintf(stderr, "error: protocol %u is not TCP, UDP or SCTP\n", proto);
			rc = CANREACH_NO_ANSWER;
		} else {
			print_verdict(&v, &src, &dst, port, proto);
			rc = v.allowed ? CTL_EXIT_OK : CTL_EXIT_FAIL;
		}
	}
	netview_free(&view);
	return rc;
}
