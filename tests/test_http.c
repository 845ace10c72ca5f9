/* test_http.c: the query service and write gateway over real HTTP. The
 * whole stack runs in-process: the embedded mock Kafka cluster (TCP on
 * 127.0.0.1), a RocksDB store in a temp dir, the materializer, and the
 * server on 127.0.0.1 port 0, driven by libcurl. Each test pins one S3 rule
 * with exact statuses, error codes and values. Also covered: the usage
 * counters and quotas, and prefix usage (/usage: exact JSON, pages merged
 * equal to one page, every token misuse and bad parameter). */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "httpenv.h"
#include "proc.h"
#include "objlog_producer.h"
#include "query.h"
#include "objlog.pb-c.h"
#include <time.h>
#include <librdkafka/rdkafka.h>
#include "rangemap.h"
#include "keycodec.h"
#include "control.h"

static env *env_start_conf5(int apply_delay_ms, int threads, long long ready_max_lag,
                            int idle_pause_ms, void (*before_view)(const char *bs)) {
    env_opts o = {.apply_delay_ms = apply_delay_ms, .threads = threads,
                  .ready_max_lag = ready_max_lag, .idle_pause_ms = idle_pause_ms,
                  .before_view = before_view};
    return env_start_opts(&o);
}

static env *env_start_conf4(int apply_delay_ms, int threads, long long ready_max_lag,
                            int idle_pause_ms) {
    return env_start_conf5(apply_delay_ms, threads, ready_max_lag, idle_pause_ms, NULL);
}

static env *env_start_conf(int apply_delay_ms, int threads, long long ready_max_lag) {
    return env_start_conf4(apply_delay_ms, threads, ready_max_lag, 0);
}

static env *env_start(int apply_delay_ms) {
    return env_start_conf(apply_delay_ms, 3, 0);
}

static int setup(void **state) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    *state = env_start(0);
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    env_stop(*state);
    curl_global_cleanup();
    return 0;
}

/* ---------------------------------------------------------------- tests */

static void test_put_get_head(void **state) {
    env *e = *state;
    resp r;
    char h[256];
    make_bucket(e, "photos", "{\"tenant\":\"t1\"}");
    req(e, "PUT", "/v1/buckets/photos/objects/cat.jpg",
        "{\"size\":1234,\"etag\":\"abc\",\"content_type\":\"image/jpeg\","
        "\"blob_id\":\"blob-1\",\"storage_class\":\"GLACIER\",\"checksum\":\"crc\","
        "\"user_metadata\":{\"color\":\"black\"},\"tags\":{\"team\":\"a b\",\"x\":\"\"}}",
        NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "version_id", NULL), "null");
    assert_string_equal(jstr(&r, "etag", NULL), "abc");
    assert_false(json_is_true(json_object_get(r.json, "delete_marker")));
    assert_int_equal(strlen(jstr(&r, "request_id", NULL)), 32);
    assert_non_null(header(&r, "X-Objlog-Token", h, sizeof(h)));
    assert_string_equal(h, jstr(&r, "token", NULL));
    resp_free(&r);

    req(e, "GET", "/v1/buckets/photos/objects/cat.jpg", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "bucket", NULL), "photos");
    assert_string_equal(jstr(&r, "key", NULL), "cat.jpg");
    assert_string_equal(jstr(&r, "version_id", NULL), "null");
    assert_string_equal(jstr(&r, "etag", NULL), "abc");
    assert_int_equal(json_integer_value(json_object_get(r.json, "size")), 1234);
    assert_string_equal(jstr(&r, "content_type", NULL), "image/jpeg");
    assert_string_equal(jstr(&r, "blob_id", NULL), "blob-1");
    assert_string_equal(jstr(&r, "storage_class", NULL), "GLACIER");
    assert_string_equal(jstr(&r, "checksum", NULL), "crc");
    assert_string_equal(jstr(&r, "user_metadata", "color"), "black");
    assert_int_equal(json_object_size(json_object_get(r.json, "tags")), 2);
    assert_string_equal(jstr(&r, "tags", "team"), "a b");
    assert_string_equal(jstr(&r, "tags", "x"), "");
    assert_false(json_is_true(json_object_get(r.json, "delete_marker")));
    assert_int_equal(strlen(jstr(&r, "last_modified", NULL)), 24);
    assert_non_null(header(&r, "X-Objlog-Applied", h, sizeof(h)));
    resp_free(&r);

    req(e, "HEAD", "/v1/buckets/photos/objects/cat.jpg", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    assert_string_equal(header(&r, "ETag", h, sizeof(h)), "abc");
    assert_string_equal(header(&r, "X-Objlog-Size", h, sizeof(h)), "1234");
    assert_string_equal(header(&r, "X-Objlog-Version-Id", h, sizeof(h)), "null");
    assert_non_null(header(&r, "Last-Modified", h, sizeof(h)));
    resp_free(&r);

    req(e, "HEAD", "/v1/buckets/photos/objects/dog.jpg", NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/photos/objects/dog.jpg", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchKey");
    assert_null(header(&r, "x-amz-delete-marker", h, sizeof(h)));
    resp_free(&r);

    req(e, "GET", "/healthz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "status", NULL), "ok");
    resp_free(&r);
}

/* The body is byte for byte what jansson dumps of it (compact, in
 * order): the writer of the hot answers and jansson agree. */
static void assert_same_as_jansson(const resp *r) {
    assert_non_null(r->json);
    char *dumped = json_dumps(r->json, JSON_COMPACT);
    assert_non_null(dumped);
    assert_true(r->body_len > 0 && r->body[r->body_len - 1] == '\n');
    if (strlen(dumped) != r->body_len - 1 || memcmp(dumped, r->body, r->body_len - 1) != 0)
        fail_msg("body differs from jansson's dump:\n%.*s\n%s", (int)r->body_len, r->body,
                 dumped);
    free(dumped);
}

/* GET's body is written without jansson (query/server/jsonw.c): what needs
 * escaping in a key or metadata comes back as it was sent. */
static void test_get_body_escapes(void **state) {
    env *e = *state;
    make_bucket(e, "escapes", NULL);
    const char *key = "q\"uote\\back slash/\xc3\xa9t\xc3\xa9\x01";
    char *ek = esc(key, strlen(key));
    char path[512];
    snprintf(path, sizeof(path), "/v1/buckets/escapes/objects/%s", ek);
    free(ek);
    resp r;
    req(e, "PUT", path,
        "{\"size\":98765432109,\"etag\":\"e\\\"t\",\"content_type\":\"a/b\","
        "\"user_metadata\":{\"k\\\\1\":\"v \\\"q\\\" \\u00e9\",\"empty\":\"\"}}",
        NULL, &r);
    if (r.status != 200)
        print_error("%s\n", r.body);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(r.json); /* it parses */
    assert_string_equal(jstr(&r, "key", NULL), key);
    assert_string_equal(jstr(&r, "etag", NULL), "e\"t");
    assert_non_null(strstr(r.body, "\"size\":98765432109,"));
    assert_string_equal(jstr(&r, "user_metadata", "k\\1"), "v \"q\" \xc3\xa9");
    assert_string_equal(jstr(&r, "user_metadata", "empty"), "");
    assert_string_equal(jstr(&r, "blob_id", NULL), "");
    assert_false(json_is_true(json_object_get(r.json, "delete_marker")));
    assert_same_as_jansson(&r);
    resp_free(&r);
    /* A LIST page (also jsonw.c), with a prefix and a common prefix that
     * need escaping. */
    req(e, "GET", "/v1/buckets/escapes/objects?prefix=q%22&delimiter=%5C", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "prefix", NULL), "q\"");
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(r.json, "common_prefixes"), 0)),
                        "q\"uote\\");
    assert_same_as_jansson(&r);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/escapes/objects?max_keys=1", NULL, NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.json, "objects")), 1);
    assert_same_as_jansson(&r);
    resp_free(&r);
}

static void test_versioned_delete_marker(void **state) {
    env *e = *state;
    resp r;
    char h[256], v1[32], marker[32], path[256];
    make_bucket(e, "vers", "{\"versioning\":\"Enabled\"}");
    req(e, "PUT", "/v1/buckets/vers/objects/doc", "{\"etag\":\"e1\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    snprintf(v1, sizeof(v1), "%s", jstr(&r, "version_id", NULL));
    assert_int_equal(strlen(v1), 16);
    resp_free(&r);
    put_key(e, "vers", "doc", 3, "e2");

    req(e, "DELETE", "/v1/buckets/vers/objects/doc", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_true(json_object_get(r.json, "delete_marker")));
    snprintf(marker, sizeof(marker), "%s", jstr(&r, "version_id", NULL));
    assert_int_equal(strlen(marker), 16);
    resp_free(&r);

    req(e, "GET", "/v1/buckets/vers/objects/doc", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchKey");
    assert_string_equal(header(&r, "x-amz-delete-marker", h, sizeof(h)), "true");
    resp_free(&r);

    snprintf(path, sizeof(path), "/v1/buckets/vers/objects/doc?version_id=%s", v1);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "e1");
    assert_string_equal(jstr(&r, "version_id", NULL), v1);
    resp_free(&r);

    snprintf(path, sizeof(path), "/v1/buckets/vers/objects/doc?version_id=%s", marker);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 405, "MethodNotAllowed");
    assert_string_equal(header(&r, "x-amz-delete-marker", h, sizeof(h)), "true");
    resp_free(&r);

    req(e, "GET", "/v1/buckets/vers/objects/doc?version_id=00000000000fffff", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchVersion");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/vers/objects/doc?version_id=zz", NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/vers/objects/doc?version_id=null", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchVersion");
    resp_free(&r);

    /* deleting the marker by id brings the newest version back */
    snprintf(path, sizeof(path), "/v1/buckets/vers/objects/doc?version_id=%s", marker);
    expect(e, "DELETE", path, NULL, 200);
    req(e, "GET", "/v1/buckets/vers/objects/doc", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "e2");
    resp_free(&r);
}

