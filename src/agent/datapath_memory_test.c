/*
 * datapath_memory_test.c — a datapath opened in memory (a hollow node's):
 * the public datapath_* calls with no kernel map behind them.
 *
 *  - it opens, works and closes in a child that has given up root (no
 *    bpffs, no BPF, no capability), with no program and nothing attached;
 *  - every put/get/del/foreach of the API, the sweeps of conntrack and
 *    policy conntrack, and the full maps' errors;
 *  - against a kernel datapath opened with the same options: every map's
 *    layout (so the memory side's table matches bpf/lib/maps.h), then one
 *    random sequence of API calls, small capacities so maps fill, with
 *    the same return codes, values and foreach contents on both;
 *  - on_write hears every write that succeeded and nothing else;
 *  - what a hollow node costs: 30,000 pods in the ipcache, 1,000 services
 *    of 3 backends, 1,000 nodes (printed), and 2,000 empty ones at once.
 */
#include "agent/conntrack.h"
#include "agent/datapath.h"
#include "agent/datapath_fixture.h"
#include "agent/policy_ct.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct datapath *open_memory(struct datapath_opts opts)
{
	struct datapath *dp = NULL;
	char err[256] = "";
	bool rebuilt = false;
	int rc;

	opts.in_memory = true;
	rc = datapath_open(&opts, &dp, &rebuilt, err, sizeof(err));
	if (rc < 0 || !rebuilt) {
		test_fail(__FILE__, __LINE__, "datapath_open in memory: %d %s", rc, err);
		return NULL;
	}
	return dp;
}

/* What a hollow node needs of its datapath, with a verdict a child can
 * return: 0 when all held. */
static int hollow_basics(void)
{
	struct datapath_opts opts = { .pin_dir = "/nonexistent/not-bpffs" };
	struct weft_endpoint ep = { .ifindex = 7 }, got;
	struct weft_config cfg;
	uint64_t drops[WEFT_DROP_MAX];
	struct datapath *dp = open_memory(opts);
	int bad = 0;

	if (!dp)
		return 1;
	bad |= datapath_pod_prog_fd(dp) != -EOPNOTSUPP || datapath_svc_prog_fd(dp) != -EOPNOTSUPP;
	bad |= datapath_policy_log_fd(dp) >= 0;
	bad |= datapath_attach_pod(dp, 5) != 0 || datapath_attach_vxlan(dp, 5) != 0 ||
	       datapath_attach_node(dp, 5) != 0 || datapath_attach_svc(dp, 5) != 0;
	bad |= datapath_attached(dp, 5) != 1;
	bad |= datapath_config_get(dp, &cfg) != 0 || cfg.version != 0;	/* fresh: incomplete */
	bad |= datapath_drops(dp, drops) != 0 || drops[0] != 0;
	bad |= datapath_endpoint_put(dp, htonl(0x0a800005), &ep) != 0;
	bad |= datapath_endpoint_get(dp, htonl(0x0a800005), &got) != 0 || got.ifindex != 7;
	datapath_close(dp);
	return bad;
}

TEST(memory_datapath_needs_no_privilege)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		_exit(hollow_basics());
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* ---- the API, in memory ---- */

/* foreach results as records (key, then value), zero-padded, sortable */
#define REC	64

struct kept {
	unsigned char rec[4096][REC];
	size_t n;
};

static int keep(void *arg, const void *k, size_t nk, const void *v, size_t nv)
{
	struct kept *kp = arg;

	if (kp->n == sizeof(kp->rec) / REC || nk + nv > REC)
		return -ENOSPC;
	memset(kp->rec[kp->n], 0, REC);
	memcpy(kp->rec[kp->n], k, nk);
	memcpy(kp->rec[kp->n] + nk, v, nv);
	kp->n++;
	return 0;
}

static int got_endpoint(in_addr_t ip, const struct weft_endpoint *e, void *arg)
{
	return keep(arg, &ip, sizeof(ip), e, sizeof(*e));
}

static int got_ipcache(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg)
{
	return keep(arg, &ip, sizeof(ip), e, sizeof(*e));
}

