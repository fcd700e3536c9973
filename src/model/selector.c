/*
 * selector.c — label and field selectors (selector.h): a lexer and a
 * recursive-descent parser for Kubernetes' label selector grammar, a
 * splitter for field selectors, and the matchers.
 *
 * Label selectors, as Kubernetes' labels.Parse reads them:
 *
 *   selector    := "" | requirement ("," requirement)*
 *   requirement := "!" KEY | KEY [op VALUE | ("in" | "notin") "(" list ")"]
 *   op          := "=" | "==" | "!=" | ">" | "<"          (VALUE may be empty)
 *   list        := item ("," item)*    an empty item is the value "", and
 *                                      "()" is the set {""}
 *
 * Tokens are separated by white space (space, tab, CR, LF) or nothing; an
 * identifier is a run of bytes that are neither white space nor one of
 * ! = ( ) , < >, and "in" / "notin" are keywords where an operator is
 * expected and identifiers everywhere else (so "in" may be a key or a
 * value).  Keys and values are then checked by Kubernetes' rules
 * (model_label_key, model_label_value); GT and LT take a decimal integer.
 *
 * Field selectors, as fields.ParseSelector reads them: terms split at
 * commas not escaped by a backslash, empty terms skipped, each term split
 * at its first operator (!=, ==, = tried in that order at each byte), the
 * field name taken as is (no trimming), the value unescaped (\\ \, \= only;
 * a bare , or = in a value is an error).
 *
 * Invariants
 *  1. A failed parse leaves the selector as it was: terms are built in a
 *     scratch selector and moved in only when the whole text parsed.
 *  2. Every loop is bounded by the text's length, itself bounded by
 *     SELECTOR_MAX_BYTES before anything else is looked at.
 */
#include "model/selector.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[SELECTOR_FIELDS] = {
	[SELECTOR_FIELD_NAME] = "metadata.name",
	[SELECTOR_FIELD_NAMESPACE] = "metadata.namespace",
	[SELECTOR_FIELD_NODE_NAME] = "spec.nodeName",
};

const char *selector_field_name(enum selector_field f)
{
	return (unsigned)f < SELECTOR_FIELDS ? field_names[f] : "?";
}

/* Fill err (lib/errmsg.h) and give -EINVAL. */
#define fail(err, errlen, ...) (errmsg((err), (errlen), __VA_ARGS__), -EINVAL)

/* ---------------------------------------------------------------- terms */

static void term_free(struct selector_term *t)
{
	for (size_t i = 0; i < t->nvalues; i++)
		free(t->values[i]);
	free(t->values);
	free(t->key);
	memset(t, 0, sizeof(*t));
}

static void terms_free(struct selector_term *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		term_free(&t[i]);
	free(t);
}

void selector_free(struct selector *s)
{
	if (!s)
		return;
	terms_free(s->labels, s->nlabels);
	terms_free(s->fields, s->nfields);
	memset(s, 0, sizeof(*s));
}

/* A new term at the end of *terms (zeroed), or NULL: -E2BIG / -ENOMEM in *rc. */
static struct selector_term *term_add(struct selector_term **terms, size_t *n, int *rc)
{
	struct selector_term *t;

	if (*n >= SELECTOR_MAX_TERMS) {
		*rc = -E2BIG;
		return NULL;
	}
	t = realloc(*terms, (*n + 1) * sizeof(*t));
	if (!t) {
		*rc = -ENOMEM;
		return NULL;
	}
	*terms = t;
	t = &t[(*n)++];
	memset(t, 0, sizeof(*t));
	return t;
}

