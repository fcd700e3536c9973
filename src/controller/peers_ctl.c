/*
 * peers_ctl.c — the PodPeerSlice controller: for every node, its pods that
 * have an address, as NetworkPolicy peers need them (model.h,
 * "PodPeerSlices"), so that an agent whose policies name pods as peers
 * watches these compact slices instead of every Pod of the cluster.  It
 * runs inside the endpoints controller (endpoints_ctl.c), which owns it:
 * same lock, same store events, leader-only as it is.  endpoints_ctl.c
 * hands it each pod's digest as it changes (peers_ctl_pod) and each
 * PodPeerSlice event (peers_ctl_apply), and calls peers_ctl_reconcile at
 * every sync; this file calls nothing back.
 *
 * A pod is a peer entry of its node when it has spec.nodeName, a valid
 * IPv4 status.podIP and a phase other than Succeeded or Failed.  Its entry:
 *   "ns/name" → { name, ip, identity: { namespace, labels, ports } }
 * (ports: its named container ports [name, protocol, port] in the order
 * of spec.containers[].ports[], protocol TCP when left out).
 *
 * The index (JSON objects as maps; a "set" has true values):
 *   nodes:   node → { "ns/name" → entry }    (the desired entries)
 *   set:     a slice set (slice_set.c), owners the nodes:
 *            slices:   name → { ours, owner (its node), group, entries,
 *                      irregular }  (every PodPeerSlice; ours false: a
 *                      name only, never written)
 *            by_owner: node → { name: true }   (our slices)
 *   dirty:   node → the instant (ms) its gather counts from (due a
 *            gather later)
 *   written: node → the instant (ms) its slices were last written (or a
 *            write failed), while it has pods
 * kept from the store's events and from our own writes (taken as written,
 * so their events come back equal: no more work).
 *
 * Gathering: a node that starts 30 pods reports them one write at a time,
 * and every node watching the slices is sent each slice written.  So a
 * node's slices are written at most once every PODPEERS_GATHER_MS: a
 * change of a node not written within the last gather is written at
 * once, in the commit's own sync (a lone new pod reaches the other nodes
 * as fast as its Pod would); the changes that follow within the gather
 * wait for its end and go in one write, at the first sync after that (a
 * commit's, or the API's timer, whose wait peers_ctl_due_ms bounds and
 * the wake callback cuts short when a node becomes due earlier than the
 * loop planned).  A failed write counts as a write: its node is retried a
 * gather later, never in a busy loop.
 *
 * Slices hold PODPEERS_PER_SLICE pods (model.h allows up to
 * PODPEERSLICE_MAX_PODS): a slice is sent whole when one of its pods
 * changes, so a small one keeps a pod's change near the size of its Pod,
 * and a list still costs a third of the Pods' bytes or less
 * (bench/README.md, "With a NetworkPolicy naming pods as peers").
 *
 * A node's slices are packed by slice_pack (model/slice_pack.h), one
 * group: a pod stays in its slice, new pods fill slices with room, an
 * emptied slice is deleted, only changed slices are written.  A written
 * slice lists each identity its pods use once, sorted by the identity's
 * canonical JSON (sorted keys), and its pods sorted by "ns/name": the
 * same entries always make the same object.
 *
 * Names: "<node>-<n>", n the smallest from 1 that no PodPeerSlice has.  A
 * name over 253 bytes is made "<node cut>-<hash>-<n>", hash 8 hex digits
 * of the full node name (FNV-1a), the cut part without a trailing '-' or
 * '.'.  The node label is set when the node name is a valid label value
 * (at most 63 bytes); the "node" field always holds it.
 *
 * Invariants
 *  1. A PodPeerSlice without our managed-by label is never written or
 *     deleted; its name is only kept free.
 *  2. After a reconcile of a node that wrote successfully, the index's
 *     record of each of its slices equals what is stored, and the slices
 *     hold the node's entries, each once, in slices of 1..max pods.
 *  3. A slice of ours stored unlike this file writes it (an identity
 *     twice or unused, another order, a pod twice) is irregular: rewritten
 *     at its node's next reconcile.
 *  4. Work follows what changed: a pod change costs O(its node's pods), a
 *     sync with nothing due O(1).
 *  5. The slices are kept only while the cluster has a NetworkPolicy
 *     (peers_ctl_set_active, from endpoints_ctl.c): only then can an
 *     agent need them (an agent watches them only while a policy names
 *     pods as peers).  Inactive, a pod change costs nothing here and no
 *     slice of ours is stored: the first policy makes every node's slices
 *     at once, in the sync of its own commit (so an agent that saw the
 *     policy lists them whole), and the last one's deletion deletes them.
 *
 * Threads: none; it runs under the API's lock like the registry.
 */
