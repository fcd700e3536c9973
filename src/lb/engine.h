/*
 * engine.h — the service engine's loop: objects from a source, to a
 * layout, to HAProxy by runtime commands or a rate-limited reload.
 *
 *          start: load -> fresh layout -> write -> haproxy -c -> start
 *                 (adopted and the files on disk are the same: no reload)
 *                             |
 *                             v
 *   +------------------->  [idle]  <-----------------------------+
 *   |                         | SIGHUP (or the source's fd)       |
 *   |                         v                                  |
 *   |          load -> sticky layout -> lb_plan_make             |
 *   |              |                           |                 |
 *   |     same structure                  reload needed          |
 *   |              v                           v                 |
 *   |   write files, apply ops        [pending] until last reload |
 *   |   (an op fails: pending)         + min interval, then:     |
 *   +--------------+                  load's latest state ->     |
 *                                     fresh layout -> write ->   |
 *                                     haproxy -c -> reload ------+
 *
 * Several changes while a reload waits are one reload (the latest state
 * is used).  HAProxy found dead is started again with the applied
 * layout.  SIGTERM or SIGINT: HAProxy is stopped and the loop returns.
 *
 * Counters (reloads, runtime batches and commands, generation = objects
 * loaded) are written to DIR/status.json after every event, atomically.
 * One log line per reload and per runtime batch goes to the caller's log
 * function (the engine never prints).
 */
#ifndef WEFT_LB_ENGINE_H
#define WEFT_LB_ENGINE_H

#include "lb/source.h"

#include <stddef.h>

struct lb_engine_config {
	const char *name;		/* this engine (the status's engine name) */
	const char *state_dir;		/* absolute */
	const char *haproxy;		/* the haproxy binary */
	long min_reload_interval_ms;
	size_t min_slots;		/* per pool (layout.h) */
	struct lb_source *source;	/* borrowed */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/* Runs until SIGTERM or SIGINT (the engine handles them and SIGHUP while
 * it runs, and puts the previous handlers back).
 * 0, or -errno with err saying why it could not start. */
int lb_engine_run(const struct lb_engine_config *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
