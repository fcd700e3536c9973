/*
 * datapath.c — loads weft's eBPF programs, keeps their maps pinned, attaches
 * them with tc, and reads and writes the maps for the agent.
 *
 * Five skeletons (pod_ingress, pod_egress, vxlan_ingress, node_ingress,
 * svc_egress; bpf/NAME.bpf.c is built into build/bpf/NAME.skel.h) define
 * the same maps, all pinned by
 * name (bpf/lib/maps.h).  Every object is opened with pin_root_path = the
 * pin directory, so the first load creates and pins the maps and the
 * others, like every load after an agent restart, reuse them.  The map fds
 * kept here are the pod skeleton's; the others refer to the same maps.
 * The capacities of the service and policy maps come from the options and
 * are set on every object before load (a pin of another capacity is stale: rebuilt).
 *
 * Opening, with the function for each step:
 *
 *	check_pin_dir()      the directory is (or will be) on bpffs; mkdir -p
 *	open_skeletons()     open both objects, set the trace knob in .rodata
 *	inspect_pins()       for every map: pinned?  pinned with our layout?
 *	   │ none pinned ─────────────── rebuilt (libbpf creates and pins them)
 *	   │ any stale, or some missing ─ unpin_weft() all of them: rebuilt
 *	load both ──────────── ok: done
 *	   │ -EINVAL while reusing pins, first attempt
 *	   └─ close, unpin_weft(), open again, load again: rebuilt
 *
 * inspect_pins() compares what libbpf compares (type, key and value size,
 * max_entries, flags), so the retry only covers what it cannot see; it is
 * limited to -EINVAL, the error libbpf gives for a pin it cannot reuse, so
 * a program the verifier rejects (usually -EACCES) does not cost the maps.
 *
 * Invariants:
 *  1. Only entries named weft_* are ever unpinned; the directory is removed
 *     only when empty.
 *  2. A rebuild replaces every map, never some (a half-kept set could pair
 *     a complete config with empty tables): a fresh weft_config has
 *     version 0, so the programs treat the whole state as incomplete until
 *     the agent has synced it (weft_bpf.h invariant 1).
 *  3. The tc filter is always (handle WEFT_TC_HANDLE, priority
 *     WEFT_TC_PRIORITY) at clsact ingress (and egress: pod_egress on a
 *     pod's veth, svc_egress on the service device) and is replaced in
 *     place.
 */
#include "agent/datapath.h"
#include "agent/datapath_priv.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "node_ingress.skel.h"
#include "pod_egress.skel.h"
#include "pod_ingress.skel.h"
#include "svc_egress.skel.h"
#include "vxlan_ingress.skel.h"

#define WEFT_TC_HANDLE		0x77656674u	/* "weft" */
#define WEFT_TC_PRIORITY	1
#define WEFT_PIN_PREFIX		"weft_"

_Static_assert(sizeof((const char *[])WEFT_DROP_NAMES) == WEFT_DROP_MAX * sizeof(const char *),
	       "WEFT_DROP_NAMES must name every enum weft_drop_reason");
const char *const datapath_drop_names[WEFT_DROP_MAX] = WEFT_DROP_NAMES;
_Static_assert(sizeof(struct weft_config) == 64 && sizeof(struct weft_config) % 8 == 0,
	       "struct weft_config: 64 bytes, 8-byte aligned (bpf/weft_bpf.h)");


