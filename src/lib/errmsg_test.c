/*
 * errmsg_test.c — the message buffer: errmsg always NUL-terminates, and
 * errmsg_line appends whole lines, cuts the one that does not fit and
 * appends nothing once the buffer is full.
 */
#include "lib/errmsg.h"
#include "test.h"

TEST(errmsg_fills_and_terminates)
{
	char buf[8];

	errmsg(buf, sizeof(buf), "pod %s", "blue/a");
	CHECK_STR(buf, "pod blu");
	errmsg(NULL, 0, "nothing %d", 1);	/* no buffer: nothing */
}

TEST(errmsg_line_appends_lines_until_full)
{
	char buf[16] = "";

	CHECK(errmsg_line(buf, sizeof(buf), "a %d", 1) == 0);
	CHECK(errmsg_line(buf, sizeof(buf), "b") == 0);
	CHECK_STR(buf, "a 1\nb\n");
	/* cut short, still a line */
	CHECK(errmsg_line(buf, sizeof(buf), "%s", "0123456789") == 0);
	CHECK_STR(buf, "a 1\nb\n01234567\n");
	CHECK_EQ(strlen(buf), 15);
	/* full: nothing more */
	CHECK(errmsg_line(buf, sizeof(buf), "x") == -1);
	CHECK_STR(buf, "a 1\nb\n01234567\n");
}
