/*
 * layout_test.c — what a state becomes in HAProxy's terms, and its files:
 * routes longest first, weights from ratios, sticky slots, the VSs left
 * out and why, and golden lines of the rendered configuration and maps.
 */
#include "lb/layout.h"
#include "lb/lb_fixture.h"
#include "lb/render.h"
#include "test.h"

#include <errno.h>
#include <sys/stat.h>

static struct lb_layout *build(struct lb_state *s, const struct lb_layout *prev, size_t min, char *report,
			       size_t len)
{
	return lb_layout_build(s, prev, min, report, len);
}

TEST(layout_routes_longest_prefix_first)
{
	json_t *objs[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	struct lb_state *s = fix_state(objs, 1);
	struct lb_layout *l = build(s, NULL, 8, NULL, 0);
	const struct lb_frontend *fe = lb_layout_find_frontend(l, "weft--Shared-L7-0:80");
	char *text = NULL;

	CHECK(l && fe);
	CHECK_EQ(l->n_frontends, 2);
	CHECK_EQ(fe->n_routes, 2);
	CHECK(lb_render_routes(fe, &text) == 0);
	/* /api/v2 is listed after /api in the object; the map has it first */
	CHECK_STR(text, "a.example.com/api/v2 weft--Shared-L7-0:a.example.com_api_v2\n"
			"a.example.com/api weft--Shared-L7-0:a.example.com_api\n");
	free(text);
	/* the SharedL7's HTTPS listener routes only its children */
	CHECK_EQ(lb_layout_find_frontend(l, "weft--Shared-L7-0:443")->n_routes, 0);
	lb_layout_free(l);
	lb_state_free(s);
}

/* naive reference: the route map_beg picks = the first key that prefixes */
static const char *first_prefix(const struct lb_frontend *fe, const char *req)
{
	for (size_t i = 0; i < fe->n_routes; i++)
		if (strncmp(req, fe->routes[i].key, strlen(fe->routes[i].key)) == 0)
			return fe->routes[i].backend;
	return NULL;
}

TEST(layout_first_prefix_is_longest_randomized)
{
	uint64_t rnd = test_seed() | 1;
	static const char *segs[] = { "/a", "/ab", "/b", "/a/b", "/api", "/api/v2", "/api/v2/x", "/" };

	for (int round = 0; round < 200; round++) {
		json_t *vs = fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL);
		json_t *spec = json_object_get(vs, "spec"), *members = json_array(), *pools = json_array();
		struct lb_state *s;
		struct lb_layout *l;
		const struct lb_frontend *fe;
		int n = 1 + (int)test_rnd(&rnd, 8), used = 0;
		bool taken[8] = { false };

		for (int i = 0; i < n; i++) {
			int k = (int)test_rnd(&rnd, 8);
			char pool[16];

			if (taken[k])
				continue;
			taken[k] = true;
			snprintf(pool, sizeof(pool), "p%d", k);
			json_array_append_new(members, json_pack("{s:s, s:s, s:s, s:i}", "pool", pool, "host",
								 "a.example.com", "path", segs[k], "ratio", 1));
			json_array_append_new(pools, json_pack("{s:s, s:s, s:[{s:s, s:i}]}", "name", pool, "protocol",
							       "HTTP", "servers", "ip", "10.0.0.1", "port", 80));
			used++;
		}
		json_object_set_new(spec, "poolGroups", json_pack("[{s:s, s:o}]", "name", "g", "members", members));
		json_object_set_new(spec, "pools", pools);
		s = fix_state(&vs, 1);
		l = s ? build(s, NULL, 8, NULL, 0) : NULL;
		fe = l ? lb_layout_find_frontend(l, "weft--Shared-L7-0:80") : NULL;
		if (!fe || (int)fe->n_routes != used) {
			test_fail(__FILE__, __LINE__, "round %d: %d routes expected", round, used);
			lb_layout_free(l);
			lb_state_free(s);
			return;
		}
		for (int q = 0; q < 20; q++) {
			char req[64];
			const char *got, *want = NULL;
			size_t best = 0;

			snprintf(req, sizeof(req), "a.example.com%s%s", segs[test_rnd(&rnd, 8)],
				 test_rnd(&rnd, 2) ? "/tail" : "");
			/* reference: the longest key that prefixes */
			for (size_t i = 0; i < fe->n_routes; i++) {
				size_t kl = strlen(fe->routes[i].key);

				if (strncmp(req, fe->routes[i].key, kl) == 0 && kl > best) {
					best = kl;
					want = fe->routes[i].backend;
				}
			}
			got = first_prefix(fe, req);
			if ((got || want) && (!got || !want || strcmp(got, want) != 0)) {
				test_fail(__FILE__, __LINE__, "%s: first %s, longest %s", req, got ? got : "-",
					  want ? want : "-");
				q = 20;
				round = 200;
			}
		}
		lb_layout_free(l);
		lb_state_free(s);
	}
}

