/* test_metrics.c: GET /metrics of a real `objlogd --brokers` view
 * (docs/ARCHITECTURE.md, "Reads") of the test's log: the mock cluster of
 * `objlogd --kafka-only` or a real 3-node Kafka (testlog.h), fresh for this
 * program, so every offset is known. After known writes and reads, the
 * exposition must
 * pass `promtool check metrics` (exit 0, no "error" in its output; the
 * test fails, never skips, when promtool is missing: it comes from
 * Debian's prometheus package, see ops/setup.sh), declare every metric
 * family in families[] below with its type, and carry the exact values
 * this test caused: offsets, outcomes by label, request counts and the
 * latency histogram per endpoint. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "httpc.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"
#include "token.h"

typedef struct server {
    testlog *log;
    proc *daemon;
    char dir[256];
    char url[128];
} server;

static server g_srv;

static int group_setup(void **state) {
    (void)state;
    char bin[512], data[300], listen[64];
    if (proc_tmpdir(g_srv.dir, sizeof(g_srv.dir)) < 0)
        return -1;
    snprintf(data, sizeof(data), "%s/data", g_srv.dir);
    proc_bin("query/objlogd", bin, sizeof(bin));
    g_srv.log = testlog_start(4);
    if (!g_srv.log) {
        proc_rmtree(g_srv.dir);
        return -1;
    }
    char *argv[] = {bin, "--brokers", (char *)testlog_bootstrap(g_srv.log), "--listen",
                    "127.0.0.1:0", "--data", data, NULL};
    g_srv.daemon = proc_spawn(argv, NULL);
    if (!g_srv.daemon ||
        proc_wait_line(g_srv.daemon, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000) < 0 ||
        proc_wait_line(g_srv.daemon, "OBJLOG_READY", NULL, 0, 60000) < 0) {
        fprintf(stderr, "objlogd did not become ready\n");
        if (g_srv.daemon)
            proc_kill(g_srv.daemon);
        g_srv.daemon = NULL;
        testlog_stop(g_srv.log);
        proc_rmtree(g_srv.dir);
        return -1;
    }
    snprintf(g_srv.url, sizeof(g_srv.url), "http://%s", listen);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    int st = proc_stop(g_srv.daemon, 10000);
    testlog_stop(g_srv.log);
    proc_rmtree(g_srv.dir);
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* promtool's path: $PROMTOOL (ops/setup.sh extracts it from Debian's
 * prometheus package), else $PATH; fails the test saying how to get it. */
static void find_promtool(char *out, size_t n) {
    const char *env = getenv("PROMTOOL");
    if (env && *env && access(env, X_OK) == 0) {
        snprintf(out, n, "%s", env);
        return;
    }
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    assert_non_null(copy);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, n, "%s/promtool", d);
        if (access(out, X_OK) == 0) {
            free(copy);
            return;
        }
    }
    free(copy);
    fail_msg("promtool not found ($PROMTOOL, $PATH): run ops/setup.sh test, which takes "
             "it out of Debian's prometheus package, to validate /metrics");
}

/* Value of the sample `name` whose labels are exactly `labels` (a
 * NULL-ended list of `k="v"` strings, in any order); fails if absent. */
static double sample(const char *body, const char *name, const char *const *labels) {
    size_t nl = strlen(name);
    int want = 0;
    while (labels && labels[want])
        want++;
    for (const char *line = body; line && *line;) {
        const char *next = strchr(line, '\n');
        size_t ll = next ? (size_t)(next - line) : strlen(line);
        char buf[1024];
        if (ll < sizeof(buf) && !strncmp(line, name, nl) &&
            (line[nl] == ' ' || line[nl] == '{')) {
            memcpy(buf, line, ll);
            buf[ll] = '\0';
            char *close = strrchr(buf, '}');
            int have = 0, match = 1;
            if (buf[nl] == '{' && close) {
                *close = '\0';
                for (const char *c = buf + nl + 1; *c; c++)
                    have += *c == '=';
                for (int i = 0; i < want; i++)
                    if (!strstr(buf + nl + 1, labels[i]))
                        match = 0;
            }
            if (match && have == want)
                return strtod(close && buf[nl] == '{' ? close + 1 : buf + nl, NULL);
        }
        line = next ? next + 1 : NULL;
    }
    fail_msg("no sample %s with %d given labels in /metrics:\n%s", name, want, body);
    return -1;
}

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static void do_ok(httpc *c, const char *method, const char *path, const char *body,
                  long want, httpc_resp *r) {
    assert_int_equal(httpc_do(c, method, path, body, NULL, r), 0);
    if (r->status != want)
        fail_msg("%s %s: HTTP %ld, want %ld: %s", method, path, r->status, want, r->body);
}

