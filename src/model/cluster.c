/*
 * cluster.c — the cluster's network configuration (the ClusterNetwork
 * "default") as a struct, to and from its JSON object.
 *
 * cluster_config_from_json checks the fields it is given (the same checks
 * as model_validate), fills the absent ones with the defaults, and checks
 * the result once more as a whole, so a given serviceNetwork that overlaps
 * the default cluster network is refused too.
 */
#include "model/model.h"
#include "model/validate.h"

#include <errno.h>
#include <string.h>

static const char *const mode_names[] = {
	[MODE_FLAT] = "flat",
	[MODE_MULTITENANT] = "multitenant",
	[MODE_NETWORKPOLICY] = "networkpolicy",
};

const char *cluster_mode_name(enum cluster_mode m)
{
	return (unsigned)m < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[m] : "unknown";
}

bool cluster_mode_gives_vnids(enum cluster_mode m)
{
	return m == MODE_MULTITENANT;
}

void cluster_config_default(struct cluster_config *c)
{
	memset(c, 0, sizeof(*c));
	c->networks[0].cidr.addr = 0x0a800000u;		/* 10.128.0.0/14 */
	c->networks[0].cidr.len = 14;
	c->networks[0].host_subnet_length = 9;
	c->nnetworks = 1;
	c->service_network.addr = 0xac1e0000u;		/* 172.30.0.0/16 */
	c->service_network.len = 16;
	c->mode = MODE_MULTITENANT;
	c->vxlan_port = 4789;
	c->mtu = 0;
	c->nvip_networks = 0;
}

/* s was validated: a canonical CIDR. */
static struct cidr cidr_of(const json_t *s)
{
	struct cidr c = { 0, 0 };

	if (cidr_parse(json_string_value(s), &c) < 0)
		memset(&c, 0, sizeof(c));
	return c;
}

int cluster_config_from_json(const json_t *obj, struct cluster_config *c, char *err,
			     size_t errlen)
{
	const json_t *list, *item, *j;
	struct vctx v;
	size_t i;

	vctx_init(&v, err, errlen);
	if (!json_is_object(obj)) {
		verror(&v, NULL, "a ClusterNetwork must be a JSON object");
		return -EINVAL;
	}
	validate_cluster_fields(&v, obj, false);
	if (v.nerrors)
		return -EINVAL;

	cluster_config_default(c);
	list = json_object_get(obj, "clusterNetworks");
	if (json_is_array(list)) {
		c->nnetworks = 0;
		json_array_foreach(list, i, item) {
			c->networks[i].cidr = cidr_of(json_object_get(item, "cidr"));
			c->networks[i].host_subnet_length =
				(uint8_t)json_integer_value(json_object_get(item, "hostSubnetLength"));
			c->nnetworks++;
		}
	}
	if ((j = json_object_get(obj, "serviceNetwork")) && json_is_string(j) &&
	    *json_string_value(j))
		c->service_network = cidr_of(j);
	if ((j = json_object_get(obj, "mode")) && json_is_string(j)) {
		for (size_t m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
			if (!strcmp(json_string_value(j), mode_names[m]))
				c->mode = (enum cluster_mode)m;
	}
	if ((j = json_object_get(obj, "vxlanPort")) && json_is_integer(j))
		c->vxlan_port = (uint16_t)json_integer_value(j);
	if ((j = json_object_get(obj, "mtu")) && json_is_integer(j))
		c->mtu = (uint32_t)json_integer_value(j);
	list = json_object_get(obj, "vipNetworks");
	json_array_foreach(list, i, item)
		c->vip_networks[c->nvip_networks++] = cidr_of(item);

	/* the whole, defaults included */
	json_t *whole = cluster_config_to_json(c);

	if (!whole)
		return -ENOMEM;
	validate_cluster_fields(&v, whole, true);
	json_decref(whole);
	return v.nerrors ? -EINVAL : 0;
}

json_t *cluster_config_to_json(const struct cluster_config *c)
{
	json_t *obj, *nets, *vips;
	char buf[CIDR_STRLEN];

	obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "network.openshift.io/v1", "kind",
			"ClusterNetwork", "metadata", "name", "default");
	nets = json_array();
	vips = json_array();
	if (!obj || !nets || !vips)
		goto fail;
	for (size_t i = 0; i < c->nnetworks && i < CLUSTER_MAX_NETWORKS; i++) {
		cidr_format(&c->networks[i].cidr, buf);
		if (json_array_append_new(nets, json_pack("{s:s, s:i}", "cidr", buf,
							  "hostSubnetLength",
							  (int)c->networks[i].host_subnet_length)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < c->nvip_networks && i < CLUSTER_MAX_NETWORKS; i++) {
		cidr_format(&c->vip_networks[i], buf);
		if (json_array_append_new(vips, json_string(buf)) < 0)
			goto fail;
	}
	cidr_format(&c->service_network, buf);
	if (json_object_set_new(obj, "clusterNetworks", nets) < 0) {
		nets = NULL;
		goto fail;
	}
	nets = NULL;
	if (json_object_set_new(obj, "serviceNetwork", json_string(buf)) < 0 ||
	    json_object_set_new(obj, "mode", json_string(cluster_mode_name(c->mode))) < 0 ||
	    json_object_set_new(obj, "vxlanPort", json_integer(c->vxlan_port)) < 0 ||
	    json_object_set_new(obj, "mtu", json_integer(c->mtu)) < 0)
		goto fail;
	if (c->nvip_networks) {
		if (json_object_set_new(obj, "vipNetworks", vips) < 0) {
			vips = NULL;
			goto fail;
		}
		vips = NULL;
	}
	json_decref(vips);
	return obj;
fail:
	json_decref(obj);
	json_decref(nets);
	json_decref(vips);
	return NULL;
}
