/*
 * policy_keys.c — a rule set's keys (policy_keys.h).
 */
#include <string.h>
#include <arpa/inet.h>

#include "agent/policy_keys.h"
#include "lib/cidr.h"

int key_add(struct keyset *s, uint32_t dir, uint32_t peer, uint8_t proto, uint16_t port,
	    int prefixlen, uint32_t rule)
{
	struct pkey *k;

	if (policy_grow((void **)&s->keys, &s->cap, s->n, sizeof(*s->keys)) < 0)
		return -ENOMEM;
	k = &s->keys[s->n++];
	memset(k, 0, sizeof(*k));
	k->k.prefixlen = (__u32)prefixlen;
	k->k.peer = htonl(peer);
	k->k.dir = (__u8)dir;
	k->k.proto = prefixlen > WEFT_POLICY_PREFIX_ALL ? proto : 0;
	k->k.port = prefixlen > WEFT_POLICY_PREFIX_PROTO ? htons(port) : 0;
	k->rule = rule;
	return 0;
}

/* Keys for peer on ports lo..hi of proto: aligned blocks of 2^k ports,
 * each one trie key of prefix 96 - k. */
int key_add_range(struct keyset *s, uint32_t dir, uint32_t peer, uint8_t proto, uint16_t lo,
		  uint16_t hi, uint32_t rule)
{
	uint32_t cur = lo;
	int err = 0;

	while (cur <= hi && err == 0) {
		int k = 0;

		while (k < 16 && (cur & ((1u << (k + 1)) - 1)) == 0 && cur + (1u << (k + 1)) - 1 <= hi)
			k++;
		err = key_add(s, dir, peer, proto, (uint16_t)cur, WEFT_POLICY_PREFIX_PORT - k, rule);
		cur += 1u << k;
	}
	return err;
}

/* The keys of rule for the peer identity peer, on the rule's ports as
 * self (a view of the local identity) resolves them: a named port of an
 * egress rule is the destination's, and rule_keys adds it. */
int port_keys(struct keyset *s, int dir, uint32_t peer, const struct netpol_rule *rule,
	      const struct netpol_pod *selfv, uint32_t ref)
{
	int err = 0;

	if (rule->nports == 0)
		return key_add(s, (uint32_t)dir, peer, 0, 0, WEFT_POLICY_PREFIX_ALL, ref);
	for (size_t q = 0; q < rule->nports && err == 0; q++) {
		const struct netpol_port *port = &rule->ports[q];
		uint16_t lo, hi;

		if (port->name[0] && dir == NETPOL_EGRESS)
			continue;	/* resolved on each destination */
		if (netpol_port_range(port, selfv, &lo, &hi) < 0)
			continue;	/* a name this pod does not have */
		err = key_add_range(s, (uint32_t)dir, peer, port->proto, lo, hi, ref);
	}
	return err;
}

/* The order of a rule set's keys: any total order of the 16 key bytes
 * serves (merges and searches all use this one), and two 64-bit words
 * compare faster than memcmp, which dominated computing a set. */
_Static_assert(sizeof(struct weft_policy_key) == 2 * sizeof(uint64_t), "pkey_cmp reads two words");

