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
 * Every map call goes through datapath_map.h, which answers from the
 * kernel map or, for a datapath opened in memory (a hollow node), from a
 * table in this process (memmap.h); map_specs lists the maps once for both
 * sides.  In memory nothing below "loading" and "tc" runs: open_memory()
 * makes the tables, and the attach calls return at once.
 *
 * Opening the kernel side (open_kernel), with the function for each step:
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

/* Maps that hold nothing traffic needs (a trace run's record, the flow
 * log and its rate): one of another layout, or new in this build, is made
 * anew alone, and the rest of the pinned state is kept, so an upgrade
 * that changes only these does not rebuild what traffic runs on. */
static bool scratch_map(const struct bpf_map *map)
{
	const char *n = bpf_map__name(map);

	return !strcmp(n, "weft_trace") || !strcmp(n, "weft_flows") || !strcmp(n, "weft_flow_state");
}

static int inspect_pins(struct bpf_object *obj, struct pin_state *ps, char *errbuf, size_t errlen)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		const char *path = bpf_map__pin_path(map);
		int fd;

		if (!path)
			continue;	/* .rodata: per program, not pinned */
		if (scratch_map(map)) {
			bool same;

			if ((fd = bpf_obj_get(path)) < 0)
				continue;	/* made at load */
			same = pin_matches(fd, map);
			close(fd);
			if (!same && unlink(path) < 0 && errno != ENOENT) {
				errmsg(errbuf, errlen, "pinned map %s: removing it: %s", path, strerror(errno));
				return -errno;
			}
			continue;
		}
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

#define NO_OPT SIZE_MAX

/* Every map the agent uses, as bpf/lib/maps.h defines it: the kernel side
 * finds it by name in the loaded objects, the memory side makes a table of
 * this layout (datapath_memory_test.c compares the two).  opt: the
 * datapath_opts field that sets its capacity (0 there: max), or NO_OPT. */
static const struct map_spec {
	const char *name;
	enum bpf_map_type type;
	uint32_t key_size, value_size, max;	/* value_size: one CPU's */
	size_t opt;
} map_specs[DATAPATH_NMAPS] = {
#define OPT(field) offsetof(struct datapath_opts, field)
	[DATAPATH_MAP_CONFIG] = { "weft_config", BPF_MAP_TYPE_ARRAY,
		sizeof(__u32), sizeof(struct weft_config), 1, NO_OPT },
	[DATAPATH_MAP_SVC_DEV] = { "weft_svc_dev", BPF_MAP_TYPE_ARRAY,
		sizeof(__u32), sizeof(struct weft_svc_dev), 1, NO_OPT },
	[DATAPATH_MAP_ENDPOINTS] = { "weft_endpoints", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(struct weft_endpoint), WEFT_MAX_ENDPOINTS, NO_OPT },
	[DATAPATH_MAP_IPCACHE] = { "weft_ipcache", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(struct weft_ipcache_entry), WEFT_MAX_IPCACHE, NO_OPT },
	[DATAPATH_MAP_NODES] = { "weft_nodes", BPF_MAP_TYPE_LPM_TRIE,
		sizeof(struct weft_lpm_key), sizeof(struct weft_node_entry), WEFT_MAX_NODES, NO_OPT },
	[DATAPATH_MAP_NODE_IPS] = { "weft_node_ips", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(struct weft_node_ip), WEFT_MAX_NODES, NO_OPT },
	[DATAPATH_MAP_SERVICES] = { "weft_services", BPF_MAP_TYPE_HASH,
		sizeof(struct weft_svc_key), sizeof(struct weft_svc_value), WEFT_MAX_SERVICES,
		OPT(max_services) },
	[DATAPATH_MAP_BACKENDS] = { "weft_backends", BPF_MAP_TYPE_HASH,
		sizeof(__u32), sizeof(struct weft_backend), WEFT_MAX_BACKENDS, OPT(max_backends) },
	[DATAPATH_MAP_CT] = { "weft_ct", BPF_MAP_TYPE_HASH,
		sizeof(struct weft_ct_key), sizeof(struct weft_ct_entry), WEFT_MAX_CT, OPT(max_ct) },
	[DATAPATH_MAP_CT_OPENED] = { "weft_ct_opened", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(__u64), WEFT_MAX_CT_SOURCES, NO_OPT },
	[DATAPATH_MAP_CT_CLOSED] = { "weft_ct_closed", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(__u64), WEFT_MAX_CT_SOURCES, NO_OPT },
	[DATAPATH_MAP_AFFINITY] = { "weft_affinity", BPF_MAP_TYPE_LRU_HASH,
		sizeof(struct weft_affinity_key), sizeof(struct weft_affinity), WEFT_MAX_AFFINITY,
		OPT(max_affinity) },
	[DATAPATH_MAP_POLICY] = { "weft_policy", BPF_MAP_TYPE_LPM_TRIE,
		sizeof(struct weft_policy_key), sizeof(struct weft_policy_value), WEFT_MAX_POLICY,
		OPT(max_policy) },
	[DATAPATH_MAP_POLICY_CIDRS] = { "weft_policy_cidrs", BPF_MAP_TYPE_LPM_TRIE,
		sizeof(struct weft_policy_cidr_key), sizeof(struct weft_policy_cidr), WEFT_MAX_POLICY,
		OPT(max_policy) },
	[DATAPATH_MAP_POLICY_CT] = { "weft_policy_ct", BPF_MAP_TYPE_HASH,
		sizeof(struct weft_ct_key), sizeof(struct weft_policy_ct_entry), WEFT_MAX_POLICY_CT,
		OPT(max_policy_ct) },
	[DATAPATH_MAP_POLICY_CT_OPENED] = { "weft_policy_ct_opened", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(__u64), WEFT_MAX_CT_SOURCES, NO_OPT },
	[DATAPATH_MAP_POLICY_CT_CLOSED] = { "weft_policy_ct_closed", BPF_MAP_TYPE_HASH,
		sizeof(__be32), sizeof(__u64), WEFT_MAX_CT_SOURCES, NO_OPT },
	[DATAPATH_MAP_DROPS] = { "weft_drops", BPF_MAP_TYPE_PERCPU_ARRAY,
		sizeof(__u32), sizeof(__u64), WEFT_DROP_MAX, NO_OPT },
	[DATAPATH_MAP_TRACE] = { "weft_trace", BPF_MAP_TYPE_PERCPU_ARRAY,
		sizeof(__u32), sizeof(struct weft_trace), 1, NO_OPT },
#undef OPT
};

