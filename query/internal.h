/* internal.h: what the query service's modules share and nobody else sees.
 * http.c owns the server and the per-request context; read.c, fence.c,
 * gateway.c and listtoken.c serve parts of the API on top of it
 * (listtoken.c: the continuation tokens of LIST and of prefix usage).
 *
 * Invariant: every accepted request is answered exactly once, on its
 * worker's event_base thread (evhttp is not thread-safe), through
 * http_reply_json / http_reply_error / http_reply_empty; that is also where
 * the worker's in-flight count drops, which graceful shutdown waits on. */
#ifndef OBJLOG_QUERY_INTERNAL_H
#define OBJLOG_QUERY_INTERNAL_H

#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "keycodec.h"
#include "materializer.h"
#include "objlog_logger.h"
#include "objlog_producer.h"
#include "query.h"
#include "server.h"
#include "view.h"

typedef struct gateway gateway;
typedef struct wm_cache wm_cache;
typedef struct cluster cluster;
typedef struct admit admit;
/* How a forward ended (forward.c; objlog_cluster_forwards_total). */
typedef enum forward_result {
    FORWARD_ANSWERED,            /* the peer's answer was relayed */
    FORWARD_UNREACHABLE,         /* no answer from the peer: 503 */
    FORWARD_REFUSED,             /* not sent: second hop, or full: 503 */
    FORWARD_RESULTS
} forward_result;

/* Fence modes counted in metrics. */
enum { FENCE_STRONG = 0, FENCE_TOKEN = 1, FENCE_MODES = 2 };
typedef struct fence_req fence_req;
typedef struct fence_state fence_state;
typedef struct ckpt_server ckpt_server;

struct objlog_query {
    server *srv;                 /* workers, listeners, connections (server.h) */
    char *brokers;
    char *topic;
    char *control_topic;
    objlog_store *store;
    objlog_materializer *m;
    objlog_producer *producer;   /* ack=logged; the gateway awaits outcomes */
    wm_cache *wm;                /* coalesced end offsets (watermark.c) */
    int64_t ready_max_lag;       /* /readyz fails past this lag (messages) */
    uint8_t token_key[OBJLOG_TOKEN_SECRET_LEN]; /* signs continuation tokens */
    fence_state *fence;          /* parked reads, fence counters (fence.c) */
    gateway *gw;
    struct ixdriver *ixd;        /* index backfill steps (ixdriver.c) */
    cluster *cluster;            /* NULL unless a cluster node (cluster.c) */
    struct s3_conf *s3;          /* NULL unless --s3-listen (s3.c) */
    struct api_conf *api;        /* the JSON API's tokens (apiguard.c) */
    struct tls_conf *tls;        /* TLS of listeners and peers (tls.h); NULL none */
    char *s3_host;
    int s3_port;                 /* the bound port once listening */
    ckpt_server *ckpt;           /* checkpoint exports (ckptserve.c) */
    struct lc_worker *lc;        /* the lifecycle worker (lifecycle.c) */
    admit *admit;                /* admission control (admit.c); NULL: off */
};

/* ---- router.c: the JSON API's routes and face ---- */
extern const http_face api_face;

/* ---- apiguard.c: the JSON API's door (tokens, peers' signatures) ---- */
int api_conf_new(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                 size_t errstr_size);
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

/* ---- watermark.c ---- */
wm_cache *wm_new(const char *brokers, const char *topic, int nparts,
                 char *errstr, size_t errstr_size);
void wm_destroy(wm_cache *w);
/* End offset (high watermark) of partition p, sharing ListOffsets requests
 * with concurrent callers. fresh: only from a request started after this
 * call (strong reads); else the one in flight may answer (lag, metrics).
 * 0 with *end, or the Kafka error (__TIMED_OUT past timeout_ms). */
rd_kafka_resp_err_t wm_end_offset(wm_cache *w, int32_t p, int fresh,
                                  int timeout_ms, int64_t *end);
