/*
 * flowserve.c — the node's flows over TLS (flowserve.h).
 *
 *   flowserve_start: identity (key, self-signed certificate, pin)
 *                    -> libmicrohttpd, TLS, a thread per connection
 *   handle:          GET /v1/flows?since=&follow=&verdict=&ip=
 *                    -> client_allowed (chain, purpose, CommonName) or 403
 *                    -> a stream; follow: one more listener of the log
 *   read_more:       the stream's buffer, else the log's next events
 *                    (filtered, as JSON lines), else (follow) wait for
 *                    more: an empty line after HEARTBEAT_MS of nothing,
 *                    so that a gone client is noticed at the write
 *   stream_done:     the listener ends, the stream is freed
 *
 * Invariants
 *  1. A stream that follows holds exactly one listener of the log, from
 *     handle until stream_done.
 *  2. The private key exists outside GnuTLS only in fs->key_pem, wiped
 *     by flowserve_stop.
 *  3. A waiting stream looks at fs->stopping every WAIT_MS, so stopping
 *     the daemon (which joins every connection's thread) takes at most
 *     that long.
 */
#include "agent/flowserve.h"
#include "agent/datapath.h"
#include "lib/errmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#define PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define CERT_DAYS 365
#define BACKDATE 300
#define WAIT_MS 500
#define HEARTBEAT_MS 5000
#define BATCH 32			/* events read from the log at a time */
#define IDLE_S 15			/* a connection without a request this long is closed */

struct flowserve {
	struct flowserve_opts o;
	char *node;
	char *client_ca;
	char *client_cn;
	char *key_pem;
	size_t key_len;
	char *cert_pem;
	char pin[X509_PIN_MAX];
	struct MHD_Daemon *daemon;
	atomic_bool stopping;
};

struct stream {
	struct flowserve *fs;
	uint64_t after;			/* the last sequence number looked at */
	bool follow, listening;
	int verdict;			/* 0 any, WEFT_FLOW_DROP dropped, -1 forwarded */
	in_addr_t ip;			/* INADDR_ANY: any */
	unsigned idle_ms;
	size_t len, off;
	char buf[BATCH * FLOWSERVE_LINE_MAX + 64];
};

/* ------------------------------------------------------------ identity */

