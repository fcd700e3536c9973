/*
 * agent.h — weft-agent's private state, shared by its parts (not by other
 * components):
 *
 *   main.c     flags, signals
 *   lifecycle.c  the start-up order (below) and the shutdown, for weft-agent
 *              and for each of weft-hollow's agents
 *   hollow.c   a hollow node: no kernel of its own, pods from its runner
 *   log.c      the log lines
 *   node.c     registration with the controller, node.json, devices
 *              (VXLAN, gateway address, routes, the service device),
 *              masquerade, MTU
 *   sync.c     list+watch of HostSubnets (the node table), Pods,
 *              NetNamespaces, Services, EndpointSlices, Namespaces and
 *              NetworkPolicies; routes and maps kept equal to the desired
 *              state
 *   remote.c   other nodes' addresses in weft_ipcache: watched pods,
 *              service backends
 *   policy.c   NetworkPolicy -> the policy maps (its own lock and thread)
 *   pod.c      the CNI operations (ADD, DEL, CHECK, GC, STATUS)
 *   service.c  Services and Endpoints -> service maps; conntrack GC
 *   report.c   Pod records in the controller kept equal to the leases;
 *              the Node's annotations (applied revisions, drops, map full)
 *   lease_report.c  quarantined lease files: log lines, their refresh,
 *              the Node annotation weft.io/ipam
 *   write.c    every write to the controller; a 429 is waited out and sent again
 *   metrics.c  GET /metrics (Prometheus): the figures the parts above keep,
 *              and the timings of CNI requests, events and policy applies
 *
 * Locking: agent.lock guards the node and pod caches (nodecache.h,
 * podcache.h) and the ready flags;
 * the maps and the leases have their own (single syscalls / ipam's mutex).
 * Netlink handles are per thread.  No lock is held across an HTTP call.
 *
 * Start-up order (lifecycle.c), each step finishing before the next:
 *   1. node identity: register (PUT Node) or, with the controller down,
 *      node.json from the last registration;
 *   2. data plane: open the pinned maps; keep them when their config entry
 *      is complete and belongs to this namespace, else clear them;
 *   3. devices, masquerade, leases (ipam) and the start-up GC against the
 *      interfaces present;
 *   4. the CNI socket (STATUS answers "not ready" until step 5);
 *   5. watches; after the first full sync the config entry is written,
 *      version last, and the agent is ready;
 *   6. /metrics and the flows (their own threads; a failure to serve is
 *      logged, not fatal).
 */
#ifndef WEFT_AGENT_AGENT_H
#define WEFT_AGENT_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>
#include <jansson.h>

#include "lib/cidr.h"
#include "lib/httpc.h"
#include "model/model.h"
#include "agent/backend_addrs.h"
#include "agent/cni_server.h"
#include "agent/conntrack.h"
#include "agent/datapath.h"
#include "agent/ipam.h"
#include "agent/metrics.h"
#include "agent/nodecache.h"
#include "agent/peerslice.h"
#include "agent/podcache.h"
#include "agent/policy.h"
#include "agent/policy_log.h"
#include "agent/service.h"

#define AGENT_VXLAN_NAME "weft_vxlan"
/* the service device: the node's own connections to cluster IPs and VIPs
 * are routed to it and translated at its egress (bpf/svc_egress.bpf.c) */
#define AGENT_SVC_NAME "weft_svc"
#define AGENT_VETH_PREFIX "weft"
/* items a list asks for a page (limit, continue), as client-go's reflectors:
 * an agent's memory for a list is a page's, whatever the cluster's size */
#define AGENT_LIST_PAGE 500
#define AGENT_LIST_PAGE_MAX 100000
#define AGENT_ANN_CONTAINER "weft.io/container-id"
#define AGENT_ANN_APPLIED "weft.io/applied-revision"	/* on the Node: NetNamespaces applied up to */
#define AGENT_ANN_DROPS "weft.io/drops"			/* on the Node: drop counters, JSON */
/* on the Node: {"netnamespaces": R, "services": R, "endpoints": R}, each
 * kind applied to the maps up to that revision */
