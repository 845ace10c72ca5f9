/* test_http_indexes.c: attribute indexes over real HTTP:
 * the whole stack in-process (embedded mock Kafka on 127.0.0.1, RocksDB in
 * a temp dir, materializer, query service on 127.0.0.1 port 0). Declaring,
 * showing, dropping; the building state (with the backfill driver off) and
 * its 409; the backfill driver taking an index to ready; queries by eq,
 * range and last-modified in LIST's shape with signed tokens, paged and
 * unpaged equal; per-value counts; every bad input with its code. The
 * fixture is test_http.c's (httpenv.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "objlog_producer.h"
#include "httpenv.h"
#include "proc.h"
#include "query.h"

static int g_no_driver;

/* Stops the query service and starts a new one on the same view, with
 * the backfill driver on: what a restarted objlogd's driver starts from. */
static void query_restart(env *e) {
    char err[512];
    objlog_query_destroy(e->q);
    objlog_query_conf qc = {.host = "127.0.0.1", .port = 0, .threads = 3,
                            .brokers = objlog_embedded_kafka_bootstrap(e->kafka),
                            .store = e->store, .materializer = e->m};
    e->q = objlog_query_new(&qc, err, sizeof(err));
    if (!e->q)
        fail_msg("query: %s", err);
    snprintf(e->base, sizeof(e->base), "http://127.0.0.1:%d", objlog_query_port(e->q));
}

static env *env_start(int apply_delay_ms) {
    env_opts o = {.apply_delay_ms = apply_delay_ms, .no_index_driver = g_no_driver};
    return env_start_opts(&o);
}




/* ---------------------------------------------------------------- tests */

/* 40 objects k00..k39: cust c<i%4> (none for i%10==9), content type
 * text/plain for even i, size i+1. */
static void fill(env *e, const char *b) {
    char path[256], body[512];
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/k%02d", b, i);
        if (i % 10 == 9)
            snprintf(body, sizeof(body), "{\"size\":%d,\"etag\":\"e\"}", i + 1);
        else
            snprintf(body, sizeof(body),
                     "{\"size\":%d,\"etag\":\"e\",%s\"user_metadata\":{\"cust\":\"c%d\"}}",
                     i + 1, i % 2 ? "" : "\"content_type\":\"text/plain\",", i % 4);
        expect(e, "PUT", path, body, 200);
    }
}

