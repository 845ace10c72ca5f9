/* test_s3_clients.c: real S3 clients against objlogd's S3 endpoint:
 * boto3 (tests/s3/boto3_check.py: buckets, PUT/HEAD
 * with metadata, paginated ListObjectsV2 and ListObjects, delimiters and
 * keys that need encoding, S3 errors, conditional HEAD, deletes) and
 * aws-cli (s3 ls --recursive, s3api list-objects-v2 with pagination,
 * head-object, put-object, s3 cp), each compared with the JSON API's
 * answer for the same data (Debian's python3-boto3 and awscli: /usr/bin's
 * python3 and aws, whatever else PATH has). objlogd --embedded is a child of the test,
 * killed with it even when it fails (proc.h). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "httpc.h"
#include "proc.h"
#include "s3daemon.h"
#include "s3auth.h"

static s3daemon g;

static int group_setup(void **state) {
    (void)state;
    /* the clients' key (signatures checked) and another tenant's */
    return s3daemon_start(&g, "# test keys\nobjlogtest objlogtest-secret tenant-a\n"
                              "otherkey other-secret tenant-b\n"
                              "adminkey admin-secret ops admin\n", NULL);
}

static int group_teardown(void **state) {
    (void)state;
    return s3daemon_stop(&g);
}

static void test_boto3(void **state) {
    (void)state;
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/boto3_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "/usr/bin/python3", script, g.s3, g.json,
                    "boto3-bucket", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 120000);
    if (rc != 0)
        fail_msg("boto3_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* tests/s3/NAME with the S3 and JSON URLs and the blob directory; fails with its output unless it
 * exits 0 saying "checks passed". */
static void run_check_script(const char *name) {
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/%s", OBJLOG_TESTS_DIR, name);
    char *argv[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, g.s3, g.json, g.blobs, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 120000);
    if (rc != 0)
        fail_msg("%s exited %d:\n%s\n%s", name, rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* The endpoint keeps the bytes: round trips, ranges, conditional GETs,
 * overrides, system metadata, multipart objects and copies read back
 * byte for byte, and refused writes leave no blob (boto3_bytes_check.py). */
static void test_bytes_boto3(void **state) {
    (void)state;
    run_check_script("boto3_bytes_check.py");
}

/* Tags and canned ACLs on an endpoint without --s3-anonymous, whose
 * unsigned requests get only what an ACL grants everyone
 * (boto3_attrs_check.py, on a daemon of its own). */
static void test_attrs_boto3(void **state) {
    (void)state;
    s3daemon d;
    char *extra[] = {S3DAEMON_SIGNED_ONLY, NULL};
    if (s3daemon_start(&d, "objlogtest objlogtest-secret tenant-a\n"
                           "otherkey other-secret tenant-b\n", extra) < 0) {
        s3daemon_stop(&d);
        fail_msg("objlogd without --s3-anonymous did not start");
    }
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/boto3_attrs_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, d.s3, d.json, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 120000);
    assert_int_equal(s3daemon_stop(&d), 0);
    if (rc != 0)
        fail_msg("boto3_attrs_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* --blob-s3: a second objlogd's S3 endpoint is the store the first keeps
 * its bytes in (blob_s3_check.py). */
static void test_blob_s3(void **state) {
    (void)state;
    s3daemon up, front;
    if (s3daemon_start(&up, "up upsecret tenant-up\n", NULL) < 0) {
        s3daemon_stop(&up);
        fail_msg("the upstream objlogd did not start");
    }
    char url[200], creds[300], spool[400];
    snprintf(url, sizeof(url), "%s/upstream", up.s3);
    snprintf(creds, sizeof(creds), "%s/upstream-key", up.dir);
    FILE *f = fopen(creds, "w");
    assert_non_null(f);
    assert_true(fputs("# the front's key to the upstream store\nup upsecret us-east-1\n", f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(creds, 0600), 0);
    char *extra[] = {"--blob-s3", url, "--blob-s3-credentials", creds, NULL};
    if (s3daemon_start(&front, "objlogtest objlogtest-secret tenant-a\n", extra) < 0) {
        s3daemon_stop(&front);
        s3daemon_stop(&up);
        fail_msg("objlogd --blob-s3 did not start");
    }
    snprintf(spool, sizeof(spool), "%s/data/blob-spool", front.dir);
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/blob_s3_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, front.s3, up.s3, spool, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 180000);
    /* then the store goes away: the front answers 5xx, never 200 */
    int up_rc = s3daemon_stop(&up);
    char *down[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, front.s3, url, spool, "--upstream-down",
                    NULL};
    char out2[4096], err2[8192];
    int rc2 = rc == 0 ? proc_run(down, NULL, out2, sizeof(out2), err2, sizeof(err2), 180000)
                      : 0;
    assert_int_equal(s3daemon_stop(&front), 0);
    assert_int_equal(up_rc, 0);
    if (rc != 0)
        fail_msg("blob_s3_check.py exited %d:\n%s\n%s", rc, out, err);
    if (rc2 != 0)
        fail_msg("blob_s3_check.py --upstream-down exited %d:\n%s\n%s", rc2, out2, err2);
    print_message("%s%s", out, out2);
}

/* --blob-s3 that cannot be used: objlogd says why and does not start. */
static void test_blob_s3_refused(void **state) {
    (void)state;
    char dir[256], objlogd[512], data[300], creds[300], s3creds[300], out[1024], err[4096];
    assert_int_equal(proc_tmpdir(dir, sizeof(dir)), 0);
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(creds, sizeof(creds), "%s/up", dir);
    snprintf(s3creds, sizeof(s3creds), "%s/s3", dir);
    FILE *f = fopen(creds, "w");
    assert_non_null(f);
    fputs("up upsecret\n", f);
    assert_int_equal(fclose(f), 0);
    f = fopen(s3creds, "w");
    assert_non_null(f);
    fputs("k s tenant\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(s3creds, 0600), 0);
    struct { const char *url, *creds, *named; } rows[] = {
        {"ftp://127.0.0.1:1/b", creds, "--blob-s3 'ftp://127.0.0.1:1/b'"},
        {"http://127.0.0.1:1", creds, "HOST[:PORT]/BUCKET"},
        {"http://127.0.0.1:1/b", "/nonexistent/key", "/nonexistent/key"},
        {"http://127.0.0.1:1/b", creds, "group or others may read it"}, /* 0644 */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (i < 2)
            assert_int_equal(chmod(creds, 0600), 0);
        else
            assert_int_equal(chmod(creds, 0644), 0);
        char *argv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                        "--s3-listen", "127.0.0.1:0", "--s3-credentials", s3creds,
                        "--blob-s3", (char *)rows[i].url, "--blob-s3-credentials",
                        (char *)rows[i].creds, NULL};
        int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 30000);
        if (rc == 0 || !strstr(err, rows[i].named))
            print_error("row %zu: rc %d: %s\n", i, rc, err);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err, rows[i].named));
    }
    proc_rmtree(dir);
}

/* S3's documented behaviours clients rely on: URL encoding, FetchOwner,
 * an empty continuation token, CreateBucket of an owned bucket, Object
 * Lock refused, DeleteBucket with uploads (boto3_behaviour_check.py). */
static void test_behaviour_boto3(void **state) {
    (void)state;
    run_check_script("boto3_behaviour_check.py");
}

/* A bucket belongs to the tenant that created it: every S3 operation by
 * another tenant's key is 403 AccessDenied and changes nothing; the owner's
 * succeed; the admin role crosses tenants (tests/s3/boto3_tenants_check.py). */
static void test_tenants_boto3(void **state) {
    (void)state;
    run_check_script("boto3_tenants_check.py");
}

/* SigV4 covers every header: no filler count lets an unsigned x-amz-* or
 * x-objlog-* header through; 70 signed metadata headers pass; too many
 * headers is 400 (tests/s3/boto3_headers_check.py). */
static void test_headers_signed(void **state) {
    (void)state;
    run_check_script("boto3_headers_check.py");
}

/* aws ARGS (NULL-ended) with the test's key (its signatures are checked)
 * and no user config; stdout into out. */
static int aws_key_v(const char *key, const char *secret, char *out, size_t on, char *err,
                     size_t en, const char *const *args) {
    char ak[160], sk[160];
    snprintf(ak, sizeof(ak), "AWS_ACCESS_KEY_ID=%s", key);
    snprintf(sk, sizeof(sk), "AWS_SECRET_ACCESS_KEY=%s", secret);
    char *argv[32] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                      "AWS_SHARED_CREDENTIALS_FILE=/dev/null", ak, sk,
                      "AWS_DEFAULT_REGION=us-east-1", "AWS_PAGER=", "/usr/bin/aws", "--endpoint-url",
                      g.s3, "--output", "json"};
    int n = 13;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return proc_run(argv, NULL, out, on, err, en, 60000);
}

