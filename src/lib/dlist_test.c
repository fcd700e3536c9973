/*
 * dlist_test.c — the intrusive list against a naive reference (an array
 * of the members in order), over random appends and removals on a few
 * lists at once.
 */
#include "lib/dlist.h"
#include "test.h"

enum { RECORDS = 200, LISTS = 3 };

struct rec {
	struct dlist link;
	int list;		/* -1: on none */
};

static struct rec recs[RECORDS];
static struct dlist heads[LISTS];
static int order[LISTS][RECORDS];	/* the reference: record numbers in order */
static int len[LISTS];

static void check_list(int l)
{
	int i = 0;

	for (struct dlist *e = dlist_first(&heads[l]); e; e = dlist_next(&heads[l], e), i++) {
		CHECK(i < len[l]);
		CHECK(DLIST_ENTRY(e, struct rec, link) == &recs[order[l][i]]);
	}
	CHECK_EQ(i, len[l]);
	CHECK_EQ(dlist_empty(&heads[l]), len[l] == 0);
}

TEST(dlist_random_against_reference)
{
	uint64_t st = test_seed() | 1;

	for (int l = 0; l < LISTS; l++) {
		dlist_init(&heads[l]);
		len[l] = 0;
	}
	for (int i = 0; i < RECORDS; i++) {
		recs[i].link = (struct dlist){ 0 };	/* zeroed: on no list */
		recs[i].list = -1;
	}
	for (int op = 0; op < 100000 && !test_failed(); op++) {
		int r = (int)test_rnd(&st, RECORDS), l = (int)test_rnd(&st, LISTS);
		int from = recs[r].list;

		if (test_rnd(&st, 2)) {		/* remove (twice is harmless) */
			dlist_remove(&recs[r].link);
			if (from >= 0) {
				int i = 0;

				while (order[from][i] != r)
					i++;
				memmove(&order[from][i], &order[from][i + 1],
					(size_t)(len[from] - i - 1) * sizeof(int));
				len[from]--;
			}
			recs[r].list = -1;
		} else if (from < 0) {
			dlist_append(&heads[l], &recs[r].link);
			order[l][len[l]++] = r;
			recs[r].list = l;
		}
		check_list(from >= 0 ? from : l);
	}
	for (int l = 0; l < LISTS; l++)
		check_list(l);
}
