/* test_http_checkpoint.c: GET /v1/partitions/{p}/checkpoint on a real
 * `objlogd --embedded`, fetched with the client (objlog_ckpt_fetch) into a
 * second store bound to the same log.
 *
 * Writes go through objlogd's gateway (ack=applied) into buckets placed on
 * partitions 0..2; partition 3 gets nothing. Then:
 *   - bad partitions and methods: exact status and code;
 *   - partition 3, never applied: 404 NoSuchCheckpoint, and the client's
 *     error names it; nothing is written;
 *   - partitions 0..2 fetched: the applied offset is objlogd's, progress
 *     ends at Content-Length, /metrics counts them and their bytes;
 *   - a peer that is not there: the client fails in bounded time;
 *   - objlogd stopped, its store opened here: every fetched partition's
 *     rows are byte for byte objlogd's. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "checkpoint.h"
#include "httpc.h"
#include "keycodec.h"
#include "partdump.h"
#include "proc.h"
#include "rangemap.h"

#define NPARTS 4
#define PUTS_PER_BUCKET 60

typedef struct fetch_seen {
    uint64_t bytes, rows, total;
    int calls;
} fetch_seen;

static void on_progress(void *opaque, const objlog_ckpt_progress *pr) {
    fetch_seen *s = opaque;
    s->bytes = pr->bytes;
    s->rows = pr->rows;
    s->total = pr->total_bytes;
    s->calls++;
}

static int part_of_bucket(const rangemap *rm, const char *b) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, b, strlen(b), (const uint8_t *)"", 0);
    int p = rangemap_partition(rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

static void expect_body(httpc *h, const char *method, const char *path, const char *body,
                        long status, const char *code) {
    httpc_resp r;
    assert_int_equal(httpc_do(h, method, path, body, NULL, &r), 0);
    if (r.status != status || (code && !strstr(r.body, code)))
        fail_msg("%s %s: %ld %s (wanted %ld %s)", method, path, r.status, r.body, status,
                 code ? code : "");
}

static void expect(httpc *h, const char *method, const char *path, long status,
                   const char *code) {
    expect_body(h, method, path, NULL, status, code);
}

static long metric(httpc *h, const char *name) {
    httpc_resp r;
    assert_int_equal(httpc_do(h, "GET", "/metrics", NULL, NULL, &r), 0);
    char pat[128];
    snprintf(pat, sizeof(pat), "\n%s ", name);
    const char *at = strstr(r.body, pat);
    assert_non_null(at);
    return strtol(at + strlen(pat), NULL, 10);
}

static void test_checkpoint_over_http(void **state) {
    (void)state;
    char root[256], data[300], target[300], objlogd[512], boot[512], listen[64], url[128];
    assert_int_equal(proc_tmpdir(root, sizeof(root)), 0);
    snprintf(data, sizeof(data), "%s/view", root);
    snprintf(target, sizeof(target), "%s/target", root);
    proc_bin("query/objlogd", objlogd, sizeof(objlogd));
    char *argv[] = {objlogd, "--embedded", "--partitions", "4", "--data", data,
                    "--listen", "127.0.0.1:0", NULL};
    proc *d = proc_spawn(argv, NULL);
    assert_non_null(d);
    assert_int_equal(proc_wait_line(d, "OBJLOG_BOOTSTRAP=", boot, sizeof(boot), 60000), 0);
    assert_int_equal(proc_wait_line(d, "OBJLOG_LISTEN=", listen, sizeof(listen), 60000), 0);
    char rest[16];
    assert_int_equal(proc_wait_line(d, "OBJLOG_READY", rest, sizeof(rest), 60000), 0);
    snprintf(url, sizeof(url), "http://%s", listen);
    httpc *h = httpc_new(url);
    rangemap *rm = rangemap_new_default(NPARTS, 1);

    /* Two buckets on each of partitions 0..2, none on 3. */
    int per[NPARTS] = {0};
    for (int i = 0, made = 0; made < 6; i++) {
        char b[32], path[128], body[128];
        snprintf(b, sizeof(b), "%c%c-ckpt", 'a' + i % 26, 'a' + i / 26 % 26);
        int p = part_of_bucket(rm, b);
        if (p == 3 || per[p] == 2)
            continue;
        per[p]++;
        made++;
        snprintf(path, sizeof(path), "/v1/buckets/%s", b);
        snprintf(body, sizeof(body), "{\"tenant\":\"t%d\",\"versioning\":\"%s\"}", i % 2,
                 made % 2 ? "Enabled" : "");
        expect_body(h, "PUT", path, body, 200, NULL);
        for (int k = 0; k < PUTS_PER_BUCKET; k++) {
            snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k%d", b, k % 23);
            snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"e%d\"}", k * 7, k);
            expect_body(h, "PUT", path, body, 200, NULL);
        }
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k1", b);
        expect(h, "DELETE", path, 200, NULL);
    }

    expect(h, "GET", "/v1/partitions/4/checkpoint", 400, "InvalidArgument");
    expect(h, "GET", "/v1/partitions/-1/checkpoint", 400, "InvalidArgument");
    expect(h, "GET", "/v1/partitions/x/checkpoint", 400, "InvalidArgument");
    expect(h, "GET", "/v1/partitions//checkpoint", 400, "InvalidArgument");
    expect(h, "GET", "/v1/partitions/99999999999/checkpoint", 400, "InvalidArgument");
    expect(h, "GET", "/v1/partitions/0/other", 404, "NoSuchRoute");
    expect(h, "POST", "/v1/partitions/0/checkpoint", 405, "MethodNotAllowed");
    expect(h, "GET", "/v1/partitions/3/checkpoint", 404, "NoSuchCheckpoint");

    /* The target: an empty store bound to the same log. */
    char err[1024];
    objlog_log_identity id;
    assert_int_equal(objlog_log_identity_fetch(boot, "objlog.control", 0, 10000, &id, err,
                                               sizeof(err)), 1);
    objlog_store *t = objlog_store_open(target, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(objlog_store_bind_log(t, &id, 0, err, sizeof(err)), OBJLOG_BIND_RECORDED);

    int64_t applied = -1;
    assert_int_equal(objlog_ckpt_fetch(t, rm, url, NULL, NULL, 3, 10000, NULL, NULL, NULL, &applied, err,
                                       sizeof(err)), -1);
    char want[512];
    snprintf(want, sizeof(want), "checkpoint from %s/v1/partitions/3/checkpoint: HTTP 404: "
             "NoSuchCheckpoint: partition 3 was never applied here", url);
    assert_string_equal(err, want);

    uint64_t bytes = 0;
    int64_t want_applied[NPARTS] = {0};
    for (int p = 0; p < 3; p++) {
        fetch_seen seen = {0};
        if (objlog_ckpt_fetch(t, rm, url, NULL, NULL, p, 10000, on_progress, &seen, NULL, &applied, err,
                              sizeof(err)) != 0)
            fail_msg("fetch %d: %s", p, err);
        /* Events per partition: of each of its 2 buckets CreateBucket,
         * the PUTs and a DELETE. */
        want_applied[p] = 2 * (1 + PUTS_PER_BUCKET + 1);
        assert_int_equal(applied, want_applied[p]);
        assert_int_equal(objlog_store_applied(t, p), want_applied[p]);
        assert_true(seen.calls > 0);
        assert_true(seen.total > 0);
        assert_int_equal(seen.bytes, seen.total);
        assert_true(seen.rows > 2 * PUTS_PER_BUCKET);
        bytes += seen.total;
    }
    assert_int_equal(metric(h, "objlog_checkpoint_served_total"), 3);
    assert_int_equal(metric(h, "objlog_checkpoint_served_bytes_total"), (long)bytes);

    /* Nobody listens: a clear error, soon. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(objlog_ckpt_fetch(t, rm, "http://127.0.0.1:1", NULL, NULL, 0, 3000, NULL, NULL, NULL,
                                       &applied, err, sizeof(err)), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 5);
    assert_non_null(strstr(err, "checkpoint from http://127.0.0.1:1/v1/partitions/0/"
                                "checkpoint: transfer failed after 0 of 0 bytes: "));
    /* ... and, failing before any header was accepted, touched nothing. */
    assert_int_equal(objlog_store_applied(t, 0), want_applied[0]);
    if (objlog_ckpt_fetch(t, rm, url, NULL, NULL, 0, 10000, NULL, NULL, NULL, &applied, err, sizeof(err)))
        fail_msg("fetch 0 again: %s", err);
    httpc_destroy(h);

    assert_int_equal(proc_stop(d, 20000), 0);
    objlog_store *v = objlog_store_open(data, err, sizeof(err));
    assert_non_null(v);
    for (int p = 0; p < NPARTS; p++) {
        size_t nv = 0, nt = 0;
        char *a = partdump(v, rm, p, 1, &nv), *b = partdump(t, rm, p, 1, &nt);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(b, a);
        assert_int_equal(nt, nv);
        if (p < 3)
            assert_true(nv > 2 * PUTS_PER_BUCKET);
        else
            assert_int_equal(nv, 0);
        free(a);
        free(b);
    }
    objlog_store_close(v);
    objlog_store_close(t);
    rangemap_destroy(rm);
    proc_rmtree(root);
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_over_http),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
