/* test_ranges.c: range handoffs (splits, moves, merges) of a running
 * objlogd, on the mock cluster and on real Kafka (BOTH_LOGS).
 *
 *  - under load: 4 HTTP writers (plain PUTs, If-None-Match creates,
 *    If-Match CAS counters on keys on both sides of the split, PUT then
 *    DELETE) and the linearizability load (2 writers, 2 strong readers)
 *    over versioned buckets that share a bucket-hash prefix, while the
 *    range holding the upper ones is split off to another partition,
 *    moved to a third and merged back, then three buckets are split
 *    inside (a CAS counter on each side) and one merged back. Every acknowledged write is there
 *    exactly once (one version per key written once), no write is refused
 *    (the handoff holds them, it never answers WrongRange), the counters
 *    are exact, every hot key's history is linearizable, and a view
 *    rebuilt from the log into an empty directory dumps byte for byte as
 *    the live one;
 *  - a write first sent before a split and resent after it with the same
 *    request id is applied once (its first outcome comes back);
 *  - libobjlog_producer (ack=applied) routing by the map from before a
 *    split gets WrongRange from the old partition, reads the new map
 *    from the control topic and resends, same request id: the caller
 *    sees OK, the write is applied once on the new partition;
 *  - another objlogd on the same log, which did not run the handoff,
 *    resends a write that meets WrongRange by the new map (same request
 *    id): the client gets 200, and that node's readers follow the map;
 *  - --auto-split: two writers over buckets of one range make its
 *    partition hot; the node splits it without a request, and stops
 *    splitting when the load stops;
 *  - `objlog topics add-partitions` grows the topic; after a restart a
 *    range moves onto a new partition and its writes go there;
 *  - bad requests get clear errors and change nothing;
 *  - SIGKILL of the node after the RangeOut and after the RangeIn (before
 *    the map is published; objlogd --test-handoff-pause-ms opens the
 *    windows), of splits between buckets and inside them: the restarted
 *    node finishes the handoff from the log, no acknowledged write is
 *    lost or doubled, and each bucket counts what it lists.
 *
 * Invariant: every process and thread the test starts is stopped by it;
 * worker threads never assert, they count, and the main thread asserts
 * after joining them. */
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
#include <unistd.h>

#include "httpc.h"
#include "rangetest.h"
#include "linload.h"
#include "objlog_producer.h"
#include "viewproc.h"

#define PARTS 4
#define NBUCKETS 6 /* <prefix>-0 .. -5: one bucket-hash prefix */
#define MAX_KEYS 20000

static viewtest_frame F;
static viewproc LIVE;
static int NPARTS = PARTS;       /* grows with test_add_partitions */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- small HTTP helpers (main thread: they assert) ---- */


static void create_buckets(httpc *h, const char *prefix) {
    for (int i = 0; i < NBUCKETS; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/buckets/%s-%d", prefix, i);
        json_decref(rt_req_json(h, "PUT", path, "{\"versioning\":\"Enabled\"}", 200));
    }
}

/* The partition a write landed on, from its token "p.offset". */
static int token_partition(json_t *w) {
    const char *t = json_string_value(json_object_get(w, "token"));
    assert_non_null(t);
    return atoi(t);
}


/* Versions (1) and delete markers (0) per key of a bucket, from
 * ListObjectVersions, page by page: counts[i] for keys[i] found by name. */
typedef struct key_count {
    char key[48];
    int versions, markers;
} key_count;

static size_t list_versions(httpc *h, const char *bucket, key_count *out, size_t max) {
    size_t n = 0;
    char km[64] = "", vm[64] = "";
    for (;;) {
        char path[256];
        snprintf(path, sizeof(path), "/v1/buckets/%s/versions?key_marker=%s&version_id_marker=%s",
                 bucket, km, vm);
        json_t *j = rt_req_json(h, "GET", path, NULL, 200);
        json_t *vs = json_object_get(j, "versions");
        size_t i;
        json_t *v;
        json_array_foreach(vs, i, v) {
            const char *k = json_string_value(json_object_get(v, "key"));
            int marker = json_is_true(json_object_get(v, "delete_marker"));
            if (n == 0 || strcmp(out[n - 1].key, k) != 0) {
                assert_true(n < max);
                memset(&out[n], 0, sizeof(out[n]));
                snprintf(out[n].key, sizeof(out[n].key), "%s", k);
                n++;
            }
            out[n - 1].versions += !marker;
            out[n - 1].markers += marker;
        }
        int more = json_is_true(json_object_get(j, "is_truncated"));
        if (more) {
            snprintf(km, sizeof(km), "%s",
                     json_string_value(json_object_get(j, "next_key_marker")));
            snprintf(vm, sizeof(vm), "%s",
                     json_string_value(json_object_get(j, "next_version_id_marker")));
        }
        json_decref(j);
        if (!more)
            return n;
    }
}

