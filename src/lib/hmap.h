/*
 * hmap.h — an intrusive hash table: records embed a struct hmap_node and
 * are chained in buckets by a 64-bit hash the caller computes (of a name,
 * an address, anything).  The table compares hashes only: a lookup walks
 * the records with the hash asked for and the caller compares its real
 * key, so two keys with one hash, or several records with one key (a
 * multimap: the pods holding one IP), are both sound.
 *
 * For the agent's caches, which must stay O(1) per event at 150,000
 * records: no allocation per record (the record is the entry), and a
 * record's address never changes while it is in the table.
 *
 * Buckets: a power of two, grown x2 when the records would outnumber
 * them (load <= 1), never shrunk.  A bucket's chain holds the newest
 * record first.
 *
 * Ownership: the table owns its bucket array only; records are the
 * caller's (hmap_free() does not touch them).  A zeroed struct hmap is an
 * empty table.  Not thread-safe.
 */
#ifndef WEFT_LIB_HMAP_H
#define WEFT_LIB_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_node {
	struct hmap_node *next;		/* in its bucket */
	uint64_t hash;
};

struct hmap {
	struct hmap_node **buckets;	/* NULL while no record was ever added */
	size_t mask;			/* buckets - 1 */
	size_t n;			/* records */
};

/* The record holding node (NULL for NULL): node is evaluated twice. */
#define HMAP_ENTRY(node, type, member) \
	((node) ? (type *)(void *)((char *)(node) - offsetof(type, member)) : (type *)NULL)

/* Room for n more records without growing: then the next n inserts
 * cannot fail.  0 or -ENOMEM (the table is unchanged). */
int hmap_reserve(struct hmap *m, size_t n) __attribute__((warn_unused_result));
/* Add node under hash (node must not be in a table).  0 or -ENOMEM (the
 * table is unchanged, node not added). */
int hmap_insert(struct hmap *m, struct hmap_node *node, uint64_t hash) __attribute__((warn_unused_result));
/* Take node out; true when it was there. */
bool hmap_remove(struct hmap *m, struct hmap_node *node);

/* The records with this hash: the first (NULL: none), then the next
 * after node with the same hash. */
struct hmap_node *hmap_first_with(const struct hmap *m, uint64_t hash);
struct hmap_node *hmap_next_with(const struct hmap_node *node);

/* Every record, in no order: O(buckets + records) for the whole walk.
 * The current record may be removed once its next has been taken;
 * nothing may be added during a walk. */
struct hmap_node *hmap_first(const struct hmap *m);
struct hmap_node *hmap_next(const struct hmap *m, const struct hmap_node *node);

void hmap_free(struct hmap *m);

/* FNV-1a of s and its terminating NUL, continuing from h: hash a name as
 * hmap_hash_str(HMAP_HASH_SEED, name), a pair as
 * hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, ns), name) ("a","bc" and
 * "ab","c" differ: the NUL is hashed). */
#define HMAP_HASH_SEED 0xcbf29ce484222325ull
uint64_t hmap_hash_str(uint64_t h, const char *s);

#endif
