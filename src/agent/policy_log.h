/*
 * policy_log.h — the policy log (bpf/weft_bpf.h, "The policy log"): the
 * records the programs put in weft_policy_log, read by a thread of the
 * agent, given names (pods, policies) and kept, the last
 * POLICY_LOG_KEEP of them, for the Node's report (report.c puts them in
 * the annotation AGENT_ANN_POLICY_LOG, which `weftctl policy-log` reads).
 * Each record also goes to the agent's log, one line.
 *
 * Thread-safety: policy_log_json may be called from any thread.
 */
#ifndef WEFT_AGENT_POLICY_LOG_H
#define WEFT_AGENT_POLICY_LOG_H

#include <stdint.h>

struct agent;
struct policy_log;

#define POLICY_LOG_KEEP 32

/* Start reading (a thread); notify(a) is called after each record kept
 * (the reporter's wake-up).  NULL with errno when the ring buffer cannot
 * be opened. */
struct policy_log *policy_log_start(struct agent *a, void (*notify)(struct agent *a));
void policy_log_stop(struct policy_log *l);	/* accepts NULL */

/* The records kept, oldest first, as a JSON array (malloc'ed), and the
 * number read since start in *seq; NULL when there is none. */
char *policy_log_json(struct policy_log *l, uint64_t *seq);

#endif
