/* test_tls.c: objlogd --tls-cert/--tls-key serves both listeners over
 * TLS only. A CA and a certificate for 127.0.0.1 are made with openssl
 * (tlscerts.h); then, against `objlogd --embedded` (a child of the test,
 * on 127.0.0.1): curl with the CA reaches the JSON API, curl without it
 * refuses the certificate, plain HTTP to either port gets no answer;
 * aws-cli with --ca-bundle makes a bucket, puts and lists through the S3
 * listener; the test's own client (libcurl) writes and reads. Bad
 * certificate flags are refused at start, naming the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "httpc.h"
#include "proc.h"
#include "tlscerts.h"

static struct {
    char dir[256], json[128], s3[128];
    tlscerts certs;
    proc *p;
} g;

static int group_setup(void **state) {
    (void)state;
    char objlogd[512], data[300], creds[300], addr[64], blobs[300];
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0 || tlscerts_make(&g.certs, g.dir) < 0)
        return -1;
    snprintf(data, sizeof(data), "%s/data", g.dir);
    snprintf(blobs, sizeof(blobs), "%s/blobs", g.dir);
    snprintf(creds, sizeof(creds), "%s/s3-credentials", g.dir);
    FILE *f = fopen(creds, "w");
    if (!f || fputs("tlskey tls-secret tenant-t\n", f) < 0 || fclose(f) != 0 ||
        chmod(creds, 0600) != 0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    char *argv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                    "--s3-listen", "127.0.0.1:0", "--s3-credentials", creds,
                    "--tls-cert", g.certs.cert, "--tls-key", g.certs.key, "--blob-dir", blobs,
                    NULL};
    g.p = proc_spawn(argv, NULL);
    if (!g.p || proc_wait_line(g.p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0)
        return -1;
    snprintf(g.json, sizeof(g.json), "https://%s", addr);
    if (proc_wait_line(g.p, "OBJLOG_S3_LISTEN=", addr, sizeof(addr), 10000) < 0 ||
        proc_wait_line(g.p, "OBJLOG_READY", NULL, 0, 10000) < 0)
        return -1;
    snprintf(g.s3, sizeof(g.s3), "https://%s", addr);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    int rc = g.p && proc_stop(g.p, 15000) == 0 ? 0 : -1;
    proc_rmtree(g.dir);
    return rc;
}

/* curl's exit code for url, with the CA when ca; its stdout in out. */
static int curl_cli(const char *url, int ca, char *out, size_t n) {
    char err[4096];
    char *with[] = {"/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", g.certs.ca,
                    (char *)url, NULL};
    char *without[] = {"/usr/bin/curl", "-sS", "--max-time", "20", (char *)url, NULL};
    return proc_run(ca ? with : without, NULL, out, n, err, sizeof(err), 30000);
}

static void test_curl(void **state) {
    (void)state;
    char url[300], out[4096];
    snprintf(url, sizeof(url), "%s/healthz", g.json);
    assert_int_equal(curl_cli(url, 1, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "\"status\":\"ok\""));
    /* an unknown CA: curl refuses the certificate (exit 60) */
    assert_int_equal(curl_cli(url, 0, out, sizeof(out)), 60);
    /* plain HTTP to a TLS port: no HTTP answer (curl: 52 empty reply, 56
     * reset, or 1 protocol error), on both listeners */
    const char *plain[2] = {g.json, g.s3};
    for (int i = 0; i < 2; i++) {
        snprintf(url, sizeof(url), "http://%s/healthz", plain[i] + strlen("https://"));
        int rc = curl_cli(url, 0, out, sizeof(out));
        if (rc == 0)
            fail_msg("plain HTTP to %s was answered: %s", url, out);
        assert_null(strstr(out, "\"status\":\"ok\""));
    }
}

static void test_client(void **state) {
    (void)state;
    httpc *h = httpc_new(g.json); /* checks the certificate with OBJLOG_TEST_CA */
    httpc_resp r;
    assert_int_equal(httpc_do(h, "PUT", "/v1/buckets/tls-json", "{}", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(h, "PUT", "/v1/buckets/tls-json/objects/k",
                              "{\"size\":3,\"etag\":\"over-tls\"}", NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(httpc_do(h, "GET", "/v1/buckets/tls-json/objects/k", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"etag\":\"over-tls\""));
    httpc_destroy(h);
}

/* aws-cli with --ca-bundle through the S3 listener. */
static int aws(char *out, size_t n, const char *const *args) {
    char err[4096];
    char *argv[32] = {"/usr/bin/env", "HOME=/nonexistent", "AWS_CONFIG_FILE=/dev/null",
                      "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_ACCESS_KEY_ID=tlskey",
                      "AWS_SECRET_ACCESS_KEY=tls-secret", "AWS_DEFAULT_REGION=us-east-1",
                      "AWS_PAGER=", "/usr/bin/aws", "--endpoint-url", g.s3, "--ca-bundle",
                      g.certs.ca, "--output", "json"};
    int k = 15;
    for (int i = 0; args[i] && k < 31; i++)
        argv[k++] = (char *)args[i];
    argv[k] = NULL;
    int rc = proc_run(argv, NULL, out, n, err, sizeof(err), 60000);
    if (rc != 0)
        print_message("aws %s %s: exit %d: %s\n", args[0], args[1], rc, err);
    return rc;
}

static void test_awscli(void **state) {
    (void)state;
    char out[8192], file[300];
    snprintf(file, sizeof(file), "%s/hello.txt", g.dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("hello over TLS\n", f);
    fclose(f);
    assert_int_equal(aws(out, sizeof(out), (const char *const[]){"s3", "mb", "s3://tls-s3",
                                                                   NULL}), 0);
    assert_int_equal(aws(out, sizeof(out),
                         (const char *const[]){"s3api", "put-object", "--bucket", "tls-s3",
                                               "--key", "hello.txt", "--body", file, NULL}),
                     0);
    assert_non_null(strstr(out, "\"ETag\""));
    assert_int_equal(aws(out, sizeof(out), (const char *const[]){"s3", "ls", "s3://tls-s3/",
                                                                   NULL}), 0);
    assert_non_null(strstr(out, " 15 hello.txt"));
}

static void test_bad_flags(void **state) {
    (void)state;
    char objlogd[512], out[1024], err[4096], data[300];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    snprintf(data, sizeof(data), "%s/bad-data", g.dir);
    char *half[] = {objlogd, "--embedded", "--tls-cert", g.certs.cert, NULL};
    assert_int_equal(proc_run(half, NULL, out, sizeof(out), err, sizeof(err), 30000), 2);
    assert_non_null(strstr(err, "--tls-cert and --tls-key go together"));
    /* the CA's certificate with the server's key: they do not match */
    char *mismatch[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                        "--tls-cert", g.certs.ca, "--tls-key", g.certs.key, NULL};
    assert_int_equal(proc_run(mismatch, NULL, out, sizeof(out), err, sizeof(err), 60000), 1);
    assert_non_null(strstr(err, "(the key of --tls-cert"));
    assert_non_null(strstr(err, "key values mismatch"));
    char *missing[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                       "--tls-cert", "/nonexistent/cert.pem", "--tls-key", g.certs.key, NULL};
    assert_int_equal(proc_run(missing, NULL, out, sizeof(out), err, sizeof(err), 60000), 1);
    assert_non_null(strstr(err, "--tls-cert /nonexistent/cert.pem"));
    assert_null(strstr(out, "OBJLOG_READY"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curl),
        cmocka_unit_test(test_client),
        cmocka_unit_test(test_awscli),
        cmocka_unit_test(test_bad_flags),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
