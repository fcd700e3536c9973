/*
 * source_api.c — the API source (source.h): the engine's objects from
 * weft-controller, by list and watch of
 *   /apis/lb.weft.io/v1/virtualservices
 *   /apis/lb.weft.io/v1/sslkeyandcertificates
 * one thread each, as a reflector keeps a cache.
 *
 *   thread:  list ──► cache := items, revision ──► watch from revision
 *              ▲            (notify)                │ ADDED/MODIFIED: put
 *              │                                    │ DELETED: remove (notify each)
 *              └── 410, ERROR, a bad line ◄─────────┤ ends cleanly: watch again
 *                  (back-off while unreachable)     └ broken: watch again from
 *                                                     the revision, next replica
 *   load:    once both kinds were listed, every cached object into the
 *            state (under the cache's lock); -EAGAIN before that
 *   fd:      a pipe's read end: one byte is written after a change while
 *            none is pending; load drains it
 *
 * Invariants
 *  1. The cache of a kind is replaced whole by a list, never merged: an
 *     object deleted while the watch was down does not linger.
 *  2. An object the state refuses is one report line; the others load.
 *  3. close cancels both streams (httpc_cancel) and joins the threads
 *     before it frees anything they use.
 */
#include "lb/source.h"

#include "lib/errmsg.h"
#include "lib/httpc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 3000
#define WATCH_TIMEOUT_S 300
#define KINDS 2

struct api_source;

struct kind {
	struct api_source *src;
	const char *path;
	const char *what;
	struct httpc *http;
	pthread_t thread;
	bool started;
	bool listed;		/* under src->lock */
	json_t *objs;		/* name -> object; under src->lock */
	char rv[32];		/* the thread's own */
};

struct api_source {
	pthread_mutex_t lock;
	struct kind kinds[KINDS];
	int pipe[2];
	atomic_bool pending;
	atomic_bool stopping;
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

static void say(struct api_source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct api_source *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!s->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->log(s->log_arg, line);
}

static void notify(struct api_source *s)
{
	if (!atomic_exchange(&s->pending, true) && write(s->pipe[1], "x", 1) < 0)
		atomic_store(&s->pending, false);
}

static void sleep_ms(struct api_source *s, unsigned ms)
{
	while (ms && !atomic_load(&s->stopping)) {
		unsigned step = ms > 100 ? 100 : ms;
		struct timespec t = { 0, (long)step * 1000000L };

		nanosleep(&t, NULL);
		ms -= step;
	}
}

/* ------------------------------------------------------------ the thread */

static int list_once(struct kind *k, char *err, size_t errlen)
{
	struct httpc_response r = { 0 };
	json_t *j = NULL, *items, *it, *objs;
	const char *rv;
	size_t i;
	int rc = httpc_request(k->http, "GET", k->path, NULL, 0, &r, err, errlen);

	if (rc)
		return rc;
	if (r.status != 200) {
		snprintf(err, errlen, "GET %s: HTTP %ld: %.200s", k->path, r.status, r.body);
		rc = -EPROTO;
		goto out;
	}
	j = json_loadb(r.body, r.len, 0, NULL);
	items = json_object_get(j, "items");
	rv = json_string_value(json_object_get(json_object_get(j, "metadata"), "resourceVersion"));
	if (!json_is_array(items) || !rv) {
		snprintf(err, errlen, "GET %s: the answer is not a list", k->path);
		rc = -EPROTO;
		goto out;
	}
	objs = json_object();
	json_array_foreach(items, i, it) {
		const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));

		if (name)
			json_object_set(objs, name, it);
	}
	snprintf(k->rv, sizeof(k->rv), "%s", rv);
	pthread_mutex_lock(&k->src->lock);
	json_decref(k->objs);
	k->objs = objs;
	k->listed = true;
	pthread_mutex_unlock(&k->src->lock);
	say(k->src, "list %s: %zu at revision %s", k->what, json_array_size(items), k->rv);
	notify(k->src);
out:
	json_decref(j);
	httpc_response_free(&r);
	return rc;
}

