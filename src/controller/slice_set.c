/*
 * slice_set.c — what the two slice controllers share: the index of the
 * slices of a kind, and the plan that makes one owner's slices hold what
 * is wanted.  slices_ctl.c keeps EndpointSlices (an owner is a Service,
 * "ns/svc"); peers_ctl.c keeps PodPeerSlices (an owner is a node).  Each
 * file makes its own records, names, objects and writes; this one only
 * files the records and plans.
 *
 * The index (JSON objects as maps; a "set" has true values):
 *   slices:   key → record      every slice of the kind (ours or not);
 *                               key "ns/name", or "name" cluster-scoped
 *   by_owner: owner → {name: true}   the slices of ours, by owner
 * A record is the caller's, with these members this file reads:
 *   ours      true for a slice of ours; false: a name only (kept free)
 *   owner     its owner (ours only)
 *   manager   which set of the owner it is in (optional)
 *   group     its slice_pack group
 *   entries   key → entry, what it holds
 *   irregular stored unlike its controller writes it: rewritten if kept
 *
 * Invariant: by_owner[o] names exactly the slices whose record is ours
 * with owner o (slice_set_put keeps it so).
 *
 * Threads: none; the callers run under the API's lock.
 */
#include "controller/controller.h"
#include "model/slice_pack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 600		/* "ns/name": a namespace <= 63, a name <= 253 */

int slice_set_init(struct slice_set *s)
{
	s->slices = json_object();
	s->by_owner = json_object();
	if (!s->slices || !s->by_owner) {
		slice_set_free(s);
		return -ENOMEM;
	}
	return 0;
}

void slice_set_free(struct slice_set *s)
{
	json_decref(s->slices);
	json_decref(s->by_owner);
	s->slices = s->by_owner = NULL;
}

void slice_set_clear(struct slice_set *s)
{
	json_object_clear(s->slices);
	json_object_clear(s->by_owner);
}

static void key_of(char *key, size_t len, const char *ns, const char *name)
{
	if (ns && *ns)
		snprintf(key, len, "%s/%s", ns, name);
	else
		snprintf(key, len, "%s", name);
}

const json_t *slice_set_get(const struct slice_set *s, const char *ns, const char *name)
{
	char key[KEY_MAX];

	key_of(key, sizeof(key), ns, name);
	return json_object_get(s->slices, key);
}

const char *slice_set_owner(const json_t *rec)
{
	return rec && json_is_true(json_object_get(rec, "ours")) ? json_string_value(json_object_get(rec, "owner"))
								  : NULL;
}

void slice_set_put(struct slice_set *s, const char *ns, const char *name, json_t *rec)
{
	char key[KEY_MAX];
	const char *owner;
	json_t *set;

	key_of(key, sizeof(key), ns, name);
	owner = slice_set_owner(json_object_get(s->slices, key));
	if (owner) {
		set = json_object_get(s->by_owner, owner);
		json_object_del(set, name);
		if (set && !json_object_size(set))
			json_object_del(s->by_owner, owner);
	}
	if (!rec) {
		json_object_del(s->slices, key);
		return;
	}
	owner = slice_set_owner(rec);
	if (owner) {
		set = json_object_get(s->by_owner, owner);
		if (!set) {
			set = json_object();
			json_object_set_new(s->by_owner, owner, set);
		}
		json_object_set_new(set, name, json_true());
	}
	json_object_set_new(s->slices, key, rec);
}

static int cmp_have(const void *a, const void *b)
{
	return strcmp(((const struct slice_pack_have *)a)->name, ((const struct slice_pack_have *)b)->name);
}

int slice_set_plan(const struct slice_set *s, const char *ns, const char *owner, const char *manager,
		   const json_t *want, size_t max, struct slice_pack_plan *plan, json_t **held)
{
	const json_t *set = json_object_get(s->by_owner, owner), *t;
	struct slice_pack_have *have = NULL;
	const char *name;
	size_t n = 0;
	int rc = -ENOMEM;

	memset(plan, 0, sizeof(*plan));
	*held = json_array();
	have = calloc(json_object_size(set) + 1, sizeof(*have));
	if (!*held || !have)
		goto out;
	/* the records and names are held for the plan's life: writes replace them in the index */
	json_object_foreach((json_t *)set, name, t) {
		const json_t *rec = slice_set_get(s, ns, name);
		json_t *h;

		if (!rec || (manager && strcmp(json_string_value(json_object_get(rec, "manager")) ?: "", manager)))
			continue;
		h = json_pack("{s:s, s:O}", "name", name, "rec", rec);
		if (!h || json_array_append_new(*held, h) < 0)
			goto out;
		have[n++] = (struct slice_pack_have){ json_string_value(json_object_get(h, "name")),
						      json_string_value(json_object_get(rec, "group")),
						      json_object_get(rec, "entries"),
						      json_is_true(json_object_get(rec, "irregular")) };
	}
	qsort(have, n, sizeof(*have), cmp_have);
	rc = slice_pack(have, n, want, max, plan);
out:
	free(have);
	if (rc) {
		json_decref(*held);
		*held = NULL;
	}
	return rc;
}
