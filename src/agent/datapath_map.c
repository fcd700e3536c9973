/*
 * datapath_map.c — a datapath's map on either side (datapath_map.h): two
 * tables of operations, the kernel's syscalls and the memory table's
 * calls, and the calls every other file of the module makes, which
 * dispatch through the table and tell on_write what was written.
 */
#include "agent/datapath_map.h"

#include <errno.h>

#include <bpf/bpf.h>

static int kernel_update(const struct datapath_map *m, const void *key, const void *value,
			 uint64_t flags)
{
	return bpf_map_update_elem(m->fd, key, value, flags);
}

static int kernel_lookup(const struct datapath_map *m, const void *key, void *value)
{
	return bpf_map_lookup_elem(m->fd, key, value);
}

static int kernel_delete(const struct datapath_map *m, const void *key)
{
	return bpf_map_delete_elem(m->fd, key);
}

static int kernel_next_key(const struct datapath_map *m, const void *key, void *next)
{
	return bpf_map_get_next_key(m->fd, key, next);
}

static int kernel_lookup_batch(const struct datapath_map *m, const uint32_t *in_token,
			       uint32_t *out_token, void *keys, void *values, uint32_t *count)
{
	/* libbpf takes the input token as void *; it only reads it */
	return bpf_map_lookup_batch(m->fd, (void *)in_token, out_token, keys, values, count, NULL);
}

static const struct datapath_map_ops kernel_ops = {
	.update = kernel_update,
	.lookup = kernel_lookup,
	.delete = kernel_delete,
	.next_key = kernel_next_key,
	.lookup_batch = kernel_lookup_batch,
};

static int memory_update(const struct datapath_map *m, const void *key, const void *value,
			 uint64_t flags)
{
	return memmap_update(m->mem, key, value, flags);
}

static int memory_lookup(const struct datapath_map *m, const void *key, void *value)
{
	return memmap_lookup(m->mem, key, value);
}

static int memory_delete(const struct datapath_map *m, const void *key)
{
	return memmap_delete(m->mem, key);
}

static int memory_next_key(const struct datapath_map *m, const void *key, void *next)
{
	return memmap_next_key(m->mem, key, next);
}

static int memory_lookup_batch(const struct datapath_map *m, const uint32_t *in_token,
			       uint32_t *out_token, void *keys, void *values, uint32_t *count)
{
	return memmap_lookup_batch(m->mem, in_token, out_token, keys, values, count);
}

static const struct datapath_map_ops memory_ops = {
	.update = memory_update,
	.lookup = memory_lookup,
	.delete = memory_delete,
	.next_key = memory_next_key,
	.lookup_batch = memory_lookup_batch,
};

void datapath_map_use_fd(struct datapath_map *m, enum datapath_map_id id, int fd)
{
	m->ops = &kernel_ops;
	m->fd = fd;
	m->mem = NULL;
	m->id = id;
}

int datapath_map_use_memory(struct datapath_map *m, enum datapath_map_id id,
			    enum memmap_kind kind, uint32_t key_size, uint32_t value_size,
			    uint32_t max_entries)
{
	m->mem = memmap_new(kind, key_size, value_size, max_entries);
	if (!m->mem)
		return -errno;
	m->ops = &memory_ops;
	m->fd = -1;
	m->id = id;
	return 0;
}

void datapath_map_release(struct datapath_map *m)
{
	memmap_free(m->mem);
	m->mem = NULL;
	m->ops = NULL;
}

int datapath_map_update(const struct datapath_map *m, const void *key, const void *value,
			uint64_t flags)
{
	int err = m->ops->update(m, key, value, flags);

	if (err == 0 && m->on_write)
		m->on_write(m->on_write_arg, m->id, key, value);
	return err;
}

int datapath_map_lookup(const struct datapath_map *m, const void *key, void *value)
{
	return m->ops->lookup(m, key, value);
}

int datapath_map_delete(const struct datapath_map *m, const void *key)
{
	int err = m->ops->delete(m, key);

	if (err == 0 && m->on_write)
		m->on_write(m->on_write_arg, m->id, key, NULL);
	return err;
}

int datapath_map_next_key(const struct datapath_map *m, const void *key, void *next)
{
	return m->ops->next_key(m, key, next);
}

int datapath_map_lookup_batch(const struct datapath_map *m, const uint32_t *in_token,
			      uint32_t *out_token, void *keys, void *values, uint32_t *count)
{
	return m->ops->lookup_batch(m, in_token, out_token, keys, values, count);
}

size_t datapath_map_bytes(const struct datapath_map *m)
{
	uint32_t count;
	size_t bytes = 0;

	if (m->mem)
		memmap_usage(m->mem, &count, &bytes);
	return bytes;
}
