/*
 * layout.h — what HAProxy runs for a state: listeners (frontends) with the
 * contents of their maps and crt-lists, and backends with their server
 * slots.  The renderer writes a layout as files; the planner compares two.
 *
 * From the state (docs/lb.md) to HAProxy:
 *
 *   VS type              listener                 routes / certificates
 *   SharedL7             VIP:80  http             its members' host+path, its redirects
 *                        VIP:443 https (crt-list) its SNI children's members and certificates
 *   SNIChild             (its parent's VIP:443)
 *   Dedicated            VIP:80 http, VIP:443 https   its one host's members (and certificate)
 *   Passthrough          VIP:443 tcp, by SNI      host -> backend
 *   PassthroughInsecure  VIP:80  http             redirects only
 *   L4                   none (skipped by the state)
 *
 * One backend per (pool group, priority label): the members sharing a
 * route key.  In it, each member's pool has its own run of server slots
 * ("<pool>:<n>", n from 1), so per-pool TLS settings stay on the server
 * lines.  A pool's slot count is a power of two, at least min_slots (a
 * power of two from LB_SLOTS_MIN to LB_SLOTS_MAX; the engine's
 * --min-slots).  Slots past the count HAProxy runs are added at run time
 * (plan.h: "add server") up to LB_SLOTS_MAX per pool; more reloads.
 *
 * Slot assignment (lb_layout_build):
 *   prev == NULL  fresh: servers in sorted order from slot 1; counts as
 *                 small as they can be.
 *   prev given    sticky: a pool keeps its count unless its servers no
 *                 longer fit (then it doubles until they do), a server
 *                 keeps its slot, new servers take the lowest free slots.
 *                 So scaling changes slot contents, and growing adds
 *                 slots at the end; no slot moves or goes.  prev may be
 *                 the slots read back from disk (adopt.h).
 *
 * Weights (OpenShift router style): a member's ratio is split over its
 * pool's servers; weights are scaled so the largest is LB_WEIGHT_MAX; a
 * ratio above 0 never rounds to 0; ratio 0 gives weight 0 (no new
 * connections).
 *
 * A VS that cannot be laid out (an SNI child without its parent or its
 * certificate, a listener already taken, a backend name used twice, a TCP
 * pool behind an HTTP listener) is left out whole and named in the report;
 * the others are laid out.  Frontends and backends are sorted by name.
 *
 * Ownership: the layout owns everything in it; lb_layout_free() frees
 * (wiping certificate PEMs) and accepts NULL.  It borrows nothing from
 * the state.
 */
#ifndef WEFT_LB_LAYOUT_H
#define WEFT_LB_LAYOUT_H

#include "lb/state.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_SLOTS_MIN	1
/* The engine's --min-slots: one slot a server.  Growth is "add server" at
 * run time (no reload), and an empty slot costs HAProxy about 6 KiB: with
 * 8 a pool, 1,000 one-server pools cost 2.2x the memory of a hand-written
 * configuration (bench/lb). */
#define LB_SLOTS_DEFAULT 1
#define LB_SLOTS_MAX	1024
#define LB_WEIGHT_MAX	256
#define LB_FRONTENDS_MAX 4096
#define LB_BACKENDS_MAX	 65536

struct lb_slot {
	bool used;
	uint32_t ip;
	uint16_t port;
	uint16_t weight;
};

struct lb_slot_pool {
	char *pool;		/* the pool's name; servers are "<pool>:<n>" */
	enum lb_proto protocol;
	bool tls_verify;
	char *ca_file;		/* HTTPS with verify: "ca/<profile>-<hash>.pem" */
	char *ca_pem;
	bool monitor_http;
	uint32_t ratio;
	size_t n_slots;
	struct lb_slot *slots;
};

struct lb_backend {
	char *name;		/* "<pool group>:<label, '/' and '*' as '_'>" */
	bool tcp;		/* mode tcp (passthrough) */
	bool http_check;	/* option httpchk GET / */
	struct lb_slot_pool *pools;
	size_t n_pools;
};

enum lb_listener { LB_LISTEN_HTTP, LB_LISTEN_HTTPS, LB_LISTEN_TLS_PASSTHROUGH };

struct lb_route {
	char *key;		/* "host/path" (map_beg), or the host (passthrough) */
	char *backend;
};

struct lb_redirect_entry {
	char *host;
	char *location;		/* "https://host" */
	uint16_t code;
};

struct lb_sni {
	char *host;
	char *file;		/* "certs/<frontend>/<host>.pem" */
	char *pem;		/* certificate chain then key: a secret */
};

struct lb_frontend {
	char *name;		/* "<VS>:<port>" */
	uint32_t vip;
	uint16_t port;
	enum lb_listener kind;
	struct lb_route *routes;	/* longest key first, then by key */
	size_t n_routes;
	struct lb_redirect_entry *redirects;	/* by host */
	size_t n_redirects;
	struct lb_sni *snis;		/* by file */
	size_t n_snis;
};

struct lb_layout {
	struct lb_frontend *frontends;
	size_t n_frontends;
	struct lb_backend *backends;
	size_t n_backends;
};

/* Build the layout of state s (sticky to prev when given, see above),
 * pools with at least min_slots slots.  Each VS left out is one line
 * appended to report (may be NULL), naming it.  NULL with errno ENOMEM or
 * E2BIG (past the LB_*_MAX bounds), EINVAL (min_slots). */
struct lb_layout *lb_layout_build(const struct lb_state *s, const struct lb_layout *prev, size_t min_slots,
				  char *report, size_t len);
void lb_layout_free(struct lb_layout *l);

/* binary search by name; NULL when absent; borrowed from l */
const struct lb_backend *lb_layout_find_backend(const struct lb_layout *l, const char *name);
const struct lb_frontend *lb_layout_find_frontend(const struct lb_layout *l, const char *name);

/* how many slots n servers need: the next power of two, at least min */
size_t lb_slots_for(size_t n, size_t min);

/* servers in use over all backends (for the status) */
size_t lb_layout_servers(const struct lb_layout *l);

#endif
