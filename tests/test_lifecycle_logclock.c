/* test_lifecycle_logclock.c: the lifecycle worker against a log whose
 * clock is not its own. On a real Kafka the events topic
 * stamps messages itself (LogAppendTime, as `objlog topics create` makes
 * it), so the Expire's log time is the broker's clock and the state machine
 * judges ages by that, whatever the worker's clock says. Here the worker's
 * clock runs two days ahead (the test-only offset): every object of a
 * one-day rule looks due to it and is due to nobody else.
 *
 * Checked: nothing expires (every object is still there, `expired_total`
 * 0), the worker learns the log's clock from its first NotDue outcomes and
 * stops proposing (NotDue outcomes stay within one batch of 256 while
 * dozens of later scans find nothing due), and the status says 0 due.
 * Before the fix the worker re-sent an Expire for every object on every
 * scan: millions of NotDue events in minutes.
 *
 * Then the topic is switched to CreateTime (AlterConfigs): the broker now
 * refuses the worker's stamps two days ahead (message.timestamp.after.max.ms,
 * an hour by default), so every Expire fails before the log. A fresh view
 * (which has learned no clock) must end each pass at its first failed
 * batch: at most one batch of failures per scan, where the unfixed worker
 * sent all NOBJ every scan. Conditions are polled, never timed. Real Kafka
 * only: the mock cluster keeps the producer's timestamp and checks none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "httpc.h"
#include "proc.h"
#include "testlog.h"

#define NOBJ 600
#define BATCH 256 /* query/workers/lifecycle.c LC_INFLIGHT */

static struct {
    char root[512], data[600], data2[600], url[128];
    testlog *log;
    proc *view;
    httpc *h;
} T;

static long req(const char *method, const char *path, const char *body, httpc_resp *r) {
    assert_int_equal(httpc_do(T.h, method, path, body, NULL, r), 0);
    return r->status;
}

/* The value of a metric line that starts with `series` ("name{labels}"). */
static double metric(const char *series) {
    httpc_resp r;
    assert_int_equal(req("GET", "/metrics", NULL, &r), 200);
    for (const char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t n = strlen(series);
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    }
    return -1;
}

static long long jint(const char *body, const char *name) {
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", name);
    const char *p = strstr(body, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

static int setup(void **state) {
    (void)state;
    memset(&T, 0, sizeof(T));
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data, sizeof(T.data), "%s/view", T.root);
    snprintf(T.data2, sizeof(T.data2), "%s/view2", T.root);
    T.log = testlog_start(2);
    assert_non_null(T.log);
    char *extra[] = {"--lifecycle-interval-ms", "100", "--test-lifecycle-clock-offset-ms",
                     "172800000", NULL};
    T.view = testlog_start_view(T.log, T.data, extra, T.url, sizeof(T.url));
    assert_non_null(T.view);
    T.h = httpc_new(T.url);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.h)
        httpc_destroy(T.h);
    if (T.view)
        proc_stop(T.view, 10000);
    testlog_stop(T.log);
    proc_rmtree(T.root);
    return 0;
}

static void test_worker_judges_by_the_logs_clock(void **state) {
    (void)state;
    httpc_resp r;
    assert_int_equal(req("PUT", "/v1/buckets/lcclock", NULL, &r), 200);
    for (int i = 0; i < NOBJ; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/lcclock/objects/k%03d", i);
        assert_int_equal(req("PUT", path, "{\"size\":1}", &r), 200);
    }
    assert_int_equal(req("PUT", "/v1/buckets/lcclock/lifecycle",
                         "{\"rules\":[{\"id\":\"day\",\"status\":\"Enabled\","
                         "\"expiration\":{\"days\":1}}]}", &r), 200);
    /* The first scans propose; their outcomes are NotDue. */
    while (metric("objlog_lifecycle_outcomes_total{outcome=\"NotDue\"}") < 1)
        usleep(50000);
    double scans0 = metric("objlog_lifecycle_scans_total");
    while (metric("objlog_lifecycle_scans_total") < scans0 + 30)
        usleep(50000);
    double not_due = metric("objlog_lifecycle_outcomes_total{outcome=\"NotDue\"}");
    printf("NotDue outcomes: %.0f over %.0f+ scans\n", not_due,
           metric("objlog_lifecycle_scans_total"));
    assert_true(not_due >= 1 && not_due <= BATCH);
    assert_true(metric("objlog_lifecycle_outcomes_total{outcome=\"OK\"}") == 0);
    assert_int_equal(req("GET", "/v1/buckets/lcclock/lifecycle/status", NULL, &r), 200);
    assert_int_equal(jint(r.body, "due"), 0);
    assert_int_equal(jint(r.body, "expired_total"), 0);
    assert_int_equal(req("GET", "/v1/buckets/lcclock/objects?max_keys=1000", NULL, &r), 200);
    assert_int_equal(jint(r.body, "key_count"), NOBJ);
}

/* Sets objlog.events' timestamps to the producer's (and nothing else:
 * AlterConfigs replaces the topic's dynamic configs). */
static void events_topic_create_time(void) {
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", testlog_bootstrap(T.log), err,
                                       sizeof(err)), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(rk);
    rd_kafka_ConfigResource_t *res =
        rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, "objlog.events");
    assert_int_equal(rd_kafka_ConfigResource_set_config(res, "message.timestamp.type",
                                                        "CreateTime"), 0);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    assert_non_null(ev);
    if (rd_kafka_event_error(ev))
        fail_msg("alter objlog.events: %s", rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &n);
    assert_int_equal(n, 1);
    assert_int_equal(rd_kafka_ConfigResource_error(rs[0]), 0);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_destroy(rk);
}

static void test_refused_expires_end_the_pass(void **state) {
    (void)state;
    assert_int_equal(proc_stop(T.view, 10000), 0);
    T.view = NULL;
    events_topic_create_time();
    char *extra[] = {"--lifecycle-interval-ms", "100", "--test-lifecycle-clock-offset-ms",
                     "172800000", "--allow-unsafe-topics", NULL};
    T.view = testlog_start_view(T.log, T.data2, extra, T.url, sizeof(T.url));
    assert_non_null(T.view);
    httpc_destroy(T.h);
    T.h = httpc_new(T.url);
    const char *failed = "objlog_lifecycle_outcomes_total{outcome=\"failed\"}";
    while (metric(failed) < 1)
        usleep(50000);
    double scans0 = metric("objlog_lifecycle_scans_total");
    while (metric("objlog_lifecycle_scans_total") < scans0 + 20)
        usleep(50000);
    double scans = metric("objlog_lifecycle_scans_total"), n = metric(failed);
    printf("failed Expire events: %.0f over %.0f scans\n", n, scans);
    assert_true(n <= BATCH * (scans + 1));
    assert_true(metric("objlog_lifecycle_outcomes_total{outcome=\"OK\"}") == 0);
    httpc_resp r;
    assert_int_equal(req("GET", "/v1/buckets/lcclock/objects?max_keys=1000", NULL, &r), 200);
    assert_int_equal(jint(r.body, "key_count"), NOBJ);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_judges_by_the_logs_clock),
        cmocka_unit_test(test_refused_expires_end_the_pass),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
