/*
 * print_test.c — weftctl's cell formats and tables: ages as kubectl prints
 * them, service ports, endpoint lists, selectors, and table alignment.
 */
#include "ctl/print.h"
#include "model/columns.h"

#include <stdlib.h>
#include <string.h>

#include "ctl/table.h"
#include "test.h"

static const char *dur(long long s)
{
	static char buf[32];

	columns_duration(s, buf, sizeof(buf));
	return buf;
}

TEST(print_duration_like_kubectl)
{
	CHECK_STR(dur(-5), "<invalid>");
	CHECK_STR(dur(-1), "0s");
	CHECK_STR(dur(0), "0s");
	CHECK_STR(dur(45), "45s");
	CHECK_STR(dur(119), "119s");
	CHECK_STR(dur(120), "2m");
	CHECK_STR(dur(200), "3m20s");
	CHECK_STR(dur(12 * 60 + 5), "12m");
	CHECK_STR(dur(179 * 60), "179m");
	CHECK_STR(dur(3 * 3600), "3h");
	CHECK_STR(dur(3 * 3600 + 600), "3h10m");
	CHECK_STR(dur(20 * 3600), "20h");
	CHECK_STR(dur(5 * 86400), "5d");
	CHECK_STR(dur(5 * 86400 + 7200), "5d2h");
	CHECK_STR(dur(100 * 86400), "100d");
	CHECK_STR(dur(3LL * 365 * 86400 + 86400), "3y1d");
	CHECK_STR(dur(10LL * 365 * 86400), "10y");
}

TEST(print_time_parse_rfc3339)
{
	time_t t;

	CHECK(columns_time_parse("1970-01-01T00:01:00Z", &t) == 0);
	CHECK_EQ(t, 60);
	CHECK(columns_time_parse("1970-01-01T01:00:00.123456Z", &t) == 0);
	CHECK_EQ(t, 3600);
	CHECK(columns_time_parse("1970-01-01T01:00:00+01:00", &t) == 0);
	CHECK_EQ(t, 0);
	CHECK(columns_time_parse("1970-01-01T01:00:00", &t) < 0);
	CHECK(columns_time_parse("yesterday", &t) < 0);
	CHECK(columns_time_parse("1970-01-01T01:00:00Zjunk", &t) < 0);
}

TEST(print_age_of_object)
{
	json_t *o = json_pack("{s:{s:s}}", "metadata", "creationTimestamp", "2024-05-01T12:00:00Z");
	char buf[32];
	time_t t;

	CHECK(columns_time_parse("2024-05-01T12:00:00Z", &t) == 0);
	columns_age(o, t + 45, buf, sizeof(buf));
	CHECK_STR(buf, "45s");
	columns_age(o, t + 5 * 86400, buf, sizeof(buf));
	CHECK_STR(buf, "5d");
	json_decref(o);
	o = json_object();
	columns_age(o, t, buf, sizeof(buf));
	CHECK_STR(buf, "<unknown>");
	json_decref(o);
}

TEST(print_service_ports)
{
	json_t *svc = json_loads("{\"spec\":{\"ports\":[{\"port\":80,\"nodePort\":30080,\"protocol\":\"TCP\"},"
				 "{\"port\":53,\"protocol\":\"UDP\"},{\"port\":8443}]}}", 0, NULL);
	char buf[256];

	CHECK(svc != NULL);
	columns_service_ports(svc, buf, sizeof(buf));
	CHECK_STR(buf, "80:30080/TCP,53/UDP,8443/TCP");
	json_object_set_new(json_object_get(svc, "spec"), "ports", json_array());
	columns_service_ports(svc, buf, sizeof(buf));
	CHECK_STR(buf, "<none>");
	/* truncation never overruns */
	json_decref(svc);
	svc = json_loads("{\"spec\":{\"ports\":[{\"port\":80},{\"port\":81}]}}", 0, NULL);
	columns_service_ports(svc, buf, 8);
	CHECK_EQ(strlen(buf), 7);
	json_decref(svc);
}

TEST(print_service_external_ip)
{
	json_t *svc = json_loads("{\"spec\":{\"type\":\"LoadBalancer\"},\"status\":{\"loadBalancer\":{}}}", 0, NULL);
	char buf[256];

	CHECK(svc != NULL);
	columns_service_external_ips(svc, buf, sizeof(buf));
	CHECK_STR(buf, "<pending>");
	json_object_set_new(json_object_get(svc, "status"), "loadBalancer",
			    json_loads("{\"ingress\":[{\"ip\":\"192.168.100.1\"}]}", 0, NULL));
	columns_service_external_ips(svc, buf, sizeof(buf));
	CHECK_STR(buf, "192.168.100.1");
	json_object_set_new(json_object_get(svc, "spec"), "type", json_string("ClusterIP"));
	columns_service_external_ips(svc, buf, sizeof(buf));
	CHECK_STR(buf, "<none>");
	json_object_set_new(json_object_get(svc, "spec"), "externalIPs", json_loads("[\"1.2.3.4\"]", 0, NULL));
	columns_service_external_ips(svc, buf, sizeof(buf));
	CHECK_STR(buf, "1.2.3.4");
	json_decref(svc);
}

