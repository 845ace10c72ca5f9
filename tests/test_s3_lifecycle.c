/* test_s3_lifecycle.c: S3's ?lifecycle bucket subresource
 * (query/s3/s3lc.c) with real clients: boto3 (tests/s3/boto3_lifecycle_check.py:
 * every filter form and action put and read back, the JSON API's view of
 * the same rules, an S3-configured rule expiring an object through the
 * worker, S3's refusals sent raw with exact codes, delete) and aws-cli
 * (put-bucket-lifecycle-configuration from a file, get, delete). One
 * objlogd --embedded, a child of the test killed with it even when it
 * fails (proc.h), runs the lifecycle worker every 200 ms with its clock
 * two days ahead, so a 1-day rule is due at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "httpc.h"
#include "proc.h"
#include "s3daemon.h"

static s3daemon g;

static int group_setup(void **state) {
    (void)state;
    /* the worker every 200 ms, two days ahead: S3-set rules expire now */
    char *extra[] = {"--lifecycle-interval-ms", "200", "--test-lifecycle-clock-offset-ms",
                     "172800000", NULL};
    return s3daemon_start(&g, "objlogtest objlogtest-secret tenant-a\n", extra);
}

static int group_teardown(void **state) {
    (void)state;
    return s3daemon_stop(&g);
}

static void test_boto3_lifecycle(void **state) {
    (void)state;
    char script[512];
    static char out[16384], err[16384];
    snprintf(script, sizeof(script), "%s/s3/boto3_lifecycle_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "/usr/bin/python3", script, g.s3,
                    g.json, "boto3-lifecycle", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 240000);
    if (rc != 0)
        fail_msg("boto3_lifecycle_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* aws ARGS (NULL-ended) with the test's key and no user config: its exit
 * code, stdout into out, stderr into err. */
static int aws_v(char *out, size_t on, char *err, size_t en, const char *const *args) {
    char *argv[32] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                      "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_ACCESS_KEY_ID=objlogtest",
                      "AWS_SECRET_ACCESS_KEY=objlogtest-secret",
                      "AWS_DEFAULT_REGION=us-east-1", "AWS_PAGER=", "/usr/bin/aws", "--endpoint-url",
                      g.s3, "--output", "json"};
    int n = 13;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return proc_run(argv, NULL, out, on, err, en, 60000);
}
#define aws(out, err, ...) \
    aws_v(out, sizeof(out), err, sizeof(err), (const char *const[]){__VA_ARGS__, NULL})

static json_t *json_of(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("not JSON (%s): %s", je.text, text);
    return j;
}

/* The configuration aws-cli puts, as `get` prints it back. */
static const char *const CLI_RULES =
    "{\"Rules\": ["
    "{\"ID\": \"logs\", \"Filter\": {\"Prefix\": \"logs/\"}, \"Status\": \"Enabled\","
    " \"Expiration\": {\"Days\": 30},"
    " \"NoncurrentVersionExpiration\": {\"NoncurrentDays\": 5, \"NewerNoncurrentVersions\": 1}},"
    "{\"ID\": \"tagged\", \"Filter\": {\"And\": {\"Prefix\": \"t/\", \"Tags\":"
    " [{\"Key\": \"k\", \"Value\": \"v\"}], \"ObjectSizeLessThan\": 64}},"
    " \"Status\": \"Disabled\", \"Expiration\": {\"Date\": \"2031-06-01T00:00:00+00:00\"}},"
    "{\"ID\": \"uploads\", \"Filter\": {}, \"Status\": \"Enabled\","
    " \"AbortIncompleteMultipartUpload\": {\"DaysAfterInitiation\": 3}}]}";

static void test_awscli_lifecycle(void **state) {
    (void)state;
    static char out[16384], err[4096], path[512], file[600];
    assert_int_equal(aws(out, err, "s3", "mb", "s3://cli-lc"), 0);
    snprintf(path, sizeof(path), "%s/lifecycle.json", g.dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(CLI_RULES, f) >= 0);
    assert_int_equal(fclose(f), 0);
    snprintf(file, sizeof(file), "file://%s", path);

    assert_int_not_equal(aws(out, err, "s3api", "get-bucket-lifecycle-configuration",
                             "--bucket", "cli-lc"), 0);
    assert_non_null(strstr(err, "NoSuchLifecycleConfiguration"));
    if (aws(out, err, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "cli-lc",
            "--lifecycle-configuration", file) != 0)
        fail_msg("put-bucket-lifecycle-configuration: %s", err);
    if (aws(out, err, "s3api", "get-bucket-lifecycle-configuration", "--bucket", "cli-lc") != 0)
        fail_msg("get-bucket-lifecycle-configuration: %s", err);
    json_t *got = json_of(out), *want = json_of(CLI_RULES);
    if (!json_equal(json_object_get(got, "Rules"), json_object_get(want, "Rules")))
        fail_msg("aws-cli got back %s", out);
    json_decref(got);
    json_decref(want);

    /* the JSON API (the worker's rules) says the same */
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-lc/lifecycle", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    got = json_of(r.body);
    want = json_of(
        "[{\"id\": \"logs\", \"status\": \"Enabled\", \"filter\": {\"prefix\": \"logs/\"},"
        "  \"expiration\": {\"days\": 30}, \"noncurrent_version_expiration\":"
        "  {\"noncurrent_days\": 5, \"newer_noncurrent_versions\": 1}},"
        " {\"id\": \"tagged\", \"status\": \"Disabled\", \"filter\": {\"prefix\": \"t/\","
        "  \"tags\": {\"k\": \"v\"}, \"size_less_than\": 64},"
        "  \"expiration\": {\"date\": \"2031-06-01\"}},"
        " {\"id\": \"uploads\", \"status\": \"Enabled\", \"filter\": {},"
        "  \"abort_incomplete_multipart_upload\": {\"days_after_initiation\": 3}}]");
    if (!json_equal(json_object_get(got, "rules"), want))
        fail_msg("JSON API has %s", r.body);
    json_decref(got);
    json_decref(want);

    if (aws(out, err, "s3api", "delete-bucket-lifecycle", "--bucket", "cli-lc") != 0)
        fail_msg("delete-bucket-lifecycle: %s", err);
    assert_int_not_equal(aws(out, err, "s3api", "get-bucket-lifecycle-configuration",
                             "--bucket", "cli-lc"), 0);
    assert_non_null(strstr(err, "NoSuchLifecycleConfiguration"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boto3_lifecycle),
        cmocka_unit_test(test_awscli_lifecycle),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
