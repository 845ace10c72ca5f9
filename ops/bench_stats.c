/* bench_stats.c: `objlog bench --stats`, what the usage counters cost.
 *
 * Apply throughput with and without the stats view, on the same log: our
 * `objlogd --embedded` takes N puts (new keys, one bucket) and applies
 * them; then fresh views (`objlogd --brokers` on an empty --data, alone on
 * the machine but for the log holder) replay that whole log, alternately
 * with the stats view and with --test-no-stats, R rounds each. A replay's
 * rate is measured from the first applied event it reports to the last
 * (GET /v1/lag every few ms), so process start-up and the consumer's
 * first fetch are not counted. Then the read latency of GET
 * /v1/buckets/{b}/stats and GET /v1/stats, eventual and strong, from T
 * keep-alive connections on the embedded daemon.
 * Invariant: every replay reads the same whole log into an empty view,
 * and each round swaps which side goes first, so a drift of the machine's
 * load does not favour one side. */
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
#include "keycodec.h"
#include "objlog_producer.h"
#include "rangemap.h"

#define STATS_READS 6
#define STATS_POLL_US 2000

typedef struct stats_fig {
    long events;                 /* events in the log (all partitions) */
    int rounds;
    double rate[2][STATS_ROUNDS_MAX]; /* [with|without stats][round] ev/s */
    /* [bucket stats|global stats|prefix usage][eventual|strong] x p50|p99 */
    double lat[STATS_READS][2];
    long errors[STATS_READS];
    char first_error[STATS_READS][160];
    long usage_gets;
    long usage_rows;             /* rows one usage page reads (first page) */
} stats_fig;

/* One replay of the whole log (events long) into a fresh view: events per
 * second from the first applied event seen to the last. -1 on failure. */
static double stats_replay(bench *b, CURL *h, int no_stats, long events) {
    static const char *const with[] = {"--fetch-wait-ms", "2", NULL};
    static const char *const without[] = {"--fetch-wait-ms", "2", "--test-no-stats", NULL};
    bench_view v;
    double rate = -1;
    if (bench_view_start(b, no_stats ? without : with, &v) < 0) {
        bench_view_stop(&v);
        return -1;
    }
    int64_t t_ready = bench_mono_us(), t_first = 0;
    int64_t deadline = t_ready + BENCH_WAIT_MS * 1000LL;
    long first = 0, got = 0;
    while (bench_mono_us() < deadline) {
        got = bench_lag_sum(h, v.url, "applied");
        int64_t now = bench_mono_us();
        if (got < 0)
            break;
        if (got > 0 && !t_first) {
            t_first = now;
            first = got;
        }
        if (got >= events) {
            /* A log short enough to be applied before our first look is
             * timed from the view's readiness instead (start-up included). */
            if (got > first)
                rate = (double)(got - first) / ((double)(now - t_first) / 1e6);
            else
                rate = (double)got / ((double)(now - t_ready + 1) / 1e6);
            break;
        }
        usleep(STATS_POLL_US);
    }
    if (rate < 0) {
        fprintf(stderr, "objlog: bench: replay %s stats applied %ld of %ld events\n",
                no_stats ? "without" : "with", got, events);
        bench_view_log_tail(&v);
    }
    bench_view_stop(&v);
    return rate;
}

typedef struct stats_read {
    bench *b;
    const char *url;
    long n;                      /* GETs in all */
    double *lat_ms;
    long errors;
    char first_error[160];
} stats_read;

