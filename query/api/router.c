/* router.c: the JSON API's routes, as tables (method, path shape,
 * handler, metrics name, who may), and its face: how it answers its
 * errors (JSON), which paths a connection past the cap may ask (the
 * probes), that reads of another node's partitions are forwarded.
 *
 * Invariant: a request reaches a handler only authenticated
 * (api_authenticate), with its bucket name checked, its bucket's owner
 * authorized and admission passed, in that order; a path no table names
 * is 404 NoSuchRoute, a method a route does not take 405 with Allow. */
#include "core.h"
#include "admit.h"
#include "api.h"
#include "cluster.h"
#include "ranges.h"
#include "read.h"
#include "server.h"
#include "write.h"

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

static void api_route_object(http_ctx *c, enum evhttp_cmd_type cmd,
                             const char *bucket, const char *raw_key) {
    size_t kn = 0;
    char *key = evhttp_uridecode(raw_key, 0, &kn);
    if (!key) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    c->endpoint = cmd == EVHTTP_REQ_HEAD     ? HTTP_EP_HEAD_OBJECT
                  : cmd == EVHTTP_REQ_PUT    ? HTTP_EP_PUT_OBJECT
                  : cmd == EVHTTP_REQ_DELETE ? HTTP_EP_DELETE_OBJECT
                                             : HTTP_EP_GET_OBJECT;
    if (kn == 0)
        http_reply_error(c, 400, "InvalidArgument", "empty object key");
    else if (kn > HTTP_MAX_KEY_LEN)
        http_reply_error(c, 400, "KeyTooLongError",
                         "key is %zu bytes; the limit is %d", kn,
                         HTTP_MAX_KEY_LEN);
    else if (!http_utf8_valid((const uint8_t *)key, kn))
        http_reply_error(c, 400, "InvalidArgument", "key is not valid UTF-8");
    else if (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD)
        read_object(c, bucket, (const uint8_t *)key, kn, cmd == EVHTTP_REQ_HEAD);
    else if (cmd == EVHTTP_REQ_PUT)
        gateway_put_object(c, bucket, (const uint8_t *)key, kn);
    else if (cmd == EVHTTP_REQ_DELETE)
        gateway_delete_object(c, bucket, (const uint8_t *)key, kn);
    else
        http_method_not_allowed(c, "GET, HEAD, PUT, DELETE");
    free(key);
}

/* rest = what follows "/uploads/": {id}, {id}/parts, {id}/parts/{n} or
 * {id}/complete. */
static void api_route_upload(http_ctx *c, enum evhttp_cmd_type cmd,
                             const char *bucket, const char *rest) {
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    char id[64];
    if (n == 0 || n >= sizeof(id)) {
        http_reply_error(c, 404, "NoSuchUpload", "no such upload");
        return;
    }
    memcpy(id, rest, n);
    id[n] = '\0';
    c->endpoint = slash && strncmp(slash, "/parts", 6) == 0 ? HTTP_EP_PARTS
                                                          : HTTP_EP_UPLOADS;
    if (!slash) {
        if (cmd == EVHTTP_REQ_DELETE)
            gateway_abort_upload(c, bucket, id);
        else
            http_method_not_allowed(c, "DELETE");
    } else if (strcmp(slash, "/parts") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_parts(c, bucket, id);
        else
            http_method_not_allowed(c, "GET");
    } else if (strncmp(slash, "/parts/", 7) == 0 && slash[7]) {
        if (cmd == EVHTTP_REQ_PUT)
            gateway_upload_part(c, bucket, id, slash + 7);
        else
            http_method_not_allowed(c, "PUT");
    } else if (strcmp(slash, "/complete") == 0) {
        if (cmd == EVHTTP_REQ_POST)
            gateway_complete_upload(c, bucket, id);
        else
            http_method_not_allowed(c, "POST");
    } else {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
    }
}

/* Admission (admit.c) of a bucket route; sub is what follows the bucket
 * ("/objects/KEY", "/uploads/..." with key=, NULL). The key picks the
 * partition whose lag the hot-partition guard weighs. 0 or -1 replied. */
