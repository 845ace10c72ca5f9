/* fence.c: read consistency (docs/ARCHITECTURE.md, "Reads"). A read under
 * `strong` must not be served before the view has applied everything the
 * partition leader had when the read arrived; under `token`, everything up
 * to the write the token names; `eventual` answers at once. Waits are
 * bounded by timeout_ms and end in 503 SlowDown with the lag, never in a
 * stale answer.
 *
 * End offsets come from watermark.c, which shares one ListOffsets request
 * per partition among concurrent strong reads (never one that started
 * before the read arrived).
 *
 * No HTTP worker ever waits here: a read whose fence is not met at once is
 * PARKED on its worker (a fence_req with a timer) and its handler returns.
 * Whatever it waits for (an end offset request finishing, a batch applied)
 * wakes the worker's wake_ev from the thread that did it; the worker then
 * re-checks its parked reads and, once a fence is met or its time is up,
 * runs the request's route again with the result (http_ctx.fenced), and
 * the handler answers as if it had never left. Invariant: a parked request
 * is on exactly one worker's list until that re-run, which answers it. */
#include "core.h"
#include "cluster.h"
#include "read.h"
#include "server.h"
#include "watermark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "token.h"

/* The most partitions one read fences (read.c's READ_MAX_PARTS). */
#define FENCE_MAX_PARTS 256

struct fence_req {
    http_worker *w;
    struct evhttp_request *req;
    char request_id[33];
    struct timespec start;
    http_endpoint endpoint;
    int mode;                    /* FENCE_STRONG, FENCE_TOKEN, or -1 (await) */
    int ends_only;               /* fence_await_ends: no apply wait, no errors */
    int counted;                 /* fence_waits counted */
    const http_face *face;       /* the listener it came through: re-run there */
    struct event *timer;
    fence_req *prev, *next;      /* w->parked */
    int n;
    int32_t *parts;              /* [n], then need[n] and ticket[n] */
    int64_t *need;               /* the event at need[i] must be applied; -1 none */
    uint64_t *ticket;            /* strong: end offset request, 0 once known */
};

/* ------------------------------------------------------------ the parked */

/* A worker's parked reads (its server slot): the list is the worker
 * thread's; nparked tells other threads whether to wake it. */
typedef struct fence_worker {
    fence_req *parked;
    atomic_int nparked;
    struct event *wake_ev;       /* fence_worker_wake_cb, from any thread */
} fence_worker;

static fence_worker *fence_of(const http_worker *w) {
    return server_slot(w, w->q->fence->slot);
}

static void fence_unlink(fence_req *r) {
    fence_worker *w = fence_of(r->w);
    if (r->prev)
        r->prev->next = r->next;
    else
        w->parked = r->next;
    if (r->next)
        r->next->prev = r->prev;
    atomic_fetch_sub(&w->nparked, 1);
}

static void fence_req_free(fence_req *r) {
    if (r->timer)
        event_free(r->timer);
    free(r);
}

/* Ends r: off the list, its route run again with res, freed. */
static void fence_finish(fence_req *r, const fence_result *res) {
    fence_unlink(r);
    http_rerun(r->w, r->req, r->request_id, &r->start, res, r->face);
    fence_req_free(r);
}

/* Checks r's fence without waiting: 1 when r is finished (met, or failed
 * for good: a fetch error, a stopped partition), else 0. */
