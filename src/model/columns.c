/*
 * columns.c — what a kind's table shows (see columns.h): the cells, as
 * kubectl and oc print them, and the formats they share with weftctl's
 * describe (ages, service ports, endpoint lists, label selectors).
 *
 * Each kind has one row of columns in `columns[]`: a header and a function
 * that formats the cell of one object into a bounded buffer.  A column
 * marked wide is shown with -o wide only (priority 1 in a Table).
 */
#include "model/columns.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENDPOINTS_SHOWN 3
#define CELL_MAX 1024		/* one label value as text */

/* Append to a NUL-terminated buffer, truncating at its end. */
static void cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strnlen(buf, len);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static void put(char *buf, size_t len, const char *s, const char *fallback)
{
	snprintf(buf, len, "%s", s && s[0] ? s : fallback);
}

void columns_scalar(const json_t *v, char *buf, size_t len)
{
	char *s;

	if (!len)
		return;
	buf[0] = 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, len, "%s", json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, len, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		snprintf(buf, len, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, len, "false");
		break;
	case JSON_NULL:
		break;
	default:
		s = json_dumps(v, JSON_COMPACT);
		if (s)
			snprintf(buf, len, "%s", s);
		free(s);
		break;
	}
}

static void scalar_at(const json_t *obj, const char *dotted, char *buf, size_t len, const char *fallback)
{
	const json_t *v = obj_at(obj, dotted);

	if (!v || json_is_null(v)) {
		snprintf(buf, len, "%s", fallback);
		return;
	}
	columns_scalar(v, buf, len);
	if (!buf[0])
		snprintf(buf, len, "%s", fallback);
}

/* ---- time ---- */

int columns_time_parse(const char *s, time_t *out)
{
	struct tm tm = { 0 };
	const char *p;
	long off = 0;

	if (!s)
		return -EINVAL;
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' &&
		   p[3] == ':' && p[4] >= '0' && p[4] <= '9' && p[5] >= '0' && p[5] <= '9') {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
		if (*p == '-')
			off = -off;
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*out = timegm(&tm) - off;
	return 0;
}

void columns_duration(long long seconds, char *buf, size_t len)
{
	long long minutes, hours;

	if (seconds < -1) {
		snprintf(buf, len, "<invalid>");
		return;
	}
	if (seconds < 0)
		seconds = 0;
	if (seconds < 60 * 2) {
		snprintf(buf, len, "%llds", seconds);
		return;
	}
	minutes = seconds / 60;
	if (minutes < 10) {
		if (seconds % 60)
			snprintf(buf, len, "%lldm%llds", minutes, seconds % 60);
		else
			snprintf(buf, len, "%lldm", minutes);
		return;
	}
	if (minutes < 60 * 3) {
		snprintf(buf, len, "%lldm", minutes);
		return;
	}
	hours = minutes / 60;
	if (hours < 8) {
		if (minutes % 60)
			snprintf(buf, len, "%lldh%lldm", hours, minutes % 60);
		else
			snprintf(buf, len, "%lldh", hours);
	} else if (hours < 48) {
		snprintf(buf, len, "%lldh", hours);
	} else if (hours < 24 * 8) {
		if (hours % 24)
			snprintf(buf, len, "%lldd%lldh", hours / 24, hours % 24);
		else
			snprintf(buf, len, "%lldd", hours / 24);
	} else if (hours < 24 * 365 * 2) {
		snprintf(buf, len, "%lldd", hours / 24);
	} else if (hours < 24 * 365 * 8) {
		long long days = (hours / 24) % 365;

		if (days)
			snprintf(buf, len, "%lldy%lldd", hours / 24 / 365, days);
		else
			snprintf(buf, len, "%lldy", hours / 24 / 365);
	} else {
		snprintf(buf, len, "%lldy", hours / 24 / 365);
	}
}

void columns_age(const json_t *obj, time_t now, char *buf, size_t len)
{
	time_t t;

	if (columns_time_parse(obj_str(obj, "metadata.creationTimestamp"), &t) < 0) {
		snprintf(buf, len, "<unknown>");
		return;
	}
	columns_duration((long long)now - (long long)t, buf, len);
}

/* ---- cell formats shared with describe ---- */

