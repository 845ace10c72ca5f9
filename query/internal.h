/* internal.h: what the query service's modules share and nobody else sees.
 * http.c owns the server and the per-request context; read.c, fence.c,
 * gateway.c and listtoken.c serve parts of the API on top of it.
 *
 * Invariant: every accepted request is answered exactly once, on its
 * worker's event_base thread (evhttp is not thread-safe), through
 * http_reply_json / http_reply_error / http_reply_empty; that is also where
 * the worker's in-flight count drops, which graceful shutdown waits on. */
#ifndef OBJLOG_QUERY_INTERNAL_H
#define OBJLOG_QUERY_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "materializer.h"
#include "objlog_producer.h"
#include "query.h"

#define HTTP_DEFAULT_TIMEOUT_MS 2000
#define HTTP_MAX_TIMEOUT_MS 30000
#define HTTP_MAX_KEY_LEN 1024
#define HTTP_MAX_BODY (256 * 1024)

typedef struct gateway gateway;

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
    rd_kafka_t *wm_rk;           /* high-watermark queries for strong reads */
    gateway *gw;
    int nworkers;
    http_worker *workers;
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
} http_ctx;

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
void http_random_hex(char out[33]);
int http_timeout_param(http_ctx *c, int *timeout_ms); /* replies on -1 */

/* ---- fence.c ---- */
/* Makes the read consistent per consistency=/token= for the partitions it
 * will read, then fills applied[i] (next offset applied). 0 ready; -1 when
 * it already replied (400 bad token/consistency, 503 SlowDown). */
int fence_wait(http_ctx *c, const int32_t *parts, int nparts,
               int64_t *applied);
/* "p.next_p.next..." for X-Objlog-Applied. */
void fence_applied_header(http_ctx *c, const int32_t *parts, int nparts,
                          const int64_t *applied);

/* ---- read.c (the HTTP layer over view.h) ---- */
void read_object(http_ctx *c, const char *bucket, const uint8_t *key,
                 size_t key_len, int head);
void read_bucket(http_ctx *c, const char *bucket);
void read_list(http_ctx *c, const char *bucket);
void read_versions(http_ctx *c, const char *bucket);
void read_uploads(http_ctx *c, const char *bucket);
void read_parts(http_ctx *c, const char *bucket, const char *upload_id);
void read_write_status(http_ctx *c, const char *token);
/* The required key= query parameter of the upload routes (checked length);
 * NULL after replying 400. */
const char *read_upload_key(http_ctx *c, size_t *key_len);

/* ---- outcomes.c ---- */
/* GET /v1/outcomes?partition=&from=&max=&timeout_ms=: the outcomes of one
 * partition from an offset on, for producers (one request, many writes). */
void outcomes_get(http_ctx *c);

/* ---- listtoken.c ---- */
#define LISTTOKEN_KEY 0
#define LISTTOKEN_PREFIX 1
/* base64url(version, fnv64(bucket), kind, last, checksum); caller frees. */
char *listtoken_encode(const char *bucket, int kind, const uint8_t *last,
                       size_t last_len);
/* 0 and the decoded position (into *last, caller frees), -1 if forged,
 * corrupt or from another bucket. */
int listtoken_decode(const char *bucket, const char *text, size_t text_len,
                     int *kind, uint8_t **last, size_t *last_len);

/* ---- gateway.c ---- */
gateway *gateway_new(objlog_query *q, int waiters, char *errstr,
                     size_t errstr_size);
/* Joins the waiter threads once they have drained their queue. */
void gateway_destroy(gateway *g);
void gateway_put_bucket(http_ctx *c, const char *bucket);
void gateway_put_object(http_ctx *c, const char *bucket, const uint8_t *key,
                        size_t key_len);
void gateway_delete_object(http_ctx *c, const char *bucket,
                           const uint8_t *key, size_t key_len);
void gateway_delete_bucket(http_ctx *c, const char *bucket);
void gateway_put_versioning(http_ctx *c, const char *bucket);
void gateway_create_upload(http_ctx *c, const char *bucket);
void gateway_upload_part(http_ctx *c, const char *bucket, const char *upload_id,
                         const char *part_number);
void gateway_complete_upload(http_ctx *c, const char *bucket,
                             const char *upload_id);
void gateway_abort_upload(http_ctx *c, const char *bucket, const char *upload_id);

#endif
