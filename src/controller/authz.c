/*
 * authz.c — what a node's credential may do (the node authorizer).
 *
 * Kubernetes' node authorizer and NodeRestriction admission are the model:
 * a node's agent may read what its data plane needs and write what is its
 * own, and a leaked node credential must not open the cluster.  The admin
 * may do everything.  A node may:
 *
 *   read (get, list, watch)  Nodes, HostSubnets, ClusterNetworks,
 *                            NetNamespaces, Namespaces, Pods, Services,
 *                            Endpoints, EndpointSlices, NetworkPolicies,
 *                            PodPeerSlices: its data plane programs them;
 *                            TraceRequests: it answers those for it
 *                            (it may write neither Endpoints nor
 *                            EndpointSlices: they are the controller's, or
 *                            the admin's; PodPeerSlices only the
 *                            controller's).
 *                            Never Secrets, Ingresses, Routes, nor the
 *                            load balancer's objects (VirtualServices,
 *                            SSLKeyAndCertificates: keys), nor /metrics.
 *   create, update           its own Node (registration and annotations);
 *                            its own HostSubnet, annotations only (the
 *                            registry refuses any other change of a
 *                            HostSubnet, from anyone);
 *                            Pods bound to it (spec.nodeName) before and
 *                            after the write — the pod admission then keeps
 *                            status.podIP inside that node's subnet;
 *                            a Service, only its own annotation
 *                            weft.io/unprogrammed.<node>.
 *   update NAME/status       a Pod's, where the stored Pod is bound to it
 *                            (the status write keeps the stored spec, so
 *                            the binding is the stored one's; the
 *                            admission keeps the podIP in its subnet).
 *                            A TraceRequest's, where the stored one names
 *                            it (spec.nodeName): its answer.
 *                            No other kind's status (a Service's
 *                            status.loadBalancer is the controller's).
 *   delete                   Pods bound to it.
 *   anything else            403.
 *
 * Two steps, because lists and watches are answered before the global lock
 * is taken: authz_route decides by the request alone (verb, kind, path), on
 * MHD's thread; authz_write decides a node's write against the stored
 * object, under the global lock, and returns the revision it read so that
 * the write is made only against that same object (a precondition), never
 * against one changed in between.
 *
 * A refusal names the user as Kubernetes would ("system:node:NAME"), the
 * verb, the resource and the rule that was not met.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const verb_names[] = {
	[AUTHZ_GET] = "get", [AUTHZ_LIST] = "list", [AUTHZ_WATCH] = "watch",
	[AUTHZ_CREATE] = "create", [AUTHZ_UPDATE] = "update", [AUTHZ_DELETE] = "delete",
};

const char *authz_verb_name(enum authz_verb v)
{
	return v <= AUTHZ_DELETE ? verb_names[v] : "?";
}

static bool node_may_read(enum kind_id k)
{
	switch (k) {
	case KIND_NODE: case KIND_HOSTSUBNET: case KIND_CLUSTERNETWORK: case KIND_NETNAMESPACE:
	case KIND_NAMESPACE: case KIND_POD: case KIND_SERVICE: case KIND_ENDPOINTS: case KIND_ENDPOINTSLICE:
	case KIND_NETWORKPOLICY: case KIND_PODPEERSLICE: case KIND_TRACEREQUEST:
		return true;
	default:
		return false;
	}
}

/* The kinds a node may write at all (each further limited by authz_write). */
static bool node_may_write(enum kind_id k, enum authz_verb v)
{
	switch (k) {
	case KIND_NODE:
		return v == AUTHZ_CREATE || v == AUTHZ_UPDATE;
	case KIND_HOSTSUBNET: case KIND_SERVICE: case KIND_TRACEREQUEST:
		return v == AUTHZ_UPDATE;
	case KIND_POD:
		return true;
	default:
		return false;
	}
}

__attribute__((format(printf, 5, 6)))
static int forbid(struct status *st, const struct principal *p, enum authz_verb v, const struct route *r,
		  const char *why, ...)
{
	char reason[512], where[300] = "", named[300] = "";
	va_list ap;

	va_start(ap, why);
	vsnprintf(reason, sizeof(reason), why, ap);
	va_end(ap);
	if (!r || !r->kind) {
		status_set(st, 403, "Forbidden", "User \"system:node:%s\" cannot %s this path: %s", p->node,
			   authz_verb_name(v), reason);
		return -1;
	}
	if (r->ns[0])
		snprintf(where, sizeof(where), " in the namespace \"%s\"", r->ns);
	if (r->has_name)
		snprintf(named, sizeof(named), " \"%s\"", r->name);
	status_set(st, 403, "Forbidden",
		   "%s%s is forbidden: User \"system:node:%s\" cannot %s resource \"%s\" in API group \"%s\"%s: %s",
		   r->kind->plural, named, p->node, authz_verb_name(v), r->kind->plural, r->kind->group, where,
		   reason);
	return -1;
}

int authz_route(const struct principal *p, enum authz_verb v, const struct route *r, struct status *st)
{
	if (p->admin)
		return 0;
	if (!r || !r->kind || r->podnetwork)
		return forbid(st, p, v, NULL, "only the admin may");
	if (v == AUTHZ_GET || v == AUTHZ_LIST || v == AUTHZ_WATCH) {
		if (node_may_read(r->kind->id))
			return 0;
		return forbid(st, p, v, r, "a node reads only what its data plane programs");
	}
	if (!node_may_write(r->kind->id, v))
		return forbid(st, p, v, r, "a node writes only its own Node, its HostSubnet's annotations, the "
					   "Pods bound to it, its own annotation on a Service and the answers "
					   "of the TraceRequests for it");
	return 0;
}

