/*
 * flowserve.h — the node's flows served over TLS to the cluster's relay
 * (docs/flows.md): GET https://NODE-IP:9967/v1/flows, JSON lines.
 *
 * Who may read: a client whose certificate the cluster CA signed for TLS
 * clients, with the CommonName the agent was told (the controller's
 * relay, "weft-flows-relay").  Anyone else is refused at the request
 * (403), after the handshake.
 *
 * Who the agent is: a key made at each start (ECDSA P-256, in memory
 * only) and a certificate it signs itself.  The agent publishes the
 * key's pin (flowserve_pin) on its Node, which only its own credential
 * and the admin may write, and the relay pins it: no CA has to sign for
 * a node, and a key never lands on disk.
 *
 * While a client follows (?follow=true), the flow log has one more
 * listener, so the programs report forwarded packets too; the listener
 * ends with the connection.
 *
 * Ownership: the server borrows log and the namer's context, which must
 * outlive it; flowserve_stop ends every stream and frees all (NULL: none).
 */
#ifndef WEFT_AGENT_FLOWSERVE_H
#define WEFT_AGENT_FLOWSERVE_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/flowlog.h"
#include "lib/x509.h"

#define FLOWSERVE_PORT 9967
#define FLOWSERVE_CLIENT_CN "weft-flows-relay"
#define FLOWSERVE_CONNS 8		/* streams at once, all clients */
#define FLOWSERVE_LINE_MAX 640		/* one event's JSON line, newline included */

/* ip's pod as "NAMESPACE/NAME" into buf, or anything without a '/'
 * (the address) when it is no pod the node knows. */
typedef void (*flowserve_namer)(void *ctx, in_addr_t ip, char *buf, size_t len);

struct flowserve_opts {
	struct sockaddr_in addr;	/* where to listen */
	const char *node;		/* the node's name: in each event, and the certificate's CN */
	const char *client_ca_pem;	/* the CA a client's certificate must chain to */
	const char *client_cn;		/* ... and the CommonName it must have */
	struct flowlog *log;
	flowserve_namer name;
	void *name_ctx;
};

struct flowserve;

/* Listening, or NULL with why in err. */
struct flowserve *flowserve_start(const struct flowserve_opts *o, char *err, size_t errlen);
void flowserve_stop(struct flowserve *fs);

/* The port it listens on (the one the kernel chose for port 0). */
unsigned flowserve_port(const struct flowserve *fs);

/* The pin of the server's public key ("sha256//BASE64", x509.h). */
const char *flowserve_pin(const struct flowserve *fs);

/* The certificate the server presents (PEM), for a client that trusts
 * it directly (the tests). */
const char *flowserve_cert_pem(const struct flowserve *fs);

/* One event as its JSON line (with the newline) into buf: its sequence
 * number, the wall-clock time (realtime - monotonic offset in ns added to
 * the event's monotonic time), node, verdict, event, reason, protocol,
 * source and destination (ip, port, pod when name knows it), where it was
 * seen, the tunnel's VNI and node.  The length written (< len), or 0 when
 * it does not fit. */
size_t flowserve_format(const struct weft_flow *e, uint64_t seq, int64_t wall_offset_ns, const char *node,
			flowserve_namer name, void *name_ctx, char *buf, size_t len);

#endif
