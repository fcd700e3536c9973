/*
 * lb_test.c — the load-balancer model against docs/lb.md: FNV-1a vectors,
 * golden sets of Ingresses, Routes and Services whose every object name
 * and shard is written out by hand (computed apart from the code, from
 * the formulas), the behaviours (secure hosts, redirects, passthrough,
 * reencrypt, weights, missing Secrets, conflicts, target ports), and a
 * randomized check that every host lands in the VS its shard formula
 * names, whatever the shard size, with no name used twice.
 */
#include "model/lb.h"
#include "model/model.h"
#include "lib/base64.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CERT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define KEY "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"

struct cluster {
	json_t *services, *endpoints, *ingresses, *routes, *secrets, *nodes;
	struct lb_inputs in;
};

static void cluster_init(struct cluster *c)
{
	c->services = json_object();
	c->endpoints = json_object();
	c->ingresses = json_object();
	c->routes = json_object();
	c->secrets = json_object();
	c->nodes = json_object();
	c->in = (struct lb_inputs){ c->services, c->endpoints, c->ingresses, c->routes, c->secrets, c->nodes };
}

static void cluster_free(struct cluster *c)
{
	json_decref(c->services);
	json_decref(c->endpoints);
	json_decref(c->ingresses);
	json_decref(c->routes);
	json_decref(c->secrets);
	json_decref(c->nodes);
}

/* Adds every document of a YAML manifest to the cluster. */
static int add_yaml(struct cluster *c, const char *yaml)
{
	json_t **docs = NULL;
	size_t n = 0;
	char err[512];
	int rc = model_decode_manifest(yaml, strlen(yaml), &docs, &n, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "bad test manifest: %s\n", err);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const char *kind = obj_kind(docs[i]);
		json_t *map = !strcmp(kind, "Service") ? c->services
			: !strcmp(kind, "Endpoints") ? c->endpoints
			: !strcmp(kind, "Ingress") ? c->ingresses
			: !strcmp(kind, "Route") ? c->routes
			: !strcmp(kind, "Secret") ? c->secrets : c->nodes;
		char key[512];

		if (*obj_namespace(docs[i]))
			snprintf(key, sizeof(key), "%s/%s", obj_namespace(docs[i]), obj_name(docs[i]));
		else
			snprintf(key, sizeof(key), "%s", obj_name(docs[i]));
		json_object_set_new(map, key, docs[i]);
	}
	free(docs);
	return 0;
}

static void add_tls_secret(struct cluster *c, const char *ns, const char *name, const char *cert,
			   const char *key)
{
	char *crt = base64_encode(cert, strlen(cert)), *k = base64_encode(key, strlen(key)), id[256];

	snprintf(id, sizeof(id), "%s/%s", ns, name);
	json_object_set_new(c->secrets, id, json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s, s:s}}",
		"apiVersion", "v1", "kind", "Secret", "metadata", "name", name, "namespace", ns,
		"type", "kubernetes.io/tls", "data", "tls.crt", crt, "tls.key", k));
	free(crt);
	free(k);
}

