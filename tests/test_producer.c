/* test_producer.c: libobjlog_producer against librdkafka's mock cluster over
 * real TCP on 127.0.0.1 (docs/ARCHITECTURE.md, "How a write flows").
 * Each test builds its own cluster
 * (objlog.events with 4 partitions, rf 3; objlog.control and objlog.dlq with
 * one partition) and tears it down, so tests are independent. What is
 * pinned down: configuration errors name the key; concurrent writes all
 * complete once, with distinct request ids and per-partition offsets in
 * order; every logged message has the route key as Kafka key, sits in the
 * partition the range map names and decodes to exactly the event written;
 * bad arguments never reach the log; ack=applied reports UNKNOWN (with the
 * request id) when no outcome arrives, and OK/REJECTED from the outcome
 * the query service returns (with the upload id of a create_upload); a
 * range map in objlog.control is honoured. Bucket settings,
 * versioning, delete bucket and the four multipart calls each log exactly
 * their Event (bucket ops route with key "", multipart ones with the
 * object key), create_bucket is create_bucket_ex without settings, and
 * upload ids, part numbers, part lists and versioning states are checked
 * up front. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "control.h"
#include "keycodec.h"
#include "objlog.pb-c.h"
#include "objlog_producer.h"
#include "rangemap.h"

#define EVENTS "objlog.events"
#define CONTROL "objlog.control"
#define NPART 4

typedef struct cluster {
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
} cluster;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cluster_setup(void **state) {
    cluster *c = calloc(1, sizeof(*c));
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof(err));
    c->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    assert_non_null(c->rk);
    c->mc = rd_kafka_mock_cluster_new(c->rk, 3);
    assert_non_null(c->mc);
    snprintf(c->bootstrap, sizeof(c->bootstrap), "%s",
             rd_kafka_mock_cluster_bootstraps(c->mc));
    assert_int_equal(rd_kafka_mock_topic_create(c->mc, EVENTS, NPART, 3), 0);
    assert_int_equal(rd_kafka_mock_topic_create(c->mc, CONTROL, 1, 3), 0);
    assert_int_equal(rd_kafka_mock_topic_create(c->mc, "objlog.dlq", 1, 3), 0);
    *state = c;
    return 0;
}

static int cluster_teardown(void **state) {
    cluster *c = *state;
    rd_kafka_mock_cluster_destroy(c->mc);
    rd_kafka_destroy(c->rk);
    free(c);
    return 0;
}

static void conf_ok(objlog_producer_conf *conf, const char *k, const char *v) {
    char err[256];
    objlog_conf_res r = objlog_producer_conf_set(conf, k, v, err, sizeof(err));
    if (r != OBJLOG_CONF_OK)
        fail_msg("conf %s=%s: %s", k, v, err);
}

static objlog_producer *producer_start(cluster *c, const char *ack,
                                       const char *query_url,
                                       const char *timeout_ms) {
    objlog_producer_conf *conf = objlog_producer_conf_new();
    assert_non_null(conf);
    conf_ok(conf, "bootstrap.servers", c->bootstrap);
    conf_ok(conf, "ack", ack);
    conf_ok(conf, "kafka.log_level", "2");
    if (query_url)
        conf_ok(conf, "query.url", query_url);
    if (timeout_ms)
        conf_ok(conf, "outcome.timeout.ms", timeout_ms);
    char err[512];
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer_new: %s", err);
    return p;
}

/* Messages read from the log; they keep their consumer alive (librdkafka's
 * destroy waits for every message), so both go away in free_msgs. */
static rd_kafka_t *g_consumer;

/* Reads count messages from every partition of topic from the start. */
static rd_kafka_message_t **consume_all(cluster *c, int count) {
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", c->bootstrap, err, sizeof(err));
    rd_kafka_conf_set(conf, "group.id", "test-producer-raw", err, sizeof(err));
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof(err));
    rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    assert_non_null(k);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(NPART);
    for (int i = 0; i < NPART; i++)
        rd_kafka_topic_partition_list_add(tp, EVENTS, i)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(k, tp), 0);
    rd_kafka_topic_partition_list_destroy(tp);
    rd_kafka_message_t **msgs = calloc((size_t)count, sizeof(*msgs));
    int got = 0;
    int64_t deadline = now_ms() + 20000;
    while (got < count && now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 200);
        if (!m)
            continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        msgs[got++] = m;
    }
    g_consumer = k;
    assert_int_equal(got, count);
    return msgs;
}

static void free_msgs(rd_kafka_message_t **msgs, int n) {
    for (int i = 0; i < n; i++)
        if (msgs[i])
            rd_kafka_message_destroy(msgs[i]);
    free(msgs);
    rd_kafka_consumer_close(g_consumer);
    rd_kafka_destroy(g_consumer);
    g_consumer = NULL;
}

static void assert_route(const rd_kafka_message_t *m, const rangemap *rm,
                         const char *bucket, const char *key, size_t kn) {
    keybuf kb;
    keybuf_init(&kb);
    assert_int_equal(keycodec_route_key(&kb, bucket, strlen(bucket),
                                        (const uint8_t *)key, kn), 0);
    assert_int_equal(m->key_len, kb.len);
    assert_memory_equal(m->key, kb.data, kb.len);
    assert_int_equal(m->partition, rangemap_partition(rm, kb.data, kb.len));
    keybuf_free(&kb);
}

/* ---- configuration ---- */