static const key_count *find_key(const key_count *kc, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(kc[i].key, key) == 0)
            return &kc[i];
    return NULL;
}

/* ---- the writers ---- */

enum { W_PLAIN, W_CREATE, W_CAS, W_DELETE, W_N };

typedef struct writer {
    int kind;
    const char *url, *prefix;
    atomic_int *stop;
    pthread_t t;
    /* results, read after the join */
    char (*acked)[48];           /* acked keys, "<bucket>/<key>" */
    long nacked;
    long refused;                /* answers neither 200 nor an expected 412 */
    long wrong_range;            /* ... of which WrongRange: never, for a handoff */
    long sent;
    long cas_ok[2];              /* W_CAS: increments of counter 0 and 1 */
    char last_refusal[256];
} writer;

static const char *etag_of(long v, char out[33]) {
    snprintf(out, 33, "%032lx", v);
    return out;
}

static void note_refused(writer *w, const httpc_resp *r) {
    w->refused++;
    int answered = r->status > 0 && r->body;
    w->wrong_range += answered && strstr(r->body, "WrongRange") != NULL;
    snprintf(w->last_refusal, sizeof(w->last_refusal), "%ld %.200s", r->status,
             answered ? r->body : "(no answer)");
}

static void acked_add(writer *w, const char bucket[16], const char key[24]) {
    if (w->nacked < MAX_KEYS)
        snprintf(w->acked[w->nacked++], 48, "%s/%s", bucket, key);
}

/* Writes wait up to this long for their outcome (a handoff holds them
 * for a fraction of a second; a busy machine under a real Kafka may take
 * longer than the 2 s default to apply one). */
#define WRITE_TIMEOUT "?timeout_ms=10000"

/* One increment of counter c (CAS: read, then If-Match). */
static void cas_step(writer *w, httpc *h, int c) {
    char path[128], body[96], e[33], hdr[80];
    snprintf(path, sizeof(path), "/v1/buckets/%s-%d/objects/counter", w->prefix,
             c ? NBUCKETS - 1 : 0);
    httpc_resp r;
    memset(&r, 0, sizeof(r));
    if (httpc_do(h, "GET", path, NULL, NULL, &r) != 0 || r.status != 200) {
        note_refused(w, &r);
        return;
    }
    json_t *j = json_loads(r.body, 0, NULL);
    const char *cur = json_string_value(json_object_get(j, "etag"));
    long v = cur ? strtol(cur, NULL, 16) : -1;
    snprintf(hdr, sizeof(hdr), "If-Match: %s", cur ? cur : "");
    json_decref(j);
    snprintf(body, sizeof(body), "{\"size\":1,\"etag\":\"%s\"}", etag_of(v + 1, e));
    const char *hs[] = {hdr, NULL};
    w->sent++;
    strncat(path, WRITE_TIMEOUT, sizeof(path) - strlen(path) - 1);
    if (httpc_do(h, "PUT", path, body, hs, &r) != 0)
        note_refused(w, &r);
    else if (r.status == 200)
        w->cas_ok[c]++;
    else if (r.status != 412)
        note_refused(w, &r);
}

static void *writer_main(void *arg) {
    writer *w = arg;
    httpc *h = httpc_new(w->url);
    for (long i = 0; !atomic_load(w->stop); i++) {
        char bucket[16], key[24], path[160], e[33], body[96];
        snprintf(bucket, sizeof(bucket), "%s-%ld", w->prefix, i % NBUCKETS);
        snprintf(key, sizeof(key), "w%d-%ld", w->kind, i);
        snprintf(path, sizeof(path), "/v1/buckets/%s/objects/%s" WRITE_TIMEOUT, bucket, key);
        snprintf(body, sizeof(body), "{\"size\":1,\"etag\":\"%s\"}", etag_of(i, e));
        httpc_resp r;
        memset(&r, 0, sizeof(r));
        if (w->kind == W_CAS) {
            cas_step(w, h, (int)(i % 2));
        } else {
            const char *inm[] = {"If-None-Match: *", NULL};
            w->sent++;
            int rc = httpc_do(h, "PUT", path, body, w->kind == W_CREATE ? inm : NULL, &r);
            if (rc != 0 || r.status != 200) {
                note_refused(w, &r);
            } else if (w->kind != W_DELETE) {
                acked_add(w, bucket, key);
            } else if (httpc_do(h, "DELETE", path, NULL, NULL, &r) == 0 && r.status == 200) {
                acked_add(w, bucket, key);
            } else {
                note_refused(w, &r);
            }
        }
        sleep_ms(2);
    }
    httpc_destroy(h);
    return NULL;
}

