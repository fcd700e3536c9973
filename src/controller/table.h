/*
 * table.h — the API's Table answers (meta.k8s.io/v1 Table), which kubectl
 * asks for on every `get` (Accept: application/json;as=Table;v=v1;
 * g=meta.k8s.io; answer.c decides): the kind's columns (model/columns.h, the same as
 * weftctl's), one row of cells per object, and each object's metadata as a
 * PartialObjectMetadata (kubectl reads the namespace column of -A from it).
 * Columns marked wide have priority 1: kubectl shows them with -o wide.
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

/* A Table of the objects of kind k in snap (values as stored: the rows'
 * metadata get their resourceVersion from the key, as obj_from_kv does),
 * metadata.resourceVersion the snapshot's revision; a page of a longer
 * list also carries its continue token (cont, or NULL) and, when known
 * (remaining >= 0), remainingItemCount, as the list would. */
json_t *table_of_page(const struct kind_info *k, const struct store_kv_list *snap, const char *cont,
		      int64_t remaining, time_t now);
/* A Table of one object (a GET by name). */
json_t *table_of_object(const struct kind_info *k, const json_t *obj, time_t now);

#endif
