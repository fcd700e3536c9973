/*
 * source_dir.c — the directory source (source.h): every *.json file is one
 * object.  A file is stat'ed before it is read (at most
 * LB_OBJECT_FILE_MAX bytes, a regular file), parsed by jansson (duplicate
 * keys refused), then handed to the state; any failure is one report line
 * naming the file, and the next file is read.
 */
#include "lb/source.h"

#include "lib/errmsg.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dir_source {
	char *dir;
};

static int json_file(const struct dirent *e)
{
	size_t n = strlen(e->d_name);

	return e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

static void load_one(struct lb_state *state, const char *dir, const char *file, char *report, size_t len)
{
	char path[4096], err[512];
	json_error_t jerr;
	struct stat st;
	json_t *obj;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > LB_OBJECT_FILE_MAX) {
		errmsg_line(report, len, "%s: not a regular file of at most %d bytes", file, LB_OBJECT_FILE_MAX);
		return;
	}
	obj = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj) {
		errmsg_line(report, len, "%s: line %d: %s", file, jerr.line, jerr.text);
		return;
	}
	r = lb_state_add_json(state, obj, NULL, err, sizeof(err));
	json_decref(obj);
	if (r == -EINVAL)
		errmsg_line(report, len, "%s: %s", file, err);
	else if (r)
		errmsg_line(report, len, "%s: %s", file, strerror(-r));
}

static int dir_load(void *ctx, struct lb_state *state, char *report, size_t len)
{
	struct dir_source *d = ctx;
	struct dirent **names = NULL;
	int n = scandir(d->dir, &names, json_file, alphasort);

	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (i < LB_OBJECTS_MAX)
			load_one(state, d->dir, names[i]->d_name, report, len);
		else if (i == LB_OBJECTS_MAX)
			errmsg_line(report, len, "%s: more than %d objects; the rest are not read", d->dir,
				    LB_OBJECTS_MAX);
		free(names[i]);
	}
	free(names);
	lb_state_finish(state, report, len);
	return 0;
}

static int dir_fd(void *ctx)
{
	return -1;
}

static void dir_close(void *ctx)
{
	struct dir_source *d = ctx;

	if (d)
		free(d->dir);
	free(d);
}

static const struct lb_source_ops dir_ops = {
	.name = "dir",
	.load = dir_load,
	.fd = dir_fd,
	.close = dir_close,
};

int lb_source_dir_open(struct lb_source *src, const char *dir, char *err, size_t errlen)
{
	struct dir_source *d = calloc(1, sizeof(*d));
	struct stat st;

	src->ops = NULL;
	src->ctx = NULL;
	if (!d || !(d->dir = strdup(dir))) {
		free(d);
		return -ENOMEM;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		errmsg(err, errlen, "--objects-dir %s: %s", dir, errno ? strerror(errno) : "not a directory");
		dir_close(d);
		return -ENOTDIR;
	}
	src->ops = &dir_ops;
	src->ctx = d;
	return 0;
}

void lb_source_close(struct lb_source *src)
{
	if (src && src->ops)
		src->ops->close(src->ctx);
	if (src) {
		src->ops = NULL;
		src->ctx = NULL;
	}
}