const char *datapath_map_name(enum datapath_map_id map)
{
	return (unsigned)map < DATAPATH_NMAPS ? map_specs[map].name : NULL;
}

static uint32_t capacity(const struct datapath_opts *opts, const struct map_spec *spec)
{
	uint32_t v = 0;

	if (spec->opt != NO_OPT)
		memcpy(&v, (const char *)opts + spec->opt, sizeof(v));
	return or_default(v, spec->max);
}

/* The capacities the options set, the same on every object. */
static int set_capacities(struct bpf_object *obj, const struct datapath_opts *opts)
{
	for (size_t i = 0; i < DATAPATH_NMAPS; i++) {
		struct bpf_map *map;
		int err;

		if (map_specs[i].opt == NO_OPT)
			continue;
		map = bpf_object__find_map_by_name(obj, map_specs[i].name);
		if (!map)
			return -ENOENT;
		err = bpf_map__set_max_entries(map, capacity(opts, &map_specs[i]));
		if (err < 0)
			return err;
	}
	return 0;
}

/* The capacities and per-client caps, for both sides. */
static void set_limits(struct datapath *dp, const struct datapath_opts *opts)
{
	for (size_t i = 0; i < DATAPATH_NMAPS; i++)
		dp->capacity[i] = capacity(opts, &map_specs[i]);
	dp->max_services = dp->capacity[DATAPATH_MAP_SERVICES];
	dp->max_backends = dp->capacity[DATAPATH_MAP_BACKENDS];
	dp->max_ct = dp->capacity[DATAPATH_MAP_CT];
	dp->max_policy = dp->capacity[DATAPATH_MAP_POLICY];
	dp->max_policy_ct = dp->capacity[DATAPATH_MAP_POLICY_CT];
	dp->ct_source_max = opts->ct_source_max ? opts->ct_source_max
			    : dp->max_ct / 2 / WEFT_CT_SOURCE_SHARE;
	if (dp->ct_source_max == 0)
		dp->ct_source_max = 1;
	dp->policy_ct_source_max = opts->policy_ct_source_max ? opts->policy_ct_source_max
				   : dp->max_policy_ct / WEFT_POLICY_CT_SOURCE_SHARE;
	if (dp->policy_ct_source_max == 0)
		dp->policy_ct_source_max = 1;
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
	dp->pod->rodata->ct_source_max = dp->ct_source_max;
	dp->vxlan->rodata->ct_source_max = dp->ct_source_max;
	dp->node->rodata->ct_source_max = dp->ct_source_max;
	dp->pod_out->rodata->ct_source_max = dp->ct_source_max;
	dp->svc->rodata->ct_source_max = dp->ct_source_max;
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

/* The kernel side: load (once more after a stale pin, invariant 2), then
 * each map's fd. */
static int open_kernel(struct datapath *dp, const struct datapath_opts *opts, bool *fresh,
		       char *errbuf, size_t errlen)
{
	bool retry;
	int err = check_pin_dir(opts->pin_dir, errbuf, errlen);

	if (err < 0)
		return err;
	err = load_once(dp, opts, fresh, &retry, errbuf, errlen);
	if (err < 0 && retry) {
		close_skeletons(dp);
		err = unpin_weft(opts->pin_dir);
		if (err < 0) {
			errmsg(errbuf, errlen, "bpf pin directory %s: removing stale pins: %s",
			       opts->pin_dir, strerror(-err));
			return err;
		}
		*fresh = true;
		err = load_once(dp, opts, fresh, &retry, errbuf, errlen);
	}
	if (err < 0)
		return err;
	for (size_t i = 0; i < DATAPATH_NMAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(dp->pod->obj, map_specs[i].name);

		if (!map) {
			errmsg(errbuf, errlen, "pod_ingress: no map %s", map_specs[i].name);
			return -ENOENT;
		}
		datapath_map_use_fd(&dp->maps[i], (enum datapath_map_id)i, bpf_map__fd(map));
	}
	dp->policy_log_fd = bpf_map__fd(dp->pod->maps.weft_policy_log);
	dp->flows_fd = bpf_map__fd(dp->pod->maps.weft_flows);
	return 0;
}

/* A per-CPU value as the syscalls pass it: one a possible CPU, each
 * padded to 8 bytes.  The stride through it in *stride; 0 or -errno. */
static int percpu_size(size_t value_size, size_t *stride, int *ncpus)
{
	int n = libbpf_num_possible_cpus();

	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	*stride = (value_size + 7) & ~(size_t)7;
	*ncpus = n;
	return 0;
}

static enum memmap_kind memory_kind(enum bpf_map_type type)
{
	switch (type) {
	case BPF_MAP_TYPE_LRU_HASH:
		return MEMMAP_LRU_HASH;
	case BPF_MAP_TYPE_ARRAY:
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		return MEMMAP_ARRAY;
	case BPF_MAP_TYPE_LPM_TRIE:
		return MEMMAP_LPM_TRIE;
	default:
		return MEMMAP_HASH;
	}
}

/* The memory side: an empty table a map, nothing else. */
static int open_memory(struct datapath *dp, char *errbuf, size_t errlen)
{
	for (size_t i = 0; i < DATAPATH_NMAPS; i++) {
		const struct map_spec *spec = &map_specs[i];
		uint32_t value_size = spec->value_size;
		size_t stride;
		int ncpus, err = 0;

		if (spec->type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			err = percpu_size(value_size, &stride, &ncpus);
			value_size = (uint32_t)(stride * (size_t)ncpus);
		}
		if (err == 0)
			err = datapath_map_use_memory(&dp->maps[i], (enum datapath_map_id)i,
						      memory_kind(spec->type), spec->key_size,
						      value_size, dp->capacity[i]);
		if (err < 0) {
			errmsg(errbuf, errlen, "%s in memory: %s", spec->name, strerror(-err));
			return err;
		}
	}
	dp->policy_log_fd = -EOPNOTSUPP;
	dp->flows_fd = -EOPNOTSUPP;
	return 0;
}

int datapath_open(const struct datapath_opts *opts, struct datapath **out, bool *rebuilt,
		  char *errbuf, size_t errlen)
{
	struct datapath *dp = NULL;
	bool fresh = false;
	int err;

	*out = NULL;
	if (!opts) {
		errmsg(errbuf, errlen, "no datapath options");
		return -EINVAL;
	}
	dp = calloc(1, sizeof(*dp));
	if (!dp) {
		err = -ENOMEM;
		errmsg(errbuf, errlen, "datapath: out of memory");
		goto out;
	}
	dp->in_memory = opts->in_memory;
	set_limits(dp, opts);
	fresh = dp->in_memory;	/* every table is new */
	err = dp->in_memory ? open_memory(dp, errbuf, errlen)
			    : open_kernel(dp, opts, &fresh, errbuf, errlen);
	if (err < 0)
		goto out;
	for (size_t i = 0; i < DATAPATH_NMAPS; i++) {
		dp->maps[i].on_write = opts->on_write;
		dp->maps[i].on_write_arg = opts->on_write_arg;
	}
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
	for (size_t i = 0; i < DATAPATH_NMAPS; i++)
		datapath_map_release(&dp->maps[i]);
	free(dp);
}

int datapath_map_layout(struct datapath *dp, enum datapath_map_id map,
			struct datapath_map_layout *out)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int err;

	if ((unsigned)map >= DATAPATH_NMAPS)
		return -EINVAL;
	if (dp->in_memory) {
		out->type = map_specs[map].type;
		out->key_size = map_specs[map].key_size;
		out->value_size = map_specs[map].value_size;
		out->max_entries = dp->capacity[map];
		return 0;
	}
	memset(&info, 0, sizeof(info));
	err = bpf_obj_get_info_by_fd(dp->maps[map].fd, &info, &len);
	if (err < 0)
		return err;
	out->type = info.type;
	out->key_size = info.key_size;
	out->value_size = info.value_size;
	out->max_entries = info.max_entries;
	return 0;
}

