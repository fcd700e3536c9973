/*
 * print.h — how weftctl shows objects: the output formats of `get -o`, each
 * kind's table columns, and the cell formats kubectl users know (ages,
 * service ports, endpoint lists, label selectors).
 *
 * Ownership: every function borrows its arguments; formatted text goes to a
 * caller's buffer and is truncated (never overrun) when it does not fit.
 */
#ifndef WEFT_CTL_PRINT_H
#define WEFT_CTL_PRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "model/model.h"

enum ctl_output { CTL_OUT_TABLE, CTL_OUT_WIDE, CTL_OUT_JSON, CTL_OUT_YAML, CTL_OUT_NAME };

/* "wide", "json", "yaml", "name" (or "" for the table).  0 or -EINVAL. */
int ctl_output_parse(const char *s, enum ctl_output *out);

/* The items (a JSON array of objects of kind k) as k's table; with_namespace
 * adds a NAMESPACE column first; now is the time AGE is computed from.
 * 0 or -ENOMEM. */
int ctl_print_table(const struct kind_info *k, const json_t *items, bool wide, bool with_namespace,
		    time_t now, FILE *f) __attribute__((warn_unused_result));
/* Pretty JSON (4-space indent, keys in the server's order) + newline. */
int ctl_print_json(const json_t *v, FILE *f) __attribute__((warn_unused_result));
/* YAML through yaml_emit. */
int ctl_print_yaml(const json_t *v, FILE *f) __attribute__((warn_unused_result));
/* "kind/name" a line, kind lowercase singular. */
void ctl_print_names(const struct kind_info *k, const json_t *items, FILE *f);

/* The value at a dotted path of objects ("spec.clusterIP"); NULL if any
 * step is missing or not an object. */
json_t *ctl_json_at(const json_t *obj, const char *dotted);
/* The string at a dotted path, or NULL. */
const char *ctl_str_at(const json_t *obj, const char *dotted);
/* A scalar as text: strings as they are, numbers in decimal, booleans,
 * null as "".  Objects and arrays as compact JSON. */
void ctl_scalar(const json_t *v, char *buf, size_t len);

/* RFC 3339 ("2024-05-01T12:00:00Z", fractions and offsets allowed) to a
 * time_t.  0 or -EINVAL. */
int ctl_time_parse(const char *s, time_t *out);
/* kubectl's HumanDuration: 45s, 3m20s, 12m, 3h, 5d, 2y ("<invalid>" for
 * negative beyond clock skew). */
void ctl_duration(long long seconds, char *buf, size_t len);
/* AGE of metadata.creationTimestamp at now ("<unknown>" without one). */
void ctl_age(const json_t *obj, time_t now, char *buf, size_t len);
/* EXTERNAL-IP of a Service as kubectl prints it: a LoadBalancer's
 * status.loadBalancer.ingress IPs (its VIP) and spec.externalIPs, comma
 * joined; "<pending>" for a LoadBalancer without any, else "<none>". */
void ctl_service_external_ips(const json_t *svc, char *buf, size_t len);
/* PORT(S) of a Service: "80:30080/TCP,53/UDP", or "<none>". */
void ctl_service_ports(const json_t *svc, char *buf, size_t len);
/* ENDPOINTS of an Endpoints: "10.0.0.1:80,10.0.0.2:80 + 3 more...", or "<none>". */
void ctl_endpoint_list(const json_t *ep, char *buf, size_t len);
/* A LabelSelector ({matchLabels, matchExpressions}) as kubectl prints it:
 * "app=web,tier in (a,b)", or "<none>" when empty. */
void ctl_label_selector(const json_t *sel, char *buf, size_t len);
/* A plain label map: "a=b,c=d" (sorted by key), or "<none>". */
void ctl_label_map(const json_t *map, char *buf, size_t len);

#endif
