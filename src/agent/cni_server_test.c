/*
 * cni_server_test.c — the CNI endpoint against a fake cni_ops that records
 * its calls:
 *
 *  1. cni_server_handle() directly: every error path (request, environment,
 *     configuration, versions, CNI_ARGS, prevResult, GC lists, op
 *     failures), the ADD result in every version, and a randomized run of
 *     mangled requests that must all get a well-formed reply;
 *  2. the real server on a temporary socket, driven by the real plugin
 *     binary (build/san/bin/weft-cni, or $WEFT_CNI) through fork/exec with
 *     an environment and stdin, as a container runtime runs it:
 *
 *       test ──fork/exec──► weft-cni ──unix socket──► cni_server ──► fake ops
 *            ◄──stdout, exit──┘
 *
 * Tests run from the repository root.
 */
#include "agent/cni_server.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/cni_proto.h"

/* ---- the fake agent ---- */

struct fake {
	pthread_mutex_t lock;
	int calls[CNI_STATUS + 1];
	char container_id[256], ifname[16], netns[256], version[16], network[64];
	char pod_namespace[256], pod_name[256];
	bool netns_fd_open;		/* the fd the op saw was a live fd */
	bool had_prev;
	size_t n_valid;
	char valid[4][2][64];
	int fail_code;			/* > 0: every op fails with it */
	bool fail_silently;		/* fail without filling err */
	int delay_ms;
	int others_running, gc_running;
	bool overlap;			/* GC ran beside another op */
	int running, max_running;
	unsigned next_ip;
};

static struct fake fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void fake_reset(void)
{
	pthread_mutex_lock(&fake.lock);
	memset((char *)&fake + sizeof(fake.lock), 0, sizeof(fake) - sizeof(fake.lock));
	pthread_mutex_unlock(&fake.lock);
}

/* The ops write fake.* under its lock; the test reads it after the reply
 * arrived and writes it before the next request.  The order runs through
 * other processes, which TSan cannot see: taking the lock around each
 * exchange shows it. */
static void fake_sync(void)
{
	pthread_mutex_lock(&fake.lock);
	pthread_mutex_unlock(&fake.lock);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

#define COPY(dst, src) snprintf(dst, sizeof(dst), "%s", (src) ? (src) : "")

static int record(const struct cni_req *req, struct cni_err *err)
{
	int delay, code;

	pthread_mutex_lock(&fake.lock);
	fake.calls[req->cmd]++;
	COPY(fake.container_id, req->container_id);
	COPY(fake.ifname, req->ifname);
	COPY(fake.netns, req->netns);
	COPY(fake.version, req->cni_version);
	COPY(fake.network, req->network);
	COPY(fake.pod_namespace, req->pod_namespace);
	COPY(fake.pod_name, req->pod_name);
	fake.netns_fd_open = req->netns_fd >= 0 && fcntl(req->netns_fd, F_GETFD) >= 0;
	fake.had_prev = req->prev_result != NULL;
	fake.n_valid = req->n_valid;
	for (size_t i = 0; i < req->n_valid && i < 4; i++) {
		COPY(fake.valid[i][0], req->valid[i].container_id);
		COPY(fake.valid[i][1], req->valid[i].ifname);
	}
	if (req->cmd == CNI_GC) {
		fake.gc_running++;
		if (fake.others_running)
			fake.overlap = true;
	} else {
		fake.others_running++;
		if (fake.gc_running)
			fake.overlap = true;
	}
	fake.running++;
	if (fake.running > fake.max_running)
		fake.max_running = fake.running;
	delay = fake.delay_ms;
	code = fake.fail_code;
	pthread_mutex_unlock(&fake.lock);

	if (delay)
		sleep_ms(delay);

	pthread_mutex_lock(&fake.lock);
	if (req->cmd == CNI_GC)
		fake.gc_running--;
	else
		fake.others_running--;
	fake.running--;
	pthread_mutex_unlock(&fake.lock);
	if (!code)
		return 0;
	if (!fake.fail_silently) {
		err->code = code;
		snprintf(err->msg, sizeof(err->msg), "fake failure");
		snprintf(err->details, sizeof(err->details), "as asked");
	}
	return -1;
}

static int fake_add(void *ctx, const struct cni_req *req, struct cni_add_result *res,
		    struct cni_err *err)
{
	unsigned n;

	(void)ctx;
	if (record(req, err))
		return -1;
	pthread_mutex_lock(&fake.lock);
	n = ++fake.next_ip;
	pthread_mutex_unlock(&fake.lock);
	snprintf(res->host_ifname, sizeof(res->host_ifname), "weft%08x", n);
	memcpy(res->host_mac, "\x02\x00\x00\x00\x00\x01", 6);
	snprintf(res->pod_ifname, sizeof(res->pod_ifname), "%s", req->ifname);
	memcpy(res->pod_mac, "\x0a\x58\x0a\x80\x02\x07", 6);
	res->mtu = 1450;
	res->ip = htonl(0x0a800200u + 1 + n);	/* 10.128.2.(1+n) */
	res->gateway = htonl(0x0a800201u);	/* 10.128.2.1 */
	return 0;
}

static int fake_del(void *ctx, const struct cni_req *req, struct cni_err *err)
{
	(void)ctx;
	return record(req, err);
}

static const struct cni_ops fake_ops = {
	.add = fake_add, .del = fake_del, .check = fake_del, .gc = fake_del, .status = fake_del,
};

/* ---- cni_server_handle directly ---- */

struct answer {
	int exit;
	json_t *out;		/* stdout parsed; NULL when empty */
	char *text;		/* stdout */
};

static void answer_free(struct answer *a)
{
	json_decref(a->out);
	free(a->text);
	memset(a, 0, sizeof(*a));
}

/* Parses a reply envelope into a; 0 or -1 (malformed). */
static int parse_envelope(const char *reply, struct answer *a)
{
	json_t *env = json_loads(reply, 0, NULL);
	json_t *code = json_object_get(env, "exit"), *out = json_object_get(env, "stdout");

	memset(a, 0, sizeof(*a));
	if (!json_is_integer(code) || !json_is_string(out)) {
		json_decref(env);
		return -1;
	}
	a->exit = (int)json_integer_value(code);
	a->text = strdup(json_string_value(out));
	if (a->text[0])
		a->out = json_loads(a->text, 0, NULL);
	json_decref(env);
	if (a->text[0] && !a->out)
		return -1;
	return 0;
}

/* One request through cni_server_handle.  NULL arguments are left out. */
static int handle(struct answer *a, const char *command, const char *id, const char *netns,
		  const char *ifname, const char *args, const char *config, int netns_fd)
{
	json_t *r = json_object();
	char *req, *reply;
	int e;

	if (command)
		json_object_set_new(r, "command", json_string(command));
	if (id)
		json_object_set_new(r, "containerID", json_string(id));
	if (netns)
		json_object_set_new(r, "netns", json_string(netns));
	if (ifname)
		json_object_set_new(r, "ifname", json_string(ifname));
	if (args)
		json_object_set_new(r, "args", json_string(args));
	if (config)
		json_object_set_new(r, "config", json_string(config));
	req = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	reply = cni_server_handle(&fake_ops, NULL, req, netns_fd);
	free(req);
	if (!reply)
		return -1;
	e = parse_envelope(reply, a);
	free(reply);
	return e;
}

static int handle_raw(struct answer *a, const char *request)
{
	char *reply = cni_server_handle(&fake_ops, NULL, request, -1);
	int e;

	if (!reply)
		return -1;
	e = parse_envelope(reply, a);
	free(reply);
	return e;
}

static int code_of(const struct answer *a)
{
	return (int)json_integer_value(json_object_get(a->out, "code"));
}

static const char *msg_of(const struct answer *a)
{
	return json_string_value(json_object_get(a->out, "msg"));
}

static const char *str_at(json_t *o, const char *path)
{
	/* "a.0.b": object keys and array indexes */
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, strtoul(tok, NULL, 10))
				     : json_object_get(o, tok);
	return json_string_value(o);
}

