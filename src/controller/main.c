/*
 * weft-controller — the cluster's source of truth: object registry,
 * allocators and REST API with watch, on a revisioned store.
 *
 *   weft-controller --data-dir DIR [--listen HOST:PORT] [--config CLUSTER.yaml]
 *                   [--store URL] [--max-body BYTES] [--history REVISIONS]
 *                   [--max-connections N] [--max-connections-per-client N]
 *                   [--header-timeout SECONDS] [--idle-timeout SECONDS]
 *                   [--bookmark-interval SECONDS] [--no-endpoints-controller]
 *                   [--max-endpoints-per-slice N]
 *                   [--node-write-rate N] [--node-write-burst N]
 *                   [--tls-san NAME|IP]... [--tls-cert-file F --tls-key-file F] [--insecure-http]
 *   weft-controller --data-dir DIR --fsck
 *
 * The API is HTTPS: the cluster CA and the serving certificate come from
 * pki.h (made at first start under DIR/pki, or the user's own), and
 * DIR/admin.kubeconfig (0600) tells kubectl-style clients the server, the
 * CA and the admin token; it is rewritten whenever one of them changes.
 * Plain HTTP only with --insecure-http, and only on a loopback address.
 *
 * At start, before the API answers: in flat and networkpolicy modes every
 * NetNamespace gets VNID 0 if it had another (a store written by a weft
 * that gave namespaces VNIDs in networkpolicy mode); every pod with an
 * address gets its allocation key if it has none (a store written before
 * those keys; pods that share an address or do not fit their node's subnet
 * are logged, kept, and named by --fsck); then the endpoints controller
 * resyncs: every Service with a selector gets the Endpoints and the
 * EndpointSlices its pods make now (slices already right are adopted, not
 * rewritten), whatever happened while no controller ran.
 */
#include "controller/controller.h"
#include "controller/conns.h"
#include "controller/leader.h"
#include "controller/pki.h"
#include "lib/kubeconfig.h"
#include "lib/monotime.h"
#include "lib/yaml.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Per client: room for a client's parallel requests and for a burst of
 * connects whose watch has not started yet (watch streams do not count
 * once they stream).  One client opening 1,000 watches as fast as it can
 * (the controller benchmark) had up to 32–48 connections accepted but not
 * yet through their request head: the server accepts up to 11 a loop per
 * thread and serves them on the next.  128 leaves that burst room to
 * spare, and one address still holds under 1 % of a 20,000-descriptor
 * controller. */
