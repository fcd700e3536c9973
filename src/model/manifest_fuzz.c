/*
 * manifest_fuzz.c — libFuzzer target: any bytes through the manifest
 * decoder, then every object through validation and defaulting.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks three
 * properties and aborts when one fails:
 *   1. every message (decode or validation) is valid UTF-8 — it goes into a
 *      JSON response;
 *   2. an object that validated still validates after model_default;
 *   3. yaml_emit of a decoded object decodes back to an equal object.
 */
#include "lib/yaml.h"
#include "model/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_message(const char *msg)
{
	json_t *s = json_string(msg);

	if (!s)
		abort();	/* property 1 */
	json_decref(s);
}

static void check_round_trip(const json_t *obj)
{
	char *text = yaml_emit(obj), err[256];
	json_t **docs = NULL;
	size_t n = 0;

	if (!text)
		abort();
	if (yaml_decode_stream(text, strlen(text), &docs, &n, err, sizeof(err)) < 0 || n != 1 ||
	    !json_equal(docs[0], obj))
		abort();	/* property 3 */
	yaml_docs_free(docs, n);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char err[8192];
	json_t **docs = NULL;
	size_t n = 0;

	if (model_decode_manifest((const char *)data, size, &docs, &n, err, sizeof(err)) < 0) {
		check_message(err);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int rc = model_validate(docs[i], err, sizeof(err));

		check_message(err);
		check_round_trip(docs[i]);
		model_default(docs[i]);
		if (rc == 0 && model_validate(docs[i], err, sizeof(err)) != 0)
			abort();	/* property 2 */
	}
	yaml_docs_free(docs, n);
	return 0;
}
