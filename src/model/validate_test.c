/*
 * validate_test.c — model_validate, one test per rule: a valid object is
 * accepted, and each bad input is refused with the exact field path (and,
 * where the message is part of the contract, the exact message).
 *
 * Objects are written as YAML (flow style where short) and decoded with
 * yaml_decode_stream, so the tests read like the manifests users write.
 */
#include "lib/yaml.h"
#include "model/model.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[16384];

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

/* model_validate on yaml: 0, -EINVAL, or 1 if the YAML did not load. */
static int validate(const char *yaml)
{
	json_t *o = load(yaml);
	int rc;

	err[0] = '\0';
	if (!o)
		return 1;
	rc = model_validate(o, err, sizeof(err));
	json_decref(o);
	return rc;
}

#define VALID(yaml)                                                                    \
	do {                                                                           \
		int rc_ = validate(yaml);                                              \
		if (rc_ != 0) {                                                        \
			test_fail(__FILE__, __LINE__, "refused (%d): %s", rc_, err);   \
			return;                                                        \
		}                                                                      \
	} while (0)

/* Refused, and one line of the message contains msg. */
#define INVALID(yaml, msg)                                                             \
	do {                                                                           \
		int rc_ = validate(yaml);                                              \
		if (rc_ != -EINVAL || !strstr(err, msg)) {                             \
			test_fail(__FILE__, __LINE__, "want \"%s\", got %d: \"%s\"", msg,  \
				  rc_, err);                                           \
			return;                                                        \
		}                                                                      \
	} while (0)

/* Refused with exactly this one line. */
#define INVALID_ONLY(yaml, msg)                                                        \
	do {                                                                           \
		int rc_ = validate(yaml);                                              \
		if (rc_ != -EINVAL || strcmp(err, msg) != 0) {                         \
			test_fail(__FILE__, __LINE__, "want exactly \"%s\", got %d: \"%s\"", \
				  msg, rc_, err);                                      \
			return;                                                        \
		}                                                                      \
	} while (0)

/* ---- common ---- */

#define POD "apiVersion: v1\nkind: Pod\n"
#define NS "apiVersion: v1\nkind: Namespace\n"

TEST(common_minimal_objects_are_valid)
{
	VALID(NS "metadata: {name: red}\n");
	VALID(POD "metadata: {name: web-1, namespace: red}\n");
	VALID(POD "metadata: {name: web.1}\n");
	VALID("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}}");
}

TEST(common_object_must_be_an_object)
{
	json_t *a = json_array();

	CHECK(model_validate(a, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "must be a JSON object");
	json_decref(a);
	CHECK(model_validate(NULL, err, sizeof(err)) == -EINVAL);
}

TEST(common_api_version)
{
	INVALID_ONLY("kind: Pod\nmetadata: {name: a}\n", "apiVersion: required");
	INVALID_ONLY("apiVersion: v2\nkind: Pod\nmetadata: {name: a}\n",
		     "apiVersion: 'v2' is wrong for kind Pod (must be 'v1')");
	INVALID("apiVersion: v1\nkind: NetworkPolicy\nmetadata: {name: a}\nspec: {podSelector: {}}\n",
		"apiVersion: 'v1' is wrong for kind NetworkPolicy (must be 'networking.k8s.io/v1')");
	INVALID("apiVersion: 1\nkind: Pod\nmetadata: {name: a}\n",
		"apiVersion: must be a string, not an integer");
}

TEST(common_kind)
{
	INVALID_ONLY("apiVersion: v1\nmetadata: {name: a}\n", "kind: required");
	INVALID_ONLY("apiVersion: v1\nkind: Foo\nmetadata: {name: a}\n", "kind: unknown kind 'Foo'");
	INVALID("apiVersion: v1\nkind: pod\nmetadata: {name: a}\n", "kind: unknown kind 'pod'");
}

TEST(common_metadata_required)
{
	INVALID_ONLY(POD, "metadata: required");
	INVALID_ONLY(POD "metadata: [a]\n", "metadata: must be an object, not a list");
	INVALID_ONLY(POD "metadata: {}\n", "metadata.name: required");
	INVALID_ONLY(POD "metadata: {name: ''}\n", "metadata.name: required");
}

TEST(common_name_rules_per_kind)
{
	INVALID_ONLY(POD "metadata: {name: My_Pod}\n",
		     "metadata.name: 'My_Pod' is not a valid DNS-1123 subdomain");
	INVALID(POD "metadata: {name: -a}\n", "metadata.name: '-a' is not a valid DNS-1123 subdomain");
	INVALID(NS "metadata: {name: a.b}\n", "metadata.name: 'a.b' is not a valid DNS-1123 label");
	VALID("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n");
	INVALID("apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\nspec: {ports: [{port: 80}]}\n",
		"metadata.name: '1web' is not a valid DNS-1035 label");
	/* 253 is the limit for a subdomain, 63 for each label */
	char yaml[600];
	char name[300];

	memset(name, 'a', 63);
	for (int i = 63; i < 254; i += 64) {
		name[i] = '.';
		memset(name + i + 1, 'b', 63);
	}
	name[253] = '\0';
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: %s}\n", name);
	VALID(yaml);
	name[253] = 'c';
	name[254] = '\0';
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: %s}\n", name);
	INVALID(yaml, "is not a valid DNS-1123 subdomain");
}

/* Kubernetes' IsDNS1123Subdomain does not bound one label: a Pod, Node or
 * Secret may be named with 253 bytes and no dot.  Namespaces (DNS-1123
 * labels) and Services (DNS-1035 labels) stop at 63. */
static void named(char *yaml, size_t len, const char *head, size_t n, const char *tail)
{
	char name[300];

	memset(name, 'a', n);
	name[n] = '\0';
	snprintf(yaml, len, "%smetadata: {name: %s}\n%s", head, name, tail);
}

TEST(common_name_lengths_as_kubernetes)
{
	static const char node_tail[] = "status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}\n";
	static const char svc_tail[] = "spec: {ports: [{port: 80}]}\n";
	char yaml[800];

	named(yaml, sizeof(yaml), POD, 253, "");
	VALID(yaml);
	named(yaml, sizeof(yaml), POD, 254, "");
	INVALID(yaml, "is not a valid DNS-1123 subdomain");
	named(yaml, sizeof(yaml), "apiVersion: v1\nkind: Node\n", 253, node_tail);
	VALID(yaml);
	named(yaml, sizeof(yaml), "apiVersion: v1\nkind: Secret\n", 253, "");
	VALID(yaml);
	named(yaml, sizeof(yaml), NS, 63, "");
	VALID(yaml);
	named(yaml, sizeof(yaml), NS, 64, "");
	INVALID(yaml, "is not a valid DNS-1123 label");
	named(yaml, sizeof(yaml), "apiVersion: v1\nkind: Service\n", 63, svc_tail);
	VALID(yaml);
	named(yaml, sizeof(yaml), "apiVersion: v1\nkind: Service\n", 64, svc_tail);
	INVALID(yaml, "is not a valid DNS-1035 label");
}

TEST(common_namespace)
{
	VALID(POD "metadata: {name: a, namespace: ''}\n");
	INVALID_ONLY(POD "metadata: {name: a, namespace: Red}\n",
		     "metadata.namespace: 'Red' is not a valid DNS-1123 label");
	INVALID(POD "metadata: {name: a, namespace: a.b}\n", "metadata.namespace: 'a.b' is not");
	INVALID_ONLY(NS "metadata: {name: a, namespace: red}\n",
		     "metadata.namespace: must be empty for cluster-scoped kind Namespace");
	VALID(NS "metadata: {name: a, namespace: ''}\n");
}

