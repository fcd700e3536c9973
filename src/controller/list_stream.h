/*
 * list_stream.h — the body of a list response (`{"apiVersion":..,"kind":
 * "PodList","metadata":{"resourceVersion":"N"},"items":[..]}` and a
 * newline; a page of a longer list has "continue" and, when known,
 * "remainingItemCount" in its metadata), made piece by piece from a
 * snapshot of the store.
 *
 * Why: serialising a big collection (tens of MB) is the slowest thing the
 * API does.  The snapshot (store_range: raw values, one read transaction)
 * is taken under whatever lock guards the store handle; everything after
 * that works on the stream's own copy, so the response is serialised
 * outside any lock, a piece at a time by the HTTP server's reader callback,
 * interleaved with the other connections of its thread.
 *
 * Invariants
 *  1. The bytes read, concatenated, equal what json_dumps(JSON_COMPACT |
 *     JSON_PRESERVE_ORDER) makes of the list object built from the same
 *     snapshot with obj_from_kv, plus "\n" (list_stream_test.c checks it).
 *  2. A stored value that is not JSON is left out, as registry_list does.
 *  3. Each item's stored copy is freed once it is serialised: memory falls
 *     as the response goes out.
 *
 * Ownership: list_stream_new takes the snapshot's contents (the caller's
 * list is zeroed); list_stream_free (accepts NULL) frees everything.  One
 * thread at a time; no global state.
 */
#ifndef WEFT_CONTROLLER_LIST_STREAM_H
#define WEFT_CONTROLLER_LIST_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"
#include "store/store.h"

struct list_stream;

/* A stream of the list of kind k made of *snap (taken over, *snap zeroed),
 * with metadata.continue cont (NULL: none) and remainingItemCount
 * remaining (< 0: none).  NULL with errno ENOMEM (the snapshot is freed
 * then too). */
struct list_stream *list_stream_new(const struct kind_info *k, struct store_kv_list *snap, const char *cont,
				    int64_t remaining);
/* Up to max bytes of the response into buf: how many (> 0), 0 once it has
 * all been read, -ENOMEM (the stream cannot go on). */
ssize_t list_stream_read(struct list_stream *ls, char *buf, size_t max);
void list_stream_free(struct list_stream *ls);

#endif
