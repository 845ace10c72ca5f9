/* bench_ranges.c: `objlog bench --ranges`, what splitting a hot range buys
 * and what a split costs the writes to it.
 *
 * Eight buckets whose names differ only at the end (hot-0 .. hot-7) share
 * a bucket hash, so they start in one range on one partition: the hot
 * range. Round 1 writes --count puts over them (producer, ack=logged, the
 * bench's threads) and times them until applied; then splits spread the
 * eight buckets over 2, 4 and 8 partitions (`POST /v1/ranges/split`,
 * each answering how long the moving range's writes waited and how many
 * request records moved), and the same write round runs again after
 * each. The table gives applied writes/s per spread and its ratio to one
 * partition, and each handoff's stall. The bench's objlogd has 8
 * partitions and applies on one thread per core (--apply-threads): a
 * split helps as far as partitions land on different lanes.
 *
 * Invariant: every figure comes from one run on one objlogd; the producer
 * is reopened after each spread so that it routes by the new map (a
 * producer with the old one would pay a WrongRange resend per write). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"
#include "cli.h"
#include "objlog_producer.h"

#define RB_BUCKETS 8
#define RB_ROUNDS 4

static const int rb_spread[RB_ROUNDS] = {1, 2, 4, 8};
/* The buckets each round splits at, so that round i spreads the eight
 * buckets over rb_spread[i] ranges, each on its own partition. */
static const char *const rb_splits[RB_ROUNDS][4] = {
    {NULL}, {"hot-4"}, {"hot-2", "hot-6"}, {"hot-1", "hot-3", "hot-5", "hot-7"}};

typedef struct rb_round {
    int partitions;
    double produce_s, apply_s;
} rb_round;

typedef struct rb_handoff {
    char bucket[16];
    long keys;                   /* keys written so far to the moving buckets */
    long imported;
    double seconds, held_s;
} rb_handoff;

/* bench_thread fn: its share of b->count puts, round robin over the hot
 * buckets, keys unique per round. */
