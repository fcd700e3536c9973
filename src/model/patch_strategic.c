/*
 * patch_strategic.c — Kubernetes' strategic merge patch, for weft's kinds.
 *
 * A JSON Merge Patch (patch_merge.c) whose lists are merged by key where
 * the field's type says so (upstream: the patchStrategy and patchMergeKey
 * tags of k8s.io/api and apimachinery's ObjectMeta, read from their
 * sources; the table `rules` below).  Every other list is replaced whole.
 *
 *   map       members merged; null removes one; a value of another type
 *             (or one the object lacks) replaces, built from the patch
 *   keyed     items matched by their merge key are merged (as maps), new
 *             ones added; stored items the patch does not name are kept
 *   set       a list of scalars with strategy merge (metadata.finalizers,
 *             a Node's spec.podCIDRs): the union, without duplicates
 *
 * Directives:
 *   {"$patch": "replace"}   in a map: the map becomes the rest of the
 *                           patch map; as a list item: the list becomes the
 *                           other items of the patch
 *   {"$patch": "delete"}    in a map: the map is emptied ({}; an absent or
 *                           non-map value is removed); as a list item with
 *                           the merge key: the items with that key go
 *   {"$patch": "merge"}     what a map and a keyed list do anyway; accepted
 *                           (kube-apiserver refuses it) and nothing more
 *   "$retainKeys": [names]  the map keeps only those members (after which
 *                           the patch is merged); every member the patch
 *                           sets must be named
 *   "$deleteFromPrimitiveList/F": [values]   those values leave list F
 *   "$setElementOrder/F": [items or keys]    list F, merged with the patch's
 *                           F if there is one, is ordered by it; items it
 *                           does not name keep their place among the others
 * Any other member whose name starts with '$' is refused.
 *
 * Order of a merged list, as upstream: the patch's items in the patch's
 * order (or $setElementOrder's), woven into the stored items left in
 * their stored order — a stored item goes before a patch item when it
 * stood before it in the stored list; new items go before stored ones.
 *
 * Where weft differs from upstream on purpose:
 *  - Container ports and Service ports are keyed by the port and its
 *    protocol (TCP when absent), as their listMapKeys are.  Upstream's
 *    strategic merge keys them by the port alone, and k8s.io/api itself
 *    warns that merging them so may corrupt the list (53/UDP and 53/TCP
 *    collapse into one).
 *  - Malformed directives are 400 and items lacking their merge key 422,
 *    never 500.
 *
 * Bounds: the recursion follows the patch, which patch_check held to
 * MODEL_MAX_DEPTH levels; a merged list costs O(n log n) (items are found
 * by hashing their keys, never by scanning).
 */
#include "model/patch_shared.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K(x) (1u << KIND_##x)
#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define SET_ORDER "$setElementOrder/"
#define DELETE_FROM "$deleteFromPrimitiveList/"
#define PATH_TEXT_MAX 256

/* A list field that is merged, not replaced. */
struct list_rule {
	unsigned kinds;		/* bits of enum kind_id; 0: every kind (ObjectMeta) */
	const char *path;	/* field names from the object, '.'-joined (a list's items add none) */
	const char *key;	/* merge key; NULL: a set of scalars */
	const char *key2;	/* a second key ... */
	const char *key2_default;	/* ... and what its absence means */
};

#define CONTAINER_RULES(list)                                                       \
	{ K(POD), list, "name", NULL, NULL },                                        \
	{ K(POD), list ".ports", "containerPort", "protocol", "TCP" },               \
	{ K(POD), list ".env", "name", NULL, NULL },                                 \
	{ K(POD), list ".volumeMounts", "mountPath", NULL, NULL },                   \
	{ K(POD), list ".volumeDevices", "devicePath", NULL, NULL }

