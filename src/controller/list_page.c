/*
 * list_page.c — one page of a list (list_page.h).
 *
 * How a page is read
 *   1. the continue token, when there is one, gives the revision R and
 *      the key to start after; otherwise R is the store's revision now
 *      (and a resourceVersion newer than it is refused)
 *   2. store_range_at(R) in chunks from that key: a list without
 *      selectors asks for limit items at once (and, on its first page,
 *      the collection's count); with selectors, chunks of at least
 *      CHUNK items are parsed and filtered until the page is full
 *   3. a full page whose last item is not the collection's last gets a
 *      token for the rest: R, the last key sent, the count so far
 *
 * Invariants
 *  1. Every chunk of a list, and every page after it, is read at the
 *     revision of the first: the answer is one snapshot.
 *  2. A page holds at most limit items; a token follows only a full page.
 */
#include "controller/list_page.h"

#include "lib/base64.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 512		/* items read at once while filtering */
#define TOKEN_START_MAX 1024	/* bytes of the key in a token */

struct position {
	int64_t rev;		/* 0: the store's revision now */
	char start[TOKEN_START_MAX + 1];	/* the key below the prefix to start after; "" from the start */
	size_t sent;		/* items of the list before this page */
	int64_t total;		/* the collection's size at rev, -1 unknown */
};

/* ------------------------------------------------------------------ tokens */

static char *token_encode(const struct position *p)
{
	json_t *o = json_pack("{s:i, s:I, s:s, s:I, s:I}", "v", 1, "rv", (json_int_t)p->rev, "start", p->start,
			      "n", (json_int_t)p->sent, "total", (json_int_t)p->total);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL, *b64 = NULL;

	json_decref(o);
	if (text)
		b64 = base64_encode(text, strlen(text));
	free(text);
	/* base64url without padding, as Kubernetes' tokens: nothing to escape in a URL */
	for (char *c = b64; c && *c; c++) {
		if (*c == '+')
			*c = '-';
		else if (*c == '/')
			*c = '_';
		else if (*c == '=')
			*c = 0;
	}
	return b64;
}

static int token_decode(const char *token, struct position *p)
{
	size_t n = strlen(token), len = 0;
	char b64[LIST_CONTINUE_MAX + 4];
	unsigned char *text = NULL;
	json_int_t v = 0, rev = 0, sent = 0, total = 0;
	const char *start = NULL;
	json_t *o = NULL;
	int rc = -1;

	if (n > LIST_CONTINUE_MAX || n % 4 == 1)
		return -1;
	for (size_t i = 0; i < n; i++)
		b64[i] = token[i] == '-' ? '+' : token[i] == '_' ? '/' : token[i];
	while (n % 4)
		b64[n++] = '=';
	if (base64_decode(b64, n, &text, &len) == 0)
		o = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES, NULL);
	if (o && !json_unpack(o, "{s:I, s:I, s:s, s:I, s:I !}", "v", &v, "rv", &rev, "start", &start, "n", &sent,
			      "total", &total) &&
	    v == 1 && rev > 0 && sent >= 0 && total >= -1 && strlen(start) <= TOKEN_START_MAX) {
		p->rev = rev;
		snprintf(p->start, sizeof(p->start), "%s", start);
		p->sent = (size_t)sent;
		p->total = total;
		rc = 0;
	}
	json_decref(o);
	free(text);
	return rc;
}

/* ------------------------------------------------------------------ reading */

static bool selected(const struct selector *sel, const struct store_kv *kv)
{
	struct selector_view v;
	json_t *obj;
	bool yes;

	if (selector_empty(sel))
		return true;
	obj = json_loadb(kv->value, kv->value_len, 0, NULL);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return false;	/* not an object: lists leave it out (list_stream.h) */
	}
	selector_view_of(obj, &v);
	yes = selector_matches(sel, &v);
	json_decref(obj);
	return yes;
}

static int take(struct store_kv_list *to, size_t *cap, struct store_kv *kv)
{
	if (to->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct store_kv *kvs = realloc(to->kvs, ncap * sizeof(*kvs));

		if (!kvs)
			return -ENOMEM;
		to->kvs = kvs;
		*cap = ncap;
	}
	to->kvs[to->n++] = *kv;
	memset(kv, 0, sizeof(*kv));
	return 0;
}

