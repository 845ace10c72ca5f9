/* bench_e2e.c: `objlog bench` without a mode flag, end-to-end throughput of
 * one objlogd: produce N puts through libobjlog_producer (ack=logged) from
 * T threads, wait until the last token of every partition is applied, then
 * N GETs over HTTP from T keep-alive connections; one table or one JSON
 * object of the three phases.
 * Invariant: every figure is measured from the first produce call, on the
 * monotonic clock, and only successful operations are counted. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_int.h"
#include "cli.h"
#include "objlog_producer.h"

typedef struct figures {
    double produce_s, apply_s, get_s, p50, p99;
} figures;

static void report(const bench *b, const figures *f) {
    if (b->json) {
        json_t *j = json_pack(
            "{s:i,s:i,s:i,s:{s:i,s:f,s:f},s:{s:i,s:f,s:f},s:{s:i,s:f,s:f,s:f,s:f,s:I,s:s}}",
            "count", b->count, "threads", b->threads, "gets", b->gets,
            "produce", "ops", b->count, "seconds", f->produce_s, "per_second",
            bench_rate(b->count, f->produce_s),
            "apply", "ops", b->count, "seconds", f->apply_s, "per_second",
            bench_rate(b->count, f->apply_s),
            "get", "ops", b->gets, "seconds", f->get_s, "per_second",
            bench_rate(b->gets, f->get_s), "p50_ms", f->p50, "p99_ms", f->p99, "errors",
            (json_int_t)b->get_errors, "consistency", b->consistency);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench: %d puts, %d GETs (%s), %d threads, %s\n", b->count, b->gets,
           b->consistency, b->threads, b->url);
    printf("%-8s %8s %9s %11s\n", "phase", "ops", "seconds", "ops/s");
    printf("%-8s %8d %9.3f %11.1f\n", "produce", b->count, f->produce_s,
           bench_rate(b->count, f->produce_s));
    printf("%-8s %8d %9.3f %11.1f\n", "apply", b->count, f->apply_s,
           bench_rate(b->count, f->apply_s));
    printf("%-8s %8d %9.3f %11.1f   p50 %.3f ms  p99 %.3f ms%s\n", "get", b->gets,
           f->get_s, bench_rate(b->gets, f->get_s), f->p50, f->p99,
           b->get_errors ? "  (errors!)" : "");
    if (b->get_errors)
        printf("get errors: %ld\n", b->get_errors);
}

int bench_e2e_run(bench *b) {
    figures f = {0};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || bench_create_bucket(b, h) < 0 || bench_producer_open(b) < 0)
        goto out;
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, bench_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    f.produce_s = (double)(bench_mono_us() - t0) / 1e6;
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        goto out;
    }
    if (bench_wait_applied(b, h) < 0)
        goto out;
    f.apply_s = (double)(bench_mono_us() - t0) / 1e6;
    b->lat_ms = calloc((size_t)(b->gets ? b->gets : 1), sizeof(double));
    if (!b->lat_ms)
        goto out;
    int64_t g0 = bench_mono_us();
    bench_run_threads(b, bench_get_main);
    f.get_s = (double)(bench_mono_us() - g0) / 1e6;
    qsort(b->lat_ms, (size_t)b->gets, sizeof(double), bench_cmp_double);
    f.p50 = bench_percentile(b->lat_ms, b->gets, 0.50);
    f.p99 = bench_percentile(b->lat_ms, b->gets, 0.99);
    if (bench_interrupted)
        goto out;
    report(b, &f);
    rc = b->get_errors ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
