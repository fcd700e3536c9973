/*
 * render.c — the HAProxy configuration, maps and crt-lists of a layout
 * (render.h lists the files).
 *
 * The configuration, per listener kind:
 *
 *   HTTP   bind VIP:port; the Host (lowercased, port cut) and path make
 *          txn.route; a host in the redirects map is redirected first
 *          (one rule per status code, the map's value is "code~location");
 *          then use_backend from map_beg over the routes map, whose lines
 *          are longest first, so the first prefix that matches is the
 *          longest; nothing matches: lb-not-found (404).
 *   HTTPS  the same routing after TLS: bind ... ssl crt-list (strict-sni:
 *          a host without a certificate is refused; the list may be
 *          empty and filled at run time).
 *   TLS passthrough  mode tcp; the ClientHello is waited for
 *          (inspect-delay), req.ssl_sni picks the backend from the routes
 *          map (map_str); nothing matches: lb-reject (closed).
 *
 * Every HTTP listener adds X-Forwarded-For (option forwardfor) and a
 * Forwarded header.  Backends: round robin over server slots "<pool>:<n>";
 * a slot in use has its address and weight, a free one is 0.0.0.0:0 and
 * disabled (the runtime API fills it); health checks are HTTP GET / or
 * TCP connects; reencrypt pools add "ssl verify required ca-file" or
 * "ssl verify none".  Every server line carries all its settings: no
 * default-server, because a server added at run time ("add server",
 * HAProxy 2.6) does not inherit one, and a balance algorithm that allows
 * such servers (roundrobin; static-rr and map-based hashes refuse them).
 */
#include "lb/render.h"

#include "lib/errmsg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint16_t redirect_codes[] = { 301, 302, 303, 307, 308 };

void lb_render_path(char *buf, const char *dir, const char *fe, const char *what)
{
	if (!fe)
		snprintf(buf, LB_PATH_BUF, "%s/%s", dir, what);
	else if (strcmp(what, "crtlist") == 0)
		snprintf(buf, LB_PATH_BUF, "%s/certs/%s.crtlist", dir, fe);
	else
		snprintf(buf, LB_PATH_BUF, "%s/maps/%s.%s.map", dir, fe, what);
}

