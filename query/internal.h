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
#include "view.h"

#define HTTP_DEFAULT_TIMEOUT_MS 2000
#define HTTP_MAX_TIMEOUT_MS 30000
#define HTTP_MAX_KEY_LEN 1024
#define HTTP_MAX_BODY (256 * 1024)

typedef struct gateway gateway;
typedef struct wm_cache wm_cache;
typedef struct cluster cluster;
typedef struct ckpt_job ckpt_job;
typedef struct admit admit;
/* How a forward ended (forward.c; objlog_cluster_forwards_total). */
typedef enum forward_result {
    FORWARD_ANSWERED,            /* the peer's answer was relayed */
    FORWARD_UNREACHABLE,         /* no answer from the peer: 503 */
    FORWARD_REFUSED,             /* not sent: second hop, or full: 503 */
    FORWARD_RESULTS
} forward_result;

/* Route names for request metrics (objlog_http_requests_total{endpoint}). */
typedef enum http_endpoint {
    HTTP_EP_OTHER = 0,
    HTTP_EP_GET_OBJECT,
    HTTP_EP_HEAD_OBJECT,
    HTTP_EP_LIST_OBJECTS,
    HTTP_EP_LIST_VERSIONS,
    HTTP_EP_PUT_OBJECT,
    HTTP_EP_DELETE_OBJECT,
    HTTP_EP_WRITES,
    HTTP_EP_OUTCOMES,
    HTTP_EP_LAG,
    HTTP_EP_METRICS,
    HTTP_EP_HEALTHZ,
    HTTP_EP_READYZ,
    HTTP_EP_BUCKET,
    HTTP_EP_UPLOADS,
    HTTP_EP_PARTS,
    HTTP_EP_STATS,
    HTTP_EP_USAGE,
    HTTP_EP_CHECKPOINT,
    HTTP_EP_INDEXES,
    HTTP_EP_COUNT
} http_endpoint;
const char *http_endpoint_name(http_endpoint ep);

/* Latency histogram upper bounds (seconds), +Inf implied after them. */
#define HTTP_HIST_BUCKETS 14
extern const double http_hist_bounds[HTTP_HIST_BUCKETS];

/* Request methods counted apart in metrics (the method label). */
typedef enum http_method {
    HTTP_M_GET = 0,
    HTTP_M_HEAD,
    HTTP_M_PUT,
    HTTP_M_POST,
    HTTP_M_DELETE,
    HTTP_M_OTHER,
    HTTP_M_COUNT
} http_method;
const char *http_method_name(http_method m);

/* Status codes counted apart (the code label): the ones objlogd answers
 * with; anything else is counted as code="other". */
#define HTTP_CODE_SLOTS 18
extern const int http_code_values[HTTP_CODE_SLOTS - 1];

/* Request counters of one worker. Only its own thread writes them (every
 * reply is sent there); /metrics sums all workers from another thread,
 * hence relaxed atomics rather than locks. hist is per bucket, not yet
 * cumulative (the scrape accumulates); slot HTTP_HIST_BUCKETS is +Inf. */
typedef struct http_stats {
    atomic_uint_fast64_t status[HTTP_EP_COUNT][HTTP_M_COUNT][HTTP_CODE_SLOTS];
    atomic_uint_fast64_t hist[HTTP_EP_COUNT][HTTP_M_COUNT][HTTP_HIST_BUCKETS + 1];
    atomic_uint_fast64_t sum_ns[HTTP_EP_COUNT][HTTP_M_COUNT];
} http_stats;

/* Fence modes counted in metrics. */
enum { FENCE_STRONG = 0, FENCE_TOKEN = 1, FENCE_MODES = 2 };

/* How a parked read's fence ended (fence.c), handed to the re-run of its
 * route in http_ctx.fenced. */
