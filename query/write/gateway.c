/* gateway.c: the HTTP write gateway (docs/ARCHITECTURE.md, "How a write
 * flows" and "HTTP routes as built"), a thin frontend over
 * libobjlog_producer.
 *
 * It owns what every write has in common, whichever front end parsed it
 * (the JSON routes, api/writes.c; the S3 endpoint): ack=, timeout_ms=, the
 * request id, the preconditions, the refusal while the disk is full, the
 * producer call and the answer. Each write goes out by one path,
 * gw_submit, so no two of them can differ in those.
 *
 * The producer runs with ack=logged: its callback (a library thread) says
 * where the event landed. For ack=logged requests that is the answer. For
 * ack=applied (default) the request goes to a waiter thread, which blocks
 * in objlog_materializer_wait_applied (bounded by timeout_ms) and reads the
 * outcome the state machine stored for that offset: the gateway takes
 * outcomes straight from the materializer in this process. The event loop
 * never blocks on a write.
 *
 * Every request also has a timer of its timeout_ms on its worker: a write
 * the log does not take in time (brokers unreachable: librdkafka would
 * retry for message.timeout.ms, minutes) is answered 503 with its request
 * id when the timer fires, and a stopping worker fires every timer at
 * once. Its outcome stays retrievable: a retry with the same request id
 * is deduplicated by the state machine.
 *
 * Invariant: the reply is always sent from the request's worker thread
 * (evhttp is not thread-safe), exactly once. `state` decides who answers:
 * the timer answers only from PENDING or LOGGED (-> EXPIRED); the library
 * callback and the waiter hand the request to the worker only by moving it
 * to WAITED first. Whoever finds it EXPIRED frees it, answering nothing.
 *
 * A write issued for a batch (gateway_delete_versions: S3 DeleteObjects)
 * has a sink instead of an answer: every place that would answer it calls
 * the sink, on the same worker thread, under the same exactly-once rule;
 * the batch answers the HTTP request once its last write has reported.
 *
 * A write whose outcome is WrongRange (a handoff another node ran moved
 * its range after this node routed it) is sent again by the gateway, same
 * request id and bytes, by the newer map (the producer keeps the bytes of
 * its recent writes for that), up to GW_REROUTES times within the
 * request's timeout: the client never sees a WrongRange for a move.
 *
 * While the store cannot write (a full disk: objlog_materializer_store_
 * stalled), a new write is refused before it reaches the log, 507
 * InsufficientStorage naming the store's error, and a logged write whose
 * outcome did not come in time is answered the same way with its request
 * id: the log is fine, the view's disk is not. */
#include "core.h"
#include "cluster.h"
#include "ranges.h"
#include "server.h"
#include "write.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "keycodec.h"
#include "outcome.h"
#include "producer_event.h"
#include "rangemap.h"

typedef struct gw_req gw_req;

enum gw_state {
    GW_PENDING,                  /* the producer has not called back */
    GW_LOGGED,                   /* logged; a waiter awaits the outcome */
    GW_WAITED,                   /* r->done is (being) activated: it answers */
    GW_EXPIRED                   /* the timer answered; the next holder frees */
};

struct gateway {
    objlog_query *q;
    /* Stage histograms (write.h): written by worker threads, read by
     * /metrics; relaxed atomics, as the server's request counters. */
    atomic_uint_fast64_t stage_hist[GATEWAY_STAGES][HTTP_HIST_BUCKETS + 1];
    atomic_uint_fast64_t stage_ns[GATEWAY_STAGES];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gw_req *head, *tail;         /* waiting for their outcome */
    gw_req *live;                /* every request not yet freed (lprev/lnext) */
    int stopping;
    int nthreads;
    pthread_t *threads;
};

struct gw_req {
    http_ctx c;                  /* params are not kept */
    gateway *g;
    struct event *done;          /* fires gw_done_cb on the worker thread */
    struct event *timer;         /* timeout_ms: gw_timeout_cb on the worker */
    _Atomic int state;           /* enum gw_state */
    http_worker *w;
    gw_req *lprev, *lnext;       /* g->live, under g->mu */
    char rid_hex[2 * OBJLOG_REQUEST_ID_LEN + 1];
    int ack_logged;
    int timeout_ms;
    struct timespec start;
    int64_t logged_ns, applied_ns; /* CLOCK_MONOTONIC: the log's ack, the outcome */
    objlog_write_result res;
    int wait_rc;                 /* 0 applied, 1 timeout, -1 stopped */
    Objlog__Outcome *outcome;    /* when applied and stored */
    int is_create_upload;        /* the reply names the upload and its key */
    char *key;                   /* create upload, S3 complete: the key (owned) */
    size_t key_len;
    char bucket[64];             /* for the S3 answer */
    gateway_sink *sink;          /* a batch's write: outcomes go here, no answer */
    void *sink_arg;
    size_t sink_index;
    char err[256];
    int reroutes;                /* WrongRange resends so far (gw_reroute) */
    gw_req *next;
};

/* ---------------------------------------------------------------- stages */

