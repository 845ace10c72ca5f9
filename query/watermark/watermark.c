/* watermark.c: coalesced end offsets (high watermarks) of the events topic
 * for strong-read fences, /v1/lag, /readyz and /metrics (docs/ARCHITECTURE.md,
 * "Reads").
 *
 * Owns one rd_kafka handle and, per partition, the state of its ListOffsets
 * requests. Invariant: per partition at most one request is in flight; any
 * number of readers share it. A strong read only ever uses an end offset
 * fetched by a request that STARTED after the read arrived (see
 * wm_await), so sharing never weakens the read-index fence. A read over
 * many partitions (wm_end_offsets) claims every idle one at once and asks
 * for all of them in one ListOffsets round trip per leader.
 *
 * A single partition's request runs on that partition's fetcher thread,
 * never on the reader's: a broker call can outlast its timeout when the
 * broker dies under it (librdkafka retries). Blocking callers (/v1/lag,
 * the refresher) wait on the condition variable, bounded by their own
 * deadline; HTTP workers never wait: a strong read takes a ticket
 * (wm_ticket), the number of the request it needs, and is told when any
 * request finishes (wm_set_notify) so it can check (wm_ticket_done). */
#include "objlog_logger.h"
#include "core.h"
#include "watermark.h"

#include "deadline.h"
#include "kafkaconf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct wm_part {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t started;            /* requests started (numbered 1, 2, ...) */
    uint64_t done;               /* requests finished; started - done <= 1 */
    int64_t end;                 /* result of request `done` */
    rd_kafka_resp_err_t err;     /* its error, 0 when end is valid */
    int64_t last_end;            /* newest successful end offset, -1 none */
    int64_t ok_ms;               /* monotonic ms of the last success, 0 none */
    int queued;                  /* request `started` is the fetcher's to run */
    int fetch_ms;                /* its timeout */
    uint64_t wanted;             /* highest request a ticket needs */
    int wanted_ms;               /* the longest timeout a ticket asked for */
    int stop;                    /* the fetcher exits */
    pthread_cond_t want;         /* wakes the fetcher */
    pthread_t fetcher;
    int fetcher_started;
    rd_kafka_resp_err_t last_err; /* of the newest finished request */
} wm_part;

struct wm_cache {
    rd_kafka_t *rk;
    char *topic;
    int nparts;
    wm_part *parts;
    atomic_uint_fast64_t requests; /* ListOffsets requests issued */
    wm_fetch_fn fetch;           /* tests only: replaces the broker call */
    void *fetch_opaque;
    /* Called after every finished request, with the partition's lock
     * held: it must only wake someone (wm_set_notify). */
    pthread_mutex_t notify_mu;
    wm_notify_fn *notify;
    void *notify_opaque;
    /* The refresher (wm_start_refresh): every partition's end offset once
     * per interval, so that health and lag never wait on a broker. */
    pthread_t refresher;
    int refreshing;
    int refresh_ms;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    int stop;
};

typedef struct wm_fetcher_arg {
    wm_cache *w;
    int32_t p;
} wm_fetcher_arg;
static void *wm_fetcher_main(void *arg);

void wm_set_fetch(wm_cache *w, wm_fetch_fn fn, void *opaque) {
    w->fetch = fn;
    w->fetch_opaque = opaque;
}

void wm_set_notify(wm_cache *w, wm_notify_fn *fn, void *opaque) {
    pthread_mutex_lock(&w->notify_mu);
    w->notify = fn;
    w->notify_opaque = opaque;
    pthread_mutex_unlock(&w->notify_mu);
}

