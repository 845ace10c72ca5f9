/* stats_recount.c: see stats_recount.h. The recount keeps one entry per
 * bucket name seen (in a bucket record or in a row of another view) and
 * one per tenant; linear lookups, as a test store holds a few buckets. */
#include "stats_recount.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objlog.pb-c.h"
#include "rows.h"

static const char *const stats_fields[STATS_NFIELDS] = {
    "objects", "bytes", "versions", "version_bytes", "noncurrent_versions",
    "noncurrent_bytes", "delete_markers", "uploads", "upload_part_bytes", "buckets"};

typedef struct rc_bucket {
    char *name;        /* NUL-terminated copy (bucket names have no NUL) */
    char *tenant;      /* NULL until its bucket record is seen */
    stats_usage u;
} rc_bucket;

/* One tenant's row of one partition ('t' enc(name) be32(p)). */
typedef struct rc_tenant {
    char *name;
    int32_t p;
    stats_usage u;
} rc_tenant;

typedef struct recount {
    const rangemap *rm;
    rc_bucket *b;
    size_t nb;
    rc_tenant *t;                /* one per (tenant, partition) */
    size_t nt;
    stats_usage *gp;             /* per partition: 'g' be32(p) */
    int32_t ngp;
    stats_usage g;               /* everything */
    char *err;
    size_t err_size;
    int failed;        /* errstr holds the first error */
} recount;

const char *stats_field_name(int i) {
    return i >= 0 && i < STATS_NFIELDS ? stats_fields[i] : "?";
}

/* Keeps the first error only: it names the first mismatch. */
__attribute__((format(printf, 2, 3))) static void rc_fail(recount *rc, const char *fmt, ...) {
    if (rc->failed)
        return;
    rc->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rc->err, rc->err_size, fmt, ap);
    va_end(ap);
}

static char *rc_strndup(const void *p, size_t n) {
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* The entry of bucket name[0..n), added if new. NULL out of memory. */
static rc_bucket *rc_bucket_get(recount *rc, const void *name, size_t n) {
    for (size_t i = 0; i < rc->nb; i++)
        if (strlen(rc->b[i].name) == n && memcmp(rc->b[i].name, name, n) == 0)
            return &rc->b[i];
    rc_bucket *nb = realloc(rc->b, (rc->nb + 1) * sizeof(*nb));
    if (!nb)
        return NULL;
    rc->b = nb;
    rc_bucket *e = &rc->b[rc->nb];
    memset(e, 0, sizeof(*e));
    e->name = rc_strndup(name, n);
    if (!e->name)
        return NULL;
    rc->nb++;
    return e;
}

static rc_tenant *rc_tenant_get(recount *rc, const char *name, int32_t p) {
    for (size_t i = 0; i < rc->nt; i++)
        if (strcmp(rc->t[i].name, name) == 0 && rc->t[i].p == p)
            return &rc->t[i];
    rc_tenant *nt = realloc(rc->t, (rc->nt + 1) * sizeof(*nt));
    if (!nt)
        return NULL;
    rc->t = nt;
    rc_tenant *e = &rc->t[rc->nt];
    memset(e, 0, sizeof(*e));
    e->name = rc_strndup(name, strlen(name));
    if (!e->name)
        return NULL;
    e->p = p;
    rc->nt++;
    return e;
}

/* Partition p's global sums, grown as needed. NULL out of memory. */
static stats_usage *rc_global_get(recount *rc, int32_t p) {
    if (p >= rc->ngp) {
        stats_usage *n = realloc(rc->gp, (size_t)(p + 1) * sizeof(*n));
        if (!n)
            return NULL;
        memset(n + rc->ngp, 0, (size_t)(p + 1 - rc->ngp) * sizeof(*n));
        rc->gp = n;
        rc->ngp = p + 1;
    }
    return &rc->gp[p];
}

/* The partition of bucket name: its route key with the empty key, which
 * every bucket event routes by and every key of the bucket shares. */
static int32_t rc_bucket_partition(const recount *rc, const char *name) {
    keybuf k;
    keybuf_init(&k);
    int32_t p = keycodec_route_key(&k, name, strlen(name), (const uint8_t *)"", 0) < 0
                    ? -1 : rangemap_partition(rc->rm, k.data, k.len);
    keybuf_free(&k);
    return p;
}

static void rc_free(recount *rc) {
    for (size_t i = 0; i < rc->nb; i++) {
        free(rc->b[i].name);
        free(rc->b[i].tenant);
    }
    for (size_t i = 0; i < rc->nt; i++)
        free(rc->t[i].name);
    free(rc->b);
    free(rc->t);
    free(rc->gp);
}

/* The bucket a route key (prefix of row) belongs to; NULL on error. */
static rc_bucket *rc_route_bucket(recount *rc, const uint8_t *row, size_t n, const char *cf) {
    keybuf bk, kk;
    size_t used;
    rc_bucket *e = NULL;
    keybuf_init(&bk);
    keybuf_init(&kk);
    if (keycodec_parse_route_key(row, n, &bk, &kk, &used) != 0)
        rc_fail(rc, "%s: a row key is not a route key", cf);
    else if (!(e = rc_bucket_get(rc, bk.data, bk.len)))
        rc_fail(rc, "%s: out of memory", cf);
    keybuf_free(&bk);
    keybuf_free(&kk);
    return e;
}

typedef void (*row_fn)(recount *rc, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn);

static void rc_scan(objlog_store *s, objlog_cf cf, recount *rc, row_fn fn) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, cf));
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !rc->failed;
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        fn(rc, k, kn, v, vn);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (err) {
        rc_fail(rc, "scan %s: %s", objlog_cf_name(cf), err);
        free(err);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static void row_bucket(recount *rc, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
    (void)k;
    (void)kn;
    Objlog__BucketRecord *r = objlog__bucket_record__unpack(NULL, vn, v);
    if (!r) {
        rc_fail(rc, "buckets: undecodable BucketRecord");
        return;
    }
    rc_bucket *e = rc_bucket_get(rc, r->name, strlen(r->name));
    if (!e || !(e->tenant = rc_strndup(r->tenant, strlen(r->tenant))))
        rc_fail(rc, "buckets: out of memory");
    objlog__bucket_record__free_unpacked(r, NULL);
}

static void row_object(recount *rc, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, v);
    rc_bucket *e = rc_route_bucket(rc, k, kn, "objects");
    if (!r || !e || r->delete_marker) {
        rc_fail(rc, "objects: %s row in bucket %s", r ? "delete marker" : "undecodable",
                e ? e->name : "?");
    } else {
        e->u.f[STATS_OBJECTS]++;
        e->u.f[STATS_BYTES] += r->meta ? r->meta->size : 0;
    }
    if (r)
        objlog__version_record__free_unpacked(r, NULL);
}

