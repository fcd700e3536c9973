/*
 * flows_relay_test.c — which nodes the flows relay reads (flows_targets):
 * those whose Node carries a well-formed weft.io/flows annotation (an
 * https endpoint and a sha256 pin), only the one named when one is, and
 * no more than FLOWS_RELAY_NODES_MAX; the others counted as skipped.
 * The streams themselves run against real agents in tests/e2e/flows.sh.
 */
#include "controller/flows_relay.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
