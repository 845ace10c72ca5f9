/* bucketscan.c: the bucket records of this node by name, from one
 * snapshot, for every API's listing of buckets (GET /v1/buckets, S3's
 * ListBuckets; each writes its own answer).
 *
 * The `buckets` CF is keyed by bucket_part(b) = hash ‖ enc(b), so name
 * order is not key order: a page reads every bucket row and keeps the
 * max smallest names after the query's. Buckets are few next to keys, so
 * that pass is cheap and needs no second index.
 *
 * Invariant: a page's names are sorted and unique, all after q->after,
 * at most p->max of them; its records are the page's own. */
#define _GNU_SOURCE
#include "core.h"
#include "read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rangemap.h"

#define BUCKETS_MAX_PARTS 256

void buckets_page_free(bucket_page *p) {
    for (size_t i = 0; i < p->n; i++)
        objlog__bucket_record__free_unpacked(p->rows[i].r, NULL);
    free(p->rows);
}

/* The partition a bucket's records live on (its route key, empty key). */
static int32_t bucket_partition(const rangemap *rm, const char *name) {
    keybuf k;
    keybuf_init(&k);
    int32_t p = keycodec_route_key(&k, name, strlen(name), (const uint8_t *)"", 0) < 0
                    ? -1 : rangemap_partition(rm, k.data, k.len);
    keybuf_free(&k);
    return p < 0 ? 0 : p;
}

static int bucket_wanted(const bucket_query *q, const Objlog__BucketRecord *r) {
    if (!r->name)
        return 0;
    if (q->prefix && strncmp(r->name, q->prefix, q->prefix_len) != 0)
        return 0;
    if (q->tenant && strcmp(r->tenant ? r->tenant : "", q->tenant) != 0)
        return 0;
    if (q->after && strcmp(r->name, q->after) <= 0)
        return 0;
    return !q->only || q->only[bucket_partition(q->rm, r->name)];
}

/* Keeps r if it is among the p->max smallest names so far (takes it);
 * frees it otherwise. Insertion into a sorted array: pages are small. */
static void page_offer(bucket_page *p, Objlog__BucketRecord *r) {
    size_t i = p->n;
    while (i > 0 && strcmp(r->name, p->rows[i - 1].r->name) < 0)
        i--;
    if (i >= p->max) {
        objlog__bucket_record__free_unpacked(r, NULL);
        return;
    }
    if (p->n == p->max) {
        objlog__bucket_record__free_unpacked(p->rows[p->n - 1].r, NULL);
        p->n--;
    }
    memmove(&p->rows[i + 1], &p->rows[i], (p->n - i) * sizeof(*p->rows));
    p->rows[i].r = r;
    p->n++;
}

/* One pass over the buckets CF at a fresh snapshot. 0, or -1 with err. */
int buckets_scan(objlog_store *s, const bucket_query *q, bucket_page *p,
                 char *err, size_t es) {
    rocksdb_t *db = objlog_store_db(s);
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(db, ro, objlog_store_cf(s, OBJLOG_CF_BUCKETS));
    int rc = 0;
    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn, bn;
        int32_t stake;
        const char *key = rocksdb_iter_key(it, &kn);
        if (objlog_bucket_row_kind(key, kn, &bn, &stake) != 0)
            continue; /* a stake of another partition: the home row says it */
        const char *val = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *r =
            objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)val);
        if (!r) {
            snprintf(err, es, "corrupt bucket record");
            rc = -1;
        } else if (bucket_wanted(q, r)) {
            page_offer(p, r);
        } else {
            objlog__bucket_record__free_unpacked(r, NULL);
        }
    }
    char *ierr = NULL;
    rocksdb_iter_get_error(it, &ierr);
    if (ierr) {
        snprintf(err, es, "%s", ierr);
        rocksdb_free(ierr);
        rc = -1;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(db, snap);
    return rc;
}


int buckets_read_all(http_ctx *c, const bucket_query *want, size_t max, bucket_page *p) {
    int32_t parts[BUCKETS_MAX_PARTS];
    int64_t applied[BUCKETS_MAX_PARTS];
    int np = objlog_materializer_partitions(c->q->m);
    if (np > BUCKETS_MAX_PARTS)
        np = BUCKETS_MAX_PARTS;
    for (int i = 0; i < np; i++)
        parts[i] = i;
    memset(p, 0, sizeof(*p));
    if (fence_wait(c, parts, np, applied) != 0)
        return -1;
    bucket_query q = *want;
    if (q.tenant && !*q.tenant)
        q.tenant = NULL;
    char err[256] = "";
    p->max = max;
    p->rows = calloc(p->max, sizeof(*p->rows));
    int rc = p->rows ? buckets_scan(c->q->store, &q, p, err, sizeof(err)) : -1;
    if (rc == 0)
        return 0;
    http_reply_error(c, 500, "InternalError", "%s", *err ? err : "out of memory");
    buckets_page_free(p);
    return -1;
}
