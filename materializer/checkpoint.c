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
#include "checkpoint.h"

#include "matlog.h"
#include "rows.h"
#include "store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* WriteBatches of the import and the purge stay below this (bounded
 * memory whatever the partition's size); export output is staged in
 * chunks of CKPT_OUT_CHUNK. */
#define CKPT_BATCH_BYTES ((size_t)4 << 20)
#define CKPT_OUT_CHUNK ((size_t)256 << 10)
/* Largest key / value a row may claim: far above any real row (keys are
 * route keys of <= 1024-byte object keys, values small records), so a
 * corrupt length fails instead of allocating gigabytes. */
#define CKPT_KEY_MAX ((uint32_t)64 << 10)
#define CKPT_VALUE_MAX ((uint32_t)16 << 20)
#define CKPT_IDENT_MAX 255
#define CKPT_SHA_LEN 32
#define CKPT_FIXED_LEN 18            /* magic, version, flags, ident length */
#define CKPT_TAIL_LEN 16             /* epoch, partition, applied */
#define CKPT_ROW_HEAD_LEN 9          /* cf, key length, value length */
#define CKPT_TRAILER_LEN 16          /* rows, bytes (after the 'E') */
#define CKPT_MARKER_VERSION 1

/* Per-partition meta rows: name ‖ be32(p). */
static const char *const ckpt_meta_names[] = {
    APPLY_META_APPLIED, APPLY_META_DLQ, APPLY_META_OUTCOMES_LOW, APPLY_META_RANGEMAP};
#define CKPT_META_N (sizeof(ckpt_meta_names) / sizeof(ckpt_meta_names[0]))

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
static int ckpt_row_part(const rangemap *rm, int cf, const uint8_t *k, size_t kn) {
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
        /* 'o' rows; 'x' and 'i' rows, a handoff's (dedup.h) */
        if ((kn == APPLY_OUTCOME_KEY_LEN && k[0] == 'o') ||
            (kn >= APPLY_OUTCOME_KEY_LEN && (k[0] == 'x' || k[0] == 'i')))
            return (int32_t)apply_get_be32(k + 1);
        return -1;
    case OBJLOG_CF_META:
        return ckpt_meta_part(k, kn);
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

static int ckpt_iter_error(rocksdb_iterator_t *it, const char *what, char *errstr,
                           size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (!err)
        return 0;
    snprintf(errstr, es, "%s: %s", what, err);
    rocksdb_free(err);
    return -1;
}

static int ckpt_write(objlog_store *s, rocksdb_writebatch_t *wb, int sync, char *errstr,
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

static size_t ckpt_marker_key(uint8_t out[APPLY_META_KEY_MAX], int32_t p) {
    return apply_meta_key(out, OBJLOG_CKPT_META_IMPORTING, p);
}

/* The meta row key of s under ro: malloc'd value or NULL (absent, or -1
 * in *rc on a read error). */
static char *ckpt_meta_get(objlog_store *s, rocksdb_readoptions_t *ro, const void *key,
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

/* Range deletes of p's ranges in the route-keyed CFs. The last range has
 * no end: it ends just past the CF's last key. */
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
            if (part != p)
                continue;
            if (end) {
                rocksdb_writebatch_delete_range_cf(wb, h, (const char *)start, sl,
                                                   (const char *)end, el);
                continue;
            }
            rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
            rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, h);
            rocksdb_iter_seek_to_last(it);
            if (rocksdb_iter_valid(it)) {
                size_t kn;
                const char *k = rocksdb_iter_key(it, &kn);
                keybuf last;
                keybuf_init(&last);
                /* Nothing to delete when every key sorts before start. */
                int c = memcmp(k, start, kn < sl ? kn : sl);
                int past = c > 0 || (c == 0 && kn >= sl);
                if (past && keybuf_append(&last, k, kn) == 0 &&
                    keybuf_append(&last, "", 1) == 0)
                    rocksdb_writebatch_delete_range_cf(wb, h, (const char *)start, sl,
                                                       (const char *)last.data, last.len);
                keybuf_free(&last);
            }
            rocksdb_iter_destroy(it);
            rocksdb_readoptions_destroy(ro);
        }
    }
}