/* wm_end_offset(fresh) of partitions ps[0..n) into ends[0..n): the idle
 * ones are fetched together in one ListOffsets round trip per leader; the
 * others share the request in flight's successor. On an error, *failed
 * is the partition it came from. */
rd_kafka_resp_err_t wm_end_offsets(wm_cache *w, const int32_t *ps, int n,
                                   int timeout_ms, int64_t *ends, int32_t *failed);
/* Tests only: fn replaces the broker round trip (same contract as
 * rd_kafka_query_watermark_offsets' high watermark). */
typedef rd_kafka_resp_err_t (*wm_fetch_fn)(void *opaque, int32_t p,
                                           int timeout_ms, int64_t *end);
void wm_set_fetch(wm_cache *w, wm_fetch_fn fn, void *opaque);
/* Without waiting, for HTTP workers: the number of the first request on p
 * to start after this call (started now when none is in flight, else
 * queued behind it, with at least timeout_ms). */
uint64_t wm_ticket(wm_cache *w, int32_t p, int timeout_ms);
/* 1 with *end and *err once request `ticket` (or a later one) finished;
 * 0 while it has not. */
int wm_ticket_done(wm_cache *w, int32_t p, uint64_t ticket, int64_t *end,
                   rd_kafka_resp_err_t *err);
/* fn(opaque, p, end) runs after every finished request of partition p
 * (end -1 when it failed), on the thread that ran it and under p's lock:
 * it may only wake someone (event_active, objlog_materializer_kick) and
 * must not call back into the cache. NULL clears; after this returns the
 * old fn runs no more. */
typedef void wm_notify_fn(void *opaque, int32_t p, int64_t end);
void wm_set_notify(wm_cache *w, wm_notify_fn *fn, void *opaque);
/* Newest end offset successfully fetched, -1 if none yet. */
int64_t wm_last_end(wm_cache *w, int32_t p);
/* Starts a thread that fetches every partition's end offset each
 * interval_ms (the first time before returning). 0, or -1 with errstr. */
int wm_start_refresh(wm_cache *w, int interval_ms, char *errstr, size_t errstr_size);
/* Without waiting: ms since partition p's end offset was last fetched
 * (-1 never), and the error of its newest request (0 when it succeeded). */
int64_t wm_health(wm_cache *w, int32_t p, rd_kafka_resp_err_t *last_err);
/* An end offset older than this (the refresher fetches one every second)
 * means the log is unreachable: /readyz fails, strong reads fail at once
 * instead of holding a worker on a broker call, lag uses the last known. */
#define WM_STALE_MS 5000
/* ListOffsets requests issued so far. */
uint64_t wm_requests(wm_cache *w);

/* ---- metrics.c: GET /v1/lag, /readyz, /metrics ---- */
void metrics_lag(http_ctx *c);
void metrics_readyz(http_ctx *c);
void metrics_get(http_ctx *c);

/* ---- ckptserve.c: GET /v1/partitions/{p}/checkpoint ---- */
/* rest: the path after "/v1/partitions/". Answers later, from the export
 * thread's completion (never blocks the worker). */
void ckpt_serve(http_ctx *c, const char *rest);
/* The exports: per worker in server slot `slot` (a stopping worker ends
 * them), and their counters. */
typedef struct ckpt_server {
    int slot;
    atomic_int running;          /* exports in progress */
    atomic_uint_fast64_t served, bytes; /* answered 200, and their bytes */
} ckpt_server;
ckpt_server *ckpt_server_new(server *s, char *errstr, size_t errstr_size);
void ckpt_server_free(ckpt_server *k);

/* ---- the gateway (write/write.h) and the JSON API's write routes
 * (api/writes.h): included here only until their users in server/ and
 * s3/ include them themselves. ---- */
#include "write.h"
#include "writes.h"

