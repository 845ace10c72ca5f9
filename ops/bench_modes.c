/* bench_modes.c: `objlog bench --consistency-modes`, what each consistency
 * costs a GET. The same keys, threads and GET count for
 * eventual, token and strong, while a background writer produces at a
 * fixed rate into the same bucket (so the same partition), so strong and
 * token fences have something to wait for. Token reads name the token of
 * the latest write at the time of each request. ListOffsets/s comes from
 * the server's objlog_list_offsets_requests_total, scraped around each
 * phase. The keys are written and the GETs issued by the core bench's
 * phases (bench.c, bench_int.h).
 * Invariant: the three modes run one after the other in one run on the
 * same keys, threads, GET count and writer rate, so their figures differ
 * only by the consistency asked for. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"
#include "cli.h"
#include "objlog_producer.h"

#define MODES_N 3

typedef struct mode_fig {
    const char *name;
    double seconds, p50, p99;
    double list_offsets;         /* requests in the phase; < 0 unknown */
    long errors, writes;         /* GET errors; background writes meanwhile */
} mode_fig;

/* Sum of every sample of counter `name` on /metrics; -1 if absent. */
static double scrape_counter(bench *b, CURL *h, const char *name) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/metrics", b->url);
    cli_resp r;
    if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0)
        return -1;
    double sum = -1;
    size_t nl = strlen(name);
    for (char *line = r.status == 200 ? r.body : NULL; line && *line;) {
        char *next = strchr(line, '\n');
        if (!strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '{')) {
            const char *v = line[nl] == '{' ? strchr(line, '}') : line + nl;
            if (v)
                sum = (sum < 0 ? 0 : sum) + strtod(v + (*v == '}'), NULL);
        }
        line = next ? next + 1 : NULL;
    }
    cli_resp_free(&r);
    return sum;
}

