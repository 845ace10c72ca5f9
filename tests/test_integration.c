/* test_integration.c: the whole pipeline as separate processes.
 * The log is the mock cluster of `objlogd --kafka-only` or a real
 * 3-node Kafka (testlog.h); `objlogd --brokers` is the view. The test writes through libobjlog_producer from 4 threads, reads
 * every object back over HTTP, checks LIST exactly (with and without a
 * delimiter, paginated), SIGKILLs the view in the middle of a write burst,
 * restarts it on the same data directory, rebuilds a second view from an
 * empty directory by replaying the topic, and requires the two RocksDB
 * stores to be identical byte for byte in every column family: no
 * acknowledged write lost, none applied twice, replay deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpc.h"
#include "materializer.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"

#define N_OBJECTS 10000
#define N_BUCKETS 4
#define N_DIRS 50
#define N_WRITERS 4
#define N_CRASH 3000
#define N_CRASH_KEYS 2000 /* keys below N_CRASH - N_CRASH_KEYS get 2 versions */

typedef struct itest {
    char root[256], data1[300], data2[300];
    char objlogd[512];
    char boot[1024];
    char url[128];
    testlog *log;
    proc *view;
} itest;

static itest T;

static void object_name(int i, char *bucket, char *key) {
    sprintf(bucket, "itest%d", i % N_BUCKETS);
    sprintf(key, "d%02d/k%05d", (i / N_BUCKETS) % N_DIRS, i);
}

static proc *start_view(const char *data, char *url, size_t url_size) {
    proc *p = testlog_start_view(T.log, data, NULL, url, url_size);
    assert_non_null(p);
    return p;
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data1, sizeof(T.data1), "%s/view1", T.root);
    snprintf(T.data2, sizeof(T.data2), "%s/view2", T.root);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    T.log = testlog_start(8);
    assert_non_null(T.log);
    snprintf(T.boot, sizeof(T.boot), "%s", testlog_bootstrap(T.log));
    T.view = start_view(T.data1, T.url, sizeof(T.url));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.view)
        proc_stop(T.view, 10000);
    testlog_stop(T.log);
    proc_rmtree(T.root);
    return 0;
}

