/*
 * validate.c — model_validate: the checks every object goes through
 * (apiVersion, kind, metadata, labels, annotations), the dispatch to the
 * kind's own checks, and the error/path machinery of validate.h.
 *
 * Errors accumulate in the caller's buffer one a line, without a final
 * newline.  When a line does not fit, "(more errors)" is written if it
 * fits, and later errors are only counted, so the return code never depends
 * on the buffer's size.
 */
#include "model/lb.h"
#include "model/model.h"
#include "model/validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ANNOTATIONS_MAX_BYTES (256 * 1024)

void vctx_init(struct vctx *v, char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->err = err;
	v->errlen = err ? errlen : 0;
	if (v->errlen)
		err[0] = '\0';
}

/* Cuts s before a UTF-8 sequence that truncation left incomplete: errors
 * end up in JSON strings. */
static size_t trim_partial_utf8(char *s, size_t n)
{
	size_t i = n, need;
	unsigned char lead;

	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || (unsigned char)s[i - 1] < 0xc0)
		return n;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (n - (i - 1) < need) {
		s[i - 1] = '\0';
		return i - 1;
	}
	return n;
}

static void append(struct vctx *v, const char *line)
{
	size_t n = strlen(line), sep = v->used ? 1 : 0;
	static const char more[] = "(more errors)";

	if (v->full || !v->errlen)
		return;
	if (v->used + sep + n + 1 > v->errlen) {
		v->full = true;
		n = strlen(more);
		if (v->used + sep + n + 1 > v->errlen)
			return;
		line = more;
	}
	if (sep)
		v->err[v->used++] = '\n';
	memcpy(v->err + v->used, line, n);
	v->used += n;
	v->err[v->used] = '\0';
}

void verror(struct vctx *v, const char *field, const char *fmt, ...)
{
	char line[VLINE_MAX];
	size_t k = 0;
	va_list ap;
	int n;

	v->nerrors++;
	if (v->full || !v->errlen)
		return;
	if (v->pathlen || (field && *field)) {
		n = snprintf(line, sizeof(line), "%s%s%s: ", v->path,
			     v->pathlen && field && *field ? "." : "", field ? field : "");
		k = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	}
	va_start(ap, fmt);
	vsnprintf(line + k, sizeof(line) - k, fmt, ap);
	va_end(ap);
	trim_partial_utf8(line, strlen(line));
	append(v, line);
}

static size_t push(struct vctx *v, const char *prefix, const char *text, const char *suffix)
{
	size_t mark = v->pathlen;
	int n = snprintf(v->path + v->pathlen, sizeof(v->path) - v->pathlen, "%s%s%s", prefix,
			 text, suffix);

	if (n > 0)
		v->pathlen += (size_t)n < sizeof(v->path) - v->pathlen ? (size_t)n
								       : sizeof(v->path) - v->pathlen - 1;
	v->pathlen = trim_partial_utf8(v->path, v->pathlen);
	return mark;
}

size_t vpush(struct vctx *v, const char *field)
{
	return push(v, v->pathlen ? "." : "", field, "");
}

size_t vpush_index(struct vctx *v, size_t index)
{
	char num[24];

	snprintf(num, sizeof(num), "%zu", index);
	return push(v, "[", num, "]");
}

size_t vpush_key(struct vctx *v, const char *key)
{
	char q[VQUOTE_MAX];

	vquote(key, q);
	q[strlen(q) - 1] = '\0';	/* the key without its quotes */
	return push(v, "[", q + 1, "]");
}

bool vpush_item(struct vctx *v, const char *field, size_t index, const json_t *item,
		size_t *mark)
{
	*mark = vpush(v, field);
	vpush_index(v, index);
	if (!json_is_object(item)) {
		verror(v, NULL, "must be an object");
		return false;
	}
	return true;
}

bool vset_add(json_t *set, const char *s)
{
	if (!set || json_object_get(set, s))
		return !set;
	json_object_set_new(set, s, json_true());
	return true;
}