static void row_version(recount *rc, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
    if (objlog_versions_row_is_header(k, kn))
        return;
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, v);
    rc_bucket *e = rc_route_bucket(rc, k, kn, "versions");
    if (!r || !e) {
        rc_fail(rc, "versions: undecodable row");
    } else if (r->delete_marker) {
        e->u.f[STATS_DELETE_MARKERS]++;
    } else {
        e->u.f[STATS_VERSIONS]++;
        e->u.f[STATS_VERSION_BYTES] += r->meta ? r->meta->size : 0;
    }
    if (r)
        objlog__version_record__free_unpacked(r, NULL);
}

static void row_upload(recount *rc, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
    size_t rk;
    objlog_uploads_row kind = objlog_uploads_row_kind(k, kn, &rk, NULL, NULL, NULL);
    if (kind == OBJLOG_UPLOADS_ROW_INVALID) {
        rc_fail(rc, "uploads: a row key of no known kind");
        return;
    }
    rc_bucket *e = rc_route_bucket(rc, k, rk, "uploads");
    if (!e)
        return;
    if (kind == OBJLOG_UPLOADS_ROW_UPLOAD) {
        e->u.f[STATS_UPLOADS]++;
        return;
    }
    Objlog__PartRecord *p = objlog__part_record__unpack(NULL, vn, v);
    if (!p) {
        rc_fail(rc, "uploads: undecodable PartRecord in bucket %s", e->name);
        return;
    }
    e->u.f[STATS_UPLOAD_PART_BYTES] += p->size;
    objlog__part_record__free_unpacked(p, NULL);
}

/* Derived fields, and the sums into the bucket's partition's tenant and
 * global rows. */