TEST(common_labels)
{
	VALID(POD "metadata:\n  name: a\n  labels: {app: web, example.com/tier: Front_1, "
		  "k8s.io/x: '', a.b_c-d: v}\n");
	INVALID_ONLY(POD "metadata: {name: a, labels: {-app: web}}\n",
		     "metadata.labels: '-app' is not a valid label key");
	INVALID(POD "metadata: {name: a, labels: {a/b/c: x}}\n", "metadata.labels: 'a/b/c' is not a valid label key");
	INVALID(POD "metadata: {name: a, labels: {Example.com/x: y}}\n",
		"metadata.labels: 'Example.com/x' is not a valid label key");
	INVALID(POD "metadata: {name: a, labels: {/x: y}}\n", "'/x' is not a valid label key");
	INVALID(POD "metadata: {name: a, labels: {x/: y}}\n", "'x/' is not a valid label key");
	INVALID_ONLY(POD "metadata: {name: a, labels: {app: a b}}\n",
		     "metadata.labels[app]: 'a b' is not a valid label value");
	INVALID_ONLY(POD "metadata: {name: a, labels: {app: 3}}\n",
		     "metadata.labels[app]: must be a string, not an integer");
	INVALID(POD "metadata: {name: a, labels: {app: -x}}\n", "'-x' is not a valid label value");
	INVALID(POD "metadata: {name: a, labels: [app]}\n", "metadata.labels: must be an object");

	char yaml[256], long_name[70];

	memset(long_name, 'x', 64);
	long_name[64] = '\0';
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: a, labels: {%s: v}}\n", long_name);
	INVALID(yaml, "is not a valid label key");
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: a, labels: {k: %s}}\n", long_name);
	INVALID(yaml, "is not a valid label value");
	long_name[63] = '\0';
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: a, labels: {%s: %s}}\n", long_name,
		 long_name);
	VALID(yaml);
}

TEST(common_annotations)
{
	VALID(POD "metadata: {name: a, annotations: {example.com/note: 'any text: at all'}}\n");
	INVALID_ONLY(POD "metadata: {name: a, annotations: {'bad key': x}}\n",
		     "metadata.annotations: 'bad key' is not a valid annotation key");
	INVALID_ONLY(POD "metadata: {name: a, annotations: {k: [1]}}\n",
		     "metadata.annotations[k]: must be a string, not a list");

	/* 256 KiB in total */
	size_t big = 256 * 1024;
	char *yaml = malloc(big + 200);

	CHECK(yaml);
	int n = snprintf(yaml, 200, POD "metadata:\n  name: a\n  annotations:\n    k: ");
	memset(yaml + n, 'x', big);
	strcpy(yaml + n + big, "\n");
	INVALID(yaml, "metadata.annotations: too large (more than 262144 bytes)");
	strcpy(yaml + n + big - 1, "\n");
	VALID(yaml);
	free(yaml);
}

TEST(common_every_error_is_reported)
{
	CHECK(validate("apiVersion: v2\nkind: Pod\nmetadata: {name: A, namespace: B, labels: {-x: y}}\n")
	      == -EINVAL);
	CHECK_STR(err, "apiVersion: 'v2' is wrong for kind Pod (must be 'v1')\n"
		       "metadata.name: 'A' is not a valid DNS-1123 subdomain\n"
		       "metadata.namespace: 'B' is not a valid DNS-1123 label\n"
		       "metadata.labels: '-x' is not a valid label key");
}

TEST(common_error_buffer_is_bounded)
{
	json_t *o = load("apiVersion: v2\nkind: Pod\nmetadata: {name: A, namespace: B}\n");
	char small[70];

	CHECK(o);
	memset(small, 'z', sizeof(small));
	CHECK(model_validate(o, small, sizeof(small)) == -EINVAL);
	CHECK(strlen(small) < sizeof(small));
	CHECK_CONTAINS(small, "(more errors)");
	CHECK(model_validate(o, NULL, 0) == -EINVAL);
	CHECK(model_validate(o, small, 1) == -EINVAL);
	CHECK_STR(small, "");
	json_decref(o);
}

TEST(common_long_values_are_cut_in_messages)
{
	char yaml[2048];
	char name[1100];

	memset(name, 'A', 1000);
	name[1000] = '\0';
	snprintf(yaml, sizeof(yaml), POD "metadata: {name: %s}\n", name);
	INVALID(yaml, "...' is not a valid DNS-1123 subdomain");
	CHECK(strlen(err) < 200);
	INVALID(POD "metadata: {name: \"a\\nb\"}\n", "'a?b' is not");

	/* cut at a character boundary: messages go into JSON strings */
	for (int shift = 0; shift < 3; shift++) {
		size_t k = (size_t)snprintf(yaml, sizeof(yaml), POD "metadata: {name: %.*s",
					    shift, "xxx");

		for (int i = 0; i < 200; i++)
			k += (size_t)snprintf(yaml + k, sizeof(yaml) - k, "\xe2\x82\xac");
		snprintf(yaml + k, sizeof(yaml) - k, "}\n");
		INVALID(yaml, "...' is not a valid DNS-1123 subdomain");
		json_t *s = json_string(err);

		CHECK(s);
		json_decref(s);
	}
}

/* ---- ClusterNetwork ---- */

#define CN "apiVersion: network.openshift.io/v1\nkind: ClusterNetwork\nmetadata: {name: default}\n"
#define CN_NETS "clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]\n"
#define CN_SVC "serviceNetwork: 172.30.0.0/16\n"

TEST(clusternetwork_valid)
{
	VALID(CN CN_NETS CN_SVC);
	VALID(CN "clusterNetworks:\n- {cidr: 10.128.0.0/14, hostSubnetLength: 9}\n"
		 "- {cidr: 10.0.0.0/24, hostSubnetLength: 8}\n" CN_SVC
		 "mode: networkpolicy\nvxlanPort: 4790\nmtu: 1450\nvipNetworks: [192.168.10.0/24, 192.168.11.0/24]\n");
	VALID(CN CN_NETS CN_SVC "mtu: 0\nmode: flat\n");
}

TEST(clusternetwork_name_is_default)
{
	INVALID_ONLY("apiVersion: network.openshift.io/v1\nkind: ClusterNetwork\nmetadata: {name: other}\n"
		     CN_NETS CN_SVC, "metadata.name: a ClusterNetwork must be named 'default'");
}

TEST(clusternetwork_networks_required_and_bounded)
{
	INVALID_ONLY(CN CN_SVC, "clusterNetworks: required");
	INVALID_ONLY(CN "clusterNetworks: []\n" CN_SVC, "clusterNetworks: must not be empty");
	char yaml[4096];
	size_t k = (size_t)snprintf(yaml, sizeof(yaml), CN CN_SVC "clusterNetworks:\n");

	for (int i = 0; i < 17; i++)
		k += (size_t)snprintf(yaml + k, sizeof(yaml) - k,
				      "- {cidr: 10.%d.0.0/16, hostSubnetLength: 8}\n", i);
	INVALID_ONLY(yaml, "clusterNetworks: too many networks (at most 16)");
}

TEST(clusternetwork_cidr_syntax)
{
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.128.0.0, hostSubnetLength: 9}]\n" CN_SVC,
		     "clusterNetworks[0].cidr: '10.128.0.0' is not a valid CIDR (a.b.c.d/n)");
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.129.0.0/14, hostSubnetLength: 9}]\n" CN_SVC,
		     "clusterNetworks[0].cidr: '10.129.0.0/14' has host bits set (did you mean 10.128.0.0/14?)");
	INVALID_ONLY(CN "clusterNetworks: [{hostSubnetLength: 9}]\n" CN_SVC,
		     "clusterNetworks[0].cidr: required");
	INVALID_ONLY(CN "clusterNetworks: [3]\n" CN_SVC, "clusterNetworks[0]: must be an object");
}

TEST(clusternetwork_host_subnet_length)
{
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.0.0.0/24, hostSubnetLength: 9}]\n" CN_SVC,
		     "clusterNetworks[0].hostSubnetLength: 9 does not fit in 10.0.0.0/24 (at most 8)");
	VALID(CN "clusterNetworks: [{cidr: 10.0.0.0/24, hostSubnetLength: 8}]\n" CN_SVC);
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.0.0.0/8, hostSubnetLength: 1}]\n" CN_SVC,
		     "clusterNetworks[0].hostSubnetLength: 1 is too small (at least 2)");
	VALID(CN "clusterNetworks: [{cidr: 10.0.0.0/8, hostSubnetLength: 2}]\n" CN_SVC);
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.0.0.0/8}]\n" CN_SVC,
		     "clusterNetworks[0].hostSubnetLength: required");
	INVALID_ONLY(CN "clusterNetworks: [{cidr: 10.0.0.0/8, hostSubnetLength: '9'}]\n" CN_SVC,
		     "clusterNetworks[0].hostSubnetLength: must be an integer, not a string");
}

