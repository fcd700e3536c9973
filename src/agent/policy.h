/*
 * policy.h — the agent's NetworkPolicy compiler: from the cluster's
 * Namespaces, Pods and NetworkPolicies to this node's policy maps
 * (bpf/weft_bpf.h, "NetworkPolicy").
 *
 * What it writes, and in which order (policy_apply):
 *
 *	1. identities: one per distinct (namespace, labels, named ports) of a
 *	   pod; the numbers are kept while any pod has them, and never reused
 *	2. every policy's peers matched against the identities (a cache: a
 *	   new pod costs one match per peer of the cluster, a changed policy
 *	   one per identity for each of its peers)
 *	3. a rule set (a "class") for each identity of a pod on this node:
 *	   isolation flags, the weft_policy keys of the policies that select
 *	   it, and the prefixes of their ipBlocks (weft_policy_cidrs, under
 *	   the set's ID); compared with what is written:
 *	     same ──────────────────────── nothing written
 *	     only keys added, or only
 *	     removed (same flags and
 *	     prefixes) ─────────────────── those keys, in place
 *	     else ──────────────────────── the whole set (prefixes, then
 *	                                    keys) under a new policy ID, the
 *	                                    endpoints moved over one write
 *	                                    each, then the old set deleted
 *	4. the identity in weft_ipcache of each pod whose identity changed
 *
 * So an endpoint never sees a half-written rule set, and a change costs
 * writes in proportion to what changed.
 *
 * The inputs come from the watches (sync.c) and the CNI server (pod.c):
 * each call records and marks the state dirty; policy_apply() (the
 * policy thread, woken by policy_kick(), or a CNI ADD for its own pod)
 * brings the maps level with it.  Writers of weft_endpoints and
 * weft_ipcache entries go through policy_endpoint_write() and
 * policy_ipcache_write(), which fill in the policy fields under the same
 * lock, so no update is lost between them and policy_apply().
 *
 * Map full: a rule set that does not fit is not half-written; the
 * endpoints keep their old set (a new pod gets an empty one, which
 * denies what isolation denies, with WEFT_EP_F_POLICY_FULL so that the
 * drops say why), and policy_stats() counts it for the Node's report.
 *
 * Thread-safety: every call takes the policy's lock.  Ownership: the
 * policy copies what it keeps from the JSON it is given.
 */
#ifndef WEFT_AGENT_POLICY_H
#define WEFT_AGENT_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "bpf/weft_bpf.h"

struct datapath;
struct policy;

/* On a Namespace (its pods) or a NetworkPolicy (the pods it selects): log
 * the verdicts on their new connections: "all", "deny" or "allow". */
#define POLICY_LOG_ANNOTATION "weft.io/policy-log"

struct policy_stats {
	size_t identities;	/* in use */
	size_t policies;
	size_t classes;		/* rule sets written (identities of local pods) */
	size_t rules;		/* weft_policy keys written */
	size_t cidrs;		/* weft_policy_cidrs prefixes written */
	uint64_t applies;	/* policy_apply runs that wrote something */
	uint64_t writes;	/* map writes and deletes, in all */
	uint64_t map_full;	/* rule sets refused for lack of room */
	uint64_t bad_policies;	/* NetworkPolicies that did not parse (ignored) */
	uint64_t computed;	/* rule sets computed whole */
	uint64_t patched;	/* rule sets brought up to date with just the keys
				 * of identities new or gone */
};

struct policy *policy_create(struct datapath *dp);	/* NULL with errno */
void policy_destroy(struct policy *p);			/* accepts NULL */

/* Inputs.  A stored object each (borrowed); del by name.  *_listed():
 * after a full list, forget what the list did not have (mark: every set
 * since the last *_begin_list). */
void policy_namespace_set(struct policy *p, const json_t *ns);
void policy_namespace_del(struct policy *p, const char *name);
void policy_pod_set(struct policy *p, const json_t *pod);
void policy_pod_del(struct policy *p, const char *ns, const char *name);
void policy_netpol_set(struct policy *p, const json_t *np);
void policy_netpol_del(struct policy *p, const char *ns, const char *name);
/* Other nodes' pods as policy peers, from the PodPeerSlices (sync.c,
 * peerslice.c) while policy_needs_pods: the same as a Pod of this node's
 * watch, without the object: address (0 none), labels and the spec whose
 * containers' ports name ports (borrowed).  A pod is the last setter's:
 * policy_pod_del forgets only what policy_pod_set set last, and
 * policy_peer_del only a peer; each list (POLICY_PODS, POLICY_PEERS)
 * sweeps only its own. */