/* One line per VS, then its groups, members, pools and redirects:
 * what the golden texts below are written in. */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *summary(const struct lb_result *r)
{
	char *buf = NULL;
	size_t len = 0, nvs = json_object_size(r->vs), k = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *name, **names = calloc(nvs + 1, sizeof(*names));
	json_t *vs, *x, *m, *s;
	size_t i, j;

	json_object_foreach(r->vs, name, vs)
		names[k++] = name;
	qsort(names, nvs, sizeof(*names), str_cmp);
	for (k = 0; k < nvs; k++) {
		const json_t *spec;

		name = names[k];
		vs = json_object_get(r->vs, name);
		spec = json_object_get(vs, "spec");
		const char *shard = json_string_value(json_object_get(obj_at(vs, "metadata.labels"), LB_LABEL_SHARD));
		fprintf(f, "VS %s %s", name, obj_str(spec, "type"));
		if (shard)
			fprintf(f, " shard=%s", shard);
		if (obj_str(spec, "parent"))
			fprintf(f, " parent=%s", obj_str(spec, "parent"));
		if (obj_str(spec, "sslKeyAndCertificate"))
			fprintf(f, " cert=%s", obj_str(spec, "sslKeyAndCertificate"));
		json_array_foreach(json_object_get(spec, "ports"), i, x)
			fprintf(f, " %s/%d", obj_str(x, "protocol"), (int)obj_int(x, "port", 0));
		fprintf(f, "\n");
		json_array_foreach(json_object_get(spec, "poolGroups"), i, x) {
			fprintf(f, "  group %s\n", obj_str(x, "name"));
			json_array_foreach(json_object_get(x, "members"), j, m)
				fprintf(f, "    %s label=%s ratio=%d\n", obj_str(m, "pool"),
					obj_str(m, "priorityLabel"), (int)obj_int(m, "ratio", -1));
		}
		json_array_foreach(json_object_get(spec, "pools"), i, x) {
			fprintf(f, "  pool %s %s", obj_str(x, "name"), obj_str(x, "protocol"));
			if (obj_at(x, "tls"))
				fprintf(f, " verify=%d", json_is_true(obj_at(x, "tls.verify")));
			if (obj_str(x, "tls.pkiProfile"))
				fprintf(f, " pki=%s", obj_str(x, "tls.pkiProfile"));
			json_array_foreach(json_object_get(x, "servers"), j, s)
				fprintf(f, " %s:%d", obj_str(s, "ip"), (int)obj_int(s, "port", 0));
			fprintf(f, "\n");
		}
		json_array_foreach(json_object_get(spec, "httpRedirects"), i, x)
			fprintf(f, "  redirect %s %s %d\n", obj_str(x, "name"), obj_str(x, "host"),
				(int)obj_int(x, "code", 0));
	}
	free(names);
	json_object_foreach(r->certs, name, x)
		fprintf(f, "CERT %s from %s %s/%s\n", name, obj_str(x, "spec.source.kind"),
			obj_str(x, "spec.source.namespace"), obj_str(x, "spec.source.name"));
	json_object_foreach(r->sources, name, x) {
		json_array_foreach(json_object_get(x, "problems"), i, m)
			fprintf(f, "PROBLEM %s %s %s: %s\n", name, obj_str(m, "host"),
				obj_str(m, "reason"), obj_str(m, "message"));
	}
	fclose(f);
	return buf;
}

static char *translate(struct cluster *c, const struct lb_config *cfg)
{
	struct lb_result r = { 0 };
	char *s;

	if (lb_translate(cfg, &c->in, &r))
		return strdup("(failed)");
	s = summary(&r);
	lb_result_clear(&r);
	return s;
}

static struct lb_config config(const char *shard_size, const char *cluster)
{
	struct lb_config cfg;
	json_t *cn = json_pack("{s:{s:s, s:s}}", "loadBalancer", "shardSize", shard_size,
			       "clusterName", cluster);

	lb_config_from_cluster(cn, &cfg);
	cfg.node_selector = NULL;
	json_decref(cn);
	return cfg;
}

/* The backends every case below uses. */
static const char *const BACKENDS =
	"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
	"spec: {ports: [{name: http, port: 80, targetPort: 8080}]}\n"
	"---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: web, namespace: shop}\n"
	"subsets: [{addresses: [{ip: 10.128.2.5}, {ip: 10.128.0.7}], ports: [{name: http, port: 8080}]}]\n"
	"---\napiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: shop}\n"
	"spec: {ports: [{name: http, port: 80, targetPort: 9090}, {name: admin, port: 81, targetPort: admin}]}\n"
	"---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: api, namespace: shop}\n"
	"subsets: [{addresses: [{ip: 10.128.0.9}], ports: [{name: http, port: 9090}, {name: admin, port: 9091}]}]\n"
	"---\napiVersion: v1\nkind: Service\nmetadata: {name: canary, namespace: shop}\n"
	"spec: {ports: [{name: http, port: 80, targetPort: 8080}]}\n"
	"---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: canary, namespace: shop}\n"
	"subsets: [{addresses: [{ip: 10.128.4.2}], ports: [{name: http, port: 8080}]}]\n";

