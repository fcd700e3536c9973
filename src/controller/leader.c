/*
 * leader.c — leader election for a loop that must run in one controller at
 * a time (the Endpoints controller) when several serve one store, and the
 * fence its writes carry.
 *
 * The lease is one key in the store, "holder identity" as its value,
 * renewed by its holder with a compare-and-swap on its mod_rev every third
 * of the lease's duration.  Nobody compares clocks: a candidate that sees
 * the key's mod_rev unchanged for a whole duration of its own monotonic
 * clock takes it over, with a compare-and-swap on that same mod_rev (so of
 * two candidates one wins), as Kubernetes' leader election does with its
 * Lease objects.
 *
 *            ┌───── renew (CAS on held_rev) every duration/3 ─────┐
 *            ▼                                                    │
 *   follower ──(key absent: create; or unchanged for a duration:  ├──► leader
 *      ▲        take over by CAS)─────────────────────────────────┘      │
 *      └──── a renew's CAS fails, or no renew for a whole duration ───────┘
 *
 * A lease is not a lock: a leader that stalls (a long pause, a partition)
 * may still believe it leads after another took over.  So its writes are
 * fenced: each carries "the lease key's mod_rev is still held_rev"
 * (registry.c adds the comparison), and a write after a takeover fails
 * instead of landing.
 *
 * A follower reads the key at most every FOLLOW_FRACTION-th of the
 * duration (Kubernetes' retry period is about as often): a controller's
 * loop turns at every write another controller makes, and a read of etcd
 * at each turn would cost etcd more than the writes.  So a takeover comes
 * within a duration and a tenth after the last renew, and a released
 * lease is taken within a tenth.
 *
 * Invariants
 *  1. held implies held_rev is the mod_rev of this holder's last successful
 *     create, take-over or renew.
 *  2. held is dropped when a renew fails or none succeeded for a duration.
 *
 * Threads: none; the caller serialises calls with its use of the store.
 */
#include "controller/leader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLLOW_FRACTION 10

struct leader {
	struct store *store;
	char key[128];
	char identity[160];
	int64_t duration_ms;
	bool held;
	int64_t held_rev;	/* invariant 1 */
	int64_t renewed_ms;	/* when held_rev was written (the caller's clock) */
	int64_t observed_rev;	/* the key's mod_rev as last read (0: absent) */
	int64_t observed_ms;	/* since when it has been that */
	char holder[160];	/* as last read */
	bool read;		/* the key was read at least once */
	int64_t read_ms;	/* ... last at this time (a follower's) */
};

struct leader *leader_new(struct store *s, const char *key, const char *identity, int64_t duration_ms)
{
	struct leader *l;

	if (!s || !key || !identity || strlen(key) >= sizeof(l->key) || strlen(identity) >= sizeof(l->identity) ||
	    duration_ms < 300) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->store = s;
	snprintf(l->key, sizeof(l->key), "%s", key);
	snprintf(l->identity, sizeof(l->identity), "%s", identity);
	l->duration_ms = duration_ms;
	return l;
}

void leader_free(struct leader *l) { free(l); }

/* Write the lease with a compare of its mod_rev (0: that it is absent). */
static int claim(struct leader *l, int64_t expect_rev, int64_t now_ms)
{
	struct store_cmp c = { l->key, expect_rev ? STORE_CMP_MOD_REV : STORE_CMP_CREATE_REV, STORE_CMP_EQ,
			       expect_rev };
	struct store_op op = { .type = STORE_OP_PUT, .key = l->key, .value = l->identity,
			       .value_len = strlen(l->identity) };
	struct store_txn t = { .cmps = &c, .ncmps = 1, .success = &op, .nsuccess = 1 };
	struct store_txn_result res;
	int err = store_txn(l->store, &t, &res);

	if (err)
		return err;
	if (!res.succeeded)
		return -EAGAIN;
	l->held = true;
	l->held_rev = l->observed_rev = res.revision;
	l->renewed_ms = l->observed_ms = now_ms;
	snprintf(l->holder, sizeof(l->holder), "%s", l->identity);
	return 0;
}

bool leader_tick(struct leader *l, int64_t now_ms)
{
	struct store_kv kv;
	int64_t at;
	int err;

	if (l->held && now_ms - l->renewed_ms < l->duration_ms / 3)
		return true;
	if (!l->held && l->read && now_ms - l->read_ms < l->duration_ms / FOLLOW_FRACTION)
		return false;
	l->read = true;
	l->read_ms = now_ms;
	err = store_get(l->store, l->key, &kv, &at);
	if (err == -ENOENT) {
		l->held = false;
		l->holder[0] = 0;
		(void)claim(l, 0, now_ms);
		return l->held;
	}
	if (err) {
		/* the store is out of reach: lead until the lease would end */
		if (l->held && now_ms - l->renewed_ms >= l->duration_ms)
			l->held = false;
		return l->held;
	}
	snprintf(l->holder, sizeof(l->holder), "%.*s", (int)kv.value_len, kv.value);
	if (l->held && kv.mod_rev == l->held_rev) {
		/* ours, as we left it: renew */
		if (claim(l, l->held_rev, now_ms) == -EAGAIN)
			l->held = false;
		else if (now_ms - l->renewed_ms >= l->duration_ms)
			l->held = false;	/* the renew failed for a whole duration */
	} else {
		l->held = false;
		if (kv.mod_rev != l->observed_rev) {
			l->observed_rev = kv.mod_rev;
			l->observed_ms = now_ms;
		} else if (now_ms - l->observed_ms >= l->duration_ms) {
			(void)claim(l, kv.mod_rev, now_ms);	/* its holder stopped renewing */
		}
	}
	store_kv_free(&kv);
	return l->held;
}

bool leader_held(const struct leader *l) { return l && l->held; }
int64_t leader_fence(const struct leader *l) { return l->held_rev; }
const char *leader_key(const struct leader *l) { return l->key; }
const char *leader_holder(const struct leader *l) { return l->holder; }

int leader_release(struct leader *l)
{
	struct store_cmp c = { l->key, STORE_CMP_MOD_REV, STORE_CMP_EQ, l->held_rev };
	struct store_op op = { .type = STORE_OP_DELETE, .key = l->key };
	struct store_txn t = { .cmps = &c, .ncmps = 1, .success = &op, .nsuccess = 1 };
	struct store_txn_result res;

	if (!l->held)
		return 0;
	l->held = false;
	return store_txn(l->store, &t, &res);
}
