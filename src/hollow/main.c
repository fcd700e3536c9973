/*
 * weft-hollow — many hollow nodes in one process, as kubemark runs hollow
 * kubelets: each a weft-agent's own code (registration, list+watch, IPAM,
 * the computation of every map entry, the reports on its Node) on maps in
 * memory, against a real controller.  It times a cluster of them:
 *
 *   prepare   namespaces, Services and their Endpoints, one credential a node
 *   start     every agent started (registered, lists read): "ready"
 *   pods      every node adds its pods (lease, maps, Pod record)
 *   converged every node's maps hold every node, service and endpoint, and
 *             the pods it needs (its own, their records back; every pod
 *             with --pod-peers)
 *   check     (--check) every node's maps compared entry by entry with
 *             what the controller lists
 *   probes    --pod-adds K: one pod at a time, until every node that needs
 *             it has it (its own; every node with --pod-peers);
 *             --endpoint-changes K: one Endpoints PUT at a time, until
 *             every node applied it
 *
 * With --processes K the agents run in K forked workers (crew.h: one
 * process holds only so many agents' descriptors).  It prints one JSON
 * object (to --output or stdout): the times, the
 * probes' percentiles, and with --controller-pid the controller's CPU
 * and RSS at each step.  Exit 0 when everything converged (and checked
 * equal), 1 otherwise, 2 for bad flags.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hollow/check.h"
#include "hollow/crew.h"
#include "hollow/fleet.h"
#include "hollow/probe.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: weft-hollow --controller URL --token-file ADMIN_TOKEN [--ca-file FILE] --nodes N\n"
		"                   [--pods-per-node P] [--services S] [--endpoints-per-service E]\n"
		"                   [--namespaces K] [--state-dir DIR] [--prefix NAME] [--first-node-ip IP]\n"
		"                   [--starters T] [--pod-adds A] [--endpoint-changes C] [--pod-peers]\n"
		"                   [--processes K] [--list-page-size N] [--check]\n"
		"                   [--controller-pid PID] [--timeout SECONDS] [--output FILE] [--verbose]\n"
		"\n"
		"  --controller URL        weft-controller (as weft-agent's --controller)\n"
		"  --token-file FILE       the admin token: it writes the objects and issues each\n"
		"                          node its own credential, which that node's agent uses\n"
		"  --nodes N               hollow nodes (1..20000), named PREFIX0001...\n"
		"  --pods-per-node P       pods each node adds once ready (default 30)\n"
		"  --services S            ClusterIP Services with hand-written Endpoints (default 0)\n"
		"  --endpoints-per-service E  addresses in each (default 3)\n"
		"  --namespaces K          pods and services spread over hollow-0..K-1 (default 10)\n"
		"  --state-dir DIR         the nodes' state: DIR/NODE (default /tmp/weft-hollow)\n"
		"  --prefix NAME           node name prefix (default hollow-)\n"
		"  --first-node-ip IP      node i's InternalIP is IP + i (default 100.64.0.1)\n"
		"  --starters T            threads starting agents and adding pods (default 16)\n"
		"  --pod-adds A            pods added one at a time and timed (default 0)\n"
		"  --endpoint-changes C    Endpoints changed one at a time (one address replaced) and timed (default 0)\n"
		"  --pod-peers             a NetworkPolicy in hollow-0 naming pods as peers: every\n"
		"                          node then needs every pod (else only its own)\n"
		"  --processes K           run the agents in K worker processes (default 1): one\n"
		"                          process holds about 800 under a 20,000-descriptor limit\n"
		"  --list-page-size N      objects an agent's list asks for at once (as weft-agent's;\n"
		"                          default %u)\n"
		"  --check                 compare every node's maps with the cluster\n"
		"  --tamper                before the check, remove the ipcache entry of one of\n"
		"                          the first node's pods (the checker's own test: it must fail)\n"
		"  --controller-pid PID    report the controller's CPU and RSS at each step\n"
		"  --timeout SECONDS       for each wait (default 300)\n"
		"  --output FILE           the JSON report (default stdout)\n"
		"  --verbose               the agents' info lines too (default: warnings only)\n",
		AGENT_LIST_PAGE);
}

struct run_opts {
	struct fleet_opts f;
	unsigned pod_adds, endpoint_changes, timeout, processes;
	bool check, verbose, tamper;
	pid_t controller_pid;
	const char *output;
};

static int number(const char *flag, const char *arg, unsigned long lo, unsigned long hi,
		  unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (*end || !*arg || arg[0] == '-' || errno || v < lo || v > hi) {
		fprintf(stderr, "weft-hollow: --%s %s: not a number in %lu..%lu\n", flag, arg, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_flags(int argc, char **argv, struct run_opts *r)
{
	static const struct option opts[] = {
		{ "controller", required_argument, NULL, 'c' },
		{ "token-file", required_argument, NULL, 't' },
		{ "ca-file", required_argument, NULL, 'a' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "pods-per-node", required_argument, NULL, 'p' },
		{ "services", required_argument, NULL, 's' },
		{ "endpoints-per-service", required_argument, NULL, 'e' },
		{ "namespaces", required_argument, NULL, 'k' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "prefix", required_argument, NULL, 'x' },
		{ "first-node-ip", required_argument, NULL, 'i' },
		{ "starters", required_argument, NULL, 'T' },
		{ "pod-adds", required_argument, NULL, 'A' },
		{ "endpoint-changes", required_argument, NULL, 'C' },
		{ "check", no_argument, NULL, 'K' },
		{ "pod-peers", no_argument, NULL, 'N' },
		{ "processes", required_argument, NULL, 'j' },
		{ "list-page-size", required_argument, NULL, 'L' },
		{ "tamper", no_argument, NULL, 'Z' },
		{ "controller-pid", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct in_addr ia;
	unsigned pid;
	int c, rc = 0;

	r->f.pods_per_node = 30;
	r->f.endpoints_per_service = 3;
	r->f.namespaces = 10;
	r->f.state_dir = "/tmp/weft-hollow";
	r->f.prefix = "hollow-";
	r->f.starters = 16;
	r->f.first_node_ip = htonl(0x64400001);	/* 100.64.0.1 */
	r->timeout = 300;
	r->processes = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': r->f.controller = optarg; break;
		case 't': r->f.admin_token_file = optarg; break;
		case 'a': r->f.ca_file = optarg; break;
		case 'n': rc = number("nodes", optarg, 1, 20000, &r->f.nodes); break;
		case 'p': rc = number("pods-per-node", optarg, 0, 500, &r->f.pods_per_node); break;
		case 's': rc = number("services", optarg, 0, 100000, &r->f.services); break;
		case 'e': rc = number("endpoints-per-service", optarg, 0, 1000, &r->f.endpoints_per_service); break;
		case 'k': rc = number("namespaces", optarg, 1, 10000, &r->f.namespaces); break;
		case 'd': r->f.state_dir = optarg; break;
		case 'x': r->f.prefix = optarg; break;
		case 'i':
			if (inet_pton(AF_INET, optarg, &ia) != 1) {
				fprintf(stderr, "weft-hollow: --first-node-ip %s: not an IPv4 address\n", optarg);
				return -1;
			}
			r->f.first_node_ip = ia.s_addr;
			break;
		case 'T': rc = number("starters", optarg, 1, 256, &r->f.starters); break;
		case 'A': rc = number("pod-adds", optarg, 0, 100000, &r->pod_adds); break;
		case 'C': rc = number("endpoint-changes", optarg, 0, 100000, &r->endpoint_changes); break;
		case 'K': r->check = true; break;
		case 'N': r->f.pod_peers = true; break;
		case 'j': rc = number("processes", optarg, 1, 64, &r->processes); break;
		case 'L': rc = number("list-page-size", optarg, 1, AGENT_LIST_PAGE_MAX, &r->f.list_page); break;
		case 'Z': r->tamper = true; break;
		case 'P':
			rc = number("controller-pid", optarg, 1, 4194304, &pid);
			r->controller_pid = (pid_t)pid;
			break;
		case 'w': rc = number("timeout", optarg, 1, 86400, &r->timeout); break;
		case 'o': r->output = optarg; break;
		case 'v': r->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "weft-hollow: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!r->f.controller || !r->f.admin_token_file || !r->f.nodes) {
		fprintf(stderr, "weft-hollow: --controller, --token-file and --nodes are required\n");
		usage(stderr);
		return -1;
	}
	if (strlen(r->f.prefix) > 40) {
		fprintf(stderr, "weft-hollow: --prefix %s: longer than 40 bytes\n", r->f.prefix);
		return -1;
	}
	return 0;
}

