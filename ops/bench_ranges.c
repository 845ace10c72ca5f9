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
 *
 * Then the same for ONE hot bucket ("lake"), split inside at keys
 * (`{"bucket","key"}`) over 2, 4 and 8 partitions; what a split inside a
 * bucket costs its writes as the moving part grows (buckets of 5,000 and
 * 20,000 keys, split in the middle: the source counts what the moving
 * keys hold); and a LIST of 1,000 keys of a bucket split over 4 ranges
 * against one of a bucket in one range. While a bucket of each size is
 * split in the middle, and while another of each size is moved whole, a
 * probe writes to the moving part (open loop, JSON API, answered once
 * applied): the p50 and the longest of those writes are the stall the
 * moving range's writers see.
 *
 * Against a deployment (--url, --brokers: a cluster on a real Kafka, say,
 * ops/bench_ranges_kafka.sh) the buckets split by size hold 10,000,
 * 100,000 and 1,000,000 keys; on its own objlogd (the mock cluster keeps
 * about 5 MB a partition) 5,000 and 20,000.
 *
 * Invariant: every figure comes from one run on one objlogd; the producer
 * is reopened after each spread so that it routes by the new map (a
 * producer with the old one would pay a WrongRange resend per write). */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* One bucket's splits: round i cuts at these fractions of the key space. */
static const int rb_key_splits[RB_ROUNDS][4] = {{0}, {4}, {2, 6}, {1, 3, 5, 7}}; /* eighths */
#define RB_STALL_SIZES 3
static const int rb_stall_own[RB_STALL_SIZES] = {5000, 20000, 0};
static const int rb_stall_deployed[RB_STALL_SIZES] = {10000, 100000, 1000000};
#define RB_PROBE_MAX 100000
#define RB_LIST_KEYS 1000
#define RB_LIST_CALLS 200

typedef struct rb_round {
    int partitions;
    double produce_s, apply_s;
} rb_round;

typedef struct rb_handoff {
    char at[48];                 /* bucket, or bucket/key */
    long keys;                   /* keys written so far to the moving part */
    long imported;
    double seconds, held_s;
    int probes, probe_failed;     /* writes to the moving part meanwhile */
    int across;                   /* to a partition another node applies */
    double probe_p50_ms, probe_max_ms;
} rb_handoff;

/* What a write round writes: the eight hot buckets, or one bucket
 * ("lake") whose keys spread evenly over the key space each round. */
enum { RB_BUCKETS_MODE = 0, RB_ONE_BUCKET = 1 };

static void rb_key_of(int i, char *out, size_t n) { snprintf(out, n, "k%08d", i); }

/* bench_thread fn: its share of b->count puts, round robin over the hot
 * buckets (or over lake's key space), keys unique per round. */
static void *rb_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count && !bench_interrupted; i += b->threads) {
        char bucket[32], key[48], etag[32], err[256], k[16];
        if (b->ranges_mode == RB_ONE_BUCKET) {
            snprintf(bucket, sizeof(bucket), "%s", b->ranges_bucket);
            rb_key_of(i, k, sizeof(k));
            snprintf(key, sizeof(key), "%s/r%d", k, b->ranges_round);
        } else {
            snprintf(bucket, sizeof(bucket), "hot-%d", i % RB_BUCKETS);
            snprintf(key, sizeof(key), "r%d/k%08d", b->ranges_round, i);
        }
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

#define RB_SPLIT_TIMEOUT_MS (10 * 60 * 1000L)

/* On a cluster: the coordinator's URL (the active node of partition 0)
 * into out, 1; else 0. */
static int rb_coordinator(bench *b, CURL *h, char *out, size_t n) {
    char url[256], err[256];
    snprintf(url, sizeof(url), "%s/v1/cluster", b->url);
    cli_resp r;
    if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0)
        return 0;
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    cli_resp_free(&r);
    const char *a = json_string_value(json_object_get(
        json_array_get(json_object_get(j, "partitions"), 0), "active"));
    if (a)
        snprintf(out, n, "%s", a);
    json_decref(j);
    return a != NULL;
}

/* POST /v1/ranges/split at bucket (key NULL) or bucket/key, to partition
 * to (-1: the least loaded). */
