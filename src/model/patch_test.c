/*
 * patch_test.c — the patch module: RFC 6902's and RFC 7386's own examples,
 * strategic merge patch for every merge key and directive weft knows,
 * hostile patches (deep, huge indexes, paths through values, a move into
 * its own child, a copy that doubles), and a randomized cross-check: the
 * merge patch a small diff computes from A to B, applied to A, is B — as
 * a JSON Merge Patch, and as a strategic one where no list has a key.
 *
 * JSON in these tests is written with ' for " (J() swaps them back).
 */
#include "model/patch.h"
#include "model/patch_shared.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *J(const char *text)
{
	char *s = strdup(text);
	json_error_t e;
	json_t *v;

	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	v = json_loads(s, JSON_DECODE_ANY, &e);
	if (!v)
		fprintf(stderr, "    test JSON does not parse: %s: %s\n", e.text, s);
	free(s);
	return v;
}

static char last_err[1024];

/* doc patched (type t, kind k): 0 and *out, or the error code (message in last_err). */
static int run(enum patch_type t, enum kind_id k, const char *doc, const char *patch, json_t **out)
{
	json_t *d = J(doc), *p = J(patch);
	int rc;

	*out = NULL;
	rc = d && p ? patch_apply(t, k, d, p, out, last_err, sizeof(last_err)) : -EFAULT;
	json_decref(d);
	json_decref(p);
	return rc;
}

/* The patch applies and gives exactly want (lists in order). */
static bool gives(enum patch_type t, enum kind_id k, const char *doc, const char *patch, const char *want)
{
	json_t *out = NULL, *w = J(want);
	int rc = run(t, k, doc, patch, &out);
	bool ok = rc == 0 && w && json_equal(out, w);

	if (!ok) {
		char *got = out ? json_dumps(out, JSON_COMPACT) : NULL;
		fprintf(stderr, "    patch %s\n    got  %s (%d: %s)\n    want %s\n", patch, got ? got : "-", rc, last_err,
			want);
		free(got);
	}
	json_decref(out);
	json_decref(w);
	return ok;
}

/* The patch fails with rc, and its message contains what. */
static bool refused(enum patch_type t, enum kind_id k, const char *doc, const char *patch, int rc, const char *what)
{
	json_t *out = NULL;
	int got = run(t, k, doc, patch, &out);

	json_decref(out);
	if (got != rc || !strstr(last_err, what)) {
		fprintf(stderr, "    patch %s: got %d '%s', want %d '%s'\n", patch, got, last_err, rc, what);
		return false;
	}
	return true;
}

#define JP(doc, patch, want) gives(PATCH_JSON, KIND_POD, doc, patch, want)
#define MP(doc, patch, want) gives(PATCH_MERGE, KIND_POD, doc, patch, want)
#define SP(kind, doc, patch, want) gives(PATCH_STRATEGIC, kind, doc, patch, want)

/* ------------------------------------------------------------------ media types */