static void *writer_main(void *arg) {
    bench *b = arg;
    int64_t t0 = bench_mono_us();
    for (long i = 0;; i++) {
        int64_t due = t0 + (int64_t)((double)i * 1e6 / b->write_rate);
        int64_t now = bench_mono_us();
        if (due > now)
            usleep((useconds_t)(due - now));
        pthread_mutex_lock(&b->lock);
        int stop = b->bg_stop;
        pthread_mutex_unlock(&b->lock);
        if (stop || bench_interrupted)
            break;
        char key[32], err[256];
        bench_key((int)(i % b->count), key, sizeof(key));
        objlog_object_meta m = {.size = (uint64_t)i, .etag = "bg",
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, b->bucket, key, strlen(key), &m, NULL,
                                       bench_cb, b, err, sizeof(err)) == 0) {
            pthread_mutex_lock(&b->lock);
            b->bg_writes++;
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

static long bg_writes(bench *b) {
    pthread_mutex_lock(&b->lock);
    long n = b->bg_writes;
    pthread_mutex_unlock(&b->lock);
    return n;
}

static void mode_measure(bench *b, CURL *h, mode_fig *f) {
    b->consistency = f->name;
    b->get_errors = 0;
    double lo0 = scrape_counter(b, h, "objlog_list_offsets_requests_total");
    long w0 = bg_writes(b);
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, bench_get_main);
    f->seconds = (double)(bench_mono_us() - t0) / 1e6;
    f->writes = bg_writes(b) - w0;
    double lo1 = scrape_counter(b, h, "objlog_list_offsets_requests_total");
    f->list_offsets = lo0 >= 0 && lo1 >= 0 ? lo1 - lo0 : -1;
    f->errors = b->get_errors;
    qsort(b->lat_ms, (size_t)b->gets, sizeof(double), bench_cmp_double);
    f->p50 = bench_percentile(b->lat_ms, b->gets, 0.50);
    f->p99 = bench_percentile(b->lat_ms, b->gets, 0.99);
}

static void modes_report(const bench *b, const mode_fig *fs) {
    if (b->json) {
        json_t *arr = json_array();
        for (int i = 0; i < MODES_N; i++) {
            const mode_fig *f = &fs[i];
            json_t *lo = f->list_offsets < 0 ? json_null()
                                             : json_real(bench_rate((long)f->list_offsets,
                                                              f->seconds));
            json_array_append_new(arr, json_pack(
                "{s:s,s:i,s:f,s:f,s:f,s:f,s:I,s:o,s:f}", "consistency", f->name,
                "ops", b->gets, "seconds", f->seconds, "per_second",
                bench_rate(b->gets, f->seconds), "p50_ms", f->p50, "p99_ms", f->p99, "errors",
                (json_int_t)f->errors, "list_offsets_per_second", lo,
                "background_writes_per_second", bench_rate(f->writes, f->seconds)));
        }
        json_t *j = json_pack("{s:{s:i,s:i,s:i,s:i,s:o}}", "consistency_modes", "keys",
                              b->count, "threads", b->threads, "gets", b->gets,
                              "write_rate", b->write_rate, "modes", arr);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench --consistency-modes: %d keys, %d GETs per mode, %d threads, "
           "background writer %d writes/s, %s\n", b->count, b->gets, b->threads,
           b->write_rate, b->url);
    printf("%-9s %8s %9s %10s %8s %8s %14s %9s\n", "mode", "GETs", "seconds", "GET/s",
           "p50 ms", "p99 ms", "ListOffsets/s", "writes/s");
    for (int i = 0; i < MODES_N; i++) {
        const mode_fig *f = &fs[i];
        char lo[32];
        if (f->list_offsets < 0)
            snprintf(lo, sizeof(lo), "n/a");
        else
            snprintf(lo, sizeof(lo), "%.1f", bench_rate((long)f->list_offsets, f->seconds));
        printf("%-9s %8d %9.3f %10.1f %8.3f %8.3f %14s %9.1f%s\n", f->name, b->gets,
               f->seconds, bench_rate(b->gets, f->seconds), f->p50, f->p99, lo,
               bench_rate(f->writes, f->seconds), f->errors ? "  (errors!)" : "");
    }
    for (int i = 0; i < MODES_N; i++)
        if (fs[i].errors)
            printf("%s GET errors: %ld\n", fs[i].name, fs[i].errors);
}

int bench_modes_run(bench *b) {
    mode_fig fs[MODES_N] = {{.name = "eventual"}, {.name = "token"}, {.name = "strong"}};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    pthread_t writer;
    int writing = 0;
    if (!h || bench_create_bucket(b, h) < 0 || bench_producer_open(b) < 0)
        goto out;
    bench_run_threads(b, bench_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed || bench_wait_applied(b, h) < 0) {
        if (b->failed)
            fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                    b->failed, b->count, b->first_error);
        goto out;
    }
    b->lat_ms = calloc((size_t)(b->gets ? b->gets : 1), sizeof(double));
    if (!b->lat_ms || pthread_create(&writer, NULL, writer_main, b) != 0)
        goto out;
    writing = 1;
    usleep(200000); /* let the writer reach its rate before measuring */
    for (int i = 0; i < MODES_N && !bench_interrupted; i++)
        mode_measure(b, h, &fs[i]);
    rc = bench_interrupted ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    if (writing) {
        pthread_mutex_lock(&b->lock);
        b->bg_stop = 1;
        pthread_mutex_unlock(&b->lock);
        pthread_join(writer, NULL);
        objlog_producer_flush(b->p, BENCH_WAIT_MS);
    }
    if (rc == CLI_EXIT_OK) {
        modes_report(b, fs);
        for (int i = 0; i < MODES_N; i++)
            if (fs[i].errors)
                rc = CLI_EXIT_FAIL;
        if (b->failed) {
            fprintf(stderr, "objlog: bench: %ld background writes failed (first: %s)\n",
                    b->failed, b->first_error);
            rc = CLI_EXIT_FAIL;
        }
    }
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
