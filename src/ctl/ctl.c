/*
 * ctl.c — the connection, calls and error reporting every weftctl verb
 * shares (see ctl.h).
 */
#include "ctl/ctl.h"

#include "lib/kubeconfig.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUEST_TIMEOUT_MS 120000L

/* The kubeconfig to read (ctl.h): path into buf, or NULL for none.
 * *named: the user named it (then it must exist). */
static const char *kubeconfig_path(const struct ctl *ctl, char *buf, size_t len, bool *named)
{
	const char *list = getenv("KUBECONFIG"), *home = getenv("HOME");

	*named = false;
	if (ctl->kubeconfig && ctl->kubeconfig[0]) {
		*named = true;
		return ctl->kubeconfig;
	}
	if (list && list[0]) {
		/* kubectl merges every file of the list; weftctl reads the first that exists */
		for (const char *p = list; *p;) {
			size_t n = strcspn(p, ":");

			if (n && n < len) {
				snprintf(buf, len, "%.*s", (int)n, p);
				if (access(buf, F_OK) == 0)
					return buf;
			}
			p += n + (p[n] == ':');
		}
		return NULL;
	}
	if (home && home[0] && (size_t)snprintf(buf, len, "%s/.kube/config", home) < len && access(buf, F_OK) == 0)
		return buf;
	return NULL;
}

struct httpc *ctl_http(struct ctl *ctl)
{
	struct httpc_options opt = {
		.server = ctl->server,
		.token_file = ctl->token_file && ctl->token_file[0] ? ctl->token_file : NULL,
		.ca_file = ctl->ca_file && ctl->ca_file[0] ? ctl->ca_file : NULL,
		.timeout_ms = REQUEST_TIMEOUT_MS,
		.user_agent = "weftctl/" CTL_VERSION,
	};
	struct kubeconfig kc = { 0 };
	char err[1024], pathbuf[4096];
	bool named;
	const char *kc_path = kubeconfig_path(ctl, pathbuf, sizeof(pathbuf), &named);

	if (ctl->http)
		return ctl->http;
	if (kc_path && kubeconfig_load(kc_path, &kc, err, sizeof(err))) {
		fprintf(stderr, "error: %s%s\n", err, named ? " (--kubeconfig)" : "");
		return NULL;
	}
	if (!opt.server || !opt.server[0])
		opt.server = kc.server ? kc.server : CTL_DEFAULT_SERVER;
	if (!opt.token_file) {
		opt.token = kc.token;
		opt.token_file = kc.token_file;
	}
	if (opt.ca_file) {
		snprintf(ctl->trust, sizeof(ctl->trust), "the CA of --certificate-authority %s", opt.ca_file);
	} else if (kc.ca_data) {
		opt.ca_pem = kc.ca_data;
		opt.ca_len = kc.ca_len;
		snprintf(ctl->trust, sizeof(ctl->trust), "the CA of certificate-authority-data in kubeconfig %s",
			 kc.path);
	} else if (kc.ca_file) {
		opt.ca_file = kc.ca_file;
		snprintf(ctl->trust, sizeof(ctl->trust), "the CA of certificate-authority %s in kubeconfig %s",
			 kc.ca_file, kc.path);
	} else {
		opt.insecure_skip_tls_verify = kc.insecure_skip_tls_verify;
		snprintf(ctl->trust, sizeof(ctl->trust), "%s",
			 "the system's trust store (give --kubeconfig FILE or --certificate-authority FILE)");
	}
	if (!opt.token && !opt.token_file) {
		fprintf(stderr, "error: no token: pass --kubeconfig FILE (weft-controller writes "
				"<data-dir>/admin.kubeconfig), or --token-file FILE or WEFT_TOKEN_FILE "
				"(<data-dir>/admin.token)%s%s\n",
			kc.path ? "; kubeconfig " : "", kc.path ? kc.path : "");
		kubeconfig_free(&kc);
		return NULL;
	}
	ctl->http = httpc_create(&opt, err, sizeof(err));
	if (!ctl->http)
		fprintf(stderr, "error: %s%s%s%s\n", err, kc.path ? " (kubeconfig " : "", kc.path ? kc.path : "",
			kc.path ? ")" : "");
	kubeconfig_free(&kc);
	return ctl->http;
}

int ctl_call(struct ctl *ctl, const char *method, const char *path, const json_t *body, struct ctl_reply *r)
{
	return ctl_call_typed(ctl, method, path, NULL, body, r);
}

int ctl_call_typed(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		   const json_t *body, struct ctl_reply *r)
{
	char *text = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			fprintf(stderr, "error: out of memory\n");
			return -ENOMEM;
		}
	}
	rc = ctl_call_text(ctl, method, path, content_type, text, text ? strlen(text) : 0, r);
	free(text);
	return rc;
}

