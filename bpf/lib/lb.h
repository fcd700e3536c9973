/*
 * lb.h — service translation: frontend lookup, backend choice, connection
 * tracking and the address rewrites (layouts and the slot scheme:
 * bpf/weft_bpf.h, "Services").
 *
 *	lb_reverse()   a packet from a backend (or a hairpinned pod) answering a
 *	               translated connection: REV entry → source becomes the
 *	               frontend again (and the destination the original client
 *	               when it was SNATed)
 *	lb_forward()   a packet to a frontend: FWD entry still pointing at a
 *	               live backend → same backend; else choose (affinity, or
 *	               a random slot of scope ALL or LOCAL), write REV then
 *	               FWD, rewrite the destination (and the source for a
 *	               hairpin or an outside client sent to another node)
 *
 * Both return LB_NONE (not a translated packet, nothing changed), LB_DONE
 * (rewritten: *t is the packet as it now is), LB_REJECT (a frontend without
 * backends: the caller refuses the connection), LB_REFUSE (LB_FROM_HOST
 * only: the backend chosen is outside the pod network; nothing written,
 * nothing changed: the caller refuses the connection and counts it) or a
 * negative drop reason.
 *
 * Where translation happens: pod_ingress (the client's node, for pods,
 * LB_FROM_POD), node_ingress (the node an outside client reached,
 * LB_FROM_OUTSIDE), svc_egress (the node's own sockets, LB_FROM_HOST: the
 * kernel routes cluster IPs and VIPs to the service device, source the
 * gateway).  Replies are translated back on the client's node: by
 * pod_ingress when the backend is a pod there, by vxlan_ingress when it
 * is elsewhere.  So a backend's node needs no state for connections it
 * did not translate.  The caller's `from` is a constant: the code for the
 * other kinds of client is compiled out of its program.
 *
 * The node as a client is a pod for the policies (every backend of a
 * cluster IP, VIP or NodePort; internalTrafficPolicy Local narrows a
 * cluster IP to this node's backends) but may only reach backends that
 * are pods: one outside the pod network (a host-network endpoint, an
 * address outside the cluster) would answer the gateway through a path no
 * program sees (this node's loopback, or another node's stack and
 * masquerade), so that connection is refused (LB_REFUSE) instead of
 * hanging.  Its entries carry WEFT_CT_F_HOST: the answers enter the stack
 * through the service device.
 *
 * Traffic policies: internalTrafficPolicy Local narrows a cluster IP
 * reached from a pod to the backends on this node, externalTrafficPolicy
 * Local a NodePort or VIP reached from outside (and then a node without a
 * local backend drops instead of refusing: a load balancer in front only
 * sends where a backend is).  A pod reaching a NodePort or VIP uses every
 * backend, as kube-proxy does for in-cluster clients.
 *
 * An outside client's connection to a backend on another node is SNATed
 * to this node's gateway with a port of WEFT_SNAT_PORT_MIN..MAX (the
 * backend answers to the gateway, over the tunnel, so the answer comes
 * back here); to a backend outside the pod network, to this node's IP
 * (the answer comes back on the underlay: node_ingress); one to a backend
 * here keeps the client's address.  A pod's connection to a backend
 * outside the pod network leaves through the stack (masquerade) and its
 * answer comes back through it: pod_egress translates that one.
 */
#ifndef WEFT_BPF_LIB_LB_H
#define WEFT_BPF_LIB_LB_H

#include "common.h"
#include "ct.h"
#include "l4.h"
#include "maps.h"
#include "policy.h"
#include "tenant.h"

#define LB_NONE		0
#define LB_DONE		1
#define LB_REJECT	2
#define LB_REFUSE	3

/* who the client of lb_forward() is */
#define LB_FROM_POD	0	/* a pod of this node (pod_ingress) */
#define LB_FROM_OUTSIDE	1	/* outside the cluster (node_ingress) */
#define LB_FROM_HOST	2	/* this node's stack (svc_egress) */

