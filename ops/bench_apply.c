/* bench_apply.c: `objlog bench --apply`, how fast the view applies PUT
 * events: live, while they are produced, and when a new view
 * rebuilds itself from the log, both with the usage counters on, each also
 * as a ratio to RocksDB alone writing the same rows with objlogd's store
 * options. One run, one table, four phases:
 *   apply-live             N PUTs of new keys into B unversioned buckets
 *                          (placed evenly on the partitions by the default
 *                          range map), produced from T threads as fast as
 *                          the producer goes while the view applies them:
 *                          N / (first produce to the last offset of every
 *                          partition applied, GET /v1/writes/P.O);
 *   apply-rebuild          a second objlogd, a view of the same log on an
 *                          empty --data with a consumer group of its own:
 *                          the log's events (the B CreateBuckets included)
 *                          / (its OBJLOG_READY line to every partition's
 *                          end offset applied, GET /v1/lag);
 *   rocksdb-raw, rocksdb-apply-pattern: the same events straight into a
 *                          store, without Kafka or the state machine
 *                          (bench_apply_rocks.c, which also counts apply's
 *                          reads and writes per event).
 * The embedded log keeps ~5 MB per partition and a rebuild needs it whole:
 * a run that would not fit is refused before it starts
 * (bench_apply_check), and a view that finds events gone stops the
 * partition, which ends the run with the view's reason.
 * Invariant: the rebuild view is stopped (its process group) and its dir
 * removed on every way out of bench_apply_run, failures and SIGINT
 * included. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_apply.h"
#include "bench_int.h"
#include "cli.h"
#include "control.h"
#include "keycodec.h"
#include "objlog.pb-c.h"
#include "objlog_producer.h"
#include "rangemap.h"

/* Of the ~5 MB (5 MiB) the embedded log keeps per partition, what a run
 * may fill: the estimate below leaves out the record batches' headers. */
#define APPLY_LOG_BUDGET ((size_t)4 << 20)
/* A Kafka v2 record around its key and value: length, attributes,
 * timestamp and offset deltas, key and value lengths, header count. */
#define APPLY_RECORD_OVERHEAD 16
#define APPLY_POLL_MIN_US 5000
#define APPLY_POLL_MAX_US 100000
#define APPLY_PROGRESS_US 2000000
/* Bucket names tried to place nbuckets of them evenly. */
#define APPLY_PLACE_TRIES(n) (64L * (n) + 1000)
#define APPLY_LOST_HINT                                                                     \
    "the log no longer holds every event (the embedded log keeps ~5 MB per partition "   \
    "and drops the oldest beyond that): use more --partitions or a smaller --count"

enum { PH_LIVE, PH_REBUILD, PH_RAW, PH_PATTERN, PH_N };
static const char *const phase_names[PH_N] = {"apply-live", "apply-rebuild", "rocksdb-raw",
                                              "rocksdb-apply-pattern"};

typedef struct apply_run {
    bench *b;
    bench_apply_load load;
    char (*buckets)[64];
    int *part;                   /* bucket j's partition */
    long stamp;                  /* in the bucket names: time(NULL) % 100000 */
    int64_t end[BENCH_MAX_PARTS];   /* the log's end offsets after apply-live */
    long log_events;
    long events[PH_N];
    double seconds[PH_N];
    bench_apply_rocks_fig rocks[2];     /* raw, apply pattern */
    bench_view view;             /* the rebuild view while it runs */
    pid_t view_pid;              /* ... and what it was, for the report */
    char view_dir[64];
    char group[96];
    long applied_at_ready;       /* events the rebuild view had applied at READY */
} apply_run;

/* The counter comes first: the partition is the top 16 bits of the
 * name's FNV-1a hash (keycodec_bucket_hash), which its last bytes hardly
 * change, so names that differ only at the end share a partition. */
static void apply_bucket_name(char *out, size_t n, long stamp, long k) {
    snprintf(out, n, "ba-%ld-%d-%ld", k, (int)getpid(), stamp);
}

