/*
 * pb.h — protocol buffers on the wire: a writer that appends fields to a
 * growing buffer, and a reader that walks the fields of one message.  No
 * schema: the caller knows the field numbers (the encoding is
 * https://protobuf.dev/programming-guides/encoding/, proto3).
 *
 *   struct pb b;
 *   pb_init(&b);
 *   pb_put_string(&b, 1, "2.0");           field 1, length-delimited
 *   size_t m = pb_open(&b, 9);             field 9, a message ...
 *   pb_put_varint(&b, 1, 150);
 *   pb_close(&b, m);                       ... whose length is now known
 *   if (pb_error(&b)) ...                  -ENOMEM or -E2BIG, sticky
 *   use b.data, b.len; pb_free(&b);
 *
 * Writer: a failure (out of memory, or the buffer past PB_MAX_BYTES) is
 * remembered and every later call does nothing, so a caller writes a whole
 * message and checks pb_error once.  pb_open/pb_close nest: a message is
 * written in place and its length put before it when it is closed (the
 * body moves by the length's few bytes), so there is one buffer however
 * deep the nesting.  Marks must be closed innermost first.
 *
 * Reader: pb_read_next takes the next field of a message; a length-
 * delimited field's bytes are borrowed from the input (a nested message is
 * read by calling pb_read_next on them).  Every length is checked against
 * what is left of the input before use.
 *
 * Ownership: struct pb owns data (pb_free releases it; pb_free of a zeroed
 * struct is fine).
 */
#ifndef WEFT_PB_H
#define WEFT_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PB_MAX_BYTES (64u * 1024 * 1024)	/* a writer's buffer at most */

enum pb_wire { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

struct pb {
	uint8_t *data;
	size_t len, cap;
	int err;		/* 0, or the first failure (-ENOMEM, -E2BIG) */
};

void pb_init(struct pb *b);
void pb_free(struct pb *b);
int pb_error(const struct pb *b);

void pb_put_varint(struct pb *b, uint32_t field, uint64_t v);
void pb_put_bool(struct pb *b, uint32_t field, bool v);
void pb_put_double(struct pb *b, uint32_t field, double v);
void pb_put_bytes(struct pb *b, uint32_t field, const void *data, size_t len);
void pb_put_string(struct pb *b, uint32_t field, const char *s);	/* NUL-terminated */
/* A nested message (or any length-delimited field built in place): its
 * mark, to give to pb_close once its fields are written. */
size_t pb_open(struct pb *b, uint32_t field);
void pb_close(struct pb *b, size_t mark);

/* One field as read. */
struct pb_field {
	uint32_t number;
	enum pb_wire wire;
	uint64_t value;		/* PB_VARINT, PB_FIXED64, PB_FIXED32 */
	const uint8_t *bytes;	/* PB_BYTES: borrowed from the input */
	size_t len;
};

/* The field at *p (before end): 1 with *f filled and *p moved past it; 0
 * at end; -EBADMSG when the input is not a well-formed field (a varint of
 * more than 10 bytes, a length past the end, field number 0, a wire type
 * other than the four above). */
int pb_read_next(const uint8_t **p, const uint8_t *end, struct pb_field *f) __attribute__((warn_unused_result));

#endif
