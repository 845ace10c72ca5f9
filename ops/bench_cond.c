/* bench_cond.c: `objlog bench --conditional`, the round trip of a
 * conditional PUT through libobjlog_producer with ack=applied:
 * produce, Kafka ack, apply with the precondition decided at the
 * event's log position, outcome back to the producer.
 *
 * Open loop: one pacing thread issues write i at t0 + i/rate whatever the
 * completions do, and each latency is measured from that scheduled time,
 * so a stall shows as latency (no coordinated omission). Writes come in
 * pairs on one key: If-None-Match: * creates it, then If-Match with the
 * etag just written replaces it. Both go to the key's partition in order,
 * so both must succeed; any other outcome counts as a failure.
 * Invariant: only completed writes are in the figures, and every accepted
 * write completes (the producer is flushed) before the next rate starts. */
#define _GNU_SOURCE
#include "bench_cond.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "objlog_producer.h"

#define COND_FLUSH_MS 120000
#define COND_WARMUP 200

typedef struct cond_run {
    int rate;
    long planned;
    int64_t t0_ns;
    int64_t *sched_ns;           /* per write: when it was due */
    double *lat_ms;              /* per completed write */
    pthread_mutex_t lock;
    long completed, failed;
    int64_t last_done_ns;
    char first_error[320];
} cond_run;

typedef struct cond_write {
    cond_run *run;
    long i;
} cond_write;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

int bench_cond_parse_rates(bench_cond_args *a, const char *list) {
    a->n_rates = 0;
    const char *s = list;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 100000 || (*end && *end != ',') ||
            a->n_rates == BENCH_COND_MAX_RATES)
            return -1;
        a->rates[a->n_rates++] = (int)v;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -1; /* trailing comma */
    }
    return a->n_rates ? 0 : -1;
}

static void cond_cb(const objlog_write_result *res, void *opaque) {
    cond_write *w = opaque;
    cond_run *r = w->run;
    int64_t t = now_ns();
    pthread_mutex_lock(&r->lock);
    if (res->status == OBJLOG_STATUS_OK) {
        r->lat_ms[r->completed++] = (double)(t - r->sched_ns[w->i]) / 1e6;
    } else if (r->failed++ == 0) {
        snprintf(r->first_error, sizeof(r->first_error), "%s %s %.200s",
                 objlog_status_name(res->status), res->error_code, res->error_message);
    }
    r->last_done_ns = t;
    pthread_mutex_unlock(&r->lock);
    free(w);
}

static void cond_fail(cond_run *r, const char *why) {
    pthread_mutex_lock(&r->lock);
    if (r->failed++ == 0)
        snprintf(r->first_error, sizeof(r->first_error), "%.300s", why);
    pthread_mutex_unlock(&r->lock);
}

/* Write i of a run: even = create key i/2, odd = replace it by etag. */
static void cond_issue(objlog_producer *p, const char *bucket, cond_run *r, long i) {
    char key[32], etag[32], prev[32], err[256];
    snprintf(key, sizeof(key), "k-%d-%08ld", r->rate, i / 2);
    snprintf(etag, sizeof(etag), "e-%d-%ld", r->rate, i);
    snprintf(prev, sizeof(prev), "e-%d-%ld", r->rate, i - 1);
    objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                            .content_type = "application/octet-stream"};
    objlog_write_opts o = {.if_none_match = !(i & 1), .if_match = (i & 1) ? prev : NULL};
    cond_write *w = malloc(sizeof(*w));
    if (!w) {
        cond_fail(r, "out of memory");
        return;
    }
    *w = (cond_write){.run = r, .i = i};
    if (objlog_producer_put_object(p, bucket, key, strlen(key), &m, &o, cond_cb, w, err,
                                   sizeof(err)) < 0) {
        free(w);
        cond_fail(r, err);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, long n, double q) {
    return n > 0 ? sorted[(long)(q * (double)(n - 1) + 0.5)] : 0;
}

/* Outcome delivery cost: HTTP requests the producer made for outcomes per
 * completed write during this rate's run (batched, not one
 * round trip per write). */
static double cond_requests_per_write(const objlog_producer_stats *before,
                                      const objlog_producer_stats *after) {
    uint64_t writes = after->writes_completed - before->writes_completed;
    return writes ? (double)(after->outcome_requests - before->outcome_requests) /
                        (double)writes
                  : 0;
}

static void cond_report(const bench_cond_args *a, cond_run *r, double req_per_write) {
    qsort(r->lat_ms, (size_t)r->completed, sizeof(double), cmp_double);
    double secs = (double)(r->last_done_ns - r->t0_ns) / 1e9;
    double achieved = secs > 0 ? (double)r->completed / secs : 0;
    double p50 = pct(r->lat_ms, r->completed, 0.50), p99 = pct(r->lat_ms, r->completed, 0.99);
    double max = r->completed ? r->lat_ms[r->completed - 1] : 0;
    if (a->json) {
        json_t *j = json_pack("{s:s,s:i,s:i,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:f}", "bench", "conditional",
                              "target_per_second", r->rate, "seconds", a->seconds, "planned",
                              (json_int_t)r->planned, "completed", (json_int_t)r->completed,
                              "achieved_per_second", achieved, "p50_ms", p50, "p99_ms", p99,
                              "max_ms", max, "failures", (json_int_t)r->failed,
                              "outcome_requests_per_write", req_per_write);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    } else {
        printf("%8d %8ld %10.1f %9.3f %9.3f %9.3f %8ld %9.3f%s\n", r->rate, r->completed,
               achieved, p50, p99, max, r->failed, req_per_write,
               p99 < 20.0 ? "" : "  (p99 over the 20 ms goal)");
    }
    if (r->failed)
        fprintf(stderr, "objlog: bench: rate %d: %ld failures, first: %s\n", r->rate, r->failed,
                r->first_error);
    fflush(stdout);
}

