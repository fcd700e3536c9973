/*
 * endpoints_test.c — Endpoints from pods: selector matching, readiness,
 * targetPort resolution (numbers, names, protocols), grouping into subsets
 * by port set, sorting, truncation; and a randomized cross-check of
 * model_endpoints_subsets against a naive reference that lists every
 * (pod, port) pair on its own.
 */
#include "model/model.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);

	if (!j)
		fprintf(stderr, "bad test JSON: %s: %s\n", e.text, s);
	return j;
}

/* compact JSON text of j (one of two static buffers, for CHECK_STR) */
static const char *text(const json_t *j)
{
	static char bufs[2][8192];
	static int which;
	char *buf = bufs[which++ % 2];
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;

	snprintf(buf, sizeof(bufs[0]), "%s", s ? s : "(null)");
	free(s);
	return buf;
}

static json_t *pod(const char *name, const char *ip, const char *labels, const char *extra_status)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"red\",\"labels\":%s},"
		 "\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"c\",\"ports\":["
		 "{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"},"
		 "{\"name\":\"dns\",\"containerPort\":5353,\"protocol\":\"UDP\"}]}]},"
		 "\"status\":{%s%s%s%s}}",
		 name, labels, ip ? "\"podIP\":\"" : "", ip ? ip : "", ip ? "\"" : "",
		 extra_status ? extra_status : "");
	return J(buf);
}

TEST(selector_matches_every_pair)
{
	json_t *sel = J("{\"app\":\"web\",\"tier\":\"fe\"}");
	json_t *yes = J("{\"app\":\"web\",\"tier\":\"fe\",\"x\":\"y\"}");
	json_t *no1 = J("{\"app\":\"web\"}"), *no2 = J("{\"app\":\"web\",\"tier\":\"be\"}");
	json_t *empty = J("{}");

	CHECK(model_selector_matches(sel, yes));
	CHECK(!model_selector_matches(sel, no1));
	CHECK(!model_selector_matches(sel, no2));
	CHECK(!model_selector_matches(sel, NULL));
	CHECK(!model_selector_matches(empty, yes));	/* an empty selector selects nothing */
	CHECK(!model_selector_matches(NULL, yes));
	json_decref(sel);
	json_decref(yes);
	json_decref(no1);
	json_decref(no2);
	json_decref(empty);
}

TEST(pod_readiness_rules)
{
	struct { const char *ip, *status; enum pod_endpoint_state want; } cases[] = {
		{ NULL, NULL, POD_ENDPOINT_NONE },
		{ "10.128.0.2", NULL, POD_ENDPOINT_READY },
		{ "10.128.0.2", ",\"phase\":\"Running\"", POD_ENDPOINT_READY },
		{ "10.128.0.2", ",\"phase\":\"Pending\"", POD_ENDPOINT_NOT_READY },
		{ "10.128.0.2", ",\"phase\":\"Succeeded\"", POD_ENDPOINT_NONE },
		{ "10.128.0.2", ",\"phase\":\"Failed\"", POD_ENDPOINT_NONE },
		{ "10.128.0.2", ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]", POD_ENDPOINT_NOT_READY },
		{ "10.128.0.2", ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]", POD_ENDPOINT_READY },
		{ "10.128.0.2", ",\"conditions\":[{\"type\":\"Other\",\"status\":\"False\"}]", POD_ENDPOINT_READY },
		{ "not-an-ip", NULL, POD_ENDPOINT_NONE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *p = pod("p", cases[i].ip, "{}", cases[i].status);

		CHECK(p);
		if (model_pod_endpoint_state(p) != cases[i].want)
			test_fail(__FILE__, __LINE__, "case %zu: state %d, want %d", i,
				  (int)model_pod_endpoint_state(p), (int)cases[i].want);
		json_decref(p);
	}
	json_t *p = pod("p", "10.128.0.2", "{}", NULL);
	json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
			    json_string("2024-01-01T00:00:00Z"));
	CHECK_EQ(model_pod_endpoint_state(p), POD_ENDPOINT_NOT_READY);
	json_decref(p);
}

