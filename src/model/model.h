/*
 * model.h — weft's object model: the kinds it knows, how each is named on
 * the API and in manifests, and the validation every write goes through.
 *
 * Objects are Kubernetes-style JSON (apiVersion, kind, metadata, spec,
 * status) held as jansson values.  OpenShift network kinds keep their
 * top-level fields (HostSubnet: host, hostIP, subnet, nodeID; NetNamespace:
 * netname, netid; ClusterNetwork: clusterNetworks, serviceNetwork, ...).
 *
 * Validation is structural and needs no cluster state: required fields,
 * syntax (names, CIDRs, IPs, ports), enums, and relations inside one object
 * (an ipBlock's except inside its cidr, cluster networks that overlap).
 * Checks that need the cluster (a cluster IP inside the service network, a
 * taken NodePort) belong to the controller's allocators.
 *
 * Errors are written to a caller-owned buffer, one per line, each
 * "<field path>: <what is wrong>", e.g.
 *     spec.rules[0].host: 'My_Host' is not a valid DNS name
 * so that a caller can prefix "ingress.yaml doc 2: " to each line.
 */
#ifndef WEFT_MODEL_H
#define WEFT_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cidr.h"
#include "lib/jview.h"

/* A Service's annotation, one per node that could not program it (the
 * reason); the node's agent writes it, and its node credential may write
 * nothing else of a Service (controller/authz.c). */
#define MODEL_ANN_UNPROGRAMMED "weft.io/unprogrammed."

enum kind_id {
	KIND_CLUSTERNETWORK,
	KIND_NODE,
	KIND_HOSTSUBNET,
	KIND_NAMESPACE,
	KIND_NETNAMESPACE,
	KIND_POD,
	KIND_SERVICE,
	KIND_ENDPOINTS,
	KIND_NETWORKPOLICY,
	KIND_INGRESS,
	KIND_ROUTE,
	KIND_SECRET,
	KIND_VIRTUALSERVICE,
	KIND_SSLKEYCERT,
	KIND_ENDPOINTSLICE,
	KIND_PODPEERSLICE,
	KIND_TRACEREQUEST,
	KIND_COUNT
};

struct kind_info {
	enum kind_id id;
	const char *kind;		/* "NetworkPolicy" */
	const char *singular;		/* "networkpolicy" */
	const char *plural;		/* "networkpolicies" */
	const char *shortnames[3];	/* "netpol"; NULL-terminated */
	const char *group;		/* "" for the core group */
	const char *version;		/* "v1" */
	const char *api_version;	/* "networking.k8s.io/v1" or "v1" */
	bool namespaced;
	bool controller_owned;		/* written by the controller only (HostSubnet, NetNamespace) */
	bool status_subresource;	/* has NAME/status, whose status others write (pods, services, ingresses, routes) */
};

const struct kind_info *kind_get(enum kind_id id);
/* By Kind exactly as in a manifest ("Pod"); NULL if unknown. */
const struct kind_info *kind_by_kind(const char *kind);
/* As a user types it: singular, plural, short name or Kind, any case. */
const struct kind_info *kind_lookup(const char *name);
/* By API group ("" = core) and plural, as in a URL path. */
const struct kind_info *kind_by_resource(const char *group, const char *plural);

/* Validate one object: apiVersion, kind, metadata and the kind's own
 * fields.  Returns 0, or -EINVAL with every error found (one a line, at
 * most errlen bytes) in err.  Unknown kinds are an error. */
int model_validate(const json_t *obj, char *err, size_t errlen) __attribute__((warn_unused_result));

/* Fill in the defaults a user may leave out (Service type ClusterIP, port
 * protocol TCP, sessionAffinity None, Secret type Opaque, ...).  The object
 * must have validated. */
void model_default(json_t *obj);

/* Decode a manifest stream (YAML or JSON, several documents; a document of
 * kind List contributes its items, and so does a typed list such as PodList,
 * whose items get its kind and apiVersion when they lack them) into objects.
 * At most YAML_MAX_DOCS documents and MODEL_MAX_OBJECTS objects (a List
 * carries more objects than a stream has documents: 10,000 Services and
 * their Endpoints in one file).  Does not validate.
 * 0 or -EINVAL with "doc N: ..." / "line L, column C: ..." in err.
 * *docs is a malloc'd array of new references: free with yaml_docs_free. */