static int aws_v(char *out, size_t on, const char *const *args) {
    char err[4096];
    int rc = aws_key_v("objlogtest", "objlogtest-secret", out, on, err, sizeof(err), args);
    if (rc != 0)
        print_message("aws %s %s: exit %d: %s\n", args[0], args[1], rc, err);
    return rc;
}
#define aws(out, on, ...) aws_v(out, on, (const char *const[]){__VA_ARGS__, NULL})
/* aws as tenant-a, expected to be refused with AccessDenied (a HEAD's 403
 * has no body to name it: aws says "(403)"). */
#define aws_denied(...)                                                                     \
    do {                                                                                    \
        char o_[4096], e_[4096];                                                            \
        const char *const a_[] = {__VA_ARGS__, NULL};                                       \
        int rc_ = aws_key_v("objlogtest", "objlogtest-secret", o_, sizeof(o_), e_,          \
                            sizeof(e_), a_);                                                \
        if (rc_ == 0 || (!strstr(e_, "AccessDenied") && !strstr(e_, "(403)")))              \
            fail_msg("aws %s %s: exit %d, wanted AccessDenied: %s", a_[0], a_[1], rc_, e_); \
    } while (0)

static void json_put(const char *path, const char *body) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, "PUT", path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("PUT %s: HTTP %ld %s", path, r.status, r.body);
}

/* The reproduction as aws-cli users meet it: tenant-b's bucket and object,
 * tenant-a's key refused at each step, the object and bucket still there. */
static void test_tenants_awscli(void **state) {
    (void)state;
    char out[8192], err[4096], lc[400], del[400];
    const char *const mb[] = {"s3api", "create-bucket", "--bucket", "beta-cli", NULL};
    assert_int_equal(aws_key_v("otherkey", "other-secret", out, sizeof(out), err, sizeof(err), mb), 0);
    snprintf(lc, sizeof(lc), "%s/secret.txt", g.dir);
    FILE *f = fopen(lc, "w");
    assert_non_null(f);
    fputs("tenant-b's secret\n", f);
    fclose(f);
    const char *const put[] = {"s3api", "put-object", "--bucket", "beta-cli", "--key",
                               "secret.txt", "--body", lc, NULL};
    assert_int_equal(aws_key_v("otherkey", "other-secret", out, sizeof(out), err, sizeof(err), put), 0);
    aws_denied("s3api", "list-objects-v2", "--bucket", "beta-cli");
    aws_denied("s3api", "put-object", "--bucket", "beta-cli", "--key", "secret.txt", "--body", lc);
    snprintf(del, sizeof(del), "Objects=[{Key=secret.txt}]");
    aws_denied("s3api", "delete-objects", "--bucket", "beta-cli", "--delete", del);
    aws_denied("s3api", "put-bucket-lifecycle-configuration", "--bucket", "beta-cli",
               "--lifecycle-configuration",
               "{\"Rules\":[{\"ID\":\"x\",\"Filter\":{\"Prefix\":\"\"},\"Status\":\"Enabled\","
               "\"Expiration\":{\"Days\":1}}]}");
    aws_denied("s3", "cp", "s3://beta-cli/secret.txt", "-");
    aws_denied("s3api", "delete-object", "--bucket", "beta-cli", "--key", "secret.txt");
    aws_denied("s3api", "delete-bucket", "--bucket", "beta-cli");
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/beta-cli/objects/secret.txt", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"size\":18"));
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/beta-cli/lifecycle", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/beta-cli", NULL, NULL, &r), 0);
    assert_non_null(strstr(r.body, "\"tenant\":\"tenant-b\""));
}

static void test_awscli(void **state) {
    (void)state;
    static char out[65536];
    /* data written through the JSON API, read with aws-cli */
    json_put("/v1/buckets/cli-bucket", "{\"tenant\":\"tenant-a\"}"); /* the key's */
    for (int i = 0; i < 12; i++) {
        char path[128], body[128];
        snprintf(path, sizeof(path), "/v1/buckets/cli-bucket/objects/logs/%02d.txt", i);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 100 + i, i);
        json_put(path, body);
    }
    json_put("/v1/buckets/cli-bucket/objects/top.bin", "{\"size\":5,\"etag\":\"abc\"}");
    assert_int_equal(aws(out, sizeof(out), "s3", "ls", "s3://cli-bucket/", "--recursive"), 0);
    /* one line per key: date time size key */
    int lines = 0;
    for (const char *l = out; (l = strchr(l, '\n')); l++)
        lines++;
    assert_int_equal(lines, 13);
    assert_non_null(strstr(out, "        100 logs/00.txt\n"));
    assert_non_null(strstr(out, "          5 top.bin\n"));
    /* s3api list-objects-v2, 5 a page, every key once, as the JSON API has them */
    assert_int_equal(aws(out, sizeof(out), "s3api", "list-objects-v2", "--bucket", "cli-bucket",
                         "--page-size", "5"), 0);
    json_t *j = json_loads(out, 0, NULL);
    json_t *contents = json_object_get(j, "Contents");
    assert_int_equal(json_array_size(contents), 13);
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-bucket/objects", NULL, NULL, &r), 0);
    json_t *jl = json_loads(r.body, 0, NULL);
    json_t *objs = json_object_get(jl, "objects");
    assert_int_equal(json_array_size(objs), 13);
    for (size_t i = 0; i < 13; i++) {
        json_t *a = json_array_get(contents, i), *b = json_array_get(objs, i);
        assert_string_equal(json_string_value(json_object_get(a, "Key")),
                            json_string_value(json_object_get(b, "key")));
        assert_int_equal(json_integer_value(json_object_get(a, "Size")),
                         json_integer_value(json_object_get(b, "size")));
        char quoted[80];
        snprintf(quoted, sizeof(quoted), "\"%s\"",
                 json_string_value(json_object_get(b, "etag")));
        assert_string_equal(json_string_value(json_object_get(a, "ETag")), quoted);
    }
    json_decref(j);
    json_decref(jl);
    /* head-object, put-object */
    assert_int_equal(aws(out, sizeof(out), "s3api", "head-object", "--bucket", "cli-bucket",
                         "--key", "top.bin"), 0);
    j = json_loads(out, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "ContentLength")), 5);
    assert_string_equal(json_string_value(json_object_get(j, "ETag")), "\"abc\"");
    json_decref(j);
    char file[300];
    snprintf(file, sizeof(file), "%s/upload.txt", g.dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("hello from aws-cli\n", f);
    fclose(f);
    assert_int_equal(aws(out, sizeof(out), "s3api", "put-object", "--bucket", "cli-bucket",
                         "--key", "up/loaded.txt", "--body", file), 0);
    assert_non_null(strstr(out, "\"\\\"9129c558965bc16806832bfcd445c2d9\\\"\""));
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-bucket/objects/up/loaded.txt",
                              NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"size\":19"));
    assert_non_null(strstr(r.body, "9129c558965bc16806832bfcd445c2d9"));
    /* s3 cp of a small file: a PutObject */
    assert_int_equal(aws(out, sizeof(out), "s3", "cp", file, "s3://cli-bucket/cp/copy.txt"), 0);
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-bucket/objects/cp/copy.txt", NULL,
                              NULL, &r), 0);
    assert_int_equal(r.status, 200);
}

/* The wire format itself, as curl-level requests: virtual-hosted style,
 * the error document, EncodingType=url, Content-MD5, HEAD errors. */