static void *stats_get_main(void *arg) {
    bench_thread *t = arg;
    stats_read *sr = t->b->sread;
    bench *b = sr->b;
    CURL *h = curl_easy_init();
    long lo = sr->n * t->index / b->threads;
    long hi = sr->n * (t->index + 1) / b->threads;
    long errors = 0;
    char first[160] = "";
    for (long j = lo; j < hi; j++) {
        char err[256];
        cli_resp r;
        int64_t t0 = bench_mono_us();
        int rc = cli_http(h, "GET", sr->url, NULL, NULL, &r, err, sizeof(err));
        sr->lat_ms[j] = (double)(bench_mono_us() - t0) / 1000.0;
        if ((rc < 0 || r.status != 200) && errors++ == 0) {
            char code[64] = "", msg[96] = "";
            if (rc == 0)
                cli_error_of(&r, code, sizeof(code), msg, sizeof(msg));
            snprintf(first, sizeof(first), "%.60s %.90s", rc < 0 ? "transport:" : code,
                     rc < 0 ? err : msg);
        }
        if (rc == 0)
            cli_resp_free(&r);
    }
    curl_easy_cleanup(h);
    pthread_mutex_lock(&b->lock);
    if (errors && !sr->first_error[0])
        snprintf(sr->first_error, sizeof(sr->first_error), "%s", first);
    sr->errors += errors;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* p50/p99 of n GETs of url; 0, or -1 on memory. */
static int stats_latency(bench *b, const char *url, long n, stats_fig *f, int which) {
    stats_read sr = {.b = b, .url = url, .n = n};
    sr.lat_ms = calloc((size_t)(n ? n : 1), sizeof(double));
    if (!sr.lat_ms)
        return -1;
    b->sread = &sr;
    bench_run_threads(b, stats_get_main);
    b->sread = NULL;
    qsort(sr.lat_ms, (size_t)n, sizeof(double), bench_cmp_double);
    f->lat[which][0] = bench_percentile(sr.lat_ms, n, 0.50);
    f->lat[which][1] = bench_percentile(sr.lat_ms, n, 0.99);
    f->errors[which] = sr.errors;
    snprintf(f->first_error[which], sizeof(f->first_error[which]), "%s", sr.first_error);
    free(sr.lat_ms);
    return 0;
}

static double best_of(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static const char *stats_read_names[STATS_READS] = {
    "bucket_eventual", "bucket_strong", "global_eventual", "global_strong",
    "usage_eventual", "usage_strong"};

static void stats_report_json(const bench *b, const stats_fig *f) {
    double with = best_of(f->rate[0], f->rounds), without = best_of(f->rate[1], f->rounds);
    json_t *rw = json_array(), *ro = json_array(), *reads = json_object();
    for (int i = 0; i < f->rounds; i++) {
        json_array_append_new(rw, json_real(f->rate[0][i]));
        json_array_append_new(ro, json_real(f->rate[1][i]));
    }
    for (int i = 0; i < STATS_READS; i++)
        json_object_set_new(reads, stats_read_names[i],
                            json_pack("{s:f,s:f,s:I}", "p50_ms", f->lat[i][0], "p99_ms",
                                      f->lat[i][1], "errors", (json_int_t)f->errors[i]));
    json_t *j = json_pack("{s:i,s:I,s:i,s:i,s:i,s:I,s:I,s:{s:o,s:o,s:f,s:f,s:f},s:o}",
        "puts", b->count, "log_events", (json_int_t)f->events, "rounds", f->rounds,
        "threads", b->threads, "gets", b->gets, "usage_gets", (json_int_t)f->usage_gets,
        "usage_rows_per_page", (json_int_t)f->usage_rows,
        "replay_events_per_second", "with_stats", rw, "without_stats", ro,
        "best_with_stats", with, "best_without_stats", without,
        "ratio_with_to_without", without > 0 ? with / without : 0,
        "stats_reads", reads);
    cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

static void stats_report(const bench *b, const stats_fig *f) {
    if (b->json) {
        stats_report_json(b, f);
        return;
    }
    double with = best_of(f->rate[0], f->rounds), without = best_of(f->rate[1], f->rounds);
    printf("objlog bench --stats: %d puts (%ld log events) replayed %d times with and "
           "%d times without the stats view; %d stats GETs each, %d threads\n",
           b->count, f->events, f->rounds, f->rounds, b->gets, b->threads);
    printf("%-26s", "replay (events/s)");
    for (int i = 0; i < f->rounds; i++)
        printf(" %10s%-2d", "round ", i + 1);
    printf(" %12s\n", "best");
    const char *rows[2] = {"with stats view", "without (--test-no-stats)"};
    for (int s = 0; s < 2; s++) {
        printf("%-26s", rows[s]);
        for (int i = 0; i < f->rounds; i++)
            printf(" %12.0f", f->rate[s][i]);
        printf(" %12.0f\n", s ? without : with);
    }
    printf("apply throughput with / without the stats view: %.3f\n",
           without > 0 ? with / without : 0);
    printf("%-36s %10s %10s   (usage: %ld GETs of a %ld-row page)\n", "stats read",
           "p50 ms", "p99 ms", f->usage_gets, f->usage_rows);
    const char *paths[3] = {"GET /v1/buckets/{b}/stats", "GET /v1/stats",
                            "GET /v1/buckets/{b}/usage"};
    for (int i = 0; i < STATS_READS; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s %s", paths[i / 2], i % 2 ? "strong" : "eventual");
        printf("%-36s %10.3f %10.3f\n", name, f->lat[i][0], f->lat[i][1]);
        if (f->errors[i])
            printf("  %ld errors (first: %s)\n", f->errors[i], f->first_error[i]);
    }
}

/* Names of b->stats_nbuckets buckets that the default range map puts on
 * distinct partitions. */
static int stats_pick_buckets(bench *b) {
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    rangemap *rm = rangemap_new_default(nparts, 1);
    int *used = calloc((size_t)nparts, sizeof(int));
    b->stats_buckets = calloc((size_t)b->stats_nbuckets, sizeof(*b->stats_buckets));
    int n = 0;
    for (int i = 0; rm && used && b->stats_buckets && n < b->stats_nbuckets &&
                    i < 100000; i++) {
        char name[64];
        keybuf kb;
        keybuf_init(&kb);
        snprintf(name, sizeof(name), "bench-%d-%d", (int)getpid(), i);
        if (keycodec_route_key(&kb, name, strlen(name), NULL, 0) == 0) {
            int p = rangemap_partition(rm, kb.data, kb.len);
            if (p >= 0 && p < nparts && !used[p]) {
                used[p] = 1;
                snprintf(b->stats_buckets[n++], 64, "%s", name);
            }
        }
        keybuf_free(&kb);
    }
    rangemap_destroy(rm);
    free(used);
    return n == b->stats_nbuckets ? 0 : -1;
}

static void *stats_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    for (int i = t->index; i < b->count; i += b->threads) {
        char key[32], etag[32], err[256];
        const char *bucket = b->stats_buckets[i % b->stats_nbuckets];
        bench_key(i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                                .content_type = "application/octet-stream"};
        if (objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, NULL,
                                       bench_cb, b, err, sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* The workload: b->count puts of new keys, spread over buckets on
 * distinct partitions, all applied by our embedded daemon. Sets f->events
 * to the log's length. */
static int stats_workload(bench *b, CURL *h, stats_fig *f) {
    b->stats_nbuckets = (b->count + STATS_PER_BUCKET - 1) / STATS_PER_BUCKET;
    if (stats_pick_buckets(b) < 0) {
        fprintf(stderr, "objlog: bench: cannot place %d buckets on distinct partitions\n",
                b->stats_nbuckets);
        return -1;
    }
    for (int i = 0; i < b->stats_nbuckets; i++)
        if (bench_create_bucket_named(b, h, b->stats_buckets[i]) < 0)
            return -1;
    if (bench_producer_open(b) < 0)
        return -1;
    bench_run_threads(b, stats_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed) {
        fprintf(stderr, "objlog: bench: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        return -1;
    }
    if (bench_wait_applied(b, h) < 0)
        return -1;
    f->events = bench_lag_sum(h, b->url, "end");
    if (f->events <= 0) {
        fprintf(stderr, "objlog: bench: cannot read the log's end offsets\n");
        return -1;
    }
    return 0;
}

int bench_stats_run(bench *b) {
    stats_fig f = {.rounds = b->rounds};
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || stats_workload(b, h, &f) < 0)
        goto out;
    for (int i = 0; i < f.rounds; i++) {
        for (int s = 0; s < 2; s++) {
            /* Alternate which goes first so a drift of the machine's load
             * does not favour one side. */
            int no_stats = (i & 1) ? !s : s;
            if (!b->json)
                fprintf(stderr, "objlog: bench: round %d/%d: replaying %ld events %s "
                                "the stats view\n", i + 1, f.rounds, f.events,
                        no_stats ? "without" : "with");
            double r = stats_replay(b, h, no_stats, f.events);
            if (r < 0)
                goto out;
            f.rate[no_stats][i] = r;
        }
    }
    /* A usage page reads up to 10,000 rows: fewer of them. */
    f.usage_gets = b->gets / 10 > 0 ? b->gets / 10 : 1;
    long first_bucket = (b->count + b->stats_nbuckets - 1) / b->stats_nbuckets;
    f.usage_rows = first_bucket < 10000 ? first_bucket : 10000;
    rc = CLI_EXIT_OK;
    for (int i = 0; i < STATS_READS; i++) {
        char url[600];
        const char *mode = i % 2 ? "strong" : "eventual";
        if (i < 2)
            snprintf(url, sizeof(url), "%s/v1/buckets/%s/stats?consistency=%s", b->url,
                     b->stats_buckets[0], mode);
        else if (i < 4)
            snprintf(url, sizeof(url), "%s/v1/stats?consistency=%s", b->url, mode);
        else
            snprintf(url, sizeof(url), "%s/v1/buckets/%s/usage?consistency=%s", b->url,
                     b->stats_buckets[0], mode);
        if (stats_latency(b, url, i < 4 ? b->gets : f.usage_gets, &f, i) < 0) {
            rc = CLI_EXIT_FAIL;
            goto out;
        }
        if (f.errors[i])
            rc = CLI_EXIT_FAIL;
    }
    stats_report(b, &f);
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
