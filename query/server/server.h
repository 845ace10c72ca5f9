/* server.h: objlogd's HTTP server, the one every API is served through.
 * Its users are the APIs (api/, s3/), what they share (read/, write/,
 * cluster/, admit/) and the service that assembles them (service.c).
 *
 * The server knows no route. An API hands it a face (http_face: its
 * router, its error answer, which requests a connection past the cap may
 * make) and a listener per face; a module that keeps per-worker state
 * registers hooks (server_hooks: init, stop, dispose) and gets a slot in
 * every worker for it, the way an h2o handler carries its
 * on_context_init/on_context_dispose.
 *
 * Invariant: every request a worker accepts is answered exactly once, on
 * that worker's event_base thread (evhttp is not thread-safe), through
 * http_reply_* (reply.c); that is also where the worker's in-flight count
 * drops, which graceful shutdown waits on. */
#ifndef OBJLOG_QUERY_SERVER_H
#define OBJLOG_QUERY_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "keycodec.h"
#include "objlog_logger.h"

#define HTTP_DEFAULT_TIMEOUT_MS 2000
#define HTTP_MAX_TIMEOUT_MS 30000
#define HTTP_MAX_KEY_LEN 1024
#define HTTP_MAX_BODY (256 * 1024)
#define HTTP_STREAM_MIN (1 << 20)

typedef struct objlog_query objlog_query; /* the service (service.c): opaque here */
typedef struct server server;
typedef struct http_conn http_conn;
typedef struct http_ctx http_ctx;
typedef struct tls_conf tls_conf;
struct write_answer;                      /* write.h */

/* What a request did, for objlog_http_requests_total{endpoint}: both APIs
 * count their operations under these names, so one dashboard reads both;
 * the api label (the face's name) tells them apart. */
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

/* Status codes counted apart (the code label): every one objlogd answers
 * with, each as itself (code="307"). Any other status (a peer's answer a
 * cluster node sends on) is counted by its class, code="1xx".."5xx", in
 * the slots after them: no answer is filed under a name that hides it. */
#define HTTP_CODES 22
#define HTTP_CODE_CLASSES 5
#define HTTP_CODE_SLOTS (HTTP_CODES + HTTP_CODE_CLASSES)
extern const int http_code_values[HTTP_CODES];
/* A slot's code label ("404", "3xx") into buf. */
const char *http_code_label(int slot, char *buf, size_t n);

/* Listeners of one server, one per face (json, s3). */
#define SERVER_MAX_LISTENERS 2

/* Request counters of one worker, per listener (the api label: its face's
 * name). Only its own thread writes them (every reply is sent there);
 * /metrics sums all workers from another thread, hence relaxed atomics
 * rather than locks. hist is per bucket, not yet cumulative (the scrape
 * accumulates); slot HTTP_HIST_BUCKETS is +Inf. */
typedef struct http_stats {
    atomic_uint_fast64_t status[SERVER_MAX_LISTENERS][HTTP_EP_COUNT][HTTP_M_COUNT]
                               [HTTP_CODE_SLOTS];
    atomic_uint_fast64_t hist[SERVER_MAX_LISTENERS][HTTP_EP_COUNT][HTTP_M_COUNT]
                             [HTTP_HIST_BUCKETS + 1];
    atomic_uint_fast64_t sum_ns[SERVER_MAX_LISTENERS][HTTP_EP_COUNT][HTTP_M_COUNT];
} http_stats;

/* How an API meets its clients. One per listener; every request carries
 * the face it came through, and answers its errors through it. */
