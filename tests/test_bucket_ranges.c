/* test_bucket_ranges.c: a bucket across ranges, on the mock cluster and on
 * real Kafka (BOTH_LOGS), through a running objlogd.
 *
 *  - a versioned bucket (objects, older versions, delete markers,
 *    multipart uploads) split inside at three keys over four partitions
 *    lists, lists versions and uploads, and counts exactly as it did
 *    before (every page compared with the one taken before the splits);
 *    new writes land on the partition holding their key; settings reach
 *    every range (relayed); a quota cut the home's share cannot cover and
 *    DeleteBucket of a bucket that is not empty are refused and change
 *    nothing; merged back, the bucket is one partition's again;
 *  - DeleteBucket of an emptied bucket split over partitions merges its
 *    ranges back and deletes it;
 *  - LIST pages taken while a split happens between them return every key
 *    once, in order;
 *  - quota by escrow: 8 writers create new keys in a bucket with a quota
 *    of objects, split over 3 partitions: never over the quota, the
 *    usage exact, the writes refused while another range still held
 *    allowance counted;
 *  - --auto-split: one bucket taking all its partition's writes is cut
 *    inside, at one of its keys, with no write refused;
 *  - bad requests: a split inside a bucket with an index (409
 *    SplitInsideBucket), inside a bucket that does not exist (404);
 *  - last, with buckets still split: a rebuild from the log into an empty
 *    directory dumps byte for byte as the live view.
 *
 * Invariant: every process and thread the test starts is stopped by it;
 * threads count, the main thread asserts after joining them. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpc.h"
#include "rangetest.h"
#include "proc.h"
#include "viewproc.h"

#define PARTS 4
#define WRITE_TIMEOUT "?timeout_ms=10000"

static viewtest_frame F;
static viewproc LIVE;

/* ---- HTTP helpers (main thread: they assert) ---- */


static void put_key(httpc *h, const char *bucket, const char *key, long size) {
    char path[160], body[96];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s" WRITE_TIMEOUT, bucket, key);
    snprintf(body, sizeof(body), "{\"size\":%ld,\"etag\":\"%032lx\"}", size, size);
    json_decref(rt_req_json(h, "PUT", path, body, 200));
}

/* The partition a key's write lands on, from its token "p.offset". */
static int put_partition(httpc *h, const char *bucket, const char *key) {
    char path[160];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s" WRITE_TIMEOUT, bucket, key);
    json_t *j = rt_req_json(h, "PUT", path, "{\"size\":3,\"etag\":\"e\"}", 200);
    int p = atoi(json_string_value(json_object_get(j, "token")));
    json_decref(j);
    return p;
}

/* The version id a PUT of the key got. */
static const char *put_version(httpc *h, const char *bucket, const char *key) {
    static char vid[64];
    char path[160];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s" WRITE_TIMEOUT, bucket, key);
    json_t *j = rt_req_json(h, "PUT", path, "{\"size\":5,\"etag\":\"v\"}", 200);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(j, "version_id")));
    json_decref(j);
    return vid;
}



/* Every page of a listing (path ends with '?...' or not), concatenated
 * into one array of the pages' `field` entries. `next`: the answer's
 * field naming the next page, `param` the query parameter taking it. */
static json_t *all_pages(httpc *h, const char *path, const char *field, const char *next,
                         const char *param) {
    json_t *all = json_array();
    char tok[512] = "";
    for (;;) {
        char p[1024];
        if (*tok)
            snprintf(p, sizeof(p), "%s%s%s=%s", path, strchr(path, '?') ? "&" : "?", param, tok);
        else
            snprintf(p, sizeof(p), "%s", path);
        json_t *j = rt_req_json(h, "GET", p, NULL, 200);
        json_array_extend(all, json_object_get(j, field));
        const char *n = json_string_value(json_object_get(j, next));
        int more = json_is_true(json_object_get(j, "is_truncated")) && n && *n;
        if (more)
            snprintf(tok, sizeof(tok), "%s", n);
        json_decref(j);
        if (!more)
            return all;
    }
}