TEST(clusternetwork_networks_do_not_overlap)
{
	INVALID_ONLY(CN "clusterNetworks:\n- {cidr: 10.128.0.0/14, hostSubnetLength: 9}\n"
		     "- {cidr: 10.128.0.0/16, hostSubnetLength: 8}\n" CN_SVC,
		     "clusterNetworks[1].cidr: 10.128.0.0/16 overlaps clusterNetworks[0].cidr 10.128.0.0/14");
}

TEST(clusternetwork_service_network)
{
	INVALID_ONLY(CN CN_NETS, "serviceNetwork: required");
	INVALID_ONLY(CN CN_NETS "serviceNetwork: 172.30.0.1/16\n",
		     "serviceNetwork: '172.30.0.1/16' has host bits set (did you mean 172.30.0.0/16?)");
	INVALID_ONLY(CN CN_NETS "serviceNetwork: 10.130.0.0/16\n",
		     "serviceNetwork: 10.130.0.0/16 overlaps clusterNetworks[0].cidr 10.128.0.0/14");
}

TEST(clusternetwork_mode_port_mtu)
{
	INVALID_ONLY(CN CN_NETS CN_SVC "mode: subnet\n",
		     "mode: 'subnet' is not one of flat, multitenant, networkpolicy");
	INVALID_ONLY(CN CN_NETS CN_SVC "vxlanPort: 0\n", "vxlanPort: 0 is not a valid port (1-65535)");
	INVALID_ONLY(CN CN_NETS CN_SVC "vxlanPort: 65536\n",
		     "vxlanPort: 65536 is not a valid port (1-65535)");
	INVALID_ONLY(CN CN_NETS CN_SVC "mtu: 575\n", "mtu: 575 is not 0 (detect) or 576-65535");
	INVALID_ONLY(CN CN_NETS CN_SVC "mtu: 65536\n", "mtu: 65536 is not 0 (detect) or 576-65535");
	VALID(CN CN_NETS CN_SVC "mtu: 576\n");
}

TEST(clusternetwork_vip_networks)
{
	INVALID_ONLY(CN CN_NETS CN_SVC "vipNetworks: [10.131.0.0/24]\n",
		     "vipNetworks[0]: 10.131.0.0/24 overlaps clusterNetworks[0].cidr 10.128.0.0/14");
	INVALID_ONLY(CN CN_NETS CN_SVC "vipNetworks: [172.30.1.0/24]\n",
		     "vipNetworks[0]: 172.30.1.0/24 overlaps serviceNetwork 172.30.0.0/16");
	INVALID_ONLY(CN CN_NETS CN_SVC "vipNetworks: [192.168.0.0/16, 192.168.4.0/24]\n",
		     "vipNetworks[1]: 192.168.4.0/24 overlaps vipNetworks[0] 192.168.0.0/16");
	INVALID_ONLY(CN CN_NETS CN_SVC "vipNetworks: [nope]\n",
		     "vipNetworks[0]: 'nope' is not a valid CIDR (a.b.c.d/n)");
}

/* ---- Node, HostSubnet, NetNamespace ---- */

#define NODE "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"

TEST(node_valid)
{
	VALID(NODE "status:\n  addresses:\n  - {type: InternalIP, address: 192.168.1.10}\n"
		   "  - {type: Hostname, address: node-1}\n  - {type: ExternalIP, address: 1.2.3.4}\n");
}

TEST(node_needs_one_internal_ip)
{
	INVALID_ONLY(NODE, "status.addresses: a Node needs an InternalIP address");
	INVALID_ONLY(NODE "status: {addresses: [{type: Hostname, address: n}]}\n",
		     "status.addresses: a Node needs an InternalIP address");
	INVALID_ONLY(NODE "status: {addresses: [{type: InternalIP, address: 10.0.0.1}, "
			  "{type: InternalIP, address: 10.0.0.2}]}\n",
		     "status.addresses[1].type: a second InternalIP address (a Node has exactly one)");
}

TEST(node_internal_ip_is_usable_unicast)
{
	static const char *const refused[][2] = {
		{ "0.0.0.0", "in 0.0.0.0/8" },
		{ "0.1.2.3", "in 0.0.0.0/8" },
		{ "127.0.0.1", "a loopback address" },
		{ "127.255.0.9", "a loopback address" },
		{ "169.254.1.1", "a link-local address" },
		{ "224.0.0.1", "a multicast address" },
		{ "239.255.255.255", "a multicast address" },
		{ "240.0.0.1", "a reserved address" },
		{ "255.255.255.255", "the broadcast address" },
	};
	char yaml[300];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(yaml, sizeof(yaml), NODE "status: {addresses: [{type: InternalIP, address: %s}]}\n",
			 refused[i][0]);
		INVALID(yaml, refused[i][1]);
		INVALID(yaml, "status.addresses[0].address: ");
	}
	VALID(NODE "status: {addresses: [{type: InternalIP, address: 1.0.0.1}]}\n");
	VALID(NODE "status: {addresses: [{type: InternalIP, address: 126.255.255.255}]}\n");
	VALID(NODE "status: {addresses: [{type: InternalIP, address: 169.253.255.255}]}\n");
	VALID(NODE "status: {addresses: [{type: InternalIP, address: 223.255.255.254}]}\n");
	/* only the InternalIP carries tunnels */
	VALID(NODE "status: {addresses: [{type: InternalIP, address: 10.0.0.1}, "
		   "{type: ExternalIP, address: 127.0.0.1}]}\n");
}

TEST(node_address_syntax)
{
	INVALID_ONLY(NODE "status: {addresses: [{type: InternalIP, address: 10.0.0}]}\n",
		     "status.addresses[0].address: '10.0.0' is not a valid IPv4 address");
	INVALID(NODE "status: {addresses: [{type: InternalIP, address: 10.0.0.1}, {type: Public, address: x}]}\n",
		"status.addresses[1].type: 'Public' is not one of InternalIP, ExternalIP, Hostname, "
		"InternalDNS, ExternalDNS");
	INVALID(NODE "status: {addresses: [{type: InternalIP}]}\n",
		"status.addresses[0].address: required");
}

#define HS "apiVersion: network.openshift.io/v1\nkind: HostSubnet\nmetadata: {name: node-1}\n"

TEST(hostsubnet_valid)
{
	VALID(HS "host: node-1\nhostIP: 192.168.1.10\nsubnet: 10.128.2.0/23\nnodeID: 3\n");
	VALID(HS "host: node-1.example.com\nhostIP: 192.168.1.10\nsubnet: 10.128.2.0/23\n");
}

TEST(hostsubnet_fields)
{
	INVALID_ONLY(HS "hostIP: 192.168.1.10\nsubnet: 10.128.2.0/23\n", "host: required");
	INVALID_ONLY(HS "host: Node_1\nhostIP: 192.168.1.10\nsubnet: 10.128.2.0/23\n",
		     "host: 'Node_1' is not a valid DNS-1123 subdomain");
	INVALID_ONLY(HS "host: n\nhostIP: 192.168.1.300\nsubnet: 10.128.2.0/23\n",
		     "hostIP: '192.168.1.300' is not a valid IPv4 address");
	INVALID_ONLY(HS "host: n\nsubnet: 10.128.2.0/23\n", "hostIP: required");
	INVALID_ONLY(HS "host: n\nhostIP: 192.168.1.1\nsubnet: 10.128.3.0/23\n",
		     "subnet: '10.128.3.0/23' has host bits set (did you mean 10.128.2.0/23?)");
	INVALID_ONLY(HS "host: n\nhostIP: 192.168.1.1\n", "subnet: required");
	INVALID_ONLY(HS "host: n\nhostIP: 192.168.1.1\nsubnet: 10.128.2.0/23\nnodeID: 0\n",
		     "nodeID: 0 must be at least 1");
	INVALID_ONLY(HS "host: n\nhostIP: 192.168.1.1\nsubnet: 10.128.2.0/23\nnodeID: x\n",
		     "nodeID: must be an integer, not a string");
}

#define NETNS "apiVersion: network.openshift.io/v1\nkind: NetNamespace\nmetadata: {name: red}\n"

