/*
 * discovery.h — what the API serves, described as Kubernetes clients
 * discover it: /version, /api, /api/v1, /apis, /apis/GROUP and
 * /apis/GROUP/VERSION (kubectl, client-go and the Python client read these
 * before any request for an object).
 *
 * The documents are built from the kind table (model.h), so a kind added
 * there is discovered with no change here, and from the few objects the
 * API serves beside the stored kinds (weft.io's NodeCredential: created,
 * listed, got and deleted).  Verbs are what the API does for the kind:
 * every kind is got, listed and watched; the kinds a user writes are also
 * created, patched, updated and deleted; of the ones the controller
 * writes, a HostSubnet is also patched and updated (its annotations), a
 * NetNamespace is not.  Categories: Pods and Services are in `all`, the
 * network's own kinds (ClusterNetwork, HostSubnet, NetNamespace,
 * NodeCredential) in `weft`.
 */
#ifndef WEFT_CONTROLLER_DISCOVERY_H
#define WEFT_CONTROLLER_DISCOVERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

/* The Kubernetes release whose API conventions weft follows (for /version;
 * clients compare it with their own to warn about skew). */
#define DISCOVERY_KUBE_MAJOR "1"
#define DISCOVERY_KUBE_MINOR "28"
#define DISCOVERY_WEFT_VERSION "0.1.0"

/* The CRD list kubectl reads when a kind's OpenAPI has no PATCH: weft
 * serves no CRDs, so always empty (the group itself is not discovered). */
#define CRD_LIST_PATH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

/* True when path is a discovery path (then *out is its document, a new
 * reference, or NULL for a path under /api or /apis that names no group or
 * version weft serves: 404).  server is the address clients reached
 * (the Host header, may be NULL), for /api's serverAddressByClientCIDRs.
 * False for every other path, *out untouched. */
bool discovery_lookup(const char *path, const char *server, json_t **out);

/* The verbs the API serves for kind k, as discovery lists them (a static
 * array of *n names); whether verb is one of them.  The OpenAPI documents
 * describe the same operations (openapi_doc.h). */
const char *const *discovery_verbs(const struct kind_info *k, size_t *n);
bool discovery_allows(const struct kind_info *k, const char *verb);

#endif
