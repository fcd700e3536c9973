/*
 * policy.h — NetworkPolicy: the verdict on a new connection, and the
 * tracking that lets the rest of an allowed connection through (layouts,
 * identities and the rule key: bpf/weft_bpf.h, "NetworkPolicy").
 *
 *	policy_check()   a packet between a pod here and a peer (or two pods
 *	                 here), after service translation:
 *	                   the node and the pod itself ─────── allowed
 *	                   part of a tracked connection ────── allowed (refreshed)
 *	                   policy_judge() denies ───────────── its drop reason
 *	                   opens a connection ──────────────── tracked (or, with
 *	                                                       an isolated end,
 *	                                                       dropped when it
 *	                                                       cannot be)
 *	policy_judge()   the rules alone: the source pod's egress, then the
 *	                 destination pod's ingress, each only when isolated
 *	                 (lb_admit calls it before a service connection is
 *	                 written, with the backend chosen)
 *
 * Cost of a judgement: for each isolated end, one ipcache and one
 * weft_policy_cidrs lookup for the peer, and at most three weft_policy
 * lookups (the peer's pod identity, its CIDR identity, any peer).  A
 * packet of a tracked connection costs one or two weft_policy_ct lookups.
 *
 * Answers of translated connections (lb_reverse, translate_back) never
 * come here: weft_ct has already recognised them.
 */
#ifndef WEFT_BPF_LIB_POLICY_H
#define WEFT_BPF_LIB_POLICY_H

#include "common.h"
#include "ct.h"
#include "ipv4.h"
#include "maps.h"

/* connections one client may hold in weft_policy_ct; set before load */
const volatile __u32 policy_ct_source_max = WEFT_MAX_POLICY_CT / WEFT_POLICY_CT_SOURCE_SHARE;
/* policy log records a second per CPU; set before load */
const volatile __u32 policy_log_rate = WEFT_POLICY_LOG_RATE;

#define IPPROTO_SCTP_WEFT 132	/* linux/in.h has IPPROTO_SCTP; not every libc agrees */

/* a packet as policy sees it: ports only for TCP, UDP and SCTP */
struct policy_flow {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 tcp_flags;
};

/* Fill f from ip (a whole datagram or a first fragment).  0, or -1 when
 * its transport header does not fit. */
static __always_inline int policy_flow_read(struct __sk_buff *skb, const struct iphdr *ip,
					    struct policy_flow *f)
{
	__u32 hlen = (__u32)ip->ihl * 4;
	__u32 off = ETH_HLEN + hlen;
	__be16 ports[2];

	f->saddr = ip->saddr;
	f->daddr = ip->daddr;
	f->sport = 0;
	f->dport = 0;
	f->proto = ip->protocol;
	f->tcp_flags = 0;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP &&
	    ip->protocol != IPPROTO_SCTP_WEFT)
		return 0;
	if (bpf_ntohs(ip->tot_len) < hlen + (ip->protocol == IPPROTO_TCP ? 14 : 4))
		return -1;
	if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
		return -1;
	if (ip->protocol == IPPROTO_TCP && bpf_skb_load_bytes(skb, off + 13, &f->tcp_flags, 1) < 0)
		return -1;
	f->sport = ports[0];
	f->dport = ports[1];
	return 0;
}

/* The pod identity of addr, WEFT_ID_WORLD when it is no pod. */
static __always_inline __u32 policy_identity(__be32 addr)
{
	const struct weft_ipcache_entry *e = bpf_map_lookup_elem(&weft_ipcache, &addr);

	return e && e->identity ? e->identity : WEFT_ID_WORLD;
}

/* The CIDR identity of addr in rule set policy_id, direction dir (its
 * longest prefix among the set's ipBlocks), 0 when none. */
static __always_inline __u32 policy_cidr_identity(__u32 policy_id, __u8 dir, __be32 addr)
{
	struct weft_policy_cidr_key k = {
		.prefixlen = WEFT_POLICY_CIDR_PREFIX + 32,
		.policy_id = bpf_htonl(policy_id),
		.dir = dir,
		.addr = addr,
	};
	const struct weft_policy_cidr *c = bpf_map_lookup_elem(&weft_policy_cidrs, &k);

	return c ? c->id : 0;
}

