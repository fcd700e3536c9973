/*
 * registry_patch_test.c — PATCH in the registry on a real SQLite store:
 * what a PUT of the patched object may do and nothing else, 404 for a
 * missing object, and conflicts: a write made between the read and the
 * write (made here by the authorize callback, which runs just there) is
 * never overwritten — the patch is applied again to it, a bounded number
 * of times; a patch with its own stale resourceVersion is a 409 at once.
 */
#include "controller/registry_fixture.h"
#include "controller/registry_patch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static json_t *pod_obj(const char *name)
{
	return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Pod", "metadata",
			 "name", name, "labels", "app", "web", "spec", "containers", "name", "web", "image", "nginx:1");
}

static int add_pod(struct fixture *fx, const char *ns, const char *name)
{
	struct status st = { 0 };
	json_t *p = pod_obj(name), *o = NULL;
	int e = registry_create(&fx->reg, kind_get(KIND_POD), ns, p, &o, &st);

	json_decref(p);
	json_decref(o);
	return e;
}

static int patch(struct fixture *fx, enum kind_id k, const char *ns, const char *name, enum patch_type t,
		 const char *text, registry_authorize_fn authorize, void *arg, json_t **out, struct status *st)
{
	json_t *p = json_loads(text, JSON_DECODE_ANY, NULL);
	int e;

	*out = NULL;
	if (!p)
		return -2;
	e = registry_patch(&fx->reg, kind_get(k), ns, name, t, p, 0, authorize, arg, out, st);
	json_decref(p);
	return e;
}

/* Another writer, between this patch's read and its write: it sets label
 * "other" on red/a the first `writes` times it is called. */
struct race {
	struct fixture *fx;
	int calls, writes;
};

static int race_write(void *arg, json_t *obj, struct status *st)
{
	struct race *r = arg;
	json_t *cur, *out = NULL;
	struct status mine = { 0 };
	char value[16];
	int e;

	(void)obj;
	(void)st;
	if (r->calls++ >= r->writes)
		return 0;
	cur = get(r->fx, KIND_POD, "red", "a");
	snprintf(value, sizeof(value), "v%d", r->calls);
	json_object_set_new(json_object_get(json_object_get(cur, "metadata"), "labels"), "other", json_string(value));
	json_object_del(json_object_get(cur, "metadata"), "resourceVersion");
	e = registry_replace(&r->fx->reg, kind_get(KIND_POD), "red", "a", cur, &out, &mine);
	json_decref(cur);
	json_decref(out);
	return e;
}

