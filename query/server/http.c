/* http.c: the HTTP server of objlogd (docs/ARCHITECTURE.md, "HTTP routes
 * as built"): worker threads, sockets, routing, edge validation and the
 * reply helpers every handler uses.
 *
 * Each of the N workers has its own event_base and evhttp and accepts on its
 * own duplicate of one listening socket (never SO_REUSEPORT, which would let
 * another process share the port), so no lock is shared on the request
 * path. A request is
 * answered on the worker thread that accepted it; the gateway hands its
 * replies back through an event (see gateway.c). Shutdown closes the
 * listeners first, then waits for the in-flight count to reach zero. */
#define _GNU_SOURCE
#include "internal.h"

#include "bucketname.h"
#include "kafkaconf.h"
#include "tls.h"
#include "keycodec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

/* ---------------------------------------------------------------- helpers */

/* How often the end offsets are fetched for /readyz and lag (watermark.c). */
#define HTTP_WM_REFRESH_MS 1000

static const char *const http_endpoint_names[HTTP_EP_COUNT] = {
    "other", "get_object", "head_object", "list_objects", "list_versions",
    "put_object", "delete_object", "writes", "outcomes", "lag", "metrics",
    "healthz", "readyz", "bucket", "uploads", "parts", "stats", "usage",
    "checkpoint", "indexes"};

const char *http_endpoint_name(http_endpoint ep) {
    return ep >= 0 && ep < HTTP_EP_COUNT ? http_endpoint_names[ep] : "other";
}

/* From 0.5 ms (an eventual GET) to 10 s (past the longest fence wait a
 * default request can take). */
const double http_hist_bounds[HTTP_HIST_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,  0.5,    1,     2.5,  5,     10};

static const char *const http_method_names[HTTP_M_COUNT] = {"GET", "HEAD", "PUT",
                                                             "POST", "DELETE", "other"};

const char *http_method_name(http_method m) {
    return m >= 0 && m < HTTP_M_COUNT ? http_method_names[m] : "other";
}

static http_method http_method_of(enum evhttp_cmd_type cmd) {
    switch (cmd) {
    case EVHTTP_REQ_GET: return HTTP_M_GET;
    case EVHTTP_REQ_HEAD: return HTTP_M_HEAD;
    case EVHTTP_REQ_PUT: return HTTP_M_PUT;
    case EVHTTP_REQ_POST: return HTTP_M_POST;
    case EVHTTP_REQ_DELETE: return HTTP_M_DELETE;
    default: return HTTP_M_OTHER;
    }
}

const int http_code_values[HTTP_CODE_SLOTS - 1] = {200, 204, 206, 304, 400, 403, 404, 405,
                                                   409, 411, 412, 413, 416, 500, 501, 503,
                                                   507};

static int http_code_slot(int status) {
    for (int i = 0; i < HTTP_CODE_SLOTS - 1; i++)
        if (http_code_values[i] == status)
            return i;
    return HTTP_CODE_SLOTS - 1;
}

/* Request ids name answers in logs and errors (writes carry the
 * producer's own ids): unique, not secret. A getrandom(2) and 16
 * snprintf calls per request cost 11,000 instructions of a GET's 139,000;
 * splitmix64 over a per-worker random seed gives 128 bits in ~100. */
static uint64_t http_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void http_request_id(http_worker *w, char out[33]) {
    static const char hex[] = "0123456789abcdef";
    uint64_t v[2] = {http_splitmix64(&w->rid_state), http_splitmix64(&w->rid_state)};
    for (int i = 0; i < 32; i++)
        out[i] = hex[(v[i / 16] >> (60 - 4 * (i % 16))) & 15];
    out[32] = '\0';
}

int http_utf8_valid(const uint8_t *s, size_t n) {
    return keycodec_utf8_valid_len(s, n) == n;
}

json_t *http_json_bytes(const void *p, size_t n) {
    json_t *j = json_stringn((const char *)p, n);
    /* Keys are UTF-8-checked at the edge; a key written by another frontend
     * that skipped the check is still shown rather than dropped. */
    return j ? j : json_stringn_nocheck((const char *)p, n);
}

void http_format_time(int64_t ms, char *out, size_t out_size) {
    objlog_logger_format_time(ms, out, out_size);
}

/* ------------------------------------------------------------ parameters */

void http_params_free(http_ctx *c) {
    for (int i = 0; i < c->nparams; i++) {
        free(c->params[i].name);
        free(c->params[i].value);
    }
    free(c->params);
    c->params = NULL;
    c->nparams = 0;
}

/* Our own split of the query string: evhttp_parse_query_str would cut
 * values at an encoded NUL, and prefixes may hold one. '+' means space, as
 * in HTML forms. */
int http_params_parse(http_ctx *c, const char *query) {
    if (!query || !*query)
        return 0;
    char *copy = strdup(query);
    if (!copy)
        return -1;
    char *save = NULL;
    for (char *item = strtok_r(copy, "&", &save); item;
         item = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(item, '=');
        if (eq)
            *eq = '\0';
        http_param *np = realloc(c->params, sizeof(*np) * (size_t)(c->nparams + 1));
        if (!np) {
            free(copy);
            return -1;
        }
        c->params = np;
        http_param *p = &c->params[c->nparams];
        p->name = evhttp_uridecode(item, 1, NULL);
        p->value = evhttp_uridecode(eq ? eq + 1 : "", 1, &p->value_len);
        if (!p->name || !p->value) {
            free(p->name);
            free(p->value);
            free(copy);
            return -1;
        }
        c->nparams++;
    }
    free(copy);
    return 0;
}

