/*
 * list_stream.c — a list response serialised piece by piece from a store
 * snapshot (list_stream.h says why).
 *
 * The stream is a sequence of pieces, each copied out of `piece` until it
 * is used up, then the next is made:
 *
 *     HEAD ──► ITEMS ──(snapshot used up)──► TAIL ──► DONE
 *     '{"apiVersion":..,"items":['   ',' + item, each   ']}\n'
 *
 * An item is the stored value with its metadata.resourceVersion added,
 * written into a scratch buffer that is reused, so a piece costs no
 * allocation once the buffer has grown to the largest item.  It is
 * spliced into the stored text (stored_text.h: the same bytes, without
 * parsing); a text that is not in the form the splice knows is parsed
 * (obj_from_kv) and dumped, and skipped when unreadable.
 */
#include "controller/list_stream.h"
#include "controller/controller.h"
#include "controller/stored_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER)

enum piece_state { LS_HEAD, LS_ITEMS, LS_TAIL, LS_DONE };

struct list_stream {
	struct store_kv_list snap;
	size_t next;		/* next kv of snap to serialise */
	size_t emitted;		/* items serialised so far (a comma before each but the first) */
	enum piece_state state;
	char *scratch;		/* the current piece, when it is an item */
	size_t scratch_len, scratch_cap;
	const char *piece;	/* what read copies from */
	size_t piece_len, piece_off;
	char *head;		/* '{"apiVersion":..,"metadata":{..},"items":[' (malloc'd) */
	int error;		/* once set, every read returns it: no item is skipped silently */
};

static int scratch_add(const char *s, size_t n, void *arg)
{
	struct list_stream *ls = arg;

	if (ls->scratch_len + n > ls->scratch_cap) {
		size_t cap = ls->scratch_cap ? ls->scratch_cap : 4096;
		char *p;

		while (cap < ls->scratch_len + n)
			cap *= 2;
		p = realloc(ls->scratch, cap);
		if (!p)
			return -1;
		ls->scratch = p;
		ls->scratch_cap = cap;
	}
	memcpy(ls->scratch + ls->scratch_len, s, n);
	ls->scratch_len += n;
	return 0;
}

/* The list object without its items, dumped, with its closing '}'
 * replaced by ',"items":[' — jansson writes the keys in this order. */
static char *make_head(const struct kind_info *k, int64_t rev, const char *cont, int64_t remaining)
{
	char kind[80], rv[24], *s, *head;
	json_t *o, *md;
	size_t n;

	snprintf(kind, sizeof(kind), "%sList", k->kind);
	snprintf(rv, sizeof(rv), "%" PRId64, rev);
	o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", k->api_version, "kind", kind, "metadata",
		      "resourceVersion", rv);
	md = json_object_get(o, "metadata");
	if (md && cont && json_object_set_new(md, "continue", json_string(cont)))
		md = NULL;
	if (md && remaining >= 0 && json_object_set_new(md, "remainingItemCount", json_integer(remaining)))
		md = NULL;
	s = o && md ? json_dumps(o, DUMP_FLAGS) : NULL;
	json_decref(o);
	if (!s)
		return NULL;
	n = strlen(s);
	head = realloc(s, n + sizeof(",\"items\":["));
	if (!head) {
		free(s);
		return NULL;
	}
	memcpy(head + n - 1, ",\"items\":[", sizeof(",\"items\":["));
	return head;
}

struct list_stream *list_stream_new(const struct kind_info *k, struct store_kv_list *snap, const char *cont,
				    int64_t remaining)
{
	struct list_stream *ls = calloc(1, sizeof(*ls));

	if (!ls || !(ls->head = make_head(k, snap->revision, cont, remaining))) {
		free(ls);
		store_kv_list_free(snap);
		memset(snap, 0, sizeof(*snap));
		errno = ENOMEM;
		return NULL;
	}
	ls->snap = *snap;
	memset(snap, 0, sizeof(*snap));
	ls->piece = ls->head;
	ls->piece_len = strlen(ls->head);
	return ls;
}

/* The next item into scratch (with its leading comma): 1, 0 when the
 * snapshot is used up, -ENOMEM. */
static int next_item(struct list_stream *ls)
{
	while (ls->next < ls->snap.n) {
		struct store_kv *kv = &ls->snap.kvs[ls->next++];
		json_t *obj = NULL;
		int err = 0;

		ls->scratch_len = 0;
		if (ls->emitted && scratch_add(",", 1, ls))
			err = -ENOMEM;
		if (!err)
			err = stored_text_add_revision(kv->value, kv->value_len, kv->mod_rev, scratch_add, ls);
		if (err == -EINVAL) {
			err = 0;
			obj = obj_from_kv(kv);
			if (!obj) {
				store_kv_free(kv);
				continue;	/* invariant 2 */
			}
			if (json_dump_callback(obj, scratch_add, ls, DUMP_FLAGS))
				err = -ENOMEM;
			json_decref(obj);
		}
		store_kv_free(kv);	/* invariant 3 */
		if (err)
			return err;
		ls->emitted++;
		return 1;
	}
	return 0;
}

/* Move to the next piece: 1, 0 at the end, -ENOMEM. */
static int next_piece(struct list_stream *ls)
{
	int r;

	ls->piece_off = 0;
	switch (ls->state) {
	case LS_HEAD:
		ls->state = LS_ITEMS;
		/* fall through */
	case LS_ITEMS:
		r = next_item(ls);
		if (r < 0)
			return r;
		if (r) {
			ls->piece = ls->scratch;
			ls->piece_len = ls->scratch_len;
			return 1;
		}
		ls->state = LS_TAIL;
		ls->piece = "]}\n";
		ls->piece_len = 3;
		return 1;
	case LS_TAIL:
		ls->state = LS_DONE;
		/* fall through */
	case LS_DONE:
		break;
	}
	ls->piece = NULL;
	ls->piece_len = 0;
	return 0;
}

ssize_t list_stream_read(struct list_stream *ls, char *buf, size_t max)
{
	size_t n = 0;

	if (ls->error)
		return ls->error;
	while (n < max) {
		size_t take = ls->piece_len - ls->piece_off;

		if (take == 0) {
			int r = next_piece(ls);
			if (r < 0) {
				ls->error = r;
				return n ? (ssize_t)n : r;
			}
			if (r == 0)
				break;
			continue;
		}
		if (take > max - n)
			take = max - n;
		memcpy(buf + n, ls->piece + ls->piece_off, take);
		ls->piece_off += take;
		n += take;
	}
	return (ssize_t)n;
}

void list_stream_free(struct list_stream *ls)
{
	if (!ls)
		return;
	store_kv_list_free(&ls->snap);
	free(ls->scratch);
	free(ls->head);
	free(ls);
}