TEST(netnamespace_valid)
{
	VALID(NETNS "netname: red\nnetid: 10\n");
	VALID(NETNS "netname: red\nnetid: 0\n");
	VALID(NETNS "netname: red\nnetid: 16777215\n");
}

TEST(netnamespace_fields)
{
	INVALID_ONLY(NETNS "netname: blue\nnetid: 10\n",
		     "netname: 'blue' does not match metadata.name 'red'");
	INVALID_ONLY(NETNS "netid: 10\n", "netname: required");
	INVALID_ONLY(NETNS "netname: red\nnetid: 16777216\n",
		     "netid: 16777216 is not a valid VNID (0-16777215)");
	INVALID_ONLY(NETNS "netname: red\nnetid: -1\n", "netid: -1 is not a valid VNID (0-16777215)");
	INVALID_ONLY(NETNS "netname: red\n", "netid: required");
}

/* ---- Pod ---- */

TEST(pod_valid)
{
	VALID(POD "metadata: {name: web, namespace: red}\n"
		  "spec:\n  nodeName: node-1\n  containers:\n"
		  "  - name: web\n    image: nginx\n    ports:\n"
		  "    - {containerPort: 80, name: http}\n    - {containerPort: 53, protocol: UDP, name: dns, hostPort: 5353}\n"
		  "  - name: side\n    ports: [{containerPort: 9090, protocol: SCTP, name: metrics-2}]\n"
		  "status: {podIP: 10.128.2.5, podIPs: [{ip: 10.128.2.5}]}\n");
	VALID(POD "metadata: {name: web}\nstatus: {podIP: ''}\n");
}

TEST(pod_node_name)
{
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {nodeName: Node_1}\n",
		     "spec.nodeName: 'Node_1' is not a valid DNS-1123 subdomain");
}

TEST(pod_container_names)
{
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{image: x}]}\n",
		     "spec.containers[0].name: required");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: Web}]}\n",
		     "spec.containers[0].name: 'Web' is not a valid DNS-1123 label");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: web}, {name: web}]}\n",
		     "spec.containers[1].name: duplicate container name 'web'");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: {name: web}}\n",
		     "spec.containers: must be a list, not an object");
}

TEST(pod_container_ports)
{
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{name: http}]}]}\n",
		     "spec.containers[0].ports[0].containerPort: required");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{containerPort: 0}]}]}\n",
		     "spec.containers[0].ports[0].containerPort: 0 is not a valid port (1-65535)");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{containerPort: 80, protocol: ICMP}]}]}\n",
		     "spec.containers[0].ports[0].protocol: 'ICMP' is not one of TCP, UDP, SCTP");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{containerPort: 80, hostPort: 65536}]}]}\n",
		     "spec.containers[0].ports[0].hostPort: 65536 is not a valid port (0-65535)");
}

TEST(pod_port_names_are_iana_and_unique)
{
	static const char *bad[] = { "http_1", "1234", "-http", "http-", "a--b", "toolongportname1",
				     "HTTP" };
	char yaml[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), POD "metadata: {name: a}\nspec: {containers: [{name: w, "
			 "ports: [{containerPort: 80, name: '%s'}]}]}\n", bad[i]);
		INVALID(yaml, "spec.containers[0].ports[0].name: '");
		CHECK_CONTAINS(err, "is not a valid port name");
	}
	VALID(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{containerPort: 80, "
		  "name: toolongportnam}, {containerPort: 81, name: 8a}]}]}\n");
	INVALID_ONLY(POD "metadata: {name: a}\nspec: {containers: [{name: w, ports: [{containerPort: 80, name: http}]},"
		     " {name: v, ports: [{containerPort: 81, name: http}]}]}\n",
		     "spec.containers[1].ports[0].name: duplicate port name 'http'");
}

TEST(pod_ips)
{
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIP: 10.128.0}\n",
		     "status.podIP: '10.128.0' is not a valid IPv4 address");
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIP: 10.128.0.1, podIPs: [{ip: 10.128.0.1}, {ip: fe80::1}]}\n",
		     "status.podIPs[1].ip: 'fe80::1' is not a valid IPv4 address");
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIPs: [{}]}\n", "status.podIPs[0].ip: required");
	/* podIPs lists podIP, and only it */
	VALID(POD "metadata: {name: a}\nstatus: {podIP: 10.128.0.5, podIPs: [{ip: 10.128.0.5}]}\n");
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIP: 10.128.0.5, podIPs: [{ip: 10.128.0.5}, {ip: 10.128.0.6}]}\n",
		     "status.podIPs[1].ip: '10.128.0.6' differs from status.podIP 10.128.0.5 (a pod has one IPv4 address)");
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIPs: [{ip: 10.128.0.5}]}\n",
		     "status.podIPs[0].ip: '10.128.0.5' is given without status.podIP (podIPs lists the pod's podIP)");
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIP: '', podIPs: [{ip: 10.128.0.5}]}\n",
		     "status.podIPs[0].ip: '10.128.0.5' is given without status.podIP (podIPs lists the pod's podIP)");
	/* an invalid podIP is reported once, not again for each podIPs entry */
	INVALID_ONLY(POD "metadata: {name: a}\nstatus: {podIP: 10.128.0, podIPs: [{ip: 10.128.0.5}]}\n",
		     "status.podIP: '10.128.0' is not a valid IPv4 address");
}

/* ---- Service ---- */

#define SVC "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: red}\n"

TEST(service_valid)
{
	VALID(SVC "spec:\n  type: NodePort\n  selector: {app: web}\n  ports:\n"
		  "  - {name: http, port: 80, targetPort: 8080, nodePort: 30080}\n"
		  "  - {name: dns, port: 53, protocol: UDP, targetPort: dns}\n"
		  "  - {name: dns-tcp, port: 53, protocol: TCP}\n"
		  "  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}\n"
		  "  externalTrafficPolicy: Local\n  internalTrafficPolicy: Local\n  clusterIP: 172.30.0.10\n");
	VALID(SVC "spec: {clusterIP: None, selector: {app: web}}\n");
	VALID(SVC "spec: {type: LoadBalancer, ports: [{port: 443, nodePort: 32767}]}\n");
	VALID(SVC "spec: {ports: [{port: 80}], clusterIP: ''}\n");
}

TEST(service_type)
{
	INVALID_ONLY(SVC "spec: {type: ExternalName, ports: [{port: 80}]}\n",
		     "spec.type: 'ExternalName' is not one of ClusterIP, NodePort, LoadBalancer");
	INVALID_ONLY(SVC, "spec: required");
}

TEST(service_ports_required)
{
	INVALID_ONLY(SVC "spec: {selector: {app: web}}\n", "spec.ports: required");
	INVALID_ONLY(SVC "spec: {ports: []}\n", "spec.ports: must not be empty");
	VALID(SVC "spec: {clusterIP: None}\n");
}

TEST(service_port_numbers)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 70000}]}\n",
		     "spec.ports[0].port: 70000 is not a valid port (1-65535)");
	INVALID_ONLY(SVC "spec: {ports: [{name: a}]}\n", "spec.ports[0].port: required");
	INVALID_ONLY(SVC "spec: {ports: [{port: '80'}]}\n",
		     "spec.ports[0].port: must be an integer, not a string");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80, protocol: tcp}]}\n",
		     "spec.ports[0].protocol: 'tcp' is not one of TCP, UDP, SCTP");
}

TEST(service_port_names)
{
	INVALID_ONLY(SVC "spec: {ports: [{name: http, port: 80}, {port: 443}]}\n",
		     "spec.ports[1].name: required when a Service has more than one port");
	INVALID_ONLY(SVC "spec: {ports: [{name: http, port: 80}, {name: http, port: 443}]}\n",
		     "spec.ports[1].name: duplicate port name 'http'");
	INVALID_ONLY(SVC "spec: {ports: [{name: Http, port: 80}]}\n",
		     "spec.ports[0].name: 'Http' is not a valid DNS-1123 label");
	VALID(SVC "spec: {ports: [{name: a-long-port-name-is-fine-here, port: 80}]}\n");
}

