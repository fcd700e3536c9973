/*
 * probe.c — weft-hollow's timings (probe.h).
 *
 * A pod add is timed from just before hollow_pod_add on its node until
 * every node that needs it has it.  Without a policy naming pods as peers
 * that is its own node: its maps are written by the add itself, so the
 * time runs until its Pod record, written by the node's reporter, came
 * back by the node's own Pods watch (the controller has it; Endpoints and
 * policies can select it).  With one (--pod-peers), every node needs it:
 * the time runs until the last node's ipcache got its address: each node's map-write
 * hook stamps its own arrival (fleet.c, on_map_write), so nothing polls N
 * maps.  The address is known only once the add has leased it; the other
 * nodes cannot have it before the owner's report reaches the controller
 * and comes back by their watches, but any node that already has it when
 * tracking starts is stamped then (late, never early).
 *
 * An Endpoints change (one address of a Service's replaced, the others
 * kept) is timed from just before its PUT to the poll (every
 * millisecond) that finds every node's applied EndpointSlices revision
 * (the one its Node reports, a->slices_applied_rev) at or past that of
 * the slice the controller mirrored from the write (read back after the
 * PUT: admin.c).  The PUT and the wait are apart, so that the nodes of
 * several worker processes (crew.h) can each wait for their own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "hollow/admin.h"
#include "hollow/probe.h"

static void track(struct fleet *f, in_addr_t ip)
{
	for (unsigned i = f->lo; i < f->hi; i++)
		atomic_store(&f->nodes[i].track_seen, 0);
	atomic_store(&f->track_have, 0);
	atomic_store_explicit(&f->track_ip, ip, memory_order_release);
}

/* Has node n's Pods watch brought back pod ns/name with address ip? */
static bool record_back(struct hollow_node *n, const char *ns, const char *name, in_addr_t ip)
{
	const struct podcache_pod *p;
	bool back;

	pthread_mutex_lock(&n->a.lock);
	p = podcache_find(&n->a.pods, ns, name);
	back = p && p->ip == ip;
	pthread_mutex_unlock(&n->a.lock);
	return back;
}

int probe_pod_add(struct fleet *f, unsigned node, unsigned i, unsigned timeout_s, double *ms,
		  char *err, size_t len)
{
	const struct fleet_opts *o = f->o;
	struct hollow_node *n = &f->nodes[node];
	unsigned want = f->hi - f->lo;
	char name[48], ns[32];
	int64_t t0 = fleet_now(f), last = 0, deadline = t0 + (int64_t)timeout_s * 1000000000;
	in_addr_t ip = 0;
	int rc;

	snprintf(ns, sizeof(ns), "hollow-%u", i % o->namespaces);
	snprintf(name, sizeof(name), "%.30sprobe-%u", o->prefix, i);
	track(f, 0);
	rc = hollow_pod_add(&n->a, ns, name, &ip);
	if (rc < 0) {
		snprintf(err, len, "node %s: probe pod %s/%s: %s", n->name, ns, name, strerror(-rc));
		return -1;
	}
	track(f, ip);
	f->pods_total++;
	n->pods++;
	if (!o->pod_peers) {
		while (!record_back(n, ns, name, ip) && fleet_now(f) < deadline)
			usleep(500);
		*ms = record_back(n, ns, name, ip) ? (double)(fleet_now(f) - t0) / 1e6 : -1;
		track(f, 0);
		return 0;
	}
	/* whoever has it already (the owner at least) is stamped now */
	for (unsigned j = f->lo; j < f->hi; j++) {
		struct weft_ipcache_entry e;
		int64_t zero = 0;

		if (datapath_ipcache_get(f->nodes[j].a.dp, ip, &e) == 0 &&
		    atomic_compare_exchange_strong(&f->nodes[j].track_seen, &zero, fleet_now(f)))
			atomic_fetch_add(&f->track_have, 1);
	}
	while (atomic_load(&f->track_have) < want && fleet_now(f) < deadline)
		usleep(500);
	if (atomic_load(&f->track_have) < want) {
		*ms = -1;
		track(f, 0);
		return 0;
	}
	for (unsigned j = f->lo; j < f->hi; j++)
		if (atomic_load(&f->nodes[j].track_seen) > last)
			last = atomic_load(&f->nodes[j].track_seen);
	*ms = (double)(last - t0) / 1e6;
	track(f, 0);
	return 0;
}

