/*
 * mode_test.c — what the ClusterNetwork's mode does to namespaces, on a
 * real SQLite store: VNIDs per mode (networkpolicy and flat give every
 * namespace VNID 0 and allocate nothing), the pod-network verbs refused
 * outside multitenant mode naming the mode, hand-written Endpoints across
 * namespaces, mode changes refused unless the stored VNIDs already fit the
 * new mode, the start-up repair of a store whose networkpolicy-mode
 * namespaces hold VNIDs, and --fsck's view of it all.  A randomized run
 * checks namespace writes and mode changes against a naive reference.
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

/* a change of the ClusterNetwork's mode: 0 or the HTTP code of the refusal */
static int set_mode(struct fixture *fx, const char *mode, char *msg, size_t len)
{
	return put(fx, KIND_CLUSTERNETWORK, "", fx_config(mode), msg, len);
}

/* --fsck's problems, or (size_t)-1 when it could not read the store */
static size_t fsck_problems(struct fixture *fx, char *report, size_t len)
{
	size_t problems = 0;

	return registry_fsck(&fx->reg, report, len, &problems) ? (size_t)-1 : problems;
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

	struct status st = { 0 };

	CHECK(fx_open(&fx, fx_config("networkpolicy")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK(add_node(&fx, "node-1", "192.168.0.1", NULL, &st) == 0);	/* 10.128.0.0/23 */
	CHECK_EQ(put(&fx, KIND_POD, "blue", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b1\"},"
		     "\"spec\":{\"nodeName\":\"node-1\"},\"status\":{\"podIP\":\"10.128.0.2\",\"phase\":\"Running\"}}",
		     msg, sizeof(msg)), 0);
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":"
		     "{\"name\":\"ext\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.128.0.2\"}],\"ports\":[{\"port\":80}]}]}",
		     msg, sizeof(msg)), 0);
	/* still no address that is nobody's */
	CHECK_EQ(put(&fx, KIND_ENDPOINTS, "red", "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":"
		     "{\"name\":\"ext\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.128.0.3\"}],\"ports\":[{\"port\":80}]}]}",
		     msg, sizeof(msg)), 403);
	CHECK_CONTAINS(msg, "10.128.0.3 is inside the cluster network");
	fx_close(&fx);
}

TEST(mode_change_refused_while_stored_vnids_do_not_fit_it)
{
	struct fixture fx;
	struct status st = { 0 };
	char msg[1024];

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_ns(&fx, "blue") == 0);
	/* multitenant -> networkpolicy: red and blue hold VNIDs */
	CHECK_EQ(set_mode(&fx, "networkpolicy", msg, sizeof(msg)), 409);
	CHECK_CONTAINS(msg, "mode: cannot change from multitenant to networkpolicy while projects have VNIDs "
			    "of their own (");
	CHECK_CONTAINS(msg, "red (VNID 10)");
	CHECK_CONTAINS(msg, "blue (VNID 11)");
	CHECK_CONTAINS(msg, "make-projects-global");
	CHECK_EQ(fx.reg.config.mode, MODE_MULTITENANT);
	CHECK_EQ(set_mode(&fx, "flat", msg, sizeof(msg)), 409);
	CHECK_CONTAINS(msg, "mode: cannot change from multitenant to flat");
	/* refused writes changed nothing */
	CHECK_EQ(netid(&fx, "red"), 10);
	CHECK_EQ(netid(&fx, "blue"), 11);
	CHECK_EQ(count(&fx, ALLOC_VNID), 2);
	/* one left with a VNID: still refused, naming it alone */
	CHECK(podnet(&fx, PODNET_GLOBAL, NULL, "red", &st) == 0);
	CHECK_EQ(set_mode(&fx, "networkpolicy", msg, sizeof(msg)), 409);
	CHECK_CONTAINS(msg, "(blue (VNID 11))");
	/* every project global: the VNIDs already fit networkpolicy mode */
	CHECK(podnet(&fx, PODNET_GLOBAL, NULL, "blue", &st) == 0);
	CHECK_EQ(set_mode(&fx, "networkpolicy", msg, sizeof(msg)), 0);
	CHECK_EQ(fx.reg.config.mode, MODE_NETWORKPOLICY);
	CHECK(add_ns(&fx, "green") == 0);
	CHECK_EQ(netid(&fx, "green"), 0);
	CHECK_EQ(count(&fx, ALLOC_VNID), 0);
	CHECK(fsck_clean(&fx));
	/* networkpolicy <-> flat: both give VNID 0, so always allowed */
	CHECK_EQ(set_mode(&fx, "flat", msg, sizeof(msg)), 0);
	CHECK_EQ(fx.reg.config.mode, MODE_FLAT);
	CHECK_EQ(set_mode(&fx, "networkpolicy", msg, sizeof(msg)), 0);
	/* -> multitenant with projects: each would need a VNID */
	CHECK_EQ(set_mode(&fx, "multitenant", msg, sizeof(msg)), 409);
	CHECK_CONTAINS(msg, "mode: cannot change from networkpolicy to multitenant while projects other than "
			    "'default' exist (3)");
	CHECK_EQ(fx.reg.config.mode, MODE_NETWORKPOLICY);
	/* ... allowed once only default is left; the next project gets VNID 10 */
	CHECK(del(&fx, KIND_NAMESPACE, "", "red") == 0);
	CHECK(del(&fx, KIND_NAMESPACE, "", "blue") == 0);
	CHECK(del(&fx, KIND_NAMESPACE, "", "green") == 0);
	CHECK_EQ(set_mode(&fx, "multitenant", msg, sizeof(msg)), 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK_EQ(netid(&fx, "red"), 10);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

static int add_namespaces(struct fixture *fx, int n)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "ns-%d", i);
		if (add_ns(fx, name))
			return -1;
	}
	return 0;
}