void vpop(struct vctx *v, size_t mark)
{
	v->pathlen = mark;
	v->path[mark] = '\0';
}

const char *vquote(const char *s, char buf[VQUOTE_MAX])
{
	size_t k = 0, i = 0;

	buf[k++] = '\'';
	for (; s && s[i] && i < 96; i++)
		buf[k++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s && s[i]) {
		while (k > 1 && ((unsigned char)buf[k - 1] & 0xc0) == 0x80)
			k--;		/* drop a partial UTF-8 sequence... */
		if (k > 1 && (unsigned char)buf[k - 1] >= 0xc0)
			k--;		/* ...and its lead byte */
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k++] = '\'';
	buf[k] = '\0';
	return buf;
}

const char *validate_type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* The field, or NULL if absent (reported when required).  A JSON null
 * counts as absent, as in Kubernetes. */
static const json_t *field_of(struct vctx *v, const json_t *parent, const char *field,
			      bool required)
{
	const json_t *j = json_is_object(parent) ? json_object_get(parent, field) : NULL;

	if (json_is_null(j))
		j = NULL;
	if (!j && required)
		verror(v, field, "required");
	return j;
}

static const json_t *typed(struct vctx *v, const json_t *parent, const char *field,
			   bool required, json_type type, const char *want)
{
	const json_t *j = field_of(v, parent, field, required);

	if (j && json_typeof(j) != type) {
		verror(v, field, "must be %s, not %s", want, validate_type_name(j));
		return NULL;
	}
	return j;
}

const json_t *vget_object(struct vctx *v, const json_t *parent, const char *field, bool required)
{
	return typed(v, parent, field, required, JSON_OBJECT, "an object");
}

const json_t *vget_array(struct vctx *v, const json_t *parent, const char *field, bool required)
{
	return typed(v, parent, field, required, JSON_ARRAY, "a list");
}

const json_t *vget_list(struct vctx *v, const json_t *parent, const char *field, bool required)
{
	const json_t *a = vget_array(v, parent, field, required);

	if (a && json_array_size(a) > MODEL_MAX_ITEMS) {
		verror(v, field, "too many items (%zu, at most %d)", json_array_size(a),
		       MODEL_MAX_ITEMS);
		return NULL;
	}
	return a;
}

const char *vval_string(struct vctx *v, const char *field, const json_t *j, bool required)
{
	if (json_is_null(j))
		j = NULL;
	if (!j) {
		if (required)
			verror(v, field, "required");
		return NULL;
	}
	if (!json_is_string(j)) {
		verror(v, field, "must be a string, not %s", validate_type_name(j));
		return NULL;
	}
	return json_string_value(j);
}

const char *vget_string(struct vctx *v, const json_t *parent, const char *field, bool required)
{
	return vval_string(v, field, json_is_object(parent) ? json_object_get(parent, field) : NULL,
			   required);
}

bool vget_int(struct vctx *v, const json_t *parent, const char *field, bool required,
	      json_int_t *out)
{
	const json_t *j = typed(v, parent, field, required, JSON_INTEGER, "an integer");

	if (j)
		*out = json_integer_value(j);
	return j != NULL;
}

bool vget_bool(struct vctx *v, const json_t *parent, const char *field, bool required, bool *out)
{
	const json_t *j = field_of(v, parent, field, required);

	if (j && !json_is_boolean(j)) {
		verror(v, field, "must be a boolean, not %s", validate_type_name(j));
		return false;
	}
	if (j)
		*out = json_is_true(j);
	return j != NULL;
}

bool vget_int_range(struct vctx *v, const json_t *parent, const char *field, bool required,
		    json_int_t lo, json_int_t hi, const char *what, json_int_t *out)
{
	json_int_t n;

	if (!vget_int(v, parent, field, required, &n))
		return false;
	if (n < lo || n > hi) {
		verror(v, field, "%" JSON_INTEGER_FORMAT " is not %s (%" JSON_INTEGER_FORMAT
		       "-%" JSON_INTEGER_FORMAT ")", n, what, lo, hi);
		return false;
	}
	if (out)
		*out = n;
	return true;
}