static void errmsg(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errmsg(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* ---- pin directory ---- */

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* mkdir -p, one component at a time. */
static int mkdir_parents(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

/* The pin directory must be on bpffs: check the nearest existing ancestor
 * before creating anything, so a mistyped path makes no directories on
 * some other filesystem. */
static int check_pin_dir(const char *dir, char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	int err;

	if (!dir || !*dir) {
		errmsg(errbuf, errlen, "no bpf pin directory given");
		return -EINVAL;
	}
	if (strlen(dir) >= sizeof(path)) {
		errmsg(errbuf, errlen, "bpf pin directory %.64s...: path too long", dir);
		return -ENAMETOOLONG;
	}
	strcpy(path, dir);
	while (stat(path, &st) < 0) {
		char *slash = strrchr(path, '/');

		if (errno != ENOENT || !slash) {
			err = -errno;
			errmsg(errbuf, errlen, "bpf pin directory %s: %s", dir, strerror(errno));
			return err;
		}
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	if (!is_bpffs(path)) {
		errmsg(errbuf, errlen,
		       "bpf pin directory %s: %s is not on a bpf filesystem "
		       "(mount -t bpf bpf /sys/fs/bpf)", dir, path);
		return -EINVAL;
	}
	err = mkdir_parents(dir);
	if (err < 0) {
		errmsg(errbuf, errlen, "bpf pin directory %s: %s", dir, strerror(-err));
		return err;
	}
	return 0;
}

/* Unlink every weft_* entry of dir (invariant 1).  0 or -errno (the first
 * failure; the others are still attempted). */
static int unpin_weft(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, WEFT_PIN_PREFIX, strlen(WEFT_PIN_PREFIX)) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path)) {
			if (!err)
				err = -ENAMETOOLONG;
			continue;
		}
		if (unlink(path) < 0 && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	return err;
}

int datapath_unpin(const char *pin_dir)
{
	int err;

	if (!pin_dir || !*pin_dir)
		return -EINVAL;
	err = unpin_weft(pin_dir);
	if (err < 0)
		return err;
	if (rmdir(pin_dir) < 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
		return -errno;
	return 0;
}

/* ---- loading ---- */

struct pin_state {
	bool missing;	/* some map is not pinned yet */
	bool stale;	/* some pin has another layout */
	bool any;	/* some map is pinned */
};

static bool pin_matches(int fd, const struct bpf_map *map)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return false;
	return info.type == (__u32)bpf_map__type(map) &&
	       info.key_size == bpf_map__key_size(map) &&
	       info.value_size == bpf_map__value_size(map) &&
	       info.max_entries == bpf_map__max_entries(map) &&
	       info.map_flags == bpf_map__map_flags(map);
}

static int inspect_pins(struct bpf_object *obj, struct pin_state *ps, char *errbuf, size_t errlen)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		const char *path = bpf_map__pin_path(map);
		int fd;

		if (!path)
			continue;	/* .rodata: per program, not pinned */
		fd = bpf_obj_get(path);
		if (fd < 0) {
			if (fd == -ENOENT) {
				ps->missing = true;
				continue;
			}
			errmsg(errbuf, errlen, "pinned map %s: %s", path, strerror(-fd));
			return fd;
		}
		ps->any = true;
		if (!pin_matches(fd, map))
			ps->stale = true;
		close(fd);
	}
	return 0;
}

static void close_skeletons(struct datapath *dp)
{
	svc_egress__destroy(dp->svc);
	dp->svc = NULL;
	pod_egress__destroy(dp->pod_out);
	dp->pod_out = NULL;
	node_ingress__destroy(dp->node);
	vxlan_ingress__destroy(dp->vxlan);
	pod_ingress__destroy(dp->pod);
	dp->node = NULL;
	dp->vxlan = NULL;
	dp->pod = NULL;
}

static uint32_t or_default(uint32_t v, uint32_t def)
{
	return v ? v : def;
}

/* The capacities of the service maps, the same on every object. */
static int set_capacities(struct bpf_object *obj, const struct datapath_opts *opts)
{
	static const struct { const char *name; size_t off; uint32_t def; } caps[] = {
		{ "weft_services", offsetof(struct datapath_opts, max_services), WEFT_MAX_SERVICES },
		{ "weft_backends", offsetof(struct datapath_opts, max_backends), WEFT_MAX_BACKENDS },
		{ "weft_ct", offsetof(struct datapath_opts, max_ct), WEFT_MAX_CT },
		{ "weft_affinity", offsetof(struct datapath_opts, max_affinity), WEFT_MAX_AFFINITY },
		{ "weft_policy", offsetof(struct datapath_opts, max_policy), WEFT_MAX_POLICY },
		{ "weft_policy_cidrs", offsetof(struct datapath_opts, max_policy), WEFT_MAX_POLICY },
		{ "weft_policy_ct", offsetof(struct datapath_opts, max_policy_ct), WEFT_MAX_POLICY_CT },
	};

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, caps[i].name);
		uint32_t v;
		int err;

		if (!map)
			return -ENOENT;
		memcpy(&v, (const char *)opts + caps[i].off, sizeof(v));
		err = bpf_map__set_max_entries(map, or_default(v, caps[i].def));
		if (err < 0)
			return err;
	}
	return 0;
}

