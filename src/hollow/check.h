/*
 * check.h — whether every hollow node's maps say what the cluster says:
 * the Nodes, Pods, NetNamespaces, Services and Endpoints listed from the
 * controller, each turned into the entries a node must hold, compared
 * entry by entry with each node's maps.
 */
#ifndef WEFT_HOLLOW_CHECK_H
#define WEFT_HOLLOW_CHECK_H

#include <stddef.h>
#include "hollow/fleet.h"

struct check_result {
	unsigned nodes_checked;
	unsigned nodes_wrong;
	uint64_t entries_checked;	/* map entries compared, over all nodes */
	char first[512];		/* the first difference found ("" none) */
};

/* 0 with *res filled (a difference is not an error), or -1 with err when
 * the cluster could not be listed. */
int check_fleet(struct fleet *f, struct check_result *res, char *err, size_t len);

#endif
