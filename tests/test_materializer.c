/* test_materializer.c: the consumer (materializer/materializer.c) against
 * librdkafka's mock cluster (3 brokers, real Kafka protocol over TCP on
 * 127.0.0.1) and a real RocksDB. Pins down: every event of a 2,000-event,
 * 4-partition log is applied with the right outcome; applied offsets reach
 * the high watermarks; restart resumes without applying anything twice; an
 * undecodable message goes to objlog.dlq with its origin and the partition
 * goes on; wait_applied; a log whose start moved past the applied
 * offset stops that partition only, with a clear error; the
 * bench-only switch that applies without the stats view; and the backoff
 * of a store that cannot write (stall.h, on a fake clock; test_disk_full
 * runs a real full disk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "keycodec.h"
#include "materializer.h"
#include "proc.h"
#include "rows.h"
#include "stall.h"

#define NPARTS 4
#define EVENTS_TOPIC "objlog.events"
#define CONTROL_TOPIC "objlog.control"
#define DLQ_TOPIC "objlog.dlq"
#define KEYS_PER_BUCKET 25

typedef struct fixture {
    rd_kafka_t *mock_rk;
    rd_kafka_mock_cluster_t *mc;
    char brokers[256];
    rd_kafka_t *prod;
    char dir[64];
    objlog_store *store;
    rangemap *rm;
    objlog_materializer *m;
    char bucket[NPARTS][16]; /* a bucket owned by each partition */
} fixture;

/* ---- Kafka side ---- */

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque) {
    (void)rk;
    (void)opaque;
    int64_t *slot = msg->_private;
    if (slot)
        *slot = msg->err ? -1 : msg->offset;
}

static rd_kafka_t *producer_new(const char *brokers) {
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(c, "bootstrap.servers", brokers, err, sizeof(err)), 0);
    assert_int_equal(rd_kafka_conf_set(c, "linger.ms", "2", err, sizeof(err)), 0);
    assert_int_equal(rd_kafka_conf_set(c, "enable.idempotence", "true", err, sizeof(err)), 0);
    rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    assert_non_null(rk);
    return rk;
}

static int owner(const rangemap *rm, const char *bucket, const char *key) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    int p = rangemap_partition(rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    f->mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    assert_non_null(f->mock_rk);
    f->mc = rd_kafka_mock_cluster_new(f->mock_rk, 3);
    assert_non_null(f->mc);
    snprintf(f->brokers, sizeof(f->brokers), "%s", rd_kafka_mock_cluster_bootstraps(f->mc));
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, EVENTS_TOPIC, NPARTS, 3), 0);
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, CONTROL_TOPIC, 1, 3), 0);
    assert_int_equal(rd_kafka_mock_topic_create(f->mc, DLQ_TOPIC, 1, 3), 0);
    f->prod = producer_new(f->brokers);
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, 1);
    int found = 0;
    for (int i = 0; found < NPARTS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "bkt%d", i);
        int p = owner(f->rm, name, "");
        if (!f->bucket[p][0]) {
            snprintf(f->bucket[p], sizeof(f->bucket[p]), "%s", name);
            found++;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    objlog_materializer_destroy(f->m);
    objlog_store_close(f->store);
    rd_kafka_flush(f->prod, 5000);
    rd_kafka_destroy(f->prod);
    rangemap_destroy(f->rm);
    rd_kafka_mock_cluster_destroy(f->mc);
    rd_kafka_destroy(f->mock_rk);
    proc_rmtree(f->dir);
    free(f);
    return 0;
}

static objlog_materializer_conf mat_conf(fixture *f, int batch_max, int no_stats,
                                         int threads) {
    objlog_materializer_conf conf = {
        .brokers = f->brokers, .topic = EVENTS_TOPIC,
        .control_topic = CONTROL_TOPIC, .dlq_topic = DLQ_TOPIC,
        .group_id = "test-mat", .batch_max = batch_max, .test_no_stats = no_stats,
        .apply_threads = threads};
    return conf;
}

/* threads: apply threads, 0 one per core (the default); the other tests
 * apply on 2, as every objlogd a test starts does. */
