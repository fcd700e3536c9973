/*
 * ipam.c — node-local pod IP leases, one file per leased IP in a directory
 * (the layout of the reference host-local plugin, with JSON owners).
 *
 * Memory: every lease is an entry in two chained hash tables, by IP and by
 * (container_id, ifname).  Every quarantined file is an entry on the
 * quarantine list, with its reason; one that holds a pool IP is in the IP
 * table too (one named by the network, gateway or broadcast address is on
 * the list only: it holds nothing).
 * Addresses are host byte order inside this file; the API's in_addr_t is
 * network order and is converted at the edges.
 *
 * Allocation (ipam_alloc), under the handle's mutex:
 *
 *   owner already leased? ---------------------------> -EEXIST, *ip set
 *   leases + quarantined == capacity? ---------------> -ENOSPC
 *   grow the tables, allocate the entry, render the JSON (so nothing can
 *    |  fail after the commit)
 *   write .tmp.<pid>.<n> (O_CREAT|O_EXCL, flock held, so ipam_open's
 *    |  cleaner leaves it alone)
 *   for each candidate after last_reserved, wrapping round the subnet:
 *       in the IP table? -------------------------> next candidate
 *       link(2) tmp -> "<ip>":
 *           EEXIST (another handle's lease) -------> next candidate
 *           ENOENT (a cleaner took the tmp file) --> write a new one, again
 *           other error -------------------------> -errno, nothing leased
 *           0 --------------------------------------> committed
 *   no candidate left -------------------------------> -ENOSPC
 *   unlink tmp; insert the entry; last_reserved = ip; write the hint
 *
 * An IP's life, with the function for each edge:
 *
 *              ipam_alloc (link(2) succeeded)
 *      FREE ---------------------------------> LEASED <--+ ipam_update
 *       ^  <---------------------------------   |  |      | (tmp, rename(2))
 *       |   ipam_release / ipam_release_ip     |  +------+
 *       |   (unlink(2) succeeded or ENOENT)    |
 *       |                                      | ipam_open: the file is
 *       |                                      v unusable (rename to .bad)
 *       +--------------------------------- QUARANTINED
 *         ipam_refresh_quarantine: the operator deleted <ip>.bad
 *         (fstatat(2) says ENOENT); or ipam_open finds no <ip>.bad
 *
 * Invariants (while the mutex is free):
 *  1. The IP table holds exactly the IPs with a file "<ip>" (leases) or
 *     "<ip>.bad" (quarantined) in the directory that this handle made or
 *     found at open, less the .bad files ipam_refresh_quarantine saw gone;
 *     the owner table holds exactly the leases; the quarantine list holds
 *     the quarantined IPs and the .bad files named by a reserved address.
 *     An entry goes in only after its file operation succeeded and comes
 *     out only after the file is gone, so a failed call leaves all as they
 *     were.
 *  2. nleases + nquarantined <= capacity, and every entry in the IP table
 *     lies in [first, last]: inside the subnet, none of network, gateway,
 *     broadcast.  nquarantined counts the held entries of the quarantine
 *     list, nquarantine_files all of them.
 *  3. At most one lease per (container_id, ifname); ipam_open quarantines
 *     the younger of two files that break this.
 *  4. A lease file is complete when its name appears: it is written under
 *     a temporary name and link(2)ed (alloc) or rename(2)d (update).
 *  5. The number of buckets is a power of two and at least the number of
 *     entries; tables grow before a commit, never after.
 *
 * Temporary files: ".tmp.<pid>.<n>", created O_EXCL and flock(LOCK_EX)ed
 * for as long as they exist in the writer's hands.  ipam_open removes those
 * whose lock it can take (their writer died); a file whose lock is held
 * belongs to a live handle, possibly in another process.  A crash between
 * link(2) and the unlink of the temporary name leaves a second name for a
 * complete lease, which that cleaner removes without harm.
 *
 * last_reserved_ip: the dotted IP of the newest allocation, replaced with
 * tmp + rename(2).  A hint: a missing, unreadable or out-of-range one
 * starts the search at the first host; a failed write leaves the committed
 * lease alone (counted in cleanup_errors; memory still has the right value).
 *
 * Durability: no fsync, see ipam.h.
 */
#include "agent/ipam.h"
#include "lib/cidr.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HINT_NAME		"last_reserved_ip"
#define TMP_PREFIX		".tmp."
#define BAD_SUFFIX		".bad"
#define LEASE_FILE_MAX		(64 * 1024)	/* JSON of the largest owner, escaped */
#define HINT_FILE_MAX		64
#define TABLE_MIN_BUCKETS	64
#define TMP_NAME_TRIES		16
#define LINK_TRIES		4
#define WHY_MAX			IPAM_REASON_MAX
#define FOUND_BAD		"quarantined before this start"
#define NO_REASON		"quarantined while the agent ran (its log says why)"

struct entry {
	uint32_t ip;			/* host order */
	bool quarantined;
	bool held;			/* quarantined, a pool IP: in the IP table (insert) */
	struct ipam_lease lease;	/* unused when quarantined */
	char why[WHY_MAX];		/* quarantined: the reason */
	struct entry *next_by_ip;
	struct entry *next_by_owner;
	/* the quarantine list; pprev points at what points to this entry,
	 * so remove_entry takes it off in O(1) */
	struct entry *next_quarantined, **pprev_quarantined;
};

struct ipam {
	pthread_mutex_t lock;
	int dirfd;
	char *dir;			/* for messages */
	uint32_t network, gateway;	/* host order */
	uint32_t first, last;		/* the allocatable range, host order */
	int prefixlen;
	size_t capacity;
	struct entry **by_ip, **by_owner;
	size_t nbuckets;
	struct entry *quarantine;	/* the quarantine list, newest first */
	size_t nleases, nquarantined, nquarantine_files;
	uint32_t last_reserved;		/* 0: none */
	struct ipam_stats stats;	/* leases/quarantined filled on read */
};

struct tmpfile {
	char name[64];			/* "" once gone or handed to a cleaner */
	int fd;
};

static unsigned tmp_counter;

static void __attribute__((format(printf, 3, 4)))
say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static void ip_name(uint32_t ip, char buf[IP4_STRLEN]) { ip4_format(ip, buf); }