static void test_wire(void **state) {
    (void)state;
    httpc *s3 = httpc_new(g.s3);
    httpc_resp r;
    char host[160];
    snprintf(host, sizeof(host), "Host: vh-bucket.localhost:%s", strrchr(g.s3, ':') + 1);
    const char *vh[] = {host, NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/", "", vh, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(s3, "PUT", "/a%20b%2Bc", "xyz", vh, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "etag: \"d16fb36f0911f878998c136191af705e\""));
    /* path style sees what virtual-hosted style wrote */
    assert_int_equal(httpc_do(s3, "GET", "/vh-bucket?list-type=2&encoding-type=url", NULL, NULL,
                              &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "<Key>a%20b%2Bc</Key>"));
    assert_non_null(strstr(r.body, "<EncodingType>url</EncodingType>"));
    assert_int_equal(httpc_do(s3, "GET", "/?list-type=2", NULL, vh, &r), 0);
    assert_non_null(strstr(r.body, "<Key>a b+c</Key>"));
    /* the error document: code, resource, request id = the header's */
    assert_int_equal(httpc_do(s3, "GET", "/no-such-bucket?list-type=2", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "<Error><Code>NoSuchBucket</Code>"));
    assert_non_null(strstr(r.body, "<Resource>/no-such-bucket</Resource>"));
    const char *rid = strstr(r.headers, "x-amz-request-id: ");
    assert_non_null(rid);
    char want[80];
    snprintf(want, sizeof(want), "<RequestId>%.32s</RequestId>", rid + 18);
    assert_non_null(strstr(r.body, want));
    /* HEAD: the status, no body */
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/missing", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_int_equal(r.body_len, 0);
    /* Content-MD5 that does not match: refused, nothing written */
    const char *md5[] = {"Content-MD5: AAAAAAAAAAAAAAAAAAAAAA==", NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/bad", "xyz", md5, &r), 0);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "<Code>BadDigest</Code>"));
    const char *good[] = {"Content-MD5: 0W+zbwkR+HiZjBNhka9wXg==", NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/good", "xyz", good, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/bad", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    /* x-amz-checksum-*: derived from the body, checked, kept, answered
     * (the CRC-32C check value of "123456789", E3069283, as RFC 3720's
     * algorithm gives it; CRC32 and SHA-256 of the same) */
    const char *c32c[] = {"x-amz-checksum-crc32c: 4waSgw==", NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/sum-crc32c", "123456789", c32c, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "x-amz-checksum-crc32c: 4waSgw=="));
    const char *mode[] = {"x-amz-checksum-mode: ENABLED", NULL};
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/sum-crc32c", NULL, mode, &r), 0);
    assert_non_null(strstr(r.headers, "x-amz-checksum-crc32c: 4waSgw=="));
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/sum-crc32c", NULL, NULL, &r), 0);
    assert_null(strstr(r.headers, "x-amz-checksum-crc32c"));
    const char *c32[] = {"x-amz-checksum-crc32: y/Q5Jg==", NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/sum-crc32", "123456789", c32, &r), 0);
    assert_int_equal(r.status, 200);
    const char *sha[] = {"x-amz-checksum-sha256: FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=",
                         NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/sum-sha", "123456789", sha, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/sum-sha", NULL, mode, &r), 0);
    assert_non_null(strstr(r.headers,
                           "x-amz-checksum-sha256: FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="));
    /* the JSON API sees the same checksum */
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/vh-bucket/objects/sum-sha", NULL, NULL,
                              &r), 0);
    assert_non_null(strstr(r.body,
                           "\"checksum\":\"SHA256:FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=\""));
    /* a wrong one: 400 BadDigest, nothing written */
    const char *bad[] = {"x-amz-checksum-crc32c: AAAAAA==", NULL};
    assert_int_equal(httpc_do(s3, "PUT", "/vh-bucket/sum-bad", "123456789", bad, &r), 0);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "<Code>BadDigest</Code>"));
    assert_int_equal(httpc_do(s3, "HEAD", "/vh-bucket/sum-bad", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 404);
    /* bad names and unknown operations */
    assert_int_equal(httpc_do(s3, "PUT", "/Bad_Bucket", "", NULL, &r), 0);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "<Code>InvalidBucketName</Code>"));
    assert_int_equal(httpc_do(s3, "GET", "/vh-bucket?list-type=3", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 400);
    assert_int_equal(httpc_do(s3, "GET", "/vh-bucket?encoding-type=gzip", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 400);
    httpc_destroy(s3);
}

/* A request signed with s3auth_sign as a client would, at a chosen time. */
static long signed_get(httpc *h, const char *key, const char *secret, const char *path,
                       int64_t when, httpc_resp *r) {
    char host[300], date[40], auth[512], hauth[600], hdate[64];
    time_t t = (time_t)when;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(host, sizeof(host), "%s", g.s3 + 7);
    static const char empty[] =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    s3_kv hs[] = {{"Host", host}, {"x-amz-date", date}, {"x-amz-content-sha256", empty}};
    s3auth_req req = {.method = "GET", .path = path, .query = NULL, .headers = hs,
                      .nheaders = 3, .now_s = when};
    assert_int_equal(s3auth_sign(key, secret, "us-east-1", &req, empty, auth, sizeof(auth)), 0);
    snprintf(hauth, sizeof(hauth), "Authorization: %s", auth);
    snprintf(hdate, sizeof(hdate), "x-amz-date: %s", date);
    char hsha[100];
    snprintf(hsha, sizeof(hsha), "x-amz-content-sha256: %s", empty);
    const char *headers[] = {hauth, hdate, hsha, NULL};
    assert_int_equal(httpc_do(h, "GET", path, NULL, headers, r), 0);
    return r->status;
}

/* Signature V4 against the credentials file: a key's tenant owns what it
 * creates and is what it lists; wrong secrets, unknown keys and old
 * signatures are refused with S3's codes; an admin key lists every
 * bucket; an unsigned request (--s3-anonymous) may not list buckets. */
static void test_auth(void **state) {
    (void)state;
    httpc *s3 = httpc_new(g.s3);
    httpc_resp r;
    int64_t now = (int64_t)time(NULL);
    /* tenant-a's key created boto3's and aws-cli's buckets before? none
     * left: make one as tenant-b through a signed PUT is not needed: the
     * JSON API makes a tenant-b bucket */
    json_put("/v1/buckets/tb-bucket", "{\"tenant\":\"tenant-b\"}");
    assert_int_equal(signed_get(s3, "otherkey", "other-secret", "/", now, &r), 200);
    assert_non_null(strstr(r.body, "<Name>tb-bucket</Name>"));
    assert_null(strstr(r.body, "<Name>cli-bucket</Name>")); /* tenant-a's */
    assert_int_equal(signed_get(s3, "objlogtest", "objlogtest-secret", "/", now, &r), 200);
    assert_null(strstr(r.body, "<Name>tb-bucket</Name>"));
    assert_non_null(strstr(r.body, "<Name>cli-bucket</Name>"));
    /* the admin role: every bucket */
    assert_int_equal(signed_get(s3, "adminkey", "admin-secret", "/", now, &r), 200);
    assert_non_null(strstr(r.body, "<Name>tb-bucket</Name>"));
    assert_non_null(strstr(r.body, "<Name>cli-bucket</Name>"));
    /* anonymous, where keys are checked: S3's AccessDenied */
    assert_int_equal(httpc_do(s3, "GET", "/", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "<Code>AccessDenied</Code>"));
    /* refusals */
    assert_int_equal(signed_get(s3, "otherkey", "wrong-secret", "/", now, &r), 403);
    assert_non_null(strstr(r.body, "<Code>SignatureDoesNotMatch</Code>"));
    assert_int_equal(signed_get(s3, "nobody", "x", "/", now, &r), 403);
    assert_non_null(strstr(r.body, "<Code>InvalidAccessKeyId</Code>"));
    assert_int_equal(signed_get(s3, "otherkey", "other-secret", "/", now - 16 * 60, &r), 403);
    assert_non_null(strstr(r.body, "<Code>RequestTimeTooSkewed</Code>"));
    assert_int_equal(signed_get(s3, "otherkey", "other-secret", "/", now - 14 * 60, &r), 200);
    /* a bucket made by a key belongs to its tenant (the JSON API says so) */
    char out[4096];
    assert_int_equal(aws(out, sizeof(out), "s3", "mb", "s3://ta-made"), 0);
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/ta-made", NULL, NULL, &r), 0);
    assert_non_null(strstr(r.body, "\"tenant\":\"tenant-a\""));
    httpc_destroy(s3);
}

/* SIGHUP reads the credentials file again while serving: a key added works,
 * a key removed is refused; a file that no longer loads (others may read
 * it) leaves the keys in force. Last: it changes the keys. */
static void test_creds_reload(void **state) {
    (void)state;
    httpc *s3 = httpc_new(g.s3);
    httpc_resp r;
    int64_t now = (int64_t)time(NULL);
    char path[300], line[64];
    snprintf(path, sizeof(path), "%s/s3-credentials", g.dir);
    assert_int_equal(signed_get(s3, "newkey", "new-secret", "/", now, &r), 403);
    assert_non_null(strstr(r.body, "<Code>InvalidAccessKeyId</Code>"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("objlogtest objlogtest-secret tenant-a\nadminkey admin-secret ops admin\n"
          "newkey new-secret tenant-b\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(kill(g.p->pid, SIGHUP), 0);
    assert_int_equal(proc_wait_line(g.p, "OBJLOG_RELOAD", line, sizeof(line), 10000), 0);
    assert_string_equal(line, "ED");
    assert_int_equal(signed_get(s3, "newkey", "new-secret", "/", now, &r), 200);
    assert_non_null(strstr(r.body, "<Name>tb-bucket</Name>")); /* tenant-b's */
    assert_int_equal(signed_get(s3, "otherkey", "other-secret", "/", now, &r), 403);
    assert_non_null(strstr(r.body, "<Code>InvalidAccessKeyId</Code>"));
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(kill(g.p->pid, SIGHUP), 0);
    assert_int_equal(proc_wait_line(g.p, "OBJLOG_RELOAD", line, sizeof(line), 10000), 0);
    assert_string_equal(line, "_FAILED");
    assert_int_equal(signed_get(s3, "newkey", "new-secret", "/", now, &r), 200);
    assert_int_equal(chmod(path, 0600), 0);
    httpc_destroy(s3);
}

/* ---------------------------------------- listings of versions, uploads, parts */

/* boto3's ListObjectVersions, ListMultipartUploads and ListParts (their
 * paginators, markers, encoding, errors) equal the JSON API's /versions,
 * /uploads and /parts field by field (tests/s3/boto3_list_check.py). */
static void test_boto3_lists(void **state) {
    (void)state;
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/boto3_list_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", "HOME=/nonexistent",
                    "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    "/usr/bin/python3", script, g.s3, g.json, "boto3-lists", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 180000);
    if (rc != 0)
        fail_msg("boto3_list_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* A JSON API call that must succeed; its answer (caller decrefs). */
static json_t *json_call(const char *method, const char *path, const char *body) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, method, path, body, NULL, &r), 0);
    if (r.status != 200)
        fail_msg("%s %s: HTTP %ld %s", method, path, r.status, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    if (!j)
        fail_msg("%s %s: not JSON: %s", method, path, r.body);
    return j;
}

static const char *jstr(json_t *o, const char *name) {
    const char *s = json_string_value(json_object_get(o, name));
    if (!s)
        fail_msg("no string field %s", name);
    return s;
}

static long long jint(json_t *o, const char *name) {
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        fail_msg("no integer field %s", name);
    return json_integer_value(v);
}

/* aws-cli's entry a (a version, marker or part) against the JSON API's b:
 * the ETag quoted, the time to the millisecond (aws prints microseconds
 * and +00:00, the JSON API milliseconds and Z). */
static void assert_same_time(json_t *a, const char *an, json_t *b, const char *bn) {
    const char *x = jstr(a, an), *y = jstr(b, bn);
    if (strlen(x) < 23 || strlen(y) != 24 || strncmp(x, y, 23) != 0)
        fail_msg("%s %s != %s %s", an, x, bn, y);
}

static void assert_quoted_etag(json_t *a, json_t *b) {
    char quoted[80];
    snprintf(quoted, sizeof(quoted), "\"%s\"", jstr(b, "etag"));
    assert_string_equal(jstr(a, "ETag"), quoted);
}

/* aws s3api list-object-versions (3 a page), list-multipart-uploads and
 * list-parts (2 a page) over data the JSON API wrote, equal to its
 * /versions, /uploads and /parts. */
static void test_awscli_lists(void **state) {
    (void)state;
    static char out[131072];
    char path[256], body[256];
    json_decref(json_call("PUT", "/v1/buckets/cli-ver",
                          "{\"tenant\":\"tenant-a\",\"versioning\":\"Enabled\"}"));
    int nver = 0;
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5; i++) {
            if (round > i % 3)
                continue;
            snprintf(path, sizeof(path), "/v1/buckets/cli-ver/objects/k/%d", i);
            snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 10 * round + i,
                     round * 16 + i);
            json_decref(json_call("PUT", path, body));
            nver++;
        }
    json_decref(json_call("DELETE", "/v1/buckets/cli-ver/objects/k/1", NULL));
    json_decref(json_call("DELETE", "/v1/buckets/cli-ver/objects/k/3", NULL));
    assert_int_equal(nver, 9);
    assert_int_equal(aws(out, sizeof(out), "s3api", "list-object-versions", "--bucket",
                         "cli-ver", "--page-size", "3"), 0);
    json_t *a = json_loads(out, 0, NULL);
    json_t *jv = json_call("GET", "/v1/buckets/cli-ver/versions", NULL);
    json_t *rows = json_object_get(jv, "versions");
    assert_int_equal(json_array_size(rows), 11);
    json_t *vers = json_object_get(a, "Versions"), *marks = json_object_get(a, "DeleteMarkers");
    assert_int_equal(json_array_size(vers), 9);
    assert_int_equal(json_array_size(marks), 2);
    size_t iv = 0, im = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *b = json_array_get(rows, i);
        int marker = json_is_true(json_object_get(b, "delete_marker"));
        json_t *e = marker ? json_array_get(marks, im++) : json_array_get(vers, iv++);
        assert_string_equal(jstr(e, "Key"), jstr(b, "key"));
        assert_string_equal(jstr(e, "VersionId"), jstr(b, "version_id"));
        assert_int_equal(json_is_true(json_object_get(e, "IsLatest")),
                         json_is_true(json_object_get(b, "is_latest")));
        assert_same_time(e, "LastModified", b, "last_modified");
        assert_string_equal(jstr(json_object_get(e, "Owner"), "ID"), "tenant-a");
        if (marker)
            continue;
        assert_int_equal(jint(e, "Size"), jint(b, "size"));
        assert_quoted_etag(e, b);
        assert_string_equal(jstr(e, "StorageClass"), jstr(b, "storage_class"));
    }
    assert_int_equal(iv, 9);
    assert_int_equal(im, 2);
    json_decref(a);
    json_decref(jv);
    /* a multipart upload of 5 parts, listed 2 at a time */
    json_t *up = json_call("POST", "/v1/buckets/cli-ver/uploads", "{\"key\":\"mp/big file\"}");
    char id[64];
    snprintf(id, sizeof(id), "%s", jstr(up, "upload_id"));
    json_decref(up);
    for (int n = 1; n <= 5; n++) {
        snprintf(path, sizeof(path), "/v1/buckets/cli-ver/uploads/%s/parts/%d?key=mp%%2Fbig%%20file",
                 id, n);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 5242880 + n, 0xabc0 + n);
        json_decref(json_call("PUT", path, body));
    }
    assert_int_equal(aws(out, sizeof(out), "s3api", "list-multipart-uploads", "--bucket",
                         "cli-ver"), 0);
    a = json_loads(out, 0, NULL);
    jv = json_call("GET", "/v1/buckets/cli-ver/uploads", NULL);
    json_t *ups = json_object_get(a, "Uploads"), *jups = json_object_get(jv, "uploads");
    assert_int_equal(json_array_size(ups), 1);
    assert_int_equal(json_array_size(jups), 1);
    assert_string_equal(jstr(json_array_get(ups, 0), "UploadId"), id);
    assert_string_equal(jstr(json_array_get(ups, 0), "Key"), "mp/big file");
    assert_same_time(json_array_get(ups, 0), "Initiated", json_array_get(jups, 0), "initiated");
    assert_string_equal(jstr(json_object_get(json_array_get(ups, 0), "Initiator"), "ID"),
                        "tenant-a");
    json_decref(a);
    json_decref(jv);
    assert_int_equal(aws(out, sizeof(out), "s3api", "list-parts", "--bucket", "cli-ver", "--key",
                         "mp/big file", "--upload-id", id, "--page-size", "2"), 0);
    a = json_loads(out, 0, NULL);
    snprintf(path, sizeof(path), "/v1/buckets/cli-ver/uploads/%s/parts?key=mp%%2Fbig%%20file", id);
    jv = json_call("GET", path, NULL);
    json_t *parts = json_object_get(a, "Parts"), *jparts = json_object_get(jv, "parts");
    assert_int_equal(json_array_size(parts), 5);
    assert_int_equal(json_array_size(jparts), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *e = json_array_get(parts, i), *b = json_array_get(jparts, i);
        assert_int_equal(jint(e, "PartNumber"), jint(b, "part_number"));
        assert_int_equal(jint(e, "PartNumber"), (long long)i + 1);
        assert_int_equal(jint(e, "Size"), jint(b, "size"));
        assert_quoted_etag(e, b);
        assert_same_time(e, "LastModified", b, "last_modified");
    }
    json_decref(a);
    json_decref(jv);
}