static json_t *at(json_t *o, const char *path)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, strtoul(tok, NULL, 10))
				     : json_object_get(o, tok);
	return o;
}

#define CONF(v) "{\"cniVersion\":\"" v "\",\"name\":\"weft\",\"type\":\"weft\"}"
#define PREV "{\"cniVersion\":\"1.0.0\",\"interfaces\":[],\"ips\":[]}"

/* An error with this code (and, when given, a message containing msg). */
#define CHECK_ERROR(a, code, msg)                                                  \
	do {                                                                       \
		CHECK_EQ((a)->exit, 1);                                            \
		CHECK((a)->out != NULL);                                           \
		CHECK_EQ(code_of(a), code);                                        \
		if (msg)                                                           \
			CHECK_CONTAINS(msg_of(a), (const char *)(msg));            \
		CHECK(json_is_string(json_object_get((a)->out, "details")));       \
		CHECK(json_is_string(json_object_get((a)->out, "cniVersion")));    \
	} while (0)

TEST(handle_bad_requests)
{
	struct answer a;

	fake_reset();
	CHECK(handle_raw(&a, "not json") == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "bad request");
	answer_free(&a);
	CHECK(handle_raw(&a, "[1,2]") == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, NULL);
	answer_free(&a);
	CHECK(handle_raw(&a, "{\"command\":7}") == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "\"command\" is not a string");
	answer_free(&a);
	CHECK(handle_raw(&a, "{\"command\":\"ADD\",\"config\":{}}") == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, NULL);
	answer_free(&a);
	/* jansson refuses \u0000: no NUL reaches a C string */
	CHECK(handle_raw(&a, "{\"command\":\"ADD\",\"containerID\":\"a\\u0000b\"}") == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "bad request");
	answer_free(&a);
	CHECK(handle_raw(&a, "{}") == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "CNI_COMMAND");
	answer_free(&a);
	CHECK(handle(&a, "ADDD", "c1", "/n", "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "unknown CNI_COMMAND \"ADDD\"");
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_ADD], 0);
}