static objlog_materializer *start_materializer_threads(fixture *f, int batch_max,
                                                       int no_stats, int threads) {
    char err[512];
    objlog_materializer_conf conf = mat_conf(f, batch_max, no_stats, threads);
    objlog_materializer *m = objlog_materializer_new(&conf, f->store, err, sizeof(err));
    if (!m)
        fail_msg("materializer_new: %s", err);
    assert_int_equal(objlog_materializer_partitions(m), NPARTS);
    assert_int_equal(rangemap_epoch(objlog_materializer_rangemap(m)), 1);
    if (objlog_materializer_start(m, err, sizeof(err)) != 0)
        fail_msg("materializer_start: %s", err);
    assert_int_equal(objlog_materializer_stats_view(m), !no_stats);
    return m;
}

static objlog_materializer *start_materializer_ex(fixture *f, int batch_max,
                                                  int no_stats) {
    return start_materializer_threads(f, batch_max, no_stats, 2);
}

static objlog_materializer *start_materializer(fixture *f, int batch_max) {
    return start_materializer_ex(f, batch_max, 0);
}

/* ---- events ---- */

typedef struct ev_spec {
    char op;             /* B create bucket (Enabled), P put, D delete,
                            N put with If-None-Match: * */
    const char *bucket;
    char key[24];
    char etag[24];
    uint32_t rid;
} ev_spec;

static uint8_t *encode(const ev_spec *s, size_t *n) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    Objlog__DeleteObject dobj = OBJLOG__DELETE_OBJECT__INIT;
    Objlog__Preconditions pre = OBJLOG__PRECONDITIONS__INIT;
    uint8_t rid[16] = {0xAB};
    memcpy(rid + 4, &s->rid, sizeof(s->rid));
    ev.request_id.data = rid;
    ev.request_id.len = sizeof(rid);
    ev.range_epoch = 1;
    ev.bucket = (char *)s->bucket;
    ev.key.data = (uint8_t *)s->key;
    ev.key.len = strlen(s->key);
    if (s->op == 'B') {
        cb.versioning = OBJLOG__VERSIONING__VERSIONING_ENABLED;
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = &cb;
    } else if (s->op == 'P' || s->op == 'N') {
        if (s->op == 'N') {
            pre.if_match = "";
            pre.if_none_match = 1;
            ev.pre = &pre;
        }
        meta.etag = (char *)s->etag;
        meta.size = 100;
        po.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &po;
    } else {
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &dobj;
    }
    *n = objlog__event__get_packed_size(&ev);
    uint8_t *buf = malloc(*n);
    objlog__event__pack(&ev, buf);
    return buf;
}

static void produce_raw(fixture *f, int p, const void *key, size_t kn,
                        const void *val, size_t vn, int64_t *slot) {
    rd_kafka_resp_err_t err;
    do {
        err = rd_kafka_producev(f->prod, RD_KAFKA_V_TOPIC(EVENTS_TOPIC),
                                RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(key, kn),
                                RD_KAFKA_V_VALUE((void *)val, vn),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_OPAQUE(slot), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(f->prod, 50);
    } while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL);
    assert_int_equal(err, 0);
}

/* Produces s with Kafka key = route key to the partition that owns it. */
static int produce_event(fixture *f, const ev_spec *s, int64_t *slot) {
    size_t n;
    uint8_t *buf = encode(s, &n);
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, s->bucket, strlen(s->bucket),
                       (const uint8_t *)s->key, strlen(s->key));
    int p = rangemap_partition(f->rm, rk.data, rk.len);
    produce_raw(f, p, rk.data, rk.len, buf, n, slot);
    keybuf_free(&rk);
    free(buf);
    return p;
}

static void flush(fixture *f) {
    assert_int_equal(rd_kafka_flush(f->prod, 10000), 0);
}

static int64_t high_watermark(fixture *f, int p) {
    int64_t lo, hi;
    assert_int_equal(rd_kafka_query_watermark_offsets(f->prod, EVENTS_TOPIC, p,
                                                      &lo, &hi, 5000), 0);
    return hi;
}

static void wait_all_applied(fixture *f, objlog_materializer *m) {
    for (int p = 0; p < NPARTS; p++) {
        int64_t hi = high_watermark(f, p);
        if (hi > 0)
            assert_int_equal(objlog_materializer_wait_applied(m, p, hi - 1, 20000), 0);
        assert_int_equal(objlog_materializer_applied(m, p), hi);
        assert_int_equal(objlog_store_applied(f->store, p), hi);
    }
}

