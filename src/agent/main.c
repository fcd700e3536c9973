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
#include "agent/netlink.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void agent_log(const char *level, const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char when[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s.%03ld weft-agent %s: ", when, ts.tv_nsec / 1000000, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&log_lock);
}

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
		"                  [--watch-timeout SECONDS]\n"
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
		"                      applied (default 300)\n",
		WEFT_MAX_SERVICES, WEFT_MAX_BACKENDS, WEFT_MAX_CT, WEFT_CT_SOURCE_SHARE,
		WEFT_MAX_POLICY, WEFT_MAX_POLICY_CT, WEFT_POLICY_CT_SOURCE_SHARE);
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static char state[4096], pin[4096], sock[4096];
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

static int wipe_entry(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	(void)datapath_endpoint_del(arg, ip);
	return 0;
}

static int wipe_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	(void)datapath_ipcache_del(arg, ip);
	return 0;
}

static int wipe_node(in_addr_t s, int len, const struct weft_node_entry *e, void *arg)
{
	(void)datapath_node_del(arg, s, len);
	return 0;
}

static int wipe_service(const struct weft_svc_key *k, const struct weft_svc_value *v, void *arg)
{
	(void)v;
	(void)datapath_service_del(arg, k);
	return 0;
}

static int wipe_backend(uint32_t id, const struct weft_backend *b, void *arg)
{
	(void)b;
	(void)datapath_backend_del(arg, id);
	return 0;
}

static int wipe_ct(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	(void)e;
	(void)datapath_ct_del(arg, k);
	return 0;
}

/* Keep the pinned state when it is complete and ours; else start over. */
static bool keep_or_rebuild(struct agent *a, bool rebuilt)
{
	struct weft_config c = { 0 };
	bool keep;

	keep = !rebuilt && datapath_config_get(a->dp, &c) == 0 &&
	       c.version == WEFT_CONFIG_VERSION && c.ready && c.netns_cookie == a->netns_cookie &&
	       c.node_ip == a->node_ip && c.subnet == htonl(a->subnet.addr) &&
	       c.subnet_mask == htonl(cidr_mask(a->subnet.len));
	if (keep) {
		LOG_INFO("pinned data-plane state in %s is complete: kept (generation %llu)",
			 a->o.pin_dir, (unsigned long long)c.generation);
		return true;
	}
	LOG_INFO("pinned data-plane state in %s is %s: rebuilding", a->o.pin_dir,
		 rebuilt ? "new" : c.version != WEFT_CONFIG_VERSION || !c.ready ? "half-written"
				 : "from another node or namespace");
	memset(&c, 0, sizeof(c));
	(void)datapath_config_set(a->dp, &c);	/* version 0 first */
	(void)datapath_endpoint_foreach(a->dp, wipe_entry, a->dp);
	(void)datapath_ipcache_foreach(a->dp, wipe_ipcache, a->dp);
	(void)datapath_node_foreach(a->dp, wipe_node, a->dp);
	(void)datapath_service_foreach(a->dp, wipe_service, a->dp);
	(void)datapath_backend_foreach(a->dp, wipe_backend, a->dp);
	(void)datapath_ct_foreach(a->dp, wipe_ct, a->dp);
	return false;
}

int main(int argc, char **argv)
{
	static struct agent a;
	struct datapath_opts dopts = { 0 };
	char err[512], dir[4200];
	struct in_addr ia;
	sigset_t set;
	bool rebuilt = false, kept;
	int rc = 1, sig;

	if (parse_flags(argc, argv, &a.o) < 0)
		return 2;
	if (inet_pton(AF_INET, a.o.node_ip_str, &ia) != 1) {
		fprintf(stderr, "weft-agent: --node-ip %s: not an IPv4 address\n", a.o.node_ip_str);
		return 2;
	}
	a.node_ip = ia.s_addr;
	libbpf_set_print(libbpf_log);
	pthread_mutex_init(&a.lock, NULL);
	pthread_mutex_init(&a.ct_lock, NULL);
	pthread_cond_init(&a.kick, NULL);
	pthread_mutex_init(&a.policy_lock, NULL);
	pthread_cond_init(&a.policy_cond, NULL);
	/* signals go to the main thread's sigwait only */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((rc = mkdir_p(a.o.state_dir)) < 0) {
		LOG_ERR("state dir %s: %s", a.o.state_dir, strerror(-rc));
		return 1;
	}
	a.netns_cookie = netns_cookie(-1);

	/* 1. who we are */
	if (node_register(&a) < 0)
		return 1;

	/* 2. data plane */
	dopts.pin_dir = a.o.pin_dir;
	dopts.max_services = a.o.max_services;
	dopts.max_backends = a.o.max_backends;
	dopts.max_ct = a.o.max_ct;
	dopts.ct_source_max = a.o.ct_per_source;
	dopts.max_policy = a.o.max_policy;
	dopts.max_policy_ct = a.o.max_policy_ct;
	dopts.policy_ct_source_max = a.o.policy_ct_per_source;
	rc = datapath_open(&dopts, &a.dp, &rebuilt, err, sizeof(err));
	if (rc < 0) {
		LOG_ERR("data plane: %s", err);
		return 1;
	}
	a.policy = policy_create(a.dp);
	if (!a.policy) {
		LOG_ERR("network policy: %s", strerror(errno));
		datapath_close(a.dp);
		return 1;
	}
	kept = keep_or_rebuild(&a, rebuilt);
	if (kept && policy_adopt(a.policy) < 0)
		LOG_WARN("network policy: reading back the pinned numbers failed");
	if (kept && service_recover(&a) < 0)
		LOG_WARN("services: reading back the pinned IDs failed: connections may re-balance");
	rc = 1;

	/* 3. devices, masquerade, leases, start-up GC */
	if (node_setup_devices(&a) < 0 || node_setup_masquerade(&a) < 0)
		goto out;
	snprintf(dir, sizeof(dir), "%s/leases", a.o.state_dir);
	rc = ipam_open(dir, htonl(a.subnet.addr), a.subnet.len, &a.ipam, err, sizeof(err));
	if (rc < 0) {
		LOG_ERR("leases: %s", err);
		goto out;
	}
	lease_report_startup(&a);	/* one line per quarantined file */
	rc = 1;
	if (pod_startup_gc(&a) < 0)
		goto out;
	if (kept)
		(void)sync_mark_ready(&a);	/* refresh ifindexes; stays complete */

	/* 4. CNI */
	a.cni = cni_server_start(a.o.cni_socket, &pod_cni_ops, &a, err, sizeof(err));
	if (!a.cni) {
		LOG_ERR("CNI socket %s: %s", a.o.cni_socket, err);
		goto out;
	}
	LOG_INFO("serving CNI on %s", a.o.cni_socket);

	/* 5. follow the cluster */
	a.plog = policy_log_start(&a, report_kick);
	if (!a.plog)
		LOG_WARN("policy log: %s: verdicts will not be logged", strerror(errno));
	if (sync_start(&a) < 0 || report_start(&a) < 0 || service_gc_start(&a) < 0)
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
	atomic_store(&a.stopping, true);
	cni_server_stop(a.cni);
	report_stop(&a);
	sync_stop(&a);
	policy_log_stop(a.plog);
	service_gc_stop(&a);
	service_free_all();
	ipam_close(a.ipam);
	policy_destroy(a.policy);
	datapath_close(a.dp);
	free(a.nodes);
	free(a.pods);
	free(a.netns);
	return rc ? 1 : 0;
}
