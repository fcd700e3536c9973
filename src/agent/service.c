/*
 * service.c — Services and EndpointSlices in the data plane: the agent's
 * model of every service port, and the O(change) writes that keep
 * weft_services and weft_backends equal to it (layouts and the slot
 * scheme: bpf/weft_bpf.h, "Services"); conntrack expiry and purging.
 *
 * Model: one struct svc per Service (namespace/name): whether the Service
 * exists (what it asks for is in its ports), and its EndpointSlices (those labelled
 * kubernetes.io/service-name with its name, in its namespace: a slice is
 * found by its own namespace/name in T->slices and belongs to one svc at
 * a time), and per port (protocol, port):
 *
 *	svc_id      the port's ID (affinity key, backends' owner), kept for
 *	            the port's life
 *	frontends   cluster IP:port, VIP:port (LoadBalancer), 0:nodePort
 *	flags       frontend-independent WEFT_SVC_F_* (affinity, policies)
 *	backends    in slot order: slot i+1 of scope ALL is backends[i]
 *	local       IDs of the local backends, in LOCAL slot order
 *
 * Writes, with the function for each:
 *
 *	a slice changed    port_set_backends(): removed backends leave their
 *	                   slots (last moved in, count, last deleted), new ones
 *	                   are appended (slot, then count); untouched backends
 *	                   cost nothing.  The backends of a port are the
 *	                   union over its Service's slices (a backend listed
 *	                   in two is one): only the slice that changed came
 *	                   over the wire, the others are read from memory
 *	Service changed    port_sync_frontends(): a new frontend gets its slot
 *	                   arrays and then slot 0; a gone one loses slot 0 first
 *	                   (no new connections) and then its slots; changed
 *	                   flags rewrite slot 0 only
 *	Service deleted    every frontend removed, every backend deleted, its
 *	                   conntrack entries purged
 *
 * Restart: the maps are pinned and kept, and so are the connections in
 * weft_ct, which name their backends by ID.  So at start the agent reads
 * back the IDs in use (service_recover()): a port finds its svc_id by its
 * frontend's slot 0, a backend its ID by (svc_id, address, port); after the
 * first full list of both kinds, entries nobody claimed are deleted
 * (service_sweep()).
 *
 * A full map: the write fails, nothing already programmed is touched (a
 * slot array grows only after its slot is written), the service is marked
 * with the error (shown in the log and counted for the Node annotation),
 * and the next change of the service tries again.
 *
 * Locking: every entry point runs under agent.lock (the watch threads);
 * service_ct_purge() and the GC thread take no lock (conntrack is keyed
 * by the packets, the IDs they purge are a private copy).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "lib/monotime.h"
#include "agent/policy_ct.h"
#include "agent/conntrack.h"
#include "agent/service.h"
#include "lib/dlist.h"
#include "lib/hmap.h"
#include "lib/u64map.h"

#define SVC_FRONTENDS 3
#define AFFINITY_DEFAULT_S 10800

struct svc_backend {
	in_addr_t ip;
	uint16_t port;		/* host order */
	uint32_t id;
	bool local;
};

struct svc_frontend {
	in_addr_t addr;		/* 0 = NodePort */
	uint16_t port;		/* host order */
	uint16_t kind;		/* WEFT_SVC_F_CLUSTER_IP / NODE_PORT / LOAD_BALANCER */
	bool programmed;
};

struct svc_port {
	char name[64];
	uint8_t proto;
	uint16_t port;
	uint32_t svc_id;
	uint16_t flags;			/* WEFT_SVC_F_AFFINITY | ETP_LOCAL | ITP_LOCAL */
	uint32_t affinity_timeout;
	struct svc_frontend fe[SVC_FRONTENDS];
	size_t nfe;
	struct svc_backend *bk;
	size_t nbk, capbk;
	uint32_t *local;		/* backend IDs in LOCAL slot order */
	size_t nlocal, caplocal;
};

struct svc {
	struct hmap_node by_name;	/* in T->by_name */
	struct dlist due;		/* in T->due while its report may be owed */
	const char *ns, *name;		/* in text */
	bool has_service;		/* the Service exists (its ports say what it asks) */
	struct dlist slices;		/* its struct svc_slice, by in_svc */
	struct svc_port *ports;
	size_t nports;
	size_t idx;			/* in T->v */
	bool seen_service;		/* mark for the relist sweep */
	int error;			/* last map write error, 0 when programmed */
	char *reported;			/* the error the Service carries from us (NULL: none); owned */
	char text[];			/* ns, NUL, name, NUL: a thousand services hold their
					 * names, not 2 x 256 bytes each */
};

/* One EndpointSlice, as what the backends are made of (an agent holds
 * every slice of the cluster: a jansson tree would cost ten times its
 * text, and parsing every slice of a Service again at each change of
 * one would cost what the slices save), and the service it is of. */
struct slice_port {
	char name[64];
	uint8_t proto;			/* 0: not translated (SCTP...) */
	uint16_t port;			/* 0: none given */
};

struct slice_endpoint {
	in_addr_t ip;			/* its first address (0: none usable) */
	bool ready;			/* conditions.ready is not false */
	char *ns;			/* its targetRef's namespace when that differs from the slice's, else NULL */
};

struct svc_slice {
	struct hmap_node by_name;	/* in T->slices, by hash of (ns, name) */
	struct dlist in_svc;		/* in svc->slices */
	struct svc *svc;
	const char *ns, *name;		/* in text */
	struct slice_port *ports;	/* none unless addressType is IPv4 */
	size_t nports;
	struct slice_endpoint *eps;
	size_t neps;
	bool seen;			/* mark for the relist sweep */
	char text[];			/* ns, NUL, name, NUL */
};

struct service_table {
	struct svc **v;
	size_t n, cap;
	struct hmap by_name;		/* struct svc by hash of (ns, name) */
	struct hmap slices;		/* struct svc_slice by hash of (ns, name) */
	/* the services whose error or reported text changed since the last
	 * service_reports_take */
	struct dlist due;
	struct u64map svc_ids;		/* service port IDs in use (recovered ones too) */
	struct u64map backend_ids;	/* backend IDs in use (recovered ones too) */
	struct u64map rfe_idx;		/* hash of a frontend's slot-0 key -> index in rfe */
	struct u64map rbe_idx;		/* hash of (svc_id, addr, port, proto) -> index in rbe */
	uint32_t next_svc_id, next_backend_id;
	/* read back at start (service_recover), consumed as ports and
	 * backends claim them */
	struct recovered_fe { struct weft_svc_key k; uint32_t svc_id; bool claimed; } *rfe;
	size_t nrfe, caprfe;
	struct recovered_be { uint32_t id; struct weft_backend b; bool claimed; } *rbe;
	size_t nrbe, caprbe;
	bool recovering;
	/* backends removed since the last purge */
	uint32_t *purge;
	size_t npurge, cappurge;
	uint64_t map_full;		/* writes refused for lack of room */
	/* the live frontends by the hash of their slot-0 key, for the sweep */
	struct u64map live_fe;
};