static void test_unversioned_delete(void **state) {
    env *e = *state;
    resp r;
    char h[64];
    make_bucket(e, "plain", NULL);
    put_key(e, "plain", "k", 1, "e1");
    req(e, "GET", "/v1/buckets/plain/objects/k?version_id=null", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "e1");
    resp_free(&r);
    req(e, "DELETE", "/v1/buckets/plain/objects/k", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_false(json_is_true(json_object_get(r.json, "delete_marker")));
    resp_free(&r);
    req(e, "GET", "/v1/buckets/plain/objects/k", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchKey");
    assert_null(header(&r, "x-amz-delete-marker", h, sizeof(h)));
    resp_free(&r);
}

/* Keys with NUL, multi-byte UTF-8 and '/' survive PUT, GET and LIST. */
static void test_key_bytes_round_trip(void **state) {
    env *e = *state;
    resp r;
    static const char key[] = "日本/ü\0x";
    size_t kn = sizeof(key) - 1;
    make_bucket(e, "bytes", NULL);
    put_key(e, "bytes", key, kn, "u1");
    char *k = esc(key, kn), path[512];
    snprintf(path, sizeof(path), "/v1/buckets/bytes/objects/%s", k);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *jk = json_object_get(r.json, "key");
    assert_int_equal(json_string_length(jk), kn);
    assert_memory_equal(json_string_value(jk), key, kn);
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/bytes/objects?prefix=%s", k);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *objs = json_object_get(r.json, "objects");
    assert_int_equal(json_array_size(objs), 1);
    jk = json_object_get(json_array_get(objs, 0), "key");
    assert_int_equal(json_string_length(jk), kn);
    assert_memory_equal(json_string_value(jk), key, kn);
    resp_free(&r);
    free(k);
}

static void list_bucket(env *e, const char *query, resp *r) {
    char path[1024];
    snprintf(path, sizeof(path), "/v1/buckets/lst/objects%s", query);
    req(e, "GET", path, NULL, NULL, r);
    if (r->status != 200)
        print_error("LIST %s: %s\n", query, r->body);
    assert_int_equal(r->status, 200);
}

/* "k1,k2" joined names of an array of objects (or strings). */
static void names(json_t *arr, char *out, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *it = json_array_get(arr, i);
        const char *s = json_is_string(it) ? json_string_value(it)
                                           : json_string_value(json_object_get(it, "key"));
        o += (size_t)snprintf(out + o, n - o, "%s%s", i ? "," : "", s);
    }
}

static void test_list_delimiter(void **state) {
    env *e = *state;
    resp r;
    char got[1024];
    static const char *const keys[] = {"a/1", "a/2", "b/1", "c", "d/x/y", "d/x/z",
                                       "dz", "e//f", NULL};
    make_bucket(e, "lst", NULL);
    for (int i = 0; keys[i]; i++)
        put_key(e, "lst", keys[i], strlen(keys[i]), "x");

    list_bucket(e, "", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "a/1,a/2,b/1,c,d/x/y,d/x/z,dz,e//f");
    assert_int_equal(json_integer_value(json_object_get(r.json, "key_count")), 8);
    assert_false(json_is_true(json_object_get(r.json, "is_truncated")));
    assert_null(json_object_get(r.json, "next_continuation_token"));
    resp_free(&r);

    list_bucket(e, "?delimiter=/", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "c,dz");
    names(json_object_get(r.json, "common_prefixes"), got, sizeof(got));
    assert_string_equal(got, "a/,b/,d/,e/");
    assert_int_equal(json_integer_value(json_object_get(r.json, "key_count")), 6);
    assert_string_equal(jstr(&r, "delimiter", NULL), "/");
    resp_free(&r);

    list_bucket(e, "?prefix=d/&delimiter=/", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "");
    names(json_object_get(r.json, "common_prefixes"), got, sizeof(got));
    assert_string_equal(got, "d/x/");
    resp_free(&r);

    list_bucket(e, "?prefix=a/", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "a/1,a/2");
    assert_string_equal(jstr(&r, "prefix", NULL), "a/");
    resp_free(&r);

    /* a delimiter of several characters */
    list_bucket(e, "?delimiter=/x/", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "a/1,a/2,b/1,c,dz,e//f");
    names(json_object_get(r.json, "common_prefixes"), got, sizeof(got));
    assert_string_equal(got, "d/x/");
    resp_free(&r);

    list_bucket(e, "?start_after=c", &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "d/x/y,d/x/z,dz,e//f");
    resp_free(&r);

    list_bucket(e, "?max_keys=0", &r);
    assert_int_equal(json_integer_value(json_object_get(r.json, "key_count")), 0);
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_keys")), 0);
    assert_int_equal(json_array_size(json_object_get(r.json, "objects")), 0);
    assert_false(json_is_true(json_object_get(r.json, "is_truncated")));
    resp_free(&r);
}

/* Walks the pages; returns the joined items and the page count. */
static int paginate(env *e, const char *bucket, const char *query, int max_keys,
                    char *out, size_t n) {
    char token[4096] = "", path[8192];
    int pages = 0;
    size_t o = 0;
    out[0] = '\0';
    for (;;) {
        resp r;
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=%d%s%s%s",
                 bucket, max_keys, query, token[0] ? "&continuation_token=" : "", token);
        req(e, "GET", path, NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        pages++;
        json_t *objs = json_object_get(r.json, "objects");
        json_t *cps = json_object_get(r.json, "common_prefixes");
        assert_int_equal(json_array_size(objs) + json_array_size(cps),
                         json_integer_value(json_object_get(r.json, "key_count")));
        assert_true(json_integer_value(json_object_get(r.json, "key_count")) <= max_keys);
        char got[2048];
        names(cps, got, sizeof(got));
        if (got[0])
            o += (size_t)snprintf(out + o, n - o, "%s[%s]", o ? "," : "", got);
        names(objs, got, sizeof(got));
        if (got[0])
            o += (size_t)snprintf(out + o, n - o, "%s%s", o ? "," : "", got);
        int truncated = json_is_true(json_object_get(r.json, "is_truncated"));
        if (!truncated) {
            assert_null(json_object_get(r.json, "next_continuation_token"));
            resp_free(&r);
            return pages;
        }
        snprintf(token, sizeof(token), "%s", jstr(&r, "next_continuation_token", NULL));
        resp_free(&r);
        assert_true(pages < 100);
    }
}

static void test_list_pagination(void **state) {
    env *e = *state;
    char got[4096], want[4096];
    size_t o = 0;
    make_bucket(e, "pages", NULL);
    for (int i = 0; i < 25; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%02d", i);
        put_key(e, "pages", k, strlen(k), "x");
        o += (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", i ? "," : "", k);
    }
    int pages = paginate(e, "pages", "", 4, got, sizeof(got));
    assert_string_equal(got, want);
    assert_int_equal(pages, 7);
    pages = paginate(e, "pages", "", 25, got, sizeof(got));
    assert_string_equal(got, want);
    assert_int_equal(pages, 1);

    /* common prefixes count toward max_keys and are never repeated */
    static const char *const more[] = {"p/1", "p/2", "p/3", "q/1", "r", NULL};
    for (int i = 0; more[i]; i++)
        put_key(e, "pages", more[i], strlen(more[i]), "x");
    paginate(e, "pages", "&delimiter=/&prefix=", 1, got, sizeof(got));
    assert_string_equal(strstr(got, "k24,") + 4, "[p/],[q/],r");
    pages = paginate(e, "pages", "&delimiter=/", 2, got, sizeof(got));
    assert_int_equal(pages, 14);
}

/* Every field has a length limit, so one write cannot
 * carry a huge event into the log (a 250 KB etag used to be accepted).
 * Each over-long field is a 400 naming it, nothing reaches the log, and a
 * field at its limit is accepted. */
static long long log_end_total(env *e) {
    resp r;
    req(e, "GET", "/v1/lag", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    long long total = 0;
    json_t *ps = json_object_get(r.json, "partitions");
    for (size_t i = 0; i < json_array_size(ps); i++)
        total += json_integer_value(json_object_get(json_array_get(ps, i), "end"));
    resp_free(&r);
    return total;
}

static char *repeat_char(char c, size_t n) {
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_field_limits(void **state) {
    env *e = *state;
    make_bucket(e, "lim", NULL);
    long long end0 = log_end_total(e);
    struct { const char *field, *named; size_t over; char c; } rows[] = {
        {"etag", "etag", 129, 'e'},
        {"etag", "etag", 250 * 1024, 'e'},
        {"content_type", "content type", 1025, 't'},
        {"blob_id", "blob id", 1025, 'b'},
        {"storage_class", "storage class", 33, 'S'},
        {"checksum", "checksum", 129, 'c'},
    };
    resp r;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char *v = repeat_char(rows[i].c, rows[i].over);
        size_t bn = rows[i].over + 64;
        char *body = malloc(bn);
        snprintf(body, bn, "{\"%s\":\"%s\"}", rows[i].field, v);
        req(e, "PUT", "/v1/buckets/lim/objects/k", body, NULL, &r);
        if (r.status != 400)
            fail_msg("%s of %zu bytes: %ld", rows[i].field, rows[i].over, r.status);
        assert_error(&r, 400, "InvalidArgument");
        assert_non_null(strstr(jstr(&r, "error", "message"), rows[i].named));
        resp_free(&r);
        /* one byte less is accepted (the 250 KB row only checks refusal) */
        if (rows[i].over < 2000) {
            v[rows[i].over - 1] = '\0';
            snprintf(body, bn, "{\"%s\":\"%s\"}", rows[i].field, v);
            req(e, "PUT", "/v1/buckets/lim/objects/k?timeout_ms=10000", body, NULL, &r);
            assert_int_equal(r.status, 200);
            resp_free(&r);
        }
        free(body);
        free(v);
    }
    req(e, "PUT", "/v1/buckets/lim/objects/k", "{\"storage_class\":\"cold storage\"}",
        NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    char *im = repeat_char('m', 129), hdr[200];
    snprintf(hdr, sizeof(hdr), "If-Match: %s", im);
    const char *hs[] = {hdr, NULL};
    req(e, "PUT", "/v1/buckets/lim/objects/k", "{\"etag\":\"x\"}", hs, &r);
    assert_error(&r, 400, "InvalidArgument");
    assert_non_null(strstr(jstr(&r, "error", "message"), "If-Match"));
    resp_free(&r);
    free(im);
    /* only the five accepted writes reached the log */
    assert_int_equal(log_end_total(e) - end0, 5);
}

static void test_bad_inputs(void **state) {
    env *e = *state;
    char long_key[1100];
    char path[1300];
    resp r;
    make_bucket(e, "bad", NULL);
    make_bucket(e, "other", NULL);
    put_key(e, "bad", "k1", 2, "x");
    put_key(e, "bad", "k2", 2, "x");

    /* a genuine token of bucket "bad", replayed against bucket "other" */
    req(e, "GET", "/v1/buckets/bad/objects?max_keys=1", NULL, NULL, &r);
    char foreign[512];
    snprintf(foreign, sizeof(foreign), "/v1/buckets/other/objects?continuation_token=%s",
             jstr(&r, "next_continuation_token", NULL));
    resp_free(&r);
    memset(long_key, 'a', 1025);
    long_key[1025] = '\0';
    snprintf(path, sizeof(path), "/v1/buckets/bad/objects/%s", long_key);

    struct { const char *method, *path, *body; long status; const char *code; } rows[] = {
        {"GET", "/v1/buckets/bad/objects?max_keys=-1", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects?max_keys=abc", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects?max_keys=1001", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects?continuation_token=AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
         NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects?continuation_token=%21%21", NULL, 400, "InvalidArgument"},
        {"GET", foreign, NULL, 400, "InvalidArgument"},
        {"PUT", path, "{}", 400, "KeyTooLongError"},
        {"GET", path, NULL, 400, "KeyTooLongError"},
        {"PUT", "/v1/buckets/bad/objects/%FF", "{}", 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects/a%C0%AF", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/nosuch/objects/k", NULL, 404, "NoSuchBucket"},
        {"GET", "/v1/buckets/nosuch/objects", NULL, 404, "NoSuchBucket"},
        {"PUT", "/v1/buckets/nosuch/objects/k", "{}", 404, "NoSuchBucket"},
        {"PUT", "/v1/buckets/bad/objects/k", "not json", 400, "MalformedJSON"},
        {"PUT", "/v1/buckets/bad/objects/k", "[1,2]", 400, "MalformedJSON"},
        {"PUT", "/v1/buckets/bad/objects/k", "", 400, "MalformedJSON"},
        {"PUT", "/v1/buckets/bad/objects/k", "{\"size\":\"big\"}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k", "{\"etag\":5}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k", "{\"user_metadata\":{\"a\":1}}", 400,
         "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k", "{\"tags\":[\"a\"]}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k", "{\"tags\":{\"a\":true}}", 400,
         "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k",
         "{\"tags\":{\"1\":\"\",\"2\":\"\",\"3\":\"\",\"4\":\"\",\"5\":\"\",\"6\":\"\",\"7\":\"\","
         "\"8\":\"\",\"9\":\"\",\"10\":\"\",\"11\":\"\"}}",
         400, "InvalidArgument"},
        {"PUT", "/v1/buckets/bad", "{\"versioning\":\"Sometimes\"}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/bad", "{", 400, "MalformedJSON"},
        {"PUT", "/v1/buckets/bad", NULL, 409, "BucketAlreadyExists"},
        {"PUT", "/v1/buckets/Bad_Name", NULL, 400, "InvalidBucketName"},
        {"GET", "/v1/buckets/ab/objects", NULL, 400, "InvalidBucketName"},
        {"GET", "/v2/nothing", NULL, 404, "NoSuchRoute"},
        {"GET", "/v1/buckets/bad/whatever", NULL, 404, "NoSuchRoute"},
        {"POST", "/v1/buckets/bad/objects/k1", "{}", 405, "MethodNotAllowed"},
        {"DELETE", "/v1/buckets/bad/objects", NULL, 405, "MethodNotAllowed"},
        {"GET", "/v1/buckets/bad/objects/k1?consistency=sometimes", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects/k1?timeout_ms=99999", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/bad/objects/k1?consistency=token&token=bogus", NULL, 400,
         "InvalidArgument"},
        {"PUT", "/v1/buckets/bad/objects/k1?ack=maybe", "{}", 400, "InvalidArgument"},
        {"DELETE", "/v1/buckets/bad/objects/k1?version_id=xyz", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/writes/not-a-token", NULL, 400, "InvalidArgument"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        req(e, rows[i].method, rows[i].path, rows[i].body, NULL, &r);
        if (r.status != rows[i].status)
            print_error("row %zu: %s %.80s\n", i, rows[i].method, rows[i].path);
        assert_error(&r, rows[i].status, rows[i].code);
        resp_free(&r);
        /* and the server still serves */
        req(e, "GET", "/v1/buckets/bad/objects/k1", NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        resp_free(&r);
    }
    /* the field named in the message */
    req(e, "PUT", "/v1/buckets/bad/objects/k", "{\"size\":\"big\"}", NULL, &r);
    assert_non_null(strstr(jstr(&r, "error", "message"), "size"));
    resp_free(&r);
}

static void test_preconditions(void **state) {
    env *e = *state;
    resp r;
    make_bucket(e, "cond", NULL);
    const char *inm[] = {"If-None-Match: *", NULL};
    req(e, "PUT", "/v1/buckets/cond/objects/k", "{\"etag\":\"one\"}", inm, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/cond/objects/k", "{\"etag\":\"two\"}", inm, &r);
    assert_error(&r, 412, "PreconditionFailed");
    resp_free(&r);
    const char *im_bad[] = {"If-Match: nope", NULL};
    req(e, "PUT", "/v1/buckets/cond/objects/k", "{\"etag\":\"two\"}", im_bad, &r);
    assert_error(&r, 412, "PreconditionFailed");
    resp_free(&r);
    const char *im[] = {"If-Match: one", NULL};
    req(e, "PUT", "/v1/buckets/cond/objects/k", "{\"etag\":\"two\"}", im, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "two");
    resp_free(&r);
}

static void test_writes_and_consistency(void **state) {
    env *e = *state;
    resp r;
    char token[128], path[512], h[256];
    make_bucket(e, "rwx", NULL);

    /* ack=logged answers at the Kafka ack with a token */
    req(e, "PUT", "/v1/buckets/rwx/objects/k?ack=logged", "{\"etag\":\"L\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "status", NULL), "logged");
    snprintf(token, sizeof(token), "%s", jstr(&r, "token", NULL));
    char rid[40];
    snprintf(rid, sizeof(rid), "%s", jstr(&r, "request_id", NULL));
    resp_free(&r);

    /* read-your-writes: the token fence waits for that offset */
    snprintf(path, sizeof(path), "/v1/buckets/rwx/objects/k?consistency=token&token=%s", token);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "L");
    resp_free(&r);

    snprintf(path, sizeof(path), "/v1/writes/%s", token);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "status", NULL), "ok");
    assert_string_equal(jstr(&r, "code", NULL), "OK");
    assert_string_equal(jstr(&r, "request_id", NULL), rid);
    assert_string_equal(jstr(&r, "token", NULL), token);
    assert_string_equal(jstr(&r, "etag", NULL), "L");
    assert_string_equal(jstr(&r, "version_id", NULL), "null");
    resp_free(&r);

    /* a rejected write's outcome */
    req(e, "PUT", "/v1/buckets/gone/objects/k?ack=logged", "{}", NULL, &r);
    assert_int_equal(r.status, 200);
    snprintf(path, sizeof(path), "/v1/writes/%s", jstr(&r, "token", NULL));
    resp_free(&r);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "status", NULL), "rejected");
    assert_string_equal(jstr(&r, "code", NULL), "NoSuchBucket");
    resp_free(&r);

    /* strong (default): a write acked as logged is visible to the next read */
    for (int i = 0; i < 5; i++) {
        char body[64];
        snprintf(body, sizeof(body), "{\"etag\":\"s%d\"}", i);
        expect(e, "PUT", "/v1/buckets/rwx/objects/s?ack=logged", body, 200);
        req(e, "GET", "/v1/buckets/rwx/objects/s", NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        snprintf(body, sizeof(body), "s%d", i);
        assert_string_equal(jstr(&r, "etag", NULL), body);
        resp_free(&r);
    }
    const char *hc[] = {"X-Objlog-Consistency: strong", NULL};
    req(e, "GET", "/v1/buckets/rwx/objects/s", NULL, hc, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(header(&r, "X-Objlog-Applied", h, sizeof(h)));
    resp_free(&r);

    req(e, "GET", "/v1/buckets/rwx/objects/k?consistency=eventual", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(header(&r, "X-Objlog-Applied", h, sizeof(h)));
    resp_free(&r);

    /* a token from the future: bounded wait, then 503 with the lag */
    req(e, "GET", "/v1/buckets/rwx/objects/k?consistency=token&token=0.999999&timeout_ms=150",
        NULL, NULL, &r);
    assert_error(&r, 503, "SlowDown");
    assert_string_equal(header(&r, "Retry-After", h, sizeof(h)), "1");
    assert_true(json_integer_value(json_object_get(json_object_get(r.json, "error"), "lag")) > 0);
    resp_free(&r);
    req(e, "GET", "/v1/writes/0.999999?timeout_ms=100", NULL, NULL, &r);
    assert_error(&r, 503, "SlowDown");
    json_t *err = json_object_get(r.json, "error");
    assert_true(json_is_false(json_object_get(err, "stopped")));
    assert_int_equal(json_integer_value(json_object_get(err, "required")), 1000000);
    assert_non_null(strstr(jstr(&r, "error", "message"),
                           "partition 0 has not applied offset 999999 yet (lag "));
    resp_free(&r);
}

/* 900 events of 8 KB on partition 2 before the view starts: the mock
 * broker keeps about 5 MB per partition, so the log start moves past 0. */
static void truncate_partition_2(const char *bs) {
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bs, err, sizeof(err));
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(rk);
    static char pad[8192];
    memset(pad, 'x', sizeof(pad));
    for (int i = 0; i < 900; i++)
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("objlog.events"),
                                           RD_KAFKA_V_PARTITION(2),
                                           RD_KAFKA_V_VALUE(pad, sizeof(pad)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                           RD_KAFKA_V_END), 0);
    assert_int_equal(rd_kafka_flush(rk, 30000), 0);
    int64_t lo = 0, hi = 0;
    assert_int_equal(rd_kafka_query_watermark_offsets(rk, "objlog.events", 2, &lo,
                                                      &hi, 5000), 0);
    assert_true(lo > 0);
    rd_kafka_destroy(rk);
}

/* A partition whose log lost events the view had not applied stops for
 * good: a client waiting on it (/v1/writes, /v1/outcomes, a token read)
 * gets 503 at once with the partition's error and "stopped": true, so it
 * knows retrying cannot help (objlog bench stops waiting on it). */
static void test_stopped_partition_answers(void **state) {
    (void)state;
    env *e = env_start_conf5(0, 2, 0, 0, truncate_partition_2);
    assert_non_null(e);
    assert_int_equal(objlog_materializer_wait_applied(e->m, 2, 0, 10000), -1);
    const char *paths[] = {"/v1/writes/2.899?timeout_ms=5000",
                           "/v1/outcomes?partition=2&from=899&timeout_ms=5000",
                           "/v1/writes/2.0?timeout_ms=5000"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
        resp r;
        req(e, "GET", paths[i], NULL, NULL, &r);
        assert_error(&r, 503, "SlowDown");
        json_t *err = json_object_get(r.json, "error");
        assert_true(json_is_true(json_object_get(err, "stopped")));
        assert_int_equal(json_integer_value(json_object_get(err, "partition")), 2);
        assert_int_equal(json_integer_value(json_object_get(err, "applied")), 0);
        assert_non_null(strstr(jstr(&r, "error", "message"),
                               "partition 2 is stopped: partition 2: log start moved "
                               "past applied offset 0 (log now starts at "));
        resp_free(&r);
    }
    env_stop(e);
}

/* With a slow materializer: a write whose outcome does not arrive within
 * timeout_ms answers 503 SlowDown with its request id (safe to retry), a
 * strong read 503 with the lag; both with Retry-After. The same write then
 * completes, and a retry with the same request id is deduplicated. */
static void test_slow_apply(void **state) {
    (void)state;
    env *e = env_start(700);
    assert_non_null(e);
    resp r;
    char h[64], rid[40], hdr[80], path[256];
    req(e, "PUT", "/v1/buckets/slow?timeout_ms=5000", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/slow/objects/k?timeout_ms=50", "{\"etag\":\"x\"}", NULL, &r);
    assert_error(&r, 503, "SlowDown");
    assert_string_equal(header(&r, "Retry-After", h, sizeof(h)), "1");
    snprintf(rid, sizeof(rid), "%s", jstr(&r, "error", "request_id"));
    assert_int_equal(strlen(rid), 32);
    snprintf(path, sizeof(path), "/v1/writes/%s?timeout_ms=5000", jstr(&r, "error", "token"));
    resp_free(&r);
    req(e, "GET", "/v1/buckets/slow/objects/k?timeout_ms=0", NULL, NULL, &r);
    assert_error(&r, 503, "SlowDown");
    resp_free(&r);

    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "request_id", NULL), rid);
    assert_string_equal(jstr(&r, "code", NULL), "OK");
    resp_free(&r);

    snprintf(hdr, sizeof(hdr), "X-Objlog-Request-Id: %s", rid);
    const char *hs[] = {hdr, NULL};
    req(e, "PUT", "/v1/buckets/slow/objects/k?timeout_ms=5000", "{\"etag\":\"x\"}", hs, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "request_id", NULL), rid);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/slow/objects/k?timeout_ms=5000", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    env_stop(e);
}

/* Several clients at once on their own connections (spread over the
 * workers): every write answered once, every read sees it. */
typedef struct client_arg {
    env *e;
    int id;
    int ok;
} client_arg;

static void *client_main(void *p) {
    client_arg *a = p;
    env mine = *a->e;
    mine.curl = curl_easy_init();
    for (int i = 0; i < 15; i++) {
        char path[128], body[64], etag[32];
        resp r;
        snprintf(path, sizeof(path), "/v1/buckets/busy/objects/c%d/k%02d", a->id, i);
        snprintf(etag, sizeof(etag), "%d-%d", a->id, i);
        snprintf(body, sizeof(body), "{\"etag\":\"%s\"}", etag);
        req(&mine, "PUT", path, body, NULL, &r);
        a->ok += r.status == 200;
        resp_free(&r);
        req(&mine, "GET", path, NULL, NULL, &r);
        a->ok += r.status == 200 && jstr(&r, "etag", NULL) &&
                 strcmp(jstr(&r, "etag", NULL), etag) == 0;
        resp_free(&r);
    }
    curl_easy_cleanup(mine.curl);
    return NULL;
}

static void test_concurrent_clients(void **state) {
    env *e = *state;
    pthread_t th[6];
    client_arg args[6];
    make_bucket(e, "busy", NULL);
    for (int i = 0; i < 6; i++) {
        args[i] = (client_arg){.e = e, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &args[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].ok, 30);
    }
    resp r;
    req(e, "GET", "/v1/buckets/busy/objects?delimiter=/", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    char got[256];
    names(json_object_get(r.json, "common_prefixes"), got, sizeof(got));
    assert_string_equal(got, "c0/,c1/,c2/,c3/,c4/,c5/");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/busy/objects", NULL, NULL, &r);
    assert_int_equal(json_integer_value(json_object_get(r.json, "key_count")), 90);
    resp_free(&r);
}

/* ------------------------------------------------- ListObjectVersions */

/* One listed version as "key:version_id[L][M]" (L latest, M marker), or
 * "[prefix]" for a common prefix, in key order (the two arrays merged, as
 * S3 keeps them apart too); appended to out. */
static void versions_items(const resp *r, char *out, size_t n) {
    size_t o = strlen(out), i = 0, j = 0;
    json_t *vs = json_object_get(r->json, "versions");
    json_t *cps = json_object_get(r->json, "common_prefixes");
    while (i < json_array_size(vs) || j < json_array_size(cps)) {
        json_t *v = json_array_get(vs, i);
        const char *key = json_string_value(json_object_get(v, "key"));
        const char *cp = json_string_value(json_array_get(cps, j));
        if (key && (!cp || strcmp(key, cp) < 0)) {
            o += (size_t)snprintf(out + o, n - o, "%s%s:%s%s%s", o ? "," : "", key,
                                  json_string_value(json_object_get(v, "version_id")),
                                  json_is_true(json_object_get(v, "is_latest")) ? "L" : "",
                                  json_is_true(json_object_get(v, "delete_marker")) ? "M" : "");
            i++;
        } else {
            o += (size_t)snprintf(out + o, n - o, "%s[%s]", o ? "," : "", cp);
            j++;
        }
    }
}

/* Walks ListObjectVersions pages of max_keys; returns the page count and
 * the items joined in out; sizes[i] = items on page i. */
static int versions_walk(env *e, const char *bucket, const char *query, int max_keys,
                         char *out, size_t n, int *sizes) {
    char km[1024] = "", vm[64] = "", path[4096];
    int pages = 0;
    out[0] = '\0';
    for (;;) {
        resp r;
        char *ekm = esc(km, strlen(km));
        snprintf(path, sizeof(path), "/v1/buckets/%s/versions?max_keys=%d%s%s%s%s%s",
                 bucket, max_keys, query, km[0] ? "&key_marker=" : "", ekm,
                 vm[0] ? "&version_id_marker=" : "", vm);
        free(ekm);
        req(e, "GET", path, NULL, NULL, &r);
        if (r.status != 200)
            print_error("%s: %s\n", path, r.body);
        assert_int_equal(r.status, 200);
        size_t items = json_array_size(json_object_get(r.json, "versions")) +
                       json_array_size(json_object_get(r.json, "common_prefixes"));
        assert_true(items <= (size_t)max_keys);
        if (sizes)
            sizes[pages] = (int)items;
        pages++;
        versions_items(&r, out, n);
        if (!json_is_true(json_object_get(r.json, "is_truncated"))) {
            assert_null(json_object_get(r.json, "next_key_marker"));
            resp_free(&r);
            return pages;
        }
        assert_int_equal(items, max_keys);
        snprintf(km, sizeof(km), "%s", jstr(&r, "next_key_marker", NULL));
        snprintf(vm, sizeof(vm), "%s", jstr(&r, "next_version_id_marker", NULL));
        resp_free(&r);
        assert_true(pages < 100);
    }
}

/* PUT with the version id it created copied into vid. */
static void put_version(env *e, const char *bucket, const char *key, char *vid) {
    resp r;
    char path[512];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    req(e, "PUT", path, "{\"size\":3,\"etag\":\"x\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    snprintf(vid, 32, "%s", jstr(&r, "version_id", NULL));
    resp_free(&r);
}

static void del_version(env *e, const char *bucket, const char *key, char *vid) {
    resp r;
    char path[512];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    req(e, "DELETE", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_true(json_object_get(r.json, "delete_marker")));
    snprintf(vid, 32, "%s", jstr(&r, "version_id", NULL));
    resp_free(&r);
}

/* S3 ListObjectVersions: versions of a key newest first, is_latest on the
 * newest (even a delete marker), markers flagged, and key_marker +
 * version_id_marker pagination that neither repeats nor skips inside one
 * key's versions, for every page size. */
static void test_list_versions(void **state) {
    env *e = *state;
    char k[7][32], a[32], zv[32], zm[32], want[2048], got[2048];
    int sizes[64];
    make_bucket(e, "lov", "{\"versioning\":\"Enabled\"}");
    put_version(e, "lov", "a", a);
    for (int i = 0; i < 7; i++)
        put_version(e, "lov", "k", k[i]);
    put_version(e, "lov", "z", zv);
    del_version(e, "lov", "z", zm);
    size_t o = (size_t)snprintf(want, sizeof(want), "a:%sL", a);
    for (int i = 6; i >= 0; i--)
        o += (size_t)snprintf(want + o, sizeof(want) - o, ",k:%s%s", k[i], i == 6 ? "L" : "");
    snprintf(want + o, sizeof(want) - o, ",z:%sLM,z:%s", zm, zv);

    /* one page, then every page size: the same sequence */
    assert_int_equal(versions_walk(e, "lov", "", 1000, got, sizeof(got), NULL), 1);
    assert_string_equal(got, want);
    for (int mk = 1; mk <= 11; mk++) {
        int pages = versions_walk(e, "lov", "", mk, got, sizeof(got), sizes);
        assert_string_equal(got, want);
        /* a full last page is not truncated: nothing follows it */
        assert_int_equal(pages, (10 + mk - 1) / mk);
    }

    /* one key with 7 versions, max_keys=3: pages of 3, 3, 1 with exact ids */
    int pages = versions_walk(e, "lov", "&prefix=k", 3, got, sizeof(got), sizes);
    assert_int_equal(pages, 3);
    assert_int_equal(sizes[0], 3);
    assert_int_equal(sizes[1], 3);
    assert_int_equal(sizes[2], 1);
    snprintf(want, sizeof(want), "k:%sL,k:%s,k:%s,k:%s,k:%s,k:%s,k:%s", k[6], k[5], k[4],
             k[3], k[2], k[1], k[0]);
    assert_string_equal(got, want);

    /* the page JSON itself */
    resp r;
    req(e, "GET", "/v1/buckets/lov/versions?prefix=k&max_keys=3", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "bucket", NULL), "lov");
    assert_string_equal(jstr(&r, "prefix", NULL), "k");
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_keys")), 3);
    assert_true(json_is_true(json_object_get(r.json, "is_truncated")));
    assert_string_equal(jstr(&r, "next_key_marker", NULL), "k");
    assert_string_equal(jstr(&r, "next_version_id_marker", NULL), k[4]);
    json_t *v0 = json_array_get(json_object_get(r.json, "versions"), 0);
    assert_string_equal(json_string_value(json_object_get(v0, "etag")), "x");
    assert_int_equal(json_integer_value(json_object_get(v0, "size")), 3);
    assert_string_equal(json_string_value(json_object_get(v0, "storage_class")), "STANDARD");
    assert_int_equal(strlen(json_string_value(json_object_get(v0, "last_modified"))), 24);
    assert_false(json_is_true(json_object_get(v0, "delete_marker")));
    resp_free(&r);

    /* key_marker alone: after every version of that key */
    char path[256];
    req(e, "GET", "/v1/buckets/lov/versions?key_marker=k", NULL, NULL, &r);
    got[0] = '\0';
    versions_items(&r, got, sizeof(got));
    snprintf(want, sizeof(want), "z:%sLM,z:%s", zm, zv);
    assert_string_equal(got, want);
    assert_string_equal(jstr(&r, "key_marker", NULL), "k");
    resp_free(&r);
    /* both markers: after that version; its older ones follow */
    snprintf(path, sizeof(path), "/v1/buckets/lov/versions?key_marker=k&version_id_marker=%s&max_keys=2",
             k[2]);
    req(e, "GET", path, NULL, NULL, &r);
    got[0] = '\0';
    versions_items(&r, got, sizeof(got));
    snprintf(want, sizeof(want), "k:%s,k:%s", k[1], k[0]);
    assert_string_equal(got, want);
    resp_free(&r);

    /* a version deleted between pages still names its place */
    snprintf(path, sizeof(path), "/v1/buckets/lov/objects/k?version_id=%s", k[3]);
    expect(e, "DELETE", path, NULL, 200);
    snprintf(path, sizeof(path), "/v1/buckets/lov/versions?key_marker=k&version_id_marker=%s&max_keys=1",
             k[3]);
    req(e, "GET", path, NULL, NULL, &r);
    got[0] = '\0';
    versions_items(&r, got, sizeof(got));
    snprintf(want, sizeof(want), "k:%s", k[2]);
    assert_string_equal(got, want);
    resp_free(&r);

    /* deleting the newest version makes the next one latest */
    snprintf(path, sizeof(path), "/v1/buckets/lov/objects/k?version_id=%s", k[6]);
    expect(e, "DELETE", path, NULL, 200);
    snprintf(path, sizeof(path), "/v1/buckets/lov/versions?key_marker=a&max_keys=1");
    req(e, "GET", path, NULL, NULL, &r);
    got[0] = '\0';
    versions_items(&r, got, sizeof(got));
    snprintf(want, sizeof(want), "k:%sL", k[5]);
    assert_string_equal(got, want);
    resp_free(&r);
}

/* A null version_id_marker whose version was deleted while the client
 * paged (a cleanup deleting as it lists) resumes at its key, not 400. */
static void test_list_versions_null_marker_deleted(void **state) {
    env *e = *state;
    char v[3][32], got[512];
    make_bucket(e, "lovnull", NULL);
    put_version(e, "lovnull", "a", v[0]);
    put_version(e, "lovnull", "b", v[1]);
    put_version(e, "lovnull", "c", v[2]);
    assert_string_equal(v[0], "null");
    resp r;
    req(e, "GET", "/v1/buckets/lovnull/versions?max_keys=1", NULL, NULL, &r);
    assert_string_equal(jstr(&r, "next_key_marker", NULL), "a");
    assert_string_equal(jstr(&r, "next_version_id_marker", NULL), "null");
    resp_free(&r);
    req(e, "DELETE", "/v1/buckets/lovnull/objects/a", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/lovnull/versions?max_keys=1&key_marker=a&version_id_marker=null",
        NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    got[0] = '\0';
    versions_items(&r, got, sizeof(got));
    assert_string_equal(got, "b:nullL");
    resp_free(&r);
    /* A version id that never was is still refused. */
    req(e, "GET", "/v1/buckets/lovnull/versions?key_marker=b&version_id_marker=zz", NULL,
        NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
}

/* Delimiter: common prefixes count toward max_keys, come once, and a
 * next_key_marker that is a prefix resumes after everything under it. */
static void test_list_versions_delimiter(void **state) {
    env *e = *state;
    char v[8][32], got[2048], want[2048];
    make_bucket(e, "lovd", "{\"versioning\":\"Enabled\"}");
    put_version(e, "lovd", "d/1", v[0]);
    put_version(e, "lovd", "d/2", v[1]);
    put_version(e, "lovd", "d/2", v[2]);
    put_version(e, "lovd", "e", v[3]);
    put_version(e, "lovd", "e", v[4]);
    put_version(e, "lovd", "f/x", v[5]);
    del_version(e, "lovd", "g", v[6]); /* a marker on a key that never existed */
    snprintf(want, sizeof(want), "[d/],e:%sL,e:%s,[f/],g:%sLM", v[4], v[3], v[6]);
    for (int mk = 1; mk <= 6; mk++) {
        versions_walk(e, "lovd", "&delimiter=/", mk, got, sizeof(got), NULL);
        assert_string_equal(got, want);
    }
    versions_walk(e, "lovd", "&prefix=d/&delimiter=/", 1, got, sizeof(got), NULL);
    snprintf(want, sizeof(want), "d/1:%sL,d/2:%sL,d/2:%s", v[0], v[2], v[1]);
    assert_string_equal(got, want);
    resp r;
    req(e, "GET", "/v1/buckets/lovd/versions?delimiter=/&max_keys=1", NULL, NULL, &r);
    assert_string_equal(jstr(&r, "next_key_marker", NULL), "d/");
    assert_string_equal(jstr(&r, "next_version_id_marker", NULL), "");
    assert_string_equal(jstr(&r, "delimiter", NULL), "/");
    resp_free(&r);
    /* a plain LIST shows none of the marker-only key g */
    req(e, "GET", "/v1/buckets/lovd/objects", NULL, NULL, &r);
    names(json_object_get(r.json, "objects"), got, sizeof(got));
    assert_string_equal(got, "d/1,d/2,e,f/x");
    resp_free(&r);

    struct { const char *path; long status; const char *code; } rows[] = {
        {"/v1/buckets/lovd/versions?max_keys=1001", 400, "InvalidArgument"},
        {"/v1/buckets/lovd/versions?max_keys=-1", 400, "InvalidArgument"},
        {"/v1/buckets/lovd/versions?max_keys=x", 400, "InvalidArgument"},
        {"/v1/buckets/lovd/versions?version_id_marker=0000000000000001", 400,
         "InvalidArgument"},
        {"/v1/buckets/lovd/versions?key_marker=e&version_id_marker=zz", 400,
         "InvalidArgument"},
        {"/v1/buckets/nosuch/versions", 404, "NoSuchBucket"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        req(e, "GET", rows[i].path, NULL, NULL, &r);
        assert_error(&r, rows[i].status, rows[i].code);
        resp_free(&r);
    }
    req(e, "GET", "/v1/buckets/lovd/versions?max_keys=0", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "versions")), 0);
    assert_false(json_is_true(json_object_get(r.json, "is_truncated")));
    resp_free(&r);
}

/* GET/HEAD of delete markers, latest and by version id (S3). */
static void test_delete_marker_reads(void **state) {
    env *e = *state;
    char v1[32], m[32], path[256], h[64];
    resp r;
    make_bucket(e, "dmk", "{\"versioning\":\"Enabled\"}");
    put_version(e, "dmk", "k", v1);
    del_version(e, "dmk", "k", m);
    req(e, "HEAD", "/v1/buckets/dmk/objects/k", NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    assert_int_equal(r.body_len, 0);
    assert_string_equal(header(&r, "x-amz-delete-marker", h, sizeof(h)), "true");
    assert_string_equal(header(&r, "X-Objlog-Version-Id", h, sizeof(h)), m);
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/dmk/objects/k?version_id=%s", m);
    req(e, "HEAD", path, NULL, NULL, &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "x-amz-delete-marker", h, sizeof(h)), "true");
    resp_free(&r);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 405, "MethodNotAllowed");
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/dmk/objects/k?version_id=%s", v1);
    req(e, "HEAD", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(header(&r, "x-amz-delete-marker", h, sizeof(h)));
    resp_free(&r);
    /* Suspended: DELETE adds a null marker, addressable as "null" */
    expect(e, "PUT", "/v1/buckets/dmk/versioning", "{\"status\":\"Suspended\"}", 200);
    req(e, "DELETE", "/v1/buckets/dmk/objects/k", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "version_id", NULL), "null");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/dmk/objects/k?version_id=null", NULL, NULL, &r);
    assert_error(&r, 405, "MethodNotAllowed");
    resp_free(&r);
    char got[512], want[512];
    versions_walk(e, "dmk", "", 1, got, sizeof(got), NULL);
    snprintf(want, sizeof(want), "k:nullLM,k:%sM,k:%s", m, v1);
    assert_string_equal(got, want);
}

/* Bucket settings, versioning changes, version cap setting, delete. */
static void test_bucket_routes(void **state) {
    env *e = *state;
    resp r;
    make_bucket(e, "settings", "{\"tenant\":\"acme\",\"max_versions\":5}");
    req(e, "GET", "/v1/buckets/settings", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "name", NULL), "settings");
    assert_string_equal(jstr(&r, "tenant", NULL), "acme");
    assert_string_equal(jstr(&r, "versioning", NULL), "");
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_versions")), 5);
    assert_int_equal(strlen(jstr(&r, "created", NULL)), 24);
    resp_free(&r);
    make_bucket(e, "defaults", NULL);
    req(e, "GET", "/v1/buckets/defaults", NULL, NULL, &r);
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_versions")), 100000);
    assert_string_equal(jstr(&r, "tenant", NULL), "");
    resp_free(&r);

    static const char *const states[] = {"Enabled", "Suspended", "Enabled", NULL};
    for (int i = 0; states[i]; i++) {
        char body[64];
        snprintf(body, sizeof(body), "{\"status\":\"%s\"}", states[i]);
        expect(e, "PUT", "/v1/buckets/settings/versioning", body, 200);
        req(e, "GET", "/v1/buckets/settings", NULL, NULL, &r);
        assert_string_equal(jstr(&r, "versioning", NULL), states[i]);
        resp_free(&r);
    }

    struct { const char *method, *path, *body; long status; const char *code; } rows[] = {
        {"PUT", "/v1/buckets/settings/versioning", "{\"status\":\"\"}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/settings/versioning", "{\"status\":\"Disabled\"}", 400,
         "InvalidArgument"},
        {"PUT", "/v1/buckets/settings/versioning", "{}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/settings/versioning", "", 400, "MalformedJSON"},
        {"PUT", "/v1/buckets/settings/versioning", "nope", 400, "MalformedJSON"},
        {"GET", "/v1/buckets/settings/versioning", NULL, 405, "MethodNotAllowed"},
        {"PUT", "/v1/buckets/nosuch/versioning", "{\"status\":\"Enabled\"}", 404, "NoSuchBucket"},
        {"PUT", "/v1/buckets/capped", "{\"max_versions\":0}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/capped", "{\"max_versions\":-3}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/capped", "{\"max_versions\":\"9\"}", 400, "InvalidArgument"},
        {"GET", "/v1/buckets/nosuch", NULL, 404, "NoSuchBucket"},
        {"DELETE", "/v1/buckets/nosuch", NULL, 404, "NoSuchBucket"},
        {"POST", "/v1/buckets/settings", NULL, 405, "MethodNotAllowed"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        req(e, rows[i].method, rows[i].path, rows[i].body, NULL, &r);
        if (r.status != rows[i].status)
            print_error("row %zu: %s %s\n", i, rows[i].method, rows[i].path);
        assert_error(&r, rows[i].status, rows[i].code);
        resp_free(&r);
    }

    /* delete only when empty: versions and markers count */
    char v[32], m[32], path[256];
    put_version(e, "settings", "k", v);
    del_version(e, "settings", "k", m);
    req(e, "DELETE", "/v1/buckets/settings", NULL, NULL, &r);
    assert_error(&r, 409, "BucketNotEmpty");
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/settings/objects/k?version_id=%s", v);
    expect(e, "DELETE", path, NULL, 200);
    req(e, "DELETE", "/v1/buckets/settings", NULL, NULL, &r);
    assert_error(&r, 409, "BucketNotEmpty"); /* the marker is still there */
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/settings/objects/k?version_id=%s", m);
    expect(e, "DELETE", path, NULL, 200);
    req(e, "DELETE", "/v1/buckets/settings", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/settings", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
    /* recreate: fresh settings */
    make_bucket(e, "settings", NULL);
    req(e, "GET", "/v1/buckets/settings", NULL, NULL, &r);
    assert_string_equal(jstr(&r, "versioning", NULL), "");
    assert_string_equal(jstr(&r, "tenant", NULL), "");
    resp_free(&r);
}

/* ---------------------------------------------------------- multipart */

/* POST an upload of key; its id into id. */
static void create_upload(env *e, const char *bucket, const char *key, char *id) {
    resp r;
    char path[256], body[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/uploads", bucket);
    snprintf(body, sizeof(body), "{\"key\":\"%s\",\"content_type\":\"text/plain\"}", key);
    req(e, "POST", path, body, NULL, &r);
    if (r.status != 200)
        print_error("create upload: %s\n", r.body);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "key", NULL), key);
    snprintf(id, 32, "%s", jstr(&r, "upload_id", NULL));
    assert_int_equal(strlen(id), 16);
    resp_free(&r);
}

static void upload_part(env *e, const char *bucket, const char *key, const char *id,
                        int n, long long size, const char *etag) {
    char path[256], body[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/uploads/%s/parts/%d?key=%s", bucket, id,
             n, key);
    snprintf(body, sizeof(body), "{\"size\":%lld,\"etag\":\"%s\",\"blob_id\":\"b%d\"}",
             size, etag, n);
    expect(e, "PUT", path, body, 200);
}

#define MIB5 5242880LL
static const char *const etags[] = {"ffc88b4ca90a355f8ddba6b2c3b2af5c",
                                    "d067a0fa9dc61a6e7195ca99696b5a89",
                                    "49dcd91231f801159e893fb5c6674985"};

static void test_multipart(void **state) {
    env *e = *state;
    resp r;
    char id[32], id2[32], id3[32], path[512], body[1024], got[1024];
    make_bucket(e, "mpu", "{\"versioning\":\"Enabled\"}");
    create_upload(e, "mpu", "big", id);
    upload_part(e, "mpu", "big", id, 2, MIB5, "0000000000000000000000000000000f");
    upload_part(e, "mpu", "big", id, 1, MIB5, etags[0]);
    upload_part(e, "mpu", "big", id, 3, 10, etags[2]);
    upload_part(e, "mpu", "big", id, 2, MIB5, etags[1]); /* re-upload replaces */

    /* list parts, paginated */
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s/parts?key=big&max_parts=2", id);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *parts = json_object_get(r.json, "parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 0), "part_number")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 1), "part_number")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 1), "etag")),
                        etags[1]);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 1), "size")), MIB5);
    assert_true(json_is_true(json_object_get(r.json, "is_truncated")));
    assert_int_equal(json_integer_value(json_object_get(r.json, "next_part_number_marker")), 2);
    assert_string_equal(jstr(&r, "key", NULL), "big");
    assert_string_equal(jstr(&r, "upload_id", NULL), id);
    resp_free(&r);
    snprintf(path, sizeof(path),
             "/v1/buckets/mpu/uploads/%s/parts?key=big&max_parts=2&part_number_marker=2", id);
    req(e, "GET", path, NULL, NULL, &r);
    parts = json_object_get(r.json, "parts");
    assert_int_equal(json_array_size(parts), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 0), "part_number")), 3);
    assert_false(json_is_true(json_object_get(r.json, "is_truncated")));
    resp_free(&r);

    /* list uploads: by key, then initiation; markers; delimiter */
    create_upload(e, "mpu", "big", id2);
    create_upload(e, "mpu", "dir/x", id3);
    req(e, "GET", "/v1/buckets/mpu/uploads", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *ups = json_object_get(r.json, "uploads");
    assert_int_equal(json_array_size(ups), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 0), "upload_id")), id);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 1), "upload_id")), id2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 2), "key")), "dir/x");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/mpu/uploads?max_uploads=1", NULL, NULL, &r);
    assert_true(json_is_true(json_object_get(r.json, "is_truncated")));
    assert_string_equal(jstr(&r, "next_key_marker", NULL), "big");
    assert_string_equal(jstr(&r, "next_upload_id_marker", NULL), id);
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads?key_marker=big&upload_id_marker=%s", id);
    req(e, "GET", path, NULL, NULL, &r);
    ups = json_object_get(r.json, "uploads");
    assert_int_equal(json_array_size(ups), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 0), "upload_id")), id2);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/mpu/uploads?key_marker=big", NULL, NULL, &r);
    ups = json_object_get(r.json, "uploads");
    assert_int_equal(json_array_size(ups), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 0), "key")), "dir/x");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/mpu/uploads?delimiter=/", NULL, NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.json, "uploads")), 2);
    names(json_object_get(r.json, "common_prefixes"), got, sizeof(got));
    assert_string_equal(got, "dir/");
    resp_free(&r);

    /* complete: S3's multipart etag, size = sum of parts */
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s/complete?key=big", id);
    snprintf(body, sizeof(body),
             "{\"parts\":[{\"part_number\":1,\"etag\":\"%s\"},{\"part_number\":2,"
             "\"etag\":\"\\\"%s\\\"\"},{\"part_number\":3,\"etag\":\"%s\"}]}",
             etags[0], etags[1], etags[2]);
    req(e, "POST", path, body, NULL, &r);
    if (r.status != 200)
        print_error("complete: %s\n", r.body);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "5e9583dc343a55b829d3b99070a10015-3");
    assert_int_equal(strlen(jstr(&r, "version_id", NULL)), 16);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/mpu/objects/big", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "5e9583dc343a55b829d3b99070a10015-3");
    assert_int_equal(json_integer_value(json_object_get(r.json, "size")), 2 * MIB5 + 10);
    assert_string_equal(jstr(&r, "content_type", NULL), "text/plain");
    resp_free(&r);
    /* completed: gone from the lists; a second complete is NoSuchUpload */
    req(e, "POST", path, body, NULL, &r);
    assert_error(&r, 404, "NoSuchUpload");
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s/parts?key=big", id);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchUpload");
    resp_free(&r);

    /* abort -> NoSuchUpload after */
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s?key=big", id2);
    expect(e, "DELETE", path, NULL, 200);
    req(e, "DELETE", path, NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchUpload");
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s/parts/1?key=big", id2);
    req(e, "PUT", path, "{\"size\":1,\"etag\":\"x\"}", NULL, &r);
    assert_error(&r, 400, "InvalidArgument"); /* not an MD5: refused up front */
    assert_non_null(strstr(r.body, "32 hex digits"));
    resp_free(&r);
    req(e, "PUT", path, "{\"size\":1,\"etag\":\"0123456789abcdef0123456789abcdef\"}",
        NULL, &r);
    assert_error(&r, 404, "NoSuchUpload");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/mpu/uploads", NULL, NULL, &r);
    ups = json_object_get(r.json, "uploads");
    assert_int_equal(json_array_size(ups), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ups, 0), "upload_id")), id3);
    resp_free(&r);

    /* complete rejected: order, unknown part, too small */
    char id4[32];
    create_upload(e, "mpu", "small", id4);
    upload_part(e, "mpu", "small", id4, 1, 100, etags[0]);
    upload_part(e, "mpu", "small", id4, 2, 100, etags[1]);
    snprintf(path, sizeof(path), "/v1/buckets/mpu/uploads/%s/complete?key=small", id4);
    struct { const char *body; long status; const char *code; } rows[] = {
        {"{\"parts\":[{\"part_number\":2,\"etag\":\"d067a0fa9dc61a6e7195ca99696b5a89\"},"
         "{\"part_number\":1,\"etag\":\"ffc88b4ca90a355f8ddba6b2c3b2af5c\"}]}",
         400, "InvalidPartOrder"},
        {"{\"parts\":[{\"part_number\":1,\"etag\":\"d067a0fa9dc61a6e7195ca99696b5a89\"}]}",
         400, "InvalidPart"},
        {"{\"parts\":[{\"part_number\":1,\"etag\":\"ffc88b4ca90a355f8ddba6b2c3b2af5c\"},"
         "{\"part_number\":2,\"etag\":\"d067a0fa9dc61a6e7195ca99696b5a89\"}]}",
         400, "EntityTooSmall"},
        {"{\"parts\":[]}", 400, "InvalidArgument"},
        {"{\"parts\":[{\"part_number\":0,\"etag\":\"x\"}]}", 400, "InvalidArgument"},
        {"nope", 400, "MalformedJSON"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        req(e, "POST", path, rows[i].body, NULL, &r);
        if (r.status != rows[i].status)
            print_error("complete row %zu: %s\n", i, r.body);
        assert_error(&r, rows[i].status, rows[i].code);
        resp_free(&r);
    }
    /* the last part alone may be small */
    snprintf(body, sizeof(body), "{\"parts\":[{\"part_number\":2,\"etag\":\"%s\"}]}", etags[1]);
    req(e, "POST", path, body, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);

    struct { const char *method, *path, *body; long status; const char *code; } bad[] = {
        {"PUT", "/v1/buckets/mpu/uploads/0000000000000001/parts/1", "{}", 400, "InvalidArgument"},
        {"PUT", "/v1/buckets/mpu/uploads/0000000000000001/parts/0?key=k", "{}", 400,
         "InvalidArgument"},
        {"PUT", "/v1/buckets/mpu/uploads/0000000000000001/parts/10001?key=k", "{}", 400,
         "InvalidArgument"},
        {"GET", "/v1/buckets/mpu/uploads/0000000000000001/parts", NULL, 400, "InvalidArgument"},
        {"GET", "/v1/buckets/mpu/uploads/0000000000000001/parts?key=k", NULL, 404, "NoSuchUpload"},
        {"GET", "/v1/buckets/mpu/uploads?max_uploads=1001", NULL, 400, "InvalidArgument"},
        {"POST", "/v1/buckets/mpu/uploads", "{}", 400, "InvalidArgument"},
        {"POST", "/v1/buckets/nosuch/uploads", "{\"key\":\"k\"}", 404, "NoSuchBucket"},
        {"DELETE", "/v1/buckets/mpu/uploads/0000000000000001?key=k", NULL, 404, "NoSuchUpload"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req(e, bad[i].method, bad[i].path, bad[i].body, NULL, &r);
        if (r.status != bad[i].status)
            print_error("row %zu: %s %s: %s\n", i, bad[i].method, bad[i].path, r.body);
        assert_error(&r, bad[i].status, bad[i].code);
        resp_free(&r);
    }

    /* S3 DeleteBucket of a general purpose bucket: its in-progress uploads
     * go with it */
    make_bucket(e, "mp2", NULL);
    char id5[32];
    create_upload(e, "mp2", "k", id5);
    expect(e, "DELETE", "/v1/buckets/mp2", NULL, 200);
    snprintf(path, sizeof(path), "/v1/buckets/mp2/uploads/%s?key=k", id5);
    req(e, "DELETE", path, NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
    make_bucket(e, "mp2", NULL); /* a new bucket of the name has none */
    req(e, "GET", "/v1/buckets/mp2/uploads", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"uploads\":[]"));
    resp_free(&r);
}

/* The dedup window is measured in log time (Kafka timestamps), never the
 * wall clock: an event stamped 24 h + 1 s after a write, in the same
 * partition, trims that write's outcome, and /v1/writes then answers 410
 * OutcomeExpired instead of pretending the write never happened. */
static void test_writes_outcome_expired(void **state) {
    env *e = *state;
    make_bucket(e, "expire", NULL);
    resp r;
    req(e, "PUT", "/v1/buckets/expire/objects/k1", "{\"etag\":\"e1\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    char token[64], path[128];
    snprintf(token, sizeof(token), "%s", jstr(&r, "token", NULL));
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/writes/%s", token);
    expect(e, "GET", path, NULL, 200);

    /* A raw PutObject to the same partition, a day and a second later. */
    const rangemap *rm = objlog_materializer_rangemap(e->m);
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, "expire", 6, (const uint8_t *)"k2", 2);
    int32_t p = rangemap_partition(rm, rk.data, rk.len);
    uint8_t rid[16] = {0xE1, 0x71, 0x4E};
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    Objlog__PutObject put = OBJLOG__PUT_OBJECT__INIT;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    meta.etag = "e2";
    put.meta = &meta;
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = rangemap_epoch(rm);
    ev.bucket = "expire";
    ev.key.data = (uint8_t *)"k2";
    ev.key.len = 2;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &put;
    uint8_t buf[256];
    size_t n = objlog__event__pack(&ev, buf);
    char err[512];
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(kc, "bootstrap.servers",
                                       objlog_embedded_kafka_bootstrap(e->kafka), err,
                                       sizeof(err)), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk_p = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
    assert_non_null(rk_p);
    int64_t later = (int64_t)time(NULL) * 1000 + 24LL * 3600 * 1000 + 1000;
    assert_int_equal(rd_kafka_producev(rk_p, RD_KAFKA_V_TOPIC("objlog.events"),
                                       RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(rk.data, rk.len),
                                       RD_KAFKA_V_VALUE(buf, n), RD_KAFKA_V_TIMESTAMP(later),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rd_kafka_flush(rk_p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(rk_p);
    keybuf_free(&rk);

    /* A strong read of k2 waits until that event is applied. */
    expect(e, "GET", "/v1/buckets/expire/objects/k2", NULL, 200);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 410, "OutcomeExpired");
    resp_free(&r);
}

/* ------------------------------------------------- lag, readyz, metrics */

/* Value of the sample whose name{labels} is exactly series in a Prometheus
 * text body, or -1 when absent. */
static double metric(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *l = text; l && *l;) {
        if (strncmp(l, series, n) == 0 && l[n] == ' ')
            return strtod(l + n + 1, NULL);
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    return -1;
}

static double metric_of(env *e, const char *series) {
    resp r;
    req(e, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    double v = metric(r.body, series);
    resp_free(&r);
    return v;
}

static json_t *lag_part(const resp *r, int p) {
    return json_array_get(json_object_get(r->json, "partitions"), (size_t)p);
}

static long long jint(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    assert_true(json_is_integer(v));
    return (long long)json_integer_value(v);
}

static double jreal(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* Partition of a write from its token "P.off". */
static int token_partition(const resp *r) {
    const char *t = jstr(r, "token", NULL);
    assert_non_null(t);
    return atoi(t);
}

/* Caught up: /v1/lag gives applied == end for every partition, the sum of
 * applied offsets equals the events written, and /metrics counts outcomes
 * and requests exactly. */
static void test_lag_and_metrics(void **state) {
    (void)state;
    env *e = env_start(0);
    assert_non_null(e);
    resp r;
    make_bucket(e, "lagm", NULL);
    for (int i = 0; i < 5; i++)
        put_key(e, "lagm", "k", 1, "E");
    const char *inm[] = {"If-None-Match: *", NULL};
    req(e, "PUT", "/v1/buckets/lagm/objects/k", "{\"etag\":\"F\"}", inm, &r);
    assert_error(&r, 412, "PreconditionFailed");
    resp_free(&r);
    for (int i = 0; i < 3; i++)
        expect(e, "GET", "/healthz", NULL, 200);
    expect(e, "GET", "/v1/buckets/lagm/objects/k", NULL, 200);
    /* not a cluster node: /v1/cluster says so */
    req(e, "GET", "/v1/cluster", NULL, NULL, &r);
    assert_error(&r, 404, "NotACluster");
    resp_free(&r);

    req(e, "GET", "/v1/lag", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    long long sum = 0;
    for (int p = 0; p < 4; p++) {
        json_t *o = lag_part(&r, p);
        assert_int_equal(jint(o, "partition"), p);
        assert_int_equal(jint(o, "applied"), jint(o, "end"));
        assert_int_equal(jint(o, "lag_messages"), 0);
        assert_true(jreal(o, "lag_seconds") == 0.0);
        assert_string_equal(json_string_value(json_object_get(o, "state")), "running");
        assert_null(json_object_get(o, "error"));
        sum += jint(o, "applied");
    }
    assert_null(lag_part(&r, 4));
    assert_int_equal(sum, 7);
    assert_int_equal(jint(r.json, "max_lag_messages"), 0);
    assert_true(jreal(r.json, "max_lag_seconds") == 0.0);
    assert_int_equal(jint(r.json, "events_applied"), 7);
    assert_int_equal(jint(r.json, "dlq_events"), 0);
    resp_free(&r);

    req(e, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_true(json_object_get(r.json, "ready")));
    resp_free(&r);

    req(e, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    char ct[128];
    assert_string_equal(header(&r, "Content-Type", ct, sizeof(ct)),
                        "text/plain; version=0.0.4; charset=utf-8");
    static const char *const fams[] = {
        "objlog_partition_applied_offset gauge", "objlog_partition_end_offset gauge",
        "objlog_partition_lag_messages gauge", "objlog_partition_lag_seconds gauge",
        "objlog_partition_stopped gauge", "objlog_events_applied_total counter",
        "objlog_dlq_events_total counter", "objlog_fence_waits_total counter",
        "objlog_fence_timeouts_total counter",
        "objlog_list_offsets_requests_total counter",
        "objlog_http_requests_total counter",
        "objlog_http_request_duration_seconds histogram"};
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        char line[160];
        snprintf(line, sizeof(line), "\n# TYPE %s\n", fams[i]);
        if (!strstr(r.body, line))
            print_error("missing %s", line);
        assert_non_null(strstr(r.body, line));
    }
    const char *b = r.body;
    double sum_applied = 0;
    for (int p = 0; p < 4; p++) {
        char s1[96], s2[96], s3[96];
        snprintf(s1, sizeof(s1), "objlog_partition_applied_offset{partition=\"%d\"}", p);
        snprintf(s2, sizeof(s2), "objlog_partition_end_offset{partition=\"%d\"}", p);
        snprintf(s3, sizeof(s3), "objlog_partition_lag_messages{partition=\"%d\"}", p);
        assert_true(metric(b, s1) >= 0);
        assert_true(metric(b, s1) == metric(b, s2));
        assert_true(metric(b, s3) == 0);
        sum_applied += metric(b, s1);
    }
    assert_true(sum_applied == 7);
    assert_true(metric(b, "objlog_events_applied_total{outcome=\"OK\"}") == 6);
    assert_true(metric(b, "objlog_events_applied_total{outcome=\"PreconditionFailed\"}") == 1);
    assert_true(metric(b, "objlog_events_applied_total{outcome=\"NoSuchBucket\"}") == 0);
    assert_true(metric(b, "objlog_dlq_events_total") == 0);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"put_object\",method=\"PUT\",code=\"200\"}") == 5);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"put_object\",method=\"PUT\",code=\"412\"}") == 1);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"bucket\",method=\"PUT\",code=\"200\"}") == 1);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"healthz\",method=\"GET\",code=\"200\"}") == 3);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"get_object\",method=\"GET\",code=\"200\"}") == 1);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"lag\",method=\"GET\",code=\"200\"}") == 1);
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"readyz\",method=\"GET\",code=\"200\"}") == 1);
    /* the scrape itself is counted when it is answered, so not yet */
    assert_true(metric(b, "objlog_http_requests_total{api=\"json\",endpoint=\"metrics\",method=\"GET\",code=\"200\"}") == -1);
    assert_true(metric(b, "objlog_http_request_duration_seconds_count{api=\"json\",endpoint=\"put_object\",method=\"PUT\"}") == 6);
    assert_true(metric(b, "objlog_http_request_duration_seconds_bucket{api=\"json\",endpoint=\"put_object\",method=\"PUT\",le=\"+Inf\"}") == 6);
    assert_true(metric(b, "objlog_http_request_duration_seconds_sum{api=\"json\",endpoint=\"put_object\",method=\"PUT\"}") > 0);
    assert_true(metric(b, "objlog_http_request_duration_seconds_bucket{api=\"json\",endpoint=\"healthz\",method=\"GET\",le=\"10\"}") == 3);
    assert_true(metric(b, "objlog_fence_timeouts_total{mode=\"strong\"}") == 0);
    assert_true(metric(b, "objlog_fence_timeouts_total{mode=\"token\"}") == 0);
    /* the strong GET and the scrapes' end offsets: at least one each */
    assert_true(metric(b, "objlog_list_offsets_requests_total") >= 1);
    resp_free(&r);
    assert_true(metric_of(e, "objlog_http_requests_total{api=\"json\",endpoint=\"metrics\",method=\"GET\",code=\"200\"}") == 1);
    env_stop(e);
}

