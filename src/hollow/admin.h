/*
 * admin.h — weft-hollow's own calls to the controller, with the admin
 * credential: the objects a run needs (namespaces, services and their
 * Endpoints), the nodes' credentials, the probes' writes and the lists the
 * check compares the maps with.  Each call returns 0, or -1 with err
 * naming the object and the controller's answer.
 */
#ifndef WEFT_HOLLOW_ADMIN_H
#define WEFT_HOLLOW_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "hollow/fleet.h"

struct httpc *admin_client(const struct fleet_opts *o, char *err, size_t len);

/* Create namespace ns (one that exists is fine). */
int admin_namespace(struct httpc *h, const char *ns, char *err, size_t len);

/* Create NetworkPolicy ns/same-namespace: ns's pods take connections
 * from ns's pods only.  It names pods as peers, so every node needs every
 * pod's identity: the agents widen their Pods watch to the cluster. */
int admin_pod_peer_policy(struct httpc *h, const char *ns, char *err, size_t len);

/* Create Service ns/name (ClusterIP, port 80 -> 8080, no selector) and
 * its Endpoints with `endpoints` addresses derived from seed; *svc_rev
 * is raised to the Service's revision, *slices_rev to that of the
 * EndpointSlices the controller mirrored from the Endpoints. */
int admin_service(struct httpc *h, const char *ns, const char *name, unsigned seed,
		  unsigned endpoints, int64_t *svc_rev, int64_t *slices_rev, char *err, size_t len);

/* The address of endpoint i of the Service made with seed: in
 * 172.20.0.0/16, outside the cluster and service networks. */
void admin_endpoint_ip(unsigned seed, unsigned i, char out[INET_ADDRSTRLEN]);

/* Replace the Endpoints of "ns/name" with the addresses addrs (an array
 * of {"ip": ..}, taken) on port 8080; *rev: the newest revision of the
 * Service's EndpointSlices after the write (what a node must have
 * applied to have the change). */
int admin_endpoints_set(struct httpc *h, const char *ns_name, json_t *addrs, int64_t *rev, char *err,
			size_t len);

/* Issue a NodeCredential for node and write its token to file (0600). */
int admin_node_credential(struct httpc *h, const char *node, const char *file, char *err,
			  size_t len);

/* GET path: the size of the object's compact JSON text. */
int admin_text_bytes(struct httpc *h, const char *path, size_t *bytes, char *err, size_t len);

/* GET path (a list); *out: its items (new reference). */
int admin_list(struct httpc *h, const char *path, json_t **out, char *err, size_t len);

#endif