static void rc_sum(recount *rc) {
    for (size_t i = 0; i < rc->nb && !rc->failed; i++) {
        rc_bucket *e = &rc->b[i];
        stats_usage *u = &e->u;
        u->f[STATS_NONCURRENT_VERSIONS] = u->f[STATS_VERSIONS] - u->f[STATS_OBJECTS];
        u->f[STATS_NONCURRENT_BYTES] = u->f[STATS_VERSION_BYTES] - u->f[STATS_BYTES];
        if (!e->tenant) {
            rc_fail(rc, "rows of bucket %s remain without its bucket record", e->name);
            return;
        }
        int32_t p = rc_bucket_partition(rc, e->name);
        rc_tenant *t = p < 0 ? NULL : rc_tenant_get(rc, e->tenant, p);
        stats_usage *gp = p < 0 ? NULL : rc_global_get(rc, p);
        if (!t || !gp) {
            rc_fail(rc, "out of memory");
            return;
        }
        u->f[STATS_BUCKETS] = 1;
        for (int f = 0; f < STATS_NFIELDS; f++) {
            t->u.f[f] += u->f[f];
            gp->f[f] += u->f[f];
            rc->g.f[f] += u->f[f];
        }
        u->f[STATS_BUCKETS] = 0; /* a bucket's own row never counts buckets */
    }
}

int stats_recount_stored(objlog_store *s, const keybuf *key, stats_usage *out, char *errstr,
                         size_t errstr_size) {
    memset(out, 0, sizeof(*out));
    char *err = NULL;
    size_t vn;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_STATS),
                             (const char *)key->data, key->len, &vn, &err);
    rocksdb_readoptions_destroy(ro);
    if (err) {
        snprintf(errstr, errstr_size, "read stats row: %s", err);
        free(err);
        return -1;
    }
    if (!v)
        return 0;
    Objlog__UsageStats *u = objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    if (!u) {
        snprintf(errstr, errstr_size, "undecodable UsageStats row");
        return -1;
    }
    uint64_t f[STATS_NFIELDS] = {u->objects, u->bytes, u->versions, u->version_bytes,
                                 u->noncurrent_versions, u->noncurrent_bytes,
                                 u->delete_markers, u->uploads, u->upload_part_bytes,
                                 u->buckets};
    memcpy(out->f, f, sizeof(f));
    objlog__usage_stats__free_unpacked(u, NULL);
    return 1;
}

/* Compares the stored row at key with want. want_row: whether the row
 * must exist. 1 found, 0 absent, -1 mismatch (rc->err set). */
static int rc_compare(recount *rc, objlog_store *s, const keybuf *key, const char *what,
                      int want_row, const stats_usage *want) {
    stats_usage got;
    char err[256];
    int found = stats_recount_stored(s, key, &got, err, sizeof(err));
    if (found < 0) {
        rc_fail(rc, "%s: %s", what, err);
        return -1;
    }
    if (found != want_row) {
        rc_fail(rc, "%s: stats row %s", what, found ? "present but should not be" : "missing");
        return -1;
    }
    for (int f = 0; f < STATS_NFIELDS; f++) {
        if (want->f[f] == got.f[f])
            continue;
        rc_fail(rc, "%s: %s stored %llu, recount %llu", what, stats_fields[f],
                (unsigned long long)got.f[f], (unsigned long long)want->f[f]);
        return -1;
    }
    return found;
}

static size_t rc_count_rows(objlog_store *s, objlog_cf cf) {
    size_t n = 0;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, cf));
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it))
        n++;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* 1 if name already has a row among rc->t[0..i) (tenants are counted
 * once, whatever their partitions). */
static int rc_tenant_seen(const recount *rc, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (strcmp(rc->t[j].name, rc->t[i].name) == 0)
            return 1;
    return 0;
}

/* Every row of the stats CF names its partition in its key. */
static void rc_check_partitions(recount *rc, objlog_store *s) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it =
        rocksdb_create_iterator_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_STATS));
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !rc->failed;
         rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (objlog_stats_row_partition(rc->rm, k, kn) < 0)
            rc_fail(rc, "a stats row (first byte '%c', %zu bytes) names no partition",
                    kn ? k[0] : '?', kn);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

