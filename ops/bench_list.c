/* bench_list.c: `objlog bench --list`, LIST latency where other stores
 * choke: a plain bucket next to (a) a prefix with few live
 * keys among many deleted ones (tombstones, or delete markers in a
 * versioned bucket) and (b) one key with many versions among the others,
 * each case in a bucket of its own, then b->list_requests sequential LISTs
 * per case and their ratio to the plain case.
 * Invariant: every case is produced in batches, each applied before the
 * next (so the log never drops an event the LIST needs), and the first
 * LIST of a case must return the expected number of keys, so a broken
 * listing cannot pass for a fast one. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_int.h"
#include "cli.h"
#include "keycodec.h"
#include "objlog.pb-c.h"
#include "objlog_producer.h"

/* The mock cluster keeps ~5 MB per partition and drops the oldest data
 * beyond that, so a consumer that falls further behind loses events. A
 * bucket lives in one partition, so each case is produced in batches and
 * every batch is applied before the next: the lag stays < 1 MB at ~100
 * bytes an event, whatever the totals. */
#define LIST_BATCH 8000
#define LIST_CASES 4
#define LIST_MAX_KEYS 1000

typedef struct list_case {
    const char *name;
    const char *what;
    char bucket[64];
    objlog_versioning versioning;
    const char *prefix;          /* LIST prefix, or NULL */
    long events;
    long expect;                 /* keys the LIST must return */
    double p50, p99;
    long errors;
} list_case;

/* Queues one put (del 0) or delete (del 1); failures are counted by
 * bench_cb or here. */
