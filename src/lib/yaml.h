/*
 * yaml.h — manifests in, manifests out: a YAML 1.2 (or JSON) stream decoded
 * into jansson documents, and a JSON value emitted as YAML.
 *
 * Decoding follows the YAML 1.2 core schema: plain scalars null/~/empty →
 * null, true/false (any case form the schema allows) → boolean, decimal,
 * 0o octal and 0x hex integers → integer, floats (.inf/.nan too) → real,
 * everything else and every quoted scalar → string.  Anchors and aliases are
 * resolved, with a bound on the expanded size (no "billion laughs").
 * Mapping keys must be scalars; duplicate keys are an error.  Empty
 * documents (e.g. between two "---"), and documents that are just null, are
 * skipped.
 *
 * Ownership: yaml_decode_stream fills *docs with a malloc'd array of new
 * references; free with yaml_docs_free.  yaml_emit returns a malloc'd string.
 */
#ifndef WEFT_YAML_H
#define WEFT_YAML_H

#include <jansson.h>
#include <stddef.h>

#define YAML_MAX_DOCS 10000
#define YAML_MAX_EXPANDED_NODES 1000000	/* JSON values made, per stream */
#define YAML_MAX_DEPTH 256		/* nesting, counting alias expansion */
#define YAML_MAX_EXPANDED_BYTES (256u << 20)	/* bytes of strings and keys made, per stream */

/* What one decode may make: documents, JSON values, bytes of strings and
 * keys (aliases count each time they are expanded) and nesting (at most
 * YAML_MAX_DEPTH).  Past max_docs the decode fails with -EINVAL; past any
 * other, with over (-EINVAL, or -E2BIG for a caller that answers "too
 * large" differently from "malformed"), having made no more than that. */
struct yaml_limits {
	size_t max_docs, max_nodes, max_bytes;
	int max_depth;
	int over;
};

/* 0, or -EINVAL with "line L, column C: what" in err (-ENOMEM when out of
 * memory).  The input must be UTF-8 without NUL bytes.  YAML can say what
 * JSON cannot: .inf/.nan and integers outside int64 are errors, and a key
 * is its scalar's text (so `1: x` gives the key "1"). */
int yaml_decode_stream(const char *buf, size_t len, json_t ***docs, size_t *ndocs,
		       char *err, size_t errlen) __attribute__((warn_unused_result));
/* yaml_decode_stream with lim's limits instead of the YAML_MAX_ ones
 * (lim->max_depth is cut to YAML_MAX_DEPTH). */
int yaml_decode_limited(const char *buf, size_t len, const struct yaml_limits *lim, json_t ***docs,
			size_t *ndocs, char *err, size_t errlen) __attribute__((warn_unused_result));
void yaml_docs_free(json_t **docs, size_t ndocs);

/* A JSON value as a block-style YAML document (no leading "---").
 * Strings that would read back as another type are quoted. */
char *yaml_emit(const json_t *value);

#endif
