/*
 * lifecycle.c — one node's agent from start to stop, in the order agent.h
 * gives (register, data plane, devices and leases, CNI, watches), and its
 * shutdown.  weft-agent (main.c) runs one on the real kernel; weft-hollow
 * runs many in one process, each hollow (a->kernel =
 * &agent_kernel_hollow: maps in memory, no devices, no CNI socket).
 * Everything else — registration, list+watch, IPAM, the computation of
 * every map entry, the reports on the Node — is the same code either way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "agent/flowlog.h"
#include "agent/flowserve.h"
#include "lib/secret_file.h"
#include "agent/tracer.h"
#include "lib/monotime.h"
#include "agent/netlink.h"

int agent_mkdir_p(const char *path)
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

void agent_init(struct agent *a)
{
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->ct_lock, NULL);
	pthread_cond_init(&a->kick, NULL);
	pthread_cond_init(&a->listed, NULL);
	(void)monotime_cond_init(&a->gc_wake);	/* its waits have deadlines */
	pthread_mutex_init(&a->policy_lock, NULL);
	pthread_cond_init(&a->policy_cond, NULL);
}

/* the namer of the flows: the policy compiler knows the pods of every
 * node whose addresses its policies name, the node's own always */
static void name_pod(void *ctx, in_addr_t ip, char *buf, size_t len)
{
	policy_describe_addr(((struct agent *)ctx)->policy, ip, buf, len);
}

/* The node's flows over TLS to the cluster's relay (flowserve.h): only with
 * a flow log, an address to serve on, and the cluster CA to know the
 * relay's certificate by (--ca-file). */
static void flows_serve(struct agent *a)
{
	struct flowserve_opts fo = { .node = a->o.node, .client_cn = FLOWSERVE_CLIENT_CN, .log = a->flowlog,
				     .name = name_pod, .name_ctx = a };
	char err[300], *ca = NULL;
	size_t len;
	int rc;

	if (!a->flowlog || !a->o.flows_address)
		return;
	if (!a->o.ca_file) {
		LOG_WARN("flows: not served: no --ca-file to know the cluster's relay by");
		return;
	}
	if (metrics_address_parse(a->o.flows_address, &fo.addr) < 0) {
		LOG_ERR("flows: --flows-address %s: not ADDRESS:PORT; not served", a->o.flows_address);
		return;
	}
	if ((rc = secret_file_read(a->o.ca_file, 1u << 20, &ca, &len)) < 0) {
		LOG_ERR("flows: %s: %s; not served", a->o.ca_file, strerror(-rc));
		return;
	}
	fo.client_ca_pem = ca;
	a->flowserve = flowserve_start(&fo, err, sizeof(err));
	free(ca);
	if (!a->flowserve) {
		LOG_ERR("%s; going on without", err);
		return;
	}
	LOG_INFO("serving flows on https://%s/v1/flows (key %s)", a->o.flows_address, flowserve_pin(a->flowserve));
}

