/* test_http_auth.c: the JSON API with --api-credentials. One objlogd
 * --embedded (a child of the test, on 127.0.0.1) with three tokens:
 * tenant-a's, tenant-b's and the admin's. Pinned down here:
 *   - no token, a malformed or unknown one: 401 Unauthorized (probes
 *     answer anyone);
 *   - a bucket belongs to its creator's tenant: every bucket route by
 *     another tenant's token is 403 and changes nothing; the owner's and
 *     the admin's succeed; a tenant lists only its buckets and reads only
 *     its tenant stats;
 *   - metrics, checkpoints, global stats, quotas and rate limits need the
 *     admin role;
 *   - a client cannot claim a subject with the nodes' headers;
 *   - the CLI (--token, OBJLOG_TOKEN) and the producer library
 *     (query.token) send their token;
 *   - SIGHUP reads the tokens file again;
 *   - an open JSON API on a non-loopback address is refused. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "httpc.h"
#include "objlog_producer.h"
#include "proc.h"

#define TOK_A "tok-alpha-0123456789"
#define TOK_B "tok-bravo-0123456789"
#define TOK_ADMIN "tok-admin-0123456789"

static struct {
    char dir[256], creds[300], url[128], bootstrap[512];
    proc *p;
    httpc *h;
} g;

static int write_creds(const char *text) {
    FILE *f = fopen(g.creds, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        return -1;
    return chmod(g.creds, 0600);
}

static int group_setup(void **state) {
    (void)state;
    char objlogd[512], data[300], addr[64];
    if (proc_tmpdir(g.dir, sizeof(g.dir)) < 0)
        return -1;
    snprintf(g.creds, sizeof(g.creds), "%s/api-tokens", g.dir);
    snprintf(data, sizeof(data), "%s/data", g.dir);
    if (write_creds("# tokens\n" TOK_A " tenant-a\n" TOK_B " tenant-b\n" TOK_ADMIN " admin\n") <
        0)
        return -1;
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    char *argv[] = {objlogd, "--embedded", "--data", data, "--listen", "127.0.0.1:0",
                    "--partitions", "2", "--api-credentials", g.creds, NULL};
    g.p = proc_spawn(argv, NULL);
    if (!g.p || proc_wait_line(g.p, "OBJLOG_BOOTSTRAP=", g.bootstrap, sizeof(g.bootstrap),
                               60000) < 0 ||
        proc_wait_line(g.p, "OBJLOG_LISTEN=", addr, sizeof(addr), 60000) < 0 ||
        proc_wait_line(g.p, "OBJLOG_READY", NULL, 0, 10000) < 0)
        return -1;
    snprintf(g.url, sizeof(g.url), "http://%s", addr);
    g.h = httpc_new(g.url);
    return g.h ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    int rc = g.p && proc_stop(g.p, 15000) == 0 ? 0 : -1;
    if (g.h)
        httpc_destroy(g.h);
    proc_rmtree(g.dir);
    return rc;
}

/* METHOD path with token (NULL: none) and body; the status. */
static long call(const char *token, const char *method, const char *path, const char *body,
                 httpc_resp *r) {
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : "");
    const char *hdrs[] = {auth, NULL};
    assert_int_equal(httpc_do(g.h, method, path, body, token ? hdrs : NULL, r), 0);
    return r->status;
}

static void expect_status(const char *token, const char *method, const char *path,
                          const char *body, long want, const char *code) {
    httpc_resp r;
    long got = call(token, method, path, body, &r);
    int bodiless = strcmp(method, "HEAD") == 0;
    if (got != want || (code && !bodiless && !strstr(r.body, code)))
        fail_msg("%s %s (%s): %ld %s, want %ld %s", method, path, token ? token : "no token",
                 got, r.body, want, code ? code : "");
}

