/*
 * peers_ctl_test.c — the PodPeerSlice controller (peers_ctl.c) on a real
 * SQLite store, driven through the registry as the API drives it, on a
 * clock of the test's own (peers_ctl_set_clock): a node's first change
 * is written at once, the changes within the gather that follows wait for
 * its end and cost one write,
 * the content is the compact format of model.h (identities once, pods
 * sorted), unchanged slices are never rewritten, emptied ones deleted,
 * long node names give valid names, slices of another manager are left
 * alone, a resync repairs what a disabled controller missed, and no client
 * may write one.  A randomized run (TEST_SEED) checks the stored slices
 * against a naive model computed from every pod after each gather.
 */
#include "controller/controller.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fixture {
	struct store *store;
	struct registry reg;
	struct metrics metrics;
	int64_t now;		/* the controller's clock (ms) */
};

static int64_t fx_clock(void *arg)
{
	return ((struct fixture *)arg)->now;
}

static const struct kind_info *K(enum kind_id id) { return kind_get(id); }

static int add_node(struct fixture *fx, const char *name, const char *ip)
{
	struct status st = { 0 };
	json_t *n = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Node",
			      "metadata", "name", name, "status", "addresses", "type", "InternalIP", "address", ip);
	json_t *out = NULL;
	int e = registry_create(&fx->reg, K(KIND_NODE), "", n, &out, &st);

	if (e)
		fprintf(stderr, "%s: %s\n", name, st.message);
	json_decref(n);
	json_decref(out);
	return e;
}

/* NetworkPolicy ns/name created (on) or deleted: 0 or the refusal's code. */
static int policy(struct fixture *fx, const char *ns, const char *name, bool on)
{
	struct status st = { 0 };
	json_t *o = NULL, *out = NULL;
	int e;

	if (!on) {
		e = registry_delete(&fx->reg, K(KIND_NETWORKPOLICY), ns, name, &out, &st);
		json_decref(out);
		return e ? st.code : 0;
	}
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{}, s:[s]}}", "apiVersion", "networking.k8s.io/v1", "kind",
		      "NetworkPolicy", "metadata", "name", name, "namespace", ns, "spec", "podSelector",
		      "policyTypes", "Ingress");
	e = registry_create(&fx->reg, K(KIND_NETWORKPOLICY), ns, o, &out, &st);
	if (e)
		fprintf(stderr, "policy %s/%s: %s\n", ns, name, st.message);
	json_decref(o);
	json_decref(out);
	return e ? st.code : 0;
}

/* A registry on a fresh store, node-1..3 (10.128.0.0/23, 10.128.2.0/23,
 * 10.128.4.0/23), namespaces red and blue, the clock at 1000 with the
 * default gather. */
static int fx_open(struct fixture *fx)
{
	char path[512], err[256];
	struct status st = { 0 };
	static int serial;
	int e;

	memset(fx, 0, sizeof(*fx));
	snprintf(path, sizeof(path), "sqlite:%s/peers-%d.db", test_tmpdir(), serial++);
	fx->store = store_open(path, err, sizeof(err));
	if (!fx->store)
		return -1;
	e = registry_init(&fx->reg, fx->store, &fx->metrics, NULL, &st);
	if (e) {
		fprintf(stderr, "registry_init: %s\n", st.message);
		return e;
	}
	fx->now = 1000;
	peers_ctl_set_clock(endpoints_ctl_peers(fx->reg.endpoints), PODPEERS_GATHER_MS, fx_clock, fx);
	/* one slice a node for most tests (a test sets less to see packing) */
	if (peers_ctl_set_capacity(endpoints_ctl_peers(fx->reg.endpoints), PODPEERSLICE_MAX_PODS))
		return -1;
	for (int i = 1; !e && i <= 3; i++) {
		char name[32], ip[32];

		snprintf(name, sizeof(name), "node-%d", i);
		snprintf(ip, sizeof(ip), "192.168.0.%d", i);
		e = add_node(fx, name, ip);
	}
	for (int i = 0; !e && i < 2; i++) {
		json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
				       "name", i ? "blue" : "red"), *out = NULL;

		e = registry_create(&fx->reg, K(KIND_NAMESPACE), "", ns, &out, &st);
		json_decref(ns);
		json_decref(out);
	}
	/* the slices are kept while the cluster has a NetworkPolicy */
	return e ? e : policy(fx, "red", "any", true);
}