static int fence_advance(fence_req *r) {
    objlog_query *q = r->w->q;
    int pending = 0;
    for (int i = 0; i < r->n; i++) {
        int32_t p = r->parts[i];
        if (r->ticket[i]) {
            int64_t end;
            rd_kafka_resp_err_t err;
            if (!wm_ticket_done(q->wm, p, r->ticket[i], &end, &err)) {
                pending = 1;
                continue;
            }
            if (r->ends_only) {
                r->ticket[i] = 0;
                continue;
            }
            if (err) {
                fence_result res = {.rc = FENCE_FETCH_FAILED, .part = p, .err = err};
                fence_finish(r, &res);
                return 1;
            }
            r->ticket[i] = 0;
            r->need[i] = end > 0 ? end - 1 : -1;
        }
        if (r->need[i] < 0 || objlog_materializer_applied(q->m, p) > r->need[i])
            continue;
        if (!objlog_materializer_applies(q->m, p)) {
            /* The group moved p away (or this node stopped being its
             * standby) while the read waited: it will not get there here;
             * the re-run sends it to a node that applies p. */
            fence_result res = {.rc = FENCE_MOVED, .part = p};
            fence_finish(r, &res);
            return 1;
        }
        char perr[8];
        if (objlog_materializer_partition_error(q->m, p, perr, sizeof(perr))) {
            fence_result res = {.rc = FENCE_STOPPED, .part = p, .need = r->need[i]};
            fence_finish(r, &res);
            return 1;
        }
        if (!r->counted && r->mode >= 0) {
            atomic_fetch_add_explicit(&q->fence->waits[r->mode], 1, memory_order_relaxed);
            r->counted = 1;
        }
        pending = 1;
    }
    if (pending)
        return 0;
    fence_result ok = {.rc = FENCE_MET};
    fence_finish(r, &ok);
    return 1;
}

/* Time is up: one last look, then the reason it is not met. */
static void fence_timeout_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    fence_req *r = arg;
    if (fence_advance(r))
        return;
    if (r->w->stopping) {
        fence_result bye = {.rc = FENCE_SHUTDOWN};
        fence_finish(r, &bye);
        return;
    }
    fence_result res = {.rc = FENCE_TIMED_OUT};
    for (int i = 0; i < r->n; i++) {
        if (r->ticket[i]) {
            res = (fence_result){.rc = FENCE_FETCH_FAILED, .part = r->parts[i],
                                 .err = RD_KAFKA_RESP_ERR__TIMED_OUT};
            break;
        }
        if (r->need[i] >= 0 &&
            objlog_materializer_applied(r->w->q->m, r->parts[i]) <= r->need[i]) {
            res = (fence_result){.rc = FENCE_TIMED_OUT, .part = r->parts[i],
                                 .need = r->need[i]};
            break;
        }
    }
    if (r->mode >= 0)
        atomic_fetch_add_explicit(&r->w->q->fence->timeouts[r->mode], 1,
                                  memory_order_relaxed);
    fence_finish(r, &res);
}

/* A new parked request for c's n partitions. Counted in w->nparked BEFORE
 * the caller takes tickets or reads applied offsets: a notification that
 * comes between those and the first fence_advance then still wakes the
 * worker, and one that came before is seen by that fence_advance. */
static fence_req *fence_req_new(http_ctx *c, int mode, int n) {
    /* A read that waits expects events: an idle consumer fetches again. */
    objlog_materializer_kick(c->q->m);
    fence_req *r = calloc(1, sizeof(*r) + (size_t)n * (sizeof(int32_t) +
                                                       sizeof(int64_t) + sizeof(uint64_t)));
    if (!r)
        return NULL;
    r->w = c->w;
    r->req = c->req;
    memcpy(r->request_id, c->request_id, sizeof(r->request_id));
    r->start = c->start;
    r->endpoint = c->endpoint;
    r->face = c->face;
    r->mode = mode;
    r->n = n;
    r->need = (int64_t *)(r + 1);
    r->ticket = (uint64_t *)(r->need + n);
    r->parts = (int32_t *)(r->ticket + n);
    r->timer = evtimer_new(c->w->base, fence_timeout_cb, r);
    if (!r->timer) {
        free(r);
        return NULL;
    }
    atomic_fetch_add(&fence_of(c->w)->nparked, 1);
    return r;
}

/* Parks r (filled by the caller) for timeout_ms, unless its fence is met
 * or failed already. FENCE_PARKED: the handler returns, replying nothing. */