/* The rule number of ep's key for (dir, peer, proto, port), 0 when none. */
static __always_inline __u32 policy_rule(__u32 policy_id, __u8 dir, __u32 peer, __u8 proto,
					 __be16 port)
{
	struct weft_policy_key k = {
		.prefixlen = WEFT_POLICY_PREFIX_PORT,
		.policy_id = bpf_htonl(policy_id),
		.peer = bpf_htonl(peer),
		.dir = dir,
		.proto = proto,
		.port = port,
	};
	const struct weft_policy_value *v = bpf_map_lookup_elem(&weft_policy, &k);

	return v ? (v->rule ? v->rule : 1) : 0;
}

/* Do ep's rules allow, in direction dir, the peer at addr on f's protocol
 * and destination port?  The rule number that does, or 0. */
static __always_inline __u32 policy_allows(const struct weft_endpoint *ep, __u8 dir, __be32 peer,
					   const struct policy_flow *f)
{
	__u32 id = policy_identity(peer), cidr = policy_cidr_identity(ep->policy_id, dir, peer);
	__u32 rule = 0;

	if (id != WEFT_ID_WORLD)
		rule = policy_rule(ep->policy_id, dir, id, f->proto, f->dport);
	if (!rule && cidr)
		rule = policy_rule(ep->policy_id, dir, cidr, f->proto, f->dport);
	if (!rule)
		rule = policy_rule(ep->policy_id, dir, WEFT_ID_ANY, f->proto, f->dport);
	return rule;
}

static __always_inline __u32 policy_denied(const struct weft_endpoint *ep, __u32 reason)
{
	return (ep->flags & WEFT_EP_F_POLICY_FULL) ? WEFT_DROP_POLICY_MAP_FULL : reason;
}

/* Why a judgement came out as it did: the rules that allowed each side
 * (0: that side is not isolated, or denied), and the side that denied. */
struct policy_why {
	__u32 rule_out;
	__u32 rule_in;
	__u8 dir;		/* the side that denied */
};

/* The rules on a new connection f from src to dst (pods of this node, or
 * NULL for a peer elsewhere): WEFT_DROP_NONE, or the reason it is denied.
 * A pod reaching itself is allowed (the caller passes its address as both
 * ends). */
static __always_inline __u32 policy_judge(const struct weft_endpoint *src,
					  const struct weft_endpoint *dst,
					  const struct policy_flow *f, struct policy_why *why)
{
	why->rule_out = 0;
	why->rule_in = 0;
	why->dir = WEFT_POLICY_EGRESS;
	if (f->saddr == f->daddr)
		return WEFT_DROP_NONE;
	if (src && (src->flags & WEFT_EP_F_ISOLATE_OUT)) {
		why->rule_out = policy_allows(src, WEFT_POLICY_EGRESS, f->daddr, f);
		if (!why->rule_out)
			return policy_denied(src, WEFT_DROP_POLICY_EGRESS);
	}
	why->dir = WEFT_POLICY_INGRESS;
	if (dst && (dst->flags & WEFT_EP_F_ISOLATE_IN)) {
		why->rule_in = policy_allows(dst, WEFT_POLICY_INGRESS, f->saddr, f);
		if (!why->rule_in)
			return policy_denied(dst, WEFT_DROP_POLICY_INGRESS);
	}
	return WEFT_DROP_NONE;
}

/* Log the verdict on a new connection when a pod here asks for it
 * (WEFT_EP_F_LOG_ALLOW on either end for an allowed one; LOG_DENY on the
 * end whose rules denied), at most policy_log_rate records a second on
 * this CPU. */
