/* test_lifecycle_objlogd.c: lifecycle end to end with
 * objlogd processes: `objlogd --kafka-only` holds the log (librdkafka's
 * mock cluster) so that the serving objlogd can be killed and restarted on
 * the same log and view. The worker runs with the test-only clock offset
 * (two days ahead), so objects written now are due for a one-day rule.
 *
 * Checked: the JSON API (PUT/GET/DELETE lifecycle, its 4xx errors), the
 * CLI (`objlog lifecycle set|get|status`, a bad rules file), the worker
 * expiring exactly the matching objects, the backlog visible in status and
 * metrics and going to 0, and a SIGKILL of objlogd while the backlog
 * drains: the restarted one finds what is left in its view and finishes,
 * nothing lost, nothing else touched. Conditions are polled, never timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpc.h"
#include "proc.h"

#define NEXPIRE 600
#define NKEEP 5
#define TWO_DAYS "172800000"

static char objlogd[1024], objlog_bin[1024];

static proc *start(char *const *args, char *bootstrap, char *listen) {
    char *argv[24] = {objlogd};
    for (int i = 0; args[i]; i++)
        argv[i + 1] = args[i];
    proc *p = proc_spawn(argv, NULL);
    assert_non_null(p);
    if (bootstrap)
        assert_int_equal(proc_wait_line(p, "OBJLOG_BOOTSTRAP=", bootstrap, 512, 60000), 0);
    if (listen)
        assert_int_equal(proc_wait_line(p, "OBJLOG_LISTEN=", listen, 64, 60000), 0);
    char rest[16];
    assert_int_equal(proc_wait_line(p, "OBJLOG_READY", rest, sizeof(rest), 60000), 0);
    return p;
}

static long req(httpc *h, const char *method, const char *path, const char *body,
                httpc_resp *r) {
    assert_int_equal(httpc_do(h, method, path, body, NULL, r), 0);
    return r->status;
}

/* A JSON integer field of body, -1 if absent. */
static long long jint(const char *body, const char *name) {
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", name);
    const char *p = strstr(body, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

/* key_count of a strong listing under prefix. */
static long long count(httpc *h, const char *prefix) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/v1/buckets/lcb/objects?prefix=%s&max_keys=1000", prefix);
    assert_int_equal(req(h, "GET", path, NULL, &r), 200);
    return jint(r.body, "key_count");
}

static proc *start_view(const char *boot, const char *dir, const char *interval, char *listen) {
    char *args[] = {"--brokers", (char *)boot, "--listen", "127.0.0.1:0", "--data",
                    (char *)dir, "--lifecycle-interval-ms", (char *)interval,
                    "--test-lifecycle-clock-offset-ms", TWO_DAYS,
                    "--test-apply-delay-ms", "5", NULL};
    return start(args, NULL, listen);
}

static int run_cli(const char *url, char *const *args, char *out, size_t on, char *err,
                   size_t en) {
    char *argv[16] = {objlog_bin};
    int i = 0;
    for (; args[i]; i++)
        argv[i + 1] = args[i];
    argv[++i] = "--url";
    argv[++i] = (char *)url;
    argv[++i] = NULL;
    return proc_run(argv, NULL, out, on, err, en, 30000);
}

static void test_api_errors(httpc *h) {
    httpc_resp r;
    assert_int_equal(req(h, "GET", "/v1/buckets/lcb/lifecycle", NULL, &r), 404);
    assert_non_null(strstr(r.body, "\"NoSuchLifecycleConfiguration\""));
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcb/lifecycle", "{\"rules\":[]}", &r), 400);
    assert_non_null(strstr(r.body, "at least one rule"));
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcb/lifecycle",
                         "{\"rules\":[{\"id\":\"a\",\"status\":\"Enabled\",\"expiration\":"
                         "{\"days\":1}},{\"id\":\"a\",\"status\":\"Enabled\",\"expiration\":"
                         "{\"days\":2}}]}", &r), 400);
    assert_non_null(strstr(r.body, "\"message\":\"lifecycle rule a: id is not unique\""));
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcb/lifecycle",
                         "{\"rules\":[{\"id\":\"a\",\"status\":\"On\"}]}", &r), 400);
    assert_non_null(strstr(r.body, "status must be Enabled or Disabled"));
    assert_int_equal(req(h, "PUT", "/v1/buckets/nope/lifecycle",
                         "{\"rules\":[{\"id\":\"a\",\"status\":\"Enabled\",\"expiration\":"
                         "{\"days\":1}}]}", &r), 404);
    assert_non_null(strstr(r.body, "NoSuchBucket"));
}

