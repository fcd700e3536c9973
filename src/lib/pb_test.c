/*
 * pb_test.c — the protobuf encoding guide's own examples, the reader's
 * refusals, and a randomized cross-check: random nested messages written
 * by pb (one buffer, lengths put in front on close) against a naive
 * reference that writes each message into a buffer of its own first, then
 * read back field by field with pb_read_next.
 */
#include "lib/pb.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>

TEST(pb_guide_examples)
{
	/* "field 1 = 150" is 08 96 01; "field 2 = testing" is 12 07 't'...;
	 * a message field 3 holding the first is 1a 03 08 96 01 */
	static const uint8_t want[] = { 0x08, 0x96, 0x01, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',
					0x1a, 0x03, 0x08, 0x96, 0x01 };
	struct pb b;
	size_t m;

	pb_init(&b);
	pb_put_varint(&b, 1, 150);
	pb_put_string(&b, 2, "testing");
	m = pb_open(&b, 3);
	pb_put_varint(&b, 1, 150);
	pb_close(&b, m);
	CHECK_EQ(pb_error(&b), 0);
	CHECK_EQ(b.len, sizeof(want));
	CHECK(memcmp(b.data, want, sizeof(want)) == 0);
	pb_free(&b);
}

TEST(pb_doubles_bools_and_long_bodies)
{
	struct pb b;
	const uint8_t *p, *end;
	struct pb_field f;
	char big[300];
	size_t m;
	double d;

	memset(big, 'x', sizeof(big));
	pb_init(&b);
	pb_put_double(&b, 7, 1.5);
	pb_put_bool(&b, 4, true);
	m = pb_open(&b, 25);	/* a body over 127 bytes: a 2-byte length moves it */
	pb_put_bytes(&b, 1, big, sizeof(big));
	pb_close(&b, m);
	CHECK_EQ(pb_error(&b), 0);
	p = b.data;
	end = b.data + b.len;
	CHECK_EQ(pb_read_next(&p, end, &f), 1);
	CHECK_EQ(f.number, 7);
	CHECK_EQ(f.wire, PB_FIXED64);
	memcpy(&d, &f.value, sizeof(d));
	CHECK(d == 1.5);
	CHECK_EQ(pb_read_next(&p, end, &f), 1);
	CHECK(f.number == 4 && f.wire == PB_VARINT && f.value == 1);
	CHECK_EQ(pb_read_next(&p, end, &f), 1);
	CHECK(f.number == 25 && f.wire == PB_BYTES && f.len == sizeof(big) + 3);
	{
		const uint8_t *q = f.bytes, *qend = f.bytes + f.len;
		struct pb_field g;

		CHECK_EQ(pb_read_next(&q, qend, &g), 1);
		CHECK(g.number == 1 && g.len == sizeof(big) && memcmp(g.bytes, big, sizeof(big)) == 0);
		CHECK_EQ(pb_read_next(&q, qend, &g), 0);
	}
	CHECK_EQ(pb_read_next(&p, end, &f), 0);
	pb_free(&b);
}

