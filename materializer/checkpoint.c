/* checkpoint.c: one partition's rows out of a store as a framed stream,
 * and back into another store (checkpoint.h draws the format and the
 * crash rule). Owns which row belongs to which partition (ckpt_row_part),
 * the export from one snapshot, the incremental importer and the purge of
 * a partition.
 *
 * Invariant: outside an import, partition p of a store holds either no
 * row at all or the rows of a whole checkpoint plus whatever the log
 * applied after it; a store holding p's import marker is never read for
 * p (objlog_store_open purges it first). Rows of other partitions are
 * never written or deleted: the importer refuses any row the range map
 * does not give to p, so a wrong or hostile stream cannot reach them. */
#include "blobrefs.h"
#include "checkpoint.h"
#include "ckptint.h"
#include "feed.h"

#include "matlog.h"
#include "rows.h"
#include "store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>



/* Per-partition meta rows: name ‖ be32(p). */
const char *const ckpt_meta_names[CKPT_META_N] = {
    APPLY_META_APPLIED, APPLY_META_DLQ, APPLY_META_OUTCOMES_LOW, APPLY_META_RANGEMAP};

static void put_be16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* p of a meta row name ‖ be32(p), -1 for any other meta row. */
static int ckpt_meta_part(const uint8_t *k, size_t kn) {
    for (size_t i = 0; i < CKPT_META_N; i++) {
        size_t n = strlen(ckpt_meta_names[i]);
        if (kn == n + 4 && memcmp(k, ckpt_meta_names[i], n) == 0)
            return (int32_t)apply_get_be32(k + n);
    }
    return -1;
}

/* The partition row (cf, k, v) belongs to, -1 for none (the store's own
 * meta rows, malformed rows). */
int ckpt_row_part(const rangemap *rm, int cf, const uint8_t *k, size_t kn) {
    switch (cf) {
    case OBJLOG_CF_BUCKETS: {
        /* a stake row names its partition; a home row routes */
        size_t bn;
        int32_t p;
        int kind = objlog_bucket_row_kind(k, kn, &bn, &p);
        return kind < 0 ? -1 : kind == 1 ? p : rangemap_partition(rm, k, kn);
    }
    case OBJLOG_CF_VERSIONS:
    case OBJLOG_CF_OBJECTS:
    case OBJLOG_CF_UPLOADS:
    case OBJLOG_CF_INDEXES:
        return kn ? rangemap_partition(rm, k, kn) : -1;
    case OBJLOG_CF_STATS:
        return objlog_stats_row_partition(rm, k, kn);
    case OBJLOG_CF_OUTCOMES:
        /* 'o' rows; 'x' and 'i' rows, a handoff's (dedup.h); 'n' rows, the
         * change feed's (feed.h) */
        if ((kn == APPLY_OUTCOME_KEY_LEN && k[0] == 'o') ||
            (kn >= APPLY_OUTCOME_KEY_LEN && (k[0] == 'x' || k[0] == 'i')) ||
            (kn == FEED_KEY_LEN && k[0] == 'n'))
            return (int32_t)apply_get_be32(k + 1);
        return -1;
    case OBJLOG_CF_META:
        return ckpt_meta_part(k, kn);
    case OBJLOG_CF_BLOBS: {
        /* the partition of the key whose row names the blob (blobrefs.h) */
        const uint8_t *row;
        size_t rn;
        return blobrefs_parse(k, kn, NULL, &row, &rn) < 0 ? -1
                                                          : rangemap_partition(rm, row, rn);
    }
    default:
        return -1;
    }
}

/* CFs whose rows are p's exactly when p's ranges hold their keys. Not
 * `buckets`: a stake row of p sits in the range of its bucket's home. */
static int ckpt_is_route_cf(int cf) {
    return cf == OBJLOG_CF_VERSIONS || cf == OBJLOG_CF_OBJECTS ||
           cf == OBJLOG_CF_UPLOADS || cf == OBJLOG_CF_INDEXES;
}

int ckpt_iter_error(rocksdb_iterator_t *it, const char *what, char *errstr,
                           size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (!err)
        return 0;
    snprintf(errstr, es, "%s: %s", what, err);
    rocksdb_free(err);
    return -1;
}

int ckpt_write(objlog_store *s, rocksdb_writebatch_t *wb, int sync, char *errstr,
                      size_t es) {
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wo, sync);
    char *err = NULL;
    rocksdb_write(objlog_store_db(s), wo, wb, &err);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_writebatch_clear(wb);
    /* Even a failed write may have changed rows an index caches. */
    objlog_store_outcomes_changed(s);
    if (!err)
        return 0;
    snprintf(errstr, es, "store write: %s", err);
    rocksdb_free(err);
    return -1;
}

size_t ckpt_marker_key(uint8_t out[APPLY_META_KEY_MAX], int32_t p) {
    return apply_meta_key(out, OBJLOG_CKPT_META_IMPORTING, p);
}

/* The meta row key of s under ro: malloc'd value or NULL (absent, or -1
 * in *rc on a read error). */
