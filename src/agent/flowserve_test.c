/*
 * flowserve_test.c — the node's flows over TLS (flowserve.c): an event's
 * JSON line, field by field; and the server on loopback over the programs
 * as the agent loads them, with a CA and certificates made here: the
 * relay's certificate reads the drops kept, and follows the forwarded
 * packets of a connection opened while it listens (one listener, gone
 * with the connection); every other client is refused (no certificate,
 * another CA, another CommonName, a server's certificate), a key that is
 * not the pinned one is not trusted, and a bad query names its parameter.
 */
#include "agent/flowserve.h"
#include "agent/datapath_fixture.h"
#include "lib/httpc.h"
#include "lib/x509.h"

#include <jansson.h>
#include <pthread.h>

/* the namer of the tests: 10.128.0.5 is x/a, every other address itself */
static void namer(void *ctx, in_addr_t ip, char *buf, size_t len)
{
	(void)ctx;
	if (ip == POD_A_IP)
		snprintf(buf, len, "x/a");
	else if (ip == IP(10, 128, 0, 66))
		snprintf(buf, len, "x/\"quoted\"");
	else
		inet_ntop(AF_INET, &ip, buf, (socklen_t)len);
}

/* a whole line's JSON, NULL when it is not one */
static json_t *line_json(const char *buf, size_t n)
{
	return n > 0 && buf[n - 1] == '\n' ? json_loadb(buf, n, 0, NULL) : NULL;
}

static const char *jstr(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2)
		v = json_object_get(v, path2);
	return json_is_string(v) ? json_string_value(v) : "";
}

static long long jint(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2)
		v = json_object_get(v, path2);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

TEST(flowserve_format_names_each_field)
{
	struct weft_flow e = {
		.time_ns = 1500000000ull,	/* + the offset below: 2026-01-01T00:00:01.5Z */
		.saddr = POD_A_IP, .daddr = POD_B_IP, .sport = htons(41000), .dport = htons(80),
		.proto = IPPROTO_TCP, .kind = WEFT_FLOW_DROP, .from = WEFT_FROM_POD,
		.reason = WEFT_DROP_POLICY_EGRESS,
	};
	const int64_t jan1 = 1767225600ll * 1000000000ll;
	char buf[FLOWSERVE_LINE_MAX];
	size_t n;
	json_t *j;

	n = flowserve_format(&e, 7, jan1, "node-1", namer, NULL, buf, sizeof(buf));
	j = line_json(buf, n);
	CHECK(j != NULL);
	CHECK_EQ(jint(j, "seq", NULL), 7);
	CHECK_STR(jstr(j, "time", NULL), "2026-01-01T00:00:01.500000000Z");
	CHECK_STR(jstr(j, "node", NULL), "node-1");
	CHECK_STR(jstr(j, "verdict", NULL), "dropped");
	CHECK_STR(jstr(j, "event", NULL), "drop");
	CHECK_STR(jstr(j, "reason", NULL), "policy-denied-egress");
	CHECK_STR(jstr(j, "protocol", NULL), "TCP");
	CHECK_STR(jstr(j, "source", "ip"), "10.128.0.5");
	CHECK_EQ(jint(j, "source", "port"), 41000);
	CHECK_STR(jstr(j, "source", "pod"), "x/a");
	CHECK_STR(jstr(j, "destination", "ip"), "10.128.0.6");
	CHECK_EQ(jint(j, "destination", "port"), 80);
	CHECK(json_object_get(json_object_get(j, "destination"), "pod") == NULL);	/* no pod the node knows */
	CHECK_STR(jstr(j, "from", NULL), "pod");
	CHECK(json_object_get(j, "tunnel") == NULL);
	json_decref(j);

	/* forwarded from the tunnel: no reason, the tunnel named; ICMP: no ports */
	e.kind = WEFT_FLOW_SAMPLE;
	e.from = WEFT_FROM_TUNNEL;
	e.proto = IPPROTO_ICMP;
	e.tunnel_id = 10;
	e.tunnel_remote = 0xc0a8c80c;	/* 192.168.200.12 */
	e.saddr = IP(10, 128, 0, 66);	/* a name that is not the API's: left out */
	n = flowserve_format(&e, 8, jan1, "node-1", namer, NULL, buf, sizeof(buf));
	j = line_json(buf, n);
	CHECK(j != NULL);
	CHECK_STR(jstr(j, "verdict", NULL), "forwarded");
	CHECK_STR(jstr(j, "event", NULL), "sample");
	CHECK(json_object_get(j, "reason") == NULL);
	CHECK_STR(jstr(j, "protocol", NULL), "ICMP");
	CHECK(json_object_get(json_object_get(j, "source"), "port") == NULL);
	CHECK(json_object_get(json_object_get(j, "source"), "pod") == NULL);
	CHECK_EQ(jint(j, "tunnel", "vni"), 10);
	CHECK_STR(jstr(j, "tunnel", "node"), "192.168.200.12");
	CHECK_STR(jstr(j, "from", NULL), "tunnel");
	json_decref(j);

	/* a buffer too small: nothing, not half a line */
	CHECK_EQ(flowserve_format(&e, 8, jan1, "node-1", namer, NULL, buf, 40), 0);
}

