/*
 * u64map.h — a hash map from 64-bit keys to 64-bit values: open
 * addressing with linear probing and backward-shift deletion (no
 * tombstones), grown ×2 at 1/2 load.  Any key is allowed, 0 included.
 *
 * For indexes that must stay O(1) per operation at tens of thousands of
 * entries (the agent's services by name, IDs in use).  Callers that key by
 * a hash of something larger compare the real key on a hit.
 *
 * Ownership: the map owns its arrays; u64map_free() releases them (and
 * accepts a zeroed map).  Not thread-safe.
 */
#ifndef WEFT_LIB_U64MAP_H
#define WEFT_LIB_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;
	size_t cap;		/* a power of two, or 0 */
	size_t n;
};

/* Insert or replace.  0, or -ENOMEM (the map is unchanged). */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val) __attribute__((warn_unused_result));
/* true and *val (may be NULL) when present. */
bool u64map_get(const struct u64map *m, uint64_t key, uint64_t *val);
/* true when it was present. */
bool u64map_del(struct u64map *m, uint64_t key);
void u64map_free(struct u64map *m);

/* FNV-1a over len bytes: the key for things longer than 64 bits. */
uint64_t u64map_hash_bytes(const void *p, size_t len);
/* The finaliser that spreads a key over a table's slots (splitmix64's):
 * keys that differ in any bit differ in the low bits too.  hmap.c uses
 * it for its buckets. */
uint64_t u64map_mix(uint64_t k);

#endif
