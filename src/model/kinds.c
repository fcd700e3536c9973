/*
 * kinds.c — the kinds weft knows, as docs/api.md's resource table lists
 * them, and their lookup by Kind, by what a user types, and by URL.
 *
 * Invariant: kinds[i].id == i, so kind_get is an index.
 */
#include "model/model.h"

#include <strings.h>
#include <string.h>

static const struct kind_info kinds[KIND_COUNT] = {
	{ KIND_CLUSTERNETWORK, "ClusterNetwork", "clusternetwork", "clusternetworks", { "cn" },
	  "network.openshift.io", "v1", "network.openshift.io/v1", false, false, false },
	{ KIND_NODE, "Node", "node", "nodes", { "no" }, "", "v1", "v1", false, false, false },
	{ KIND_HOSTSUBNET, "HostSubnet", "hostsubnet", "hostsubnets", { "hs" },
	  "network.openshift.io", "v1", "network.openshift.io/v1", false, true, false },
	{ KIND_NAMESPACE, "Namespace", "namespace", "namespaces", { "ns" }, "", "v1", "v1",
	  false, false, false },
	{ KIND_NETNAMESPACE, "NetNamespace", "netnamespace", "netnamespaces", { "netns" },
	  "network.openshift.io", "v1", "network.openshift.io/v1", false, true, false },
	{ KIND_POD, "Pod", "pod", "pods", { "po" }, "", "v1", "v1", true, false, true },
	{ KIND_SERVICE, "Service", "service", "services", { "svc" }, "", "v1", "v1", true, false, true },
	{ KIND_ENDPOINTS, "Endpoints", "endpoints", "endpoints", { "ep" }, "", "v1", "v1", true,
	  false, false },
	{ KIND_NETWORKPOLICY, "NetworkPolicy", "networkpolicy", "networkpolicies", { "netpol" },
	  "networking.k8s.io", "v1", "networking.k8s.io/v1", true, false, false },
	{ KIND_INGRESS, "Ingress", "ingress", "ingresses", { "ing" }, "networking.k8s.io", "v1",
	  "networking.k8s.io/v1", true, false, true },
	{ KIND_ROUTE, "Route", "route", "routes", { NULL }, "route.openshift.io", "v1",
	  "route.openshift.io/v1", true, false, true },
	{ KIND_SECRET, "Secret", "secret", "secrets", { NULL }, "", "v1", "v1", true, false, false },
	/* the load-balancer model (docs/lb.md): the controller's translation */
	{ KIND_VIRTUALSERVICE, "VirtualService", "virtualservice", "virtualservices", { "vs" },
	  "lb.weft.io", "v1", "lb.weft.io/v1", false, true, true },
	{ KIND_SSLKEYCERT, "SSLKeyAndCertificate", "sslkeyandcertificate", "sslkeyandcertificates",
	  { "sslkc" }, "lb.weft.io", "v1", "lb.weft.io/v1", false, true, false },
	/* a Service's endpoints in slices (docs/services.md); no short name,
	 * as kubectl has none */
	{ KIND_ENDPOINTSLICE, "EndpointSlice", "endpointslice", "endpointslices", { NULL },
	  "discovery.k8s.io", "v1", "discovery.k8s.io/v1", true, false, false },
	/* a node's pods as NetworkPolicy peers (docs/networkpolicy.md):
	 * derived from Pods by the controller, read-only through the API */
	{ KIND_PODPEERSLICE, "PodPeerSlice", "podpeerslice", "podpeerslices", { "pps" },
	  "network.weft.io", "v1", "network.weft.io/v1", false, true, false },
	/* one packet through one node's programs (docs/trace.md): the
	 * admin's request, the node's answer in its status */
	{ KIND_TRACEREQUEST, "TraceRequest", "tracerequest", "tracerequests", { NULL },
	  "network.weft.io", "v1", "network.weft.io/v1", false, false, true },
};

const struct kind_info *kind_get(enum kind_id id)
{
	return (unsigned)id < KIND_COUNT ? &kinds[id] : NULL;
}

const struct kind_info *kind_by_kind(const char *kind)
{
	for (int i = 0; kind && i < KIND_COUNT; i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return &kinds[i];
	return NULL;
}

const struct kind_info *kind_lookup(const char *name)
{
	for (int i = 0; name && i < KIND_COUNT; i++) {
		const struct kind_info *k = &kinds[i];

		if (!strcasecmp(name, k->kind) || !strcasecmp(name, k->singular) ||
		    !strcasecmp(name, k->plural))
			return k;
		for (int j = 0; j < 3 && k->shortnames[j]; j++)
			if (!strcasecmp(name, k->shortnames[j]))
				return k;
	}
	return NULL;
}

const struct kind_info *kind_by_resource(const char *group, const char *plural)
{
	for (int i = 0; group && plural && i < KIND_COUNT; i++)
		if (!strcmp(kinds[i].group, group) && !strcmp(kinds[i].plural, plural))
			return &kinds[i];
	return NULL;
}