static int rb_split_to(bench *b, CURL *h, const char *bucket, const char *key, int to,
                       rb_handoff *out) {
    char url[512], body[160], err[256], dest[32] = "", coord[256];
    /* On a cluster, to the coordinator itself: a forwarded request ends
     * with the forward's timeout, and a big range's handoff takes longer. */
    snprintf(url, sizeof(url), "%s/v1/ranges/split",
             rb_coordinator(b, h, coord, sizeof(coord)) ? coord : b->url);
    if (to >= 0)
        snprintf(dest, sizeof(dest), ",\"to_partition\":%d", to);
    if (key)
        snprintf(body, sizeof(body), "{\"bucket\":\"%s\",\"key\":\"%s\"%s}", bucket, key,
                 dest);
    else
        snprintf(body, sizeof(body), "{\"bucket\":\"%s\"%s}", bucket, dest);
    cli_resp r;
    if (cli_http_timeout(h, "POST", url, body, NULL, RB_SPLIT_TIMEOUT_MS, &r, err,
                         sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench --ranges: split at %s: %s\n", bucket, err);
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
    snprintf(out->at, sizeof(out->at), "%s%s%s", bucket, key ? "/" : "", key ? key : "");
    out->imported = (long)json_integer_value(json_object_get(j, "imported_requests"));
    out->seconds = json_real_value(json_object_get(j, "seconds"));
    out->held_s = json_real_value(json_object_get(j, "writes_held_seconds"));
    json_decref(j);
    cli_resp_free(&r);
    return 0;
}

/* ---- the stall a split costs the moving range's writers ---- */

/* One write every RB_PROBE_EVERY_MS, sent whether the ones before it
 * were answered or not (open loop: a write that arrives late in the
 * stall waits less than one that arrives early, as a steady stream of
 * clients would see it), at most RB_PROBE_INFLIGHT at once. */
#define RB_PROBE_EVERY_MS 2
#define RB_PROBE_INFLIGHT 4096

typedef struct rb_probe {
    const bench *b;
    char bucket[32], prefix[32];
    atomic_int stop;
    pthread_t th;
    int n;                       /* writes sent so far */
    int64_t *at_us;              /* when each write was sent */
    double *ms;                  /* how long it took, -1 failed */
} rb_probe;

typedef struct rb_probe_req {
    int i;
    char body[64];
} rb_probe_req;

static size_t rb_discard(char *d, size_t size, size_t n, void *arg) {
    (void)d, (void)arg;
    return size * n;
}

static void rb_probe_send(rb_probe *pr, CURLM *mh, struct curl_slist *hl) {
    CURL *e = curl_easy_init();
    rb_probe_req *rq = malloc(sizeof(*rq));
    if (!e || !rq) {
        free(rq);
        if (e)
            curl_easy_cleanup(e);
        return;
    }
    char url[256];
    rq->i = pr->n++;
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/objects/%sp%06d?timeout_ms=30000",
             pr->b->url, pr->bucket, pr->prefix, rq->i);
    snprintf(rq->body, sizeof(rq->body), "{\"size\":1,\"etag\":\"probe-%d\"}", rq->i);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(e, CURLOPT_PRIVATE, rq);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rb_discard);
    pr->at_us[rq->i] = bench_mono_us();
    pr->ms[rq->i] = -1.0;
    curl_multi_add_handle(mh, e);
}

/* The answers that came: their times. How many are still out. */
static int rb_probe_reap(rb_probe *pr, CURLM *mh) {
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(mh, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        rb_probe_req *rq = NULL;
        long status = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&rq);
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        if (rq && msg->data.result == CURLE_OK && status == 200)
            pr->ms[rq->i] = (double)(bench_mono_us() - pr->at_us[rq->i]) / 1e3;
        curl_multi_remove_handle(mh, msg->easy_handle);
        curl_easy_cleanup(msg->easy_handle);
        free(rq);
    }
    int running = 0;
    curl_multi_perform(mh, &running);
    return running;
}

static void *rb_probe_main(void *arg) {
    rb_probe *pr = arg;
    CURLM *mh = curl_multi_init();
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    int64_t next = bench_mono_us();
    int running = 0;
    while (mh && !bench_interrupted) {
        int stop = atomic_load(&pr->stop);
        if (!stop && bench_mono_us() >= next && pr->n < RB_PROBE_MAX &&
            running < RB_PROBE_INFLIGHT) {
            rb_probe_send(pr, mh, hl);
            next += RB_PROBE_EVERY_MS * 1000;
        }
        running = rb_probe_reap(pr, mh);
        if (stop && running == 0)
            break;
        curl_multi_poll(mh, NULL, 0, 1, NULL);
    }
    rb_probe_reap(pr, mh);
    if (mh)
        curl_multi_cleanup(mh);
    curl_slist_free_all(hl);
    return NULL;
}