/* What a bucket holds, as its listings and stats say. */
typedef struct bucket_dump {
    json_t *objects, *versions, *uploads, *stats;
} bucket_dump;

static void dump_take(httpc *h, const char *bucket, bucket_dump *d) {
    char path[160];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=37&consistency=strong",
             bucket);
    d->objects = all_pages(h, path, "objects", "next_continuation_token", "continuation_token");
    snprintf(path, sizeof(path), "/v1/buckets/%s/versions?max_keys=1000&consistency=strong",
             bucket);
    d->versions = rt_req_json(h, "GET", path, NULL, 200);
    snprintf(path, sizeof(path), "/v1/buckets/%s/uploads?consistency=strong", bucket);
    d->uploads = rt_req_json(h, "GET", path, NULL, 200);
    snprintf(path, sizeof(path), "/v1/buckets/%s/stats?consistency=strong", bucket);
    d->stats = rt_req_json(h, "GET", path, NULL, 200);
}

static void dump_free(bucket_dump *d) {
    json_decref(d->objects);
    json_decref(d->versions);
    json_decref(d->uploads);
    json_decref(d->stats);
}

static void expect_same(const char *what, json_t *before, json_t *after) {
    if (!json_equal(before, after)) {
        char *b = json_dumps(before, JSON_COMPACT), *a = json_dumps(after, JSON_COMPACT);
        fprintf(stderr, "%s differs:\nbefore %.600s\nafter  %.600s\n", what, b, a);
        free(b);
        free(a);
    }
    assert_true(json_equal(before, after));
}

static void expect_code(httpc *h, const char *method, const char *path, const char *body,
                        long status, const char *code) {
    httpc_resp r;
    assert_int_equal(httpc_do(h, method, path, body, NULL, &r), 0);
    if (r.status != status || !strstr(r.body, code))
        fprintf(stderr, "%s %s: %ld %s\n", method, path, r.status, r.body);
    assert_int_equal(r.status, status);
    assert_non_null(strstr(r.body, code));
}

/* ---- setup ---- */

static int group_setup(void **state) {
    (void)state;
    return rt_group_start(&F, &LIVE, PARTS);
}

static int group_teardown(void **state) {
    (void)state;
    rt_group_stop(&F, &LIVE, "test_bucket_ranges");
    return 0;
}

/* ---- the tests ---- */

#define LAKE_KEYS 400

