/* bench.c: `objlog bench`, the router of its modes: the options, the checks
 * that tie them together, the SIGINT handler, and which mode runs on the
 * one bench struct (bench_int.h): the default produce/apply/GET run
 * (bench_e2e.c), --consistency-modes (bench_modes.c), --list (bench_list.c),
 * --stats (bench_stats.c), --apply (bench_apply.c), --conditional
 * (bench_cond.c), --checkpoint (bench_ckpt.c), --indexes (bench_index.c),
 * --lifecycle (bench_lifecycle.c), --s3 (bench_s3.c), --ranges
 * (bench_ranges.c). Without --url/--brokers
 * it runs its own `objlogd --embedded` (bench_daemon.c) and always stops it.
 * With --url, what the run wrote is removed when it ends, also after a
 * failure or SIGINT, unless --keep (bench_clean.c).
 * Invariant: no mode starts before every option was checked, and whatever
 * a mode started (producer, objlogd, buckets) is gone when bench_main
 * returns. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cond.h"
#include "bench_int.h"
#include "cli.h"
#include "materializer.h"
#include "objlog_producer.h"

/* Installed only while the run has something to undo (buckets on someone
 * else's objlogd, an --apply rebuild view): the modes see the flag and end
 * early; the second SIGINT, with the default action back, kills. */
static void on_sigint(int sig) {
    static const char msg[] = "objlog: bench: interrupted; removing what the bench "
                              "wrote (interrupt again to leave it)\n";
    (void)sig;
    bench_interrupted = 1;
    if (write(2, msg, sizeof(msg) - 1) < 0) { /* nothing to do about it */
    }
}