static void fx_close(struct fixture *fx)
{
	registry_close(&fx->reg);
	store_close(fx->store);
}

/* The gather passes and the API's timer runs. */
static void tick(struct fixture *fx, int64_t ms)
{
	fx->now += ms;
	(void)endpoints_sync(fx->reg.endpoints);
}

static uint64_t writes(const struct fixture *fx)
{
	return fx->metrics.podpeerslice_writes + fx->metrics.podpeerslice_deletes;
}

/* A pod (PUT): labels and ports as JSON text, node "" for none, ip NULL
 * for none.  0 or the refusal's code. */
static int pod(struct fixture *fx, const char *ns, const char *name, const char *labels, const char *ports,
	       const char *node, const char *ip, const char *phase)
{
	char buf[2048];
	json_t *o, *out = NULL;
	struct status st = { 0 };
	int e;

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":%s},"
		 "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"ports\":%s}]},\"status\":{\"phase\":\"%s\"%s%s%s}}",
		 name, labels, node[0] ? "\"nodeName\":\"" : "", node, node[0] ? "\"," : "", ports,
		 phase ? phase : "Running", ip ? ",\"podIP\":\"" : "", ip ? ip : "", ip ? "\"" : "");
	o = json_loads(buf, 0, NULL);
	if (!o) {
		fprintf(stderr, "bad test JSON: %s\n", buf);
		return -1;
	}
	e = registry_replace(&fx->reg, K(KIND_POD), ns, name, o, &out, &st);
	json_decref(o);
	json_decref(out);
	return e ? st.code : 0;
}

static int del_pod(struct fixture *fx, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;
	int e = registry_delete(&fx->reg, K(KIND_POD), ns, name, &o, &st);

	json_decref(o);
	return e ? st.code : 0;
}

static json_t *get_slice(struct fixture *fx, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;

	return registry_get(&fx->reg, K(KIND_PODPEERSLICE), "", name, &o, &st) ? NULL : o;
}

