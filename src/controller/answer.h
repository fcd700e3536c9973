/*
 * answer.h — the form of an API answer: JSON, YAML or a Table, as the
 * request's Accept header prefers (kube-apiserver's content negotiation),
 * and an object written in that form.
 *
 * Offers, in the order a request without a preference gets them:
 * application/json, application/yaml, and a Table
 * (application/json;as=Table;g=meta.k8s.io;v=v1, or v1beta1).  A watch
 * streams JSON events only (kube-apiserver has no YAML framing for a
 * watch: a watch that accepts nothing but YAML is 406 there and here; one
 * that asks for a Table gets objects, as before).
 *
 * Ownership: arguments are borrowed; answer_text returns malloc'd text.
 */
#ifndef WEFT_CONTROLLER_ANSWER_H
#define WEFT_CONTROLLER_ANSWER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "controller/controller.h"

enum answer_form { ANSWER_JSON, ANSWER_YAML, ANSWER_TABLE };

/* The form accept (a header, or NULL) prefers for a request (a watch when
 * watch): 0 with *form, or -1 with st set to 406 NotAcceptable naming the
 * media types weft serves. */
int answer_negotiate(const char *accept, bool watch, enum answer_form *form, struct status *st)
	__attribute__((warn_unused_result));

/* obj as the text of form (YAML for ANSWER_YAML, compact JSON and a
 * newline otherwise), its length in *len and Content-Type in *ctype;
 * NULL when out of memory. */
char *answer_text(const json_t *obj, enum answer_form form, size_t *len, const char **ctype);

#endif
