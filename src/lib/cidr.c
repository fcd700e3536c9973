/*
 * cidr.c — IPv4 addresses and CIDR blocks.
 *
 * Everything is host byte order arithmetic on uint32_t.  Parsing is strict
 * on purpose: a manifest that says "010.0.0.0/8" or "10.0.0.1/8" is a
 * mistake to report, not something to guess at.
 *
 * Invariants:
 *   1. A struct cidr produced here has len <= 32 and addr & ~cidr_mask(len)
 *      == 0 (canonical form).
 *   2. No shift is ever by 32 or more on a 32-bit value (cidr_mask(0) and
 *      /0 subnets are computed through 64-bit arithmetic).
 */
#include "lib/cidr.h"

#include <errno.h>
#include <stdio.h>

/* Reads 1..3 decimal digits without a leading zero (a lone "0" is fine)
 * and a value <= max.  Advances *sp past them.  0 or -EINVAL. */
static int parse_decimal(const char **sp, unsigned max, unsigned *out)
{
	const char *s = *sp;
	unsigned v = 0;
	int n = 0;

	while (*s >= '0' && *s <= '9') {
		if (n == 3)
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || (n > 1 && **sp == '0') || v > max)
		return -EINVAL;
	*sp = s;
	*out = v;
	return 0;
}

/* Parses a dotted quad at *sp, leaving *sp after it. */
static int parse_quad(const char **sp, uint32_t *out)
{
	uint32_t addr = 0;

	for (int i = 0; i < 4; i++) {
		unsigned octet;

		if (i > 0) {
			if (**sp != '.')
				return -EINVAL;
			(*sp)++;
		}
		if (parse_decimal(sp, 255, &octet) < 0)
			return -EINVAL;
		addr = addr << 8 | octet;
	}
	*out = addr;
	return 0;
}

int ip4_parse(const char *s, uint32_t *out)
{
	uint32_t addr;

	if (!s || parse_quad(&s, &addr) < 0 || *s != '\0')
		return -EINVAL;
	*out = addr;
	return 0;
}

void ip4_format(uint32_t addr, char buf[IP4_STRLEN])
{
	snprintf(buf, IP4_STRLEN, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xff,
		 (addr >> 8) & 0xff, addr & 0xff);
}

int cidr_parse(const char *s, struct cidr *out)
{
	uint32_t addr;
	unsigned len;

	if (!s || parse_quad(&s, &addr) < 0 || *s++ != '/')
		return -EINVAL;
	if (parse_decimal(&s, 32, &len) < 0 || *s != '\0')
		return -EINVAL;
	out->len = (uint8_t)len;
	out->addr = addr & cidr_mask(out->len);
	return out->addr == addr ? 0 : -EDOM;
}

void cidr_format(const struct cidr *c, char buf[CIDR_STRLEN])
{
	uint32_t a = c->addr;
	unsigned len = c->len > 32 ? 32 : c->len;

	snprintf(buf, CIDR_STRLEN, "%u.%u.%u.%u/%u", a >> 24, (a >> 16) & 0xff,
		 (a >> 8) & 0xff, a & 0xff, len);
}

uint32_t cidr_mask(uint8_t len)
{
	if (len >= 32)
		return 0xffffffffu;
	return (uint32_t)(0xffffffff00000000ull >> len);
}

uint64_t cidr_size(const struct cidr *c)
{
	return 1ull << (32 - (c->len > 32 ? 32 : c->len));
}

bool cidr_contains_ip(const struct cidr *c, uint32_t ip)
{
	return (ip & cidr_mask(c->len)) == c->addr;
}

bool cidr_contains(const struct cidr *outer, const struct cidr *inner)
{
	return inner->len >= outer->len && cidr_contains_ip(outer, inner->addr);
}

bool cidr_overlaps(const struct cidr *a, const struct cidr *b)
{
	return cidr_contains(a, b) || cidr_contains(b, a);
}

uint64_t cidr_subnet_count(const struct cidr *net, uint8_t sub_len)
{
	if (sub_len < net->len || sub_len > 32)
		return 0;
	return 1ull << (sub_len - net->len);
}

int cidr_subnet(const struct cidr *net, uint8_t sub_len, uint64_t index, struct cidr *out)
{
	if (sub_len < net->len || sub_len > 32)
		return -EINVAL;
	if (index >= cidr_subnet_count(net, sub_len))
		return -ERANGE;
	out->addr = net->addr + (uint32_t)(index << (32 - sub_len));
	out->len = sub_len;
	return 0;
}