#include "controller/controller.h"
#include "lib/monotime.h"
#include "model/slice_pack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 600		/* "ns/name": a namespace <= 63, a name <= 253 */
#define NAME_MAX_LEN 253
#define GROUP "peers"		/* slice_pack's one group */

struct peers_ctl {
	struct registry *reg;
	bool active;		/* the cluster has a NetworkPolicy: slices kept */
	size_t max;		/* pods in one slice at most */
	int64_t gather_ms;
	int64_t (*now)(void *arg);
	void *now_arg;
	int64_t next_due;	/* the earliest instant a dirty node is due; INT64_MAX: none */
	void (*wake)(void *arg, int64_t in_ms);	/* told when next_due comes earlier */
	void *wake_arg;
	json_t *nodes;
	struct slice_set set;
	json_t *dirty;
	json_t *written;
};

static int64_t real_now(void *arg)
{
	(void)arg;
	return monotime_ms();
}

struct peers_ctl *peers_ctl_new(struct registry *r)
{
	struct peers_ctl *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->reg = r;
	p->max = PODPEERS_PER_SLICE;
	p->gather_ms = PODPEERS_GATHER_MS;
	p->now = real_now;
	p->next_due = INT64_MAX;
	p->nodes = json_object();
	p->dirty = json_object();
	p->written = json_object();
	if (slice_set_init(&p->set) || !p->nodes || !p->dirty || !p->written) {
		peers_ctl_free(p);
		return NULL;
	}
	return p;
}

void peers_ctl_free(struct peers_ctl *p)
{
	if (!p)
		return;
	json_decref(p->nodes);
	slice_set_free(&p->set);
	json_decref(p->dirty);
	json_decref(p->written);
	free(p);
}

void peers_ctl_clear(struct peers_ctl *p)
{
	json_object_clear(p->nodes);
	slice_set_clear(&p->set);
	json_object_clear(p->written);
}

int peers_ctl_set_capacity(struct peers_ctl *p, size_t max)
{
	if (max < 1 || max > PODPEERSLICE_MAX_PODS)
		return -ERANGE;
	p->max = max;
	return 0;
}

void peers_ctl_set_clock(struct peers_ctl *p, int64_t gather_ms, int64_t (*now)(void *arg), void *arg)
{
	p->gather_ms = gather_ms < 0 ? 0 : gather_ms;
	p->now = now ? now : real_now;
	p->now_arg = now ? arg : NULL;
}

/* ------------------------------------------------------------------ dirty */

void peers_ctl_set_wake(struct peers_ctl *p, void (*wake)(void *arg, int64_t in_ms), void *arg)
{
	p->wake = wake;
	p->wake_arg = arg;
}

static void mark_at(struct peers_ctl *p, const char *node, int64_t since, int64_t now)
{
	json_t *old;

	if (!node || !*node)
		return;
	old = json_object_get(p->dirty, node);
	/* the first change of a burst starts the gather; later ones join it */
	if (old && json_integer_value(old) <= since)
		return;
	json_object_set_new(p->dirty, node, json_integer(since));
	if (since + p->gather_ms < p->next_due) {
		p->next_due = since + p->gather_ms;
		/* the loop may be asleep past it: its wait is cut short */
		if (p->wake)
			p->wake(p->wake_arg, p->next_due > now ? p->next_due - now : 0);
	}
}

/* node changed: due at once when it was not written within the last
 * gather, else at the end of the gather its last write began. */