const char *http_param_get(const http_ctx *c, const char *name, size_t *len) {
    for (int i = 0; i < c->nparams; i++) {
        if (strcmp(c->params[i].name, name) == 0) {
            if (len)
                *len = c->params[i].value_len;
            return c->params[i].value;
        }
    }
    if (len)
        *len = 0;
    return NULL;
}

int http_param_int(const http_ctx *c, const char *name, long long lo,
                   long long hi, long long def, long long *out) {
    size_t n;
    const char *v = http_param_get(c, name, &n);
    if (!v) {
        *out = def;
        return 0;
    }
    if (n == 0 || n > 18 || strlen(v) != n)
        return -1;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')))
        return -1;
    *out = x;
    return 0;
}

const char *http_param_or_header(const http_ctx *c, const char *param,
                                 const char *header) {
    const char *v = http_param_get(c, param, NULL);
    if (v)
        return v;
    return evhttp_find_header(evhttp_request_get_input_headers(c->req), header);
}

int http_timeout_param(http_ctx *c, int *timeout_ms) {
    long long t;
    int max = c->q->max_timeout_ms;
    if (http_param_int(c, "timeout_ms", 0, max,
                       HTTP_DEFAULT_TIMEOUT_MS < max ? HTTP_DEFAULT_TIMEOUT_MS : max,
                       &t) < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "timeout_ms must be an integer in 0..%d", max);
        return -1;
    }
    *timeout_ms = (int)t;
    return 0;
}

/* --------------------------------------------------------------- replies */

void http_add_header(http_ctx *c, const char *name, const char *value) {
    evhttp_add_header(evhttp_request_get_output_headers(c->req), name, value);
}

