/*
 * weft-agent — one per node: registers the node, builds its devices,
 * loads the eBPF data plane, follows the cluster and serves CNI requests.
 * The start-up order and the threads are described in agent.h.
 *
 * Stopping (SIGTERM/SIGINT) leaves devices, tc programs and pinned maps in
 * place: pods keep talking while the agent is away, and the next agent
 * picks the state up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "agent/flowserve.h"
#include "agent/netlink.h"

/* libbpf's own messages: warnings into our log, minus the one tc prints
 * every time it finds the clsact hook it is asked to create (restarts). */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(line, "Exclusivity flag on"))
		return 0;
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	agent_log(level == LIBBPF_WARN ? "warn" : "info", "libbpf: %s", line);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: weft-agent --controller URL --token-file FILE [--ca-file FILE] --node NAME --node-ip IP\n"
		"                  [--state-dir DIR] [--bpf-pin-dir DIR] [--cni-socket PATH] [--mtu N]\n"
		"                  [--max-services N] [--max-backends N] [--max-conntrack N]\n"
		"                  [--conntrack-per-client N] [--max-policy-rules N]\n"
		"                  [--max-policy-conntrack N] [--policy-conntrack-per-client N]\n"
		"                  [--watch-timeout SECONDS] [--list-page-size N]\n"
		"                  [--metrics-address ADDR:PORT|off] [--flows-address ADDR:PORT|off]\n"
		"\n"
		"  --controller URL    weft-controller, e.g. https://192.168.200.2:8080; several replicas\n"
		"                      comma-separated (URL,URL...): each request goes to one that answers\n"
		"  --token-file FILE   bearer token for the controller\n"
		"  --ca-file FILE      trust the controller's certificate if this CA (PEM) signed it\n"
		"                      (the controller's <data-dir>/pki/ca.crt; default: the system's CAs)\n"
		"  --node NAME         this node's name\n"
		"  --node-ip IP        this node's underlay (InternalIP) address\n"
		"  --state-dir DIR     leases and registration (default /var/lib/weft/NODE)\n"
		"  --bpf-pin-dir DIR   pinned maps, on bpffs (default /sys/fs/bpf/weft/NODE)\n"
		"  --cni-socket PATH   CNI socket (default /run/weft/NODE/cni.sock)\n"
		"  --mtu N             pod MTU (default: underlay MTU - 50)\n"
		"  --max-services N    weft_services entries: one per frontend plus one per\n"
		"                      backend slot (default %u)\n"
		"  --max-backends N    weft_backends entries (default %u)\n"
		"  --max-conntrack N   weft_ct entries, two per translated connection (default %u)\n"
		"                      A capacity other than the pinned maps' rebuilds them.\n"
		"  --conntrack-per-client N  translated connections one client (a pod, an outside\n"
		"                      address, the node) may hold at once; more are dropped\n"
		"                      as ct-source-limit (default: max-conntrack / 2 / %u)\n"
		"  --max-policy-rules N  weft_policy entries: the NetworkPolicy rules of the pods\n"
		"                      here, and as many ipBlock prefixes (default %u); a rule\n"
		"                      set that does not fit is reported, and its pods'\n"
		"                      denials count as policy-map-full\n"
		"  --max-policy-conntrack N  weft_policy_ct entries, one per connection of a pod\n"
		"                      here (default %u)\n"
		"  --policy-conntrack-per-client N  of those, what one client may hold; more are\n"
		"                      dropped as policy-ct-source-limit when a policy isolates\n"
		"                      either end (default: max-policy-conntrack / %u)\n"
		"  --watch-timeout SECONDS  how long each watch asks the controller to stream\n"
		"                      before the agent renews it from the last revision it\n"
		"                      applied (default 300; each request W to 2W, at random)\n"
		"  --list-page-size N  objects a list asks the controller for at once (default %u):\n"
		"                      a list of more comes in pages, read at one revision\n"
		"  --metrics-address ADDR:PORT  where to serve Prometheus metrics, GET /metrics over\n"
		"                      plain HTTP (default: the node's address, port %d; an empty\n"
		"                      ADDR is every address; off: not served)\n"
		"  --flows-address ADDR:PORT  where to serve the node's flows to the cluster's relay,\n"
		"                      over TLS (default: the node's address, port %d; off: not\n"
		"                      served; also not without --ca-file)\n",
		WEFT_MAX_SERVICES, WEFT_MAX_BACKENDS, WEFT_MAX_CT, WEFT_CT_SOURCE_SHARE,
		WEFT_MAX_POLICY, WEFT_MAX_POLICY_CT, WEFT_POLICY_CT_SOURCE_SHARE, AGENT_LIST_PAGE,
		AGENT_METRICS_PORT, FLOWSERVE_PORT);
}

