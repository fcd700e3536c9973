/*
 * adopt_test.c — the slots read back from a haproxy.cfg we wrote: a
 * layout grown at run time and shrunk again, written, read back, and laid
 * out sticky to it gives the same files (an adopting restart reloads
 * nothing); a fresh layout does not; a file not of ours is refused.
 */
#include "lb/adopt.h"
#include "lb/lb_fixture.h"
#include "lb/render.h"
#include "test.h"

/* the slots the tests lay pools out with (the engine's default is fewer) */
#define TEST_SLOTS 8

#include <errno.h>

TEST(adopt_keeps_slots_added_at_run_time)
{
	json_t *o[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL),
			fix_shared("192.168.202.1", fix_servers(1, 50, (1ull << 50) - 1), NULL),
			fix_shared("192.168.202.1", fix_servers(1, 50, 1ull << 40 | 1ull << 7), NULL) };
	struct lb_state *s[3];
	struct lb_layout *l[3] = { NULL, NULL, NULL }, *disk = NULL, *again = NULL, *fresh = NULL;
	const struct lb_slot_pool *sp;
	char err[256];

	for (int i = 0; i < 3; i++) {
		s[i] = fix_state(&o[i], 1);
		l[i] = lb_layout_build(s[i], i ? l[i - 1] : NULL, TEST_SLOTS, NULL, 0);
		CHECK(l[i]);
	}
	CHECK(lb_render_write(l[2], test_tmpdir(), err, sizeof(err)) == 0);
	CHECK(lb_adopt_read(test_tmpdir(), &disk) == 0);
	CHECK(disk && lb_layout_find_backend(disk, "weft--Shared-L7-0:a.example.com_api"));
	sp = &lb_layout_find_backend(disk, "weft--Shared-L7-0:a.example.com_api")->pools[0];
	CHECK_STR(sp->pool, "api");
	CHECK_EQ(sp->n_slots, 64);
	CHECK(sp->slots[7].used && sp->slots[7].ip == (10u << 24 | 1 << 8 | 8) && sp->slots[7].port == 8080);
	CHECK(sp->slots[40].used && !sp->slots[0].used && !sp->slots[63].used);
	again = lb_layout_build(s[2], disk, TEST_SLOTS, NULL, 0);
	CHECK(again && lb_render_matches(again, test_tmpdir()));
	fresh = lb_layout_build(s[2], NULL, TEST_SLOTS, NULL, 0);
	CHECK(fresh && !lb_render_matches(fresh, test_tmpdir()));	/* 8 slots, other places */
	lb_layout_free(disk);
	lb_layout_free(again);
	lb_layout_free(fresh);
	for (int i = 0; i < 3; i++) {
		lb_layout_free(l[i]);
		lb_state_free(s[i]);
	}
}

static int read_text(const char *text)
{
	char path[1024];
	struct lb_layout *l = (struct lb_layout *)1;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/haproxy.cfg", test_tmpdir());
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	r = lb_adopt_read(test_tmpdir(), &l);
	if (r == 0)
		lb_layout_free(l);
	else if (l)
		r = -1000;	/* *out must be NULL on error */
	return r;
}

TEST(adopt_refuses_what_we_did_not_write)
{
	struct lb_layout *l = NULL;

	CHECK_EQ(lb_adopt_read("/nonexistent-weft", &l), -ENOENT);
	CHECK(l == NULL);
	CHECK_EQ(read_text("backend b\n\tserver p:1 10.0.0.1:80 weight 1\n\tserver p:2 0.0.0.0:0\n"), 0);
	CHECK_EQ(read_text("backend b\n\tserver p:2 10.0.0.1:80\n"), -EINVAL);		/* not from 1 */
	CHECK_EQ(read_text("backend b\n\tserver p:1 10.0.0.1:80\n\tserver q:2 10.0.0.1:80\n"), -EINVAL);
	CHECK_EQ(read_text("\tserver p:1 10.0.0.1:80\n"), -EINVAL);			/* no backend */
	CHECK_EQ(read_text("backend b\n\tserver p1 10.0.0.1:80\n"), -EINVAL);		/* no slot number */
	CHECK_EQ(read_text("backend b\n\tserver p:1 10.0.0.300:80\n"), -EINVAL);
	CHECK_EQ(read_text("backend b\n\tserver p:1 10.0.0.1:80\nbackend b\n"), -EINVAL);	/* twice */
	CHECK_EQ(read_text("global\n\tmaster-worker\n"), 0);				/* no backends */
}
