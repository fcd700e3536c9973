/*
 * ipam.h — node-local pod IP leases from the node's subnet, persisted in a
 * directory before a caller replies, as the reference host-local plugin
 * keeps them (one file per leased IP), so an agent restart or a controller
 * outage loses nothing.
 *
 * Allocation is round-robin: the search starts after the last IP handed out
 * (remembered in the directory), so a released IP is not reused at once.
 * The network address, the gateway (first host) and the broadcast address
 * are never handed out: a /29 gives 5 pods.
 *
 * Invariants:
 *  1. A lease file exists iff the IP is leased; it is written completely
 *     (temporary file, then link(2) to its final name) before ipam_alloc()
 *     returns, so a crash leaves either no lease or a whole one.
 *  2. At most one lease per (container ID, ifname).
 *  3. Every leased IP lies inside the subnet and is none of the excluded.
 *
 * Thread-safety: every call takes the handle's mutex, so parallel CNI ADDs
 * on one node get distinct IPs.  Errors: 0 or -errno, message in errbuf.
 *
 * Addresses: every in_addr_t here is in network byte order, as in struct
 * in_addr (inet_addr(), inet_ntop() and the BPF maps use it as is).
 *
 * The directory (ipam.c explains the mechanics):
 *   <dotted IP>        a lease; JSON {container_id, ifname, pod_namespace,
 *                      pod_name, host_ifname, netns, created}
 *   last_reserved_ip   where the next round-robin search starts (a hint:
 *                      losing it only moves that start)
 *   <dotted IP>.bad    a quarantined lease file (below)
 *   .tmp.<pid>.<n>     a file being written; stale ones are removed on open
 * Other names are left alone.
 *
 * Durability: no fsync.  A lease must outlive an agent crash, and the page
 * cache does that; a machine crash takes every pod down with it, and the
 * runtime adds them again (a lease lost that way is re-created, one that
 * survives is found again by its owner with -EEXIST).
 *
 * Quarantine: ipam_open() renames a lease file it cannot use (unreadable,
 * not JSON, missing or oversized fields, or a second lease for an owner
 * that already has an older one) to <ip>.bad and goes on.  Its IP stays out
 * of circulation while <ip>.bad exists, since a pod may still be using it:
 * an operator checks and deletes the file to return the IP, and the next
 * ipam_refresh_quarantine() puts it back in the pool (no restart).
 * A file named by the network, gateway or broadcast address is never a
 * lease this directory made (those are never handed out): it is renamed
 * the same way and listed, but holds no address.  ipam_foreach_quarantined()
 * lists every quarantined file with its reason.  A <ip>.bad file made by
 * hand while the handle is open is seen by the next ipam_open() only: the
 * handle does not scan the directory again (O(leases) per look).
 *
 * Processes: one directory belongs to one agent.  A second handle on it
 * (another process) never gets an IP the first holds, because link(2)
 * refuses an existing name, but each handle's index knows only its own
 * leases and those that existed when it was opened.
 */
#ifndef WEFT_AGENT_IPAM_H
#define WEFT_AGENT_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>

#define IPAM_ID_MAX 256

/* Who holds a lease: everything the agent needs to rebuild a pod after a
 * restart, stored in the lease file as JSON. */
struct ipam_owner {
	char container_id[IPAM_ID_MAX];
	char ifname[16];
	char pod_namespace[IPAM_ID_MAX];	/* "" when the runtime gave none */
	char pod_name[IPAM_ID_MAX];
	char host_ifname[16];		/* host end of the veth */
	char netns[4096];		/* CNI_NETNS as given */
};

struct ipam_lease {
	in_addr_t ip;
	struct ipam_owner owner;
	time_t created;
};

struct ipam;

/* Open (creating) the lease directory dir for subnet/prefixlen.  Leases
 * (and <ip>.bad files) found there that lie outside the subnet are an error
 * (-EINVAL, naming the file): the node's subnet changed under its state.
 * prefixlen 8..30.  A file named by the network, gateway or broadcast
 * address is quarantined instead (a stray file, not a changed subnet).
 * On success errbuf is "" or, when this call quarantined lease files, says
 * which (a summary; ipam_foreach_quarantined() lists them all).  *out is
 * the caller's: ipam_close(). */
int ipam_open(const char *dir, in_addr_t subnet, int prefixlen, struct ipam **out,
	      char *errbuf, size_t errlen) __attribute__((warn_unused_result));
void ipam_close(struct ipam *ipam);		/* accepts NULL */

in_addr_t ipam_gateway(const struct ipam *ipam);	/* first host */

/* Lease an IP for owner; persisted before return.  -EEXIST (and *ip set to
 * the existing lease) when owner's (container_id, ifname) already holds
 * one; -ENOSPC when the subnet is full. */
int ipam_alloc(struct ipam *ipam, const struct ipam_owner *owner, in_addr_t *ip)
	__attribute__((warn_unused_result));
