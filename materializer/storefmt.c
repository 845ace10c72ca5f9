/* storefmt.c: the store's format marker (meta "format", materializer.h)
 * and the in-place upgrade of a store made in an older format.
 *
 * Formats:
 *   1  no marker. `stats` kept one 't' enc(tenant) row per tenant and one
 *      'g' row, each summed over every partition the store applied, so a
 *      node's sums could neither be split by partition nor gathered.
 *   2  "2". 't' enc(tenant) be32(p) and 'g' be32(p): one row per
 *      partition (the 'b' rows are unchanged).
 *   3  "3". `outcomes` 'r' be32(p) request_id instead of one 'r'
 *      request_id row for every partition, so that each partition's
 *      request ids are its own and partitions apply on separate threads.
 *      The value (be32(p) be64(offset)) names the partition, so the new
 *      keys follow from the old rows alone.
 *   4  "4". No 'r' rows: a request id is found through the partition's
 *      in-memory index of its first-outcome rows (ridindex.h), which carry
 *      it already; and no header row for the keys of an Unversioned
 *      bucket, whose one version (the null one) `objects` shows. Both go
 *      by deletion alone: every fact they held is in the rows that stay.
 *   5  "5". The `blobs` CF (blobrefs.h): a row per blob a version or a
 *      part names, derived from those rows alone.
 *
 * A new store (no row in any column family) gets the current marker at
 * open. A store of an older format opens, but only objlog_store_upgrade, given
 * the range map it was applied with, makes it current: the materializer
 * calls it before its first batch, so nothing reads or applies rows of
 * an old layout. A marker naming a later format is refused at open.
 *
 * Why the upgrade is exact: a tenant's (or the global) counters are the
 * sums of their buckets' 'b' rows, and 'b' rows are the same in both
 * formats; a bucket's partition is its route key's. So the format-2 rows
 * are recomputed from the 'b' rows and the bucket records alone, and equal
 * what a replay of the log into an empty store writes (test_stats checks
 * the dumps byte for byte). Before anything is written the recomputed
 * sums are compared with the old rows: a store whose old rows disagree is
 * refused, with how to rebuild it.
 *
 * Invariant: the upgrade is ONE WriteBatch (old rows deleted, new rows and
 * the marker put, synced), so a crash leaves the old store or the new one,
 * never a mix; an interrupted upgrade simply runs again at the next start.
 */
#include "materializer.h"

#include "blobrefs.h"

#include "keycodec.h"
#include "storefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMT_KEY "format"
#define FMT_NFIELDS 10 /* UsageStats counters, buckets last */
#define FMT_BUCKETS 9

/* ---- the marker ---- */

/* Meta "format": 1 found (*fmt; 0 when not a number), 0 absent, -1 error. */
static int fmt_read(objlog_store *s, int *fmt, char *errstr, size_t es) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             FMT_KEY, strlen(FMT_KEY), &vn, &err);
    rocksdb_readoptions_destroy(ro);
    if (err) {
        snprintf(errstr, es, "store: read meta %s: %s", FMT_KEY, err);
        rocksdb_free(err);
        return -1;
    }
    if (!v)
        return 0;
    char text[16];
    snprintf(text, sizeof(text), "%.*s", (int)(vn < 15 ? vn : 15), v);
    rocksdb_free(v);
    char *end;
    long f = strtol(text, &end, 10);
    *fmt = end != text && *end == '\0' && vn < 15 && f > 0 && f < 1000 ? (int)f : 0;
    return 1;
}

static void fmt_marker_put(rocksdb_writebatch_t *wb, objlog_store *s) {
    char v[16];
    int n = snprintf(v, sizeof(v), "%d", OBJLOG_STORE_FORMAT);
    rocksdb_writebatch_put_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), FMT_KEY, strlen(FMT_KEY),
                              v, (size_t)n);
}