TEST(target_port_numbers_names_and_protocols)
{
	json_t *p = pod("p", "10.128.0.2", "{}", NULL);
	json_t *by_num = J("{\"port\":80,\"targetPort\":9999}");
	json_t *no_target = J("{\"port\":80}");
	json_t *by_name = J("{\"port\":80,\"targetPort\":\"http\"}");
	json_t *udp_name = J("{\"port\":53,\"targetPort\":\"dns\",\"protocol\":\"UDP\"}");
	json_t *wrong_proto = J("{\"port\":53,\"targetPort\":\"dns\",\"protocol\":\"TCP\"}");
	json_t *missing = J("{\"port\":80,\"targetPort\":\"metrics\"}");

	CHECK_EQ(model_pod_target_port(p, by_num), 9999);
	CHECK_EQ(model_pod_target_port(p, no_target), 80);
	CHECK_EQ(model_pod_target_port(p, by_name), 8080);
	CHECK_EQ(model_pod_target_port(p, udp_name), 5353);
	CHECK_EQ(model_pod_target_port(p, wrong_proto), 0);
	CHECK_EQ(model_pod_target_port(p, missing), 0);
	json_decref(p);
	json_decref(by_num);
	json_decref(no_target);
	json_decref(by_name);
	json_decref(udp_name);
	json_decref(wrong_proto);
	json_decref(missing);
}

TEST(subsets_grouped_by_port_set_and_sorted)
{
	json_t *svc = J("{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"red\"},"
			"\"spec\":{\"selector\":{\"app\":\"web\"},\"ports\":["
			"{\"name\":\"http\",\"port\":80,\"targetPort\":\"http\",\"protocol\":\"TCP\"},"
			"{\"name\":\"metrics\",\"port\":9090,\"targetPort\":\"metrics\",\"protocol\":\"TCP\"}]}}");
	json_t *pods[6];
	json_t *subsets;
	bool truncated = true;

	pods[0] = pod("b", "10.128.0.10", "{\"app\":\"web\"}", NULL);
	pods[1] = pod("a", "10.128.0.9", "{\"app\":\"web\"}", NULL);
	pods[2] = pod("c", "10.128.2.3", "{\"app\":\"web\"}", ",\"phase\":\"Pending\"");
	pods[3] = pod("d", "10.128.0.4", "{\"app\":\"db\"}", NULL);	/* other labels */
	pods[4] = pod("e", NULL, "{\"app\":\"web\"}", NULL);		/* no IP yet */
	/* f has a metrics port: its port set differs */
	pods[5] = J("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"f\",\"namespace\":\"red\",\"labels\":{\"app\":\"web\"}},"
		    "\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"name\":\"http\",\"containerPort\":80},"
		    "{\"name\":\"metrics\",\"containerPort\":9100}]}]},\"status\":{\"podIP\":\"10.128.0.1\"}}");
	subsets = model_endpoints_subsets(svc, (const json_t *const *)pods, 6, 1000, &truncated);
	CHECK(subsets);
	CHECK(!truncated);
	/* f's port set (http 80, metrics 9100) sorts before 8080 alone */
	CHECK_STR(text(subsets),
		  "[{\"addresses\":[{\"ip\":\"10.128.0.1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"f\"}}],"
		  "\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\"},{\"name\":\"metrics\",\"port\":9100,\"protocol\":\"TCP\"}]},"
		  "{\"addresses\":[{\"ip\":\"10.128.0.9\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"a\"}},"
		  "{\"ip\":\"10.128.0.10\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"b\"}}],"
		  "\"notReadyAddresses\":[{\"ip\":\"10.128.2.3\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"c\"}}],"
		  "\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}]");
	json_decref(subsets);

	/* the same pods in another order give the same bytes */
	json_t *rev[6];
	for (int i = 0; i < 6; i++)
		rev[i] = pods[5 - i];
	json_t *a = model_endpoints_subsets(svc, (const json_t *const *)pods, 6, 1000, NULL);
	json_t *b = model_endpoints_subsets(svc, (const json_t *const *)rev, 6, 1000, NULL);
	CHECK(json_equal(a, b));
	json_decref(a);
	json_decref(b);

	/* truncation keeps the lowest IPs */
	subsets = model_endpoints_subsets(svc, (const json_t *const *)pods, 6, 2, &truncated);
	CHECK(truncated);
	CHECK_STR(text(subsets),
		  "[{\"addresses\":[{\"ip\":\"10.128.0.1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"f\"}}],"
		  "\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\"},{\"name\":\"metrics\",\"port\":9100,\"protocol\":\"TCP\"}]},"
		  "{\"addresses\":[{\"ip\":\"10.128.0.9\",\"nodeName\":\"node-1\",\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"a\"}}],"
		  "\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}]");
	json_decref(subsets);
	for (int i = 0; i < 6; i++)
		json_decref(pods[i]);
	json_decref(svc);
}

