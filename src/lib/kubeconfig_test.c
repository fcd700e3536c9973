/*
 * kubeconfig_test.c — what the controller writes reads back; kubectl's
 * shapes (relative paths, tokenFile, namespace, JSON); every refusal names
 * the file and the field; writing is 0600 and only when the text changed.
 */
#include "lib/kubeconfig.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define CA "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

static const struct kubeconfig_admin admin = {
	.cluster = "weft", .user = "admin", .server = "https://127.0.0.1:8443",
	.ca_pem = CA, .ca_len = sizeof(CA) - 1, .token = "0123456789abcdef0123456789abcdef",
};

static int parse(const char *text, struct kubeconfig *kc, char *err, size_t errlen)
{
	return kubeconfig_parse("/etc/weft/kc.yaml", text, strlen(text), kc, err, errlen);
}

TEST(kubeconfig_written_reads_back)
{
	char *text = kubeconfig_format(&admin), err[512] = "";
	struct kubeconfig kc;

	CHECK(text != NULL);
	CHECK_CONTAINS(text, "current-context: admin@weft\n");
	CHECK_CONTAINS(text, "certificate-authority-data: LS0tLS1CRUdJTi");
	CHECK(parse(text, &kc, err, sizeof(err)) == 0);
	free(text);
	CHECK_STR(kc.context, "admin@weft");
	CHECK_STR(kc.server, "https://127.0.0.1:8443");
	CHECK_EQ(kc.ca_len, sizeof(CA) - 1);
	CHECK_STR(kc.ca_data, CA);
	CHECK(kc.ca_file == NULL);
	CHECK_STR(kc.token, admin.token);
	CHECK(!kc.insecure_skip_tls_verify);
	CHECK(kc.namespace == NULL);
	kubeconfig_free(&kc);
	CHECK(kc.token == NULL);
	kubeconfig_free(&kc);	/* a freed one is zeroed: again is harmless */
}

TEST(kubeconfig_without_ca_is_plain_http)
{
	struct kubeconfig_admin a = admin;
	struct kubeconfig kc;
	char *text, err[512];

	a.server = "http://127.0.0.1:8080";
	a.ca_pem = NULL;
	text = kubeconfig_format(&a);
	CHECK(text && !strstr(text, "certificate-authority"));
	CHECK(parse(text, &kc, err, sizeof(err)) == 0);
	free(text);
	CHECK(kc.ca_data == NULL && kc.ca_file == NULL);
	CHECK_STR(kc.server, "http://127.0.0.1:8080");
	kubeconfig_free(&kc);
}

TEST(kubeconfig_kubectl_shapes)
{
	/* several entries, relative paths (to the file's directory), tokenFile, namespace */
	static const char text[] =
		"apiVersion: v1\nkind: Config\n"
		"clusters:\n"
		"- name: other\n  cluster: {server: https://10.0.0.1:6443}\n"
		"- name: lab\n  cluster:\n    server: https://192.168.200.2:8080\n    certificate-authority: pki/ca.crt\n"
		"contexts:\n"
		"- name: a\n  context: {cluster: other, user: nobody}\n"
		"- name: b\n  context: {cluster: lab, user: me, namespace: blue}\n"
		"current-context: b\n"
		"users:\n"
		"- name: me\n  user: {tokenFile: /run/tok}\n";
	struct kubeconfig kc;
	char err[512] = "";

	CHECK(parse(text, &kc, err, sizeof(err)) == 0);
	CHECK_STR(kc.server, "https://192.168.200.2:8080");
	CHECK_STR(kc.ca_file, "/etc/weft/pki/ca.crt");
	CHECK_STR(kc.token_file, "/run/tok");
	CHECK(kc.token == NULL);
	CHECK_STR(kc.namespace, "blue");
	kubeconfig_free(&kc);
}

TEST(kubeconfig_json_and_insecure)
{
	static const char text[] =
		"{\"kind\":\"Config\",\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\",\"context\":"
		"{\"cluster\":\"x\",\"user\":\"u\"}}],\"clusters\":[{\"name\":\"x\",\"cluster\":{\"server\":"
		"\"https://h:1\",\"insecure-skip-tls-verify\":true}}],\"users\":[{\"name\":\"u\",\"user\":"
		"{\"token\":\"t0k\"}}]}";
	struct kubeconfig kc;
	char err[512] = "";

	CHECK(parse(text, &kc, err, sizeof(err)) == 0);
	CHECK(kc.insecure_skip_tls_verify);
	CHECK_STR(kc.token, "t0k");
	kubeconfig_free(&kc);
}

