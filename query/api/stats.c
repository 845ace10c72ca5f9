/* stats.c: the usage counters over HTTP: GET /v1/buckets/{b}/stats,
 * /v1/tenants/{t}/stats, /v1/stats and /v1/stats/top. The counting is
 * apply.c's (the `stats` CF), the reading view.c's; this file owns the
 * parameters, the fences, the JSON shapes, and gathering the sums of a
 * cluster's nodes.
 *
 * The tenant and global rows are kept per partition (materializer.h), so
 * a read sums a set of partitions:
 *   - standalone: every partition, fenced, from one view;
 *   - a bucket: its row lives on its bucket's partition, fenced (and, in a
 *     cluster, forwarded to the node that applies it) like GET of a key;
 *   - a cluster node that applies every partition: as standalone;
 *   - otherwise the node asks every node (itself included, over HTTP, one
 *     hop: cluster_plan, forward_gather) for the sums over the partitions
 *     that node applies (`partitions=`, accepted only with X-Objlog-Hop),
 *     each answered as above, fenced per partition there; then adds them
 *     up. The partition sets are disjoint and cover every partition, so the
 *     sum of the answers is the sum over all partitions. A partition that
 *     no node holds is 503 SlowDown (cluster_plan); a node's error is the
 *     answer (its fence, a move under way).
 *
 * Distinct tenants (GET /v1/stats "tenants") do not add up: a tenant's
 * buckets may sit on partitions of several nodes. Each node therefore
 * answers, besides its sums, the names of the tenants with a bucket on its
 * partitions ("tenant_names", sorted), and the asking node counts the
 * distinct names of the union: exact. Bounded: a node with more than
 * STATS_GATHER_MAX_TENANTS such tenants answers 501 NotImplemented
 * (saying so), and so does the gathered read; the tenant stats and top
 * are not bounded that way.
 *
 * /v1/stats/top: each node answers its partitions' top `limit` (a bucket
 * lives on one partition, hence on one node), the asking node keeps the
 * top `limit` of their union, in the same order (metric, then name).
 *
 * Every answer of one node reads ONE view opened after its fence, so it
 * reflects at least the positions it reports in X-Objlog-Applied (a
 * gathered answer carries no X-Objlog-Applied: its parts come from
 * several nodes, each fenced). */
#define _GNU_SOURCE
#include "core.h"
#include "api.h"
#include "cluster.h"
#include "read.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rangemap.h"

#define STATS_MAX_PARTS 256
#define STATS_TOP_MAX 100
#define STATS_TOP_DEFAULT 10
/* Tenant names one node sends for the cluster-wide distinct count. */
#define STATS_GATHER_MAX_TENANTS 100000

typedef enum stats_kind { STATS_TENANT, STATS_GLOBAL, STATS_TOP } stats_kind;

/* One tenant, global or top read. */
typedef struct stats_req {
    stats_kind kind;
    const char *tenant;          /* STATS_TENANT */
    view_top_by by;              /* STATS_TOP */
    const char *by_name;
    long long limit;
} stats_req;

/* A view applied without counters (bench only) has none to show. */
static int stats_kept(http_ctx *c) {
    if (objlog_materializer_stats_view(c->q->m))
        return 1;
    http_reply_error(c, 503, "ServiceUnavailable",
                     "this objlogd keeps no usage counters (--test-no-stats, for "
                     "benchmarks only)");
    return 0;
}

static json_t *stats_usage_json(const view_usage *u) {
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

/* ---- one bucket ---- */

void read_bucket_stats(http_ctx *c, const char *bucket) {
    if (!stats_kept(c))
        return;
    /* Every partition holding a range of the bucket: their stakes add up. */
    view *v = read_prefix_view(c, bucket, "", 0);
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
    json_t *j = stats_usage_json(&u);
    json_object_set_new(j, "bucket", json_string(bucket));
    json_object_set_new(j, "tenant", json_string(r->tenant ? r->tenant : ""));
    json_object_set_new(j, "quota", json_pack("{s:I, s:I}",
        "max_bytes", (json_int_t)(r->quota ? r->quota->max_bytes : 0),
        "max_objects", (json_int_t)(r->quota ? r->quota->max_objects : 0)));
    view_bucket_free(&b);
    http_reply_json(c, 200, j);
}

/* ---- one node's sums over a set of partitions ---- */

static json_t *stats_top_json(const char *by, const view_top *t) {
    json_t *arr = json_array();
    for (size_t i = 0; i < t->n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I}",
            "bucket", t->e[i].bucket, "tenant", t->e[i].tenant,
            "objects", (json_int_t)t->e[i].usage.objects,
            "bytes", (json_int_t)t->e[i].usage.bytes,
            "versions", (json_int_t)t->e[i].usage.versions));
    return json_pack("{s:s, s:o}", "by", by, "buckets", arr);
}

