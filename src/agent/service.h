/*
 * service.h — Services and EndpointSlices in the agent (service.c): the
 * model of every service port and the O(change) writes that keep the
 * service maps equal to it; conntrack expiry and purging.
 *
 * The apply/remove/listed calls are the watch hooks of the "services" and
 * "endpointslices" kinds (sync.c) and run under agent.lock.  Objects
 * passed are borrowed (copied where kept).
 */
#ifndef WEFT_AGENT_SERVICE_H
#define WEFT_AGENT_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "bpf/weft_bpf.h"

struct agent;

/* conntrack sweeps (timeouts: conntrack.h) */
#define SERVICE_CT_GC_PERIOD_MS		2000
#define SERVICE_CT_PURGE_MS		100	/* removed backends' entries: at most this late */
#define SERVICE_CT_GC_DUTY		10	/* wait >= 10 x the last sweep's time */

void service_apply(struct agent *a, struct jval obj);
void service_remove(struct agent *a, struct jval obj);
void service_listed(struct agent *a);
/* A slice is its Service's by this label (discovery.k8s.io/v1); one
 * without it is ignored, as kube-proxy does. */
#define SLICE_SERVICE_LABEL "kubernetes.io/service-name"
void endpointslice_apply(struct agent *a, struct jval obj);
void endpointslice_remove(struct agent *a, struct jval obj);
void endpointslice_listed(struct agent *a);

/* Start-up with kept maps: read back the IDs in use (before the first
 * list), and after the first full list of both kinds delete the entries
 * nobody claimed.  Under the lock. */
int service_recover(struct agent *a);
void service_sweep(struct agent *a);

/* Delete conntrack entries of removed backends (no lock held). */
void service_ct_purge(struct agent *a);
/* Sweep weft_ct (conntrack_sweep) and keep its figures in the agent
 * (a->ct_stats, under a->ct_lock); returns how many entries went. */
size_t service_ct_gc(struct agent *a);
/* The thread running both: the purge every 100 ms, the sweep every
 * SERVICE_CT_GC_PERIOD_MS (longer when a sweep is slow). */
int service_gc_start(struct agent *a);
void service_gc_stop(struct agent *a);

/* What a Service must be told of this node's programming of it: the
 * services whose error changed since the last take (msg "" = programmed
 * again).  Under the lock; *out is the caller's to free.  A report that
 * could not be written is handed back with service_report_failed(). */
struct service_report {
	char ns[256];
	char name[256];
	char msg[160];
};
int service_reports_take(struct agent *a, struct service_report **out, size_t *n);
void service_report_failed(struct agent *a, const struct service_report *r);

/* Map writes refused for lack of room since start. */
uint64_t service_map_full_count(struct agent *a);
/* The agent's table of services (a->svc): create before the first
 * service_apply, destroy (accepts NULL) after the threads stopped. */
struct service_table;
struct service_table *service_table_create(void);
void service_table_destroy(struct service_table *T);

#endif
