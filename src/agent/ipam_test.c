/*
 * ipam_test.c — the lease directory: the CNI checks (/29 gives 5, ADD DEL
 * ADD round-robin, 100 parallel ADDs), persistence across reopen, the
 * errors of each call, what ipam_open does with foreign, stale, malformed
 * and out-of-subnet files and files of reserved addresses, the quarantine
 * list and its refresh, the counts every report uses, two processes on one
 * directory, and randomized runs checked against a bitmap model of the
 * same round-robin rule.
 */
#include "agent/ipam.h"
#include "test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------- */

static in_addr_t ip_of(const char *s) { return inet_addr(s); }

static const char *ip_str(in_addr_t ip)
{
	static __thread char buf[4][INET_ADDRSTRLEN];
	static __thread int next;
	char *b = buf[next++ % 4];

	inet_ntop(AF_INET, &ip, b, INET_ADDRSTRLEN);
	return b;
}

static void owner_set(struct ipam_owner *o, const char *container_id, const char *ifname)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->container_id, sizeof(o->container_id), "%s", container_id);
	snprintf(o->ifname, sizeof(o->ifname), "%s", ifname);
	snprintf(o->pod_namespace, sizeof(o->pod_namespace), "default");
	snprintf(o->pod_name, sizeof(o->pod_name), "pod-%s", container_id);
	snprintf(o->netns, sizeof(o->netns), "/var/run/netns/%s", container_id);
}

static char *lease_dir(const char *sub)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), sub);
	return path;
}

static int open_dir(const char *dir, const char *subnet, int prefixlen, struct ipam **out,
		    char *err, size_t errlen)
{
	return ipam_open(dir, ip_of(subnet), prefixlen, out, err, errlen);
}

enum { FILES_LEASES, FILES_TMP, FILES_BAD, FILES_ALL };

/* Count the directory's entries of one kind. */
static int count_files(const char *dir, int kind)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		struct in_addr a;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (kind == FILES_ALL ||
		    (kind == FILES_LEASES && inet_pton(AF_INET, name, &a) == 1) ||
		    (kind == FILES_TMP && !strncmp(name, ".tmp.", 5)) ||
		    (kind == FILES_BAD && strstr(name, ".bad")))
			n++;
	}
	closedir(d);
	return n;
}

static const char *path_in(const char *dir, const char *name)
{
	static char path[4][1024];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
	return p;
}

static bool file_exists(const char *dir, const char *name)
{
	return access(path_in(dir, name), F_OK) == 0;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static const char *valid_json(const char *container_id, long created)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"container_id\":\"%s\",\"created\":%ld,\"host_ifname\":\"\","
		 "\"ifname\":\"eth0\",\"netns\":\"/n\",\"pod_name\":\"p\","
		 "\"pod_namespace\":\"d\"}\n", container_id, created);
	return buf;
}

static uint64_t rng_next(uint64_t *s)	/* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the CNI checks ------------------------------------------------------- */

TEST(ipam_slash29_gives_exactly_five)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	char err[512], id[32];
	in_addr_t got[5], ip = 0;
	const char *dir = lease_dir("leases");

	CHECK_EQ(open_dir(dir, "10.9.0.8", 29, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_capacity(ipam), 5);
	CHECK_EQ(ipam_gateway(ipam), ip_of("10.9.0.9"));
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &got[i]), 0);
		uint32_t h = ntohl(got[i]);

		CHECK(h >= ntohl(ip_of("10.9.0.10")) && h <= ntohl(ip_of("10.9.0.14")));
		for (int j = 0; j < i; j++)
			CHECK(got[j] != got[i]);
	}
	owner_set(&o, "c5", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -ENOSPC);
	CHECK_EQ(ipam_used(ipam), 5);
	CHECK_EQ(count_files(dir, FILES_LEASES), 5);
	CHECK_EQ(count_files(dir, FILES_TMP), 0);
	CHECK_EQ(count_files(dir, FILES_ALL), 6);	/* + last_reserved_ip */
	CHECK(!file_exists(dir, "10.9.0.8"));
	CHECK(!file_exists(dir, "10.9.0.9"));
	CHECK(!file_exists(dir, "10.9.0.15"));
	ipam_close(ipam);
}

TEST(ipam_add_del_add_is_round_robin)
{
	struct ipam *ipam = NULL;
	struct ipam_owner a, b;
	char err[512];
	in_addr_t ip1, ip2;

	CHECK_EQ(open_dir(lease_dir("l"), "10.1.2.0", 24, &ipam, err, sizeof(err)), 0);
	owner_set(&a, "aaaa", "eth0");
	owner_set(&b, "bbbb", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &a, &ip1), 0);
	CHECK_EQ(ip1, ip_of("10.1.2.2"));
	CHECK_EQ(ipam_release(ipam, "aaaa", "eth0"), 0);
	CHECK_EQ(ipam_alloc(ipam, &b, &ip2), 0);
	CHECK(ip2 != ip1);
	CHECK_EQ(ip2, ip_of("10.1.2.3"));
	CHECK_EQ(ipam_used(ipam), 1);
	ipam_close(ipam);
}

struct par {
	struct ipam *ipam;
	pthread_barrier_t *start;
	int index;
	in_addr_t ip;
	int err;
};

static void *par_alloc(void *arg)
{
	struct par *p = arg;
	struct ipam_owner o;
	char id[32];

	snprintf(id, sizeof(id), "parallel-%d", p->index);
	owner_set(&o, id, "eth0");
	pthread_barrier_wait(p->start);
	p->err = ipam_alloc(p->ipam, &o, &p->ip);
	return NULL;
}

