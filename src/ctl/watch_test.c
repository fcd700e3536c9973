/*
 * watch_test.c — what `weftctl get -w` and `delete -l` parse and build:
 * watch events, --timeout, query strings, and rows printed without their
 * header.
 */
#include "ctl/watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/table.h"
#include "test.h"

static int parse(const char *line, struct ctl_event *ev, char *err, size_t len)
{
	return ctl_event_parse(line, strlen(line), ev, err, len);
}

TEST(watch_event_types_and_rv)
{
	struct ctl_event ev;
	char err[256];

	CHECK(parse("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"17\"}}}",
		    &ev, err, sizeof(err)) == 0);
	CHECK_EQ(ev.type, CTL_EV_ADDED);
	CHECK_STR(ev.rv, "17");
	ctl_event_free(&ev);
	CHECK(parse("{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"18\"}}}",
		    &ev, err, sizeof(err)) == 0);
	CHECK_EQ(ev.type, CTL_EV_DELETED);
	ctl_event_free(&ev);
	CHECK(parse("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}}}", &ev, err, sizeof(err)) == 0);
	CHECK_EQ(ev.type, CTL_EV_MODIFIED);
	CHECK(ev.rv == NULL);
	ctl_event_free(&ev);
	CHECK(parse("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"99\"}}}",
		    &ev, err, sizeof(err)) == 0);
	CHECK_EQ(ev.type, CTL_EV_BOOKMARK);
	CHECK_STR(ev.rv, "99");
	ctl_event_free(&ev);
	CHECK(parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}",
		    &ev, err, sizeof(err)) == 0);
	CHECK_EQ(ev.type, CTL_EV_ERROR);
	CHECK_EQ(ev.code, 410);
	ctl_event_free(&ev);
}

TEST(watch_event_refusals_say_why)
{
	struct ctl_event ev;
	char err[256];

	CHECK(parse("{\"type\":\"ADDED\"", &ev, err, sizeof(err)) == -EPROTO);
	CHECK_CONTAINS(err, "not valid JSON");
	CHECK(ev.root == NULL);
	CHECK(parse("{\"object\":{}}", &ev, err, sizeof(err)) == -EPROTO);
	CHECK_CONTAINS(err, "lacks its type");
	CHECK(parse("{\"type\":\"ADDED\",\"object\":[]}", &ev, err, sizeof(err)) == -EPROTO);
	CHECK_CONTAINS(err, "lacks its type");
	CHECK(parse("{\"type\":\"RENAMED\",\"object\":{}}", &ev, err, sizeof(err)) == -EPROTO);
	CHECK_CONTAINS(err, "unknown type \"RENAMED\"");
}

TEST(watch_timeout_seconds)
{
	long s = -1;

	CHECK(ctl_seconds_parse("0", &s) == 0);
	CHECK_EQ(s, 0);
	CHECK(ctl_seconds_parse("30", &s) == 0);
	CHECK_EQ(s, 30);
	CHECK(ctl_seconds_parse("5s", &s) == 0);
	CHECK_EQ(s, 5);
	CHECK(ctl_seconds_parse("31536000", &s) == 0);
	CHECK_EQ(s, 31536000);
	s = 7;
	CHECK(ctl_seconds_parse("31536001", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("99999999999999999999999", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("s", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("-1", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("1.5", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("5m", &s) == -EINVAL);
	CHECK(ctl_seconds_parse("5ss", &s) == -EINVAL);
	CHECK(ctl_seconds_parse(" 5", &s) == -EINVAL);
	CHECK_EQ(s, 7);
}

TEST(watch_query_is_percent_encoded)
{
	char path[64] = "/api/v1/pods";
	char small[24] = "/api/v1/pods";

	CHECK(ctl_path_add_query(path, sizeof(path), "labelSelector", "app in (a,b)"));
	CHECK_STR(path, "/api/v1/pods?labelSelector=app%20in%20%28a%2Cb%29");
	strcpy(path, "/api/v1/pods?watch=1");
	CHECK(ctl_path_add_query(path, sizeof(path), "resourceVersion", "12"));
	CHECK_STR(path, "/api/v1/pods?watch=1&resourceVersion=12");
	/* too long: false, and the path is left as it was */
	CHECK(!ctl_path_add_query(small, sizeof(small), "fieldSelector", "metadata.name=x"));
	CHECK_STR(small, "/api/v1/pods");
}

TEST(watch_rows_without_header_keep_widths)
{
	const char *head[] = { "NAME", "AGE" };
	const char *row[] = { "a", "5s" };
	struct ctl_table *t = ctl_table_new(2);
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(t != NULL);
	CHECK(ctl_table_add(t, head) == 0);
	CHECK(ctl_table_add(t, row) == 0);
	f = open_memstream(&out, &len);
	CHECK(f != NULL);
	ctl_table_print_from(t, 1, f);
	fclose(f);
	ctl_table_free(t);
	CHECK_STR(out, "a      5s\n");
	free(out);
}
