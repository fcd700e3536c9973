/*
 * admin.c — weft-hollow's calls to the controller with the admin
 * credential (admin.h).  Plain JSON requests through lib/httpc; a 429 is
 * waited out as the agent's writes do (Retry-After, a few times).
 *
 * A NodeCredential's answer carries the node's token: it is in the
 * response body and, once parsed, in a jansson string.  Both are wiped
 * (explicit_bzero) before they are freed, as weftctl's nodecredential
 * issue does; the token's only copy that stays is the node's token file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hollow/admin.h"
#include "model/model.h"

struct httpc *admin_client(const struct fleet_opts *o, char *err, size_t len)
{
	struct httpc_options ho = {
		.server = o->controller,
		.token_file = o->admin_token_file,
		.ca_file = o->ca_file,
		.connect_timeout_ms = 2000,
		.user_agent = "weft-hollow",
	};

	return httpc_create(&ho, err, len);
}

/* Free r's body, wiped first when it may hold a secret. */
static void answer_free(struct httpc_response *r, bool secret)
{
	if (secret && r->body)
		explicit_bzero(r->body, r->len);
	httpc_response_free(r);
}

/* method path body -> *out (the answer, parsed; may be NULL) and the
 * status; a 429 is sent again after a second, up to 30 times.  secret:
 * the answer carries one, and its raw body is wiped before it is freed
 * (what *out holds is the caller's to wipe). */
static int call(struct httpc *h, const char *method, const char *path, json_t *body, json_t **out,
		long *status, bool secret, char *err, size_t len)
{
	struct httpc_response r = { 0 };
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc = -1;

	if (body && !text) {
		snprintf(err, len, "%s %s: out of memory", method, path);
		return -1;
	}
	for (int tries = 0; tries < 30; tries++) {
		answer_free(&r, secret);
		if (httpc_request(h, method, path, text, text ? strlen(text) : 0, &r, err, len) < 0)
			goto out;
		if (r.status != 429)
			break;
		sleep(1);
	}
	*status = r.status;
	if (out)
		*out = json_loads(r.body, 0, NULL);
	if (r.status >= 300 && r.status != 409) {
		json_t *st = json_loads(r.body, 0, NULL);
		const char *msg = json_string_value(json_object_get(st, "message"));

		snprintf(err, len, "%s %s: HTTP %ld: %.300s", method, path, r.status, msg ? msg : r.body);
		json_decref(st);
		if (out) {
			json_decref(*out);
			*out = NULL;
		}
		goto out;
	}
	rc = 0;
out:
	free(text);
	answer_free(&r, secret);
	return rc;
}

static int64_t revision_of(const json_t *obj)
{
	const char *rv = obj_str(obj, "metadata.resourceVersion");

	return rv ? strtoll(rv, NULL, 10) : 0;
}

int admin_namespace(struct httpc *h, const char *ns, char *err, size_t len)
{
	json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				 "metadata", "name", ns);
	long status;
	int rc = call(h, "POST", "/api/v1/namespaces", body, NULL, &status, false, err, len);

	json_decref(body);
	return rc;
}

int admin_pod_peer_policy(struct httpc *h, const char *ns, char *err, size_t len)
{
	json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{}, s:[{s:[{s:{}}]}]}}",
				 "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
				 "metadata", "name", "same-namespace", "namespace", ns,
				 "spec", "podSelector", "ingress", "from", "podSelector");
	char path[128];
	long status;
	int rc;

	snprintf(path, sizeof(path), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", ns);
	rc = call(h, "POST", path, body, NULL, &status, false, err, len);
	json_decref(body);
	return rc;
}

/* an address for seed, i in 172.20.0.0/16: outside the cluster and
 * service networks (Endpoints may name pods only by their own addresses;
 * the hollow pods' come later), as a host-network or outside backend */
void admin_endpoint_ip(unsigned seed, unsigned i, char out[INET_ADDRSTRLEN])
{
	uint32_t host = (seed * 7919u + i * 104729u) % (1u << 16);
	struct in_addr ia = { .s_addr = htonl((172u << 24 | 20u << 16) + (host ? host : 1)) };

	inet_ntop(AF_INET, &ia, out, INET_ADDRSTRLEN);
}

static json_t *endpoints_body(const char *ns, const char *name, json_t *addrs)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:[{s:o, s:[{s:s, s:i, s:s}]}]}", "apiVersion", "v1",
			 "kind", "Endpoints", "metadata", "name", name, "namespace", ns, "subsets",
			 "addresses", addrs, "ports", "name", "http", "port", 8080, "protocol", "TCP");
}

/* The newest revision among the EndpointSlices of Service ns/name (the
 * controller writes them from its Endpoints before it answers the
 * Endpoints write: mirroring), into *rev when newer. */
