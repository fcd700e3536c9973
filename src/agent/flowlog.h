/*
 * flowlog.h — the node's flow log as the agent holds it (docs/trace.md,
 * "Flows"): the programs' events (bpf/weft_bpf.h, "The flow log") read
 * from weft_flows on a thread of its own, the last `keep` (the agent's:
 * FLOWLOG_KEEP) kept in a ring with a sequence number each, and counted by
 * kind for the metrics.
 *
 * Drops come whenever they happen; forwarded packets only while someone
 * listens: flowlog_listen(on) counts the listeners, and the programs
 * report forwards (datapath_flows_listen) while the count is not 0.
 *
 * Thread-safe.  Ownership: the flow log borrows dp, which must outlive
 * it; flowlog_stop frees everything (NULL: nothing).
 */
#ifndef WEFT_AGENT_FLOWLOG_H
#define WEFT_AGENT_FLOWLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/datapath.h"

#define FLOWLOG_KEEP 4096

struct flowlog;

/* The reader's thread; NULL with errno set (EOPNOTSUPP: no programs, a
 * hollow node). */
struct flowlog *flowlog_start(struct datapath *dp, size_t keep);
void flowlog_stop(struct flowlog *fl);

/* One more listener (on) or one fewer: 0, or -errno when the programs
 * could not be told. */
int flowlog_listen(struct flowlog *fl, bool on) __attribute__((warn_unused_result));

/* Listeners now. */
unsigned flowlog_listeners(struct flowlog *fl);

/* The kept events after sequence number after (0: all kept), oldest
 * first, at most max, into out; *last the sequence number of the last one
 * copied (after when none).  The count copied. */
size_t flowlog_since(struct flowlog *fl, uint64_t after, struct weft_flow *out, size_t max, uint64_t *last);

/* Wait until an event after sequence number after is kept, at most ms
 * milliseconds.  1 when there is one, 0 when the time ran out. */
int flowlog_wait(struct flowlog *fl, uint64_t after, unsigned ms);

/* The sequence number of the oldest event kept (the next to come when
 * none is): an event after which a reader asks for has left the ring
 * when first - 1 > after. */
uint64_t flowlog_first(struct flowlog *fl);

/* Events read, by enum weft_flow_kind (index 0 unused), since the start. */
void flowlog_counts(struct flowlog *fl, uint64_t counts[WEFT_FLOW_SAMPLE + 1]);

#endif