int64_t datapath_map_count(struct datapath *dp, enum datapath_map_id map)
{
	uint32_t count = 0;
	size_t bytes;

	if (!dp->in_memory)
		return -EOPNOTSUPP;
	if ((unsigned)map >= DATAPATH_NMAPS)
		return -EINVAL;
	if (dp->maps[map].mem)
		memmap_usage(dp->maps[map].mem, &count, &bytes);
	return count;
}

size_t datapath_memory_bytes(struct datapath *dp)
{
	size_t bytes = 0;

	if (!dp->in_memory)
		return 0;
	for (size_t i = 0; i < DATAPATH_NMAPS; i++)
		bytes += datapath_map_bytes(&dp->maps[i]);
	return bytes + sizeof(*dp);
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
	int err;

	if (dp->in_memory)
		return 0;
	err = tc_attach(ifindex, bpf_program__fd(dp->pod->progs.pod_ingress));
	if (err < 0)
		return err;
	return tc_attach_at(ifindex, bpf_program__fd(dp->pod_out->progs.pod_egress), BPF_TC_EGRESS);
}

int datapath_attach_vxlan(struct datapath *dp, int ifindex)
{
	if (dp->in_memory)
		return 0;
	return tc_attach(ifindex, bpf_program__fd(dp->vxlan->progs.vxlan_ingress));
}

