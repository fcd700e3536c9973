/*
 * policy_log.c — reads weft_policy_log (policy_log.h).  One thread polls
 * the ring buffer; each record becomes an entry with names:
 *
 *	{"time": RFC 3339, "pod": "x/a" (the pod here whose rules logged it,
 *	 or both ends when both are here), "source": "x/a" | address,
 *	 "destination": "y/b" | address, "port": "80/TCP",
 *	 "verdict": "allow" | "deny", "direction": "ingress" | "egress"
 *	 (deny: the side whose rules denied), "policies": ["ns/name", ...]
 *	 (allow: those that allowed, each side), "reason": drop reason}
 *
 * kept in a ring of POLICY_LOG_KEEP and written to the agent's log.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <jansson.h>

#include "agent/agent.h"
#include "agent/policy_log.h"

struct policy_log {
	struct agent *a;
	struct ring_buffer *rb;
	void (*notify)(struct agent *a);
	pthread_t thread;
	pthread_mutex_t lock;
	json_t *kept[POLICY_LOG_KEEP];	/* a ring, oldest at seq % KEEP */
	uint64_t seq;
	int64_t mono_to_real_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
	volatile int stop;
};

static const char *proto_name(uint8_t proto, char buf[8])
{
	switch (proto) {
	case IPPROTO_TCP: return "TCP";
	case IPPROTO_UDP: return "UDP";
	case 132: return "SCTP";
	case IPPROTO_ICMP: return "ICMP";
	default:
		snprintf(buf, 8, "%u", proto);
		return buf;
	}
}

static json_t *entry_of(struct policy_log *l, const struct weft_policy_event *e)
{
	struct policy *p = l->a->policy;
	char src[300], dst[300], port[24], base[32], when[48], pb[8], name[600];
	int64_t real = (int64_t)e->time_ns + l->mono_to_real_ns;
	time_t secs = (time_t)(real / 1000000000);
	struct tm tm;
	json_t *o, *pols = json_array();

	policy_describe_addr(p, e->saddr, src, sizeof(src));
	policy_describe_addr(p, e->daddr, dst, sizeof(dst));
	if (e->proto == IPPROTO_TCP || e->proto == IPPROTO_UDP || e->proto == 132)
		snprintf(port, sizeof(port), "%u/%s", ntohs(e->dport), proto_name(e->proto, pb));
	else
		snprintf(port, sizeof(port), "%s", proto_name(e->proto, pb));
	gmtime_r(&secs, &tm);
	if (strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		base[0] = 0;
	snprintf(when, sizeof(when), "%s.%03dZ", base, (int)((real / 1000000) % 1000));
	if (e->rule_out) {
		policy_rule_name(p, e->rule_out, name, sizeof(name));
		if (*name)
			json_array_append_new(pols, json_string(name));
	}
	if (e->rule_in && e->rule_in != e->rule_out) {
		policy_rule_name(p, e->rule_in, name, sizeof(name));
		if (*name)
			json_array_append_new(pols, json_string(name));
	}
	o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "time", when, "source", src,
		      "destination", dst, "port", port, "verdict", e->allowed ? "allow" : "deny",
		      "direction", e->dir == WEFT_POLICY_INGRESS ? "ingress" : "egress",
		      "policies", pols);
	if (o && !e->allowed && e->reason < WEFT_DROP_MAX)
		json_object_set_new(o, "reason", json_string(datapath_drop_names[e->reason]));
	return o;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct policy_log *l = ctx;
	json_t *o;
	char *line;

	if (size < sizeof(struct weft_policy_event))
		return 0;
	o = entry_of(l, data);
	if (!o)
		return 0;
	line = json_dumps(o, JSON_COMPACT);
	if (line) {
		LOG_INFO("policy-log %s", line);
		free(line);
	}
	pthread_mutex_lock(&l->lock);
	json_decref(l->kept[l->seq % POLICY_LOG_KEEP]);
	l->kept[l->seq % POLICY_LOG_KEEP] = o;
	l->seq++;
	pthread_mutex_unlock(&l->lock);
	l->notify(l->a);
	return 0;
}

static void *reader(void *arg)
{
	struct policy_log *l = arg;

	while (!l->stop) {
		int n = ring_buffer__poll(l->rb, 200);

		if (n < 0 && n != -EINTR) {
			LOG_WARN("policy log: reading the ring buffer: %s; stopped", strerror(-n));
			break;
		}
	}
	return NULL;
}

struct policy_log *policy_log_start(struct agent *a, void (*notify)(struct agent *a))
{
	struct policy_log *l = calloc(1, sizeof(*l));
	struct timespec mono, real;
	int err;

	if (!l)
		return NULL;
	l->a = a;
	l->notify = notify;
	pthread_mutex_init(&l->lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	l->mono_to_real_ns = ((int64_t)real.tv_sec - mono.tv_sec) * 1000000000ll +
			     ((int64_t)real.tv_nsec - mono.tv_nsec);
	l->rb = ring_buffer__new(datapath_policy_log_fd(a->dp), on_record, l, NULL);
	if (!l->rb)
		goto fail;
	err = pthread_create(&l->thread, NULL, reader, l);
	if (err) {
		errno = err;
		goto fail;
	}
	return l;
fail:
	err = errno;
	ring_buffer__free(l->rb);
	pthread_mutex_destroy(&l->lock);
	free(l);
	errno = err;
	return NULL;
}

void policy_log_stop(struct policy_log *l)
{
	if (!l)
		return;
	l->stop = 1;
	pthread_join(l->thread, NULL);
	ring_buffer__free(l->rb);
	for (size_t i = 0; i < POLICY_LOG_KEEP; i++)
		json_decref(l->kept[i]);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

char *policy_log_json(struct policy_log *l, uint64_t *seq)
{
	json_t *arr;
	char *s;
	uint64_t first;

	if (!l)
		return NULL;
	arr = json_array();
	pthread_mutex_lock(&l->lock);
	*seq = l->seq;
	first = l->seq > POLICY_LOG_KEEP ? l->seq - POLICY_LOG_KEEP : 0;
	for (uint64_t i = first; i < l->seq; i++)
		json_array_append(arr, l->kept[i % POLICY_LOG_KEEP]);
	pthread_mutex_unlock(&l->lock);
	s = json_array_size(arr) ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	return s;
}
