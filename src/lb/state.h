/*
 * state.h — the service engine's view of the lb.weft.io/v1 objects: every
 * VirtualService and SSLKeyAndCertificate it was given, parsed and
 * validated into plain C structs (docs/lb.md is the contract).
 *
 * An object is added whole or not at all: lb_state_add_json() checks every
 * field it uses (sizes, names, hosts, paths, IPv4 addresses, ports, PEM
 * shape) and, when one is wrong, returns -EINVAL with a message naming the
 * object and the field; the state is then unchanged, so the other objects
 * are still served.  VirtualServices of type L4 are accepted and dropped
 * (the nodes' eBPF programs answer them); *skipped is set.
 *
 * Invariants once lb_state_finish() ran:
 *   1. vs[] and certs[] are sorted by name, names unique (a later
 *      duplicate is dropped and reported).
 *   2. Every string is NUL-terminated, non-empty where the contract
 *      requires a value, and within the LB_*_MAX bounds below.
 *   3. A pool's servers are sorted (ip, port) and unique; a VS's pools are
 *      sorted by name and unique, and every member names one of them.
 *
 * Ownership: the state owns every string and array; lb_state_free()
 * releases them (key PEMs are wiped first) and accepts NULL.
 */
#ifndef WEFT_LB_STATE_H
#define WEFT_LB_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_NAME_MAX	 253	/* metadata.name, pool and pool group names */
#define LB_HOST_MAX	 253
#define LB_PATH_MAX	 512
#define LB_PEM_MAX	 (64 * 1024)
#define LB_OBJECTS_MAX	 20000	/* objects in one state */
#define LB_PORTS_MAX	 8
#define LB_POOLS_MAX	 1024	/* per VirtualService; pool groups and members too */
#define LB_SERVERS_MAX	 4096	/* per pool */
#define LB_REDIRECTS_MAX 4096
#define LB_RATIO_MAX	 1000000

enum lb_vs_type {
	LB_VS_SHARED_L7,
	LB_VS_SNI_CHILD,
	LB_VS_PASSTHROUGH,
	LB_VS_PASSTHROUGH_INSECURE,
	LB_VS_DEDICATED,
	LB_VS_L4,
};

enum lb_proto { LB_PROTO_HTTP, LB_PROTO_HTTPS, LB_PROTO_TCP, LB_PROTO_UDP };

struct lb_server {
	uint32_t ip;		/* host byte order */
	uint16_t port;
};

struct lb_pool {
	char *name;
	enum lb_proto protocol;
	bool tls_verify;	/* HTTPS: verify the server against ca_pem */
	char *pki_profile;	/* HTTPS with verify: the profile's name */
	char *ca_pem;		/* HTTPS with verify: the CA bundle */
	bool monitor_http;	/* healthMonitor HTTP (GET /), else TCP */
	struct lb_server *servers;
	size_t n_servers;
};

struct lb_member {
	char *pool;
	char *host;		/* may be NULL (passthrough: the group's host) */
	char *path;		/* NULL: no path (matches every path) */
	char *label;		/* priorityLabel, or host + path when absent */
	uint32_t ratio;
};

struct lb_pool_group {
	char *name;
	struct lb_member *members;
	size_t n_members;
};

struct lb_port {
	uint16_t port;
	enum lb_proto protocol;
};

struct lb_redirect {
	char *host;
	uint16_t port;		/* the listener it applies to */
	uint16_t code;		/* 301, 302, 303, 307 or 308 */
	bool https;		/* scheme */
};

struct lb_vs {
	char *name;
	enum lb_vs_type type;
	bool has_vip;		/* false: no VIP yet, nothing to serve */
	uint32_t vip;
	char *parent;		/* SNIChild, PassthroughInsecure */
	struct lb_port ports[LB_PORTS_MAX];
	size_t n_ports;
	char **hosts;
	size_t n_hosts;
	char *cert;		/* sslKeyAndCertificate, or NULL */
	struct lb_pool_group *groups;
	size_t n_groups;
	struct lb_pool *pools;
	size_t n_pools;
	struct lb_redirect *redirects;
	size_t n_redirects;
	size_t seq;		/* input order, to keep the first of duplicates */
};

struct lb_cert {
	char *name;
	char *certificate;	/* PEM chain, leaf first */
	char *key;		/* PEM; a secret: wiped on free, never logged */
	size_t seq;
};

struct lb_state {
	struct lb_vs *vs;
	size_t n_vs;
	struct lb_cert *certs;
	size_t n_certs;
	size_t next_seq;
};

struct lb_state *lb_state_new(void);
void lb_state_free(struct lb_state *s);

/* Parse one object (a VirtualService or SSLKeyAndCertificate as JSON) into
 * s.  0 (added, or skipped: *skipped set for L4), -EINVAL with err naming
 * the object and field, -E2BIG past LB_OBJECTS_MAX, -ENOMEM.  On error s
 * is unchanged.  skipped may be NULL. */
int lb_state_add_json(struct lb_state *s, const json_t *obj, bool *skipped, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Sort by name and drop duplicates, one line each appended to report
 * (errmsg_line; may be NULL).  Returns how many were dropped. */
size_t lb_state_finish(struct lb_state *s, char *report, size_t len);

/* Lookups after lb_state_finish (binary search); NULL when absent.  The
 * result is borrowed from s. */
const struct lb_vs *lb_state_find_vs(const struct lb_state *s, const char *name);
const struct lb_cert *lb_state_find_cert(const struct lb_state *s, const char *name);
const struct lb_pool *lb_vs_find_pool(const struct lb_vs *vs, const char *name);

const char *lb_vs_type_name(enum lb_vs_type t);

#endif