/* Thousands of agent threads: small stacks (the agent's deepest is a
 * JSON decode), and descriptors for every node's connections. */
static void process_limits(void)
{
	pthread_attr_t attr;
	struct rlimit rl;
#if defined(__SANITIZE_ADDRESS__)
	size_t stack = 2u << 20;
#else
	size_t stack = 256u << 10;
#endif

	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setstacksize(&attr, stack);
		(void)pthread_setattr_default_np(&attr);
		pthread_attr_destroy(&attr);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static json_t *controller_sample(const struct run_opts *r)
{
	struct proc_sample s;

	if (!r->controller_pid || probe_proc(r->controller_pid, &s) < 0)
		return json_null();
	return json_pack("{s:f, s:I}", "cpu_s", s.cpu_s, "rss_bytes", (json_int_t)s.rss_bytes);
}

static json_t *percentiles(double *v, unsigned done)
{
	unsigned n = 0, failed = 0;

	for (unsigned i = 0; i < done; i++) {
		if (v[i] < 0)
			failed++;
		else
			v[n++] = v[i];
	}
	return json_pack("{s:i, s:i, s:f, s:f, s:f}", "timed", n, "timed_out", failed, "p50_ms",
			 probe_percentile(v, n, 50), "p99_ms", probe_percentile(v, n, 99), "max_ms",
			 probe_percentile(v, n, 100));
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

/* Probe results: each percentile line, with the bytes the crew received
 * per probe. */
static void put_probe(json_t *out, const char *key, const char *per, double *ms, unsigned done,
		      uint64_t bytes)
{
	json_t *p = percentiles(ms, done);

	json_object_set_new(p, per, json_real(done ? (double)bytes / done : 0));
	json_object_set_new(out, key, p);
}

int main(int argc, char **argv)
{
	struct run_opts r = { 0 };
	struct fleet *f = NULL;
	struct crew *c = NULL;
	struct crew_cold cold;
	uint64_t got0, got1;
	json_t *out = json_object(), *steps = json_object();
	char err[1024] = "";
	int64_t t_start, t;
	double *ms = NULL;
	unsigned done;
	int rc = 1;

	if (parse_flags(argc, argv, &r) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	process_limits();
	agent_log_setup("weft-hollow", !r.verbose);
	json_object_set_new(out, "nodes", json_integer(r.f.nodes));
	json_object_set_new(out, "processes", json_integer(r.processes));
	json_object_set_new(out, "pod_peers", json_boolean(r.f.pod_peers));
	json_object_set_new(out, "pods_per_node", json_integer(r.f.pods_per_node));
	json_object_set_new(out, "services", json_integer(r.f.services));
	json_object_set_new(out, "steps", steps);
	f = fleet_create(&r.f, err, sizeof(err));
	if (!f)
		goto out;
	json_object_set_new(out, "controller_before", controller_sample(&r));

	t = fleet_now(f);
	if (fleet_prepare(f, err, sizeof(err)) < 0)
		goto out;
	json_object_set_new(steps, "prepare_s", json_real(secs(fleet_now(f) - t)));

	c = crew_start(f, r.processes, err, sizeof(err));
	if (!c)
		goto out;
	t_start = fleet_now(f);
	if (crew_cold(c, r.timeout, &cold, err, sizeof(err)) < 0)
		goto out;
	json_object_set_new(steps, "ready_s", json_real(secs(cold.ready_ns - t_start)));
	json_object_set_new(steps, "pods_added_s", json_real(secs(cold.pods_ns - t_start)));
	json_object_set_new(steps, "converged_s", json_real(secs(cold.converged_ns - t_start)));
	json_object_set_new(out, "bytes_received_cold_start", json_integer((json_int_t)cold.bytes));
	json_object_set_new(out, "controller_converged", controller_sample(&r));
	json_object_set_new(out, "hollow_rss_bytes", json_integer((json_int_t)cold.rss_bytes));
	/* the agents' own work in the cold start: on this one machine it
	 * shares the CPUs with the controller (the floor of a cold start
	 * here is (this + the controller's) / CPUs) */
	json_object_set_new(out, "hollow_cpu_cold_s", json_real(cold.cpu_s));

	if (r.check || r.tamper) {
		struct check_result cr;

		if (crew_check(c, r.tamper, &cr, err, sizeof(err)) < 0)
			goto out;
		json_object_set_new(out, "check", json_pack("{s:i, s:i, s:I, s:s}", "nodes_checked",
							    cr.nodes_checked, "nodes_wrong", cr.nodes_wrong,
							    "entries_checked", (json_int_t)cr.entries_checked,
							    "first_difference", cr.first));
		if (cr.nodes_wrong) {
			snprintf(err, sizeof(err), "%u of %u nodes' maps differ from the cluster; %s",
				 cr.nodes_wrong, cr.nodes_checked, cr.first);
			goto out;
		}
	}

	ms = calloc((r.pod_adds > r.endpoint_changes ? r.pod_adds : r.endpoint_changes) + 1, sizeof(*ms));
	if (!ms) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	if (r.pod_adds) {
		if (crew_bytes(c, &got0, err, sizeof(err)) < 0)
			goto out;
		for (done = 0; done < r.pod_adds; done++) {
			if (crew_pod_add(c, done, r.timeout, &ms[done], err, sizeof(err)) < 0)
				goto out;
			if (ms[done] < 0) {
				done++;
				break;	/* not within the timeout: the probe ends */
			}
		}
		if (crew_bytes(c, &got1, err, sizeof(err)) < 0)
			goto out;
		put_probe(out, "pod_add", "bytes_received_per_add", ms, done, got1 - got0);
		json_object_set_new(out, "controller_after_pod_adds", controller_sample(&r));
	}
	if (r.endpoint_changes) {
		if (crew_bytes(c, &got0, err, sizeof(err)) < 0)
			goto out;
		for (done = 0; done < r.endpoint_changes; done++) {
			int64_t rev = 0, at;

			t = fleet_now(f);
			if (probe_endpoint_write(f, done, &rev, err, sizeof(err)) < 0 ||
			    crew_endpoint_wait(c, rev, r.timeout, &at, err, sizeof(err)) < 0)
				goto out;
			ms[done] = at < 0 ? -1 : (double)(at - t) / 1e6;
			if (at < 0) {
				done++;
				break;
			}
		}
		if (crew_bytes(c, &got1, err, sizeof(err)) < 0)
			goto out;
		put_probe(out, "endpoint_change", "bytes_received_per_change", ms, done, got1 - got0);
		{
			size_t bytes = 0;

			if (probe_endpoints_bytes(f, &bytes, err, sizeof(err)) < 0)
				goto out;
			json_object_set_new(json_object_get(out, "endpoint_change"), "endpoints_object_bytes",
					    json_integer((json_int_t)bytes));
		}
		json_object_set_new(out, "controller_after_endpoint_changes", controller_sample(&r));
	}
	rc = 0;
out:
	if (*err)
		json_object_set_new(out, "error", json_string(err));
	if (f) {
		t = fleet_now(f);
		crew_destroy(c);	/* stops every agent */
		json_object_set_new(steps, "stop_s", json_real(secs(fleet_now(f) - t)));
		fleet_destroy(f);
	}
	{
		FILE *o = r.output ? fopen(r.output, "w") : stdout;

		if (!o) {
			fprintf(stderr, "weft-hollow: %s: %s\n", r.output, strerror(errno));
			rc = 1;
		} else {
			json_dumpf(out, o, JSON_INDENT(2));
			fputc('\n', o);
			if (o != stdout)
				fclose(o);
		}
	}
	if (*err)
		fprintf(stderr, "weft-hollow: %s\n", err);
	json_decref(out);
	free(ms);
	return rc;
}
