/* metrics.c: the operator routes (docs/ARCHITECTURE.md, "Reads"): GET
 * /v1/lag (JSON), GET /readyz and GET /metrics (Prometheus text format
 * 0.0.4).
 *
 * Owns nothing: every figure is read at request time from the materializer,
 * the watermark cache (watermark.c), the per-worker request counters
 * (reply.c), RocksDB's properties and /proc (process_* as Prometheus'
 * client libraries define them). These routes honour no fence; their end offsets may share a
 * ListOffsets request already in flight. Invariant: a partition's lag is
 * never negative (the end offset is clamped up to the applied one, which
 * may have moved on since the end was fetched). */
#define _GNU_SOURCE
#include "core.h"
#include "rangemap.h"
#include "admit.h"
#include "api.h"
#include "blobgc.h"
#include "cluster.h"
#include "logring.h"
#include "notifier.h"
#include "ranges.h"
#include "read.h"
#include "server.h"
#include "watermark.h"
#include "workers.h"
#include "write.h"

#include "producer_event.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "objlog_producer.h"
#include "outcome.h"

#define METRICS_WM_TIMEOUT_MS 1000

typedef struct lag_row {
    int64_t applied;
    int64_t end;
    int64_t lag;
    double lag_s;
    int stopped;
    char err[256];
} lag_row;

static int64_t metrics_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lag in seconds is measured in log time (Kafka timestamps), as
 * docs/ARCHITECTURE.md, "Reads", defines it: the log time of the newest
 * event known for the partition minus that of the newest applied one, 0
 * when caught up.
 *  - "newest known" is the newest event the consumer has taken from the
 *    log; when it is not newer than the applied one although the end
 *    offset says more events exist (not fetched yet, e.g. a stalled or
 *    stopped consumer), their log time is at most now, so now is used:
 *    the lag of a stuck partition keeps growing instead of reading 0.
 *  - "newest applied" comes from the stored outcome after a restart; when
 *    it is unknown (nothing applied yet, or its outcome was trimmed), the
 *    oldest fetched-but-unapplied event stands in for it (a lower bound). */
static double metrics_lag_seconds(const objlog_log_times *t, int64_t lag,
                                  int64_t now_ms) {
    if (lag <= 0)
        return 0.0;
    int64_t newest = t->fetched_ms > t->applied_ms ? t->fetched_ms : now_ms;
    int64_t base = t->applied_ms >= 0 ? t->applied_ms
                   : t->pending_ms >= 0 ? t->pending_ms : newest;
    return newest > base ? (double)(newest - base) / 1000.0 : 0.0;
}

/* The newest end offset known: the refresher's (at most ~1 s old; /readyz,
 * /metrics), or for /v1/lag one fetched after the request arrived
 * (fence_await_ends), so that no worker waits on a broker. */
static void metrics_lag_row(objlog_query *q, int32_t p, int64_t now_ms, lag_row *r) {
    memset(r, 0, sizeof(*r));
    int64_t end = wm_last_end(q->wm, p);
    /* Applied is read after the end offset, so it may be past it. */
    r->applied = objlog_materializer_applied(q->m, p);
    r->end = end > r->applied ? end : r->applied;
    r->lag = r->end - r->applied;
    r->stopped = objlog_materializer_partition_error(q->m, p, r->err,
                                                     sizeof(r->err)) != NULL;
    objlog_log_times t;
    if (objlog_materializer_log_times(q->m, p, &t) == 0)
        r->lag_s = metrics_lag_seconds(&t, r->lag, now_ms);
}

/* rows[nparts], caller frees; NULL out of memory. */
static lag_row *metrics_lag_rows(objlog_query *q, int *nparts) {
    int n = objlog_materializer_partitions(q->m);
    lag_row *rows = calloc((size_t)(n > 0 ? n : 1), sizeof(*rows));
    if (!rows)
        return NULL;
    int64_t now_ms = metrics_now_ms();
    for (int p = 0; p < n; p++)
        metrics_lag_row(q, p, now_ms, &rows[p]);
    *nparts = n;
    return rows;
}

/* ------------------------------------------------------------- /v1/lag */

