/*
 * engine.c — the loop of engine.h: signals, loading, planning, applying,
 * the reload rate limit, counters and status.
 *
 * Invariants:
 *   1. e->applied is the layout HAProxy runs, and the files under the
 *      state directory are its files (written before HAProxy is told).
 *   2. A reload never happens within min_reload_interval_ms of the last
 *      one; a reload due earlier waits as e->pending.
 *   3. The state is reloaded from the source on every change signal, and
 *      kept (e->state) for the pending reload.
 *
 * Signals reach the loop through a self-pipe: a handler writes the signal
 * number (one byte) to it, the loop polls it.  A handler, not a blocked
 * mask and sigtimedwait, because a signal may be delivered to any thread
 * (the sanitizers' runtime has its own), and a mask covers one thread.
 * The pipe's write end is the one file-level variable: a handler has no
 * other way to find it.
 */
#include "lb/engine.h"

#include "lb/adopt.h"
#include "lb/haproxy.h"
#include "lb/layout.h"
#include "lb/plan.h"
#include "lb/render.h"
#include "lib/errmsg.h"
#include "lib/monotime.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPORT_MAX (64 * 1024)

struct engine {
	const struct lb_engine_config *cfg;
	struct lb_haproxy h;
	struct lb_state *state;
	struct lb_layout *applied;
	bool pending;
	char pending_reason[512];
	int64_t last_reload_ms;		/* monotime_ms() */
	unsigned long reloads, batches, commands, generation, failures;
	char last[600];
	char *report;		/* the last load's rejections */
};

static int signal_pipe = -1;

static void on_signal(int sig)
{
	unsigned char c = (unsigned char)sig;
	int saved = errno;

	if (write(signal_pipe, &c, 1) < 0) {
		/* full: a wake-up is pending anyway */
	}
	errno = saved;
}

static void logf_(struct engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct engine *e, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (e->cfg->log)
		e->cfg->log(e->cfg->log_arg, line);
}

static void write_status_file(struct engine *e);

static void write_status(struct engine *e)
{
	/* the source may tell others (the API: each VirtualService's status) */
	if (e->cfg->source->ops->observed)
		e->cfg->source->ops->observed(e->cfg->source->ctx, e->report, e->pending);
	write_status_file(e);
}

static void write_status_file(struct engine *e)
{
	char path[LB_PATH_BUF], tmp[LB_PATH_BUF + 8];
	json_t *st = json_object(), *rejected = json_array();
	const struct lb_layout *l = e->applied;

	for (char *line = e->report, *end; line && *line; line = *end ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		json_array_append_new(rejected, json_stringn(line, (size_t)(end - line)));
	}
	json_object_set_new(st, "name", json_string(e->cfg->name));
	json_object_set_new(st, "generation", json_integer((json_int_t)e->generation));
	json_object_set_new(st, "reloads", json_integer((json_int_t)e->reloads));
	json_object_set_new(st, "runtimeBatches", json_integer((json_int_t)e->batches));
	json_object_set_new(st, "runtimeCommands", json_integer((json_int_t)e->commands));
	json_object_set_new(st, "failures", json_integer((json_int_t)e->failures));
	json_object_set_new(st, "pendingReload", json_boolean(e->pending));
	json_object_set_new(st, "haproxyPid", json_integer(e->h.master));
	json_object_set_new(st, "workerPid", json_integer(e->h.worker));
	json_object_set_new(st, "frontends", json_integer(l ? (json_int_t)l->n_frontends : 0));
	json_object_set_new(st, "backends", json_integer(l ? (json_int_t)l->n_backends : 0));
	json_object_set_new(st, "servers", json_integer(l ? (json_int_t)lb_layout_servers(l) : 0));
	json_object_set_new(st, "last", json_string(e->last));
	json_object_set_new(st, "rejected", rejected);
	lb_render_path(path, e->cfg->state_dir, NULL, "status.json");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_dump_file(st, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) == 0)
		rename(tmp, path);
	json_decref(st);
}

/* a fresh state from the source; the old one is kept on failure */
static int load(struct engine *e)
{
	struct lb_state *s = lb_state_new();
	int r;

	if (!s)
		return -ENOMEM;
	e->report[0] = '\0';
	r = e->cfg->source->ops->load(e->cfg->source->ctx, s, e->report, REPORT_MAX);
	if (r == -EAGAIN) {		/* the source has nothing whole yet (the API's first lists) */
		lb_state_free(s);
		return r;
	}
	if (r) {
		lb_state_free(s);
		logf_(e, "source %s: load failed: %s; keeping the objects loaded before", e->cfg->source->ops->name,
		      strerror(-r));
		return r;
	}
	lb_state_free(e->state);
	e->state = s;
	e->generation++;
	return 0;
}

/* build a layout of e->state (sticky to prev); rejections appended */
static struct lb_layout *build(struct engine *e, const struct lb_layout *prev)
{
	size_t used = strlen(e->report);

	return lb_layout_build(e->state, prev, e->cfg->min_slots, e->report + used, REPORT_MAX - used);
}

