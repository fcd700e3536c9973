/*
 * flows_relay_test.c — which nodes the flows relay reads (flows_targets):
 * those whose Node carries a well-formed weft.io/flows annotation (an
 * https endpoint and a sha256 pin), only the one named when one is, and
 * no more than FLOWS_RELAY_NODES_MAX; the others counted as skipped.
 * Then streams against small TLS servers here (libmicrohttpd, each with
 * its own key, trusted by its pin as an agent is): 300 nodes in one
 * stream, each line handed on with its node's name; and a followed node
 * whose stream breaks, read again where lookup says it serves now (a new
 * pin: from sequence 0, said as restarted) or from its last line's
 * sequence number.  The streams against real agents run in
 * tests/e2e/flows.sh.
 */
#include "controller/flows_relay.h"
#include "lib/x509.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static json_t *node(const char *name, const char *ann)
{
	json_t *n = json_pack("{s:s, s:{s:s}}", "kind", "Node", "metadata", "name", name);

	if (ann)
		json_object_set_new(json_object_get(n, "metadata"), "annotations",
				    json_pack("{s:s}", FLOWS_ANNOTATION, ann));
	return n;
}

#define GOOD "{\"endpoint\":\"https://192.168.200.11:9967\",\"pin\":\"sha256//AAAA\"}"