int agent_start(struct agent *a)
{
	struct datapath_opts dopts = { 0 };
	char err[512], dir[4200];
	bool rebuilt = false, kept;
	int rc;

	if ((rc = agent_mkdir_p(a->o.state_dir)) < 0) {
		LOG_ERR("state dir %s: %s", a->o.state_dir, strerror(-rc));
		return -1;
	}
	a->netns_cookie = a->hollow ? 0 : netns_cookie(-1);
	a->svc = service_table_create();
	if (!a->svc) {
		LOG_ERR("services: %s", strerror(errno));
		return -1;
	}

	/* 1. who we are */
	if (node_register(a) < 0)
		return -1;

	/* 2. data plane */
	dopts.pin_dir = a->o.pin_dir;
	dopts.in_memory = a->hollow;
	dopts.on_write = a->o.on_map_write;
	dopts.on_write_arg = a->o.on_map_write_arg;
	dopts.max_services = a->o.max_services;
	dopts.max_backends = a->o.max_backends;
	dopts.max_ct = a->o.max_ct;
	dopts.ct_source_max = a->o.ct_per_source;
	dopts.max_policy = a->o.max_policy;
	dopts.max_policy_ct = a->o.max_policy_ct;
	dopts.policy_ct_source_max = a->o.policy_ct_per_source;
	rc = datapath_open(&dopts, &a->dp, &rebuilt, err, sizeof(err));
	if (rc < 0) {
		LOG_ERR("data plane: %s", err);
		return -1;
	}
	a->policy = policy_create(a->dp);
	if (!a->policy) {
		LOG_ERR("network policy: %s", strerror(errno));
		return -1;
	}
	kept = keep_or_rebuild(a, rebuilt);
	if (kept && policy_adopt(a->policy) < 0)
		LOG_WARN("network policy: reading back the pinned numbers failed");
	if (kept && service_recover(a) < 0)
		LOG_WARN("services: reading back the pinned IDs failed: connections may re-balance");

	/* 3. devices, masquerade, leases, start-up GC */
	if (a->kernel->setup_devices(a) < 0 || a->kernel->setup_masquerade(a) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/leases", a->o.state_dir);
	rc = ipam_open(dir, htonl(a->subnet.addr), a->subnet.len, &a->ipam, err, sizeof(err));
	if (rc < 0) {
		LOG_ERR("leases: %s", err);
		return -1;
	}
	lease_report_startup(a);	/* one line per quarantined file */
	if (a->kernel->startup_gc(a) < 0)
		return -1;
	if (kept)
		(void)sync_mark_ready(a);	/* refresh ifindexes; stays complete */

	/* 4. CNI (a hollow node's pods are added by its runner) */
	if (a->o.cni_socket) {
		a->cni = cni_server_start(a->o.cni_socket, &pod_cni_ops, a, err, sizeof(err));
		if (!a->cni) {
			LOG_ERR("CNI socket %s: %s", a->o.cni_socket, err);
			return -1;
		}
		LOG_INFO("serving CNI on %s", a->o.cni_socket);
	}

	/* 5. follow the cluster */
	if (!a->hollow) {
		a->plog = policy_log_start(a, report_kick);
		if (!(a->flowlog = flowlog_start(a->dp, FLOWLOG_KEEP)))
			LOG_WARN("flow log: %s: flows will not be reported", strerror(errno));
		if (!a->plog)
			LOG_WARN("policy log: %s: verdicts will not be logged", strerror(errno));
		flows_serve(a);	/* before the report thread, which publishes it; logged, not fatal */
	}
	if (!a->hollow && !(a->tracer = tracer_start(a)))
		LOG_WARN("trace requests: %s: this node will not answer them", strerror(errno));
	if (sync_start(a) < 0 || report_start(a) < 0 || service_gc_start(a) < 0)
		return -1;
	(void)metrics_start(a);	/* logged; the node works without it */
	return 0;
}

void agent_stop(struct agent *a)
{
	atomic_store(&a->stopping, true);
	pthread_mutex_lock(&a->lock);
	pthread_cond_broadcast(&a->listed);	/* a thread waiting for a list: stop */
	pthread_cond_broadcast(&a->gc_wake);
	pthread_mutex_unlock(&a->lock);
	metrics_stop(a);
	cni_server_stop(a->cni);
	report_stop(a);
	sync_stop(a);		/* and frees the node and pod caches */
	tracer_stop(a->tracer);	/* (after its watch: nothing offers any more) */
	a->tracer = NULL;
	policy_log_stop(a->plog);
	flowserve_stop(a->flowserve);	/* its streams read the flow log */
	a->flowserve = NULL;
	flowlog_stop(a->flowlog);
	a->flowlog = NULL;
	service_gc_stop(a);
	service_table_destroy(a->svc);
	ipam_close(a->ipam);
	policy_destroy(a->policy);
	datapath_close(a->dp);
	a->cni = NULL;
	a->plog = NULL;
	a->svc = NULL;
	a->ipam = NULL;
	a->policy = NULL;
	a->dp = NULL;
}