static int rb_double_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The probes sent while the handoff ran [from, to): p50, max, failures. */
static void rb_probe_figures(const rb_probe *pr, int64_t from, int64_t to, rb_handoff *out) {
    int total = pr->n;
    double *v = malloc((size_t)(total ? total : 1) * sizeof(*v));
    int n = 0;
    for (int i = 0; v && i < total; i++) {
        if (pr->at_us[i] < from || pr->at_us[i] >= to)
            continue;
        if (pr->ms[i] < 0)
            out->probe_failed++;
        else
            v[n++] = pr->ms[i];
    }
    qsort(v, (size_t)n, sizeof(*v), rb_double_cmp);
    out->probes = n + out->probe_failed;
    out->probe_p50_ms = n ? v[n / 2] : 0;
    out->probe_max_ms = n ? v[n - 1] : 0;
    free(v);
}

static int rb_split(bench *b, CURL *h, const char *bucket, const char *key, rb_handoff *out) {
    return rb_split_to(b, h, bucket, key, -1, out);
}

/* On a cluster (GET /v1/cluster answers), the partitions whose active
 * node is (same) or is not (!same) the one of partition from, into
 * out[0..max): how many; 0 when not a cluster. */
static int rb_node_parts(bench *b, CURL *h, int from, int same, int *out, int max) {
    char url[256], err[256];
    snprintf(url, sizeof(url), "%s/v1/cluster", b->url);
    cli_resp r;
    if (from < 0 || cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0)
        return 0;
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    cli_resp_free(&r);
    json_t *parts = json_object_get(j, "partitions");
    const char *src = json_string_value(
        json_object_get(json_array_get(parts, (size_t)from), "active"));
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(parts, i, e) {
        const char *a = json_string_value(json_object_get(e, "active"));
        if (n < max && (int)i != from && src && a && (strcmp(a, src) == 0) == same)
            out[n++] = (int)i;
    }
    json_decref(j);
    return n;
}

/* The partition the last write round's writes all went to (one bucket
 * in one range), -1 none. */
static int rb_round_partition(const bench *b) {
    int from = -1;
    for (int p = 0; p < BENCH_MAX_PARTS; p++)
        from = b->last_offset[p] >= 0 ? p : from;
    return from;
}

/* Everything one run measures. */
typedef struct rb_run {
    rb_round rs[2][RB_ROUNDS];   /* [RB_BUCKETS_MODE or RB_ONE_BUCKET][round] */
    rb_handoff hs[16];
    int nh;
    rb_handoff stall[RB_STALL_SIZES];
    int nstall;
    rb_handoff whole[RB_STALL_SIZES]; /* buckets moved whole, by size */
    int nwhole;
    double list_ms[2][2];        /* mean LIST of 1,000 keys [one range, four][strong, eventual] */
} rb_run;

static json_t *rb_rounds_json(const bench *b, const rb_round *rs) {
    json_t *a = json_array();
    double base = bench_rate(b->count, rs[0].apply_s);
    for (int i = 0; i < RB_ROUNDS; i++)
        json_array_append_new(
            a, json_pack("{s:i,s:i,s:f,s:f,s:f}", "partitions", rs[i].partitions, "writes",
                         b->count, "seconds", rs[i].apply_s, "applied_per_second",
                         bench_rate(b->count, rs[i].apply_s),
                         "ratio", bench_rate(b->count, rs[i].apply_s) / base));
    return a;
}

static json_t *rb_handoffs_json(const rb_handoff *hs, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(
            a, json_pack("{s:s,s:I,s:I,s:f,s:f}", "split_at", hs[i].at, "keys_before",
                         (json_int_t)hs[i].keys, "imported_requests", (json_int_t)hs[i].imported,
                         "seconds", hs[i].seconds, "writes_held_seconds", hs[i].held_s));
    return a;
}

static json_t *rb_stall_json(const rb_handoff *hs, int n) {
    json_t *a = rb_handoffs_json(hs, n);
    for (int i = 0; i < n; i++)
        json_object_update_new(
            json_array_get(a, (size_t)i),
            json_pack("{s:i,s:i,s:f,s:f,s:b}", "probe_writes", hs[i].probes, "probe_failed",
                      hs[i].probe_failed, "probe_p50_ms", hs[i].probe_p50_ms, "probe_max_ms",
                      hs[i].probe_max_ms, "to_another_node", hs[i].across));
    return a;
}