/* Add the value s[0..n) to t (a set keeps one copy of each): 0, -E2BIG, -ENOMEM. */
static int value_add(struct selector_term *t, const char *s, size_t n)
{
	char **v, *copy;

	for (size_t i = 0; i < t->nvalues; i++)
		if (strlen(t->values[i]) == n && memcmp(t->values[i], s, n) == 0)
			return 0;
	if (t->nvalues >= SELECTOR_MAX_VALUES)
		return -E2BIG;
	copy = strndup(s, n);
	v = copy ? realloc(t->values, (t->nvalues + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	t->values = v;
	t->values[t->nvalues++] = copy;
	return 0;
}

/* Move the scratch terms of src to the end of dst's (invariant 1). */
static int terms_move(struct selector_term **dst, size_t *ndst, struct selector_term **src, size_t *nsrc)
{
	struct selector_term *t;

	if (*nsrc == 0)
		return 0;
	if (*ndst + *nsrc > SELECTOR_MAX_TERMS)
		return -E2BIG;
	t = realloc(*dst, (*ndst + *nsrc) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memcpy(t + *ndst, *src, *nsrc * sizeof(*t));
	*dst = t;
	*ndst += *nsrc;
	free(*src);
	*src = NULL;
	*nsrc = 0;
	return 0;
}

static int too_long(const char *text, const char *what, char *err, size_t errlen)
{
	if (strnlen(text, SELECTOR_MAX_BYTES + 1) <= SELECTOR_MAX_BYTES)
		return 0;
	errmsg(err, errlen, "longer than %d bytes (the limit for a %s selector)", SELECTOR_MAX_BYTES, what);
	return -E2BIG;
}

/* ---------------------------------------------------------------- label lexer */

enum tok { T_END, T_IDENT, T_NOT, T_EQ, T_DEQ, T_NE, T_GT, T_LT, T_OPEN, T_CLOSE, T_COMMA, T_IN, T_NOTIN };

struct token {
	enum tok t;
	const char *p;		/* its text in the selector */
	size_t n;
	size_t at;		/* byte offset, for messages */
};

struct parser {
	const char *s;
	size_t pos;
	struct token look;	/* the next token, already scanned */
	char *err;
	size_t errlen;
};

static bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool special(char c) { return c && strchr("!=(),<>", c); }

static void scan(struct parser *p)
{
	const char *s = p->s;
	struct token *k = &p->look;

	while (space(s[p->pos]))
		p->pos++;
	k->p = s + p->pos;
	k->at = p->pos;
	k->n = 1;
	switch (s[p->pos]) {
	case 0:
		k->t = T_END;
		k->n = 0;
		return;
	case '!':
		k->t = s[p->pos + 1] == '=' ? T_NE : T_NOT;
		break;
	case '=':
		k->t = s[p->pos + 1] == '=' ? T_DEQ : T_EQ;
		break;
	case '(': k->t = T_OPEN; break;
	case ')': k->t = T_CLOSE; break;
	case ',': k->t = T_COMMA; break;
	case '<': k->t = T_LT; break;
	case '>': k->t = T_GT; break;
	default:
		while (s[p->pos + k->n] && !space(s[p->pos + k->n]) && !special(s[p->pos + k->n]))
			k->n++;
		k->t = k->n == 2 && !memcmp(k->p, "in", 2)      ? T_IN
		       : k->n == 5 && !memcmp(k->p, "notin", 5) ? T_NOTIN
								: T_IDENT;
		p->pos += k->n;
		return;
	}
	if (k->t == T_NE || k->t == T_DEQ)
		k->n = 2;
	p->pos += k->n;
}

/* The next token; where a value or key may stand, the keywords are identifiers. */
static enum tok peek(const struct parser *p, bool values)
{
	enum tok t = p->look.t;

	return values && (t == T_IN || t == T_NOTIN) ? T_IDENT : t;
}

static struct token take(struct parser *p)
{
	struct token k = p->look;

	scan(p);
	return k;
}

/* "found 'x', expected: ..." naming token k and where it is. */
static int found_token(struct parser *p, const struct token *k, const char *expected)
{
	if (k->t == T_END)
		return fail(p->err, p->errlen, "found 'end of string', expected: %s (at byte %zu)", expected, k->at);
	return fail(p->err, p->errlen, "found '%.*s', expected: %s (at byte %zu)", (int)(k->n > 40 ? 40 : k->n),
		    k->p, expected, k->at);
}

/* ... naming the next token */
static int found(struct parser *p, const char *expected)
{
	return found_token(p, &p->look, expected);
}

/* ---------------------------------------------------------------- label parser */

/* The value v[0..n) of t, checked: a label value, for '>' and '<' an integer. */
static int add_value(struct parser *p, struct selector_term *t, const char *v, size_t n, size_t at)
{
	char buf[80];
	long long num = 0;

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;	/* too long to be a value: refused below */
	memcpy(buf, v, n);
	buf[n] = 0;
	if (!model_label_value(buf))
		return fail(p->err, p->errlen,
			    "'%s' is not a valid label value for %s: 63 bytes or less, empty or beginning and "
			    "ending with an alphanumeric character, with '-', '_', '.' and alphanumerics between "
			    "(at byte %zu)", buf, t->key, at);
	if (t->op == SELECTOR_GT || t->op == SELECTOR_LT) {
		bool ok = n > 0;

		for (size_t i = 0; ok && i < n; i++) {
			ok = buf[i] >= '0' && buf[i] <= '9' && num <= (__LONG_LONG_MAX__ - (buf[i] - '0')) / 10;
			if (ok)
				num = num * 10 + (buf[i] - '0');
		}
		if (!ok)
			return fail(p->err, p->errlen, "'%s': for '>' and '<' the value must be an integer (at "
				    "byte %zu)", buf, at);
		t->number = num;
	}
	return value_add(t, buf, n);
}

static int add_token_value(struct parser *p, struct selector_term *t, const struct token *k)
{
	return add_value(p, t, k->p, k->n, k->at);
}

/* VALUE after an operator; none (end or ',') is the empty value. */
static int exact_value(struct parser *p, struct selector_term *t)
{
	struct token v;

	if (peek(p, true) == T_END || peek(p, true) == T_COMMA)
		return add_value(p, t, "", 0, p->look.at);
	if (peek(p, true) != T_IDENT)
		return found(p, "identifier");
	v = take(p);
	return add_token_value(p, t, &v);
}

/* The items of a set, Kubernetes' parseIdentifiersList step for step:
 * returns with ')' as the next token. */
static int value_list(struct parser *p, struct selector_term *t)
{
	for (;;) {
		struct token k = take(p);
		int rc = 0;

		if (k.t == T_IDENT || k.t == T_IN || k.t == T_NOTIN) {
			rc = add_token_value(p, t, &k);
			if (rc || peek(p, true) == T_COMMA)
				goto next;
			return peek(p, true) == T_CLOSE ? 0 : found(p, "',' or ')'");
		}
		if (k.t != T_COMMA)
			return found_token(p, &k, "',' or identifier");
		if (t->nvalues == 0)
			rc = add_value(p, t, "", 0, k.at);	/* "(," */
		if (rc == 0 && peek(p, true) == T_CLOSE)
			return add_value(p, t, "", 0, k.at);	/* ",)" */
		if (rc == 0 && peek(p, true) == T_COMMA) {
			take(p);
			rc = add_value(p, t, "", 0, k.at);	/* ",," */
		}
next:
		if (rc)
			return rc;
	}
}

/* "(" list ")"; "()" is the set {""}. */
static int value_set(struct parser *p, struct selector_term *t)
{
	int rc;

	if (peek(p, true) != T_OPEN)
		return found(p, "'('");
	take(p);
	if (peek(p, true) == T_CLOSE) {
		take(p);
		return add_value(p, t, "", 0, p->look.at);
	}
	if (peek(p, true) != T_IDENT && peek(p, true) != T_COMMA)
		return found(p, "',', ')' or identifier");
	rc = value_list(p, t);
	if (rc == 0)
		take(p);	/* ')' */
	return rc;
}

static int requirement(struct parser *p, struct selector_term *t)
{
	bool not = false;
	struct token key;
	enum tok op;

	if (peek(p, true) == T_NOT) {
		take(p);
		not = true;
	}
	if (peek(p, true) != T_IDENT)
		return found(p, "identifier");
	key = take(p);
	t->key = strndup(key.p, key.n);
	if (!t->key)
		return -ENOMEM;
	if (!model_label_key(t->key))
		return fail(p->err, p->errlen,
			    "'%.*s' is not a valid label key: an optional DNS subdomain prefix and '/', then 63 "
			    "bytes or less beginning and ending with an alphanumeric character, with '-', '_', '.' "
			    "and alphanumerics between (at byte %zu)", (int)(key.n > 80 ? 80 : key.n), key.p, key.at);
	if (not || peek(p, true) == T_END || peek(p, true) == T_COMMA) {
		t->op = not ? SELECTOR_ABSENT : SELECTOR_EXISTS;
		return 0;
	}
	op = peek(p, false);
	switch (op) {
	case T_EQ:
	case T_DEQ: t->op = SELECTOR_EQ; break;
	case T_NE: t->op = SELECTOR_NE; break;
	case T_GT: t->op = SELECTOR_GT; break;
	case T_LT: t->op = SELECTOR_LT; break;
	case T_IN: t->op = SELECTOR_IN; break;
	case T_NOTIN: t->op = SELECTOR_NOTIN; break;
	default:
		return found(p, "one of '=', '==', '!=', 'in', 'notin', '>', '<'");
	}
	take(p);
	return op == T_IN || op == T_NOTIN ? value_set(p, t) : exact_value(p, t);
}

int selector_parse_labels(struct selector *s, const char *text, char *err, size_t errlen)
{
	struct parser p = { .s = text ? text : "", .err = err, .errlen = errlen };
	struct selector_term *terms = NULL;
	size_t n = 0;
	int rc = too_long(p.s, "label", err, errlen);

	if (rc)
		return rc;
	scan(&p);
	while (rc == 0 && peek(&p, true) != T_END) {
		struct selector_term *t;

		if (peek(&p, true) != T_IDENT && peek(&p, true) != T_NOT) {
			rc = found(&p, "'!', identifier or 'end of string'");
			break;
		}
		t = term_add(&terms, &n, &rc);
		if (!t) {
			if (rc == -E2BIG)
				errmsg(err, errlen, "more than %d requirements (the limit)", SELECTOR_MAX_TERMS);
			break;
		}
		rc = requirement(&p, t);
		if (rc == -E2BIG)
			errmsg(err, errlen, "more than %d values in one set (the limit)", SELECTOR_MAX_VALUES);
		if (rc || peek(&p, true) == T_END)
			break;
		if (peek(&p, true) != T_COMMA) {
			rc = found(&p, "',' or 'end of string'");
			break;
		}
		take(&p);
		if (peek(&p, true) != T_IDENT && peek(&p, true) != T_NOT)
			rc = found(&p, "identifier after ','");
	}
	if (rc == 0 && (rc = terms_move(&s->labels, &s->nlabels, &terms, &n)) == -E2BIG)
		errmsg(err, errlen, "more than %d requirements (the limit)", SELECTOR_MAX_TERMS);
	if (rc == -ENOMEM)
		errmsg(err, errlen, "out of memory");
	terms_free(terms, n);
	return rc;
}

/* ---------------------------------------------------------------- field selectors */

/* The kind's field called name[0..n), or -1.  k NULL: a NodeCredential. */
static int field_of(const struct kind_info *k, const char *name, size_t n)
{
	for (int f = 0; f < SELECTOR_FIELDS; f++)
		if (strlen(field_names[f]) == n && !memcmp(field_names[f], name, n))
			return f == SELECTOR_FIELD_NODE_NAME && k && k->id != KIND_POD &&
			       k->id != KIND_TRACEREQUEST ? -1 : f;
	return -1;
}

/* End of the term starting at s: the first ',' not escaped. */
static size_t term_end(const char *s)
{
	size_t i = 0;

	while (s[i] && s[i] != ',')
		i += s[i] == '\\' && s[i + 1] ? 2 : 1;
	return i;
}

/* Unescape v[0..n) into t's value. */
static int field_value(struct selector_term *t, const char *v, size_t n, char *err, size_t errlen)
{
	char buf[SELECTOR_MAX_BYTES + 1];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i] == ',' || v[i] == '=')
			return fail(err, errlen, "'%c' in the value of %s must be escaped ('\\%c')", v[i],
				    field_names[t->field], v[i]);
		if (v[i] == '\\') {
			if (i + 1 == n)
				return fail(err, errlen, "the value of %s ends inside an escape sequence",
					    field_names[t->field]);
			i++;
			if (v[i] != '\\' && v[i] != ',' && v[i] != '=')
				return fail(err, errlen, "invalid escape sequence '\\%c' in the value of %s "
					    "(only \\\\, \\, and \\= are)", v[i], field_names[t->field]);
		}
		buf[len++] = v[i];
	}
	return value_add(t, buf, len);
}

