/*
 * table.h — weftctl's aligned tables, as kubectl prints them: a header row
 * in upper case, each column as wide as its widest cell, columns separated
 * by three spaces, no padding after the last column.
 *
 * Ownership: ctl_table_new/ctl_table_free (accepts NULL); cells given to
 * ctl_table_add are copied.  A table holds at most CTL_TABLE_MAX_ROWS rows
 * (an add past that fails with -ENOSPC).
 */
#ifndef WEFT_CTL_TABLE_H
#define WEFT_CTL_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define CTL_TABLE_MAX_COLS 16
#define CTL_TABLE_MAX_ROWS 1000000
#define CTL_TABLE_GAP 3

struct ctl_table;

/* NULL (errno ENOMEM / EINVAL for 0 or too many columns). */
struct ctl_table *ctl_table_new(size_t ncols);
void ctl_table_free(struct ctl_table *t);
/* Add a row of ncols cells (NULL cells print as ""). 0, -ENOMEM, -ENOSPC. */
int ctl_table_add(struct ctl_table *t, const char *const *cells) __attribute__((warn_unused_result));
size_t ctl_table_rows(const struct ctl_table *t);
/* Print every row (the first one added is the header). */
void ctl_table_print(const struct ctl_table *t, FILE *f);
/* Print rows first.. (all rows count for the widths). */
void ctl_table_print_from(const struct ctl_table *t, size_t first, FILE *f);

#endif
