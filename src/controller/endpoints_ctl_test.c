/*
 * endpoints_ctl_test.c — the endpoints controller on a real SQLite store,
 * driven through the registry as the API drives it: Endpoints follow pod,
 * Service and Endpoints writes; nothing is written when nothing changed;
 * a resync repairs what a disabled controller missed; hand-written
 * Endpoints are checked against tenancy.  A randomized run checks, after
 * every write, every Service's Endpoints against a recomputation from all
 * pods, and that exactly the Endpoints whose content changed were written.
 * EndpointSlices: a selector Service's slices (content, packing, one write
 * for one pod), mirroring of hand-written Endpoints, adoption after a
 * restart (no write), hand-written slices against tenancy, and in the
 * randomized run every Service's slices against its Endpoints.
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
};

static int fx_open(struct fixture *fx, const char *mode)
{
	char path[512], err[256], cfg[512];
	struct status st = { 0 };
	json_t *c = NULL;
	int e;

	static int serial;

	memset(fx, 0, sizeof(*fx));
	snprintf(path, sizeof(path), "sqlite:%s/weft-%d.db", test_tmpdir(), serial++);
	fx->store = store_open(path, err, sizeof(err));
	if (!fx->store)
		return -1;
	if (mode) {
		snprintf(cfg, sizeof(cfg),
			 "{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\",\"metadata\":"
			 "{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\",\"hostSubnetLength\":9}],"
			 "\"serviceNetwork\":\"172.30.0.0/16\",\"mode\":\"%s\"}", mode);
		c = json_loads(cfg, 0, NULL);
	}
	e = registry_init(&fx->reg, fx->store, &fx->metrics, c, &st);
	if (e)
		fprintf(stderr, "registry_init: %s\n", st.message);
	json_decref(c);
	/* node-1..3: 10.128.0.0/23, 10.128.2.0/23, 10.128.4.0/23 (a pod's
	 * address is one of its node's) */
	for (int i = 1; !e && i <= 3; i++) {
		char name[32], ip[32];
		json_t *n, *out = NULL;

		snprintf(name, sizeof(name), "node-%d", i);
		snprintf(ip, sizeof(ip), "192.168.0.%d", i);
		n = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Node",
			      "metadata", "name", name, "status", "addresses", "type", "InternalIP", "address", ip);
		e = registry_create(&fx->reg, kind_get(KIND_NODE), "", n, &out, &st);
		if (e)
			fprintf(stderr, "%s: %s\n", name, st.message);
		json_decref(n);
		json_decref(out);
	}
	return e;
}

static void fx_close(struct fixture *fx)
{
	registry_close(&fx->reg);
	store_close(fx->store);
}

static const struct kind_info *K(enum kind_id id) { return kind_get(id); }

/* PUT (create or replace) from JSON text; 0 or the HTTP code of the refusal. */
static int put(struct fixture *fx, enum kind_id k, const char *ns, const char *json, char *msg, size_t msglen)
{
	json_error_t je;
	json_t *o = json_loads(json, 0, &je), *out = NULL;
	struct status st = { 0 };
	const char *name;
	int e;

	if (!o) {
		fprintf(stderr, "bad test JSON %s: %s\n", je.text, json);
		return -1;
	}
	name = obj_name(o);
	e = registry_replace(&fx->reg, K(k), ns, name, o, &out, &st);
	json_decref(o);
	json_decref(out);
	if (msg)
		snprintf(msg, msglen, "%s", e ? st.message : "");
	return e ? st.code : 0;
}

static int del(struct fixture *fx, enum kind_id k, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;
	int e = registry_delete(&fx->reg, K(k), ns, name, &o, &st);

	json_decref(o);
	return e ? st.code : 0;
}

static json_t *get(struct fixture *fx, enum kind_id k, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *o = NULL;

	return registry_get(&fx->reg, K(k), ns, name, &o, &st) ? NULL : o;
}

static int add_ns(struct fixture *fx, const char *name)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", name);
	return put(fx, KIND_NAMESPACE, "", buf, NULL, 0);
}

/* A pod on the node whose subnet has ip (10.128.0.x node-1, 10.128.2.x node-2, ...). */
static int add_pod(struct fixture *fx, const char *ns, const char *name, const char *labels, const char *ip,
		   const char *phase)
{
	char buf[1024];
	uint32_t a = 0;

	(void)ip4_parse(ip, &a);
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":%s},"
		 "\"spec\":{\"nodeName\":\"node-%u\",\"containers\":[{\"name\":\"c\",\"ports\":["
		 "{\"name\":\"http\",\"containerPort\":8080}]}]},\"status\":{\"podIP\":\"%s\",\"phase\":\"%s\"}}",
		 name, labels, ((a >> 9) & 0xff) + 1, ip, phase ? phase : "Running");
	return put(fx, KIND_POD, ns, buf, NULL, 0);
}

/* compact subsets of ns/name's Endpoints, "-" when there is none */
static const char *subsets(struct fixture *fx, const char *ns, const char *name)
{
	static char buf[8192];
	json_t *ep = get(fx, KIND_ENDPOINTS, ns, name);
	char *s;

	if (!ep)
		return "-";
	s = json_object_get(ep, "subsets") ? json_dumps(json_object_get(ep, "subsets"), JSON_COMPACT | JSON_PRESERVE_ORDER)
					   : strdup("[]");
	snprintf(buf, sizeof(buf), "%s", s ? s : "?");
	free(s);
	json_decref(ep);
	return buf;
}