const char bench_usage_text[] =
    "usage: objlog bench [--url URL --brokers LIST [--keep]] [--count N] [--threads T]\n"
    "                    [--gets N] [--consistency strong|token|eventual] [--partitions N]\n"
    "                    [--json]\n"
    "       objlog bench --consistency-modes [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N] [--threads T] [--gets N] [--write-rate R]\n"
    "                    [--partitions N]\n"
    "       objlog bench --list [--url URL --brokers LIST [--keep]] [--keys N]\n"
    "                    [--deleted N] [--live N] [--versions N] [--lists N]\n"
    "                    [--no-keepalive]\n"
    "       objlog bench --conditional [--url URL --brokers LIST [--keep]]\n"
    "                    [--rates R1,R2,...] [--seconds S] [--linger MS] [--partitions N]\n"
    "       objlog bench --stats [--count N (default 100000)] [--rounds R] [--threads T]\n"
    "                    [--gets N] [--partitions N]\n"
    "       objlog bench --apply [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 200000)] [--buckets B (default 64)]\n"
    "                    [--threads T] [--partitions N] [--apply-threads A]\n"
    "       objlog bench --indexes [--count N (default 20000)] [--rounds R]\n"
    "                    [--url URL --brokers LIST [--keep]]\n"
    "       objlog bench --checkpoint [--count N (default 200000)] [--buckets B]\n"
    "                    [--partitions N]\n"
    "       objlog bench --lifecycle [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 20000)] [--threads T] [--partitions N]\n"
    "       objlog bench --notify [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 20000)] [--threads T]\n"
    "                    [--rates R,R (default 1000,10000)] [--seconds S (default 10)]\n"
    "       objlog bench --s3 [--keys N (default 1000)] [--lists N (default 400)]\n"
    "                    [--heads N (default 4000)]\n"
    "       objlog bench --s3-bytes\n"
    "       objlog bench --s3-forward S3_URL,S3_URL --url URL\n"
    "       objlog bench --ranges [--url URL --brokers LIST [--keep]]\n"
    "                    [--count N (default 8000)] [--threads T] [--apply-threads A]\n"
    "Without --url the bench starts its own objlogd (embedded log) and stops it: its\n"
    "data goes with it. With --url it removes, when it ends, the buckets it created\n"
    "and everything in them (every version, delete marker and upload), and says so\n"
    "on stderr; --keep leaves them.\n"
    "--apply: events/s of the view applying N PUTs of new keys spread over B buckets\n"
    "while T threads produce them (apply-live), of a second objlogd rebuilding a view\n"
    "from the whole log (apply-rebuild), and of RocksDB alone writing the same rows\n"
    "(rocksdb-raw, on A threads each writing its partitions' rows, WAL off as objlogd's\n"
    "default) and making apply's reads and writes for them (rocksdb-apply-pattern, one\n"
    "thread) with objlogd's store options; /raw is the ratio to rocksdb-raw. The views\n"
    "the bench starts apply on A threads (--apply-threads; default one per core, at\n"
    "most one per partition). With --url and\n"
    "--brokers, apply-rebuild replays that deployment's whole log (every event it\n"
    "holds, not only the bench's) into a temporary view on this machine, under a\n"
    "consumer group of its own (objlog-bench-rebuild-PID-TIME) that stays in the\n"
    "cluster's list of groups.\n"
    "--checkpoint: in this process, no objlogd: events/s of the state machine applying\n"
    "N PUTs into a fresh store (a rebuild from the log without Kafka), then rows/s and\n"
    "MB/s of exporting every partition's checkpoint and importing them into another\n"
    "store, and how many times faster export+import is than apply.\n"
    "--indexes: in this process, an index query of 1,000 matches against a LIST of\n"
    "1,000 keys and the PUT apply cost with 0, 1 and 3 indexes; then the same query\n"
    "against LIST over HTTP, on its own objlogd started only then (or --url's).\n"
    "--s3: the S3 endpoint's cost against the JSON API's for the same reads in one\n"
    "run of its own objlogd: N keys, then LISTs of all of them (ListObjectsV2 vs GET\n"
    "/v1/buckets/B/objects) and HEADs of one (HeadObject vs HEAD /objects/K), one\n"
    "connection each, in alternating blocks; mean, p50, p99 and S3/JSON ratios.\n"
    "--s3-bytes: PutObject and GetObject MB/s of 1 KiB, 1 MiB and 64 MiB objects on\n"
    "its own objlogd (blobs in its temp dir) against dd writing (conv=fsync) and\n"
    "reading the same bytes in the same directory, and the ratios.\n"
    "--s3-forward: two S3 listeners of one cluster's nodes (anonymous, --url the JSON\n"
    "API of one of them, where the bench's bucket is made): GetObject MB/s of 1 KiB,\n"
    "1 MiB and 64 MiB objects and HeadObject/s through the node that applies the\n"
    "bucket and through the one that forwards to it, and the ratios.\n"
    "--ranges: on its own objlogd (8 partitions) or --url's (8 partitions or more),\n"
    "N puts a round over 8 buckets of one hot range, applied writes/s with the range\n"
    "on 1 partition, then split over 2, 4 and 8 (POST /v1/ranges/split between\n"
    "rounds), the ratio to one partition, each split's time and how long writes to\n"
    "the range waited; the same for one bucket split inside; buckets of 5,000 and\n"
    "20,000 keys (with --url: 10,000, 100,000 and 1,000,000) split in the middle\n"
    "while a probe writes to the moving half (its p50 and max); LIST across ranges.\n";

static cli *bench_cli; /* for usage errors: one bench a process */

static int bench_usage(const char *why, const char *arg) {
    return cli_usage_error(bench_cli, "%s%s", why, arg ? arg : "");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    int v;
    if (parse_int(s, (int)lo, (int)hi, &v) < 0)
        return -1;
    *out = v;
    return 0;
}

enum {
    O_LIST = CLI_OPT_OWN, O_LIFECYCLE, O_MODES, O_STATS, O_COND, O_NO_KEEPALIVE, O_KEEP, O_BROKERS,
    O_CONSISTENCY, O_WRITE_RATE, O_COUNT, O_ROUNDS, O_THREADS, O_GETS, O_PARTITIONS,
    O_LISTS, O_RATES, O_SECONDS, O_LINGER, O_KEYS, O_DELETED, O_LIVE, O_VERSIONS, O_APPLY,
    O_BUCKETS, O_CKPT, O_S3, O_S3_BYTES, O_S3_FORWARD, O_HEADS, O_INDEXES, O_APPLY_THREADS, O_RANGES,
    O_NOTIFY
};

/* One valued option into b; 0, or -1 when its value is out of range. */
/* "http://A,http://B": two S3 endpoints. */
static int parse_s3_pair(const char *v, char out[2][128]) {
    const char *comma = strchr(v, ',');
    size_t n = comma ? (size_t)(comma - v) : 0;
    if (!comma || n == 0 || n >= 128 || strlen(comma + 1) == 0 || strlen(comma + 1) >= 128 ||
        strncmp(v, "http", 4) != 0 || strncmp(comma + 1, "http", 4) != 0)
        return -1;
    memcpy(out[0], v, n);
    out[0][n] = '\0';
    snprintf(out[1], 128, "%s", comma + 1);
    return 0;
}