static void test_split_inside_bucket(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/lake", "{\"versioning\":\"Enabled\"}", 200));
    char key[32], path[160];
    for (int i = 0; i < LAKE_KEYS; i++) {
        snprintf(key, sizeof(key), "k%04d", i);
        put_key(h, "lake", key, 100 + i);
        if (i % 7 == 0)
            put_key(h, "lake", key, 1000 + i); /* an older version */
        if (i % 11 == 0) {
            snprintf(path, sizeof(path), "/v1/buckets/lake/objects/%s" WRITE_TIMEOUT, key);
            json_decref(rt_req_json(h, "DELETE", path, NULL, 200)); /* a marker */
        }
    }
    for (int i = 0; i < 4; i++) {
        char body[64];
        snprintf(body, sizeof(body), "{\"key\":\"k%04d\"}", 50 + i * 100);
        json_decref(rt_req_json(h, "POST", "/v1/buckets/lake/uploads", body, 200));
    }
    int home = put_partition(h, "lake", "k0000-home");
    bucket_dump before, after;
    dump_take(h, "lake", &before);
    assert_int_equal(json_array_size(before.objects), 1 + LAKE_KEYS - (LAKE_KEYS + 10) / 11);

    /* Three splits inside the bucket: four ranges on four partitions. */
    int to[3], n = 0;
    for (int p = 0; p < PARTS; p++)
        if (p != home)
            to[n++] = p;
    for (int i = 0; i < 3; i++) {
        char body[96];
        snprintf(body, sizeof(body), "{\"bucket\":\"lake\",\"key\":\"k%04d\",\"to_partition\":%d}",
                 (i + 1) * 100, to[i]);
        json_t *j = rt_handoff(h, "split", body);
        assert_int_equal(json_integer_value(json_object_get(j, "to_partition")), to[i]);
        json_decref(j);
    }
    json_t *rg = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    int inside = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(rg, "ranges"), i, e) {
        const char *b = json_string_value(json_object_get(e, "bucket"));
        const char *k = json_string_value(json_object_get(e, "key"));
        if (b && k && strcmp(b, "lake") == 0 && *k) {
            assert_int_equal(json_integer_value(json_object_get(e, "partition")),
                             to[atoi(k + 1) / 100 - 1]);
            inside++;
        }
    }
    json_decref(rg);
    assert_int_equal(inside, 3);

    /* It answers as it did. */
    dump_take(h, "lake", &after);
    expect_same("LIST", before.objects, after.objects);
    expect_same("ListObjectVersions", before.versions, after.versions);
    expect_same("uploads", before.uploads, after.uploads);
    expect_same("stats", before.stats, after.stats);
    dump_free(&after);

    /* Writes land where their keys are held. */
    assert_int_equal(put_partition(h, "lake", "k0050"), home);
    for (int r = 0; r < 3; r++) {
        snprintf(key, sizeof(key), "k%04d-new", (r + 1) * 100 + 50);
        assert_int_equal(put_partition(h, "lake", key), to[r]);
    }
    json_t *st = rt_req_json(h, "GET", "/v1/buckets/lake/stats?consistency=strong", NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(st, "objects")),
                     json_integer_value(json_object_get(before.stats, "objects")) + 3);
    json_decref(st);

    /* What needs the whole bucket is refused, and changes nothing: the
     * bucket is not empty (so its ranges stay), its quota has no shares
     * to cut into. */
    expect_code(h, "DELETE", "/v1/buckets/lake", NULL, 409, "BucketNotEmpty");
    expect_code(h, "PUT", "/v1/buckets/lake/quota", "{\"max_objects\":5}", 409,
                "BucketSpansRanges");
    json_t *b = rt_req_json(h, "GET", "/v1/buckets/lake", NULL, 200);
    assert_string_equal(json_string_value(json_object_get(b, "versioning")), "Enabled");
    json_decref(b);

    /* A setting reaches every range: versioning Suspended on the home
     * partition, relayed to the three others in their log order. */
    long relays0 = rt_metric(h, "objlog_range_bucket_relays_total ");
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/lake/versioning", "{\"status\":\"Suspended\"}",
                            200));
    assert_string_equal(put_version(h, "lake", "k0010"), "null");
    for (int r = 0; r < 3; r++) {
        snprintf(key, sizeof(key), "k%04d", (r + 1) * 100 + 10);
        int ms = 0;
        while (strcmp(put_version(h, "lake", key), "null") != 0 && ms < 10000) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
            ms += 50;
        }
        fprintf(stderr, "versioning Suspended reached the range of %s after %d ms\n", key, ms);
        assert_string_equal(put_version(h, "lake", key), "null");
    }
    assert_true(rt_metric(h, "objlog_range_bucket_relays_total ") >= relays0 + 3);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/lake/versioning", "{\"status\":\"Enabled\"}",
                            200));

    /* Merged back, from the last range down: one partition again. */
    for (int r = 3; r >= 1; r--) {
        char body[64];
        snprintf(body, sizeof(body), "{\"bucket\":\"lake\",\"key\":\"k%04d\"}", r * 100);
        json_t *j = rt_handoff(h, "merge", body);
        assert_int_equal(json_integer_value(json_object_get(j, "to_partition")),
                         r == 1 ? home : to[r - 2]);
        json_decref(j);
    }
    assert_int_equal(put_partition(h, "lake", "k0350-new"), home);
    /* The counters say what the listings hold. */
    dump_take(h, "lake", &after);
    size_t versions = 0;
    json_array_foreach(json_object_get(after.versions, "versions"), i, e)
        versions += !json_is_true(json_object_get(e, "delete_marker"));
    fprintf(stderr, "lake after the merges: %zu objects, %zu versions\n",
            json_array_size(after.objects), versions);
    assert_int_equal(json_integer_value(json_object_get(after.stats, "objects")),
                     json_array_size(after.objects));
    assert_int_equal(json_integer_value(json_object_get(after.stats, "versions")), versions);
    assert_true(json_array_size(after.objects) >= json_array_size(before.objects) + 3);
    dump_free(&after);
    expect_code(h, "DELETE", "/v1/buckets/lake", NULL, 409, "BucketNotEmpty");
    dump_free(&before);
    httpc_destroy(h);
}