typedef struct http_face {
    const char *name;            /* "json", "s3": what logs call it */
    /* Routes and answers the request (called again, with c->fenced set,
     * when a read parked on its fence may go on). */
    void (*run)(http_ctx *c);
    /* An error in the API's own wire format; takes extra (may be NULL). */
    void (*reply_error)(http_ctx *c, int status, const char *code, const char *request_id,
                        const char *message, json_t *extra);
    /* A write's success, when the API answers it in its own shape (NULL:
     * the gateway's JSON answer). */
    void (*written)(http_ctx *c, const struct write_answer *a);
    /* A request conn.c answers itself (framing, deadlines): the body of
     * code/message in the API's format into out, its content type and
     * request-id header name. */
    int (*edge_body)(char *out, size_t n, const char *code, const char *message,
                     const char *request_id);
    const char *edge_content_type;
    const char *request_id_header;
    /* Paths a connection taken past the connection cap may ask (probes);
     * NULL: this listener takes no connection past the cap. */
    int (*reserved_path)(const char *path);
    /* Where a cluster node sends a request of a partition another node
     * applies (forward.c): to that node's listener of this face's name,
     * which its peers learn from its GET /v1/lag.
     * forward_writes 1: a write is sent on whole, like a read; 0: a write
     * is produced where it arrived (its body never crosses nodes), and
     * only its owner check asks the bucket's node (authz.c).
     * forward_as_sent 1: Host, Date and Authorization go as the client
     * sent them (a signature over them, not a secret: a peer that shares
     * no node key with this one checks it again); 0: the peer learns who
     * asks from this node's signature alone. */
    int forward_writes;
    int forward_as_sent;
    /* 1: a PUT with a Content-Length over HTTP_STREAM_MIN is dispatched at
     * its head and its body streamed to the handler (http_stream_of) */
    int streams;
    /* With streams: whether the PUT whose head (n bytes, the request line
     * and header lines as sent) is head streams, 0 to read it whole.
     * NULL: every one does. */
    int (*stream_wanted)(const char *head, size_t n);
    size_t max_body;
    int allowed_methods;         /* EVHTTP_REQ_* */
} http_face;

/* Per-worker hooks of a module; each gets a slot (server_hooks_add). */
struct http_worker;
typedef struct server_hooks {
    /* Before the worker's thread starts (its base exists); *state is the
     * slot's value. */
    int (*init)(void *arg, struct http_worker *w, void **state, char *errstr,
                size_t errstr_size);
    /* On the worker's thread as it stops: what it keeps waiting answers
     * now (503), so the in-flight count can reach zero. */
    void (*stop)(void *arg, struct http_worker *w, void *state);
    /* After the loop ended and evhttp is freed; state may be NULL. */
    void (*dispose)(void *arg, struct http_worker *w, void *state);
    void *arg;
} server_hooks;
#define SERVER_MAX_HOOKS 8

typedef struct http_listener {
    const http_face *face;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct evconnlistener *lev;  /* evhttp's, paused when full or out of fds */
    int lev_on;                  /* whether it is enabled */
} http_listener;

typedef struct http_worker {
    server *srv;
    objlog_query *q;
    struct event_base *base;
    struct event *stop_ev;       /* activated from any thread to stop */
    pthread_t thread;
    int thread_started;
    int inflight;                /* worker thread only */
    int stopping;                /* worker thread only */
    http_stats *stats;
    uint64_t rid_state;          /* request ids (http_request_id) */
    http_listener ls[SERVER_MAX_LISTENERS];
    int nls;
    void *slot[SERVER_MAX_HOOKS]; /* the hooks' per-worker state */
    /* Connections (conn.c), all worker-thread state but nconns, which
     * /metrics reads. */
    int conn_full;               /* nconns reached conn_cap (counted once) */
    int nofd_paused;             /* out of descriptors, or at the floor */
    int fd_limit;                /* RLIMIT_NOFILE when the worker began */
    int fd_floor_at;             /* a connection past this descriptor is
                                    in the floor kept free (conn.c) */
    int probe_fd;                /* a listener's, dup'ed to find the lowest
                                    free descriptor */
    struct event *accept_resume_ev;
    struct event *conn_settle_ev; /* priority 0: before any connection's I/O */
    http_conn *conn_new;         /* accepted, not yet settled */
    http_conn **conns;           /* by socket fd, conns_size slots */
    int conns_size;
    int conn_cap;
    atomic_int nconns;
    objlog_logger_limit log_accept, log_timeout, log_cut, log_framing, log_floor;
} http_worker;

typedef struct server_conf {
    int threads;                 /* workers; 0: 4 */
    int max_connections;         /* over all workers */
    int request_timeout_ms;      /* first byte of a request to its dispatch */
    int idle_timeout_ms;         /* a connection with no request in progress */
    int max_timeout_ms;          /* the largest timeout_ms a request may ask */
    tls_conf *tls;               /* TLS of the listeners; NULL none */
    objlog_query *q;             /* handed to every request (http_ctx.q) */
} server_conf;

