/*
 * store_copy.c — move a cluster from one store to another (SQLite to etcd):
 * every key, read at one revision of the source, written into an empty
 * destination, whose revision is then carried past the source's and
 * compacted there.
 *
 *   1. the destination holds nothing under the prefix (else -EEXIST)
 *   2. the source's keys at its revision S, in pages (store_range_at), each
 *      page written in transactions of at most COPY_OPS puts and
 *      COPY_BYTES of keys and values, every put guarded by "absent"
 *   3. the source still at S (else -EBUSY: something wrote to it meanwhile,
 *      a controller still running on it, and the copy is not a snapshot)
 *   4. the destination's revision raised past S with writes of one scratch
 *      key (deleted at the end), then compacted at its revision: a client
 *      holding a resourceVersion of the source (<= S) is told 410 by a
 *      controller on the destination and lists again, never resumes in the
 *      middle of another store's history.
 *
 * Values are copied byte for byte (objects are stored without their
 * resourceVersion, which comes from the store's revision when read), so
 * every allocation (node IDs, subnets, VNIDs, cluster IPs, NodePorts,
 * VIPs, pod addresses) is kept: it is a key.
 */
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define COPY_PAGE 512
#define COPY_OPS 64			/* within etcd's 128 per transaction */
#define COPY_BYTES (1024u * 1024)	/* within etcd's 1.5 MiB per request */
#define SCRATCH_KEY "weft-migration-scratch"

static int write_batch(struct store *dst, const struct store_kv *kvs, size_t n)
{
	struct store_cmp cmps[COPY_OPS];
	struct store_op ops[COPY_OPS];
	struct store_txn t = { .cmps = cmps, .ncmps = n, .success = ops, .nsuccess = n };
	struct store_txn_result res;
	int err;

	for (size_t i = 0; i < n; i++) {
		cmps[i] = (struct store_cmp){ kvs[i].key, STORE_CMP_CREATE_REV, STORE_CMP_EQ, 0 };
		ops[i] = (struct store_op){ .type = STORE_OP_PUT, .key = kvs[i].key, .value = kvs[i].value,
					    .value_len = kvs[i].value_len };
	}
	err = store_txn(dst, &t, &res);
	if (err)
		return err;
	return res.succeeded ? 0 : -EEXIST;	/* someone wrote into it meanwhile */
}

/* Write a page, batched by count and size. */
static int write_page(struct store *dst, const struct store_kv_list *l)
{
	size_t from = 0;

	while (from < l->n) {
		size_t n = 0, bytes = 0;
		int err;

		while (from + n < l->n && n < COPY_OPS &&
		       (n == 0 || bytes + strlen(l->kvs[from + n].key) + l->kvs[from + n].value_len <= COPY_BYTES)) {
			bytes += strlen(l->kvs[from + n].key) + l->kvs[from + n].value_len;
			n++;
		}
		err = write_batch(dst, &l->kvs[from], n);
		if (err)
			return err;
		from += n;
	}
	return 0;
}

int store_copy(struct store *src, struct store *dst, const char *prefix, struct store_copy_report *rep, char *err,
	       size_t errlen)
{
	char after[4096 + 1] = "";
	int64_t rev, now;
	size_t n = 0;
	int r;

	memset(rep, 0, sizeof(*rep));
	if ((r = store_count(dst, prefix, &n)) < 0) {
		snprintf(err, errlen, "the destination: cannot count its keys: %s", strerror(-r));
		return r;
	}
	if (n) {
		snprintf(err, errlen, "the destination already holds %zu keys under %s: copy into an empty store", n,
			 prefix);
		return -EEXIST;
	}
	if ((r = store_revision(src, &rev)) < 0) {
		snprintf(err, errlen, "the source: cannot read its revision: %s", strerror(-r));
		return r;
	}
	rep->source_revision = rev;
	for (;;) {
		struct store_kv_list l;

		r = store_range_at(src, prefix, after[0] ? after : NULL, COPY_PAGE, rev, &l, NULL);
		if (r < 0) {
			snprintf(err, errlen, "the source: cannot read its keys at revision %" PRId64 ": %s", rev,
				 strerror(-r));
			return r;
		}
		r = write_page(dst, &l);
		if (r == 0 && l.n)
			snprintf(after, sizeof(after), "%s", l.kvs[l.n - 1].key);
		rep->keys += r == 0 ? l.n : 0;
		if (r < 0 || !l.more) {
			bool done = r == 0;

			store_kv_list_free(&l);
			if (done)
				break;
			snprintf(err, errlen, "the destination: a write failed after %zu keys: %s", rep->keys,
				 r == -EEXIST ? "a key appeared there meanwhile" : strerror(-r));
			return r;
		}
		store_kv_list_free(&l);
	}
	if ((r = store_revision(src, &now)) < 0 || now != rev) {
		snprintf(err, errlen, "the source changed during the copy (revision %" PRId64 ", then %" PRId64
			 "): is a controller still running on it?  Stop it, empty the destination and copy again",
			 rev, now);
		return r < 0 ? r : -EBUSY;
	}
	/* past the source's revision, so that none of its resourceVersions
	 * means anything here but "compacted" */
	for (;;) {
		if ((r = store_revision(dst, &now)) < 0)
			break;
		if (now > rev + 1)
			break;
		r = store_put(dst, SCRATCH_KEY, "", 0, NULL);
		if (r < 0)
			break;
		rep->padding++;
	}
	if (r == 0 && rep->padding)
		r = store_delete(dst, SCRATCH_KEY, NULL);
	if (r == 0)
		r = store_revision(dst, &now);
	if (r == 0)
		r = store_compact(dst, now);
	if (r < 0) {
		snprintf(err, errlen, "the destination: cannot move its revision past %" PRId64 ": %s", rev,
			 strerror(-r));
		return r;
	}
	rep->destination_revision = now;
	return 0;
}
