/*
 * media_test.c — the media type of Content-Type headers as clients send
 * them: parameters, blanks, case, nothing at all.
 */
#include "lib/media.h"
#include "test.h"

#include <stdio.h>

TEST(media_type_drops_blanks_and_parameters)
{
	size_t n = 99;
	const char *m = media_type_of("  application/json ; charset=utf-8", &n);

	CHECK_EQ(n, strlen("application/json"));
	CHECK(strncmp(m, "application/json", n) == 0);
	CHECK(media_type_of(NULL, &n) && n == 0);
	CHECK(media_type_of(" ;x=y", &n) && n == 0);
	CHECK(media_type_is("Application/Merge-Patch+JSON;charset=utf-8", "application/merge-patch+json"));
	CHECK(media_type_is("\tapplication/json\t", "application/json"));
	CHECK(!media_type_is("application/jsonx", "application/json"));
	CHECK(!media_type_is("application/js", "application/json"));
	CHECK(!media_type_is(NULL, "application/json"));
}

/* What the API offers (api negotiation), in its order. */
static const struct media_offer api_offers[] = {
	{ .type = "application/json" },
	{ .type = "application/yaml" },
	{ .type = "application/json", .as = "Table", .g = "meta.k8s.io", .v = "v1" },
};

static int pick(const char *accept)
{
	return media_accept_pick(accept, api_offers, sizeof(api_offers) / sizeof(api_offers[0]));
}

TEST(media_accept_picks_as_clients_ask)
{
	CHECK_EQ(pick(NULL), 0);
	CHECK_EQ(pick(""), 0);
	CHECK_EQ(pick(" , "), 0);
	CHECK_EQ(pick("*/*"), 0);
	CHECK_EQ(pick("application/*"), 0);
	CHECK_EQ(pick("application/yaml"), 1);
	CHECK_EQ(pick("Application/YAML; charset=utf-8"), 1);
	/* kubectl get: the Table first, JSON as a fallback */
	CHECK_EQ(pick("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"), 2);
	CHECK_EQ(pick("application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"), 0);
	/* a profile weft does not serve, then JSON (kubectl's aggregated discovery) */
	CHECK_EQ(pick("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"), 0);
	/* q decides, then the order */
	CHECK_EQ(pick("application/json;q=0.5, application/yaml"), 1);
	CHECK_EQ(pick("application/yaml;q=0.9, application/json;q=0.91"), 0);
	CHECK_EQ(pick("application/yaml, application/json"), 1);
	CHECK_EQ(pick("application/json, application/yaml"), 0);
	CHECK_EQ(pick("text/html, */*;q=0.1"), 0);
	/* nothing acceptable */
	CHECK_EQ(pick("text/html"), -1);
	CHECK_EQ(pick("application/vnd.kubernetes.protobuf"), -1);
	CHECK_EQ(pick("application/json;q=0"), -1);
	CHECK_EQ(pick("application/json;q=junk"), -1);
	CHECK_EQ(pick("application/json;as=Table"), -1);	/* no g, v */
	CHECK_EQ(pick("text/*"), -1);
}

TEST(media_accept_reads_a_bounded_number_of_ranges)
{
	char buf[MEDIA_ACCEPT_MAX_RANGES * 12 + 64];
	size_t k = 0;

	for (int i = 0; i < MEDIA_ACCEPT_MAX_RANGES; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "text/x%03d, ", i);
	snprintf(buf + k, sizeof(buf) - k, "application/json");
	CHECK_EQ(pick(buf), -1);	/* the JSON range is past the bound */
	CHECK_EQ(pick(buf + 11), 0);
}
