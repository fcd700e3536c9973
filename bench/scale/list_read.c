/*
 * list_read.c — what an agent pays to read a list, through a view of its
 * text (lib/jview.h) against jansson's tree, measured in the same run.
 *
 *   build/release/bench/scale/list_read
 *
 * The lists are those of a cold start at 1,000 nodes: 1,000 Services
 * (ClusterIP, two ports, labels, an annotation) and 1,000 EndpointSlices
 * (three endpoints with their targetRef and conditions), written as the
 * controller writes them.  Each is read REPS times both ways: parsed, the
 * fields the agent applies an object from read for every item (its name,
 * namespace and resourceVersion; a Service's clusterIP, type and each
 * port's protocol, port and name; a slice's service label, addressType,
 * ports and each endpoint's address, ready condition and targetRef),
 * then freed.  The two reads must find the same fields (a checksum of
 * what was read), or the bench fails.
 *
 * Times are the thread's CPU time, the best of REPS.  Output: µs per list
 * and MB/s each way, the ratio, then "GOAL list_read_vs_jansson: R (goal
 * >= 5)": the view reads the Services list at least 5 times faster.
 * Exit 0 when measured.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lib/jview.h"

#define ITEMS 1000
#define REPS 30
#define GOAL 5.0

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t mix(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h * 31 + 7;
}

static char *services(void)
{
	size_t cap = ITEMS * 700 + 256, n = 0;
	char *t = malloc(cap);

	n += (size_t)sprintf(t + n, "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":"
			     "{\"resourceVersion\":\"123456\"},\"items\":[");
	for (int i = 0; i < ITEMS; i++)
		n += (size_t)sprintf(t + n, "%s{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
				     "\"svc-%d\",\"namespace\":\"hollow-%d\",\"uid\":\"6f1c2a4e-%04d-4c1e-9a3b-"
				     "2d5e8f7a9b%02d\",\"resourceVersion\":\"%d\",\"creationTimestamp\":"
				     "\"2026-11-27T20:57:01Z\",\"labels\":{\"app\":\"web-%d\",\"tier\":\"front\"},"
				     "\"annotations\":{\"weft.io/owner\":\"bench\"}},\"spec\":{\"type\":\"ClusterIP\","
				     "\"clusterIP\":\"172.30.%d.%d\",\"clusterIPs\":[\"172.30.%d.%d\"],\"ports\":"
				     "[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080},"
				     "{\"name\":\"dns\",\"protocol\":\"UDP\",\"port\":53,\"targetPort\":53}],"
				     "\"sessionAffinity\":\"None\",\"ipFamilies\":[\"IPv4\"]},\"status\":"
				     "{\"loadBalancer\":{}}}",
				     i ? "," : "", i, i % 10, i, i % 100, 1000 + i, i, i / 250, i % 250 + 1,
				     i / 250, i % 250 + 1);
	sprintf(t + n, "]}");
	return t;
}

static char *slices(void)
{
	size_t cap = ITEMS * 1300 + 256, n = 0;
	char *t = malloc(cap);

	n += (size_t)sprintf(t + n, "{\"kind\":\"EndpointSliceList\",\"apiVersion\":\"discovery.k8s.io/v1\","
			     "\"metadata\":{\"resourceVersion\":\"123456\"},\"items\":[");
	for (int i = 0; i < ITEMS; i++) {
		n += (size_t)sprintf(t + n, "%s{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
				     "\"metadata\":{\"name\":\"svc-%d-abcde\",\"namespace\":\"hollow-%d\","
				     "\"resourceVersion\":\"%d\",\"labels\":{\"kubernetes.io/service-name\":"
				     "\"svc-%d\",\"endpointslice.kubernetes.io/managed-by\":\"weft.io/controller\"}},"
				     "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\","
				     "\"port\":8080}],\"endpoints\":[",
				     i ? "," : "", i, i % 10, 2000 + i, i);
		for (int e = 0; e < 3; e++)
			n += (size_t)sprintf(t + n, "%s{\"addresses\":[\"172.20.%d.%d\"],\"conditions\":"
					     "{\"ready\":true,\"serving\":true,\"terminating\":false},"
					     "\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"hollow-%d\",\"name\":"
					     "\"pod-%d-%d\"}}",
					     e ? "," : "", (i * 3 + e) / 250, (i * 3 + e) % 250 + 1, i % 10, i, e);
		n += (size_t)sprintf(t + n, "]}");
	}
	sprintf(t + n, "]}");
	return t;
}

/* The fields of one item, through jansson. */
static uint64_t read_tree(const json_t *o, uint64_t h)
{
	const json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec"), *x;
	size_t i;

	h = mix(h, json_string_value(json_object_get(md, "name")));
	h = mix(h, json_string_value(json_object_get(md, "namespace")));
	h = mix(h, json_string_value(json_object_get(md, "resourceVersion")));
	h = mix(h, json_string_value(json_object_get(json_object_get(md, "labels"),
						     "kubernetes.io/service-name")));
	h = mix(h, json_string_value(json_object_get(spec, "clusterIP")));
	h = mix(h, json_string_value(json_object_get(spec, "type")));
	h = mix(h, json_string_value(json_object_get(o, "addressType")));
	json_array_foreach(json_object_get(json_is_object(spec) ? spec : o, "ports"), i, x) {
		h = mix(h, json_string_value(json_object_get(x, "protocol")));
		h = mix(h, json_string_value(json_object_get(x, "name")));
		h = h * 31 + (uint64_t)json_integer_value(json_object_get(x, "port"));
	}
	json_array_foreach(json_object_get(o, "endpoints"), i, x) {
		h = mix(h, json_string_value(json_array_get(json_object_get(x, "addresses"), 0)));
		h = h * 31 + json_is_false(json_object_get(json_object_get(x, "conditions"), "ready"));
		h = mix(h, json_string_value(json_object_get(json_object_get(x, "targetRef"), "namespace")));
	}
	return h;
}

