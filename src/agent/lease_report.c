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
 *   the Node          annotation weft.io/ipam, JSON built here
 *                     (lease_report_json) and written by report.c:
 *                     {"leases", "quarantined", "capacity",
 *                      "quarantineFiles", "quarantine": [{"ip", "file",
 *                      "reason"}, ... at most LEASE_REPORT_LIST_MAX]}
 *
 * Every count comes from one ipam_stats() call, so the annotation (and
 * the controller's metrics made from it) and the CNI errors agree.
 * "quarantined" counts the pool addresses held; "quarantineFiles" every
 * quarantined file, those named by a reserved address (which hold
 * nothing) included; the list may be cut, never the counts.
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

static int list_one(const struct ipam_quarantine *q, void *arg)
{
	char ip[INET_ADDRSTRLEN];
	json_t *list = arg;

	if (json_array_size(list) == LEASE_REPORT_LIST_MAX)
		return 1;		/* the rest: counted, not listed */
	format_ip(q->ip, ip);
	return json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "ip", ip, "file", q->file,
						     "reason", q->reason)) ? -ENOMEM : 0;
}

char *lease_report_json(struct agent *a)
{
	struct ipam_stats st;
	json_t *list = json_array(), *o = NULL;
	char *s = NULL;

	if (!list)
		return NULL;
	ipam_stats(a->ipam, &st);
	if (ipam_foreach_quarantined(a->ipam, list_one, list) < 0)
		goto out;
	o = json_pack("{s:I, s:I, s:I, s:I, s:O}", "leases", (json_int_t)st.leases,
		      "quarantined", (json_int_t)st.quarantined, "capacity", (json_int_t)st.capacity,
		      "quarantineFiles", (json_int_t)st.quarantine_files, "quarantine", list);
	if (o)
		s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
out:
	json_decref(o);
	json_decref(list);
	return s;
}