/* The store of a weft that gave namespaces VNIDs in networkpolicy mode,
 * made from a multitenant one by writing the mode behind the registry's
 * back. */
static int become_legacy_networkpolicy(struct fixture *fx)
{
	const char *cfg = fx_config("networkpolicy");
	int64_t rev;

	if (store_put(fx->store, OBJ_PREFIX "clusternetworks/default", cfg, strlen(cfg), &rev) ||
	    registry_reload_config(&fx->reg))
		return -1;
	return fx->reg.config.mode == MODE_NETWORKPOLICY ? 0 : -1;
}

TEST(start_sets_stored_vnids_to_0_in_networkpolicy_mode)
{
	struct fixture fx;
	struct status st = { 0 };
	static char report[65536];
	size_t changed = 99;

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	CHECK(add_namespaces(&fx, 2) == 0);
	CHECK(become_legacy_networkpolicy(&fx) == 0);
	CHECK(podnet(&fx, PODNET_JOIN, "ns-0", "ns-1", &st) == -1);	/* the verbs follow the mode */
	CHECK_EQ(netid(&fx, "ns-0"), 10);
	CHECK_EQ(netid(&fx, "ns-1"), 11);
	/* --fsck names what does not fit the mode */
	CHECK_EQ(fsck_problems(&fx, report, sizeof(report)), 2);
	CHECK_CONTAINS(report, "netnamespace ns-0: VNID 10 in networkpolicy mode, where every namespace has VNID 0");
	CHECK_CONTAINS(report, "netnamespace ns-1: VNID 11 in networkpolicy mode");
	/* what weft-controller does at start */
	CHECK(registry_conform_vnids(&fx.reg, &changed, &st) == 0);
	CHECK_EQ(changed, 2);
	CHECK_EQ(netid(&fx, "ns-0"), 0);
	CHECK_EQ(netid(&fx, "ns-1"), 0);
	CHECK_EQ(netid(&fx, "default"), 0);
	CHECK_EQ(count(&fx, ALLOC_VNID), 0);
	CHECK(fsck_clean(&fx));
	/* a second start has nothing to do */
	CHECK(registry_conform_vnids(&fx.reg, &changed, &st) == 0);
	CHECK_EQ(changed, 0);
	fx_close(&fx);
}