static void mark(struct peers_ctl *p, const char *node)
{
	int64_t now = p->now(p->now_arg), since = now - p->gather_ms;
	json_t *last = node ? json_object_get(p->written, node) : NULL;

	if (last && json_integer_value(last) > since)
		since = json_integer_value(last);
	mark_at(p, node, since, now);
}

void peers_ctl_mark_all(struct peers_ctl *p)
{
	/* due at once: a resync repairs now, it gathers nothing */
	int64_t now = p->now(p->now_arg), since = now - p->gather_ms;
	const char *node;
	json_t *v;

	json_object_foreach(p->nodes, node, v)
		mark_at(p, node, since, now);
	json_object_foreach(p->set.by_owner, node, v)
		mark_at(p, node, since, now);
}

void peers_ctl_set_active(struct peers_ctl *p, bool on)
{
	const char *node;
	json_t *v;

	if (p->active == on)
		return;
	p->active = on;
	if (on)
		return;		/* the caller hands every pod in (peers_ctl_pod) */
	json_object_clear(p->nodes);
	/* every slice of ours deleted at the next reconcile */
	json_object_foreach(p->set.by_owner, node, v)
		mark_at(p, node, p->now(p->now_arg) - p->gather_ms, p->now(p->now_arg));
}

bool peers_ctl_active(const struct peers_ctl *p) { return p->active; }

int64_t peers_ctl_due_ms(const struct peers_ctl *p)
{
	int64_t now;

	if (!p || p->next_due == INT64_MAX)
		return -1;
	now = p->now(p->now_arg);
	return p->next_due <= now ? 0 : p->next_due - now;
}

/* ------------------------------------------------------------------ entries */

/* A pod digest's peer entry (a new reference), or NULL when the pod is
 * not one (no node, no valid address, finished).  *node borrows the
 * digest's spec.nodeName. */