static uint64_t count_rows(fixture *f, objlog_cf cf, char prefix) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                                        objlog_store_cf(f->store, cf));
    uint64_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (prefix && k[0] != prefix)
            continue;
        if (cf == OBJLOG_CF_VERSIONS && objlog_versions_row_is_header(k, kn))
            continue;
        n++;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* Outcome rows that are their request's first outcome: the request ids
 * the store remembers (they have no row of their own). */
static uint64_t count_first_outcomes(fixture *f) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(f->store), ro, objlog_store_cf(f->store, OBJLOG_CF_OUTCOMES));
    uint64_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        assert_int_equal(k[0], 'o');
        assert_int_equal(kn, APPLY_OUTCOME_KEY_LEN);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, v);
        assert_non_null(o);
        n += o->request_id.len && o->offset == (int64_t)apply_get_be64(k + 5);
        objlog__outcome__free_unpacked(o, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* Current live etag of bucket/key from `objects`, "" if none. */
static void current_etag(fixture *f, const char *b, const char *k, char *out, size_t n) {
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, b, strlen(b), (const uint8_t *)k, strlen(k));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn;
    char *v = rocksdb_get_cf(objlog_store_db(f->store), ro,
                             objlog_store_cf(f->store, OBJLOG_CF_OBJECTS),
                             (char *)rk.data, rk.len, &vn, &err);
    assert_null(err);
    out[0] = '\0';
    if (v) {
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (uint8_t *)v);
        assert_non_null(r);
        snprintf(out, n, "%s", r->meta->etag);
        objlog__version_record__free_unpacked(r, NULL);
        rocksdb_free(v);
    }
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
}

/* ---- the workload: a bucket per partition, then puts and deletes ---- */

#define N_EVENTS 2000

typedef struct workload {
    ev_spec spec[N_EVENTS + 200];
    int64_t offset[N_EVENTS + 200];
    int part[N_EVENTS + 200];
    int n;
} workload;

static void workload_add(fixture *f, workload *w, const ev_spec *s) {
    w->spec[w->n] = *s;
    w->offset[w->n] = -2;
    w->part[w->n] = produce_event(f, s, &w->offset[w->n]);
    w->n++;
}

static void produce_workload(fixture *f, workload *w, int n_events, uint32_t rid0) {
    for (int p = 0; p < NPARTS; p++) {
        ev_spec s = {'B', f->bucket[p], "", "", rid0 + (uint32_t)w->n};
        workload_add(f, w, &s);
    }
    while (w->n < n_events) {
        int i = w->n;
        ev_spec s = {i % 7 == 0 ? 'D' : 'P', f->bucket[i % NPARTS], "", "",
                     rid0 + (uint32_t)i};
        snprintf(s.key, sizeof(s.key), "k%02d", (i / NPARTS) % KEYS_PER_BUCKET);
        snprintf(s.etag, sizeof(s.etag), "e%d", i);
        workload_add(f, w, &s);
    }
    flush(f);
    for (int i = 0; i < w->n; i++)
        assert_true(w->offset[i] >= 0);
}

/* Checks every outcome and the final state against a replay of w. */
static void check_workload(fixture *f, const workload *w) {
    char err[256];
    for (int i = 0; i < w->n; i++) {
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(f->store, w->part[i], w->offset[i],
                                                  &o, err, sizeof(err)), 1);
        if (o->code != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
            fail_msg("event %d (%d.%lld): outcome %d %s", i, w->part[i],
                     (long long)w->offset[i], o->code, o->message);
        char vid[KEYCODEC_VERSION_ID_LEN];
        keycodec_version_id(keycodec_seq(1, w->offset[i]), vid);
        assert_string_equal(o->version_id, w->spec[i].op == 'B' ? "" : vid);
        assert_int_equal(o->delete_marker, w->spec[i].op == 'D');
        assert_int_equal(o->partition, w->part[i]);
        assert_int_equal(o->offset, w->offset[i]);
        objlog__outcome__free_unpacked(o, NULL);
    }
    /* The last event of each key decides what `objects` shows. */
    for (int p = 0; p < NPARTS; p++)
        for (int k = 0; k < KEYS_PER_BUCKET; k++) {
            char key[24], want[24] = "", got[24];
            snprintf(key, sizeof(key), "k%02d", k);
            for (int i = 0; i < w->n; i++)
                if (w->spec[i].op != 'B' && !strcmp(w->spec[i].bucket, f->bucket[p]) &&
                    !strcmp(w->spec[i].key, key))
                    snprintf(want, sizeof(want), "%s",
                             w->spec[i].op == 'P' ? w->spec[i].etag : "");
            current_etag(f, f->bucket[p], key, got, sizeof(got));
            assert_string_equal(got, want);
        }
}

