/*
 * watch_event.c — one store event as watchers see it (watch_event.h):
 * parsed once, judged against selectors, written as watch lines.  What an
 * update changed for a node's network (changes=network watchers) is
 * compared only when such a watcher is sent the update otherwise, once
 * for all of them (ev->network caches it).
 */
#include "controller/watch_event.h"
#include "controller/controller.h"

#include <stdlib.h>
#include <string.h>

/* The object of kv as it reads at revision rev (a deleted object carries
 * the delete's revision). */
static json_t *object_at(const struct store_kv *kv, int64_t rev)
{
	struct store_kv at = *kv;

	at.mod_rev = rev;
	return obj_from_kv(&at);
}

int watch_event_parse(const struct store_event *e, bool judged, struct watch_event *ev)
{
	bool deleted = e->type == STORE_EVENT_DELETE;
	const struct store_kv *src = deleted ? &e->prev : &e->kv;

	memset(ev, 0, sizeof(*ev));
	if (!src->key || !(ev->obj = object_at(src, e->kv.mod_rev)) || !json_is_object(ev->obj)) {
		watch_event_free(ev);
		return -1;
	}
	if (deleted)
		ev->type = "DELETED";
	else
		ev->type = e->kv.create_rev == e->kv.mod_rev ? "ADDED" : "MODIFIED";
	if (!judged)
		return 0;
	ev->has_now = !deleted;
	ev->has_before = deleted;
	selector_view_of(ev->obj, deleted ? &ev->before : &ev->now);
	if (!deleted && e->prev.key) {
		ev->old = object_at(&e->prev, e->kv.mod_rev);
		if (json_is_object(ev->old)) {
			ev->has_before = true;
			selector_view_of(ev->old, &ev->before);
		}
	}
	return 0;
}

void watch_event_free(struct watch_event *ev)
{
	json_decref(ev->obj);
	json_decref(ev->old);
	memset(ev, 0, sizeof(*ev));
}

char *watch_event_line(const char *type, const json_t *obj, size_t *len)
{
	json_t *ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
	char *s = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	char *line;

	json_decref(ev);
	if (!s)
		return NULL;
	*len = strlen(s) + 1;
	line = realloc(s, *len + 1);
	if (!line) {
		free(s);
		return NULL;
	}
	line[*len - 1] = '\n';
	line[*len] = 0;
	return line;
}

/* Whether update ev changed what a node's network is built from: compared
 * once, at the first watcher that asks (the event's judge is one thread). */
static bool network_changed(struct watch_event *ev)
{
	if (ev->network == WATCH_NETWORK_UNKNOWN)
		ev->network = selector_network_changed(ev->old, ev->obj) ? WATCH_NETWORK_CHANGED
									 : WATCH_NETWORK_SAME;
	return ev->network == WATCH_NETWORK_CHANGED;
}

/* The delivery for an event the selector matches now and/or before;
 * same: an update that changed nothing a node's network reads, asked for
 * only when it can matter (it may cost a comparison). */
static enum watch_delivery decide(bool now, bool before, bool update, const struct selector *s,
				  bool (*same)(void *), void *arg)
{
	if (now && before && update && s->network_updates && same(arg))
		return WATCH_NOTHING;	/* nothing a node's network reads */
	if (now)
		return before || !update ? WATCH_AS_IS : WATCH_ENTERED;
	if (before)
		return update ? WATCH_LEFT : WATCH_AS_IS;
	return WATCH_NOTHING;
}

static bool event_same(void *ev)
{
	return !network_changed(ev);
}

static bool judge_same(void *j)
{
	return ((const struct watch_judge *)j)->network == WATCH_NETWORK_SAME;
}

enum watch_delivery watch_event_delivery(struct watch_event *ev, const struct selector *s)
{
	return decide(ev->has_now && selector_matches(s, &ev->now),
		      ev->has_before && selector_matches(s, &ev->before), ev->has_now && ev->old, s, event_same, ev);
}

enum watch_delivery watch_judge_delivery(const struct watch_judge *j, const struct selector *s)
{
	return decide(j->has_now && selector_matches(s, &j->now), j->has_before && selector_matches(s, &j->before),
		      j->update, s, judge_same, (void *)j);
}

/* A view's copy in j: the fields into text at *at (advanced), the labels
 * held. */
static void view_keep(struct selector_view *to, const struct selector_view *from, char **at)
{
	for (int f = 0; f < SELECTOR_FIELDS; f++) {
		size_t n = strlen(from->field[f]) + 1;

		memcpy(*at, from->field[f], n);
		to->field[f] = *at;
		*at += n;
	}
	to->labels = json_incref((json_t *)from->labels);
}

static size_t view_text(const struct selector_view *v)
{
	size_t n = 0;

	for (int f = 0; f < SELECTOR_FIELDS; f++)
		n += strlen(v->field[f]) + 1;
	return n;
}

struct watch_judge *watch_judge_of(struct watch_event *ev)
{
	size_t len = (ev->has_now ? view_text(&ev->now) : 0) + (ev->has_before ? view_text(&ev->before) : 0);
	struct watch_judge *j = calloc(1, sizeof(*j) + len);
	char *at;

	if (!j)
		return NULL;
	at = (char *)(j + 1);
	j->has_now = ev->has_now;
	j->has_before = ev->has_before;
	j->update = ev->has_now && ev->old;
	if (j->has_now)
		view_keep(&j->now, &ev->now, &at);
	if (j->has_before)
		view_keep(&j->before, &ev->before, &at);
	j->network = !j->update ? WATCH_NETWORK_UNKNOWN
		     : network_changed(ev) ? WATCH_NETWORK_CHANGED : WATCH_NETWORK_SAME;
	return j;
}

void watch_judge_free(struct watch_judge *j)
{
	if (!j)
		return;
	json_decref((json_t *)j->now.labels);
	json_decref((json_t *)j->before.labels);
	free(j);
}

char *watch_event_line_for(const struct watch_event *ev, enum watch_delivery d, size_t *len)
{
	switch (d) {
	case WATCH_AS_IS:
		return watch_event_line(ev->type, ev->obj, len);
	case WATCH_ENTERED:
		return watch_event_line("ADDED", ev->obj, len);
	case WATCH_LEFT:
		return watch_event_line("DELETED", ev->old, len);
	case WATCH_NOTHING:
		break;
	}
	return NULL;
}
