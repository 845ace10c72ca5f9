/* test_blobgc_e2e.c: the blob directory's collector end to end. One
 * `objlogd --embedded` of three partitions with --blob-dir and
 * --blob-release-topic objlog.blobs (s3daemon.h), a child of the test
 * killed with it, written through its S3 endpoint (unsigned, anonymous):
 * objects in two buckets that hash to different partitions, equal bytes
 * under two keys, a copy into the other bucket, an overwrite, a multipart
 * upload completed with one of its two parts and one aborted. Then the
 * sources are deleted: the collector must delete exactly the blobs
 * nothing names any more (the overwritten version's, the unused and
 * aborted parts', a deleted object's) and keep the ones a copy or another
 * key still names, which read back; deleting those last names takes their
 * blobs too. /metrics counts what it did. A copy whose source's blob is
 * missing answers 500 and leaves no pin. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "httpc.h"
#include "proc.h"
#include "s3daemon.h"

/* Bucket names that hash to different partitions of three (as in
 * test_blobs_api.c): a blob named in both is named in two partitions. */
#define B_SRC "bl-plain"
#define B_DST "bl-three"

static s3daemon g;
static httpc *s3;

static int group_setup(void **state) {
    (void)state;
    char *extra[] = {"--partitions", "3", "--blob-release-topic", "objlog.blobs", NULL};
    if (s3daemon_start(&g, "objlogtest objlogtest-secret tenant-a\n", extra) < 0)
        return -1;
    s3 = httpc_new(g.s3);
    return s3 ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    if (s3)
        httpc_destroy(s3);
    return s3daemon_stop(&g);
}

static void sha256_hex(const char *text, char *out) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    assert_true(EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL));
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* 1 while the blob of these bytes is in the directory. */
static int blob_there(const char *text) {
    char id[65], path[512];
    struct stat st;
    sha256_hex(text, id);
    snprintf(path, sizeof(path), "%s/%.2s/%s", g.blobs, id, id);
    return stat(path, &st) == 0;
}

/* The answer must be `want`; its body into resp. */
static void s3_do(const char *method, const char *path, const char *body,
                  const char *const *hdrs, long want, httpc_resp *resp) {
    assert_int_equal(httpc_do(s3, method, path, body, hdrs, resp), 0);
    if (resp->status != want)
        fail_msg("%s %s: %ld, not %ld: %s", method, path, resp->status, want, resp->body);
}

static void put(const char *bucket, const char *key, const char *text) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/%s/%s", bucket, key);
    s3_do("PUT", path, text, NULL, 200, &r);
}

static void del(const char *bucket, const char *key) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/%s/%s", bucket, key);
    s3_do("DELETE", path, NULL, NULL, 204, &r);
}

static void assert_reads(const char *bucket, const char *key, const char *text) {
    char path[256];
    httpc_resp r;
    snprintf(path, sizeof(path), "/%s/%s", bucket, key);
    s3_do("GET", path, NULL, NULL, 200, &r);
    assert_string_equal(r.body, text);
}

/* The text between <tag> and </tag> of the body. */
static void xml_value(const char *body, const char *tag, char *out, size_t n) {
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = strstr(body, open), *b = a ? strstr(a, close) : NULL;
    assert_non_null(b);
    a += strlen(open);
    snprintf(out, n, "%.*s", (int)(b - a), a);
}

/* An upload of `key` with parts texts[0..n); completes with part 1 only
 * when complete, else aborts. */
static void upload(const char *bucket, const char *key, const char *const *texts, int n,
                   int complete) {
    char path[512], uid[256], etag1[64] = "", body[512];
    httpc_resp r;
    snprintf(path, sizeof(path), "/%s/%s?uploads", bucket, key);
    s3_do("POST", path, NULL, NULL, 200, &r);
    xml_value(r.body, "UploadId", uid, sizeof(uid));
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/%s/%s?partNumber=%d&uploadId=%s", bucket, key, i + 1,
                 uid);
        s3_do("PUT", path, texts[i], NULL, 200, &r);
        const char *e = strstr(r.headers, "etag: ");
        assert_non_null(e);
        if (i == 0)
            sscanf(e + 6, "%63[^\r\n]", etag1);
    }
    snprintf(path, sizeof(path), "/%s/%s?uploadId=%s", bucket, key, uid);
    if (!complete) {
        s3_do("DELETE", path, NULL, NULL, 204, &r);
        return;
    }
    snprintf(body, sizeof(body), "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
             "<ETag>%s</ETag></Part></CompleteMultipartUpload>", etag1);
    s3_do("POST", path, body, NULL, 200, &r);
}

/* Waits (60 s at most) until each of gone[] has left the directory. */
static void wait_gone(const char *const *gone) {
    for (int t = 0; t < 600; t++) {
        int left = 0;
        for (int i = 0; gone[i]; i++)
            left += blob_there(gone[i]);
        if (!left)
            return;
        usleep(100 * 1000);
    }
    for (int i = 0; gone[i]; i++)
        if (blob_there(gone[i]))
            fail_msg("the blob of \"%s\" was not collected within 60 s", gone[i]);
}