TEST(handle_version)
{
	struct answer a;

	CHECK(handle(&a, "VERSION", NULL, NULL, NULL, NULL, NULL, -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(str_at(a.out, "cniVersion"), "1.1.0");
	CHECK_EQ(json_array_size(json_object_get(a.out, "supportedVersions")), 7);
	CHECK_STR(str_at(a.out, "supportedVersions.5"), "1.0.0");
	answer_free(&a);
}

TEST(handle_missing_environment)
{
	struct answer a;

	fake_reset();
	CHECK(handle(&a, "ADD", NULL, NULL, NULL, NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME");
	answer_free(&a);
	CHECK(handle(&a, "CHECK", "c1", NULL, "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "missing: CNI_NETNS");
	answer_free(&a);
	/* DEL needs no netns; empty counts as missing */
	CHECK(handle(&a, "DEL", "", NULL, NULL, NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "missing: CNI_CONTAINERID, CNI_IFNAME");
	CHECK(!strstr(msg_of(&a), "NETNS"));
	answer_free(&a);
	CHECK(handle(&a, "DEL", "c1", NULL, "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(a.text, "");
	CHECK_EQ(fake.calls[CNI_DEL], 1);
	CHECK_STR(fake.netns, "");
	answer_free(&a);
	/* GC and STATUS need none */
	CHECK(handle(&a, "STATUS", NULL, NULL, NULL, NULL, CONF("1.1.0"), -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(a.text, "");
	CHECK_EQ(fake.calls[CNI_STATUS], 1);
	answer_free(&a);
}

TEST(handle_bad_environment)
{
	static const char *bad_ids[] = { "-c", ".c", "c d", "c/d", "c;d", "\xc3\xa4" };
	static const char *bad_ifnames[] = { ".", "..", "eth/0", "eth:0", "eth 0", "eth\t0",
					     "0123456789abcdef" };
	char longid[CNI_ID_MAX + 2], longns[CNI_NETNS_MAX + 2];
	struct answer a;

	fake_reset();
	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		CHECK(handle(&a, "ADD", bad_ids[i], "/n", "eth0", NULL, CONF("1.0.0"), -1) == 0);
		CHECK_ERROR(&a, CNI_ERR_ENV, "CNI_CONTAINERID");
		answer_free(&a);
	}
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	CHECK(handle(&a, "DEL", longid, NULL, "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "longer than 255");
	answer_free(&a);
	for (size_t i = 0; i < sizeof(bad_ifnames) / sizeof(bad_ifnames[0]); i++) {
		CHECK(handle(&a, "ADD", "c1", "/n", bad_ifnames[i], NULL, CONF("1.0.0"), -1) == 0);
		CHECK_ERROR(&a, CNI_ERR_ENV, "CNI_IFNAME");
		answer_free(&a);
	}
	memset(longns, 'n', sizeof(longns) - 1);
	longns[sizeof(longns) - 1] = '\0';
	CHECK(handle(&a, "ADD", "c1", longns, "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "CNI_NETNS");
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_ADD] + fake.calls[CNI_DEL], 0);
}

TEST(handle_bad_config)
{
	struct answer a;

	fake_reset();
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, NULL, -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "no network configuration");
	answer_free(&a);
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, "{\"cniVersion\":", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "not valid JSON");
	CHECK_CONTAINS(str_at(a.out, "details"), "line 1");
	answer_free(&a);
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, "[\"1.0.0\"]", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_DECODE, "not a JSON object");
	answer_free(&a);
	/* name: missing, wrong type, bad characters, too long -> 7 */
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, "{\"cniVersion\":\"1.0.0\"}", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "no \"name\"");
	CHECK_STR(str_at(a.out, "cniVersion"), "1.0.0");	/* reported in the config's */
	answer_free(&a);
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL,
		     "{\"cniVersion\":\"0.4.0\",\"name\":5}", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "not a string");
	CHECK_STR(str_at(a.out, "cniVersion"), "0.4.0");
	answer_free(&a);
	CHECK(handle(&a, "DEL", "c1", NULL, "eth0", NULL,
		     "{\"cniVersion\":\"1.0.0\",\"name\":\"my net\"}", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "invalid network name \"my net\"");
	answer_free(&a);
	/* prevResult of the wrong type */
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL,
		     "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"prevResult\":[]}", -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "prevResult");
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_ADD] + fake.calls[CNI_DEL], 0);
}

TEST(handle_versions)
{
	static const struct {
		const char *config;
		int code;
		const char *msg;
	} cases[] = {
		{ "{\"name\":\"n\"}", CNI_ERR_DECODE, "no cniVersion" },
		{ "{\"name\":\"n\",\"cniVersion\":1.0}", CNI_ERR_DECODE, "not a version" },
		{ "{\"name\":\"n\",\"cniVersion\":\"abc\"}", CNI_ERR_DECODE, "not a version" },
		{ "{\"name\":\"n\",\"cniVersion\":\"1.0\"}", CNI_ERR_DECODE, "not a version" },
		{ "{\"name\":\"n\",\"cniVersion\":\"1.0.0.0\"}", CNI_ERR_DECODE, "not a version" },
		{ "{\"name\":\"n\",\"cniVersion\":\"\"}", CNI_ERR_DECODE, "not a version" },
		{ "{\"name\":\"n\",\"cniVersion\":\"2.0.0\"}", CNI_ERR_VERSION, "incompatible" },
		{ "{\"name\":\"n\",\"cniVersion\":\"0.3.2\"}", CNI_ERR_VERSION, "incompatible" },
		{ "{\"name\":\"n\",\"cniVersion\":\"1.2.0\"}", CNI_ERR_VERSION, "incompatible" },
		{ "{\"name\":\"n\",\"cniVersions\":\"1.0.0\"}", CNI_ERR_DECODE, "cniVersions" },
		{ "{\"name\":\"n\",\"cniVersions\":[1]}", CNI_ERR_DECODE, "cniVersions[0]" },
		{ "{\"name\":\"n\",\"cniVersions\":[\"2.0.0\"]}", CNI_ERR_VERSION, "none" },
		{ "{\"name\":\"n\",\"cniVersions\":[]}", CNI_ERR_VERSION, "none" },
	};
	struct answer a;

	fake_reset();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, cases[i].config, -1) == 0);
		if (a.exit != 1 || code_of(&a) != cases[i].code ||
		    !strstr(msg_of(&a), cases[i].msg)) {
			test_fail(__FILE__, __LINE__, "%s: got %s", cases[i].config, a.text);
			answer_free(&a);
			return;
		}
		/* never echo a version weft does not speak */
		CHECK_STR(str_at(a.out, "cniVersion"), "1.1.0");
		answer_free(&a);
	}
	CHECK_EQ(fake.calls[CNI_ADD], 0);

	/* a 1.1.0 list: the highest version both sides know */
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL,
		     "{\"name\":\"n\",\"cniVersions\":[\"0.4.0\",\"1.1.0\",\"9.0.0\",\"1.0.0\"]}",
		     -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(str_at(a.out, "cniVersion"), "1.1.0");
	CHECK_STR(fake.version, "1.1.0");
	answer_free(&a);
	/* cniVersion wins over cniVersions */
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL,
		     "{\"name\":\"n\",\"cniVersion\":\"1.0.0\",\"cniVersions\":[\"1.1.0\"]}", -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(str_at(a.out, "cniVersion"), "1.0.0");
	answer_free(&a);
}

TEST(handle_command_version_gates)
{
	static const struct {
		const char *command, *version;
		int ok;
	} cases[] = {
		{ "CHECK", "0.3.1", 0 },  { "CHECK", "0.2.0", 0 }, { "CHECK", "0.4.0", 1 },
		{ "CHECK", "1.0.0", 1 },  { "CHECK", "1.1.0", 1 }, { "GC", "1.0.0", 0 },
		{ "GC", "0.4.0", 0 },	  { "GC", "1.1.0", 1 },	   { "STATUS", "1.0.0", 0 },
		{ "STATUS", "1.1.0", 1 }, { "DEL", "0.1.0", 1 },   { "DEL", "0.3.0", 1 },
		{ "ADD", "0.1.0", 1 },	  { "ADD", "0.2.0", 1 },
	};
	char config[256];
	struct answer a;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_reset();
		snprintf(config, sizeof(config),
			 "{\"cniVersion\":\"%s\",\"name\":\"n\",\"prevResult\":%s,"
			 "\"cni.dev/valid-attachments\":[]}",
			 cases[i].version, PREV);
		CHECK(handle(&a, cases[i].command, "c1", "/n", "eth0", NULL, config, -1) == 0);
		if (cases[i].ok ? a.exit != 0 : (a.exit != 1 || code_of(&a) != CNI_ERR_VERSION)) {
			test_fail(__FILE__, __LINE__, "%s with %s: got %s", cases[i].command,
				  cases[i].version, a.text);
			answer_free(&a);
			return;
		}
		if (!cases[i].ok) {
			/* the error speaks the configuration's version */
			CHECK_STR(str_at(a.out, "cniVersion"), cases[i].version);
			CHECK_CONTAINS(msg_of(&a), cases[i].command);
		}
		CHECK_EQ(fake.calls[CNI_ADD] + fake.calls[CNI_DEL] + fake.calls[CNI_CHECK] +
				 fake.calls[CNI_GC] + fake.calls[CNI_STATUS],
			 cases[i].ok);
		answer_free(&a);
	}
}

TEST(handle_cni_args)
{
	static const struct {
		const char *args;
		int code;	/* 0: ok */
		const char *msg;
	} cases[] = {
		{ "", 0, NULL },
		{ "K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod1", 0, NULL },
		{ "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod1;"
		  "K8S_POD_INFRA_CONTAINER_ID=c1;K8S_POD_UID=u-1", 0, NULL },
		{ "K8S_POD_UID=u;K8S_ANYTHING=x", 0, NULL },
		{ "FOO=bar", CNI_ERR_UNSUPPORTED_FIELD, "\"FOO\" (value \"bar\")" },
		{ "FOO=bar;IgnoreUnknown=1", 0, NULL },
		{ "IgnoreUnknown=true;FOO=bar", 0, NULL },
		{ "IgnoreUnknown=TRUE;FOO=bar", 0, NULL },
		{ "IgnoreUnknown=0;FOO=bar", CNI_ERR_UNSUPPORTED_FIELD, "FOO" },
		{ "IgnoreUnknown=false;FOO=bar", CNI_ERR_UNSUPPORTED_FIELD, "FOO" },
		{ "K8S_POD_NAME=a;;", 0, NULL },
		{ "novalue", CNI_ERR_ENV, "invalid CNI_ARGS pair \"novalue\"" },
		{ "=x", CNI_ERR_ENV, "invalid CNI_ARGS pair" },
		{ "IgnoreUnknown=1;broken", CNI_ERR_ENV, "broken" },
	};
	char long_args[600];
	struct answer a;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_reset();
		CHECK(handle(&a, "ADD", "c1", "/n", "eth0", cases[i].args, CONF("1.0.0"), -1) == 0);
		if (cases[i].code ? (a.exit != 1 || code_of(&a) != cases[i].code ||
				     !strstr(msg_of(&a), cases[i].msg))
				  : a.exit != 0) {
			test_fail(__FILE__, __LINE__, "CNI_ARGS %s: got %s", cases[i].args, a.text);
			answer_free(&a);
			return;
		}
		answer_free(&a);
	}
	fake_reset();
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0",
		     "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod1;X=y", CONF("1.0.0"),
		     -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(fake.pod_namespace, "ns1");
	CHECK_STR(fake.pod_name, "pod1");
	answer_free(&a);
	/* a name no Kubernetes object can have */
	snprintf(long_args, sizeof(long_args), "K8S_POD_NAME=%0300d", 0);
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", long_args, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_ENV, "K8S_POD_NAME");
	answer_free(&a);
}

