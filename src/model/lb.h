/*
 * lb.h — the load-balancer model: Services of type LoadBalancer,
 * Ingresses and Routes translated into virtual services, pools, pool
 * groups, redirect policies and TLS key/certificate objects, with AKO's
 * names and sharding (docs/lb.md gives the names and the object format).
 *
 * The translation is a pure function of the cluster's objects and the
 * configuration: lb_translate reads borrowed inputs and returns new
 * objects; it writes nothing and keeps no state, so the controller, the
 * golden tests and a tool can all call it.  VIPs are not chosen here: the
 * controller allocates them and fills spec.vip in (lb_ctl.c).
 */
#ifndef WEFT_MODEL_LB_H
#define WEFT_MODEL_LB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_CLUSTER_NAME_MAX 32		/* a DNS-1123 label of at most 32 bytes */
#define LB_DEFAULT_CLUSTER "weft"
#define LB_RATIO_DEFAULT 100
#define LB_API_VERSION "lb.weft.io/v1"
#define LB_LABEL_TYPE "lb.weft.io/type"
#define LB_LABEL_SHARD "lb.weft.io/shard"

struct lb_config {
	char cluster[LB_CLUSTER_NAME_MAX + 1];
	unsigned shards;		/* 8, 4 or 1; 0: one dedicated VS per host */
	unsigned passthrough_shards;	/* 8, 4 or 1 */
	bool nodeport;			/* pool members are node IP:nodePort */
	const json_t *node_selector;	/* NodePort mode: labels; borrowed from the ClusterNetwork */
	/* Checks that a PEM certificate chain and key belong together; 0 or
	 * -EINVAL with the reason in err.  NULL: only the PEM blocks are
	 * looked for.  (The model does not link a TLS library; the
	 * controller passes one.) */
	int (*check_pair)(const char *cert, const char *key, char *err, size_t errlen);
};

/* The configuration from the ClusterNetwork's loadBalancer object (NULL or
 * absent: the defaults).  The object must have validated. */
void lb_config_from_cluster(const json_t *cluster_network, struct lb_config *cfg);

/* "LARGE" -> 8, "MEDIUM" -> 4, "SMALL" -> 1, "DEDICATED" -> 0; -1 if none. */
int lb_shard_size(const char *name);

uint32_t lb_fnv1a32(const char *s);
/* fnv1a32(host) & (shards - 1); shards a power of two */
unsigned lb_shard(const char *host, unsigned shards);

/* The inputs, all borrowed: objects keyed "namespace/name" (nodes: "name").
 * Any may be NULL (none of that kind). */
struct lb_inputs {
	const json_t *services;
	const json_t *endpoints;
	const json_t *ingresses;
	const json_t *routes;
	const json_t *secrets;
	const json_t *nodes;
};

/*
 * The result, owned by the caller (lb_result_clear frees it):
 *   vs      name -> VirtualService object (spec.vip absent, except L4 VSs,
 *           which carry their Service's VIP, and SNI children, which name
 *           their parent)
 *   certs   name -> SSLKeyAndCertificate object
 *   sources "Ingress/ns/name", "Route/ns/name" -> {
 *             hosts:    {host: VS name that serves it},
 *             problems: [{host, reason, message}] }
 *           for every Ingress and Route of the inputs.
 */
struct lb_result {
	json_t *vs;
	json_t *certs;
	json_t *sources;
};

int lb_translate(const struct lb_config *cfg, const struct lb_inputs *in, struct lb_result *out)
	__attribute__((warn_unused_result));
void lb_result_clear(struct lb_result *r);

/* Whether s can name a VirtualService or SSLKeyAndCertificate: 1-511
 * bytes of letters, digits, '-', '.' and '_' (hosts, paths with '/' made
 * '_', and the upper-case "Shared-L7"). */
bool lb_object_name(const char *s);

/* Names (docs/lb.md, "Names"); each returns the length it wrote, or -ENAMETOOLONG. */
int lb_name_shared_vs(const struct lb_config *cfg, const char *host, char *buf, size_t len);
int lb_name_passthrough_vs(const struct lb_config *cfg, const char *host, char *buf, size_t len);

#endif
