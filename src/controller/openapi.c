/*
 * openapi.c — the OpenAPI endpoints (see openapi.h): the documents made
 * once at start, then each request answered from them by path, Accept,
 * ?hash= and If-None-Match.
 *
 *   openapi_create: model schema ──openapi_doc_v2──► JSON ──► text, and
 *     ──openapi_proto_v2──► protobuf; per group-version of the kind table
 *     ──openapi_doc_v3──► text; the index of their hashes ──► text; each
 *     text's SHA-512 its ETag
 *   openapi_lookup: path ──► representation (Accept picks) ──► 304 if
 *     If-None-Match names its ETag, 301 if ?hash= is stale, else 200
 *   openapi_field_validation: a write's body ──model_openapi_unknown_*──►
 *     the fields its schema lacks ──► Warning headers or a 400's message
 *
 * Accept is read as goautoneg (and so kube-openapi) reads it: clauses by
 * q (q=0 refused), the more specific first at equal q; the first clause
 * that an offered type matches picks it.
 */
#include "controller/openapi.h"
#include "controller/openapi_doc.h"
#include "controller/openapi_proto.h"
#include "model/openapi.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define V2_PROTOBUF_OLD "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
#define MAX_CLAUSES 32
#define YEAR_SECONDS (365 * 24 * 3600)

/* One representation: its bytes and their ETag. */
struct rep {
	char *body;
	size_t len;
	char hash[129];		/* SHA-512, upper-case hex */
};

struct group_version {
	char name[160];		/* "api/v1", "apis/networking.k8s.io/v1" */
	struct rep json;
};

struct openapi {
	struct model_openapi *model;	/* the schema they are made from */
	struct rep v2_json, v2_proto, v3_index;
	struct group_version gv[KIND_COUNT];
	size_t ngv;
};

static void rep_free(struct rep *r)
{
	free(r->body);
}

void openapi_destroy(struct openapi *o)
{
	if (!o)
		return;
	model_openapi_free(o->model);
	rep_free(&o->v2_json);
	rep_free(&o->v2_proto);
	rep_free(&o->v3_index);
	for (size_t i = 0; i < o->ngv; i++)
		rep_free(&o->gv[i].json);
	free(o);
}

