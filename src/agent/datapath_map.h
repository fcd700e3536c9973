/*
 * datapath_map.h — one map of a datapath, whichever side it lives on: a
 * kernel BPF map (an fd, the bpf_map_* syscalls) or an in-memory table
 * (memmap.h, for hollow nodes).  The datapath module's files reach every
 * map through these calls; which side answers is chosen once, when the
 * map is set up (datapath_map_use_fd / datapath_map_use_memory pick the
 * table of operations).
 *
 * Both sides return 0 or a negative errno with the kernel's meanings
 * (memmap.h lists them).  After a successful update or delete the map
 * calls on_write, when set, on the caller's thread (the only cost when it
 * is not: one test of a pointer).
 *
 * Ownership: a kernel map's fd stays its skeleton's; a memory map's table
 * is the map's, freed by datapath_map_release() (which accepts a map
 * never set up).  Private to the datapath module (datapath_priv.h).
 */
#ifndef WEFT_AGENT_DATAPATH_MAP_H
#define WEFT_AGENT_DATAPATH_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/datapath.h"
#include "agent/memmap.h"

struct datapath_map;

struct datapath_map_ops {
	int (*update)(const struct datapath_map *m, const void *key, const void *value,
		      uint64_t flags);
	int (*lookup)(const struct datapath_map *m, const void *key, void *value);
	int (*delete)(const struct datapath_map *m, const void *key);
	int (*next_key)(const struct datapath_map *m, const void *key, void *next);
	/* BPF_MAP_LOOKUP_BATCH of a hash map: a __u32 token, NULL first */
	int (*lookup_batch)(const struct datapath_map *m, const uint32_t *in_token,
			    uint32_t *out_token, void *keys, void *values, uint32_t *count);
};

struct datapath_map {
	const struct datapath_map_ops *ops;	/* NULL: not set up */
	int fd;					/* kernel side */
	struct memmap *mem;			/* memory side */
	enum datapath_map_id id;
	datapath_write_fn *on_write;
	void *on_write_arg;
};

void datapath_map_use_fd(struct datapath_map *m, enum datapath_map_id id, int fd);
/* -errno (EINVAL, ENOMEM) when the table cannot be made. */
int datapath_map_use_memory(struct datapath_map *m, enum datapath_map_id id,
			    enum memmap_kind kind, uint32_t key_size, uint32_t value_size,
			    uint32_t max_entries) __attribute__((warn_unused_result));
void datapath_map_release(struct datapath_map *m);

int datapath_map_update(const struct datapath_map *m, const void *key, const void *value,
			uint64_t flags);
int datapath_map_lookup(const struct datapath_map *m, const void *key, void *value);
int datapath_map_delete(const struct datapath_map *m, const void *key);
int datapath_map_next_key(const struct datapath_map *m, const void *key, void *next);
int datapath_map_lookup_batch(const struct datapath_map *m, const uint32_t *in_token,
			      uint32_t *out_token, void *keys, void *values, uint32_t *count);
/* The bytes a memory map holds (0 on the kernel side). */
size_t datapath_map_bytes(const struct datapath_map *m);

#endif
