/*
 * netview.h — the cluster as NetworkPolicies see it, for weftctl: the
 * controller's Pods, Namespaces and NetworkPolicies listed once, each pod
 * made a struct netpol_pod (model/netpol.h) and each policy parsed, so that
 * describe and can-reach evaluate with the same code the agent compiles
 * policies with.
 *
 * A namespace's labels are the Namespace's metadata.labels with
 * kubernetes.io/metadata.name=<name> added when missing (Kubernetes sets
 * it on every namespace; a namespaceSelector may name it).  A pod whose
 * Namespace object is missing gets that label alone.
 *
 * Ownership: netview_load fills a zeroed struct netview that owns the
 * replies and everything built from them; netview_free releases it (and
 * accepts a zeroed one).  Pointers returned by the lookups are into it.
 * The lookups scan the pods once: a command runs one or two of them.
 */
#ifndef WEFT_CTL_NETVIEW_H
#define WEFT_CTL_NETVIEW_H

#include "ctl/ctl.h"
#include "model/netpol.h"

struct netview {
	struct ctl_reply pods_reply, ns_reply, pols_reply;
	json_t *ns_labels;		/* namespace name -> its labels (owned) */
	struct netpol_pod *pods;
	size_t npods;
	struct netpol *pols;
	const struct netpol **pol_ptrs;	/* &pols[i], for netpol_decide */
	size_t npols;
};

/* List pods and namespaces, and with policies every NetworkPolicy.  0, or
 * CTL_EXIT_FAIL after printing why (the server, or a policy it holds that
 * netpol_parse refuses, named). */
int netview_load(struct ctl *ctl, struct netview *v, bool policies);
void netview_free(struct netview *v);

/* The pod ns/name, or the pod at ip (network order); NULL if none. */
const struct netpol_pod *netview_pod(const struct netview *v, const char *ns, const char *name);
const struct netpol_pod *netview_pod_at(const struct netview *v, in_addr_t ip);

#endif