static void test_conf_errors_name_the_key(void **state) {
    (void)state;
    char err[256];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(conf, "bogus.key", "1", err, sizeof(err)),
                     OBJLOG_CONF_UNKNOWN);
    assert_non_null(strstr(err, "bogus.key"));
    assert_int_equal(objlog_producer_conf_set(conf, "ack", "maybe", err, sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "ack"));
    assert_non_null(strstr(err, "maybe"));
    assert_int_equal(objlog_producer_conf_set(conf, "outcome.timeout.ms", "12x",
                                              err, sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "outcome.timeout.ms"));
    assert_non_null(strstr(err, "12x"));
    assert_int_equal(objlog_producer_conf_set(conf, "unknown.retries", "101", err,
                                              sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "unknown.retries"));
    assert_int_equal(objlog_producer_conf_set(conf, "unknown.retries", "-1", err,
                                              sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_int_equal(objlog_producer_conf_set(conf, "unknown.retries", "100", err,
                                              sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(conf, "query.url", "ftp://x", err,
                                              sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "query.url"));
    assert_int_equal(objlog_producer_conf_set(conf, "topic", "", err, sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "topic"));
    assert_int_equal(objlog_producer_conf_set(conf, "kafka.no.such.prop", "1",
                                              err, sizeof(err)),
                     OBJLOG_CONF_UNKNOWN);
    assert_non_null(strstr(err, "kafka.no.such.prop"));
    assert_int_equal(objlog_producer_conf_set(conf, "kafka.linger.ms", "soon",
                                              err, sizeof(err)),
                     OBJLOG_CONF_INVALID);
    assert_non_null(strstr(err, "kafka.linger.ms"));
    assert_int_equal(objlog_producer_conf_set(conf, "kafka.linger.ms", "10", err,
                                              sizeof(err)),
                     OBJLOG_CONF_OK);
    /* Forced settings are refused at set time, naming the key. */
    const char *forced[][2] = {{"kafka.acks", "1"},
                               {"kafka.request.required.acks", "0"},
                               {"kafka.enable.idempotence", "false"},
                               {"kafka.bootstrap.servers", "127.0.0.1:1"}};
    for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++) {
        err[0] = '\0';
        assert_int_equal(objlog_producer_conf_set(conf, forced[i][0], forced[i][1], err,
                                                  sizeof(err)),
                         OBJLOG_CONF_INVALID);
        assert_non_null(strstr(err, forced[i][0]));
    }
    assert_non_null(strstr(err, "set bootstrap.servers instead"));
    assert_int_equal(objlog_producer_conf_set(conf, "ack", "logged", err, sizeof(err)),
                     OBJLOG_CONF_OK);
    /* Missing brokers are caught by new(), which owns conf either way. */
    assert_null(objlog_producer_new(conf, err, sizeof(err)));
    assert_non_null(strstr(err, "bootstrap.servers"));

    conf = objlog_producer_conf_new();
    conf_ok(conf, "bootstrap.servers", "127.0.0.1:1");
    assert_null(objlog_producer_new(conf, err, sizeof(err)));
    assert_non_null(strstr(err, "query.url"));
    assert_string_equal(objlog_status_name(OBJLOG_STATUS_UNKNOWN), "UNKNOWN");
}

/* ---- concurrent logged writes ---- */

#define PUTS 1000
#define PUT_THREADS 4

typedef struct put_slot {
    objlog_write_result res;
    int calls;
    int order;                 /* position in callback order */
} put_slot;

typedef struct put_run {
    objlog_producer *p;
    put_slot slots[PUTS];
    pthread_mutex_t lock;
    int next_order;
} put_run;

typedef struct put_arg {
    put_run *run;
    int thread;
} put_arg;

static put_run *g_run; /* the run put_cb reports into */

/* Runs on the library's delivery thread; the lock only orders the record. */
static void put_cb(const objlog_write_result *res, void *opaque) {
    put_slot *s = opaque;
    pthread_mutex_lock(&g_run->lock);
    s->res = *res;
    s->calls++;
    s->order = g_run->next_order++;
    pthread_mutex_unlock(&g_run->lock);
}

static void key_of(int i, char *out, size_t n) {
    snprintf(out, n, "dir%d/obj-%04d.bin", i % 7, i);
}

static const char *bucket_of(int i) {
    static const char *b[] = {"photos", "logs.2026", "a-b-c", "zzz"};
    return b[i % 4];
}

static void meta_of(int i, objlog_object_meta *m, objlog_user_meta *um,
                    char *etag, size_t en) {
    snprintf(etag, en, "etag-%d", i);
    um[0].name = "owner";
    um[0].value = (i % 2) ? "alice" : "bob";
    memset(m, 0, sizeof(*m));
    m->size = (uint64_t)i * 3;
    m->etag = etag;
    m->content_type = "application/octet-stream";
    m->blob_id = "blob";
    m->storage_class = "STANDARD";
    m->checksum = "crc32:0";
    m->user_meta = um;
    m->n_user_meta = 1;
}

static void *put_thread(void *arg) {
    put_arg *a = arg;
    for (int i = a->thread; i < PUTS; i += PUT_THREADS) {
        char key[64], etag[32], err[256];
        objlog_object_meta m;
        objlog_user_meta um[1];
        key_of(i, key, sizeof(key));
        meta_of(i, &m, um, etag, sizeof(etag));
        if (objlog_producer_put_object(a->run->p, bucket_of(i), key, strlen(key),
                                       &m, NULL, put_cb,
                                       &a->run->slots[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "put %d: %s\n", i, err);
            abort();
        }
    }
    return NULL;
}

static int key_index(const uint8_t *k, size_t n) {
    char buf[64];
    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, k, n);
    buf[n] = '\0';
    const char *dash = strrchr(buf, '-');
    return dash ? atoi(dash + 1) : -1;
}

static void check_put_event(const rd_kafka_message_t *m, const put_slot *s,
                            int i, int64_t t0, int64_t t1) {
    Objlog__Event *ev = objlog__event__unpack(NULL, m->len, m->payload);
    assert_non_null(ev);
    char key[64], etag[32];
    objlog_object_meta meta;
    objlog_user_meta um[1];
    key_of(i, key, sizeof(key));
    meta_of(i, &meta, um, etag, sizeof(etag));
    assert_int_equal(ev->request_id.len, OBJLOG_REQUEST_ID_LEN);
    assert_memory_equal(ev->request_id.data, s->res.request_id, OBJLOG_REQUEST_ID_LEN);
    assert_int_equal(ev->range_epoch, CONTROL_DEFAULT_EPOCH);
    assert_true(ev->timestamp_ms >= t0 && ev->timestamp_ms <= t1);
    assert_string_equal(ev->bucket, bucket_of(i));
    assert_int_equal(ev->key.len, strlen(key));
    assert_memory_equal(ev->key.data, key, strlen(key));
    assert_null(ev->pre);
    assert_int_equal(ev->op_case, OBJLOG__EVENT__OP_PUT_OBJECT);
    Objlog__ObjectMeta *om = ev->put_object->meta;
    assert_non_null(om);
    assert_int_equal(om->size, meta.size);
    assert_string_equal(om->etag, etag);
    assert_string_equal(om->content_type, "application/octet-stream");
    assert_string_equal(om->blob_id, "blob");
    assert_string_equal(om->storage_class, "STANDARD");
    assert_string_equal(om->checksum, "crc32:0");
    assert_int_equal(om->n_user_metadata, 1);
    assert_string_equal(om->user_metadata[0]->name, "owner");
    assert_string_equal(om->user_metadata[0]->value, um[0].value);
    objlog__event__free_unpacked(ev, NULL);
}

static void test_concurrent_puts_logged(void **state) {
    cluster *c = *state;
    put_run *run = calloc(1, sizeof(*run));
    pthread_mutex_init(&run->lock, NULL);
    g_run = run;
    run->p = producer_start(c, "logged", NULL, NULL);
    int64_t t0 = wall_ms();
    pthread_t th[PUT_THREADS];
    put_arg args[PUT_THREADS];
    for (int t = 0; t < PUT_THREADS; t++) {
        args[t] = (put_arg){.run = run, .thread = t};
        assert_int_equal(pthread_create(&th[t], NULL, put_thread, &args[t]), 0);
    }
    for (int t = 0; t < PUT_THREADS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(objlog_producer_flush(run->p, 20000), 0);
    int64_t t1 = wall_ms();

    /* Every write completed once as LOGGED, with a distinct request id. */
    int *by_order = calloc(PUTS, sizeof(int));
    for (int i = 0; i < PUTS; i++) {
        put_slot *s = &run->slots[i];
        assert_int_equal(s->calls, 1);
        assert_int_equal(s->res.status, OBJLOG_STATUS_LOGGED);
        assert_int_equal(strlen(s->res.request_id_hex), 32);
        char tok[64];
        snprintf(tok, sizeof(tok), "%d.%lld", s->res.partition,
                 (long long)s->res.offset);
        assert_string_equal(s->res.token, tok);
        by_order[s->order] = i;
        for (int j = 0; j < i; j++)
            assert_memory_not_equal(s->res.request_id, run->slots[j].res.request_id,
                                    OBJLOG_REQUEST_ID_LEN);
    }
    /* In callback order, offsets per partition strictly increase, and
     * together they cover 0..n-1 of each partition with no gap. */
    int64_t last[NPART] = {-1, -1, -1, -1};
    int count[NPART] = {0};
    for (int o = 0; o < PUTS; o++) {
        put_slot *s = &run->slots[by_order[o]];
        assert_in_range(s->res.partition, 0, NPART - 1);
        assert_true(s->res.offset > last[s->res.partition]);
        last[s->res.partition] = s->res.offset;
        count[s->res.partition]++;
    }
    for (int pn = 0; pn < NPART; pn++)
        assert_int_equal(last[pn], count[pn] - 1);
    free(by_order);

    /* The raw log: route key, partition and the exact event per message. */
    rangemap *rm = rangemap_new_default(NPART, CONTROL_DEFAULT_EPOCH);
    rd_kafka_message_t **msgs = consume_all(c, PUTS);
    int seen[PUTS] = {0};
    for (int n = 0; n < PUTS; n++) {
        rd_kafka_message_t *m = msgs[n];
        Objlog__Event *ev = objlog__event__unpack(NULL, m->len, m->payload);
        assert_non_null(ev);
        int i = key_index(ev->key.data, ev->key.len);
        objlog__event__free_unpacked(ev, NULL);
        assert_in_range(i, 0, PUTS - 1);
        seen[i]++;
        char key[64];
        key_of(i, key, sizeof(key));
        assert_route(m, rm, bucket_of(i), key, strlen(key));
        assert_int_equal(m->partition, run->slots[i].res.partition);
        assert_int_equal(m->offset, run->slots[i].res.offset);
        check_put_event(m, &run->slots[i], i, t0, t1);
    }
    for (int i = 0; i < PUTS; i++)
        assert_int_equal(seen[i], 1);
    free_msgs(msgs, PUTS);
    rangemap_destroy(rm);
    objlog_producer_destroy(run->p);
    pthread_mutex_destroy(&run->lock);
    free(run);
}

/* Bucket and delete events carry their own fields and preconditions. */
/* A completion callback that calls a *_sync write (or
 * flush, or destroy) used to hang for ever, and destroy with it. Now each
 * fails at once naming the problem, nothing is sent for it, and the
 * producer goes on working. */
typedef struct cb_reentry {
    objlog_producer *p;
    int sync_rc, flush_rc;
    char err[256];
    objlog_write_result inner;
    atomic_int done;
} cb_reentry;

static void reentering_cb(const objlog_write_result *res, void *opaque) {
    cb_reentry *a = opaque;
    (void)res;
    objlog_object_meta meta = {.size = 1, .etag = "e"};
    memset(&a->inner, 0, sizeof(a->inner));
    a->sync_rc = objlog_producer_put_object_sync(a->p, "photos", "inner", 5, &meta, NULL,
                                                 &a->inner, a->err, sizeof(a->err));
    a->flush_rc = objlog_producer_flush(a->p, 1000);
    objlog_producer_destroy(a->p); /* refused: prints, returns */
    atomic_store(&a->done, 1);
}

static void test_sync_call_in_callback_fails(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    cb_reentry a = {.p = p, .sync_rc = 99, .flush_rc = 99};
    char err[256];
    objlog_object_meta meta = {.size = 1, .etag = "e"};
    assert_int_equal(objlog_producer_put_object(p, "photos", "outer", 5, &meta, NULL,
                                                reentering_cb, &a, err, sizeof(err)), 0);
    for (int i = 0; i < 1000 && !atomic_load(&a.done); i++)
        usleep(10 * 1000);
    assert_int_equal(atomic_load(&a.done), 1);
    assert_int_equal(a.sync_rc, -1);
    assert_int_equal(a.flush_rc, -1);
    assert_non_null(strstr(a.err, "completion callback"));
    assert_non_null(strstr(a.err, "deadlock"));
    /* Nothing was sent for the refused call; the producer still works. */
    objlog_write_result r;
    assert_int_equal(objlog_producer_put_object_sync(p, "photos", "after", 5, &meta, NULL,
                                                     &r, err, sizeof(err)), 0);
    assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
    objlog_producer_stats st;
    objlog_producer_stats_get(p, &st);
    assert_int_equal(st.writes_completed, 2);
    objlog_producer_destroy(p);
    rd_kafka_message_t **msgs = consume_all(c, 2);
    free_msgs(msgs, 2);
}

/* The log callback gets librdkafka's lines (here its debug lines, asked
 * for with kafka.debug) and nothing bypasses it. */
typedef struct log_seen {
    pthread_mutex_t mu;
    int lines;
    int debug_lines;
    int metadata_lines;         /* facility METADATA, as kafka.debug asked */
    char opaque_ok;
} log_seen;

static void collect_log(void *opaque, int level, const char *facility, const char *msg) {
    log_seen *s = opaque;
    pthread_mutex_lock(&s->mu);
    s->lines++;
    if (level == 7 && msg && *msg) {
        s->debug_lines++;
        s->metadata_lines += strcmp(facility, "METADATA") == 0;
    }
    s->opaque_ok = 1;
    pthread_mutex_unlock(&s->mu);
}

static void test_log_callback_gets_kafka_lines(void **state) {
    cluster *c = *state;
    log_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    objlog_producer_conf *conf = objlog_producer_conf_new();
    conf_ok(conf, "bootstrap.servers", c->bootstrap);
    conf_ok(conf, "ack", "logged");
    conf_ok(conf, "kafka.debug", "metadata");
    objlog_producer_conf_set_log_cb(conf, collect_log, &seen);
    char err[512];
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer_new: %s", err);
    objlog_write_result r;
    objlog_object_meta meta = {.size = 1, .etag = "e"};
    assert_int_equal(objlog_producer_put_object_sync(p, "photos", "logcb", 5, &meta, NULL,
                                                     &r, err, sizeof(err)), 0);
    assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
    objlog_producer_destroy(p);
    assert_true(seen.debug_lines > 0);
    assert_true(seen.opaque_ok);
    assert_true(seen.metadata_lines > 0);
    rd_kafka_message_t **msgs = consume_all(c, 1);
    free_msgs(msgs, 1);
}

static void test_bucket_and_delete_events(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    objlog_write_result r1, r2;
    char err[256];
    assert_int_equal(objlog_producer_create_bucket_sync(
                         p, "photos", "acme", OBJLOG_VERSIONING_ENABLED, NULL,
                         &r1, err, sizeof(err)), 0);
    assert_int_equal(r1.status, OBJLOG_STATUS_LOGGED);
    objlog_write_opts opts = {.if_match = "etag-1"};
    assert_int_equal(objlog_producer_delete_object_sync(
                         p, "photos", "a\0b", 3, "00000000000000ff", &opts, &r2,
                         err, sizeof(err)), 0);
    assert_int_equal(r2.status, OBJLOG_STATUS_LOGGED);
    objlog_producer_destroy(p);

    rangemap *rm = rangemap_new_default(NPART, CONTROL_DEFAULT_EPOCH);
    rd_kafka_message_t **msgs = consume_all(c, 2);
    for (int n = 0; n < 2; n++) {
        rd_kafka_message_t *m = msgs[n];
        Objlog__Event *ev = objlog__event__unpack(NULL, m->len, m->payload);
        assert_non_null(ev);
        assert_string_equal(ev->bucket, "photos");
        if (ev->op_case == OBJLOG__EVENT__OP_CREATE_BUCKET) {
            assert_route(m, rm, "photos", "", 0);
            assert_memory_equal(ev->request_id.data, r1.request_id, 16);
            assert_int_equal(ev->key.len, 0);
            assert_string_equal(ev->create_bucket->tenant, "acme");
            assert_int_equal(ev->create_bucket->versioning,
                             OBJLOG__VERSIONING__VERSIONING_ENABLED);
            assert_null(ev->pre);
        } else {
            assert_int_equal(ev->op_case, OBJLOG__EVENT__OP_DELETE_OBJECT);
            assert_route(m, rm, "photos", "a\0b", 3);
            assert_memory_equal(ev->request_id.data, r2.request_id, 16);
            assert_int_equal(ev->key.len, 3);
            assert_memory_equal(ev->key.data, "a\0b", 3);
            assert_string_equal(ev->delete_object->version_id, "00000000000000ff");
            assert_non_null(ev->pre);
            assert_string_equal(ev->pre->if_match, "etag-1");
            assert_false(ev->pre->if_none_match);
        }
        objlog__event__free_unpacked(ev, NULL);
    }
    free_msgs(msgs, 2);
    rangemap_destroy(rm);
}

/* ---- bad arguments ---- */

static int g_bad_calls;
static void count_cb(const objlog_write_result *res, void *opaque) {
    (void)res;
    (void)opaque;
    g_bad_calls++;
}

static void test_bad_arguments_rejected_up_front(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    char err[256];
    char big[1026];
    memset(big, 'k', sizeof(big));
    g_bad_calls = 0;
    assert_int_equal(objlog_producer_put_object(p, "photos", big, 1025, NULL, NULL,
                                                count_cb, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "1025"));
    assert_int_equal(objlog_producer_put_object(p, "photos", "", 0, NULL, NULL,
                                                count_cb, NULL, err, sizeof(err)), -1);
    assert_int_equal(objlog_producer_put_object(p, "photos", "a\xff", 2, NULL, NULL,
                                                count_cb, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "UTF-8"));
    /* overlong '/' and a UTF-16 surrogate are not UTF-8 either */
    assert_int_equal(objlog_producer_put_object(p, "photos", "\xc0\xaf", 2, NULL,
                                                NULL, count_cb, NULL, err, sizeof(err)), -1);
    assert_int_equal(objlog_producer_put_object(p, "photos", "\xed\xa0\x80", 3, NULL,
                                                NULL, count_cb, NULL, err, sizeof(err)), -1);
    const char *bad_buckets[] = {"ab", "Photos", "-photos", "photos-", "ph_otos",
                                 "a234567890123456789012345678901234567890123456789012345678901234",
                                 NULL};
    for (int i = 0; bad_buckets[i]; i++) {
        assert_int_equal(objlog_producer_put_object(p, bad_buckets[i], "k", 1, NULL,
                                                    NULL, count_cb, NULL, err,
                                                    sizeof(err)), -1);
        assert_non_null(strstr(err, "bucket"));
        assert_int_equal(objlog_producer_create_bucket(p, bad_buckets[i], NULL, 0, NULL,
                                                       count_cb, NULL, err,
                                                       sizeof(err)), -1);
    }
    assert_int_equal(objlog_producer_delete_object(p, "photos", "k", 1, "00ff", NULL,
                                                   count_cb, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "00ff"));
    assert_int_equal(objlog_producer_delete_object(p, "photos", "k", 1,
                                                   "00000000000000FF", NULL, count_cb,
                                                   NULL, err, sizeof(err)), -1);
    char name[2100];
    memset(name, 'n', sizeof(name));
    name[2048] = '\0';
    objlog_user_meta um[1] = {{.name = name, .value = "v"}};
    objlog_object_meta meta = {.user_meta = um, .n_user_meta = 1};
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &meta, NULL,
                                                count_cb, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "metadata"));
    /* Tags as S3's tag set: at most 10, keys 1..128 and values 0..256
     * bytes of UTF-8, keys unique; each refusal names the problem. */
    objlog_user_meta tags[11];
    char tk[11][8];
    for (int i = 0; i < 11; i++) {
        snprintf(tk[i], sizeof(tk[i]), "t%d", i);
        tags[i].name = tk[i];
        tags[i].value = "v";
    }
    objlog_object_meta tm = {.tags = tags, .n_tags = 11};
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid tags: 11 tags, the limit is 10");
    tags[1].name = "t0";
    tm.n_tags = 2;
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid tags: key \"t0\" given twice");
    tags[1].name = "";
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid tag 1: key and value required");
    name[129] = '\0';
    tags[1].name = name;
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "key 129 bytes (limit 128)"));
    tags[1].name = "t1";
    tags[1].value = "\xc0\xaf";
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid tag 1: not valid UTF-8");
    tm.tags = NULL;
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &tm, NULL, count_cb,
                                                NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid tags: NULL list");
    name[129] = 'n';
    /* The edges of the limits are accepted: 1024-byte key, 2 KiB metadata,
     * 3- and 63-char buckets, a "null" version id, multi-byte UTF-8. */
    name[2047] = '\0';
    assert_int_equal(objlog_producer_put_object(p, "abc", big, 1024, &meta, NULL,
                                                count_cb, NULL, err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_delete_object(
                         p, "a23456789012345678901234567890123456789012345678901234567890123",
                         "caf\xc3\xa9/\xf0\x9f\x98\x80", 10, "null", NULL, count_cb, NULL,
                         err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_flush(p, 10000), 0);
    assert_int_equal(g_bad_calls, 2);
    objlog_producer_destroy(p);
}


/* S3's bucket naming rules, one row each: every write refuses the name
 * before anything reaches the log. */
static void test_bucket_name_rules(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    char err[256];
    static const struct {
        const char *name, *why;
    } bad[] = {
        {"ab..cd", "adjacent periods"},   {"ab.-cd", "period next to a hyphen"},
        {"ab-.cd", "period next to a hyphen"}, {"192.168.5.4", "IP address"},
        {"xn--abc", "prefix xn--"},        {"sthree-abc", "prefix sthree-"},
        {"amzn-s3-demo-abc", "prefix amzn-s3-demo-"}, {"abc-s3alias", "suffix -s3alias"},
        {"abc--ol-s3", "suffix --ol-s3"},  {"abc.mrap", "suffix .mrap"},
        {"abc--x-s3", "suffix --x-s3"},    {"abc--table-s3", "suffix --table-s3"},
    };
    g_bad_calls = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(objlog_producer_create_bucket(p, bad[i].name, NULL, 0, NULL,
                                                       count_cb, NULL, err, sizeof(err)), -1);
        if (!strstr(err, "bucket name") || !strstr(err, bad[i].why))
            fail_msg("%s: \"%s\" does not say \"%s\"", bad[i].name, err, bad[i].why);
        assert_int_equal(objlog_producer_put_object(p, bad[i].name, "k", 1, NULL, NULL,
                                                    count_cb, NULL, err, sizeof(err)), -1);
    }
    assert_int_equal(objlog_producer_create_bucket(p, "x-sthree-abc.s3alias-1", NULL, 0, NULL,
                                                   count_cb, NULL, err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_flush(p, 10000), 0);
    assert_int_equal(g_bad_calls, 1);
    objlog_producer_destroy(p);
}

/* CR, LF and every other control character (0x00-0x1f, 0x7f) are refused
 * in the values S3 gives back as header values (etag, content type, blob
 * id, checksum, user metadata names and values) and in tags; the error
 * names the field. Bytes from 0x80 (UTF-8) and spaces pass. */
static void test_control_characters_refused(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    char err[256];
    static const char *const ctl[] = {"a\rb", "a\nb", "a\tb", "\x01", "a\x1f", "a\x7f"};
    g_bad_calls = 0;
    for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
        objlog_object_meta fields[7];
        const char *what[7] = {"etag", "content type", "blob id", "checksum",
                               "user metadata", "user metadata", "tag"};
        objlog_user_meta ums[2] = {{.name = ctl[i], .value = "red"},
                                   {.name = "color", .value = ctl[i]}};
        objlog_user_meta tags[1] = {{.name = "t", .value = ctl[i]}};
        memset(fields, 0, sizeof(fields));
        fields[0].etag = ctl[i];
        fields[1].content_type = ctl[i];
        fields[2].blob_id = ctl[i];
        fields[3].checksum = ctl[i];
        fields[4].user_meta = &ums[0], fields[4].n_user_meta = 1;
        fields[5].user_meta = &ums[1], fields[5].n_user_meta = 1;
        fields[6].tags = tags, fields[6].n_tags = 1;
        for (int f = 0; f < 7; f++) {
            err[0] = '\0';
            assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &fields[f], NULL,
                                                        count_cb, NULL, err, sizeof(err)), -1);
            if (!strstr(err, what[f]) || !strstr(err, "control character"))
                fail_msg("%s with byte 0x%02x: \"%s\"", what[f],
                         (unsigned char)ctl[i][strcspn(ctl[i], "ab")], err);
            assert_int_equal(objlog_producer_create_upload(p, "photos", "k", 1, &fields[f],
                                                           NULL, count_cb, NULL, err,
                                                           sizeof(err)), -1);
        }
        objlog_completed_part part = {1, ctl[i]};
        assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1,
                                                         "00000000000000aa", &part, 1, NULL,
                                                         count_cb, NULL, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "part etag"));
    }
    objlog_user_meta ok_um = {.name = "city", .value = "K\xc3\xb6ln, a b"};
    objlog_object_meta ok = {.etag = "\"e1\"", .content_type = "text/plain; charset=utf-8",
                             .user_meta = &ok_um, .n_user_meta = 1};
    assert_int_equal(objlog_producer_put_object(p, "photos", "k", 1, &ok, NULL, count_cb, NULL,
                                                err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_flush(p, 10000), 0);
    assert_int_equal(g_bad_calls, 1);
    objlog_producer_destroy(p);
}