int ctl_call_text(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		  const char *text, size_t len, struct ctl_reply *r)
{
	struct httpc *h = ctl_http(ctl);
	struct httpc_response resp = { 0 };
	char err[1024];
	int rc;

	memset(r, 0, sizeof(*r));
	if (!h)
		return -EINVAL;
	rc = httpc_request_typed(h, method, path, content_type, text, len, &resp, err, sizeof(err));
	if (rc == -ECANCELED)
		return rc;	/* the verb that cancelled says what it means */
	if (rc < 0) {
		fprintf(stderr, "error: %s\n", err);
		if (rc == -EPROTO)
			fprintf(stderr, "  (the server's certificate was checked against %s)\n", ctl->trust);
		return rc;
	}
	r->status = resp.status;
	r->body = resp.body;
	r->len = resp.len;
	if (r->len) {
		json_error_t jerr;

		r->json = json_loadb(r->body, r->len, 0, &jerr);
		if (!r->json)
			snprintf(r->json_error, sizeof(r->json_error), "line %d, column %d: %s", jerr.line,
				 jerr.column, jerr.text);
	}
	return 0;
}

const json_t *ctl_reply_object(const struct ctl_reply *r, const char *method, const char *path)
{
	if (json_is_object(r->json))
		return r->json;
	if (r->json)
		fprintf(stderr, "error: the server's answer to %s %s is not a JSON object\n", method, path);
	else if (r->len)
		fprintf(stderr, "error: the server's answer to %s %s is not valid JSON (%zu bytes): %s\n", method,
			path, r->len, r->json_error);
	else
		fprintf(stderr, "error: the server's answer to %s %s is empty\n", method, path);
	return NULL;
}

const json_t *ctl_reply_items(const struct ctl_reply *r, const char *method, const char *path)
{
	const json_t *o = ctl_reply_object(r, method, path), *items;

	if (!o)
		return NULL;
	items = json_object_get(o, "items");
	if (json_is_array(items) || json_is_null(items))
		return items;
	fprintf(stderr, "error: the server's answer to %s %s is not a list (%s)\n", method, path,
		items ? "its items are not a JSON list" : "it has no items");
	return NULL;
}

const json_t *ctl_list(struct ctl *ctl, const char *path, struct ctl_reply *r)
{
	if (ctl_call(ctl, "GET", path, NULL, r) < 0)
		return NULL;
	if (!ctl_ok(r)) {
		ctl_print_server_error(r);
		return NULL;
	}
	return ctl_reply_items(r, "GET", path);
}

void ctl_reply_free(struct ctl_reply *r)
{
	if (!r)
		return;
	json_decref(r->json);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static const char *reason_for(long code)
{
	switch (code) {
	case 400: return "BadRequest";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "NotFound";
	case 405: return "MethodNotAllowed";
	case 409: return "Conflict";
	case 410: return "Expired";
	case 413: return "RequestEntityTooLarge";
	case 422: return "Invalid";
	case 429: return "TooManyRequests";
	case 500: return "InternalError";
	case 503: return "ServiceUnavailable";
	case 504: return "Timeout";
	default: return NULL;
	}
}

const char *ctl_reason(const struct ctl_reply *r, char *buf, size_t len)
{
	const char *s = r->json ? json_string_value(json_object_get(r->json, "reason")) : NULL;

	if (!s || !s[0])
		s = reason_for(r->status);
	if (s)
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "HTTP %ld", r->status);
	return buf;
}

const char *ctl_message(const struct ctl_reply *r, char *buf, size_t len)
{
	const char *s = r->json ? json_string_value(json_object_get(r->json, "message")) : NULL;
	size_t n = 0;

	if (s) {
		snprintf(buf, len, "%s", s);
		n = strlen(buf);
	} else if (r->body) {
		/* not a Status: the first line of the body, bounded */
		const char *p = r->body;

		while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
			p++;
		while (p[n] && p[n] != '\n' && n < 200 && n + 1 < len)
			n++;
		snprintf(buf, len, "%.*s", (int)n, p);
	} else if (len) {
		buf[0] = 0;
	}
	/* never end with a newline: callers add their own */
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (!buf[0])
		snprintf(buf, len, "the server answered HTTP %ld", r->status);
	return buf;
}

void ctl_print_server_error(const struct ctl_reply *r)
{
	char reason[64], message[CTL_ERR_MAX];

	fprintf(stderr, "Error from server (%s): %s\n", ctl_reason(r, reason, sizeof(reason)),
		ctl_message(r, message, sizeof(message)));
}

void ctl_print_stream_error(const struct httpc_response *resp)
{
	struct ctl_reply r = { .status = resp->status, .body = resp->body, .len = resp->len };

	r.json = resp->len ? json_loadb(resp->body, resp->len, 0, NULL) : NULL;
	ctl_print_server_error(&r);
	json_decref(r.json);
}

