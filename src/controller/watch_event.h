/*
 * watch_event.h — one store event as watchers see it (private to the watch
 * hub, watch.c): the object it carries, serialised as a watch line, and
 * what a watcher with a selector is sent for it.
 *
 * A watch line is {"type":T,"object":O}\n with O as obj_from_kv makes it
 * (metadata.resourceVersion added).  A deleted object carries the delete's
 * revision, and so does the object an update moved out of a selection.
 *
 * Selectors follow Kubernetes' watch cache: for a watcher with a selector,
 * an event is judged on the object after it ("now") and before it
 * ("before"):
 *
 *      before \ now  |  matches            |  does not / deleted
 *     ---------------+---------------------+-----------------------------
 *      matches       |  the event as is    |  DELETED, the object before
 *                    |  (MODIFIED)         |  (or the DELETED as is)
 *      does not /    |  ADDED, the object  |  nothing
 *      created       |  now (or as is)     |
 *
 * so a label change that takes an object out of a watcher's selection is
 * a DELETED for it and one that brings it in an ADDED, and a client that
 * keeps a cache of what it was sent stays equal to the selection.
 *
 * Ownership: a struct watch_event owns the objects it parsed
 * (watch_event_free); the views borrow from them.  Lines are malloc'd for
 * the caller.
 */
#ifndef WEFT_CONTROLLER_WATCH_EVENT_H
#define WEFT_CONTROLLER_WATCH_EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/selector.h"
#include "store/store.h"

/* The line of an update, and the same event turned into an ADDED: the
 * hub keeps one line and sends the other as ADDED_HEAD + line tail. */
#define WATCH_MODIFIED_HEAD "{\"type\":\"MODIFIED\""
#define WATCH_ADDED_HEAD "{\"type\":\"ADDED\""

/* Whether an update changed what a node's network is built from. */
enum watch_network {
	WATCH_NETWORK_UNKNOWN,	/* not compared yet (watch_event_parse leaves it so) */
	WATCH_NETWORK_SAME,
	WATCH_NETWORK_CHANGED,
};

struct watch_event {
	const char *type;		/* "ADDED", "MODIFIED", "DELETED" */
	json_t *obj;			/* what the event's line carries */
	json_t *old;			/* an update's object before it (when asked for), at the event's revision */
	struct selector_view now, before;
	bool has_now, has_before;
	/* an update: selector_network_changed(old, obj), computed by
	 * watch_event_delivery the first time a changes=network watcher
	 * needs it (most updates are judged for none) and kept */
	enum watch_network network;
};

/* What a watcher with a selector is sent for an event. */
enum watch_delivery {
	WATCH_NOTHING,
	WATCH_AS_IS,		/* the event's line */
	WATCH_ENTERED,		/* an update into the selection: ADDED, the object now */
	WATCH_LEFT,		/* an update out of it: DELETED, the object before */
};

/* Parse e: 0, or -1 when its value is not an object (it is skipped, as
 * lists skip it).  judged: for watchers with selectors, the views are
 * filled and an update's old value is parsed too; otherwise only obj and
 * type (what a line needs). */
int watch_event_parse(const struct store_event *e, bool judged, struct watch_event *ev);
void watch_event_free(struct watch_event *ev);

/* What judging an event for a selector needs, kept with the event in
 * the hub's ring without the objects (their text is the ring's line):
 * the views (the fields copied, the labels held), whether it is an
 * update, and, for one, whether it changed a node's network (compared
 * when the record is made).  A selective watcher that opens after the
 * event is judged from it (watch.c, its backlog from the ring) as the
 * watchers the hub knew then were judged from the event. */
struct watch_judge {
	struct selector_view now, before;
	bool has_now, has_before, update;
	enum watch_network network;
};
/* From a judged event (watch_event_parse with judged); NULL on ENOMEM.
 * Freed with watch_judge_free (accepts NULL). */
struct watch_judge *watch_judge_of(struct watch_event *ev);
void watch_judge_free(struct watch_judge *j);
/* What a watcher with selector s is sent for the event: the same answer
 * as watch_event_delivery on the event it was made from. */
enum watch_delivery watch_judge_delivery(const struct watch_judge *j, const struct selector *s);

/* {"type":type,"object":obj}\n, NUL-terminated, *len without the NUL; NULL on ENOMEM. */
char *watch_event_line(const char *type, const json_t *obj, size_t *len);

/* What a watcher with selector s is sent for ev.  May fill ev->network
 * (so ev is not const): an event is judged by one thread at a time — the
 * hub's sync, under the store lock, or a watcher's own backlog read, on
 * an event of its own. */
enum watch_delivery watch_event_delivery(struct watch_event *ev, const struct selector *s);

/* The line delivery d of ev is (WATCH_NOTHING: NULL). */
char *watch_event_line_for(const struct watch_event *ev, enum watch_delivery d, size_t *len);

#endif