TEST(content_types_name_the_three_patch_types)
{
	enum patch_type t = PATCH_MERGE;
	char err[512];

	CHECK(patch_type_parse("application/json-patch+json", &t, err, sizeof(err)) == 0 && t == PATCH_JSON);
	CHECK(patch_type_parse(" Application/Merge-Patch+JSON ; charset=utf-8", &t, err, sizeof(err)) == 0 &&
	      t == PATCH_MERGE);
	CHECK(patch_type_parse("application/strategic-merge-patch+json", &t, err, sizeof(err)) == 0 &&
	      t == PATCH_STRATEGIC);
	CHECK(patch_type_parse("application/json", &t, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "'application/json' is not a patch type");
	CHECK_CONTAINS(err, "application/json-patch+json");
	CHECK_CONTAINS(err, "application/merge-patch+json");
	CHECK_CONTAINS(err, "application/strategic-merge-patch+json");
	CHECK(patch_type_parse(NULL, &t, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "needs a Content-Type");
	CHECK(patch_type_parse("application/apply-patch+yaml", &t, err, sizeof(err)) == -EINVAL);
	CHECK_STR(patch_type_media(PATCH_STRATEGIC), "application/strategic-merge-patch+json");
}

/* ------------------------------------------------------------------ RFC 6902, appendix A */

TEST(json_patch_rfc6902_examples)
{
	/* A.1 - A.5 */
	CHECK(JP("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux'}]", "{'baz':'qux','foo':'bar'}"));
	CHECK(JP("{'foo':['bar','baz']}", "[{'op':'add','path':'/foo/1','value':'qux'}]",
		 "{'foo':['bar','qux','baz']}"));
	CHECK(JP("{'baz':'qux','foo':'bar'}", "[{'op':'remove','path':'/baz'}]", "{'foo':'bar'}"));
	CHECK(JP("{'foo':['bar','qux','baz']}", "[{'op':'remove','path':'/foo/1'}]", "{'foo':['bar','baz']}"));
	CHECK(JP("{'baz':'qux','foo':'bar'}", "[{'op':'replace','path':'/baz','value':'boo'}]",
		 "{'baz':'boo','foo':'bar'}"));
	/* A.6, A.7 */
	CHECK(JP("{'foo':{'bar':'baz','waldo':'fred'},'qux':{'corge':'grault'}}",
		 "[{'op':'move','from':'/foo/waldo','path':'/qux/thud'}]",
		 "{'foo':{'bar':'baz'},'qux':{'corge':'grault','thud':'fred'}}"));
	CHECK(JP("{'foo':['all','grass','cows','eat']}", "[{'op':'move','from':'/foo/1','path':'/foo/3'}]",
		 "{'foo':['all','cows','eat','grass']}"));
	/* A.8, A.9 */
	CHECK(JP("{'baz':'qux','foo':['a',2,'c']}",
		 "[{'op':'test','path':'/baz','value':'qux'},{'op':'test','path':'/foo/1','value':2}]",
		 "{'baz':'qux','foo':['a',2,'c']}"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'baz':'qux'}", "[{'op':'test','path':'/baz','value':'bar'}]", -EINVAL,
		      "operation 0 (test /baz): the value is \"qux\", not \"bar\""));
	/* A.10, A.11 */
	CHECK(JP("{'foo':'bar'}", "[{'op':'add','path':'/child','value':{'grandchild':{}}}]",
		 "{'foo':'bar','child':{'grandchild':{}}}"));
	CHECK(JP("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux','xyz':123}]", "{'foo':'bar','baz':'qux'}"));
	/* A.12 */
	CHECK(refused(PATCH_JSON, KIND_POD, "{'foo':'bar'}", "[{'op':'add','path':'/baz/bat','value':'qux'}]", -EINVAL,
		      "operation 0 (add /baz/bat): /baz does not exist"));
	/* A.14, A.15: ~01 is "~1", not "/" */
	CHECK(JP("{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':10}]", "{'/':9,'~1':10}"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':'10'}]", -EINVAL,
		      "the value is 10, not \"10\""));
	CHECK(JP("{'/':9,'~1':10}", "[{'op':'replace','path':'/~1','value':1}]", "{'/':1,'~1':10}"));
	/* A.16 */
	CHECK(JP("{'foo':['bar']}", "[{'op':'add','path':'/foo/-','value':['abc','def']}]",
		 "{'foo':['bar',['abc','def']]}"));
}

TEST(json_patch_copy_root_test_and_numbers)
{
	CHECK(JP("{'a':{'b':[1,2]}}", "[{'op':'copy','from':'/a/b','path':'/c'},{'op':'add','path':'/c/-','value':3}]",
		 "{'a':{'b':[1,2]},'c':[1,2,3]}"));
	/* a copy is a copy: changing it leaves the source */
	CHECK(JP("{'a':{'x':1}}", "[{'op':'copy','from':'/a','path':'/b'},{'op':'replace','path':'/b/x','value':2}]",
		 "{'a':{'x':1},'b':{'x':2}}"));
	CHECK(JP("{'a':1}", "[{'op':'replace','path':'','value':{'z':true}}]", "{'z':true}"));
	CHECK(JP("{'n':1}", "[{'op':'test','path':'/n','value':1.0}]", "{'n':1}"));
	CHECK(JP("{'o':{'a':1,'b':[1,{'c':2}]}}", "[{'op':'test','path':'/o','value':{'b':[1,{'c':2}],'a':1}}]",
		 "{'o':{'a':1,'b':[1,{'c':2}]}}"));
	CHECK(JP("{'a':[1,2,3]}", "[{'op':'move','from':'/a/0','path':'/a/0'}]", "{'a':[1,2,3]}"));
	/* all or nothing: the second operation fails, the first is not kept */
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':1}", "[{'op':'add','path':'/b','value':2},{'op':'remove','path':'/c'}]",
		      -EINVAL, "operation 1 (remove /c): /c does not exist"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':1}", "[{'op':'remove','path':''}]", -EINVAL,
		      "the whole object cannot be removed"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':1}", "[{'op':'replace','path':'','value':[1]}]", -EINVAL,
		      "no longer an object"));
}