TEST(flows_targets_take_the_nodes_that_serve)
{
	json_t *nodes = json_array();
	struct flows_target *t = NULL;
	size_t n = 0, skipped = 0;

	json_array_append_new(nodes, node("node-1", GOOD));
	json_array_append_new(nodes, node("node-2", NULL));				/* an old agent */
	json_array_append_new(nodes, node("node-3", "{\"endpoint\":\"http://x:1\",\"pin\":\"sha256//A\"}"));	/* not TLS */
	json_array_append_new(nodes, node("node-4", "{\"endpoint\":\"https://x:1\",\"pin\":\"md5//A\"}"));
	json_array_append_new(nodes, node("node-5", "not json"));
	CHECK_EQ(flows_targets(nodes, NULL, &t, &n, &skipped), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(skipped, 4);
	if (n == 1) {
		CHECK_STR(t[0].node, "node-1");
		CHECK_STR(t[0].endpoint, "https://192.168.200.11:9967");
		CHECK_STR(t[0].pin, "sha256//AAAA");
	}
	free(t);
	CHECK_EQ(flows_targets(nodes, "node-2", &t, &n, &skipped), 0);	/* named, serves none */
	CHECK_EQ(n, 0);
	CHECK_EQ(skipped, 1);
	free(t);
	CHECK_EQ(flows_targets(nodes, "node-9", &t, &n, &skipped), 0);	/* no such node */
	CHECK_EQ(n + skipped, 0);
	free(t);
	json_decref(nodes);
}

TEST(flows_targets_bound_the_nodes_of_a_stream)
{
	json_t *nodes = json_array();
	struct flows_target *t = NULL;
	size_t n = 0, skipped = 0;
	char name[32];

	for (int i = 0; i <= FLOWS_RELAY_NODES_MAX; i++) {
		snprintf(name, sizeof(name), "node-%d", i);
		json_array_append_new(nodes, node(name, GOOD));
	}
	CHECK_EQ(flows_targets(nodes, NULL, &t, &n, &skipped), -E2BIG);
	CHECK(t == NULL);
	CHECK_EQ(flows_targets(nodes, "node-7", &t, &n, &skipped), 0);	/* one named: fine */
	CHECK_EQ(n, 1);
	free(t);
	json_decref(nodes);
}

/* ---------------------------------------------------------- a server */

/* An agent's flows endpoint, as far as the relay sees it: GET
 * /v1/flows?since=N[&follow=true] answers lines {"seq":K,"node":"x"} for K
 * from N+1 to N+lines; then, following and `hold`, nothing more until it
 * stops, else the end. */
struct server {
	struct MHD_Daemon *d;
	char *key_pem, *cert_pem;
	size_t key_len;
	char pin[X509_PIN_MAX];
	char endpoint[64];
	int lines;
	bool hold;
	atomic_int requests;
	atomic_ullong last_since;
	atomic_bool stopping;
};

struct answer {
	struct server *srv;
	unsigned long long next, end;
	bool follow;
};

static ssize_t answer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct answer *a = cls;

	(void)pos;
	if (a->next <= a->end) {
		int n = snprintf(buf, max, "{\"seq\":%llu,\"node\":\"liar\",\"verdict\":\"dropped\"}\n", a->next);

		a->next++;
		return n;
	}
	if (!a->follow || !a->srv->hold)
		return MHD_CONTENT_READER_END_OF_STREAM;
	while (!atomic_load(&a->srv->stopping))	/* holds the stream open, as a quiet node */
		usleep(20 * 1000);
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *data, size_t *size, void **ctx)
{
	struct server *srv = cls;
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
	const char *follow = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "follow");
	struct MHD_Response *r;
	struct answer *a;
	enum MHD_Result ret;

	(void)version, (void)data, (void)size;
	if (!*ctx) {	/* the headers first */
		*ctx = srv;
		return MHD_YES;
	}
	if (strcmp(url, "/v1/flows") || strcmp(method, "GET") || !(a = calloc(1, sizeof(*a))))
		return MHD_NO;
	a->srv = srv;
	a->next = (since ? strtoull(since, NULL, 10) : 0) + 1;
	a->end = a->next + (unsigned long long)srv->lines - 1;
	a->follow = follow && !strcmp(follow, "true");
	atomic_fetch_add(&srv->requests, 1);
	atomic_store(&srv->last_since, a->next - 1);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, answer_read, a, free);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static int server_start(struct server *srv, int lines, bool hold)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	time_t now = time(NULL);
	size_t len;
	int e;

	memset(srv, 0, sizeof(*srv));
	srv->lines = lines;
	srv->hold = hold;
	if ((e = gnutls_x509_privkey_init(&key)) < 0 || (e = gnutls_x509_crt_init(&crt)) < 0 ||
	    (e = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
	    (e = x509_crt_base(crt, key, "weft-agent", now - 60, now + 3600)) < 0 ||
	    (e = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (e = x509_key_pem(key, &srv->key_pem, &srv->key_len)) < 0 || (e = x509_crt_pem(crt, &srv->cert_pem, &len)) < 0 ||
	    (e = x509_pin(crt, srv->pin)) < 0) {
		gnutls_x509_crt_deinit(crt);
		gnutls_x509_privkey_deinit(key);
		return -EIO;
	}
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		const union MHD_DaemonInfo *i;

		srv->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
						  MHD_USE_TLS,
					  0, NULL, NULL, serve, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					  MHD_OPTION_HTTPS_MEM_KEY, srv->key_pem, MHD_OPTION_HTTPS_MEM_CERT, srv->cert_pem,
					  MHD_OPTION_CONNECTION_LIMIT, 1000u, MHD_OPTION_END);
		if (!srv->d || !(i = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT)))
			return -EADDRINUSE;
		snprintf(srv->endpoint, sizeof(srv->endpoint), "https://127.0.0.1:%u", i->port);
	}
	return 0;
}

static void server_stop(struct server *srv)
{
	atomic_store(&srv->stopping, true);
	if (srv->d)
		MHD_stop_daemon(srv->d);
	if (srv->key_pem)
		explicit_bzero(srv->key_pem, srv->key_len);
	free(srv->key_pem);
	free(srv->cert_pem);
}

/* The relay's identity: any certificate (these servers ask for none),
 * written where httpc reads it. */