TEST(lb_fnv1a32_vectors)
{
	CHECK_EQ(lb_fnv1a32(""), 0x811c9dc5u);
	CHECK_EQ(lb_fnv1a32("a"), 0xe40c292cu);
	CHECK_EQ(lb_fnv1a32("foobar"), 0xbf9cf968u);
	CHECK_EQ(lb_shard("foo.com", 8), 0u);
	CHECK_EQ(lb_shard("bar.com", 8), 1u);
	CHECK_EQ(lb_shard("secure.example.com", 8), 7u);
	CHECK_EQ(lb_shard("secure.example.com", 4), 3u);
	CHECK_EQ(lb_shard("secure.example.com", 1), 0u);
}

TEST(lb_config_defaults_and_sizes)
{
	struct lb_config cfg;
	json_t *cn = json_pack("{s:{s:s, s:s, s:s}}", "loadBalancer", "clusterName", "east",
			       "shardSize", "MEDIUM", "passthroughShardSize", "LARGE");

	lb_config_from_cluster(NULL, &cfg);
	CHECK_STR(cfg.cluster, "weft");
	CHECK_EQ(cfg.shards, 8u);
	CHECK_EQ(cfg.passthrough_shards, 1u);
	lb_config_from_cluster(cn, &cfg);
	CHECK_STR(cfg.cluster, "east");
	CHECK_EQ(cfg.shards, 4u);
	CHECK_EQ(cfg.passthrough_shards, 8u);
	CHECK_EQ(lb_shard_size("DEDICATED"), 0);
	CHECK_EQ(lb_shard_size("HUGE"), -1);
	json_decref(cn);
}

/* Insecure hosts: pools on the shared VS of the host's shard, one pool
 * group per VS, members by host then longest path first. */
TEST(lb_golden_insecure_ingress)
{
	struct cluster c;
	struct lb_config cfg = config("LARGE", "weft");
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: networking.k8s.io/v1\nkind: Ingress\n"
		"metadata: {name: store, namespace: shop, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
		"spec:\n  rules:\n"
		"  - host: foo.com\n    http:\n      paths:\n"
		"      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n"
		"      - {path: /api/v2, pathType: Prefix, backend: {service: {name: api, port: {name: http}}}}\n"
		"      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}\n"
		"  - host: bar.com\n    http:\n      paths:\n"
		"      - {path: /Cart, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n"), 0);
	got = translate(&c, &cfg);
	CHECK_STR(got,
		"VS weft--Shared-L7-0 SharedL7 shard=0 HTTP/80 HTTPS/443\n"
		"  group weft--Shared-L7-0\n"
		"    weft--foo.com_api_v2-shop-store label=foo.com/api/v2 ratio=100\n"
		"    weft--foo.com_api-shop-store label=foo.com/api ratio=100\n"
		"    weft--foo.com_-shop-store label=foo.com/ ratio=100\n"
		"  pool weft--foo.com_-shop-store HTTP 10.128.0.7:8080 10.128.2.5:8080\n"
		"  pool weft--foo.com_api-shop-store HTTP 10.128.0.9:9090\n"
		"  pool weft--foo.com_api_v2-shop-store HTTP 10.128.0.9:9090\n"
		"VS weft--Shared-L7-1 SharedL7 shard=1 HTTP/80 HTTPS/443\n"
		"  group weft--Shared-L7-1\n"
		"    weft--bar.com_Cart-shop-store label=bar.com/cart ratio=100\n"
		"  pool weft--bar.com_Cart-shop-store HTTP 10.128.0.7:8080 10.128.2.5:8080\n");
	free(got);
	cluster_free(&c);
}

/* A secure Ingress host: an SNI child under the shard's parent, one pool
 * group per path, the Secret's certificate, a 302 on the parent; a host
 * whose Secret is missing is not built and says why, the others are. */