TEST(json_patch_malformed_is_bad_request)
{
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "{'op':'add'}", -EBADMSG, "must be a list of operations"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'frob','path':'/a'}]", -EBADMSG,
		      "op 'frob' is not one of add, remove, replace, move, copy, test"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'path':'/a'}]", -EBADMSG, "op is missing"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'add','path':'/a'}]", -EBADMSG, "value is missing"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'add','value':1}]", -EBADMSG, "path is missing"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'move','path':'/a'}]", -EBADMSG, "from is missing"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'add','path':'a/b','value':1}]", -EBADMSG,
		      "starts with '/'"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[{'op':'add','path':'/a~2','value':1}]", -EBADMSG,
		      "followed by 0 or 1"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{}", "[1]", -EBADMSG, "operation 0: a number, not an object"));
}

/* ------------------------------------------------------------------ hostile JSON Patches */

TEST(json_patch_hostile_indexes_and_paths)
{
	const char *doc = "{'foo':['a','b'],'s':'text','n':null}";

	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/foo/99999999999999999999999999999','value':1}]",
		      -EINVAL, "is not an index of or the end of the list (2 items)"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'replace','path':'/foo/18446744073709551616','value':1}]",
		      -EINVAL, "is not an index"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/foo/3','value':1}]", -EINVAL, "not an index"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/foo/01','value':1}]", -EINVAL, "not an index"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/foo/-1','value':1}]", -EINVAL, "not an index"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'replace','path':'/foo/-','value':1}]", -EINVAL,
		      "not an index of the list"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'remove','path':'/foo/2'}]", -EINVAL, "/foo/2 does not exist"));
	CHECK(JP(doc, "[{'op':'add','path':'/foo/2','value':'c'}]", "{'foo':['a','b','c'],'s':'text','n':null}"));
	/* through a value that is not an object or a list */
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/s/x/y','value':1}]", -EINVAL,
		      "/s is a string, not an object or a list"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/s/x','value':1}]", -EINVAL,
		      "/s is a string, not an object or a list"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'add','path':'/n/x','value':1}]", -EINVAL, "/n is null"));
	CHECK(refused(PATCH_JSON, KIND_POD, doc, "[{'op':'test','path':'/foo/x','value':1}]", -EINVAL,
		      "/foo/x does not exist"));
	/* a move into its own child; a move onto itself needs the value */
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':{'b':{}}}", "[{'op':'move','from':'/a','path':'/a/b/c'}]", -EINVAL,
		      "/a cannot be moved into its own child"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':1}", "[{'op':'move','from':'','path':'/x'}]", -EINVAL,
		      "into its own child"));
	CHECK(refused(PATCH_JSON, KIND_POD, "{'a':1}", "[{'op':'move','from':'/b','path':'/b'}]", -EINVAL,
		      "/b does not exist"));
	/* a move to a sibling key that starts like it is no child */
	CHECK(JP("{'a':{'x':1}}", "[{'op':'move','from':'/a','path':'/ab'}]", "{'ab':{'x':1}}"));
}

/* A value n levels deep: {"a":{"a":...{}}}. */
static json_t *nested(int n)
{
	json_t *v = json_object();

	for (int i = 1; i < n; i++)
		v = json_pack("{s:o}", "a", v);
	return v;
}

TEST(patches_nested_too_deep_are_refused_without_recursing)
{
	json_t *doc = J("{'spec':{}}"), *out = NULL, *deep = nested(10000), *p;
	char err[512];

	/* far deeper than any parser takes: checked, never walked to the bottom */
	CHECK(patch_apply(PATCH_MERGE, KIND_POD, doc, deep, &out, err, sizeof(err)) == -E2BIG);
	CHECK_CONTAINS(err, "deeper than 32 levels");
	CHECK(patch_apply(PATCH_STRATEGIC, KIND_POD, doc, deep, &out, err, sizeof(err)) == -E2BIG);
	p = json_pack("[{s:s, s:s, s:O}]", "op", "add", "path", "/x", "value", deep);
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, p, &out, err, sizeof(err)) == -E2BIG);
	CHECK_CONTAINS(err, "operation 0 (add /x): the value is nested deeper than 32 levels");
	json_decref(p);
	json_decref(deep);
	/* 31 levels fit at the top, not 3 levels down */
	deep = nested(31);
	p = json_pack("[{s:s, s:s, s:O}]", "op", "add", "path", "/x", "value", deep);
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, p, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(p);
	p = json_pack("[{s:s, s:s, s:O}]", "op", "add", "path", "/spec/x/y", "value", deep);
	json_object_set_new(json_object_get(doc, "spec"), "x", json_object());
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, p, &out, err, sizeof(err)) == -E2BIG);
	CHECK_CONTAINS(err, "would be nested deeper than 32 levels");
	json_decref(p);
	json_decref(deep);
	json_decref(doc);
	CHECK(out == NULL);
}