TEST(ipam_100_parallel_allocs_are_distinct)
{
	struct ipam *ipam = NULL;
	struct par p[100];
	pthread_t th[100];
	pthread_barrier_t start;
	char err[512];
	const char *dir = lease_dir("l");
	uint32_t lo = ntohl(ip_of("10.4.2.0")), hi = ntohl(ip_of("10.4.3.255"));

	CHECK_EQ(open_dir(dir, "10.4.2.0", 23, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(pthread_barrier_init(&start, NULL, 100), 0);
	for (int i = 0; i < 100; i++) {
		p[i] = (struct par){ .ipam = ipam, .start = &start, .index = i };
		CHECK_EQ(pthread_create(&th[i], NULL, par_alloc, &p[i]), 0);
	}
	for (int i = 0; i < 100; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 100; i++) {
		uint32_t h = ntohl(p[i].ip);

		CHECK_EQ(p[i].err, 0);
		CHECK(h > lo + 1 && h < hi);	/* not network, gateway, broadcast */
		for (int j = 0; j < i; j++)
			CHECK(p[j].ip != p[i].ip);
	}
	CHECK_EQ(ipam_used(ipam), 100);
	CHECK_EQ(count_files(dir, FILES_LEASES), 100);
	CHECK_EQ(count_files(dir, FILES_TMP), 0);
	ipam_close(ipam);
}

/* ---- persistence and the calls' errors ------------------------------------ */

TEST(ipam_reopen_keeps_leases_and_last_reserved)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	struct ipam_lease l;
	struct ipam_stats st;
	char err[512];
	const char *dir = lease_dir("l");
	in_addr_t ip[3], next;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		char id[16];

		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		snprintf(o.host_ifname, sizeof(o.host_ifname), "weft%d", i);
		CHECK_EQ(ipam_alloc(ipam, &o, &ip[i]), 0);
	}
	CHECK_EQ(ipam_release(ipam, "c2", "eth0"), 0);	/* the last one */
	CHECK_EQ(ipam_find(ipam, "c0", "eth0", &l), 0);
	time_t created0 = l.created;
	ipam_close(ipam);
	ipam = NULL;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ(ipam_used(ipam), 2);
	CHECK_EQ(ipam_find(ipam, "c0", "eth0", &l), 0);
	CHECK_EQ(l.ip, ip[0]);
	CHECK_EQ(l.created, created0);
	CHECK_STR(l.owner.host_ifname, "weft0");
	CHECK_STR(l.owner.pod_name, "pod-c0");
	CHECK_STR(l.owner.netns, "/var/run/netns/c0");
	CHECK_EQ(ipam_find_ip(ipam, ip[1], &l), 0);
	CHECK_STR(l.owner.container_id, "c1");
	CHECK_EQ(ipam_find(ipam, "c2", "eth0", &l), -ENOENT);
	/* last_reserved_ip survived: the released .4 is not handed out */
	owner_set(&o, "c3", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &next), 0);
	CHECK_EQ(next, ip_of("10.1.0.5"));
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 3);
	CHECK_EQ(st.cleanup_errors, 0);
	ipam_close(ipam);
}

TEST(ipam_round_robin_wraps_and_fills_holes)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	char err[512], id[16];
	in_addr_t ip;

	CHECK_EQ(open_dir(lease_dir("l"), "10.0.0.0", 29, &ipam, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	}
	CHECK_EQ(ipam_release_ip(ipam, ip_of("10.0.0.4")), 0);
	CHECK_EQ(ipam_release_ip(ipam, ip_of("10.0.0.3")), 0);
	owner_set(&o, "x", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.3"));	/* wrapped past .6 and .2 */
	owner_set(&o, "y", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.4"));
	ipam_close(ipam);
}

TEST(ipam_duplicate_owner_is_eexist_with_its_ip)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	char err[512];
	in_addr_t ip, again = 0;
	const char *dir = lease_dir("l");

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	owner_set(&o, "dup", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ipam_alloc(ipam, &o, &again), -EEXIST);
	CHECK_EQ(again, ip);
	owner_set(&o, "dup", "net1");		/* another interface: its own lease */
	CHECK_EQ(ipam_alloc(ipam, &o, &again), 0);
	CHECK(again != ip);
	CHECK_EQ(ipam_used(ipam), 2);
	CHECK_EQ(count_files(dir, FILES_LEASES), 2);
	ipam_close(ipam);
}

TEST(ipam_unknown_is_enoent)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	struct ipam_lease l;
	char err[512];
	in_addr_t ip;

	CHECK_EQ(open_dir(lease_dir("l"), "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_release(ipam, "nobody", "eth0"), -ENOENT);
	CHECK_EQ(ipam_release_ip(ipam, ip_of("10.1.0.7")), -ENOENT);
	owner_set(&o, "a", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ipam_release(ipam, "a", "eth1"), -ENOENT);
	CHECK_EQ(ipam_release(ipam, "a", "eth0"), 0);
	CHECK_EQ(ipam_release(ipam, "a", "eth0"), -ENOENT);
	CHECK_EQ(ipam_release_ip(ipam, ip), -ENOENT);
	CHECK_EQ(ipam_find(ipam, "a", "eth0", &l), -ENOENT);
	CHECK_EQ(ipam_find_ip(ipam, ip, &l), -ENOENT);
	CHECK_EQ(ipam_update(ipam, ip, &o), -ENOENT);
	ipam_close(ipam);
}

TEST(ipam_rejects_bad_arguments)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	char err[512];
	in_addr_t ip;
	const char *dir = lease_dir("l");

	CHECK_EQ(open_dir(dir, "10.0.0.0", 31, &ipam, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS(err, "/31");
	CHECK_EQ(open_dir(dir, "10.0.0.0", 32, &ipam, err, sizeof(err)), -EINVAL);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 7, &ipam, err, sizeof(err)), -EINVAL);
	CHECK_EQ(open_dir(dir, "10.0.0.1", 24, &ipam, err, sizeof(err)), -EINVAL);
	CHECK_CONTAINS(err, "10.0.0.1/24");
	CHECK(ipam == NULL);

	CHECK_EQ(open_dir(dir, "10.0.0.0", 30, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_capacity(ipam), 1);
	owner_set(&o, "", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -EINVAL);
	owner_set(&o, "c", "");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -EINVAL);
	owner_set(&o, "c", "eth0");
	memset(o.ifname, 'x', sizeof(o.ifname));	/* not terminated */
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -EINVAL);
	owner_set(&o, "c", "eth0");
	o.pod_name[0] = (char)0xff;			/* not UTF-8 */
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -EINVAL);
	CHECK_EQ(count_files(dir, FILES_ALL), 0);
	owner_set(&o, "c", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.2"));
	ipam_close(ipam);
	ipam_close(NULL);
}

