/*
 * table.c — aligned text tables (see table.h).  Cells are kept as copied
 * strings, row after row in one array; widths are computed when printing.
 */
#include "ctl/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ctl_table {
	size_t ncols;
	size_t nrows;
	size_t cap;		/* rows allocated */
	char **cells;		/* nrows * ncols */
};

struct ctl_table *ctl_table_new(size_t ncols)
{
	struct ctl_table *t;

	if (!ncols || ncols > CTL_TABLE_MAX_COLS) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ncols = ncols;
	return t;
}

void ctl_table_free(struct ctl_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

size_t ctl_table_rows(const struct ctl_table *t) { return t->nrows; }

int ctl_table_add(struct ctl_table *t, const char *const *cells)
{
	if (t->nrows == CTL_TABLE_MAX_ROWS)
		return -ENOSPC;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **c = realloc(t->cells, cap * t->ncols * sizeof(*c));

		if (!c)
			return -ENOMEM;
		t->cells = c;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * t->ncols;

	for (size_t i = 0; i < t->ncols; i++) {
		row[i] = strdup(cells[i] ? cells[i] : "");
		if (!row[i]) {
			while (i--)
				free(row[i]);
			return -ENOMEM;
		}
	}
	t->nrows++;
	return 0;
}

void ctl_table_print(const struct ctl_table *t, FILE *f)
{
	ctl_table_print_from(t, 0, f);
}

void ctl_table_print_from(const struct ctl_table *t, size_t first, FILE *f)
{
	size_t width[CTL_TABLE_MAX_COLS] = { 0 };

	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t n = strlen(t->cells[r * t->ncols + c]);

			if (n > width[c])
				width[c] = n;
		}
	for (size_t r = first; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];

			if (c + 1 < t->ncols)
				fprintf(f, "%-*s%*s", (int)width[c], s, CTL_TABLE_GAP, "");
			else
				fprintf(f, "%s", s);
		}
		fputc('\n', f);
	}
}