TEST(json_patch_bounds_operations_and_copies)
{
	json_t *ops = json_array(), *doc = J("{'a':[1,2,3,4,5,6,7,8]}"), *out = NULL;
	char err[512];

	for (int i = 0; i <= PATCH_MAX_OPERATIONS; i++)
		json_array_append_new(ops, json_pack("{s:s, s:s, s:i}", "op", "test", "path", "/a/0", "value", 1));
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, ops, &out, err, sizeof(err)) == -E2BIG);
	CHECK_CONTAINS(err, "10001 operations; the limit is 10000");
	json_array_remove(ops, 0);
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, ops, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(ops);
	/* a list copied into itself doubles each time: 2^30 items, unless bounded */
	ops = json_array();
	for (int i = 0; i < 30; i++)
		json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "copy", "from", "/a", "path", "/a/-"));
	CHECK(patch_apply(PATCH_JSON, KIND_POD, doc, ops, &out, err, sizeof(err)) == -E2BIG);
	CHECK_CONTAINS(err, "copies more than 100000 JSON values in all");
	json_decref(ops);
	json_decref(doc);
}

/* ------------------------------------------------------------------ RFC 7386 */

TEST(merge_patch_rfc7386_examples)
{
	static const char *const cases[][3] = {
		{ "{'a':'b'}", "{'a':'c'}", "{'a':'c'}" },
		{ "{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}" },
		{ "{'a':'b'}", "{'a':null}", "{}" },
		{ "{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}" },
		{ "{'a':['b']}", "{'a':'c'}", "{'a':'c'}" },
		{ "{'a':'c'}", "{'a':['b']}", "{'a':['b']}" },
		{ "{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}" },
		{ "{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}" },
		{ "['a','b']", "['c','d']", "['c','d']" },
		{ "{'a':'b'}", "['c']", "['c']" },
		{ "{'a':'foo'}", "null", "null" },
		{ "{'a':'foo'}", "'bar'", "'bar'" },
		{ "{'e':null}", "{'a':1}", "{'e':null,'a':1}" },
		{ "[1,2]", "{'a':'b','c':null}", "{'a':'b'}" },
		{ "{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *doc = J(cases[i][0]), *p = J(cases[i][1]), *want = J(cases[i][2]);

		/* the RFC merges any value into any value; an API object is an object */
		CHECK(patch_merge_apply(&doc, p) == 0);
		if (!json_equal(doc, want))
			fprintf(stderr, "    case %zu: %s\n", i, json_dumps(doc, JSON_ENCODE_ANY));
		CHECK(json_equal(doc, want));
		json_decref(doc);
		json_decref(p);
		json_decref(want);
	}
	/* through patch_apply: members keep their place */
	CHECK(MP("{'kind':'Pod','metadata':{'name':'a','labels':{'x':'1'}},'spec':{}}",
		 "{'metadata':{'labels':{'x':null,'y':'2'}}}",
		 "{'kind':'Pod','metadata':{'name':'a','labels':{'y':'2'}},'spec':{}}"));
	CHECK(refused(PATCH_MERGE, KIND_POD, "{}", "[1]", -EBADMSG, "a merge patch must be a JSON object"));
}

/* ------------------------------------------------------------------ strategic merge patch */

static const char pod[] =
	"{'kind':'Pod','metadata':{'name':'p','labels':{'app':'web','tier':'a'},'finalizers':['x','y']},"
	"'spec':{'containers':[{'name':'web','image':'nginx:1','args':['-a'],"
	"'ports':[{'containerPort':80},{'containerPort':53,'protocol':'UDP'},{'containerPort':53,'protocol':'TCP'}],"
	"'env':[{'name':'A','value':'1'},{'name':'B','value':'2'}],"
	"'volumeMounts':[{'name':'data','mountPath':'/data'}]},"
	"{'name':'side','image':'busybox'}],"
	"'initContainers':[{'name':'init','image':'alpine'}],"
	"'volumes':[{'name':'data','emptyDir':{}}],"
	"'imagePullSecrets':[{'name':'reg1'}],"
	"'tolerations':[{'key':'a','operator':'Exists'}]},"
	"'status':{'conditions':[{'type':'Ready','status':'False'},{'type':'Initialized','status':'True'}],"
	"'podIP':'10.128.0.5'}}";

/* The value at a dotted path of the pod patched strategically. */
static bool pod_has(const char *patch, const char *path, const char *want)
{
	json_t *out = NULL, *w = J(want), *at;
	int rc = run(PATCH_STRATEGIC, KIND_POD, pod, patch, &out);
	char *p = strdup(path), *save = NULL;
	bool ok;

	at = out;
	for (char *tok = strtok_r(p, ".", &save); at && tok; tok = strtok_r(NULL, ".", &save))
		at = json_is_array(at) ? json_array_get(at, (size_t)atoi(tok)) : json_object_get(at, tok);
	ok = rc == 0 && w && at && json_equal(at, w);
	if (!ok) {
		char *got = at ? json_dumps(at, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
		fprintf(stderr, "    %s at %s: got %s (%d: %s), want %s\n", patch, path, got ? got : "-", rc, last_err, want);
		free(got);
	}
	free(p);
	json_decref(out);
	json_decref(w);
	return ok;
}

TEST(strategic_containers_merge_by_name)
{
	/* an image changed: the container keeps everything else, the other stays */
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','image':'nginx:2'}]}}", "spec.containers",
		      "[{'name':'web','image':'nginx:2','args':['-a'],"
		      "'ports':[{'containerPort':80},{'containerPort':53,'protocol':'UDP'},{'containerPort':53,'protocol':'TCP'}],"
		      "'env':[{'name':'A','value':'1'},{'name':'B','value':'2'}],"
		      "'volumeMounts':[{'name':'data','mountPath':'/data'}]},{'name':'side','image':'busybox'}]"));
	/* a new container goes first (upstream's order), the stored ones keep theirs */
	CHECK(pod_has("{'spec':{'containers':[{'name':'new','image':'x'}]}}", "spec.containers.0.name", "'new'"));
	CHECK(pod_has("{'spec':{'containers':[{'name':'new','image':'x'}]}}", "spec.containers.2.name", "'side'"));
	CHECK(pod_has("{'spec':{'initContainers':[{'name':'init','image':'alpine:3'}]}}", "spec.initContainers",
		      "[{'name':'init','image':'alpine:3'}]"));
	/* a list inside a container without a key (args) is replaced */
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','args':['-b']}]}}", "spec.containers.0.args", "['-b']"));
	/* a container deleted by its key */
	CHECK(pod_has("{'spec':{'containers':[{'name':'side','$patch':'delete'}]}}", "spec.containers",
		      "[{'name':'web','image':'nginx:1','args':['-a'],"
		      "'ports':[{'containerPort':80},{'containerPort':53,'protocol':'UDP'},{'containerPort':53,'protocol':'TCP'}],"
		      "'env':[{'name':'A','value':'1'},{'name':'B','value':'2'}],"
		      "'volumeMounts':[{'name':'data','mountPath':'/data'}]}]"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'containers':[{'image':'x'}]}}", -EINVAL,
		      "spec.containers: item 0 of the patch has no name (the list's merge key)"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'containers':['web']}}", -EINVAL,
		      "item 0 of the patch is not an object (the list is merged by name)"));
}