/* Fetches /metrics until the hot partition's end offset is `end` (the
 * end offsets come from a cache); returns a malloc'd copy of the body. */
static char *metrics_settled(httpc *c, int hot, long end) {
    char part[32];
    snprintf(part, sizeof(part), "partition=\"%d\"", hot);
    for (int i = 0; i < 100; i++) {
        httpc_resp r;
        do_ok(c, "GET", "/metrics", NULL, 200, &r);
        assert_non_null(strstr(r.headers, "content-type: text/plain; version=0.0.4"));
        if (sample(r.body, "objlog_partition_end_offset", L(part)) == (double)end)
            return strdup(r.body);
        usleep(50000);
    }
    fail_msg("end offset of partition %d never reached %ld", hot, end);
    return NULL;
}

static void test_metrics_promtool_and_values(void **state) {
    (void)state;
    char promtool[1024];
    find_promtool(promtool, sizeof(promtool));
    httpc *c = httpc_new(g_srv.url);
    assert_non_null(c);
    httpc_resp r;
    do_ok(c, "PUT", "/v1/buckets/met", "{}", 200, &r);
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/buckets/met/objects/k%d", i);
        do_ok(c, "PUT", path, "{\"size\":1}", 200, &r);
    }
    token_part tp[4];
    assert_int_equal(token_parse(r.token, tp, 4), 1);
    assert_int_equal(tp[0].offset, 3); /* the bucket's partition: offsets 0..3 */
    int hot = (int)tp[0].partition;
    assert_int_equal(httpc_do(c, "PUT", "/v1/buckets/met", "{}", NULL, &r), 0);
    assert_int_equal(r.status, 409); /* BucketAlreadyExists: offset 4 */
    for (int i = 0; i < 3; i++)
        do_ok(c, "GET", "/v1/buckets/met/objects/k1", NULL, 200, &r);
    do_ok(c, "GET", "/v1/buckets/met/objects/nope", NULL, 404, &r);
    do_ok(c, "GET", "/v1/buckets/met/objects/k2?consistency=eventual", NULL, 200, &r);
    do_ok(c, "GET", "/v1/lag", NULL, 200, &r);

    char *body = metrics_settled(c, hot, 5);
    char out[65536], err[8192];
    char *argv[] = {promtool, "check", "metrics", NULL};
    int rc = proc_run(argv, body, out, sizeof(out), err, sizeof(err), 30000);
    /* Lint clean: promtool prints nothing at all. */
    if (rc != 0 || out[0] || err[0])
        fail_msg("promtool check metrics: exit %d\nstdout: %s\nstderr: %s\nmetrics:\n%s", rc,
                 out, err, body);

    static const char *const families[] = {
        "objlog_partition_applied_offset gauge", "objlog_partition_end_offset gauge",
        "objlog_partition_lag_messages gauge", "objlog_partition_lag_seconds gauge",
        "objlog_partition_stopped gauge", "objlog_events_applied_total counter",
        "objlog_dlq_events_total counter", "objlog_store_write_errors_total counter",
        "objlog_store_stalled gauge", "objlog_ready gauge", "objlog_fence_waits_total counter",
        "objlog_fence_timeouts_total counter", "objlog_list_offsets_requests_total counter",
        "objlog_http_requests_total counter",
        "objlog_http_request_duration_seconds histogram",
        "process_cpu_seconds_total counter", "process_resident_memory_bytes gauge",
        "process_open_fds gauge", "process_max_fds gauge", "process_start_time_seconds gauge",
        "objlog_build_info gauge", "objlog_rocksdb_live_sst_bytes gauge",
        "objlog_rocksdb_memtable_bytes gauge", "objlog_rocksdb_pending_compaction_bytes gauge",
        "objlog_rocksdb_write_stopped gauge", "objlog_rocksdb_delayed_write_rate_bytes gauge",
        "objlog_rocksdb_block_cache_bytes gauge",
        "objlog_rocksdb_block_cache_capacity_bytes gauge",
        "objlog_consumer_idle gauge", "objlog_kafka_broker_rtt_seconds gauge",
        "objlog_gateway_produce_queue_messages gauge", NULL};
    for (int i = 0; families[i]; i++) {
        char t[128];
        snprintf(t, sizeof(t), "# TYPE %s\n", families[i]);
        if (!strstr(body, t))
            fail_msg("missing \"%s\" in /metrics:\n%s", t, body);
    }

    for (int p = 0; p < 4; p++) {
        char part[32];
        snprintf(part, sizeof(part), "partition=\"%d\"", p);
        double off = p == hot ? 5 : 0;
        assert_true(sample(body, "objlog_partition_applied_offset", L(part)) == off);
        assert_true(sample(body, "objlog_partition_end_offset", L(part)) == off);
        assert_true(sample(body, "objlog_partition_lag_messages", L(part)) == 0);
        assert_true(sample(body, "objlog_partition_lag_seconds", L(part)) == 0);
        assert_true(sample(body, "objlog_partition_stopped", L(part)) == 0);
    }
    assert_true(sample(body, "objlog_events_applied_total", L("outcome=\"OK\"")) == 4);
    assert_true(sample(body, "objlog_events_applied_total",
                       L("outcome=\"BucketAlreadyExists\"")) == 1);
    assert_true(sample(body, "objlog_dlq_events_total", NULL) == 0);
    /* the store took every write */
    assert_true(sample(body, "objlog_store_write_errors_total", NULL) == 0);
    assert_true(sample(body, "objlog_store_stalled", NULL) == 0);
    /* every partition applied, the log answers: /readyz would answer 200 */
    assert_true(sample(body, "objlog_ready", NULL) == 1);
    assert_true(sample(body, "objlog_list_offsets_requests_total", NULL) >= 1);
    assert_true(sample(body, "objlog_http_requests_total",
                       L("api=\"json\"",
                         "endpoint=\"get_object\"", "method=\"GET\"", "code=\"200\"")) == 4);
    assert_true(sample(body, "objlog_http_requests_total",
                       L("api=\"json\"",
                         "endpoint=\"get_object\"", "method=\"GET\"", "code=\"404\"")) == 1);
    assert_true(sample(body, "objlog_http_requests_total",
                       L("api=\"json\"",
                         "endpoint=\"put_object\"", "method=\"PUT\"", "code=\"200\"")) == 3);
    assert_true(sample(body, "objlog_http_requests_total",
                       L("api=\"json\"",
                         "endpoint=\"lag\"", "method=\"GET\"", "code=\"200\"")) == 1);
    assert_true(sample(body, "objlog_http_request_duration_seconds_count",
                       L("api=\"json\"",
                         "endpoint=\"get_object\"", "method=\"GET\"")) == 5);
    assert_true(sample(body, "objlog_http_request_duration_seconds_bucket",
                       L("api=\"json\"",
                         "endpoint=\"get_object\"", "method=\"GET\"", "le=\"+Inf\"")) == 5);
    assert_true(sample(body, "objlog_http_request_duration_seconds_sum",
                       L("api=\"json\"",
                         "endpoint=\"get_object\"", "method=\"GET\"")) > 0);
    /* process and store figures: plausible values */
    double now = (double)time(NULL);
    assert_true(sample(body, "process_cpu_seconds_total", NULL) > 0);
    assert_true(sample(body, "process_resident_memory_bytes", NULL) > 1e6);
    assert_true(sample(body, "process_open_fds", NULL) >= 10);
    assert_true(sample(body, "process_max_fds", NULL) >= sample(body, "process_open_fds", NULL));
    double started = sample(body, "process_start_time_seconds", NULL);
    assert_true(started > now - 600 && started <= now + 1);
    char ver[64], rdk[64];
    snprintf(ver, sizeof(ver), "version=\"%s\"", objlog_producer_version());
    snprintf(rdk, sizeof(rdk), "librdkafka=\"%s\"", rd_kafka_version_str());
    assert_true(sample(body, "objlog_build_info", L(ver, rdk)) == 1);
    /* 5 objects were applied: the memtables hold them, nothing is stopped */
    assert_true(sample(body, "objlog_rocksdb_memtable_bytes", L("cf=\"objects\"")) > 0);
    assert_true(sample(body, "objlog_rocksdb_write_stopped", L("cf=\"objects\"")) == 0);
    assert_true(sample(body, "objlog_rocksdb_live_sst_bytes", L("cf=\"objects\"")) >= 0);
    /* the default --block-cache-mb 32, exactly */
    assert_true(sample(body, "objlog_rocksdb_block_cache_capacity_bytes", NULL) == 33554432);
    assert_true(sample(body, "objlog_rocksdb_block_cache_bytes", NULL) >= 0);
    /* every gateway write was acknowledged by the log */
    assert_true(sample(body, "objlog_gateway_produce_queue_messages", NULL) == 0);
    free(body);
    httpc_destroy(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_promtool_and_values),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
