/*
 * backend_addrs.c — remote service backends by address (backend_addrs.h
 * says what for): an hmap of records keyed by the address itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/backend_addrs.h"

static uint64_t key(in_addr_t ip)
{
	return u64map_mix(ip);
}

static uint64_t block_of(in_addr_t ip)
{
	return ntohl(ip) >> 8;
}

/* The count of ip's block, by delta: 0 or -ENOMEM (unchanged). */
static int block_add(struct backend_addrs *t, in_addr_t ip, int delta)
{
	uint64_t n = 0;

	(void)u64map_get(&t->blocks, block_of(ip), &n);
	n += (uint64_t)(int64_t)delta;
	if (!n) {
		(void)u64map_del(&t->blocks, block_of(ip));
		return 0;
	}
	return u64map_put(&t->blocks, block_of(ip), n);
}

static struct backend_addr *find(const struct backend_addrs *t, in_addr_t ip)
{
	for (struct hmap_node *e = hmap_first_with(&t->by_ip, key(ip)); e; e = hmap_next_with(e)) {
		struct backend_addr *b = HMAP_ENTRY(e, struct backend_addr, node);

		if (b->ip == ip)
			return b;
	}
	return NULL;
}

int backend_addrs_ref(struct backend_addrs *t, in_addr_t ip, const char *ns, bool *first)
{
	struct backend_addr *b = find(t, ip);

	*first = false;
	if (b) {
		b->refs++;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ip = ip;
	b->refs = 1;
	snprintf(b->ns, sizeof(b->ns), "%s", ns ? ns : "");
	if (block_add(t, ip, 1) < 0)
		goto fail;
	if (hmap_insert(&t->by_ip, &b->node, key(ip)) < 0) {
		(void)block_add(t, ip, -1);	/* a decrement needs no memory */
		goto fail;
	}
	*first = true;
	return 0;
fail:
	free(b);
	return -ENOMEM;
}

bool backend_addrs_unref(struct backend_addrs *t, in_addr_t ip)
{
	struct backend_addr *b = find(t, ip);

	if (!b || --b->refs)
		return false;
	(void)hmap_remove(&t->by_ip, &b->node);
	(void)block_add(t, ip, -1);
	free(b);
	return true;
}

const struct backend_addr *backend_addrs_find(const struct backend_addrs *t, in_addr_t ip)
{
	return find(t, ip);
}

size_t backend_addrs_count(const struct backend_addrs *t)
{
	return t->by_ip.n;
}

bool backend_addrs_in_block(const struct backend_addrs *t, in_addr_t ip)
{
	return u64map_get(&t->blocks, block_of(ip), NULL);
}

const struct backend_addr *backend_addrs_first(const struct backend_addrs *t)
{
	return HMAP_ENTRY(hmap_first(&t->by_ip), struct backend_addr, node);
}

const struct backend_addr *backend_addrs_next(const struct backend_addrs *t, const struct backend_addr *b)
{
	return HMAP_ENTRY(hmap_next(&t->by_ip, &b->node), struct backend_addr, node);
}

void backend_addrs_free(struct backend_addrs *t)
{
	struct hmap_node *e = hmap_first(&t->by_ip);

	while (e) {
		struct hmap_node *next = hmap_next(&t->by_ip, e);

		free(HMAP_ENTRY(e, struct backend_addr, node));
		e = next;
	}
	hmap_free(&t->by_ip);
	t->by_ip = (struct hmap){ 0 };
	u64map_free(&t->blocks);
}