/* Connection counters, for /metrics. */
typedef struct server_counters {
    atomic_uint_fast64_t conn_pauses[2]; /* listener paused: full, out of fds */
    atomic_uint_fast64_t request_timeouts;
    atomic_uint_fast64_t answers_cut;
    atomic_uint_fast64_t idle_closes;      /* closed by idle_timeout_ms */
    atomic_uint_fast64_t framing_errors;   /* answered 400 by conn.c, closed */
    atomic_uint_fast64_t reserve_refusals; /* past the cap, not a probe: 503 */
} server_counters;

struct server {
    server_conf conf;
    server_counters counters;
    int nworkers;
    http_worker *workers;
    server_hooks hooks[SERVER_MAX_HOOKS];
    int nhooks;
    struct {
        const http_face *face;
        int fd;                  /* until the workers take it */
        int port;                /* bound */
        char host[64];           /* as asked: "0.0.0.0" is every address */
    } listeners[SERVER_MAX_LISTENERS];
    int nlisteners;
};

/* One query parameter, percent-decoded; value may hold NUL bytes. */
typedef struct http_param {
    char *name;
    char *value;
    size_t value_len;
} http_param;

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

/* A bucket's owner and canned ACL as a node that applies it told this
 * one (cluster_ask_owner), for a write produced here. */
typedef struct http_peer_bucket {
    int known;
    char tenant[257];
    char acl[32];
} http_peer_bucket;

struct http_ctx {
    struct evhttp_request *req;
    http_worker *w;
    objlog_query *q;
    const http_face *face;       /* the listener's: how errors are answered */
    char request_id[33];         /* for edge errors and reads */
    http_param *params;
    int nparams;
    http_endpoint endpoint;      /* for metrics; set while routing */
    struct timespec start;       /* CLOCK_MONOTONIC at dispatch */
    const fence_result *fenced;  /* the re-run after a parked fence, else NULL */
    int op;                      /* the API's own: what a write's success answers */
    /* Who asks (authz.c): set by the API that authenticated the request,
     * never from a header a client chose. */
    int authz;                   /* 1: only owners (or admins) pass */
    char tenant[257];            /* the caller's tenant, "" anonymous */
    int admin;                   /* the admin role: every tenant's buckets */
    int node_signed;             /* a peer node signed it (nodeauth.h) */
    int hop;                     /* sent on by a peer node (http_hop) */
    int anonymous;               /* unsigned, owning nothing: only what an ACL
                                    grants everyone (S3) */
    int acl_object;              /* allowed so far by no more than a version's
                                    ACL may grant: the handler checks it (S3) */
    http_peer_bucket peer;       /* the bucket's owner and ACL, from a peer */
    /* What the API still holds for the request, released once as its
     * answer leaves (http_send), before it is written, by its status: a
     * write's bytes kept or dropped by its outcome. NULL: nothing. A copy
     * of the context (the gateway's) carries it to whoever answers. */
    void (*on_answer)(http_ctx *c, int status, void *arg);
    void *on_answer_arg;
};

/* ---- server.c: workers and listeners ---- */
server *server_new(const server_conf *conf, char *errstr, size_t errstr_size);
/* A listener for face on host:port (fd >= 0: that socket, already
 * listening). Its bound port: server_port. Before server_start. 0 or -1. */
int server_listen(server *s, const http_face *face, const char *host, int port, int fd,
                  char *errstr, size_t errstr_size);
int server_port(const server *s, const http_face *face); /* -1 none */
/* Where a peer on the network reaches listener i: http(s)://HOST:PORT,
 * HOST the listener's own address, or self_host (the node's advertised
 * host) when it listens on every address. *face set. 0, or -1 when
 * there is no listener i. */
int server_listener_url(const server *s, int i, const char *self_host, const http_face **face,
                        char *out, size_t n);
/* The slot of these hooks in every worker (server_slot), or -1 when full.
 * Before server_start. */
int server_hooks_add(server *s, const server_hooks *h);
void *server_slot(const http_worker *w, int slot);
int server_start(server *s, char *errstr, size_t errstr_size);
/* No new requests; those in flight answered; the threads joined. */
void server_stop(server *s);
void server_free(server *s);
/* A listening socket (objlog_query_listen); its port into *port. */
int server_listen_socket(const char *host, int port, int *bound_port, char *errstr,
                         size_t errstr_size);
/* An answer whose body streams (a forwarded GET of a large object): the
 * status and the headers set now, then the body in pieces, then its end.
 * A piece whose client went away is dropped (http_reply_gone says so);
 * drained runs once the connection has written every piece given so far
 * (never, when the client went away). The end answers c (exactly once,
 * as http_send does). */