static int fence_park(fence_req *r, int timeout_ms) {
    fence_worker *w = fence_of(r->w);
    r->next = w->parked;
    if (w->parked)
        w->parked->prev = r;
    w->parked = r;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
    /* The first check runs from the loop, not from inside the handler that
     * parked r: a fence already met would otherwise re-run the route
     * while its first run is still on the stack. A stopping worker parks
     * nothing (keep-alive clients would keep it busy for ever): the timer
     * fires at once and answers 503 unless the fence is met. */
    if (r->w->stopping)
        event_active(r->timer, EV_TIMEOUT, 0);
    else
        event_active(w->wake_ev, 0, 0);
    return FENCE_PARKED;
}

static void fence_worker_wake_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    fence_worker *w = arg;
    fence_req *r = w->parked;
    while (r) {
        fence_req *next = r->next;
        fence_advance(r); /* may free r, never another */
        r = next;
    }
}

void fence_notify(void *arg) {
    objlog_query *q = arg;
    /* From any thread, before the server starts too: the fence_workers
     * exist from fence_new on, and nparked is above 0 only once the
     * worker runs (its wake_ev set before its thread started). */
    for (int i = 0; i < q->fence->nworkers; i++) {
        fence_worker *fw = q->fence->workers[i];
        if (atomic_load(&fw->nparked) > 0)
            event_active(fw->wake_ev, 0, 0);
    }
}

void fence_notify_end(void *arg, int32_t p, int64_t end) {
    objlog_query *q = arg;
    /* The refresher asks every second, so a paused consumer resumes
     * within about a second of any producer's write, reads or not. */
    if (end > 0 && objlog_materializer_idle(q->m) &&
        end > objlog_materializer_applied(q->m, p))
        objlog_materializer_kick(q->m);
    fence_notify(arg);
}

/* The worker's fence_worker exists from fence_new on (other threads read
 * its nparked before the server starts); here it gets its wake event. */
static int fence_worker_init(void *arg, http_worker *w, void **state, char *errstr,
                             size_t errstr_size) {
    fence_state *f = arg;
    fence_worker *fw = f->workers[w - w->srv->workers];
    fw->wake_ev = event_new(w->base, -1, 0, fence_worker_wake_cb, fw);
    if (!fw->wake_ev) {
        snprintf(errstr, errstr_size, "fence: out of memory");
        return -1;
    }
    *state = fw;
    return 0;
}

/* As the worker stops: every parked read answers 503 now. */
static void fence_worker_stop(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    fence_worker *fw = state;
    fence_result res = {.rc = FENCE_SHUTDOWN};
    while (fw && fw->parked)
        fence_finish(fw->parked, &res);
}

static void fence_worker_dispose(void *arg, http_worker *w, void *state) {
    (void)arg;
    (void)w;
    fence_worker *fw = state;
    if (fw && fw->wake_ev)
        event_free(fw->wake_ev);
    if (fw)
        fw->wake_ev = NULL;
}

fence_state *fence_new(server *s, char *errstr, size_t errstr_size) {
    fence_state *f = calloc(1, sizeof(*f));
    if (f && (f->workers = calloc((size_t)s->nworkers, sizeof(*f->workers))))
        f->nworkers = s->nworkers;
    for (int i = 0; f && i < f->nworkers; i++)
        if (!(f->workers[i] = calloc(1, sizeof(fence_worker))))
            f->nworkers = i; /* what fence_free frees; the check below fails */
    server_hooks h = {.init = fence_worker_init, .stop = fence_worker_stop,
                      .dispose = fence_worker_dispose, .arg = f};
    if (!f || f->nworkers != s->nworkers || (f->slot = server_hooks_add(s, &h)) < 0) {
        snprintf(errstr, errstr_size, "fence: %s",
                 f && f->nworkers == s->nworkers ? "too many server hooks" : "out of memory");
        fence_free(f);
        return NULL;
    }
    return f;
}

void fence_free(fence_state *f) {
    for (int i = 0; f && i < f->nworkers; i++)
        free(f->workers[i]);
    if (f)
        free(f->workers);
    free(f);
}