/* ---- setup ---- */

static int group_setup(void **state) {
    (void)state;
    return rt_group_start(&F, &LIVE, PARTS);
}

static int group_teardown(void **state) {
    (void)state;
    rt_group_stop(&F, &LIVE, "test_ranges");
    return 0;
}

/* ---- the tests ---- */

static void test_bad_requests(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    json_t *before = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    static const struct {
        const char *method, *path, *body;
        long status;
        const char *code;
    } cases[] = {
        {"POST", "/v1/ranges/split", "", 400, "MalformedJSON"},
        {"POST", "/v1/ranges/split", "[1]", 400, "MalformedJSON"},
        {"POST", "/v1/ranges/split", "{\"key\":\"k\"}", 400, "InvalidArgument"},
        {"POST", "/v1/ranges/split", "{\"bucket\":\"A\"}", 400, "InvalidArgument"},
        {"POST", "/v1/ranges/split", "{\"bucket\":\"bad-one\",\"key\":7}", 400,
         "InvalidArgument"},
        {"POST", "/v1/ranges/split", "{\"bucket\":\"bad-one\",\"to_partition\":-1}", 400,
         "InvalidArgument"},
        {"POST", "/v1/ranges/split", "{\"bucket\":\"bad-one\",\"to_partition\":4}", 409,
         "NoSuchPartition"},
        {"POST", "/v1/ranges/split", "{\"bucket\":\"bad-one\",\"key\":\"k\"}", 404,
         "NoSuchBucket"},
        /* bucket hash 0x1cab: the first range, which has none before it */
        {"POST", "/v1/ranges/merge", "{\"bucket\":\"first-range\"}", 409, "InvalidRange"},
        {"GET", "/v1/ranges/split", NULL, 405, "MethodNotAllowed"},
        {"POST", "/v1/ranges/join", "{\"bucket\":\"bad-one\"}", 404, "NoSuchRoute"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        httpc_resp r;
        assert_int_equal(httpc_do(h, cases[i].method, cases[i].path, cases[i].body, NULL, &r),
                         0);
        if (r.status != cases[i].status || !strstr(r.body, cases[i].code))
            fprintf(stderr, "case %zu %s %s: %ld %s\n", i, cases[i].method, cases[i].path,
                    r.status, r.body);
        assert_int_equal(r.status, cases[i].status);
        assert_non_null(strstr(r.body, cases[i].code));
    }
    /* Nothing moved: the same map, the same epoch. */
    json_t *after = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    httpc_destroy(h);
}

/* A write first sent before a split and resent after it, same request id:
 * applied once, its first outcome back. */
static void test_retry_across_split(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    create_buckets(h, "rty");
    const char *rid_hdr = "X-Objlog-Request-Id: 0123456789abcdef0123456789abcdef";
    const char *hs[] = {rid_hdr, NULL};
    const char *path = "/v1/buckets/rty-5/objects/once";
    const char *body = "{\"size\":3,\"etag\":\"00000000000000000000000000000001\"}";
    httpc_resp r;
    assert_int_equal(httpc_do(h, "PUT", path, body, hs, &r), 0);
    assert_int_equal(r.status, 200);
    json_t *first = json_loads(r.body, 0, NULL);
    int p0 = token_partition(first);
    json_t *ho = rt_handoff(h, "split", "{\"bucket\":\"rty-3\"}");
    assert_int_equal(json_integer_value(json_object_get(ho, "from_partition")), p0);
    int q = (int)json_integer_value(json_object_get(ho, "to_partition"));
    assert_int_not_equal(q, p0);
    assert_true(json_integer_value(json_object_get(ho, "imported_requests")) >= 4);
    json_decref(ho);
    assert_int_equal(httpc_do(h, "PUT", path, body, hs, &r), 0);
    assert_int_equal(r.status, 200);
    json_t *again = json_loads(r.body, 0, NULL);
    /* Answered by the partition that holds the key now, with the first
     * outcome: the same version. */
    assert_int_equal(token_partition(again), q);
    assert_string_equal(json_string_value(json_object_get(again, "version_id")),
                        json_string_value(json_object_get(first, "version_id")));
    key_count kc[4];
    size_t n = list_versions(h, "rty-5", kc, 4);
    assert_int_equal(n, 1);
    assert_int_equal(kc[0].versions, 1);
    /* A new write to the key goes to the new partition: a second version. */
    assert_int_equal(httpc_do(h, "PUT", path, body, NULL, &r), 0);
    assert_int_equal(r.status, 200);
    n = list_versions(h, "rty-5", kc, 4);
    assert_int_equal(kc[0].versions, 2);
    /* Keys below the split stay where they were. */
    assert_int_equal(httpc_do(h, "PUT", "/v1/buckets/rty-0/objects/low", body, NULL, &r), 0);
    json_t *low = json_loads(r.body, 0, NULL);
    assert_int_equal(token_partition(low), p0);
    json_decref(low);
    json_decref(first);
    json_decref(again);
    /* And back: the range merges into the one before it. */
    json_decref(rt_handoff(h, "merge", "{\"bucket\":\"rty-3\"}"));
    httpc_destroy(h);
}

static void test_handoffs_under_load(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    const char *prefix = "hol";
    create_buckets(h, prefix);
    char path[128];
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof(path), "/v1/buckets/%s-%d/objects/counter", prefix,
                 c ? NBUCKETS - 1 : 0);
        json_decref(rt_req_json(h, "PUT", path,
                                "{\"size\":1,\"etag\":\"00000000000000000000000000000000\"}",
                                200));
    }
    atomic_int stop = 0;
    writer w[W_N];
    for (int i = 0; i < W_N; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].kind = i;
        w[i].url = LIVE.url;
        w[i].prefix = prefix;
        w[i].stop = &stop;
        w[i].acked = calloc(MAX_KEYS, 48);
        assert_non_null(w[i].acked);
        assert_int_equal(pthread_create(&w[i].t, NULL, writer_main, &w[i]), 0);
    }
    linload L;
    const char *urls[] = {LIVE.url};
    char lin_bucket[64];
    snprintf(lin_bucket, sizeof(lin_bucket), "%s-4", prefix);
    assert_int_equal(linload_start(&L, urls, 1, lin_bucket), 0);
    sleep_ms(1500);
    json_t *a = rt_handoff(h, "split", "{\"bucket\":\"hol-3\"}");
    sleep_ms(1500);
    json_t *b = rt_handoff(h, "move", "{\"bucket\":\"hol-3\"}");
    sleep_ms(1500);
    json_t *c = rt_handoff(h, "merge", "{\"bucket\":\"hol-3\"}");
    sleep_ms(1500);
    /* Inside buckets: counter 0 stays on its bucket's first range while
     * the writers' keys move; counter 1 moves; the linearizability load's
     * keys hot0, hot1 stay and hot2... move. */
    json_decref(rt_handoff(h, "split", "{\"bucket\":\"hol-0\",\"key\":\"d\"}"));
    sleep_ms(1000);
    json_decref(rt_handoff(h, "split", "{\"bucket\":\"hol-5\",\"key\":\"a\"}"));
    sleep_ms(1000);
    json_decref(rt_handoff(h, "split", "{\"bucket\":\"hol-4\",\"key\":\"hot2\"}"));
    sleep_ms(1000);
    json_decref(rt_handoff(h, "merge", "{\"bucket\":\"hol-0\",\"key\":\"d\"}"));
    sleep_ms(1000);
    atomic_store(&stop, 1);
    for (int i = 0; i < W_N; i++)
        pthread_join(w[i].t, NULL);
    char msg[512];
    int lin = linload_finish(&L, msg, sizeof(msg));
    fprintf(stderr, "linearizability: %s\n", msg);
    assert_true(lin);
    /* Three handoffs, each one epoch on; the split and move moved the
     * range off its partition, the merge brought it back. */
    uint32_t e0 = (uint32_t)json_integer_value(json_object_get(a, "epoch"));
    assert_int_equal(json_integer_value(json_object_get(b, "epoch")), e0 + 1);
    assert_int_equal(json_integer_value(json_object_get(c, "epoch")), e0 + 2);
    assert_int_equal(json_integer_value(json_object_get(c, "to_partition")),
                     json_integer_value(json_object_get(a, "from_partition")));
    json_decref(a);
    json_decref(b);
    json_decref(c);

    /* No write was refused; every acknowledged one is there once. */
    static key_count kc[NBUCKETS][MAX_KEYS];
    size_t nk[NBUCKETS];
    for (int i = 0; i < NBUCKETS; i++) {
        char bucket[64];
        snprintf(bucket, sizeof(bucket), "%s-%d", prefix, i);
        nk[i] = list_versions(h, bucket, kc[i], MAX_KEYS);
    }
    long acked = 0;
    for (int i = 0; i < W_N; i++) {
        if (w[i].refused)
            fprintf(stderr, "writer %d: %ld refused, last %s\n", i, w[i].refused,
                    w[i].last_refusal);
        assert_int_equal(w[i].refused, 0);
        for (long k = 0; k < w[i].nacked; k++) {
            char *slash = strchr(w[i].acked[k], '/');
            int bi = atoi(slash - 1);
            const key_count *f = find_key(kc[bi], nk[bi], slash + 1);
            assert_non_null(f);
            assert_int_equal(f->versions, 1);
            assert_int_equal(f->markers, i == W_DELETE ? 1 : 0);
        }
        acked += w[i].nacked;
    }
    /* The CAS counters: exactly their increments. */
    for (int cnt = 0; cnt < 2; cnt++) {
        snprintf(path, sizeof(path), "/v1/buckets/%s-%d/objects/counter", prefix,
                 cnt ? NBUCKETS - 1 : 0);
        json_t *o = rt_req_json(h, "GET", path, NULL, 200);
        long v = strtol(json_string_value(json_object_get(o, "etag")), NULL, 16);
        fprintf(stderr, "counter %d: %ld (%ld increments acknowledged)\n", cnt, v,
                w[W_CAS].cas_ok[cnt]);
        assert_int_equal(v, w[W_CAS].cas_ok[cnt]);
        assert_true(v > 0);
        json_decref(o);
    }
    fprintf(stderr, "writes acknowledged %ld (+%ld CAS), lost 0, doubled 0\n", acked,
            w[W_CAS].cas_ok[0] + w[W_CAS].cas_ok[1]);
    for (int i = 0; i < W_N; i++)
        free(w[i].acked);
    httpc_destroy(h);

    /* A rebuild from the log dumps as the live view. */
    size_t rows[OBJLOG_CF_COUNT];
    int64_t events = 0;
    int same = viewproc_rebuild_equal(&LIVE, F.data2, NPARTS, rows, &events, msg, sizeof(msg));
    if (same != 0)
        fprintf(stderr, "rebuild: %s\n", msg);
    assert_int_equal(same, 0);
    fprintf(stderr, "rebuild of %lld events dumps as the live view\n", (long long)events);
}

