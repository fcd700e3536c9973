/*
 * list_query.h — what a list or a watch asks for in its query string,
 * read and checked before the request takes any lock:
 *
 *   labelSelector, fieldSelector   model/selector.h (the kind's fields)
 *   resourceVersion                decimal digits; 0 is "any" (none)
 *   limit, continue                lists: a page of at most limit items,
 *                                  and the token of the page after
 *   timeoutSeconds                 watches: decimal digits; longer than
 *                                  WATCH_TIMEOUT_MAX is cut to it (never
 *                                  an overflow), 0 is none
 *   allowWatchBookmarks            watches: true/false as Go's ParseBool
 *
 * Anything malformed is 400 BadRequest naming the parameter and its value
 * (the selector errors say where in it).  resourceVersion (other than 0)
 * and continue together are refused, as Kubernetes refuses them.
 *
 * Ownership: a parsed query owns its selector (list_query_free, which
 * accepts a zeroed query); the watch hub takes it over (watch_spec).
 */
#ifndef WEFT_CONTROLLER_LIST_QUERY_H
#define WEFT_CONTROLLER_LIST_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/controller.h"
#include "model/selector.h"

#define WATCH_TIMEOUT_MAX 1800		/* seconds (Kubernetes' default --min-request-timeout) */
#define LIST_CONTINUE_MAX 4096		/* bytes of a continue token */

struct list_query {
	struct selector sel;
	int64_t rv;			/* resourceVersion; -1: none (absent, "" or 0) */
	size_t limit;			/* 0: every item */
	char cont[LIST_CONTINUE_MAX + 1];	/* continue token; "": none */
	unsigned timeout;		/* watch: seconds, 0 none */
	bool bookmarks;			/* watch: allowWatchBookmarks */
};

/* The value of query parameter name (URL-decoded), or NULL when absent. */
typedef const char *(*list_query_get_fn)(void *ctx, const char *name);

/* The query of a request on kind k (a list, or a watch).  0, or -1 with st
 * set (400). */
int list_query_parse(struct list_query *q, const struct kind_info *k, bool watch, list_query_get_fn get,
		     void *ctx, struct status *st) __attribute__((warn_unused_result));
void list_query_free(struct list_query *q);

#endif