char *ckpt_meta_get(objlog_store *s, rocksdb_readoptions_t *ro, const void *key,
                           size_t kn, size_t *vn, int *rc, char *errstr, size_t es) {
    char *err = NULL;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             key, kn, vn, &err);
    if (err) {
        snprintf(errstr, es, "store read: %s", err);
        rocksdb_free(err);
        *rc = -1;
        return NULL;
    }
    return v;
}

/* ---- purge ---- */

/* A range delete of [start, end) in h; end NULL: to just past the CF's
 * last key (nothing when every key sorts before start). */
static void ckpt_delete_span(objlog_store *s, rocksdb_column_family_handle_t *h,
                             const uint8_t *start, size_t sl, const uint8_t *end, size_t el,
                             rocksdb_writebatch_t *wb) {
    if (end) {
        rocksdb_writebatch_delete_range_cf(wb, h, (const char *)start, sl, (const char *)end,
                                           el);
        return;
    }
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, h);
    rocksdb_iter_seek_to_last(it);
    if (rocksdb_iter_valid(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        keybuf last;
        keybuf_init(&last);
        int c = sl ? memcmp(k, start, kn < sl ? kn : sl) : 1;
        int past = c > 0 || (c == 0 && kn >= sl);
        if (past && keybuf_append(&last, k, kn) == 0 && keybuf_append(&last, "", 1) == 0)
            rocksdb_writebatch_delete_range_cf(wb, h, (const char *)start, sl,
                                               (const char *)last.data, last.len);
        keybuf_free(&last);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

/* Range deletes of p's ranges in the route-keyed CFs. */
static void ckpt_purge_routes(objlog_store *s, const rangemap *rm, int32_t p,
                              rocksdb_writebatch_t *wb) {
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
        if (!ckpt_is_route_cf(cf))
            continue;
        rocksdb_column_family_handle_t *h = objlog_store_cf(s, (objlog_cf)cf);
        for (int i = 0; i < rangemap_count(rm); i++) {
            const uint8_t *start, *end;
            size_t sl, el;
            int part;
            rangemap_entry(rm, i, &start, &sl, &end, &el, &part);
            if (part == p)
                ckpt_delete_span(s, h, start, sl, end, el, wb);
        }
    }
}

/* Which rows a purge scan deletes: p's under rm, or (r set) those a
 * range stream of r carries. */
typedef struct ckpt_sel {
    const rangemap *rm;
    int32_t p;
    const ckpt_range *r;
} ckpt_sel;

static int ckpt_key_cmp(const uint8_t *x, size_t xn, const uint8_t *y, size_t yn) {
    size_t m = xn < yn ? xn : yn;
    int c = m ? memcmp(x, y, m) : 0;
    return c ? c : (xn < yn ? -1 : xn > yn);
}

/* Point deletes of the rows of cf that sel takes, from `from` on while
 * keys start with from[0..keep) and, with stop, sort below it; wb is
 * written whenever it grows past CKPT_BATCH_BYTES (*staged counts). */
static int ckpt_purge_scan(objlog_store *s, const ckpt_sel *sel, objlog_cf cf,
                           const uint8_t *from, size_t fn, size_t keep, const uint8_t *stop,
                           size_t stn, rocksdb_writebatch_t *wb, size_t *staged,
                           char *errstr, size_t es) {
    rocksdb_column_family_handle_t *h = objlog_store_cf(s, cf);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, h);
    int rc = 0;
    for (rocksdb_iter_seek(it, (const char *)from, fn); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn < keep || memcmp(k, from, keep) != 0 ||
            (stop && ckpt_key_cmp(k, kn, stop, stn) >= 0))
            break;
        if (sel->r ? ckpt_range_row(sel->r, cf, k, kn) != 1
                   : ckpt_row_part(sel->rm, cf, k, kn) != sel->p)
            continue;
        rocksdb_writebatch_delete_cf(wb, h, (const char *)k, kn);
        *staged += kn + 16;
        if (*staged >= CKPT_BATCH_BYTES) {
            rc = ckpt_write(s, wb, 0, errstr, es);
            *staged = 0;
        }
    }
    if (rc == 0)
        rc = ckpt_iter_error(it, "purge scan", errstr, es);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return rc;
}

/* Stages (and writes, past CKPT_BATCH_BYTES) the deletion of every row of
 * p into wb, after whatever wb already holds; the caller writes the rest.
 * The first write carries what wb held before (an import's marker). */