/* ---- lifecycle.c (the worker) and lcapi.c (its HTTP API) ---- */
typedef struct lc_worker lc_worker;
/* What the worker knows of one bucket with rules. */
typedef struct lc_status {
    char bucket[64];
    uint32_t rules;
    uint64_t due;                /* due at the last scan, less decided since */
    int64_t oldest_due_ms;       /* worker clock; 0 none */
    uint64_t expired, skipped;   /* Expire outcomes OK / LifecycleSkipped */
    int64_t last_scan_ms;        /* worker clock */
    uint64_t scans;
    double last_rate;            /* Expire events decided per second, last pass */
} lc_status;
/* interval_ms 0: no thread (status answers "no scan yet"). */
lc_worker *lc_worker_new(objlog_query *q, int interval_ms, int64_t clock_offset_ms,
                         int max_rate, char *errstr, size_t errstr_size);
void lc_worker_destroy(lc_worker *w);
int64_t lc_worker_now_ms(const lc_worker *w); /* wall + the test offset */
/* 1 with *out when the worker scanned bucket with rules, else 0. */
int lc_worker_status(lc_worker *w, const char *bucket, lc_status *out);
void lc_worker_metrics(FILE *f, lc_worker *w);
/* /v1/buckets/{b}/lifecycle[/status]; rest: "" or "/status". */
void lcapi_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                 const char *rest);
/* ---- admit.c: admission control ---- */
typedef struct admit_conf {
    uint32_t bucket_rps, bucket_burst;  /* default per bucket; 0: none */
    uint32_t tenant_rps, tenant_burst;  /* per tenant; 0: none */
    int64_t slowdown_lag;               /* writes slow down past it; 0: off */
} admit_conf;
typedef enum admit_reason {
    ADMIT_OK = 0, ADMIT_BUCKET, ADMIT_TENANT, ADMIT_HOT_PARTITION, ADMIT_REASONS
} admit_reason;
/* One request as the decision sees it. */
typedef struct admit_target {
    const char *bucket;
    const char *tenant;                 /* "" or NULL: no tenant limit */
    const Objlog__RateLimit *limit;     /* the bucket's own; NULL: default */
    int write;
    int64_t lag;                        /* writes: their partition's lag */
} admit_target;
admit *admit_new(const admit_conf *conf);   /* NULL out of memory */
void admit_destroy(admit *a);
/* The decision on a clock of microseconds (tests pass a fake one): OK, or
 * the reason with *retry_s (Retry-After, whole seconds, at least 1). */
admit_reason admit_decide(admit *a, const admit_target *t, int64_t now_us,
                          int64_t *retry_s);
const char *admit_reason_name(admit_reason r);
uint64_t admit_rejected(admit *a, const char *bucket, admit_reason why);
void admit_metrics(FILE *f, admit *a);
/* Before a bucket-scoped request is read or logged (key: its object key,
 * "" for the bucket): 0 admitted, -1 after answering 503 SlowDown. */
int admit_request(http_ctx *c, const char *bucket, const uint8_t *key, size_t kn);
int64_t admit_partition_lag(objlog_query *q, int32_t p);
void admit_get_rate_limit(http_ctx *c, const char *bucket); /* GET .../ratelimit */
void admit_get_status(http_ctx *c);                         /* GET /v1/admission */

/* ---- cluster.c: which node applies which partition ---- */

/* ---- bootstrap.c: copying a partition from a peer's checkpoint ---- */

typedef struct bootstrap bootstrap;
/* key: the node key its fetches are signed with (NULL none; copied). */
bootstrap *bootstrap_new(objlog_query *q, const uint8_t *key, char *errstr,
                         size_t errstr_size);
/* Cancels a copy in flight (the partition is then empty and released). */
void bootstrap_destroy(bootstrap *b);
/* Starts copying p from the node at url unless a copy is under way or
 * offered already: 1 taken, 0 busy (offer it again later). */
int bootstrap_offer(bootstrap *b, int32_t p, const char *url);
/* 1 while p is being copied or offered. */
int bootstrap_busy(bootstrap *b, int32_t p);
/* 1 when no copy runs or is offered. */
int bootstrap_idle(bootstrap *b);
void bootstrap_metrics(FILE *f, bootstrap *b);