/* objlog ranges split BUCKET --key KEY: exit 0 and what moved. */
static void cli_split(const char *url, const char *bucket, const char *key) {
    char bin[512], out[1024], err[1024];
    char *argv[] = {(char *)proc_bin("ops/objlog", bin, sizeof(bin)), "--url", (char *)url,
                    "ranges", "split", (char *)bucket, "--key", (char *)key, NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 60000);
    fprintf(stderr, "objlog ranges split %s --key %s: %s%s", bucket, key, out, err);
    assert_int_equal(rc, 0);
    char want[128];
    snprintf(want, sizeof(want), "split: the range of %s/%s moved from partition ", bucket, key);
    assert_non_null(strstr(out, want));
    char *bad_key[] = {argv[0], "--url", (char *)url, "ranges", "split", (char *)bucket,
                       "--key", "", NULL};
    assert_int_equal(proc_run(bad_key, NULL, out, sizeof(out), err, sizeof(err), 60000), 2);
    assert_non_null(strstr(err, "--key must not be empty"));
}

/* DeleteBucket of a bucket split over partitions: refused while a key
 * is left (its ranges stay where they are); once it is empty, its ranges
 * are merged back to its home and the bucket goes. */
static void test_delete_spread_bucket(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/gone", "{}", 200));
    char key[32], path[128];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof(key), "g%02d", i);
        put_key(h, "gone", key, 1);
    }
    json_decref(rt_handoff(h, "split", "{\"bucket\":\"gone\",\"key\":\"g10\"}"));
    json_decref(rt_handoff(h, "split", "{\"bucket\":\"gone\",\"key\":\"g20\"}"));
    long e0 = rt_map_epoch(h);
    for (int i = 0; i < 29; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/gone/objects/g%02d" WRITE_TIMEOUT, i);
        json_decref(rt_req_json(h, "DELETE", path, NULL, 200));
    }
    expect_code(h, "DELETE", "/v1/buckets/gone", NULL, 409, "BucketNotEmpty");
    assert_int_equal(rt_map_epoch(h), e0); /* nothing merged for it */
    json_decref(rt_req_json(h, "DELETE", "/v1/buckets/gone/objects/g29" WRITE_TIMEOUT, NULL,
                            200));
    json_decref(rt_req_json(h, "DELETE", "/v1/buckets/gone", NULL, 200));
    expect_code(h, "GET", "/v1/buckets/gone", NULL, 404, "NoSuchBucket");
    /* Two merges ran first: no range starts inside it any more. */
    assert_int_equal(rt_map_epoch(h), e0 + 2);
    json_t *m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(m, "ranges"), i, r) {
        const char *b = json_string_value(json_object_get(r, "bucket"));
        assert_false(b && strcmp(b, "gone") == 0 && json_string_length(json_object_get(r, "key")));
    }
    json_decref(m);
    httpc_destroy(h);
}

