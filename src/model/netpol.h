/*
 * netpol.h — a NetworkPolicy (networking.k8s.io/v1) parsed once from its
 * stored object, and the evaluator of its semantics: which pods a policy
 * selects, which peers and ports its rules admit, and the decision for one
 * new flow over every policy of the cluster.  The node agent compiles
 * policies into its maps with it; weftctl explains them with it.
 *
 * The semantics, as Kubernetes defines them:
 *  1. A pod is isolated for a direction if some policy of its namespace
 *     selects it (spec.podSelector, {} = every pod) and has that direction
 *     in policyTypes.  policyTypes omitted: Ingress always, Egress only when
 *     the spec has egress rules (a non-empty egress list, as the API
 *     server defaults it).  A pod not isolated for a direction: everything
 *     is allowed that way.
 *  2. An isolated pod accepts the union of the rules of the policies that
 *     select it and isolate it; there are no deny rules and no order.
 *     ingress/egress absent or [] = no rule (deny all); [{}] = allow all.
 *  3. Within a rule: (any peer matches) AND (any port matches); from/to
 *     absent or [] = every peer, ports absent or [] = every port.
 *  4. A peer: podSelector alone = pods of the policy's namespace;
 *     namespaceSelector alone = every pod of the matching namespaces; both
 *     in one peer = AND; ipBlock (alone in its peer) = addresses inside
 *     cidr and outside every except, pod IPs included.
 *  5. A port: protocol TCP (default), UDP or SCTP; a number, a range up to
 *     endPort, a container port's name (resolved on the destination pod,
 *     for that protocol), or absent = every port of the protocol.
 *  6. A flow needs the source's egress (when the source is an isolated
 *     pod) AND the destination's ingress (when it is an isolated pod).
 *     A pod reaching itself is always allowed.  The node reaching its own
 *     pods (and they it) is also always allowed, but that is the data
 *     plane's rule: netpol_decide knows no nodes, and an address that is
 *     not a pod is judged by ipBlocks alone.
 *
 * Ownership: netpol_parse fills a zeroed struct netpol that then owns
 * everything it points to; netpol_free releases it (and accepts a zeroed
 * one).  The pod views (struct netpol_pod) borrow everything from the
 * caller.  A parsed policy is read-only: any number of threads may
 * evaluate with it.  Nothing here prints; errors come back as -errno with
 * words in a caller-owned buffer.
 *
 * Bounds: at most NETPOL_MAX_ITEMS rules per direction, peers per rule,
 * ports per rule and excepts per ipBlock (-E2BIG past them); selectors are
 * bounded by selector.h.  Evaluation allocates nothing and is O(policies x
 * rules x (peers + ports)).
 */
#ifndef WEFT_MODEL_NETPOL_H
#define WEFT_MODEL_NETPOL_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/cidr.h"
#include "model/selector.h"

#define NETPOL_MAX_ITEMS 1024
#define NETPOL_PORT_NAME_MAX 16		/* an IANA service name: 15 bytes + NUL */
#define NETPOL_VERDICT_MAX 8		/* policies named per side of a verdict */

enum netpol_dir { NETPOL_INGRESS = 0, NETPOL_EGRESS = 1 };

struct netpol_port {
	uint8_t proto;			/* IPPROTO_TCP (the default), IPPROTO_UDP, IPPROTO_SCTP */
	uint16_t port;			/* 0: every port of proto (and name == "") */
	uint16_t end_port;		/* inclusive upper bound; == port without endPort */
	char name[NETPOL_PORT_NAME_MAX];	/* a named port, resolved on the destination pod; "" when numeric */
};

struct netpol_peer {
	bool has_pods, has_namespaces;	/* podSelector / namespaceSelector present */
	struct selector pods, namespaces;
	bool is_block;			/* ipBlock (alone in its peer) */
	struct cidr block;
	struct cidr *except;
	size_t nexcept;
};

struct netpol_rule {
	struct netpol_peer *peers;	/* npeers == 0: every peer (from/to absent or []) */
	size_t npeers;
	struct netpol_port *ports;	/* nports == 0: every port of every protocol */
	size_t nports;
};

