/*
 * apply_batch.c — the items of POST /weft/v1/apply, each applied as
 * `weftctl apply` applies one document (see apply_batch.h).
 *
 * An item's life:
 *
 *   PENDING ──name_item──► (not named: FAILED)
 *      │ check_item: admit, registry_check_write      (no lock)
 *      ▼
 *   PENDING ──write_item: registry_revision ─► 0: create ─┐   (lock held)
 *                                          └► n: replace ┴─► ops->write
 *        ──► CREATED | CONFIGURED (revision moved) | UNCHANGED (it did not)
 *        └─► FAILED (any step; the status says why)
 *
 * Invariants
 *  1. Items are written in the List's order, each in a transaction of its
 *     own (ops->write is one POST or PUT): one that fails leaves the
 *     others as they would be without it.
 *  2. An item's check is the one its own POST or PUT gets.  It runs
 *     before the lock for every kind but those where it depends on
 *     whether the object exists (a kind the controller writes, the
 *     ClusterNetwork: a create of them is refused where a replace may
 *     pass); those are checked under the lock once that is known.  For
 *     the others, with the body naming its object (name_item), the check
 *     of a create and of a replace are the same.
 *  3. The lock is let go after every APPLY_GROUP_ITEMS items, and the next
 *     group's checks run without it.
 */
#include "controller/apply_batch.h"

#include "model/validate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const result_names[] = {
	[APPLY_PENDING] = "pending", [APPLY_CREATED] = "created", [APPLY_CONFIGURED] = "configured",
	[APPLY_UNCHANGED] = "unchanged", [APPLY_FAILED] = "failed",
};

const char *apply_result_name(enum apply_result r)
{
	return r < APPLY_RESULTS ? result_names[r] : "?";
}

__attribute__((format(printf, 4, 5))) static int item_fail(struct apply_item *it, int code, const char *reason,
							   const char *fmt, ...)
{
	va_list ap;

	it->result = APPLY_FAILED;
	it->st.code = code;
	it->st.reason = reason;
	va_start(ap, fmt);
	vsnprintf(it->st.message, sizeof(it->st.message), fmt, ap);
	va_end(ap);
	return -1;
}

/* A string member of o, or NULL (absent, not a string, or ""). */
static const char *text_of(const json_t *o, const char *member)
{
	const char *s = json_string_value(json_object_get(o, member));

	return s && *s ? s : NULL;
}

/* The object item i names, into it->r; what the server owns taken out of
 * it, as weftctl leaves it out of what it sends.  0, or -1 and FAILED. */
static int name_item(struct apply_item *it, size_t i)
{
	const struct kind_info *k;
	const char *kind, *api, *name, *ns;
	json_t *md;

	if (!json_is_object(it->obj))
		return item_fail(it, 400, "BadRequest", "items[%zu]: an item must be a JSON object, not %s", i,
				 validate_type_name(it->obj));
	kind = text_of(it->obj, "kind");
	api = text_of(it->obj, "apiVersion");
	md = json_object_get(it->obj, "metadata");
	name = text_of(md, "name");
	ns = text_of(md, "namespace");
	/* what the answer names, however far the item gets (cut to fit) */
	snprintf(it->kind, sizeof(it->kind), "%s", kind ? kind : "");
	snprintf(it->r.name, sizeof(it->r.name), "%s", name ? name : "");
	snprintf(it->r.ns, sizeof(it->r.ns), "%s", ns ? ns : "");
	if (!kind)
		return item_fail(it, 400, "BadRequest", "items[%zu]: kind: required", i);
	k = kind_by_kind(kind);
	if (!k)
		return item_fail(it, 400, "BadRequest", "items[%zu]: kind '%.63s' is not a kind this API serves", i,
				 kind);
	if (!k->namespaced)
		it->r.ns[0] = 0;	/* one that is set anyway: the request check says so */
	if (api && strcmp(api, k->api_version) != 0)
		return item_fail(it, 400, "BadRequest", "items[%zu]: apiVersion '%.100s': this API serves %s as '%s'",
				 i, api, k->kind, k->api_version);
	if (!name)
		return item_fail(it, 400, "BadRequest", "items[%zu] (%s): metadata.name: required", i, k->kind);
	if (strlen(name) >= sizeof(it->r.name))
		return item_fail(it, 400, "BadRequest", "items[%zu] (%s): metadata.name: longer than %zu bytes", i,
				 k->kind, sizeof(it->r.name) - 1);
	if (k->namespaced && !ns)
		return item_fail(it, 400, "BadRequest", "items[%zu] (%s %s): metadata.namespace: required (%s is namespaced)",
				 i, k->kind, name, k->kind);
	if (k->namespaced && strlen(ns) >= sizeof(it->r.ns))
		return item_fail(it, 400, "BadRequest", "items[%zu] (%s %s): metadata.namespace: longer than %zu bytes",
				 i, k->kind, name, sizeof(it->r.ns) - 1);
	it->r.kind = k;
	it->r.has_name = true;
	json_object_del(md, "resourceVersion");
	json_object_del(md, "uid");
	json_object_del(md, "creationTimestamp");
	return 0;
}

