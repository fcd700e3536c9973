/*
 * table.c — Table answers (see table.h).
 *
 *   {"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"N"},
 *    "columnDefinitions":[{"name":"NAME","type":"string","format":"name",
 *                          "description":"...","priority":0}, ...],
 *    "rows":[{"cells":["web","10.128.0.2",...],
 *             "object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
 *                       "metadata":{...}}}, ...]}
 *
 * Whether a request gets a Table is answer.c's (its Accept header).
 */
#include "controller/table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "controller/controller.h"
#include "model/columns.h"

#define CELL_MAX 1024

static json_t *column_definitions(const struct kind_info *k)
{
	size_t n;
	const struct column *cols = columns_of(k->id, &n);
	json_t *defs = json_array();

	for (size_t c = 0; defs && c < n; c++)
		json_array_append_new(defs, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", cols[c].header, "type",
						      "string", "format", c == 0 ? "name" : "", "description",
						      cols[c].header, "priority", cols[c].wide ? 1 : 0));
	return defs;
}

int table_include_parse(const char *value, enum table_include *out)
{
	if (!value || !*value || strcmp(value, "Metadata") == 0)
		*out = TABLE_INCLUDE_METADATA;
	else if (strcmp(value, "Object") == 0)
		*out = TABLE_INCLUDE_OBJECT;
	else if (strcmp(value, "None") == 0)
		*out = TABLE_INCLUDE_NONE;
	else
		return -EINVAL;
	return 0;
}

static json_t *row_of(const struct kind_info *k, const json_t *obj, enum table_include include, time_t now)
{
	size_t n;
	const struct column *cols = columns_of(k->id, &n);
	json_t *cells = json_array(), *meta = json_object_get(obj, "metadata");
	char buf[CELL_MAX];

	for (size_t c = 0; cells && c < n; c++) {
		buf[0] = 0;
		cols[c].cell(obj, buf, sizeof(buf), now);
		json_array_append_new(cells, json_string(buf));
	}
	if (include == TABLE_INCLUDE_NONE)
		return json_pack("{s:o}", "cells", cells);
	if (include == TABLE_INCLUDE_OBJECT)
		return json_pack("{s:o, s:O}", "cells", cells, "object", obj);
	return json_pack("{s:o, s:{s:s, s:s, s:O}}", "cells", cells, "object", "kind", "PartialObjectMetadata",
			 "apiVersion", "meta.k8s.io/v1", "metadata", json_is_object(meta) ? meta : json_object());
}

static json_t *table_new(const struct kind_info *k, int64_t rev)
{
	json_t *t = json_pack("{s:s, s:s, s:{}, s:o, s:[]}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
			      "metadata", "columnDefinitions", column_definitions(k), "rows");
	char rv[24];

	if (t && rev > 0) {
		snprintf(rv, sizeof(rv), "%" PRId64, rev);
		json_object_set_new(json_object_get(t, "metadata"), "resourceVersion", json_string(rv));
	}
	return t;
}

json_t *table_of_page(const struct kind_info *k, const struct store_kv_list *snap, const char *cont,
		      int64_t remaining, enum table_include include, time_t now)
{
	json_t *t = table_new(k, snap->revision), *rows = json_object_get(t, "rows");

	/* a page of a longer list: where the next one starts, as a list's */
	if (t && cont)
		json_object_set_new(json_object_get(t, "metadata"), "continue", json_string(cont));
	if (t && cont && remaining >= 0)
		json_object_set_new(json_object_get(t, "metadata"), "remainingItemCount", json_integer(remaining));

	for (size_t i = 0; t && i < snap->n; i++) {
		json_t *o = obj_from_kv(&snap->kvs[i]);

		if (!o)
			continue;	/* not JSON: left out, as a list leaves it out */
		if (json_array_append_new(rows, row_of(k, o, include, now))) {
			json_decref(o);
			json_decref(t);
			return NULL;
		}
		json_decref(o);
	}
	return t;
}

json_t *table_of_object(const struct kind_info *k, const json_t *obj, enum table_include include, time_t now)
{
	json_t *t = table_new(k, 0);

	if (t && json_array_append_new(json_object_get(t, "rows"), row_of(k, obj, include, now))) {
		json_decref(t);
		return NULL;
	}
	return t;
}

json_t *table_of_event(const struct kind_info *k, const json_t *obj, enum table_include include, bool headers,
		       time_t now)
{
	json_t *t = table_of_object(k, obj, include, now);
	json_t *rv = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");

	if (t && !headers)
		json_object_set_new(t, "columnDefinitions", json_array());
	if (t && json_is_string(rv))
		json_object_set(json_object_get(t, "metadata"), "resourceVersion", rv);
	return t;
}
