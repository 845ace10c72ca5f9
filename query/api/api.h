/* api.h: the JSON API's handlers (query/api/) as the router calls them:
 * each answers its request exactly once (or parks it on a fence and runs
 * again), in JSON. What they read through is read.h.
 *
 * The sections below are the read routes, stats, buckets and outcomes;
 * the API's other files still declare theirs in internal.h. */
#ifndef OBJLOG_QUERY_API_H
#define OBJLOG_QUERY_API_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "view.h"

/* ---- reads.c: the read routes (GET /v1/buckets/...) ---- */
void read_object(http_ctx *c, const char *bucket, const uint8_t *key,
                 size_t key_len, int head);
void read_bucket(http_ctx *c, const char *bucket);
void read_list(http_ctx *c, const char *bucket);
void read_versions(http_ctx *c, const char *bucket);
void read_uploads(http_ctx *c, const char *bucket);
void read_parts(http_ctx *c, const char *bucket, const char *upload_id);
void read_write_status(http_ctx *c, const char *token);
/* GET /v1/buckets/{b}/usage: objects and bytes per common prefix one level
 * down, a bounded scan per page with a continuation token (usagetoken).
 * Fenced like LIST (the partitions of the prefix's range). */
void read_usage(http_ctx *c, const char *bucket);
/* One version as a listing shows it (LIST here, attribute index queries in
 * ixread.c). */
void read_version_jsonw(jsonw *w, const view_version *v);

/* ---- stats.c ---- */
/* Usage: GET /v1/buckets/{b}/stats (fenced on its bucket's
 * partition), /v1/tenants/{t}/stats, /v1/stats, /v1/stats/top (the sums
 * over every partition: fenced on all of them, or gathered from every
 * node of a cluster). */
void read_bucket_stats(http_ctx *c, const char *bucket);
void read_tenant_stats(http_ctx *c, const char *tenant);
void read_global_stats(http_ctx *c);
void read_top_stats(http_ctx *c);

/* ---- buckets.c ---- */
/* GET /v1/buckets?max_buckets=&prefix=&tenant=&continuation_token=: the
 * buckets by name, paginated (S3 ListBuckets); fenced on every partition. */
void read_buckets(http_ctx *c);

/* ---- outcomes.c ---- */
/* GET /v1/outcomes?partition=&from=&max=&timeout_ms=: the outcomes of one
 * partition from an offset on, for producers (one request, many writes). */
void outcomes_get(http_ctx *c);

#endif