static int open_skeletons(struct datapath *dp, const struct datapath_opts *opts,
			  char *errbuf, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = opts->pin_dir);

	dp->pod = pod_ingress__open_opts(&oo);
	if (!dp->pod) {
		errmsg(errbuf, errlen, "pod_ingress: open: %s", strerror(errno));
		return -errno;
	}
	dp->vxlan = vxlan_ingress__open_opts(&oo);
	if (!dp->vxlan) {
		errmsg(errbuf, errlen, "vxlan_ingress: open: %s", strerror(errno));
		return -errno;
	}
	dp->node = node_ingress__open_opts(&oo);
	if (!dp->node) {
		errmsg(errbuf, errlen, "node_ingress: open: %s", strerror(errno));
		return -errno;
	}
	dp->pod_out = pod_egress__open_opts(&oo);
	if (!dp->pod_out) {
		errmsg(errbuf, errlen, "pod_egress: open: %s", strerror(errno));
		return -errno;
	}
	dp->svc = svc_egress__open_opts(&oo);
	if (!dp->svc) {
		errmsg(errbuf, errlen, "svc_egress: open: %s", strerror(errno));
		return -errno;
	}
	dp->pod->rodata->trace_enabled = opts->trace ? 1 : 0;
	dp->vxlan->rodata->trace_enabled = opts->trace ? 1 : 0;
	dp->node->rodata->trace_enabled = opts->trace ? 1 : 0;
	dp->pod_out->rodata->trace_enabled = opts->trace ? 1 : 0;
	dp->svc->rodata->trace_enabled = opts->trace ? 1 : 0;
	dp->ct_source_max = opts->ct_source_max ? opts->ct_source_max
			    : or_default(opts->max_ct, WEFT_MAX_CT) / 2 / WEFT_CT_SOURCE_SHARE;
	if (dp->ct_source_max == 0)
		dp->ct_source_max = 1;
	dp->pod->rodata->ct_source_max = dp->ct_source_max;
	dp->vxlan->rodata->ct_source_max = dp->ct_source_max;
	dp->node->rodata->ct_source_max = dp->ct_source_max;
	dp->pod_out->rodata->ct_source_max = dp->ct_source_max;
	dp->svc->rodata->ct_source_max = dp->ct_source_max;
	dp->policy_ct_source_max = opts->policy_ct_source_max ? opts->policy_ct_source_max
				   : or_default(opts->max_policy_ct, WEFT_MAX_POLICY_CT) /
					     WEFT_POLICY_CT_SOURCE_SHARE;
	if (dp->policy_ct_source_max == 0)
		dp->policy_ct_source_max = 1;
	dp->pod->rodata->policy_ct_source_max = dp->policy_ct_source_max;
	dp->vxlan->rodata->policy_ct_source_max = dp->policy_ct_source_max;
	dp->node->rodata->policy_ct_source_max = dp->policy_ct_source_max;
	dp->pod_out->rodata->policy_ct_source_max = dp->policy_ct_source_max;
	dp->svc->rodata->policy_ct_source_max = dp->policy_ct_source_max;
	dp->objs[0] = dp->pod->obj;
	dp->objs[1] = dp->vxlan->obj;
	dp->objs[2] = dp->node->obj;
	dp->objs[3] = dp->pod_out->obj;
	dp->objs[4] = dp->svc->obj;
	dp->names[0] = "pod_ingress";
	dp->names[1] = "vxlan_ingress";
	dp->names[2] = "node_ingress";
	dp->names[3] = "pod_egress";
	dp->names[4] = "svc_egress";
	for (size_t i = 0; i < DP_NOBJS; i++)
		if (set_capacities(dp->objs[i], opts) < 0) {
			errmsg(errbuf, errlen, "%s: setting the service maps' capacities failed",
			       dp->names[i]);
			return -EINVAL;
		}
	return 0;
}

/* One attempt: open, look at the pins, load.  *retry is set when the
 * load failed in a way a fresh set of maps may cure. */
static int load_once(struct datapath *dp, const struct datapath_opts *opts, bool *rebuilt,
		     bool *retry, char *errbuf, size_t errlen)
{
	struct pin_state ps = { 0 };
	int err;

	*retry = false;
	err = open_skeletons(dp, opts, errbuf, errlen);
	if (err < 0)
		return err;
	for (size_t i = 0; i < DP_NOBJS; i++) {
		err = inspect_pins(dp->objs[i], &ps, errbuf, errlen);
		if (err < 0)
			return err;
	}
	if (ps.stale || (ps.missing && ps.any)) {	/* invariant 2 */
		err = unpin_weft(opts->pin_dir);
		if (err < 0) {
			errmsg(errbuf, errlen, "bpf pin directory %s: removing stale pins: %s",
			       opts->pin_dir, strerror(-err));
			return err;
		}
		ps.any = false;
	}
	if (ps.stale || ps.missing)
		*rebuilt = true;

	for (size_t i = 0; i < DP_NOBJS; i++) {
		err = bpf_object__load(dp->objs[i]);
		if (err < 0) {
			*retry = err == -EINVAL && ps.any;
			errmsg(errbuf, errlen, "%s: load with maps pinned in %s: %s",
			       dp->names[i], opts->pin_dir, strerror(-err));
			return err;
		}
	}
	return 0;
}

