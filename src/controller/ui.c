/*
 * ui.c — the cluster page's files by path (ui.h).
 */
#include "controller/ui.h"

#include <string.h>

extern const struct embedded_file controller_ui_files[];
extern const unsigned controller_ui_files_count;

static const struct {
	const char *ext, *type;
} types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
};

const struct embedded_file *ui_file(const char *url, const char **type)
{
	const char *name;

	if (strncmp(url, UI_PREFIX, strlen(UI_PREFIX)))
		return NULL;
	name = url + strlen(UI_PREFIX);
	if (!*name)
		name = "index.html";
	if (strchr(name, '/'))
		return NULL;
	for (unsigned i = 0; i < controller_ui_files_count; i++) {
		const char *dot = strrchr(name, '.');

		if (strcmp(controller_ui_files[i].name, name))
			continue;
		for (size_t t = 0; dot && t < sizeof(types) / sizeof(types[0]); t++)
			if (strcmp(dot, types[t].ext) == 0) {
				*type = types[t].type;
				return &controller_ui_files[i];
			}
		return NULL;	/* a file of a kind not served */
	}
	return NULL;
}