TEST(lb_golden_secure_ingress_and_missing_secret)
{
	struct cluster c;
	struct lb_config cfg = config("LARGE", "weft");
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	add_tls_secret(&c, "shop", "secure-tls", CERT, KEY);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: networking.k8s.io/v1\nkind: Ingress\n"
		"metadata: {name: store, namespace: shop}\n"
		"spec:\n  tls:\n  - {hosts: [secure.example.com], secretName: secure-tls}\n"
		"  - {hosts: [a.example.com], secretName: not-there}\n"
		"  rules:\n"
		"  - host: secure.example.com\n    http:\n      paths:\n"
		"      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n"
		"      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}\n"
		"  - host: a.example.com\n    http:\n      paths:\n"
		"      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n"
		"  - host: b.example.com\n    http:\n      paths:\n"
		"      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n"), 0);
	got = translate(&c, &cfg);
	CHECK_STR(got,
		"VS weft--Shared-L7-2 SharedL7 shard=2 HTTP/80 HTTPS/443\n"
		"  group weft--Shared-L7-2\n"
		"    weft--b.example.com_-shop-store label=b.example.com/ ratio=100\n"
		"  pool weft--b.example.com_-shop-store HTTP 10.128.0.7:8080 10.128.2.5:8080\n"
		"VS weft--Shared-L7-7 SharedL7 shard=7 HTTP/80 HTTPS/443\n"
		"  redirect weft--Shared-L7-7 secure.example.com 302\n"
		"VS weft--secure.example.com SNIChild shard=7 parent=weft--Shared-L7-7 "
		"cert=weft--shop-secure-tls HTTPS/443\n"
		"  group weft--shop-secure.example.com_api-store\n"
		"    weft--shop-secure.example.com_api-store label=secure.example.com/api ratio=100\n"
		"  group weft--shop-secure.example.com_-store\n"
		"    weft--shop-secure.example.com_-store label=secure.example.com/ ratio=100\n"
		"  pool weft--shop-secure.example.com_-store HTTP 10.128.0.7:8080 10.128.2.5:8080\n"
		"  pool weft--shop-secure.example.com_api-store HTTP 10.128.0.9:9090\n"
		"CERT weft--shop-secure-tls from Secret shop/secure-tls\n"
		"PROBLEM Ingress/shop/store a.example.com SecretNotFound: "
		"host a.example.com: secret shop/not-there not found\n");
	free(got);

	/* the Secret appears: the host is built */
	add_tls_secret(&c, "shop", "not-there", CERT, KEY);
	got = translate(&c, &cfg);
	CHECK_CONTAINS(got, "VS weft--a.example.com SNIChild shard=3 parent=weft--Shared-L7-3 "
		       "cert=weft--shop-not-there HTTPS/443\n");
	CHECK_CONTAINS(got, "  redirect weft--Shared-L7-3 a.example.com 302\n");
	CHECK(!strstr(got, "PROBLEM"));
	free(got);

	/* an invalid one (no key) is not */
	add_tls_secret(&c, "shop", "not-there", CERT, "not a key");
	got = translate(&c, &cfg);
	CHECK(!strstr(got, "VS weft--a.example.com "));
	CHECK_CONTAINS(got, "PROBLEM Ingress/shop/store a.example.com SecretInvalid: host a.example.com: "
		       "Secret shop/not-there: needs a PEM certificate and a PEM private key\n");
	free(got);
	cluster_free(&c);
}

/* Routes: edge with alternates (ratios, 0 kept), Allow and Redirect,
 * passthrough with its -insecure companion, reencrypt with and without
 * a destination CA, targetPort by name, and a multi-port Service without
 * targetPort refused. */
