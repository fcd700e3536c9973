/*
 * watch.c — `weftctl get KIND ... -w`, as `kubectl get -w` does it: list
 * (with the selectors) and print the rows under one header, then watch the
 * collection from the list's resourceVersion with the same selectors and
 * print one row per event as it arrives, stdout flushed after each so a
 * pipe sees it.  -o json/yaml/name print each object on its own (the
 * list's items one by one, then each event's object).
 *
 *   list --rv--> watch (allowWatchBookmarks, timeoutSeconds) --ends--> watch from the last rv
 *                  |  BOOKMARK: the rv moves, nothing printed
 *                  +- 410 Expired (status or ERROR event) --> list again (rows printed again, no header)
 *
 * NAMEs: one is watched through fieldSelector metadata.name=NAME (server
 * side); several through the whole collection, filtered here.  A NAME
 * missing from the first list is NotFound (exit 1), as kubectl does.
 *
 * --timeout bounds the whole command (SIGALRM), and SIGINT / SIGTERM end it
 * too: the handler cancels the running request (httpc_cancel is
 * async-signal-safe) and the command exits 0.  Any server error (401, 403,
 * a 400 for a selector) or transport failure is printed and exits 1.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "ctl/ctl.h"
#include "ctl/print.h"
#include "ctl/stop.h"
#include "ctl/watch.h"

#define WATCH_MAX_S 1800	/* the server's cap on timeoutSeconds */

struct watch {
	struct ctl *ctl;
	const struct ctl_watch_opts *o;
	const char *fields;		/* o->fields, or metadata.name=NAME for one NAME */
	char name_field[300];
	char rv[64];
	bool header_done;
	bool relist;			/* an ERROR event 410: list again */
	bool failed;			/* on_line printed an error */
	size_t lines;			/* lines of the current stream */
};

int ctl_event_parse(const char *line, size_t len, struct ctl_event *ev, char *err, size_t errlen)
{
	static const struct { const char *name; enum ctl_event_type type; } types[] = {
		{ "ADDED", CTL_EV_ADDED }, { "MODIFIED", CTL_EV_MODIFIED }, { "DELETED", CTL_EV_DELETED },
		{ "BOOKMARK", CTL_EV_BOOKMARK }, { "ERROR", CTL_EV_ERROR },
	};
	json_error_t jerr;
	const char *type;
	size_t i;
	int rc = -EPROTO;

	memset(ev, 0, sizeof(*ev));
	ev->root = json_loadb(line, len, 0, &jerr);
	if (!ev->root) {
		snprintf(err, errlen, "an event (%zu bytes) is not valid JSON: line %d, column %d: %s", len,
			 jerr.line, jerr.column, jerr.text);
		goto out;
	}
	type = json_string_value(json_object_get(ev->root, "type"));
	ev->object = json_object_get(ev->root, "object");
	if (!type || !json_is_object(ev->object)) {
		snprintf(err, errlen, "an event lacks its type or its object: %.200s", line);
		goto out;
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(type, types[i].name))
			break;
	if (i == sizeof(types) / sizeof(types[0])) {
		snprintf(err, errlen, "an event of unknown type \"%.64s\"", type);
		goto out;
	}
	ev->type = types[i].type;
	if (ev->type == CTL_EV_ERROR)
		ev->code = (long)json_integer_value(json_object_get(ev->object, "code"));
	else
		ev->rv = obj_str(ev->object, "metadata.resourceVersion");
	rc = 0;
out:
	if (rc)
		ctl_event_free(ev);
	return rc;
}

void ctl_event_free(struct ctl_event *ev)
{
	json_decref(ev->root);
	memset(ev, 0, sizeof(*ev));
}

static bool wanted(const struct watch *w, const json_t *obj)
{
	const char *name = obj_str(obj, "metadata.name") ?: "";

	if (!w->o->nnames)
		return true;
	for (size_t i = 0; i < w->o->nnames; i++)
		if (!strcmp(w->o->names[i], name))
			return true;
	return false;
}

