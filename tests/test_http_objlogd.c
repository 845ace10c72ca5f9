/* test_http_objlogd.c: the objlogd process interface (/tmp/http_api.md).
 *
 * Flags of objlogd itself, on the mock variant only (they start their own
 * embedded or --kafka-only cluster, or none, never the test's log): the
 * OBJLOG_* stdout lines, --embedded serving over HTTP, graceful SIGTERM
 * with exit 0, --kafka-only plus a second objlogd on --brokers, a clear
 * error for a cluster without the topics, exit 2 naming a bad flag.
 *
 * Flags of a view, on both logs: `objlogd --brokers` views of the test's
 * log (testlog.h: the mock cluster of `objlogd --kafka-only` or a real
 * 3-node Kafka, started once for the program) serve and stop with exit 0;
 * --ready-max-lag, --max-timeout-ms and --test-apply-delay-ms; the
 * bench-only --test-no-stats.
 *
 * Every child is stopped by the test (proc.h kills leftovers even on
 * failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "proc.h"
#include "testlog.h"

static char objlogd[1024];
static testlog *g_log;           /* the views' log, for the whole program */
static char g_boot[1024];

/* Cases about objlogd's own cluster flags check nothing the real-Kafka
 * variant adds: they run once, on the mock variant. */
static void mock_variant_only(void) {
    if (testlog_is_kafka()) {
        print_message("starts its own cluster (or none), never the test's log: checked "
                      "by the mock variant only\n");
        skip();
    }
}

static int group_setup(void **state) {
    (void)state;
    g_log = testlog_start(2);
    if (!g_log)
        return -1;
    snprintf(g_boot, sizeof(g_boot), "%s", testlog_bootstrap(g_log));
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    testlog_stop(g_log);
    g_log = NULL;
    return 0;
}

static long http(const char *method, const char *url, const char *body,
                 char *out, size_t out_size);

static size_t sink(char *p, size_t sz, size_t n, void *arg) {
    char *out = ((char **)arg)[0];
    size_t cap = (size_t)((char **)arg)[1];
    size_t len = strlen(out), add = sz * n;
    if (len + add >= cap)
        add = cap - len - 1;
    memcpy(out + len, p, add);
    out[len + add] = '\0';
    return sz * n;
}

