/*
 * api_fuzz.c — libFuzzer target for what the API does with a request
 * before it touches the store: the path is routed, the body parsed as JSON
 * (with the duplicate-key rule the API uses), and a body for a kind goes
 * through registry_prepare (the body against the path, validation,
 * defaults) and, when that accepts it, through the encoding every stored
 * object goes through.
 *
 * Input: the first line is the URL path, optionally after "DELETE " (the
 * body is then DeleteOptions), the rest is the body.  The seeds under
 * tests/fuzz/corpus/api/ include bodies of another kind than the path's
 * and bodies nested past the limits.
 *
 * Besides "no crash, no leak, no undefined behaviour", it aborts when an
 * invariant of the body check breaks:
 *  1. an accepted body is of the path's kind and apiVersion, has the
 *     path's name (on a replace) and namespace;
 *  2. an accepted body encodes within the limits or is refused with
 *     -E2BIG, never -EPROTO, and its text parses back with the readers'
 *     settings to an equal object (model_encode_checked does not parse it
 *     back itself: this is where that is proven);
 *  3. accepted DeleteOptions give a revision > 0 or none.
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_accepted(const struct route *r, const char *ns, json_t *body)
{
	char err[512], *text = NULL;
	size_t len = 0;
	int rc;

	if (strcmp(obj_kind(body) ?: "", r->kind->kind) != 0 ||
	    strcmp(obj_str(body, "apiVersion") ?: "", r->kind->api_version) != 0)
		abort();
	if (r->has_name && strcmp(obj_name(body) ?: "", r->name) != 0)
		abort();
	if (r->kind->namespaced && strcmp(obj_namespace(body), ns) != 0)
		abort();
	rc = model_encode_checked(body, &text, &len, err, sizeof(err));
	if (rc != 0 && rc != -E2BIG && rc != -ENOMEM)
		abort();
	if (rc == 0) {
		json_t *back = json_loadb(text, len, 0, NULL);

		if (!back || !json_equal(back, body))
			abort();
		json_decref(back);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t url_len = nl ? (size_t)(nl - data) : size;
	char url[1100], *path = url;
	bool is_delete = false;
	struct route r;
	json_t *body;
	struct status st = { 0 };
	const char *ns;

	if (url_len >= sizeof(url))
		return 0;
	memcpy(url, data, url_len);
	url[url_len] = 0;
	if (memchr(url, 0, url_len))
		return 0;
	if (strncmp(url, "DELETE ", 7) == 0) {
		is_delete = true;
		path += 7;
	}
	if (api_parse_route(path, &r) != 0 || r.podnetwork || !r.kind)
		return 0;
	if (!nl)
		return 0;
	body = json_loadb((const char *)nl + 1, size - url_len - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!body)
		return 0;
	ns = r.ns[0] ? r.ns : "default";
	if (is_delete) {
		int64_t want = -1;

		if (model_delete_options(r.kind, body, &want, st.message, sizeof(st.message)) == 0 && want < 0)
			abort();
	} else if (json_is_object(body) &&
		   registry_prepare(r.kind, ns, r.has_name ? r.name : NULL, body, &st) == 0) {
		check_accepted(&r, ns, body);
	}
	json_decref(body);
	return 0;
}
