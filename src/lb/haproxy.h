/*
 * haproxy.h — the HAProxy process the engine drives: started in
 * master-worker mode, changed through the runtime API, reloaded through
 * the master socket.
 *
 *   lb_haproxy_start:  adopt the master named by DIR/haproxy.pid when it is
 *                      one we started (its command line has "-S
 *                      DIR/master.sock") and its master socket answers;
 *                      otherwise spawn
 *                        haproxy -W -S DIR/master.sock -f DIR/haproxy.cfg -p DIR/haproxy.pid
 *                      and wait until its worker answers on DIR/haproxy.sock
 *   lb_haproxy_apply:  one plan op (command, or a map replaced in a
 *                      prepare/add/commit transaction); every answer checked
 *   lb_haproxy_reload: "reload" on the master socket; done when the master
 *                      counts one more reload, no more failures, and the
 *                      new worker answers on the stats socket.  The
 *                      listening sockets pass to the new worker through
 *                      the stats socket's "expose-fd listeners" (the
 *                      master adds -x itself); the old worker finishes its
 *                      connections within hard-stop-after.
 *   lb_haproxy_stop:   SIGTERM to the master, SIGKILL after 5 s.
 *
 * A spawned HAProxy outlives the engine when the engine is killed (it is
 * adopted by the next engine on the same directory); lb_haproxy_stop ends
 * it on a clean exit.  Never prints: errors go to the caller's buffer.
 */
#ifndef WEFT_LB_HAPROXY_H
#define WEFT_LB_HAPROXY_H

#include "lb/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct lb_haproxy {
	const char *bin;	/* borrowed */
	const char *dir;	/* borrowed: the state directory */
	pid_t master;		/* 0: none */
	bool child;		/* spawned by us (else adopted) */
	pid_t worker;		/* the current worker */
};

/* haproxy -c on dir/haproxy.cfg: 0, or -EINVAL with its complaint in err */
int lb_haproxy_check(const char *bin, const char *dir, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int lb_haproxy_start(struct lb_haproxy *h, bool *adopted, char *err, size_t errlen)
	__attribute__((warn_unused_result));
int lb_haproxy_reload(struct lb_haproxy *h, char *err, size_t errlen) __attribute__((warn_unused_result));
int lb_haproxy_apply(struct lb_haproxy *h, const struct lb_op *op, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* the master still runs */
bool lb_haproxy_alive(struct lb_haproxy *h);
void lb_haproxy_stop(struct lb_haproxy *h);

#endif