static void rb_stall_print(const char *what, const rb_handoff *hs, int n) {
    printf("%s (a probe writing to the moving part meanwhile):\n%-22s %10s %10s %12s %7s "
           "%10s %10s\n", what, "split at", "keys moved", "handoff", "writes held", "probes",
           "probe p50", "probe max");
    for (int i = 0; i < n; i++)
        printf("%-22s %10ld %7.1f ms %9.1f ms %7d %7.1f ms %7.1f ms%s%s\n", hs[i].at,
               hs[i].keys, hs[i].seconds * 1e3, hs[i].held_s * 1e3, hs[i].probes,
               hs[i].probe_p50_ms, hs[i].probe_max_ms,
               hs[i].probe_failed ? " (some failed)" : "",
               hs[i].across ? " (to another node)" : "");
}

static void rb_rounds_print(const bench *b, const char *what, const rb_round *rs) {
    double base = bench_rate(b->count, rs[0].apply_s);
    printf("%s\n%-10s %8s %9s %12s %7s\n", what, "partitions", "writes", "seconds",
           "applied/s", "ratio");
    for (int i = 0; i < RB_ROUNDS; i++)
        printf("%-10d %8d %9.3f %12.1f %6.2fx\n", rs[i].partitions, b->count, rs[i].apply_s,
               bench_rate(b->count, rs[i].apply_s),
               bench_rate(b->count, rs[i].apply_s) / base);
}

static void rb_report(const bench *b, const rb_run *r) {
    if (b->json) {
        json_t *j = json_pack(
            "{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:{s:i,s:f,s:f,s:f,s:f}}", "writes_per_round",
            b->count,
            "threads", b->threads, "rounds", rb_rounds_json(b, r->rs[RB_BUCKETS_MODE]),
            "one_bucket_rounds", rb_rounds_json(b, r->rs[RB_ONE_BUCKET]), "handoffs",
            rb_handoffs_json(r->hs, r->nh), "split_inside_by_size",
            rb_stall_json(r->stall, r->nstall), "whole_bucket_by_size",
            rb_stall_json(r->whole, r->nwhole), "list", "keys", RB_LIST_KEYS,
            "one_range_strong_ms", r->list_ms[0][0], "four_ranges_strong_ms", r->list_ms[1][0],
            "one_range_eventual_ms", r->list_ms[0][1], "four_ranges_eventual_ms",
            r->list_ms[1][1]);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench --ranges: %d puts a round, %d threads, %s\n", b->count, b->threads,
           b->url);
    rb_rounds_print(b, "eight buckets of one hot range, split between buckets:",
                    r->rs[RB_BUCKETS_MODE]);
    rb_rounds_print(b, "one hot bucket, split inside at keys:", r->rs[RB_ONE_BUCKET]);
    printf("%-16s %10s %9s %10s %12s\n", "split at", "keys", "records", "handoff",
           "writes held");
    for (int i = 0; i < r->nh; i++)
        printf("%-16s %10ld %9ld %8.1f ms %9.1f ms\n", r->hs[i].at, r->hs[i].keys,
               r->hs[i].imported, r->hs[i].seconds * 1e3, r->hs[i].held_s * 1e3);
    rb_stall_print("split inside a bucket, in the middle, by its size", r->stall, r->nstall);
    rb_stall_print("a whole bucket moved (split at it), by its size", r->whole, r->nwhole);
    for (int c = 0; c < 2; c++)
        printf("LIST of %d keys, %s (%d calls, mean): one range %.3f ms, four ranges on "
               "four partitions %.3f ms (%.2fx)\n",
               RB_LIST_KEYS, c ? "eventual" : "strong", RB_LIST_CALLS, r->list_ms[0][c],
               r->list_ms[1][c], r->list_ms[1][c] / r->list_ms[0][c]);
}