TEST(ipam_update_rewrites_owner)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o, other;
	struct ipam_lease l;
	char err[512];
	const char *dir = lease_dir("l");
	in_addr_t ip, ip2;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	owner_set(&o, "u", "eth0");
	owner_set(&other, "v", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ipam_alloc(ipam, &other, &ip2), 0);
	CHECK_EQ(ipam_find(ipam, "u", "eth0", &l), 0);
	time_t created = l.created;
	snprintf(o.host_ifname, sizeof(o.host_ifname), "weftabc");
	CHECK_EQ(ipam_update(ipam, ip, &o), 0);
	CHECK_EQ(ipam_update(ipam, ip, &other), -EEXIST);	/* v holds ip2 */
	CHECK_EQ(ipam_find(ipam, "u", "eth0", &l), 0);
	CHECK_STR(l.owner.host_ifname, "weftabc");
	/* the owner's key may change too */
	owner_set(&o, "u2", "eth0");
	CHECK_EQ(ipam_update(ipam, ip, &o), 0);
	CHECK_EQ(ipam_find(ipam, "u", "eth0", &l), -ENOENT);
	CHECK_EQ(ipam_find(ipam, "u2", "eth0", &l), 0);
	CHECK_EQ(l.ip, ip);
	CHECK_EQ(count_files(dir, FILES_TMP), 0);
	ipam_close(ipam);
	ipam = NULL;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_find(ipam, "u2", "eth0", &l), 0);
	CHECK_EQ(l.ip, ip);
	CHECK_EQ(l.created, created);
	CHECK_EQ(ipam_find(ipam, "v", "eth0", &l), 0);
	CHECK_EQ(ipam_used(ipam), 2);
	ipam_close(ipam);
}

struct walk {
	struct ipam *ipam;
	int calls;
	in_addr_t prev;
	bool ordered;
};

static int release_each(const struct ipam_lease *l, void *arg)
{
	struct walk *w = arg;

	if (w->calls && ntohl(l->ip) <= ntohl(w->prev))
		w->ordered = false;
	w->prev = l->ip;
	w->calls++;
	return ipam_release(w->ipam, l->owner.container_id, l->owner.ifname);
}

static int stop_at_three(const struct ipam_lease *l, void *arg)
{
	return ++*(int *)arg == 3 ? 42 : 0;
}

TEST(ipam_foreach_snapshot_allows_release)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	struct walk w = { .ordered = true };
	char err[512], id[16];
	const char *dir = lease_dir("l");
	in_addr_t ip;
	int n = 0;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 28, &ipam, err, sizeof(err)), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	}
	/* make the IP order differ from the allocation order */
	CHECK_EQ(ipam_release(ipam, "c0", "eth0"), 0);
	owner_set(&o, "late", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ipam_foreach(ipam, stop_at_three, &n), 42);
	CHECK_EQ(n, 3);
	w.ipam = ipam;
	CHECK_EQ(ipam_foreach(ipam, release_each, &w), 0);
	CHECK_EQ(w.calls, 10);
	CHECK(w.ordered);
	CHECK_EQ(ipam_used(ipam), 0);
	CHECK_EQ(count_files(dir, FILES_LEASES), 0);
	ipam_close(ipam);
}

/* A file operation that fails leaves the index as it was. */
TEST(ipam_failed_file_operation_keeps_index)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o, changed;
	struct ipam_lease l;
	char err[512], path[1024], inner[1100];
	const char *dir = lease_dir("l");
	in_addr_t ip;

	CHECK_EQ(open_dir(dir, "10.1.0.0", 24, &ipam, err, sizeof(err)), 0);
	owner_set(&o, "f", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	/* swap the lease file for a non-empty directory: unlink and rename
	 * onto it fail, even for root */
	snprintf(path, sizeof(path), "%s/%s", dir, ip_str(ip));
	snprintf(inner, sizeof(inner), "%s/x", path);
	CHECK_EQ(unlink(path), 0);
	CHECK_EQ(mkdir(path, 0700), 0);
	CHECK_EQ(mkdir(inner, 0700), 0);

	CHECK(ipam_release(ipam, "f", "eth0") < 0);
	CHECK_EQ(ipam_find(ipam, "f", "eth0", &l), 0);
	CHECK_EQ(ipam_used(ipam), 1);
	owner_set(&changed, "g", "eth0");
	CHECK(ipam_update(ipam, ip, &changed) < 0);
	CHECK_EQ(ipam_find(ipam, "f", "eth0", &l), 0);
	CHECK_EQ(ipam_find(ipam, "g", "eth0", &l), -ENOENT);
	CHECK_EQ(count_files(dir, FILES_TMP), 0);

	/* the file already gone counts as released */
	CHECK_EQ(rmdir(inner), 0);
	CHECK_EQ(rmdir(path), 0);
	CHECK_EQ(ipam_release(ipam, "f", "eth0"), 0);
	CHECK_EQ(ipam_used(ipam), 0);
	ipam_close(ipam);
}