/* One term s[0..n) (not empty) into t. */
static int field_term(const struct kind_info *k, const char *s, size_t n, struct selector_term *t, char *err,
		      size_t errlen)
{
	size_t i, oplen = 0;
	int f;

	for (i = 0; i < n && !oplen; i++) {
		if ((s[i] == '!' || s[i] == '=') && i + 1 < n && s[i + 1] == '=')
			oplen = 2;
		else if (s[i] == '=')
			oplen = 1;
	}
	if (!oplen)
		return fail(err, errlen, "'%.*s' is not FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE",
			    (int)(n > 200 ? 200 : n), s);
	i--;
	f = field_of(k, s, i);
	if (f < 0)
		return fail(err, errlen, "field label not supported: %.*s", (int)(i > 200 ? 200 : i), s);
	t->field = (enum selector_field)f;
	t->op = s[i] == '!' ? SELECTOR_NE : SELECTOR_EQ;
	return field_value(t, s + i + oplen, n - i - oplen, err, errlen);
}

int selector_parse_fields(struct selector *s, const struct kind_info *k, const char *text, char *err,
			  size_t errlen)
{
	struct selector_term *terms = NULL;
	size_t n = 0;
	int rc;

	text = text ? text : "";
	rc = too_long(text, "field", err, errlen);
	if (rc)
		return rc;
	while (rc == 0 && *text) {
		size_t len = term_end(text);
		struct selector_term *t;

		if (len) {
			t = term_add(&terms, &n, &rc);
			if (!t)
				break;
			rc = field_term(k, text, len, t, err, errlen);
		}
		text += len + (text[len] == ',');
	}
	if (rc == 0)
		rc = terms_move(&s->fields, &s->nfields, &terms, &n);
	if (rc == -E2BIG)
		errmsg(err, errlen, "more than %d requirements (the limit)", SELECTOR_MAX_TERMS);
	if (rc == -ENOMEM)
		errmsg(err, errlen, "out of memory");
	terms_free(terms, n);
	return rc;
}