static void test_consume_apply_and_resume(void **state) {
    fixture *f = *state;
    static workload w;
    memset(&w, 0, sizeof(w));
    produce_workload(f, &w, N_EVENTS, 1);
    f->m = start_materializer(f, 300);
    wait_all_applied(f, f->m);
    check_workload(f, &w);
    assert_int_equal(objlog_materializer_events_applied(f->m), N_EVENTS);
    assert_int_equal(count_rows(f, OBJLOG_CF_OUTCOMES, 'o'), N_EVENTS);
    assert_int_equal(count_first_outcomes(f), N_EVENTS);
    assert_int_equal(count_rows(f, OBJLOG_CF_VERSIONS, 0), N_EVENTS - NPARTS);
    assert_int_equal(objlog_materializer_dlq_count(f->m), 0);

    /* The consumer group sees the applied offsets (async commit). */
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(NPARTS);
    for (int p = 0; p < NPARTS; p++)
        rd_kafka_topic_partition_list_add(tp, EVENTS_TOPIC, p);
    char err[256];
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    rd_kafka_conf_set(cc, "bootstrap.servers", f->brokers, err, sizeof(err));
    rd_kafka_conf_set(cc, "group.id", "test-mat", err, sizeof(err));
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
    int matched = 0;
    for (int tries = 0; tries < 100 && !matched; tries++) {
        assert_int_equal(rd_kafka_committed(c, tp, 5000), 0);
        matched = 1;
        for (int p = 0; p < NPARTS; p++)
            matched &= tp->elems[p].offset == high_watermark(f, p);
        if (!matched) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(matched);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_destroy(c);

    /* Restart on the same store: nothing is applied twice. */
    objlog_materializer_destroy(f->m);
    f->m = NULL;
    objlog_store_close(f->store);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    int before = w.n;
    /* Retries of already-applied requests plus new writes. */
    for (int i = 0; i < 50; i++) {
        ev_spec s = w.spec[NPARTS + i];
        w.spec[w.n] = s;
        w.offset[w.n] = -2;
        w.part[w.n] = produce_event(f, &s, &w.offset[w.n]);
        w.n++;
    }
    for (int i = 0; i < 50; i++) {
        ev_spec s = {'P', f->bucket[i % NPARTS], "", "", 100000 + (uint32_t)i};
        snprintf(s.key, sizeof(s.key), "k%02d", i % KEYS_PER_BUCKET);
        snprintf(s.etag, sizeof(s.etag), "n%d", i);
        w.spec[w.n] = s;
        w.offset[w.n] = -2;
        w.part[w.n] = produce_event(f, &s, &w.offset[w.n]);
        w.n++;
    }
    flush(f);
    f->m = start_materializer(f, 1000);
    wait_all_applied(f, f->m);
    assert_int_equal(objlog_materializer_events_applied(f->m), w.n - before);
    assert_int_equal(count_rows(f, OBJLOG_CF_OUTCOMES, 'o'), w.n);
    assert_int_equal(count_first_outcomes(f), N_EVENTS + 50);
    assert_int_equal(count_rows(f, OBJLOG_CF_VERSIONS, 0), N_EVENTS - NPARTS + 50);
    /* A retry answers with the original decision (its version id). */
    for (int i = 0; i < 50; i++) {
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(f->store, w.part[before + i],
                                                  w.offset[before + i], &o, err,
                                                  sizeof(err)), 1);
        char vid[KEYCODEC_VERSION_ID_LEN];
        keycodec_version_id(keycodec_seq(1, w.offset[NPARTS + i]), vid);
        assert_int_equal(o->code, OBJLOG__OUTCOME_CODE__OUTCOME_OK);
        assert_string_equal(o->version_id, vid);
        objlog__outcome__free_unpacked(o, NULL);
    }
    for (int k = 0; k < KEYS_PER_BUCKET; k++) {
        char key[24], want[24], got[24];
        snprintf(key, sizeof(key), "k%02d", k);
        for (int p = 0; p < NPARTS; p++) {
            int last = -1;
            for (int i = 0; i < 50; i++)
                if (i % NPARTS == p && i % KEYS_PER_BUCKET == k)
                    last = i;
            if (last < 0)
                continue;
            snprintf(want, sizeof(want), "n%d", last);
            current_etag(f, f->bucket[p], key, got, sizeof(got));
            assert_string_equal(got, want);
        }
    }
}

