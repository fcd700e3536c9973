/*
 * base64.c — RFC 4648 base64 of base64.h.
 *
 * Decoding is strict, as Go's base64.StdEncoding is (kubectl reads the same
 * files): four characters make three bytes, '=' only at the end and only
 * as one or two pad characters of the last group, and the bits a pad drops
 * must be zero, so every byte string has exactly one encoding.
 */
#include "lib/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i, o = 0;
	char *out;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3) {
		errno = EOVERFLOW;
		return NULL;
	}
	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return out;
}

static int value_of(char c)
{
	const char *p = c ? strchr(alphabet, c) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

int base64_decode(const char *text, size_t len, unsigned char **out, size_t *outlen)
{
	unsigned char *buf;
	size_t o = 0, k = 0, pads = 0;
	uint32_t group = 0;

	*out = NULL;
	*outlen = 0;
	buf = malloc(len / 4 * 3 + 3);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		int v;

		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			/* one or two pads, ending the third or fourth place of a group */
			if (k < 2 || k + pads >= 4)
				goto bad;
			pads++;
			continue;
		}
		if (pads || (v = value_of(c)) < 0)
			goto bad;
		group = group << 6 | (uint32_t)v;
		if (++k == 4) {
			buf[o++] = (unsigned char)(group >> 16);
			buf[o++] = (unsigned char)(group >> 8);
			buf[o++] = (unsigned char)group;
			k = 0;
			group = 0;
		}
	}
	if (pads) {
		if (k + pads != 4)
			goto bad;
		if (k == 2) {
			if (group & 0xf)
				goto bad;
			buf[o++] = (unsigned char)(group >> 4);
		} else {
			if (group & 0x3)
				goto bad;
			buf[o++] = (unsigned char)(group >> 10);
			buf[o++] = (unsigned char)(group >> 2);
		}
	} else if (k) {
		goto bad;
	}
	buf[o] = 0;
	*out = buf;
	*outlen = o;
	return 0;
bad:
	explicit_bzero(buf, len / 4 * 3 + 3);
	free(buf);
	return -EINVAL;
}