struct netpol {
	char *ns, *name;
	struct selector subject;	/* spec.podSelector */
	bool isolates[2];		/* policyTypes, defaulted (invariant 1), by enum netpol_dir */
	struct netpol_rule *rules[2];	/* ingress / egress rules, by enum netpol_dir */
	size_t nrules[2];
};

/* A stored NetworkPolicy object (borrowed) into np (zeroed).  0, -EINVAL
 * (malformed: err names the policy and the field, e.g. "networkpolicy
 * y/web: spec.ingress[0].from[1].ipBlock.cidr: '10.0.0.1/8' has host bits
 * set"), -E2BIG (over a bound), -ENOMEM.  On failure np is left zeroed. */
int netpol_parse(const json_t *obj, struct netpol *np, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void netpol_free(struct netpol *np);

const char *netpol_dir_name(enum netpol_dir d);		/* "ingress", "egress" */
/* "TCP", "UDP", "SCTP", or NULL; and back (case-sensitive, as the API is). */
const char *netpol_proto_name(uint8_t proto);
int netpol_proto_parse(const char *name, uint8_t *proto);	/* 0 or -EINVAL */

/* A pod as policies see it (all borrowed). */
struct netpol_pod {
	const char *ns;
	const json_t *ns_labels;	/* the Namespace's metadata.labels; must carry
					 * kubernetes.io/metadata.name=<ns> (the caller adds it) */
	const char *name;
	const json_t *labels;		/* the Pod's metadata.labels */
	const json_t *spec;		/* the Pod's spec: containers[].ports[] {name,
					 * containerPort, protocol} for named ports */
	in_addr_t ip;			/* network order; 0 if none */
};

/* Does np's spec.podSelector select a pod of pod_ns with these labels? */
bool netpol_selects(const struct netpol *np, const char *pod_ns, const json_t *pod_labels);
/* Does peer p (of np) match pod: its selectors (invariant 4), or an
 * ipBlock on the pod's IP? */
bool netpol_peer_matches_pod(const struct netpol *np, const struct netpol_peer *p, const struct netpol_pod *pod);
/* An address that is not a pod (ip network order): only an ipBlock matches. */
bool netpol_peer_matches_addr(const struct netpol_peer *p, in_addr_t ip);
/* The numeric range port p means on destination pod dst (NULL: not a pod;
 * a named port then matches nothing): 0 with *lo, *hi set (a port of 0
 * means 0..65535), or -ENOENT when the name is not a container port of
 * dst for p's protocol. */
int netpol_port_range(const struct netpol_port *p, const struct netpol_pod *dst, uint16_t *lo, uint16_t *hi);

/* One side of a verdict: the source's egress or the destination's ingress. */
struct netpol_side {
	bool pod;			/* this end is a pod (else nothing isolates it) */
	bool isolated;
	bool allowed;			/* not isolated, or some rule allows */
	/* the policies that select this pod and isolate it this way, and of
	 * them those whose rules allow the flow; n* counts them all, the
	 * arrays hold the first NETPOL_VERDICT_MAX (pointers into pols) */
	const struct netpol *isolated_by[NETPOL_VERDICT_MAX];
	size_t nisolated_by;
	const struct netpol *allowed_by[NETPOL_VERDICT_MAX];
	size_t nallowed_by;
};

struct netpol_verdict {
	bool allowed;			/* side[EGRESS].allowed && side[INGRESS].allowed, or self */
	bool self;			/* src and dst are the same pod */
	struct netpol_side side[2];	/* [NETPOL_EGRESS]: src's; [NETPOL_INGRESS]: dst's */
};

/* The decision for one new flow from src to dst on proto/port (invariant
 * 6).  src/dst NULL: not a pod, src_ip/dst_ip (network order) is the
 * address; for a pod the pod's own ip is used.  pols: every policy of the
 * cluster (borrowed; those of other namespaces are skipped).  0, or
 * -EINVAL (an unknown proto) with v zeroed. */
int netpol_decide(const struct netpol *const *pols, size_t n, const struct netpol_pod *src, in_addr_t src_ip,
		  const struct netpol_pod *dst, in_addr_t dst_ip, uint8_t proto, uint16_t port,
		  struct netpol_verdict *v) __attribute__((warn_unused_result));

#endif
