/*
 * policy_keys.h — a rule set's keys, apart from where they come from
 * (policy.c): a rule's ports as LPM port blocks, the sort and
 * comparison of key sets, and an ipBlock set's prefixes with their CIDR
 * identities (bpf/weft_bpf.h, "NetworkPolicy").  Pure functions of their
 * arguments; nothing here touches a map.
 */
#ifndef WEFT_AGENT_POLICY_KEYS_H
#define WEFT_AGENT_POLICY_KEYS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "bpf/weft_bpf.h"
#include "model/netpol.h"

/* Grow *arr (of *cap elements of size) to hold one more than n. */
static inline int policy_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	p = realloc(*arr, c * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

struct pkey {
	struct weft_policy_key k;	/* policy_id 0 */
	uint32_t rule;
};

/* A prefix of a rule set's ipBlocks in weft_policy_cidrs. */
struct pcidr {
	__be32 addr;		/* network order */
	uint8_t len;
	uint8_t dir;
	uint16_t pad;
	uint32_t id;		/* WEFT_ID_CIDR | n, n local to the set; 0 none */
};

struct keyset {
	struct pkey *keys;
	size_t n, cap;
};

struct cidrset {
	struct pcidr *c;
	size_t n, cap;
};

/* The ipBlock peers of the rules that select a class, for blocks_compile. */
struct blockref {
	const struct netpol_peer *peer;
	const struct netpol_rule *rule;
	uint32_t ref;
	int dir;
};

struct blockset {
	struct blockref *b;
	size_t n, cap;
};

int key_add(struct keyset *s, uint32_t dir, uint32_t peer, uint8_t proto, uint16_t port,
	    int prefixlen, uint32_t rule);
int key_add_range(struct keyset *s, uint32_t dir, uint32_t peer, uint8_t proto, uint16_t lo,
		  uint16_t hi, uint32_t rule);
int port_keys(struct keyset *s, int dir, uint32_t peer, const struct netpol_rule *rule,
	      const struct netpol_pod *selfv, uint32_t ref);
int pkey_cmp(const void *a, const void *b);
void keyset_normalize(struct keyset *s);
bool keys_equal(const struct pkey *a, size_t na, const struct pkey *b, size_t nb);
bool keys_subset(const struct pkey *a, size_t na, const struct pkey *b, size_t nb);
int pcidr_cmp(const void *a, const void *b);
bool cidrs_equal(const struct pcidr *a, size_t na, const struct pcidr *b, size_t nb);
int blocks_compile(const struct blockset *bl, int dir, const struct netpol_pod *selfv,
		   struct keyset *s, struct cidrset *cs);

#endif
