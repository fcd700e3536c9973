/*
 * cni_server.h — the agent's CNI endpoint: a unix socket serving the
 * requests weft-cni forwards (lib/cni_proto.h), with everything the CNI
 * specification says about them (docs/cni.md): validation of the
 * environment and the network configuration, version negotiation (1.0.0,
 * 1.1.0 and the older ones CHECK refuses), CNI_ARGS parsing, result and
 * error JSON.  What an operation does to the node is the agent's: the
 * server calls the cni_ops it was given.
 *
 * Concurrency: one thread per connection, at most CNI_SERVER_MAX_ACTIVE at
 * once (the rest wait in the listen backlog).  ADD, DEL, CHECK and STATUS
 * run in parallel (the ops must lock what they share); GC runs alone.
 */
#ifndef WEFT_AGENT_CNI_SERVER_H
#define WEFT_AGENT_CNI_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <netinet/in.h>

#include "lib/cni_proto.h"	/* enum cni_code: the specification's codes */

#define CNI_SERVER_MAX_ACTIVE 64
#define CNI_SERVER_RECV_TIMEOUT_MS 5000	/* for a request to arrive whole */

/* weft's own CNI error codes (the specification's are enum cni_code in
 * lib/cni_proto.h); docs/cni.md explains each to users. */
enum cni_weft_code {
	CNI_ERR_EXHAUSTED = 100,	/* ADD: the node's pod subnet has no free IP */
	CNI_ERR_IF_EXISTS = 101,	/* ADD: CNI_IFNAME already exists in the pod */
	CNI_ERR_NETNS = 102,		/* ADD/CHECK: CNI_NETNS not found or not openable */
	CNI_ERR_MAP_FULL = 103,		/* ADD: a data-plane (eBPF) map is full */
	CNI_ERR_CHECK = 104,		/* CHECK: what ADD made is no longer all there */
};

enum cni_cmd { CNI_ADD = 1, CNI_DEL, CNI_CHECK, CNI_GC, CNI_STATUS };

struct cni_attachment {
	const char *container_id;
	const char *ifname;
};

/* A validated request; every pointer is borrowed for the call. */
struct cni_req {
	enum cni_cmd cmd;
	const char *cni_version;	/* the configuration's */
	const char *network;		/* config "name" */
	const char *container_id;	/* ADD/DEL/CHECK */
	const char *ifname;		/* ADD/DEL/CHECK */
	const char *netns;		/* may be NULL (DEL) */
	int netns_fd;			/* -1 when the plugin could not pass one;
					 * closed after the op (dup to keep) */
	const char *pod_namespace;	/* K8S_POD_NAMESPACE or NULL */
	const char *pod_name;		/* K8S_POD_NAME or NULL */
	const json_t *config;		/* the whole configuration */
	const json_t *prev_result;	/* CHECK (and chained ADD), or NULL */
	const struct cni_attachment *valid;	/* GC: the attachments to keep */
	size_t n_valid;
};

/* What ADD made, for the result. */
struct cni_add_result {
	char host_ifname[16];
	uint8_t host_mac[6];
	char pod_ifname[16];
	uint8_t pod_mac[6];
	int mtu;			/* reported from 1.1.0 on; 0: omitted */
	in_addr_t ip;			/* /32, network order */
	in_addr_t gateway;		/* network order */
};

/* struct cni_err (lib/cni_proto.h) carries an op's failure to the reply. */

/* Each returns 0, or non-zero with err filled (err arrives zeroed; a
 * failure left at code 0 is reported as 5 "I/O failure").  status: 0 =
 * ready, else err->code 50 or 51.  A failed ADD must have undone what it
 * did. */
struct cni_ops {
	int (*add)(void *ctx, const struct cni_req *req, struct cni_add_result *res,
		   struct cni_err *err);
	int (*del)(void *ctx, const struct cni_req *req, struct cni_err *err);
	int (*check)(void *ctx, const struct cni_req *req, struct cni_err *err);
	int (*gc)(void *ctx, const struct cni_req *req, struct cni_err *err);
	int (*status)(void *ctx, const struct cni_req *req, struct cni_err *err);
	/* optional: told of each request answered, with the time the op took
	 * (ns) and whether it failed */
	void (*done)(void *ctx, enum cni_cmd cmd, uint64_t ns, bool failed);
};

struct cni_server;

/* Listen on path (an existing socket file is replaced; mode 0600) and
 * serve in background threads.  NULL with errno set and a message:
 * EADDRINUSE when another agent answers on path, EEXIST when path is not
 * a socket, ENAMETOOLONG, EINVAL when an op is missing.  The parent
 * directory is created (one level, 0755) when missing.  ops and ctx are
 * borrowed until cni_server_stop returns. */
struct cni_server *cni_server_start(const char *path, const struct cni_ops *ops, void *ctx,
				    char *errbuf, size_t errlen);
/* Stop accepting, wait for requests in flight (a client that sends
 * nothing holds this up at most CNI_SERVER_RECV_TIMEOUT_MS), remove the
 * socket file if it is still the one start made.  Connections still in
 * the backlog are reset (their plugins answer "try again later"). */
void cni_server_stop(struct cni_server *srv);	/* accepts NULL */

/* Pure functions, exposed for tests: turn one request (the JSON the plugin
 * sent, plus its fd) into the response JSON text (malloc'ed, caller
 * frees).  Used by the server threads; never fails (errors become CNI
 * error replies) except out of memory (NULL).  netns_fd is borrowed: it
 * stays open, the caller closes it.  Takes no lock: the server holds its
 * GC lock around the op. */
char *cni_server_handle(const struct cni_ops *ops, void *ctx, const char *request, int netns_fd);

#endif