#define GARBAGE "\xff\xfe\xfd not protobuf"

static void test_dlq(void **state) {
    fixture *f = *state;
    int64_t off[4];
    ev_spec b = {'B', f->bucket[1], "", "", 1};
    produce_event(f, &b, &off[0]);
    produce_raw(f, 1, "junk", 4, GARBAGE, sizeof(GARBAGE) - 1, &off[1]);
    ev_spec put = {'P', f->bucket[1], "after", "e1", 2};
    produce_event(f, &put, &off[2]);
    flush(f);
    assert_int_equal(off[1], 1);
    f->m = start_materializer(f, 1000);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 1, off[2], 20000), 0);
    assert_int_equal(objlog_materializer_dlq_count(f->m), 1);
    assert_int_equal(objlog_store_dlq_count(f->store, 1), 1);
    char err[256], got[24];
    Objlog__Outcome *o;
    assert_int_equal(objlog_store_get_outcome(f->store, 1, 1, &o, err, sizeof(err)), 1);
    assert_int_equal(o->code, OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_EVENT);
    assert_string_equal(o->message, "payload is not an objlog.Event");
    objlog__outcome__free_unpacked(o, NULL);
    current_etag(f, f->bucket[1], "after", got, sizeof(got));
    assert_string_equal(got, "e1");

    /* The DLQ holds the original bytes and where they came from. */
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    rd_kafka_conf_set(cc, "bootstrap.servers", f->brokers, err, sizeof(err));
    rd_kafka_conf_set(cc, "group.id", "test-dlq-reader", err, sizeof(err));
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, DLQ_TOPIC, 0)->offset = 0;
    rd_kafka_assign(c, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_message_t *msg = NULL;
    for (int i = 0; i < 100 && !msg; i++) {
        msg = rd_kafka_consumer_poll(c, 100);
        if (msg && msg->err) {
            rd_kafka_message_destroy(msg);
            msg = NULL;
        }
    }
    assert_non_null(msg);
    assert_int_equal(msg->len, sizeof(GARBAGE) - 1);
    assert_memory_equal(msg->payload, GARBAGE, sizeof(GARBAGE) - 1);
    assert_int_equal(msg->key_len, 4);
    rd_kafka_headers_t *h = NULL;
    assert_int_equal(rd_kafka_message_headers(msg, &h), 0);
    const void *v;
    size_t vn;
    assert_int_equal(rd_kafka_header_get_last(h, "objlog.partition", &v, &vn), 0);
    assert_int_equal(vn, 1);
    assert_memory_equal(v, "1", 1);
    assert_int_equal(rd_kafka_header_get_last(h, "objlog.offset", &v, &vn), 0);
    assert_memory_equal(v, "1", 1);
    assert_int_equal(rd_kafka_header_get_last(h, "objlog.error", &v, &vn), 0);
    assert_int_equal(vn, strlen("payload is not an objlog.Event"));
    assert_memory_equal(v, "payload is not an objlog.Event", vn);
    rd_kafka_message_destroy(msg);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);

    /* Restart: the DLQ count survives and the message is not resent. */
    objlog_materializer_destroy(f->m);
    f->m = start_materializer(f, 1000);
    assert_int_equal(objlog_materializer_dlq_count(f->m), 1);
    assert_int_equal(objlog_materializer_applied(f->m, 1), 3);
    assert_int_equal(objlog_materializer_events_applied(f->m), 0);
}

static long elapsed_ms(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The memtable budget (objlog_store_conf) holds across every column
 * family: 60,000 PUTs (~9 MB of rows) leave memtables within a small
 * multiple of the budget (one filling, one flushing per column family)
 * and the rest
 * flushed to SST files; with RocksDB's defaults (64 MB per column family)
 * all of it stayed in memory. */
static uint64_t store_property_sum(fixture *f, const char *name) {
    uint64_t total = 0, v = 0;
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++)
        if (rocksdb_property_int_cf(objlog_store_db(f->store),
                                    objlog_store_cf(f->store, (objlog_cf)cf), name, &v) == 0)
            total += v;
    return total;
}