TEST(handle_prev_result_and_check)
{
	struct answer a;

	fake_reset();
	CHECK(handle(&a, "CHECK", "c1", "/n", "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "prevResult");
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_CHECK], 0);
	CHECK(handle(&a, "CHECK", "c1", "/n", "eth0", NULL,
		     "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"prevResult\":" PREV "}", -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(a.text, "");
	CHECK_EQ(fake.calls[CNI_CHECK], 1);
	CHECK(fake.had_prev);
	answer_free(&a);
}

TEST(handle_gc_lists)
{
	struct answer a;

	fake_reset();
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL,
		     "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"cni.dev/valid-attachments\":"
		     "[{\"containerID\":\"c1\",\"ifname\":\"eth0\"},"
		     "{\"containerID\":\"c2\",\"ifname\":\"net1\"}]}",
		     -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_STR(a.text, "");
	CHECK_EQ(fake.calls[CNI_GC], 1);
	CHECK_EQ(fake.n_valid, 2);
	CHECK_STR(fake.valid[0][0], "c1");
	CHECK_STR(fake.valid[0][1], "eth0");
	CHECK_STR(fake.valid[1][0], "c2");
	CHECK_STR(fake.valid[1][1], "net1");
	answer_free(&a);

	/* the older spelling */
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL,
		     "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"cni.dev/attachments\":"
		     "[{\"containerID\":\"c3\",\"ifname\":\"eth0\"}]}",
		     -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_EQ(fake.n_valid, 1);
	CHECK_STR(fake.valid[0][0], "c3");
	answer_free(&a);

	/* null and [] are empty lists: keep nothing */
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL,
		     "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"cni.dev/valid-attachments\":null}",
		     -1) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK_EQ(fake.n_valid, 0);
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_GC], 3);

	/* absent or malformed: refused, nothing collected */
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL, CONF("1.1.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "valid-attachments");
	answer_free(&a);
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL,
		     "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"cni.dev/valid-attachments\":{}}",
		     -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "not a list");
	answer_free(&a);
	CHECK(handle(&a, "GC", NULL, NULL, NULL, NULL,
		     "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"cni.dev/valid-attachments\":"
		     "[{\"containerID\":\"c1\",\"ifname\":\"eth0\"},{\"containerID\":\"c2\"}]}",
		     -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_CONFIG, "[1]");
	answer_free(&a);
	CHECK_EQ(fake.calls[CNI_GC], 3);
}

