/*
 * apply_batch_test.c — batched apply on a real SQLite store: the List's
 * checks, each item's answer, the lock let go between groups, and a
 * randomized run of batches checked against a naive model of what apply
 * does to each object (created, configured, unchanged, failed), some of
 * them create-only (?mode=create: an object that exists fails, kept).
 */
#include "controller/apply_batch.h"
#include "controller/registry_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ops of a test: writes straight through the registry, as the API's
 * POST and PUT make them; admit refuses names that start with "deny". */
struct harness {
	struct fixture *fx;
	bool locked;
	size_t takes;		/* times the lock was taken */
	size_t in_hold;		/* writes in the current hold */
	size_t most_in_hold;
	size_t outside;		/* writes made without the lock: must stay 0 */
};

static int admit(void *arg, size_t index, const struct route *r, struct status *st)
{
	(void)arg;
	(void)index;
	if (strncmp(r->name, "deny", 4) == 0) {
		status_set(st, 403, "Forbidden", "%s: denied", r->name);
		return -1;
	}
	return 0;
}

static int write_through(void *arg, const struct route *r, bool create, json_t *body, json_t **out,
			 struct status *st)
{
	struct harness *h = arg;

	if (!h->locked)
		h->outside++;
	if (++h->in_hold > h->most_in_hold)
		h->most_in_hold = h->in_hold;
	return registry_write_checked(&h->fx->reg, r->kind, r->ns, body, (create ? REGISTRY_CREATE : 0) | REGISTRY_MAIN,
				      out, st);
}

static void lock(void *arg, bool take)
{
	struct harness *h = arg;

	h->locked = take;
	h->in_hold = 0;
	h->takes += take;
}

static struct apply_ops ops_of(struct harness *h)
{
	return (struct apply_ops){ .arg = h, .admit = admit, .write = write_through, .lock = lock };
}

static json_t *secret(const char *ns, const char *name, const char *value)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
			 "metadata", "name", name, "namespace", ns, "resourceVersion", "1", "type", "Opaque",
			 "data", "v", value);
}

static json_t *list_of(json_t *items)
{
	return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
}

TEST(apply_batch_refuses_what_is_not_a_list_of_a_bounded_size)
{
	struct apply_batch b;
	struct status st = { 0 };
	json_t *pod = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "Pod");
	json_t *items = json_array(), *l;

	CHECK(apply_batch_parse(pod, 10, &b, &st) == -1);
	CHECK_EQ(st.code, 400);
	CHECK(strstr(st.message, "must be a v1 List"));
	json_decref(pod);
	for (int i = 0; i < 11; i++)
		json_array_append_new(items, secret("a", "x", "MQ=="));
	l = list_of(items);
	CHECK(apply_batch_parse(l, 10, &b, &st) == -1);
	CHECK_EQ(st.code, 413);
	CHECK(strstr(st.message, "11 items, more than 10"));
	CHECK(apply_batch_parse(l, 11, &b, &st) == 0);
	CHECK_EQ(b.n, 11);
	apply_batch_free(&b);
	json_decref(l);
	l = json_pack("{s:s, s:s, s:n}", "apiVersion", "v1", "kind", "List", "items");
	CHECK(apply_batch_parse(l, 10, &b, &st) == 0);
	CHECK_EQ(b.n, 0);
	apply_batch_free(&b);
	json_decref(l);
}

TEST(apply_batch_items_that_name_no_object_fail_alone)
{
	struct apply_batch b;
	struct status st = { 0 };
	json_t *l = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
			       "{\"apiVersion\":\"v1\",\"kind\":\"Foo\",\"metadata\":{\"name\":\"f\"}},"
			       "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"a\"}},"
			       "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}},"
			       "{\"apiVersion\":\"apps/v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\",\"namespace\":\"a\"}},"
			       "7,"
			       "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"ok\",\"namespace\":\"a\",\"uid\":\"u\"}}]}",
			       0, NULL);
	json_t *answer, *first;

	CHECK(l);
	CHECK(apply_batch_parse(l, 10, &b, &st) == 0);
	CHECK_EQ(b.n, 6);
	for (size_t i = 0; i < 5; i++) {
		CHECK_EQ(b.items[i].result, APPLY_FAILED);
		CHECK_EQ(b.items[i].st.code, 400);
	}
	CHECK(strstr(b.items[0].st.message, "kind 'Foo' is not a kind this API serves"));
	CHECK(strstr(b.items[1].st.message, "metadata.name: required"));
	CHECK(strstr(b.items[2].st.message, "metadata.namespace: required"));
	CHECK(strstr(b.items[3].st.message, "this API serves Secret as 'v1'"));
	CHECK(strstr(b.items[4].st.message, "must be a JSON object"));
	/* the last names its object, and what the server owns is taken out */
	CHECK_EQ(b.items[5].result, APPLY_PENDING);
	CHECK_STR(b.items[5].r.name, "ok");
	CHECK_STR(b.items[5].r.ns, "a");
	CHECK(!obj_str(b.items[5].obj, "metadata.uid"));
	answer = apply_batch_answer(&b);
	first = json_array_get(json_object_get(answer, "items"), 0);
	CHECK_STR(json_string_value(json_object_get(first, "kind")), "Foo");
	CHECK_STR(json_string_value(json_object_get(first, "name")), "f");
	CHECK_STR(json_string_value(json_object_get(first, "result")), "failed");
	CHECK_STR(json_string_value(json_object_get(first, "reason")), "BadRequest");
	json_decref(answer);
	apply_batch_free(&b);
	json_decref(l);
}