wm_cache *wm_new(const char *brokers, const char *topic, int nparts,
                 char *errstr, size_t errstr_size) {
    wm_cache *w = calloc(1, sizeof(*w));
    if (!w || !(w->topic = strdup(topic)) ||
        !(w->parts = calloc((size_t)nparts, sizeof(*w->parts)))) {
        snprintf(errstr, errstr_size, "watermarks: out of memory");
        wm_destroy(w);
        return NULL;
    }
    w->nparts = nparts;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int p = 0; p < nparts; p++) {
        pthread_mutex_init(&w->parts[p].mu, NULL);
        pthread_cond_init(&w->parts[p].cv, &ca);
        pthread_cond_init(&w->parts[p].want, NULL);
        w->parts[p].last_end = -1;
    }
    pthread_mutex_init(&w->stop_mu, NULL);
    pthread_mutex_init(&w->notify_mu, NULL);
    pthread_cond_init(&w->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    char tmp[256];
    rd_kafka_conf_t *conf = objlog_kafka_conf_new(brokers, tmp, sizeof(tmp));
    if (!conf) {
        snprintf(errstr, errstr_size, "watermark handle: %s", tmp);
        wm_destroy(w);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, objlog_logger_rdkafka); /* our logger's lines */
    /* librdkafka 2.0.2 keeps a moved partition's old leader after a
     * NOT_LEADER answer to ListOffsets until the periodic metadata refresh
     * (5 min by default): strong reads of that partition would fail that
     * long after a broker failover. Refresh every 2 s instead. */
    if (rd_kafka_conf_set(conf, "topic.metadata.refresh.interval.ms", "2000", tmp,
                          sizeof(tmp)) ||
        /* As the gateway's producer (service.c): back within a second. */
        rd_kafka_conf_set(conf, "reconnect.backoff.max.ms", "1000", tmp, sizeof(tmp)) ||
        /* Every strong read waits for one small request and its answer:
         * never hold either back for Nagle's algorithm. */
        rd_kafka_conf_set(conf, "socket.nagle.disable", "true", tmp, sizeof(tmp)) ||
        !(w->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, tmp, sizeof(tmp)))) {
        snprintf(errstr, errstr_size, "watermark handle: %s", tmp);
        rd_kafka_conf_destroy(conf);
        wm_destroy(w);
        return NULL;
    }
    for (int p = 0; p < nparts; p++) {
        wm_fetcher_arg *a = malloc(sizeof(*a));
        if (a) {
            a->w = w;
            a->p = p;
        }
        if (!a || pthread_create(&w->parts[p].fetcher, NULL, wm_fetcher_main, a) != 0) {
            free(a);
            snprintf(errstr, errstr_size, "watermarks: cannot start a fetcher thread");
            wm_destroy(w);
            return NULL;
        }
        w->parts[p].fetcher_started = 1;
    }
    return w;
}

void wm_destroy(wm_cache *w) {
    if (!w)
        return;
    if (w->refreshing) {
        pthread_mutex_lock(&w->stop_mu);
        w->stop = 1;
        pthread_cond_broadcast(&w->stop_cv);
        pthread_mutex_unlock(&w->stop_mu);
        pthread_join(w->refresher, NULL);
    }
    if (w->parts) {
        pthread_mutex_destroy(&w->stop_mu);
        pthread_mutex_destroy(&w->notify_mu);
        pthread_cond_destroy(&w->stop_cv);
    }
    for (int p = 0; w->parts && p < w->nparts; p++) {
        wm_part *wp = &w->parts[p];
        if (!wp->fetcher_started)
            continue;
        pthread_mutex_lock(&wp->mu);
        wp->stop = 1;
        pthread_cond_signal(&wp->want);
        pthread_mutex_unlock(&wp->mu);
        pthread_join(wp->fetcher, NULL);
    }
    if (w->rk)
        rd_kafka_destroy(w->rk);
    for (int p = 0; w->parts && p < w->nparts; p++) {
        pthread_mutex_destroy(&w->parts[p].mu);
        pthread_cond_destroy(&w->parts[p].cv);
        pthread_cond_destroy(&w->parts[p].want);
    }
    free(w->parts);
    free(w->topic);
    free(w);
}

static int wm_remaining_ms(const struct timespec *until) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(until->tv_sec - now.tv_sec) * 1000 +
                   (until->tv_nsec - now.tv_nsec) / 1000000L;
    return ms > 0 ? (int)ms : 0;
}

/* Ends the request in flight (number wp->started) with its answer and
 * wakes its waiters; wp->mu held. */
static void wm_publish(wm_cache *w, wm_part *wp, rd_kafka_resp_err_t err, int64_t hi) {
    wp->done = wp->started;
    wp->err = err;
    wp->end = err ? -1 : hi;
    wp->last_err = err;
    if (!err) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        wp->ok_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 1;
    }
    if (!err && hi > wp->last_end)
        wp->last_end = hi;
    /* A ticket taken while this request was in flight needs the next one,
     * and no thread waits to start it: queue it for the fetcher now. */
    if (wp->wanted > wp->started) {
        wp->started++;
        wp->queued = 1;
        wp->fetch_ms = wp->wanted_ms;
        wp->wanted_ms = 0;
        pthread_cond_signal(&wp->want);
    }
    pthread_cond_broadcast(&wp->cv);
    pthread_mutex_lock(&w->notify_mu);
    if (w->notify)
        w->notify(w->notify_opaque, (int32_t)(wp - w->parts), err ? -1 : hi);
    pthread_mutex_unlock(&w->notify_mu);
}