TEST(handle_add_result_per_version)
{
	static const char *versions[] = { "1.1.0", "1.0.0", "0.4.0", "0.3.1", "0.3.0" };
	char config[128];
	struct answer a;

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		bool v11 = i == 0, v1 = i <= 1;

		fake_reset();
		snprintf(config, sizeof(config), "{\"cniVersion\":\"%s\",\"name\":\"n\"}", versions[i]);
		CHECK(handle(&a, "ADD", "c1", "/var/run/netns/p1", "eth0", NULL, config, -1) == 0);
		CHECK_EQ(a.exit, 0);
		CHECK(a.text[strlen(a.text) - 1] == '\n');
		CHECK_STR(str_at(a.out, "cniVersion"), versions[i]);
		CHECK_EQ(json_array_size(at(a.out, "interfaces")), 2);
		CHECK_STR(str_at(a.out, "interfaces.0.name"), "weft00000001");
		CHECK_STR(str_at(a.out, "interfaces.0.mac"), "02:00:00:00:00:01");
		CHECK(at(a.out, "interfaces.0.sandbox") == NULL);
		CHECK(at(a.out, "interfaces.0.mtu") == NULL);
		CHECK_STR(str_at(a.out, "interfaces.1.name"), "eth0");
		CHECK_STR(str_at(a.out, "interfaces.1.mac"), "0a:58:0a:80:02:07");
		CHECK_STR(str_at(a.out, "interfaces.1.sandbox"), "/var/run/netns/p1");
		if (v11)
			CHECK_EQ(json_integer_value(at(a.out, "interfaces.1.mtu")), 1450);
		else
			CHECK(at(a.out, "interfaces.1.mtu") == NULL);
		CHECK_EQ(json_array_size(at(a.out, "ips")), 1);
		CHECK_STR(str_at(a.out, "ips.0.address"), "10.128.2.2/32");
		CHECK_STR(str_at(a.out, "ips.0.gateway"), "10.128.2.1");
		CHECK_EQ(json_integer_value(at(a.out, "ips.0.interface")), 1);
		if (v1)
			CHECK(at(a.out, "ips.0.version") == NULL);
		else
			CHECK_STR(str_at(a.out, "ips.0.version"), "4");
		CHECK_EQ(json_array_size(at(a.out, "routes")), 1);
		CHECK_STR(str_at(a.out, "routes.0.dst"), "0.0.0.0/0");
		CHECK_STR(str_at(a.out, "routes.0.gw"), "10.128.2.1");
		CHECK(json_is_object(at(a.out, "dns")));
		CHECK_EQ(json_object_size(a.out), 5);
		CHECK_EQ(fake.calls[CNI_ADD], 1);
		CHECK_STR(fake.version, versions[i]);
		CHECK_STR(fake.network, "n");
		CHECK_STR(fake.container_id, "c1");
		CHECK_STR(fake.ifname, "eth0");
		answer_free(&a);
	}

	/* 0.1.0 and 0.2.0: the old "ip4" result */
	for (int i = 0; i < 2; i++) {
		fake_reset();
		snprintf(config, sizeof(config), "{\"cniVersion\":\"0.%d.0\",\"name\":\"n\"}", i + 1);
		CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, config, -1) == 0);
		CHECK_EQ(a.exit, 0);
		CHECK_STR(str_at(a.out, "ip4.ip"), "10.128.2.2/32");
		CHECK_STR(str_at(a.out, "ip4.gateway"), "10.128.2.1");
		CHECK_STR(str_at(a.out, "ip4.routes.0.dst"), "0.0.0.0/0");
		CHECK(at(a.out, "interfaces") == NULL);
		answer_free(&a);
	}
}

