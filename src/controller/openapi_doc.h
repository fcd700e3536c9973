/*
 * openapi_doc.h — the OpenAPI documents of the API: version 2 (Swagger
 * 2.0) for the whole API, version 3 (3.0.0) for each group-version, made
 * from the model's schema definitions (model/openapi.h) and the kind table.
 *
 * Each kind's operations are the verbs discovery lists for it
 * (discovery_verbs), at the paths api.c routes:
 *
 *   PREFIX[/namespaces/{namespace}]/PLURAL         get (list), post (create)
 *   PREFIX[/namespaces/{namespace}]/PLURAL/{name}  get (read), put (replace),
 *                                                   patch, delete
 *   PREFIX/PLURAL                                   get (list in every
 *                                                   namespace; namespaced kinds)
 *
 * each with x-kubernetes-action and x-kubernetes-group-version-kind (what
 * kubectl looks for: explain finds a kind's schema through its paths'
 * GVK, apply the patch types a kind's PATCH consumes, create and apply
 * whether its PATCH takes fieldValidation), the query parameters the API
 * reads, and the request and response bodies as references to the
 * definitions.  Version 2 has every definition; a version 3 document the
 * ones its paths reach.
 *
 * References: the model's bare names become #/definitions/NAME (v2) or
 * #/components/schemas/NAME (v3); in v3 a reference beside a description
 * is wrapped in allOf, as OpenAPI 3.0 ignores what stands beside a $ref.
 *
 * Ownership: each call returns a new document (the caller decrefs), or
 * NULL when out of memory (or, for v3, when no kind has that
 * group-version).  m is borrowed.
 */
#ifndef WEFT_CONTROLLER_OPENAPI_DOC_H
#define WEFT_CONTROLLER_OPENAPI_DOC_H

#include <jansson.h>

#include "model/openapi.h"

json_t *openapi_doc_v2(const struct model_openapi *m);
/* group "" is the core group (/api/v1). */
json_t *openapi_doc_v3(const struct model_openapi *m, const char *group, const char *version);

#endif