/* -------------------------------------------------------- rclone and s3cmd */

/* A tool (absolute path first) with nothing of the user's: an empty
 * environment but HOME (the test's dir) and PATH; stdout into out. */
static int tool_v(char *out, size_t on, const char *const *args) {
    static char err[16384];
    char home[300];
    snprintf(home, sizeof(home), "HOME=%s", g.dir);
    char *argv[40] = {"/usr/bin/env", "-i", home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    int n = 5;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    int rc = proc_run(argv, NULL, out, on, err, sizeof(err), 120000);
    if (rc != 0)
        print_message("%s %s: exit %d: %s\n", args[0], args[1], rc, err);
    return rc;
}
#define tool(out, on, ...) tool_v(out, on, (const char *const[]){__VA_ARGS__, NULL})

typedef struct listed {
    char key[256];
    long long size;
} listed;

static int listed_cmp(const void *a, const void *b) {
    return strcmp(((const listed *)a)->key, ((const listed *)b)->key);
}

/* Every live object of bucket, by the JSON API (one page: < 1000 keys). */
static size_t json_objects(const char *bucket, listed *l, size_t max, long long *bytes) {
    char path[200];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects", bucket);
    json_t *j = json_call("GET", path, NULL);
    json_t *objs = json_object_get(j, "objects");
    assert_false(json_is_true(json_object_get(j, "is_truncated")));
    size_t n = json_array_size(objs);
    assert_true(n <= max);
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(l[i].key, sizeof(l[i].key), "%s", jstr(json_array_get(objs, i), "key"));
        l[i].size = jint(json_array_get(objs, i), "size");
        *bytes += l[i].size;
    }
    json_decref(j);
    return n;
}