int datapath_attach_node(struct datapath *dp, int ifindex)
{
	if (dp->in_memory)
		return 0;
	return tc_attach(ifindex, bpf_program__fd(dp->node->progs.node_ingress));
}

int datapath_attach_svc(struct datapath *dp, int ifindex)
{
	if (dp->in_memory)
		return 0;
	return tc_attach_at(ifindex, bpf_program__fd(dp->svc->progs.svc_egress), BPF_TC_EGRESS);
}

int datapath_attached(struct datapath *dp, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = WEFT_TC_HANDLE, .priority = WEFT_TC_PRIORITY);
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	if (dp->in_memory)
		return 1;
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

	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_CONFIG), &key, out);
}

int datapath_config_set(struct datapath *dp, const struct weft_config *cfg)
{
	__u32 key = 0;

	return datapath_map_update(dp_map(dp, DATAPATH_MAP_CONFIG), &key, cfg, BPF_ANY);
}

int datapath_svc_dev_get(struct datapath *dp, struct weft_svc_dev *out)
{
	__u32 key = 0;

	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_SVC_DEV), &key, out);
}

int datapath_svc_dev_set(struct datapath *dp, const struct weft_svc_dev *d)
{
	__u32 key = 0;

	return datapath_map_update(dp_map(dp, DATAPATH_MAP_SVC_DEV), &key, d, BPF_ANY);
}

int datapath_endpoint_put(struct datapath *dp, in_addr_t ip, const struct weft_endpoint *ep)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_ENDPOINTS), &ip, ep, BPF_ANY);
}

int datapath_endpoint_get(struct datapath *dp, in_addr_t ip, struct weft_endpoint *ep)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_ENDPOINTS), &ip, ep);
}

int datapath_endpoint_del(struct datapath *dp, in_addr_t ip)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_ENDPOINTS), &ip);
}

int datapath_ipcache_put(struct datapath *dp, in_addr_t ip, const struct weft_ipcache_entry *e)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_IPCACHE), &ip, e, BPF_ANY);
}

int datapath_ipcache_get(struct datapath *dp, in_addr_t ip, struct weft_ipcache_entry *e)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_IPCACHE), &ip, e);
}

int datapath_ipcache_del(struct datapath *dp, in_addr_t ip)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_IPCACHE), &ip);
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
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_NODES), &key, e, BPF_ANY);
}

int datapath_node_del(struct datapath *dp, in_addr_t subnet, int prefixlen)
{
	struct weft_lpm_key key;
	int err = datapath_lpm_key(subnet, prefixlen, &key);

	if (err < 0)
		return err;
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_NODES), &key);
}

int datapath_nodeip_put(struct datapath *dp, in_addr_t ip, uint32_t node_id)
{
	struct weft_node_ip v = { .node_id = node_id };

	return datapath_map_update(dp_map(dp, DATAPATH_MAP_NODE_IPS), &ip, &v, BPF_ANY);
}