int ckpt_purge_into(objlog_store *s, const rangemap *rm, int32_t p,
                           rocksdb_writebatch_t *wb, char *errstr, size_t es) {
    size_t staged = 0;
    ckpt_purge_routes(s, rm, p, wb);
    static const char kinds[] = {'i', 'n', 'o', 'x'};
    for (size_t i = 0; i < sizeof(kinds); i++) {
        uint8_t lo[5] = {(uint8_t)kinds[i]}, hi[5] = {(uint8_t)kinds[i]};
        apply_put_be32(lo + 1, (uint32_t)p);
        apply_put_be32(hi + 1, (uint32_t)p + 1);
        rocksdb_writebatch_delete_range_cf(wb, objlog_store_cf(s, OBJLOG_CF_OUTCOMES),
                                           (const char *)lo, 5, (const char *)hi, 5);
    }
    uint8_t mk[APPLY_META_KEY_MAX];
    for (size_t i = 0; i < CKPT_META_N; i++) {
        size_t n = apply_meta_key(mk, ckpt_meta_names[i], p);
        rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META),
                                     (const char *)mk, n);
    }
    size_t bn = apply_meta_key(mk, OBJLOG_CKPT_META_BASE, p);
    rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), (const char *)mk, bn);
    ckpt_sel sel = {.rm = rm, .p = p};
    const uint8_t *all = (const uint8_t *)"";
    if (ckpt_purge_scan(s, &sel, OBJLOG_CF_BUCKETS, all, 0, 0, NULL, 0, wb, &staged, errstr,
                        es) < 0 ||
        ckpt_purge_scan(s, &sel, OBJLOG_CF_BLOBS, all, 0, 0, NULL, 0, wb, &staged, errstr,
                        es) < 0)
        return -1;
    return ckpt_purge_scan(s, &sel, OBJLOG_CF_STATS, all, 0, 0, NULL, 0, wb, &staged, errstr,
                           es);
}

int objlog_ckpt_purge(objlog_store *s, const rangemap *rm, int32_t p, char *errstr,
                      size_t errstr_size) {
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc = ckpt_purge_into(s, rm, p, wb, errstr, errstr_size);
    if (rc == 0) {
        uint8_t mk[APPLY_META_KEY_MAX];
        size_t n = ckpt_marker_key(mk, p);
        rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META),
                                     (const char *)mk, n);
        rc = ckpt_write(s, wb, 1, errstr, errstr_size);
    }
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int objlog_ckpt_importing(objlog_store *s, int32_t p) {
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t n = ckpt_marker_key(mk, p), vn = 0;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             (const char *)mk, n, &vn, &err);
    rocksdb_readoptions_destroy(ro);
    if (err) {
        rocksdb_free(err);
        return -1;
    }
    int found = v != NULL;
    rocksdb_free(v);
    return found;
}

/* One marker: the partition and the range map it was imported under. */
static int ckpt_recover_one(objlog_store *s, const char *k, size_t kn, const char *v,
                            size_t vn, char *errstr, size_t es) {
    size_t mn = strlen(OBJLOG_CKPT_META_IMPORTING);
    int32_t p = (int32_t)apply_get_be32((const uint8_t *)k + mn);
    if (kn != mn + 4 || vn < 4 || apply_get_be32((const uint8_t *)v) != CKPT_MARKER_VERSION) {
        snprintf(errstr, es, "import marker of partition %d is corrupt", p);
        return -1;
    }
    char why[256];
    rangemap *rm = rangemap_decode((const uint8_t *)v + 4, vn - 4, why, sizeof(why));
    if (!rm) {
        snprintf(errstr, es, "import marker of partition %d: range map: %s", p, why);
        return -1;
    }
    int rc = objlog_ckpt_purge(s, rm, p, errstr, es);
    rangemap_destroy(rm);
    if (rc == 0)
        matlog_printf(store_log(s), MATLOG_WARNING, "checkpoint",
                        "partition %d: an import of a checkpoint did not finish (the "
                      "process stopped during it); its rows were removed, the "
                      "partition starts empty", p);
    return rc;
}

/* A range import that did not finish: its rows go. */
static int ckpt_recover_range(objlog_store *s, const char *k, size_t kn, const char *v,
                              size_t vn, char *errstr, size_t es) {
    const uint8_t *b = (const uint8_t *)v;
    size_t mn = strlen("rimporting");
    ckpt_range r = {.from = -1};
    if (kn == mn + 12 && vn >= 8) {
        r.from = (int32_t)apply_get_be32((const uint8_t *)k + mn);
        r.from_off = (int64_t)apply_get_be64((const uint8_t *)k + mn + 4);
        r.sn = apply_get_be32(b);
        if (r.sn <= vn - 8 && apply_get_be32(b + 4 + r.sn) == vn - 8 - r.sn) {
            r.start = b + 4;
            r.en = vn - 8 - r.sn;
            r.end = b + 8 + r.sn;
        }
    }
    if (!r.start) {
        snprintf(errstr, es, "a range import marker is corrupt");
        return -1;
    }
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    int rc = ckpt_range_purge_into(s, &r, wb, errstr, es);
    if (rc == 0) {
        rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), k, kn);
        rc = ckpt_write(s, wb, 1, errstr, es);
    }
    rocksdb_writebatch_destroy(wb);
    if (rc == 0)
        matlog_printf(store_log(s), MATLOG_WARNING, "checkpoint",
                      "the import of the range partition %d gave away at offset %lld did not "
                      "finish; its rows were removed (it is imported again)", r.from,
                      (long long)r.from_off);
    return rc;
}

typedef int (*ckpt_recover_fn)(objlog_store *s, const char *k, size_t kn, const char *v,
                               size_t vn, char *errstr, size_t es);

