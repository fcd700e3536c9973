/*
 * render.h — a layout as HAProxy's files, under a state directory DIR:
 *
 *   DIR/haproxy.cfg                    global, defaults, a frontend per listener, a backend per route target
 *   DIR/maps/<frontend>.routes.map     "host/path backend", longest key first (map_beg), or "host backend" (passthrough)
 *   DIR/maps/<frontend>.redirects.map  "host code~scheme://host"
 *   DIR/certs/<frontend>.crtlist       "DIR/certs/<frontend>/<host>.pem host", one line per SNI host
 *   DIR/certs/<frontend>/<host>.pem    certificate chain then key (mode 0600)
 *   DIR/ca/<pki profile>-<hash>.pem    a reencrypt pool's CA (the hash of its content is in the name,
 *                                      so a new CA is a new file: a configuration change)
 *
 * The same layout always gives the same bytes.  The configuration can be
 * rendered in two ways: whole (what HAProxy reads), or as its structure
 * only (one line per pool with its server settings, without slot count,
 * addresses, weights and states): two layouts with the same structure
 * differ only in what the runtime API can change (slots added with "add
 * server" included), which is how the planner (plan.h) decides between
 * runtime commands and a reload.
 */
#ifndef WEFT_LB_RENDER_H
#define WEFT_LB_RENDER_H

#include "lb/layout.h"

#include <stdbool.h>
#include <stddef.h>

#define LB_PATH_BUF 4096

/* The haproxy.cfg text of l for state directory dir (absolute); structure:
 * see above.  0 and *out (malloc'd, the caller frees), or -ENOMEM. */
int lb_render_cfg(const struct lb_layout *l, const char *dir, bool structure, char **out)
	__attribute__((warn_unused_result));

/* The arguments of slot n of sp after its name, as on its server line:
 * "ADDR:PORT weight W [disabled] check ... [ssl ...]" (what "add server
 * <backend>/<pool>:<n+1>" takes).  0 and *out (malloc'd), or -ENOMEM. */
int lb_render_server_args(const struct lb_slot_pool *sp, size_t n, const char *dir, char **out)
	__attribute__((warn_unused_result));

/* The text of a frontend's routes map, redirects map and crt-list.  0 and
 * *out (malloc'd), or -ENOMEM. */
int lb_render_routes(const struct lb_frontend *fe, char **out) __attribute__((warn_unused_result));
int lb_render_redirects(const struct lb_frontend *fe, char **out) __attribute__((warn_unused_result));
int lb_render_crtlist(const struct lb_frontend *fe, const char *dir, char **out) __attribute__((warn_unused_result));

/* Paths under dir: "maps/<fe>.routes.map", "maps/<fe>.redirects.map",
 * "certs/<fe>.crtlist", or any relative path.  buf holds LB_PATH_BUF. */
void lb_render_path(char *buf, const char *dir, const char *fe, const char *what);

/* Write every file of l under dir (each written aside and renamed into
 * place), then remove files under maps/, certs/ and ca/ that l no longer
 * has.  0, or a negative errno with err naming the file. */
int lb_render_write(const struct lb_layout *l, const char *dir, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Do the files under dir hold exactly what lb_render_write would write
 * for l (configuration, maps, crt-lists, certificates)?  An engine that
 * adopts a running HAProxy uses it to skip a reload. */
bool lb_render_matches(const struct lb_layout *l, const char *dir);

#endif