#define LB_SNAT_TRIES	4
#define LB_EEXIST	CT_EEXIST

static __always_inline int lb_rewrite_src(struct __sk_buff *skb, struct l4_tuple *t,
					  __be32 addr, __be16 port)
{
	if (l4_set_addr(skb, t, 1, t->saddr, addr) < 0 || l4_set_port(skb, t, 1, t->sport, port) < 0)
		return -1;
	t->saddr = addr;
	t->sport = port;
	return 0;
}

static __always_inline int lb_rewrite_dst(struct __sk_buff *skb, struct l4_tuple *t,
					  __be32 addr, __be16 port)
{
	if (l4_set_addr(skb, t, 0, t->daddr, addr) < 0 || l4_set_port(skb, t, 0, t->dport, port) < 0)
		return -1;
	t->daddr = addr;
	t->dport = port;
	return 0;
}

/* Send the packet of a connection the FWD way: to the backend, from the
 * SNAT source when there is one. */
static __always_inline int lb_apply_fwd(struct __sk_buff *skb, struct l4_tuple *t, __u16 flags,
					__be32 daddr, __be16 dport, __be32 saddr, __be16 sport)
{
	if (lb_rewrite_dst(skb, t, daddr, dport) < 0)
		return -WEFT_DROP_MALFORMED;
	if ((flags & WEFT_CT_F_SNAT) && lb_rewrite_src(skb, t, saddr, sport) < 0)
		return -WEFT_DROP_MALFORMED;
	return LB_DONE;
}

/* A TCP RST ends a connection at once: nothing legitimate follows it, so
 * the pair goes with it, when its sender cannot be forged: a pod (its
 * source is checked on its node, and the tunnel takes only nodes) or this
 * node.  An outside address could be forged by anyone on the underlay, and
 * no sequence number is checked here: its RST only marks the pair closing
 * (ct_touch), as a FIN does. */
static __always_inline int lb_resets(const struct l4_tuple *t, int trusted)
{
	return t->proto == IPPROTO_TCP && (t->tcp_flags & TCP_F_RST) && trusted;
}

/* Delete a connection's pair, REV first (the sweep's order), and give its
 * client's slot back when this call deleted the FWD entry (the sweep, or
 * another CPU, did not: whoever deletes it counts it, once).
 *
 *	FWD {client:cport -> frontend:fport}
 *	REV {backend:bport -> source as sent:sport} */
static __always_inline void lb_ct_delete(__be32 client, __be16 cport, __be32 frontend,
					 __be16 fport, __be32 backend, __be16 bport, __be32 src,
					 __be16 sport, __u8 proto)
{
	struct weft_ct_key k;

	if (tracing())
		return;
	ct_key(&k, backend, src, bport, sport, proto, WEFT_CT_REV);
	bpf_map_delete_elem(&weft_ct, &k);
	ct_key(&k, client, frontend, cport, fport, proto, WEFT_CT_FWD);
	if (bpf_map_delete_elem(&weft_ct, &k) == 0)
		ct_source_put(client);
}

/* A packet answering a translated connection?  *ct_flags gets the REV
 * entry's flags (WEFT_CT_F_EXTERNAL: the client is outside). */
static __always_inline int lb_reverse(struct __sk_buff *skb, struct l4_tuple *t, __u16 *ct_flags)
{
	struct weft_ct_entry *e = ct_lookup(t, WEFT_CT_REV);
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u16 flags;

	if (!e)
		return LB_NONE;
	flags = e->flags;
	saddr = e->nat_addr;
	sport = e->nat_port;
	daddr = e->nat_addr2;
	dport = e->nat_port2;
	*ct_flags = flags;
	if (lb_resets(t, node_lookup(t->saddr) != NULL))	/* a backend pod ends it */
		lb_ct_delete(daddr, dport, saddr, sport, t->saddr, t->sport, t->daddr, t->dport,
			     t->proto);
	else
		ct_touch(e, t, 1);
	trace_service(WEFT_TRACE_S_SVC_REPLY, saddr, sport, t->saddr, t->sport, e->backend_id);
	if (lb_rewrite_src(skb, t, saddr, sport) < 0)
		return -WEFT_DROP_MALFORMED;
	if ((flags & WEFT_CT_F_SNAT) && lb_rewrite_dst(skb, t, daddr, dport) < 0)
		return -WEFT_DROP_MALFORMED;
	return LB_DONE;
}

