/*
 * main.c — weft-lb, the service engine: HAProxy driven from the
 * lb.weft.io/v1 VirtualService and SSLKeyAndCertificate objects
 * (docs/lb_engine.md).
 *
 *   weft-lb run --name SE --state-dir DIR (--objects-dir DIR |
 *               --controller URL[,URL...] --token-file F [--ca-file F])
 *               [--haproxy PATH] [--min-reload-interval-ms N] [--min-slots N]
 *   weft-lb render --objects-dir DIR --out DIR [--haproxy PATH]
 *   weft-lb status --state-dir DIR
 *
 * Flags are parsed here into one struct; the subcommand is looked up in
 * `commands`.  Exit status: 0 done, 1 failed, 2 usage error, 3 (render)
 * the configuration is valid but some objects were rejected.
 */
#include "lb/engine.h"
#include "lb/haproxy.h"
#include "lb/layout.h"
#include "lb/render.h"
#include "lb/source.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct flags {
	const char *name, *state_dir, *objects_dir, *out, *haproxy;
	const char *controller, *token_file, *ca_file;
	long min_reload_ms, min_slots;
};

struct command {
	const char *name;
	int (*fn)(struct flags *f);
	const char *usage;
};

static int cmd_run(struct flags *f);
static int cmd_render(struct flags *f);
static int cmd_status(struct flags *f);

static const struct command commands[] = {
	{ "run", cmd_run,
	  "--name SE --state-dir DIR (--controller URL[,URL...] --token-file F [--ca-file F] | --objects-dir DIR)\n"
	  "        [--haproxy PATH] [--min-reload-interval-ms N (500)] [--min-slots N (1)]\n"
	  "        serve the virtual services the controller's API lists and watches, or those of\n"
	  "        DIR (*.json, one object each; SIGHUP: read them again)" },
	{ "render", cmd_render, "--objects-dir DIR --out DIR [--haproxy PATH] [--min-slots N]\n"
				"        write the configuration the objects give, and check it with haproxy -c" },
	{ "status", cmd_status, "--state-dir DIR\n        print the engine's counters (DIR/status.json)" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  weft-lb %s %s\n", commands[i].name, commands[i].usage);
}

static void log_line(void *arg, const char *line)
{
	fprintf(stderr, "weft-lb: %s\n", line);
}

/* an absolute copy of a directory (HAProxy gets absolute paths) */
static char *absolute_dir(const char *flag, const char *dir, bool create)
{
	char *abs;

	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "weft-lb: %s %s: %s\n", flag, dir, strerror(errno));
		return NULL;
	}
	abs = realpath(dir, NULL);
	if (!abs)
		fprintf(stderr, "weft-lb: %s %s: %s\n", flag, dir, strerror(errno));
	else if (strlen(abs) > 200) {
		fprintf(stderr, "weft-lb: %s %s: longer than 200 characters (UNIX socket paths)\n", flag, abs);
		free(abs);
		abs = NULL;
	}
	return abs;
}

static int cmd_run(struct flags *f)
{
	struct lb_source src = { 0 };
	struct lb_engine_config cfg = { 0 };
	char err[4096], *dir = NULL;
	int r, rc = 1;

	if (!f->name || !f->state_dir || !f->objects_dir == !f->controller) {
		fprintf(stderr, "weft-lb run: --name, --state-dir and one of --controller and --objects-dir are required\n");
		return 2;
	}
	if (f->controller && !f->token_file) {
		fprintf(stderr, "weft-lb run: --controller needs --token-file\n");
		return 2;
	}
	if (!(dir = absolute_dir("--state-dir", f->state_dir, true)))
		goto out;
	if (f->controller) {
		struct lb_source_api_options o = { f->name, f->controller, f->token_file, f->ca_file, log_line, NULL };

		r = lb_source_api_open(&src, &o, err, sizeof(err));
	} else {
		r = lb_source_dir_open(&src, f->objects_dir, err, sizeof(err));
	}
	if (r != 0) {
		fprintf(stderr, "weft-lb: %s\n", err);
		goto out;
	}
	cfg = (struct lb_engine_config){ .name = f->name, .state_dir = dir, .haproxy = f->haproxy,
					 .min_reload_interval_ms = f->min_reload_ms, .min_slots = (size_t)f->min_slots,
					 .source = &src,
					 .log = log_line };
	r = lb_engine_run(&cfg, err, sizeof(err));
	if (r)
		fprintf(stderr, "weft-lb: %s\n", err);
	rc = r ? 1 : 0;
out:
	lb_source_close(&src);
	free(dir);
	return rc;
}