TEST(strategic_ports_merge_by_port_and_protocol)
{
	const char *path = "spec.containers.0.ports";

	CHECK(pod_has("{'spec':{'containers':[{'name':'web','ports':[{'containerPort':443}]}]}}", path,
		      "[{'containerPort':443},{'containerPort':80},{'containerPort':53,'protocol':'UDP'},"
		      "{'containerPort':53,'protocol':'TCP'}]"));
	/* 53/UDP goes, 53/TCP stays: the protocol is part of the key */
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','ports':[{'containerPort':53,'protocol':'UDP','$patch':'delete'}]}]}}",
		      path, "[{'containerPort':80},{'containerPort':53,'protocol':'TCP'}]"));
	/* no protocol means TCP */
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','ports':[{'containerPort':53,'$patch':'delete'}]}]}}", path,
		      "[{'containerPort':80},{'containerPort':53,'protocol':'UDP'}]"));
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','ports':[{'containerPort':80,'name':'http'}]}]}}", path,
		      "[{'containerPort':80,'name':'http'},{'containerPort':53,'protocol':'UDP'},"
		      "{'containerPort':53,'protocol':'TCP'}]"));
}

TEST(strategic_env_mounts_volumes_pull_secrets)
{
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','env':[{'name':'B','value':'3'},{'name':'A','$patch':'delete'}]}]}}",
		      "spec.containers.0.env", "[{'name':'B','value':'3'}]"));
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','env':[{'name':'C','value':'9'}]}]}}", "spec.containers.0.env",
		      "[{'name':'C','value':'9'},{'name':'A','value':'1'},{'name':'B','value':'2'}]"));
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','volumeMounts':[{'mountPath':'/data','readOnly':true},"
		      "{'name':'logs','mountPath':'/logs'}]}]}}",
		      "spec.containers.0.volumeMounts",
		      "[{'name':'data','mountPath':'/data','readOnly':true},{'name':'logs','mountPath':'/logs'}]"));
	CHECK(pod_has("{'spec':{'volumes':[{'name':'logs','emptyDir':{}}]}}", "spec.volumes",
		      "[{'name':'logs','emptyDir':{}},{'name':'data','emptyDir':{}}]"));
	CHECK(pod_has("{'spec':{'imagePullSecrets':[{'name':'reg2'}]}}", "spec.imagePullSecrets",
		      "[{'name':'reg2'},{'name':'reg1'}]"));
	/* tolerations have no merge key upstream: replaced */
	CHECK(pod_has("{'spec':{'tolerations':[{'key':'b','operator':'Exists'}]}}", "spec.tolerations",
		      "[{'key':'b','operator':'Exists'}]"));
	/* status.conditions by type; podIP, a scalar, replaced */
	CHECK(pod_has("{'status':{'conditions':[{'type':'Ready','status':'True'}],'podIP':'10.128.0.6'}}", "status",
		      "{'conditions':[{'type':'Ready','status':'True'},{'type':'Initialized','status':'True'}],"
		      "'podIP':'10.128.0.6'}"));
}

