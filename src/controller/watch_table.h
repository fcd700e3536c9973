/*
 * watch_table.h — a watch stream served as Tables (kubectl get -w asks
 * for one with Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
 *
 * The hub serialises each event once, as JSON, for all its watchers
 * (watch.c); a Table watch converts the lines its own watcher reads, one
 * at a time, into the lines kube-apiserver sends for it:
 *
 *   {"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1",
 *    "metadata":{"resourceVersion":"R"},"columnDefinitions":[...],
 *    "rows":[{"cells":[...],"object":{...}}]}}
 *
 * with the column definitions in the stream's first Table only (later ones
 * carry an empty list, which kubectl reads as "the columns of before").
 * Plain watches never come here.  Reading is in two steps so that the
 * conversion runs outside the hub's lock: watch_table_pull copies raw
 * lines from the watcher (hub lock held, as watcher_read), and
 * watch_table_take converts and hands them out (no lock).
 *
 * Invariants
 *  1. Only whole lines are converted, and a converted line is handed out
 *     whole across as many takes as it needs (a row larger than the
 *     caller's buffer included) before anything else is read: the stream
 *     the client sees ends between lines, where the watcher's does.
 *  2. What is held is bounded: the raw bytes of at most one line beyond
 *     those converted (WATCH_TABLE_LINE_MAX; a longer one ends the
 *     stream), and one converted line.
 *
 * Ownership: watch_table_new's result is the caller's, freed with
 * watch_table_free (NULL accepted); kind is borrowed (the static kind
 * table).  Not thread-safe: one stream's reader uses it.
 */
#ifndef WEFT_CONTROLLER_WATCH_TABLE_H
#define WEFT_CONTROLLER_WATCH_TABLE_H

#include <stddef.h>
#include <sys/types.h>

#include "controller/controller.h"
#include "controller/table.h"

/* A line longer than this ends the stream: an event holds one stored
 * object (at most MODEL_MAX_OBJECT_BYTES) and a few words. */
#define WATCH_TABLE_LINE_MAX (2 * (size_t)MODEL_MAX_OBJECT_BYTES)

struct watch_table;

/* A converter for watch events of kind k, rows carrying include. NULL with
 * errno ENOMEM. */
struct watch_table *watch_table_new(const struct kind_info *k, enum table_include include);
void watch_table_free(struct watch_table *t);

/* Read from w until a whole line is held (hub lock held, and the store
 * lock when watcher_reads_store, as for watcher_read): >0 a line is
 * ready for watch_table_take; 0 nothing now (w will wake its stream);
 * -1 the stream ends (w ended, a line over WATCH_TABLE_LINE_MAX, or no
 * memory). */
ssize_t watch_table_pull(struct watch_table *t, struct watcher *w);
/* Copy converted bytes into buf (at most max), converting the next line
 * held when none are left: >0 bytes copied, 0 nothing held, -1 no memory
 * (the stream ends).  Needs no lock. */
ssize_t watch_table_take(struct watch_table *t, char *buf, size_t max);
/* The BOOKMARK of revision rev as a Table watch sends it (a Table without
 * rows at rev) into buf: its length, or 0 if it does not fit. */
size_t watch_table_bookmark(const struct watch_table *t, int64_t rev, char *buf, size_t max);

#endif
