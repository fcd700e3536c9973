/*
 * jview.c — a read-only view of a JSON text (jview.h).
 *
 * Parsing is one forward pass over a copy of the text, without recursion.
 * The copy ends with a NUL and 16 more zero bytes, so the scanners stop at
 * the NUL instead of checking a length (a NUL inside the text is refused
 * wherever it is met, but for the one past_nul lets pass as jansson does)
 * and may read a few bytes ahead.  Each value is a token, in document
 * order:
 *   - a string's off and len are those of its unescaped bytes in the
 *     copy: they are written over its escaped text from its first byte
 *     on, never longer, and a NUL after them takes the place of (or
 *     comes before) the closing quote;
 *   - a number's off and len are those of its text, left as it is (a
 *     number is followed by white space, ',', ']', '}', a NUL or the
 *     end, so strtod and the integer reader stop at its end);
 *   - an object's or array's len counts its members or elements; an
 *     object's members are laid out as a key token (flag KEY) followed by
 *     the value's subtree (its first token flagged MEMBER);
 *   - end is the index past the value's subtree; the last element or
 *     member of a container is flagged LAST.
 * While a container is open, its token's off holds the index of the
 * container around it and its end the index of its last value so far, so
 * closing it needs no stack.  Integers are checked against int64_t as
 * they are scanned and read again from their text when asked for; reals
 * go through strtod only when they might overflow (an exponent, or more
 * than 300 digits before the point).
 */
#include "lib/jview.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define NONE UINT32_MAX
#define PAD 16			/* zero bytes past the copy's NUL */

enum { KEY = 1, MEMBER = 2, LAST = 4 };

struct jview_token {
	uint32_t off;		/* string: its bytes in the copy; number: its text */
	uint32_t len;		/* string, number: bytes; object, array: values */
	uint32_t end;		/* the index past this value's subtree */
	uint8_t type;		/* enum jval_type */
	uint8_t flags;		/* KEY, MEMBER, LAST */
};

_Static_assert(sizeof(struct jview_token) == 16, "a token is 16 bytes");

struct parser {
	struct jview *v;
	uint32_t cur;		/* the innermost open container, or NONE */
	uint32_t depth;		/* open containers */
	bool nomem;
	size_t pos;		/* where the text was found wrong */
	const char *why;
	char buf[64];		/* a why with a number in it */
};