/* The global sums; with_names (a node asked by another): the tenants'
 * names too, for the asking node's distinct count. */
static void stats_local_global(http_ctx *c, view *v, const view_partset *ps, int with_names) {
    view_usage u;
    uint64_t tenants = 0;
    char **names = NULL;
    char err[256];
    view_rc rc = view_global_usage(v, ps, &u, &tenants, with_names ? &names : NULL,
                                   STATS_GATHER_MAX_TENANTS, err, sizeof(err));
    if (rc == VIEW_TOO_MANY) {
        http_reply_error(c, 501, "NotImplemented",
                         "more than %d tenants have buckets on this node's partitions: the "
                         "cluster-wide count of distinct tenants is not gathered past that "
                         "bound (per-tenant stats and top still are)",
                         STATS_GATHER_MAX_TENANTS);
        return;
    }
    if (rc != VIEW_OK) {
        read_reply_rc(c, rc, "", err);
        return;
    }
    json_t *j = stats_usage_json(&u);
    json_object_set_new(j, "buckets", json_integer((json_int_t)u.buckets));
    json_object_set_new(j, "tenants", json_integer((json_int_t)tenants));
    int bad = 0;
    if (with_names) {
        json_t *arr = json_array();
        for (uint64_t i = 0; i < tenants; i++)
            bad |= json_array_append_new(arr, json_string(names[i])) < 0;
        json_object_set_new(j, "tenant_names", arr);
        view_names_free(names, (size_t)tenants);
    }
    if (bad) {
        /* A name JSON cannot carry would be lost from the count. */
        json_decref(j);
        http_reply_error(c, 500, "InternalError", "a tenant name is not UTF-8");
        return;
    }
    http_reply_json(c, 200, j);
}

/* Fences parts, then answers q over them from one view. */
static void stats_local(http_ctx *c, const stats_req *q, const unsigned char *in, int np,
                        int hop) {
    int32_t parts[STATS_MAX_PARTS];
    int n = 0;
    for (int p = 0; p < np; p++)
        if (in[p])
            parts[n++] = p;
    view *v = read_fenced_view(c, parts, n);
    if (!v)
        return;
    view_partset ps = {.in = in, .n = np, .rm = objlog_materializer_rangemap(c->q->m)};
    char err[256];
    view_rc rc = VIEW_OK;
    if (q->kind == STATS_GLOBAL) {
        stats_local_global(c, v, &ps, hop);
    } else if (q->kind == STATS_TENANT) {
        view_usage u;
        rc = view_tenant_usage(v, q->tenant, &ps, &u, err, sizeof(err));
        if (rc == VIEW_OK) {
            json_t *j = stats_usage_json(&u);
            json_object_set_new(j, "tenant", json_string(q->tenant));
            json_object_set_new(j, "buckets", json_integer((json_int_t)u.buckets));
            http_reply_json(c, 200, j);
        }
    } else {
        view_top t;
        rc = view_top_buckets(v, &ps, q->by, (size_t)q->limit, &t, err, sizeof(err));
        if (rc == VIEW_OK) {
            http_reply_json(c, 200, stats_top_json(q->by_name, &t));
            view_top_free(&t);
        }
    }
    view_close(v);
    if (rc != VIEW_OK)
        read_reply_rc(c, rc, "", err);
}

/* ---- the sums of every node (cluster) ---- */

static const char *const stats_counters[] = {
    "objects", "bytes", "versions", "version_bytes", "noncurrent_versions",
    "noncurrent_bytes", "delete_markers", "uploads", "upload_part_bytes", "buckets", NULL};

typedef struct stats_merge {
    stats_req q;
    char *tenant;                /* q.tenant's copy: the request is gone by then */
} stats_merge;