/* A pod opens a connection straight to an address and port that answer a
 * translated connection of the same source port: Linux picks source ports
 * per destination, so after connecting to a frontend a client may reuse
 * the port towards the backend itself, and the backend's answers would
 * then match the old REV entry and come out from the frontend (a
 * connected UDP socket then drops them: its peer is the backend).  A TCP
 * SYN says the client starts afresh; so does any UDP datagram sent
 * straight to the backend from that port: the old connection's entries
 * go (it is made again by its next datagram, if it was still in use). */
static __always_inline void lb_forget_clash(const struct l4_tuple *t)
{
	struct weft_ct_key k;
	struct weft_ct_entry *e;
	__be32 client, frontend;
	__be16 cport, fport;

	if (t->proto == IPPROTO_TCP ? (t->tcp_flags & (TCP_F_SYN | TCP_F_ACK)) != TCP_F_SYN
				    : t->proto != IPPROTO_UDP)
		return;
	ct_key(&k, t->daddr, t->saddr, t->dport, t->sport, t->proto, WEFT_CT_REV);
	e = bpf_map_lookup_elem(&weft_ct, &k);
	if (!e)
		return;
	client = (e->flags & WEFT_CT_F_SNAT) ? e->nat_addr2 : t->saddr;
	cport = (e->flags & WEFT_CT_F_SNAT) ? e->nat_port2 : t->sport;
	frontend = e->nat_addr;
	fport = e->nat_port;
	lb_ct_delete(client, cport, frontend, fport, t->daddr, t->dport, t->saddr, t->sport,
		     t->proto);
}

/* The frontend t is addressed to, or NULL.  Outside clients reach only
 * VIPs and NodePorts of this node; pods also reach cluster IPs and the
 * NodePorts of every node. */
static __always_inline const struct weft_svc_value *
lb_frontend(const struct weft_config *cfg, const struct l4_tuple *t, int outside,
	    struct weft_svc_key *key)
{
	const struct weft_svc_value *svc;

	key->addr = t->daddr;
	key->port = t->dport;
	key->proto = t->proto;
	key->scope = WEFT_SCOPE_ALL;
	key->slot = 0;
	key->pad = 0;
	svc = bpf_map_lookup_elem(&weft_services, key);
	if (svc)
		return !outside || (svc->flags & WEFT_SVC_F_LOAD_BALANCER) ? svc : NULL;
	if (t->daddr != cfg->node_ip && (outside || !node_ip_known(t->daddr)))
		return NULL;
	key->addr = 0;
	return bpf_map_lookup_elem(&weft_services, key);
}

/* affinity timeout check: now - last <= timeout seconds, in ticks */
static __always_inline int lb_affinity_fresh(__u32 now, __u32 last, __u32 timeout)
{
	return ((__u64)(now - last) << WEFT_CT_TICK_SHIFT) <= (__u64)timeout * 1000000000ull;
}

/* Choose a backend of svc for client.  0, or a negative drop reason.
 * Writes nothing: the caller remembers the choice for affinity once the
 * connection is admitted (lb_remember). */
