/*
 * pb.c — the protocol buffers wire format (see pb.h): varints, fixed
 * 64-bit doubles and length-delimited fields, written into one growing
 * buffer, and read back one field at a time.
 *
 * A field is a key, (number << 3 | wire type) as a varint, then the value:
 * a varint (7 bits a byte, low first, high bit set on all but the last), 8
 * little-endian bytes, or a varint length and that many bytes.
 *
 * Invariants (writer):
 *   1. b->len <= b->cap <= PB_MAX_BYTES, and data[0..len) is what was
 *      written, except the bodies of messages still open, whose length is
 *      not yet in front of them.
 *   2. Once b->err is set nothing more is written.
 */
#include "lib/pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VARINT_MAX 10		/* bytes of a 64-bit varint */
#define FIELD_MAX ((1u << 29) - 1)

void pb_init(struct pb *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_free(struct pb *b)
{
	if (!b)
		return;
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int pb_error(const struct pb *b)
{
	return b->err;
}

/* Room for n more bytes: true, or false with b->err set. */
static bool reserve(struct pb *b, size_t n)
{
	size_t cap;
	uint8_t *d;

	if (b->err)
		return false;
	if (n > PB_MAX_BYTES - b->len) {
		b->err = -E2BIG;
		return false;
	}
	if (b->len + n <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	if (cap > PB_MAX_BYTES)
		cap = PB_MAX_BYTES;
	d = realloc(b->data, cap);
	if (!d) {
		b->err = -ENOMEM;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* v at out (varint_size(v) bytes). */
static void varint_at(uint8_t *out, uint64_t v)
{
	while (v >= 0x80) {
		*out++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*out = (uint8_t)v;
}

static void raw_varint(struct pb *b, uint64_t v)
{
	size_t n = varint_size(v);

	if (!reserve(b, n))
		return;
	varint_at(b->data + b->len, v);
	b->len += n;
}

static void key(struct pb *b, uint32_t field, enum pb_wire wire)
{
	raw_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void pb_put_varint(struct pb *b, uint32_t field, uint64_t v)
{
	key(b, field, PB_VARINT);
	raw_varint(b, v);
}

void pb_put_bool(struct pb *b, uint32_t field, bool v)
{
	pb_put_varint(b, field, v ? 1 : 0);
}

void pb_put_double(struct pb *b, uint32_t field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	key(b, field, PB_FIXED64);
	if (!reserve(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->data[b->len++] = (uint8_t)(bits >> (8 * i));
}

void pb_put_bytes(struct pb *b, uint32_t field, const void *data, size_t len)
{
	key(b, field, PB_BYTES);
	raw_varint(b, len);
	if (!reserve(b, len))
		return;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

void pb_put_string(struct pb *b, uint32_t field, const char *s)
{
	pb_put_bytes(b, field, s, strlen(s));
}

size_t pb_open(struct pb *b, uint32_t field)
{
	key(b, field, PB_BYTES);
	return b->len;
}

void pb_close(struct pb *b, size_t mark)
{
	size_t body, n;

	if (b->err || mark > b->len)
		return;
	body = b->len - mark;
	n = varint_size(body);
	if (!reserve(b, n))
		return;
	memmove(b->data + mark + n, b->data + mark, body);
	varint_at(b->data + mark, body);
	b->len += n;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t out = 0;

	for (int i = 0; i < VARINT_MAX; i++) {
		if (*p >= end)
			return -EBADMSG;
		out |= (uint64_t)(**p & 0x7f) << (7 * i);
		if (!(*(*p)++ & 0x80)) {
			*v = out;
			return 0;
		}
	}
	return -EBADMSG;
}

int pb_read_next(const uint8_t **p, const uint8_t *end, struct pb_field *f)
{
	uint64_t k, v;
	size_t width;

	if (*p >= end)
		return 0;
	if (read_varint(p, end, &k) < 0 || (k >> 3) == 0 || (k >> 3) > FIELD_MAX)
		return -EBADMSG;
	memset(f, 0, sizeof(*f));
	f->number = (uint32_t)(k >> 3);
	f->wire = (enum pb_wire)(k & 7);
	switch (f->wire) {
	case PB_VARINT:
		return read_varint(p, end, &f->value) < 0 ? -EBADMSG : 1;
	case PB_FIXED64:
	case PB_FIXED32:
		width = f->wire == PB_FIXED64 ? 8 : 4;
		if ((size_t)(end - *p) < width)
			return -EBADMSG;
		for (size_t i = 0; i < width; i++)
			f->value |= (uint64_t)(*p)[i] << (8 * i);
		*p += width;
		return 1;
	case PB_BYTES:
		if (read_varint(p, end, &v) < 0 || v > (uint64_t)(end - *p))
			return -EBADMSG;
		f->bytes = *p;
		f->len = (size_t)v;
		*p += v;
		return 1;
	default:
		return -EBADMSG;
	}
}