/* ---- what fits in the embedded log ---- */

/* Bytes PUT event i into bucket takes in the log: value and Kafka key as
 * the producer encodes them, and the record around them. */
static size_t apply_event_bytes(const char *bucket, long i) {
    uint8_t rid[OBJLOG_REQUEST_ID_LEN] = {0};
    char key[32], etag[32];
    bench_key((int)i, key, sizeof(key));
    snprintf(etag, sizeof(etag), "etag-%ld", i);
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__ObjectMeta om = OBJLOG__OBJECT_META__INIT;
    Objlog__PutObject put = OBJLOG__PUT_OBJECT__INIT;
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = CONTROL_DEFAULT_EPOCH;
    ev.timestamp_ms = (int64_t)time(NULL) * 1000;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    om.size = (uint64_t)i;
    om.etag = etag;
    om.content_type = BENCH_APPLY_CONTENT_TYPE;
    put.meta = &om;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &put;
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    size_t n = objlog__event__get_packed_size(&ev) + kb.len + APPLY_RECORD_OVERHEAD;
    keybuf_free(&kb);
    return n;
}

/* Events on the fullest partition when count PUTs go round nbuckets
 * buckets placed evenly on nparts partitions, CreateBuckets included. */
static long apply_fullest(long count, int nbuckets, int nparts) {
    long most = 0;
    for (int p = 0; p < nparts && p < nbuckets; p++) {
        long n = 0;
        for (int j = p; j < nbuckets; j += nparts)
            n += 1 + (count > j ? (count - 1 - j) / nbuckets + 1 : 0);
        most = n > most ? n : most;
    }
    return most;
}

static size_t apply_fullest_bytes(long count, int nbuckets, int nparts, const char *name) {
    return (size_t)apply_fullest(count, nbuckets, nparts) *
           apply_event_bytes(name, count - 1);
}

int bench_apply_check(const bench *b, char *why, size_t n) {
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    char name[64]; /* the longest a placed bucket name gets */
    apply_bucket_name(name, sizeof(name), 99999, APPLY_PLACE_TRIES(b->apply_buckets) - 1);
    size_t bytes = apply_fullest_bytes(b->count, b->apply_buckets, nparts, name);
    if (bytes <= APPLY_LOG_BUDGET)
        return 0;
    long lo = 0, hi = b->count; /* the largest count that fits: in [lo, hi) */
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (apply_fullest_bytes(mid, b->apply_buckets, nparts, name) <= APPLY_LOG_BUDGET)
            lo = mid;
        else
            hi = mid;
    }
    snprintf(why, n, "--apply would put %ld events (%.1f MiB) on one of %d partitions; the "
             "embedded log keeps ~5 MB per partition and apply-rebuild replays it whole: "
             "at most %ld events with %d partitions and %d buckets (or more --partitions)",
             apply_fullest(b->count, b->apply_buckets, nparts),
             (double)bytes / (1 << 20), nparts, lo, nparts, b->apply_buckets);
    return -1;
}

/* ---- the buckets ---- */

/* Names the buckets so that bucket j lands on partition j % nparts under
 * the default range map (a deployment with another map spreads them
 * unevenly, which costs nothing but balance). 0, or -1. */