/* Counts the reply of c on its worker's own counters (its thread only). */
static void http_note(http_ctx *c, int status) {
    http_stats *st = c->w->stats;
    if (!st)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ns = (int64_t)(now.tv_sec - c->start.tv_sec) * 1000000000LL +
                 (now.tv_nsec - c->start.tv_nsec);
    if (ns < 0)
        ns = 0;
    http_endpoint ep = c->endpoint >= 0 && c->endpoint < HTTP_EP_COUNT
                           ? c->endpoint : HTTP_EP_OTHER;
    http_method m = http_method_of(evhttp_request_get_command(c->req));
    int slot = http_code_slot(status);
    int b = 0;
    while (b < HTTP_HIST_BUCKETS && (double)ns / 1e9 > http_hist_bounds[b])
        b++;
    atomic_fetch_add_explicit(&st->status[ep][m][slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->hist[ep][m][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->sum_ns[ep][m], (uint64_t)ns, memory_order_relaxed);
}

/* The one place a request ends: the worker may be draining for shutdown. */
static void http_request_done(http_worker *w) {
    w->inflight--;
    /* Not loopbreak: the reply just queued must still reach its socket. */
    if (w->stopping && w->inflight == 0) {
        struct timeval flush = {0, 200 * 1000};
        event_base_loopexit(w->base, &flush);
    }
}

static void http_access_log(http_ctx *c, int status, size_t bytes) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    char *addr = NULL;
    ev_uint16_t port = 0;
    char peer[96] = "-";
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    if (evcon) {
        evhttp_connection_get_peer(evcon, &addr, &port);
        snprintf(peer, sizeof(peer), "%s:%u", addr ? addr : "?", port);
    }
    const char *uri = evhttp_request_get_uri(c->req);
    objlog_access_entry a = {
        .method = http_method_name(http_method_of(evhttp_request_get_command(c->req))),
        .path = uri ? uri : "-",
        .status = status,
        .bytes = bytes,
        .seconds = (double)(now.tv_sec - c->start.tv_sec) +
                   (double)(now.tv_nsec - c->start.tv_nsec) / 1e9,
        .request_id = c->request_id,
        .peer = peer};
    objlog_logger_access(&a);
}

/* The one place an answer leaves (conn.c: written whole or counted as cut). */
static void http_send(http_ctx *c, int status, struct evbuffer *buf) {
    http_note(c, status);
    if (objlog_logger_access_enabled())
        http_access_log(c, status, buf ? evbuffer_get_length(buf) : 0);
    http_conn *cn = conn_answer_begin(c->w, c->req);
    evhttp_send_reply(c->req, status, NULL, buf);
    conn_answer_sent(cn);
    if (buf)
        evbuffer_free(buf);
    http_request_done(c->w);
}

int http_hop(http_ctx *c) {
    /* believed from a signature when the nodes share a secret */
    if (c->node_signed)
        return 1;
    return api_open(c->q) &&
           evhttp_find_header(evhttp_request_get_input_headers(c->req), "X-Objlog-Hop") != NULL;
}

void http_reply_forwarded(http_ctx *c, int status, struct evbuffer *body) {
    if (body && evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD)
        evbuffer_drain(body, evbuffer_get_length(body));
    http_send(c, status, body);
}

void http_reply_buffer(http_ctx *c, int status, const char *content_type,
                       struct evbuffer *body) {
    http_add_header(c, "Content-Type", content_type);
    if (!evhttp_find_header(evhttp_request_get_output_headers(c->req),
                            "X-Objlog-Request-Id"))
        http_add_header(c, "X-Objlog-Request-Id", c->request_id);
    http_send(c, status, body);
}

void http_reply_bytes(http_ctx *c, int status, const char *content_type,
                      const void *data, size_t n) {
    struct evbuffer *buf = evbuffer_new();
    http_add_header(c, "Content-Type", content_type);
    if (!evhttp_find_header(evhttp_request_get_output_headers(c->req),
                            "X-Objlog-Request-Id"))
        http_add_header(c, "X-Objlog-Request-Id", c->request_id);
    if (buf && n)
        evbuffer_add(buf, data, n);
    http_send(c, status, buf);
}

/* text (len bytes, then newline when asked) as the JSON body of c's answer. */
static void http_reply_json_body(http_ctx *c, int status, const char *text, size_t len,
                                 int newline) {
    struct evbuffer *buf = evbuffer_new();
    http_add_header(c, "Content-Type", "application/json");
    if (!evhttp_find_header(evhttp_request_get_output_headers(c->req),
                            "X-Objlog-Request-Id"))
        http_add_header(c, "X-Objlog-Request-Id", c->request_id);
    if (buf && text && evhttp_request_get_command(c->req) != EVHTTP_REQ_HEAD) {
        evbuffer_add(buf, text, len);
        if (newline)
            evbuffer_add(buf, "\n", 1);
    }
    http_send(c, status, buf);
}

void http_reply_json_text(http_ctx *c, int status, const char *text, size_t len) {
    http_reply_json_body(c, status, text, len, 0);
}

void http_reply_json(http_ctx *c, int status, json_t *body) {
    char *s = body && evhttp_request_get_command(c->req) != EVHTTP_REQ_HEAD
                  ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    http_reply_json_body(c, status, s, s ? strlen(s) : 0, 1);
    free(s);
}

void http_reply_text(http_ctx *c, int status, const char *content_type,
                     const char *text, size_t len) {
    struct evbuffer *buf = evbuffer_new();
    http_add_header(c, "Content-Type", content_type);
    if (buf && text && evhttp_request_get_command(c->req) != EVHTTP_REQ_HEAD)
        evbuffer_add(buf, text, len);
    http_send(c, status, buf);
}

void http_reply_error_rid(http_ctx *c, int status, const char *code,
                          const char *request_id, const char *message,
                          json_t *extra) {
    if (c->s3) { /* one error path, two wire formats */
        json_decref(extra);
        s3_reply_error(c, status, code, request_id, message);
        return;
    }
    json_t *err = json_pack("{s:s, s:s, s:s}", "code", code, "message",
                            message, "request_id", request_id);
    if (err && extra)
        json_object_update(err, extra);
    json_decref(extra);
    if (!evhttp_find_header(evhttp_request_get_output_headers(c->req),
                            "X-Objlog-Request-Id"))
        http_add_header(c, "X-Objlog-Request-Id", request_id);
    if (status == 503 && !evhttp_find_header(evhttp_request_get_output_headers(c->req),
                                             "Retry-After"))
        http_add_header(c, "Retry-After", "1");
    http_reply_json(c, status, err ? json_pack("{s:o}", "error", err) : NULL);
}

void http_reply_error(http_ctx *c, int status, const char *code,
                      const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    http_reply_error_rid(c, status, code, c->request_id, msg, NULL);
}

/* --------------------------------------------------------------- routing */

int http_bucket_name_ok(http_ctx *c, const char *b, size_t n) {
    const char *why = bucketname_error(b, n);
    if (!why)
        return 1;
    http_reply_error(c, 400, "InvalidBucketName", "The specified bucket is not valid: it %s",
                     why);
    return 0;
}

void http_method_not_allowed(http_ctx *c, const char *allow) {
    http_add_header(c, "Allow", allow);
    http_reply_error(c, 405, "MethodNotAllowed",
                     "method not allowed on this resource (allowed: %s)", allow);
}

static void http_route_object(http_ctx *c, enum evhttp_cmd_type cmd,
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
static void http_route_upload(http_ctx *c, enum evhttp_cmd_type cmd,
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
static int http_admit(http_ctx *c, const char *bucket, const char *sub) {
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
static int http_authorize_bucket(http_ctx *c, enum evhttp_cmd_type cmd, const char *bucket,
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

/* rest = what follows "/v1/buckets/". */
static void http_route_bucket(http_ctx *c, enum evhttp_cmd_type cmd,
                              const char *rest) {
    const char *slash = strchr(rest, '/');
    size_t seg = slash ? (size_t)(slash - rest) : strlen(rest);
    char raw[256];
    c->endpoint = !slash || strcmp(slash, "/versioning") == 0 ? HTTP_EP_BUCKET
                  : strcmp(slash, "/objects") == 0            ? HTTP_EP_LIST_OBJECTS
                  : strcmp(slash, "/versions") == 0           ? HTTP_EP_LIST_VERSIONS
                  : strncmp(slash, "/uploads", 8) == 0        ? HTTP_EP_UPLOADS
                  : strcmp(slash, "/stats") == 0              ? HTTP_EP_STATS
                  : strcmp(slash, "/usage") == 0              ? HTTP_EP_USAGE
                                                              : HTTP_EP_OTHER;
    if (seg >= sizeof(raw)) {
        http_bucket_name_ok(c, rest, seg);
        return;
    }
    memcpy(raw, rest, seg);
    raw[seg] = '\0';
    size_t bn = 0;
    char *bucket = evhttp_uridecode(raw, 0, &bn);
    if (!bucket) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    if (!http_bucket_name_ok(c, bucket, bn)) {
        free(bucket);
        return;
    }
    if (http_authorize_bucket(c, cmd, bucket, slash) < 0) {
        free(bucket);
        return;
    }
    if (slash && strcmp(slash, "/ratelimit") == 0) {
        /* never refused by admission: an operator can always lift a limit */
        if (cmd == EVHTTP_REQ_PUT)
            gateway_put_rate_limit(c, bucket);
        else if (cmd == EVHTTP_REQ_GET)
            admit_get_rate_limit(c, bucket);
        else if (cmd == EVHTTP_REQ_DELETE)
            gateway_delete_rate_limit(c, bucket);
        else
            http_method_not_allowed(c, "GET, PUT, DELETE");
        free(bucket);
        return;
    }
    if (http_admit(c, bucket, slash) < 0) {
        free(bucket);
        return;
    }
    if (!slash) {
        if (cmd == EVHTTP_REQ_PUT)
            gateway_put_bucket(c, bucket);
        else if (cmd == EVHTTP_REQ_GET)
            read_bucket(c, bucket);
        else if (cmd == EVHTTP_REQ_DELETE)
            gateway_delete_bucket(c, bucket);
        else
            http_method_not_allowed(c, "GET, PUT, DELETE");
    } else if (strcmp(slash, "/objects") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_list(c, bucket);
        else
            http_method_not_allowed(c, "GET");
    } else if (strncmp(slash, "/objects/", 9) == 0) {
        http_route_object(c, cmd, bucket, slash + 9);
    } else if (strcmp(slash, "/versions") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_versions(c, bucket);
        else
            http_method_not_allowed(c, "GET");
    } else if (strcmp(slash, "/versioning") == 0) {
        if (cmd == EVHTTP_REQ_PUT)
            gateway_put_versioning(c, bucket);
        else
            http_method_not_allowed(c, "PUT");
    } else if (strcmp(slash, "/uploads") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_uploads(c, bucket);
        else if (cmd == EVHTTP_REQ_POST)
            gateway_create_upload(c, bucket);
        else
            http_method_not_allowed(c, "GET, POST");
    } else if (strncmp(slash, "/uploads/", 9) == 0) {
        http_route_upload(c, cmd, bucket, slash + 9);
    } else if (strcmp(slash, "/stats") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_bucket_stats(c, bucket);
        else
            http_method_not_allowed(c, "GET");
    } else if (strcmp(slash, "/usage") == 0) {
        if (cmd == EVHTTP_REQ_GET)
            read_usage(c, bucket);
        else
            http_method_not_allowed(c, "GET");
    } else if (strcmp(slash, "/lifecycle") == 0 || strcmp(slash, "/lifecycle/status") == 0) {
        lcapi_route(c, cmd, bucket, slash + strlen("/lifecycle"));
    } else if (strcmp(slash, "/indexes") == 0 || strncmp(slash, "/indexes/", 9) == 0) {
        ixread_route(c, cmd, bucket, slash + 8);
    } else if (strcmp(slash, "/quota") == 0) {
        if (cmd == EVHTTP_REQ_PUT)
            gateway_put_quota(c, bucket);
        else
            http_method_not_allowed(c, "PUT");
    } else {
        http_reply_error(c, 404, "NoSuchRoute", "no such route");
    }
    free(bucket);
}

/* /v1/tenants/{t}/stats with t URI-decoded: 1..256 bytes of UTF-8 without
 * NUL (a tenant name is free text set with the bucket). */
static void http_route_tenant_stats(http_ctx *c, const char *rest) {
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

/* Usage routes; 1 if path was one of them (answered). */
static int http_route_stats(http_ctx *c, enum evhttp_cmd_type cmd, const char *path) {
    int tenant = strncmp(path, "/v1/tenants/", 12) == 0;
    if (!tenant && strcmp(path, "/v1/stats") != 0 && strcmp(path, "/v1/stats/top") != 0)
        return 0;
    c->endpoint = HTTP_EP_STATS;
    if (cmd != EVHTTP_REQ_GET)
        http_method_not_allowed(c, "GET");
    else if (!tenant && api_need_admin(c) < 0)
        ; /* every tenant's usage: the operator's */
    else if (tenant)
        http_route_tenant_stats(c, path + 12);
    else if (strcmp(path, "/v1/stats") == 0)
        read_global_stats(c);
    else
        read_top_stats(c);
    return 1;
}

/* GET-only operator routes; 1 if path was one of them (answered). The
 * lag and admission's state are every client's (tools and producers read
 * them); the metrics and the cluster's membership are the operator's. */
static int http_route_ops(http_ctx *c, enum evhttp_cmd_type cmd, const char *path) {
    void (*fn)(http_ctx *) = NULL;
    int admin = 1;
    if (strcmp(path, "/v1/lag") == 0) {
        c->endpoint = HTTP_EP_LAG;
        fn = metrics_lag;
        admin = 0;
    } else if (strcmp(path, "/readyz") == 0) {
        c->endpoint = HTTP_EP_READYZ;
        fn = metrics_readyz;
        admin = 0;
    } else if (strcmp(path, "/metrics") == 0) {
        c->endpoint = HTTP_EP_METRICS;
        fn = metrics_get;
    } else if (strcmp(path, "/v1/cluster") == 0) {
        c->endpoint = HTTP_EP_LAG;
        fn = cluster_get;
    } else if (strcmp(path, "/v1/admission") == 0) {
        c->endpoint = HTTP_EP_LAG;
        fn = admit_get_status;
        admin = 0; /* producers with admission=on poll it */
    } else {
        return 0;
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
        http_method_not_allowed(c, "GET");
    else if (!admin || api_need_admin(c) == 0)
        fn(c);
    return 1;
}

static void http_route(http_ctx *c, const char *path) {
    enum evhttp_cmd_type cmd = evhttp_request_get_command(c->req);
    if (http_route_ops(c, cmd, path))
        return;
    if (strcmp(path, "/healthz") == 0) {
        c->endpoint = HTTP_EP_HEALTHZ;
        if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
            http_method_not_allowed(c, "GET");
        else
            http_reply_json(c, 200, json_pack(
                "{s:s,s:I,s:I}", "status", "ok", "events_applied",
                (json_int_t)objlog_materializer_events_applied(c->q->m),
                "dlq_events", (json_int_t)objlog_materializer_dlq_count(c->q->m)));
    } else if (strncmp(path, "/v1/writes/", 11) == 0 && path[11]) {
        c->endpoint = HTTP_EP_WRITES;
        if (cmd != EVHTTP_REQ_GET)
            http_method_not_allowed(c, "GET");
        else
            read_write_status(c, path + 11);
    } else if (strcmp(path, "/v1/outcomes") == 0) {
        c->endpoint = HTTP_EP_OUTCOMES;
        if (cmd != EVHTTP_REQ_GET)
            http_method_not_allowed(c, "GET");
        else
            outcomes_get(c);
    } else if (strcmp(path, "/v1/buckets") == 0) {
        c->endpoint = HTTP_EP_BUCKET;
        if (cmd != EVHTTP_REQ_GET)
            http_method_not_allowed(c, "GET");
        else
            read_buckets(c);
    } else if (strncmp(path, "/v1/buckets/", 12) == 0 && path[12]) {
        http_route_bucket(c, cmd, path + 12);
    } else if (strncmp(path, "/v1/partitions/", 15) == 0) {
        if (api_need_admin(c) == 0) /* a whole partition, every tenant's */
            ckpt_serve(c, path + 15);
    } else if (http_route_stats(c, cmd, path)) {
        return;
    } else {
        http_reply_error(c, 404, "NoSuchRoute", "no such route: %s", path);
    }
}

static void http_run(http_ctx *c) {
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(c->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || http_params_parse(c, evhttp_uri_get_query(uri)) < 0) {
        http_reply_error(c, 400, "InvalidArgument", "malformed request URI");
    } else if (api_authenticate(c, path) == 0) {
        http_route(c, path);
    }
    http_params_free(c);
}

int http_probe_path(const char *path) {
    return path && (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
                    strcmp(path, "/metrics") == 0);
}

/* A connection conn.c took past the cap serves probes only: clients that
 * fill every slot must not take the probes' too. */
static void http_reserve_refuse(http_ctx *c) {
    atomic_fetch_add(&c->q->reserve_refusals, 1);
    http_reply_error(c, 503, "SlowDown",
                     "objlogd is at its connection limit (--max-connections); a connection "
                     "taken past it may ask only /healthz, /readyz or /metrics");
}

static void http_dispatch(struct evhttp_request *req, void *arg) {
    http_worker *w = arg;
    http_ctx c = {.req = req, .w = w, .q = w->q, .endpoint = HTTP_EP_OTHER};
    clock_gettime(CLOCK_MONOTONIC, &c.start);
    http_request_id(w, c.request_id);
    w->inflight++;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    if (conn_request_dispatched(w, req) && !http_probe_path(uri ? evhttp_uri_get_path(uri) : NULL))
        http_reserve_refuse(&c);
    else
        http_run(&c);
}

/* Parsing again is cheaper than keeping every request's parameters while
 * it is parked, and the route decides the same way the second time. */
void http_rerun(http_worker *w, struct evhttp_request *req, const char *request_id,
                const struct timespec *start, const fence_result *res, int s3) {
    http_ctx c = {.req = req, .w = w, .q = w->q, .endpoint = HTTP_EP_OTHER,
                  .start = *start, .fenced = res, .s3 = s3};
    memcpy(c.request_id, request_id, sizeof(c.request_id));
    if (s3)
        s3_run(&c);
    else
        http_run(&c);
}

/* ---------------------------------------------------------------- server */

static int http_listen_socket(const char *host, int port, char *errstr,
                              size_t errstr_size) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(errstr, errstr_size, "listen address %s is not an IPv4 address", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    /* No SO_REUSEPORT: with it a second objlogd (same user) could bind the
     * same port and the kernel would spread clients over two views. The
     * workers share this one socket instead (http_start_workers). */
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        /* Replies are written in pieces (headers, then body); without
         * TCP_NODELAY a keep-alive connection waits ~40 ms on Nagle vs
         * the client's delayed ACK. Accepted sockets inherit it (Linux). */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
        snprintf(errstr, errstr_size, "listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int http_socket_port(int fd) {
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    return ntohs(sa.sin_port);
}

int http_socket_timeout_s(const objlog_query *q) {
    int ms = q->idle_timeout_ms > q->request_timeout_ms ? q->idle_timeout_ms
                                                        : q->request_timeout_ms;
    int s = ms / 1000 + 2;
    return s > 60 ? s : 60;
}

/* Runs on the worker thread: no new connections; finish what is in flight. */
static void http_worker_stop_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    http_worker *w = arg;
    w->stopping = 1;
    gateway_expire_worker(w->q->gw, w);
    fence_expire_worker(w);
    forward_expire_worker(w);
    ckpt_expire_worker(w);
    conn_worker_stop(w);
    if (w->bound) {
        evhttp_del_accept_socket(w->http, w->bound);
        w->bound = NULL;
    }
    if (w->s3bound) {
        evhttp_del_accept_socket(w->s3http, w->s3bound);
        w->s3bound = NULL;
    }
    if (w->inflight == 0)
        event_base_loopbreak(w->base);
}

static void *http_worker_main(void *arg) {
    http_worker *w = arg;
    conn_worker_thread(w);
    event_base_dispatch(w->base);
    return NULL;
}

static int http_worker_init(http_worker *w, objlog_query *q, int fd, int s3fd,
                            char *errstr, size_t errstr_size) {
    w->q = q;
    if (getrandom(&w->rid_state, sizeof(w->rid_state), 0) != (ssize_t)sizeof(w->rid_state))
        w->rid_state = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)w << 16);
    w->stats = calloc(1, sizeof(*w->stats));
    if (forward_worker_init(w) < 0) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    w->base = event_base_new();
    /* Two priorities: conn.c settles a new connection before its I/O. */
    if (w->base && event_base_priority_init(w->base, 2) < 0) {
        event_base_free(w->base);
        w->base = NULL;
    }
    w->http = w->base ? evhttp_new(w->base) : NULL;
    w->stop_ev = w->base ? event_new(w->base, -1, 0, http_worker_stop_cb, w) : NULL;
    w->wake_ev = w->base ? event_new(w->base, -1, 0, fence_worker_wake_cb, w) : NULL;
    if (!w->http || !w->stop_ev || !w->wake_ev || !w->stats) {
        snprintf(errstr, errstr_size, "event base: out of memory");
        close(fd);
        return -1;
    }
    evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                                            EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                            EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
                                            EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(w->http, HTTP_MAX_BODY);
    evhttp_set_max_headers_size(w->http, 64 * 1024);
    evhttp_set_timeout(w->http, http_socket_timeout_s(q));
    evhttp_set_gencb(w->http, http_dispatch, w);
    w->bound = evhttp_accept_socket_with_handle(w->http, fd);
    if (!w->bound) {
        snprintf(errstr, errstr_size, "evhttp_accept_socket_with_handle failed");
        close(fd);
        return -1;
    }
    if (s3fd >= 0 && s3_worker_init(w, s3fd, errstr, errstr_size) < 0)
        return -1;
    return conn_worker_init(w, errstr, errstr_size);
}

/* One listening socket; each worker accepts from its own duplicate of it
 * (every worker's loop is woken by a new connection, one accept wins, the
 * others see EAGAIN), so only this process's workers share the port. */
static int http_start_workers(objlog_query *q, int lfd, char *errstr,
                              size_t errstr_size) {
    if (lfd < 0)
        lfd = http_listen_socket(q->host, q->port, errstr, errstr_size);
    if (lfd < 0)
        return -1;
    q->port = http_socket_port(lfd);
    int s3lfd = -1;
    if (q->s3) {
        s3lfd = q->s3_listen_fd >= 0 ? q->s3_listen_fd
                                     : http_listen_socket(q->s3_host, q->s3_port, errstr,
                                                          errstr_size);
        q->s3_listen_fd = -1; /* the workers own it now */
        if (s3lfd < 0) {
            close(lfd);
            return -1;
        }
        q->s3_port = http_socket_port(s3lfd);
    }
    for (int i = 0; i < q->nworkers; i++) {
        int last = i == q->nworkers - 1;
        int fd = last ? lfd : fcntl(lfd, F_DUPFD_CLOEXEC, 0);
        int s3fd = s3lfd < 0 ? -1 : last ? s3lfd : fcntl(s3lfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || (s3lfd >= 0 && s3fd < 0)) {
            snprintf(errstr, errstr_size, "listen socket: dup: %s", strerror(errno));
            close(lfd);
            if (s3lfd >= 0)
                close(s3lfd);
            return -1;
        }
        if (http_worker_init(&q->workers[i], q, fd, s3fd, errstr, errstr_size) < 0) {
            if (fd != lfd)
                close(lfd);
            if (s3lfd >= 0 && s3fd != s3lfd)
                close(s3lfd);
            return -1;
        }
    }
    for (int i = 0; i < q->nworkers; i++) {
        if (pthread_create(&q->workers[i].thread, NULL, http_worker_main,
                           &q->workers[i]) != 0) {
            snprintf(errstr, errstr_size, "pthread_create failed");
            return -1;
        }
        q->workers[i].thread_started = 1;
    }
    return 0;
}

static void http_stop_workers(objlog_query *q) {
    for (int i = 0; i < q->nworkers; i++)
        if (q->workers[i].thread_started)
            event_active(q->workers[i].stop_ev, 0, 0);
    for (int i = 0; i < q->nworkers; i++) {
        http_worker *w = &q->workers[i];
        if (w->thread_started)
            pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
}

static void http_free_workers(objlog_query *q) {
    for (int i = 0; q->workers && i < q->nworkers; i++) {
        http_worker *w = &q->workers[i];
        if (w->http)
            evhttp_free(w->http);
        if (w->s3http)
            evhttp_free(w->s3http);
        conn_worker_free(w);
        forward_worker_free(w);
        if (w->stop_ev)
            event_free(w->stop_ev);
        if (w->wake_ev)
            event_free(w->wake_ev);
        if (w->base)
            event_base_free(w->base);
        free(w->stats);
    }
    free(q->workers);
    q->workers = NULL;
}

static void http_producer_log(void *opaque, int level, const char *facility,
                              const char *message) {
    (void)opaque;
    objlog_logf(level, "kafka", "gateway producer: %s: %s", facility, message);
}

/* --kafka-config's properties, handed to the gateway's producer as its
 * kafka.* settings (the library takes no process configuration). */
typedef struct http_kafka_props {
    objlog_producer_conf *pc;
    int failed;
    char err[300];
} http_kafka_props;

static void http_kafka_prop(const char *key, const char *value, void *arg) {
    http_kafka_props *hp = arg;
    char name[300];
    snprintf(name, sizeof(name), "kafka.%s", key);
    if (!hp->failed &&
        objlog_producer_conf_set(hp->pc, name, value, hp->err, sizeof(hp->err)) != OBJLOG_CONF_OK)
        hp->failed = 1;
}

static objlog_producer *http_gateway_producer(objlog_query *q, char *errstr,
                                              size_t errstr_size) {
    objlog_producer_conf *pc = objlog_producer_conf_new();
    if (!pc) {
        snprintf(errstr, errstr_size, "producer conf: out of memory");
        return NULL;
    }
    /* ack=logged: the gateway waits for the outcome on the materializer in
     * this process rather than asking itself over HTTP (docs/ARCHITECTURE.md,
     * "How a write flows"). */
    if (objlog_producer_conf_set(pc, "bootstrap.servers", q->brokers, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "topic", q->topic, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "control.topic", q->control_topic, errstr, errstr_size) ||
        objlog_producer_conf_set(pc, "ack", "logged", errstr, errstr_size) ||
        /* No outcome waits here (ack=logged): this bounds only how long a
         * shutdown waits for writes the log has not taken (destroy). */
        objlog_producer_conf_set(pc, "outcome.timeout.ms", "1000", errstr, errstr_size) ||
        /* After an outage librdkafka's reconnect backoff grows to 10 s:
         * writes would keep timing out for seconds after the brokers are
         * back and /readyz says ready. Retry a lost broker every second. */
        objlog_producer_conf_set(pc, "kafka.reconnect.backoff.max.ms", "1000", errstr,
                                 errstr_size) ||
        /* The library's 5 ms linger made every gateway write wait for it:
         * 32 writers already fill batches. wrk -c32, ack=logged: 4.8k/s
         * p50 6.5 ms at 5 ms, 9.5k/s p50 3.0 ms at 1 ms; 0 ms sends a
         * request per write and falls to 1.5k/s. */
        objlog_producer_conf_set(pc, "kafka.linger.ms", "1", errstr, errstr_size)) {
        objlog_producer_conf_destroy(pc);
        return NULL;
    }
    http_kafka_props hp = {.pc = pc};
    objlog_kafka_config_each(http_kafka_prop, &hp);
    if (hp.failed) {
        snprintf(errstr, errstr_size, "%s", hp.err);
        objlog_producer_conf_destroy(pc);
        return NULL;
    }
    objlog_producer_conf_set_log_cb(pc, http_producer_log, NULL);
    return objlog_producer_new(pc, errstr, errstr_size);
}

static char *http_strdup_or(const char *s, const char *def) {
    return strdup(s && *s ? s : def);
}

objlog_query *objlog_query_new(const objlog_query_conf *conf, char *errstr,
                               size_t errstr_size) {
    if (!conf->brokers || !conf->store || !conf->materializer) {
        snprintf(errstr, errstr_size, "query: brokers, store and materializer are required");
        return NULL;
    }
    evthread_use_pthreads();
    objlog_query *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(errstr, errstr_size, "query: out of memory");
        return NULL;
    }
    q->s3_listen_fd = -1;
    q->host = http_strdup_or(conf->host, "127.0.0.1");
    q->brokers = strdup(conf->brokers);
    q->topic = http_strdup_or(conf->topic, "objlog.events");
    q->control_topic = http_strdup_or(conf->control_topic, "objlog.control");
    q->port = conf->port;
    q->store = conf->store;
    q->m = conf->materializer;
    q->max_timeout_ms = conf->max_timeout_ms > 0 ? conf->max_timeout_ms
                                                 : HTTP_MAX_TIMEOUT_MS;
    q->ready_max_lag = conf->ready_max_lag > 0 ? conf->ready_max_lag
                                               : QUERY_READY_MAX_LAG_DEFAULT;
    q->nworkers = conf->threads > 0 ? conf->threads : 4;
    q->max_connections = conf->max_connections > 0 ? conf->max_connections
                                                    : QUERY_MAX_CONNECTIONS_DEFAULT;
    q->request_timeout_ms = conf->request_timeout_ms > 0
                                ? conf->request_timeout_ms
                                : QUERY_REQUEST_TIMEOUT_MS_DEFAULT;
    q->idle_timeout_ms = conf->idle_timeout_ms > 0 ? conf->idle_timeout_ms
                                                   : QUERY_IDLE_TIMEOUT_MS_DEFAULT;
    q->workers = calloc((size_t)q->nworkers, sizeof(*q->workers));
    if (!q->host || !q->brokers || !q->topic || !q->control_topic || !q->workers) {
        snprintf(errstr, errstr_size, "query: out of memory");
        objlog_query_destroy(q);
        return NULL;
    }
    if (conf->token_key)
        memcpy(q->token_key, conf->token_key, OBJLOG_TOKEN_SECRET_LEN);
    q->eventual_max_lag = conf->eventual_max_lag > 0 ? conf->eventual_max_lag : 0;
    /* Always on: a bucket's own limit (a log event) needs no flag. */
    admit_conf ac = {.bucket_rps = conf->rate_limit_bucket_rps,
                     .bucket_burst = conf->rate_limit_bucket_burst,
                     .tenant_rps = conf->rate_limit_tenant_rps,
                     .tenant_burst = conf->rate_limit_tenant_burst,
                     .slowdown_lag = conf->slowdown_lag > 0 ? conf->slowdown_lag : 0};
    if (!(q->admit = admit_new(&ac))) {
        snprintf(errstr, errstr_size, "query: out of memory");
        objlog_query_destroy(q);
        return NULL;
    }
    q->standbys = conf->standbys > 0 ? conf->standbys : 0;
    if ((!conf->token_key &&
         objlog_store_token_secret(q->store, q->token_key, errstr, errstr_size) < 0) ||
        !(q->wm = wm_new(q->brokers, q->topic, objlog_materializer_partitions(q->m),
                         errstr, errstr_size)) ||
        wm_start_refresh(q->wm, HTTP_WM_REFRESH_MS, errstr, errstr_size) < 0 ||
        !(q->producer = http_gateway_producer(q, errstr, errstr_size)) ||
        !(q->gw = gateway_new(q, q->nworkers, errstr, errstr_size)) ||
        (!conf->no_index_driver && !(q->ixd = ixdriver_new(q, errstr, errstr_size)))) {
        objlog_query_destroy(q);
        return NULL;
    }
    /* Parked reads wake on either: an end offset fetched, a batch applied
     * (fence.c). Before the first request: fence_notify only touches
     * workers with parked reads. */
    wm_set_notify(q->wm, fence_notify_end, q);
    objlog_materializer_set_progress_cb(q->m, fence_notify, q);
    if (conf->cluster &&
        !(q->cluster = cluster_new(q, conf->cluster,
                                   conf->advertise_url ? conf->advertise_url : "",
                                   errstr, errstr_size))) {
        objlog_query_destroy(q);
        return NULL;
    }
    q->s3_listen_fd = conf->s3_listen_fd_set ? conf->s3_listen_fd : -1;
    if ((conf->tls_cert || conf->tls_ca) &&
        !(q->tls = tls_conf_new(conf->tls_cert, conf->tls_key, conf->tls_ca, errstr,
                                errstr_size))) {
        objlog_query_destroy(q);
        return NULL;
    }
    if (api_conf_new(q, conf, errstr, errstr_size) < 0 ||
        (conf->s3_host && s3_conf_new(q, conf, errstr, errstr_size) < 0)) {
        objlog_query_destroy(q);
        return NULL;
    }
    if (!(q->lc = lc_worker_new(q, conf->lifecycle_interval_ms,
                                conf->lifecycle_clock_offset_ms, conf->lifecycle_max_rate,
                                errstr, errstr_size)) ||
        http_start_workers(q, conf->listen_fd_set ? conf->listen_fd : -1, errstr,
                           errstr_size) < 0) {
        objlog_query_destroy(q);
        return NULL;
    }
    return q;
}

int objlog_query_listen(const char *host, int port, int *bound_port, char *errstr,
                        size_t errstr_size) {
    int fd = http_listen_socket(host ? host : "127.0.0.1", port, errstr, errstr_size);
    if (fd >= 0 && bound_port)
        *bound_port = http_socket_port(fd);
    return fd;
}

int objlog_query_port(const objlog_query *q) { return q->port; }

int objlog_query_s3_port(const objlog_query *q) { return q->s3 ? q->s3_port : -1; }

int objlog_query_reload(objlog_query *q, char *errstr, size_t errstr_size) {
    char s3[256] = "", api[256] = "";
    if (s3_conf_reload(q, s3, sizeof(s3)) < 0) {
        snprintf(errstr, errstr_size, "%s", s3);
        return -1;
    }
    if (api_conf_reload(q, api, sizeof(api)) < 0) {
        snprintf(errstr, errstr_size, "%s", api);
        return -1;
    }
    snprintf(errstr, errstr_size, "%s%s%s", s3, *s3 && *api ? "; " : "",
             *s3 || *api ? api : "no credentials files");
    return 0;
}

void objlog_query_destroy(objlog_query *q) {
    if (!q)
        return;
    /* Order: no new requests; in-flight ones answered (gateway waits are
     * bounded); then nothing can call back into the workers or the gateway
     * and the producer can be flushed and freed. */
    if (q->workers)
        http_stop_workers(q);
    /* Nothing may wake a worker that is about to be freed. */
    if (q->wm)
        wm_set_notify(q->wm, NULL, NULL);
    objlog_materializer_set_progress_cb(q->m, NULL, NULL);
    /* Every request is answered; waiters blocked on the view return now,
     * and the producer's callbacks (which free expired requests) end
     * before the gateway does. */
    lc_worker_destroy(q->lc); /* its waits are short: it sees stopping soon */
    q->lc = NULL;
    objlog_materializer_cancel_waits(q->m);
    cluster_destroy(q->cluster);
    q->cluster = NULL;
    ixdriver_stop(q->ixd);
    if (q->producer)
        objlog_producer_destroy(q->producer);
    q->producer = NULL;
    ixdriver_destroy(q->ixd);
    q->ixd = NULL;
    gateway_destroy(q->gw);
    http_free_workers(q);
    wm_destroy(q->wm);
    s3_conf_free(q);
    api_conf_free(q);
    tls_conf_free(q->tls);
    admit_destroy(q->admit);
    if (q->s3_listen_fd >= 0)
        close(q->s3_listen_fd);
    free(q->host);
    free(q->brokers);
    free(q->topic);
    free(q->control_topic);
    free(q);
}
