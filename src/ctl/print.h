/*
 * print.h — how weftctl shows objects: the output formats of `get -o`
 * (a kind's columns and cell formats are model/columns.h's).
 *
 * Ownership: every function borrows its arguments; formatted text goes to a
 * caller's buffer and is truncated (never overrun) when it does not fit.
 */
#ifndef WEFT_CTL_PRINT_H
#define WEFT_CTL_PRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "model/model.h"

enum ctl_output { CTL_OUT_TABLE, CTL_OUT_WIDE, CTL_OUT_JSON, CTL_OUT_YAML, CTL_OUT_NAME };

/* "wide", "json", "yaml", "name" (or "" for the table).  0 or -EINVAL. */
int ctl_output_parse(const char *s, enum ctl_output *out);

/* The items (a JSON array of objects of kind k) as k's table; with_namespace
 * adds a NAMESPACE column first; now is the time AGE is computed from.
 * 0 or -ENOMEM. */
int ctl_print_table(const struct kind_info *k, const json_t *items, bool wide, bool with_namespace,
		    time_t now, FILE *f) __attribute__((warn_unused_result));
/* The same rows; the header row only when header (for `get -w`, whose
 * events come one at a time under a header printed once). */
int ctl_print_rows(const struct kind_info *k, const json_t *items, bool wide, bool with_namespace, bool header,
		   time_t now, FILE *f) __attribute__((warn_unused_result));
/* A new array of items' objects in (namespace, name) order; NULL on ENOMEM. */
json_t *ctl_sort_items(const json_t *items);
/* Pretty JSON (4-space indent, keys in the server's order) + newline. */
int ctl_print_json(const json_t *v, FILE *f) __attribute__((warn_unused_result));
/* YAML through yaml_emit. */
int ctl_print_yaml(const json_t *v, FILE *f) __attribute__((warn_unused_result));
/* "kind/name" a line, kind lowercase singular. */
void ctl_print_names(const struct kind_info *k, const json_t *items, FILE *f);

#endif
