/*
 * status_json.h — a failed request's answer as a Kubernetes Status object
 * (kind Status, apiVersion v1, status Failure, message, reason, code) with
 * the details kube-apiserver gives each reason (apimachinery's
 * api/errors): what the failure was about and, where it has them, its
 * causes and when to retry.
 *
 *   NotFound 404, AlreadyExists 409, Conflict 409, Forbidden 403,
 *   MethodNotAllowed 405  details {name, group, kind}: kind the resource
 *                         (plural, "pods"), group omitted for the core one;
 *                         read from the message where it opens as
 *                         upstream's do (`namespaces "red" not found`:
 *                         the thing missing, which may not be the path's),
 *                         else the request's kind and name
 *   Invalid 422           details {name, group, kind, causes}: kind the
 *                         Kind ("Pod", as upstream's NewInvalid), causes
 *                         from the message's lines (model_error_causes)
 *   any with retry_after  details.retryAfterSeconds (and the sender adds
 *                         a Retry-After header): TooManyRequests 429;
 *                         Timeout 504 for a resourceVersion from the
 *                         future, with its cause ResourceVersionTooLarge
 *   Expired 410, RequestEntityTooLarge 413, BadRequest 400, the rest:
 *                         no details (upstream gives none)
 *
 * Ownership: arguments are borrowed; the result is a new reference, NULL
 * when out of memory or when message is not UTF-8.
 */
#ifndef WEFT_CONTROLLER_STATUS_JSON_H
#define WEFT_CONTROLLER_STATUS_JSON_H

#include <jansson.h>

#include "controller/controller.h"

/* st as a Status, its message message (st->message, or a cleaned copy);
 * k and name the request's kind and object (NULL: none). */
json_t *status_json_new(const struct status *st, const char *message, const struct kind_info *k,
			const char *name);

#endif