bool vget_port(struct vctx *v, const json_t *parent, const char *field, bool required,
	       json_int_t *out)
{
	return vget_int_range(v, parent, field, required, 1, 65535, "a valid port", out);
}

const char *vval_enum(struct vctx *v, const char *field, const json_t *j, bool required,
		      const char *const *values)
{
	const char *s = vval_string(v, field, j, required);
	char list[256], q[VQUOTE_MAX];
	size_t k = 0;

	if (!s)
		return NULL;
	for (size_t i = 0; values[i]; i++)
		if (strcmp(s, values[i]) == 0)
			return values[i];
	list[0] = '\0';
	for (size_t i = 0; values[i] && k < sizeof(list); i++) {
		int n = snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", values[i]);

		if (n < 0)
			break;
		k += (size_t)n;
	}
	verror(v, field, "%s is not one of %s", vquote(s, q), list);
	return NULL;
}

const char *vget_enum(struct vctx *v, const json_t *parent, const char *field, bool required,
		      const char *const *values)
{
	return vval_enum(v, field, json_is_object(parent) ? json_object_get(parent, field) : NULL,
			 required, values);
}

const char *vget_protocol(struct vctx *v, const json_t *parent, const char *field)
{
	static const char *const protocols[] = { "TCP", "UDP", "SCTP", NULL };

	return vget_enum(v, parent, field, false, protocols);
}

const char *vget_name(struct vctx *v, const json_t *parent, const char *field, bool required,
		      bool (*ok)(const char *), const char *what)
{
	const char *s = vget_string(v, parent, field, required);
	char q[VQUOTE_MAX];

	if (!s)
		return NULL;
	if (!*s) {			/* "" is unset, as in Kubernetes */
		if (required)
			verror(v, field, "required");
		return NULL;
	}
	if (!ok(s)) {
		verror(v, field, "%s is not %s", vquote(s, q), what);
		return NULL;
	}
	return s;
}

bool vget_ip4(struct vctx *v, const json_t *parent, const char *field, bool required,
	      uint32_t *out)
{
	const char *s = vget_string(v, parent, field, required);
	char q[VQUOTE_MAX];
	uint32_t ip;

	if (!s)
		return false;
	if (!*s) {
		if (required)
			verror(v, field, "required");
		return false;
	}
	if (ip4_parse(s, &ip) < 0) {
		verror(v, field, "%s is not a valid IPv4 address", vquote(s, q));
		return false;
	}
	if (out)
		*out = ip;
	return true;
}

bool vval_cidr(struct vctx *v, const char *field, const json_t *j, bool required,
	       struct cidr *out)
{
	const char *s = vval_string(v, field, j, required);
	char q[VQUOTE_MAX], fixed[CIDR_STRLEN];
	struct cidr c;
	int rc;

	if (!s)
		return false;
	if (!*s) {
		if (required)
			verror(v, field, "required");
		return false;
	}
	rc = cidr_parse(s, &c);
	if (rc == -EDOM) {
		cidr_format(&c, fixed);
		verror(v, field, "%s has host bits set (did you mean %s?)", vquote(s, q), fixed);
		return false;
	}
	if (rc < 0) {
		verror(v, field, "%s is not a valid CIDR (a.b.c.d/n)", vquote(s, q));
		return false;
	}
	if (out)
		*out = c;
	return true;
}

bool vget_cidr(struct vctx *v, const json_t *parent, const char *field, bool required,
	       struct cidr *out)
{
	return vval_cidr(v, field, json_is_object(parent) ? json_object_get(parent, field) : NULL,
			 required, out);
}

void vget_port_or_name(struct vctx *v, const json_t *parent, const char *field, bool required,
		       json_int_t lo, bool (*name_ok)(const char *))
{
	const json_t *j = field_of(v, parent, field, required);
	char q[VQUOTE_MAX];

	if (!j)
		return;
	if (json_is_integer(j)) {
		vget_int_range(v, parent, field, required, lo, 65535, "a valid port", NULL);
	} else if (json_is_string(j)) {
		const char *s = json_string_value(j);

		if (!(name_ok ? name_ok : model_iana_svc_name)(s))
			verror(v, field, "%s is not a valid port name", vquote(s, q));
	} else {
		verror(v, field, "must be a port number or name, not %s", validate_type_name(j));
	}
}