static json_t *metrics_lag_json(objlog_query *q, const lag_row *rows, int n) {
    json_t *parts = json_array();
    int64_t max_lag = 0;
    double max_s = 0.0;
    for (int p = 0; p < n; p++) {
        const lag_row *r = &rows[p];
        json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:f, s:s}", "partition", p,
                              "applied", (json_int_t)r->applied, "end",
                              (json_int_t)r->end, "lag_messages",
                              (json_int_t)r->lag, "lag_seconds", r->lag_s,
                              "state", r->stopped ? "stopped" : "running");
        if (o && r->stopped)
            json_object_set_new(o, "error", json_string(r->err));
        /* A cluster node's peers learn from this who applies what. */
        if (o && q->cluster) {
            static const char *const roles[] = {"none", "active", "standby"};
            json_object_set_new(o, "role",
                                json_string(roles[objlog_materializer_role(q->m, p)]));
        }
        json_array_append_new(parts, o);
        max_lag = r->lag > max_lag ? r->lag : max_lag;
        max_s = r->lag_s > max_s ? r->lag_s : max_s;
    }
    json_t *o = json_pack("{s:o, s:I, s:f, s:I, s:I}", "partitions", parts,
                          "max_lag_messages", (json_int_t)max_lag,
                          "max_lag_seconds", max_s, "events_applied",
                          (json_int_t)objlog_materializer_events_applied(q->m),
                          "dlq_events",
                          (json_int_t)objlog_materializer_dlq_count(q->m));
    /* Its name, which its peers' log lines and metrics call it by ... */
    if (o && objlog_logger_node())
        json_object_set_new(o, "node", json_string(objlog_logger_node()));
    /* ... and where its other listeners are (its S3 endpoint). */
    if (o && q->cluster)
        json_object_set_new(o, "listeners", cluster_listeners_json(q->cluster));
    return o;
}

void metrics_lag(http_ctx *c) {
    if (fence_await_ends(c, METRICS_WM_TIMEOUT_MS) == FENCE_PARKED)
        return;
    int n = 0;
    lag_row *rows = metrics_lag_rows(c->q, &n);
    if (!rows) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    http_reply_json(c, 200, metrics_lag_json(c->q, rows, n));
    free(rows);
}

/* -------------------------------------------------------------- /readyz */

/* Why this node is not ready, into reason; "" when it is. /readyz answers
 * with it and /metrics says it as objlog_ready, so both judge alike. */
static void metrics_unready(objlog_query *q, const lag_row *rows, int n, char *reason,
                            size_t size) {
    char why[512];
    reason[0] = '\0';
    if (objlog_materializer_store_stalled(q->m, why, sizeof(why)))
        snprintf(reason, size,
                 "the store under %s cannot write: %s; applying is paused on every "
                 "partition and retried until it can", objlog_store_dir(q->store), why);
    for (int p = 0; p < n && !reason[0]; p++) {
        rd_kafka_resp_err_t last_err;
        int64_t age = wm_health(q->wm, p, &last_err);
        if (age < 0 || age > WM_STALE_MS)
            snprintf(reason, size,
                     "the log is unreachable: partition %d has had no end offset %s "
                     "(%s)", p, age < 0 ? "since objlogd started" : "for over 5 s",
                     last_err ? rd_kafka_err2str(last_err) : "no answer yet");
        else if (!objlog_materializer_owns(q->m, p))
            continue; /* a cluster node answers for its own partitions */
        else if (rows[p].stopped)
            snprintf(reason, size, "partition %d is stopped: %s", p, rows[p].err);
        else if (rows[p].lag > q->ready_max_lag)
            snprintf(reason, size, "partition %d lags %lld messages (more than %lld)", p,
                     (long long)rows[p].lag, (long long)q->ready_max_lag);
    }
}