void columns_service_ports(const json_t *svc, char *buf, size_t len)
{
	const json_t *ports = obj_at(svc, "spec.ports");
	size_t i;
	json_t *p;

	buf[0] = 0;
	json_array_foreach(ports, i, p) {
		const char *proto = json_string_value(json_object_get(p, "protocol"));
		json_int_t node_port = json_integer_value(json_object_get(p, "nodePort"));

		cat(buf, len, "%s%" JSON_INTEGER_FORMAT, i ? "," : "", json_integer_value(json_object_get(p, "port")));
		if (node_port)
			cat(buf, len, ":%" JSON_INTEGER_FORMAT, node_port);
		cat(buf, len, "/%s", proto && proto[0] ? proto : "TCP");
	}
	if (!buf[0])
		snprintf(buf, len, "<none>");
}

void columns_endpoint_list(const json_t *ep, char *buf, size_t len)
{
	const json_t *subsets = json_object_get(ep, "subsets");
	size_t i, shown = 0, count = 0;
	json_t *ss;

	buf[0] = 0;
	json_array_foreach(subsets, i, ss) {
		const json_t *addrs = json_object_get(ss, "addresses");
		const json_t *ports = json_object_get(ss, "ports");
		size_t nports = json_array_size(ports), j, k;
		json_t *a, *p;

		if (!nports) {
			json_array_foreach(addrs, j, a) {
				count++;
				if (shown < ENDPOINTS_SHOWN)
					cat(buf, len, "%s%s", shown++ ? "," : "",
					    json_string_value(json_object_get(a, "ip")) ?: "");
			}
			continue;
		}
		json_array_foreach(ports, k, p) {
			json_array_foreach(addrs, j, a) {
				count++;
				if (shown < ENDPOINTS_SHOWN)
					cat(buf, len, "%s%s:%" JSON_INTEGER_FORMAT, shown++ ? "," : "",
					    json_string_value(json_object_get(a, "ip")) ?: "",
					    json_integer_value(json_object_get(p, "port")));
			}
		}
	}
	if (count > shown)
		cat(buf, len, " + %zu more...", count - shown);
	if (!buf[0])
		snprintf(buf, len, "<none>");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "k=v" pairs of a string map, sorted by key, appended to buf. */
static void cat_map(const json_t *map, char *buf, size_t len)
{
	const char *keys[256];
	size_t n = 0;
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)map, key, v) {
		if (n == sizeof(keys) / sizeof(keys[0]))
			break;
		keys[n++] = key;
	}
	qsort(keys, n, sizeof(keys[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char val[CELL_MAX];

		columns_scalar(json_object_get(map, keys[i]), val, sizeof(val));
		cat(buf, len, "%s%s=%s", buf[0] ? "," : "", keys[i], val);
	}
}

void columns_label_map(const json_t *map, char *buf, size_t len)
{
	buf[0] = 0;
	if (json_is_object(map))
		cat_map(map, buf, len);
	if (!buf[0])
		snprintf(buf, len, "<none>");
}

void columns_label_selector(const json_t *sel, char *buf, size_t len)
{
	const json_t *exprs = json_object_get(sel, "matchExpressions");
	size_t i;
	json_t *e;

	buf[0] = 0;
	if (json_is_object(json_object_get(sel, "matchLabels")))
		cat_map(json_object_get(sel, "matchLabels"), buf, len);
	json_array_foreach(exprs, i, e) {
		const char *key = json_string_value(json_object_get(e, "key")) ?: "";
		const char *op = json_string_value(json_object_get(e, "operator")) ?: "";
		const json_t *values = json_object_get(e, "values");
		const char *sep = buf[0] ? "," : "";
		size_t j;
		json_t *v;

		if (!strcmp(op, "Exists")) {
			cat(buf, len, "%s%s", sep, key);
		} else if (!strcmp(op, "DoesNotExist")) {
			cat(buf, len, "%s!%s", sep, key);
		} else {
			cat(buf, len, "%s%s %s (", sep, key, !strcmp(op, "NotIn") ? "notin" : "in");
			json_array_foreach(values, j, v)
				cat(buf, len, "%s%s", j ? "," : "", json_string_value(v) ?: "");
			cat(buf, len, ")");
		}
	}
	if (!buf[0])
		snprintf(buf, len, "<none>");
}

/* ---- cells ---- */

static void c_name(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "metadata.name"), ""); }
static void c_age(const json_t *o, char *b, size_t l, time_t now) { columns_age(o, now, b, l); }

