/*
 * plan.h — from the layout HAProxy runs to the next one: runtime API
 * commands, or a reload.
 *
 * The rule is one comparison: the configuration's structure (render.h:
 * haproxy.cfg without server addresses, weights and states) of the old and
 * the new layout.  Different structure: reload (a listener VIP:port added
 * or removed, a backend added or removed, a pool added to a backend, TLS
 * settings or a CA changed, ...); the reason names the first line that
 * differs.  Slot counts are not structure: a pool that outgrows its slots
 * gets the new ones with "add server" (they are in the new layout's
 * files too); only a pool grown past LB_SLOTS_MAX slots, or one with
 * fewer slots than run, reloads.  Same structure: everything that differs can be changed at run
 * time, in this order:
 *
 *   1. certificates new to a listener: new ssl cert, set ssl cert,
 *      commit ssl cert, add ssl crt-list; a changed certificate: set +
 *      commit (rotation, no reload)
 *   2. server slots: set server addr/port, set weight, set server state
 *      ready (a slot put in use) or maint (a slot freed); a slot added:
 *      add server (its server line's arguments), enable health, and
 *      enable server when it is in use
 *   3. maps whose text changed (routes, redirects): replaced whole in one
 *      transaction (prepare map, add map @version, commit map), so their
 *      order — longest prefix first — holds and no request sees half of it
 *   4. certificates gone from a listener: del ssl crt-list, del ssl cert
 *
 * so a route never points at a server or certificate that is not there
 * yet.  A certificate larger than LB_RUNTIME_PEM_MAX (more than the
 * runtime API's buffer takes in one payload) is applied by a reload.
 *
 * Ownership: the plan owns its ops; lb_plan_clear() frees them (payloads
 * holding keys are wiped) and accepts a zeroed plan.
 */
#ifndef WEFT_LB_PLAN_H
#define WEFT_LB_PLAN_H

#include "lb/layout.h"

#include <stdbool.h>
#include <stddef.h>

#define LB_RUNTIME_PEM_MAX (12 * 1024)

enum lb_op_kind {
	LB_OP_COMMAND,		/* one runtime API command */
	LB_OP_MAP_REPLACE,	/* prepare / add / commit of a whole map */
};

struct lb_op {
	enum lb_op_kind kind;
	char *command;		/* the command line; MAP_REPLACE: the map's path */
	char *payload;		/* sent after "<<" (NULL: none); MAP_REPLACE: the map's text */
	const char *expect;	/* COMMAND: '|'-separated substrings one of which the
				 * answer holds; NULL: the answer is empty */
	bool secret;		/* payload holds a key: wiped, never logged */
};

struct lb_plan {
	bool reload;
	char reason[512];	/* why a reload */
	struct lb_op *ops;
	size_t n_ops;
	size_t servers, maps, certs;	/* how many of each changed */
	size_t added;			/* slots added ("add server") */
};

/* Plan from old (NULL: nothing runs yet: reload) to new, for state
 * directory dir.  0, or -ENOMEM (plan cleared). */
int lb_plan_make(const struct lb_layout *old, const struct lb_layout *new, const char *dir, struct lb_plan *plan)
	__attribute__((warn_unused_result));
void lb_plan_clear(struct lb_plan *plan);

/* Does answer satisfy expect (see struct lb_op)? */
bool lb_plan_answer_ok(const char *expect, const char *answer);

#endif
