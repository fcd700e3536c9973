/*
 * backend_addrs.h — the addresses of service backends on other nodes, each
 * with how many backends name it and the namespace whose VNID it carries.
 *
 * Why: a node's Pods watch brings its own pods only (unless a policy
 * needs every pod's identity), yet a connection from a pod here to a
 * service is refused here, before any conntrack entry, when the backend
 * chosen is of another tenant (bpf/lib/lb.h, lb_admit: the backend's VNID
 * in weft_ipcache).  So the addresses that EndpointSlices name are known
 * here on their own, from the slices: sync.c writes their weft_ipcache
 * entries, service.c counts them as its backends come and go.
 *
 * A reference counts one backend (service port, address, port); the
 * namespace is the first reference's (an address's backends agree: they
 * are one pod's, whose namespace the slice's targetRef names, or the
 * slice's own).  Lookup and both counts are O(1): hmap by address.
 * How many addresses each /24 holds is counted too, so a new node's
 * subnet is checked for backends a block at a time, not an address at a
 * time (remote_program_in: a subnet of 64 addresses without a backend,
 * one lookup instead of 64).
 *
 * Ownership: the table owns its records; backend_addrs_free() releases
 * them (a zeroed table is empty).  Not thread-safe (agent.lock).
 */
#ifndef WEFT_AGENT_BACKEND_ADDRS_H
#define WEFT_AGENT_BACKEND_ADDRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "lib/hmap.h"
#include "lib/u64map.h"

#define BACKEND_ADDRS_NS_MAX 64	/* a namespace name: a DNS label, <= 63 */

struct backend_addr {
	struct hmap_node node;
	in_addr_t ip;			/* network order */
	uint32_t refs;
	char ns[BACKEND_ADDRS_NS_MAX];
};

struct backend_addrs {
	struct hmap by_ip;
	struct u64map blocks;		/* host-order address >> 8 -> addresses there */
};

/* One more backend at ip, of namespace ns.  0 with *first true when ip
 * was not named before, or -ENOMEM (nothing changed). */
int backend_addrs_ref(struct backend_addrs *t, in_addr_t ip, const char *ns, bool *first)
	__attribute__((warn_unused_result));
/* One backend fewer at ip: true when it was the last (the record is
 * gone), false otherwise or when ip is not named. */
bool backend_addrs_unref(struct backend_addrs *t, in_addr_t ip);
const struct backend_addr *backend_addrs_find(const struct backend_addrs *t, in_addr_t ip);
size_t backend_addrs_count(const struct backend_addrs *t);
/* Whether some address shares ip's /24. */
bool backend_addrs_in_block(const struct backend_addrs *t, in_addr_t ip);
/* Every address, in no order; nothing may be added or removed meanwhile. */
const struct backend_addr *backend_addrs_first(const struct backend_addrs *t);
const struct backend_addr *backend_addrs_next(const struct backend_addrs *t, const struct backend_addr *b);
void backend_addrs_free(struct backend_addrs *t);

#endif