/* Every recounted row against the store; counts the rows found. */
static void rc_compare_all(recount *rc, objlog_store *s, stats_recount_summary *sum) {
    keybuf k;
    char what[300];
    keybuf_init(&k);
    for (size_t i = 0; i < rc->nb && !rc->failed; i++) {
        snprintf(what, sizeof(what), "bucket %s", rc->b[i].name);
        if (objlog_stats_bucket_key(&k, rc->b[i].name, strlen(rc->b[i].name)) < 0)
            rc_fail(rc, "%s: out of memory", what);
        else if (rc_compare(rc, s, &k, what, 1, &rc->b[i].u) == 1)
            sum->buckets++;
    }
    for (size_t i = 0; i < rc->nt && !rc->failed; i++) {
        snprintf(what, sizeof(what), "tenant \"%s\" partition %d", rc->t[i].name,
                 (int)rc->t[i].p);
        if (objlog_stats_tenant_key(&k, rc->t[i].name, rc->t[i].p) < 0)
            rc_fail(rc, "%s: out of memory", what);
        else if (rc_compare(rc, s, &k, what, 1, &rc->t[i].u) == 1)
            sum->tenant_rows++;
        sum->tenants += !rc_tenant_seen(rc, i);
    }
    /* 'g' be32(p) exists exactly while partition p holds a bucket. */
    for (int32_t p = 0; p < rc->ngp && !rc->failed; p++) {
        int want = rc->gp[p].f[STATS_BUCKETS] > 0;
        snprintf(what, sizeof(what), "global partition %d", (int)p);
        if (objlog_stats_global_key(&k, p) < 0)
            rc_fail(rc, "%s: out of memory", what);
        else if (rc_compare(rc, s, &k, what, want, &rc->gp[p]) == 1)
            sum->globals++;
    }
    keybuf_free(&k);
    if (rc->failed)
        return;
    rc_check_partitions(rc, s);
    sum->rows = sum->buckets + sum->tenant_rows + sum->globals;
    size_t rows = rc_count_rows(s, OBJLOG_CF_STATS);
    if (!rc->failed && rows != sum->rows)
        rc_fail(rc, "the stats CF holds %zu rows, the recount explains %zu", rows, sum->rows);
}

/* The recount of s into rc (no comparison). */
static void rc_run(recount *rc, objlog_store *s, const rangemap *rm, char *errstr,
                   size_t errstr_size) {
    memset(rc, 0, sizeof(*rc));
    rc->rm = rm;
    rc->err = errstr;
    rc->err_size = errstr_size;
    rc_scan(s, OBJLOG_CF_BUCKETS, rc, row_bucket);
    rc_scan(s, OBJLOG_CF_OBJECTS, rc, row_object);
    rc_scan(s, OBJLOG_CF_VERSIONS, rc, row_version);
    rc_scan(s, OBJLOG_CF_UPLOADS, rc, row_upload);
    if (!rc->failed)
        rc_sum(rc);
}

int stats_recount_check(objlog_store *s, const rangemap *rm, stats_recount_summary *sum,
                        char *errstr, size_t errstr_size) {
    recount rc;
    stats_recount_summary local;
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof(*sum));
    rc_run(&rc, s, rm, errstr, errstr_size);
    if (!rc.failed)
        rc_compare_all(&rc, s, sum);
    sum->global = rc.g;
    rc_free(&rc);
    return rc.failed ? -1 : 0;
}

/* ---- a format-1 store, for the upgrade test ---- */

static void rc_put_usage(rocksdb_writebatch_t *wb, objlog_store *s, const void *k, size_t kn,
                         const stats_usage *u) {
    Objlog__UsageStats m = OBJLOG__USAGE_STATS__INIT;
    uint64_t *f[STATS_NFIELDS] = {&m.objects, &m.bytes, &m.versions, &m.version_bytes,
                                  &m.noncurrent_versions, &m.noncurrent_bytes,
                                  &m.delete_markers, &m.uploads, &m.upload_part_bytes,
                                  &m.buckets};
    for (int i = 0; i < STATS_NFIELDS; i++)
        *f[i] = u->f[i];
    uint8_t buf[STATS_NFIELDS * 11];
    rocksdb_writebatch_put_cf(wb, objlog_store_cf(s, OBJLOG_CF_STATS), k, kn, (char *)buf,
                              objlog__usage_stats__pack(&m, buf));
}

/* Formats 1 to 3 kept a row per request id, pointing at its newest first
 * outcome: 'r' request_id (1, 2) or 'r' be32(p) request_id (3), value
 * be32(p) be64(offset). Rebuilt from the outcome rows that are first
 * outcomes (ascending offsets: the newest wins). Returns the rows put. */