int selector_add_field(struct selector *s, enum selector_field f, const char *value)
{
	struct selector_term *t;
	int rc = 0;

	t = term_add(&s->fields, &s->nfields, &rc);
	if (!t)
		return rc;
	t->field = f;
	t->op = SELECTOR_EQ;
	rc = value_add(t, value, strlen(value));
	if (rc) {
		term_free(t);
		s->nfields--;
	}
	return rc;
}

/* ---------------------------------------------------------------- matching */

bool selector_empty(const struct selector *s)
{
	return !s || (s->nlabels == 0 && s->nfields == 0 && !s->network_updates);
}

/* a.b.c of obj, or NULL */
static const json_t *path_of(const json_t *obj, const char *const *path)
{
	for (; obj && *path; path++)
		obj = json_object_get(obj, *path);
	return obj;
}

static bool differs(const json_t *old, const json_t *now, const char *const *path)
{
	const json_t *a = path_of(old, path), *b = path_of(now, path);

	return (a || b) && !(a && b && json_equal(a, b));
}

bool selector_network_changed(const json_t *old, const json_t *now)
{
	static const char *const node[][4] = {
		{ "spec", "podCIDR" }, { "status", "addresses" },
		{ "metadata", "annotations", "weft.io/node-id" },
	};
	static const char *const pod[][4] = {
		{ "spec" }, { "status", "podIP" }, { "status", "podIPs" },
		{ "metadata", "labels" }, { "metadata", "annotations", "weft.io/container-id" },
	};
	const char *kind = json_string_value(json_object_get(now, "kind"));
	const char *const (*paths)[4];
	size_t n;

	if (kind && strcmp(kind, "Node") == 0) {
		paths = node;
		n = sizeof(node) / sizeof(node[0]);
	} else if (kind && strcmp(kind, "Pod") == 0) {
		paths = pod;
		n = sizeof(pod) / sizeof(pod[0]);
	} else {
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (differs(old, now, paths[i]))
			return true;
	return false;
}

const char *selector_exact(const struct selector *s, enum selector_field f)
{
	for (size_t i = 0; s && i < s->nfields; i++)
		if (s->fields[i].field == f && s->fields[i].op == SELECTOR_EQ)
			return s->fields[i].values[0];
	return NULL;
}

void selector_view_of(const json_t *obj, struct selector_view *v)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	v->field[SELECTOR_FIELD_NAME] = name ? name : "";
	v->field[SELECTOR_FIELD_NAMESPACE] = ns ? ns : "";
	v->field[SELECTOR_FIELD_NODE_NAME] = node ? node : "";
	v->labels = json_is_object(json_object_get(md, "labels")) ? json_object_get(md, "labels") : NULL;
}