static int api_admit(http_ctx *c, const char *bucket, const char *sub) {
    if (!c->q->admit || c->fenced)
        return 0;
    size_t kn = 0;
    if (sub && strncmp(sub, "/objects/", 9) == 0 && sub[9]) {
        char *key = evhttp_uridecode(sub + 9, 0, &kn);
        int rc = admit_request(c, bucket, (const uint8_t *)(key ? key : ""), key ? kn : 0);
        free(key);
        return rc;
    }
    const char *key = http_param_get(c, "key", &kn);
    return admit_request(c, bucket, (const uint8_t *)(key ? key : ""), key ? kn : 0);
}

/* Who may use a bucket route (authz.c): rate limits and quotas are the
 * operator's (admin); creating a bucket is checked against its body
 * (gateway_put_bucket); everything else, the bucket's owner. 0, or -1
 * after answering (403, or parked on the owner's fence). */
static int api_authorize_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                                const char *sub) {
    int read = cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD;
    if (!c->authz || c->admin)
        return 0;
    if (!read && sub && (strcmp(sub, "/ratelimit") == 0 || strcmp(sub, "/quota") == 0))
        return api_need_admin(c);
    if (!sub && cmd == EVHTTP_REQ_PUT)
        return 0;
    return authz_bucket(c, bucket, !read);
}

/* /v1/tenants/{t}/stats with t URI-decoded: 1..256 bytes of UTF-8 without
 * NUL (a tenant name is free text set with the bucket). */
static void api_route_tenant_stats(http_ctx *c, const char *rest) {
    size_t n = strlen(rest), sl = strlen("/stats");
    if (n <= sl || strcmp(rest + n - sl, "/stats") != 0) {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
        return;
    }
    char raw[1024];
    if (n - sl >= sizeof(raw)) {
        http_reply_error(c, 400, "InvalidArgument", "tenant name too long");
        return;
    }
    memcpy(raw, rest, n - sl);
    raw[n - sl] = '\0';
    size_t tn = 0;
    char *tenant = evhttp_uridecode(raw, 0, &tn);
    if (!tenant || tn == 0 || tn > 256 || strlen(tenant) != tn ||
        strchr(tenant, '/') || !http_utf8_valid((const uint8_t *)tenant, tn))
        http_reply_error(c, 400, "InvalidArgument",
                         "a tenant name is 1..256 bytes of UTF-8 without NUL or '/'");
    else if (c->authz && !c->admin && strcmp(tenant, c->tenant) != 0)
        authz_deny(c); /* a tenant's usage is its own */
    else
        read_tenant_stats(c, tenant);
    free(tenant);
}


/* ---------------------------------------------------------- bucket routes */

typedef void api_bucket_fn(http_ctx *c, const char *bucket);
/* A route with more below it: rest is the path after the route's own. */
typedef void api_below_fn(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                          const char *rest);

static void api_route_object_below(http_ctx *c, enum evhttp_cmd_type cmd,
                                   const char *bucket, const char *rest) {
    api_route_object(c, cmd, bucket, rest);
}

static void api_route_upload_below(http_ctx *c, enum evhttp_cmd_type cmd,
                                   const char *bucket, const char *rest) {
    api_route_upload(c, cmd, bucket, rest);
}

static void api_route_lifecycle(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                                const char *rest) {
    lcapi_route(c, cmd, bucket, rest);
}

static void api_route_notifications(http_ctx *c, enum evhttp_cmd_type cmd,
                                    const char *bucket, const char *rest) {
    notifyapi_route(c, cmd, bucket, rest);
}

static void api_route_indexes(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                              const char *rest) {
    ixread_route(c, cmd, bucket, rest);
}

/* What follows /v1/buckets/{b}: sub matched whole, or as a prefix where
 * below is set (it gets the rest after skip bytes). Admission does not
 * see the rate-limit routes: an operator can always lift a limit. */
typedef struct api_bucket_route {
    const char *sub;
    http_endpoint endpoint;
    const char *allow;           /* a 405's Allow */
    api_bucket_fn *get, *put, *post, *del;
    api_below_fn *below;
    size_t skip;                 /* bytes of the path below's rest starts after */
    int prefix;                  /* sub is a prefix (below's routes) */
    int unadmitted;
} api_bucket_route;

