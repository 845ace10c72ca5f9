/* test_http_objlogd.c: the objlogd process interface (/tmp/http_api.md):
 * the OBJLOG_* stdout lines, serving over HTTP, graceful SIGTERM with exit
 * 0, --kafka-only plus a second objlogd on --brokers, a clear error for a
 * cluster without the topics, exit 2 naming a bad flag, and the
 * bench-only --test-no-stats. Every child is
 * stopped by the test (proc.h kills leftovers even on failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "proc.h"

static char objlogd[1024];

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
        assert_int_equal(proc_wait_line(p, "OBJLOG_BOOTSTRAP=", bootstrap, 512, 20000), 0);
    if (!kafka_only)
        assert_int_equal(proc_wait_line(p, "OBJLOG_LISTEN=", listen, 64, 20000), 0);
    char rest[16];
    assert_int_equal(proc_wait_line(p, "OBJLOG_READY", rest, sizeof(rest), 20000), 0);
    return p;
}

static void assert_exit_0(int status) {
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_embedded_serves_and_stops(void **state) {
    (void)state;
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
    char dir[256], bootstrap[512], listen[64], url[256], out[4096], errout[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *kargs[] = {"--kafka-only", "--partitions", "2", NULL};
    proc *k = start(kargs, bootstrap, NULL, 1);
    char *args[] = {"--brokers", bootstrap, "--listen", "127.0.0.1:0", "--data", dir,
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
    char *again[] = {objlogd, "--brokers", bootstrap, "--listen", "127.0.0.1:0", "--data",
                     dir, NULL};
    int rc = proc_run(again, NULL, out, sizeof(out), errout, sizeof(errout), 30000);
    if (rc != 1 || !strstr(errout, "applied without the stats view"))
        print_error("rc %d: %s\n", rc, errout);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(errout, "applied without the stats view"));
    assert_exit_0(proc_stop(k, 20000));
    proc_rmtree(dir);
}

/* A cluster without the objlog topics: objlogd names the missing topic. */
static void test_brokers_missing_topic(void **state) {
    (void)state;
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

/* --test-apply-delay-ms slows applying, --ready-max-lag makes /readyz fail
 * meanwhile, --max-timeout-ms caps timeout_ms (and the default under it). */
static void test_lag_flags(void **state) {
    (void)state;
    char dir[256], bootstrap[512], listen[64], url[256], out[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *args[] = {"--listen", "127.0.0.1:0", "--data", dir, "--partitions", "1",
                    "--threads", "2", "--ready-max-lag", "1", "--max-timeout-ms",
                    "500", "--test-apply-delay-ms", "700", NULL};
    proc *p = start(args, bootstrap, listen, 0);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags?ack=logged", listen);
    assert_int_equal(http("PUT", url, NULL, out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags/objects/k?ack=logged", listen);
    assert_int_equal(http("PUT", url, "{\"etag\":\"1\"}", out, sizeof(out)), 200);
    assert_int_equal(http("PUT", url, "{\"etag\":\"2\"}", out, sizeof(out)), 200);
    snprintf(url, sizeof(url), "http://%s/readyz", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 503);
    assert_non_null(strstr(out, "\"ready\":false"));
    snprintf(url, sizeof(url), "http://%s/v1/buckets/flags/objects/k?timeout_ms=501", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 400);
    assert_non_null(strstr(out, "0..500"));
    int ready = 0;
    snprintf(url, sizeof(url), "http://%s/readyz", listen);
    for (int i = 0; i < 100 && !ready; i++) {
        ready = http("GET", url, NULL, out, sizeof(out)) == 200;
        if (!ready) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(ready);
    assert_string_equal(out, "{\"ready\":true}\n");
    snprintf(url, sizeof(url), "http://%s/v1/lag", listen);
    assert_int_equal(http("GET", url, NULL, out, sizeof(out)), 200);
    assert_non_null(strstr(out, "{\"partition\":0,\"applied\":3,\"end\":3,"
                                "\"lag_messages\":0,\"lag_seconds\":0.0,"
                                "\"state\":\"running\"}"));
    assert_exit_0(proc_stop(p, 20000));
    proc_rmtree(dir);
}

static void test_bad_flags_exit_2(void **state) {
    (void)state;
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
}

int main(void) {
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_flags_exit_2),
        cmocka_unit_test(test_brokers_missing_topic),
        cmocka_unit_test(test_embedded_serves_and_stops),
        cmocka_unit_test(test_kafka_only_and_brokers),
        cmocka_unit_test(test_lag_flags),
        cmocka_unit_test(test_no_stats_flag),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
