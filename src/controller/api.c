/*
 * api.c — the REST API (docs/api.md) on libmicrohttpd.
 *
 * MHD runs a pool of API_THREADS epoll threads; everything of ours they
 * touch (registry, store, watch hub, metrics, the watch list) is guarded by
 * one mutex, held only inside our callbacks.  The expensive part of a watch,
 * the kernel's send to each watcher, happens in MHD after a callback
 * returns, so the threads send in parallel and alongside commits.  A watch
 * is a chunked response whose reader pulls lines from its watcher; when
 * there are none it suspends the connection (no busy loop, no thread per
 * watcher) and the hub's wake, after the next write, resumes it — so
 * thousands of watchers cost a socket and a cursor each, and a watcher
 * resumed late sends every event since in one write.  The main thread runs
 * the timers (api_run): events written by other controllers (for the
 * endpoints controller and the watchers), heartbeats, watch deadlines.
 *
 * Request life:  headers ─► (auth, Content-Length) ─► body chunks (bounded)
 *                 ─► route ─► registry ─► hub sync ─► response
 * A request that fails auth or declares a body over the limit is answered
 * at once and its body is not read.
 *
 * The API is HTTPS (GnuTLS inside MHD, TLS 1.2 and 1.3) with the
 * certificate main hands over (pki.h); plain HTTP only when main asks for
 * it, which it does only on loopback.  A client that speaks plain HTTP to
 * the TLS port fails its handshake and is closed; nothing is logged.
 */
#include "controller/controller.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEARTBEAT_SECONDS 30
#define API_THREADS 2
/* TLS 1.2 and 1.3 only, GnuTLS's NORMAL choice of ciphers within them */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct api {
	pthread_mutex_t lock;		/* everything below but mhd */
	struct MHD_Daemon *mhd;
	struct registry *reg;
	struct watch_hub *hub;
	struct metrics *metrics;
	char token[256];
	size_t max_body;
	time_t last_heartbeat;
	time_t last_tick;
	bool stopping;			/* watch streams end at their next read */
	struct watch_ctx *watches;	/* every open watch, for heartbeats */
};

struct request {
	char *body;
	size_t len, cap;
	bool too_large;
	bool answered;		/* a response went out before the body was read */
	struct timespec start;
};

struct watch_ctx {
	struct api *api;
	struct MHD_Connection *conn;
	struct watcher *watcher;
	struct watch_ctx *prev, *next;
	bool suspended;
	bool heartbeat;		/* send one "\n" on the next read */
	time_t deadline;	/* 0 = none */
};

static double elapsed(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static const double latency_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					 0.1,    0.25,  0.5,    1,     2.5,  5,     10 };
#define NBOUNDS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))

static void observe(struct api *a, int code, double secs)
{
	struct metrics *m = a->metrics;
	size_t b = 0;

	if (code >= 100 && code < 600)
		m->requests_by_class[code / 100]++;
	while (b < NBOUNDS && secs > latency_bounds[b])
		b++;
	m->latency_buckets[b]++;
	m->latency_sum += secs;
	m->latency_count++;
}

static enum MHD_Result send_body(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				 const char *ctype, char *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", ctype);
	ret = MHD_queue_response(c, (unsigned)code, resp);
	MHD_destroy_response(resp);
	if (rq)
		observe(a, code, elapsed(&rq->start));
	return ret;
}

static enum MHD_Result send_json(struct api *a, struct MHD_Connection *c, struct request *rq, int code,
				 json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t len;

	json_decref(obj);
	if (!s)
		return MHD_NO;
	len = strlen(s);
	s[len] = 0;
	/* one object a line, like the watch stream */
	char *t = realloc(s, len + 2);
	if (!t) {
		free(s);
		return MHD_NO;
	}
	t[len] = '\n';
	t[len + 1] = 0;
	return send_body(a, c, rq, code, "application/json", t, len + 1);
}

