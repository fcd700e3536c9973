/*
 * runtime.h — one exchange with HAProxy's command line interface over a
 * UNIX socket (the stats socket of a worker, or the master socket): the
 * non-interactive mode, one command per connection.
 *
 *   connect -> write "command\n"                 -> read until HAProxy closes
 *              or "command <<\npayload\n\n"         (the answer)
 *
 * Bounded: the whole exchange within timeout_ms, the answer cut at its
 * buffer's size (the cut is reported as -EMSGSIZE after the buffer is
 * filled, NUL-terminated).  Never prints.
 */
#ifndef WEFT_LB_RUNTIME_H
#define WEFT_LB_RUNTIME_H

#include <stddef.h>

/* 0 and the answer in answer (cap bytes, NUL-terminated), or -errno
 * (-ETIMEDOUT past timeout_ms, -ENAMETOOLONG for a socket path too long,
 * the connect error otherwise).  payload may be NULL. */
int lb_runtime_call(const char *socket_path, const char *command, const char *payload, char *answer, size_t cap,
		    int timeout_ms) __attribute__((warn_unused_result));

#endif