/* just the ready IPs and ports: "10.128.0.2:8080,10.128.0.3:8080" ("" none, "-" no object) */
static const char *ready(struct fixture *fx, const char *ns, const char *name)
{
	static char buf[4096];
	json_t *ep = get(fx, KIND_ENDPOINTS, ns, name), *ss, *a, *p;
	size_t i, j, k;

	if (!ep)
		return "-";
	buf[0] = 0;
	json_array_foreach(json_object_get(ep, "subsets"), i, ss)
		json_array_foreach(json_object_get(ss, "ports"), k, p)
			json_array_foreach(json_object_get(ss, "addresses"), j, a)
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s:%d", buf[0] ? "," : "",
					 json_string_value(json_object_get(a, "ip")),
					 (int)json_integer_value(json_object_get(p, "port")));
	json_decref(ep);
	return buf;
}

static const char *rv(struct fixture *fx, enum kind_id k, const char *ns, const char *name)
{
	static char buf[32];
	json_t *o = get(fx, k, ns, name);

	snprintf(buf, sizeof(buf), "%s", o ? obj_str(o, "metadata.resourceVersion") : "-");
	json_decref(o);
	return buf;
}

#define WEB_SVC                                                                                          \
	"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"selector\":" \
	"{\"app\":\"web\"},\"ports\":[{\"port\":80,\"targetPort\":\"http\"}]}}"

