/*
 * columns.h — what a kind's table shows, as kubectl and oc print it: the
 * columns of `weftctl get` and of the API's Table answers (`kubectl get`),
 * one copy for both, and the cell formats weftctl's describe shares
 * (ages, service ports, endpoint lists, label selectors).
 *
 * Ownership: every function borrows its arguments; formatted text goes to a
 * caller's buffer and is truncated (never overrun) when it does not fit.
 */
#ifndef WEFT_MODEL_COLUMNS_H
#define WEFT_MODEL_COLUMNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "model/model.h"

#define COLUMNS_MAX 10		/* per kind */

/* The cell of one object; now is the time AGE is computed from. */
typedef void (*column_cell_fn)(const json_t *obj, char *buf, size_t len, time_t now);

struct column {
	const char *header;	/* "CLUSTER-IP", as kubectl prints it */
	column_cell_fn cell;
	bool wide;		/* -o wide only (a Table's priority 1) */
};

/* The columns of kind id (NAME first), *n of them; NULL and 0 for an
 * unknown id.  The array is static. */
const struct column *columns_of(enum kind_id id, size_t *n);

/* A scalar as text: strings as they are, numbers in decimal, booleans,
 * null as "".  Objects and arrays as compact JSON. */
void columns_scalar(const json_t *v, char *buf, size_t len);
/* RFC 3339 ("2024-05-01T12:00:00Z", fractions and offsets allowed) to a
 * time_t.  0 or -EINVAL. */
int columns_time_parse(const char *s, time_t *out);
/* kubectl's HumanDuration: 45s, 3m20s, 12m, 3h, 5d, 2y ("<invalid>" for
 * negative beyond clock skew). */
void columns_duration(long long seconds, char *buf, size_t len);
/* AGE of metadata.creationTimestamp at now ("<unknown>" without one). */
void columns_age(const json_t *obj, time_t now, char *buf, size_t len);
/* EXTERNAL-IP of a Service as kubectl prints it: a LoadBalancer's
 * status.loadBalancer.ingress IPs (its VIP) and spec.externalIPs, comma
 * joined; "<pending>" for a LoadBalancer without any, else "<none>". */
void columns_service_external_ips(const json_t *svc, char *buf, size_t len);
/* PORT(S) of a Service: "80:30080/TCP,53/UDP", or "<none>". */
void columns_service_ports(const json_t *svc, char *buf, size_t len);
/* ENDPOINTS of an Endpoints: "10.0.0.1:80,10.0.0.2:80 + 3 more...", or "<none>". */
void columns_endpoint_list(const json_t *ep, char *buf, size_t len);
/* A LabelSelector ({matchLabels, matchExpressions}) as kubectl prints it:
 * "app=web,tier in (a,b)", or "<none>" when empty. */
void columns_label_selector(const json_t *sel, char *buf, size_t len);
/* A plain label map: "a=b,c=d" (sorted by key), or "<none>". */
void columns_label_map(const json_t *map, char *buf, size_t len);

#endif
