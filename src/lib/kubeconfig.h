/*
 * kubeconfig.h — kubectl's client configuration file (apiVersion v1, kind
 * Config), as weft's clients read it and weft-controller writes it.
 *
 * Reading follows kubectl for the parts weft uses: current-context names
 * an entry of contexts; its context names a cluster (server,
 * certificate-authority-data or certificate-authority, insecure-skip-tls-
 * verify) and a user (token or tokenFile) and may give a namespace.
 * Relative paths in the file are relative to the file's directory, as
 * kubectl resolves them.  Other ways to authenticate (client certificates,
 * exec plugins, auth providers, basic auth) are refused by name: a user
 * that has only those cannot talk to weft.
 *
 * Errors name the file and the field: "kubeconfig /root/.kube/config:
 * clusters[weft].cluster.server: missing".
 *
 * Secrets: the token is in kc->token only; kubeconfig_free wipes it, and
 * the reader wipes the file's text and every string of the parsed tree
 * before freeing them.  (libfyaml's own parse buffers are freed by
 * libfyaml, unwiped.)  kubeconfig_format's text holds the token: its
 * caller wipes it.
 *
 * Ownership: kubeconfig_load fills a caller-owned struct with malloc'd
 * fields; kubeconfig_free frees them and zeroes the struct (it accepts a
 * zeroed struct).  Everything the other calls are given is borrowed.
 */
#ifndef WEFT_KUBECONFIG_H
#define WEFT_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define KUBECONFIG_MAX_BYTES (1u << 20)

struct kubeconfig {
	char *path;			/* the file read */
	char *context;			/* current-context */
	char *server;			/* clusters[].cluster.server */
	char *ca_data;			/* certificate-authority-data, decoded (PEM); NULL if absent */
	size_t ca_len;
	char *ca_file;			/* certificate-authority, resolved; NULL if absent */
	bool insecure_skip_tls_verify;	/* only when the file says true */
	char *token;			/* users[].user.token; NULL if absent */
	char *token_file;		/* users[].user.tokenFile, resolved; NULL if absent */
	char *namespace;		/* contexts[].context.namespace; NULL if absent */
};

/* Read and interpret path.  0, or -errno of reading it (-ENOENT: it does
 * not exist), -EINVAL (not a usable kubeconfig), -ENOMEM; err says which
 * file and field. */
int kubeconfig_load(const char *path, struct kubeconfig *kc, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* The same from text in memory; path is for messages and relative paths. */
int kubeconfig_parse(const char *path, const char *text, size_t len, struct kubeconfig *kc, char *err,
		     size_t errlen) __attribute__((warn_unused_result));
void kubeconfig_free(struct kubeconfig *kc);

/* What weft-controller writes: one cluster, one user, one context using
 * them (named USER@CLUSTER), which is the current one. */
struct kubeconfig_admin {
	const char *cluster;		/* "weft" */
	const char *user;		/* "admin" */
	const char *server;		/* "https://127.0.0.1:8080" */
	const char *ca_pem;		/* NULL: no certificate-authority-data (http) */
	size_t ca_len;
	const char *token;
};

/* The file's text, malloc'd (NULL with errno set): it holds the token, so
 * the caller wipes it before free. */
char *kubeconfig_format(const struct kubeconfig_admin *a);

/* Write path with mode 0600 (a temporary file renamed over it) unless it
 * holds this text already, in which case only its mode is made 0600.
 * *changed says whether it was written.  0 or -errno, err naming path. */
int kubeconfig_write(const char *path, const struct kubeconfig_admin *a, bool *changed, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
