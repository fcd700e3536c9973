/*
 * admit_pod_test.c — a Pod's address (admit_pod.c, podip_index.c, fsck.c)
 * on a real SQLite store, through the registry as the API drives it: the
 * node's subnet (inside, outside, its network, gateway and broadcast, no
 * node, an unknown node, a deleted one), one pod an address (conflicts,
 * release on delete, on a change, in the namespace cascade, stale keys
 * taken over), the start-up indexing of a store written before the keys,
 * what fsck says; a randomized run against a list of pods, and two
 * processes claiming the same addresses at once.
 *
 * Nodes: node-1 has 10.128.0.0/23, node-2 10.128.2.0/23.
 */
#include "controller/registry_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A Pod body: no status when ip is NULL, a status without podIP when ip
 * is "" (the address goes), else status.podIP ip. */
static json_t *pod_obj(const char *name, const char *node, const char *ip)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s}, s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name",
			      name, "spec");

	if (node)
		json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
	if (ip && *ip)
		json_object_set_new(p, "status", json_pack("{s:s, s:s}", "podIP", ip, "phase", "Running"));
	else if (ip)
		json_object_set_new(p, "status", json_pack("{s:s}", "phase", "Pending"));
	return p;
}

/* Create (POST) or replace (PUT) ns/name: 0, or the refusal's HTTP code (st). */
static int write_pod(struct fixture *fx, bool create, const char *ns, const char *name, const char *node,
		     const char *ip, struct status *st)
{
	json_t *p = pod_obj(name, node, ip), *out = NULL;
	int e = create ? registry_create(&fx->reg, kind_get(KIND_POD), ns, p, &out, st)
		       : registry_replace(&fx->reg, kind_get(KIND_POD), ns, name, p, &out, st);

	json_decref(p);
	json_decref(out);
	return e ? st->code : 0;
}

static int put_pod(struct fixture *fx, const char *ns, const char *name, const char *node, const char *ip,
		   struct status *st)
{
	return write_pod(fx, false, ns, name, node, ip, st);
}

/* Who holds ip's key ("-": nobody); a static buffer. */
static const char *holder(struct fixture *fx, const char *ip)
{
	static char buf[600];
	struct store_kv kv = { 0 };
	char key[128];

	snprintf(key, sizeof(key), ALLOC_PODIP "%s", ip);
	if (store_get(fx->store, key, &kv, NULL))
		return "-";
	snprintf(buf, sizeof(buf), "%s", kv.value);
	store_kv_free(&kv);
	return buf;
}

static const char *ip_of(struct fixture *fx, const char *ns, const char *name)
{
	static char buf[IP4_STRLEN + 1];
	json_t *p = get(fx, KIND_POD, ns, name);

	snprintf(buf, sizeof(buf), "%s", !p ? "-" : pod_address(p) ? pod_address(p) : "");
	json_decref(p);
	return buf;
}

/* The fixture with node-1, node-2 and namespaces blue and red. */
static int open_cluster(struct fixture *fx)
{
	struct status st = { 0 };

	if (fx_open(fx, NULL) || add_node(fx, "node-1", "192.168.0.1", NULL, &st) ||
	    add_node(fx, "node-2", "192.168.0.2", NULL, &st) || add_ns(fx, "blue") || add_ns(fx, "red"))
		return -1;
	return 0;
}

/* Store raw key/value pairs, as an older weft (or a broken store) left them. */
static int raw_put(struct fixture *fx, const char *const *kv, size_t n)
{
	struct txnb b;
	int e;

	txnb_init(&b);
	for (size_t i = 0; i + 1 < n; i += 2)
		txnb_put(&b, kv[i], kv[i + 1]);
	e = txnb_commit(&b, fx->store, NULL);
	txnb_free(&b);
	return e;
}

static size_t fsck_problems(struct fixture *fx, char *report, size_t len)
{
	size_t problems = 0;

	if (registry_fsck(&fx->reg, report, len, &problems))
		return (size_t)-1;
	return problems;
}

