/*
 * media.c — the media type of a Content-Type header (media.h): skip the
 * blanks before it, stop at the first ';', drop the blanks before that.
 * An Accept header is read range by range (a range ends at ',') without
 * copying: its type, then its parameters one by one; each range is
 * matched against every offer, and the first range of the highest q that
 * matches one decides.  Work is bounded by MEDIA_ACCEPT_MAX_RANGES times
 * the offers.
 */
#include "lib/media.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *media_type_of(const char *header, size_t *len)
{
	const char *ct = header ? header : "";
	size_t n;

	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, ";");
	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	*len = n;
	return ct;
}

bool media_type_is(const char *header, const char *want)
{
	size_t n;
	const char *ct = media_type_of(header, &n);

	return n == strlen(want) && strncasecmp(ct, want, n) == 0;
}

/* A span of the header's text. */
struct span {
	const char *s;
	size_t n;
};

static struct span trim(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	return (struct span){ s, n };
}

static bool span_is(struct span a, const char *b)
{
	return b && a.n == strlen(b) && strncasecmp(a.s, b, a.n) == 0;
}

/* One range of an Accept header: its type, q (in thousandths) and the
 * profile parameters (n == 0: absent). */
struct range {
	struct span type, as, g, v;
	int q;
};

/* q as RFC 9110 writes it: 0, 1, 0.xyz or 1.000; anything else is 0. */
static int q_of(struct span v)
{
	int q = 0, digits = 0;
	size_t i = 2;

	if (v.n == 0 || (v.s[0] != '0' && v.s[0] != '1'))
		return 0;
	q = (v.s[0] - '0') * 1000;
	if (v.n == 1)
		return q;
	if (v.s[1] != '.')
		return 0;
	for (int scale = 100; i < v.n && digits < 3; i++, digits++, scale /= 10) {
		if (v.s[i] < '0' || v.s[i] > '9')
			return 0;
		q += (v.s[i] - '0') * scale;
	}
	return i == v.n && q <= 1000 ? q : 0;
}

static void range_parse(const char *s, size_t n, struct range *r)
{
	const char *semi = memchr(s, ';', n);
	size_t tn = semi ? (size_t)(semi - s) : n;

	memset(r, 0, sizeof(*r));
	r->q = 1000;
	r->type = trim(s, tn);
	while (semi) {
		const char *p = semi + 1, *eq;
		size_t pn = n - (size_t)(p - s);
		struct span name, value;

		semi = memchr(p, ';', pn);
		if (semi)
			pn = (size_t)(semi - p);
		eq = memchr(p, '=', pn);
		if (!eq)
			continue;
		name = trim(p, (size_t)(eq - p));
		value = trim(eq + 1, pn - (size_t)(eq + 1 - p));
		if (span_is(name, "q"))
			r->q = q_of(value);
		else if (span_is(name, "as"))
			r->as = value;
		else if (span_is(name, "g"))
			r->g = value;
		else if (span_is(name, "v"))
			r->v = value;
	}
}

/* a profile parameter of a range against the offer's: both absent, or equal */
static bool param_matches(struct span got, const char *want)
{
	return want ? got.n && got.n == strlen(want) && strncmp(got.s, want, got.n) == 0 : got.n == 0;
}

static bool range_matches(const struct range *r, const struct media_offer *o)
{
	const char *slash = strchr(o->type, '/');
	size_t major = slash ? (size_t)(slash - o->type) : strlen(o->type);

	if (!param_matches(r->as, o->as) || !param_matches(r->g, o->g) || !param_matches(r->v, o->v))
		return false;
	if (span_is(r->type, "*/*") || span_is(r->type, o->type))
		return true;
	return r->type.n == major + 2 && strncasecmp(r->type.s, o->type, major) == 0 &&
	       r->type.s[major] == '/' && r->type.s[major + 1] == '*';
}

int media_accept_pick(const char *accept, const struct media_offer *offers, size_t n)
{
	const char *s = accept;
	int best = -1, best_q = 0, ranges = 0;
	bool any = false;

	while (s && *s && ranges < MEDIA_ACCEPT_MAX_RANGES) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		struct range r;

		range_parse(s, len, &r);
		s = comma ? comma + 1 : NULL;
		if (r.type.n == 0)
			continue;
		any = true;
		ranges++;
		if (r.q <= best_q)
			continue;
		for (size_t i = 0; i < n; i++)
			if (range_matches(&r, &offers[i])) {
				best = (int)i;
				best_q = r.q;
				break;
			}
	}
	if (!any)
		return n ? 0 : -1;
	return best;
}