/* Update the owner data of an existing lease (e.g. host_ifname once known);
 * created is kept.  -ENOENT when ip is not leased, -EEXIST when the new
 * (container_id, ifname) holds another lease. */
int ipam_update(struct ipam *ipam, in_addr_t ip, const struct ipam_owner *owner);
/* Release the lease of (container_id, ifname): 0, or -ENOENT when none. */
int ipam_release(struct ipam *ipam, const char *container_id, const char *ifname);
int ipam_release_ip(struct ipam *ipam, in_addr_t ip);
/* Copy a lease into *out: 0, or -ENOENT. */
int ipam_find(struct ipam *ipam, const char *container_id, const char *ifname,
	      struct ipam_lease *out);
int ipam_find_ip(struct ipam *ipam, in_addr_t ip, struct ipam_lease *out);
/* Call fn for every lease (on a snapshot: fn may release), in IP order; a
 * non-zero return from fn stops the walk and is returned.  -ENOMEM. */
int ipam_foreach(struct ipam *ipam, int (*fn)(const struct ipam_lease *l, void *arg), void *arg);
size_t ipam_used(struct ipam *ipam);
size_t ipam_capacity(const struct ipam *ipam);	/* hosts minus gateway */

/* IPs held by quarantined lease files (<ip>.bad): not leased, never handed
 * out, not counted by ipam_used(). */
size_t ipam_quarantined(struct ipam *ipam);

#define IPAM_REASON_MAX 160

/* One quarantined file, as ipam_foreach_quarantined() and
 * ipam_refresh_quarantine() hand it to their callback (borrowed: valid
 * during the call). */
struct ipam_quarantine {
	in_addr_t ip;			/* the address the file is named by */
	/* the IP is a pool address held out of circulation; false for the
	 * network, gateway and broadcast addresses (never handed out) */
	bool held;
	char file[PATH_MAX + 24];	/* "<dir>/<ip>.bad" */
	/* why: what this handle's ipam_open() found wrong with the lease
	 * file, or "quarantined before this start" for a .bad file it found */
	char reason[IPAM_REASON_MAX];
};

/* Call fn for every quarantined file (on a snapshot), in IP order; a
 * non-zero return from fn stops the walk and is returned.  -ENOMEM. */
int ipam_foreach_quarantined(struct ipam *ipam,
			     int (*fn)(const struct ipam_quarantine *q, void *arg), void *arg);

/* Look again at each quarantined file: one that is gone (the operator
 * deleted it) is forgotten, and its IP returns to the pool.  fn (or NULL)
 * is called for each, after the lock is released.  Returns how many were
 * forgotten, or -ENOMEM.  One fstatat(2) per quarantined file, no
 * directory scan: cheap enough to call every few seconds. */
int ipam_refresh_quarantine(struct ipam *ipam,
			    void (*fn)(const struct ipam_quarantine *q, void *arg), void *arg);

/* The counts every report uses (CNI errors, the Node annotation, metrics),
 * taken together under the lock so they add up:
 * leases + quarantined <= capacity, and ipam_alloc() refuses at equality. */
struct ipam_stats {
	size_t leases;			/* ipam_used() */
	size_t quarantined;		/* ipam_quarantined(): pool IPs held */
	size_t capacity;		/* ipam_capacity() */
	size_t quarantine_files;	/* .bad files listed, held or not */
	size_t stale_tmp_removed;	/* by ipam_open() */
	/* File operations after a commit that failed without undoing it: a
	 * last_reserved_ip write, a temporary file's removal.  The calls that
	 * met them succeeded; the next ipam_open() repairs what they left. */
	size_t cleanup_errors;
};
void ipam_stats(struct ipam *ipam, struct ipam_stats *out);

/* Quarantine settled by what the node shows (pod.c's start-up GC and
 * reconciliation: a pod's veth, MAC and address say which IP it holds).
 *
 * ipam_is_quarantined    is ip held by <ip>.bad?
 * ipam_quarantined_lease the lease <ip>.bad still holds, if it parses:
 *                        0, -ENOENT (not quarantined), -EINVAL (unusable)
 * ipam_quarantine        the lease of ip becomes <ip>.bad (its IP stays
 *                        out of circulation): 0, -ENOENT (no lease)
 * ipam_reclaim           the quarantined ip becomes owner's lease again
 *                        (written, then <ip>.bad removed): 0, -ENOENT
 *                        (not quarantined), -EEXIST (owner holds another) */
bool ipam_is_quarantined(struct ipam *ipam, in_addr_t ip);
int ipam_quarantined_lease(struct ipam *ipam, in_addr_t ip, struct ipam_lease *out);
int ipam_quarantine(struct ipam *ipam, in_addr_t ip);
int ipam_reclaim(struct ipam *ipam, in_addr_t ip, const struct ipam_owner *owner, time_t created);

#endif