/* The log end offset of partition p in ONE ListOffsets round trip.
 * rd_kafka_query_watermark_offsets would cost two, one after the other
 * (it asks for the low watermark first, KAFKA-1588), and a strong read
 * waits for every round trip of its request. */
static rd_kafka_resp_err_t wm_list_end(wm_cache *w, int32_t p, int timeout_ms,
                                       int64_t *hi) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    /* Timestamp -1 (latest) asks for the log end offset. */
    rd_kafka_topic_partition_list_add(l, w->topic, p)->offset = RD_KAFKA_OFFSET_END;
    rd_kafka_resp_err_t err =
        rd_kafka_offsets_for_times(w->rk, l, timeout_ms > 0 ? timeout_ms : 1);
    if (!err) {
        err = l->elems[0].err;
        *hi = l->elems[0].offset;
    }
    rd_kafka_topic_partition_list_destroy(l);
    return err;
}

/* Runs request number wp->started with wp->mu held on entry and exit; the
 * lock is dropped for the broker round trip so that readers can queue. */
static void wm_fetch_locked(wm_cache *w, int32_t p, int timeout_ms) {
    wm_part *wp = &w->parts[p];
    pthread_mutex_unlock(&wp->mu);
    int64_t hi = -1;
    atomic_fetch_add_explicit(&w->requests, 1, memory_order_relaxed);
    rd_kafka_resp_err_t err = w->fetch ? w->fetch(w->fetch_opaque, p, timeout_ms, &hi)
                                       : wm_list_end(w, p, timeout_ms, &hi);
    pthread_mutex_lock(&wp->mu);
    wm_publish(w, wp, err, hi);
}


/* One per partition: runs the requests readers queue (wm_await). */
static void *wm_fetcher_main(void *arg) {
    wm_fetcher_arg a = *(wm_fetcher_arg *)arg;
    free(arg);
    wm_part *wp = &a.w->parts[a.p];
    pthread_mutex_lock(&wp->mu);
    for (;;) {
        while (!wp->queued && !wp->stop)
            pthread_cond_wait(&wp->want, &wp->mu);
        if (wp->stop)
            break;
        wp->queued = 0;
        wm_fetch_locked(a.w, a.p, wp->fetch_ms);
    }
    pthread_mutex_unlock(&wp->mu);
    return NULL;
}

/* Waits (or fetches) until request number `need` or a later one finished.
 * 0 with *end, or an error: the request's own, or __TIMED_OUT. */
static rd_kafka_resp_err_t wm_await(wm_cache *w, int32_t p, uint64_t need,
                                    const struct timespec *until,
                                    int64_t *end) {
    wm_part *wp = &w->parts[p];
    /* Why a strong read waits for a request numbered `need` (the next one
     * to start, wm_end_offset) rather than taking the answer of the one in
     * flight: that request may have been sent before a write that was
     * acknowledged before this read arrived, so its end offset can lie
     * below that write, and a read fenced on it could miss its own
     * acknowledged write (not linearizable). The first request that starts
     * after the read arrived returns an end offset covering every write
     * acked until then (a read index; docs/ARCHITECTURE.md, "Reads"). Every
     * reader that arrives while request N is in flight waits for N+1, so
     * however many readers there are, each partition sees one round trip
     * at a time; whoever finds none in flight starts it. A later request
     * than `need` is as good (it started later still). */
    (void)w;
    (void)p;
    while (wp->done < need) {
        if (wp->started == wp->done) {
            wp->started++;
            wp->queued = 1;
            wp->fetch_ms = wm_remaining_ms(until);
            pthread_cond_signal(&wp->want);
        }
        if (pthread_cond_timedwait(&wp->cv, &wp->mu, until) == ETIMEDOUT &&
            wp->done < need)
            return RD_KAFKA_RESP_ERR__TIMED_OUT;
    }
    *end = wp->end;
    return wp->err;
}

rd_kafka_resp_err_t wm_end_offset(wm_cache *w, int32_t p, int fresh,
                                  int timeout_ms, int64_t *end) {
    if (p < 0 || p >= w->nparts)
        return RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
    wm_part *wp = &w->parts[p];
    struct timespec until;
    deadline_after_ms(&until, timeout_ms);
    pthread_mutex_lock(&wp->mu);
    /* The first request to start after now (see wm_await for why a strong
     * read may not use the one in flight); /v1/lag and metrics honour no
     * fence and may share the one in flight. */
    uint64_t need = wp->started + 1;
    if (!fresh && wp->started > wp->done)
        need = wp->started;
    rd_kafka_resp_err_t err;
    for (;;) {
        err = wm_await(w, p, need, &until, end);
        /* The request we shared may have run out of its own starter's
         * (shorter) time: try again on ours while we have some. */
        if (err != RD_KAFKA_RESP_ERR__TIMED_OUT || wm_remaining_ms(&until) == 0)
            break;
        need = wp->started + 1;
    }
    pthread_mutex_unlock(&wp->mu);
    return err;
}

