/*
 * store_sync.h — group commit's hooks for store.c (the interface users see
 * is in store.h: store_defer_sync, store_commits, store_sync).
 */
#ifndef WEFT_STORE_SYNC_H
#define WEFT_STORE_SYNC_H

#include "store/store.h"

/* A write transaction of s was committed (s->sync set). */
void store_sync_committed(struct store *s);
/* Flush what is pending and free s->sync (NULL: nothing); before close. */
void store_sync_close(struct store *s);

#endif
