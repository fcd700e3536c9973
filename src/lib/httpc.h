/*
 * httpc.h — a small HTTP/1.1 client for talking to weft-controller: one
 * handle per server, kept-alive connections, bounded responses, and
 * line-by-line streaming for watches.  Built on libcurl.
 *
 * How it works: a struct httpc wraps one curl easy handle.  Every call
 * resets the handle's options (curl_easy_reset keeps live connections, so
 * consecutive requests reuse one TCP connection) and sets them again, so
 * no option leaks from one request into the next.
 *
 * Invariants
 *  1. The library never prints.  A failed call returns a negative errno and
 *     writes one line into the caller's err buffer that names the server
 *     ("cannot reach http://127.0.0.1:8080: Connection refused").
 *  2. An HTTP error status is not a failure of the call: httpc_request
 *     returns 0 and the caller reads resp->status and resp->body.
 *  3. A response body is never larger than opt->max_body (default
 *     HTTPC_MAX_BODY); a longer one fails with -EMSGSIZE.  In a stream the
 *     bound applies to each line, not to the whole stream.
 *  4. The bearer token is read once, at create time, from a file (trailing
 *     newline and blanks stripped) or copied from opt->token; it lives only
 *     in the handle's header list, which is wiped before it is freed.  It is
 *     never put in an error message.
 *  5. An https server's certificate is always verified (chain and host
 *     name), against the CA given (ca_file or ca_pem) or else the system's
 *     trust store.  Only insecure_skip_tls_verify, which a user has to ask
 *     for by name, turns that off.  A certificate that does not verify
 *     fails the call with -EPROTO and curl's reason ("SSL certificate
 *     problem: ...").  With pinned_key, the server's public key is what is
 *     verified: its pin must be that one (a server whose certificate it
 *     signed itself, published out of band), or the call fails with -EPROTO.
 *
 *  6. Failover: with several server URLs a request goes to the current
 *     one; when that cannot be reached (refused, no route, connect timeout,
 *     a failed TLS handshake: nothing was sent), to the next, each once, and the handle stays on
 *     the first that answered.  A request that reached a server is never
 *     sent again (it may have been applied), nor is a broken stream.
 *
 * Ownership: httpc_create copies everything it is given; httpc_destroy
 * (accepts NULL) frees the handle.  A struct httpc_response is filled by
 * httpc_request / httpc_stream and owned by the caller, who releases it
 * with httpc_response_free (which accepts a zeroed or freed response).
 * The request body is borrowed for the duration of the call.
 *
 * Threads: one handle is used by one thread at a time; httpc_cancel is the
 * exception (it may be called from any thread or a signal handler).
 */
#ifndef WEFT_HTTPC_H
#define WEFT_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTPC_MAX_BODY (64u << 20)	/* 64 MiB */
#define HTTPC_MAX_TOKEN 16384		/* a token file larger than this is refused */
#define HTTPC_MAX_SERVERS 8		/* replicas in one server list */

struct httpc;

struct httpc_options {
	const char *server;		/* "http://127.0.0.1:8080" (required; a trailing '/' is dropped), or
					 * several, comma-separated: replicas of one API (invariant 6) */
	const char *token_file;		/* NULL: requests carry no Authorization header */
	const char *token;		/* or the token itself (copied); not with token_file */
	const char *ca_file;		/* https: trust the PEM certificates of this file (read at create) */
	const char *ca_pem;		/* ... or these (ca_len bytes, copied); not with ca_file */
	size_t ca_len;
	bool insecure_skip_tls_verify;	/* https: verify nothing; only when a user asked for it */
	const char *pinned_key;		/* https: the server is whoever holds this key ("sha256//BASE64",
					 * the pin of its public key), whatever signed its certificate:
					 * instead of a CA, not with one (invariant 5) */
	const char *cert_file;		/* https: present this client certificate (PEM) ... */
	const char *key_file;		/* ... with this key (PEM); both or neither */
	const char *auth_scheme;	/* "Authorization: SCHEME TOKEN"; NULL: "Bearer"; "": the token alone
					 * (etcd's gateway wants its token so) */
	long connect_timeout_ms;	/* 0: 10 s */
	long timeout_ms;		/* whole request, httpc_request only; 0: no limit */
	size_t max_body;		/* 0: HTTPC_MAX_BODY */
	const char *user_agent;		/* NULL: "weft-httpc" */
	void (*connected)(void *arg);	/* NULL, or called in the calling thread for each
					 * request once its connection is up (TLS too; new or
					 * kept alive), before the request is sent: e.g. a
					 * stream's server is reached */
	void *connected_arg;
};