static const api_bucket_route api_bucket_routes[] = {
    {"", HTTP_EP_BUCKET, "GET, PUT, DELETE", read_bucket, gateway_put_bucket, NULL,
     gateway_delete_bucket, NULL, 0, 0, 0},
    {"/ratelimit", HTTP_EP_OTHER, "GET, PUT, DELETE", admit_get_rate_limit,
     gateway_put_rate_limit, NULL, gateway_delete_rate_limit, NULL, 0, 0, 1},
    {"/objects", HTTP_EP_LIST_OBJECTS, "GET", read_list, NULL, NULL, NULL, NULL, 0, 0, 0},
    {"/objects/", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_object_below, 9, 1, 0},
    {"/versions", HTTP_EP_LIST_VERSIONS, "GET", read_versions, NULL, NULL, NULL, NULL, 0, 0,
     0},
    {"/versioning", HTTP_EP_BUCKET, "PUT", NULL, gateway_put_versioning, NULL, NULL, NULL, 0,
     0, 0},
    {"/uploads", HTTP_EP_UPLOADS, "GET, POST", read_uploads, NULL, gateway_create_upload,
     NULL, NULL, 0, 0, 0},
    {"/uploads/", HTTP_EP_UPLOADS, NULL, NULL, NULL, NULL, NULL, api_route_upload_below, 9, 1,
     0},
    {"/stats", HTTP_EP_STATS, "GET", read_bucket_stats, NULL, NULL, NULL, NULL, 0, 0, 0},
    {"/usage", HTTP_EP_USAGE, "GET", read_usage, NULL, NULL, NULL, NULL, 0, 0, 0},
    {"/lifecycle", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_lifecycle, 10, 0, 0},
    {"/lifecycle/status", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_lifecycle,
     10, 0, 0},
    {"/notifications", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_notifications,
     14, 0, 0},
    {"/notifications/status", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL,
     api_route_notifications, 14, 0, 0},
    {"/indexes", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_indexes, 8, 0, 0},
    {"/indexes/", HTTP_EP_OTHER, NULL, NULL, NULL, NULL, NULL, api_route_indexes, 8, 1, 0},
    {"/quota", HTTP_EP_OTHER, "PUT", NULL, gateway_put_quota, NULL, NULL, NULL, 0, 0, 0},
};

/* An exact route wins over a prefix that also matches. */
static const api_bucket_route *api_bucket_route_find(const char *sub) {
    const api_bucket_route *prefix = NULL;
    for (size_t i = 0; i < sizeof(api_bucket_routes) / sizeof(api_bucket_routes[0]); i++) {
        const api_bucket_route *r = &api_bucket_routes[i];
        if (!r->prefix && strcmp(sub, r->sub) == 0)
            return r;
        if (r->prefix && !prefix && strncmp(sub, r->sub, strlen(r->sub)) == 0)
            prefix = r;
    }
    return prefix;
}

static void api_bucket_call(http_ctx *c, enum evhttp_cmd_type cmd, const api_bucket_route *r,
                            const char *bucket, const char *sub) {
    if (!r) {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
        return;
    }
    if (r->below) {
        r->below(c, cmd, bucket, sub + r->skip);
        return;
    }
    api_bucket_fn *fn = cmd == EVHTTP_REQ_GET      ? r->get
                        : cmd == EVHTTP_REQ_PUT    ? r->put
                        : cmd == EVHTTP_REQ_POST   ? r->post
                        : cmd == EVHTTP_REQ_DELETE ? r->del
                                                   : NULL;
    if (fn)
        fn(c, bucket);
    else
        http_method_not_allowed(c, r->allow);
}

/* The bucket segment of rest, URI-decoded and checked; NULL after
 * answering. */
static char *api_bucket_name(http_ctx *c, const char *rest, size_t seg) {
    char raw[256];
    if (seg >= sizeof(raw)) {
        http_bucket_name_ok(c, rest, seg);
        return NULL;
    }
    memcpy(raw, rest, seg);
    raw[seg] = '\0';
    size_t bn = 0;
    char *bucket = evhttp_uridecode(raw, 0, &bn);
    if (!bucket) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return NULL;
    }
    if (!http_bucket_name_ok(c, bucket, bn)) {
        free(bucket);
        return NULL;
    }
    return bucket;
}