static int on_event(const char *line, size_t len, void *arg)
{
	struct kind *k = arg;
	json_t *ev = json_loadb(line, len, 0, NULL), *obj;
	const char *type, *name, *rv;

	if (!ev)
		return -EPROTO;
	type = json_string_value(json_object_get(ev, "type"));
	obj = json_object_get(ev, "object");
	if (!type || !json_is_object(obj) || !strcmp(type, "ERROR")) {
		json_decref(ev);
		return -EPROTO;	/* an expired revision, usually: list again */
	}
	name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	if (name && (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED"))) {
		pthread_mutex_lock(&k->src->lock);
		if (!strcmp(type, "DELETED"))
			json_object_del(k->objs, name);
		else
			json_object_set(k->objs, name, obj);
		pthread_mutex_unlock(&k->src->lock);
		notify(k->src);
	}
	if (rv)
		snprintf(k->rv, sizeof(k->rv), "%s", rv);
	json_decref(ev);
	return atomic_load(&k->src->stopping) ? 1 : 0;
}

static void *kind_thread(void *arg)
{
	struct kind *k = arg;
	struct api_source *s = k->src;
	unsigned backoff = BACKOFF_MIN_MS;
	char path[512], err[256];

	while (!atomic_load(&s->stopping)) {
		if (list_once(k, err, sizeof(err))) {
			if (!atomic_load(&s->stopping))
				say(s, "list %s: %s; again in %u ms", k->what, err, backoff);
			sleep_ms(s, backoff);
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			continue;
		}
		backoff = BACKOFF_MIN_MS;
		while (!atomic_load(&s->stopping)) {
			struct httpc_response r = { 0 };
			int rc;

			snprintf(path, sizeof(path), "%s?watch=1&resourceVersion=%s&timeoutSeconds=%d", k->path,
				 k->rv, WATCH_TIMEOUT_S);
			rc = httpc_stream(k->http, path, on_event, k, &r, err, sizeof(err));
			if (rc == 0 && r.status == 200) {
				httpc_response_free(&r);
				continue;	/* its timeout: on from the revision */
			}
			if (rc < 0 && rc != -EPROTO && !atomic_load(&s->stopping)) {
				/* broken or unreachable: from the same revision, after a pause */
				say(s, "watch %s: %s; resuming from revision %s", k->what, err, k->rv);
				httpc_response_free(&r);
				sleep_ms(s, backoff);
				backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
				continue;
			}
			httpc_response_free(&r);
			break;		/* 410, an ERROR event, another status: list again */
		}
	}
	return NULL;
}

/* ----------------------------------------------------------- the table */

static int api_load(void *ctx, struct lb_state *state, char *report, size_t len)
{
	struct api_source *s = ctx;
	char drain[64], err[512];
	int rc = 0;

	while (read(s->pipe[0], drain, sizeof(drain)) > 0)
		;
	atomic_store(&s->pending, false);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < KINDS; i++)
		if (!s->kinds[i].listed)
			rc = -EAGAIN;
	for (int i = 0; i < KINDS && !rc; i++) {
		const char *name;
		json_t *obj;

		json_object_foreach(s->kinds[i].objs, name, obj) {
			int r = lb_state_add_json(state, obj, NULL, err, sizeof(err));

			if (r == -EINVAL)
				errmsg_line(report, len, "%s %s: %s", s->kinds[i].what, name, err);
			else if (r) {
				rc = r;
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (!rc)
		lb_state_finish(state, report, len);	/* sorted for its lookups */
	return rc;
}

static int api_fd(void *ctx)
{
	return ((struct api_source *)ctx)->pipe[0];
}

static void api_close(void *ctx)
{
	struct api_source *s = ctx;

	if (!s)
		return;
	atomic_store(&s->stopping, true);
	for (int i = 0; i < KINDS; i++)
		if (s->kinds[i].http)
			httpc_cancel(s->kinds[i].http);
	for (int i = 0; i < KINDS; i++) {
		if (s->kinds[i].started)
			pthread_join(s->kinds[i].thread, NULL);
		httpc_destroy(s->kinds[i].http);
		json_decref(s->kinds[i].objs);
	}
	if (s->pipe[0] >= 0)
		close(s->pipe[0]);
	if (s->pipe[1] >= 0)
		close(s->pipe[1]);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const struct lb_source_ops api_ops = { "api", api_load, api_fd, api_close };

int lb_source_api_open(struct lb_source *src, const struct lb_source_api_options *o, char *err, size_t errlen)
{
	static const char *const paths[KINDS] = { "/apis/lb.weft.io/v1/virtualservices",
						  "/apis/lb.weft.io/v1/sslkeyandcertificates" };
	static const char *const whats[KINDS] = { "virtualservices", "sslkeyandcertificates" };
	struct httpc_options hopt = { .server = o->controller, .token_file = o->token_file,
				      .ca_file = o->ca_file, .user_agent = "weft-lb" };
	struct api_source *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->pipe[0] = s->pipe[1] = -1;
	s->log = o->log;
	s->log_arg = o->log_arg;
	pthread_mutex_init(&s->lock, NULL);
	if (pipe2(s->pipe, O_CLOEXEC | O_NONBLOCK)) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	for (int i = 0; i < KINDS; i++) {
		struct kind *k = &s->kinds[i];

		k->src = s;
		k->path = paths[i];
		k->what = whats[i];
		k->objs = json_object();
		k->http = httpc_create(&hopt, err, errlen);
		if (!k->http || !k->objs) {
			rc = k->http ? -ENOMEM : -errno;
			goto fail;
		}
	}
	for (int i = 0; i < KINDS; i++) {
		rc = -pthread_create(&s->kinds[i].thread, NULL, kind_thread, &s->kinds[i]);
		if (rc) {
			snprintf(err, errlen, "cannot start a thread: %s", strerror(-rc));
			goto fail;
		}
		s->kinds[i].started = true;
	}
	src->ops = &api_ops;
	src->ctx = s;
	return 0;
fail:
	api_close(s);
	return rc;
}