int datapath_open(const struct datapath_opts *opts, struct datapath **out, bool *rebuilt,
		  char *errbuf, size_t errlen)
{
	struct datapath *dp = NULL;
	bool fresh = false, retry;
	int err;

	*out = NULL;
	if (!opts) {
		errmsg(errbuf, errlen, "no datapath options");
		return -EINVAL;
	}
	err = check_pin_dir(opts->pin_dir, errbuf, errlen);
	if (err < 0)
		goto out;
	dp = calloc(1, sizeof(*dp));
	if (!dp) {
		err = -ENOMEM;
		errmsg(errbuf, errlen, "datapath: out of memory");
		goto out;
	}
	err = load_once(dp, opts, &fresh, &retry, errbuf, errlen);
	if (err < 0 && retry) {
		close_skeletons(dp);
		err = unpin_weft(opts->pin_dir);
		if (err < 0) {
			errmsg(errbuf, errlen, "bpf pin directory %s: removing stale pins: %s",
			       opts->pin_dir, strerror(-err));
			goto out;
		}
		fresh = true;
		err = load_once(dp, opts, &fresh, &retry, errbuf, errlen);
	}
	if (err < 0)
		goto out;

	dp->config_fd = bpf_map__fd(dp->pod->maps.weft_config);
	dp->endpoints_fd = bpf_map__fd(dp->pod->maps.weft_endpoints);
	dp->ipcache_fd = bpf_map__fd(dp->pod->maps.weft_ipcache);
	dp->nodes_fd = bpf_map__fd(dp->pod->maps.weft_nodes);
	dp->nodeips_fd = bpf_map__fd(dp->pod->maps.weft_node_ips);
	dp->drops_fd = bpf_map__fd(dp->pod->maps.weft_drops);
	dp->trace_fd = bpf_map__fd(dp->pod->maps.weft_trace);
	dp->svcdev_fd = bpf_map__fd(dp->pod->maps.weft_svc_dev);
	dp->services_fd = bpf_map__fd(dp->pod->maps.weft_services);
	dp->backends_fd = bpf_map__fd(dp->pod->maps.weft_backends);
	dp->ct_fd = bpf_map__fd(dp->pod->maps.weft_ct);
	dp->affinity_fd = bpf_map__fd(dp->pod->maps.weft_affinity);
	dp->ct_opened_fd = bpf_map__fd(dp->pod->maps.weft_ct_opened);
	dp->ct_closed_fd = bpf_map__fd(dp->pod->maps.weft_ct_closed);
	dp->max_services = bpf_map__max_entries(dp->pod->maps.weft_services);
	dp->max_backends = bpf_map__max_entries(dp->pod->maps.weft_backends);
	dp->max_ct = bpf_map__max_entries(dp->pod->maps.weft_ct);
	dp->policy_fd = bpf_map__fd(dp->pod->maps.weft_policy);
	dp->policy_cidrs_fd = bpf_map__fd(dp->pod->maps.weft_policy_cidrs);
	dp->policy_ct_fd = bpf_map__fd(dp->pod->maps.weft_policy_ct);
	dp->policy_ct_opened_fd = bpf_map__fd(dp->pod->maps.weft_policy_ct_opened);
	dp->policy_ct_closed_fd = bpf_map__fd(dp->pod->maps.weft_policy_ct_closed);
	dp->policy_log_fd = bpf_map__fd(dp->pod->maps.weft_policy_log);
	dp->max_policy = bpf_map__max_entries(dp->pod->maps.weft_policy);
	dp->max_policy_ct = bpf_map__max_entries(dp->pod->maps.weft_policy_ct);
	if (rebuilt)
		*rebuilt = fresh;
	*out = dp;
	dp = NULL;
	err = 0;
out:
	datapath_close(dp);
	return err;
}

void datapath_close(struct datapath *dp)
{
	if (!dp)
		return;
	close_skeletons(dp);
	free(dp);
}

/* ---- tc ---- */

static int tc_attach_at(int ifindex, int prog_fd, enum bpf_tc_attach_point where)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = WEFT_TC_HANDLE, .priority = WEFT_TC_PRIORITY,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	err = bpf_tc_hook_create(&hook);	/* the clsact qdisc */
	if (err < 0 && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &tc);
}

static int tc_attach(int ifindex, int prog_fd)
{
	return tc_attach_at(ifindex, prog_fd, BPF_TC_INGRESS);
}

int datapath_attach_pod(struct datapath *dp, int ifindex)
{
	int err = tc_attach(ifindex, bpf_program__fd(dp->pod->progs.pod_ingress));

	if (err < 0)
		return err;
	return tc_attach_at(ifindex, bpf_program__fd(dp->pod_out->progs.pod_egress), BPF_TC_EGRESS);
}

int datapath_attach_vxlan(struct datapath *dp, int ifindex)
{
	return tc_attach(ifindex, bpf_program__fd(dp->vxlan->progs.vxlan_ingress));
}

int datapath_attach_node(struct datapath *dp, int ifindex)
{
	return tc_attach(ifindex, bpf_program__fd(dp->node->progs.node_ingress));
}

int datapath_attach_svc(struct datapath *dp, int ifindex)
{
	return tc_attach_at(ifindex, bpf_program__fd(dp->svc->progs.svc_egress), BPF_TC_EGRESS);
}

