/*
 * cidr.h — IPv4 addresses and CIDR blocks: parse, format, contain, overlap,
 * and carve a block into equal subnets.
 *
 * Addresses are uint32_t in host byte order.  A struct cidr is always in
 * canonical form: no bits set below the prefix (cidr_parse refuses
 * "10.0.0.1/8" — the caller meant something else and should be told).
 */
#ifndef WEFT_CIDR_H
#define WEFT_CIDR_H

#include <stdbool.h>
#include <stdint.h>

#define IP4_STRLEN 16		/* "255.255.255.255" + NUL */
#define CIDR_STRLEN 19		/* "255.255.255.255/32" + NUL */

struct cidr {
	uint32_t addr;
	uint8_t len;		/* 0..32 */
};

/* Dotted quad, exactly four decimal octets without leading zeros
 * (so "010.1.1.1" is refused rather than read as octal or decimal).
 * 0 or -EINVAL. */
int ip4_parse(const char *s, uint32_t *out);
void ip4_format(uint32_t addr, char buf[IP4_STRLEN]);

/* "a.b.c.d/len", the prefix in decimal without leading zeros.
 * 0, -EINVAL (syntax) or -EDOM (host bits set; *out then holds the block
 * with them cleared, for a "did you mean" message). */
int cidr_parse(const char *s, struct cidr *out);
void cidr_format(const struct cidr *c, char buf[CIDR_STRLEN]);

uint32_t cidr_mask(uint8_t len);
uint64_t cidr_size(const struct cidr *c);	/* 2^(32-len) */
bool cidr_contains_ip(const struct cidr *c, uint32_t ip);
bool cidr_contains(const struct cidr *outer, const struct cidr *inner);
bool cidr_overlaps(const struct cidr *a, const struct cidr *b);

/* The index-th subnet of length sub_len inside net (index 0 = first).
 * 0, -EINVAL (sub_len < net->len or > 32), -ERANGE (index past the end). */
int cidr_subnet(const struct cidr *net, uint8_t sub_len, uint64_t index, struct cidr *out);
/* How many subnets of length sub_len fit in net (0 if sub_len < net->len). */
uint64_t cidr_subnet_count(const struct cidr *net, uint8_t sub_len);

#endif