static int64_t gw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void gw_stage_add(gateway *g, int stage, int64_t ns) {
    if (ns < 0)
        ns = 0;
    int b = 0;
    while (b < HTTP_HIST_BUCKETS && (double)ns / 1e9 > http_hist_bounds[b])
        b++;
    atomic_fetch_add_explicit(&g->stage_hist[stage][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->stage_ns[stage], (uint64_t)ns, memory_order_relaxed);
}

/* An ack=applied write answered from its applied outcome, now. */
static void gw_stages_note(gw_req *r) {
    int64_t start = (int64_t)r->start.tv_sec * 1000000000LL + r->start.tv_nsec;
    if (!r->logged_ns || !r->applied_ns)
        return;
    gw_stage_add(r->g, GATEWAY_STAGE_LOG, r->logged_ns - start);
    gw_stage_add(r->g, GATEWAY_STAGE_APPLY, r->applied_ns - r->logged_ns);
    gw_stage_add(r->g, GATEWAY_STAGE_ANSWER, gw_now_ns() - r->applied_ns);
}

const char *gateway_stage_name(int stage) {
    static const char *const names[GATEWAY_STAGES] = {"log", "apply", "answer"};
    return stage >= 0 && stage < GATEWAY_STAGES ? names[stage] : "?";
}

void gateway_stage_get(gateway *g, int stage, gateway_stage_hist *out) {
    for (int b = 0; b <= HTTP_HIST_BUCKETS; b++)
        out->count[b] = atomic_load_explicit(&g->stage_hist[stage][b], memory_order_relaxed);
    out->sum_ns = atomic_load_explicit(&g->stage_ns[stage], memory_order_relaxed);
}

/* ----------------------------------------------------------------- reply */

static void gw_req_free(gw_req *r) {
    gateway *g = r->g;
    pthread_mutex_lock(&g->mu);
    if (r->lprev)
        r->lprev->lnext = r->lnext;
    else if (g->live == r)
        g->live = r->lnext;
    if (r->lnext)
        r->lnext->lprev = r->lprev;
    pthread_mutex_unlock(&g->mu);
    /* From another thread, event_free waits for a running callback. */
    if (r->timer)
        event_free(r->timer);
    if (r->outcome)
        objlog__outcome__free_unpacked(r->outcome, NULL);
    if (r->done)
        event_free(r->done);
    free(r->key);
    free(r);
}

/* Every failure answer of a request that reached the producer goes here. */
static void gw_reply_error(gw_req *r, int status, const char *code, const char *rid,
                           const char *message, json_t *extra) {
    if (r->sink) {
        json_decref(extra);
        gateway_result res = {.status = status, .code = code, .message = message,
                              .version_id = "", .etag = ""};
        r->sink(r->sink_arg, r->sink_index, &res);
        return;
    }
    http_reply_error_rid(&r->c, status, code, rid, message, extra);
}

static void gw_reply_ok(gw_req *r, const char *version_id, const char *etag,
                        int delete_marker, const char *upload_id, int64_t log_time_ms) {
    if (r->sink) {
        gateway_result res = {.status = 200, .code = "", .message = "",
                              .version_id = version_id, .etag = etag,
                              .delete_marker = delete_marker};
        r->sink(r->sink_arg, r->sink_index, &res);
        return;
    }
    if (r->c.face && r->c.face->written) { /* the API answers in its own shape */
        struct write_answer w = {.bucket = r->bucket, .key = r->key, .key_len = r->key_len,
                                 .version_id = version_id, .etag = etag,
                                 .delete_marker = delete_marker, .upload_id = upload_id,
                                 .log_time_ms = log_time_ms};
        r->c.face->written(&r->c, &w);
        return;
    }
    http_add_header(&r->c, "X-Objlog-Token", r->res.token);
    http_add_header(&r->c, "X-Objlog-Request-Id", r->res.request_id_hex);
    json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:s}", "version_id", version_id,
                          "etag", etag, "token", r->res.token, "delete_marker",
                          delete_marker, "request_id", r->res.request_id_hex);
    if (r->is_create_upload) {
        json_object_set_new(j, "upload_id", json_string(upload_id));
        json_object_set_new(j, "key", http_json_bytes(r->key, r->key_len));
    }
    http_reply_json(&r->c, 200, j);
}

static void gw_reply_logged(gw_req *r) {
    if (r->sink) { /* ack=logged: in the log, its outcome not awaited */
        gw_reply_ok(r, "", "", 0, "", 0);
        return;
    }
    http_add_header(&r->c, "X-Objlog-Token", r->res.token);
    http_add_header(&r->c, "X-Objlog-Request-Id", r->res.request_id_hex);
    http_reply_json(&r->c, 200,
                    json_pack("{s:s, s:s, s:s, s:i, s:I}", "status", "logged",
                              "token", r->res.token, "request_id",
                              r->res.request_id_hex, "partition", (int)r->res.partition,
                              "offset", (json_int_t)r->res.offset));
}

/* The client may retry the same request id: the state machine dedups it. */
static void gw_reply_unknown(gw_req *r, const char *why) {
    json_t *extra = json_pack("{s:s}", "token", r->res.token);
    if (r->res.partition >= 0) {
        int64_t applied = objlog_materializer_applied(r->c.q->m, r->res.partition);
        json_object_set_new(extra, "lag",
                            json_integer(r->res.offset + 1 - applied));
    }
    gw_reply_error(r, 503, "SlowDown", r->res.request_id_hex, why, extra);
}