void vcheck_label_map(struct vctx *v, const json_t *parent, const char *field)
{
	const json_t *map = vget_object(v, parent, field, false);
	const char *key;
	const json_t *value;
	char q[VQUOTE_MAX];
	size_t mark;

	if (!map)
		return;
	if (json_object_size(map) > MODEL_MAX_ITEMS) {
		verror(v, field, "too many entries (%zu, at most %d)", json_object_size(map),
		       MODEL_MAX_ITEMS);
		return;
	}
	mark = vpush(v, field);
	json_object_foreach((json_t *)map, key, value) {
		if (!model_label_key(key)) {
			verror(v, NULL, "%s is not a valid label key", vquote(key, q));
			continue;
		}
		size_t m = vpush_key(v, key);

		if (!json_is_string(value))
			verror(v, NULL, "must be a string, not %s", validate_type_name(value));
		else if (!model_label_value(json_string_value(value)))
			verror(v, NULL, "%s is not a valid label value",
			       vquote(json_string_value(value), q));
		vpop(v, m);
	}
	vpop(v, mark);
}

void vcheck_label_selector(struct vctx *v, const json_t *parent, const char *field,
			   bool required)
{
	static const char *const operators[] = { "In", "NotIn", "Exists", "DoesNotExist", NULL };
	const json_t *sel = vget_object(v, parent, field, required), *exprs, *e;
	size_t mark, i;

	if (!sel)
		return;
	mark = vpush(v, field);
	vcheck_label_map(v, sel, "matchLabels");
	exprs = vget_list(v, sel, "matchExpressions", false);
	json_array_foreach(exprs, i, e) {
		size_t m = vpush(v, "matchExpressions");
		const char *op;
		const json_t *values, *item;
		size_t k;

		vpush_index(v, i);
		if (!json_is_object(e)) {
			verror(v, NULL, "must be an object");
			vpop(v, m);
			continue;
		}
		vget_name(v, e, "key", true, model_label_key, "a valid label key");
		op = vget_enum(v, e, "operator", true, operators);
		values = vget_list(v, e, "values", false);
		if (op && (!strcmp(op, "In") || !strcmp(op, "NotIn"))) {
			if (!values || json_array_size(values) == 0)
				verror(v, "values", "must be non-empty for operator %s", op);
		} else if (op && values && json_array_size(values) > 0) {
			verror(v, "values", "must be empty for operator %s", op);
		}
		json_array_foreach(values, k, item) {
			char q[VQUOTE_MAX];
			size_t m2 = vpush(v, "values");

			vpush_index(v, k);
			if (!json_is_string(item))
				verror(v, NULL, "must be a string, not %s", validate_type_name(item));
			else if (!model_label_value(json_string_value(item)))
				verror(v, NULL, "%s is not a valid label value",
				       vquote(json_string_value(item), q));
			vpop(v, m2);
		}
		vpop(v, m);
	}
	vpop(v, mark);
}

/* ---- metadata ------------------------------------------------------------ */

static void check_annotations(struct vctx *v, const json_t *meta)
{
	const json_t *map = vget_object(v, meta, "annotations", false), *value;
	const char *key;
	size_t total = 0, mark;
	char q[VQUOTE_MAX];

	if (!map)
		return;
	mark = vpush(v, "annotations");
	json_object_foreach((json_t *)map, key, value) {
		total += strlen(key);
		if (json_is_string(value))
			total += json_string_length(value);
		if (total > ANNOTATIONS_MAX_BYTES)
			break;
		if (!model_label_key(key)) {
			verror(v, NULL, "%s is not a valid annotation key", vquote(key, q));
			continue;
		}
		if (!json_is_string(value)) {
			size_t m = vpush_key(v, key);

			verror(v, NULL, "must be a string, not %s", validate_type_name(value));
			vpop(v, m);
		}
	}
	if (total > ANNOTATIONS_MAX_BYTES)
		verror(v, NULL, "too large (more than %d bytes)", ANNOTATIONS_MAX_BYTES);
	vpop(v, mark);
}