TEST(service_target_port)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 80, targetPort: 0}]}\n",
		     "spec.ports[0].targetPort: 0 is not a valid port (1-65535)");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80, targetPort: http_x}]}\n",
		     "spec.ports[0].targetPort: 'http_x' is not a valid port name");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80, targetPort: [1]}]}\n",
		     "spec.ports[0].targetPort: must be a port number or name, not a list");
}

TEST(service_node_port)
{
	INVALID_ONLY(SVC "spec: {type: NodePort, ports: [{port: 80, nodePort: 80}]}\n",
		     "spec.ports[0].nodePort: 80 is outside the NodePort range 30000-32767");
	INVALID_ONLY(SVC "spec: {type: LoadBalancer, ports: [{port: 80, nodePort: 32768}]}\n",
		     "spec.ports[0].nodePort: 32768 is outside the NodePort range 30000-32767");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80, nodePort: 30080}]}\n",
		     "spec.ports[0].nodePort: only allowed for type NodePort or LoadBalancer");
	VALID(SVC "spec: {ports: [{port: 80, nodePort: 0}]}\n");
}

TEST(service_duplicate_port_protocol)
{
	INVALID_ONLY(SVC "spec: {ports: [{name: a, port: 80}, {name: b, port: 80, protocol: TCP}]}\n",
		     "spec.ports[1].port: duplicate port 80/TCP");
	VALID(SVC "spec: {ports: [{name: a, port: 80}, {name: b, port: 80, protocol: UDP}]}\n");
	/* a null protocol is TCP once defaulted (found by manifest_fuzz) */
	INVALID_ONLY(SVC "spec: {ports: [{name: a, port: 80}, {name: b, port: 80, protocol: null}]}\n",
		     "spec.ports[1].port: duplicate port 80/TCP");
}

TEST(service_cluster_ip)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], clusterIP: 172.30.0}\n",
		     "spec.clusterIP: '172.30.0' is not a valid IPv4 address, '' or 'None'");
	INVALID_ONLY(SVC "spec: {type: NodePort, clusterIP: None, ports: [{port: 80}]}\n",
		     "spec.clusterIP: a headless Service (clusterIP None) cannot be of type NodePort");
	INVALID(SVC "spec: {type: LoadBalancer, clusterIP: None}\n",
		"spec.clusterIP: a headless Service (clusterIP None) cannot be of type LoadBalancer");
}

TEST(service_selector)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], selector: {'app name': web}}\n",
		     "spec.selector: 'app name' is not a valid label key");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], selector: {app: 'web!'}}\n",
		     "spec.selector[app]: 'web!' is not a valid label value");
}

TEST(service_session_affinity)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], sessionAffinity: Cookie}\n",
		     "spec.sessionAffinity: 'Cookie' is not one of None, ClientIP");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], sessionAffinity: ClientIP, "
		     "sessionAffinityConfig: {clientIP: {timeoutSeconds: 0}}}\n",
		     "spec.sessionAffinityConfig.clientIP.timeoutSeconds: 0 is not a valid timeout (1-86400)");
	INVALID(SVC "spec: {ports: [{port: 80}], sessionAffinityConfig: {clientIP: {timeoutSeconds: 86401}}}\n",
		"spec.sessionAffinityConfig.clientIP.timeoutSeconds: 86401 is not");
	VALID(SVC "spec: {ports: [{port: 80}], sessionAffinityConfig: {clientIP: {timeoutSeconds: 86400}}}\n");
}

TEST(service_traffic_policies)
{
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], externalTrafficPolicy: Local}\n",
		     "spec.externalTrafficPolicy: Local is only valid for type NodePort or LoadBalancer");
	INVALID_ONLY(SVC "spec: {type: NodePort, ports: [{port: 80}], externalTrafficPolicy: local}\n",
		     "spec.externalTrafficPolicy: 'local' is not one of Cluster, Local");
	INVALID_ONLY(SVC "spec: {ports: [{port: 80}], internalTrafficPolicy: Node}\n",
		     "spec.internalTrafficPolicy: 'Node' is not one of Cluster, Local");
	VALID(SVC "spec: {ports: [{port: 80}], externalTrafficPolicy: Cluster}\n");
}

/* ---- Endpoints ---- */

#define EP "apiVersion: v1\nkind: Endpoints\nmetadata: {name: web, namespace: red}\n"

TEST(endpoints_valid)
{
	VALID(EP "subsets:\n- addresses: [{ip: 10.128.2.5, nodeName: node-1, targetRef: {kind: Pod, name: a}}]\n"
		 "  notReadyAddresses: [{ip: 10.128.2.6}]\n  ports: [{name: http, port: 8080, protocol: TCP}]\n");
	VALID(EP "subsets: []\n");
}

TEST(endpoints_addresses)
{
	INVALID_ONLY(EP "subsets: [{addresses: [{nodeName: n}]}]\n", "subsets[0].addresses[0].ip: required");
	INVALID_ONLY(EP "subsets: [{addresses: [{ip: 10.1.1.1}], notReadyAddresses: [{ip: 10.1.1.01}]}]\n",
		     "subsets[0].notReadyAddresses[0].ip: '10.1.1.01' is not a valid IPv4 address");
}

TEST(endpoints_ports)
{
	INVALID_ONLY(EP "subsets: [{ports: [{name: http}]}]\n", "subsets[0].ports[0].port: required");
	INVALID_ONLY(EP "subsets: [{ports: [{name: Http, port: 80}]}]\n",
		     "subsets[0].ports[0].name: 'Http' is not a valid DNS-1123 label");
	INVALID_ONLY(EP "subsets: [{ports: [{port: 80, protocol: IP}]}]\n",
		     "subsets[0].ports[0].protocol: 'IP' is not one of TCP, UDP, SCTP");
}

/* ---- EndpointSlice ---- */

#define ES "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: web-1, namespace: red, " \
	   "labels: {kubernetes.io/service-name: web}}\n"

TEST(endpointslice_valid)
{
	VALID(ES "addressType: IPv4\nendpoints:\n- addresses: [10.128.2.5]\n"
		 "  conditions: {ready: true, serving: true, terminating: false}\n  nodeName: node-1\n"
		 "  targetRef: {kind: Pod, namespace: red, name: a}\nports: [{name: http, port: 8080, protocol: TCP}]\n");
	VALID(ES "addressType: IPv4\nendpoints: []\n");
	VALID(ES "addressType: IPv4\n");
}

TEST(endpointslice_address_type)
{
	INVALID_ONLY(ES "endpoints: []\n", "addressType: required");
	INVALID_ONLY(ES "addressType: IPv6\n",
		     "addressType: 'IPv6' is not supported: weft is IPv4 only (must be 'IPv4')");
	INVALID_ONLY(ES "addressType: FQDN\n",
		     "addressType: 'FQDN' is not supported: weft is IPv4 only (must be 'IPv4')");
}

TEST(endpointslice_endpoints)
{
	char yaml[65536];
	size_t n;

	INVALID_ONLY(ES "addressType: IPv4\nendpoints: [{nodeName: n}]\n", "endpoints[0].addresses: required");
	INVALID_ONLY(ES "addressType: IPv4\nendpoints: [{addresses: []}]\n",
		     "endpoints[0].addresses: must have at least 1 item");
	INVALID_ONLY(ES "addressType: IPv4\nendpoints: [{addresses: [10.1.1.01]}]\n",
		     "endpoints[0].addresses[0]: '10.1.1.01' is not a valid IPv4 address");
	INVALID_ONLY(ES "addressType: IPv4\nendpoints: [{addresses: [10.1.1.1], conditions: {ready: yes}}]\n",
		     "endpoints[0].conditions.ready: must be a boolean, not a string");
	INVALID_ONLY(ES "addressType: IPv4\nendpoints: [{addresses: [10.1.1.1], nodeName: Node_1}]\n",
		     "endpoints[0].nodeName: 'Node_1' is not a valid DNS-1123 subdomain");
	/* 1001 endpoints */
	n = (size_t)snprintf(yaml, sizeof(yaml), ES "addressType: IPv4\nendpoints:\n");
	for (int i = 0; i < 1001; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "- {addresses: [10.1.%d.%d]}\n", i / 250, i % 250 + 1);
	CHECK_EQ(validate(yaml), -EINVAL);
	CHECK_CONTAINS(err, "endpoints: too many items (1001, at most 1000)");
	/* 101 addresses in one */
	n = (size_t)snprintf(yaml, sizeof(yaml), ES "addressType: IPv4\nendpoints:\n- addresses:\n");
	for (int i = 0; i < 101; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "  - 10.2.0.%d\n", i + 1);
	CHECK_EQ(validate(yaml), -EINVAL);
	CHECK_CONTAINS(err, "endpoints[0].addresses: too many items (101, at most 100)");
}

