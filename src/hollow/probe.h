/*
 * probe.h — the timings weft-hollow reports: one pod added until every
 * node that needs it has it; one Endpoints change until every node
 * applied it; and what a process costs (CPU, RSS), read from /proc.
 */
#ifndef WEFT_HOLLOW_PROBE_H
#define WEFT_HOLLOW_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hollow/fleet.h"

/* Pod number i added on node (an index of f's nodes, in [lo, hi)), timed
 * until every node that needs it has it (probe.c); *ms: -1 when not
 * within timeout_s.  0, or -1 with err when the add failed. */
int probe_pod_add(struct fleet *f, unsigned node, unsigned i, unsigned timeout_s, double *ms,
		  char *err, size_t len);

/* Change number i: one address of the Endpoints of service (i mod
 * services) replaced, the others kept; *rev: the revision of the
 * Service's EndpointSlices after it.  0 or -1 with err. */
int probe_endpoint_write(struct fleet *f, unsigned i, int64_t *rev, char *err, size_t len);
/* fleet_now() once every node of [lo, hi) applied EndpointSlices revision rev,
 * or -1 when not within timeout_s. */
int64_t probe_endpoint_wait(struct fleet *f, int64_t rev, unsigned timeout_s);
/* The size of the first Service's Endpoints object as compact JSON: what
 * every node was sent for each change of it when nodes read Endpoints
 * (they read its slices now: the reference of bytes per change). */
int probe_endpoints_bytes(struct fleet *f, size_t *bytes, char *err, size_t len);

struct proc_sample {
	double cpu_s;			/* user + system */
	uint64_t rss_bytes;
};

/* 0, or -1 when the process is gone or unreadable. */
int probe_proc(pid_t pid, struct proc_sample *s);

/* The p-th percentile (0..100) of v[0..n-1] (sorted in place), nearest rank. */
double probe_percentile(double *v, size_t n, double p);

#endif