int datapath_attached(struct datapath *dp, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = WEFT_TC_HANDLE, .priority = WEFT_TC_PRIORITY);
	int err;

	(void)dp;
	if (ifindex <= 0)
		return -EINVAL;
	err = bpf_tc_query(&hook, &tc);
	if (err == 0)
		return 1;
	/* no such filter, or no clsact qdisc at all (the kernel says EINVAL) */
	if (err == -ENOENT || err == -EINVAL)
		return 0;
	return err;
}

/* ---- maps ---- */

int datapath_config_get(struct datapath *dp, struct weft_config *out)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(dp->config_fd, &key, out);
}

int datapath_config_set(struct datapath *dp, const struct weft_config *cfg)
{
	__u32 key = 0;

	return bpf_map_update_elem(dp->config_fd, &key, cfg, BPF_ANY);
}

int datapath_svc_dev_get(struct datapath *dp, struct weft_svc_dev *out)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(dp->svcdev_fd, &key, out);
}

int datapath_svc_dev_set(struct datapath *dp, const struct weft_svc_dev *d)
{
	__u32 key = 0;

	return bpf_map_update_elem(dp->svcdev_fd, &key, d, BPF_ANY);
}

int datapath_endpoint_put(struct datapath *dp, in_addr_t ip, const struct weft_endpoint *ep)
{
	return bpf_map_update_elem(dp->endpoints_fd, &ip, ep, BPF_ANY);
}

int datapath_endpoint_get(struct datapath *dp, in_addr_t ip, struct weft_endpoint *ep)
{
	return bpf_map_lookup_elem(dp->endpoints_fd, &ip, ep);
}

int datapath_endpoint_del(struct datapath *dp, in_addr_t ip)
{
	return bpf_map_delete_elem(dp->endpoints_fd, &ip);
}

int datapath_ipcache_put(struct datapath *dp, in_addr_t ip, const struct weft_ipcache_entry *e)
{
	return bpf_map_update_elem(dp->ipcache_fd, &ip, e, BPF_ANY);
}

int datapath_ipcache_get(struct datapath *dp, in_addr_t ip, struct weft_ipcache_entry *e)
{
	return bpf_map_lookup_elem(dp->ipcache_fd, &ip, e);
}

int datapath_ipcache_del(struct datapath *dp, in_addr_t ip)
{
	return bpf_map_delete_elem(dp->ipcache_fd, &ip);
}

/* The trie key of subnet/prefixlen, host bits cleared so that the same
 * subnet always has the same key.  -EINVAL for a prefix beyond 32. */
int datapath_lpm_key(in_addr_t subnet, int prefixlen, struct weft_lpm_key *key)
{
	uint32_t mask;

	if (prefixlen < 0 || prefixlen > 32)
		return -EINVAL;
	mask = prefixlen == 0 ? 0 : htonl((uint32_t)(0xffffffffull << (32 - prefixlen)));
	key->prefixlen = (__u32)prefixlen;
	key->addr = subnet & mask;
	return 0;
}

int datapath_node_put(struct datapath *dp, in_addr_t subnet, int prefixlen,
		      const struct weft_node_entry *e)
{
	struct weft_lpm_key key;
	int err = datapath_lpm_key(subnet, prefixlen, &key);

	if (err < 0)
		return err;
	return bpf_map_update_elem(dp->nodes_fd, &key, e, BPF_ANY);
}

int datapath_node_del(struct datapath *dp, in_addr_t subnet, int prefixlen)
{
	struct weft_lpm_key key;
	int err = datapath_lpm_key(subnet, prefixlen, &key);

	if (err < 0)
		return err;
	return bpf_map_delete_elem(dp->nodes_fd, &key);
}

int datapath_nodeip_put(struct datapath *dp, in_addr_t ip, uint32_t node_id)
{
	struct weft_node_ip v = { .node_id = node_id };

	return bpf_map_update_elem(dp->nodeips_fd, &ip, &v, BPF_ANY);
}

int datapath_nodeip_del(struct datapath *dp, in_addr_t ip)
{
	return bpf_map_delete_elem(dp->nodeips_fd, &ip);
}

/* The keys of map fd at this moment, at most max (the map's capacity:
 * a walk that restarts because its key was deleted meanwhile cannot run
 * away).  *keys is the caller's to free. */
int datapath_snapshot_keys(int fd, size_t key_size, size_t max, void **keys, size_t *n)
{
	unsigned char *buf = NULL, *prev = NULL;
	size_t count = 0;
	int err;

	*keys = NULL;
	*n = 0;
	buf = calloc(max ? max : 1, key_size);
	if (!buf)
		return -ENOMEM;
	while (count < max) {
		unsigned char *next = buf + count * key_size;

		err = bpf_map_get_next_key(fd, prev, next);
		if (err == -ENOENT)
			break;
		if (err < 0) {
			free(buf);
			return err;
		}
		prev = next;
		count++;
	}
	*keys = buf;
	*n = count;
	return 0;
}