static void *rb_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count && !bench_interrupted; i += b->threads) {
        char bucket[16], key[48], etag[32], err[256];
        snprintf(bucket, sizeof(bucket), "hot-%d", i % RB_BUCKETS);
        snprintf(key, sizeof(key), "r%d/k%08d", b->ranges_round, i);
        snprintf(etag, sizeof(etag), "etag-%d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag};
        if (objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, NULL, bench_cb, b,
                                       err, sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* One write round: produce, then wait until applied. 0 or -1 (said). */
static int rb_write_round(bench *b, CURL *h, int round, rb_round *out) {
    b->ranges_round = round;
    for (int p = 0; p < BENCH_MAX_PARTS; p++)
        b->last_offset[p] = -1;
    objlog_producer_destroy(b->p);
    b->p = NULL;
    if (bench_producer_open(b) < 0)
        return -1;
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, rb_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    out->produce_s = (double)(bench_mono_us() - t0) / 1e6;
    if (b->failed) {
        fprintf(stderr, "objlog: bench --ranges: %ld writes failed (first: %s)\n", b->failed,
                b->first_error);
        return -1;
    }
    if (bench_wait_applied(b, h) < 0)
        return -1;
    out->apply_s = (double)(bench_mono_us() - t0) / 1e6;
    out->partitions = rb_spread[round];
    return 0;
}

/* POST /v1/ranges/split at bucket, to the least loaded partition. */
static int rb_split(bench *b, CURL *h, const char *bucket, rb_handoff *out) {
    char url[256], body[96], err[256];
    snprintf(url, sizeof(url), "%s/v1/ranges/split", b->url);
    snprintf(body, sizeof(body), "{\"bucket\":\"%s\"}", bucket);
    cli_resp r;
    if (cli_http(h, "POST", url, body, NULL, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench --ranges: split: %s\n", err);
        return -1;
    }
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    if (!j) {
        char code[64], msg[256];
        cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
        fprintf(stderr, "objlog: bench --ranges: split at %s: %s: %s\n", bucket, code, msg);
        cli_resp_free(&r);
        return -1;
    }
    snprintf(out->bucket, sizeof(out->bucket), "%s", bucket);
    out->imported = (long)json_integer_value(json_object_get(j, "imported_requests"));
    out->seconds = json_real_value(json_object_get(j, "seconds"));
    out->held_s = json_real_value(json_object_get(j, "writes_held_seconds"));
    json_decref(j);
    cli_resp_free(&r);
    return 0;
}

static void rb_report(const bench *b, const rb_round *rs, int nr, const rb_handoff *hs,
                      int nh) {
    double base = bench_rate(b->count, rs[0].apply_s);
    if (b->json) {
        json_t *rounds = json_array(), *handoffs = json_array();
        for (int i = 0; i < nr; i++)
            json_array_append_new(
                rounds, json_pack("{s:i,s:i,s:f,s:f,s:f}", "partitions", rs[i].partitions,
                                  "writes", b->count, "seconds", rs[i].apply_s,
                                  "applied_per_second", bench_rate(b->count, rs[i].apply_s),
                                  "ratio", bench_rate(b->count, rs[i].apply_s) / base));
        for (int i = 0; i < nh; i++)
            json_array_append_new(
                handoffs, json_pack("{s:s,s:I,s:I,s:f,s:f}", "split_at", hs[i].bucket,
                                    "keys_before", (json_int_t)hs[i].keys, "imported_requests",
                                    (json_int_t)hs[i].imported, "seconds", hs[i].seconds,
                                    "writes_held_seconds", hs[i].held_s));
        json_t *j = json_pack("{s:i,s:i,s:o,s:o}", "writes_per_round", b->count, "threads",
                              b->threads, "rounds", rounds, "handoffs", handoffs);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench --ranges: %d buckets of one hot range, %d puts a round, %d "
           "threads, %s\n",
           RB_BUCKETS, b->count, b->threads, b->url);
    printf("%-10s %8s %9s %12s %7s\n", "partitions", "writes", "seconds", "applied/s", "ratio");
    for (int i = 0; i < nr; i++)
        printf("%-10d %8d %9.3f %12.1f %6.2fx\n", rs[i].partitions, b->count, rs[i].apply_s,
               bench_rate(b->count, rs[i].apply_s),
               bench_rate(b->count, rs[i].apply_s) / base);
    printf("%-10s %10s %9s %10s %12s\n", "split at", "keys", "records", "handoff", "writes held");
    for (int i = 0; i < nh; i++)
        printf("%-10s %10ld %9ld %8.1f ms %9.1f ms\n", hs[i].bucket, hs[i].keys,
               hs[i].imported, hs[i].seconds * 1e3, hs[i].held_s * 1e3);
}

int bench_ranges_run(bench *b) {
    CURL *h = curl_easy_init();
    rb_round rs[RB_ROUNDS];
    rb_handoff hs[8];
    int nh = 0, rc = CLI_EXIT_FAIL;
    for (int i = 0; h && i < RB_BUCKETS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "hot-%d", i);
        if (bench_create_bucket_named(b, h, name) < 0)
            goto out;
    }
    for (int r = 0; h && r < RB_ROUNDS && !bench_interrupted; r++) {
        for (int s = 0; s < 4 && rb_splits[r][s]; s++) {
            /* every round wrote count / 8 keys to each bucket; the range
             * split off holds the buckets from the split point to its end */
            if (rb_split(b, h, rb_splits[r][s], &hs[nh]) < 0)
                goto out;
            hs[nh++].keys = (long)r * b->count / rb_spread[r];
        }
        if (rb_write_round(b, h, r, &rs[r]) < 0)
            goto out;
    }
    if (!h || bench_interrupted)
        goto out;
    rb_report(b, rs, RB_ROUNDS, hs, nh);
    rc = CLI_EXIT_OK;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
