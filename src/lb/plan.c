/*
 * plan.c — runtime commands or a reload between two layouts (plan.h has
 * the rule and the order of the commands).
 *
 * Same structure means the two layouts have the same frontends and
 * backends, in the same (sorted) order, with the same pools (slot counts
 * aside: the structure has one line per pool): the walk below pairs them
 * by index.  A pool's slots past the old count are "add server"s; a pool
 * with fewer slots than run, or grown past LB_SLOTS_MAX, reloads.  Certificates are paired by
 * file within a frontend (both sorted by file).
 */
#include "lb/plan.h"

#include "lb/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lb_plan_clear(struct lb_plan *plan)
{
	for (size_t i = 0; i < plan->n_ops; i++) {
		struct lb_op *op = &plan->ops[i];

		if (op->secret && op->payload)
			explicit_bzero(op->payload, strlen(op->payload));
		free(op->payload);
		free(op->command);
	}
	free(plan->ops);
	memset(plan, 0, sizeof(*plan));
}

bool lb_plan_answer_ok(const char *expect, const char *answer)
{
	char want[128];

	if (!expect) {
		for (; *answer; answer++)
			if (*answer != '\n' && *answer != ' ' && *answer != '\r')
				return false;
		return true;
	}
	for (const char *e = expect; *e;) {
		size_t n = strcspn(e, "|");

		snprintf(want, sizeof(want), "%.*s", (int)n, e);
		if (strstr(answer, want))
			return true;
		e += n + (e[n] == '|');
	}
	return false;
}