void policy_peer_set(struct policy *p, const char *ns, const char *name, in_addr_t ip, const json_t *labels,
		     const json_t *spec);
void policy_peer_del(struct policy *p, const char *ns, const char *name);
enum policy_kind { POLICY_NAMESPACES, POLICY_PODS, POLICY_NETPOLS, POLICY_PEERS, POLICY_KINDS };
void policy_begin_list(struct policy *p, enum policy_kind k);
void policy_listed(struct policy *p, enum policy_kind k);
/* The Namespaces, Pods and NetworkPolicies lists applied once: until then
 * policy_apply writes nothing (a partial view would isolate too much or
 * too little). */
bool policy_synced(struct policy *p);
/* The peers' list (POLICY_PEERS listed) makes every pod of the cluster
 * known; policy_peers_forget (their watch ends: no policy names pods as
 * peers) makes them unknown again.  While a policy names pods as peers
 * and they are unknown, policy_apply writes nothing: a rule set computed
 * from a part of the cluster would drop what its peers are allowed, and a
 * restarted agent would number anew the pods it had not yet seen. */
void policy_peers_forget(struct policy *p);
/* Does the node know every pod its policies need: no policy names pods
 * as peers, or the peers' list is in?  (The one record of it: the agent's
 * readiness and its ipcache sweep ask here.) */
bool policy_pods_known(struct policy *p);

/* Does some NetworkPolicy name pods as peers (podSelector or
 * namespaceSelector in a rule), or a named port in an egress rule (which
 * the destination pod resolves)?  Then the node needs every pod of the
 * cluster (its identity), not only its own: sync.c watches the
 * PodPeerSlices too. */
bool policy_needs_pods(struct policy *p);

/* A pod of this node (its lease): ip is its address, ns/name its Pod.
 * Known pods get their identity's rule set; del forgets it. */
void policy_local_set(struct policy *p, in_addr_t ip, const char *ns, const char *name);
void policy_local_del(struct policy *p, in_addr_t ip);
/* Is the Pod ns/name known (from the watch, or policy_pod_set)? */
bool policy_pod_known(struct policy *p, const char *ns, const char *name);
/* Does a NetworkPolicy of namespace ns (parsed) exist, which may select
 * any pod of it? */
bool policy_namespace_has_policies(struct policy *p, const char *ns);

/* Bring the maps level with the inputs (the order above).  0; 1 when it
 * wrote nothing because the inputs are not all known yet (policy_synced,
 * policy_peers_forget: the list that completes them is worth another
 * call); or -errno (a map write failed: what could not be written is
 * retried by the next call). */
int policy_apply(struct policy *p);

/* Write ep (resp. e) for ip with its policy fields filled from the
 * current state: policy_id, WEFT_EP_F_ISOLATE_* (resp. identity).  A new
 * endpoint of a known Pod whose rule set waits for the peers is isolated
 * both ways until policy_apply computes it.  As datapath_endpoint_put
 * (resp. datapath_ipcache_put). */
int policy_endpoint_write(struct policy *p, in_addr_t ip, struct weft_endpoint *ep);
int policy_ipcache_write(struct policy *p, in_addr_t ip, struct weft_ipcache_entry *e);

/* Start-up: adopt the numbers the maps already hold (identities from
 * weft_ipcache, rule sets from weft_policy and weft_endpoints), so that a
 * restarted agent that finds the same cluster writes nothing and traffic
 * sees no change.  Call before the first policy_apply. */
int policy_adopt(struct policy *p);

/* The policies (ns/name) that rule number `rule` (weft_policy_value)
 * stands for, into buf ("" when unknown). */
void policy_rule_name(struct policy *p, uint32_t rule, char *buf, size_t len);

/* "ns/name" of the pod with address ip, or the address. */
void policy_describe_addr(struct policy *p, in_addr_t ip, char *buf, size_t len);

void policy_stats(struct policy *p, struct policy_stats *st);

#endif