static int cmd_render(struct flags *f)
{
	struct lb_source src = { 0 };
	struct lb_state *state = NULL;
	struct lb_layout *l = NULL;
	char err[4096], *report = NULL, *dir = NULL;
	int rc = 1;

	if (!f->objects_dir || !f->out) {
		fprintf(stderr, "weft-lb render: --objects-dir and --out are required\n");
		return 2;
	}
	report = calloc(1, 64 * 1024);
	state = lb_state_new();
	if (!report || !state || !(dir = absolute_dir("--out", f->out, true)))
		goto out;
	if (lb_source_dir_open(&src, f->objects_dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "weft-lb: %s\n", err);
		goto out;
	}
	if (src.ops->load(src.ctx, state, report, 32 * 1024) != 0) {
		fprintf(stderr, "weft-lb: reading %s failed\n", f->objects_dir);
		goto out;
	}
	l = lb_layout_build(state, NULL, (size_t)f->min_slots, report + strlen(report), 64 * 1024 - strlen(report));
	if (!l) {
		fprintf(stderr, "weft-lb: layout: %s\n", strerror(errno));
		goto out;
	}
	if (lb_render_write(l, dir, err, sizeof(err)) != 0 || lb_haproxy_check(f->haproxy, dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "weft-lb: %s\n", err);
		goto out;
	}
	for (char *line = report, *end; *line; line = *end ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		fprintf(stderr, "weft-lb: rejected: %.*s\n", (int)(end - line), line);
	}
	printf("%s/haproxy.cfg: %zu listeners, %zu backends, %zu servers; haproxy -c: valid\n", dir, l->n_frontends,
	       l->n_backends, lb_layout_servers(l));
	rc = report[0] ? 3 : 0;
out:
	lb_layout_free(l);
	lb_state_free(state);
	lb_source_close(&src);
	free(report);
	free(dir);
	return rc;
}

static int cmd_status(struct flags *f)
{
	char path[4096];
	json_error_t jerr;
	json_t *st;

	if (!f->state_dir) {
		fprintf(stderr, "weft-lb status: --state-dir is required\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/status.json", f->state_dir);
	st = json_load_file(path, 0, &jerr);
	if (!st) {
		fprintf(stderr, "weft-lb: %s: %s\n", path, jerr.text);
		return 1;
	}
	json_dumpf(st, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(st);
	return 0;
}

static int parse_flags(int argc, char **argv, struct flags *f)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **slot = strcmp(a, "--name") == 0 ? &f->name
				    : strcmp(a, "--state-dir") == 0 ? &f->state_dir
				    : strcmp(a, "--objects-dir") == 0 ? &f->objects_dir
				    : strcmp(a, "--out") == 0 ? &f->out
				    : strcmp(a, "--haproxy") == 0 ? &f->haproxy
				    : strcmp(a, "--controller") == 0 ? &f->controller
				    : strcmp(a, "--token-file") == 0 ? &f->token_file
				    : strcmp(a, "--ca-file") == 0 ? &f->ca_file : NULL;
		char *end;

		if (!v) {
			fprintf(stderr, "weft-lb: %s: a flag with a value is expected\n", a);
			return -1;
		}
		if (slot) {
			*slot = v;
		} else if (strcmp(a, "--min-slots") == 0) {
			errno = 0;
			f->min_slots = strtol(v, &end, 10);
			if (errno || *end || f->min_slots < LB_SLOTS_MIN || f->min_slots > LB_SLOTS_MAX ||
			    (f->min_slots & (f->min_slots - 1))) {
				fprintf(stderr, "weft-lb: --min-slots %s: not a power of two from %d to %d\n", v,
					LB_SLOTS_MIN, LB_SLOTS_MAX);
				return -1;
			}
		} else if (strcmp(a, "--min-reload-interval-ms") == 0) {
			errno = 0;
			f->min_reload_ms = strtol(v, &end, 10);
			if (errno || *end || f->min_reload_ms < 0 || f->min_reload_ms > 3600000) {
				fprintf(stderr, "weft-lb: --min-reload-interval-ms %s: not 0..3600000\n", v);
				return -1;
			}
		} else {
			fprintf(stderr, "weft-lb: unknown flag %s\n", a);
			return -1;
		}
		i++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct flags f = { .haproxy = "/usr/sbin/haproxy", .min_reload_ms = 500, .min_slots = LB_SLOTS_DEFAULT };

	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		if (parse_flags(argc - 2, argv + 2, &f) != 0) {
			usage(stderr);
			return 2;
		}
		return commands[i].fn(&f);
	}
	fprintf(stderr, "weft-lb: unknown command %s\n", argv[1]);
	usage(stderr);
	return 2;
}