/* rest = what follows "/v1/buckets/". */
static void api_route_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const char *rest) {
    const char *slash = strchr(rest, '/');
    const api_bucket_route *r = api_bucket_route_find(slash ? slash : "");
    c->endpoint = r ? r->endpoint : HTTP_EP_OTHER;
    char *bucket = api_bucket_name(c, rest, slash ? (size_t)(slash - rest) : strlen(rest));
    if (!bucket)
        return;
    if (api_authorize_bucket(c, cmd, bucket, slash) == 0 &&
        ((r && r->unadmitted) || api_admit(c, bucket, slash) == 0))
        api_bucket_call(c, cmd, r, bucket, slash ? slash : "");
    free(bucket);
}

/* ------------------------------------------------------------ top routes */

static void api_healthz(http_ctx *c) {
    http_reply_json(c, 200, json_pack(
        "{s:s,s:I,s:I}", "status", "ok", "events_applied",
        (json_int_t)objlog_materializer_events_applied(c->q->m),
        "dlq_events", (json_int_t)objlog_materializer_dlq_count(c->q->m)));
}

static void api_tenant_stats(http_ctx *c, const char *rest) { api_route_tenant_stats(c, rest); }

static void api_writes(http_ctx *c, const char *rest) { read_write_status(c, rest); }

static void api_partitions(http_ctx *c, const char *rest) { ckpt_serve(c, rest); }

/* POST /v1/ranges/{split,move,merge}: the operator's. */
static void api_ranges_post(http_ctx *c, const char *rest) {
    for (int k = 0; k < RANGES_KINDS; k++)
        if (strcmp(rest, ranges_kind_name((ranges_kind)k)) == 0) {
            ranges_post(c, (ranges_kind)k);
            return;
        }
    http_reply_error(c, 404, "NoSuchRoute", "no such route: /v1/ranges/%s (split, move, merge)",
                     rest);
}

static void api_bucket(http_ctx *c, const char *rest) {
    api_route_bucket(c, evhttp_request_get_command(c->req), rest);
}

enum { API_ANYONE = 0, API_ADMIN = 1 };
enum { API_GET = 1, API_GET_HEAD = 2, API_ANY = 3 };
enum { API_EXACT = 0, API_PREFIX = 1, API_BELOW = 2 };

/* Paths matched whole (fn), or as a prefix (rest_fn, given what follows;
 * API_BELOW: only when something follows). A route that takes GET
 * answers 405 Allow: GET to any other method (API_GET: HEAD too). */
typedef struct api_top_route {
    const char *path;
    int match;                   /* API_EXACT, API_PREFIX, API_BELOW */
    http_endpoint endpoint;
    int methods;                 /* API_GET, API_GET_HEAD, API_ANY */
    int who;                     /* API_ADMIN: the operator's */
    void (*fn)(http_ctx *c);
    void (*rest_fn)(http_ctx *c, const char *rest);
} api_top_route;

