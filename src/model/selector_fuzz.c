/*
 * selector_fuzz.c — libFuzzer target: any bytes as a labelSelector and as
 * a fieldSelector (of pods and of nodes), then what parsed matched against
 * a few objects.
 *
 * Besides "no crash, no leak, no undefined behaviour" it aborts when:
 *   1. a parse answers anything but 0, -EINVAL or -E2BIG, or fails
 *      without a message, or leaves terms behind after failing;
 *   2. the same text parses differently a second time (terms, matches).
 */
#include "model/selector.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const objects[] = {
	"{\"metadata\":{\"name\":\"a\",\"namespace\":\"red\",\"labels\":{\"app\":\"web\",\"n\":\"7\"}},"
	"\"spec\":{\"nodeName\":\"node-1\"}}",
	"{\"metadata\":{\"name\":\"in\",\"labels\":{\"in\":\"\",\"example.com/x\":\"y\"}}}",
	"{}",
};

/* The bits of which objects s selects. */
static unsigned matches(const struct selector *s)
{
	unsigned bits = 0;

	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		json_t *o = json_loads(objects[i], 0, NULL);
		struct selector_view v;

		if (!o)
			abort();
		selector_view_of(o, &v);
		bits |= (unsigned)selector_matches(s, &v) << i;
		json_decref(o);
	}
	return bits;
}

static void one(const char *text, int how)
{
	struct selector s = { 0 }, again = { 0 };
	char err[512] = "";
	const struct kind_info *k = kind_get(how == 2 ? KIND_NODE : KIND_POD);
	int rc = how == 0 ? selector_parse_labels(&s, text, err, sizeof(err))
			  : selector_parse_fields(&s, k, text, err, sizeof(err));

	if (rc != 0 && rc != -EINVAL && rc != -E2BIG)
		abort();	/* property 1 */
	if (rc && (!err[0] || !selector_empty(&s)))
		abort();
	if (rc == 0) {
		int rc2 = how == 0 ? selector_parse_labels(&again, text, err, sizeof(err))
				   : selector_parse_fields(&again, k, text, err, sizeof(err));

		if (rc2 || again.nlabels != s.nlabels || again.nfields != s.nfields || matches(&s) != matches(&again))
			abort();	/* property 2 */
	}
	selector_free(&s);
	selector_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;		/* a query parameter: a C string, up to its first NUL */
	for (int how = 0; how < 3; how++)
		one(text, how);
	free(text);
	return 0;
}