TEST(handle_op_failures)
{
	struct answer a;

	fake_reset();
	fake.fail_code = CNI_ERR_EXHAUSTED;
	CHECK(handle(&a, "ADD", "c1", "/n", "eth0", NULL, CONF("0.4.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_EXHAUSTED, "fake failure");
	CHECK_STR(str_at(a.out, "details"), "as asked");
	CHECK_STR(str_at(a.out, "cniVersion"), "0.4.0");
	CHECK(a.text[strlen(a.text) - 1] == '\n');
	answer_free(&a);

	fake.fail_code = CNI_ERR_NOT_AVAILABLE;
	CHECK(handle(&a, "STATUS", NULL, NULL, NULL, NULL, CONF("1.1.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_NOT_AVAILABLE, NULL);
	answer_free(&a);

	/* an op that fails without saying how still yields a CNI error */
	fake.fail_code = 1;
	fake.fail_silently = true;
	CHECK(handle(&a, "DEL", "c1", NULL, "eth0", NULL, CONF("1.0.0"), -1) == 0);
	CHECK_ERROR(&a, CNI_ERR_IO, "DEL failed");
	answer_free(&a);
}

TEST(handle_passes_netns_fd)
{
	struct answer a;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	fake_reset();
	CHECK(handle(&a, "ADD", "c1", "/proc/self/ns/net", "eth0", NULL, CONF("1.0.0"), fd) == 0);
	CHECK_EQ(a.exit, 0);
	CHECK(fake.netns_fd_open);
	CHECK_STR(fake.netns, "/proc/self/ns/net");
	answer_free(&a);
	/* borrowed: still open */
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(fd);
}

/* Mangled requests: every one gets a well-formed reply, exit 0 or 1. */
TEST(handle_random_garbage)
{
	static const char *base[] = {
		"{\"command\":\"ADD\",\"containerID\":\"c1\",\"netns\":\"/n\",\"ifname\":\"eth0\","
		"\"args\":\"IgnoreUnknown=1;K8S_POD_NAME=p\",\"config\":\"{\\\"cniVersion\\\":"
		"\\\"1.1.0\\\",\\\"name\\\":\\\"n\\\",\\\"prevResult\\\":{}}\"}",
		"{\"command\":\"GC\",\"config\":\"{\\\"cniVersion\\\":\\\"1.1.0\\\",\\\"name\\\":"
		"\\\"n\\\",\\\"cni.dev/valid-attachments\\\":[{\\\"containerID\\\":\\\"a\\\","
		"\\\"ifname\\\":\\\"b\\\"}]}\"}",
		"{\"command\":\"CHECK\",\"containerID\":\"c1\",\"netns\":\"/n\",\"ifname\":\"eth0\","
		"\"config\":\"{\\\"cniVersions\\\":[\\\"1.0.0\\\"],\\\"name\\\":\\\"n\\\","
		"\\\"prevResult\\\":{\\\"ips\\\":[]}}\"}",
	};
	static const char alphabet[] = "{}[]\":,\\0123456789.;=abcADDGCnull \x01\xff\xc3";
	uint64_t seed = test_seed();
	char buf[1024];

	fake_reset();
	for (int round = 0; round < 3000; round++) {
		const char *b = base[round % 3];
		size_t len = strlen(b);
		struct answer a;
		int edits = 1 + (int)(seed % 4);

		memcpy(buf, b, len + 1);
		for (int e = 0; e < edits; e++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size_t pos = (size_t)(seed >> 33) % len;
			char c = alphabet[(seed >> 20) % (sizeof(alphabet) - 1)];

			if ((seed >> 10) % 5 == 0)
				buf[pos] = '\0';	/* truncate */
			else
				buf[pos] = c;
			len = strlen(buf);
			if (len == 0)
				break;
		}
		if (handle_raw(&a, buf) != 0) {
			test_fail(__FILE__, __LINE__, "malformed reply to %s", buf);
			return;
		}
		CHECK(a.exit == 0 || a.exit == 1);
		if (a.exit == 1) {
			CHECK(code_of(&a) > 0);
			CHECK(msg_of(&a) != NULL);
		}
		answer_free(&a);
	}
}

/* ---- the real server and the real plugin ---- */

static const char *plugin_path(void)
{
	const char *p = getenv("WEFT_CNI");

	return p ? p : "build/san/bin/weft-cni";
}

struct run {
	int exit;
	char out[8192];
	json_t *json;		/* out parsed, NULL when empty or not JSON */
};

struct child {
	pid_t pid;
	int out_fd;
};

/* Starts the plugin with exactly env (NULL-terminated "K=V") and stdin. */
static int spawn(struct child *c, char *const env[], const char *stdin_text)
{
	int in[2], out[2];
	char *argv[] = { (char *)plugin_path(), NULL };
	size_t len = stdin_text ? strlen(stdin_text) : 0;
	bool quiet = !getenv("CNI_TEST_STDERR");	/* set it to see the plugin's logs */

	fake_sync();
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], 1);
		if (devnull >= 0 && quiet)
			dup2(devnull, 2);
		execve(argv[0], argv, env);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* a configuration fits in the pipe: write all, then EOF */
	if (len && write(in[1], stdin_text, len) != (ssize_t)len) {
		close(in[1]);
		close(out[0]);
		return -1;
	}
	close(in[1]);
	c->out_fd = out[0];
	return 0;
}

static int reap(struct child *c, struct run *r)
{
	size_t len = 0;
	ssize_t n;
	int status;

	memset(r, 0, sizeof(*r));
	while ((n = read(c->out_fd, r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)n;
	close(c->out_fd);
	r->out[len] = '\0';
	if (waitpid(c->pid, &status, 0) != c->pid)
		return -1;
	r->exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	r->json = len ? json_loads(r->out, 0, NULL) : NULL;
	fake_sync();
	return 0;
}

static int run_plugin(struct run *r, char *const env[], const char *stdin_text)
{
	struct child c;

	if (spawn(&c, env, stdin_text) < 0)
		return -1;
	return reap(&c, r);
}

static void run_free(struct run *r)
{
	json_decref(r->json);
	r->json = NULL;
}

static char sock_path[100];	/* fits sun_path */

static const char *config_for(const char *version, const char *extra, char *buf, size_t len)
{
	snprintf(buf, len,
		 "{\"cniVersion\":\"%s\",\"name\":\"weft\",\"type\":\"weft\",\"agentSocket\":\"%s\"%s%s}",
		 version, sock_path, extra ? "," : "", extra ? extra : "");
	return buf;
}

static struct cni_server *start(void)
{
	char err[256];
	struct cni_server *srv;

	snprintf(sock_path, sizeof(sock_path), "%s/cni.sock", test_tmpdir());
	srv = cni_server_start(sock_path, &fake_ops, NULL, err, sizeof(err));
	if (!srv)
		fprintf(stderr, "    cni_server_start: %s\n", err);
	return srv;
}

#define ENV_ADD(id)                                                              \
	{ "CNI_COMMAND=ADD", "CNI_CONTAINERID=" id, "CNI_NETNS=/proc/self/ns/net", \
	  "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin",                              \
	  "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1", NULL }

TEST(plugin_exists)
{
	CHECK(access(plugin_path(), X_OK) == 0);
}

TEST(server_add_through_plugin)
{
	char *env[] = ENV_ADD("c0ffee");
	struct cni_server *srv;
	char config[512];
	struct stat st;
	struct run r;

	fake_reset();
	srv = start();
	CHECK(srv != NULL);
	CHECK(stat(sock_path, &st) == 0);
	CHECK(S_ISSOCK(st.st_mode));
	CHECK_EQ(st.st_mode & 0777, 0600);

	/* 1.0.0: no mtu */
	CHECK(run_plugin(&r, env, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK(r.json != NULL);
	CHECK_STR(str_at(r.json, "cniVersion"), "1.0.0");
	CHECK_STR(str_at(r.json, "interfaces.1.name"), "eth0");
	CHECK_STR(str_at(r.json, "interfaces.1.sandbox"), "/proc/self/ns/net");
	CHECK(at(r.json, "interfaces.1.mtu") == NULL);
	CHECK_STR(str_at(r.json, "ips.0.address"), "10.128.2.2/32");
	CHECK_EQ(json_integer_value(at(r.json, "ips.0.interface")), 1);
	CHECK_STR(str_at(r.json, "routes.0.gw"), "10.128.2.1");
	run_free(&r);
	CHECK_STR(fake.container_id, "c0ffee");
	CHECK_STR(fake.pod_namespace, "default");
	CHECK_STR(fake.pod_name, "web-1");
	CHECK(fake.netns_fd_open);	/* the plugin passed the netns as an fd */

	/* 1.1.0: the pod's MTU */
	CHECK(run_plugin(&r, env, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(str_at(r.json, "cniVersion"), "1.1.0");
	CHECK_EQ(json_integer_value(at(r.json, "interfaces.1.mtu")), 1450);
	CHECK_STR(str_at(r.json, "ips.0.address"), "10.128.2.3/32");
	run_free(&r);
	CHECK_EQ(fake.calls[CNI_ADD], 2);

	/* an error from the agent: printed as it came, exit 1 */
	fake.fail_code = CNI_ERR_EXHAUSTED;
	CHECK(run_plugin(&r, env, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), CNI_ERR_EXHAUSTED);
	CHECK_STR(str_at(r.json, "msg"), "fake failure");
	run_free(&r);
	cni_server_stop(srv);
	CHECK(access(sock_path, F_OK) < 0);	/* stop removes the socket file */
}

TEST(server_del_check_gc_status_version)
{
	char *del[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0",
			"CNI_NETNS=/nonexistent/netns", NULL };
	char *del_no_netns[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=c2", "CNI_IFNAME=eth0", NULL };
	char *check[] = { "CNI_COMMAND=CHECK", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0",
			  "CNI_NETNS=/proc/self/ns/net", NULL };
	char *gc[] = { "CNI_COMMAND=GC", "CNI_PATH=/opt/cni/bin", NULL };
	char *status[] = { "CNI_COMMAND=STATUS", NULL };
	char *version[] = { "CNI_COMMAND=VERSION", NULL };
	struct cni_server *srv;
	char config[1024];
	struct run r;

	fake_reset();
	srv = start();
	CHECK(srv != NULL);

	/* DEL: empty stdout, netns that does not open is no problem */
	CHECK(run_plugin(&r, del, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(r.out, "");
	CHECK_EQ(fake.calls[CNI_DEL], 1);
	CHECK_STR(fake.netns, "/nonexistent/netns");
	CHECK(!fake.netns_fd_open);
	CHECK(run_plugin(&r, del_no_netns, config_for("0.3.1", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(r.out, "");
	CHECK_EQ(fake.calls[CNI_DEL], 2);
	CHECK_STR(fake.netns, "");

	/* CHECK with prevResult */
	CHECK(run_plugin(&r, check,
			 config_for("1.0.0",
				    "\"prevResult\":{\"cniVersion\":\"1.0.0\",\"interfaces\":"
				    "[{\"name\":\"eth0\"}],\"ips\":[]}",
				    config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(r.out, "");
	CHECK_EQ(fake.calls[CNI_CHECK], 1);
	CHECK(fake.had_prev);

	/* GC: the list reaches the op */
	CHECK(run_plugin(&r, gc,
			 config_for("1.1.0",
				    "\"cni.dev/valid-attachments\":[{\"containerID\":\"keep1\","
				    "\"ifname\":\"eth0\"},{\"containerID\":\"keep2\",\"ifname\":\"eth1\"}]",
				    config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(r.out, "");
	CHECK_EQ(fake.calls[CNI_GC], 1);
	CHECK_EQ(fake.n_valid, 2);
	CHECK_STR(fake.valid[1][0], "keep2");
	CHECK_STR(fake.valid[1][1], "eth1");

	/* STATUS ok, then not */
	CHECK(run_plugin(&r, status, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(r.out, "");
	fake.fail_code = CNI_ERR_NOT_AVAILABLE_LOSING;
	CHECK(run_plugin(&r, status, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 51);
	run_free(&r);
	fake.fail_code = 0;

	/* VERSION, answered by the plugin */
	CHECK(run_plugin(&r, version, "{\"cniVersion\":\"1.0.0\"}") == 0);
	CHECK_EQ(r.exit, 0);
	CHECK_STR(str_at(r.json, "cniVersion"), "1.1.0");
	CHECK_EQ(json_array_size(at(r.json, "supportedVersions")), 7);
	run_free(&r);
	CHECK(run_plugin(&r, version, NULL) == 0);
	CHECK_EQ(r.exit, 0);
	run_free(&r);
	cni_server_stop(srv);
}

TEST(plugin_without_agent)
{
	char *add[] = ENV_ADD("c1");
	char *status[] = { "CNI_COMMAND=STATUS", NULL };
	char config[512], want[512];
	struct run r;

	snprintf(sock_path, sizeof(sock_path), "%s/absent.sock", test_tmpdir());
	CHECK(run_plugin(&r, add, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 1);
	CHECK(r.json != NULL);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 11);
	CHECK_STR(str_at(r.json, "cniVersion"), "1.0.0");
	snprintf(want, sizeof(want), "try again later: weft-agent not reachable at %s: ", sock_path);
	CHECK_CONTAINS(str_at(r.json, "msg"), want);
	run_free(&r);
	CHECK(run_plugin(&r, status, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 50);
	snprintf(want, sizeof(want), "weft-agent is not running at %s", sock_path);
	CHECK_STR(str_at(r.json, "msg"), want);
	run_free(&r);
}

/* An "agent" that accepts and hangs up without answering. */
static void *hang_up(void *p)
{
	int fd = accept(*(int *)p, NULL, NULL);

	if (fd >= 0)
		close(fd);
	return NULL;
}

TEST(plugin_agent_hangs_up)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char *add[] = ENV_ADD("c1");
	char config[512];
	pthread_t t;
	struct run r;
	int l;

	snprintf(sock_path, sizeof(sock_path), "%s/hangup.sock", test_tmpdir());
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	CHECK(bind(l, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	CHECK(listen(l, 4) == 0);
	CHECK(pthread_create(&t, NULL, hang_up, &l) == 0);
	CHECK(run_plugin(&r, add, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	pthread_join(t, NULL);
	close(l);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 11);
	CHECK_CONTAINS(str_at(r.json, "msg"), "try again later");
	run_free(&r);
}

TEST(plugin_checks_before_forwarding)
{
	char *no_env[] = { "CNI_COMMAND=ADD", NULL };
	char *bad_id[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=../x", "CNI_IFNAME=eth0", NULL };
	char *bad_if[] = { "CNI_COMMAND=CHECK", "CNI_CONTAINERID=c1", "CNI_NETNS=/n",
			   "CNI_IFNAME=eth:0", NULL };
	char *unknown[] = { "CNI_COMMAND=UPDATE", NULL };
	char *del[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", NULL };
	char config[512];
	struct run r;

	fake_reset();
	snprintf(sock_path, sizeof(sock_path), "%s/none.sock", test_tmpdir());
	CHECK(run_plugin(&r, no_env, config_for("0.4.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 4);
	CHECK_CONTAINS(str_at(r.json, "msg"), "CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME");
	CHECK_STR(str_at(r.json, "cniVersion"), "0.4.0");
	run_free(&r);
	CHECK(run_plugin(&r, bad_id, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 4);
	CHECK_CONTAINS(str_at(r.json, "msg"), "CNI_CONTAINERID");
	run_free(&r);
	CHECK(run_plugin(&r, bad_if, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 4);
	CHECK_CONTAINS(str_at(r.json, "msg"), "CNI_IFNAME");
	run_free(&r);
	CHECK(run_plugin(&r, unknown, "{}") == 0);
	CHECK_EQ(r.exit, 1);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 4);
	CHECK_CONTAINS(str_at(r.json, "msg"), "UPDATE");
	run_free(&r);
	CHECK(run_plugin(&r, del, "{\"cniVersion\":") == 0);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 6);
	run_free(&r);
	CHECK(run_plugin(&r, del, "{\"cniVersion\":\"1.0.0\",\"agentSocket\":7}") == 0);
	CHECK_EQ(json_integer_value(at(r.json, "code")), 7);
	run_free(&r);
}

TEST(server_100_parallel_plugins)
{
	enum { N = 100 };
	static char ids[N][32], *envs[N][8];
	static struct child kids[N];
	struct cni_server *srv;
	char config[512], seen[N] = { 0 };
	int answered = 0;

	fake_reset();
	fake.delay_ms = 20;	/* long enough for the requests to pile up */
	srv = start();
	CHECK(srv != NULL);
	config_for("1.1.0", NULL, config, sizeof(config));
	for (int i = 0; i < N; i++) {
		snprintf(ids[i], sizeof(ids[i]), "CNI_CONTAINERID=pod%03d", i);
		envs[i][0] = "CNI_COMMAND=ADD";
		envs[i][1] = ids[i];
		envs[i][2] = "CNI_NETNS=/proc/self/ns/net";
		envs[i][3] = "CNI_IFNAME=eth0";
		envs[i][4] = NULL;
	}
	for (int i = 0; i < N; i++)
		CHECK(spawn(&kids[i], envs[i], config) == 0);
	for (int i = 0; i < N; i++) {
		struct run r;
		const char *ip;

		CHECK(reap(&kids[i], &r) == 0);
		if (r.exit == 0 && (ip = str_at(r.json, "ips.0.address"))) {
			unsigned a, b, c, d;

			if (sscanf(ip, "%u.%u.%u.%u/32", &a, &b, &c, &d) == 4 && d >= 2 &&
			    d < 2 + N && !seen[d - 2]) {
				seen[d - 2] = 1;
				answered++;
			}
		}
		run_free(&r);
	}
	cni_server_stop(srv);
	CHECK_EQ(answered, N);
	CHECK_EQ(fake.calls[CNI_ADD], N);
	CHECK(fake.max_running > 1);
	CHECK(fake.max_running <= CNI_SERVER_MAX_ACTIVE);
}

TEST(server_gc_runs_alone)
{
	enum { N = 24 };
	static char ids[N][32], *envs[N][8];
	static struct child kids[N];
	char *gc[] = { "CNI_COMMAND=GC", NULL };
	char config[512], gc_config[512];
	struct cni_server *srv;

	fake_reset();
	fake.delay_ms = 15;
	srv = start();
	CHECK(srv != NULL);
	config_for("1.1.0", NULL, config, sizeof(config));
	config_for("1.1.0", "\"cni.dev/valid-attachments\":[]", gc_config, sizeof(gc_config));
	for (int i = 0; i < N; i++) {
		snprintf(ids[i], sizeof(ids[i]), "CNI_CONTAINERID=p%d", i);
		envs[i][0] = i % 4 == 0 ? "CNI_COMMAND=GC" : "CNI_COMMAND=DEL";
		envs[i][1] = ids[i];
		envs[i][2] = "CNI_IFNAME=eth0";
		envs[i][3] = NULL;
		if (i % 4 == 0)
			memcpy(envs[i], gc, sizeof(gc));
	}
	for (int i = 0; i < N; i++)
		CHECK(spawn(&kids[i], envs[i], i % 4 == 0 ? gc_config : config) == 0);
	for (int i = 0; i < N; i++) {
		struct run r;

		CHECK(reap(&kids[i], &r) == 0);
		CHECK_EQ(r.exit, 0);
		run_free(&r);
	}
	cni_server_stop(srv);
	CHECK_EQ(fake.calls[CNI_GC], N / 4);
	CHECK_EQ(fake.calls[CNI_DEL], N - N / 4);
	CHECK(!fake.overlap);
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST(server_idle_and_oversize_connections)
{
	unsigned char huge[4] = { 0x7f, 0, 0, 0 };
	char *add[] = ENV_ADD("c1");
	struct cni_server *srv;
	struct answer a;
	char config[512], *reply;
	struct run r;
	size_t len;
	int idle, big;

	fake_reset();
	srv = start();
	CHECK(srv != NULL);
	/* a client that says nothing does not hold up the others */
	idle = connect_to(sock_path);
	CHECK(idle >= 0);
	CHECK(run_plugin(&r, add, config_for("1.0.0", NULL, config, sizeof(config))) == 0);
	CHECK_EQ(r.exit, 0);
	run_free(&r);
	/* a frame over the limit: an error reply, not a 2 GiB allocation */
	big = connect_to(sock_path);
	CHECK(big >= 0);
	CHECK(write(big, huge, 4) == 4);
	CHECK_EQ(cni_proto_recv(big, &reply, &len, NULL), 0);
	CHECK(parse_envelope(reply, &a) == 0);
	free(reply);
	CHECK_EQ(a.exit, 1);
	CHECK(code_of(&a) > 0);
	answer_free(&a);
	close(big);
	close(idle);
	cni_server_stop(srv);
}

TEST(server_socket_file_rules)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct cni_server *srv, *second;
	char err[256], path[300];
	int fd;

	fake_reset();
	/* a stale socket (no one listening) is replaced */
	snprintf(sock_path, sizeof(sock_path), "%s/cni.sock", test_tmpdir());
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	close(fd);
	srv = start();
	CHECK(srv != NULL);

	/* a live one is not */
	second = cni_server_start(sock_path, &fake_ops, NULL, err, sizeof(err));
	CHECK(second == NULL);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_CONTAINS(err, sock_path);
	fd = connect_to(sock_path);
	CHECK(fd >= 0);		/* the first still serves */
	close(fd);
	cni_server_stop(srv);

	/* nor is a file that is not a socket */
	snprintf(path, sizeof(path), "%s/regular", test_tmpdir());
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	second = cni_server_start(path, &fake_ops, NULL, err, sizeof(err));
	CHECK(second == NULL);
	CHECK_EQ(errno, EEXIST);
	CHECK(access(path, F_OK) == 0);

	/* paths that cannot be a socket address */
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	path[0] = '/';
	CHECK(cni_server_start(path, &fake_ops, NULL, err, sizeof(err)) == NULL);
	CHECK_EQ(errno, ENAMETOOLONG);
	cni_server_stop(NULL);
}

TEST(server_stop_waits_for_requests_in_flight)
{
	char *add[] = ENV_ADD("c1");
	struct cni_server *srv;
	struct child kid;
	char config[512];
	struct run r;

	fake_reset();
	fake.delay_ms = 300;
	srv = start();
	CHECK(srv != NULL);
	CHECK(spawn(&kid, add, config_for("1.1.0", NULL, config, sizeof(config))) == 0);
	for (int i = 0; i < 2000; i++) {	/* until the op runs (10 s) */
		pthread_mutex_lock(&fake.lock);
		int running = fake.running;
		pthread_mutex_unlock(&fake.lock);
		if (running)
			break;
		sleep_ms(5);
	}
	cni_server_stop(srv);
	CHECK(reap(&kid, &r) == 0);
	CHECK_EQ(r.exit, 0);
	CHECK(str_at(r.json, "ips.0.address") != NULL);
	run_free(&r);
}