static void c_node_ip(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *addrs = obj_at(o, "status.addresses");
	const char *first = NULL;
	size_t i;
	json_t *a;

	json_array_foreach(addrs, i, a) {
		const char *type = json_string_value(json_object_get(a, "type"));
		const char *ip = json_string_value(json_object_get(a, "address"));

		if (type && ip && !strcmp(type, "InternalIP")) {
			put(b, l, ip, "<none>");
			return;
		}
		if (!first)
			first = ip;
	}
	put(b, l, first, "<none>");
}

static void c_hs_host(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "host"), "<none>"); }
static void c_hs_ip(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "hostIP"), "<none>"); }
static void c_hs_subnet(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "subnet"), "<none>"); }
static void c_hs_id(const json_t *o, char *b, size_t l, time_t now) { scalar_at(o, "nodeID", b, l, "<none>"); }
static void c_netid(const json_t *o, char *b, size_t l, time_t now) { scalar_at(o, "netid", b, l, "<none>"); }
static void c_ns_status(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "status.phase"), "Active"); }
static void c_pod_ip(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "status.podIP"), "<none>"); }
static void c_pod_node(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.nodeName"), "<none>"); }

static void c_pod_container(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *ann = obj_at(o, "metadata.annotations");

	put(b, l, json_string_value(json_object_get(ann, "weft.io/container-id")), "<none>");
}

static void c_svc_type(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.type"), "ClusterIP"); }
static void c_svc_ip(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.clusterIP"), "<none>"); }

void columns_service_external_ips(const json_t *svc, char *buf, size_t len)
{
	const char *type = obj_str(svc, "spec.type");
	bool lb = type && !strcmp(type, "LoadBalancer");
	const json_t *ingress = obj_at(svc, "status.loadBalancer.ingress");
	const json_t *external = obj_at(svc, "spec.externalIPs"), *e;
	size_t i;

	buf[0] = 0;
	if (lb) {
		json_array_foreach(ingress, i, e) {
			const char *a = json_string_value(json_object_get(e, "ip"));

			if (!a || !a[0])
				a = json_string_value(json_object_get(e, "hostname"));
			if (a && a[0])
				cat(buf, len, "%s%s", buf[0] ? "," : "", a);
		}
	}
	json_array_foreach(external, i, e)
		if (json_string_value(e) && json_string_value(e)[0])
			cat(buf, len, "%s%s", buf[0] ? "," : "", json_string_value(e));
	if (!buf[0])
		snprintf(buf, len, "%s", lb ? "<pending>" : "<none>");
}

static void c_svc_external(const json_t *o, char *b, size_t l, time_t now) { columns_service_external_ips(o, b, l); }

static void c_svc_ports(const json_t *o, char *b, size_t l, time_t now) { columns_service_ports(o, b, l); }
static void c_svc_selector(const json_t *o, char *b, size_t l, time_t now) { columns_label_map(obj_at(o, "spec.selector"), b, l); }
static void c_endpoints(const json_t *o, char *b, size_t l, time_t now) { columns_endpoint_list(o, b, l); }
/* kubectl's formatDiscoveryPorts / formatDiscoveryEndpoints: the first
 * ENDPOINTS_SHOWN, then " + N more...", "<unset>" for none. */
static void more(char *b, size_t l, size_t count)
{
	if (count > ENDPOINTS_SHOWN)
		cat(b, l, " + %zu more...", count - ENDPOINTS_SHOWN);
	else if (!b[0])
		snprintf(b, l, "<unset>");
}

static void c_slice_ports(const json_t *o, char *b, size_t l, time_t now)
{
	size_t i, count = 0;
	json_t *p;

	b[0] = 0;
	json_array_foreach(json_object_get(o, "ports"), i, p) {
		const json_t *port = json_object_get(p, "port");
		const char *name = json_string_value(json_object_get(p, "name"));

		if (count++ >= ENDPOINTS_SHOWN)
			continue;
		if (json_is_integer(port))
			cat(b, l, "%s%" JSON_INTEGER_FORMAT, b[0] ? "," : "", json_integer_value(port));
		else
			cat(b, l, "%s%s", b[0] ? "," : "", name ? name : "*");
	}
	more(b, l, count);
}

static void c_slice_endpoints(const json_t *o, char *b, size_t l, time_t now)
{
	size_t i, j, count = 0;
	json_t *e, *a;

	b[0] = 0;
	json_array_foreach(json_object_get(o, "endpoints"), i, e) {
		json_array_foreach(json_object_get(e, "addresses"), j, a) {
			if (count++ < ENDPOINTS_SHOWN && json_is_string(a))
				cat(b, l, "%s%s", b[0] ? "," : "", json_string_value(a));
		}
	}
	more(b, l, count);
}

static void c_address_type(const json_t *o, char *b, size_t l, time_t now)
{
	put(b, l, json_string_value(json_object_get(o, "addressType")), "");
}

static void c_pps_node(const json_t *o, char *b, size_t l, time_t now)
{
	put(b, l, json_string_value(json_object_get(o, "node")), "<none>");
}

static void c_pps_pods(const json_t *o, char *b, size_t l, time_t now)
{
	snprintf(b, l, "%zu", json_array_size(json_object_get(o, "pods")));
}

static void c_pps_identities(const json_t *o, char *b, size_t l, time_t now)
{
	snprintf(b, l, "%zu", json_array_size(json_object_get(o, "identities")));
}

static void c_trace_node(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.nodeName"), "<none>"); }
static void c_trace_from(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.from"), "<none>"); }

static void c_trace_to(const json_t *o, char *b, size_t l, time_t now)
{
	const char *dst = obj_str(o, "spec.destination"), *proto = obj_str(o, "spec.protocol");
	json_int_t port = json_integer_value(obj_at(o, "spec.destinationPort"));

	if (port)
		snprintf(b, l, "%s:%lld/%s", dst ? dst : "?", (long long)port, proto ? proto : "TCP");
	else
		snprintf(b, l, "%s/%s", dst ? dst : "?", proto ? proto : "TCP");
}

/* what the node answered: its action (and drop reason), its error, or
 * <pending> while it has not */
static void c_trace_result(const json_t *o, char *b, size_t l, time_t now)
{
	const char *action = obj_str(o, "status.action"), *reason = obj_str(o, "status.dropReason");

	if (obj_str(o, "status.error"))
		snprintf(b, l, "Error");
	else if (action && reason)
		snprintf(b, l, "%s (%s)", action, reason);
	else
		put(b, l, action, "<pending>");
}

static void c_podselector(const json_t *o, char *b, size_t l, time_t now) { columns_label_selector(obj_at(o, "spec.podSelector"), b, l); }

static void c_ing_hosts(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *rules = obj_at(o, "spec.rules");
	size_t i;
	json_t *r;

	b[0] = 0;
	json_array_foreach(rules, i, r) {
		const char *host = json_string_value(json_object_get(r, "host"));

		if (host && host[0])
			cat(b, l, "%s%s", b[0] ? "," : "", host);
	}
	if (!b[0])
		snprintf(b, l, "*");
}

static void c_ing_address(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *ingress = obj_at(o, "status.loadBalancer.ingress");
	size_t i;
	json_t *e;

	b[0] = 0;
	json_array_foreach(ingress, i, e) {
		const char *a = json_string_value(json_object_get(e, "ip"));

		if (!a || !a[0])
			a = json_string_value(json_object_get(e, "hostname"));
		if (a && a[0])
			cat(b, l, "%s%s", b[0] ? "," : "", a);
	}
}

static void c_ing_ports(const json_t *o, char *b, size_t l, time_t now)
{
	put(b, l, json_array_size(obj_at(o, "spec.tls")) ? "80, 443" : "80", "");
}

static void c_route_host(const json_t *o, char *b, size_t l, time_t now)
{
	const char *host = obj_str(o, "spec.host");

	if (!host || !host[0])
		host = json_string_value(json_object_get(json_array_get(obj_at(o, "status.ingress"), 0), "host"));
	put(b, l, host, "");
}

static void c_route_path(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "spec.path"), ""); }

static void c_route_services(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *to = obj_at(o, "spec.to");
	const json_t *alt = obj_at(o, "spec.alternateBackends");
	json_int_t total;
	size_t i;
	json_t *a;

	if (!json_array_size(alt)) {
		put(b, l, json_string_value(json_object_get(to, "name")), "");
		return;
	}
	/* weights as shares, as oc prints them: "a(75%),b(25%)" */
	total = json_is_integer(json_object_get(to, "weight")) ? json_integer_value(json_object_get(to, "weight")) : 100;
	json_array_foreach(alt, i, a)
		total += json_is_integer(json_object_get(a, "weight")) ? json_integer_value(json_object_get(a, "weight")) : 100;
	b[0] = 0;
	for (i = 0; i <= json_array_size(alt); i++) {
		const json_t *be = i ? json_array_get(alt, i - 1) : to;
		json_int_t w = json_is_integer(json_object_get(be, "weight")) ? json_integer_value(json_object_get(be, "weight")) : 100;

		cat(b, l, "%s%s(%" JSON_INTEGER_FORMAT "%%)", i ? "," : "",
		    json_string_value(json_object_get(be, "name")) ?: "", total > 0 ? w * 100 / total : 0);
	}
}

static void c_route_port(const json_t *o, char *b, size_t l, time_t now) { scalar_at(o, "spec.port.targetPort", b, l, "<all>"); }

static void c_route_tls(const json_t *o, char *b, size_t l, time_t now)
{
	const char *term = obj_str(o, "spec.tls.termination");
	const char *insecure = obj_str(o, "spec.tls.insecureEdgeTerminationPolicy");

	b[0] = 0;
	if (term && term[0])
		cat(b, l, "%s", term);
	/* "None" is what an unset policy means: oc prints just "edge" then */
	if (term && term[0] && insecure && insecure[0] && strcmp(insecure, "None"))
		cat(b, l, "/%s", insecure);
}

static void c_secret_type(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "type"), "Opaque"); }

static void c_secret_data(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *data = json_object_get(o, "data");
	const json_t *sdata = json_object_get(o, "stringData");
	size_t n = json_object_size(data);
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)sdata, key, v)
		if (!json_object_get(data, key))
			n++;
	snprintf(b, l, "%zu", n);
}