TEST(pod_ip_in_its_nodes_subnet_is_taken)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(write_pod(&fx, true, "blue", "a", "node-1", "10.128.0.5", &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.5"), "blue/a");
	/* the first and last pod addresses of the subnet */
	CHECK_EQ(put_pod(&fx, "blue", "first", "node-1", "10.128.0.2", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "last", "node-1", "10.128.1.254", &st), 0);
	CHECK_EQ(put_pod(&fx, "red", "b", "node-2", "10.128.2.9", &st), 0);
	CHECK_STR(holder(&fx, "10.128.2.9"), "red/b");
	/* a pod without an address needs no node */
	CHECK_EQ(write_pod(&fx, true, "blue", "pending", NULL, NULL, &st), 0);
	CHECK_EQ(count(&fx, ALLOC_PODIP), 4);
	/* the same pod written again (a label, its own address): fine */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.5", &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.5"), "blue/a");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(pod_ip_outside_or_reserved_or_without_node_is_invalid)
{
	static const struct {
		const char *node, *ip, *msg;
	} bad[] = {
		{ "node-1", "10.128.2.5", "status.podIP 10.128.2.5: pod blue/a is on node node-1, whose subnet is 10.128.0.0/23" },
		{ "node-1", "8.8.8.8", "status.podIP 8.8.8.8: pod blue/a is on node node-1, whose subnet is 10.128.0.0/23" },
		{ "node-1", "10.128.0.0", "status.podIP 10.128.0.0: pod blue/a is on node node-1, and 10.128.0.0 is the "
					  "network address of its subnet 10.128.0.0/23 (pods get 10.128.0.2 to 10.128.1.254)" },
		{ "node-1", "10.128.0.1", "and 10.128.0.1 is the gateway address of its subnet 10.128.0.0/23" },
		{ "node-1", "10.128.1.255", "and 10.128.1.255 is the broadcast address of its subnet 10.128.0.0/23" },
		{ "node-2", "10.128.0.5", "status.podIP 10.128.0.5: pod blue/a is on node node-2, whose subnet is 10.128.2.0/23" },
		{ NULL, "10.128.0.5", "status.podIP 10.128.0.5: pod blue/a has no spec.nodeName (a pod's address comes "
				      "from its node's subnet)" },
		{ "node-9", "10.128.0.5", "status.podIP 10.128.0.5: pod blue/a is on node node-9, which has no HostSubnet "
					  "(no such node is registered)" },
	};
	struct fixture fx;
	struct status st = { 0 };
	json_t *p, *out = NULL;

	CHECK(open_cluster(&fx) == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int create = 0; create < 2; create++) {
			memset(&st, 0, sizeof(st));
			CHECK_EQ(write_pod(&fx, create, "blue", "a", bad[i].node, bad[i].ip, &st), 422);
			CHECK_STR(st.reason, "Invalid");
			CHECK_CONTAINS(st.message, bad[i].msg);
			CHECK_STR(ip_of(&fx, "blue", "a"), "-");	/* nothing stored */
		}
	}
	/* podIPs must list podIP (validation) */
	p = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeName\":"
		       "\"node-1\"},\"status\":{\"podIP\":\"10.128.0.5\",\"podIPs\":[{\"ip\":\"10.128.0.6\"}]}}", 0, NULL);
	CHECK(registry_create(&fx.reg, kind_get(KIND_POD), "blue", p, &out, &st) == -1);
	json_decref(p);
	CHECK_EQ(st.code, 422);
	CHECK_CONTAINS(st.message, "status.podIPs[0].ip: '10.128.0.6' differs from status.podIP 10.128.0.5");
	CHECK_EQ(count(&fx, ALLOC_PODIP), 0);
	CHECK(count(&fx, OBJ_PREFIX "pods/") == 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(pod_on_a_deleted_node_can_only_be_deleted)
{
	struct fixture fx;
	struct status st = { 0 };
	char report[4096];

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(put_pod(&fx, "red", "b", "node-2", "10.128.2.7", &st), 0);
	CHECK(del(&fx, KIND_NODE, "", "node-2") == 0);
	/* fsck names the pod left behind (its address still held) */
	CHECK_EQ(fsck_problems(&fx, report, sizeof(report)), 1);
	CHECK_CONTAINS(report, "status.podIP 10.128.2.7: pod red/b is on node node-2, which has no HostSubnet");
	/* a write of it (a manifest without status keeps the address) is refused */
	CHECK_EQ(put_pod(&fx, "red", "b", "node-2", NULL, &st), 422);
	CHECK_CONTAINS(st.message, "which has no HostSubnet");
	CHECK_STR(holder(&fx, "10.128.2.7"), "red/b");
	CHECK(del(&fx, KIND_POD, "red", "b") == 0);
	CHECK_STR(holder(&fx, "10.128.2.7"), "-");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(pod_ip_held_by_another_pod_is_a_conflict)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(put_pod(&fx, "red", "b", "node-1", "10.128.0.7", &st), 0);
	/* the attack: blue's pod claims red's pod's address */
	for (int create = 1; create >= 0; create--) {
		CHECK_EQ(write_pod(&fx, create, "blue", "a", "node-1", "10.128.0.7", &st), 409);
		CHECK_STR(st.reason, "Conflict");
		CHECK_STR(st.message, "status.podIP 10.128.0.7 is held by pod red/b");
		CHECK_STR(ip_of(&fx, "blue", "a"), "-");
	}
	/* a pod of the same namespace is refused the same */
	CHECK_EQ(put_pod(&fx, "red", "c", "node-1", "10.128.0.7", &st), 409);
	/* an existing pod moving onto it: refused, keeps what it had */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.8", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.7", &st), 409);
	CHECK_STR(ip_of(&fx, "blue", "a"), "10.128.0.8");
	CHECK_STR(holder(&fx, "10.128.0.8"), "blue/a");
	CHECK_STR(holder(&fx, "10.128.0.7"), "red/b");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(pod_ip_released_on_delete_change_and_removal)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *p, *out = NULL;
	int64_t rev;

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(put_pod(&fx, "red", "b", "node-1", "10.128.0.7", &st), 0);
	CHECK(del(&fx, KIND_POD, "red", "b") == 0);
	CHECK_STR(holder(&fx, "10.128.0.7"), "-");
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.7", &st), 0);
	/* a change: the old address goes in the same write */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.8", &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.7"), "-");
	CHECK_STR(holder(&fx, "10.128.0.8"), "blue/a");
	CHECK_EQ(put_pod(&fx, "red", "c", "node-1", "10.128.0.7", &st), 0);
	/* to another node, with an address of its subnet */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-2", "10.128.2.8", &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.8"), "-");
	CHECK_STR(holder(&fx, "10.128.2.8"), "blue/a");
	/* a replace without status keeps the address and its key */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-2", NULL, &st), 0);
	CHECK_STR(ip_of(&fx, "blue", "a"), "10.128.2.8");
	CHECK_STR(holder(&fx, "10.128.2.8"), "blue/a");
	/* a status without podIP: the address goes */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-2", "", &st), 0);
	CHECK_STR(ip_of(&fx, "blue", "a"), "");
	CHECK_STR(holder(&fx, "10.128.2.8"), "-");
	/* a DELETE with preconditions (the agent's) releases too */
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-2", "10.128.2.8", &st), 0);
	p = get(&fx, KIND_POD, "blue", "a");
	CHECK(p && model_revision_parse(obj_str(p, "metadata.resourceVersion"), &rev) == 0);
	json_decref(p);
	CHECK(registry_delete_if(&fx.reg, kind_get(KIND_POD), "blue", "a", rev, 0, &out, &st) == 0);
	json_decref(out);
	CHECK_STR(holder(&fx, "10.128.2.8"), "-");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(namespace_deletion_releases_its_pods_ips)
{
	struct fixture fx;
	struct status st = { 0 };

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.5", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "b", "node-2", "10.128.2.6", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "c", NULL, NULL, &st), 0);
	CHECK_EQ(put_pod(&fx, "red", "r", "node-1", "10.128.0.9", &st), 0);
	CHECK(del(&fx, KIND_NAMESPACE, "", "blue") == 0);
	CHECK_STR(holder(&fx, "10.128.0.5"), "-");
	CHECK_STR(holder(&fx, "10.128.2.6"), "-");
	CHECK_STR(holder(&fx, "10.128.0.9"), "red/r");
	CHECK_EQ(count(&fx, ALLOC_PODIP), 1);
	CHECK(fsck_clean(&fx));
	/* the addresses are free again */
	CHECK(add_ns(&fx, "blue") == 0);
	CHECK_EQ(put_pod(&fx, "blue", "z", "node-1", "10.128.0.5", &st), 0);
	CHECK_EQ(put_pod(&fx, "red", "y", "node-2", "10.128.2.6", &st), 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(stale_pod_ip_keys_are_named_by_fsck_and_taken_over)
{
	struct fixture fx;
	struct status st = { 0 };
	char report[4096];
	static const char *const stale[] = {
		ALLOC_PODIP "10.128.0.9", "red/ghost",	/* no such pod */
		ALLOC_PODIP "10.128.0.10", "red/b",	/* red/b has another address */
		ALLOC_PODIP "10.128.0.11", "junk",	/* names no pod at all */
	};

	CHECK(open_cluster(&fx) == 0);
	CHECK_EQ(put_pod(&fx, "red", "b", "node-1", "10.128.0.7", &st), 0);
	CHECK(raw_put(&fx, stale, 6) == 0);
	CHECK_EQ(fsck_problems(&fx, report, sizeof(report)), 3);
	CHECK_CONTAINS(report, ALLOC_PODIP "10.128.0.9: held by pod red/ghost, which does not exist");
	CHECK_CONTAINS(report, ALLOC_PODIP "10.128.0.10: held by pod red/b, which does not use it");
	CHECK_CONTAINS(report, ALLOC_PODIP "10.128.0.11: bad holder 'junk'");
	CHECK_EQ(put_pod(&fx, "blue", "a", "node-1", "10.128.0.9", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "b", "node-1", "10.128.0.10", &st), 0);
	CHECK_EQ(put_pod(&fx, "blue", "c", "node-1", "10.128.0.11", &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.9"), "blue/a");
	CHECK_STR(holder(&fx, "10.128.0.10"), "blue/b");
	CHECK_STR(holder(&fx, "10.128.0.11"), "blue/c");
	CHECK_STR(holder(&fx, "10.128.0.7"), "red/b");
	CHECK(fsck_clean(&fx));
	/* a pod missing its key, and one whose key another pod holds */
	{
		static const char *const broken[] = {
			OBJ_PREFIX "pods/red/nokey", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
				"\"nokey\",\"namespace\":\"red\"},\"spec\":{\"nodeName\":\"node-1\"},\"status\":{\"podIP\":"
				"\"10.128.0.20\"}}",
			OBJ_PREFIX "pods/red/twin", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
				"\"twin\",\"namespace\":\"red\"},\"spec\":{\"nodeName\":\"node-1\"},\"status\":{\"podIP\":"
				"\"10.128.0.7\"}}",
		};
		CHECK(raw_put(&fx, broken, 4) == 0);
	}
	CHECK_EQ(fsck_problems(&fx, report, sizeof(report)), 2);
	CHECK_CONTAINS(report, "pod red/nokey: podIP 10.128.0.20 is not allocated to it (no key)");
	CHECK_CONTAINS(report, "pod red/twin: podIP 10.128.0.7 is not allocated to it (held by pod red/b)");
	fx_close(&fx);
}

/* An older weft's pod, as it stored them: no key. */
static void old_pod(char *key, size_t klen, char *val, size_t vlen, const char *ns, const char *name,
		    const char *node, const char *ip)
{
	snprintf(key, klen, OBJ_PREFIX "pods/%s/%s", ns, name);
	snprintf(val, vlen, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
		 "\"%s\"},\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"podIP\":\"%s\"}}", name, ns, node, ip);
}

TEST(startup_indexes_a_store_written_before_pod_ip_keys)
{
	static const char *const pods[][4] = {
		{ "blue", "a", "node-1", "10.128.0.5" },	/* fits: indexed */
		{ "blue", "aa", "node-2", "10.128.0.6" },	/* misfit sharing red/x's address: loses */
		{ "red", "x", "node-1", "10.128.0.6" },		/* fits: wins over blue/aa */
		{ "blue", "m", "node-2", "10.128.0.20" },	/* misfit alone: indexed, named */
		{ "blue", "n", "node-9", "10.128.0.21" },	/* unknown node: indexed, named */
		{ "blue", "d", "node-1", "10.128.0.30" },	/* both fit: the first in key order wins */
		{ "red", "d", "node-1", "10.128.0.30" },
		{ "red", "ok", "node-2", "10.128.2.2" },
	};
	size_t n = sizeof(pods) / sizeof(pods[0]);
	char keys[8][128], vals[8][512], report[8192];
	const char *kv[16];
	struct pod_ip_index_report rep;
	struct fixture fx;
	struct status st = { 0 };

	CHECK(open_cluster(&fx) == 0);
	for (size_t i = 0; i < n; i++) {
		old_pod(keys[i], sizeof(keys[i]), vals[i], sizeof(vals[i]), pods[i][0], pods[i][1], pods[i][2],
			pods[i][3]);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = vals[i];
	}
	CHECK(raw_put(&fx, kv, 2 * n) == 0);
	CHECK(fsck_problems(&fx, report, sizeof(report)) >= n);
	CHECK_CONTAINS(report, "pod blue/a: podIP 10.128.0.5 is not allocated to it (no key)");

	CHECK(registry_index_pod_ips(&fx.reg, &rep, &st) == 0);
	CHECK_EQ(rep.indexed, 6);
	CHECK_EQ(rep.conflicts, 2);
	CHECK_EQ(rep.misfits, 3);
	CHECK_EQ(rep.nlines, 5);
	CHECK_CONTAINS(rep.lines, "pod blue/aa: status.podIP 10.128.0.6 is held by pod red/x, which has that address too");
	CHECK_CONTAINS(rep.lines, "pod red/d: status.podIP 10.128.0.30 is held by pod blue/d");
	CHECK_CONTAINS(rep.lines, "status.podIP 10.128.0.20: pod blue/m is on node node-2, whose subnet is 10.128.2.0/23");
	CHECK_CONTAINS(rep.lines, "status.podIP 10.128.0.21: pod blue/n is on node node-9, which has no HostSubnet");
	CHECK_CONTAINS(rep.lines, "status.podIP 10.128.0.6: pod blue/aa is on node node-2");
	CHECK_STR(holder(&fx, "10.128.0.5"), "blue/a");
	CHECK_STR(holder(&fx, "10.128.0.6"), "red/x");
	CHECK_STR(holder(&fx, "10.128.0.20"), "blue/m");
	CHECK_STR(holder(&fx, "10.128.0.21"), "blue/n");
	CHECK_STR(holder(&fx, "10.128.0.30"), "blue/d");
	CHECK_STR(holder(&fx, "10.128.2.2"), "red/ok");
	/* nothing deleted or changed */
	CHECK_EQ(count(&fx, OBJ_PREFIX "pods/"), n);
	CHECK_STR(ip_of(&fx, "blue", "aa"), "10.128.0.6");

	/* what is left is for people: fsck names each */
	CHECK_EQ(fsck_problems(&fx, report, sizeof(report)), 5);
	CHECK_CONTAINS(report, "status.podIP 10.128.0.6: pod blue/aa is on node node-2, whose subnet is 10.128.2.0/23");
	CHECK_CONTAINS(report, "pod blue/aa: podIP 10.128.0.6 is not allocated to it (held by pod red/x)");
	CHECK_CONTAINS(report, "status.podIP 10.128.0.20: pod blue/m is on node node-2");
	CHECK_CONTAINS(report, "status.podIP 10.128.0.21: pod blue/n is on node node-9, which has no HostSubnet");
	CHECK_CONTAINS(report, "pod red/d: podIP 10.128.0.30 is not allocated to it (held by pod blue/d)");

	/* the next start adds nothing and says the same */
	CHECK(registry_index_pod_ips(&fx.reg, &rep, &st) == 0);
	CHECK_EQ(rep.indexed, 0);
	CHECK_EQ(rep.conflicts, 2);
	CHECK_EQ(rep.misfits, 3);

	/* the loser of a conflict is refused until the holder goes */
	CHECK_EQ(put_pod(&fx, "red", "d", "node-1", NULL, &st), 409);
	CHECK_STR(st.message, "status.podIP 10.128.0.30 is held by pod blue/d");
	CHECK(del(&fx, KIND_POD, "blue", "d") == 0);
	CHECK_EQ(put_pod(&fx, "red", "d", "node-1", NULL, &st), 0);
	CHECK_STR(holder(&fx, "10.128.0.30"), "red/d");
	CHECK(del(&fx, KIND_POD, "blue", "aa") == 0);
	CHECK(del(&fx, KIND_POD, "blue", "m") == 0);
	CHECK(del(&fx, KIND_POD, "blue", "n") == 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(startup_indexing_pages_through_many_pods)
{
	struct fixture fx;
	struct status st = { 0 };
	struct pod_ip_index_report rep;
	enum { N = 700 };	/* several pages */
	static char keys[N][128], vals[N][512];
	static const char *kv[2 * N];

	CHECK(open_cluster(&fx) == 0);
	for (int i = 0; i < N; i++) {
		char name[16], ip[IP4_STRLEN];

		snprintf(name, sizeof(name), "p%04d", i);
		ip4_format(0x0a800002u + (uint32_t)(i % 500), ip);	/* 200 pairs share one */
		old_pod(keys[i], sizeof(keys[i]), vals[i], sizeof(vals[i]), i % 2 ? "red" : "blue", name, "node-1", ip);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = vals[i];
	}
	CHECK(raw_put(&fx, kv, 2 * N) == 0);
	CHECK(registry_index_pod_ips(&fx.reg, &rep, &st) == 0);
	CHECK_EQ(rep.indexed, 500);
	CHECK_EQ(rep.conflicts, 200);
	CHECK_EQ(rep.misfits, 0);
	CHECK_EQ(rep.nlines, POD_IP_INDEX_LINES);
	CHECK_EQ(count(&fx, ALLOC_PODIP), 500);
	fx_close(&fx);
}

/* ---- randomized: the registry against a list of pods ---- */

static uint64_t rng;
static uint32_t rnd(uint32_t n) { return test_rnd(&rng, n); }

struct ref_pod {
	bool exists;
	char ns[8], name[16], node[8], ip[IP4_STRLEN];	/* node/ip "" = none */
};

#define REF_PODS 16
static const char *const ref_ns[] = { "blue", "red" };
static const char *const ref_nodes[] = { "node-1", "node-2", "node-9", "" };
static const char *const ref_ips[] = { "10.128.0.2", "10.128.0.3", "10.128.0.4", "10.128.0.5", "10.128.1.254",
				       "10.128.0.0", "10.128.0.1", "10.128.1.255", "10.128.2.2", "10.128.2.3",
				       "10.128.3.254", "10.128.2.1", "" };

/* Whether ip is a pod address of node's subnet (the naive reading of rule 1). */
static bool ref_fits(const char *node, const char *ip)
{
	uint32_t a, base;

	if (!strcmp(node, "node-1"))
		base = 0x0a800000u;
	else if (!strcmp(node, "node-2"))
		base = 0x0a800200u;
	else
		return false;
	return ip4_parse(ip, &a) == 0 && a >= base + 2 && a <= base + 510;
}

/* The code the registry must answer a write with, and the model after it. */
static int ref_write(struct ref_pod *pods, const bool *ns_exists, bool create, struct ref_pod *w, int i)
{
	struct ref_pod *p = &pods[i];
	char ip[IP4_STRLEN];

	snprintf(ip, sizeof(ip), "%s", w->ip);

	if (!ns_exists[!strcmp(w->ns, "red")])
		return 404;
	if (create && p->exists)
		return 409;
	if (!create && p->exists && !strcmp(ip, "-"))	/* no status: the stored one stays */
		snprintf(ip, sizeof(ip), "%s", p->ip);
	if (!strcmp(ip, "-"))
		ip[0] = 0;
	if (*ip) {
		if (!*w->node || !ref_fits(w->node, ip))
			return 422;
		for (int k = 0; k < REF_PODS; k++)
			if (k != i && pods[k].exists && !strcmp(pods[k].ip, ip))
				return 409;
	}
	*p = *w;
	p->exists = true;
	snprintf(p->ip, sizeof(p->ip), "%s", ip);
	return 0;
}

/* The keys in the store against the model: 0 equal. */
static int ref_keys_differ(struct fixture *fx, const struct ref_pod *pods, char *why, size_t len)
{
	struct store_kv_list l = { 0 };
	size_t want = 0, have;

	for (int k = 0; k < REF_PODS; k++) {
		char owner[32];

		if (!pods[k].exists || !pods[k].ip[0])
			continue;
		want++;
		snprintf(owner, sizeof(owner), "%s/%s", pods[k].ns, pods[k].name);
		if (strcmp(holder(fx, pods[k].ip), owner) != 0) {
			snprintf(why, len, "%s held by %s, want %s", pods[k].ip, holder(fx, pods[k].ip), owner);
			return 1;
		}
	}
	if (store_range(fx->store, ALLOC_PODIP, NULL, 0, &l)) {
		snprintf(why, len, "store_range failed");
		return 1;
	}
	have = l.n;
	store_kv_list_free(&l);
	if (have != want)
		snprintf(why, len, "%zu keys, want %zu", have, want);
	return have != want;
}

TEST(pod_ips_randomized_against_a_list_of_pods)
{
	struct fixture fx;
	struct ref_pod pods[REF_PODS];
	bool ns_exists[2] = { true, true };

	rng = test_seed() | 1;
	memset(pods, 0, sizeof(pods));
	for (int i = 0; i < REF_PODS; i++) {
		snprintf(pods[i].ns, sizeof(pods[i].ns), "%s", ref_ns[i % 2]);
		snprintf(pods[i].name, sizeof(pods[i].name), "p%d", i / 2);
	}
	CHECK(open_cluster(&fx) == 0);
	for (int step = 0; step < 800; step++) {
		int i = (int)rnd(REF_PODS), want, got;
		uint32_t op = rnd(20);
		struct status st = { 0 };
		char what[160], why[256] = "";

		if (op < 14) {
			struct ref_pod w = pods[i];
			bool create = rnd(3) == 0;
			uint32_t pick = rnd(sizeof(ref_ips) / sizeof(ref_ips[0]) + 1);

			snprintf(w.node, sizeof(w.node), "%s", ref_nodes[rnd(4)]);
			/* "-" no status, "" a status without podIP */
			snprintf(w.ip, sizeof(w.ip), "%s",
				 pick == sizeof(ref_ips) / sizeof(ref_ips[0]) ? "-" : ref_ips[pick]);
			if (!strcmp(w.ip, "10.128.0.2") || !strcmp(w.ip, "10.128.2.2"))
				snprintf(w.node, sizeof(w.node), "%s", !strcmp(w.ip, "10.128.0.2") ? "node-1" : "node-2");
			snprintf(what, sizeof(what), "%s %s/%s node '%s' ip '%s'", create ? "create" : "replace", w.ns,
				 w.name, w.node, w.ip);
			want = ref_write(pods, ns_exists, create, &w, i);
			got = write_pod(&fx, create, w.ns, w.name, *w.node ? w.node : NULL,
					!strcmp(w.ip, "-") ? NULL : w.ip, &st);
		} else if (op < 17) {
			snprintf(what, sizeof(what), "delete %s/%s", pods[i].ns, pods[i].name);
			want = pods[i].exists ? 0 : 404;
			pods[i].exists = false;
			struct status ds = { 0 };
			json_t *out = NULL;
			got = registry_delete(&fx.reg, kind_get(KIND_POD), pods[i].ns, pods[i].name, &out, &ds)
				      ? ds.code : 0;
			json_decref(out);
		} else if (op < 18) {
			int n = (int)rnd(2);

			snprintf(what, sizeof(what), "delete namespace %s", ref_ns[n]);
			want = ns_exists[n] ? 0 : 404;
			got = del(&fx, KIND_NAMESPACE, "", ref_ns[n]) ? 404 : 0;
			ns_exists[n] = false;
			for (int k = n; k < REF_PODS; k += 2)
				pods[k].exists = false;
		} else {
			int n = (int)rnd(2);

			snprintf(what, sizeof(what), "create namespace %s", ref_ns[n]);
			want = ns_exists[n] ? 409 : 0;
			got = add_ns(&fx, ref_ns[n]) ? 409 : 0;
			ns_exists[n] = true;
		}
		if (got != want || ref_keys_differ(&fx, pods, why, sizeof(why))) {
			test_fail(__FILE__, __LINE__, "step %d (%s): got %d, want %d (%s) %s", step, what, got, want,
				  st.message, why);
			break;
		}
		if (step % 50 == 0 && !fsck_clean(&fx)) {
			test_fail(__FILE__, __LINE__, "step %d (%s): fsck", step, what);
			break;
		}
	}
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

/* Two processes (two controllers on one store) create pods claiming the
 * same 30 addresses at once: each address ends with one pod. */
TEST(two_controllers_racing_never_give_one_address_twice)
{
	struct fixture fx;
	pid_t kids[2];
	enum { PER = 30 };
	json_t *items = NULL, *p;
	int64_t rev;
	struct status st = { 0 };
	size_t i, with_ip = 0;

	CHECK(open_cluster(&fx) == 0);
	fx_close(&fx);
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct fixture mine;
			struct status ks = { 0 };
			int bad = 0;

			if (fx_open(&mine, NULL))
				_exit(2);
			for (int j = 0; j < PER; j++) {
				char name[32], ip[IP4_STRLEN];
				int code;

				snprintf(name, sizeof(name), "k%d-p%d", k, j);
				ip4_format(0x0a800002u + (uint32_t)j, ip);
				code = write_pod(&mine, true, "blue", name, "node-1", ip, &ks);
				bad |= code != 0 && code != 409;
			}
			fx_close(&mine);
			_exit(bad);
		}
	}
	for (int k = 0; k < 2; k++) {
		int status = 0;
		CHECK(waitpid(kids[k], &status, 0) == kids[k]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(registry_list(&fx.reg, kind_get(KIND_POD), "blue", &items, &rev, &st) == 0);
	json_array_foreach(items, i, p) {
		char owner[64];

		if (!pod_address(p))
			continue;
		with_ip++;
		pod_owner(p, owner, sizeof(owner));
		CHECK_STR(holder(&fx, pod_address(p)), owner);
	}
	json_decref(items);
	CHECK_EQ(with_ip, PER);
	CHECK_EQ(count(&fx, ALLOC_PODIP), PER);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}