static bool in_set(const struct selector_term *t, const char *v)
{
	for (size_t i = 0; i < t->nvalues; i++)
		if (strcmp(t->values[i], v) == 0)
			return true;
	return false;
}

/* A label's value as an integer (Kubernetes: strconv.ParseInt), or false. */
static bool label_number(const char *v, long long *out)
{
	long long n = 0;
	bool neg = *v == '-';

	if (*v == '-' || *v == '+')
		v++;
	if (!*v)
		return false;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > (__LONG_LONG_MAX__ - (*v - '0')) / 10)
			return false;
		n = n * 10 + (*v - '0');
	}
	*out = neg ? -n : n;
	return true;
}

static bool label_matches(const struct selector_term *t, const json_t *labels)
{
	const char *v = json_string_value(json_object_get(labels, t->key));
	long long n;

	switch (t->op) {
	case SELECTOR_EQ:
	case SELECTOR_IN:
		return v && in_set(t, v);
	case SELECTOR_NE:
	case SELECTOR_NOTIN:
		return !v || !in_set(t, v);
	case SELECTOR_EXISTS:
		return v != NULL;
	case SELECTOR_ABSENT:
		return v == NULL;
	case SELECTOR_GT:
		return v && label_number(v, &n) && n > t->number;
	case SELECTOR_LT:
		return v && label_number(v, &n) && n < t->number;
	}
	return false;
}