/* Synced: the marker and what it describes reach the disk together. */
static int fmt_write(objlog_store *s, rocksdb_writebatch_t *wb, char *errstr, size_t es) {
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wo, 1);
    char *err = NULL;
    rocksdb_write(objlog_store_db(s), wo, wb, &err);
    rocksdb_writeoptions_destroy(wo);
    if (!err)
        return 0;
    snprintf(errstr, es, "store: %s", err);
    rocksdb_free(err);
    return -1;
}

/* 1 if no column family holds a row. */
static int fmt_store_empty(objlog_store *s) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    int empty = 1;
    for (int cf = 0; cf < OBJLOG_CF_COUNT && empty; cf++) {
        rocksdb_iterator_t *it =
            rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, (objlog_cf)cf));
        rocksdb_iter_seek_to_first(it);
        empty = !rocksdb_iter_valid(it);
        rocksdb_iter_destroy(it);
    }
    rocksdb_readoptions_destroy(ro);
    return empty;
}

int storefmt_open(objlog_store *s, char *errstr, size_t es) {
    int fmt = 0;
    int rc = fmt_read(s, &fmt, errstr, es);
    if (rc < 0)
        return -1;
    if (rc == 1 && (fmt < 2 || fmt > OBJLOG_STORE_FORMAT)) {
        char what[32];
        snprintf(what, sizeof(what), fmt ? "later than %d" : "unreadable", OBJLOG_STORE_FORMAT);
        snprintf(errstr, es, "this store is in format %s (meta \"%s\"), which this objlog "
                             "does not know (it writes format %d): use the objlog that made "
                             "it, or start with an empty --data to rebuild the view by "
                             "replaying the log", what, FMT_KEY, OBJLOG_STORE_FORMAT);
        return -1;
    }
    if (rc == 1 || !fmt_store_empty(s))
        return 0; /* current, or older until objlog_store_upgrade */
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    fmt_marker_put(wb, s);
    rc = fmt_write(s, wb, errstr, es);
    rocksdb_writebatch_destroy(wb);
    return rc;
}

int objlog_store_format(objlog_store *s) {
    char err[256];
    int fmt = 0;
    return fmt_read(s, &fmt, err, sizeof(err)) == 1 ? fmt : 1;
}

/* ---- the upgrade from format 1 ---- */

/* One bucket's 'b' row with its tenant and partition. */
typedef struct fmt_bucket {
    char *tenant;                /* owned */
    int32_t p;
    uint64_t f[FMT_NFIELDS];
} fmt_bucket;

/* An old row ('t' enc(tenant), or the 'g' row with tenant NULL). */
typedef struct fmt_old {
    char *tenant;                /* owned; NULL for 'g' */
    uint64_t f[FMT_NFIELDS];
    uint8_t *key;                /* owned */
    size_t key_len;
} fmt_old;

typedef struct fmt_scan {
    fmt_bucket *b;
    size_t nb, cap_b;
    fmt_old *old;                /* key order: tenants by name, 'g' last */
    size_t nold, cap_old;
    char *err;
    size_t es;
} fmt_scan;

static void fmt_fields(const Objlog__UsageStats *u, uint64_t f[FMT_NFIELDS]) {
    const uint64_t v[FMT_NFIELDS] = {u->objects, u->bytes, u->versions, u->version_bytes,
                                     u->noncurrent_versions, u->noncurrent_bytes,
                                     u->delete_markers, u->uploads, u->upload_part_bytes,
                                     u->buckets};
    memcpy(f, v, sizeof(v));
}

/* Packs f as apply.c packs a row (same message, same fields): a row
 * written here is byte-identical to the one a replay writes. */