typedef struct cluster_conf {
    const char *name;            /* --cluster: the group */
    const char *self_url;        /* --advertise-url */
    int standbys;                /* --standbys */
    long long eventual_max_lag;  /* --eventual-max-lag: local eventual reads */
    const uint8_t *token_key;    /* the shared secret: signs node requests; NULL none */
} cluster_conf;
cluster *cluster_new(objlog_query *q, const cluster_conf *cf, char *errstr,
                     size_t errstr_size);
/* The key the nodes sign their requests with (nodeauth.h); NULL when the
 * nodes share no secret, or c is NULL. */
const uint8_t *cluster_node_key(const cluster *c);
/* forward.c's reads sent on, by how they ended (cluster_metrics). */
void cluster_forward_done(cluster *c, forward_result res);
/* forward.c's server slot; -1 without a cluster. */
int cluster_forward_slot(const cluster *c);
void cluster_destroy(cluster *c);
#define CLUSTER_URL_MAX 256
enum { CLUSTER_OWNER_UNKNOWN, CLUSTER_OWNER_SELF, CLUSTER_OWNER_PEER,
       CLUSTER_OWNER_UNREACHABLE };
/* The node a read of partition p goes to (url filled unless UNKNOWN):
 * SELF when this node applies p (as active or standby) and is caught up,
 * or hop (a forwarded read: answered by any replica); else the caught-up
 * peer replica with the least lag, the active one first; else SELF if it
 * applies p at all; else p's active node: PEER, or UNREACHABLE when it did
 * not answer the last refresh (it may be dead and its partitions about to
 * move). UNKNOWN: no node holds p (a rebalance). */
int cluster_pick(cluster *c, int32_t p, int hop, char *url, size_t n);
/* The node at url did not answer a request: unreachable until the next
 * refresh hears from it. */
void cluster_mark_down(cluster *c, const char *url);
const char *cluster_self(const cluster *c);
/* For a request on parts[0..n): 0 when this node applies them all (or is
 * not a cluster node); else 1: it is forwarded to the node that applies
 * them (forward.c, answered later), or answered 503 while none does. */
int cluster_route(http_ctx *c, const int32_t *parts, int n);
/* GET /v1/cluster. */
void cluster_get(http_ctx *c);
/* Which node to ask for each of partitions 0..np-1 (a read that spans
 * them all): owner[p] indexes nodes[0..*nnodes), this node included (by
 * its own URL). 1 when some partition is another node's, 0 when this node
 * applies them all, -1 after replying 503 (a partition with no reachable
 * node). */
int cluster_plan(http_ctx *c, int np, char (*nodes)[CLUSTER_URL_MAX], int *nnodes, int *owner);
/* Appends "&name=" urlencoded value to *path (freed and NULL when out of
 * memory; nothing when value is NULL). */
void cluster_query_add(char **path, const char *name, const char *value);
/* "partitions=0,3,6" of a node asked by another (gathered reads): only[p]
 * set for each p < np. 0 none given (only untouched), 1 given, -1 after
 * replying 400 (malformed, or not sent by a node: no X-Objlog-Hop). */
int cluster_partitions_param(http_ctx *c, int np, unsigned char *only);
/* Blocking (gateway waiters): the outcome of the write at p.off from the
 * node that applies p, asked again as the partition moves, within
 * timeout_ms. 0 (*out owned by the caller), 1 not in time, -1 error
 * (err), CLUSTER_OUTCOME_LOCAL: p is applied here now, wait locally. */
#define CLUSTER_OUTCOME_LOCAL 2
int cluster_remote_outcome(cluster *c, objlog_materializer *m, int32_t p, int64_t off,
                           int timeout_ms, Objlog__Outcome **out, char *err, size_t en);
void cluster_metrics(FILE *f, cluster *c);

/* ---- nodesign.c: this node's signature on its requests to a peer ---- */
/* The subject (c's, or the node's own when c is NULL) and its signature
 * with key (cluster_node_key) into the two header values. 0, 1 when key
 * is NULL (the nodes share no secret: nothing to add), -1 error. */