/* fn for every meta row whose key starts with prefix: how many, or -1. */
static int ckpt_recover_each(objlog_store *s, const char *prefix, ckpt_recover_fn fn,
                             char *errstr, size_t errstr_size) {
    size_t pn = strlen(prefix);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                        objlog_store_cf(s, OBJLOG_CF_META));
    int n = 0;
    for (rocksdb_iter_seek(it, prefix, pn); n >= 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < pn || memcmp(k, prefix, pn) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        n = fn(s, k, kn, v, vn, errstr, errstr_size) < 0 ? -1 : n + 1;
    }
    if (n >= 0 && ckpt_iter_error(it, "recover", errstr, errstr_size) < 0)
        n = -1;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

int objlog_ckpt_recover(objlog_store *s, char *errstr, size_t errstr_size) {
    if (ckpt_recover_each(s, "rimporting", ckpt_recover_range, errstr, errstr_size) < 0)
        return -1;
    return ckpt_recover_each(s, OBJLOG_CKPT_META_IMPORTING, ckpt_recover_one, errstr,
                             errstr_size);
}

/* ---- a range as of its handoff ---- */


static int ckpt_in_range(const ckpt_range *r, const uint8_t *k, size_t kn) {
    return ckpt_key_cmp(k, kn, r->start, r->sn) >= 0 &&
           (!r->en || ckpt_key_cmp(k, kn, r->end, r->en) < 0);
}

/* 'x' be32(from) be64(from_off): the RangeOut's marker, and the prefix of
 * its request records. */
static void ckpt_range_prefix(uint8_t out[APPLY_OUTCOME_KEY_LEN], const ckpt_range *r) {
    out[0] = 'x';
    apply_put_be32(out + 1, (uint32_t)r->from);
    apply_put_be64(out + 5, (uint64_t)r->from_off);
}

int ckpt_range_row(const ckpt_range *r, int cf, const uint8_t *k, size_t kn) {
    if (ckpt_is_route_cf(cf))
        return kn > 0 && ckpt_in_range(r, k, kn);
    if (cf == OBJLOG_CF_BUCKETS) {
        size_t bn;
        int32_t p;
        return objlog_bucket_row_kind(k, kn, &bn, &p) == 0 && ckpt_in_range(r, k, kn);
    }
    if (cf == OBJLOG_CF_STATS) {
        keybuf rk;
        keybuf_init(&rk);
        int home = objlog_stats_home_route(k, kn, &rk);
        int in = home && ckpt_in_range(r, rk.data, rk.len);
        keybuf_free(&rk);
        return in;
    }
    if (cf == OBJLOG_CF_OUTCOMES) {
        uint8_t x[APPLY_OUTCOME_KEY_LEN];
        ckpt_range_prefix(x, r);
        return kn >= sizeof(x) && memcmp(k, x, sizeof(x)) == 0;
    }
    if (cf == OBJLOG_CF_BLOBS) {
        const uint8_t *row;
        size_t rn;
        return blobrefs_parse(k, kn, NULL, &row, &rn) == 0 && ckpt_in_range(r, row, rn);
    }
    return 0;
}

size_t objlog_ckpt_rimported_key(uint8_t out[32], int32_t p, int64_t off) {
    static const char name[] = "rimported";
    memcpy(out, name, sizeof(name) - 1);
    apply_put_be32(out + sizeof(name) - 1, (uint32_t)p);
    apply_put_be64(out + sizeof(name) + 3, (uint64_t)off);
    return sizeof(name) - 1 + 12;
}

size_t ckpt_range_marker_key(uint8_t out[32], const ckpt_range *r) {
    static const char name[] = "rimporting";
    memcpy(out, name, sizeof(name) - 1);
    apply_put_be32(out + sizeof(name) - 1, (uint32_t)r->from);
    apply_put_be64(out + sizeof(name) + 3, (uint64_t)r->from_off);
    return sizeof(name) - 1 + 12;
}

int ckpt_range_purge_into(objlog_store *s, const ckpt_range *r, rocksdb_writebatch_t *wb,
                          char *errstr, size_t es) {
    size_t staged = 0;
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++)
        if (ckpt_is_route_cf(cf))
            ckpt_delete_span(s, objlog_store_cf(s, (objlog_cf)cf), r->start, r->sn,
                             r->en ? r->end : NULL, r->en, wb);
    uint8_t lo[APPLY_OUTCOME_KEY_LEN], hi[APPLY_OUTCOME_KEY_LEN];
    ckpt_range_prefix(lo, r);
    ckpt_range_prefix(hi, r);
    apply_put_be64(hi + 5, (uint64_t)r->from_off + 1);
    rocksdb_writebatch_delete_range_cf(wb, objlog_store_cf(s, OBJLOG_CF_OUTCOMES),
                                       (const char *)lo, sizeof(lo), (const char *)hi,
                                       sizeof(hi));
    uint8_t rk[32];
    size_t rn = objlog_ckpt_rimported_key(rk, r->from, r->from_off);
    rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), (const char *)rk, rn);
    ckpt_sel sel = {.r = r};
    if (ckpt_purge_scan(s, &sel, OBJLOG_CF_BUCKETS, r->start, r->sn, 0, r->en ? r->end : NULL,
                        r->en, wb, &staged, errstr, es) < 0 ||
        ckpt_purge_scan(s, &sel, OBJLOG_CF_BLOBS, (const uint8_t *)"", 0, 0, NULL, 0, wb,
                        &staged, errstr, es) < 0)
        return -1;
    return ckpt_purge_scan(s, &sel, OBJLOG_CF_STATS, (const uint8_t *)"b", 1, 1, NULL, 0, wb,
                           &staged, errstr, es);
}