/* Print objs (an array) in the chosen format and flush.  0 or -errno (printed). */
static int print_objects(struct watch *w, const json_t *objs)
{
	const struct kind_info *k = w->o->k;
	size_t i;
	json_t *obj;
	int rc = 0;

	switch ((enum ctl_output)w->o->out) {
	case CTL_OUT_TABLE:
	case CTL_OUT_WIDE:
		if (!json_array_size(objs))
			break;
		rc = ctl_print_rows(k, objs, w->o->out == CTL_OUT_WIDE, w->o->all && k->namespaced, !w->header_done,
				    time(NULL), stdout);
		w->header_done = true;
		break;
	case CTL_OUT_NAME:
		ctl_print_names(k, objs, stdout);
		break;
	case CTL_OUT_JSON:
	case CTL_OUT_YAML:
		json_array_foreach(objs, i, obj) {
			rc = w->o->out == CTL_OUT_JSON ? ctl_print_json(obj, stdout) : ctl_print_yaml(obj, stdout);
			if (rc < 0)
				break;
		}
		break;
	}
	if (rc < 0)
		fprintf(stderr, "error: cannot print: out of memory\n");
	if (fflush(stdout) != 0) {
		perror("error: writing the output");
		rc = -EIO;
	}
	return rc;
}

/* List, print, keep the rv.  CTL_EXIT_OK, or an exit code after printing
 * (ctl_stopped(): the caller exits 0). */
static int list_print(struct watch *w, bool first)
{
	const struct ctl_watch_opts *o = w->o;
	char path[CTL_LIST_PATH_MAX];
	struct ctl_reply r = { 0 };
	const json_t *items;
	json_t *mine = NULL, *sorted = NULL, *obj;
	const char *rv;
	size_t i;
	int rc;

	rc = ctl_list_path(o->k, o->ns, o->all, o->labels, w->fields, path, sizeof(path));
	if (rc)
		return rc;
	rc = CTL_EXIT_FAIL;
	items = ctl_list(w->ctl, path, &r);
	if (!items)
		goto out;
	rv = obj_str(r.json, "metadata.resourceVersion");
	if (!rv || !rv[0] || strlen(rv) >= sizeof(w->rv)) {
		fprintf(stderr, "error: the server's answer to GET %s has no usable metadata.resourceVersion\n", path);
		goto out;
	}
	snprintf(w->rv, sizeof(w->rv), "%s", rv);
	mine = json_array();
	if (!mine)
		goto oom;
	json_array_foreach(items, i, obj)
		if (wanted(w, obj) && json_array_append(mine, obj) < 0)
			goto oom;
	if (first)
		for (i = 0; i < o->nnames; i++) {
			bool found = false;
			size_t j;

			json_array_foreach(mine, j, obj)
				found = found || !strcmp(obj_str(obj, "metadata.name") ?: "", o->names[i]);
			if (!found) {
				ctl_print_not_found(o->k, o->names[i]);
				goto out;
			}
		}
	sorted = ctl_sort_items(mine);
	if (!sorted)
		goto oom;
	if (print_objects(w, sorted) < 0)
		goto out;
	rc = CTL_EXIT_OK;
	goto out;
oom:
	fprintf(stderr, "error: out of memory\n");
out:
	json_decref(sorted);
	json_decref(mine);
	ctl_reply_free(&r);
	return rc;
}

/* One line of the stream: 0 go on, 1 stop (relist or signal), < 0 failed (printed). */
static int on_line(const char *line, size_t len, void *arg)
{
	struct watch *w = arg;
	struct ctl_event ev;
	char err[512];
	json_t *one = NULL;
	int rc;

	w->lines++;
	rc = ctl_event_parse(line, len, &ev, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "error: the watch of %s: %s\n", w->o->k->plural, err);
		w->failed = true;
		return rc;
	}
	switch (ev.type) {
	case CTL_EV_ERROR:
		if (ev.code == 410) {
			w->relist = true;
			rc = 1;
		} else {
			struct ctl_reply r = { .status = ev.code, .json = (json_t *)ev.object };

			ctl_print_server_error(&r);
			w->failed = true;
			rc = -EIO;
		}
		goto out;
	case CTL_EV_BOOKMARK:
		break;
	case CTL_EV_ADDED:
	case CTL_EV_MODIFIED:
	case CTL_EV_DELETED:
		if (!wanted(w, ev.object))
			break;
		one = json_pack("[O]", ev.object);
		if (!one || print_objects(w, one) < 0) {
			if (!one)
				fprintf(stderr, "error: out of memory\n");
			w->failed = true;
			rc = -EIO;
			goto out;
		}
		break;
	}
	if (ev.rv && ev.rv[0] && strlen(ev.rv) < sizeof(w->rv))
		snprintf(w->rv, sizeof(w->rv), "%s", ev.rv);
	rc = ctl_stopped() ? 1 : 0;
