/*
 * stop.c — a streaming command's end on a signal (stop.h).  The handler
 * only stores the signal and calls httpc_cancel (an atomic store): both
 * async-signal-safe.
 */
#include "ctl/stop.h"

#include <signal.h>
#include <stddef.h>

static volatile sig_atomic_t stop_signal;
static struct httpc *cancel_target;
static struct sigaction old_int, old_term, old_alrm;
static bool caught_alarm;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
	if (cancel_target)
		httpc_cancel(cancel_target);
}

void ctl_stop_catch(struct httpc *h, bool alarm)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	stop_signal = 0;
	cancel_target = h;
	caught_alarm = alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (alarm)
		sigaction(SIGALRM, &sa, &old_alrm);
}

void ctl_stop_release(void)
{
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (caught_alarm)
		sigaction(SIGALRM, &old_alrm, NULL);
	cancel_target = NULL;
}

int ctl_stopped(void)
{
	return stop_signal;
}