/* body (taken over, len bytes) as r, with its hash.  0 or -errno. */
static int rep_set(struct rep *r, char *body, size_t len)
{
	unsigned char digest[64];

	r->body = body;
	r->len = len;
	if (!body)
		return -ENOMEM;
	if (gnutls_hash_fast(GNUTLS_DIG_SHA512, body, len, digest) != 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(r->hash + 2 * i, 3, "%02X", digest[i]);
	return 0;
}

static int rep_json(struct rep *r, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(doc);
	return rep_set(r, text, text ? strlen(text) : 0);
}

/* The v3 documents of the kind table's group-versions, and their index. */
static int make_v3(struct openapi *o, const struct model_openapi *m)
{
	json_t *paths = json_object();
	int rc = 0;

	if (!paths)
		return -ENOMEM;
	for (int id = 0; !rc && id < KIND_COUNT; id++) {
		const struct kind_info *k = kind_get((enum kind_id)id);
		struct group_version *g = &o->gv[o->ngv];
		char url[512];
		bool seen = false;

		for (int j = 0; j < id; j++)
			seen = seen || (!strcmp(kind_get((enum kind_id)j)->group, k->group) &&
					!strcmp(kind_get((enum kind_id)j)->version, k->version));
		if (seen)
			continue;
		if (*k->group)
			snprintf(g->name, sizeof(g->name), "apis/%s/%s", k->group, k->version);
		else
			snprintf(g->name, sizeof(g->name), "api/%s", k->version);
		o->ngv++;
		rc = rep_json(&g->json, openapi_doc_v3(m, k->group, k->version));
		snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", g->name, g->json.hash);
		if (!rc && json_object_set_new(paths, g->name, json_pack("{s:s}", "serverRelativeURL", url)))
			rc = -ENOMEM;
	}
	if (!rc)
		return rep_json(&o->v3_index, json_pack("{s:o}", "paths", paths));
	json_decref(paths);
	return rc;
}

struct openapi *openapi_create(char *err, size_t errlen)
{
	struct openapi *o = calloc(1, sizeof(*o));
	struct model_openapi *m;
	struct pb proto;
	json_t *v2 = NULL;
	int rc = -ENOMEM;

	pb_init(&proto);
	if (errlen)
		err[0] = 0;
	if (!o)
		goto out;
	rc = model_openapi_load(model_openapi_files, model_openapi_files_count, &o->model, err, errlen);
	if (rc)
		goto out;
	m = o->model;
	rc = -ENOMEM;
	v2 = openapi_doc_v2(m);
	if (!v2)
		goto out;
	rc = openapi_proto_v2(v2, &proto, err, errlen);
	if (rc)
		goto out;
	rc = rep_set(&o->v2_proto, (char *)proto.data, proto.len);
	proto.data = NULL;	/* o owns it now */
	if (!rc)
		rc = rep_json(&o->v2_json, v2);
	v2 = NULL;
	if (!rc)
		rc = make_v3(o, m);
out:
	if (rc && errlen && !err[0])
		snprintf(err, errlen, "making the OpenAPI documents: %s", strerror(-rc));
	json_decref(v2);
	pb_free(&proto);
	if (rc) {
		openapi_destroy(o);
		errno = -rc;
		return NULL;
	}
	return o;
}

/* ------------------------------------------------------------------ fieldValidation */

#define NAMES_MAX 800		/* the unknown fields named; the rest counted */

/* One Warning header's value for field path f (len bytes), at out. */
static size_t warning_of(const char *f, size_t len, char *out, size_t outlen)
{
	static const char head[] = "299 - \"unknown field \\\"", tail[] = "\\\"\"";
	size_t k = sizeof(head) - 1;

	memcpy(out, head, k);
	for (size_t i = 0; i < len && k + 2 + sizeof(tail) < outlen; i++) {
		unsigned char ch = (unsigned char)f[i];

		if (ch == '"' || ch == '\\')
			out[k++] = '\\';
		out[k++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	memcpy(out + k, tail, sizeof(tail));
	return k + sizeof(tail) - 1;
}

int openapi_field_validation(const struct openapi *o, const char *mode, const struct kind_info *k,
			     enum openapi_body what, const json_t *body, char **warnings, char *msg, size_t msglen)
{
	char names[NAMES_MAX], list[NAMES_MAX + 128];
	size_t n, shown = 0, used = 0;
	bool warn;

	*warnings = NULL;
	if (!mode || !*mode || !strcmp(mode, "Ignore"))
		return 0;
	warn = !strcmp(mode, "Warn");
	if (!warn && strcmp(mode, "Strict") != 0) {
		snprintf(msg, msglen, "fieldValidation: Unsupported value: \"%.64s\": supported values: \"Ignore\", "
			 "\"Strict\", \"Warn\"", mode);
		return -EINVAL;
	}
	if (what == OPENAPI_JSON_PATCH)
		n = model_openapi_unknown_json_patch(o->model, k->id, body, names, sizeof(names));
	else
		n = model_openapi_unknown_fields(o->model, k->id, body, what == OPENAPI_MERGE_PATCH, names, sizeof(names));
	if (!n)
		return 0;
	list[0] = 0;
	for (const char *f = names; *f; shown++) {
		size_t len = strcspn(f, "\n");

		if (warn)
			used += warning_of(f, len, list + used, sizeof(list) - used - 1);
		else
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%sunknown field \"%.*s\"",
						 shown ? ", " : "", (int)len, f);
		if (used >= sizeof(list) - 1)
			break;
		if (warn)
			list[used++] = '\n';
		f += len + (f[len] == '\n');
	}
	if (warn) {
		list[used && list[used - 1] == '\n' ? used - 1 : used] = 0;
		*warnings = strdup(list);
		return *warnings ? 0 : -ENOMEM;
	}
	snprintf(msg, msglen, "%s in version \"%s\" cannot be handled as a %s: strict decoding error: %s%s", k->kind,
		 k->api_version, k->kind, list, n > shown ? ", ..." : "");
	return -EINVAL;
}

/* ------------------------------------------------------------------ Accept */

struct clause {
	char type[128];
	float q;
	int specific;		/* 2 type/subtype, 1 type/any, 0 any/any */
};

static int by_preference(const void *a, const void *b)
{
	const struct clause *x = a, *y = b;

	if (x->q != y->q)
		return x->q > y->q ? -1 : 1;
	return y->specific - x->specific;
}

/* The clauses of accept (none: one matching anything), in preference order. */
static size_t clauses_of(const char *accept, struct clause *c, size_t max)
{
	size_t n = 0;

	if (!accept || !*accept)
		accept = "*/*";
	for (const char *s = accept; *s && n < max;) {
		size_t len = strcspn(s, ","), t;
		const char *q;
		char part[256], *semi;

		snprintf(part, sizeof(part), "%.*s", (int)(len < sizeof(part) ? len : sizeof(part) - 1), s);
		s += len + (s[len] == ',');
		semi = strchr(part, ';');
		q = semi ? strstr(semi, "q=") : NULL;
		c[n].q = q ? strtof(q + 2, NULL) : 1.0f;
		if (semi)
			*semi = 0;
		t = strspn(part, " \t");
		snprintf(c[n].type, sizeof(c[n].type), "%s", part + t);
		c[n].type[strcspn(c[n].type, " \t")] = 0;
		if (!c[n].type[0] || !strchr(c[n].type, '/') || c[n].q <= 0)
			continue;
		c[n].specific = !strcmp(c[n].type, "*/*") ? 0 : strstr(c[n].type, "/*") ? 1 : 2;
		n++;
	}
	/* stable: equal clauses keep their order (insertion sort, n is small) */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && by_preference(&c[j - 1], &c[j]) > 0; j--) {
			struct clause tmp = c[j];

			c[j] = c[j - 1];
			c[j - 1] = tmp;
		}
	return n;
}

static bool matches(const char *range, const char *type)
{
	size_t slash = strcspn(type, "/");

	if (!strcmp(range, "*/*"))
		return true;
	if (strlen(range) == slash + 2 && !strcmp(range + slash, "/*"))
		return !strncasecmp(range, type, slash);
	return !strcasecmp(range, type);
}

/* The index of the offer accept prefers, or -1 (406). */
static int pick(const char *accept, const char *const *offers, size_t n)
{
	struct clause c[MAX_CLAUSES];
	size_t nc = clauses_of(accept, c, MAX_CLAUSES);

	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < n; j++)
			if (matches(c[i].type, offers[j]))
				return (int)j;
	return -1;
}

