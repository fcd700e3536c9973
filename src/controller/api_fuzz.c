/*
 * api_fuzz.c — libFuzzer target for what the API does with a request
 * before it touches the store: the path is routed, the body parsed as JSON
 * (with the duplicate-key rule the API uses), and a body for a kind goes
 * through registry_prepare (identity, validation, defaults).
 *
 * Input: the first line is the URL path, the rest is the body.
 */
#include "controller/controller.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t url_len = nl ? (size_t)(nl - data) : size;
	char url[1100];
	struct route r;
	json_t *body;
	struct status st = { 0 };

	if (url_len >= sizeof(url))
		return 0;
	memcpy(url, data, url_len);
	url[url_len] = 0;
	if (memchr(url, 0, url_len))
		return 0;
	if (api_parse_route(url, &r) != 0 || r.podnetwork || !r.kind)
		return 0;
	if (!nl)
		return 0;
	body = json_loadb((const char *)nl + 1, size - url_len - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!body)
		return 0;
	if (json_is_object(body) && registry_prepare(r.kind, r.ns[0] ? r.ns : "default",
						     r.has_name ? r.name : NULL, body, &st) == 0) {
		char *s = json_dumps(body, JSON_COMPACT);
		free(s);
	}
	json_decref(body);
	return 0;
}