#define MODEL_MAX_OBJECTS 100000
int model_decode_manifest(const char *buf, size_t len, json_t ***docs, size_t *ndocs,
			  char *err, size_t errlen) __attribute__((warn_unused_result));

/*
 * Limits on one object as it is stored (request.c checks a body against
 * them before anything else; limits.c is where they are counted):
 *   depth   objects and lists nested in each other; the object itself is
 *           level 1, {"spec":{"ports":[{...}]}} is 4 deep.  Every reader
 *           parses with jansson (2048 levels): a list wraps an object in 2
 *           more (List, items), a watch event in 1, so any stored object
 *           stays readable in both with room to spare.
 *   values  JSON values in all (objects, lists, strings, numbers, ...):
 *           bounds what a reader allocates for one object.
 *   bytes   its compact JSON text, as stored.
 * The largest objects weft itself writes (an Endpoints of 4096 addresses:
 * about 30,000 values and 600 KB) are far inside.
 */
#define MODEL_MAX_DEPTH 32
#define MODEL_MAX_VALUES 100000
#define MODEL_MAX_OBJECT_BYTES (3u << 20)

/* 0, or -E2BIG with "<field path>: <which limit>" in err, e.g.
 *   spec.a.a.a[0].a...: nested deeper than 32 levels (the limit)
 * O(size of obj); stops at the first value over a limit. */
int model_check_limits(const json_t *obj, char *err, size_t errlen) __attribute__((warn_unused_result));
/* The text obj is stored as (compact JSON, keys in order), checked: within
 * the limits above, and so that it reads back by the readers' parser
 * settings to an equal object (limits.c, invariant 2: what the walk
 * ensures, without parsing the text again).  0 with *text (malloc'd,
 * NUL-terminated; the caller frees) and *len; -E2BIG over a limit, -EPROTO
 * when it would not read back (a string holding a NUL byte: nothing may be
 * stored then), -ENOMEM; err says which. */
