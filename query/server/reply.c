/* reply.c: what every handler answers with: query parameters, request
 * ids, the answers themselves and their accounting (per-worker counters,
 * the access log), the request's end.
 *
 * Invariant: http_send is the one place an answer leaves whole, and
 * http_reply_stream_start/end the one where an answer streams; each
 * counts it, logs it, hands it to conn.c and drops the worker's in-flight
 * count (once, at the answer's end), which graceful shutdown waits on. An error goes through the
 * request's face, so each API answers its errors in its own format. */
#include "core.h"
#include "server.h"

#include "bucketname.h"
#include "keycodec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>

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

const int http_code_values[HTTP_CODES] = {200, 204, 206, 304, 307, 400, 401, 403,
                                          404, 405, 408, 409, 410, 411, 412, 413,
                                          416, 500, 501, 502, 503, 507};

static int http_code_slot(int status) {
    for (int i = 0; i < HTTP_CODES; i++)
        if (http_code_values[i] == status)
            return i;
    int cls = status / 100; /* 1..5; a status out of HTTP's range is a 5xx */
    return HTTP_CODES + (cls >= 1 && cls <= HTTP_CODE_CLASSES ? cls : HTTP_CODE_CLASSES) - 1;
}

const char *http_code_label(int slot, char *buf, size_t n) {
    if (slot >= 0 && slot < HTTP_CODES)
        snprintf(buf, n, "%d", http_code_values[slot]);
    else
        snprintf(buf, n, "%dxx", slot - HTTP_CODES + 1);
    return buf;
}

/* The listener c came through (its face's): the api label's slot. */
static int http_listener_slot(const http_ctx *c) {
    for (int i = 0; i < c->w->nls; i++)
        if (c->w->ls[i].face == c->face)
            return i;
    return 0;
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

int http_params_only(http_ctx *c, const char *const *names, const char *takes) {
    for (int i = 0; i < c->nparams; i++) {
        const char *name = c->params[i].name;
        int known = 0;
        for (int k = 0; names[k] && !known; k++)
            known = strcmp(name, names[k]) == 0;
        if (!known) {
            http_reply_error(c, 400, "InvalidArgument",
                             "unknown parameter %.64s (this route takes %s)", name, takes);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(c->params[j].name, name) == 0) {
                http_reply_error(c, 400, "InvalidArgument", "parameter %s given twice", name);
                return -1;
            }
    }
    return 0;
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
    int max = c->w->srv->conf.max_timeout_ms;
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
    int li = http_listener_slot(c);
    int b = 0;
    while (b < HTTP_HIST_BUCKETS && (double)ns / 1e9 > http_hist_bounds[b])
        b++;
    atomic_fetch_add_explicit(&st->status[li][ep][m][slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->hist[li][ep][m][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->sum_ns[li][ep][m], (uint64_t)ns, memory_order_relaxed);
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
/* What every answer does first: settle what the API holds, count, log. */
static void http_answer_begin(http_ctx *c, int status, size_t bytes) {
    if (c->on_answer) {
        void (*fn)(http_ctx *, int, void *) = c->on_answer;
        c->on_answer = NULL;
        fn(c, status, c->on_answer_arg);
    }
    http_note(c, status);
    if (objlog_logger_access_enabled())
        http_access_log(c, status, bytes);
}

void http_send(http_ctx *c, int status, struct evbuffer *buf) {
    http_answer_begin(c, status, buf ? evbuffer_get_length(buf) : 0);
    http_conn *cn = conn_answer_begin(c->w, c->req);
    evhttp_send_reply(c->req, status, NULL, buf);
    conn_answer_sent(cn);
    if (buf)
        evbuffer_free(buf);
    http_request_done(c->w);
}

int http_hop(const http_ctx *c) { return c->hop; }

/* ---------------------------------------------------- streamed answers */

int http_reply_gone(const http_ctx *c) { return evhttp_request_get_connection(c->req) == NULL; }

size_t http_reply_unsent(const http_ctx *c) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    return evcon ? evbuffer_get_length(bufferevent_get_output(
                       evhttp_connection_get_bufferevent(evcon)))
                 : 0;
}

/* evhttp reads while it writes, to notice a close; see conn_answer_sent. */
static void http_reply_quiet(http_ctx *c) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    if (evcon)
        bufferevent_disable(evhttp_connection_get_bufferevent(evcon), EV_READ);
}

void http_reply_stream_start(http_ctx *c, int status) {
    const char *cl =
        evhttp_find_header(evhttp_request_get_output_headers(c->req), "Content-Length");
    http_answer_begin(c, status, cl ? strtoull(cl, NULL, 10) : 0);
    http_conn *cn = conn_answer_begin(c->w, c->req);
    evhttp_send_reply_start(c->req, status, NULL);
    conn_answer_sent(cn);
}

void http_reply_stream_piece(http_ctx *c, struct evbuffer *piece,
                             void (*drained)(struct evhttp_connection *, void *), void *arg) {
    if (http_reply_gone(c)) {
        evbuffer_drain(piece, evbuffer_get_length(piece));
        return;
    }
    evhttp_send_reply_chunk_with_cb(c->req, piece, drained, arg);
    http_reply_quiet(c);
}

void http_reply_stream_end(http_ctx *c) {
    evhttp_send_reply_end(c->req); /* frees a request whose client is gone */
    http_request_done(c->w);
}

void http_reply_forwarded(http_ctx *c, int status, struct evbuffer *body) {
    if (body && evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD)
        evbuffer_drain(body, evbuffer_get_length(body));
    http_send(c, status, body);
}

struct evbuffer *http_body_buffer(http_ctx *c) {
    struct evbuffer *b = evbuffer_new();
    if (b && !tls_serves(c->w->srv->conf.tls))
        evbuffer_set_flags(b, EVBUFFER_FLAG_DRAINS_TO_FD);
    return b;
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

void http_reply_error_json(http_ctx *c, int status, const char *code,
                           const char *request_id, const char *message, json_t *extra) {
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

int http_edge_body_json(char *out, size_t n, const char *code, const char *message,
                        const char *request_id) {
    return snprintf(out, n, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\","
                            "\"request_id\":\"%s\"}}\n",
                    code, message, request_id);
}

void http_reply_error_rid(http_ctx *c, int status, const char *code,
                          const char *request_id, const char *message,
                          json_t *extra) {
    if (c->face && c->face->reply_error)
        c->face->reply_error(c, status, code, request_id, message, extra);
    else
        http_reply_error_json(c, status, code, request_id, message, extra);
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
