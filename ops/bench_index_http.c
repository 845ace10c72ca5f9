/* bench_index_http.c: part (c) of `objlog bench --indexes`, the index
 * query end to end: the bench's own `objlogd --embedded`,
 * one bucket of IXH_OBJECTS objects, 1 in 10 with user_metadata.cust =
 * "hit" (IXH_MATCHES of them) and an index on that field, then
 * `GET /v1/buckets/B/indexes/cust/objects?eq=hit&max_keys=1000` (the
 * query) against `GET /v1/buckets/B/objects?max_keys=1000` (LIST), both
 * at consistency=eventual (no fence: the read path alone), each on a
 * kept-alive connection of its own, in alternating blocks so that the
 * box's noise falls on both alike; median, p99 and their ratios.
 * Invariant: the first answer of each must hold exactly IXH_MATCHES keys
 * (the query's all "hit" objects), so a broken answer cannot
 * pass for a fast one. The objects are produced in chunks, each applied
 * before the next (the embedded log keeps ~5 MB a partition). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"
#include "cli.h"

#define IXH_OBJECTS 10000
#define IXH_MATCHES 1000
#define IXH_CHUNK 5000
#define IXH_BLOCKS 20

/* Produces the objects: key obj-NNNNNNNN, cust "hit" for 1 in 10. */
static int ixh_fill(bench *b, CURL *h) {
    for (int i = 0; i < IXH_OBJECTS; i++) {
        char key[32], cust[16], err[256];
        snprintf(key, sizeof(key), "obj-%08d", i);
        snprintf(cust, sizeof(cust), i % 10 == 0 ? "hit" : "c%d", i % 97);
        objlog_user_meta um = {.name = "cust", .value = cust};
        objlog_object_meta m = {.size = (uint64_t)(i % 4096), .etag = "e",
                                .content_type = "text/plain", .user_meta = &um,
                                .n_user_meta = 1};
        if (objlog_producer_put_object(b->p, b->bucket, key, strlen(key), &m, NULL, bench_cb,
                                       b, err, sizeof(err)) < 0) {
            fprintf(stderr, "objlog: bench: put %s: %s\n", key, err);
            return -1;
        }
        if ((i + 1) % IXH_CHUNK)
            continue;
        if (bench_settle(b, h) < 0)
            return -1;
    }
    return 0;
}

/* Keys in a JSON answer's "objects", -1 unless it is a 200; *all_hits 0
 * when some key is not one of the "hit" objects (obj-N with N % 10 == 0;
 * a listing's objects carry no user metadata). */
static long ixh_count(const cli_resp *r, int *all_hits) {
    if (r->status != 200)
        return -1;
    json_t *j = json_loads(r->body, 0, NULL);
    json_t *objs = json_object_get(j, "objects");
    long n = (long)json_array_size(objs);
    *all_hits = 1;
    for (long i = 0; i < n; i++) {
        const char *k = json_string_value(json_object_get(json_array_get(objs, (size_t)i), "key"));
        int num = -1;
        if (!k || sscanf(k, "obj-%d", &num) != 1 || num % 10 != 0)
            *all_hits = 0;
    }
    json_decref(j);
    return n;
}

typedef struct ixh_row {
    const char *what;
    char url[512];
    double *lat;
    int n;
    double p50, p99;
} ixh_row;