static __always_inline int lb_choose(const struct weft_svc_key *fkey,
				     const struct weft_svc_value *svc, int local, __u16 n,
				     __be32 client, __u32 *backend_id,
				     const struct weft_backend **backend)
{
	struct weft_affinity_key ak = { .svc_id = svc->svc_id, .client = client };
	const struct weft_svc_value *slot;
	const struct weft_backend *b;
	struct weft_svc_key key = *fkey;
	struct weft_affinity *a;
	__u32 id, now = 0;

	if (svc->flags & WEFT_SVC_F_AFFINITY) {
		now = ct_now();
		a = bpf_map_lookup_elem(&weft_affinity, &ak);
		if (a && lb_affinity_fresh(now, a->last_seen, svc->affinity_timeout)) {
			id = a->backend_id;
			b = bpf_map_lookup_elem(&weft_backends, &id);
			if (b && b->svc_id == svc->svc_id && (!local || (b->flags & WEFT_BE_F_LOCAL))) {
				*backend_id = id;
				*backend = b;
				trace_choice(0);
				return 0;
			}
		}
	}
	trace_choice(n);
	key.scope = local ? WEFT_SCOPE_LOCAL : WEFT_SCOPE_ALL;
	key.slot = (__u16)(1 + bpf_get_prandom_u32() % n);
	slot = bpf_map_lookup_elem(&weft_services, &key);
	if (!slot)
		return -WEFT_DROP_SERVICE_MAP;
	id = slot->backend_id;
	b = bpf_map_lookup_elem(&weft_backends, &id);
	if (!b)
		return -WEFT_DROP_SERVICE_MAP;
	*backend_id = id;
	*backend = b;
	return 0;
}

/* Remember the backend a client was given, for session affinity. */
static __always_inline void lb_remember(const struct weft_svc_value *svc, __be32 client,
					__u32 backend_id, __u32 now)
{
	struct weft_affinity_key ak = { .svc_id = svc->svc_id, .client = client };
	struct weft_affinity na = { .backend_id = backend_id, .last_seen = now };

	if ((svc->flags & WEFT_SVC_F_AFFINITY) && !tracing())
		bpf_map_update_elem(&weft_affinity, &ak, &na, BPF_ANY);	/* LRU: never full */
}

/* May the connection t of a client (src: the sending pod for LB_FROM_POD,
 * else NULL) to backend b be made?  0, or a negative drop reason.
 * Nothing is written before this says yes, so a refused connection leaves
 * no state.  Decided here for a backend on any node (weft_ipcache knows
 * every pod's VNID): the tenant rule, and the policies judged on this
 * node (lib/policy.h: the client pod's egress, the ingress of a backend
 * here); the programs that deliver still check each packet.  A backend
 * outside the pod network has no VNID and passes the tenant rule.  The
 * node's own connections pass both (a node reaches its pods; a backend
 * elsewhere judges the node as any peer). */
static __always_inline int lb_admit(int from, const struct weft_endpoint *src,
				    const struct l4_tuple *t, const struct weft_backend *b)
{
	const struct weft_ipcache_entry *remote;
	const struct weft_endpoint *here;
	struct policy_why why;
	struct policy_flow f;
	__be32 addr = b->addr;
	__u32 reason;

	if (from == LB_FROM_HOST)
		return 0;
	here = endpoint_lookup(addr);
	if (from == LB_FROM_POD) {
		if (here && !vnid_allowed(src->vnid, here->vnid))
			return -WEFT_DROP_ISOLATED;
		remote = here ? NULL : bpf_map_lookup_elem(&weft_ipcache, &addr);
		if (remote && !vnid_allowed(src->vnid, remote->vnid))
			return -WEFT_DROP_ISOLATED;
	}
	f.saddr = t->saddr;
	f.daddr = addr;
	f.sport = t->sport;
	f.dport = b->port;
	f.proto = t->proto;
	f.tcp_flags = t->tcp_flags;
	reason = policy_judge(from == LB_FROM_POD ? src : NULL, here, &f, &why);
	if (reason == WEFT_DROP_NONE)
		return 0;	/* logged when the translated packet is checked */
	trace_policy(WEFT_TRACE_S_POLICY, why.rule_out, why.rule_in);
	policy_log(from == LB_FROM_POD ? src : NULL, here, &f, reason, &why);
	return -(int)reason;
}