TEST(endpointslice_ports)
{
	char yaml[16384];
	size_t n;

	INVALID_ONLY(ES "addressType: IPv4\nports: [{name: http}]\n", "ports[0].port: required");
	INVALID_ONLY(ES "addressType: IPv4\nports: [{name: Http, port: 80}]\n",
		     "ports[0].name: 'Http' is not a valid DNS-1123 label");
	INVALID_ONLY(ES "addressType: IPv4\nports: [{port: 80, protocol: IP}]\n",
		     "ports[0].protocol: 'IP' is not one of TCP, UDP, SCTP");
	INVALID_ONLY(ES "addressType: IPv4\nports: [{port: 0}]\n", "ports[0].port: 0 is not a valid port (1-65535)");
	n = (size_t)snprintf(yaml, sizeof(yaml), ES "addressType: IPv4\nports:\n");
	for (int i = 0; i < 101; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "- {name: p%d, port: %d}\n", i, i + 1);
	CHECK_EQ(validate(yaml), -EINVAL);
	CHECK_CONTAINS(err, "ports: too many items (101, at most 100)");
}

/* ---- PodPeerSlice ---- */

#define PPS "apiVersion: network.weft.io/v1\nkind: PodPeerSlice\nmetadata: {name: node-1-1, " \
	    "labels: {network.weft.io/node: node-1}}\n"

TEST(podpeerslice_valid)
{
	VALID(PPS "node: node-1\nidentities:\n- namespace: red\n  labels: {pod: a}\n"
		  "  ports: [{name: serve-80-tcp, protocol: TCP, port: 80}]\n- {namespace: blue, labels: {}}\n"
		  "pods: [{name: a, ip: 10.128.0.5, identity: 0}, {name: b, ip: 10.128.0.6, identity: 1}]\n");
	VALID(PPS "node: node-1\n");
}

TEST(podpeerslice_fields)
{
	char yaml[16384];
	size_t n;

	INVALID_ONLY(PPS "pods: []\n", "node: required");
	INVALID_ONLY(PPS "node: Node_1\n", "node: 'Node_1' is not a valid DNS-1123 subdomain");
	INVALID_ONLY(PPS "node: n\nidentities: [{labels: {}}]\n", "identities[0].namespace: required");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x, labels: {a: 1}}]\n",
		     "identities[0].labels[a]: must be a string, not an integer");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x, ports: [{name: h, port: 0}]}]\n",
		     "identities[0].ports[0].port: 0 is not a valid port (1-65535)");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x, ports: [{name: h, port: 1, protocol: IP}]}]\n",
		     "identities[0].ports[0].protocol: 'IP' is not one of TCP, UDP, SCTP");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x, ports: [{port: 1}]}]\n",
		     "identities[0].ports[0].name: required");
	INVALID_ONLY(PPS "node: n\npods: [{name: a, ip: 10.1.1.1, identity: 0}]\n",
		     "pods[0].identity: 0 is not an index of identities (0 listed)");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x}]\npods: [{name: a, ip: 10.1.1.01, identity: 0}]\n",
		     "pods[0].ip: '10.1.1.01' is not a valid IPv4 address");
	INVALID_ONLY(PPS "node: n\nidentities: [{namespace: x}]\npods: [{ip: 10.1.1.1, identity: 0}]\n",
		     "pods[0].name: required");
	n = (size_t)snprintf(yaml, sizeof(yaml), PPS "node: n\nidentities: [{namespace: x}]\npods:\n");
	for (int i = 0; i < PODPEERSLICE_MAX_PODS + 1; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "- {name: p%d, ip: 10.1.0.%d, identity: 0}\n", i, i + 1);
	CHECK_EQ(validate(yaml), -EINVAL);
	CHECK_CONTAINS(err, "pods: too many items (101, at most 100)");
}

/* ---- NetworkPolicy ---- */

#define NP "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\n"

TEST(netpol_valid)
{
	VALID(NP "spec:\n  podSelector: {matchLabels: {pod: a}}\n  policyTypes: [Ingress, Egress]\n"
		 "  ingress:\n  - from:\n    - podSelector: {matchLabels: {pod: b}}\n"
		 "      namespaceSelector: {matchExpressions: [{key: ns, operator: In, values: [y, z]}]}\n"
		 "    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16, 10.2.3.4/32]}\n"
		 "    ports:\n    - {port: 80}\n    - {protocol: UDP, port: serve-81-udp}\n"
		 "    - {port: 8000, endPort: 9000}\n  - {}\n"
		 "  egress:\n  - to: [{namespaceSelector: {}}]\n    ports: [{protocol: SCTP}]\n");
	VALID(NP "spec: {podSelector: {}}\n");
	VALID(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: Exists}, "
		 "{key: b, operator: DoesNotExist, values: []}]}, ingress: []}\n");
}

TEST(netpol_pod_selector_required)
{
	INVALID_ONLY(NP "spec: {ingress: [{}]}\n", "spec.podSelector: required");
	INVALID_ONLY(NP "spec: {podSelector: []}\n", "spec.podSelector: must be an object, not a list");
	INVALID_ONLY(NP, "spec: required");
}

TEST(netpol_label_selectors)
{
	INVALID_ONLY(NP "spec: {podSelector: {matchLabels: {'a b': c}}}\n",
		     "spec.podSelector.matchLabels: 'a b' is not a valid label key");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: Equals, values: [b]}]}}\n",
		     "spec.podSelector.matchExpressions[0].operator: 'Equals' is not one of In, NotIn, Exists, DoesNotExist");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: In}]}}\n",
		     "spec.podSelector.matchExpressions[0].values: must be non-empty for operator In");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: NotIn, values: []}]}}\n",
		     "spec.podSelector.matchExpressions[0].values: must be non-empty for operator NotIn");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}\n",
		     "spec.podSelector.matchExpressions[0].values: must be empty for operator Exists");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{operator: Exists}]}}\n",
		     "spec.podSelector.matchExpressions[0].key: required");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: -a, operator: Exists}]}}\n",
		     "spec.podSelector.matchExpressions[0].key: '-a' is not a valid label key");
	INVALID_ONLY(NP "spec: {podSelector: {matchExpressions: [{key: a, operator: In, values: ['b c']}]}}\n",
		     "spec.podSelector.matchExpressions[0].values[0]: 'b c' is not a valid label value");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {a: '-'}}}]}]}\n",
		     "spec.ingress[0].from[0].namespaceSelector.matchLabels[a]: '-' is not a valid label value");
}

TEST(netpol_policy_types)
{
	INVALID_ONLY(NP "spec: {podSelector: {}, policyTypes: [Ingress, ingress]}\n",
		     "spec.policyTypes[1]: 'ingress' is not one of Ingress, Egress");
	INVALID_ONLY(NP "spec: {podSelector: {}, policyTypes: [Egress, Egress]}\n",
		     "spec.policyTypes[1]: duplicate 'Egress'");
}

TEST(netpol_peers)
{
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{}]}]}\n",
		     "spec.ingress[0].from[0]: must have podSelector, namespaceSelector or ipBlock");
	INVALID_ONLY(NP "spec: {podSelector: {}, egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]}\n",
		     "spec.egress[0].to[0]: ipBlock cannot be combined with podSelector or namespaceSelector");
	INVALID(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8}, namespaceSelector: {}}]}]}\n",
		"spec.ingress[0].from[0]: ipBlock cannot be combined");
}

