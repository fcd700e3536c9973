/*
 * adopt.c — the slots of a haproxy.cfg we wrote (adopt.h).
 *
 * One pass over the lines (getline: nothing holds the whole file):
 *
 *   "backend NAME"         a new backend; the pool at hand is none
 *   "\tserver P:N A:PORT"  N == 1: a new pool P in the backend at hand;
 *                          N > 1: the next slot of the pool at hand,
 *                          which must be P with N - 1 slots
 *   anything else          skipped
 *
 * Bounds: LB_BACKENDS_MAX backends, LB_POOLS_MAX pools per backend, slots
 * up to twice LB_SERVERS_MAX per pool, lines of LINE_MAX bytes.
 */
#include "lb/adopt.h"

#include "lb/render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 4096
#define SLOTS_MAX      (2 * LB_SERVERS_MAX)

/* grow *items (n used) so one more fits; capacity is the next power of
 * two, as layout.c's arrays */
static int grow(void **items, size_t n, size_t each, size_t max)
{
	void *a;

	if (n >= max)
		return -EINVAL;
	if (n && (n & (n - 1)))
		return 0;
	a = realloc(*items, (n ? n * 2 : 1) * each);
	if (!a)
		return -ENOMEM;
	*items = a;
	return 0;
}

static int add_backend(struct lb_layout *l, const char *name)
{
	struct lb_backend *be;
	int r;

	if ((r = grow((void **)&l->backends, l->n_backends, sizeof(*be), LB_BACKENDS_MAX)))
		return r;
	be = &l->backends[l->n_backends++];
	memset(be, 0, sizeof(*be));
	be->name = strdup(name);
	return be->name ? 0 : -ENOMEM;
}

static int parse_addr(const char *text, uint32_t *ip, uint16_t *port)
{
	unsigned a, b, c, d, p;
	char end;

	if (sscanf(text, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d, &p, &end) != 5 || a > 255 || b > 255 || c > 255 ||
	    d > 255 || p > 65535)
		return -EINVAL;
	*ip = a << 24 | b << 16 | c << 8 | d;
	*port = (uint16_t)p;
	return 0;
}

/* "server P:N ADDR ..." into the backend at hand */
static int add_server(struct lb_layout *l, char *line)
{
	char *save = NULL, *name = strtok_r(line, " \t", &save), *addr = strtok_r(NULL, " \t", &save), *colon, *end;
	struct lb_backend *be = l->n_backends ? &l->backends[l->n_backends - 1] : NULL;
	struct lb_slot_pool *sp;
	struct lb_slot slot = { 0 };
	unsigned long n;
	int r;

	if (!be || !name || !addr || !(colon = strrchr(name, ':')))
		return -EINVAL;
	*colon = '\0';
	errno = 0;
	n = strtoul(colon + 1, &end, 10);
	if (errno || *end || n == 0 || parse_addr(addr, &slot.ip, &slot.port))
		return -EINVAL;
	slot.used = slot.ip != 0 || slot.port != 0;
	if (n == 1) {
		if ((r = grow((void **)&be->pools, be->n_pools, sizeof(*sp), LB_POOLS_MAX)))
			return r;
		sp = &be->pools[be->n_pools++];
		memset(sp, 0, sizeof(*sp));
		if (!(sp->pool = strdup(name)))
			return -ENOMEM;
	}
	sp = be->n_pools ? &be->pools[be->n_pools - 1] : NULL;
	if (!sp || strcmp(sp->pool, name) != 0 || sp->n_slots != n - 1)
		return -EINVAL;
	if ((r = grow((void **)&sp->slots, sp->n_slots, sizeof(*sp->slots), SLOTS_MAX)))
		return r;
	sp->slots[sp->n_slots++] = slot;
	return 0;
}

static int backend_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lb_backend *)a)->name, ((const struct lb_backend *)b)->name);
}

int lb_adopt_read(const char *dir, struct lb_layout **out)
{
	char path[LB_PATH_BUF];
	struct lb_layout *l = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f = NULL;
	int r = 0;

	*out = NULL;
	lb_render_path(path, dir, NULL, "haproxy.cfg");
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l) {
		r = -ENOMEM;
		goto out;
	}
	while (!r && (len = getline(&line, &cap, f)) >= 0) {
		if (len > LINE_MAX_BYTES) {
			r = -EINVAL;
			break;
		}
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "backend ", 8) == 0)
			r = add_backend(l, line + 8);
		else if (strncmp(line, "\tserver ", 8) == 0)
			r = add_server(l, line + 8);
	}
	if (!r && ferror(f))
		r = -EIO;
	if (!r && l->n_backends)
		qsort(l->backends, l->n_backends, sizeof(*l->backends), backend_cmp);
	for (size_t i = 1; !r && i < l->n_backends; i++)
		if (strcmp(l->backends[i - 1].name, l->backends[i].name) == 0)
			r = -EINVAL;
out:
	free(line);
	fclose(f);
	if (r) {
		lb_layout_free(l);
		return r;
	}
	*out = l;
	return 0;
}