/* The value of the /metrics line that starts with name (labels and all),
 * from the JSON API's listener. */
static long long metric(const char *name) {
    httpc_resp r;
    assert_int_equal(httpc_do(g.h, "GET", "/metrics", NULL, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    const char *at = r.body;
    size_t n = strlen(name);
    while ((at = strstr(at, name))) {
        if ((at == r.body || at[-1] == '\n') && at[n] == ' ')
            return strtoll(strchr(at, ' ') + 1, NULL, 10);
        at += n;
    }
    fail_msg("no %s in /metrics", name);
    return -1;
}

/* The counters move after a round's unlinks, so a blob seen gone may not
 * be counted yet: wait up to 10 s for the metric to reach want, then
 * return it (the caller asserts the exact value). */
static long long metric_reaching(const char *name, long long want) {
    long long v = metric(name);
    for (int t = 0; t < 100 && v < want; t++) {
        usleep(100 * 1000);
        v = metric(name);
    }
    return v;
}

static void test_collects_exactly_the_unreferenced(void **state) {
    (void)state;
    httpc_resp r;
    s3_do("PUT", "/" B_SRC, "", NULL, 200, &r);
    s3_do("PUT", "/" B_DST, "", NULL, 200, &r);
    put(B_SRC, "a", "shared bytes");
    put(B_DST, "a-too", "shared bytes");     /* the same blob, another partition */
    put(B_SRC, "b", "copied bytes");
    const char *cp[] = {"x-amz-copy-source: /" B_SRC "/b", NULL};
    s3_do("PUT", "/" B_DST "/b-copy", NULL, cp, 200, &r);
    put(B_SRC, "d", "deleted bytes");
    put(B_SRC, "e", "overwritten bytes");
    put(B_SRC, "e", "overwriting bytes");   /* unversioned: the first goes */
    const char *parts[] = {"part one", "part two, never completed"};
    upload(B_SRC, "m", parts, 2, 1);
    const char *aborted[] = {"aborted part"};
    upload(B_SRC, "m-aborted", aborted, 1, 0);
    const char *kept[] = {"shared bytes", "copied bytes", "overwriting bytes", "part one",
                          NULL};
    for (int i = 0; kept[i]; i++)
        assert_true(blob_there(kept[i]));

    del(B_SRC, "a");
    del(B_SRC, "b");
    del(B_SRC, "d");
    const char *gone[] = {"deleted bytes", "overwritten bytes", "part two, never completed",
                          "aborted part", NULL};
    wait_gone(gone);
    /* What another partition's key or a copy names stays, and reads. */
    for (int i = 0; kept[i]; i++)
        assert_true(blob_there(kept[i]));
    assert_reads(B_DST, "b-copy", "copied bytes");
    assert_reads(B_DST, "a-too", "shared bytes");
    assert_reads(B_SRC, "e", "overwriting bytes");
    assert_reads(B_SRC, "m", "part one");
    assert_true(metric_reaching("objlog_blobgc_deleted_total", 4) >= 4);
    assert_true(metric("objlog_blobgc_rounds_total") >= 1);

    /* The last names go: so do their blobs. */
    del(B_DST, "b-copy");
    del(B_DST, "a-too");
    const char *last[] = {"copied bytes", "shared bytes", NULL};
    wait_gone(last);
    assert_true(blob_there("overwriting bytes"));
    assert_true(blob_there("part one"));
    assert_int_equal(metric_reaching("objlog_blobgc_deleted_total", 6), 6);
    /* b's and a's first releases found the copy and a-too naming them */
    assert_true(metric("objlog_blobgc_skipped_total{reason=\"referenced\"}") >= 2);
    assert_int_equal(metric("objlog_blobgc_errors_total"), 0);
    for (int t = 0; t < 50 && metric("objlog_blobgc_waiting") != 0; t++)
        usleep(100 * 1000);
    assert_int_equal(metric("objlog_blobgc_waiting"), 0);
}

/* A copy whose source's blob is missing from the store answers as
 * GetObject does (500 InternalError: S3 clients retry) and pins nothing. */
static void test_copy_of_missing_blob_is_500(void **state) {
    (void)state;
    char id[65], path[512], cmd[600];
    httpc_resp r;
    put(B_SRC, "lost", "bytes lost from the store");
    sha256_hex("bytes lost from the store", id);
    snprintf(path, sizeof(path), "%s/%.2s/%s", g.blobs, id, id);
    assert_int_equal(unlink(path), 0);
    const char *cp[] = {"x-amz-copy-source: /" B_SRC "/lost", NULL};
    s3_do("PUT", "/" B_DST "/lost-copy", NULL, cp, 500, &r);
    assert_non_null(strstr(r.body, "<Code>InternalError</Code>"));
    s3_do("GET", "/" B_SRC "/lost", NULL, NULL, 500, &r);
    s3_do("HEAD", "/" B_DST "/lost-copy", NULL, NULL, 404, &r);
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/.pending')\"", g.blobs);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collects_exactly_the_unreferenced),
        cmocka_unit_test(test_copy_of_missing_blob_is_500),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