TEST(endpoints_follow_pods_labels_and_selector)
{
	struct fixture fx;
	char rv1[32];

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_pod(&fx, "red", "a", "{\"app\":\"web\"}", "10.128.0.3", NULL) == 0);
	CHECK(add_pod(&fx, "red", "b", "{\"app\":\"web\"}", "10.128.0.2", NULL) == 0);
	CHECK(add_pod(&fx, "red", "c", "{\"app\":\"web\"}", "10.128.0.4", "Pending") == 0);
	CHECK(add_pod(&fx, "red", "d", "{\"app\":\"db\"}", "10.128.0.5", NULL) == 0);
	CHECK_STR(subsets(&fx, "red", "web"), "-");
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK_STR(subsets(&fx, "red", "web"),
		  "[{\"addresses\":[{\"ip\":\"10.128.0.2\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"b\"}},"
		  "{\"ip\":\"10.128.0.3\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"a\"}}],"
		  "\"notReadyAddresses\":[{\"ip\":\"10.128.0.4\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"c\"}}],"
		  "\"ports\":[{\"port\":8080,\"protocol\":\"TCP\"}]}]");
	json_t *ep = get(&fx, KIND_ENDPOINTS, "red", "web");
	CHECK(ep);
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(ep, "metadata"), "labels"),
						    ENDPOINTS_MANAGED_LABEL)), ENDPOINTS_MANAGER);
	json_decref(ep);

	/* a pod becomes ready, one loses its label, one gains it */
	CHECK(add_pod(&fx, "red", "c", "{\"app\":\"web\"}", "10.128.0.4", "Running") == 0);
	CHECK(add_pod(&fx, "red", "a", "{\"app\":\"old\"}", "10.128.0.3", NULL) == 0);
	CHECK(add_pod(&fx, "red", "d", "{\"app\":\"web\"}", "10.128.0.5", NULL) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.4:8080,10.128.0.5:8080");
	CHECK(del(&fx, KIND_POD, "red", "d") == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.4:8080");

	/* nothing relevant changes: no write (an annotation on a pod, the same Service again) */
	snprintf(rv1, sizeof(rv1), "%s", rv(&fx, KIND_ENDPOINTS, "red", "web"));
	CHECK(put(&fx, KIND_POD, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"labels\":{\"app\":\"web\"},"
		  "\"annotations\":{\"x\":\"y\"}},\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"c\","
		  "\"ports\":[{\"name\":\"http\",\"containerPort\":8080}]}]}}", NULL, 0) == 0);
	CHECK_STR(rv(&fx, KIND_ENDPOINTS, "red", "web"), rv1);
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK_STR(rv(&fx, KIND_ENDPOINTS, "red", "web"), rv1);
	/* (that pod PUT had no status: it kept its podIP) */
	json_t *b = get(&fx, KIND_POD, "red", "b");
	CHECK_STR(obj_str(b, "status.podIP"), "10.128.0.2");
	json_decref(b);

	/* selector change: the other pods */
	CHECK(put(&fx, KIND_SERVICE, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"selector\":"
		  "{\"app\":\"old\"},\"ports\":[{\"port\":80,\"targetPort\":\"http\"}]}}", NULL, 0) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.3:8080");
	/* someone overwrites it: the controller puts it back */
	CHECK(put(&fx, KIND_ENDPOINTS, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"web\"},\"subsets\":"
		  "[{\"addresses\":[{\"ip\":\"8.8.8.8\"}],\"ports\":[{\"port\":53}]}]}", NULL, 0) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.3:8080");
	/* and deleted: recreated */
	CHECK(del(&fx, KIND_ENDPOINTS, "red", "web") == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.3:8080");

	/* losing the selector deletes the controller's Endpoints */
	CHECK(put(&fx, KIND_SERVICE, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\"},\"spec\":"
		  "{\"ports\":[{\"port\":80}]}}", NULL, 0) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "-");
	/* hand-written ones of a selector-less Service stay, even when it goes */
	CHECK(put(&fx, KIND_ENDPOINTS, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"web\"},\"subsets\":"
		  "[{\"addresses\":[{\"ip\":\"8.8.8.8\"}],\"ports\":[{\"port\":53}]}]}", NULL, 0) == 0);
	CHECK(del(&fx, KIND_SERVICE, "red", "web") == 0);
	CHECK_STR(ready(&fx, "red", "web"), "8.8.8.8:53");
	/* a controller-made one goes with its Service */
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.4:8080");
	CHECK(del(&fx, KIND_SERVICE, "red", "web") == 0);
	CHECK_STR(ready(&fx, "red", "web"), "-");
	CHECK(fx.metrics.endpoints_failures == 0);
	fx_close(&fx);
}

TEST(endpoints_named_ports_and_empty_service)
{
	struct fixture fx;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(put(&fx, KIND_SERVICE, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"two\"},\"spec\":{\"selector\":"
		  "{\"app\":\"x\"},\"ports\":[{\"name\":\"web\",\"port\":80,\"targetPort\":\"http\"},"
		  "{\"name\":\"metrics\",\"port\":9090,\"targetPort\":\"metrics\"}]}}", NULL, 0) == 0);
	/* a Service without pods has an Endpoints without subsets */
	CHECK_STR(subsets(&fx, "red", "two"), "[]");
	CHECK(add_pod(&fx, "red", "p", "{\"app\":\"x\"}", "10.128.0.7", NULL) == 0);
	CHECK(put(&fx, KIND_POD, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"labels\":{\"app\":\"x\"}},"
		  "\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"c\",\"ports\":[{\"name\":\"http\",\"containerPort\":80},"
		  "{\"name\":\"metrics\",\"containerPort\":9100}]}]},\"status\":{\"podIP\":\"10.128.0.8\"}}", NULL, 0) == 0);
	CHECK_STR(subsets(&fx, "red", "two"),
		  "[{\"addresses\":[{\"ip\":\"10.128.0.8\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"q\"}}],"
		  "\"ports\":[{\"name\":\"web\",\"port\":80,\"protocol\":\"TCP\"},{\"name\":\"metrics\",\"port\":9100,\"protocol\":\"TCP\"}]},"
		  "{\"addresses\":[{\"ip\":\"10.128.0.7\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"p\"}}],"
		  "\"ports\":[{\"name\":\"web\",\"port\":8080,\"protocol\":\"TCP\"}]}]");
	/* deleting the namespace takes everything along, nothing fails */
	CHECK(del(&fx, KIND_NAMESPACE, "", "red") == 0);
	CHECK(fx.metrics.endpoints_failures == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK_STR(subsets(&fx, "red", "two"), "-");
	fx_close(&fx);
}

TEST(endpoints_resync_repairs_what_was_missed)
{
	struct fixture fx;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK(add_pod(&fx, "red", "a", "{\"app\":\"web\"}", "10.128.0.3", NULL) == 0);
	CHECK(add_pod(&fx, "red", "b", "{\"app\":\"web\"}", "10.128.0.2", NULL) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.3:8080");
	/* the controller is off (as if down): changes are missed */
	endpoints_ctl_enable(fx.reg.endpoints, false);
	CHECK(del(&fx, KIND_POD, "red", "a") == 0);
	CHECK(add_pod(&fx, "red", "c", "{\"app\":\"web\"}", "10.128.0.9", NULL) == 0);
	CHECK(put(&fx, KIND_SERVICE, "red",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"gone\"},\"spec\":{\"selector\":"
		  "{\"app\":\"web\"},\"ports\":[{\"port\":1}]}}", NULL, 0) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.3:8080");
	CHECK_STR(ready(&fx, "red", "gone"), "-");
	/* a new controller on the same store: a fresh registry, resync */
	registry_close(&fx.reg);
	{
		struct status st = { 0 };
		CHECK(registry_init(&fx.reg, fx.store, &fx.metrics, NULL, &st) == 0);
	}
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK_STR(ready(&fx, "red", "web"), "10.128.0.2:8080,10.128.0.9:8080");
	CHECK_STR(ready(&fx, "red", "gone"), "10.128.0.2:1,10.128.0.9:1");
	CHECK_EQ(endpoints_services(fx.reg.endpoints), 2);
	/* a second resync writes nothing */
	uint64_t writes = fx.metrics.endpoints_writes;
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK_EQ(fx.metrics.endpoints_writes, writes);
	fx_close(&fx);
}

TEST(endpoints_handwritten_are_checked_against_tenancy)
{
	struct fixture fx;
	char msg[1024];

#define EP(ns_ip) "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"ext\"},\"subsets\":" \
		  "[{\"addresses\":[{\"ip\":\"" ns_ip "\"}],\"ports\":[{\"port\":80}]}]}"
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_pod(&fx, "red", "r1", "{}", "10.128.0.2", NULL) == 0);
	CHECK(add_pod(&fx, "blue", "b1", "{}", "10.128.2.2", NULL) == 0);
	CHECK(add_pod(&fx, "default", "g1", "{}", "10.128.4.2", NULL) == 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.0.2"), msg, sizeof(msg)), 0);	/* own pod */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("192.0.2.10"), msg, sizeof(msg)), 0);	/* external */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.4.2"), msg, sizeof(msg)), 0);	/* global pod */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.2.2"), msg, sizeof(msg)), 403);	/* blue's pod */
	CHECK_CONTAINS(msg, "subsets[0].addresses[0].ip: 10.128.2.2 is pod blue/b1");
	CHECK_CONTAINS(msg, "which namespace red");
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.0.99"), msg, sizeof(msg)), 403);	/* nobody's */
	CHECK_CONTAINS(msg, "10.128.0.99 is inside the cluster network (10.128.0.0/14) but is no pod's address");
	/* the refused writes stored nothing: still the global pod */
	CHECK_STR(ready(&fx, "red", "ext"), "10.128.4.2:80");
	/* not-ready addresses are checked too */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red",
		     "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"ext\"},\"subsets\":"
		     "[{\"notReadyAddresses\":[{\"ip\":\"10.128.2.2\"}],\"ports\":[{\"port\":80}]}]}", msg, sizeof(msg)), 403);
	CHECK_CONTAINS(msg, "subsets[0].notReadyAddresses[0].ip");
	/* the global namespace may point anywhere */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "default", EP("10.128.2.2"), msg, sizeof(msg)), 0);
	/* after join-projects red and blue share a VNID */
	{
		const char *projects[] = { "blue" };
		json_t *out = NULL;
		int64_t rev;
		struct status st = { 0 };
		CHECK(registry_podnetwork(&fx.reg, PODNET_JOIN, "red", projects, 1, &out, &rev, &st) == 0);
		json_decref(out);
	}
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.2.2"), msg, sizeof(msg)), 0);
	/* a deleted pod's address is nobody's */
	CHECK(del(&fx, KIND_POD, "red", "r1") == 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.0.2"), msg, sizeof(msg)), 403);
	fx_close(&fx);

	/* flat mode: every pod, but still no address that is nobody's */
	CHECK(fx_open(&fx, "flat") == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_pod(&fx, "blue", "b1", "{}", "10.128.2.2", NULL) == 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.2.2"), msg, sizeof(msg)), 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", EP("10.128.2.3"), msg, sizeof(msg)), 403);
	fx_close(&fx);
#undef EP
}