TEST(print_service_table)
{
	json_t *items = json_loads(
		"[{\"metadata\":{\"name\":\"lb\",\"namespace\":\"red\"},\"spec\":{\"type\":\"LoadBalancer\","
		"\"clusterIP\":\"172.30.0.10\",\"ports\":[{\"port\":80,\"nodePort\":30080,\"protocol\":\"TCP\"}]},"
		"\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.168.100.1\"}]}}},"
		"{\"metadata\":{\"name\":\"web\",\"namespace\":\"red\"},\"spec\":{\"type\":\"ClusterIP\","
		"\"clusterIP\":\"172.30.0.11\",\"ports\":[{\"port\":80,\"protocol\":\"TCP\"},{\"port\":53,\"protocol\":\"UDP\"}]}}]",
		0, NULL);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(items && f);
	CHECK(ctl_print_table(kind_get(KIND_SERVICE), items, false, true, 0, f) == 0);
	fclose(f);
	CHECK_STR(out, "NAMESPACE   NAME   TYPE           CLUSTER-IP    EXTERNAL-IP     PORT(S)         AGE\n"
		       "red         lb     LoadBalancer   172.30.0.10   192.168.100.1   80:30080/TCP    <unknown>\n"
		       "red         web    ClusterIP      172.30.0.11   <none>          80/TCP,53/UDP   <unknown>\n");
	free(out);
	json_decref(items);
}

TEST(print_endpoints_truncated)
{
	json_t *ep = json_loads("{\"subsets\":[{\"addresses\":[{\"ip\":\"10.128.0.5\"},{\"ip\":\"10.128.0.6\"}],"
				"\"ports\":[{\"port\":80},{\"port\":443}]}]}", 0, NULL);
	char buf[256];

	CHECK(ep != NULL);
	columns_endpoint_list(ep, buf, sizeof(buf));
	CHECK_STR(buf, "10.128.0.5:80,10.128.0.6:80,10.128.0.5:443 + 1 more...");
	json_decref(ep);
	ep = json_loads("{\"subsets\":[{\"addresses\":[{\"ip\":\"10.1.1.1\"}]}]}", 0, NULL);
	columns_endpoint_list(ep, buf, sizeof(buf));
	CHECK_STR(buf, "10.1.1.1");
	json_decref(ep);
	ep = json_object();
	columns_endpoint_list(ep, buf, sizeof(buf));
	CHECK_STR(buf, "<none>");
	json_decref(ep);
}

TEST(print_label_selector)
{
	json_t *sel = json_loads("{\"matchLabels\":{\"tier\":\"web\",\"app\":\"a\"},\"matchExpressions\":["
				 "{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"x\",\"y\"]},"
				 "{\"key\":\"k\",\"operator\":\"DoesNotExist\"}]}", 0, NULL);
	char buf[256];

	CHECK(sel != NULL);
	columns_label_selector(sel, buf, sizeof(buf));
	CHECK_STR(buf, "app=a,tier=web,env in (x,y),!k");
	json_decref(sel);
	sel = json_object();
	columns_label_selector(sel, buf, sizeof(buf));
	CHECK_STR(buf, "<none>");
	json_decref(sel);
}

TEST(print_table_aligns_columns)
{
	const char *head[] = { "NAME", "HOST IP", "NODE ID" };
	const char *row1[] = { "node-1", "10.0.0.1", "1" };
	const char *row2[] = { "n2", "10.0.0.22", NULL };
	struct ctl_table *t = ctl_table_new(3);
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(t != NULL);
	CHECK(ctl_table_add(t, head) == 0);
	CHECK(ctl_table_add(t, row1) == 0);
	CHECK(ctl_table_add(t, row2) == 0);
	f = open_memstream(&out, &len);
	CHECK(f != NULL);
	ctl_table_print(t, f);
	fclose(f);
	ctl_table_free(t);
	CHECK_STR(out, "NAME     HOST IP     NODE ID\n"
		       "node-1   10.0.0.1    1\n"
		       "n2       10.0.0.22   \n");
	free(out);
	CHECK(ctl_table_new(0) == NULL);
}

TEST(print_hostsubnet_table)
{
	json_t *items = json_loads("[{\"metadata\":{\"name\":\"node-1\"},\"host\":\"node-1\",\"hostIP\":\"10.0.0.1\","
				   "\"subnet\":\"10.128.0.0/23\",\"nodeID\":1}]", 0, NULL);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(items && f);
	CHECK(ctl_print_table(kind_get(KIND_HOSTSUBNET), items, false, false, 0, f) == 0);
	fclose(f);
	CHECK_STR(out, "NAME     HOST     HOST IP    SUBNET          NODE ID\n"
		       "node-1   node-1   10.0.0.1   10.128.0.0/23   1\n");
	free(out);
	json_decref(items);
}