int datapath_endpoint_foreach(struct datapath *dp,
			      int (*fn)(in_addr_t ip, const struct weft_endpoint *ep, void *arg),
			      void *arg)
{
	struct weft_endpoint ep;
	__be32 *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->endpoints_fd, sizeof(*keys), WEFT_MAX_ENDPOINTS, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->endpoints_fd, &keys[i], &ep) < 0)
			continue;	/* deleted since the snapshot */
		err = fn(keys[i], &ep, arg);
	}
	free(keys);
	return err;
}

int datapath_ipcache_foreach(struct datapath *dp,
			     int (*fn)(in_addr_t ip, const struct weft_ipcache_entry *e, void *arg),
			     void *arg)
{
	struct weft_ipcache_entry e;
	__be32 *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->ipcache_fd, sizeof(*keys), WEFT_MAX_IPCACHE, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->ipcache_fd, &keys[i], &e) < 0)
			continue;
		err = fn(keys[i], &e, arg);
	}
	free(keys);
	return err;
}

int datapath_node_foreach(struct datapath *dp,
			  int (*fn)(in_addr_t subnet, int prefixlen, const struct weft_node_entry *e,
				    void *arg),
			  void *arg)
{
	struct weft_node_entry e;
	struct weft_lpm_key *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->nodes_fd, sizeof(*keys), WEFT_MAX_NODES, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->nodes_fd, &keys[i], &e) < 0)
			continue;
		err = fn(keys[i].addr, (int)keys[i].prefixlen, &e, arg);
	}
	free(keys);
	return err;
}

int datapath_nodeip_foreach(struct datapath *dp,
			    int (*fn)(in_addr_t ip, uint32_t node_id, void *arg), void *arg)
{
	struct weft_node_ip v;
	__be32 *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->nodeips_fd, sizeof(*keys), WEFT_MAX_NODES, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->nodeips_fd, &keys[i], &v) < 0)
			continue;
		err = fn(keys[i], v.node_id, arg);
	}
	free(keys);
	return err;
}

/* ---- services ---- */

int datapath_service_put(struct datapath *dp, const struct weft_svc_key *k,
			 const struct weft_svc_value *v)
{
	return bpf_map_update_elem(dp->services_fd, k, v, BPF_ANY);
}

int datapath_service_get(struct datapath *dp, const struct weft_svc_key *k, struct weft_svc_value *v)
{
	return bpf_map_lookup_elem(dp->services_fd, k, v);
}

int datapath_service_del(struct datapath *dp, const struct weft_svc_key *k)
{
	return bpf_map_delete_elem(dp->services_fd, k);
}

int datapath_backend_put(struct datapath *dp, uint32_t id, const struct weft_backend *b)
{
	return bpf_map_update_elem(dp->backends_fd, &id, b, BPF_ANY);
}

int datapath_backend_get(struct datapath *dp, uint32_t id, struct weft_backend *b)
{
	return bpf_map_lookup_elem(dp->backends_fd, &id, b);
}

int datapath_backend_del(struct datapath *dp, uint32_t id)
{
	return bpf_map_delete_elem(dp->backends_fd, &id);
}

int datapath_ct_get(struct datapath *dp, const struct weft_ct_key *k, struct weft_ct_entry *e)
{
	return bpf_map_lookup_elem(dp->ct_fd, k, e);
}

int datapath_ct_put(struct datapath *dp, const struct weft_ct_key *k, const struct weft_ct_entry *e)
{
	return bpf_map_update_elem(dp->ct_fd, k, e, BPF_ANY);
}

int datapath_ct_del(struct datapath *dp, const struct weft_ct_key *k)
{
	return bpf_map_delete_elem(dp->ct_fd, k);
}

int datapath_affinity_del(struct datapath *dp, const struct weft_affinity_key *k)
{
	return bpf_map_delete_elem(dp->affinity_fd, k);
}

int datapath_ct_opened_get(struct datapath *dp, in_addr_t client, uint64_t *n)
{
	return bpf_map_lookup_elem(dp->ct_opened_fd, &client, n);
}

int datapath_ct_closed_get(struct datapath *dp, in_addr_t client, uint64_t *n)
{
	return bpf_map_lookup_elem(dp->ct_closed_fd, &client, n);
}

/* The counts of one table's clients (weft_ct's, weft_policy_ct's): the
 * programs add to opened_fd, the agent to closed_fd. */
int datapath_counts_closed_add(int closed_fd, in_addr_t client, uint64_t n)
{
	uint64_t v = 0;

	if (bpf_map_lookup_elem(closed_fd, &client, &v) < 0 && errno != ENOENT)
		return -errno;
	v += n;
	return bpf_map_update_elem(closed_fd, &client, &v, BPF_ANY);
}

