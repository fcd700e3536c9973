/*
 * print.c — output formats of weftctl (see print.h).  A kind's table has
 * the columns the API's Table answers have (model/columns.h: one copy for
 * both); a column marked wide is printed with -o wide only.  NAMESPACE
 * (with -A) is added in front by ctl_print_table, not listed per kind.
 */
#include "ctl/print.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/table.h"
#include "model/columns.h"
#include "lib/yaml.h"

#define CELL_MAX 1024

int ctl_output_parse(const char *s, enum ctl_output *out)
{
	static const struct { const char *name; enum ctl_output out; } formats[] = {
		{ "", CTL_OUT_TABLE }, { "wide", CTL_OUT_WIDE }, { "json", CTL_OUT_JSON },
		{ "yaml", CTL_OUT_YAML }, { "name", CTL_OUT_NAME },
	};

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(s, formats[i].name)) {
			*out = formats[i].out;
			return 0;
		}
	return -EINVAL;
}

int ctl_print_table(const struct kind_info *k, const json_t *items, bool wide, bool with_namespace, time_t now,
		    FILE *f)
{
	return ctl_print_rows(k, items, wide, with_namespace, true, now, f);
}

static int cmp_obj(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(obj_str(x, "metadata.namespace") ?: "", obj_str(y, "metadata.namespace") ?: "");

	return c ? c : strcmp(obj_str(x, "metadata.name") ?: "", obj_str(y, "metadata.name") ?: "");
}

json_t *ctl_sort_items(const json_t *items)
{
	size_t n = json_array_size(items);
	json_t **v = malloc((n ? n : 1) * sizeof(*v));
	json_t *out = json_array();

	if (!v || !out) {
		free(v);
		json_decref(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(items, i);
	qsort(v, n, sizeof(*v), cmp_obj);
	for (size_t i = 0; i < n; i++)
		if (json_array_append(out, v[i]) < 0) {
			json_decref(out);
			out = NULL;
			break;
		}
	free(v);
	return out;
}

int ctl_print_rows(const struct kind_info *k, const json_t *items, bool wide, bool with_namespace, bool header,
		   time_t now, FILE *f)
{
	size_t ncol;
	const struct column *cols = columns_of(k->id, &ncol);
	const char *cells[CTL_TABLE_MAX_COLS];
	char *text = NULL;
	struct ctl_table *t = NULL;
	size_t ncols = 0, i, c;
	json_t *obj;
	int rc = -ENOMEM;

	/* cell texts live in one block: CTL_TABLE_MAX_COLS * CELL_MAX */
	text = malloc((size_t)CTL_TABLE_MAX_COLS * CELL_MAX);
	if (!text)
		goto out;
	if (with_namespace)
		cells[ncols++] = "NAMESPACE";
	for (c = 0; c < ncol; c++)
		if (wide || !cols[c].wide)
			cells[ncols++] = cols[c].header;
	t = ctl_table_new(ncols);
	if (!t || ctl_table_add(t, cells) < 0)
		goto out;
	/* the header sizes the columns even when it is not printed */
	json_array_foreach(items, i, obj) {
		size_t n = 0;

		if (with_namespace) {
			char *b = text + n * CELL_MAX;

			snprintf(b, CELL_MAX, "%s", obj_namespace(obj));
			cells[n++] = b;
		}
		for (c = 0; c < ncol; c++) {
			char *b = text + n * CELL_MAX;

			if (!wide && cols[c].wide)
				continue;
			b[0] = 0;
			cols[c].cell(obj, b, CELL_MAX, now);
			cells[n++] = b;
		}
		if (ctl_table_add(t, cells) < 0)
			goto out;
	}
	ctl_table_print_from(t, header ? 0 : 1, f);
	rc = 0;
out:
	ctl_table_free(t);
	free(text);
	return rc;
}

int ctl_print_json(const json_t *v, FILE *f)
{
	char *s = json_dumps(v, JSON_INDENT(4) | JSON_PRESERVE_ORDER);

	if (!s)
		return -ENOMEM;
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

int ctl_print_yaml(const json_t *v, FILE *f)
{
	char *s = yaml_emit(v);
	size_t n;

	if (!s)
		return -ENOMEM;
	n = strlen(s);
	fprintf(f, "%s%s", s, n && s[n - 1] == '\n' ? "" : "\n");
	free(s);
	return 0;
}

void ctl_print_names(const struct kind_info *k, const json_t *items, FILE *f)
{
	size_t i;
	json_t *obj;

	json_array_foreach(items, i, obj)
		fprintf(f, "%s/%s\n", k->singular, obj_str(obj, "metadata.name") ?: "");
}