static void test_memtable_budget(void **state) {
    fixture *f = *state;
    char err[256];
    objlog_store_close(f->store);
    objlog_store_conf sc = {.memtable_bytes = 1 << 20, .block_cache_bytes = 1 << 20};
    f->store = objlog_store_open_conf(f->dir, &sc, err, sizeof(err));
    assert_non_null(f->store);
    f->m = start_materializer(f, 1000);
    int64_t slot;
    for (int p = 0; p < NPARTS; p++) {
        ev_spec b = {'B', f->bucket[p], "", "", 1 + (uint32_t)p};
        produce_event(f, &b, &slot);
    }
    for (int i = 0; i < 60000; i++) {
        ev_spec s = {'P', f->bucket[i % NPARTS], "", "", 100 + (uint32_t)i};
        snprintf(s.key, sizeof(s.key), "budget-%06d", i);
        snprintf(s.etag, sizeof(s.etag), "e%d", i);
        produce_event(f, &s, &slot);
    }
    flush(f);
    wait_all_applied(f, f->m);
    /* Flushes run in RocksDB's background threads; on a loaded box the
     * last ones may still be under way when apply is done. */
    uint64_t mem = store_property_sum(f, "rocksdb.cur-size-all-mem-tables");
    for (int i = 0; i < 100 && mem > 4u << 20; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        mem = store_property_sum(f, "rocksdb.cur-size-all-mem-tables");
    }
    uint64_t sst = store_property_sum(f, "rocksdb.live-sst-files-size");
    print_message("memtables %llu bytes, SST %llu bytes\n", (unsigned long long)mem,
                  (unsigned long long)sst);
    assert_true(mem <= 4u << 20);
    assert_true(sst > 0);
    assert_int_equal(count_rows(f, OBJLOG_CF_OBJECTS, 0), 60000);
}

static void test_wait_applied(void **state) {
    fixture *f = *state;
    f->m = start_materializer(f, 1000);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 2, 0, 300), 1);
    long ms = elapsed_ms(&t0);
    assert_true(ms >= 290 && ms < 2000);
    assert_int_equal(objlog_materializer_wait_applied(f->m, NPARTS, 0, 10), -1);
    assert_int_equal(objlog_materializer_wait_applied(f->m, -1, 0, 10), -1);
    assert_int_equal(objlog_materializer_applied(f->m, 2), 0);
    char buf[64];
    assert_null(objlog_materializer_partition_error(f->m, 2, buf, sizeof(buf)));

    int64_t off = -2;
    ev_spec b = {'B', f->bucket[2], "", "", 7};
    produce_event(f, &b, &off);
    flush(f);
    assert_int_equal(off, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 2, 0, 10000), 0);
    assert_true(elapsed_ms(&t0) < 5000);
    assert_int_equal(objlog_materializer_applied(f->m, 2), 1);
    /* Already applied: answers at once even with no time to wait. */
    assert_int_equal(objlog_materializer_wait_applied(f->m, 2, 0, 0), 0);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 2, 1, 0), 1);
}

/* The mock broker keeps about 5 MB per partition: 7 MB of events moves the
 * log start of partition 2 past 0 while this fresh view has applied
 * nothing. Partition 2 must stop with the clear error; others go on. */
static void test_log_start_moved(void **state) {
    fixture *f = *state;
    static char pad[8192];
    memset(pad, 'x', sizeof(pad) - 1);
    int64_t slot;
    for (int i = 0; i < 900; i++)
        produce_raw(f, 2, "pad", 3, pad, sizeof(pad), &slot);
    flush(f);
    int64_t lo, hi;
    assert_int_equal(rd_kafka_query_watermark_offsets(f->prod, EVENTS_TOPIC, 2,
                                                      &lo, &hi, 5000), 0);
    if (lo == 0)
        fail_msg("mock cluster did not truncate partition 2 (hi %lld)", (long long)hi);
    f->m = start_materializer(f, 1000);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 2, 0, 10000), -1);
    char buf[512], want[512];
    assert_non_null(objlog_materializer_partition_error(f->m, 2, buf, sizeof(buf)));
    snprintf(want, sizeof(want),
             "partition 2: log start moved past applied offset 0 (log now starts "
             "at %lld): the view cannot be brought up to date without data loss; "
             "rebuild it from a topic that still holds the full log", (long long)lo);
    assert_string_equal(buf, want);
    assert_int_equal(objlog_materializer_applied(f->m, 2), 0);

    int64_t off = -2;
    ev_spec b = {'B', f->bucket[0], "", "", 9};
    produce_event(f, &b, &off);
    flush(f);
    assert_int_equal(objlog_materializer_wait_applied(f->m, 0, off, 10000), 0);
    assert_null(objlog_materializer_partition_error(f->m, 0, buf, sizeof(buf)));
    assert_int_equal(objlog_store_applied(f->store, 2), 0);
}

