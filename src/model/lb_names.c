/*
 * lb_names.c — the load-balancer model's configuration, sharding and the
 * names of the shared virtual services (docs/lb.md, "Names" and "Shards").
 *
 * A host's shard is fnv1a32(host) & (shards - 1): FNV-1a over the host's
 * bytes, offset basis 2166136261, prime 16777619, as AKO computes it.  The
 * host alone is the key, so a host keeps its VS whichever object uses it.
 */
#include "model/lb.h"
#include "model/model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int lb_shard_size(const char *name)
{
	static const struct { const char *name; int shards; } sizes[] = {
		{ "LARGE", 8 }, { "MEDIUM", 4 }, { "SMALL", 1 }, { "DEDICATED", 0 },
	};

	for (size_t i = 0; name && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (!strcmp(name, sizes[i].name))
			return sizes[i].shards;
	return -1;
}

void lb_config_from_cluster(const json_t *cn, struct lb_config *cfg)
{
	const json_t *lb = json_object_get(cn, "loadBalancer");
	const char *cluster = obj_str(lb, "clusterName");
	const char *type = obj_str(lb, "serviceType");
	int shards = lb_shard_size(obj_str(lb, "shardSize"));
	int pass = lb_shard_size(obj_str(lb, "passthroughShardSize"));

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->cluster, sizeof(cfg->cluster), "%s",
		 cluster && *cluster && strlen(cluster) <= LB_CLUSTER_NAME_MAX ? cluster : LB_DEFAULT_CLUSTER);
	cfg->shards = shards < 0 ? 8 : (unsigned)shards;
	cfg->passthrough_shards = pass <= 0 ? 1 : (unsigned)pass;
	cfg->nodeport = type && !strcmp(type, "NodePort");
	cfg->node_selector = json_object_get(lb, "nodeSelector");
}

uint32_t lb_fnv1a32(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

unsigned lb_shard(const char *host, unsigned shards)
{
	return shards ? lb_fnv1a32(host) & (shards - 1) : 0;
}

bool lb_object_name(const char *s)
{
	size_t n = s ? strnlen(s, 512) : 0;

	return n > 0 && n <= 511 && model_key_chars(s, n);
}

static int name(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

int lb_name_shared_vs(const struct lb_config *cfg, const char *host, char *buf, size_t len)
{
	if (!cfg->shards)
		return name(buf, len, "%s--%s-L7-dedicated", cfg->cluster, host);
	return name(buf, len, "%s--Shared-L7-%u", cfg->cluster, lb_shard(host, cfg->shards));
}

int lb_name_passthrough_vs(const struct lb_config *cfg, const char *host, char *buf, size_t len)
{
	return name(buf, len, "%s--Shared-Passthrough-%u", cfg->cluster,
		    lb_shard(host, cfg->passthrough_shards));
}