/* ---- tables -------------------------------------------------------------- */

static size_t hash_ip(uint32_t ip, size_t nbuckets)
{
	return (size_t)(ip * 2654435761u) & (nbuckets - 1);
}

static size_t hash_owner(const char *container_id, const char *ifname, size_t nbuckets)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a over id NUL ifname */

	for (const char *p = container_id; ; p++) {
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
		if (!*p)
			break;
	}
	for (const char *p = ifname; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)(h ^ (h >> 32)) & (nbuckets - 1);
}

static struct entry *lookup_ip(const struct ipam *ipam, uint32_t ip)
{
	struct entry *e = ipam->by_ip[hash_ip(ip, ipam->nbuckets)];

	while (e && e->ip != ip)
		e = e->next_by_ip;
	return e;
}

static struct entry *lookup_owner(const struct ipam *ipam, const char *container_id,
				  const char *ifname)
{
	struct entry *e = ipam->by_owner[hash_owner(container_id, ifname, ipam->nbuckets)];

	for (; e; e = e->next_by_owner)
		if (!strcmp(e->lease.owner.container_id, container_id) &&
		    !strcmp(e->lease.owner.ifname, ifname))
			return e;
	return NULL;
}

static void link_owner(struct ipam *ipam, struct entry *e)
{
	size_t b = hash_owner(e->lease.owner.container_id, e->lease.owner.ifname, ipam->nbuckets);

	e->next_by_owner = ipam->by_owner[b];
	ipam->by_owner[b] = e;
}

static void unlink_owner(struct ipam *ipam, struct entry *e)
{
	struct entry **pp = &ipam->by_owner[hash_owner(e->lease.owner.container_id,
						       e->lease.owner.ifname, ipam->nbuckets)];

	while (*pp != e)
		pp = &(*pp)->next_by_owner;
	*pp = e->next_by_owner;
}

/* Room for n entries (invariant 5).  0 or -ENOMEM, tables unchanged then. */
static int table_reserve(struct ipam *ipam, size_t n)
{
	struct entry **by_ip = NULL, **by_owner = NULL;
	size_t nb = ipam->nbuckets;

	if (n <= nb)
		return 0;
	while (nb < n)
		nb *= 2;
	by_ip = calloc(nb, sizeof(*by_ip));
	by_owner = calloc(nb, sizeof(*by_owner));
	if (!by_ip || !by_owner) {
		free(by_ip);
		free(by_owner);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ipam->nbuckets; i++) {
		struct entry *e = ipam->by_ip[i], *next;

		for (; e; e = next) {
			size_t b = hash_ip(e->ip, nb);

			next = e->next_by_ip;
			e->next_by_ip = by_ip[b];
			by_ip[b] = e;
			if (!e->quarantined) {
				b = hash_owner(e->lease.owner.container_id, e->lease.owner.ifname, nb);
				e->next_by_owner = by_owner[b];
				by_owner[b] = e;
			}
		}
	}
	free(ipam->by_ip);
	free(ipam->by_owner);
	ipam->by_ip = by_ip;
	ipam->by_owner = by_owner;
	ipam->nbuckets = nb;
	return 0;
}

static void link_quarantined(struct ipam *ipam, struct entry *e)
{
	e->next_quarantined = ipam->quarantine;
	if (e->next_quarantined)
		e->next_quarantined->pprev_quarantined = &e->next_quarantined;
	ipam->quarantine = e;
	e->pprev_quarantined = &ipam->quarantine;
	ipam->nquarantine_files++;
}

static void unlink_quarantined(struct ipam *ipam, struct entry *e)
{
	*e->pprev_quarantined = e->next_quarantined;
	if (e->next_quarantined)
		e->next_quarantined->pprev_quarantined = e->pprev_quarantined;
	ipam->nquarantine_files--;
}

/* A lease, or a quarantined file (any caller's: held is worked out here,
 * and a file given no reason gets one).  The caller reserved room
 * (table_reserve). */
static void insert(struct ipam *ipam, struct entry *e)
{
	size_t b = hash_ip(e->ip, ipam->nbuckets);

	if (e->quarantined) {
		e->held = e->ip >= ipam->first && e->ip <= ipam->last;
		if (!e->why[0])
			snprintf(e->why, sizeof(e->why), NO_REASON);
		link_quarantined(ipam, e);
		if (!e->held)
			return;		/* a reserved address: nothing to hold */
		ipam->nquarantined++;
	} else {
		link_owner(ipam, e);
		ipam->nleases++;
	}
	e->next_by_ip = ipam->by_ip[b];
	ipam->by_ip[b] = e;
}

/* The reverse of insert: out of every table and list it is in. */
static void remove_entry(struct ipam *ipam, struct entry *e)
{
	struct entry **pp = &ipam->by_ip[hash_ip(e->ip, ipam->nbuckets)];

	if (e->quarantined) {
		unlink_quarantined(ipam, e);
		if (!e->held)
			return;
		ipam->nquarantined--;
	} else {
		unlink_owner(ipam, e);
		ipam->nleases--;
	}
	while (*pp != e)
		pp = &(*pp)->next_by_ip;
	*pp = e->next_by_ip;
}

/* ---- owners and their JSON ----------------------------------------------- */

static bool terminated(const char *s, size_t size) { return memchr(s, 0, size) != NULL; }

static int owner_check(const struct ipam_owner *o)
{
	if (!terminated(o->container_id, sizeof(o->container_id)) ||
	    !terminated(o->ifname, sizeof(o->ifname)) ||
	    !terminated(o->pod_namespace, sizeof(o->pod_namespace)) ||
	    !terminated(o->pod_name, sizeof(o->pod_name)) ||
	    !terminated(o->host_ifname, sizeof(o->host_ifname)) ||
	    !terminated(o->netns, sizeof(o->netns)))
		return -EINVAL;
	if (!o->container_id[0] || !o->ifname[0])
		return -EINVAL;
	return 0;
}

/* *out is malloc'ed, NUL-terminated, ends in a newline.  -EINVAL (a field is
 * not UTF-8) or -ENOMEM. */