/* ---- replay determinism ---- */

static char *dump_to_string(objlog_store *st) {
    char *buf = NULL, err[256];
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    assert_int_equal(objlog_store_dump(st, out, err, sizeof(err)), 0);
    fclose(out);
    return buf;
}

/* Applies the whole log into a new store with batch_max and threads, and
 * returns its dump (malloc'd). */
static char *replay_dump(fixture *f, int batch_max, int threads) {
    char dir2[64], err[256];
    assert_int_equal(proc_tmpdir(dir2, sizeof(dir2)), 0);
    objlog_store *first = f->store;
    f->store = objlog_store_open(dir2, err, sizeof(err));
    assert_non_null(f->store);
    f->m = start_materializer_threads(f, batch_max, 0, threads);
    wait_all_applied(f, f->m);
    objlog_materializer_destroy(f->m);
    f->m = NULL;
    char *dump = dump_to_string(f->store);
    objlog_store_close(f->store);
    f->store = first;
    proc_rmtree(dir2);
    return dump;
}

/* A mixed workload (puts, deletes, If-None-Match: * races that lose,
 * retried request ids, a request id reused on another partition, and
 * injected duplicate messages) applied with 7-event batches on one apply
 * thread, then replayed from offset 0 into empty stores with 1000-event
 * batches on 1, 2 and NPARTS threads: objlog_store_dump of all four is
 * byte-identical. */
static void test_replay_dump_identical(void **state) {
    fixture *f = *state;
    static workload w;
    memset(&w, 0, sizeof(w));
    for (int p = 0; p < NPARTS; p++) {
        ev_spec s = {'B', f->bucket[p], "", "", 7000 + (uint32_t)p};
        workload_add(f, &w, &s);
    }
    for (int i = 0; i < 600; i++) {
        if (i % 5 == 4) { /* the same message again: a retry or duplicate */
            ev_spec s = w.spec[NPARTS + i / 2];
            workload_add(f, &w, &s);
            continue;
        }
        /* every 50th reuses the request id of the event before it, on
         * the next partition: a new request there (ids are per
         * partition), whichever thread applies which */
        uint32_t rid = i % 50 == 48 ? 8000 + (uint32_t)i - 1 : 8000 + (uint32_t)i;
        ev_spec s = {"PDNN"[i % 4], f->bucket[i % NPARTS], "", "", rid};
        snprintf(s.key, sizeof(s.key), "k%02d", (i / 3) % 10);
        snprintf(s.etag, sizeof(s.etag), "e%d", i);
        workload_add(f, &w, &s);
    }
    flush(f);
    f->m = start_materializer_threads(f, 7, 0, 1);
    wait_all_applied(f, f->m);
    objlog_materializer_destroy(f->m);
    f->m = NULL;
    char *live = dump_to_string(f->store);
    char err[256];

    assert_true(strlen(live) > 1000);
    const int threads[] = {1, 2, NPARTS};
    for (int t = 0; t < 3; t++) {
        char *replayed = replay_dump(f, 1000, threads[t]);
        if (strcmp(live, replayed) != 0)
            fail_msg("replayed view (%d apply threads) differs from the live one",
                     threads[t]);
        free(replayed);
    }
    /* The workload really had lost races and deduplicated retries. */
    int precond = 0, copies = 0;
    for (int i = 0; i < w.n; i++) {
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(f->store, w.part[i], w.offset[i],
                                                  &o, err, sizeof(err)), 1);
        precond += o->code == OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED;
        copies += o->offset != w.offset[i];
        objlog__outcome__free_unpacked(o, NULL);
    }
    assert_true(precond > 0);
    assert_int_equal(copies, 120);
    free(live);
}

/* objlog_materializer_new on f->store fails with a message containing
 * want. */