static objlog_producer *producer_new(void) {
    objlog_producer_conf *conf = objlog_producer_conf_new();
    char err[512];
    assert_non_null(conf);
    assert_int_equal(objlog_producer_conf_set(conf, "bootstrap.servers",
                                              testlog_bootstrap(F.log), err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(conf, "ack", "applied", err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(conf, "query.url", LIVE.url, err, sizeof(err)),
                     OBJLOG_CONF_OK);
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fprintf(stderr, "producer: %s\n", err);
    assert_non_null(p);
    return p;
}

/* A producer of another process (not held by the node's handoff) routes
 * by the map it read at start; after a split its write meets WrongRange
 * and is resent by the new map, same request id. */
static void test_producer_follows_handoff(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    create_buckets(h, "prd");
    objlog_producer *p = producer_new();
    objlog_object_meta meta = {.size = 5, .etag = "00000000000000000000000000000005"};
    objlog_write_result r;
    char err[256];
    assert_int_equal(objlog_producer_put_object_sync(p, "prd-4", "before", 6, &meta, NULL, &r,
                                                     err, sizeof(err)),
                     0);
    assert_int_equal(r.status, OBJLOG_STATUS_OK);
    int p0 = r.partition;
    json_t *ho = rt_handoff(h, "split", "{\"bucket\":\"prd-2\"}");
    int q = (int)json_integer_value(json_object_get(ho, "to_partition"));
    json_decref(ho);
    assert_int_not_equal(q, p0);
    assert_int_equal(objlog_producer_put_object_sync(p, "prd-4", "after", 5, &meta, NULL, &r,
                                                     err, sizeof(err)),
                     0);
    if (r.status != OBJLOG_STATUS_OK)
        fprintf(stderr, "after the split: %s %s: %s\n", objlog_status_name(r.status),
                r.error_code, r.error_message);
    assert_int_equal(r.status, OBJLOG_STATUS_OK);
    assert_int_equal(r.partition, q);
    objlog_producer_stats st;
    objlog_producer_stats_get(p, &st);
    assert_int_equal(st.wrong_range_resends, 1);
    /* Keys below the split still go where they went, no resend. */
    assert_int_equal(objlog_producer_put_object_sync(p, "prd-0", "low", 3, &meta, NULL, &r, err,
                                                     sizeof(err)),
                     0);
    assert_int_equal(r.status, OBJLOG_STATUS_OK);
    assert_int_equal(r.partition, p0);
    objlog_producer_stats_get(p, &st);
    assert_int_equal(st.wrong_range_resends, 1);
    key_count kc[4];
    assert_int_equal(list_versions(h, "prd-4", kc, 4), 2);
    assert_int_equal(kc[0].versions, 1); /* "after": applied once */
    assert_int_equal(kc[1].versions, 1);
    objlog_producer_destroy(p);
    json_decref(rt_handoff(h, "merge", "{\"bucket\":\"prd-2\"}"));
    httpc_destroy(h);
}


/* A second objlogd on the log, which did not run the handoff: its gateway
 * routed by the old map, meets WrongRange, resends by the new one. */
static void test_other_node_follows(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    create_buckets(h, "oth");
    char data[320], url[128];
    snprintf(data, sizeof(data), "%s/other", F.root);
    proc *other = testlog_start_view(F.log, data, NULL, url, sizeof(url));
    assert_non_null(other);
    httpc *o = httpc_new(url);
    const char *body = "{\"size\":2,\"etag\":\"00000000000000000000000000000002\"}";
    json_t *w = rt_req_json(o, "PUT", "/v1/buckets/oth-4/objects/a", body, 200);
    int p0 = token_partition(w);
    json_decref(w);
    json_t *ho = rt_handoff(h, "split", "{\"bucket\":\"oth-2\"}");
    int q = (int)json_integer_value(json_object_get(ho, "to_partition"));
    long epoch = (long)json_integer_value(json_object_get(ho, "epoch"));
    json_decref(ho);
    assert_int_not_equal(q, p0);
    /* Through the other node: 200 on the new partition, applied once. */
    w = rt_req_json(o, "PUT", "/v1/buckets/oth-4/objects/b", body, 200);
    assert_int_equal(token_partition(w), q);
    json_decref(w);
    key_count kc[4];
    assert_int_equal(list_versions(h, "oth-4", kc, 4), 2);
    assert_int_equal(kc[1].versions, 1);
    /* Its readers route by the new map: the new write reads back there. */
    assert_int_equal(rt_map_epoch(o), epoch);
    json_decref(rt_req_json(o, "GET", "/v1/buckets/oth-4/objects/b?consistency=strong", NULL,
                            200));
    fprintf(stderr, "the other node resent %ld writes by the new map\n",
            rt_metric(o, "objlog_gateway_wrong_range_resends_total "));
    /* Without a write: the other node takes the next map from the control
     * topic (it watches it), and reads the moved range where it went. */
    ho = rt_handoff(h, "merge", "{\"bucket\":\"oth-2\"}");
    epoch = (long)json_integer_value(json_object_get(ho, "epoch"));
    json_decref(ho);
    long seen = -1;
    for (int waited = 0; waited < 10000 && seen != epoch; waited += 100) {
        sleep_ms(100);
        seen = rt_map_epoch(o);
    }
    assert_int_equal(seen, epoch);
    json_decref(rt_req_json(h, "PUT", "/v1/buckets/oth-4/objects/c", body, 200));
    json_decref(rt_req_json(o, "GET", "/v1/buckets/oth-4/objects/c?consistency=strong", NULL,
                            200));
    httpc_destroy(o);
    proc_stop(other, 10000);
    httpc_destroy(h);
}

/* POST /v1/ranges/split in a thread: the node is killed under it. */
typedef struct async_post {
    const char *url, *body;
    long status;
    pthread_t t;
} async_post;

static void *async_post_main(void *arg) {
    async_post *a = arg;
    httpc *h = httpc_new(a->url);
    httpc_resp r;
    a->status = httpc_do(h, "POST", "/v1/ranges/split", a->body, NULL, &r) == 0 ? r.status : -1;
    httpc_destroy(h);
    return NULL;
}

/* The epoch of the node's map once it reaches want (polling), or the last
 * seen after timeout_ms. */
static long wait_epoch(const char *url, long want, int timeout_ms) {
    httpc *h = httpc_new(url);
    long e = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 100) {
        httpc_resp r;
        if (httpc_do(h, "GET", "/v1/ranges", NULL, NULL, &r) == 0 && r.status == 200) {
            json_t *j = json_loads(r.body, 0, NULL);
            e = (long)json_integer_value(json_object_get(j, "epoch"));
            json_decref(j);
            if (e >= want)
                break;
        }
        sleep_ms(100);
    }
    httpc_destroy(h);
    return e;
}

/* Kills the node `at_ms` into a split of the range holding bucket (at
 * key inside it, unless NULL; the node pauses 3 s after the RangeOut and
 * 3 s after the RangeIn), restarts it, and waits for the handoff to be
 * finished from the log. */
static void kill_in_handoff(const char *bucket, const char *key, int at_ms, long epoch_before) {
    char why[1024], body[128];
    viewproc_stop(&LIVE, 10000);
    setenv("OBJLOG_TEST_HANDOFF_PAUSE_MS", "3000", 1);
    if (viewproc_start(&LIVE, 60000, why, sizeof(why)) != 0)
        fail_msg("restart: %s", why);
    unsetenv("OBJLOG_TEST_HANDOFF_PAUSE_MS");
    if (key)
        snprintf(body, sizeof(body), "{\"bucket\":\"%s\",\"key\":\"%s\"}", bucket, key);
    else
        snprintf(body, sizeof(body), "{\"bucket\":\"%s\"}", bucket);
    async_post a = {.url = LIVE.url, .body = body};
    assert_int_equal(pthread_create(&a.t, NULL, async_post_main, &a), 0);
    sleep_ms(at_ms);
    viewproc_kill(&LIVE);
    pthread_join(a.t, NULL);
    assert_int_equal(a.status, -1); /* killed before it answered */
    if (viewproc_start(&LIVE, 60000, why, sizeof(why)) != 0)
        fail_msg("restart: %s", why);
    long e = wait_epoch(LIVE.url, epoch_before + 1, 30000);
    fprintf(stderr, "killed %d ms into a split of %s%s%s's range: epoch %ld -> %ld after "
                    "restart\n",
            at_ms, bucket, key ? "/" : "", key ? key : "", epoch_before, e);
    assert_int_equal(e, epoch_before + 1);
}

static void test_kill_during_handoff(void **state) {
    (void)state;
    httpc *h = httpc_new(LIVE.url);
    const char *prefix = "kil";
    create_buckets(h, prefix);
    json_t *m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    long e0 = (long)json_integer_value(json_object_get(m, "epoch"));
    json_decref(m);
    httpc_destroy(h);
    atomic_int stop = 0;
    writer w = {.kind = W_PLAIN, .url = LIVE.url, .prefix = prefix, .stop = &stop};
    w.acked = calloc(MAX_KEYS, 48);
    assert_non_null(w.acked);
    assert_int_equal(pthread_create(&w.t, NULL, writer_main, &w), 0);
    sleep_ms(500);
    /* After the RangeOut, and after the RangeIn (the map not yet out). */
    kill_in_handoff("kil-3", NULL, 1500, e0);
    sleep_ms(500);
    kill_in_handoff("kil-5", NULL, 4500, e0 + 1);
    sleep_ms(500);
    /* Inside a bucket: after the RangeOut (the stakes in its marker), and
     * after the RangeIn. */
    kill_in_handoff("kil-1", "w0-5", 1500, e0 + 2);
    sleep_ms(500);
    kill_in_handoff("kil-2", "w0-5", 4500, e0 + 3);
    sleep_ms(500);
    atomic_store(&stop, 1);
    pthread_join(w.t, NULL);
    /* The ranges are where the finished handoffs put them: each split's
     * bucket starts a range. */
    h = httpc_new(LIVE.url);
    m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    int starts = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(m, "ranges"), i, r) {
        const char *b = json_string_value(json_object_get(r, "bucket"));
        const char *k = json_string_value(json_object_get(r, "key"));
        starts += b && (strcmp(b, "kil-3") == 0 || strcmp(b, "kil-5") == 0) && (!k || !*k);
        starts += b && (strcmp(b, "kil-1") == 0 || strcmp(b, "kil-2") == 0) && k &&
                  strcmp(k, "w0-5") == 0;
    }
    json_decref(m);
    assert_int_equal(starts, 4);
    /* Acknowledged writes there once; no key written twice. */
    static key_count kc[NBUCKETS][MAX_KEYS];
    size_t nk[NBUCKETS], listed = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        char bucket[64];
        snprintf(bucket, sizeof(bucket), "%s-%d", prefix, b);
        nk[b] = list_versions(h, bucket, kc[b], MAX_KEYS);
        for (size_t k = 0; k < nk[b]; k++)
            assert_int_equal(kc[b][k].versions + kc[b][k].markers, 1);
        listed += nk[b];
        /* Split or not, the bucket counts what it lists. */
        char path[128];
        snprintf(path, sizeof(path), "/v1/buckets/%s/stats", bucket);
        json_t *st = rt_req_json(h, "GET", path, NULL, 200);
        assert_int_equal(json_integer_value(json_object_get(st, "versions")), nk[b]);
        json_decref(st);
    }
    for (long k = 0; k < w.nacked; k++) {
        char *slash = strchr(w.acked[k], '/');
        int b = atoi(slash - 1);
        const key_count *f = find_key(kc[b], nk[b], slash + 1);
        assert_non_null(f);
    }
    fprintf(stderr, "kill test: %ld writes sent, %ld acknowledged, %zu keys present, lost 0, "
                    "doubled 0 (%ld not acknowledged: the node was down; the last: %s)\n",
            w.sent, w.nacked, listed, w.refused, w.last_refusal);
    assert_true(w.nacked > 0);
    assert_int_equal(w.wrong_range, 0);
    free(w.acked);
    httpc_destroy(h);
}