/* ------------------------------------------------------------------ answers */

/* Whether If-None-Match (a list of ETags, or *) names etag. */
static bool names_etag(const char *header, const char *etag)
{
	size_t want = strlen(etag);

	for (const char *s = header; s && *s;) {
		size_t len;

		s += strspn(s, " \t,");
		if (!strncmp(s, "W/", 2))
			s += 2;
		len = strcspn(s, ", \t");
		if ((len == 1 && *s == '*') || (len == want && !strncmp(s, etag, len)))
			return true;
		s += len;
	}
	return false;
}

static void serve(const struct rep *r, const char *ctype, const char *if_none_match, struct openapi_answer *a)
{
	snprintf(a->etag, sizeof(a->etag), "\"%s\"", r->hash);
	if (if_none_match && names_etag(if_none_match, a->etag)) {
		a->code = 304;
		return;
	}
	a->code = 200;
	a->content_type = ctype;
	a->body = r->body;
	a->len = r->len;
}

static void refuse(struct openapi_answer *a, int code, const char *what, const char *path)
{
	a->code = code;
	snprintf(a->message, sizeof(a->message), "%s (%.200s)", what, path);
}

bool openapi_lookup(const struct openapi *o, const char *path, const char *hash, const char *accept,
		    const char *if_none_match, time_t now, struct openapi_answer *a)
{
	static const char *const v2_offers[] = { "application/json", V2_PROTOBUF_OLD, OPENAPI_V2_PROTOBUF };
	static const char *const json_only[] = { "application/json" };
	size_t len = strlen(path);
	const char *gv;

	if (strncmp(path, "/openapi/", 9) != 0 && strcmp(path, "/openapi") != 0)
		return false;
	memset(a, 0, sizeof(*a));
	if (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 11 && !strncmp(path, "/openapi/v2", 11)) {
		int which = pick(accept, v2_offers, 3);

		if (which < 0)
			refuse(a, 406, "the OpenAPI v2 document is served as application/json or " OPENAPI_V2_PROTOBUF,
			       accept ? accept : "");
		else if (which == 0)
			serve(&o->v2_json, "application/json", if_none_match, a);
		else
			serve(&o->v2_proto, OPENAPI_V2_PROTOBUF, if_none_match, a);
		return true;
	}
	if (len == 11 && !strncmp(path, "/openapi/v3", 11)) {
		serve(&o->v3_index, "application/json", if_none_match, a);
		return true;
	}
	gv = path + 12;
	for (size_t i = 0; len > 12 && !strncmp(path, "/openapi/v3/", 12) && i < o->ngv; i++) {
		const struct group_version *g = &o->gv[i];

		if (strlen(g->name) != len - 12 || strncmp(g->name, gv, len - 12) != 0)
			continue;
		if (pick(accept, json_only, 1) < 0) {
			refuse(a, 406, "a group-version's OpenAPI v3 document is served as application/json",
			       accept ? accept : "");
			return true;
		}
		if (hash && *hash && strcmp(hash, g->json.hash) != 0) {
			a->code = 301;
			snprintf(a->location, sizeof(a->location), "/openapi/v3/%s?hash=%s", g->name, g->json.hash);
			return true;
		}
		serve(&g->json, "application/json", if_none_match, a);
		if (hash && *hash) {
			time_t later = now + YEAR_SECONDS;
			struct tm tm;

			a->immutable = true;
			if (gmtime_r(&later, &tm))
				strftime(a->expires, sizeof(a->expires), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		}
		return true;
	}
	refuse(a, 404, "no such OpenAPI document", path);
	return true;
}
