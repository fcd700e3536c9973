/*
 * fleet.c — weft-hollow's nodes (fleet.h): the objects they need, their
 * credentials, their start in parallel, their pods, and whether their
 * maps hold what the cluster says.
 *
 * A node is started exactly as weft-agent starts one (agent_init,
 * agent_start), with a->kernel = &agent_kernel_hollow and its maps in
 * memory; it registers, lists and watches over its own connections with
 * its own node credential, so the controller sees N agents.  The map-write
 * hook (on_map_write) is how the probe times an address reaching each
 * node's ipcache without polling N maps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hollow/admin.h"
#include "hollow/fleet.h"

int64_t fleet_now(const struct fleet *f)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - f->epoch.tv_sec) * 1000000000 + (t.tv_nsec - f->epoch.tv_nsec);
}

struct fleet *fleet_create(const struct fleet_opts *o, char *err, size_t len)
{
	struct fleet *f = calloc(1, sizeof(*f));

	if (!f || !(f->nodes = calloc(o->nodes, sizeof(*f->nodes)))) {
		snprintf(err, len, "%u hollow nodes: out of memory", o->nodes);
		free(f);
		return NULL;
	}
	f->o = o;
	f->lo = 0;
	f->hi = o->nodes;
	clock_gettime(CLOCK_MONOTONIC, &f->epoch);
	f->admin = admin_client(o, err, len);
	if (!f->admin) {
		free(f->nodes);
		free(f);
		return NULL;
	}
	for (unsigned i = 0; i < o->nodes; i++) {
		struct hollow_node *n = &f->nodes[i];
		struct in_addr ia = { .s_addr = htonl(ntohl(o->first_node_ip) + i) };

		n->f = f;
		n->index = i;
		snprintf(n->name, sizeof(n->name), "%s%04u", o->prefix, i + 1);
		inet_ntop(AF_INET, &ia, n->ip, sizeof(n->ip));
		snprintf(n->dir, sizeof(n->dir), "%s/%s", o->state_dir, n->name);
		snprintf(n->token_file, sizeof(n->token_file), "%s/token", n->dir);
	}
	return f;
}

void fleet_destroy(struct fleet *f)
{
	if (!f)
		return;
	fleet_stop(f);
	httpc_destroy(f->admin);
	for (unsigned i = 0; f->svc_names && i < f->o->services; i++)
		free(f->svc_names[i]);
	free(f->svc_names);
	free(f->nodes);
	free(f);
}

/* The Pods with an address the cluster has now. */
static int count_pods(struct fleet *f, char *err, size_t len)
{
	json_t *items = NULL, *pod;
	size_t i;

	if (admin_list(f->admin, "/api/v1/pods", &items, err, len) < 0)
		return -1;
	f->pods_before = 0;
	json_array_foreach(items, i, pod)
		f->pods_before += json_string_value(json_object_get(json_object_get(pod, "status"), "podIP")) != NULL;
	json_decref(items);
	return 0;
}

int fleet_prepare(struct fleet *f, char *err, size_t len)
{
	const struct fleet_opts *o = f->o;
	int rc;

	if (count_pods(f, err, len) < 0)
		return -1;

	for (unsigned k = 0; k < o->namespaces; k++) {
		char ns[32];

		snprintf(ns, sizeof(ns), "hollow-%u", k);
		if (admin_namespace(f->admin, ns, err, len) < 0)
			return -1;
	}
	if (o->pod_peers && admin_pod_peer_policy(f->admin, "hollow-0", err, len) < 0)
		return -1;
	f->svc_names = calloc(o->services ? o->services : 1, sizeof(*f->svc_names));
	if (!f->svc_names) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < o->services; i++) {
		char ns[32], name[32];

		snprintf(ns, sizeof(ns), "hollow-%u", i % o->namespaces);
		snprintf(name, sizeof(name), "svc-%u", i);
		rc = admin_service(f->admin, ns, name, i, o->endpoints_per_service, &f->services_rev,
				   &f->slices_rev, err, len);
		if (rc < 0)
			return -1;
		if (asprintf(&f->svc_names[i], "%s/%s", ns, name) < 0) {
			f->svc_names[i] = NULL;
			snprintf(err, len, "out of memory");
			return -1;
		}
	}
	for (unsigned i = 0; i < o->nodes; i++) {
		struct hollow_node *n = &f->nodes[i];

		if (agent_mkdir_p(n->dir) < 0) {
			snprintf(err, len, "%s: %s", n->dir, strerror(errno));
			return -1;
		}
		if (admin_node_credential(f->admin, n->name, n->token_file, err, len) < 0)
			return -1;
	}
	return 0;
}