#define DEFAULT_PER_CLIENT 128
#define DEFAULT_HEADER_TIMEOUT 10	/* seconds: a head is a few hundred bytes */
#define DEFAULT_IDLE_TIMEOUT 60		/* seconds: clients keep connections between requests */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: weft-controller --data-dir DIR [--listen HOST:PORT] [--config CLUSTER.yaml]\n"
		"                       [--store URL] [--max-body BYTES] [--history REVISIONS]\n"
		"                       [--compact-interval SECONDS] [--no-endpoints-controller]\n"
		"                       [--max-connections N] [--max-connections-per-client N]\n"
		"                       [--header-timeout SECONDS] [--idle-timeout SECONDS]\n"
		"                       [--bookmark-interval SECONDS] [--max-endpoints-per-slice N]\n"
		"                       [--node-write-rate N] [--node-write-burst N]\n"
		"                       [--tls-san NAME|IP]... [--tls-cert-file FILE --tls-key-file FILE]\n"
		"                       [--insecure-http]\n"
		"       weft-controller --data-dir DIR --fsck\n"
		"       weft-controller --data-dir DIR [--store URL] --migrate-to etcd://...\n"
		"\n"
		"  --data-dir DIR     state: the store (DIR/weft.db), the admin token (DIR/admin.token),\n"
		"                     the cluster CA and serving certificate (DIR/pki/) and a kubeconfig\n"
		"                     for clients (DIR/admin.kubeconfig)\n"
		"  --listen HOST:PORT address of the REST API, HTTPS (default 127.0.0.1:8080)\n"
		"  --tls-san NAME|IP  one more name or address the serving certificate is valid for\n"
		"                     (repeatable; it always has the --listen IP, 127.0.0.1 and localhost)\n"
		"  --tls-cert-file FILE, --tls-key-file FILE\n"
		"                     serve this certificate (PEM, chain after it) and key instead of the\n"
		"                     ones made under DIR/pki; clients trust the file's last certificate\n"
		"  --insecure-http    serve plain HTTP instead, without TLS: refused unless --listen is a\n"
		"                     loopback address (127.0.0.0/8)\n"
		"  --config FILE      the ClusterNetwork manifest; applied at start (refused if it would\n"
		"                     orphan allocated subnets or cluster IPs, or change the mode while\n"
		"                     the stored VNIDs do not fit the new one)\n"
		"  --store URL        sqlite:PATH (default sqlite:DIR/weft.db), or etcd://HOST:PORT[,HOST:PORT...]\n"
		"                     [?ca=FILE&cert=FILE&key=FILE&user=NAME&password_file=FILE]\n"
		"  --migrate-to URL   copy the store (stopped: no controller on it) into URL, an empty store,\n"
		"                     then exit; start the controllers with --store URL after it\n"
		"  --max-body BYTES   largest request body (default 3145728)\n"
		"  --history N        revisions of history kept for watches (default 100000)\n"
		"  --compact-interval SECONDS  how often old history is compacted (default 60)\n"
		"  --max-connections N  client connections at most (default and ceiling: RLIMIT_NOFILE,\n"
		"                     raised to its hard limit, minus %u kept for the store and the\n"
		"                     server; at most %u)\n"
		"  --max-connections-per-client N  connections of one client address, watch streams\n"
		"                     not counted; more are refused at accept (default %u)\n"
		"  --header-timeout SECONDS  a connection that has not sent a complete request head\n"
		"                     this long after it opened is closed (default %u)\n"
		"  --idle-timeout SECONDS  ... or this long after its last response (default %u)\n"
		"  --bookmark-interval SECONDS  how often an idle watch that allows bookmarks\n"
		"                     (allowWatchBookmarks=true) is sent a BOOKMARK of the latest\n"
		"                     revision, when it has advanced (default 60)\n"
		"  --node-write-rate N  writes (POST, PUT, PATCH, DELETE) a second each node credential\n"
		"                     may make (a decimal: 0.5 is one every 2 s); more are answered 429\n"
		"                     TooManyRequests with Retry-After (default %u; the admin is never\n"
		"                     limited)\n"
		"  --node-write-burst N  ... and how many at once after a quiet time (default %u)\n"
		"  --no-endpoints-controller  do not write Endpoints for Services with a selector\n"
		"                     (another controller does; hand-written Endpoints are still checked),\n"
		"                     nor their EndpointSlices\n"
		"  --max-endpoints-per-slice N  endpoints in one EndpointSlice at most, 1-1000\n"
		"                     (default %u); a slice keeps its endpoints, new ones fill slices\n"
		"                     with room before a slice is made\n"
		"  --fsck             check the store's allocations and exit (0 = consistent)\n",
		CONNS_FD_RESERVE, CONNS_MAX, DEFAULT_PER_CLIENT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
		API_NODE_WRITE_RATE, API_NODE_WRITE_BURST, ENDPOINTSLICE_DEFAULT_PER_SLICE);
}

static json_t *load_config(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, err[512];
	size_t len = 0, cap = 0, n;
	json_t **docs = NULL, *obj = NULL;
	size_t ndocs = 0;

	if (!f) {
		fprintf(stderr, "weft-controller: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		if (len + 65536 > cap) {
			char *p = realloc(buf, cap = len + 65536);
			if (!p) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0 && len < (16u << 20));
	fclose(f);
	if (model_decode_manifest(buf ? buf : "", len, &docs, &ndocs, err, sizeof(err))) {
		fprintf(stderr, "weft-controller: %s: %s\n", path, err);
	} else if (ndocs != 1 || !obj_kind(docs[0]) || strcmp(obj_kind(docs[0]), "ClusterNetwork") != 0) {
		fprintf(stderr, "weft-controller: %s: want exactly one ClusterNetwork document\n", path);
	} else if (model_validate(docs[0], err, sizeof(err))) {
		char *line = strtok(err, "\n");
		while (line) {
			fprintf(stderr, "weft-controller: %s: %s\n", path, line);
			line = strtok(NULL, "\n");
		}
	} else {
		obj = json_incref(docs[0]);
	}
	yaml_docs_free(docs, ndocs);
	free(buf);
	return obj;
}

/* A whole number within [min, max] for flag name, or exit 2 naming it. */
static long long number_flag(const char *name, const char *s, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "weft-controller: --%s %s: want a whole number from %lld to %lld\n", name, s, min,
			max);
		exit(2);
	}
	return v;
}