typedef enum fence_rc {
    FENCE_MET = 0,
    FENCE_TIMED_OUT,             /* part has not applied need in time */
    FENCE_FETCH_FAILED,          /* part's end offset: err */
    FENCE_STOPPED,               /* part is stopped */
    FENCE_SHUTDOWN,              /* the worker stops */
    FENCE_MOVED                  /* a cluster node stopped applying part */
} fence_rc;
typedef struct fence_result {
    fence_rc rc;
    int32_t part;
    int64_t need;
    rd_kafka_resp_err_t err;
} fence_result;
typedef struct fence_req fence_req;
typedef struct http_conn http_conn;

typedef struct http_worker {
    struct objlog_query *q;
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *stop_ev;       /* activated from any thread to stop */
    pthread_t thread;
    int thread_started;
    int inflight;                /* worker thread only */
    int stopping;                /* worker thread only */
    http_stats *stats;
    /* Reads parked on their fence (fence.c): the list is the worker
     * thread's; nparked tells other threads whether to wake it. */
    fence_req *parked;
    atomic_int nparked;
    struct event *wake_ev;       /* fence_worker_wake_cb, from any thread */
    uint64_t rid_state;          /* request ids (http_request_id) */
    /* Connections (conn.c), all worker-thread state but nconns, which
     * /metrics reads. */
    struct evconnlistener *lev;  /* evhttp's, paused when full or out of fds */
    int lev_on, s3lev_on;        /* whether each listener is enabled */
    int conn_full;               /* nconns reached conn_cap (counted once) */
    int nofd_paused;             /* accept() ran out of descriptors */
    struct event *accept_resume_ev;
    struct event *conn_settle_ev; /* priority 0: before any connection's I/O */
    http_conn *conn_new;         /* accepted, not yet settled */
    http_conn **conns;           /* by socket fd, conns_size slots */
    int conns_size;
    int conn_cap;
    atomic_int nconns;
    objlog_logger_limit log_accept, log_timeout, log_cut, log_framing;
    struct fwd_state *fwd;       /* forward.c: reads sent on to a peer node */
    /* The S3 listener (s3.c), when --s3-listen: its own evhttp on this
     * worker's loop; connections counted with the others (conn.c). */
    struct evhttp *s3http;
    struct evhttp_bound_socket *s3bound;
    struct evconnlistener *s3lev;
    ckpt_job *ckpt_jobs;         /* ckptserve.c: exports of this worker's requests */
} http_worker;

struct objlog_query {
    char *host;
    char *brokers;
    char *topic;
    char *control_topic;
    int port;
    objlog_store *store;
    objlog_materializer *m;
    objlog_producer *producer;   /* ack=logged; the gateway awaits outcomes */
    wm_cache *wm;                /* coalesced end offsets (watermark.c) */
    int max_timeout_ms;          /* largest timeout_ms a request may ask */
    int64_t ready_max_lag;       /* /readyz fails past this lag (messages) */
    uint8_t token_key[OBJLOG_TOKEN_SECRET_LEN]; /* signs continuation tokens */
    atomic_uint_fast64_t fence_waits[FENCE_MODES];
    atomic_uint_fast64_t fence_timeouts[FENCE_MODES];
    int max_connections;         /* over all workers (conn.c) */
    int request_timeout_ms;      /* first byte of a request to its dispatch */
    int idle_timeout_ms;         /* a connection with no request in progress */
    atomic_uint_fast64_t conn_pauses[2]; /* listener paused: full, out of fds */
    atomic_uint_fast64_t request_timeouts;
    atomic_uint_fast64_t answers_cut;
    atomic_uint_fast64_t idle_closes;      /* closed by idle_timeout_ms */
    atomic_uint_fast64_t framing_errors;   /* answered 400 by conn.c, closed */
    atomic_uint_fast64_t reserve_refusals; /* past the cap, not a probe: 503 */
    gateway *gw;
    struct ixdriver *ixd;        /* index backfill steps (ixdriver.c) */
    cluster *cluster;            /* NULL unless a cluster node (cluster.c) */
    struct s3_conf *s3;          /* NULL unless --s3-listen (s3.c) */
    struct api_conf *api;        /* the JSON API's tokens (apiguard.c) */
    struct tls_conf *tls;        /* TLS of listeners and peers (tls.h); NULL none */
    char *s3_host;
    int s3_port;                 /* the bound port once listening */
    int s3_listen_fd;            /* until the workers take it, else -1 */
    long long eventual_max_lag;  /* cluster_route: local eventual reads */
    int standbys;                /* cluster: standbys per partition (cluster.c) */
    atomic_uint_fast64_t forwards[FORWARD_RESULTS];
    atomic_int ckpt_running;     /* checkpoint exports in progress (ckptserve.c) */
    atomic_uint_fast64_t ckpt_served, ckpt_bytes; /* answered 200, and their bytes */
    int nworkers;
    http_worker *workers;
    struct lc_worker *lc;        /* the lifecycle worker (lifecycle.c) */
    admit *admit;                /* admission control (admit.c); NULL: off */
};