/* ---- bucket settings, versioning, multipart ---- */

static Objlog__Event *event_of(int n, Objlog__Event *evs[],
                               Objlog__Event__OpCase op) {
    for (int i = 0; i < n; i++)
        if (evs[i]->op_case == op)
            return evs[i];
    fail_msg("no event with op %d", (int)op);
    return NULL;
}

/* Each new call logs exactly one event with exactly its fields; bucket
 * operations route with key "", multipart ones with the object key. */
static void test_bucket_and_multipart_events(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    objlog_write_result r[7];
    char err[256];
    objlog_bucket_conf bc = {.tenant = "acme",
                             .versioning = OBJLOG_VERSIONING_SUSPENDED,
                             .max_versions = 5,
                             .quota_max_bytes = 1000,
                             .quota_max_objects = 10};
    assert_int_equal(objlog_producer_create_bucket_ex_sync(p, "photos", &bc, NULL,
                                                           &r[0], err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_set_versioning_sync(
                         p, "photos", OBJLOG_VERSIONING_ENABLED, NULL, &r[1], err,
                         sizeof(err)), 0);
    assert_int_equal(objlog_producer_delete_bucket_sync(p, "photos", NULL, &r[2], err,
                                                        sizeof(err)), 0);
    objlog_user_meta um[2] = {{"color", "red"}, {"owner", "ann"}};
    objlog_user_meta tg[2] = {{"project", "x1"}, {"empty", ""}};
    objlog_object_meta meta = {.content_type = "video/mp4", .storage_class = "GLACIER",
                               .user_meta = um, .n_user_meta = 2, .tags = tg, .n_tags = 2};
    assert_int_equal(objlog_producer_create_upload_sync(p, "photos", "big/f\0x", 7,
                                                        &meta, NULL, &r[3], err,
                                                        sizeof(err)), 0);
    assert_int_equal(objlog_producer_upload_part_sync(
                         p, "photos", "big/f\0x", 7, "00000000000000aa", 10000,
                         5242880, "\"9b2cf535f27731c974343645a3985328\"", "blob-3",
                         NULL, &r[4], err, sizeof(err)), 0);
    objlog_completed_part parts[2] = {{1, "e1"}, {3, "e3"}};
    objlog_write_opts opts = {.if_none_match = 1};
    assert_int_equal(objlog_producer_complete_upload_sync(
                         p, "photos", "big/f\0x", 7, "00000000000000aa", parts, 2,
                         &opts, &r[5], err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_abort_upload_sync(p, "photos", "big/f\0x", 7,
                                                       "0123456789abcdef", NULL,
                                                       &r[6], err, sizeof(err)), 0);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(r[i].status, OBJLOG_STATUS_LOGGED);
        assert_string_equal(r[i].upload_id, ""); /* only from an outcome */
    }
    objlog_producer_destroy(p);

    rangemap *rm = rangemap_new_default(NPART, CONTROL_DEFAULT_EPOCH);
    rd_kafka_message_t **msgs = consume_all(c, 7);
    Objlog__Event *evs[7];
    for (int i = 0; i < 7; i++) {
        evs[i] = objlog__event__unpack(NULL, msgs[i]->len, msgs[i]->payload);
        assert_non_null(evs[i]);
        assert_string_equal(evs[i]->bucket, "photos");
        int multipart = evs[i]->op_case >= OBJLOG__EVENT__OP_CREATE_UPLOAD;
        if (multipart) {
            assert_route(msgs[i], rm, "photos", "big/f\0x", 7);
            assert_int_equal(evs[i]->key.len, 7);
            assert_memory_equal(evs[i]->key.data, "big/f\0x", 7);
        } else {
            assert_route(msgs[i], rm, "photos", "", 0);
            assert_int_equal(evs[i]->key.len, 0);
        }
        if (evs[i]->op_case != OBJLOG__EVENT__OP_COMPLETE_UPLOAD)
            assert_null(evs[i]->pre);
    }
    Objlog__Event *e = event_of(7, evs, OBJLOG__EVENT__OP_CREATE_BUCKET);
    assert_memory_equal(e->request_id.data, r[0].request_id, 16);
    assert_string_equal(e->create_bucket->tenant, "acme");
    assert_int_equal(e->create_bucket->versioning,
                     OBJLOG__VERSIONING__VERSIONING_SUSPENDED);
    assert_int_equal(e->create_bucket->max_versions, 5);
    assert_non_null(e->create_bucket->quota);
    assert_int_equal(e->create_bucket->quota->max_bytes, 1000);
    assert_int_equal(e->create_bucket->quota->max_objects, 10);

    e = event_of(7, evs, OBJLOG__EVENT__OP_SET_VERSIONING);
    assert_memory_equal(e->request_id.data, r[1].request_id, 16);
    assert_int_equal(e->set_versioning->status, OBJLOG__VERSIONING__VERSIONING_ENABLED);

    e = event_of(7, evs, OBJLOG__EVENT__OP_DELETE_BUCKET);
    assert_memory_equal(e->request_id.data, r[2].request_id, 16);
    assert_non_null(e->delete_bucket);

    e = event_of(7, evs, OBJLOG__EVENT__OP_CREATE_UPLOAD);
    assert_memory_equal(e->request_id.data, r[3].request_id, 16);
    Objlog__ObjectMeta *om = e->create_upload->meta;
    assert_non_null(om);
    assert_int_equal(om->size, 0);
    assert_string_equal(om->etag, "");
    assert_string_equal(om->content_type, "video/mp4");
    assert_string_equal(om->storage_class, "GLACIER");
    assert_string_equal(om->blob_id, "");
    assert_int_equal(om->n_user_metadata, 2);
    assert_string_equal(om->user_metadata[0]->name, "color");
    assert_string_equal(om->user_metadata[0]->value, "red");
    assert_string_equal(om->user_metadata[1]->name, "owner");
    assert_string_equal(om->user_metadata[1]->value, "ann");
    assert_int_equal(om->n_tags, 2);
    assert_string_equal(om->tags[0]->name, "project");
    assert_string_equal(om->tags[0]->value, "x1");
    assert_string_equal(om->tags[1]->name, "empty");
    assert_string_equal(om->tags[1]->value, "");

    e = event_of(7, evs, OBJLOG__EVENT__OP_UPLOAD_PART);
    assert_memory_equal(e->request_id.data, r[4].request_id, 16);
    assert_string_equal(e->upload_part->upload_id, "00000000000000aa");
    assert_int_equal(e->upload_part->part_number, 10000);
    assert_int_equal(e->upload_part->size, 5242880);
    assert_string_equal(e->upload_part->etag, "\"9b2cf535f27731c974343645a3985328\"");
    assert_string_equal(e->upload_part->blob_id, "blob-3");

    e = event_of(7, evs, OBJLOG__EVENT__OP_COMPLETE_UPLOAD);
    assert_memory_equal(e->request_id.data, r[5].request_id, 16);
    assert_string_equal(e->complete_upload->upload_id, "00000000000000aa");
    assert_int_equal(e->complete_upload->n_parts, 2);
    assert_int_equal(e->complete_upload->parts[0]->part_number, 1);
    assert_string_equal(e->complete_upload->parts[0]->etag, "e1");
    assert_int_equal(e->complete_upload->parts[1]->part_number, 3);
    assert_string_equal(e->complete_upload->parts[1]->etag, "e3");
    assert_non_null(e->pre);
    assert_true(e->pre->if_none_match);
    assert_string_equal(e->pre->if_match, "");

    e = event_of(7, evs, OBJLOG__EVENT__OP_ABORT_UPLOAD);
    assert_memory_equal(e->request_id.data, r[6].request_id, 16);
    assert_string_equal(e->abort_upload->upload_id, "0123456789abcdef");

    for (int i = 0; i < 7; i++)
        objlog__event__free_unpacked(evs[i], NULL);
    free_msgs(msgs, 7);
    rangemap_destroy(rm);
}

/* create_bucket is create_bucket_ex without quota or cap: no Quota message,
 * max_versions 0 (the state machine's default). */
static void test_create_bucket_wraps_ex(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    objlog_write_result r1, r2;
    char err[256];
    assert_int_equal(objlog_producer_create_bucket_sync(p, "plain", NULL,
                                                        OBJLOG_VERSIONING_UNVERSIONED,
                                                        NULL, &r1, err, sizeof(err)), 0);
    assert_int_equal(objlog_producer_create_bucket_ex_sync(p, "plain2", NULL, NULL, &r2,
                                                           err, sizeof(err)), 0);
    objlog_producer_destroy(p);
    rd_kafka_message_t **msgs = consume_all(c, 2);
    for (int i = 0; i < 2; i++) {
        Objlog__Event *ev = objlog__event__unpack(NULL, msgs[i]->len, msgs[i]->payload);
        assert_non_null(ev);
        assert_int_equal(ev->op_case, OBJLOG__EVENT__OP_CREATE_BUCKET);
        assert_string_equal(ev->create_bucket->tenant, "");
        assert_int_equal(ev->create_bucket->versioning,
                         OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
        assert_int_equal(ev->create_bucket->max_versions, 0);
        assert_null(ev->create_bucket->quota);
        objlog__event__free_unpacked(ev, NULL);
    }
    free_msgs(msgs, 2);
}

static void test_bucket_and_multipart_bad_arguments(void **state) {
    cluster *c = *state;
    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    char err[256];
    g_bad_calls = 0;
    const char *bad_ids[] = {"", "abc", "00000000000000aaa", "00000000000000AA",
                             "00000000000000zz", "null", NULL};
    for (int i = 0; bad_ids[i]; i++) {
        assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, bad_ids[i], 1,
                                                     1, "e", NULL, NULL, count_cb, NULL,
                                                     err, sizeof(err)), -1);
        assert_non_null(strstr(err, "upload id"));
        assert_int_equal(objlog_producer_abort_upload(p, "photos", "k", 1, bad_ids[i],
                                                      NULL, count_cb, NULL, err,
                                                      sizeof(err)), -1);
        objlog_completed_part one = {1, "e"};
        assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, bad_ids[i],
                                                         &one, 1, NULL, count_cb, NULL,
                                                         err, sizeof(err)), -1);
    }
    assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, NULL, 1, 1, "e",
                                                 NULL, NULL, count_cb, NULL, err,
                                                 sizeof(err)), -1);
    const char *id = "00000000000000aa";
    assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, id, 0, 1, "e",
                                                 NULL, NULL, count_cb, NULL, err,
                                                 sizeof(err)), -1);
    assert_string_equal(err, "invalid part number 0: must be 1 to 10000");
    assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, id, 10001, 1,
                                                 "e", NULL, NULL, count_cb, NULL, err,
                                                 sizeof(err)), -1);
    assert_string_equal(err, "invalid part number 10001: must be 1 to 10000");
    objlog_completed_part *many = calloc(10001, sizeof(*many));
    for (uint32_t i = 0; i < 10001; i++) {
        many[i].part_number = i + 1 > 10000 ? 10000 : i + 1;
        many[i].etag = "e";
    }
    assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, id, many, 0,
                                                     NULL, count_cb, NULL, err,
                                                     sizeof(err)), -1);
    assert_string_equal(err, "invalid part list: 0 parts, must be 1 to 10000");
    assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, id, many,
                                                     10001, NULL, count_cb, NULL, err,
                                                     sizeof(err)), -1);
    assert_string_equal(err, "invalid part list: 10001 parts, must be 1 to 10000");
    assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, id, NULL, 1,
                                                     NULL, count_cb, NULL, err,
                                                     sizeof(err)), -1);
    objlog_completed_part zero[2] = {{1, "e"}, {0, "e"}};
    assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, id, zero, 2,
                                                     NULL, count_cb, NULL, err,
                                                     sizeof(err)), -1);
    assert_string_equal(err, "part list entry 1: invalid part number 0: must be 1 to "
                             "10000");
    /* keys and buckets are checked as for put */
    assert_int_equal(objlog_producer_create_upload(p, "photos", "", 0, NULL, NULL,
                                                   count_cb, NULL, err, sizeof(err)), -1);
    assert_int_equal(objlog_producer_create_upload(p, "Photos", "k", 1, NULL, NULL,
                                                   count_cb, NULL, err, sizeof(err)), -1);
    assert_int_equal(objlog_producer_delete_bucket(p, "ab", NULL, count_cb, NULL, err,
                                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "bucket"));
    /* versioning never goes back to unversioned */
    assert_int_equal(objlog_producer_set_versioning(p, "photos",
                                                    OBJLOG_VERSIONING_UNVERSIONED, NULL,
                                                    count_cb, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "Enabled or Suspended"));
    assert_int_equal(objlog_producer_set_versioning(p, "photos", (objlog_versioning)7,
                                                    NULL, count_cb, NULL, err,
                                                    sizeof(err)), -1);
    objlog_bucket_conf bc = {.versioning = (objlog_versioning)3};
    assert_int_equal(objlog_producer_create_bucket_ex(p, "photos", &bc, NULL, count_cb,
                                                      NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "invalid versioning 3");
    /* the edges are accepted: part 10000, 10000 parts, part 1 */
    assert_int_equal(objlog_producer_complete_upload(p, "photos", "k", 1, id, many,
                                                     10000, NULL, count_cb, NULL, err,
                                                     sizeof(err)), 0);
    assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, id, 1, 0,
                                                 "D41D8CD98F00B204E9800998ECF8427E",
                                                 NULL, NULL, count_cb, NULL, err,
                                                 sizeof(err)), 0);
    /* A part etag is an MD5: 32 hex digits, quoted or not. */
    const char *bad_etags[] = {"e", "", "d41d8cd98f00b204e9800998ecf8427", /* 31 */
                               "d41d8cd98f00b204e9800998ecf8427e0", "\"d41d8cd9\"",
                               "g41d8cd98f00b204e9800998ecf8427e", NULL};
    for (int i = 0; i < 7; i++) {
        err[0] = '\0';
        assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, id, 1, 0,
                                                     bad_etags[i], NULL, NULL, count_cb,
                                                     NULL, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "invalid part etag"));
        assert_non_null(strstr(err, "32 hex digits"));
    }
    assert_int_equal(objlog_producer_upload_part(p, "photos", "k", 1, id, 2, 0,
                                                 "\"d41d8cd98f00b204e9800998ecf8427e\"",
                                                 NULL, NULL, count_cb, NULL, err,
                                                 sizeof(err)), 0);
    assert_int_equal(objlog_producer_set_versioning(p, "photos",
                                                    OBJLOG_VERSIONING_SUSPENDED, NULL,
                                                    count_cb, NULL, err, sizeof(err)), 0);
    free(many);
    assert_int_equal(objlog_producer_flush(p, 10000), 0);
    assert_int_equal(g_bad_calls, 4); /* the accepted calls above, one callback each */
    objlog_producer_destroy(p);
}