/* ---- EndpointSlices ---- */

/* The slices of ns/svc of manager (NULL: any), as "name=ip,ip;name=ip"
 * in name order, each slice's endpoints in their order; "" none. */
static const char *slices(struct fixture *fx, const char *ns, const char *svc, const char *manager)
{
	static char buf[8192];
	json_t *items = NULL, *sl, *e;
	const char *names[64];
	size_t i, j, n = 0;
	int64_t rev;
	struct status st = { 0 };

	buf[0] = 0;
	if (registry_list(&fx->reg, K(KIND_ENDPOINTSLICE), ns, &items, &rev, &st))
		return "?";
	json_array_foreach(items, i, sl) {
		const json_t *labels = json_object_get(json_object_get(sl, "metadata"), "labels");
		const char *s = json_string_value(json_object_get(labels, ENDPOINTSLICE_SERVICE_LABEL));
		const char *m = json_string_value(json_object_get(labels, ENDPOINTSLICE_MANAGED_LABEL));

		if (s && !strcmp(s, svc) && (!manager || (m && !strcmp(m, manager))) && n < 64)
			names[n++] = obj_name(sl);
	}
	for (size_t a = 0; a < n; a++)	/* (few: a selection sort) */
		for (size_t b = a + 1; b < n; b++)
			if (strcmp(names[b], names[a]) < 0) {
				const char *t = names[a];
				names[a] = names[b];
				names[b] = t;
			}
	for (size_t a = 0; a < n; a++) {
		json_array_foreach(items, i, sl) {
			if (strcmp(obj_name(sl), names[a]))
				continue;
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s=", a ? ";" : "", names[a]);
			json_array_foreach(json_object_get(sl, "endpoints"), j, e)
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", j ? "," : "",
					 json_string_value(json_array_get(json_object_get(e, "addresses"), 0)));
		}
	}
	json_decref(items);
	return buf;
}

static uint64_t slice_writes(struct fixture *fx)
{
	return fx->metrics.endpointslice_writes + fx->metrics.endpointslice_deletes;
}