static size_t fmt_pack(const uint64_t f[FMT_NFIELDS], uint8_t *buf) {
    Objlog__UsageStats u = OBJLOG__USAGE_STATS__INIT;
    u.objects = f[0];
    u.bytes = f[1];
    u.versions = f[2];
    u.version_bytes = f[3];
    u.noncurrent_versions = f[4];
    u.noncurrent_bytes = f[5];
    u.delete_markers = f[6];
    u.uploads = f[7];
    u.upload_part_bytes = f[8];
    u.buckets = f[9];
    return objlog__usage_stats__pack(&u, buf);
}

static void *fmt_grow(void *arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap)
        return arr;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(arr, nc * elem);
    if (p)
        *cap = nc;
    return p;
}

static int fmt_decode(const char *v, size_t vn, uint64_t f[FMT_NFIELDS]) {
    Objlog__UsageStats *u = objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v);
    if (!u)
        return -1;
    fmt_fields(u, f);
    objlog__usage_stats__free_unpacked(u, NULL);
    return 0;
}

/* The tenant of the bucket whose 'b' row is k (its record in `buckets` at
 * the same bucket_part). Owned string, or NULL (errstr). */
static char *fmt_bucket_tenant(objlog_store *s, rocksdb_readoptions_t *ro, const uint8_t *k,
                               size_t kn, char *errstr, size_t es) {
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_BUCKETS),
                             (const char *)k + 1, kn - 1, &vn, &err);
    if (err) {
        snprintf(errstr, es, "store: %s", err);
        rocksdb_free(err);
        return NULL;
    }
    Objlog__BucketRecord *r =
        v ? objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v) : NULL;
    rocksdb_free(v);
    if (!r) {
        snprintf(errstr, es, "a bucket's stats row has %s bucket record",
                 v ? "an undecodable" : "no");
        return NULL;
    }
    char *t = strdup(r->tenant ? r->tenant : "");
    objlog__bucket_record__free_unpacked(r, NULL);
    if (!t)
        snprintf(errstr, es, "out of memory");
    return t;
}

static int fmt_add_bucket(fmt_scan *sc, objlog_store *s, rocksdb_readoptions_t *ro,
                          const rangemap *rm, const uint8_t *k, size_t kn, const char *v,
                          size_t vn) {
    int p = objlog_stats_row_partition(rm, k, kn);
    fmt_bucket *nb = fmt_grow(sc->b, &sc->cap_b, sc->nb, sizeof(*sc->b));
    if (!nb) {
        snprintf(sc->err, sc->es, "out of memory");
        return -1;
    }
    sc->b = nb;
    fmt_bucket *e = &sc->b[sc->nb];
    memset(e, 0, sizeof(*e));
    if (p < 0 || fmt_decode(v, vn, e->f) < 0) {
        snprintf(sc->err, sc->es, "a bucket's stats row is malformed");
        return -1;
    }
    e->p = p;
    e->f[FMT_BUCKETS] = 1;
    e->tenant = fmt_bucket_tenant(s, ro, k, kn, sc->err, sc->es);
    if (!e->tenant)
        return -1;
    sc->nb++;
    return 0;
}

/* A format-1 't' enc(tenant) row (nothing after the name) or the "g" row. */
static int fmt_add_old(fmt_scan *sc, const uint8_t *k, size_t kn, const char *v, size_t vn) {
    fmt_old *no = fmt_grow(sc->old, &sc->cap_old, sc->nold, sizeof(*sc->old));
    if (!no) {
        snprintf(sc->err, sc->es, "out of memory");
        return -1;
    }
    sc->old = no;
    fmt_old *e = &sc->old[sc->nold];
    memset(e, 0, sizeof(*e));
    keybuf name;
    size_t used = 0;
    keybuf_init(&name);
    int ok = kn == 1 && k[0] == 'g';
    if (!ok && k[0] == 't' && keycodec_decode_enc(k + 1, kn - 1, &name, &used) == 0 &&
        1 + used == kn && !memchr(name.data, 0, name.len) && keybuf_append(&name, "", 1) == 0) {
        ok = 1;
        e->tenant = strdup((const char *)name.data);
        ok = e->tenant != NULL;
    }
    keybuf_free(&name);
    e->key = ok ? malloc(kn) : NULL;
    if (!ok || !e->key || fmt_decode(v, vn, e->f) < 0) {
        free(e->tenant);
        free(e->key);
        snprintf(sc->err, sc->es, "a stats row is neither a bucket's nor a format-1 tenant "
                                  "or global row");
        return -1;
    }
    memcpy(e->key, k, kn);
    e->key_len = kn;
    sc->nold++;
    return 0;
}