void metrics_readyz(http_ctx *c) {
    int n = 0;
    lag_row *rows = metrics_lag_rows(c->q, &n);
    if (!rows) {
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    char reason[768];
    metrics_unready(c->q, rows, n, reason, sizeof(reason));
    free(rows);
    if (reason[0])
        http_reply_json(c, 503, json_pack("{s:b, s:s}", "ready", 0, "reason", reason));
    else
        http_reply_json(c, 200, json_pack("{s:b}", "ready", 1));
}

/* ------------------------------------------------------------- /metrics */

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void metrics_label(FILE *f, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

static void metrics_family(FILE *f, const char *name, const char *type,
                           const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metrics_partitions(FILE *f, const lag_row *rows, int n) {
    static const struct {
        const char *name, *help;
    } fam[] = {
        {"objlog_partition_applied_offset",
         "Next offset the view will apply; every offset below is applied."},
        {"objlog_partition_end_offset", "Log end offset (high watermark)."},
        {"objlog_partition_lag_messages", "End offset minus applied offset."},
        {"objlog_partition_lag_seconds",
         "Log time of the newest known event minus that of the newest applied."},
        {"objlog_partition_stopped",
         "1 when the partition stopped applying (see /v1/lag for why)."},
    };
    for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
        metrics_family(f, fam[k].name, "gauge", fam[k].help);
        for (int p = 0; p < n; p++) {
            fprintf(f, "%s{partition=\"%d\"} ", fam[k].name, p);
            switch (k) {
            case 0: fprintf(f, "%lld\n", (long long)rows[p].applied); break;
            case 1: fprintf(f, "%lld\n", (long long)rows[p].end); break;
            case 2: fprintf(f, "%lld\n", (long long)rows[p].lag); break;
            case 3: fprintf(f, "%.3f\n", rows[p].lag_s); break;
            default: fprintf(f, "%d\n", rows[p].stopped); break;
            }
        }
    }
}

static void metrics_apply(FILE *f, objlog_query *q) {
    metrics_family(f, "objlog_events_applied_total", "counter",
                   "Events applied by this process, by outcome.");
    const ProtobufCEnumDescriptor *d = &objlog__outcome_code__descriptor;
    for (unsigned i = 0; i < d->n_values; i++) {
        Objlog__OutcomeCode code = (Objlog__OutcomeCode)d->values[i].value;
        fputs("objlog_events_applied_total{outcome=\"", f);
        metrics_label(f, outcome_code_name(code));
        fprintf(f, "\"} %llu\n", (unsigned long long)
                objlog_materializer_events_by_outcome(q->m, code));
    }
    metrics_family(f, "objlog_dlq_events_total", "counter",
                   "Undecodable events sent to the dead-letter topic.");
    fprintf(f, "objlog_dlq_events_total %llu\n",
            (unsigned long long)objlog_materializer_dlq_count(q->m));
    metrics_family(f, "objlog_store_write_errors_total", "counter",
                   "Writes of the view's store that failed (batches and their retries).");
    fprintf(f, "objlog_store_write_errors_total %llu\n",
            (unsigned long long)objlog_materializer_store_write_errors(q->m));
    metrics_family(f, "objlog_store_stalled", "gauge",
                   "1 while the store cannot write (a full disk): nothing is applied and "
                   "writes are refused; /readyz says why.");
    fprintf(f, "objlog_store_stalled %d\n",
            objlog_materializer_store_stalled(q->m, NULL, 0));
}

/* A counter family of one series: most of the server's counters are
 * printed this way, so the family and its value cannot disagree on name. */
static void metrics_counter(FILE *f, const char *name, const char *help,
                            unsigned long long v) {
    metrics_family(f, name, "counter", help);
    fprintf(f, "%s %llu\n", name, v);
}

/* A fence counter family, one series per fence mode: waits and timeouts
 * are kept the same way, so they are printed the same way. */
static void metrics_fence_counter(FILE *f, const char *name, const char *help,
                                  atomic_uint_fast64_t *counts) {
    static const char *const modes[FENCE_MODES] = {"strong", "token"};
    metrics_family(f, name, "counter", help);
    for (int i = 0; i < FENCE_MODES; i++)
        fprintf(f, "%s{mode=\"%s\"} %llu\n", name, modes[i],
                (unsigned long long)atomic_load_explicit(&counts[i], memory_order_relaxed));
}

static void metrics_fences(FILE *f, objlog_query *q) {
    metrics_fence_counter(f, "objlog_fence_waits_total",
                          "Reads that had to wait for the view to apply an offset.",
                          q->fence->waits);
    metrics_fence_counter(f, "objlog_fence_timeouts_total",
                          "Reads answered 503 SlowDown because the fence timed out.",
                          q->fence->timeouts);
    metrics_family(f, "objlog_consumer_idle", "gauge",
                   "1 while the consumer is paused for idleness (no fetches).");
    fprintf(f, "objlog_consumer_idle %d\n", objlog_materializer_idle(q->m));
    metrics_family(f, "objlog_list_offsets_requests_total", "counter",
                   "ListOffsets (end offset) requests sent to the brokers.");
    fprintf(f, "objlog_list_offsets_requests_total %llu\n",
            (unsigned long long)wm_requests(q->wm));
}

static uint64_t metrics_sum(objlog_query *q, size_t off) {
    uint64_t v = 0;
    for (int i = 0; i < q->srv->nworkers; i++)
        if (q->srv->workers[i].stats)
            v += atomic_load_explicit(
                (atomic_uint_fast64_t *)((char *)q->srv->workers[i].stats + off),
                memory_order_relaxed);
    return v;
}

static unsigned long long metrics_load(atomic_uint_fast64_t *v) {
    return (unsigned long long)atomic_load_explicit(v, memory_order_relaxed);
}

/* conn.c's limits: how close to the cap, and each time one acted. */
static void metrics_connections(FILE *f, objlog_query *q) {
    int open = 0;
    for (int i = 0; i < q->srv->nworkers; i++)
        open += atomic_load_explicit(&q->srv->workers[i].nconns, memory_order_relaxed);
    metrics_family(f, "objlog_http_connections", "gauge", "Open HTTP connections.");
    fprintf(f, "objlog_http_connections %d\n", open);
    metrics_family(f, "objlog_http_connections_max", "gauge",
                   "The connection cap (--max-connections); past it new connections "
                   "wait in the listen backlog, but for 2 a worker kept for /healthz, "
                   "/readyz and /metrics on the JSON port.");
    fprintf(f, "objlog_http_connections_max %d\n", q->srv->conf.max_connections);
    metrics_family(f, "objlog_http_accept_pauses_total", "counter",
                   "Times a worker stopped accepting: at the connection cap (limit) or "
                   "out of file descriptors (descriptors).");
    fprintf(f, "objlog_http_accept_pauses_total{reason=\"limit\"} %llu\n",
            metrics_load(&q->srv->counters.conn_pauses[0]));
    fprintf(f, "objlog_http_accept_pauses_total{reason=\"descriptors\"} %llu\n",
            metrics_load(&q->srv->counters.conn_pauses[1]));
    metrics_counter(f, "objlog_http_request_timeouts_total",
                    "Connections answered 408 and closed: a request not complete within "
                    "--request-timeout-ms of its first byte.",
                    metrics_load(&q->srv->counters.request_timeouts));
    metrics_counter(f, "objlog_http_idle_closes_total",
                    "Connections closed after --idle-timeout-ms without a request in "
                    "progress.",
                    metrics_load(&q->srv->counters.idle_closes));
    metrics_counter(f, "objlog_http_framing_errors_total",
                    "Requests whose framing was malformed or ambiguous (repeated "
                    "Content-Length, a bad chunk, ...): answered 400, connection closed.",
                    metrics_load(&q->srv->counters.framing_errors));
    metrics_counter(f, "objlog_http_reserve_refusals_total",
                    "Requests other than /healthz, /readyz and /metrics on a connection "
                    "taken past the cap: answered 503.",
                    metrics_load(&q->srv->counters.reserve_refusals));
    metrics_counter(f, "objlog_http_answers_cut_total",
                    "Answers whose connection closed before they were written whole.",
                    metrics_load(&q->srv->counters.answers_cut));
}

/* GET /v1/partitions/{p}/checkpoint (ckptserve.c). */
static void metrics_checkpoints(FILE *f, objlog_query *q) {
    metrics_counter(f, "objlog_checkpoint_served_total",
                    "Partition checkpoints sent whole to another node (answered 200).",
                    metrics_load(&q->ckpt->served));
    metrics_counter(f, "objlog_checkpoint_served_bytes_total",
                    "Bytes of the checkpoints counted by objlog_checkpoint_served_total.",
                    metrics_load(&q->ckpt->bytes));
}

/* The api label of listener li: its face's name ("json", "s3"). */
static const char *metrics_api(objlog_query *q, int li) {
    return q->srv->listeners[li].face->name;
}

static void metrics_requests(FILE *f, objlog_query *q) {
    metrics_family(f, "objlog_http_requests_total", "counter",
                   "HTTP requests answered, by api (the listener: json, s3), endpoint, "
                   "method and status code (each code objlogd answers with as itself, any "
                   "other as its class, 1xx..5xx).");
    for (int li = 0; li < q->srv->nlisteners; li++)
        for (int ep = 0; ep < HTTP_EP_COUNT; ep++)
            for (int m = 0; m < HTTP_M_COUNT; m++)
                for (int s = 0; s < HTTP_CODE_SLOTS; s++) {
                    uint64_t v =
                        metrics_sum(q, offsetof(http_stats, status[li][ep][m][s]));
                    char code[16];
                    if (v)
                        fprintf(f, "objlog_http_requests_total{api=\"%s\",endpoint=\"%s\","
                                   "method=\"%s\",code=\"%s\"} %llu\n",
                                metrics_api(q, li), http_endpoint_name(ep),
                                http_method_name(m), http_code_label(s, code, sizeof(code)),
                                (unsigned long long)v);
                }
}

/* One listener, endpoint and method's histogram; nothing when it had no
 * request. */
static void metrics_histogram(FILE *f, objlog_query *q, int li, int ep, int m) {
    uint64_t counts[HTTP_HIST_BUCKETS + 1], total = 0;
    for (int b = 0; b <= HTTP_HIST_BUCKETS; b++)
        total += counts[b] = metrics_sum(q, offsetof(http_stats, hist[li][ep][m][b]));
    if (!total)
        return;
    char labels[128];
    snprintf(labels, sizeof(labels), "api=\"%s\",endpoint=\"%s\",method=\"%s\"",
             metrics_api(q, li), http_endpoint_name(ep), http_method_name(m));
    uint64_t cum = 0;
    for (int b = 0; b <= HTTP_HIST_BUCKETS; b++) {
        cum += counts[b];
        if (b < HTTP_HIST_BUCKETS)
            fprintf(f, "objlog_http_request_duration_seconds_bucket{%s,le=\"%g\"} %llu\n",
                    labels, http_hist_bounds[b], (unsigned long long)cum);
        else
            fprintf(f, "objlog_http_request_duration_seconds_bucket{%s,le=\"+Inf\"} %llu\n",
                    labels, (unsigned long long)cum);
    }
    uint64_t ns = metrics_sum(q, offsetof(http_stats, sum_ns[li][ep][m]));
    fprintf(f, "objlog_http_request_duration_seconds_sum{%s} %.9f\n", labels,
            (double)ns / 1e9);
    fprintf(f, "objlog_http_request_duration_seconds_count{%s} %llu\n", labels,
            (unsigned long long)cum);
}

static void metrics_latency(FILE *f, objlog_query *q) {
    metrics_family(f, "objlog_http_request_duration_seconds", "histogram",
                   "Time from dispatch to reply, by api (json, s3), endpoint and method.");
    for (int li = 0; li < q->srv->nlisteners; li++)
        for (int ep = 0; ep < HTTP_EP_COUNT; ep++)
            for (int m = 0; m < HTTP_M_COUNT; m++)
                metrics_histogram(f, q, li, ep, m);
}

/* Where an ack=applied write's time goes (write.h, gateway stages). */
static void metrics_write_stages(FILE *f, objlog_query *q) {
    metrics_family(f, "objlog_write_stage_seconds", "histogram",
                   "ack=applied writes answered from their outcome, by stage: log (request "
                   "to the log's ack), apply (ack to outcome applied), answer (outcome to "
                   "answer written).");
    for (int st = 0; q->gw && st < GATEWAY_STAGES; st++) {
        gateway_stage_hist h;
        gateway_stage_get(q->gw, st, &h);
        uint64_t cum = 0;
        for (int b = 0; b <= HTTP_HIST_BUCKETS; b++) {
            cum += h.count[b];
            if (b < HTTP_HIST_BUCKETS)
                fprintf(f, "objlog_write_stage_seconds_bucket{stage=\"%s\",le=\"%g\"} %llu\n",
                        gateway_stage_name(st), http_hist_bounds[b], (unsigned long long)cum);
            else
                fprintf(f, "objlog_write_stage_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n",
                        gateway_stage_name(st), (unsigned long long)cum);
        }
        fprintf(f, "objlog_write_stage_seconds_sum{stage=\"%s\"} %.9f\n",
                gateway_stage_name(st), (double)h.sum_ns / 1e9);
        fprintf(f, "objlog_write_stage_seconds_count{stage=\"%s\"} %llu\n",
                gateway_stage_name(st), (unsigned long long)cum);
    }
}

/* ------------------------------------------------- process and store */

/* /proc/self/stat field 22 (start time in clock ticks after boot) plus the
 * boot time from /proc/stat: the Unix time the process started, 0 unknown. */
static double metrics_start_time(void) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long start = 0;
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (!p || sscanf(p, "%llu", &start) != 1)
        return 0;
    unsigned long long btime = 0;
    char line[256];
    FILE *st = fopen("/proc/stat", "r");
    while (st && fgets(line, sizeof(line), st))
        if (sscanf(line, "btime %llu", &btime) == 1)
            break;
    if (st)
        fclose(st);
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? (double)btime + (double)start / (double)hz : 0;
}

static long metrics_open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return d ? n - 1 : -1; /* not counting opendir's own */
}