static void c_cn_networks(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *nets = json_object_get(o, "clusterNetworks");
	size_t i;
	json_t *n;

	b[0] = 0;
	json_array_foreach(nets, i, n)
		cat(b, l, "%s%s", i ? "," : "", json_string_value(json_object_get(n, "cidr")) ?: "");
	if (!b[0])
		put(b, l, obj_str(o, "network"), "<none>");
}

static void c_cn_service(const json_t *o, char *b, size_t l, time_t now) { put(b, l, obj_str(o, "serviceNetwork"), "<none>"); }

static void c_cn_mode(const json_t *o, char *b, size_t l, time_t now)
{
	const char *mode = obj_str(o, "mode");

	put(b, l, mode ? mode : obj_str(o, "pluginName"), "<none>");
}

static void c_vs_type(const json_t *o, char *b, size_t l, time_t now)
{
	put(b, l, obj_str(o, "spec.type"), "<none>");
}

static void c_vs_vip(const json_t *o, char *b, size_t l, time_t now)
{
	put(b, l, obj_str(o, "spec.vip"), "<pending>");
}

static void c_vs_ports(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *p;
	size_t i, n = 0;

	b[0] = 0;
	json_array_foreach(obj_at(o, "spec.ports"), i, p)
		n += (size_t)snprintf(b + (n < l ? n : l), n < l ? l - n : 0, "%s%d/%s", i ? "," : "",
				      (int)obj_int(p, "port", 0), obj_str(p, "protocol") ? obj_str(p, "protocol") : "");
	if (!b[0])
		put(b, l, NULL, "<none>");
}