/* LIST pages with a split between them: every key once, in order. */
static void test_list_pages_across_split(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/pages", "{}", 200));
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "p%04d", i);
        put_key(h, "pages", key, i + 1);
    }
    int seen = 0;
    char tok[512] = "", last[32] = "";
    for (int page = 0;; page++) {
        if (page == 2) /* after p0000..p0099: split ahead of the reader */
            json_decref(rt_handoff(h, "split", "{\"bucket\":\"pages\",\"key\":\"p0150\"}"));
        if (page == 4) /* and behind it, by the CLI */
            cli_split(LIVE.url, "pages", "p0050");
        char path[700];
        snprintf(path, sizeof(path), "/v1/buckets/pages/objects?max_keys=50&consistency=strong%s%s",
                 *tok ? "&continuation_token=" : "", tok);
        json_t *j = rt_req_json(h, "GET", path, NULL, 200);
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(j, "objects"), i, o) {
            const char *k = json_string_value(json_object_get(o, "key"));
            snprintf(key, sizeof(key), "p%04d", seen);
            assert_string_equal(k, key);
            assert_true(strcmp(last, k) < 0);
            snprintf(last, sizeof(last), "%s", k);
            seen++;
        }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more)
            snprintf(tok, sizeof(tok), "%s",
                     json_string_value(json_object_get(j, "next_continuation_token")));
        json_decref(j);
        if (!more)
            break;
    }
    assert_int_equal(seen, 300);
    httpc_destroy(h);
}

/* ---- quota by escrow ---- */

#define QUOTA_OBJECTS 90
#define QUOTA_WRITERS 8

typedef struct qwriter {
    int id;
    pthread_t t;
    long acked, quota_refused, share_refused, other;
    char last_other[200];
} qwriter;

static void *qwriter_main(void *arg) {
    qwriter *w = arg;
    httpc *h = httpc_new(LIVE.url);
    /* Keys spread over the whole bucket, so every range takes writes
     * until its share is spent. */
    for (int i = 0; i < 40; i++) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/buckets/escrow/objects/%c-w%d-%d" WRITE_TIMEOUT,
                 'a' + (i * 7 + w->id) % 26, w->id, i);
        httpc_resp r;
        memset(&r, 0, sizeof(r));
        if (httpc_do(h, "PUT", path, "{\"size\":1,\"etag\":\"e\"}", NULL, &r) != 0) {
            w->other++;
            continue;
        }
        if (r.status == 200) {
            w->acked++;
        } else if (r.status == 403 && strstr(r.body, "QuotaExceeded")) {
            w->quota_refused++;
            w->share_refused += strstr(r.body, "share") != NULL;
        } else {
            w->other++;
            snprintf(w->last_other, sizeof(w->last_other), "%ld %.150s", r.status, r.body);
        }
    }
    httpc_destroy(h);
    return NULL;
}