static int make_identity(struct flowserve *fs, char *err, size_t errlen)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	time_t now = time(NULL);
	size_t len;
	int e;

	if ((e = gnutls_x509_privkey_init(&key)) < 0 || (e = gnutls_x509_crt_init(&crt)) < 0)
		goto out;
	if ((e = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
	    (e = x509_crt_base(crt, key, "weft-agent", now - BACKDATE, now + (time_t)CERT_DAYS * 86400)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (e = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (e = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0)
		goto out;
	if (fs->o.addr.sin_addr.s_addr != INADDR_ANY &&
	    (e = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &fs->o.addr.sin_addr, 4,
						      GNUTLS_FSAN_APPEND)) < 0)
		goto out;
	if ((e = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (e = x509_key_pem(key, &fs->key_pem, &fs->key_len)) < 0 || (e = x509_crt_pem(crt, &fs->cert_pem, &len)) < 0 ||
	    (e = x509_pin(crt, fs->pin)) < 0)
		goto out;
out:
	if (e < 0)
		errmsg(err, errlen, "flows: the node's key and certificate: %s", gnutls_strerror(e));
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return e < 0 ? -EIO : 0;
}

/* --------------------------------------------------------------- events */

static const char *const kinds[] = { [WEFT_FLOW_DROP] = "drop", [WEFT_FLOW_NEW] = "new",
				     [WEFT_FLOW_REPLY] = "reply", [WEFT_FLOW_SAMPLE] = "sample" };
static const char *const froms[] = { [WEFT_FROM_POD] = "pod", [WEFT_FROM_TUNNEL] = "tunnel",
				     [WEFT_FROM_NODE] = "node", [WEFT_FROM_HOST_TO_POD] = "host-to-pod",
				     [WEFT_FROM_HOST_SVC] = "host-service" };

/* A pod's name fit for JSON as it is: what the API admits (DNS labels and
 * one '/'); anything else is left out. */
static bool plain_name(const char *s)
{
	bool slash = false;

	for (; *s; s++) {
		if (*s == '/')
			slash = true;
		else if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
			return false;
	}
	return slash;
}

size_t flowserve_format(const struct weft_flow *e, uint64_t seq, int64_t wall_offset_ns, const char *node,
			flowserve_namer name, void *name_ctx, char *buf, size_t len)
{
	int64_t wall = (int64_t)e->time_ns + wall_offset_ns;
	time_t secs = (time_t)(wall / 1000000000);
	bool ports = e->proto == IPPROTO_TCP || e->proto == IPPROTO_UDP;
	const char *kind = e->kind < sizeof(kinds) / sizeof(kinds[0]) && kinds[e->kind] ? kinds[e->kind] : "unknown";
	const char *from = e->from < sizeof(froms) / sizeof(froms[0]) && froms[e->from] ? froms[e->from] : "unknown";
	char when[40], proto[12], ip[INET_ADDRSTRLEN], pod[300];
	const __be32 addrs[2] = { e->saddr, e->daddr };
	const __be16 portv[2] = { e->sport, e->dport };
	static const char *const sides[2] = { "source", "destination" };
	size_t n = 0;
	struct tm tm;
	int w;

#define PUT(...)                                                        \
	do {                                                            \
		w = snprintf(buf + n, len - n, __VA_ARGS__);            \
		if (w < 0 || (size_t)w >= len - n)                      \
			return 0;                                       \
		n += (size_t)w;                                         \
	} while (0)

	if (!len)
		return 0;
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	if (e->proto == IPPROTO_TCP)
		snprintf(proto, sizeof(proto), "TCP");
	else if (e->proto == IPPROTO_UDP)
		snprintf(proto, sizeof(proto), "UDP");
	else if (e->proto == IPPROTO_ICMP)
		snprintf(proto, sizeof(proto), "ICMP");
	else if (!e->proto && !e->saddr && !e->daddr)
		snprintf(proto, sizeof(proto), "non-IPv4");	/* IPv6, say: no IPv4 header read */
	else
		snprintf(proto, sizeof(proto), "%u", e->proto);
	PUT("{\"seq\":%llu,\"time\":\"%s.%09lldZ\",\"node\":\"%s\",\"verdict\":\"%s\",\"event\":\"%s\"",
	    (unsigned long long)seq, when, (long long)(wall % 1000000000), node,
	    e->kind == WEFT_FLOW_DROP ? "dropped" : "forwarded", kind);
	if (e->kind == WEFT_FLOW_DROP)
		PUT(",\"reason\":\"%s\"", e->reason < WEFT_DROP_MAX && datapath_drop_names[e->reason]
						  ? datapath_drop_names[e->reason] : "unknown");
	PUT(",\"protocol\":\"%s\"", proto);
	for (int i = 0; i < 2; i++) {
		inet_ntop(AF_INET, &addrs[i], ip, sizeof(ip));
		PUT(",\"%s\":{\"ip\":\"%s\"", sides[i], ip);
		if (ports)
			PUT(",\"port\":%u", ntohs(portv[i]));
		pod[0] = 0;
		if (name)
			name(name_ctx, addrs[i], pod, sizeof(pod));
		if (plain_name(pod))
			PUT(",\"pod\":\"%s\"", pod);
		PUT("}");
	}
	PUT(",\"from\":\"%s\"", from);
	if (e->tunnel_remote) {
		struct in_addr r = { htonl(e->tunnel_remote) };

		inet_ntop(AF_INET, &r, ip, sizeof(ip));
		PUT(",\"tunnel\":{\"vni\":%u,\"node\":\"%s\"}", e->tunnel_id, ip);
	}
	PUT("}\n");
#undef PUT
	return n;
}

/* --------------------------------------------------------------- streams */

static int64_t wall_offset(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

static bool wanted(const struct stream *st, const struct weft_flow *e)
{
	if (st->verdict == WEFT_FLOW_DROP && e->kind != WEFT_FLOW_DROP)
		return false;
	if (st->verdict < 0 && e->kind == WEFT_FLOW_DROP)
		return false;
	return st->ip == INADDR_ANY || e->saddr == st->ip || e->daddr == st->ip;
}

/* The log's next events into st->buf.  How many were looked at (0: none
 * came after st->after). */
static size_t fill(struct stream *st)
{
	struct flowserve *fs = st->fs;
	struct weft_flow ev[BATCH];
	uint64_t first = flowlog_first(fs->o.log), last;
	int64_t off = wall_offset();
	size_t n;

	st->len = st->off = 0;
	if (st->after + 1 < first) {	/* the ring moved past them */
		st->len = (size_t)snprintf(st->buf, sizeof(st->buf), "{\"node\":\"%s\",\"lost\":%llu}\n", fs->node,
					   (unsigned long long)(first - 1 - st->after));
		st->after = first - 1;
	}
	n = flowlog_since(fs->o.log, st->after, ev, BATCH, &last);
	for (size_t i = 0; i < n; i++)
		if (wanted(st, &ev[i]))
			st->len += flowserve_format(&ev[i], st->after + 1 + i, off, fs->node, fs->o.name, fs->o.name_ctx,
						    st->buf + st->len, sizeof(st->buf) - st->len);
	st->after = last;
	return n + (st->len ? 1 : 0);
}

static ssize_t read_more(void *cls, uint64_t pos, char *out, size_t max)
{
	struct stream *st = cls;

	(void)pos;
	for (;;) {
		if (st->off < st->len) {
			size_t n = st->len - st->off < max ? st->len - st->off : max;

			memcpy(out, st->buf + st->off, n);
			st->off += n;
			return (ssize_t)n;
		}
		if (atomic_load(&st->fs->stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (fill(st)) {
			st->idle_ms = 0;
			continue;
		}
		if (!st->follow)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (flowlog_wait(st->fs->o.log, st->after, WAIT_MS))
			continue;
		st->idle_ms += WAIT_MS;
		if (st->idle_ms >= HEARTBEAT_MS) {
			st->idle_ms = 0;
			st->buf[0] = '\n';
			st->len = 1;
			st->off = 0;
		}
	}
}

static void stream_done(void *cls)
{
	struct stream *st = cls;

	if (st->listening && flowlog_listen(st->fs->o.log, false) < 0)
		fprintf(stderr, "flows: the programs could not be told that a listener left\n");
	free(st);
}

/* ------------------------------------------------------------- requests */

/* The peer's certificate chains to the client CA, is for TLS clients,
 * and has the relay's CommonName. */
static bool client_allowed(struct flowserve *fs, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	const gnutls_datum_t *peers;
	gnutls_x509_crt_t crt = NULL;
	unsigned status = 0, n = 0;
	char cn[128];
	size_t cnlen = sizeof(cn);
	bool ok = false;

	if (!s || gnutls_certificate_verify_peers(s, &purpose, 1, &status) < 0 || status)
		return false;
	peers = gnutls_certificate_get_peers(s, &n);
	if (!peers || !n || gnutls_x509_crt_init(&crt) < 0)
		return false;
	if (gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) == 0 &&
	    gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cnlen) == 0)
		ok = strcmp(cn, fs->client_cn) == 0;
	gnutls_x509_crt_deinit(crt);
	return ok;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The query into st; NULL, or the message of a 400 naming the parameter. */
static const char *parse_query(struct MHD_Connection *c, struct stream *st)
{
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
	const char *follow = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	const char *verdict = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "verdict");
	const char *ip = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ip");
	struct in_addr a;
	char *end;

	if (since) {
		errno = 0;
		st->after = strtoull(since, &end, 10);
		if (!*since || *end || errno || *since == '-')
			return "since: want a sequence number (0 for every event kept)\n";
	}
	if (follow && strcmp(follow, "true") && strcmp(follow, "false"))
		return "follow: want true or false\n";
	st->follow = follow && strcmp(follow, "true") == 0;
	if (verdict && strcmp(verdict, "dropped") == 0)
		st->verdict = WEFT_FLOW_DROP;
	else if (verdict && strcmp(verdict, "forwarded") == 0)
		st->verdict = -1;
	else if (verdict)
		return "verdict: want dropped or forwarded\n";
	if (ip && inet_pton(AF_INET, ip, &a) != 1)
		return "ip: want an IPv4 address\n";
	st->ip = ip ? a.s_addr : INADDR_ANY;
	return NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **req)
{
	static int seen;
	struct flowserve *fs = cls;
	struct MHD_Response *r;
	struct stream *st;
	const char *bad;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	if (!*req) {	/* the headers: answer at the next call */
		*req = &seen;
		return MHD_YES;
	}
	if (*upload_len)
		return text(c, 413, "flows: a request has no body\n");
	if (strcmp(method, "GET"))
		return text(c, 405, "flows: GET only\n");
	if (strcmp(url, "/v1/flows"))
		return text(c, 404, "flows: the path is /v1/flows\n");
	if (!client_allowed(fs, c))
		return text(c, 403, "flows: a client certificate of the cluster's flows relay is required\n");
	if (!(st = calloc(1, sizeof(*st))))
		return MHD_NO;
	st->fs = fs;
	if ((bad = parse_query(c, st))) {
		free(st);
		return text(c, 400, bad);
	}
	if (st->follow) {
		if (flowlog_listen(fs->o.log, true) < 0) {
			free(st);
			return text(c, 503, "flows: the programs could not be told to report forwarded packets\n");
		}
		st->listening = true;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, read_more, st, stream_done);
	if (!r) {
		stream_done(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* ------------------------------------------------------------ lifecycle */

struct flowserve *flowserve_start(const struct flowserve_opts *o, char *err, size_t errlen)
{
	struct flowserve *fs = calloc(1, sizeof(*fs));

	if (!fs || !o->log || !o->node || !o->client_ca_pem || !o->client_cn) {
		errmsg(err, errlen, fs ? "flows: no flow log, node name or client CA" : "flows: out of memory");
		free(fs);
		return NULL;
	}
	fs->o = *o;
	fs->node = strdup(o->node);
	fs->client_ca = strdup(o->client_ca_pem);
	fs->client_cn = strdup(o->client_cn);
	if (!fs->node || !fs->client_ca || !fs->client_cn) {
		errmsg(err, errlen, "flows: out of memory");
		goto fail;
	}
	if (make_identity(fs, err, errlen) < 0)
		goto fail;
	fs->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
					      MHD_USE_TLS,
				      ntohs(o->addr.sin_port), NULL, NULL, handle, fs, MHD_OPTION_SOCK_ADDR,
				      (struct sockaddr *)&fs->o.addr, MHD_OPTION_HTTPS_MEM_KEY, fs->key_pem,
				      MHD_OPTION_HTTPS_MEM_CERT, fs->cert_pem, MHD_OPTION_HTTPS_MEM_TRUST, fs->client_ca,
				      MHD_OPTION_HTTPS_PRIORITIES, PRIORITIES, MHD_OPTION_CONNECTION_LIMIT,
				      (unsigned)FLOWSERVE_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 4u,
				      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_S, MHD_OPTION_END);
	if (!fs->daemon) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &o->addr.sin_addr, a, sizeof(a));
		errmsg(err, errlen, "flows: cannot serve on %s:%u: %s", a, ntohs(o->addr.sin_port),
		       strerror(errno ? errno : EADDRINUSE));
		goto fail;
	}
	return fs;
fail:
	flowserve_stop(fs);
	return NULL;
}

void flowserve_stop(struct flowserve *fs)
{
	if (!fs)
		return;
	atomic_store(&fs->stopping, true);
	if (fs->daemon)
		MHD_stop_daemon(fs->daemon);
	if (fs->key_pem) {
		explicit_bzero(fs->key_pem, fs->key_len);
		free(fs->key_pem);
	}
	free(fs->cert_pem);
	free(fs->client_ca);
	free(fs->client_cn);
	free(fs->node);
	free(fs);
}

unsigned flowserve_port(const struct flowserve *fs)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(fs->daemon, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

const char *flowserve_pin(const struct flowserve *fs)
{
	return fs->pin;
}

const char *flowserve_cert_pem(const struct flowserve *fs)
{
	return fs->cert_pem;
}
