/*
 * openapi.h — /openapi/v2 and /openapi/v3, served as kube-apiserver serves
 * them, so that kubectl can explain, validate and apply weft's kinds.
 *
 *   GET /openapi/v2                 the v2 document: JSON (Accept
 *                                   application/json, any type or none) or
 *                                   gnostic's protobuf (Accept
 *                                   application/com.github.proto-openapi.
 *                                   spec.v2@v1.0+protobuf, or .v2.v1.0+);
 *                                   anything else 406
 *   GET /openapi/v3                 the index: {"paths": {"api/v1":
 *                                   {"serverRelativeURL": "/openapi/v3/
 *                                   api/v1?hash=H"}, "apis/G/V": ...}}
 *   GET /openapi/v3/api/v1          a group-version's v3 document (JSON;
 *   GET /openapi/v3/apis/G/V        another Accept only: 406)
 *
 * Every answer has an ETag, the SHA-512 of its bytes in upper-case hex (as
 * kube-openapi), and Vary: Accept; an If-None-Match that names it gets 304
 * without a body.  A group-version asked for with ?hash=H: when H is its
 * ETag the answer may be cached for good (Cache-Control: public,
 * immutable; Expires a year on), else 301 to the URL of the current hash
 * (the schema changed with the controller).  A path under /openapi/ that
 * is none of these is 404.
 *
 * The documents are made once, by openapi_create (from the model's schema,
 * openapi_doc.h, openapi_proto.h), and never change: an answer's body is
 * borrowed from struct openapi, which any number of threads may read at
 * once without a lock.  Who may read them (every authenticated client, as
 * kube-apiserver's system:discovery) is api.c's to decide.
 *
 * The same schema decides ?fieldValidation= of writes
 * (openapi_field_validation, below).
 */
#ifndef WEFT_CONTROLLER_OPENAPI_H
#define WEFT_CONTROLLER_OPENAPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "model/model.h"

#define OPENAPI_V2_PROTOBUF "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

struct openapi;

/* The documents, made from the built-in schema: NULL (errno set) with why
 * in err when the schema does not load (a bug of the build) or memory
 * runs out. */
struct openapi *openapi_create(char *err, size_t errlen);
void openapi_destroy(struct openapi *o);

/* What a write sends, for openapi_field_validation. */
enum openapi_body { OPENAPI_OBJECT, OPENAPI_MERGE_PATCH, OPENAPI_JSON_PATCH };

/*
 * ?fieldValidation=mode of a create, replace or patch of kind k, as
 * Kubernetes reads it, judged on what the client sent (body: the object,
 * a merge or strategic merge patch, or a JSON Patch; model/openapi.h says
 * how each is walked):
 *   NULL, "" or Ignore  0: made, unknown fields kept (weft's way without it)
 *   Warn                0, and when there are unknown fields *warnings: the
 *                       values of the Warning headers to answer with, one a
 *                       line (299 - "unknown field "spec.foo""; malloc'd,
 *                       the caller frees)
 *   Strict              -EINVAL when there are unknown fields, with
 *                       kube-apiserver's message in msg ("Pod in version
 *                       "v1" cannot be handled as a Pod: strict decoding
 *                       error: unknown field "spec.foo"")
 *   anything else       -EINVAL, naming the values it may take
 * -ENOMEM when the warnings cannot be kept.  Field paths are the client's
 * bytes: in a header, quotes and backslashes are escaped and control bytes
 * made '?'.
 */
int openapi_field_validation(const struct openapi *o, const char *mode, const struct kind_info *k,
			     enum openapi_body what, const json_t *body, char **warnings, char *msg, size_t msglen)
	__attribute__((warn_unused_result));

struct openapi_answer {
	int code;			/* 200, 301, 304, 404 or 406 */
	const char *content_type;	/* of body (200), else NULL */
	const char *body;		/* 200: borrowed from the struct openapi */
	size_t len;
	char etag[132];			/* "\"HEX\"" (200, 304), else "" */
	bool immutable;			/* Cache-Control: public, immutable, and expires */
	char expires[40];		/* an HTTP date a year after now (immutable) */
	char location[512];		/* 301 */
	char message[256];		/* 404, 406: for the Status */
};

/* The answer to GET path (no query string; hash: its ?hash= or NULL;
 * accept and if_none_match: those headers or NULL; now: for Expires).
 * False when path is not under /openapi/ (a != touched). */
bool openapi_lookup(const struct openapi *o, const char *path, const char *hash, const char *accept,
		    const char *if_none_match, time_t now, struct openapi_answer *a);

#endif
