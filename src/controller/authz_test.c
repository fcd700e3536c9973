/*
 * authz_test.c — node credentials (cred.c) and the node authorizer
 * (authz.c) on a real registry and store.
 *
 * Credentials: issue → authenticate → revoke on one table; a second table
 * on the same store (another controller) follows by creds_sync; a token
 * differing in any one character is refused; the store holds no secret.
 * The authorizer: every kind × verb for a node against a table written
 * out by hand (the naive model), and the writes that depend on what is
 * stored (pods bound before and after, a Service's own annotation).
 */
#include "test.h"
#include "controller/registry_fixture.h"

#include <stdlib.h>
#include <string.h>

static void issue_for(struct fixture *fx, struct creds *c, const char *node, char *token)
{
	struct status st = { 0 };
	json_t *out = NULL;
	const char *shown;

	CHECK(creds_issue(c, fx->store, node, token, CRED_TOKEN_LEN + 1, &out, &st) == 0);
	shown = json_string_value(json_object_get(json_object_get(out, "status"), "token"));
	CHECK(shown && strcmp(shown, token) == 0);
	json_decref(out);
}

TEST(creds_issue_authenticate_revoke)
{
	struct fixture fx;
	struct creds *c = creds_new();
	char tok[CRED_TOKEN_LEN + 1], name[17];
	struct principal p;
	struct status st = { 0 };
	json_t *out = NULL, *items = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	issue_for(&fx, c, "node-1", tok);
	CHECK_EQ(strlen(tok), CRED_TOKEN_LEN);
	CHECK(creds_authenticate(c, tok, &p));
	CHECK(!p.admin && strcmp(p.node, "node-1") == 0);
	memcpy(name, tok, 16);
	name[16] = 0;
	CHECK(strcmp(p.cred, name) == 0);
	/* one character off anywhere: refused */
	for (size_t i = 0; i < CRED_TOKEN_LEN; i++) {
		char bad[CRED_TOKEN_LEN + 1];
		memcpy(bad, tok, sizeof(bad));
		bad[i] = bad[i] == 'a' ? 'b' : (bad[i] == '.' ? '-' : 'a');
		if (bad[i] == tok[i])
			continue;
		CHECK(!creds_authenticate(c, bad, &p));
	}
	CHECK(!creds_authenticate(c, "", &p));
	CHECK(!creds_authenticate(c, name, &p));
	/* the list has it, without the token */
	CHECK(creds_list(fx.store, &items, &st) == 0);
	CHECK_EQ(json_array_size(items), 1);
	CHECK(json_object_get(json_array_get(items, 0), "status") == NULL);
	json_decref(items);
	/* the store holds the hash, never the secret */
	{
		struct store_kv_list l = { 0 };
		CHECK(store_range(fx.store, CRED_PREFIX, NULL, 0, &l) == 0);
		CHECK_EQ(l.n, 1);
		CHECK(strstr(l.kvs[0].value, tok + 17) == NULL);
		store_kv_list_free(&l);
	}
	CHECK(creds_revoke(c, fx.store, name, &out, &st) == 0);
	json_decref(out);
	CHECK(!creds_authenticate(c, tok, &p));
	CHECK(!creds_alive(c, name));
	CHECK(creds_revoke(c, fx.store, name, &out, &st) == -1);
	CHECK_EQ(st.code, 404);
	CHECK(creds_issue(c, fx.store, "Not_A_Node", tok, sizeof(tok), &out, &st) == -1);
	CHECK_EQ(st.code, 422);
	creds_free(c);
	fx_close(&fx);
}

/* Two controllers on one store: what one issues or revokes, the other
 * learns by creds_sync; a fresh one by creds_load. */
TEST(creds_follow_the_store)
{
	struct fixture fx;
	struct creds *a = creds_new(), *b = creds_new(), *fresh = creds_new();
	char t1[CRED_TOKEN_LEN + 1], t2[CRED_TOKEN_LEN + 1], name[17];
	struct principal p;
	struct status st = { 0 };
	json_t *out = NULL;
	bool changed = false;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(creds_load(b, fx.store) == 0);
	issue_for(&fx, a, "node-1", t1);
	issue_for(&fx, a, "node-2", t2);
	CHECK(!creds_authenticate(b, t1, &p));
	CHECK(creds_sync(b, fx.store, &changed) == 0 && changed);
	CHECK(creds_authenticate(b, t1, &p) && strcmp(p.node, "node-1") == 0);
	CHECK(creds_authenticate(b, t2, &p) && strcmp(p.node, "node-2") == 0);
	CHECK(creds_sync(b, fx.store, &changed) == 0 && !changed);
	memcpy(name, t1, 16);
	name[16] = 0;
	CHECK(creds_revoke(a, fx.store, name, &out, &st) == 0);
	json_decref(out);
	CHECK(creds_sync(b, fx.store, &changed) == 0 && changed);
	CHECK(!creds_authenticate(b, t1, &p));
	CHECK(creds_authenticate(b, t2, &p));
	CHECK(creds_load(fresh, fx.store) == 0);
	CHECK(!creds_authenticate(fresh, t1, &p));
	CHECK(creds_authenticate(fresh, t2, &p));
	creds_free(a);
	creds_free(b);
	creds_free(fresh);
	fx_close(&fx);
}