static void c_vs_count(char *b, size_t l, const json_t *o, const char *field)
{
	snprintf(b, l, "%zu", json_array_size(obj_at(o, field)));
}

static void c_vs_hosts(const json_t *o, char *b, size_t l, time_t now)
{
	const json_t *g, *m, *r;
	json_t *seen = json_object();
	size_t i, j;

	/* SNI children and dedicated VSs name their host; the others count
	 * the hosts of their members and redirects */
	if (json_array_size(obj_at(o, "spec.hosts"))) {
		put(b, l, json_string_value(json_array_get(obj_at(o, "spec.hosts"), 0)), "<none>");
		json_decref(seen);
		return;
	}
	json_array_foreach(obj_at(o, "spec.poolGroups"), i, g)
		json_array_foreach(json_object_get(g, "members"), j, m)
			if (obj_str(m, "host"))
				json_object_set_new(seen, obj_str(m, "host"), json_true());
	json_array_foreach(obj_at(o, "spec.httpRedirects"), i, r)
		if (obj_str(r, "host"))
			json_object_set_new(seen, obj_str(r, "host"), json_true());
	if (json_object_size(seen))
		snprintf(b, l, "%zu host%s", json_object_size(seen), json_object_size(seen) == 1 ? "" : "s");
	else
		put(b, l, NULL, "<none>");
	json_decref(seen);
}

static void c_vs_pools(const json_t *o, char *b, size_t l, time_t now)
{
	c_vs_count(b, l, o, "spec.pools");
}