static const char unescaped[256] = {
	['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
	['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

/* Records what was wrong where; NULL, for the scanners to return. */
static char *fail(struct parser *ps, const char *at, const char *why)
{
	ps->pos = (size_t)(at - ps->v->text);
	ps->why = why;
	return NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char *skip_ws(char *p)
{
	while (*p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* The first byte at or after p that ends a plain run in a string: '"',
 * '\\', a control character or a byte of a multi-byte character. */
static char *plain_run(char *p)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(' ');

	for (;; p += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)p);
		/* signed: bytes from 0x80 on are below ' ' too */
		__m128i m = _mm_or_si128(_mm_cmplt_epi8(x, space),
					 _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
		unsigned bits = (unsigned)_mm_movemask_epi8(m);

		if (bits)
			return p + __builtin_ctz(bits);
	}
#else
	while ((unsigned char)*p >= ' ' && (unsigned char)*p < 0x80 && *p != '"' && *p != '\\')
		p++;
	return p;
#endif
}

/* The length of the UTF-8 character at p, 0 when it is none (an overlong
 * form, a surrogate, past U+10FFFF, cut short). */
static int utf8_len(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		return (u[1] & 0xc0) == 0x80 ? 2 : 0;
	if (u[0] >= 0xe0 && u[0] <= 0xef) {
		if ((u[1] & 0xc0) != 0x80 || (u[2] & 0xc0) != 0x80)
			return 0;
		if ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] >= 0xa0))
			return 0;
		return 3;
	}
	if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		if ((u[1] & 0xc0) != 0x80 || (u[2] & 0xc0) != 0x80 || (u[3] & 0xc0) != 0x80)
			return 0;
		if ((u[0] == 0xf0 && u[1] < 0x90) || (u[0] == 0xf4 && u[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The four hex digits at p, or -1. */
static int32_t hex4(const char *p)
{
	int32_t cp = 0;

	for (int i = 0; i < 4; i++) {
		int d = hex(p[i]);

		if (d < 0)
			return -1;
		cp = cp << 4 | d;
	}
	return cp;
}

static char *put_utf8(char *w, int32_t cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xc0 | cp >> 6);
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xe0 | cp >> 12);
		*w++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*w++ = (char)(0xf0 | cp >> 18);
		*w++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*w++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	}
	return w;
}

/* r at "\u": the character written at *w; past the escape (two, for a
 * surrogate pair), or NULL. */
static char *unicode(struct parser *ps, char *r, char **w)
{
	int32_t cp = hex4(r + 2), lo;

	if (cp < 0)
		return fail(ps, r, "invalid \\u escape in a string");
	if (cp == 0)
		return fail(ps, r, "\\u0000 in a string");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(ps, r, "unpaired low surrogate in a string");
	if (cp < 0xd800 || cp > 0xdbff) {
		*w = put_utf8(*w, cp);
		return r + 6;
	}
	if (r[6] != '\\' || r[7] != 'u')
		return fail(ps, r, "unpaired high surrogate in a string");
	lo = hex4(r + 8);
	if (lo < 0)
		return fail(ps, r + 6, "invalid \\u escape in a string");
	if (lo < 0xdc00 || lo > 0xdfff)
		return fail(ps, r, "high surrogate without a low one in a string");
	*w = put_utf8(*w, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
	return r + 12;
}

/* r at a byte that stopped a plain run and is neither '"' nor '\\'. */
static char *odd_byte(struct parser *ps, char *r, char **w)
{
	unsigned char c = (unsigned char)*r;
	int n;

	if (c >= 0x80) {
		n = utf8_len(r);
		if (!n)
			return fail(ps, r, "invalid UTF-8 in a string");
		if (*w != r)
			memmove(*w, r, (size_t)n);
		*w += n;
		return r + n;
	}
	if (r == ps->v->text + ps->v->len)
		return fail(ps, r, "end of text in a string");
	snprintf(ps->buf, sizeof(ps->buf), "control character 0x%x in a string", c);
	return fail(ps, r, ps->buf);
}

/* p at a string's opening quote: its text unescaped from p + 1 on and
 * NUL-ended, *len its length; past its closing quote, or NULL. */
static char *string(struct parser *ps, char *p, uint32_t *len)
{
	char *start = p + 1, *r = plain_run(start), *w = r, *e;

	while (*r != '"') {
		if (*r == '\\') {
			char c = unescaped[(unsigned char)r[1]];

			if (c) {
				*w++ = c;
				r += 2;
			} else if (r[1] == 'u') {
				r = unicode(ps, r, &w);
			} else {
				return fail(ps, r, "invalid escape in a string");
			}
		} else {
			r = odd_byte(ps, r, &w);
		}
		if (!r)
			return NULL;
		e = plain_run(r);
		if (w != r)
			memmove(w, r, (size_t)(e - r));
		w += e - r;
		r = e;
	}
	*w = 0;
	*len = (uint32_t)(w - start);
	return r + 1;
}

/* p at a number's first byte ('-' or a digit): past it, or NULL; *type
 * JVAL_INTEGER or JVAL_REAL. */
static char *number(struct parser *ps, char *p, uint8_t *type)
{
	char *s = p;
	bool neg = *p == '-', exp = false;
	uint64_t u = 0;
	int digits = 0;

	p += neg;
	if (*p == '0') {
		if (is_digit(*++p))
			return fail(ps, p - 1, "leading zero in a number");
	} else if (is_digit(*p)) {
		for (; is_digit(*p); p++, digits++)
			if (digits < 19)
				u = u * 10 + (uint64_t)(*p - '0');
	} else {
		return fail(ps, p, "digit expected in a number");
	}
	if (*p != '.' && (*p | 0x20) != 'e') {
		*type = JVAL_INTEGER;
		if (digits > 19 || u > (uint64_t)INT64_MAX + neg)
			return fail(ps, s, neg ? "too big negative integer" : "too big integer");
		return p;
	}
	if (*p == '.' && !is_digit(*++p))
		return fail(ps, p, "digit expected after '.' in a number");
	while (is_digit(*p))
		p++;
	if ((*p | 0x20) == 'e') {
		exp = true;
		p += (p[1] == '+' || p[1] == '-') ? 2 : 1;
		if (!is_digit(*p))
			return fail(ps, p, "digit expected in an exponent");
		while (is_digit(*p))
			p++;
	}
	*type = JVAL_REAL;
	if (exp || digits > 300) {
		double d;

		errno = 0;
		d = strtod(s, NULL);
		if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE)
			return fail(ps, s, "real number overflow");
	}
	return p;
}

static int grow(struct jview *v)
{
	uint32_t cap = v->cap ? v->cap * 2 : (uint32_t)(v->len / 8) + 16;
	struct jview_token *t = realloc(v->tok, (size_t)cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	v->tok = t;
	v->cap = cap;
	return 0;
}

/* A new token, counted as a value of the open container (keys are not);
 * NULL on ENOMEM. */
static struct jview_token *push(struct parser *ps, uint8_t type, uint8_t flags)
{
	struct jview *v = ps->v;
	struct jview_token *t;

	if (v->n == v->cap && grow(v) < 0) {
		ps->nomem = true;
		return NULL;
	}
	t = &v->tok[v->n];
	*t = (struct jview_token){ .end = v->n + 1, .type = type, .flags = flags };
	if (flags & KEY) {
		/* not a value of the container */
	} else if (ps->cur == NONE) {
		t->flags |= LAST;
	} else {
		struct jview_token *c = &v->tok[ps->cur];

		c->len++;
		c->end = v->n;
		if (c->type == JVAL_OBJECT)
			t->flags |= MEMBER;
	}
	v->n++;
	return t;
}

static char closer(const struct parser *ps)
{
	return ps->v->tok[ps->cur].type == JVAL_OBJECT ? '}' : ']';
}

static void close_container(struct parser *ps)
{
	struct jview *v = ps->v;
	struct jview_token *c = &v->tok[ps->cur];

	if (c->len)
		v->tok[c->end].flags |= LAST;
	c->end = v->n;
	ps->cur = c->off;
	c->off = 0;
	ps->depth--;
}

/* p at a member's key: the key's token; past the ':' and white space after
 * it, or NULL. */
static char *key(struct parser *ps, char *p)
{
	struct jview_token *t;

	if (*p != '"')
		return fail(ps, p, "string or '}' expected");
	if (!(t = push(ps, JVAL_STRING, KEY)))
		return NULL;
	t->off = (uint32_t)(p + 1 - ps->v->text);
	if (!(p = string(ps, p, &t->len)))
		return NULL;
	p = skip_ws(p);
	if (*p != ':')
		return fail(ps, p, "':' expected");
	return skip_ws(p + 1);
}

/* p past a value: past the closers after it and the ',' and key that
 * follow, at the next value; at the end of the top value when it closed
 * (ps->cur NONE); NULL when wrong. */
static char *after_value(struct parser *ps, char *p)
{
	for (;;) {
		p = skip_ws(p);
		if (ps->cur == NONE)
			return p;
		if (*p == ',') {
			p = skip_ws(p + 1);
			return closer(ps) == '}' ? key(ps, p) : p;
		}
		if (*p != closer(ps))
			return fail(ps, p, closer(ps) == '}' ? "',' or '}' expected" : "',' or ']' expected");
		close_container(ps);
		p++;
	}
}

static char *open_container(struct parser *ps, char *p, uint8_t type)
{
	struct jview_token *t = push(ps, type, 0);

	if (!t)
		return NULL;
	t->off = ps->cur;
	ps->cur = ps->v->n - 1;
	ps->depth++;
	p = skip_ws(p + 1);
	if (*p == closer(ps)) {
		close_container(ps);
		return after_value(ps, p + 1);
	}
	return type == JVAL_OBJECT ? key(ps, p) : p;
}

/* p just past a number or a literal.  jansson reads one byte further to
 * see where they end and puts it back; a NUL put back is lost, so one NUL
 * right after them passes as white space (and only there). */
static char *past_nul(struct parser *ps, char *p)
{
	return *p == 0 && p != ps->v->text + ps->v->len ? p + 1 : p;
}

static char *literal(struct parser *ps, char *p, const char *word, size_t n, uint8_t type)
{
	if (memcmp(p, word, n) != 0)
		return fail(ps, p, "invalid literal");
	if (!push(ps, type, 0))
		return NULL;
	return after_value(ps, past_nul(ps, p + n));
}

/* p at a value: the value, or the opening of a container; at the next
 * value (see after_value) or NULL. */
static char *value(struct parser *ps, char *p)
{
	struct jview_token *t;
	uint32_t off = (uint32_t)(p - ps->v->text);
	uint8_t type;
	char *e;

	if (ps->depth >= JVIEW_MAX_DEPTH)
		return fail(ps, p, "nesting too deep");
	switch (*p) {
	case '{':
		return open_container(ps, p, JVAL_OBJECT);
	case '[':
		return open_container(ps, p, JVAL_ARRAY);
	case '"':
		if (!(t = push(ps, JVAL_STRING, 0)))
			return NULL;
		t->off = off + 1;
		if (!(e = string(ps, p, &t->len)))
			return NULL;
		return after_value(ps, e);
	case '-': case '0' ... '9':
		if (!(e = number(ps, p, &type)) || !(t = push(ps, type, 0)))
			return NULL;
		t->off = off;
		t->len = (uint32_t)(e - p);
		return after_value(ps, past_nul(ps, e));
	case 't':
		return literal(ps, p, "true", 4, JVAL_TRUE);
	case 'f':
		return literal(ps, p, "false", 5, JVAL_FALSE);
	case 'n':
		return literal(ps, p, "null", 4, JVAL_NULL);
	}
	return fail(ps, p, "value expected");
}

static bool parse(struct parser *ps)
{
	char *p = skip_ws(ps->v->text);

	if (*p != '{' && *p != '[') {
		fail(ps, p, "'[' or '{' expected");
		return false;
	}
	do
		p = value(ps, p);
	while (p && ps->cur != NONE);
	if (p && p != ps->v->text + ps->v->len) {
		fail(ps, p, "end of text expected");
		return false;
	}
	return p != NULL;
}

/* Line and column (from 1, in characters) of the byte at pos. */
static void where(struct jview_error *err, const char *text, size_t pos)
{
	int line = 1, column = 1;

	for (size_t i = 0; i < pos; i++) {
		if (text[i] == '\n') {
			line++;
			column = 1;
		} else if ((text[i] & 0xc0) != 0x80) {
			column++;
		}
	}
	err->line = line;
	err->column = column;
	err->position = pos;
}

static int refuse(struct jview *v, struct jview_error *err, const char *text, int rc,
		  size_t pos, const char *why)
{
	jview_free(v);
	if (err) {
		memset(err, 0, sizeof(*err));
		if (rc == -EINVAL)
			where(err, text, pos);
		snprintf(err->text, sizeof(err->text), "%s", why);
	}
	return rc;
}

int jview_parse(struct jview *v, const char *text, size_t len, struct jview_error *err)
{
	struct parser ps = { .v = v, .cur = NONE };

	memset(v, 0, sizeof(*v));
	if (len > JVIEW_MAX_BYTES)
		return refuse(v, err, text, -E2BIG, 0, "text longer than JVIEW_MAX_BYTES");
	v->text = malloc(len + 1 + PAD);
	if (!v->text)
		return refuse(v, err, text, -ENOMEM, 0, "out of memory");
	if (len)
		memcpy(v->text, text, len);
	memset(v->text + len, 0, 1 + PAD);
	v->len = len;
	if (grow(v) < 0)
		return refuse(v, err, text, -ENOMEM, 0, "out of memory");
	if (parse(&ps))
		return 0;
	if (ps.nomem)
		return refuse(v, err, text, -ENOMEM, 0, "out of memory");
	return refuse(v, err, text, -EINVAL, ps.pos, ps.why);
}

void jview_free(struct jview *v)
{
	free(v->text);
	free(v->tok);
	memset(v, 0, sizeof(*v));
}

/* Readers */

static const struct jval none = { .at = NONE };

static const struct jview_token *token(struct jval x)
{
	if (!x.view || x.at >= x.view->n)
		return NULL;
	return &x.view->tok[x.at];
}

static struct jval in_view(struct jval x, uint32_t i)
{
	return (struct jval){ .view = x.view, .at = i };
}

struct jval jview_root(const struct jview *v)
{
	return (struct jval){ .view = v, .at = v && v->n ? 0 : NONE };
}

enum jval_type jval_type(struct jval x)
{
	const struct jview_token *t = token(x);

	return t ? (enum jval_type)t->type : JVAL_NONE;
}

/* The last member of x named by the n bytes at key. */
static struct jval get(struct jval x, const char *key, size_t n)
{
	const struct jview_token *t = token(x), *tok;
	uint32_t found = NONE;

	if (!t || t->type != JVAL_OBJECT)
		return none;
	tok = x.view->tok;
	for (uint32_t i = x.at + 1; i < t->end; i = tok[i + 1].end)
		if (tok[i].len == n && memcmp(x.view->text + tok[i].off, key, n) == 0)
			found = i + 1;
	return found == NONE ? none : in_view(x, found);
}

struct jval jval_get(struct jval x, const char *key)
{
	return key ? get(x, key, strlen(key)) : none;
}

struct jval jval_path(struct jval x, const char *dotted_path)
{
	const char *p = dotted_path, *dot;

	if (!p)
		return none;
	while ((dot = strchr(p, '.'))) {
		x = get(x, p, (size_t)(dot - p));
		p = dot + 1;
	}
	return get(x, p, strlen(p));
}

const char *jval_str(struct jval x)
{
	const struct jview_token *t = token(x);

	return t && t->type == JVAL_STRING ? x.view->text + t->off : NULL;
}

size_t jval_strlen(struct jval x)
{
	const struct jview_token *t = token(x);

	return t && t->type == JVAL_STRING ? t->len : 0;
}

const char *jval_path_str(struct jval x, const char *dotted_path)
{
	return jval_str(jval_path(x, dotted_path));
}

int64_t jval_integer(struct jval x)
{
	const struct jview_token *t = token(x);
	const char *p;
	uint64_t u = 0;

	if (!t || t->type != JVAL_INTEGER)
		return 0;
	p = x.view->text + t->off;
	for (const char *d = p + (*p == '-'); is_digit(*d); d++)
		u = u * 10 + (uint64_t)(*d - '0');
	if (*p != '-')
		return (int64_t)u;
	return u ? -(int64_t)(u - 1) - 1 : 0;
}

size_t jval_size(struct jval x)
{
	const struct jview_token *t = token(x);

	return t && (t->type == JVAL_OBJECT || t->type == JVAL_ARRAY) ? t->len : 0;
}

struct jval jval_first(struct jval container)
{
	const struct jview_token *t = token(container);

	if (!t || !t->len || (t->type != JVAL_OBJECT && t->type != JVAL_ARRAY))
		return none;
	return in_view(container, container.at + (t->type == JVAL_OBJECT ? 2 : 1));
}

struct jval jval_next(struct jval element)
{
	const struct jview_token *t = token(element);

	if (!t || (t->flags & LAST))
		return none;
	return in_view(element, t->end + (t->flags & MEMBER ? 1 : 0));
}

const char *jval_key(struct jval member)
{
	const struct jview_token *t = token(member);

	if (!t || !(t->flags & MEMBER))
		return NULL;
	return member.view->text + member.view->tok[member.at - 1].off;
}

struct jval jval_at(struct jval x, size_t i)
{
	const struct jview_token *t = token(x);
	uint32_t e;

	if (!t || t->type != JVAL_ARRAY || i >= t->len)
		return none;
	for (e = x.at + 1; i; i--)
		e = x.view->tok[e].end;
	return in_view(x, e);
}

static json_t *object_to_json(struct jval x)
{
	json_t *o = json_object();

	for (struct jval m = jval_first(x); o && jval_ok(m); m = jval_next(m)) {
		const struct jview_token *k = &x.view->tok[m.at - 1];
		json_t *val = jval_to_json(m);

		/* a later member of the same name replaces an earlier one */
		if (!val || json_object_setn_new_nocheck(o, x.view->text + k->off, k->len, val) < 0) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

static json_t *array_to_json(struct jval x)
{
	json_t *a = json_array();

	for (struct jval e = jval_first(x); a && jval_ok(e); e = jval_next(e)) {
		if (json_array_append_new(a, jval_to_json(e)) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

json_t *jval_to_json(struct jval x)
{
	const struct jview_token *t = token(x);

	if (!t)
		return NULL;
	switch (t->type) {
	case JVAL_OBJECT:
		return object_to_json(x);
	case JVAL_ARRAY:
		return array_to_json(x);
	case JVAL_STRING:
		return json_stringn_nocheck(x.view->text + t->off, t->len);
	case JVAL_INTEGER:
		return json_integer(jval_integer(x));
	case JVAL_REAL:
		return json_real(strtod(x.view->text + t->off, NULL));
	case JVAL_TRUE:
		return json_true();
	case JVAL_FALSE:
		return json_false();
	case JVAL_NULL:
		return json_null();
	}
	return NULL;
}
