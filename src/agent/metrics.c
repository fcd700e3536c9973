/*
 * metrics.c — the agent's /metrics (see metrics.h).  A scrape reads the
 * figures the agent already keeps, each under the lock that guards it,
 * and writes the text into a memory stream answered whole; nothing here
 * walks a map or holds a lock across another.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agent/agent.h"
#include "agent/flowlog.h"
#include "agent/metrics.h"

/* sync.c's "what" of each watch, in the order of agent_metrics.program */
static const char *const kinds[METRICS_KINDS] = {
	"hostsubnets", "pods", "netnamespaces", "services", "endpointslices",
	"namespaces", "networkpolicies", "podpeerslices",
};
static const char *const commands[6] = { NULL, "ADD", "DEL", "CHECK", "GC", "STATUS" };

void metrics_cni_done(struct agent *a, int cmd, uint64_t ns, int failed)
{
	if (cmd < 1 || cmd > 5)
		return;
	histogram_observe(&a->metrics.cni[cmd], ns);
	if (failed)
		atomic_fetch_add_explicit(&a->metrics.cni_errors[cmd], 1, memory_order_relaxed);
}

struct histogram *metrics_program_timing(struct agent *a, const char *kind)
{
	for (int i = 0; i < METRICS_KINDS; i++)
		if (strcmp(kinds[i], kind) == 0)
			return &a->metrics.program[i];
	return NULL;
}

