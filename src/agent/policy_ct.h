/*
 * policy_ct.h — the sweep of weft_policy_ct (policy_ct.c): expired
 * connections go, their clients' counts are given back.
 *
 * Thread-safe against the programs; one sweep at a time per datapath.
 */
#ifndef WEFT_AGENT_POLICY_CT_H
#define WEFT_AGENT_POLICY_CT_H

#include <stdint.h>

#include "agent/conntrack.h"

struct datapath;

/* One pass at time now (ticks): expired_pairs counts the connections
 * deleted (one entry each), sources the clients holding one.  0 or
 * -errno; *st (may be NULL) filled. */
int policy_ct_sweep(struct datapath *dp, uint32_t now, struct conntrack_stats *st)
	__attribute__((warn_unused_result));

#endif
