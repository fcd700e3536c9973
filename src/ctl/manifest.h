/*
 * manifest.h — the objects of `weftctl apply -f` and `delete -f`: files (or
 * stdin, or a directory's *.yaml, *.yml and *.json in name order) read,
 * decoded into documents, and each document given its kind and namespace.
 *
 * Every problem is printed to stderr prefixed with where it is, one line
 * per error:
 *     FILE: line 3, column 5: ...            (the file does not decode)
 *     FILE doc 2: spec.rules[0].host: ...    (a document is wrong)
 * and the load fails as a whole, so that a caller can refuse to act on any
 * document when one of them is wrong.
 *
 * Ownership: ctl_manifest_load fills a struct ctl_manifest that the caller
 * frees with ctl_manifest_free (which accepts a zeroed one).  Documents are
 * owned by it; a struct ctl_doc borrows from it.
 */
#ifndef WEFT_CTL_MANIFEST_H
#define WEFT_CTL_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

#define CTL_MANIFEST_MAX_BYTES (32u << 20)	/* per file */
#define CTL_MANIFEST_MAX_FILES 1024		/* per directory */

struct ctl_doc {
	const char *source;			/* the file as the user named it ("-" is "stdin") */
	size_t index;				/* 1-based, within the source */
	json_t *obj;				/* namespace filled in for namespaced kinds */
	const struct kind_info *kind;		/* NULL when the kind is unknown (validate reports it) */
};

struct ctl_manifest {
	struct ctl_doc *docs;
	size_t ndocs;
	char **sources;				/* owned copies of the file names */
	size_t nsources;
};

struct ctl_manifest_opts {
	const char *ns;				/* -n, or NULL */
	bool validate;				/* model_validate every document (apply) */
};

/*
 * Read and decode every path (a file, "-" for stdin, or a directory).
 * Namespaced documents without a namespace get opts->ns or "default"; one
 * whose namespace differs from an explicit opts->ns is an error.  With
 * opts->validate every document must pass model_validate; otherwise each
 * needs a known kind and a name.  0, or -EINVAL after printing every error
 * (and nothing in *m).
 */
int ctl_manifest_load(char *const *paths, size_t npaths, const struct ctl_manifest_opts *opts,
		      struct ctl_manifest *m) __attribute__((warn_unused_result));
void ctl_manifest_free(struct ctl_manifest *m);

#endif