/* Polls status until pred holds; 0 when it did within the bound. */
static int wait_status(httpc *h, long long *due, long long *expired, int want_done) {
    for (int i = 0; i < 1200; i++) {
        httpc_resp r;
        assert_int_equal(req(h, "GET", "/v1/buckets/lcb/lifecycle/status", NULL, &r), 200);
        *due = jint(r.body, "due");
        *expired = jint(r.body, "expired_total");
        int scanned = strstr(r.body, "\"scanned\":true") != NULL;
        if (!want_done && scanned && *expired > 0)
            return 0;
        if (want_done && scanned && *due == 0 && count(h, "logs/") == 0)
            return 0;
        usleep(50 * 1000);
    }
    return -1;
}

static void test_lifecycle_end_to_end(void **state) {
    (void)state;
    char dir[256], boot[512], listen[64], url[128], out[8192], err[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *kargs[] = {"--kafka-only", "--partitions", "2", NULL};
    proc *k = start(kargs, boot, NULL);

    /* 1. data with the worker off */
    proc *d = start_view(boot, dir, "0", listen);
    snprintf(url, sizeof(url), "http://%s", listen);
    httpc *h = httpc_new(url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcb", "{}", &r), 200);
    test_api_errors(h);
    char path[128];
    for (int i = 0; i < NEXPIRE; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/lcb/objects/logs/%04d", i);
        assert_int_equal(req(h, "PUT", path, "{\"size\":10,\"etag\":\"e\"}", &r), 200);
    }
    for (int i = 0; i < NKEEP; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/lcb/objects/keep/%d", i);
        assert_int_equal(req(h, "PUT", path, "{\"size\":10,\"etag\":\"e\"}", &r), 200);
    }
    /* the CLI: a bad file is a usage error naming it; a good one sets */
    char rules[300];
    snprintf(rules, sizeof(rules), "%s/rules.json", dir);
    FILE *f = fopen(rules, "w");
    assert_non_null(f);
    fputs("{\"rules\":[{\"id\":\"logs\",\"status\":\"Enabled\",\"filter\":{\"prefix\":"
          "\"logs/\"},\"expiration\":{\"days\":1}}]}\n", f);
    fclose(f);
    char bad[300];
    snprintf(bad, sizeof(bad), "%s/bad.json", dir);
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"rules\": [\n", f);
    fclose(f);
    char *badargs[] = {"lifecycle", "set", "lcb", bad, NULL};
    assert_int_equal(run_cli(url, badargs, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "bad.json is not JSON"));
    char *setargs[] = {"lifecycle", "set", "lcb", rules, NULL};
    assert_int_equal(run_cli(url, setargs, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "lifecycle set: lcb\n");
    char *getargs[] = {"lifecycle", "get", "lcb", "--json", NULL};
    assert_int_equal(run_cli(url, getargs, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "{\"bucket\":\"lcb\",\"rules\":[{\"id\":\"logs\",\"status\":"
                             "\"Enabled\",\"filter\":{\"prefix\":\"logs/\"},\"expiration\":"
                             "{\"days\":1}}]}\n");
    assert_int_equal(req(h, "GET", "/v1/buckets/lcb/lifecycle/status", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"scanned\":false"));
    httpc_destroy(h);
    assert_int_equal(proc_stop(d, 20000), 0);

    /* 2. the worker on; killed once expirations have started */
    d = start_view(boot, dir, "100", listen);
    snprintf(url, sizeof(url), "http://%s", listen);
    h = httpc_new(url);
    long long due, expired;
    assert_int_equal(wait_status(h, &due, &expired, 0), 0);
    print_message("killed with %lld expired, %lld due\n", expired, due);
    httpc_destroy(h);
    proc_kill(d);

    /* 3. restarted: it finds the rest in its view and finishes */
    d = start_view(boot, dir, "100", listen);
    snprintf(url, sizeof(url), "http://%s", listen);
    h = httpc_new(url);
    assert_int_equal(wait_status(h, &due, &expired, 1), 0);
    assert_int_equal(count(h, "logs/"), 0);
    assert_int_equal(count(h, "keep/"), NKEEP);
    assert_int_equal(req(h, "GET", "/v1/buckets/lcb/stats", NULL, &r), 200);
    assert_int_equal(jint(r.body, "objects"), NKEEP);
    assert_int_equal(req(h, "GET", "/metrics", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\nobjlog_lifecycle_due{bucket=\"lcb\"} 0\n"));
    assert_non_null(strstr(r.body, "\nobjlog_lifecycle_oldest_due_age_seconds{bucket=\"lcb\"} 0.000\n"));
    char *stargs[] = {"lifecycle", "status", "lcb", NULL};
    assert_int_equal(run_cli(url, stargs, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "due: 0\n"));
    /* DELETE removes the rules */
    assert_int_equal(req(h, "DELETE", "/v1/buckets/lcb/lifecycle", NULL, &r), 200);
    assert_int_equal(req(h, "GET", "/v1/buckets/lcb/lifecycle", NULL, &r), 404);
    httpc_destroy(h);
    assert_int_equal(proc_stop(d, 20000), 0);
    assert_int_equal(proc_stop(k, 20000), 0);
    proc_rmtree(dir);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --lifecycle-max-rate 200: the worker never runs ahead of 200 Expire
 * events a second (one batch of 256 may go at once). Checked as an upper
 * bound at every poll, so a slow machine cannot fail it; without the pace
 * the 600 expire in a fraction of a second and it fails. */
static void test_lifecycle_max_rate(void **state) {
    (void)state;
    char dir[256], boot[512], listen[64], url[128];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    char *kargs[] = {"--kafka-only", "--partitions", "2", NULL};
    proc *k = start(kargs, boot, NULL);
    char *args[] = {"--brokers", boot, "--listen", "127.0.0.1:0", "--data", dir,
                    "--lifecycle-interval-ms", "100", "--lifecycle-max-rate", "200",
                    "--test-lifecycle-clock-offset-ms", TWO_DAYS, NULL};
    proc *d = start(args, NULL, listen);
    snprintf(url, sizeof(url), "http://%s", listen);
    httpc *h = httpc_new(url);
    httpc_resp r;
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcr", "{}", &r), 200);
    for (int i = 0; i < NEXPIRE; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/lcr/objects/k%04d", i);
        assert_int_equal(req(h, "PUT", path, "{\"size\":1}", &r), 200);
    }
    double t0 = mono_s();
    assert_int_equal(req(h, "PUT", "/v1/buckets/lcr/lifecycle",
                         "{\"rules\":[{\"id\":\"all\",\"status\":\"Enabled\","
                         "\"expiration\":{\"days\":1}}]}", &r), 200);
    long long expired = 0;
    for (int i = 0; i < 2400 && expired < NEXPIRE; i++) {
        assert_int_equal(req(h, "GET", "/v1/buckets/lcr/lifecycle/status", NULL, &r), 200);
        expired = jint(r.body, "expired_total");
        double bound = 256 + 200 * (mono_s() - t0);
        if ((double)expired > bound)
            fail_msg("%lld expired %.2f s after the rule, more than %.0f", expired,
                     mono_s() - t0, bound);
        usleep(20 * 1000);
    }
    print_message("%lld expired in %.2f s at --lifecycle-max-rate 200\n", expired,
                  mono_s() - t0);
    assert_int_equal(expired, NEXPIRE);
    httpc_destroy(h);
    assert_int_equal(proc_stop(d, 20000), 0);
    assert_int_equal(proc_stop(k, 20000), 0);
    proc_rmtree(dir);
}

int main(void) {
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    proc_bin("ops/objlog", objlog_bin, sizeof(objlog_bin));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle_end_to_end),
        cmocka_unit_test(test_lifecycle_max_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
