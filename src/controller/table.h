/*
 * table.h — the API's Table answers (meta.k8s.io/v1 Table), which kubectl
 * asks for on every `get` (Accept: application/json;as=Table;v=v1;
 * g=meta.k8s.io; answer.c decides): the kind's columns (model/columns.h, the same as
 * weftctl's), one row of cells per object, and each object's metadata as a
 * PartialObjectMetadata (kubectl reads the namespace column of -A from it).
 * Columns marked wide have priority 1: kubectl shows them with -o wide.
 * A row's object is what the request's includeObject asks for, as
 * kube-apiserver answers it: Metadata (the default) the
 * PartialObjectMetadata, Object the whole object, None none.
 *
 * Ownership: arguments are borrowed; each function returns a new reference
 * (NULL when out of memory).
 */
#ifndef WEFT_CONTROLLER_TABLE_H
#define WEFT_CONTROLLER_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "model/model.h"
#include "store/store.h"

/* What a row carries as its object (the query's includeObject). */
enum table_include {
	TABLE_INCLUDE_METADATA,	/* "Metadata", absent or "": a PartialObjectMetadata */
	TABLE_INCLUDE_OBJECT,	/* "Object": the object as stored */
	TABLE_INCLUDE_NONE,	/* "None": no object */
};
/* includeObject's value (NULL when absent) into *out: 0, or -EINVAL for a
 * value Kubernetes does not know (the API answers 400). */
int table_include_parse(const char *value, enum table_include *out) __attribute__((warn_unused_result));

/* A Table of the objects of kind k in snap (values as stored: the rows'
 * metadata get their resourceVersion from the key, as obj_from_kv does),
 * metadata.resourceVersion the snapshot's revision; a page of a longer
 * list also carries its continue token (cont, or NULL) and, when known
 * (remaining >= 0), remainingItemCount, as the list would. */
json_t *table_of_page(const struct kind_info *k, const struct store_kv_list *snap, const char *cont,
		      int64_t remaining, enum table_include include, time_t now);
/* A Table of one object (a GET by name). */
json_t *table_of_object(const struct kind_info *k, const json_t *obj, enum table_include include, time_t now);
/* The Table a watch event carries: obj's row, metadata.resourceVersion
 * the object's, and the column definitions only when headers is set —
 * kube-apiserver sends them with a watch's first event only, and kubectl
 * lays out the later rows with the columns it was sent last. */
json_t *table_of_event(const struct kind_info *k, const json_t *obj, enum table_include include, bool headers,
		       time_t now);

#endif