static void test_auto_split(void **state) {
    (void)state;
    static const char *const env[] = {"OBJLOG_AUTO_SPLIT", "1", "OBJLOG_AUTO_SPLIT_RATE", "100",
                                       "OBJLOG_AUTO_SPLIT_SECONDS", "2", NULL};
    rt_restart_live(&LIVE, env);
    httpc *h = httpc_new(LIVE.url);
    const char *prefix = "aus";
    create_buckets(h, prefix);
    long e0 = rt_map_epoch(h);
    atomic_int stop = 0;
    writer w[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].kind = i ? W_CREATE : W_PLAIN;
        w[i].url = LIVE.url;
        w[i].prefix = prefix;
        w[i].stop = &stop;
        w[i].acked = calloc(MAX_KEYS, 48);
        assert_non_null(w[i].acked);
        assert_int_equal(pthread_create(&w[i].t, NULL, writer_main, &w[i]), 0);
    }
    long e1 = e0;
    int waited = 0;
    for (; waited < 30000 && e1 == e0; waited += 200) {
        sleep_ms(200);
        e1 = rt_map_epoch(h);
    }
    sleep_ms(500);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i].t, NULL);
    fprintf(stderr, "auto-split: epoch %ld -> %ld after %d ms of load (%ld + %ld writes)\n",
            e0, e1, waited, w[0].nacked, w[1].nacked);
    assert_true(e1 > e0);
    assert_true(rt_metric(h, "objlog_range_auto_splits_total{result=\"ok\"} ") >= 1);
    /* The split fell between two of the hot buckets. */
    json_t *m = rt_req_json(h, "GET", "/v1/ranges", NULL, 200);
    int at_hot = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(m, "ranges"), i, r) {
        const char *b = json_string_value(json_object_get(r, "bucket"));
        at_hot += b && strncmp(b, "aus-", 4) == 0 && strcmp(b, "aus-0") != 0;
    }
    json_decref(m);
    assert_true(at_hot >= 1);
    /* No load, no more splits: three quiet periods later, the same map. */
    long e2 = rt_map_epoch(h);
    sleep_ms(8000);
    assert_int_equal(rt_map_epoch(h), e2);
    for (int k = 0; k < 2; k++) {
        if (w[k].refused)
            fprintf(stderr, "auto-split writer %d: %ld not acknowledged, the last: %s\n", k,
                    w[k].refused, w[k].last_refusal);
        assert_int_equal(w[k].wrong_range, 0);
        free(w[k].acked);
    }
    httpc_destroy(h);
    rt_restart_live(&LIVE, NULL);
}