static long http(const char *method, const char *url, const char *body,
                 char *out, size_t out_size) {
    CURL *c = curl_easy_init();
    void *arg[2] = {out, (void *)out_size};
    long status = -1;
    out[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, arg);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

/* Starts objlogd with args (NULL-ended, after argv[0]) and waits for READY;
 * fills listen ("127.0.0.1:port") unless kafka_only. */
static proc *start(char *const *args, char *bootstrap, char *listen, int kafka_only) {
    char *argv[16] = {objlogd};
    for (int i = 0; args[i]; i++)
        argv[i + 1] = args[i];
    proc *p = proc_spawn(argv, NULL);
    assert_non_null(p);
    if (bootstrap)
        assert_int_equal(proc_wait_line(p, "OBJLOG_BOOTSTRAP=", bootstrap, 512, 60000), 0);
    if (!kafka_only)
        assert_int_equal(proc_wait_line(p, "OBJLOG_LISTEN=", listen, 64, 60000), 0);
    char rest[16];
    assert_int_equal(proc_wait_line(p, "OBJLOG_READY", rest, sizeof(rest), 60000), 0);
    return p;
}

/* partition and offset of an ack=logged write's answer; fails without. */
static void logged_at(const char *body, int *partition, long long *offset) {
    const char *p = strstr(body, "\"partition\":"), *o = strstr(body, "\"offset\":");
    if (!p || !o || sscanf(p, "\"partition\":%d", partition) != 1 ||
        sscanf(o, "\"offset\":%lld", offset) != 1)
        fail_msg("not an ack=logged answer: %s", body);
}

static void assert_exit_0(int status) {
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_embedded_serves_and_stops(void **state) {
    (void)state;
    mock_variant_only();
    char dir[256], bootstrap[512], listen[64], url[256], out[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *args[] = {"--listen", "127.0.0.1:0", "--data", dir, "--partitions", "2",
                    "--threads", "2", NULL};
    proc *p = start(args, bootstrap, listen, 0);
    assert_non_null(strstr(bootstrap, "127.0.0.1:"));
    assert_memory_equal(listen, "127.0.0.1:", 10);

    snprintf(url, sizeof(url), "http://%s/healthz", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_string_equal(out, "{\"status\":\"ok\",\"events_applied\":0,\"dlq_events\":0}\n");
    snprintf(url, sizeof(url), "http://%s/v1/buckets/proc", listen);
    assert_int_equal(http("PUT", url, NULL, out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/proc/objects/x/y", listen);
    assert_int_equal(http("PUT", url, "{\"etag\":\"e\"}", out, sizeof(out)), 200);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "\"key\":\"x/y\""));

    assert_exit_0(proc_stop(p, 20000));
    proc_rmtree(dir);
}

static void test_kafka_only_and_brokers(void **state) {
    (void)state;
    mock_variant_only();
    char dir[256], bootstrap[512], listen[64], url[256], out[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *kargs[] = {"--kafka-only", "--partitions", "2", NULL};
    proc *k = start(kargs, bootstrap, NULL, 1);
    char *args[] = {"--brokers", bootstrap, "--listen", "127.0.0.1:0", "--data", dir, NULL};
    proc *d = start(args, NULL, listen, 0);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote", listen);
    assert_int_equal(http("PUT", url, "{\"versioning\":\"Enabled\"}", out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote/objects", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "\"key_count\":0"));
    assert_exit_0(proc_stop(d, 20000));
    assert_exit_0(proc_stop(k, 20000));
    proc_rmtree(dir);
}

/* --test-no-stats (bench only): data reads work, stats reads answer 503,
 * and the marked store is refused by an objlogd with counters. */
static void test_no_stats_flag(void **state) {
    (void)state;
    char dir[256], listen[64], url[256], out[4096], errout[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *args[] = {"--brokers", g_boot, "--listen", "127.0.0.1:0", "--data", dir,
                    "--test-no-stats", NULL};
    proc *d = start(args, NULL, listen, 0);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/nost", listen);
    assert_int_equal(http("PUT", url, NULL, out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/nost/objects/a", listen);
    assert_int_equal(http("PUT", url, "{\"etag\":\"e\",\"size\":5}", out, sizeof(out)), 200);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    const char *stats[] = {"/v1/stats", "/v1/buckets/nost/stats", "/v1/tenants/t/stats",
                           "/v1/stats/top"};
    for (int i = 0; i < 4; i++) {
        snprintf(url, sizeof(url), "http://%s%s", listen, stats[i]);
        assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 503);
        assert_non_null(strstr(out, "\"code\":\"ServiceUnavailable\""));
        assert_non_null(strstr(out, "--test-no-stats"));
    }
    assert_exit_0(proc_stop(d, 20000));
    char *again[] = {objlogd, "--brokers", g_boot, "--listen", "127.0.0.1:0", "--data",
                     dir, NULL};
    int rc = proc_run(again, NULL, out, sizeof(out), errout, sizeof(errout), 60000);
    if (rc != 1 || !strstr(errout, "applied without the stats view"))
        print_error("rc %d: %s\n", rc, errout);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(errout, "applied without the stats view"));
    proc_rmtree(dir);
}

/* A view of the program's log serves writes and reads, stops on SIGTERM
 * with exit 0, and a restart on the same directory serves what it had. */
static void test_brokers_view_serves_and_stops(void **state) {
    (void)state;
    char dir[256], listen[64], url[256], out[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *args[] = {"--brokers", g_boot, "--listen", "127.0.0.1:0", "--data", dir, NULL};
    proc *d = start(args, NULL, listen, 0);
    snprintf(url, sizeof(url), "http://%s/healthz", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "{\"status\":\"ok\","));
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote-view", listen);
    assert_int_equal(http("PUT", url, "{\"versioning\":\"Enabled\"}", out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote-view/objects", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "\"key_count\":0"));
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote-view/objects/x/y", listen);
    assert_int_equal(http("PUT", url, "{\"etag\":\"e\"}", out, sizeof(out)), 200);
    assert_exit_0(proc_stop(d, 20000));

    d = start(args, NULL, listen, 0);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/remote-view/objects/x/y", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "\"key\":\"x/y\""));
    assert_non_null(strstr(out, "\"etag\":\"e\""));
    assert_exit_0(proc_stop(d, 20000));
    proc_rmtree(dir);
}

/* A cluster without the objlog topics: objlogd names the missing topic. */
static void test_brokers_missing_topic(void **state) {
    (void)state;
    mock_variant_only();
    char err[256], out[1024], errout[4096];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(rk);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
    assert_non_null(mc);
    char bs[256];
    snprintf(bs, sizeof(bs), "%s", rd_kafka_mock_cluster_bootstraps(mc));
    char *argv[] = {objlogd, "--brokers", bs, "--no-create-topics", "--data",
                    "/nonexistent/never", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), errout, sizeof(errout), 30000);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    if (rc != 1 || !strstr(errout, "topic objlog.events is missing"))
        print_error("rc %d: %s\n", rc, errout);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(errout, "topic objlog.events is missing"));
}

/* GET /readyz every 50 ms until it answers `want` or timeout_ms pass;
 * returns the last status, its body in out. */
static long readyz_until(const char *listen, long want, int timeout_ms, char *out,
                         size_t out_size) {
    char url[128];
    snprintf(url, sizeof(url), "http://%s/readyz", listen);
    long st = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        st = http("GET", url, NULL, out, out_size);
        if (st == want)
            break;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return st;
}

/* --test-apply-delay-ms slows applying, --ready-max-lag makes /readyz fail
 * meanwhile, --max-timeout-ms caps timeout_ms (and the default under it).
 * /readyz never calls a broker: it compares with the end offsets a
 * refresher fetches every second (docs/ARCHITECTURE.md), so it is polled
 * until it notices the writes; a batch applied 3 s late outlasts that.
 * It starts ready (caught up with what earlier cases left in the log), so
 * the 503 is this case's writes. The cap is 2 s, not less: a view's
 * first write on a busy real Kafka waits for its producer id (GETPID,
 * "Coordinator load in progress"), once seen past 500 ms. The bucket and
 * its key share a partition
 * (docs/ARCHITECTURE.md, "Keys and column families"): the three writes
 * are three consecutive offsets there, and the view ends applied up to the
 * last one exactly. */
static void test_lag_flags(void **state) {
    (void)state;
    char dir[256], listen[64], url[256], out[4096], want[256];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *args[] = {"--brokers", g_boot, "--listen", "127.0.0.1:0", "--data", dir,
                    "--threads", "2", "--ready-max-lag", "1", "--max-timeout-ms",
                    "2000", "--test-apply-delay-ms", "3000", NULL};
    proc *p = start(args, NULL, listen, 0);
    if (readyz_until(listen, 200, 60000, out, sizeof(out)) != 200)
        fail_msg("/readyz before any write: %s", out);
    int part[3];
    long long off[3];
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags?ack=logged", listen);
    assert_int_equal(http("PUT", url, NULL, out, sizeof(out)), 200);
    logged_at(out, &part[0], &off[0]);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags/objects/k?ack=logged", listen);
    assert_int_equal(http("PUT", url, "{\"etag\":\"1\"}", out, sizeof(out)), 200);
    logged_at(out, &part[1], &off[1]);
    assert_int_equal(http("PUT", url, "{\"etag\":\"2\"}", out, sizeof(out)), 200);
    logged_at(out, &part[2], &off[2]);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(part[i], part[0]);
        assert_int_equal(off[i], off[0] + i);
    }
    if (readyz_until(listen, 503, 10000, out, sizeof(out)) != 503)
        fail_msg("/readyz never failed while the view lagged: %s", out);
    assert_non_null(strstr(out, "\"ready\":false"));
    snprintf(want, sizeof(want), "partition %d lags ", part[0]);
    if (!strstr(out, want))
        fail_msg("/readyz reason lacks \"%s\": %s", want, out);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags/objects/k?timeout_ms=2001", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 400);
    assert_non_null(strstr(out, "0..2000"));
    if (readyz_until(listen, 200, 60000, out, sizeof(out)) != 200)
        fail_msg("/readyz never ready again: %s", out);
    assert_string_equal(out, "{\"ready\":true}\n");
    /* Ready allows a lag of 1: the last write may still be on its way. */
    snprintf(want, sizeof(want), "{\"partition\":%d,\"applied\":%lld,\"end\":%lld,"
             "\"lag_messages\":0,\"lag_seconds\":0.0,\"state\":\"running\"}", part[0],
             off[2] + 1, off[2] + 1);
    snprintf(url, sizeof(url), "http://%s/v1/lag", listen);
    int settled = 0;
    for (int i = 0; i < 200 && !settled; i++) {
        assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
        settled = strstr(out, want) != NULL;
        if (!settled) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (!settled)
        fail_msg("GET /v1/lag never showed %s: %s", want, out);
    assert_exit_0(proc_stop(p, 20000));
    proc_rmtree(dir);
}

static void test_bad_flags_exit_2(void **state) {
    (void)state;
    mock_variant_only();
    struct { const char *flag, *value, *named; } rows[] = {
        {"--bogus", NULL, "--bogus"},
        {"--threads", "zero", "--threads"},
        {"--partitions", "0", "--partitions"},
        {"--listen", "nowhere", "--listen"},
        {"--listen", "127.0.0.1:70000", "--listen"},
        {"--data", NULL, "--data"},
        {"--ready-max-lag", "0", "--ready-max-lag"},
        {"--max-timeout-ms", "x", "--max-timeout-ms"},
        {"--test-apply-delay-ms", "-1", "--test-apply-delay-ms"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char out[1024], err[4096];
        char *argv[] = {objlogd, (char *)rows[i].flag, (char *)rows[i].value, NULL};
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 10000);
        if (rc != 2)
            print_error("%s: rc %d: %s\n", rows[i].flag, rc, err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(err, rows[i].named));
        assert_string_equal(out, "");
    }
    /* cluster flags: checked before anything starts */
    struct { const char *args[7], *named; } cl[] = {
        {{"--cluster", "c1"}, "--cluster needs --brokers"},
        {{"--advertise", "http://127.0.0.1:1"}, "--advertise names a cluster node"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "bad name!"}, "--cluster 'bad name!'"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--advertise", "ftp://x"},
         "--advertise 'ftp://x'"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--advertise", "http://h:1/"},
         "--advertise 'http://h:1/'"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--group", "g"}, "drop --group"},
        {{"--eventual-max-lag", "5"}, "--eventual-max-lag is for cluster nodes"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--eventual-max-lag", "-1"},
         "--eventual-max-lag"},
        {{"--standbys", "1"}, "--standbys is for cluster nodes"},
        {{"--s3-anonymous"}, "--s3-anonymous configures the S3 endpoint; it needs --s3-listen"},
        {{"--s3-listen", "nope"}, "--s3-listen needs HOST:PORT (got 'nope')"},
        {{"--s3-listen", "127.0.0.1:70000"}, "--s3-listen needs an integer in 0..65535"},
        {{"--s3-listen", "127.0.0.1:0"}, "--s3-listen needs --s3-credentials FILE"},
        {{"--blob-s3", "http://127.0.0.1:1/b"}, "--blob-s3 configures the S3 endpoint"},
        {{"--s3-listen", "127.0.0.1:0", "--blob-s3", "http://127.0.0.1:1/b"},
         "--blob-s3 URL and --blob-s3-credentials FILE go together"},
        {{"--s3-listen", "127.0.0.1:0", "--blob-s3", "http://127.0.0.1:1/b", "--blob-dir",
          "/tmp/x"}, "give one of them"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--standbys", "5"}, "--standbys needs an integer in 0..4 (got '5')"},
        {{"--brokers", "127.0.0.1:1", "--cluster", "c1", "--standbys", "x"}, "--standbys needs an integer in 0..4 (got 'x')"},
        {{"--wal", "maybe"}, "objlogd: --wal must be on or off (got 'maybe')"},
        {{"--flush-interval-ms", "-1"}, "--flush-interval-ms needs an integer in 0..86400000"},
        {{"--apply-threads", "0"}, "--apply-threads needs an integer in 1..64 (got '0')"},
        {{"--apply-threads", "65"}, "--apply-threads needs an integer in 1..64 (got '65')"},
        {{"--node-name", "bad name"}, "objlogd: --node-name 'bad name': a node name is "
                                      "letters, digits and . _ : - @ (character 4 is not)"},
        {{"--node-name", ""}, "objlogd: --node-name needs a value"},
        {{"--node-name", "n2345678901234567890123456789012345678901234567890123456789012345"},
         "a node name has 1 to 64 characters (this has 65)"},
    };
    for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
        char out[1024], err[4096];
        char *argv[8] = {objlogd};
        for (int a = 0; a < 7 && cl[i].args[a]; a++)
            argv[a + 1] = (char *)cl[i].args[a];
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 10000);
        if (rc != 2 || !strstr(err, cl[i].named))
            print_error("cluster row %zu: rc %d: %s\n", i, rc, err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(err, cl[i].named));
        assert_string_equal(out, "");
    }
    /* a token secret that is no key: exit 1 before anything starts */
    char dir[256], path[300], data[300];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/short", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("tiny", f);
    fclose(f);
    const char *files[2] = {path, "/nonexistent/secret"};
    const char *why[2] = {"needs 16 to 4096 bytes", "No such file or directory"};
    for (int i = 0; i < 2; i++) {
        char out[1024], err[4096];
        char *argv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                        "--token-secret-file", (char *)files[i], NULL};
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 30000);
        if (rc != 1 || !strstr(err, why[i]))
            print_error("token secret %s: rc %d: %s\n", files[i], rc, err);
        assert_int_equal(rc, 1);
        assert_non_null(strstr(err, why[i]));
        assert_null(strstr(out, "OBJLOG_READY"));
    }
    /* an S3 credentials file group or others may read: refused, naming the
     * mode and the fix; --insecure loads it with a warning */
    snprintf(path, sizeof(path), "%s/creds", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("ak secret tenant\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 0640), 0);
    char out[1024], err[4096];
    char *cargv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                     "--s3-listen", "127.0.0.1:0", "--s3-credentials", path, NULL};
    int rc = proc_run(cargv, NULL, out, sizeof(out), err, sizeof(err), 30000);
    if (rc != 1 || !strstr(err, "group or others may read it (mode 0640)"))
        print_error("open credentials: rc %d: %s\n", rc, err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "chmod 600 it (or pass --insecure)"));
    assert_null(strstr(out, "OBJLOG_READY"));
    char *iargv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                     "--s3-listen", "127.0.0.1:0", "--s3-credentials", path, "--insecure",
                     NULL};
    proc *p = proc_spawn(iargv, NULL);
    assert_non_null(p);
    assert_int_equal(proc_wait_line(p, "OBJLOG_READY", NULL, 0, 30000), 0);
    assert_int_equal(proc_stop(p, 15000), 0);
    proc_rmtree(dir);
}