TEST(lb_golden_routes)
{
	struct cluster c;
	struct lb_config cfg = config("LARGE", "weft");
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: edge, namespace: shop}\n"
		"spec:\n  host: edge.example.com\n  path: /shop\n"
		"  to: {kind: Service, name: web, weight: 80}\n"
		"  alternateBackends: [{kind: Service, name: canary, weight: 20}, {kind: Service, name: api, weight: 0}]\n"
		"  port: {targetPort: http}\n"
		"  tls: {termination: edge, insecureEdgeTerminationPolicy: Redirect,\n"
		"        certificate: \"" "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n" "\",\n"
		"        key: \"" "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n" "\"}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: pass, namespace: shop}\n"
		"spec:\n  host: pass.example.com\n  to: {kind: Service, name: web}\n"
		"  tls: {termination: passthrough, insecureEdgeTerminationPolicy: Redirect}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: re, namespace: shop}\n"
		"spec:\n  host: re.example.com\n  to: {kind: Service, name: web}\n"
		"  tls: {termination: reencrypt, destinationCACertificate: \"-----BEGIN CERTIFICATE-----\\nCA\\n-----END CERTIFICATE-----\\n\",\n"
		"        certificate: \"" "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n" "\",\n"
		"        key: \"" "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n" "\"}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: plain, namespace: shop}\n"
		"spec: {host: foo.com, to: {kind: Service, name: api}, port: {targetPort: 9091}}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: multi, namespace: shop}\n"
		"spec: {host: bar.com, to: {kind: Service, name: api}}\n"), 0);
	got = translate(&c, &cfg);
	CHECK_STR(got,
		"VS weft--Shared-L7-0 SharedL7 shard=0 HTTP/80 HTTPS/443\n"
		"  group weft--Shared-L7-0\n"
		"    weft--foo.com-shop-plain-api label=foo.com ratio=100\n"
		"  pool weft--foo.com-shop-plain-api HTTP 10.128.0.9:9091\n"
		"VS weft--Shared-L7-3 SharedL7 shard=3 HTTP/80 HTTPS/443\n"
		"  redirect weft--Shared-L7-3 edge.example.com 302\n"
		"VS weft--Shared-L7-7 SharedL7 shard=7 HTTP/80 HTTPS/443\n"
		"VS weft--Shared-Passthrough-0 Passthrough shard=0 TCP/443\n"
		"  group weft--pass.example.com\n"
		"    weft--pass.example.com-web label=pass.example.com ratio=100\n"
		"  pool weft--pass.example.com-web TCP 10.128.0.7:8080 10.128.2.5:8080\n"
		"VS weft--Shared-Passthrough-0-insecure PassthroughInsecure shard=0 parent=weft--Shared-Passthrough-0 HTTP/80\n"
		"  redirect weft--Shared-Passthrough-0-insecure pass.example.com 302\n"
		"VS weft--edge.example.com SNIChild shard=3 parent=weft--Shared-L7-3 cert=weft--edge.example.com HTTPS/443\n"
		"  group weft--shop-edge.example.com_shop-edge\n"
		"    weft--shop-edge.example.com_shop-edge-api label=edge.example.com/shop ratio=0\n"
		"    weft--shop-edge.example.com_shop-edge-canary label=edge.example.com/shop ratio=20\n"
		"    weft--shop-edge.example.com_shop-edge-web label=edge.example.com/shop ratio=80\n"
		"  pool weft--shop-edge.example.com_shop-edge-api HTTP 10.128.0.9:9090\n"
		"  pool weft--shop-edge.example.com_shop-edge-canary HTTP 10.128.4.2:8080\n"
		"  pool weft--shop-edge.example.com_shop-edge-web HTTP 10.128.0.7:8080 10.128.2.5:8080\n"
		"VS weft--re.example.com SNIChild shard=7 parent=weft--Shared-L7-7 cert=weft--re.example.com HTTPS/443\n"
		"  group weft--shop-re.example.com-re\n"
		"    weft--shop-re.example.com-re-web label=re.example.com ratio=100\n"
		"  pool weft--shop-re.example.com-re-web HTTPS verify=1 pki=weft--shop-re.example.com-re-web-pkiprofile"
		" 10.128.0.7:8080 10.128.2.5:8080\n"
		"CERT weft--edge.example.com from Route shop/edge\n"
		"CERT weft--re.example.com from Route shop/re\n"
		"PROBLEM Route/shop/multi bar.com PortNotFound: service shop/api has 2 ports: "
		"spec.port.targetPort must name one\n");
	free(got);
	cluster_free(&c);
}

/* The shard size and the cluster name move hosts, by the formula alone. */
TEST(lb_golden_shard_sizes_and_cluster_name)
{
	static const char *const ing =
		"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: shop}\n"
		"spec:\n  rules:\n"
		"  - host: secure.example.com\n    http: {paths: [{path: /, pathType: Prefix, "
		"backend: {service: {name: web, port: {number: 80}}}}]}\n";
	struct cluster c;
	struct lb_config medium = config("MEDIUM", "east"), small = config("SMALL", "weft");
	struct lb_config dedicated = config("DEDICATED", "weft");
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	CHECK_EQ(add_yaml(&c, ing), 0);
	got = translate(&c, &medium);
	CHECK_CONTAINS(got, "VS east--Shared-L7-3 SharedL7 shard=3 HTTP/80 HTTPS/443\n"
		       "  group east--Shared-L7-3\n    east--secure.example.com_-shop-i label=secure.example.com/");
	free(got);
	got = translate(&c, &small);
	CHECK_CONTAINS(got, "VS weft--Shared-L7-0 SharedL7 shard=0 ");
	free(got);
	got = translate(&c, &dedicated);
	CHECK_STR(got, "VS weft--secure.example.com-L7-dedicated Dedicated HTTP/80\n"
		  "  group weft--secure.example.com-L7-dedicated\n"
		  "    weft--secure.example.com_-shop-i label=secure.example.com/ ratio=100\n"
		  "  pool weft--secure.example.com_-shop-i HTTP 10.128.0.7:8080 10.128.2.5:8080\n");
	free(got);
	cluster_free(&c);
}