/* Under a slow materializer: lag in messages and seconds while the writes
 * wait, /readyz fails past its threshold, fences wait and time out (and
 * are counted), and everything returns to 0 / ready once applied. */
static void test_lag_slow_apply(void **state) {
    (void)state;
    env *e = env_start_conf(1500, 3, 1);
    assert_non_null(e);
    resp r;
    char name[96];
    req(e, "PUT", "/v1/buckets/lags?timeout_ms=5000", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    int bp = token_partition(&r);
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/lags/objects/k?timeout_ms=5000", "{\"etag\":\"0\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    int p = token_partition(&r);
    resp_free(&r);
    struct timespec gap = {0, 60 * 1000 * 1000};
    nanosleep(&gap, NULL);
    for (int i = 1; i <= 3; i++) {
        char body[32];
        snprintf(body, sizeof(body), "{\"etag\":\"%d\"}", i);
        req(e, "PUT", "/v1/buckets/lags/objects/k?ack=logged", body, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_int_equal(token_partition(&r), p);
        resp_free(&r);
    }
    /* 1500 ms per batch: none of the three is applied yet */
    req(e, "GET", "/v1/lag", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *o = lag_part(&r, p);
    assert_int_equal(jint(o, "lag_messages"), 3);
    assert_int_equal(jint(o, "end") - jint(o, "applied"), 3);
    /* the newest applied event was logged >= 60 ms before the newest */
    double ls = jreal(o, "lag_seconds");
    print_message("lag_seconds under slow apply: %.3f\n", ls);
    assert_true(ls >= 0.05 && ls < 5.0);
    assert_int_equal(jint(r.json, "max_lag_messages"), 3);
    assert_true(jreal(r.json, "max_lag_seconds") == ls);
    resp_free(&r);

    req(e, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 503);
    assert_true(json_is_false(json_object_get(r.json, "ready")));
    char want[128];
    snprintf(want, sizeof(want), "partition %d lags 3 messages (more than 1)", p);
    assert_string_equal(jstr(&r, "reason", NULL), want);
    resp_free(&r);
    snprintf(name, sizeof(name), "objlog_partition_lag_messages{partition=\"%d\"}", p);
    assert_true(metric_of(e, name) == 3);

    /* strong reads that cannot wait long enough: 503, counted. Every read
     * route passes the same fence (LIST routes fence each partition of
     * the bucket, in order, up to the lagging one). */
    const char *fenced[] = {"/v1/buckets/lags/objects/k?timeout_ms=100",
                            "/v1/buckets/lags/objects?timeout_ms=100",
                            "/v1/buckets/lags/versions?timeout_ms=100",
                            "/v1/buckets/lags/uploads?timeout_ms=100",
                            "/v1/buckets/lags/uploads/00000000000000aa/parts?key=k&timeout_ms=100",
                            "/v1/buckets/lags?timeout_ms=100"};
    int n503 = 0;
    for (size_t i = 0; i < sizeof(fenced) / sizeof(fenced[0]); i++) {
        req(e, "GET", fenced[i], NULL, NULL, &r);
        /* the bucket's own row lives on its partition, maybe not k's */
        if (i == 5 && bp != p) {
            assert_int_equal(r.status, 200);
        } else {
            assert_error(&r, 503, "SlowDown");
            n503++;
        }
        resp_free(&r);
    }
    req(e, "HEAD", "/v1/buckets/lags/objects/k?timeout_ms=100", NULL, NULL, &r);
    assert_int_equal(r.status, 503);
    n503++;
    resp_free(&r);
    /* one that can: waits, and sees the last acked write */
    req(e, "GET", "/v1/buckets/lags/objects/k?timeout_ms=8000", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "3");
    resp_free(&r);
    assert_true(metric_of(e, "objlog_fence_waits_total{mode=\"strong\"}") == n503 + 1);
    assert_true(metric_of(e, "objlog_fence_timeouts_total{mode=\"strong\"}") == n503);
    assert_true(metric_of(e, "objlog_fence_waits_total{mode=\"token\"}") == 0);

    req(e, "GET", "/v1/lag", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    o = lag_part(&r, p);
    assert_int_equal(jint(o, "lag_messages"), 0);
    assert_int_equal(jint(o, "applied"), jint(o, "end"));
    assert_true(jreal(o, "lag_seconds") == 0.0);
    assert_true(jreal(r.json, "max_lag_seconds") == 0.0);
    resp_free(&r);
    req(e, "GET", "/readyz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_true(json_is_true(json_object_get(r.json, "ready")));
    resp_free(&r);
    env_stop(e);
}

/* A fence that is not met parks the read off its worker (fence.c): with
 * ONE HTTP worker and a materializer that takes 1.5 s per batch, a strong
 * GET, a token GET and a /v1/writes wait are all pending at once, and
 * eventual GETs on other connections of that same worker are answered
 * while they are. With blocking fences the worker would serve nothing
 * until the first wait ended. Ordering is asserted, not timing: each
 * parked read is still unanswered when the eventual reads come back. */
typedef struct parked_read {
    env e;
    const char *path;
    char token_hdr[160];
    long status;
    char etag[32];
    atomic_int done;
} parked_read;

static void *parked_read_main(void *arg) {
    parked_read *a = arg;
    a->e.curl = curl_easy_init();
    const char *hs[] = {a->token_hdr, NULL};
    resp r;
    req(&a->e, "GET", a->path, NULL, a->token_hdr[0] ? hs : NULL, &r);
    a->status = r.status;
    const char *et = r.status == 200 && strstr(a->path, "/objects/")
                         ? jstr(&r, "etag", NULL) : NULL;
    snprintf(a->etag, sizeof(a->etag), "%s", et ? et : "");
    resp_free(&r);
    curl_easy_cleanup(a->e.curl);
    atomic_store(&a->done, 1);
    return NULL;
}

static void test_parked_fences(void **state) {
    (void)state;
    env *e = env_start_conf(1500, 1, 0);
    assert_non_null(e);
    make_bucket(e, "park", NULL);
    resp r;
    req(e, "PUT", "/v1/buckets/park/objects/old?timeout_ms=10000", "{\"etag\":\"o1\"}",
        NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    /* Logged, not yet applied: every fence below must wait for it. */
    req(e, "PUT", "/v1/buckets/park/objects/new?ack=logged", "{\"etag\":\"n1\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    char token[128], writes[192];
    snprintf(token, sizeof(token), "%s", jstr(&r, "token", NULL));
    resp_free(&r);
    snprintf(writes, sizeof(writes), "/v1/writes/%s?timeout_ms=10000", token);

    double waits0 = metric_of(e, "objlog_fence_waits_total{mode=\"strong\"}") +
                    metric_of(e, "objlog_fence_waits_total{mode=\"token\"}");
    parked_read pr[3] = {
        {.e = *e, .path = "/v1/buckets/park/objects/new?timeout_ms=10000"},
        {.e = *e, .path = "/v1/buckets/park/objects/new?consistency=token&timeout_ms=10000"},
        {.e = *e, .path = writes},
    };
    snprintf(pr[1].token_hdr, sizeof(pr[1].token_hdr), "X-Objlog-Token: %s", token);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, parked_read_main, &pr[i]), 0);
    /* Until both read fences are parked (the /v1/writes wait is not a
     * read fence and is not counted). */
    double waits = waits0;
    for (int i = 0; i < 400 && waits < waits0 + 2; i++) {
        usleep(5 * 1000);
        waits = metric_of(e, "objlog_fence_waits_total{mode=\"strong\"}") +
                metric_of(e, "objlog_fence_waits_total{mode=\"token\"}");
    }
    assert_true(waits >= waits0 + 2);
    for (int i = 0; i < 5; i++) {
        req(e, "GET", "/v1/buckets/park/objects/old?consistency=eventual", NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(jstr(&r, "etag", NULL), "o1");
        resp_free(&r);
    }
    int pending = 0;
    for (int i = 0; i < 3; i++)
        pending += !atomic_load(&pr[i].done);
    print_message("eventual GETs answered while %d fenced reads were parked\n", pending);
    assert_int_equal(pending, 3);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(pr[i].status, 200);
    }
    assert_string_equal(pr[0].etag, "n1");
    assert_string_equal(pr[1].etag, "n1");

    /* A fence that cannot be met in time still ends in 503 with the lag. */
    req(e, "PUT", "/v1/buckets/park/objects/late?ack=logged", "{\"etag\":\"l1\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/park/objects/late?timeout_ms=100", NULL, NULL, &r);
    assert_error(&r, 503, "SlowDown");
    assert_true(json_integer_value(json_object_get(json_object_get(r.json, "error"), "lag")) >= 1);
    resp_free(&r);
    env_stop(e);
}

/* Continuation tokens are signed with the store's
 * secret (HMAC-SHA256). A token edited in any one character, or issued by
 * another store for the same bucket and keys, is a 400; the genuine one
 * still pages. */
static void tok_put(env *e) {
    make_bucket(e, "tok", NULL);
    for (int i = 0; i < 3; i++) {
        char path[128];
        resp r;
        snprintf(path, sizeof(path), "/v1/buckets/tok/objects/d/k%d?timeout_ms=10000", i);
        req(e, "PUT", path, "{\"etag\":\"x\",\"size\":1}", NULL, &r);
        assert_int_equal(r.status, 200);
        resp_free(&r);
    }
}

static long tok_status(env *e, const char *fmt, const char *tok) {
    char path[1024];
    resp r;
    snprintf(path, sizeof(path), fmt, tok);
    req(e, "GET", path, NULL, NULL, &r);
    long st = r.status;
    if (st == 400)
        assert_string_equal(jstr(&r, "error", "code"), "InvalidArgument");
    resp_free(&r);
    return st;
}

static void test_tokens_signed(void **state) {
    (void)state;
    env *a = env_start(0), *b = env_start(0);
    assert_non_null(a);
    assert_non_null(b);
    tok_put(a);
    tok_put(b);
    static const char *const first[] = {"/v1/buckets/tok/objects?max_keys=1",
                                        "/v1/buckets/tok/usage?prefix=d/&max_rows=1"};
    static const char *const next[] = {
        "/v1/buckets/tok/objects?max_keys=1&continuation_token=%s",
        "/v1/buckets/tok/usage?prefix=d/&max_rows=1&continuation_token=%s"};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int k = 0; k < 2; k++) {
        resp r;
        req(a, "GET", first[k], NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        char tok[512];
        snprintf(tok, sizeof(tok), "%s", jstr(&r, "next_continuation_token", NULL));
        resp_free(&r);
        assert_true(strlen(tok) > 20);
        assert_int_equal(tok_status(a, next[k], tok), 200);
        /* another store, same bucket, same keys */
        assert_int_equal(tok_status(b, next[k], tok), 400);
        /* every one-character edit */
        int refused = 0, n = (int)strlen(tok);
        for (int i = 0; i < n; i++) {
            char edited[512];
            snprintf(edited, sizeof(edited), "%s", tok);
            const char *at = strchr(b64, edited[i]);
            edited[i] = b64[((at ? at - b64 : 0) + 1) % 64];
            refused += tok_status(a, next[k], edited) == 400;
        }
        print_message("%s token: %d of %d one-character edits refused, the other "
                      "store's refused\n", k ? "usage" : "LIST", refused, n);
        assert_int_equal(refused, n);
    }
    env_stop(a);
    env_stop(b);
}

/* An idle view stops fetching (objlog_consumer_idle 1,
 * no CPU spent on empty fetches) and nothing is lost by it: a write the
 * gateway takes is applied, and so is one a library producer writes
 * straight to the log with nobody asking for it (the query service's
 * once-a-second look at the log's end resumes the consumer). The CPU
 * figure itself is ops/idle.sh's (a bench, not a timed test). */
static double idle_gauge(env *e) { return metric_of(e, "objlog_consumer_idle"); }

static void wait_idle(env *e) {
    for (int i = 0; i < 200 && idle_gauge(e) != 1; i++)
        usleep(50 * 1000);
    assert_true(idle_gauge(e) == 1);
}

static void test_idle_pause(void **state) {
    (void)state;
    env *e = env_start_conf4(0, 2, 0, 300);
    assert_non_null(e);
    make_bucket(e, "idle", NULL);
    wait_idle(e);
    resp r;
    req(e, "PUT", "/v1/buckets/idle/objects/gw?timeout_ms=10000", "{\"etag\":\"g1\"}", NULL,
        &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(jstr(&r, "etag", NULL), "g1");
    resp_free(&r);
    wait_idle(e);

    char err[512];
    objlog_producer_conf *pc = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(pc, "bootstrap.servers",
                                              objlog_embedded_kafka_bootstrap(e->kafka), err,
                                              sizeof(err)), 0);
    assert_int_equal(objlog_producer_conf_set(pc, "ack", "logged", err, sizeof(err)), 0);
    objlog_producer *p = objlog_producer_new(pc, err, sizeof(err));
    assert_non_null(p);
    objlog_object_meta meta = {.size = 1, .etag = "lib1"};
    objlog_write_result w;
    assert_int_equal(objlog_producer_put_object_sync(p, "idle", "lib", 3, &meta, NULL, &w,
                                                     err, sizeof(err)), 0);
    assert_int_equal(w.status, OBJLOG_STATUS_LOGGED);
    objlog_producer_destroy(p);
    /* Nobody kicks: only eventual reads, which wait for nothing. */
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) {
        req(e, "GET", "/v1/buckets/idle/objects/lib?consistency=eventual", NULL, NULL, &r);
        seen = r.status == 200 && !strcmp(jstr(&r, "etag", NULL), "lib1");
        resp_free(&r);
        if (!seen)
            usleep(50 * 1000);
    }
    assert_true(seen);
    wait_idle(e);
    env_stop(e);
}

/* 32 strong readers at once on one partition share ListOffsets requests,
 * and each still sees the write acked (as logged, so not yet applied)
 * before it started; then a writer races readers and no read may return
 * a value older than the newest write acked before it began. */
#define COAL_READERS 32
typedef struct coal_shared {
    env *e;
    pthread_barrier_t go;
    atomic_int acked;       /* newest etag number acked to the writer */
    atomic_int readers_left;
    int rounds;
} coal_shared;

typedef struct coal_reader {
    coal_shared *s;
    int ok;                  /* reads that answered 200 */
    int stale;               /* reads older than a write acked before them */
    int first;               /* etag number of the first read */
} coal_reader;

static int etag_num(const resp *r) {
    const char *t = r->status == 200 ? jstr(r, "etag", NULL) : NULL;
    return t ? atoi(t) : -1;
}

static void *coal_reader_main(void *arg) {
    coal_reader *a = arg;
    env mine = *a->s->e;
    mine.curl = curl_easy_init();
    resp r;
    req(&mine, "GET", "/healthz", NULL, NULL, &r); /* connect first */
    resp_free(&r);
    pthread_barrier_wait(&a->s->go);
    for (int i = 0; i < a->s->rounds; i++) {
        int before = atomic_load(&a->s->acked);
        req(&mine, "GET", "/v1/buckets/coal/objects/hot?timeout_ms=10000", NULL, NULL, &r);
        int n = etag_num(&r);
        a->ok += r.status == 200;
        a->stale += n < before;
        if (i == 0)
            a->first = n;
        resp_free(&r);
    }
    atomic_fetch_sub(&a->s->readers_left, 1);
    curl_easy_cleanup(mine.curl);
    return NULL;
}

static void *coal_writer_main(void *arg) {
    coal_shared *s = arg;
    env mine = *s->e;
    mine.curl = curl_easy_init();
    for (int i = atomic_load(&s->acked) + 1; atomic_load(&s->readers_left) > 0; i++) {
        char body[32];
        resp r;
        snprintf(body, sizeof(body), "{\"etag\":\"%d\"}", i);
        req(&mine, "PUT", "/v1/buckets/coal/objects/hot?ack=logged", body, NULL, &r);
        if (r.status == 200)
            atomic_store(&s->acked, i);
        resp_free(&r);
    }
    curl_easy_cleanup(mine.curl);
    return NULL;
}

static void coal_run(coal_shared *s, coal_reader *rd, int with_writer) {
    pthread_t th[COAL_READERS], wt;
    atomic_store(&s->readers_left, COAL_READERS);
    pthread_barrier_init(&s->go, NULL, COAL_READERS);
    for (int i = 0; i < COAL_READERS; i++) {
        rd[i] = (coal_reader){.s = s};
        assert_int_equal(pthread_create(&th[i], NULL, coal_reader_main, &rd[i]), 0);
    }
    if (with_writer)
        assert_int_equal(pthread_create(&wt, NULL, coal_writer_main, s), 0);
    for (int i = 0; i < COAL_READERS; i++)
        pthread_join(th[i], NULL);
    if (with_writer)
        pthread_join(wt, NULL);
    pthread_barrier_destroy(&s->go);
}

static void test_coalesced_strong_reads(void **state) {
    (void)state;
    env *e = env_start_conf(0, COAL_READERS, 0);
    assert_non_null(e);
    make_bucket(e, "coal", NULL);
    resp r;
    req(e, "PUT", "/v1/buckets/coal/objects/hot?ack=logged", "{\"etag\":\"1\"}", NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    coal_shared s = {.e = e, .rounds = 1};
    atomic_store(&s.acked, 1);
    coal_reader rd[COAL_READERS];

    double before = metric_of(e, "objlog_list_offsets_requests_total");
    coal_run(&s, rd, 0);
    double used = metric_of(e, "objlog_list_offsets_requests_total") - before;
    /* /metrics never fetches; the count includes the 1 s refresher's
     * rounds (one request for every partition), which a strong read that
     * arrived before one started may share: at least one request, and far
     * fewer than one per read. */
    print_message("32 concurrent strong GETs: %.0f ListOffsets requests\n", used);
    for (int i = 0; i < COAL_READERS; i++) {
        assert_int_equal(rd[i].ok, 1);
        assert_int_equal(rd[i].first, 1);
    }
    assert_true(used >= 1 && used < COAL_READERS / 2);

    s.rounds = 10;
    coal_run(&s, rd, 1);
    int ok = 0, stale = 0;
    for (int i = 0; i < COAL_READERS; i++) {
        ok += rd[i].ok;
        stale += rd[i].stale;
    }
    print_message("with a writer: %d reads, %d stale, %d writes acked\n", ok, stale,
                  atomic_load(&s.acked));
    assert_int_equal(ok, COAL_READERS * 10);
    assert_int_equal(stale, 0);
    assert_true(atomic_load(&s.acked) > 1);
    env_stop(e);
}


/* ------------------------------------------------------------- usage */

static void put_sized(env *e, const char *bucket, const char *key, long long size,
                      long status) {
    char path[256], body[256];
    snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
    snprintf(body, sizeof(body), "{\"size\":%lld,\"etag\":\"e\"}", size);
    expect(e, "PUT", path, body, status);
}

static long long ujint(const json_t *o, const char *name) {
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        fail_msg("field %s missing or not an integer", name);
    return (long long)json_integer_value(v);
}

/* The nine counters of a stats answer, in UsageStats order. */
static const char *const usage_fields[9] = {
    "objects", "bytes", "versions", "version_bytes", "noncurrent_versions",
    "noncurrent_bytes", "delete_markers", "uploads", "upload_part_bytes"};

static void expect_usage(const json_t *o, const long long want[9], const char *what) {
    for (int i = 0; i < 9; i++)
        if (ujint(o, usage_fields[i]) != want[i])
            fail_msg("%s: %s = %lld, want %lld", what, usage_fields[i],
                     ujint(o, usage_fields[i]), want[i]);
}

static json_t *get_json(env *e, const char *path) {
    resp r;
    char h[256];
    req(e, "GET", path, NULL, NULL, &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
    assert_non_null(header(&r, "X-Objlog-Applied", h, sizeof(h)));
    json_t *j = json_incref(r.json);
    resp_free(&r);
    return j;
}

/* One entry of a top list by bucket name, or NULL. */
static json_t *top_entry(json_t *top, const char *bucket) {
    json_t *arr = json_object_get(top, "buckets");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *x = json_array_get(arr, i);
        if (strcmp(json_string_value(json_object_get(x, "bucket")), bucket) == 0)
            return x;
    }
    return NULL;
}

static void expect_top_sorted(json_t *top, const char *by) {
    json_t *arr = json_object_get(top, "buckets");
    assert_string_equal(json_string_value(json_object_get(top, "by")), by);
    for (size_t i = 1; i < json_array_size(arr); i++)
        assert_true(ujint(json_array_get(arr, i - 1), by) >= ujint(json_array_get(arr, i), by));
}

#define TB 1000000000000LL

static void test_usage_stats_and_quota(void **state) {
    env *e = *state;
    resp r;
    char id[32], path[256];
    json_t *g0 = get_json(e, "/v1/stats");
    make_bucket(e, "sta1", "{\"tenant\":\"tstat-a\",\"versioning\":\"Enabled\"}");
    make_bucket(e, "sta2", "{\"tenant\":\"tstat-a\"}");
    make_bucket(e, "stb1", "{\"tenant\":\"tstat-b\",\"quota\":{\"max_objects\":2}}");
    make_bucket(e, "stc1", "{\"tenant\":\"tstat-b\"}");
    expect(e, "DELETE", "/v1/buckets/stc1", NULL, 200);

    /* sta1 (Enabled): k1 twice (1 TB then 5), k3 2 TB, k2 7 then a marker,
     * one upload with one 5 MiB part */
    put_sized(e, "sta1", "k1", TB, 200);
    put_sized(e, "sta1", "k1", 5, 200);
    put_sized(e, "sta1", "k3", 2 * TB, 200);
    put_sized(e, "sta1", "k2", 7, 200);
    expect(e, "DELETE", "/v1/buckets/sta1/objects/k2", NULL, 200);
    create_upload(e, "sta1", "m", id);
    upload_part(e, "sta1", "m", id, 1, MIB5, etags[0]);
    /* sta2 (Unversioned): a replaced, b */
    put_sized(e, "sta2", "a", 100, 200);
    put_sized(e, "sta2", "a", 50, 200);
    put_sized(e, "sta2", "b", 10, 200);
    /* stb1: max_objects 2 -> a third key is refused, an overwrite is not */
    put_sized(e, "stb1", "x", 7, 200);
    put_sized(e, "stb1", "y", 7, 200);
    req(e, "PUT", "/v1/buckets/stb1/objects/z", "{\"size\":7,\"etag\":\"e\"}", NULL, &r);
    assert_error(&r, 403, "QuotaExceeded");
    resp_free(&r);
    put_sized(e, "stb1", "x", 7, 200);
    expect(e, "PUT", "/v1/buckets/stb1/quota", "{\"max_objects\":3,\"max_bytes\":21}", 200);
    put_sized(e, "stb1", "z", 7, 200);
    req(e, "PUT", "/v1/buckets/stb1/objects/x", "{\"size\":8,\"etag\":\"e\"}", NULL, &r);
    assert_error(&r, 403, "QuotaExceeded"); /* bytes 22 > 21 */
    resp_free(&r);

    const long long a1[9] = {2, 2 * TB + 5, 4, 3 * TB + 12, 2, TB + 7, 1, 1, MIB5};
    const long long a2[9] = {2, 60, 2, 60, 0, 0, 0, 0, 0};
    const long long b1[9] = {3, 21, 3, 21, 0, 0, 0, 0, 0};
    json_t *j = get_json(e, "/v1/buckets/sta1/stats");
    expect_usage(j, a1, "sta1");
    assert_string_equal(json_string_value(json_object_get(j, "bucket")), "sta1");
    assert_string_equal(json_string_value(json_object_get(j, "tenant")), "tstat-a");
    assert_int_equal(ujint(json_object_get(j, "quota"), "max_objects"), 0);
    json_decref(j);
    j = get_json(e, "/v1/buckets/sta2/stats?consistency=eventual");
    expect_usage(j, a2, "sta2");
    json_decref(j);
    j = get_json(e, "/v1/buckets/stb1/stats");
    expect_usage(j, b1, "stb1");
    assert_int_equal(ujint(json_object_get(j, "quota"), "max_objects"), 3);
    assert_int_equal(ujint(json_object_get(j, "quota"), "max_bytes"), 21);
    json_decref(j);

    long long ta[9];
    for (int i = 0; i < 9; i++)
        ta[i] = a1[i] + a2[i];
    j = get_json(e, "/v1/tenants/tstat-a/stats");
    expect_usage(j, ta, "tenant tstat-a");
    assert_string_equal(json_string_value(json_object_get(j, "tenant")), "tstat-a");
    assert_int_equal(ujint(j, "buckets"), 2);
    json_decref(j);
    j = get_json(e, "/v1/tenants/tstat-b/stats");
    expect_usage(j, b1, "tenant tstat-b");
    assert_int_equal(ujint(j, "buckets"), 1); /* stc1 was deleted */
    json_decref(j);
    const long long zero[9] = {0};
    j = get_json(e, "/v1/tenants/nobody%20here/stats");
    expect_usage(j, zero, "unknown tenant");
    assert_string_equal(json_string_value(json_object_get(j, "tenant")), "nobody here");
    assert_int_equal(ujint(j, "buckets"), 0);
    json_decref(j);

    /* global: exactly the three buckets' usage more than before */
    json_t *g1 = get_json(e, "/v1/stats");
    for (int i = 0; i < 9; i++) {
        long long d = ujint(g1, usage_fields[i]) - ujint(g0, usage_fields[i]);
        if (d != ta[i] + b1[i])
            fail_msg("global %s grew by %lld, want %lld", usage_fields[i], d, ta[i] + b1[i]);
    }
    assert_int_equal(ujint(g1, "buckets") - ujint(g0, "buckets"), 3);
    assert_int_equal(ujint(g1, "tenants") - ujint(g0, "tenants"), 2);
    json_decref(g0);
    json_decref(g1);

    /* top: sta1 leads by bytes; lists sorted; entries exact */
    j = get_json(e, "/v1/stats/top?by=bytes&limit=1");
    assert_int_equal(json_array_size(json_object_get(j, "buckets")), 1);
    json_t *x = top_entry(j, "sta1");
    assert_non_null(x);
    assert_string_equal(json_string_value(json_object_get(x, "tenant")), "tstat-a");
    assert_int_equal(ujint(x, "bytes"), 2 * TB + 5);
    assert_int_equal(ujint(x, "objects"), 2);
    assert_int_equal(ujint(x, "versions"), 4);
    json_decref(j);
    j = get_json(e, "/v1/stats/top");
    assert_string_equal(json_string_value(json_object_get(j, "by")), "bytes");
    expect_top_sorted(j, "bytes");
    assert_true(json_array_size(json_object_get(j, "buckets")) <= 10);
    json_decref(j);
    const char *bys[2] = {"objects", "versions"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/v1/stats/top?by=%s&limit=100", bys[i]);
        j = get_json(e, path);
        expect_top_sorted(j, bys[i]);
        x = top_entry(j, "stb1");
        assert_non_null(x);
        assert_int_equal(ujint(x, "objects"), 3);
        assert_int_equal(ujint(x, "versions"), 3);
        assert_null(top_entry(j, "stc1"));
        json_decref(j);
    }

    /* bad inputs */
    req(e, "GET", "/v1/buckets/nosuchb/stats", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/stc1/stats", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
    const char *bad[] = {"/v1/stats/top?by=size", "/v1/stats/top?limit=0",
                         "/v1/stats/top?limit=101", "/v1/stats/top?limit=x",
                         "/v1/tenants/%00/stats"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req(e, "GET", bad[i], NULL, NULL, &r);
        assert_error(&r, 400, "InvalidArgument");
        resp_free(&r);
    }
    req(e, "GET", "/v1/tenants/tstat-a", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchRoute");
    resp_free(&r);
    req(e, "POST", "/v1/stats", NULL, NULL, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/stb1/quota", NULL, NULL, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/stb1/quota", "{\"max_objects\":-1}", NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/stb1/quota", "", NULL, &r);
    assert_error(&r, 400, "MalformedJSON");
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/nosuchb/quota", "{\"max_objects\":1}", NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
}

/* ---------------------------------------------------------- prefix usage */

/* GET path, 200 expected; the body as compact JSON with sorted keys. */
static char *usage_get(env *e, const char *path, json_t **out) {
    resp r;
    char h[256];
    req(e, "GET", path, NULL, NULL, &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
    assert_non_null(header(&r, "X-Objlog-Applied", h, sizeof(h)));
    char *s = json_dumps(r.json, JSON_COMPACT | JSON_SORT_KEYS);
    if (out)
        *out = json_incref(r.json);
    resp_free(&r);
    return s;
}

/* Follows the tokens from the first page of query; returns the merged
 * answer in the one-page shape (sorted keys) and the page count. */
static char *usage_walk(env *e, const char *bucket, const char *query, int *pages) {
    char path[8192], token[4096] = "";
    json_t *acc = NULL;
    long long rows = 0;
    *pages = 0;
    for (;;) {
        json_t *page;
        snprintf(path, sizeof(path), "/v1/buckets/%s/usage?%s%s%s", bucket, query,
                 token[0] ? "&continuation_token=" : "", token);
        free(usage_get(e, path, &page));
        (*pages)++;
        rows += json_integer_value(json_object_get(page, "rows_scanned"));
        assert_true(json_integer_value(json_object_get(page, "rows_scanned")) <=
                    json_integer_value(json_object_get(page, "max_rows")));
        assert_true((json_int_t)json_array_size(json_object_get(page, "common_prefixes")) <=
                    json_integer_value(json_object_get(page, "max_prefixes")));
        if (!acc)
            acc = json_deep_copy(page);
        else
            json_array_extend(json_object_get(acc, "common_prefixes"),
                              json_object_get(page, "common_prefixes"));
        json_object_set(acc, "direct", json_object_get(page, "direct"));
        json_object_set(acc, "total", json_object_get(page, "total"));
        int more = json_is_true(json_object_get(page, "is_truncated"));
        const char *next = json_string_value(json_object_get(page, "next_continuation_token"));
        assert_true(more == (next != NULL));
        if (next)
            snprintf(token, sizeof(token), "%s", next);
        json_decref(page);
        if (!more)
            break;
        assert_true(*pages < 200);
    }
    /* the one-page shape: no token, rows summed, the one-page limits */
    json_object_del(acc, "next_continuation_token");
    json_object_set_new(acc, "is_truncated", json_false());
    json_object_set_new(acc, "rows_scanned", json_integer(rows));
    json_object_set_new(acc, "max_rows", json_integer(10000));
    json_object_set_new(acc, "max_prefixes", json_integer(1000));
    char *s = json_dumps(acc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(acc);
    return s;
}

/* A usage answer's error: status, code and a phrase of the message. */
static void usage_error(env *e, const char *method, const char *path, long status,
                        const char *code, const char *phrase) {
    resp r;
    req(e, method, path, NULL, NULL, &r);
    assert_error(&r, status, code);
    if (phrase && !strstr(jstr(&r, "error", "message"), phrase))
        fail_msg("%s %s: message \"%s\" lacks \"%s\"", method, path,
                 jstr(&r, "error", "message"), phrase);
    resp_free(&r);
}

static void test_prefix_usage(void **state) {
    env *e = *state;
    char path[8192];
    make_bucket(e, "pfx", "{\"versioning\":\"Enabled\"}");
    make_bucket(e, "pfx2", NULL);
    put_sized(e, "pfx", "photos/2024/a.jpg", 100, 200);
    put_sized(e, "pfx", "photos/2024/b.jpg", 200, 200);
    put_sized(e, "pfx", "photos/2025/c.jpg", 50, 200);
    put_sized(e, "pfx", "photos/readme", 7, 200);
    put_sized(e, "pfx", "docs/x", 1000, 200);
    put_sized(e, "pfx", "docs/old", 999, 200);
    expect(e, "DELETE", "/v1/buckets/pfx/objects/docs/old", NULL, 200); /* a marker */
    put_sized(e, "pfx", "top.txt", 1, 200);
    put_sized(e, "pfx", "top.txt", 3, 200); /* noncurrent 1 byte: not counted */

    char *got = usage_get(e, "/v1/buckets/pfx/usage?delimiter=/", NULL);
    assert_string_equal(got,
        "{\"bucket\":\"pfx\",\"common_prefixes\":["
        "{\"bytes\":1000,\"objects\":1,\"prefix\":\"docs/\"},"
        "{\"bytes\":357,\"objects\":4,\"prefix\":\"photos/\"}],"
        "\"delimiter\":\"/\",\"direct\":{\"bytes\":3,\"objects\":1},"
        "\"is_truncated\":false,\"max_prefixes\":1000,\"max_rows\":10000,\"prefix\":\"\","
        "\"rows_scanned\":6,\"total\":{\"bytes\":1360,\"objects\":6}}");
    free(got);
    got = usage_get(e, "/v1/buckets/pfx/usage?prefix=photos/&delimiter=/", NULL);
    assert_string_equal(got,
        "{\"bucket\":\"pfx\",\"common_prefixes\":["
        "{\"bytes\":300,\"objects\":2,\"prefix\":\"photos/2024/\"},"
        "{\"bytes\":50,\"objects\":1,\"prefix\":\"photos/2025/\"}],"
        "\"delimiter\":\"/\",\"direct\":{\"bytes\":7,\"objects\":1},"
        "\"is_truncated\":false,\"max_prefixes\":1000,\"max_rows\":10000,"
        "\"prefix\":\"photos/\",\"rows_scanned\":4,\"total\":{\"bytes\":357,\"objects\":4}}");
    free(got);
    /* no delimiter: everything under the prefix is direct */
    got = usage_get(e, "/v1/buckets/pfx/usage?prefix=photos/2", NULL);
    assert_non_null(strstr(got, "\"common_prefixes\":[],\"delimiter\":\"\","
                                "\"direct\":{\"bytes\":350,\"objects\":3}"));
    free(got);

    /* pages of every small shape merge into the one-page answer */
    static const char *const scopes[] = {"delimiter=/", "prefix=photos/&delimiter=/",
                                         "prefix=photos/&delimiter=.", "prefix=p"};
    static const int shapes[][2] = {{1, 1}, {2, 1}, {1, 3}, {3, 2}, {10000, 1}};
    for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
        snprintf(path, sizeof(path), "/v1/buckets/pfx/usage?%s", scopes[i]);
        char *one = usage_get(e, path, NULL);
        for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
            char q[256];
            int pages;
            snprintf(q, sizeof(q), "%s&max_rows=%d&max_prefixes=%d", scopes[i],
                     shapes[k][0], shapes[k][1]);
            char *merged = usage_walk(e, "pfx", q, &pages);
            if (strcmp(merged, one) != 0)
                fail_msg("%s:\nmerged %s\n   one %s", q, merged, one);
            if (shapes[k][0] == 1)
                assert_true(pages >= 4); /* one row a page: really paged */
            free(merged);
        }
        free(one);
    }

    /* tokens: a truncated page's token, then every way to misuse one */
    json_t *page;
    free(usage_get(e, "/v1/buckets/pfx/usage?prefix=photos/&delimiter=/&max_rows=1", &page));
    char tok[4096];
    snprintf(tok, sizeof(tok), "%s",
             json_string_value(json_object_get(page, "next_continuation_token")));
    assert_true(json_is_true(json_object_get(page, "is_truncated")));
    assert_int_equal(json_array_size(json_object_get(page, "common_prefixes")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(page, "total"),
                                                        "objects")), 1);
    json_decref(page);
    resp r;
    req(e, "GET", "/v1/buckets/pfx/objects?max_keys=1", NULL, NULL, &r);
    char list_tok[4096];
    snprintf(list_tok, sizeof(list_tok), "%s", jstr(&r, "next_continuation_token", NULL));
    resp_free(&r);
    static const struct { const char *fmt; const char *phrase; } bad[] = {
        {"/v1/buckets/pfx/usage?prefix=photos/&delimiter=/&continuation_token=%s",
         "not from /usage"},                                       /* a LIST token */
        {"/v1/buckets/pfx/usage?prefix=docs/&delimiter=/&continuation_token=%s",
         "another prefix or delimiter"},
        {"/v1/buckets/pfx/usage?prefix=photos/&continuation_token=%s",
         "another prefix or delimiter"},
        {"/v1/buckets/pfx/usage?prefix=photos&delimiter=//&continuation_token=%s",
         "another prefix or delimiter"},
        {"/v1/buckets/pfx2/usage?prefix=photos/&delimiter=/&continuation_token=%s",
         "another bucket"},
        {"/v1/buckets/pfx/objects?continuation_token=%s", "continuation token"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(path, sizeof(path), bad[i].fmt, i == 0 ? list_tok : tok);
        usage_error(e, "GET", path, 400, "InvalidArgument", bad[i].phrase);
    }
    /* the genuine token still works, and a cut or altered one does not */
    snprintf(path, sizeof(path),
             "/v1/buckets/pfx/usage?prefix=photos/&delimiter=/&continuation_token=%s", tok);
    free(usage_get(e, path, NULL));
    size_t tl = strlen(path);
    path[tl - 4] = '\0';
    usage_error(e, "GET", path, 400, "InvalidArgument", "invalid");
    path[tl - 4] = tok[strlen(tok) - 4] == 'A' ? 'B' : 'A';
    usage_error(e, "GET", path, 400, "InvalidArgument", "invalid");
    static const struct { const char *path, *phrase; } args[] = {
        {"/v1/buckets/pfx/usage?max_rows=0", "max_rows must be an integer in 1..100000"},
        {"/v1/buckets/pfx/usage?max_rows=100001", "max_rows"},
        {"/v1/buckets/pfx/usage?max_rows=ten", "max_rows"},
        {"/v1/buckets/pfx/usage?max_rows=", "max_rows"},
        {"/v1/buckets/pfx/usage?max_prefixes=0", "max_prefixes must be an integer in 1..1000"},
        {"/v1/buckets/pfx/usage?max_prefixes=1001", "max_prefixes"},
        {"/v1/buckets/pfx/usage?max_prefixes=1.5", "max_prefixes"},
        {"/v1/buckets/pfx/usage?continuation_token=AAAAAAAAAAAAAAAAAAAAAAAAAAAA", "invalid"},
        {"/v1/buckets/pfx/usage?continuation_token=%21%21", "invalid"},
        {"/v1/buckets/pfx/usage?continuation_token=", "invalid"},
    };
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        usage_error(e, "GET", args[i].path, 400, "InvalidArgument", args[i].phrase);
    usage_error(e, "GET", "/v1/buckets/nosuch-usage/usage", 404, "NoSuchBucket",
                "nosuch-usage");
    usage_error(e, "GET", "/v1/buckets/Bad_Name/usage", 400, "InvalidBucketName", NULL);
    static const char *const methods[] = {"POST", "PUT", "DELETE"};
    for (int i = 0; i < 3; i++) {
        req(e, methods[i], "/v1/buckets/pfx/usage", NULL, NULL, &r);
        assert_error(&r, 405, "MethodNotAllowed");
        char h[64];
        assert_string_equal(header(&r, "Allow", h, sizeof(h)), "GET");
        resp_free(&r);
    }
    /* its own metrics label, and the method of each */
    for (int i = 0; i < 3; i++) {
        char series[160];
        snprintf(series, sizeof(series),
                 "objlog_http_requests_total{api=\"json\",endpoint=\"usage\",method=\"%s\",code=\"405\"}",
                 methods[i]);
        assert_true(metric_of(e, series) == 1);
    }
    assert_true(metric_of(e, "objlog_http_requests_total{api=\"json\",endpoint=\"usage\",method=\"GET\",code=\"404\"}") ==
                1);
}

/* ---- GET /v1/ranges ---- */

/* The map published before the view starts: the first range, one that
 * starts inside bucket "photos" at key "m", and one at a hash boundary. */
static uint8_t g_split[64];
static size_t g_split_len;

static void publish_split_map(const char *bs) {
    keybuf rk;
    keybuf_init(&rk);
    assert_int_equal(keycodec_route_key(&rk, "photos", 6, (const uint8_t *)"m", 1), 0);
    assert_true(rk.len <= sizeof(g_split));
    memcpy(g_split, rk.data, rk.len);
    g_split_len = rk.len;
    keybuf_free(&rk);
    /* the hash boundary just above photos' hash, so the starts ascend */
    uint16_t h = keycodec_bucket_hash("photos", 6);
    assert_true(h < 0xffff);
    uint8_t above[2] = {(uint8_t)((h + 1) >> 8), (uint8_t)(h + 1)};
    Objlog__RangeEntry e[3] = {OBJLOG__RANGE_ENTRY__INIT, OBJLOG__RANGE_ENTRY__INIT,
                               OBJLOG__RANGE_ENTRY__INIT};
    Objlog__RangeEntry *ep[3] = {&e[0], &e[1], &e[2]};
    e[0].partition = 0;
    e[1].start.data = g_split;
    e[1].start.len = g_split_len;
    e[1].partition = 3;
    e[2].start.data = above;
    e[2].start.len = 2;
    e[2].partition = 1;
    Objlog__RangeMap m = OBJLOG__RANGE_MAP__INIT;
    m.epoch = 7;
    m.n_ranges = 3;
    m.ranges = ep;
    uint8_t buf[256];
    size_t n = objlog__range_map__pack(&m, buf);
    char err[256];
    rangemap *rm = rangemap_decode(buf, n, err, sizeof(err));
    assert_non_null(rm);
    rd_kafka_t *pub = control_client_new(bs, err, sizeof(err));
    assert_non_null(pub);
    assert_int_equal(control_publish_rangemap(pub, "objlog.control", rm, 10000, err,
                                              sizeof(err)), 0);
    rd_kafka_destroy(pub);
    rangemap_destroy(rm);
}

static void test_ranges(void **state) {
    (void)state;
    env *e = env_start_conf5(0, 0, 0, 0, publish_split_map);
    assert_non_null(e);
    resp r;
    req(e, "GET", "/v1/ranges", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_integer_value(json_object_get(r.json, "epoch")), 7);
    json_t *rs = json_object_get(r.json, "ranges");
    assert_int_equal(json_array_size(rs), 3);
    char hex[2 * sizeof(g_split) + 1];
    for (size_t i = 0; i < g_split_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", g_split[i]);
    uint16_t h = keycodec_bucket_hash("photos", 6) + 1;
    char above[8];
    snprintf(above, sizeof(above), "%04x", h);
    const char *start[3] = {"", hex, above};
    const int part[3] = {0, 3, 1};
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(rs, i);
        assert_string_equal(json_string_value(json_object_get(x, "start")), start[i]);
        assert_int_equal(json_integer_value(json_object_get(x, "partition")), part[i]);
        assert_string_equal(json_string_value(json_object_get(x, "state")), "serving");
        /* only the start inside a bucket names one */
        assert_int_equal(json_object_size(x), i == 1 ? 5 : 3);
    }
    json_t *in = json_array_get(rs, 1);
    assert_string_equal(json_string_value(json_object_get(in, "bucket")), "photos");
    assert_string_equal(json_string_value(json_object_get(in, "key")), "m");
    resp_free(&r);
    /* GET only */
    req(e, "POST", "/v1/ranges", NULL, NULL, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
    assert_true(metric_of(e, "objlog_ranges") == 3);
    assert_true(metric_of(e, "objlog_range_map_epoch") == 7);
    env_stop(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_head),
        cmocka_unit_test(test_get_body_escapes),
        cmocka_unit_test(test_versioned_delete_marker),
        cmocka_unit_test(test_unversioned_delete),
        cmocka_unit_test(test_key_bytes_round_trip),
        cmocka_unit_test(test_list_delimiter),
        cmocka_unit_test(test_list_pagination),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_field_limits),
        cmocka_unit_test(test_preconditions),
        cmocka_unit_test(test_writes_and_consistency),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_list_versions),
        cmocka_unit_test(test_list_versions_delimiter),
        cmocka_unit_test(test_list_versions_null_marker_deleted),
        cmocka_unit_test(test_delete_marker_reads),
        cmocka_unit_test(test_bucket_routes),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_slow_apply),
        cmocka_unit_test(test_parked_fences),
        cmocka_unit_test(test_tokens_signed),
        cmocka_unit_test(test_idle_pause),
        cmocka_unit_test(test_writes_outcome_expired),
        cmocka_unit_test(test_lag_and_metrics),
        cmocka_unit_test(test_lag_slow_apply),
        cmocka_unit_test(test_coalesced_strong_reads),
        cmocka_unit_test(test_stopped_partition_answers),
        cmocka_unit_test(test_usage_stats_and_quota),
        cmocka_unit_test(test_prefix_usage),
        cmocka_unit_test(test_ranges),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