static void gw_reply_outcome(gw_req *r) {
    const Objlog__Outcome *o = r->outcome;
    if (o->code == OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        gw_reply_ok(r, o->version_id ? o->version_id : "", o->etag ? o->etag : "",
                    o->delete_marker, o->upload_id ? o->upload_id : "", o->log_time_ms);
        return;
    }
    if (!r->sink)
        http_add_header(&r->c, "X-Objlog-Token", r->res.token);
    gw_reply_error(r, outcome_http_status(o->code),
                         outcome_code_name(o->code), r->res.request_id_hex,
                         o->message && *o->message ? o->message
                                                   : outcome_code_name(o->code),
                         json_pack("{s:s}", "token", r->res.token));
}

/* The store cannot write: a logged write awaiting its outcome will be
 * applied once the disk takes writes again, not before; its outcome is
 * unknown meanwhile. 1 after answering, 0 when the store writes. */
static int gw_reply_stalled(gw_req *r) {
    char why[384], msg[768];
    if (!objlog_materializer_store_stalled(r->c.q->m, why, sizeof(why)))
        return 0;
    snprintf(msg, sizeof(msg),
             "the write is in the log, but the disk under %s cannot take the view's "
             "writes (%s): its outcome is unknown until it can; retry with the same "
             "request id", objlog_store_dir(r->c.q->store), why);
    gw_reply_error(r, 507, "InsufficientStorage", r->rid_hex, msg,
                   json_pack("{s:s}", "token", r->res.token));
    return 1;
}

/* HTTP status of an S3 code the producer reported by name. */
static int gw_status_of(const char *code) { return outcome_http_status_of_name(code); }

/* Moves r from `from` to `to`; 0 when another thread moved it first. */
static int gw_move(gw_req *r, int from, int to) {
    return atomic_compare_exchange_strong(&r->state, &from, to);
}

/* Hands r to its worker to answer; frees it when the timer answered. */
static void gw_hand_over(gw_req *r, int from) {
    if (gw_move(r, from, GW_WAITED))
        event_active(r->done, 0, 0); /* r belongs to the worker thread again */
    else
        gw_req_free(r);
}

/* On the worker thread: timeout_ms passed, or the worker stops. */
static void gw_timeout_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    gw_req *r = arg;
    /* r->res is the library's until LOGGED: only then is the token ours. */
    int logged = 0;
    if (!gw_move(r, GW_PENDING, GW_EXPIRED)) {
        if (!gw_move(r, GW_LOGGED, GW_EXPIRED))
            return; /* WAITED: gw_done_cb answers */
        logged = 1;
    }
    if (logged && !r->w->stopping && gw_reply_stalled(r))
        return;
    const char *why = r->w->stopping
        ? "objlogd is shutting down; the write's outcome is unknown: retry with "
          "the same request id"
        : "the write did not complete within timeout_ms (is the log reachable?); "
          "its outcome is unknown: retry with the same request id";
    json_t *extra = logged ? json_pack("{s:s}", "token", r->res.token) : NULL;
    gw_reply_error(r, 503, "SlowDown", r->rid_hex, why, extra);
}

/* On the worker thread, once the write's fate is known. */
static void gw_done_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    gw_req *r = arg;
    if (atomic_load(&r->state) == GW_EXPIRED) {
        gw_req_free(r);
        return;
    }
    switch (r->res.status) {
    case OBJLOG_STATUS_FAILED:
        gw_reply_error(r, 503, "SlowDown", r->res.request_id_hex,
                             r->res.error_message[0] ? r->res.error_message
                                                     : "the write did not reach the log",
                             NULL);
        break;
    case OBJLOG_STATUS_UNKNOWN:
        gw_reply_unknown(r, "no outcome in time; retry with the same request id");
        break;
    case OBJLOG_STATUS_SLOW_DOWN: /* not with this producer (admission off) */
        gw_reply_error(r, 503, "SlowDown", r->res.request_id_hex,
                       r->res.error_message, NULL);
        break;
    case OBJLOG_STATUS_OK:
        gw_reply_ok(r, r->res.version_id, r->res.etag, r->res.delete_marker,
                    r->res.upload_id, 0);
        break;
    case OBJLOG_STATUS_REJECTED:
        gw_reply_error(r, gw_status_of(r->res.error_code), r->res.error_code,
                       r->res.request_id_hex, r->res.error_message, NULL);
        break;
    case OBJLOG_STATUS_LOGGED:
        if (r->ack_logged)
            gw_reply_logged(r);
        else if (r->wait_rc < 0)
            gw_reply_unknown(r, "the partition is stopped");
        else if (r->wait_rc > 0 && !gw_reply_stalled(r))
            gw_reply_unknown(r, "the write is logged but its outcome did not arrive in "
                                "time");
        else if (!r->outcome)
            gw_reply_error(r, 500, "InternalError", r->res.request_id_hex,
                           r->err[0] ? r->err : "no outcome stored", NULL);
        else
            gw_reply_outcome(r);
        if (!r->ack_logged && r->wait_rc == 0 && r->outcome)
            gw_stages_note(r);
        break;
    }
    gw_req_free(r);
}

/* ---------------------------------------------------------------- waiters */

static int gw_remaining_ms(const gw_req *r) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long used = (long long)(now.tv_sec - r->start.tv_sec) * 1000 +
                     (now.tv_nsec - r->start.tv_nsec) / 1000000L;
    return used >= r->timeout_ms ? 0 : (int)(r->timeout_ms - used);
}