/* The lines of an s3cmd listing naming s3://bucket/KEY, as (key, size);
 * size -1 for DIR. Other lines are skipped. */
static size_t s3cmd_lines(char *out, const char *bucket, listed *l, size_t max) {
    char url[100];
    size_t n = 0, ul = (size_t)snprintf(url, sizeof(url), "s3://%s/", bucket);
    for (char *line = out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *u = strstr(line, url);
        if (!u || n == max || u == line)
            continue;
        char *sz = u - 1;
        while (sz > line && sz[-1] == ' ')
            sz--;
        while (sz > line && sz[-1] != ' ')
            sz--;
        snprintf(l[n].key, sizeof(l[n].key), "%s", u + ul);
        l[n].size = strncmp(sz, "DIR", 3) == 0 ? -1 : atoll(sz);
        n++;
    }
    return n;
}

static void assert_listed_equal(const listed *a, size_t na, const listed *b, size_t nb) {
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_string_equal(a[i].key, b[i].key);
        if (a[i].size != b[i].size)
            fail_msg("%s: size %lld != %lld", a[i].key, a[i].size, b[i].size);
    }
}

/* Requests objlogd answered with status code so far, every endpoint
 * (S3's and the JSON API's) summed, from /metrics. */
static long long answered_with(const char *code) {
    httpc_resp r;
    char label[32];
    assert_int_equal(httpc_do(g.h, "GET", "/metrics", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    snprintf(label, sizeof(label), ",code=\"%s\"} ", code);
    long long n = 0;
    for (const char *l = r.body; (l = strstr(l, "objlog_http_requests_total{")); l++) {
        const char *end = strchr(l, '\n'), *c = strstr(l, label);
        if (c && (!end || c < end))
            n += atoll(c + strlen(label));
    }
    return n;
}

/* rclone (lsjson -R, size, --s3-versions) and s3cmd (ls, du,
 * la -r, multipart, listmp), signing with the test's key, path style, against
 * what the JSON API wrote and counts. */
static void test_rclone_s3cmd(void **state) {
    (void)state;
    static char out[262144];
    static listed want[64], got[64];
    char path[256], body[256], conf[300], cfg[300];
    /* tenant-a's (the key's), so s3cmd la lists it */
    json_decref(json_call("PUT", "/v1/buckets/rc-bucket",
                          "{\"tenant\":\"tenant-a\",\"versioning\":\"Enabled\"}"));
    long long sizes = 0;
    for (int i = 0; i < 30; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/rc-bucket/objects/docs/%02d.txt", i);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 1000 + 7 * i, i);
        json_decref(json_call("PUT", path, body));
        sizes += 1000 + 7 * i;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/rc-bucket/objects/img/a%%20b/%%C3%%BC%d.png", i);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 50000 + i, 100 + i);
        json_decref(json_call("PUT", path, body));
        sizes += 50000 + i;
    }
    json_decref(json_call("PUT", "/v1/buckets/rc-bucket/objects/top.bin",
                          "{\"size\":3,\"etag\":\"00000000000000000000000000000abc\"}"));
    sizes += 3;
    for (int i = 0; i < 5; i++) { /* overwritten: 5 noncurrent versions */
        snprintf(path, sizeof(path), "/v1/buckets/rc-bucket/objects/docs/%02d.txt", i);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 2000 + i, 200 + i);
        json_decref(json_call("PUT", path, body));
    }
    json_decref(json_call("DELETE", "/v1/buckets/rc-bucket/objects/docs/05.txt", NULL));
    json_t *up = json_call("POST", "/v1/buckets/rc-bucket/uploads", "{\"key\":\"big/file\"}");
    char id[64];
    snprintf(id, sizeof(id), "%s", jstr(up, "upload_id"));
    json_decref(up);
    for (int n = 1; n <= 3; n++) {
        snprintf(path, sizeof(path), "/v1/buckets/rc-bucket/uploads/%s/parts/%d?key=big%%2Ffile",
                 id, n);
        snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"%032x\"}", 6000000 + n, 300 + n);
        json_decref(json_call("PUT", path, body));
    }
    /* the JSON API's numbers: its listing and its counters agree */
    long long bytes;
    size_t nwant = json_objects("rc-bucket", want, 64, &bytes);
    assert_int_equal(nwant, 33);
    json_t *st = json_call("GET", "/v1/buckets/rc-bucket/stats", NULL);
    assert_int_equal(jint(st, "objects"), 33);
    assert_int_equal(jint(st, "bytes"), bytes);
    long long versions = jint(st, "versions"), version_bytes = jint(st, "version_bytes");
    assert_int_equal(versions, 39);
    json_decref(st);
    assert_int_equal(bytes, sizes - 5 * 1000 - 7 * 10 + 5 * 2000 + 10 - (1000 + 35));
    qsort(want, nwant, sizeof(*want), listed_cmp);

    /* neither client needs an operation objlogd answers 501 */
    long long not_implemented = answered_with("501");

    /* rclone: a config file of the test's, path style, the test's key */
    snprintf(conf, sizeof(conf), "%s/rclone.conf", g.dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fprintf(f, "[objlog]\ntype = s3\nprovider = Other\nenv_auth = false\n"
               "access_key_id = objlogtest\nsecret_access_key = objlogtest-secret\n"
               "endpoint = %s\nregion = us-east-1\nforce_path_style = true\n", g.s3);
    fclose(f);
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/rclone", "--config", conf, "lsjson", "-R",
                          "objlog:rc-bucket"), 0);
    json_t *a = json_loads(out, 0, NULL);
    assert_non_null(a);
    size_t ngot = 0, ndirs = 0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        if (json_is_true(json_object_get(e, "IsDir"))) {
            const char *d = jstr(e, "Path");
            assert_true(strcmp(d, "docs") == 0 || strcmp(d, "img") == 0 ||
                        strcmp(d, "img/a b") == 0);
            ndirs++;
            continue;
        }
        assert_true(ngot < 64);
        snprintf(got[ngot].key, sizeof(got[ngot].key), "%s", jstr(e, "Path"));
        got[ngot++].size = jint(e, "Size");
    }
    json_decref(a);
    assert_int_equal(ndirs, 3);
    qsort(got, ngot, sizeof(*got), listed_cmp);
    assert_listed_equal(got, ngot, want, nwant);
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/rclone", "--config", conf, "size", "--json",
                          "objlog:rc-bucket"), 0);
    a = json_loads(out, 0, NULL);
    assert_int_equal(jint(a, "count"), 33);
    assert_int_equal(jint(a, "bytes"), bytes);
    json_decref(a);
    /* with --s3-versions rclone lists through ListObjectVersions */
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/rclone", "--config", conf, "size", "--json",
                          "--s3-versions", "objlog:rc-bucket"), 0);
    a = json_loads(out, 0, NULL);
    assert_int_equal(jint(a, "count"), versions);
    assert_int_equal(jint(a, "bytes"), version_bytes);
    json_decref(a);

    /* s3cmd: its config file, the test's HOME */
    snprintf(cfg, sizeof(cfg), "%s/s3cfg", g.dir);
    f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "[default]\naccess_key = objlogtest\nsecret_key = objlogtest-secret\n"
               "host_base = %s\nhost_bucket = %s\nuse_https = False\n"
               "bucket_location = us-east-1\nsignature_v2 = False\n", g.s3 + 7, g.s3 + 7);
    fclose(f);
    /* ls: one level, DIR for the common prefixes */
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/s3cmd", "-c", cfg, "ls",
                          "s3://rc-bucket"), 0);
    ngot = s3cmd_lines(out, "rc-bucket", got, 64);
    json_t *jl = json_call("GET", "/v1/buckets/rc-bucket/objects?delimiter=/", NULL);
    json_t *pre = json_object_get(jl, "common_prefixes"), *objs = json_object_get(jl, "objects");
    assert_int_equal(ngot, json_array_size(pre) + json_array_size(objs));
    assert_int_equal(ngot, 3);
    for (size_t i = 0; i < json_array_size(pre); i++) {
        assert_string_equal(got[i].key, json_string_value(json_array_get(pre, i)));
        assert_int_equal(got[i].size, -1);
    }
    assert_string_equal(got[2].key, jstr(json_array_get(objs, 0), "key"));
    assert_int_equal(got[2].size, jint(json_array_get(objs, 0), "size"));
    json_decref(jl);
    /* la -r: every object of every bucket of the key's tenant */
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/s3cmd", "-c", cfg, "la", "-r"), 0);
    char *copy = strdup(out);
    assert_non_null(copy);
    ngot = s3cmd_lines(copy, "rc-bucket", got, 64);
    free(copy);
    qsort(got, ngot, sizeof(*got), listed_cmp);
    assert_listed_equal(got, ngot, want, nwant);
    json_t *jb = json_call("GET", "/v1/buckets?tenant=tenant-a", NULL);
    size_t total = 0, lines = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(jb, "buckets")); i++) {
        listed tmp[64];
        long long tb;
        total += json_objects(jstr(json_array_get(json_object_get(jb, "buckets"), i), "name"),
                              tmp, 64, &tb);
    }
    json_decref(jb);
    for (const char *l = out; (l = strstr(l, "  s3://")); l++)
        lines++;
    assert_int_equal(lines, total);
    /* du: bytes and count */
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/s3cmd", "-c", cfg, "du",
                          "s3://rc-bucket"), 0);
    long long du_bytes = -1, du_count = -1;
    assert_int_equal(sscanf(out, " %lld %lld objects s3://rc-bucket/", &du_bytes, &du_count), 2);
    assert_int_equal(du_bytes, bytes);
    assert_int_equal(du_count, 33);
    /* multipart / listmp: ListMultipartUploads and ListParts */
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/s3cmd", "-c", cfg, "multipart",
                          "s3://rc-bucket"), 0);
    char want_line[200];
    snprintf(want_line, sizeof(want_line), "\ts3://rc-bucket/big/file\t%s\n", id);
    assert_non_null(strstr(out, want_line));
    assert_int_equal(tool(out, sizeof(out), "/usr/bin/s3cmd", "-c", cfg, "listmp",
                          "s3://rc-bucket/big/file", id), 0);
    snprintf(path, sizeof(path), "/v1/buckets/rc-bucket/uploads/%s/parts?key=big%%2Ffile", id);
    json_t *jp = json_call("GET", path, NULL);
    json_t *parts = json_object_get(jp, "parts");
    assert_int_equal(json_array_size(parts), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *p = json_array_get(parts, i);
        snprintf(want_line, sizeof(want_line), "%s\t%lld\t\"%s\"\t%lld\n",
                 jstr(p, "last_modified"), jint(p, "part_number"), jstr(p, "etag"),
                 jint(p, "size"));
        if (!strstr(out, want_line))
            fail_msg("s3cmd listmp has no line %s in:\n%s", want_line, out);
    }
    json_decref(jp);
    assert_int_equal(answered_with("501"), not_implemented);
    assert_true(answered_with("200") > 0);
}