/* A program may count a new connection between the reads and the
 * deletes; it is then forgotten with the client (one connection held
 * and not counted, until the client's counts are forgotten again). */
int datapath_counts_forget(int opened_fd, int closed_fd, in_addr_t client)
{
	uint64_t opened = 0, closed = 0;

	if (bpf_map_lookup_elem(opened_fd, &client, &opened) < 0 && errno != ENOENT)
		return -errno;
	if (bpf_map_lookup_elem(closed_fd, &client, &closed) < 0 && errno != ENOENT)
		return -errno;
	if (opened != closed)
		return -EBUSY;
	(void)bpf_map_delete_elem(opened_fd, &client);
	(void)bpf_map_delete_elem(closed_fd, &client);
	return 0;
}

int datapath_counts_closed_foreach(int closed_fd,
				   int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg)
{
	in_addr_t *keys = NULL;
	uint64_t v;
	size_t n;
	int err;

	err = datapath_snapshot_keys(closed_fd, sizeof(*keys), WEFT_MAX_CT_SOURCES, (void **)&keys,
				     &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(closed_fd, &keys[i], &v) < 0)
			continue;
		err = fn(keys[i], v, arg);
	}
	free(keys);
	return err;
}

int datapath_ct_closed_add(struct datapath *dp, in_addr_t client, uint64_t n)
{
	return datapath_counts_closed_add(dp->ct_closed_fd, client, n);
}

int datapath_ct_source_forget(struct datapath *dp, in_addr_t client)
{
	return datapath_counts_forget(dp->ct_opened_fd, dp->ct_closed_fd, client);
}

int datapath_ct_closed_foreach(struct datapath *dp,
			       int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg)
{
	return datapath_counts_closed_foreach(dp->ct_closed_fd, fn, arg);
}

uint32_t datapath_ct_source_max(struct datapath *dp)
{
	return dp->ct_source_max;
}

void datapath_capacities(struct datapath *dp, uint32_t *services, uint32_t *backends, uint32_t *ct)
{
	*services = dp->max_services;
	*backends = dp->max_backends;
	*ct = dp->max_ct;
}

int datapath_service_foreach(struct datapath *dp,
			     int (*fn)(const struct weft_svc_key *k, const struct weft_svc_value *v,
				       void *arg),
			     void *arg)
{
	struct weft_svc_value v;
	struct weft_svc_key *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->services_fd, sizeof(*keys), dp->max_services, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->services_fd, &keys[i], &v) < 0)
			continue;
		err = fn(&keys[i], &v, arg);
	}
	free(keys);
	return err;
}

int datapath_backend_foreach(struct datapath *dp,
			     int (*fn)(uint32_t id, const struct weft_backend *b, void *arg),
			     void *arg)
{
	struct weft_backend b;
	uint32_t *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp->backends_fd, sizeof(*keys), dp->max_backends, (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (bpf_map_lookup_elem(dp->backends_fd, &keys[i], &b) < 0)
			continue;
		err = fn(keys[i], &b, arg);
	}
	free(keys);
	return err;
}

/* Conntrack is the one kind of map that grows with traffic (hundreds of
 * thousands of entries), so it is read in batches of CT_BATCH entries per
 * syscall (BPF_MAP_LOOKUP_BATCH) rather than a get_next_key and a lookup
 * per entry; the callback sees a copy, so it may delete.  A kernel
 * without batch ops falls back to the key walk. */
#define CT_BATCH 4096

static int batch_keywalk(int fd, size_t ksize, size_t vsize, size_t max,
			 int (*fn)(const void *k, const void *v, void *arg), void *arg)
{
	unsigned char *keys = NULL, *v = malloc(vsize);
	size_t n;
	int err;

	if (!v)
		return -ENOMEM;
	err = datapath_snapshot_keys(fd, ksize, max, (void **)&keys, &n);
	for (size_t i = 0; err == 0 && i < n; i++) {
		if (bpf_map_lookup_elem(fd, keys + i * ksize, v) < 0)
			continue;
		err = fn(keys + i * ksize, v, arg);
	}
	free(keys);
	free(v);
	return err;
}

int datapath_batch_foreach(int fd, size_t ksize, size_t vsize, size_t max,
			   int (*fn)(const void *k, const void *v, void *arg), void *arg)
{
	unsigned char *keys = calloc(CT_BATCH, ksize);
	unsigned char *vals = calloc(CT_BATCH, vsize);
	__u32 token = 0;
	bool first = true, done = false;
	size_t seen = 0;
	int err = 0;

	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	while (!done && err == 0 && seen < max) {
		__u32 count = CT_BATCH, next = 0;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : &token, &next, keys, vals, &count,
					      NULL);

		if (rc < 0 && rc != -ENOENT) {
			/* no batch ops in this kernel, or a bucket larger than
			 * the buffer: walk the keys (fn may see an entry twice:
			 * the callers' checks are idempotent) */
			if (rc == -ENOSPC ||
			    (first && (rc == -EINVAL || rc == -EOPNOTSUPP || rc == -524 /* ENOTSUPP */)))
				err = batch_keywalk(fd, ksize, vsize, max, fn, arg);
			else
				err = rc;
			break;
		}
		done = rc == -ENOENT;
		for (__u32 i = 0; i < count && err == 0; i++)
			err = fn(keys + (size_t)i * ksize, vals + (size_t)i * vsize, arg);
		seen += count;
		token = next;
		first = false;
	}