static int stats_name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Distinct names among every node's tenant_names. -1 out of memory. */
static long long stats_distinct_tenants(json_t *const *parsed, int n) {
    size_t total = 0, k;
    json_t *e;
    for (int i = 0; i < n; i++)
        total += json_array_size(json_object_get(parsed[i], "tenant_names"));
    const char **all = malloc((total ? total : 1) * sizeof(*all));
    if (!all)
        return -1;
    size_t m = 0;
    for (int i = 0; i < n; i++)
        json_array_foreach(json_object_get(parsed[i], "tenant_names"), k, e)
            if (json_string_value(e))
                all[m++] = json_string_value(e);
    qsort(all, m, sizeof(*all), stats_name_cmp);
    long long distinct = 0;
    for (size_t i = 0; i < m; i++)
        distinct += i == 0 || strcmp(all[i], all[i - 1]) != 0;
    free(all);
    return distinct;
}

static json_int_t stats_top_metric(json_t *e, const char *by) {
    return json_integer_value(json_object_get(e, by));
}

/* Larger metric first, then bucket name, as view_top_buckets orders. */
static int stats_top_cmp(const void *a, const void *b, void *by) {
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t mx = stats_top_metric(x, by), my = stats_top_metric(y, by);
    if (mx != my)
        return mx > my ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "bucket")),
                  json_string_value(json_object_get(y, "bucket")));
}

/* The top limit of every node's top limit. */
static json_t *stats_merge_top(json_t *const *parsed, int n, const stats_req *q) {
    json_t *all = json_array();
    size_t k;
    json_t *e;
    for (int i = 0; i < n; i++)
        json_array_foreach(json_object_get(parsed[i], "buckets"), k, e)
            if (json_string_value(json_object_get(e, "bucket")))
                json_array_append(all, e);
    size_t total = json_array_size(all);
    json_t **v = malloc((total ? total : 1) * sizeof(*v));
    if (!v) {
        json_decref(all);
        return NULL;
    }
    for (size_t i = 0; i < total; i++)
        v[i] = json_array_get(all, i);
    qsort_r(v, total, sizeof(*v), stats_top_cmp, (void *)q->by_name);
    json_t *top = json_array();
    for (size_t i = 0; i < total && i < (size_t)q->limit; i++)
        json_array_append(top, v[i]);
    free(v);
    json_decref(all);
    return json_pack("{s:s, s:o}", "by", q->by_name, "buckets", top);
}

/* Sums every node's counters into one answer of the same shape. */
static json_t *stats_merge_sums(json_t *const *parsed, int n, const stats_merge *sm) {
    json_t *j = json_object();
    for (int f = 0; stats_counters[f]; f++) {
        json_int_t sum = 0;
        for (int i = 0; i < n; i++)
            sum += json_integer_value(json_object_get(parsed[i], stats_counters[f]));
        json_object_set_new(j, stats_counters[f], json_integer(sum));
    }
    if (sm->q.kind == STATS_TENANT) {
        json_object_set_new(j, "tenant", json_string(sm->tenant));
        return j;
    }
    long long tenants = stats_distinct_tenants(parsed, n);
    if (tenants < 0) {
        json_decref(j);
        return NULL;
    }
    json_object_set_new(j, "tenants", json_integer(tenants));
    return j;
}

static void stats_merged(http_ctx *c, const gather_reply *r, int n, void *arg) {
    stats_merge *sm = arg;
    json_t *parsed[GATHER_MAX] = {0};
    int failed = -1;
    for (int i = 0; i < n && failed < 0; i++) {
        parsed[i] = r[i].status == 200 ? json_loads(r[i].body, 0, NULL) : NULL;
        if (!parsed[i])
            failed = i;
    }
    if (failed >= 0) {
        forward_gather_error(c, &r[failed]);
    } else {
        json_t *j = sm->q.kind == STATS_TOP ? stats_merge_top(parsed, n, &sm->q)
                                            : stats_merge_sums(parsed, n, sm);
        if (j)
            http_reply_json(c, 200, j);
        else
            http_reply_error(c, 500, "InternalError", "out of memory");
    }
    for (int i = 0; i < n; i++)
        json_decref(parsed[i]);
    free(sm->tenant);
    free(sm);
}

