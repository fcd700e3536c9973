/*
 * list_query.c — the query string of a list or a watch, checked
 * (list_query.h).  Each parameter is read on its own and every error names
 * it; nothing here touches the store.
 */
#include "controller/list_query.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A value quoted in a message: at most 200 bytes of it. */
#define QUOTE(v) (int)(strlen(v) > 200 ? 200 : strlen(v)), (v)

static int bad(struct status *st, const char *param, const char *value, const char *why)
{
	status_set(st, 400, "BadRequest", "%s '%.*s': %s", param, QUOTE(value), why);
	return -1;
}

static int selectors(struct list_query *q, const struct kind_info *k, list_query_get_fn get, void *ctx,
		     struct status *st)
{
	const char *labels = get(ctx, "labelSelector"), *fields = get(ctx, "fieldSelector");
	char why[512];

	if (selector_parse_labels(&q->sel, labels, why, sizeof(why)))
		return bad(st, "labelSelector", labels, why);
	if (selector_parse_fields(&q->sel, k, fields, why, sizeof(why)))
		return bad(st, "fieldSelector", fields, why);
	return 0;
}

/* Decimal digits of any length, cut to max: 0 with *out, or -1. */
static int clamped_number(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;

	if (!*v || strspn(v, "0123456789") != strlen(v))
		return -1;
	for (; *v; v++) {
		uint64_t d = (uint64_t)(*v - '0');

		if (n > (max - d) / 10) {
			*out = max;	/* longer than the bound: the bound, never an overflow */
			return 0;
		}
		n = n * 10 + d;
	}
	*out = n;
	return 0;
}

/* Go's strconv.ParseBool, as Kubernetes reads boolean parameters. */
static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE", "False" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(v, yes[i]) || !strcmp(v, no[i])) {
			*out = !strcmp(v, yes[i]);
			return 0;
		}
	}
	return -1;
}

static int watch_params(struct list_query *q, list_query_get_fn get, void *ctx, struct status *st)
{
	const char *timeout = get(ctx, "timeoutSeconds"), *bookmarks = get(ctx, "allowWatchBookmarks");
	const char *changes = get(ctx, "changes");
	uint64_t n;

	if (timeout && *timeout) {
		if (clamped_number(timeout, WATCH_TIMEOUT_MAX, &n))
			return bad(st, "timeoutSeconds", timeout, "not a number of seconds (decimal digits)");
		q->timeout = (unsigned)n;
	}
	if (bookmarks && *bookmarks && parse_bool(bookmarks, &q->bookmarks))
		return bad(st, "allowWatchBookmarks", bookmarks, "not true or false");
	if (changes && *changes) {
		if (strcmp(changes, "network") == 0)
			q->sel.network_updates = true;
		else if (strcmp(changes, "all") != 0)
			return bad(st, "changes", changes, "not 'all' or 'network'");
	}
	return 0;
}

static int list_params(struct list_query *q, list_query_get_fn get, void *ctx, struct status *st)
{
	const char *limit = get(ctx, "limit"), *cont = get(ctx, "continue");
	uint64_t n;

	if (limit && *limit) {
		if (clamped_number(limit, SIZE_MAX / 2, &n))
			return bad(st, "limit", limit, "not a number of items (decimal digits)");
		q->limit = (size_t)n;
	}
	if (cont && *cont) {
		if (strlen(cont) > LIST_CONTINUE_MAX)
			return bad(st, "continue", cont, "longer than any token this server makes");
		if (q->rv >= 0)
			return bad(st, "continue", cont, "a resourceVersion cannot be given with continue (the "
				   "token holds the list's)");
		snprintf(q->cont, sizeof(q->cont), "%s", cont);
	}
	return 0;
}

int list_query_parse(struct list_query *q, const struct kind_info *k, bool watch, list_query_get_fn get,
		     void *ctx, struct status *st)
{
	const char *rv = get(ctx, "resourceVersion");

	memset(q, 0, sizeof(*q));
	q->rv = -1;
	if (rv && *rv && model_revision_parse(rv, &q->rv)) {
		status_set(st, 400, "BadRequest", "resourceVersion: '%.64s' is not a revision (decimal digits)", rv);
		return -1;
	}
	if (q->rv == 0)
		q->rv = -1;	/* Kubernetes: 0 is any revision */
	if (selectors(q, k, get, ctx, st) || (watch ? watch_params(q, get, ctx, st) : list_params(q, get, ctx, st))) {
		list_query_free(q);
		return -1;
	}
	return 0;
}

void list_query_free(struct list_query *q)
{
	if (q)
		selector_free(&q->sel);
}