/* A handoff moved the write's range after it was routed (the node that
 * ran it holds its own writes; this one learns from the WrongRange): the
 * write goes again, same request id and bytes, by the newer map, and r
 * waits for that one's outcome. 1 when r went (it is the producer's
 * callback's again, or freed), 0 when it is to be answered as it is. */
#define GW_REROUTES 8
static void gw_on_logged(const objlog_write_result *res, void *opaque);

static int gw_reroute(gw_req *r) {
    objlog_query *q = r->c.q;
    if (r->reroutes >= GW_REROUTES || !gw_move(r, GW_LOGGED, GW_PENDING))
        return 0;
    r->reroutes++;
    Objlog__Outcome *wrong = r->outcome;
    r->outcome = NULL; /* the callback may run before the call returns */
    char err[256];
    if (producer_reroute_logged(q->producer, r->res.partition, r->res.offset,
                                r->res.request_id, gw_on_logged, r, err, sizeof(err)) == 0) {
        objlog__outcome__free_unpacked(wrong, NULL);
        rangemap *rm = producer_map_copy(q->producer);
        if (rm && rangemap_epoch(rm) > rangemap_epoch(objlog_materializer_rangemap(q->m)))
            objlog_materializer_set_rangemap(q->m, rm); /* this node's readers too */
        else
            rangemap_destroy(rm);
        return 1;
    }
    r->outcome = wrong;
    if (!gw_move(r, GW_PENDING, GW_LOGGED)) {
        gw_req_free(r); /* the timer answered meanwhile */
        return 1;
    }
    return 0;
}

/* A cluster node that does not apply the write's partition takes its
 * outcome from the node that does. 1 handled, 0 wait here. */
static int gw_await_remote(gw_req *r) {
    objlog_query *q = r->c.q;
    if (!q->cluster || objlog_materializer_applies(q->m, r->res.partition))
        return 0;
    int rc = cluster_remote_outcome(q->cluster, q->m, r->res.partition, r->res.offset,
                                    gw_remaining_ms(r), &r->outcome, r->err,
                                    sizeof(r->err));
    if (rc == CLUSTER_OUTCOME_LOCAL)
        return 0;
    r->wait_rc = rc < 0 ? 0 : rc; /* an error: no outcome, r->err says why */
    if (r->outcome && r->outcome->code == OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE &&
        gw_reroute(r))
        return 1;
    gw_hand_over(r, GW_LOGGED);
    return 1;
}

static void gw_await(gw_req *r) {
    objlog_query *q = r->c.q;
    if (gw_await_remote(r))
        return;
    r->wait_rc = objlog_materializer_wait_applied(q->m, r->res.partition,
                                                  r->res.offset, gw_remaining_ms(r));
    r->applied_ns = gw_now_ns();
    if (r->wait_rc == 0 &&
        objlog_store_get_outcome(q->store, r->res.partition, r->res.offset,
                                 &r->outcome, r->err, sizeof(r->err)) != 1)
        r->outcome = NULL;
    if (r->outcome && r->outcome->code == OBJLOG__OUTCOME_CODE__OUTCOME_WRONG_RANGE &&
        gw_reroute(r))
        return;
    gw_hand_over(r, GW_LOGGED);
}

static void *gw_waiter_main(void *arg) {
    gateway *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->head && !g->stopping)
            pthread_cond_wait(&g->cv, &g->mu);
        if (!g->head)
            break;
        gw_req *r = g->head;
        g->head = r->next;
        if (!g->head)
            g->tail = NULL;
        pthread_mutex_unlock(&g->mu);
        gw_await(r);
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Producer completion: a library thread. */
static void gw_on_logged(const objlog_write_result *res, void *opaque) {
    gw_req *r = opaque;
    gateway *g = r->g;
    if (atomic_load(&r->state) == GW_EXPIRED) {
        gw_req_free(r);
        return;
    }
    r->res = *res;
    r->logged_ns = gw_now_ns();
    if (res->status != OBJLOG_STATUS_LOGGED || r->ack_logged) {
        gw_hand_over(r, GW_PENDING);
        return;
    }
    if (!gw_move(r, GW_PENDING, GW_LOGGED)) {
        gw_req_free(r); /* expired meanwhile */
        return;
    }
    pthread_mutex_lock(&g->mu);
    r->next = NULL;
    if (g->tail)
        g->tail->next = r;
    else
        g->head = r;
    g->tail = r;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

gateway *gateway_new(objlog_query *q, int waiters, char *errstr,
                     size_t errstr_size) {
    gateway *g = calloc(1, sizeof(*g));
    if (!g || !(g->threads = calloc((size_t)waiters, sizeof(pthread_t)))) {
        free(g);
        snprintf(errstr, errstr_size, "gateway: out of memory");
        return NULL;
    }
    g->q = q;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    for (; g->nthreads < waiters; g->nthreads++) {
        if (pthread_create(&g->threads[g->nthreads], NULL, gw_waiter_main, g) != 0) {
            snprintf(errstr, errstr_size, "gateway: pthread_create failed");
            gateway_destroy(g);
            return NULL;
        }
    }
    return g;
}

/* On w's thread when it stops: every request of w is answered now. */
void gateway_expire_worker(gateway *g, http_worker *w) {
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    for (gw_req *r = g->live; r; r = r->lnext)
        if (r->w == w)
            event_active(r->timer, EV_TIMEOUT, 0);
    pthread_mutex_unlock(&g->mu);
}

void gateway_destroy(gateway *g) {
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->nthreads; i++)
        pthread_join(g->threads[i], NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->threads);
    free(g);
}