TEST(strategic_service_ports_keep_allocated_fields)
{
	const char *svc = "{'kind':'Service','metadata':{'name':'s'},'spec':{'clusterIP':'172.30.0.9','type':'NodePort',"
			  "'ports':[{'port':80,'protocol':'TCP','targetPort':8080,'nodePort':30080}]}}";

	CHECK(SP(KIND_SERVICE, svc, "{'spec':{'ports':[{'port':443,'targetPort':8443}]}}",
		 "{'kind':'Service','metadata':{'name':'s'},'spec':{'clusterIP':'172.30.0.9','type':'NodePort',"
		 "'ports':[{'port':443,'targetPort':8443},{'port':80,'protocol':'TCP','targetPort':8080,'nodePort':30080}]}}"));
	CHECK(SP(KIND_SERVICE, svc, "{'spec':{'ports':[{'port':80,'targetPort':9090}]}}",
		 "{'kind':'Service','metadata':{'name':'s'},'spec':{'clusterIP':'172.30.0.9','type':'NodePort',"
		 "'ports':[{'port':80,'protocol':'TCP','targetPort':9090,'nodePort':30080}]}}"));
	/* the kind decides: a Pod has no spec.ports rule, so the list is replaced */
	CHECK(SP(KIND_POD, "{'spec':{'ports':[{'port':80}]}}", "{'spec':{'ports':[{'port':443}]}}",
		 "{'spec':{'ports':[{'port':443}]}}"));
}

TEST(strategic_node_addresses_conditions_and_pod_cidrs)
{
	const char *node = "{'kind':'Node','metadata':{'name':'n'},'spec':{'podCIDRs':['10.128.0.0/23']},"
			   "'status':{'addresses':[{'type':'InternalIP','address':'192.168.0.1'},"
			   "{'type':'Hostname','address':'n'}],'conditions':[{'type':'Ready','status':'True'}]}}";

	CHECK(SP(KIND_NODE, node,
		 "{'status':{'addresses':[{'type':'InternalIP','address':'192.168.0.2'}],"
		 "'conditions':[{'type':'MemoryPressure','status':'False'}]},'spec':{'podCIDRs':['fd00::/64']}}",
		 "{'kind':'Node','metadata':{'name':'n'},'spec':{'podCIDRs':['fd00::/64','10.128.0.0/23']},"
		 "'status':{'addresses':[{'type':'InternalIP','address':'192.168.0.2'},{'type':'Hostname','address':'n'}],"
		 "'conditions':[{'type':'MemoryPressure','status':'False'},{'type':'Ready','status':'True'}]}}"));
}