/* One query parameter, percent-decoded; value may hold NUL bytes. */
typedef struct http_param {
    char *name;
    char *value;
    size_t value_len;
} http_param;

typedef struct http_ctx {
    struct evhttp_request *req;
    http_worker *w;
    objlog_query *q;
    char request_id[33];         /* for edge errors and reads */
    http_param *params;
    int nparams;
    http_endpoint endpoint;      /* for metrics; set while routing */
    struct timespec start;       /* CLOCK_MONOTONIC at dispatch */
    const fence_result *fenced;  /* the re-run after a parked fence, else NULL */
    int s3;                      /* came through the S3 listener (s3.c): errors
                                    are S3 XML, successes s3.c's */
    int s3_op;                   /* S3_OP_*: what a write's success answers */
    /* Who asks (authz.c): set by the API that authenticated the request
     * (apiguard.c, s3.c), never from a header a client chose. */
    int authz;                   /* 1: only owners (or admins) pass */
    char tenant[257];            /* the caller's tenant, "" anonymous */
    int admin;                   /* the admin role: every tenant's buckets */
    int node_signed;             /* a peer node signed it (apiauth.h) */
} http_ctx;

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
/* A request this node makes of a peer: the subject (c's, or the node's
 * own when c is NULL) and its signature into the two header values. 0,
 * 1 when this node has no cluster secret (nothing to add), -1 error. */
int api_sign_headers(objlog_query *q, const char *method, const char *target,
                     const void *body, size_t n, const http_ctx *c, char *subject,
                     size_t subject_size, char *auth, size_t auth_size);
/* The same added to an outgoing evhttp request (its body already in its
 * output buffer). 0, or -1. */
int api_sign_request(objlog_query *q, struct evhttp_request *out, enum evhttp_cmd_type cmd,
                     const char *target, const http_ctx *c);
/* The node's own bodiless request of url: the two headers appended to hl
 * (returned; hl unchanged without a cluster secret, NULL out of memory). */
struct curl_slist;
struct curl_slist *api_sign_curl(objlog_query *q, const char *method, const char *url,
                                 struct curl_slist *hl);

/* ---- conn.c: connection limits, idle and request deadlines, framing,
 * whole answers ---- */
int conn_worker_init(http_worker *w, char *errstr, size_t errstr_size);
void conn_worker_thread(http_worker *w);   /* first thing on the worker's thread */
void conn_worker_stop(http_worker *w);     /* before the listener goes */
void conn_worker_free(http_worker *w);     /* after evhttp_free */
/* A request reached its handler: its deadline ends, reading stops. 1 when
 * its connection was taken past the cap: only a probe may be served there
 * (http_probe_path), anything else answered 503. */
int conn_request_dispatched(http_worker *w, struct evhttp_request *req);
/* Around evhttp_send_reply: begin (NULL for an untracked connection),
 * then sent once evhttp has the answer. */
http_conn *conn_answer_begin(http_worker *w, struct evhttp_request *req);
void conn_answer_sent(http_conn *cn);

