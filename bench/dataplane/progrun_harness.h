/*
 * progrun_harness.h — what datapath_fixture.h asks of the unit tests'
 * harness (tests/unit/test.h), for progrun.c, which is no test: a
 * failure is fatal, and the bpffs mount point's parent is a directory of
 * its own, made once and removed at the end (progrun_tmpdir_remove).
 * Included by progrun.c only (it defines the functions).
 */
#ifndef WEFT_BENCH_PROGRUN_HARNESS_H
#define WEFT_BENCH_PROGRUN_HARNESS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "progrun: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

int test_failed(void) { return 0; }

static char tmp[] = "/tmp/weft-progrun.XXXXXX";

/* the bpffs mount point's parent: made once, removed at the end */
const char *test_tmpdir(void)
{
	static bool made;

	if (!made && !mkdtemp(tmp))
		test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
	made = true;
	return tmp;
}

void progrun_tmpdir_remove(void)
{
	(void)rmdir(tmp);
}

#endif
