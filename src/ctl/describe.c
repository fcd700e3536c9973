/*
 * describe.c — `weftctl describe KIND NAME [-n NS]`: one object for people.
 *
 *   Name:               red
 *   Labels:             team=a
 *                       tier=web
 *   Annotations:        <none>
 *   CreationTimestamp:  2024-05-01T12:00:00Z (3m ago)
 *   ...kind extras: Node → its HostSubnet; Namespace → status, NetID;
 *      Service → Type, IP, External IP (its VIP, or <pending>), Port(s)
 *      and its Endpoints' ready addresses, as kubectl describe shows them
 *   Spec:
 *     clusterIP:  172.30.0.10
 *     ports[0]:
 *       port:      80
 *       protocol:  TCP
 *
 * After the metadata, every other top-level field is walked generically:
 * scalars as "key:  value" aligned within their object, objects and
 * arrays of objects indented below their key, arrays of scalars joined.
 * Secrets show sizes, never values; a Route's TLS key is hidden, and an
 * SSLKeyAndCertificate's.  A
 * NetworkPolicy ends with what it selects and matches now
 * (describe_netpol.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"
#include "ctl/print.h"
#include "model/columns.h"

#define VALUE_MAX 4096
#define TOP_WIDTH 20		/* "CreationTimestamp:  " */

static const char usage[] = "KIND NAME [-n NAMESPACE]";

/* "Key:" padded to the value column, then value; continuation lines of a
 * multi-line value are indented to the same column. */
static void line(int indent, const char *key, int width, const char *value)
{
	int col = indent + width;
	const char *p = value;

	printf("%*s%s:%*s", indent, "", key, width - (int)strlen(key) - 1, "");
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		printf("%.*s\n", (int)n, p);
		if (!nl || !nl[1])
			return;
		p = nl + 1;
		printf("%*s", col, "");
	}
	putchar('\n');
}

/* Append s to buf, truncating at len. */
static void append(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf), m = strlen(s);

	if (n + 1 >= len)
		return;
	if (m > len - n - 1)
		m = len - n - 1;
	memcpy(buf + n, s, m);
	buf[n + m] = 0;
}

static bool scalar(const json_t *v) { return !json_is_object(v) && !json_is_array(v); }

static bool scalar_array(const json_t *v)
{
	size_t i;
	json_t *e;

	json_array_foreach(v, i, e)
		if (!scalar(e))
			return false;
	return true;
}

static void walk(const json_t *obj, int indent, bool in_tls);

static void member(const char *key, const json_t *v, int indent, int width, bool in_tls)
{
	char value[VALUE_MAX];
	size_t i;
	json_t *e;

	if (in_tls && !strcmp(key, "key")) {
		line(indent, key, width, "<hidden>");
	} else if (scalar(v)) {
		columns_scalar(v, value, sizeof(value));
		line(indent, key, width, value[0] ? value : "<none>");
	} else if ((json_is_object(v) && !json_object_size(v)) || (json_is_array(v) && !json_array_size(v))) {
		line(indent, key, width, "<none>");
	} else if (json_is_object(v)) {
		printf("%*s%s:\n", indent, "", key);
		walk(v, indent + 2, in_tls || !strcmp(key, "tls"));
	} else if (scalar_array(v)) {
		value[0] = 0;
		json_array_foreach(v, i, e) {
			char one[VALUE_MAX];

			columns_scalar(e, one, sizeof(one));
			if (i)
				append(value, sizeof(value), ", ");
			append(value, sizeof(value), one);
		}
		line(indent, key, width, value);
	} else {
		json_array_foreach(v, i, e) {
			printf("%*s%s[%zu]:\n", indent, "", key, i);
			if (json_is_object(e)) {
				walk(e, indent + 2, false);
			} else {
				columns_scalar(e, value, sizeof(value));
				printf("%*s%s\n", indent + 2, "", value);
			}
		}
	}
}

static void walk(const json_t *obj, int indent, bool in_tls)
{
	int width = 0;
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
		if ((int)strlen(key) + 3 > width)
			width = (int)strlen(key) + 3;
	json_object_foreach((json_t *)obj, key, v)
		member(key, v, indent, width, in_tls);
}

/* "a=b" lines of a map under a top-level key, or "<none>". */
static void map_lines(const char *key, const json_t *map)
{
	const char *k;
	json_t *v;
	bool first = true;

	if (!json_object_size(map)) {
		line(0, key, TOP_WIDTH, "<none>");
		return;
	}
	json_object_foreach((json_t *)map, k, v) {
		char value[VALUE_MAX];

		columns_scalar(v, value, sizeof(value));
		if (first)
			printf("%s:%*s%s=%s\n", key, TOP_WIDTH - (int)strlen(key) - 1, "", k, value);
		else
			printf("%*s%s=%s\n", TOP_WIDTH, "", k, value);
		first = false;
	}
}

static void describe_secret(const json_t *obj)
{
	const char *key;
	json_t *v;

	line(0, "Type", TOP_WIDTH, obj_str(obj, "type") ?: "Opaque");
	printf("Data:\n");
	json_object_foreach(json_object_get(obj, "data"), key, v) {
		size_t n = strlen(json_string_value(v) ?: ""), bytes = n / 4 * 3;
		const char *s = json_string_value(v) ?: "";

		if (n >= 1 && s[n - 1] == '=')
			bytes--;
		if (n >= 2 && s[n - 2] == '=')
			bytes--;
		printf("  %s:  %zu bytes\n", key, bytes);
	}
	json_object_foreach(json_object_get(obj, "stringData"), key, v)
		printf("  %s:  %zu bytes\n", key, strlen(json_string_value(v) ?: ""));
}