static int identity(const struct server *srv, char *cert, char *key, size_t len)
{
	FILE *f;

	snprintf(cert, len, "%s/relay.crt", test_tmpdir());
	snprintf(key, len, "%s/relay.key", test_tmpdir());
	if (!(f = fopen(cert, "w")) || fputs(srv->cert_pem, f) < 0 || fclose(f))
		return -EIO;
	if (!(f = fopen(key, "w")) || fputs(srv->key_pem, f) < 0 || fclose(f))
		return -EIO;
	return 0;
}

/* ---------------------------------------------------------- a reader */

struct reader {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool woken;
};

static void reader_suspend(void *arg)
{
	(void)arg;	/* (the stream's lock is held: the wake waits for it) */
}

static void reader_wake(void *arg)
{
	struct reader *r = arg;

	pthread_mutex_lock(&r->lock);
	r->woken = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Read s into *text (grown) until it holds until (NULL: the end of the
 * stream) or timeout_s passes: found (or ended)? */
static bool read_until(struct flows_stream *s, struct reader *rd, char **text, size_t *len, const char *until,
		       int timeout_s)
{
	time_t deadline = time(NULL) + timeout_s;
	char buf[16384];

	while (time(NULL) < deadline) {
		ssize_t n = flows_stream_read(s, buf, sizeof(buf), reader_suspend, rd);

		if (n < 0)
			return until == NULL;
		if (n > 0) {
			char *t = realloc(*text, *len + (size_t)n + 1);

			if (!t)
				return false;
			memcpy(t + *len, buf, (size_t)n);
			*len += (size_t)n;
			t[*len] = 0;
			*text = t;
			if (until && strstr(*text, until))
				return true;
			continue;
		}
		pthread_mutex_lock(&rd->lock);
		if (!rd->woken) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&rd->cond, &rd->lock, &ts);
		}
		rd->woken = false;
		pthread_mutex_unlock(&rd->lock);
	}
	return false;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static int no_lookup(void *arg, const char *node, struct flows_target *out)
{
	(void)arg, (void)node, (void)out;
	return -ENOENT;
}

/* 300 nodes in one stream (more than the 256 the first relay took), each
 * read by its own thread: every node's lines, each with its own name
 * (never the one its server wrote), then the end. */
TEST(flows_stream_reads_300_nodes)
{
	enum { NODES = 300 };
	struct reader rd = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct flows_query q = { 0 };
	struct flows_target *t = calloc(NODES, sizeof(*t));
	struct flows_relay *relay = NULL;
	struct flows_stream *s = NULL;
	struct server srv;
	char cert[512], key[512], want[64], *text = NULL;
	size_t len = 0, missing = 0, errors = 0, lines = 0, liars = 0;
	bool ended = false;

	CHECK(t != NULL);
	CHECK_EQ(server_start(&srv, 2, false), 0);
	CHECK_EQ(identity(&srv, cert, key, sizeof(cert)), 0);
	relay = flows_relay_create(cert, key, no_lookup, NULL);
	CHECK(relay != NULL);
	if (!t || !relay || test_failed())
		goto out;
	for (int i = 0; i < NODES; i++) {
		snprintf(t[i].node, sizeof(t[i].node), "n-%d", i);
		snprintf(t[i].endpoint, sizeof(t[i].endpoint), "%s", srv.endpoint);
		snprintf(t[i].pin, sizeof(t[i].pin), "%s", srv.pin);
	}
	s = flows_stream_open(relay, t, NODES, &q, reader_wake, &rd);
	CHECK(s != NULL);
	if (!s)
		goto out;
	ended = read_until(s, &rd, &text, &len, NULL, 60);
	errors = count(text, "\"error\"");
	if (errors)	/* what they were, for whoever reads the log */
		fprintf(stderr, "%.2000s\n", strstr(text, "\"error\""));
	for (int i = 0; i < NODES; i++) {
		snprintf(want, sizeof(want), "\"node\":\"n-%d\"", i);
		missing += count(text, want) != 2;
	}
out:
	flows_stream_close(s);
	flows_relay_destroy(relay);	/* waits for the 300 threads */
	server_stop(&srv);
	lines = count(text, "\"verdict\":\"dropped\"");
	liars = count(text, "liar");
	free(text);
	free(t);
	CHECK(ended);
	CHECK_EQ(errors, 0);
	CHECK_EQ(lines, 2 * NODES);
	CHECK_EQ(liars, 0);
	CHECK_EQ(missing, 0);
	CHECK_EQ(atomic_load(&srv.requests), NODES);
}