/* ---- the server ---- */

struct pki {
	char dir[PATH_MAX];
	gnutls_x509_privkey_t ca_key, other_key;
	gnutls_x509_crt_t ca, other;
	char *ca_pem;
};

static int new_key(gnutls_x509_privkey_t *k)
{
	int e = gnutls_x509_privkey_init(k);

	return e < 0 ? e : gnutls_x509_privkey_generate(*k, GNUTLS_PK_ECDSA,
							GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
}

static int make_ca(gnutls_x509_privkey_t *key, gnutls_x509_crt_t *crt, const char *cn)
{
	time_t now = time(NULL);
	int e;

	if ((e = new_key(key)) < 0 || (e = gnutls_x509_crt_init(crt)) < 0 ||
	    (e = x509_crt_base(*crt, *key, cn, now - 60, now + 86400)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(*crt, 1, -1)) < 0 ||
	    (e = gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0)
		return e;
	return gnutls_x509_crt_sign2(*crt, *crt, *key, GNUTLS_DIG_SHA256, 0);
}

static int write_pem(const char *dir, const char *name, const char *pem, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "w")))
		return -errno;
	fwrite(pem, 1, len, f);
	return fclose(f) ? -EIO : 0;
}

/* NAME.crt and NAME.key in p->dir: cn, for purpose, signed by ca */
static int issue(struct pki *p, const char *name, gnutls_x509_crt_t ca, gnutls_x509_privkey_t ca_key,
		 const char *cn, const char *purpose)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	time_t now = time(NULL);
	char *pem = NULL, file[64];
	size_t len;
	int e;

	if ((e = new_key(&key)) < 0 || (e = gnutls_x509_crt_init(&crt)) < 0 ||
	    (e = x509_crt_base(crt, key, cn, now - 60, now + 86400)) < 0 ||
	    (e = gnutls_x509_crt_set_key_purpose_oid(crt, purpose, 0)) < 0 ||
	    (e = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (e = x509_crt_pem(crt, &pem, &len)) < 0)
		goto out;
	snprintf(file, sizeof(file), "%s.crt", name);
	if ((e = write_pem(p->dir, file, pem, len)) < 0)
		goto out;
	free(pem);
	pem = NULL;
	if ((e = x509_key_pem(key, &pem, &len)) < 0)
		goto out;
	snprintf(file, sizeof(file), "%s.key", name);
	e = write_pem(p->dir, file, pem, len);
out:
	free(pem);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return e;
}

static bool pki_make(struct pki *p)
{
	size_t len;

	memset(p, 0, sizeof(*p));
	snprintf(p->dir, sizeof(p->dir), "%s", test_tmpdir());
	return make_ca(&p->ca_key, &p->ca, "weft-ca") == 0 && make_ca(&p->other_key, &p->other, "another-ca") == 0 &&
	       x509_crt_pem(p->ca, &p->ca_pem, &len) == 0 &&
	       issue(p, "relay", p->ca, p->ca_key, FLOWSERVE_CLIENT_CN, GNUTLS_KP_TLS_WWW_CLIENT) == 0 &&
	       issue(p, "stranger", p->other, p->other_key, FLOWSERVE_CLIENT_CN, GNUTLS_KP_TLS_WWW_CLIENT) == 0 &&
	       issue(p, "node", p->ca, p->ca_key, "system:node:node-1", GNUTLS_KP_TLS_WWW_CLIENT) == 0 &&
	       issue(p, "server", p->ca, p->ca_key, FLOWSERVE_CLIENT_CN, GNUTLS_KP_TLS_WWW_SERVER) == 0;
}