int datapath_nodeip_del(struct datapath *dp, in_addr_t ip)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_NODE_IPS), &ip);
}

/* The keys of map m at this moment, at most max (the map's capacity:
 * a walk that restarts because its key was deleted meanwhile cannot run
 * away).  *keys is the caller's to free. */
int datapath_snapshot_keys(const struct datapath_map *m, size_t key_size, size_t max, void **keys,
			   size_t *n)
{
	unsigned char *buf = NULL, *prev = NULL;
	size_t count = 0, cap = max < 256 ? (max ? max : 1) : 256;
	int err;

	*keys = NULL;
	*n = 0;
	/* grown as the keys come: a sweep of a nearly empty table of 262,144
	 * entries allocated (and cleared) all of it every time */
	buf = malloc(cap * key_size);
	if (!buf)
		return -ENOMEM;
	while (count < max) {
		unsigned char *next;

		if (count == cap) {
			size_t ncap = cap * 2 < max ? cap * 2 : max;
			unsigned char *nb = realloc(buf, ncap * key_size);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			prev = nb + (prev - buf);
			buf = nb;
			cap = ncap;
		}
		next = buf + count * key_size;
		err = datapath_map_next_key(m, prev, next);
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

struct at_ifindex {
	uint32_t ifindex;
	in_addr_t ip;
};

static int match_ifindex(in_addr_t ip, const struct weft_endpoint *ep, void *arg)
{
	struct at_ifindex *q = arg;

	if (ep->ifindex != q->ifindex)
		return 0;
	q->ip = ip;
	return 1;
}

in_addr_t datapath_endpoint_at(struct datapath *dp, uint32_t ifindex)
{
	struct at_ifindex q = { .ifindex = ifindex };

	return datapath_endpoint_foreach(dp, match_ifindex, &q) == 1 ? q.ip : 0;
}

int datapath_endpoint_foreach(struct datapath *dp,
			      int (*fn)(in_addr_t ip, const struct weft_endpoint *ep, void *arg),
			      void *arg)
{
	struct weft_endpoint ep;
	__be32 *keys = NULL;
	size_t n;
	int err;

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_ENDPOINTS), sizeof(*keys), WEFT_MAX_ENDPOINTS,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_ENDPOINTS), &keys[i], &ep) < 0)
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

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_IPCACHE), sizeof(*keys), WEFT_MAX_IPCACHE,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_IPCACHE), &keys[i], &e) < 0)
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

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_NODES), sizeof(*keys), WEFT_MAX_NODES,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_NODES), &keys[i], &e) < 0)
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

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_NODE_IPS), sizeof(*keys), WEFT_MAX_NODES,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_NODE_IPS), &keys[i], &v) < 0)
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
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_SERVICES), k, v, BPF_ANY);
}

int datapath_service_get(struct datapath *dp, const struct weft_svc_key *k, struct weft_svc_value *v)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_SERVICES), k, v);
}

int datapath_service_del(struct datapath *dp, const struct weft_svc_key *k)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_SERVICES), k);
}

int datapath_backend_put(struct datapath *dp, uint32_t id, const struct weft_backend *b)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_BACKENDS), &id, b, BPF_ANY);
}

int datapath_backend_get(struct datapath *dp, uint32_t id, struct weft_backend *b)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_BACKENDS), &id, b);
}

int datapath_backend_del(struct datapath *dp, uint32_t id)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_BACKENDS), &id);
}

int datapath_ct_get(struct datapath *dp, const struct weft_ct_key *k, struct weft_ct_entry *e)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_CT), k, e);
}

int datapath_ct_put(struct datapath *dp, const struct weft_ct_key *k, const struct weft_ct_entry *e)
{
	return datapath_map_update(dp_map(dp, DATAPATH_MAP_CT), k, e, BPF_ANY);
}

int datapath_ct_del(struct datapath *dp, const struct weft_ct_key *k)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_CT), k);
}

int datapath_affinity_del(struct datapath *dp, const struct weft_affinity_key *k)
{
	return datapath_map_delete(dp_map(dp, DATAPATH_MAP_AFFINITY), k);
}

int datapath_ct_opened_get(struct datapath *dp, in_addr_t client, uint64_t *n)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_CT_OPENED), &client, n);
}

int datapath_ct_closed_get(struct datapath *dp, in_addr_t client, uint64_t *n)
{
	return datapath_map_lookup(dp_map(dp, DATAPATH_MAP_CT_CLOSED), &client, n);
}

/* The counts of one table's clients (weft_ct's, weft_policy_ct's): the
 * programs add to opened, the agent to closed. */
