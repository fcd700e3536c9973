/*
 * probe.h — the timings weft-hollow reports: one pod added until every
 * node's ipcache has it; one Endpoints change until every node applied
 * it; and what a process costs (CPU, RSS), read from /proc.
 */
#ifndef WEFT_HOLLOW_PROBE_H
#define WEFT_HOLLOW_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hollow/fleet.h"

/* A pod added on node (i mod N) for i in 0..count-1, one at a time;
 * ms[i]: until the last node had it (-1: not within timeout_s, which
 * ends the probe: *done says how many were timed).  0 or -1 with err. */
int probe_pod_adds(struct fleet *f, unsigned count, unsigned timeout_s, double *ms,
		   unsigned *done, char *err, size_t len);

/* The Endpoints of service (i mod services) set to a new address, one at a
 * time; ms[i]: until every node's applied endpoints revision reached the
 * write's. */
int probe_endpoint_changes(struct fleet *f, unsigned count, unsigned timeout_s, double *ms,
			   unsigned *done, char *err, size_t len);

struct proc_sample {
	double cpu_s;			/* user + system */
	uint64_t rss_bytes;
};

/* 0, or -1 when the process is gone or unreadable. */
int probe_proc(pid_t pid, struct proc_sample *s);

/* The p-th percentile (0..100) of v[0..n-1] (sorted in place), nearest rank. */
double probe_percentile(double *v, size_t n, double p);

#endif