/* A rate: a decimal number (0.5: one every two seconds) from min to max. */
static double rate_flag(const char *name, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "weft-controller: --%s %s: want a number from %g to %g\n", name, s, min, max);
		exit(2);
	}
	return v;
}

/* The HOST of HOST:PORT into host; false when there is no ':'. */
static bool listen_host(const char *listen_addr, char *host, size_t len)
{
	const char *colon = strrchr(listen_addr, ':');

	if (!colon || (size_t)(colon - listen_addr) >= len)
		return false;
	memcpy(host, listen_addr, (size_t)(colon - listen_addr));
	host[colon - listen_addr] = 0;
	return true;
}

static bool is_loopback(const char *host)
{
	struct in_addr a;

	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* DIR/admin.kubeconfig for the API at listen_addr; said on stderr when written. */
static int write_kubeconfig(const char *dir, const char *listen_addr, const struct pki *pki, const char *token)
{
	char path[4200], server[300], host[256], err[512];
	const char *port = strrchr(listen_addr, ':');
	bool changed = false;
	int rc;

	if (!port || !listen_host(listen_addr, host, sizeof(host)))
		return -EINVAL;
	/* a wildcard listen has no address of its own to name: this host's loopback */
	snprintf(server, sizeof(server), "%s://%s%s", pki ? "https" : "http",
		 strcmp(host, "0.0.0.0") ? host : "127.0.0.1", port);
	snprintf(path, sizeof(path), "%s/admin.kubeconfig", dir);
	rc = kubeconfig_write(path,
			      &(struct kubeconfig_admin){ .cluster = "weft", .user = "admin", .server = server,
							  .ca_pem = pki ? pki->ca_pem : NULL,
							  .ca_len = pki ? pki->ca_len : 0, .token = token },
			      &changed, err, sizeof(err));
	if (rc)
		fprintf(stderr, "weft-controller: %s\n", err);
	else if (changed)
		fprintf(stderr, "weft-controller: wrote %s (server %s)\n", path, server);
	return rc;
}

/* The start-up indexing of pod addresses (registry_index_pod_ips), said
 * on stderr: keys added, and the pods that need a person.  0, or -1 when
 * the store failed (said). */
static int index_pod_ips(struct registry *reg)
{
	struct pod_ip_index_report rep;
	struct status st = { 0 };
	size_t problems;

	if (registry_index_pod_ips(reg, &rep, &st)) {
		fprintf(stderr, "weft-controller: indexing pod IPs: %s\n", st.message);
		return -1;
	}
	if (rep.indexed)
		fprintf(stderr, "weft-controller: pod IPs: %zu pod%s had no allocation key (a store written by an "
				"older weft); added\n",
			rep.indexed, rep.indexed == 1 ? "" : "s");
	problems = rep.conflicts + rep.misfits;
	if (!problems)
		return 0;
	fprintf(stderr, "weft-controller: pod IPs: %zu pod%s whose address another pod holds, %zu whose address "
			"is not its node's to give; kept as they are (delete or correct them):\n",
		rep.conflicts, rep.conflicts == 1 ? "" : "s", rep.misfits);
	for (char *line = rep.lines, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		fprintf(stderr, "weft-controller:   %.*s\n", (int)(nl - line), line);
	if (problems > rep.nlines)
		fprintf(stderr, "weft-controller:   ... and %zu more (weft-controller --fsck names them all)\n",
			problems - rep.nlines);
	return 0;
}

/* Raise the descriptor limit's soft value to its hard one (as servers do)
 * and return what it is then. */
static uint64_t raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

#define LEADER_KEY "/weft/leader/endpoints-controller"
#define LEADER_DURATION_MS 6000

/* Several controllers on one store: the Endpoints controller runs in the
 * one that holds the lease, its writes fenced on it (leader.c).  Called
 * with the store to itself (the API's lock); logs every change of hands. */
static void elect(struct leader *l, struct registry *reg, bool wanted)
{
	bool was = leader_held(l), now = leader_tick(l, monotime_ms());

	reg->fence_key = now ? leader_key(l) : NULL;
	reg->fence_rev = now ? leader_fence(l) : 0;
	endpoints_ctl_enable(reg->endpoints, wanted && now);
	lb_ctl_enable(reg->lb, now);
	if (now && !was) {
		fprintf(stderr, "weft-controller: leading the endpoints controller (lease %s)\n", leader_key(l));
		if (wanted && endpoints_resync(reg->endpoints))
			fprintf(stderr, "weft-controller: endpoints resync failed; retried at the next write\n");
	} else if (!now && was) {
		fprintf(stderr, "weft-controller: no longer leading the endpoints controller (held by %s)\n",
			leader_holder(l)[0] ? leader_holder(l) : "nobody");
	}
}

/* --migrate-to: the whole store into an empty one (store_copy.c).  0 or 1. */
static int migrate(struct store *src, const char *from, const char *to)
{
	struct store_copy_report rep;
	char err[1024];
	struct store *dst = store_open(to, err, sizeof(err));
	int r;

	if (!dst) {
		fprintf(stderr, "weft-controller: --migrate-to: %s\n", err);
		return 1;
	}
	r = store_copy(src, dst, "/weft/", &rep, err, sizeof(err));
	store_close(dst);
	if (r < 0) {
		fprintf(stderr, "weft-controller: migrate %s -> %s: %s\n", from, to, err);
		return 1;
	}
	printf("migrated %zu keys of %s (revision %" PRId64 ") into %s, now at revision %" PRId64
	       " (%" PRId64 " scratch writes to pass the source's), compacted there: clients list again\n",
	       rep.keys, from, rep.source_revision, to, rep.destination_revision, rep.padding);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 's' },
		{ "max-body", required_argument, NULL, 'b' },
		{ "history", required_argument, NULL, 'H' },
		{ "compact-interval", required_argument, NULL, 'C' },
		{ "fsck", no_argument, NULL, 'f' },
		{ "migrate-to", required_argument, NULL, 'm' },
		{ "no-endpoints-controller", no_argument, NULL, 'E' },
		{ "max-connections", required_argument, NULL, 'M' },
		{ "max-connections-per-client", required_argument, NULL, 'P' },
		{ "header-timeout", required_argument, NULL, 'T' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "bookmark-interval", required_argument, NULL, 'B' },
		{ "tls-san", required_argument, NULL, 'S' },
		{ "tls-cert-file", required_argument, NULL, 'X' },
		{ "tls-key-file", required_argument, NULL, 'K' },
		{ "insecure-http", no_argument, NULL, 'N' },
		{ "node-write-rate", required_argument, NULL, 'R' },
		{ "node-write-burst", required_argument, NULL, 'U' },
		{ "max-endpoints-per-slice", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data_dir = NULL, *listen_addr = "127.0.0.1:8080", *config_path = NULL, *store_url = NULL, *migrate_to = NULL;
	size_t max_body = 3u << 20;
	int64_t history = 100000;
	long compact_interval = 60;
	uint64_t nofile;
	unsigned conn_ceiling, max_connections = 0, per_client = DEFAULT_PER_CLIENT;
	double node_write_rate = API_NODE_WRITE_RATE;
	unsigned node_write_burst = API_NODE_WRITE_BURST;
	unsigned header_timeout = DEFAULT_HEADER_TIMEOUT, idle_timeout = DEFAULT_IDLE_TIMEOUT, bookmark_interval = 60;
	bool fsck = false, endpoints_controller = true, insecure_http = false;
	size_t per_slice = ENDPOINTSLICE_DEFAULT_PER_SLICE;
	char err[1024], token[256] = "", url[4200], host[256];
	const char *sans[PKI_MAX_SANS];
	size_t nsans = 0;
	struct pki_config pki_cfg = { 0 };
	struct pki pki = { 0 };
	struct store *store = NULL, *reader = NULL;
	int64_t start_rev;
	struct registry reg = { 0 };
	struct metrics metrics = { 0 };
	struct status st = { 0 };
	struct watch_hub *hub = NULL;
	struct leader *leader = NULL;
	struct api *api = NULL;
	json_t *config = NULL;
	int opt, rc = 1, sync_err;
	time_t last_compact = time(NULL);

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': data_dir = optarg; break;
		case 'l': listen_addr = optarg; break;
		case 'c': config_path = optarg; break;
		case 's': store_url = optarg; break;
		case 'b': max_body = (size_t)number_flag("max-body", optarg, 1024, 1LL << 30); break;
		case 'H': history = number_flag("history", optarg, 0, INT64_MAX); break;
		case 'f': fsck = true; break;
		case 'm': migrate_to = optarg; break;
		case 'E': endpoints_controller = false; break;
		case 'C': compact_interval = (long)number_flag("compact-interval", optarg, 1, 86400); break;
		case 'M': max_connections = (unsigned)number_flag("max-connections", optarg, 1, CONNS_MAX); break;
		case 'P': per_client = (unsigned)number_flag("max-connections-per-client", optarg, 1, CONNS_MAX); break;
		case 'T': header_timeout = (unsigned)number_flag("header-timeout", optarg, 1, 3600); break;
		case 'I': idle_timeout = (unsigned)number_flag("idle-timeout", optarg, 1, 86400); break;
		case 'R': node_write_rate = rate_flag("node-write-rate", optarg, 0.001, 1000000); break;
		case 'U': node_write_burst = (unsigned)number_flag("node-write-burst", optarg, 1, 1000000); break;
		case 'Z': per_slice = (size_t)number_flag("max-endpoints-per-slice", optarg, 1, ENDPOINTSLICE_MAX_ENDPOINTS); break;
		case 'B': bookmark_interval = (unsigned)number_flag("bookmark-interval", optarg, 1, 3600); break;
		case 'S':
			if (pki_san_check(optarg, err, sizeof(err)) || nsans == PKI_MAX_SANS) {
				fprintf(stderr, "weft-controller: %s\n",
					nsans == PKI_MAX_SANS ? "--tls-san: too many (64 at most)" : err);
				return 2;
			}
			sans[nsans++] = optarg;
			break;
		case 'X': pki_cfg.cert_file = optarg; break;
		case 'K': pki_cfg.key_file = optarg; break;
		case 'N': insecure_http = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!data_dir || optind != argc) {
		usage(stderr);
		return 2;
	}
	nofile = raise_fd_limit();
	conn_ceiling = conns_limit_for(nofile);
	if (!fsck && !conn_ceiling) {
		fprintf(stderr, "weft-controller: RLIMIT_NOFILE is %llu: too few descriptors for connections "
				"(%u are kept for the store and the server); raise it (ulimit -n)\n",
			(unsigned long long)nofile, CONNS_FD_RESERVE);
		return 1;
	}
	if (max_connections > conn_ceiling) {
		fprintf(stderr, "weft-controller: --max-connections %u: above the %u that RLIMIT_NOFILE %llu "
				"allows (%u descriptors are kept for the store and the server)\n",
			max_connections, conn_ceiling, (unsigned long long)nofile, CONNS_FD_RESERVE);
		return 2;
	}
	if (!max_connections)
		max_connections = conn_ceiling;
	if (!listen_host(listen_addr, host, sizeof(host))) {
		fprintf(stderr, "weft-controller: --listen %s: want HOST:PORT\n", listen_addr);
		return 2;
	}
	if (!!pki_cfg.cert_file != !!pki_cfg.key_file) {
		fprintf(stderr, "weft-controller: --tls-cert-file and --tls-key-file go together\n");
		return 2;
	}
	if (insecure_http && (pki_cfg.cert_file || nsans)) {
		fprintf(stderr, "weft-controller: --insecure-http serves no TLS: it does not go with %s\n",
			pki_cfg.cert_file ? "--tls-cert-file" : "--tls-san");
		return 2;
	}
	if (insecure_http && !is_loopback(host)) {
		fprintf(stderr, "weft-controller: --insecure-http: plain HTTP is served only on a loopback address "
				"(127.0.0.0/8), and --listen %s is not one; leave --insecure-http out to serve HTTPS\n",
			listen_addr);
		return 2;
	}
	if (mkdir(data_dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "weft-controller: --data-dir %s: %s\n", data_dir, strerror(errno));
		return 1;
	}
	if (config_path && !(config = load_config(config_path)))
		return 1;
	if (!store_url) {
		snprintf(url, sizeof(url), "sqlite:%s/weft.db", data_dir);
		store_url = url;
	}
	store = store_open(store_url, err, sizeof(err));
	if (!store) {
		fprintf(stderr, "weft-controller: %s\n", err);
		goto out;
	}
	if (migrate_to) {
		rc = migrate(store, store_url, migrate_to);
		goto out;
	}
	if (registry_init(&reg, store, &metrics, config, &st)) {
		fprintf(stderr, "weft-controller: %s%s\n", config_path ? config_path : "cluster config",
			st.message[0] ? ": " : "");
		fprintf(stderr, "  %s\n", st.message);
		goto out;
	}
	if (endpoints_ctl_set_slice_capacity(reg.endpoints, per_slice))
		goto out;	/* (number_flag kept it in range) */
	if (fsck) {
		static char report[1 << 20];
		size_t problems = 0;
		if (registry_fsck(&reg, report, sizeof(report), &problems)) {
			fprintf(stderr, "weft-controller: fsck: cannot read the store\n");
			goto out;
		}
		fputs(report, stdout);
		printf("fsck: %zu problem%s\n", problems, problems == 1 ? "" : "s");
		rc = problems ? 1 : 0;
		goto out;
	}
	if (token_load_or_create(data_dir, token, sizeof(token), err, sizeof(err))) {
		fprintf(stderr, "weft-controller: %s\n", err);
		goto out;
	}
	if (!insecure_http) {
		pki_cfg.dir = data_dir;
		pki_cfg.listen_host = host;
		pki_cfg.sans = sans;
		pki_cfg.nsans = nsans;
		if (pki_load_or_create(&pki_cfg, &pki, err, sizeof(err))) {
			fprintf(stderr, "weft-controller: TLS: %s\n", err);
			goto out;
		}
		for (char *line = pki.report, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl)
				break;
			fprintf(stderr, "weft-controller: TLS: %.*s\n", (int)(nl - line), line);
		}
	}
	if (write_kubeconfig(data_dir, listen_addr, insecure_http ? NULL : &pki, token))
		goto out;
	{
		size_t changed = 0;

		if (registry_conform_vnids(&reg, &changed, &st)) {
			fprintf(stderr, "weft-controller: setting VNIDs to 0 (%s mode): %s\n",
				cluster_mode_name(reg.config.mode), st.message);
			goto out;
		}
		if (changed)
			fprintf(stderr, "weft-controller: %s mode: %zu NetNamespace%s had a VNID other than 0 "
					"(stored by an older weft); set to 0\n",
				cluster_mode_name(reg.config.mode), changed, changed == 1 ? "" : "s");
	}
	if (index_pod_ips(&reg))
		goto out;
	if (!strncmp(store_url, "etcd:", 5)) {
		/* other controllers may share this store: elect who runs the loops that must run once */
		char identity[160], hostname[64] = "";

		(void)gethostname(hostname, sizeof(hostname) - 1);
		snprintf(identity, sizeof(identity), "%s %s pid %d", hostname, listen_addr, (int)getpid());
		leader = leader_new(store, LEADER_KEY, identity, LEADER_DURATION_MS);
		if (!leader) {
			fprintf(stderr, "weft-controller: leader election: %s\n", strerror(errno));
			goto out;
		}
		elect(leader, &reg, endpoints_controller);
		if (!leader_held(leader))
			fprintf(stderr, "weft-controller: the endpoints controller runs elsewhere (%s holds %s)\n",
				leader_holder(leader), LEADER_KEY);
	} else {
		endpoints_ctl_enable(reg.endpoints, endpoints_controller);
		lb_ctl_enable(reg.lb, true);
	}
	{
		struct timespec t0, t1;
		int e;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		e = endpoints_resync(reg.endpoints);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (e) {
			fprintf(stderr, "weft-controller: endpoints resync: %s\n", strerror(-e));
			goto out;
		}
		fprintf(stderr, "weft-controller: endpoints %s: %zu services with a selector checked in %.3f s "
				"(%" PRIu64 " written, %" PRIu64 " deleted, %" PRIu64 " failed)\n",
			endpoints_controller ? "controller" : "index (controller off)", endpoints_services(reg.endpoints),
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
			metrics.endpoints_writes, metrics.endpoints_deletes, metrics.endpoints_failures);
	}
	/* lists read on a handle of their own, so they take no lock that writes need */
	reader = store_open(store_url, err, sizeof(err));
	if (!reader) {
		fprintf(stderr, "weft-controller: %s (the lists' handle)\n", err);
		goto out;
	}
	/* group commit: writes commit under the API's lock and are flushed
	 * outside it, before anyone sees them (store.h, api.c) */
	if ((sync_err = store_defer_sync(store)) && sync_err != -ENOTSUP) {	/* etcd: every write is durable */
		fprintf(stderr, "weft-controller: %s: group commit: %s\n", store_url, strerror(-sync_err));
		goto out;
	}
	hub = watch_hub_new(store, 65536);
	if (!hub) {
		fprintf(stderr, "weft-controller: cannot start the watch hub\n");
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa = { .sa_handler = on_signal };
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	/* the API's threads inherit a mask without the stop signals: main gets them */
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	/* read before the API's threads run: after, a write may move it under the hub's lock */
	start_rev = watch_hub_revision(hub);
	api = api_start(&(struct api_config){ .listen = listen_addr, .token = token, .max_body = max_body,
					      .max_connections = max_connections, .max_per_client = per_client,
					      .node_write_rate = node_write_rate, .node_write_burst = node_write_burst,
					      .header_timeout = header_timeout, .idle_timeout = idle_timeout,
					      .bookmark_interval = bookmark_interval,
					      .reader = reader, .tls_cert = pki.cert_pem,
					      .tls_key = pki.key_pem,
					      .flows_cert_file = pki.relay_cert[0] ? pki.relay_cert : NULL,
					      .flows_key_file = pki.relay_key[0] ? pki.relay_key : NULL },
			&reg, hub, &metrics, err, sizeof(err));
	pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
	if (!api) {
		fprintf(stderr, "weft-controller: %s\n", err);
		goto out;
	}
	{
		char nets[256], svc[CIDR_STRLEN];
		config_networks_string(&reg.config, nets, sizeof(nets));
		cidr_format(&reg.config.service_network, svc);
		fprintf(stderr, "weft-controller: listening on %s://%s (data %s, revision %" PRId64
				", cluster networks %s, service network %s, mode %s)\n",
			insecure_http ? "http" : "https", listen_addr, data_dir, start_rev, nets, svc,
			cluster_mode_name(reg.config.mode));
		fprintf(stderr, "weft-controller: connections: at most %u (RLIMIT_NOFILE %llu), %u per client "
				"address (watch streams not counted); request head within %u s of accept, "
				"next request within %u s\n",
			max_connections, (unsigned long long)nofile, per_client, header_timeout, idle_timeout);
	}
	while (!stopping) {
		int e = api_run(api, 200);
		if (e) {
			fprintf(stderr, "weft-controller: event loop: %s\n", strerror(-e));
			goto out;
		}
		if (leader) {
			api_lock(api);
			elect(leader, &reg, endpoints_controller);
			api_unlock(api);
		}
		if (history > 0 && time(NULL) - last_compact >= compact_interval) {
			int64_t rev = 0, done = 0;
			last_compact = time(NULL);
			api_lock(api);
			if (store_revision(store, &rev) == 0 && store_compacted(store, &done) == 0 &&
			    rev - history > done && store_compact(store, rev - history))
				fprintf(stderr, "weft-controller: compaction failed (history kept)\n");
			api_unlock(api);
		}
	}
	fprintf(stderr, "weft-controller: stopping\n");
	rc = 0;
out:
	api_stop(api);
	if (leader_held(leader) && leader_release(leader))
		fprintf(stderr, "weft-controller: could not give up the lease %s (another takes it when it ends)\n",
			LEADER_KEY);
	leader_free(leader);
	watch_hub_free(hub);
	registry_close(&reg);
	store_close(reader);
	store_close(store);
	json_decref(config);
	pki_free(&pki);
	explicit_bzero(token, sizeof(token));
	return rc;
}
