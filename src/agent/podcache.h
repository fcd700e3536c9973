/*
 * podcache.h — the agent's cache of the cluster's Pods and of the
 * namespaces they live in (each with its NetNamespace's VNID), indexed so
 * that no event scans it (sync.c writes it, report.c and pod.c read it):
 *
 *	by namespace/name  podcache_find              hash of both names
 *	by IP              podcache_by_ip, _next_ip   several pods may hold one
 *	                                              IP for a while (a deleted
 *	                                              pod's, then a new one's)
 *	by namespace       podcache_ns_find, then     a NetNamespace change
 *	                   podcache_group_first,      re-tags that namespace's
 *	                   _next                      pods only
 *	by node name       podcache_node_find, then   the reporter reads its own
 *	                   podcache_group_first,      node's pods only
 *	                   _next
 *
 * Records are small and sized to their name: a pod holds its name, IP,
 * generation and its namespace and node as pointers to shared group
 * records (one per namespace and per node name).  Its container ID is
 * kept only when the pod is on the cache's own node (self): nothing reads
 * it of other nodes' pods.  So the cache costs
 * about 150 bytes a pod, and what grows with the cluster beyond that is
 * nothing.
 *
 * Relists are one pass: podcache_begin_list() starts a generation of its
 * scope, podcache_set() marks the pod with its scope's, podcache_sweep()
 * deletes every pod of its scope not marked since (O(pods), whatever was
 * deleted; O(own pods) for this node's).  The own node's pods and the
 * other nodes' have a generation each, so two lists, one of each, may
 * interleave (a list comes in pages, and the lock is free between them):
 * neither's begin makes the other's marks stale.  NetNamespaces the
 * same with podcache_begin_netns_list() / podcache_netns_sweep().
 *
 * Ownership: the cache owns every record.  A pod record's address stays
 * the same across podcache_set() until the pod is deleted (podcache_del,
 * podcache_sweep, podcache_free).  A group record lives while a pod (or,
 * for a namespace, a NetNamespace) names it.  Strings passed in are
 * copied; self is borrowed for the cache's life.  Not thread-safe: the
 * agent calls it under agent.lock.
 */
#ifndef WEFT_AGENT_PODCACHE_H
#define WEFT_AGENT_PODCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "lib/dlist.h"
#include "lib/hmap.h"

/* A namespace or a node name, with its pods. */
struct podcache_group {
	struct hmap_node by_name;
	struct dlist pods;		/* struct podcache_pod .in_ns or .in_node */
	size_t npods;
	uint32_t vnid;			/* namespaces: valid when netns */
	uint32_t gen;			/* namespaces: NetNamespace list that saw it */
	bool netns;			/* namespaces: a NetNamespace gives its VNID */
	bool of_node;			/* a node's group (pods linked by in_node) */
	char name[];
};

struct podcache_pod {
	struct hmap_node by_name;
	struct hmap_node by_ip;		/* indexed when ip != 0 */
	struct dlist in_ns, in_node;
	struct podcache_group *ns;
	struct podcache_group *node;	/* spec.nodeName ("" unscheduled) */
	char *container_id;		/* pods of self only, else NULL */
	in_addr_t ip;			/* status.podIP, network order; 0 none */
	uint32_t gen;			/* its scope's list (or event after it) that set it last */
	char name[];
};

struct podcache {
	struct hmap pods;		/* by namespace/name */
	struct hmap ips;		/* pods with an IP, by IP */
	struct hmap nss;		/* groups by namespace */
	struct hmap nodes;		/* groups by node name */
	const char *self;		/* this node's name (borrowed), or NULL */
	uint32_t gen_self, gen_others;	/* the lists of each scope (podcache_begin_list) */
	uint32_t netns_gen;
};

/* What a Pod says, as podcache_set() takes it (strings borrowed). */
struct podcache_in {
	const char *ns, *name, *node;	/* node "" when unscheduled */
	const char *container_id;	/* kept for pods of self only */
	in_addr_t ip;
};

/* A zeroed cache is empty and keeps no container IDs; init names self. */
void podcache_init(struct podcache *c, const char *self);
void podcache_free(struct podcache *c);
size_t podcache_count(const struct podcache *c);

/* ---- pods ---- */
struct podcache_pod *podcache_find(const struct podcache *c, const char *ns, const char *name);
/* Add or update pod in->ns/in->name and mark it seen by the current
 * list.  The record, or NULL with errno ENOMEM (the cache unchanged). */
struct podcache_pod *podcache_set(struct podcache *c, const struct podcache_in *in);
void podcache_del(struct podcache *c, struct podcache_pod *p);
/* The pods holding ip: the first (NULL none), then the next after p. */
struct podcache_pod *podcache_by_ip(const struct podcache *c, in_addr_t ip);
struct podcache_pod *podcache_next_ip(const struct podcache_pod *p);
/* Every pod, in no order; p may be deleted once its next is taken. */
struct podcache_pod *podcache_first(const struct podcache *c);
struct podcache_pod *podcache_next(const struct podcache *c, const struct podcache_pod *p);
/* "" unless p is a pod of self. */
const char *podcache_container_id(const struct podcache_pod *p);

/* ---- relists ---- */
/* Two lists may feed one cache, each its own part: the Pods of this node
 * (SELF: its pods only are walked) and the other nodes' pods as policy
 * peers (OTHERS: every pod is walked, self's skipped); EVERY is both. */
enum podcache_scope { PODCACHE_EVERY, PODCACHE_SELF, PODCACHE_OTHERS };
/* A new generation of scope's pods: a list of them begins. */
void podcache_begin_list(struct podcache *c, enum podcache_scope scope);
/* Delete every pod of scope not set since podcache_begin_list(scope),
 * calling gone first (which must not change the cache). */
void podcache_sweep(struct podcache *c, enum podcache_scope scope,
		    void (*gone)(void *arg, const struct podcache_pod *p), void *arg);
/* Is p a pod of self (the node named at podcache_init)? */
bool podcache_is_self(const struct podcache *c, const struct podcache_pod *p);

/* ---- groups ---- */
/* The group of namespace ns, of node name node; NULL when no pod (nor,
 * for a namespace, a NetNamespace) names it. */
struct podcache_group *podcache_ns_find(const struct podcache *c, const char *ns);
struct podcache_group *podcache_node_find(const struct podcache *c, const char *node);
/* Its pods, in the order they joined: the first (NULL none, or g NULL),
 * then the next after p. */
struct podcache_pod *podcache_group_first(const struct podcache_group *g);
struct podcache_pod *podcache_group_next(const struct podcache_group *g, const struct podcache_pod *p);

/* ---- NetNamespaces: the VNID of a namespace ---- */
/* Set ns's VNID and mark it seen by the current NetNamespace list;
 * *changed: it had none or another.  0 or -ENOMEM. */
int podcache_netns_set(struct podcache *c, const char *ns, uint32_t vnid, bool *changed)
	__attribute__((warn_unused_result));
void podcache_netns_del(struct podcache *c, const char *ns);
/* true and *vnid when a NetNamespace gives ns one. */
bool podcache_vnid(const struct podcache *c, const char *ns, uint32_t *vnid);
void podcache_begin_netns_list(struct podcache *c);
/* Forget the VNIDs not set since podcache_begin_netns_list(): how many. */
size_t podcache_netns_sweep(struct podcache *c);

#endif