TEST(strategic_metadata_finalizers_and_owner_references)
{
	CHECK(pod_has("{'metadata':{'finalizers':['z','x']}}", "metadata.finalizers", "['z','x','y']"));
	CHECK(pod_has("{'metadata':{'$deleteFromPrimitiveList/finalizers':['x']}}", "metadata.finalizers", "['y']"));
	CHECK(pod_has("{'metadata':{'$deleteFromPrimitiveList/finalizers':['nope']}}", "metadata.finalizers",
		      "['x','y']"));
	CHECK(pod_has("{'metadata':{'finalizers':['z'],'$deleteFromPrimitiveList/finalizers':['x']}}",
		      "metadata.finalizers", "['z','y']"));
	CHECK(SP(KIND_SECRET, "{'metadata':{'ownerReferences':[{'uid':'1','name':'a'},{'uid':'2','name':'b'}]}}",
		 "{'metadata':{'ownerReferences':[{'uid':'2','name':'c'}]}}",
		 "{'metadata':{'ownerReferences':[{'uid':'1','name':'a'},{'uid':'2','name':'c'}]}}"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'metadata':{'finalizers':[{'a':1}]}}", -EINVAL,
		      "metadata.finalizers: a list of values merged as a set takes no objects"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'metadata':{'$deleteFromPrimitiveList/finalizers':'x'}}",
		      -EBADMSG, "must be a list of values"));
}

TEST(strategic_patch_directives_on_maps_and_lists)
{
	/* delete: a map emptied; an absent one stays absent */
	CHECK(pod_has("{'metadata':{'labels':{'$patch':'delete'}}}", "metadata.labels", "{}"));
	CHECK(SP(KIND_POD, "{'a':1}", "{'b':{'$patch':'delete'}}", "{'a':1}"));
	/* replace: the map becomes the rest of the patch */
	CHECK(pod_has("{'metadata':{'labels':{'$patch':'replace','new':'1'}}}", "metadata.labels", "{'new':'1'}"));
	/* merge: what a map does anyway */
	CHECK(pod_has("{'metadata':{'labels':{'$patch':'merge','new':'1','tier':null}}}", "metadata.labels",
		      "{'app':'web','new':'1'}"));
	/* replace as a list item: the list is the patch's other items */
	CHECK(pod_has("{'spec':{'containers':[{'name':'only','image':'x'},{'$patch':'replace'}]}}", "spec.containers",
		      "[{'name':'only','image':'x'}]"));
	CHECK(pod_has("{'spec':{'containers':[{'name':'side','image':'b2','$patch':'merge'}]}}", "spec.containers.1",
		      "{'name':'side','image':'b2'}"));
	/* nulls remove, also inside a new value (nothing to keep them for) */
	CHECK(pod_has("{'spec':{'containers':[{'name':'n','image':'x','args':null}]}}", "spec.containers.0",
		      "{'name':'n','image':'x'}"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'metadata':{'labels':{'$patch':'frob'}}}", -EBADMSG,
		      "metadata.labels: unknown $patch 'frob' (delete, replace or merge)"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'containers':[{'name':'web','$patch':'frob'}]}}",
		      -EBADMSG, "unknown $patch 'frob'"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'$frob':1}}", -EBADMSG,
		      "spec: unknown directive '$frob'"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'containers':[{'$patch':'delete'}]}}", -EINVAL,
		      "has no name"));
}

TEST(strategic_retain_keys)
{
	/* a volume changes its source: only the named members stay */
	CHECK(pod_has("{'spec':{'volumes':[{'name':'data','$retainKeys':['name','hostPath'],'hostPath':{'path':'/x'}}]}}",
		      "spec.volumes", "[{'name':'data','hostPath':{'path':'/x'}}]"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod,
		      "{'spec':{'volumes':[{'name':'data','$retainKeys':['name'],'hostPath':{'path':'/x'}}]}}", -EBADMSG,
		      "the patch sets 'hostPath', which its $retainKeys does not name"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'$retainKeys':'containers'}}", -EBADMSG,
		      "$retainKeys must be a list of names"));
}