/* ---- tickets: strong reads that never wait on a thread ---- */

uint64_t wm_ticket(wm_cache *w, int32_t p, int timeout_ms) {
    wm_part *wp = &w->parts[p];
    pthread_mutex_lock(&wp->mu);
    /* As wm_end_offset(fresh): the first request to start after now. */
    uint64_t need = wp->started + 1;
    if (wp->started == wp->done) {
        wp->started++;
        wp->queued = 1;
        wp->fetch_ms = timeout_ms;
        pthread_cond_signal(&wp->want);
    } else {
        if (need > wp->wanted)
            wp->wanted = need;
        if (timeout_ms > wp->wanted_ms)
            wp->wanted_ms = timeout_ms;
    }
    pthread_mutex_unlock(&wp->mu);
    return need;
}

int wm_ticket_done(wm_cache *w, int32_t p, uint64_t ticket, int64_t *end,
                   rd_kafka_resp_err_t *err) {
    wm_part *wp = &w->parts[p];
    pthread_mutex_lock(&wp->mu);
    int done = wp->done >= ticket;
    if (done) {
        *end = wp->end;
        *err = wp->err;
    }
    pthread_mutex_unlock(&wp->mu);
    return done;
}

/* ---- many partitions in one round trip (strong reads over a range) ---- */

/* Fetches the end offsets of partitions ps[0..n) (each claimed by the
 * caller: request number `started` of its partition) in one ListOffsets
 * round trip per leader, and publishes each result like wm_fetch_locked. */
static void wm_fetch_many(wm_cache *w, const int32_t *ps, int n, int timeout_ms) {
    rd_kafka_resp_err_t err = 0;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (!w->fetch) {
        /* Timestamp -1 (latest) asks for the log end offset. */
        l = rd_kafka_topic_partition_list_new(n);
        for (int i = 0; i < n; i++)
            rd_kafka_topic_partition_list_add(l, w->topic, ps[i])->offset =
                RD_KAFKA_OFFSET_END;
        atomic_fetch_add_explicit(&w->requests, 1, memory_order_relaxed);
        err = rd_kafka_offsets_for_times(w->rk, l, timeout_ms > 0 ? timeout_ms : 1);
    }
    for (int i = 0; i < n; i++) {
        int64_t hi = -1;
        rd_kafka_resp_err_t e = err;
        if (w->fetch) {
            atomic_fetch_add_explicit(&w->requests, 1, memory_order_relaxed);
            e = w->fetch(w->fetch_opaque, ps[i], timeout_ms, &hi);
        } else if (!e) {
            rd_kafka_topic_partition_t *t =
                rd_kafka_topic_partition_list_find(l, w->topic, ps[i]);
            e = !t ? RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION : t->err;
            hi = t ? t->offset : -1;
        }
        wm_part *wp = &w->parts[ps[i]];
        pthread_mutex_lock(&wp->mu);
        wm_publish(w, wp, e, hi);
        pthread_mutex_unlock(&wp->mu);
    }
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
}

/* One pass over the partitions still waiting: claims the idle ones (into
 * mine), returns how many are still waiting on someone else's request;
 * ready[i] set once request need[i] or a later one finished. */
static int wm_claim(wm_cache *w, const int32_t *ps, int n, const uint64_t *need,
                    int *ready, int32_t *mine, int *nmine) {
    int others = 0;
    *nmine = 0;
    for (int i = 0; i < n; i++) {
        if (ready[i])
            continue;
        wm_part *wp = &w->parts[ps[i]];
        pthread_mutex_lock(&wp->mu);
        if (wp->done >= need[i]) {
            ready[i] = 1;
        } else if (wp->started == wp->done) {
            wp->started++;
            mine[(*nmine)++] = ps[i];
        } else {
            others++;
        }
        pthread_mutex_unlock(&wp->mu);
    }
    return others;
}

/* Waits until the first partition in flight elsewhere finishes. 0, or -1
 * past the deadline. */
static int wm_wait_other(wm_cache *w, const int32_t *ps, int n, const int *ready,
                         const struct timespec *until) {
    for (int i = 0; i < n; i++) {
        if (ready[i])
            continue;
        wm_part *wp = &w->parts[ps[i]];
        int rc = 0;
        pthread_mutex_lock(&wp->mu);
        if (wp->started > wp->done)
            rc = pthread_cond_timedwait(&wp->cv, &wp->mu, until);
        pthread_mutex_unlock(&wp->mu);
        return rc == ETIMEDOUT ? -1 : 0;
    }
    return 0;
}