static int bench_value(bench *b, int o, const char *v) {
    switch (o) {
    case O_BROKERS: b->brokers = v; return 0;
    case O_S3_FORWARD: return parse_s3_pair(v, b->s3_fwd);
    case O_CONSISTENCY: b->consistency = v; return 0;
    case O_WRITE_RATE: return parse_int(v, 1, 100000, &b->write_rate);
    case O_COUNT: return parse_int(v, 1, 100000000, &b->count);
    case O_ROUNDS: return parse_int(v, 1, STATS_ROUNDS_MAX, &b->rounds);
    case O_THREADS: return parse_int(v, 1, 256, &b->threads);
    case O_GETS: return parse_int(v, 0, 100000000, &b->gets);
    case O_PARTITIONS: return parse_int(v, 1, BENCH_MAX_PARTS, &b->partitions);
    case O_LISTS: return parse_int(v, 1, 1000000, &b->list_requests);
    case O_RATES: b->rates_given = 1; return bench_cond_parse_rates(&b->cond, v);
    case O_SECONDS: b->seconds_given = 1; return parse_int(v, 1, 3600, &b->cond.seconds);
    case O_LINGER:
        b->cond.linger = v;
        return parse_int(v, 0, 1000, &(int){0});
    case O_KEYS: return parse_long(v, 1, 10000000, &b->list_keys);
    case O_DELETED: return parse_long(v, 1, 10000000, &b->list_deleted);
    case O_LIVE: return parse_long(v, 1, 1000, &b->list_live);
    case O_VERSIONS: return parse_long(v, 1, 10000000, &b->list_versions);
    case O_BUCKETS: return parse_int(v, 1, 10000, &b->apply_buckets);
    case O_APPLY_THREADS:
        /* objlogd reads it from the environment of every view the bench
         * starts (the embedded one and --apply's rebuild view) */
        if (parse_int(v, 1, OBJLOG_APPLY_THREADS_MAX, &b->apply_threads) < 0)
            return -1;
        return setenv("OBJLOG_APPLY_THREADS", v, 1);
    case O_HEADS: return parse_int(v, 1, 10000000, &b->s3_heads);
    default: return -1;
    }
}

