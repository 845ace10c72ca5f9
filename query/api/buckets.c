/* buckets.c: GET /v1/buckets, the store's buckets by name (S3 ListBuckets),
 * paginated: max_buckets (1..1000, default 1000), prefix, tenant and
 * continuation_token.
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
 * covers them all, as the usage reads do (read.c). The rows are read
 * by read/bucketscan.c, which the S3 endpoint's ListBuckets shares. */
#define _GNU_SOURCE
#include "core.h"
#include "api.h"
#include "cluster.h"
#include "read.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "rangemap.h"

#define BUCKETS_MAX 1000
/* A node gathering for another API may ask more: S3's ListBuckets gives
 * up to 10,000 buckets a page. */
#define BUCKETS_MAX_GATHERED 10000
#define BUCKETS_MAX_PARTS 256

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
    int cap = http_hop(c) ? BUCKETS_MAX_GATHERED : BUCKETS_MAX;
    if (http_param_int(c, "max_buckets", 1, cap, BUCKETS_MAX, max) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "max_buckets must be an integer in 1..%d", cap);
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
    /* a tenant's caller lists its own buckets, whatever it asks */
    if (c->authz && !c->admin) {
        if (q->tenant && strcmp(q->tenant, c->tenant) != 0) {
            authz_deny(c);
            return -1;
        }
        q->tenant = c->tenant;
    }
    const char *tok = http_param_get(c, "continuation_token", &n);
    size_t an_len;
    const char *an = http_param_get(c, "after_name", &an_len);
    if (an && !tok) {
        /* cluster_buckets' position: the token was checked where it came */
        if (!http_hop(c) || strlen(an) != an_len) {
            http_reply_error(c, 400, "InvalidArgument",
                             "after_name is for objlogd nodes; use continuation_token");
            return -1;
        }
        *after = strdup(an);
        q->after = *after;
        return *after ? 0 : -1;
    }
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

/* ---- a cluster node's listing: every node's page of its partitions ---- */

typedef struct buckets_merge {
    char *scope;                 /* the token's (buckets_scope) */
} buckets_merge;

/* cluster_buckets_gather's page as the JSON API's, with its token. */
static void buckets_merged(http_ctx *c, json_t *page, int more, const gather_reply *failed,
                           void *arg) {
    buckets_merge *bm = arg;
    if (failed) {
        forward_gather_error(c, failed);
    } else {
        size_t keep = json_array_size(page);
        char *next = NULL;
        if (more && keep > 0) {
            const char *last = json_string_value(json_object_get(json_array_get(page, keep - 1),
                                                                 "name"));
            next = listtoken_encode(c->q->token_key, bm->scope, LISTTOKEN_KEY,
                                    (const uint8_t *)last, strlen(last));
        }
        json_t *j = json_pack("{s:O, s:I, s:b}", "buckets", page, "bucket_count",
                              (json_int_t)keep, "is_truncated", next != NULL);
        if (next)
            json_object_set_new(j, "next_continuation_token", json_string(next));
        http_reply_json(c, 200, j);
        free(next);
    }
    free(bm->scope);
    free(bm);
}

/* 1 handled (asked the nodes, or answered 500/503), 0 this node applies every
 * partition. */
static int cluster_buckets(http_ctx *c, int max, const bucket_query *q) {
    buckets_merge *bm = calloc(1, sizeof(*bm));
    if (!bm || !(bm->scope = buckets_scope(q))) {
        free(bm);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return 1;
    }
    int rc = cluster_buckets_gather(c, max, q->prefix, q->tenant, q->after, buckets_merged, bm);
    if (rc != 1) { /* done will not run */
        free(bm->scope);
        free(bm);
    }
    return rc != 0;
}

void read_buckets(http_ctx *c) {
    bucket_query q = {0};
    long long max;
    char *after;
    if (buckets_params(c, &q, &max, &after) < 0)
        return;
    int32_t parts[BUCKETS_MAX_PARTS];
    int64_t applied[BUCKETS_MAX_PARTS];
    unsigned char only[BUCKETS_MAX_PARTS] = {0};
    int np = objlog_materializer_partitions(c->q->m);
    if (np > BUCKETS_MAX_PARTS)
        np = BUCKETS_MAX_PARTS;
    int some = cluster_partitions_param(c, np, only);
    if (some < 0) {
        free(after);
        return;
    }
    if (!some && c->q->cluster && !c->fenced && !http_hop(c) &&
        cluster_buckets(c, (int)max, &q)) {
        free(after);
        return;
    }
    int n = 0;
    for (int i = 0; i < np; i++)
        if (!some || only[i])
            parts[n++] = i;
    q.only = some ? only : NULL;
    q.rm = objlog_materializer_rangemap(c->q->m);
    if (fence_wait(c, parts, n, applied) != 0) {
        free(after);
        return;
    }
    fence_applied_header(c, parts, n, applied);
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
    buckets_page_free(&p);
}
