/*
 * write.c — the agent's writes to the controller (every PUT and DELETE of
 * node.c and report.c) go through agent_write, the one place that knows
 * what a 429 TooManyRequests means: the controller refused the write for
 * load (this node's write budget, docs/api.md "Errors") and stored
 * nothing, so the same request is sent again after the Retry-After it
 * named — not counted as a failure, not left for the next round.
 *
 * Bounds: each wait is at most AGENT_RETRY_MAX_S (a Retry-After larger
 * than that, or none, is read as that bound or 1 s), at most
 * AGENT_WRITE_TRIES sends; then the last 429 is the caller's answer, as
 * any other refusal.  A wait ends early when the agent stops.
 */
#include <errno.h>
#include <time.h>

#include "agent/agent.h"

int agent_retry_seconds(const struct httpc_response *r)
{
	json_t *st, *secs;
	long s = 0;

	if (r->status != 429)
		return -1;
	s = r->retry_after;
	if (s <= 0 && r->body && (st = json_loads(r->body, 0, NULL))) {
		secs = json_object_get(json_object_get(st, "details"), "retryAfterSeconds");
		if (json_is_integer(secs) && json_integer_value(secs) > 0)
			s = json_integer_value(secs) > AGENT_RETRY_MAX_S ? AGENT_RETRY_MAX_S
									 : (long)json_integer_value(secs);
		json_decref(st);
	}
	if (s <= 0)
		s = 1;
	return s > AGENT_RETRY_MAX_S ? AGENT_RETRY_MAX_S : (int)s;
}

/* secs seconds, or until the agent stops (report_stop wakes kick) */
static void wait_or_stop(struct agent *a, int secs)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->stopping))
		if (pthread_cond_timedwait(&a->kick, &a->lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&a->lock);
}

int agent_write(struct agent *a, struct httpc *h, const char *method, const char *path, const char *body,
		size_t len, struct httpc_response *resp, char *err, size_t errlen)
{
	int rc = 0, wait;

	for (int try = 1;; try++) {
		rc = httpc_request(h, method, path, body, len, resp, err, errlen);
		if (rc < 0 || (wait = agent_retry_seconds(resp)) < 0)
			goto out;
		if (try == AGENT_WRITE_TRIES || atomic_load(&a->stopping))
			goto out;
		LOG_INFO("%s %s: the controller is busy (429); again in %d s", method, path, wait);
		httpc_response_free(resp);
		wait_or_stop(a, wait);
	}
out:
	return rc;
}