/* ---- ack=applied ---- */

static int closed_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s);
    return ntohs(a.sin_port);
}

static void test_applied_unknown_when_no_outcome(void **state) {
    cluster *c = *state;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
    objlog_producer *p = producer_start(c, "applied", url, "600");
    objlog_write_result r;
    char err[256];
    int64_t t0 = now_ms();
    assert_int_equal(objlog_producer_put_object_sync(p, "photos", "a.jpg", 5, NULL,
                                                     NULL, &r, err, sizeof(err)), 0);
    int64_t took = now_ms() - t0;
    assert_int_equal(r.status, OBJLOG_STATUS_UNKNOWN);
    assert_true(took >= 600);
    assert_true(took < 3000);
    assert_int_equal(strlen(r.request_id_hex), 32);
    assert_non_null(strstr(r.error_message, r.request_id_hex));
    assert_true(r.partition >= 0 && r.offset == 0);
    assert_string_not_equal(r.token, "");

    /* Retrying with the same request id re-sends the same idempotency key. */
    objlog_write_opts opts = {.request_id = r.request_id};
    objlog_write_result r2;
    assert_int_equal(objlog_producer_put_object_sync(p, "photos", "a.jpg", 5, NULL,
                                                     &opts, &r2, err, sizeof(err)), 0);
    assert_int_equal(r2.status, OBJLOG_STATUS_UNKNOWN);
    assert_memory_equal(r2.request_id, r.request_id, OBJLOG_REQUEST_ID_LEN);
    assert_string_equal(r2.request_id_hex, r.request_id_hex);
    assert_int_equal(r2.partition, r.partition);
    assert_int_equal(r2.offset, 1);
    objlog_producer_destroy(p);
}