static int fmt_scan_rows(fmt_scan *sc, objlog_store *s, const rangemap *rm) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_STATS));
    int rc = 0;
    for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const char *v = rocksdb_iter_value(it, &vn);
        if (kn > 0 && k[0] == 'b')
            rc = fmt_add_bucket(sc, s, ro, rm, k, kn, v, vn);
        else
            rc = fmt_add_old(sc, k, kn, v, vn);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        snprintf(sc->err, sc->es, "store: scan stats: %s", err);
        rocksdb_free(err);
        rc = -1;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return rc;
}

static int fmt_bucket_cmp(const void *a, const void *b) {
    const fmt_bucket *x = a, *y = b;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : (x->p > y->p) - (x->p < y->p);
}

static void fmt_sum(uint64_t *into, const uint64_t *f) {
    for (int i = 0; i < FMT_NFIELDS; i++)
        into[i] += f[i];
}

/* The old row of tenant, NULL for 'g' (the rows are in key order: 'g'
 * first if present, then the tenants by name, which is strcmp order as
 * enc() keeps byte order and names hold no NUL). */
static const fmt_old *fmt_old_row(const fmt_scan *sc, const char *tenant) {
    size_t lo = sc->nold && !sc->old[0].tenant ? 1 : 0, hi = sc->nold;
    if (!tenant)
        return lo ? &sc->old[0] : NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sc->old[mid].tenant, tenant);
        if (c == 0)
            return &sc->old[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The old row of tenant (NULL: 'g') must hold want; a missing row holds
 * zeros. 0, or -1 with the disagreement in errstr. */
static int fmt_check_old(fmt_scan *sc, const char *tenant, const uint64_t *want) {
    static const uint64_t zero[FMT_NFIELDS];
    const fmt_old *o = fmt_old_row(sc, tenant);
    if (memcmp(o ? o->f : zero, want, sizeof(zero)) == 0)
        return 0;
    snprintf(sc->err, sc->es, "its %s%s%s row disagrees with the sum of its buckets' rows, "
             "so it cannot be upgraded exactly: stop objlogd and start it with an empty "
             "--data to rebuild the view by replaying the log",
             tenant ? "tenant \"" : "global", tenant ? tenant : "", tenant ? "\"" : "");
    return -1;
}

static void fmt_put(rocksdb_writebatch_t *wb, objlog_store *s, const keybuf *k,
                    const uint64_t *f) {
    uint8_t buf[FMT_NFIELDS * 11];
    rocksdb_writebatch_put_cf(wb, objlog_store_cf(s, OBJLOG_CF_STATS), (const char *)k->data,
                              k->len, (const char *)buf, fmt_pack(f, buf));
}

/* Stages the format-2 rows into wb and checks every old row: each old
 * tenant row must be matched by a tenant with buckets (the check of the
 * sums runs in tenant order) and 'g' by the grand total. */
static int fmt_stage(fmt_scan *sc, objlog_store *s, rocksdb_writebatch_t *wb) {
    keybuf k;
    keybuf_init(&k);
    uint64_t total[FMT_NFIELDS] = {0};
    int32_t maxp = -1;
    size_t tenants = 0;
    int rc = 0;
    for (size_t i = 0; i < sc->nb; i++)
        maxp = sc->b[i].p > maxp ? sc->b[i].p : maxp;
    uint64_t (*g)[FMT_NFIELDS] = calloc((size_t)maxp + 1, sizeof(*g));
    if (!g)
        rc = -2;
    qsort(sc->b, sc->nb, sizeof(*sc->b), fmt_bucket_cmp);
    for (size_t i = 0; rc == 0 && i < sc->nb;) {
        /* one tenant: its rows per partition, then its sum */
        uint64_t t[FMT_NFIELDS] = {0};
        size_t j = i;
        while (rc == 0 && j < sc->nb && strcmp(sc->b[j].tenant, sc->b[i].tenant) == 0) {
            uint64_t tp[FMT_NFIELDS] = {0};
            int32_t p = sc->b[j].p;
            for (; j < sc->nb && sc->b[j].p == p &&
                   strcmp(sc->b[j].tenant, sc->b[i].tenant) == 0; j++)
                fmt_sum(tp, sc->b[j].f);
            fmt_sum(t, tp);
            fmt_sum(g[p], tp);
            if (objlog_stats_tenant_key(&k, sc->b[i].tenant, p) < 0)
                rc = -2;
            else
                fmt_put(wb, s, &k, tp);
        }
        fmt_sum(total, t);
        if (rc == 0)
            rc = fmt_check_old(sc, sc->b[i].tenant, t);
        tenants++;
        i = j;
    }
    /* an old tenant row with no bucket left behind it */
    size_t old_tenants = 0;
    for (size_t i = 0; i < sc->nold; i++)
        old_tenants += sc->old[i].tenant != NULL;
    if (rc == 0 && old_tenants != tenants) {
        snprintf(sc->err, sc->es, "it holds %zu tenant rows for %zu tenants with buckets, "
                 "so it cannot be upgraded exactly: stop objlogd and start it with an empty "
                 "--data to rebuild the view by replaying the log", old_tenants, tenants);
        rc = -1;
    }
    /* format 1 kept 'g' once any bucket was made, with buckets = 0 after
     * the last went; its counters are then all 0, as the sum is */
    if (rc == 0)
        rc = fmt_check_old(sc, NULL, total);
    for (int32_t p = 0; rc == 0 && p <= maxp; p++) {
        if (!g[p][FMT_BUCKETS])
            continue;
        if (objlog_stats_global_key(&k, p) < 0)
            rc = -2;
        else
            fmt_put(wb, s, &k, g[p]);
    }
    free(g);
    keybuf_free(&k);
    if (rc == -2)
        snprintf(sc->err, sc->es, "out of memory");
    return rc < 0 ? -1 : 0;
}

static void fmt_scan_free(fmt_scan *sc) {
    for (size_t i = 0; i < sc->nb; i++)
        free(sc->b[i].tenant);
    for (size_t i = 0; i < sc->nold; i++) {
        free(sc->old[i].tenant);
        free(sc->old[i].key);
    }
    free(sc->b);
    free(sc->old);
}

/* To format 4: every 'r' row goes (formats 1 and 2 keyed them by request
 * id alone, format 3 by partition and request id). 0, or -1 (why). */
static int fmt_drop_rids(objlog_store *s, rocksdb_writebatch_t *wb, char *why, size_t wn) {
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_OUTCOMES);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, cf);
    for (rocksdb_iter_seek(it, "r", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < 1 || k[0] != 'r')
            break;
        rocksdb_writebatch_delete_cf(wb, cf, k, kn);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (err)
        snprintf(why, wn, "scan request ids: %s", err);
    rocksdb_free(err);
    return why[0] ? -1 : 0;
}

