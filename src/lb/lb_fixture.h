/*
 * lb_fixture.h — objects for the lb unit tests: a shared VS whose pools
 * and servers the test chooses, an SNI child, a certificate; and a state
 * made from JSON texts.  Header-only (static), included by *_test.c.
 */
#ifndef WEFT_LB_FIXTURE_H
#define WEFT_LB_FIXTURE_H

#include "lb/layout.h"
#include "lb/state.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX_CERT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define FIX_KEY	 "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"

/* servers 10.0.<pool>.<i+1>:8080 for i in [0, n) where mask bit i is set
 * (n <= 64), as JSON */
static inline json_t *fix_servers(int pool, int n, unsigned long long mask)
{
	json_t *a = json_array();
	char ip[32];

	for (int i = 0; i < n; i++) {
		if (!(mask >> i & 1))
			continue;
		snprintf(ip, sizeof(ip), "10.0.%d.%d", pool, i + 1);
		json_array_append_new(a, json_pack("{s:s, s:i}", "ip", ip, "port", 8080));
	}
	return a;
}

/* the shared VS "weft--Shared-L7-0" on vip: a.example.com/api -> pool api
 * (api_servers), /api/v2 -> pool v2 (one server), redirects of the hosts
 * in redirect (NULL: none) */
static inline json_t *fix_shared(const char *vip, json_t *api_servers, const char *redirect)
{
	json_t *vs = json_pack(
		"{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:[{s:i, s:s}, {s:i, s:s}], s:[{s:s, s:[{s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:i}]}],"
		" s:[{s:s, s:s, s:o}, {s:s, s:s, s:[{s:s, s:i}]}]}}",
		"apiVersion", "lb.weft.io/v1", "kind", "VirtualService", "metadata", "name", "weft--Shared-L7-0",
		"spec", "type", "SharedL7", "vip", vip, "ports", "port", 80, "protocol", "HTTP", "port", 443, "protocol",
		"HTTPS", "poolGroups", "name", "weft--Shared-L7-0", "members", "pool", "api", "host", "a.example.com",
		"path", "/api", "ratio", 100, "pool", "v2", "host", "a.example.com", "path", "/api/v2", "ratio", 100,
		"pools", "name", "api", "protocol", "HTTP", "servers", api_servers, "name", "v2", "protocol", "HTTP",
		"servers", "ip", "10.0.9.1", "port", 8080);

	if (redirect)
		json_object_set_new(json_object_get(vs, "spec"), "httpRedirects",
				    json_pack("[{s:s, s:i, s:i, s:s}]", "host", redirect, "port", 80, "code", 302, "scheme",
					      "https"));
	return vs;
}

static inline json_t *fix_child(const char *host, const char *cert)
{
	char name[128], pool[128];

	snprintf(name, sizeof(name), "weft--%s", host);
	snprintf(pool, sizeof(pool), "weft--shop-%s-s", host);
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s, s:[s], s:s, s:[{s:s, s:[{s:s, s:s, s:i}]}],"
			 " s:[{s:s, s:s, s:[{s:s, s:i}]}]}}",
			 "apiVersion", "lb.weft.io/v1", "kind", "VirtualService", "metadata", "name", name, "spec",
			 "type", "SNIChild", "vip", "192.168.202.1", "parent", "weft--Shared-L7-0", "hosts", host,
			 "sslKeyAndCertificate", cert, "poolGroups", "name", pool, "members", "pool", pool, "host",
			 host, "ratio", 100, "pools", "name", pool, "protocol", "HTTP", "servers", "ip", "10.0.8.1",
			 "port", 8080);
}

static inline json_t *fix_cert(const char *name, const char *tag)
{
	char cert[256];

	snprintf(cert, sizeof(cert), "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n", tag);
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion", "lb.weft.io/v1", "kind",
			 "SSLKeyAndCertificate", "metadata", "name", name, "spec", "certificate", cert, "key", FIX_KEY);
}

/* a finished state of the objects (each consumed); NULL when one is
 * rejected */
static inline struct lb_state *fix_state(json_t **objs, size_t n)
{
	struct lb_state *s = lb_state_new();
	char err[256];
	bool bad = false;

	for (size_t i = 0; i < n; i++) {
		if (lb_state_add_json(s, objs[i], NULL, err, sizeof(err)) != 0) {
			fprintf(stderr, "fixture rejected: %s\n", err);
			bad = true;
		}
		json_decref(objs[i]);
	}
	lb_state_finish(s, NULL, 0);
	if (bad) {
		lb_state_free(s);
		return NULL;
	}
	return s;
}

#endif
