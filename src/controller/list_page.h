/*
 * list_page.h — the items a list answers with: read from the store at
 * one revision, filtered by the query's selectors, cut at its limit, and
 * the continue token that reads the rest at the same revision.
 *
 * Paging, as Kubernetes has it: limit=N answers at most N items and, when
 * more may follow, metadata.continue, an opaque token (base64url of
 * {"v":1,"rv":R,"start":KEY,"n":SENT,"total":T}: the list's revision, the
 * last key sent below the collection's prefix, how many items went before,
 * the collection's size at R when it was counted).  A continue reads from
 * the same revision R (store_range_at), so the pages of one list are one
 * snapshot whatever was written between them; once R is compacted the
 * token is 410 Expired (list again).  remainingItemCount (total - sent) is
 * given for lists without selectors, whose first page counts the
 * collection; with selectors it is unknown and left out, and a page may
 * then be followed by an empty one (the keys after it matched nothing).
 *
 * resourceVersion on a list (not a continue): a revision newer than the
 * store's is 504 Timeout, "Too large resource version", with
 * details.retryAfterSeconds 1 (Kubernetes' answer once its cache has
 * waited); an older one is served from the latest state, as Kubernetes'
 * default (NotOlderThan) allows.
 *
 * Ownership: list_page_free frees what list_page_read filled (and accepts
 * a zeroed page).
 */
#ifndef WEFT_CONTROLLER_LIST_PAGE_H
#define WEFT_CONTROLLER_LIST_PAGE_H

#include <stdint.h>

#include "controller/controller.h"
#include "controller/list_query.h"
#include "store/store.h"

struct list_page {
	struct store_kv_list items;	/* in key order; items.revision: the list's resourceVersion */
	char *cont;			/* metadata.continue, or NULL */
	int64_t remaining;		/* metadata.remainingItemCount, or -1: left out */
};

/* The page q asks for of kind k's collection (ns: "" or NULL for all
 * namespaces, or a cluster-scoped kind), read from s.  0, or -1 with st set:
 * 400 (a continue token this server did not make), 410 (its revision is
 * compacted), 504 (resourceVersion newer than the store's), 500. */
int list_page_read(struct store *s, const struct kind_info *k, const char *ns, const struct list_query *q,
		   struct list_page *out, struct status *st) __attribute__((warn_unused_result));
void list_page_free(struct list_page *p);

/* A resourceVersion rv (<= 0: none) of a list or get against the store's
 * revision: 0, or -1 with st set to the 504 above (500 if the store
 * failed). */
int list_revision_check(struct store *s, int64_t rv, struct status *st) __attribute__((warn_unused_result));

#endif
