/*
 * selector.h — Kubernetes' label and field selectors, the labelSelector
 * and fieldSelector query parameters of a list or a watch: parsed once
 * (bounded, every error named), then matched against many objects.
 *
 * Label selectors (Kubernetes' labels.Parse, the same grammar and the same
 * key and value rules):
 *     app=web, tier==front, env!=prod          equality (!= also matches
 *                                              an object without the label)
 *     env in (prod,staging), env notin (dev)   sets ("()" is the set {""})
 *     app, !app                                the label exists / does not
 *     replicas>2, replicas<5                   integers, as Kubernetes has them
 * Commas are AND; "" selects everything.
 *
 * Field selectors (fields.ParseSelector): FIELD=VALUE, FIELD==VALUE,
 * FIELD!=VALUE joined by commas, `\,` `\=` `\\` escaping those three bytes
 * in a value.  The fields are metadata.name and metadata.namespace for
 * every kind and spec.nodeName for pods and NodeCredentials; any other is refused ("field label
 * not supported: X"), never ignored.
 *
 * Bounds: a selector's text is at most SELECTOR_MAX_BYTES, it has at most
 * SELECTOR_MAX_TERMS requirements of each kind and a set at most
 * SELECTOR_MAX_VALUES values; parsing is O(length), matching O(terms x set
 * size) with no allocation.
 *
 * Ownership: a struct selector starts zeroed, the parse calls fill it (a
 * failed call leaves it as it was), selector_free releases what they
 * allocated (and accepts a zeroed one).  A selector is read-only once
 * parsed: any number of threads may match with it.
 */
#ifndef WEFT_MODEL_SELECTOR_H
#define WEFT_MODEL_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

#define SELECTOR_MAX_BYTES 4096
#define SELECTOR_MAX_TERMS 100
#define SELECTOR_MAX_VALUES 100

enum selector_op {
	SELECTOR_EQ,		/* =, == */
	SELECTOR_NE,		/* != */
	SELECTOR_IN,
	SELECTOR_NOTIN,
	SELECTOR_EXISTS,	/* key */
	SELECTOR_ABSENT,	/* !key */
	SELECTOR_GT,		/* > (labels only) */
	SELECTOR_LT,		/* < (labels only) */
};

/* The fields a field selector may name. */
enum selector_field {
	SELECTOR_FIELD_NAME,		/* metadata.name */
	SELECTOR_FIELD_NAMESPACE,	/* metadata.namespace ("" for cluster-scoped kinds) */
	SELECTOR_FIELD_NODE_NAME,	/* spec.nodeName (pods; "" when unset) */
	SELECTOR_FIELDS
};

struct selector_term {
	enum selector_op op;
	char *key;			/* a label's key (label terms) */
	enum selector_field field;	/* (field terms) */
	char **values;			/* EQ, NE: 1; IN, NOTIN: 1..SELECTOR_MAX_VALUES; else 0 */
	size_t nvalues;
	long long number;		/* GT, LT */
};

struct selector {
	struct selector_term *labels;
	size_t nlabels;
	struct selector_term *fields;
	size_t nfields;
	/* a watch's changes=network: an update that changes nothing a
	 * node's network is built from (selector_network_changed) is not
	 * sent; objects in and out of the selection are, as ever */
	bool network_updates;
};

/* What a selector looks at in one object (borrowed from it). */
struct selector_view {
	const char *field[SELECTOR_FIELDS];	/* never NULL: "" when absent */
	const json_t *labels;			/* metadata.labels, or NULL */
};

/* Parse text (NULL or "" selects everything) into s, adding to what s
 * holds.  0, or -EINVAL (malformed, or a key, value or field Kubernetes
 * refuses), -E2BIG (over a bound), -ENOMEM, with why in err, e.g.
 *   found 'end of string', expected: ',' or ')' (at byte 10)
 *   field label not supported: spec.foo */
int selector_parse_labels(struct selector *s, const char *text, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* k: the kind the selector is for (which fields it has); NULL for
 * weft.io's NodeCredential (not a registry kind), whose spec.nodeName is
 * its node, selected as a pod's is. */
int selector_parse_fields(struct selector *s, const struct kind_info *k, const char *text, char *err,
			  size_t errlen) __attribute__((warn_unused_result));
/* An equality on name (a watch of one object by its path). */
int selector_add_field(struct selector *s, enum selector_field f, const char *value)
	__attribute__((warn_unused_result));
/* A Kubernetes LabelSelector object (a NetworkPolicy's podSelector or
 * namespaceSelector; borrowed) into s, adding to what s holds:
 *   matchLabels {k: v}                    -> SELECTOR_EQ
 *   matchExpressions [{key, operator, values}]: In -> SELECTOR_IN,
 *     NotIn -> SELECTOR_NOTIN (also matches an object without the key),
 *     Exists -> SELECTOR_EXISTS, DoesNotExist -> SELECTOR_ABSENT
 * all ANDed; ls NULL or {} selects everything.  0, -EINVAL (not an
 * object, a bad key, value or operator, values where none belong or none
 * where they must be), -E2BIG (over SELECTOR_MAX_TERMS or
 * SELECTOR_MAX_VALUES), -ENOMEM, with err naming the field inside ls,
 * e.g. "matchExpressions[1].operator: 'Has' is not In, NotIn, Exists or
 * DoesNotExist".  A failed call leaves s as it was. */
int selector_from_label_selector(struct selector *s, const json_t *ls, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void selector_free(struct selector *s);

/* No requirement at all: everything matches. */
bool selector_empty(const struct selector *s);
/* The value f must equal for s to match (its first equality on f), or NULL. */
const char *selector_exact(const struct selector *s, enum selector_field f);

/* The view of obj (a stored object; borrowed). */
void selector_view_of(const json_t *obj, struct selector_view *v);
/* Whether an update from old to now changes what a node's network is
 * built from: a Node's spec.podCIDR, status.addresses and annotation
 * weft.io/node-id; a Pod's spec (its node, its ports), status.podIP and podIPs,
 * metadata.labels and annotation weft.io/container-id; any change of any
 * other kind (told by now's "kind"). */
bool selector_network_changed(const json_t *old, const json_t *now);
bool selector_matches(const struct selector *s, const struct selector_view *v);

const char *selector_field_name(enum selector_field f);

#endif
