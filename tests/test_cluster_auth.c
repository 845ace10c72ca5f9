/* test_cluster_auth.c: two objlogd nodes of one cluster on a real Kafka,
 * both with --api-credentials and the cluster's shared secret, and both
 * serving TLS only (a test CA, tlscerts.h): every request between them
 * (forwarded reads and writes, outcomes, lag polls) goes over TLS with the
 * peer's certificate checked against --tls-ca. What it
 * pins: a request a node sends on to its peer is signed with that secret
 * and carries the caller's subject, so the peer enforces the caller's
 * ownership (a tenant's token reads its own bucket through the node that
 * does not apply it, and not another tenant's); the node's own requests
 * (a write's outcome from the node that applied it, the membership's lag
 * polls) are signed too, so writes through either node complete; a client
 * that sends the nodes' headers with a signature of its own is 401. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "clusternodes.h"
#include "httpc.h"
#include "proc.h"
#include "tlscerts.h"

#define PARTS 4
#define TOK_A "tok-alpha-0123456789"
#define TOK_B "tok-bravo-0123456789"
#define TOK_ADMIN "tok-admin-0123456789"

static cnodes g;
static char creds_dir[256], creds[300];
static char g_on[2][32]; /* a bucket applied by each node (test_forwarded_with_subject) */
static tlscerts certs;
static char *node_flags[] = {"--api-credentials", creds, "--ready-max-lag", "1",
                             "--tls-cert", certs.cert, "--tls-key", certs.key,
                             "--tls-ca", certs.ca, NULL};

static int group_setup(void **state) {
    (void)state;
    if (proc_tmpdir(creds_dir, sizeof(creds_dir)) < 0 || tlscerts_make(&certs, creds_dir) < 0)
        return -1;
    snprintf(creds, sizeof(creds), "%s/tokens", creds_dir);
    FILE *f = fopen(creds, "w");
    if (!f || fputs(TOK_A " tenant-a\n" TOK_B " tenant-b\n" TOK_ADMIN " admin\n", f) < 0 ||
        fclose(f) != 0 || chmod(creds, 0600) != 0)
        return -1;
    g.admin_token = TOK_ADMIN;
    return cnodes_setup(&g, "authc", PARTS, 2, 2, node_flags);
}

static int group_teardown(void **state) {
    (void)state;
    int rc = cnodes_teardown(&g);
    proc_rmtree(creds_dir);
    return rc;
}

static long call(int node, const char *token, const char *method, const char *path,
                 const char *body, httpc_resp *r) {
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : "");
    const char *hdrs[] = {auth, NULL};
    if (httpc_do(g.n[node].raw, method, path, body, token ? hdrs : NULL, r) < 0)
        return -1;
    return r->status;
}

/* Until both nodes agree that every partition has an active node, and
 * each node applies some. */
static void wait_settled(void) {
    int64_t until = cnodes_mono_ms() + 90000;
    for (;;) {
        int ok = 1;
        for (int i = 0; i < 2 && ok; i++) {
            json_t *j = cnodes_cluster_of(&g, i);
            json_t *parts = json_object_get(j, "partitions");
            ok = j && json_array_size(json_object_get(j, "nodes")) == 2 &&
                 json_array_size(parts) == PARTS;
            int local = 0;
            for (size_t p = 0; ok && p < PARTS; p++) {
                json_t *e = json_array_get(parts, p);
                ok = json_string_value(json_object_get(e, "active")) != NULL;
                local += json_is_true(json_object_get(e, "local"));
            }
            ok = ok && local > 0;
            json_decref(j);
        }
        if (ok)
            return;
        if (cnodes_mono_ms() > until)
            fail_msg("the cluster did not settle");
        cnodes_sleep_ms(250);
    }
}