TEST(subsets_single_unnamed_port_publish_not_ready_and_headless)
{
	json_t *svc = J("{\"kind\":\"Service\",\"metadata\":{\"name\":\"s\",\"namespace\":\"red\"},"
			"\"spec\":{\"selector\":{\"app\":\"x\"},\"publishNotReadyAddresses\":true,"
			"\"ports\":[{\"port\":80,\"targetPort\":8080}]}}");
	json_t *p = pod("p", "10.128.0.2", "{\"app\":\"x\"}", ",\"phase\":\"Pending\"");
	json_t *other_ns = pod("q", "10.128.0.3", "{\"app\":\"x\"}", NULL);
	json_t *s;

	json_object_set_new(json_object_get(other_ns, "metadata"), "namespace", json_string("blue"));
	json_t *both[2] = { p, other_ns };
	s = model_endpoints_subsets(svc, (const json_t *const *)both, 2, 1000, NULL);
	CHECK_STR(text(s), "[{\"addresses\":[{\"ip\":\"10.128.0.2\",\"nodeName\":\"node-1\",\"targetRef\":"
			   "{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"p\"}}],"
			   "\"ports\":[{\"port\":8080,\"protocol\":\"TCP\"}]}]");
	json_decref(s);
	/* headless without ports: addresses, no ports */
	json_object_del(json_object_get(svc, "spec"), "ports");
	s = model_endpoints_subsets(svc, (const json_t *const *)both, 2, 1000, NULL);
	CHECK_STR(text(s), "[{\"addresses\":[{\"ip\":\"10.128.0.2\",\"nodeName\":\"node-1\",\"targetRef\":"
			   "{\"kind\":\"Pod\",\"namespace\":\"red\",\"name\":\"p\"}}]}]");
	json_decref(s);
	/* no pods: no subsets */
	s = model_endpoints_subsets(svc, NULL, 0, 1000, NULL);
	CHECK_STR(text(s), "[]");
	json_decref(s);
	json_decref(p);
	json_decref(other_ns);
	json_decref(svc);
}

/* ---- randomized cross-check ---- */

static uint64_t rng;
static uint32_t rnd(uint32_t n) { return test_rnd(&rng, n); }

static const char *const port_names[] = { "http", "https", "dns", "metrics" };
static const char *const protos[] = { "TCP", "UDP" };

static json_t *random_service(void)
{
	json_t *ports = json_array();
	uint32_t n = rnd(4);		/* 0 = headless without ports */
	json_t *sel = json_object();

	for (uint32_t i = 0; i < n; i++) {
		json_t *p = json_object();

		if (n > 1 || rnd(2))
			json_object_set_new(p, "name", json_string(port_names[i]));
		json_object_set_new(p, "port", json_integer(80 + i));
		json_object_set_new(p, "protocol", json_string(protos[rnd(2)]));
		if (rnd(2))
			json_object_set_new(p, "targetPort", json_string(port_names[rnd(4)]));
		else if (rnd(2))
			json_object_set_new(p, "targetPort", json_integer(8000 + rnd(3)));
		json_array_append_new(ports, p);
	}
	json_object_set_new(sel, "app", json_string(rnd(2) ? "a" : "b"));
	if (rnd(2))
		json_object_set_new(sel, "tier", json_string("t"));
	return json_pack("{s:s, s:{s:s, s:s}, s:{s:o, s:o, s:b}}", "kind", "Service", "metadata", "name", "s",
			 "namespace", "red", "spec", "selector", sel, "ports", ports, "publishNotReadyAddresses",
			 rnd(8) == 0);
}