/* ---- export ---- */

typedef struct ckpt_out {
    objlog_ckpt_write_fn write;
    void *opaque;
    EVP_MD_CTX *sha;
    uint8_t *buf;                /* staged output, CKPT_OUT_CHUNK bytes */
    size_t len;
    uint64_t bytes, rows;
    int failed;
} ckpt_out;

static void out_flush(ckpt_out *o) {
    if (o->len && !o->failed && o->write(o->opaque, o->buf, o->len) < 0)
        o->failed = 1;
    o->len = 0;
}

/* Appends n bytes to the stream, hashed unless it is the hash itself. */
static void out_put(ckpt_out *o, const void *p, size_t n, int hash) {
    if (o->failed)
        return;
    if (hash)
        EVP_DigestUpdate(o->sha, p, n);
    o->bytes += n;
    if (o->len + n > CKPT_OUT_CHUNK)
        out_flush(o);
    if (n >= CKPT_OUT_CHUNK) {
        if (!o->failed && o->write(o->opaque, p, n) < 0)
            o->failed = 1;
        return;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void out_row(ckpt_out *o, int cf, const void *k, size_t kn, const void *v,
                    size_t vn) {
    uint8_t head[1 + CKPT_ROW_HEAD_LEN];
    head[0] = 'R';
    head[1] = (uint8_t)cf;
    apply_put_be32(head + 2, (uint32_t)kn);
    apply_put_be32(head + 6, (uint32_t)vn);
    out_put(o, head, sizeof(head), 1);
    out_put(o, k, kn, 1);
    out_put(o, v, vn, 1);
    o->rows++;
}

/* Rows of cf from `from` while below `to` (NULL: to the end) or, with
 * prefix set, while they start with from; those of p only when filter. */
typedef struct ckpt_span {
    const uint8_t *from;
    size_t fn;
    const uint8_t *to;
    size_t tn;
    int prefix;
    int filter;
    const ckpt_range *range;     /* set: rows a range stream carries only */
} ckpt_span;

static int export_span(objlog_store *s, rocksdb_readoptions_t *ro, const rangemap *rm,
                       int32_t p, objlog_cf cf, const ckpt_span *sp, ckpt_out *o,
                       char *errstr, size_t es) {
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                        objlog_store_cf(s, cf));
    for (rocksdb_iter_seek(it, (const char *)sp->from, sp->fn);
         !o->failed && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (sp->prefix && (kn < sp->fn || memcmp(k, sp->from, sp->fn) != 0))
            break;
        if (sp->to) {
            int c = memcmp(k, sp->to, kn < sp->tn ? kn : sp->tn);
            if (c > 0 || (c == 0 && kn >= sp->tn))
                break;
        }
        const char *v = rocksdb_iter_value(it, &vn);
        if (sp->filter && ckpt_row_part(rm, cf, (const uint8_t *)k, kn) != p)
            continue;
        if (sp->range && ckpt_range_row(sp->range, cf, (const uint8_t *)k, kn) != 1)
            continue;
        out_row(o, cf, k, kn, v, vn);
    }
    int rc = ckpt_iter_error(it, objlog_cf_name(cf), errstr, es);
    rocksdb_iter_destroy(it);
    return rc;
}

static int export_rows(objlog_store *s, rocksdb_readoptions_t *ro, const rangemap *rm,
                       int32_t p, ckpt_out *o, char *errstr, size_t es) {
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
        if (!ckpt_is_route_cf(cf))
            continue;
        for (int i = 0; i < rangemap_count(rm); i++) {
            ckpt_span sp = {0};
            int part;
            rangemap_entry(rm, i, &sp.from, &sp.fn, &sp.to, &sp.tn, &part);
            if (part == p && export_span(s, ro, rm, p, (objlog_cf)cf, &sp, o, errstr, es) < 0)
                return -1;
        }
    }
    ckpt_span buckets = {.from = (const uint8_t *)"", .filter = 1};
    if (export_span(s, ro, rm, p, OBJLOG_CF_BUCKETS, &buckets, o, errstr, es) < 0)
        return -1;
    ckpt_span stats = {.from = (const uint8_t *)"", .filter = 1};
    ckpt_span blobs = {.from = (const uint8_t *)"", .filter = 1};
    if (export_span(s, ro, rm, p, OBJLOG_CF_BLOBS, &blobs, o, errstr, es) < 0 ||
        export_span(s, ro, rm, p, OBJLOG_CF_STATS, &stats, o, errstr, es) < 0)
        return -1;
    static const char kinds[] = {'i', 'n', 'o', 'x'}; /* the partition's outcome rows */
    for (size_t i = 0; i < sizeof(kinds); i++) {
        uint8_t op[5] = {(uint8_t)kinds[i]};
        apply_put_be32(op + 1, (uint32_t)p);
        ckpt_span outs = {.from = op, .fn = 5, .prefix = 1};
        if (export_span(s, ro, rm, p, OBJLOG_CF_OUTCOMES, &outs, o, errstr, es) < 0)
            return -1;
    }
    for (size_t i = 0; i < CKPT_META_N; i++) {
        uint8_t mk[APPLY_META_KEY_MAX];
        size_t vn = 0, mn = apply_meta_key(mk, ckpt_meta_names[i], p);
        int rc = 0;
        char *v = ckpt_meta_get(s, ro, mk, mn, &vn, &rc, errstr, es);
        if (v)
            out_row(o, OBJLOG_CF_META, mk, mn, v, vn);
        rocksdb_free(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The fixed part and the identity of a stream header, into o. */
static int export_ident(objlog_store *s, rocksdb_readoptions_t *ro, uint32_t flags,
                        ckpt_out *o, char *errstr, size_t es) {
    int rc = 0;
    size_t vn = 0;
    char *ns = ckpt_meta_get(s, ro, APPLY_META_NO_STATS, strlen(APPLY_META_NO_STATS), &vn,
                             &rc, errstr, es);
    flags |= ns ? OBJLOG_CKPT_FLAG_NO_STATS : 0;
    rocksdb_free(ns);
    char *id = ckpt_meta_get(s, ro, "logident", 8, &vn, &rc, errstr, es);
    if (rc == 0 && (!id || vn == 0 || vn > CKPT_IDENT_MAX)) {
        snprintf(errstr, es, "the store records no log identity");
        rc = -1;
    }
    if (rc < 0) {
        rocksdb_free(id);
        return OBJLOG_CKPT_ERROR;
    }
    uint8_t fixed[CKPT_FIXED_LEN];
    memcpy(fixed, OBJLOG_CKPT_MAGIC, 8);
    apply_put_be32(fixed + 8, OBJLOG_CKPT_VERSION);
    apply_put_be32(fixed + 12, flags);
    put_be16(fixed + 16, (uint16_t)vn);
    out_put(o, fixed, sizeof(fixed), 1);
    out_put(o, id, vn, 1);
    rocksdb_free(id);
    return 0;
}

static void export_tail(ckpt_out *o, uint32_t epoch, int32_t p, int64_t applied) {
    uint8_t tail[CKPT_TAIL_LEN];
    apply_put_be32(tail, epoch);
    apply_put_be32(tail + 4, (uint32_t)p);
    apply_put_be64(tail + 8, (uint64_t)applied);
    out_put(o, tail, sizeof(tail), 1);
}

/* p's applied offset under ro (0 never applied). */
static int64_t export_applied(objlog_store *s, rocksdb_readoptions_t *ro, int32_t p, int *rc,
                              char *errstr, size_t es) {
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t vn = 0, mn = apply_meta_key(mk, APPLY_META_APPLIED, p);
    char *v = ckpt_meta_get(s, ro, mk, mn, &vn, rc, errstr, es);
    int64_t applied = v && vn == 8 ? (int64_t)apply_get_be64((const uint8_t *)v) : 0;
    rocksdb_free(v);
    return applied;
}

static int export_header(objlog_store *s, rocksdb_readoptions_t *ro, const rangemap *rm,
                         int32_t p, ckpt_out *o, int64_t *applied, char *errstr,
                         size_t es) {
    int rc = 0;
    *applied = export_applied(s, ro, p, &rc, errstr, es);
    if (rc < 0)
        return OBJLOG_CKPT_ERROR;
    if (*applied <= 0) {
        snprintf(errstr, es, "partition %d was never applied here", p);
        return OBJLOG_CKPT_NEVER_APPLIED;
    }
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t vn = 0, mn = ckpt_marker_key(mk, p);
    char *v = ckpt_meta_get(s, ro, mk, mn, &vn, &rc, errstr, es);
    int importing = v != NULL;
    rocksdb_free(v);
    if (importing) {
        snprintf(errstr, es, "partition %d is being imported here", p);
        return OBJLOG_CKPT_IMPORTING;
    }
    if (rc < 0 || export_ident(s, ro, 0, o, errstr, es) < 0)
        return OBJLOG_CKPT_ERROR;
    export_tail(o, rangemap_epoch(rm), p, *applied);
    return 0;
}

static void export_trailer(ckpt_out *o) {
    uint8_t t[1 + CKPT_TRAILER_LEN], sha[CKPT_SHA_LEN];
    t[0] = 'E';
    apply_put_be64(t + 1, o->rows);
    apply_put_be64(t + 9, o->bytes);
    out_put(o, t, sizeof(t), 1);
    unsigned int n = 0;
    EVP_DigestFinal_ex(o->sha, sha, &n);
    out_put(o, sha, sizeof(sha), 0);
    out_flush(o);
}

/* One export: o and a snapshot around body(), which writes the header
 * and rows (the trailer follows). */
typedef int (*export_body_fn)(objlog_store *s, rocksdb_readoptions_t *ro, ckpt_out *o,
                              void *arg, int64_t *applied, char *errstr, size_t es);

static int export_run(objlog_store *s, export_body_fn body, void *arg,
                      objlog_ckpt_write_fn write, void *opaque, objlog_ckpt_info *info,
                      char *errstr, size_t errstr_size) {
    ckpt_out o = {.write = write, .opaque = opaque};
    o.sha = EVP_MD_CTX_new();
    o.buf = malloc(CKPT_OUT_CHUNK);
    if (!o.sha || !o.buf || EVP_DigestInit_ex(o.sha, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(o.sha);
        free(o.buf);
        snprintf(errstr, errstr_size, "out of memory");
        return OBJLOG_CKPT_ERROR;
    }
    /* One snapshot: the rows and the applied offset are one state. */
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(objlog_store_db(s));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    rocksdb_readoptions_set_fill_cache(ro, 0); /* a bulk scan: keep the hot set */
    int64_t applied = 0;
    int rc = body(s, ro, &o, arg, &applied, errstr, errstr_size);
    if (rc == 0)
        export_trailer(&o);
    if (rc == 0 && o.failed) {
        snprintf(errstr, errstr_size, "checkpoint: writing the stream failed after %llu bytes",
                 (unsigned long long)o.bytes);
        rc = OBJLOG_CKPT_ERROR;
    }
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(objlog_store_db(s), snap);
    EVP_MD_CTX_free(o.sha);
    free(o.buf);
    if (rc == 0 && info) {
        info->applied = applied;
        info->rows = o.rows;
        info->bytes = o.bytes;
    }
    return rc;
}

typedef struct part_arg {
    const rangemap *rm;
    int32_t p;
} part_arg;

static int export_part_body(objlog_store *s, rocksdb_readoptions_t *ro, ckpt_out *o,
                            void *arg, int64_t *applied, char *errstr, size_t es) {
    const part_arg *a = arg;
    int rc = export_header(s, ro, a->rm, a->p, o, applied, errstr, es);
    if (rc == 0 && export_rows(s, ro, a->rm, a->p, o, errstr, es) < 0)
        rc = OBJLOG_CKPT_ERROR;
    return rc;
}

int objlog_ckpt_export(objlog_store *s, const rangemap *rm, int32_t p,
                       objlog_ckpt_write_fn write, void *opaque,
                       objlog_ckpt_info *info, char *errstr, size_t errstr_size) {
    part_arg a = {rm, p};
    return export_run(s, export_part_body, &a, write, opaque, info, errstr, errstr_size);
}

/* ---- a range's export ---- */

typedef struct handoff_arg {
    int32_t p;
    int64_t off;
} handoff_arg;

/* The RangeOut the marker at (p, off) keeps, under ro: 1 (*out the
 * caller's), 0 none, -1 error. */
static int export_marker(objlog_store *s, rocksdb_readoptions_t *ro, const ckpt_range *r,
                         Objlog__RangeOut **out, char *errstr, size_t es) {
    uint8_t mk[APPLY_OUTCOME_KEY_LEN];
    ckpt_range_prefix(mk, r);
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_OUTCOMES),
                             (const char *)mk, sizeof(mk), &vn, &err);
    if (err) {
        snprintf(errstr, es, "store read: %s", err);
        rocksdb_free(err);
        return -1;
    }
    if (!v)
        return 0;
    *out = objlog__range_out__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!*out || !(*out)->map) {
        snprintf(errstr, es, "the RangeOut marker at %d.%lld is corrupt", r->from,
                 (long long)r->from_off);
        return -1;
    }
    return 1;
}

/* Whether p's own map (meta "rmap" p, under ro) holds any of the range
 * again: 1 yes, 0 no, -1 error. */
static int export_moved_on(objlog_store *s, rocksdb_readoptions_t *ro, const ckpt_range *r,
                           char *errstr, size_t es) {
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t vn = 0, mn = apply_meta_key(mk, APPLY_META_RANGEMAP, r->from);
    int rc = 0;
    char *v = ckpt_meta_get(s, ro, mk, mn, &vn, &rc, errstr, es);
    if (rc < 0)
        return -1;
    if (!v) {
        snprintf(errstr, es, "partition %d keeps no range map", r->from);
        return -1;
    }
    rangemap *rm = rangemap_decode((const uint8_t *)v, vn, errstr, es);
    rocksdb_free(v);
    if (!rm)
        return -1;
    int all, none;
    rangemap_covers(rm, r->start, r->sn, r->end, r->en, r->from, &all, &none);
    rangemap_destroy(rm);
    return !none;
}

static int export_range_rows(objlog_store *s, rocksdb_readoptions_t *ro, const ckpt_range *r,
                             ckpt_out *o, char *errstr, size_t es) {
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
        ckpt_span sp = {.from = r->start, .fn = r->sn, .to = r->en ? r->end : NULL,
                        .tn = r->en};
        if (ckpt_is_route_cf(cf) &&
            export_span(s, ro, NULL, -1, (objlog_cf)cf, &sp, o, errstr, es) < 0)
            return -1;
    }
    ckpt_span buckets = {.from = r->start, .fn = r->sn, .to = r->en ? r->end : NULL,
                         .tn = r->en, .range = r};
    ckpt_span stats = {.from = (const uint8_t *)"b", .fn = 1, .prefix = 1, .range = r};
    uint8_t x[APPLY_OUTCOME_KEY_LEN];
    ckpt_range_prefix(x, r);
    ckpt_span outs = {.from = x, .fn = sizeof(x), .prefix = 1};
    ckpt_span blobs = {.from = (const uint8_t *)"", .range = r};
    if (export_span(s, ro, NULL, -1, OBJLOG_CF_BUCKETS, &buckets, o, errstr, es) < 0 ||
        export_span(s, ro, NULL, -1, OBJLOG_CF_BLOBS, &blobs, o, errstr, es) < 0 ||
        export_span(s, ro, NULL, -1, OBJLOG_CF_STATS, &stats, o, errstr, es) < 0)
        return -1;
    return export_span(s, ro, NULL, -1, OBJLOG_CF_OUTCOMES, &outs, o, errstr, es);
}

