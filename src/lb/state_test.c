/*
 * state_test.c — parsing VirtualService and SSLKeyAndCertificate objects:
 * a good one in full, L4 skipped, each hostile field refused with the
 * object and field named (and the state unchanged), duplicates dropped,
 * and randomized damage of a good object never crashing or half-adding.
 */
#include "lb/lb_fixture.h"
#include "lb/state.h"
#include "test.h"

#include <errno.h>

TEST(state_parses_shared_vs_and_cert)
{
	json_t *objs[] = { fix_shared("192.168.202.1", fix_servers(1, 3, 7), "s.example.com"),
			   fix_cert("weft--shop-s-tls", "MIIB") };
	struct lb_state *s = fix_state(objs, 2);
	const struct lb_vs *vs;
	const struct lb_pool *api;

	CHECK(s);
	CHECK_EQ(s->n_vs, 1);
	CHECK_EQ(s->n_certs, 1);
	vs = lb_state_find_vs(s, "weft--Shared-L7-0");
	CHECK(vs && vs->type == LB_VS_SHARED_L7 && vs->has_vip);
	CHECK_EQ(vs->vip, 0xc0a8ca01u);
	CHECK_EQ(vs->n_ports, 2);
	CHECK_EQ(vs->ports[1].protocol, LB_PROTO_HTTPS);
	CHECK_EQ(vs->groups[0].n_members, 2);
	CHECK_STR(vs->groups[0].members[0].label, "a.example.com/api");	/* host + path when no priorityLabel */
	api = lb_vs_find_pool(vs, "api");
	CHECK(api && api->n_servers == 3 && api->monitor_http);
	CHECK_EQ(api->servers[0].ip, 0x0a000101u);
	CHECK_EQ(vs->n_redirects, 1);
	CHECK(vs->redirects[0].https && vs->redirects[0].code == 302);
	CHECK(lb_state_find_cert(s, "weft--shop-s-tls"));
	CHECK(!lb_state_find_cert(s, "absent"));
	lb_state_free(s);
}

TEST(state_skips_l4)
{
	struct lb_state *s = lb_state_new();
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion", "lb.weft.io/v1", "kind",
			      "VirtualService", "metadata", "name", "weft--ns-svc", "spec", "type", "L4", "vip",
			      "192.168.200.1");
	bool skipped = false;
	char err[256];

	CHECK(lb_state_add_json(s, o, &skipped, err, sizeof(err)) == 0);
	CHECK(skipped);
	CHECK_EQ(s->n_vs, 0);
	json_decref(o);
	lb_state_free(s);
}

/* set spec.FIELD (or, with a '.', a nested path into the first pool or
 * member) of a good VS to the JSON value text; the add must fail naming want */
