/*
 * peerslice.h — other nodes' pods as NetworkPolicy peers, from the
 * controller's PodPeerSlices (model.h, "PodPeerSlices"): watched by sync.c
 * only while some NetworkPolicy names pods as peers (policy_needs_pods).
 *
 * Each pod of a slice goes where a Pod of the old every-pod watch went:
 * into the pod cache (a->pods, so its address gets its node and VNID in
 * weft_ipcache: remote.c) and to the policy compiler as a peer
 * (policy_peer_set, with its identity's labels and named ports).  The
 * slices of this node are skipped: its own pods come from its Pods watch,
 * which is the source that knows them first.
 *
 * A slice's event carries the slice whole, so the table keeps, per slice,
 * the pods it last applied ("ns/name"): a pod that left the slice is
 * forgotten, unless something newer holds it (the Pods watch, or another
 * node's slice: a pod deleted and made again elsewhere).
 *
 * Every call runs under agent.lock (the watch threads).  Objects are
 * borrowed; what is kept is copied.
 */
#ifndef WEFT_AGENT_PEERSLICE_H
#define WEFT_AGENT_PEERSLICE_H

#include <stdint.h>

#include "lib/hmap.h"
#include "lib/jview.h"

struct agent;

struct peerslice_table {
	struct hmap slices;	/* struct pslice by name */
	uint32_t gen;		/* the list being applied */
	bool listing;		/* between peerslice_begin and _listed */
	size_t pods;		/* pods held, in all slices */
};

/* The watch hooks of the "podpeerslices" kind (sync.c). */
void peerslice_begin(struct agent *a);
void peerslice_apply(struct agent *a, struct jval obj);
void peerslice_remove(struct agent *a, struct jval obj);
void peerslice_listed(struct agent *a);
/* No policy names pods as peers any more: forget every slice and its
 * pods (the other nodes' pods leave the cache, the policy and
 * weft_ipcache). */
void peerslice_clear(struct agent *a);
void peerslice_free(struct peerslice_table *t);

#endif