static void expect_refused(fixture *f, int no_stats, const char *want) {
    char err[512] = "";
    objlog_materializer_conf conf = mat_conf(f, 100, no_stats, 0);
    objlog_materializer *m = objlog_materializer_new(&conf, f->store, err, sizeof(err));
    if (m) {
        objlog_materializer_destroy(m);
        fail_msg("materializer_new accepted the store (no_stats %d)", no_stats);
    }
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

/* The bench-only switch (test_no_stats): the same log applied without the
 * stats view leaves the same data rows and no stats rows; a store keeps
 * counters from its first event or never, so each mode refuses a store
 * applied in the other. */
static void test_no_stats_switch(void **state) {
    fixture *f = *state;
    static workload w;
    memset(&w, 0, sizeof(w));
    for (int p = 0; p < NPARTS; p++) {
        ev_spec s = {'B', f->bucket[p], "", "", 9000 + (uint32_t)p};
        workload_add(f, &w, &s);
    }
    for (int i = 0; i < 200; i++) {
        ev_spec s = {"PPD"[i % 3], f->bucket[i % NPARTS], "", "", 9100 + (uint32_t)i};
        snprintf(s.key, sizeof(s.key), "k%03d", i / 2);
        snprintf(s.etag, sizeof(s.etag), "e%d", i);
        workload_add(f, &w, &s);
    }
    flush(f);
    f->m = start_materializer_ex(f, 50, 1);
    wait_all_applied(f, f->m);
    objlog_materializer_destroy(f->m);
    f->m = NULL;
    uint64_t objects = count_rows(f, OBJLOG_CF_OBJECTS, 0);
    uint64_t versions = count_rows(f, OBJLOG_CF_VERSIONS, 0);
    assert_true(objects > 0);
    assert_int_equal(count_rows(f, OBJLOG_CF_STATS, 0), 0);
    expect_refused(f, 0, "applied without the stats view");
    /* Reopened in its own mode it goes on. */
    f->m = start_materializer_ex(f, 50, 1);
    objlog_materializer_destroy(f->m);
    f->m = NULL;

    char dir2[64], err[256];
    assert_int_equal(proc_tmpdir(dir2, sizeof(dir2)), 0);
    objlog_store *first = f->store;
    f->store = objlog_store_open(dir2, err, sizeof(err));
    assert_non_null(f->store);
    f->m = start_materializer(f, 50);
    wait_all_applied(f, f->m);
    objlog_materializer_destroy(f->m);
    f->m = NULL;
    assert_int_equal(count_rows(f, OBJLOG_CF_OBJECTS, 0), objects);
    assert_int_equal(count_rows(f, OBJLOG_CF_VERSIONS, 0), versions);
    /* One row per bucket, and on each bucket's partition (one bucket per
     * partition) the tenant ""'s and the global row. */
    assert_int_equal(count_rows(f, OBJLOG_CF_STATS, 0), 3 * NPARTS);
    expect_refused(f, 1, "needs an empty store");
    objlog_store_close(f->store);
    f->store = first;
    proc_rmtree(dir2);
}

/* A stall's retries back off from STALL_FIRST_MS, doubling, to at most
 * STALL_MAX_MS; a probe that goes through ends the stall but not the
 * backoff, a batch written ends both; every failure is counted. */
static void test_stall_backoff(void **state) {
    (void)state;
    stall *s = stall_new();
    assert_non_null(s);
    char why[64] = "";
    assert_int_equal(stall_active(s, why, sizeof(why)), 0);
    assert_int_equal(stall_wait_ms(s, 0), -1);
    static const int64_t waits[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
    int64_t now = 1000;
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        stall_failed(s, i ? "again" : "No space left on device", now);
        assert_int_equal(stall_wait_ms(s, now), waits[i]);
        assert_int_equal(stall_wait_ms(s, now + waits[i] - 1), 1);
        now += waits[i];
        assert_int_equal(stall_wait_ms(s, now), 0);
    }
    assert_int_equal(stall_active(s, why, sizeof(why)), 1);
    assert_string_equal(why, "again");
    assert_int_equal(stall_errors(s), 8);
    /* The probe went through: no longer stalled, still backing off. */
    stall_written(s, 0, now);
    assert_int_equal(stall_active(s, NULL, 0), 0);
    assert_int_equal(stall_wait_ms(s, now), -1);
    stall_failed(s, "edge", now);
    assert_int_equal(stall_wait_ms(s, now), 5000);
    /* A batch was written: the next stall starts over. */
    stall_written(s, 1, now);
    stall_failed(s, "new", now);
    assert_int_equal(stall_wait_ms(s, now), 100);
    assert_int_equal(stall_errors(s), 10);
    stall_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall_backoff),
        cmocka_unit_test_setup_teardown(test_consume_apply_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dlq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_dump_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memtable_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_start_moved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_stats_switch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
