/*
 * ctl.h — what every weftctl verb shares: the connection to weft-controller,
 * calls that parse JSON replies, the way server errors are printed, kinds and
 * names as users type them, and the exit codes.
 *
 * weftctl is a command, not a library: the functions here print to stderr
 * where their comment says so, so that every verb reports the same failure
 * the same way:
 *   - connection / transport failure:  "error: cannot reach URL: why"
 *   - an HTTP error status:            "Error from server (Reason): message"
 *   - a bad argument:                  "error: ..." (+ usage, exit 2)
 *
 * Ownership: struct ctl is main's; ctl_http creates ctl->http on first use
 * and main destroys it.  A struct ctl_reply is filled by ctl_call and freed
 * by the caller with ctl_reply_free.
 */
#ifndef WEFT_CTL_H
#define WEFT_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/httpc.h"
#include "model/model.h"

#define CTL_VERSION "0.1.0"
#define CTL_DEFAULT_SERVER "https://127.0.0.1:8080"
#define CTL_DEFAULT_NAMESPACE "default"
#define CTL_PATH_MAX 1024
#define CTL_REF_MAX 512
#define CTL_ERR_MAX 16384
/* a collection path with both selectors percent-encoded (4096 bytes each) */
#define CTL_LIST_PATH_MAX (CTL_PATH_MAX + 2 * 3 * 4096 + 256)

enum { CTL_EXIT_OK = 0, CTL_EXIT_FAIL = 1, CTL_EXIT_USAGE = 2 };

/*
 * Where the connection's settings come from, first found wins (kubectl's
 * order: flags, then the environment, then the kubeconfig):
 *   server  --server, $WEFT_SERVER, the kubeconfig's cluster, CTL_DEFAULT_SERVER
 *   token   --token-file, $WEFT_TOKEN_FILE, the kubeconfig's user (token, tokenFile)
 *   CA      --certificate-authority, the kubeconfig's cluster
 *           (certificate-authority-data, certificate-authority), the system's
 *   kubeconfig  --kubeconfig FILE, else the first file of $KUBECONFIG (a
 *           list split on ':') that exists, else ~/.kube/config if it exists
 * insecure-skip-tls-verify is honoured only from the kubeconfig, and only
 * when no CA is given by flag.
 */
struct ctl {
	const char *prog;		/* "weftctl", for messages */
	const char *server;		/* --server or $WEFT_SERVER; NULL: see above */
	const char *token_file;		/* --token-file, $WEFT_TOKEN_FILE or NULL */
	const char *kubeconfig;		/* --kubeconfig or NULL */
	const char *ca_file;		/* --certificate-authority or NULL */
	char trust[600];		/* the CA used, in words, for TLS errors (ctl_http) */
	struct httpc *http;		/* made by ctl_http on first use; main destroys it */
};

/* A verb: argv[0] is the verb's name; returns the process exit code. */
typedef int (*ctl_verb_fn)(struct ctl *ctl, int argc, char **argv);

struct ctl_verb {
	const char *name;
	ctl_verb_fn run;
	const char *usage;		/* arguments after the name */
	const char *summary;
};

int ctl_apply(struct ctl *ctl, int argc, char **argv);
int ctl_get(struct ctl *ctl, int argc, char **argv);
int ctl_delete(struct ctl *ctl, int argc, char **argv);
int ctl_describe(struct ctl *ctl, int argc, char **argv);
int ctl_podnetwork(struct ctl *ctl, int argc, char **argv);
int ctl_drops(struct ctl *ctl, int argc, char **argv);
int ctl_policy_log(struct ctl *ctl, int argc, char **argv);
int ctl_nodecred(struct ctl *ctl, int argc, char **argv);
int ctl_patch(struct ctl *ctl, int argc, char **argv);
int ctl_can_reach(struct ctl *ctl, int argc, char **argv);
int ctl_trace(struct ctl *ctl, int argc, char **argv);
int ctl_flows(struct ctl *ctl, int argc, char **argv);

/* describe networkpolicy's part after the object's fields: the pods it
 * selects now and what each rule matches now (describe_netpol.c). */
void ctl_describe_networkpolicy(struct ctl *ctl, const json_t *obj);

/* What `get -w` watches and how it prints (watch.c). */
struct ctl_watch_opts {
	const struct kind_info *k;
	const char *ns;			/* NULL for a cluster-scoped kind */
	bool all;			/* -A */
	const char *labels, *fields;	/* selectors, NULL: none */
	char **names;			/* only these objects (nnames 0: all) */
	size_t nnames;
	int out;			/* enum ctl_output (print.h) */
	long timeout_s;			/* end the command after so long; 0: never */
};
/* List and print, then watch and print each event until the timeout or
 * SIGINT/SIGTERM (exit 0) or an error (printed, exit 1). */
int ctl_watch(struct ctl *ctl, const struct ctl_watch_opts *o);

/* The connection, made on first use.  NULL after printing why (no token,
 * unreadable token or CA file, a kubeconfig that cannot be used, bad
 * server URL). */
struct httpc *ctl_http(struct ctl *ctl);