/* Is this packet allowed to open a connection?  TCP: a SYN alone (no ACK,
 * RST or FIN); UDP: any datagram. */
static __always_inline int lb_opens(const struct l4_tuple *t)
{
	return t->proto != IPPROTO_TCP ||
	       (t->tcp_flags & (TCP_F_SYN | TCP_F_ACK | TCP_F_RST | TCP_F_FIN)) == TCP_F_SYN;
}

/* Write the REV entry of a new connection, never over another one's
 * (BPF_NOEXIST): first with the source port as sent (unless snat_port),
 * then, when that key is taken or snat_port is set, with ports of the SNAT
 * range until one is free for this backend; *src_port gets the port
 * chosen and *snat is set when it is not the client's.  0 or -1. */
static __always_inline int lb_ct_rev(const struct l4_tuple *t, const struct weft_backend *b,
				     __be32 src, __be16 *src_port, int snat_port, int *snat,
				     struct weft_ct_entry *rev)
{
	struct weft_ct_key k;

	if (tracing()) {
		/* the client's port if it is free towards b, else a SNAT
		 * port a real packet would draw at random: 0 says "one of
		 * the range" */
		ct_key(&k, b->addr, src, b->port, *src_port, t->proto, WEFT_CT_REV);
		if (!snat_port && !bpf_map_lookup_elem(&weft_ct, &k))
			return 0;
		rev->flags |= WEFT_CT_F_SNAT;
		*src_port = 0;
		*snat = 1;
		return 0;
	}
	if (!snat_port) {
		ct_key(&k, b->addr, src, b->port, *src_port, t->proto, WEFT_CT_REV);
		if (bpf_map_update_elem(&weft_ct, &k, rev, BPF_NOEXIST) == 0)
			return 0;
	}
	/* a new port is a SNAT, undone on the answers (nat_addr2/port2) */
	rev->flags |= WEFT_CT_F_SNAT;
	for (int i = 0; i < LB_SNAT_TRIES; i++) {
		__u16 port = WEFT_SNAT_PORT_MIN +
			     bpf_get_prandom_u32() % (WEFT_SNAT_PORT_MAX - WEFT_SNAT_PORT_MIN + 1);

		ct_key(&k, b->addr, src, b->port, bpf_htons(port), t->proto, WEFT_CT_REV);
		if (bpf_map_update_elem(&weft_ct, &k, rev, BPF_NOEXIST) == 0) {
			*src_port = bpf_htons(port);
			*snat = 1;
			return 0;
		}
	}
	return -1;
}

/* Forget a FWD entry whose backend went away, and its REV partner. */
static __always_inline void lb_ct_forget(const struct l4_tuple *t, const struct weft_ct_entry *e)
{
	__be32 src = (e->flags & WEFT_CT_F_SNAT) ? e->nat_addr2 : t->saddr;
	__be16 sport = (e->flags & WEFT_CT_F_SNAT) ? e->nat_port2 : t->sport;

	lb_ct_delete(t->saddr, t->sport, t->daddr, t->dport, e->nat_addr, e->nat_port, src, sport,
		     t->proto);
}

/* A packet to a frontend?  from: LB_FROM_* (a constant); src: the sending
 * pod (LB_FROM_POD; NULL otherwise).  *ct_flags gets the
 * connection's flags.  A new connection is made in this order, and
 * nothing is written before the step that writes it:
 *
 *	no backend ── refuse (LB_REJECT: RST / ICMP), nothing written
 *	opens?  (lb_opens: TCP SYN only) ── no: drop CT_NO_CONNECTION (a
 *	        connection whose backend was removed: LB_REJECT, a RST)
 *	choose  (lb_choose: affinity or a slot; reads only)
 *	admit   (lb_admit: tenant rule, NetworkPolicy) ── drop ISOLATED,
 *	        POLICY_DENIED_*
 *	count   (ct_source_take: the client's cap) ── drop CT_SOURCE_LIMIT
 *	REV     (lb_ct_rev, BPF_NOEXIST; a taken key picks another port)
 *	FWD     (BPF_NOEXIST; a packet of the same connection on another CPU
 *	         may have made it first: ours is taken back and theirs used)
 *	affinity (lb_remember) */
