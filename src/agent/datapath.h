/*
 * datapath.h — the agent's handle on the eBPF data plane: loads the
 * programs (libbpf skeletons of bpf/pod_ingress, pod_egress, vxlan_ingress,
 * node_ingress and svc_egress .bpf.c), pins their maps by name under a
 * per-node directory, attaches them with tc (clsact ingress or egress), and
 * reads and writes the maps whose layouts bpf/weft_bpf.h defines.
 *
 * Restart: datapath_open() on a pin directory that already holds the maps
 * reuses them (libbpf LIBBPF_PIN_BY_NAME), so entries survive an agent
 * restart and the programs it attaches again see the same state.  Attaching
 * replaces the filter in place (same handle and priority), so traffic never
 * meets a device without a program.  A map whose pinned layout no longer
 * matches (size, type) is unpinned and created afresh; datapath_open()
 * reports that through *rebuilt.
 *
 * Ownership: the handle owns its program and map fds; datapath_close()
 * releases them but leaves the pins and the tc filters in place (that is
 * what keeps traffic flowing while the agent is down).  datapath_unpin()
 * removes the pins (the maps go when the last filter using them goes).
 *
 * In memory (datapath_opts.in_memory, for hollow nodes: many agents in one
 * process, no kernel of their own): no program is loaded and nothing is
 * pinned, so neither bpffs nor privilege is needed; every map below is a
 * table in this process (memmap.h) with the kernel map's layout, capacity
 * and return codes, holding memory for the entries written, not for its
 * capacity.  The map calls and walks work the same; the attach calls
 * succeed without doing anything (datapath_attached says 1), the program
 * and ring-buffer fds are -EOPNOTSUPP, and nothing but the agent writes:
 * conntrack, affinity, drops and trace stay as the agent leaves them.
 *
 * Thread-safety: map calls may be made from any thread (they are single
 * syscalls, or take the memory table's lock); open/attach/close from one
 * thread.
 * Errors: 0 or a negative errno; where words help, errbuf says what.
 */
#ifndef WEFT_AGENT_DATAPATH_H
#define WEFT_AGENT_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "bpf/weft_bpf.h"

struct datapath;

/* The maps the agent reads and writes (bpf/weft_bpf.h has their layouts). */
enum datapath_map_id {
	DATAPATH_MAP_CONFIG,
	DATAPATH_MAP_SVC_DEV,
	DATAPATH_MAP_ENDPOINTS,
	DATAPATH_MAP_IPCACHE,
	DATAPATH_MAP_NODES,
	DATAPATH_MAP_NODE_IPS,
	DATAPATH_MAP_SERVICES,
	DATAPATH_MAP_BACKENDS,
	DATAPATH_MAP_CT,
	DATAPATH_MAP_CT_OPENED,
	DATAPATH_MAP_CT_CLOSED,
	DATAPATH_MAP_AFFINITY,
	DATAPATH_MAP_POLICY,
	DATAPATH_MAP_POLICY_CIDRS,
	DATAPATH_MAP_POLICY_CT,
	DATAPATH_MAP_POLICY_CT_OPENED,
	DATAPATH_MAP_POLICY_CT_CLOSED,
	DATAPATH_MAP_DROPS,
	DATAPATH_MAP_TRACE,
	DATAPATH_NMAPS
};

/* Told of every write that succeeded, on the thread that made it, after
 * the write: key and value (NULL for a delete) in the map's layout
 * (bpf/weft_bpf.h; the LPM maps' keys with their prefixlen first), both
 * borrowed for the call.  It must not call back into the datapath. */
typedef void datapath_write_fn(void *arg, enum datapath_map_id map, const void *key,
			       const void *value);

struct datapath_opts {
	const char *pin_dir;	/* must be on bpffs; created if missing */
	bool trace;		/* tests: programs write weft_trace */
	/* capacities of the service maps; 0 = the default of bpf/weft_bpf.h.
	 * Another value than the pinned maps' rebuilds them. */
	uint32_t max_services;
	uint32_t max_backends;
	uint32_t max_ct;
	uint32_t max_affinity;
	/* connections one client may hold in weft_ct (ct_source_max of the
	 * programs); 0 = max_ct / 2 / WEFT_CT_SOURCE_SHARE */
	uint32_t ct_source_max;
	/* NetworkPolicy: weft_policy rules (and as many weft_policy_cidrs
	 * prefixes) and weft_policy_ct connections (0: the defaults of
	 * bpf/weft_bpf.h), and the connections one client may hold there
	 * (0: max_policy_ct / WEFT_POLICY_CT_SOURCE_SHARE) */
	uint32_t max_policy;
	uint32_t max_policy_ct;
	uint32_t policy_ct_source_max;
	/* maps in memory, no program (above); pin_dir and trace unused */
	bool in_memory;
	/* NULL: nobody is told (the kernel path pays one pointer test) */
	datapath_write_fn *on_write;
	void *on_write_arg;
};