/* --------------------------------------------------------------- requests */

static int gw_random_id(uint8_t out[OBJLOG_REQUEST_ID_LEN]) {
    size_t got = 0;
    while (got < OBJLOG_REQUEST_ID_LEN) {
        ssize_t n = getrandom(out + got, OBJLOG_REQUEST_ID_LEN - got, 0);
        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0)
            got += (size_t)n;
    }
    return 0;
}

static int gw_hex_id(const char *s, uint8_t out[OBJLOG_REQUEST_ID_LEN]) {
    if (strlen(s) != 2 * OBJLOG_REQUEST_ID_LEN)
        return -1;
    for (int i = 0; i < OBJLOG_REQUEST_ID_LEN; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", s[2 * i]) ||
            !strchr("0123456789abcdefABCDEF", s[2 * i + 1]))
            return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* ack= and timeout_ms= of a write; -1 after replying. */
static int gw_write_params(http_ctx *c, int *ack_logged, int *timeout_ms) {
    const char *ack = http_param_get(c, "ack", NULL);
    if (ack && strcmp(ack, "applied") != 0 && strcmp(ack, "logged") != 0) {
        http_reply_error(c, 400, "InvalidArgument", "ack must be applied or logged");
        return -1;
    }
    *ack_logged = ack && strcmp(ack, "logged") == 0;
    return http_timeout_param(c, timeout_ms);
}

/* A request of c with request id rid, its timer running; NULL out of
 * memory (nothing answered). */
static gw_req *gw_req_alloc(http_ctx *c, int ack_logged, int timeout_ms,
                            const uint8_t rid[OBJLOG_REQUEST_ID_LEN]) {
    gw_req *r = calloc(1, sizeof(*r));
    if (!r || !(r->done = event_new(c->w->base, -1, 0, gw_done_cb, r)) ||
        !(r->timer = evtimer_new(c->w->base, gw_timeout_cb, r))) {
        if (r && r->done)
            event_free(r->done);
        free(r);
        return NULL;
    }
    for (int i = 0; i < OBJLOG_REQUEST_ID_LEN; i++)
        sprintf(r->rid_hex + 2 * i, "%02x", rid[i]);
    r->w = c->w;
    r->c = *c;
    r->c.params = NULL;
    r->c.nparams = 0;
    r->g = c->q->gw;
    r->ack_logged = ack_logged;
    r->timeout_ms = timeout_ms;
    r->res.partition = -1;
    clock_gettime(CLOCK_MONOTONIC, &r->start);
    gateway *g = r->g;
    pthread_mutex_lock(&g->mu);
    r->lnext = g->live;
    if (g->live)
        g->live->lprev = r;
    g->live = r;
    pthread_mutex_unlock(&g->mu);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
    if (r->w->stopping)
        event_active(r->timer, EV_TIMEOUT, 0);
    return r;
}

/* While the store cannot write, whatever is written now would sit in the
 * log unapplied and its writer would wait out its timeout: the write is
 * refused before it reaches the log (nothing acknowledged, nothing to
 * retry by id), naming the store's error; S3 answers it as SlowDown
 * (s3.c). 1 after answering c, 0 when the store writes. */
static int gw_refuse_stalled(http_ctx *c) {
    char why[384];
    if (!objlog_materializer_store_stalled(c->q->m, why, sizeof(why)))
        return 0;
    http_reply_error(c, 507, "InsufficientStorage",
                     "the disk under %s cannot take the view's writes (%s); writes are "
                     "refused until it can: this one was not written",
                     objlog_store_dir(c->q->store), why);
    return 1;
}

/* Common parameters; replies and returns NULL on a bad one. */
static gw_req *gw_req_new(http_ctx *c, objlog_write_opts *opts,
                          uint8_t rid[OBJLOG_REQUEST_ID_LEN]) {
    /* A write is coming: an idle consumer fetches again (materializer.h). */
    objlog_materializer_kick(c->q->m);
    int ack_logged, timeout_ms;
    if (gw_write_params(c, &ack_logged, &timeout_ms) < 0)
        return NULL;
    struct evkeyvalq *h = evhttp_request_get_input_headers(c->req);
    const char *hrid = evhttp_find_header(h, "X-Objlog-Request-Id");
    memset(opts, 0, sizeof(*opts));
    if (hrid) {
        if (gw_hex_id(hrid, rid) < 0) {
            http_reply_error(c, 400, "InvalidArgument",
                             "X-Objlog-Request-Id must be 32 hex digits");
            return NULL;
        }
    } else if (gw_random_id(rid) < 0) {
        http_reply_error(c, 500, "InternalError", "getrandom: %s", strerror(errno));
        return NULL;
    }
    if (gw_refuse_stalled(c))
        return NULL;
    /* The id is ours before the producer is called: a timeout names it. */
    opts->request_id = rid;
    gw_req *r = gw_req_alloc(c, ack_logged, timeout_ms, rid);
    if (!r)
        http_reply_error(c, 500, "InternalError", "out of memory");
    return r;
}

/* gw_req_new for writes that take preconditions (docs/ARCHITECTURE.md,
 * "How a write flows"): If-Match (an etag) and, where S3 allows it,
 * If-None-Match (only "*"). The header strings stay owned by the request,
 * which outlives the producer call. */
static gw_req *gw_req_new_cond(http_ctx *c, objlog_write_opts *opts,
                               uint8_t rid[OBJLOG_REQUEST_ID_LEN], int allow_inm) {
    struct evkeyvalq *h = evhttp_request_get_input_headers(c->req);
    const char *inm = evhttp_find_header(h, "If-None-Match");
    if (inm && (!allow_inm || strcmp(inm, "*") != 0)) {
        http_reply_error(c, 400, "InvalidArgument", allow_inm
                             ? "If-None-Match supports only *"
                             : "If-None-Match is not supported on this operation");
        return NULL;
    }
    gw_req *r = gw_req_new(c, opts, rid);
    if (!r)
        return NULL;
    opts->if_match = evhttp_find_header(h, "If-Match");
    opts->if_none_match = inm != NULL;
    return r;
}

/* After the producer call: rc -1 means rejected up front (no callback). */
static void gw_submitted(http_ctx *c, gw_req *r, int rc, const char *errstr) {
    if (rc == 0)
        return;
    if (r->sink) {
        gateway_result res = {.status = 400, .code = "InvalidArgument",
                              .message = errstr, .version_id = "", .etag = ""};
        r->sink(r->sink_arg, r->sink_index, &res);
        gw_req_free(r);
        return;
    }
    gw_req_free(r);
    http_reply_error(c, 400, "InvalidArgument", "%s", errstr);
}

/* The request's bucket and key, kept for its answer; -1 out of memory. */
static int gw_req_target(gw_req *r, const char *bucket, const uint8_t *key, size_t kn) {
    snprintf(r->bucket, sizeof(r->bucket), "%s", bucket);
    r->key = malloc(kn + 1);
    if (!r->key)
        return -1;
    memcpy(r->key, key, kn);
    r->key[kn] = '\0';
    r->key_len = kn;
    return 0;
}

/* ------------------------------------------------------------- one write */

/* Every write the gateway makes, named by the producer call it is. */
typedef enum gw_op {
    GW_OP_CREATE_BUCKET,
    GW_OP_DELETE_BUCKET,
    GW_OP_SET_VERSIONING,
    GW_OP_SET_QUOTA,
    GW_OP_SET_RATE_LIMIT,
    GW_OP_PUT_OBJECT,
    GW_OP_DELETE_OBJECT,
    GW_OP_CREATE_UPLOAD,
    GW_OP_UPLOAD_PART,
    GW_OP_COMPLETE_UPLOAD,
    GW_OP_ABORT_UPLOAD,
    GW_OP_PUT_INDEX,
    GW_OP_DROP_INDEX,
    GW_OP_EVENT
} gw_op;

/* The preconditions a write takes from its request's headers. */
typedef enum gw_cond {
    GW_COND_NONE,
    GW_COND_IF_MATCH,            /* If-Match; If-None-Match refused */
    GW_COND_IF_MATCH_OR_NONE     /* If-Match or If-None-Match: * */
} gw_cond;

/* One write: its op and the values its producer call takes (the others
 * stay zero). Everything is borrowed for the duration of gw_submit. */
typedef struct gw_write {
    gw_op op;
    gw_cond cond;
    const char *bucket;
    const uint8_t *key;
    size_t key_len;
    const char *version_id;      /* DELETE_OBJECT: NULL, the current one */
    const char *upload_id;
    const objlog_object_meta *meta;
    const objlog_bucket_conf *bc;
    objlog_versioning versioning;
    uint64_t max_bytes, max_objects;
    const objlog_rate_limit *limit; /* SET_RATE_LIMIT: NULL deletes it */
    uint32_t part_number;
    uint64_t size;
    const char *etag, *blob_id;
    const objlog_completed_part *parts;
    size_t nparts;
    const char *index, *field;   /* PUT_INDEX, DROP_INDEX */
    const char *copy_source;     /* PUT_OBJECT: CopyObject's source */
    int last_modified;
    Objlog__Event *ev;           /* EVENT: prepared by the caller */
} gw_write;

/* w handed to the producer for r: 0, or -1 with err when it was refused
 * up front (no callback will come). */
static int gw_produce(objlog_producer *p, gw_req *r, const gw_write *w,
                      const objlog_write_opts *o, char *err, size_t en) {
    const char *k = (const char *)w->key;
    switch (w->op) {
    case GW_OP_CREATE_BUCKET:
        return objlog_producer_create_bucket_ex(p, w->bucket, w->bc, o, gw_on_logged, r,
                                                err, en);
    case GW_OP_DELETE_BUCKET:
        return objlog_producer_delete_bucket(p, w->bucket, o, gw_on_logged, r, err, en);
    case GW_OP_SET_VERSIONING:
        return objlog_producer_set_versioning(p, w->bucket, w->versioning, o, gw_on_logged,
                                              r, err, en);
    case GW_OP_SET_QUOTA:
        return objlog_producer_set_quota(p, w->bucket, w->max_bytes, w->max_objects, o,
                                         gw_on_logged, r, err, en);
    case GW_OP_SET_RATE_LIMIT:
        return objlog_producer_set_rate_limit(p, w->bucket, w->limit, o, gw_on_logged, r,
                                              err, en);
    case GW_OP_PUT_OBJECT:
        return objlog_producer_put_object(p, w->bucket, k, w->key_len, w->meta, o,
                                          gw_on_logged, r, err, en);
    case GW_OP_DELETE_OBJECT:
        return objlog_producer_delete_object(p, w->bucket, k, w->key_len, w->version_id, o,
                                             gw_on_logged, r, err, en);
    case GW_OP_CREATE_UPLOAD:
        return objlog_producer_create_upload(p, w->bucket, k, w->key_len, w->meta, o,
                                             gw_on_logged, r, err, en);
    case GW_OP_UPLOAD_PART:
        return objlog_producer_upload_part(p, w->bucket, k, w->key_len, w->upload_id,
                                           w->part_number, w->size, w->etag ? w->etag : "",
                                           w->blob_id ? w->blob_id : "", o, gw_on_logged,
                                           r, err, en);
    case GW_OP_COMPLETE_UPLOAD:
        return objlog_producer_complete_upload(p, w->bucket, k, w->key_len, w->upload_id,
                                               w->parts, w->nparts, o, gw_on_logged, r,
                                               err, en);
    case GW_OP_ABORT_UPLOAD:
        return objlog_producer_abort_upload(p, w->bucket, k, w->key_len, w->upload_id, o,
                                            gw_on_logged, r, err, en);
    case GW_OP_PUT_INDEX:
        return objlog_producer_put_index(p, w->bucket, w->index, w->field,
                                         w->last_modified, o, gw_on_logged, r, err, en);
    case GW_OP_DROP_INDEX:
        return objlog_producer_drop_index(p, w->bucket, w->index, o, gw_on_logged, r, err,
                                          en);
    case GW_OP_EVENT:
        return producer_write_event(p, w->ev, 0, o, gw_on_logged, r, err, en);
    }
    snprintf(err, en, "unknown write"); /* not reached: -Wswitch checks every op */
    return -1;
}

/* r's write out to the producer; from here r is the producer callback's,
 * or answered and freed when the producer refused it. The answer of a
 * create-upload or a complete names the bucket and key, kept first. */
static void gw_issue(http_ctx *c, gw_req *r, const objlog_write_opts *opts,
                     const gw_write *w) {
    char err[256] = "";
    int rc;
    r->is_create_upload = w->op == GW_OP_CREATE_UPLOAD;
    if ((w->op == GW_OP_CREATE_UPLOAD || w->op == GW_OP_COMPLETE_UPLOAD) &&
        gw_req_target(r, w->bucket, w->key, w->key_len) < 0) {
        snprintf(err, sizeof(err), "out of memory");
        rc = -1;
    } else {
        rc = gw_produce(c->q->producer, r, w, opts, err, sizeof(err));
    }
    gw_submitted(c, r, rc, err);
}

/* The one path of a request's write: its common parameters and
 * preconditions (answered when bad), then the producer. */
static void gw_submit(http_ctx *c, const gw_write *w) {
    objlog_write_opts opts;
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    gw_req *r = w->cond == GW_COND_NONE
                    ? gw_req_new(c, &opts, rid)
                    : gw_req_new_cond(c, &opts, rid, w->cond == GW_COND_IF_MATCH_OR_NONE);
    if (!r)
        return;
    opts.copy_source = w->copy_source;
    gw_issue(c, r, &opts, w);
}

/* ------------------------------------------------------------- the writes */

void gateway_create_bucket(http_ctx *c, const char *bucket, const objlog_bucket_conf *bc) {
    gw_submit(c, &(gw_write){.op = GW_OP_CREATE_BUCKET, .bucket = bucket, .bc = bc});
}

void gateway_set_versioning(http_ctx *c, const char *bucket, objlog_versioning v) {
    gw_submit(c, &(gw_write){.op = GW_OP_SET_VERSIONING, .bucket = bucket,
                             .versioning = v});
}

void gateway_set_quota(http_ctx *c, const char *bucket, uint64_t max_bytes,
                       uint64_t max_objects) {
    gw_submit(c, &(gw_write){.op = GW_OP_SET_QUOTA, .bucket = bucket,
                             .max_bytes = max_bytes, .max_objects = max_objects});
}

void gateway_delete_rate_limit(http_ctx *c, const char *bucket) {
    gateway_set_rate_limit(c, bucket, NULL);
}

void gateway_set_rate_limit(http_ctx *c, const char *bucket, const objlog_rate_limit *l) {
    gw_submit(c, &(gw_write){.op = GW_OP_SET_RATE_LIMIT, .bucket = bucket, .limit = l});
}

void gateway_delete_bucket(http_ctx *c, const char *bucket) {
    if (ranges_delete_spread(c, bucket))
        return;
    gw_submit(c, &(gw_write){.op = GW_OP_DELETE_BUCKET, .bucket = bucket});
}

void gateway_put_object_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                             size_t key_len, const objlog_object_meta *meta) {
    gw_submit(c, &(gw_write){.op = GW_OP_PUT_OBJECT, .cond = GW_COND_IF_MATCH_OR_NONE,
                             .bucket = bucket, .key = key, .key_len = key_len,
                             .meta = meta});
}

