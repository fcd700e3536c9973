/*
 * store_test_helpers.h — the small helpers both store test binaries use
 * (store_test.c, the conformance suite; store_sqlite_test.c, SQLite's own).
 */
#ifndef WEFT_STORE_TEST_HELPERS_H
#define WEFT_STORE_TEST_HELPERS_H

#include "store/store.h"

#include <stdio.h>
#include <string.h>

static inline int put_str(struct store *s, const char *key, const char *value, int64_t *rev)
{
	return store_put(s, key, value, strlen(value), rev);
}

/* The store's revision, -1 when it cannot be read. */
static inline int64_t revision_of(struct store *s)
{
	int64_t rev = -1;

	if (store_revision(s, &rev) < 0)
		return -1;
	return rev;
}

/* Keys of a range, joined by spaces, into buf ("(error)" when it fails). */
static inline const char *range_keys(struct store *s, const char *prefix, char *buf, size_t len)
{
	struct store_kv_list l;
	size_t used = 0;

	buf[0] = 0;
	if (store_range(s, prefix, NULL, 0, &l) < 0) {
		snprintf(buf, len, "(error)");
		return buf;
	}
	for (size_t i = 0; i < l.n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", l.kvs[i].key);
	store_kv_list_free(&l);
	return buf;
}

#endif