/* The eight buckets' rounds, with their splits between buckets. */
static int rb_buckets_phase(bench *b, CURL *h, rb_run *r) {
    b->ranges_mode = RB_BUCKETS_MODE;
    for (int i = 0; i < RB_BUCKETS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "hot-%d", i);
        if (bench_create_bucket_named(b, h, name) < 0)
            return -1;
    }
    for (int rd = 0; rd < RB_ROUNDS && !bench_interrupted; rd++) {
        for (int s = 0; s < 4 && rb_splits[rd][s]; s++) {
            /* every round wrote count / 8 keys to each bucket; the range
             * split off holds the buckets from the split point to its end */
            if (rb_split(b, h, rb_splits[rd][s], NULL, &r->hs[r->nh]) < 0)
                return -1;
            r->hs[r->nh++].keys = (long)rd * b->count / rb_spread[rd];
        }
        if (rb_write_round(b, h, rd, &r->rs[RB_BUCKETS_MODE][rd]) < 0)
            return -1;
    }
    return 0;
}

/* One bucket's rounds, split inside at eighths of its key space. */
static int rb_one_bucket_phase(bench *b, CURL *h, rb_run *r) {
    b->ranges_mode = RB_ONE_BUCKET;
    snprintf(b->ranges_bucket, sizeof(b->ranges_bucket), "lake");
    if (bench_create_bucket_named(b, h, "lake") < 0)
        return -1;
    for (int rd = 0; rd < RB_ROUNDS && !bench_interrupted; rd++) {
        for (int s = 0; s < 4 && rb_key_splits[rd][s]; s++) {
            char key[16];
            rb_key_of(b->count / 8 * rb_key_splits[rd][s], key, sizeof(key));
            if (rb_split(b, h, "lake", key, &r->hs[r->nh]) < 0)
                return -1;
            r->hs[r->nh++].keys = (long)rd * b->count / rb_spread[rd];
        }
        if (rb_write_round(b, h, rd, &r->rs[RB_ONE_BUCKET][rd]) < 0)
            return -1;
    }
    return 0;
}

/* rb_split of bucket at key while a probe writes to the moving part. */
static int rb_split_probed(bench *b, CURL *h, const char *bucket, const char *key,
                           rb_handoff *out) {
    rb_probe pr = {.b = b};
    snprintf(pr.bucket, sizeof(pr.bucket), "%s", bucket);
    snprintf(pr.prefix, sizeof(pr.prefix), "%s", key ? key : "");
    pr.at_us = malloc(RB_PROBE_MAX * sizeof(*pr.at_us));
    pr.ms = malloc(RB_PROBE_MAX * sizeof(*pr.ms));
    int started = pr.at_us && pr.ms && pthread_create(&pr.th, NULL, rb_probe_main, &pr) == 0;
    struct timespec ts = {0, 300 * 1000000L}; /* the probe under way first */
    nanosleep(&ts, NULL);
    int to = -1; /* on a cluster: a partition of the other node */
    rb_node_parts(b, h, rb_round_partition(b), 0, &to, 1);
    int64_t t0 = bench_mono_us();
    int rc = rb_split_to(b, h, bucket, key, to, out);
    int64_t t1 = bench_mono_us();
    out->across = to >= 0;
    nanosleep(&ts, NULL);
    atomic_store(&pr.stop, 1);
    if (started) {
        pthread_join(pr.th, NULL);
        rb_probe_figures(&pr, t0, t1, out);
    }
    free(pr.at_us);
    free(pr.ms);
    return rc;
}

/* Buckets of each size in rb_stall_*, each split in the middle, then
 * buckets of the same sizes moved whole (a split at the bucket: the
 * source gives its whole stake, nothing is counted). */