static enum MHD_Result send_status(struct api *a, struct MHD_Connection *c, struct request *rq,
				   const struct status *st)
{
	json_t *o = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
			      "metadata", "status", "Failure", "message", st->message, "reason",
			      st->reason ? st->reason : "", "code", st->code);
	return send_json(a, c, rq, st->code, o);
}

__attribute__((format(printf, 6, 7))) static enum MHD_Result
fail(struct api *a, struct MHD_Connection *c, struct request *rq, int code, const char *reason,
     const char *fmt, ...)
{
	struct status st = { .code = code, .reason = reason };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st.message, sizeof(st.message), fmt, ap);
	va_end(ap);
	return send_status(a, c, rq, &st);
}

/* ------------------------------------------------------------------ paths */

/* Split a path into segments in place; returns how many, -1 if too many or empty ones. */
static int split(char *path, char **seg, int max)
{
	int n = 0;
	char *p = path;

	while (*p == '/')
		p++;
	while (*p) {
		char *slash = strchr(p, '/');
		if (n == max)
			return -1;
		seg[n++] = p;
		if (!slash)
			break;
		*slash = 0;
		p = slash + 1;
		if (!*p)
			break;
		if (*p == '/')
			return -1;
	}
	return n;
}

int api_parse_route(const char *url, struct route *r)
{
	char path[1024];
	char *seg[8];
	int n, i = 0;
	const char *group;

	memset(r, 0, sizeof(*r));
	if (strlen(url) >= sizeof(path))
		return 404;
	strcpy(path, url);
	n = split(path, seg, 8);
	if (n < 2)
		return 404;
	if (strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0) {
		group = "";
		i = 2;
	} else if (strcmp(seg[0], "apis") == 0 && n >= 3) {
		group = seg[1];
		if (strcmp(seg[2], "v1") != 0)
			return 404;
		i = 3;
	} else {
		return 404;
	}
	if (i == n)
		return 404;
	if (strcmp(group, "network.openshift.io") == 0 && n == i + 1 && strcmp(seg[i], "podnetwork") == 0) {
		r->podnetwork = true;
		return 0;
	}
	/* /namespaces/NS/PLURAL[/NAME] */
	if (strcmp(seg[i], "namespaces") == 0 && n >= i + 3) {
		if (strlen(seg[i + 1]) >= sizeof(r->ns))
			return 404;
		strcpy(r->ns, seg[i + 1]);
		i += 2;
	}
	r->kind = kind_by_resource(group, seg[i]);
	if (!r->kind)
		return 404;
	if (r->ns[0] && !r->kind->namespaced)
		return 404;
	i++;
	if (i < n) {
		if (i + 1 != n || strlen(seg[i]) >= sizeof(r->name))
			return 404;
		strcpy(r->name, seg[i]);
		r->has_name = true;
	}
	return 0;
}

/* ------------------------------------------------------------------ watch */

/* Called with the lock held.  suspended is set, under the lock, in the
 * same critical section that suspends, so a resume never meets a
 * connection that is not suspended. */
static void watch_resume(struct watch_ctx *w)
{
	if (w->suspended) {
		w->suspended = false;
		w->api->metrics->watch_resumes++;
		MHD_resume_connection(w->conn);
	}
}

/* The hub's wake-up (lock held, from the thread that synced the hub). */
static void watch_wake(void *arg)
{
	watch_resume(arg);
}

