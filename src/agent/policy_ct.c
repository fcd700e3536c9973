/*
 * policy_ct.c — the agent's sweep of weft_policy_ct, the connections the
 * programs track for NetworkPolicy (bpf/weft_bpf.h, "NetworkPolicy"):
 * one entry a connection, expired with weft_ct's timeouts (conntrack.h),
 * each deletion counted to its client in weft_policy_ct_closed so that
 * the client's cap frees up, and the counts of clients that hold nothing
 * forgotten.  Cost: one batched read of the table and one delete per
 * dead entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/conntrack.h"
#include "agent/datapath.h"
#include "agent/policy_ct.h"

struct psweep {
	struct datapath *dp;
	uint32_t now;
	in_addr_t *closed;	/* one per deleted entry: its client */
	size_t nclosed, cap_closed;
	in_addr_t *held;	/* clients of the entries kept */
	size_t nheld, cap_held;
	struct conntrack_stats st;
	int err;
};

static int push(in_addr_t **arr, size_t *n, size_t *cap, in_addr_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		in_addr_t *p = realloc(*arr, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = c;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

static int judge(const struct weft_ct_key *k, const struct weft_policy_ct_entry *e, void *arg)
{
	struct psweep *w = arg;
	uint16_t flags = e->flags;

	w->st.entries++;
	if (flags & WEFT_CT_F_CLOSING)
		flags &= (uint16_t)~WEFT_CT_F_ESTABLISHED;
	if ((uint32_t)(w->now - e->last_seen) <= conntrack_timeout_ticks(k->proto, flags))
		return push(&w->held, &w->nheld, &w->cap_held, k->saddr);
	if (datapath_policy_ct_del(w->dp, k) < 0)
		return 0;	/* a program's RST deleted it, and counted it */
	w->st.expired_pairs++;
	return push(&w->closed, &w->nclosed, &w->cap_closed, k->saddr);
}

static int cmp_addr(const void *x, const void *y)
{
	in_addr_t a = *(const in_addr_t *)x, b = *(const in_addr_t *)y;

	return a < b ? -1 : a > b;
}

static int forget_idle(in_addr_t client, uint64_t closed, void *arg)
{
	struct psweep *w = arg;

	(void)closed;
	/* no client held: no array to search (bsearch wants one) */
	if (!w->nheld || !bsearch(&client, w->held, w->nheld, sizeof(*w->held), cmp_addr))
		(void)datapath_policy_ct_source_forget(w->dp, client);	/* -EBUSY: still counted */
	return 0;
}

int policy_ct_sweep(struct datapath *dp, uint32_t now, struct conntrack_stats *st)
{
	struct psweep w;
	uint32_t rules, ct;
	int err;

	memset(&w, 0, sizeof(w));
	w.dp = dp;
	w.now = now;
	err = datapath_policy_ct_foreach(dp, judge, &w);
	if (w.nclosed)
		qsort(w.closed, w.nclosed, sizeof(*w.closed), cmp_addr);
	for (size_t i = 0, j; err == 0 && i < w.nclosed; i = j) {
		for (j = i + 1; j < w.nclosed && w.closed[j] == w.closed[i]; j++)
			;
		err = datapath_policy_ct_closed_add(dp, w.closed[i], j - i);
	}
	if (w.nheld)
		qsort(w.held, w.nheld, sizeof(*w.held), cmp_addr);
	for (size_t i = 0, j; i < w.nheld; i = j) {
		for (j = i + 1; j < w.nheld && w.held[j] == w.held[i]; j++)
			;
		w.st.sources++;
		if (j - i > w.st.top_source_connections) {
			w.st.top_source_connections = j - i;
			w.st.top_source = w.held[i];
		}
	}
	if (err == 0)
		err = datapath_policy_ct_closed_foreach(dp, forget_idle, &w);
	datapath_policy_capacities(dp, &rules, &ct);
	w.st.capacity = ct;
	if (st)
		*st = w.st;
	free(w.closed);
	free(w.held);
	return err;
}
