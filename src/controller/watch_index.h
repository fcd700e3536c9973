/*
 * watch_index.h — the watch hub's index of watchers with selectors
 * (private to watch.c): which of them an event may concern, without
 * looking at the others.
 *
 * A watcher whose selector requires an exact value of metadata.name,
 * spec.nodeName or metadata.namespace (in that order of preference: the
 * most selective first) is filed in the bucket of (resource, field,
 * value); the others are "unindexed".  An event on an object of resource
 * R with name N, namespace S and node D (before: D') concerns the
 * unindexed watchers and the buckets (R, name, N), (R, namespace, S),
 * (R, nodeName, D) and (R, nodeName, D'): with 1,000 watchers of
 * spec.nodeName=node-i, a pod's event reaches one or two of them.  The
 * candidates are then judged by their whole selector (watch_event.c);
 * the index only never leaves one out.
 *
 * Buckets are found by a 64-bit hash of (resource, field, value) in a
 * u64map; two triples with the same hash share a bucket, which costs a
 * candidate, never a wrong delivery.
 *
 * Ownership: entries are embedded in their owners (the hub's watchers) and
 * linked in by watch_index_add; watch_index_remove unlinks one; a bucket
 * is freed with its last entry.  watch_index_free frees the map, once
 * every entry is removed.  Not thread-safe: the hub calls it under the
 * lock that guards its set of watchers.
 */
#ifndef WEFT_CONTROLLER_WATCH_INDEX_H
#define WEFT_CONTROLLER_WATCH_INDEX_H

#include <stddef.h>

#include "lib/u64map.h"
#include "model/selector.h"

struct watch_bucket;

struct watch_index_entry {
	struct watch_index_entry *prev, *next;	/* in its bucket, or the unindexed list */
	struct watch_bucket *bucket;		/* NULL: unindexed */
	void *owner;
};

struct watch_index {
	struct u64map buckets;			/* hash -> struct watch_bucket * */
	struct watch_index_entry *unindexed;
	size_t nbuckets;
};

/* File e (owner set by the caller) for a watcher of resource (the plural,
 * as in store keys) with selector s.  0 or -ENOMEM. */
int watch_index_add(struct watch_index *ix, struct watch_index_entry *e, const char *resource,
		    const struct selector *s) __attribute__((warn_unused_result));
void watch_index_remove(struct watch_index *ix, struct watch_index_entry *e);
void watch_index_free(struct watch_index *ix);

/* Call visit(owner, arg) once for every entry an event on key (a store
 * key, /weft/obj/RESOURCE/...) with views now and before (either NULL:
 * absent) may concern. */
void watch_index_candidates(const struct watch_index *ix, const char *key, const struct selector_view *now,
			    const struct selector_view *before, void (*visit)(void *owner, void *arg), void *arg);

#endif