int datapath_counts_closed_add(const struct datapath_map *closed, in_addr_t client, uint64_t n)
{
	uint64_t v = 0;
	int err = datapath_map_lookup(closed, &client, &v);

	if (err < 0 && err != -ENOENT)
		return err;
	v += n;
	return datapath_map_update(closed, &client, &v, BPF_ANY);
}

/* A program may count a new connection between the reads and the
 * deletes; it is then forgotten with the client (one connection held
 * and not counted, until the client's counts are forgotten again). */
int datapath_counts_forget(const struct datapath_map *opened, const struct datapath_map *closed,
			   in_addr_t client)
{
	uint64_t n_opened = 0, n_closed = 0;
	int err = datapath_map_lookup(opened, &client, &n_opened);

	if (err == 0 || err == -ENOENT)
		err = datapath_map_lookup(closed, &client, &n_closed);
	if (err < 0 && err != -ENOENT)
		return err;
	if (n_opened != n_closed)
		return -EBUSY;
	(void)datapath_map_delete(opened, &client);
	(void)datapath_map_delete(closed, &client);
	return 0;
}

int datapath_counts_closed_foreach(const struct datapath_map *closed,
				   int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg)
{
	in_addr_t *keys = NULL;
	uint64_t v;
	size_t n;
	int err;

	err = datapath_snapshot_keys(closed, sizeof(*keys), WEFT_MAX_CT_SOURCES, (void **)&keys,
				     &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(closed, &keys[i], &v) < 0)
			continue;
		err = fn(keys[i], v, arg);
	}
	free(keys);
	return err;
}

int datapath_ct_closed_add(struct datapath *dp, in_addr_t client, uint64_t n)
{
	return datapath_counts_closed_add(dp_map(dp, DATAPATH_MAP_CT_CLOSED), client, n);
}

int datapath_ct_source_forget(struct datapath *dp, in_addr_t client)
{
	return datapath_counts_forget(dp_map(dp, DATAPATH_MAP_CT_OPENED),
				      dp_map(dp, DATAPATH_MAP_CT_CLOSED), client);
}