/* Load every program, creating or reusing pinned maps.  *rebuilt (may be
 * NULL) is set when any map was created rather than reused.  On failure
 * returns -errno and writes a message naming the pin dir or program. */
int datapath_open(const struct datapath_opts *opts, struct datapath **out, bool *rebuilt,
		  char *errbuf, size_t errlen) __attribute__((warn_unused_result));
void datapath_close(struct datapath *dp);	/* accepts NULL */

/* The pinned name of a map ("weft_endpoints"); NULL beyond the ids. */
const char *datapath_map_name(enum datapath_map_id map);
/* A map's layout, the same on both sides: BPF_MAP_TYPE_*, key and value
 * sizes (a per-CPU map's: one CPU's value) and capacity. */
struct datapath_map_layout {
	uint32_t type;
	uint32_t key_size, value_size, max_entries;
};
int datapath_map_layout(struct datapath *dp, enum datapath_map_id map,
			struct datapath_map_layout *out);
/* Entries of an in-memory datapath's map (-EOPNOTSUPP for the kernel's,
 * where counting is a walk). */
int64_t datapath_map_count(struct datapath *dp, enum datapath_map_id map);
/* Bytes the maps of an in-memory datapath hold (0 for the kernel's). */
size_t datapath_memory_bytes(struct datapath *dp);

/* Remove every weft pin under pin_dir (and the directory if empty). */
int datapath_unpin(const char *pin_dir);

/* tc clsact, replacing a weft filter already there: a pod's host veth gets
 * pod_ingress at ingress and pod_egress at egress, the VXLAN device
 * vxlan_ingress at ingress.  In memory: 0, and nothing is attached. */
int datapath_attach_pod(struct datapath *dp, int ifindex) __attribute__((warn_unused_result));
int datapath_attach_vxlan(struct datapath *dp, int ifindex) __attribute__((warn_unused_result));
/* node_ingress at the underlay device (NodePorts and VIPs from outside) */
int datapath_attach_node(struct datapath *dp, int ifindex) __attribute__((warn_unused_result));
/* svc_egress at egress of the service device (the node's own connections
 * to cluster IPs and VIPs) */
int datapath_attach_svc(struct datapath *dp, int ifindex) __attribute__((warn_unused_result));
/* Is a weft filter attached at ingress of ifindex?  1 yes, 0 no, -errno.
 * In memory: 1 for any ifindex > 0 (as if every attach had been made). */
int datapath_attached(struct datapath *dp, int ifindex);

int datapath_config_get(struct datapath *dp, struct weft_config *out);
int datapath_config_set(struct datapath *dp, const struct weft_config *cfg);
/* weft_svc_dev: the node's service device (ifindex 0: none) */
int datapath_svc_dev_get(struct datapath *dp, struct weft_svc_dev *out);
int datapath_svc_dev_set(struct datapath *dp, const struct weft_svc_dev *d);

/* Map updates: put creates or replaces; -E2BIG (or -ENOSPC) when the map is
 * full; del of a missing key returns -ENOENT. */
int datapath_endpoint_put(struct datapath *dp, in_addr_t ip, const struct weft_endpoint *ep);
int datapath_endpoint_get(struct datapath *dp, in_addr_t ip, struct weft_endpoint *ep);
int datapath_endpoint_del(struct datapath *dp, in_addr_t ip);
int datapath_ipcache_put(struct datapath *dp, in_addr_t ip, const struct weft_ipcache_entry *e);
int datapath_ipcache_get(struct datapath *dp, in_addr_t ip, struct weft_ipcache_entry *e);
int datapath_ipcache_del(struct datapath *dp, in_addr_t ip);
int datapath_node_put(struct datapath *dp, in_addr_t subnet, int prefixlen,
		      const struct weft_node_entry *e);
int datapath_node_del(struct datapath *dp, in_addr_t subnet, int prefixlen);
/* weft_node_ips: the underlay IPs vxlan_ingress accepts VXLAN from.  The
 * agent keeps every node's IP there, its own included (weft_bpf.h
 * invariant 4); a node missing from it cannot reach this node's pods. */
int datapath_nodeip_put(struct datapath *dp, in_addr_t ip, uint32_t node_id);
int datapath_nodeip_del(struct datapath *dp, in_addr_t ip);

/* Iterate a map (a snapshot of its keys first, so fn may delete).  fn's
 * non-zero return stops the walk and is returned. */