/* Deletes the header rows of one Unversioned bucket's keys. Such a key
 * has exactly its null version, so a header saying otherwise means the
 * store is not what the log made: refused. 0, or -1 (why). */
static int fmt_drop_bucket_headers(objlog_store *s, rocksdb_readoptions_t *ro,
                                   const char *bucket, rocksdb_writebatch_t *wb, char *why,
                                   size_t wn) {
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_VERSIONS);
    keybuf pre;
    keybuf_init(&pre);
    if (keycodec_bucket_part(&pre, bucket, strlen(bucket)) < 0) {
        keybuf_free(&pre);
        snprintf(why, wn, "out of memory");
        return -1;
    }
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, cf);
    for (rocksdb_iter_seek(it, (const char *)pre.data, pre.len);
         rocksdb_iter_valid(it) && !why[0]; rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < pre.len || memcmp(k, pre.data, pre.len) != 0)
            break;
        if (!objlog_versions_row_is_header(k, kn))
            continue;
        objlog_key_header h;
        const char *v = rocksdb_iter_value(it, &vn);
        if (objlog_key_header_decode(v, vn, &h) < 0 || !h.has_null || h.versions != 1)
            snprintf(why, wn, "a key of the Unversioned bucket %s has a header that does not "
                              "describe one null version: start with an empty --data to "
                              "rebuild the view by replaying the log", bucket);
        else
            rocksdb_writebatch_delete_cf(wb, cf, k, kn);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    keybuf_free(&pre);
    if (err && !why[0])
        snprintf(why, wn, "scan versions of %s: %s", bucket, err);
    rocksdb_free(err);
    return why[0] ? -1 : 0;
}

