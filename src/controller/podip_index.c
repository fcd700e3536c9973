/*
 * podip_index.c — at start, the ALLOC_PODIP keys (admit_pod.c) of a store
 * written by a weft from before them: its pods have addresses and no keys,
 * and nothing stopped two pods from sharing an address or a pod from having
 * one outside its node's subnet.
 *
 *   read every ALLOC_PODIP key (held: ip → holder) and every HostSubnet
 *   pass 1: the pods whose address fits their node   ┐ in pages of INDEX_PAGE
 *   pass 2: the pods whose address does not           ┘ pods, a transaction each
 *      key absent                          → taken (guarded: key absent, pod unchanged)
 *      key this pod's                      → nothing
 *      key stale (its holder is gone or
 *        has another address)              → taken over, guarded
 *      key another pod's that has the address → a conflict: counted, described
 *   pass 1 also counts and describes every pod whose address does not fit.
 *
 * The pods that fit go first so that, of two sharing an address, the one the
 * address belongs to keeps it; a misfit still takes a free key, so that no
 * pod written later can share its address.  Nothing is deleted and no pod
 * is changed: conflicts and misfits are for people (the log; --fsck names
 * them all).  A page whose guards fail (another controller wrote meanwhile)
 * starts the whole walk again from a fresh read; a walk that finds every key
 * in place writes nothing.  Pass 2 runs only when pass 1 saw a misfit
 * without its key.
 */
#include "controller/controller.h"
#include "lib/errmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEX_PAGE 256		/* pods a transaction; at most 3 compares each */

struct walk {
	json_t *held;		/* ip → [holder, key mod_rev (0: taken by this walk, by a pod with that address)] */
	json_t *subnets;	/* node name → its HostSubnet */
	size_t misfits_without_key;
	struct pod_ip_index_report *rep;
};

__attribute__((format(printf, 2, 3))) static void describe(struct pod_ip_index_report *rep, const char *fmt, ...)
{
	va_list ap;

	if (rep->nlines == POD_IP_INDEX_LINES)
		return;
	va_start(ap, fmt);
	if (errmsg_vline(rep->lines, sizeof(rep->lines), fmt, ap) == 0)
		rep->nlines++;
	va_end(ap);
}

static int load(struct registry *r, struct walk *w)
{
	struct store_kv_list l = { 0 };
	int err = store_range(r->store, ALLOC_PODIP, NULL, 0, &l);

	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++)
		json_object_set_new(w->held, l.kvs[i].key + strlen(ALLOC_PODIP),
				    json_pack("[s, I]", l.kvs[i].value, (json_int_t)l.kvs[i].mod_rev));
	store_kv_list_free(&l);
	err = store_range(r->store, OBJ_PREFIX "hostsubnets/", NULL, 0, &l);
	if (err)
		return err;
	for (size_t i = 0; i < l.n; i++) {
		json_t *hs = json_loadb(l.kvs[i].value, l.kvs[i].value_len, 0, NULL);

		if (hs && obj_name(hs))
			json_object_set(w->subnets, obj_name(hs), hs);
		json_decref(hs);
	}
	store_kv_list_free(&l);
	return 0;
}

/* One pod of a page (pass 0 or 1): what it needs goes into b; *puts counts
 * the keys taken.  0 or -errno. */
static int index_pod(struct registry *r, struct walk *w, struct txnb *b, const struct store_kv *kv, int pass,
		     size_t *puts)
{
	json_t *pod = json_loadb(kv->value, kv->value_len, 0, NULL), *held;
	const char *ip = pod_address(pod), *node = obj_str(pod, "spec.nodeName"), *holder;
	char owner[600], key[128], why[1024];
	int64_t rev;
	bool fits;
	int err = 0;

	if (!ip)
		goto out;
	pod_owner(pod, owner, sizeof(owner));
	fits = pod_ip_fits_node(owner, ip, node, node ? json_object_get(w->subnets, node) : NULL, why,
				sizeof(why)) == 0;
	held = json_object_get(w->held, ip);
	holder = json_string_value(json_array_get(held, 0));
	rev = json_integer_value(json_array_get(held, 1));
	if (pass == 0 && !fits) {
		w->rep->misfits++;
		describe(w->rep, "%s", why);
		if (!holder || strcmp(holder, owner) != 0)
			w->misfits_without_key++;
	}
	if ((pass == 0) != fits || (holder && strcmp(holder, owner) == 0))
		goto out;
	snprintf(key, sizeof(key), ALLOC_PODIP "%s", ip);
	if (holder) {
		int stale = rev ? pod_ip_holder_stale(r, b, holder, ip) : 0;

		if (stale < 0) {
			err = stale;
			goto out;
		}
		if (!stale) {
			w->rep->conflicts++;
			describe(w->rep, "pod %s: status.podIP %s is held by pod %s, which has that address too",
				 owner, ip, holder);
			goto out;
		}
		txnb_unchanged(b, key, rev);
	} else {
		txnb_absent(b, key);
	}
	txnb_put(b, key, owner);
	txnb_unchanged(b, kv->key, kv->mod_rev);
	json_object_set_new(w->held, ip, json_pack("[s, i]", owner, 0));
	(*puts)++;
out:
	json_decref(pod);
	return err;
}

/* One pass over the pods, a page a transaction: 0, -EAGAIN (a guard
 * failed), or -errno. */
static int walk_pass(struct registry *r, struct walk *w, int pass)
{
	char after[1024] = "";
	bool more = true;

	while (more) {
		struct store_kv_list l = { 0 };
		struct txnb b;
		size_t puts = 0;
		int err = store_range(r->store, OBJ_PREFIX "pods/", after[0] ? after : NULL, INDEX_PAGE, &l);

		if (err)
			return err;
		txnb_init(&b);
		for (size_t i = 0; i < l.n && !err; i++)
			err = index_pod(r, w, &b, &l.kvs[i], pass, &puts);
		if (!err && puts)
			err = txnb_commit(&b, r->store, &r->last_write_rev);
		if (!err)
			w->rep->indexed += puts;
		more = l.n == INDEX_PAGE;
		if (l.n)
			snprintf(after, sizeof(after), "%s", l.kvs[l.n - 1].key);
		txnb_free(&b);
		store_kv_list_free(&l);
		if (err)
			return err;
	}
	return 0;
}

static int walk(struct registry *r, struct pod_ip_index_report *rep)
{
	struct walk w = { .held = json_object(), .subnets = json_object(), .rep = rep };
	size_t indexed = rep->indexed;
	int err = w.held && w.subnets ? load(r, &w) : -ENOMEM;

	memset(rep, 0, sizeof(*rep));
	rep->indexed = indexed;	/* (what earlier walks committed stays committed) */
	if (!err)
		err = walk_pass(r, &w, 0);
	if (!err && w.misfits_without_key)
		err = walk_pass(r, &w, 1);
	json_decref(w.held);
	json_decref(w.subnets);
	return err;
}

int registry_index_pod_ips(struct registry *r, struct pod_ip_index_report *rep, struct status *st)
{
	memset(rep, 0, sizeof(*rep));
	for (int attempt = 0; attempt < REGISTRY_RETRIES; attempt++) {
		int err = walk(r, rep);

		if (err == 0)
			return 0;
		if (err != -EAGAIN) {
			status_set(st, 500, "InternalError", "store: %s", strerror(-err));
			return -1;
		}
	}
	status_set(st, 409, "Conflict", "pod IPs: the pods kept changing while their keys were added");
	return -1;
}