static json_t *random_pod(int i)
{
	static const char *const phases[] = { NULL, "Running", "Pending", "Succeeded" };
	json_t *labels = json_object(), *ports = json_array(), *status = json_object();
	char name[16], ip[IP4_STRLEN];
	const char *phase = phases[rnd(4)];

	snprintf(name, sizeof(name), "p%d", i);
	json_object_set_new(labels, "app", json_string(rnd(3) ? "a" : "b"));
	if (rnd(2))
		json_object_set_new(labels, "tier", json_string("t"));
	for (int k = 0; k < 4; k++)
		if (rnd(2))
			json_array_append_new(ports, json_pack("{s:s, s:i, s:s}", "name", port_names[k],
							       "containerPort", 9000 + k * 10 + (int)rnd(2),
							       "protocol", protos[rnd(2)]));
	if (rnd(6)) {
		ip4_format(0x0a800000u + rnd(64), ip);	/* duplicates happen on purpose */
		json_object_set_new(status, "podIP", json_string(ip));
	}
	if (phase)
		json_object_set_new(status, "phase", json_string(phase));
	if (!rnd(5))
		json_object_set_new(status, "conditions",
				    json_pack("[{s:s, s:s}]", "type", "Ready", "status", rnd(2) ? "False" : "True"));
	return json_pack("{s:s, s:{s:s, s:s, s:o}, s:{s:[{s:s, s:o}]}, s:o}", "kind", "Pod", "metadata", "name",
			 name, "namespace", rnd(10) ? "red" : "blue", "labels", labels, "spec", "containers",
			 "name", "c", "ports", ports, "status", status);
}

/* The naive reference: one line per (pod, port) endpoint, every rule
 * spelled out again, sorted.  "ip pod ready name port proto". */
static json_t *reference(const json_t *svc, json_t **pods, size_t n)
{
	json_t *lines = json_object();	/* as a set */
	const json_t *spec = json_object_get(svc, "spec");
	const json_t *ports = json_object_get(spec, "ports");
	bool publish = json_is_true(json_object_get(spec, "publishNotReadyAddresses"));

	for (size_t i = 0; i < n; i++) {
		const json_t *p = pods[i], *sel = json_object_get(spec, "selector");
		const json_t *labels = json_object_get(json_object_get(p, "metadata"), "labels");
		const char *ip = obj_str(p, "status.podIP"), *phase = obj_str(p, "status.phase");
		const char *k;
		json_t *v;
		bool match = true, ready;
		char line[256];

		if (strcmp(obj_namespace(p), "red") != 0 || !ip)
			continue;
		json_object_foreach((json_t *)sel, k, v)
			match &= json_equal(json_object_get(labels, k), v);
		if (!match || (phase && !strcmp(phase, "Succeeded")))
			continue;
		ready = !phase || !strcmp(phase, "Running");
		const json_t *c = json_array_get(json_object_get(p, "status") ? json_object_get(json_object_get(p, "status"), "conditions") : NULL, 0);
		if (c && !strcmp(json_string_value(json_object_get(c, "status")), "False"))
			ready = false;
		ready |= publish;
		if (!json_array_size(ports)) {
			snprintf(line, sizeof(line), "%s %s %d - - -", ip, obj_name(p), ready);
			json_object_set_new(lines, line, json_true());
			continue;
		}
		size_t j;
		const json_t *sp;
		json_array_foreach(ports, j, sp) {
			const json_t *t = json_object_get(sp, "targetPort");
			const char *proto = json_string_value(json_object_get(sp, "protocol"));
			const char *name = json_string_value(json_object_get(sp, "name"));
			long num = 0;

			if (!t)
				num = (long)json_integer_value(json_object_get(sp, "port"));
			else if (json_is_integer(t))
				num = (long)json_integer_value(t);
			else {
				size_t q;
				const json_t *cp;
				json_array_foreach(json_object_get(json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "ports"), q, cp)
					if (!strcmp(json_string_value(json_object_get(cp, "name")), json_string_value(t)) &&
					    !strcmp(json_string_value(json_object_get(cp, "protocol")), proto))
						num = (long)json_integer_value(json_object_get(cp, "containerPort"));
			}
			if (!num)
				continue;
			snprintf(line, sizeof(line), "%s %s %d %s %ld %s", ip, obj_name(p), ready, name ? name : "-",
				 num, proto);
			json_object_set_new(lines, line, json_true());
		}
	}
	return lines;
}