static void pki_free(struct pki *p)
{
	gnutls_x509_crt_deinit(p->ca);
	gnutls_x509_crt_deinit(p->other);
	gnutls_x509_privkey_deinit(p->ca_key);
	gnutls_x509_privkey_deinit(p->other_key);
	free(p->ca_pem);
}

/* a client of the server as NAME (NULL: no certificate), trusting pin */
static struct httpc *client(struct pki *p, struct flowserve *fs, const char *name, const char *pin)
{
	char url[64], crt[PATH_MAX + 16], key[PATH_MAX + 16], err[256];
	struct httpc_options o = { .server = url, .pinned_key = pin, .connect_timeout_ms = 5000,
				   .timeout_ms = 10000 };
	struct httpc *h;

	snprintf(url, sizeof(url), "https://127.0.0.1:%u", flowserve_port(fs));
	if (name) {
		snprintf(crt, sizeof(crt), "%s/%s.crt", p->dir, name);
		snprintf(key, sizeof(key), "%s/%s.key", p->dir, name);
		o.cert_file = crt;
		o.key_file = key;
	}
	h = httpc_create(&o, err, sizeof(err));
	if (!h)
		test_fail(__FILE__, __LINE__, "httpc_create: %s", err);
	return h;
}

/* GET path as name: the status (or the negative errno), the body in *body */
static long get(struct pki *p, struct flowserve *fs, const char *name, const char *pin, const char *method,
		const char *path, char **body)
{
	struct httpc *h = client(p, fs, name, pin);
	struct httpc_response r = { 0 };
	char err[256];
	long rc;

	if (!h)
		return -1;
	rc = httpc_request(h, method, path, NULL, 0, &r, err, sizeof(err));
	if (rc == 0) {
		rc = r.status;
		if (body)
			*body = strdup(r.body);
	}
	httpc_response_free(&r);
	httpc_destroy(h);
	return rc;
}

struct follower {
	struct fixture *f;
	struct flowlog *fl;
	int prog_fd;
	bool sent;
	bool timed_out;
};

/* Once the stream listens, a SYN from pod A: the event the stream waits for. */
static void *send_when_listened(void *arg)
{
	struct follower *w = arg;
	struct result r;
	struct pkt pk;

	for (int i = 0; i < 500 && flowlog_listeners(w->fl) == 0; i++)
		usleep(10 * 1000);
	if (flowlog_listeners(w->fl) == 0) {
		w->timed_out = true;
		return NULL;
	}
	tcp_from_a(&pk, 42424, POD_B_IP, 8080, TCP_SYN);
	w->sent = run(w->f, w->prog_fd, &pk, &r) == 0;
	return NULL;
}

static int on_line(const char *line, size_t len, void *arg)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	int done = 0;

	(void)arg;
	if (j && strcmp(jstr(j, "event", NULL), "new") == 0 && jint(j, "source", "port") == 42424)
		done = strcmp(jstr(j, "source", "pod"), "x/a") == 0 ? 1 : -EBADMSG;
	json_decref(j);
	return done;
}