/* The number a numeric flag (opts' entry c) was given, in lo..hi; else
 * -1, said on stderr with the flag's name. */
static int number_flag(const struct option *opts, int c, const char *arg, unsigned long lo,
		       unsigned long hi, unsigned long *v)
{
	const char *name = "?";
	char *end;

	for (; opts->name; opts++)
		if (opts->val == c)
			name = opts->name;
	errno = 0;
	*v = strtoul(arg, &end, 10);
	if (*end || !*arg || arg[0] == '-' || errno || *v < lo || *v > hi) {
		fprintf(stderr, "weft-agent: --%s %s: not a number in %lu..%lu\n", name, arg, lo, hi);
		return -1;
	}
	return 0;
}

static int parse_flags(int argc, char **argv, struct agent_opts *o)
{
	static const struct option opts[] = {
		{ "controller", required_argument, NULL, 'c' },
		{ "token-file", required_argument, NULL, 't' },
		{ "ca-file", required_argument, NULL, 'a' },
		{ "node", required_argument, NULL, 'n' },
		{ "node-ip", required_argument, NULL, 'i' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "bpf-pin-dir", required_argument, NULL, 'b' },
		{ "cni-socket", required_argument, NULL, 'k' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "max-services", required_argument, NULL, 'S' },
		{ "max-backends", required_argument, NULL, 'B' },
		{ "max-conntrack", required_argument, NULL, 'C' },
		{ "conntrack-per-client", required_argument, NULL, 'P' },
		{ "max-policy-rules", required_argument, NULL, 'R' },
		{ "max-policy-conntrack", required_argument, NULL, 'T' },
		{ "policy-conntrack-per-client", required_argument, NULL, 'Q' },
		{ "watch-timeout", required_argument, NULL, 'W' },
		{ "list-page-size", required_argument, NULL, 'L' },
		{ "metrics-address", required_argument, NULL, 'M' },
		{ "flows-address", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static char state[4096], pin[4096], sock[4096], metrics[64], flows[64];
	const char *metrics_flag = NULL, *flows_flag = NULL;
	struct sockaddr_in sa;
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o->controller = optarg; break;
		case 't': o->token_file = optarg; break;
		case 'a': o->ca_file = optarg; break;
		case 'n': o->node = optarg; break;
		case 'i': o->node_ip_str = optarg; break;
		case 's': o->state_dir = optarg; break;
		case 'b': o->pin_dir = optarg; break;
		case 'k': o->cni_socket = optarg; break;
		case 'm':
			if (number_flag(opts, c, optarg, 576, 65485, &v) < 0)
				return -1;
			o->mtu = (int)v;
			break;
		case 'S':
		case 'B':
		case 'C':
		case 'R':
		case 'T':
			if (number_flag(opts, c, optarg, 16, 16777216, &v) < 0)
				return -1;
			*(c == 'S' ? &o->max_services : c == 'B' ? &o->max_backends : c == 'C' ? &o->max_ct
			  : c == 'R' ? &o->max_policy : &o->max_policy_ct) = (uint32_t)v;
			break;
		case 'P':
			if (number_flag(opts, c, optarg, 1, 8388608, &v) < 0)
				return -1;
			o->ct_per_source = (uint32_t)v;
			break;
		case 'Q':
			if (number_flag(opts, c, optarg, 1, 16777216, &v) < 0)
				return -1;
			o->policy_ct_per_source = (uint32_t)v;
			break;
		case 'W':
			if (number_flag(opts, c, optarg, 1, 3600, &v) < 0)
				return -1;
			o->watch_timeout = (unsigned)v;
			break;
		case 'L':
			if (number_flag(opts, c, optarg, 1, AGENT_LIST_PAGE_MAX, &v) < 0)
				return -1;
			o->list_page = (unsigned)v;
			break;
		case 'M': metrics_flag = optarg; break;
		case 'F': flows_flag = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "weft-agent: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->controller || !o->node || !o->node_ip_str) {
		fprintf(stderr, "weft-agent: --controller, --node and --node-ip are required\n");
		usage(stderr);
		return -1;
	}
	if (metrics_flag && strcmp(metrics_flag, "off") == 0) {
		o->metrics_address = NULL;
	} else if (metrics_flag) {
		if (metrics_address_parse(metrics_flag, &sa) < 0) {
			fprintf(stderr, "weft-agent: --metrics-address %s: not ADDRESS:PORT (an IPv4 address, or "
				"none for every address, and a port 1-65535), nor off\n", metrics_flag);
			return -1;
		}
		o->metrics_address = metrics_flag;
	} else {
		snprintf(metrics, sizeof(metrics), "%s:%d", o->node_ip_str, AGENT_METRICS_PORT);
		o->metrics_address = metrics;
	}
	if (flows_flag && strcmp(flows_flag, "off") == 0) {
		o->flows_address = NULL;
	} else if (flows_flag) {
		if (metrics_address_parse(flows_flag, &sa) < 0) {
			fprintf(stderr, "weft-agent: --flows-address %s: not ADDRESS:PORT (an IPv4 address, or "
				"none for every address, and a port 1-65535), nor off\n", flows_flag);
			return -1;
		}
		o->flows_address = flows_flag;
	} else {
		snprintf(flows, sizeof(flows), "%s:%d", o->node_ip_str, FLOWSERVE_PORT);
		o->flows_address = flows;
	}
	if (!o->state_dir) {
		snprintf(state, sizeof(state), "/var/lib/weft/%s", o->node);
		o->state_dir = state;
	}
	if (!o->pin_dir) {
		snprintf(pin, sizeof(pin), "/sys/fs/bpf/weft/%s", o->node);
		o->pin_dir = pin;
	}
	if (!o->cni_socket) {
		snprintf(sock, sizeof(sock), "/run/weft/%s/cni.sock", o->node);
		o->cni_socket = sock;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct agent a;
	struct in_addr ia;
	sigset_t set;
	int rc = 1, sig;

	if (parse_flags(argc, argv, &a.o) < 0)
		return 2;
	if (inet_pton(AF_INET, a.o.node_ip_str, &ia) != 1) {
		fprintf(stderr, "weft-agent: --node-ip %s: not an IPv4 address\n", a.o.node_ip_str);
		return 2;
	}
	a.node_ip = ia.s_addr;
	a.kernel = &agent_kernel_real;
	libbpf_set_print(libbpf_log);
	agent_init(&a);
	/* signals go to the main thread's sigwait only */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (agent_start(&a) < 0)
		goto out;
	/* with the controller away, the local part is all there is: ready
	 * after a grace period so pods can start */
	{
		struct timespec ts = { .tv_sec = 3 };

		for (;;) {
			siginfo_t si;

			sig = sigtimedwait(&set, &si, &ts);
			if (sig > 0)
				goto stop;
			if (!atomic_load(&a.ready)) {
				LOG_WARN("controller not reachable yet: ready with local state only");
				(void)sync_mark_ready(&a);
			}
			break;
		}
	}
	while (sigwait(&set, &sig) != 0)
		;
stop:
	LOG_INFO("signal %d: stopping (devices, programs and maps stay)", sig);
	rc = 0;
out:
	agent_stop(&a);
	return rc ? 1 : 0;
}