TEST(netpol_ip_block)
{
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {except: [10.0.0.0/8]}}]}]}\n",
		     "spec.ingress[0].from[0].ipBlock.cidr: required");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.1/8}}]}]}\n",
		     "spec.ingress[0].from[0].ipBlock.cidr: '10.0.0.1/8' has host bits set (did you mean 10.0.0.0/8?)");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.1.0.0/24]}}]}]}\n",
		     "spec.ingress[0].from[0].ipBlock.except[0]: 10.1.0.0/24 is not strictly inside 10.0.0.0/16");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.0.0.0/16]}}]}]}\n",
		     "spec.ingress[0].from[0].ipBlock.except[0]: 10.0.0.0/16 is not strictly inside 10.0.0.0/16");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.0.0.0/24, x]}}]}]}\n",
		     "spec.ingress[0].from[0].ipBlock.except[1]: 'x' is not a valid CIDR (a.b.c.d/n)");
}

TEST(netpol_ports)
{
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{ports: [{port: 80, endPort: 79}]}]}\n",
		     "spec.ingress[0].ports[0].endPort: 79 is less than port 80");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{ports: [{port: http, endPort: 90}]}]}\n",
		     "spec.ingress[0].ports[0].endPort: requires a numeric port");
	INVALID_ONLY(NP "spec: {podSelector: {}, ingress: [{ports: [{endPort: 90}]}]}\n",
		     "spec.ingress[0].ports[0].endPort: requires a numeric port");
	INVALID_ONLY(NP "spec: {podSelector: {}, egress: [{ports: [{port: 0}]}]}\n",
		     "spec.egress[0].ports[0].port: 0 is not a valid port (1-65535)");
	INVALID_ONLY(NP "spec: {podSelector: {}, egress: [{ports: [{port: Serve_80}]}]}\n",
		     "spec.egress[0].ports[0].port: 'Serve_80' is not a valid port name");
	INVALID_ONLY(NP "spec: {podSelector: {}, egress: [{ports: [{protocol: ICMP}]}]}\n",
		     "spec.egress[0].ports[0].protocol: 'ICMP' is not one of TCP, UDP, SCTP");
	VALID(NP "spec: {podSelector: {}, egress: [{ports: [{port: 80, endPort: 80}]}]}\n");
}

/* ---- Ingress ---- */

#define ING "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: red}\n"
#define BACKEND "backend: {service: {name: web, port: {number: 80}}}"

TEST(ingress_valid)
{
	VALID(ING "spec:\n  rules:\n  - host: www.example.com\n    http:\n      paths:\n"
		  "      - {path: /, pathType: Prefix, " BACKEND "}\n"
		  "      - {path: /api, pathType: Exact, backend: {service: {name: api, port: {name: http}}}}\n"
		  "  - host: '*.example.com'\n    http: {paths: [{pathType: ImplementationSpecific, " BACKEND "}]}\n"
		  "  tls: [{hosts: [www.example.com, '*.example.com'], secretName: www-tls}]\n");
	VALID(ING "spec: {defaultBackend: {service: {name: web, port: {number: 8080}}}}\n");
	VALID(ING "spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, " BACKEND "}]}}]}\n");
}

TEST(ingress_host)
{
	INVALID_ONLY(ING "spec: {rules: [{host: My_Host, http: {paths: [{path: /, pathType: Prefix, " BACKEND "}]}}]}\n",
		     "spec.rules[0].host: 'My_Host' is not a valid DNS name");
	INVALID(ING "spec: {rules: [{host: 'a.*.com'}], " "defaultBackend: {service: {name: w, port: {number: 1}}}}\n",
		"spec.rules[0].host: 'a.*.com' is not a valid DNS name");
	INVALID(ING "spec: {rules: [{host: '*'}], defaultBackend: {service: {name: w, port: {number: 1}}}}\n",
		"spec.rules[0].host: '*' is not a valid DNS name");
	INVALID(ING "spec: {rules: [{host: '*a.com'}], defaultBackend: {service: {name: w, port: {number: 1}}}}\n",
		"spec.rules[0].host: '*a.com' is not a valid DNS name");
	INVALID(ING "spec: {rules: [{host: 10.0.0.1}], defaultBackend: {service: {name: w, port: {number: 1}}}}\n",
		"spec.rules[0].host: '10.0.0.1' must be a DNS name, not an IP address");
	INVALID(ING "spec: {rules: [{host: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com}], "
		    "defaultBackend: {service: {name: w, port: {number: 1}}}}\n",
		"is not a valid DNS name");
}

TEST(ingress_paths)
{
	INVALID_ONLY(ING "spec: {rules: [{host: a.com, http: {}}]}\n", "spec.rules[0].http.paths: required");
	INVALID_ONLY(ING "spec: {rules: [{host: a.com, http: {paths: []}}]}\n",
		     "spec.rules[0].http.paths: must not be empty");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{path: /, " BACKEND "}]}}]}\n",
		     "spec.rules[0].http.paths[0].pathType: required");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{path: /, pathType: Regex, " BACKEND "}]}}]}\n",
		     "spec.rules[0].http.paths[0].pathType: 'Regex' is not one of Exact, Prefix, ImplementationSpecific");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{path: foo, pathType: Prefix, " BACKEND "}]}}]}\n",
		     "spec.rules[0].http.paths[0].path: 'foo' must start with '/'");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{pathType: Exact, " BACKEND "}]}}]}\n",
		     "spec.rules[0].http.paths[0].path: required");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{path: /, pathType: Prefix}]}}]}\n",
		     "spec.rules[0].http.paths[0].backend: required");
}

TEST(ingress_backend)
{
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {port: {number: 80}}}}\n",
		     "spec.defaultBackend.service.name: required");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: Web, port: {number: 80}}}}\n",
		     "spec.defaultBackend.service.name: 'Web' is not a valid DNS-1123 label");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: web}}}\n",
		     "spec.defaultBackend.service.port: required");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: web, port: {number: 80, name: http}}}}\n",
		     "spec.defaultBackend.service.port: number and name are mutually exclusive");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: web, port: {}}}}\n",
		     "spec.defaultBackend.service.port: needs a number or a name");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: web, port: {number: 0}}}}\n",
		     "spec.defaultBackend.service.port.number: 0 is not a valid port (1-65535)");
	INVALID_ONLY(ING "spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {}}]}}]}\n",
		     "spec.rules[0].http.paths[0].backend.service: required");
}

TEST(ingress_needs_rules_or_default)
{
	INVALID_ONLY(ING "spec: {}\n", "spec: must have rules or a defaultBackend");
	INVALID_ONLY(ING "spec: {rules: []}\n", "spec: must have rules or a defaultBackend");
}

TEST(ingress_tls)
{
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: w, port: {number: 1}}}, tls: [{hosts: [Bad_Host]}]}\n",
		     "spec.tls[0].hosts[0]: 'Bad_Host' is not a valid DNS name");
	INVALID_ONLY(ING "spec: {defaultBackend: {service: {name: w, port: {number: 1}}}, tls: [{secretName: Bad_Secret}]}\n",
		     "spec.tls[0].secretName: 'Bad_Secret' is not a valid DNS-1123 subdomain");
}

/* ---- Route ---- */

#define ROUTE "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r, namespace: red}\n"

TEST(route_valid)
{
	VALID(ROUTE "spec:\n  host: www.example.com\n  path: /shop\n  to: {kind: Service, name: web, weight: 80}\n"
		    "  alternateBackends: [{name: web-b, weight: 20}, {kind: Service, name: web-c, weight: 0}]\n"
		    "  port: {targetPort: http}\n  tls: {termination: edge, insecureEdgeTerminationPolicy: Redirect}\n"
		    "  wildcardPolicy: None\n");
	VALID(ROUTE "spec: {to: {name: web}}\n");
	VALID(ROUTE "spec: {host: a.example.com, to: {name: web}, port: {targetPort: 8443}, "
		    "tls: {termination: passthrough, insecureEdgeTerminationPolicy: Redirect}}\n");
	VALID(ROUTE "spec: {to: {name: web}, tls: {termination: reencrypt, destinationCACertificate: x}}\n");
	VALID(ROUTE "spec: {host: example.com, to: {name: web}, wildcardPolicy: Subdomain}\n");
}

