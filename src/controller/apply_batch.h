/*
 * apply_batch.h — POST /weft/v1/apply (docs/api.md, "Batched apply"): the
 * objects of a v1 List applied one by one, in order, each as `weftctl
 * apply -f` applies a document: created when it is absent, else replaced
 * by the item without its resourceVersion, uid and creationTimestamp, the
 * server deciding whether that changed anything (configured) or not
 * (unchanged).
 *
 * With create_only (?mode=create) an item is only ever created: one whose
 * object exists fails as its POST would (409 AlreadyExists).
 *
 * Each item is its own write, through the very calls of a POST and a PUT
 * (the caller's ops: authorization, admission, commit, watchers); one that
 * fails is that item's answer and the next is tried.  The items are taken
 * APPLY_GROUP_ITEMS at a time:
 *
 *   parse ──► for each group: check (no lock) ──► [lock: write] ──► next group
 *                                                                 └─► answer
 *
 *   check   the item names its object (kind the API serves, name, namespace
 *           for a namespaced kind); ops->admit (the read its apply starts
 *           with, the client's write budget); registry_check_write, for
 *           kinds whose check does not depend on whether the object exists
 *   write   registry_revision says whether it exists (create or replace),
 *           the other kinds' registry_check_write, then ops->write
 *
 * So the lock is held only to plan and commit a group's writes, and is
 * free while the next group is checked: a writer or reader waiting for it
 * gets it between groups.  Durability is the caller's: one flush after
 * the run covers every item written (store_sync).
 *
 * Ownership: apply_batch_parse takes a reference of the List; the batch
 * is freed with apply_batch_free (accepts a zeroed one).  The answer is a
 * new reference, the caller's.
 */
#ifndef WEFT_CONTROLLER_APPLY_BATCH_H
#define WEFT_CONTROLLER_APPLY_BATCH_H

#include "controller/controller.h"

#define APPLY_PATH "/weft/v1/apply"
#define APPLY_MAX_ITEMS 1000	/* items of one request (413 beyond) */
#define APPLY_GROUP_ITEMS 32	/* items written under one hold of the lock */

enum apply_result { APPLY_PENDING, APPLY_CREATED, APPLY_CONFIGURED, APPLY_UNCHANGED, APPLY_FAILED, APPLY_RESULTS };

struct apply_item {
	json_t *obj;			/* the item (a reference) */
	struct route r;			/* its object: kind, namespace, name */
	char kind[64];			/* its kind as written (for an answer whose kind is unknown) */
	bool checked;			/* registry_check_write passed before the lock */
	enum apply_result result;
	struct status st;		/* its answer: the code, and reason and message when it failed */
	int64_t rev;			/* its resourceVersion, when written */
};

struct apply_batch {
	struct apply_item *items;
	size_t n;
	/* ?mode=create: every item is a create, as its POST; one whose object
	 * exists fails 409 AlreadyExists and is left as it is (a reporter of
	 * new objects that must not replace what others wrote).  Set by the
	 * caller after apply_batch_parse. */
	bool create_only;
};

/* What the caller (the API) does for each item, as for a request of its
 * own to the item's path. */
struct apply_ops {
	void *arg;
	/* No lock held: may the client apply the object r names at all (the
	 * read `weftctl apply` starts with; a node's write budget: index is
	 * the item's place, 0 the first)?  0, or -1 with st set. */
	int (*admit)(void *arg, size_t index, const struct route *r, struct status *st);
	/* Under the lock: the POST (create) or PUT of body to r, as that
	 * request would make it.  0 with *out (a new reference: the object as
	 * stored), or -1 with st set. */
	int (*write)(void *arg, const struct route *r, bool create, json_t *body, json_t **out, struct status *st);
	/* Take (true) or let go of (false) the lock writes need. */
	void (*lock)(void *arg, bool take);
};

/* body (borrowed; the batch keeps a reference of its items) must be a v1
 * List of at most max_items items: 0 with *b filled, each item's object
 * named in its route or the item failed (400: not an object, a kind the
 * API does not serve, no name, a namespaced kind without namespace); or
 * -1 with st set (400 not a List, 413 too many items, 500). */
int apply_batch_parse(const json_t *body, size_t max_items, struct apply_batch *b, struct status *st)
	__attribute__((warn_unused_result));
/* Apply every item not failed yet, in order (see above); each ends
 * created, configured, unchanged or failed. */
void apply_batch_run(struct apply_batch *b, struct registry *reg, const struct apply_ops *ops);
/* {"apiVersion":"weft.io/v1","kind":"ApplyResult","items":[{kind, namespace,
 * name, result, code, reason, message, resourceVersion}]}: a new
 * reference, or NULL out of memory. */
json_t *apply_batch_answer(const struct apply_batch *b);
/* "created", "configured", "unchanged", "failed" ("pending" before a run). */
const char *apply_result_name(enum apply_result r);
void apply_batch_free(struct apply_batch *b);

#endif