bool selector_matches(const struct selector *s, const struct selector_view *v)
{
	if (!s)
		return true;
	for (size_t i = 0; i < s->nfields; i++) {
		const struct selector_term *t = &s->fields[i];
		bool eq = strcmp(v->field[t->field], t->values[0]) == 0;

		if (eq != (t->op == SELECTOR_EQ))
			return false;
	}
	for (size_t i = 0; i < s->nlabels; i++)
		if (!label_matches(&s->labels[i], v->labels))
			return false;
	return true;
}

/* ---------------------------------------------------------------- LabelSelector objects */

/* One string value of a LabelSelector (a label value), field names it. */
static int object_value(struct selector_term *t, const json_t *v, const char *field, char *err, size_t errlen)
{
	const char *s = json_string_value(v);
	int rc;

	if (!s)
		return fail(err, errlen, "%s: must be a string", field);
	if (!model_label_value(s))
		return fail(err, errlen, "%s: '%.80s' is not a valid label value", field, s);
	rc = value_add(t, s, strlen(s));
	if (rc == -E2BIG)
		errmsg(err, errlen, "%s: more than %d values (the limit)", field, SELECTOR_MAX_VALUES);
	return rc;
}

static int object_key(struct selector_term *t, const char *key, const char *field, char *err, size_t errlen)
{
	if (!model_label_key(key))
		return fail(err, errlen, "%s: '%.80s' is not a valid label key", field, key);
	t->key = strdup(key);
	return t->key ? 0 : -ENOMEM;
}

