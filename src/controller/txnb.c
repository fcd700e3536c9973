/*
 * txnb.c — a builder for one store transaction.
 *
 * Admission hooks add compares and operations as they plan a write; the
 * builder copies every key and value it is given, so hooks may pass
 * temporaries.  An allocation failure is remembered and reported once, by
 * txnb_commit, which keeps the hooks free of error plumbing for -ENOMEM.
 */
#include "controller/controller.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void txnb_init(struct txnb *b) { memset(b, 0, sizeof(*b)); }

void txnb_free(struct txnb *b)
{
	for (size_t i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	free(b->strings);
	free(b->cmps);
	free(b->ops);
	memset(b, 0, sizeof(*b));
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static const char *keep(struct txnb *b, const char *s, size_t len)
{
	char *c;

	if (b->error || grow((void **)&b->strings, &b->capstrings, b->nstrings, sizeof(char *))) {
		b->error = -ENOMEM;
		return NULL;
	}
	c = malloc(len + 1);
	if (!c) {
		b->error = -ENOMEM;
		return NULL;
	}
	memcpy(c, s, len);
	c[len] = 0;
	b->strings[b->nstrings++] = c;
	return c;
}

void txnb_cmp(struct txnb *b, const char *key, enum store_cmp_target t, enum store_cmp_op op, int64_t v)
{
	const char *k = keep(b, key, strlen(key));

	if (!k || grow((void **)&b->cmps, &b->capcmps, b->ncmps, sizeof(*b->cmps))) {
		b->error = -ENOMEM;
		return;
	}
	b->cmps[b->ncmps++] = (struct store_cmp){ .key = k, .target = t, .op = op, .value = v };
}

void txnb_absent(struct txnb *b, const char *key)
{
	txnb_cmp(b, key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0);
}

void txnb_unchanged(struct txnb *b, const char *key, int64_t mod_rev)
{
	txnb_cmp(b, key, STORE_CMP_MOD_REV, STORE_CMP_EQ, mod_rev);
}

static void add_op(struct txnb *b, enum store_op_type type, const char *key, const char *value, size_t len)
{
	const char *k = keep(b, key, strlen(key));
	const char *v = value ? keep(b, value, len) : NULL;

	if (!k || (value && !v) || grow((void **)&b->ops, &b->capops, b->nops, sizeof(*b->ops))) {
		b->error = -ENOMEM;
		return;
	}
	b->ops[b->nops++] = (struct store_op){ .type = type, .key = k, .value = v, .value_len = len };
}

void txnb_put(struct txnb *b, const char *key, const char *value)
{
	add_op(b, STORE_OP_PUT, key, value, strlen(value));
}

void txnb_put_json(struct txnb *b, const char *key, const json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (!s) {
		b->error = -ENOMEM;
		return;
	}
	add_op(b, STORE_OP_PUT, key, s, strlen(s));
	free(s);
}

void txnb_del(struct txnb *b, const char *key) { add_op(b, STORE_OP_DELETE, key, NULL, 0); }

void txnb_del_prefix(struct txnb *b, const char *prefix)
{
	add_op(b, STORE_OP_DELETE_PREFIX, prefix, NULL, 0);
}

size_t txnb_object_ops(const struct txnb *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->nops; i++) {
		const char *k = b->ops[i].key;
		/* a prefix shorter than OBJ_PREFIX may span objects too */
		if (strncmp(k, OBJ_PREFIX, strlen(OBJ_PREFIX)) == 0 ||
		    (b->ops[i].type == STORE_OP_DELETE_PREFIX && strncmp(OBJ_PREFIX, k, strlen(k)) == 0))
			n++;
	}
	return n;
}

int txnb_commit(struct txnb *b, struct store *s, int64_t *rev)
{
	struct store_txn txn = {
		.cmps = b->cmps, .ncmps = b->ncmps, .success = b->ops, .nsuccess = b->nops,
	};
	struct store_txn_result res;
	int err;

	if (b->error)
		return b->error;
	err = store_txn(s, &txn, &res);
	if (err)
		return err;
	if (rev)
		*rev = res.revision;
	return res.succeeded ? 0 : -EAGAIN;
}