rd_kafka_resp_err_t wm_end_offsets(wm_cache *w, const int32_t *ps, int n,
                                   int timeout_ms, int64_t *ends, int32_t *failed) {
    struct timespec until;
    deadline_after_ms(&until, timeout_ms);
    uint64_t *need = calloc((size_t)n + 1, sizeof(*need));
    int *ready = calloc((size_t)n + 1, sizeof(*ready));
    int32_t *mine = calloc((size_t)n + 1, sizeof(*mine));
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__NO_OFFSET;
    if (!need || !ready || !mine)
        goto out;
    for (int i = 0; i < n; i++) {
        if (ps[i] < 0 || ps[i] >= w->nparts) {
            *failed = ps[i];
            err = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
            goto out;
        }
        /* As in wm_end_offset: only a request that starts after now. */
        pthread_mutex_lock(&w->parts[ps[i]].mu);
        need[i] = w->parts[ps[i]].started + 1;
        pthread_mutex_unlock(&w->parts[ps[i]].mu);
    }
    for (;;) {
        int nmine;
        int others = wm_claim(w, ps, n, need, ready, mine, &nmine);
        if (nmine)
            wm_fetch_many(w, mine, nmine, wm_remaining_ms(&until));
        else if (!others)
            break;
        else if (wm_wait_other(w, ps, n, ready, &until) < 0) {
            err = RD_KAFKA_RESP_ERR__TIMED_OUT;
            for (int i = 0; i < n; i++)
                if (!ready[i]) {
                    *failed = ps[i];
                    break;
                }
            goto out;
        }
    }
    err = 0;
    for (int i = 0; i < n && !err; i++) {
        wm_part *wp = &w->parts[ps[i]];
        pthread_mutex_lock(&wp->mu);
        ends[i] = wp->end;
        err = wp->err;
        pthread_mutex_unlock(&wp->mu);
        if (err)
            *failed = ps[i];
    }
out:
    free(need);
    free(ready);
    free(mine);
    return err;
}

int64_t wm_last_end(wm_cache *w, int32_t p) {
    if (p < 0 || p >= w->nparts)
        return -1;
    pthread_mutex_lock(&w->parts[p].mu);
    int64_t v = w->parts[p].last_end;
    pthread_mutex_unlock(&w->parts[p].mu);
    return v;
}

uint64_t wm_requests(wm_cache *w) {
    return atomic_load_explicit(&w->requests, memory_order_relaxed);
}

/* ---- health: never waits on a broker ---- */

int64_t wm_health(wm_cache *w, int32_t p, rd_kafka_resp_err_t *last_err) {
    if (p < 0 || p >= w->nparts)
        return -1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 1;
    pthread_mutex_lock(&w->parts[p].mu);
    int64_t ok = w->parts[p].ok_ms;
    *last_err = w->parts[p].last_err;
    pthread_mutex_unlock(&w->parts[p].mu);
    return ok ? now_ms - ok : -1;
}

static void wm_refresh_all(wm_cache *w) {
    int32_t *ps = malloc(sizeof(*ps) * (size_t)w->nparts);
    int64_t *ends = malloc(sizeof(*ends) * (size_t)w->nparts);
    int32_t failed = -1;
    if (ps && ends) {
        for (int p = 0; p < w->nparts; p++)
            ps[p] = p;
        wm_end_offsets(w, ps, w->nparts, w->refresh_ms, ends, &failed);
    }
    free(ps);
    free(ends);
}

static void *wm_refresher_main(void *arg) {
    wm_cache *w = arg;
    pthread_mutex_lock(&w->stop_mu);
    while (!w->stop) {
        struct timespec until;
        deadline_after_ms(&until, w->refresh_ms);
        pthread_cond_timedwait(&w->stop_cv, &w->stop_mu, &until);
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->stop_mu);
        wm_refresh_all(w);
        pthread_mutex_lock(&w->stop_mu);
    }
    pthread_mutex_unlock(&w->stop_mu);
    return NULL;
}

int wm_start_refresh(wm_cache *w, int interval_ms, char *errstr, size_t errstr_size) {
    w->refresh_ms = interval_ms;
    wm_refresh_all(w); /* health is known before the first request */
    if (pthread_create(&w->refresher, NULL, wm_refresher_main, w) != 0) {
        snprintf(errstr, errstr_size, "watermarks: pthread_create failed");
        return -1;
    }
    w->refreshing = 1;
    return 0;
}