void http_reply_stream_start(http_ctx *c, int status);
void http_reply_stream_piece(http_ctx *c, struct evbuffer *piece,
                             void (*drained)(struct evhttp_connection *, void *), void *arg);
void http_reply_stream_end(http_ctx *c);
/* 1 when c's client closed its connection before the answer was out. */
int http_reply_gone(const http_ctx *c);
/* Bytes of c's answer written to its connection but not yet sent. */
size_t http_reply_unsent(const http_ctx *c);
/* Runs c's route again from the top on its worker with the bucket record
 * a peer gave (authz.c), no fence. */
void http_rerun_peer(const http_ctx *c, const http_peer_bucket *pb);
/* Runs req's route again on its worker, after its fence ended with res
 * (fence.c); same request id, start time and face. */
void http_rerun(http_worker *w, struct evhttp_request *req, const char *request_id,
                const struct timespec *start, const fence_result *res,
                const http_face *face);
/* evhttp's own socket timeout (seconds): it restarts on every byte, so it
 * only ends a peer that stops reading an answer; conn.c keeps the idle
 * and request deadlines, which it must not cut short. */
int http_socket_timeout_s(const server *s);

/* ---- conn.c: connection limits, idle and request deadlines, framing,
 * whole answers ---- */
int conn_worker_init(http_worker *w, char *errstr, size_t errstr_size);
void conn_worker_thread(http_worker *w);   /* first thing on the worker's thread */
void conn_worker_stop(http_worker *w);     /* before the listener goes */
void conn_worker_free(http_worker *w);     /* after evhttp_free */
/* A request reached its handler: its deadline ends, reading stops. 1 when
 * its connection was taken past the cap: only a reserved path may be
 * served there, anything else is answered 503. */
int conn_request_dispatched(http_worker *w, struct evhttp_request *req);
/* Around evhttp_send_reply: begin (NULL for an untracked connection),
 * then sent once evhttp has the answer. */
http_conn *conn_answer_begin(http_worker *w, struct evhttp_request *req);
void conn_answer_sent(http_conn *cn);
/* A request's id (32 hex digits): unique, not secret. */
void http_request_id(http_worker *w, char out[33]);

/* ---- conn.c: streamed request bodies ----
 * On a face that streams, a PUT whose Content-Length is over
 * HTTP_STREAM_MIN is dispatched once its head is read (its Content-Length
 * header as sent); its body is never read whole. The handler takes it
 * (http_stream_start) and gets every byte in order on the worker's
 * thread, then the end; it answers after that. An answer sent before the
 * end drops the rest of the body and closes the connection after it. A
 * dispatched stream's bytes wait (at most 1 MiB; reading stops beyond)
 * until the handler starts it, so a route may park first. The body must
 * keep coming: no byte for the request timeout ends the connection. */
typedef struct http_stream http_stream;
/* Some bytes of the body: 0, or -1 to stop (the end follows with -1). */
typedef int http_stream_data_fn(void *arg, const void *p, size_t n);
/* Once: rc 0 every byte delivered, -1 the body will not come whole (the
 * client went or stalled, or the sink stopped). c is answered after it. */
typedef void http_stream_end_fn(void *arg, int rc);
/* c's body as a stream, or NULL when it was read whole (or the
 * connection is gone: the request then has no body to serve). */
http_stream *http_stream_of(http_ctx *c);
uint64_t http_stream_length(const http_stream *s);
/* Once per stream; a 100 Continue goes out first when the client waits
 * for one. data and end may run before this returns. */
void http_stream_start(http_stream *s, http_stream_data_fn *data, http_stream_end_fn *end,
                       void *arg);

/* ---- reply.c: parameters and answers ---- */
/* Value of query parameter name (NULL if absent); *len gets its length. */
const char *http_param_get(const http_ctx *c, const char *name, size_t *len);
/* Parses an integer parameter in [lo, hi]; absent -> def. 0, or -1 when it
 * is present but not such an integer. */
int http_param_int(const http_ctx *c, const char *name, long long lo,
                   long long hi, long long def, long long *out);
/* Only the parameters of names (NULL-ended), each at most once: 0, or -1
 * after answering 400 InvalidArgument naming the first that is unknown
 * ("this route takes <takes>") or repeated. */
int http_params_only(http_ctx *c, const char *const *names, const char *takes);
/* Query parameter, else header (e.g. consistency / X-Objlog-Consistency). */
const char *http_param_or_header(const http_ctx *c, const char *param,
                                 const char *header);
