/*
 * model_test.c — the kinds table and its lookups, API paths, accessors,
 * name rules, defaults, manifest decoding and the cluster configuration.
 * (The validation rules are in validate_test.c.)
 */
#include "lib/yaml.h"
#include "model/model.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *load(const char *yaml)
{
	json_t **docs = NULL;
	size_t n = 0;
	char e[256];
	json_t *v = NULL;

	if (yaml_decode_stream(yaml, strlen(yaml), &docs, &n, e, sizeof(e)) < 0) {
		fprintf(stderr, "    test YAML does not decode: %s\n", e);
		return NULL;
	}
	if (n == 1)
		v = json_incref(docs[0]);
	yaml_docs_free(docs, n);
	return v;
}

/* ---- kinds ---- */

TEST(kinds_table_matches_api_doc)
{
	static const struct {
		enum kind_id id;
		const char *kind, *api_version, *plural, *scope, *shortname;
	} want[] = {
		{ KIND_CLUSTERNETWORK, "ClusterNetwork", "network.openshift.io/v1", "clusternetworks", "cluster", "cn" },
		{ KIND_NODE, "Node", "v1", "nodes", "cluster", "no" },
		{ KIND_HOSTSUBNET, "HostSubnet", "network.openshift.io/v1", "hostsubnets", "cluster", "hs" },
		{ KIND_NAMESPACE, "Namespace", "v1", "namespaces", "cluster", "ns" },
		{ KIND_NETNAMESPACE, "NetNamespace", "network.openshift.io/v1", "netnamespaces", "cluster", "netns" },
		{ KIND_POD, "Pod", "v1", "pods", "namespaced", "po" },
		{ KIND_SERVICE, "Service", "v1", "services", "namespaced", "svc" },
		{ KIND_ENDPOINTS, "Endpoints", "v1", "endpoints", "namespaced", "ep" },
		{ KIND_NETWORKPOLICY, "NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", "namespaced", "netpol" },
		{ KIND_INGRESS, "Ingress", "networking.k8s.io/v1", "ingresses", "namespaced", "ing" },
		{ KIND_ROUTE, "Route", "route.openshift.io/v1", "routes", "namespaced", NULL },
		{ KIND_SECRET, "Secret", "v1", "secrets", "namespaced", NULL },
		{ KIND_VIRTUALSERVICE, "VirtualService", "lb.weft.io/v1", "virtualservices", "cluster", "vs" },
		{ KIND_SSLKEYCERT, "SSLKeyAndCertificate", "lb.weft.io/v1", "sslkeyandcertificates", "cluster", "sslkc" },
		{ KIND_ENDPOINTSLICE, "EndpointSlice", "discovery.k8s.io/v1", "endpointslices", "namespaced", NULL },
		{ KIND_PODPEERSLICE, "PodPeerSlice", "network.weft.io/v1", "podpeerslices", "cluster", "pps" },
		{ KIND_TRACEREQUEST, "TraceRequest", "network.weft.io/v1", "tracerequests", "cluster", NULL },
	};

	CHECK_EQ(sizeof(want) / sizeof(want[0]), KIND_COUNT);
	for (size_t i = 0; i < KIND_COUNT; i++) {
		const struct kind_info *k = kind_get(want[i].id);
		char gv[128];

		CHECK(k);
		CHECK_EQ(k->id, want[i].id);
		CHECK_STR(k->kind, want[i].kind);
		CHECK_STR(k->api_version, want[i].api_version);
		CHECK_STR(k->plural, want[i].plural);
		CHECK_EQ(k->namespaced, !strcmp(want[i].scope, "namespaced"));
		CHECK_STR(k->version, "v1");
		snprintf(gv, sizeof(gv), "%s%s%s", k->group, k->group[0] ? "/" : "", k->version);
		CHECK_STR(gv, k->api_version);
		if (want[i].shortname) {
			CHECK_STR(k->shortnames[0], want[i].shortname);
			CHECK(k->shortnames[1] == NULL);
		} else {
			CHECK(k->shortnames[0] == NULL);
		}
		CHECK_EQ(k->controller_owned,
			 want[i].id == KIND_HOSTSUBNET || want[i].id == KIND_NETNAMESPACE ||
			 want[i].id == KIND_VIRTUALSERVICE || want[i].id == KIND_SSLKEYCERT ||
			 want[i].id == KIND_PODPEERSLICE);
		CHECK(kind_by_kind(want[i].kind) == k);
	}
	CHECK(kind_get(KIND_COUNT) == NULL);
	CHECK(kind_get((enum kind_id)-1) == NULL);
}