int apply_batch_parse(const json_t *body, size_t max_items, struct apply_batch *b, struct status *st)
{
	const json_t *items = json_object_get(body, "items"), *item;
	const char *kind = json_string_value(json_object_get(body, "kind"));
	const char *api = json_string_value(json_object_get(body, "apiVersion"));
	size_t i, n;

	memset(b, 0, sizeof(*b));
	if (!kind || strcmp(kind, "List") != 0 || !api || strcmp(api, "v1") != 0) {
		status_set(st, 400, "BadRequest",
			   "the body must be a v1 List ({\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[...]}), "
			   "not apiVersion '%.64s' kind '%.64s'", api ? api : "", kind ? kind : "");
		return -1;
	}
	if (items && !json_is_null(items) && !json_is_array(items)) {
		status_set(st, 400, "BadRequest", "items: must be a list, not %s", validate_type_name(items));
		return -1;
	}
	n = json_array_size(items);
	if (n > max_items) {
		status_set(st, 413, "RequestEntityTooLarge",
			   "the List has %zu items, more than %zu (the limit of one %s): send them in several requests",
			   n, max_items, APPLY_PATH);
		return -1;
	}
	if (n && !(b->items = calloc(n, sizeof(*b->items)))) {
		status_set(st, 500, "InternalError", "%s", "out of memory");
		return -1;
	}
	b->n = n;
	json_array_foreach(items, i, item) {
		b->items[i].obj = json_incref((json_t *)item);
		(void)name_item(&b->items[i], i);
	}
	return 0;
}

/* Whether an item of kind k is checked differently as a create and as a
 * replace (invariant 2). */
static bool check_needs_stored(const struct kind_info *k)
{
	return k->controller_owned || k->id == KIND_CLUSTERNETWORK;
}

/* Without the lock: what item i's own request would check before it. */
static void check_item(struct apply_item *it, size_t i, const struct apply_ops *ops)
{
	const struct route *r = &it->r;

	if (it->result != APPLY_PENDING)
		return;
	if (ops->admit(ops->arg, i, r, &it->st)) {
		it->result = APPLY_FAILED;
		return;
	}
	if (check_needs_stored(r->kind))
		return;
	if (registry_check_write(r->kind, r->ns, r->name, it->obj, false, &it->st)) {
		it->result = APPLY_FAILED;
		return;
	}
	it->checked = true;
}

/* Under the lock: the POST or PUT of the item, and what it did.  A
 * create_only batch POSTs an item whose object exists too: the POST's
 * own 409 is its answer. */