TEST(slices_follow_a_selector_service)
{
	struct fixture fx;
	json_t *sl;
	char rv1[32], rv2[32];
	uint64_t w;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 0) == -ERANGE);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 1001) == -ERANGE);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 2) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_pod(&fx, "red", "a", "{\"app\":\"web\"}", "10.128.0.2", NULL) == 0);
	CHECK(add_pod(&fx, "red", "b", "{\"app\":\"web\"}", "10.128.2.3", NULL) == 0);
	CHECK(add_pod(&fx, "red", "c", "{\"app\":\"web\"}", "10.128.0.4", "Pending") == 0);
	w = slice_writes(&fx);
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK_EQ(slice_writes(&fx) - w, 2);
	CHECK_STR(slices(&fx, "red", "web", ENDPOINTSLICE_MANAGER), "web-1=10.128.0.2,10.128.0.4;web-2=10.128.2.3");
	/* the shape the agents read */
	sl = get(&fx, KIND_ENDPOINTSLICE, "red", "web-1");
	CHECK(sl);
	CHECK_STR(obj_str(sl, "addressType"), "IPv4");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(sl, "metadata"), "labels"),
						    ENDPOINTSLICE_SERVICE_LABEL)), "web");
	{
		char *ports = json_dumps(json_object_get(sl, "ports"), JSON_COMPACT | JSON_SORT_KEYS);
		char *e0 = json_dumps(json_array_get(json_object_get(sl, "endpoints"), 0), JSON_COMPACT | JSON_SORT_KEYS);
		char *e1 = json_dumps(json_array_get(json_object_get(sl, "endpoints"), 1), JSON_COMPACT | JSON_SORT_KEYS);

		CHECK_STR(ports, "[{\"port\":8080,\"protocol\":\"TCP\"}]");
		CHECK_STR(e0, "{\"addresses\":[\"10.128.0.2\"],\"conditions\":{\"ready\":true,\"serving\":true,"
			      "\"terminating\":false},\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\","
			      "\"name\":\"a\",\"namespace\":\"red\"}}");
		CHECK(strstr(e1, "\"ready\":false"));
		free(ports);
		free(e0);
		free(e1);
	}
	json_decref(sl);
	/* a new pod fills the slice with room: one write, the other untouched */
	snprintf(rv1, sizeof(rv1), "%s", rv(&fx, KIND_ENDPOINTSLICE, "red", "web-1"));
	w = slice_writes(&fx);
	CHECK(add_pod(&fx, "red", "d", "{\"app\":\"web\"}", "10.128.0.9", NULL) == 0);
	CHECK_EQ(slice_writes(&fx) - w, 1);
	CHECK_STR(rv(&fx, KIND_ENDPOINTSLICE, "red", "web-1"), rv1);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-1=10.128.0.2,10.128.0.4;web-2=10.128.0.9,10.128.2.3");
	/* a pod that becomes ready: its slice only */
	snprintf(rv2, sizeof(rv2), "%s", rv(&fx, KIND_ENDPOINTSLICE, "red", "web-2"));
	w = slice_writes(&fx);
	CHECK(add_pod(&fx, "red", "c", "{\"app\":\"web\"}", "10.128.0.4", NULL) == 0);
	CHECK_EQ(slice_writes(&fx) - w, 1);
	CHECK_STR(rv(&fx, KIND_ENDPOINTSLICE, "red", "web-2"), rv2);
	/* a pod goes: its slice only; a slice emptied is deleted */
	w = slice_writes(&fx);
	CHECK(del(&fx, KIND_POD, "red", "a") == 0);
	CHECK_EQ(slice_writes(&fx) - w, 1);
	CHECK_STR(rv(&fx, KIND_ENDPOINTSLICE, "red", "web-2"), rv2);
	CHECK(del(&fx, KIND_POD, "red", "c") == 0);
	CHECK_EQ(fx.metrics.endpointslice_deletes, 1);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-2=10.128.0.9,10.128.2.3");
	/* someone else's slice of the Service is never touched; a slice of
	 * ours deleted by someone is made again */
	CHECK(put(&fx, KIND_ENDPOINTSLICE, "red",
		  "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"web-mine\","
		  "\"labels\":{\"kubernetes.io/service-name\":\"web\"}},\"addressType\":\"IPv4\",\"endpoints\":"
		  "[{\"addresses\":[\"192.0.2.1\"]}]}", NULL, 0) == 0);
	CHECK(del(&fx, KIND_ENDPOINTSLICE, "red", "web-2") == 0);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-1=10.128.0.9,10.128.2.3;web-mine=192.0.2.1");
	/* the Service goes: its slices go, not someone else's */
	CHECK(del(&fx, KIND_SERVICE, "red", "web") == 0);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-mine=192.0.2.1");
	CHECK_EQ(fx.metrics.endpointslice_failures, 0);
	fx_close(&fx);
}

#define EXT_SVC "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"ext\"},\"spec\":" \
		"{\"ports\":[{\"name\":\"https\",\"port\":443}]}}"
#define EXT_EP(labels) "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"ext\"," \
		       "\"labels\":" labels "},\"subsets\":[{\"addresses\":[{\"ip\":\"192.0.2.1\"},{\"ip\":\"192.0.2.2\"}]," \
		       "\"notReadyAddresses\":[{\"ip\":\"192.0.2.3\"}],\"ports\":[{\"name\":\"https\",\"port\":8443}]}]}"