static void c_cert_source(const json_t *o, char *b, size_t l, time_t now)
{
	snprintf(b, l, "%s %s/%s", obj_str(o, "spec.source.kind") ? obj_str(o, "spec.source.kind") : "?",
		 obj_str(o, "spec.source.namespace") ? obj_str(o, "spec.source.namespace") : "",
		 obj_str(o, "spec.source.name") ? obj_str(o, "spec.source.name") : "");
}

#define COL(header, cell) { header, cell, false }
#define WIDE(header, cell) { header, cell, true }

static const struct column columns[KIND_COUNT][COLUMNS_MAX] = {
	[KIND_CLUSTERNETWORK] = { COL("NAME", c_name), COL("CLUSTER NETWORKS", c_cn_networks),
				  COL("SERVICE NETWORK", c_cn_service), COL("MODE", c_cn_mode) },
	[KIND_NODE] = { COL("NAME", c_name), COL("INTERNAL-IP", c_node_ip), COL("AGE", c_age) },
	[KIND_HOSTSUBNET] = { COL("NAME", c_name), COL("HOST", c_hs_host), COL("HOST IP", c_hs_ip),
			      COL("SUBNET", c_hs_subnet), COL("NODE ID", c_hs_id) },
	[KIND_NAMESPACE] = { COL("NAME", c_name), COL("STATUS", c_ns_status), COL("AGE", c_age) },
	[KIND_NETNAMESPACE] = { COL("NAME", c_name), COL("NETID", c_netid) },
	[KIND_POD] = { COL("NAME", c_name), COL("IP", c_pod_ip), COL("NODE", c_pod_node), COL("AGE", c_age),
		       WIDE("CONTAINER-ID", c_pod_container) },
	[KIND_SERVICE] = { COL("NAME", c_name), COL("TYPE", c_svc_type), COL("CLUSTER-IP", c_svc_ip),
			   COL("EXTERNAL-IP", c_svc_external), COL("PORT(S)", c_svc_ports), COL("AGE", c_age),
			   WIDE("SELECTOR", c_svc_selector) },
	[KIND_ENDPOINTS] = { COL("NAME", c_name), COL("ENDPOINTS", c_endpoints), COL("AGE", c_age) },
	[KIND_NETWORKPOLICY] = { COL("NAME", c_name), COL("POD-SELECTOR", c_podselector), COL("AGE", c_age) },
	[KIND_INGRESS] = { COL("NAME", c_name), COL("HOSTS", c_ing_hosts), COL("ADDRESS", c_ing_address),
			   COL("PORTS", c_ing_ports), COL("AGE", c_age) },
	[KIND_ROUTE] = { COL("NAME", c_name), COL("HOST/PORT", c_route_host), COL("PATH", c_route_path),
			 COL("SERVICES", c_route_services), COL("PORT", c_route_port), COL("TERMINATION", c_route_tls) },
	[KIND_SECRET] = { COL("NAME", c_name), COL("TYPE", c_secret_type), COL("DATA", c_secret_data), COL("AGE", c_age) },
	[KIND_VIRTUALSERVICE] = { COL("NAME", c_name), COL("TYPE", c_vs_type), COL("VIP", c_vs_vip),
				  COL("PORTS", c_vs_ports), COL("HOSTS", c_vs_hosts), COL("POOLS", c_vs_pools),
				  COL("AGE", c_age) },
	[KIND_SSLKEYCERT] = { COL("NAME", c_name), COL("SOURCE", c_cert_source), COL("AGE", c_age) },
	[KIND_ENDPOINTSLICE] = { COL("NAME", c_name), COL("ADDRESSTYPE", c_address_type), COL("PORTS", c_slice_ports),
				 COL("ENDPOINTS", c_slice_endpoints), COL("AGE", c_age) },
	[KIND_PODPEERSLICE] = { COL("NAME", c_name), COL("NODE", c_pps_node), COL("PODS", c_pps_pods),
				COL("IDENTITIES", c_pps_identities), COL("AGE", c_age) },
	[KIND_TRACEREQUEST] = { COL("NAME", c_name), COL("NODE", c_trace_node), COL("FROM", c_trace_from),
				COL("TO", c_trace_to), COL("RESULT", c_trace_result), COL("AGE", c_age) },
};

#undef COL
#undef WIDE

const struct column *columns_of(enum kind_id id, size_t *n)
{
	size_t c = 0;

	if ((unsigned)id >= KIND_COUNT) {
		*n = 0;
		return NULL;
	}
	while (c < COLUMNS_MAX && columns[id][c].header)
		c++;
	*n = c;
	return columns[id];
}