static bool all_applied(struct fleet *f, int64_t rev)
{
	for (unsigned i = f->lo; i < f->hi; i++) {
		struct agent *a = &f->nodes[i].a;
		int64_t r;

		pthread_mutex_lock(&a->lock);
		r = a->slices_applied_rev;
		pthread_mutex_unlock(&a->lock);
		if (r < rev)
			return false;
	}
	return true;
}

/* The address change u put in: 172.21.(u / 250).(u % 250 + 1), outside
 * the cluster network and the services' first addresses (admin.c's). */
static void change_ip(unsigned u, char out[INET_ADDRSTRLEN])
{
	snprintf(out, INET_ADDRSTRLEN, "172.21.%u.%u", (u / 250) % 256, u % 250 + 1);
}

int probe_endpoint_write(struct fleet *f, unsigned i, int64_t *rev, char *err, size_t len)
{
	unsigned services = f->o->services, svc = i % services, c = i / services;
	unsigned n = f->o->endpoints_per_service ? f->o->endpoints_per_service : 1;
	json_t *addrs = json_array();
	char ip[INET_ADDRSTRLEN];

	if (!services || !addrs) {
		snprintf(err, len, services ? "out of memory" : "no services to change the Endpoints of");
		json_decref(addrs);
		return -1;
	}
	/* change i is service svc's c-th: it replaces one address, the
	 * (c mod n)-th, and keeps the others as the changes before left them
	 * (address j was last replaced by the service's change j + n k <= c,
	 * whose number is svc + services (j + n k)) */
	for (unsigned j = 0; j < n; j++) {
		if (j <= c)
			change_ip(svc + services * (j + n * ((c - j) / n)), ip);
		else
			admin_endpoint_ip(svc, j, ip);
		json_array_append_new(addrs, json_pack("{s:s}", "ip", ip));
	}
	if (admin_endpoints_set(f->admin, f->svc_names[svc], addrs, rev, err, len) < 0)
		return -1;
	if (*rev > f->slices_rev)
		f->slices_rev = *rev;
	return 0;
}

int probe_endpoints_bytes(struct fleet *f, size_t *bytes, char *err, size_t len)
{
	const char *name = f->svc_names[0], *slash = strchr(name, '/');
	char path[600];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/endpoints/%s", (int)(slash - name), name,
		 slash + 1);
	return admin_text_bytes(f->admin, path, bytes, err, len);
}

int64_t probe_endpoint_wait(struct fleet *f, int64_t rev, unsigned timeout_s)
{
	int64_t deadline = fleet_now(f) + (int64_t)timeout_s * 1000000000;

	if (rev > f->slices_rev)
		f->slices_rev = rev;
	while (!all_applied(f, rev) && fleet_now(f) < deadline)
		usleep(1000);
	return all_applied(f, rev) ? fleet_now(f) : -1;
}

int probe_proc(pid_t pid, struct proc_sample *s)
{
	char path[64], buf[4096], *p;
	unsigned long long ut = 0, st = 0, v;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *fp;
	size_t n;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the name may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	s->cpu_s = (double)(ut + st) / (double)(tck > 0 ? tck : 100);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(buf, sizeof(buf), fp))
		if (sscanf(buf, "VmRSS: %llu kB", &v) == 1)
			s->rss_bytes = v * 1024;
	fclose(fp);
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

double probe_percentile(double *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	rank = (size_t)((p / 100.0) * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}