static void test_add_partitions(void **state) {
    (void)state;
    char objlog[512], out[2048], err[2048], total[8];
    proc_bin("ops/objlog", objlog, sizeof(objlog));
    snprintf(total, sizeof(total), "%d", PARTS + 2);
    /* A bad count first: the topic cannot shrink. */
    char *bad[] = {objlog, "topics", "add-partitions", "2", "--brokers",
                   (char *)testlog_bootstrap(F.log), NULL};
    assert_int_equal(proc_run(bad, NULL, out, sizeof(out), err, sizeof(err), 60000), 1);
    assert_non_null(strstr(err, "cannot shrink"));
    if (!testlog_is_kafka()) {
        /* librdkafka's mock cluster (2.0.2) answers no CreatePartitions:
         * the growth itself runs on real Kafka (test_ranges_kafka). */
        fprintf(stderr, "add-partitions: skipped on the mock cluster\n");
        return;
    }
    char *argv[] = {objlog, "topics", "add-partitions", total, "--brokers",
                    (char *)testlog_bootstrap(F.log), NULL};
    int rc = proc_run(argv, NULL, out, sizeof(out), err, sizeof(err), 60000);
    if (rc != 0)
        fprintf(stderr, "add-partitions: %s%s\n", out, err);
    assert_int_equal(rc, 0);
    NPARTS = PARTS + 2;
    rt_restart_live(&LIVE, NULL);
    httpc *h = httpc_new(LIVE.url);
    json_t *lag = rt_req_json(h, "GET", "/v1/lag", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(lag, "partitions")), NPARTS);
    json_decref(lag);
    create_buckets(h, "gro");
    char body[96];
    snprintf(body, sizeof(body), "{\"bucket\":\"gro-3\",\"to_partition\":%d}", NPARTS - 1);
    json_decref(rt_handoff(h, "split", body));
    json_t *wr = rt_req_json(h, "PUT", "/v1/buckets/gro-4/objects/k",
                             "{\"size\":1,\"etag\":\"00000000000000000000000000000004\"}", 200);
    assert_int_equal(token_partition(wr), NPARTS - 1);
    json_decref(wr);
    httpc_destroy(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_retry_across_split),
        cmocka_unit_test(test_producer_follows_handoff),
        cmocka_unit_test(test_other_node_follows),
        cmocka_unit_test(test_kill_during_handoff),
        cmocka_unit_test(test_auto_split),
        cmocka_unit_test(test_add_partitions),
        cmocka_unit_test(test_handoffs_under_load),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