TEST(layout_weights_from_ratios)
{
	json_t *vs = fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL);
	json_t *spec = json_object_get(vs, "spec");
	struct lb_state *s;
	struct lb_layout *l;
	const struct lb_backend *be;

	/* one route, three pools: 75 over 1 server, 25 over 3, 0 over 1 */
	json_object_set_new(spec, "poolGroups",
			    json_pack("[{s:s, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}, {s:s, s:s, s:i}]}]", "name", "g",
				      "members", "pool", "a", "host", "w.example.com", "ratio", 75, "pool", "b", "host",
				      "w.example.com", "ratio", 25, "pool", "c", "host", "w.example.com", "ratio", 0));
	json_object_set_new(spec, "pools",
			    json_pack("[{s:s, s:s, s:o}, {s:s, s:s, s:o}, {s:s, s:s, s:o}]", "name", "a", "protocol",
				      "HTTP", "servers", fix_servers(1, 1, 1), "name", "b", "protocol", "HTTP", "servers",
				      fix_servers(2, 3, 7), "name", "c", "protocol", "HTTP", "servers",
				      fix_servers(3, 1, 1)));
	s = fix_state(&vs, 1);
	CHECK(s);
	l = build(s, NULL, 8, NULL, 0);
	CHECK(l);
	be = lb_layout_find_backend(l, "g:w.example.com");
	CHECK(be && be->n_pools == 3);
	CHECK_EQ(be->pools[0].slots[0].weight, 256);
	CHECK_EQ(be->pools[1].slots[0].weight, 28);	/* 256 * (25/3) / 75 */
	CHECK_EQ(be->pools[1].slots[2].weight, 28);
	CHECK_EQ(be->pools[1].slots[3].weight, 0);	/* a free slot */
	CHECK(be->pools[2].slots[0].used);
	CHECK_EQ(be->pools[2].slots[0].weight, 0);	/* ratio 0: no new connections */
	CHECK_EQ(be->pools[1].n_slots, 8);
	lb_layout_free(l);
	lb_state_free(s);
}