int model_encode_checked(const json_t *obj, char **text, size_t *len, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * A write's body against its path (request.c), before anything else looks
 * at the body: k is the path's kind, ns its namespace ("" or NULL for
 * cluster-scoped kinds), name the name in the path (NULL: a create).
 *   kind, apiVersion   a string equal to the path's; absent or "" is taken
 *                      from the path (as kube-apiserver's decoder does)
 *   metadata           an object (absent: only on create; validation then
 *                      reports it)
 *   metadata.name      a string; on a replace equal to name
 *   metadata.namespace a string; if set, equal to ns (cluster-scoped kinds:
 *                      not set); a namespaced kind's is then set to ns
 *   metadata.resourceVersion  absent, "" or a revision (model_revision_parse)
 *   the limits above
 * Returns 0 (body completed), -EBADMSG when body and path disagree or an
 * identity field is malformed (HTTP 400), -E2BIG over a limit (413), or
 * -ENOMEM.  err names both sides: "body kind 'Secret' does not match the
 * path's resource 'pods' (kind Pod)".  A refused body may have been
 * completed in part: callers drop it.
 */
int model_request_check(const struct kind_info *k, const char *ns, const char *name, json_t *body,
			char *err, size_t errlen) __attribute__((warn_unused_result));
/*
 * The causes of an error text of the validators' form (one problem a line,
 * "FIELD: MESSAGE"; cause.c) as a new JSON array of Kubernetes
 * StatusCauses: {reason, message, field}, field absent where a line names
 * none, reason FieldValueRequired, FieldValueDuplicate,
 * FieldValueNotSupported, FieldValueTooLong, FieldValueTooMany or
 * FieldValueInvalid.  At most MODEL_MAX_CAUSES; NULL when out of memory.
 */
#define MODEL_MAX_CAUSES 64
json_t *model_error_causes(const char *text);
/*
 * A request body (buf, len) as a new JSON value in *out: JSON (duplicate
 * keys refused), or YAML when yaml (application/yaml: exactly one
 * document; anchors and aliases expanded within MODEL_MAX_VALUES values
 * and MODEL_MAX_OBJECT_BYTES bytes of text).  0; -EBADMSG when it does
 * not parse (400), -E2BIG over a limit (413), -ENOMEM; err says why.
 */
int model_body_decode(const char *buf, size_t len, bool yaml, json_t **out, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/*
 * A DELETE's body, Kubernetes DeleteOptions (NULL: there was none): kind
 * absent or DeleteOptions; apiVersion absent, v1, meta.k8s.io/v1 or the
 * path kind's; within the limits; preconditions.resourceVersion a revision
 * > 0, returned in *want_rev (0 when absent).  preconditions.uid and
 * dryRun are refused (weft does not honour them, and ignoring them would
 * delete what the caller meant to keep).  Same returns as
 * model_request_check.
 */
int model_delete_options(const struct kind_info *k, const json_t *body, int64_t *want_rev, char *err,
			 size_t errlen) __attribute__((warn_unused_result));

/* A resourceVersion as weft writes it: decimal digits only (no sign, no
 * space, no suffix), at most INT64_MAX.  0 with *out, or -EINVAL. */
int model_revision_parse(const char *s, int64_t *out) __attribute__((warn_unused_result));

/* Names: Kubernetes' rules. */
/* s[0..n) holds only [-._a-zA-Z0-9] (a ConfigMap or Secret key's letters) */
bool model_key_chars(const char *s, size_t n);
bool model_dns1123_label(const char *s);	/* <= 63, [a-z0-9]([-a-z0-9]*[a-z0-9])? */
bool model_dns1123_subdomain(const char *s);	/* <= 253, labels joined by '.' (any length each, as Kubernetes) */
bool model_dns1035_label(const char *s);	/* label starting with a letter (Service names) */
/* Label keys: [DNS-1123 subdomain '/'] name, name <= 63 of [A-Za-z0-9._-]
 * starting and ending alphanumeric.  Values: "" or such a name. */
bool model_label_key(const char *s);
bool model_label_value(const char *s);
/* IANA_SVC_NAME (named ports): <= 15 of [a-z0-9-], at least one letter, no
 * '-' at either end and no "--". */
bool model_iana_svc_name(const char *s);

/* Accessors that tolerate missing fields (return NULL / "" / fallback). */
const char *obj_kind(const json_t *obj);
const char *obj_name(const json_t *obj);
const char *obj_namespace(const json_t *obj);	/* "" when absent */
const char *obj_str(const json_t *obj, const char *dotted_path);	/* "spec.clusterIP" */
/* The same of an object read through a view (lib/jview.h). */
const char *obj_view_name(struct jval obj);
const char *obj_view_namespace(struct jval obj);	/* "" when absent */
const json_t *obj_at(const json_t *obj, const char *dotted_path);	/* any value; NULL if a step is missing */
json_int_t obj_int(const json_t *obj, const char *dotted_path, json_int_t fallback);

/*
 * The REST path of a kind's collection or object:
 *   core:  /api/v1[/namespaces/NS]/PLURAL[/NAME]
 *   group: /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME]
 * ns NULL or "" for cluster-scoped kinds and for "all namespaces";
 * name NULL for the collection.  Returns the length, or -ENAMETOOLONG.
 */
int model_api_path(const struct kind_info *k, const char *ns, const char *name,
		   char *buf, size_t len);

/*
 * Endpoints from pods (endpoints.c): what the endpoints controller computes
 * for a Service with a selector.  Pure functions; arguments are borrowed.
 */
/* A Service selector (a plain label map) matches labels: every pair is
 * there.  An absent or empty selector selects nothing. */
bool model_selector_matches(const json_t *selector, const json_t *labels);
/* NONE: no status.podIP, or a terminal phase (Succeeded, Failed) — not an
 * endpoint at all.  READY: status.podIP, phase Running or absent, no
 * condition Ready=False, no metadata.deletionTimestamp.  Else NOT_READY. */
enum pod_endpoint_state { POD_ENDPOINT_NONE, POD_ENDPOINT_READY, POD_ENDPOINT_NOT_READY };
enum pod_endpoint_state model_pod_endpoint_state(const json_t *pod);
/* The port a Service port's targetPort means on pod: a number as is (no
 * targetPort: the port), a name through spec.containers[].ports[] with the
 * same name and protocol (default TCP).  0 when the pod has no such port. */
json_int_t model_pod_target_port(const json_t *pod, const json_t *svc_port);
/* The Endpoints subsets of svc from the candidate pods (those not in svc's
 * namespace, not matching its selector or without an IP are skipped):
 * Kubernetes' [{addresses, notReadyAddresses, ports}], pods grouped by
 * their resolved port set, sorted (see endpoints.c).  At most
 * max_addresses addresses (the lowest IPs; *truncated says whether some
 * were left out; truncated may be NULL).  A new array, NULL on ENOMEM. */
json_t *model_endpoints_subsets(const json_t *svc, const json_t *const *pods, size_t npods,
				size_t max_addresses, bool *truncated);

/*
 * EndpointSlices (discovery.k8s.io/v1, endpointslice.c): a Service's
 * endpoints in slices of at most ENDPOINTSLICE_MAX_ENDPOINTS, each slice
 * one port list.  Validation (validate_endpointslice.c) bounds a slice as
 * Kubernetes does; the controller's packing is slice_pack.h's.
 */
#define ENDPOINTSLICE_MAX_ENDPOINTS 1000
#define ENDPOINTSLICE_MAX_ADDRESSES 100	/* of one endpoint */
#define ENDPOINTSLICE_MAX_PORTS 100
#define ENDPOINTSLICE_SERVICE_LABEL "kubernetes.io/service-name"
#define ENDPOINTSLICE_MANAGED_LABEL "endpointslice.kubernetes.io/managed-by"
#define ENDPOINTSLICE_SKIP_MIRROR_LABEL "endpointslice.kubernetes.io/skip-mirror"

/*
 * PodPeerSlices (network.weft.io/v1, cluster-scoped, written by the
 * controller only): the compact table of what NetworkPolicy peers need to
 * know of every pod of the cluster, so that a node whose policies name pods
 * as peers does not need every Pod object.  One set of slices per node,
 * holding that node's pods that have an address:
 *
 *   { "apiVersion": "network.weft.io/v1", "kind": "PodPeerSlice",
 *     "metadata": { "name": "<node>-<n>",
 *                   "labels": { PODPEERSLICE_NODE_LABEL: "<node>",
 *                               PODPEERSLICE_MANAGED_LABEL: PODPEERSLICE_MANAGER } },
 *     "node": "<node>",
 *     "identities": [ { "namespace": "x",
 *                       "labels": { "pod": "a" },              (may be {})
 *                       "ports": [ { "name": "serve-80-tcp",   (named
 *                                    "protocol": "TCP",         container
 *                                    "port": 80 } ] } ],        ports only)
 *     "pods": [ { "name": "a", "ip": "10.128.0.5", "identity": 0 } ] }
 *
 * "identity" indexes "identities"; each identity is listed once in a slice
 * and used by at least one of its pods.  A slice holds at most
 * PODPEERSLICE_MAX_PODS pods.  The ports of an identity are the pod's
 * named container ports, [name, protocol, port] in the order of
 * spec.containers[].ports[] (protocol defaults to TCP).
 */
#define PODPEERSLICE_MAX_PODS 100
#define PODPEERSLICE_NODE_LABEL "network.weft.io/node"
#define PODPEERSLICE_MANAGED_LABEL "network.weft.io/managed-by"
#define PODPEERSLICE_MANAGER "podpeerslice-controller.weft.io"
#define PODPEERSLICE_PATH "/apis/network.weft.io/v1/podpeerslices"

/* TraceRequests (network.weft.io/v1, cluster-scoped; docs/trace.md): one
 * packet to run through one node's loaded programs.  The admin creates
 * it (weftctl trace), the node named by spec.nodeName runs it and writes
 * the answer in its status (the only write a node may make of one):
 *   spec: { "nodeName": "node-1",
 *           "from": "Pod" | "Tunnel" | "Node" | "Outside",
 *                           where the packet enters: a pod's veth, the
 *                           VXLAN device, the node's own stack, the
 *                           underlay device
 *           "protocol": "TCP" | "UDP" | "ICMP",   (TCP when absent)
 *           "source": IP (from Node: optional, the route's when absent),
 *           "destination": IP,
 *           "sourcePort", "destinationPort": 1-65535 (TCP and UDP),
 *           "pod": IP,      from Pod: the pod whose veth it leaves, when
 *                           not the source's (a forged source)
 *           "tunnel": { "vni": 0-16777215, "remote": IP } }
 *                           from Tunnel: the key the sending node set
 *   status: { "action": "Local" | "Tunnel" | "Drop" | ..., "dropReason",
 *             "steps": [...], "packetOut": {...}, "deliveredTo": IP,
 *             "source": IP (from Node: the source the route chose),
 *             "error": "why it could not run" } */
#define TRACEREQUEST_PATH "/apis/network.weft.io/v1/tracerequests"

/* The endpoints subsets list (an Endpoints' subsets, model_endpoints_subsets'
 * or hand-written) as slice endpoints grouped by port list:
 *   { GROUP: { "ports": [...], "endpoints": { IP: endpoint } } }
 * GROUP is model_endpointslice_group of the ports.  An endpoint is
 * {addresses: [IP], conditions: {ready, serving, terminating: false},
 * nodeName, hostname, targetRef {kind, namespace, name, uid}} as the
 * address has them; addresses are ready, notReadyAddresses not.  An IP
 * twice in one group is taken once (ready first).  A new object, NULL on
 * ENOMEM.  subsets is borrowed. */
json_t *model_endpointslice_groups(const json_t *subsets);
/* A port list as a slice carries it ({name (when not empty), port,
 * protocol (default TCP), appProtocol}), new array; and the key of a port
 * list: that list as compact JSON, keys sorted (malloc'd; NULL on ENOMEM). */
json_t *model_endpointslice_ports(const json_t *ports);
char *model_endpointslice_group(const json_t *ports);
/* The key of a slice endpoint: its first address (borrowed), or NULL. */
const char *model_endpointslice_endpoint_key(const json_t *endpoint);
/* Keys in address order: IPv4 numerically, anything else after, by text
 * (strcmp's sign convention). */
int model_endpointslice_key_cmp(const char *a, const char *b);
/* A slice object: labels service-name and managed-by, addressType IPv4,
 * ports (borrowed, as model_endpointslice_ports gives them), endpoints
 * (key → endpoint, borrowed) as a list in address order.  New ref. */
json_t *model_endpointslice_object(const char *ns, const char *name, const char *service,
				   const char *manager, const json_t *ports, const json_t *endpoints);

/* The cluster's network configuration: the ClusterNetwork object "default".
 * The mode says whether namespaces are isolated by VNID (docs/api.md,
 * "Cluster modes and VNIDs"): only in multitenant mode. */
enum cluster_mode { MODE_FLAT, MODE_MULTITENANT, MODE_NETWORKPOLICY };
#define CLUSTER_MAX_NETWORKS 16

struct cluster_config {
	struct {
		struct cidr cidr;
		uint8_t host_subnet_length;	/* host bits: 9 → /23 subnets */
	} networks[CLUSTER_MAX_NETWORKS];
	size_t nnetworks;
	struct cidr service_network;
	enum cluster_mode mode;
	uint16_t vxlan_port;
	uint32_t mtu;				/* 0 = detect */
	struct cidr vip_networks[CLUSTER_MAX_NETWORKS];	/* LoadBalancer VIP pools */
	size_t nvip_networks;
};

/* Defaults: 10.128.0.0/14 with hostSubnetLength 9, 172.30.0.0/16,
 * multitenant, 4789, mtu 0, no VIP pool. */
void cluster_config_default(struct cluster_config *c);
/* From a validated ClusterNetwork object (fields absent take defaults). */
int cluster_config_from_json(const json_t *obj, struct cluster_config *c, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* A ClusterNetwork object (new reference) describing c. */
json_t *cluster_config_to_json(const struct cluster_config *c);
const char *cluster_mode_name(enum cluster_mode m);
/* Whether namespaces get VNIDs of their own in mode m: true in multitenant
 * mode; false in flat and networkpolicy modes, where every NetNamespace has
 * VNID 0 (no namespace is isolated from another by VNID). */
bool cluster_mode_gives_vnids(enum cluster_mode m);

#endif