TEST(apply_batch_writes_under_the_lock_a_group_at_a_time)
{
	struct fixture fx;
	struct harness h = { .fx = &fx };
	struct apply_ops ops = ops_of(&h);
	struct apply_batch b;
	struct status st = { 0 };
	json_t *items = json_array(), *l;
	const size_t n = 3 * APPLY_GROUP_ITEMS + 5;
	char name[32];

	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "a") == 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "s-%zu", i);
		json_array_append_new(items, secret("a", name, "MQ=="));
	}
	l = list_of(items);
	CHECK(apply_batch_parse(l, n, &b, &st) == 0);
	apply_batch_run(&b, &fx.reg, &ops);
	CHECK_EQ(h.outside, 0);
	CHECK_EQ(h.takes, 4);
	CHECK_EQ(h.most_in_hold, APPLY_GROUP_ITEMS);
	CHECK(!h.locked);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(b.items[i].result, APPLY_CREATED);
	CHECK(fsck_clean(&fx));
	apply_batch_free(&b);
	json_decref(l);
	fx_close(&fx);
}

/* The naive model: each object's value, "" for none. */
#define NAMES 12
struct model {
	char value[2][NAMES][8];	/* namespace a (0), b (1) */
};

TEST(apply_batch_matches_a_naive_model_of_apply)
{
	static const char *const values[] = { "MQ==", "Mg==", "Mw==" };
	static const char *const nss[] = { "a", "b", "missing" };
	uint64_t seed = test_seed() | 1;
	struct fixture fx;
	struct harness h = { .fx = &fx };
	struct apply_ops ops = ops_of(&h);
	struct model m;

	memset(&m, 0, sizeof(m));
	CHECK(fx_open(&fx, NULL) == 0);
	CHECK(add_ns(&fx, "a") == 0);
	CHECK(add_ns(&fx, "b") == 0);
	for (int round = 0; round < 40; round++) {
		size_t n = test_rnd(&seed, 3 * APPLY_GROUP_ITEMS);
		json_t *items = json_array(), *l;
		enum apply_result want[3 * APPLY_GROUP_ITEMS];
		struct apply_batch b;
		struct status st = { 0 };
		bool create_only = test_rnd(&seed, 3) == 0;	/* ?mode=create */

		for (size_t i = 0; i < n; i++) {
			uint32_t ns = test_rnd(&seed, 3), k = test_rnd(&seed, NAMES);
			const char *v = values[test_rnd(&seed, 3)];
			char name[32];

			snprintf(name, sizeof(name), "%s-%u", test_rnd(&seed, 10) ? "s" : "deny", k);
			json_array_append_new(items, secret(nss[ns], name, v));
			if (ns == 2 || name[0] == 'd') {
				want[i] = APPLY_FAILED;
			} else {
				char *have = m.value[ns][k];

				if (!have[0])
					want[i] = APPLY_CREATED;
				else if (create_only)
					want[i] = APPLY_FAILED;	/* it exists: left as it is */
				else
					want[i] = strcmp(have, v) ? APPLY_CONFIGURED : APPLY_UNCHANGED;
				if (!have[0] || !create_only)
					snprintf(have, sizeof(m.value[ns][k]), "%s", v);
			}
		}
		l = list_of(items);
		CHECK(apply_batch_parse(l, n, &b, &st) == 0);
		b.create_only = create_only;
		apply_batch_run(&b, &fx.reg, &ops);
		for (size_t i = 0; i < n; i++) {
			if (b.items[i].result != want[i])
				test_fail(__FILE__, __LINE__, "round %d%s item %zu (%s/%s): %s, want %s (%s)", round,
					  create_only ? " (create)" : "", i,
					  b.items[i].r.ns, b.items[i].r.name, apply_result_name(b.items[i].result),
					  apply_result_name(want[i]), b.items[i].st.message);
			CHECK(!test_failed());
			if (want[i] == APPLY_FAILED && strcmp(b.items[i].r.ns, "missing") != 0 &&
			    b.items[i].r.name[0] != 'd') {
				CHECK_EQ(b.items[i].st.code, 409);
				CHECK(strstr(b.items[i].st.message, "already exists"));
			} else if (want[i] == APPLY_FAILED) {
				CHECK_EQ(b.items[i].st.code, b.items[i].r.name[0] == 'd' ? 403 : 404);
			}
		}
		apply_batch_free(&b);
		json_decref(l);
	}
	/* what is stored is the model */
	for (int ns = 0; ns < 2; ns++)
		for (int k = 0; k < NAMES; k++) {
			char name[32];
			json_t *o;

			snprintf(name, sizeof(name), "s-%d", k);
			o = get(&fx, KIND_SECRET, nss[ns], name);
			CHECK(!o == !m.value[ns][k][0]);
			if (o)
				CHECK_STR(obj_str(o, "data.v"), m.value[ns][k]);
			json_decref(o);
		}
	CHECK_EQ(h.outside, 0);
	CHECK(fsck_clean(&fx));
	fx_close(&fx);
}
