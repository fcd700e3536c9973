/*
 * conntrack.h — the agent's sweep of weft_ct (conntrack.c): connections
 * expire as pairs, orphans go, and each client's count of connections is
 * kept for the programs' per-client cap (bpf/weft_bpf.h, "Services").
 *
 * Thread-safe against the programs (they keep writing while it runs);
 * one sweep at a time per datapath (the GC thread, or a test).
 */
#ifndef WEFT_AGENT_CONNTRACK_H
#define WEFT_AGENT_CONNTRACK_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "bpf/weft_bpf.h"

struct datapath;

/* timeouts, seconds since the last packet of either entry of a pair */
#define CONNTRACK_TCP_SYN_S		5	/* SYN sent, no answer yet */
#define CONNTRACK_TCP_ESTABLISHED_S	21600
#define CONNTRACK_TCP_CLOSING_S		10	/* FIN (or an outside RST) seen either
						 * way; a pod's RST: the program deletes */
#define CONNTRACK_UDP_S			60
/* An entry without its partner is deleted once it is this old (ticks): a
 * program writes REV, then FWD, microseconds apart, and the sweep must
 * not take the first half of a connection being made for an orphan. */
#define CONNTRACK_ORPHAN_GRACE_TICKS	2

/* What one sweep saw and did. */
struct conntrack_stats {
	size_t entries;		/* in weft_ct when read */
	size_t capacity;	/* weft_ct's max_entries */
	size_t expired_pairs;	/* pairs deleted: expired or closed */
	size_t orphans;		/* entries deleted whose partner was gone */
	size_t sources;		/* clients holding a connection */
	in_addr_t top_source;	/* the client holding the most (0: none) */
	size_t top_source_connections;
	uint64_t duration_us;	/* how long the sweep took */
};

/* Seconds an entry pair in state flags (the union of both entries')
 * lives after its last packet. */
uint32_t conntrack_timeout(uint8_t proto, uint16_t flags);
/* The same in ticks, rounded up. */
uint32_t conntrack_timeout_ticks(uint8_t proto, uint16_t flags);

/* CLOCK_MONOTONIC in conntrack ticks, as the programs' ct_now(). */
uint32_t conntrack_now(void);

/* One pass over weft_ct at time now (ticks): read it in batches, delete
 * every pair that expired and every orphan past the grace, count each
 * client's deleted connections into weft_ct_closed, forget the counts of
 * clients that hold nothing.  Cost: one batched read of the table, a hash
 * of it in memory (partners are found there, not by a syscall each), and
 * one delete per dead entry.  0 or -errno; *st (may be NULL) filled. */
int conntrack_sweep(struct datapath *dp, uint32_t now, struct conntrack_stats *st)
	__attribute__((warn_unused_result));

#endif