static void test_tokens_required(void **state) {
    (void)state;
    httpc_resp r;
    assert_int_equal(call(NULL, "GET", "/v1/buckets", NULL, &r), 401);
    assert_non_null(strstr(r.body, "\"code\":\"Unauthorized\""));
    assert_non_null(strstr(r.body, "Authorization: Bearer TOKEN"));
    assert_non_null(strstr(r.headers, "www-authenticate: Bearer realm=\"objlog\""));
    assert_int_equal(call("not-a-known-token-at-all", "GET", "/v1/buckets", NULL, &r), 401);
    assert_non_null(strstr(r.body, "unknown token"));
    const char *basic[] = {"Authorization: Basic dXNlcjpwYXNz", NULL};
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets", NULL, basic, &r), 0);
    assert_int_equal(r.status, 401);
    assert_non_null(strstr(r.body, "must be \\\"Bearer TOKEN\\\""));
    /* writes too, and nothing is written */
    expect_status(NULL, "PUT", "/v1/buckets/nobodys", "{}", 401, "Unauthorized");
    expect_status(TOK_ADMIN, "GET", "/v1/buckets/nobodys", NULL, 404, "NoSuchBucket");
    /* probes answer anyone */
    expect_status(NULL, "GET", "/healthz", NULL, 200, "\"status\":\"ok\"");
    assert_int_equal(call(NULL, "GET", "/readyz", NULL, &r) == 401, 0);
}

/* Every bucket route tenant-b's token tries on tenant-a's bucket is 403;
 * tenant-a's own and the admin's succeed. */