TEST(pb_reader_refuses_malformed_input)
{
	static const struct {
		uint8_t bytes[12];
		size_t len;
	} bad[] = {
		{ { 0x0a, 0x05, 'a' }, 3 },				/* a length past the end */
		{ { 0x08 }, 1 },					/* a varint missing */
		{ { 0x08, 0x80, 0x80 }, 3 },				/* a varint cut short */
		{ { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 12 }, /* 11 bytes */
		{ { 0x00, 0x01 }, 2 },					/* field 0 */
		{ { 0x0b }, 1 },					/* wire type 3 (groups) */
		{ { 0x09, 1, 2, 3 }, 4 },				/* a fixed64 cut short */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const uint8_t *p = bad[i].bytes;
		struct pb_field f;

		if (pb_read_next(&p, bad[i].bytes + bad[i].len, &f) != -EBADMSG) {
			test_fail(__FILE__, __LINE__, "case %zu was read", i);
			return;
		}
	}
}

/* ------------------------------------------------------------------ randomized */

struct node {
	uint32_t field;
	int type;		/* 0 varint, 1 double, 2 bytes, 3 message */
	uint64_t value;
	uint8_t bytes[40];
	size_t len;
	struct node *kids;
	size_t nkids;
};

static void tree_make(struct node *n, uint64_t *s, int depth)
{
	memset(n, 0, sizeof(*n));
	n->field = 1 + test_rnd(s, test_rnd(s, 2) ? 32 : 5000);
	n->type = (int)test_rnd(s, depth > 0 ? 4 : 3);
	n->value = (uint64_t)test_rnd(s, 0xffffffffu) << test_rnd(s, 33);
	n->len = test_rnd(s, sizeof(n->bytes));
	for (size_t i = 0; i < n->len; i++)
		n->bytes[i] = (uint8_t)test_rnd(s, 256);
	if (n->type == 3) {
		n->nkids = test_rnd(s, 6);
		n->kids = calloc(n->nkids ? n->nkids : 1, sizeof(*n->kids));
		for (size_t i = 0; i < n->nkids; i++)
			tree_make(&n->kids[i], s, depth - 1);
	}
}

static void tree_free(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		tree_free(&n->kids[i]);
	free(n->kids);
}

static void tree_write(struct pb *b, const struct node *n)
{
	size_t m;

	switch (n->type) {
	case 0: pb_put_varint(b, n->field, n->value); break;
	case 1: { double d; memcpy(&d, &n->value, sizeof(d)); pb_put_double(b, n->field, d); } break;
	case 2: pb_put_bytes(b, n->field, n->bytes, n->len); break;
	default:
		m = pb_open(b, n->field);
		for (size_t i = 0; i < n->nkids; i++)
			tree_write(b, &n->kids[i]);
		pb_close(b, m);
	}
}

/* The naive reference: a byte at a time into a buffer of its own. */
struct raw {
	uint8_t *d;
	size_t len;
};

static void raw_byte(struct raw *r, uint8_t c)
{
	r->d = realloc(r->d, r->len + 1);
	r->d[r->len++] = c;
}

static void raw_varint(struct raw *r, uint64_t v)
{
	do {
		raw_byte(r, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

static void naive_write(struct raw *r, const struct node *n)
{
	struct raw body = { 0 };

	raw_varint(r, (uint64_t)n->field << 3 | (n->type == 0 ? 0u : n->type == 1 ? 1u : 2u));
	switch (n->type) {
	case 0: raw_varint(r, n->value); return;
	case 1: for (int i = 0; i < 8; i++) raw_byte(r, (uint8_t)(n->value >> (8 * i))); return;
	case 2: for (size_t i = 0; i < n->len; i++) raw_byte(&body, n->bytes[i]); break;
	default: for (size_t i = 0; i < n->nkids; i++) naive_write(&body, &n->kids[i]);
	}
	raw_varint(r, body.len);
	for (size_t i = 0; i < body.len; i++)
		raw_byte(r, body.d[i]);
	free(body.d);
}

/* Reads the fields of [p, end) against the nodes; true when they agree. */
static bool tree_read(const uint8_t *p, const uint8_t *end, const struct node *nodes, size_t n)
{
	struct pb_field f;

	for (size_t i = 0; i < n; i++) {
		const struct node *want = &nodes[i];

		if (pb_read_next(&p, end, &f) != 1 || f.number != want->field)
			return false;
		if (want->type == 0 && (f.wire != PB_VARINT || f.value != want->value))
			return false;
		if (want->type == 1 && (f.wire != PB_FIXED64 || f.value != want->value))
			return false;
		if (want->type == 2 && (f.wire != PB_BYTES || f.len != want->len ||
					(f.len && memcmp(f.bytes, want->bytes, f.len) != 0)))
			return false;
		if (want->type == 3 && (f.wire != PB_BYTES || !tree_read(f.bytes, f.bytes + f.len, want->kids, want->nkids)))
			return false;
	}
	return pb_read_next(&p, end, &f) == 0;
}

TEST(pb_matches_naive_reference_and_reads_back)
{
	uint64_t s = test_seed() | 1;

	for (int round = 0; round < 300; round++) {
		struct node top[4];
		size_t ntop = 1 + test_rnd(&s, 4);
		struct raw r = { 0 };
		struct pb b;
		bool same, read;

		pb_init(&b);
		for (size_t i = 0; i < ntop; i++) {
			tree_make(&top[i], &s, 4);
			tree_write(&b, &top[i]);
			naive_write(&r, &top[i]);
		}
		same = pb_error(&b) == 0 && b.len == r.len && memcmp(b.data, r.d, r.len) == 0;
		read = same && tree_read(b.data, b.data + b.len, top, ntop);
		for (size_t i = 0; i < ntop; i++)
			tree_free(&top[i]);
		pb_free(&b);
		free(r.d);
		if (!same || !read) {
			test_fail(__FILE__, __LINE__, "round %d (TEST_SEED=%llu): %s", round,
				  (unsigned long long)test_seed(), !same ? "bytes differ" : "read back differs");
			return;
		}
	}
}

TEST(pb_failure_is_sticky)
{
	struct pb b;
	static char huge[1];

	pb_init(&b);
	pb_put_varint(&b, 1, 1);
	pb_put_bytes(&b, 2, huge, PB_MAX_BYTES);	/* past the bound: nothing copied */
	CHECK_EQ(pb_error(&b), -E2BIG);
	pb_put_varint(&b, 3, 3);
	CHECK_EQ(b.len, 2 + 1 + 4);	/* the first field, then the key and length of the refused one */
	pb_free(&b);
	pb_free(NULL);
}