TEST(slices_mirror_handwritten_endpoints)
{
	struct fixture fx;
	json_t *sl;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 2) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	/* Endpoints without a Service: nothing mirrored */
	CHECK(put(&fx, KIND_ENDPOINTS, "red", EXT_EP("{}"), NULL, 0) == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "");
	/* the Service comes: mirrored, in the same synchronous write */
	CHECK(put(&fx, KIND_SERVICE, "red", EXT_SVC, NULL, 0) == 0);
	CHECK_STR(slices(&fx, "red", "ext", ENDPOINTSLICE_MIRROR_MANAGER), "ext-1=192.0.2.1,192.0.2.2;ext-2=192.0.2.3");
	sl = get(&fx, KIND_ENDPOINTSLICE, "red", "ext-2");
	CHECK(sl);
	CHECK(json_is_false(json_object_get(json_object_get(json_array_get(json_object_get(sl, "endpoints"), 0),
							    "conditions"), "ready")));
	CHECK_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(sl, "ports"), 0), "port")), 8443);
	json_decref(sl);
	/* skip-mirror: the slices go; without it they come back */
	CHECK(put(&fx, KIND_ENDPOINTS, "red", EXT_EP("{\"endpointslice.kubernetes.io/skip-mirror\":\"true\"}"), NULL, 0) == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "");
	CHECK(put(&fx, KIND_ENDPOINTS, "red", EXT_EP("{}"), NULL, 0) == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "ext-1=192.0.2.1,192.0.2.2;ext-2=192.0.2.3");
	/* the Endpoints go: so do the slices */
	CHECK(del(&fx, KIND_ENDPOINTS, "red", "ext") == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "");
	/* the Service goes: so do they */
	CHECK(put(&fx, KIND_ENDPOINTS, "red", EXT_EP("{}"), NULL, 0) == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "ext-1=192.0.2.1,192.0.2.2;ext-2=192.0.2.3");
	CHECK(del(&fx, KIND_SERVICE, "red", "ext") == 0);
	CHECK_STR(slices(&fx, "red", "ext", NULL), "");
	CHECK_EQ(fx.metrics.endpointslice_failures, 0);
	fx_close(&fx);
}

TEST(slices_adopted_after_restart)
{
	struct fixture fx;
	struct status st = { 0 };
	char name[16], ip[32];
	uint64_t w;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 2) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(put(&fx, KIND_SERVICE, "red", WEB_SVC, NULL, 0) == 0);
	CHECK(put(&fx, KIND_SERVICE, "red", EXT_SVC, NULL, 0) == 0);
	CHECK(put(&fx, KIND_ENDPOINTS, "red", EXT_EP("{}"), NULL, 0) == 0);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(ip, sizeof(ip), "10.128.0.%d", 10 + i);
		CHECK(add_pod(&fx, "red", name, "{\"app\":\"web\"}", ip, NULL) == 0);
	}
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-1=10.128.0.10,10.128.0.11;web-2=10.128.0.12,10.128.0.13;"
						  "web-3=10.128.0.14");
	/* a new controller on the same store: adopts, writes nothing */
	registry_close(&fx.reg);
	CHECK(registry_init(&fx.reg, fx.store, &fx.metrics, NULL, &st) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 2) == 0);
	w = slice_writes(&fx);
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK_EQ(slice_writes(&fx), w);
	/* ... and goes on packing where the slices are */
	CHECK(add_pod(&fx, "red", "p9", "{\"app\":\"web\"}", "10.128.0.99", NULL) == 0);
	CHECK_EQ(slice_writes(&fx) - w, 1);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-1=10.128.0.10,10.128.0.11;web-2=10.128.0.12,10.128.0.13;"
						  "web-3=10.128.0.14,10.128.0.99");
	/* what a stopped controller missed is repaired at resync */
	endpoints_ctl_enable(fx.reg.endpoints, false);
	CHECK(del(&fx, KIND_POD, "red", "p0") == 0);
	CHECK(del(&fx, KIND_ENDPOINTSLICE, "red", "ext-1") == 0);
	registry_close(&fx.reg);
	CHECK(registry_init(&fx.reg, fx.store, &fx.metrics, NULL, &st) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 2) == 0);
	CHECK(endpoints_resync(fx.reg.endpoints) == 0);
	CHECK_STR(slices(&fx, "red", "web", NULL), "web-1=10.128.0.11;web-2=10.128.0.12,10.128.0.13;"
						  "web-3=10.128.0.14,10.128.0.99");
	/* (ext-2 had room: it takes one, a new ext-1 the other) */
	CHECK_STR(slices(&fx, "red", "ext", NULL), "ext-1=192.0.2.2;ext-2=192.0.2.1,192.0.2.3");
	CHECK_EQ(fx.metrics.endpointslice_failures, 0);
	fx_close(&fx);
}

TEST(slices_handwritten_are_checked_against_tenancy)
{
	struct fixture fx;
	char msg[1024];

#define ES(ip) "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"ext-x\"}," \
	       "\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"192.0.2.7\"]},{\"addresses\":[\"" ip "\"]}]}"
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_pod(&fx, "red", "r1", "{}", "10.128.0.2", NULL) == 0);
	CHECK(add_pod(&fx, "blue", "b1", "{}", "10.128.2.2", NULL) == 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTSLICE, "red", ES("10.128.0.2"), msg, sizeof(msg)), 0);	/* own pod */
	CHECK_EQ(put(&fx, KIND_ENDPOINTSLICE, "red", ES("192.0.2.10"), msg, sizeof(msg)), 0);	/* external */
	CHECK_EQ(put(&fx, KIND_ENDPOINTSLICE, "red", ES("10.128.2.2"), msg, sizeof(msg)), 403);	/* blue's pod */
	CHECK_CONTAINS(msg, "endpoints[1].addresses[0]: 10.128.2.2 is pod blue/b1");
	CHECK_EQ(put(&fx, KIND_ENDPOINTSLICE, "red", ES("10.128.0.99"), msg, sizeof(msg)), 403);	/* nobody's */
	CHECK_CONTAINS(msg, "10.128.0.99 is inside the cluster network (10.128.0.0/14) but is no pod's address");
	CHECK_STR(slices(&fx, "red", "", NULL), "");
	fx_close(&fx);
