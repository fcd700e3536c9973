/*
 * embedded.h — text files built into a binary (scripts/embed.sh makes the
 * C source that defines them from files of the tree; the Makefile says
 * which).  Read-only data of the program: nothing to free.
 */
#ifndef WEFT_EMBEDDED_H
#define WEFT_EMBEDDED_H

#include <stddef.h>

struct embedded_file {
	const char *name;	/* the file's base name ("meta.yaml") */
	const char *text;	/* its bytes, then a NUL */
	size_t len;		/* without the NUL */
};

#endif