TEST(layout_slots_are_sticky)
{
	json_t *a[] = { fix_shared("192.168.202.1", fix_servers(1, 5, 0x1f), NULL) };	/* .1-.5 */
	json_t *b[] = { fix_shared("192.168.202.1", fix_servers(1, 7, 0x5d), NULL) };	/* .1 .3 .4 .5 .7 */
	struct lb_state *sa = fix_state(a, 1), *sb = fix_state(b, 1);
	struct lb_layout *la = build(sa, NULL, 8, NULL, 0), *lb = build(sb, la, 8, NULL, 0), *fresh;
	const struct lb_slot_pool *pa, *pb;

	CHECK(la && lb);
	pa = &lb_layout_find_backend(la, "weft--Shared-L7-0:a.example.com_api")->pools[0];
	pb = &lb_layout_find_backend(lb, "weft--Shared-L7-0:a.example.com_api")->pools[0];
	CHECK_EQ(pa->slots[1].ip & 255, 2);
	/* .2 left; .7 takes its slot; the others stay where they were */
	CHECK_EQ(pb->slots[0].ip & 255, 1);
	CHECK_EQ(pb->slots[1].ip & 255, 7);
	CHECK_EQ(pb->slots[2].ip & 255, 3);
	CHECK_EQ(pb->slots[4].ip & 255, 5);
	CHECK(!pb->slots[5].used);
	/* fresh: sorted */
	fresh = build(sb, NULL, 8, NULL, 0);
	CHECK_EQ(lb_layout_find_backend(fresh, "weft--Shared-L7-0:a.example.com_api")->pools[0].slots[4].ip & 255, 7);
	lb_layout_free(fresh);
	/* grows past the slots: doubles; with a big minimum, stays */
	lb_layout_free(lb);
	lb_state_free(sb);
	b[0] = fix_shared("192.168.202.1", fix_servers(1, 20, 0xfffff), NULL);
	sb = fix_state(b, 1);
	lb = build(sb, la, 8, NULL, 0);
	CHECK_EQ(lb_layout_find_backend(lb, "weft--Shared-L7-0:a.example.com_api")->pools[0].n_slots, 32);
	lb_layout_free(lb);
	lb = build(sb, NULL, 64, NULL, 0);
	CHECK_EQ(lb_layout_find_backend(lb, "weft--Shared-L7-0:a.example.com_api")->pools[0].n_slots, 64);
	CHECK(!build(sb, NULL, 12, NULL, 0) && errno == EINVAL);
	lb_layout_free(lb);
	lb_layout_free(la);
	lb_state_free(sa);
	lb_state_free(sb);
}

