/*
 * watch_table.c — watch events as Tables (see watch_table.h).
 *
 * Two buffers: in holds raw event lines as the watcher gave them ([off,
 * len) not yet converted), out one converted line ([off, len) not yet
 * handed out).  A stream's reads go
 *
 *   take: out has bytes ──► copy them out
 *         else in has a whole line ──► convert it into out, copy
 *         else 0 ──► (caller, hub lock) pull: watcher_read into in until
 *                    a '\n' arrives ──► take again
 *
 * A line that is not an event of an object (an ERROR's Status, a line
 * that does not parse) is handed out as it came, as kube-apiserver sends a
 * Status unconverted.
 */
#include "controller/watch_table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PULL_CHUNK (16 * 1024)	/* what one watcher_read may add to in */

struct buf {
	char *data;
	size_t off, len, cap;
};

struct watch_table {
	const struct kind_info *kind;
	enum table_include include;
	bool headers_sent;	/* the column definitions went with an earlier Table */
	struct buf in, out;
};

struct watch_table *watch_table_new(const struct kind_info *k, enum table_include include)
{
	struct watch_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->kind = k;
	t->include = include;
	return t;
}

void watch_table_free(struct watch_table *t)
{
	if (!t)
		return;
	free(t->in.data);
	free(t->out.data);
	free(t);
}

/* Room for want more bytes at b's end, what was consumed dropped first. */
static int buf_reserve(struct buf *b, size_t want)
{
	char *p;
	size_t cap;

	if (b->off) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : PULL_CHUNK;
	while (cap < b->len + want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

ssize_t watch_table_pull(struct watch_table *t, struct watcher *w)
{
	struct buf *in = &t->in;
	size_t got = 0;

	for (;;) {
		ssize_t n;

		if (in->len - in->off > WATCH_TABLE_LINE_MAX || buf_reserve(in, PULL_CHUNK))
			return -1;	/* invariant 2 */
		n = watcher_read(w, in->data + in->len, PULL_CHUNK);
		if (n <= 0)
			return n < 0 ? -1 : 0;	/* a partial line waits for the rest */
		in->len += (size_t)n;
		got += (size_t)n;
		if (memchr(in->data + in->len - (size_t)n, '\n', (size_t)n))
			return (ssize_t)got;
	}
}

/* line (len bytes, its '\n' excluded) converted, with its '\n', into out
 * (empty). */
static int convert(struct watch_table *t, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL), *obj = json_object_get(ev, "object");
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	json_t *table = NULL, *out = NULL;
	char *text = NULL;
	size_t n;
	int err = -ENOMEM;

	if (!type || !json_is_object(obj) || !kind || strcmp(kind, t->kind->kind) != 0) {
		/* not an object's event: as it came */
		err = buf_reserve(&t->out, len + 1);
		if (!err) {
			memcpy(t->out.data + t->out.len, line, len);
			t->out.data[t->out.len + len] = '\n';
			t->out.len += len + 1;
		}
		goto out;
	}
	table = table_of_event(t->kind, obj, t->include, !t->headers_sent, time(NULL));
	out = table ? json_pack("{s:s, s:O}", "type", type, "object", table) : NULL;
	text = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (!text)
		goto out;
	n = strlen(text);
	err = buf_reserve(&t->out, n + 1);
	if (err)
		goto out;
	memcpy(t->out.data + t->out.len, text, n);
	t->out.data[t->out.len + n] = '\n';
	t->out.len += n + 1;
	t->headers_sent = true;
out:
	free(text);
	json_decref(out);
	json_decref(table);
	json_decref(ev);
	return err;
}

ssize_t watch_table_take(struct watch_table *t, char *buf, size_t max)
{
	struct buf *in = &t->in, *out = &t->out;

	for (;;) {
		size_t n = out->len - out->off;
		const char *line, *nl;

		if (n) {
			if (n > max)
				n = max;
			memcpy(buf, out->data + out->off, n);
			out->off += n;
			if (out->off == out->len)
				out->off = out->len = 0;
			return (ssize_t)n;
		}
		line = in->data + in->off;
		nl = in->len > in->off ? memchr(line, '\n', in->len - in->off) : NULL;
		if (!nl)
			return 0;
		in->off += (size_t)(nl - line) + 1;
		if (convert(t, line, (size_t)(nl - line)))
			return -1;
	}
}

size_t watch_table_bookmark(const struct watch_table *t, int64_t rev, char *buf, size_t max)
{
	int n;

	(void)t;
	n = snprintf(buf, max,
		     "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\","
		     "\"metadata\":{\"resourceVersion\":\"%" PRId64 "\"},\"columnDefinitions\":[],\"rows\":[]}}\n",
		     rev);
	return n > 0 && (size_t)n < max ? (size_t)n : 0;
}