static objlog_producer *new_producer(const char *ack) {
    char err[512];
    objlog_producer_conf *c = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(c, "bootstrap.servers", T.boot, err, sizeof(err)), OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "query.url", T.url, err, sizeof(err)), OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "ack", ack, err, sizeof(err)), OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "outcome.timeout.ms", "30000", err, sizeof(err)), OBJLOG_CONF_OK);
    objlog_producer *p = objlog_producer_new(c, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

/* ---- phase 1: 10,000 writes from 4 threads, read back, LIST ---- */

typedef struct write_tally {
    atomic_int ok;
    atomic_int other;
    char first_error[1024];
} write_tally;

static void tally_cb(const objlog_write_result *res, void *opaque) {
    write_tally *t = opaque;
    if (res->status == OBJLOG_STATUS_OK || res->status == OBJLOG_STATUS_LOGGED) {
        atomic_fetch_add(&t->ok, 1);
        return;
    }
    if (atomic_fetch_add(&t->other, 1) == 0)
        snprintf(t->first_error, sizeof(t->first_error), "%s %s %.300s",
                 objlog_status_name(res->status), res->error_code, res->error_message);
}

typedef struct writer_arg {
    objlog_producer *p;
    int first, step, count;
    write_tally *tally;
} writer_arg;

static void *writer_main(void *a) {
    writer_arg *w = a;
    char bucket[32], key[64], etag[32], err[256];
    for (int n = 0, i = w->first; n < w->count; n++, i += w->step) {
        object_name(i, bucket, key);
        sprintf(etag, "e%05d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag, .content_type = "text/plain"};
        if (objlog_producer_put_object(w->p, bucket, key, strlen(key), &m, NULL, tally_cb,
                                       w->tally, err, sizeof(err)) != 0)
            fail_msg("put %s/%s rejected: %s", bucket, key, err);
    }
    return NULL;
}

typedef struct reader_arg {
    int first, step;
    atomic_int *good;
    char error[1024];
} reader_arg;

static void *reader_main(void *a) {
    reader_arg *r = a;
    httpc *c = httpc_new(T.url);
    char bucket[32], key[64], path[256];
    httpc_resp resp;
    for (int i = r->first; i < N_OBJECTS; i += r->step) {
        object_name(i, bucket, key);
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s", bucket, key);
        if (httpc_do(c, "GET", path, NULL, NULL, &resp) != 0 || resp.status != 200) {
            snprintf(r->error, sizeof(r->error), "GET %s: %ld %.500s", path, resp.status,
                     resp.body ? resp.body : "");
            break;
        }
        json_t *j = json_loads(resp.body, 0, NULL);
        char etag[32];
        sprintf(etag, "e%05d", i);
        int same = j && !strcmp(json_string_value(json_object_get(j, "etag")) ?: "", etag) &&
                   json_integer_value(json_object_get(j, "size")) == i &&
                   !strcmp(json_string_value(json_object_get(j, "key")) ?: "", key);
        json_decref(j);
        if (!same) {
            snprintf(r->error, sizeof(r->error), "GET %s: wrong body %.500s", path, resp.body);
            break;
        }
        atomic_fetch_add(r->good, 1);
    }
    httpc_destroy(c);
    return NULL;
}

static json_t *get_json(httpc *c, const char *path, long want_status) {
    httpc_resp resp;
    assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &resp), 0);
    if (resp.status != want_status)
        fail_msg("GET %s: status %ld, body %s", path, resp.status, resp.body);
    assert_true(resp.applied[0] != '\0'); /* every read says what it reflects */
    json_t *j = json_loads(resp.body, 0, NULL);
    assert_non_null(j);
    return j;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Pages through LIST and returns the concatenated keys and prefixes; checks
 * page sizes against max_keys and that only the last page is untruncated. */
static void list_all(httpc *c, const char *bucket, const char *query, int max_keys,
                     char ***keys, int *nkeys, char ***prefixes, int *nprefixes, int *pages) {
    char path[1024], token[512] = "";
    *nkeys = *nprefixes = *pages = 0;
    *keys = calloc(N_OBJECTS + 1, sizeof(char *));
    *prefixes = calloc(N_OBJECTS + 1, sizeof(char *));
    for (;;) {
        char *etok = token[0] ? httpc_escape(c, token, strlen(token)) : NULL;
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects?max_keys=%d%s%s%s%s", bucket,
                 max_keys, query[0] ? "&" : "", query, etok ? "&continuation_token=" : "",
                 etok ? etok : "");
        free(etok);
        json_t *j = get_json(c, path, 200);
        json_t *objs = json_object_get(j, "objects"), *cps = json_object_get(j, "common_prefixes");
        size_t i;
        json_t *v;
        json_array_foreach(objs, i, v)(*keys)[(*nkeys)++] =
            strdup(json_string_value(json_object_get(v, "key")));
        json_array_foreach(cps, i, v)(*prefixes)[(*nprefixes)++] = strdup(json_string_value(v));
        int count = (int)(json_array_size(objs) + json_array_size(cps));
        assert_int_equal(json_integer_value(json_object_get(j, "key_count")), count);
        int truncated = json_is_true(json_object_get(j, "is_truncated"));
        (*pages)++;
        if (truncated) {
            assert_int_equal(count, max_keys);
            snprintf(token, sizeof(token), "%s",
                     json_string_value(json_object_get(j, "next_continuation_token")));
        }
        json_decref(j);
        if (!truncated)
            break;
        assert_true(*pages < 1000);
    }
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void expect_list(httpc *c, int bucket_no, const char *query, int max_keys,
                        const char *prefix, int want_keys, int want_prefixes, int want_pages) {
    char bucket[32], key[64];
    char **keys, **prefixes;
    int nk, np, pages;
    sprintf(bucket, "itest%d", bucket_no);
    list_all(c, bucket, query, max_keys, &keys, &nk, &prefixes, &np, &pages);
    assert_int_equal(nk, want_keys);
    assert_int_equal(np, want_prefixes);
    assert_int_equal(pages, want_pages);
    /* Expected keys: every object of this bucket under prefix, byte order. */
    char **want = calloc(N_OBJECTS, sizeof(char *));
    int nw = 0;
    for (int i = bucket_no; i < N_OBJECTS && want_keys; i += N_BUCKETS) {
        object_name(i, bucket, key);
        if (!strncmp(key, prefix, strlen(prefix)))
            want[nw++] = strdup(key);
    }
    qsort(want, (size_t)nw, sizeof(char *), cmp_str);
    assert_int_equal(nw, want_keys);
    for (int i = 0; i < nk; i++)
        assert_string_equal(keys[i], want[i]);
    for (int i = 0; i < np; i++) {
        char dir[16];
        snprintf(dir, sizeof(dir), "d%02d/", i % 100);
        assert_string_equal(prefixes[i], dir);
    }
    free_list(want, nw);
    free_list(keys, nk);
    free_list(prefixes, np);
}

static void writes_read_back_and_list_exactly(void **state) {
    (void)state;
    char err[256], bucket[32];
    objlog_producer *p = new_producer("applied");
    objlog_write_result res;
    for (int b = 0; b < N_BUCKETS; b++) {
        sprintf(bucket, "itest%d", b);
        assert_int_equal(objlog_producer_create_bucket_sync(p, bucket, "acme", OBJLOG_VERSIONING_UNVERSIONED,
                                                            NULL, &res, err, sizeof(err)), 0);
        if (res.status != OBJLOG_STATUS_OK)
            fail_msg("create %s: %s %s", bucket, res.error_code, res.error_message);
    }
    write_tally tally = {0};
    pthread_t th[N_WRITERS];
    writer_arg wa[N_WRITERS];
    for (int t = 0; t < N_WRITERS; t++) {
        wa[t] = (writer_arg){p, t, N_WRITERS, N_OBJECTS / N_WRITERS, &tally};
        pthread_create(&th[t], NULL, writer_main, &wa[t]);
    }
    for (int t = 0; t < N_WRITERS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(objlog_producer_flush(p, 120000), 0);
    if (atomic_load(&tally.other))
        fail_msg("%d writes not OK, first: %s", atomic_load(&tally.other), tally.first_error);
    assert_int_equal(atomic_load(&tally.ok), N_OBJECTS);
    objlog_producer_destroy(p);

    atomic_int good = 0;
    reader_arg ra[4];
    for (int t = 0; t < 4; t++) {
        ra[t] = (reader_arg){.first = t, .step = 4, .good = &good};
        pthread_create(&th[t], NULL, reader_main, &ra[t]);
    }
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < 4; t++)
        if (ra[t].error[0])
            fail_msg("%s", ra[t].error);
    assert_int_equal(atomic_load(&good), N_OBJECTS);

    httpc *c = httpc_new(T.url);
    int per_bucket = N_OBJECTS / N_BUCKETS, per_dir = per_bucket / N_DIRS;
    /* Without a delimiter: every key, in byte order, over 3 pages. */
    expect_list(c, 0, "", 1000, "", per_bucket, 0, 3);
    expect_list(c, 3, "", 1000, "", per_bucket, 0, 3);
    /* With "/": the 50 directories collapse to common prefixes. */
    expect_list(c, 1, "delimiter=%2F", 1000, "", 0, N_DIRS, 1);
    /* Common prefixes count toward max_keys: 50 prefixes in pages of 20. */
    expect_list(c, 1, "delimiter=%2F", 20, "", 0, N_DIRS, 3);
    /* A prefix selects exactly one directory: 50 keys in pages of 16. */
    expect_list(c, 2, "prefix=d07%2F", 16, "d07/", per_dir, 0, 4);
    /* start_after skips everything up to and including the given key. */
    json_t *j = get_json(c, "/v1/buckets/itest0/objects?prefix=d00%2F&start_after=d00%2Fk09400", 200);
    json_t *objs = json_object_get(j, "objects");
    assert_int_equal(json_array_size(objs), 2); /* d00/k09600, d00/k09800 */
    json_decref(j);
    httpc_destroy(c);
}

/* ---- phase 2: SIGKILL the view mid-write, restart, replay into a new view ---- */

/* The kill lands inside the burst by construction, not by timing: the
 * writer issues the first CRASH_GATE writes, then waits for `killed`
 * before issuing the rest, and the test kills the view once CRASH_KILL_AT
 * of them are acknowledged. So at the kill at most CRASH_GATE < N_CRASH
 * writes exist, and N_CRASH - CRASH_GATE are produced while the view is
 * down. */
#define CRASH_KILL_AT (N_CRASH / 3)
#define CRASH_GATE (N_CRASH / 2)

typedef struct crash_writer {
    objlog_producer *p;
    write_tally tally;
    atomic_int acked;
    atomic_int killed;
} crash_writer;

static void crash_cb(const objlog_write_result *res, void *opaque) {
    crash_writer *w = opaque;
    tally_cb(res, &w->tally);
    atomic_fetch_add(&w->acked, 1);
}

static void *crash_writer_main(void *a) {
    crash_writer *w = a;
    char key[64], etag[32], err[256];
    for (int i = 0; i < N_CRASH; i++) {
        while (i == CRASH_GATE && !atomic_load(&w->killed))
            usleep(1000);
        sprintf(key, "crash/k%05d", i % N_CRASH_KEYS);
        sprintf(etag, "c%05d", i);
        objlog_object_meta m = {.size = (uint64_t)i, .etag = etag};
        if (objlog_producer_put_object(w->p, "itestv", key, strlen(key), &m, NULL, crash_cb, w,
                                       err, sizeof(err)) != 0)
            fail_msg("put %s: %s", key, err);
        if (i % 100 == 99)
            usleep(20000); /* spread the burst: the view is applying when killed */
    }
    return NULL;
}

static void wait_caught_up(const char *url) {
    httpc *c = httpc_new(url);
    char path[128];
    static const char *const buckets[] = {"itest0", "itest1", "itest2", "itest3", "itestv"};
    for (size_t b = 0; b < sizeof(buckets) / sizeof(buckets[0]); b++) {
        /* A strong read fences the bucket's partition at the log end. */
        sprintf(path, "/v1/buckets/%s/objects?max_keys=1&timeout_ms=30000", buckets[b]);
        json_t *j = get_json(c, path, 200);
        json_decref(j);
    }
    httpc_destroy(c);
}

static void compare_stores(const char *a, const char *b, size_t rows[OBJLOG_CF_COUNT]) {
    char err[512];
    objlog_store *sa = objlog_store_open(a, err, sizeof(err));
    if (!sa)
        fail_msg("%s", err);
    objlog_store *sb = objlog_store_open(b, err, sizeof(err));
    if (!sb)
        fail_msg("%s", err);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
        rocksdb_iterator_t *ia = rocksdb_create_iterator_cf(objlog_store_db(sa), ro, objlog_store_cf(sa, cf));
        rocksdb_iterator_t *ib = rocksdb_create_iterator_cf(objlog_store_db(sb), ro, objlog_store_cf(sb, cf));
        size_t n = 0;
        for (rocksdb_iter_seek_to_first(ia), rocksdb_iter_seek_to_first(ib);
             rocksdb_iter_valid(ia) || rocksdb_iter_valid(ib);
             rocksdb_iter_next(ia), rocksdb_iter_next(ib), n++) {
            if (!rocksdb_iter_valid(ia) || !rocksdb_iter_valid(ib))
                fail_msg("cf %s: one store has %zu rows, the other more", objlog_cf_name(cf), n);
            size_t kal, kbl, val, vbl;
            const char *ka = rocksdb_iter_key(ia, &kal), *kb = rocksdb_iter_key(ib, &kbl);
            const char *va = rocksdb_iter_value(ia, &val), *vb = rocksdb_iter_value(ib, &vbl);
            /* The token secret is each view's own (objlog_store_meta_is_local). */
            int local = cf == OBJLOG_CF_META && objlog_store_meta_is_local(ka, kal);
            if (kal != kbl || memcmp(ka, kb, kal) ||
                (!local && (val != vbl || memcmp(va, vb, val))))
                fail_msg("cf %s: row %zu differs", objlog_cf_name(cf), n);
        }
        rows[cf] = n;
        rocksdb_iter_destroy(ia);
        rocksdb_iter_destroy(ib);
    }
    rocksdb_readoptions_destroy(ro);
    objlog_store_close(sa);
    objlog_store_close(sb);
}

