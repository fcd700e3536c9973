/*
 * leader.h — leader election of a loop that must run once among the
 * controllers on one store, with a fence for its writes (leader.c).
 *
 * Ownership: leader_new borrows the store (it must outlive the leader);
 * leader_free (accepts NULL) frees it.  Strings returned are borrowed.
 */
#ifndef WEFT_CONTROLLER_LEADER_H
#define WEFT_CONTROLLER_LEADER_H

#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

struct leader;

/* A candidate for the lease at key (e.g. "/weft/leader/endpoints"), as
 * identity (unique per process), held for duration_ms (>= 300) without a
 * renew.  NULL with errno set. */
struct leader *leader_new(struct store *s, const char *key, const char *identity, int64_t duration_ms);
void leader_free(struct leader *l);

/* Acquire, renew or follow, as now_ms (a monotonic clock in ms) says is
 * due; true while this candidate leads.  Cheap when nothing is due. */
bool leader_tick(struct leader *l, int64_t now_ms);
bool leader_held(const struct leader *l);
/* While held: the lease key and the mod_rev its writes must still find. */
int64_t leader_fence(const struct leader *l);
const char *leader_key(const struct leader *l);
/* Who held it when last read ("" when nobody). */
const char *leader_holder(const struct leader *l);
/* Give it up now (a stopping controller): the next candidate need not wait. */
int leader_release(struct leader *l) __attribute__((warn_unused_result));

#endif