static int got_node(in_addr_t subnet, int prefixlen, const struct weft_node_entry *e, void *arg)
{
	struct weft_lpm_key k = { .prefixlen = (uint32_t)prefixlen, .addr = subnet };

	return keep(arg, &k, sizeof(k), e, sizeof(*e));
}

static int got_nodeip(in_addr_t ip, uint32_t node_id, void *arg)
{
	return keep(arg, &ip, sizeof(ip), &node_id, sizeof(node_id));
}

static int got_service(const struct weft_svc_key *k, const struct weft_svc_value *v, void *arg)
{
	return keep(arg, k, sizeof(*k), v, sizeof(*v));
}

static int got_backend(uint32_t id, const struct weft_backend *b, void *arg)
{
	return keep(arg, &id, sizeof(id), b, sizeof(*b));
}

static int got_policy(const struct weft_policy_key *k, const struct weft_policy_value *v, void *arg)
{
	return keep(arg, k, sizeof(*k), v, sizeof(*v));
}

static int got_cidr(uint32_t policy_id, int dir, in_addr_t addr, int prefixlen, uint32_t id,
		    void *arg)
{
	uint32_t k[4] = { policy_id, (uint32_t)dir, addr, (uint32_t)prefixlen };

	return keep(arg, k, sizeof(k), &id, sizeof(id));
}

static int got_count(in_addr_t client, uint64_t n, void *arg)
{
	return keep(arg, &client, sizeof(client), &n, sizeof(n));
}

static int got_ct(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	return keep(arg, k, sizeof(*k), e, sizeof(*e));
}

static int cmp_rec(const void *a, const void *b)
{
	return memcmp(a, b, REC);
}

/* Every walk of the API into one sorted list per map, in kp[0..9]. */
static int walk_all(struct datapath *dp, struct kept *kp)
{
	int rc = 0;

	for (int i = 0; i < 10; i++)
		kp[i].n = 0;
	rc |= datapath_endpoint_foreach(dp, got_endpoint, &kp[0]);
	rc |= datapath_ipcache_foreach(dp, got_ipcache, &kp[1]);
	rc |= datapath_node_foreach(dp, got_node, &kp[2]);
	rc |= datapath_nodeip_foreach(dp, got_nodeip, &kp[3]);
	rc |= datapath_service_foreach(dp, got_service, &kp[4]);
	rc |= datapath_backend_foreach(dp, got_backend, &kp[5]);
	rc |= datapath_policy_foreach(dp, got_policy, &kp[6]);
	rc |= datapath_policy_cidr_foreach(dp, got_cidr, &kp[7]);
	rc |= datapath_ct_closed_foreach(dp, got_count, &kp[8]);
	rc |= datapath_ct_foreach(dp, got_ct, &kp[9]);
	for (int i = 0; i < 10; i++)
		qsort(kp[i].rec, kp[i].n, REC, cmp_rec);
	return rc;
}

static struct weft_svc_key hollow_svc_key(uint32_t i)
{
	struct weft_svc_key k = { .addr = htonl(0xac1e0000u + i / 4), .port = htons(80),
				  .proto = IPPROTO_TCP, .slot = (uint16_t)(i % 4) };
	return k;
}

static struct weft_ct_key hollow_ct_key(uint32_t i, uint8_t dir)
{
	struct weft_ct_key k = { .saddr = htonl(0x0a800000u + i), .daddr = htonl(0xac1e0001u),
				 .sport = htons((uint16_t)(1000 + i)), .dport = htons(80),
				 .proto = IPPROTO_TCP, .dir = dir };
	return k;
}

static struct weft_policy_key policy_key(uint32_t i)
{
	static const uint32_t prefixes[] = { WEFT_POLICY_PREFIX_ALL, WEFT_POLICY_PREFIX_PROTO,
					     WEFT_POLICY_PREFIX_PORT, WEFT_POLICY_PREFIX_PORT - 4 };
	struct weft_policy_key k = { .prefixlen = prefixes[i % 4], .policy_id = htonl(i / 8),
				     .peer = htonl(16 + i / 4 % 2), .dir = WEFT_POLICY_INGRESS,
				     .proto = IPPROTO_TCP, .port = htons(8080) };