void gateway_copy_object_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const objlog_object_meta *meta,
                              const char *source) {
    gw_submit(c, &(gw_write){.op = GW_OP_PUT_OBJECT, .cond = GW_COND_IF_MATCH_OR_NONE,
                             .bucket = bucket, .key = key, .key_len = key_len,
                             .meta = meta, .copy_source = source});
}

/* A version id as the state machine takes it: NULL, "null" or one of its
 * own. */
static int gw_version_id_ok(const char *vid) {
    uint64_t seq;
    return !vid || strcmp(vid, "null") == 0 || keycodec_parse_version_id(vid, &seq) >= 0;
}

void gateway_delete_version(http_ctx *c, const char *bucket, const uint8_t *key,
                            size_t key_len, const char *vid) {
    if (!gw_version_id_ok(vid)) {
        http_reply_error(c, 400, "InvalidArgument", "invalid version id");
        return;
    }
    gw_submit(c, &(gw_write){.op = GW_OP_DELETE_OBJECT, .cond = GW_COND_IF_MATCH,
                             .bucket = bucket, .key = key, .key_len = key_len,
                             .version_id = vid});
}

/* One delete of a batch: its own random request id (the batch's keys are
 * distinct writes; a shared id would make the state machine deduplicate
 * them into one), no preconditions, its outcome to sink. */