/* The standard process_* families (client_golang's names and meanings). */
static void metrics_process(FILE *f) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    metrics_family(f, "process_cpu_seconds_total", "counter",
                   "Total user and system CPU time spent in seconds.");
    fprintf(f, "process_cpu_seconds_total %.6f\n",
            (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    long pages = 0, resident = 0;
    FILE *sm = fopen("/proc/self/statm", "r");
    if (sm && fscanf(sm, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    if (sm)
        fclose(sm);
    metrics_family(f, "process_resident_memory_bytes", "gauge",
                   "Resident memory size in bytes.");
    fprintf(f, "process_resident_memory_bytes %ld\n", resident * sysconf(_SC_PAGESIZE));
    metrics_family(f, "process_open_fds", "gauge", "Number of open file descriptors.");
    fprintf(f, "process_open_fds %ld\n", metrics_open_fds());
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        metrics_family(f, "process_max_fds", "gauge",
                       "Maximum number of open file descriptors.");
        fprintf(f, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
    metrics_family(f, "process_start_time_seconds", "gauge",
                   "Start time of the process since unix epoch in seconds.");
    fprintf(f, "process_start_time_seconds %.2f\n", metrics_start_time());
    metrics_family(f, "objlog_build_info", "gauge",
                   "Always 1; the labels say which objlog and librdkafka run.");
    fprintf(f, "objlog_build_info{version=\"%s\",librdkafka=\"%s\"} 1\n",
            objlog_producer_version(), rd_kafka_version_str());
}

/* The log ring's counts: every line since start, those it dropped too. */
static void metrics_log_lines(FILE *f, objlog_query *q) {
    uint64_t counts[LOGRING_LEVELS];
    logring_counts(q->logring, counts);
    metrics_family(f, "objlog_log_lines_total", "counter",
                   "Log lines this node wrote at WARN or ERROR (and CRIT), by level "
                   "(GET /v1/log has the recent ones).");
    for (int l = 0; l < LOGRING_LEVELS; l++)
        fprintf(f, "objlog_log_lines_total{level=\"%s\"} %llu\n",
                logring_level_name((logring_level)l), (unsigned long long)counts[l]);
}

/* librdkafka's figures: brokers' round-trip times (the consumer's
 * statistics) and what the gateway's producer has not had acknowledged. */
static void metrics_kafka(FILE *f, objlog_query *q) {
    objlog_broker_rtt rtt[OBJLOG_MAX_BROKER_RTTS];
    int n = objlog_materializer_broker_rtts(q->m, rtt, OBJLOG_MAX_BROKER_RTTS);
    metrics_family(f, "objlog_kafka_broker_rtt_seconds", "gauge",
                   "Round-trip time to each broker over the last statistics window "
                   "(librdkafka), average and 99th percentile.");
    for (int i = 0; i < n; i++) {
        fprintf(f, "objlog_kafka_broker_rtt_seconds{broker=\"%d\",stat=\"avg\"} %.6f\n",
                (int)rtt[i].broker, (double)rtt[i].avg_us / 1e6);
        fprintf(f, "objlog_kafka_broker_rtt_seconds{broker=\"%d\",stat=\"p99\"} %.6f\n",
                (int)rtt[i].broker, (double)rtt[i].p99_us / 1e6);
    }
    objlog_producer_stats ps;
    objlog_producer_stats_get(q->producer, &ps);
    metrics_family(f, "objlog_gateway_produce_queue_messages", "gauge",
                   "Gateway writes librdkafka holds that the log has not acknowledged.");
    fprintf(f, "objlog_gateway_produce_queue_messages %llu\n",
            (unsigned long long)ps.kafka_queue);
    metrics_counter(f, "objlog_gateway_wrong_range_resends_total",
                    "Gateway writes a partition answered WrongRange (a handoff moved their "
                    "range) sent again by the newer map.",
                    (unsigned long long)ps.wrong_range_resends);
}

/* The view's durability (a cache of the log, WAL off by default) and its
 * apply threads. */
static void metrics_gauge(FILE *f, const char *name, const char *help, double v) {
    metrics_family(f, name, "gauge", help);
    fprintf(f, "%s %.10g\n", name, v);
}

/* Range handoffs run by this node (ranges.h). */
static void metrics_handoffs(FILE *f, objlog_query *q) {
    ranges_state *r = q->ranges;
    metrics_family(f, "objlog_range_handoffs_total", "counter",
                   "Range handoffs this node ran, by kind and result.");
    for (int k = 0; k < RANGES_KINDS; k++)
        for (int ok = 0; ok < 2; ok++)
            fprintf(f, "objlog_range_handoffs_total{kind=\"%s\",result=\"%s\"} %llu\n",
                    ranges_kind_name((ranges_kind)k), ok ? "failed" : "ok",
                    (unsigned long long)atomic_load(&r->done[k][ok]));
    metrics_counter(f, "objlog_range_import_requests_total",
                    "Request records the targets of this node's handoffs took over.",
                    (unsigned long long)atomic_load(&r->imported));
    metrics_family(f, "objlog_range_handoff_seconds_total", "counter",
                   "Time this node's completed handoffs took, request to published map.");
    fprintf(f, "objlog_range_handoff_seconds_total %.6f\n",
            (double)atomic_load(&r->seconds_us) / 1e6);
    metrics_family(f, "objlog_range_writes_held_seconds_total", "counter",
                   "Time writes to moving ranges waited in this node's producer.");
    fprintf(f, "objlog_range_writes_held_seconds_total %.6f\n",
            (double)atomic_load(&r->held_us) / 1e6);
    metrics_gauge(f, "objlog_range_writes_held_max_seconds",
                  "The longest a handoff of this node held writes to its range.",
                  (double)atomic_load(&r->held_max_us) / 1e6);
    metrics_counter(f, "objlog_range_writes_held_total",
                    "Writes that waited in this node's producer for a handoff to end.",
                    (unsigned long long)producer_held_writes(q->producer));
    metrics_family(f, "objlog_range_auto_splits_total", "counter",
                   "Splits this node made by itself (--auto-split), by result.");
    for (int ok = 0; ok < 2; ok++)
        fprintf(f, "objlog_range_auto_splits_total{result=\"%s\"} %llu\n",
                ok ? "failed" : "ok", (unsigned long long)atomic_load(&r->auto_splits[ok]));
    metrics_counter(f, "objlog_range_bucket_relays_total",
                    "Bucket settings this node relayed to partitions holding ranges inside "
                    "the bucket.",
                    (unsigned long long)atomic_load(&r->relays));
}

static void metrics_durability(FILE *f, objlog_query *q) {
    objlog_store_durability d;
    objlog_store_durability_get(q->store, &d);
    metrics_gauge(f, "objlog_store_wal",
                  "1 when view batches go through RocksDB's WAL (--wal on), 0 when the "
                  "view is a cache of the log flushed atomically with its offsets.",
                  d.wal);
    metrics_counter(f, "objlog_store_flushes_total",
                    "Atomic flushes of every column family by the flusher or at stop.",
                    (unsigned long long)d.flushes);
    metrics_counter(f, "objlog_store_flush_errors_total",
                    "Flushes RocksDB refused (the writes stay in memory; retried).",
                    (unsigned long long)d.flush_errors);
    metrics_gauge(f, "objlog_store_unflushed",
                  "1 while a view write is in memory only (WAL off): a crash re-applies it.",
                  d.unflushed);
    if (!q->m)
        return;
    metrics_gauge(f, "objlog_apply_threads",
                  "Threads applying partitions, each owning a fixed set (--apply-threads).",
                  objlog_materializer_apply_threads(q->m));
    int64_t backlog;
    double rate, eta;
    objlog_materializer_catchup(q->m, &backlog, &rate, &eta);
    metrics_gauge(f, "objlog_apply_backlog_events",
                  "Events in the log past the applied offsets of the partitions applied "
                  "here (from the consumers' last fetches).",
                  (double)backlog);
    metrics_gauge(f, "objlog_apply_events_per_second",
                  "Events applied per second over the last 2 s.", rate);
    metrics_gauge(f, "objlog_apply_eta_seconds",
                  "Seconds until the backlog is applied at that rate (0: caught up, "
                  "-1: unknown).",
                  eta);
    const rangemap *rm = objlog_materializer_rangemap(q->m);
    metrics_gauge(f, "objlog_ranges", "Key ranges in the range map (GET /v1/ranges).",
                  rangemap_count(rm));
    metrics_gauge(f, "objlog_range_map_epoch", "Epoch of the range map.",
                  rangemap_epoch(rm));
    metrics_handoffs(f, q);
}

/* RocksDB's own figures per column family (integer properties). */
static void metrics_rocksdb(FILE *f, objlog_query *q) {
    static const struct {
        const char *name, *type, *prop, *help;
    } fam[] = {
        {"objlog_rocksdb_live_sst_bytes", "gauge", "rocksdb.live-sst-files-size",
         "Bytes of the SST files of the current version."},
        {"objlog_rocksdb_memtable_bytes", "gauge", "rocksdb.cur-size-all-mem-tables",
         "Bytes held by the memtables, active and immutable."},
        {"objlog_rocksdb_pending_compaction_bytes", "gauge",
         "rocksdb.estimate-pending-compaction-bytes",
         "Bytes RocksDB estimates compaction must rewrite to settle the levels."},
        {"objlog_rocksdb_write_stopped", "gauge", "rocksdb.is-write-stopped",
         "1 while RocksDB stops writes (a write stall), else 0."},
        {"objlog_rocksdb_delayed_write_rate_bytes", "gauge",
         "rocksdb.actual-delayed-write-rate",
         "Write rate RocksDB slows writes to while delaying them (0: not delayed)."},
    };
    /* One cache for every column family: one sample each, no cf label. */
    size_t used = 0, cap = 0;
    objlog_store_block_cache(q->store, &used, &cap);
    metrics_family(f, "objlog_rocksdb_block_cache_bytes", "gauge",
                   "Bytes the block cache shared by every column family holds.");
    fprintf(f, "objlog_rocksdb_block_cache_bytes %zu\n", used);
    metrics_family(f, "objlog_rocksdb_block_cache_capacity_bytes", "gauge",
                   "Capacity of that cache (--block-cache-mb).");
    fprintf(f, "objlog_rocksdb_block_cache_capacity_bytes %zu\n", cap);
    metrics_durability(f, q);
    rocksdb_t *db = objlog_store_db(q->store);
    for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
        metrics_family(f, fam[i].name, fam[i].type, fam[i].help);
        for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
            uint64_t v = 0;
            if (rocksdb_property_int_cf(db, objlog_store_cf(q->store, (objlog_cf)cf),
                                        fam[i].prop, &v) != 0)
                v = 0;
            fprintf(f, "%s{cf=\"%s\"} %llu\n", fam[i].name, objlog_cf_name((objlog_cf)cf),
                    (unsigned long long)v);
        }
    }
}

void metrics_get(http_ctx *c) {
    int n = 0;
    lag_row *rows = metrics_lag_rows(c->q, &n);
    char *text = NULL;
    size_t len = 0;
    FILE *f = rows ? open_memstream(&text, &len) : NULL;
    if (!f) {
        free(rows);
        http_reply_error(c, 500, "InternalError", "out of memory");
        return;
    }
    char reason[768];
    metrics_unready(c->q, rows, n, reason, sizeof(reason));
    metrics_family(f, "objlog_ready", "gauge",
                   "1 while GET /readyz answers 200; 0 while it answers 503 (it says why).");
    fprintf(f, "objlog_ready %d\n", !reason[0]);
    metrics_partitions(f, rows, n);
    metrics_apply(f, c->q);
    metrics_fences(f, c->q);
    metrics_requests(f, c->q);
    metrics_connections(f, c->q);
    metrics_checkpoints(f, c->q);
    admit_metrics(f, c->q->admit);
    metrics_latency(f, c->q);
    metrics_write_stages(f, c->q);
    metrics_rocksdb(f, c->q);
    if (c->q->cluster)
        cluster_metrics(f, c->q->cluster);
    metrics_kafka(f, c->q);
    metrics_log_lines(f, c->q);
    lc_worker_metrics(f, c->q->lc);
    notifier_metrics(f, c->q->notify);
    blobgc_metrics(f, c->q->blobgc);
    metrics_process(f);
    fclose(f);
    free(rows);
    http_reply_text(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}
