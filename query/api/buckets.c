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
    int max;
    char *scope;
} buckets_merge;

static int bucket_json_cmp(const void *a, const void *b) {
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
                  json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* Every node answered its partitions' first max names after the position;
 * the first max of their union is this page (each name lives on one
 * partition, so on one node). */
static void buckets_merged(http_ctx *c, const gather_reply *r, int n, void *arg) {
    buckets_merge *bm = arg;
    json_t *all = json_array(), *parsed[GATHER_MAX] = {0};
    int truncated = 0, failed = -1;
    for (int i = 0; i < n && failed < 0; i++) {
        parsed[i] = r[i].status == 200 ? json_loads(r[i].body, 0, NULL) : NULL;
        if (!parsed[i]) {
            failed = i;
            break;
        }
        truncated |= json_is_true(json_object_get(parsed[i], "is_truncated"));
        size_t k;
        json_t *b;
        json_array_foreach(json_object_get(parsed[i], "buckets"), k, b)
            json_array_append(all, b);
    }
    if (failed >= 0) {
        /* That node's error is the answer (a fence not met, a move). */
        json_t *ej = json_loads(r[failed].body, 0, NULL);
        json_t *e = json_object_get(ej, "error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        http_reply_error(c, r[failed].status >= 400 ? r[failed].status : 503,
                         code ? code : "SlowDown", "a node of the cluster: %s",
                         msg ? msg : "did not answer; retry");
        json_decref(ej);
    } else {
        size_t total = json_array_size(all);
        json_t **v = malloc((total ? total : 1) * sizeof(*v));
        for (size_t i = 0; v && i < total; i++)
            v[i] = json_array_get(all, i);
        if (v)
            qsort(v, total, sizeof(*v), bucket_json_cmp);
        size_t keep = total < (size_t)bm->max ? total : (size_t)bm->max;
        json_t *page = json_array();
        for (size_t i = 0; v && i < keep; i++)
            json_array_append(page, v[i]);
        char *next = NULL;
        if (v && (truncated || total > keep) && keep > 0) {
            const char *last = json_string_value(json_object_get(v[keep - 1], "name"));
            next = listtoken_encode(c->q->token_key, bm->scope, LISTTOKEN_KEY,
                                    (const uint8_t *)last, strlen(last));
        }
        json_t *j = json_pack("{s:o, s:I, s:b}", "buckets", page, "bucket_count",
                              (json_int_t)keep, "is_truncated", next != NULL);
        if (next)
            json_object_set_new(j, "next_continuation_token", json_string(next));
        http_reply_json(c, 200, j);
        free(next);
        free(v);
    }
    for (int i = 0; i < n; i++)
        json_decref(parsed[i]);
    json_decref(all);
    free(bm->scope);
    free(bm);
}

/* 1 handled (asked the nodes, or answered 503), 0 this node applies every
 * partition. */
static int cluster_buckets(http_ctx *c, int max, const bucket_query *q) {
    int np = objlog_materializer_partitions(c->q->m);
    cluster_gather_plan g;
    cluster_gather_plan_init(c, np, &g);
    for (int i = 0; g.plan == 1 && i < g.nn; i++) {
        char list[BUCKETS_MAX_PARTS * 5] = "";
        size_t len = 0;
        for (int p = 0; p < np; p++)
            if (g.owner[p] == i)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", p);
        if (asprintf(&g.paths[i], "/v1/buckets?max_buckets=%d&partitions=%s", max, list) < 0)
            g.paths[i] = NULL;
        cluster_query_add(&g.paths[i], "prefix", q->prefix);
        cluster_query_add(&g.paths[i], "tenant", q->tenant);
        cluster_query_add(&g.paths[i], "after_name", q->after);
        cluster_query_add(&g.paths[i], "consistency", http_param_get(c, "consistency", NULL));
        cluster_query_add(&g.paths[i], "timeout_ms", http_param_get(c, "timeout_ms", NULL));
        if (!g.paths[i])
            g.plan = -3;
    }
    buckets_merge *bm = g.plan == 1 ? calloc(1, sizeof(*bm)) : NULL;
    if (bm) {
        bm->max = max;
        bm->scope = buckets_scope(q);
    }
    if (g.plan == -3 || (g.plan == 1 && (!bm || !bm->scope))) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        if (bm)
            free(bm->scope);
        free(bm);
        g.plan = -3;
    } else if (g.plan == 1) {
        forward_gather(c, g.urls, (const char *const *)g.paths, g.nn, buckets_merged, bm);
    }
    cluster_gather_plan_free(&g);
    return g.plan != 0;
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