static void gw_delete_one(http_ctx *c, const char *bucket, const gateway_delete_item *it,
                          size_t i, int ack_logged, int timeout_ms, gateway_sink *sink,
                          void *arg) {
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    gateway_result res = {.status = 400, .code = "InvalidArgument",
                          .message = "invalid version id", .version_id = "", .etag = ""};
    if (!gw_version_id_ok(it->version_id)) {
        sink(arg, i, &res);
        return;
    }
    gw_req *r = gw_random_id(rid) < 0 ? NULL : gw_req_alloc(c, ack_logged, timeout_ms, rid);
    if (!r) {
        res.status = 500, res.code = "InternalError", res.message = "out of memory";
        sink(arg, i, &res);
        return;
    }
    r->sink = sink, r->sink_arg = arg, r->sink_index = i;
    objlog_write_opts opts = {.request_id = rid};
    gw_issue(c, r, &opts,
             &(gw_write){.op = GW_OP_DELETE_OBJECT, .bucket = bucket, .key = it->key,
                         .key_len = it->key_len, .version_id = it->version_id});
}

int gateway_delete_versions(http_ctx *c, const char *bucket, const gateway_delete_item *items,
                            size_t n, gateway_sink *sink, void *arg) {
    int ack_logged, timeout_ms;
    objlog_materializer_kick(c->q->m);
    if (gw_write_params(c, &ack_logged, &timeout_ms) < 0 || gw_refuse_stalled(c))
        return -1;
    for (size_t i = 0; i < n; i++)
        gw_delete_one(c, bucket, &items[i], i, ack_logged, timeout_ms, sink, arg);
    return 0;
}