static long rc_old_rids(objlog_store *s, rocksdb_writebatch_t *wb, int fmt) {
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_OUTCOMES);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, cf);
    long n = 0;
    for (rocksdb_iter_seek(it, "o", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        if (kn != APPLY_OUTCOME_KEY_LEN || k[0] != 'o')
            break;
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, v);
        uint8_t key[80], pos[12];
        if (o && o->request_id.len && o->request_id.len <= 64 &&
            o->offset == (int64_t)apply_get_be64(k + 5)) {
            size_t at = 0;
            key[at++] = 'r';
            if (fmt == 3) {
                memcpy(key + at, k + 1, 4);
                at += 4;
            }
            memcpy(key + at, o->request_id.data, o->request_id.len);
            memcpy(pos, k + 1, 12);
            rocksdb_writebatch_put_cf(wb, cf, (const char *)key, at + o->request_id.len,
                                      (const char *)pos, sizeof(pos));
            n++;
        }
        if (o)
            objlog__outcome__free_unpacked(o, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* Formats 1 to 3 kept a header row for every key with a version, an
 * Unversioned bucket's keys too: put back for each version row without
 * one (the key's null version alone). */
static void rc_old_headers(objlog_store *s, rocksdb_writebatch_t *wb) {
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_VERSIONS);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro, cf);
    keybuf last; /* route key of the last header or version row */
    keybuf_init(&last);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        size_t rn = objlog_versions_row_is_header(k, kn) ? kn : kn - 8;
        int same = last.len == rn && memcmp(last.data, k, rn) == 0;
        keybuf_reset(&last);
        keybuf_append(&last, k, rn);
        if (same || rn == kn)
            continue;
        objlog_key_header h = {.has_null = 1, .null_seq = keycodec_row_seq(k, kn),
                               .versions = 1};
        uint8_t v[APPLY_HEADER_LEN];
        apply_header_encode(&h, v);
        rocksdb_writebatch_put_cf(wb, cf, (const char *)k, rn, (const char *)v, sizeof(v));
    }
    keybuf_free(&last);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static long rc_write_old(objlog_store *s, int fmt, char *errstr, size_t errstr_size) {
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    long n = rc_old_rids(s, wb, fmt);
    rc_old_headers(s, wb);
    char marker[2] = {(char)('0' + fmt), 0};
    rocksdb_writebatch_put_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), "format", 6, marker, 1);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_write(objlog_store_db(s), wo, wb, &err);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_writebatch_destroy(wb);
    if (!err)
        return n;
    snprintf(errstr, errstr_size, "write: %s", err);
    free(err);
    return -1;
}

long stats_recount_write_format3(objlog_store *s, char *errstr, size_t errstr_size) {
    return rc_write_old(s, 3, errstr, errstr_size);
}

long stats_recount_write_format2(objlog_store *s, char *errstr, size_t errstr_size) {
    return rc_write_old(s, 2, errstr, errstr_size);
}

int stats_recount_write_format1(objlog_store *s, const rangemap *rm, char *errstr,
                                size_t errstr_size) {
    recount rc;
    rc_run(&rc, s, rm, errstr, errstr_size);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_column_family_handle_t *cf = objlog_store_cf(s, OBJLOG_CF_STATS);
    /* every tenant and global row goes ('t' and 'g' ranges) */
    rocksdb_writebatch_delete_range_cf(wb, cf, "g", 1, "h", 1);
    rocksdb_writebatch_delete_range_cf(wb, cf, "t", 1, "u", 1);
    keybuf k;
    keybuf_init(&k);
    for (size_t i = 0; i < rc.nt && !rc.failed; i++) {
        if (rc_tenant_seen(&rc, i))
            continue;
        stats_usage t = {{0}};
        for (size_t j = i; j < rc.nt; j++)
            if (strcmp(rc.t[j].name, rc.t[i].name) == 0)
                for (int f = 0; f < STATS_NFIELDS; f++)
                    t.f[f] += rc.t[j].u.f[f];
        /* format 1's tenant key: 't' enc(tenant), no partition */
        if (objlog_stats_tenant_prefix(&k, rc.t[i].name) < 0)
            rc_fail(&rc, "out of memory");
        else
            rc_put_usage(wb, s, k.data, k.len, &t);
    }
    keybuf_free(&k);
    /* format 1 kept its one 'g' row once any bucket was made */
    if (!rc.failed && rc.nb > 0)
        rc_put_usage(wb, s, "g", 1, &rc.g);
    rocksdb_writebatch_delete_cf(wb, objlog_store_cf(s, OBJLOG_CF_META), "format", 6);
    rc_old_rids(s, wb, 1);
    rc_old_headers(s, wb);
    char *err = NULL;
    if (!rc.failed) {
        rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
        rocksdb_write(objlog_store_db(s), wo, wb, &err);
        rocksdb_writeoptions_destroy(wo);
    }
    if (err) {
        rc_fail(&rc, "write: %s", err);
        free(err);
    }
    rocksdb_writebatch_destroy(wb);
    rc_free(&rc);
    return rc.failed ? -1 : 0;
}