static int refuses(const char *where, const char *value, const char *want)
{
	json_t *vs = fix_shared("192.168.202.1", fix_servers(1, 2, 3), NULL);
	json_t *spec = json_object_get(vs, "spec"), *target = spec, *v = json_loads(value, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	struct lb_state *s = lb_state_new();
	char err[512] = "";
	const char *field = where;
	int r, ok;

	if (strncmp(where, "pool.", 5) == 0) {
		target = json_array_get(json_object_get(spec, "pools"), 0);
		field = where + 5;
	} else if (strncmp(where, "member.", 7) == 0) {
		target = json_array_get(json_object_get(json_array_get(json_object_get(spec, "poolGroups"), 0), "members"), 0);
		field = where + 7;
	} else if (strncmp(where, "server.", 7) == 0) {
		target = json_array_get(json_object_get(json_array_get(json_object_get(spec, "pools"), 0), "servers"), 0);
		field = where + 7;
	}
	json_object_set_new(target, field, v);
	r = lb_state_add_json(s, vs, NULL, err, sizeof(err));
	ok = r == -EINVAL && s->n_vs == 0 && strstr(err, "VirtualService weft--Shared-L7-0") && strstr(err, want);
	if (!ok)
		fprintf(stderr, "  %s = %s: r=%d err=\"%s\" (want \"%s\")\n", where, value, r, err, want);
	json_decref(vs);
	lb_state_free(s);
	return ok;
}

TEST(state_refuses_hostile_fields)
{
	CHECK(refuses("vip", "\"192.168.202.300\"", "vip"));
	CHECK(refuses("vip", "\"fd00::1\"", "IPv6"));
	CHECK(refuses("vip", "7", "vip is not a string"));
	CHECK(refuses("type", "\"L5\"", "spec.type"));
	CHECK(refuses("ports", "[{\"port\": 0, \"protocol\": \"HTTP\"}]", "port"));
	CHECK(refuses("ports", "[{\"port\": 65536, \"protocol\": \"HTTP\"}]", "port"));
	CHECK(refuses("ports", "[1,2,3,4,5,6,7,8,9]", "ports has more entries"));
	CHECK(refuses("ports", "[{\"port\": 80, \"protocol\": \"SCTP\"}]", "protocol"));
	CHECK(refuses("hosts", "[\"A.example.com\"]", "hosts"));
	CHECK(refuses("hosts", "[\"*.example.com\"]", "hosts"));
	CHECK(refuses("member.path", "\"/a b\"", "member path"));
	CHECK(refuses("member.path", "\"api\"", "member path"));
	CHECK(refuses("member.path", "\"/a\\u0000b\"", "NUL"));
	CHECK(refuses("member.host", "\"a..example.com\"", "host"));
	CHECK(refuses("member.host", "\"-a.example.com\"", "host"));
	CHECK(refuses("member.ratio", "-1", "ratio"));
	CHECK(refuses("member.ratio", "2000000", "ratio"));
	CHECK(refuses("member.pool", "\"nope\"", "not in spec.pools"));
	CHECK(refuses("member.priorityLabel", "\"a b\"", "priorityLabel"));
	CHECK(refuses("pool.name", "\"a/b\"", "name"));
	CHECK(refuses("pool.protocol", "\"FTP\"", "protocol"));
	CHECK(refuses("pool.healthMonitor", "{\"type\": \"PING\"}", "healthMonitor"));
	CHECK(refuses("server.ip", "\"10.0.0\"", "ip"));
	CHECK(refuses("server.port", "\"80\"", "port"));
	CHECK(refuses("pool.servers", "[{\"ip\": \"10.0.0.1\", \"port\": 80}, {\"ip\": \"10.0.0.1\", \"port\": 80}]",
		      "listed twice"));
	CHECK(refuses("httpRedirects", "[{\"host\": \"b.example.com\", \"code\": 304}]", "code"));
	CHECK(refuses("httpRedirects", "[{\"host\": \"b.example.com\", \"scheme\": \"ftp\"}]", "scheme"));
	CHECK(refuses("poolGroups", "{}", "poolGroups is not an array"));
}

TEST(state_refuses_hostile_objects)
{
	static const char *bad[] = {
		"[]",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"x\"}}",
		"{\"apiVersion\": \"v1\", \"kind\": \"VirtualService\", \"metadata\": {\"name\": \"x\"}, \"spec\": {}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"VirtualService\", \"metadata\": {\"name\": \"a b\"}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"VirtualService\", \"metadata\": {}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"VirtualService\", \"metadata\": {\"name\": \"x\"}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"SSLKeyAndCertificate\", \"metadata\": {\"name\": \"c\"},"
		" \"spec\": {\"certificate\": \"not pem\", \"key\": \"k\"}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"SSLKeyAndCertificate\", \"metadata\": {\"name\": \"c\"},"
		" \"spec\": {\"certificate\": \"-----BEGIN CERTIFICATE-----x-----END CERTIFICATE-----\"}}",
		"{\"apiVersion\": \"lb.weft.io/v1\", \"kind\": \"VirtualService\", \"metadata\": {\"name\": \"c\"},"
		" \"spec\": {\"type\": \"SNIChild\", \"vip\": \"10.0.0.1\"}}",
	};
	struct lb_state *s = lb_state_new();
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = json_loads(bad[i], 0, NULL);

		if (!o) {
			test_fail(__FILE__, __LINE__, "fixture %zu is not JSON", i);
			break;
		}
		if (lb_state_add_json(s, o, NULL, err, sizeof(err)) != -EINVAL) {
			test_fail(__FILE__, __LINE__, "object %zu accepted", i);
			json_decref(o);
			break;
		}
		json_decref(o);
	}
	CHECK_EQ(s->n_vs + s->n_certs, 0);
	lb_state_free(s);
}

