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
 *   observed: what the engine made of the last load, per VirtualService
 *            ({state, message, observedSpec}: the spec's hash as loaded);
 *            a writer thread PATCHes status.engines.<engine> of each whose
 *            entry differs from the one the watch last showed (merge patch:
 *            the other engines' entries are untouched), at once when the
 *            wanted entries change, and each second for any that failed
 *            or that someone else changed
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
#include <stdint.h>
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
	pthread_cond_t wake;		/* the writer's: want changed, or stopping */
	struct kind kinds[KINDS];
	char *engine;
	json_t *loaded;			/* VS name -> its spec's hash, at the last load; under lock */
	json_t *want;			/* VS name -> the entry to write; under lock */
	bool want_changed;		/* under lock */
	struct httpc *writer_http;
	pthread_t writer;
	bool writer_started;
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

/* ------------------------------------------------------- the status */

/* FNV-1a, 64 bits, of the spec's canonical text: which spec an entry is of */
static json_t *spec_hash(const json_t *vs)
{
	char *text = json_dumps(json_object_get(vs, "spec"), JSON_SORT_KEYS | JSON_COMPACT), hex[24];
	uint64_t h = 14695981039346656037ull;

	if (!text)
		return NULL;
	for (const char *p = text; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	free(text);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)h);
	return json_string(hex);
}

/* The reason of "VirtualService NAME: reason" in report, or NULL. */
static json_t *rejection(const char *report, const char *name)
{
	size_t n = strlen(name);

	for (const char *line = report, *end; line && *line; line = *end ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		if (!strncmp(line, "VirtualService ", 15) && !strncmp(line + 15, name, n) && line[15 + n] == ':') {
			const char *why = line + 15 + n + 1;

			while (*why == ' ')
				why++;
			return json_stringn(why, (size_t)(end - why));
		}
	}
	return NULL;
}

static void api_observed(void *ctx, const char *report, bool pending)
{
	struct api_source *s = ctx;
	json_t *want = json_object(), *hash;
	const char *name;

	pthread_mutex_lock(&s->lock);
	json_object_foreach(s->loaded, name, hash) {
		json_t *why = rejection(report, name);
		const char *state = why ? "Rejected" : pending ? "Pending" : "Applied";

		json_object_set_new(want, name, json_pack("{s:s, s:o, s:O}", "state", state, "message",
							  why ? why : json_string(""), "observedSpec", hash));
	}
	if (!json_equal(want, s->want)) {
		json_decref(s->want);
		s->want = want;
		want = NULL;
		s->want_changed = true;
		pthread_cond_signal(&s->wake);
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(want);
}

static int patch_status(struct api_source *s, const char *name, const json_t *entry, char *err, size_t errlen)
{
	json_t *body = json_pack("{s:{s:{s:O}}}", "status", "engines", s->engine, entry);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, path[600];
	struct httpc_response r = { 0 };
	int rc = -ENOMEM;

	json_decref(body);
	if (!text)
		return rc;
	snprintf(path, sizeof(path), "/apis/lb.weft.io/v1/virtualservices/%s/status", name);
	rc = httpc_request_typed(s->writer_http, "PATCH", path, "application/merge-patch+json", text, strlen(text),
				 &r, err, errlen);
	if (!rc && r.status != 200 && r.status != 404) {	/* 404: deleted meanwhile */
		snprintf(err, errlen, "HTTP %ld: %.200s", r.status, r.body);
		rc = -EPROTO;
	}
	free(text);
	httpc_response_free(&r);
	return rc;
}

/* One round: every wanted entry the VS's status does not already hold. */
static bool write_round(struct api_source *s)
{
	json_t *want, *todo = json_object(), *entry;
	const char *name;
	bool failed = false;
	char err[256];

	pthread_mutex_lock(&s->lock);
	want = json_incref(s->want);
	s->want_changed = false;
	json_object_foreach(want, name, entry) {
		const json_t *vs = json_object_get(s->kinds[0].objs, name);
		const json_t *have = json_object_get(json_object_get(json_object_get(vs, "status"), "engines"),
						     s->engine);

		if (vs && !json_equal(have, entry))
			json_object_set(todo, name, entry);
	}
	pthread_mutex_unlock(&s->lock);
	json_object_foreach(todo, name, entry) {
		if (atomic_load(&s->stopping))
			break;
		if (patch_status(s, name, entry, err, sizeof(err))) {
			say(s, "status of virtualservice %s: %s; again in a second", name, err);
			failed = true;
		}
	}
	json_decref(todo);
	json_decref(want);
	return failed;
}

static void *writer_thread(void *arg)
{
	struct api_source *s = arg;

	while (!atomic_load(&s->stopping)) {
		struct timespec until;

		pthread_mutex_lock(&s->lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (!s->want_changed && !atomic_load(&s->stopping) &&
		       pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
			;
		pthread_mutex_unlock(&s->lock);
		if (!atomic_load(&s->stopping))
			(void)write_round(s);
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
	if (!rc) {
		const char *name;
		json_t *vs;

		json_object_clear(s->loaded);
		json_object_foreach(s->kinds[0].objs, name, vs)
			if (strcmp(json_string_value(json_object_get(json_object_get(vs, "spec"), "type")) ?
				   json_string_value(json_object_get(json_object_get(vs, "spec"), "type")) : "", "L4"))
				json_object_set_new(s->loaded, name, spec_hash(vs));
	}
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
	pthread_mutex_lock(&s->lock);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->writer_http)
		httpc_cancel(s->writer_http);
	if (s->writer_started)
		pthread_join(s->writer, NULL);
	httpc_destroy(s->writer_http);
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
	json_decref(s->loaded);
	json_decref(s->want);
	free(s->engine);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const struct lb_source_ops api_ops = {
	.name = "api", .load = api_load, .fd = api_fd, .observed = api_observed, .close = api_close,
};

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
	pthread_cond_init(&s->wake, NULL);
	s->engine = strdup(o->engine ? o->engine : "");
	s->loaded = json_object();
	s->want = json_object();
	if (!s->engine || !s->loaded || !s->want) {
		rc = -ENOMEM;
		goto fail;
	}
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
	s->writer_http = httpc_create(&hopt, err, errlen);
	if (!s->writer_http) {
		rc = -errno;
		goto fail;
	}
	rc = -pthread_create(&s->writer, NULL, writer_thread, s);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	s->writer_started = true;
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