/* The stored object the route names: 0 with *obj and *rev, 0 with *obj
 * NULL when there is none, -1 with st set when the store failed. */
static int stored(struct registry *reg, const struct route *r, json_t **obj, int64_t *rev, struct status *st)
{
	struct status miss = { 0 };
	const char *rv;

	*obj = NULL;
	*rev = 0;
	if (registry_get(reg, r->kind, r->ns, r->name, obj, &miss)) {
		if (miss.code == 404)
			return 0;
		*st = miss;
		return -1;
	}
	rv = obj_str(*obj, "metadata.resourceVersion");
	if (!rv || model_revision_parse(rv, rev)) {
		json_decref(*obj);
		*obj = NULL;
		status_set(st, 500, "InternalError", "%s \"%s\": stored without a revision", r->kind->plural, r->name);
		return -1;
	}
	return 0;
}

static bool bound_to(const json_t *pod, const char *node)
{
	const char *n = obj_str(pod, "spec.nodeName");
	return n && strcmp(n, node) == 0;
}

/* o as a node's Service write is compared: without what the node may
 * change (its own annotation), the revision, kind and apiVersion (the
 * request check holds those to the path), and without a status (a write
 * of the main resource ignores the body's, registry.c main_status). */
static json_t *service_sans_own(const json_t *o, const char *annotation)
{
	json_t *c = json_deep_copy(o), *md = json_object_get(c, "metadata");
	json_t *ann = json_object_get(md, "annotations");

	json_object_del(md, "resourceVersion");
	json_object_del(c, "kind");
	json_object_del(c, "apiVersion");
	json_object_del(c, "status");
	if (json_is_object(ann)) {
		json_object_del(ann, annotation);
		if (json_object_size(ann) == 0)
			json_object_del(md, "annotations");
	}
	return c;
}

static int service_write(const struct principal *p, const struct route *r, const json_t *body,
			 const json_t *old, struct status *st)
{
	char annotation[320];
	json_t *a, *b;
	bool same;

	snprintf(annotation, sizeof(annotation), "%s%s", MODEL_ANN_UNPROGRAMMED, p->node);
	a = service_sans_own(body, annotation);
	b = service_sans_own(old, annotation);
	same = a && b && json_equal(a, b);
	json_decref(a);
	json_decref(b);
	if (!same)
		return forbid(st, p, AUTHZ_UPDATE, r, "a node may change only its own annotation %s on a Service",
			      annotation);
	return 0;
}

int authz_write(struct registry *reg, const struct principal *p, enum authz_verb v, const struct route *r,
		const json_t *body, int64_t *pin_rev, struct status *st)
{
	json_t *old = NULL;
	int rc = 0;

	*pin_rev = 0;
	if (p->admin)
		return 0;
	if (authz_route(p, v, r, st))
		return -1;
	switch (r->kind->id) {
	case KIND_NODE: {
		/* POST names the node in its body, PUT in its path (the request
		 * check holds the body to the path) */
		const char *name = v == AUTHZ_CREATE ? obj_name(body) : r->name;
		if (!name || strcmp(name, p->node) != 0)
			return forbid(st, p, v, r, "a node may write only its own Node (\"%s\")", p->node);
		return 0;
	}
	case KIND_HOSTSUBNET:
		if (strcmp(r->name, p->node) != 0)
			return forbid(st, p, v, r, "a node may write only its own HostSubnet (\"%s\")", p->node);
		return 0;	/* annotations only: the registry's rule for every writer */
	case KIND_POD:
		if (r->status) {
			/* the body's spec is ignored: the stored pod decides */
			if (stored(reg, r, &old, pin_rev, st))
				return -1;
			if (!old || !bound_to(old, p->node))
				rc = forbid(st, p, v, r, "a node may write the status only of pods bound to it "
							 "(spec.nodeName \"%s\")", p->node);
			json_decref(old);
			return rc;
		}
		if (v != AUTHZ_DELETE && !bound_to(body, p->node))
			return forbid(st, p, v, r, "a node may write only pods bound to it (spec.nodeName \"%s\")",
				      p->node);
		if (v == AUTHZ_CREATE)
			return 0;
		if (stored(reg, r, &old, pin_rev, st))
			return -1;
		/* a pod nobody has bound yet may be bound by the node that runs it */
		if (old && obj_str(old, "spec.nodeName") && !bound_to(old, p->node))
			rc = forbid(st, p, v, r, "the pod is bound to node \"%s\"", obj_str(old, "spec.nodeName"));
		json_decref(old);
		return rc;
	case KIND_TRACEREQUEST:
		if (!r->status)
			return forbid(st, p, v, r, "a node may write only a TraceRequest's status (its answer)");
		if (stored(reg, r, &old, pin_rev, st))
			return -1;
		if (!old || !bound_to(old, p->node))
			rc = forbid(st, p, v, r, "a node answers only the TraceRequests for it (spec.nodeName \"%s\")",
				    p->node);
		json_decref(old);
		return rc;
	case KIND_SERVICE:
		if (r->status)
			return forbid(st, p, v, r, "a node may not write a Service's status");
		if (stored(reg, r, &old, pin_rev, st))
			return -1;
		if (!old)
			return forbid(st, p, v, r, "a node may not create Services");
		rc = service_write(p, r, body, old, st);
		json_decref(old);
		return rc;
	default:
		return forbid(st, p, v, r, "not a kind a node writes");
	}
}