static int rb_stall_phase(bench *b, CURL *h, rb_run *r) {
    int count = b->count;
    const int *sizes = b->daemon ? rb_stall_own : rb_stall_deployed;
    for (int i = 0; i < RB_STALL_SIZES && sizes[i] && !bench_interrupted; i++) {
        snprintf(b->ranges_bucket, sizeof(b->ranges_bucket), "size-%d", sizes[i]);
        b->count = sizes[i];
        rb_round unused;
        char key[16];
        rb_key_of(sizes[i] / 2, key, sizeof(key));
        int rc = bench_create_bucket_named(b, h, b->ranges_bucket) < 0 ||
                         rb_write_round(b, h, 0, &unused) < 0 ||
                         rb_split_probed(b, h, b->ranges_bucket, key, &r->stall[i]) < 0
                     ? -1 : 0;
        r->stall[i].keys = sizes[i] / 2;
        r->nstall = i + 1;
        b->count = count;
        if (rc < 0)
            return -1;
    }
    for (int i = 0; i < RB_STALL_SIZES && sizes[i] && !bench_interrupted; i++) {
        snprintf(b->ranges_bucket, sizeof(b->ranges_bucket), "whole-%d", sizes[i]);
        b->count = sizes[i];
        rb_round unused;
        int rc = bench_create_bucket_named(b, h, b->ranges_bucket) < 0 ||
                         rb_write_round(b, h, 0, &unused) < 0 ||
                         rb_split_probed(b, h, b->ranges_bucket, NULL, &r->whole[i]) < 0
                     ? -1 : 0;
        r->whole[i].keys = sizes[i];
        r->nwhole = i + 1;
        b->count = count;
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Mean ms of RB_LIST_CALLS LISTs of bucket's first RB_LIST_KEYS keys, at
 * consistency c. */
static int rb_list_ms(bench *b, CURL *h, const char *bucket, const char *c, double *ms) {
    char url[256], err[256];
    snprintf(url, sizeof(url), "%s/v1/buckets/%s/objects?max_keys=%d&consistency=%s", b->url,
             bucket, RB_LIST_KEYS, c);
    /* Another node of a cluster takes a new map within about a second;
     * until then it may answer 503 SlowDown: a warm-up call waits it out. */
    for (int tries = 0; tries < 50; tries++) {
        cli_resp resp;
        int rc = cli_http(h, "GET", url, NULL, NULL, &resp, err, sizeof(err));
        long status = rc < 0 ? 0 : resp.status;
        if (rc == 0)
            cli_resp_free(&resp);
        if (status != 503)
            break;
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    int64_t t0 = bench_mono_us();
    for (int i = 0; i < RB_LIST_CALLS; i++) {
        cli_resp resp;
        memset(&resp, 0, sizeof(resp));
        int rc = cli_http(h, "GET", url, NULL, NULL, &resp, err, sizeof(err));
        long status = rc < 0 ? 0 : resp.status;
        char code[64] = "", msg[256] = "";
        if (rc == 0 && status != 200)
            cli_error_of(&resp, code, sizeof(code), msg, sizeof(msg));
        if (rc == 0)
            cli_resp_free(&resp);
        if (status != 200) {
            fprintf(stderr, "objlog: bench --ranges: LIST %s: %s%s%s\n", bucket,
                    rc < 0 ? err : code, rc < 0 ? "" : ": ", msg);
            return -1;
        }
    }
    *ms = (double)(bench_mono_us() - t0) / 1e3 / RB_LIST_CALLS;
    return 0;
}

/* A bucket of 1,000 keys in one range, another split over 4 partitions. */
static int rb_list_phase(bench *b, CURL *h, rb_run *r) {
    int count = b->count;
    static const char *const names[2] = {"list-one", "list-four"};
    for (int i = 0; i < 2; i++) {
        snprintf(b->ranges_bucket, sizeof(b->ranges_bucket), "%s", names[i]);
        b->count = RB_LIST_KEYS;
        rb_round unused;
        rb_handoff hs;
        int rc = bench_create_bucket_named(b, h, names[i]) < 0 ||
                 rb_write_round(b, h, 0, &unused) < 0;
        /* On a cluster the four ranges stay on one node's partitions: a
         * read that spans nodes is not gathered (docs/ARCHITECTURE.md). */
        int to[3] = {-1, -1, -1};
        if (i == 1 && rb_node_parts(b, h, rb_round_partition(b), 1, to, 3) < 3)
            to[0] = to[1] = to[2] = -1;
        for (int q = 1; rc == 0 && i == 1 && q < 4; q++) {
            char key[16];
            rb_key_of(RB_LIST_KEYS / 4 * q, key, sizeof(key));
            rc = rb_split_to(b, h, names[i], key, to[q - 1], &hs) < 0;
        }
        b->count = count;
        if (rc || rb_list_ms(b, h, names[i], "strong", &r->list_ms[i][0]) < 0 ||
            rb_list_ms(b, h, names[i], "eventual", &r->list_ms[i][1]) < 0)
            return -1;
    }
    return 0;
}

int bench_ranges_run(bench *b) {
    CURL *h = curl_easy_init();
    rb_run *r = calloc(1, sizeof(*r));
    int rc = CLI_EXIT_FAIL;
    if (h && r && rb_buckets_phase(b, h, r) == 0 && rb_one_bucket_phase(b, h, r) == 0 &&
        rb_stall_phase(b, h, r) == 0 && rb_list_phase(b, h, r) == 0 && !bench_interrupted) {
        rb_report(b, r);
        rc = CLI_EXIT_OK;
    }
    free(r);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