/* The path that asks a node for q over the partitions owner[p] == i. */
static char *stats_node_path(http_ctx *c, const stats_req *q, const int *owner, int np,
                             int i) {
    char list[STATS_MAX_PARTS * 5] = "";
    size_t len = 0;
    for (int p = 0; p < np; p++)
        if (owner[p] == i)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", p);
    char *path = NULL, *esc = NULL;
    int rc;
    if (q->kind == STATS_TENANT) {
        esc = evhttp_uriencode(q->tenant, -1, 0);
        rc = esc ? asprintf(&path, "/v1/tenants/%s/stats?partitions=%s", esc, list) : -1;
    } else if (q->kind == STATS_GLOBAL) {
        rc = asprintf(&path, "/v1/stats?partitions=%s", list);
    } else {
        rc = asprintf(&path, "/v1/stats/top?partitions=%s&by=%s&limit=%lld", list,
                      q->by_name, q->limit);
    }
    free(esc);
    if (rc < 0)
        return NULL;
    cluster_query_add(&path, "consistency",
                      http_param_or_header(c, "consistency", "X-Objlog-Consistency"));
    cluster_query_add(&path, "token", http_param_or_header(c, "token", "X-Objlog-Token"));
    cluster_query_add(&path, "timeout_ms", http_param_get(c, "timeout_ms", NULL));
    return path;
}

/* 1 handled (asked the nodes, or answered 503), 0 this node applies every
 * partition (answer locally). */
static int stats_gather(http_ctx *c, const stats_req *q, int np) {
    cluster_gather_plan g;
    cluster_gather_plan_init(c, np, &g);
    for (int i = 0; g.plan == 1 && i < g.nn; i++)
        if (!(g.paths[i] = stats_node_path(c, q, g.owner, np, i)))
            g.plan = -3;
    stats_merge *sm = g.plan == 1 ? calloc(1, sizeof(*sm)) : NULL;
    if (sm) {
        sm->q = *q;
        sm->tenant = strdup(q->tenant ? q->tenant : "");
        sm->q.tenant = sm->tenant;
    }
    if (g.plan == -3 || (g.plan == 1 && (!sm || !sm->tenant))) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        if (sm)
            free(sm->tenant);
        free(sm);
    } else if (g.plan == 1) {
        forward_gather(c, g.urls, (const char *const *)g.paths, g.nn, stats_merged, sm);
    }
    cluster_gather_plan_free(&g);
    return g.plan != 0;
}

/* A tenant, global or top read: this node's partitions, or every node's. */
static void stats_serve(http_ctx *c, const stats_req *q) {
    if (!stats_kept(c))
        return;
    unsigned char in[STATS_MAX_PARTS] = {0};
    int np = objlog_materializer_partitions(c->q->m);
    if (np > STATS_MAX_PARTS)
        np = STATS_MAX_PARTS;
    int some = cluster_partitions_param(c, np, in);
    if (some < 0)
        return;
    if (!some && c->q->cluster && !c->fenced && !http_hop(c) && stats_gather(c, q, np))
        return;
    if (!some)
        memset(in, 1, (size_t)np);
    stats_local(c, q, in, np, some);
}

void read_tenant_stats(http_ctx *c, const char *tenant) {
    stats_req q = {.kind = STATS_TENANT, .tenant = tenant};
    stats_serve(c, &q);
}

void read_global_stats(http_ctx *c) {
    stats_req q = {.kind = STATS_GLOBAL};
    stats_serve(c, &q);
}

void read_top_stats(http_ctx *c) {
    /* by_name points at a literal: a gathered read outlives its params. */
    stats_req q = {.kind = STATS_TOP, .by = VIEW_TOP_BYTES, .by_name = "bytes"};
    const char *by = http_param_get(c, "by", NULL);
    if (!by || strcmp(by, "bytes") == 0) {
        q.by_name = "bytes";
    } else if (strcmp(by, "objects") == 0) {
        q.by = VIEW_TOP_OBJECTS;
        q.by_name = "objects";
    } else if (strcmp(by, "versions") == 0) {
        q.by = VIEW_TOP_VERSIONS;
        q.by_name = "versions";
    } else {
        http_reply_error(c, 400, "InvalidArgument", "by must be bytes, objects or versions");
        return;
    }
    if (http_param_int(c, "limit", 1, STATS_TOP_MAX, STATS_TOP_DEFAULT, &q.limit) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "limit must be an integer in 1..%d",
                         STATS_TOP_MAX);
        return;
    }
    stats_serve(c, &q);
}