static int slices_revision(struct httpc *h, const char *ns, const char *name, int64_t *rev, char *err,
			   size_t len)
{
	char path[700];
	json_t *items = NULL, *it;
	size_t i;

	snprintf(path, sizeof(path), "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices"
		 "?labelSelector=kubernetes.io%%2Fservice-name%%3D%s", ns, name);
	if (admin_list(h, path, &items, err, len) < 0)
		return -1;
	json_array_foreach(items, i, it)
		if (revision_of(it) > *rev)
			*rev = revision_of(it);
	json_decref(items);
	return 0;
}

int admin_service(struct httpc *h, const char *ns, const char *name, unsigned seed,
		  unsigned endpoints, int64_t *svc_rev, int64_t *slices_rev, char *err, size_t len)
{
	char path[512], ip[INET_ADDRSTRLEN];
	json_t *svc, *addrs = json_array(), *ep, *ans = NULL;
	long status;
	int rc;

	svc = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:i, s:s, s:i}]}}", "apiVersion", "v1",
			"kind", "Service", "metadata", "name", name, "namespace", ns, "spec", "ports",
			"name", "http", "port", 80, "protocol", "TCP", "targetPort", 8080);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services", ns);
	rc = call(h, "POST", path, svc, &ans, &status, false, err, len);
	json_decref(svc);
	if (rc < 0)
		goto out;
	if (revision_of(ans) > *svc_rev)
		*svc_rev = revision_of(ans);
	json_decref(ans);
	ans = NULL;
	for (unsigned i = 0; i < endpoints; i++) {
		admin_endpoint_ip(seed, i, ip);
		json_array_append_new(addrs, json_pack("{s:s}", "ip", ip));
	}
	ep = endpoints_body(ns, name, addrs);
	addrs = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/endpoints", ns);
	rc = call(h, "POST", path, ep, &ans, &status, false, err, len);
	json_decref(ep);
	if (rc == 0)
		rc = slices_revision(h, ns, name, slices_rev, err, len);
out:
	json_decref(addrs);
	json_decref(ans);
	return rc;
}

int admin_endpoints_set(struct httpc *h, const char *ns_name, json_t *addrs, int64_t *rev, char *err,
			size_t len)
{
	char ns[256], path[600];
	const char *slash = strchr(ns_name, '/');
	json_t *ep, *ans = NULL;
	long status;
	int rc;

	if (!slash || (size_t)(slash - ns_name) >= sizeof(ns)) {
		snprintf(err, len, "%s: not NAMESPACE/NAME", ns_name);
		json_decref(addrs);
		return -1;
	}
	snprintf(ns, sizeof(ns), "%.*s", (int)(slash - ns_name), ns_name);
	ep = endpoints_body(ns, slash + 1, addrs);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/endpoints/%s", ns, slash + 1);
	rc = call(h, "PUT", path, ep, &ans, &status, false, err, len);
	json_decref(ep);
	*rev = 0;
	if (rc == 0)
		rc = slices_revision(h, ns, slash + 1, rev, err, len);
	json_decref(ans);
	return rc;
}

int admin_node_credential(struct httpc *h, const char *node, const char *file, char *err,
			  size_t len)
{
	json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "weft.io/v1", "kind",
				 "NodeCredential", "spec", "nodeName", node);
	json_t *ans = NULL, *tok;
	size_t n;
	long status;
	int rc, fd = -1;

	rc = call(h, "POST", "/apis/weft.io/v1/nodecredentials", body, &ans, &status, true, err, len);
	json_decref(body);
	if (rc < 0)
		goto out;
	tok = json_object_get(json_object_get(ans, "status"), "token");
	if (!json_is_string(tok)) {
		snprintf(err, len, "node %s: the NodeCredential's answer has no status.token", node);
		rc = -1;
		goto out;
	}
	n = json_string_length(tok);
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, json_string_value(tok), n) != (ssize_t)n) {
		snprintf(err, len, "%s: %s", file, strerror(errno));
		rc = -1;
	}
out:
	if (fd >= 0)
		close(fd);
	/* the token's parsed copy (the raw answer was wiped in call) */
	tok = json_object_get(json_object_get(ans, "status"), "token");
	if (json_is_string(tok))
		explicit_bzero((char *)json_string_value(tok), json_string_length(tok));
	json_decref(ans);
	return rc;
}

int admin_text_bytes(struct httpc *h, const char *path, size_t *bytes, char *err, size_t len)
{
	json_t *ans = NULL;
	long status;
	char *text;

	if (call(h, "GET", path, NULL, &ans, &status, false, err, len) < 0)
		return -1;
	text = ans ? json_dumps(ans, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	*bytes = text ? strlen(text) : 0;
	free(text);
	json_decref(ans);
	return 0;
}

int admin_list(struct httpc *h, const char *path, json_t **out, char *err, size_t len)
{
	json_t *ans = NULL;
	long status;

	*out = NULL;
	if (call(h, "GET", path, NULL, &ans, &status, false, err, len) < 0)
		return -1;
	*out = json_incref(json_object_get(ans, "items"));
	json_decref(ans);
	if (!json_is_array(*out)) {
		snprintf(err, len, "GET %s: no items", path);
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}