/* ---- jsonw.c: compact JSON for the hottest answers ---- */
typedef struct jsonw {
    keybuf buf;                  /* the text; the caller frees it */
    int need_comma;
    int failed;                  /* out of memory, at any point */
} jsonw;
void jsonw_begin(jsonw *w);      /* "{"; key NULL below: an array element */
void jsonw_str(jsonw *w, const char *key, const char *s); /* NULL: "" */
void jsonw_strn(jsonw *w, const char *key, const char *s, size_t n);
void jsonw_u64(jsonw *w, const char *key, uint64_t v);
void jsonw_bool(jsonw *w, const char *key, int v);
void jsonw_object_begin(jsonw *w, const char *key);
void jsonw_object_end(jsonw *w);
void jsonw_array_begin(jsonw *w, const char *key);
void jsonw_array_end(jsonw *w);
int jsonw_finish(jsonw *w);      /* "}\n"; 0, or -1 out of memory */

/* ---- http.c ---- */
/* Value of query parameter name (NULL if absent); *len gets its length. */
const char *http_param_get(const http_ctx *c, const char *name, size_t *len);
/* Parses an integer parameter in [lo, hi]; absent -> def. 0, or -1 when it
 * is present but not such an integer. */
int http_param_int(const http_ctx *c, const char *name, long long lo,
                   long long hi, long long def, long long *out);
/* Query parameter, else header (e.g. consistency / X-Objlog-Consistency). */
const char *http_param_or_header(const http_ctx *c, const char *param,
                                 const char *header);
void http_add_header(http_ctx *c, const char *name, const char *value);
/* Sends body (stolen; NULL = no body) as JSON with status. */
void http_reply_json(http_ctx *c, int status, json_t *body);
/* A peer's answer, relayed (forward.c): its headers are set already; takes
 * body (may be NULL). */
void http_reply_forwarded(http_ctx *c, int status, struct evbuffer *body);
/* body (taken; its length is the Content-Length) of content_type. */
void http_reply_buffer(http_ctx *c, int status, const char *content_type,
                       struct evbuffer *body);
/* n bytes of data as the body, of content_type. */
void http_reply_bytes(http_ctx *c, int status, const char *content_type,
                      const void *data, size_t n);
/* The same with a body already rendered (jsonw.c). */
void http_reply_json_text(http_ctx *c, int status, const char *text, size_t len);
/* Sends len bytes of text with content_type and status (metrics). */
void http_reply_text(http_ctx *c, int status, const char *content_type,
                     const char *text, size_t len);
void http_reply_error(http_ctx *c, int status, const char *code,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same, for an error JSON whose request id is not the context's. */
void http_reply_error_rid(http_ctx *c, int status, const char *code,
                          const char *request_id, const char *message,
                          json_t *extra);
/* A JSON string of n bytes that may hold NUL (keys, prefixes). */
json_t *http_json_bytes(const void *p, size_t n);
void http_format_time(int64_t ms, char *out, size_t out_size);
int http_utf8_valid(const uint8_t *s, size_t n);
void http_request_id(http_worker *w, char out[33]); /* 32 hex digits */
/* The query string into c->params (percent-decoded); -1 malformed. */
int http_params_parse(http_ctx *c, const char *query);
void http_params_free(http_ctx *c);
/* S3's bucket naming rules (schemas/bucketname.h): 1 when b[0..n) is a
 * bucket name, else 0 after answering 400 InvalidBucketName naming the
 * rule it breaks. */
int http_bucket_name_ok(http_ctx *c, const char *b, size_t n);
int http_timeout_param(http_ctx *c, int *timeout_ms); /* replies on -1 */
/* /healthz, /readyz, /metrics: what a connection past the cap may ask. */
int http_probe_path(const char *path);
/* evhttp's own socket timeout (seconds): it restarts on every byte, so it
 * only ends a peer that stops reading an answer; conn.c keeps the idle
 * and request deadlines, which it must not cut short. */
int http_socket_timeout_s(const objlog_query *q);
/* Runs req's route again on its worker, after its fence ended with res
 * (fence.c); same request id and start time; s3: through the S3 routes. */
void http_rerun(http_worker *w, struct evhttp_request *req, const char *request_id,
                const struct timespec *start, const fence_result *res, int s3);

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
/* On worker w's thread as it stops: its exports end at their next chunk
 * and answer 503. */
void ckpt_expire_worker(http_worker *w);

/* ---- gateway.c ---- */
gateway *gateway_new(objlog_query *q, int waiters, char *errstr,
                     size_t errstr_size);
/* Joins the waiter threads once they have drained their queue. */
void gateway_destroy(gateway *g);
/* On worker w's thread as it stops: answers every request of w now (503,
 * retry with the same request id), so a stop never waits on the log. */
void gateway_expire_worker(gateway *g, http_worker *w);
void gateway_put_bucket(http_ctx *c, const char *bucket);
/* The writes behind the JSON routes, for callers that parsed their own
 * request (the S3 endpoint, s3.c): same checks, same replies (an S3
 * request's success answer is s3_reply_written). */
void gateway_create_bucket(http_ctx *c, const char *bucket, const objlog_bucket_conf *bc);
void gateway_put_object_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                             size_t key_len, const objlog_object_meta *meta);
void gateway_delete_version(http_ctx *c, const char *bucket, const uint8_t *key,
                            size_t key_len, const char *version_id);