static __always_inline int lb_forward(struct __sk_buff *skb, const struct weft_config *cfg,
				      struct l4_tuple *t, int from, const struct weft_endpoint *src,
				      __u16 *ct_flags)
{
	int outside = from == LB_FROM_OUTSIDE;
	struct weft_ct_entry *e = ct_lookup(t, WEFT_CT_FWD);
	const struct weft_svc_value *svc;
	const struct weft_backend *b;
	struct weft_ct_entry fwd = {}, rev = {};
	struct weft_svc_key fkey;
	struct weft_ct_key k;
	__be32 daddr, saddr;
	__be16 dport, sport;
	__u32 backend_id;
	__u16 n, flags;
	int local, err, snat = 0, stale = 0;

	if (e) {
		backend_id = e->backend_id;
		b = bpf_map_lookup_elem(&weft_backends, &backend_id);
		if (b && b->addr == e->nat_addr && b->port == e->nat_port) {
			flags = e->flags;
			daddr = e->nat_addr;
			dport = e->nat_port;
			saddr = e->nat_addr2;
			sport = e->nat_port2;
			*ct_flags = flags;
			if (lb_resets(t, !(flags & WEFT_CT_F_EXTERNAL)))	/* a pod or the node ends it */
				lb_ct_delete(t->saddr, t->sport, t->daddr, t->dport, daddr, dport,
					     (flags & WEFT_CT_F_SNAT) ? saddr : t->saddr,
					     (flags & WEFT_CT_F_SNAT) ? sport : t->sport, t->proto);
			else
				ct_touch(e, t, 0);
			trace_service(WEFT_TRACE_S_SERVICE, t->daddr, t->dport, daddr, dport, backend_id);
			return lb_apply_fwd(skb, t, flags, daddr, dport, saddr, sport);
		}
		lb_ct_forget(t, e);	/* its backend is gone: choose again */
		stale = 1;
	}

	svc = lb_frontend(cfg, t, outside, &fkey);
	if (!svc) {
		lb_forget_clash(t);	/* a backend outside the pod network, reached directly */
		return LB_NONE;
	}
	if (outside)
		local = (svc->flags & WEFT_SVC_F_ETP_LOCAL) != 0;
	else
		local = (svc->flags & (WEFT_SVC_F_ITP_LOCAL | WEFT_SVC_F_CLUSTER_IP)) ==
			(WEFT_SVC_F_ITP_LOCAL | WEFT_SVC_F_CLUSTER_IP);
	n = local ? svc->local_count : svc->count;
	if (n == 0)
		return outside && local && svc->count ? -WEFT_DROP_NO_BACKEND : LB_REJECT;
	if (!lb_opens(t)) {
		/* a connection whose backend went away is told so (RST);
		 * anything else that does not open one is dropped */
		if (stale && !(t->tcp_flags & TCP_F_RST))
			return LB_REJECT;
		return -WEFT_DROP_CT_NO_CONNECTION;
	}
	err = lb_choose(&fkey, svc, local, n, t->saddr, &backend_id, &b);
	if (err < 0)
		return err;
	if (from == LB_FROM_HOST && !(b->flags & WEFT_BE_F_LOCAL) && !node_lookup(b->addr)) {
		if (svc->flags & WEFT_SVC_F_AFFINITY) {
			/* do not keep the node on a backend it cannot use */
			struct weft_affinity_key ak = { .svc_id = svc->svc_id, .client = t->saddr };

			if (!tracing())
				bpf_map_delete_elem(&weft_affinity, &ak);
		}
		return LB_REFUSE;
	}
	err = lb_admit(from, src, t, b);
	if (err < 0)
		return err;
	err = ct_source_take(t->saddr);
	if (err < 0)
		return err;

	/* the connection's entries: REV first (it may pick the SNAT port) */
	flags = t->proto == IPPROTO_TCP ? WEFT_CT_F_SYN : 0;
	saddr = t->saddr;
	sport = t->sport;
	if (outside) {
		flags |= WEFT_CT_F_EXTERNAL;
		if (!(b->flags & WEFT_BE_F_LOCAL)) {
			/* the answer must come back here: to the gateway over
			 * the tunnel from a pod, to the node IP from outside */
			flags |= WEFT_CT_F_SNAT;
			saddr = node_lookup(b->addr) ? cfg->gateway_ip : cfg->node_ip;
		}
	} else if (from == LB_FROM_HOST) {
		flags |= WEFT_CT_F_HOST;
	} else if (b->addr == t->saddr) {
		flags |= WEFT_CT_F_SNAT;	/* hairpin: the pod reaches itself */
		saddr = bpf_htonl(WEFT_HAIRPIN_IP);
	}
	rev.nat_addr = t->daddr;
	rev.nat_port = t->dport;
	rev.nat_addr2 = t->saddr;
	rev.nat_port2 = t->sport;
	rev.backend_id = backend_id;
	rev.svc_id = svc->svc_id;
	rev.last_seen = ct_now();
	rev.flags = flags;
	if (lb_ct_rev(t, b, saddr, &sport, outside && (flags & WEFT_CT_F_SNAT), &snat, &rev) < 0) {
		ct_source_put(t->saddr);
		return -WEFT_DROP_CT_FULL;
	}
	if (snat)
		flags |= WEFT_CT_F_SNAT;	/* the client's port was taken towards
						 * this backend: another one, the
						 * client's address kept */

	fwd.nat_addr = b->addr;
	fwd.nat_port = b->port;
	fwd.nat_addr2 = saddr;
	fwd.nat_port2 = sport;
	fwd.backend_id = backend_id;
	fwd.svc_id = svc->svc_id;
	fwd.last_seen = rev.last_seen;
	fwd.flags = flags;
	daddr = b->addr;
	dport = b->port;
	if (tracing()) {	/* the connection as it would be made, not made */
		trace_service(WEFT_TRACE_S_SERVICE | WEFT_TRACE_S_SVC_NEW, t->daddr, t->dport, daddr,
			      dport, backend_id);
		*ct_flags = flags;
		return lb_apply_fwd(skb, t, flags, daddr, dport, saddr, sport);
	}
	ct_key(&k, t->saddr, t->daddr, t->sport, t->dport, t->proto, WEFT_CT_FWD);
	err = bpf_map_update_elem(&weft_ct, &k, &fwd, BPF_NOEXIST);
	if (err < 0) {
		ct_key(&k, daddr, saddr, dport, sport, t->proto, WEFT_CT_REV);
		bpf_map_delete_elem(&weft_ct, &k);
		ct_source_put(t->saddr);
		if (err != -LB_EEXIST)
			return -WEFT_DROP_CT_FULL;
		/* another CPU made this connection first: follow it */
		e = ct_lookup(t, WEFT_CT_FWD);
		if (!e)
			return -WEFT_DROP_CT_FULL;
		flags = e->flags;
		daddr = e->nat_addr;
		dport = e->nat_port;
		saddr = e->nat_addr2;
		sport = e->nat_port2;
		*ct_flags = flags;
		return lb_apply_fwd(skb, t, flags, daddr, dport, saddr, sport);
	}
	lb_remember(svc, t->saddr, backend_id, rev.last_seen);
	*ct_flags = flags;
	return lb_apply_fwd(skb, t, flags, daddr, dport, saddr, sport);
}

#endif
