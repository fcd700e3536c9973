/*
 * metrics.h — the agent's Prometheus endpoint: GET /metrics on
 * --metrics-address (default the node's address, port
 * AGENT_METRICS_PORT), plain HTTP, the text exposition format 0.0.4.
 *
 * What it serves, read at each scrape (no walk of a map: the figures are
 * those the agent keeps):
 *   weft_agent_ready                          the data plane is complete
 *   weft_agent_drops_total{reason}            weft_drops, summed over CPUs
 *   weft_agent_map_entries{map}, weft_agent_map_capacity{map}
 *                                             pressure of the maps that fill
 *                                             with traffic or with the cluster
 *   weft_agent_policy_*                       the NetworkPolicy compiler
 *   weft_agent_cni_request_duration_seconds{command}  histogram
 *   weft_agent_cni_request_errors_total{command}
 *   weft_agent_programming_duration_seconds{kind}     a watch event's map
 *                                             writes, per kind; histogram
 *   weft_agent_policy_apply_duration_seconds  each policy apply; histogram
 *
 * The timings are counted whether or not the endpoint serves (an
 * observation is three relaxed atomic adds).  The server is
 * libmicrohttpd's, on its own thread, with bounded connections (in all and
 * per client address) and a timeout, so a scraper that hangs or floods
 * costs a few sockets, never the agent's other work.
 *
 * Ownership: struct agent_metrics lives in struct agent (zeroed by its
 * owner); metrics_start/stop pair; stop accepts a never-started one.
 */
#ifndef WEFT_AGENT_METRICS_H
#define WEFT_AGENT_METRICS_H

#include <stdint.h>

#include "lib/histogram.h"

struct agent;
struct MHD_Daemon;

#define AGENT_METRICS_PORT 9966

/* The kinds a node watches, as the metrics name them (sync.c's "what"). */
#define METRICS_KINDS 8

struct agent_metrics {
	struct MHD_Daemon *daemon;
	struct histogram cni[6];	/* by enum cni_cmd (1..5) */
	_Atomic uint64_t cni_errors[6];
	struct histogram program[METRICS_KINDS];
	struct histogram policy_apply;
};

/* "ADDRESS:PORT" (an IPv4 address, or nothing for every address; a port
 * 1-65535) into *out.  0 or -EINVAL. */
struct sockaddr_in;
int metrics_address_parse(const char *spec, struct sockaddr_in *out);

/* Serve on a->o.metrics_address ("ADDR:PORT"; NULL: none).  0, or -errno
 * (logged, naming the address): the agent goes on without the endpoint. */
int metrics_start(struct agent *a);
void metrics_stop(struct agent *a);

/* Observations (any thread).  cmd: enum cni_cmd; failed: the request's
 * answer was a CNI error. */
void metrics_cni_done(struct agent *a, int cmd, uint64_t ns, int failed);
/* The histogram of a watched kind's programming: kind is sync.c's "what"
 * of the watch ("services", "pods" ...); NULL for an unknown one.  Found
 * once, when the watch starts, so an event pays no lookup. */
struct histogram *metrics_program_timing(struct agent *a, const char *kind);
void metrics_policy_applied(struct agent *a, uint64_t ns);

#endif