/* ---------------------------------------------------------- the re-run */

/* The answer of a read whose fence was not met (c->fenced->rc != MET). */
static void fence_reply_failed(http_ctx *c, const fence_result *res) {
    int32_t p = res->part;
    if (res->rc == FENCE_SHUTDOWN) {
        http_reply_error(c, 503, "SlowDown", "objlogd is shutting down; retry the read");
        return;
    }
    if (res->rc == FENCE_FETCH_FAILED) {
        http_reply_error(c, 503, "SlowDown", "cannot fetch the end offset of partition %d: %s",
                         (int)p, rd_kafka_err2str(res->err));
        return;
    }
    fence_reply_behind(c, p, res->need, res->rc == FENCE_STOPPED);
}

void fence_reply_behind(http_ctx *c, int32_t p, int64_t need, int stopped) {
    objlog_materializer *m = c->q->m;
    int64_t applied = objlog_materializer_applied(m, p);
    fence_applied_header(c, &p, 1, &applied);
    json_t *extra = json_pack("{s:i, s:I, s:I, s:I, s:b}", "partition", (int)p,
                              "applied", (json_int_t)applied, "required",
                              (json_int_t)(need + 1), "lag",
                              (json_int_t)(need + 1 - applied), "stopped", stopped);
    char msg[512], perr[256];
    if (stopped)
        snprintf(msg, sizeof(msg), "partition %d is stopped: %s", (int)p,
                 objlog_materializer_partition_error(m, p, perr, sizeof(perr))
                     ? perr : "unknown error");
    else
        snprintf(msg, sizeof(msg), "partition %d has not applied offset %lld yet (lag %lld)",
                 (int)p, (long long)need, (long long)(need + 1 - applied));
    http_reply_error_rid(c, 503, "SlowDown", c->request_id, msg, extra);
}

/* ------------------------------------------------------------- the modes */

static int fence_token(http_ctx *c, const char *text, int timeout_ms) {
    token_part parts[TOKEN_MAX_PARTS];
    int n = text ? token_parse(text, parts, TOKEN_MAX_PARTS) : -1;
    int np = objlog_materializer_partitions(c->q->m);
    for (int i = 0; n > 0 && i < n; i++)
        if (parts[i].partition >= np)
            n = -1;
    if (n < 0) {
        http_reply_error(c, 400, "InvalidArgument",
                         "consistency=token needs a valid write token");
        return -1;
    }
    int waits = 0;
    for (int i = 0; i < n; i++)
        waits += objlog_materializer_applied(c->q->m, parts[i].partition) <= parts[i].offset;
    if (!waits)
        return 0;
    fence_req *r = fence_req_new(c, FENCE_TOKEN, n);
    if (!r) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        r->parts[i] = parts[i].partition;
        r->need[i] = parts[i].offset;
    }
    return fence_park(r, timeout_ms);
}

/* Read-index fence: the high watermark is the next offset the leader will
 * assign, so every write acknowledged before this read sits below it. */
static int fence_strong(http_ctx *c, const int32_t *parts, int nparts, int timeout_ms) {
    if (nparts > FENCE_MAX_PARTS) {
        http_reply_error(c, 500, "InternalError", "a read fences at most %d partitions",
                         FENCE_MAX_PARTS);
        return -1;
    }
    for (int i = 0; i < nparts; i++) {
        rd_kafka_resp_err_t last;
        if (wm_health(c->q->wm, parts[i], &last) > WM_STALE_MS) {
            http_reply_error(c, 503, "SlowDown",
                             "the log is unreachable (no end offset of partition %d "
                             "for over %d s: %s); strong reads need it, "
                             "consistency=eventual still answers",
                             (int)parts[i], WM_STALE_MS / 1000,
                             last ? rd_kafka_err2str(last) : "no answer");
            return -1;
        }
    }
    fence_req *r = fence_req_new(c, FENCE_STRONG, nparts);
    if (!r) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return -1;
    }
    for (int i = 0; i < nparts; i++) {
        r->parts[i] = parts[i];
        r->need[i] = -1;
        r->ticket[i] = wm_ticket(c->q->wm, parts[i], timeout_ms);
    }
    return fence_park(r, timeout_ms);
}

