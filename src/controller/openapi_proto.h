/*
 * openapi_proto.h — an OpenAPI v2 document as the protobuf message that
 * Kubernetes clients read from /openapi/v2: gnostic's openapi.v2.Document
 * (github.com/google/gnostic, openapiv2/OpenAPIv2.proto), which client-go
 * asks for with Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf
 * and decodes with proto.Unmarshal before kubectl reads it (explain,
 * client-side validation, apply's patch types and merge keys).
 *
 * The JSON document is walked as gnostic's compiler would read it: each
 * JSON member becomes the field of the same name and its number in that
 * proto, maps of names become repeated Named* pairs (in key order, as the
 * JSON is written; fields in number order), and vendor extensions (x-...) become NamedAny whose
 * Any carries the value as YAML text (kube-openapi reads them with
 * yaml.Unmarshal).  A member the encoder does not know is an error naming
 * its place, never dropped: the documents are ours, and a field lost here
 * would be a schema that differs between JSON and protobuf.
 *
 * Ownership: doc is borrowed; *out is the caller's (pb_init before,
 * pb_free after, also on failure).
 */
#ifndef WEFT_CONTROLLER_OPENAPI_PROTO_H
#define WEFT_CONTROLLER_OPENAPI_PROTO_H

#include <jansson.h>
#include <stddef.h>

#include "lib/pb.h"

/* 0, -EINVAL with what cannot be encoded and where in err, -ENOMEM or
 * -E2BIG (pb's bound). */
int openapi_proto_v2(const json_t *doc, struct pb *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