static int bench_args(bench *b, cli *c, int argc, char **argv) {
    static const struct option opts[] = {
        {"list", no_argument, NULL, O_LIST},
        {"consistency-modes", no_argument, NULL, O_MODES},
        {"stats", no_argument, NULL, O_STATS},
        {"lifecycle", no_argument, NULL, O_LIFECYCLE},
        {"notify", no_argument, NULL, O_NOTIFY},
        {"conditional", no_argument, NULL, O_COND},
        {"apply", no_argument, NULL, O_APPLY},
        {"checkpoint", no_argument, NULL, O_CKPT},
        {"indexes", no_argument, NULL, O_INDEXES},
        {"s3", no_argument, NULL, O_S3},
        {"s3-bytes", no_argument, NULL, O_S3_BYTES},
        {"s3-forward", required_argument, NULL, O_S3_FORWARD},
        {"ranges", no_argument, NULL, O_RANGES},
        {"heads", required_argument, NULL, O_HEADS},
        {"no-keepalive", no_argument, NULL, O_NO_KEEPALIVE},
        {"keep", no_argument, NULL, O_KEEP},
        {"brokers", required_argument, NULL, O_BROKERS},
        {"consistency", required_argument, NULL, O_CONSISTENCY},
        {"write-rate", required_argument, NULL, O_WRITE_RATE},
        {"count", required_argument, NULL, O_COUNT},
        {"rounds", required_argument, NULL, O_ROUNDS},
        {"threads", required_argument, NULL, O_THREADS},
        {"gets", required_argument, NULL, O_GETS},
        {"partitions", required_argument, NULL, O_PARTITIONS},
        {"lists", required_argument, NULL, O_LISTS},
        {"rates", required_argument, NULL, O_RATES},
        {"seconds", required_argument, NULL, O_SECONDS},
        {"linger", required_argument, NULL, O_LINGER},
        {"keys", required_argument, NULL, O_KEYS},
        {"deleted", required_argument, NULL, O_DELETED},
        {"live", required_argument, NULL, O_LIVE},
        {"versions", required_argument, NULL, O_VERSIONS},
        {"buckets", required_argument, NULL, O_BUCKETS},
        {"apply-threads", required_argument, NULL, O_APPLY_THREADS},
        CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int rc = 0, o;
    while ((o = cli_getopt(c, argc, argv, opts, &rc)) >= 0) {
        switch (o) {
        case O_LIST: b->list = 1; break;
        case O_MODES: b->modes = 1; break;
        case O_STATS: b->stats = 1; break;
        case O_LIFECYCLE: b->lifecycle = 1; break;
        case O_NOTIFY: b->notify = 1; break;
        case O_COND: b->conditional = 1; break;
        case O_APPLY: b->apply = 1; break;
        case O_CKPT: b->ckpt = 1; break;
        case O_INDEXES: b->indexes = 1; break;
        case O_S3: b->s3 = 1; break;
        case O_S3_BYTES: b->s3_bytes = 1; break;
        case O_RANGES: b->ranges = 1; break;
        case O_NO_KEEPALIVE: b->list_fresh = 1; break;
        case O_KEEP: b->keep = 1; break;
        default:
            if (bench_value(b, o, optarg) < 0) {
                /* "--count=0" is one argument, "--count 0" two */
                const char *opt = optarg == argv[optind - 1] ? argv[optind - 2]
                                                             : argv[optind - 1];
                char name[64];
                snprintf(name, sizeof(name), "%s", opt);
                name[strcspn(name, "=")] = '\0';
                return cli_usage_error(c, "bad value \"%s\" for %s", optarg, name);
            }
        }
    }
    const char *none[1];
    if (o == CLI_STOP || cli_positionals(c, argc, argv, none, 0, 0, NULL, &rc) < 0)
        return rc;
    b->url = c->url_flag;
    b->json = c->json;
    if (b->stats && (b->url || b->brokers))
        return bench_usage("--stats starts its own objlogd processes (it replays one "
                           "log into fresh views with and without the stats view): "
                           "drop --url/--brokers", NULL);
    if (b->ckpt && (b->url || b->brokers))
        return bench_usage("--checkpoint runs in this process, against stores of its "
                           "own: drop --url/--brokers", NULL);
    if (!!b->url != !!b->brokers)
        return bench_usage("--url and --brokers go together (or neither: "
                           "bench starts its own objlogd)", NULL);
    if (strcmp(b->consistency, "strong") && strcmp(b->consistency, "token") &&
        strcmp(b->consistency, "eventual"))
        return bench_usage("--consistency must be strong, token or eventual", NULL);
    return 0;
}

int bench_main(cli *c, int argc, char **argv) {
    bench *b = calloc(1, sizeof(*b));
    if (!b)
        return CLI_EXIT_FAIL;
    bench_cli = c;
    b->count = 0;
    b->rounds = 3;
    b->threads = 4;
    b->gets = -1;
    b->consistency = "strong";
    b->list_keys = 1000;
    b->list_deleted = 100000;
    b->list_live = 10;
    b->list_versions = 100000;
    b->list_requests = 200;
    b->cond.seconds = 5;
    b->write_rate = 200;
    b->apply_buckets = 64;
    bench_cond_parse_rates(&b->cond, "1000,5000");
    for (int i = 0; i < BENCH_MAX_PARTS; i++)
        b->last_offset[i] = -1;
    pthread_mutex_init(&b->lock, NULL);
    int rc = bench_args(b, c, argc, argv);
    if (c->help_shown) {
        pthread_mutex_destroy(&b->lock);
        free(b);
        return CLI_EXIT_OK;
    }
    if (!b->count)
        b->count = b->apply || b->ckpt ? 200000 : b->stats ? 100000 : b->ranges ? 8000 : 20000;
    if (b->ranges && !b->partitions)
        b->partitions = 8;
    int nparts = b->partitions ? b->partitions : STATS_DEFAULT_PARTS;
    if (rc == 0 && b->stats && b->count > STATS_PER_BUCKET * nparts) {
        char why[256];
        snprintf(why, sizeof(why), "--stats takes at most %d puts with %d partitions (the "
                 "embedded log keeps ~5 MB per partition and a replay needs it whole)",
                 STATS_PER_BUCKET * nparts, nparts);
        rc = bench_usage(why, NULL);
    }
    if (rc == 0 && b->lifecycle && b->url)
        /* Its objlogd must judge ages two days ahead, as ours would: one
         * started with the test-only clock offset (ops/bench_lifecycle_kafka.sh
         * does that on a real Kafka). */
        fprintf(stderr, "objlog: bench --lifecycle: the objlogd at %s must run with "
                "OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS=172800000 and "
                "OBJLOG_LIFECYCLE_INTERVAL_MS=100, or nothing expires\n", b->url);
    else if (rc == 0 && b->lifecycle) {
        /* The daemon we start inherits these (objlogd's env flags). */
        setenv("OBJLOG_LIFECYCLE_INTERVAL_MS", "100", 1);
        setenv("OBJLOG_TEST_LIFECYCLE_CLOCK_OFFSET_MS", "172800000", 1);
    }
    if (rc == 0 && b->notify && !b->rates_given)
        bench_cond_parse_rates(&b->cond, "1000,10000");
    if (rc == 0 && b->notify && !b->seconds_given)
        b->cond.seconds = 10;
    if (rc == 0 && (b->s3 || b->s3_bytes) && b->url) /* it needs the S3 listener it starts */
        rc = bench_usage("--s3 and --s3-bytes run their own objlogd: drop --url", NULL);
    if (rc == 0 && b->s3_fwd[0][0] && !b->url)
        rc = bench_usage("--s3-forward measures a cluster's nodes: give --url (the JSON API of "
                         "one of them)", NULL);
    if (rc == 0 && b->apply && !b->url) {
        char why[512];
        if (bench_apply_check(b, why, sizeof(why)) < 0)
            rc = bench_usage(why, NULL);
    }
    if (b->gets < 0)
        b->gets = b->stats ? 5000 : b->count;
    int remote = rc == 0 && b->url; /* someone else's objlogd: clean up after us */
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old_sa;
    sigemptyset(&sa.sa_mask);
    /* --apply also stops its rebuild view when interrupted. */
    int caught = ((remote && !b->keep) || (rc == 0 && b->apply)) &&
                 sigaction(SIGINT, &sa, &old_sa) == 0;
    if (rc == 0 && !b->url && !b->ckpt && !b->indexes && bench_daemon_start(b) < 0)
        rc = CLI_EXIT_FAIL;
    if (rc == 0 && b->indexes) {
        rc = bench_index_run(b);
    } else if (rc == 0 && b->ckpt) {
        rc = bench_ckpt_run(b);
    } else if (rc == 0 && b->conditional) {
        char bucket[64] = "";
        b->cond.url = b->url;
        b->cond.brokers = b->brokers;
        b->cond.json = b->json;
        b->cond.stop = &bench_interrupted;
        rc = bench_cond_run(&b->cond, bucket, sizeof(bucket));
        if (bucket[0] && bench_created(b, bucket) < 0)
            rc = CLI_EXIT_FAIL;
    } else if (rc == 0) {
        rc = b->apply   ? bench_apply_run(b)
             : b->s3    ? bench_s3_run(b)
             : b->s3_bytes ? bench_s3bytes_run(b)
             : b->s3_fwd[0][0] ? bench_s3forward_run(b)
             : b->ranges ? bench_ranges_run(b)
             : b->list  ? bench_list_run(b)
             : b->modes ? bench_modes_run(b)
             : b->stats ? bench_stats_run(b)
             : b->lifecycle ? bench_lifecycle_run(b)
             : b->notify ? bench_notify_run(b)
                        : bench_e2e_run(b);
    }
    /* No write of ours may still be on its way while the buckets go. */
    objlog_producer_destroy(b->p);
    b->p = NULL;
    if (bench_interrupted)
        rc = CLI_EXIT_FAIL;
    if (remote && !b->keep && b->n_created > 0) {
        int crc = bench_clean(b);
        rc = rc == CLI_EXIT_OK ? crc : rc;
    }
    if (caught)
        sigaction(SIGINT, &old_sa, NULL);
    bench_daemon_stop(b);
    free(b->created);
    free(b->lat_ms);
    free(b->stats_buckets);
    pthread_mutex_destroy(&b->lock);
    free(b);
    return rc;
}