/* ------------------------------------------------------------- multipart */

void gateway_create_upload_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                                size_t key_len, const objlog_object_meta *meta) {
    gw_submit(c, &(gw_write){.op = GW_OP_CREATE_UPLOAD, .bucket = bucket, .key = key,
                             .key_len = key_len, .meta = meta});
}

int gateway_part_number(const char *s, uint32_t *out) {
    char *end = NULL;
    if (!s || *s < '1' || *s > '9' || strlen(s) > 5)
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v < 1 || v > 10000)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

void gateway_upload_part_meta(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id, uint32_t part_number,
                              uint64_t size, const char *etag, const char *blob_id) {
    gw_submit(c, &(gw_write){.op = GW_OP_UPLOAD_PART, .bucket = bucket, .key = key,
                             .key_len = key_len, .upload_id = upload_id,
                             .part_number = part_number, .size = size, .etag = etag,
                             .blob_id = blob_id});
}

void gateway_complete_upload_parts(http_ctx *c, const char *bucket, const uint8_t *key,
                                   size_t key_len, const char *upload_id,
                                   const objlog_completed_part *parts, size_t n) {
    gw_submit(c, &(gw_write){.op = GW_OP_COMPLETE_UPLOAD, .cond = GW_COND_IF_MATCH_OR_NONE,
                             .bucket = bucket, .key = key, .key_len = key_len,
                             .upload_id = upload_id, .parts = parts, .nparts = n});
}

void gateway_abort_upload_key(http_ctx *c, const char *bucket, const uint8_t *key,
                              size_t key_len, const char *upload_id) {
    gw_submit(c, &(gw_write){.op = GW_OP_ABORT_UPLOAD, .bucket = bucket, .key = key,
                             .key_len = key_len, .upload_id = upload_id});
}

void gateway_write_event(http_ctx *c, Objlog__Event *ev) {
    gw_submit(c, &(gw_write){.op = GW_OP_EVENT, .ev = ev});
}

/* ---- attribute indexes: PUT/DELETE /v1/buckets/{b}/indexes/{name} */

void gateway_create_index(http_ctx *c, const char *bucket, const char *name,
                          const char *field, int last_modified) {
    gw_submit(c, &(gw_write){.op = GW_OP_PUT_INDEX, .bucket = bucket, .index = name,
                             .field = field, .last_modified = last_modified});
}

void gateway_drop_index(http_ctx *c, const char *bucket, const char *name) {
    gw_submit(c, &(gw_write){.op = GW_OP_DROP_INDEX, .bucket = bucket, .index = name});
}