struct httpc_response {
	long status;			/* HTTP status, e.g. 200 or 404 */
	char *body;			/* malloc'd, NUL-terminated ("" when empty); owned by the caller */
	size_t len;			/* bytes in body, without the NUL */
	long retry_after;		/* seconds of a Retry-After header (a number or a date from
					 * now, as curl reads it); 0: none */
};

/* A handle for opt->server.  NULL with errno set (EINVAL: bad URL, a CA
 * file without a PEM certificate, token and token_file both given; the
 * token or CA file's errno, ENOMEM) and a message in err. */
struct httpc *httpc_create(const struct httpc_options *opt, char *err, size_t errlen);
void httpc_destroy(struct httpc *h);

/* The server URL requests go to now (without a trailing '/'); borrowed
 * from h, valid until the next call on h. */
const char *httpc_server(const struct httpc *h);

/*
 * One request: METHOD SERVER+path, with body (len bytes, NULL for none; sent
 * as application/json).  path starts with '/' and may carry a query string.
 * 0 with *resp filled (whatever the HTTP status), or a negative errno:
 *   -ECONNREFUSED etc.  the server could not be reached
 *   -EPROTO             TLS failed: the handshake, or the server's certificate
 *                       does not verify (the message says why)
 *   -ETIMEDOUT          connect or request timeout
 *   -EMSGSIZE           response body over the bound
 *   -ECANCELED          httpc_cancel was called
 *   -EINTR              the interrupt (httpc_set_interrupt) said so
 *   -EINVAL             bad method or path
 *   -EIO                any other transfer failure
 * On failure *resp is zeroed (nothing to free).
 */
int httpc_request(struct httpc *h, const char *method, const char *path,
		  const char *body, size_t len, struct httpc_response *resp,
		  char *err, size_t errlen) __attribute__((warn_unused_result));

/* The same with a body of another media type than application/json
 * (content_type, e.g. "application/merge-patch+json"; printable ASCII, at
 * most 200 bytes, else -EINVAL; NULL: application/json). */
int httpc_request_typed(struct httpc *h, const char *method, const char *path, const char *content_type,
			const char *body, size_t len, struct httpc_response *resp, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * Called for each complete line of a streamed response, without its '\n'
 * (and without a '\r' before it); line is NUL-terminated and borrowed for
 * the call only.  Empty lines are skipped.  Return 0 to go on, a negative
 * errno to stop the stream with that error, or a positive value to stop
 * it cleanly (httpc_stream then returns 0).
 */
typedef int (*httpc_line_fn)(const char *line, size_t len, void *arg);

/*
 * GET SERVER+path and hand a 2xx response to fn one line at a time as it
 * arrives (a watch: chunked, one JSON event a line).  No request timeout
 * applies.  When the stream ends cleanly, a last line without '\n' is
 * handed over too.  A non-2xx response is not streamed: its body is
 * gathered into resp as httpc_request does, and fn is never called.
 * resp->status is set in both cases; resp->body is "" after a stream.
 * Returns 0 when the server ended the response (or fn stopped it with a
 * positive value), else a negative errno as for httpc_request, or fn's.
 */
int httpc_stream(struct httpc *h, const char *path, httpc_line_fn fn, void *arg,
		 struct httpc_response *resp, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The same, for a POST with a JSON body (borrowed for the call): etcd's
 * gateway streams a watch as the answer to a POST. */
int httpc_stream_post(struct httpc *h, const char *path, const char *body, size_t len, httpc_line_fn fn, void *arg,
		      struct httpc_response *resp, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Replace the token later requests carry (NULL: none), e.g. after a new
 * login.  0, -EINVAL (a control character) or -ENOMEM (the old headers
 * stay).  Not while a call runs on h. */
int httpc_set_token(struct httpc *h, const char *token) __attribute__((warn_unused_result));

/* Make the running call (if any) and every later call on h fail with
 * -ECANCELED, within about a second.  Async-signal-safe; for shutdown. */
void httpc_cancel(struct httpc *h);

/* While a call runs on h, ask fn(arg) about once a second (on the
 * calling thread): when it answers true, the call ends with -EINTR.  For
 * a watch whose question has changed (the agent's Pods watch, when the
 * node comes to need every pod).  fn NULL: none.  Not while a call runs. */
void httpc_set_interrupt(struct httpc *h, bool (*fn)(void *arg), void *arg);

/* Response body bytes (as the server sent them, after TLS; watch streams
 * included) that every handle of this process has received so far: what
 * the controller sent the process, for benchmarks. */
uint64_t httpc_body_bytes_received(void);

/* Free resp's body and zero it. */
void httpc_response_free(struct httpc_response *resp);

#endif