static void check_metadata(struct vctx *v, const json_t *obj, const struct kind_info *k)
{
	const json_t *meta = vget_object(v, obj, "metadata", true);
	const char *ns;
	size_t mark;

	if (!meta)
		return;
	mark = vpush(v, "metadata");
	if (k && k->id == KIND_NAMESPACE)
		vget_name(v, meta, "name", true, model_dns1123_label, "a valid DNS-1123 label");
	else if (k && k->id == KIND_SERVICE)
		vget_name(v, meta, "name", true, model_dns1035_label,
			  "a valid DNS-1035 label (a Service name starts with a letter)");
	else if (k && (k->id == KIND_VIRTUALSERVICE || k->id == KIND_SSLKEYCERT))
		vget_name(v, meta, "name", true, lb_object_name,
			  "a load-balancer object name (docs/lb.md: letters, digits, '-', '.', '_')");
	else
		vget_name(v, meta, "name", true, model_dns1123_subdomain,
			  "a valid DNS-1123 subdomain");

	ns = vget_string(v, meta, "namespace", false);
	if (ns && *ns) {
		char q[VQUOTE_MAX];

		if (k && !k->namespaced)
			verror(v, "namespace", "must be empty for cluster-scoped kind %s", k->kind);
		else if (!model_dns1123_label(ns))
			verror(v, "namespace", "%s is not a valid DNS-1123 label", vquote(ns, q));
	}
	vcheck_label_map(v, meta, "labels");
	check_annotations(v, meta);
	vget_string(v, meta, "resourceVersion", false);
	vget_string(v, meta, "uid", false);
	vget_string(v, meta, "creationTimestamp", false);
	vpop(v, mark);
}

int model_validate(const json_t *obj, char *err, size_t errlen)
{
	static void (*const own[KIND_COUNT])(struct vctx *, const json_t *) = {
		[KIND_CLUSTERNETWORK] = validate_clusternetwork,
		[KIND_NODE] = validate_node,
		[KIND_HOSTSUBNET] = validate_hostsubnet,
		[KIND_NETNAMESPACE] = validate_netnamespace,
		[KIND_POD] = validate_pod,
		[KIND_SERVICE] = validate_service,
		[KIND_ENDPOINTS] = validate_endpoints,
		[KIND_NETWORKPOLICY] = validate_networkpolicy,
		[KIND_INGRESS] = validate_ingress,
		[KIND_ROUTE] = validate_route,
		[KIND_SECRET] = validate_secret,
		[KIND_ENDPOINTSLICE] = validate_endpointslice,
		[KIND_PODPEERSLICE] = validate_podpeerslice,
		[KIND_TRACEREQUEST] = validate_tracerequest,
	};
	const struct kind_info *k = NULL;
	const char *kind, *api;
	char q[VQUOTE_MAX];
	struct vctx v;

	vctx_init(&v, err, errlen);
	if (!json_is_object(obj)) {
		verror(&v, NULL, "an object must be a JSON object (a mapping)");
		return -EINVAL;
	}
	kind = vget_string(&v, obj, "kind", true);
	if (kind) {
		k = kind_by_kind(kind);
		if (!k)
			verror(&v, "kind", "unknown kind %s", vquote(kind, q));
	}
	api = vget_string(&v, obj, "apiVersion", true);
	if (api && k && strcmp(api, k->api_version) != 0)
		verror(&v, "apiVersion", "%s is wrong for kind %s (must be '%s')", vquote(api, q),
		       k->kind, k->api_version);
	check_metadata(&v, obj, k);
	if (k && own[k->id])
		own[k->id](&v, obj);
	return v.nerrors ? -EINVAL : 0;
}
