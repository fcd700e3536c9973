/*
 * tracer.c — this node's answers to TraceRequests (tracer.h).
 *
 *   tracer_offer (a watch thread, agent.lock)   parse the spec, copy the
 *                                               object, queue it
 *   worker (its own thread, one at a time)      wait for ready, trace_run,
 *                                               the status, PUT NAME/status
 *
 * Invariants
 *  1. The queue holds each request's name once.
 *  2. Only the worker runs a trace: one at a time on this datapath.
 */
#include "agent/tracer.h"

#include "agent/agent.h"
#include "agent/netlink.h"
#include "agent/policy.h"
#include "agent/trace.h"
#include "model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct request {
	json_t *obj;			/* the TraceRequest as offered (owned) */
	char name[254];
	struct trace_input in;
	int parsed;			/* trace_input_parse's answer */
	char err[256];			/* ... its words when it refused */
};

struct tracer {
	struct agent *a;
	pthread_t thread;
	bool started;
	struct httpc *http;
	pthread_mutex_t lock;		/* the queue, stop */
	pthread_cond_t wake;
	struct request q[TRACER_QUEUE_MAX];
	size_t head, n;
	bool stop;
};

static bool answered(struct jval obj)
{
	struct jval st = jval_get(obj, "status");

	return jval_ok(jval_get(st, "action")) || jval_ok(jval_get(st, "error"));
}

static bool queued(const struct tracer *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->q[(t->head + i) % TRACER_QUEUE_MAX].name, name))
			return true;
	return false;
}

