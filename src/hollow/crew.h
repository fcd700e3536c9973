/*
 * crew.h — the processes that run a fleet's agents.
 *
 * One process holds only so many hollow agents: each keeps 8 connections,
 * and libcurl a 2-descriptor wake-up pair for each of its handles, so an
 * agent costs 24 descriptors and a hard limit of 20,000 stops a process
 * near 800 agents.  With --processes K the runner forks K workers once
 * the objects and credentials are made (fleet_prepare), before any agent
 * thread exists; worker w runs the nodes [w N / K, (w + 1) N / K) with
 * descriptors of its own, and answers the runner's requests over a pipe
 * (one line each way: see crew.c).  The runner keeps what the controller
 * is asked directly (the Endpoints writes), and adds up the answers: the
 * latest worker's time, the sum of their bytes, CPU and RSS.  With K = 1
 * the runner does everything itself, in-process (no fork).
 *
 * Times are ns since the fleet's epoch, which the workers inherit.
 */
#ifndef WEFT_HOLLOW_CREW_H
#define WEFT_HOLLOW_CREW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hollow/check.h"
#include "hollow/fleet.h"

struct crew;

/* The cold start: every agent started and ready, its pods added, every
 * node converged. */
struct crew_cold {
	int64_t ready_ns, pods_ns, converged_ns;	/* the last worker's */
	uint64_t bytes;		/* response bytes the workers received in it */
	double cpu_s;		/* the workers' CPU seconds in it */
	uint64_t rss_bytes;	/* their RSS after it */
};

/* processes workers over f's nodes (1: f itself).  NULL with err. */
struct crew *crew_start(struct fleet *f, unsigned processes, char *err, size_t len);
/* 0, or -1 with err (a node that did not start or converge in timeout_s). */
int crew_cold(struct crew *c, unsigned timeout_s, struct crew_cold *res, char *err, size_t len);
/* Every node's maps against the cluster (check.h); with tamper, one
 * ipcache entry of the first node removed first. */
int crew_check(struct crew *c, bool tamper, struct check_result *res, char *err, size_t len);
/* Probe pod i, on node (i mod N): probe_pod_add by the worker that runs
 * it.  With o->pod_peers every node needs it, so K must be 1. */
int crew_pod_add(struct crew *c, unsigned i, unsigned timeout_s, double *ms, char *err, size_t len);
/* *at: when the last node applied endpoints revision rev (-1: not within
 * timeout_s). */
int crew_endpoint_wait(struct crew *c, int64_t rev, unsigned timeout_s, int64_t *at, char *err, size_t len);
/* Response bytes every worker has received so far. */
int crew_bytes(struct crew *c, uint64_t *bytes, char *err, size_t len);
/* Stop every agent (the workers exit); then free.  Accepts NULL. */
void crew_destroy(struct crew *c);

#endif
