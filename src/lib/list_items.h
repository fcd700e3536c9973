/*
 * list_items.h — a Kubernetes list's items, one at a time, from its text.
 *
 * Parsed whole, a list of a thousand Services is one tree of some 50,000
 * values, allocated together and freed together after the last item was
 * used; parsed an item at a time, each tree is small and is freed while
 * its memory is still warm.  With a thousand agents in one process
 * (weft-hollow) the same parse costs about 30 % less CPU that way.
 *
 * This module only finds where things are, without allocating: the
 * caller parses each item (jansson decides what is valid JSON in it).
 * list_items_find() checks the envelope — a top-level object whose
 * values are skipped by their brackets and strings, with nothing but
 * white space after it — and finds its "items" array and its "metadata"
 * object; list_items_next() steps through the array.  Anything it does
 * not recognise is -EINVAL, and the caller parses the text whole instead:
 * a key with an escape in it (it might spell "items"), a key met twice,
 * "items" that is not an array, "metadata" that is not an object.  The
 * envelope's scalars and other keys' strings are skipped, not validated.
 *
 * Ownership: everything points into the caller's text, which must outlive
 * the walk.
 */
#ifndef WEFT_LIB_LIST_ITEMS_H
#define WEFT_LIB_LIST_ITEMS_H

#include <stdbool.h>
#include <stddef.h>

struct list_items {
	const char *p, *end;		/* the array's inside: from the next item to its ']' */
	bool started;			/* an item was given: a ',' comes first */
	const char *meta;		/* the "metadata" object's text, or NULL */
	size_t meta_len;
};

/* 0 and *it ready (a list without "items" has none), or -EINVAL. */
int list_items_find(const char *text, size_t len, struct list_items *it) __attribute__((warn_unused_result));
/* 1 and the next item's text, 0 after the last, -EINVAL when the array
 * is not well formed there. */
int list_items_next(struct list_items *it, const char **item, size_t *len) __attribute__((warn_unused_result));

#endif