void gateway_put_object(http_ctx *c, const char *bucket, const uint8_t *key,
                        size_t key_len);
void gateway_delete_object(http_ctx *c, const char *bucket,
                           const uint8_t *key, size_t key_len);
void gateway_delete_bucket(http_ctx *c, const char *bucket);
void gateway_put_versioning(http_ctx *c, const char *bucket);
void gateway_set_versioning(http_ctx *c, const char *bucket, objlog_versioning v);
void gateway_put_quota(http_ctx *c, const char *bucket);
void gateway_put_rate_limit(http_ctx *c, const char *bucket);
void gateway_delete_rate_limit(http_ctx *c, const char *bucket);
void gateway_create_upload(http_ctx *c, const char *bucket);
void gateway_upload_part(http_ctx *c, const char *bucket, const char *upload_id,
                         const char *part_number);
void gateway_complete_upload(http_ctx *c, const char *bucket,
                             const char *upload_id);
void gateway_abort_upload(http_ctx *c, const char *bucket, const char *upload_id);
/* The multipart writes with their values parsed (the JSON routes above
 * parse their bodies into these; the S3 endpoint, s3write.c, its XML). */
void gateway_create_upload_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                                size_t key_len, const objlog_object_meta *meta);
/* A part number "1".."10000" -> *out; -1 otherwise. */
int gateway_part_number(const char *s, uint32_t *out);
void gateway_upload_part_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id, uint32_t part_number,
                              uint64_t size, const char *etag, const char *blob_id);
void gateway_complete_upload_parts(http_ctx *c, const char *bucket, const uint8_t *key,
                                   size_t key_len, const char *upload_id,
                                   const objlog_completed_part *parts, size_t n);
void gateway_abort_upload_key(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id);
/* What one write of a batch came to: status 200 and its version, or the
 * status, code and message its own answer would have carried. */
typedef struct gateway_result {
    int status;
    const char *code;            /* "" when ok */
    const char *message;
    const char *version_id;
    const char *etag;
    int delete_marker;
} gateway_result;
/* Called on c's worker thread exactly once per item i (possibly before
 * gateway_delete_versions returns); res is valid during the call only. */
typedef void gateway_sink(void *arg, size_t i, const gateway_result *res);
typedef struct gateway_delete_item {
    const uint8_t *key;
    size_t key_len;
    const char *version_id;      /* NULL: the current version */
} gateway_delete_item;
/* One delete per item, each its own write with its own request id; their
 * outcomes go to sink, nothing is answered on c. 0 when every item was
 * issued (sink will be called n times), -1 after answering c (bad ack= or
 * timeout_ms=: nothing issued). */