#define AGENT_ANN_APPLIED_KINDS "weft.io/applied-revisions"
/* on a Service, one per node that could not program it: the reason */
#define AGENT_ANN_UNPROGRAMMED MODEL_ANN_UNPROGRAMMED
/* on the Node: service map writes refused for lack of room, since start */
#define AGENT_ANN_MAP_FULL "weft.io/service-map-full"
/* on the Node: weft_ct occupancy and sweep figures, JSON (report.c) */
#define AGENT_ANN_CONNTRACK "weft.io/conntrack"
/* on the Node: NetworkPolicy figures and map pressure, JSON (report.c) */
#define AGENT_ANN_POLICY "weft.io/policy"
/* on the Node: the last policy log records, a JSON array (policy_log.h) */
#define AGENT_ANN_POLICY_LOG "weft.io/policy-log"
/* on the Node: lease counts and the quarantined lease files, JSON
 * (lease_report.c) */
#define AGENT_ANN_IPAM "weft.io/ipam"
/* on the Node: where the node serves its flows and the pin of its key,
 * {"endpoint": "https://IP:PORT", "pin": "sha256//..."} (flowserve.h) */
#define AGENT_ANN_FLOWS "weft.io/flows"
/* VNID of a pod whose namespace the agent cannot learn (controller away):
 * reaches only global pods and pods in the same state until re-tagged */
#define AGENT_VNID_UNKNOWN 0xffffffu

struct agent_opts {
	const char *controller;
	const char *token_file;
	const char *ca_file;		/* the CA of an https controller; NULL: the system's */
	const char *node;
	const char *node_ip_str;
	const char *state_dir;
	const char *pin_dir;
	const char *cni_socket;
	int mtu;			/* 0: detect */
	uint32_t max_services, max_backends, max_ct;	/* 0: bpf/weft_bpf.h defaults */
	uint32_t ct_per_source;		/* 0: max_ct / 2 / WEFT_CT_SOURCE_SHARE */
	uint32_t max_policy, max_policy_ct;	/* 0: bpf/weft_bpf.h defaults */
	uint32_t policy_ct_per_source;	/* 0: max_policy_ct / WEFT_POLICY_CT_SOURCE_SHARE */
	unsigned watch_timeout;		/* seconds a watch request asks for (0: 300) */
	unsigned list_page;		/* items a list asks for a page (0: AGENT_LIST_PAGE) */
	const char *metrics_address;	/* "ADDR:PORT" of /metrics; NULL: not served */
	const char *flows_address;	/* "ADDR:PORT" of the flows (flowserve.h); NULL: not served */
	/* told of every map write (datapath_opts.on_write): weft-hollow's probe */
	datapath_write_fn *on_map_write;
	void *on_map_write_arg;
};

struct agent {
	struct agent_opts o;
	const struct agent_kernel *kernel;	/* agent_kernel_real or _hollow */
	bool hollow;			/* maps in memory, no kernel, no CNI socket */
	uint32_t hollow_ifindex;	/* a hollow pod's veth number: the last given (under lock) */
	in_addr_t node_ip;		/* network order */
	uint32_t node_id;
	struct cidr subnet;		/* this node's, host order */
	in_addr_t gateway;		/* network order */
	struct cluster_config cc;
	int mtu;			/* pod MTU */
	int underlay_mtu;
	int underlay_ifindex;		/* the device holding node_ip */
	int vxlan_ifindex;
	int svc_ifindex;		/* AGENT_SVC_NAME */
	uint64_t netns_cookie;

	struct datapath *dp;
	struct ipam *ipam;
	struct cni_server *cni;
	struct policy *policy;
	struct policy_log *plog;	/* NULL when the ring buffer could not be read */
	struct service_table *svc;	/* service.c's, under its callers' threads */
	struct sync_kinds *kinds;	/* sync.c's: what each watching thread follows */