/* append an op; takes command and payload (freed on failure) */
static int add_op(struct lb_plan *plan, enum lb_op_kind kind, char *command, char *payload, const char *expect,
		  bool secret)
{
	struct lb_op *ops;

	if (!command) {
		free(payload);
		return -ENOMEM;
	}
	if ((plan->n_ops & (plan->n_ops + 1)) == 0 || plan->n_ops == 0) {
		ops = realloc(plan->ops, (plan->n_ops * 2 + 2) * sizeof(*ops));
		if (!ops) {
			free(command);
			free(payload);
			return -ENOMEM;
		}
		plan->ops = ops;
	}
	plan->ops[plan->n_ops++] = (struct lb_op){ kind, command, payload, expect, secret };
	return 0;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static int cmd(struct lb_plan *plan, const char *expect, char *command)
{
	return add_op(plan, LB_OP_COMMAND, command, NULL, expect, false);
}

/* the first line where two texts differ, into reason */
static void first_difference(const char *a, const char *b, char *reason, size_t len)
{
	size_t line = 1;

	while (*a && *b) {
		size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");

		if (na != nb || memcmp(a, b, na) != 0) {
			snprintf(reason, len, "configuration line %zu: \"%.*s\" (was \"%.*s\")", line,
				 (int)(nb > 200 ? 200 : nb), b, (int)(na > 200 ? 200 : na), a);
			return;
		}
		a += na + (a[na] == '\n');
		b += nb + (b[nb] == '\n');
		line++;
	}
	if (*a || *b) {
		const char *rest = *b ? b : a;
		size_t n;

		while (*rest == '\n')	/* the blank line before a section */
			rest++;
		n = strcspn(rest, "\n");

		snprintf(reason, len, "configuration line %zu: \"%.*s\" %s", line, (int)(n > 200 ? 200 : n), rest,
			 *b ? "added" : "removed");
	}
}

static const struct lb_sni *find_sni(const struct lb_frontend *fe, const char *file)
{
	size_t lo = 0, hi = fe->n_snis;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(fe->snis[mid].file, file);

		if (c == 0)
			return &fe->snis[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool big_certificates(const struct lb_layout *l)
{
	for (size_t f = 0; f < l->n_frontends; f++)
		for (size_t i = 0; i < l->frontends[f].n_snis; i++)
			if (strlen(l->frontends[f].snis[i].pem) > LB_RUNTIME_PEM_MAX)
				return true;
	return false;
}

static int set_cert(struct lb_plan *plan, const char *path, const char *pem)
{
	char *payload = strdup(pem);
	int r;

	if (!payload)
		return -ENOMEM;
	if ((r = add_op(plan, LB_OP_COMMAND, fmt("set ssl cert %s", path), payload, "Transaction", true)))
		return r;
	return cmd(plan, "Success!", fmt("commit ssl cert %s", path));
}

/* 1: certificates added or changed on fe */
static int plan_cert_adds(struct lb_plan *plan, const struct lb_frontend *o, const struct lb_frontend *n,
			  const char *dir)
{
	char path[LB_PATH_BUF], list[LB_PATH_BUF];
	int r;

	lb_render_path(list, dir, n->name, "crtlist");
	for (size_t i = 0; i < n->n_snis; i++) {
		const struct lb_sni *s = &n->snis[i], *was = find_sni(o, s->file);

		if (was && strcmp(was->pem, s->pem) == 0)
			continue;
		lb_render_path(path, dir, NULL, s->file);
		plan->certs++;
		if (was) {
			if ((r = set_cert(plan, path, s->pem)))
				return r;
			continue;
		}
		if ((r = cmd(plan, "New empty certificate store", fmt("new ssl cert %s", path))) ||
		    (r = set_cert(plan, path, s->pem)) ||
		    (r = add_op(plan, LB_OP_COMMAND, fmt("add ssl crt-list %s", list), fmt("%s %s", path, s->host),
				"Success!", false)))
			return r;
	}
	return 0;
}

/* 4: certificates gone from fe */
static int plan_cert_removals(struct lb_plan *plan, const struct lb_frontend *o, const struct lb_frontend *n,
			      const char *dir)
{
	char path[LB_PATH_BUF], list[LB_PATH_BUF];
	int r;

	lb_render_path(list, dir, o->name, "crtlist");
	for (size_t i = 0; i < o->n_snis; i++) {
		if (find_sni(n, o->snis[i].file))
			continue;
		lb_render_path(path, dir, NULL, o->snis[i].file);
		plan->certs++;
		if ((r = cmd(plan, "deleted", fmt("del ssl crt-list %s %s", list, path))) ||
		    (r = cmd(plan, "deleted", fmt("del ssl cert %s", path))))
			return r;
	}
	return 0;
}

static void ip_text(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

/* 2: one slot */
static int plan_slot(struct lb_plan *plan, const char *backend, const char *pool, size_t n,
		     const struct lb_slot *o, const struct lb_slot *s)
{
	bool moved = s->used && (!o->used || o->ip != s->ip || o->port != s->port);
	char ip[16];
	int r;

	if (!moved && s->used == o->used && s->weight == o->weight)
		return 0;
	plan->servers++;
	if (!s->used)
		return cmd(plan, NULL, fmt("set server %s/%s:%zu state maint", backend, pool, n + 1));
	ip_text(s->ip, ip);
	if (moved && (r = cmd(plan, "changed|no need", fmt("set server %s/%s:%zu addr %s port %u", backend, pool,
							     n + 1, ip, s->port))))
		return r;
	if ((moved || s->weight != o->weight) &&
	    (r = cmd(plan, NULL, fmt("set weight %s/%s:%zu %u", backend, pool, n + 1, s->weight))))
		return r;
	if (!o->used && (r = cmd(plan, NULL, fmt("set server %s/%s:%zu state ready", backend, pool, n + 1))))
		return r;
	return 0;
}

/* 2: a slot added to a running backend (HAProxy 2.6 "add server"): made
 * with the arguments of its server line, so HAProxy and the file agree.
 * A dynamic server starts in maintenance with its check off: "enable
 * health" (every slot has "check"), then "enable server" for a slot in
 * use; a free slot stays in maintenance like a "disabled" line. */
static int plan_add(struct lb_plan *plan, const char *backend, const struct lb_slot_pool *sp, size_t n,
		    const char *dir)
{
	char *args = NULL;
	int r;

	if ((r = lb_render_server_args(sp, n, dir, &args)))
		return r;
	plan->added++;
	plan->servers += sp->slots[n].used;
	r = cmd(plan, "New server registered", fmt("add server %s/%s:%zu %s", backend, sp->pool, n + 1, args));
	free(args);
	if (r || (r = cmd(plan, NULL, fmt("enable health %s/%s:%zu", backend, sp->pool, n + 1))))
		return r;
	if (sp->slots[n].used)
		return cmd(plan, NULL, fmt("enable server %s/%s:%zu", backend, sp->pool, n + 1));
	return 0;
}

static int plan_servers(struct lb_plan *plan, const struct lb_layout *old, const struct lb_layout *new,
			const char *dir)
{
	int r;

	for (size_t b = 0; b < new->n_backends; b++) {
		const struct lb_backend *ob = &old->backends[b], *nb = &new->backends[b];

		for (size_t p = 0; p < nb->n_pools; p++) {
			const struct lb_slot_pool *op = &ob->pools[p], *np = &nb->pools[p];

			for (size_t s = 0; s < np->n_slots; s++) {
				if (s >= op->n_slots)
					r = plan_add(plan, nb->name, np, s, dir);
				else
					r = plan_slot(plan, nb->name, np->pool, s, &op->slots[s], &np->slots[s]);
				if (r)
					return r;
			}
		}
	}
	return 0;
}

/* slot counts the runtime API cannot reach: fewer slots than run (a
 * dynamic server is never deleted: a pool keeps its slots until a
 * reload), or more than LB_SLOTS_MAX; the reason into plan */
static bool slots_need_reload(const struct lb_layout *old, const struct lb_layout *new, struct lb_plan *plan)
{
	for (size_t b = 0; b < new->n_backends; b++)
		for (size_t p = 0; p < new->backends[b].n_pools; p++) {
			const struct lb_slot_pool *op = &old->backends[b].pools[p], *np = &new->backends[b].pools[p];

			if (np->n_slots < op->n_slots) {
				snprintf(plan->reason, sizeof(plan->reason), "backend %.200s: pool %.200s: %zu slots, %zu run",
					 new->backends[b].name, np->pool, np->n_slots, op->n_slots);
				return true;
			}
			if (np->n_slots > op->n_slots && np->n_slots > LB_SLOTS_MAX) {
				snprintf(plan->reason, sizeof(plan->reason),
					 "backend %.200s: pool %.200s needs %zu slots, more than the %d added at run time",
					 new->backends[b].name, np->pool, np->n_slots, LB_SLOTS_MAX);
				return true;
			}
		}
	return false;
}

/* 3: a map replaced when its text changed */
static int plan_map(struct lb_plan *plan, const struct lb_frontend *o, const struct lb_frontend *n, const char *dir,
		    const char *what, int (*text)(const struct lb_frontend *, char **))
{
	char path[LB_PATH_BUF];
	char *a = NULL, *b = NULL;
	int r;

	if ((r = text(o, &a)) || (r = text(n, &b)))
		goto out;
	if (strcmp(a, b) == 0)
		goto out;
	lb_render_path(path, dir, n->name, what);
	plan->maps++;
	r = add_op(plan, LB_OP_MAP_REPLACE, strdup(path), b, NULL, false);
	b = NULL;
out:
	free(a);
	free(b);
	return r;
}

static int plan_runtime(struct lb_plan *plan, const struct lb_layout *old, const struct lb_layout *new,
			const char *dir)
{
	int r = 0;

	for (size_t f = 0; f < new->n_frontends && !r; f++)
		r = plan_cert_adds(plan, &old->frontends[f], &new->frontends[f], dir);
	if (!r)
		r = plan_servers(plan, old, new, dir);
	for (size_t f = 0; f < new->n_frontends && !r; f++) {
		const struct lb_frontend *o = &old->frontends[f], *n = &new->frontends[f];

		r = plan_map(plan, o, n, dir, "routes", lb_render_routes);
		if (!r && n->kind == LB_LISTEN_HTTP)
			r = plan_map(plan, o, n, dir, "redirects", lb_render_redirects);
	}
	for (size_t f = 0; f < new->n_frontends && !r; f++)
		r = plan_cert_removals(plan, &old->frontends[f], &new->frontends[f], dir);
	return r;
}

int lb_plan_make(const struct lb_layout *old, const struct lb_layout *new, const char *dir, struct lb_plan *plan)
{
	char *a = NULL, *b = NULL;
	int r = 0;

	memset(plan, 0, sizeof(*plan));
	if (!old) {
		plan->reload = true;
		snprintf(plan->reason, sizeof(plan->reason), "nothing runs yet");
		return 0;
	}
	if ((r = lb_render_cfg(old, dir, true, &a)) || (r = lb_render_cfg(new, dir, true, &b)))
		goto out;
	if (strcmp(a, b) != 0) {
		plan->reload = true;
		first_difference(a, b, plan->reason, sizeof(plan->reason));
		goto out;
	}
	if (slots_need_reload(old, new, plan)) {
		plan->reload = true;
		goto out;
	}
	if ((r = plan_runtime(plan, old, new, dir)))
		goto out;
	if (plan->certs && big_certificates(new)) {
		lb_plan_clear(plan);
		plan->reload = true;
		snprintf(plan->reason, sizeof(plan->reason),
			 "a certificate is larger than the runtime API takes (%d bytes)", LB_RUNTIME_PEM_MAX);
	}
out:
	free(a);
	free(b);
	if (r)
		lb_plan_clear(plan);
	return r;
}