static void log_report(struct engine *e)
{
	for (char *line = e->report, *end; *line; line = *end ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		logf_(e, "rejected: %.*s", (int)(end - line), line);
	}
}

static int do_reload(struct engine *e)
{
	char err[4096];
	struct lb_layout *l;
	int r;

	e->report[0] = '\0';
	l = build(e, NULL);
	if (!l)
		return -errno;
	if ((r = lb_render_write(l, e->cfg->state_dir, err, sizeof(err))) ||
	    (r = lb_haproxy_check(e->cfg->haproxy, e->cfg->state_dir, err, sizeof(err))) ||
	    (r = lb_haproxy_reload(&e->h, err, sizeof(err)))) {
		e->failures++;
		logf_(e, "reload failed: %s", err);
		/* the files go back to what runs */
		if (e->applied && lb_render_write(e->applied, e->cfg->state_dir, err, sizeof(err)))
			logf_(e, "restoring the files: %s", err);
		lb_layout_free(l);
		e->pending = false;
		return r;
	}
	e->reloads++;
	e->last_reload_ms = monotime_ms();
	e->pending = false;
	snprintf(e->last, sizeof(e->last), "reload: %s", e->pending_reason);
	logf_(e, "reload %lu (worker %d): %s; %zu listeners, %zu backends, %zu servers", e->reloads, (int)e->h.worker,
	      e->pending_reason, l->n_frontends, l->n_backends, lb_layout_servers(l));
	lb_layout_free(e->applied);
	e->applied = l;
	return 0;
}

static void want_reload(struct engine *e, const char *reason)
{
	snprintf(e->pending_reason, sizeof(e->pending_reason), "%s", reason);
	e->pending = true;
}

/* a change: runtime ops, or a pending reload */
static void change(struct engine *e)
{
	struct lb_plan plan = { 0 };
	struct lb_layout *l = NULL;
	char err[1024];
	size_t i = 0;

	if (load(e) != 0)
		return;
	log_report(e);
	if (!(l = build(e, e->applied)) || lb_plan_make(e->applied, l, e->cfg->state_dir, &plan) != 0) {
		logf_(e, "planning: %s", strerror(errno ? errno : ENOMEM));
		goto out;
	}
	if (plan.reload) {
		want_reload(e, plan.reason);
		goto out;
	}
	e->pending = false;	/* a reverted change no longer needs the reload */
	if (plan.n_ops == 0) {
		snprintf(e->last, sizeof(e->last), "no change");
		goto out;
	}
	if (lb_render_write(l, e->cfg->state_dir, err, sizeof(err)) != 0) {
		logf_(e, "writing files: %s", err);
		goto out;
	}
	for (i = 0; i < plan.n_ops; i++)
		if (lb_haproxy_apply(&e->h, &plan.ops[i], err, sizeof(err)) != 0)
			break;
	e->batches++;
	e->commands += i;
	if (i < plan.n_ops) {
		e->failures++;
		logf_(e, "runtime batch %lu: command %zu of %zu failed: %s; reloading instead", e->batches, i + 1,
		      plan.n_ops, err);
		want_reload(e, "a runtime command failed");
		goto out;
	}
	snprintf(e->last, sizeof(e->last), "runtime: %zu commands", plan.n_ops);
	logf_(e, "runtime batch %lu: %zu commands (%zu servers, %zu slots added, %zu maps, %zu certificates), no reload",
	      e->batches, plan.n_ops, plan.servers, plan.added, plan.maps, plan.certs);
	lb_layout_free(e->applied);
	e->applied = l;
	l = NULL;
out:
	lb_plan_clear(&plan);
	lb_layout_free(l);
}

/* The layout to start with: sticky to the slots in the files on disk
 * when that gives the same files (a restart keeps the slots added at run
 * time, and an adopted HAProxy needs no reload), else a fresh one.  *same:
 * the files on disk are the layout's. */
static struct lb_layout *build_start(struct engine *e, bool *same)
{
	size_t used = strlen(e->report);
	struct lb_layout *disk = NULL, *l = NULL;

	*same = false;
	if (lb_adopt_read(e->cfg->state_dir, &disk) == 0) {
		l = build(e, disk);
		lb_layout_free(disk);
		if (l && lb_render_matches(l, e->cfg->state_dir)) {
			*same = true;
			return l;
		}
		lb_layout_free(l);
		e->report[used] = '\0';	/* the fresh build reports the same */
	}
	l = build(e, NULL);
	*same = l && lb_render_matches(l, e->cfg->state_dir);
	return l;
}