int gateway_delete_versions(http_ctx *c, const char *bucket, const gateway_delete_item *items,
                            size_t n, gateway_sink *sink, void *arg);

/* A prepared event (SetLifecycle: lcapi.c) through the same request
 * path as every JSON write: ack=, timeout_ms=, request id, the answer. */
void gateway_write_event(http_ctx *c, Objlog__Event *ev);

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
/* The bucket record with its rules, through a fenced view: 1 with *b
 * (caller frees), 0 after replying (404 NoSuchLifecycleConfiguration when
 * it has none; S3's XML when c->s3) or parking. */
int lcapi_bucket(http_ctx *c, const char *bucket, view_bucket *b);
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
bootstrap *bootstrap_new(objlog_query *q, char *errstr, size_t errstr_size);
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

cluster *cluster_new(objlog_query *q, const char *name, const char *self_url,
                     char *errstr, size_t errstr_size);
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
/* 1 when c was forwarded by another node (X-Objlog-Hop). */
int http_hop(http_ctx *c);
/* Blocking (gateway waiters): the outcome of the write at p.off from the
 * node that applies p, asked again as the partition moves, within
 * timeout_ms. 0 (*out owned by the caller), 1 not in time, -1 error
 * (err), CLUSTER_OUTCOME_LOCAL: p is applied here now, wait locally. */
#define CLUSTER_OUTCOME_LOCAL 2
int cluster_remote_outcome(cluster *c, objlog_materializer *m, int32_t p, int64_t off,
                           int timeout_ms, Objlog__Outcome **out, char *err, size_t en);
void cluster_metrics(FILE *f, cluster *c);

/* ---- forward.c: a read sent on to the node that applies its partition ---- */

int forward_worker_init(http_worker *w);
void forward_worker_free(http_worker *w);
/* Sends c's request to node (a URL) and answers c with its answer later,
 * on this worker; or answers 503 now. Always 1 (c is answered or will be). */
/* part: the one partition the read is for (a node that does not answer is
 * then replaced by another replica of it, once), -1 several. */
int forward_request(http_ctx *c, const char *node, int32_t part);
/* On worker w's thread as it stops: every forward in flight answers 503. */
void forward_expire_worker(http_worker *w);
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

/* What an S3 write's success answers (http_ctx.s3_op). */
enum { S3_OP_NONE, S3_OP_CREATE_BUCKET, S3_OP_DELETE_BUCKET, S3_OP_PUT_VERSIONING,
       S3_OP_PUT_OBJECT, S3_OP_DELETE_OBJECT, S3_OP_CREATE_UPLOAD, S3_OP_UPLOAD_PART,
       S3_OP_COMPLETE_UPLOAD, S3_OP_ABORT_UPLOAD, S3_OP_COPY_OBJECT,
       S3_OP_DELETE_LIFECYCLE };
/* The S3 endpoint's settings from conf (q->s3, q->s3_host, q->s3_port):
 * 0, or -1 with errstr (a bad credentials file, say). */
int s3_conf_new(objlog_query *q, const objlog_query_conf *conf, char *errstr,
                size_t errstr_size);
void s3_conf_free(objlog_query *q);
/* Reads --s3-credentials again (objlog_query_reload). */
int s3_conf_reload(objlog_query *q, char *errstr, size_t errstr_size);
/* Binds the S3 listener of worker w to fd (a dup of the listening socket). */
int s3_worker_init(http_worker *w, int fd, char *errstr, size_t errstr_size);
/* Helpers of the S3 files (s3.c; s3list.c and s3write.c use them too). */
const char *s3_header(http_ctx *c, const char *name);     /* NULL absent */
/* max-keys / max-uploads / max-parts: 0..2^31-1, default and cap 1000
 * (S3 answers at most 1000); -1 after 400 InvalidArgument. */
