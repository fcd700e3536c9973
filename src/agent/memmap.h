/*
 * memmap.h — a BPF map that lives in this process's memory: the
 * syscall-side operations of a kernel map (update, lookup, delete,
 * next_key, lookup_batch) with the kernel's return codes, for data paths
 * that run no program (hollow nodes: datapath_opts.in_memory).
 *
 * Kinds and what each does as the kernel does (memmap.c says how):
 *
 *   MEMMAP_HASH      BPF_MAP_TYPE_HASH: flags BPF_ANY, BPF_NOEXIST
 *                    (-EEXIST), BPF_EXIST (-ENOENT), others -EINVAL; a new
 *                    key in a full map -E2BIG, a replaced one succeeds;
 *                    lookup and delete of a missing key -ENOENT.
 *   MEMMAP_LRU_HASH  the same, but a new key in a full map evicts an
 *                    entry (an arbitrary one: the kernel's is about the
 *                    least recently used).
 *   MEMMAP_ARRAY     BPF_MAP_TYPE_ARRAY (and PERCPU_ARRAY, whose value is
 *                    the caller's per-CPU buffer): key a __u32 index;
 *                    every index below max_entries exists and reads zero
 *                    until written; update beyond -E2BIG, BPF_NOEXIST
 *                    -EEXIST, delete -EINVAL.
 *   MEMMAP_LPM_TRIE  BPF_MAP_TYPE_LPM_TRIE: key {__u32 prefixlen, data};
 *                    an entry is its prefixlen and that many leading bits
 *                    (the bits after them are kept as written, and
 *                    next_key returns them); lookup is the longest stored
 *                    prefix of the key no longer than its prefixlen;
 *                    a prefixlen beyond the data is -EINVAL (lookup:
 *                    -ENOENT); full -ENOSPC.
 *
 * next_key (all but arrays): NULL starts; the order is the table's (by a
 * hash of the key), and the successor of a key that is not there (deleted
 * during the walk) is the next one in that order — the kernel starts over
 * instead — so a walk that deletes as it goes sees every entry that was
 * there throughout once.
 *
 * lookup_batch (hash kinds; others -EINVAL, so callers walk the keys): a
 * __u32 token, NULL to start; entries of one hash value are never split
 * between batches (-ENOSPC when they do not fit an empty batch); -ENOENT
 * ends the walk, with the last entries in *count.  Every entry present
 * for the whole walk is returned once.
 *
 * Memory follows the entries, not max_entries: nothing is allocated until
 * the first write, the index grows and shrinks by halves and the entries
 * come in chunks of 256, and an emptied table holds nothing.
 * Thread-safety: every call takes the table's lock.
 * Ownership: the caller frees with memmap_free() (accepts NULL); key and
 * value buffers are the caller's.
 */
#ifndef WEFT_AGENT_MEMMAP_H
#define WEFT_AGENT_MEMMAP_H

#include <stddef.h>
#include <stdint.h>

enum memmap_kind {
	MEMMAP_HASH,
	MEMMAP_LRU_HASH,
	MEMMAP_ARRAY,
	MEMMAP_LPM_TRIE,
};

#define MEMMAP_KEY_MAX		260	/* bytes: an LPM key of 256 data bytes */

struct memmap;

/* NULL with errno EINVAL (a size the kernel would refuse) or ENOMEM. */
struct memmap *memmap_new(enum memmap_kind kind, uint32_t key_size, uint32_t value_size,
			  uint32_t max_entries) __attribute__((warn_unused_result));
void memmap_free(struct memmap *m);

int memmap_update(struct memmap *m, const void *key, const void *value, uint64_t flags);
int memmap_lookup(struct memmap *m, const void *key, void *value);
int memmap_delete(struct memmap *m, const void *key);
int memmap_next_key(struct memmap *m, const void *key, void *next);
int memmap_lookup_batch(struct memmap *m, const uint32_t *in_token, uint32_t *out_token,
			void *keys, void *values, uint32_t *count);

/* Entries stored (an array's: the indexes written) and the bytes held. */
void memmap_usage(struct memmap *m, uint32_t *count, size_t *bytes);

#endif