static int apply_place(apply_run *r) {
    int n = r->load.nbuckets, np = r->load.nparts, placed = 0;
    rangemap *rm = rangemap_new_default(np, CONTROL_DEFAULT_EPOCH);
    int *next = calloc((size_t)np, sizeof(*next));
    r->buckets = calloc((size_t)n, sizeof(*r->buckets));
    r->part = calloc((size_t)n, sizeof(*r->part));
    for (long k = 0; rm && next && r->buckets && r->part && placed < n &&
                     k < APPLY_PLACE_TRIES(n); k++) {
        char name[64];
        keybuf kb;
        keybuf_init(&kb);
        apply_bucket_name(name, sizeof(name), r->stamp, k);
        if (keycodec_route_key(&kb, name, strlen(name), NULL, 0) == 0) {
            int p = rangemap_partition(rm, kb.data, kb.len);
            long j = p >= 0 && p < np ? p + (long)next[p] * np : n;
            if (j < n) {
                snprintf(r->buckets[j], sizeof(r->buckets[j]), "%s", name);
                r->part[j] = p;
                next[p]++;
                placed++;
            }
        }
        keybuf_free(&kb);
    }
    rangemap_destroy(rm);
    free(next);
    if (placed < n) {
        fprintf(stderr, "objlog: bench: cannot place %d buckets evenly on %d partitions\n", n,
                np);
        return -1;
    }
    r->load.buckets = r->buckets;
    r->load.part = r->part;
    return 0;
}

/* ---- GET /v1/lag ---- */

/* Each partition's applied and end offsets from GET url/v1/lag: the
 * number of partitions; -1 when it cannot be read, -2 when a partition
 * stopped (why: the view's reason). */
static int apply_lag(CURL *h, const char *url, int64_t *applied, int64_t *end, char *why,
                     size_t wn) {
    char u[256], err[256];
    snprintf(u, sizeof(u), "%s/v1/lag", url);
    cli_resp r;
    if (cli_http(h, "GET", u, NULL, NULL, &r, err, sizeof(err)) < 0) {
        snprintf(why, wn, "GET %.256s: %.200s", u, err);
        return -1;
    }
    json_t *j = r.status == 200 ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    if (!j)
        snprintf(why, wn, "GET %s: HTTP %ld", u, r.status);
    cli_resp_free(&r);
    json_t *parts = json_object_get(j, "partitions");
    int n = json_is_array(parts) && json_array_size(parts) <= BENCH_MAX_PARTS
                ? (int)json_array_size(parts) : -1;
    if (j && n < 0)
        snprintf(why, wn, "GET %s: no partitions", u);
    for (int i = 0; i < n; i++) {
        json_t *p = json_array_get(parts, (size_t)i);
        const char *state = json_string_value(json_object_get(p, "state"));
        applied[i] = json_integer_value(json_object_get(p, "applied"));
        end[i] = json_integer_value(json_object_get(p, "end"));
        if (state && !strcmp(state, "stopped")) {
            const char *e = json_string_value(json_object_get(p, "error"));
            snprintf(why, wn, "partition %d stopped: %.400s", i, e ? e : "(no reason given)");
            n = -2;
        }
    }
    json_decref(j);
    return n;
}

/* ---- apply-live ---- */

