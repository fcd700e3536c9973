/*
 * validate.h — what the model's validators share (internal to src/model).
 *
 * A struct vctx carries the caller's error buffer and the field path of the
 * value being looked at.  Validators walk an object top-down: they push a
 * path element ("spec", "[0]"), check fields by name, report each problem as
 * "<path>.<field>: <message>" and pop.  They never stop at the first error:
 * every problem is reported, as long as the buffer has room.
 *
 * The typed getters (vget_*) look a field up, report "required" or a type
 * error ("must be a list"), and return NULL/false when there is nothing
 * usable, so the caller can skip checks that depend on it.
 *
 * Bounds: lists and maps hold at most MODEL_MAX_ITEMS entries (else one
 * error and the items are not looked at); paths are cut at VPATH_MAX bytes;
 * an error line at VLINE_MAX; a quoted value at VQUOTE_MAX.
 */
#ifndef WEFT_MODEL_VALIDATE_H
#define WEFT_MODEL_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/cidr.h"

#define MODEL_MAX_ITEMS 4096
#define VPATH_MAX 256
#define VLINE_MAX 512
#define VQUOTE_MAX 104			/* "'" + 96 bytes + "..." + "'" + NUL */

struct vctx {
	char *err;			/* caller's buffer, may be NULL */
	size_t errlen;
	size_t used;			/* bytes written, without the NUL */
	int nerrors;
	bool full;			/* an error did not fit: no more are written */
	char path[VPATH_MAX];
	size_t pathlen;
};

void vctx_init(struct vctx *v, char *err, size_t errlen);
/* "an object", "a list", "a string", ... for messages; a static string. */
const char *validate_type_name(const json_t *j);
/* Reports "<path>.<field>: <message>"; field NULL or "" reports at the
 * path itself. */
void verror(struct vctx *v, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Path elements: a field name (joined with '.') or a list index ("[3]") or
 * a map key ("[app]").  Each returns a mark to hand back to vpop. */
size_t vpush(struct vctx *v, const char *field);
size_t vpush_index(struct vctx *v, size_t index);
size_t vpush_key(struct vctx *v, const char *key);
/* "field[index]"; reports "must be an object" (and returns false) if item
 * is not one.  Either way the caller vpops mark. */
bool vpush_item(struct vctx *v, const char *field, size_t index, const json_t *item,
		size_t *mark);
/* Remembers s in set (a JSON object used as a set): false if it was there. */
bool vset_add(json_t *set, const char *s);
void vpop(struct vctx *v, size_t mark);
/* 'value' for a message: single-quoted, control characters as '?', cut
 * (at a UTF-8 boundary) past 96 bytes. */
const char *vquote(const char *s, char buf[VQUOTE_MAX]);

/* Typed getters: NULL/false when absent (reported if required) or of the
 * wrong type (always reported). */
const json_t *vget_object(struct vctx *v, const json_t *parent, const char *field, bool required);
const json_t *vget_array(struct vctx *v, const json_t *parent, const char *field, bool required);
const char *vget_string(struct vctx *v, const json_t *parent, const char *field, bool required);
bool vget_int(struct vctx *v, const json_t *parent, const char *field, bool required,
	      json_int_t *out);
bool vget_bool(struct vctx *v, const json_t *parent, const char *field, bool required,
	       bool *out);
/* An integer in [lo, hi]; what names the range in the message
 * ("is not a valid port (1-65535)" is what = "a valid port"). */
bool vget_int_range(struct vctx *v, const json_t *parent, const char *field, bool required,
		    json_int_t lo, json_int_t hi, const char *what, json_int_t *out);
bool vget_port(struct vctx *v, const json_t *parent, const char *field, bool required,
	       json_int_t *out);
/* A string that must be one of values (NULL-terminated). */
const char *vget_enum(struct vctx *v, const json_t *parent, const char *field, bool required,
		      const char *const *values);
const char *vget_protocol(struct vctx *v, const json_t *parent, const char *field);

/* A string checked by a name rule; what is e.g. "a valid DNS-1123 label". */
const char *vget_name(struct vctx *v, const json_t *parent, const char *field, bool required,
		      bool (*ok)(const char *), const char *what);
/* IPv4 address / canonical CIDR (host bits are reported with the fix). */
bool vget_ip4(struct vctx *v, const json_t *parent, const char *field, bool required,
	      uint32_t *out);
bool vget_cidr(struct vctx *v, const json_t *parent, const char *field, bool required,
	       struct cidr *out);
/* An integer port or a port name (IANA_SVC_NAME, or name_ok if given). */
void vget_port_or_name(struct vctx *v, const json_t *parent, const char *field, bool required,
		       json_int_t lo, bool (*name_ok)(const char *));

/* The same checks on a value already in hand (a list item), reported at
 * field. */
const char *vval_string(struct vctx *v, const char *field, const json_t *j, bool required);
const char *vval_enum(struct vctx *v, const char *field, const json_t *j, bool required,
		      const char *const *values);
bool vval_cidr(struct vctx *v, const char *field, const json_t *j, bool required,
	       struct cidr *out);

/* A list field bounded by MODEL_MAX_ITEMS; NULL if absent, bad or too long. */
const json_t *vget_list(struct vctx *v, const json_t *parent, const char *field, bool required);

/* Label maps and selectors. */
void vcheck_label_map(struct vctx *v, const json_t *parent, const char *field);
void vcheck_label_selector(struct vctx *v, const json_t *parent, const char *field,
			   bool required);

/* DNS names for hosts: a subdomain, or "*." and a subdomain if wildcard. */
bool model_dns_host(const char *s, bool wildcard);

/* The kinds' own checks (validate_*.c); obj is an object of that kind. */
void validate_clusternetwork(struct vctx *v, const json_t *obj);
void validate_hostsubnet(struct vctx *v, const json_t *obj);
void validate_netnamespace(struct vctx *v, const json_t *obj);
void validate_node(struct vctx *v, const json_t *obj);
void validate_pod(struct vctx *v, const json_t *obj);
void validate_service(struct vctx *v, const json_t *obj);
void validate_endpoints(struct vctx *v, const json_t *obj);
void validate_endpointslice(struct vctx *v, const json_t *obj);
void validate_podpeerslice(struct vctx *v, const json_t *obj);
void validate_tracerequest(struct vctx *v, const json_t *obj);
void validate_networkpolicy(struct vctx *v, const json_t *obj);
void validate_ingress(struct vctx *v, const json_t *obj);
void validate_route(struct vctx *v, const json_t *obj);
void validate_secret(struct vctx *v, const json_t *obj);

/* The ClusterNetwork fields; with require false, absent fields are fine
 * (cluster_config_from_json takes defaults for them). */
void validate_cluster_fields(struct vctx *v, const json_t *obj, bool require);

#endif
