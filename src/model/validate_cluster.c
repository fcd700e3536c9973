/*
 * validate_cluster.c — the OpenShift SDN network kinds: ClusterNetwork (the
 * cluster's address plan), HostSubnet (a node's pod subnet) and
 * NetNamespace (a namespace's VNID).
 *
 * ClusterNetwork relations checked here: cluster networks are disjoint;
 * each one's hostSubnetLength leaves room for at least one subnet; the
 * service network and the VIP pools overlap none of them nor each other.
 */
#include "model/lb.h"
#include "model/model.h"
#include "model/validate.h"

#include <stdio.h>
#include <string.h>

#define VNID_MAX 16777215

static const char *const modes[] = { "flat", "multitenant", "networkpolicy", NULL };

struct named_cidr {
	struct cidr c;
	char name[48];			/* "clusterNetworks[3].cidr" */
};

/* Reports at field if c overlaps one of seen[0..n). */
static void check_disjoint(struct vctx *v, const char *field, const struct cidr *c,
			   const struct named_cidr *seen, size_t n)
{
	char a[CIDR_STRLEN], b[CIDR_STRLEN];

	for (size_t i = 0; i < n; i++) {
		if (cidr_overlaps(c, &seen[i].c)) {
			cidr_format(c, a);
			cidr_format(&seen[i].c, b);
			verror(v, field, "%s overlaps %s %s", a, seen[i].name, b);
			return;
		}
	}
}

static bool cluster_label(const char *s)
{
	return model_dns1123_label(s) && strlen(s) <= LB_CLUSTER_NAME_MAX;
}

/* The load balancer's settings (docs/lb.md, "Configuration"); its VIP
 * pools overlap no other network (nets[0..n) holds them all). */
static void check_load_balancer(struct vctx *v, const json_t *obj, struct named_cidr *nets, size_t n)
{
	static const char *const sizes[] = { "LARGE", "MEDIUM", "SMALL", "DEDICATED", NULL };
	static const char *const pass_sizes[] = { "LARGE", "MEDIUM", "SMALL", NULL };
	static const char *const types[] = { "ClusterIP", "NodePort", NULL };
	const json_t *lb = vget_object(v, obj, "loadBalancer", false), *list, *item, *sel, *val;
	const char *key;
	size_t mark, i;
	struct cidr c;

	if (!lb)
		return;
	mark = vpush(v, "loadBalancer");
	vget_name(v, lb, "clusterName", false, cluster_label, "a DNS-1123 label of at most 32 bytes");
	vget_enum(v, lb, "shardSize", false, sizes);
	vget_enum(v, lb, "passthroughShardSize", false, pass_sizes);
	vget_enum(v, lb, "serviceType", false, types);
	sel = vget_object(v, lb, "nodeSelector", false);
	json_object_foreach((json_t *)sel, key, val)
		if (!model_label_key(key) || !json_is_string(val) || !model_label_value(json_string_value(val)))
			verror(v, "nodeSelector", "'%.64s' is not a valid label key with a string value", key);
	list = vget_list(v, lb, "vipNetworks", false);
	if (list && json_array_size(list) > CLUSTER_MAX_NETWORKS) {
		verror(v, "vipNetworks", "too many networks (at most %d)", CLUSTER_MAX_NETWORKS);
		list = NULL;
	}
	vpop(v, mark);
	json_array_foreach(list, i, item) {
		char field[48];

		snprintf(field, sizeof(field), "loadBalancer.vipNetworks[%zu]", i);
		if (!vval_cidr(v, field, item, true, &c))
			continue;
		check_disjoint(v, field, &c, nets, n);
		nets[n].c = c;
		snprintf(nets[n].name, sizeof(nets[n].name), "%s", field);
		n++;
	}
}