	if (k.prefixlen <= WEFT_POLICY_PREFIX_PROTO)
		k.port = 0;
	if (k.prefixlen == WEFT_POLICY_PREFIX_ALL)
		k.proto = 0;
	return k;
}

/* One call of the API chosen by what, on arguments a and b; a get writes
 * into out.  Returns the call's code. */
static int call(struct datapath *dp, uint32_t what, uint32_t a, uint32_t b, void *out)
{
	in_addr_t ip = htonl(0x0a800000u + a);
	struct weft_endpoint ep = { .ifindex = b, .vnid = a };
	struct weft_ipcache_entry ic = { .node_ip = htonl(0xc0a80000u + b), .vnid = b };
	struct weft_node_entry ne = { .node_ip = htonl(0xc0a80000u + b), .node_id = b };
	struct weft_svc_key sk = hollow_svc_key(a);
	struct weft_svc_value sv = { .svc_id = a, .backend_id = b, .count = (uint16_t)b };
	struct weft_backend be = { .addr = ip, .port = htons(8080), .proto = IPPROTO_TCP,
				   .svc_id = b };
	struct weft_policy_key pk = policy_key(a);
	struct weft_policy_value pv = { .rule = b };
	struct weft_ct_key ck = hollow_ct_key(a, WEFT_CT_FWD);
	struct weft_ct_entry ce = { .nat_addr = ip, .backend_id = b, .last_seen = b };
	int prefixlen = (int)(b % 36) - 1;	/* -1 .. 34: some refused */

	switch (what) {
	case 0: return datapath_endpoint_put(dp, ip, &ep);
	case 1: return datapath_endpoint_del(dp, ip);
	case 2: return datapath_endpoint_get(dp, ip, out);
	case 3: return datapath_ipcache_put(dp, ip, &ic);
	case 4: return datapath_ipcache_del(dp, ip);
	case 5: return datapath_ipcache_get(dp, ip, out);
	case 6: return datapath_node_put(dp, ip | htonl(b), prefixlen, &ne);
	case 7: return datapath_node_del(dp, ip, prefixlen);
	case 8: return datapath_nodeip_put(dp, ip, b);
	case 9: return datapath_nodeip_del(dp, ip);
	case 10: return datapath_service_put(dp, &sk, &sv);
	case 11: return datapath_service_del(dp, &sk);
	case 12: return datapath_service_get(dp, &sk, out);
	case 13: return datapath_backend_put(dp, a, &be);
	case 14: return datapath_backend_del(dp, a);
	case 15: return datapath_backend_get(dp, a, out);
	case 16: return datapath_policy_put(dp, &pk, &pv);
	case 17: return datapath_policy_del(dp, &pk);
	case 18: return datapath_policy_cidr_put(dp, a % 3, (int)(a % 3), ip, prefixlen, b);
	case 19: return datapath_policy_cidr_del(dp, a % 3, (int)(a % 3), ip, prefixlen);
	case 20: return datapath_ct_closed_add(dp, ip, b % 3);
	case 21: return datapath_ct_source_forget(dp, ip);
	case 22: return datapath_ct_closed_get(dp, ip, out);
	case 23: return datapath_ct_put(dp, &ck, &ce);
	case 24: return datapath_ct_del(dp, &ck);
	default: return datapath_ct_get(dp, &ck, out);
	}
}

#define CALLS 26

static const struct datapath_opts small = {
	.max_services = 24, .max_backends = 12, .max_ct = 16, .max_policy = 10,
	.max_policy_ct = 16, .max_affinity = 16,
};

/* The memory side's layouts are the kernel's, map by map; then the same
 * random calls get the same answers and leave the same contents. */
