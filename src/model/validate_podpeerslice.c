/*
 * validate_podpeerslice.c — PodPeerSlice (network.weft.io/v1): the
 * controller's compact table of one node's pods as NetworkPolicy peers
 * (model.h, "PodPeerSlices").  Only the controller writes one (the API
 * refuses every client write), so this is a structural check that keeps
 * the controller from storing a malformed one, and what an agent reading
 * it may rely on:
 *
 *   node        required, a DNS-1123 subdomain (a Node's name)
 *   identities  a list, each {namespace (DNS-1123 label, required),
 *               labels (a label map, may be empty), ports (a list of
 *               {name (IANA service name, required), protocol
 *               TCP|UDP|SCTP, port 1-65535})}
 *   pods        at most PODPEERSLICE_MAX_PODS, each {name (required),
 *               ip (IPv4, required), identity (an index into identities,
 *               required)}
 *
 * Invariants
 *  1. A valid slice's every pod names an identity the slice lists.
 *  2. No check needs cluster state (model.h: validation is structural).
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

static void check_identity(struct vctx *v, const json_t *id)
{
	const json_t *ports = vget_list(v, id, "ports", false), *p;
	size_t i;

	vget_name(v, id, "namespace", true, model_dns1123_label, "a valid DNS-1123 label");
	vcheck_label_map(v, id, "labels");
	json_array_foreach(ports, i, p) {
		size_t m;

		if (vpush_item(v, "ports", i, p, &m)) {
			vget_name(v, p, "name", true, model_iana_svc_name, "a valid IANA service name");
			vget_protocol(v, p, "protocol");
			vget_port(v, p, "port", true, NULL);
		}
		vpop(v, m);
	}
}

static void check_pod(struct vctx *v, const json_t *pod, size_t nids)
{
	uint32_t ip;
	json_int_t idx;

	vget_name(v, pod, "name", true, model_dns1123_subdomain, "a valid DNS-1123 subdomain");
	(void)vget_ip4(v, pod, "ip", true, &ip);
	if (vget_int(v, pod, "identity", true, &idx) && (idx < 0 || (size_t)idx >= nids))
		verror(v, "identity", "%lld is not an index of identities (%zu listed)", (long long)idx, nids);
}

void validate_podpeerslice(struct vctx *v, const json_t *obj)
{
	const json_t *ids = vget_list(v, obj, "identities", false);
	const json_t *pods = vget_list(v, obj, "pods", false), *x;
	size_t i;

	vget_name(v, obj, "node", true, model_dns1123_subdomain, "a valid DNS-1123 subdomain");
	json_array_foreach(ids, i, x) {
		size_t m;

		if (vpush_item(v, "identities", i, x, &m))
			check_identity(v, x);
		vpop(v, m);
	}
	if (json_array_size(pods) > PODPEERSLICE_MAX_PODS)
		verror(v, "pods", "too many items (%zu, at most %d)", json_array_size(pods), PODPEERSLICE_MAX_PODS);
	json_array_foreach(pods, i, x) {
		size_t m;

		if (vpush_item(v, "pods", i, x, &m))
			check_pod(v, x, json_array_size(ids));
		vpop(v, m);
	}
}