static int owner_render(const struct ipam_owner *o, time_t created, char **out)
{
	json_t *j = NULL;
	char *text = NULL, *line = NULL;
	size_t len;
	int err = 0;

	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}",
		      "container_id", o->container_id, "ifname", o->ifname,
		      "pod_namespace", o->pod_namespace, "pod_name", o->pod_name,
		      "host_ifname", o->host_ifname, "netns", o->netns,
		      "created", (json_int_t)created);
	if (!j) {
		err = -EINVAL;
		goto out;
	}
	text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	len = strlen(text);
	line = malloc(len + 2);
	if (!line) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(line, text, len);
	line[len] = '\n';
	line[len + 1] = 0;
	*out = line;
	line = NULL;
out:
	free(line);
	free(text);
	json_decref(j);
	return err;
}

static int field(json_t *obj, const char *key, char *dst, size_t size, char *why)
{
	json_t *v = json_object_get(obj, key);
	const char *s;
	size_t len;

	if (!json_is_string(v)) {
		snprintf(why, WHY_MAX, "\"%s\" is missing or not a string", key);
		return -EINVAL;
	}
	s = json_string_value(v);
	len = json_string_length(v);
	if (len >= size || strlen(s) != len) {
		snprintf(why, WHY_MAX, "\"%s\" is longer than %zu bytes or holds a NUL", key,
			 size - 1);
		return -EINVAL;
	}
	memcpy(dst, s, len + 1);
	return 0;
}

/* Parse a lease file's text.  0, or -EINVAL with why filled. */
static int owner_parse(const char *buf, size_t len, struct ipam_lease *l, char *why)
{
	json_error_t jerr;
	json_t *j = NULL, *created;
	struct ipam_owner *o = &l->owner;
	int err = 0;

	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		snprintf(why, WHY_MAX, "not JSON (line %d: %.100s)", jerr.line, jerr.text);
		err = -EINVAL;
		goto out;
	}
	if (!json_is_object(j)) {
		snprintf(why, WHY_MAX, "not a JSON object");
		err = -EINVAL;
		goto out;
	}
	err = field(j, "container_id", o->container_id, sizeof(o->container_id), why);
	if (!err)
		err = field(j, "ifname", o->ifname, sizeof(o->ifname), why);
	if (!err)
		err = field(j, "pod_namespace", o->pod_namespace, sizeof(o->pod_namespace), why);
	if (!err)
		err = field(j, "pod_name", o->pod_name, sizeof(o->pod_name), why);
	if (!err)
		err = field(j, "host_ifname", o->host_ifname, sizeof(o->host_ifname), why);
	if (!err)
		err = field(j, "netns", o->netns, sizeof(o->netns), why);
	if (err)
		goto out;
	if (!o->container_id[0] || !o->ifname[0]) {
		snprintf(why, WHY_MAX, "empty container_id or ifname");
		err = -EINVAL;
		goto out;
	}
	created = json_object_get(j, "created");
	if (!json_is_integer(created) || json_integer_value(created) < 0) {
		snprintf(why, WHY_MAX, "\"created\" is missing or not a non-negative integer");
		err = -EINVAL;
		goto out;
	}
	l->created = (time_t)json_integer_value(created);
out:
	json_decref(j);
	return err;
}

/* ---- files ----------------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Remove a temporary file we still hold (if its name is still ours) and
 * close it.  A failure leaves a stale file for the next ipam_open. */
static void tmp_discard(struct ipam *ipam, struct tmpfile *t)
{
	if (t->fd < 0)
		return;
	if (t->name[0] && unlinkat(ipam->dirfd, t->name, 0) < 0 && errno != ENOENT)
		ipam->stats.cleanup_errors++;
	if (close(t->fd) < 0)
		ipam->stats.cleanup_errors++;
	t->fd = -1;
	t->name[0] = 0;
}

/* Create a fresh temporary file holding data, locked against the cleaner. */
static int tmp_write(struct ipam *ipam, const char *data, size_t len, struct tmpfile *t)
{
	int err;

	t->fd = -1;
	t->name[0] = 0;
	for (int tries = 0; ; tries++) {
		unsigned n = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);

		if (tries == TMP_NAME_TRIES)
			return -EEXIST;
		snprintf(t->name, sizeof(t->name), TMP_PREFIX "%ld.%u", (long)getpid(), n);
		t->fd = openat(ipam->dirfd, t->name,
			       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (t->fd < 0) {
			err = -errno;
			t->name[0] = 0;
			if (err == -EEXIST || err == -EINTR)
				continue;
			return err;
		}
		if (flock(t->fd, LOCK_EX | LOCK_NB) == 0)
			break;
		/* A cleaner opened it between our create and lock: it is
		 * stale to that cleaner, which removes it.  Let it. */
		err = -errno;
		t->name[0] = 0;
		close(t->fd);
		t->fd = -1;
		if (err != -EWOULDBLOCK && err != -EINTR)
			return err;
	}
	err = write_all(t->fd, data, len);
	if (err)
		tmp_discard(ipam, t);
	return err;
}

/* Best effort (see the file comment). */
static void hint_write(struct ipam *ipam, uint32_t ip)
{
	struct tmpfile t = { .fd = -1 };
	char text[IP4_STRLEN + 1];

	ip_name(ip, text);
	strcat(text, "\n");
	if (tmp_write(ipam, text, strlen(text), &t)) {
		ipam->stats.cleanup_errors++;
		return;
	}
	if (renameat(ipam->dirfd, t.name, ipam->dirfd, HINT_NAME) < 0)
		ipam->stats.cleanup_errors++;
	else
		t.name[0] = 0;
	tmp_discard(ipam, &t);
}

/* link(2) the temporary file t (holding json) to name: 0, -EEXIST, -errno. */
static int link_lease(struct ipam *ipam, struct tmpfile *t, const char *json, const char *name)
{
	int err;

	for (int tries = 1; ; tries++) {
		if (linkat(ipam->dirfd, t->name, ipam->dirfd, name, 0) == 0)
			return 0;
		err = -errno;
		if (err != -ENOENT || tries == LINK_TRIES)
			return err;
		/* The cleaner of a handle being opened took t before we
		 * locked it (see tmp_write): write it again. */
		t->name[0] = 0;
		tmp_discard(ipam, t);
		err = tmp_write(ipam, json, strlen(json), t);
		if (err)
			return err;
	}
}

