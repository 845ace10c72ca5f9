/* api.h: the JSON API's handlers (query/api/) as the router calls them:
 * each answers its request exactly once (or parks it on a fence and runs
 * again), in JSON. What they read through is read.h.
 *
 * Its router (router.c) is the API's face on the server: one route table
 * per level (top paths, bucket subresources). */
#ifndef OBJLOG_QUERY_API_H
#define OBJLOG_QUERY_API_H

#include <stddef.h>
#include <stdint.h>

#include "read.h"
#include "server.h"
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

/* ---- ranges.c ---- */
/* GET /v1/ranges: the range map this node routes and fences by. */
void ranges_get(http_ctx *c);

/* ---- outcomes.c ---- */
/* GET /v1/outcomes?partition=&from=&max=&timeout_ms=: the outcomes of one
 * partition from an offset on, for producers (one request, many writes). */
void outcomes_get(http_ctx *c);

/* ---- router.c: the JSON API's routes and face ---- */
extern const http_face api_face;

/* ---- apiguard.c: the JSON API's door (tokens, peers' signatures) ---- */
/* objlogd's --api-credentials and what it needs. */
typedef struct api_settings {
    const char *credentials;     /* the tokens file; NULL: the API is open */
    int insecure;                /* --insecure: a tokens file others may read */
    int cluster_unsigned;        /* a cluster node without a shared secret */
} api_settings;
int api_conf_new(objlog_query *q, const api_settings *st, char *errstr, size_t errstr_size);
int api_conf_reload(objlog_query *q, char *errstr, size_t errstr_size); /* SIGHUP */
void api_conf_free(objlog_query *q);
/* 1 when the JSON API takes requests without a token. */
int api_open(const objlog_query *q);
/* Sets c->authz/tenant/admin for a JSON request to path: 0, or -1 after
 * answering 401. */
int api_authenticate(http_ctx *c, const char *path);
/* 0 when the caller has the admin role (or the API is open); -1 after
 * answering 403. */
int api_need_admin(http_ctx *c);

/* ---- metrics.c: GET /v1/lag, /readyz, /metrics ---- */
void metrics_lag(http_ctx *c);
void metrics_readyz(http_ctx *c);
void metrics_get(http_ctx *c);

/* ---- lcapi.c: the lifecycle routes ---- */
/* /v1/buckets/{b}/lifecycle[/status]; rest: "" or "/status". */
void lcapi_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                 const char *rest);

/* ---- notifyapi.c: the event notification routes ---- */
/* /v1/buckets/{b}/notifications[/status]; rest: "" or "/status". */
void notifyapi_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                     const char *rest);

/* ---- blobsapi.c ---- */
/* GET /v1/blobs?after=&limit=: the blob ids this node's partitions
 * reference, a page at a time, with the positions they reflect. */
void blobs_get(http_ctx *c);

/* ---- logapi.c ---- */
/* GET /v1/log?level=&limit=&after=: this node's recent warnings and
 * errors (its log ring), newest last, and how many since start. */
void logapi_get(http_ctx *c);

/* ---- ixread.c: the attribute index routes ---- */
/* rest: what follows "/v1/buckets/{b}/indexes". */
void ixread_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                  const char *rest);

/* ---- writes.c: the write routes (their JSON bodies, into gateway calls) ---- */

void gateway_put_bucket(http_ctx *c, const char *bucket);
void gateway_put_versioning(http_ctx *c, const char *bucket);
void gateway_put_quota(http_ctx *c, const char *bucket);
void gateway_put_rate_limit(http_ctx *c, const char *bucket);
void gateway_put_object(http_ctx *c, const char *bucket, const uint8_t *key,
                        size_t key_len);
void gateway_delete_object(http_ctx *c, const char *bucket,
                           const uint8_t *key, size_t key_len);
void gateway_create_upload(http_ctx *c, const char *bucket);
void gateway_upload_part(http_ctx *c, const char *bucket, const char *upload_id,
                         const char *part_number);
void gateway_complete_upload(http_ctx *c, const char *bucket,
                             const char *upload_id);
void gateway_abort_upload(http_ctx *c, const char *bucket, const char *upload_id);
/* PUT /v1/buckets/{b}/indexes/{name}. */
void gateway_put_index(http_ctx *c, const char *bucket, const char *name);

#endif