static void test_escrow_quota(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    char body[96];
    snprintf(body, sizeof(body), "{\"quota\":{\"max_objects\":%d}}", QUOTA_OBJECTS);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/escrow", body, 200));
    char key[32];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof(key), "%c-seed-%d", 'a' + i % 26, i);
        put_key(h, "escrow", key, 1);
    }
    /* Three ranges on three partitions. */
    json_t *j = rt_handoff(h, "split", "{\"bucket\":\"escrow\",\"key\":\"i\"}");
    int home = (int)json_integer_value(json_object_get(j, "from_partition"));
    int first = (int)json_integer_value(json_object_get(j, "to_partition"));
    json_decref(j);
    int third = 0;
    while (third == home || third == first)
        third++;
    snprintf(body, sizeof(body), "{\"bucket\":\"escrow\",\"key\":\"r\",\"to_partition\":%d}",
             third);
    json_decref(rt_handoff(h, "split", body));
    qwriter w[QUOTA_WRITERS];
    for (int i = 0; i < QUOTA_WRITERS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].id = i;
        assert_int_equal(pthread_create(&w[i].t, NULL, qwriter_main, &w[i]), 0);
    }
    long acked = 0, refused = 0, share = 0;
    for (int i = 0; i < QUOTA_WRITERS; i++) {
        pthread_join(w[i].t, NULL);
        if (w[i].other)
            fprintf(stderr, "writer %d: %ld other answers, last %s\n", i, w[i].other,
                    w[i].last_other);
        assert_int_equal(w[i].other, 0);
        acked += w[i].acked;
        refused += w[i].quota_refused;
        share += w[i].share_refused;
    }
    json_t *st = rt_req_json(h, "GET", "/v1/buckets/escrow/stats?consistency=strong", NULL, 200);
    long objects = (long)json_integer_value(json_object_get(st, "objects"));
    json_decref(st);
    json_t *all = all_pages(h, "/v1/buckets/escrow/objects?max_keys=1000&consistency=strong",
                            "objects", "next_continuation_token", "continuation_token");
    long listed = (long)json_array_size(all);
    json_decref(all);
    fprintf(stderr, "escrow: quota %d objects, 30 before the splits, %ld writes acknowledged, "
                    "%ld refused (%ld by a range's share), %ld objects counted, %ld listed\n",
            QUOTA_OBJECTS, acked, refused, share, objects, listed);
    assert_true(30 + acked <= QUOTA_OBJECTS);
    assert_int_equal(objects, 30 + acked);
    assert_int_equal(listed, 30 + acked);
    assert_int_equal(acked + refused, QUOTA_WRITERS * 40);
    assert_true(refused > 0);

    /* A raise goes to the home range's share: 10 more there, not 11. */
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/escrow/quota", "{\"max_objects\":100}", 200));
    int more = 0;
    for (int i = 0; i < 11; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/escrow/objects/a-raise-%d" WRITE_TIMEOUT, i);
        httpc_resp r;
        assert_int_equal(httpc_do(h, "PUT", path, "{\"size\":1,\"etag\":\"e\"}", NULL, &r), 0);
        more += r.status == 200;
        assert_true(r.status == 200 || (r.status == 403 && strstr(r.body, "QuotaExceeded")));
    }
    assert_int_equal(more, 10);
    /* A cut beyond the share the home range holds is refused (the other
     * ranges hold some of the 100). */
    expect_code(h, "PUT", "/v1/buckets/escrow/quota", "{\"max_objects\":1}", 409,
                "BucketSpansRanges");
    /* Removed, it reaches every range (relayed): writes anywhere go in. */
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/escrow/quota", "{\"max_objects\":0}", 200));
    static const char *const far[] = {"m-free", "z-free"};
    for (int f = 0; f < 2; f++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/escrow/objects/%s" WRITE_TIMEOUT, far[f]);
        int ms = 0;
        for (;; ms += 50) {
            httpc_resp r;
            assert_int_equal(httpc_do(h, "PUT", path, "{\"size\":1,\"etag\":\"e\"}", NULL, &r),
                             0);
            if (r.status == 200 || ms >= 10000)
                break;
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
        fprintf(stderr, "quota removal reached the range of %s after %d ms\n", far[f], ms);
        assert_true(ms < 10000);
    }
    st = rt_req_json(h, "GET", "/v1/buckets/escrow/stats?consistency=strong", NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(st, "objects")), 30 + acked + 10 + 2);
    json_decref(st);
    httpc_destroy(h);
}

static void test_bad_splits(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    json_t *before = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/indexed", "{}", 200));
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/indexed/indexes/by-type",
                            "{\"field\":\"content_type\"}", 200));
    expect_code(h, "POST", "/v1/ranges/split", "{\"bucket\":\"indexed\",\"key\":\"m\"}", 409,
                "SplitInsideBucket");
    expect_code(h, "POST", "/v1/ranges/split", "{\"bucket\":\"nosuch\",\"key\":\"m\"}", 404,
                "NoSuchBucket");
    json_t *after = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    httpc_destroy(h);
}

/* ---- automatic split of one hot bucket ---- */


typedef struct hot_writer {
    int id;
    atomic_int *stop;
    pthread_t t;
    long acked, refused;
    char last[200];
} hot_writer;