#undef ES
}

/* ---- randomized: the index against a recomputation from the store ---- */

static uint64_t rng;
static uint32_t rnd(uint32_t n) { return test_rnd(&rng, n); }

static const char *const nss[] = { "red", "blue" };
static const char *const apps[] = { "a", "b", "c" };

/* What every selector Service's Endpoints must hold, computed from every
 * pod in the store: "ns/name" → subsets (absent for no Service). */
static json_t *naive(struct fixture *fx)
{
	json_t *want = json_object(), *svcs = NULL, *pods = NULL, *svc;
	int64_t rev;
	struct status st = { 0 };
	size_t i;

	if (registry_list(&fx->reg, K(KIND_SERVICE), NULL, &svcs, &rev, &st) ||
	    registry_list(&fx->reg, K(KIND_POD), NULL, &pods, &rev, &st))
		return NULL;
	json_array_foreach(svcs, i, svc) {
		const json_t *sel = json_object_get(json_object_get(svc, "spec"), "selector");
		size_t n = json_array_size(pods);
		const json_t **all = malloc((n ? n : 1) * sizeof(*all));
		char key[600];
		json_t *s;

		if (!json_object_size(sel)) {
			free(all);
			continue;
		}
		for (size_t j = 0; j < n; j++)
			all[j] = json_array_get(pods, j);
		s = model_endpoints_subsets(svc, all, n, ENDPOINTS_MAX_ADDRESSES, NULL);
		free(all);
		snprintf(key, sizeof(key), "%s/%s", obj_namespace(svc), obj_name(svc));
		json_object_set_new(want, key, s);
	}
	json_decref(svcs);
	json_decref(pods);
	return want;
}

/* The stored Endpoints the controller manages, in the same shape. */
static json_t *stored(struct fixture *fx)
{
	json_t *have = json_object(), *eps = NULL, *ep;
	int64_t rev;
	struct status st = { 0 };
	size_t i;

	if (registry_list(&fx->reg, K(KIND_ENDPOINTS), NULL, &eps, &rev, &st))
		return NULL;
	json_array_foreach(eps, i, ep) {
		char key[600];
		json_t *s = json_object_get(ep, "subsets");

		snprintf(key, sizeof(key), "%s/%s", obj_namespace(ep), obj_name(ep));
		json_object_set_new(have, key, s ? json_incref(s) : json_array());
	}
	json_decref(eps);
	return have;
}

/* how many entries differ between two "key → subsets" maps */
static size_t changed(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach((json_t *)a, k, v)
		n += !json_equal(v, json_object_get(b, k));
	json_object_foreach((json_t *)b, k, v)
		n += !json_object_get(a, k);
	return n;
}

static void random_write(struct fixture *fx, char *what, size_t len)
{
	const char *ns = nss[rnd(2)];
	char name[16];
	uint32_t op = rnd(10);
	json_t *o = NULL;

	if (op < 6) {
		char ip[IP4_STRLEN];
		json_t *labels = json_pack("{s:s}", "app", apps[rnd(3)]), *status = json_object();

		snprintf(name, sizeof(name), "p%u", rnd(12));
		if (rnd(2))
			json_object_set_new(labels, "tier", json_string("t"));
		/* shared IPs are tried on purpose: a second pod is refused (409) */
		ip4_format(0x0a800002u + rnd(20), ip);
		if (rnd(5))
			json_object_set_new(status, "podIP", json_string(ip));
		json_object_set_new(status, "phase", json_string(rnd(4) ? "Running" : "Pending"));
		o = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:s, s:[{s:s, s:[{s:s, s:i}]}]}, s:o}", "apiVersion", "v1",
			      "kind", "Pod", "metadata", "name", name, "labels", labels, "spec", "nodeName", "node-1",
			      "containers", "name", "c", "ports", "name", "http", "containerPort", 8000 + (int)rnd(2),
			      "status", status);
		snprintf(what, len, "pod %s/%s", ns, name);
	} else if (op < 7) {
		snprintf(name, sizeof(name), "p%u", rnd(12));
		(void)del(fx, KIND_POD, ns, name);
		snprintf(what, len, "delete pod %s/%s", ns, name);
	} else if (op < 9) {
		json_t *spec;

		snprintf(name, sizeof(name), "s%u", rnd(5));
		o = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:i}]}}", "apiVersion", "v1", "kind", "Service", "metadata",
			      "name", name, "spec", "ports", "port", 80);
		spec = json_object_get(o, "spec");
		json_object_set_new(json_array_get(json_object_get(spec, "ports"), 0), "targetPort",
				    rnd(2) ? json_string("http") : json_integer(8000));
		if (rnd(5)) {
			json_t *sel = json_pack("{s:s}", "app", apps[rnd(3)]);

			if (rnd(3) == 0)
				json_object_set_new(sel, "tier", json_string("t"));
			json_object_set_new(spec, "selector", sel);
		}
		snprintf(what, len, "service %s/%s", ns, name);
	} else {
		snprintf(name, sizeof(name), "s%u", rnd(5));
		(void)del(fx, KIND_SERVICE, ns, name);
		snprintf(what, len, "delete service %s/%s", ns, name);
	}
	if (o) {
		char *text = json_dumps(o, JSON_COMPACT);

		if (put(fx, obj_kind(o)[0] == 'P' ? KIND_POD : KIND_SERVICE, ns, text, NULL, 0) != 0)
			snprintf(what + strlen(what), len - strlen(what), " (refused)");
		free(text);
		json_decref(o);
	}
}