/* ---- ipam_open and what it finds ------------------------------------------ */

TEST(ipam_open_refuses_lease_outside_subnet)
{
	struct ipam *ipam = NULL;
	char err[512];
	const char *dir = lease_dir("l");

	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	ipam_close(ipam);
	ipam = NULL;
	CHECK_EQ(write_file(dir, "10.0.1.5", valid_json("c", 1)), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), -EINVAL);
	CHECK(ipam == NULL);
	CHECK_CONTAINS(err, "10.0.1.5");
	CHECK_CONTAINS(err, "outside node subnet 10.0.0.0/24");
	CHECK_CONTAINS(err, dir);
	/* the file is left for the operator */
	CHECK(file_exists(dir, "10.0.1.5"));
	/* a larger subnet holds it */
	CHECK_EQ(open_dir(dir, "10.0.0.0", 23, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_used(ipam), 1);
	ipam_close(ipam);
	ipam = NULL;
	CHECK_EQ(unlink(path_in(dir, "10.0.1.5")), 0);

	/* so is a quarantined file's: it was quarantined under another subnet */
	CHECK_EQ(write_file(dir, "10.0.1.6.bad", "garbage"), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), -EINVAL);
	CHECK(ipam == NULL);
	CHECK_CONTAINS(err, "10.0.1.6.bad: 10.0.1.6 is outside node subnet 10.0.0.0/24");
	CHECK(file_exists(dir, "10.0.1.6.bad"));
}

/* What ipam_foreach_quarantined gave, in order. */
struct qlist {
	int n;
	in_addr_t ip[8];
	bool held[8];
	char file[8][sizeof(((struct ipam_quarantine *)0)->file)];
	char reason[8][IPAM_REASON_MAX];
	int stop_after;			/* 0: never */
};

static int collect_quarantine(const struct ipam_quarantine *q, void *arg)
{
	struct qlist *l = arg;

	if (l->n == 8)
		return -E2BIG;
	l->ip[l->n] = q->ip;
	l->held[l->n] = q->held;
	snprintf(l->file[l->n], sizeof(l->file[0]), "%s", q->file);
	snprintf(l->reason[l->n], sizeof(l->reason[0]), "%s", q->reason);
	l->n++;
	return l->stop_after && l->n == l->stop_after ? 7 : 0;
}

static void collect_freed(const struct ipam_quarantine *q, void *arg)
{
	(void)collect_quarantine(q, arg);
}

TEST(ipam_open_quarantines_files_of_reserved_addresses)
{
	struct ipam *ipam = NULL;
	struct ipam_stats st;
	struct ipam_owner o;
	struct qlist l = { 0 };
	char err[512], id[16];
	const char *dir = lease_dir("l");
	in_addr_t ip;

	CHECK_EQ(mkdir(dir, 0700), 0);
	/* strays: network, gateway and broadcast of 10.0.0.0/29, one a
	 * well-formed lease, one garbage, one a directory */
	CHECK_EQ(write_file(dir, "10.0.0.0", valid_json("n", 1)), 0);
	CHECK_EQ(write_file(dir, "10.0.0.1", "garbage"), 0);
	CHECK_EQ(mkdir(path_in(dir, "10.0.0.7"), 0700), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 29, &ipam, err, sizeof(err)), 0);
	CHECK_CONTAINS(err, ".bad");
	CHECK_CONTAINS(err, "holds no address");
	for (int i = 0; i < 3; i++) {
		static const char *names[] = { "10.0.0.0", "10.0.0.1", "10.0.0.7" };
		char bad[32];

		snprintf(bad, sizeof(bad), "%s.bad", names[i]);
		CHECK(!file_exists(dir, names[i]));
		CHECK(file_exists(dir, bad));
	}
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 0);
	CHECK_EQ(st.quarantined, 0);		/* no pool address held */
	CHECK_EQ(st.quarantine_files, 3);
	CHECK_EQ(st.capacity, 5);
	CHECK_EQ(ipam_foreach_quarantined(ipam, collect_quarantine, &l), 0);
	CHECK_EQ(l.n, 3);
	CHECK_EQ(l.ip[0], ip_of("10.0.0.0"));
	CHECK_EQ(l.ip[1], ip_of("10.0.0.1"));
	CHECK_EQ(l.ip[2], ip_of("10.0.0.7"));
	for (int i = 0; i < 3; i++) {
		CHECK(!l.held[i]);
		CHECK_CONTAINS(l.reason[i], "of node subnet 10.0.0.0/29");
		CHECK_CONTAINS(l.reason[i], "holds no address");
	}
	CHECK_CONTAINS(l.reason[0], "10.0.0.0 is the network address");
	CHECK_CONTAINS(l.reason[1], "10.0.0.1 is the gateway");
	CHECK_CONTAINS(l.reason[2], "10.0.0.7 is the broadcast address");
	CHECK_STR(l.file[2], path_in(dir, "10.0.0.7.bad"));
	/* all five pool addresses are still there */
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	}
	owner_set(&o, "c5", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -ENOSPC);
	ipam_close(ipam);
	ipam = NULL;

	/* found again at the next open: listed, not fatal, still no address */
	CHECK_EQ(open_dir(dir, "10.0.0.0", 29, &ipam, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 5);
	CHECK_EQ(st.quarantined, 0);
	CHECK_EQ(st.quarantine_files, 3);
	l.n = 0;
	CHECK_EQ(ipam_foreach_quarantined(ipam, collect_quarantine, &l), 0);
	CHECK_EQ(l.n, 3);
	CHECK_CONTAINS(l.reason[2], "quarantined before this start");
	CHECK_CONTAINS(l.reason[2], "10.0.0.7 is the broadcast address");
	CHECK(!l.held[2]);

	/* the operator removes one: it leaves the list at the next refresh */
	CHECK_EQ(rmdir(path_in(dir, "10.0.0.7.bad")), 0);
	l.n = 0;
	CHECK_EQ(ipam_refresh_quarantine(ipam, collect_freed, &l), 1);
	CHECK_EQ(l.n, 1);
	CHECK_EQ(l.ip[0], ip_of("10.0.0.7"));
	ipam_stats(ipam, &st);
	CHECK_EQ(st.quarantine_files, 2);
	CHECK_EQ(st.quarantined, 0);
	CHECK_EQ(st.leases, 5);
	ipam_close(ipam);
}