/* A minimal query service: answers GET /v1/outcomes with a 503 on the
 * first request, then with {"partition":P,"applied":from+1,"outcomes":
 * [{"offset":from,<reply>}]} (reply NULL: an empty list). One connection
 * at a time. */
typedef struct fake_http {
    int fd;
    int port;
    pthread_t th;
    volatile int stop;
    const char *reply;
    int expired;                 /* "low" = from + 1: the outcome expired */
    int hits;
    char last_path[256];
} fake_http;

static void fake_body(const fake_http *f, char *out, size_t n) {
    int part = -1;
    long long from = -1;
    const char *q = strchr(f->last_path, '?');
    if (q)
        sscanf(q, "?partition=%d&from=%lld", &part, &from);
    if (f->reply)
        snprintf(out, n, "{\"partition\":%d,\"applied\":%lld,\"outcomes\":"
                 "[{\"offset\":%lld,%s}]}", part, from + 1, from, f->reply);
    else
        snprintf(out, n, "{\"partition\":%d,\"applied\":%lld,\"low\":%lld,"
                 "\"outcomes\":[]}", part, from + 1, f->expired ? from + 1 : 0);
}

static void fake_serve(fake_http *f, int conn) {
    char req[4096];
    size_t len = 0;
    req[0] = '\0';
    while (len < sizeof(req) - 1 && !strstr(req, "\r\n\r\n")) {
        ssize_t r = read(conn, req + len, sizeof(req) - 1 - len);
        if (r <= 0)
            return;
        len += (size_t)r;
        req[len] = '\0';
    }
    sscanf(req, "GET %255s", f->last_path);
    f->hits++;
    const char *status = f->hits == 1 ? "503 Service Unavailable" : "200 OK";
    char ok[1536];
    fake_body(f, ok, sizeof(ok));
    const char *body = f->hits == 1
        ? "{\"error\":{\"code\":\"SlowDown\",\"message\":\"not applied\"}}"
        : ok;
    char resp[2048];
    int n = snprintf(resp, sizeof(resp),
                     "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, strlen(body), body);
    if (write(conn, resp, (size_t)n) < 0)
        return;
}

static void *fake_main(void *arg) {
    fake_http *f = arg;
    while (!f->stop) {
        struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        int conn = accept(f->fd, NULL, NULL);
        if (conn < 0)
            continue;
        fake_serve(f, conn);
        close(conn);
    }
    return NULL;
}

static void fake_start(fake_http *f, const char *reply) {
    memset(f, 0, sizeof(*f));
    f->reply = reply;
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->fd, 16), 0);
    getsockname(f->fd, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(fake_http *f) {
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->fd);
}

