/*
 * netview.c — Pods, Namespaces and NetworkPolicies from the controller,
 * as model/netpol.h evaluates them (netview.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/netview.h"

#define NS_NAME_LABEL "kubernetes.io/metadata.name"

/* GET every object of kind id into r: its items, or NULL after printing why. */
static const json_t *list_all(struct ctl *ctl, enum kind_id id, struct ctl_reply *r)
{
	char path[CTL_LIST_PATH_MAX];

	if (ctl_list_path(kind_get(id), NULL, true, NULL, NULL, path, sizeof(path)))
		return NULL;
	return ctl_list(ctl, path, r);
}

/* The labels of namespace ns (made, with its name label, on first use). */
static const json_t *ns_labels(struct netview *v, const char *ns, const json_t *labels)
{
	json_t *l = json_object_get(v->ns_labels, ns);

	if (l)
		return l;
	l = json_is_object(labels) ? json_deep_copy(labels) : json_object();
	if (!l)
		return NULL;
	if (!json_object_get(l, NS_NAME_LABEL))
		json_object_set_new(l, NS_NAME_LABEL, json_string(ns));
	json_object_set_new(v->ns_labels, ns, l);
	return l;
}

static int load_pods(struct ctl *ctl, struct netview *v)
{
	const json_t *items = list_all(ctl, KIND_POD, &v->pods_reply), *nss, *o;
	size_t i;

	if (!items || !(nss = list_all(ctl, KIND_NAMESPACE, &v->ns_reply)))
		return CTL_EXIT_FAIL;
	v->ns_labels = json_object();
	v->pods = calloc(json_array_size(items) + 1, sizeof(*v->pods));
	if (!v->ns_labels || !v->pods)
		goto nomem;
	json_array_foreach(nss, i, o)
		if (obj_str(o, "metadata.name") &&
		    !ns_labels(v, obj_str(o, "metadata.name"), json_object_get(json_object_get(o, "metadata"), "labels")))
			goto nomem;
	json_array_foreach(items, i, o) {
		struct netpol_pod *p = &v->pods[v->npods];
		const char *ip = obj_str(o, "status.podIP");

		p->ns = obj_str(o, "metadata.namespace");
		p->name = obj_str(o, "metadata.name");
		if (!p->ns || !p->name)
			continue;
		p->ns_labels = ns_labels(v, p->ns, NULL);
		if (!p->ns_labels)
			goto nomem;
		p->labels = json_object_get(json_object_get(o, "metadata"), "labels");
		p->spec = json_object_get(o, "spec");
		if (!ip || inet_pton(AF_INET, ip, &p->ip) != 1)
			p->ip = 0;
		v->npods++;
	}
	return 0;
nomem:
	fprintf(stderr, "error: out of memory\n");
	return CTL_EXIT_FAIL;
}

static int load_policies(struct ctl *ctl, struct netview *v)
{
	const json_t *items = list_all(ctl, KIND_NETWORKPOLICY, &v->pols_reply), *o;
	size_t i;

	if (!items)
		return CTL_EXIT_FAIL;
	v->pols = calloc(json_array_size(items) + 1, sizeof(*v->pols));
	v->pol_ptrs = calloc(json_array_size(items) + 1, sizeof(*v->pol_ptrs));
	if (!v->pols || !v->pol_ptrs) {
		fprintf(stderr, "error: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	json_array_foreach(items, i, o) {
		char err[512];

		if (netpol_parse(o, &v->pols[v->npols], err, sizeof(err))) {
			fprintf(stderr, "error: %s\n", err);
			return CTL_EXIT_FAIL;
		}
		v->pol_ptrs[v->npols] = &v->pols[v->npols];
		v->npols++;
	}
	return 0;
}

int netview_load(struct ctl *ctl, struct netview *v, bool policies)
{
	int rc = load_pods(ctl, v);

	return rc == 0 && policies ? load_policies(ctl, v) : rc;
}

void netview_free(struct netview *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->npols; i++)
		netpol_free(&v->pols[i]);
	free(v->pols);
	free(v->pol_ptrs);
	free(v->pods);
	json_decref(v->ns_labels);
	ctl_reply_free(&v->pods_reply);
	ctl_reply_free(&v->ns_reply);
	ctl_reply_free(&v->pols_reply);
	memset(v, 0, sizeof(*v));
}

const struct netpol_pod *netview_pod(const struct netview *v, const char *ns, const char *name)
{
	for (size_t i = 0; i < v->npods; i++)
		if (!strcmp(v->pods[i].ns, ns) && !strcmp(v->pods[i].name, name))
			return &v->pods[i];
	return NULL;
}

const struct netpol_pod *netview_pod_at(const struct netview *v, in_addr_t ip)
{
	for (size_t i = 0; ip && i < v->npods; i++)
		if (v->pods[i].ip == ip)
			return &v->pods[i];
	return NULL;
}
