/*
 * manifest.c — a manifest stream (YAML or JSON, several documents) to a
 * flat list of objects.
 *
 * A document of kind List contributes its items.  So does a typed list as
 * the API returns it ("PodList"): its items get the list's kind (without
 * "List") and apiVersion when they lack them, so `get -o yaml` output can
 * be fed back.  Items are taken one level deep only; a List inside a List
 * stays an object of the unknown kind List.
 */
#include "lib/yaml.h"
#include "model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct docs {
	json_t **v;
	size_t n, cap;
};

static int add(struct docs *d, json_t *obj)
{
	if (d->n == MODEL_MAX_OBJECTS)
		return -E2BIG;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 8;
		json_t **grown = realloc(d->v, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		d->v = grown;
		d->cap = ncap;
	}
	d->v[d->n++] = json_incref(obj);
	return 0;
}

/* "PodList" → the Pod kind; NULL for anything else. */
static const struct kind_info *typed_list(const char *kind)
{
	char base[64];
	size_t n = kind ? strlen(kind) : 0;

	if (n <= 4 || n - 4 >= sizeof(base) || strcmp(kind + n - 4, "List") != 0)
		return NULL;
	memcpy(base, kind, n - 4);
	base[n - 4] = '\0';
	return kind_by_kind(base);
}

static int add_items(struct docs *d, json_t *list, size_t docno, char *err, size_t errlen)
{
	const struct kind_info *k = typed_list(obj_kind(list));
	json_t *items = json_object_get(list, "items"), *item;
	const char *api = obj_str(list, "apiVersion");
	size_t i;
	int rc;

	if (json_is_null(items) || !items)
		return 0;
	if (!json_is_array(items)) {
		snprintf(err, errlen, "doc %zu: items must be a list", docno);
		return -EINVAL;
	}
	json_array_foreach(items, i, item) {
		if (!json_is_object(item)) {
			snprintf(err, errlen, "doc %zu: items[%zu]: a manifest must be a mapping "
				 "(object)", docno, i);
			return -EINVAL;
		}
		if (k && !json_object_get(item, "kind"))
			json_object_set_new(item, "kind", json_string(k->kind));
		if (k && !json_object_get(item, "apiVersion"))
			json_object_set_new(item, "apiVersion", json_string(api ? api : k->api_version));
		rc = add(d, item);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int model_decode_manifest(const char *buf, size_t len, json_t ***docs, size_t *ndocs, char *err,
			  size_t errlen)
{
	struct docs out = { 0 };
	json_t **raw = NULL;
	size_t nraw = 0;
	char dummy[1];
	int rc;

	*docs = NULL;
	*ndocs = 0;
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	rc = yaml_decode_stream(buf, len, &raw, &nraw, err, errlen);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nraw && rc == 0; i++) {
		const char *kind = obj_kind(raw[i]);

		if (!json_is_object(raw[i])) {
			snprintf(err, errlen, "doc %zu: a manifest must be a mapping (object)", i + 1);
			rc = -EINVAL;
		} else if (kind && (!strcmp(kind, "List") || typed_list(kind))) {
			rc = add_items(&out, raw[i], i + 1, err, errlen);
		} else {
			rc = add(&out, raw[i]);
		}
		if (rc == -E2BIG) {
			snprintf(err, errlen, "doc %zu: more than %d objects", i + 1, MODEL_MAX_OBJECTS);
			rc = -EINVAL;
		} else if (rc == -ENOMEM) {
			snprintf(err, errlen, "doc %zu: out of memory", i + 1);
		}
	}
	yaml_docs_free(raw, nraw);
	if (rc < 0) {
		yaml_docs_free(out.v, out.n);
		return rc;
	}
	*docs = out.v;
	*ndocs = out.n;
	return 0;
}
