/*
 * lease_report.c — what the agent tells about its lease directory
 * (agent/ipam.h), and in particular about quarantined lease files, which
 * hold an address out of circulation until an operator deletes them:
 *
 *   start-up          one log line per quarantined file: its path and
 *                     reason (lease_report_startup, after ipam_open)
 *   every few seconds a look at each quarantined file; one an operator
 *   and before ADD    deleted is forgotten, its address returns to the
 *   answers           pool, and a log line says so (lease_report_refresh:
 *   "exhausted"       the reporter's loop, pod_add)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

static int log_one(const struct ipam_quarantine *q, void *arg)
{
	char ip[INET_ADDRSTRLEN];

	(void)arg;
	format_ip(q->ip, ip);
	if (q->held)
		LOG_WARN("lease %s quarantined: %s: %s; the address is held until an operator "
			 "checks and deletes that file", ip, q->file, q->reason);
	else
		LOG_WARN("lease file quarantined: %s: %s; delete it once checked", q->file, q->reason);
	return 0;
}

void lease_report_startup(struct agent *a)
{
	struct ipam_stats st;

	ipam_stats(a->ipam, &st);
	if (!st.quarantine_files)
		return;
	if (ipam_foreach_quarantined(a->ipam, log_one, NULL) < 0)
		LOG_WARN("leases: %zu quarantined file(s), not listed: out of memory",
			 st.quarantine_files);
}

static void log_freed(const struct ipam_quarantine *q, void *arg)
{
	char ip[INET_ADDRSTRLEN];

	(void)arg;
	format_ip(q->ip, ip);
	if (q->held)
		LOG_INFO("lease %s: quarantine resolved (%s is gone): the address returns to the pool",
			 ip, q->file);
	else
		LOG_INFO("lease file %s is gone: no longer listed as quarantined", q->file);
}

int lease_report_refresh(struct agent *a)
{
	int n = ipam_refresh_quarantine(a->ipam, log_freed, NULL);

	if (n < 0)
		LOG_WARN("leases: looking at the quarantined files: %s", strerror(-n));
	return n;
}
