/* bench_phase.c: the phases every bench mode is built from: produce N puts
 * through libobjlog_producer from T threads, wait until every partition
 * applied its last offset, N GETs over keep-alive connections; plus the
 * monotonic clock, the SIGINT flag and the latency statistics they report.
 * Invariant: every figure is measured on the monotonic clock and counts
 * only successful operations; b->lock guards what the producer callback
 * and the worker threads share. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_int.h"
#include "cli.h"
#include "objlog_producer.h"

int64_t bench_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Set by SIGINT while a bench against someone else's objlogd runs. Every
 * loop that issues writes or requests checks it, so the run ends early and
 * bench_clean still removes what was written; a second SIGINT kills
 * (SA_RESETHAND), leaving it. */
volatile sig_atomic_t bench_interrupted;

/* ---- phase 1: produce ---- */

void bench_cb(const objlog_write_result *r, void *opaque) {
    bench *b = opaque;
    pthread_mutex_lock(&b->lock);
    if (r->status == OBJLOG_STATUS_LOGGED && r->partition >= 0 &&
        r->partition < BENCH_MAX_PARTS) {
        if (r->offset > b->last_offset[r->partition])
            b->last_offset[r->partition] = r->offset;
    } else if (b->failed++ == 0) {
        snprintf(b->first_error, sizeof(b->first_error), "%s: %.200s",
                 objlog_status_name(r->status), r->error_message);
    }
    b->done++;
    if (r->token[0])
        snprintf(b->last_token, sizeof(b->last_token), "%s", r->token);
    pthread_mutex_unlock(&b->lock);
}

void bench_key(int i, char *out, size_t n) {
    snprintf(out, n, "obj-%08d", i);
}