/* The node that answers a LIST of bucket itself (not forwarded). */
static int bucket_node(const char *bucket) {
    char path[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=1", bucket);
    for (int i = 0; i < 2; i++) {
        httpc_resp r;
        if (call(i, TOK_ADMIN, "GET", path, NULL, &r) == 200 &&
            !strstr(r.headers, "x-objlog-forwarded-by:"))
            return i;
    }
    return -1;
}

static void test_forwarded_with_subject(void **state) {
    (void)state;
    assert_int_equal(strncmp(g.n[0].url, "https://", 8), 0);
    wait_settled();
    /* tenant-a's buckets until one is applied by each node; every write
     * goes through node 0, so half of them learn their outcome from node 1
     * (a signed request of node 0's own) */
    char(*on)[32] = g_on;
    httpc_resp r;
    for (int i = 0; i < 40 && (!on[0][0] || !on[1][0]); i++) {
        char path[128], b[32];
        /* the bucket hash hardly moves with a name's last bytes: vary the first */
        snprintf(b, sizeof(b), "%c%02d-auth-b", 'a' + i % 26, i);
        snprintf(path, sizeof(path), "/v1/buckets/%s", b);
        if (call(0, TOK_A, "PUT", path, "{}", &r) != 200)
            fail_msg("PUT %s: %ld %s", path, r.status, r.body);
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k", b);
        if (call(0, TOK_A, "PUT", path, "{\"size\":1,\"etag\":\"e-a\"}", &r) != 200)
            fail_msg("PUT %s: %ld %s", path, r.status, r.body);
        int n = bucket_node(b);
        if (n >= 0 && !on[n][0])
            snprintf(on[n], sizeof(on[n]), "%s", b);
    }
    if (!on[0][0] || !on[1][0])
        fail_msg("no bucket on each node (%s, %s)", on[0], on[1]);
    for (int via = 0; via < 2; via++) {
        const char *remote = on[1 - via];
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k", remote);
        /* the owner's token through the node that does not apply it */
        assert_int_equal(call(via, TOK_A, "GET", path, NULL, &r), 200);
        assert_non_null(strstr(r.headers, "x-objlog-forwarded-by:"));
        assert_non_null(strstr(r.body, "\"etag\":\"e-a\""));
        /* another tenant's: the peer refuses it for the caller it was told */
        assert_int_equal(call(via, TOK_B, "GET", path, NULL, &r), 403);
        assert_non_null(strstr(r.body, "AccessDenied"));
        assert_int_equal(call(via, TOK_B, "PUT", path, "{\"size\":1,\"etag\":\"e-b\"}", &r), 403);
        /* a listing: tenant-b sees none of tenant-a's buckets on either node */
        assert_int_equal(call(via, TOK_B, "GET", "/v1/buckets", NULL, &r), 200);
        assert_null(strstr(r.body, "-auth-b"));
        assert_int_equal(call(via, TOK_A, "GET", "/v1/buckets", NULL, &r), 200);
        assert_non_null(strstr(r.body, on[0]));
        assert_non_null(strstr(r.body, on[1]));
    }
    /* nothing tenant-b tried changed the object */
    char path[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k", on[1]);
    assert_int_equal(call(1, TOK_A, "GET", path, NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"etag\":\"e-a\""));
}

/* An answer over FWD_PIECE (256 KiB) streams through the node that
 * forwards it, over TLS both ways: a listing of 300 keys of 900 bytes
 * (about 330 KB of JSON) through the node that does not apply the bucket
 * is the very body the node that does answers. */
static void test_forwarded_large_over_tls(void **state) {
    (void)state;
    const char *b = g_on[1];
    assert_true(b[0]);
    char key[901], path[1200];
    httpc_resp r;
    for (int i = 0; i < 300; i++) {
        memset(key, 'a' + i % 26, 900);
        snprintf(key, 5, "%04d", i);
        key[4] = 'k';
        key[900] = '\0';
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", b, key);
        if (call(1, TOK_A, "PUT", path, "{\"size\":1,\"etag\":\"e\"}", &r) != 200)
            fail_msg("PUT %d: %ld", i, r.status);
    }
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=1000", b);
    assert_int_equal(call(1, TOK_A, "GET", path, NULL, &r), 200);
    assert_null(strstr(r.headers, "x-objlog-forwarded-by:"));
    size_t n = r.body_len;
    char *direct = malloc(n + 1);
    assert_non_null(direct);
    memcpy(direct, r.body, n + 1);
    assert_true(n > 300 * 900);
    assert_int_equal(call(0, TOK_A, "GET", path, NULL, &r), 200);
    assert_non_null(strstr(r.headers, "x-objlog-forwarded-by:"));
    assert_int_equal(r.body_len, n);
    assert_memory_equal(r.body, direct, n);
    free(direct);
}

/* A client that makes up the nodes' headers: 401, whatever it claims. */
static void test_client_cannot_sign(void **state) {
    (void)state;
    httpc_resp r;
    const char *forged[] = {"X-Objlog-Subject: admin",
                            "X-Objlog-Node-Auth: t=1800000000,sig="
                            "0000000000000000000000000000000000000000000000000000000000000000",
                            NULL};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(httpc_do(g.n[i].raw, "GET", "/metrics", NULL, forged, &r), 0);
        assert_int_equal(r.status, 401);
        assert_non_null(strstr(r.body, "Unauthorized"));
    }
    const char *no_subject[] = {"X-Objlog-Node-Auth: t=1,sig=00", NULL};
    assert_int_equal(httpc_do(g.n[0].raw, "GET", "/v1/lag", NULL, no_subject, &r), 0);
    assert_int_equal(r.status, 401);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forwarded_with_subject),
        cmocka_unit_test(test_forwarded_large_over_tls),
        cmocka_unit_test(test_client_cannot_sign),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