static const struct list_rule rules[] = {
	{ 0, "metadata.finalizers", NULL, NULL, NULL },
	{ 0, "metadata.ownerReferences", "uid", NULL, NULL },
	CONTAINER_RULES("spec.containers"),
	CONTAINER_RULES("spec.initContainers"),
	CONTAINER_RULES("spec.ephemeralContainers"),
	{ K(POD), "spec.volumes", "name", NULL, NULL },
	{ K(POD), "spec.imagePullSecrets", "name", NULL, NULL },
	{ K(POD), "spec.hostAliases", "ip", NULL, NULL },
	{ K(POD), "spec.topologySpreadConstraints", "topologyKey", NULL, NULL },
	{ K(POD), "spec.schedulingGates", "name", NULL, NULL },
	{ K(POD), "spec.resourceClaims", "name", NULL, NULL },
	{ K(POD), "status.podIPs", "ip", NULL, NULL },
	{ K(POD), "status.hostIPs", "ip", NULL, NULL },
	{ K(POD) | K(SERVICE) | K(NODE) | K(NAMESPACE), "status.conditions", "type", NULL, NULL },
	{ K(SERVICE), "spec.ports", "port", "protocol", "TCP" },
	{ K(NODE), "spec.podCIDRs", NULL, NULL, NULL },
	{ K(NODE), "status.addresses", "type", NULL, NULL },
};

#define MAX_COMPONENTS (MODEL_MAX_DEPTH + 4)

/* Where the merge is: the field names from the object down. */
struct smp {
	enum kind_id kind;
	const char *comp[MAX_COMPONENTS];
	size_t n;
	size_t lost;		/* names past MAX_COMPONENTS (no rule matches there) */
	char *err;
	size_t errlen;
};

static void push(struct smp *s, const char *name)
{
	if (s->n < MAX_COMPONENTS && !s->lost)
		s->comp[s->n++] = name;
	else
		s->lost++;
}

static void pop(struct smp *s)
{
	if (s->lost)
		s->lost--;
	else if (s->n)
		s->n--;
}

__attribute__((format(printf, 3, 4)))
static int smp_fail(const struct smp *s, int rc, const char *fmt, ...)
{
	char path[PATH_TEXT_MAX] = "", what[512], quoted[PATCH_QUOTE_MAX];
	size_t off = 0;
	va_list ap;

	for (size_t i = 0; i < s->n && off < sizeof(path); i++) {
		int w = snprintf(path + off, sizeof(path) - off, "%s%s", i ? "." : "", patch_quote(s->comp[i], quoted));
		if (w < 0)
			break;
		off += (size_t)w;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return patch_fail(s->err, s->errlen, rc, "%s%s%s", path, path[0] ? ": " : "", what);
}

/* The rule for the list at s's path, or NULL (the list is replaced). */
static const struct list_rule *lookup(const struct smp *s)
{
	if (s->lost)
		return NULL;
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
		const char *p = rules[r].path;
		size_t i = 0;

		if (rules[r].kinds && !(rules[r].kinds & (1u << s->kind)))
			continue;
		for (; i < s->n; i++) {
			size_t len = strcspn(p, ".");
			if (strlen(s->comp[i]) != len || strncmp(s->comp[i], p, len) != 0)
				break;
			p += len;
			if (*p == '.')
				p++;
			else if (i + 1 < s->n)
				break;
		}
		if (i == s->n && !*p)
			return &rules[r];
	}
	return NULL;
}

static const char *directive_of(const json_t *v)
{
	return json_is_object(v) ? json_string_value(json_object_get(v, DIRECTIVE)) : NULL;
}

static bool has_directive(const json_t *v, const char *which)
{
	const char *d = directive_of(v);
	return d && strcmp(d, which) == 0;
}

/* ------------------------------------------------------------------ keys */

static char *text_of(const json_t *v)
{
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
}

/*
 * What an item is found by: its merge key(s) under rule r (NULL: the item
 * itself, a set's scalar or an item of a list without a rule), as text.
 * 0 with *out (malloc'd), *out NULL when the item has no key; -ENOMEM.
 */
static int item_key(const struct list_rule *r, const json_t *item, char **out)
{
	const json_t *k1, *k2;
	char *t1 = NULL, *t2 = NULL;

	*out = NULL;
	if (!r || !r->key) {
		*out = text_of(item);
		return *out ? 0 : -ENOMEM;
	}
	k1 = json_is_object(item) ? json_object_get(item, r->key) : NULL;
	if (!k1 || json_is_null(k1))
		return 0;
	if (!(t1 = text_of(k1)))
		return -ENOMEM;
	if (!r->key2) {
		*out = t1;
		return 0;
	}
	k2 = json_object_get(item, r->key2);
	t2 = k2 && !json_is_null(k2) ? text_of(k2) : NULL;
	/* the default as its JSON text, as text_of gives a present one */
	if ((t2 ? asprintf(out, "%s\x1f%s", t1, t2) : asprintf(out, "%s\x1f\"%s\"", t1, r->key2_default)) < 0)
		*out = NULL;
	free(t1);
	free(t2);
	return *out ? 0 : -ENOMEM;
}

