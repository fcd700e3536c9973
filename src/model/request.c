/*
 * request.c — what a write request carries, checked against its path
 * before anything else looks at it: the body's identity (kind, apiVersion,
 * name, namespace, resourceVersion) and size, a DELETE's DeleteOptions,
 * and resourceVersions as text.
 *
 * Why here and once: validation and defaulting follow the body's kind,
 * storage and admission follow the path's.  When the two could differ, a
 * Secret posted to .../pods was stored as a Pod without a Pod's checks,
 * and a body of another kind reached a kind's admission hook (which reads
 * fields only its own kind has).  Every write goes through
 * model_request_check first (the registry calls it at the top of every
 * create and replace), so after it the body is of the path's kind and the
 * rest of the write can rely on that.
 *
 * The body itself is decoded here too (model_body_decode): JSON, or YAML
 * turned into the same JSON value once, so that everything after reads
 * one form and counts its limits on what was decoded.  The YAML decoder
 * is given the object limits (values, bytes of text, one document), so an
 * alias bomb stops at them having made no more than they allow.
 *
 * Errors: -EBADMSG (the API answers 400 BadRequest, as kube-apiserver does
 * for "the API version in the data does not match" and an unrecognized
 * object) or -E2BIG (413), with a message naming what the body says and
 * what the path says.  O(size of the body).
 */
#include "model/model.h"
#include "model/validate.h"
#include "lib/yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

int model_revision_parse(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

/* A string field of body or absent: 0 with *out (NULL when absent, null or
 * ""), or -EBADMSG naming field. */
static int opt_string(const json_t *parent, const char *field, const char **out, char *err, size_t errlen)
{
	const json_t *j = json_object_get(parent, field);

	*out = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return bad(err, errlen, "%s must be a string, not %s", field, validate_type_name(j));
	if (json_string_length(j))
		*out = json_string_value(j);
	return 0;
}

/* Sets the path's apiVersion and kind, first in body as a manifest has
 * them (the other members keep their order).  0 or -ENOMEM. */
static int set_type(const struct kind_info *k, json_t *body)
{
	json_t *rest = json_copy(body);
	int rc = -ENOMEM;

	if (!rest)
		return rc;
	json_object_del(rest, "apiVersion");
	json_object_del(rest, "kind");
	json_object_clear(body);
	if (!json_object_set_new(body, "apiVersion", json_string(k->api_version)) &&
	    !json_object_set_new(body, "kind", json_string(k->kind)) && !json_object_update(body, rest))
		rc = 0;
	json_decref(rest);
	return rc;
}

/* kind and apiVersion: equal to the path's, or absent and then set. */
static int check_type(const struct kind_info *k, json_t *body, char *err, size_t errlen)
{
	const char *kind, *api;
	char q[VQUOTE_MAX];
	int rc;

	if ((rc = opt_string(body, "kind", &kind, err, errlen)) ||
	    (rc = opt_string(body, "apiVersion", &api, err, errlen)))
		return rc;
	if (kind && strcmp(kind, k->kind) != 0)
		return bad(err, errlen, "body kind %s does not match the path's resource '%s' (kind %s)",
			   vquote(kind, q), k->plural, k->kind);
	if (api && strcmp(api, k->api_version) != 0)
		return bad(err, errlen,
			   "body apiVersion %s does not match the path's resource '%s' (apiVersion %s)",
			   vquote(api, q), k->plural, k->api_version);
	if (kind && api)
		return 0;
	return set_type(k, body);
}

static int check_metadata(const struct kind_info *k, const char *ns, const char *name, json_t *body,
			  char *err, size_t errlen)
{
	json_t *meta = json_object_get(body, "metadata");
	const char *bname, *bns, *rv;
	char q[VQUOTE_MAX], q2[VQUOTE_MAX];
	int64_t rev;
	int rc;

	if (!meta || json_is_null(meta)) {
		if (name)
			return bad(err, errlen,
				   "metadata.name: the body has none; the path names '%s' (they must match)",
				   name);
		return 0;	/* a create: validation reports "metadata: required" */
	}
	if (!json_is_object(meta))
		return bad(err, errlen, "metadata must be an object, not %s", validate_type_name(meta));
	if ((rc = opt_string(meta, "name", &bname, err, errlen)) ||
	    (rc = opt_string(meta, "namespace", &bns, err, errlen)) ||
	    (rc = opt_string(meta, "resourceVersion", &rv, err, errlen))) {
		/* opt_string named the field alone: put it under metadata */
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", err ? err : "");
		return bad(err, errlen, "metadata.%s", inner);
	}
	if (name && (!bname || strcmp(bname, name) != 0))
		return bad(err, errlen, "metadata.name: %s does not match the name in the path (%s)",
			   bname ? vquote(bname, q) : "(none)", vquote(name, q2));
	if (k->namespaced) {
		if (bns && ns && strcmp(bns, ns) != 0)
			return bad(err, errlen,
				   "metadata.namespace: %s does not match the namespace in the path (%s)",
				   vquote(bns, q), vquote(ns, q2));
		if (ns && *ns && json_object_set_new(meta, "namespace", json_string(ns)))
			return -ENOMEM;
	} else if (bns) {
		return bad(err, errlen, "metadata.namespace: %s is set, but %s is not namespaced",
			   vquote(bns, q), k->kind);
	}
	if (rv && model_revision_parse(rv, &rev))
		return bad(err, errlen, "metadata.resourceVersion: %s is not a resourceVersion "
			   "(decimal digits, as the server wrote it)", vquote(rv, q));
	return 0;
}

/* The limits, as a message that says it is about the body. */
static int check_limits(const json_t *body, char *err, size_t errlen)
{
	char what[VLINE_MAX];
	int rc = model_check_limits(body, what, sizeof(what));

	if (rc && err && errlen)
		snprintf(err, errlen, "the body is over a limit: %s", what);
	return rc;
}

int model_request_check(const struct kind_info *k, const char *ns, const char *name, json_t *body,
			char *err, size_t errlen)
{
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!k)
		return bad(err, errlen, "no kind");
	if (!json_is_object(body))
		return bad(err, errlen, "the body must be a JSON object, not %s", body ? validate_type_name(body) : "empty");
	if ((rc = check_type(k, body, err, errlen)) || (rc = check_metadata(k, ns, name, body, err, errlen)))
		return rc;
	return check_limits(body, err, errlen);
}