static int read_failed(struct status *st, int err, const struct position *at)
{
	if (err == -ESTORE_COMPACTED)
		status_set(st, 410, "Expired",
			   "continue: the list's revision %" PRId64 " is compacted: list again without continue",
			   at->rev);
	else if (err == -ERANGE)
		status_set(st, 400, "BadRequest", "continue: not a token of this server's (revision %" PRId64
			   " is newer than the store's)", at->rev);
	else
		status_set(st, 500, "InternalError", "store: cannot list (%s)", strerror(-err));
	return -1;
}

/* Step 2: the page's items into out, from at; *more when the collection
 * has keys after them. */
static int read_items(struct store *s, const char *prefix, const struct list_query *q, struct position *at,
		      struct list_page *out, bool *more, struct status *st)
{
	bool filter = !selector_empty(&q->sel), count = !at->start[0] && q->limit && !filter, chunk_more;
	size_t chunk = !q->limit ? 0 : filter && q->limit < CHUNK ? CHUNK : q->limit, cap = 0, total = 0;
	char after[2048];
	const char *from = NULL;
	int err = 0;

	if (at->start[0]) {
		snprintf(after, sizeof(after), "%s%s", prefix, at->start);
		from = after;
	}
	*more = false;
	do {
		struct store_kv_list l = { 0 };
		size_t i = 0;

		err = store_range_at(s, prefix, from, chunk, at->rev, &l, count ? &total : NULL);
		if (err)
			return read_failed(st, err, at);
		at->rev = out->items.revision = l.revision;	/* invariant 1 */
		if (count)
			at->total = (int64_t)total;
		count = false;
		for (; i < l.n && !(q->limit && out->items.n == q->limit) && !err; i++)
			if (selected(&q->sel, &l.kvs[i]))
				err = take(&out->items, &cap, &l.kvs[i]);
		chunk_more = l.more;
		*more = i < l.n || (chunk_more && q->limit && out->items.n == q->limit);
		if (l.n) {
			snprintf(after, sizeof(after), "%s", l.kvs[l.n - 1].key);
			from = after;
		}
		store_kv_list_free(&l);
		if (err) {
			status_set(st, 500, "InternalError", "out of memory");
			return -1;
		}
	} while (chunk_more && !*more);
	return 0;
}

int list_revision_check(struct store *s, int64_t rv, struct status *st)
{
	int64_t now = 0;

	if (rv <= 0)
		return 0;
	if (store_revision(s, &now)) {
		status_set(st, 500, "InternalError", "store: cannot read the revision");
		return -1;
	}
	if (rv <= now)
		return 0;
	status_set(st, 504, "Timeout", "Too large resource version: %" PRId64 ", current: %" PRId64, rv, now);
	st->retry_after = 1;
	return -1;
}

int list_page_read(struct store *s, const struct kind_info *k, const char *ns, const struct list_query *q,
		   struct list_page *out, struct status *st)
{
	struct position at = { .total = -1 };
	char prefix[600];
	bool more = false;

	memset(out, 0, sizeof(*out));
	out->remaining = -1;
	if (ns && *ns)
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/%s/", k->plural, ns);
	else
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", k->plural);
	if (q->cont[0] && token_decode(q->cont, &at)) {
		status_set(st, 400, "BadRequest", "continue '%.64s': not a continue token of this server's", q->cont);
		return -1;
	}
	if (!q->cont[0] && list_revision_check(s, q->rv, st))
		return -1;
	if (read_items(s, prefix, q, &at, out, &more, st)) {
		list_page_free(out);
		return -1;
	}
	if (more) {
		const char *last = out->items.kvs[out->items.n - 1].key + strlen(prefix);

		at.sent += out->items.n;
		snprintf(at.start, sizeof(at.start), "%s", last);
		out->cont = token_encode(&at);
		if (!out->cont) {
			list_page_free(out);
			status_set(st, 500, "InternalError", "out of memory");
			return -1;
		}
		if (at.total >= 0 && (size_t)at.total >= at.sent)
			out->remaining = at.total - (int64_t)at.sent;
	}
	return 0;
}

void list_page_free(struct list_page *p)
{
	if (!p)
		return;
	store_kv_list_free(&p->items);
	free(p->cont);
	p->cont = NULL;
	p->remaining = -1;
}