static int export_handoff_body(objlog_store *s, rocksdb_readoptions_t *ro, ckpt_out *o,
                               void *arg, int64_t *applied, char *errstr, size_t es) {
    const handoff_arg *a = arg;
    int rc = 0;
    int64_t at = export_applied(s, ro, a->p, &rc, errstr, es);
    if (rc < 0)
        return OBJLOG_CKPT_ERROR;
    if (at <= a->off) {
        snprintf(errstr, es, "partition %d is applied here up to offset %lld, not yet past "
                 "the RangeOut at %lld", a->p, (long long)at, (long long)a->off);
        return OBJLOG_CKPT_NOT_YET;
    }
    /* A copy of p from a checkpoint taken after X skipped the RangeOut:
     * under the next map that checkpoint no longer carried the range. */
    uint8_t bk[APPLY_META_KEY_MAX];
    size_t bvn = 0, bkn = apply_meta_key(bk, OBJLOG_CKPT_META_BASE, a->p);
    char *bv = ckpt_meta_get(s, ro, bk, bkn, &bvn, &rc, errstr, es);
    int64_t base = bv && bvn == 8 ? (int64_t)apply_get_be64((const uint8_t *)bv) : 0;
    rocksdb_free(bv);
    if (rc < 0)
        return OBJLOG_CKPT_ERROR;
    if (base > a->off) {
        snprintf(errstr, es, "partition %d was copied here from a checkpoint at offset %lld, "
                 "past the RangeOut at %lld: the range's rows of then are not here", a->p,
                 (long long)base, (long long)a->off);
        return OBJLOG_CKPT_NO_HANDOFF;
    }
    ckpt_range r = {.from = a->p, .from_off = a->off};
    Objlog__RangeOut *ro_ev = NULL;
    int m = export_marker(s, ro, &r, &ro_ev, errstr, es);
    if (m <= 0) {
        if (m == 0)
            snprintf(errstr, es, "no RangeOut at partition %d offset %lld is kept here",
                     a->p, (long long)a->off);
        return m == 0 ? OBJLOG_CKPT_NO_HANDOFF : OBJLOG_CKPT_ERROR;
    }
    r.start = ro_ev->start.data;
    r.sn = ro_ev->start.len;
    r.end = ro_ev->end.data;
    r.en = ro_ev->end.len;
    int moved = export_moved_on(s, ro, &r, errstr, es);
    if (moved != 0) {
        if (moved > 0)
            snprintf(errstr, es, "partition %d holds part of the range it gave away at "
                     "offset %lld again: its rows are not those of that handoff any more",
                     a->p, (long long)a->off);
        objlog__range_out__free_unpacked(ro_ev, NULL);
        return moved > 0 ? OBJLOG_CKPT_MOVED_ON : OBJLOG_CKPT_ERROR;
    }
    rc = export_ident(s, ro, OBJLOG_CKPT_FLAG_RANGE, o, errstr, es);
    if (rc == 0) {
        export_tail(o, ro_ev->map->epoch, a->p, a->off);
        uint8_t lens[CKPT_RANGE_LENS];
        apply_put_be32(lens, (uint32_t)r.sn);
        apply_put_be32(lens + 4, (uint32_t)r.en);
        out_put(o, lens, sizeof(lens), 1);
        out_put(o, r.start, r.sn, 1);
        out_put(o, r.end, r.en, 1);
        *applied = a->off;
        rc = export_range_rows(s, ro, &r, o, errstr, es) < 0 ? OBJLOG_CKPT_ERROR : 0;
    }
    objlog__range_out__free_unpacked(ro_ev, NULL);
    return rc;
}

int objlog_ckpt_export_handoff(objlog_store *s, int32_t p, int64_t off,
                               objlog_ckpt_write_fn write, void *opaque,
                               objlog_ckpt_info *info, char *errstr, size_t errstr_size) {
    handoff_arg a = {p, off};
    return export_run(s, export_handoff_body, &a, write, opaque, info, errstr, errstr_size);
}
