/* test_producer_applied.c: libobjlog_producer with ack=applied against the
 * real objlogd --embedded (DESIGN §6): outcomes come back through
 * GET /v1/writes/{token} as OK (version id, etag, delete marker) or
 * REJECTED (S3 code and message), and a retry with the same request id
 * gets the stored outcome instead of a second write. The issue 3 calls
 * (bucket settings, versioning, delete bucket, multipart) get their
 * outcomes the same way, create_upload with the new upload id. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keycodec.h"
#include "objlog_producer.h"
#include "proc.h"

static proc *g_daemon;
static char g_dir[256], g_bootstrap[512], g_url[128];
static objlog_producer *g_p;

static int group_setup(void **state) {
    (void)state;
    char bin[512], data[300], listen[64], err[512];
    if (proc_tmpdir(g_dir, sizeof(g_dir)) < 0)
        return -1;
    snprintf(data, sizeof(data), "%s/data", g_dir);
    proc_bin("query/objlogd", bin, sizeof(bin));
    char *argv[] = {bin, "--embedded", "--listen", "127.0.0.1:0", "--data", data, NULL};
    g_daemon = proc_spawn(argv, NULL);
    if (!g_daemon ||
        proc_wait_line(g_daemon, "OBJLOG_BOOTSTRAP=", g_bootstrap, sizeof(g_bootstrap), 30000) ||
        proc_wait_line(g_daemon, "OBJLOG_LISTEN=", listen, sizeof(listen), 30000) ||
        proc_wait_line(g_daemon, "OBJLOG_READY", NULL, 0, 30000)) {
        fprintf(stderr, "objlogd did not become ready\n");
        return -1;
    }
    snprintf(g_url, sizeof(g_url), "http://%s", listen);
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

static int group_teardown(void **state) {
    (void)state;
    objlog_producer_destroy(g_p);
    proc_stop(g_daemon, 10000);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes_ok_and_rejected),
        cmocka_unit_test(test_multipart_and_bucket_calls),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
