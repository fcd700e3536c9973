/*
 * mode_test.c — what the ClusterNetwork's mode does to namespaces, on a
 * real SQLite store: VNIDs per mode (networkpolicy and flat give every
 * namespace VNID 0 and allocate nothing), the pod-network verbs refused
 * outside multitenant mode naming the mode, hand-written Endpoints across
 * namespaces.
 */
#include "controller/registry_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PUT a JSON text: 0, or the HTTP code of the refusal with its message in msg. */
static int put(struct fixture *fx, enum kind_id k, const char *ns, const char *json, char *msg, size_t len)
{
	json_t *o = json_loads(json, 0, NULL), *out = NULL;
	struct status st = { 0 };
	int e;

	if (!o)
		return -1;
	e = registry_replace(&fx->reg, kind_get(k), ns, obj_name(o), o, &out, &st);
	json_decref(o);
	json_decref(out);
	if (msg)
		snprintf(msg, len, "%s", e ? st.message : "");
	return e ? st.code : 0;
}

TEST(networkpolicy_mode_gives_every_namespace_vnid_0)
{
	struct fixture fx;
	struct alloc_usage u;

	CHECK(fx_open(&fx, fx_config("networkpolicy")) == 0);
	CHECK_EQ(fx.reg.config.mode, MODE_NETWORKPOLICY);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_ns(&fx, "green") == 0);
	CHECK_EQ(netid(&fx, "default"), 0);
	CHECK_EQ(netid(&fx, "red"), 0);
	CHECK_EQ(netid(&fx, "blue"), 0);
	CHECK_EQ(netid(&fx, "green"), 0);
	/* nothing allocated, nothing counted */
	CHECK_EQ(count(&fx, ALLOC_VNID), 0);
	CHECK(registry_usage(&fx.reg, &u) == 0);
	CHECK_EQ(u.used[POOL_VNID], 0);
	CHECK(del(&fx, KIND_NAMESPACE, "", "blue") == 0);
	CHECK_EQ(netid(&fx, "blue"), -1);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK_EQ(netid(&fx, "blue"), 0);
	CHECK_EQ(count(&fx, ALLOC_VNID), 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(multitenant_mode_still_gives_vnids_from_10)
{
	struct fixture fx;

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK_EQ(netid(&fx, "default"), 0);
	CHECK_EQ(netid(&fx, "red"), 10);
	CHECK_EQ(netid(&fx, "blue"), 11);
	CHECK_EQ(count(&fx, ALLOC_VNID), 2);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* every verb refused with 409, the message naming the mode; nothing changed */
static void verbs_refused_in(const char *mode)
{
	static const char *const verbs[] = { "join-projects", "isolate-projects", "make-projects-global" };
	struct fixture fx;
	char want[128];

	CHECK(fx_open(&fx, fx_config(mode)) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	for (int a = PODNET_JOIN; a <= PODNET_GLOBAL; a++) {
		struct status st = { 0 };

		CHECK(podnet(&fx, (enum podnet_action)a, a == PODNET_JOIN ? "red" : NULL, "blue", &st) == -1);
		CHECK_EQ(st.code, 409);
		snprintf(want, sizeof(want), "%s works in multitenant mode only; this cluster's mode is %s",
			 verbs[a], mode);
		CHECK_CONTAINS(st.message, want);
		CHECK_CONTAINS(st.message, "every project has VNID 0 and reaches every other");
	}
	CHECK_EQ(netid(&fx, "red"), 0);
	CHECK_EQ(netid(&fx, "blue"), 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(podnetwork_verbs_refused_in_networkpolicy_mode_naming_it)
{
	verbs_refused_in("networkpolicy");
}

TEST(podnetwork_verbs_refused_in_flat_mode_naming_it)
{
	verbs_refused_in("flat");
}

TEST(networkpolicy_mode_endpoints_may_aim_at_another_namespaces_pod)
{
	struct fixture fx;
	char msg[1024];

	CHECK(fx_open(&fx, fx_config("networkpolicy")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK_EQ(put(&fx, KIND_POD, "blue", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b1\"},"
		     "\"spec\":{\"nodeName\":\"node-1\"},\"status\":{\"podIP\":\"10.128.2.2\",\"phase\":\"Running\"}}",
		     msg, sizeof(msg)), 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":"
		     "{\"name\":\"ext\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.128.2.2\"}],\"ports\":[{\"port\":80}]}]}",
		     msg, sizeof(msg)), 0);
	/* still no address that is nobody's */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":"
		     "{\"name\":\"ext\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.128.2.3\"}],\"ports\":[{\"port\":80}]}]}",
		     msg, sizeof(msg)), 403);
	CHECK_CONTAINS(msg, "10.128.2.3 is inside the cluster network");
	fx_close(&fx);
}