int s3_max_param(http_ctx *c, const char *name, int *out);
/* encoding-type: 0 absent, 1 "url", -1 after 400 InvalidArgument. */
int s3_encoding(http_ctx *c);
/* Content-MD5, when sent, against the body's MD5: 0, or -1 after 400
 * InvalidDigest (not 16 bytes of base64) / BadDigest (another digest). */
int s3_check_content_md5(http_ctx *c, const unsigned char md5[16]);
/* More headers than this is refused before anything reads them (s3.c):
 * every header a handler reads must have been under the signature check. */
#define S3_MAX_HEADERS 200
/* x-amz-meta-* headers into um (at most S3_USER_META_MAX; names
 * lowercased into names, as S3 keeps them); -1 after 400. S3 bounds user
 * metadata by size (2 KiB, checked by the producer library), not count: as
 * many as a request may have headers at all. */
#define S3_USER_META_MAX S3_MAX_HEADERS
int s3_user_meta(http_ctx *c, objlog_user_meta *um, size_t *n, char names[][256]);
/* x-amz-tagging (a URL-encoded query string, "k1=v1&k2=v2", '+' a space)
 * into m->tags: the decoded pairs live in tags until s3_tags_free (call
 * it whatever s3_tags_parse returned). Absent: no tags, 0. More than
 * S3_TAGS_MAX pairs (400 BadRequest, as S3), an empty or repeated key
 * (400 InvalidTag): -1 after replying. The producer checks lengths and
 * UTF-8 (400 InvalidArgument). */
#define S3_TAGS_MAX 10
typedef struct s3_tags {
    char *decoded[2 * S3_TAGS_MAX]; /* key, value, ... (evhttp_uridecode) */
    size_t n;
    objlog_user_meta pairs[S3_TAGS_MAX];
} s3_tags;
int s3_tags_parse(http_ctx *c, s3_tags *tags, objlog_object_meta *m);
void s3_tags_free(s3_tags *tags);
/* Runs c (s3 set) again after its fence was parked (fence.c). */
void s3_run(http_ctx *c);
/* An error as S3 answers it: XML Error with Code, Message, Resource and
 * RequestId (no body for HEAD), in S3's words (s3_error_code). */
void s3_reply_error(http_ctx *c, int status, const char *code, const char *request_id,
                    const char *message);