static struct route route(enum kind_id k, const char *ns, const char *name)
{
	struct route r = { .kind = kind_get(k) };

	snprintf(r.ns, sizeof(r.ns), "%s", ns ? ns : "");
	if (name) {
		snprintf(r.name, sizeof(r.name), "%s", name);
		r.has_name = true;
	}
	return r;
}

/* authz_route for a node, every kind and verb, against the table of
 * docs/api.md written out by hand */
TEST(authz_route_matches_the_table)
{
	static const char *const allowed[KIND_COUNT] = {
		/* g l w c u d */
		[KIND_CLUSTERNETWORK] = "YYYNNN", [KIND_NODE] = "YYYYYN", [KIND_HOSTSUBNET] = "YYYNYN",
		[KIND_NAMESPACE] = "YYYNNN", [KIND_NETNAMESPACE] = "YYYNNN", [KIND_POD] = "YYYYYY",
		[KIND_SERVICE] = "YYYNYN", [KIND_ENDPOINTS] = "YYYNNN", [KIND_NETWORKPOLICY] = "YYYNNN",
		[KIND_INGRESS] = "NNNNNN", [KIND_ROUTE] = "NNNNNN", [KIND_SECRET] = "NNNNNN",
		/* the load balancer's model: a node reads none of it (keys) */
		[KIND_VIRTUALSERVICE] = "NNNNNN", [KIND_SSLKEYCERT] = "NNNNNN",
		/* agents read slices instead of Endpoints; never write them */
		[KIND_ENDPOINTSLICE] = "YYYNNN",
		/* policy peers: read by every node, written by the controller only */
		[KIND_PODPEERSLICE] = "YYYNNN",
		/* traces: read by every node, their status written by theirs
		 * (authz_write) */
		[KIND_TRACEREQUEST] = "YYYNYN",
	};
	struct principal node = { .node = "node-1", .cred = "0123456789abcdef" }, admin = { .admin = true };

	for (int k = 0; k < KIND_COUNT; k++)
		for (int v = AUTHZ_GET; v <= AUTHZ_DELETE; v++) {
			struct route r = route((enum kind_id)k, kind_get((enum kind_id)k)->namespaced ? "red" : NULL,
					       v == AUTHZ_GET || v >= AUTHZ_UPDATE ? "x" : NULL);
			struct status st = { 0 };
			int rc = authz_route(&node, (enum authz_verb)v, &r, &st);

			if ((rc == 0) != (allowed[k][v] == 'Y'))
				test_fail(__FILE__, __LINE__, "%s %s: got %d, want %c", authz_verb_name((enum authz_verb)v),
					  kind_get((enum kind_id)k)->plural, rc, allowed[k][v]);
			if (rc)
				CHECK_EQ(st.code, 403);
			CHECK(authz_route(&admin, (enum authz_verb)v, &r, &st) == 0);
		}
	{
		struct route pn = { .podnetwork = true };
		struct status st = { 0 };
		CHECK(authz_route(&node, AUTHZ_CREATE, &pn, &st) == -1);
		CHECK(authz_route(&node, AUTHZ_GET, NULL, &st) == -1);
		CHECK(strstr(st.message, "system:node:node-1") != NULL);
	}
}

/* a JSON literal of the test's own (NULL only if the test is wrong) */
static json_t *obj(const char *text)
{
	return json_loads(text, 0, NULL);
}

/* registry_create of the JSON text as the admin; *out (may be NULL) the stored object */
static int create(struct fixture *fx, enum kind_id k, const char *ns, const char *text, json_t **out)
{
	struct status st = { 0 };
	json_t *b = obj(text), *o = NULL;
	int rc = registry_create(&fx->reg, kind_get(k), ns, b, &o, &st);

	json_decref(b);
	if (out)
		*out = o;
	else
		json_decref(o);
	return rc;
}

static int write_as(struct fixture *fx, const struct principal *p, enum authz_verb v, enum kind_id k,
		    const char *ns, const char *name, const char *body, struct status *st)
{
	struct route r = route(k, ns, name);
	json_t *b = body ? obj(body) : NULL;
	int64_t pin = 0;
	int rc = authz_write(&fx->reg, p, v, &r, b, &pin, st);

	json_decref(b);
	return rc;
}