/* The same lines from a computed result; checks the structure on the way:
 * addresses sorted by IP, an address in one subset only, distinct port
 * sets.  Returns NULL (after reporting) when the structure is wrong. */
static json_t *flatten(const json_t *subsets)
{
	json_t *lines = json_object(), *seen_pods = json_object(), *seen_portsets = json_object();
	size_t i;
	const json_t *ss;

	json_array_foreach(subsets, i, ss) {
		static const char *const lists[] = { "addresses", "notReadyAddresses" };
		const json_t *ports = json_object_get(ss, "ports");
		char *ps = json_dumps(ports ? ports : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);

		if (json_object_get(seen_portsets, ps)) {
			test_fail(__FILE__, __LINE__, "two subsets with ports %s", ps);
			free(ps);
			goto bad;
		}
		json_object_set_new(seen_portsets, ps, json_true());
		free(ps);
		for (int l = 0; l < 2; l++) {
			const json_t *addrs = json_object_get(ss, lists[l]), *a;
			uint32_t last = 0;
			size_t j, k;

			json_array_foreach(addrs, j, a) {
				const char *ip = json_string_value(json_object_get(a, "ip"));
				const char *name = obj_str(a, "targetRef.name");
				uint32_t v;

				if (ip4_parse(ip, &v) || v < last || !name || json_object_get(seen_pods, name)) {
					test_fail(__FILE__, __LINE__, "address %s of %s out of order or repeated", ip, name);
					goto bad;
				}
				last = v;
				json_object_set_new(seen_pods, name, json_true());
				if (!json_array_size(ports)) {
					char line[256];
					snprintf(line, sizeof(line), "%s %s %d - - -", ip, name, l == 0);
					json_object_set_new(lines, line, json_true());
				}
				const json_t *p;
				json_array_foreach(ports, k, p) {
					char line[256];
					const char *pn = json_string_value(json_object_get(p, "name"));
					snprintf(line, sizeof(line), "%s %s %d %s %lld %s", ip, name, l == 0, pn ? pn : "-",
						 (long long)json_integer_value(json_object_get(p, "port")),
						 json_string_value(json_object_get(p, "protocol")));
					json_object_set_new(lines, line, json_true());
				}
			}
		}
	}
	json_decref(seen_pods);
	json_decref(seen_portsets);
	return lines;
bad:
	json_decref(lines);
	json_decref(seen_pods);
	json_decref(seen_portsets);
	return NULL;
}

TEST(subsets_randomized_against_reference)
{
	rng = test_seed() | 1;
	for (int round = 0; round < 2000; round++) {
		json_t *svc = random_service();
		size_t n = rnd(12);
		json_t *pods[12];
		json_t *got, *want, *flat;

		for (size_t i = 0; i < n; i++)
			pods[i] = random_pod((int)i);
		got = model_endpoints_subsets(svc, (const json_t *const *)pods, n, 1000, NULL);
		want = reference(svc, pods, n);
		flat = got ? flatten(got) : NULL;
		if (!flat || !json_equal(flat, want)) {
			char *s = json_dumps(svc, JSON_COMPACT);
			test_fail(__FILE__, __LINE__, "round %d: service %s\n got %s\n want %s", round, s,
				  text(flat), text(want));
			free(s);
		}
		json_decref(got);
		json_decref(want);
		json_decref(flat);
		json_decref(svc);
		for (size_t i = 0; i < n; i++)
			json_decref(pods[i]);
		if (test_failed())
			return;
	}
}
