/*
 * ui.h — the cluster page's files (src/controller/ui/, built into the
 * controller by scripts/embed.sh), found by the path asked for.  The page
 * holds no cluster data: it reads the API with the token its user gives
 * (docs/ui.md), so its files are served to anyone, as /healthz is.
 */
#ifndef WEFT_CONTROLLER_UI_H
#define WEFT_CONTROLLER_UI_H

#include "lib/embedded.h"

#define UI_PREFIX "/ui/"
/* what the page may load: its own files and the API, nothing else */
#define UI_CSP "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " \
	       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The file of url ("/ui/" is index.html), its media type in *type; NULL
 * when there is none. */
const struct embedded_file *ui_file(const char *url, const char **type);

#endif