/* compact JSON of o[field] (static), "-" when o is NULL */
static const char *field(const json_t *o, const char *f)
{
	static char buf[8192];
	char *s;

	if (!o)
		return "-";
	s = json_dumps(json_object_get(o, f), JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	snprintf(buf, sizeof(buf), "%s", s ? s : "?");
	free(s);
	return buf;
}

static size_t count_slices(struct fixture *fx)
{
	json_t *items = NULL;
	int64_t rev;
	struct status st = { 0 };
	size_t n;

	if (registry_list(&fx->reg, K(KIND_PODPEERSLICE), NULL, &items, &rev, &st))
		return (size_t)-1;
	n = json_array_size(items);
	json_decref(items);
	return n;
}

#define HTTP "[{\"name\":\"http\",\"containerPort\":8080}]"

/* the API loop's wake callback: each call's in_ms, one a line */
static char wakes[256];

static void on_wake(void *arg, int64_t in_ms)
{
	(void)arg;
	snprintf(wakes + strlen(wakes), sizeof(wakes) - strlen(wakes), "%lld ", (long long)in_ms);
}

TEST(peers_written_after_the_gather_compact_and_once)
{
	struct fixture fx;
	json_t *sl;

	CHECK(fx_open(&fx) == 0);
	wakes[0] = 0;
	endpoints_ctl_set_wake(fx.reg.endpoints, on_wake, NULL);
	/* a node not written within the last gather: at once, in the
	 * commit's own sync */
	CHECK_EQ(pod(&fx, "red", "b", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.3", NULL), 0);
	CHECK_EQ(writes(&fx), 1);
	CHECK(endpoints_ctl_due_ms(fx.reg.endpoints) == -1);
	sl = get_slice(&fx, "node-1-1");
	CHECK_STR(field(sl, "pods"), "[{\"identity\":0,\"ip\":\"10.128.0.3\",\"name\":\"b\"}]");
	json_decref(sl);
	/* the rest of the burst waits for the gather's end */
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	CHECK_EQ(pod(&fx, "blue", "c", "{}", "[{\"containerPort\":9}]", "node-1", "10.128.0.4", NULL), 0);
	/* not peers: no address, no node, finished */
	CHECK_EQ(pod(&fx, "red", "noip", "{}", HTTP, "node-1", NULL, "Pending"), 0);
	CHECK_EQ(pod(&fx, "red", "done", "{}", HTTP, "node-1", "10.128.0.9", "Succeeded"), 0);
	CHECK_EQ(pod(&fx, "red", "nonode", "{}", HTTP, "", NULL, "Pending"), 0);
	/* within the gather nothing more is written, whatever syncs */
	tick(&fx, PODPEERS_GATHER_MS - 1);
	CHECK_EQ(writes(&fx), 1);
	CHECK_EQ(count_slices(&fx), 1);
	CHECK(endpoints_ctl_due_ms(fx.reg.endpoints) == 1);
	/* the loop was told twice: due at once (the first change), then at
	 * the gather's end (the second) */
	CHECK_STR(wakes, "0 100 ");
	/* then one write for the rest of the burst */
	tick(&fx, 1);
	CHECK_EQ(writes(&fx), 2);
	CHECK(endpoints_ctl_due_ms(fx.reg.endpoints) == -1);
	sl = get_slice(&fx, "node-1-1");
	CHECK(sl);
	CHECK_STR(field(sl, "node"), "\"node-1\"");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(sl, "metadata"), "labels"),
						    PODPEERSLICE_NODE_LABEL)), "node-1");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(sl, "metadata"), "labels"),
						    PODPEERSLICE_MANAGED_LABEL)), PODPEERSLICE_MANAGER);
	/* identities sorted by their canonical JSON ('"' before '}': red's
	 * first), each once; pods by namespace/name */
	CHECK_STR(field(sl, "identities"),
		  "[{\"labels\":{\"app\":\"web\"},\"namespace\":\"red\",\"ports\":[{\"name\":\"http\",\"port\":8080,"
		  "\"protocol\":\"TCP\"}]},{\"labels\":{},\"namespace\":\"blue\",\"ports\":[]}]");
	CHECK_STR(field(sl, "pods"),
		  "[{\"identity\":1,\"ip\":\"10.128.0.4\",\"name\":\"c\"},{\"identity\":0,\"ip\":\"10.128.0.2\","
		  "\"name\":\"a\"},{\"identity\":0,\"ip\":\"10.128.0.3\",\"name\":\"b\"}]");
	json_decref(sl);
	/* nothing changed: nothing written, however long */
	tick(&fx, 1000);
	CHECK_EQ(writes(&fx), 2);
	/* an annotation or a Service changes no peer */
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	tick(&fx, 1000);
	CHECK_EQ(writes(&fx), 2);
	/* a relabel changes its identity: one write, at once (the last was
	 * long ago) */
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"db\"}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	CHECK_EQ(writes(&fx), 3);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(writes(&fx), 3);
	sl = get_slice(&fx, "node-1-1");
	CHECK(json_array_size(json_object_get(sl, "identities")) == 3);
	json_decref(sl);
	/* a pod that finishes leaves; a move to node-2 writes both nodes */
	CHECK_EQ(pod(&fx, "red", "b", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.3", "Failed"), 0);
	CHECK_EQ(del_pod(&fx, "red", "a"), 0);
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"db\"}", HTTP, "node-2", "10.128.2.2", NULL), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(writes(&fx), 6);	/* node-1 at once, then the rest of its
					 * burst; node-2 at once */
	sl = get_slice(&fx, "node-2-1");
	CHECK_STR(field(sl, "pods"), "[{\"identity\":0,\"ip\":\"10.128.2.2\",\"name\":\"a\"}]");
	json_decref(sl);
	/* the last pod of a node gone: its slice is deleted */
	CHECK_EQ(del_pod(&fx, "red", "a"), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK(get_slice(&fx, "node-2-1") == NULL);
	CHECK_EQ(fx.metrics.podpeerslice_deletes, 1);
	CHECK_EQ(fx.metrics.podpeerslice_failures, 0);
	fx_close(&fx);
}

/* Kept only while the cluster has a NetworkPolicy: without one a pod
 * costs no slice write; the first policy writes every node's slices in
 * the sync of its own commit, whatever their gather; the last one's
 * deletion deletes them, in its sync; a second policy changes nothing. */
TEST(peers_kept_only_while_a_networkpolicy_exists)
{
	struct fixture fx;
	json_t *sl;

	CHECK(fx_open(&fx) == 0);
	CHECK_EQ(count_slices(&fx), 0);
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	CHECK_EQ(pod(&fx, "blue", "b", "{}", HTTP, "node-2", "10.128.2.2", NULL), 0);
	CHECK_EQ(writes(&fx), 2);
	CHECK_EQ(policy(&fx, "red", "any", false), 0);
	CHECK_EQ(count_slices(&fx), 0);
	CHECK_EQ(fx.metrics.podpeerslice_deletes, 2);
	CHECK(!peers_ctl_active(endpoints_ctl_peers(fx.reg.endpoints)));
	/* no policy: pods come and go, nothing is written, nothing is due */
	CHECK_EQ(pod(&fx, "red", "c", "{}", HTTP, "node-1", "10.128.0.3", NULL), 0);
	CHECK_EQ(del_pod(&fx, "blue", "b"), 0);
	CHECK_EQ(pod(&fx, "blue", "d", "{}", HTTP, "node-3", "10.128.4.2", NULL), 0);
	tick(&fx, 1000);
	CHECK_EQ(writes(&fx), 4);
	CHECK(endpoints_ctl_due_ms(fx.reg.endpoints) == -1);
	/* a policy (in another namespace): every node at once, in its sync */
	CHECK_EQ(policy(&fx, "blue", "other", true), 0);
	CHECK_EQ(count_slices(&fx), 2);
	CHECK_EQ(writes(&fx), 6);
	sl = get_slice(&fx, "node-1-1");
	CHECK_STR(field(sl, "pods"), "[{\"identity\":0,\"ip\":\"10.128.0.2\",\"name\":\"a\"},"
				     "{\"identity\":1,\"ip\":\"10.128.0.3\",\"name\":\"c\"}]");
	json_decref(sl);
	/* a second one, and one of two deleted: nothing to write */
	CHECK_EQ(policy(&fx, "red", "any", true), 0);
	CHECK_EQ(policy(&fx, "blue", "other", false), 0);
	tick(&fx, 1000);
	CHECK_EQ(writes(&fx), 6);
	/* a pod change is written again as it comes */
	CHECK_EQ(pod(&fx, "red", "e", "{}", HTTP, "node-3", "10.128.4.3", NULL), 0);
	CHECK_EQ(writes(&fx), 7);
	CHECK_EQ(fx.metrics.podpeerslice_failures, 0);
	CHECK_EQ(policy(&fx, "red", "any", false), 0);
	CHECK_EQ(count_slices(&fx), 0);
	fx_close(&fx);
}

TEST(peers_burst_costs_one_write_and_slices_fill_up)
{
	struct fixture fx;
	char name[16], ip[32];

	CHECK(fx_open(&fx) == 0);
	CHECK(peers_ctl_set_capacity(endpoints_ctl_peers(fx.reg.endpoints), 0) == -ERANGE);
	CHECK(peers_ctl_set_capacity(endpoints_ctl_peers(fx.reg.endpoints), PODPEERSLICE_MAX_PODS + 1) == -ERANGE);
	/* 30 pods, one request each, 2 ms apart: the first at once, the
	 * other 29 in one write at the gather's end */
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "p%02d", i);
		snprintf(ip, sizeof(ip), "10.128.0.%d", 10 + i);
		CHECK_EQ(pod(&fx, "red", name, "{\"app\":\"web\"}", HTTP, "node-1", ip, NULL), 0);
		tick(&fx, 2);
	}
	CHECK_EQ(writes(&fx), 1);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(writes(&fx), 2);
	/* capacity 10: the next change writes the slice down to 10 and makes 2 more */
	CHECK(peers_ctl_set_capacity(endpoints_ctl_peers(fx.reg.endpoints), 10) == 0);
	CHECK_EQ(pod(&fx, "red", "p00", "{\"app\":\"db\"}", HTTP, "node-1", "10.128.0.10", NULL), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(count_slices(&fx), 3);
	{
		json_t *a = get_slice(&fx, "node-1-1"), *b = get_slice(&fx, "node-1-2"), *c = get_slice(&fx, "node-1-3");

		CHECK(a && b && c);
		CHECK_EQ(json_array_size(json_object_get(a, "pods")), 10);
		CHECK_EQ(json_array_size(json_object_get(b, "pods")), 10);
		CHECK_EQ(json_array_size(json_object_get(c, "pods")), 10);
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
	/* one pod changed: one slice written */
	{
		uint64_t w = writes(&fx);

		CHECK_EQ(pod(&fx, "red", "p25", "{\"app\":\"db\"}", HTTP, "node-1", "10.128.0.35", NULL), 0);
		tick(&fx, PODPEERS_GATHER_MS);
		CHECK_EQ(writes(&fx) - w, 1);
	}
	CHECK_EQ(fx.metrics.podpeerslice_failures, 0);
	fx_close(&fx);
}

TEST(peers_long_node_names_and_foreign_slices)
{
	struct fixture fx;
	char node[254], fname[300];
	struct status st = { 0 };
	json_t *sl, *out = NULL, *foreign;
	const char *name = NULL;

	CHECK(fx_open(&fx) == 0);
	/* 253 bytes: 4 labels of 62 and one of 1, dots between */
	memset(node, 'n', sizeof(node));
	for (int i = 62; i < 253; i += 63)
		node[i] = '.';
	node[253] = 0;
	CHECK(model_dns1123_subdomain(node));
	CHECK(add_node(&fx, node, "192.168.0.4") == 0);	/* the fourth subnet: 10.128.6.0/23 */
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"web\"}", HTTP, node, "10.128.6.2", NULL), 0);
	/* a slice of someone else's, with the name ours would take: left alone, its name skipped */
	snprintf(fname, sizeof(fname), "node-1-1");
	foreign = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:[], s:[]}", "apiVersion", "network.weft.io/v1",
			    "kind", "PodPeerSlice", "metadata", "name", fname, "labels", PODPEERSLICE_MANAGED_LABEL,
			    "someone-else", "node", "node-1", "identities", "pods");
	/* no client may write one, the admin included */
	CHECK(registry_create(&fx.reg, K(KIND_PODPEERSLICE), "", foreign, &out, &st) == -1);
	CHECK_EQ(st.code, 405);
	CHECK_CONTAINS(st.message, "cannot be written through the API");
	CHECK(registry_replace(&fx.reg, K(KIND_PODPEERSLICE), "", fname, foreign, &out, &st) == -1);
	CHECK_EQ(st.code, 405);
	CHECK(registry_delete(&fx.reg, K(KIND_PODPEERSLICE), "", fname, &out, &st) == -1);
	CHECK_EQ(st.code, 405);
	/* (what another controller could store) */
	CHECK(registry_prepare(K(KIND_PODPEERSLICE), "", fname, foreign, &st) == 0);
	CHECK(registry_write_checked(&fx.reg, K(KIND_PODPEERSLICE), "", foreign, REGISTRY_OWNER | REGISTRY_CREATE,
				     &out, &st) == 0);
	json_decref(out);
	json_decref(foreign);
	CHECK_EQ(pod(&fx, "red", "b", "{}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(fx.metrics.podpeerslice_writes, 2);
	/* ours on node-1 took node-1-2 */
	sl = get_slice(&fx, "node-1-2");
	CHECK(sl);
	json_decref(sl);
	sl = get_slice(&fx, fname);
	CHECK(sl && json_array_size(json_object_get(sl, "pods")) == 0);
	json_decref(sl);
	/* the long node's: a valid name of at most 253 bytes, no node label, the node in full */
	{
		json_t *items = NULL, *it;
		int64_t rev;
		size_t i;

		CHECK(registry_list(&fx.reg, K(KIND_PODPEERSLICE), NULL, &items, &rev, &st) == 0);
		json_array_foreach(items, i, it)
			if (!strcmp(json_string_value(json_object_get(it, "node")) ?: "", node)) {
				name = obj_name(it);
				CHECK(strlen(name) <= 253);
				CHECK(model_dns1123_subdomain(name));
				CHECK(strlen(name) > 200);
				CHECK(!json_object_get(json_object_get(json_object_get(it, "metadata"), "labels"),
						       PODPEERSLICE_NODE_LABEL));
				CHECK(json_object_get(json_object_get(json_object_get(it, "metadata"), "labels"),
						      PODPEERSLICE_MANAGED_LABEL));
			}
		CHECK(name != NULL);
		json_decref(items);
	}
	/* all of node-1's pods gone: ours deleted, the foreign one stays */
	CHECK_EQ(del_pod(&fx, "red", "b"), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK(get_slice(&fx, "node-1-2") == NULL);
	sl = get_slice(&fx, fname);
	CHECK(sl);
	json_decref(sl);
	fx_close(&fx);
}

TEST(peers_resync_repairs_and_a_changed_slice_is_corrected)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *sl, *out = NULL;
	uint64_t w;

	CHECK(fx_open(&fx) == 0);
	CHECK_EQ(pod(&fx, "red", "a", "{\"app\":\"web\"}", HTTP, "node-1", "10.128.0.2", NULL), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(writes(&fx), 1);
	/* a slice of ours changed behind the controller's back: put right at the next sync */
	sl = get_slice(&fx, "node-1-1");
	CHECK(sl);
	json_object_set_new(sl, "identities",
			    json_pack("[{s:s, s:{}, s:[]}, {s:s, s:{}, s:[]}]", "namespace", "red", "labels", "ports",
				      "namespace", "blue", "labels", "ports"));
	json_object_set_new(json_array_get(json_object_get(sl, "pods"), 0), "identity", json_integer(1));
	json_object_del(json_object_get(sl, "metadata"), "resourceVersion");
	w = writes(&fx);
	CHECK(registry_prepare(K(KIND_PODPEERSLICE), "", "node-1-1", sl, &st) == 0);
	CHECK(registry_write_checked(&fx.reg, K(KIND_PODPEERSLICE), "", sl, REGISTRY_OWNER, &out, &st) == 0);
	json_decref(out);
	json_decref(sl);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK_EQ(writes(&fx) - w, 1);	/* (at once, or at the gather's end) */
	sl = get_slice(&fx, "node-1-1");
	CHECK_STR(field(sl, "identities"),
		  "[{\"labels\":{\"app\":\"web\"},\"namespace\":\"red\",\"ports\":[{\"name\":\"http\",\"port\":8080,"
		  "\"protocol\":\"TCP\"}]}]");
	json_decref(sl);
	/* disabled (not the leader): nothing written, nothing due */
	endpoints_ctl_enable(fx.reg.endpoints, false);
	CHECK_EQ(pod(&fx, "red", "b", "{}", HTTP, "node-2", "10.128.2.2", NULL), 0);
	CHECK_EQ(del_pod(&fx, "red", "a"), 0);
	tick(&fx, PODPEERS_GATHER_MS);
	CHECK(endpoints_ctl_due_ms(fx.reg.endpoints) == -1);
	sl = get_slice(&fx, "node-1-1");
	CHECK(sl != NULL);
	json_decref(sl);
	/* leading again: the resync writes at once, no gather */
	endpoints_ctl_enable(fx.reg.endpoints, true);
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK(get_slice(&fx, "node-1-1") == NULL);
	sl = get_slice(&fx, "node-2-1");
	CHECK(sl);
	json_decref(sl);
	w = writes(&fx);
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK_EQ(writes(&fx), w);
	fx_close(&fx);
}

/* ------------------------------------------------------------------ randomized */

static uint64_t rng;
static uint32_t rnd(uint32_t n) { return test_rnd(&rng, n); }

static const char *const nss[] = { "red", "blue" };

/* node → {"ns/name" → {ip, identity}} from every pod, as the model says. */
static json_t *naive(struct fixture *fx)
{
	json_t *want = json_object(), *pods = NULL, *p, *c, *port;
	int64_t rev;
	struct status st = { 0 };
	size_t i, j, k;

	if (registry_list(&fx->reg, K(KIND_POD), NULL, &pods, &rev, &st))
		return NULL;
	json_array_foreach(pods, i, p) {
		const char *node = obj_str(p, "spec.nodeName"), *ip = obj_str(p, "status.podIP");
		const char *phase = obj_str(p, "status.phase");
		json_t *ports = json_array(), *labels = json_object_get(json_object_get(p, "metadata"), "labels");
		json_t *m;
		char key[600];
		uint32_t a;

		if (!node || !ip || ip4_parse(ip, &a) < 0 || (phase && (!strcmp(phase, "Succeeded") ||
									  !strcmp(phase, "Failed")))) {
			json_decref(ports);
			continue;
		}
		json_array_foreach(json_object_get(json_object_get(p, "spec"), "containers"), j, c)
			json_array_foreach(json_object_get(c, "ports"), k, port)
				if (obj_str(port, "name"))
					json_array_append_new(ports, json_pack("{s:s, s:s, s:O}", "name",
									       obj_str(port, "name"), "protocol",
									       obj_str(port, "protocol") ?: "TCP", "port",
									       json_object_get(port, "containerPort")));
		if (!(m = json_object_get(want, node)))
			json_object_set_new(want, node, m = json_object());
		snprintf(key, sizeof(key), "%s/%s", obj_namespace(p), obj_name(p));
		json_object_set_new(m, key, json_pack("{s:s, s:{s:s, s:o, s:o}}", "ip", ip, "identity", "namespace",
						      obj_namespace(p), "labels",
						      labels ? json_incref(labels) : json_object(), "ports", ports));
	}
	json_decref(pods);
	return want;
}

/* The stored slices of ours in naive's shape, checking each on the way:
 * a valid name, 1..max pods, every identity listed once and used, no pod
 * twice.  NULL with why set when one is wrong. */
static json_t *stored(struct fixture *fx, size_t max, char *why, size_t len)
{
	json_t *have = json_object(), *items = NULL, *sl, *pod, *id;
	int64_t rev;
	struct status st = { 0 };
	size_t i, j;

	if (registry_list(&fx->reg, K(KIND_PODPEERSLICE), NULL, &items, &rev, &st)) {
		snprintf(why, len, "list: %.200s", st.message);
		json_decref(have);
		return NULL;
	}
	json_array_foreach(items, i, sl) {
		const json_t *labels = json_object_get(json_object_get(sl, "metadata"), "labels");
		const char *by = json_string_value(json_object_get(labels, PODPEERSLICE_MANAGED_LABEL));
		const char *node = json_string_value(json_object_get(sl, "node"));
		const json_t *ids = json_object_get(sl, "identities"), *pods = json_object_get(sl, "pods");
		size_t nids = json_array_size(ids);
		char *used = calloc(nids + 1, 1);
		json_t *m;

		if (!by || strcmp(by, PODPEERSLICE_MANAGER) != 0) {
			free(used);
			continue;
		}
		if (!model_dns1123_subdomain(obj_name(sl)) || !json_array_size(pods) || json_array_size(pods) > max)
			snprintf(why, len, "slice %s: %zu pods", obj_name(sl), json_array_size(pods));
		for (j = 0; j < nids; j++)
			for (size_t k = j + 1; k < nids; k++)
				if (json_equal(json_array_get(ids, j), json_array_get(ids, k)))
					snprintf(why, len, "slice %s: identity %zu twice", obj_name(sl), j);
		if (!(m = json_object_get(have, node)))
			json_object_set_new(have, node, m = json_object());
		json_array_foreach(pods, j, pod) {
			json_int_t x = json_integer_value(json_object_get(pod, "identity"));
			char key[600];

			id = json_array_get(ids, (size_t)x);
			if (!id || x < 0) {
				snprintf(why, len, "slice %s: pod %zu has no identity", obj_name(sl), j);
				continue;
			}
			used[x] = 1;
			snprintf(key, sizeof(key), "%s/%s", obj_str(id, "namespace"), obj_str(pod, "name"));
			if (json_object_get(m, key))
				snprintf(why, len, "pod %.100s twice on %.100s", key, node);
			json_object_set_new(m, key, json_pack("{s:O, s:O}", "ip", json_object_get(pod, "ip"),
							      "identity", id));
		}
		for (j = 0; j < nids; j++)
			if (!used[j])
				snprintf(why, len, "slice %s: identity %zu unused", obj_name(sl), j);
		free(used);
	}
	json_decref(items);
	if (why[0]) {
		json_decref(have);
		return NULL;
	}
	return have;
}

static void random_write(struct fixture *fx, char *what, size_t len)
{
	static const char *const apps[] = { "a", "b", "c" };
	const char *ns = nss[rnd(2)];
	char name[16], ip[16], node[16], labels[128], ports[256];
	uint32_t op = rnd(10), n = 1 + rnd(3);
	static const char *const phases[] = { "Running", "Running", "Pending", "Succeeded", "Failed" };

	snprintf(name, sizeof(name), "p%u", rnd(30));
	if (op < 8) {
		snprintf(node, sizeof(node), "node-%u", n);
		/* shared addresses are tried on purpose: the second pod is refused (409) */
		snprintf(ip, sizeof(ip), "10.128.%u.%u", (n - 1) * 2, 2 + rnd(40));
		snprintf(labels, sizeof(labels), rnd(4) ? "{\"app\":\"%s\"%s}" : "{}", apps[rnd(3)],
			 rnd(2) ? ",\"tier\":\"t\"" : "");
		snprintf(ports, sizeof(ports), "[{\"name\":\"http\",\"containerPort\":%u%s}%s]", 8000 + rnd(2),
			 rnd(3) ? "" : ",\"protocol\":\"UDP\"", rnd(2) ? ",{\"containerPort\":9}" : "");
		snprintf(what, len, "pod %s/%s on %s at %s", ns, name, node, ip);
		if (pod(fx, ns, name, labels, ports, rnd(8) ? node : "", rnd(6) ? ip : NULL, phases[rnd(5)]))
			snprintf(what + strlen(what), len - strlen(what), " (refused)");
	} else {
		snprintf(what, len, "delete pod %s/%s", ns, name);
		(void)del_pod(fx, ns, name);
	}
}

TEST(peers_randomized_against_a_naive_model)
{
	struct fixture fx;
	const size_t max = 4;
	json_t *foreign, *out = NULL, *kept;
	struct status st = { 0 };

	rng = test_seed() | 1;
	CHECK(fx_open(&fx) == 0);
	CHECK(peers_ctl_set_capacity(endpoints_ctl_peers(fx.reg.endpoints), max) == 0);
	/* another manager's slice, with a name ours would take */
	foreign = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:[{s:s}], s:[{s:s, s:s, s:i}]}", "apiVersion",
			    "network.weft.io/v1", "kind", "PodPeerSlice", "metadata", "name", "node-2-1", "labels",
			    PODPEERSLICE_MANAGED_LABEL, "someone-else", "node", "node-2", "identities", "namespace",
			    "red", "pods", "name", "x", "ip", "10.128.2.200", "identity", 0);
	CHECK(registry_prepare(K(KIND_PODPEERSLICE), "", "node-2-1", foreign, &st) == 0);
	CHECK(registry_write_checked(&fx.reg, K(KIND_PODPEERSLICE), "", foreign, REGISTRY_OWNER | REGISTRY_CREATE,
				     &out, &st) == 0);
	json_decref(foreign);
	kept = out;
	for (int round = 0; round < 60 && !test_failed(); round++) {
		char what[160] = "", why[256] = "";
		uint64_t w0 = writes(&fx);
		json_t *want, *have;
		int burst = 1 + (int)rnd(12);

		for (int i = 0; i < burst; i++) {
			random_write(&fx, what, sizeof(what));
			fx.now += rnd(PODPEERS_GATHER_MS / burst);
		}
		tick(&fx, PODPEERS_GATHER_MS);
		want = naive(&fx);
		have = stored(&fx, max, why, sizeof(why));
		if (!want || !have || !json_equal(want, have)) {
			char *a = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
			char *b = json_dumps(have, JSON_COMPACT | JSON_SORT_KEYS);

			test_fail(__FILE__, __LINE__, "round %d (last: %s): %s\n want %.1500s\n have %.1500s", round,
				  what, why, a ? a : "?", b ? b : "?");
			free(a);
			free(b);
		}
		json_decref(want);
		json_decref(have);
		/* a sync with nothing changed writes nothing */
		w0 = writes(&fx);
		tick(&fx, PODPEERS_GATHER_MS);
		if (writes(&fx) != w0)
			test_fail(__FILE__, __LINE__, "round %d: a sync without a change wrote %llu", round,
				  (unsigned long long)(writes(&fx) - w0));
	}
	/* the foreign slice is as it was written */
	{
		json_t *now = get_slice(&fx, "node-2-1");

		CHECK(now);
		CHECK_STR(obj_str(now, "metadata.resourceVersion"), obj_str(kept, "metadata.resourceVersion"));
		json_decref(now);
	}
	json_decref(kept);
	CHECK_EQ(fx.metrics.podpeerslice_failures, 0);
	fx_close(&fx);
}