/* The address of the endpoint on host interface ifindex, or 0 (a walk of
 * this node's endpoints: for what is rare, a pod's undo or a trace). */
in_addr_t datapath_endpoint_at(struct datapath *dp, uint32_t ifindex);
int datapath_endpoint_foreach(struct datapath *dp,
			      int (*fn)(in_addr_t ip, const struct weft_endpoint *ep, void *arg),
			      void *arg);
int datapath_ipcache_foreach(struct datapath *dp,
			     int (*fn)(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg),
			     void *arg);
int datapath_node_foreach(struct datapath *dp,
			  int (*fn)(in_addr_t subnet, int prefixlen, const struct weft_node_entry *e,
				    void *arg),
			  void *arg);
int datapath_nodeip_foreach(struct datapath *dp,
			    int (*fn)(in_addr_t ip, uint32_t node_id, void *arg), void *arg);

/* Services (bpf/weft_bpf.h, "Services").  Same conventions as above. */
int datapath_service_put(struct datapath *dp, const struct weft_svc_key *k,
			 const struct weft_svc_value *v);
int datapath_service_get(struct datapath *dp, const struct weft_svc_key *k, struct weft_svc_value *v);
int datapath_service_del(struct datapath *dp, const struct weft_svc_key *k);
int datapath_backend_put(struct datapath *dp, uint32_t id, const struct weft_backend *b);
int datapath_backend_get(struct datapath *dp, uint32_t id, struct weft_backend *b);
int datapath_backend_del(struct datapath *dp, uint32_t id);
int datapath_ct_get(struct datapath *dp, const struct weft_ct_key *k, struct weft_ct_entry *e);
int datapath_ct_put(struct datapath *dp, const struct weft_ct_key *k, const struct weft_ct_entry *e);
int datapath_ct_del(struct datapath *dp, const struct weft_ct_key *k);
int datapath_affinity_del(struct datapath *dp, const struct weft_affinity_key *k);
/* Per-client connection counts: weft_ct_opened (the programs') and
 * weft_ct_closed (the agent's; add adds n to it, creating it at 0).  A
 * client holds opened - closed connections; get of a missing key is
 * -ENOENT. */
int datapath_ct_opened_get(struct datapath *dp, in_addr_t client, uint64_t *n);
int datapath_ct_closed_get(struct datapath *dp, in_addr_t client, uint64_t *n);
int datapath_ct_closed_add(struct datapath *dp, in_addr_t client, uint64_t n);
/* Forget a client whose counts are equal (no connection held): both
 * entries deleted.  -EBUSY when they differ. */
int datapath_ct_source_forget(struct datapath *dp, in_addr_t client);
int datapath_ct_closed_foreach(struct datapath *dp,
			       int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg);
/* The cap the programs were loaded with. */
uint32_t datapath_ct_source_max(struct datapath *dp);
/* The capacities the maps were loaded with. */
void datapath_capacities(struct datapath *dp, uint32_t *services, uint32_t *backends, uint32_t *ct);
int datapath_service_foreach(struct datapath *dp,
			     int (*fn)(const struct weft_svc_key *k, const struct weft_svc_value *v,
				       void *arg),
			     void *arg);
int datapath_backend_foreach(struct datapath *dp,
			     int (*fn)(uint32_t id, const struct weft_backend *b, void *arg),
			     void *arg);
int datapath_ct_foreach(struct datapath *dp,
			int (*fn)(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg),
			void *arg);

/* NetworkPolicy (bpf/weft_bpf.h, "NetworkPolicy"; datapath_policy.c).
 * Same conventions as above.  A rule key's prefixlen says which of proto
 * and port it fixes (WEFT_POLICY_PREFIX_*, or 96 - k for 2^k ports). */
int datapath_policy_put(struct datapath *dp, const struct weft_policy_key *k,
			const struct weft_policy_value *v);
int datapath_policy_del(struct datapath *dp, const struct weft_policy_key *k);
int datapath_policy_foreach(struct datapath *dp,
			    int (*fn)(const struct weft_policy_key *k, const struct weft_policy_value *v,
				      void *arg),
			    void *arg);
/* A prefix of rule set policy_id's ipBlocks in direction dir
 * (WEFT_POLICY_*), addr in network order, and its CIDR identity. */
int datapath_policy_cidr_put(struct datapath *dp, uint32_t policy_id, int dir, in_addr_t addr,
			     int prefixlen, uint32_t id);
int datapath_policy_cidr_del(struct datapath *dp, uint32_t policy_id, int dir, in_addr_t addr,
			     int prefixlen);
int datapath_policy_cidr_foreach(struct datapath *dp,
				 int (*fn)(uint32_t policy_id, int dir, in_addr_t addr, int prefixlen,
					   uint32_t id, void *arg),
				 void *arg);