/* A related object of the same name (Node → HostSubnet, Namespace →
 * NetNamespace); NULL when absent or unreadable (the caller prints <none>). */
static json_t *related(struct ctl *ctl, enum kind_id id, const char *name)
{
	char path[CTL_PATH_MAX];
	struct ctl_reply r = { 0 };
	json_t *obj = NULL;

	if (ctl_call(ctl, "GET", ctl_path(kind_get(id), NULL, name, path, sizeof(path)), NULL, &r) < 0)
		return NULL;
	if (ctl_ok(&r) && json_is_object(r.json))
		obj = json_incref(r.json);
	ctl_reply_free(&r);
	return obj;
}

static void describe_extras(struct ctl *ctl, const struct kind_info *k, const json_t *obj, const char *name,
			    const char *ns)
{
	char value[VALUE_MAX];
	json_t *rel;

	if (k->id == KIND_NODE) {
		rel = related(ctl, KIND_HOSTSUBNET, name);
		if (!rel) {
			line(0, "HostSubnet", TOP_WIDTH, "<none>");
			return;
		}
		printf("HostSubnet:\n");
		line(2, "Subnet", TOP_WIDTH - 2, obj_str(rel, "subnet") ?: "<none>");
		line(2, "Host IP", TOP_WIDTH - 2, obj_str(rel, "hostIP") ?: "<none>");
		columns_scalar(json_object_get(rel, "nodeID"), value, sizeof(value));
		line(2, "Node ID", TOP_WIDTH - 2, value[0] ? value : "<none>");
		json_decref(rel);
	} else if (k->id == KIND_SERVICE) {
		char path[CTL_PATH_MAX];
		struct ctl_reply r = { 0 };

		line(0, "Type", TOP_WIDTH, obj_str(obj, "spec.type") ?: "ClusterIP");
		line(0, "IP", TOP_WIDTH, obj_str(obj, "spec.clusterIP") ?: "<none>");
		columns_service_external_ips(obj, value, sizeof(value));
		line(0, "External IP", TOP_WIDTH, value);
		columns_service_ports(obj, value, sizeof(value));
		line(0, "Port(s)", TOP_WIDTH, value);
		snprintf(value, sizeof(value), "<none>");
		if (ctl_call(ctl, "GET", ctl_path(kind_get(KIND_ENDPOINTS), ns, name, path, sizeof(path)), NULL, &r) == 0 &&
		    ctl_ok(&r) && json_is_object(r.json))
			columns_endpoint_list(r.json, value, sizeof(value));
		ctl_reply_free(&r);
		line(0, "Endpoints", TOP_WIDTH, value);
	} else if (k->id == KIND_NAMESPACE) {
		line(0, "Status", TOP_WIDTH, obj_str(obj, "status.phase") ?: "Active");
		rel = related(ctl, KIND_NETNAMESPACE, name);
		columns_scalar(json_object_get(rel, "netid"), value, sizeof(value));
		line(0, "NetID", TOP_WIDTH, rel && value[0] ? value : "<none>");
		json_decref(rel);
	}
}

static void describe(struct ctl *ctl, const struct kind_info *k, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *name = obj_str(obj, "metadata.name") ?: "";
	const char *created = obj_str(obj, "metadata.creationTimestamp");
	char value[VALUE_MAX], age[32];
	const char *key;
	json_t *v;

	line(0, "Name", TOP_WIDTH, name);
	if (k->namespaced)
		line(0, "Namespace", TOP_WIDTH, obj_str(obj, "metadata.namespace") ?: "");
	map_lines("Labels", json_object_get(meta, "labels"));
	map_lines("Annotations", json_object_get(meta, "annotations"));
	if (created) {
		columns_age(obj, time(NULL), age, sizeof(age));
		snprintf(value, sizeof(value), "%s (%s ago)", created, age);
		line(0, "CreationTimestamp", TOP_WIDTH, value);
	}
	describe_extras(ctl, k, obj, name, obj_str(obj, "metadata.namespace"));
	if (k->id == KIND_SECRET) {
		describe_secret(obj);
		return;
	}
	json_object_foreach((json_t *)obj, key, v) {
		char title[256];

		if (!strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata"))
			continue;
		if (k->id == KIND_NAMESPACE && !strcmp(key, "status"))
			continue;	/* shown as Status above */
		snprintf(title, sizeof(title), "%s", key);
		if (title[0] >= 'a' && title[0] <= 'z')
			title[0] = (char)(title[0] - 'a' + 'A');
		/* an SSLKeyAndCertificate's spec is TLS through and through */
		member(title, v, 0, TOP_WIDTH, k->id == KIND_SSLKEYCERT);
	}
	if (k->id == KIND_NETWORKPOLICY)
		ctl_describe_networkpolicy(ctl, obj);
}

int ctl_describe(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *ns = CTL_DEFAULT_NAMESPACE, *name;
	const struct kind_info *k;
	char path[CTL_PATH_MAX];
	struct ctl_reply r = { 0 };
	int c, rc = CTL_EXIT_FAIL;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!ctl_name_ok("namespace", optarg))
				return CTL_EXIT_USAGE;
			ns = optarg;
			break;
		case 'h':
			printf("usage: %s describe %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "describe", usage);
		}
	}
	if ((c = ctl_one_object(ctl, "describe", usage, argc, argv, optind, &k, &name)))
		return c;
	if (ctl_call(ctl, "GET", ctl_path(k, ns, name, path, sizeof(path)), NULL, &r) < 0)
		goto out;
	if (r.status == 404) {
		ctl_print_not_found(k, name);
		goto out;
	}
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	if (!ctl_reply_object(&r, "GET", path))
		goto out;
	describe(ctl, k, r.json);
	rc = CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	return rc;
}