void validate_cluster_fields(struct vctx *v, const json_t *obj, bool require)
{
	struct named_cidr nets[3 * CLUSTER_MAX_NETWORKS + 1];
	size_t nnets = 0, ncluster, i;
	const json_t *list, *item;
	struct cidr c;
	json_int_t n;

	list = vget_list(v, obj, "clusterNetworks", require);
	if (list && json_array_size(list) == 0)
		verror(v, "clusterNetworks", "must not be empty");
	if (list && json_array_size(list) > CLUSTER_MAX_NETWORKS) {
		verror(v, "clusterNetworks", "too many networks (at most %d)", CLUSTER_MAX_NETWORKS);
		list = NULL;
	}
	json_array_foreach(list, i, item) {
		size_t mark = vpush(v, "clusterNetworks");
		bool have_cidr;
		char field[48];

		vpush_index(v, i);
		if (!json_is_object(item)) {
			verror(v, NULL, "must be an object");
			vpop(v, mark);
			continue;
		}
		have_cidr = vget_cidr(v, item, "cidr", true, &c);
		if (vget_int(v, item, "hostSubnetLength", true, &n)) {
			if (n < 2) {
				verror(v, "hostSubnetLength", "%" JSON_INTEGER_FORMAT
				       " is too small (at least 2)", n);
			} else if (have_cidr && n > 32 - c.len) {
				char s[CIDR_STRLEN];

				cidr_format(&c, s);
				verror(v, "hostSubnetLength", "%" JSON_INTEGER_FORMAT
				       " does not fit in %s (at most %d)", n, s, 32 - c.len);
			}
		}
		vpop(v, mark);
		if (have_cidr) {
			snprintf(field, sizeof(field), "clusterNetworks[%zu].cidr", i);
			check_disjoint(v, field, &c, nets, nnets);
			nets[nnets].c = c;
			snprintf(nets[nnets].name, sizeof(nets[nnets].name), "%s", field);
			nnets++;
		}
	}
	ncluster = nnets;

	if (vget_cidr(v, obj, "serviceNetwork", require, &c)) {
		check_disjoint(v, "serviceNetwork", &c, nets, ncluster);
		nets[nnets].c = c;
		snprintf(nets[nnets].name, sizeof(nets[nnets].name), "serviceNetwork");
		nnets++;
	}
	vget_enum(v, obj, "mode", false, modes);
	vget_port(v, obj, "vxlanPort", false, NULL);
	if (vget_int(v, obj, "mtu", false, &n) && n != 0 && (n < 576 || n > 65535))
		verror(v, "mtu", "%" JSON_INTEGER_FORMAT " is not 0 (detect) or 576-65535", n);

	list = vget_list(v, obj, "vipNetworks", false);
	if (list && json_array_size(list) > CLUSTER_MAX_NETWORKS) {
		verror(v, "vipNetworks", "too many networks (at most %d)", CLUSTER_MAX_NETWORKS);
		list = NULL;
	}
	json_array_foreach(list, i, item) {
		char field[48];

		snprintf(field, sizeof(field), "vipNetworks[%zu]", i);
		if (!vval_cidr(v, field, item, true, &c))
			continue;
		check_disjoint(v, field, &c, nets, nnets);
		nets[nnets].c = c;
		snprintf(nets[nnets].name, sizeof(nets[nnets].name), "%s", field);
		nnets++;
	}
	check_load_balancer(v, obj, nets, nnets);
}

void validate_clusternetwork(struct vctx *v, const json_t *obj)
{
	const char *name = obj_name(obj);

	if (name && *name && strcmp(name, "default") != 0)
		verror(v, "metadata.name", "a ClusterNetwork must be named 'default'");
	validate_cluster_fields(v, obj, true);
}

void validate_hostsubnet(struct vctx *v, const json_t *obj)
{
	json_int_t id;

	vget_name(v, obj, "host", true, model_dns1123_subdomain, "a valid DNS-1123 subdomain");
	vget_ip4(v, obj, "hostIP", true, NULL);
	vget_cidr(v, obj, "subnet", true, NULL);
	if (vget_int(v, obj, "nodeID", false, &id) && id < 1)
		verror(v, "nodeID", "%" JSON_INTEGER_FORMAT " must be at least 1", id);
}

void validate_netnamespace(struct vctx *v, const json_t *obj)
{
	const char *netname = vget_string(v, obj, "netname", true);
	const char *name = obj_name(obj);
	char q1[VQUOTE_MAX], q2[VQUOTE_MAX];

	if (netname && name && strcmp(netname, name) != 0)
		verror(v, "netname", "%s does not match metadata.name %s", vquote(netname, q1),
		       vquote(name, q2));
	vget_int_range(v, obj, "netid", true, 0, VNID_MAX, "a valid VNID", NULL);
}