static void *hot_writer_main(void *arg) {
    hot_writer *w = arg;
    httpc *h = httpc_new(LIVE.url);
    for (long i = 0; !atomic_load(w->stop); i++) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/buckets/hot/objects/%c%05ld-%d" WRITE_TIMEOUT,
                 'a' + (int)(i % 26), i, w->id);
        httpc_resp r;
        memset(&r, 0, sizeof(r));
        if (httpc_do(h, "PUT", path, "{\"size\":1,\"etag\":\"e\"}", NULL, &r) == 0 &&
            r.status == 200) {
            w->acked++;
        } else {
            w->refused++;
            snprintf(w->last, sizeof(w->last), "%ld %.150s", r.status, r.body ? r.body : "");
        }
    }
    httpc_destroy(h);
    return NULL;
}


/* One bucket takes all the writes of its partition: --auto-split cuts
 * it inside, at a key of its own; no write is refused for it. */
static void test_auto_split_one_bucket(void **state) {
    (void)state;
    static const char *const env[] = {"OBJLOG_AUTO_SPLIT", "1", "OBJLOG_AUTO_SPLIT_RATE", "100",
                                       "OBJLOG_AUTO_SPLIT_SECONDS", "2", NULL};
    rt_restart_live(&LIVE, env);
    httpc *h = httpc_new(LIVE.url);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/hot", "{}", 200));
    long e0 = rt_map_epoch(h), e1 = e0;
    atomic_int stop = 0;
    hot_writer w[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].id = i;
        w[i].stop = &stop;
        assert_int_equal(pthread_create(&w[i].t, NULL, hot_writer_main, &w[i]), 0);
    }
    int waited = 0;
    for (; waited < 30000 && e1 == e0; waited += 200) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        e1 = rt_map_epoch(h);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i].t, NULL);
    json_t *m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    const char *cut = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(m, "ranges"), i, r) {
        const char *b = json_string_value(json_object_get(r, "bucket"));
        const char *k = json_string_value(json_object_get(r, "key"));
        if (b && k && strcmp(b, "hot") == 0 && *k)
            cut = k;
    }
    fprintf(stderr, "auto-split of one bucket: epoch %ld -> %ld after %d ms of load (%ld + %ld "
                    "writes), cut at hot/%s\n",
            e0, e1, waited, w[0].acked, w[1].acked, cut ? cut : "(none)");
    assert_true(e1 > e0);
    assert_non_null(cut);
    json_decref(m);
    for (int k = 0; k < 2; k++) {
        if (w[k].refused)
            fprintf(stderr, "writer %d: %ld refused, last %s\n", k, w[k].refused, w[k].last);
        assert_int_equal(w[k].refused, 0);
    }
    json_t *st = rt_req_json(h, "GET", "/v1/buckets/hot/stats?consistency=strong", NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(st, "objects")), w[0].acked + w[1].acked);
    json_decref(st);
    httpc_destroy(h);
    rt_restart_live(&LIVE, NULL);
}

/* Last: a rebuild from the log dumps as the live view, byte for byte,
 * with the buckets above still split (their stakes included). */
static void test_rebuild_equal(void **state) {
    (void)state;
    size_t rows[OBJLOG_CF_COUNT];
    int64_t events = 0;
    char msg[512];
    int same = viewproc_rebuild_equal(&LIVE, F.data2, PARTS, rows, &events, msg, sizeof(msg));
    if (same != 0)
        fprintf(stderr, "rebuild: %s\n", msg);
    assert_int_equal(same, 0);
    fprintf(stderr, "rebuild of %lld events dumps as the live view (%zu bucket rows, %zu stats "
                    "rows)\n",
            (long long)events, rows[OBJLOG_CF_BUCKETS], rows[OBJLOG_CF_STATS]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_splits),
        cmocka_unit_test(test_split_inside_bucket),
        cmocka_unit_test(test_list_pages_across_split),
        cmocka_unit_test(test_delete_spread_bucket),
        cmocka_unit_test(test_escrow_quota),
        cmocka_unit_test(test_auto_split_one_bucket),
        cmocka_unit_test(test_rebuild_equal),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
