/*
 * alloc_service.c — a Service's cluster IP and NodePorts.
 *
 * Cluster IP: the requested one if it is inside the service network, is
 * not its network or broadcast address, and is free; else an error naming
 * it.  Otherwise a random free address (random start, linear probe), so
 * two controllers rarely contend.  A cluster IP is immutable for the
 * service's life; "None" makes a headless service with no allocation.
 *
 * NodePorts (type NodePort/LoadBalancer): 30000–32767.  A requested one is
 * used if free (or already this service's: TCP and UDP may share one),
 * else an error naming its owner; without a request, a random free one
 * (random start, linear probe).  On replace a port keeps its NodePort
 * unless the user asks for another; NodePorts no longer used are released
 * in the same transaction.  Every allocation key is guarded by "still
 * absent".
 *
 * VIPs (type LoadBalancer): alloc_vip.c, called from here.
 */
#include "controller/controller.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void owner_of(const json_t *svc, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", obj_namespace(svc), obj_name(svc));
}

/* 0 free, 1 held by owner, 2 held by someone else (who filled), <0 error */
static int probe(struct registry *r, const char *key, const char *owner, char *who, size_t wholen)
{
	struct store_kv kv = { 0 };
	int err = store_get(r->store, key, &kv, NULL);

	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	snprintf(who, wholen, "%s", kv.value);
	store_kv_free(&kv);
	return strcmp(who, owner) == 0 ? 1 : 2;
}

static bool is_headless(const char *ip) { return ip && strcmp(ip, "None") == 0; }

static int cluster_ip(struct registry *r, struct txnb *b, const json_t *old, json_t *obj,
		      const char *owner, struct status *st)
{
	const struct cidr *net = &r->config.service_network;
	json_t *spec = json_object_get(obj, "spec");
	const char *want = json_string_value(json_object_get(spec, "clusterIP"));
	const char *had = old ? obj_str(old, "spec.clusterIP") : NULL;
	char key[128], who[512], ipbuf[IP4_STRLEN], netbuf[CIDR_STRLEN];
	uint32_t ip;
	int err;

	if (want && !*want)
		want = NULL;
	if (had && *had) {
		if (want && strcmp(want, had) != 0) {
			status_set(st, 422, "Invalid", "spec.clusterIP: field is immutable (it is %s)", had);
			return -1;
		}
		json_object_set_new(spec, "clusterIP", json_string(had));
		return 0;
	}
	if (is_headless(want))
		return 0;
	cidr_format(net, netbuf);
	txnb_unchanged(b, OBJ_PREFIX "clusternetworks/default", r->config_rev);
	if (want) {
		if (ip4_parse(want, &ip) || !cidr_contains_ip(net, ip) || ip == net->addr ||
		    ip == (net->addr | ~cidr_mask(net->len))) {
			status_set(st, 422, "Invalid",
				   "spec.clusterIP: %s is not a usable address in the service network %s", want,
				   netbuf);
			return -1;
		}
		snprintf(key, sizeof(key), ALLOC_CLUSTERIP "%s", want);
		err = probe(r, key, owner, who, sizeof(who));
		if (err < 0)
			goto store_error;
		if (err) {
			status_set(st, 422, "Invalid", "spec.clusterIP: %s is already allocated (to service %s)",
				   want, who);
			return -1;
		}
		txnb_absent(b, key);
		txnb_put(b, key, owner);
		return 0;
	}
	{
		uint64_t size = cidr_size(net);
		uint64_t usable = size > 2 ? size - 2 : 0;
		uint64_t start = usable ? registry_random(r) % usable : 0;

		for (uint64_t i = 0; i < usable; i++) {
			ip = net->addr + 1 + (uint32_t)((start + i) % usable);
			ip4_format(ip, ipbuf);
			snprintf(key, sizeof(key), ALLOC_CLUSTERIP "%s", ipbuf);
			err = probe(r, key, owner, who, sizeof(who));
			if (err < 0)
				goto store_error;
			if (err == 0) {
				txnb_absent(b, key);
				txnb_put(b, key, owner);
				json_object_set_new(spec, "clusterIP", json_string(ipbuf));
				return 0;
			}
		}
	}
	r->metrics->alloc_failures[POOL_CLUSTERIP]++;
	status_set(st, 409, "Exhausted", "no cluster IPs available in %s", netbuf);
	return -1;
store_error:
	status_set(st, 500, "InternalError", "store: %s", strerror(-err));
	return -1;
}

static bool needs_node_ports(const json_t *svc)
{
	const char *type = obj_str(svc, "spec.type");
	return type && (strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0);
}

/* The NodePort the old object gave a port with the same name or
 * port/protocol, or 0. */
static json_int_t previous_node_port(const json_t *old, const json_t *port)
{
	json_t *ports = old && needs_node_ports(old) ? json_object_get(json_object_get(old, "spec"), "ports")
						      : NULL;
	const char *name = json_string_value(json_object_get(port, "name"));
	const char *proto = json_string_value(json_object_get(port, "protocol"));
	json_int_t num = json_integer_value(json_object_get(port, "port"));
	size_t i;
	json_t *p;

	json_array_foreach(ports, i, p) {
		const char *pn = json_string_value(json_object_get(p, "name"));
		const char *pp = json_string_value(json_object_get(p, "protocol"));
		bool same = (name && pn && strcmp(name, pn) == 0) ||
			    (json_integer_value(json_object_get(p, "port")) == num && proto && pp &&
			     strcmp(proto, pp) == 0);
		if (same)
			return json_integer_value(json_object_get(p, "nodePort"));
	}
	return 0;
}