static void ip_text(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

static void render_global(FILE *f, const char *dir)
{
	fprintf(f, "# haproxy.cfg: written by weft-lb from the lb.weft.io/v1 objects; edits are overwritten.\n"
		   "global\n"
		   "\tmaster-worker\n"
		   "\tstats socket %s/haproxy.sock mode 600 level admin expose-fd listeners\n"
		   "\tstats timeout 30s\n"
		   "\thard-stop-after 30s\n"
		   "\ttune.ssl.default-dh-param 2048\n"
		   "\n"
		   "defaults\n"
		   "\tmode http\n"
		   "\ttimeout connect 5s\n"
		   "\ttimeout client 30s\n"
		   "\ttimeout server 30s\n"
		   "\ttimeout http-request 10s\n"
		   "\ttimeout http-keep-alive 10s\n"
		   "\ttimeout tunnel 1h\n"
		   "\ttimeout check 3s\n"
		   "\tretries 2\n"
		   "\toption redispatch\n"
		   /* a reload's old worker answers the next request of an idle
		    * keep-alive connection (with "Connection: close") instead of
		    * closing it under a client that may be sending one */
		   "\toption idle-close-on-response\n"
		   "\n"
		   "backend lb-not-found\n"
		   "\tmode http\n"
		   "\thttp-request deny deny_status 404\n"
		   "\n"
		   "backend lb-reject\n"
		   "\tmode tcp\n"
		   "\ttcp-request content reject\n",
		dir);
}

static void render_http_frontend(FILE *f, const struct lb_frontend *fe, const char *dir)
{
	char path[LB_PATH_BUF], ip[16];
	bool tls = fe->kind == LB_LISTEN_HTTPS;

	ip_text(fe->vip, ip);
	fprintf(f, "\nfrontend %s\n\tmode http\n", fe->name);
	if (tls) {
		lb_render_path(path, dir, fe->name, "crtlist");
		fprintf(f, "\tbind %s:%u ssl crt-list %s strict-sni alpn h2,http/1.1\n", ip, fe->port, path);
	} else {
		fprintf(f, "\tbind %s:%u\n", ip, fe->port);
	}
	fprintf(f, "\toption forwardfor\n"
		   "\thttp-request set-header Forwarded for=%%[src];proto=%s;host=%%[req.hdr(host)]\n"
		   "\thttp-request set-header X-Forwarded-Proto %s\n"
		   "\thttp-request set-var(txn.host) req.hdr(host),field(1,:),lower\n"
		   "\thttp-request set-var(txn.path) path\n"
		   "\thttp-request set-var(txn.route) var(txn.host),concat(,txn.path)\n",
		tls ? "https" : "http", tls ? "https" : "http");
	if (!tls) {
		lb_render_path(path, dir, fe->name, "redirects");
		fprintf(f, "\thttp-request set-var(txn.redirect) var(txn.host),map_str(%s)\n", path);
		for (size_t i = 0; i < sizeof(redirect_codes) / sizeof(redirect_codes[0]); i++)
			fprintf(f, "\thttp-request redirect code %u location %%[var(txn.redirect),field(2,~)]%%[capture.req.uri]"
				   " if { var(txn.redirect),field(1,~) -m str %u }\n",
				redirect_codes[i], redirect_codes[i]);
	}
	lb_render_path(path, dir, fe->name, "routes");
	fprintf(f, "\tuse_backend %%[var(txn.route),map_beg(%s)]\n\tdefault_backend lb-not-found\n", path);
}

static void render_passthrough_frontend(FILE *f, const struct lb_frontend *fe, const char *dir)
{
	char path[LB_PATH_BUF], ip[16];

	ip_text(fe->vip, ip);
	lb_render_path(path, dir, fe->name, "routes");
	fprintf(f, "\nfrontend %s\n"
		   "\tmode tcp\n"
		   "\tbind %s:%u\n"
		   "\ttcp-request inspect-delay 5s\n"
		   "\ttcp-request content accept if { req.ssl_hello_type 1 }\n"
		   "\tuse_backend %%[req.ssl_sni,lower,map_str(%s)]\n"
		   "\tdefault_backend lb-reject\n",
		fe->name, ip, fe->port, path);
}

/* a slot's arguments after its name; the config's server line and the
 * planner's "add server" both use them, so a dynamic server is exactly
 * what the file says (no default-server: "add server" would not inherit
 * it) */
static void server_args(FILE *f, const struct lb_slot_pool *sp, size_t n, const char *dir, bool structure)
{
	const struct lb_slot *s = &sp->slots[n];
	char ip[16];

	if (structure)
		fprintf(f, "SLOTS");
	else if (s->used) {
		ip_text(s->ip, ip);
		fprintf(f, "%s:%u weight %u", ip, s->port, s->weight);
	} else {
		fprintf(f, "0.0.0.0:0 weight 0 disabled");
	}
	fprintf(f, " check inter 2s fall 2 rise 1");
	if (sp->protocol == LB_PROTO_HTTPS && sp->tls_verify)
		fprintf(f, " ssl verify required ca-file %s/%s", dir, sp->ca_file);
	else if (sp->protocol == LB_PROTO_HTTPS)
		fprintf(f, " ssl verify none");
}

/* a pool's run of server lines; its structure is one line whatever the
 * slot count, so slots added at run time are no change of structure */
static void render_pool(FILE *f, const struct lb_slot_pool *sp, const char *dir, bool structure)
{
	for (size_t n = 0; n < sp->n_slots; n++) {
		if (structure)
			fprintf(f, "\tserver %s:*", sp->pool);
		else
			fprintf(f, "\tserver %s:%zu", sp->pool, n + 1);
		fputc(' ', f);
		server_args(f, sp, n, dir, structure);
		fputc('\n', f);
		if (structure)
			break;
	}
}

static void render_backend(FILE *f, const struct lb_backend *be, const char *dir, bool structure)
{
	fprintf(f, "\nbackend %s\n\tmode %s\n\tbalance roundrobin\n", be->name, be->tcp ? "tcp" : "http");
	if (be->http_check)
		fprintf(f, "\toption httpchk GET /\n");
	for (size_t p = 0; p < be->n_pools; p++)
		render_pool(f, &be->pools[p], dir, structure);
}

/* open_memstream, run fn, close: the text or -ENOMEM */
static int memtext(char **out, void (*fn)(FILE *, const void *, const void *, bool), const void *a,
		   const void *b, bool flag)
{
	size_t len = 0;
	FILE *f;

	*out = NULL;
	f = open_memstream(out, &len);
	if (!f)
		return -ENOMEM;
	fn(f, a, b, flag);
	if (fclose(f) != 0 || !*out) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void cfg_text(FILE *f, const void *layout, const void *dir, bool structure)
{
	const struct lb_layout *l = layout;

	render_global(f, dir);
	for (size_t i = 0; i < l->n_frontends; i++) {
		if (l->frontends[i].kind == LB_LISTEN_TLS_PASSTHROUGH)
			render_passthrough_frontend(f, &l->frontends[i], dir);
		else
			render_http_frontend(f, &l->frontends[i], dir);
	}
	for (size_t i = 0; i < l->n_backends; i++)
		render_backend(f, &l->backends[i], dir, structure);
}

int lb_render_cfg(const struct lb_layout *l, const char *dir, bool structure, char **out)
{
	return memtext(out, cfg_text, l, dir, structure);
}

struct slot_ref {
	const struct lb_slot_pool *sp;
	size_t n;
};

static void slot_text(FILE *f, const void *ref, const void *dir, bool unused)
{
	const struct slot_ref *r = ref;

	server_args(f, r->sp, r->n, dir, false);
}

int lb_render_server_args(const struct lb_slot_pool *sp, size_t n, const char *dir, char **out)
{
	struct slot_ref ref = { sp, n };

	return memtext(out, slot_text, &ref, dir, false);
}

static void routes_text(FILE *f, const void *frontend, const void *unused, bool flag)
{
	const struct lb_frontend *fe = frontend;

	for (size_t i = 0; i < fe->n_routes; i++)
		fprintf(f, "%s %s\n", fe->routes[i].key, fe->routes[i].backend);
}

static void redirects_text(FILE *f, const void *frontend, const void *unused, bool flag)
{
	const struct lb_frontend *fe = frontend;

	for (size_t i = 0; i < fe->n_redirects; i++)
		fprintf(f, "%s %u~%s\n", fe->redirects[i].host, fe->redirects[i].code, fe->redirects[i].location);
}

static void crtlist_text(FILE *f, const void *frontend, const void *dir, bool flag)
{
	const struct lb_frontend *fe = frontend;

	for (size_t i = 0; i < fe->n_snis; i++)
		fprintf(f, "%s/%s %s\n", (const char *)dir, fe->snis[i].file, fe->snis[i].host);
}

int lb_render_routes(const struct lb_frontend *fe, char **out)
{
	return memtext(out, routes_text, fe, NULL, false);
}

int lb_render_redirects(const struct lb_frontend *fe, char **out)
{
	return memtext(out, redirects_text, fe, NULL, false);
}

int lb_render_crtlist(const struct lb_frontend *fe, const char *dir, char **out)
{
	return memtext(out, crtlist_text, fe, dir, false);
}

/* ---- files ---- */

struct writer {
	const char *dir;
	char **written;		/* relative paths, for the sweep */
	size_t n_written, cap_written;
	char *err;
	size_t errlen;
};

static int mkdirs(const char *path)
{
	char buf[LB_PATH_BUF];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* write text to dir/rel with mode, aside then renamed; remembered */
static int write_rel(struct writer *w, const char *rel, const char *text, mode_t mode)
{
	char path[LB_PATH_BUF], tmp[LB_PATH_BUF + 8];
	size_t len = strlen(text);
	int fd = -1, r = 0;

	snprintf(path, sizeof(path), "%s/%s", w->dir, rel);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((r = mkdirs(path)))
		goto out;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			goto out;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, mode) != 0 || close(fd) != 0) {
		fd = -1;
		r = -errno;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		r = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (r) {
		unlink(tmp);
		errmsg(w->err, w->errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (w->n_written == w->cap_written) {
		size_t c = w->cap_written ? w->cap_written * 2 : 64;
		char **a = realloc(w->written, c * sizeof(*a));

		if (!a)
			return -ENOMEM;
		w->written = a;
		w->cap_written = c;
	}
	if (!(w->written[w->n_written] = strdup(rel)))
		return -ENOMEM;
	w->n_written++;
	return 0;
}

/* write fn's text (memtext) to rel */
static int write_text(struct writer *w, const char *rel, int (*fn)(const struct lb_frontend *, char **),
		      const struct lb_frontend *fe)
{
	char *text = NULL;
	int r = fn(fe, &text);

	if (!r)
		r = write_rel(w, rel, text, 0600);
	free(text);
	return r;
}

static int write_frontend(struct writer *w, const struct lb_frontend *fe)
{
	char rel[LB_PATH_BUF];
	char *text = NULL;
	int r;

	snprintf(rel, sizeof(rel), "maps/%s.routes.map", fe->name);
	if ((r = write_text(w, rel, lb_render_routes, fe)))
		return r;
	if (fe->kind == LB_LISTEN_HTTP) {
		snprintf(rel, sizeof(rel), "maps/%s.redirects.map", fe->name);
		if ((r = write_text(w, rel, lb_render_redirects, fe)))
			return r;
	}
	if (fe->kind != LB_LISTEN_HTTPS)
		return 0;
	for (size_t i = 0; i < fe->n_snis; i++)
		if ((r = write_rel(w, fe->snis[i].file, fe->snis[i].pem, 0600)))
			return r;
	snprintf(rel, sizeof(rel), "certs/%s.crtlist", fe->name);
	if ((r = lb_render_crtlist(fe, w->dir, &text)) == 0)
		r = write_rel(w, rel, text, 0600);
	free(text);
	return r;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* remove files under dir/rel (one level of subdirectories) not written */
static void sweep(struct writer *w, const char *rel, int depth)
{
	char path[2 * LB_PATH_BUF], sub[LB_PATH_BUF];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", w->dir, rel);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *key;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		if (e->d_type == DT_DIR) {
			if (depth > 0) {
				sweep(w, sub, depth - 1);
				snprintf(path, sizeof(path), "%s/%s", w->dir, sub);
				rmdir(path);	/* only when empty */
			}
			continue;
		}
		key = sub;
		if (w->n_written && bsearch(&key, w->written, w->n_written, sizeof(char *), str_cmp))
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->dir, sub);
		unlink(path);
	}
	closedir(d);
}

int lb_render_write(const struct lb_layout *l, const char *dir, char *err, size_t errlen)
{
	struct writer w = { .dir = dir, .err = err, .errlen = errlen };
	char *cfg = NULL;
	int r = 0;

	for (size_t i = 0; i < l->n_frontends && !r; i++)
		r = write_frontend(&w, &l->frontends[i]);
	for (size_t b = 0; b < l->n_backends && !r; b++)
		for (size_t p = 0; p < l->backends[b].n_pools && !r; p++)
			if (l->backends[b].pools[p].ca_file)
				r = write_rel(&w, l->backends[b].pools[p].ca_file, l->backends[b].pools[p].ca_pem, 0644);
	if (r)
		goto out;
	if ((r = lb_render_cfg(l, dir, false, &cfg)) || (r = write_rel(&w, "haproxy.cfg", cfg, 0600)))
		goto out;
	if (w.n_written)
		qsort(w.written, w.n_written, sizeof(char *), str_cmp);
	sweep(&w, "maps", 0);
	sweep(&w, "certs", 1);
	sweep(&w, "ca", 0);
out:
	if (r == -ENOMEM)
		errmsg(err, errlen, "out of memory writing %s", dir);
	for (size_t i = 0; i < w.n_written; i++)
		free(w.written[i]);
	free(w.written);
	free(cfg);
	return r;
}

/* does dir/rel hold exactly text */
static bool file_is(const char *dir, const char *rel, const char *text)
{
	char path[2 * LB_PATH_BUF];
	size_t len = strlen(text), got = 0;
	bool same = false;
	char *buf = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "re");
	if (!f)
		return false;
	buf = malloc(len + 2);
	if (buf) {
		got = fread(buf, 1, len + 1, f);
		same = got == len && memcmp(buf, text, len) == 0;
		explicit_bzero(buf, got);
	}
	free(buf);
	fclose(f);
	return same;
}

static bool text_is(const char *dir, const char *rel, int r, char *text)
{
	bool same = r == 0 && file_is(dir, rel, text);

	free(text);
	return same;
}

bool lb_render_matches(const struct lb_layout *l, const char *dir)
{
	char rel[LB_PATH_BUF];
	char *text = NULL;
	int r;

	r = lb_render_cfg(l, dir, false, &text);
	if (!text_is(dir, "haproxy.cfg", r, text))
		return false;
	for (size_t i = 0; i < l->n_frontends; i++) {
		const struct lb_frontend *fe = &l->frontends[i];

		snprintf(rel, sizeof(rel), "maps/%s.routes.map", fe->name);
		r = lb_render_routes(fe, &text);
		if (!text_is(dir, rel, r, text))
			return false;
		snprintf(rel, sizeof(rel), "maps/%s.redirects.map", fe->name);
		r = lb_render_redirects(fe, &text);
		if (fe->kind == LB_LISTEN_HTTP && !text_is(dir, rel, r, text))
			return false;
		if (fe->kind != LB_LISTEN_HTTP)
			free(text);
		snprintf(rel, sizeof(rel), "certs/%s.crtlist", fe->name);
		r = lb_render_crtlist(fe, dir, &text);
		if (fe->kind == LB_LISTEN_HTTPS && !text_is(dir, rel, r, text))
			return false;
		if (fe->kind != LB_LISTEN_HTTPS)
			free(text);
		for (size_t s = 0; s < fe->n_snis; s++)
			if (!file_is(dir, fe->snis[s].file, fe->snis[s].pem))
				return false;
	}
	return true;
}
