/*
 * registry_test.c — the registry and its allocators on a real SQLite store:
 * node IDs and subnets, VNIDs and the pod-network verbs, cluster IPs and
 * NodePorts, config changes, namespace deletion; randomized runs checked
 * against naive references; two processes racing on one store.
 */
#include "controller/registry_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(node_ids_and_subnets_follow_the_formula)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *hs;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "node-1", "192.168.0.1", NULL, &st) == 0);
	CHECK(add_node(&fx, "node-2", "192.168.0.2", NULL, &st) == 0);
	CHECK(add_node(&fx, "node-3", "192.168.0.3", NULL, &st) == 0);
	hs = get(&fx, KIND_HOSTSUBNET, "", "node-3");
	CHECK(hs);
	CHECK_STR(json_string_value(json_object_get(hs, "subnet")), "10.128.4.0/23");
	CHECK_EQ(json_integer_value(json_object_get(hs, "nodeID")), 3);
	CHECK_STR(json_string_value(json_object_get(hs, "hostIP")), "192.168.0.3");
	CHECK_STR(json_string_value(json_object_get(hs, "host")), "node-3");
	json_decref(hs);
	hs = get(&fx, KIND_HOSTSUBNET, "", "node-1");
	CHECK_STR(json_string_value(json_object_get(hs, "subnet")), "10.128.0.0/23");
	json_decref(hs);

	/* freed ID 2 is reused, with its subnet */
	CHECK(del(&fx, KIND_NODE, "", "node-2") == 0);
	CHECK(get(&fx, KIND_HOSTSUBNET, "", "node-2") == NULL);
	CHECK(add_node(&fx, "node-9", "192.168.0.9", NULL, &st) == 0);
	hs = get(&fx, KIND_HOSTSUBNET, "", "node-9");
	CHECK_EQ(json_integer_value(json_object_get(hs, "nodeID")), 2);
	CHECK_STR(json_string_value(json_object_get(hs, "subnet")), "10.128.2.0/23");
	json_decref(hs);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(node_reregistration_keeps_its_subnet)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *n, *out = NULL, *hs;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "a", "10.0.0.1", NULL, &st) == 0);
	CHECK(add_node(&fx, "b", "10.0.0.2", NULL, &st) == 0);
	/* create again: AlreadyExists */
	CHECK(add_node(&fx, "b", "10.0.0.2", NULL, &st) == -1);
	CHECK_EQ(st.code, 409);
	/* PUT (how an agent registers): same subnet */
	n = node_obj("b", "10.0.0.2");
	CHECK(registry_replace(&fx.reg, kind_get(KIND_NODE), "", "b", n, &out, &st) == 0);
	json_decref(n);
	CHECK_STR(obj_str(out, "spec.podCIDR"), "10.128.2.0/23");
	json_decref(out);
	/* PUT with a new IP moves the IP, keeps the subnet */
	n = node_obj("b", "10.0.0.22");
	CHECK(registry_replace(&fx.reg, kind_get(KIND_NODE), "", "b", n, &out, &st) == 0);
	json_decref(n);
	json_decref(out);
	hs = get(&fx, KIND_HOSTSUBNET, "", "b");
	CHECK_STR(json_string_value(json_object_get(hs, "hostIP")), "10.0.0.22");
	CHECK_STR(json_string_value(json_object_get(hs, "subnet")), "10.128.2.0/23");
	json_decref(hs);
	/* the old IP is free again, the new one is taken */
	CHECK(add_node(&fx, "c", "10.0.0.2", NULL, &st) == 0);
	CHECK(add_node(&fx, "d", "10.0.0.22", NULL, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_CONTAINS(st.message, "already used by node b");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(node_subnet_exhaustion_is_a_clear_error_storing_nothing)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *n, *out = NULL;
	size_t count = 0;

	CHECK(fx_open(&fx, "{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\","
			   "\"metadata\":{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/22\","
			   "\"hostSubnetLength\":8}],\"serviceNetwork\":\"172.30.0.0/16\"}") == 0);
	for (int i = 1; i <= 4; i++) {
		char name[16], ip[32];
		snprintf(name, sizeof(name), "n%d", i);
		snprintf(ip, sizeof(ip), "10.9.0.%d", i);
		CHECK(add_node(&fx, name, ip, NULL, &st) == 0);
	}
	CHECK(add_node(&fx, "n5", "10.9.0.5", NULL, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_STR(st.reason, "Exhausted");
	CHECK_CONTAINS(st.message, "no subnets available in 10.128.0.0/22");
	CHECK_EQ(fx.metrics.alloc_failures[POOL_HOSTSUBNET], 1);
	CHECK(get(&fx, KIND_NODE, "", "n5") == NULL);
	CHECK(store_count(fx.store, ALLOC_NODEIP, &count) == 0);
	CHECK_EQ(count, 4);
	/* a node without an InternalIP is refused by validation */
	n = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata", "name", "x");
	CHECK(registry_create(&fx.reg, kind_get(KIND_NODE), "", n, &out, &st) == -1);
	CHECK_EQ(st.code, 422);
	json_decref(n);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(node_ids_randomized_against_reference)
{
	struct fixture fx;
	struct status st = { 0 };
	bool present[64] = { 0 };	/* reference: which node names exist */
	uint32_t id_of[64] = { 0 };
	bool used[80] = { 0 };		/* reference: which IDs are used */
	uint64_t x = test_seed() | 1;

	CHECK(fx_open(&fx, NULL) == 0);
	for (int step = 0; step < 400; step++) {
		int i;
		char name[16], ip[20];

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % 64);
		snprintf(name, sizeof(name), "node-%d", i);
		snprintf(ip, sizeof(ip), "192.168.1.%d", i + 1);
		if (present[i]) {
			CHECK(del(&fx, KIND_NODE, "", name) == 0);
			present[i] = false;
			used[id_of[i]] = false;
		} else {
			json_t *hs;
			uint32_t want = 1;
			while (used[want])
				want++;
			CHECK(add_node(&fx, name, ip, NULL, &st) == 0);
			hs = get(&fx, KIND_HOSTSUBNET, "", name);
			CHECK(hs);
			CHECK_EQ(json_integer_value(json_object_get(hs, "nodeID")), want);
			json_decref(hs);
			present[i] = true;
			id_of[i] = want;
			used[want] = true;
		}
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(vnids_lowest_free_and_released)
{
	struct fixture fx;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK_EQ(netid(&fx, "default"), 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_ns(&fx, "green") == 0);
	CHECK_EQ(netid(&fx, "red"), 10);
	CHECK_EQ(netid(&fx, "blue"), 11);
	CHECK_EQ(netid(&fx, "green"), 12);
	CHECK(del(&fx, KIND_NAMESPACE, "", "blue") == 0);
	CHECK_EQ(netid(&fx, "blue"), -1);
	CHECK(add_ns(&fx, "pink") == 0);
	CHECK_EQ(netid(&fx, "pink"), 11);
	CHECK(del(&fx, KIND_NAMESPACE, "", "default") == -1);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(podnetwork_join_isolate_global)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_ns(&fx, "green") == 0);
	CHECK(podnet(&fx, PODNET_JOIN, "red", "blue", &st) == 0);
	CHECK_EQ(netid(&fx, "blue"), 10);
	/* blue's old VNID 11 is free: a new project takes it */
	CHECK(add_ns(&fx, "pink") == 0);
	CHECK_EQ(netid(&fx, "pink"), 11);
	CHECK(podnet(&fx, PODNET_ISOLATE, NULL, "blue", &st) == 0);
	CHECK_EQ(netid(&fx, "blue"), 13);
	CHECK_EQ(netid(&fx, "red"), 10);
	/* isolating a project already alone keeps its VNID */
	CHECK(podnet(&fx, PODNET_ISOLATE, NULL, "blue", &st) == 0);
	CHECK_EQ(netid(&fx, "blue"), 13);
	CHECK(podnet(&fx, PODNET_GLOBAL, NULL, "green", &st) == 0);
	CHECK_EQ(netid(&fx, "green"), 0);
	CHECK(podnet(&fx, PODNET_ISOLATE, NULL, "default", &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK(podnet(&fx, PODNET_JOIN, "red", "nosuch", &st) == -1);
	CHECK_EQ(st.code, 404);
	CHECK(podnet(&fx, PODNET_JOIN, "nosuch", "red", &st) == -1);
	CHECK_EQ(st.code, 404);
	/* deleting a joined project keeps the VNID for the other */
	CHECK(podnet(&fx, PODNET_JOIN, "red", "pink", &st) == 0);
	CHECK(del(&fx, KIND_NAMESPACE, "", "red") == 0);
	CHECK(add_ns(&fx, "new") == 0);
	CHECK(netid(&fx, "new") != 10);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(flat_mode_all_vnid_zero_and_verbs_refused)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(fx_open(&fx, "{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\","
			   "\"metadata\":{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\","
			   "\"hostSubnetLength\":9}],\"serviceNetwork\":\"172.30.0.0/16\",\"mode\":\"flat\"}") == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK_EQ(netid(&fx, "red"), 0);
	CHECK(podnet(&fx, PODNET_JOIN, "default", "red", &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_CONTAINS(st.message, "flat");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

static json_t *svc_obj(const char *name, const char *type, const char *ip, int port, int node_port)
{
	json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:[{s:s, s:i}]}}", "apiVersion", "v1", "kind",
			      "Service", "metadata", "name", name, "namespace", "red", "spec", "type", type,
			      "ports", "protocol", "TCP", "port", port);
	if (ip)
		json_object_set_new(json_object_get(s, "spec"), "clusterIP", json_string(ip));
	if (node_port)
		json_object_set_new(json_array_get(json_object_get(json_object_get(s, "spec"), "ports"), 0),
				    "nodePort", json_integer(node_port));
	return s;
}

static int add_svc(struct fixture *fx, json_t *s, json_t **out, struct status *st)
{
	json_t *o = NULL;
	int e = registry_create(&fx->reg, kind_get(KIND_SERVICE), "red", s, &o, st);

	json_decref(s);
	if (out)
		*out = o;
	else
		json_decref(o);
	return e;
}

TEST(cluster_ips_and_node_ports)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *out = NULL, *s;
	json_int_t np;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_svc(&fx, svc_obj("a", "ClusterIP", "172.30.0.10", 80, 0), &out, &st) == 0);
	CHECK_STR(obj_str(out, "spec.clusterIP"), "172.30.0.10");
	json_decref(out);
	CHECK(add_svc(&fx, svc_obj("b", "ClusterIP", "172.30.0.10", 80, 0), NULL, &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK_CONTAINS(st.message, "172.30.0.10 is already allocated (to service red/a)");
	CHECK(add_svc(&fx, svc_obj("b", "ClusterIP", "10.0.0.1", 80, 0), NULL, &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK_CONTAINS(st.message, "not a usable address in the service network 172.30.0.0/16");
	CHECK(add_svc(&fx, svc_obj("b", "NodePort", NULL, 80, 30080), &out, &st) == 0);
	CHECK_EQ(json_integer_value(json_object_get(
		 json_array_get(json_object_get(json_object_get(out, "spec"), "ports"), 0), "nodePort")), 30080);
	json_decref(out);
	CHECK(add_svc(&fx, svc_obj("c", "NodePort", NULL, 80, 30080), NULL, &st) == -1);
	CHECK_CONTAINS(st.message, "spec.ports[0].nodePort: 30080 is already allocated (to service red/b)");
	CHECK(add_svc(&fx, svc_obj("c", "NodePort", NULL, 80, 80), NULL, &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK(add_svc(&fx, svc_obj("c", "NodePort", NULL, 80, 0), &out, &st) == 0);
	np = json_integer_value(json_object_get(
		json_array_get(json_object_get(json_object_get(out, "spec"), "ports"), 0), "nodePort"));
	CHECK(np >= 30000 && np <= 32767 && np != 30080);
	json_decref(out);

	/* replace keeps the cluster IP and the NodePort; a new cluster IP is refused */
	s = svc_obj("c", "NodePort", NULL, 80, 0);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_SERVICE), "red", "c", s, &out, &st) == 0);
	CHECK_EQ(json_integer_value(json_object_get(
		 json_array_get(json_object_get(json_object_get(out, "spec"), "ports"), 0), "nodePort")), np);
	json_decref(out);
	json_decref(s);
	s = svc_obj("c", "NodePort", "172.30.9.9", 80, 0);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_SERVICE), "red", "c", s, &out, &st) == -1);
	CHECK_CONTAINS(st.message, "immutable");
	json_decref(s);
	/* switching to ClusterIP releases the NodePort */
	s = svc_obj("c", "ClusterIP", NULL, 80, 0);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_SERVICE), "red", "c", s, &out, &st) == 0);
	json_decref(out);
	json_decref(s);
	CHECK(fsck_clean(&fx));
	/* deleting the namespace releases everything */
	CHECK(del(&fx, KIND_NAMESPACE, "", "red") == 0);
	{
		size_t n = 1;
		CHECK(store_count(fx.store, ALLOC_CLUSTERIP, &n) == 0);
		CHECK_EQ(n, 0);
		CHECK(store_count(fx.store, ALLOC_NODEPORT, &n) == 0);
		CHECK_EQ(n, 0);
		CHECK(store_count(fx.store, OBJ_PREFIX "services/", &n) == 0);
		CHECK_EQ(n, 0);
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(cluster_ips_randomized_no_duplicates_and_exhaustion)
{
	struct fixture fx;
	struct status st = { 0 };
	bool present[40] = { 0 };
	char ips[40][16];
	uint64_t x = test_seed() | 1;

	/* a /27 service network: 30 usable addresses */
	CHECK(fx_open(&fx, "{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\","
			   "\"metadata\":{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\","
			   "\"hostSubnetLength\":9}],\"serviceNetwork\":\"172.30.0.0/27\"}") == 0);
	CHECK(add_ns(&fx, "red") == 0);
	for (int step = 0; step < 300; step++) {
		int i;
		char name[16];
		size_t live = 0;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % 40);
		snprintf(name, sizeof(name), "s%d", i);
		for (int j = 0; j < 40; j++)
			live += present[j];
		if (present[i]) {
			CHECK(del(&fx, KIND_SERVICE, "red", name) == 0);
			present[i] = false;
		} else {
			json_t *out = NULL;
			int e = add_svc(&fx, svc_obj(name, "ClusterIP", NULL, 80, 0), &out, &st);
			if (live == 30) {
				CHECK(e == -1);
				CHECK_STR(st.reason, "Exhausted");
				CHECK_CONTAINS(st.message, "no cluster IPs available in 172.30.0.0/27");
				continue;
			}
			CHECK(e == 0);
			snprintf(ips[i], sizeof(ips[i]), "%s", obj_str(out, "spec.clusterIP"));
			json_decref(out);
			CHECK(strcmp(ips[i], "172.30.0.0") != 0 && strcmp(ips[i], "172.30.0.31") != 0);
			for (int j = 0; j < 40; j++)
				CHECK(!present[j] || strcmp(ips[j], ips[i]) != 0);
			present[i] = true;
		}
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

#define VIP_CONFIG(pools)                                                                                \
	"{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\",\"metadata\":{\"name\":"     \
	"\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\",\"hostSubnetLength\":9}],"            \
	"\"serviceNetwork\":\"172.30.0.0/16\",\"vipNetworks\":" pools "}"

/* A LoadBalancer Service, optionally asking for lb_ip; replaced if it exists. */
static int put_lb(struct fixture *fx, const char *name, const char *type, const char *lb_ip, json_t **out,
		  struct status *st)
{
	json_t *s = svc_obj(name, type, NULL, 80, 0), *o = NULL;
	int e;

	if (lb_ip)
		json_object_set_new(json_object_get(s, "spec"), "loadBalancerIP", json_string(lb_ip));
	e = registry_replace(&fx->reg, kind_get(KIND_SERVICE), "red", name, s, &o, st);
	json_decref(s);
	if (out)
		*out = o;
	else
		json_decref(o);
	return e;
}

static const char *vip_of(struct fixture *fx, const char *name)
{
	static char buf[32];
	json_t *o = get(fx, KIND_SERVICE, "red", name);
	const json_t *lb = json_object_get(json_object_get(o, "status"), "loadBalancer");
	const char *ip = json_string_value(json_object_get(json_array_get(json_object_get(lb, "ingress"), 0), "ip"));

	snprintf(buf, sizeof(buf), "%s", !o ? "(no service)" : ip ? ip : lb ? "(none)" : "(no status)");
	json_decref(o);
	return buf;
}

TEST(vips_allocated_requested_released)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *out = NULL;
	int64_t rev_before, rev_after;

	/* a /30 (2 usable: .1 and .2) and a /32 (usable itself) */
	CHECK(fx_open(&fx, VIP_CONFIG("[\"192.168.100.0/30\",\"192.168.200.7/32\"]")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(put_lb(&fx, "a", "LoadBalancer", NULL, &out, &st) == 0);
	CHECK_STR(obj_str(out, "status.loadBalancer.ingress") ? "" : "array", "array");
	json_decref(out);
	CHECK_STR(vip_of(&fx, "a"), "192.168.100.1");	/* lowest, not the network address */
	CHECK(put_lb(&fx, "b", "LoadBalancer", "192.168.200.7", NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "b"), "192.168.200.7");
	/* kept across replaces (also one whose body has a status of its own) */
	{
		json_t *s = svc_obj("a", "LoadBalancer", NULL, 80, 0);
		json_object_set_new(s, "status", json_pack("{s:{s:[{s:s}]}}", "loadBalancer", "ingress", "ip", "6.6.6.6"));
		CHECK(registry_replace(&fx.reg, kind_get(KIND_SERVICE), "red", "a", s, &out, &st) == 0);
		json_decref(s);
		json_decref(out);
	}
	CHECK_STR(vip_of(&fx, "a"), "192.168.100.1");
	/* requests that cannot be honoured name the address */
	CHECK(put_lb(&fx, "c", "LoadBalancer", "192.168.100.1", NULL, &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK_STR(st.message, "spec.loadBalancerIP: 192.168.100.1 is already allocated (to service red/a)");
	CHECK(put_lb(&fx, "c", "LoadBalancer", "10.9.9.9", NULL, &st) == -1);
	CHECK_STR(st.message, "spec.loadBalancerIP: 10.9.9.9 is not inside a VIP pool (192.168.100.0/30, 192.168.200.7/32)");
	CHECK(put_lb(&fx, "c", "LoadBalancer", "192.168.100.3", NULL, &st) == -1);
	CHECK_CONTAINS(st.message, "192.168.100.3 is the network or broadcast address of its VIP pool");
	/* the last one, then exhaustion: refused, nothing stored */
	CHECK(put_lb(&fx, "c", "LoadBalancer", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "c"), "192.168.100.2");
	CHECK(store_revision(fx.store, &rev_before) == 0);
	CHECK(put_lb(&fx, "d", "LoadBalancer", NULL, NULL, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_STR(st.reason, "Exhausted");
	CHECK_STR(st.message, "no VIPs available in the VIP pools 192.168.100.0/30, 192.168.200.7/32 (service red/d)");
	CHECK(store_revision(fx.store, &rev_after) == 0);
	CHECK_EQ(rev_after, rev_before);
	CHECK_STR(vip_of(&fx, "d"), "(no service)");
	CHECK_EQ(fx.metrics.alloc_failures[POOL_VIP], 1);
	{
		struct alloc_usage u;
		CHECK(registry_usage(&fx.reg, &u) == 0);
		CHECK_EQ(u.used[POOL_VIP], 3);
		CHECK_EQ(u.total[POOL_VIP], 3);
	}
	/* a change of type releases; a NodePort keeps none */
	CHECK(put_lb(&fx, "a", "NodePort", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "a"), "(none)");
	CHECK(put_lb(&fx, "d", "LoadBalancer", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "d"), "192.168.100.1");
	/* moving to a requested VIP releases the old one */
	CHECK(del(&fx, KIND_SERVICE, "red", "b") == 0);
	CHECK(put_lb(&fx, "d", "LoadBalancer", "192.168.200.7", NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "d"), "192.168.200.7");
	CHECK(put_lb(&fx, "e", "LoadBalancer", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "e"), "192.168.100.1");
	CHECK(fsck_clean(&fx));
	/* the pools cannot shrink under an allocated VIP */
	{
		json_t *cfg = json_loads(VIP_CONFIG("[\"192.168.100.0/30\"]"), 0, NULL);
		CHECK(registry_replace(&fx.reg, kind_get(KIND_CLUSTERNETWORK), "", "default", cfg, &out, &st) == -1);
		json_decref(cfg);
		CHECK_EQ(st.code, 409);
		CHECK_CONTAINS(st.message, "vipNetworks: the change would orphan VIP 192.168.200.7 of service red/d");
	}
	/* deleting the namespace releases them all */
	CHECK(del(&fx, KIND_NAMESPACE, "", "red") == 0);
	CHECK_EQ(count(&fx, ALLOC_VIP), 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(vips_pending_without_a_pool)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(put_lb(&fx, "a", "LoadBalancer", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "a"), "(none)");	/* pending */
	CHECK(put_lb(&fx, "b", "LoadBalancer", "192.168.1.1", NULL, &st) == -1);
	CHECK_STR(st.message, "spec.loadBalancerIP: 192.168.1.1 is not inside a VIP pool (none is configured: "
			      "set vipNetworks in the ClusterNetwork)");
	CHECK_EQ(count(&fx, ALLOC_VIP), 0);
	/* once a pool is configured, the next write of the Service gets a VIP */
	{
		json_t *cfg = json_loads(VIP_CONFIG("[\"192.168.100.0/24\"]"), 0, NULL), *out = NULL;
		CHECK(registry_replace(&fx.reg, kind_get(KIND_CLUSTERNETWORK), "", "default", cfg, &out, &st) == 0);
		json_decref(cfg);
		json_decref(out);
	}
	CHECK(put_lb(&fx, "a", "LoadBalancer", NULL, NULL, &st) == 0);
	CHECK_STR(vip_of(&fx, "a"), "192.168.100.1");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(vips_randomized_no_duplicates)
{
	struct fixture fx;
	struct status st = { 0 };
	char vips[20][32];
	bool lb[20] = { 0 };
	uint64_t x = test_seed() | 1;

	/* 6 usable: 10.0.0.1-6 of a /29 */
	CHECK(fx_open(&fx, VIP_CONFIG("[\"10.250.0.0/29\"]")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	for (int step = 0; step < 300; step++) {
		char name[16];
		int i, live = 0, e;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % 20);
		snprintf(name, sizeof(name), "s%d", i);
		for (int j = 0; j < 20; j++)
			live += lb[j];
		if (lb[i] && (x >> 32) % 2) {
			CHECK(((x >> 33) % 2 ? del(&fx, KIND_SERVICE, "red", name)
					      : put_lb(&fx, name, "ClusterIP", NULL, NULL, &st)) == 0);
			lb[i] = false;
			continue;
		}
		e = put_lb(&fx, name, "LoadBalancer", NULL, NULL, &st);
		if (!lb[i] && live == 6) {
			CHECK(e == -1);
			CHECK_STR(st.reason, "Exhausted");
			continue;
		}
		CHECK(e == 0);
		if (lb[i])
			CHECK_STR(vip_of(&fx, name), vips[i]);	/* kept */
		snprintf(vips[i], sizeof(vips[i]), "%s", vip_of(&fx, name));
		for (int j = 0; j < 20; j++)
			CHECK(j == i || !lb[j] || strcmp(vips[j], vips[i]) != 0);
		CHECK(strcmp(vips[i], "10.250.0.0") != 0 && strcmp(vips[i], "10.250.0.7") != 0);
		lb[i] = true;
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(config_change_that_orphans_subnets_is_refused)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *cfg, *out = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "n1", "10.1.0.1", NULL, &st) == 0);
	cfg = json_loads("{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\","
			 "\"metadata\":{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.200.0.0/14\","
			 "\"hostSubnetLength\":9}],\"serviceNetwork\":\"172.30.0.0/16\"}", 0, NULL);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_CLUSTERNETWORK), "", "default", cfg, &out, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_CONTAINS(st.message, "orphan HostSubnet n1 (10.128.0.0/23");
	json_decref(cfg);
	/* appending a second network is fine */
	cfg = json_loads("{\"apiVersion\":\"network.openshift.io/v1\",\"kind\":\"ClusterNetwork\","
			 "\"metadata\":{\"name\":\"default\"},\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\","
			 "\"hostSubnetLength\":9},{\"cidr\":\"10.200.0.0/16\",\"hostSubnetLength\":8}],"
			 "\"serviceNetwork\":\"172.30.0.0/16\"}", 0, NULL);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_CLUSTERNETWORK), "", "default", cfg, &out, &st) == 0);
	json_decref(cfg);
	json_decref(out);
	CHECK_EQ(fx.reg.config.nnetworks, 2);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(pods_need_their_namespace)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *p = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", "p1"),
	       *out = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(registry_create(&fx.reg, kind_get(KIND_POD), "nosuch", p, &out, &st) == -1);
	CHECK_EQ(st.code, 404);
	CHECK_CONTAINS(st.message, "namespaces \"nosuch\" not found");
	json_decref(p);	/* the registry stamped the namespace of the path on it */
	p = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", "p1");
	CHECK(registry_create(&fx.reg, kind_get(KIND_POD), "default", p, &out, &st) == 0);
	CHECK_STR(obj_namespace(out), "default");
	CHECK(obj_str(out, "metadata.uid") != NULL);
	CHECK(obj_str(out, "metadata.resourceVersion") != NULL);
	json_decref(out);
	json_decref(p);
	fx_close(&fx);
}

/* A valid body of kind k, named name (each passes its own kind's checks). */
static json_t *valid_body(const struct kind_info *k, const char *name)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", k->api_version, "kind", k->kind, "metadata",
			      "name", name);

	switch (k->id) {
	case KIND_NODE:
		json_object_set_new(o, "status", json_pack("{s:[{s:s, s:s}]}", "addresses", "type", "InternalIP",
							   "address", "192.168.77.1"));
		break;
	case KIND_SERVICE:
		json_object_set_new(o, "spec", json_pack("{s:[{s:i}]}", "ports", "port", 80));
		break;
	case KIND_NETWORKPOLICY:
		json_object_set_new(o, "spec", json_pack("{s:{}}", "podSelector"));
		break;
	case KIND_CLUSTERNETWORK:
		json_object_set_new(o, "clusterNetworks", json_pack("[{s:s, s:i}]", "cidr", "10.128.0.0/14",
								    "hostSubnetLength", 9));
		json_object_set_new(o, "serviceNetwork", json_string("172.30.0.0/16"));
		break;
	case KIND_HOSTSUBNET:
		json_object_set_new(o, "host", json_string(name));
		json_object_set_new(o, "hostIP", json_string("192.168.77.2"));
		json_object_set_new(o, "subnet", json_string("10.128.100.0/23"));
		break;
	case KIND_NETNAMESPACE:
		json_object_set_new(o, "netname", json_string(name));
		json_object_set_new(o, "netid", json_integer(77));
		break;
	case KIND_ROUTE:
		json_object_set_new(o, "spec", json_pack("{s:{s:s}}", "to", "name", "web"));
		break;
	case KIND_INGRESS:
		json_object_set_new(o, "spec", json_pack("{s:{s:{s:s, s:{s:i}}}}", "defaultBackend", "service",
							 "name", "web", "port", "number", 80));
		break;
	case KIND_ENDPOINTSLICE:
		json_object_set_new(o, "addressType", json_string("IPv4"));
		break;
	case KIND_PODPEERSLICE:
		json_object_set_new(o, "node", json_string(name));
		break;
	case KIND_TRACEREQUEST:
		json_object_set_new(o, "spec", json_pack("{s:s, s:s, s:s, s:s, s:s}", "nodeName", name, "from", "Pod",
							 "protocol", "ICMP", "source", "10.128.0.5",
							 "destination", "10.128.0.6"));
		break;
	default:
		break;
	}
	return o;
}

/* What the attacker sent: every kind's body to every other kind's path, as
 * a create and as a replace (of node-1, which exists: node_admit's old
 * path dereferenced the missing InternalIP).  Each is a 400 and the store
 * does not move; the own kind's body passes the same check. */
TEST(bodies_of_another_kind_are_refused_before_anything_happens)
{
	struct fixture fx;
	struct status st = { 0 };
	int64_t before = 0, after = 0;

	for (int k = 0; k < KIND_COUNT; k++) {	/* each body is one its own kind accepts */
		json_t *body = valid_body(kind_get((enum kind_id)k), k == KIND_CLUSTERNETWORK ? "default" : "node-1");
		int e = model_validate(body, st.message, sizeof(st.message));

		json_decref(body);
		if (e) {
			test_fail(__FILE__, __LINE__, "the %s body does not validate: %s", kind_get((enum kind_id)k)->kind,
				  st.message);
			return;
		}
	}
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "node-1", "192.168.10.1", NULL, &st) == 0);
	CHECK(store_revision(fx.store, &before) == 0);
	for (int p = 0; p < KIND_COUNT; p++) {
		const struct kind_info *path = kind_get((enum kind_id)p);
		const char *ns = path->namespaced ? "default" : "";
		const char *name = path->id == KIND_CLUSTERNETWORK ? "default" : "node-1";

		for (int b = 0; b < KIND_COUNT; b++) {
			const struct kind_info *kind = kind_get((enum kind_id)b);
			json_t *body, *out = NULL;
			char want[256];
			int e;

			if (b == p)
				continue;
			snprintf(want, sizeof(want), "body kind '%s' does not match the path's resource '%s' (kind %s)",
				 kind->kind, path->plural, path->kind);
			body = valid_body(kind, name);
			e = registry_create(&fx.reg, path, ns, body, &out, &st);
			json_decref(body);
			json_decref(out);
			CHECK(e == -1);
			CHECK_EQ(st.code, 400);
			CHECK_STR(st.message, want);
			body = valid_body(kind, name);
			out = NULL;
			e = registry_replace(&fx.reg, path, ns, name, body, &out, &st);
			json_decref(body);
			json_decref(out);
			CHECK(e == -1);
			CHECK_EQ(st.code, 400);
			CHECK_STR(st.message, want);
		}
	}
	CHECK(store_revision(fx.store, &after) == 0);
	CHECK_EQ(after, before);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* The object as it would be stored is checked, not only the body: a
 * replace without status keeps the stored one, and the two together may
 * be over the limit although each body was not.  413, nothing stored. */
TEST(a_write_whose_stored_object_is_over_the_limit_is_refused)
{
	struct fixture fx;
	struct status st = { 0 };
	size_t half = MODEL_MAX_OBJECT_BYTES / 2 + 16;
	char *pad = malloc(half + 1);
	json_t *body = NULL, *out = NULL;
	int64_t before = 0, after = 0;

	CHECK(pad);
	memset(pad, 'x', half);
	pad[half] = 0;
	CHECK(fx_open(&fx, NULL) == 0);
	body = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata",
			 "name", "big", "spec", "x", pad, "status", "y", pad);
	CHECK(registry_create(&fx.reg, kind_get(KIND_POD), "default", body, &out, &st) == -1);
	CHECK_EQ(st.code, 413);
	CHECK_CONTAINS(st.message, "more than 3145728 (the limit)");
	json_decref(body);
	body = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
			 "big", "status", "y", pad);
	CHECK(registry_create(&fx.reg, kind_get(KIND_POD), "default", body, &out, &st) == 0);
	json_decref(body);
	json_decref(out);
	out = NULL;
	CHECK(store_revision(fx.store, &before) == 0);
	body = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
			 "big", "spec", "x", pad);
	free(pad);
	CHECK(registry_replace(&fx.reg, kind_get(KIND_POD), "default", "big", body, &out, &st) == -1);
	json_decref(body);
	CHECK_EQ(st.code, 413);
	CHECK(store_revision(fx.store, &after) == 0);
	CHECK_EQ(after, before);
	fx_close(&fx);
}

/* What an older controller could have stored: fsck names each. */
TEST(fsck_finds_objects_that_are_not_what_their_key_says)
{
	static char report[8192];
	struct fixture fx;
	struct txnb b;
	size_t problems = 0;
	char deep[4096] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"deep\","
			  "\"namespace\":\"default\"},\"spec\":";
	size_t n = strlen(deep);

	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "{\"a\":");
	n += (size_t)snprintf(deep + n, sizeof(deep) - n, "1");
	for (int i = 0; i < 41; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "}");
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(fsck_clean(&fx));
	txnb_init(&b);
	txnb_put(&b, OBJ_PREFIX "pods/default/s", "{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
						  "\"metadata\":{\"name\":\"s\",\"namespace\":\"default\"}}");
	txnb_put(&b, OBJ_PREFIX "pods/default/deep", deep);
	txnb_put(&b, OBJ_PREFIX "pods/default/other", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
						      "\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}");
	txnb_put(&b, OBJ_PREFIX "secrets/default/junk", "{\"apiVersion\"");
	CHECK(txnb_commit(&b, fx.store, NULL) == 0);
	txnb_free(&b);
	CHECK(registry_fsck(&fx.reg, report, sizeof(report), &problems) == 0);
	CHECK_EQ(problems, 4);
	CHECK_CONTAINS(report, "/weft/obj/pods/default/s: holds a Secret (v1), not a Pod");
	CHECK_CONTAINS(report, "/weft/obj/pods/default/deep: spec.a.a.a");
	CHECK_CONTAINS(report, "nested deeper than 32 levels");
	CHECK_CONTAINS(report, "/weft/obj/pods/default/other: holds default/x");
	CHECK_CONTAINS(report, "/weft/obj/secrets/default/junk: does not read back");
	fx_close(&fx);
}

/* Two processes register nodes and create namespaces on one store at once. */
TEST(two_controllers_racing_never_share_an_allocation)
{
	struct fixture fx;
	pid_t kids[2];
	const int per = 30;

	CHECK(fx_open(&fx, NULL) == 0);
	fx_close(&fx);
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct fixture mine;
			struct status st = { 0 };
			int bad = 0;
			if (fx_open(&mine, NULL))
				_exit(2);
			for (int i = 0; i < per; i++) {
				char name[32], ip[32];
				snprintf(name, sizeof(name), "k%d-n%d", k, i);
				snprintf(ip, sizeof(ip), "10.%d.0.%d", k + 1, i + 1);
				bad |= add_node(&mine, name, ip, NULL, &st) != 0;
				snprintf(name, sizeof(name), "k%d-ns%d", k, i);
				bad |= add_ns(&mine, name) != 0;
			}
			fx_close(&mine);
			_exit(bad);
		}
	}
	for (int k = 0; k < 2; k++) {
		int status = 0;
		waitpid(kids[k], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK(fx_open(&fx, NULL) == 0);
	{
		size_t n = 0;
		CHECK(store_count(fx.store, ALLOC_NODEID, &n) == 0);
		CHECK_EQ(n, 2 * per);
		CHECK(store_count(fx.store, ALLOC_VNID, &n) == 0);
		CHECK_EQ(n, 2 * per);
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* VNIDs under random creates, deletes, joins and isolations, checked
 * against a reference that keeps who uses which VNID: every namespace's
 * VNID is the reference's, a new namespace takes the lowest unused VNID
 * >= 10, and a VNID is reused only once no namespace holds it. */
TEST(vnids_randomized_against_reference)
{
	struct fixture fx;
	struct status st = { 0 };
	enum { N = 24 };
	int64_t vnid[N];	/* -1 = namespace absent */
	uint64_t x = test_seed() | 1;

	CHECK(fx_open(&fx, NULL) == 0);
	for (int i = 0; i < N; i++)
		vnid[i] = -1;
	for (int step = 0; step < 300; step++) {
		int i, j, op;
		char name[16], other[16];

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % N);
		j = (int)((x >> 16) % N);
		op = (int)((x >> 32) % 4);
		snprintf(name, sizeof(name), "ns-%d", i);
		snprintf(other, sizeof(other), "ns-%d", j);
		if (vnid[i] < 0) {
			int64_t want = ref_lowest_free_vnid(vnid, N);
			CHECK(add_ns(&fx, name) == 0);
			vnid[i] = want;
		} else if (op == 0) {
			CHECK(del(&fx, KIND_NAMESPACE, "", name) == 0);
			vnid[i] = -1;
		} else if (op == 1 && vnid[j] >= 0 && i != j) {
			CHECK(podnet(&fx, PODNET_JOIN, other, name, &st) == 0);
			vnid[i] = vnid[j];
		} else if (op == 2) {
			int shared = 0;
			for (int k = 0; k < N; k++)
				shared += vnid[k] == vnid[i];
			CHECK(podnet(&fx, PODNET_ISOLATE, NULL, name, &st) == 0);
			if (shared > 1 || vnid[i] == 0) {
				vnid[i] = ref_lowest_free_vnid(vnid, N);
			}
		} else if (op == 3) {
			CHECK(podnet(&fx, PODNET_GLOBAL, NULL, name, &st) == 0);
			vnid[i] = 0;
		}
		for (int k = 0; k < N; k++) {
			char n2[16];
			snprintf(n2, sizeof(n2), "ns-%d", k);
			CHECK_EQ(netid(&fx, n2), vnid[k]);
		}
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* NodePorts under random creates, deletes and type changes: never two
 * services on one port, requested ports honoured when free and refused
 * when taken, released ports free again. */
TEST(node_ports_randomized_no_duplicates)
{
	struct fixture fx;
	struct status st = { 0 };
	enum { N = 40 };
	int port[N];		/* 0 = no service or no NodePort */
	bool present[N] = { 0 };
	uint64_t x = test_seed() | 1;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	memset(port, 0, sizeof(port));
	for (int step = 0; step < 300; step++) {
		int i, want;
		char name[16];
		json_t *out = NULL;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % N);
		/* requests come from a small range so they collide */
		want = (x >> 20) % 3 == 0 ? 30000 + (int)((x >> 24) % 20) : 0;
		snprintf(name, sizeof(name), "s%d", i);
		if (present[i]) {
			CHECK(del(&fx, KIND_SERVICE, "red", name) == 0);
			present[i] = false;
			port[i] = 0;
			continue;
		}
		bool taken = false;
		for (int k = 0; k < N; k++)
			taken |= want && port[k] == want;
		int e = add_svc(&fx, svc_obj(name, "NodePort", NULL, 80, want), &out, &st);
		if (taken) {
			CHECK(e == -1);
			CHECK_CONTAINS(st.message, "is already allocated");
			continue;
		}
		CHECK(e == 0);
		port[i] = (int)json_integer_value(json_object_get(
			json_array_get(json_object_get(json_object_get(out, "spec"), "ports"), 0), "nodePort"));
		json_decref(out);
		CHECK(port[i] >= NODEPORT_MIN && port[i] <= NODEPORT_MAX);
		CHECK(!want || port[i] == want);
		for (int k = 0; k < N; k++)
			CHECK(k == i || port[k] != port[i]);
		present[i] = true;
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* write body (taken over) to ns/its name with flags; the stored object, or
 * NULL with *st set */
static json_t *write_as(struct fixture *fx, const struct kind_info *k, json_t *body, unsigned flags,
			struct status *st)
{
	json_t *out = NULL;
	int rc = registry_check_write(k, "default", (flags & REGISTRY_CREATE) ? NULL : obj_name(body), body,
				      flags & REGISTRY_CREATE, st);

	if (!rc)
		rc = registry_write_checked(&fx->reg, k, "default", body, flags, &out, st);
	json_decref(body);
	return rc ? NULL : out;
}

static const char *status_str(const json_t *o, const char *path)
{
	char full[128];

	snprintf(full, sizeof(full), "status.%s", path);
	return obj_str(o, full);
}

/* The main resource of a kind with a status subresource (REGISTRY_MAIN)
 * ignores a status change; NAME/status (REGISTRY_STATUS) changes only
 * the status; the controller's own writers (no flag) write what they send. */
TEST(main_resource_ignores_status)
{
	const struct kind_info *pods = kind_get(KIND_POD), *ing = kind_get(KIND_INGRESS);
	struct fixture fx;
	struct status st = { 0 };
	json_t *b, *o;

	CHECK(fx_open(&fx, NULL) == 0);
	/* a Pod's create keeps its status (an agent's record, made whole) */
	b = valid_body(pods, "p");
	json_object_set_new(b, "status", json_pack("{s:s}", "phase", "Running"));
	o = write_as(&fx, pods, b, REGISTRY_CREATE | REGISTRY_MAIN, &st);
	CHECK(o && !strcmp(status_str(o, "phase"), "Running"));
	/* a replace of the main resource: the stored status, the new labels */
	b = json_deep_copy(o);
	json_decref(o);
	json_object_set_new(json_object_get(b, "status"), "phase", json_string("Failed"));
	json_object_set_new(json_object_get(b, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
	o = write_as(&fx, pods, b, REGISTRY_MAIN, &st);
	CHECK(o && !strcmp(status_str(o, "phase"), "Running") && !strcmp(obj_str(o, "metadata.labels.a"), "b"));
	/* without a status at all: still kept */
	b = json_deep_copy(o);
	json_decref(o);
	json_object_del(b, "status");
	o = write_as(&fx, pods, b, REGISTRY_MAIN, &st);
	CHECK(o && !strcmp(status_str(o, "phase"), "Running"));
	/* NAME/status: the status, not the spec */
	b = json_deep_copy(o);
	json_decref(o);
	json_object_set_new(json_object_get(b, "status"), "phase", json_string("Succeeded"));
	json_object_set_new(json_object_get(b, "spec"), "nodeName", json_string("node-9"));
	o = write_as(&fx, pods, b, REGISTRY_STATUS, &st);
	CHECK(o && !strcmp(status_str(o, "phase"), "Succeeded") && obj_str(o, "spec.nodeName") == NULL);
	/* a controller's own write takes the status it sends */
	b = json_deep_copy(o);
	json_decref(o);
	json_object_set_new(json_object_get(b, "status"), "phase", json_string("Pending"));
	o = write_as(&fx, pods, b, 0, &st);
	CHECK(o && !strcmp(status_str(o, "phase"), "Pending"));
	json_decref(o);

	/* an Ingress is created without the status it is sent */
	b = valid_body(ing, "i");
	json_object_set_new(b, "status", json_pack("{s:{s:[{s:s}]}}", "loadBalancer", "ingress", "ip", "10.9.9.9"));
	o = write_as(&fx, ing, b, REGISTRY_CREATE | REGISTRY_MAIN, &st);
	CHECK(o && json_object_get(o, "status") == NULL);
	b = json_deep_copy(o);
	json_decref(o);
	json_object_set_new(b, "status", json_pack("{s:{s:[{s:s}]}}", "loadBalancer", "ingress", "ip", "10.9.9.9"));
	o = write_as(&fx, ing, json_deep_copy(b), REGISTRY_MAIN, &st);
	CHECK(o && json_object_get(o, "status") == NULL);
	json_decref(o);
	o = write_as(&fx, ing, b, REGISTRY_STATUS, &st);
	CHECK(o && json_object_get(o, "status") != NULL);
	b = json_deep_copy(o);
	json_decref(o);
	json_object_del(b, "status");
	o = write_as(&fx, ing, b, REGISTRY_MAIN, &st);
	CHECK(o && json_object_get(json_object_get(o, "status"), "loadBalancer") != NULL);
	json_decref(o);
	fx_close(&fx);
}