static const api_top_route api_top_routes[] = {
    /* the lag and admission's state are every client's (tools and
     * producers with admission=on read them) */
    {"/v1/lag", API_EXACT, HTTP_EP_LAG, API_GET_HEAD, API_ANYONE, metrics_lag, NULL},
    {"/readyz", API_EXACT, HTTP_EP_READYZ, API_GET_HEAD, API_ANYONE, metrics_readyz, NULL},
    {"/metrics", API_EXACT, HTTP_EP_METRICS, API_GET_HEAD, API_ADMIN, metrics_get, NULL},
    {"/v1/cluster", API_EXACT, HTTP_EP_LAG, API_GET_HEAD, API_ADMIN, cluster_get, NULL},
    {"/v1/admission", API_EXACT, HTTP_EP_LAG, API_GET_HEAD, API_ANYONE, admit_get_status,
     NULL},
    {"/healthz", API_EXACT, HTTP_EP_HEALTHZ, API_GET_HEAD, API_ANYONE, api_healthz, NULL},
    {"/v1/writes/", API_BELOW, HTTP_EP_WRITES, API_GET, API_ANYONE, NULL, api_writes},
    {"/v1/outcomes", API_EXACT, HTTP_EP_OUTCOMES, API_GET, API_ANYONE, outcomes_get, NULL},
    /* where keys live: every client's (producers and tools route by it) */
    {"/v1/ranges", API_EXACT, HTTP_EP_LAG, API_GET_HEAD, API_ANYONE, ranges_get, NULL},
    {"/v1/ranges/", API_BELOW, HTTP_EP_OTHER, API_ANY, API_ADMIN, NULL, api_ranges_post},
    {"/v1/buckets", API_EXACT, HTTP_EP_BUCKET, API_GET, API_ANYONE, read_buckets, NULL},
    {"/v1/buckets/", API_BELOW, HTTP_EP_OTHER, API_ANY, API_ANYONE, NULL, api_bucket},
    /* a whole partition, every tenant's */
    {"/v1/partitions/", API_PREFIX, HTTP_EP_OTHER, API_ANY, API_ADMIN, NULL, api_partitions},
    /* every tenant's usage: the operator's; a tenant's, its own */
    {"/v1/stats", API_EXACT, HTTP_EP_STATS, API_GET, API_ADMIN, read_global_stats, NULL},
    {"/v1/stats/top", API_EXACT, HTTP_EP_STATS, API_GET, API_ADMIN, read_top_stats, NULL},
    {"/v1/tenants/", API_PREFIX, HTTP_EP_STATS, API_GET, API_ANYONE, NULL, api_tenant_stats},
    /* every blob id this node's partitions reference: the operator's */
    {"/v1/blobs", API_EXACT, HTTP_EP_OTHER, API_GET, API_ADMIN, blobs_get, NULL},
    /* the node's own log lines: they name paths, peers and buckets */
    {"/v1/log", API_EXACT, HTTP_EP_OTHER, API_GET, API_ADMIN, logapi_get, NULL},
};

static const api_top_route *api_top_route_find(const char *path) {
    for (size_t i = 0; i < sizeof(api_top_routes) / sizeof(api_top_routes[0]); i++) {
        const api_top_route *r = &api_top_routes[i];
        size_t n = strlen(r->path);
        if (r->match == API_EXACT ? strcmp(path, r->path) == 0
                                  : strncmp(path, r->path, n) == 0 &&
                                        (r->match == API_PREFIX || path[n]))
            return r;
    }
    return NULL;
}

static void api_route(http_ctx *c, const char *path) {
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    const api_top_route *r = api_top_route_find(path);
    if (!r) {
        http_reply_error(c, 404, "NoSuchRoute", "no such route: %s", path);
        return;
    }
    if (r->endpoint != HTTP_EP_OTHER)
        c->endpoint = r->endpoint;
    int get_ok = cmd == EVHTTP_REQ_GET || (r->methods == API_GET_HEAD && cmd == EVHTTP_REQ_HEAD);
    if (r->methods != API_ANY && !get_ok)
        http_method_not_allowed(c, "GET");
    else if (r->who == API_ADMIN && api_need_admin(c) < 0)
        ; /* 403 answered */
    else if (r->fn)
        r->fn(c);
    else
        r->rest_fn(c, path + strlen(r->path));
}

/* ------------------------------------------------------------ the face */

/* A peer node's request is answered here, never sent on again: believed
 * from its signature when the nodes share a secret, from its hop header
 * only where the API is open. */
static int api_is_hop(const http_ctx *c) {
    if (c->node_signed)
        return 1;
    return api_open(c->q) &&
           evhttp_find_header(evhttp_request_get_input_headers(c->req), "X-Objlog-Hop") != NULL;
}

static void api_run(http_ctx *c) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || http_params_parse(c, evhttp_uri_get_query(uri)) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "malformed request URI");
    } else if (api_authenticate(c, path) == 0) {
        c->hop = api_is_hop(c);
        api_route(c, path);
    }
    http_params_free(c);
}

/* /healthz, /readyz, /metrics: what a connection past the cap may ask. */
static int api_probe_path(const char *path) {
    return path && (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
                    strcmp(path, "/metrics") == 0);
}

const http_face api_face = {
    .name = "json",
    .run = api_run,
    .reply_error = http_reply_error_json,
    .written = NULL, /* the gateway's JSON answer */
    .edge_body = http_edge_body_json,
    .edge_content_type = "application/json",
    .request_id_header = "X-Objlog-Request-Id",
    .reserved_path = api_probe_path,
    .forward_writes = 1,
    .forward_as_sent = 0,
    .max_body = HTTP_MAX_BODY,
    .allowed_methods = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                       EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                       EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH,
};