static __always_inline void policy_log(const struct weft_endpoint *src,
				       const struct weft_endpoint *dst,
				       const struct policy_flow *f, __u32 reason,
				       const struct policy_why *why)
{
	const struct weft_endpoint *decider = why->dir == WEFT_POLICY_EGRESS ? src : dst;
	struct weft_policy_log_state *st;
	struct weft_policy_event *e;
	__u32 key = 0;
	__u64 now, second;

	if (reason == WEFT_DROP_NONE) {
		if (!((src && (src->flags & WEFT_EP_F_LOG_ALLOW)) ||
		      (dst && (dst->flags & WEFT_EP_F_LOG_ALLOW))))
			return;
	} else if (!decider || !(decider->flags & WEFT_EP_F_LOG_DENY)) {
		return;
	}
	if (tracing())
		return;
	st = bpf_map_lookup_elem(&weft_policy_log_state, &key);
	if (!st)
		return;
	now = bpf_ktime_get_ns();
	second = now / 1000000000ull;
	if (st->second != second) {
		st->second = second;
		st->count = 0;
	}
	if (st->count >= policy_log_rate) {
		st->suppressed++;
		return;
	}
	e = bpf_ringbuf_reserve(&weft_policy_log, sizeof(*e), 0);
	if (!e) {
		st->suppressed++;
		return;
	}
	st->count++;
	e->time_ns = now;
	e->saddr = f->saddr;
	e->daddr = f->daddr;
	e->sport = f->sport;
	e->dport = f->dport;
	e->proto = f->proto;
	e->allowed = reason == WEFT_DROP_NONE;
	e->dir = why->dir;
	e->pad = 0;
	e->reason = reason;
	e->rule_out = why->rule_out;
	e->rule_in = why->rule_in;
	bpf_ringbuf_submit(e, 0);
}

/* May f open a connection?  TCP: a SYN alone; anything else: any packet. */
static __always_inline int policy_opens(const struct policy_flow *f)
{
	return f->proto != IPPROTO_TCP ||
	       (f->tcp_flags & (TCP_F_SYN | TCP_F_ACK | TCP_F_RST | TCP_F_FIN)) == TCP_F_SYN;
}

/* A packet of a tracked connection went through (reply: the answering
 * way): refresh it, as ct_touch() does for weft_ct. */
static __always_inline void policy_ct_touch(struct weft_policy_ct_entry *e,
					    const struct policy_flow *f, int reply)
{
	__u32 now = ct_now();
	__u16 flags = e->flags;

	if (tracing())
		return;
	if (f->proto == IPPROTO_TCP) {
		if (!reply && (f->tcp_flags & (TCP_F_SYN | TCP_F_ACK)) == TCP_F_SYN) {
			flags = WEFT_CT_F_SYN;	/* (policy_ct_follow judges it first) */
		} else if (f->tcp_flags & (TCP_F_FIN | TCP_F_RST)) {
			flags |= WEFT_CT_F_CLOSING;
		} else {
			/* established once both ways are past the SYN: a
			 * SYN answered and never acknowledged stays half-open */
			flags |= reply ? WEFT_CT_F_REPLIED
				       : (f->tcp_flags & TCP_F_SYN) ? 0 : WEFT_CT_F_ACKED;
			if ((flags & (WEFT_CT_F_REPLIED | WEFT_CT_F_ACKED)) ==
			    (WEFT_CT_F_REPLIED | WEFT_CT_F_ACKED))
				flags = (flags & ~WEFT_CT_F_SYN) | WEFT_CT_F_ESTABLISHED;
		}
	}
	if (e->last_seen != now)
		e->last_seen = now;
	if (e->flags != flags)
		e->flags = flags;
}

/* Is f part of a tracked connection, either way?  1 (refreshed; a TCP
 * RST from a sender that cannot be forged ends it at once, giving its
 * client's slot back), else 0. */