TEST(start_conforms_more_namespaces_than_one_transaction_holds)
{
	struct fixture fx;
	struct status st = { 0 };
	enum { N = 600 };
	size_t changed = 0;

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	CHECK(add_namespaces(&fx, N) == 0);
	/* one VNID used on the first page and on the last */
	CHECK(podnet(&fx, PODNET_JOIN, "ns-0", "ns-599", &st) == 0);
	CHECK_EQ(netid(&fx, "ns-599"), 10);
	CHECK(become_legacy_networkpolicy(&fx) == 0);
	CHECK_EQ(count(&fx, ALLOC_VNID), N - 1);
	CHECK(registry_conform_vnids(&fx.reg, &changed, &st) == 0);
	CHECK_EQ(changed, N);
	CHECK_EQ(count(&fx, ALLOC_VNID), 0);
	CHECK_EQ(netid(&fx, "ns-0"), 0);
	CHECK_EQ(netid(&fx, "ns-599"), 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(start_leaves_multitenant_vnids_alone)
{
	struct fixture fx;
	struct status st = { 0 };
	size_t changed = 99;

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(registry_conform_vnids(&fx.reg, &changed, &st) == 0);
	CHECK_EQ(changed, 0);
	CHECK_EQ(netid(&fx, "red"), 10);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* Random namespace creates and deletes, make-projects-global and mode
 * changes against a reference: a namespace gets the lowest free VNID from
 * 10 in multitenant mode and 0 otherwise; a mode change goes through iff
 * the reference's VNIDs already fit the new mode. */
TEST(modes_randomized_against_reference)
{
	static const char *const mode_names[] = { "flat", "multitenant", "networkpolicy" };
	struct fixture fx;
	struct status st = { 0 };
	enum { N = 6 };
	int64_t vnid[N];	/* -1 = namespace absent */
	int mode = MODE_MULTITENANT;
	uint64_t x = test_seed() | 1;
	char msg[1024];

	CHECK(fx_open(&fx, fx_config("multitenant")) == 0);
	for (int i = 0; i < N; i++)
		vnid[i] = -1;
	for (int step = 0; step < 600; step++) {
		int i, op, projects = 0, holders = 0;
		char name[16];

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		i = (int)(x % N);
		op = (int)((x >> 32) % 8);
		snprintf(name, sizeof(name), "ns-%d", i);
		for (int k = 0; k < N; k++) {
			projects += vnid[k] >= 0;
			holders += vnid[k] > 0;
		}
		/* fewer creates outside multitenant mode, so the cluster empties
		 * now and then and a change to multitenant can go through */
		if (op < (mode == MODE_MULTITENANT ? 3 : 1) && vnid[i] < 0) {
			int64_t want = mode == MODE_MULTITENANT ? ref_lowest_free_vnid(vnid, N) : 0;
			CHECK(add_ns(&fx, name) == 0);
			vnid[i] = want;
		} else if (op < 3 && vnid[i] >= 0) {
			CHECK(del(&fx, KIND_NAMESPACE, "", name) == 0);
			vnid[i] = -1;
		} else if (op == 3 && vnid[i] >= 0) {
			int e = podnet(&fx, PODNET_GLOBAL, NULL, name, &st);
			CHECK_EQ(e, mode == MODE_MULTITENANT ? 0 : -1);
			if (mode == MODE_MULTITENANT)
				vnid[i] = 0;
		} else if (op >= 4) {
			int to = (int)((x >> 40) % 3);
			bool fits = to == mode || (to == MODE_MULTITENANT ? projects == 0 : holders == 0);
			int code = set_mode(&fx, mode_names[to], msg, sizeof(msg));
			if (fits) {
				CHECK_EQ(code, 0);
				mode = to;
			} else {
				CHECK_EQ(code, 409);
				CHECK_CONTAINS(msg, "mode: cannot change from");
			}
			CHECK_EQ(fx.reg.config.mode, mode);
		}
		for (int k = 0; k < N; k++) {
			char n2[16];
			snprintf(n2, sizeof(n2), "ns-%d", k);
			CHECK_EQ(netid(&fx, n2), vnid[k]);
		}
		if (step % 50 == 0)
			CHECK(fsck_clean(&fx));
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}