/* A second objlogd on a port a running one holds must
 * exit non-zero naming the address (it used to share the port through
 * SO_REUSEPORT, and the kernel spread GETs over both views); so must one
 * on a port anything else holds. The first keeps answering every request. */
static void test_port_taken(void **state) {
    (void)state;
    mock_variant_only();
    char dir[256], dir2[256], addr[64], url[256], out[4096], err[8192];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    assert_int_equal(proc_tmpdir(dir2, sizeof(dir2)), 0);
    char *args[] = {"--embedded", "--listen", "127.0.0.1:0", "--data", dir,
                    "--partitions", "2", "--threads", "4", NULL};
    proc *p = start(args, NULL, addr, 0);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/port", addr);
    assert_int_equal(http("PUT", url, NULL, out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/port/objects/k", addr);
    assert_int_equal(http("PUT", url, "{\"etag\":\"e1\"}", out, sizeof(out)), 200);

    char *second[] = {objlogd, "--embedded", "--listen", addr, "--data", dir2,
                      "--partitions", "2", NULL};
    int rc = proc_run(second, NULL, out, sizeof(out), err, sizeof(err), 60000);
    print_message("second objlogd on %s: exit %d: %s", addr, rc, strstr(err, "listen") ?
                  strstr(err, "listen") : err);
    assert_true(rc > 0);
    assert_null(strstr(out, "OBJLOG_READY"));
    assert_non_null(strstr(err, addr));
    assert_non_null(strstr(err, "Address already in use"));

    for (int i = 0; i < 20; i++) {
        assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
        assert_non_null(strstr(out, "\"etag\":\"e1\""));
    }
    assert_exit_0(proc_stop(p, 20000));

    /* A port that something else holds (a plain listener of the test). */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    char held[64];
    snprintf(held, sizeof(held), "127.0.0.1:%d", ntohs(sa.sin_port));
    char *third[] = {objlogd, "--embedded", "--listen", held, "--data", dir2,
                     "--partitions", "2", NULL};
    rc = proc_run(third, NULL, out, sizeof(out), err, sizeof(err), 60000);
    close(fd);
    assert_true(rc > 0);
    assert_null(strstr(out, "OBJLOG_READY"));
    assert_non_null(strstr(err, held));
    proc_rmtree(dir);
    proc_rmtree(dir2);
}

int main(void) {
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        /* objlogd's own flags: mock variant only */
        cmocka_unit_test(test_bad_flags_exit_2),
        cmocka_unit_test(test_port_taken),
        cmocka_unit_test(test_brokers_missing_topic),
        cmocka_unit_test(test_embedded_serves_and_stops),
        cmocka_unit_test(test_kafka_only_and_brokers),
        /* views of the program's log: both variants */
        cmocka_unit_test(test_brokers_view_serves_and_stops),
        cmocka_unit_test(test_lag_flags),
        cmocka_unit_test(test_no_stats_flag),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
    curl_global_cleanup();
    return rc;
}