static void answer_alike(struct datapath *kernel, struct datapath *mem)
{
	static struct kept in_kernel[10], in_memory[10];
	uint64_t s = test_seed() | 1;
	int full = 0;

	for (int id = 0; id < DATAPATH_NMAPS; id++) {
		struct datapath_map_layout lk, lm;

		CHECK_EQ(datapath_map_layout(kernel, id, &lk), 0);
		CHECK_EQ(datapath_map_layout(mem, id, &lm), 0);
		if (memcmp(&lk, &lm, sizeof(lk)) != 0)
			test_fail(__FILE__, __LINE__, "%s: kernel type %u %u/%u x%u, memory type %u "
				  "%u/%u x%u", datapath_map_name(id), lk.type, lk.key_size,
				  lk.value_size, lk.max_entries, lm.type, lm.key_size, lm.value_size,
				  lm.max_entries);
	}
	for (int op = 0; op < 20000 && !test_failed(); op++) {
		unsigned char ok[64], om[64];
		uint32_t what = test_rnd(&s, CALLS), a = test_rnd(&s, 40), b = test_rnd(&s, 100);
		int rk, rm;

		memset(ok, 0, sizeof(ok));
		memset(om, 0, sizeof(om));
		rk = call(kernel, what, a, b, ok);
		rm = call(mem, what, a, b, om);
		full += rk == -E2BIG || rk == -ENOSPC;
		if (rk != rm || memcmp(ok, om, sizeof(ok)) != 0)
			test_fail(__FILE__, __LINE__, "call %u (%u, %u): kernel %d, memory %d%s", what,
				  a, b, rk, rm, rk == rm ? ", values differ" : "");
	}
	CHECK(full > 0);	/* the full maps were tried */
	CHECK_EQ(walk_all(kernel, in_kernel), 0);
	CHECK_EQ(walk_all(mem, in_memory), 0);
	for (int i = 0; i < 10; i++) {
		CHECK_EQ(in_kernel[i].n, in_memory[i].n);
		CHECK(memcmp(in_kernel[i].rec, in_memory[i].rec, in_kernel[i].n * REC) == 0);
	}
}

TEST(memory_and_kernel_datapaths_answer_alike)
{
	struct fixture f = { .dp = NULL };
	struct datapath *mem = open_memory(small);

	if (mem && fixture_up_opts(&f, small) == 0)
		answer_alike(f.dp, mem);
	fixture_down(&f);
	datapath_close(mem);
}

TEST(memory_full_maps_are_errors_and_replacing_still_works)
{
	struct datapath *dp = open_memory(small);
	struct weft_endpoint ep = { .ifindex = 1 };
	struct weft_backend be = { .port = htons(80) };
	struct weft_svc_value sv = { .count = 1 };
	struct weft_policy_value pv = { .rule = 1 };

	CHECK(dp);
	for (uint32_t i = 0; i < WEFT_MAX_ENDPOINTS; i++)
		CHECK_EQ(datapath_endpoint_put(dp, htonl(0x0a800000u + i), &ep), 0);
	CHECK_EQ(datapath_endpoint_put(dp, htonl(0x0b000000u), &ep), -E2BIG);
	ep.ifindex = 2;
	CHECK_EQ(datapath_endpoint_put(dp, htonl(0x0a800000u), &ep), 0);
	for (uint32_t i = 0; i < small.max_backends; i++)
		CHECK_EQ(datapath_backend_put(dp, i, &be), 0);
	CHECK_EQ(datapath_backend_put(dp, 999, &be), -E2BIG);
	for (uint32_t i = 0; i < small.max_services; i++) {
		struct weft_svc_key k = hollow_svc_key(i);

		CHECK_EQ(datapath_service_put(dp, &k, &sv), 0);
	}
	{
		struct weft_svc_key k = hollow_svc_key(999);

		CHECK_EQ(datapath_service_put(dp, &k, &sv), -E2BIG);
	}
	for (uint32_t i = 0; i < small.max_policy; i++) {
		struct weft_policy_key k = policy_key(i);

		CHECK_EQ(datapath_policy_put(dp, &k, &pv), 0);
	}
	{
		struct weft_policy_key k = policy_key(999);

		CHECK_EQ(datapath_policy_put(dp, &k, &pv), -ENOSPC);	/* an LPM trie's word */
		k = policy_key(0);
		CHECK_EQ(datapath_policy_put(dp, &k, &pv), 0);
	}
	datapath_close(dp);
}