#define FAKE_RID "000102030405060708090a0b0c0d0e0f"
#define FAKE_RID_FIELD "\"request_id\":\"" FAKE_RID "\","

/* Each row: the entry the fake /v1/outcomes returns for the write, and the
 * result the library must make of it. */
static void test_applied_outcomes_from_query_service(void **state) {
    cluster *c = *state;
    static const struct {
        const char *reply;
        objlog_status status;
        const char *code, *version_id, *etag;
        int delete_marker;
        const char *upload_id;
        const char *message_part;
        int expired;
    } rows[] = {
        {FAKE_RID_FIELD "\"status\":\"ok\",\"code\":\"OK\",\"message\":\"\",\"version_id\":"
         "\"0001000000000000\",\"etag\":\"e1\",\"delete_marker\":false",
         OBJLOG_STATUS_OK, "", "0001000000000000", "e1", 0, "", "", 0},
        {FAKE_RID_FIELD "\"status\":\"ok\",\"code\":\"OK\",\"version_id\":\"null\","
         "\"etag\":\"\",\"delete_marker\":true",
         OBJLOG_STATUS_OK, "", "null", "", 1, "", "", 0},
        {FAKE_RID_FIELD "\"status\":\"rejected\",\"code\":\"NoSuchBucket\",\"message\":"
         "\"bucket photos does not exist\"",
         OBJLOG_STATUS_REJECTED, "NoSuchBucket", "", "", 0, "",
         "bucket photos does not exist", 0},
        {FAKE_RID_FIELD "\"status\":\"ok\",\"code\":\"OK\",\"version_id\":\"\",\"etag\":\"\","
         "\"delete_marker\":false,\"upload_id\":\"000100000000002a\"",
         OBJLOG_STATUS_OK, "", "", "", 0, "000100000000002a", "", 0},
        /* the outcome at our offset is another request's: UNKNOWN */
        {"\"request_id\":\"ffffffffffffffffffffffffffffffff\",\"status\":\"ok\"",
         OBJLOG_STATUS_UNKNOWN, "", "", "", 0, "",
         "belongs to request ffffffffffffffffffffffffffffffff", 0},
        /* applied past our offset but no outcome stored (trimmed): UNKNOWN */
        {NULL, OBJLOG_STATUS_UNKNOWN, "", "", "", 0, "",
         "no outcome is stored", 0},
        /* ... and below "low": trimmed by the dedup window */
        {NULL, OBJLOG_STATUS_UNKNOWN, "", "", "", 0, "",
         "its outcome expired (OutcomeExpired)", 1},
    };
    static const uint8_t rid[OBJLOG_REQUEST_ID_LEN] = {0, 1, 2, 3, 4, 5, 6, 7,
                                                       8, 9, 10, 11, 12, 13, 14, 15};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        fake_http f;
        fake_start(&f, rows[i].reply);
        f.expired = rows[i].expired;
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
        objlog_producer *p = producer_start(c, "applied", url, "5000");
        objlog_write_result r;
        char err[256];
        objlog_write_opts opts = {.request_id = rid};
        assert_int_equal(objlog_producer_put_object_sync(p, "photos", "k", 1, NULL,
                                                         &opts, &r, err, sizeof(err)), 0);
        objlog_producer_stats st;
        objlog_producer_stats_get(p, &st);
        objlog_producer_destroy(p);
        fake_stop(&f);
        if (r.status != rows[i].status)
            fail_msg("row %zu: %s (%s)", i, objlog_status_name(r.status),
                     r.error_message);
        assert_string_equal(r.request_id_hex, FAKE_RID);
        assert_string_equal(r.error_code, rows[i].code);
        assert_string_equal(r.version_id, rows[i].version_id);
        assert_string_equal(r.etag, rows[i].etag);
        assert_int_equal(r.delete_marker, rows[i].delete_marker);
        assert_string_equal(r.upload_id, rows[i].upload_id);
        if (!strstr(r.error_message, rows[i].message_part))
            fail_msg("row %zu: message \"%s\" lacks \"%s\"", i, r.error_message,
                     rows[i].message_part);
        if (rows[i].status == OBJLOG_STATUS_UNKNOWN)
            assert_non_null(strstr(r.error_message, FAKE_RID));
        assert_int_equal(f.hits, 2); /* the 503 was retried */
        assert_int_equal(st.outcome_requests, 2);
        assert_int_equal(st.writes_completed, 1);
        char want[128];
        snprintf(want, sizeof(want), "/v1/outcomes?partition=%d&from=%lld&max=1000&timeout_ms=",
                 (int)r.partition, (long long)r.offset);
        if (strncmp(f.last_path, want, strlen(want)) != 0)
            fail_msg("row %zu: fetched %s, want %s...", i, f.last_path, want);
    }
}

