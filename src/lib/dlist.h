/*
 * dlist.h — an intrusive, circular doubly-linked list: a record embeds a
 * struct dlist per list it can be on, and a list is a struct dlist head
 * (dlist_init) that is no record's.  Adding and removing are O(1) and
 * allocate nothing, so a record can sit in a group (the pods of a
 * namespace) and leave it without a search.
 *
 *	head <-> a <-> b <-> c <-> (head)
 *
 * A link that is on no list is either zeroed or dlist_init'ed;
 * dlist_remove() leaves it init'ed (on no list), so removing twice is
 * harmless.  The records are the caller's.  Not thread-safe.
 */
#ifndef WEFT_LIB_DLIST_H
#define WEFT_LIB_DLIST_H

#include <stdbool.h>
#include <stddef.h>

struct dlist {
	struct dlist *prev, *next;
};

/* The record holding link (NULL for NULL): link is evaluated twice. */
#define DLIST_ENTRY(link, type, member) \
	((link) ? (type *)(void *)((char *)(link) - offsetof(type, member)) : (type *)NULL)

static inline void dlist_init(struct dlist *head)
{
	head->prev = head->next = head;
}

static inline bool dlist_empty(const struct dlist *head)
{
	return head->next == head;
}

/* Is link on a list (neither zeroed nor init'ed)? */
static inline bool dlist_linked(const struct dlist *link)
{
	return link->next && link->next != link;
}

/* Add link at the end of the list head. */
static inline void dlist_append(struct dlist *head, struct dlist *link)
{
	link->prev = head->prev;
	link->next = head;
	head->prev->next = link;
	head->prev = link;
}

static inline void dlist_remove(struct dlist *link)
{
	if (dlist_linked(link)) {
		link->prev->next = link->next;
		link->next->prev = link->prev;
	}
	dlist_init(link);
}

/* The link after link in the list head, or NULL at its end. */
static inline struct dlist *dlist_next(const struct dlist *head, const struct dlist *link)
{
	return link->next == head ? NULL : link->next;
}

/* The first link of the list head, or NULL when it is empty. */
static inline struct dlist *dlist_first(const struct dlist *head)
{
	return dlist_next(head, head);
}

#endif
