/*
 * crew.c — a fleet's agents in one process or in K workers (crew.h).
 *
 * Each request is one line from the runner to a worker, each answer one
 * line back ("ok ..." or "err MESSAGE"); the runner asks every worker
 * (or the one that runs a node) and waits for their answers:
 *
 *	cold T          start, add pods, converge   ok READY PODS CONVERGED BYTES CPU RSS
 *	check TAMPER    check.h over its nodes      ok CHECKED WRONG ENTRIES FIRST...
 *	add NODE I T    probe_pod_add               ok MS
 *	ep REV T        probe_endpoint_wait         ok AT
 *	bytes                                       ok BYTES
 *	stop            its agents stopped; exits   ok
 *
 * A worker whose pipe closes (the runner gone) stops its agents and
 * exits.  With one process the same work is done by direct calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hollow/admin.h"
#include "hollow/crew.h"
#include "hollow/probe.h"

#define LINE_MAX_BYTES 2048

struct worker {
	pid_t pid;
	FILE *to, *from;	/* the runner's ends */
	unsigned lo, hi;
};

struct crew {
	struct fleet *f;
	struct worker *w;	/* NULL: in-process */
	unsigned n;
};

/* ---- the work itself, in whichever process runs the nodes ---- */

static int cold(struct fleet *f, unsigned timeout_s, struct crew_cold *res, char *err, size_t len)
{
	struct proc_sample s0, s1;
	uint64_t b0 = httpc_body_bytes_received();
	int64_t t0 = fleet_now(f);
	char why[512] = "";

	memset(res, 0, sizeof(*res));
	if (probe_proc(getpid(), &s0) < 0)
		s0.cpu_s = 0;
	if (fleet_start(f, timeout_s, err, len) < 0)
		return -1;
	res->ready_ns = fleet_now(f);
	if (fleet_add_pods(f, err, len) < 0)
		return -1;
	res->pods_ns = fleet_now(f);
	while (!fleet_converged(f, why, sizeof(why))) {
		int64_t waited = fleet_now(f) - res->pods_ns;

		if (fleet_now(f) - t0 > (int64_t)timeout_s * 1000000000) {
			snprintf(err, len, "not converged after %u s: %s", timeout_s, why);
			return -1;
		}
		/* with --verbose: what it waits for, every 5 s */
		if (waited / 5000000000 != (waited + 20000000) / 5000000000)
			LOG_INFO("not converged %.0f s after the pods were added: %s", (double)waited / 1e9, why);
		usleep(20000);
	}
	res->converged_ns = fleet_now(f);
	res->bytes = httpc_body_bytes_received() - b0;
	if (probe_proc(getpid(), &s1) == 0) {
		res->cpu_s = s1.cpu_s - s0.cpu_s;
		res->rss_bytes = s1.rss_bytes;
	}
	return 0;
}

/* --tamper: the first entry of one of the node's own pods goes (the walk
 * stops there).  Nothing of the agent writes such an entry again but a
 * CNI ADD (a backend's or a peer's may be, by a late event), so the check
 * that follows must find it missing. */
static int tamper_one(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	struct agent *a = arg;

	if (e->node_ip != a->node_ip)
		return 0;
	(void)datapath_ipcache_del(a->dp, ip);
	return 1;
}

static int check(struct fleet *f, bool tamper, struct check_result *res, char *err, size_t len)
{
	if (tamper)
		(void)datapath_ipcache_foreach(f->nodes[f->lo].a.dp, tamper_one, &f->nodes[f->lo].a);
	return check_fleet(f, res, err, len);
}

/* ---- a worker ---- */