/* ---- the write side: s3write.c ---- */

static void test_boto3_writes(void **state) {
    (void)state;
    char script[512], out[8192], err[8192];
    snprintf(script, sizeof(script), "%s/s3/boto3_write_check.py", OBJLOG_TESTS_DIR);
    char *argv[] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "/usr/bin/python3", script, g.s3,
                    g.json, "boto3-writes", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 300000);
    if (rc != 0)
        fail_msg("boto3_write_check.py exited %d:\n%s\n%s", rc, out, err);
    assert_non_null(strstr(out, " checks passed"));
    print_message("%s", out);
}

/* A string member of the JSON text's object (a path of member names). */
static char *jstr_at(const char *text, const char *a, const char *b) {
    static char v[256];
    json_t *j = json_loads(text, 0, NULL);
    json_t *o = json_object_get(j, a);
    if (b)
        o = json_object_get(o, b);
    snprintf(v, sizeof(v), "%s", json_is_string(o) ? json_string_value(o) : "(none)");
    json_decref(j);
    return v;
}

static void json_get_ok(const char *path, httpc_resp *r) {
    assert_int_equal(httpc_do(g.h, "GET", path, NULL, NULL, r), 0);
    if (r->status != 200)
        fail_msg("GET %s: HTTP %ld %s", path, r->status, r->body);
}

/* The hex MD5 of n bytes of byte c, and of the MD5s ("-N" appended). */
static void md5_of_fill(int c, size_t n, unsigned char out[16]) {
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    unsigned char buf[65536];
    memset(buf, c, sizeof(buf));
    EVP_DigestInit_ex(m, EVP_md5(), NULL);
    for (size_t done = 0; done < n; done += sizeof(buf))
        EVP_DigestUpdate(m, buf, n - done < sizeof(buf) ? n - done : sizeof(buf));
    EVP_DigestFinal_ex(m, out, NULL);
    EVP_MD_CTX_free(m);
}

static void hex16(const unsigned char md5[16], char out[33]) {
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md5[i]);
}