static void list_write(bench *b, const char *bucket, const char *key, int del) {
    char err[256];
    objlog_object_meta m = {.size = 1};
    int rc = del ? objlog_producer_delete_object(b->p, bucket, key, strlen(key), NULL,
                                                 NULL, bench_cb, b, err, sizeof(err))
                 : objlog_producer_put_object(b->p, bucket, key, strlen(key), &m, NULL,
                                              bench_cb, b, err, sizeof(err));
    if (rc < 0) {
        pthread_mutex_lock(&b->lock);
        if (b->failed++ == 0)
            snprintf(b->first_error, sizeof(b->first_error), "%s", err);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Counts one queued write; every LIST_BATCH writes, waits for apply. */
static int list_tick(bench *b, CURL *h) {
    if (bench_interrupted)
        return -1;
    if (++b->list_queued % LIST_BATCH == 0)
        return bench_settle(b, h);
    return 0;
}

static int gen_plain(bench *b, CURL *h, const list_case *c) {
    for (long i = 0; i < b->list_keys; i++) {
        char key[32];
        snprintf(key, sizeof(key), "obj-%07ld", i);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

/* Every key is put; all but every stride-th one is deleted right after,
 * so the live keys are spread among the dead ones and a LIST has to get
 * past tombstones (or delete markers) between each pair of hits. */
static int gen_deleted(bench *b, CURL *h, const list_case *c) {
    long total = b->list_deleted + b->list_live;
    long stride = total / b->list_live;
    for (long k = 0; k < total; k++) {
        char key[32];
        snprintf(key, sizeof(key), "dead/k%07ld", k);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
        if (k % stride == 0 && k / stride < b->list_live)
            continue;
        list_write(b, c->bucket, key, 1);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

/* list_keys keys; the one in the middle gets list_versions versions. */
static int gen_versions(bench *b, CURL *h, const list_case *c) {
    long hot = b->list_keys / 2;
    for (long i = 0; i < b->list_keys + b->list_versions - 1; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key-%07ld", i < b->list_keys ? i : hot);
        list_write(b, c->bucket, key, 0);
        if (list_tick(b, h) < 0)
            return -1;
    }
    return 0;
}

typedef int list_gen(bench *b, CURL *h, const list_case *c);

/* The outcome of the last write (bench_cb keeps its token) must be OK:
 * a rejected bucket or a capped version would skew the figures. */
static int outcome_ok(bench *b, CURL *h, const char *what) {
    char url[512], err[256];
    snprintf(url, sizeof(url), "%s/v1/writes/%s?timeout_ms=2000", b->url, b->last_token);
    cli_resp r;
    if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: outcome in %s: %s\n", what, err);
        return -1;
    }
    json_t *j = json_loads(r.body, 0, NULL);
    const char *st = json_string_value(json_object_get(j, "status"));
    int ok = r.status == 200 && st && !strcmp(st, "ok");
    if (!ok)
        fprintf(stderr, "objlog: bench: last write in %s: HTTP %ld %s\n", what, r.status,
                r.body);
    json_decref(j);
    cli_resp_free(&r);
    return ok ? 0 : -1;
}

static int list_build(bench *b, CURL *h, list_case *c, list_gen *gen) {
    char err[512];
    objlog_bucket_conf bc = {.versioning = c->versioning};
    if (objlog_producer_create_bucket_ex(b->p, c->bucket, &bc, NULL, bench_cb, b, err,
                                         sizeof(err)) < 0) {
        fprintf(stderr, "objlog: bench: create bucket %s: %s\n", c->bucket, err);
        return -1;
    }
    if (bench_settle(b, h) < 0 || outcome_ok(b, h, c->bucket) < 0 ||
        bench_created(b, c->bucket) < 0)
        return -1;
    long before = b->list_queued;
    if (gen(b, h, c) < 0 || bench_settle(b, h) < 0 || outcome_ok(b, h, c->bucket) < 0)
        return -1;
    c->events = b->list_queued - before;
    return 0;
}

/* LIST latency of case c: b->list_requests sequential GETs on one
 * keep-alive connection. The first answer is checked for the key count
 * so a broken listing cannot pass for a fast one. */
static int list_measure(bench *b, CURL *h, list_case *c) {
    char *url = NULL;
    char *ep = c->prefix ? curl_easy_escape(h, c->prefix, 0) : NULL;
    if (asprintf(&url, "%s/v1/buckets/%s/objects?max_keys=%d&consistency=eventual%s%s",
                 b->url, c->bucket, LIST_MAX_KEYS, ep ? "&prefix=" : "",
                 ep ? ep : "") < 0)
        url = NULL;
    curl_free(ep);
    double *lat = calloc((size_t)b->list_requests, sizeof(*lat));
    if (!url || !lat) {
        free(url);
        free(lat);
        return -1;
    }
    int rc = 0;
    CURL *own = NULL;
    for (int i = 0; i < b->list_requests && rc == 0 && !bench_interrupted; i++) {
        cli_resp r;
        char err[256];
        if (b->list_fresh) { /* a new connection per request: no keep-alive */
            curl_easy_cleanup(own);
            h = own = curl_easy_init();
            if (!h) {
                rc = -1;
                break;
            }
        }
        int64_t t0 = bench_mono_us();
        if (cli_http(h, "GET", url, NULL, NULL, &r, err, sizeof(err)) < 0) {
            fprintf(stderr, "objlog: bench: LIST %s: %s\n", c->bucket, err);
            rc = -1;
            break;
        }
        lat[i] = (double)(bench_mono_us() - t0) / 1000.0;
        if (r.status != 200)
            c->errors++;
        if (i == 0) {
            json_t *j = json_loads(r.body, 0, NULL);
            long got = (long)json_array_size(json_object_get(j, "objects"));
            json_decref(j);
            if (r.status != 200 || got != c->expect) {
                fprintf(stderr, "objlog: bench: LIST %s returned %ld keys (HTTP %ld), "
                                "expected %ld\n", c->bucket, got, r.status, c->expect);
                rc = -1;
            }
        }
        cli_resp_free(&r);
    }
    curl_easy_cleanup(own);
    qsort(lat, (size_t)b->list_requests, sizeof(double), bench_cmp_double);
    c->p50 = bench_percentile(lat, b->list_requests, 0.50);
    c->p99 = bench_percentile(lat, b->list_requests, 0.99);
    free(lat);
    free(url);
    return rc;
}

/* Bytes one event takes in the log (value + Kafka key), as the producer
 * encodes it: a put with size only, or a delete without version id. */
static size_t list_event_bytes(const char *bucket, const char *key, int del) {
    uint8_t rid[16] = {0};
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__ObjectMeta om = OBJLOG__OBJECT_META__INIT;
    Objlog__PutObject put = OBJLOG__PUT_OBJECT__INIT;
    Objlog__DeleteObject dl = OBJLOG__DELETE_OBJECT__INIT;
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = 1;
    ev.timestamp_ms = (int64_t)time(NULL) * 1000;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    om.size = 1;
    put.meta = &om;
    dl.version_id = "";
    if (del) {
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &dl;
    } else {
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &put;
    }
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    size_t n = objlog__event__get_packed_size(&ev) + kb.len;
    keybuf_free(&kb);
    return n;
}

static double ratio(double x, double base) { return base > 0 ? x / base : 0; }

static void list_report(const bench *b, const list_case *cs, int n, double build_s,
                        size_t put_bytes, size_t del_bytes) {
    if (b->json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, json_pack(
                "{s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,s:I}", "case", cs[i].name,
                "bucket", cs[i].bucket,
                "what", cs[i].what, "prefix", cs[i].prefix ? cs[i].prefix : "",
                "events", (json_int_t)cs[i].events, "returned",
                (json_int_t)cs[i].expect, "p50_ms", cs[i].p50, "p99_ms", cs[i].p99,
                "p50_vs_plain", ratio(cs[i].p50, cs[0].p50), "p99_vs_plain",
                ratio(cs[i].p99, cs[0].p99), "errors", (json_int_t)cs[i].errors));
        json_t *j = json_pack("{s:{s:i,s:b,s:i,s:s,s:f,s:{s:I,s:I},s:i,s:o}}", "list",
                              "requests", b->list_requests, "keepalive", !b->list_fresh, "max_keys", LIST_MAX_KEYS,
                              "consistency", "eventual", "build_seconds", build_s,
                              "event_bytes", "put", (json_int_t)put_bytes, "delete",
                              (json_int_t)del_bytes, "batch", LIST_BATCH, "cases", arr);
        cli_print_json_flags(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        return;
    }
    printf("objlog bench --list: %d LISTs per case, max_keys=%d, consistency=eventual, "
           "%s, %s\n", b->list_requests, LIST_MAX_KEYS,
           b->list_fresh ? "a new connection each" : "one keep-alive connection", b->url);
    printf("built in %.1f s; event sizes (value + Kafka key): put %zu B, delete %zu B; "
           "produced in batches of %d, each applied before the next\n", build_s,
           put_bytes, del_bytes, LIST_BATCH);
    printf("%-8s %-50s %8s %8s %8s %8s %7s %7s\n", "case", "what", "events", "returned",
           "p50 ms", "p99 ms", "p50 x", "p99 x");
    for (int i = 0; i < n; i++)
        printf("%-8s %-50s %8ld %8ld %8.3f %8.3f %7.2f %7.2f%s\n", cs[i].name, cs[i].what,
               cs[i].events, cs[i].expect, cs[i].p50, cs[i].p99,
               ratio(cs[i].p50, cs[0].p50), ratio(cs[i].p99, cs[0].p99),
               cs[i].errors ? "  (errors!)" : "");
    printf("(x = ratio to the plain case; the goal is <= 3)\n");
}

int bench_list_run(bench *b) {
    static char what[LIST_CASES][64];
    list_case cs[LIST_CASES] = {
        {.name = "plain", .versioning = OBJLOG_VERSIONING_UNVERSIONED},
        {.name = "a", .versioning = OBJLOG_VERSIONING_UNVERSIONED, .prefix = "dead/"},
        {.name = "a-dm", .versioning = OBJLOG_VERSIONING_ENABLED, .prefix = "dead/"},
        {.name = "b", .versioning = OBJLOG_VERSIONING_ENABLED},
    };
    list_gen *gens[LIST_CASES] = {gen_plain, gen_deleted, gen_deleted, gen_versions};
    snprintf(what[0], sizeof(what[0]), "%ld live keys", b->list_keys);
    snprintf(what[1], sizeof(what[1]), "%ld live among %ld deleted, prefix", b->list_live,
             b->list_deleted);
    snprintf(what[2], sizeof(what[2]), "%ld live among %ld delete markers, prefix",
             b->list_live, b->list_deleted);
    snprintf(what[3], sizeof(what[3]), "%ld keys, one with %ld versions", b->list_keys,
             b->list_versions);
    long expect[LIST_CASES] = {
        b->list_keys < LIST_MAX_KEYS ? b->list_keys : LIST_MAX_KEYS, b->list_live,
        b->list_live, b->list_keys < LIST_MAX_KEYS ? b->list_keys : LIST_MAX_KEYS};
    long stamp = (long)time(NULL) % 100000;
    for (int i = 0; i < LIST_CASES; i++) {
        cs[i].what = what[i];
        cs[i].expect = expect[i];
        snprintf(cs[i].bucket, sizeof(cs[i].bucket), "bl-%s-%d-%ld", cs[i].name,
                 (int)getpid(), stamp);
    }
    CURL *h = curl_easy_init();
    int rc = CLI_EXIT_FAIL;
    if (!h || bench_producer_open(b) < 0)
        goto out;
    int64_t t0 = bench_mono_us();
    for (int i = 0; i < LIST_CASES; i++)
        if (list_build(b, h, &cs[i], gens[i]) < 0)
            goto out;
    double build_s = (double)(bench_mono_us() - t0) / 1e6;
    for (int i = 0; i < LIST_CASES; i++)
        if (list_measure(b, h, &cs[i]) < 0 || bench_interrupted)
            goto out;
    list_report(b, cs, LIST_CASES, build_s, list_event_bytes(cs[1].bucket, "dead/k0000000", 0),
                list_event_bytes(cs[1].bucket, "dead/k0000000", 1));
    rc = CLI_EXIT_OK;
    for (int i = 0; i < LIST_CASES; i++)
        if (cs[i].errors)
            rc = CLI_EXIT_FAIL;
out:
    if (h)
        curl_easy_cleanup(h);
    return rc;
}