static __always_inline int policy_ct_follow(const struct policy_flow *f, int trusted)
{
	struct weft_policy_ct_entry *e;
	struct weft_ct_key k;
	int reply = 0;

	ct_key(&k, f->saddr, f->daddr, f->sport, f->dport, f->proto, 0);
	e = bpf_map_lookup_elem(&weft_policy_ct, &k);
	if (!e) {
		ct_key(&k, f->daddr, f->saddr, f->dport, f->sport, f->proto, 0);
		e = bpf_map_lookup_elem(&weft_policy_ct, &k);
		reply = 1;
	}
	if (!e)
		return 0;
	if (trusted && f->proto == IPPROTO_TCP && (f->tcp_flags & TCP_F_RST)) {
		if (!tracing() && bpf_map_delete_elem(&weft_policy_ct, &k) == 0)
			source_put(&weft_policy_ct_opened, k.saddr);
		return 1;
	}
	if (!reply && f->proto == IPPROTO_TCP && policy_opens(f)) {
		/* a SYN opens a new connection on an old tuple: judged as
		 * new, under the rules of now */
		if (!tracing() && bpf_map_delete_elem(&weft_policy_ct, &k) == 0)
			source_put(&weft_policy_ct_opened, k.saddr);
		return 0;
	}
	policy_ct_touch(e, f, reply);
	return 1;
}

/* Track the new connection f.  0, or a negative drop reason. */
static __always_inline int policy_ct_open(const struct policy_flow *f)
{
	struct weft_policy_ct_entry e = {
		.last_seen = ct_now(),
		.flags = f->proto == IPPROTO_TCP ? WEFT_CT_F_SYN : 0,
	};
	struct weft_ct_key k;
	int err;

	err = source_take(&weft_policy_ct_opened, &weft_policy_ct_closed, policy_ct_source_max,
			  f->saddr);
	if (err < 0)
		return err == -WEFT_DROP_CT_SOURCE_LIMIT ? -WEFT_DROP_POLICY_CT_LIMIT
							  : -WEFT_DROP_POLICY_CT_FULL;
	if (tracing())
		return 0;	/* it would be tracked */
	ct_key(&k, f->saddr, f->daddr, f->sport, f->dport, f->proto, 0);
	err = bpf_map_update_elem(&weft_policy_ct, &k, &e, BPF_NOEXIST);
	if (err < 0) {
		source_put(&weft_policy_ct_opened, f->saddr);
		/* another CPU tracked it first: it is tracked */
		return err == -CT_EEXIST ? 0 : -WEFT_DROP_POLICY_CT_FULL;
	}
	return 0;
}

static __always_inline int policy_isolated(const struct weft_endpoint *ep)
{
	return ep && (ep->flags & (WEFT_EP_F_ISOLATE_IN | WEFT_EP_F_ISOLATE_OUT));
}

/* The verdict on a packet f from src to dst (pods of this node, or NULL
 * for a peer that is not), after translation and not the answer of a
 * translated connection: WEFT_DROP_NONE or the reason to drop it.
 * trusted: its sender cannot be forged (a pod, or a node's pod over the
 * tunnel), so its RST may end the connection. */
static __always_inline __u32 policy_check(const struct weft_config *cfg,
					  const struct weft_endpoint *src,
					  const struct weft_endpoint *dst,
					  const struct policy_flow *f, int trusted)
{
	struct policy_why why;
	__u32 reason;
	int err;

	if (!src && !dst)
		return WEFT_DROP_NONE;
	/* the node and its own pods, either way; a pod and itself (through
	 * its service, from the hairpin source) */
	if ((dst && (f->saddr == cfg->gateway_ip || f->saddr == cfg->node_ip ||
		     f->saddr == bpf_htonl(WEFT_HAIRPIN_IP))) ||
	    (src && (f->daddr == cfg->gateway_ip || f->daddr == cfg->node_ip)))
		return WEFT_DROP_NONE;
	if (policy_ct_follow(f, trusted)) {
		trace_policy(WEFT_TRACE_S_POLICY_CT, 0, 0);
		return WEFT_DROP_NONE;
	}
	reason = policy_judge(src, dst, f, &why);
	trace_policy(WEFT_TRACE_S_POLICY, why.rule_out, why.rule_in);
	policy_log(src, dst, f, reason, &why);
	if (reason != WEFT_DROP_NONE)
		return reason;
	if (!policy_opens(f))
		return WEFT_DROP_NONE;	/* allowed, but not the start of a connection */
	err = policy_ct_open(f);
	if (err < 0 && (policy_isolated(src) || policy_isolated(dst)))
		return -err;
	return WEFT_DROP_NONE;
}

#endif
