/* bench_lifecycle.c: objlog bench --lifecycle: how fast
 * the lifecycle worker expires a backlog, and what that backlog costs
 * foreground writes. Against our own objlogd (embedded log), started with
 * the worker every 100 ms and its clock two days ahead (the test-only
 * offset, set through the environment the daemon inherits), so every
 * object of a one-day rule is due at once:
 *   1. N PUTs into bucket A, nothing expiring: the baseline PUT rate;
 *   2. N PUTs into bucket B (untimed), then a rule expiring all of B;
 *   3. at once N PUTs into bucket C while the worker drains B: the PUT
 *      rate with a backlog;
 *   4. until B's status says nothing is due and N expired: expirations
 *      per second over the drain (from the rule's outcome to the end).
 * Invariant: all three phases run in one process against one daemon, so
 * the ratio is of two rates measured minutes apart on the same machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_int.h"

#define LC_POLL_US 50000
#define LC_DRAIN_MAX_US (1800LL * 1000000)

/* Times N PUTs into bucket (created first); puts/s, or -1. */
static double lc_put_phase(bench *b, CURL *h, const char *bucket) {
    if (bench_create_bucket_named(b, h, bucket) < 0)
        return -1;
    snprintf(b->bucket, sizeof(b->bucket), "%.63s", bucket); /* at most b->bucket holds */
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, bench_produce_main);
    if (bench_settle(b, h) < 0)
        return -1;
    return bench_rate(b->count, (double)(bench_mono_us() - t0) / 1e6);
}

static int lc_set_rule(bench *b, CURL *h, const char *bucket) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/lifecycle", b->url, bucket);
    cli_resp r;
    const char *rule = "{\"rules\":[{\"id\":\"all\",\"status\":\"Enabled\","
                       "\"expiration\":{\"days\":1}}]}";
    if (cli_http(h, "PUT", url, rule, NULL, &r, err, sizeof(err)) < 0 || r.status != 200) {
        fprintf(stderr, "objlog: bench: set lifecycle: %s\n", r.body ? r.body : err);
        cli_resp_free(&r);
        return -1;
    }
    cli_resp_free(&r);
    return 0;
}

/* Polls B's status until N expired and nothing is due; seconds, or -1. */
static double lc_drain(bench *b, CURL *h, const char *bucket, int64_t t0, double *worker_rate) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/lifecycle/status", b->url, bucket);
    while (!bench_interrupted && bench_mono_us() - t0 < LC_DRAIN_MAX_US) {
        cli_resp r;
        if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0)
            return -1;
        json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
        cli_resp_free(&r);
        long long expired = cli_jint(j, "expired_total"), due = cli_jint(j, "due");
        *worker_rate = json_real_value(json_object_get(j, "expirations_per_second"));
        json_decref(j);
        if (expired >= b->count && due == 0)
            return (double)(bench_mono_us() - t0) / 1e6;
        usleep(LC_POLL_US);
    }
    fprintf(stderr, "objlog: bench: the backlog did not drain\n");
    return -1;
}

int bench_lifecycle_run(bench *b) {
    CURL *h = curl_easy_init();
    char base[64], backlog[80], fore[80];
    int rc = CLI_EXIT_FAIL;
    snprintf(base, sizeof(base), "bench-lc-%d", (int)getpid());
    snprintf(backlog, sizeof(backlog), "%s-backlog", base);
    snprintf(fore, sizeof(fore), "%s-fore", base);
    if (!h || bench_producer_open(b) < 0)
        goto out;
    double r0 = lc_put_phase(b, h, base);
    if (r0 < 0 || lc_put_phase(b, h, backlog) < 0 || lc_set_rule(b, h, backlog) < 0)
        goto out;
    int64_t t_rule = bench_mono_us();
    double r1 = lc_put_phase(b, h, fore);
    double worker_rate = 0;
    double drain_s = r1 < 0 ? -1 : lc_drain(b, h, backlog, t_rule, &worker_rate);
    if (drain_s < 0)
        goto out;
    double exp_rate = bench_rate(b->count, drain_s);
    if (b->json)
        printf("{\"count\":%d,\"threads\":%d,\"puts_per_s\":%.1f,"
               "\"puts_per_s_with_backlog\":%.1f,\"ratio\":%.3f,"
               "\"expirations_per_s\":%.1f,\"drain_s\":%.2f}\n",
               b->count, b->threads, r0, r1, r1 / r0, exp_rate, drain_s);
    else
        printf("lifecycle: %d objects, %d producer threads\n"
               "  PUT rate, no backlog:        %10.1f puts/s\n"
               "  PUT rate, backlog draining:  %10.1f puts/s (ratio %.3f)\n"
               "  expirations:                 %10.1f /s (%d in %.2f s; worker's last "
               "pass %.1f /s)\n",
               b->count, b->threads, r0, r1, r1 / r0, exp_rate, b->count, drain_s,
               worker_rate);
    rc = CLI_EXIT_OK;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