/* To format 4: the header rows of every Unversioned bucket's keys go. */
static int fmt_drop_headers(objlog_store *s, rocksdb_writebatch_t *wb, char *why, size_t wn) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                        objlog_store_cf(s, OBJLOG_CF_BUCKETS));
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !why[0];
         rocksdb_iter_next(it)) {
        size_t vn;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__BucketRecord *r =
            objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!r) {
            snprintf(why, wn, "a bucket record is corrupt");
            break;
        }
        if (r->versioning == OBJLOG__VERSIONING__VERSIONING_UNVERSIONED)
            fmt_drop_bucket_headers(s, ro, r->name, wb, why, wn);
        objlog__bucket_record__free_unpacked(r, NULL);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (err && !why[0])
        snprintf(why, wn, "scan buckets: %s", err);
    rocksdb_free(err);
    return why[0] ? -1 : 0;
}

/* Stages the `blobs` rows of one referencing row. */
static int fmt_refs(rocksdb_writebatch_t *wb, rocksdb_column_family_handle_t *cf, char **ids,
                    size_t n, char tag, const char *row, size_t rn, char *why, size_t wn) {
    for (size_t i = 0; i < n; i++) {
        keybuf k;
        if (blobrefs_key(&k, ids[i], tag, (const uint8_t *)row, rn) < 0) {
            snprintf(why, wn, "out of memory");
            return -1;
        }
        rocksdb_writebatch_put_cf(wb, cf, (const char *)k.data, k.len, "", 0);
        keybuf_free(&k);
    }
    return 0;
}

/* The blob ids named by row (k, v) of cf: a version row's, or a part
 * row's (its key is the upload row before it, last, and four bytes). */
static int fmt_row_ids(objlog_cf cf, const char *k, size_t kn, const char *v, size_t vn,
                       keybuf *last, char ***ids, size_t *n) {
    if (cf == OBJLOG_CF_VERSIONS) {
        if (objlog_versions_row_is_header(k, kn))
            return 0;
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        if (!r)
            return -1;
        int rc = r->delete_marker ? 0 : blobrefs_ids_of(r->meta, ids, n);
        objlog__version_record__free_unpacked(r, NULL);
        return rc;
    }
    if (!(last->len && kn == last->len + 4 && memcmp(k, last->data, last->len) == 0)) {
        keybuf_reset(last);
        return keybuf_append(last, k, kn);
    }
    Objlog__PartRecord *p = objlog__part_record__unpack(NULL, vn, (const uint8_t *)v);
    if (!p)
        return -1;
    int rc = 0;
    if (p->blob_id && p->blob_id[0]) {
        char **g = realloc(*ids, sizeof(*g));
        if (g)
            *ids = g;
        if (!g || !(g[0] = strdup(p->blob_id)))
            rc = -1;
        else
            *n = 1;
    }
    objlog__part_record__free_unpacked(p, NULL);
    return rc;
}