static void view_killed_mid_write_equals_replayed_view(void **state) {
    (void)state;
    crash_writer w = {0};
    char err[256];
    objlog_write_result res;
    /* A versioned bucket: an event applied twice would show as an extra
     * version in the key's header row, so the store comparison sees it. */
    objlog_producer *admin = new_producer("applied");
    assert_int_equal(objlog_producer_create_bucket_sync(admin, "itestv", "acme", OBJLOG_VERSIONING_ENABLED,
                                                        NULL, &res, err, sizeof(err)), 0);
    assert_int_equal(res.status, OBJLOG_STATUS_OK);
    objlog_producer_destroy(admin);
    w.p = new_producer("logged"); /* acks come from Kafka, not the view */
    pthread_t th;
    pthread_create(&th, NULL, crash_writer_main, &w);
    while (atomic_load(&w.acked) < CRASH_KILL_AT)
        usleep(1000);
    proc_kill(T.view); /* SIGKILL in the middle of the burst */
    T.view = NULL;
    int acked_at_kill = atomic_load(&w.acked);
    atomic_store(&w.killed, 1); /* only now may the writer pass CRASH_GATE */
    /* The kill landed inside the burst: writes were still to come. */
    assert_true(acked_at_kill >= CRASH_KILL_AT && acked_at_kill <= CRASH_GATE);
    assert_true(acked_at_kill < N_CRASH);
    pthread_join(th, NULL);
    assert_int_equal(objlog_producer_flush(w.p, 60000), 0);
    objlog_producer_destroy(w.p);
    if (atomic_load(&w.tally.other))
        fail_msg("%d crash writes failed: %s", atomic_load(&w.tally.other), w.tally.first_error);
    assert_int_equal(atomic_load(&w.tally.ok), N_CRASH);

    T.view = start_view(T.data1, T.url, sizeof(T.url));
    wait_caught_up(T.url);
    /* Every acknowledged write is in the restarted view. */
    httpc *c = httpc_new(T.url);
    char **keys, **prefixes;
    int nk, np, pages;
    list_all(c, "itestv", "prefix=crash%2F", 1000, &keys, &nk, &prefixes, &np, &pages);
    assert_int_equal(nk, N_CRASH_KEYS);
    for (int i = 0; i < N_CRASH_KEYS; i++) {
        char want[64];
        sprintf(want, "crash/k%05d", i);
        assert_string_equal(keys[i], want);
    }
    /* The newest of the two writes of a key is the one GET returns. */
    json_t *j = get_json(c, "/v1/buckets/itestv/objects/crash%2Fk00007", 200);
    assert_string_equal(json_string_value(json_object_get(j, "etag")), "c02007");
    json_decref(j);
    free_list(keys, nk);
    free_list(prefixes, np);
    httpc_destroy(c);

    /* A second view rebuilt from an empty directory by replaying the topic. */
    char url2[128];
    proc *view2 = start_view(T.data2, url2, sizeof(url2));
    wait_caught_up(url2);
    assert_int_equal(proc_stop(view2, 20000), 0);
    assert_int_equal(proc_stop(T.view, 20000), 0);
    T.view = NULL;
    size_t rows[OBJLOG_CF_COUNT] = {0};
    compare_stores(T.data1, T.data2, rows);
    assert_int_equal(rows[OBJLOG_CF_OBJECTS], N_OBJECTS + N_CRASH_KEYS);
    /* One row per version, each event once, and a header row per key of
     * the versioned bucket (an Unversioned bucket's keys have none). */
    assert_int_equal(rows[OBJLOG_CF_VERSIONS], N_OBJECTS + N_CRASH_KEYS + N_CRASH);
    assert_int_equal(rows[OBJLOG_CF_BUCKETS], N_BUCKETS + 1);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writes_read_back_and_list_exactly),
        cmocka_unit_test(view_killed_mid_write_equals_replayed_view),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
