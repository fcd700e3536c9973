/*
 * cni_proto.h — the wire format between the weft-cni plugin and the agent's
 * CNI socket (a unix stream socket, one request per connection).
 *
 *   plugin -> agent : frame(request JSON) [+ SCM_RIGHTS: fd of CNI_NETNS]
 *   agent  -> plugin: frame(response JSON)
 *
 * A frame is a 4-byte big-endian length followed by that many bytes; a
 * length above CNI_PROTO_MAX is refused by both sides.
 *
 * Request:  {"command":"ADD","containerID":"..","netns":"..","ifname":"..",
 *            "args":"K=V;..","path":"..","config":"<stdin, verbatim>"}
 *           (absent environment variables are absent keys)
 * Response: {"exit":0,"stdout":"<what the plugin prints on stdout>"}
 *
 * The plugin sends the netns as an fd as well as a path when it could open
 * it, so the agent need not share the runtime's mount namespace.
 *
 * Beside the framing, the few facts of the CNI specification that both
 * ends check (docs/cni.md): the error codes, the versions, the
 * container ID and interface name rules, the error JSON.
 * Functions return 0 or -errno and never print.
 */
#ifndef WEFT_LIB_CNI_PROTO_H
#define WEFT_LIB_CNI_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#define CNI_PROTO_MAX (1u << 20)
/* The largest network configuration the plugin accepts on stdin: half a
 * frame, so that the configuration escaped into a request still fits. */
#define CNI_CONFIG_MAX (CNI_PROTO_MAX / 2)
#define CNI_DEFAULT_SOCKET "/run/weft/cni.sock"
/* weft's bound on a container ID and a network name (the spec has none) */
#define CNI_ID_MAX 255
#define CNI_NETNS_MAX 4095		/* CNI_NETNS path length */
#define CNI_IFNAME_MAX 15

/* The newest version weft speaks, and the answer to VERSION. */
#define CNI_PROTO_VERSION "1.1.0"
#define CNI_PROTO_VERSION_REPLY                                                  \
	"{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\","  \
	"\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"

/* Error codes of the CNI specification.  weft's own (>= 100) are in
 * agent/cni_server.h (enum cni_weft_code). */
enum cni_code {
	CNI_ERR_VERSION = 1,		/* incompatible CNI version */
	CNI_ERR_UNSUPPORTED_FIELD = 2,	/* names the key and the value */
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_ENV = 4,		/* invalid / missing environment variables */
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,		/* bad JSON, bad version string */
	CNI_ERR_CONFIG = 7,		/* invalid network configuration */
	CNI_ERR_TRY_LATER = 11,
	CNI_ERR_NOT_AVAILABLE = 50,	/* STATUS: ADD would fail */
	CNI_ERR_NOT_AVAILABLE_LOSING = 51,	/* STATUS: and pods may lose connectivity */
};

/* Write one frame; fd_to_pass >= 0 rides along as SCM_RIGHTS (the caller
 * keeps its fd).  -EMSGSIZE over CNI_PROTO_MAX, -ETIMEDOUT when a send
 * timeout (SO_SNDTIMEO) expired, -EPIPE/-ECONNRESET when the peer left.
 * Never raises SIGPIPE. */
int cni_proto_send(int sock, const char *buf, size_t len, int fd_to_pass)
	__attribute__((warn_unused_result));
/* Read one frame into a malloc'ed NUL-terminated buffer (*buf, caller
 * frees); *fd_out (may be NULL) receives a passed fd (close-on-exec, the
 * caller's to close) or -1.  -EMSGSIZE over CNI_PROTO_MAX, -ECONNRESET on a
 * short read (or none at all), -ETIMEDOUT when SO_RCVTIMEO expired.  On
 * failure nothing is returned: *buf is NULL and any passed fd is closed. */
int cni_proto_recv(int sock, char **buf, size_t *len, int *fd_out)
	__attribute__((warn_unused_result));

/* One of the versions in CNI_PROTO_VERSION_REPLY, spelled exactly. */
bool cni_proto_version_supported(const char *version);

/* CNI_CONTAINERID (and the network "name"): non-empty,
 * ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$, at most CNI_ID_MAX bytes.
 * 0, -EINVAL (characters) or -ENAMETOOLONG. */
int cni_proto_check_id(const char *id);
/* CNI_IFNAME: 1..15 bytes, not "." or "..", no '/', ':' or whitespace.
 * 0, or -EINVAL with *why (static text, may be NULL) saying which rule. */
int cni_proto_check_ifname(const char *ifname, const char **why);

/* The CNI error object, one line with a trailing newline:
 * {"cniVersion":..,"code":N,"msg":"..","details":".."}.  cni_version is
 * used when supported, else CNI_PROTO_VERSION; msg and details may be NULL
 * and need not be valid UTF-8 (bad bytes become '?').  Malloc'ed, caller
 * frees; NULL only when out of memory. */
char *cni_proto_error_json(const char *cni_version, int code, const char *msg,
			   const char *details);

/* A CNI error on its way to a reply: code (enum cni_code, or weft's own
 * >= 100), a message and details.  Used by the plugin and the agent. */
struct cni_err {
	int code;
	char msg[512];
	char details[1024];
};

/* Fill e (msg from fmt, details verbatim, NULL for none); returns -1. */
int cni_err_set(struct cni_err *e, int code, const char *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* o as compact JSON plus a newline, as the plugin prints it.  Malloc'ed,
 * caller frees; NULL when out of memory.  o is borrowed. */
struct json_t;
char *cni_proto_json_line(const struct json_t *o);

#endif