/* the agent's map-write hook: the probe's address reaching this node */
static void on_map_write(void *arg, enum datapath_map_id map, const void *key, const void *value)
{
	struct hollow_node *n = arg;
	uint32_t want = atomic_load_explicit(&n->f->track_ip, memory_order_acquire);
	int64_t zero = 0;

	if (map != DATAPATH_MAP_IPCACHE || !value || !want || memcmp(key, &want, sizeof(want)) != 0)
		return;
	if (atomic_compare_exchange_strong(&n->track_seen, &zero, fleet_now(n->f)))
		atomic_fetch_add(&n->f->track_have, 1);
}

/* ---- work shared by the starter threads ---- */

struct work {
	struct fleet *f;
	atomic_uint next;
	atomic_int failed;
	int (*one)(struct hollow_node *n, char *err, size_t len);
	char err[512];
	pthread_mutex_t err_lock;
};

static void *worker(void *arg)
{
	struct work *w = arg;
	unsigned i;

	while ((i = w->f->lo + atomic_fetch_add(&w->next, 1)) < w->f->hi && !atomic_load(&w->failed)) {
		char err[512];

		if (w->one(&w->f->nodes[i], err, sizeof(err)) < 0) {
			pthread_mutex_lock(&w->err_lock);
			if (!atomic_exchange(&w->failed, 1))
				snprintf(w->err, sizeof(w->err), "%s", err);
			pthread_mutex_unlock(&w->err_lock);
		}
	}
	return NULL;
}

static int run_all(struct fleet *f, int (*one)(struct hollow_node *, char *, size_t), char *err,
		   size_t len)
{
	unsigned nt = f->o->starters ? f->o->starters : 8, started = 0;
	pthread_t *t = calloc(nt, sizeof(*t));
	struct work w = { .f = f, .one = one };
	int rc = 0;

	if (!t) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	pthread_mutex_init(&w.err_lock, NULL);
	for (; started < nt; started++)
		if (pthread_create(&t[started], NULL, worker, &w) != 0)
			break;
	if (!started)
		worker(&w);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&w.failed)) {
		snprintf(err, len, "%s", w.err);
		rc = -1;
	}
	pthread_mutex_destroy(&w.err_lock);
	free(t);
	return rc;
}

static int start_one(struct hollow_node *n, char *err, size_t len)
{
	struct agent *a = &n->a;
	const struct fleet_opts *o = n->f->o;

	a->o.controller = o->controller;
	a->o.token_file = n->token_file;
	a->o.ca_file = o->ca_file;
	a->o.node = n->name;
	a->o.node_ip_str = n->ip;
	a->o.state_dir = n->dir;
	a->o.pin_dir = n->dir;		/* unused: the maps are in memory */
	a->o.cni_socket = NULL;		/* pods come from the runner */
	a->o.on_map_write = on_map_write;
	a->o.on_map_write_arg = n;
	a->o.list_page = o->list_page;
	inet_pton(AF_INET, n->ip, &a->node_ip);
	a->kernel = &agent_kernel_hollow;
	a->hollow = true;
	agent_init(a);
	n->started = true;
	if (agent_start(a) < 0) {
		snprintf(err, len, "node %s: the agent did not start (its log says why)", n->name);
		return -1;
	}
	return 0;
}

int fleet_start(struct fleet *f, unsigned timeout_s, char *err, size_t len)
{
	int64_t deadline;

	if (run_all(f, start_one, err, len) < 0)
		return -1;
	deadline = fleet_now(f) + (int64_t)timeout_s * 1000000000;
	for (unsigned i = f->lo; i < f->hi; i++)
		while (!atomic_load(&f->nodes[i].a.ready)) {
			if (fleet_now(f) > deadline) {
				snprintf(err, len, "node %s: not ready after %u s", f->nodes[i].name,
					 timeout_s);
				return -1;
			}
			usleep(10000);
		}
	return 0;
}