TEST(state_drops_duplicates_keeping_the_first)
{
	json_t *objs[] = { fix_cert("c", "FIRST"), fix_cert("c", "SECOND"), fix_cert("b", "B") };
	struct lb_state *s = lb_state_new();
	char report[512] = "", err[128];

	for (size_t i = 0; i < 3; i++) {
		CHECK(lb_state_add_json(s, objs[i], NULL, err, sizeof(err)) == 0);
		json_decref(objs[i]);
	}
	CHECK_EQ(lb_state_finish(s, report, sizeof(report)), 1);
	CHECK_EQ(s->n_certs, 2);
	CHECK_CONTAINS(lb_state_find_cert(s, "c")->certificate, "FIRST");
	CHECK_CONTAINS(report, "SSLKeyAndCertificate c: defined twice");
	lb_state_free(s);
}

/* replace a random node of the object by a random value, many times:
 * every add is 0 or -EINVAL, and a refusal adds nothing */
static void damage(json_t *o, uint64_t *rnd)
{
	static const char *values[] = { "null", "0", "-1", "\"\"", "[]", "{}", "\"x\"", "1e300", "true",
					"\"/\"", "\"10.0.0.1\"", "[{}]", "99999999999" };

	for (int depth = 0; depth < 8; depth++) {
		json_t *next = NULL;
		const char *key;
		json_t *v;
		size_t n = json_is_object(o) ? json_object_size(o) : json_is_array(o) ? json_array_size(o) : 0, i = 0,
		       pick;

		if (n == 0)
			return;
		pick = test_rnd(rnd, (uint32_t)n);
		if (json_is_array(o)) {
			next = json_array_get(o, pick);
			if (test_rnd(rnd, 3) == 0 || !(json_is_object(next) || json_is_array(next))) {
				json_array_set_new(o, pick, json_loads(values[test_rnd(rnd, 13)], JSON_DECODE_ANY, NULL));
				return;
			}
		} else {
			json_object_foreach(o, key, v) {
				if (i++ == pick) {
					next = v;
					break;
				}
			}
			if (test_rnd(rnd, 3) == 0 || !(json_is_object(next) || json_is_array(next))) {
				if (test_rnd(rnd, 4) == 0)
					json_object_del(o, key);
				else
					json_object_set_new(o, key,
							    json_loads(values[test_rnd(rnd, 13)], JSON_DECODE_ANY, NULL));
				return;
			}
		}
		o = next;
	}
}

TEST(state_survives_random_damage)
{
	uint64_t rnd = test_seed() | 1;
	int refused = 0;

	for (int i = 0; i < 3000; i++) {
		json_t *vs = fix_shared("192.168.202.1", fix_servers(1, 4, 15), "s.example.com");
		struct lb_state *s = lb_state_new();
		char err[256];
		int r;

		damage(vs, &rnd);
		if (test_rnd(&rnd, 2))
			damage(vs, &rnd);
		r = lb_state_add_json(s, vs, NULL, err, sizeof(err));
		if (r != 0 && r != -EINVAL) {
			test_fail(__FILE__, __LINE__, "add returned %d", r);
			i = 3000;
		}
		if (r == -EINVAL && s->n_vs != 0) {
			test_fail(__FILE__, __LINE__, "a refused object was added");
			i = 3000;
		}
		refused += r != 0;
		json_decref(vs);
		lb_state_free(s);
	}
	CHECK(refused > 100);
}