void *bench_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count && !bench_interrupted; i += b->threads) {
        char key[32], etag[32], err[256];
        bench_key(i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, b->bucket, key, strlen(key), &m,
                                       NULL, bench_cb, b, err, sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* Runs fn on n threads (bench_thread.index 0..n-1) and joins them. */
int bench_run_n_threads(bench *b, int n, void *(*fn)(void *)) {
    bench_thread *ts = calloc((size_t)n, sizeof(*ts));
    if (!ts)
        return -1;
    for (int i = 0; i < n; i++) {
        ts[i] = (bench_thread){.b = b, .index = i};
        pthread_create(&ts[i].th, NULL, fn, &ts[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(ts[i].th, NULL);
    free(ts);
    return 0;
}

int bench_run_threads(bench *b, void *(*fn)(void *)) {
    return bench_run_n_threads(b, b->threads, fn);
}

int bench_producer_open(bench *b) {
    char err[512];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (!conf ||
        objlog_producer_conf_set(conf, "bootstrap.servers", b->brokers, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", b->url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "ack", "logged", err, sizeof(err))) {
        fprintf(stderr, "objlog: bench: producer config: %s\n", conf ? err : "oom");
        objlog_producer_conf_destroy(conf);
        return -1;
    }
    b->p = objlog_producer_new(conf, err, sizeof(err));
    if (!b->p) {
        fprintf(stderr, "objlog: bench: producer: %s\n", err);
        return -1;
    }
    return 0;
}

/* Remembers a bucket this run made, for bench_clean. 0, or -1 on memory. */
int bench_created(bench *b, const char *bucket) {
    char(*n)[64] = realloc(b->created, (size_t)(b->n_created + 1) * sizeof(*n));
    if (!n) {
        fprintf(stderr, "objlog: bench: out of memory\n");
        return -1;
    }
    b->created = n;
    snprintf(b->created[b->n_created++], sizeof(*n), "%s", bucket);
    return 0;
}

int bench_create_bucket_named(bench *b, CURL *h, const char *bucket) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s", b->url, bucket);
    cli_resp r;
    if (cli_http(h, "PUT", url, "{}", NULL, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: create bucket: cannot reach %s: %s\n", b->url, err);
        return -1;
    }
    int ok = r.status == 200;
    if (!ok) {
        char code[64], msg[256];
        cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
        fprintf(stderr, "objlog: bench: create bucket %s: %s: %s\n", bucket, code, msg);
    }
    cli_resp_free(&r);
    return ok ? bench_created(b, bucket) : -1;
}

int bench_create_bucket(bench *b, CURL *h) {
    snprintf(b->bucket, sizeof(b->bucket), "bench-%d-%lld", (int)getpid(),
             (long long)time(NULL));
    return bench_create_bucket_named(b, h, b->bucket);
}

/* ---- phase 2: wait until applied ---- */

/* A 503 that says the partition is stopped (query/read/fence.c). */
static int bench_stopped(const cli_resp *r) {
    json_t *j = r->body_len ? json_loads(r->body, 0, NULL) : NULL;
    int stopped = json_is_true(json_object_get(json_object_get(j, "error"), "stopped"));
    json_decref(j);
    return stopped;
}

int bench_wait_applied(bench *b, CURL *h) {
    int64_t deadline = bench_mono_us() + BENCH_WAIT_MS * 1000LL;
    for (int p = 0; p < BENCH_MAX_PARTS; p++) {
        if (b->last_offset[p] < 0)
            continue;
        char url[512], err[256];
        snprintf(url, sizeof(url), "%s/v1/writes/%d.%lld?timeout_ms=2000", b->url, p,
                 (long long)b->last_offset[p]);
        for (;;) {
            cli_resp r;
            if (bench_interrupted)
                return -1;
            if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
                fprintf(stderr, "objlog: bench: outcome of %d.%lld: %s\n", p,
                        (long long)b->last_offset[p], err);
                return -1;
            }
            long st = r.status;
            if (st == 200) {
                cli_resp_free(&r);
                break;
            }
            /* A stopped partition (the log dropped events it had not
             * applied, say) never gets there: no use waiting. */
            int stopped = st == 503 && bench_stopped(&r);
            if (st != 503 || bench_mono_us() > deadline || stopped) {
                char code[64], msg[512];
                cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
                fprintf(stderr, "objlog: bench: outcome of %d.%lld: HTTP %ld %s: %s\n", p,
                        (long long)b->last_offset[p], st, code, msg);
                cli_resp_free(&r);
                return stopped ? -2 : -1;
            }
            cli_resp_free(&r);
        }
    }
    return 0;
}

/* Flushes and waits until everything produced so far is applied. 0, or
 * -1 (-2: a partition stopped) said on stderr. */
int bench_settle(bench *b, CURL *h) {
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld writes failed (first: %s)\n", b->failed,
                b->first_error);
        return -1;
    }
    return bench_wait_applied(b, h);
}

/* ---- phase 3: GETs ---- */

void *bench_get_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    CURL *h = curl_easy_init();
    long lo = (long)b->gets * t->index / b->threads;
    long hi = (long)b->gets * (t->index + 1) / b->threads;
    long errors = 0;
    for (long j = lo; j < hi && !bench_interrupted; j++) {
        char key[32], url[512], err[256], tok[80] = "";
        bench_key((int)((j * 7919) % b->count), key, sizeof(key));
        if (!strcmp(b->consistency, "token")) { /* tokens are URL-safe */
            pthread_mutex_lock(&b->lock);
            snprintf(tok, sizeof(tok), "&token=%s", b->last_token);
            pthread_mutex_unlock(&b->lock);
        }
        snprintf(url, sizeof(url), "%s/v1/buckets/%s/objects/%s?consistency=%s%s",
                 b->url, b->bucket, key, b->consistency, tok);
        cli_resp r;
        int64_t t0 = bench_mono_us();
        int rc = cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err));
        b->lat_ms[j] = (double)(bench_mono_us() - t0) / 1000.0;
        if (rc < 0 || r.status != 200)
            errors++;
        if (rc == 0)
            cli_resp_free(&r);
    }
    curl_easy_cleanup(h);
    pthread_mutex_lock(&b->lock);
    b->get_errors += errors;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_percentile(const double *sorted, long n, double q) {
    if (n <= 0)
        return 0;
    long i = (long)(q * (double)(n - 1) + 0.5);
    return sorted[i];
}

double bench_rate(long n, double s) { return s > 0 ? (double)n / s : 0; }