static void answer(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer(FILE *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

/* Its own controller client: the runner's connection is the runner's. */
static void worker_main(struct fleet *f, FILE *in, FILE *out)
{
	char line[LINE_MAX_BYTES], err[1024];

	f->admin = admin_client(f->o, err, sizeof(err));
	while (fgets(line, sizeof(line), in)) {
		unsigned t = 0, node = 0, i = 0, tamper = 0;
		long long rev = 0;

		err[0] = 0;
		if (sscanf(line, "cold %u", &t) == 1) {
			struct crew_cold r;

			if (!f->admin || cold(f, t, &r, err, sizeof(err)) < 0)
				answer(out, "err %s", f->admin ? err : "no controller client");
			else
				answer(out, "ok %" PRId64 " %" PRId64 " %" PRId64 " %" PRIu64 " %.3f %" PRIu64,
				       r.ready_ns, r.pods_ns, r.converged_ns, r.bytes, r.cpu_s, r.rss_bytes);
		} else if (sscanf(line, "check %u", &tamper) == 1) {
			struct check_result r;

			if (check(f, tamper, &r, err, sizeof(err)) < 0)
				answer(out, "err %s", err);
			else
				answer(out, "ok %u %u %" PRIu64 " %s", r.nodes_checked, r.nodes_wrong,
				       r.entries_checked, r.first);
		} else if (sscanf(line, "add %u %u %u", &node, &i, &t) == 3) {
			double ms;

			if (node < f->lo || node >= f->hi)
				answer(out, "err node %u is not this worker's", node);
			else if (probe_pod_add(f, node, i, t, &ms, err, sizeof(err)) < 0)
				answer(out, "err %s", err);
			else
				answer(out, "ok %.6f", ms);
		} else if (sscanf(line, "ep %lld %u", &rev, &t) == 2) {
			answer(out, "ok %" PRId64, probe_endpoint_wait(f, rev, t));
		} else if (strncmp(line, "bytes", 5) == 0) {
			answer(out, "ok %" PRIu64, httpc_body_bytes_received());
		} else if (strncmp(line, "stop", 4) == 0) {
			break;
		} else {
			answer(out, "err unknown request: %.100s", line);
		}
	}
	fleet_stop(f);
	answer(out, "ok");
	fflush(NULL);
	_exit(0);
}

/* ---- the runner ---- */

static void worker_close(struct worker *w)
{
	if (w->to)
		fclose(w->to);
	if (w->from)
		fclose(w->from);
	w->to = w->from = NULL;
	if (w->pid > 0)
		(void)waitpid(w->pid, NULL, 0);
	w->pid = 0;
}

static int spawn(struct crew *c, unsigned k, char *err, size_t len)
{
	struct worker *w = &c->w[k];
	int down[2], up[2];

	w->lo = (unsigned)((uint64_t)c->f->o->nodes * k / c->n);
	w->hi = (unsigned)((uint64_t)c->f->o->nodes * (k + 1) / c->n);
	if (pipe(down) < 0 || pipe(up) < 0) {
		snprintf(err, len, "worker %u: pipe: %s", k, strerror(errno));
		return -1;
	}
	fflush(NULL);
	w->pid = fork();
	if (w->pid < 0) {
		snprintf(err, len, "worker %u: fork: %s", k, strerror(errno));
		return -1;
	}
	if (w->pid == 0) {
		FILE *in = fdopen(down[0], "r"), *out = fdopen(up[1], "w");

		close(down[1]);
		close(up[0]);
		for (unsigned j = 0; j < k; j++) {	/* the earlier workers' runner ends */
			if (c->w[j].to)
				close(fileno(c->w[j].to));
			if (c->w[j].from)
				close(fileno(c->w[j].from));
		}
		if (!in || !out)
			_exit(1);
		c->f->lo = w->lo;
		c->f->hi = w->hi;
		worker_main(c->f, in, out);
	}
	close(down[0]);
	close(up[1]);
	w->to = fdopen(down[1], "w");
	w->from = fdopen(up[0], "r");
	if (!w->to || !w->from) {
		snprintf(err, len, "worker %u: %s", k, strerror(errno));
		return -1;
	}
	return 0;
}

struct crew *crew_start(struct fleet *f, unsigned processes, char *err, size_t len)
{
	struct crew *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	c->f = f;
	c->n = processes ? processes : 1;
	if (c->n == 1)
		return c;
	if (f->o->pod_peers) {
		snprintf(err, len, "--pod-peers needs one process (every node tracks every probe pod)");
		free(c);
		return NULL;
	}
	c->w = calloc(c->n, sizeof(*c->w));
	if (!c->w) {
		snprintf(err, len, "out of memory");
		free(c);
		return NULL;
	}
	for (unsigned k = 0; k < c->n; k++)
		if (spawn(c, k, err, len) < 0) {
			crew_destroy(c);
			return NULL;
		}
	return c;
}

static int ask(struct worker *w, unsigned k, const char *req, char *reply, size_t rlen, char *err, size_t len)
{
	char *nl;

	if (fprintf(w->to, "%s\n", req) < 0 || fflush(w->to) != 0) {
		snprintf(err, len, "worker %u (nodes %u-%u): gone", k, w->lo + 1, w->hi);
		return -1;
	}
	if (!fgets(reply, (int)rlen, w->from)) {
		snprintf(err, len, "worker %u (nodes %u-%u): no answer to '%s' (it died; see its log)", k,
			 w->lo + 1, w->hi, req);
		return -1;
	}
	if ((nl = strchr(reply, '\n')))
		*nl = 0;
	if (strncmp(reply, "ok", 2) != 0) {
		snprintf(err, len, "%s", strncmp(reply, "err ", 4) == 0 ? reply + 4 : reply);
		return -1;
	}
	return 0;
}

/* req to every worker; each answer through fn.  All are asked before
 * any answer is read, so they work at once. */
static int ask_all(struct crew *c, const char *req, int (*fn)(const char *reply, void *arg), void *arg,
		   char *err, size_t len)
{
	char reply[LINE_MAX_BYTES];
	int rc = 0;

	for (unsigned k = 0; k < c->n; k++)
		if (fprintf(c->w[k].to, "%s\n", req) < 0 || fflush(c->w[k].to) != 0) {
			snprintf(err, len, "worker %u: gone", k);
			return -1;
		}
	for (unsigned k = 0; k < c->n; k++) {
		char *nl;

		if (!fgets(reply, sizeof(reply), c->w[k].from)) {
			snprintf(err, len, "worker %u (nodes %u-%u): no answer to '%s' (it died; see its log)", k,
				 c->w[k].lo + 1, c->w[k].hi, req);
			return -1;
		}
		if ((nl = strchr(reply, '\n')))
			*nl = 0;
		if (strncmp(reply, "ok", 2) != 0) {
			if (!rc)
				snprintf(err, len, "worker %u: %s", k, strncmp(reply, "err ", 4) == 0 ? reply + 4 : reply);
			rc = -1;
		} else if (rc == 0 && fn && fn(reply + 2, arg) < 0) {
			snprintf(err, len, "worker %u: an answer that does not parse: %.200s", k, reply);
			rc = -1;
		}
	}
	return rc;
}

static int add_cold(const char *reply, void *arg)
{
	struct crew_cold *sum = arg, r;

	if (sscanf(reply, "%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNu64 " %lf %" SCNu64, &r.ready_ns,
		   &r.pods_ns, &r.converged_ns, &r.bytes, &r.cpu_s, &r.rss_bytes) != 6)
		return -1;
	if (r.ready_ns > sum->ready_ns)
		sum->ready_ns = r.ready_ns;
	if (r.pods_ns > sum->pods_ns)
		sum->pods_ns = r.pods_ns;
	if (r.converged_ns > sum->converged_ns)
		sum->converged_ns = r.converged_ns;
	sum->bytes += r.bytes;
	sum->cpu_s += r.cpu_s;
	sum->rss_bytes += r.rss_bytes;
	return 0;
}

int crew_cold(struct crew *c, unsigned timeout_s, struct crew_cold *res, char *err, size_t len)
{
	char req[64];

	if (!c->w)
		return cold(c->f, timeout_s, res, err, len);
	memset(res, 0, sizeof(*res));
	snprintf(req, sizeof(req), "cold %u", timeout_s);
	return ask_all(c, req, add_cold, res, err, len);
}

static int add_check(const char *reply, void *arg)
{
	struct check_result *sum = arg, r = { 0 };
	int at = 0;

	if (sscanf(reply, "%u %u %" SCNu64 " %n", &r.nodes_checked, &r.nodes_wrong, &r.entries_checked, &at) != 3)
		return -1;
	if (r.nodes_wrong && !sum->nodes_wrong)
		snprintf(sum->first, sizeof(sum->first), "%s", reply + at);
	sum->nodes_checked += r.nodes_checked;
	sum->nodes_wrong += r.nodes_wrong;
	sum->entries_checked += r.entries_checked;
	return 0;
}

int crew_check(struct crew *c, bool tamper, struct check_result *res, char *err, size_t len)
{
	struct worker *w0 = c->w;
	char reply[LINE_MAX_BYTES];

	if (!c->w)
		return check(c->f, tamper, res, err, len);
	memset(res, 0, sizeof(*res));
	/* the first worker tampers (its first node is node 1), then all check */
	if (tamper && ask(w0, 0, "check 1", reply, sizeof(reply), err, len) < 0)
		return -1;
	if (tamper && add_check(reply + 2, res) < 0) {
		snprintf(err, len, "worker 0: an answer that does not parse: %.200s", reply);
		return -1;
	}
	if (!tamper)
		return ask_all(c, "check 0", add_check, res, err, len);
	for (unsigned k = 1; k < c->n; k++) {
		if (ask(&c->w[k], k, "check 0", reply, sizeof(reply), err, len) < 0)
			return -1;
		if (add_check(reply + 2, res) < 0) {
			snprintf(err, len, "worker %u: an answer that does not parse: %.200s", k, reply);
			return -1;
		}
	}
	return 0;
}

int crew_pod_add(struct crew *c, unsigned i, unsigned timeout_s, double *ms, char *err, size_t len)
{
	unsigned node = i % c->f->o->nodes;
	char req[96], reply[LINE_MAX_BYTES];

	if (!c->w)
		return probe_pod_add(c->f, node, i, timeout_s, ms, err, len);
	for (unsigned k = 0; k < c->n; k++) {
		if (node < c->w[k].lo || node >= c->w[k].hi)
			continue;
		snprintf(req, sizeof(req), "add %u %u %u", node, i, timeout_s);
		if (ask(&c->w[k], k, req, reply, sizeof(reply), err, len) < 0)
			return -1;
		if (sscanf(reply + 2, "%lf", ms) != 1) {
			snprintf(err, len, "worker %u: an answer that does not parse: %.200s", k, reply);
			return -1;
		}
		c->f->pods_total++;
		return 0;
	}
	snprintf(err, len, "node %u: no worker runs it", node);
	return -1;
}

static int latest(const char *reply, void *arg)
{
	int64_t *at = arg, t;

	if (sscanf(reply, "%" SCNd64, &t) != 1)
		return -1;
	if (t < 0 || *at < 0)
		*at = -1;	/* one worker's nodes did not apply it in time */
	else if (t > *at)
		*at = t;
	return 0;
}

int crew_endpoint_wait(struct crew *c, int64_t rev, unsigned timeout_s, int64_t *at, char *err, size_t len)
{
	char req[96];

	if (!c->w) {
		*at = probe_endpoint_wait(c->f, rev, timeout_s);
		return 0;
	}
	*at = 0;
	snprintf(req, sizeof(req), "ep %" PRId64 " %u", rev, timeout_s);
	return ask_all(c, req, latest, at, err, len);
}

static int sum_bytes(const char *reply, void *arg)
{
	uint64_t *sum = arg, b;

	if (sscanf(reply, "%" SCNu64, &b) != 1)
		return -1;
	*sum += b;
	return 0;
}

int crew_bytes(struct crew *c, uint64_t *bytes, char *err, size_t len)
{
	*bytes = 0;
	if (!c->w) {
		*bytes = httpc_body_bytes_received();
		return 0;
	}
	return ask_all(c, "bytes", sum_bytes, bytes, err, len);
}

void crew_destroy(struct crew *c)
{
	if (!c)
		return;
	if (!c->w) {
		fleet_stop(c->f);
		free(c);
		return;
	}
	for (unsigned k = 0; k < c->n; k++)
		if (c->w[k].to) {
			fprintf(c->w[k].to, "stop\n");
			fflush(c->w[k].to);
		}
	for (unsigned k = 0; k < c->n; k++)
		worker_close(&c->w[k]);
	free(c->w);
	free(c);
}