static void index_status(env *e, const char *b, const char *name, char *out, size_t n,
                         long long *indexed) {
    char path[256];
    resp r;
    snprintf(path, sizeof(path), "/v1/buckets/%s/indexes/%s", b, name);
    req(e, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    snprintf(out, n, "%s", jstr(&r, "status", NULL));
    *indexed = json_integer_value(json_object_get(r.json, "indexed_keys"));
    resp_free(&r);
}

static void wait_ready(env *e, const char *b, const char *name) {
    char st[32];
    long long n;
    for (int i = 0; i < 3000; i++) {
        index_status(e, b, name, st, sizeof(st), &n);
        if (strcmp(st, "ready") == 0)
            return;
        usleep(10000);
    }
    fail_msg("index %s never became ready", name);
}

/* Keys of a query's pages, each page max_keys long, joined by ','. */
static int walk(env *e, const char *path_q, int max, char *out, size_t n) {
    char path[1024], tok[512] = "";
    int pages = 0;
    out[0] = '\0';
    for (;;) {
        resp r;
        snprintf(path, sizeof(path), "%s%smax_keys=%d%s%s", path_q,
                 strchr(path_q, '?') ? "&" : "?", max, tok[0] ? "&continuation_token=" : "",
                 tok);
        req(e, "GET", path, NULL, NULL, &r);
        if (r.status != 200)
            fail_msg("%s: %ld %s", path, r.status, r.body);
        json_t *objs = json_object_get(r.json, "objects");
        assert_true(json_array_size(objs) <= (size_t)max);
        for (size_t i = 0; i < json_array_size(objs); i++) {
            const char *k = json_string_value(json_object_get(json_array_get(objs, i), "key"));
            strncat(out, k, n - strlen(out) - 2);
            strncat(out, ",", n - strlen(out) - 1);
        }
        pages++;
        int more = json_is_true(json_object_get(r.json, "is_truncated"));
        if (more)
            snprintf(tok, sizeof(tok), "%s", jstr(&r, "next_continuation_token", NULL));
        assert_int_equal(json_integer_value(json_object_get(r.json, "key_count")),
                         json_array_size(objs));
        resp_free(&r);
        if (!more)
            return pages;
    }
}

static void test_building_answers_409(void **state) {
    (void)state;
    g_no_driver = 1;
    env *e = env_start(0);
    assert_non_null(e);
    make_bucket(e, "ixb", "{\"versioning\":\"Enabled\"}");
    fill(e, "ixb");
    expect(e, "PUT", "/v1/buckets/ixb/indexes/cust", "{\"field\":\"user_metadata.cust\"}", 200);
    char st[32];
    long long n;
    index_status(e, "ixb", "cust", st, sizeof(st), &n);
    assert_string_equal(st, "building");
    assert_int_equal(n, 0);
    resp r;
    req(e, "GET", "/v1/buckets/ixb/indexes/cust/objects?eq=c1", NULL, NULL, &r);
    assert_error(&r, 409, "IndexBuilding");
    assert_non_null(strstr(jstr(&r, "error", "message"), "0 of 40 objects indexed"));
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixb/indexes/cust/values", NULL, NULL, &r);
    assert_error(&r, 409, "IndexBuilding");
    resp_free(&r);
    /* an index declared on an empty bucket is ready at once */
    make_bucket(e, "ixe", "{}");
    expect(e, "PUT", "/v1/buckets/ixe/indexes/cust", "{\"field\":\"user_metadata.cust\"}", 200);
    index_status(e, "ixe", "cust", st, sizeof(st), &n);
    assert_string_equal(st, "ready");
    /* a driver that starts later (an objlogd restart) finds the index
     * still building although no event was applied since, and builds it */
    g_no_driver = 0;
    query_restart(e);
    wait_ready(e, "ixb", "cust");
    index_status(e, "ixb", "cust", st, sizeof(st), &n);
    assert_int_equal(n, 40);
    env_stop(e);
}

static void test_query_pages_and_counts(void **state) {
    (void)state;
    env *e = env_start(0);
    assert_non_null(e);
    make_bucket(e, "ixq", "{\"versioning\":\"Enabled\"}");
    fill(e, "ixq");
    expect(e, "PUT", "/v1/buckets/ixq/indexes/cust", "{\"field\":\"user_metadata.cust\"}", 200);
    expect(e, "PUT", "/v1/buckets/ixq/indexes/ct",
           "{\"field\":\"content_type\",\"last_modified\":true}", 200);
    wait_ready(e, "ixq", "cust");
    wait_ready(e, "ixq", "ct");
    /* writes after ready are in the index at once (token/strong fences) */
    expect(e, "DELETE", "/v1/buckets/ixq/objects/k01", NULL, 200);
    expect(e, "PUT", "/v1/buckets/ixq/objects/k02",
           "{\"size\":100,\"etag\":\"e\",\"user_metadata\":{\"cust\":\"c1\"}}", 200);
    char keys[4096], all[4096];
    /* c1: k05 k13 k17 k21 k25 k33 k37 (k01 deleted, k29 has none) + k02 */
    int pages = walk(e, "/v1/buckets/ixq/indexes/cust/objects?eq=c1", 3, keys, sizeof(keys));
    assert_string_equal(keys, "k02,k05,k13,k17,k21,k25,k33,k37,");
    assert_int_equal(pages, 3);
    walk(e, "/v1/buckets/ixq/indexes/cust/objects?eq=c1", 1000, all, sizeof(all));
    assert_string_equal(keys, all);
    /* range [c2, c4): c2 then c3 */
    walk(e, "/v1/buckets/ixq/indexes/cust/objects?from=c2&to=c3", 4, keys, sizeof(keys));
    assert_string_equal(keys, "k06,k10,k14,k18,k22,k26,k30,k34,k38,");
    /* composite content type with a last-modified range: everything put
     * before k02's rewrite, i.e. all text/plain objects but k02 */
    resp r;
    req(e, "GET", "/v1/buckets/ixq/objects/k02", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    walk(e, "/v1/buckets/ixq/indexes/ct/objects?eq=text%2Fplain", 5, keys, sizeof(keys));
    assert_int_equal(strlen(keys), 19 * 4); /* 20 even keys, k02 lost its type */
    /* one shape with LIST: fields of the first object */
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/objects?eq=c0&max_keys=1", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *o = json_array_get(json_object_get(r.json, "objects"), 0);
    assert_string_equal(json_string_value(json_object_get(o, "key")), "k00");
    assert_int_equal(json_integer_value(json_object_get(o, "size")), 1);
    assert_string_equal(json_string_value(json_object_get(o, "storage_class")), "STANDARD");
    assert_non_null(json_object_get(o, "version_id"));
    assert_non_null(json_object_get(o, "last_modified"));
    assert_true(json_is_true(json_object_get(r.json, "is_truncated")));
    char tok[512];
    snprintf(tok, sizeof(tok), "%s", jstr(&r, "next_continuation_token", NULL));
    resp_free(&r);
    /* per-value count and bytes */
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/values", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    char *dump = json_dumps(json_object_get(r.json, "values"), JSON_COMPACT);
    /* c0: k00 k04 k08 k12 k16 k20 k24 k28 k32 k36 = 10 keys, sizes i+1;
     * c1: 7 old (6+14+18+22+26+34+38) + k02 (100); c2: k06.. (k02 moved);
     * c3: k03 k07 k11 k15 k23 k27 k31 k35 (k19 and k39 have none) */
    assert_string_equal(dump,
        "[{\"value\":\"c0\",\"count\":10,\"bytes\":190},"
        "{\"value\":\"c1\",\"count\":8,\"bytes\":258},"
        "{\"value\":\"c2\",\"count\":9,\"bytes\":207},"
        "{\"value\":\"c3\",\"count\":8,\"bytes\":160}]");
    free(dump);
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/values?eq=c3", NULL, NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.json, "values")), 1);
    resp_free(&r);
    /* list and show */
    req(e, "GET", "/v1/buckets/ixq/indexes", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    dump = json_dumps(json_object_get(r.json, "indexes"), JSON_COMPACT);
    assert_string_equal(dump,
        "[{\"name\":\"ct\",\"field\":\"content_type\",\"last_modified\":true,"
        "\"status\":\"ready\",\"indexed_keys\":39,\"bucket_objects\":39},"
        "{\"name\":\"cust\",\"field\":\"user_metadata.cust\",\"last_modified\":false,"
        "\"status\":\"ready\",\"indexed_keys\":39,\"bucket_objects\":39}]");
    free(dump);
    resp_free(&r);
    /* errors */
    req(e, "PUT", "/v1/buckets/ixq/indexes/bad", "{\"field\":\"size\"}", NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    assert_non_null(strstr(jstr(&r, "error", "message"), "user_metadata.KEY"));
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/ixq/indexes/bad", "{}", NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/ixq/indexes/a%2Fb", "{\"field\":\"content_type\"}", NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "PUT", "/v1/buckets/ixq/indexes/cust", "{\"field\":\"tag.x\"}", NULL, &r);
    assert_error(&r, 409, "IndexAlreadyExists");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/nope/objects?eq=1", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchIndex");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/nobucket/indexes/cust", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchBucket");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/objects?eq=a&from=b", NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/objects?max_keys=0", NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/objects?lm_from=x", NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    char path[1024];
    /* the token is bound to its index and to index queries */
    snprintf(path, sizeof(path), "/v1/buckets/ixq/indexes/ct/objects?continuation_token=%s", tok);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buckets/ixq/objects?continuation_token=%s", tok);
    req(e, "GET", path, NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust/objects?continuation_token=AAAA", NULL, NULL, &r);
    assert_error(&r, 400, "InvalidArgument");
    resp_free(&r);
    req(e, "POST", "/v1/buckets/ixq/indexes/cust", NULL, NULL, &r);
    assert_error(&r, 405, "MethodNotAllowed");
    resp_free(&r);
    /* object tags (JSON API "tags"): an index declared on a bucket with
     * data covers them after its backfill */
    expect(e, "PUT", "/v1/buckets/ixq/objects/t1",
           "{\"size\":3,\"etag\":\"e\",\"tags\":{\"tier\":\"hot\"}}", 200);
    expect(e, "PUT", "/v1/buckets/ixq/objects/t2",
           "{\"size\":4,\"etag\":\"e\",\"tags\":{\"tier\":\"cold\"}}", 200);
    expect(e, "PUT", "/v1/buckets/ixq/indexes/tier", "{\"field\":\"tag.tier\"}", 200);
    wait_ready(e, "ixq", "tier");
    walk(e, "/v1/buckets/ixq/indexes/tier/objects?eq=hot", 10, keys, sizeof(keys));
    assert_string_equal(keys, "t1,");
    /* drop */
    expect(e, "DELETE", "/v1/buckets/ixq/indexes/cust", NULL, 200);
    req(e, "GET", "/v1/buckets/ixq/indexes/cust", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchIndex");
    resp_free(&r);
    req(e, "DELETE", "/v1/buckets/ixq/indexes/cust", NULL, NULL, &r);
    assert_error(&r, 404, "NoSuchIndex");
    resp_free(&r);
    env_stop(e);
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_building_answers_409),
        cmocka_unit_test(test_query_pages_and_counts),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