static int pods_one(struct hollow_node *n, char *err, size_t len)
{
	const struct fleet_opts *o = n->f->o;

	for (unsigned p = 0; p < o->pods_per_node; p++) {
		char ns[32], name[64];
		in_addr_t ip;
		int rc;

		snprintf(ns, sizeof(ns), "hollow-%u", (n->index * o->pods_per_node + p) % o->namespaces);
		snprintf(name, sizeof(name), "%.40s-%u", n->name, p);	/* a run's own names */
		while ((rc = hollow_pod_add(&n->a, ns, name, &ip)) == -EAGAIN)
			usleep(10000);
		if (rc < 0) {
			snprintf(err, len, "node %s: pod %s/%s: %s", n->name, ns, name, strerror(-rc));
			return -1;
		}
		n->pods++;
	}
	return 0;
}

int fleet_add_pods(struct fleet *f, char *err, size_t len)
{
	if (run_all(f, pods_one, err, len) < 0)
		return -1;
	f->pods_total += (uint64_t)f->o->nodes * f->o->pods_per_node;
	return 0;
}

bool fleet_converged(struct fleet *f, char *why, size_t len)
{
	const struct fleet_opts *o = f->o;

	for (unsigned i = f->lo; i < f->hi; i++) {
		struct agent *a = &f->nodes[i].a;
		int64_t pods = datapath_map_count(a->dp, DATAPATH_MAP_IPCACHE);
		int64_t nodes = datapath_map_count(a->dp, DATAPATH_MAP_NODES);
		const struct podcache_group *mine;
		int64_t svc, ep, back;
		uint64_t need;
		bool policies;

		/* every pod of the cluster while a policy names pods as peers
		 * (this fleet's, or one an earlier run left), known once the
		 * NetworkPolicies are listed; else its own */
		need = policy_needs_pods(a->policy) ? f->pods_before + f->pods_total : f->nodes[i].pods;
		pthread_mutex_lock(&a->lock);
		policies = a->netpols_synced;
		svc = a->svc_applied_rev;
		ep = a->slices_applied_rev;
		/* its Pod records came back by its watch: the controller has them */
		mine = podcache_node_find(&a->pods, a->o.node);
		back = mine ? (int64_t)mine->npods : 0;
		pthread_mutex_unlock(&a->lock);
		if (!policies) {
			if (why)
				snprintf(why, len, "node %s: NetworkPolicies not listed yet", f->nodes[i].name);
			return false;
		}
		if (back < (int64_t)f->nodes[i].pods) {
			if (why)
				snprintf(why, len, "node %s: %lld of its %u Pod records back", f->nodes[i].name,
					 (long long)back, f->nodes[i].pods);
			return false;
		}
		if (pods < (int64_t)need || nodes < o->nodes || svc < f->services_rev ||
		    ep < f->slices_rev) {
			if (why)
				snprintf(why, len, "node %s: %lld of %llu pods, %lld of %u nodes, services at "
					 "revision %lld of %lld, endpointslices at %lld of %lld",
					 f->nodes[i].name, (long long)pods, (unsigned long long)need, (long long)nodes,
					 o->nodes, (long long)svc, (long long)f->services_rev,
					 (long long)ep, (long long)f->slices_rev);
			return false;
		}
	}
	return true;
}

static int stop_one(struct hollow_node *n, char *err, size_t len)
{
	(void)err;
	(void)len;
	if (n->started)
		agent_stop(&n->a);
	n->started = false;
	return 0;
}

void fleet_stop(struct fleet *f)
{
	unsigned running = 0;
	char err[64];

	/* every agent is told first, so their threads wind down together */
	for (unsigned i = f->lo; i < f->hi; i++)
		if (f->nodes[i].started) {
			atomic_store(&f->nodes[i].a.stopping, true);
			running++;
		}
	/* none left (a second call: fleet_destroy's after the runner's): no
	 * threads to start */
	if (running)
		(void)run_all(f, stop_one, err, sizeof(err));
}
