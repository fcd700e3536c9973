/*
 * httpc.c — the HTTP client of httpc.h over one libcurl easy handle.
 *
 * A call goes:
 *
 *   httpc_request / httpc_stream
 *        |  check method and path, build SERVER+path
 *        v
 *   setup()            curl_easy_reset + every option, each call
 *        |
 *        v
 *   curl_easy_perform  --on_data-->  gather into x.body (bounded)
 *        |                       or  split into lines -> user's fn (stream, 2xx)
 *        |             --on_progress--> h->cancelled ? abort
 *        v
 *   finish()           status + body into resp, or fail() -> errno + message
 *
 * Invariants
 *  1. x.body and x.line never exceed h->max_body bytes (plus the NUL).
 *  2. In stream mode the decision "stream or gather" is taken at the first
 *     byte of the body, when the final status is known, and never changes.
 *  3. The token exists only inside h->headers and h->headers_body, and a
 *     typed request's own copy of them (typed_headers); they are wiped
 *     before curl frees them (httpc_destroy; the end of the call).
 *  4. For https, setup() gives curl the handle's CA as the only trust
 *     anchors (CAINFO_BLOB; the default bundle and directory are cleared)
 *     or, without one, leaves curl's system defaults; verification of the
 *     peer and of the host name stays on unless h->insecure, or
 *     h->pinned_key, which curl checks in their place.
 */
#include "lib/httpc.h"
#include "lib/errmsg.h"
#include "lib/secret_file.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define SERVER_MAX 2048
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define CA_MAX (1u << 20)	/* a CA bundle larger than this is refused */
#define PEM_CERT "-----BEGIN CERTIFICATE-----"

struct httpc {
	CURL *curl;
	char *server;				/* servers[current] */
	char *servers[HTTPC_MAX_SERVERS];	/* owned; a controller's replicas */
	size_t nservers, current;
	struct curl_slist *headers;		/* Accept, Authorization, Expect */
	struct curl_slist *headers_body;	/* the same + Content-Type */
	long connect_timeout_ms;
	long timeout_ms;
	size_t max_body;
	char *user_agent;
	struct curl_blob ca;			/* PEM, owned; data NULL: system trust store */
	bool insecure;				/* insecure_skip_tls_verify */
	char *cert_file, *key_file;		/* client certificate, or NULL */
	char *pinned_key;			/* the server's key pin, or NULL */
	void (*connected)(void *arg);		/* options.connected, or NULL */
	void *connected_arg;
	char *auth_scheme;			/* "Bearer", or "" for the bare token */
	atomic_int cancelled;
	bool (*interrupt)(void *arg);		/* httpc_set_interrupt, or NULL */
	void *interrupt_arg;
	bool interrupted;			/* the running call ended by it */
	char curl_err[CURL_ERROR_SIZE];
};

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