out:
	json_decref(one);
	ctl_event_free(&ev);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One watch from w->rv.  CTL_EXIT_OK when it ended cleanly (w->relist says
 * whether to list again), else an exit code after printing. */
static int watch_once(struct watch *w, double deadline)
{
	const struct ctl_watch_opts *o = w->o;
	char path[CTL_LIST_PATH_MAX], num[32], err[1024];
	struct httpc_response resp = { 0 };
	long secs = WATCH_MAX_S;
	int rc;

	if (deadline > 0) {
		double left = deadline - now_s();

		secs = left < 1 ? 1 : left > WATCH_MAX_S ? WATCH_MAX_S : (long)left + 1;
	}
	rc = ctl_list_path(o->k, o->ns, o->all, o->labels, w->fields, path, sizeof(path));
	if (rc)
		return rc;
	snprintf(num, sizeof(num), "%ld", secs);
	if (!ctl_path_add_query(path, sizeof(path), "watch", "1") ||
	    !ctl_path_add_query(path, sizeof(path), "resourceVersion", w->rv) ||
	    !ctl_path_add_query(path, sizeof(path), "allowWatchBookmarks", "true") ||
	    !ctl_path_add_query(path, sizeof(path), "timeoutSeconds", num)) {
		fprintf(stderr, "error: the selectors are too long (4096 bytes each at most)\n");
		return CTL_EXIT_USAGE;
	}
	w->lines = 0;
	w->relist = false;
	rc = httpc_stream(w->ctl->http, path, on_line, w, &resp, err, sizeof(err));
	if (rc < 0) {
		if (!ctl_stopped() && !w->failed)
			fprintf(stderr, "error: %s\n", err);
		rc = ctl_stopped() && !w->failed ? CTL_EXIT_OK : CTL_EXIT_FAIL;
		goto out;
	}
	if (resp.status == 410) {
		w->relist = true;
	} else if (resp.status < 200 || resp.status >= 300) {
		ctl_print_stream_error(&resp);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	rc = CTL_EXIT_OK;
out:
	httpc_response_free(&resp);
	return rc;
}

int ctl_watch(struct ctl *ctl, const struct ctl_watch_opts *o)
{
	struct watch w = { .ctl = ctl, .o = o, .fields = o->fields };
	struct itimerval timer = { { 0, 0 }, { o->timeout_s, 0 } };
	double deadline = o->timeout_s > 0 ? now_s() + (double)o->timeout_s : 0;
	int rc;

	if (o->nnames == 1 && !o->fields) {
		snprintf(w.name_field, sizeof(w.name_field), "metadata.name=%s", o->names[0]);
		w.fields = w.name_field;
	}
	if (!ctl_http(ctl))
		return CTL_EXIT_FAIL;
	ctl_stop_catch(ctl->http, true);
	if (o->timeout_s > 0 && setitimer(ITIMER_REAL, &timer, NULL) < 0) {
		perror("error: --timeout: setitimer");
		ctl_stop_release();
		return CTL_EXIT_FAIL;
	}
	rc = list_print(&w, true);
	while (rc == CTL_EXIT_OK && !ctl_stopped()) {
		double started = now_s();

		rc = watch_once(&w, deadline);
		if (rc != CTL_EXIT_OK || ctl_stopped())
			break;
		if (w.relist) {
			rc = list_print(&w, false);
			continue;
		}
		/* a stream that ends at once, empty, is not retried in a busy loop */
		if (!w.lines && now_s() - started < 1) {
			struct timespec one = { 1, 0 };

			nanosleep(&one, NULL);	/* a signal cuts it short */
		}
	}
	if (ctl_stopped() && !w.failed)
		rc = CTL_EXIT_OK;
	memset(&timer, 0, sizeof(timer));
	setitimer(ITIMER_REAL, &timer, NULL);
	ctl_stop_release();
	return rc;
}
