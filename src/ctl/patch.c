/*
 * patch.c — `weftctl patch KIND NAME -p PATCH [--type strategic|merge|json]
 * [-n NS]` (or KIND/NAME): one PATCH of one object, as kubectl patch makes
 * it.
 *
 * The patch is JSON, or YAML (kubectl takes both), decoded here so that a
 * typo is reported before anything is sent.  --type picks the media type:
 * strategic (the default, as kubectl's) application/strategic-merge-patch+json,
 * merge application/merge-patch+json, json application/json-patch+json.
 * The server applies it (docs/api.md, "PATCH"); weftctl prints
 * "pod/red/web patched", or the server's refusal and exits 1.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "lib/yaml.h"
#include "model/patch.h"

static const char usage[] = "KIND NAME -p PATCH [--type strategic|merge|json] [-n NAMESPACE]";

static const struct {
	const char *name;
	enum patch_type type;
} types[] = {
	{ "strategic", PATCH_STRATEGIC },
	{ "merge", PATCH_MERGE },
	{ "json", PATCH_JSON },
};

/* --type's word: 0 with *t, or -1 after printing why. */
static int type_of(const char *word, enum patch_type *t)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(word, types[i].name) == 0) {
			*t = types[i].type;
			return 0;
		}
	fprintf(stderr, "error: --type must be strategic, merge or json, not \"%s\"\n", word);
	return -1;
}

/* The patch text as one JSON value (new reference), or NULL after printing why. */
static json_t *decode(const char *text)
{
	json_t **docs = NULL, *v = NULL;
	size_t n = 0;
	char err[512];

	if (yaml_decode_stream(text, strlen(text), &docs, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: the patch is not JSON or YAML: %s\n", err);
		return NULL;
	}
	if (n == 1)
		v = json_incref(docs[0]);
	else
		fprintf(stderr, "error: the patch must be one JSON or YAML document, not %zu\n", n);
	yaml_docs_free(docs, n);
	return v;
}

int ctl_patch(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "patch", required_argument, NULL, 'p' },
		{ "type", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *ns = CTL_DEFAULT_NAMESPACE, *name, *text = NULL;
	enum patch_type type = PATCH_STRATEGIC;
	const struct kind_info *k;
	char path[CTL_PATH_MAX], ref[CTL_REF_MAX];
	struct ctl_reply r = { 0 };
	json_t *body = NULL;
	int c, rc = CTL_EXIT_FAIL;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!ctl_name_ok("namespace", optarg))
				return CTL_EXIT_USAGE;
			ns = optarg;
			break;
		case 'p':
			text = optarg;
			break;
		case 't':
			if (type_of(optarg, &type))
				return ctl_usage(ctl, "patch", usage);
			break;
		case 'h':
			printf("usage: %s patch %s\n", ctl->prog, usage);
			return CTL_EXIT_OK;
		default:
			ctl_bad_flag(c, argv);
			return ctl_usage(ctl, "patch", usage);
		}
	}
	if ((c = ctl_one_object(ctl, "patch", usage, argc, argv, optind, &k, &name)))
		return c;
	if (!text) {
		fprintf(stderr, "error: patch needs -p PATCH\n");
		return ctl_usage(ctl, "patch", usage);
	}
	if (!(body = decode(text)))
		return CTL_EXIT_FAIL;
	if (ctl_call_typed(ctl, "PATCH", ctl_path(k, ns, name, path, sizeof(path)), patch_type_media(type), body, &r) < 0)
		goto out;
	if (!ctl_ok(&r)) {
		ctl_print_server_error(&r);
		goto out;
	}
	if (!ctl_reply_object(&r, "PATCH", path))
		goto out;
	printf("%s patched\n", ctl_ref(k, k->namespaced ? ns : NULL, name, ref, sizeof(ref)));
	rc = CTL_EXIT_OK;
out:
	ctl_reply_free(&r);
	json_decref(body);
	return rc;
}