static int cond_run_rate(const bench_cond_args *a, objlog_producer *p, const char *bucket,
                         int rate) {
    cond_run r = {.rate = rate, .planned = (long)rate * a->seconds};
    r.sched_ns = calloc((size_t)r.planned, sizeof(int64_t));
    r.lat_ms = calloc((size_t)r.planned, sizeof(double));
    if (!r.sched_ns || !r.lat_ms) {
        free(r.sched_ns);
        free(r.lat_ms);
        fprintf(stderr, "objlog: bench: out of memory\n");
        return -1;
    }
    pthread_mutex_init(&r.lock, NULL);
    objlog_producer_stats before, after;
    objlog_producer_stats_get(p, &before);
    r.t0_ns = now_ns() + 10 * 1000000; /* a little lead so write 0 is not late */
    int stopped = 0;
    for (long i = 0; i < r.planned; i++) {
        if (a->stop && *a->stop) {
            stopped = 1;
            break;
        }
        r.sched_ns[i] = r.t0_ns + i * 1000000000LL / rate;
        sleep_until_ns(r.sched_ns[i]);
        cond_issue(p, bucket, &r, i);
    }
    int rc = objlog_producer_flush(p, COND_FLUSH_MS);
    if (rc < 0)
        fprintf(stderr, "objlog: bench: rate %d: writes still pending after %d ms\n", rate,
                COND_FLUSH_MS);
    objlog_producer_stats_get(p, &after);
    if (!stopped) /* a cut-short rate's figures would mislead */
        cond_report(a, &r, cond_requests_per_write(&before, &after));
    int ok = !stopped && rc == 0 && r.failed == 0 && r.completed == r.planned;
    pthread_mutex_destroy(&r.lock);
    free(r.sched_ns);
    free(r.lat_ms);
    return ok ? 0 : -1;
}

static objlog_producer *cond_producer(const bench_cond_args *a) {
    char err[512];
    objlog_producer_conf *c = objlog_producer_conf_new();
    if (!c || objlog_producer_conf_set(c, "bootstrap.servers", a->brokers, err, sizeof(err)) ||
        objlog_producer_conf_set(c, "query.url", a->url, err, sizeof(err)) ||
        objlog_producer_conf_set(c, "ack", "applied", err, sizeof(err)) ||
        (a->linger && objlog_producer_conf_set(c, "kafka.linger.ms", a->linger, err,
                                               sizeof(err)))) {
        fprintf(stderr, "objlog: bench: producer config: %s\n", c ? err : "out of memory");
        objlog_producer_conf_destroy(c);
        return NULL;
    }
    objlog_producer *p = objlog_producer_new(c, err, sizeof(err));
    if (!p)
        fprintf(stderr, "objlog: bench: producer: %s\n", err);
    return p;
}

static void warm_cb(const objlog_write_result *res, void *opaque) {
    (void)res;
    (void)opaque;
}

/* The bucket (its name also into created once it exists), then a few
 * writes so connections and metadata are warm before the first measured
 * write. */
static int cond_prepare(objlog_producer *p, char *bucket, size_t bn, char *created,
                        size_t cn) {
    char err[256];
    objlog_write_result res;
    snprintf(bucket, bn, "bcond-%d-%lld", (int)getpid(), (long long)time(NULL));
    if (objlog_producer_create_bucket_sync(p, bucket, NULL, OBJLOG_VERSIONING_UNVERSIONED, NULL,
                                           &res, err, sizeof(err)) < 0 ||
        res.status != OBJLOG_STATUS_OK) {
        fprintf(stderr, "objlog: bench: create bucket %s: %s%s %s\n", bucket, err,
                res.error_code, res.error_message);
        return -1;
    }
    snprintf(created, cn, "%s", bucket);
    for (int i = 0; i < COND_WARMUP; i++) {
        char key[32];
        snprintf(key, sizeof(key), "warm-%d", i);
        objlog_object_meta m = {.size = 1, .etag = "w"};
        if (objlog_producer_put_object(p, bucket, key, strlen(key), &m, NULL, warm_cb, NULL, err,
                                       sizeof(err)) < 0) {
            fprintf(stderr, "objlog: bench: warm-up: %s\n", err);
            return -1;
        }
    }
    return objlog_producer_flush(p, COND_FLUSH_MS);
}

int bench_cond_run(const bench_cond_args *a, char *created, size_t created_size) {
    created[0] = '\0';
    objlog_producer *p = cond_producer(a);
    if (!p)
        return CLI_EXIT_FAIL;
    char bucket[64];
    int rc = CLI_EXIT_OK;
    if (cond_prepare(p, bucket, sizeof(bucket), created, created_size) < 0) {
        objlog_producer_destroy(p);
        return CLI_EXIT_FAIL;
    }
    if (!a->json) {
        printf("objlog bench --conditional: If-None-Match/If-Match PUT pairs, ack=applied, "
               "open loop, %d s per rate, %s\n", a->seconds, a->url);
        printf("%8s %8s %10s %9s %9s %9s %8s %9s\n", "target/s", "writes", "achieved/s", "p50 ms",
               "p99 ms", "max ms", "failures", "req/write");
    }
    for (int i = 0; i < a->n_rates && !(a->stop && *a->stop); i++)
        if (cond_run_rate(a, p, bucket, a->rates[i]) < 0)
            rc = CLI_EXIT_FAIL;
    objlog_producer_destroy(p);
    return rc;
}