static int match_labels(struct selector_term **terms, size_t *n, const json_t *ml, char *err, size_t errlen)
{
	const char *key;
	const json_t *v;
	int rc = 0;

	if (ml && !json_is_object(ml))
		return fail(err, errlen, "matchLabels: must be an object");
	json_object_foreach((json_t *)ml, key, v) {
		struct selector_term *t = term_add(terms, n, &rc);

		if (!t)
			return rc;
		t->op = SELECTOR_EQ;
		rc = object_key(t, key, "matchLabels", err, errlen);
		if (rc == 0)
			rc = object_value(t, v, "matchLabels", err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int match_expression(struct selector_term *t, const json_t *e, const char *field, char *err, size_t errlen)
{
	static const struct { const char *name; enum selector_op op; } ops[] = {
		{ "In", SELECTOR_IN }, { "NotIn", SELECTOR_NOTIN },
		{ "Exists", SELECTOR_EXISTS }, { "DoesNotExist", SELECTOR_ABSENT },
	};
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	const json_t *values = json_object_get(e, "values"), *v;
	size_t i, known = sizeof(ops) / sizeof(ops[0]);
	char at[100];
	int rc;

	if (!json_is_object(e))
		return fail(err, errlen, "%s: must be an object", field);
	if (!key)
		return fail(err, errlen, "%s.key: required, a string", field);
	snprintf(at, sizeof(at), "%s.key", field);
	rc = object_key(t, key, at, err, errlen);
	if (rc)
		return rc;
	for (i = 0; op && i < known && strcmp(op, ops[i].name); i++)
		;
	if (!op || i == known)
		return fail(err, errlen, "%s.operator: '%.40s' is not In, NotIn, Exists or DoesNotExist", field,
			    op ? op : "(none)");
	t->op = ops[i].op;
	if (values && !json_is_array(values))
		return fail(err, errlen, "%s.values: must be a list", field);
	if ((t->op == SELECTOR_IN || t->op == SELECTOR_NOTIN) != (json_array_size(values) > 0))
		return fail(err, errlen, "%s.values: must be %s for operator %s", field,
			    json_array_size(values) ? "empty" : "non-empty", op);
	json_array_foreach(values, i, v) {
		snprintf(at, sizeof(at), "%s.values[%zu]", field, i);
		rc = object_value(t, v, at, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int selector_from_label_selector(struct selector *s, const json_t *ls, char *err, size_t errlen)
{
	struct selector_term *terms = NULL;
	const json_t *exprs = json_object_get(ls, "matchExpressions"), *e;
	size_t n = 0, i;
	int rc = 0;

	if (ls && !json_is_object(ls)) {
		rc = fail(err, errlen, "must be an object");
		goto out;
	}
	rc = match_labels(&terms, &n, json_object_get(ls, "matchLabels"), err, errlen);
	if (rc == 0 && exprs && !json_is_array(exprs))
		rc = fail(err, errlen, "matchExpressions: must be a list");
	json_array_foreach(exprs, i, e) {
		char field[40];
		struct selector_term *t;

		if (rc)
			break;
		snprintf(field, sizeof(field), "matchExpressions[%zu]", i);
		t = term_add(&terms, &n, &rc);
		if (t)
			rc = match_expression(t, e, field, err, errlen);
	}
	if (rc == 0)
		rc = terms_move(&s->labels, &s->nlabels, &terms, &n);
	if (rc == -E2BIG && n >= SELECTOR_MAX_TERMS)
		errmsg(err, errlen, "more than %d requirements (the limit)", SELECTOR_MAX_TERMS);
	if (rc == -ENOMEM)
		errmsg(err, errlen, "out of memory");
out:
	terms_free(terms, n);
	return rc;
}