/* unknown.retries=2 and no query service: the write is re-produced twice
 * with exactly the same bytes (same request id, same timestamp), then
 * completes UNKNOWN after three outcome timeouts, naming the last attempt. */
static void test_unknown_retries_reproduce_same_bytes(void **state) {
    cluster *c = *state;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
    objlog_producer_conf *conf = objlog_producer_conf_new();
    conf_ok(conf, "bootstrap.servers", c->bootstrap);
    conf_ok(conf, "kafka.log_level", "2");
    conf_ok(conf, "query.url", url);
    conf_ok(conf, "outcome.timeout.ms", "300");
    conf_ok(conf, "unknown.retries", "2");
    char err[512];
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer_new: %s", err);
    objlog_write_result r;
    objlog_object_meta meta = {.size = 9, .etag = "e9"};
    int64_t t0 = now_ms();
    assert_int_equal(objlog_producer_put_object_sync(p, "photos", "a.jpg", 5, &meta,
                                                     NULL, &r, err, sizeof(err)), 0);
    int64_t took = now_ms() - t0;
    objlog_producer_stats st;
    objlog_producer_stats_get(p, &st);
    objlog_producer_destroy(p);
    assert_int_equal(r.status, OBJLOG_STATUS_UNKNOWN);
    assert_true(took >= 900);
    assert_true(took < 5000);
    assert_int_equal(r.offset, 2);
    assert_non_null(strstr(r.error_message, r.request_id_hex));
    assert_int_equal(st.unknown_retries, 2);
    assert_int_equal(st.writes_completed, 1);

    rd_kafka_message_t **msgs = consume_all(c, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(msgs[i]->partition, r.partition);
        assert_int_equal(msgs[i]->offset, i);
        assert_int_equal(msgs[i]->len, msgs[0]->len);
        assert_memory_equal(msgs[i]->payload, msgs[0]->payload, msgs[0]->len);
        assert_int_equal(msgs[i]->key_len, msgs[0]->key_len);
    }
    Objlog__Event *ev = objlog__event__unpack(NULL, msgs[0]->len, msgs[0]->payload);
    assert_non_null(ev);
    assert_int_equal(ev->request_id.len, OBJLOG_REQUEST_ID_LEN);
    assert_memory_equal(ev->request_id.data, r.request_id, OBJLOG_REQUEST_ID_LEN);
    objlog__event__free_unpacked(ev, NULL);
    free_msgs(msgs, 3);
}

/* ---- the range map is data ---- */

static void test_rangemap_from_control_topic(void **state) {
    cluster *c = *state;
    Objlog__RangeEntry e = OBJLOG__RANGE_ENTRY__INIT;
    e.partition = 2;
    Objlog__RangeEntry *ents[] = {&e};
    Objlog__RangeMap m = OBJLOG__RANGE_MAP__INIT;
    m.epoch = 7;
    m.n_ranges = 1;
    m.ranges = ents;
    uint8_t buf[64];
    size_t n = objlog__range_map__pack(&m, buf);
    char err[256];
    rangemap *rm = rangemap_decode(buf, n, err, sizeof(err));
    assert_non_null(rm);

    rd_kafka_t *pub = control_client_new(c->bootstrap, err, sizeof(err));
    assert_non_null(pub);
    assert_int_equal(control_publish_rangemap(pub, CONTROL, rm, 10000, err, sizeof(err)), 0);
    rd_kafka_destroy(pub);
    rangemap_destroy(rm);

    objlog_producer *p = producer_start(c, "logged", NULL, NULL);
    for (int i = 0; i < 20; i++) {
        objlog_write_result r;
        char key[32];
        snprintf(key, sizeof(key), "key-%d", i);
        assert_int_equal(objlog_producer_put_object_sync(p, bucket_of(i), key,
                                                         strlen(key), NULL, NULL, &r,
                                                         err, sizeof(err)), 0);
        assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
        assert_int_equal(r.partition, 2);
        assert_int_equal(r.offset, i);
    }
    objlog_producer_destroy(p);
    rd_kafka_message_t **msgs = consume_all(c, 20);
    for (int i = 0; i < 20; i++) {
        Objlog__Event *ev = objlog__event__unpack(NULL, msgs[i]->len, msgs[i]->payload);
        assert_non_null(ev);
        assert_int_equal(msgs[i]->partition, 2);
        assert_int_equal(ev->range_epoch, 7);
        objlog__event__free_unpacked(ev, NULL);
    }
    free_msgs(msgs, 20);
}

/* ---- tenant quota pre-check ---- */

/* A fake GET /v1/tenants/{t}/stats whose usage the test changes; counts
 * requests and remembers the last path. One connection at a time. */
typedef struct fake_stats {
    int fd, port;
    pthread_t th;
    volatile int stop;
    pthread_mutex_t lock;
    unsigned long long objects, bytes;
    int status;                  /* HTTP status to answer */
    int hits;
    char last_path[256];
} fake_stats;

typedef struct quota_fixture {
    cluster *c;
    fake_stats f;
} quota_fixture;

static void fake_stats_serve(fake_stats *f, int conn) {
    char req[4096], body[256], resp[1024];
    size_t len = 0;
    req[0] = '\0';
    while (len < sizeof(req) - 1 && !strstr(req, "\r\n\r\n")) {
        ssize_t r = read(conn, req + len, sizeof(req) - 1 - len);
        if (r <= 0)
            return;
        len += (size_t)r;
        req[len] = '\0';
    }
    pthread_mutex_lock(&f->lock);
    sscanf(req, "GET %255s", f->last_path);
    f->hits++;
    int status = f->status;
    snprintf(body, sizeof(body),
             "{\"tenant\":\"acme corp\",\"buckets\":2,\"objects\":%llu,\"bytes\":%llu,"
             "\"versions\":%llu,\"version_bytes\":%llu}",
             f->objects, f->bytes, f->objects, f->bytes);
    pthread_mutex_unlock(&f->lock);
    if (status != 200)
        snprintf(body, sizeof(body), "{\"error\":{\"code\":\"SlowDown\"}}");
    int n = snprintf(resp, sizeof(resp),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, strlen(body), body);
    if (write(conn, resp, (size_t)n) < 0)
        return;
}

static void *fake_stats_main(void *arg) {
    fake_stats *f = arg;
    while (!f->stop) {
        struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
        if (poll(&pfd, 1, 20) <= 0)
            continue;
        int conn = accept(f->fd, NULL, NULL);
        if (conn < 0)
            continue;
        fake_stats_serve(f, conn);
        close(conn);
    }
    return NULL;
}

static void fake_stats_set(fake_stats *f, unsigned long long objects,
                           unsigned long long bytes, int status) {
    pthread_mutex_lock(&f->lock);
    f->objects = objects;
    f->bytes = bytes;
    f->status = status;
    pthread_mutex_unlock(&f->lock);
}

static int fake_stats_hits(fake_stats *f) {
    pthread_mutex_lock(&f->lock);
    int h = f->hits;
    pthread_mutex_unlock(&f->lock);
    return h;
}

/* Waits until the producer has certainly fetched after a change: two more
 * requests (the one in flight at the change may carry the old numbers). */
static void fake_stats_await(fake_stats *f) {
    int want = fake_stats_hits(f) + 2;
    int64_t until = now_ms() + 5000;
    while (fake_stats_hits(f) < want && now_ms() < until)
        usleep(5000);
    assert_true(fake_stats_hits(f) >= want);
}

