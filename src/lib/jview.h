/*
 * jview.h — a read-only view of one JSON text: parsed once into a flat
 * array of tokens, and read where it lies.
 *
 * An agent reads thousands of objects (Services, EndpointSlices,
 * HostSubnets) in its first lists and reads a handful of fields of each.
 * jansson builds a tree for that: a malloc for every value and every key,
 * a hash table for every object, all freed again; in weft-hollow that
 * parse and free was about 45 % of the agents' CPU in a cold start.  A
 * view is two allocations however large the text: a copy of it, in which
 * every string is unescaped in place and ends with a NUL (an escape never
 * makes a string longer, and the closing quote is no longer needed), and
 * the tokens, each a value in document order with the index past its
 * subtree, so a lookup skips a member's whole value in one step.
 *
 * What is valid is what jansson's json_loadb(text, len, 0, ...) accepts,
 * and a value read here is what jansson reads (jview_test checks both on
 * random and damaged texts):
 *   1. the text is one object or array, with only white space around it;
 *   2. strings are UTF-8 (no overlong form, no surrogate, nothing past
 *      U+10FFFF), without control characters, and their escapes are
 *      JSON's; \u0000 is refused; \u surrogates come in pairs;
 *   3. a number without '.', 'e' or 'E' is an integer and must fit in
 *      int64_t; one with them is a real, refused when it overflows a
 *      double;
 *   4. nesting deeper than JVIEW_MAX_DEPTH is refused;
 *   5. an object may name a key twice: the last one counts (lookups
 *      return it), as in jansson;
 *   6. a NUL byte is refused, but for one right after a number or a
 *      literal: jansson passes over that one as white space, and so does
 *      this.
 *
 * Reading: a struct jval is a value of a view (the view and a token's
 * index), passed by value.  A lookup that finds nothing gives a jval that
 * is not ok; every reader takes one and answers as for a value of another
 * type (NULL, 0, false), so lookups chain without checks in between:
 *   jval_str(jval_get(jval_get(obj, "metadata"), "name")).
 *
 * Ownership: the view owns its copy and its tokens; strings returned
 * point into the copy and live until jview_free.  A jval borrows its
 * view.  jview_free of a zeroed view is fine.
 */
#ifndef WEFT_LIB_JVIEW_H
#define WEFT_LIB_JVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define JVIEW_MAX_DEPTH 2048			/* jansson's JSON_PARSER_MAX_DEPTH */
#define JVIEW_MAX_BYTES (1024u * 1024 * 1024)	/* offsets are 32-bit */

enum jval_type {
	JVAL_NONE = 0,		/* not found: no value */
	JVAL_OBJECT,
	JVAL_ARRAY,
	JVAL_STRING,
	JVAL_INTEGER,
	JVAL_REAL,
	JVAL_TRUE,
	JVAL_FALSE,
	JVAL_NULL,
};

struct jview_token;

struct jview {
	char *text;			/* the copy: strings unescaped in place, NUL-ended */
	size_t len;
	struct jview_token *tok;	/* tok[0] is the top value */
	uint32_t n, cap;
};

/* Where a text was found wrong and in words: the line and column (in
 * characters) from 1, and the position in bytes from 0, of the byte or
 * token found wrong (or of the end, when the text ends too early).  The
 * words are not jansson's. */
struct jview_error {
	int line, column;
	size_t position;
	char text[160];
};

struct jval {
	const struct jview *view;
	uint32_t at;			/* a token's index; UINT32_MAX: none */
};

/* 0 and *v ready (free with jview_free), -EINVAL and *err filled when the
 * text is not valid (rules above; err may be NULL), -ENOMEM, -E2BIG past
 * JVIEW_MAX_BYTES.  *v is zeroed on failure. */
int jview_parse(struct jview *v, const char *text, size_t len, struct jview_error *err)
	__attribute__((warn_unused_result));
void jview_free(struct jview *v);

/* The top value (an object or an array). */
struct jval jview_root(const struct jview *v);

enum jval_type jval_type(struct jval x);
static inline bool jval_ok(struct jval x) { return jval_type(x) != JVAL_NONE; }
static inline bool jval_is_object(struct jval x) { return jval_type(x) == JVAL_OBJECT; }
static inline bool jval_is_array(struct jval x) { return jval_type(x) == JVAL_ARRAY; }
static inline bool jval_is_string(struct jval x) { return jval_type(x) == JVAL_STRING; }
static inline bool jval_is_integer(struct jval x) { return jval_type(x) == JVAL_INTEGER; }
static inline bool jval_is_false(struct jval x) { return jval_type(x) == JVAL_FALSE; }
/* No value (what a lookup that finds nothing gives). */
static inline struct jval jval_none(void) { return (struct jval){ .view = NULL, .at = UINT32_MAX }; }
/* x when it is an array, else none: its elements walked with
 * jval_first/jval_next, an object's members never taken for them. */
static inline struct jval jval_array(struct jval x) { return jval_is_array(x) ? x : jval_none(); }

/* An object's member named key (the last of that name); none when x is no
 * object or has none. */
struct jval jval_get(struct jval x, const char *key);
/* Members by a dotted path of keys ("metadata.name"); none as above. */
struct jval jval_path(struct jval x, const char *dotted_path);
/* A string's bytes, NUL-ended (NULL when x is no string), and their
 * length. */
const char *jval_str(struct jval x);
size_t jval_strlen(struct jval x);
/* jval_str(jval_path(x, dotted_path)). */
const char *jval_path_str(struct jval x, const char *dotted_path);
/* An integer's value; 0 when x is no integer (as json_integer_value). */
int64_t jval_integer(struct jval x);
/* How many elements an array has, or members an object (as written: a
 * name that comes twice counts twice); 0 otherwise. */
size_t jval_size(struct jval x);

/* Walking an array's elements or an object's members' values, in order:
 *   for (struct jval e = jval_first(arr); jval_ok(e); e = jval_next(e))
 * jval_key gives the key of a value so reached in an object (NULL for an
 * array's element).  An object's members are walked as written: a name
 * that comes twice is met twice (jval_get gives the last of them, which
 * is the one jansson keeps). */
struct jval jval_first(struct jval container);
struct jval jval_next(struct jval element);
const char *jval_key(struct jval member);
/* An array's i-th element; none past its end or when x is no array. */
struct jval jval_at(struct jval x, size_t i);

/* x as a jansson tree (new reference; NULL on ENOMEM or when x is none),
 * for readers written against jansson. */
json_t *jval_to_json(struct jval x);

#endif
