/*
 * adopt.h — the server slots a running HAProxy has, read back from the
 * haproxy.cfg weft-lb wrote for it, so that an engine that starts again
 * (and adopts that HAProxy) lays its servers out sticky to them.
 *
 * Slots grow at run time ("add server", plan.h) and servers keep their
 * slots, so the slots that run are not the ones a fresh layout gives.
 * The configuration on disk has them all (render.h writes every slot as
 * a server line); read back, they are the prev of lb_layout_build, and a
 * build from the same objects writes the same bytes: no reload.
 *
 * What is read, per "backend NAME" section: its "server <pool>:<n>
 * ADDR:PORT ..." lines, n counting from 1 in each pool's run;
 * "0.0.0.0:0" is a free slot.  Anything else in the file is skipped.  A
 * file that breaks these rules was not written by weft-lb: -EINVAL.
 *
 * Ownership: the layout returned holds only backends, their pools' names
 * and slots (no frontends, weights, TLS settings); lb_layout_free()
 * frees it.
 */
#ifndef WEFT_LB_ADOPT_H
#define WEFT_LB_ADOPT_H

#include "lb/layout.h"

/* The slots of dir/haproxy.cfg into *out (backends sorted by name).  0,
 * or -ENOENT (no file), -EINVAL (not a file of ours, or past the LB_*_MAX
 * bounds), -ENOMEM; *out is NULL on error. */
int lb_adopt_read(const char *dir, struct lb_layout **out) __attribute__((warn_unused_result));

#endif
