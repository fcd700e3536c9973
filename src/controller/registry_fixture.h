/*
 * registry_fixture.h — for the controller's unit tests only: a registry on
 * a fresh SQLite store in the test's own directory, and the small helpers
 * the tests share (create and delete objects, read a namespace's VNID, run
 * a pod-network verb, count keys, check the store with fsck, register a
 * node).
 *
 * fx_open makes the store and the registry (config_json: a ClusterNetwork
 * as JSON text, or NULL for the defaults); fx_close frees both.  fx_store
 * is a store alone (store_close frees it).  Objects
 * that get returns are the caller's to json_decref.  Include after test.h.
 */
#ifndef WEFT_REGISTRY_FIXTURE_H
#define WEFT_REGISTRY_FIXTURE_H

#include "controller/controller.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

/* The ClusterNetwork of the defaults with the given mode, as JSON text
 * (a static buffer: valid until the next call). */
static inline const char *fx_config(const char *mode)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\",\"metadata\":"
		 "{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\",\"hostSubnetLength\":9}],"
		 "\"serviceNetwork\":\"172.30.0.0/16\",\"mode\":\"%s\"}", mode);
	return buf;
}

/* A store of its own in the test's directory (file: its name), whose
 * commits are not flushed (nothing a test writes must survive a crash);
 * NULL if it cannot be made. */
static inline struct store *fx_store(const char *file)
{
	char url[600], err[256];
	struct store *s;

	snprintf(url, sizeof(url), "sqlite:%s/%s", test_tmpdir(), file);
	s = store_open(url, err, sizeof(err));
	if (s && store_defer_sync(s)) {
		store_close(s);
		s = NULL;
	}
	return s;
}

struct fixture {
	struct store *store;
	struct registry reg;
	struct metrics metrics;
	char path[512];
};

static inline int fx_open(struct fixture *fx, const char *config_json)
{
	char err[256];
	struct status st = { 0 };
	json_t *cfg = NULL;

	memset(fx, 0, sizeof(*fx));
	snprintf(fx->path, sizeof(fx->path), "sqlite:%s/weft.db", test_tmpdir());
	fx->store = store_open(fx->path, err, sizeof(err));
	if (!fx->store)
		return -1;
	if (config_json) {
		cfg = json_loads(config_json, 0, NULL);
		if (!cfg)
			return -1;
	}
	int e = registry_init(&fx->reg, fx->store, &fx->metrics, cfg, &st);
	if (e)
		fprintf(stderr, "registry_init: %s\n", st.message);
	json_decref(cfg);
	return e;
}

static inline void fx_close(struct fixture *fx)
{
	registry_close(&fx->reg);
	store_close(fx->store);
}

static inline int del(struct fixture *fx, enum kind_id k, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;
	int e = registry_delete(&fx->reg, kind_get(k), ns, name, &o, &st);

	json_decref(o);
	return e;
}

static inline json_t *node_obj(const char *name, const char *ip)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Node",
			 "metadata", "name", name, "status", "addresses", "type", "InternalIP", "address", ip);
}

/* Register a Node with InternalIP ip; *out (may be NULL) the stored one. */
static inline int add_node(struct fixture *fx, const char *name, const char *ip, json_t **out, struct status *st)
{
	json_t *n = node_obj(name, ip), *o = NULL;
	int e = registry_create(&fx->reg, kind_get(KIND_NODE), "", n, &o, st);

	json_decref(n);
	if (out)
		*out = o;
	else
		json_decref(o);
	return e;
}

static inline json_t *get(struct fixture *fx, enum kind_id k, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;

	if (registry_get(&fx->reg, kind_get(k), ns, name, &o, &st))
		return NULL;
	return o;
}

static inline int add_ns(struct fixture *fx, const char *name)
{
	struct status st = { 0 };
	json_t *n = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
			      name), *o = NULL;
	int e = registry_create(&fx->reg, kind_get(KIND_NAMESPACE), "", n, &o, &st);

	json_decref(n);
	json_decref(o);
	return e;
}

static inline json_int_t netid(struct fixture *fx, const char *ns)
{
	json_t *nn = get(fx, KIND_NETNAMESPACE, "", ns);
	json_int_t v = nn ? json_integer_value(json_object_get(nn, "netid")) : -1;

	json_decref(nn);
	return v;
}

static inline int fsck_clean(struct fixture *fx)
{
	static char report[65536];
	size_t problems = 0;

	if (registry_fsck(&fx->reg, report, sizeof(report), &problems))
		return 0;
	if (problems)
		fprintf(stderr, "fsck:\n%s", report);
	return problems == 0;
}

static inline int podnet(struct fixture *fx, enum podnet_action a, const char *to, const char *p, struct status *st)
{
	const char *projects[] = { p };
	json_t *out = NULL;
	int64_t rev;
	int e = registry_podnetwork(&fx->reg, a, to, projects, 1, &out, &rev, st);

	json_decref(out);
	return e;
}

static inline size_t count(struct fixture *fx, const char *prefix)
{
	size_t n = 0;

	return store_count(fx->store, prefix, &n) ? (size_t)-1 : n;
}

/* The naive reference of VNID allocation for the randomized tests: the
 * lowest VNID >= VNID_MIN that no entry of vnid[0..n) holds (-1 = absent). */
static inline int64_t ref_lowest_free_vnid(const int64_t *vnid, int n)
{
	int64_t want = VNID_MIN;

	for (bool taken = true; taken; ) {
		taken = false;
		for (int k = 0; k < n; k++)
			taken |= vnid[k] == want;
		if (taken)
			want++;
	}
	return want;
}

#endif
