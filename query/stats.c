/* stats.c: the usage counters over HTTP (issue 6): GET /v1/buckets/{b}/stats,
 * /v1/tenants/{t}/stats, /v1/stats and /v1/stats/top. The counting is
 * apply.c's (the `stats` CF), the reading view.c's; this file owns the
 * parameters, the fences and the JSON shapes.
 *
 * Every answer reads ONE view opened after its fence, so it reflects at
 * least the positions it reports in X-Objlog-Applied. */
#define _GNU_SOURCE
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_MAX_PARTS 256

/* Every partition: a bucket's keys, hence its counters, span them all.
 * A view applied without counters (bench only) has none to show. */
static view *read_all_view(http_ctx *c) {
    if (!objlog_materializer_stats_view(c->q->m)) {
        http_reply_error(c, 503, "ServiceUnavailable",
                         "this objlogd keeps no usage counters (--test-no-stats, for "
                         "benchmarks only)");
        return NULL;
    }
    int32_t parts[READ_MAX_PARTS];
    int n = objlog_materializer_partitions(c->q->m);
    if (n > READ_MAX_PARTS)
        n = READ_MAX_PARTS;
    for (int i = 0; i < n; i++)
        parts[i] = i;
    return read_fenced_view(c, parts, n);
}

static json_t *read_usage_json(const view_usage *u) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "objects", (json_int_t)u->objects, "bytes", (json_int_t)u->bytes,
        "versions", (json_int_t)u->versions,
        "version_bytes", (json_int_t)u->version_bytes,
        "noncurrent_versions", (json_int_t)u->noncurrent_versions,
        "noncurrent_bytes", (json_int_t)u->noncurrent_bytes,
        "delete_markers", (json_int_t)u->delete_markers,
        "uploads", (json_int_t)u->uploads,
        "upload_part_bytes", (json_int_t)u->upload_part_bytes);
}

void read_bucket_stats(http_ctx *c, const char *bucket) {
    view *v = read_all_view(c);
    if (!v)
        return;
    view_bucket b;
    view_usage u;
    char err[256];
    view_rc rc = view_get_bucket(v, bucket, &b, err, sizeof(err));
    if (rc == VIEW_OK) {
        rc = view_bucket_usage(v, bucket, &u, err, sizeof(err));
        if (rc != VIEW_OK)
            view_bucket_free(&b);
    }
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, bucket, err);
        return;
    }
    const Objlog__BucketRecord *r = b.record;
    json_t *j = read_usage_json(&u);
    json_object_set_new(j, "bucket", json_string(bucket));
    json_object_set_new(j, "tenant", json_string(r->tenant ? r->tenant : ""));
    json_object_set_new(j, "quota", json_pack("{s:I, s:I}",
        "max_bytes", (json_int_t)(r->quota ? r->quota->max_bytes : 0),
        "max_objects", (json_int_t)(r->quota ? r->quota->max_objects : 0)));
    view_bucket_free(&b);
    http_reply_json(c, 200, j);
}

void read_tenant_stats(http_ctx *c, const char *tenant) {
    view *v = read_all_view(c);
    if (!v)
        return;
    view_usage u;
    char err[256];
    view_rc rc = view_tenant_usage(v, tenant, &u, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, "", err);
        return;
    }
    json_t *j = read_usage_json(&u);
    json_object_set_new(j, "tenant", json_string(tenant));
    json_object_set_new(j, "buckets", json_integer((json_int_t)u.buckets));
    http_reply_json(c, 200, j);
}

void read_global_stats(http_ctx *c) {
    view *v = read_all_view(c);
    if (!v)
        return;
    view_usage u;
    uint64_t tenants = 0;
    char err[256];
    view_rc rc = view_global_usage(v, &u, &tenants, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, "", err);
        return;
    }
    json_t *j = read_usage_json(&u);
    json_object_set_new(j, "buckets", json_integer((json_int_t)u.buckets));
    json_object_set_new(j, "tenants", json_integer((json_int_t)tenants));
    http_reply_json(c, 200, j);
}

#define READ_TOP_MAX 100
#define READ_TOP_DEFAULT 10

void read_top_stats(http_ctx *c) {
    size_t bn;
    const char *by = http_param_get(c, "by", &bn);
    view_top_by key = VIEW_TOP_BYTES;
    if (!by || strcmp(by, "bytes") == 0)
        by = "bytes";
    else if (strcmp(by, "objects") == 0)
        key = VIEW_TOP_OBJECTS;
    else if (strcmp(by, "versions") == 0)
        key = VIEW_TOP_VERSIONS;
    else {
        http_reply_error(c, 400, "InvalidArgument", "by must be bytes, objects or versions");
        return;
    }
    long long limit;
    if (http_param_int(c, "limit", 1, READ_TOP_MAX, READ_TOP_DEFAULT, &limit) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "limit must be an integer in 1..%d",
                         READ_TOP_MAX);
        return;
    }
    view *v = read_all_view(c);
    if (!v)
        return;
    view_top t;
    char err[256];
    view_rc rc = view_top_buckets(v, key, (size_t)limit, &t, err, sizeof(err));
    view_close(v);
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, "", err);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < t.n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I}",
            "bucket", t.e[i].bucket, "tenant", t.e[i].tenant,
            "objects", (json_int_t)t.e[i].usage.objects,
            "bytes", (json_int_t)t.e[i].usage.bytes,
            "versions", (json_int_t)t.e[i].usage.versions));
    view_top_free(&t);
    http_reply_json(c, 200, json_pack("{s:s, s:o}", "by", by, "buckets", arr));
}

