/*
 * stored_text.h — a stored object's text as the API serves it, made
 * without parsing it (stored_text.c says how).
 *
 * The store keeps every object as jansson's compact dump without
 * metadata.resourceVersion (registry.c); the API serves it with that
 * field added (obj_from_kv), which costs a parse into a tree and a dump
 * of it: most of a controller's CPU when thousands of agents list the
 * cluster at once.  stored_text_add_revision writes the same bytes by
 * copying the text and splicing the field in.
 */
#ifndef WEFT_CONTROLLER_STORED_TEXT_H
#define WEFT_CONTROLLER_STORED_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Called with consecutive pieces of the output; non-zero stops the
 * write (jansson's json_dump_callback_t has this shape). */
typedef int (*stored_text_add_fn)(const char *piece, size_t len, void *arg);

/* Write through add() exactly what
 *     json_dump_callback(obj_from_kv(kv), add, arg, JSON_COMPACT | JSON_PRESERVE_ORDER)
 * writes for a kv holding text (len bytes) at revision rev: the object
 * with "resourceVersion":"REV" last in its top-level "metadata".
 * Returns 0, or -EINVAL without calling add() when the text is not in
 * the form this recognises (then the caller parses it: obj_from_kv
 * decides, and may find it unreadable), or -ENOMEM when add() failed.
 * Borrowed: text. */
int stored_text_add_revision(const char *text, size_t len, int64_t rev, stored_text_add_fn add, void *arg)
	__attribute__((warn_unused_result));

#endif