static bool in_list(const json_int_t *list, size_t n, json_int_t v)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

static int old_node_ports(const json_t *old, json_int_t *list, size_t max)
{
	json_t *ports = old && needs_node_ports(old) ? json_object_get(json_object_get(old, "spec"), "ports")
						      : NULL;
	size_t i, n = 0;
	json_t *p;

	json_array_foreach(ports, i, p) {
		json_int_t np = json_integer_value(json_object_get(p, "nodePort"));
		if (np && n < max && !in_list(list, n, np))
			list[n++] = np;
	}
	return (int)n;
}

#define MAX_PORTS 256

static int node_ports(struct registry *r, struct txnb *b, const json_t *old, json_t *obj,
		      const char *owner, struct status *st)
{
	json_t *ports = json_object_get(json_object_get(obj, "spec"), "ports");
	json_int_t had[MAX_PORTS], now[MAX_PORTS];
	size_t nhad, nnow = 0, i;
	json_t *p;
	char key[64], who[512];
	int err;

	nhad = (size_t)old_node_ports(old, had, MAX_PORTS);
	if (json_array_size(ports) > MAX_PORTS) {
		status_set(st, 422, "Invalid", "spec.ports: more than %d ports", MAX_PORTS);
		return -1;
	}
	if (needs_node_ports(obj)) {
		json_array_foreach(ports, i, p) {
			json_int_t np = json_integer_value(json_object_get(p, "nodePort"));

			if (!np)
				np = previous_node_port(old, p);
			if (np) {
				if (!in_list(had, nhad, np) && !in_list(now, nnow, np)) {
					snprintf(key, sizeof(key), ALLOC_NODEPORT "%d", (int)np);
					err = probe(r, key, owner, who, sizeof(who));
					if (err < 0)
						goto store_error;
					if (err == 2) {
						status_set(st, 422, "Invalid",
							   "spec.ports[%zu].nodePort: %d is already allocated (to service %s)",
							   i, (int)np, who);
						return -1;
					}
					txnb_absent(b, key);
					txnb_put(b, key, owner);
				}
			} else {
				int span = NODEPORT_MAX - NODEPORT_MIN + 1;
				int start = (int)(registry_random(r) % (uint64_t)span);

				for (int k = 0; k < span && !np; k++) {
					json_int_t cand = NODEPORT_MIN + (start + k) % span;
					if (in_list(now, nnow, cand) || in_list(had, nhad, cand))
						continue;
					snprintf(key, sizeof(key), ALLOC_NODEPORT "%d", (int)cand);
					err = probe(r, key, owner, who, sizeof(who));
					if (err < 0)
						goto store_error;
					if (err == 0) {
						np = cand;
						txnb_absent(b, key);
						txnb_put(b, key, owner);
					}
				}
				if (!np) {
					r->metrics->alloc_failures[POOL_NODEPORT]++;
					status_set(st, 409, "Exhausted", "no NodePorts available in %d-%d",
						   NODEPORT_MIN, NODEPORT_MAX);
					return -1;
				}
			}
			json_object_set_new(p, "nodePort", json_integer(np));
			if (!in_list(now, nnow, np))
				now[nnow++] = np;
		}
	}
	for (i = 0; i < nhad; i++) {
		if (in_list(now, nnow, had[i]))
			continue;
		snprintf(key, sizeof(key), ALLOC_NODEPORT "%d", (int)had[i]);
		txnb_del(b, key);
	}
	return 0;
store_error:
	status_set(st, 500, "InternalError", "store: %s", strerror(-err));
	return -1;
}

int service_admit(struct registry *r, struct txnb *b, const json_t *old, json_t *obj, struct status *st)
{
	char owner[512];

	owner_of(obj, owner, sizeof(owner));
	if (old && is_headless(obj_str(old, "spec.clusterIP")) &&
	    !is_headless(obj_str(obj, "spec.clusterIP"))) {
		status_set(st, 422, "Invalid", "spec.clusterIP: field is immutable (the service is headless)");
		return -1;
	}
	if (cluster_ip(r, b, old, obj, owner, st) || node_ports(r, b, old, obj, owner, st))
		return -1;
	return vip_admit(r, b, old, obj, owner, st);
}

int service_release(struct registry *r, struct txnb *b, const json_t *old, struct status *st)
{
	const char *ip = obj_str(old, "spec.clusterIP");
	json_int_t had[MAX_PORTS];
	int n = old_node_ports(old, had, MAX_PORTS);
	char key[128];

	(void)r;
	(void)st;
	if (ip && *ip && !is_headless(ip)) {
		snprintf(key, sizeof(key), ALLOC_CLUSTERIP "%s", ip);
		txnb_del(b, key);
	}
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), ALLOC_NODEPORT "%d", (int)had[i]);
		txnb_del(b, key);
	}
	vip_release(b, old);
	return 0;
}