int datapath_ct_closed_foreach(struct datapath *dp,
			       int (*fn)(in_addr_t client, uint64_t closed, void *arg), void *arg)
{
	return datapath_counts_closed_foreach(dp_map(dp, DATAPATH_MAP_CT_CLOSED), fn, arg);
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

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_SERVICES), sizeof(*keys), dp->max_services,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_SERVICES), &keys[i], &v) < 0)
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

	err = datapath_snapshot_keys(dp_map(dp, DATAPATH_MAP_BACKENDS), sizeof(*keys), dp->max_backends,
				     (void **)&keys, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && err == 0; i++) {
		if (datapath_map_lookup(dp_map(dp, DATAPATH_MAP_BACKENDS), &keys[i], &b) < 0)
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

static int batch_keywalk(const struct datapath_map *m, size_t ksize, size_t vsize, size_t max,
			 int (*fn)(const void *k, const void *v, void *arg), void *arg)
{
	unsigned char *keys = NULL, *v = malloc(vsize);
	size_t n;
	int err;

	if (!v)
		return -ENOMEM;
	err = datapath_snapshot_keys(m, ksize, max, (void **)&keys, &n);
	for (size_t i = 0; err == 0 && i < n; i++) {
		if (datapath_map_lookup(m, keys + i * ksize, v) < 0)
			continue;
		err = fn(keys + i * ksize, v, arg);
	}
	free(keys);
	free(v);
	return err;
}

int datapath_batch_foreach(const struct datapath_map *m, size_t ksize, size_t vsize, size_t max,
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
		int rc = datapath_map_lookup_batch(m, first ? NULL : &token, &next, keys, vals,
						   &count);

		if (rc < 0 && rc != -ENOENT) {
			/* no batch ops in this kernel, or a bucket larger than
			 * the buffer: walk the keys (fn may see an entry twice:
			 * the callers' checks are idempotent) */
			if (rc == -ENOSPC ||
			    (first && (rc == -EINVAL || rc == -EOPNOTSUPP || rc == -524 /* ENOTSUPP */)))
				err = batch_keywalk(m, ksize, vsize, max, fn, arg);
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

	return datapath_batch_foreach(dp_map(dp, DATAPATH_MAP_CT), sizeof(struct weft_ct_key),
				      sizeof(struct weft_ct_entry), dp->max_ct, ct_walk_one, &w);
}

/* ---- counters and trace (per-CPU maps) ---- */

/* A per-CPU lookup returns one value per possible CPU, each padded to 8
 * bytes.  *values is the caller's to free. */
static int percpu_lookup(const struct datapath_map *m, __u32 key, size_t value_size, void **values,
			 int *ncpus, size_t *stride)
{
	void *buf;
	int err = percpu_size(value_size, stride, ncpus);

	*values = NULL;
	if (err < 0)
		return err;
	buf = calloc((size_t)*ncpus, *stride);
	if (!buf)
		return -ENOMEM;
	err = datapath_map_lookup(m, &key, buf);
	if (err < 0) {
		free(buf);
		return err;
	}
	*values = buf;
	return 0;
}

int datapath_drops(struct datapath *dp, uint64_t out[WEFT_DROP_MAX])
{
	void *values = NULL;
	size_t stride;
	int ncpus, err = 0;

	for (__u32 reason = 0; reason < WEFT_DROP_MAX; reason++) {
		err = percpu_lookup(dp_map(dp, DATAPATH_MAP_DROPS), reason, sizeof(uint64_t), &values,
				    &ncpus, &stride);
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

/* In memory no program is loaded: -EOPNOTSUPP. */
int datapath_pod_prog_fd(struct datapath *dp)
{
	return dp->pod ? bpf_program__fd(dp->pod->progs.pod_ingress) : -EOPNOTSUPP;
}

int datapath_vxlan_prog_fd(struct datapath *dp)
{
	return dp->vxlan ? bpf_program__fd(dp->vxlan->progs.vxlan_ingress) : -EOPNOTSUPP;
}

int datapath_pod_egress_prog_fd(struct datapath *dp)
{
	return dp->pod_out ? bpf_program__fd(dp->pod_out->progs.pod_egress) : -EOPNOTSUPP;
}

int datapath_node_prog_fd(struct datapath *dp)
{
	return dp->node ? bpf_program__fd(dp->node->progs.node_ingress) : -EOPNOTSUPP;
}

int datapath_svc_prog_fd(struct datapath *dp)
{
	return dp->svc ? bpf_program__fd(dp->svc->progs.svc_egress) : -EOPNOTSUPP;
}

static int prog_fd(struct datapath *dp, enum datapath_prog prog)
{
	switch (prog) {
	case DATAPATH_PROG_POD: return datapath_pod_prog_fd(dp);
	case DATAPATH_PROG_VXLAN: return datapath_vxlan_prog_fd(dp);
	case DATAPATH_PROG_NODE: return datapath_node_prog_fd(dp);
	case DATAPATH_PROG_POD_EGRESS: return datapath_pod_egress_prog_fd(dp);
	case DATAPATH_PROG_SVC: return datapath_svc_prog_fd(dp);
	}
	return -EINVAL;
}

/* A __u32 of the program's .bss (the objects are loaded with
 * bpf_object__load: the skeleton's bss is the image before load, not the
 * map), at off, set to v: 0 or -errno. */
static int set_bss(struct datapath *dp, enum datapath_prog prog, size_t off, __u32 v)
{
	struct bpf_map *m = NULL;
	unsigned char value[64];
	__u32 key = 0;

	switch (prog) {
	case DATAPATH_PROG_POD: m = dp->pod ? dp->pod->maps.bss : NULL; break;
	case DATAPATH_PROG_VXLAN: m = dp->vxlan ? dp->vxlan->maps.bss : NULL; break;
	case DATAPATH_PROG_NODE: m = dp->node ? dp->node->maps.bss : NULL; break;
	case DATAPATH_PROG_POD_EGRESS: m = dp->pod_out ? dp->pod_out->maps.bss : NULL; break;
	case DATAPATH_PROG_SVC: m = dp->svc ? dp->svc->maps.bss : NULL; break;
	}
	if (!m || bpf_map__value_size(m) > sizeof(value) || off + sizeof(v) > bpf_map__value_size(m))
		return -EOPNOTSUPP;
	if (bpf_map_lookup_elem(bpf_map__fd(m), &key, value) < 0)
		return -errno;
	memcpy(value + off, &v, sizeof(v));
	return bpf_map_update_elem(bpf_map__fd(m), &key, value, BPF_ANY) < 0 ? -errno : 0;
}

/* Every program's .bss has the same globals (bpf/lib/trace.h, flow.h), in
 * the same order: pod_ingress's offsets are every program's. */
_Static_assert(offsetof(struct pod_ingress__bss, trace_armed) == offsetof(struct vxlan_ingress__bss, trace_armed) &&
	       offsetof(struct pod_ingress__bss, flows_on) == offsetof(struct svc_egress__bss, flows_on) &&
	       offsetof(struct pod_ingress__bss, flows_on) == offsetof(struct node_ingress__bss, flows_on) &&
	       offsetof(struct pod_ingress__bss, flows_on) == offsetof(struct pod_egress__bss, flows_on) &&
	       offsetof(struct pod_ingress__bss, flows_on) == offsetof(struct vxlan_ingress__bss, flows_on),
	       "the programs' .bss differ");

static int set_armed(struct datapath *dp, enum datapath_prog prog, __u32 v)
{
	return set_bss(dp, prog, offsetof(struct pod_ingress__bss, trace_armed), v);
}

int datapath_flows_listen(struct datapath *dp, bool on)
{
	int rc = 0;

	if (dp->flows_fd < 0)
		return -EOPNOTSUPP;
	for (int p = DATAPATH_PROG_POD; p <= DATAPATH_PROG_SVC; p++) {
		int err = set_bss(dp, (enum datapath_prog)p, offsetof(struct pod_ingress__bss, flows_on), on);

		if (err < 0 && rc == 0)
			rc = err;
	}
	return rc;
}

int datapath_flows_fd(struct datapath *dp)
{
	return dp->flows_fd;
}

int datapath_flows_suppressed(struct datapath *dp, uint64_t *n)
{
	int ncpus = libbpf_num_possible_cpus();
	struct weft_flow_state *v;
	__u32 key = 0;
	int rc = 0;

	*n = 0;
	if (dp->flows_fd < 0 || !dp->pod)
		return -EOPNOTSUPP;
	if (ncpus < 1)
		return ncpus < 0 ? ncpus : -EINVAL;
	if (!(v = calloc((size_t)ncpus, sizeof(*v))))	/* 48 bytes: a multiple of 8, as the kernel strides */
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(dp->pod->maps.weft_flow_state), &key, v) < 0)
		rc = -errno;
	for (int c = 0; rc == 0 && c < ncpus; c++)
		*n += v[c].suppressed;
	free(v);
	return rc;
}

int datapath_trace_run(struct datapath *dp, enum datapath_prog prog, uint32_t ifindex,
		       const uint32_t cb[2], const void *frame, size_t len, struct datapath_trace *out)
{
	struct __sk_buff ctx = { .mark = WEFT_TRACE_MARK, .ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = out->frame, .data_size_out = sizeof(out->frame), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);
	int fd = prog_fd(dp, prog), rc;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return fd;	/* in memory (hollow): nothing to run */
	if (len < 14 || len > sizeof(out->frame))
		return -EINVAL;
	if (cb) {
		ctx.cb[0] = cb[0];
		ctx.cb[1] = cb[1];
	}
	if ((rc = datapath_trace_reset(dp)) < 0)
		return rc;
	if ((rc = set_armed(dp, prog, 1)) < 0)	/* the program looks for the mark while armed only */
		return rc;
	rc = bpf_prog_test_run_opts(fd, &o) < 0 ? -errno : 0;
	if (set_armed(dp, prog, 0) < 0 && rc == 0)
		rc = -EIO;	/* (still armed: traffic pays a lookup, nothing worse) */
	if (rc < 0)
		return rc;
	out->action = (int)o.retval;
	out->len = o.data_size_out;
	rc = datapath_trace_read(dp, &out->steps);
	if (rc == 0 && !out->steps.tracing)
		rc = -ENOTRECOVERABLE;	/* the program did not know the run for a trace */
	(void)datapath_trace_reset(dp);	/* (the next packet on that CPU clears it anyway) */
	return rc;
}

/* count is summed over the CPUs; the other fields are those of the CPU
 * a trace ran on, else of the CPU that ran most (after a reset and one run: the one that ran). */
int datapath_trace_read(struct datapath *dp, struct weft_trace *out)
{
	const struct weft_trace *best = NULL;
	struct weft_trace t;
	void *values = NULL;
	size_t stride;
	uint32_t total = 0, most = 0;
	int ncpus, err;

	err = percpu_lookup(dp_map(dp, DATAPATH_MAP_TRACE), 0, sizeof(t), &values, &ncpus, &stride);
	if (err < 0)
		return err;
	memset(out, 0, sizeof(*out));
	for (int cpu = 0; cpu < ncpus; cpu++) {
		const struct weft_trace *v = (const void *)((char *)values + (size_t)cpu * stride);

		total += v->count;
		if (v->tracing) {	/* a trace run's CPU (trace_begin): its entry, whatever ran elsewhere */
			best = v;
			most = UINT32_MAX;
		} else if (v->count > most) {
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
	size_t stride;
	__u32 key = 0;
	void *zero;
	int n, err = percpu_size(sizeof(struct weft_trace), &stride, &n);

	if (err < 0)
		return err;
	zero = calloc((size_t)n, stride);
	if (!zero)
		return -ENOMEM;
	err = datapath_map_update(dp_map(dp, DATAPATH_MAP_TRACE), &key, zero, BPF_ANY);
	free(zero);
	return err;
}