void http_add_header(http_ctx *c, const char *name, const char *value);
/* Sends body (stolen; NULL = no body) as JSON with status. */
void http_reply_json(http_ctx *c, int status, json_t *body);
/* A peer's answer, relayed (forward.c): its headers are set already; takes
 * body (may be NULL). */
void http_reply_forwarded(http_ctx *c, int status, struct evbuffer *body);
/* An empty body for c's answer that file segments (evbuffer_add_file) may
 * fill: on a plain socket they go out by sendfile(2), never read into
 * memory; under TLS they are mapped and encrypted piece by piece. NULL
 * out of memory. */
struct evbuffer *http_body_buffer(http_ctx *c);
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
/* An error, through the request's face (its API's wire format). */
void http_reply_error(http_ctx *c, int status, const char *code,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same, for an error whose request id is not the context's; takes extra. */
void http_reply_error_rid(http_ctx *c, int status, const char *code,
                          const char *request_id, const char *message,
                          json_t *extra);
/* The JSON error answer ({"error":{code,message,request_id,...}}): the
 * JSON API's face, and any face's fallback. */
void http_reply_error_json(http_ctx *c, int status, const char *code,
                           const char *request_id, const char *message, json_t *extra);
/* {"error":{...}} of code/message into out (conn.c's edge answers). */
int http_edge_body_json(char *out, size_t n, const char *code, const char *message,
                        const char *request_id);
/* A JSON string of n bytes that may hold NUL (keys, prefixes). */
json_t *http_json_bytes(const void *p, size_t n);
void http_format_time(int64_t ms, char *out, size_t out_size);
int http_utf8_valid(const uint8_t *s, size_t n);
/* The query string into c->params (percent-decoded); -1 malformed. */
int http_params_parse(http_ctx *c, const char *query);
void http_params_free(http_ctx *c);
/* S3's bucket naming rules (schemas/bucketname.h): 1 when b[0..n) is a
 * bucket name, else 0 after answering 400 InvalidBucketName naming the
 * rule it breaks. */
int http_bucket_name_ok(http_ctx *c, const char *b, size_t n);
int http_timeout_param(http_ctx *c, int *timeout_ms); /* replies on -1 */
void http_method_not_allowed(http_ctx *c, const char *allow);
/* 1 when a peer node sent this request on (forwarded or gathered): it is
 * answered here, never sent on again. Set by the API that authenticated
 * it (a signature, or the hop header where the API is open). */
int http_hop(const http_ctx *c);
/* Counts and sends an answer a module built itself; the request ends. */
void http_send(http_ctx *c, int status, struct evbuffer *buf);

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

/* ---- tls.c: TLS for objlogd's two listeners and for its requests to peer
 * nodes (objlogd --tls-cert, --tls-key, --tls-ca). OpenSSL through
 * libevent's bufferevent_openssl for the listeners and the evhttp client
 * that forwards requests; libcurl's own TLS (with the same CA file) for
 * the requests made with curl (lag polls, outcomes, checkpoints).
 *
 * Invariant: with a certificate, every connection accepted on either
 * listener is TLS (1.2 or newer), never plain; a request to an https://
 * peer verifies the peer's certificate against --tls-ca (else the
 * system's CAs) and its name or IP address against the URL's host. ---- */
struct bufferevent;

/* cert and key (PEM; both or neither) make the listeners serve TLS; ca
 * (PEM, may be NULL) is what peers' certificates are checked against. NULL
 * with errstr naming the file and OpenSSL's reason. */
tls_conf *tls_conf_new(const char *cert, const char *key, const char *ca, char *errstr,
                       size_t errstr_size);
void tls_conf_free(tls_conf *t);
/* 1 when the listeners serve TLS. */
int tls_serves(const tls_conf *t);
/* A bufferevent for one accepted connection (evhttp sets its socket);
 * NULL out of memory. */
struct bufferevent *tls_server_bev(tls_conf *t, struct event_base *base);
/* A bufferevent that connects to host over TLS, checking its certificate
 * (evhttp_connection_base_bufferevent_new sets its socket); NULL error. */
struct bufferevent *tls_client_bev(tls_conf *t, struct event_base *base, const char *host);
/* The CA file for curl's CURLOPT_CAINFO, NULL: the system's. */
const char *tls_ca_file(const tls_conf *t);


#endif