/* Point deletes of the rows of cf from `from` on (while they start with
 * it) that belong to p, written whenever wb grows past CKPT_BATCH_BYTES.
 * *staged counts the bytes staged in wb. */
static int ckpt_purge_scan(objlog_store *s, const rangemap *rm, int32_t p, objlog_cf cf,
                           const char *from, size_t fn, rocksdb_writebatch_t *wb,
                           size_t *staged, char *errstr, size_t es) {
    rocksdb_column_family_handle_t *h = objlog_store_cf(s, cf);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, h);
    int rc = 0;
    for (rocksdb_iter_seek(it, from, fn); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < fn || memcmp(k, from, fn) != 0)
            break;
        if (ckpt_row_part(rm, cf, (const uint8_t *)k, kn) != p)
            continue;
        rocksdb_writebatch_delete_cf(wb, h, k, kn);
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
static int ckpt_purge_into(objlog_store *s, const rangemap *rm, int32_t p,
                           rocksdb_writebatch_t *wb, char *errstr, size_t es) {
    size_t staged = 0;
    ckpt_purge_routes(s, rm, p, wb);
    static const char kinds[] = {'i', 'o', 'x'};
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
    if (ckpt_purge_scan(s, rm, p, OBJLOG_CF_BUCKETS, "", 0, wb, &staged, errstr, es) < 0)
        return -1;
    return ckpt_purge_scan(s, rm, p, OBJLOG_CF_STATS, "", 0, wb, &staged, errstr, es);
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

int objlog_ckpt_recover(objlog_store *s, char *errstr, size_t errstr_size) {
    const char *prefix = OBJLOG_CKPT_META_IMPORTING;
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
        n = ckpt_recover_one(s, k, kn, v, vn, errstr, errstr_size) < 0 ? -1 : n + 1;
    }
    if (n >= 0 && ckpt_iter_error(it, "recover", errstr, errstr_size) < 0)
        n = -1;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
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
    if (export_span(s, ro, rm, p, OBJLOG_CF_STATS, &stats, o, errstr, es) < 0)
        return -1;
    static const char kinds[] = {'i', 'o', 'x'}; /* the partition's outcome rows */
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

static int export_header(objlog_store *s, rocksdb_readoptions_t *ro, const rangemap *rm,
                         int32_t p, ckpt_out *o, int64_t *applied, char *errstr,
                         size_t es) {
    int rc = 0;
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t vn = 0, mn = apply_meta_key(mk, APPLY_META_APPLIED, p);
    char *v = ckpt_meta_get(s, ro, mk, mn, &vn, &rc, errstr, es);
    *applied = v && vn == 8 ? (int64_t)apply_get_be64((const uint8_t *)v) : 0;
    rocksdb_free(v);
    if (rc < 0)
        return OBJLOG_CKPT_ERROR;
    if (*applied <= 0) {
        snprintf(errstr, es, "partition %d was never applied here", p);
        return OBJLOG_CKPT_NEVER_APPLIED;
    }
    mn = ckpt_marker_key(mk, p);
    v = ckpt_meta_get(s, ro, mk, mn, &vn, &rc, errstr, es);
    int importing = v != NULL;
    rocksdb_free(v);
    if (importing) {
        snprintf(errstr, es, "partition %d is being imported here", p);
        return OBJLOG_CKPT_IMPORTING;
    }
    char *ns = ckpt_meta_get(s, ro, APPLY_META_NO_STATS, strlen(APPLY_META_NO_STATS), &vn,
                             &rc, errstr, es);
    uint32_t flags = ns ? OBJLOG_CKPT_FLAG_NO_STATS : 0;
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
    uint8_t fixed[CKPT_FIXED_LEN], tail[CKPT_TAIL_LEN];
    memcpy(fixed, OBJLOG_CKPT_MAGIC, 8);
    apply_put_be32(fixed + 8, OBJLOG_CKPT_VERSION);
    apply_put_be32(fixed + 12, flags);
    put_be16(fixed + 16, (uint16_t)vn);
    apply_put_be32(tail, rangemap_epoch(rm));
    apply_put_be32(tail + 4, (uint32_t)p);
    apply_put_be64(tail + 8, (uint64_t)*applied);
    out_put(o, fixed, sizeof(fixed), 1);
    out_put(o, id, vn, 1);
    out_put(o, tail, sizeof(tail), 1);
    rocksdb_free(id);
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

int objlog_ckpt_export(objlog_store *s, const rangemap *rm, int32_t p,
                       objlog_ckpt_write_fn write, void *opaque,
                       objlog_ckpt_info *info, char *errstr, size_t errstr_size) {
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
    int rc = export_header(s, ro, rm, p, &o, &applied, errstr, errstr_size);
    if (rc == 0 && export_rows(s, ro, rm, p, &o, errstr, errstr_size) < 0)
        rc = OBJLOG_CKPT_ERROR;
    if (rc == 0)
        export_trailer(&o);
    if (rc == 0 && o.failed) {
        snprintf(errstr, errstr_size, "checkpoint of partition %d: writing the stream "
                 "failed after %llu bytes", p, (unsigned long long)o.bytes);
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

/* ---- import ---- */

enum {
    ST_FIXED,      /* magic, version, flags, identity length */
    ST_IDENT,      /* the identity text */
    ST_TAIL,       /* epoch, partition, applied */
    ST_TAG,        /* 'R' a row, 'E' the trailer */
    ST_ROW_HEAD,   /* cf, key length, value length */
    ST_ROW_BODY,   /* key, value */
    ST_TRAILER,    /* rows, bytes */
    ST_SHA,        /* the hash (not hashed itself) */
    ST_DONE
};

typedef struct ckpt_meta_row {
    keybuf key, value;
} ckpt_meta_row;

struct objlog_ckpt_import {
    objlog_store *s;
    const rangemap *rm;
    int32_t p;
    char ident[CKPT_IDENT_MAX + 1]; /* the store's own meta "logident" */
    size_t ident_len;
    int no_stats;                /* the store keeps no stats view */
    int state;
    size_t need;                 /* bytes of the current element */
    keybuf pend;                 /* ... taken so far */
    uint64_t pos;                /* stream offset of the current element */
    EVP_MD_CTX *sha;
    int64_t applied;             /* the header's */
    uint8_t cf;                  /* the current row's */
    uint32_t klen, vlen;
    uint64_t body_bytes;         /* stream offset of the 'E' */
    rocksdb_writebatch_t *wb;
    size_t staged;               /* bytes staged in wb */
    ckpt_meta_row meta[CKPT_META_N];
    size_t nmeta;
    int begun;                   /* the marker is written: p is ours */
    int failed;
    int finished;
    char err[512];
    objlog_ckpt_progress pr;
    objlog_ckpt_progress_fn progress;
    void *progress_opaque;
};

objlog_ckpt_import *objlog_ckpt_import_new(objlog_store *s, const rangemap *rm,
                                           int32_t p, char *errstr,
                                           size_t errstr_size) {
    if (p < 0) {
        snprintf(errstr, errstr_size, "partition %d is not a partition", p);
        return NULL;
    }
    objlog_ckpt_import *im = calloc(1, sizeof(*im));
    if (!im) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    im->s = s;
    im->rm = rm;
    im->p = p;
    im->need = CKPT_FIXED_LEN;
    keybuf_init(&im->pend);
    for (size_t i = 0; i < CKPT_META_N; i++) {
        keybuf_init(&im->meta[i].key);
        keybuf_init(&im->meta[i].value);
    }
    im->sha = EVP_MD_CTX_new();
    im->wb = rocksdb_writebatch_create();
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    int rc = 0;
    size_t idn = 0, nsn = 0;
    char *id = ckpt_meta_get(s, ro, "logident", 8, &idn, &rc, errstr, errstr_size);
    char *ns = ckpt_meta_get(s, ro, APPLY_META_NO_STATS, strlen(APPLY_META_NO_STATS), &nsn,
                             &rc, errstr, errstr_size);
    rocksdb_readoptions_destroy(ro);
    im->no_stats = ns != NULL;
    rocksdb_free(ns);
    if (id && idn > 0 && idn <= CKPT_IDENT_MAX) {
        memcpy(im->ident, id, idn);
        im->ident_len = idn;
    } else if (rc == 0) {
        snprintf(errstr, errstr_size, id ? "this store's log identity is corrupt"
                 : "this store records no log identity yet: bind it to its log "
                   "(objlog_store_bind_log) before importing a checkpoint");
        rc = -1;
    }
    rocksdb_free(id);
    if (rc == 0 && (!im->sha || !im->wb || EVP_DigestInit_ex(im->sha, EVP_sha256(), NULL) != 1)) {
        snprintf(errstr, errstr_size, "out of memory");
        rc = -1;
    }
    if (rc < 0) {
        objlog_ckpt_import_destroy(im);
        return NULL;
    }
    return im;
}

void objlog_ckpt_import_set_progress(objlog_ckpt_import *im, objlog_ckpt_progress_fn fn,
                                     void *opaque) {
    im->progress = fn;
    im->progress_opaque = opaque;
}

void objlog_ckpt_import_set_total(objlog_ckpt_import *im, uint64_t total_bytes) {
    im->pr.total_bytes = total_bytes;
}

const objlog_ckpt_progress *objlog_ckpt_import_progress(const objlog_ckpt_import *im) {
    return &im->pr;
}

/* Records why the import failed (the first reason only). -1. */
static int import_fail(objlog_ckpt_import *im, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int import_fail(objlog_ckpt_import *im, const char *fmt, ...) {
    if (im->failed)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err, sizeof(im->err), fmt, ap);
    va_end(ap);
    im->failed = 1;
    return -1;
}

/* After a failure: nothing of p stays, nor the marker. */
static void import_abandon(objlog_ckpt_import *im) {
    if (!im->begun)
        return;
    im->begun = 0;
    rocksdb_writebatch_clear(im->wb);
    char why[256];
    if (objlog_ckpt_purge(im->s, im->rm, im->p, why, sizeof(why)) < 0) {
        /* The marker stays: the next open purges p. */
        matlog_printf(store_log(im->s), MATLOG_ERR, "checkpoint",
                      "partition %d: removing a failed import: %s "
                      "(it is removed when the store opens next)", im->p, why);
        size_t n = strlen(im->err);
        snprintf(im->err + n, sizeof(im->err) - n, "; removing its rows failed too: %s", why);
    }
}

/* The header checked out: p is ours from here. The marker goes in the
 * first WriteBatch together with the first deletes of p's old rows. */
static int import_begin(objlog_ckpt_import *im) {
    uint8_t *enc = NULL;
    size_t en = 0;
    if (rangemap_encode(im->rm, &enc, &en) < 0)
        return import_fail(im, "out of memory");
    keybuf v;
    keybuf_init(&v);
    uint8_t ver[4], mk[APPLY_META_KEY_MAX];
    apply_put_be32(ver, CKPT_MARKER_VERSION);
    int rc = keybuf_append(&v, ver, 4) || keybuf_append(&v, enc, en) ? -1 : 0;
    free(enc);
    if (rc < 0) {
        keybuf_free(&v);
        return import_fail(im, "out of memory");
    }
    size_t mn = ckpt_marker_key(mk, im->p);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                              (const char *)mk, mn, (const char *)v.data, v.len);
    keybuf_free(&v);
    im->begun = 1;
    char why[256];
    if (ckpt_purge_into(im->s, im->rm, im->p, im->wb, why, sizeof(why)) < 0 ||
        ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "clearing partition %d: %s", im->p, why);
    return 0;
}

static int import_fixed(objlog_ckpt_import *im, const uint8_t *b) {
    if (memcmp(b, OBJLOG_CKPT_MAGIC, 8) != 0)
        return import_fail(im, "not a checkpoint (no %s magic at byte 0)",
                           OBJLOG_CKPT_MAGIC);
    uint32_t ver = apply_get_be32(b + 8), flags = apply_get_be32(b + 12);
    if (ver != OBJLOG_CKPT_VERSION)
        return import_fail(im, "checkpoint format version %u; this objlog reads %d", ver,
                           OBJLOG_CKPT_VERSION);
    if (flags & ~OBJLOG_CKPT_FLAG_NO_STATS)
        return import_fail(im, "checkpoint flags 0x%x unknown", flags);
    if (!!(flags & OBJLOG_CKPT_FLAG_NO_STATS) != im->no_stats)
        return import_fail(im, "the checkpoint's view %s the usage stats and this one %s: "
                           "they cannot be mixed",
                           flags & OBJLOG_CKPT_FLAG_NO_STATS ? "lacks" : "keeps",
                           im->no_stats ? "lacks them" : "keeps them");
    size_t n = (size_t)b[16] << 8 | b[17];
    if (n == 0 || n > CKPT_IDENT_MAX)
        return import_fail(im, "checkpoint header: log identity of %zu bytes", n);
    im->state = ST_IDENT;
    im->need = n;
    return 0;
}

static int import_ident(objlog_ckpt_import *im, const uint8_t *b, size_t n) {
    if (n != im->ident_len || memcmp(b, im->ident, n) != 0)
        return import_fail(im, "checkpoint of another log: it was built from \"%.*s\", this "
                           "store from \"%.*s\"", (int)n, (const char *)b,
                           (int)im->ident_len, im->ident);
    im->state = ST_TAIL;
    im->need = CKPT_TAIL_LEN;
    return 0;
}

static int import_tail(objlog_ckpt_import *im, const uint8_t *b) {
    uint32_t epoch = apply_get_be32(b), part = apply_get_be32(b + 4);
    im->applied = (int64_t)apply_get_be64(b + 8);
    if (epoch != rangemap_epoch(im->rm))
        return import_fail(im, "checkpoint taken under range map epoch %u; this node uses "
                           "epoch %u", epoch, rangemap_epoch(im->rm));
    if (part != (uint32_t)im->p)
        return import_fail(im, "checkpoint of partition %u, not of partition %d", part,
                           im->p);
    if (im->applied <= 0)
        return import_fail(im, "checkpoint with applied offset %lld",
                           (long long)im->applied);
    im->state = ST_TAG;
    im->need = 1;
    return import_begin(im);
}

static int import_tag(objlog_ckpt_import *im, uint8_t tag) {
    if (tag == 'R') {
        im->state = ST_ROW_HEAD;
        im->need = CKPT_ROW_HEAD_LEN;
    } else if (tag == 'E') {
        im->body_bytes = im->pos;
        im->state = ST_TRAILER;
        im->need = CKPT_TRAILER_LEN;
    } else {
        return import_fail(im, "corrupt checkpoint: byte 0x%02x at offset %llu is neither "
                           "a row nor the trailer", tag, (unsigned long long)im->pos);
    }
    return 0;
}

static int import_row_head(objlog_ckpt_import *im, const uint8_t *b) {
    im->cf = b[0];
    im->klen = apply_get_be32(b + 1);
    im->vlen = apply_get_be32(b + 5);
    if (im->cf >= OBJLOG_CF_COUNT || im->klen == 0 || im->klen > CKPT_KEY_MAX ||
        im->vlen > CKPT_VALUE_MAX)
        return import_fail(im, "corrupt checkpoint: row %llu at offset %llu: cf %u, key %u "
                           "bytes, value %u bytes", (unsigned long long)im->pr.rows,
                           (unsigned long long)im->pos - 1, im->cf, im->klen, im->vlen);
    im->state = ST_ROW_BODY;
    im->need = (size_t)im->klen + im->vlen;
    return 0;
}

/* Meta rows wait for the last WriteBatch: until then p reads as never
 * applied, whatever happens. */
static int import_meta(objlog_ckpt_import *im, const uint8_t *k, const uint8_t *v) {
    for (size_t i = 0; i < im->nmeta; i++)
        if (im->meta[i].key.len == im->klen && !memcmp(im->meta[i].key.data, k, im->klen))
            return import_fail(im, "corrupt checkpoint: meta row %.*s twice",
                               (int)im->klen - 4, (const char *)k);
    ckpt_meta_row *m = &im->meta[im->nmeta];
    if (im->nmeta >= CKPT_META_N || keybuf_append(&m->key, k, im->klen) < 0 ||
        keybuf_append(&m->value, v, im->vlen) < 0)
        return import_fail(im, "out of memory");
    im->nmeta++;
    return 0;
}

static int import_row(objlog_ckpt_import *im, const uint8_t *b) {
    const uint8_t *k = b, *v = b + im->klen;
    int part = ckpt_row_part(im->rm, im->cf, k, im->klen);
    im->pr.rows++;
    im->state = ST_TAG;
    im->need = 1;
    if (part != im->p)
        return import_fail(im, "corrupt checkpoint: row %llu (%s) belongs to %s",
                           (unsigned long long)im->pr.rows - 1, objlog_cf_name(im->cf),
                           part < 0 ? "no partition" : "another partition");
    if (im->cf == OBJLOG_CF_META)
        return import_meta(im, k, v);
    rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, (objlog_cf)im->cf),
                              (const char *)k, im->klen, (const char *)v, im->vlen);
    im->staged += (size_t)im->klen + im->vlen + 16;
    if (im->staged < CKPT_BATCH_BYTES)
        return 0;
    im->staged = 0;
    char why[256];
    if (ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    return 0;
}

static int import_trailer(objlog_ckpt_import *im, const uint8_t *b) {
    uint64_t rows = apply_get_be64(b), bytes = apply_get_be64(b + 8);
    if (rows != im->pr.rows || bytes != im->body_bytes)
        return import_fail(im, "corrupt checkpoint: the trailer counts %llu rows in %llu "
                           "bytes, the stream held %llu in %llu",
                           (unsigned long long)rows, (unsigned long long)bytes,
                           (unsigned long long)im->pr.rows,
                           (unsigned long long)im->body_bytes);
    im->state = ST_SHA;
    im->need = CKPT_SHA_LEN;
    return 0;
}

static int import_sha(objlog_ckpt_import *im, const uint8_t *b) {
    uint8_t sha[CKPT_SHA_LEN];
    unsigned int n = 0;
    EVP_DigestFinal_ex(im->sha, sha, &n);
    if (memcmp(sha, b, CKPT_SHA_LEN) != 0)
        return import_fail(im, "checkpoint checksum mismatch: the SHA-256 of its %llu bytes "
                           "differs from the trailer's (corrupted in transit or on disk)",
                           (unsigned long long)im->pos);
    im->state = ST_DONE;
    im->need = 0;
    return 0;
}

/* The current element (im->pend, im->need bytes) is whole. */
static int import_step(objlog_ckpt_import *im) {
    const uint8_t *b = im->pend.data;
    size_t n = im->pend.len;
    int st = im->state, rc;
    if (st != ST_SHA)
        EVP_DigestUpdate(im->sha, b, n);
    switch (st) {
    case ST_FIXED: rc = import_fixed(im, b); break;
    case ST_IDENT: rc = import_ident(im, b, n); break;
    case ST_TAIL: rc = import_tail(im, b); break;
    case ST_TAG: rc = import_tag(im, b[0]); break;
    case ST_ROW_HEAD: rc = import_row_head(im, b); break;
    case ST_ROW_BODY: rc = import_row(im, b); break;
    case ST_TRAILER: rc = import_trailer(im, b); break;
    default: rc = import_sha(im, b); break;
    }
    im->pos += n;
    keybuf_reset(&im->pend);
    return rc;
}

static int import_error(objlog_ckpt_import *im, char *errstr, size_t es) {
    import_abandon(im);
    snprintf(errstr, es, "import of partition %d: %s", im->p, im->err);
    return -1;
}

int objlog_ckpt_import_feed(objlog_ckpt_import *im, const void *data, size_t n,
                            char *errstr, size_t errstr_size) {
    const uint8_t *p = data;
    if (im->finished)
        import_fail(im, "fed after it finished");
    while (n > 0 && !im->failed) {
        if (im->state == ST_DONE) {
            import_fail(im, "corrupt checkpoint: %zu bytes after its trailer", n);
            break;
        }
        size_t take = im->need - im->pend.len;
        take = take < n ? take : n;
        if (keybuf_append(&im->pend, p, take) < 0) {
            import_fail(im, "out of memory");
            break;
        }
        p += take;
        n -= take;
        im->pr.bytes += take;
        if (im->pend.len == im->need)
            import_step(im);
    }
    if (im->failed)
        return import_error(im, errstr, errstr_size);
    if (im->progress)
        im->progress(im->progress_opaque, &im->pr);
    return 0;
}

static const char *import_state_name(int st) {
    switch (st) {
    case ST_FIXED: case ST_IDENT: case ST_TAIL: return "in its header";
    case ST_TAG: return "before its trailer";
    case ST_ROW_HEAD: case ST_ROW_BODY: return "inside a row";
    default: return "inside its trailer";
    }
}

/* The last WriteBatch: p's meta rows in, the marker out, synced. */
static int import_commit(objlog_ckpt_import *im) {
    const ckpt_meta_row *applied = NULL;
    uint8_t ak[APPLY_META_KEY_MAX];
    size_t an = apply_meta_key(ak, APPLY_META_APPLIED, im->p);
    for (size_t i = 0; i < im->nmeta; i++)
        if (im->meta[i].key.len == an && !memcmp(im->meta[i].key.data, ak, an))
            applied = &im->meta[i];
    if (!applied || applied->value.len != 8 ||
        (int64_t)apply_get_be64(applied->value.data) != im->applied)
        return import_fail(im, "corrupt checkpoint: its \"applied\" row does not hold the "
                           "header's offset %lld", (long long)im->applied);
    char why[256];
    if (ckpt_write(im->s, im->wb, 0, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    for (size_t i = 0; i < im->nmeta; i++)
        rocksdb_writebatch_put_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                  (const char *)im->meta[i].key.data, im->meta[i].key.len,
                                  (const char *)im->meta[i].value.data,
                                  im->meta[i].value.len);
    uint8_t mk[APPLY_META_KEY_MAX];
    size_t mn = ckpt_marker_key(mk, im->p);
    rocksdb_writebatch_delete_cf(im->wb, objlog_store_cf(im->s, OBJLOG_CF_META),
                                 (const char *)mk, mn);
    if (ckpt_write(im->s, im->wb, 1, why, sizeof(why)) < 0)
        return import_fail(im, "%s", why);
    im->begun = 0;
    return 0;
}

int objlog_ckpt_import_finish(objlog_ckpt_import *im, int64_t *applied, char *errstr,
                              size_t errstr_size) {
    if (!im->failed && im->finished)
        import_fail(im, "finished twice");
    if (!im->failed && im->state != ST_DONE)
        import_fail(im, "truncated checkpoint: the stream ended after %llu bytes, %s",
                    (unsigned long long)im->pr.bytes, import_state_name(im->state));
    if (!im->failed)
        import_commit(im);
    if (im->failed)
        return import_error(im, errstr, errstr_size);
    im->finished = 1;
    *applied = im->applied;
    return 0;
}

void objlog_ckpt_import_destroy(objlog_ckpt_import *im) {
    if (!im)
        return;
    if (im->begun) {
        import_fail(im, "abandoned");
        import_abandon(im);
    }
    keybuf_free(&im->pend);
    for (size_t i = 0; i < CKPT_META_N; i++) {
        keybuf_free(&im->meta[i].key);
        keybuf_free(&im->meta[i].value);
    }
    if (im->wb)
        rocksdb_writebatch_destroy(im->wb);
    EVP_MD_CTX_free(im->sha);
    free(im);
}