TEST(authz_write_pods_and_services)
{
	struct fixture fx;
	struct principal n1 = { .node = "node-1" }, n2 = { .node = "node-2" };
	struct status st = { 0 };
	json_t *svc = NULL;
	char *text;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(create(&fx, KIND_POD, "default", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
		     "{\"name\":\"b\"},\"spec\":{\"nodeName\":\"node-2\"}}", NULL) == 0);
	CHECK(create(&fx, KIND_POD, "default", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"u\"}}",
		     NULL) == 0);
#define POD(name, node) "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name \
			"\"},\"spec\":{\"nodeName\":\"" node "\"}}"
	CHECK(write_as(&fx, &n1, AUTHZ_CREATE, KIND_POD, "default", NULL, POD("a", "node-1"), &st) == 0);
	CHECK(write_as(&fx, &n1, AUTHZ_CREATE, KIND_POD, "default", NULL, POD("a", "node-2"), &st) == -1);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_POD, "default", "b", POD("b", "node-1"), &st) == -1);
	CHECK(strstr(st.message, "bound to node \"node-2\"") != NULL);
	CHECK(write_as(&fx, &n2, AUTHZ_UPDATE, KIND_POD, "default", "b", POD("b", "node-2"), &st) == 0);
	CHECK(write_as(&fx, &n1, AUTHZ_DELETE, KIND_POD, "default", "b", NULL, &st) == -1);
	CHECK(write_as(&fx, &n2, AUTHZ_DELETE, KIND_POD, "default", "b", NULL, &st) == 0);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_POD, "default", "u", POD("u", "node-1"), &st) == 0);
	CHECK(write_as(&fx, &n1, AUTHZ_DELETE, KIND_POD, "default", "missing", NULL, &st) == 0);
	/* the node's own Node only */
	CHECK(write_as(&fx, &n1, AUTHZ_CREATE, KIND_NODE, NULL, NULL,
		       "{\"metadata\":{\"name\":\"node-1\"}}", &st) == 0);
	CHECK(write_as(&fx, &n1, AUTHZ_CREATE, KIND_NODE, NULL, NULL,
		       "{\"metadata\":{\"name\":\"node-2\"}}", &st) == -1);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_NODE, NULL, "node-2", "{\"metadata\":{\"name\":\"node-2\"}}",
		       &st) == -1);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_HOSTSUBNET, NULL, "node-2", "{}", &st) == -1);
	/* a Service: only weft.io/unprogrammed.node-1 may differ */
	CHECK(create(&fx, KIND_SERVICE, "default", "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":"
		     "{\"name\":\"web\"},\"spec\":{\"ports\":[{\"port\":80}]}}", &svc) == 0);
	json_object_set_new(json_object_get(svc, "metadata"), "annotations",
			    json_pack("{s:s}", MODEL_ANN_UNPROGRAMMED "node-1", "map is full"));
	text = json_dumps(svc, JSON_COMPACT);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_SERVICE, "default", "web", text, &st) == 0);
	CHECK(write_as(&fx, &n2, AUTHZ_UPDATE, KIND_SERVICE, "default", "web", text, &st) == -1);
	free(text);
	json_object_set_new(json_object_get(svc, "spec"), "type", json_string("NodePort"));
	text = json_dumps(svc, JSON_COMPACT);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_SERVICE, "default", "web", text, &st) == -1);
	free(text);
	CHECK(write_as(&fx, &n1, AUTHZ_UPDATE, KIND_SERVICE, "default", "nosuch", "{}", &st) == -1);
	json_decref(svc);
	fx_close(&fx);
}

/* A TraceRequest: its node writes its status (the answer), nothing else;
 * another node not even that. */
TEST(authz_write_trace_answers)
{
	struct fixture fx;
	struct principal n1 = { .node = "node-1" }, n2 = { .node = "node-2" };
	struct status st = { 0 };
	struct route r = route(KIND_TRACEREQUEST, NULL, "t1");
	json_t *body = obj("{\"status\":{\"action\":\"Local\"}}");
	int64_t pin = 0;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(create(&fx, KIND_TRACEREQUEST, NULL, "{\"apiVersion\":\"network.weft.io/v1\",\"kind\":"
		     "\"TraceRequest\",\"metadata\":{\"name\":\"t1\"},\"spec\":{\"nodeName\":\"node-1\","
		     "\"from\":\"Pod\",\"protocol\":\"ICMP\",\"source\":\"10.128.0.5\","
		     "\"destination\":\"10.128.0.6\"}}", NULL) == 0);
	r.status = true;
	CHECK(authz_write(&fx.reg, &n1, AUTHZ_UPDATE, &r, body, &pin, &st) == 0);
	CHECK(pin > 0);		/* written only against the request it read */
	CHECK(authz_write(&fx.reg, &n2, AUTHZ_UPDATE, &r, body, &pin, &st) == -1);
	CHECK(strstr(st.message, "answers only the TraceRequests for it") != NULL);
	r.status = false;
	CHECK(authz_write(&fx.reg, &n1, AUTHZ_UPDATE, &r, body, &pin, &st) == -1);
	CHECK(strstr(st.message, "only a TraceRequest's status") != NULL);
	r = route(KIND_TRACEREQUEST, NULL, "nosuch");
	r.status = true;
	CHECK(authz_write(&fx.reg, &n1, AUTHZ_UPDATE, &r, body, &pin, &st) == -1);
	json_decref(body);
	fx_close(&fx);
}
