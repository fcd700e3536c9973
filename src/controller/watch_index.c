/*
 * watch_index.c — watchers with selectors filed by the exact field value
 * they require (watch_index.h).
 *
 * Invariants
 *  1. Every entry added and not removed is in exactly one list: its
 *     bucket's (bucket != NULL) or the unindexed one.
 *  2. A bucket in the map has at least one entry; the last one out frees
 *     it and takes it out of the map.
 *  3. An entry is visited at most once per event: its bucket is probed
 *     once even when several of the event's triples hash to it.
 */
#include "controller/watch_index.h"
#include "controller/controller.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct watch_bucket {
	uint64_t hash;
	struct watch_index_entry *head;
};

/* A bucket an event looks into. */
struct probe {
	enum selector_field f;
	const char *value;
};

/* The fields a watcher is filed under, the most selective first. */
static const enum selector_field filed[] = {
	SELECTOR_FIELD_NAME,
	SELECTOR_FIELD_NODE_NAME,
	SELECTOR_FIELD_NAMESPACE,
};

static uint64_t triple_hash(const char *resource, size_t rlen, enum selector_field f, const char *value)
{
	char buf[512];
	size_t vlen = strlen(value), n;

	/* resource '\0' field '\0' value; a value too long for buf hashes its
	 * tail on top (the index is exact either way: candidates are judged) */
	if (rlen > 64)
		rlen = 64;
	memcpy(buf, resource, rlen);
	buf[rlen] = 0;
	buf[rlen + 1] = (char)('0' + f);
	buf[rlen + 2] = 0;
	n = rlen + 3;
	if (vlen > sizeof(buf) - n)
		return u64map_hash_bytes(buf, n) ^ u64map_hash_bytes(value, vlen) * 0x9e3779b97f4a7c15ull;
	memcpy(buf + n, value, vlen);
	return u64map_hash_bytes(buf, n + vlen);
}

static void link_in(struct watch_index_entry **head, struct watch_index_entry *e)
{
	e->prev = NULL;
	e->next = *head;
	if (*head)
		(*head)->prev = e;
	*head = e;
}

static void link_out(struct watch_index_entry **head, struct watch_index_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		*head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

int watch_index_add(struct watch_index *ix, struct watch_index_entry *e, const char *resource,
		    const struct selector *s)
{
	struct watch_bucket *b = NULL;
	const char *value = NULL;
	uint64_t hash, got;
	size_t i;

	e->bucket = NULL;
	for (i = 0; i < sizeof(filed) / sizeof(filed[0]) && !value; i++)
		value = selector_exact(s, filed[i]);
	if (!value) {
		link_in(&ix->unindexed, e);
		return 0;
	}
	hash = triple_hash(resource, strlen(resource), filed[i - 1], value);
	if (u64map_get(&ix->buckets, hash, &got)) {
		b = (struct watch_bucket *)(uintptr_t)got;
	} else {
		b = calloc(1, sizeof(*b));
		if (!b || u64map_put(&ix->buckets, hash, (uint64_t)(uintptr_t)b)) {
			free(b);
			return -ENOMEM;
		}
		b->hash = hash;
		ix->nbuckets++;
	}
	link_in(&b->head, e);
	e->bucket = b;
	return 0;
}

void watch_index_remove(struct watch_index *ix, struct watch_index_entry *e)
{
	struct watch_bucket *b = e->bucket;

	if (!b) {
		link_out(&ix->unindexed, e);
		return;
	}
	link_out(&b->head, e);
	e->bucket = NULL;
	if (!b->head) {
		u64map_del(&ix->buckets, b->hash);
		free(b);
		ix->nbuckets--;
	}
}

void watch_index_free(struct watch_index *ix)
{
	/* the owners removed their entries first: no bucket is left (invariant 2) */
	u64map_free(&ix->buckets);
	memset(ix, 0, sizeof(*ix));
}

static void visit_list(const struct watch_index_entry *e, void (*visit)(void *, void *), void *arg)
{
	for (const struct watch_index_entry *next; e; e = next) {
		next = e->next;
		visit(e->owner, arg);
	}
}

void watch_index_candidates(const struct watch_index *ix, const char *key, const struct selector_view *now,
			    const struct selector_view *before, void (*visit)(void *owner, void *arg), void *arg)
{
	const struct selector_view *any = now ? now : before;
	const char *resource = key + strlen(OBJ_PREFIX), *slash;
	struct watch_bucket *seen[4];
	size_t nseen = 0;
	struct probe probes[4];
	size_t nprobes = 0;

	visit_list(ix->unindexed, visit, arg);
	if (!ix->nbuckets || !any || strncmp(key, OBJ_PREFIX, strlen(OBJ_PREFIX)) != 0)
		return;
	slash = strchr(resource, '/');
	if (!slash)
		return;
	probes[nprobes++] = (struct probe){ SELECTOR_FIELD_NAME, any->field[SELECTOR_FIELD_NAME] };
	probes[nprobes++] = (struct probe){ SELECTOR_FIELD_NAMESPACE, any->field[SELECTOR_FIELD_NAMESPACE] };
	if (now)
		probes[nprobes++] = (struct probe){ SELECTOR_FIELD_NODE_NAME, now->field[SELECTOR_FIELD_NODE_NAME] };
	if (before && (!now || strcmp(before->field[SELECTOR_FIELD_NODE_NAME], now->field[SELECTOR_FIELD_NODE_NAME])))
		probes[nprobes++] = (struct probe){ SELECTOR_FIELD_NODE_NAME,
							 before->field[SELECTOR_FIELD_NODE_NAME] };
	for (size_t i = 0; i < nprobes; i++) {
		uint64_t got;
		struct watch_bucket *b;
		bool dup = false;

		if (!u64map_get(&ix->buckets, triple_hash(resource, (size_t)(slash - resource), probes[i].f,
							  probes[i].value), &got))
			continue;
		b = (struct watch_bucket *)(uintptr_t)got;
		for (size_t j = 0; j < nseen; j++)
			dup |= seen[j] == b;	/* invariant 3 */
		if (dup)
			continue;
		seen[nseen++] = b;
		visit_list(b->head, visit, arg);
	}
}