/* The sweeps read conntrack in batches and delete through the API: an
 * expired pair goes, a fresh one stays, the client is counted. */
TEST(memory_conntrack_sweeps_work)
{
	struct datapath *dp = open_memory(small);
	struct weft_ct_key fwd = hollow_ct_key(1, WEFT_CT_FWD), rev, fresh = hollow_ct_key(2, WEFT_CT_FWD);
	struct weft_ct_entry e = { .nat_addr = htonl(0x0a810005), .nat_port = htons(8080),
				   .nat_addr2 = fwd.saddr, .nat_port2 = fwd.sport };
	struct weft_ct_entry re = { .nat_addr = fwd.daddr, .nat_port = fwd.dport,
				    .nat_addr2 = fwd.saddr, .nat_port2 = fwd.sport };
	struct weft_policy_ct_entry pe = { .last_seen = 0 };
	struct conntrack_stats st;
	uint32_t now = 100000;
	uint64_t closed;

	CHECK(dp);
	rev = (struct weft_ct_key){ .saddr = e.nat_addr, .sport = e.nat_port, .daddr = e.nat_addr2,
				    .dport = e.nat_port2, .proto = IPPROTO_TCP, .dir = WEFT_CT_REV };
	CHECK_EQ(datapath_ct_put(dp, &fwd, &e), 0);
	CHECK_EQ(datapath_ct_put(dp, &rev, &re), 0);
	e.last_seen = now;
	CHECK_EQ(datapath_ct_put(dp, &fresh, &e), 0);	/* an orphan within its grace */
	CHECK_EQ(conntrack_sweep(dp, now, &st), 0);
	CHECK_EQ(st.entries, 3);
	CHECK_EQ(st.expired_pairs, 1);
	CHECK_EQ(datapath_ct_get(dp, &fwd, &e), -ENOENT);
	CHECK_EQ(datapath_ct_get(dp, &rev, &e), -ENOENT);
	CHECK_EQ(datapath_ct_get(dp, &fresh, &e), 0);
	CHECK_EQ(datapath_ct_closed_get(dp, fwd.saddr, &closed), 0);
	CHECK_EQ(closed, 1);

	CHECK_EQ(datapath_policy_ct_put(dp, &fwd, &pe), 0);
	CHECK_EQ(policy_ct_sweep(dp, now, &st), 0);
	CHECK_EQ(st.expired_pairs, 1);
	CHECK_EQ(datapath_policy_ct_get(dp, &fwd, &pe), -ENOENT);
	datapath_close(dp);
}

/* ---- on_write ---- */

struct heard {
	int n;
	enum datapath_map_id map[8];
	unsigned char key[8][16];
	bool deleted[8];
};

static void hear(void *arg, enum datapath_map_id map, const void *key, const void *value)
{
	struct heard *h = arg;

	if (h->n == 8)
		return;
	h->map[h->n] = map;
	h->deleted[h->n] = value == NULL;
	memcpy(h->key[h->n], key, map == DATAPATH_MAP_NODES ? sizeof(struct weft_lpm_key) : 4);
	h->n++;
}

TEST(on_write_hears_every_write_that_succeeded)
{
	static struct heard h;
	struct datapath_opts opts = { .on_write = hear, .on_write_arg = &h };
	struct weft_ipcache_entry ic = { .vnid = 1 };
	struct weft_node_entry ne = { .node_id = 3 };
	struct datapath *dp = open_memory(opts);
	in_addr_t ip = htonl(0x0a800009);
	struct weft_lpm_key lk;

	CHECK(dp);
	CHECK_EQ(datapath_ipcache_put(dp, ip, &ic), 0);
	CHECK_EQ(datapath_ipcache_get(dp, ip, &ic), 0);		/* a read: not told */
	CHECK_EQ(datapath_ipcache_del(dp, ip), 0);
	CHECK_EQ(datapath_ipcache_del(dp, ip), -ENOENT);	/* failed: not told */
	CHECK_EQ(datapath_node_put(dp, htonl(0x0a800201), 23, &ne), 0);
	CHECK_EQ(datapath_node_put(dp, 0, 40, &ne), -EINVAL);
	CHECK_EQ(h.n, 3);
	CHECK_EQ(h.map[0], DATAPATH_MAP_IPCACHE);
	CHECK(!h.deleted[0] && h.deleted[1]);
	CHECK(memcmp(h.key[0], &ip, 4) == 0 && memcmp(h.key[1], &ip, 4) == 0);
	CHECK_EQ(h.map[2], DATAPATH_MAP_NODES);
	memcpy(&lk, h.key[2], sizeof(lk));
	CHECK_EQ(lk.prefixlen, 23);
	CHECK_EQ(lk.addr, htonl(0x0a800200));
	CHECK_STR(datapath_map_name(h.map[2]), "weft_nodes");
	datapath_close(dp);
}

