/* test_producer_applied.c: libobjlog_producer with ack=applied
 * (docs/ARCHITECTURE.md, "How a write flows") against a real
 * `objlogd --brokers` view of the test's log: the mock
 * cluster of `objlogd --kafka-only` or a real 3-node Kafka (testlog.h),
 * started once for the program. Outcomes come back through
 * GET /v1/outcomes (batched per partition) as OK (version id, etag, delete marker) or
 * REJECTED (S3 code and message), and a retry with the same request id
 * gets the stored outcome instead of a second write. The other calls
 * (bucket settings, versioning, delete bucket, multipart) get their
 * outcomes the same way, create_upload with the new upload id.
 * Outcomes travel batched per partition (GET /v1/outcomes), so
 * 2,000 concurrent writes cost far fewer than one request each; the route's
 * bad parameters are 400s; and with a view process held by SIGSTOP a write
 * completes UNKNOWN (unknown.retries=0) and its manual retry after SIGCONT
 * returns the first attempt's version, or (unknown.retries=3) the library's
 * own re-produce does; either way exactly one version exists. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "keycodec.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"

#define PARTITIONS 8

static testlog *g_log;
static proc *g_daemon;
static char g_dir[256], g_bootstrap[1024], g_url[128], g_objlogd[512];
static objlog_producer *g_p;

/* A view of the group's log on a fresh directory under g_dir; url gets
 * its base URL. NULL if it did not become ready. */
static proc *view_start(const char *name, char *url, size_t url_size) {
    char data[300], listen[64];
    snprintf(data, sizeof(data), "%s/%s", g_dir, name);
    char *argv[] = {g_objlogd, "--brokers", g_bootstrap, "--listen", "127.0.0.1:0",
                    "--data", data, NULL};
    proc *p = proc_spawn(argv, NULL);
    if (!p || proc_wait_line(p, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000) ||
        proc_wait_line(p, "OBJLOG_READY", NULL, 0, 60000)) {
        fprintf(stderr, "objlogd --brokers %s did not become ready\n", g_bootstrap);
        if (p)
            proc_kill(p);
        return NULL;
    }
    snprintf(url, url_size, "http://%s", listen);
    return p;
}