static void *live_produce_main(void *arg) {
    bench_thread *t = arg;
    bench *b = t->b;
    const apply_run *r = b->apply_run;
    for (long i = t->index; i < b->count && !bench_interrupted; i += b->threads) {
        char key[32], etag[32], err[256];
        bench_key((int)i, key, sizeof(key));
        snprintf(etag, sizeof(etag), "etag-%ld", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag,
                                .content_type = BENCH_APPLY_CONTENT_TYPE};
        if (objlog_producer_put_object(b->p, r->buckets[i % r->load.nbuckets], key,
                                       strlen(key), &m, NULL, bench_cb, b, err,
                                       sizeof(err)) < 0) {
            pthread_mutex_lock(&b->lock);
            if (b->failed++ == 0)
                snprintf(b->first_error, sizeof(b->first_error), "%s", err);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

static int apply_live(apply_run *r, CURL *h) {
    bench *b = r->b;
    for (int j = 0; j < r->load.nbuckets; j++)
        if (bench_interrupted || bench_create_bucket_named(b, h, r->buckets[j]) < 0)
            return -1;
    if (bench_producer_open(b) < 0)
        return -1;
    int64_t t0 = bench_mono_us();
    bench_run_threads(b, live_produce_main);
    objlog_producer_flush(b->p, BENCH_WAIT_MS);
    if (b->failed) {
        fprintf(stderr, "objlog: bench: apply-live: %ld of %d writes failed (first: %s)\n",
                b->failed, b->count, b->first_error);
        return -1;
    }
    double produced = (double)(bench_mono_us() - t0) / 1e6;
    if (r->load.progress && produced * 1e6 >= APPLY_PROGRESS_US)
        fprintf(stderr, "objlog: bench: apply-live: %d events produced in %.1f s; waiting "
                        "until the view applied them\n", b->count, produced);
    int rc = bench_wait_applied(b, h);
    if (rc == -2)
        fprintf(stderr, "objlog: bench: apply-live: %s\n", APPLY_LOST_HINT);
    if (rc < 0)
        return -1;
    r->seconds[PH_LIVE] = (double)(bench_mono_us() - t0) / 1e6;
    r->events[PH_LIVE] = b->count;
    return 0;
}

/* The log's end offsets, once apply-live is applied: what the rebuild
 * must apply. Our own log holds exactly the buckets and the PUTs. */
static int apply_log_end(apply_run *r, CURL *h) {
    int64_t applied[BENCH_MAX_PARTS];
    char why[512];
    int n = apply_lag(h, r->b->url, applied, r->end, why, sizeof(why));
    if (n != r->load.nparts) {
        fprintf(stderr, "objlog: bench: the log's end offsets: %s\n",
                n < 0 ? why : "the partition count changed");
        return -1;
    }
    r->log_events = 0;
    for (int p = 0; p < n; p++)
        r->log_events += (long)r->end[p];
    long want = (long)r->b->count + r->load.nbuckets;
    if (r->b->daemon > 0 && r->log_events != want) {
        fprintf(stderr, "objlog: bench: the log holds %ld events, not the %ld written\n",
                r->log_events, want);
        return -1;
    }
    return 0;
}

/* ---- apply-rebuild ---- */

/* How long to wait for the next look: a quarter of the time the rest
 * should take at the rate so far, within [MIN, MAX], so the end is seen
 * within a few ms without polling a long rebuild every few ms. */
static useconds_t rebuild_pause(long done, long first, long total, int64_t elapsed_us) {
    if (done <= first || elapsed_us <= 0)
        return APPLY_POLL_MIN_US * 2;
    double rate = (double)(done - first) / (double)elapsed_us; /* events per us */
    double us = (double)(total - done) / rate / 4;
    return (useconds_t)(us < APPLY_POLL_MIN_US ? APPLY_POLL_MIN_US
                        : us > APPLY_POLL_MAX_US ? APPLY_POLL_MAX_US : us);
}

static int apply_rebuild(apply_run *r, CURL *h) {
    bench *b = r->b;
    snprintf(r->group, sizeof(r->group), "objlog-bench-rebuild-%d-%lld", (int)getpid(),
             (long long)time(NULL));
    const char *const extra[] = {"--group", r->group, NULL};
    if (r->load.progress)
        fprintf(stderr, "objlog: bench: apply-rebuild: a new view replays the log's %ld "
                        "events\n", r->log_events);
    int rc = bench_view_start(b, extra, &r->view);
    int64_t t0 = bench_mono_us();
    r->view_pid = r->view.pid;
    snprintf(r->view_dir, sizeof(r->view_dir), "%s", r->view.dir);
    if (rc < 0)
        return -1;
    int64_t deadline = t0 + BENCH_WAIT_MS * 1000LL + (int64_t)r->log_events * 100;
    int64_t last_progress = t0;
    for (int first = 1;; first = 0) {
        int64_t applied[BENCH_MAX_PARTS], end[BENCH_MAX_PARTS];
        char why[512];
        int n = apply_lag(h, r->view.url, applied, end, why, sizeof(why));
        int64_t now = bench_mono_us();
        if (n < 0 || n != r->load.nparts) {
            fprintf(stderr, "objlog: bench: apply-rebuild: %s\n",
                    n < 0 ? why : "the view has another partition count");
            if (n == -2)
                fprintf(stderr, "objlog: bench: apply-rebuild: %s\n", APPLY_LOST_HINT);
            bench_view_log_tail(&r->view);
            return -1;
        }
        long done = 0;
        int all = 1;
        for (int p = 0; p < n; p++) {
            done += (long)(applied[p] < r->end[p] ? applied[p] : r->end[p]);
            all &= applied[p] >= r->end[p];
        }
        if (first)
            r->applied_at_ready = done;
        if (all) {
            r->seconds[PH_REBUILD] = (double)(now - t0) / 1e6;
            r->events[PH_REBUILD] = r->log_events;
            return 0;
        }
        if (bench_interrupted)
            return -1;
        if (now > deadline) {
            fprintf(stderr, "objlog: bench: apply-rebuild: %ld of %ld events applied in "
                            "%.0f s\n", done, r->log_events, (double)(now - t0) / 1e6);
            bench_view_log_tail(&r->view);
            return -1;
        }
        if (r->load.progress && now - last_progress >= APPLY_PROGRESS_US) {
            fprintf(stderr, "objlog: bench: apply-rebuild: %ld of %ld events applied\n", done,
                    r->log_events);
            last_progress = now;
        }
        usleep(rebuild_pause(done, r->applied_at_ready, r->log_events, now - t0));
    }
}

/* ---- report ---- */

static double apply_rate(const apply_run *r, int ph) {
    return r->seconds[ph] > 0 ? (double)r->events[ph] / r->seconds[ph] : 0;
}

static double apply_ratio(const apply_run *r, int ph) {
    double raw = apply_rate(r, PH_RAW);
    return raw > 0 ? apply_rate(r, ph) / raw : 0;
}

static void apply_report_json(const apply_run *r) {
    const bench *b = r->b;
    json_t *phases = json_array();
    for (int ph = 0; ph < PH_N; ph++) {
        json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:f}", "phase", phase_names[ph], "events",
                              (json_int_t)r->events[ph], "seconds", r->seconds[ph],
                              "events_per_second", apply_rate(r, ph), "ratio_to_raw",
                              apply_ratio(r, ph));
        if (ph >= PH_RAW) {
            json_object_set_new(o, "reads", json_integer(r->rocks[ph - PH_RAW].reads));
            json_object_set_new(o, "puts", json_integer(r->rocks[ph - PH_RAW].puts));
        }
        json_array_append_new(phases, o);
    }
    json_t *j = json_pack(
        "{s:{s:i,s:i,s:i,s:i,s:i,s:s,s:i,s:I,s:{s:I,s:I},s:{s:i,s:s,s:s,s:I},s:o}}", "apply",
        "count", b->count, "buckets", r->load.nbuckets, "partitions", r->load.nparts,
        "threads", b->threads, "apply_threads", r->load.threads, "wal", "off",
        "batch_events", BENCH_APPLY_BATCH, "log_events",
        (json_int_t)r->log_events, "store", "block_cache_bytes",
        (json_int_t)r->rocks[0].block_cache_bytes, "memtable_bytes",
        (json_int_t)r->rocks[0].memtable_bytes, "rebuild_view", "pid", (int)r->view_pid,
        "dir", r->view_dir, "group", r->group, "applied_at_ready",
        (json_int_t)r->applied_at_ready, "phases", phases);
    cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

static void apply_report(const apply_run *r) {
    const bench *b = r->b;
    if (b->json) {
        apply_report_json(r);
        return;
    }
    printf("objlog bench --apply: %d PUTs of new keys in %d unversioned %s on %d %s, %d "
           "producer %s, usage counters on, %s\n", b->count, r->load.nbuckets,
           cli_plural((size_t)r->load.nbuckets, "bucket", "buckets"), r->load.nparts,
           cli_plural((size_t)r->load.nparts, "partition", "partitions"), b->threads,
           cli_plural((size_t)b->threads, "thread", "threads"), b->url);
    printf("store options as objlogd's: block cache %zu MiB, memtable budget %zu MiB; "
           "batches of up to %d events, WAL off; %d apply %s (rocksdb-raw: as many "
           "writers)\n", r->rocks[0].block_cache_bytes >> 20,
           r->rocks[0].memtable_bytes >> 20, BENCH_APPLY_BATCH, r->load.threads,
           cli_plural((size_t)r->load.threads, "thread", "threads"));
    printf("%-22s %8s %9s %11s %7s\n", "phase", "events", "seconds", "events/s", "/raw");
    for (int ph = 0; ph < PH_N; ph++)
        printf("%-22s %8ld %9.3f %11.1f %7.3f\n", phase_names[ph], r->events[ph],
               r->seconds[ph], apply_rate(r, ph), apply_ratio(r, ph));
    if (b->daemon > 0)
        printf("apply-rebuild: the log's %ld events (%d CreateBucket%s and the PUTs)",
               r->log_events, r->load.nbuckets, r->load.nbuckets == 1 ? "" : "s");
    else
        printf("apply-rebuild: the log's %ld events (all it holds, not only the bench's)",
               r->log_events);
    printf(", timed from the view's READY (it had applied %ld by then)\n",
           r->applied_at_ready);
    printf("rocksdb-raw: %ld puts; rocksdb-apply-pattern: %ld reads, %ld puts (5 and 5 per "
           "event, and per batch each stats row it changed and each partition's applied "
           "offset)\n", r->rocks[0].puts, r->rocks[1].reads, r->rocks[1].puts);
}

/* ---- the run ---- */

int bench_apply_run(bench *b) {
    apply_run *r = calloc(1, sizeof(*r));
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!r || !h)
        goto out;
    b->apply_run = r;
    r->b = b;
    r->stamp = (long)(time(NULL) % 100000);
    int64_t applied[BENCH_MAX_PARTS];
    char why[512], err[512];
    int n = apply_lag(h, b->url, applied, r->end, why, sizeof(why));
    if (n < 1) {
        fprintf(stderr, "objlog: bench: the partitions of %s: %s\n", b->url,
                n == 0 ? "none" : why);
        goto out;
    }
    /* objlogd's default: one apply thread per core, at most one per
     * partition (a view behind --url runs what it was started with) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = b->apply_threads ? b->apply_threads : cores > 0 ? (int)cores : 1;
    r->load = (bench_apply_load){.count = b->count, .nbuckets = b->apply_buckets,
                                 .nparts = n, .progress = !b->json,
                                 .threads = threads < n ? threads : n};
    if (apply_place(r) < 0 || apply_live(r, h) < 0 || apply_log_end(r, h) < 0)
        goto out;
    int ok = apply_rebuild(r, h) == 0;
    bench_view_stop(&r->view);
    if (!ok)
        goto out;
    for (int pattern = 0; pattern < 2; pattern++) {
        int ph = pattern ? PH_PATTERN : PH_RAW;
        if (r->load.progress)
            fprintf(stderr, "objlog: bench: %s: %d events into a fresh store\n",
                    phase_names[ph], b->count);
        if (bench_apply_rocks(&r->load, pattern, &r->rocks[pattern], err, sizeof(err)) < 0) {
            fprintf(stderr, "objlog: bench: %s: %s\n", phase_names[ph], err);
            goto out;
        }
        r->seconds[ph] = r->rocks[pattern].seconds;
        r->events[ph] = b->count;
    }
    if (bench_interrupted)
        goto out;
    apply_report(r);
    rc = CLI_EXIT_OK;
out:
    if (r)
        bench_view_stop(&r->view);
    if (h)
        curl_easy_cleanup(h);
    if (r) {
        free(r->buckets);
        free(r->part);
    }
    free(r);
    b->apply_run = NULL;
    return rc;
}