struct xfer {
	struct httpc *h;
	struct buf body;
	struct buf line;
	httpc_line_fn fn;	/* NULL: gather the body */
	void *arg;
	bool decided;		/* stream mode: status seen */
	bool streaming;		/* stream mode and 2xx: lines go to fn */
	int err;		/* our own failure (-EMSGSIZE, -ENOMEM) */
	int stop;		/* fn's non-zero return */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static void wipe_list(struct curl_slist *l)
{
	for (; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
}

static int buf_append(struct buf *b, const char *p, size_t n, size_t max)
{
	if (n > max || b->len > max - n)
		return -EMSGSIZE;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

/* Read the token: at most HTTPC_MAX_TOKEN bytes, trailing blanks stripped,
 * no control characters (a newline inside would forge a header). */
static int read_token(const char *path, char **out, char *err, size_t errlen)
{
	char *tok = NULL;
	size_t n = 0, len = 0;
	int rc = secret_file_read(path, HTTPC_MAX_TOKEN, &tok, &len);

	if (rc == -EFBIG) {
		errmsg(err, errlen, "token file %s is larger than %d bytes", path, HTTPC_MAX_TOKEN);
		return rc;
	}
	if (rc) {
		errmsg(err, errlen, "cannot read token file %s: %s", path, strerror(-rc));
		return rc;
	}
	n = len;
	while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' ' || tok[n - 1] == '\t'))
		n--;
	tok[n] = 0;
	if (!n) {
		rc = -EINVAL;
		errmsg(err, errlen, "token file %s is empty", path);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tok[i];

		if (c < 0x20 || c == 0x7f) {
			rc = -EINVAL;
			errmsg(err, errlen, "token file %s: the token contains a control character", path);
			goto out;
		}
	}
	*out = tok;
	tok = NULL;
out:
	secret_free(tok, len + 1);
	return rc;
}

/* The CA file, at most CA_MAX bytes, holding at least one PEM certificate.
 * Kept for the handle's life in a buffer of its own size (an agent makes a
 * client a watch; a thousand hollow agents, ten thousand). */
static int read_ca(const char *path, struct curl_blob *ca, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	char *buf = NULL;
	size_t n = 0, want;
	int rc;

	if (!f) {
		rc = -errno;
		errmsg(err, errlen, "cannot read CA file %s: %s", path, strerror(errno));
		return rc;
	}
	/* the size read is bounded by the buffer, whatever fstat said */
	want = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= CA_MAX ? (size_t)st.st_size
											      : CA_MAX;
	buf = malloc(want + 2);
	if (!buf) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto out;
	}
	n = fread(buf, 1, want + 1, f);
	if (ferror(f)) {
		rc = -EIO;
		errmsg(err, errlen, "cannot read CA file %s: %s", path, strerror(errno));
		goto out;
	}
	if (n > want) {
		rc = want == CA_MAX ? -EFBIG : -EAGAIN;
		if (want == CA_MAX)
			errmsg(err, errlen, "CA file %s is larger than %u bytes", path, CA_MAX);
		else
			errmsg(err, errlen, "CA file %s grew while it was read: try again", path);
		goto out;
	}
	buf[n] = 0;
	if (!strstr(buf, PEM_CERT)) {
		rc = -EINVAL;
		errmsg(err, errlen, "CA file %s: no PEM certificate in it (want %s ...)", path, PEM_CERT);
		goto out;
	}
	ca->data = buf;
	ca->len = n;
	ca->flags = CURL_BLOB_NOCOPY;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

/* A token goes into a header line: no control character may forge another. */
static bool token_ok(const char *token)
{
	for (const char *c = token; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

static int copy_ca(const char *pem, size_t len, struct curl_blob *ca, char *err, size_t errlen)
{
	char *buf;

	if (len > CA_MAX || !memmem(pem, len, PEM_CERT, strlen(PEM_CERT))) {
		errmsg(err, errlen, "the CA given is not PEM certificates (want %s ...)", PEM_CERT);
		return -EINVAL;
	}
	buf = malloc(len + 1);
	if (!buf) {
		errmsg(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(buf, pem, len);
	buf[len] = 0;
	ca->data = buf;
	ca->len = len;
	ca->flags = CURL_BLOB_NOCOPY;
	return 0;
}

static int build_headers(struct httpc *h, const char *token)
{
	static const char *common[] = { "Accept: application/json", "Expect:" };
	char *auth = NULL;
	size_t authlen = 0;
	int rc = -ENOMEM;

	h->headers = h->headers_body = NULL;

	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++) {
		struct curl_slist *a = curl_slist_append(h->headers, common[i]);

		if (!a)
			goto out;
		h->headers = a;
		a = curl_slist_append(h->headers_body, common[i]);
		if (!a)
			goto out;
		h->headers_body = a;
	}
	{
		struct curl_slist *a = curl_slist_append(h->headers_body, "Content-Type: application/json");

		if (!a)
			goto out;
		h->headers_body = a;
	}
	if (token) {
		struct curl_slist *a;

		authlen = strlen(token) + strlen(h->auth_scheme) + sizeof("Authorization:  ");
		auth = malloc(authlen);
		if (!auth)
			goto out;
		snprintf(auth, authlen, "Authorization: %s%s%s", h->auth_scheme, h->auth_scheme[0] ? " " : "", token);
		a = curl_slist_append(h->headers, auth);
		if (!a)
			goto out;
		h->headers = a;
		a = curl_slist_append(h->headers_body, auth);
		if (!a)
			goto out;
		h->headers_body = a;
	}
	rc = 0;
out:
	if (auth) {
		explicit_bzero(auth, authlen);
		free(auth);
	}
	return rc;
}

/* One server URL: http(s)://HOST[:PORT], no blank; a trailing '/' dropped. */
static int add_server(struct httpc *h, const char *url, size_t len, char *err, size_t errlen)
{
	char *s;

	if (len > SERVER_MAX || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) ||
	    len <= (size_t)(strncmp(url, "http://", 7) ? 8 : 7) || memchr(url, ' ', len) || memchr(url, '\t', len) ||
	    memchr(url, '\r', len) || memchr(url, '\n', len)) {
		errmsg(err, errlen, "invalid server URL '%.*s': want http://HOST[:PORT] or https://...",
		    (int)(len > SERVER_MAX ? SERVER_MAX : len), url);
		return -EINVAL;
	}
	if (h->nservers == HTTPC_MAX_SERVERS) {
		errmsg(err, errlen, "more than %d server URLs", HTTPC_MAX_SERVERS);
		return -EINVAL;
	}
	if (!(s = strndup(url, len))) {
		errmsg(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (len > 0 && s[len - 1] == '/')
		s[--len] = 0;
	h->servers[h->nservers++] = s;
	return 0;
}

/* "URL[,URL...]": the replicas of one server, tried in turn. */
static int split_servers(struct httpc *h, const char *list, char *err, size_t errlen)
{
	for (const char *p = list;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		int rc = add_server(h, p, n, err, errlen);

		if (rc < 0)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	h->current = 0;
	h->server = h->servers[0];
	return 0;
}

struct httpc *httpc_create(const struct httpc_options *opt, char *err, size_t errlen)
{
	struct httpc *h = NULL;
	char *token = NULL;
	size_t slen;
	int rc;

	if (!opt || !opt->server) {
		rc = -EINVAL;
		errmsg(err, errlen, "no server URL");
		goto fail;
	}
	slen = strlen(opt->server);
	if (slen > SERVER_MAX * HTTPC_MAX_SERVERS) {
		rc = -EINVAL;
		errmsg(err, errlen, "invalid server URL '%.*s...': too long", 200, opt->server);
		goto fail;
	}
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		rc = -ENOMEM;
		errmsg(err, errlen, "libcurl initialisation failed: %s", curl_easy_strerror(global_rc));
		goto fail;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	rc = split_servers(h, opt->server, err, errlen);
	if (rc < 0)
		goto fail;
	h->user_agent = strdup(opt->user_agent ? opt->user_agent : "weft-httpc");
	h->connected = opt->connected;
	h->connected_arg = opt->connected_arg;
	h->curl = curl_easy_init();
	if (!h->user_agent || !h->curl) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	h->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
	h->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : 0;
	h->max_body = opt->max_body ? opt->max_body : HTTPC_MAX_BODY;
	atomic_init(&h->cancelled, 0);
	h->insecure = opt->insecure_skip_tls_verify;
	if ((opt->token_file && opt->token) || (opt->ca_file && opt->ca_pem)) {
		rc = -EINVAL;
		errmsg(err, errlen, "%s", opt->token ? "a token and a token file are both given" :
						    "a CA file and CA certificates are both given");
		goto fail;
	}
	if (!opt->cert_file != !opt->key_file) {
		rc = -EINVAL;
		errmsg(err, errlen, "a client %s without its %s", opt->cert_file ? "certificate" : "key",
		    opt->cert_file ? "key" : "certificate");
		goto fail;
	}
	if (opt->pinned_key && (opt->ca_file || opt->ca_pem || opt->insecure_skip_tls_verify ||
				strncmp(opt->pinned_key, "sha256//", 8))) {
		rc = -EINVAL;
		errmsg(err, errlen, "%s", strncmp(opt->pinned_key, "sha256//", 8) ?
			"a pinned key is sha256//BASE64" : "a pinned key is trusted instead of a CA, not with one");
		goto fail;
	}
	if (opt->pinned_key && !(h->pinned_key = strdup(opt->pinned_key))) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	if (opt->cert_file && (!(h->cert_file = strdup(opt->cert_file)) || !(h->key_file = strdup(opt->key_file)))) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	if (!(h->auth_scheme = strdup(opt->auth_scheme ? opt->auth_scheme : "Bearer"))) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	if (opt->ca_file && (rc = read_ca(opt->ca_file, &h->ca, err, errlen)) < 0)
		goto fail;
	if (opt->ca_pem && (rc = copy_ca(opt->ca_pem, opt->ca_len, &h->ca, err, errlen)) < 0)
		goto fail;
	if (opt->token_file) {
		rc = read_token(opt->token_file, &token, err, errlen);
		if (rc < 0)
			goto fail;
	} else if (opt->token) {
		if (!token_ok(opt->token)) {
			rc = -EINVAL;
			errmsg(err, errlen, "the token contains a control character");
			goto fail;
		}
		if (!(token = strdup(opt->token))) {
			rc = -ENOMEM;
			errmsg(err, errlen, "out of memory");
			goto fail;
		}
	}
	rc = build_headers(h, token);
	if (rc < 0) {
		errmsg(err, errlen, "out of memory");
		goto fail;
	}
	goto out;
fail:
	httpc_destroy(h);
	h = NULL;
	errno = -rc;
out:
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	return h;
}

void httpc_destroy(struct httpc *h)
{
	if (!h)
		return;
	wipe_list(h->headers);
	wipe_list(h->headers_body);
	curl_slist_free_all(h->headers);
	curl_slist_free_all(h->headers_body);
	if (h->curl)
		curl_easy_cleanup(h->curl);
	for (size_t i = 0; i < h->nservers; i++)
		free(h->servers[i]);
	free(h->user_agent);
	free(h->ca.data);
	free(h->cert_file);
	free(h->key_file);
	free(h->pinned_key);
	free(h->auth_scheme);
	free(h);
}

int httpc_set_token(struct httpc *h, const char *token)
{
	struct curl_slist *headers = h->headers, *headers_body = h->headers_body;
	int rc;

	if (token && !token_ok(token))
		return -EINVAL;
	rc = build_headers(h, token);
	if (rc < 0) {
		wipe_list(h->headers);
		wipe_list(h->headers_body);
		curl_slist_free_all(h->headers);
		curl_slist_free_all(h->headers_body);
		h->headers = headers;
		h->headers_body = headers_body;
		return rc;
	}
	wipe_list(headers);
	wipe_list(headers_body);
	curl_slist_free_all(headers);
	curl_slist_free_all(headers_body);
	return 0;
}

const char *httpc_server(const struct httpc *h) { return h->server; }

void httpc_cancel(struct httpc *h) { atomic_store(&h->cancelled, 1); }

void httpc_set_interrupt(struct httpc *h, bool (*fn)(void *arg), void *arg)
{
	h->interrupt = fn;
	h->interrupt_arg = arg;
}

void httpc_response_free(struct httpc_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

static int feed_lines(struct xfer *x, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;
		int rc = buf_append(&x->line, p, take, x->h->max_body);

		if (rc < 0)
			return rc;
		p += take;
		n -= take;
		if (!nl)
			break;
		p++;
		n--;
		if (x->line.len && x->line.data[x->line.len - 1] == '\r')
			x->line.data[--x->line.len] = 0;
		if (x->line.len) {
			rc = x->fn(x->line.data, x->line.len, x->arg);
			x->line.len = 0;
			if (rc) {
				x->stop = rc;
				return rc;
			}
		}
	}
	return 0;
}

/* response body bytes every handle of the process received (httpc.h) */
static _Atomic uint64_t body_bytes_received;

uint64_t httpc_body_bytes_received(void)
{
	return body_bytes_received;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	int rc;

	body_bytes_received += n;

	if (x->fn && !x->decided) {
		long status = 0;

		curl_easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &status);
		x->streaming = status >= 200 && status < 300;
		x->decided = true;
	}
	if (x->streaming) {
		rc = feed_lines(x, ptr, n);
		if (rc && !x->stop)
			x->err = rc;
		return rc ? 0 : n;
	}
	rc = buf_append(&x->body, ptr, n, x->h->max_body);
	if (rc < 0) {
		x->err = rc;
		return 0;
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct httpc *h = arg;

	if (atomic_load(&h->cancelled))
		return 1;
	if (h->interrupt && h->interrupt(h->interrupt_arg)) {
		h->interrupted = true;
		return 1;
	}
	return 0;
}

static int check_request(const char *method, const char *path)
{
	size_t n = method ? strlen(method) : 0;

	if (!n || n > 16 || !path || path[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (method[i] < 'A' || method[i] > 'Z')
			return -EINVAL;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return -EINVAL;
	return 0;
}

/* The headers of a request whose body is of media type ct: the handle's,
 * with that Content-Type (a list of the call's own; it holds a copy of the
 * token, so it is wiped before it is freed).  NULL on ENOMEM. */
static struct curl_slist *typed_headers(const struct httpc *h, const char *ct)
{
	struct curl_slist *l = NULL, *a;
	char line[256];

	snprintf(line, sizeof(line), "Content-Type: %s", ct);
	for (const struct curl_slist *i = h->headers; i; i = i->next) {
		if (!(a = curl_slist_append(l, i->data)))
			goto fail;
		l = a;
	}
	if ((a = curl_slist_append(l, line)))
		return a;
fail:
	wipe_list(l);
	curl_slist_free_all(l);
	return NULL;
}

/* A media type a header may carry: printable ASCII, no more than fits. */
static bool media_type_ok(const char *ct)
{
	size_t n = strlen(ct);

	if (!n || n > 200)
		return false;
	for (const char *p = ct; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* CURLOPT_PREREQFUNCTION: the connection is up (and its TLS), the
 * request not sent yet */
static int on_connected(void *arg, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
			int conn_local_port)
{
	struct httpc *h = arg;

	(void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
	h->connected(h->connected_arg);
	return CURL_PREREQFUNC_OK;
}

static CURLcode setup(struct httpc *h, const char *method, const char *url, const char *body, size_t len,
		      const struct curl_slist *headers, bool stream, struct xfer *x)
{
	CURL *c = h->curl;
	CURLcode rc = CURLE_OK;

	curl_easy_reset(c);
	h->curl_err[0] = 0;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_ERRORBUFFER, h->curl_err);
	SET(CURLOPT_USERAGENT, h->user_agent);
	SET(CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, stream ? 0L : h->timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_HTTPHEADER, headers);
	SET(CURLOPT_WRITEFUNCTION, on_data);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, h);
	SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	/* curl copies a request for TLS into its upload buffer, made at the
	 * handle's first one and kept: 16 KiB (its least), not 64 */
	SET(CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	if (h->ca.data) {
		/* the CA given and nothing else (invariant 4) */
		SET(CURLOPT_CAINFO, (char *)NULL);
		SET(CURLOPT_CAPATH, (char *)NULL);
		SET(CURLOPT_CAINFO_BLOB, &h->ca);
	}
	if (h->cert_file) {
		SET(CURLOPT_SSLCERT, h->cert_file);
		SET(CURLOPT_SSLKEY, h->key_file);
	}
	if (h->insecure) {
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (h->pinned_key) {	/* the key is the identity; no CA signed it */
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
		SET(CURLOPT_PINNEDPUBLICKEY, h->pinned_key);
	}
	if (h->connected) {
		SET(CURLOPT_PREREQFUNCTION, on_connected);
		SET(CURLOPT_PREREQDATA, h);
	}
	if (strcmp(method, "GET"))
		SET(CURLOPT_CUSTOMREQUEST, method);
	if (body || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
		SET(CURLOPT_POSTFIELDS, body ? body : "");
	}
#undef SET
	return rc;
}

static bool connect_failure(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_COULDNT_RESOLVE_PROXY;
}

static int fail(struct httpc *h, CURLcode rc, const struct xfer *x, const char *method, const char *path,
		char *err, size_t errlen)
{
	long os_errno = 0;
	const char *detail = h->curl_err[0] ? h->curl_err : curl_easy_strerror(rc);

	curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno);
	if (x->err == -EMSGSIZE) {
		errmsg(err, errlen, "%s %s%s: the response is larger than %zu bytes", method, h->server, path,
		    h->max_body);
		return -EMSGSIZE;
	}
	if (x->err) {
		errmsg(err, errlen, "%s %s%s: %s", method, h->server, path, strerror(-x->err));
		return x->err;
	}
	if (x->stop < 0) {
		errmsg(err, errlen, "%s %s%s: stopped: %s", method, h->server, path, strerror(-x->stop));
		return x->stop;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK && h->interrupted) {
		errmsg(err, errlen, "%s %s%s: interrupted", method, h->server, path);
		return -EINTR;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		errmsg(err, errlen, "%s %s%s: cancelled", method, h->server, path);
		return -ECANCELED;
	}
	if (connect_failure(rc)) {
		if (rc == CURLE_COULDNT_CONNECT && os_errno > 0)
			detail = strerror((int)os_errno);
		errmsg(err, errlen, "cannot reach %s: %s", h->server, detail);
		if (rc == CURLE_COULDNT_CONNECT)
			return os_errno > 0 ? -(int)os_errno : -ECONNREFUSED;
		return -EHOSTUNREACH;
	}
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH) {
		errmsg(err, errlen, "cannot trust %s: %s", h->server, detail);
		return -EPROTO;
	}
	if (rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_CACERT_BADFILE) {
		errmsg(err, errlen, "TLS with %s failed: %s", h->server, detail);
		return -EPROTO;
	}
	if (rc == CURLE_GOT_NOTHING && strncmp(h->server, "http://", 7) == 0) {
		/* what an HTTPS server does to plain HTTP */
		errmsg(err, errlen, "%s %s%s: %s (an HTTPS server? then https://%s)", method, h->server, path, detail,
		    h->server + 7);
		return -EIO;
	}
	errmsg(err, errlen, "%s %s%s: %s", method, h->server, path, detail);
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	default:
		return os_errno > 0 ? -(int)os_errno : -EIO;
	}
}

static int perform_one(struct httpc *h, const char *method, const char *path, const char *content_type,
		       const char *body, size_t len, httpc_line_fn fn, void *arg, struct httpc_response *resp,
		       char *err, size_t errlen, bool *unreached)
{
	struct xfer x = { .h = h, .fn = fn, .arg = arg };
	struct curl_slist *typed = NULL;
	char *url = NULL;
	CURLcode crc;
	long status = 0;
	int rc;

	memset(resp, 0, sizeof(*resp));
	h->interrupted = false;
	rc = check_request(method, path);
	if (rc < 0) {
		errmsg(err, errlen, "%s: invalid request '%.16s %.200s'", h->server, method ? method : "",
		    path ? path : "");
		goto out;
	}
	if (atomic_load(&h->cancelled)) {
		rc = -ECANCELED;
		errmsg(err, errlen, "%s %s%s: cancelled", method, h->server, path);
		goto out;
	}
	if (asprintf(&url, "%s%s", h->server, path) < 0) {
		url = NULL;
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto out;
	}
	if (body && content_type) {
		if (!media_type_ok(content_type)) {
			rc = -EINVAL;
			errmsg(err, errlen, "%s: invalid Content-Type '%.200s'", h->server, content_type);
			goto out;
		}
		if (!(typed = typed_headers(h, content_type))) {
			rc = -ENOMEM;
			errmsg(err, errlen, "out of memory");
			goto out;
		}
	}
	crc = setup(h, method, url, body, len, typed ? typed : body ? h->headers_body : h->headers, fn != NULL, &x);
	if (crc != CURLE_OK) {
		rc = -EINVAL;
		errmsg(err, errlen, "%s: %s", h->server, curl_easy_strerror(crc));
		goto out;
	}
	crc = curl_easy_perform(h->curl);
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (crc == CURLE_WRITE_ERROR && x.stop > 0 && !x.err)
		crc = CURLE_OK;		/* fn stopped the stream cleanly */
	else if (crc == CURLE_OK && x.streaming && x.line.len) {
		if (x.line.data[x.line.len - 1] == '\r')
			x.line.data[--x.line.len] = 0;
		if (x.line.len) {
			int r = fn(x.line.data, x.line.len, arg);

			if (r < 0) {
				rc = r;
				errmsg(err, errlen, "%s %s%s: stopped: %s", method, h->server, path, strerror(-r));
				goto out;
			}
		}
	}
	if (crc != CURLE_OK) {
		curl_off_t connected = 0;

		rc = fail(h, crc, &x, method, path, err, errlen);
		/* never connected (refused, no route, the connect timed out, or
		 * the TLS handshake failed: a server dying as it accepted):
		 * nothing was sent, so another replica may take the request */
		*unreached = connect_failure(crc) || crc == CURLE_SSL_CONNECT_ERROR ||
			     (crc == CURLE_OPERATION_TIMEDOUT &&
			      curl_easy_getinfo(h->curl, CURLINFO_CONNECT_TIME_T, &connected) == CURLE_OK && !connected);
		goto out;
	}
	if (!x.body.data && buf_append(&x.body, "", 0, h->max_body) < 0) {
		rc = -ENOMEM;
		errmsg(err, errlen, "out of memory");
		goto out;
	}
	resp->status = status;
	{
		curl_off_t ra = 0;

		if (curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			resp->retry_after = ra > 86400 ? 86400 : (long)ra;
	}
	resp->body = x.body.data;
	resp->len = x.body.len;
	x.body.data = NULL;
	rc = 0;
out:
	wipe_list(typed);
	curl_slist_free_all(typed);
	free(x.body.data);
	free(x.line.data);
	free(url);
	return rc;
}

/* The request on the current server; when it cannot be reached, on the
 * next ones in turn (each once), staying on the first that answers. */
static int perform(struct httpc *h, const char *method, const char *path, const char *content_type,
		   const char *body, size_t len, httpc_line_fn fn, void *arg, struct httpc_response *resp, char *err,
		   size_t errlen)
{
	int rc = -EINVAL;

	for (size_t tried = 0; tried < h->nservers; tried++) {
		bool unreached = false;

		rc = perform_one(h, method, path, content_type, body, len, fn, arg, resp, err, errlen, &unreached);
		if (!unreached || h->nservers == 1)
			break;
		h->current = (h->current + 1) % h->nservers;
		h->server = h->servers[h->current];
	}
	return rc;
}

int httpc_request(struct httpc *h, const char *method, const char *path, const char *body, size_t len,
		  struct httpc_response *resp, char *err, size_t errlen)
{
	return perform(h, method, path, NULL, body, len, NULL, NULL, resp, err, errlen);
}

int httpc_request_typed(struct httpc *h, const char *method, const char *path, const char *content_type,
			const char *body, size_t len, struct httpc_response *resp, char *err, size_t errlen)
{
	return perform(h, method, path, content_type, body, len, NULL, NULL, resp, err, errlen);
}

int httpc_stream(struct httpc *h, const char *path, httpc_line_fn fn, void *arg, struct httpc_response *resp,
		 char *err, size_t errlen)
{
	if (!fn) {
		memset(resp, 0, sizeof(*resp));
		errmsg(err, errlen, "%s: httpc_stream without a line callback", h->server);
		return -EINVAL;
	}
	return perform(h, "GET", path, NULL, NULL, 0, fn, arg, resp, err, errlen);
}

int httpc_stream_post(struct httpc *h, const char *path, const char *body, size_t len, httpc_line_fn fn, void *arg,
		      struct httpc_response *resp, char *err, size_t errlen)
{
	if (!fn) {
		memset(resp, 0, sizeof(*resp));
		errmsg(err, errlen, "%s: httpc_stream_post without a line callback", h->server);
		return -EINVAL;
	}
	return perform(h, "POST", path, NULL, body, len, fn, arg, resp, err, errlen);
}