struct moved {
	struct server *_Atomic now;	/* where the node serves now */
	atomic_int asked;
};

static int moved_lookup(void *arg, const char *node, struct flows_target *out)
{
	struct moved *m = arg;

	atomic_fetch_add(&m->asked, 1);
	if (strcmp(node, "node-2"))
		return -ENOENT;
	snprintf(out->node, sizeof(out->node), "%s", node);
	snprintf(out->endpoint, sizeof(out->endpoint), "%s", m->now->endpoint);
	snprintf(out->pin, sizeof(out->pin), "%s", m->now->pin);
	return 0;
}

/* Following, a node whose stream ends is read again: the break said with
 * the wait, then where lookup says it serves.  The same agent (the same
 * pin) from the last line's sequence number; a new one (a new pin) from
 * 0, said as restarted. */
TEST(flows_stream_follows_a_node_again)
{
	struct reader rd = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct flows_query q = { .follow = true };
	struct server first, again;
	struct moved m = { .now = &first };
	struct flows_relay *relay = NULL;
	struct flows_stream *s = NULL;
	struct flows_target t = { .node = "node-2" };
	char cert[512], key[512], *text = NULL;
	size_t len = 0;

	CHECK_EQ(server_start(&first, 3, false), 0);	/* ends each stream after 3 lines */
	CHECK_EQ(server_start(&again, 1, true), 0);	/* a new agent: 1 line, then quiet */
	CHECK_EQ(identity(&first, cert, key, sizeof(cert)), 0);
	relay = flows_relay_create(cert, key, moved_lookup, &m);
	CHECK(relay != NULL);
	if (!relay || test_failed())
		goto out;
	snprintf(t.endpoint, sizeof(t.endpoint), "%s", first.endpoint);
	snprintf(t.pin, sizeof(t.pin), "%s", first.pin);
	s = flows_stream_open(relay, &t, 1, &q, reader_wake, &rd);
	CHECK(s != NULL);
	if (!s)
		goto out;
	/* the first read ends: said, with the wait, then read again from 3 */
	CHECK(read_until(s, &rd, &text, &len, "\"retryInSeconds\":1}", 10));
	CHECK(strstr(text, "{\"node\":\"node-2\",\"error\":\"https://127.0.0.1:") != NULL);
	CHECK(strstr(text, "ended the stream\",\"retryInSeconds\":1}") != NULL);
	CHECK(read_until(s, &rd, &text, &len, "\"seq\":4,", 10));
	CHECK(strstr(text, "{\"node\":\"node-2\",\"resumed\":true,\"restarted\":false}\n{\"seq\":4,") != NULL);
	CHECK(atomic_load(&first.last_since) >= 3);
	/* the agent restarts elsewhere, with a new key: read from 0 */
	m.now = &again;
	CHECK(read_until(s, &rd, &text, &len, "\"restarted\":true}", 15));
	CHECK(read_until(s, &rd, &text, &len, "\"restarted\":true}\n{\"seq\":1,", 5));
	CHECK_EQ(atomic_load(&again.last_since), 0);
	CHECK(atomic_load(&m.asked) >= 2);
	CHECK_EQ(count(text, "liar"), 0);
out:
	flows_stream_close(s);	/* the held stream: cancelled */
	flows_relay_destroy(relay);
	server_stop(&again);
	server_stop(&first);
	free(text);
}