/* The same fields, through a view. */
static uint64_t read_view(struct jval o, uint64_t h)
{
	struct jval md = jval_get(o, "metadata"), spec = jval_get(o, "spec");

	h = mix(h, jval_str(jval_get(md, "name")));
	h = mix(h, jval_str(jval_get(md, "namespace")));
	h = mix(h, jval_str(jval_get(md, "resourceVersion")));
	h = mix(h, jval_str(jval_get(jval_get(md, "labels"), "kubernetes.io/service-name")));
	h = mix(h, jval_str(jval_get(spec, "clusterIP")));
	h = mix(h, jval_str(jval_get(spec, "type")));
	h = mix(h, jval_str(jval_get(o, "addressType")));
	for (struct jval x = jval_first(jval_get(jval_is_object(spec) ? spec : o, "ports")); jval_ok(x);
	     x = jval_next(x)) {
		h = mix(h, jval_str(jval_get(x, "protocol")));
		h = mix(h, jval_str(jval_get(x, "name")));
		h = h * 31 + (uint64_t)jval_integer(jval_get(x, "port"));
	}
	for (struct jval x = jval_first(jval_get(o, "endpoints")); jval_ok(x); x = jval_next(x)) {
		h = mix(h, jval_str(jval_at(jval_get(x, "addresses"), 0)));
		h = h * 31 + jval_is_false(jval_path(x, "conditions.ready"));
		h = mix(h, jval_str(jval_path(x, "targetRef.namespace")));
	}
	return h;
}

static int measure(const char *what, const char *text, double *ratio)
{
	size_t len = strlen(text);
	double best_tree = 1e18, best_view = 1e18;
	uint64_t sum_tree = 0, sum_view = 0;

	for (int r = 0; r < REPS; r++) {
		double t0 = cpu_ns();
		json_t *j = json_loadb(text, len, 0, NULL);
		const json_t *it;
		size_t i;
		uint64_t h = 1;

		if (!j)
			return -1;
		json_array_foreach(json_object_get(j, "items"), i, it)
			h = read_tree(it, h);
		json_decref(j);
		double t1 = cpu_ns();
		struct jview v;

		if (jview_parse(&v, text, len, NULL) < 0)
			return -1;
		uint64_t g = 1;

		for (struct jval x = jval_first(jval_get(jview_root(&v), "items")); jval_ok(x); x = jval_next(x))
			g = read_view(x, g);
		jview_free(&v);
		double t2 = cpu_ns();

		if (t1 - t0 < best_tree)
			best_tree = t1 - t0;
		if (t2 - t1 < best_view)
			best_view = t2 - t1;
		sum_tree = h;
		sum_view = g;
	}
	if (sum_tree != sum_view) {
		fprintf(stderr, "scale-list-read: %s: the two reads found different fields\n", what);
		return -1;
	}
	*ratio = best_tree / best_view;
	printf("scale-list-read: %-15s %8zu bytes  jansson %8.0f us (%6.1f MB/s)  view %7.0f us (%7.1f MB/s)  "
	       "jansson / view %.1fx\n", what, len, best_tree / 1e3, (double)len / best_tree * 1e3,
	       best_view / 1e3, (double)len / best_view * 1e3, *ratio);
	return 0;
}

int main(void)
{
	char *svc = services(), *sl = slices();
	double r_svc = 0, r_sl = 0;
	int rc = measure("Services", svc, &r_svc) | measure("EndpointSlices", sl, &r_sl);

	free(svc);
	free(sl);
	if (rc) {
		fprintf(stderr, "scale-list-read: a list did not parse\n");
		return 1;
	}
	printf("GOAL list_read_vs_jansson: %.1f (goal >= %.0f) %s\n", r_svc, GOAL, r_svc >= GOAL ? "PASS" : "FAIL");
	return 0;
}
