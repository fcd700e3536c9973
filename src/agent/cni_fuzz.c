/*
 * cni_fuzz.c — libFuzzer target for the agent's CNI request handling: the
 * frame the plugin sends (request JSON with the runtime's environment and
 * the configuration text) goes through cni_server_handle with ops that
 * accept everything, so every path of decoding, validation, version
 * negotiation, CNI_ARGS parsing and result printing runs.  Invariant
 * checked: the reply is always one JSON object with an integer "exit" and
 * a string "stdout", and a non-zero exit carries a CNI error object.
 */
#include "agent/cni_server.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int ok_add(void *ctx, const struct cni_req *req, struct cni_add_result *res,
		  struct cni_err *err)
{
	(void)ctx;
	if (req->container_id && req->container_id[0] == 'x')
		return cni_err_set(err, CNI_ERR_EXHAUSTED, req->container_id, "no room for %s",
				   req->ifname ? req->ifname : "?");
	memcpy(res->host_ifname, "weft0123456789a", 16);
	memcpy(res->pod_ifname, "eth0", 5);
	res->mtu = 1450;
	res->ip = htonl(0x0a800002);
	res->gateway = htonl(0x0a800001);
	return 0;
}

static int ok_other(void *ctx, const struct cni_req *req, struct cni_err *err)
{
	(void)ctx;
	(void)req;
	(void)err;
	return 0;
}

static const struct cni_ops ops = {
	.add = ok_add, .del = ok_other, .check = ok_other, .gc = ok_other, .status = ok_other,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *req = malloc(size + 1);
	char *reply;
	json_t *r, *out;
	json_int_t code;

	if (!req)
		return 0;
	memcpy(req, data, size);
	req[size] = 0;
	reply = cni_server_handle(&ops, NULL, req, -1);
	free(req);
	if (!reply)
		return 0;	/* out of memory only */
	r = json_loads(reply, 0, NULL);
	if (!json_is_object(r) || !json_is_integer(json_object_get(r, "exit")) ||
	    !json_is_string(json_object_get(r, "stdout")))
		abort();
	code = json_integer_value(json_object_get(r, "exit"));
	if (code != 0) {
		out = json_loads(json_string_value(json_object_get(r, "stdout")), 0, NULL);
		if (!json_is_object(out) || !json_is_integer(json_object_get(out, "code")) ||
		    !json_is_string(json_object_get(out, "msg")))
			abort();
		json_decref(out);
	}
	json_decref(r);
	free(reply);
	return 0;
}