out:
	free(keys);
	free(vals);
	return err;
}

struct ct_walk {
	int (*fn)(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg);
	void *arg;
};

static int ct_walk_one(const void *k, const void *v, void *arg)
{
	const struct ct_walk *w = arg;

	return w->fn(k, v, w->arg);
}

int datapath_ct_foreach(struct datapath *dp,
			int (*fn)(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg),
			void *arg)
{
	struct ct_walk w = { fn, arg };

	return datapath_batch_foreach(dp->ct_fd, sizeof(struct weft_ct_key),
				      sizeof(struct weft_ct_entry), dp->max_ct, ct_walk_one, &w);
}

/* ---- counters and trace (per-CPU maps) ---- */

/* A per-CPU lookup returns one value per possible CPU, each padded to 8
 * bytes.  *values is the caller's to free. */
static int percpu_lookup(int fd, __u32 key, size_t value_size, void **values, int *ncpus,
			 size_t *stride)
{
	int n = libbpf_num_possible_cpus();
	void *buf;
	int err;

	*values = NULL;
	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	*stride = (value_size + 7) & ~(size_t)7;
	buf = calloc((size_t)n, *stride);
	if (!buf)
		return -ENOMEM;
	err = bpf_map_lookup_elem(fd, &key, buf);
	if (err < 0) {
		free(buf);
		return err;
	}
	*values = buf;
	*ncpus = n;
	return 0;
}

int datapath_drops(struct datapath *dp, uint64_t out[WEFT_DROP_MAX])
{
	void *values = NULL;
	size_t stride;
	int ncpus, err = 0;

	for (__u32 reason = 0; reason < WEFT_DROP_MAX; reason++) {
		err = percpu_lookup(dp->drops_fd, reason, sizeof(uint64_t), &values, &ncpus, &stride);
		if (err < 0)
			return err;
		out[reason] = 0;
		for (int cpu = 0; cpu < ncpus; cpu++) {
			uint64_t v;

			memcpy(&v, (char *)values + (size_t)cpu * stride, sizeof(v));
			out[reason] += v;
		}
		free(values);
	}
	return 0;
}

int datapath_pod_prog_fd(struct datapath *dp)
{
	return bpf_program__fd(dp->pod->progs.pod_ingress);
}

int datapath_vxlan_prog_fd(struct datapath *dp)
{
	return bpf_program__fd(dp->vxlan->progs.vxlan_ingress);
}

int datapath_pod_egress_prog_fd(struct datapath *dp)
{
	return bpf_program__fd(dp->pod_out->progs.pod_egress);
}

int datapath_node_prog_fd(struct datapath *dp)
{
	return bpf_program__fd(dp->node->progs.node_ingress);
}

int datapath_svc_prog_fd(struct datapath *dp)
{
	return bpf_program__fd(dp->svc->progs.svc_egress);
}

/* count is summed over the CPUs; the other fields are those of the CPU
 * that ran most (after a reset and one run: the one that ran). */
int datapath_trace_read(struct datapath *dp, struct weft_trace *out)
{
	const struct weft_trace *best = NULL;
	struct weft_trace t;
	void *values = NULL;
	size_t stride;
	uint32_t total = 0, most = 0;
	int ncpus, err;

	err = percpu_lookup(dp->trace_fd, 0, sizeof(t), &values, &ncpus, &stride);
	if (err < 0)
		return err;
	memset(out, 0, sizeof(*out));
	for (int cpu = 0; cpu < ncpus; cpu++) {
		const struct weft_trace *v = (const void *)((char *)values + (size_t)cpu * stride);

		total += v->count;
		if (v->count > most) {
			most = v->count;
			best = v;
		}
	}
	if (best)
		*out = *best;
	out->count = total;
	free(values);
	return 0;
}

int datapath_trace_reset(struct datapath *dp)
{
	int n = libbpf_num_possible_cpus();
	size_t stride = (sizeof(struct weft_trace) + 7) & ~(size_t)7;
	__u32 key = 0;
	void *zero;
	int err;

	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	zero = calloc((size_t)n, stride);
	if (!zero)
		return -ENOMEM;
	err = bpf_map_update_elem(dp->trace_fd, &key, zero, BPF_ANY);
	free(zero);
	return err;
}
