/*
 * answer.c — an answer's form (answer.h).  The Accept header is read by
 * lib/media.c against the offers below; the index it picks is the form.
 * YAML is lib/yaml.c's emitter on the same JSON value the JSON answer
 * would carry, so the two cannot say different things.
 */
#include "controller/answer.h"
#include "lib/media.h"
#include "lib/yaml.h"

#include <stdlib.h>
#include <string.h>

static const struct media_offer offers[] = {
	{ .type = "application/json" },
	{ .type = "application/yaml" },
	{ .type = "application/json", .as = "Table", .g = "meta.k8s.io", .v = "v1" },
	{ .type = "application/json", .as = "Table", .g = "meta.k8s.io", .v = "v1beta1" },
};
static const enum answer_form form_of[] = { ANSWER_JSON, ANSWER_YAML, ANSWER_TABLE, ANSWER_TABLE };

/* what a watch streams: JSON events (a Table asked for streams objects) */
static const struct media_offer watch_offers[] = {
	{ .type = "application/json" },
	{ .type = "application/json", .as = "Table", .g = "meta.k8s.io", .v = "v1" },
	{ .type = "application/json", .as = "Table", .g = "meta.k8s.io", .v = "v1beta1" },
};

int answer_negotiate(const char *accept, bool watch, enum answer_form *form, struct status *st)
{
	int i = watch ? media_accept_pick(accept, watch_offers, sizeof(watch_offers) / sizeof(watch_offers[0]))
		      : media_accept_pick(accept, offers, sizeof(offers) / sizeof(offers[0]));

	if (i < 0) {
		status_set(st, 406, "NotAcceptable",
			   "the server was not able to produce a response in any of the requested formats (Accept: "
			   "'%.200s'): it serves %s", accept ? accept : "",
			   watch ? "application/json (watch events), application/json;as=Table;g=meta.k8s.io;v=v1"
				 : "application/json, application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1");
		return -1;
	}
	*form = watch ? (i == 0 ? ANSWER_JSON : ANSWER_TABLE) : form_of[i];
	return 0;
}

char *answer_text(const json_t *obj, enum answer_form form, size_t *len, const char **ctype)
{
	char *s;

	if (form == ANSWER_YAML) {
		s = yaml_emit(obj);
		*len = s ? strlen(s) : 0;
		*ctype = "application/yaml";
		return s;
	}
	s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return NULL;
	*len = strlen(s);
	/* one object a line, like the watch stream */
	char *t = realloc(s, *len + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[(*len)++] = '\n';
	t[*len] = 0;
	*ctype = "application/json";
	return t;
}