static void write_fill(const char *path, int c, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char buf[65536];
    memset(buf, c, sizeof(buf));
    for (size_t done = 0; done < n; done += sizeof(buf))
        assert_true(fwrite(buf, 1, n - done < sizeof(buf) ? n - done : sizeof(buf), f) > 0);
    assert_int_equal(fclose(f), 0);
}

static void test_awscli_writes(void **state) {
    (void)state;
    static char out[65536], path[512], body[600];
    httpc_resp r;
    assert_int_equal(aws(out, sizeof(out), "s3", "mb", "s3://cli-writes"), 0);
    assert_int_equal(aws(out, sizeof(out), "s3api", "put-bucket-versioning", "--bucket",
                         "cli-writes", "--versioning-configuration", "Status=Enabled"), 0);
    json_get_ok("/v1/buckets/cli-writes", &r);
    assert_string_equal(jstr_at(r.body, "versioning", NULL), "Enabled");

    /* aws s3 cp of 20 MB: multipart, 8 MiB parts (8, 8, 4 MB) */
    const size_t size = 20 * 1000 * 1000, part = 8 * 1024 * 1024;
    snprintf(path, sizeof(path), "%s/big.bin", g.dir);
    write_fill(path, 'q', size);
    snprintf(body, sizeof(body), "s3://cli-writes/big/file.bin");
    assert_int_equal(aws(out, sizeof(out), "s3", "cp", "--only-show-errors", path, body), 0);
    unsigned char md5s[48], whole[16];
    md5_of_fill('q', part, md5s);
    memcpy(md5s + 16, md5s, 16);
    md5_of_fill('q', size - 2 * part, md5s + 32);
    unsigned int wn;
    assert_true(EVP_Digest(md5s, 48, whole, &wn, EVP_md5(), NULL));
    char want[40];
    hex16(whole, want);
    strcat(want, "-3");
    json_get_ok("/v1/buckets/cli-writes/objects/big/file.bin", &r);
    assert_string_equal(jstr_at(r.body, "etag", NULL), want);
    assert_non_null(strstr(r.body, "\"size\":20000000"));
    char big_version[32];
    snprintf(big_version, sizeof(big_version), "%s", jstr_at(r.body, "version_id", NULL));
    assert_int_equal(aws(out, sizeof(out), "s3api", "head-object", "--bucket", "cli-writes",
                         "--key", "big/file.bin"), 0);
    char quoted[48];
    snprintf(quoted, sizeof(quoted), "\"%s\"", want);
    assert_string_equal(jstr_at(out, "ETag", NULL), quoted);

    /* s3api multipart by hand: one 5 MiB part and a 1 KiB one */
    assert_int_equal(aws(out, sizeof(out), "s3api", "create-multipart-upload", "--bucket",
                         "cli-writes", "--key", "hand/made"), 0);
    char uid[32], e1[48], e2[48];
    snprintf(uid, sizeof(uid), "%s", jstr_at(out, "UploadId", NULL));
    assert_int_equal(strlen(uid), 16);
    snprintf(path, sizeof(path), "%s/p1", g.dir);
    write_fill(path, 'a', 5 * 1024 * 1024);
    snprintf(body, sizeof(body), "%s", path); /* upload-part's --body is a path */
    assert_int_equal(aws(out, sizeof(out), "s3api", "upload-part", "--bucket", "cli-writes",
                         "--key", "hand/made", "--upload-id", uid, "--part-number", "1",
                         "--body", body), 0);
    snprintf(e1, sizeof(e1), "%s", jstr_at(out, "ETag", NULL));
    snprintf(path, sizeof(path), "%s/p2", g.dir);
    write_fill(path, 'b', 1024);
    snprintf(body, sizeof(body), "%s", path); /* upload-part's --body is a path */
    assert_int_equal(aws(out, sizeof(out), "s3api", "upload-part", "--bucket", "cli-writes",
                         "--key", "hand/made", "--upload-id", uid, "--part-number", "2",
                         "--body", body), 0);
    snprintf(e2, sizeof(e2), "%s", jstr_at(out, "ETag", NULL));
    unsigned char pm[32];
    md5_of_fill('a', 5 * 1024 * 1024, pm);
    md5_of_fill('b', 1024, pm + 16);
    char hx[33];
    hex16(pm, hx);
    snprintf(quoted, sizeof(quoted), "\"%s\"", hx);
    assert_string_equal(e1, quoted);
    /* the parts as aws-cli's JSON: quotes escaped */
    snprintf(body, sizeof(body),
             "{\"Parts\":[{\"PartNumber\":1,\"ETag\":\"\\\"%.32s\\\"\"},"
             "{\"PartNumber\":2,\"ETag\":\"\\\"%.32s\\\"\"}]}", e1 + 1, e2 + 1);
    assert_int_equal(aws(out, sizeof(out), "s3api", "complete-multipart-upload", "--bucket",
                         "cli-writes", "--key", "hand/made", "--upload-id", uid,
                         "--multipart-upload", body), 0);
    assert_true(EVP_Digest(pm, 32, whole, &wn, EVP_md5(), NULL));
    hex16(whole, want);
    strcat(want, "-2");
    snprintf(quoted, sizeof(quoted), "\"%s\"", want);
    assert_string_equal(jstr_at(out, "ETag", NULL), quoted);
    assert_string_equal(jstr_at(out, "Key", NULL), "hand/made");
    char hand_version[32];
    snprintf(hand_version, sizeof(hand_version), "%s", jstr_at(out, "VersionId", NULL));
    json_get_ok("/v1/buckets/cli-writes/objects/hand/made", &r);
    assert_string_equal(jstr_at(r.body, "etag", NULL), want);
    assert_string_equal(jstr_at(r.body, "version_id", NULL), hand_version);
    assert_non_null(strstr(r.body, "\"size\":5243904"));

    /* copy-object: the source's metadata, a new version named */
    assert_int_equal(aws(out, sizeof(out), "s3api", "copy-object", "--bucket", "cli-writes",
                         "--key", "copied", "--copy-source", "cli-writes/hand/made"), 0);
    assert_string_equal(jstr_at(out, "CopyObjectResult", "ETag"), quoted);
    assert_string_equal(jstr_at(out, "CopySourceVersionId", NULL), hand_version);
    char copy_version[32];
    snprintf(copy_version, sizeof(copy_version), "%s", jstr_at(out, "VersionId", NULL));
    json_get_ok("/v1/buckets/cli-writes/objects/copied", &r);
    assert_string_equal(jstr_at(r.body, "etag", NULL), want);
    assert_string_equal(jstr_at(r.body, "version_id", NULL), copy_version);
    assert_non_null(strstr(r.body, "\"size\":5243904"));

    /* delete-objects: a version by id and a key (a marker), then quiet */
    snprintf(body, sizeof(body),
             "Objects=[{Key=big/file.bin,VersionId=%s},{Key=copied}]", big_version);
    assert_int_equal(aws(out, sizeof(out), "s3api", "delete-objects", "--bucket", "cli-writes",
                         "--delete", body), 0);
    json_t *j = json_loads(out, 0, NULL);
    json_t *del = json_object_get(j, "Deleted");
    assert_int_equal(json_array_size(del), 2);
    assert_null(json_object_get(j, "Errors"));
    json_decref(j);
    json_get_ok("/v1/buckets/cli-writes/versions?prefix=copied", &r);
    j = json_loads(r.body, 0, NULL);
    json_t *vs = json_object_get(j, "versions");
    assert_int_equal(json_array_size(vs), 2);
    assert_true(json_is_true(json_object_get(json_array_get(vs, 0), "delete_marker")));
    char marker[32];
    snprintf(marker, sizeof(marker), "%s",
             json_string_value(json_object_get(json_array_get(vs, 0), "version_id")));
    json_decref(j);
    assert_non_null(strstr(out, marker)); /* DeleteMarkerVersionId */
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-writes/objects/big/file.bin", NULL,
                              NULL, &r), 0);
    assert_int_equal(r.status, 404);
    assert_int_equal(aws(out, sizeof(out), "s3api", "delete-objects", "--bucket", "cli-writes",
                         "--delete", "Objects=[{Key=hand/made},{Key=x,VersionId=bad}],Quiet=true"),
                     0);
    j = json_loads(out, 0, NULL);
    assert_null(json_object_get(j, "Deleted"));
    assert_int_equal(json_array_size(json_object_get(j, "Errors")), 1);
    json_decref(j);
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/cli-writes/objects/hand/made", NULL,
                              NULL, &r), 0);
    assert_int_equal(r.status, 404);
}