TEST(route_host_and_path)
{
	INVALID_ONLY(ROUTE "spec: {host: Www.Example.com, to: {name: web}}\n",
		     "spec.host: 'Www.Example.com' is not a valid DNS name");
	INVALID_ONLY(ROUTE "spec: {path: shop, to: {name: web}}\n", "spec.path: 'shop' must start with '/'");
	/* a host's labels stay within DNS's 63 bytes (names need not) */
	VALID(ROUTE "spec: {host: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com, to: {name: web}}\n");
	INVALID(ROUTE "spec: {host: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com, to: {name: web}}\n",
		"is not a valid DNS name");
}

TEST(route_to)
{
	INVALID_ONLY(ROUTE "spec: {host: a.com}\n", "spec.to: required");
	INVALID_ONLY(ROUTE "spec: {to: {kind: Service}}\n", "spec.to.name: required");
	INVALID_ONLY(ROUTE "spec: {to: {kind: Pod, name: web}}\n",
		     "spec.to.kind: 'Pod' is not supported (only Service)");
	INVALID_ONLY(ROUTE "spec: {to: {name: web, weight: 257}}\n",
		     "spec.to.weight: 257 is not a valid weight (0-256)");
	INVALID_ONLY(ROUTE "spec: {to: {name: web, weight: -1}}\n",
		     "spec.to.weight: -1 is not a valid weight (0-256)");
}

TEST(route_alternate_backends)
{
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, alternateBackends: [{name: a}, {name: b}, {name: c}, {name: d}]}\n",
		     "spec.alternateBackends: too many backends (4, at most 3)");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, alternateBackends: [{name: a}, {weight: 5}]}\n",
		     "spec.alternateBackends[1].name: required");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, alternateBackends: [{name: a, weight: 300}]}\n",
		     "spec.alternateBackends[0].weight: 300 is not a valid weight (0-256)");
}

TEST(route_target_port)
{
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, port: {targetPort: 0}}\n",
		     "spec.port.targetPort: 0 is not a valid port (1-65535)");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, port: {targetPort: Http}}\n",
		     "spec.port.targetPort: 'Http' is not a valid port name");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, port: {}}\n", "spec.port.targetPort: required");
}

TEST(route_tls)
{
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, tls: {insecureEdgeTerminationPolicy: Allow}}\n",
		     "spec.tls.termination: required");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, tls: {termination: Edge}}\n",
		     "spec.tls.termination: 'Edge' is not one of edge, passthrough, reencrypt");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, tls: {termination: edge, insecureEdgeTerminationPolicy: Deny}}\n",
		     "spec.tls.insecureEdgeTerminationPolicy: 'Deny' is not one of None, Allow, Redirect");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, tls: {termination: passthrough, insecureEdgeTerminationPolicy: Allow}}\n",
		     "spec.tls.insecureEdgeTerminationPolicy: Allow is not valid with passthrough termination");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, path: /x, tls: {termination: passthrough}}\n",
		     "spec.path: a passthrough route cannot have a path");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, tls: {termination: edge, destinationCACertificate: x}}\n",
		     "spec.tls.destinationCACertificate: only valid with reencrypt termination");
	INVALID(ROUTE "spec: {to: {name: web}, tls: {termination: passthrough, key: k}}\n",
		"spec.tls.key: must be empty with passthrough termination");
	VALID(ROUTE "spec: {to: {name: web}, path: /x, tls: {termination: edge, insecureEdgeTerminationPolicy: Allow}}\n");
}

TEST(route_wildcard_policy)
{
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, wildcardPolicy: All}\n",
		     "spec.wildcardPolicy: 'All' is not one of None, Subdomain");
	INVALID_ONLY(ROUTE "spec: {to: {name: web}, wildcardPolicy: Subdomain}\n",
		     "spec.host: required with wildcardPolicy Subdomain");
}

/* ---- Secret ---- */

#define SECRET "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: red}\n"

TEST(secret_valid)
{
	VALID(SECRET "type: Opaque\ndata: {password: cGFzc3dvcmQ=, empty: '', a.b_c-d: YQ==}\n"
		     "stringData: {user: admin}\n");
	VALID(SECRET "type: kubernetes.io/tls\ndata: {tls.crt: Y2VydA==, tls.key: a2V5}\n");
	VALID(SECRET "type: kubernetes.io/tls\ndata: {tls.crt: Y2VydA==}\nstringData: {tls.key: k}\n");
	VALID(SECRET "data: {wrapped: \"YWJj\\nZGVm\\n\"}\n");
	VALID(SECRET "type: example.com/custom\n");
}

TEST(secret_data_is_base64)
{
	INVALID_ONLY(SECRET "data: {password: abc}\n", "data[password]: must be valid base64");
	INVALID_ONLY(SECRET "data: {password: 'ab=c'}\n", "data[password]: must be valid base64");
	INVALID_ONLY(SECRET "data: {password: '@@@@'}\n", "data[password]: must be valid base64");
	INVALID_ONLY(SECRET "data: {password: 'a==='}\n", "data[password]: must be valid base64");
	INVALID_ONLY(SECRET "data: {password: 12}\n", "data[password]: must be a string");
	/* the value is never echoed */
	INVALID(SECRET "data: {password: 'hunter2!'}\n", "must be valid base64");
	CHECK(strstr(err, "hunter2") == NULL);
}

TEST(secret_keys)
{
	INVALID_ONLY(SECRET "data: {'a b': YQ==}\n",
		     "data: 'a b' is not a valid key ([-._a-zA-Z0-9]+, at most 253)");
	INVALID(SECRET "data: {'..x': YQ==}\n", "data: '..x' is not a valid key");
	INVALID(SECRET "stringData: {'.': x}\n", "stringData: '.' is not a valid key");
	INVALID_ONLY(SECRET "stringData: {k: [x]}\n", "stringData[k]: must be a string");
}

TEST(secret_tls_needs_cert_and_key)
{
	INVALID_ONLY(SECRET "type: kubernetes.io/tls\ndata: {tls.crt: Y2VydA==}\n",
		     "data: a kubernetes.io/tls Secret needs 'tls.key'");
	INVALID(SECRET "type: kubernetes.io/tls\n", "data: a kubernetes.io/tls Secret needs 'tls.crt'");
}

TEST(secret_total_size)
{
	size_t big = 1024 * 1024;
	char *yaml = malloc(big + 200);

	CHECK(yaml);
	int n = snprintf(yaml, 200, SECRET "stringData:\n  k: ");
	memset(yaml + n, 'x', big);
	strcpy(yaml + n + big, "\n");
	VALID(yaml);
	strcpy(yaml + n + big, "\n  j: y\n");
	INVALID(yaml, "data: too large (more than 1048576 bytes)");
	free(yaml);
}

#define TRACE "apiVersion: network.weft.io/v1\nkind: TraceRequest\nmetadata: {name: t}\nspec:\n  nodeName: node-1\n"

TEST(tracerequest_where_it_enters)
{
	VALID(TRACE "  from: Pod\n  source: 10.128.0.5\n  destination: 10.128.2.9\n  protocol: ICMP\n");
	VALID(TRACE "  from: Tunnel\n  source: 10.128.0.5\n  destination: 10.128.2.9\n  protocol: ICMP\n"
		    "  tunnel: {vni: 10, remote: 192.168.1.11}\n");
	VALID(TRACE "  from: Node\n  destination: 10.128.2.9\n  protocol: ICMP\n");	/* the route's source */
	VALID(TRACE "  from: Outside\n  source: 192.168.1.200\n  destination: 192.168.1.11\n"
		    "  sourcePort: 5000\n  destinationPort: 30080\n");
	INVALID_ONLY(TRACE "  from: Outside\n  destination: 192.168.1.11\n  protocol: ICMP\n", "spec.source: required");
	INVALID(TRACE "  from: Host\n  source: 10.128.0.5\n  destination: 10.128.2.9\n  protocol: ICMP\n",
		"spec.from: ");
	INVALID_ONLY(TRACE "  from: Node\n  destination: 10.128.2.9\n  protocol: ICMP\n  pod: 10.128.0.5\n",
		     "spec.pod: only a trace from a Pod leaves a pod's veth");
	INVALID_ONLY(TRACE "  from: Outside\n  source: 192.168.1.200\n  destination: 10.128.2.9\n  protocol: ICMP\n"
			   "  tunnel: {vni: 10, remote: 192.168.1.11}\n",
		     "spec.tunnel: only a trace from the Tunnel carries a tunnel key");
}