static void test_bucket_owner(void **state) {
    (void)state;
    httpc_resp r;
    expect_status(TOK_A, "PUT", "/v1/buckets/alpha-b", "{\"versioning\":\"Enabled\"}", 200, NULL);
    assert_int_equal(call(TOK_ADMIN, "GET", "/v1/buckets/alpha-b", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"tenant\":\"tenant-a\""));
    expect_status(TOK_A, "PUT", "/v1/buckets/alpha-b/objects/secret.txt",
                  "{\"size\":6,\"etag\":\"e-one\"}", 200, NULL);
    expect_status(TOK_A, "POST", "/v1/buckets/alpha-b/uploads", "{\"key\":\"big\"}", 200, NULL);
    static const struct {
        const char *method, *path, *body;
    } routes[] = {
        {"GET", "/v1/buckets/alpha-b", NULL},
        {"DELETE", "/v1/buckets/alpha-b", NULL},
        {"GET", "/v1/buckets/alpha-b/objects", NULL},
        {"GET", "/v1/buckets/alpha-b/objects/secret.txt", NULL},
        {"HEAD", "/v1/buckets/alpha-b/objects/secret.txt", NULL},
        {"PUT", "/v1/buckets/alpha-b/objects/secret.txt", "{\"size\":1,\"etag\":\"evil\"}"},
        {"DELETE", "/v1/buckets/alpha-b/objects/secret.txt", NULL},
        {"GET", "/v1/buckets/alpha-b/versions", NULL},
        {"PUT", "/v1/buckets/alpha-b/versioning", "{\"status\":\"Suspended\"}"},
        {"GET", "/v1/buckets/alpha-b/uploads", NULL},
        {"POST", "/v1/buckets/alpha-b/uploads", "{\"key\":\"other\"}"},
        {"GET", "/v1/buckets/alpha-b/stats", NULL},
        {"GET", "/v1/buckets/alpha-b/usage", NULL},
        {"PUT", "/v1/buckets/alpha-b/lifecycle",
         "{\"rules\":[{\"id\":\"x\",\"status\":\"Enabled\",\"expiration\":{\"days\":1}}]}"},
        {"GET", "/v1/buckets/alpha-b/lifecycle", NULL},
        {"DELETE", "/v1/buckets/alpha-b/lifecycle", NULL},
        {"PUT", "/v1/buckets/alpha-b/indexes/by-owner", "{\"field\":\"user_metadata.owner\"}"},
        {"GET", "/v1/buckets/alpha-b/indexes", NULL},
        {"GET", "/v1/buckets/alpha-b/ratelimit", NULL},
        {"PUT", "/v1/buckets/alpha-b/ratelimit", "{\"rps\":1}"},
        {"PUT", "/v1/buckets/alpha-b/quota", "{\"max_objects\":1}"},
        {"GET", "/v1/tenants/tenant-a/stats", NULL},
        {"GET", "/v1/buckets?tenant=tenant-a", NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        expect_status(TOK_B, routes[i].method, routes[i].path, routes[i].body, 403,
                      "AccessDenied");
    /* nothing changed */
    assert_int_equal(call(TOK_A, "GET", "/v1/buckets/alpha-b/objects/secret.txt", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"etag\":\"e-one\""));
    assert_int_equal(call(TOK_A, "GET", "/v1/buckets/alpha-b/versions", NULL, &r), 200);
    assert_null(strstr(r.body, "\"delete_marker\":true"));
    /* the owner reads and writes; quota and rate limit are the admin's */
    expect_status(TOK_A, "GET", "/v1/buckets/alpha-b/objects", NULL, 200, "secret.txt");
    expect_status(TOK_A, "GET", "/v1/buckets/alpha-b/stats", NULL, 200, NULL);
    expect_status(TOK_A, "GET", "/v1/buckets/alpha-b/ratelimit", NULL, 200, NULL);
    expect_status(TOK_A, "PUT", "/v1/buckets/alpha-b/quota", "{\"max_objects\":100}", 403,
                  "admin role");
    expect_status(TOK_A, "PUT", "/v1/buckets/alpha-b/ratelimit", "{\"rps\":100}", 403,
                  "admin role");
    expect_status(TOK_ADMIN, "PUT", "/v1/buckets/alpha-b/quota", "{\"max_objects\":100}", 200,
                  NULL);
    expect_status(TOK_ADMIN, "GET", "/v1/buckets/alpha-b/objects", NULL, 200, "secret.txt");
    expect_status(TOK_A, "GET", "/v1/tenants/tenant-a/stats", NULL, 200, NULL);
}

/* A tenant's caller creates buckets for itself only, without a quota, and
 * lists only its own. */
static void test_create_and_list(void **state) {
    (void)state;
    httpc_resp r;
    expect_status(TOK_B, "PUT", "/v1/buckets/bravo-x", "{\"tenant\":\"tenant-a\"}", 403,
                  "AccessDenied");
    expect_status(TOK_B, "PUT", "/v1/buckets/bravo-x", "{\"quota\":{\"max_bytes\":10}}", 403,
                  "quotas are set by the admin role");
    expect_status(TOK_ADMIN, "GET", "/v1/buckets/bravo-x", NULL, 404, "NoSuchBucket");
    expect_status(TOK_B, "PUT", "/v1/buckets/bravo-b", "{\"tenant\":\"tenant-b\"}", 200, NULL);
    expect_status(TOK_B, "PUT", "/v1/buckets/bravo-c", "{}", 200, NULL);
    assert_int_equal(call(TOK_ADMIN, "GET", "/v1/buckets/bravo-c", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"tenant\":\"tenant-b\""));
    /* tenant-b takes a name tenant-a has: BucketAlreadyExists, not its bucket */
    expect_status(TOK_B, "PUT", "/v1/buckets/alpha-b", "{}", 409, "BucketAlreadyExists");
    assert_int_equal(call(TOK_B, "GET", "/v1/buckets", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"name\":\"bravo-b\""));
    assert_non_null(strstr(r.body, "\"name\":\"bravo-c\""));
    assert_null(strstr(r.body, "alpha-b"));
    assert_int_equal(call(TOK_ADMIN, "GET", "/v1/buckets", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"name\":\"alpha-b\""));
    assert_non_null(strstr(r.body, "\"name\":\"bravo-b\""));
}

/* The operator's routes. */
static void test_admin_routes(void **state) {
    (void)state;
    static const char *const paths[] = {"/metrics", "/v1/stats", "/v1/stats/top",
                                        "/v1/partitions/0/checkpoint", "/v1/log"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        expect_status(TOK_A, "GET", paths[i], NULL, 403, "admin role");
    expect_status(TOK_ADMIN, "GET", "/metrics", NULL, 200, "objlog_");
    expect_status(TOK_ADMIN, "GET", "/v1/stats", NULL, 200, NULL);
    expect_status(TOK_ADMIN, "GET", "/v1/log", NULL, 200, "\"lines\":[");
    /* every client's: the lag (fences, tools) and admission's state */
    expect_status(TOK_A, "GET", "/v1/lag", NULL, 200, "partitions");
    expect_status(TOK_B, "GET", "/v1/admission", NULL, 200, "partitions");
}

/* The nodes' headers are believed only with a valid signature, and this
 * node (no cluster secret) believes none. */
static void test_forged_subject(void **state) {
    (void)state;
    httpc_resp r;
    const char *forged[] = {"X-Objlog-Subject: admin",
                            "X-Objlog-Node-Auth: t=1700000000,sig=0000", NULL};
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/alpha-b/objects", NULL, forged, &r), 0);
    assert_int_equal(r.status, 401);
    assert_non_null(strstr(r.body, "no cluster secret"));
    const char *with_token[] = {"Authorization: Bearer " TOK_B, "X-Objlog-Subject: admin",
                                "X-Objlog-Hop: http://127.0.0.1:1", NULL};
    assert_int_equal(httpc_do(g.h, "GET", "/v1/buckets/alpha-b/objects", NULL, with_token, &r),
                     0);
    assert_int_equal(r.status, 403);
}

/* objlog with --token, with OBJLOG_TOKEN, and without. */
static void test_cli_token(void **state) {
    (void)state;
    char objlog[512], out[8192], err[4096], url_env[200], tok_env[200];
    proc_bin("ops/objlog", objlog, sizeof(objlog));
    char *with_flag[] = {objlog, "--url", g.url, "--token", TOK_A, "ls", "alpha-b", NULL};
    int rc = proc_run(with_flag, NULL, out, sizeof(out), err, sizeof(err), 30000);
    if (rc != 0)
        fail_msg("objlog --token ls: %d %s", rc, err);
    assert_non_null(strstr(out, "secret.txt"));
    snprintf(url_env, sizeof(url_env), "OBJLOG_URL=%s", g.url);
    snprintf(tok_env, sizeof(tok_env), "OBJLOG_TOKEN=%s", TOK_B);
    char *with_env[] = {"/usr/bin/env", url_env, tok_env, objlog, "ls", "alpha-b", NULL};
    rc = proc_run(with_env, NULL, out, sizeof(out), err, sizeof(err), 30000);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "AccessDenied"));
    char *none[] = {"/usr/bin/env", "-u", "OBJLOG_TOKEN", url_env, objlog, "ls", NULL};
    rc = proc_run(none, NULL, out, sizeof(out), err, sizeof(err), 30000);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "Unauthorized"));
}