TEST(patch_writes_what_a_put_of_the_result_would)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *out = NULL, *stored;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_pod(&fx, "red", "a") == 0);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_STRATEGIC,
		    "{\"metadata\":{\"labels\":{\"tier\":\"db\"}},\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:2\"}]}}",
		    NULL, NULL, &out, &st) == 0);
	CHECK_STR(obj_str(out, "metadata.labels.tier"), "db");
	CHECK_STR(obj_str(out, "metadata.labels.app"), "web");
	json_decref(out);
	stored = get(&fx, KIND_POD, "red", "a");
	CHECK_STR(json_string_value(json_object_get(
			  json_array_get(json_object_get(json_object_get(stored, "spec"), "containers"), 0), "image")),
		  "nginx:2");
	json_decref(stored);
	/* a patch that changes nothing writes nothing: the revision stays */
	stored = get(&fx, KIND_POD, "red", "a");
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"labels\":{\"tier\":\"db\"}}}", NULL, NULL,
		    &out, &st) == 0);
	CHECK_STR(obj_str(out, "metadata.resourceVersion"), obj_str(stored, "metadata.resourceVersion"));
	json_decref(out);
	json_decref(stored);
	/* missing: 404; the name, kind or namespace changed: 400 as a PUT; invalid: 422 */
	CHECK(patch(&fx, KIND_POD, "red", "nope", PATCH_MERGE, "{}", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 404);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"name\":\"b\"}}", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 400);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_JSON,
		    "[{\"op\":\"replace\",\"path\":\"/metadata/namespace\",\"value\":\"blue\"}]", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 400);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"kind\":\"Secret\"}", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 400);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"labels\":{\"bad key!\":\"x\"}}}", NULL, NULL,
		    &out, &st) == -1);
	CHECK_EQ(st.code, 422);
	/* the patch module's errors */
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_JSON, "[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"x\"}]",
		    NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 422);
	CHECK_CONTAINS(st.message, "operation 0 (test /metadata/name)");
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_JSON, "{}", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 400);
	stored = json_array();
	CHECK(registry_patch_check(PATCH_MERGE, stored, &st) == -1 && st.code == 400);
	json_decref(stored);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(patch_of_controller_owned_kinds_is_a_put_of_the_result)
{
	struct fixture fx;
	struct status st = { 0 };
	json_t *out = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "node-1", "192.168.0.1", NULL, &st) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(patch(&fx, KIND_NETNAMESPACE, "", "red", PATCH_MERGE, "{\"netid\":0}", NULL, NULL, &out, &st) == -1);
	CHECK_EQ(st.code, 405);
	CHECK(patch(&fx, KIND_HOSTSUBNET, "", "node-1", PATCH_MERGE, "{\"subnet\":\"10.128.8.0/23\"}", NULL, NULL, &out,
		    &st) == -1);
	CHECK_EQ(st.code, 405);
	/* annotations are anyone's, as with a PUT */
	CHECK(patch(&fx, KIND_HOSTSUBNET, "", "node-1", PATCH_MERGE,
		    "{\"metadata\":{\"annotations\":{\"note\":\"x\"}}}", NULL, NULL, &out, &st) == 0);
	CHECK_STR(obj_str(out, "subnet"), "10.128.0.0/23");
	json_decref(out);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(patch_applies_again_over_a_write_made_in_between)
{
	struct fixture fx;
	struct status st = { 0 };
	struct race race = { .fx = &fx, .writes = 3 };
	json_t *out = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_pod(&fx, "red", "a") == 0);
	/* three writes in between: the fourth attempt goes through, and keeps them */
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"labels\":{\"mine\":\"1\"}}}", race_write,
		    &race, &out, &st) == 0);
	CHECK_EQ(race.calls, 4);
	CHECK_STR(obj_str(out, "metadata.labels.mine"), "1");
	CHECK_STR(obj_str(out, "metadata.labels.other"), "v3");
	json_decref(out);
	/* a writer that never stops: 409 after the retries */
	race = (struct race){ .fx = &fx, .writes = 1000 };
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"labels\":{\"mine\":\"2\"}}}", race_write,
		    &race, &out, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_EQ(race.calls, 6);
	CHECK_CONTAINS(st.message, "kept changing under this patch");
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}

TEST(patch_with_its_own_resource_version_is_not_retried)
{
	struct fixture fx;
	struct status st = { 0 };
	struct race race = { .fx = &fx, .writes = 1 };
	json_t *out = NULL, *stored;
	char text[160];

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "red") == 0);
	CHECK(add_pod(&fx, "red", "a") == 0);
	stored = get(&fx, KIND_POD, "red", "a");
	snprintf(text, sizeof(text), "{\"metadata\":{\"resourceVersion\":\"%s\",\"labels\":{\"x\":\"1\"}}}",
		 obj_str(stored, "metadata.resourceVersion"));
	json_decref(stored);
	/* the revision it names is current when it is read, then another write comes */
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, text, race_write, &race, &out, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_EQ(race.calls, 2);	/* the second attempt names a revision no longer current */
	/* stale from the start: once */
	race = (struct race){ .fx = &fx, .writes = 0 };
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"resourceVersion\":\"1\"}}", race_write, &race,
		    &out, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_EQ(race.calls, 1);
	CHECK(patch(&fx, KIND_POD, "red", "a", PATCH_MERGE, "{\"metadata\":{\"resourceVersion\":\"x1\"}}", NULL, NULL, &out,
		    &st) == -1);
	CHECK_EQ(st.code, 400);
	fx_close(&fx);
}

TEST(patch_409_that_is_no_race_is_answered_at_once)
{
	struct fixture fx;
	struct status st = { 0 };
	struct race race = { .fx = &fx, .writes = 0 };
	json_t *out = NULL;

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_node(&fx, "node-1", "192.168.0.1", NULL, &st) == 0);
	CHECK(add_node(&fx, "node-2", "192.168.0.2", NULL, &st) == 0);
	CHECK(patch(&fx, KIND_NODE, "", "node-2", PATCH_STRATEGIC,
		    "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"192.168.0.1\"}]}}", race_write,
		    &race, &out, &st) == -1);
	CHECK_EQ(st.code, 409);
	CHECK_CONTAINS(st.message, "already used by node node-1");
	CHECK_EQ(race.calls, 1);
	fx_close(&fx);
}
