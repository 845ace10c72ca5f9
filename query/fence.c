/* fence.c: read consistency (DESIGN §7). A read under `strong` must not be
 * served before the view has applied everything the partition leader had
 * when the read arrived; under `token`, everything up to the write the
 * token names; `eventual` answers at once. Waits are bounded by timeout_ms
 * and end in 503 SlowDown with the lag, never in a stale answer.
 *
 * End offsets come from watermark.c, which shares one ListOffsets request
 * per partition among concurrent strong reads (never one that started
 * before the read arrived); a read over many partitions asks for all of
 * them in one round trip. The wait blocks this worker thread (the event
 * loop of its connections) for at most timeout_ms; non-blocking waits are
 * a later issue; with several workers the other threads keep serving. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "token.h"

/* The most partitions one read fences (read.c's READ_MAX_PARTS). */
#define FENCE_MAX_PARTS 256

typedef struct fence_deadline {
    struct timespec end;
} fence_deadline;

static void fence_deadline_set(fence_deadline *d, int timeout_ms) {
    clock_gettime(CLOCK_MONOTONIC, &d->end);
    d->end.tv_sec += timeout_ms / 1000;
    d->end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (d->end.tv_nsec >= 1000000000L) {
        d->end.tv_sec++;
        d->end.tv_nsec -= 1000000000L;
    }
}

static int fence_remaining_ms(const fence_deadline *d) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(d->end.tv_sec - now.tv_sec) * 1000 +
                   (d->end.tv_nsec - now.tv_nsec) / 1000000L;
    return ms > 0 ? (int)ms : 0;
}

/* 0 applied; otherwise replied (503). The event at offset must be applied. */
static int fence_wait_offset(http_ctx *c, int mode, int32_t p, int64_t offset,
                             const fence_deadline *d) {
    if (objlog_materializer_applied(c->q->m, p) > offset)
        return 0;
    atomic_fetch_add_explicit(&c->q->fence_waits[mode], 1, memory_order_relaxed);
    int rc = objlog_materializer_wait_applied(c->q->m, p, offset,
                                              fence_remaining_ms(d));
    if (rc == 0)
        return 0;
    if (rc > 0)
        atomic_fetch_add_explicit(&c->q->fence_timeouts[mode], 1,
                                  memory_order_relaxed);
    int64_t applied = objlog_materializer_applied(c->q->m, p);
    fence_applied_header(c, &p, 1, &applied);
    json_t *extra = json_pack("{s:i, s:I, s:I, s:I}", "partition", (int)p,
                              "applied", (json_int_t)applied, "required",
                              (json_int_t)(offset + 1), "lag",
                              (json_int_t)(offset + 1 - applied));
    char msg[512], perr[256];
    if (rc < 0)
        snprintf(msg, sizeof(msg), "partition %d is stopped: %s", (int)p,
                 objlog_materializer_partition_error(c->q->m, p, perr, sizeof(perr))
                     ? perr : "unknown error");
    else
        snprintf(msg, sizeof(msg),
                 "partition %d has not applied offset %lld yet (lag %lld)",
                 (int)p, (long long)offset, (long long)(offset + 1 - applied));
    http_reply_error_rid(c, 503, "SlowDown", c->request_id, msg, extra);
    return -1;
}

static int fence_token(http_ctx *c, const char *text, const fence_deadline *d) {
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
    for (int i = 0; i < n; i++)
        if (fence_wait_offset(c, FENCE_TOKEN, parts[i].partition, parts[i].offset, d) < 0)
            return -1;
    return 0;
}

/* Read-index fence: the high watermark is the next offset the leader will
 * assign, so every write acknowledged before this read sits below it. */
static int fence_strong(http_ctx *c, const int32_t *parts, int nparts,
                        const fence_deadline *d) {
    int64_t hi[FENCE_MAX_PARTS];
    int32_t failed = -1;
    rd_kafka_resp_err_t err;
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
    /* Reads over many partitions (stats, wide LISTs) take every end offset
     * in one round trip, not one after another. */
    if (nparts == 1)
        err = wm_end_offset(c->q->wm, parts[0], 1, fence_remaining_ms(d), &hi[0]),
        failed = parts[0];
    else
        err = wm_end_offsets(c->q->wm, parts, nparts, fence_remaining_ms(d), hi,
                             &failed);
    if (err) {
        if (err == RD_KAFKA_RESP_ERR__TIMED_OUT)
            atomic_fetch_add_explicit(&c->q->fence_timeouts[FENCE_STRONG], 1,
                                      memory_order_relaxed);
        http_reply_error(c, 503, "SlowDown",
                         "cannot fetch the end offset of partition %d: %s",
                         (int)failed, rd_kafka_err2str(err));
        return -1;
    }
    for (int i = 0; i < nparts; i++)
        if (hi[i] > 0 && fence_wait_offset(c, FENCE_STRONG, parts[i], hi[i] - 1, d) < 0)
            return -1;
    return 0;
}

int fence_wait(http_ctx *c, const int32_t *parts, int nparts,
               int64_t *applied) {
    const char *mode = http_param_or_header(c, "consistency", "X-Objlog-Consistency");
    const char *token = http_param_or_header(c, "token", "X-Objlog-Token");
    int timeout_ms;
    if (http_timeout_param(c, &timeout_ms) < 0)
        return -1;
    fence_deadline d;
    fence_deadline_set(&d, timeout_ms);
    /* A token without an explicit mode means read-your-writes: it is what
     * the client asked for, and it needs no broker round trip. */
    if (!mode || !*mode)
        mode = token ? "token" : "strong";
    int rc;
    if (strcmp(mode, "eventual") == 0) {
        rc = 0;
    } else if (strcmp(mode, "token") == 0) {
        rc = fence_token(c, token, &d);
    } else if (strcmp(mode, "strong") == 0) {
        rc = fence_strong(c, parts, nparts, &d);
    } else {
        http_reply_error(c, 400, "InvalidArgument",
                         "consistency must be strong, token or eventual");
        return -1;
    }
    if (rc < 0)
        return -1;
    for (int i = 0; i < nparts; i++)
        applied[i] = objlog_materializer_applied(c->q->m, parts[i]);
    return 0;
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
