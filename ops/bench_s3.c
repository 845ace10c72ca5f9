/* bench_s3.c: `objlog bench --s3`, what the S3 endpoint costs against the
 * JSON API for the same reads, in one run of the
 * bench's own objlogd: N keys in one bucket, then LISTs of all of them
 * (ListObjectsV2 vs GET /v1/buckets/B/objects, both max 1000 keys) and
 * HEADs of one key (HeadObject vs HEAD /v1/buckets/B/objects/K), each
 * endpoint on one kept-alive connection, in alternating blocks so that the
 * box's noise falls on both alike.
 * Invariant: the first answer of each kind must hold every key (or the
 * key's exact size), so a broken answer cannot pass for a fast one. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"
#include "bodybuf.h"
#include "cli.h"

#define S3B_BLOCKS 20

/* One request on h; its latency in ms, or -1 when it did not answer 200. */
static double s3b_request(CURL *h, const char *url, int head, bodybuf *body) {
    body->len = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOBODY, head ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_HTTPGET, head ? 0L : 1L);
    if (head)
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bodybuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    int64_t t0 = bench_mono_us();
    long status = 0;
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? (double)(bench_mono_us() - t0) / 1000.0 : -1;
}

static size_t s3b_count(const char *s, const char *needle) {
    size_t n = 0, nl = strlen(needle);
    for (const char *p = s; p && (p = strstr(p, needle)); p += nl)
        n++;
    return n;
}

typedef struct s3b_row {
    const char *op, *endpoint;
    char url[512];
    int head;
    double *lat;
    int n;
} s3b_row;

static void s3b_report(const s3b_row *r, int nrows) {
    printf("%-8s %-6s %8s %9s %9s %9s %9s\n", "op", "api", "requests", "mean_ms", "p50_ms",
           "p99_ms", "s3/json");
    for (int i = 0; i < nrows; i++) {
        double sum = 0, base = 0;
        for (int k = 0; k < r[i].n; k++)
            sum += r[i].lat[k];
        const s3b_row *json = &r[i & ~1];
        for (int k = 0; k < json->n; k++)
            base += json->lat[k];
        double mean = r[i].n ? sum / r[i].n : 0;
        qsort(r[i].lat, (size_t)r[i].n, sizeof(double), bench_cmp_double);
        printf("%-8s %-6s %8d %9.3f %9.3f %9.3f %9.2f\n", r[i].op, r[i].endpoint, r[i].n, mean,
               bench_percentile(r[i].lat, r[i].n, 0.50), bench_percentile(r[i].lat, r[i].n, 0.99),
               base > 0 ? sum / base : 0);
    }
}

/* Runs row's requests block by block, alternating with its pair. */
static int s3b_measure(bench *b, CURL *h[2], s3b_row *r, int total) {
    bodybuf body = {0};
    int per = total / S3B_BLOCKS > 0 ? total / S3B_BLOCKS : 1;
    int rc = 0;
    for (int blk = 0; blk < S3B_BLOCKS && rc == 0 && !bench_interrupted; blk++)
        for (int e = 0; e < 2 && rc == 0; e++)
            for (int k = 0; k < per && rc == 0; k++) {
                double ms = s3b_request(h[e], r[e].url, r[e].head, &body);
                if (ms < 0) {
                    fprintf(stderr, "objlog: bench: %s %s failed: %.200s\n", r[e].op,
                            r[e].url, body.data ? body.data : "");
                    rc = -1;
                } else {
                    r[e].lat[r[e].n++] = ms;
                }
            }
    (void)b;
    bodybuf_free(&body);
    return rc;
}

/* The first answers hold every key: LIST bodies name each once. */
static int s3b_check_lists(CURL *h[2], const s3b_row *r, int keys) {
    bodybuf body = {0};
    int rc = 0;
    const char *needle[2] = {"\"key\":", "<Key>"};
    for (int e = 0; e < 2 && rc == 0; e++) {
        size_t got = s3b_request(h[e], r[e].url, 0, &body) < 0 ? 0
                     : s3b_count(body.data, needle[e]);
        if (got != (size_t)(keys < 1000 ? keys : 1000)) {
            fprintf(stderr, "objlog: bench: %s listed %zu keys, want %d\n", r[e].endpoint, got,
                    keys < 1000 ? keys : 1000);
            rc = -1;
        }
    }
    bodybuf_free(&body);
    return rc;
}

int bench_s3_run(bench *b) {
    int keys = b->list_keys > 0 ? (int)b->list_keys : 1000;
    int lists = b->list_requests > 0 ? b->list_requests : 400;
    int heads = b->s3_heads > 0 ? b->s3_heads : 4000;
    CURL *setup = curl_easy_init(), *h[2] = {curl_easy_init(), curl_easy_init()};
    s3b_row rows[4] = {{.op = "list", .endpoint = "json"}, {.op = "list", .endpoint = "s3"},
                       {.op = "head", .endpoint = "json", .head = 1},
                       {.op = "head", .endpoint = "s3", .head = 1}};
    int rc = CLI_EXIT_FAIL;
    for (int i = 0; i < 4; i++)
        rows[i].lat = calloc((size_t)(i < 2 ? lists : heads) + S3B_BLOCKS * 2, sizeof(double));
    if (!setup || !h[0] || !h[1] || !rows[0].lat || !rows[1].lat || !rows[2].lat ||
        !rows[3].lat || !b->s3_url[0])
        goto out;
    b->count = keys;
    if (bench_create_bucket(b, setup) < 0 || bench_producer_open(b) < 0)
        goto out;
    bench_run_threads(b, bench_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed || bench_wait_applied(b, setup) < 0)
        goto out;
    char key[32];
    bench_key(keys / 2, key, sizeof(key));
    snprintf(rows[0].url, sizeof(rows[0].url), "%s/v1/buckets/%s/objects?max_keys=1000", b->url,
             b->bucket);
    snprintf(rows[1].url, sizeof(rows[1].url), "%s/%s?list-type=2&max-keys=1000", b->s3_url,
             b->bucket);
    snprintf(rows[2].url, sizeof(rows[2].url), "%s/v1/buckets/%s/objects/%s", b->url,
             b->bucket, key);
    snprintf(rows[3].url, sizeof(rows[3].url), "%s/%s/%s", b->s3_url, b->bucket, key);
    if (s3b_check_lists(h, rows, keys) < 0 || s3b_measure(b, h, rows, lists) < 0 ||
        s3b_measure(b, h, rows + 2, heads) < 0)
        goto out;
    printf("s3 endpoint vs JSON API: %d keys in one bucket, one connection each, %d "
           "alternating blocks\n", keys, S3B_BLOCKS);
    s3b_report(rows, 4);
    rc = CLI_EXIT_OK;
out:
    for (int i = 0; i < 4; i++)
        free(rows[i].lat);
    if (setup)
        curl_easy_cleanup(setup);
    for (int e = 0; e < 2; e++)
        if (h[e])
            curl_easy_cleanup(h[e]);
    return rc;
}