	pthread_mutex_t lock;
	pthread_cond_t kick;		/* wakes the reporter */
	/* broadcast (under lock) when a kind's first list is applied
	 * (its *_synced turns true), and at stop */
	pthread_cond_t listed;
	/* the cluster as the watches tell it (sync.c), indexed: nothing that
	 * grows with the cluster is scanned per event; under lock */
	struct nodecache nodes;
	struct podcache pods;		/* Pods, and the namespaces' VNIDs */
	struct backend_addrs backends;	/* service backends on other nodes */
	struct peerslice_table peers;	/* other nodes' pods as policy peers (peerslice.h) */
	bool nodes_synced, pods_synced, netns_synced;	/* first full list applied */
	bool peers_synced;		/* PodPeerSlices: a list applied once */
	bool services_synced, slices_synced;
	bool namespaces_synced, netpols_synced;
	int64_t applied_rev;		/* NetNamespaces applied up to (under lock) */
	int64_t svc_applied_rev, slices_applied_rev;	/* Services, EndpointSlices (under lock) */
	int64_t np_applied_rev;		/* NetworkPolicies in the maps up to (under lock) */
	/* what the reporter last wrote on the Node (report thread only) */
	int64_t reported_rev;		/* -1: nothing yet */
	char *reported_drops;		/* JSON, malloc'ed */
	char *reported_kinds;		/* AGENT_ANN_APPLIED_KINDS as last written */
	json_t *node_written;		/* the Node as the last report's PUT answered (or NULL) */
	uint64_t reported_map_full;
	time_t drops_at;
	/* the applied revisions: last written (CLOCK_MONOTONIC ms), and when
	 * a write held back for the revisions period (report.c) is due (0: none) */
	int64_t revs_at_ms, report_due_ms;
	bool controller_up;
	bool records_one_by_one;	/* the controller has no batched create (report thread) */
	unsigned kicks;

	struct agent_metrics metrics;	/* metrics.h: timings, and the endpoint */
	atomic_bool ready;		/* data plane complete: STATUS ok */
	atomic_bool stopping;
	struct httpc *http_nodes, *http_pods, *http_netns, *http_report;	/* one per thread */
	struct httpc *http_services, *http_slices, *http_namespaces, *http_netpols, *http_peers;
	struct httpc *http_traces;
	struct tracer *tracer;		/* tracer.h: the TraceRequests for this node (NULL: hollow) */
	struct flowlog *flowlog;	/* flowlog.h: the flow log (NULL: hollow) */
	struct flowserve *flowserve;	/* flowserve.h: the flows served (NULL: not served) */
	bool traces_synced;
	pthread_t t_nodes, t_pods, t_netns, t_report, t_services, t_slices, t_ct_gc;
	pthread_cond_t gc_wake;		/* a backend's conntrack to purge, or stop (with lock) */
	pthread_t t_namespaces, t_netpols, t_policy, t_peers, t_traces;
	/* the policy thread: woken when an input changed (sync.c) */
	pthread_mutex_t policy_lock;
	pthread_cond_t policy_cond;
	bool policy_dirty;
	int64_t np_caught_rev;		/* NetworkPolicies received up to (policy_lock) */
	/* weft_policy_ct's sweep (policy_ct.c), under ct_lock */
	struct conntrack_stats pct_stats;
	uint64_t pct_expired_total;
	/* the conntrack sweep's last figures (service_ct_gc), under ct_lock */
	pthread_mutex_t ct_lock;
	struct conntrack_stats ct_stats;
	uint64_t ct_expired_total, ct_orphans_total;
	bool ct_swept;
	char *reported_ct;		/* AGENT_ANN_CONNTRACK as last written (report thread) */
	char *reported_policy;		/* AGENT_ANN_POLICY as last written (report thread) */
	uint64_t reported_log_seq;	/* policy log records in the last AGENT_ANN_POLICY_LOG */
	time_t log_at;			/* when it was written */
	char *reported_ipam;		/* AGENT_ANN_IPAM as last written (report thread) */
	char *reported_flows;		/* AGENT_ANN_FLOWS as last written (report thread) */
	time_t ipam_at;			/* when it was written */
};

