/*
 * fleet.h — weft-hollow's nodes: N hollow agents in this process, each a
 * struct agent running the agent's own code (lifecycle.c) on maps in memory
 * with agent_kernel_hollow, plus what the runner needs to watch them.
 *
 * Ownership: fleet_create copies nothing it is given but keeps pointers
 * to opts' strings (they must outlive the fleet); fleet_destroy (accepts
 * NULL) stops every agent still running (fleet_stop: nothing to do when the
 * runner stopped them already) and frees everything.  The nodes' tokens
 * are in their token files only: admin.c wipes every copy it received.
 * Threads: fleet_* calls come from one thread (the runner's); the agents
 * run their own threads, and the map-write hook runs in theirs.
 */
#ifndef WEFT_HOLLOW_FLEET_H
#define WEFT_HOLLOW_FLEET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "agent/agent.h"
#include "lib/httpc.h"

struct fleet_opts {
	const char *controller;		/* URL(s), as weft-agent's --controller */
	const char *admin_token_file;	/* issues the nodes' credentials, writes the objects */
	const char *ca_file;		/* NULL: the system's CAs */
	const char *state_dir;		/* STATE/NODE/{token,leases,node.json} */
	const char *prefix;		/* node names PREFIX0001... */
	unsigned nodes;
	unsigned pods_per_node;
	unsigned namespaces;		/* pods spread over hollow-0..hollow-(K-1) */
	unsigned services;		/* ClusterIP services with hand-written Endpoints */
	unsigned endpoints_per_service;
	unsigned starters;		/* threads starting agents and adding pods */
	in_addr_t first_node_ip;	/* network order: node i gets first + i */
	bool pod_peers;			/* a NetworkPolicy naming pods as peers: every
					 * node needs every pod */
	unsigned list_page;		/* each agent's --list-page-size (0: its default) */
};

struct hollow_node {
	struct agent a;
	struct fleet *f;
	unsigned index;
	char name[64];
	char ip[INET_ADDRSTRLEN];
	char dir[1024];			/* its state directory */
	char token_file[1100];
	bool started;
	unsigned pods;			/* pods it added (for convergence) */
	/* the probe: when this node's ipcache got the tracked address (ns
	 * since the fleet's epoch, 0: not yet) */
	_Atomic int64_t track_seen;
};

struct fleet {
	const struct fleet_opts *o;
	struct hollow_node *nodes;	/* o->nodes of them */
	/* the nodes this process runs, [lo, hi): all of them, or a worker's
	 * share (crew.h); every function below works on these only, except
	 * fleet_prepare (every node's credential) */
	unsigned lo, hi;
	struct httpc *admin;
	struct timespec epoch;
	/* the probe: the address whose arrival in each node's ipcache is
	 * timed, 0 for none; how many nodes have it */
	_Atomic uint32_t track_ip;
	atomic_uint track_have;
	/* revisions of the last Service and Endpoints the runner wrote */
	int64_t services_rev, slices_rev;
	uint64_t pods_total;		/* pods the fleet holds (for convergence) */
	/* Pods with an address the cluster had before this fleet (an
	 * earlier run's, on the same controller): a node whose policies
	 * name pods as peers needs them too */
	uint64_t pods_before;
	char **svc_names;		/* "hollow-K/svc-I", o->services of them */
};

struct fleet *fleet_create(const struct fleet_opts *o, char *err, size_t len);
void fleet_destroy(struct fleet *f);

/* ns since the fleet's epoch */
int64_t fleet_now(const struct fleet *f);

/* Namespaces, the Services and their Endpoints (addresses in the node
 * subnets the nodes will get, as hand-written Endpoints may have), and
 * one node credential per node, written to its token file.  0 or -1
 * with err. */
int fleet_prepare(struct fleet *f, char *err, size_t len);

/* Start every agent (o->starters at a time); 0 once all are ready, -1
 * with err when one failed or none got ready within timeout_s. */
int fleet_start(struct fleet *f, unsigned timeout_s, char *err, size_t len);

/* Each node adds o->pods_per_node pods.  0 or -1 with err. */
int fleet_add_pods(struct fleet *f, char *err, size_t len);

/* Whether every node's maps hold every node, the pods it needs (its own;
 * every pod with o->pod_peers), and the services
 * and endpoints up to the revisions the runner wrote.  With why, the
 * first node that does not, and what it lacks. */
bool fleet_converged(struct fleet *f, char *why, size_t len);

/* Stop every agent still running (in parallel).  Once none is — a
 * second call, such as fleet_destroy's after the runner's own — it only
 * reads each node's started flag and returns: no thread, no agent call. */
void fleet_stop(struct fleet *f);

#endif