static void write_item(struct apply_item *it, bool create_only, struct registry *reg, const struct apply_ops *ops)
{
	const struct route *r = &it->r;
	const char *rv;
	json_t *out = NULL;
	int64_t before = 0, after = 0;
	bool create;

	if (it->result != APPLY_PENDING)
		return;
	if (registry_revision(reg, r->kind, r->ns, r->name, &before, &it->st))
		goto failed;
	create = before == 0 || create_only;
	if (!it->checked && registry_check_write(r->kind, r->ns, create ? NULL : r->name, it->obj, create, &it->st))
		goto failed;
	if (ops->write(ops->arg, r, create, it->obj, &out, &it->st))
		goto failed;
	rv = obj_str(out, "metadata.resourceVersion");
	if (!rv || model_revision_parse(rv, &after))
		after = 0;
	json_decref(out);
	it->rev = after;
	it->result = create ? APPLY_CREATED : after == before ? APPLY_UNCHANGED : APPLY_CONFIGURED;
	it->st.code = create ? 201 : 200;
	it->st.reason = NULL;
	it->st.message[0] = 0;
	return;
failed:
	it->result = APPLY_FAILED;
}

void apply_batch_run(struct apply_batch *b, struct registry *reg, const struct apply_ops *ops)
{
	for (size_t g = 0; g < b->n; g += APPLY_GROUP_ITEMS) {
		size_t end = g + APPLY_GROUP_ITEMS < b->n ? g + APPLY_GROUP_ITEMS : b->n;

		for (size_t i = g; i < end; i++)
			check_item(&b->items[i], i, ops);
		ops->lock(ops->arg, true);
		for (size_t i = g; i < end; i++)
			write_item(&b->items[i], b->create_only, reg, ops);
		ops->lock(ops->arg, false);
	}
}

/* Text as a JSON string: text cut short inside a UTF-8 sequence (or
 * quoting bytes that are not UTF-8) with such bytes as '?'. */
static json_t *text_json(const char *m)
{
	char clean[sizeof(((struct status *)0)->message)];
	json_t *s = json_string(m);
	size_t i;

	if (s)
		return s;
	for (i = 0; m[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (unsigned char)m[i] < 0x20 || (unsigned char)m[i] >= 0x7f ? '?' : m[i];
	clean[i] = 0;
	return json_string(clean);
}

static json_t *item_answer(const struct apply_item *it)
{
	const struct kind_info *k = it->r.kind;
	json_t *o = json_object();
	char rv[24];

	if (!o)
		return NULL;
	json_object_set_new(o, "kind", k ? json_string(k->kind) : text_json(it->kind));
	if (it->r.ns[0])
		json_object_set_new(o, "namespace", text_json(it->r.ns));
	json_object_set_new(o, "name", text_json(it->r.name));
	json_object_set_new(o, "result", json_string(apply_result_name(it->result)));
	json_object_set_new(o, "code", json_integer(it->st.code));
	if (it->result == APPLY_FAILED) {
		json_object_set_new(o, "reason", json_string(it->st.reason ? it->st.reason : "InternalError"));
		json_object_set_new(o, "message", text_json(it->st.message));
	} else {
		snprintf(rv, sizeof(rv), "%" PRId64, it->rev);
		json_object_set_new(o, "resourceVersion", json_string(rv));
	}
	return o;
}

json_t *apply_batch_answer(const struct apply_batch *b)
{
	json_t *items = json_array(), *out;

	if (!items)
		return NULL;
	for (size_t i = 0; i < b->n; i++) {
		json_t *o = item_answer(&b->items[i]);

		if (!o || json_array_append_new(items, o)) {
			json_decref(items);
			return NULL;
		}
	}
	out = json_pack("{s:s, s:s, s:o}", "apiVersion", "weft.io/v1", "kind", "ApplyResult", "items", items);
	return out;
}

void apply_batch_free(struct apply_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		json_decref(b->items[i].obj);
	free(b->items);
	memset(b, 0, sizeof(*b));
}