void metrics_policy_applied(struct agent *a, uint64_t ns)
{
	histogram_observe(&a->metrics.policy_apply, ns);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(FILE *f, const char *name, const char *help, unsigned long long v)
{
	family(f, name, "gauge", help);
	fprintf(f, "%s %llu\n", name, v);
}

/* The maps that fill: with traffic (connections) or with the cluster
 * (rules), as the agent last counted them. */
static void maps_text(struct agent *a, FILE *f)
{
	struct conntrack_stats ct, pct;
	struct policy_stats ps;
	uint32_t rules_cap = 0, pct_cap = 0;
	bool swept;

	pthread_mutex_lock(&a->ct_lock);
	ct = a->ct_stats;
	pct = a->pct_stats;
	swept = a->ct_swept;
	pthread_mutex_unlock(&a->ct_lock);
	policy_stats(a->policy, &ps);
	datapath_policy_capacities(a->dp, &rules_cap, &pct_cap);
	family(f, "weft_agent_map_entries", "gauge",
	       "Entries of a map that fills, as the agent last counted them (weft_ct and "
	       "weft_policy_ct: at their last sweep; weft_policy: rule keys and ipBlock prefixes written).");
	if (swept)
		fprintf(f, "weft_agent_map_entries{map=\"weft_ct\"} %llu\n", (unsigned long long)ct.entries);
	fprintf(f, "weft_agent_map_entries{map=\"weft_policy_ct\"} %llu\n", (unsigned long long)pct.entries);
	fprintf(f, "weft_agent_map_entries{map=\"weft_policy\"} %llu\n",
		(unsigned long long)(ps.rules + ps.cidrs));
	family(f, "weft_agent_map_capacity", "gauge", "Capacity of a map that fills.");
	if (swept)
		fprintf(f, "weft_agent_map_capacity{map=\"weft_ct\"} %llu\n", (unsigned long long)ct.capacity);
	fprintf(f, "weft_agent_map_capacity{map=\"weft_policy_ct\"} %u\n", pct_cap);
	fprintf(f, "weft_agent_map_capacity{map=\"weft_policy\"} %u\n", rules_cap);
	family(f, "weft_agent_policy_map_full_total", "counter",
	       "Rule sets or prefixes the agent could not write for lack of room in weft_policy.");
	fprintf(f, "weft_agent_policy_map_full_total %llu\n", (unsigned long long)ps.map_full);
	family(f, "weft_agent_service_map_full_total", "counter",
	       "Service map writes the agent could not make for lack of room.");
	fprintf(f, "weft_agent_service_map_full_total %llu\n", (unsigned long long)service_map_full_count(a));
	gauge(f, "weft_agent_policy_identities", "Pod identities (namespace, labels, named ports) in use.",
	      ps.identities);
	gauge(f, "weft_agent_policies", "NetworkPolicies the agent holds.", ps.policies);
	gauge(f, "weft_agent_policy_rule_sets", "Rule sets written: one per identity of a pod here.",
	      ps.classes);
}

static void timings_text(struct agent *a, FILE *f)
{
	char labels[64];

	family(f, "weft_agent_cni_request_duration_seconds", "histogram",
	       "Time the agent took to answer a CNI request, by command.");
	for (int c = 1; c <= 5; c++) {
		snprintf(labels, sizeof(labels), "command=\"%s\"", commands[c]);
		histogram_format(f, "weft_agent_cni_request_duration_seconds", labels, &a->metrics.cni[c]);
	}
	family(f, "weft_agent_cni_request_errors_total", "counter",
	       "CNI requests the agent answered with an error, by command.");
	for (int c = 1; c <= 5; c++)
		fprintf(f, "weft_agent_cni_request_errors_total{command=\"%s\"} %llu\n", commands[c],
			(unsigned long long)atomic_load_explicit(&a->metrics.cni_errors[c], memory_order_relaxed));
	family(f, "weft_agent_programming_duration_seconds", "histogram",
	       "Time from a watch event's arrival to the data plane holding it, by the kind watched.");
	for (int k = 0; k < METRICS_KINDS; k++) {
		snprintf(labels, sizeof(labels), "kind=\"%s\"", kinds[k]);
		histogram_format(f, "weft_agent_programming_duration_seconds", labels, &a->metrics.program[k]);
	}
	family(f, "weft_agent_policy_apply_duration_seconds", "histogram",
	       "Time a NetworkPolicy apply took (its map writes included).");
	histogram_format(f, "weft_agent_policy_apply_duration_seconds", "", &a->metrics.policy_apply);
}

/* The whole answer; NULL when out of memory. */
static char *metrics_text(struct agent *a, size_t *len)
{
	uint64_t d[WEFT_DROP_MAX];
	struct ipam_stats ip;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	gauge(f, "weft_agent_ready", "1 once the node's data plane is complete (CNI STATUS answers ok).",
	      atomic_load(&a->ready));
	family(f, "weft_agent_drops_total", "counter", "Packets the data plane dropped, by reason.");
	if (datapath_drops(a->dp, d) == 0)
		for (int i = 1; i < WEFT_DROP_MAX; i++)
			fprintf(f, "weft_agent_drops_total{reason=\"%s\"} %llu\n", datapath_drop_names[i],
				(unsigned long long)d[i]);
	if (a->flowlog) {	/* the flow log: drops always, forwards while listened */
		static const char *const verdicts[] = { [WEFT_FLOW_DROP] = "dropped", [WEFT_FLOW_NEW] = "new",
						     [WEFT_FLOW_REPLY] = "reply", [WEFT_FLOW_SAMPLE] = "sampled" };
		uint64_t c[WEFT_FLOW_SAMPLE + 1], lost = 0;

		flowlog_counts(a->flowlog, c);
		family(f, "weft_agent_flows_total", "counter",
		       "Flow events the data plane reported, by verdict: dropped always; new (a TCP SYN "
		       "forwarded), reply (its SYN-ACK) and sampled (1 in 16 UDP and ICMP packets) while "
		       "someone listens.");
		for (int k = WEFT_FLOW_DROP; k <= WEFT_FLOW_SAMPLE; k++)
			fprintf(f, "weft_agent_flows_total{verdict=\"%s\"} %llu\n", verdicts[k], (unsigned long long)c[k]);
		gauge(f, "weft_agent_flows_listeners",
		      "Streams following this node's flows now; while there is one, forwarded packets are reported.",
		      flowlog_listeners(a->flowlog));
		if (datapath_flows_suppressed(a->dp, &lost) == 0) {
			family(f, "weft_agent_flows_suppressed_total", "counter",
			       "Flow events not reported: over the rate (1,000 a second per CPU) or the ring full.");
			fprintf(f, "weft_agent_flows_suppressed_total %llu\n", (unsigned long long)lost);
		}
	}
	ipam_stats(a->ipam, &ip);
	gauge(f, "weft_agent_pod_addresses", "Pod addresses this node has leased.", ip.leases);
	gauge(f, "weft_agent_pod_addresses_quarantined",
	      "Pod addresses held out of the pool by a quarantined lease file.", ip.quarantined);
	gauge(f, "weft_agent_pod_addresses_capacity", "Pod addresses in this node's subnet.", ip.capacity);
	maps_text(a, f);
	timings_text(a, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			      size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	if (status == 405)
		MHD_add_response_header(r, "Allow", "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **state)
{
	static char not_found[] = "not found: this agent serves GET /metrics\n";
	static char not_allowed[] = "method not allowed: GET /metrics\n";
	struct agent *a = cls;
	size_t len = 0;
	char *text;

	(void)version;
	(void)upload;
	if (strcmp(url, "/metrics") != 0) {
		*upload_len = 0;
		return answer(c, 404, "text/plain; charset=utf-8", not_found, sizeof(not_found) - 1,
			      MHD_RESPMEM_PERSISTENT);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		*upload_len = 0;
		return answer(c, 405, "text/plain; charset=utf-8", not_allowed, sizeof(not_allowed) - 1,
			      MHD_RESPMEM_PERSISTENT);
	}
	if (!*state) {		/* the head only: answer once it is whole */
		*state = a;
		return MHD_YES;
	}
	*upload_len = 0;	/* a GET's body, if any, is ignored */
	text = metrics_text(a, &len);
	if (!text)
		return MHD_NO;
	return answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, MHD_RESPMEM_MUST_FREE);
}

int metrics_address_parse(const char *spec, struct sockaddr_in *out)
{
	const char *colon = strrchr(spec, ':');
	char host[64];
	unsigned long port;
	char *end;

	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end || !colon[1] || colon[1] == '-' || errno || port == 0 || port > 65535 ||
	    (host[0] && inet_pton(AF_INET, host, &out->sin_addr) != 1))
		return -EINVAL;
	out->sin_port = htons((uint16_t)port);
	return 0;
}

int metrics_start(struct agent *a)
{
	struct sockaddr_in sa;
	const char *spec = a->o.metrics_address;

	if (!spec)
		return 0;
	if (metrics_address_parse(spec, &sa) < 0) {
		LOG_ERR("metrics: --metrics-address %s: not ADDRESS:PORT; going on without /metrics", spec);
		return -EINVAL;
	}
	/* epoll, not select: the agent's descriptors may pass FD_SETSIZE */
	a->metrics.daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD, ntohs(sa.sin_port), NULL, NULL, handle,
					     a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					     MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					     8u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
					     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (!a->metrics.daemon) {
		int e = errno ? errno : EADDRINUSE;

		LOG_ERR("metrics: cannot serve on %s: %s; going on without /metrics", spec, strerror(e));
		return -e;
	}
	LOG_INFO("serving metrics on http://%s/metrics", spec);
	return 0;
}

void metrics_stop(struct agent *a)
{
	if (a->metrics.daemon)
		MHD_stop_daemon(a->metrics.daemon);
	a->metrics.daemon = NULL;
}
