/*
 * log.c — the agent's log: one line a message on stderr, with the time,
 * the program and the level.  Process-wide, like stderr itself: a
 * process running many hollow agents (weft-hollow) names itself and may
 * keep only warnings and errors, which then still say which node they
 * are about where the message names it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *log_prog = "weft-agent";
static bool log_quiet;

void agent_log_setup(const char *prog, bool quiet)
{
	log_prog = prog;
	log_quiet = quiet;
}

void agent_log(const char *level, const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char when[32];
	va_list ap;

	if (log_quiet && strcmp(level, "info") == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s.%03ld %s %s: ", when, ts.tv_nsec / 1000000, log_prog, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&log_lock);
}