/* A Service of type LoadBalancer: its L4 VS with its VIP, a pool per port. */
TEST(lb_golden_l4_service)
{
	struct cluster c;
	struct lb_config cfg = config("LARGE", "weft");
	struct lb_result r = { 0 };
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: v1\nkind: Service\nmetadata: {name: dns, namespace: infra}\n"
		"spec: {type: LoadBalancer, ports: [{name: tcp, port: 53, protocol: TCP, targetPort: 5353},"
		" {name: udp, port: 53, protocol: UDP}]}\n"
		"status: {loadBalancer: {ingress: [{ip: 192.168.201.7}]}}\n"
		"---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: dns, namespace: infra}\n"
		"subsets: [{addresses: [{ip: 10.128.0.3}], ports: [{name: tcp, port: 5353}, {name: udp, port: 53, protocol: UDP}]}]\n"), 0);
	got = translate(&c, &cfg);
	CHECK_STR(got, "VS weft--infra-dns L4 TCP/53 UDP/53\n"
		  "  pool weft--infra-dns-TCP-53 TCP 10.128.0.3:5353\n"
		  "  pool weft--infra-dns-UDP-53 UDP 10.128.0.3:53\n");
	free(got);
	CHECK_EQ(lb_translate(&cfg, &c.in, &r), 0);
	CHECK_STR(obj_str(json_object_get(r.vs, "weft--infra-dns"), "spec.vip"), "192.168.201.7");
	lb_result_clear(&r);
	cluster_free(&c);
}

/* The oldest claim of a host and path wins; the younger one says why.  A
 * Route with Allow serves its host on port 80 too. */
TEST(lb_conflicts_oldest_wins_and_allow)
{
	struct cluster c;
	struct lb_config cfg = config("LARGE", "weft");
	char *got;

	cluster_init(&c);
	CHECK_EQ(add_yaml(&c, BACKENDS), 0);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: route.openshift.io/v1\nkind: Route\n"
		"metadata: {name: young, namespace: shop, creationTimestamp: '2026-02-01T00:00:00Z'}\n"
		"spec: {host: foo.com, path: /x, to: {kind: Service, name: canary}}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\n"
		"metadata: {name: old, namespace: shop, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
		"spec: {host: foo.com, path: /x, to: {kind: Service, name: web}}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\n"
		"metadata: {name: pass, namespace: shop, creationTimestamp: '2026-03-01T00:00:00Z'}\n"
		"spec: {host: foo.com, to: {kind: Service, name: web}, tls: {termination: passthrough}}\n"
		"---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: allow, namespace: shop}\n"
		"spec:\n  host: b.example.com\n  to: {kind: Service, name: web}\n"
		"  tls: {termination: edge, insecureEdgeTerminationPolicy: Allow,\n"
		"        certificate: \"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n\",\n"
		"        key: \"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\"}\n"), 0);
	got = translate(&c, &cfg);
	CHECK_CONTAINS(got, "    weft--foo.com_x-shop-old-web label=foo.com/x ratio=100\n");
	CHECK(!strstr(got, "young-canary"));
	CHECK_CONTAINS(got, "PROBLEM Route/shop/young foo.com PathConflict: foo.com/x is already served for "
		       "Route shop/old\n");
	CHECK_CONTAINS(got, "PROBLEM Route/shop/pass foo.com HostConflict: host foo.com is terminated by "
		       "Route shop/old\n");
	/* Allow: the SNI child and the plain pool on the parent, no redirect */
	CHECK_CONTAINS(got, "VS weft--b.example.com SNIChild shard=2 parent=weft--Shared-L7-2");
	CHECK_CONTAINS(got, "    weft--b.example.com-shop-allow-web label=b.example.com ratio=100\n");
	CHECK(!strstr(got, "redirect weft--Shared-L7-2"));
	free(got);
	cluster_free(&c);
}