void tracer_offer(struct tracer *t, struct jval obj)
{
	const char *name = obj_view_name(obj);
	struct request *r;

	if (!t || !name || answered(obj))
		return;
	pthread_mutex_lock(&t->lock);
	if (queued(t, name)) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (t->n == TRACER_QUEUE_MAX) {
		pthread_mutex_unlock(&t->lock);
		LOG_WARN("tracerequest %s: %d requests wait already; not answered", name, TRACER_QUEUE_MAX);
		return;
	}
	r = &t->q[(t->head + t->n) % TRACER_QUEUE_MAX];
	memset(r, 0, sizeof(*r));
	r->obj = jval_to_json(obj);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->parsed = trace_input_parse(jval_get(obj, "spec"), &r->in, r->err, sizeof(r->err));
	if (r->obj) {
		t->n++;
		pthread_cond_signal(&t->wake);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Wait until the node is ready, at most TRACER_READY_WAIT_S: is it? */
static bool ready(struct tracer *t)
{
	for (int i = 0; i < TRACER_READY_WAIT_S * 10 && !atomic_load(&t->a->stopping); i++) {
		if (atomic_load(&t->a->ready))
			return true;
		usleep(100 * 1000);
	}
	return atomic_load(&t->a->ready);
}

/* Names the node knows for what the programs numbered: the policies of
 * the rules that allowed each side, the pod delivered to. */
static void name_things(struct agent *a, json_t *st, const struct trace_result *res)
{
	json_t *steps = json_object_get(st, "steps"), *s;
	char buf[512];
	size_t i;

	json_array_foreach(steps, i, s) {
		const char *what = json_string_value(json_object_get(s, "step"));

		if (!what || strcmp(what, "NetworkPolicy") != 0)
			continue;
		if (res->run.steps.rule_out) {
			policy_rule_name(a->policy, res->run.steps.rule_out, buf, sizeof(buf));
			if (buf[0])
				json_object_set_new(s, "egressPolicies", json_string(buf));
		}
		if (res->run.steps.rule_in) {
			policy_rule_name(a->policy, res->run.steps.rule_in, buf, sizeof(buf));
			if (buf[0])
				json_object_set_new(s, "ingressPolicies", json_string(buf));
		}
	}
	if (res->delivered_to) {
		policy_describe_addr(a->policy, res->delivered_to, buf, sizeof(buf));
		if (strchr(buf, '/'))
			json_object_set_new(st, "deliveredToPod", json_string(buf));
	}
}

/* trace_node.route: the kernel's, in the agent's namespace (the node's). */
static int route_of(void *arg, in_addr_t dst, struct nl_route *out)
{
	return nl_route_get(arg, dst, out);
}

/* net.ipv4.ip_forward of the agent's namespace: does the node forward? */
static bool forwarding(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "re");
	int c = f ? fgetc(f) : EOF;

	if (f)
		fclose(f);
	return c == '1';
}

/* The answer to r (a new object; NULL on ENOMEM). */
static json_t *answer(struct tracer *t, struct request *r)
{
	struct agent *a = t->a;
	struct trace_node node = {
		.vxlan_ifindex = (uint32_t)a->vxlan_ifindex, .underlay_ifindex = (uint32_t)a->underlay_ifindex,
		.svc_ifindex = (uint32_t)a->svc_ifindex, .node_ip = a->node_ip, .forwarding = forwarding(),
		.route = route_of,
	};
	struct trace_result res;
	char err[256] = "";
	struct nl *nl;
	json_t *st;
	int rc;

	if (r->parsed < 0)
		return json_pack("{s:s}", "error", r->err);
	if (!ready(t))
		return json_pack("{s:s}", "error", "the node's data plane is not ready yet");
	nl = nl_open(-1);
	if (!nl)
		return json_pack("{s:s}", "error", "cannot ask the node's routes (netlink)");
	node.route_arg = nl;
	rc = trace_run(a->dp, &node, &r->in, &res, err, sizeof(err));
	nl_close(nl);
	if (rc < 0)
		return json_pack("{s:s}", "error", err);
	st = trace_result_json(&r->in, &res);
	if (st) {
		json_object_set_new(st, "node", json_string(a->o.node));
		name_things(a, st, &res);
	}
	return st;
}

static void reply(struct tracer *t, struct request *r, json_t *status)
{
	struct httpc_response resp = { 0 };
	char path[512], err[256];
	char *body;
	int rc;

	json_object_set_new(r->obj, "status", status);
	body = json_dumps(r->obj, JSON_COMPACT);
	if (!body) {
		LOG_WARN("tracerequest %s: out of memory; not answered", r->name);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/status", TRACEREQUEST_PATH, r->name);
	rc = agent_write(t->a, t->http, "PUT", path, body, strlen(body), &resp, err, sizeof(err));
	if (rc < 0)
		LOG_WARN("tracerequest %s: writing the answer: %s", r->name, err);
	else if (resp.status == 404 || resp.status == 409)
		LOG_INFO("tracerequest %s: changed or deleted before its answer (HTTP %ld)", r->name, resp.status);
	else if (resp.status != 200)
		LOG_WARN("tracerequest %s: writing the answer: HTTP %ld: %.200s", r->name, resp.status,
			 resp.body ? resp.body : "");
	else
		LOG_INFO("tracerequest %s: answered (%s)", r->name,
			 json_string_value(json_object_get(status, "action")) ?: "error");
	httpc_response_free(&resp);
	free(body);
}

static void *worker(void *arg)
{
	struct tracer *t = arg;

	for (;;) {
		struct request r;

		pthread_mutex_lock(&t->lock);
		while (!t->n && !t->stop)
			pthread_cond_wait(&t->wake, &t->lock);
		if (t->stop) {
			pthread_mutex_unlock(&t->lock);
			return NULL;
		}
		r = t->q[t->head];	/* ours now */
		t->head = (t->head + 1) % TRACER_QUEUE_MAX;
		t->n--;
		pthread_mutex_unlock(&t->lock);
		reply(t, &r, answer(t, &r));
		json_decref(r.obj);
	}
}

struct tracer *tracer_start(struct agent *a)
{
	struct tracer *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return NULL;
	t->a = a;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	if (!(t->http = agent_http(a))) {
		tracer_stop(t);
		errno = EINVAL;
		return NULL;
	}
	if ((rc = pthread_create(&t->thread, NULL, worker, t)) != 0) {
		tracer_stop(t);
		errno = rc;
		return NULL;
	}
	t->started = true;
	return t;
}

void tracer_stop(struct tracer *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	if (t->http)
		httpc_cancel(t->http);
	if (t->started)
		pthread_join(t->thread, NULL);
	for (size_t i = 0; i < t->n; i++)
		json_decref(t->q[(t->head + i) % TRACER_QUEUE_MAX].obj);
	httpc_destroy(t->http);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