struct ctl_reply {
	long status;
	json_t *json;		/* the body parsed, or NULL when it is not JSON */
	char *body;		/* the raw body, NUL-terminated */
	size_t len;
	char json_error[200];	/* why json is NULL ("" when the body is empty) */
};

/*
 * METHOD path with body (serialised compactly; NULL for none).  0 with *r
 * filled whatever the HTTP status; or a negative errno after printing the
 * transport failure ("error: cannot reach ...") — the caller just stops.
 * -ECANCELED (httpc_cancel, from a signal the verb handles) is not printed.
 */
int ctl_call(struct ctl *ctl, const char *method, const char *path, const json_t *body, struct ctl_reply *r)
	__attribute__((warn_unused_result));
/* The same with a body of media type content_type (NULL: application/json). */
int ctl_call_typed(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		   const json_t *body, struct ctl_reply *r) __attribute__((warn_unused_result));
/* The same with a body already serialised (text, len bytes; NULL for none). */
int ctl_call_text(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		  const char *text, size_t len, struct ctl_reply *r) __attribute__((warn_unused_result));
void ctl_reply_free(struct ctl_reply *r);

static inline bool ctl_ok(const struct ctl_reply *r) { return r->status >= 200 && r->status < 300; }

/* The JSON object of a successful reply to METHOD path; NULL after
 * printing why there is none, e.g. "error: the server's answer to GET
 * /api/v1/pods is not valid JSON: line 1, column 2049: maximum parsing
 * depth reached".  Borrowed from r. */
const json_t *ctl_reply_object(const struct ctl_reply *r, const char *method, const char *path);
/* The items of a successful list reply: a JSON list, or JSON null (no
 * items; json_array_size and json_array_foreach see an empty list).  NULL
 * after printing why the reply is not a list.  Borrowed from r. */
const json_t *ctl_reply_items(const struct ctl_reply *r, const char *method, const char *path);

/* GET path, a list: its items (as ctl_reply_items: borrowed from *r, which
 * the caller frees either way), or NULL after printing why there are none
 * (the transport failed, the server answered an error, not a list). */
const json_t *ctl_list(struct ctl *ctl, const char *path, struct ctl_reply *r);

/* The Status reason of an error reply ("Conflict"), from the body or else
 * from the code; "HTTP 418" for codes without a name.  buf: >= 32 bytes. */
const char *ctl_reason(const struct ctl_reply *r, char *buf, size_t len);
/* The Status message, or the start of a non-JSON body, or "" . */
const char *ctl_message(const struct ctl_reply *r, char *buf, size_t len);
/* "Error from server (Reason): message" on stderr. */
void ctl_print_server_error(const struct ctl_reply *r);
/* The same for a stream's response that was not 2xx (its body gathered). */
void ctl_print_stream_error(const struct httpc_response *resp);
/* "Error from server (NotFound): pods \"x\" not found" on stderr. */
void ctl_print_not_found(const struct kind_info *k, const char *name);

/* A kind as the user typed it (kind_lookup); NULL after printing
 * `error: the server doesn't have a resource type "x"`. */
const struct kind_info *ctl_kind(const char *arg);
/* A name or namespace from the command line: true if it can be put in a
 * path; else prints `error: invalid WHAT "x"` and returns false. */
bool ctl_name_ok(const char *what, const char *name);
/* The one object a verb names, in argv[first..argc): KIND NAME or
 * KIND/NAME.  0 with *k and *name (borrowed from argv), or the exit code
 * after printing why (usage, or an unknown kind or bad name). */
int ctl_one_object(const struct ctl *ctl, const char *verb, const char *usage, int argc, char **argv, int first,
		   const struct kind_info **k, const char **name);
/* "service/red/x", or "node/x" for a cluster-scoped kind (or ns NULL/""). */
const char *ctl_ref(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len);
/* model_api_path that cannot fail for names that passed ctl_name_ok
 * (a too-long path gives "/" which the server refuses). */
const char *ctl_path(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len);

/* Append "?name=value" (or "&name=value") to the NUL-terminated path,
 * the value percent-encoded (RFC 3986 unreserved bytes kept).  false when
 * it does not fit in len bytes (path is then cut back to what it was). */
bool ctl_path_add_query(char *path, size_t len, const char *name, const char *value);
/* The path of k's collection in ns (every namespace when all, or for a
 * cluster-scoped kind) with labelSelector / fieldSelector (NULL: none).
 * 0, or CTL_EXIT_USAGE after printing that the selectors are too long;
 * len: CTL_LIST_PATH_MAX. */
int ctl_list_path(const struct kind_info *k, const char *ns, bool all, const char *labels, const char *fields,
		  char *path, size_t len);
/* "SECONDS" or "SECONDSs", 0 to 31536000 (a year): 0 and *secs, or -EINVAL. */
int ctl_seconds_parse(const char *s, long *secs);

/* Flag parsing: prints "error: unknown flag ..." or "... needs a value"
 * for getopt's '?' / ':' (optstring must start with ':'). */
void ctl_bad_flag(int c, char **argv);
/* "usage: weftctl VERB ARGS" on stderr; returns CTL_EXIT_USAGE. */
int ctl_usage(const struct ctl *ctl, const char *verb, const char *args);

#endif
