/*
 * source.h — where the engine's objects come from, behind one table of
 * functions chosen in main: a directory of JSON files (source_dir.c), or
 * the API's list and watch of /apis/lb.weft.io/v1/virtualservices and
 * sslkeyandcertificates (source_api.c).
 *
 *   load:  every object the source holds now, into an empty state; each
 *          object that could not be read or parsed is one line in report
 *          (naming it), and the others are loaded.  0, -EAGAIN when the
 *          source has no whole set yet (the API before its first lists),
 *          or a negative errno when the source itself failed (the state
 *          is then not used).
 *   fd:    a descriptor that becomes readable when the source changed, or
 *          -1 when changes are signalled by SIGHUP (the directory).
 *   observed: (may be NULL) what the engine made of the objects of its
 *          last load: report holds its rejections, one line each, those of
 *          a VirtualService starting "VirtualService NAME: "; pending, a
 *          reload that would apply them still waits.  Called after every
 *          change and at least every second; cheap when nothing changed.
 *   close: frees the source; accepts a source never opened.
 */
#ifndef WEFT_LB_SOURCE_H
#define WEFT_LB_SOURCE_H

#include "lb/state.h"

#include <stddef.h>

struct lb_source_ops {
	const char *name;
	int (*load)(void *ctx, struct lb_state *state, char *report, size_t len);
	int (*fd)(void *ctx);
	void (*observed)(void *ctx, const char *report, bool pending);
	void (*close)(void *ctx);
};

struct lb_source {
	const struct lb_source_ops *ops;
	void *ctx;
};

#define LB_OBJECT_FILE_MAX (1024 * 1024)	/* bytes of one object file */

/* A directory: every *.json file in it is one object, read in name
 * order.  0, or -errno with err naming the directory. */
int lb_source_dir_open(struct lb_source *src, const char *dir, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void lb_source_close(struct lb_source *src);

/* The API: list and watch from weft-controller (replicas comma-separated
 * in controller), with a bearer token file and the CA that signs its
 * certificate; and what the engine made of each VirtualService written to
 * its status.engines.<engine> (state Applied, Pending or Rejected, the
 * reason, and observedSpec, a hash of the spec it was made from).
 * Threads of its own; log (may be NULL) gets one line per list, per broken
 * watch and per failed status write.  0, or -errno with err saying why. */
struct lb_source_api_options {
	const char *engine;		/* this engine's name: its entry in status.engines */
	const char *controller;
	const char *token_file;
	const char *ca_file;
	void (*log)(void *arg, const char *line);
	void *log_arg;
};
int lb_source_api_open(struct lb_source *src, const struct lb_source_api_options *o, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