/* ---- small helpers ---- */

#define OBJ_NAME_MAX 253		/* a name or namespace longer is none of ours */

/* A zeroed record of head bytes with ns and name after it, NUL-ended
 * (the record's text[]): *pns and *pname point there.  NULL: ENOMEM. */
static void *named_new(size_t head, const char *ns, const char *name, const char **pns, const char **pname)
{
	size_t lns = strlen(ns) + 1, lname = strlen(name) + 1;
	char *r = calloc(1, head + lns + lname);

	if (!r)
		return NULL;
	memcpy(r + head, ns, lns);
	memcpy(r + head + lns, name, lname);
	*pns = r + head;
	*pname = r + head + lns;
	return r;
}

/* What the Service carries from us := text (NULL or "": nothing); out
 * of memory it is kept as nothing. */
static void set_reported(struct svc *s, const char *text)
{
	free(s->reported);
	s->reported = text && text[0] ? strdup(text) : NULL;
}

static const char *reported(const struct svc *s)
{
	return s->reported ? s->reported : "";
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *nv;
	size_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	nv = realloc(*v, nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

static bool map_full_error(int err)
{
	return err == -E2BIG || err == -ENOSPC || err == -ENOMEM;
}

/* s's report may be owed: service_reports_take looks at it (and only at
 * the services so marked, not at every one). */
static void report_due(struct service_table *T, struct svc *s)
{
	if (!T->due.next)
		dlist_init(&T->due);	/* a table not made by service_table_create */
	if (!dlist_linked(&s->due))
		dlist_append(&T->due, &s->due);
}

static void note_error(struct service_table *T, struct svc *s, int err, const char *what)
{
	if (map_full_error(err))
		T->map_full++;
	if (s->error != err)
		LOG_ERR("service %s/%s: %s: %s%s", s->ns, s->name, what, strerror(-err),
			map_full_error(err) ? " (map full: raise the agent's capacity flags)" : "");
	s->error = err;
	report_due(T, s);
}

static void svc_error_text(const struct svc *s, char *buf, size_t len)
{
	if (!s->error)
		buf[0] = 0;
	else if (map_full_error(s->error))
		snprintf(buf, len, "not programmed: a service map is full "
			 "(raise weft-agent's --max-services / --max-backends)");
	else
		snprintf(buf, len, "not programmed: %s", strerror(-s->error));
}

/* After a change: the error stays until every frontend is programmed and
 * the last backend update went through. */
static void svc_recheck(struct service_table *T, struct svc *s, int backends_rc)
{
	if (backends_rc < 0)
		return;
	for (size_t i = 0; i < s->nports; i++)
		for (size_t f = 0; f < s->ports[i].nfe; f++)
			if (!s->ports[i].fe[f].programmed)
				return;
	if (s->error)
		report_due(T, s);
	s->error = 0;
}

static struct weft_svc_key fe_key(const struct svc_port *p, const struct svc_frontend *f,
				  uint8_t scope, uint16_t slot)
{
	struct weft_svc_key k;

	memset(&k, 0, sizeof(k));
	k.addr = f->addr;
	k.port = htons(f->port);
	k.proto = p->proto;
	k.scope = scope;
	k.slot = slot;
	return k;
}

static struct weft_svc_value slot0(const struct svc_port *p, const struct svc_frontend *f)
{
	struct weft_svc_value v;

	memset(&v, 0, sizeof(v));
	v.svc_id = p->svc_id;
	v.count = (uint16_t)p->nbk;
	v.local_count = (uint16_t)p->nlocal;
	v.flags = (uint16_t)(p->flags | f->kind);
	v.affinity_timeout = p->affinity_timeout;
	return v;
}

static struct weft_svc_value slot_of(uint32_t backend_id)
{
	struct weft_svc_value v;

	memset(&v, 0, sizeof(v));
	v.backend_id = backend_id;
	return v;
}

/* ---- IDs ---- */

static uint64_t key_hash(const struct weft_svc_key *k)
{
	return u64map_hash_bytes(k, sizeof(*k));
}

/* what identifies a backend across a restart */
struct backend_ident {
	uint32_t svc_id;
	in_addr_t addr;
	uint16_t port;		/* network order */
	uint8_t proto;
	uint8_t pad;
};

static uint64_t backend_hash(uint32_t svc_id, in_addr_t addr, uint16_t port_be, uint8_t proto)
{
	struct backend_ident b = { .svc_id = svc_id, .addr = addr, .port = port_be, .proto = proto };

	return u64map_hash_bytes(&b, sizeof(b));
}

static uint32_t recover_svc_id(struct service_table *T, const struct svc_port *p, const struct svc_frontend *f)
{
	struct weft_svc_key k = fe_key(p, f, WEFT_SCOPE_ALL, 0);
	uint64_t i;

	if (!u64map_get(&T->rfe_idx, key_hash(&k), &i) || memcmp(&T->rfe[i].k, &k, sizeof(k)) != 0)
		return 0;
	T->rfe[i].claimed = true;
	return T->rfe[i].svc_id;
}

static uint32_t new_svc_id(struct service_table *T)
{
	do {
		if (++T->next_svc_id == 0)
			T->next_svc_id = 1;
	} while (u64map_get(&T->svc_ids, T->next_svc_id, NULL));
	return T->next_svc_id;
}

static uint32_t new_backend_id(struct service_table *T, const struct svc_port *p, in_addr_t ip, uint16_t port)
{
	uint64_t i;

	if (u64map_get(&T->rbe_idx, backend_hash(p->svc_id, ip, htons(port), p->proto), &i)) {
		const struct weft_backend *b = &T->rbe[i].b;

		if (!T->rbe[i].claimed && b->svc_id == p->svc_id && b->addr == ip &&
		    b->port == htons(port) && b->proto == p->proto) {
			T->rbe[i].claimed = true;
			return T->rbe[i].id;
		}
	}
	do {
		if (++T->next_backend_id == 0)
			T->next_backend_id = 1;
	} while (u64map_get(&T->backend_ids, T->next_backend_id, NULL));
	return T->next_backend_id;
}

/* caller holds a->lock; the GC thread is woken for it */
static void queue_purge(struct agent *a, uint32_t id)
{
	struct service_table *T = a->svc;

	if (grow((void **)&T->purge, &T->cappurge, T->npurge, sizeof(*T->purge)) == 0) {
		T->purge[T->npurge++] = id;
		pthread_cond_signal(&a->gc_wake);
	}
}

/* ---- slot arrays ---- */

/* Write every slot and then slot 0 of frontend f. */
static int fe_write(struct agent *a, struct svc_port *p, struct svc_frontend *f)
{
	struct weft_svc_key k;
	struct weft_svc_value v;
	int rc;

	for (size_t i = 0; i < p->nbk; i++) {
		k = fe_key(p, f, WEFT_SCOPE_ALL, (uint16_t)(i + 1));
		v = slot_of(p->bk[i].id);
		if ((rc = datapath_service_put(a->dp, &k, &v)) < 0)
			return rc;
	}
	for (size_t i = 0; i < p->nlocal; i++) {
		k = fe_key(p, f, WEFT_SCOPE_LOCAL, (uint16_t)(i + 1));
		v = slot_of(p->local[i]);
		if ((rc = datapath_service_put(a->dp, &k, &v)) < 0)
			return rc;
	}
	k = fe_key(p, f, WEFT_SCOPE_ALL, 0);
	v = slot0(p, f);
	if ((rc = datapath_service_put(a->dp, &k, &v)) < 0)
		return rc;
	f->programmed = true;
	return 0;
}

/* Slot 0 first (no new connection finds it), then the slots. */
static void fe_delete(struct agent *a, const struct svc_port *p, struct svc_frontend *f)
{
	struct weft_svc_key k = fe_key(p, f, WEFT_SCOPE_ALL, 0);

	(void)datapath_service_del(a->dp, &k);
	for (size_t i = 0; i < p->nbk; i++) {
		k = fe_key(p, f, WEFT_SCOPE_ALL, (uint16_t)(i + 1));
		(void)datapath_service_del(a->dp, &k);
	}
	for (size_t i = 0; i < p->nlocal; i++) {
		k = fe_key(p, f, WEFT_SCOPE_LOCAL, (uint16_t)(i + 1));
		(void)datapath_service_del(a->dp, &k);
	}
	f->programmed = false;
}

static int fe_write_slot0(struct agent *a, struct svc_port *p)
{
	int rc = 0;

	for (size_t j = 0; j < p->nfe; j++) {
		struct weft_svc_key k = fe_key(p, &p->fe[j], WEFT_SCOPE_ALL, 0);
		struct weft_svc_value v = slot0(p, &p->fe[j]);
		int e;

		if (!p->fe[j].programmed)
			continue;
		e = datapath_service_put(a->dp, &k, &v);
		if (e < 0 && !rc)
			rc = e;
	}
	return rc;
}

/* Append backend b: its weft_backends entry, its slots, then the counts;
 * a backend on another node is counted in a->backends with namespace ns
 * (its VNID's: remote_backend_ref). */
static int backend_add(struct agent *a, struct svc_port *p, struct svc_backend b, const char *ns)
{
	struct service_table *T = a->svc;
	struct weft_backend wb = { .addr = b.ip, .port = htons(b.port), .proto = p->proto,
				   .flags = b.local ? WEFT_BE_F_LOCAL : 0, .svc_id = p->svc_id };
	int rc;

	if (p->nbk >= 65535 || (b.local && p->nlocal >= 65535))
		return -E2BIG;
	if (grow((void **)&p->bk, &p->capbk, p->nbk, sizeof(*p->bk)) < 0)
		return -ENOMEM;
	if (b.local && grow((void **)&p->local, &p->caplocal, p->nlocal, sizeof(*p->local)) < 0)
		return -ENOMEM;
	if ((rc = datapath_backend_put(a->dp, b.id, &wb)) < 0)
		return rc;
	for (size_t j = 0; j < p->nfe; j++) {
		struct weft_svc_key k = fe_key(p, &p->fe[j], WEFT_SCOPE_ALL, (uint16_t)(p->nbk + 1));
		struct weft_svc_value v = slot_of(b.id);

		if (!p->fe[j].programmed)
			continue;
		if ((rc = datapath_service_put(a->dp, &k, &v)) < 0)
			goto undo;
		if (b.local) {
			k = fe_key(p, &p->fe[j], WEFT_SCOPE_LOCAL, (uint16_t)(p->nlocal + 1));
			if ((rc = datapath_service_put(a->dp, &k, &v)) < 0)
				goto undo;
		}
	}
	if (u64map_put(&T->backend_ids, b.id, 1) < 0) {
		rc = -ENOMEM;
		goto undo;
	}
	if (!b.local && (rc = remote_backend_ref(a, b.ip, ns)) < 0) {
		(void)u64map_del(&T->backend_ids, b.id);
		goto undo;
	}
	p->bk[p->nbk++] = b;
	if (b.local)
		p->local[p->nlocal++] = b.id;
	return fe_write_slot0(a, p);
undo:	/* slots past the counts are invisible; the entry must go */
	(void)datapath_backend_del(a->dp, b.id);
	return rc;
}

/* Remove slot index i (0-based) of one scope: move the last in, write
 * the counts (done by the caller), delete the last. */
static void scope_move_last(struct agent *a, struct svc_port *p, uint8_t scope, size_t i,
			    size_t n, uint32_t last_id)
{
	for (size_t j = 0; j < p->nfe; j++) {
		struct weft_svc_key k = fe_key(p, &p->fe[j], scope, (uint16_t)(i + 1));
		struct weft_svc_value v = slot_of(last_id);

		if (p->fe[j].programmed && i + 1 < n)
			(void)datapath_service_put(a->dp, &k, &v);
	}
}

static void scope_delete_slot(struct agent *a, struct svc_port *p, uint8_t scope, size_t slot)
{
	for (size_t j = 0; j < p->nfe; j++) {
		struct weft_svc_key k = fe_key(p, &p->fe[j], scope, (uint16_t)slot);

		if (p->fe[j].programmed)
			(void)datapath_service_del(a->dp, &k);
	}
}

static void backend_remove(struct agent *a, struct svc_port *p, size_t i)
{
	struct service_table *T = a->svc;
	struct svc_backend b = p->bk[i];
	size_t n = p->nbk, li = p->nlocal, nl = p->nlocal;

	scope_move_last(a, p, WEFT_SCOPE_ALL, i, n, p->bk[n - 1].id);
	p->bk[i] = p->bk[n - 1];
	p->nbk--;
	if (b.local) {
		for (li = 0; li < nl && p->local[li] != b.id; li++)
			;
		if (li < nl) {
			scope_move_last(a, p, WEFT_SCOPE_LOCAL, li, nl, p->local[nl - 1]);
			p->local[li] = p->local[nl - 1];
			p->nlocal--;
		}
	}
	(void)fe_write_slot0(a, p);
	scope_delete_slot(a, p, WEFT_SCOPE_ALL, n);
	if (b.local && li < nl)
		scope_delete_slot(a, p, WEFT_SCOPE_LOCAL, nl);
	(void)datapath_backend_del(a->dp, b.id);
	(void)u64map_del(&T->backend_ids, b.id);
	if (!b.local)
		remote_backend_unref(a, b.ip);
	queue_purge(a, b.id);
}

/* ---- from the objects ---- */

static uint8_t proto_of(const char *s)
{
	if (!s || strcmp(s, "TCP") == 0)
		return IPPROTO_TCP;
	if (strcmp(s, "UDP") == 0)
		return IPPROTO_UDP;
	return 0;	/* SCTP and others: not translated */
}

static in_addr_t ip_of(const char *s)
{
	struct in_addr ia;

	return s && inet_pton(AF_INET, s, &ia) == 1 ? ia.s_addr : 0;
}

static bool is_local(struct agent *a, in_addr_t ip)
{
	return cidr_contains_ip(&a->subnet, ntohl(ip));
}

/* The key of a backend address and port in the indexes below. */
static uint64_t addr_port(in_addr_t ip, uint16_t port)
{
	return (uint64_t)ip << 16 | port;
}

/* The port number slice sl gives service port (name, proto), or 0. */
static uint16_t slice_port(const struct svc_slice *sl, const char *name, uint8_t proto)
{
	for (size_t j = 0; j < sl->nports; j++)
		if (sl->ports[j].proto == proto && strcmp(sl->ports[j].name, name) == 0)
			return sl->ports[j].port;
	return 0;
}

/* The backends of service port (name, proto) in s's EndpointSlices (each
 * endpoint once, even when two slices list it), and for each the
 * namespace of the pod it is (targetRef, else the slice's own; borrowed
 * from the slices, in *ns_out, freed by the caller).  An endpoint is a
 * backend when it is ready (slice_read). */
static int desired_backends(struct agent *a, const struct svc *s, const char *name, uint8_t proto,
			    struct svc_backend **out, const char ***ns_out, size_t *n)
{
	struct u64map seen = { 0 };
	struct svc_backend *v = NULL;
	const char **vns = NULL;
	size_t cap = 0, capns = 0;

	*out = NULL;
	*ns_out = NULL;
	*n = 0;
	for (struct dlist *l = dlist_first(&s->slices); l; l = dlist_next(&s->slices, l)) {
		const struct svc_slice *sl = DLIST_ENTRY(l, struct svc_slice, in_svc);
		uint16_t port = slice_port(sl, name, proto);

		for (size_t k = 0; port && k < sl->neps; k++) {
			const struct slice_endpoint *ep = &sl->eps[k];

			if (!ep->ready || !ep->ip || u64map_get(&seen, addr_port(ep->ip, port), NULL))
				continue;	/* not ready, no address, or listed twice */
			if (grow((void **)&v, &cap, *n, sizeof(*v)) < 0 ||
			    grow((void **)&vns, &capns, *n, sizeof(*vns)) < 0 ||
			    u64map_put(&seen, addr_port(ep->ip, port), 1) < 0) {
				u64map_free(&seen);
				free(v);
				free(vns);
				return -ENOMEM;
			}
			vns[*n] = ep->ns ? ep->ns : sl->ns;
			v[(*n)++] = (struct svc_backend){ .ip = ep->ip, .port = port, .local = is_local(a, ep->ip) };
		}
	}
	u64map_free(&seen);
	*out = v;
	*ns_out = vns;
	return 0;
}

/* Make p's backends equal to what s's slices say.  O(backends): both
 * sides are indexed by address and port; no object is parsed. */
static int port_set_backends(struct agent *a, struct svc *s, struct svc_port *p)
{
	struct service_table *T = a->svc;
	struct svc_backend *want = NULL;
	const char **want_ns = NULL;
	struct u64map wanted = { 0 }, have = { 0 };
	size_t nwant = 0;
	uint64_t j;
	int rc = 0;

	if ((rc = desired_backends(a, s, p->name, p->proto, &want, &want_ns, &nwant)) < 0)
		return rc;
	for (j = 0; j < nwant; j++)
		if (u64map_put(&wanted, addr_port(want[j].ip, want[j].port), j) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	for (size_t i = 0; i < p->nbk;) {	/* gone, or moved between local and not */
		if (u64map_get(&wanted, addr_port(p->bk[i].ip, p->bk[i].port), &j) &&
		    want[j].local == p->bk[i].local)
			i++;
		else
			backend_remove(a, p, i);	/* moves the last one into i */
	}
	for (size_t i = 0; i < p->nbk; i++)
		if (u64map_put(&have, addr_port(p->bk[i].ip, p->bk[i].port), 1) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	for (j = 0; j < nwant; j++) {
		if (u64map_get(&have, addr_port(want[j].ip, want[j].port), NULL))
			continue;
		want[j].id = new_backend_id(T, p, want[j].ip, want[j].port);
		rc = backend_add(a, p, want[j], want_ns[j]);
		if (rc < 0) {
			note_error(a->svc, s, rc, "adding a backend");
			break;
		}
	}
out:
	u64map_free(&wanted);
	u64map_free(&have);
	free(want);
	free(want_ns);
	return rc;
}

/* The frontends, flags and ports a Service asks for. */
static int desired_ports(struct jval svc, struct svc_port **out, size_t *n)
{
	struct jval spec = jval_get(svc, "spec"), ports, ing;
	const char *cip = jval_str(jval_get(spec, "clusterIP"));
	const char *type = jval_str(jval_get(spec, "type"));
	const char *aff = jval_str(jval_get(spec, "sessionAffinity"));
	const char *etp = jval_str(jval_get(spec, "externalTrafficPolicy"));
	const char *itp = jval_str(jval_get(spec, "internalTrafficPolicy"));
	in_addr_t cluster_ip = ip_of(cip), vip = 0;
	struct svc_port *v;
	uint16_t flags = 0;

	*out = NULL;
	*n = 0;
	if (!cluster_ip)
		return 0;	/* headless (None) or not allocated yet: untranslated */
	ing = jval_path(svc, "status.loadBalancer.ingress");
	if (type && strcmp(type, "LoadBalancer") == 0 && jval_is_array(ing) && jval_size(ing))
		vip = ip_of(jval_str(jval_get(jval_at(ing, 0), "ip")));
	if (aff && strcmp(aff, "ClientIP") == 0)
		flags |= WEFT_SVC_F_AFFINITY;
	if (etp && strcmp(etp, "Local") == 0)
		flags |= WEFT_SVC_F_ETP_LOCAL;
	if (itp && strcmp(itp, "Local") == 0)
		flags |= WEFT_SVC_F_ITP_LOCAL;
	ports = jval_array(jval_get(spec, "ports"));
	v = calloc(jval_size(ports) ? jval_size(ports) : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (struct jval pt = jval_first(ports); jval_ok(pt); pt = jval_next(pt)) {
		struct svc_port *p = &v[*n];
		const char *name = jval_str(jval_get(pt, "name"));
		int64_t port = jval_integer(jval_get(pt, "port"));
		int64_t np = jval_integer(jval_get(pt, "nodePort"));
		p->proto = proto_of(jval_str(jval_get(pt, "protocol")));
		if (!p->proto || port <= 0 || port > 65535)
			continue;
		snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
		p->port = (uint16_t)port;
		p->flags = flags;
		p->affinity_timeout = AFFINITY_DEFAULT_S;
		if (flags & WEFT_SVC_F_AFFINITY) {
			int64_t t = jval_integer(jval_path(spec, "sessionAffinityConfig.clientIP.timeoutSeconds"));

			if (t > 0 && t <= 86400)
				p->affinity_timeout = (uint32_t)t;
		}
		p->fe[p->nfe++] = (struct svc_frontend){ .addr = cluster_ip, .port = p->port,
							 .kind = WEFT_SVC_F_CLUSTER_IP };
		if (vip)
			p->fe[p->nfe++] = (struct svc_frontend){ .addr = vip, .port = p->port,
								 .kind = WEFT_SVC_F_LOAD_BALANCER };
		if (np > 0 && np <= 65535 && type &&
		    (strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0))
			p->fe[p->nfe++] = (struct svc_frontend){ .addr = 0, .port = (uint16_t)np,
								 .kind = WEFT_SVC_F_NODE_PORT };
		(*n)++;
	}
	*out = v;
	return 0;
}

static bool fe_equal(const struct svc_frontend *x, const struct svc_frontend *y)
{
	return x->addr == y->addr && x->port == y->port && x->kind == y->kind;
}

static void port_free(struct agent *a, struct svc_port *p)
{
	struct service_table *T = a->svc;
	while (p->nbk)
		backend_remove(a, p, p->nbk - 1);
	for (size_t j = 0; j < p->nfe; j++)
		if (p->fe[j].programmed)
			fe_delete(a, p, &p->fe[j]);
	(void)u64map_del(&T->svc_ids, p->svc_id);
	free(p->bk);
	free(p->local);
	memset(p, 0, sizeof(*p));
}

/* Bring s's ports to what its Service (NULL: none) and slices say. */
static void svc_sync(struct agent *a, struct svc *s, struct jval service)
{
	struct service_table *T = a->svc;
	struct svc_port *want = NULL;
	size_t nwant = 0;
	int rc, backends_rc = 0;

	s->has_service = jval_ok(service);
	if (s->has_service && desired_ports(service, &want, &nwant) < 0) {
		note_error(a->svc, s, -ENOMEM, "reading the service");
		return;
	}
	/* ports gone */
	for (size_t i = 0; i < s->nports;) {
		bool keep = false;

		for (size_t j = 0; j < nwant && !keep; j++)
			keep = want[j].proto == s->ports[i].proto && want[j].port == s->ports[i].port;
		if (keep) {
			i++;
			continue;
		}
		port_free(a, &s->ports[i]);
		s->ports[i] = s->ports[--s->nports];
	}
	for (size_t j = 0; j < nwant; j++) {
		struct svc_port *p = NULL;

		for (size_t i = 0; i < s->nports && !p; i++)
			if (s->ports[i].proto == want[j].proto && s->ports[i].port == want[j].port)
				p = &s->ports[i];
		if (!p) {
			struct svc_port *np = realloc(s->ports, (s->nports + 1) * sizeof(*np));

			if (!np) {
				note_error(a->svc, s, -ENOMEM, "adding a port");
				break;
			}
			s->ports = np;
			p = &s->ports[s->nports++];
			*p = want[j];
			p->nfe = 0;
			p->svc_id = 0;
			for (size_t f = 0; f < want[j].nfe && !p->svc_id; f++)
				p->svc_id = T->recovering ? recover_svc_id(T, &want[j], &want[j].fe[f]) : 0;
			if (!p->svc_id)
				p->svc_id = new_svc_id(T);
			if (u64map_put(&T->svc_ids, p->svc_id, 1) < 0) {
				note_error(a->svc, s, -ENOMEM, "adding a port");
				s->nports--;
				break;
			}
		}
		snprintf(p->name, sizeof(p->name), "%s", want[j].name);
		if (p->flags != want[j].flags || p->affinity_timeout != want[j].affinity_timeout) {
			p->flags = want[j].flags;
			p->affinity_timeout = want[j].affinity_timeout;
			if ((rc = fe_write_slot0(a, p)) < 0)
				note_error(a->svc, s, rc, "updating the service entry");
		}
		/* backends before new frontends: a new frontend starts complete */
		rc = port_set_backends(a, s, p);
		if (rc < 0)
			backends_rc = rc;
		/* frontends gone */
		for (size_t f = 0; f < p->nfe;) {
			bool keep = false;

			for (size_t g = 0; g < want[j].nfe && !keep; g++)
				keep = fe_equal(&p->fe[f], &want[j].fe[g]);
			if (keep) {
				f++;
				continue;
			}
			if (p->fe[f].programmed)
				fe_delete(a, p, &p->fe[f]);
			p->fe[f] = p->fe[--p->nfe];
		}
		/* frontends new (or not programmed yet: a full map last time) */
		for (size_t g = 0; g < want[j].nfe; g++) {
			struct svc_frontend *f = NULL;

			for (size_t h = 0; h < p->nfe && !f; h++)
				if (fe_equal(&p->fe[h], &want[j].fe[g]))
					f = &p->fe[h];
			if (!f) {
				f = &p->fe[p->nfe++];
				*f = want[j].fe[g];
				f->programmed = false;
			}
			if (!f->programmed && (rc = fe_write(a, p, f)) < 0) {
				note_error(a->svc, s, rc, "adding a frontend");
				fe_delete(a, p, f);
			}
		}
	}
	free(want);
	svc_recheck(a->svc, s, backends_rc);
}

/* ---- the table ---- */

static uint64_t name_hash(const char *ns, const char *name)
{
	return hmap_hash_str(hmap_hash_str(HMAP_HASH_SEED, ns), name);
}

/* By the name index (hmap.h: names that share a hash are compared). */
static struct svc *svc_find(struct service_table *T, const char *ns, const char *name, bool create)
{
	uint64_t h = name_hash(ns, name);
	const char *s_ns, *s_name;
	struct svc *s;

	for (struct hmap_node *e = hmap_first_with(&T->by_name, h); e; e = hmap_next_with(e)) {
		s = HMAP_ENTRY(e, struct svc, by_name);
		if (strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
			return s;
	}
	if (!create || strlen(ns) > OBJ_NAME_MAX || strlen(name) > OBJ_NAME_MAX ||
	    grow((void **)&T->v, &T->cap, T->n, sizeof(*T->v)) < 0)
		return NULL;
	s = named_new(offsetof(struct svc, text), ns, name, &s_ns, &s_name);
	if (!s)
		return NULL;
	s->ns = s_ns;
	s->name = s_name;
	dlist_init(&s->slices);
	if (hmap_insert(&T->by_name, &s->by_name, h) < 0) {
		free(s);
		return NULL;
	}
	s->idx = T->n;
	T->v[T->n++] = s;
	return s;
}

static void svc_drop_if_empty(struct agent *a, struct svc *s)
{
	struct service_table *T = a->svc;

	if (s->has_service || !dlist_empty(&s->slices))
		return;
	for (size_t i = 0; i < s->nports; i++)
		port_free(a, &s->ports[i]);
	free(s->ports);
	(void)hmap_remove(&T->by_name, &s->by_name);
	dlist_remove(&s->due);
	T->v[s->idx] = T->v[--T->n];
	T->v[s->idx]->idx = s->idx;
	free(s->reported);
	free(s);
}

void service_apply(struct agent *a, struct jval obj)
{
	struct svc *s = svc_find(a->svc, obj_view_namespace(obj), obj_view_name(obj) ? obj_view_name(obj) : "",
				 true);

	if (!s)
		return;
	s->seen_service = true;
	svc_sync(a, s, obj);
	/* what the object says of this node is what it carries */
	{
		char key[320];
		const char *said;

		snprintf(key, sizeof(key), "%s%s", AGENT_ANN_UNPROGRAMMED, a->o.node);
		said = jval_str(jval_get(jval_path(obj, "metadata.annotations"), key));
		set_reported(s, said);
	}
	report_due(a->svc, s);
}

void service_remove(struct agent *a, struct jval obj)
{
	struct svc *s = svc_find(a->svc, obj_view_namespace(obj), obj_view_name(obj) ? obj_view_name(obj) : "",
				 false);

	if (!s)
		return;
	svc_sync(a, s, jval_none());
	svc_drop_if_empty(a, s);
}

/* Every port of s to what its slices now say. */
static void svc_sync_backends(struct agent *a, struct svc *s)
{
	int rc, worst = 0;

	for (size_t i = 0; i < s->nports; i++)
		if ((rc = port_set_backends(a, s, &s->ports[i])) < 0)
			worst = rc;
	svc_recheck(a->svc, s, worst);
}

/* What sl holds of a slice: its ports and endpoints. */
static void slice_clear(struct svc_slice *sl)
{
	for (size_t k = 0; k < sl->neps; k++)
		free(sl->eps[k].ns);
	free(sl->eps);
	free(sl->ports);
	sl->eps = NULL;
	sl->ports = NULL;
	sl->neps = sl->nports = 0;
}

/* obj's ports and endpoints into sl (cleared first): 0 or -ENOMEM.  An
 * endpoint is ready unless its conditions say ready: false (no condition
 * means ready, as the API says); of its addresses the first is used
 * (they are one endpoint's, as kube-proxy does).  A slice of another
 * addressType than IPv4 gives nothing. */
static int slice_read(struct svc_slice *sl, struct jval obj)
{
	const char *type = jval_str(jval_get(obj, "addressType"));
	struct jval ports = jval_array(jval_get(obj, "ports")), eps = jval_array(jval_get(obj, "endpoints"));

	slice_clear(sl);
	if (!type || strcmp(type, "IPv4") != 0)
		return 0;
	sl->ports = calloc(jval_size(ports) + 1, sizeof(*sl->ports));
	sl->eps = calloc(jval_size(eps) + 1, sizeof(*sl->eps));
	if (!sl->ports || !sl->eps) {
		slice_clear(sl);
		return -ENOMEM;
	}
	for (struct jval x = jval_first(ports); jval_ok(x); x = jval_next(x)) {
		const char *name = jval_str(jval_get(x, "name"));
		int64_t port = jval_integer(jval_get(x, "port"));
		struct slice_port *p = &sl->ports[sl->nports];

		p->proto = proto_of(jval_str(jval_get(x, "protocol")));
		if (!p->proto || port <= 0 || port > 65535 || (name && strlen(name) >= sizeof(p->name)))
			continue;
		snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
		p->port = (uint16_t)port;
		sl->nports++;
	}
	for (struct jval x = jval_first(eps); jval_ok(x); x = jval_next(x)) {
		struct jval ref = jval_get(x, "targetRef");
		const char *kind = jval_str(jval_get(ref, "kind"));
		const char *ns = jval_str(jval_get(ref, "namespace"));
		struct slice_endpoint *ep = &sl->eps[sl->neps];

		ep->ip = ip_of(jval_str(jval_at(jval_get(x, "addresses"), 0)));
		if (!ep->ip)
			continue;
		ep->ready = !jval_is_false(jval_path(x, "conditions.ready"));
		if (kind && strcmp(kind, "Pod") == 0 && ns && ns[0] && strcmp(ns, sl->ns) != 0 &&
		    !(ep->ns = strdup(ns))) {
			slice_clear(sl);
			return -ENOMEM;
		}
		sl->neps++;
	}
	return 0;
}

static struct svc_slice *slice_find(struct service_table *T, const char *ns, const char *name)
{
	uint64_t h = name_hash(ns, name);

	for (struct hmap_node *e = hmap_first_with(&T->slices, h); e; e = hmap_next_with(e)) {
		struct svc_slice *sl = HMAP_ENTRY(e, struct svc_slice, by_name);

		if (strcmp(sl->ns, ns) == 0 && strcmp(sl->name, name) == 0)
			return sl;
	}
	return NULL;
}

/* Take sl out of its service (whose backends are then brought level)
 * and free it. */
static void slice_drop(struct agent *a, struct svc_slice *sl)
{
	struct svc *s = sl->svc;

	(void)hmap_remove(&a->svc->slices, &sl->by_name);
	dlist_remove(&sl->in_svc);
	slice_clear(sl);
	free(sl);
	svc_sync_backends(a, s);
	svc_drop_if_empty(a, s);
}

/* The service an EndpointSlice is of: its kubernetes.io/service-name
 * label (NULL: none, the slice is no service's). */
static const char *slice_service(struct jval obj)
{
	const char *svc = jval_str(jval_get(jval_path(obj, "metadata.labels"), SLICE_SERVICE_LABEL));

	return svc && svc[0] ? svc : NULL;
}

void endpointslice_apply(struct agent *a, struct jval obj)
{
	struct service_table *T = a->svc;
	const char *ns = obj_view_namespace(obj), *name = obj_view_name(obj), *svc_name = slice_service(obj);
	struct svc_slice *sl;
	struct svc *s;

	if (!name || strlen(name) > OBJ_NAME_MAX || strlen(ns) > OBJ_NAME_MAX)
		return;
	sl = slice_find(T, ns, name);
	if (sl && (!svc_name || strcmp(sl->svc->name, svc_name) != 0)) {
		slice_drop(a, sl);	/* its label changed: no longer that service's */
		sl = NULL;
	}
	if (!svc_name || !(s = svc_find(T, ns, svc_name, true)))
		return;
	if (!sl) {
		const char *sl_ns, *sl_name;

		sl = named_new(offsetof(struct svc_slice, text), ns, name, &sl_ns, &sl_name);
		if (!sl || hmap_insert(&T->slices, &sl->by_name, name_hash(ns, name)) < 0) {
			free(sl);
			note_error(T, s, -ENOMEM, "keeping an EndpointSlice");
			svc_drop_if_empty(a, s);
			return;
		}
		sl->ns = sl_ns;
		sl->name = sl_name;
		sl->svc = s;
		dlist_append(&s->slices, &sl->in_svc);
	}
	sl->seen = true;
	if (slice_read(sl, obj) < 0)
		note_error(T, s, -ENOMEM, "keeping an EndpointSlice");	/* (its endpoints are gone) */
	svc_sync_backends(a, s);
}

void endpointslice_remove(struct agent *a, struct jval obj)
{
	const char *name = obj_view_name(obj);
	struct svc_slice *sl = name ? slice_find(a->svc, obj_view_namespace(obj), name) : NULL;

	if (sl)
		slice_drop(a, sl);
}

void service_listed(struct agent *a)
{
	struct service_table *T = a->svc;

	for (size_t i = 0; i < T->n;) {
		struct svc *s = T->v[i];

		if (!s->seen_service && s->has_service)
			svc_sync(a, s, jval_none());
		s->seen_service = false;
		if (!s->has_service && dlist_empty(&s->slices)) {
			svc_drop_if_empty(a, s);	/* (moves the last one into i) */
			continue;
		}
		i++;
	}
}

/* After a full list of the slices: those it did not have are gone. */
void endpointslice_listed(struct agent *a)
{
	struct service_table *T = a->svc;
	struct hmap_node *e = hmap_first(&T->slices), *next;

	for (; e; e = next) {
		struct svc_slice *sl = HMAP_ENTRY(e, struct svc_slice, by_name);

		next = hmap_next(&T->slices, e);
		if (!sl->seen)
			slice_drop(a, sl);
		else
			sl->seen = false;
	}
}

/* ---- restart: recover IDs, sweep what nobody claimed ---- */

static int recover_fe(const struct weft_svc_key *k, const struct weft_svc_value *v, void *arg)
{
	struct service_table *T = arg;

	if (k->slot != 0 || k->scope != WEFT_SCOPE_ALL)
		return 0;
	if (grow((void **)&T->rfe, &T->caprfe, T->nrfe, sizeof(*T->rfe)) < 0 ||
	    u64map_put(&T->rfe_idx, key_hash(k), T->nrfe) < 0 ||
	    u64map_put(&T->svc_ids, v->svc_id, 1) < 0)
		return -ENOMEM;
	T->rfe[T->nrfe++] = (struct recovered_fe){ .k = *k, .svc_id = v->svc_id };
	return 0;
}

static int recover_be(uint32_t id, const struct weft_backend *b, void *arg)
{
	struct service_table *T = arg;

	if (grow((void **)&T->rbe, &T->caprbe, T->nrbe, sizeof(*T->rbe)) < 0 ||
	    u64map_put(&T->rbe_idx, backend_hash(b->svc_id, b->addr, b->port, b->proto), T->nrbe) < 0 ||
	    u64map_put(&T->backend_ids, id, 1) < 0)
		return -ENOMEM;
	T->rbe[T->nrbe++] = (struct recovered_be){ .id = id, .b = *b };
	return 0;
}

int service_recover(struct agent *a)
{
	struct service_table *T = a->svc;
	int rc;

	T->recovering = true;
	rc = datapath_service_foreach(a->dp, recover_fe, a->svc);
	if (rc == 0)
		rc = datapath_backend_foreach(a->dp, recover_be, a->svc);
	if (T->nrfe || T->nrbe)
		LOG_INFO("services: %zu frontends and %zu backends found pinned: their IDs are kept",
			 T->nrfe, T->nrbe);
	return rc;
}

static bool fe_live(struct service_table *T, const struct weft_svc_key *k)
{
	struct weft_svc_key k0 = *k;
	const struct svc_port *p;
	uint64_t v;

	k0.scope = WEFT_SCOPE_ALL;
	k0.slot = 0;
	if (!u64map_get(&T->live_fe, key_hash(&k0), &v))
		return false;
	p = (const struct svc_port *)(uintptr_t)v;
	for (size_t f = 0; f < p->nfe; f++) {
		struct weft_svc_key kf = fe_key(p, &p->fe[f], WEFT_SCOPE_ALL, 0);

		if (!p->fe[f].programmed || memcmp(&kf, &k0, sizeof(kf)) != 0)
			continue;
		if (k->slot == 0)
			return k->scope == WEFT_SCOPE_ALL;
		return k->slot <= (k->scope == WEFT_SCOPE_ALL ? p->nbk : p->nlocal);
	}
	return false;
}

static int sweep_fe(const struct weft_svc_key *k, const struct weft_svc_value *v, void *arg)
{
	struct agent *a = arg;

	(void)v;
	if (!fe_live(a->svc, k))
		(void)datapath_service_del(a->dp, k);
	return 0;
}

static int sweep_be(uint32_t id, const struct weft_backend *b, void *arg)
{
	struct agent *a = arg;
	struct service_table *T = a->svc;

	(void)b;
	if (!u64map_get(&T->backend_ids, id, NULL)) {
		(void)datapath_backend_del(a->dp, id);
		queue_purge(a, id);
	}
	return 0;
}

void service_sweep(struct agent *a)
{
	struct service_table *T = a->svc;
	if (!T->recovering)
		return;
	for (size_t i = 0; i < T->nrbe; i++)	/* nobody claimed them: not in use */
		if (!T->rbe[i].claimed)
			(void)u64map_del(&T->backend_ids, T->rbe[i].id);
	for (size_t i = 0; i < T->nrfe; i++)
		if (!T->rfe[i].claimed)
			(void)u64map_del(&T->svc_ids, T->rfe[i].svc_id);
	for (size_t i = 0; i < T->n; i++)
		for (size_t j = 0; j < T->v[i]->nports; j++) {
			const struct svc_port *p = &T->v[i]->ports[j];

			for (size_t f = 0; f < p->nfe; f++) {
				struct weft_svc_key k = fe_key(p, &p->fe[f], WEFT_SCOPE_ALL, 0);

				if (u64map_put(&T->live_fe, key_hash(&k), (uintptr_t)p) < 0)
					goto out;	/* no memory: keep everything */
			}
		}
	(void)datapath_service_foreach(a->dp, sweep_fe, a);
	(void)datapath_backend_foreach(a->dp, sweep_be, a);
out:
	u64map_free(&T->live_fe);
	free(T->rfe);
	free(T->rbe);
	u64map_free(&T->rfe_idx);
	u64map_free(&T->rbe_idx);
	T->rfe = NULL;
	T->rbe = NULL;
	T->nrfe = T->caprfe = T->nrbe = T->caprbe = 0;
	T->recovering = false;
}

/* ---- conntrack ---- */

struct purge_ctx {
	struct agent *a;
	uint32_t *ids;
	size_t n;
	uint32_t now;
	size_t deleted;
};

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static int purge_one(const struct weft_ct_key *k, const struct weft_ct_entry *e, void *arg)
{
	struct purge_ctx *c = arg;

	if (c->n && bsearch(&e->backend_id, c->ids, c->n, sizeof(*c->ids), cmp_u32)) {
		(void)datapath_ct_del(c->a->dp, k);
		c->deleted++;
	}
	return 0;
}

/* Delete the conntrack entries of the backends removed since the last
 * call.  Takes the lock only to take the list. */
void service_ct_purge(struct agent *a)
{
	struct service_table *T = a->svc;
	struct purge_ctx c = { .a = a };

	pthread_mutex_lock(&a->lock);
	c.ids = T->purge;
	c.n = T->npurge;
	T->purge = NULL;
	T->npurge = T->cappurge = 0;
	pthread_mutex_unlock(&a->lock);
	if (!c.n) {
		free(c.ids);
		return;
	}
	qsort(c.ids, c.n, sizeof(*c.ids), cmp_u32);
	(void)datapath_ct_foreach(a->dp, purge_one, &c);
	free(c.ids);
}

/* One sweep of weft_ct (conntrack.c); its figures are kept for the Node
 * annotation (report.c). */
size_t service_ct_gc(struct agent *a)
{
	struct conntrack_stats st, pst;

	/* the connections NetworkPolicy tracks (policy_ct.c) go the same way */
	if (policy_ct_sweep(a->dp, conntrack_now(), &pst) == 0) {
		pthread_mutex_lock(&a->ct_lock);
		a->pct_stats = pst;
		a->pct_expired_total += pst.expired_pairs;
		pthread_mutex_unlock(&a->ct_lock);
	}
	if (conntrack_sweep(a->dp, conntrack_now(), &st) < 0)
		return 0;
	pthread_mutex_lock(&a->ct_lock);
	a->ct_stats = st;
	a->ct_expired_total += st.expired_pairs;
	a->ct_orphans_total += st.orphans;
	a->ct_swept = true;
	pthread_mutex_unlock(&a->ct_lock);
	return st.expired_pairs * 2 + st.orphans;
}

/* Sweeps every SERVICE_CT_GC_PERIOD_MS, or, when a sweep of a large table
 * takes longer, SERVICE_CT_GC_DUTY times its duration after it: the sweep
 * never takes more than 1/SERVICE_CT_GC_DUTY of a CPU.  Purges the
 * entries of removed backends when queue_purge wakes it, at most every
 * SERVICE_CT_PURGE_MS (a burst of removals is one walk).  Asleep in
 * between: a thousand hollow agents in one process polled ten times a
 * second each. */
static void *gc_thread(void *arg)
{
	struct agent *a = arg;
	int64_t next_gc = monotime_ms() + SERVICE_CT_GC_PERIOD_MS, next_purge = 0;

	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->stopping)) {
		int64_t now = monotime_ms();
		bool purge = a->svc->npurge && now >= next_purge, gc = now >= next_gc;

		if (!purge && !gc) {
			int64_t until = a->svc->npurge && next_purge < next_gc ? next_purge : next_gc;
			struct timespec ts = monotime_deadline(until);

			(void)pthread_cond_timedwait(&a->gc_wake, &a->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		if (purge) {
			service_ct_purge(a);
			next_purge = now + SERVICE_CT_PURGE_MS;
		}
		if (gc) {
			int64_t wait_ms;

			(void)service_ct_gc(a);
			pthread_mutex_lock(&a->ct_lock);
			wait_ms = (int64_t)(a->ct_stats.duration_us / 1000) * SERVICE_CT_GC_DUTY;
			pthread_mutex_unlock(&a->ct_lock);
			if (wait_ms < SERVICE_CT_GC_PERIOD_MS)
				wait_ms = SERVICE_CT_GC_PERIOD_MS;
			next_gc = monotime_ms() + wait_ms;
		}
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int service_gc_start(struct agent *a)
{
	int rc = pthread_create(&a->t_ct_gc, NULL, gc_thread, a);

	return rc ? -rc : 0;
}

void service_gc_stop(struct agent *a)
{
	if (a->t_ct_gc)
		pthread_join(a->t_ct_gc, NULL);
	a->t_ct_gc = 0;
}

/* O(services whose report may be owed), not O(services). */
int service_reports_take(struct agent *a, struct service_report **out, size_t *n)
{
	struct service_table *T = a->svc;
	struct service_report *v;
	size_t cap = 0;
	char msg[160];
	struct dlist *e, *next;

	*out = NULL;
	*n = 0;
	for (e = dlist_first(&T->due); e; e = dlist_next(&T->due, e))
		cap++;
	if (!cap)
		return 0;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;	/* nothing taken: the next call tries again */
	for (e = dlist_first(&T->due); e; e = next) {
		struct svc *s = DLIST_ENTRY(e, struct svc, due);

		next = dlist_next(&T->due, e);
		dlist_remove(e);
		svc_error_text(s, msg, sizeof(msg));
		if (!s->has_service || strcmp(msg, reported(s)) == 0)
			continue;
		snprintf(v[*n].ns, sizeof(v[*n].ns), "%s", s->ns);
		snprintf(v[*n].name, sizeof(v[*n].name), "%s", s->name);
		snprintf(v[*n].msg, sizeof(v[*n].msg), "%s", msg);
		set_reported(s, msg);
		(*n)++;
	}
	*out = v;
	return 0;
}

void service_report_failed(struct agent *a, const struct service_report *r)
{
	struct svc *s = svc_find(a->svc, r->ns, r->name, false);

	if (s) {
		set_reported(s, "(retry)");
		report_due(a->svc, s);
	}
}

uint64_t service_map_full_count(struct agent *a)
{
	struct service_table *T = a->svc;
	return T->map_full;
}

struct service_table *service_table_create(void)
{
	struct service_table *T = calloc(1, sizeof(*T));

	if (T)
		dlist_init(&T->due);
	return T;
}

void service_table_destroy(struct service_table *T)
{
	if (!T)
		return;
	for (size_t i = 0; i < T->n; i++) {
		struct svc *s = T->v[i];

		for (size_t j = 0; j < s->nports; j++) {
			free(s->ports[j].bk);
			free(s->ports[j].local);
		}
		free(s->ports);
		free(s->reported);
		free(s);
	}
	for (struct hmap_node *e = hmap_first(&T->slices), *next; e; e = next) {
		struct svc_slice *sl = HMAP_ENTRY(e, struct svc_slice, by_name);

		next = hmap_next(&T->slices, e);
		slice_clear(sl);
		free(sl);
	}
	hmap_free(&T->slices);
	free(T->v);
	free(T->rfe);
	free(T->rbe);
	free(T->purge);
	hmap_free(&T->by_name);
	u64map_free(&T->svc_ids);
	u64map_free(&T->backend_ids);
	u64map_free(&T->rfe_idx);
	u64map_free(&T->rbe_idx);
	free(T);
}