static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct watch_ctx *w = cls;
	struct api *a = w->api;
	ssize_t n;

	(void)pos;
	pthread_mutex_lock(&a->lock);
	if (a->stopping || (w->deadline && time(NULL) >= w->deadline)) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else if ((n = watcher_read(w->watcher, buf, max)) > 0) {
		a->metrics->watch_writes++;
	} else if (n < 0) {
		a->metrics->watchers_dropped_slow++;
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else if (w->heartbeat) {
		w->heartbeat = false;
		buf[0] = '\n';
		n = 1;
	} else {
		w->suspended = true;
		MHD_suspend_connection(w->conn);
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

static void watch_free(void *cls)
{
	struct watch_ctx *w = cls;
	struct api *a = w->api;

	/* may run inside a handler (holding a->lock) when MHD drops the
	 * response at once, e.g. while the daemon stops: the lock is recursive */
	pthread_mutex_lock(&a->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		a->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	watcher_close(w->watcher);
	pthread_mutex_unlock(&a->lock);
	free(w);
}

static enum MHD_Result start_watch(struct api *a, struct MHD_Connection *c, struct request *rq,
				   const struct route *r)
{
	const char *rv_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
	const char *to_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
	char prefix[600];
	struct status st = { 0 };
	struct watch_ctx *w;
	struct MHD_Response *resp;
	int64_t rv = -1;
	enum MHD_Result ret;

	if (a->stopping) {
		status_set(&st, 503, "ServiceUnavailable", "the controller is stopping");
		return send_status(a, c, rq, &st);
	}
	if (rv_s && *rv_s) {
		char *end;
		errno = 0;
		rv = strtoll(rv_s, &end, 10);
		if (errno || *end || rv < 0)
			return fail(a, c, rq, 400, "BadRequest", "resourceVersion: '%s' is not a revision", rv_s);
		if (rv == 0)
			rv = -1;	/* Kubernetes: 0 = from any point, with the current state first */
	}
	if (r->kind->namespaced && r->ns[0])
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/%s/", r->kind->plural, r->ns);
	else
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", r->kind->plural);
	if (r->has_name) {
		/* a watch of one object: its key exactly (a trailing NUL-free prefix) */
		size_t l = strlen(prefix);
		snprintf(prefix + l, sizeof(prefix) - l, "%s", r->name);
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return MHD_NO;
	if (watch_hub_sync(a->hub)) {
		free(w);
		return fail(a, c, rq, 500, "InternalError", "%s", "store: cannot read events");
	}
	w->watcher = watcher_open(a->hub, prefix, rv, watch_wake, w, &st);
	if (!w->watcher) {
		free(w);
		return send_status(a, c, rq, &st);
	}
	w->api = a;
	w->conn = c;
	if (to_s && *to_s) {
		long t = strtol(to_s, NULL, 10);
		if (t > 0)
			w->deadline = time(NULL) + t;
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, watch_reader, w, watch_free);
	if (!resp) {
		watcher_close(w->watcher);
		free(w);
		return MHD_NO;
	}
	w->next = a->watches;
	if (a->watches)
		a->watches->prev = w;
	a->watches = w;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);	/* may run watch_free now (recursive lock) */
	observe(a, ret == MHD_YES ? 200 : 503, elapsed(&rq->start));
	return ret;
}

/* ------------------------------------------------------------------ handlers */

static json_t *list_object(const struct kind_info *k, json_t *items, int64_t rev)
{
	char kind[64], rv[24];

	snprintf(kind, sizeof(kind), "%sList", k->kind);
	snprintf(rv, sizeof(rv), "%" PRId64, rev);
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", k->api_version, "kind", kind, "metadata",
			 "resourceVersion", rv, "items", items);
}

static enum MHD_Result handle_podnetwork(struct api *a, struct MHD_Connection *c, struct request *rq,
					 json_t *body)
{
	const char *action = json_string_value(json_object_get(body, "action"));
	const char *to = json_string_value(json_object_get(body, "to"));
	json_t *projects = json_object_get(body, "projects"), *p, *out = NULL;
	const char *names[1024];
	size_t i, n = 0;
	enum podnet_action act;
	struct status st = { 0 };
	int64_t rev = 0;

	if (!action)
		return fail(a, c, rq, 400, "BadRequest", "%s", "action: required (join-projects, isolate-projects, make-projects-global)");
	if (strcmp(action, "join-projects") == 0)
		act = PODNET_JOIN;
	else if (strcmp(action, "isolate-projects") == 0)
		act = PODNET_ISOLATE;
	else if (strcmp(action, "make-projects-global") == 0)
		act = PODNET_GLOBAL;
	else
		return fail(a, c, rq, 400, "BadRequest", "action: unknown action '%s'", action);
	if (!json_is_array(projects) || json_array_size(projects) > 1024)
		return fail(a, c, rq, 400, "BadRequest", "%s", "projects: a list of at most 1024 names is required");
	json_array_foreach(projects, i, p) {
		if (!json_is_string(p))
			return fail(a, c, rq, 400, "BadRequest", "%s", "projects: every item must be a name");
		names[n++] = json_string_value(p);
	}
	if (registry_podnetwork(a->reg, act, to, names, n, &out, &rev, &st))
		return send_status(a, c, rq, &st);
	(void)watch_hub_written(a->hub, rev);
	return send_json(a, c, rq, 200,
			 json_pack("{s:s, s:s, s:I, s:o}", "apiVersion", "network.openshift.io/v1", "kind",
				   "PodNetworkResult", "revision", (json_int_t)rev, "items", out));
}

/* What the agents report on their Nodes (annotations weft.io/drops and
 * weft.io/applied-revision), as metrics per node. */
static void node_metrics(struct api *a, FILE *f)
{
	json_t *items = NULL, *node, *drops;
	struct status st = { 0 };
	int64_t rev;
	size_t i;

	if (registry_list(a->reg, kind_get(KIND_NODE), NULL, &items, &rev, &st) < 0)
		return;
	fprintf(f, "# HELP weft_drops_total Packets the data plane dropped, by node and reason "
		   "(as the node's agent last reported).\n# TYPE weft_drops_total counter\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *d = json_string_value(json_object_get(ann, "weft.io/drops"));
		const char *name = obj_name(node), *reason;
		json_t *count;

		if (!d || !name || !(drops = json_loads(d, 0, NULL)))
			continue;
		json_object_foreach(drops, reason, count)
			if (json_is_integer(count) && model_dns1123_label(reason))
				fprintf(f, "weft_drops_total{node=\"%s\",reason=\"%s\"} %" JSON_INTEGER_FORMAT "\n",
					name, reason, json_integer_value(count));
		json_decref(drops);
	}
	fprintf(f, "# HELP weft_node_applied_revision Store revision of the NetNamespaces a node's "
		   "data plane has applied.\n# TYPE weft_node_applied_revision gauge\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *r = json_string_value(json_object_get(ann, "weft.io/applied-revision"));

		if (r && obj_name(node))
			fprintf(f, "weft_node_applied_revision{node=\"%s\"} %lld\n", obj_name(node),
				strtoll(r, NULL, 10));
	}
	fprintf(f, "# HELP weft_service_map_full_total Service map writes a node's agent could not "
		   "make for lack of room, since it started.\n"
		   "# TYPE weft_service_map_full_total counter\n");
	json_array_foreach(items, i, node) {
		const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
		const char *r = json_string_value(json_object_get(ann, "weft.io/service-map-full"));

		if (r && obj_name(node))
			fprintf(f, "weft_service_map_full_total{node=\"%s\"} %llu\n", obj_name(node),
				strtoull(r, NULL, 10));
	}
	json_decref(items);
}

static enum MHD_Result handle_metrics(struct api *a, struct MHD_Connection *c, struct request *rq)
{
	struct alloc_usage u;
	static const char *pools[POOL_COUNT] = { "hostsubnet", "vnid", "clusterip", "nodeport", "vip" };
	struct metrics *m = a->metrics;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint64_t cum = 0;
	int64_t rev = 0;

	if (!f)
		return MHD_NO;
	fprintf(f, "# HELP weft_objects Objects stored, by kind.\n# TYPE weft_objects gauge\n");
	for (int k = 0; k < KIND_COUNT; k++) {
		const struct kind_info *ki = kind_get((enum kind_id)k);
		char prefix[128];
		size_t n = 0;
		snprintf(prefix, sizeof(prefix), OBJ_PREFIX "%s/", ki->plural);
		if (store_count(a->reg->store, prefix, &n) == 0)
			fprintf(f, "weft_objects{kind=\"%s\"} %zu\n", ki->kind, n);
	}
	if (registry_usage(a->reg, &u) == 0) {
		fprintf(f, "# HELP weft_allocations_used Allocated items, by pool.\n# TYPE weft_allocations_used gauge\n");
		for (int p = 0; p < POOL_COUNT; p++)
			fprintf(f, "weft_allocations_used{pool=\"%s\"} %" PRIu64 "\n", pools[p], u.used[p]);
		fprintf(f, "# HELP weft_allocations_free Free items, by pool.\n# TYPE weft_allocations_free gauge\n");
		for (int p = 0; p < POOL_COUNT; p++)
			fprintf(f, "weft_allocations_free{pool=\"%s\"} %" PRIu64 "\n", pools[p],
				u.total[p] > u.used[p] ? u.total[p] - u.used[p] : 0);
	}
	fprintf(f, "# HELP weft_allocation_failures_total Allocations refused because a pool was full.\n"
		   "# TYPE weft_allocation_failures_total counter\n");
	for (int p = 0; p < POOL_COUNT; p++)
		fprintf(f, "weft_allocation_failures_total{pool=\"%s\"} %" PRIu64 "\n", pools[p],
			m->alloc_failures[p]);
	fprintf(f, "# HELP weft_endpoints_writes_total Endpoints written by the endpoints controller.\n"
		   "# TYPE weft_endpoints_writes_total counter\nweft_endpoints_writes_total %" PRIu64 "\n",
		m->endpoints_writes);
	fprintf(f, "# HELP weft_endpoints_deletes_total Endpoints deleted by the endpoints controller.\n"
		   "# TYPE weft_endpoints_deletes_total counter\nweft_endpoints_deletes_total %" PRIu64 "\n",
		m->endpoints_deletes);
	fprintf(f, "# HELP weft_endpoints_recomputed_total Services whose Endpoints the endpoints controller computed.\n"
		   "# TYPE weft_endpoints_recomputed_total counter\nweft_endpoints_recomputed_total %" PRIu64 "\n",
		   m->endpoints_recomputes);
	fprintf(f, "# HELP weft_endpoints_failures_total Endpoints writes that failed (retried).\n"
		   "# TYPE weft_endpoints_failures_total counter\nweft_endpoints_failures_total %" PRIu64 "\n",
		m->endpoints_failures);
	fprintf(f, "# HELP weft_watchers Open watch streams.\n# TYPE weft_watchers gauge\nweft_watchers %zu\n",
		watch_hub_watchers(a->hub));
	fprintf(f, "# HELP weft_watch_resumes_total Watch streams resumed because events arrived.\n"
		   "# TYPE weft_watch_resumes_total counter\nweft_watch_resumes_total %" PRIu64 "\n",
		m->watch_resumes);
	fprintf(f, "# HELP weft_watch_writes_total Writes of event data to watch streams.\n"
		   "# TYPE weft_watch_writes_total counter\nweft_watch_writes_total %" PRIu64 "\n",
		m->watch_writes);
	fprintf(f, "# HELP weft_watchers_dropped_total Watch streams ended because they fell behind.\n"
		   "# TYPE weft_watchers_dropped_total counter\nweft_watchers_dropped_total %" PRIu64 "\n",
		m->watchers_dropped_slow);
	if (store_revision(a->reg->store, &rev) == 0)
		fprintf(f, "# HELP weft_store_revision The store's revision.\n# TYPE weft_store_revision gauge\n"
			   "weft_store_revision %" PRId64 "\n", rev);
	node_metrics(a, f);
	fprintf(f, "# HELP weft_http_requests_total HTTP requests answered, by status class.\n"
		   "# TYPE weft_http_requests_total counter\n");
	for (int k = 1; k < 6; k++)
		fprintf(f, "weft_http_requests_total{code=\"%dxx\"} %" PRIu64 "\n", k, m->requests_by_class[k]);
	fprintf(f, "# HELP weft_http_request_duration_seconds Time to answer a request.\n"
		   "# TYPE weft_http_request_duration_seconds histogram\n");
	for (size_t b = 0; b < NBOUNDS; b++) {
		cum += m->latency_buckets[b];
		fprintf(f, "weft_http_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", latency_bounds[b], cum);
	}
	cum += m->latency_buckets[NBOUNDS];
	fprintf(f, "weft_http_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
	fprintf(f, "weft_http_request_duration_seconds_sum %g\n", m->latency_sum);
	fprintf(f, "weft_http_request_duration_seconds_count %" PRIu64 "\n", m->latency_count);
	fclose(f);
	return send_body(a, c, rq, 200, "text/plain; version=0.0.4", buf, len);
}

static enum MHD_Result dispatch(struct api *a, struct MHD_Connection *c, struct request *rq,
				const char *url, const char *method)
{
	struct route r;
	struct status st = { 0 };
	json_t *body = NULL, *out = NULL;
	int code, err;
	bool is_get = strcmp(method, "GET") == 0, is_post = strcmp(method, "POST") == 0,
	     is_put = strcmp(method, "PUT") == 0, is_delete = strcmp(method, "DELETE") == 0;

	if (strcmp(url, "/metrics") == 0 && is_get)
		return handle_metrics(a, c, rq);
	code = api_parse_route(url, &r);
	if (code)
		return fail(a, c, rq, 404, "NotFound", "the server could not find the requested resource (%s)", url);
	if (is_post || is_put || (is_delete && rq->len)) {
		json_error_t jerr;
		body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &jerr);
		if (!body) {
			char msg[300];
			snprintf(msg, sizeof(msg), "the body is not valid JSON: line %d, column %d: %s", jerr.line,
				 jerr.column, jerr.text);
			return fail(a, c, rq, 400, "BadRequest", "%s", msg);
		}
		if (!json_is_object(body)) {
			json_decref(body);
			return fail(a, c, rq, 400, "BadRequest", "%s", "the body must be a JSON object");
		}
	}
	if (r.podnetwork) {
		enum MHD_Result ret;
		if (!is_post) {
			json_decref(body);
			return fail(a, c, rq, 405, "MethodNotAllowed", "%s", "podnetwork takes POST");
		}
		ret = handle_podnetwork(a, c, rq, body);
		json_decref(body);
		return ret;
	}
	if (r.kind->namespaced && !r.ns[0] && (is_post || r.has_name)) {
		json_decref(body);
		return fail(a, c, rq, 404, "NotFound", "%s: a namespaced resource needs /namespaces/NS/ in its path",
			    url);
	}

	if (is_get) {
		const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
		if (watch && (strcmp(watch, "1") == 0 || strcmp(watch, "true") == 0))
			return start_watch(a, c, rq, &r);
		if (r.has_name) {
			err = registry_get(a->reg, r.kind, r.ns, r.name, &out, &st);
		} else {
			json_t *items = NULL;
			int64_t rev = 0;
			err = registry_list(a->reg, r.kind, r.ns, &items, &rev, &st);
			if (!err)
				out = list_object(r.kind, items, rev);
		}
		code = 200;
	} else if (is_post && !r.has_name) {
		err = registry_create(a->reg, r.kind, r.ns, body, &out, &st);
		code = 201;
	} else if (is_put && r.has_name) {
		err = registry_replace(a->reg, r.kind, r.ns, r.name, body, &out, &st);
		code = 200;
	} else if (is_delete && r.has_name) {
		/* DeleteOptions: only preconditions.resourceVersion is honoured */
		const char *want = json_string_value(json_object_get(
			json_object_get(body, "preconditions"), "resourceVersion"));
		char *end = NULL;
		long long want_rev = want ? strtoll(want, &end, 10) : 0;

		if (want && (!*want || *end || want_rev <= 0)) {
			enum MHD_Result ret = fail(a, c, rq, 400, "BadRequest",
						   "preconditions.resourceVersion: '%s' is not a revision",
						   want);

			json_decref(body);
			return ret;
		}
		err = registry_delete_if(a->reg, r.kind, r.ns, r.name, want_rev, &out, &st);
		code = 200;
	} else {
		json_decref(body);
		return fail(a, c, rq, 405, "MethodNotAllowed", "%s is not allowed on this path", method);
	}
	json_decref(body);
	if (err)
		return send_status(a, c, rq, &st);
	if (!is_get)
		(void)watch_hub_written(a->hub, a->reg->last_write_rev);
	return send_json(a, c, rq, code, out);
}

static bool authorized(struct api *a, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	return token_equal(h + 7, a->token);
}

static enum MHD_Result handle_request(struct api *a, struct MHD_Connection *c, const char *url,
				      const char *method, const char *upload, size_t *upload_size, void **ctx);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	struct api *a = cls;
	enum MHD_Result ret;

	(void)version;
	pthread_mutex_lock(&a->lock);
	ret = handle_request(a, c, url, method, upload, upload_size, ctx);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

static enum MHD_Result handle_request(struct api *a, struct MHD_Connection *c, const char *url,
				      const char *method, const char *upload, size_t *upload_size, void **ctx)
{
	struct request *rq = *ctx;

	if (!rq) {
		const char *cl;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		*ctx = rq;
		if (strcmp(url, "/healthz") == 0 && strcmp(method, "GET") == 0) {
			rq->answered = true;
			return send_body(a, c, rq, 200, "text/plain", strdup("ok\n"), 3);
		}
		if (!authorized(a, c)) {
			rq->answered = true;
			return fail(a, c, rq, 401, "Unauthorized", "%s",
				    "a valid bearer token is required (Authorization: Bearer <token>)");
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > a->max_body) {
			char msg[128];
			rq->answered = true;
			snprintf(msg, sizeof(msg), "the request body is %s bytes; the limit is %zu", cl, a->max_body);
			return fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->answered && !rq->too_large) {
			if (rq->len + *upload_size > a->max_body) {
				rq->too_large = true;
				free(rq->body);
				rq->body = NULL;
				rq->len = rq->cap = 0;
			} else {
				if (rq->len + *upload_size + 1 > rq->cap) {
					size_t ncap = rq->cap ? rq->cap : 4096;
					char *p;
					while (ncap < rq->len + *upload_size + 1)
						ncap *= 2;
					p = realloc(rq->body, ncap);
					if (!p)
						return MHD_NO;
					rq->body = p;
					rq->cap = ncap;
				}
				memcpy(rq->body + rq->len, upload, *upload_size);
				rq->len += *upload_size;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_YES;
	rq->answered = true;
	if (rq->too_large) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the request body is over the limit of %zu bytes", a->max_body);
		return fail(a, c, rq, 413, "RequestEntityTooLarge", "%s", msg);
	}
	return dispatch(a, c, rq, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode t)
{
	struct request *rq = *ctx;

	(void)cls;
	(void)c;
	(void)t;
	if (rq) {
		free(rq->body);
		free(rq);
		*ctx = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap;	/* MHD's own chatter (client resets) is not the operator's business */
}

struct api *api_start(const struct api_config *cfg, struct registry *r, struct watch_hub *h,
		      struct metrics *m, char *err, size_t errlen)
{
	struct api *a = calloc(1, sizeof(*a));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[256];
	const char *colon = strrchr(cfg->listen, ':');
	long port;
	/* HTTPS unless main asked for plain HTTP (MHD copies nothing: the PEM stays cfg's) */
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES },
		{ MHD_OPTION_END, 0, NULL },
	};
	bool https = cfg->tls_cert && cfg->tls_key;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (https && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "this libmicrohttpd has no TLS: it cannot serve HTTPS");
		free(a);
		return NULL;
	}
	if (!colon || (size_t)(colon - cfg->listen) >= sizeof(host)) {
		snprintf(err, errlen, "--listen %s: want HOST:PORT", cfg->listen);
		free(a);
		return NULL;
	}
	memcpy(host, cfg->listen, (size_t)(colon - cfg->listen));
	host[colon - cfg->listen] = 0;
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "--listen %s: want an IPv4 address and a port 1-65535", cfg->listen);
		free(a);
		return NULL;
	}
	sa.sin_port = htons((uint16_t)port);
	{
		pthread_mutexattr_t attr;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&a->lock, &attr);
		pthread_mutexattr_destroy(&attr);
	}
	snprintf(a->token, sizeof(a->token), "%s", cfg->token);
	a->reg = r;
	a->hub = h;
	a->metrics = m;
	a->max_body = cfg->max_body;
	a->last_heartbeat = time(NULL);
	a->mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
					  (https ? MHD_USE_TLS : 0),
				  0, NULL, NULL, on_request, a, MHD_OPTION_ARRAY, https ? tls : tls + 3,
				  MHD_OPTION_SOCK_ADDR, &sa,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned)API_THREADS, MHD_OPTION_CONNECTION_LIMIT,
				  cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, a, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_log, NULL, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096, MHD_OPTION_END);
	if (!a->mhd) {
		snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(errno ? errno : EADDRINUSE));
		explicit_bzero(a->token, sizeof(a->token));
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	return a;
}