/* Random hosts over every shard size: each host is served by the VS its
 * formula names (a reference FNV written here, apart from the code), and
 * no VS serves a host of another shard. */
TEST(lb_random_hosts_land_in_their_shard)
{
	static const char *const sizes[] = { "LARGE", "MEDIUM", "SMALL" };
	static const unsigned shards[] = { 8, 4, 1 };
	uint64_t seed = test_seed();

	for (int s = 0; s < 3; s++) {
		struct cluster c;
		struct lb_config cfg = config(sizes[s], "weft");
		struct lb_result r = { 0 };
		const char *key;
		json_t *src;
		int hosts = 0;

		cluster_init(&c);
		CHECK_EQ(add_yaml(&c, BACKENDS), 0);
		for (int i = 0; i < 200; i++) {
			char host[64], name[32], id[64];

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			snprintf(host, sizeof(host), "h%llx.example.com", (unsigned long long)(seed >> 20));
			snprintf(name, sizeof(name), "i%d", i);
			snprintf(id, sizeof(id), "shop/%s", name);
			json_object_set_new(c.ingresses, id, json_pack(
				"{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:{s:[{s:s, s:s, s:{s:{s:s, s:{s:i}}}}]}}]}}",
				"apiVersion", "networking.k8s.io/v1", "kind", "Ingress",
				"metadata", "name", name, "namespace", "shop",
				"spec", "rules", "host", host, "http", "paths", "path", "/", "pathType", "Prefix",
				"backend", "service", "name", "web", "port", "number", 80));
		}
		CHECK_EQ(lb_translate(&cfg, &c.in, &r), 0);
		json_object_foreach(r.sources, key, src) {
			const char *host, *vs_name;
			json_t *v;

			json_object_foreach(json_object_get(src, "hosts"), host, v) {
				uint32_t h = 2166136261u;
				char want[64];

				for (const char *p = host; *p; p++)
					h = (h ^ (uint8_t)*p) * 16777619u;
				snprintf(want, sizeof(want), "weft--Shared-L7-%u", h % shards[s]);
				vs_name = json_string_value(v);
				CHECK_STR(vs_name, want);
				hosts++;
			}
		}
		CHECK_EQ(hosts, 200);
		CHECK(json_object_size(r.vs) <= shards[s]);
		lb_result_clear(&r);
		cluster_free(&c);
	}
}

/* NodePort mode: members are the selected nodes' InternalIPs at the
 * Service port's nodePort. */
TEST(lb_nodeport_members_are_selected_nodes)
{
	struct cluster c;
	struct lb_config cfg;
	json_t *cn = json_pack("{s:{s:s, s:{s:s}}}", "loadBalancer", "serviceType", "NodePort",
			       "nodeSelector", "lb", "yes");
	char *got;

	cluster_init(&c);
	lb_config_from_cluster(cn, &cfg);
	CHECK(cfg.nodeport);
	CHECK_EQ(add_yaml(&c,
		"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
		"spec: {type: NodePort, ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080}]}\n"
		"---\napiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {lb: 'yes'}}\n"
		"status: {addresses: [{type: InternalIP, address: 192.168.200.11}, {type: Hostname, address: node-1}]}\n"
		"---\napiVersion: v1\nkind: Node\nmetadata: {name: node-2}\n"
		"status: {addresses: [{type: InternalIP, address: 192.168.200.12}]}\n"
		"---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: shop}\n"
		"spec: {rules: [{host: foo.com, http: {paths: [{path: /, pathType: Prefix, "
		"backend: {service: {name: web, port: {number: 80}}}}]}}]}\n"), 0);
	got = translate(&c, &cfg);
	CHECK_CONTAINS(got, "  pool weft--foo.com_-shop-i HTTP 192.168.200.11:30080\n");
	free(got);
	json_decref(cn);
	cluster_free(&c);
}