static int quota_setup(void **state) {
    cluster_setup(state);
    quota_fixture *q = calloc(1, sizeof(*q));
    q->c = *state;
    fake_stats *f = &q->f;
    pthread_mutex_init(&f->lock, NULL);
    f->status = 200;
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (bind(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(f->fd, 16) != 0)
        return -1;
    getsockname(f->fd, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    if (pthread_create(&f->th, NULL, fake_stats_main, f) != 0)
        return -1;
    *state = q;
    return 0;
}

static int quota_teardown(void **state) {
    quota_fixture *q = *state;
    q->f.stop = 1;
    pthread_join(q->f.th, NULL);
    close(q->f.fd);
    pthread_mutex_destroy(&q->f.lock);
    *state = q->c;
    free(q);
    return cluster_teardown(state);
}

static objlog_producer *quota_producer(quota_fixture *q, const char *max_bytes,
                                       const char *max_objects, const char *refresh) {
    objlog_producer_conf *conf = objlog_producer_conf_new();
    char url[64], err[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", q->f.port);
    conf_ok(conf, "bootstrap.servers", q->c->bootstrap);
    conf_ok(conf, "ack", "logged");
    conf_ok(conf, "kafka.log_level", "2");
    conf_ok(conf, "query.url", url);
    conf_ok(conf, "tenant.quota.tenant", "acme corp");
    conf_ok(conf, "tenant.quota.max_bytes", max_bytes);
    conf_ok(conf, "tenant.quota.max_objects", max_objects);
    conf_ok(conf, "tenant.quota.refresh.ms", refresh);
    objlog_producer *p = objlog_producer_new(conf, err, sizeof(err));
    if (!p)
        fail_msg("producer_new: %s", err);
    return p;
}

static int quota_put(objlog_producer *p, char *err, size_t n) {
    objlog_write_result r;
    err[0] = '\0';
    int rc = objlog_producer_put_object_sync(p, "photos", "k", 1, NULL, NULL, &r, err, n);
    if (rc == 0)
        assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
    return rc;
}

static int quota_complete(objlog_producer *p, char *err, size_t n) {
    objlog_write_result r;
    objlog_completed_part part = {1, "e1"};
    err[0] = '\0';
    int rc = objlog_producer_complete_upload_sync(p, "photos", "k", 1, "000100000000002a",
                                                  &part, 1, NULL, &r, err, n);
    if (rc == 0)
        assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
    return rc;
}

/* ---- control messages wait for their ack ---- */

typedef struct later_clear {
    rd_kafka_mock_cluster_t *mc;
    int after_ms;
} later_clear;

static void *clear_topic_error_later(void *arg) {
    later_clear *lc = arg;
    usleep((useconds_t)lc->after_ms * 1000);
    rd_kafka_mock_topic_set_error(lc->mc, CONTROL, RD_KAFKA_RESP_ERR_NO_ERROR);
    return NULL;
}

/* The client's view of CONTROL, refreshed from a metadata answer that
 * carries the mock's topic error, if one is set. */
static void refresh_control_metadata(rd_kafka_t *rk) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, CONTROL, NULL);
    assert_non_null(rkt);
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
}

/* Right after a topic is made, a broker that has not heard of it yet
 * answers metadata with "unknown topic": a client that already saw the
 * topic then takes it for gone and fails the next produce at once (a
 * fresh cluster's first `objlog topics create` failed so, between its
 * range map and its log id). The mock's topic error plays that broker
 * for 1.5 s: the publish waits it out and the id reads back; an error
 * that never passes fails within the timeout, naming what happened. */
static void test_control_publish_waits_for_the_topic(void **state) {
    cluster *c = *state;
    char err[256];
    rd_kafka_t *pub = control_client_new(c->bootstrap, err, sizeof(err));
    assert_non_null(pub);
    control_logid first, id, back;
    if (control_publish_logid(pub, CONTROL, 0, 10000, &first, err, sizeof(err)) != 0)
        fail_msg("publish: %s", err);
    rd_kafka_mock_topic_set_error(c->mc, CONTROL, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    refresh_control_metadata(pub);
    later_clear lc = {c->mc, 1500};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, clear_topic_error_later, &lc), 0);
    int64_t t0 = now_ms();
    if (control_publish_logid(pub, CONTROL, 0, 15000, &id, err, sizeof(err)) != 0)
        fail_msg("publish while the topic seemed gone: %s", err);
    int64_t took = now_ms() - t0;
    pthread_join(t, NULL);
    print_message("log id published %lld ms after the first try\n", (long long)took);
    assert_true(took >= 1400);
    assert_int_equal(control_load_logid(pub, CONTROL, 10000, &back, err, sizeof(err)), 1);
    assert_string_equal(back.id, id.id);
    assert_string_not_equal(back.id, first.id);

    rd_kafka_mock_topic_set_error(c->mc, CONTROL, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    refresh_control_metadata(pub);
    t0 = now_ms();
    assert_int_equal(control_publish_logid(pub, CONTROL, 0, 2000, &id, err, sizeof(err)), -1);
    took = now_ms() - t0;
    print_message("never there: %s, after %lld ms\n", err, (long long)took);
    assert_true(took < 5000);
    /* the last try's error: the topic unknown, or the message queued for it */
    if (strcmp(err, "publish log id: Local: Unknown topic") != 0 &&
        strcmp(err, "publish log id: Local: Timed out") != 0)
        fail_msg("%s", err);
    rd_kafka_destroy(pub);
    rd_kafka_mock_topic_set_error(c->mc, CONTROL, RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void test_tenant_quota_conf(void **state) {
    cluster *c = *state;
    char err[512];
    objlog_producer_conf *conf = objlog_producer_conf_new();
    static const char *const bad[][2] = {{"tenant.quota.max_bytes", "-1"},
                                         {"tenant.quota.max_bytes", "12x"},
                                         {"tenant.quota.max_objects", ""},
                                         {"tenant.quota.refresh.ms", "5"},
                                         {"tenant.quota.refresh.ms", "3600001"},
                                         {"tenant.quota.tenant", ""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(objlog_producer_conf_set(conf, bad[i][0], bad[i][1], err,
                                                  sizeof(err)),
                         OBJLOG_CONF_INVALID);
        assert_non_null(strstr(err, bad[i][0]));
    }
    /* a max without the tenant it applies to */
    conf_ok(conf, "bootstrap.servers", c->bootstrap);
    conf_ok(conf, "ack", "logged");
    conf_ok(conf, "kafka.log_level", "2");
    conf_ok(conf, "tenant.quota.max_objects", "10");
    assert_null(objlog_producer_new(conf, err, sizeof(err)));
    assert_string_equal(err, "tenant.quota.tenant is required with tenant.quota.max_*");
    /* ... and without the query service to read usage from */
    conf = objlog_producer_conf_new();
    conf_ok(conf, "bootstrap.servers", c->bootstrap);
    conf_ok(conf, "ack", "logged");
    conf_ok(conf, "kafka.log_level", "2");
    conf_ok(conf, "tenant.quota.tenant", "acme");
    conf_ok(conf, "tenant.quota.max_bytes", "1");
    assert_null(objlog_producer_new(conf, err, sizeof(err)));
    assert_string_equal(err, "query.url is required with tenant.quota.*");
}

/* Usage below, at and over each limit, as the cached stats move. */
static void test_tenant_quota_rejects_up_front(void **state) {
    quota_fixture *q = *state;
    char err[512];
    fake_stats_set(&q->f, 5, 900, 200);
    objlog_producer *p = quota_producer(q, "1000", "10", "20");
    assert_string_equal(q->f.last_path, "/v1/tenants/acme%20corp/stats");
    assert_int_equal(quota_put(p, err, sizeof(err)), 0);
    assert_int_equal(quota_complete(p, err, sizeof(err)), 0);

    fake_stats_set(&q->f, 5, 1000, 200); /* bytes at the limit */
    fake_stats_await(&q->f);
    assert_int_equal(quota_put(p, err, sizeof(err)), -1);
    assert_string_equal(err, "tenant quota exceeded (tenant.quota.max_bytes): tenant "
                             "\"acme corp\" uses 1000 bytes of 1000");
    assert_int_equal(quota_complete(p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tenant.quota.max_bytes"));
    /* only writes that add usage are checked */
    objlog_write_result r;
    assert_int_equal(objlog_producer_delete_object_sync(p, "photos", "k", 1, NULL, NULL,
                                                        &r, err, sizeof(err)), 0);
    assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);

    fake_stats_set(&q->f, 11, 10, 200); /* objects over the limit */
    fake_stats_await(&q->f);
    assert_int_equal(quota_put(p, err, sizeof(err)), -1);
    assert_string_equal(err, "tenant quota exceeded (tenant.quota.max_objects): tenant "
                             "\"acme corp\" has 11 objects of 10");

    /* a failing query service keeps the last numbers (still over) */
    fake_stats_set(&q->f, 0, 0, 503);
    fake_stats_await(&q->f);
    assert_int_equal(quota_put(p, err, sizeof(err)), -1);

    fake_stats_set(&q->f, 9, 999, 200); /* back under both */
    fake_stats_await(&q->f);
    assert_int_equal(quota_put(p, err, sizeof(err)), 0);
    assert_int_equal(quota_complete(p, err, sizeof(err)), 0);
    objlog_producer_destroy(p);
}

/* The check reads the cache: many writes, no request beyond the refresh. */
static void test_tenant_quota_no_http_per_write(void **state) {
    quota_fixture *q = *state;
    char err[512];
    fake_stats_set(&q->f, 1, 1, 200);
    int before = fake_stats_hits(&q->f);
    objlog_producer *p = quota_producer(q, "1000000", "0", "3600000");
    assert_int_equal(fake_stats_hits(&q->f), before + 1); /* the first fetch */
    for (int i = 0; i < 50; i++)
        assert_int_equal(quota_put(p, err, sizeof(err)), 0);
    assert_int_equal(fake_stats_hits(&q->f), before + 1);
    objlog_producer_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_errors_name_the_key),
        cmocka_unit_test_setup_teardown(test_concurrent_puts_logged, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_log_callback_gets_kafka_lines, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_sync_call_in_callback_fails, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_bucket_and_delete_events, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments_rejected_up_front,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_bucket_name_rules, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_control_characters_refused, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_bucket_and_multipart_events, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_create_bucket_wraps_ex, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_bucket_and_multipart_bad_arguments, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_applied_unknown_when_no_outcome,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_applied_outcomes_from_query_service,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_retries_reproduce_same_bytes,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_rangemap_from_control_topic,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_control_publish_waits_for_the_topic,
                                        cluster_setup, cluster_teardown),
        cmocka_unit_test_setup_teardown(test_tenant_quota_conf, cluster_setup,
                                        cluster_teardown),
        cmocka_unit_test_setup_teardown(test_tenant_quota_rejects_up_front,
                                        quota_setup, quota_teardown),
        cmocka_unit_test_setup_teardown(test_tenant_quota_no_http_per_write,
                                        quota_setup, quota_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