static uint32_t next_candidate(const struct ipam *ipam, uint32_t ip)
{
	return ip < ipam->first || ip >= ipam->last ? ipam->first : ip + 1;
}

/* ---- the API --------------------------------------------------------------- */

int ipam_alloc(struct ipam *ipam, const struct ipam_owner *owner, in_addr_t *ip_out)
{
	struct tmpfile t = { .fd = -1 };
	struct entry *e = NULL, *held;
	char *json = NULL, name[IP4_STRLEN];
	uint32_t ip = 0;
	bool committed = false;
	int err;

	if (!ipam || !owner || !ip_out || owner_check(owner))
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	held = lookup_owner(ipam, owner->container_id, owner->ifname);
	if (held) {
		*ip_out = htonl(held->ip);
		err = -EEXIST;
		goto out;
	}
	if (ipam->nleases + ipam->nquarantined >= ipam->capacity) {
		err = -ENOSPC;
		goto out;
	}
	err = table_reserve(ipam, ipam->nleases + ipam->nquarantined + 1);
	if (err)
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	e->lease.owner = *owner;
	e->lease.created = time(NULL);
	err = owner_render(owner, e->lease.created, &json);
	if (err)
		goto out;
	err = tmp_write(ipam, json, strlen(json), &t);
	if (err)
		goto out;

	ip = ipam->last_reserved;
	for (size_t i = 0; i < ipam->capacity; i++) {
		ip = next_candidate(ipam, ip);
		if (lookup_ip(ipam, ip))
			continue;
		ip_name(ip, name);
		err = link_lease(ipam, &t, json, name);
		if (!err) {
			committed = true;
			break;
		}
		if (err != -EEXIST)	/* EEXIST: another handle's lease */
			goto out;
	}
	if (!committed) {
		err = -ENOSPC;
		goto out;
	}
	err = 0;
	e->ip = ip;
	e->lease.ip = htonl(ip);
	insert(ipam, e);
	e = NULL;
	ipam->last_reserved = ip;
	*ip_out = htonl(ip);
	tmp_discard(ipam, &t);
	hint_write(ipam, ip);
out:
	tmp_discard(ipam, &t);
	pthread_mutex_unlock(&ipam->lock);
	free(json);
	free(e);
	return err;
}

int ipam_update(struct ipam *ipam, in_addr_t ip_net, const struct ipam_owner *owner)
{
	struct tmpfile t = { .fd = -1 };
	struct entry *e, *other;
	char *json = NULL, name[IP4_STRLEN];
	int err;

	if (!ipam || !owner || owner_check(owner))
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip_net));
	if (!e || e->quarantined) {
		err = -ENOENT;
		goto out;
	}
	other = lookup_owner(ipam, owner->container_id, owner->ifname);
	if (other && other != e) {
		err = -EEXIST;
		goto out;
	}
	err = owner_render(owner, e->lease.created, &json);
	if (err)
		goto out;
	err = tmp_write(ipam, json, strlen(json), &t);
	if (err)
		goto out;
	ip_name(e->ip, name);
	if (renameat(ipam->dirfd, t.name, ipam->dirfd, name) < 0) {
		err = -errno;
		goto out;
	}
	t.name[0] = 0;
	unlink_owner(ipam, e);
	e->lease.owner = *owner;
	link_owner(ipam, e);
out:
	tmp_discard(ipam, &t);
	pthread_mutex_unlock(&ipam->lock);
	free(json);
	return err;
}

/* Under the lock.  The entry goes only once its file is gone (invariant 1). */
static int release_entry(struct ipam *ipam, struct entry *e)
{
	char name[IP4_STRLEN];

	ip_name(e->ip, name);
	if (unlinkat(ipam->dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	remove_entry(ipam, e);
	free(e);
	return 0;
}

int ipam_release(struct ipam *ipam, const char *container_id, const char *ifname)
{
	struct entry *e;
	int err;

	if (!ipam || !container_id || !ifname)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_owner(ipam, container_id, ifname);
	err = e ? release_entry(ipam, e) : -ENOENT;
	pthread_mutex_unlock(&ipam->lock);
	return err;
}

int ipam_release_ip(struct ipam *ipam, in_addr_t ip)
{
	struct entry *e;
	int err;

	if (!ipam)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	err = e && !e->quarantined ? release_entry(ipam, e) : -ENOENT;
	pthread_mutex_unlock(&ipam->lock);
	return err;
}

int ipam_find(struct ipam *ipam, const char *container_id, const char *ifname,
	      struct ipam_lease *out)
{
	struct entry *e;

	if (!ipam || !container_id || !ifname || !out)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_owner(ipam, container_id, ifname);
	if (e)
		*out = e->lease;
	pthread_mutex_unlock(&ipam->lock);
	return e ? 0 : -ENOENT;
}

int ipam_find_ip(struct ipam *ipam, in_addr_t ip, struct ipam_lease *out)
{
	struct entry *e;
	int err = -ENOENT;

	if (!ipam || !out)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	if (e && !e->quarantined) {
		*out = e->lease;
		err = 0;
	}
	pthread_mutex_unlock(&ipam->lock);
	return err;
}

static int lease_cmp(const void *a, const void *b)
{
	uint32_t x = ntohl(((const struct ipam_lease *)a)->ip);
	uint32_t y = ntohl(((const struct ipam_lease *)b)->ip);

	return x < y ? -1 : x > y;
}

int ipam_foreach(struct ipam *ipam, int (*fn)(const struct ipam_lease *l, void *arg), void *arg)
{
	struct ipam_lease *snap = NULL;
	size_t n = 0;
	int err = 0;

	if (!ipam || !fn)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	if (ipam->nleases) {
		snap = malloc(ipam->nleases * sizeof(*snap));
		if (!snap) {
			pthread_mutex_unlock(&ipam->lock);
			return -ENOMEM;
		}
		for (size_t b = 0; b < ipam->nbuckets; b++)
			for (struct entry *e = ipam->by_ip[b]; e; e = e->next_by_ip)
				if (!e->quarantined)
					snap[n++] = e->lease;
	}
	pthread_mutex_unlock(&ipam->lock);
	if (n)
		qsort(snap, n, sizeof(*snap), lease_cmp);
	for (size_t i = 0; i < n && !err; i++)
		err = fn(&snap[i], arg);
	free(snap);
	return err;
}

size_t ipam_used(struct ipam *ipam)
{
	size_t n;

	pthread_mutex_lock(&ipam->lock);
	n = ipam->nleases;
	pthread_mutex_unlock(&ipam->lock);
	return n;
}

size_t ipam_quarantined(struct ipam *ipam)
{
	size_t n;

	pthread_mutex_lock(&ipam->lock);
	n = ipam->nquarantined;
	pthread_mutex_unlock(&ipam->lock);
	return n;
}

void ipam_stats(struct ipam *ipam, struct ipam_stats *out)
{
	pthread_mutex_lock(&ipam->lock);
	*out = ipam->stats;
	out->leases = ipam->nleases;
	out->quarantined = ipam->nquarantined;
	out->capacity = ipam->capacity;
	out->quarantine_files = ipam->nquarantine_files;
	pthread_mutex_unlock(&ipam->lock);
}

/* ---- quarantine -------------------------------------------------------------- */

/* What a caller sees of a quarantined file; built outside the lock (dir
 * never changes after open). */
static void quarantine_view(const struct ipam *ipam, uint32_t ip, bool held, const char *why,
			    struct ipam_quarantine *q)
{
	char name[IP4_STRLEN];

	ip_name(ip, name);
	q->ip = htonl(ip);
	q->held = held;
	snprintf(q->file, sizeof(q->file), "%s/%s" BAD_SUFFIX, ipam->dir, name);
	snprintf(q->reason, sizeof(q->reason), "%s", why);
}

struct qsnap {
	uint32_t ip;
	bool held;
	char why[WHY_MAX];
};

static int qsnap_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct qsnap *)a)->ip, y = ((const struct qsnap *)b)->ip;

	return x < y ? -1 : x > y;
}