int nodesign_headers(const uint8_t *key, const char *method, const char *target,
                     const void *body, size_t n, const http_ctx *c, char *subject,
                     size_t subject_size, char *auth, size_t auth_size);
/* The same added to an outgoing evhttp request (its body already in its
 * output buffer). 0, or -1. */
int nodesign_request(const uint8_t *key, struct evhttp_request *out, enum evhttp_cmd_type cmd,
                     const char *target, const http_ctx *c);
/* The node's own bodiless request of url: the two headers appended to hl
 * (returned; hl unchanged without a shared secret, NULL out of memory). */
struct curl_slist;
struct curl_slist *nodesign_curl(const uint8_t *key, const char *method, const char *url,
                                 struct curl_slist *hl);
const char *nodesign_method_name(enum evhttp_cmd_type cmd);

/* ---- forward.c: a read sent on to the node that applies its partition ---- */

/* The forwards' per-worker state as server hooks: the slot, or -1. */
int forward_register(server *s);
/* Sends c's request to node (a URL) and answers c with its answer later,
 * on this worker; or answers 503 now. Always 1 (c is answered or will be). */
/* part: the one partition the read is for (a node that does not answer is
 * then replaced by another replica of it, once), -1 several. */
int forward_request(http_ctx *c, const char *node, int32_t part);
/* One read asked of several nodes at once (a GET of paths[i] at nodes[i],
 * one hop, X-Objlog-Hop set); when every answer is in (status 0: none),
 * done runs on c's worker and must answer c. Always 1. */
#define GATHER_MAX 64
typedef struct gather_reply {
    int status;
    const char *body;            /* NUL-terminated */
    size_t len;
} gather_reply;
typedef void (*gather_done_fn)(http_ctx *c, const gather_reply *r, int n, void *arg);
int forward_gather(http_ctx *c, const char *const *nodes, const char *const *paths, int n,
                   gather_done_fn done, void *arg);

/* ---- s3.c: the S3 REST endpoint ---- */

/* The S3 endpoint's settings from conf (q->s3, q->s3_host, q->s3_port):
 * 0, or -1 with errstr (a bad credentials file, say). */
int s3_conf_new(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                size_t errstr_size);
void s3_conf_free(objlog_query *q);
/* Reads --s3-credentials again (objlog_query_reload). */
int s3_conf_reload(objlog_query *q, char *errstr, size_t errstr_size);
/* The S3 endpoint's face (its router, its XML errors and answers). */
extern const http_face s3_face;
/* An error as S3 answers it: XML Error with Code, Message, Resource and
 * RequestId (no body for HEAD), in S3's words (s3_error_code). */
void s3_reply_error(http_ctx *c, int status, const char *code, const char *request_id,
                    const char *message);
/* What an applied S3 write's answer may name. */
typedef struct write_answer {
    const char *bucket;          /* "" unless the write kept it */
    const char *key;             /* NULL unless the write kept it */
    size_t key_len;
    const char *version_id;
    const char *etag;
    int delete_marker;
    const char *upload_id;
    int64_t log_time_ms;         /* the new version's LastModified; 0 unknown */
} s3_written;
/* A gateway write of c applied OK: the answer its S3 operation gives. */
void s3_reply_written(http_ctx *c, const s3_written *w);

/* ---- attribute indexes: ixread.c, gateway.c, ixdriver.c ---- */
/* rest: what follows "/v1/buckets/{b}/indexes". */
void ixread_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                  const char *rest);
/* The backfill driver: appends BuildIndex events for the building indexes
 * of the partitions this node applies as active (ixdriver.c). */
typedef struct ixdriver ixdriver;
ixdriver *ixdriver_new(objlog_query *q, char *errstr, size_t errstr_size);
void ixdriver_stop(ixdriver *d);      /* before the producer goes */
void ixdriver_destroy(ixdriver *d);   /* after it (its callbacks touch d) */

#include "read.h"
#include "api.h"

#endif
