/* stats_recount.c: see stats_recount.h. The recount keeps one entry per
 * bucket name seen (in a bucket record or in a row of another view) and
 * one per tenant; linear lookups, as a test store holds a few buckets. */
#include "stats_recount.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objlog.pb-c.h"

static const char *const stats_fields[STATS_NFIELDS] = {
    "objects", "bytes", "versions", "version_bytes", "noncurrent_versions",
    "noncurrent_bytes", "delete_markers", "uploads", "upload_part_bytes", "buckets"};

typedef struct rc_bucket {
    char *name;        /* NUL-terminated copy (bucket names have no NUL) */
    char *tenant;      /* NULL until its bucket record is seen */
    stats_usage u;
} rc_bucket;

typedef struct rc_tenant {
    char *name;
    stats_usage u;
} rc_tenant;

typedef struct recount {
    rc_bucket *b;
    size_t nb;
    rc_tenant *t;
    size_t nt;
    stats_usage g;
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

static rc_tenant *rc_tenant_get(recount *rc, const char *name) {
    for (size_t i = 0; i < rc->nt; i++)
        if (strcmp(rc->t[i].name, name) == 0)
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
    rc->nt++;
    return e;
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

/* Derived fields, and the sums into tenants and the global row. */
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
        rc_tenant *t = rc_tenant_get(rc, e->tenant);
        if (!t) {
            rc_fail(rc, "out of memory");
            return;
        }
        u->f[STATS_BUCKETS] = 1;
        for (int f = 0; f < STATS_NFIELDS; f++) {
            t->u.f[f] += u->f[f];
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
        snprintf(what, sizeof(what), "tenant \"%s\"", rc->t[i].name);
        if (objlog_stats_tenant_key(&k, rc->t[i].name) < 0)
            rc_fail(rc, "%s: out of memory", what);
        else if (rc_compare(rc, s, &k, what, 1, &rc->t[i].u) == 1)
            sum->tenants++;
    }
    /* 'g' exists once any bucket was created, even after the last is
     * gone; when absent it must still equal the (zero) recount. */
    stats_usage got;
    char err[256];
    int found = -1;
    if (!rc->failed && objlog_stats_global_key(&k) < 0)
        rc_fail(rc, "global: out of memory");
    if (!rc->failed && (found = stats_recount_stored(s, &k, &got, err, sizeof(err))) < 0)
        rc_fail(rc, "global: %s", err);
    if (!rc->failed)
        rc_compare(rc, s, &k, "global", found, &rc->g);
    keybuf_free(&k);
    if (rc->failed)
        return;
    sum->rows = sum->buckets + sum->tenants + (size_t)found;
    size_t rows = rc_count_rows(s, OBJLOG_CF_STATS);
    if (rows != sum->rows)
        rc_fail(rc, "the stats CF holds %zu rows, the recount explains %zu", rows, sum->rows);
}

int stats_recount_check(objlog_store *s, stats_recount_summary *sum, char *errstr,
                        size_t errstr_size) {
    recount rc;
    stats_recount_summary local;
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof(*sum));
    memset(&rc, 0, sizeof(rc));
    rc.err = errstr;
    rc.err_size = errstr_size;
    rc_scan(s, OBJLOG_CF_BUCKETS, &rc, row_bucket);
    rc_scan(s, OBJLOG_CF_OBJECTS, &rc, row_object);
    rc_scan(s, OBJLOG_CF_VERSIONS, &rc, row_version);
    rc_scan(s, OBJLOG_CF_UPLOADS, &rc, row_upload);
    if (!rc.failed)
        rc_sum(&rc);
    if (!rc.failed)
        rc_compare_all(&rc, s, sum);
    sum->global = rc.g;
    rc_free(&rc);
    return rc.failed ? -1 : 0;
}