static void keys_free(char **keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

/* Positions by key: a JSON object from key text to the first position. */
static int index_add(json_t *index, const char *key, size_t pos)
{
	if (!key || json_object_get(index, key))
		return 0;
	return json_object_set_new(index, key, json_integer((json_int_t)pos)) ? -ENOMEM : 0;
}

static long index_get(const json_t *index, const char *key)
{
	const json_t *v = key ? json_object_get(index, key) : NULL;

	return v ? (long)json_integer_value(v) : -1;
}

/* ------------------------------------------------------------------ order */

/* An item of a merged list being ordered. */
struct slot {
	json_t *item;		/* a reference of the slot's own */
	char *key;		/* item_key's, or NULL */
	long front;		/* its place in the patch's order, -1: a stored item the patch does not name */
	long stored;		/* its place in the stored list, -1: new */
	size_t at;		/* its place in the merged list (ties) */
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static void slots_free(struct slots *l)
{
	for (size_t i = 0; i < l->n; i++) {
		json_decref(l->v[i].item);
		free(l->v[i].key);
	}
	free(l->v);
}

/* Append item (a new reference, taken over) with key (malloc'd, taken over). */
static int slots_add(struct slots *l, json_t *item, char *key, long stored)
{
	if (!item)
		goto fail;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct slot *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			goto fail;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = (struct slot){ .item = item, .key = key, .front = -1, .stored = stored, .at = l->n };
	l->n++;
	return 0;
fail:
	json_decref(item);
	free(key);
	return -ENOMEM;
}

static int by_front(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->front != y->front)
		return x->front < y->front ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int by_stored(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	long xs = x->stored < 0 ? LONG_MAX : x->stored, ys = y->stored < 0 ? LONG_MAX : y->stored;

	if (xs != ys)
		return xs < ys ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The list in upstream's order: the items the patch names (front >= 0)
 * sorted by front, the others by stored; then woven: the next stored-only
 * item goes first when both it and the next patch item were stored and it
 * stood before it; else the patch item.  *out a new list.
 */
static int weave(struct slots *l, json_t **out)
{
	struct slot *tmp = l->n ? malloc(l->n * sizeof(*tmp)) : NULL;
	size_t nf = 0, ns = 0, i = 0, j = 0;
	json_t *list = json_array();
	int rc = 0;

	*out = NULL;
	if ((l->n && !tmp) || !list) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < l->n; k++)
		if (l->v[k].front >= 0)
			tmp[nf++] = l->v[k];
	for (size_t k = 0; k < l->n; k++)
		if (l->v[k].front < 0)
			tmp[nf + ns++] = l->v[k];
	qsort(tmp, nf, sizeof(*tmp), by_front);
	qsort(tmp + nf, ns, sizeof(*tmp), by_stored);
	while (!rc && (i < ns || j < nf)) {
		const struct slot *so = i < ns ? &tmp[nf + i] : NULL, *pa = j < nf ? &tmp[j] : NULL;
		bool stored_first = so && (!pa || (so->stored >= 0 && pa->stored >= 0 && so->stored < pa->stored));

		rc = json_array_append(list, stored_first ? so->item : pa->item) ? -ENOMEM : 0;
		if (stored_first)
			i++;
		else
			j++;
	}
	if (!rc) {
		*out = list;
		list = NULL;
	}
out:
	free(tmp);
	json_decref(list);
	return rc;
}

/* ------------------------------------------------------------------ merge */

static int merge_map(struct smp *s, json_t *obj, const json_t *patch, int depth);
static int merge_list(struct smp *s, const json_t *stored, const json_t *patch, int depth, json_t **out);

/* A value the object lacks (or has of another type): patch merged into
 * nothing, so its nulls and directives are gone.  NULL on failure. */
static json_t *fresh(struct smp *s, const json_t *patch, int depth, int *rc)
{
	json_t *v = NULL;

	*rc = 0;
	if (json_is_object(patch)) {
		if (!(v = json_object()))
			*rc = -ENOMEM;
		else
			*rc = merge_map(s, v, patch, depth);
	} else if (json_is_array(patch)) {
		*rc = merge_list(s, NULL, patch, depth, &v);
	} else if (!(v = json_deep_copy(patch))) {
		*rc = -ENOMEM;
	}
	if (*rc) {
		json_decref(v);
		v = NULL;
		if (*rc == -ENOMEM)
			smp_fail(s, *rc, "out of memory");
	}
	return v;
}

/* A list without a rule: the patch's items (directive items dropped). */
static int replace_list(struct smp *s, const json_t *patch, int depth, json_t **out)
{
	const json_t *item;
	json_t *list = json_array();
	size_t i;
	int rc = list ? 0 : -ENOMEM;

	json_array_foreach(patch, i, item) {
		json_t *v;

		if (rc || directive_of(item))
			continue;
		if (!(v = fresh(s, item, depth + 1, &rc)))
			break;
		rc = json_array_append_new(list, v) ? -ENOMEM : 0;
	}
	if (rc) {
		json_decref(list);
		list = NULL;
	}
	*out = list;
	return rc;
}

/* A set of scalars: the stored ones, then the patch's not there yet. */
static int merge_set(struct smp *s, const struct list_rule *r, const json_t *stored, const json_t *patch,
		     json_t **out)
{
	struct slots l = { 0 };
	json_t *seen = json_object(), *front = json_object();
	const json_t *item;
	size_t i;
	int rc = seen && front ? 0 : -ENOMEM;

	json_array_foreach(patch, i, item)
		if (!rc && (json_is_object(item) || json_is_array(item)))
			rc = smp_fail(s, -EINVAL, "a list of values merged as a set takes no %s (item %zu of the patch)",
				      json_is_object(item) ? "objects" : "lists", i);
	json_array_foreach(stored, i, item) {
		char *key = NULL;

		if (rc || (rc = item_key(r, item, &key)))
			break;
		if (json_object_get(seen, key)) {
			free(key);
			continue;
		}
		if (!(rc = index_add(seen, key, l.n)))
			rc = slots_add(&l, json_incref((json_t *)item), key, (long)i);
	}
	json_array_foreach(patch, i, item) {
		char *key = NULL;

		if (rc || (rc = item_key(r, item, &key)) || (rc = index_add(front, key, i))) {
			free(key);
			break;
		}
		if (json_object_get(seen, key)) {
			free(key);
			continue;
		}
		if (!(rc = index_add(seen, key, l.n)))
			rc = slots_add(&l, json_deep_copy(item), key, -1);
	}
	for (i = 0; !rc && i < l.n; i++)
		l.v[i].front = index_get(front, l.v[i].key);
	if (!rc)
		rc = weave(&l, out);
	if (rc == -ENOMEM)
		smp_fail(s, rc, "out of memory");
	slots_free(&l);
	json_decref(seen);
	json_decref(front);
	return rc;
}

/* The patch's items of a keyed list sorted out: deletions into dels (a set
 * of keys), the others' keys into keys[] (in patch order), *replace set
 * by a $patch: replace item. */
static int sort_out(struct smp *s, const struct list_rule *r, const json_t *patch, json_t *dels, char **keys,
		    bool *replace)
{
	const json_t *item;
	size_t i;
	int rc;

	json_array_foreach(patch, i, item) {
		const char *d = directive_of(item);
		char *key = NULL;

		if (!json_is_object(item))
			return smp_fail(s, -EINVAL, "item %zu of the patch is not an object (the list is merged by %s)", i,
					r->key);
		if (json_object_get(item, DIRECTIVE) && !d)
			return smp_fail(s, -EBADMSG, "item %zu of the patch: $patch must be a string", i);
		if ((rc = item_key(r, item, &key)))
			return rc;
		if (d && strcmp(d, "replace") == 0) {
			*replace = true;
			free(key);
			continue;
		}
		if (d && strcmp(d, "delete") != 0 && strcmp(d, "merge") != 0) {
			free(key);
			return smp_fail(s, -EBADMSG, "item %zu of the patch: unknown $patch '%s' (delete, replace or merge)",
					i, d);
		}
		if (!key)
			return smp_fail(s, -EINVAL, "item %zu of the patch has no %s (the list's merge key)", i, r->key);
		if (d && strcmp(d, "delete") == 0) {
			rc = json_object_set_new(dels, key, json_true()) ? -ENOMEM : 0;
			free(key);
			if (rc)
				return rc;
			continue;
		}
		keys[i] = key;
	}
	return 0;
}

/* A list merged by key (rule r). */
static int merge_keyed(struct smp *s, const struct list_rule *r, const json_t *stored, const json_t *patch,
		       int depth, json_t **out)
{
	size_t np = json_array_size(patch), i;
	char **keys = calloc(np ? np : 1, sizeof(char *));
	json_t *dels = json_object(), *where = json_object(), *front = json_object();
	struct slots l = { 0 };
	bool replace = false;
	const json_t *item;
	int rc = keys && dels && where && front ? 0 : -ENOMEM;

	*out = NULL;
	if (!rc)
		rc = sort_out(s, r, patch, dels, keys, &replace);
	if (!rc && replace) {
		/* the list is the patch's other items, merged into nothing */
		json_t *rest = json_array();

		rc = rest ? 0 : -ENOMEM;
		json_array_foreach(patch, i, item)
			if (!rc && keys[i] && json_array_append(rest, (json_t *)item))
				rc = -ENOMEM;
		if (!rc)
			rc = merge_keyed(s, r, NULL, rest, depth, out);
		json_decref(rest);
		goto out;
	}
	/* the stored items but those deleted; their keys found by hashing */
	json_array_foreach(stored, i, item) {
		char *key = NULL;

		if (rc || (rc = item_key(r, item, &key)))
			break;
		if (key && json_object_get(dels, key)) {
			free(key);
			continue;
		}
		if (!(rc = index_add(where, key, l.n)))
			rc = slots_add(&l, json_incref((json_t *)item), key, (long)i);
	}
	/* each patch item merged into the stored one with its key, or added */
	for (i = 0; !rc && i < np; i++) {
		long at;

		if (!keys[i])
			continue;
		item = json_array_get(patch, i);
		if ((rc = index_add(front, keys[i], i)))
			break;
		at = index_get(where, keys[i]);
		if (at >= 0) {
			rc = merge_map(s, l.v[at].item, item, depth + 1);	/* keys are only an object's */
		} else if (!(rc = index_add(where, keys[i], l.n))) {
			char *key = strdup(keys[i]);
			json_t *v = key ? fresh(s, item, depth + 1, &rc) : NULL;

			if (!key)
				rc = -ENOMEM;
			if (!rc)
				rc = slots_add(&l, v, key, -1);
			else
				free(key);
		}
	}
	for (i = 0; !rc && i < l.n; i++)
		l.v[i].front = index_get(front, l.v[i].key);
	if (!rc)
		rc = weave(&l, out);
out:
	if (rc == -ENOMEM)
		smp_fail(s, rc, "out of memory");
	keys_free(keys, np);
	slots_free(&l);
	json_decref(dels);
	json_decref(where);
	json_decref(front);
	return rc;
}

/* stored (NULL: none) merged with the list patch: *out a new list. */
static int merge_list(struct smp *s, const json_t *stored, const json_t *patch, int depth, json_t **out)
{
	const struct list_rule *r = lookup(s);

	*out = NULL;
	if (depth > MODEL_MAX_DEPTH + 1)
		return smp_fail(s, -E2BIG, "nested deeper than %d levels (the limit)", MODEL_MAX_DEPTH);
	if (!r)
		return replace_list(s, patch, depth, out);
	if (!r->key)
		return merge_set(s, r, stored, patch, out);
	return merge_keyed(s, r, stored, patch, depth, out);
}

/* "$deleteFromPrimitiveList/F": the values of list (a list) leave obj's F. */
static int delete_from(struct smp *s, json_t *obj, const char *field, const json_t *list)
{
	json_t *stored = json_object_get(obj, field), *gone = json_object(), *kept = json_array();
	const json_t *item;
	size_t i;
	int rc = gone && kept ? 0 : -ENOMEM;

	if (!json_is_array(list))
		rc = smp_fail(s, -EBADMSG, "%s%s must be a list of values", DELETE_FROM, field);
	json_array_foreach(list, i, item) {
		char *key = text_of(item);

		if (!rc && (!key || json_object_set_new(gone, key, json_true())))
			rc = -ENOMEM;
		free(key);
	}
	json_array_foreach(json_is_array(stored) ? stored : NULL, i, item) {
		char *key = text_of(item);

		if (!rc && !key)
			rc = -ENOMEM;
		if (!rc && !json_object_get(gone, key) && json_array_append(kept, (json_t *)item))
			rc = -ENOMEM;
		free(key);
	}
	if (!rc && json_is_array(stored) && json_object_set(obj, field, kept))
		rc = -ENOMEM;
	if (rc == -ENOMEM)
		smp_fail(s, rc, "out of memory");
	json_decref(gone);
	json_decref(kept);
	return rc;
}

/* The patch's items of list F (patch, may be NULL) follow their order in
 * order (keys, in order) as a subsequence: 0 or -EBADMSG. */
static int follows(struct smp *s, const struct list_rule *r, const json_t *patch, char **order, size_t n,
		   const char *field)
{
	const json_t *item;
	size_t i, at = 0;
	int rc = 0;

	json_array_foreach(patch, i, item) {
		char *key = NULL;

		if (directive_of(item))
			continue;
		if ((rc = item_key(r, item, &key)))
			return rc;
		while (key && at < n && strcmp(order[at], key) != 0)
			at++;
		free(key);
		if (at++ >= n)
			return smp_fail(s, -EBADMSG, "item %zu of the patch's %s is not in %s%s, or not in its order", i,
					field, SET_ORDER, field);
	}
	return 0;
}

/* "$setElementOrder/F": obj's list F, merged with the patch's F when there
 * is one, ordered by order (a list of items or of their keys). */
static int set_order(struct smp *s, json_t *obj, const char *field, const json_t *order, const json_t *patch,
		     int depth)
{
	const json_t *stored = json_object_get(obj, field), *list = json_object_get(patch, field), *item;
	const struct list_rule *r;
	size_t n = json_array_size(order), i;
	char **keys = calloc(n ? n : 1, sizeof(char *));
	json_t *merged = NULL, *where = json_object(), *front = json_object(), *result = NULL;
	struct slots l = { 0 };
	int rc = keys && where && front ? 0 : -ENOMEM;

	push(s, field);
	r = lookup(s);
	if (!rc && !json_is_array(order))
		rc = smp_fail(s, -EBADMSG, "%s%s must be a list", SET_ORDER, field);
	if (!rc && list && !json_is_array(list))
		rc = smp_fail(s, -EBADMSG, "a list, as its %s%s", SET_ORDER, field);
	if (!rc && stored && !json_is_array(stored))
		rc = smp_fail(s, -EINVAL, "not a list: %s%s does not apply", SET_ORDER, field);
	for (i = 0; !rc && i < n; i++) {
		rc = item_key(r, json_array_get(order, i), &keys[i]);
		if (!rc && !keys[i])
			rc = smp_fail(s, -EBADMSG, "item %zu of %s%s has no %s (the list's merge key)", i, SET_ORDER, field,
				      r->key);
		if (!rc)
			rc = index_add(front, keys[i], i);
	}
	if (!rc)
		rc = follows(s, r, list, keys, n, field);
	if (rc || (!stored && !list))
		goto out;
	if (list)
		rc = merge_list(s, stored, list, depth + 1, &merged);
	else
		merged = json_incref((json_t *)stored);
	json_array_foreach(stored, i, item) {
		char *key = NULL;

		if (rc || (rc = item_key(r, item, &key)) || (rc = index_add(where, key, i))) {
			free(key);
			break;
		}
		free(key);
	}
	json_array_foreach(merged, i, item) {
		char *key = NULL;

		if (rc || (rc = item_key(r, item, &key)))
			break;
		if (!(rc = slots_add(&l, json_incref((json_t *)item), key, index_get(where, key))))
			l.v[l.n - 1].front = index_get(front, key);
	}
	if (!rc)
		rc = weave(&l, &result);
	if (!rc && json_object_set_new(obj, field, result))
		rc = -ENOMEM;
out:
	if (rc == -ENOMEM)
		smp_fail(s, rc, "out of memory");
	pop(s);
	keys_free(keys, n);
	slots_free(&l);
	json_decref(merged);
	json_decref(where);
	json_decref(front);
	return rc;
}

static bool list_of_strings(const json_t *v)
{
	const json_t *item;
	size_t i;

	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, item)
		if (!json_is_string(item))
			return false;
	return true;
}

/* "$retainKeys": obj keeps only the members named; every member the patch
 * sets must be named. */
static int retain(struct smp *s, json_t *obj, const json_t *patch, const json_t *names)
{
	json_t *keep = json_object(), *v, *tmp;
	const json_t *name;
	const char *key;
	size_t i;
	int rc = keep ? 0 : -ENOMEM;

	if (!rc && !list_of_strings(names))
		rc = smp_fail(s, -EBADMSG, "%s must be a list of names", RETAIN_KEYS);
	json_array_foreach(names, i, name)
		if (!rc && json_object_set_new(keep, json_string_value(name), json_true()))
			rc = smp_fail(s, -ENOMEM, "out of memory");
	json_object_foreach((json_t *)patch, key, v)
		if (!rc && key[0] != '$' && !json_is_null(v) && !json_object_get(keep, key))
			rc = smp_fail(s, -EBADMSG, "the patch sets '%s', which its %s does not name", key, RETAIN_KEYS);
	if (!rc)
		json_object_foreach_safe(obj, tmp, key, v)
			if (!json_object_get(keep, key))
				json_object_del(obj, key);
	json_decref(keep);
	return rc;
}

/* obj's member key merged with the patch's value v. */
static int merge_field(struct smp *s, json_t *obj, const char *key, const json_t *v, int depth)
{
	json_t *stored = json_object_get(obj, key), *nv = NULL;
	int rc = 0;

	push(s, key);
	if (json_is_null(v)) {
		json_object_del(obj, key);
	} else if (json_is_object(stored) && json_is_object(v)) {
		rc = merge_map(s, stored, v, depth + 1);
	} else if (has_directive(v, "delete")) {
		json_object_del(obj, key);	/* nothing to empty: it goes */
	} else {
		if (json_is_array(stored) && json_is_array(v))
			rc = merge_list(s, stored, v, depth + 1, &nv);
		else
			nv = fresh(s, v, depth + 1, &rc);
		if (!rc && json_object_set_new(obj, key, nv))
			rc = smp_fail(s, -ENOMEM, "out of memory");
	}
	pop(s);
	return rc;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* obj (an object) merged with patch (an object) in place. */
static int merge_map(struct smp *s, json_t *obj, const json_t *patch, int depth)
{
	const char *d = directive_of(patch), *key;
	const json_t *names = json_object_get(patch, RETAIN_KEYS);
	json_t *v, *done = NULL;
	int rc = 0;

	if (depth > MODEL_MAX_DEPTH + 1)
		return smp_fail(s, -E2BIG, "nested deeper than %d levels (the limit)", MODEL_MAX_DEPTH);
	if (json_object_get(patch, DIRECTIVE) && !d)
		return smp_fail(s, -EBADMSG, "$patch must be a string");
	if (d && strcmp(d, "delete") == 0) {
		json_object_clear(obj);
		return 0;
	}
	if (d && strcmp(d, "replace") == 0)
		json_object_clear(obj);
	else if (d && strcmp(d, "merge") != 0)
		return smp_fail(s, -EBADMSG, "unknown $patch '%s' (delete, replace or merge)", d);
	if (names && (rc = retain(s, obj, patch, names)))
		return rc;
	/* upstream's order: lists ordered (and merged) first, then values
	 * deleted from lists, then every other member */
	json_object_foreach((json_t *)patch, key, v) {
		if (rc || !starts(key, SET_ORDER))
			continue;
		if (!key[strlen(SET_ORDER)])
			rc = smp_fail(s, -EBADMSG, "%s names no field", key);
		else if (!done && !(done = json_object()))
			rc = smp_fail(s, -ENOMEM, "out of memory");
		else if (!(rc = set_order(s, obj, key + strlen(SET_ORDER), v, patch, depth)))
			rc = json_object_set_new(done, key + strlen(SET_ORDER), json_true()) ? -ENOMEM : 0;
	}
	json_object_foreach((json_t *)patch, key, v)
		if (!rc && starts(key, DELETE_FROM))
			rc = key[strlen(DELETE_FROM)] ? delete_from(s, obj, key + strlen(DELETE_FROM), v)
						      : smp_fail(s, -EBADMSG, "%s names no field", key);
	json_object_foreach((json_t *)patch, key, v) {
		if (rc)
			break;
		if (key[0] == '$') {
			if (strcmp(key, DIRECTIVE) && strcmp(key, RETAIN_KEYS) && !starts(key, SET_ORDER) &&
			    !starts(key, DELETE_FROM))
				rc = smp_fail(s, -EBADMSG, "unknown directive '%s'", key);
			continue;
		}
		if (!json_object_get(done, key))
			rc = merge_field(s, obj, key, v, depth);
	}
	json_decref(done);
	return rc;
}

int patch_strategic_apply(enum kind_id kind, json_t *doc, const json_t *patch, char *err, size_t errlen)
{
	struct smp s = { .kind = kind, .err = err, .errlen = errlen };

	return merge_map(&s, doc, patch, 1);
}