/* Event notification configurations (?notification, query/s3/s3notify.c):
 * Topic and Queue configurations put and read back, the JSON API's view,
 * a generated Id, S3's refusals with their codes, delete, empty answers
 * (boto3_notify_check.py). */
static void test_notify_boto3(void **state) {
    (void)state;
    run_check_script("boto3_notify_check.py");
}

/* The configuration aws-cli puts, as `get` prints it back. */
static const char *const CLI_NOTIFY =
    "{\"TopicConfigurations\": [{\"Id\": \"uploads\", \"TopicArn\": "
    "\"arn:objlog:kafka:::cli-uploads\", \"Events\": [\"s3:ObjectCreated:*\", "
    "\"s3:ObjectRemoved:Delete\"], \"Filter\": {\"Key\": {\"FilterRules\": [{\"Name\": "
    "\"Prefix\", \"Value\": \"in/\"}, {\"Name\": \"Suffix\", \"Value\": \".csv\"}]}}}], "
    "\"QueueConfigurations\": [{\"Id\": \"hook\", \"QueueArn\": "
    "\"arn:objlog:webhook:::https%3A%2F%2Fhooks.example%3A8443%2Fs3%3Fk%3Dv\", "
    "\"Events\": [\"s3:ObjectTagging:*\"]}]}";

/* aws s3api put-bucket-notification-configuration, then
 * get-bucket-notification-configuration equal to what was put, the JSON
 * API naming each target. */
static void test_notify_awscli(void **state) {
    (void)state;
    char out[8192];
    assert_int_equal(aws(out, sizeof(out), "s3", "mb", "s3://cli-notify"), 0);
    assert_int_equal(aws(out, sizeof(out), "s3api", "get-bucket-notification-configuration",
                         "--bucket", "cli-notify"), 0);
    if (strstr(out, "Configurations")) /* aws prints nothing for an empty one */
        fail_msg("a bucket without configurations: %s", out);
    assert_int_equal(aws(out, sizeof(out), "s3api", "put-bucket-notification-configuration",
                         "--bucket", "cli-notify", "--notification-configuration", CLI_NOTIFY),
                     0);
    assert_int_equal(aws(out, sizeof(out), "s3api", "get-bucket-notification-configuration",
                         "--bucket", "cli-notify"), 0);
    json_t *got = json_loads(out, 0, NULL);
    json_t *want = json_loads(CLI_NOTIFY, 0, NULL);
    assert_non_null(got);
    assert_non_null(want);
    if (!json_equal(got, want))
        fail_msg("aws-cli got back %s", out);
    json_decref(got);
    json_decref(want);
    json_t *j = json_call("GET", "/v1/buckets/cli-notify/notifications", NULL);
    json_t *cs = json_object_get(j, "configurations");
    assert_int_equal(json_array_size(cs), 2);
    assert_string_equal(jstr(json_array_get(cs, 0), "target"), "kafka");
    assert_string_equal(jstr(json_array_get(cs, 0), "destination"), "cli-uploads");
    assert_string_equal(jstr(json_array_get(cs, 1), "target"), "webhook");
    assert_string_equal(jstr(json_array_get(cs, 1), "destination"),
                        "https://hooks.example:8443/s3?k=v");
    json_decref(j);
}

/* An aws-chunked upload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, as the AWS
 * Java SDK sends PutObject) of 3 MiB, over the 1 MiB past which other
 * bodies stream: read whole and decoded, every chunk signature checked,
 * the object reads back; one flipped byte is SignatureDoesNotMatch. */
static void test_chunked_upload_over_stream_min(void **state) {
    (void)state;
    char path[300], err[256];
    snprintf(path, sizeof(path), "%s/s3-credentials", g.dir);
    s3creds *creds = s3creds_load(path, 0, err, sizeof(err));
    assert_non_null(creds);
    json_put("/v1/buckets/chunked-big", "{\"tenant\":\"tenant-a\"}");
    enum { N = 3 << 20, CHUNK = 65536 };
    static char data[N + 1], body[N + N / CHUNK * 100 + 200];
    for (size_t i = 0; i < N; i++)
        data[i] = (char)('a' + i % 26);
    char host[300], date[20], authz[512], dlen[24];
    snprintf(host, sizeof(host), "%s", g.s3 + 7);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(dlen, sizeof(dlen), "%d", N);
    s3_kv h[] = {{"Host", host}, {"x-amz-date", date},
                 {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
                 {"Content-Encoding", "aws-chunked"}, {"x-amz-decoded-content-length", dlen},
                 {"Authorization", NULL}};
    s3auth_req r = {.method = "PUT", .path = "/chunked-big/big", .query = NULL, .headers = h,
                    .nheaders = 5, .now_s = (int64_t)now};
    assert_int_equal(s3auth_sign("objlogtest", "objlogtest-secret", "us-east-1", &r,
                                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", authz, sizeof(authz)), 0);
    h[5].value = authz;
    r.nheaders = 6;
    s3auth a;
    s3auth_check(creds, "us-east-1", 0, &r, &a);
    assert_int_equal(a.status, 0);
    char prev[65], sig[65];
    memcpy(prev, a.seed_signature, 65);
    size_t n = 0;
    for (size_t off = 0;; off += CHUNK) {
        size_t k = off < N ? (N - off < CHUNK ? N - off : CHUNK) : 0;
        assert_int_equal(s3auth_chunk_signature(&a, prev, data + off, k, sig), 0);
        n += (size_t)sprintf(body + n, "%zx;chunk-signature=%s\r\n", k, sig);
        memcpy(body + n, data + off, k);
        n += k;
        n += (size_t)sprintf(body + n, "\r\n");
        memcpy(prev, sig, 65);
        if (!k)
            break;
    }
    body[n] = '\0';
    s3auth_wipe(&a);
    s3creds_free(creds);
    char hd[6][600];
    const char *hl[7];
    for (int i = 0; i < 6; i++) {
        snprintf(hd[i], sizeof(hd[i]), "%s: %s", h[i].name, h[i].value);
        hl[i] = hd[i];
    }
    hl[6] = NULL;
    httpc *s3 = httpc_new(g.s3);
    httpc_resp resp;
    assert_int_equal(httpc_do(s3, "PUT", "/chunked-big/big", body, hl + 1, &resp), 0);
    if (resp.status != 200)
        fail_msg("aws-chunked PUT of 3 MiB: %ld %s", resp.status, resp.body);
    json_t *j = json_call("GET", "/v1/buckets/chunked-big/objects/big", NULL);
    assert_int_equal(jint(j, "size"), N);
    json_decref(j);
    body[n / 2] ^= 1; /* one flipped byte: refused, nothing written */
    assert_int_equal(httpc_do(s3, "PUT", "/chunked-big/big2", body, hl + 1, &resp), 0);
    assert_int_equal(resp.status, 403);
    assert_non_null(strstr(resp.body, "SignatureDoesNotMatch"));
    httpc_destroy(s3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boto3),
        cmocka_unit_test(test_awscli),
        cmocka_unit_test(test_wire),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_tenants_boto3),
        cmocka_unit_test(test_tenants_awscli),
        cmocka_unit_test(test_headers_signed),
        cmocka_unit_test(test_bytes_boto3),
        cmocka_unit_test(test_behaviour_boto3),
        cmocka_unit_test(test_attrs_boto3),
        cmocka_unit_test(test_blob_s3),
        cmocka_unit_test(test_blob_s3_refused),
        cmocka_unit_test(test_chunked_upload_over_stream_min),
        cmocka_unit_test(test_boto3_lists),
        cmocka_unit_test(test_awscli_lists),
        cmocka_unit_test(test_rclone_s3cmd),
        cmocka_unit_test(test_boto3_writes),
        cmocka_unit_test(test_awscli_writes),
        cmocka_unit_test(test_notify_boto3),
        cmocka_unit_test(test_notify_awscli),
        cmocka_unit_test(test_creds_reload),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