/* One GET; its latency in ms, or -1 (said on stderr). */
static double ixh_get(CURL *h, const ixh_row *r, cli_resp *out) {
    char err[256];
    int64_t t0 = bench_mono_us();
    if (cli_http(h, "GET", r->url, NULL, NULL, out, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: %s: %s\n", r->what, err);
        return -1;
    }
    double ms = (double)(bench_mono_us() - t0) / 1000.0;
    if (out->status == 200)
        return ms;
    fprintf(stderr, "objlog: bench: %s: HTTP %ld %.200s\n", r->what, out->status, out->body);
    cli_resp_free(out);
    return -1;
}

/* The first answers: IXH_MATCHES keys each, the query's all hits. */
static int ixh_check(CURL *h[2], ixh_row *r) {
    for (int e = 0; e < 2; e++) {
        cli_resp resp;
        if (ixh_get(h[e], &r[e], &resp) < 0)
            return -1;
        int hits = 0;
        long n = ixh_count(&resp, &hits);
        cli_resp_free(&resp);
        if (n != IXH_MATCHES || (e == 0 && !hits)) {
            fprintf(stderr, "objlog: bench: %s returned %ld keys%s, want %d\n", r[e].what, n,
                    e == 0 && !hits ? " (not all matches)" : "", IXH_MATCHES);
            return -1;
        }
    }
    return 0;
}

static int ixh_measure(CURL *h[2], ixh_row *r, int total) {
    int per = total / IXH_BLOCKS > 0 ? total / IXH_BLOCKS : 1;
    for (int blk = 0; blk < IXH_BLOCKS && !bench_interrupted; blk++)
        for (int e = 0; e < 2; e++)
            for (int k = 0; k < per; k++) {
                cli_resp resp;
                double ms = ixh_get(h[e], &r[e], &resp);
                if (ms < 0)
                    return -1;
                cli_resp_free(&resp);
                r[e].lat[r[e].n++] = ms;
            }
    for (int e = 0; e < 2; e++) {
        qsort(r[e].lat, (size_t)r[e].n, sizeof(double), bench_cmp_double);
        r[e].p50 = bench_percentile(r[e].lat, r[e].n, 0.50);
        r[e].p99 = bench_percentile(r[e].lat, r[e].n, 0.99);
    }
    return bench_interrupted ? -1 : 0;
}

static int ixh_index(bench *b, CURL *h) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/indexes/cust", b->url, b->bucket);
    cli_resp r;
    if (cli_http(h, "PUT", url, "{\"field\":\"user_metadata.cust\"}", NULL, &r, err,
                 sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: PUT index: %s\n", err);
        return -1;
    }
    int ok = r.status == 200;
    if (!ok)
        fprintf(stderr, "objlog: bench: PUT index: HTTP %ld %.200s\n", r.status, r.body);
    cli_resp_free(&r);
    return ok ? 0 : -1;
}

int bench_index_http_run(bench *b) {
    int total = b->rounds * 100;
    CURL *setup = curl_easy_init(), *h[2] = {curl_easy_init(), curl_easy_init()};
    ixh_row r[2] = {{.what = "index query"}, {.what = "LIST"}};
    int rc = -1;
    for (int e = 0; e < 2; e++)
        r[e].lat = calloc((size_t)total + IXH_BLOCKS, sizeof(double));
    if (!setup || !h[0] || !h[1] || !r[0].lat || !r[1].lat)
        goto out;
    /* The index first, on the empty bucket: ready at once, kept by every
     * PUT after it (no backfill to wait for). */
    if (bench_create_bucket(b, setup) < 0 || ixh_index(b, setup) < 0 ||
        bench_producer_open(b) < 0 || ixh_fill(b, setup) < 0)
        goto out;
    snprintf(r[0].url, sizeof(r[0].url),
             "%s/v1/buckets/%s/indexes/cust/objects?eq=hit&max_keys=1000&consistency=eventual",
             b->url, b->bucket);
    snprintf(r[1].url, sizeof(r[1].url),
             "%s/v1/buckets/%s/objects?max_keys=1000&consistency=eventual", b->url, b->bucket);
    if (ixh_check(h, r) < 0 || ixh_measure(h, r, total) < 0)
        goto out;
    printf("HTTP, objlogd --embedded, %d objects (%d matches), consistency=eventual, one "
           "kept-alive connection each, %d alternating blocks:\n", IXH_OBJECTS, IXH_MATCHES,
           IXH_BLOCKS);
    for (int e = 0; e < 2; e++)
        printf("  %-12s %d keys: %d requests, median %.3f ms, p99 %.3f ms\n", r[e].what,
               IXH_MATCHES, r[e].n, r[e].p50, r[e].p99);
    printf("  ratio query/LIST: median %.2f, p99 %.2f\n", r[1].p50 > 0 ? r[0].p50 / r[1].p50 : 0,
           r[1].p99 > 0 ? r[0].p99 / r[1].p99 : 0);
    rc = 0;
out:
    for (int e = 0; e < 2; e++) {
        free(r[e].lat);
        if (h[e])
            curl_easy_cleanup(h[e]);
    }
    if (setup)
        curl_easy_cleanup(setup);
    return rc;
}