/* Each refusal: the text, and what the message must name. */
TEST(kubeconfig_refusals_name_the_field)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "kind: Config\n", "current-context: not set" },
		{ "kind: Pod\ncurrent-context: a\n", "kind: 'Pod', want Config" },
		{ "current-context: a\ncontexts: []\n", "current-context 'a': no such entry in contexts" },
		{ "current-context: a\ncontexts: [{name: a}]\n", "contexts[a].context: missing" },
		{ "current-context: a\ncontexts: [{name: a, context: {user: u}}]\n", "contexts[a].context.cluster: missing" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n",
		  "contexts[a].context.cluster 'c': no such entry in clusters" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {}}]\n",
		  "clusters[c].cluster.server: missing" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 7}}]\n",
		  "clusters[c].cluster.server: want a string" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: '!!'}}]\n",
		  "clusters[c].cluster.certificate-authority-data: not base64" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: aGVsbG8=}}]\n",
		  "certificate-authority-data: no PEM certificate" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: 'yes'}}]\n",
		  "insecure-skip-tls-verify: want true or false" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: true, "
		  "certificate-authority: /ca}}]\n",
		  "insecure-skip-tls-verify is true and a certificate authority is given" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x'}}]\n",
		  "contexts[a].context.user 'u': no such entry in users" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users: [{name: u, user: {client-certificate-data: AAAA}}]\n",
		  "users[u].user.client-certificate-data: not supported" },
		{ "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n"
		  "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users: [{name: u, user: {token: \"a\\nb\"}}]\n",
		  "users[u].user.token: contains a control character" },
		{ "a: [1\n", "kubeconfig /etc/weft/kc.yaml: line" },
		{ "- 1\n", "want one YAML (or JSON) document that is a mapping" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kubeconfig kc;
		char err[512] = "";

		if (parse(cases[i].text, &kc, err, sizeof(err)) != -EINVAL || !strstr(err, cases[i].want) ||
		    !strstr(err, "/etc/weft/kc.yaml") || kc.server || kc.token) {
			test_fail(__FILE__, __LINE__, "case %zu: got \"%s\", want \"%s\"", i, err, cases[i].want);
			return;
		}
	}
}

TEST(kubeconfig_load_names_a_missing_file)
{
	struct kubeconfig kc;
	char path[512], err[512] = "";

	snprintf(path, sizeof(path), "%s/none", test_tmpdir());
	CHECK(kubeconfig_load(path, &kc, err, sizeof(err)) == -ENOENT);
	CHECK_CONTAINS(err, path);
}

TEST(kubeconfig_write_is_0600_and_only_when_changed)
{
	struct kubeconfig_admin a = admin;
	struct kubeconfig kc;
	struct stat sb;
	char path[512], err[512] = "";
	bool changed = false;

	snprintf(path, sizeof(path), "%s/admin.kubeconfig", test_tmpdir());
	CHECK(kubeconfig_write(path, &a, &changed, err, sizeof(err)) == 0);
	CHECK(changed);
	CHECK(stat(path, &sb) == 0);
	CHECK_EQ(sb.st_mode & 0777, 0600);
	CHECK(chmod(path, 0644) == 0);
	CHECK(kubeconfig_write(path, &a, &changed, err, sizeof(err)) == 0);
	CHECK(!changed);
	CHECK(stat(path, &sb) == 0);
	CHECK_EQ(sb.st_mode & 0777, 0600);
	a.server = "https://10.1.2.3:8443";	/* the listen address changed */
	CHECK(kubeconfig_write(path, &a, &changed, err, sizeof(err)) == 0);
	CHECK(changed);
	CHECK(kubeconfig_load(path, &kc, err, sizeof(err)) == 0);
	CHECK_STR(kc.server, "https://10.1.2.3:8443");
	kubeconfig_free(&kc);
	a.token = "bad\"token";
	CHECK(kubeconfig_write(path, &a, &changed, err, sizeof(err)) == -EINVAL);
}