TEST(layout_leaves_out_what_cannot_run)
{
	json_t *objs[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL),
			   fix_child("s.example.com", "missing-cert"), fix_child("t.example.com", "tls"),
			   fix_cert("tls", "T"), fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	struct lb_state *s;
	struct lb_layout *l;
	char report[2048] = "";

	/* a second VS on the same VIP:port under another name */
	json_object_set_new(json_object_get(objs[4], "metadata"), "name", json_string("weft--Shared-L7-1"));
	json_object_set_new(json_object_get(json_object_get(objs[4], "spec"), "poolGroups"), "x", NULL);
	s = fix_state(objs, 5);
	CHECK(s);
	l = build(s, NULL, 8, report, sizeof(report));
	CHECK(l);
	CHECK_CONTAINS(report, "VirtualService weft--s.example.com: left out: SSLKeyAndCertificate missing-cert not found");
	CHECK_CONTAINS(report, "VirtualService weft--Shared-L7-1: left out: VIP 192.168.202.1 port 80 is taken");
	CHECK_EQ(lb_layout_find_frontend(l, "weft--Shared-L7-0:443")->n_snis, 1);
	CHECK_STR(lb_layout_find_frontend(l, "weft--Shared-L7-0:443")->snis[0].file,
		  "certs/weft--Shared-L7-0:443/t.example.com.pem");
	CHECK(lb_layout_find_backend(l, "weft--shop-t.example.com-s:t.example.com"));
	lb_layout_free(l);
	lb_state_free(s);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

TEST(render_golden_lines)
{
	json_t *objs[] = { fix_shared("192.168.202.1", fix_servers(1, 2, 3), "s.example.com"),
			   fix_child("t.example.com", "tls"), fix_cert("tls", "T") };
	struct lb_state *s = fix_state(objs, 3);
	struct lb_layout *l = build(s, NULL, 8, NULL, 0);
	char *cfg = NULL, *structure = NULL, *again = NULL, *redirects = NULL, *crtlist = NULL;

	CHECK(l);
	CHECK(lb_render_cfg(l, "/state", false, &cfg) == 0 && lb_render_cfg(l, "/state", true, &structure) == 0);
	CHECK(lb_render_cfg(l, "/state", false, &again) == 0);
	CHECK_STR(cfg, again);	/* deterministic */
	CHECK(has_line(cfg, "\tstats socket /state/haproxy.sock mode 600 level admin expose-fd listeners"));
	CHECK(has_line(cfg, "\thard-stop-after 30s"));
	CHECK(has_line(cfg, "frontend weft--Shared-L7-0:80"));
	CHECK(has_line(cfg, "\tbind 192.168.202.1:80"));
	CHECK(has_line(cfg, "\tbind 192.168.202.1:443 ssl crt-list /state/certs/weft--Shared-L7-0:443.crtlist "
			    "strict-sni alpn h2,http/1.1"));
	CHECK(has_line(cfg, "\toption forwardfor"));
	CHECK(has_line(cfg, "\tuse_backend %[var(txn.route),map_beg(/state/maps/weft--Shared-L7-0:80.routes.map)]"));
	CHECK(has_line(cfg, "backend weft--Shared-L7-0:a.example.com_api"));
	CHECK(has_line(cfg, "\toption httpchk GET /"));
	CHECK(has_line(cfg, "\tserver api:1 10.0.1.1:8080 weight 256 check inter 2s fall 2 rise 1"));
	CHECK(has_line(cfg, "\tserver api:3 0.0.0.0:0 weight 0 disabled check inter 2s fall 2 rise 1"));
	CHECK(has_line(cfg, "\tserver api:8 0.0.0.0:0 weight 0 disabled check inter 2s fall 2 rise 1"));
	CHECK(!strstr(cfg, "server api:9 "));
	/* one line per pool, whatever its slot count: slots added at run
	 * time are no change of structure */
	CHECK(has_line(structure, "\tserver api:* SLOTS check inter 2s fall 2 rise 1"));
	CHECK(!strstr(structure, "server api:1 ") && !strstr(structure, "server api:2 "));
	CHECK(!strstr(cfg, "default-server"));	/* "add server" would not inherit it */
	CHECK(has_line(cfg, "\tbalance roundrobin"));	/* an algorithm that takes added servers */
	CHECK(!strstr(structure, "10.0.1.1"));
	CHECK(lb_render_redirects(lb_layout_find_frontend(l, "weft--Shared-L7-0:80"), &redirects) == 0);
	CHECK_STR(redirects, "s.example.com 302~https://s.example.com\n");
	CHECK(lb_render_crtlist(lb_layout_find_frontend(l, "weft--Shared-L7-0:443"), "/state", &crtlist) == 0);
	CHECK_STR(crtlist, "/state/certs/weft--Shared-L7-0:443/t.example.com.pem t.example.com\n");
	free(cfg);
	free(structure);
	free(again);
	free(redirects);
	free(crtlist);
	lb_layout_free(l);
	lb_state_free(s);
}

TEST(render_writes_and_sweeps)
{
	json_t *objs[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL), fix_child("t.example.com", "tls"),
			   fix_cert("tls", "T") };
	json_t *less[] = { fix_shared("192.168.202.1", fix_servers(1, 1, 1), NULL) };
	struct lb_state *s = fix_state(objs, 3), *s2 = fix_state(less, 1);
	struct lb_layout *l = build(s, NULL, 8, NULL, 0), *l2 = build(s2, NULL, 8, NULL, 0);
	char path[1024], err[256];
	struct stat st;

	CHECK(lb_render_write(l, test_tmpdir(), err, sizeof(err)) == 0);
	CHECK(lb_render_matches(l, test_tmpdir()));
	CHECK(!lb_render_matches(l2, test_tmpdir()));
	snprintf(path, sizeof(path), "%s/certs/weft--Shared-L7-0:443/t.example.com.pem", test_tmpdir());
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(lb_render_write(l2, test_tmpdir(), err, sizeof(err)) == 0);
	CHECK(stat(path, &st) != 0);	/* swept */
	CHECK(lb_render_matches(l2, test_tmpdir()));
	lb_layout_free(l);
	lb_layout_free(l2);
	lb_state_free(s);
	lb_state_free(s2);
}