TEST(strategic_set_element_order)
{
	/* reordered, nothing else changed */
	CHECK(pod_has("{'spec':{'$setElementOrder/containers':[{'name':'side'},{'name':'web'}]}}",
		      "spec.containers.0.name", "'side'"));
	/* with a merge: the new item where the order says */
	CHECK(pod_has("{'spec':{'$setElementOrder/containers':[{'name':'web'},{'name':'new'},{'name':'side'}],"
		      "'containers':[{'name':'new','image':'x'}]}}",
		      "spec.containers.1", "{'name':'new','image':'x'}"));
	/* items the order does not name keep their place among the others */
	CHECK(pod_has("{'spec':{'containers':[{'name':'web','env':[{'name':'C','value':'3'}],"
		      "'$setElementOrder/env':[{'name':'B'},{'name':'C'}]}]}}",
		      "spec.containers.0.env", "[{'name':'A','value':'1'},{'name':'B','value':'2'},{'name':'C','value':'3'}]"));
	/* a set's order */
	CHECK(pod_has("{'metadata':{'$setElementOrder/finalizers':['y','x']}}", "metadata.finalizers", "['y','x']"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod,
		      "{'spec':{'$setElementOrder/containers':[{'name':'web'}],'containers':[{'name':'x','image':'i'}]}}",
		      -EBADMSG, "is not in $setElementOrder/containers"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'$setElementOrder/containers':[{'image':'x'}]}}",
		      -EBADMSG, "has no name"));
	CHECK(refused(PATCH_STRATEGIC, KIND_POD, pod, "{'spec':{'$setElementOrder/containers':'web'}}", -EBADMSG,
		      "must be a list"));
}

/* ------------------------------------------------------------------ randomized */

static const char *const keys[] = { "a", "b", "c", "d", "e" };

static json_t *random_value(uint64_t *s, int depth);

static json_t *random_object(uint64_t *s, int depth)
{
	json_t *o = json_object();
	uint32_t n = test_rnd(s, 5);

	for (uint32_t i = 0; i < n; i++)
		json_object_set_new(o, keys[test_rnd(s, 5)], random_value(s, depth + 1));
	return o;
}

/* No null member anywhere in an object: a merge patch cannot set one
 * (null removes); lists may hold nulls (they are replaced whole). */
static json_t *random_value(uint64_t *s, int depth)
{
	json_t *l;

	switch (test_rnd(s, depth > 4 ? 4 : 6)) {
	case 0: return json_integer(test_rnd(s, 3));
	case 1: return json_string(keys[test_rnd(s, 3)]);
	case 2: return json_boolean(test_rnd(s, 2));
	case 3:
		l = json_array();
		for (uint32_t i = test_rnd(s, 3); i > 0; i--)
			json_array_append_new(l, test_rnd(s, 4) ? random_value(s, depth + 1) : json_null());
		return l;
	default: return random_object(s, depth);
	}
}

/* The merge patch that turns a into b (both objects): the naive diff. */
static json_t *diff(const json_t *a, const json_t *b)
{
	json_t *p = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)a, k, v)
		if (!json_object_get(b, k))
			json_object_set_new(p, k, json_null());
	json_object_foreach((json_t *)b, k, v) {
		json_t *old = json_object_get(a, k);

		if (json_is_object(old) && json_is_object(v)) {
			json_t *d = diff(old, v);
			if (json_object_size(d))
				json_object_set_new(p, k, d);
			else
				json_decref(d);
		} else if (!old || !json_equal(old, v)) {
			json_object_set_new(p, k, json_deep_copy(v));
		}
	}
	return p;
}

TEST(randomized_merge_patch_of_a_diff_gives_the_target)
{
	uint64_t s = test_seed() * 0x9e3779b97f4a7c15ull | 1;
	char err[512];

	for (int round = 0; round < 3000; round++) {
		json_t *a = random_object(&s, 1), *b = random_object(&s, 1), *p, *out = NULL;

		/* b often an edit of a, so that the diff has depth */
		if (round % 2) {
			json_decref(b);
			b = json_deep_copy(a);
			json_object_set_new(b, keys[test_rnd(&s, 5)], random_value(&s, 2));
			json_object_del(b, keys[test_rnd(&s, 5)]);
		}
		p = diff(a, b);
		if (patch_apply(PATCH_MERGE, KIND_POD, a, p, &out, err, sizeof(err)) || !json_equal(out, b)) {
			fprintf(stderr, "    seed %llu round %d: A %s B %s patch %s got %s (%s)\n",
				(unsigned long long)test_seed(), round, json_dumps(a, 0), json_dumps(b, 0),
				json_dumps(p, 0), out ? json_dumps(out, 0) : "-", err);
			CHECK(0);
		}
		json_decref(out);
		out = NULL;
		/* strategic merge patch is the same where no list has a merge key
		 * (a Secret's fields a..e have none) */
		CHECK(patch_apply(PATCH_STRATEGIC, KIND_SECRET, a, p, &out, err, sizeof(err)) == 0);
		CHECK(json_equal(out, b));
		json_decref(out);
		json_decref(p);
		json_decref(a);
		json_decref(b);
	}
}