int ipam_foreach_quarantined(struct ipam *ipam,
			     int (*fn)(const struct ipam_quarantine *q, void *arg), void *arg)
{
	struct ipam_quarantine *q = NULL;
	struct qsnap *snap = NULL;
	size_t n = 0;
	int err = 0;

	if (!ipam || !fn)
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	if (ipam->nquarantine_files) {
		snap = malloc(ipam->nquarantine_files * sizeof(*snap));
		if (!snap) {
			pthread_mutex_unlock(&ipam->lock);
			return -ENOMEM;
		}
		for (struct entry *e = ipam->quarantine; e; e = e->next_quarantined, n++) {
			snap[n].ip = e->ip;
			snap[n].held = e->held;
			memcpy(snap[n].why, e->why, sizeof(snap[n].why));
		}
	}
	pthread_mutex_unlock(&ipam->lock);
	if (n) {
		qsort(snap, n, sizeof(*snap), qsnap_cmp);
		q = malloc(sizeof(*q));		/* a path's worth: not on the stack */
		if (!q)
			err = -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++) {
		quarantine_view(ipam, snap[i].ip, snap[i].held, snap[i].why, q);
		err = fn(q, arg);
	}
	free(q);
	free(snap);
	return err;
}

/* Under the lock: is the .bad file of e still there?  Anything but a clear
 * ENOENT counts as there (the IP stays held, the safe side). */