/* The managed slices of every Service agree with want (naive's): the same
 * endpoints by port list, none twice, every slice of 1..max.  NULL when
 * they do, else what differs (static). */
static const char *slices_disagree(struct fixture *fx, const json_t *want, size_t max)
{
	static char why[1024];
	json_t *items = NULL, *have = json_object(), *expect = json_object(), *sl, *e, *ss;
	const char *key;
	int64_t rev;
	struct status st = { 0 };
	size_t i, j;
	const char *rc = NULL;

	if (registry_list(&fx->reg, K(KIND_ENDPOINTSLICE), NULL, &items, &rev, &st))
		return "list failed";
	json_array_foreach(items, i, sl) {
		const json_t *labels = json_object_get(json_object_get(sl, "metadata"), "labels");
		const char *svc = json_string_value(json_object_get(labels, ENDPOINTSLICE_SERVICE_LABEL));
		json_t *ports = model_endpointslice_ports(json_object_get(sl, "ports")), *g, *m;
		char *group = model_endpointslice_group(ports);
		char k[600];
		size_t n = json_array_size(json_object_get(sl, "endpoints"));

		json_decref(ports);
		snprintf(k, sizeof(k), "%s/%s", obj_namespace(sl), svc ? svc : "?");
		if (!n || n > max) {
			snprintf(why, sizeof(why), "slice %s/%s has %zu endpoints", obj_namespace(sl), obj_name(sl), n);
			rc = why;
		}
		if (!(m = json_object_get(have, k)))
			json_object_set_new(have, k, m = json_object());
		if (!(g = json_object_get(m, group)))
			json_object_set_new(m, group, g = json_object());
		free(group);
		json_array_foreach(json_object_get(sl, "endpoints"), j, e) {
			const char *ip = model_endpointslice_endpoint_key(e);

			if (json_object_get(g, ip)) {
				snprintf(why, sizeof(why), "%s twice in the slices of %s", ip, k);
				rc = why;
			}
			json_object_set(g, ip, e);
		}
	}
	json_object_foreach((json_t *)want, key, ss) {
		json_t *groups = model_endpointslice_groups(ss), *g, *m = json_object();
		const char *gk;

		json_object_foreach(groups, gk, g)
			json_object_set(m, gk, json_object_get(g, "endpoints"));
		json_decref(groups);
		if (json_object_size(m))
			json_object_set(expect, key, m);
		json_decref(m);
	}
	if (!rc && !json_equal(have, expect)) {
		char *a = json_dumps(expect, JSON_COMPACT), *b = json_dumps(have, JSON_COMPACT);

		snprintf(why, sizeof(why), "slices: want %.200s have %.200s", a, b);
		free(a);
		free(b);
		rc = why;
	}
	json_decref(items);
	json_decref(have);
	json_decref(expect);
	return rc;
}

TEST(endpoints_randomized_against_recomputation)
{
	struct fixture fx;
	json_t *before;

	rng = test_seed() | 1;
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(endpoints_ctl_set_slice_capacity(fx.reg.endpoints, 3) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	before = naive(&fx);
	CHECK(before);
	for (int step = 0; step < 600; step++) {
		char what[128];
		uint64_t w0 = fx.metrics.endpoints_writes + fx.metrics.endpoints_deletes, w;
		json_t *want, *have;

		random_write(&fx, what, sizeof(what));
		want = naive(&fx);
		have = stored(&fx);
		CHECK(want && have);
		w = fx.metrics.endpoints_writes + fx.metrics.endpoints_deletes - w0;
		if (!json_equal(want, have) || w != changed(before, want)) {
			char *a = json_dumps(want, JSON_COMPACT), *b = json_dumps(have, JSON_COMPACT);
			test_fail(__FILE__, __LINE__, "step %d (%s): %llu writes for %zu changes\n want %s\n have %s",
				  step, what, (unsigned long long)w, changed(before, want), a, b);
			free(a);
			free(b);
		}
		if (!test_failed() && slices_disagree(&fx, want, 3))
			test_fail(__FILE__, __LINE__, "step %d (%s): %s", step, what, slices_disagree(&fx, want, 3));
		json_decref(before);
		json_decref(have);
		before = want;
		if (test_failed())
			break;
	}
	json_decref(before);
	CHECK_EQ(fx.metrics.endpoints_failures, 0);
	CHECK_EQ(fx.metrics.endpointslice_failures, 0);
	fx_close(&fx);
}