/* logging (log.c: stderr, one line, with time, program and level) */
void agent_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The program's name in every line (borrowed: a literal), and whether
 * "info" lines are dropped.  Before any thread logs. */
void agent_log_setup(const char *prog, bool quiet);
#define LOG_INFO(...) agent_log("info", __VA_ARGS__)
#define LOG_WARN(...) agent_log("warn", __VA_ARGS__)
#define LOG_ERR(...) agent_log("error", __VA_ARGS__)

/* What a node does to its kernel beside the maps: devices, routes,
 * masquerade and the veths found at start.  agent_kernel_real (node.c)
 * does it; a hollow node (hollow.c) has no kernel of its own and does
 * nothing.  Chosen once, in a->kernel, before agent_start. */
struct agent_kernel {
	int (*setup_devices)(struct agent *a);
	int (*setup_masquerade)(struct agent *a);
	int (*route_remote)(struct agent *a, const struct nodecache_node *n);	/* replace */
	int (*route_remote_del)(struct agent *a, const struct cidr *subnet);
	/* delete routes through the VXLAN device to subnets no node owns */
	int (*routes_prune)(struct agent *a);
	/* pod_startup_gc, below, for the real kernel */
	int (*startup_gc)(struct agent *a);
};
extern const struct agent_kernel agent_kernel_real;
extern const struct agent_kernel agent_kernel_hollow;

/* node.c */
int node_register(struct agent *a);		/* controller, or node.json */
static inline int node_route_remote(struct agent *a, const struct nodecache_node *n)
{
	return a->kernel->route_remote(a, n);
}
static inline int node_route_remote_del(struct agent *a, const struct cidr *subnet)
{
	return a->kernel->route_remote_del(a, subnet);
}
static inline int node_routes_prune(struct agent *a)
{
	return a->kernel->routes_prune(a);
}
struct httpc *agent_http(struct agent *a);	/* a new handle on the controller */
void format_ip(in_addr_t ip, char buf[INET_ADDRSTRLEN]);

/* write.c: method (PUT, DELETE) of path with body, as httpc_request, but
 * a 429 TooManyRequests is sent again after its Retry-After (at most
 * AGENT_RETRY_MAX_S each, AGENT_WRITE_TRIES sends in all, no wait once
 * the agent stops); after the last, *resp is that 429. */
#define AGENT_RETRY_MAX_S 10
#define AGENT_WRITE_TRIES 5
int agent_write(struct agent *a, struct httpc *h, const char *method, const char *path, const char *body,
		size_t len, struct httpc_response *resp, char *err, size_t errlen) __attribute__((warn_unused_result));
/* The seconds to wait before sending again what r answered: -1 when r is
 * not a 429; else its Retry-After, or its Status' details.retryAfterSeconds,
 * or 1, within 1..AGENT_RETRY_MAX_S. */
int agent_retry_seconds(const struct httpc_response *r);

/* pod.c */
extern const struct cni_ops pod_cni_ops;
/* Start-up: keep leases whose veth exists (refreshing their map entries
 * and programs), release the others, delete weft veths without a lease
 * (but those whose endpoint's address is quarantined: pod.c, "quarantine
 * settled by the node"). */
int pod_startup_gc(struct agent *a);
/* A Pod of this node whose address is quarantined and has no lease: when
 * its endpoint, MAC and veth name agree with it (container_id, interface
 * eth0), write its lease again.  1 written, 0 not settled (it stays
 * quarantined, the pod kept), -errno. */
int pod_settle_quarantined(struct agent *a, const char *ns, const char *name,
			   const char *container_id, in_addr_t ip);
/* The maps of a pod whose address is leased and whose link exists (ep's
 * ifindex, gw_mac and pod_mac filled): its policies first (isolated from
 * its first packet), then its endpoint (flags and VNID set here) and its
 * ipcache entry.  0 or -errno (a map full or failing). */
