/*
 * validate_tracerequest.c — TraceRequest (network.weft.io/v1): one packet
 * to run through one node's loaded programs (model.h, "TraceRequests";
 * docs/trace.md).  Structural, as every check here:
 *
 *   spec.nodeName     required, a DNS-1123 subdomain (a Node's name)
 *   spec.from         required, Pod, Tunnel, Node or Outside
 *   spec.protocol     TCP (the default), UDP or ICMP
 *   spec.source       IPv4; required unless from Node (whose route
 *                     picks it)
 *   spec.destination  required, IPv4
 *   spec.sourcePort, spec.destinationPort  1-65535, required unless ICMP
 *   spec.pod          IPv4, from Pod only
 *   spec.tunnel       {vni 0-16777215, remote IPv4}: required from
 *                     Tunnel, refused from anywhere else
 *   status            an object (the node's answer; its fields are
 *                     the agent's, docs/trace.md)
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

void validate_tracerequest(struct vctx *v, const json_t *obj)
{
	static const char *const froms[] = { "Pod", "Tunnel", "Node", "Outside", NULL };
	static const char *const protocols[] = { "TCP", "UDP", "ICMP", NULL };
	const json_t *spec = vget_object(v, obj, "spec", true), *tun;
	const char *from, *proto;
	json_int_t n;
	uint32_t ip;
	size_t mark;

	vget_object(v, obj, "status", false);
	if (!spec)
		return;
	mark = vpush(v, "spec");
	vget_name(v, spec, "nodeName", true, model_dns1123_subdomain, "a valid DNS-1123 subdomain");
	from = vget_enum(v, spec, "from", true, froms);
	proto = vget_enum(v, spec, "protocol", false, protocols);
	(void)vget_ip4(v, spec, "source", !from || strcmp(from, "Node") != 0, &ip);
	(void)vget_ip4(v, spec, "destination", true, &ip);
	(void)vget_port(v, spec, "sourcePort", !proto || strcmp(proto, "ICMP") != 0, &n);
	(void)vget_port(v, spec, "destinationPort", !proto || strcmp(proto, "ICMP") != 0, &n);
	(void)vget_ip4(v, spec, "pod", false, &ip);
	if (from && strcmp(from, "Pod") != 0 && json_object_get(spec, "pod"))
		verror(v, "pod", "only a trace from a Pod leaves a pod's veth");
	tun = vget_object(v, spec, "tunnel", from && strcmp(from, "Tunnel") == 0);
	if (tun && from && strcmp(from, "Tunnel") != 0) {
		verror(v, "tunnel", "only a trace from the Tunnel carries a tunnel key");
	} else if (tun) {
		size_t m = vpush(v, "tunnel");

		(void)vget_int_range(v, tun, "vni", true, 0, 0xffffff, "a valid VNI (0-16777215)", &n);
		(void)vget_ip4(v, tun, "remote", true, &ip);
		vpop(v, m);
	}
	vpop(v, mark);
}