TEST(kind_lookup_every_alias)
{
	static const struct {
		const char *name;
		enum kind_id id;
	} cases[] = {
		{ "clusternetwork", KIND_CLUSTERNETWORK }, { "clusternetworks", KIND_CLUSTERNETWORK },
		{ "cn", KIND_CLUSTERNETWORK }, { "ClusterNetwork", KIND_CLUSTERNETWORK },
		{ "node", KIND_NODE }, { "nodes", KIND_NODE }, { "no", KIND_NODE }, { "Node", KIND_NODE },
		{ "NODES", KIND_NODE },
		{ "hostsubnet", KIND_HOSTSUBNET }, { "hostsubnets", KIND_HOSTSUBNET },
		{ "hs", KIND_HOSTSUBNET }, { "HostSubnet", KIND_HOSTSUBNET },
		{ "namespace", KIND_NAMESPACE }, { "namespaces", KIND_NAMESPACE }, { "ns", KIND_NAMESPACE },
		{ "Namespace", KIND_NAMESPACE },
		{ "netnamespace", KIND_NETNAMESPACE }, { "netnamespaces", KIND_NETNAMESPACE },
		{ "netns", KIND_NETNAMESPACE }, { "NetNamespace", KIND_NETNAMESPACE },
		{ "pod", KIND_POD }, { "pods", KIND_POD }, { "po", KIND_POD }, { "Pod", KIND_POD },
		{ "service", KIND_SERVICE }, { "services", KIND_SERVICE }, { "svc", KIND_SERVICE },
		{ "Service", KIND_SERVICE }, { "SVC", KIND_SERVICE },
		{ "endpoints", KIND_ENDPOINTS }, { "ep", KIND_ENDPOINTS }, { "Endpoints", KIND_ENDPOINTS },
		{ "networkpolicy", KIND_NETWORKPOLICY }, { "networkpolicies", KIND_NETWORKPOLICY },
		{ "netpol", KIND_NETWORKPOLICY }, { "NetworkPolicy", KIND_NETWORKPOLICY },
		{ "ingress", KIND_INGRESS }, { "ingresses", KIND_INGRESS }, { "ing", KIND_INGRESS },
		{ "Ingress", KIND_INGRESS },
		{ "route", KIND_ROUTE }, { "routes", KIND_ROUTE }, { "Route", KIND_ROUTE },
		{ "secret", KIND_SECRET }, { "secrets", KIND_SECRET }, { "Secret", KIND_SECRET },
		{ "endpointslice", KIND_ENDPOINTSLICE }, { "endpointslices", KIND_ENDPOINTSLICE },
		{ "EndpointSlice", KIND_ENDPOINTSLICE },
		{ "podpeerslice", KIND_PODPEERSLICE }, { "podpeerslices", KIND_PODPEERSLICE },
		{ "PodPeerSlice", KIND_PODPEERSLICE }, { "pps", KIND_PODPEERSLICE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct kind_info *k = kind_lookup(cases[i].name);

		if (!k || k->id != cases[i].id) {
			test_fail(__FILE__, __LINE__, "kind_lookup(\"%s\")", cases[i].name);
			return;
		}
	}
	CHECK(kind_lookup("foo") == NULL);
	CHECK(kind_lookup("") == NULL);
	CHECK(kind_lookup(NULL) == NULL);
	CHECK(kind_lookup("po ") == NULL);
	CHECK(kind_by_kind("pod") == NULL);	/* manifests spell Kind exactly */
	CHECK(kind_by_kind(NULL) == NULL);
}

TEST(kind_by_resource_finds_url_names)
{
	CHECK(kind_by_resource("", "pods") == kind_get(KIND_POD));
	CHECK(kind_by_resource("", "endpoints") == kind_get(KIND_ENDPOINTS));
	CHECK(kind_by_resource("network.openshift.io", "hostsubnets") == kind_get(KIND_HOSTSUBNET));
	CHECK(kind_by_resource("networking.k8s.io", "networkpolicies") == kind_get(KIND_NETWORKPOLICY));
	CHECK(kind_by_resource("route.openshift.io", "routes") == kind_get(KIND_ROUTE));
	CHECK(kind_by_resource("discovery.k8s.io", "endpointslices") == kind_get(KIND_ENDPOINTSLICE));
	CHECK(kind_by_resource("network.weft.io", "podpeerslices") == kind_get(KIND_PODPEERSLICE));
	CHECK(kind_by_resource("", "routes") == NULL);
	CHECK(kind_by_resource("networking.k8s.io", "pods") == NULL);
	CHECK(kind_by_resource("", "pod") == NULL);
	CHECK(kind_by_resource(NULL, "pods") == NULL);
}

/* ---- API paths ---- */

TEST(api_paths)
{
	char buf[256];

	CHECK_EQ(model_api_path(kind_get(KIND_NODE), NULL, NULL, buf, sizeof(buf)), 13);
	CHECK_STR(buf, "/api/v1/nodes");
	CHECK(model_api_path(kind_get(KIND_POD), NULL, NULL, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/api/v1/pods");
	CHECK(model_api_path(kind_get(KIND_POD), "", NULL, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/api/v1/pods");
	CHECK(model_api_path(kind_get(KIND_POD), "red", NULL, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/api/v1/namespaces/red/pods");
	CHECK(model_api_path(kind_get(KIND_POD), "red", "web-1", buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/api/v1/namespaces/red/pods/web-1");
	CHECK(model_api_path(kind_get(KIND_HOSTSUBNET), NULL, "node-1", buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/apis/network.openshift.io/v1/hostsubnets/node-1");
	/* a namespace given for a cluster-scoped kind is ignored */
	CHECK(model_api_path(kind_get(KIND_NAMESPACE), "red", "red", buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/api/v1/namespaces/red");
	CHECK(model_api_path(kind_get(KIND_NETWORKPOLICY), "x", "p", buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/apis/networking.k8s.io/v1/namespaces/x/networkpolicies/p");
	CHECK(model_api_path(kind_get(KIND_ROUTE), "red", NULL, buf, sizeof(buf)) > 0);
	CHECK_STR(buf, "/apis/route.openshift.io/v1/namespaces/red/routes");
}

TEST(api_path_bounds)
{
	char buf[14];

	CHECK_EQ(model_api_path(kind_get(KIND_NODE), NULL, NULL, buf, sizeof(buf)), 13);
	CHECK_EQ(model_api_path(kind_get(KIND_NODE), NULL, NULL, buf, 13), -ENAMETOOLONG);
	CHECK_EQ(model_api_path(kind_get(KIND_NODE), NULL, "n", buf, sizeof(buf)), -ENAMETOOLONG);
	CHECK_EQ(model_api_path(kind_get(KIND_POD), "red", NULL, buf, sizeof(buf)), -ENAMETOOLONG);
	CHECK_EQ(model_api_path(NULL, NULL, NULL, buf, sizeof(buf)), -EINVAL);
}

/* ---- accessors ---- */

TEST(accessors_tolerate_missing_fields)
{
	json_t *o = load("kind: Service\nmetadata: {name: web, namespace: red}\n"
			 "spec: {clusterIP: 172.30.0.1, ports: [], sessionAffinityConfig: {clientIP: "
			 "{timeoutSeconds: 60}}, type: 3}\n");

	CHECK(o);
	CHECK_STR(obj_kind(o), "Service");
	CHECK_STR(obj_name(o), "web");
	CHECK_STR(obj_namespace(o), "red");
	CHECK_STR(obj_str(o, "spec.clusterIP"), "172.30.0.1");
	CHECK(obj_str(o, "spec.type") == NULL);
	CHECK(obj_str(o, "spec.clusterIP.x") == NULL);
	CHECK(obj_str(o, "spec.missing") == NULL);
	CHECK(obj_str(o, "spec.ports.0") == NULL);
	CHECK_EQ(obj_int(o, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", -1), 60);
	CHECK_EQ(obj_int(o, "spec.clusterIP", -1), -1);
	CHECK_EQ(obj_int(o, "nope.nope", 7), 7);
	json_decref(o);

	o = json_object();
	CHECK(obj_kind(o) == NULL);
	CHECK(obj_name(o) == NULL);
	CHECK_STR(obj_namespace(o), "");
	json_decref(o);
	CHECK(obj_kind(NULL) == NULL);
	CHECK_STR(obj_namespace(NULL), "");
	CHECK(obj_str(NULL, "a") == NULL);
	CHECK_EQ(obj_int(NULL, "a", 5), 5);
}

/* ---- names ---- */

TEST(name_rules)
{
	CHECK(model_dns1123_label("a"));
	CHECK(model_dns1123_label("a-1"));
	CHECK(model_dns1123_label("1a"));
	CHECK(!model_dns1123_label(""));
	CHECK(!model_dns1123_label("-a"));
	CHECK(!model_dns1123_label("a-"));
	CHECK(!model_dns1123_label("A"));
	CHECK(!model_dns1123_label("a.b"));
	CHECK(!model_dns1123_label("a_b"));
	CHECK(!model_dns1123_label(NULL));
	CHECK(model_dns1123_label("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));	/* 63 */
	CHECK(!model_dns1123_label("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));	/* 64 */

	CHECK(model_dns1123_subdomain("a.b-c.d"));
	CHECK(model_dns1123_subdomain("a"));
	CHECK(!model_dns1123_subdomain("a..b"));
	CHECK(!model_dns1123_subdomain(".a"));
	CHECK(!model_dns1123_subdomain("a."));
	CHECK(!model_dns1123_subdomain("a.-b"));
	CHECK(!model_dns1123_subdomain(""));
	{
		/* as Kubernetes' IsDNS1123Subdomain: 253 bytes, no bound per label */
		char name[256];

		memset(name, 'a', 253);
		name[253] = 0;
		CHECK(model_dns1123_subdomain(name));
		name[253] = 'a';
		name[254] = 0;
		CHECK(!model_dns1123_subdomain(name));
	}

	CHECK(model_dns1035_label("web"));
	CHECK(!model_dns1035_label("1web"));
	CHECK(!model_dns1035_label("web.x"));

	CHECK(model_label_key("app"));
	CHECK(model_label_key("App_1.x-y"));
	CHECK(model_label_key("example.com/App"));
	CHECK(model_label_key("kubernetes.io/metadata.name"));
	CHECK(!model_label_key(""));
	CHECK(!model_label_key("/a"));
	CHECK(!model_label_key("a/"));
	CHECK(!model_label_key("a/b/c"));
	CHECK(!model_label_key("_a"));
	CHECK(!model_label_key("Ex.com/a"));
	CHECK(model_label_value(""));
	CHECK(model_label_value("Web_1"));
	CHECK(!model_label_value("a b"));
	CHECK(!model_label_value("a/b"));

	CHECK(model_iana_svc_name("http"));
	CHECK(model_iana_svc_name("serve-80-tcp"));
	CHECK(model_iana_svc_name("8a"));
	CHECK(!model_iana_svc_name("80"));
	CHECK(!model_iana_svc_name("a--b"));
	CHECK(!model_iana_svc_name("-a"));
	CHECK(!model_iana_svc_name("a-"));
	CHECK(!model_iana_svc_name("A"));
	CHECK(!model_iana_svc_name("abcdefghijklmnop"));	/* 16 */
	CHECK(model_iana_svc_name("abcdefghijklmno"));		/* 15 */
}

/* ---- defaults ---- */

static json_t *defaulted(const char *yaml)
{
	json_t *o = load(yaml);
	char err[1024];

	if (!o)
		return NULL;
	if (model_validate(o, err, sizeof(err)) < 0) {
		fprintf(stderr, "    test object does not validate: %s\n", err);
		json_decref(o);
		return NULL;
	}
	model_default(o);
	if (model_validate(o, err, sizeof(err)) < 0) {
		fprintf(stderr, "    defaulted object does not validate: %s\n", err);
		json_decref(o);
		return NULL;
	}
	return o;
}

TEST(defaults_service)
{
	json_t *o = defaulted("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
			      "spec: {ports: [{name: a, port: 80}, {name: b, port: 53, protocol: UDP, "
			      "targetPort: dns}]}\n");

	CHECK(o);
	CHECK_STR(obj_str(o, "spec.type"), "ClusterIP");
	CHECK_STR(obj_str(o, "spec.sessionAffinity"), "None");
	CHECK_STR(obj_str(o, "spec.internalTrafficPolicy"), "Cluster");
	CHECK(obj_str(o, "spec.externalTrafficPolicy") == NULL);
	json_t *ports = json_object_get(json_object_get(o, "spec"), "ports");
	CHECK_STR(obj_str(json_array_get(ports, 0), "protocol"), "TCP");
	CHECK_EQ(obj_int(json_array_get(ports, 0), "targetPort", -1), 80);
	CHECK_STR(obj_str(json_array_get(ports, 1), "protocol"), "UDP");
	CHECK_STR(obj_str(json_array_get(ports, 1), "targetPort"), "dns");
	json_decref(o);

	o = defaulted("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
		      "spec: {type: NodePort, sessionAffinity: ClientIP, ports: [{port: 80}]}\n");
	CHECK(o);
	CHECK_STR(obj_str(o, "spec.externalTrafficPolicy"), "Cluster");
	CHECK_EQ(obj_int(o, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", 0), 10800);
	json_decref(o);

	/* no affinity: its config goes (an apply that dropped ClientIP) */
	o = defaulted("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
		      "spec: {ports: [{port: 80}], sessionAffinityConfig: {clientIP: "
		      "{timeoutSeconds: 10800}}}\n");
	CHECK(o);
	CHECK_STR(obj_str(o, "spec.sessionAffinity"), "None");
	CHECK(!json_object_get(json_object_get(o, "spec"), "sessionAffinityConfig"));
	json_decref(o);

	o = defaulted("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
		      "spec: {type: LoadBalancer, externalTrafficPolicy: Local, ports: [{port: 80}]}\n");
	CHECK(o);
	CHECK_STR(obj_str(o, "spec.externalTrafficPolicy"), "Local");
	json_decref(o);
}

TEST(defaults_pod_secret_endpoints)
{
	json_t *o = defaulted("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"
			      "spec: {containers: [{name: w, ports: [{containerPort: 80}, "
			      "{containerPort: 53, protocol: UDP}]}]}\n");
	json_t *ports;

	CHECK(o);
	ports = json_object_get(json_array_get(json_object_get(json_object_get(o, "spec"),
								  "containers"), 0), "ports");
	CHECK_STR(obj_str(json_array_get(ports, 0), "protocol"), "TCP");
	CHECK_STR(obj_str(json_array_get(ports, 1), "protocol"), "UDP");
	json_decref(o);

	o = defaulted("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n");
	CHECK(o);
	CHECK_STR(obj_str(o, "type"), "Opaque");
	json_decref(o);

	o = defaulted("apiVersion: v1\nkind: Endpoints\nmetadata: {name: e}\n"
		      "subsets: [{ports: [{port: 80}]}]\n");
	CHECK(o);
	CHECK_STR(obj_str(json_array_get(json_object_get(json_array_get(json_object_get(o, "subsets"), 0),
							 "ports"), 0), "protocol"), "TCP");
	json_decref(o);
}

TEST(defaults_route)
{
	json_t *o = defaulted("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r}\n"
			      "spec: {to: {name: web}, alternateBackends: [{name: b, weight: 0}]}\n");

	CHECK(o);
	CHECK_STR(obj_str(o, "spec.to.kind"), "Service");
	CHECK_EQ(obj_int(o, "spec.to.weight", -1), 100);
	json_t *alt = json_array_get(json_object_get(json_object_get(o, "spec"), "alternateBackends"), 0);
	CHECK_STR(obj_str(alt, "kind"), "Service");
	CHECK_EQ(obj_int(alt, "weight", -1), 0);
	CHECK_STR(obj_str(o, "spec.wildcardPolicy"), "None");
	json_decref(o);
}

static char *policy_types(const char *spec)
{
	char yaml[512];
	json_t *o;
	char *s;

	snprintf(yaml, sizeof(yaml), "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
		 "metadata: {name: p}\nspec: %s\n", spec);
	o = defaulted(yaml);
	if (!o)
		return strdup("(invalid)");
	s = json_dumps(json_object_get(json_object_get(o, "spec"), "policyTypes"), JSON_COMPACT);
	json_decref(o);
	return s;
}

TEST(defaults_networkpolicy_policy_types)
{
	char *s;

	s = policy_types("{podSelector: {}}");
	CHECK_STR(s, "[\"Ingress\"]");
	free(s);
	s = policy_types("{podSelector: {}, ingress: [{}]}");
	CHECK_STR(s, "[\"Ingress\"]");
	free(s);
	/* an empty egress list isolates nothing (Kubernetes: len(egress) != 0) */
	s = policy_types("{podSelector: {}, egress: []}");
	CHECK_STR(s, "[\"Ingress\"]");
	free(s);
	s = policy_types("{podSelector: {}, egress: [{}]}");
	CHECK_STR(s, "[\"Ingress\",\"Egress\"]");
	free(s);
	s = policy_types("{podSelector: {}, ingress: [{}], egress: [{}]}");
	CHECK_STR(s, "[\"Ingress\",\"Egress\"]");
	free(s);
	s = policy_types("{podSelector: {}, policyTypes: [Egress], ingress: [{}]}");
	CHECK_STR(s, "[\"Egress\"]");
	free(s);

	json_t *o = defaulted("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p}\n"
			      "spec: {podSelector: {}, ingress: [{ports: [{port: 80}]}]}\n");
	CHECK(o);
	json_t *port = json_array_get(json_object_get(json_array_get(json_object_get(
		json_object_get(o, "spec"), "ingress"), 0), "ports"), 0);
	CHECK_STR(obj_str(port, "protocol"), "TCP");
	json_decref(o);
}

TEST(defaults_clusternetwork)
{
	json_t *o = defaulted("apiVersion: network.openshift.io/v1\nkind: ClusterNetwork\n"
			      "metadata: {name: default}\n"
			      "clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]\n"
			      "serviceNetwork: 172.30.0.0/16\n");

	CHECK(o);
	CHECK_STR(obj_str(o, "mode"), "multitenant");
	CHECK_EQ(obj_int(o, "vxlanPort", 0), 4789);
	CHECK_EQ(obj_int(o, "mtu", -1), 0);
	json_decref(o);
}

TEST(defaults_never_change_what_is_there_and_survive_garbage)
{
	json_t *o = load("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
			 "spec: {type: NodePort, sessionAffinity: ClientIP, ports: [{port: 80, protocol: UDP, "
			 "targetPort: 81}], externalTrafficPolicy: Local, internalTrafficPolicy: Local}\n");
	json_t *copy;

	CHECK(o);
	copy = json_deep_copy(o);
	model_default(o);
	json_object_del(json_object_get(o, "spec"), "sessionAffinityConfig");
	CHECK(json_equal(o, copy));
	json_decref(o);
	json_decref(copy);

	static const char *garbage[] = {
		"apiVersion: v1\nkind: Service\nspec: 3\n",
		"apiVersion: v1\nkind: Service\nspec: {ports: 3, sessionAffinity: ClientIP, sessionAffinityConfig: 1}\n",
		"apiVersion: v1\nkind: Service\nspec: {ports: [3, [], {port: x}]}\n",
		"apiVersion: v1\nkind: Pod\nspec: {containers: [1, {ports: 2}, {ports: [3]}]}\n",
		"apiVersion: v1\nkind: Endpoints\nsubsets: [1, {ports: {}}]\n",
		"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nspec: {policyTypes: 3, ingress: 4}\n",
		"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nspec: []\n",
		"apiVersion: route.openshift.io/v1\nkind: Route\nspec: {to: 1, alternateBackends: [1], tls: 3}\n",
		"kind: Secret\ntype: 5\n",
		"kind: Nope\n",
		"[1, 2]\n",
	};
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		o = load(garbage[i]);
		CHECK(o);
		model_default(o);
		json_decref(o);
	}
	model_default(NULL);
}

/* ---- manifests ---- */

static int decode(const char *s, json_t ***docs, size_t *n, char *err, size_t errlen)
{
	return model_decode_manifest(s, strlen(s), docs, n, err, errlen);
}

TEST(manifest_multi_document)
{
	const char *s = "apiVersion: v1\nkind: Namespace\nmetadata: {name: red}\n---\n"
			"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: red}\n---\n---\n";
	json_t **docs;
	size_t n;
	char err[256];

	CHECK(decode(s, &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 2);
	CHECK_STR(obj_kind(docs[0]), "Namespace");
	CHECK_STR(obj_name(docs[1]), "a");
	yaml_docs_free(docs, n);
}

TEST(manifest_list_items)
{
	const char *s = "apiVersion: v1\nkind: Namespace\nmetadata: {name: red}\n---\n"
			"apiVersion: v1\nkind: List\nitems:\n"
			"- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n"
			"- {apiVersion: v1, kind: Service, metadata: {name: b}}\n---\n"
			"apiVersion: v1\nkind: List\nitems: []\n---\n"
			"apiVersion: v1\nkind: PodList\nmetadata: {resourceVersion: '7'}\n"
			"items: [{metadata: {name: c}}]\n";
	json_t **docs;
	size_t n;
	char err[256];

	CHECK(decode(s, &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 4);
	CHECK_STR(obj_kind(docs[0]), "Namespace");
	CHECK_STR(obj_name(docs[1]), "a");
	CHECK_STR(obj_kind(docs[2]), "Service");
	CHECK_STR(obj_kind(docs[3]), "Pod");
	CHECK_STR(obj_str(docs[3], "apiVersion"), "v1");
	CHECK_STR(obj_name(docs[3]), "c");
	yaml_docs_free(docs, n);
}

TEST(manifest_json)
{
	const char *s = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n"
			"  {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}},\n"
			"  {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"b\"}}]}\n";
	json_t **docs;
	size_t n;
	char err[256];

	CHECK(decode(s, &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, 2);
	CHECK_STR(obj_name(docs[1]), "b");
	yaml_docs_free(docs, n);
}

TEST(manifest_errors)
{
	json_t **docs = (json_t **)1;
	size_t n = 9;
	char err[256];

	CHECK(decode("apiVersion: v1\nkind: Pod\nmetadata: {name: a\n", &docs, &n, err,
		     sizeof(err)) == -EINVAL);
	CHECK(docs == NULL && n == 0);
	CHECK_CONTAINS(err, "line 4, column 1: ");

	CHECK(decode("kind: Pod\n---\n- a\n- b\n", &docs, &n, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "doc 2: a manifest must be a mapping (object)");
	CHECK(docs == NULL && n == 0);
	CHECK(decode("just a string\n", &docs, &n, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "doc 1: a manifest must be a mapping (object)");
	CHECK(decode("kind: List\nitems: {a: 1}\n", &docs, &n, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "doc 1: items must be a list");
	CHECK(decode("kind: Pod\n---\nkind: List\nitems: [{kind: Pod}, 3]\n", &docs, &n, err,
		     sizeof(err)) == -EINVAL);
	CHECK_STR(err, "doc 2: items[1]: a manifest must be a mapping (object)");
	CHECK(decode("kind: Pod\n", &docs, &n, NULL, 0) == 0);
	yaml_docs_free(docs, n);
	CHECK(decode("- 1\n", &docs, &n, NULL, 0) == -EINVAL);
}

TEST(manifest_object_count_is_bounded)
{
	size_t k = 0, cap = 32 + (MODEL_MAX_OBJECTS + 1) * 12;
	char *s = malloc(cap);
	json_t **docs;
	size_t n;
	char err[256];

	CHECK(s);
	k += (size_t)snprintf(s + k, cap - k, "kind: List\nitems:\n");
	for (int i = 0; i < MODEL_MAX_OBJECTS + 1; i++)
		k += (size_t)snprintf(s + k, cap - k, "- {a: 1}\n");
	CHECK(model_decode_manifest(s, k, &docs, &n, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "doc 1: more than 100000 objects");
	/* one fewer fits: more objects than a stream may have documents */
	CHECK(model_decode_manifest(s, k - strlen("- {a: 1}\n"), &docs, &n, err, sizeof(err)) == 0);
	CHECK_EQ(n, MODEL_MAX_OBJECTS);
	yaml_docs_free(docs, n);
	free(s);
}

/* ---- cluster configuration ---- */

TEST(cluster_config_defaults)
{
	struct cluster_config c;
	char buf[CIDR_STRLEN];

	cluster_config_default(&c);
	CHECK_EQ(c.nnetworks, 1);
	cidr_format(&c.networks[0].cidr, buf);
	CHECK_STR(buf, "10.128.0.0/14");
	CHECK_EQ(c.networks[0].host_subnet_length, 9);
	cidr_format(&c.service_network, buf);
	CHECK_STR(buf, "172.30.0.0/16");
	CHECK_EQ(c.mode, MODE_MULTITENANT);
	CHECK_EQ(c.vxlan_port, 4789);
	CHECK_EQ(c.mtu, 0);
	CHECK_EQ(c.nvip_networks, 0);
	CHECK_STR(cluster_mode_name(MODE_FLAT), "flat");
	CHECK_STR(cluster_mode_name(MODE_MULTITENANT), "multitenant");
	CHECK_STR(cluster_mode_name(MODE_NETWORKPOLICY), "networkpolicy");
	CHECK_STR(cluster_mode_name((enum cluster_mode)9), "unknown");
	/* only multitenant mode isolates namespaces by VNID */
	CHECK(cluster_mode_gives_vnids(MODE_MULTITENANT));
	CHECK(!cluster_mode_gives_vnids(MODE_FLAT));
	CHECK(!cluster_mode_gives_vnids(MODE_NETWORKPOLICY));
}

static bool same_config(const struct cluster_config *a, const struct cluster_config *b)
{
	if (a->nnetworks != b->nnetworks || a->nvip_networks != b->nvip_networks ||
	    a->mode != b->mode || a->vxlan_port != b->vxlan_port || a->mtu != b->mtu ||
	    a->service_network.addr != b->service_network.addr ||
	    a->service_network.len != b->service_network.len)
		return false;
	for (size_t i = 0; i < a->nnetworks; i++)
		if (a->networks[i].cidr.addr != b->networks[i].cidr.addr ||
		    a->networks[i].cidr.len != b->networks[i].cidr.len ||
		    a->networks[i].host_subnet_length != b->networks[i].host_subnet_length)
			return false;
	for (size_t i = 0; i < a->nvip_networks; i++)
		if (a->vip_networks[i].addr != b->vip_networks[i].addr ||
		    a->vip_networks[i].len != b->vip_networks[i].len)
			return false;
	return true;
}

TEST(cluster_config_round_trip)
{
	struct cluster_config c, back;
	char err[512];
	json_t *j;

	cluster_config_default(&c);
	j = cluster_config_to_json(&c);
	CHECK(j);
	CHECK(model_validate(j, err, sizeof(err)) == 0);
	CHECK(cluster_config_from_json(j, &back, err, sizeof(err)) == 0);
	CHECK(same_config(&c, &back));
	json_decref(j);

	CHECK(cidr_parse("10.0.0.0/16", &c.networks[1].cidr) == 0);
	c.networks[1].host_subnet_length = 8;
	c.nnetworks = 2;
	CHECK(cidr_parse("172.31.0.0/16", &c.service_network) == 0);
	c.mode = MODE_NETWORKPOLICY;
	c.vxlan_port = 8472;
	c.mtu = 1400;
	CHECK(cidr_parse("192.168.10.0/24", &c.vip_networks[0]) == 0);
	CHECK(cidr_parse("192.168.11.0/24", &c.vip_networks[1]) == 0);
	c.nvip_networks = 2;
	j = cluster_config_to_json(&c);
	CHECK(j);
	if (model_validate(j, err, sizeof(err)) != 0) {
		test_fail(__FILE__, __LINE__, "%s", err);
		json_decref(j);
		return;
	}
	CHECK(cluster_config_from_json(j, &back, err, sizeof(err)) == 0);
	CHECK(same_config(&c, &back));
	CHECK_STR(obj_str(j, "mode"), "networkpolicy");
	json_decref(j);
}

TEST(cluster_config_from_partial_json_takes_defaults)
{
	struct cluster_config c, def;
	char err[512];
	json_t *j = load("mode: flat\nvxlanPort: 4790\n");

	CHECK(j);
	CHECK(cluster_config_from_json(j, &c, err, sizeof(err)) == 0);
	cluster_config_default(&def);
	def.mode = MODE_FLAT;
	def.vxlan_port = 4790;
	CHECK(same_config(&c, &def));
	json_decref(j);

	j = json_object();
	CHECK(cluster_config_from_json(j, &c, err, sizeof(err)) == 0);
	cluster_config_default(&def);
	CHECK(same_config(&c, &def));
	json_decref(j);
}

TEST(cluster_config_from_json_refuses_bad_input)
{
	struct cluster_config c;
	char err[512];
	json_t *j;

	j = load("mode: bogus\n");
	CHECK(j);
	CHECK(cluster_config_from_json(j, &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "mode: 'bogus' is not one of flat, multitenant, networkpolicy");
	json_decref(j);

	/* a given field that clashes with a default one */
	j = load("serviceNetwork: 10.129.0.0/16\n");
	CHECK(j);
	CHECK(cluster_config_from_json(j, &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "serviceNetwork: 10.129.0.0/16 overlaps clusterNetworks[0].cidr 10.128.0.0/14");
	json_decref(j);

	j = json_array();
	CHECK(cluster_config_from_json(j, &c, err, sizeof(err)) == -EINVAL);
	json_decref(j);
}