TEST(ipam_open_quarantines_malformed_leases)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	struct ipam_lease l;
	struct ipam_stats st;
	char err[512], id[16];
	const char *dir = lease_dir("l");
	in_addr_t ip;

	CHECK_EQ(open_dir(dir, "10.0.0.0", 28, &ipam, err, sizeof(err)), 0);
	owner_set(&o, "good", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.2"));
	ipam_close(ipam);
	ipam = NULL;

	CHECK_EQ(write_file(dir, "10.0.0.5", "garbage"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.6", "{\"container_id\":\"trunc"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.7", "{\"container_id\":\"x\",\"created\":1}"), 0);
	CHECK_EQ(write_file(dir, "notes.txt", "an operator's file"), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 28, &ipam, err, sizeof(err)), 0);
	CHECK_CONTAINS(err, ".bad");
	CHECK_CONTAINS(err, "and more");
	CHECK_EQ(ipam_used(ipam), 1);
	CHECK_EQ(ipam_quarantined(ipam), 3);
	ipam_stats(ipam, &st);
	CHECK_EQ(st.quarantined, 3);
	CHECK(file_exists(dir, "10.0.0.5.bad"));
	CHECK(file_exists(dir, "10.0.0.6.bad"));
	CHECK(file_exists(dir, "10.0.0.7.bad"));
	CHECK(!file_exists(dir, "10.0.0.5"));
	CHECK(file_exists(dir, "notes.txt"));
	CHECK_EQ(ipam_find_ip(ipam, ip_of("10.0.0.5"), &l), -ENOENT);
	CHECK_EQ(ipam_release_ip(ipam, ip_of("10.0.0.5")), -ENOENT);
	/* 13 hosts - 1 lease - 3 held = 9 more, none of the held ones */
	for (int i = 0; i < 9; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
		CHECK(ip != ip_of("10.0.0.5") && ip != ip_of("10.0.0.6") && ip != ip_of("10.0.0.7"));
	}
	owner_set(&o, "c9", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -ENOSPC);
	ipam_close(ipam);
	ipam = NULL;

	/* the .bad files keep holding their IPs across a reopen */
	CHECK_EQ(open_dir(dir, "10.0.0.0", 28, &ipam, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ(ipam_quarantined(ipam), 3);
	CHECK_EQ(ipam_used(ipam), 10);
	ipam_close(ipam);
	ipam = NULL;

	/* the operator removes one: its IP comes back */
	CHECK_EQ(unlink(path_in(dir, "10.0.0.5.bad")), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 28, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_quarantined(ipam), 2);
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.5"));
	ipam_close(ipam);
}

TEST(ipam_quarantine_lists_every_file_with_its_reason)
{
	struct ipam *ipam = NULL;
	struct ipam_stats st;
	struct qlist l = { 0 };
	char err[512];
	const char *dir = lease_dir("l");

	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(write_file(dir, "10.0.0.9", "garbage"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.3", "{\"container_id\":\"x\",\"created\":1}"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.4", valid_json("same", 200)), 0);
	CHECK_EQ(write_file(dir, "10.0.0.2", valid_json("same", 100)), 0);
	CHECK_EQ(write_file(dir, "10.0.0.6.bad", "from an earlier start"), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_CONTAINS(err, "and more");
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 1);
	CHECK_EQ(st.quarantined, 4);
	CHECK_EQ(st.quarantine_files, 4);
	CHECK_EQ(st.capacity, 253);
	CHECK_EQ(ipam_foreach_quarantined(ipam, collect_quarantine, &l), 0);
	CHECK_EQ(l.n, 4);
	/* in IP order, each with its file and what was wrong with it */
	CHECK_EQ(l.ip[0], ip_of("10.0.0.3"));
	CHECK_EQ(l.ip[1], ip_of("10.0.0.4"));
	CHECK_EQ(l.ip[2], ip_of("10.0.0.6"));
	CHECK_EQ(l.ip[3], ip_of("10.0.0.9"));
	CHECK_CONTAINS(l.reason[0], "missing");
	CHECK_STR(l.reason[1], "a second lease for the owner of 10.0.0.2");
	CHECK_STR(l.reason[2], "quarantined before this start");
	CHECK_CONTAINS(l.reason[3], "not JSON");
	CHECK_STR(l.file[0], path_in(dir, "10.0.0.3.bad"));
	CHECK_STR(l.file[1], path_in(dir, "10.0.0.4.bad"));
	CHECK_STR(l.file[2], path_in(dir, "10.0.0.6.bad"));
	CHECK_STR(l.file[3], path_in(dir, "10.0.0.9.bad"));
	for (int i = 0; i < 4; i++)
		CHECK(l.held[i]);
	/* fn's non-zero return ends the walk and is returned */
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	CHECK_EQ(ipam_foreach_quarantined(ipam, collect_quarantine, &l), 7);
	CHECK_EQ(l.n, 2);
	CHECK_EQ(ipam_foreach_quarantined(ipam, NULL, &l), -EINVAL);
	ipam_close(ipam);
}

TEST(ipam_refresh_returns_the_ip_of_a_deleted_bad_file)
{
	struct ipam *ipam = NULL;
	struct ipam_stats st;
	struct ipam_owner o;
	struct qlist l = { 0 };
	char err[512], id[16];
	const char *dir = lease_dir("l");
	in_addr_t ip;

	/* a /29: 5 addresses; one quarantined, four leased */
	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(write_file(dir, "10.0.0.5", "garbage"), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 29, &ipam, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(id, sizeof(id), "c%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
		CHECK(ip != ip_of("10.0.0.5"));
	}
	owner_set(&o, "late", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -ENOSPC);
	/* the counts add up to the refusal */
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 4);
	CHECK_EQ(st.quarantined, 1);
	CHECK_EQ(st.capacity, 5);
	CHECK_EQ(st.leases + st.quarantined, st.capacity);
	CHECK_EQ(ipam_used(ipam), 4);
	CHECK_EQ(ipam_quarantined(ipam), 1);

	/* nothing changed: nothing freed, still full */
	CHECK_EQ(ipam_refresh_quarantine(ipam, collect_freed, &l), 0);
	CHECK_EQ(l.n, 0);
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), -ENOSPC);

	/* the operator deletes the .bad file: the next refresh frees its IP */
	CHECK_EQ(unlink(path_in(dir, "10.0.0.5.bad")), 0);
	CHECK_EQ(ipam_refresh_quarantine(ipam, collect_freed, &l), 1);
	CHECK_EQ(l.n, 1);
	CHECK_EQ(l.ip[0], ip_of("10.0.0.5"));
	CHECK(l.held[0]);
	CHECK_STR(l.file[0], path_in(dir, "10.0.0.5.bad"));
	CHECK_CONTAINS(l.reason[0], "not JSON");
	ipam_stats(ipam, &st);
	CHECK_EQ(st.quarantined, 0);
	CHECK_EQ(st.quarantine_files, 0);
	CHECK_EQ(ipam_refresh_quarantine(ipam, NULL, NULL), 0);
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	CHECK_EQ(ip, ip_of("10.0.0.5"));
	ipam_stats(ipam, &st);
	CHECK_EQ(st.leases, 5);
	CHECK_EQ(st.leases + st.quarantined, st.capacity);
	ipam_close(ipam);
}

TEST(ipam_refresh_keeps_what_is_still_there)
{
	struct ipam *ipam = NULL;
	struct ipam_stats st;
	char err[512];
	const char *dir = lease_dir("l");

	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(write_file(dir, "10.0.0.2", "garbage"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.3.bad", "old"), 0);
	CHECK_EQ(write_file(dir, "10.0.0.4.bad", "old"), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	/* rewritten, or swapped for another kind of file: still there */
	CHECK_EQ(write_file(dir, "10.0.0.2.bad", "edited by the operator"), 0);
	CHECK_EQ(unlink(path_in(dir, "10.0.0.3.bad")), 0);
	CHECK_EQ(mkdir(path_in(dir, "10.0.0.3.bad"), 0700), 0);
	CHECK_EQ(unlink(path_in(dir, "10.0.0.4.bad")), 0);
	CHECK_EQ(ipam_refresh_quarantine(ipam, NULL, NULL), 1);
	ipam_stats(ipam, &st);
	CHECK_EQ(st.quarantined, 2);
	CHECK_EQ(st.quarantine_files, 2);
	/* a file put back later is seen by the next open only */
	CHECK_EQ(write_file(dir, "10.0.0.4.bad", "again"), 0);
	CHECK_EQ(ipam_refresh_quarantine(ipam, NULL, NULL), 0);
	CHECK_EQ(ipam_quarantined(ipam), 2);
	ipam_close(ipam);
	ipam = NULL;
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_EQ(ipam_quarantined(ipam), 3);
	ipam_close(ipam);
}

TEST(ipam_open_quarantines_the_younger_duplicate_owner)
{
	struct ipam *ipam = NULL;
	struct ipam_lease l;
	char err[512];
	const char *dir = lease_dir("l");

	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(write_file(dir, "10.0.0.3", valid_json("same", 200)), 0);
	CHECK_EQ(write_file(dir, "10.0.0.9", valid_json("same", 100)), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	CHECK_CONTAINS(err, "10.0.0.3");
	CHECK_CONTAINS(err, "second lease for the owner of 10.0.0.9");
	CHECK_EQ(ipam_find(ipam, "same", "eth0", &l), 0);
	CHECK_EQ(l.ip, ip_of("10.0.0.9"));
	CHECK_EQ(l.created, 100);
	CHECK_EQ(ipam_quarantined(ipam), 1);
	CHECK(file_exists(dir, "10.0.0.3.bad"));
	ipam_close(ipam);
}

TEST(ipam_open_removes_stale_temporary_files)
{
	struct ipam *ipam = NULL;
	struct ipam_stats st;
	struct ipam_owner o;
	char err[512];
	const char *dir = lease_dir("l");
	in_addr_t ip;
	int held;

	CHECK_EQ(mkdir(dir, 0700), 0);
	CHECK_EQ(write_file(dir, ".tmp.99999.1", valid_json("c", 1)), 0);
	CHECK_EQ(write_file(dir, ".tmp.99999.2", "half"), 0);
	/* a writer that is alive holds its file's lock: that one stays */
	held = open(path_in(dir, ".tmp.99999.3"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(held >= 0);
	CHECK_EQ(flock(held, LOCK_EX), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 24, &ipam, err, sizeof(err)), 0);
	ipam_stats(ipam, &st);
	CHECK_EQ(st.stale_tmp_removed, 2);
	CHECK(!file_exists(dir, ".tmp.99999.1"));
	CHECK(!file_exists(dir, ".tmp.99999.2"));
	CHECK(file_exists(dir, ".tmp.99999.3"));
	CHECK_EQ(ipam_used(ipam), 0);
	owner_set(&o, "c", "eth0");
	CHECK_EQ(ipam_alloc(ipam, &o, &ip), 0);
	close(held);
	ipam_close(ipam);
}

TEST(ipam_alloc_skips_a_lease_another_handle_made)
{
	struct ipam *a = NULL, *b = NULL;
	struct ipam_owner o;
	char err[512];
	const char *dir = lease_dir("l");
	in_addr_t ip1, ip2;

	CHECK_EQ(open_dir(dir, "10.0.0.0", 29, &a, err, sizeof(err)), 0);
	CHECK_EQ(open_dir(dir, "10.0.0.0", 29, &b, err, sizeof(err)), 0);
	owner_set(&o, "from-a", "eth0");
	CHECK_EQ(ipam_alloc(a, &o, &ip1), 0);
	owner_set(&o, "from-b", "eth0");
	CHECK_EQ(ipam_alloc(b, &o, &ip2), 0);	/* link(2) said EEXIST for ip1 */
	CHECK(ip1 != ip2);
	/* a knows only its own; it still cannot take b's */
	for (int i = 0; i < 3; i++) {
		char id[16];

		snprintf(id, sizeof(id), "a%d", i);
		owner_set(&o, id, "eth0");
		CHECK_EQ(ipam_alloc(a, &o, &ip1), 0);
		CHECK(ip1 != ip2);
	}
	owner_set(&o, "a-last", "eth0");
	CHECK_EQ(ipam_alloc(a, &o, &ip1), -ENOSPC);
	CHECK_EQ(count_files(dir, FILES_LEASES), 5);
	CHECK_EQ(count_files(dir, FILES_TMP), 0);
	ipam_close(a);
	ipam_close(b);
}

/* ---- two processes ---------------------------------------------------------- */

/* Each process opens its own handle, waits for the other, then allocates
 * until -ENOSPC; the child reports its IPs through a pipe. */
static int race_allocate(const char *dir, const char *tag, in_addr_t *got, int max,
			 int go_fd, int *n)
{
	struct ipam *ipam = NULL;
	struct ipam_owner o;
	char err[512], id[32], c;
	int e;

	*n = 0;
	e = open_dir(dir, "10.20.0.0", 26, &ipam, err, sizeof(err));
	if (e)
		return e;
	if (read(go_fd, &c, 1) != 1) {
		ipam_close(ipam);
		return -EIO;
	}
	for (int i = 0; i < max; i++) {
		snprintf(id, sizeof(id), "%s-%d", tag, i);
		owner_set(&o, id, "eth0");
		e = ipam_alloc(ipam, &o, &got[*n]);
		if (e == -ENOSPC)
			break;
		if (e)
			goto out;
		(*n)++;
	}
	e = 0;
out:
	ipam_close(ipam);
	return e;
}

TEST(ipam_two_processes_never_share_an_ip)
{
	for (int round = 0; round < 5; round++) {
		char sub[16];
		const char *dir;
		in_addr_t mine[64], theirs[64];
		int go[2], report[2], nmine = 0, ntheirs = 0, status;
		pid_t pid;

		snprintf(sub, sizeof(sub), "race%d", round);
		dir = lease_dir(sub);
		CHECK_EQ(mkdir(dir, 0700), 0);
		CHECK_EQ(pipe(go), 0);
		CHECK_EQ(pipe(report), 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			int e, n;

			close(report[0]);
			e = race_allocate(dir, "child", theirs, 64, go[0], &n);
			if (write(report[1], &n, sizeof(n)) != sizeof(n) ||
			    write(report[1], theirs, sizeof(*theirs) * (size_t)n) !=
			    (ssize_t)(sizeof(*theirs) * (size_t)n))
				_exit(3);
			_exit(e ? 2 : 0);
		}
		close(report[1]);
		/* two bytes: one for the child, one for us */
		CHECK_EQ(write(go[1], "xx", 2), 2);
		CHECK_EQ(race_allocate(dir, "parent", mine, 64, go[0], &nmine), 0);
		CHECK_EQ(read(report[0], &ntheirs, sizeof(ntheirs)), sizeof(ntheirs));
		CHECK(ntheirs >= 0 && ntheirs <= 64);
		CHECK_EQ(read(report[0], theirs, sizeof(*theirs) * (size_t)ntheirs),
			 (ssize_t)(sizeof(*theirs) * (size_t)ntheirs));
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(go[0]);
		close(go[1]);
		close(report[0]);
		/* a /26 has 61 pod IPs: together they took them all, once */
		CHECK_EQ(nmine + ntheirs, 61);
		for (int i = 0; i < nmine; i++)
			for (int j = 0; j < ntheirs; j++)
				if (mine[i] == theirs[j]) {
					test_fail(__FILE__, __LINE__, "round %d: %s leased twice",
						  round, ip_str(mine[i]));
					return;
				}
		CHECK_EQ(count_files(dir, FILES_LEASES), 61);
		CHECK_EQ(count_files(dir, FILES_TMP), 0);
	}
}

/* ---- randomized, against a bitmap model --------------------------------------- */

#define MODEL_OWNERS 48

/* The same rule, naively: offsets 2 .. size-2 in the subnet, the search
 * starting after the last one handed out and wrapping. */
struct model {
	int size;			/* 2^(32 - prefixlen) */
	int owner_at[256];		/* -1: free */
	int ip_of[MODEL_OWNERS];	/* offset, -1: none */
	int last;			/* offset, 0: none */
};

static int model_alloc(struct model *m, int owner)
{
	int off = m->last;

	if (m->ip_of[owner] >= 0)
		return -EEXIST;
	for (int i = 0; i < m->size - 3; i++) {
		off = off < 2 || off >= m->size - 2 ? 2 : off + 1;
		if (m->owner_at[off] < 0) {
			m->owner_at[off] = owner;
			m->ip_of[owner] = off;
			m->last = off;
			return 0;
		}
	}
	return -ENOSPC;
}

static int model_release(struct model *m, int owner)
{
	if (m->ip_of[owner] < 0)
		return -ENOENT;
	m->owner_at[m->ip_of[owner]] = -1;
	m->ip_of[owner] = -1;
	return 0;
}

struct compare {
	const struct model *m;
	uint32_t base;
	int seen;
	int bad;
};

static int compare_lease(const struct ipam_lease *l, void *arg)
{
	struct compare *c = arg;
	int off = (int)(ntohl(l->ip) - c->base), owner;

	c->seen++;
	if (off < 0 || off >= c->m->size || sscanf(l->owner.container_id, "o%d", &owner) != 1 ||
	    c->m->owner_at[off] != owner)
		c->bad++;
	return 0;
}

TEST(ipam_random_runs_match_the_model)
{
	uint64_t seed = test_seed();
	const int prefixes[] = { 30, 29, 28, 27, 26, 24 };

	for (int run = 0; run < 10; run++) {
		struct ipam *ipam = NULL;
		struct model m;
		char err[512], sub[16], id[16];
		const char *dir;
		int prefixlen = prefixes[rng_next(&seed) % 6];
		uint32_t base = ntohl(ip_of("172.16.0.0")) + ((uint32_t)run << 8);
		in_addr_t subnet = htonl(base);

		snprintf(sub, sizeof(sub), "run%d", run);
		dir = lease_dir(sub);
		m.size = 1 << (32 - prefixlen);
		m.last = 0;
		for (int i = 0; i < 256; i++)
			m.owner_at[i] = -1;
		for (int i = 0; i < MODEL_OWNERS; i++)
			m.ip_of[i] = -1;
		CHECK_EQ(ipam_open(dir, subnet, prefixlen, &ipam, err, sizeof(err)), 0);
		CHECK_EQ(ipam_capacity(ipam), m.size - 3);

		for (int step = 0; step < 800; step++) {
			int owner = (int)(rng_next(&seed) % MODEL_OWNERS);
			int dice = (int)(rng_next(&seed) % 100), want, got;
			struct ipam_owner o;
			in_addr_t ip = 0;

			snprintf(id, sizeof(id), "o%d", owner);
			if (dice < 50) {
				owner_set(&o, id, "eth0");
				want = model_alloc(&m, owner);
				got = ipam_alloc(ipam, &o, &ip);
				CHECK_EQ(got, want);
				if (!got || got == -EEXIST)
					CHECK_EQ(ntohl(ip) - base, m.ip_of[owner]);
			} else if (dice < 85) {
				want = model_release(&m, owner);
				CHECK_EQ(ipam_release(ipam, id, "eth0"), want);
			} else if (dice < 98) {
				int off = 2 + (int)(rng_next(&seed) % (uint64_t)(m.size - 3));
				int at = m.owner_at[off];

				want = at < 0 ? -ENOENT : model_release(&m, at);
				CHECK_EQ(ipam_release_ip(ipam, htonl(base + (uint32_t)off)), want);
			} else {
				ipam_close(ipam);
				ipam = NULL;
				CHECK_EQ(ipam_open(dir, subnet, prefixlen, &ipam, err, sizeof(err)), 0);
			}
			if (step % 50 == 0 || test_failed()) {
				struct compare c = { .m = &m, .base = base };
				int leased = 0;

				for (int i = 0; i < MODEL_OWNERS; i++)
					leased += m.ip_of[i] >= 0;
				CHECK_EQ(ipam_foreach(ipam, compare_lease, &c), 0);
				CHECK_EQ(c.bad, 0);
				CHECK_EQ(c.seen, leased);
				CHECK_EQ(ipam_used(ipam), leased);
				CHECK_EQ(count_files(dir, FILES_LEASES), leased);
			}
			if (test_failed()) {
				ipam_close(ipam);
				return;
			}
		}
		CHECK_EQ(count_files(dir, FILES_TMP), 0);
		ipam_close(ipam);
	}
}
