/* buckets.c: GET /v1/buckets, the store's buckets by name (S3 ListBuckets,
 * issue 11), paginated: max_buckets (1..1000, default 1000), prefix,
 * tenant and continuation_token.
 *
 * The `buckets` CF is keyed by bucket_part(b) = hash ‖ enc(b), so name
 * order is not key order and a name range is no key range. Every page
 * therefore reads every bucket row from one snapshot and keeps the
 * max_buckets smallest names after the token's. Buckets are few next to
 * keys (S3 caps an account at thousands), so that pass is cheap, and it
 * needs no second index for the materializer to keep.
 *
 * Invariant: a page's names are sorted, unique and all after the token's
 * name; the next page starts right after the last name returned, so a
 * walk neither repeats nor skips a bucket that exists throughout. The
 * token is a LIST token (listtoken.c: HMAC-signed by the store) bound to
 * this route's prefix and tenant, so an edited one, or one from another
 * listing, is a 400. Bucket rows live on every partition, hence the fence
 * covers them all, as the usage reads do (read.c). */
#define _GNU_SOURCE
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS_MAX 1000
#define BUCKETS_MAX_PARTS 256

/* One listed bucket; record owned. */
typedef struct bucket_row {
    Objlog__BucketRecord *r;
} bucket_row;

typedef struct bucket_page {
    bucket_row *rows;            /* sorted by name, at most max + 1 */
    size_t n, max;               /* max: max_buckets + 1 (tells truncation) */
} bucket_page;

typedef struct bucket_query {
    const char *prefix, *tenant, *after; /* NULL: none */
    size_t prefix_len;
} bucket_query;

static void page_free(bucket_page *p) {
    for (size_t i = 0; i < p->n; i++)
        objlog__bucket_record__free_unpacked(p->rows[i].r, NULL);
    free(p->rows);
}

static int bucket_wanted(const bucket_query *q, const Objlog__BucketRecord *r) {
    if (!r->name)
        return 0;
    if (q->prefix && strncmp(r->name, q->prefix, q->prefix_len) != 0)
        return 0;
    if (q->tenant && strcmp(r->tenant ? r->tenant : "", q->tenant) != 0)
        return 0;
    return !q->after || strcmp(r->name, q->after) > 0;
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
static int buckets_scan(objlog_store *s, const bucket_query *q, bucket_page *p,
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
        size_t vn;
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

static const char *versioning_name(Objlog__Versioning v) {
    switch (v) {
    case OBJLOG__VERSIONING__VERSIONING_ENABLED: return "Enabled";
    case OBJLOG__VERSIONING__VERSIONING_SUSPENDED: return "Suspended";
    default: return "";
    }
}

/* What a token is bound to: this route, its prefix and tenant. */
static char *buckets_scope(const bucket_query *q) {
    char *s = NULL;
    const char *p = q->prefix ? q->prefix : "", *t = q->tenant ? q->tenant : "";
    if (asprintf(&s, "/v1/buckets %zu:%s %zu:%s", strlen(p), p, strlen(t), t) < 0)
        return NULL;
    return s;
}

static json_t *buckets_json(const bucket_page *p, size_t max, const char *next) {
    json_t *arr = json_array();
    size_t n = p->n < max ? p->n : max;
    for (size_t i = 0; i < n; i++) {
        const Objlog__BucketRecord *r = p->rows[i].r;
        char created[40];
        http_format_time(r->created_ms, created, sizeof(created));
        json_t *b = json_pack("{s:s, s:s, s:s}", "name", r->name, "tenant",
                              r->tenant ? r->tenant : "", "created", created);
        const char *vs = versioning_name(r->versioning);
        if (*vs)
            json_object_set_new(b, "versioning", json_string(vs));
        json_array_append_new(arr, b);
    }
    json_t *j = json_pack("{s:o, s:I, s:b}", "buckets", arr, "bucket_count",
                          (json_int_t)n, "is_truncated", next != NULL);
    if (next)
        json_object_set_new(j, "next_continuation_token", json_string(next));
    return j;
}

/* The request's parameters into q (after: owned by *after). 0, or -1
 * after replying 400. */
static int buckets_params(http_ctx *c, bucket_query *q, long long *max, char **after) {
    size_t n;
    *after = NULL;
    if (http_param_int(c, "max_buckets", 1, BUCKETS_MAX, BUCKETS_MAX, max) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "max_buckets must be an integer in 1..%d", BUCKETS_MAX);
        return -1;
    }
    q->prefix = http_param_get(c, "prefix", &n);
    q->prefix_len = n;
    if (q->prefix && strlen(q->prefix) != n) {
        http_reply_error(c, 400, "InvalidArgument", "prefix must not hold NUL");
        return -1;
    }
    q->tenant = http_param_get(c, "tenant", &n);
    if (q->tenant && (n == 0 || strlen(q->tenant) != n)) {
        http_reply_error(c, 400, "InvalidArgument",
                         "tenant must be 1..256 bytes without NUL");
        return -1;
    }
    const char *tok = http_param_get(c, "continuation_token", &n);
    if (!tok)
        return 0;
    char *scope = buckets_scope(q);
    uint8_t *last = NULL;
    size_t last_len = 0;
    int kind;
    int rc = scope ? listtoken_decode(c->q->token_key, scope, tok, n, &kind, &last,
                                      &last_len) : -1;
    free(scope);
    if (rc < 0 || kind != LISTTOKEN_KEY || memchr(last, 0, last_len)) {
        free(last);
        http_reply_error(c, 400, "InvalidArgument",
                         "the continuation token is invalid or was issued for "
                         "another prefix or tenant");
        return -1;
    }
    *after = strndup((const char *)last, last_len);
    free(last);
    if (!*after) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    q->after = *after;
    return 0;
}

void read_buckets(http_ctx *c) {
    bucket_query q = {0};
    long long max;
    char *after;
    if (buckets_params(c, &q, &max, &after) < 0)
        return;
    int32_t parts[BUCKETS_MAX_PARTS];
    int64_t applied[BUCKETS_MAX_PARTS];
    int np = objlog_materializer_partitions(c->q->m);
    if (np > BUCKETS_MAX_PARTS)
        np = BUCKETS_MAX_PARTS;
    for (int i = 0; i < np; i++)
        parts[i] = i;
    if (fence_wait(c, parts, np, applied) != 0) {
        free(after);
        return;
    }
    fence_applied_header(c, parts, np, applied);
    bucket_page p = {.max = (size_t)max + 1};
    char err[256] = "";
    p.rows = calloc(p.max, sizeof(*p.rows));
    int rc = p.rows ? buckets_scan(c->q->store, &q, &p, err, sizeof(err)) : -1;
    char *next = NULL, *scope = NULL;
    if (rc == 0 && p.n > (size_t)max) {
        const char *last = p.rows[max - 1].r->name;
        scope = buckets_scope(&q);
        next = scope ? listtoken_encode(c->q->token_key, scope, LISTTOKEN_KEY,
                                        (const uint8_t *)last, strlen(last)) : NULL;
        if (!next)
            rc = -1;
    }
    if (rc == 0)
        http_reply_json(c, 200, buckets_json(&p, (size_t)max, next));
    else
        http_reply_error(c, 500, "InternalError", "%s", *err ? err : "out of memory");
    free(next);
    free(scope);
    free(after);
    page_free(&p);
}