/* To format 5: the `blobs` rows of every version and part already kept. */
static int fmt_build_blobrefs(objlog_store *s, rocksdb_writebatch_t *wb, char *why, size_t wn) {
    static const objlog_cf cfs[] = {OBJLOG_CF_VERSIONS, OBJLOG_CF_UPLOADS};
    rocksdb_column_family_handle_t *bcf = objlog_store_cf(s, OBJLOG_CF_BLOBS);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    for (size_t c = 0; c < 2 && !why[0]; c++) {
        keybuf last;
        keybuf_init(&last);
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                            objlog_store_cf(s, cfs[c]));
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !why[0];
             rocksdb_iter_next(it)) {
            size_t kn, vn;
            const char *k = rocksdb_iter_key(it, &kn);
            const char *v = rocksdb_iter_value(it, &vn);
            char **ids = NULL;
            size_t n = 0;
            if (fmt_row_ids(cfs[c], k, kn, v, vn, &last, &ids, &n) < 0)
                snprintf(why, wn, "a %s row is corrupt", objlog_cf_name(cfs[c]));
            else
                fmt_refs(wb, bcf, ids, n,
                         cfs[c] == OBJLOG_CF_VERSIONS ? BLOBREFS_VERSION : BLOBREFS_PART, k, kn,
                         why, wn);
            blobrefs_ids_free(ids, n);
        }
        char *err = NULL;
        rocksdb_iter_get_error(it, &err);
        rocksdb_iter_destroy(it);
        keybuf_free(&last);
        if (err && !why[0])
            snprintf(why, wn, "scan %s: %s", objlog_cf_name(cfs[c]), err);
        rocksdb_free(err);
    }
    rocksdb_readoptions_destroy(ro);
    return why[0] ? -1 : 0;
}

int objlog_store_upgrade(objlog_store *s, const rangemap *rm, char *errstr, size_t es) {
    int fmt = 0;
    int rc = fmt_read(s, &fmt, errstr, es);
    if (rc < 0)
        return -1;
    if (rc == 1 && fmt == OBJLOG_STORE_FORMAT)
        return 0; /* storefmt_open refused later ones */
    int from = rc == 1 ? fmt : 1;
    char why[512] = "";
    fmt_scan sc = {.err = why, .es = sizeof(why)};
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rc = from == 1 ? fmt_scan_rows(&sc, s, rm) : 0;
    /* The old rows go first: no format-2 key is a format-1 key (enc()'s
     * terminator ends a format-1 name row, a format-2 one goes on with the
     * be32), so nothing put below is deleted. */
    for (size_t i = 0; rc == 0 && i < sc.nold; i++)
        rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_STATS),
                                     (const char *)sc.old[i].key, sc.old[i].key_len);
    if (rc == 0 && from == 1)
        rc = fmt_stage(&sc, s, wb);
    if (rc == 0)
        rc = fmt_drop_rids(s, wb, why, sizeof(why));
    if (rc == 0)
        rc = fmt_drop_headers(s, wb, why, sizeof(why));
    if (rc == 0 && from < 5)
        rc = fmt_build_blobrefs(s, wb, why, sizeof(why));
    if (rc == 0) {
        fmt_marker_put(wb, s);
        rc = fmt_write(s, wb, why, sizeof(why));
    }
    rocksdb_writebatch_destroy(wb);
    fmt_scan_free(&sc);
    if (rc < 0) {
        snprintf(errstr, es, "upgrading the store from format %d to %d: %s", from,
                 OBJLOG_STORE_FORMAT, why);
        return -1;
    }
    return 1;
}