/* Once per program: the log, the main view and the shared producer. */
static int group_setup(void **state) {
    (void)state;
    char err[512];
    if (proc_tmpdir(g_dir, sizeof(g_dir)) < 0)
        return -1;
    proc_bin("query/objlogd", g_objlogd, sizeof(g_objlogd));
    g_log = testlog_start(PARTITIONS);
    if (!g_log)
        return -1;
    snprintf(g_bootstrap, sizeof(g_bootstrap), "%s", testlog_bootstrap(g_log));
    g_daemon = view_start("data", g_url, sizeof(g_url));
    if (!g_daemon)
        return -1;
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (objlog_producer_conf_set(conf, "bootstrap.servers", g_bootstrap, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", g_url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "outcome.timeout.ms", "10000", err, sizeof(err))) {
        fprintf(stderr, "conf: %s\n", err);
        return -1;
    }
    g_p = objlog_producer_new(conf, err, sizeof(err));
    if (!g_p)
        fprintf(stderr, "producer: %s\n", err);
    return g_p ? 0 : -1;
}

static objlog_producer *producer_with(const char *bootstrap, const char *url,
                                      const char *timeout_ms, const char *retries) {
    char err[512];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    if (objlog_producer_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "outcome.timeout.ms", timeout_ms, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "unknown.retries", retries, err, sizeof(err)))
        fail_msg("conf: %s", err);
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int group_teardown(void **state) {
    (void)state;
    objlog_producer_destroy(g_p);
    if (g_daemon)
        proc_stop(g_daemon, 10000);
    testlog_stop(g_log);
    proc_rmtree(g_dir);
    return 0;
}

static void assert_status(const objlog_write_result *r, objlog_status want) {
    if (r->status != want)
        fail_msg("status %s, want %s (%s: %s)", objlog_status_name(r->status),
                 objlog_status_name(want), r->error_code, r->error_message);
}

static void test_outcomes_ok_and_rejected(void **state) {
    (void)state;
    objlog_write_result r;
    char err[256];
    uint64_t seq;
    assert_int_equal(objlog_producer_create_bucket_sync(g_p, "docs", "acme",
                                                        OBJLOG_VERSIONING_ENABLED, NULL,
                                                        &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_string_equal(r.error_code, "");

    objlog_object_meta meta = {.size = 42, .etag = "etag-42"};
    assert_int_equal(objlog_producer_put_object_sync(g_p, "docs", "a.txt", 5, &meta, NULL,
                                                     &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_int_equal(keycodec_parse_version_id(r.version_id, &seq), 0);
    assert_int_equal(seq & ((1ULL << 48) - 1), (uint64_t)r.offset);
    assert_string_equal(r.etag, "etag-42");
    assert_false(r.delete_marker);
    objlog_write_result first = r;

    /* a retry with the same request id: the stored outcome, no new version */
    objlog_write_opts retry = {.request_id = first.request_id};
    assert_int_equal(objlog_producer_put_object_sync(g_p, "docs", "a.txt", 5, &meta, &retry,
                                                     &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_string_equal(r.version_id, first.version_id);
    assert_true(r.offset > first.offset);

    objlog_write_opts inm = {.if_none_match = 1};
    assert_int_equal(objlog_producer_put_object_sync(g_p, "docs", "a.txt", 5, &meta, &inm,
                                                     &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "PreconditionFailed");
    assert_string_equal(r.version_id, "");

    assert_int_equal(objlog_producer_put_object_sync(g_p, "nobucket", "a.txt", 5, &meta,
                                                     NULL, &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "NoSuchBucket");
    assert_string_not_equal(r.error_message, "");

    assert_int_equal(objlog_producer_delete_object_sync(g_p, "docs", "a.txt", 5, NULL, NULL,
                                                        &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_true(r.delete_marker);
    assert_string_not_equal(r.version_id, first.version_id);
}

/* Multipart through the library, decided by the real state machine. */
static void test_multipart_and_bucket_calls(void **state) {
    (void)state;
    objlog_write_result r;
    char err[256];
    uint64_t seq;
    objlog_bucket_conf bc = {.tenant = "acme", .max_versions = 1};
    assert_int_equal(objlog_producer_create_bucket_ex_sync(g_p, "mpu-lib", &bc, NULL, &r,
                                                           err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_string_equal(r.upload_id, "");
    assert_int_equal(objlog_producer_create_bucket_ex_sync(g_p, "mpu-lib", &bc, NULL, &r,
                                                           err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "BucketAlreadyExists");

    objlog_object_meta meta = {.content_type = "video/mp4"};
    assert_int_equal(objlog_producer_create_upload_sync(g_p, "mpu-lib", "v.mp4", 5, &meta,
                                                        NULL, &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    /* the upload id is the version id of the CreateUpload event's seq */
    assert_int_equal(keycodec_parse_version_id(r.upload_id, &seq), 0);
    assert_int_equal(seq & ((1ULL << 48) - 1), (uint64_t)r.offset);
    char id[24];
    snprintf(id, sizeof(id), "%s", r.upload_id);

    const char *e1 = "0123456789abcdef0123456789abcdef";
    assert_int_equal(objlog_producer_upload_part_sync(g_p, "mpu-lib", "v.mp4", 5, id, 1, 77,
                                                      e1, "blob-1", NULL, &r, err,
                                                      sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_string_equal(r.upload_id, "");
    objlog_completed_part wrong[1] = {{1, "fedcba9876543210fedcba9876543210"}};
    assert_int_equal(objlog_producer_complete_upload_sync(g_p, "mpu-lib", "v.mp4", 5, id,
                                                          wrong, 1, NULL, &r, err,
                                                          sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "InvalidPart");
    objlog_completed_part parts[1] = {{1, e1}};
    assert_int_equal(objlog_producer_complete_upload_sync(g_p, "mpu-lib", "v.mp4", 5, id,
                                                          parts, 1, NULL, &r, err,
                                                          sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    /* md5 of the one binary part md5, then "-1" */
    assert_string_equal(r.etag, "4662bdea8654776d486072ff7074945e-1");
    assert_string_equal(r.version_id, "null");
    assert_int_equal(objlog_producer_abort_upload_sync(g_p, "mpu-lib", "v.mp4", 5, id, NULL,
                                                       &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "NoSuchUpload");

    /* versioning on; the cap of one version refuses a second */
    assert_int_equal(objlog_producer_set_versioning_sync(g_p, "mpu-lib",
                                                         OBJLOG_VERSIONING_ENABLED, NULL,
                                                         &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_int_equal(objlog_producer_put_object_sync(g_p, "mpu-lib", "v.mp4", 5, NULL, NULL,
                                                     &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "TooManyVersions");

    assert_int_equal(objlog_producer_delete_bucket_sync(g_p, "mpu-lib", NULL, &r, err,
                                                        sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "BucketNotEmpty");
    assert_int_equal(objlog_producer_delete_object_sync(g_p, "mpu-lib", "v.mp4", 5, "null",
                                                        NULL, &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_int_equal(objlog_producer_delete_bucket_sync(g_p, "mpu-lib", NULL, &r, err,
                                                        sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    assert_int_equal(objlog_producer_delete_bucket_sync(g_p, "mpu-lib", NULL, &r, err,
                                                        sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_REJECTED);
    assert_string_equal(r.error_code, "NoSuchBucket");
}

/* ---- batched outcomes ---- */

#define MANY_THREADS 4
#define MANY_PER_THREAD 500
#define MANY_BUCKETS 8 /* a bucket lives in one partition: spread them
                          (names differ first: FNV-1a top bits) */

typedef struct many_state {
    objlog_producer *p;
    int thread;
    atomic_int ok, bad, versions_match;
    atomic_int partitions_seen;  /* bit per partition */
} many_state;

static void many_cb(const objlog_write_result *r, void *opaque) {
    many_state *m = opaque;
    uint64_t seq;
    if (r->status != OBJLOG_STATUS_OK) {
        if (atomic_fetch_add(&m->bad, 1) == 0)
            fprintf(stderr, "write: %s %s %s\n", objlog_status_name(r->status),
                    r->error_code, r->error_message);
        return;
    }
    atomic_fetch_add(&m->ok, 1);
    if (r->partition >= 0 && r->partition < 31)
        atomic_fetch_or(&m->partitions_seen, 1 << r->partition);
    if (keycodec_parse_version_id(r->version_id, &seq) == 0 &&
        (int64_t)(seq & ((1ULL << 48) - 1)) == r->offset)
        atomic_fetch_add(&m->versions_match, 1);
}

typedef struct many_thread {
    many_state *m;
    int t;
    int rejected_up_front;
} many_thread;

static void *many_main(void *arg) {
    many_thread *th = arg;
    char key[64], bucket[32], err[256];
    objlog_object_meta meta = {.size = 1, .etag = "e"};
    for (int i = 0; i < MANY_PER_THREAD; i++) {
        int n = snprintf(key, sizeof(key), "t%d/k%04d", th->t, i);
        snprintf(bucket, sizeof(bucket), "%c-many", 'a' + i % MANY_BUCKETS);
        if (objlog_producer_put_object(th->m->p, bucket, key, (size_t)n, &meta, NULL,
                                       many_cb, th->m, err, sizeof(err)) != 0)
            th->rejected_up_front++;
    }
    return NULL;
}

static void test_many_writes_few_outcome_requests(void **state) {
    (void)state;
    objlog_write_result r;
    char err[256];
    for (int b = 0; b < MANY_BUCKETS; b++) {
        char name[32];
        snprintf(name, sizeof(name), "%c-many", 'a' + b);
        assert_int_equal(objlog_producer_create_bucket_sync(g_p, name, NULL,
                                                            OBJLOG_VERSIONING_ENABLED,
                                                            NULL, &r, err, sizeof(err)), 0);
        assert_status(&r, OBJLOG_STATUS_OK);
    }
    static many_state m;
    memset(&m, 0, sizeof(m));
    m.p = producer_with(g_bootstrap, g_url, "20000", "0");
    pthread_t th[MANY_THREADS];
    many_thread args[MANY_THREADS];
    for (int t = 0; t < MANY_THREADS; t++) {
        args[t] = (many_thread){.m = &m, .t = t};
        assert_int_equal(pthread_create(&th[t], NULL, many_main, &args[t]), 0);
    }
    for (int t = 0; t < MANY_THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(args[t].rejected_up_front, 0);
    }
    assert_int_equal(objlog_producer_flush(m.p, 60000), 0);
    objlog_producer_stats st;
    objlog_producer_stats_get(m.p, &st);
    objlog_producer_destroy(m.p);
    int total = MANY_THREADS * MANY_PER_THREAD;
    assert_int_equal(atomic_load(&m.bad), 0);
    assert_int_equal(atomic_load(&m.ok), total);
    assert_int_equal(atomic_load(&m.versions_match), total);
    assert_int_equal(st.writes_completed, (uint64_t)total);
    assert_int_equal(st.unknown_retries, 0);
    double per_write = (double)st.outcome_requests / total;
    int nparts = __builtin_popcount((unsigned)atomic_load(&m.partitions_seen));
    printf("outcome requests: %llu for %d writes in %d partitions = %.4f per write\n",
           (unsigned long long)st.outcome_requests, total, nparts, per_write);
    assert_true(nparts >= 3);
    assert_true(st.outcome_requests >= 1);
    assert_true(per_write < 0.2);
}

/* GET /v1/outcomes directly: the shape, and every bad parameter a 400. */
static void test_outcomes_route(void **state) {
    (void)state;
    objlog_write_result r;
    char err[256], path[256];
    objlog_object_meta meta = {.size = 5, .etag = "e5"};
    assert_int_equal(objlog_producer_put_object_sync(g_p, "docs", "route.txt", 9, &meta,
                                                     NULL, &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);
    httpc *h = httpc_new(g_url);
    httpc_resp resp;
    snprintf(path, sizeof(path), "/v1/outcomes?partition=%d&from=%lld&max=1&timeout_ms=0",
             (int)r.partition, (long long)r.offset);
    assert_int_equal(httpc_do(h, "GET", path, NULL, NULL, &resp), 0);
    assert_int_equal(resp.status, 200);
    json_t *j = json_loads(resp.body, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "partition")), r.partition);
    assert_true(json_integer_value(json_object_get(j, "applied")) > r.offset);
    /* nothing trimmed yet: the oldest kept outcome is at offset 0 */
    assert_true(json_is_integer(json_object_get(j, "low")));
    assert_int_equal(json_integer_value(json_object_get(j, "low")), 0);
    json_t *arr = json_object_get(j, "outcomes");
    assert_int_equal(json_array_size(arr), 1);
    json_t *e = json_array_get(arr, 0);
    char token[64];
    snprintf(token, sizeof(token), "%d.%lld", (int)r.partition, (long long)r.offset);
    assert_int_equal(json_integer_value(json_object_get(e, "offset")), r.offset);
    assert_string_equal(json_string_value(json_object_get(e, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "OK");
    assert_string_equal(json_string_value(json_object_get(e, "request_id")), r.request_id_hex);
    assert_string_equal(json_string_value(json_object_get(e, "version_id")), r.version_id);
    assert_string_equal(json_string_value(json_object_get(e, "etag")), "e5");
    assert_true(json_is_false(json_object_get(e, "delete_marker")));
    assert_string_equal(json_string_value(json_object_get(e, "upload_id")), "");
    assert_string_equal(json_string_value(json_object_get(e, "token")), token);
    json_decref(j);

    /* not applied yet: after the wait, 200 with an empty list */
    snprintf(path, sizeof(path), "/v1/outcomes?partition=%d&from=%lld&timeout_ms=50",
             (int)r.partition, (long long)r.offset + 1000000);
    int64_t t0 = mono_ms();
    assert_int_equal(httpc_do(h, "GET", path, NULL, NULL, &resp), 0);
    assert_true(mono_ms() - t0 >= 50);
    assert_int_equal(resp.status, 200);
    j = json_loads(resp.body, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "outcomes")), 0);
    assert_true(json_integer_value(json_object_get(j, "applied")) > r.offset);
    json_decref(j);

    static const char *bad[] = {
        "/v1/outcomes",
        "/v1/outcomes?from=0",
        "/v1/outcomes?partition=0",
        "/v1/outcomes?partition=8&from=0", /* PARTITIONS: 0..7 */
        "/v1/outcomes?partition=-1&from=0",
        "/v1/outcomes?partition=x&from=0",
        "/v1/outcomes?partition=0&from=-1",
        "/v1/outcomes?partition=0&from=1x",
        "/v1/outcomes?partition=0&from=0&max=0",
        "/v1/outcomes?partition=0&from=0&max=10001",
        "/v1/outcomes?partition=0&from=0&timeout_ms=30001",
        "/v1/outcomes?partition=0&from=0&timeout_ms=soon",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(httpc_do(h, "GET", bad[i], NULL, NULL, &resp), 0);
        if (resp.status != 400 || !strstr(resp.body, "\"InvalidArgument\""))
            fail_msg("%s: %ld %s", bad[i], resp.status, resp.body);
    }
    assert_int_equal(httpc_do(h, "PUT", "/v1/outcomes?partition=0&from=0", "", NULL,
                              &resp), 0);
    assert_int_equal(resp.status, 405);
    /* the single-write path still answers */
    snprintf(path, sizeof(path), "/v1/writes/%s", r.token);
    assert_int_equal(httpc_do(h, "GET", path, NULL, NULL, &resp), 0);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(resp.body, r.version_id));
    httpc_destroy(h);
}

/* ---- unknown outcomes, with a view held by SIGSTOP ---- */

/* Each test gets a view of its own on the group's log (a fresh directory
 * each time), so SIGSTOP never touches the group's view. */
typedef struct held {
    const char *boot;
    char url[128];
    proc *view;
    int stopped;
} held;

static held H;

static int held_setup(void **state) {
    static int n;
    char name[32];
    (void)state;
    memset(&H, 0, sizeof(H));
    H.boot = g_bootstrap;
    snprintf(name, sizeof(name), "held%d", ++n);
    H.view = view_start(name, H.url, sizeof(H.url));
    return H.view ? 0 : -1;
}

/* Runs even when the test failed: a stopped view is continued first, or
 * it could not act on SIGTERM. */
static int held_teardown(void **state) {
    (void)state;
    if (H.view) {
        kill(H.view->pid, SIGCONT);
        proc_stop(H.view, 10000);
    }
    memset(&H, 0, sizeof(H));
    return 0;
}

static void held_stop(void) {
    assert_int_equal(kill(H.view->pid, SIGSTOP), 0);
    H.stopped = 1;
}

static void held_cont(void) {
    assert_int_equal(kill(H.view->pid, SIGCONT), 0);
    H.stopped = 0;
}

/* Exactly one version of bucket/key exists and it is want_vid; GET agrees. */
static void assert_one_version(const char *bucket, const char *key,
                               const char *want_vid) {
    httpc *h = httpc_new(H.url);
    httpc_resp resp;
    char path[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/versions?prefix=%s", bucket, key);
    assert_int_equal(httpc_do(h, "GET", path, NULL, NULL, &resp), 0);
    assert_int_equal(resp.status, 200);
    json_t *j = json_loads(resp.body, 0, NULL);
    json_t *vers = json_object_get(j, "versions");
    if (json_array_size(vers) != 1)
        fail_msg("want exactly one version: %s", resp.body);
    assert_string_equal(json_string_value(json_object_get(json_array_get(vers, 0),
                                                          "version_id")), want_vid);
    json_decref(j);
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    assert_int_equal(httpc_do(h, "GET", path, NULL, NULL, &resp), 0);
    assert_int_equal(resp.status, 200);
    j = json_loads(resp.body, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "version_id")), want_vid);
    json_decref(j);
    httpc_destroy(h);
}

static uint64_t vid_offset(const char *vid) {
    uint64_t seq = 0;
    assert_int_equal(keycodec_parse_version_id(vid, &seq), 0);
    return seq & ((1ULL << 48) - 1);
}

static void test_unknown_then_manual_retry(void **state) {
    (void)state;
    objlog_producer *quick = producer_with(H.boot, H.url, "500", "0");
    objlog_producer *patient = producer_with(H.boot, H.url, "20000", "0");
    objlog_write_result r, r2;
    char err[256];
    assert_int_equal(objlog_producer_create_bucket_sync(patient, "held", NULL,
                                                        OBJLOG_VERSIONING_ENABLED, NULL,
                                                        &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);

    held_stop();
    objlog_object_meta meta = {.size = 7, .etag = "e7"};
    int64_t t0 = mono_ms();
    assert_int_equal(objlog_producer_put_object_sync(quick, "held", "k", 1, &meta, NULL,
                                                     &r, err, sizeof(err)), 0);
    int64_t took = mono_ms() - t0;
    assert_status(&r, OBJLOG_STATUS_UNKNOWN);
    assert_true(took >= 500);
    assert_int_equal(strlen(r.request_id_hex), 32);
    assert_non_null(strstr(r.error_message, r.request_id_hex));
    assert_true(r.offset >= 0);
    held_cont();

    /* the documented manual retry: same arguments, opts->request_id */
    objlog_write_opts retry = {.request_id = r.request_id};
    assert_int_equal(objlog_producer_put_object_sync(patient, "held", "k", 1, &meta,
                                                     &retry, &r2, err, sizeof(err)), 0);
    assert_status(&r2, OBJLOG_STATUS_OK);
    assert_string_equal(r2.request_id_hex, r.request_id_hex);
    assert_true(r2.offset > r.offset);
    /* the version is the first attempt's (it was in the log first) */
    assert_int_equal(vid_offset(r2.version_id), (uint64_t)r.offset);
    assert_string_equal(r2.etag, "e7");
    assert_one_version("held", "k", r2.version_id);

    /* and again: still the first outcome */
    objlog_write_result r3;
    assert_int_equal(objlog_producer_put_object_sync(patient, "held", "k", 1, &meta,
                                                     &retry, &r3, err, sizeof(err)), 0);
    assert_status(&r3, OBJLOG_STATUS_OK);
    assert_string_equal(r3.version_id, r2.version_id);
    assert_one_version("held", "k", r2.version_id);
    objlog_producer_destroy(quick);
    objlog_producer_destroy(patient);
}

typedef struct async_wait {
    pthread_mutex_t m;
    pthread_cond_t c;
    int done;
    objlog_write_result r;
} async_wait;

static void async_cb(const objlog_write_result *r, void *opaque) {
    async_wait *w = opaque;
    pthread_mutex_lock(&w->m);
    w->r = *r;
    w->done = 1;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

static void test_unknown_retries_succeed_after_cont(void **state) {
    (void)state;
    objlog_producer *p = producer_with(H.boot, H.url, "600", "3");
    objlog_write_result r;
    char err[256];
    assert_int_equal(objlog_producer_create_bucket_sync(p, "held2", NULL,
                                                        OBJLOG_VERSIONING_ENABLED, NULL,
                                                        &r, err, sizeof(err)), 0);
    assert_status(&r, OBJLOG_STATUS_OK);

    held_stop();
    static async_wait w;
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.m, NULL);
    pthread_cond_init(&w.c, NULL);
    objlog_object_meta meta = {.size = 3, .etag = "e3"};
    int64_t t0 = mono_ms();
    assert_int_equal(objlog_producer_put_object(p, "held2", "k", 1, &meta, NULL,
                                                async_cb, &w, err, sizeof(err)), 0);
    /* past the first deadline (600 ms): re-produced at least once; the
     * other two attempts leave ~1.5 s for the view to catch up */
    usleep(900 * 1000);
    objlog_producer_stats st;
    objlog_producer_stats_get(p, &st);
    assert_true(st.unknown_retries >= 1);
    pthread_mutex_lock(&w.m);
    int early = w.done;
    pthread_mutex_unlock(&w.m);
    assert_false(early);
    held_cont();

    pthread_mutex_lock(&w.m);
    while (!w.done)
        pthread_cond_wait(&w.c, &w.m);
    pthread_mutex_unlock(&w.m);
    int64_t took = mono_ms() - t0;
    objlog_producer_stats_get(p, &st);
    objlog_producer_destroy(p);
    pthread_cond_destroy(&w.c);
    pthread_mutex_destroy(&w.m);
    printf("unknown.retries=3: OK after %lld ms and %llu re-produce(s)\n",
           (long long)took, (unsigned long long)st.unknown_retries);
    assert_status(&w.r, OBJLOG_STATUS_OK);
    assert_true(st.unknown_retries >= 1 && st.unknown_retries <= 3);
    /* the first attempt's version, reported through a later attempt */
    assert_true(vid_offset(w.r.version_id) < (uint64_t)w.r.offset);
    assert_string_equal(w.r.etag, "e3");
    assert_one_version("held2", "k", w.r.version_id);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes_ok_and_rejected),
        cmocka_unit_test(test_multipart_and_bucket_calls),
        cmocka_unit_test(test_many_writes_few_outcome_requests),
        cmocka_unit_test(test_outcomes_route),
        cmocka_unit_test_setup_teardown(test_unknown_then_manual_retry, held_setup,
                                        held_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_retries_succeed_after_cont,
                                        held_setup, held_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