int model_delete_options(const struct kind_info *k, const json_t *body, int64_t *want_rev, char *err,
			 size_t errlen)
{
	const json_t *pre, *dry;
	const char *kind, *api, *rv, *uid;
	char q[VQUOTE_MAX];
	int rc;

	*want_rev = 0;
	if (err && errlen)
		err[0] = 0;
	if (!body)
		return 0;
	if (!json_is_object(body))
		return bad(err, errlen, "the body of a DELETE must be DeleteOptions (a JSON object), not %s",
			   validate_type_name(body));
	if ((rc = opt_string(body, "kind", &kind, err, errlen)) ||
	    (rc = opt_string(body, "apiVersion", &api, err, errlen)))
		return rc;
	if (kind && strcmp(kind, "DeleteOptions") != 0)
		return bad(err, errlen, "body kind %s is not DeleteOptions (a DELETE of '%s' takes "
			   "DeleteOptions or no body)", vquote(kind, q), k ? k->plural : "?");
	if (api && strcmp(api, "v1") != 0 && strcmp(api, "meta.k8s.io/v1") != 0 &&
	    !(k && strcmp(api, k->api_version) == 0))
		return bad(err, errlen, "body apiVersion %s is not one DeleteOptions has (v1, meta.k8s.io/v1%s%s)",
			   vquote(api, q), k ? " or " : "", k ? k->api_version : "");
	if ((rc = check_limits(body, err, errlen)))
		return rc;
	dry = json_object_get(body, "dryRun");
	if (dry && !json_is_null(dry) && !(json_is_array(dry) && json_array_size(dry) == 0))
		return bad(err, errlen, "dryRun: not supported (the object would be deleted)");
	pre = json_object_get(body, "preconditions");
	if (!pre || json_is_null(pre))
		return 0;
	if (!json_is_object(pre))
		return bad(err, errlen, "preconditions must be an object, not %s", validate_type_name(pre));
	if ((rc = opt_string(pre, "resourceVersion", &rv, err, errlen)) ||
	    (rc = opt_string(pre, "uid", &uid, err, errlen))) {
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", err ? err : "");
		return bad(err, errlen, "preconditions.%s", inner);
	}
	if (uid)
		return bad(err, errlen, "preconditions.uid: not supported (only preconditions.resourceVersion)");
	if (rv && (model_revision_parse(rv, want_rev) || *want_rev <= 0)) {
		*want_rev = 0;
		return bad(err, errlen, "preconditions.resourceVersion: %s is not a revision", vquote(rv, q));
	}
	return 0;
}

int model_body_decode(const char *buf, size_t len, bool yaml, json_t **out, char *err, size_t errlen)
{
	const struct yaml_limits lim = { .max_docs = 1, .max_nodes = MODEL_MAX_VALUES,
					 .max_bytes = MODEL_MAX_OBJECT_BYTES, .max_depth = YAML_MAX_DEPTH,
					 .over = -E2BIG };
	char why[256];
	json_error_t jerr;
	json_t **docs = NULL;
	size_t ndocs = 0;
	int rc;

	*out = NULL;
	if (!yaml) {
		*out = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
		if (*out)
			return 0;
		if (json_error_code(&jerr) == json_error_stack_overflow) {
			snprintf(err, errlen, "the body is over a limit: nested deeper than %d levels (the limit) at "
				 "line %d, column %d", MODEL_MAX_DEPTH, jerr.line, jerr.column);
			return -E2BIG;
		}
		return bad(err, errlen, "the body is not valid JSON: line %d, column %d: %s", jerr.line, jerr.column,
			   jerr.text);
	}
	rc = yaml_decode_limited(buf, len, &lim, &docs, &ndocs, why, sizeof(why));
	if (rc == -E2BIG) {
		snprintf(err, errlen, "the body is over a limit: %s (the limit)", why);
		return -E2BIG;
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return bad(err, errlen, "the body is not valid YAML: %s%s", why,
			   strstr(why, "more than 1 document") ? " (send one object a request)" : "");
	if (ndocs != 1) {
		yaml_docs_free(docs, ndocs);
		return bad(err, errlen, "%s", "the body is empty: send one object");
	}
	*out = docs[0];
	docs[0] = NULL;
	yaml_docs_free(docs, ndocs);
	return 0;
}