int fence_wait(http_ctx *c, const int32_t *parts, int nparts, int64_t *applied) {
    if (c->fenced && c->fenced->rc == FENCE_MOVED)
        c->fenced = NULL; /* routed afresh below, as if it had just arrived */
    if (c->fenced && c->fenced->rc != FENCE_MET) {
        fence_reply_failed(c, c->fenced);
        return -1;
    }
    /* A cluster node answers only for partitions it applies. */
    if (!c->fenced && cluster_route(c, parts, nparts))
        return -1;
    const char *mode = http_param_or_header(c, "consistency", "X-Objlog-Consistency");
    const char *token = http_param_or_header(c, "token", "X-Objlog-Token");
    int timeout_ms;
    if (http_timeout_param(c, &timeout_ms) < 0)
        return -1;
    /* A token without an explicit mode means read-your-writes: it is what
     * the client asked for, and it needs no broker round trip. */
    if (!mode || !*mode)
        mode = token ? "token" : "strong";
    int rc;
    if (c->fenced || strcmp(mode, "eventual") == 0) {
        rc = 0;
    } else if (strcmp(mode, "token") == 0) {
        rc = fence_token(c, token, timeout_ms);
    } else if (strcmp(mode, "strong") == 0) {
        rc = fence_strong(c, parts, nparts, timeout_ms);
    } else {
        http_reply_error(c, 400, "InvalidArgument",
                         "consistency must be strong, token or eventual");
        return -1;
    }
    if (rc != 0)
        return rc;
    for (int i = 0; i < nparts; i++)
        applied[i] = objlog_materializer_applied(c->q->m, parts[i]);
    return 0;
}

int fence_await_applied(http_ctx *c, int32_t p, int64_t offset, int timeout_ms) {
    if (c->fenced)
        return c->fenced->rc == FENCE_MET ? 0 : c->fenced->rc == FENCE_STOPPED ? -1 : 1;
    if (objlog_materializer_applied(c->q->m, p) > offset)
        return 0;
    fence_req *r = fence_req_new(c, -1, 1);
    if (!r)
        return 1; /* the caller answers "not applied yet" */
    r->parts[0] = p;
    r->need[0] = offset;
    return fence_park(r, timeout_ms);
}

int fence_await_ends(http_ctx *c, int timeout_ms) {
    if (c->fenced)
        return 0;
    int n = objlog_materializer_partitions(c->q->m);
    fence_req *r = fence_req_new(c, -1, n);
    if (!r)
        return 0;
    r->ends_only = 1;
    for (int p = 0; p < n; p++) {
        rd_kafka_resp_err_t last;
        int64_t age = wm_health(c->q->wm, p, &last);
        r->parts[p] = p;
        r->need[p] = -1;
        /* While the log is unreachable a fetch would only time out: the
         * last known end offset is the best answer. */
        r->ticket[p] = age >= 0 && age <= WM_STALE_MS ? wm_ticket(c->q->wm, p, timeout_ms) : 0;
    }
    return fence_park(r, timeout_ms);
}

void fence_applied_header(http_ctx *c, const int32_t *parts, int nparts,
                          const int64_t *applied) {
    token_part tp[TOKEN_MAX_PARTS];
    char buf[TOKEN_MAX_PARTS * 32];
    int n = nparts < TOKEN_MAX_PARTS ? nparts : TOKEN_MAX_PARTS;
    for (int i = 0; i < n; i++) {
        tp[i].partition = parts[i];
        tp[i].offset = applied[i];
    }
    if (n > 0 && token_format(tp, n, buf, sizeof(buf)) > 0)
        http_add_header(c, "X-Objlog-Applied", buf);
}