static int start(struct engine *e, char *err, size_t errlen)
{
	bool adopted = false, same = false;
	int r;

	if ((r = load(e))) {
		errmsg(err, errlen, "loading objects: %s", strerror(-r));
		return r;
	}
	log_report(e);
	e->applied = build_start(e, &same);
	if (!e->applied) {
		errmsg(err, errlen, "layout: %s", strerror(errno));
		return -errno;
	}
	e->h.bin = e->cfg->haproxy;
	e->h.dir = e->cfg->state_dir;
	/* adopting: the files on disk are what the running HAProxy has */
	{

		if ((r = lb_render_write(e->applied, e->cfg->state_dir, err, errlen)) ||
		    (r = lb_haproxy_check(e->cfg->haproxy, e->cfg->state_dir, err, errlen)) ||
		    (r = lb_haproxy_start(&e->h, &adopted, err, errlen)))
			return r;
		if (adopted && !same) {
			want_reload(e, "adopted HAProxy runs other files");
			e->last_reload_ms = monotime_ms() - e->cfg->min_reload_interval_ms;
			return do_reload(e);
		}
	}
	snprintf(e->last, sizeof(e->last), "%s", adopted ? "adopted, same configuration" : "started");
	logf_(e, "haproxy %s (master %d, worker %d): %zu listeners, %zu backends, %zu servers",
	      adopted ? "adopted, same configuration, no reload" : "started", (int)e->h.master, (int)e->h.worker,
	      e->applied->n_frontends, e->applied->n_backends, lb_layout_servers(e->applied));
	return 0;
}

#define SOURCE_CHANGED 1u	/* bit 0: no signal has number 0 */

/* the signals that came (a bit per signal), and SOURCE_CHANGED when the
 * source's descriptor (srcfd, -1: none) is readable, waiting up to wait_ms */
static unsigned wait_signals(int fd, int srcfd, long wait_ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = srcfd, .events = POLLIN } };
	unsigned char buf[64];
	unsigned got = 0;
	ssize_t n;

	if (poll(p, srcfd >= 0 ? 2 : 1, (int)wait_ms) <= 0)
		return 0;
	if (srcfd >= 0 && (p[1].revents & POLLIN))
		got |= SOURCE_CHANGED;	/* the source drains it in its load */
	if (!(p[0].revents & POLLIN))
		return got;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			got |= 1u << (buf[i] & 31);
	return got;
}

static int source_fd(const struct engine *e)
{
	return e->cfg->source->ops->fd ? e->cfg->source->ops->fd(e->cfg->source->ctx) : -1;
}

/* Until the source has a whole set of objects (-EAGAIN until then), or
 * SIGTERM/SIGINT (-ECANCELED).  0, or the source's error. */
static int wait_source(struct engine *e, int fd)
{
	bool said = false;
	int r;

	while ((r = load(e)) == -EAGAIN) {
		if (!said)
			logf_(e, "waiting for the %s source's first objects", e->cfg->source->ops->name);
		said = true;
		if (wait_signals(fd, source_fd(e), 1000) & (1u << SIGTERM | 1u << SIGINT))
			return -ECANCELED;
	}
	return r;
}

static int loop(struct engine *e, int fd)
{
	char err[1024];

	for (;;) {
		int64_t now = monotime_ms();
		long wait = 1000;
		unsigned sigs;

		if (e->pending) {
			int64_t due = e->last_reload_ms + e->cfg->min_reload_interval_ms - now;

			wait = due < 0 ? 0 : due;
		}
		sigs = wait_signals(fd, source_fd(e), wait);
		if (sigs & (1u << SIGTERM | 1u << SIGINT))
			return 0;
		if (sigs & (1u << SIGHUP | SOURCE_CHANGED))
			change(e);
		if (e->pending && monotime_ms() >= e->last_reload_ms + e->cfg->min_reload_interval_ms)
			(void)do_reload(e);
		if (!lb_haproxy_alive(&e->h)) {
			bool adopted;

			e->failures++;
			logf_(e, "haproxy is gone; starting it again");
			if (lb_render_write(e->applied, e->cfg->state_dir, err, sizeof(err)) ||
			    lb_haproxy_start(&e->h, &adopted, err, sizeof(err)))
				logf_(e, "restart failed: %s", err);
		}
		write_status(e);
	}
}

int lb_engine_run(const struct lb_engine_config *cfg, char *err, size_t errlen)
{
	struct engine e = { .cfg = cfg };
	struct sigaction sa = { .sa_handler = on_signal }, old[3];
	static const int sigs[3] = { SIGHUP, SIGTERM, SIGINT };
	int pipefd[2] = { -1, -1 };
	int r;

	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) {
		errmsg(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	signal_pipe = pipefd[1];
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	e.report = calloc(1, REPORT_MAX);
	if (!e.report) {
		r = -ENOMEM;
		goto out;
	}
	e.last_reload_ms = monotime_ms() - cfg->min_reload_interval_ms;
	if ((r = wait_source(&e, pipefd[0]))) {
		if (r == -ECANCELED)
			r = 0;		/* stopped before it began */
		else
			errmsg(err, errlen, "loading objects: %s", strerror(-r));
		goto out;
	}
	if ((r = start(&e, err, errlen)))
		goto out;
	write_status(&e);
	r = loop(&e, pipefd[0]);
	logf_(&e, "stopping haproxy (master %d)", (int)e.h.master);
out:
	lb_haproxy_stop(&e.h);
	if (e.report)
		write_status(&e);
	lb_layout_free(e.applied);
	lb_state_free(e.state);
	free(e.report);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	signal_pipe = -1;
	close(pipefd[0]);
	close(pipefd[1]);
	return r;
}