/* ---- what a hollow node costs ---- */

/* 30,000 pods (30 here), 1,000 nodes, 1,000 services of 3 backends: the
 * bytes its maps hold, printed; far below what their capacities are. */
TEST(hollow_node_maps_hold_what_is_written)
{
	struct datapath *dp = open_memory((struct datapath_opts){ 0 });
	struct weft_ipcache_entry ic = { .vnid = 1 };
	struct weft_endpoint ep = { .ifindex = 1 };
	struct weft_node_entry ne = { .node_id = 1 };
	struct weft_svc_value sv = { .count = 3 };
	struct weft_backend be = { .port = htons(80) };
	size_t empty, bytes;

	CHECK(dp);
	empty = datapath_memory_bytes(dp);
	for (uint32_t i = 0; i < 30000; i++)
		CHECK_EQ(datapath_ipcache_put(dp, htonl(0x0a800000u + i / 30 * 512 + i % 30 + 2), &ic), 0);
	for (uint32_t i = 0; i < 30; i++)
		CHECK_EQ(datapath_endpoint_put(dp, htonl(0x0a800002u + i), &ep), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		CHECK_EQ(datapath_node_put(dp, htonl(0x0a800000u + i * 512), 23, &ne), 0);
		CHECK_EQ(datapath_nodeip_put(dp, htonl(0xc0a80000u + i), i + 1), 0);
	}
	for (uint32_t i = 0; i < 4000; i++) {	/* a service entry and 3 slots each */
		struct weft_svc_key k = hollow_svc_key(i);

		CHECK_EQ(datapath_service_put(dp, &k, &sv), 0);
	}
	for (uint32_t i = 0; i < 3000; i++)
		CHECK_EQ(datapath_backend_put(dp, i + 1, &be), 0);
	bytes = datapath_memory_bytes(dp);
	printf("  info hollow datapath: %zu bytes empty, %zu bytes with 30,000 ipcache, 30 endpoints,"
	       " 1,000 nodes, 4,000 service entries, 3,000 backends (%.1f bytes an entry)\n",
	       empty, bytes, (double)(bytes - empty) / (30000 + 30 + 2000 + 4000 + 3000));
	CHECK(empty < 8192);
	CHECK(bytes < 2u << 20);
	datapath_close(dp);
}

TEST(two_thousand_hollow_datapaths_in_one_process)
{
	static struct datapath *dps[2000];
	struct weft_ipcache_entry ic = { .vnid = 1 };
	size_t total = 0;

	for (int i = 0; i < 2000; i++) {
		dps[i] = open_memory((struct datapath_opts){ 0 });
		CHECK(dps[i]);
		CHECK_EQ(datapath_ipcache_put(dps[i], htonl(0x0a800002u + (uint32_t)i), &ic), 0);
		total += datapath_memory_bytes(dps[i]);
	}
	for (int i = 0; i < 2000; i++) {
		CHECK_EQ(datapath_ipcache_get(dps[i], htonl(0x0a800002u + (uint32_t)i), &ic), 0);
		CHECK_EQ(datapath_ipcache_get(dps[i], htonl(0x0a800001u + (uint32_t)i), &ic), -ENOENT);
		datapath_close(dps[i]);
		dps[i] = NULL;
	}
	CHECK(total / 2000 < 8192);
}