int pkey_cmp(const void *a, const void *b)
{
	uint64_t x[2], y[2];

	memcpy(x, &((const struct pkey *)a)->k, sizeof(x));
	memcpy(y, &((const struct pkey *)b)->k, sizeof(y));
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Sort and drop duplicates (the first rule number stays). */
void keyset_normalize(struct keyset *s)
{
	size_t w = 0;

	if (s->n == 0)
		return;
	qsort(s->keys, s->n, sizeof(*s->keys), pkey_cmp);
	for (size_t i = 1; i < s->n; i++)
		if (pkey_cmp(&s->keys[w], &s->keys[i]) != 0)
			s->keys[++w] = s->keys[i];
	s->n = w + 1;
}

bool keys_equal(const struct pkey *a, size_t na, const struct pkey *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* By direction, then address, then length: a prefix comes before the
 * prefixes inside it. */
int pcidr_cmp(const void *a, const void *b)
{
	const struct pcidr *x = a, *y = b;
	uint32_t xa = ntohl(x->addr), ya = ntohl(y->addr);

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (xa != ya)
		return xa < ya ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

bool cidrs_equal(const struct pcidr *a, size_t na, const struct pcidr *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

static int cidr_add(struct cidrset *cs, const struct cidr *c, int dir, uint32_t id)
{
	if (policy_grow((void **)&cs->c, &cs->cap, cs->n, sizeof(*cs->c)) < 0)
		return -ENOMEM;
	cs->c[cs->n++] = (struct pcidr){
		.addr = htonl(c->len ? c->addr & (~0u << (32 - c->len)) : 0),
		.len = c->len,
		.dir = (uint8_t)dir,
		.id = id,
	};
	return 0;
}

/* Does peer's block hold the addresses whose longest prefix is c? */
static bool block_holds(const struct netpol_peer *peer, const struct cidr *c)
{
	if (!cidr_contains(&peer->block, c))
		return false;
	for (size_t e = 0; e < peer->nexcept; e++)
		if (cidr_contains(&peer->except[e], c))
			return false;
	return true;
}

/* The ipBlocks of a rule set in direction dir (bl; weft_bpf.h, "ipBlocks"):
 * every prefix they name goes to cs with a CIDR identity for what the
 * blocks holding it allow (the same for prefixes that allow the same; 0
 * for none), and each identity's keys to s.  A prefix that says what the
 * prefix around it says is left out. */
int blocks_compile(const struct blockset *bl, int dir, const struct netpol_pod *selfv,
		   struct keyset *s, struct cidrset *cs)
{
	struct cidrset pre = { 0 };
	struct keyset *sigs = NULL;	/* identity n + 1 allows sigs[n] */
	size_t nsigs = 0, cap_sigs = 0, depth = 0;
	const struct pcidr *around[33];	/* the prefixes written around this one */
	int err = 0;

	for (size_t i = 0; i < bl->n && err == 0; i++) {
		const struct netpol_peer *peer = bl->b[i].peer;

		if (bl->b[i].dir != dir)
			continue;
		err = cidr_add(&pre, &peer->block, dir, 0);
		for (size_t e = 0; e < peer->nexcept && err == 0; e++)
			if (cidr_contains(&peer->block, &peer->except[e]))
				err = cidr_add(&pre, &peer->except[e], dir, 0);
	}
	if (pre.n)
		qsort(pre.c, pre.n, sizeof(*pre.c), pcidr_cmp);
	for (size_t i = 0; i < pre.n && err == 0; i++) {
		struct cidr c = { .addr = ntohl(pre.c[i].addr), .len = pre.c[i].len };
		struct keyset k = { 0 };
		uint32_t id = 0, outer;
		size_t j;

		if (i && pcidr_cmp(&pre.c[i - 1], &pre.c[i]) == 0)
			continue;
		for (size_t b = 0; b < bl->n && err == 0; b++)
			if (bl->b[b].dir == dir && block_holds(bl->b[b].peer, &c))
				err = port_keys(&k, dir, 0, bl->b[b].rule, selfv, bl->b[b].ref);
		keyset_normalize(&k);
		for (j = 0; j < nsigs && k.n && !keys_equal(sigs[j].keys, sigs[j].n, k.keys, k.n); j++)
			;
		if (k.n && j == nsigs && err == 0) {
			err = policy_grow((void **)&sigs, &cap_sigs, nsigs, sizeof(*sigs));
			if (err == 0) {
				sigs[nsigs++] = k;
				k.keys = NULL;
			}
		}
		free(k.keys);
		if (err < 0)
			break;
		if (k.n)
			id = WEFT_ID_CIDR | (uint32_t)(j + 1);
		pre.c[i].id = id;
		while (depth && !cidr_contains(&(struct cidr){ .addr = ntohl(around[depth - 1]->addr),
							       .len = around[depth - 1]->len },
						&c))
			depth--;
		outer = depth ? around[depth - 1]->id : 0;
		if (id == outer)
			continue;
		err = cidr_add(cs, &c, dir, id);
		around[depth++] = &pre.c[i];
	}
	for (size_t j = 0; j < nsigs; j++) {
		for (size_t i = 0; i < sigs[j].n && err == 0; i++) {
			if (policy_grow((void **)&s->keys, &s->cap, s->n, sizeof(*s->keys)) < 0) {
				err = -ENOMEM;
				break;
			}
			s->keys[s->n] = sigs[j].keys[i];
			s->keys[s->n++].k.peer = htonl(WEFT_ID_CIDR | (uint32_t)(j + 1));
		}
		free(sigs[j].keys);
	}
	free(sigs);
	free(pre.c);
	return err;
}

/* Is every key of a in b (both sorted)? */
bool keys_subset(const struct pkey *a, size_t na, const struct pkey *b, size_t nb)
{
	size_t j = 0;

	for (size_t i = 0; i < na; i++) {
		while (j < nb && pkey_cmp(&b[j], &a[i]) < 0)
			j++;
		if (j == nb || pkey_cmp(&b[j], &a[i]) != 0)
			return false;
	}
	return true;
}