int datapath_policy_ct_get(struct datapath *dp, const struct weft_ct_key *k,
			   struct weft_policy_ct_entry *e);
int datapath_policy_ct_put(struct datapath *dp, const struct weft_ct_key *k,
			   const struct weft_policy_ct_entry *e);
int datapath_policy_ct_del(struct datapath *dp, const struct weft_ct_key *k);
/* In batches, as datapath_ct_foreach. */
int datapath_policy_ct_foreach(struct datapath *dp,
			       int (*fn)(const struct weft_ct_key *k,
					 const struct weft_policy_ct_entry *e, void *arg),
			       void *arg);
/* weft_policy_ct's per-client counts, as datapath_ct_opened_get & co. */
int datapath_policy_ct_opened_get(struct datapath *dp, in_addr_t client, uint64_t *n);
int datapath_policy_ct_closed_add(struct datapath *dp, in_addr_t client, uint64_t n);
int datapath_policy_ct_source_forget(struct datapath *dp, in_addr_t client);
int datapath_policy_ct_closed_foreach(struct datapath *dp,
				      int (*fn)(in_addr_t client, uint64_t closed, void *arg),
				      void *arg);
uint32_t datapath_policy_ct_source_max(struct datapath *dp);
/* weft_policy_log, the ring buffer of policy verdicts (for ring_buffer__new);
 * -EOPNOTSUPP in memory (ring_buffer__new fails: no policy log) */
int datapath_policy_log_fd(struct datapath *dp);
void datapath_policy_capacities(struct datapath *dp, uint32_t *rules, uint32_t *ct);

/* Sum of weft_drops over CPUs. */
int datapath_drops(struct datapath *dp, uint64_t out[WEFT_DROP_MAX]);
extern const char *const datapath_drop_names[WEFT_DROP_MAX];

/* For tests: program fds (BPF_PROG_TEST_RUN; -EOPNOTSUPP in memory) and
 * the trace entry. */
int datapath_pod_prog_fd(struct datapath *dp);
int datapath_vxlan_prog_fd(struct datapath *dp);
int datapath_node_prog_fd(struct datapath *dp);
int datapath_pod_egress_prog_fd(struct datapath *dp);
int datapath_svc_prog_fd(struct datapath *dp);
int datapath_trace_read(struct datapath *dp, struct weft_trace *out);	/* summed over CPUs: the one that ran */
int datapath_trace_reset(struct datapath *dp);

/* A trace: one frame through one of the loaded programs, as it is, with
 * the live maps (BPF_PROG_TEST_RUN with WEFT_TRACE_MARK: the programs
 * record their steps in weft_trace and write none of their own state;
 * nothing is sent).  ifindex is the device the frame comes in on (0: none
 * of this namespace's); cb the tunnel key vxlan_ingress reads in a trace
 * (cb[0] the VNI, cb[1] the sending node, host order).  The program is
 * armed for the run (its trace_armed, bpf/lib/trace.h) and disarmed
 * after: traffic meanwhile pays a lookup, else nothing.  One at a time:
 * the caller serializes (weft_trace is one entry per CPU, and the arming
 * is the program's). */
enum datapath_prog { DATAPATH_PROG_POD, DATAPATH_PROG_VXLAN, DATAPATH_PROG_NODE,
		     DATAPATH_PROG_POD_EGRESS, DATAPATH_PROG_SVC };
#define DATAPATH_TRACE_FRAME_MAX 256
struct datapath_trace {
	int action;			/* the program's return: TC_ACT_* */
	unsigned char frame[DATAPATH_TRACE_FRAME_MAX];	/* as it left the program */
	size_t len;
	struct weft_trace steps;
};
/* The flow log (bpf/weft_bpf.h, "The flow log"): weft_flows, the ring
 * buffer of struct weft_flow (for ring_buffer__new; -EOPNOTSUPP in
 * memory), and whether the programs report forwarded packets too (on:
 * someone listens) or drops only.  0 or -errno (some program not told). */
int datapath_flows_fd(struct datapath *dp);
/* Events the programs did not report (over their rate, or the ring full),
 * summed over CPUs. */
int datapath_flows_suppressed(struct datapath *dp, uint64_t *n) __attribute__((warn_unused_result));
int datapath_flows_listen(struct datapath *dp, bool on) __attribute__((warn_unused_result));

int datapath_trace_run(struct datapath *dp, enum datapath_prog prog, uint32_t ifindex,
		       const uint32_t cb[2], const void *frame, size_t len, struct datapath_trace *out)
	__attribute__((warn_unused_result));

#endif
