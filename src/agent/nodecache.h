/*
 * nodecache.h — the agent's cache of the cluster's nodes, as their
 * HostSubnets say them (name, subnet, hostIP, nodeID; sync.c writes it,
 * node.c reads it to prune routes), indexed so that no event and no map
 * entry scans it:
 *
 *	by name            nodecache_find
 *	by subnet          nodecache_by_subnet, _next_subnet  (exact)
 *	containing an IP   nodecache_containing   the longest subnet holding
 *	                                          it: one probe per prefix
 *	                                          length in use (one, usually)
 *	by node IP         nodecache_by_ip, _next_ip
 *
 * Two nodes may claim one subnet or IP for a while (one re-registered,
 * the other not yet deleted): the subnet and IP indexes keep both.
 *
 * Relists are one pass: nodecache_begin_list() starts a generation,
 * nodecache_set() marks the node with it, nodecache_sweep() deletes every
 * node not marked since.
 *
 * Ownership: the cache owns the records; a record's address stays the
 * same across nodecache_set() until it is deleted (nodecache_del,
 * nodecache_sweep, nodecache_free).  A zeroed cache is empty.  Not
 * thread-safe: the agent calls it under agent.lock.
 */
#ifndef WEFT_AGENT_NODECACHE_H
#define WEFT_AGENT_NODECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "lib/cidr.h"
#include "lib/hmap.h"

struct nodecache_node {
	struct hmap_node by_name, by_subnet, by_ip;
	in_addr_t ip;			/* hostIP (the Node's InternalIP), network order */
	struct cidr subnet;		/* host order (lib/cidr) */
	uint32_t id;			/* nodeID, 0 none */
	uint32_t gen;			/* the list (or event after it) that set it last */
	char name[];
};

struct nodecache {
	struct hmap names, subnets, ips;
	uint32_t nlen[33];		/* nodes per subnet prefix length */
	uint32_t gen;
};

/* What a HostSubnet says, as nodecache_set() takes it (name borrowed). */
struct nodecache_in {
	const char *name;
	in_addr_t ip;
	struct cidr subnet;
	uint32_t id;
};

struct nodecache_node *nodecache_find(const struct nodecache *c, const char *name);
/* Add or update node in->name and mark it seen by the current list.  The
 * record, or NULL with errno ENOMEM (the cache unchanged). */
struct nodecache_node *nodecache_set(struct nodecache *c, const struct nodecache_in *in);
/* Mark n seen by the current list (a HostSubnet that did not change). */
void nodecache_mark(struct nodecache *c, struct nodecache_node *n);
void nodecache_del(struct nodecache *c, struct nodecache_node *n);
size_t nodecache_count(const struct nodecache *c);

/* The nodes whose subnet is s exactly: the first (NULL none), the next. */
struct nodecache_node *nodecache_by_subnet(const struct nodecache *c, const struct cidr *s);
struct nodecache_node *nodecache_next_subnet(const struct nodecache_node *n);
/* A node whose subnet holds ip (host order), the longest such subnet. */
struct nodecache_node *nodecache_containing(const struct nodecache *c, uint32_t ip);
/* The nodes with this hostIP (network order). */
struct nodecache_node *nodecache_by_ip(const struct nodecache *c, in_addr_t ip);
struct nodecache_node *nodecache_next_ip(const struct nodecache_node *n);

/* Every node, in no order; n may be deleted once its next is taken. */
struct nodecache_node *nodecache_first(const struct nodecache *c);
struct nodecache_node *nodecache_next(const struct nodecache *c, const struct nodecache_node *n);

void nodecache_begin_list(struct nodecache *c);
/* Delete every node not set since nodecache_begin_list(), calling gone
 * first (which must not change the cache). */
void nodecache_sweep(struct nodecache *c, void (*gone)(void *arg, const struct nodecache_node *n), void *arg);
void nodecache_free(struct nodecache *c);

#endif