static bool bad_file_exists(const struct ipam *ipam, const struct entry *e)
{
	char name[IP4_STRLEN + sizeof(BAD_SUFFIX)];
	struct stat st;

	ip_name(e->ip, name);
	strcat(name, BAD_SUFFIX);
	return fstatat(ipam->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

int ipam_refresh_quarantine(struct ipam *ipam,
			    void (*fn)(const struct ipam_quarantine *q, void *arg), void *arg)
{
	struct entry *gone = NULL, *e, *next;
	struct ipam_quarantine *q = NULL;
	int n = 0;

	if (!ipam)
		return -EINVAL;
	if (fn && !(q = malloc(sizeof(*q))))	/* a path's worth: not on the stack */
		return -ENOMEM;
	pthread_mutex_lock(&ipam->lock);
	for (e = ipam->quarantine; e; e = next) {
		next = e->next_quarantined;
		if (bad_file_exists(ipam, e))
			continue;
		remove_entry(ipam, e);
		e->next_quarantined = gone;	/* off the list: reused for ours */
		gone = e;
		n++;
	}
	pthread_mutex_unlock(&ipam->lock);
	while (gone) {
		e = gone;
		gone = e->next_quarantined;
		if (fn) {
			quarantine_view(ipam, e->ip, e->held, e->why, q);
			fn(q, arg);
		}
		free(e);
	}
	free(q);
	return n;
}

size_t ipam_capacity(const struct ipam *ipam) { return ipam->capacity; }

in_addr_t ipam_gateway(const struct ipam *ipam) { return htonl(ipam->gateway); }

/* ---- open ------------------------------------------------------------------ */

/* What ipam_open found, before it touches the directory. */
struct scan {
	struct entry **good;		/* parsed leases */
	size_t ngood, capgood;
	struct bad {
		uint32_t ip;
		bool held;		/* a pool IP (else a reserved address) */
		char why[WHY_MAX];
	} *bad,				/* lease files to quarantine now */
	  *found;			/* existing <ip>.bad files */
	size_t nbad, capbad, nfound, capfound;
};

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c = *cap ? *cap * 2 : 16;

	if (n < *cap)
		return 0;
	p = realloc(*arr, c * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

static int mkdir_parents(const char *dir, char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (!len || len >= sizeof(path)) {
		say(errbuf, errlen, "lease directory \"%.64s\": empty or too long", dir);
		return -EINVAL;
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; ; p++) {
		char c = *p;

		if (c != '/' && c)
			continue;
		*p = 0;
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			int err = -errno;

			say(errbuf, errlen, "lease directory %s: mkdir %s: %s", dir, path, strerror(-err));
			return err;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

/* A ".tmp.*" file: remove it unless a live writer holds its lock. */
static int clean_tmp(struct ipam *ipam, const char *name, char *errbuf, size_t errlen)
{
	int fd, err = 0;

	fd = openat(ipam->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;	/* its writer finished meanwhile */
		err = -errno;
		say(errbuf, errlen, "%s/%s: open: %s", ipam->dir, name, strerror(-err));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK) {
			err = -errno;
			say(errbuf, errlen, "%s/%s: flock: %s", ipam->dir, name, strerror(-err));
		}
		goto out;
	}
	if (unlinkat(ipam->dirfd, name, 0) < 0 && errno != ENOENT) {
		err = -errno;
		say(errbuf, errlen, "%s/%s: unlink: %s", ipam->dir, name, strerror(-err));
		goto out;
	}
	ipam->stats.stale_tmp_removed++;
out:
	close(fd);
	return err;
}

enum { NAME_POOL, NAME_RESERVED };

/* The IP a file is named after (the first len bytes of name), checked
 * against the subnet: NAME_POOL; NAME_RESERVED for the network, gateway or
 * broadcast address, with why saying which; -ENOENT when the name is no
 * IP; -EINVAL (errbuf) when the IP lies outside the subnet: the subnet
 * changed under the directory, which no quarantine can mend. */
static int name_ip(struct ipam *ipam, const char *name, size_t len, uint32_t *ip,
		   char why[WHY_MAX], char *errbuf, size_t errlen)
{
	char text[IP4_STRLEN], block[CIDR_STRLEN];
	struct cidr c = { .addr = ipam->network, .len = (uint8_t)ipam->prefixlen };
	const char *what;

	if (len >= sizeof(text))
		return -ENOENT;
	memcpy(text, name, len);
	text[len] = 0;
	if (ip4_parse(text, ip))
		return -ENOENT;		/* not a lease's name */
	cidr_format(&c, block);
	if (!cidr_contains_ip(&c, *ip)) {
		say(errbuf, errlen, "lease file %s/%s: %s is outside node subnet %s "
		    "(the subnet changed under this directory)", ipam->dir, name, text, block);
		return -EINVAL;
	}
	if (*ip == ipam->network)
		what = "the network address";
	else if (*ip == ipam->gateway)
		what = "the gateway";
	else if (*ip > ipam->last)
		what = "the broadcast address";
	else
		return NAME_POOL;
	snprintf(why, WHY_MAX, "%s is %s of node subnet %s, never a pod's: holds no address",
		 text, what, block);
	return NAME_RESERVED;
}

/* Read and parse one lease file.  0 with *out set; 1 when it is unusable
 * (why filled); 2 when it vanished since readdir (another handle released
 * it); -errno when the directory itself fails us. */
static int read_lease(struct ipam *ipam, const char *name, uint32_t ip, struct entry **out,
		      char *why, char *errbuf, size_t errlen)
{
	struct entry *e = NULL;
	char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int fd, err = 0;

	fd = openat(ipam->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT) {
			err = 2;
		} else if (err == -ELOOP || err == -EACCES || err == -ENXIO) {
			snprintf(why, WHY_MAX, "cannot open: %s", strerror(-err));
			err = 1;
		} else {
			say(errbuf, errlen, "lease file %s/%s: open: %s", ipam->dir, name,
			    strerror(-err));
		}
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		say(errbuf, errlen, "lease file %s/%s: fstat: %s", ipam->dir, name, strerror(-err));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > LEASE_FILE_MAX) {
		snprintf(why, WHY_MAX, "not a regular file of at most %d bytes", LEASE_FILE_MAX);
		err = 1;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	e = calloc(1, sizeof(*e));
	if (!buf || !e) {
		err = -ENOMEM;
		goto out;
	}
	while (len <= (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, WHY_MAX, "read: %s", strerror(errno));
			err = 1;
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	if (len > (size_t)st.st_size) {
		snprintf(why, WHY_MAX, "grew while read");
		err = 1;
		goto out;
	}
	if (owner_parse(buf, len, &e->lease, why)) {
		err = 1;
		goto out;
	}
	e->ip = ip;
	e->lease.ip = htonl(ip);
	*out = e;
	e = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(e);
	return err;
}

static void read_hint(struct ipam *ipam)
{
	char buf[HINT_FILE_MAX];
	ssize_t n;
	uint32_t ip;
	int fd;

	fd = openat(ipam->dirfd, HINT_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	buf[strcspn(buf, " \t\r\n")] = 0;
	if (!ip4_parse(buf, &ip) && ip >= ipam->first && ip <= ipam->last)
		ipam->last_reserved = ip;
}

/* An existing .bad file named by the first len bytes of name: found. */
static int found_bad(struct ipam *ipam, struct scan *s, const char *name, size_t len,
		     char *errbuf, size_t errlen)
{
	char why[WHY_MAX];
	struct bad *f;
	uint32_t ip;
	int kind, err;

	kind = name_ip(ipam, name, len, &ip, why, errbuf, errlen);
	if (kind == -ENOENT)
		return 0;
	if (kind < 0)
		return kind;
	err = grow((void **)&s->found, &s->capfound, s->nfound, sizeof(*s->found));
	if (err)
		return err;
	f = &s->found[s->nfound++];
	f->ip = ip;
	f->held = kind == NAME_POOL;
	if (f->held)
		snprintf(f->why, sizeof(f->why), FOUND_BAD);
	else
		snprintf(f->why, sizeof(f->why), FOUND_BAD "; %.120s", why);
	return 0;
}

static int scan_dir(struct ipam *ipam, struct scan *s, char *errbuf, size_t errlen)
{
	DIR *d = NULL;
	struct dirent *de;
	struct bad *b;
	int fd, kind, err = 0;

	fd = dup(ipam->dirfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		say(errbuf, errlen, "lease directory %s: %s", ipam->dir, strerror(-err));
		return err;
	}
	rewinddir(d);			/* the dup shares dirfd's offset */
	for (errno = 0; (de = readdir(d)); errno = 0) {
		const char *name = de->d_name;
		size_t len = strlen(name);
		uint32_t ip;

		if (!strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			err = clean_tmp(ipam, name, errbuf, errlen);
			if (err)
				goto out;
			continue;
		}
		if (len > strlen(BAD_SUFFIX) && !strcmp(name + len - strlen(BAD_SUFFIX), BAD_SUFFIX)) {
			err = found_bad(ipam, s, name, len - strlen(BAD_SUFFIX), errbuf, errlen);
			if (err)
				goto out;
			continue;
		}
		if ((err = grow((void **)&s->good, &s->capgood, s->ngood, sizeof(*s->good))) ||
		    (err = grow((void **)&s->bad, &s->capbad, s->nbad, sizeof(*s->bad))))
			goto out;
		b = &s->bad[s->nbad];
		kind = name_ip(ipam, name, len, &ip, b->why, errbuf, errlen);
		if (kind == -ENOENT)
			continue;	/* ".", "..", the hint, foreign files */
		if (kind < 0) {
			err = kind;
			goto out;
		}
		b->ip = ip;
		b->held = kind == NAME_POOL;
		if (kind == NAME_RESERVED) {	/* stray: set aside unread */
			s->nbad++;
			continue;
		}
		err = read_lease(ipam, name, ip, &s->good[s->ngood], b->why, errbuf, errlen);
		if (err < 0)
			goto out;
		if (err == 0)
			s->ngood++;
		else if (err == 1)
			s->nbad++;
		err = 0;
	}
	if (errno) {
		err = -errno;
		say(errbuf, errlen, "lease directory %s: readdir: %s", ipam->dir, strerror(-err));
	}
out:
	closedir(d);
	if (err == -ENOMEM)
		say(errbuf, errlen, "lease directory %s: out of memory", ipam->dir);
	return err;
}

/* Older first, so the younger of two leases for one owner is the duplicate. */
static int entry_age_cmp(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;

	if (x->lease.created != y->lease.created)
		return x->lease.created < y->lease.created ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* Put a quarantined file on the list (and a held IP in the IP table),
 * once: a second record of the same file (found as .bad after this open
 * renamed it) keeps the first, whose reason is this open's.  An IP leased
 * by a good file keeps its lease. */
static int quarantine_add(struct ipam *ipam, const struct bad *b)
{
	struct entry *e;

	if (b->held && lookup_ip(ipam, b->ip))
		return 0;
	for (e = ipam->quarantine; !b->held && e; e = e->next_quarantined)
		if (e->ip == b->ip)	/* a walk for each of at most 6 */
			return 0;
	if (b->held && table_reserve(ipam, ipam->nleases + ipam->nquarantined + 1))
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ip = b->ip;
	e->quarantined = true;
	snprintf(e->why, sizeof(e->why), "%s", b->why);
	insert(ipam, e);		/* held: the same as b->held */
	return 0;
}

/* Index what scan_dir found; rename the unusable files to <ip>.bad. */
static int load(struct ipam *ipam, struct scan *s, char *errbuf, size_t errlen)
{
	char name[IP4_STRLEN], bad[IP4_STRLEN + sizeof(BAD_SUFFIX)];
	int err = 0;

	if (s->ngood)
		qsort(s->good, s->ngood, sizeof(*s->good), entry_age_cmp);
	for (size_t i = 0; i < s->ngood; i++) {
		struct entry *e = s->good[i], *first;

		first = lookup_owner(ipam, e->lease.owner.container_id, e->lease.owner.ifname);
		if (!first) {
			err = table_reserve(ipam, ipam->nleases + ipam->nquarantined + 1);
			if (err)
				goto out;
			insert(ipam, e);
			s->good[i] = NULL;
			continue;
		}
		err = grow((void **)&s->bad, &s->capbad, s->nbad, sizeof(*s->bad));
		if (err)
			goto out;
		ip_name(first->ip, name);
		s->bad[s->nbad].ip = e->ip;
		s->bad[s->nbad].held = true;
		snprintf(s->bad[s->nbad].why, WHY_MAX, "a second lease for the owner of %s", name);
		s->nbad++;
	}
	for (size_t i = 0; i < s->nbad; i++) {
		ip_name(s->bad[i].ip, name);
		snprintf(bad, sizeof(bad), "%s" BAD_SUFFIX, name);
		if (renameat(ipam->dirfd, name, ipam->dirfd, bad) < 0) {
			err = -errno;
			say(errbuf, errlen, "lease file %s/%s (%s): rename to %s: %s", ipam->dir,
			    name, s->bad[i].why, bad, strerror(-err));
			goto out;
		}
		err = quarantine_add(ipam, &s->bad[i]);
		if (err)
			goto out;
	}
	for (size_t i = 0; i < s->nfound; i++) {
		err = quarantine_add(ipam, &s->found[i]);
		if (err)
			goto out;
	}
	if (s->nbad) {
		ip_name(s->bad[0].ip, name);
		say(errbuf, errlen, "lease file %s/%s: %s; moved to %s" BAD_SUFFIX "%s%s", ipam->dir,
		    name, s->bad[0].why, name,
		    s->bad[0].held ? ", the IP is held until that file is removed" : "",
		    s->nbad > 1 ? " (and more, see *" BAD_SUFFIX ")" : "");
	}
out:
	if (err == -ENOMEM)
		say(errbuf, errlen, "lease directory %s: out of memory", ipam->dir);
	return err;
}

int ipam_open(const char *dir, in_addr_t subnet, int prefixlen, struct ipam **out,
	      char *errbuf, size_t errlen)
{
	struct ipam *ipam = NULL;
	struct scan s = { 0 };
	uint32_t network = ntohl(subnet);
	int err = 0;

	say(errbuf, errlen, "%s", "");
	if (!dir || !out) {
		say(errbuf, errlen, "ipam_open: no directory or result pointer");
		return -EINVAL;
	}
	*out = NULL;
	if (prefixlen < 8 || prefixlen > 30) {
		say(errbuf, errlen, "node subnet /%d: the prefix must be 8..30 (a /31 or /32 "
		    "has no room for pods next to the gateway)", prefixlen);
		return -EINVAL;
	}
	if (network & ~cidr_mask((uint8_t)prefixlen)) {
		char text[IP4_STRLEN];

		ip4_format(network, text);
		say(errbuf, errlen, "node subnet %s/%d has host bits set", text, prefixlen);
		return -EINVAL;
	}
	ipam = calloc(1, sizeof(*ipam));
	if (!ipam) {
		say(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	ipam->dirfd = -1;
	pthread_mutex_init(&ipam->lock, NULL);
	ipam->prefixlen = prefixlen;
	ipam->network = network;
	ipam->gateway = network + 1;
	ipam->first = network + 2;
	ipam->last = network + (uint32_t)((1ull << (32 - prefixlen)) - 2);
	ipam->capacity = (size_t)(ipam->last - ipam->first + 1);
	ipam->nbuckets = TABLE_MIN_BUCKETS;
	ipam->dir = strdup(dir);
	ipam->by_ip = calloc(ipam->nbuckets, sizeof(*ipam->by_ip));
	ipam->by_owner = calloc(ipam->nbuckets, sizeof(*ipam->by_owner));
	if (!ipam->dir || !ipam->by_ip || !ipam->by_owner) {
		say(errbuf, errlen, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	err = mkdir_parents(dir, errbuf, errlen);
	if (err)
		goto out;
	ipam->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ipam->dirfd < 0) {
		err = -errno;
		say(errbuf, errlen, "lease directory %s: %s", dir, strerror(-err));
		goto out;
	}
	err = scan_dir(ipam, &s, errbuf, errlen);
	if (err)
		goto out;
	err = load(ipam, &s, errbuf, errlen);
	if (err)
		goto out;
	read_hint(ipam);
	*out = ipam;
	ipam = NULL;
out:
	for (size_t i = 0; i < s.ngood; i++)
		free(s.good[i]);
	free(s.good);
	free(s.bad);
	free(s.found);
	ipam_close(ipam);
	return err;
}

void ipam_close(struct ipam *ipam)
{
	struct entry *e, *next;

	if (!ipam)
		return;
	/* leases from the IP table, quarantined entries (held or not) from
	 * their list */
	for (size_t b = 0; ipam->by_ip && b < ipam->nbuckets; b++) {
		for (e = ipam->by_ip[b]; e; e = next) {
			next = e->next_by_ip;
			if (!e->quarantined)
				free(e);
		}
	}
	for (e = ipam->quarantine; e; e = next) {
		next = e->next_quarantined;
		free(e);
	}
	free(ipam->by_ip);
	free(ipam->by_owner);
	if (ipam->dirfd >= 0)
		close(ipam->dirfd);
	free(ipam->dir);
	pthread_mutex_destroy(&ipam->lock);
	free(ipam);
}

/* ---- quarantine settled by the node's truth -------------------------------- */

bool ipam_is_quarantined(struct ipam *ipam, in_addr_t ip)
{
	struct entry *e;
	bool q;

	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	q = e && e->quarantined;
	pthread_mutex_unlock(&ipam->lock);
	return q;
}

int ipam_quarantined_lease(struct ipam *ipam, in_addr_t ip, struct ipam_lease *out)
{
	char name[IP4_STRLEN + sizeof(BAD_SUFFIX)], why[WHY_MAX], err_text[WHY_MAX];
	struct entry *e, *parsed = NULL;
	int err;

	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	if (!e || !e->quarantined) {
		err = -ENOENT;
		goto out;
	}
	ip_name(e->ip, name);
	strcat(name, BAD_SUFFIX);
	err = read_lease(ipam, name, e->ip, &parsed, why, err_text, sizeof(err_text));
	if (err == 0)
		*out = parsed->lease;
	else
		err = err == 2 ? -ENOENT : err == 1 ? -EINVAL : err;
out:
	pthread_mutex_unlock(&ipam->lock);
	free(parsed);
	return err;
}

int ipam_quarantine(struct ipam *ipam, in_addr_t ip)
{
	char name[IP4_STRLEN], bad[IP4_STRLEN + sizeof(BAD_SUFFIX)];
	struct entry *e;
	int err = 0;

	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	if (!e || e->quarantined) {
		err = -ENOENT;
		goto out;
	}
	ip_name(e->ip, name);
	snprintf(bad, sizeof(bad), "%s" BAD_SUFFIX, name);
	if (renameat(ipam->dirfd, name, ipam->dirfd, bad) < 0) {
		err = -errno;
		goto out;
	}
	/* the entry stays in the IP table, out of the owner table */
	remove_entry(ipam, e);
	e->quarantined = true;
	insert(ipam, e);
out:
	pthread_mutex_unlock(&ipam->lock);
	return err;
}

int ipam_reclaim(struct ipam *ipam, in_addr_t ip, const struct ipam_owner *owner, time_t created)
{
	char name[IP4_STRLEN], bad[IP4_STRLEN + sizeof(BAD_SUFFIX)], *json = NULL;
	struct tmpfile t = { .fd = -1 };
	struct entry *e;
	int err;

	if (!ipam || !owner || owner_check(owner))
		return -EINVAL;
	pthread_mutex_lock(&ipam->lock);
	e = lookup_ip(ipam, ntohl(ip));
	if (!e || !e->quarantined) {
		err = -ENOENT;
		goto out;
	}
	if (lookup_owner(ipam, owner->container_id, owner->ifname)) {
		err = -EEXIST;
		goto out;
	}
	err = owner_render(owner, created, &json);
	if (!err)
		err = tmp_write(ipam, json, strlen(json), &t);
	if (err)
		goto out;
	ip_name(e->ip, name);
	snprintf(bad, sizeof(bad), "%s" BAD_SUFFIX, name);
	/* the lease first: a crash between the two leaves a lease and its
	 * old .bad, which the next open quarantines again (never a free IP) */
	err = link_lease(ipam, &t, json, name);
	if (err)
		goto out;
	if (unlinkat(ipam->dirfd, bad, 0) < 0 && errno != ENOENT) {
		err = -errno;
		(void)unlinkat(ipam->dirfd, name, 0);
		goto out;
	}
	remove_entry(ipam, e);
	e->quarantined = false;
	e->lease.ip = htonl(e->ip);
	e->lease.owner = *owner;
	e->lease.created = created;
	insert(ipam, e);
out:
	tmp_discard(ipam, &t);
	pthread_mutex_unlock(&ipam->lock);
	free(json);
	return err;
}