DP_TEST(flowserve_serves_the_relay_only)
{
	struct flowserve_opts o = { .node = "node-1", .client_cn = FLOWSERVE_CLIENT_CN, .name = namer };
	struct flowserve *fs = NULL;
	struct flowlog *fl = NULL;
	struct datapath *dp = NULL;
	struct follower w = { .f = f };
	char err[256] = "", *body = NULL, wrong_pin[X509_PIN_MAX];
	struct httpc *h = NULL;
	struct result r;
	struct pki p;
	struct pkt pk;
	pthread_t t;

	CHECK_EQ(seed_node(f->dp), 0);
	CHECK(pki_make(&p));
	if (!(dp = fixture_production(f)))
		goto out;
	fl = flowlog_start(dp, 64);
	CHECK(fl != NULL);
	if (!fl)
		goto out;
	o.log = fl;
	o.client_ca_pem = p.ca_pem;
	o.addr.sin_family = AF_INET;
	o.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fs = flowserve_start(&o, err, sizeof(err));
	if (!fs) {
		test_fail(__FILE__, __LINE__, "flowserve_start: %s", err);
		goto out;
	}
	CHECK(flowserve_port(fs) > 0);
	CHECK(strncmp(flowserve_pin(fs), "sha256//", 8) == 0);

	/* a drop, kept before anyone asks */
	pkt_ipv4(&pk, gw_a_mac, pod_a_mac, IP(10, 128, 0, 77), POD_B_IP, 64);
	CHECK_EQ(run(f, datapath_pod_prog_fd(dp), &pk, &r), 0);
	for (int i = 0; i < 500 && flowlog_first(fl) == 1 && !flowlog_wait(fl, 0, 10); i++)
		;
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows", &body), 200);
	CHECK(body && strstr(body, "\"reason\":\"spoofed-ip\"") && strstr(body, "\"source\":{\"ip\":\"10.128.0.77\""));
	free(body);
	body = NULL;
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows?since=1", &body), 200);
	CHECK_STR(body ? body : "?", "");	/* nothing after it */
	free(body);
	body = NULL;
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows?verdict=forwarded", &body), 200);
	CHECK_STR(body ? body : "?", "");
	free(body);
	body = NULL;

	/* who is refused */
	CHECK_EQ(get(&p, fs, NULL, flowserve_pin(fs), "GET", "/v1/flows", NULL), 403);
	CHECK_EQ(get(&p, fs, "stranger", flowserve_pin(fs), "GET", "/v1/flows", NULL), 403);
	CHECK_EQ(get(&p, fs, "node", flowserve_pin(fs), "GET", "/v1/flows", NULL), 403);
	CHECK_EQ(get(&p, fs, "server", flowserve_pin(fs), "GET", "/v1/flows", NULL), 403);
	snprintf(wrong_pin, sizeof(wrong_pin), "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
	CHECK_EQ(get(&p, fs, "relay", wrong_pin, "GET", "/v1/flows", NULL), -EPROTO);

	/* what is asked wrong */
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows?since=x", &body), 400);
	CHECK(body && strstr(body, "since"));
	free(body);
	body = NULL;
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows?verdict=maybe", &body), 400);
	CHECK(body && strstr(body, "verdict"));
	free(body);
	body = NULL;
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/flows?ip=10.128.0", NULL), 400);
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "GET", "/v1/other", NULL), 404);
	CHECK_EQ(get(&p, fs, "relay", flowserve_pin(fs), "DELETE", "/v1/flows", NULL), 405);
	CHECK_EQ(flowlog_listeners(fl), 0);

	/* following: one listener, so the SYN sent meanwhile is reported */
	w.fl = fl;
	w.prog_fd = datapath_pod_prog_fd(dp);
	h = client(&p, fs, "relay", flowserve_pin(fs));
	CHECK(h != NULL);
	if (h && pthread_create(&t, NULL, send_when_listened, &w) == 0) {
		struct httpc_response sr = { 0 };

		CHECK_EQ(httpc_stream(h, "/v1/flows?follow=true&since=1&ip=10.128.0.5", on_line, NULL, &sr, err,
				      sizeof(err)), 0);
		CHECK_EQ(sr.status, 200);
		httpc_response_free(&sr);
		pthread_join(t, NULL);
		CHECK(w.sent);
		CHECK(!w.timed_out);
	}
	httpc_destroy(h);
	h = NULL;
	/* the connection gone, the listener goes at the next write (a heartbeat at most) */
	for (int i = 0; i < 1000 && flowlog_listeners(fl); i++)
		usleep(10 * 1000);
	CHECK_EQ(flowlog_listeners(fl), 0);
out:
	flowserve_stop(fs);
	flowlog_stop(fl);
	datapath_close(dp);
	pki_free(&p);
}