/* libobjlog_producer with query.token: an ack=applied write learns its
 * outcome through the token; a bad token is refused at set time. */
static void test_producer_token(void **state) {
    (void)state;
    char err[256];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(conf, "query.token", "bad token", err,
                                              sizeof(err)), OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "query.token"));
    assert_null(strstr(err, "bad token")); /* a secret is never echoed */
    if (objlog_producer_conf_set(conf, "bootstrap.servers", g.bootstrap, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.url", g.url, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "query.token", TOK_A, err, sizeof(err)) ||
        objlog_producer_conf_set(conf, "outcome.timeout.ms", "20000", err, sizeof(err)))
        fail_msg("conf: %s", err);
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    objlog_object_meta meta = {.size = 3, .etag = "from-lib"};
    objlog_write_result r;
    assert_int_equal(objlog_producer_put_object_sync(p, "alpha-b", "lib.txt", 7, &meta, NULL,
                                                     &r, err, sizeof(err)), 0);
    if (r.status != OBJLOG_STATUS_OK)
        fail_msg("status %s: %s", objlog_status_name(r.status), r.error_message);
    objlog_producer_destroy(p);
    expect_status(TOK_A, "GET", "/v1/buckets/alpha-b/objects/lib.txt", NULL, 200,
                  "\"etag\":\"from-lib\"");
}

/* SIGHUP: a token added works, one removed is refused. */
static void test_reload(void **state) {
    (void)state;
    char line[64];
    assert_int_equal(write_creds(TOK_A " tenant-a\ntok-new-a-0123456789 tenant-a\n"
                                 TOK_ADMIN " admin\n"), 0);
    assert_int_equal(kill(g.p->pid, SIGHUP), 0);
    assert_int_equal(proc_wait_line(g.p, "OBJLOG_RELOAD", line, sizeof(line), 10000), 0);
    assert_string_equal(line, "ED");
    expect_status("tok-new-a-0123456789", "GET", "/v1/buckets/alpha-b", NULL, 200, NULL);
    expect_status(TOK_B, "GET", "/v1/buckets", NULL, 401, "unknown token");
}

/* An open JSON API off loopback is refused before anything starts. */
static void test_open_off_loopback(void **state) {
    (void)state;
    char objlogd[512], out[1024], err[4096];
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    char *argv[] = {objlogd, "--embedded", "--listen", "0.0.0.0:0", NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 10000);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--listen 0.0.0.0 is not a loopback address"));
    assert_non_null(strstr(err, "give --api-credentials (or --insecure)"));
    assert_null(strstr(out, "OBJLOG_LISTEN"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_required),
        cmocka_unit_test(test_bucket_owner),
        cmocka_unit_test(test_create_and_list),
        cmocka_unit_test(test_admin_routes),
        cmocka_unit_test(test_forged_subject),
        cmocka_unit_test(test_cli_token),
        cmocka_unit_test(test_producer_token),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_open_off_loopback),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