void api_lock(struct api *a) { pthread_mutex_lock(&a->lock); }
void api_unlock(struct api *a) { pthread_mutex_unlock(&a->lock); }

void api_stop(struct api *a)
{
	if (!a)
		return;
	/* MHD may not stop with suspended connections, and resuming is
	 * asynchronous: end every stream, resume them all, and wait (bounded)
	 * until MHD has closed them.  Its threads need the lock meanwhile. */
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	for (struct watch_ctx *w = a->watches; w; w = w->next)
		watch_resume(w);
	pthread_mutex_unlock(&a->lock);
	for (int i = 0; i < 500; i++) {
		bool empty;
		pthread_mutex_lock(&a->lock);
		empty = a->watches == NULL;
		pthread_mutex_unlock(&a->lock);
		if (empty)
			break;
		poll(NULL, 0, 10);
	}
	MHD_stop_daemon(a->mhd);
	explicit_bzero(a->token, sizeof(a->token));
	pthread_mutex_destroy(&a->lock);
	free(a);
}

int api_run(struct api *a, int timeout_ms)
{
	time_t now;

	if (poll(NULL, 0, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	pthread_mutex_lock(&a->lock);
	/* writes by other controllers on the same store: Endpoints follow
	 * them (and this retries failed Endpoints writes), watchers wake */
	(void)endpoints_sync(a->reg->endpoints);
	(void)watch_hub_sync(a->hub);
	now = time(NULL);
	if (now != a->last_tick) {
		/* watches past their timeoutSeconds end even when idle */
		a->last_tick = now;
		for (struct watch_ctx *w = a->watches; w; w = w->next)
			if (w->deadline && now >= w->deadline)
				watch_resume(w);
	}
	if (now - a->last_heartbeat >= HEARTBEAT_SECONDS) {
		/* an idle stream sends a blank line now and then: dead clients are found and closed */
		a->last_heartbeat = now;
		for (struct watch_ctx *w = a->watches; w; w = w->next) {
			w->heartbeat = true;
			watch_resume(w);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return 0;
}