/* An objlog status and code S3 has no word for, turned into S3's. */
void s3_error_code(int *status, const char **code);
/* What an applied S3 write's answer may name. */
typedef struct s3_written {
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

/* ---- s3write.c: S3's writes beyond PutObject / DeleteObject ---- */
/* What s3.c hands a write handler: the addressed bucket and key and the
 * body as signed (an aws-chunked one decoded: decoded set). */
typedef struct s3_request {
    const char *bucket;
    const char *key;             /* NULL for a bucket's sub-resource */
    size_t key_len;
    const uint8_t *body;
    size_t body_len;
    int decoded;
} s3_request;
void s3_put_versioning(http_ctx *c, const s3_request *r);  /* PUT ?versioning */
void s3_create_upload(http_ctx *c, const s3_request *r);   /* POST ?uploads */
void s3_upload_part(http_ctx *c, const s3_request *r);     /* PUT ?partNumber&uploadId */
void s3_complete_upload(http_ctx *c, const s3_request *r); /* POST ?uploadId */
void s3_abort_upload(http_ctx *c, const s3_request *r);    /* DELETE ?uploadId */
void s3_copy_object(http_ctx *c, const s3_request *r);     /* PUT + x-amz-copy-source */
void s3_delete_objects(http_ctx *c, const s3_request *r);  /* POST ?delete */
/* ---- s3lc.c: S3's ?lifecycle bucket subresource ---- */
void s3_put_lifecycle(http_ctx *c, const s3_request *r);    /* PUT ?lifecycle */
void s3_get_lifecycle(http_ctx *c, const char *bucket);     /* GET ?lifecycle */
void s3_delete_lifecycle(http_ctx *c, const char *bucket);  /* DELETE ?lifecycle */

/* ---- s3list.c: S3's listings of versions, uploads and parts ---- */
/* ListObjectVersions (GET /BUCKET?versions), ListMultipartUploads (GET
 * /BUCKET?uploads), ListParts (GET|HEAD /BUCKET/KEY?uploadId=): the JSON
 * routes' reads (read_*_page) answered as S3's XML. */
void s3list_versions(http_ctx *c, const char *bucket);
void s3list_uploads(http_ctx *c, const char *bucket);
void s3list_parts(http_ctx *c, const char *bucket, const uint8_t *key, size_t key_len);

/* ---- xmlw.c: S3's XML answers ---- */
typedef struct xmlw {
    keybuf buf;                  /* the text; xmlw_take hands it over */
    int failed;                  /* out of memory at some point */
} xmlw;
/* The text as an evbuffer for a reply (taking the bytes, no copy); NULL
 * (and the text freed) when out of memory at any point. */
struct evbuffer *xmlw_take(xmlw *x);
/* Frees the text (an answer not sent after all). */
void xmlw_discard(xmlw *x);
/* The XML declaration and root element, with S3's namespace. */
int xmlw_begin(xmlw *x, const char *root);
/* The same without the namespace (S3's Error document has none). */
int xmlw_begin_bare(xmlw *x, const char *root);
/* Escaped text inside the element open now. */
void xmlw_raw_text(xmlw *x, const char *s);
void xmlw_open(xmlw *x, const char *tag);
void xmlw_close(xmlw *x, const char *tag);
/* <tag>escaped bytes</tag>; url: EncodingType=url (S3's form of it). */
void xmlw_bytes(xmlw *x, const char *tag, const void *s, size_t n, int url);
void xmlw_str(xmlw *x, const char *tag, const char *s);
void xmlw_u64(xmlw *x, const char *tag, uint64_t v);
void xmlw_bool(xmlw *x, const char *tag, int v);
/* ISO 8601 with milliseconds, UTC: 2009-10-12T17:50:30.000Z. */
void xmlw_time(xmlw *x, const char *tag, int64_t ms);
/* s3.c: closes root and answers the document (no body for HEAD), with
 * x-amz-request-id; 500 when the writer ran out of memory. */
void s3_reply_xml(http_ctx *c, int status, xmlw *x, const char *root);

/* ---- s3sum.c: x-amz-checksum-* of a body ---- */
struct s3auth;
/* The checksum the client sent (header, or a's aws-chunked trailer; a may
 * be NULL) checked against body: 0 none sent; 1 it matches, out =
 * "ALGORITHM:base64" to store, header = the x-amz-checksum-* name to
 * answer with; -1 after replying 400 BadDigest. */
int s3_checksum(http_ctx *c, const struct s3auth *a, const uint8_t *body, size_t n,
                char *out, size_t out_size, char *header, size_t header_size);
/* A stored "ALGORITHM:base64" as its x-amz-checksum-* header name and
 * value: 1, or 0 when it is not one of S3's. */
int s3_checksum_header(const char *stored, char *name, size_t nn, const char **value);

/* ---- attribute indexes: ixread.c, gateway.c, ixdriver.c ---- */
void http_method_not_allowed(http_ctx *c, const char *allow);
/* rest: what follows "/v1/buckets/{b}/indexes". */
void ixread_route(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
                  const char *rest);
void gateway_put_index(http_ctx *c, const char *bucket, const char *name);
void gateway_drop_index(http_ctx *c, const char *bucket, const char *name);
/* The backfill driver: appends BuildIndex events for the building indexes
 * of the partitions this node applies as active (ixdriver.c). */
typedef struct ixdriver ixdriver;
ixdriver *ixdriver_new(objlog_query *q, char *errstr, size_t errstr_size);
void ixdriver_stop(ixdriver *d);      /* before the producer goes */
void ixdriver_destroy(ixdriver *d);   /* after it (its callbacks touch d) */

/* The read path's and the JSON read routes' declarations live in their
 * components' headers now; files that do not include those yet get them
 * from here. */
#include "read.h"
#include "api.h"

#endif