static json_t *entry_of(const json_t *digest, const char **node)
{
	const json_t *meta = json_object_get(digest, "metadata"), *spec = json_object_get(digest, "spec");
	const json_t *status = json_object_get(digest, "status"), *c, *port, *labels;
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *ip = json_string_value(json_object_get(status, "podIP"));
	const char *phase = json_string_value(json_object_get(status, "phase"));
	json_t *ports, *id, *e;
	uint32_t a;
	size_t i, j;

	*node = json_string_value(json_object_get(spec, "nodeName"));
	if (!digest || !name || !ns || !*node || !**node || !ip || ip4_parse(ip, &a) < 0 ||
	    (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
		return NULL;
	ports = json_array();
	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		json_array_foreach(json_object_get(c, "ports"), j, port) {
			const char *pn = json_string_value(json_object_get(port, "name"));
			const char *proto = json_string_value(json_object_get(port, "protocol"));
			const json_t *num = json_object_get(port, "containerPort");

			if (!pn || !*pn || !json_is_integer(num))
				continue;
			json_array_append_new(ports, json_pack("{s:s, s:s, s:I}", "name", pn, "protocol",
							       proto && *proto ? proto : "TCP", "port",
							       (json_int_t)json_integer_value(num)));
		}
	}
	labels = json_object_get(meta, "labels");
	id = json_pack("{s:s, s:o, s:o}", "namespace", ns, "labels",
		       json_is_object(labels) ? json_deep_copy(labels) : json_object(), "ports", ports);
	e = id ? json_pack("{s:s, s:s, s:o}", "name", name, "ip", ip, "identity", id) : NULL;
	return e;
}

static void node_set(struct peers_ctl *p, const char *node, const char *key, json_t *entry)
{
	json_t *m = json_object_get(p->nodes, node);

	if (!entry) {
		json_object_del(m, key);
		if (m && !json_object_size(m))
			json_object_del(p->nodes, node);
		return;
	}
	if (!m) {
		m = json_object();
		if (json_object_set_new(p->nodes, node, m) < 0) {
			json_decref(entry);
			return;
		}
	}
	json_object_set_new(m, key, entry);
}

void peers_ctl_pod(struct peers_ctl *p, const char *ns, const char *name, const json_t *old, const json_t *now,
		   bool dirty)
{
	const char *old_node = NULL, *new_node = NULL;
	json_t *was, *is;
	char key[KEY_MAX], on[NAME_MAX_LEN + 1] = "";

	if (!p->active)
		return;		/* no reader: no entries, no cost (invariant 5) */
	was = old ? entry_of(old, &old_node) : NULL;
	is = now ? entry_of(now, &new_node) : NULL;
	if ((!was && !is) || (was && is && !strcmp(old_node, new_node) && json_equal(was, is))) {
		json_decref(was);
		json_decref(is);
		return;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (was) {
		snprintf(on, sizeof(on), "%s", old_node);	/* (old may go with the entry) */
		node_set(p, on, key, NULL);
		if (dirty)
			mark(p, on);
	}
	if (is) {
		if (dirty)
			mark(p, new_node);
		node_set(p, new_node, key, is);	/* (takes is) */
	}
	json_decref(was);
}

/* ------------------------------------------------------------------ slices */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* identities and pods of a slice holding entries ("ns/name" → entry), as
 * this file writes them: into obj (new arrays).  0 or -ENOMEM. */
static int fill(json_t *obj, const json_t *entries)
{
	size_t n = json_object_size(entries), nid = 0, i;
	const char **keys = calloc(n + 1, sizeof(*keys));
	char **canon = calloc(n + 1, sizeof(*canon));
	json_t *index = json_object(), *ids = json_array(), *pods = json_array(), *e;
	const char *key;
	int rc = -ENOMEM;

	if (!keys || !canon || !index || !ids || !pods)
		goto out;
	i = 0;
	json_object_foreach((json_t *)entries, key, e) {
		keys[i] = key;
		canon[i] = json_dumps(json_object_get(e, "identity"), JSON_COMPACT | JSON_SORT_KEYS);
		if (!canon[i])
			goto out;
		i++;
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	/* the distinct identities, sorted, numbered */
	{
		char **sorted = malloc((n + 1) * sizeof(*sorted));

		if (!sorted)
			goto out;
		memcpy(sorted, canon, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_str);
		for (i = 0; i < n; i++) {
			if (json_object_get(index, sorted[i]))
				continue;
			json_object_set_new(index, sorted[i], json_integer((json_int_t)nid++));
			json_array_append_new(ids, json_loads(sorted[i], 0, NULL));
		}
		free(sorted);
	}
	for (i = 0; i < n; i++) {
		char *c;

		e = json_object_get(entries, keys[i]);
		c = json_dumps(json_object_get(e, "identity"), JSON_COMPACT | JSON_SORT_KEYS);
		if (!c)
			goto out;
		json_array_append_new(pods, json_pack("{s:O, s:O, s:O}", "name", json_object_get(e, "name"), "ip",
						      json_object_get(e, "ip"), "identity", json_object_get(index, c)));
		free(c);
	}
	if (json_array_size(ids) != nid || json_array_size(pods) != n)
		goto out;
	json_object_set(obj, "identities", ids);
	json_object_set(obj, "pods", pods);
	rc = 0;
out:
	for (i = 0; canon && i < n; i++)
		free(canon[i]);
	free(canon);
	free(keys);
	json_decref(index);
	json_decref(ids);
	json_decref(pods);
	return rc;
}

static bool label_ok(const char *node)
{
	return strlen(node) <= 63 && model_label_value(node);
}

/* The slice of node named name holding entries, as written (new ref). */
static json_t *slice_object(const char *name, const char *node, const json_t *entries)
{
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s}", "apiVersion", "network.weft.io/v1", "kind",
				"PodPeerSlice", "metadata", "name", name, "labels", PODPEERSLICE_MANAGED_LABEL,
				PODPEERSLICE_MANAGER, "node", node);

	if (obj && label_ok(node))
		json_object_set_new(json_object_get(json_object_get(obj, "metadata"), "labels"),
				    PODPEERSLICE_NODE_LABEL, json_string(node));
	if (obj && fill(obj, entries)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

/* What the controller compares of a stored slice (invariant 3). */
static json_t *record_of(const json_t *obj)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	const char *by = json_string_value(json_object_get(labels, PODPEERSLICE_MANAGED_LABEL));
	const char *node = json_string_value(json_object_get(obj, "node"));
	const json_t *ids = json_object_get(obj, "identities"), *pod;
	json_t *entries, *again, *rec;
	bool irregular = false;
	size_t i;

	if (!by || strcmp(by, PODPEERSLICE_MANAGER) != 0 || !node || !*node)
		return json_pack("{s:b}", "ours", 0);
	entries = json_object();
	if (!entries)
		return NULL;
	json_array_foreach(json_object_get(obj, "pods"), i, pod) {
		const char *name = json_string_value(json_object_get(pod, "name"));
		const char *ip = json_string_value(json_object_get(pod, "ip"));
		const json_t *id = json_array_get(ids, (size_t)json_integer_value(json_object_get(pod, "identity")));
		const char *ns = json_string_value(json_object_get(id, "namespace"));
		char key[KEY_MAX];
		json_t *e, *labels_of, *ports;

		if (!name || !ip || !ns || !json_is_integer(json_object_get(pod, "identity"))) {
			irregular = true;
			continue;
		}
		snprintf(key, sizeof(key), "%s/%s", ns, name);
		if (json_object_get(entries, key))
			irregular = true;
		labels_of = json_object_get(id, "labels");
		ports = json_object_get(id, "ports");
		e = json_pack("{s:s, s:s, s:{s:s, s:o, s:o}}", "name", name, "ip", ip, "identity", "namespace", ns,
			      "labels", labels_of ? json_incref(labels_of) : json_object(), "ports",
			      ports ? json_incref(ports) : json_array());
		if (e)
			json_object_set_new(entries, key, e);
	}
	/* stored as this file would store these entries?  (order, identities
	 * each once and used, the node label) */
	again = slice_object(obj_name(obj) ?: "", node, entries);
	if (!again || !json_equal(json_object_get(again, "identities"), ids) ||
	    !json_equal(json_object_get(again, "pods"), json_object_get(obj, "pods")) ||
	    !json_equal(json_object_get(json_object_get(again, "metadata"), "labels"), labels))
		irregular = true;
	json_decref(again);
	rec = json_pack("{s:b, s:s, s:s, s:o, s:b}", "ours", 1, "owner", node, "group", GROUP, "entries", entries,
			"irregular", irregular);
	return rec;
}

bool peers_ctl_apply(struct peers_ctl *p, const char *name, const json_t *obj, bool dirty)
{
	const json_t *old = slice_set_get(&p->set, NULL, name);
	json_t *now = obj ? record_of(obj) : NULL;
	char was[NAME_MAX_LEN + 1] = "";

	if (old ? now && json_equal(old, now) : !now) {
		json_decref(now);	/* our own write coming back */
		return false;
	}
	/* the node whose slice this was or is: someone else changed it */
	if (slice_set_owner(old))
		snprintf(was, sizeof(was), "%s", slice_set_owner(old));
	if (dirty && slice_set_owner(now))
		mark(p, slice_set_owner(now));
	slice_set_put(&p->set, NULL, name, now);
	if (dirty && was[0])
		mark(p, was);
	return true;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* "<node>-<n>" (or its shortened form), free among all PodPeerSlices. */
static int new_name(struct peers_ctl *p, const char *node, char *name, size_t len)
{
	for (unsigned n = 1; n < 1000000; n++) {
		char num[16];
		int k = snprintf(num, sizeof(num), "-%u", n);

		int w;

		if (strlen(node) + (size_t)k <= NAME_MAX_LEN) {
			w = snprintf(name, len, "%s%s", node, num);
		} else {
			/* room for the cut node, "-" and 8 hex digits, then num */
			size_t cut = NAME_MAX_LEN - 9 - (size_t)k;

			while (cut > 0 && (node[cut - 1] == '-' || node[cut - 1] == '.'))
				cut--;
			w = snprintf(name, len, "%.*s-%08x%s", (int)cut, node, fnv1a(node), num);
		}
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
		if (!slice_set_get(&p->set, NULL, name))
			return 0;
	}
	return -ENOSPC;
}

/* One step of a node's plan: 0 done, -1 failed (retried later). */
static int write_step(struct peers_ctl *p, const char *node, const struct slice_pack_step *step)
{
	struct registry *r = p->reg;
	const struct kind_info *k = kind_get(KIND_PODPEERSLICE);
	struct status st = { 0 };
	json_t *obj = NULL, *out = NULL;
	char name[NAME_MAX_LEN + 1];
	int rc = 0, err;

	if (step->action == SLICE_PACK_KEEP)
		return 0;
	if (step->action == SLICE_PACK_CREATE) {
		if (new_name(p, node, name, sizeof(name)))
			return -1;
	} else {
		snprintf(name, sizeof(name), "%s", step->name);
	}
	if (step->action == SLICE_PACK_DELETE) {
		err = registry_delete_if(r, k, "", name, 0, REGISTRY_OWNER, &out, &st);
		if (err && st.code != 404) {
			r->metrics->podpeerslice_failures++;
			rc = -1;
			goto out;
		}
		if (!err)
			r->metrics->podpeerslice_deletes++;
		slice_set_put(&p->set, NULL, name, NULL);
		goto out;
	}
	obj = slice_object(name, node, step->endpoints);
	if (!obj || registry_prepare(k, "", name, obj, &st)) {
		if (obj)
			fprintf(stderr, "weft-controller: podpeerslice %s not written: %s\n", name, st.message);
		r->metrics->podpeerslice_failures++;
		rc = -1;
		goto out;
	}
	err = registry_write_checked(r, k, "", obj, REGISTRY_OWNER | (step->action == SLICE_PACK_CREATE ?
								       REGISTRY_CREATE : 0), &out, &st);
	if (err) {
		r->metrics->podpeerslice_failures++;
		rc = -1;
		goto out;
	}
	r->metrics->podpeerslice_writes++;
	slice_set_put(&p->set, NULL, name, record_of(out));
out:
	json_decref(obj);
	json_decref(out);
	return rc;
}

/* node's slices to its entries.  0, or -1 when a write failed. */
static int reconcile_node(struct peers_ctl *p, const char *node)
{
	const json_t *entries = json_object_get(p->nodes, node);
	json_t *want = NULL, *held = NULL;
	struct slice_pack_plan plan = { 0 };
	int rc = -1;

	if (!json_object_size(json_object_get(p->set.by_owner, node)) && !json_object_size(entries))
		return 0;
	want = json_pack("{s:o}", GROUP, entries ? json_incref((json_t *)entries) : json_object());
	if (!want || slice_set_plan(&p->set, NULL, node, NULL, want, p->max, &plan, &held))
		goto out;
	rc = 0;
	for (size_t i = 0; i < plan.n; i++)
		if (write_step(p, node, &plan.steps[i]))
			rc = -1;
out:
	slice_pack_plan_free(&plan);
	json_decref(held);
	json_decref(want);
	return rc;
}

int peers_ctl_reconcile(struct peers_ctl *p)
{
	int64_t now = p->now(p->now_arg), next = INT64_MAX;
	json_t *due;
	const char *node;
	json_t *v;
	int rc = 0;

	if (p->next_due > now)
		return 0;	/* invariant 4: nothing due, nothing looked at */
	due = json_array();
	if (!due)
		return -ENOMEM;
	json_object_foreach(p->dirty, node, v) {
		int64_t at = json_integer_value(v) + p->gather_ms;

		if (at <= now)
			json_array_append_new(due, json_string(node));
		else if (at < next)
			next = at;
	}
	p->next_due = next;
	for (size_t i = 0; i < json_array_size(due); i++) {
		int failed;

		node = json_string_value(json_array_get(due, i));
		json_object_del(p->dirty, node);
		failed = reconcile_node(p, node);
		/* the next write of this node waits a gather from now; a node
		 * without pods starts afresh */
		if (failed || json_object_get(p->nodes, node))
			json_object_set_new(p->written, node, json_integer(now));
		else
			json_object_del(p->written, node);
		if (failed) {
			mark(p, node);	/* retried a gather from now */
			rc = -1;
		}
	}
	json_decref(due);
	return rc;
}