void ctl_print_not_found(const struct kind_info *k, const char *name)
{
	fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n", k->plural, name);
}

const struct kind_info *ctl_kind(const char *arg)
{
	const struct kind_info *k = kind_lookup(arg);

	if (!k)
		fprintf(stderr, "error: the server doesn't have a resource type \"%s\"\n", arg);
	return k;
}

bool ctl_name_ok(const char *what, const char *name)
{
	size_t n = strlen(name);
	bool ok = n > 0 && n <= 253 && strcmp(name, ".") && strcmp(name, "..");

	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];

		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		     c == '-' || c == '.' || c == '_';
	}
	if (!ok)
		fprintf(stderr, "error: invalid %s \"%s\"\n", what, name);
	return ok;
}

int ctl_one_object(const struct ctl *ctl, const char *verb, const char *usage, int argc, char **argv, int first,
		   const struct kind_info **k, const char **name)
{
	char kind[256], *slash;
	int next;

	if (first >= argc) {
		fprintf(stderr, "error: %s needs KIND NAME\n", verb);
		return ctl_usage(ctl, verb, usage);
	}
	snprintf(kind, sizeof(kind), "%s", argv[first]);
	slash = strchr(kind, '/');
	if (slash) {
		*slash = 0;
		*name = argv[first] + (slash - kind) + 1;
		next = first + 1;
	} else {
		*name = first + 1 < argc ? argv[first + 1] : NULL;
		next = first + 2;
	}
	if (!*name) {
		fprintf(stderr, "error: %s needs a NAME\n", verb);
		return ctl_usage(ctl, verb, usage);
	}
	if (next < argc) {
		fprintf(stderr, "error: %s takes one NAME\n", verb);
		return ctl_usage(ctl, verb, usage);
	}
	*k = ctl_kind(kind);
	if (!*k || !ctl_name_ok("name", *name))
		return CTL_EXIT_FAIL;
	return 0;
}

const char *ctl_ref(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len)
{
	if (k->namespaced && ns && ns[0])
		snprintf(buf, len, "%s/%s/%s", k->singular, ns, name);
	else
		snprintf(buf, len, "%s/%s", k->singular, name);
	return buf;
}

const char *ctl_path(const struct kind_info *k, const char *ns, const char *name, char *buf, size_t len)
{
	if (model_api_path(k, k->namespaced ? ns : NULL, name, buf, len) < 0)
		snprintf(buf, len, "/");
	return buf;
}

bool ctl_path_add_query(char *path, size_t len, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n0 = strlen(path), n = n0;
	int w = snprintf(path + n, len - n, "%c%s=", strchr(path, '?') ? '&' : '?', name);

	if (w < 0 || (size_t)w >= len - n)
		goto too_long;
	n += (size_t)w;
	for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
		if (n + 4 > len)
			goto too_long;
		if ((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') || (*v >= '0' && *v <= '9') ||
		    strchr("-._~", *v)) {
			path[n++] = (char)*v;
		} else {
			path[n++] = '%';
			path[n++] = hex[*v >> 4];
			path[n++] = hex[*v & 15];
		}
	}
	path[n] = 0;
	return true;
too_long:
	path[n0] = 0;
	return false;
}

int ctl_list_path(const struct kind_info *k, const char *ns, bool all, const char *labels, const char *fields,
		  char *path, size_t len)
{
	ctl_path(k, all ? NULL : ns, NULL, path, len);
	if ((labels && !ctl_path_add_query(path, len, "labelSelector", labels)) ||
	    (fields && !ctl_path_add_query(path, len, "fieldSelector", fields))) {
		fprintf(stderr, "error: the selectors are too long (4096 bytes each at most)\n");
		return CTL_EXIT_USAGE;
	}
	return 0;
}

int ctl_seconds_parse(const char *s, long *secs)
{
	long v = 0;
	size_t i = 0;

	if (!s[0])
		return -EINVAL;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (s[i] - '0');
		if (v > 31536000)
			return -EINVAL;
	}
	if (!i || (s[i] && strcmp(s + i, "s")))
		return -EINVAL;
	*secs = v;
	return 0;
}

void ctl_bad_flag(int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		fprintf(stderr, "error: flag %s needs a value\n", arg);
	else if (optopt && optopt != '?')
		fprintf(stderr, "error: unknown flag -%c\n", optopt);
	else
		fprintf(stderr, "error: unknown flag %s\n", arg);
}

int ctl_usage(const struct ctl *ctl, const char *verb, const char *args)
{
	fprintf(stderr, "usage: %s %s %s\n", ctl->prog, verb, args);
	return CTL_EXIT_USAGE;
}