int pod_maps_write(struct agent *a, const struct ipam_owner *owner, in_addr_t ip,
		struct weft_endpoint *ep) __attribute__((warn_unused_result));
/* Host veth name for (container ID, ifname). */
void pod_host_ifname(const char *container_id, const char *ifname, char out[16]);
void pod_mac_from_ip(in_addr_t ip, uint8_t mac[6]);

/* lifecycle.c: one node's agent from start to stop.  agent_init once (a
 * zeroed struct with its options and a->kernel set), then agent_start:
 * the start-up order above, steps 1 to 5; on failure (logged) -1, and
 * agent_stop still undoes what was done.  agent_stop stops the threads
 * and frees what the agent holds (devices, programs and pinned maps stay). */
void agent_init(struct agent *a);
int agent_start(struct agent *a) __attribute__((warn_unused_result));
void agent_stop(struct agent *a);
/* mkdir -p, mode 0700: 0 or -errno */
int agent_mkdir_p(const char *path);

/* sync.c */
int sync_start(struct agent *a);
/* Stops the watches and frees the caches. */
void sync_stop(struct agent *a);
/* Write the config entry (version last); called once both lists applied. */
int sync_mark_ready(struct agent *a);

/* Wake the policy thread: an input of policy.c changed. */
void sync_policy_kick(struct agent *a);

/* remote.c: other nodes' addresses in weft_ipcache; under lock */
in_addr_t remote_node_ip(struct agent *a, in_addr_t ip);	/* by subnet; 0: unknown */
uint32_t remote_vnid_of(struct agent *a, const char *ns);	/* AGENT_VNID_UNKNOWN */
/* p's entry (a pod of the watch; local ones are the leases') */
void remote_pod_program(struct agent *a, const struct podcache_pod *p);
/* ip's entry once pod `leaving` (may be NULL) no longer holds it: another
 * watched pod's, else a service backend's, else none */
void remote_release(struct agent *a, in_addr_t ip, const struct podcache_pod *leaving);
/* A service backend at ip (on another node) of namespace ns: counted, and
 * in weft_ipcache while some backend names it (backend_addrs.h).  ref: 0
 * or -ENOMEM. */
int remote_backend_ref(struct agent *a, in_addr_t ip, const char *ns) __attribute__((warn_unused_result));
void remote_backend_unref(struct agent *a, in_addr_t ip);
/* The entries again: the backends of namespace ns (NULL: all) no watched
 * pod covers; every pod and backend in subnet s (its node came or moved). */
void remote_backends_program(struct agent *a, const char *ns);
void remote_program_in(struct agent *a, const struct cidr *s);
/* Does a watched pod or a service backend hold ip? */
bool remote_keeps(struct agent *a, in_addr_t ip);

/* hollow.c: a hollow node's pods (the node runs with agent_kernel_hollow
 * and maps in memory).  hollow_pod_add leases an address for pod ns/name,
 * writes its maps as a CNI ADD does and wakes the reporter, which writes
 * its Pod record: 0 with *ip set, -EAGAIN before the agent is ready,
 * -ENOSPC with its subnet full, -errno.  hollow_pod_del undoes it (by
 * address, as a DEL by container does): 0 or -ENOENT. */
int hollow_pod_add(struct agent *a, const char *ns, const char *name, in_addr_t *ip_out)
	__attribute__((warn_unused_result));
int hollow_pod_del(struct agent *a, in_addr_t ip);

/* lease_report.c */
#define LEASE_REPORT_LIST_MAX 32	/* quarantined files listed on the Node */
/* Log one line per quarantined lease file (path, reason); after ipam_open. */
void lease_report_startup(struct agent *a);
/* ipam_refresh_quarantine, logging each file found gone: how many (their
 * addresses are back in the pool), or -errno (logged). */
int lease_report_refresh(struct agent *a);
/* The AGENT_ANN_IPAM annotation's JSON (malloc'ed), or NULL. */
char *lease_report_json(struct agent *a);

/* report.c */
int report_start(struct agent *a);
void report_stop(struct agent *a);
void report_kick(struct agent *a);

#endif
