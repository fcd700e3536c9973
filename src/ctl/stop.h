/*
 * stop.h — how a streaming command (weftctl get -w, weftctl flows
 * --follow) ends on a signal: SIGINT and SIGTERM (and SIGALRM, a
 * --timeout's) record the signal and cancel the stream's request
 * (httpc_cancel, which a handler may call), so httpc_stream returns and
 * the command ends as it chooses, usually with exit 0.
 *
 * One stream at a time in a process (the handlers' state is the file's).
 */
#ifndef WEFT_CTL_STOP_H
#define WEFT_CTL_STOP_H

#include <stdbool.h>

#include "lib/httpc.h"

/* Catch SIGINT and SIGTERM (and SIGALRM when alarm) for a stream on h
 * (borrowed until ctl_stop_release); the signal recorded is cleared. */
void ctl_stop_catch(struct httpc *h, bool alarm);

/* The handlers from before ctl_stop_catch back; h no longer cancelled. */
void ctl_stop_release(void);

/* The signal that asked to stop since ctl_stop_catch, or 0. */
int ctl_stopped(void);

#endif
