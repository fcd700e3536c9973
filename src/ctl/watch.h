/*
 * watch.h — the events of a watch stream as weftctl reads them (one JSON
 * object a line: {"type": "ADDED", "object": {...}}); `get -w` itself is
 * ctl_watch (ctl.h).
 *
 * Ownership: ctl_event_parse fills *ev, which owns the parsed JSON; object
 * and rv are borrowed from it until ctl_event_free.
 */
#ifndef WEFT_CTL_WATCH_H
#define WEFT_CTL_WATCH_H

#include <jansson.h>
#include <stddef.h>

enum ctl_event_type { CTL_EV_ADDED, CTL_EV_MODIFIED, CTL_EV_DELETED, CTL_EV_BOOKMARK, CTL_EV_ERROR };

struct ctl_event {
	enum ctl_event_type type;
	json_t *root;			/* the whole event */
	const json_t *object;		/* its object (a Status for ERROR) */
	const char *rv;			/* object's metadata.resourceVersion, NULL if none (or ERROR) */
	long code;			/* ERROR: the Status code (410: relist) */
};

/* One line of the stream.  0, or -EPROTO with why in err (not JSON, no
 * type or object, an unknown type); *ev then needs no free. */
int ctl_event_parse(const char *line, size_t len, struct ctl_event *ev, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void ctl_event_free(struct ctl_event *ev);

#endif
