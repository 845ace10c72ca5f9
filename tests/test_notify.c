/* test_notify.c: the change feed to Kafka, exactly once, across crashes.
 * Owns the claim that a read_committed consumer of a notification
 * configuration's topic sees every change that matches, once, in log
 * order per key, and nothing for a failed or repeated request, however
 * often objlogd is SIGKILLed (10 times here) and, on a real Kafka, when
 * the leader of an events partition dies.
 *
 * One `objlogd --brokers` view with a versioned bucket whose configuration
 * sends ObjectCreated:*, ObjectRemoved:* and LifecycleExpiration:* to a
 * topic. Writers through libobjlog_producer with ack=logged (they need no
 * objlogd) PUT, copy (copy_source), DELETE (markers), DELETE a version,
 * PUT If-None-Match on taken keys (PreconditionFailed), and repeat a
 * request id (a retry); multipart uploads complete through ack=applied
 * while the view is up; a lifecycle rule with a past date expires "lc/"
 * keys. Each round the view is SIGKILLed, writes go on without it, and it
 * starts again on the same data.
 *
 * Then, from the topic alone (isolation.level=read_committed):
 *   - no sequencer twice (exactly once);
 *   - every logged write whose outcome is OK and changes state has its
 *     record (its partition and offset end the sequencer) with the event
 *     name its operation gets; a failed or retried one has none;
 *   - per key, records arrive in sequencer order (one target partition);
 *   - the key -> versions table built from the records equals the
 *     bucket's ListObjectVersions (an index built on notifications).
 * And the blob-release records (--blob-release-topic): every write names a
 * blob of its own; once everything is applied, the blob ids released (read
 * the same way) are exactly those of the OK writes minus those GET
 * /v1/blobs lists, each released once (on a real Kafka).
 * Every process is a child of the test, killed with it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpc.h"
#include "objlog_producer.h"
#include "proc.h"
#include "testlog.h"
#include "viewproc.h"

#define NT_PARTITIONS 4
#define NT_TOPIC "objlog.events"
#define NT_FEED "objlog-feed"
#define NT_RELEASES "objlog-blob-releases"
#define NT_BUCKET "feedbkt"
#define NT_ROUNDS 10
#define NT_KEYS 16
#define NT_MAX_WRITES 4096

typedef enum nt_op { NT_PUT, NT_COPY, NT_DEL, NT_DEL_VERSION, NT_PUT_INM, NT_MPU } nt_op;

/* One logged write and, once resolved, its outcome. */
typedef struct nt_write {
    nt_op op;
    int retry;                 /* repeats an earlier request id */
    char key[32];
    uint8_t rid[OBJLOG_REQUEST_ID_LEN];
    int32_t partition;
    int64_t offset;
    char token[64];
    char code[48];             /* the outcome's code once resolved */
    int64_t out_offset;        /* the outcome's offset (a retry: the original's) */
    char blob[2][16];          /* the blobs it names: its own, or its two parts' */
} nt_write;

/* One record read from the feed. */
typedef struct nt_rec {
    char name[64], key[64], vid[24], etag[48], seq[40];
    int64_t size;
    int32_t kp;                /* its partition of the feed topic */
} nt_rec;

typedef struct ntest {
    viewtest_frame f;
    viewproc view;
    objlog_producer *logged, *applied;
    nt_write w[NT_MAX_WRITES];
    int nw;
    nt_rec *rec;
    int nrec, caprec;
    unsigned seed;
    int broker_killed;
    int nblobs;                /* blob ids made */
    char (*rel)[16];           /* blob ids of the BlobReleased records read */
    int nrel, caprel;
} ntest;

static ntest T;

static void nt_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "notify [%6.1fs] ", (double)(viewtest_ms() - T.f.t0) / 1000.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static objlog_producer *nt_producer(const char *ack) {
    char err[512];
    objlog_producer_conf *pc = objlog_producer_conf_new();
    if (objlog_producer_conf_set(pc, "bootstrap.servers", testlog_bootstrap(T.f.log), err,
                                 sizeof(err)) ||
        objlog_producer_conf_set(pc, "query.url", T.view.url, err, sizeof(err)) ||
        objlog_producer_conf_set(pc, "ack", ack, err, sizeof(err)) ||
        objlog_producer_conf_set(pc, "outcome.timeout.ms", "20000", err, sizeof(err)))
        fail_msg("producer conf: %s", err);
    objlog_producer *p = objlog_producer_new(pc, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

static int setup(void **state) {
    (void)state;
    T.f.t0 = viewtest_ms();
    T.seed = 12345;
    char why[512];
    if (viewtest_frame_start(&T.f, NT_PARTITIONS, "unused", why, sizeof(why)) < 0)
        fail_msg("%s", why);
    setenv("OBJLOG_LIFECYCLE_INTERVAL_MS", "300", 1);
    setenv("OBJLOG_BLOB_RELEASE_TOPIC", NT_RELEASES, 1);
    viewproc_init(&T.view, testlog_bootstrap(T.f.log), T.f.data1, viewproc_free_port());
    if (viewproc_start(&T.view, 120000, why, sizeof(why)) < 0)
        fail_msg("%s", why);
    nt_say("%s log at %s, view at %s (stderr: %s)", testlog_kind(), testlog_bootstrap(T.f.log),
           T.view.url, T.view.log);
    T.logged = nt_producer("logged");
    T.applied = nt_producer("applied");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.logged)
        objlog_producer_destroy(T.logged);
    if (T.applied)
        objlog_producer_destroy(T.applied);
    T.logged = T.applied = NULL;
    viewproc_kill(&T.view);
    viewtest_frame_stop(&T.f, "test_notify");
    free(T.rec);
    return 0;
}

/* status of METHOD path at the view; the body as JSON into *out (NULL: none). */
static long nt_http(const char *method, const char *path, const char *body, json_t **out) {
    httpc *h = httpc_new(T.view.url);
    httpc_resp r;
    long st = httpc_do(h, method, path, body, NULL, &r) < 0 ? -1 : r.status;
    if (out)
        *out = st > 0 && r.body ? json_loads(r.body, 0, NULL) : NULL;
    httpc_destroy(h);
    return st;
}

static unsigned nt_rand(void) { return (unsigned)rand_r(&T.seed); }

/* A write through the ack=logged producer (no view needed), retried with
 * its request id until it is in the log. rid: a retry of that request. */
static void nt_logged(nt_op op, const char *key, const char *copy_src, const char *vid,
                      const uint8_t *rid) {
    objlog_object_meta m = {0};
    char etag[40];
    snprintf(etag, sizeof(etag), "%08x%08x%08x%08x", nt_rand(), nt_rand(), nt_rand(), nt_rand());
    m.size = 100 + nt_rand() % 1000;
    m.etag = etag;
    char blob[16];
    snprintf(blob, sizeof(blob), "b%05d", T.nblobs++);
    m.blob_id = blob;
    objlog_write_opts o = {0};
    o.if_none_match = op == NT_PUT_INM;
    o.copy_source = copy_src;
    o.request_id = rid;
    objlog_write_result r;
    uint8_t keep[OBJLOG_REQUEST_ID_LEN];
    char err[512] = "";
    for (int tries = 0;; tries++) {
        int rc = op == NT_DEL || op == NT_DEL_VERSION
                     ? objlog_producer_delete_object_sync(T.logged, NT_BUCKET, key, strlen(key),
                                                          vid, &o, &r, err, sizeof(err))
                     : objlog_producer_put_object_sync(T.logged, NT_BUCKET, key, strlen(key),
                                                       &m, &o, &r, err, sizeof(err));
        if (rc == 0 && r.status == OBJLOG_STATUS_LOGGED)
            break;
        if (tries > 100)
            fail_msg("write %s not logged: %s %s", key, err, r.error_message);
        memcpy(keep, r.request_id, sizeof(keep));
        o.request_id = keep;
        usleep(100 * 1000);
    }
    assert_true(T.nw < NT_MAX_WRITES);
    nt_write *w = &T.w[T.nw++];
    memset(w, 0, sizeof(*w));
    w->op = op;
    w->retry = rid != NULL;
    snprintf(w->key, sizeof(w->key), "%s", key);
    if (op != NT_DEL && op != NT_DEL_VERSION) /* a delete names no blob */
        snprintf(w->blob[0], sizeof(w->blob[0]), "%s", blob);
    memcpy(w->rid, r.request_id, sizeof(w->rid));
    w->partition = r.partition;
    w->offset = r.offset;
    snprintf(w->token, sizeof(w->token), "%s", r.token);
}

/* A multipart upload of two parts, through ack=applied (the view is up). */
static void nt_mpu(const char *key) {
    objlog_object_meta m = {0};
    objlog_write_result r;
    char err[512];
    assert_int_equal(objlog_producer_create_upload_sync(T.applied, NT_BUCKET, key, strlen(key),
                                                        &m, NULL, &r, err, sizeof(err)), 0);
    assert_int_equal(r.status, OBJLOG_STATUS_OK);
    char upload[24];
    snprintf(upload, sizeof(upload), "%s", r.upload_id);
    objlog_completed_part parts[2];
    char etags[2][40], blobs[2][16];
    for (uint32_t n = 1; n <= 2; n++) {
        snprintf(etags[n - 1], sizeof(etags[n - 1]), "%032x", n * 7919u);
        snprintf(blobs[n - 1], sizeof(blobs[n - 1]), "b%05d", T.nblobs++);
        assert_int_equal(objlog_producer_upload_part_sync(
                             T.applied, NT_BUCKET, key, strlen(key), upload, n,
                             n == 1 ? 5u * 1024 * 1024 : 1000, etags[n - 1], blobs[n - 1],
                             NULL, &r, err, sizeof(err)), 0);
        assert_int_equal(r.status, OBJLOG_STATUS_OK);
        parts[n - 1] = (objlog_completed_part){n, etags[n - 1]};
    }
    assert_int_equal(objlog_producer_complete_upload_sync(T.applied, NT_BUCKET, key,
                                                          strlen(key), upload, parts, 2, NULL,
                                                          &r, err, sizeof(err)), 0);
    assert_int_equal(r.status, OBJLOG_STATUS_OK);
    assert_true(T.nw < NT_MAX_WRITES);
    nt_write *w = &T.w[T.nw++];
    memset(w, 0, sizeof(*w));
    w->op = NT_MPU;
    snprintf(w->key, sizeof(w->key), "%s", key);
    memcpy(w->blob, blobs, sizeof(w->blob));
    w->partition = r.partition;
    w->offset = r.offset;
    snprintf(w->token, sizeof(w->token), "%s", r.token);
}

/* A noncurrent version of a key, as the view lists it ("" none). */
static void nt_some_version(const char *key, char *vid, size_t vn) {
    char path[160];
    json_t *j = NULL;
    vid[0] = '\0';
    snprintf(path, sizeof(path), "/v1/buckets/%s/versions?prefix=%s", NT_BUCKET, key);
    if (nt_http("GET", path, NULL, &j) != 200 || !j) {
        json_decref(j);
        return;
    }
    json_t *vs = json_object_get(j, "versions"), *v;
    size_t i;
    json_array_foreach(vs, i, v) {
        if (strcmp(json_string_value(json_object_get(v, "key")), key) == 0 &&
            !json_is_true(json_object_get(v, "is_latest"))) {
            snprintf(vid, vn, "%s", json_string_value(json_object_get(v, "version_id")));
            break;
        }
    }
    json_decref(j);
}

/* One round of n writes (the view up or down). */
static void nt_writes(int n, int view_up) {
    char key[32], src[64], vid[24];
    for (int i = 0; i < n; i++) {
        unsigned k = nt_rand() % NT_KEYS, what = nt_rand() % 100;
        snprintf(key, sizeof(key), "k%02u", k);
        if (what < 40) {
            nt_logged(NT_PUT, key, NULL, NULL, NULL);
        } else if (what < 50) {
            snprintf(src, sizeof(src), "%s/k%02u", NT_BUCKET, (k + 1) % NT_KEYS);
            nt_logged(NT_COPY, key, src, NULL, NULL);
        } else if (what < 62) {
            nt_logged(NT_DEL, key, NULL, NULL, NULL);
        } else if (what < 72) {
            nt_logged(NT_PUT_INM, key, NULL, NULL, NULL);
        } else if (what < 80 && T.nw > 0) {
            const nt_write *o = &T.w[nt_rand() % (unsigned)T.nw];
            if (o->op == NT_PUT && !o->retry)
                nt_logged(NT_PUT, o->key, NULL, NULL, o->rid);
        } else if (what < 90) {
            snprintf(key, sizeof(key), "lc/%02u", k);
            nt_logged(NT_PUT, key, NULL, NULL, NULL);
        } else if (view_up && what < 95) {
            nt_some_version(key, vid, sizeof(vid));
            if (vid[0])
                nt_logged(NT_DEL_VERSION, key, NULL, vid, NULL);
        } else if (view_up) {
            snprintf(key, sizeof(key), "mp%02u", k % 4);
            nt_mpu(key);
        }
    }
}

/* ---- the feed, read back ---- */

static void nt_consume(rd_kafka_t *rk, int ms) {
    long long until = viewtest_ms() + ms;
    while (viewtest_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        json_t *j = json_loadb(m->payload, m->len, 0, NULL);
        if (strcmp(rd_kafka_topic_name(m->rkt), NT_RELEASES) == 0) {
            const char *blob = json_string_value(json_object_get(j, "blobId"));
            if (!blob || strcmp(json_string_value(json_object_get(j, "eventName")),
                                "objlog:BlobReleased") != 0)
                fail_msg("release message is not a BlobReleased record: %.*s", (int)m->len,
                         (const char *)m->payload);
            if (T.nrel == T.caprel) {
                T.caprel = T.caprel ? T.caprel * 2 : 256;
                T.rel = realloc(T.rel, (size_t)T.caprel * sizeof(*T.rel));
                assert_non_null(T.rel);
            }
            snprintf(T.rel[T.nrel++], sizeof(T.rel[0]), "%s", blob);
            json_decref(j);
            rd_kafka_message_destroy(m);
            continue;
        }
        json_t *r = json_array_get(json_object_get(j, "Records"), 0);
        json_t *o = json_object_get(json_object_get(r, "s3"), "object");
        if (!o)
            fail_msg("feed message is not an S3 record: %.*s", (int)m->len,
                     (const char *)m->payload);
        if (T.nrec == T.caprec) {
            T.caprec = T.caprec ? T.caprec * 2 : 1024;
            T.rec = realloc(T.rec, (size_t)T.caprec * sizeof(*T.rec));
            assert_non_null(T.rec);
        }
        nt_rec *x = &T.rec[T.nrec++];
        memset(x, 0, sizeof(*x));
        const char *vid = json_string_value(json_object_get(o, "versionId"));
        const char *etag = json_string_value(json_object_get(o, "eTag"));
        snprintf(x->name, sizeof(x->name), "%s",
                 json_string_value(json_object_get(r, "eventName")));
        snprintf(x->key, sizeof(x->key), "%s", json_string_value(json_object_get(o, "key")));
        snprintf(x->vid, sizeof(x->vid), "%s", vid ? vid : "");
        snprintf(x->etag, sizeof(x->etag), "%s", etag ? etag : "");
        snprintf(x->seq, sizeof(x->seq), "%s",
                 json_string_value(json_object_get(o, "sequencer")));
        x->size = json_integer_value(json_object_get(o, "size"));
        x->kp = m->partition;
        json_decref(j);
        rd_kafka_message_destroy(m);
    }
}

static rd_kafka_t *nt_consumer(void) {
    char err[256], group[64];
    snprintf(group, sizeof(group), "nt-check-%d", (int)getpid());
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", testlog_bootstrap(T.f.log), err,
                          sizeof(err)) ||
        rd_kafka_conf_set(c, "group.id", group, err, sizeof(err)) ||
        rd_kafka_conf_set(c, "isolation.level", "read_committed", err, sizeof(err)) ||
        rd_kafka_conf_set(c, "auto.offset.reset", "earliest", err, sizeof(err)) ||
        rd_kafka_conf_set(c, "enable.auto.commit", "false", err, sizeof(err)) ||
        /* the release topic appears with the first release */
        rd_kafka_conf_set(c, "topic.metadata.refresh.interval.ms", "1000", err, sizeof(err)) ||
        rd_kafka_conf_set(c, "log_level", "0", err, sizeof(err)))
        fail_msg("consumer conf: %s", err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(l, NT_FEED, RD_KAFKA_PARTITION_UA);
    rd_kafka_topic_partition_list_add(l, NT_RELEASES, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(rk, l), 0);
    rd_kafka_topic_partition_list_destroy(l);
    return rk;
}

/* The outcome of every write, from the view. */
static void nt_resolve(void) {
    for (int i = 0; i < T.nw; i++) {
        nt_write *w = &T.w[i];
        char path[128];
        json_t *j = NULL;
        snprintf(path, sizeof(path), "/v1/writes/%s", w->token);
        long st = nt_http("GET", path, NULL, &j);
        if (!j)
            fail_msg("GET %s: %ld", path, st);
        snprintf(w->code, sizeof(w->code), "%s", json_string_value(json_object_get(j, "code")));
        w->out_offset = json_integer_value(json_object_get(j, "offset"));
        json_decref(j);
    }
}

/* The record name a write's OK outcome must have, or NULL (no change, or
 * none to expect for certain: a version delete may find its version gone). */
static const char *nt_expect(const nt_write *w) {
    if (strcmp(w->code, "OK") != 0 || w->out_offset != w->offset)
        return NULL;
    switch (w->op) {
    case NT_PUT:
    case NT_PUT_INM:
        return "ObjectCreated:Put";
    case NT_COPY:
        return "ObjectCreated:Copy";
    case NT_MPU:
        return "ObjectCreated:CompleteMultipartUpload";
    case NT_DEL:
        return "ObjectRemoved:DeleteMarkerCreated";
    default:
        return NULL;
    }
}

/* The record whose sequencer ends with the write's partition and offset. */
static const nt_rec *nt_find(const nt_write *w) {
    char tail[32];
    snprintf(tail, sizeof(tail), "%08X%012llX", (unsigned)w->partition,
             (unsigned long long)w->offset);
    for (int i = 0; i < T.nrec; i++) {
        size_t n = strlen(T.rec[i].seq);
        if (n >= 20 && strcmp(T.rec[i].seq + n - 20, tail) == 0)
            return &T.rec[i];
    }
    return NULL;
}

/* How many expected records the feed holds so far. */
static int nt_covered(int *expected) {
    int have = 0;
    *expected = 0;
    for (int i = 0; i < T.nw; i++)
        if (nt_expect(&T.w[i])) {
            (*expected)++;
            have += nt_find(&T.w[i]) != NULL;
        }
    return have;
}

static int nt_rec_cmp(const void *a, const void *b) {
    const nt_rec *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->seq, y->seq);
}

/* "key vid M|size etag" lines of the table the records build, sorted. */
static char *nt_table_from_feed(void) {
    nt_rec *r = malloc((size_t)T.nrec * sizeof(*r) + 1);
    assert_non_null(r);
    memcpy(r, T.rec, (size_t)T.nrec * sizeof(*r));
    qsort(r, (size_t)T.nrec, sizeof(*r), nt_rec_cmp);
    /* live versions: at most one entry per (key, vid) */
    typedef struct row { char key[64], vid[24], what[80]; int live; } row;
    row *rows = calloc((size_t)T.nrec + 1, sizeof(*rows));
    int nr = 0;
    for (int i = 0; i < T.nrec; i++) {
        const nt_rec *x = &r[i];
        if (i > 0 && strcmp(r[i - 1].key, x->key) == 0 && strcmp(r[i - 1].seq, x->seq) == 0)
            continue; /* delivered again (the embedded log: at least once) */
        int remove = strstr(x->name, ":Delete") && !strstr(x->name, "DeleteMarkerCreated");
        if (remove) {
            for (int j = 0; j < nr; j++)
                if (rows[j].live && strcmp(rows[j].key, x->key) == 0 &&
                    strcmp(rows[j].vid, x->vid) == 0)
                    rows[j].live = 0;
            continue;
        }
        row *w = &rows[nr++];
        snprintf(w->key, sizeof(w->key), "%s", x->key);
        snprintf(w->vid, sizeof(w->vid), "%s", x->vid);
        if (strstr(x->name, "DeleteMarkerCreated"))
            snprintf(w->what, sizeof(w->what), "M");
        else
            snprintf(w->what, sizeof(w->what), "%lld %s", (long long)x->size, x->etag);
        w->live = 1;
    }
    size_t cap = (size_t)nr * 200 + 1, o = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (int j = 0; j < nr; j++)
        if (rows[j].live)
            o += (size_t)snprintf(out + o, cap - o, "%s %s %s\n", rows[j].key, rows[j].vid,
                                  rows[j].what);
    free(rows);
    free(r);
    return out;
}

static int nt_line_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *nt_sort_lines(char *s) {
    int n = 0;
    size_t total = strlen(s);
    for (char *p = s; *p; p++)
        n += *p == '\n';
    char **l = calloc((size_t)n + 1, sizeof(*l));
    int i = 0;
    for (char *save = NULL, *t = strtok_r(s, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
        l[i++] = t;
    qsort(l, (size_t)i, sizeof(*l), nt_line_cmp);
    size_t cap = total + 2, o = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (int j = 0; j < i; j++)
        o += (size_t)snprintf(out + o, cap - o, "%s\n", l[j]);
    free(l);
    return out;
}

/* The same lines from the bucket's ListObjectVersions. */
static char *nt_table_from_view(void) {
    json_t *j = NULL;
    char path[128];
    snprintf(path, sizeof(path), "/v1/buckets/%s/versions?max_keys=1000", NT_BUCKET);
    assert_int_equal(nt_http("GET", path, NULL, &j), 200);
    assert_false(json_is_true(json_object_get(j, "is_truncated")));
    json_t *vs = json_object_get(j, "versions"), *v;
    size_t i, cap = json_array_size(vs) * 200 + 1, o = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    json_array_foreach(vs, i, v) {
        const char *etag = json_string_value(json_object_get(v, "etag"));
        if (json_is_true(json_object_get(v, "delete_marker")))
            o += (size_t)snprintf(out + o, cap - o, "%s %s M\n",
                                  json_string_value(json_object_get(v, "key")),
                                  json_string_value(json_object_get(v, "version_id")));
        else
            o += (size_t)snprintf(out + o, cap - o, "%s %s %lld %s\n",
                                  json_string_value(json_object_get(v, "key")),
                                  json_string_value(json_object_get(v, "version_id")),
                                  (long long)json_integer_value(json_object_get(v, "size")),
                                  etag ? etag : "");
    }
    json_decref(j);
    return out;
}

static void nt_wait_applied(void) {
    int64_t hi[NT_PARTITIONS];
    char why[512];
    if (viewproc_log_end(testlog_bootstrap(T.f.log), NT_PARTITIONS, hi, why, sizeof(why)) < 0 ||
        viewproc_wait_applied(T.view.url, NT_PARTITIONS, hi, 120000, why, sizeof(why)) < 0)
        fail_msg("%s", why);
}

static void nt_kill_broker(void) {
    int leader = testlog_leader(T.f.log, NT_TOPIC, 0, 5000);
    if (leader < 1 || testlog_node_kill(T.f.log, leader) < 0) {
        nt_say("no broker to kill on this log (%s): that fault is skipped", testlog_kind());
        return;
    }
    nt_say("killed broker %d, the leader of events partition 0", leader);
    nt_writes(30, 1);
    assert_int_equal(testlog_node_start(T.f.log, leader), 0);
    assert_int_equal(testlog_wait_ready(T.f.log, 180000), 0);
    T.broker_killed = 1;
    nt_say("broker %d back", leader);
}

/* ---- blob releases ---- */

static int nt_str_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The blob ids GET /v1/blobs lists, every page, sorted (16 bytes each). */
static char (*nt_referenced(int *n))[16] {
    char (*ids)[16] = NULL;
    int cap = 0;
    char after[32] = "";
    *n = 0;
    for (;;) {
        char path[96];
        json_t *j = NULL;
        snprintf(path, sizeof(path), "/v1/blobs?limit=100%s%s", after[0] ? "&after=" : "",
                 after);
        long st = nt_http("GET", path, NULL, &j);
        if (st != 200 || !j)
            fail_msg("GET %s: %ld", path, st);
        json_t *v;
        size_t i;
        json_array_foreach(json_object_get(j, "blobs"), i, v) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                ids = realloc(ids, (size_t)cap * sizeof(*ids));
                assert_non_null(ids);
            }
            snprintf(ids[(*n)++], sizeof(ids[0]), "%s", json_string_value(v));
        }
        const char *next = json_string_value(json_object_get(j, "next_after"));
        snprintf(after, sizeof(after), "%s", next ? next : "");
        json_decref(j);
        if (!after[0])
            break;
    }
    return ids;
}

/* Ids of the OK writes (not retries) minus those referenced, sorted. */
static char (*nt_unreferenced(int *n, int *written))[16] {
    int nref;
    char (*ref)[16] = nt_referenced(&nref);
    char (*out)[16] = calloc((size_t)T.nw * 2 + 1, sizeof(*out));
    assert_non_null(out);
    *n = 0;
    *written = 0;
    for (int i = 0; i < T.nw; i++) {
        const nt_write *w = &T.w[i];
        if (strcmp(w->code, "OK") != 0 || w->out_offset != w->offset)
            continue;
        for (int b = 0; b < 2 && w->blob[b][0]; b++) {
            (*written)++;
            if (!bsearch(w->blob[b], ref, (size_t)nref, sizeof(*ref), nt_str_cmp))
                snprintf(out[(*n)++], sizeof(out[0]), "%s", w->blob[b]);
        }
    }
    free(ref);
    qsort(out, (size_t)*n, sizeof(*out), nt_str_cmp);
    return out;
}

static int nt_same(char (*a)[16], char (*b)[16], int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

/* Released = written - referenced, each once (on a real Kafka). */
static void nt_releases_check(rd_kafka_t *rk) {
    int nwant = 0, written = 0, dups = 0, distinct = 0;
    char (*want)[16] = NULL, (*got)[16] = NULL;
    for (int tries = 0; tries < 60; tries++) {
        nt_consume(rk, 500);
        free(want);
        free(got);
        want = nt_unreferenced(&nwant, &written);
        got = calloc((size_t)T.nrel + 1, sizeof(*got));
        assert_non_null(got);
        memcpy(got, T.rel, (size_t)T.nrel * sizeof(*got));
        qsort(got, (size_t)T.nrel, sizeof(*got), nt_str_cmp);
        dups = distinct = 0;
        for (int i = 0; i < T.nrel; i++) {
            if (i && strcmp(got[i], got[i - 1]) == 0) {
                dups++;
                continue;
            }
            memmove(got[distinct++], got[i], sizeof(got[0]));
        }
        if (distinct == nwant && nt_same(got, want, nwant))
            break;
    }
    nt_say("blob ids written %d, unreferenced %d, released %d (records %d, duplicates %d)",
           written, nwant, distinct, T.nrel, dups);
    for (int i = 0, k = 0; i < nwant || k < distinct;) {
        int c = i == nwant ? 1 : k == distinct ? -1 : strcmp(want[i], got[k]);
        if (c)
            fprintf(stderr, "blob %s: %s\n", c < 0 ? want[i] : got[k],
                    c < 0 ? "unreferenced, not released" : "released, still referenced");
        i += c <= 0;
        k += c >= 0;
    }
    assert_int_equal(distinct, nwant);
    assert_true(nt_same(got, want, nwant));
    assert_true(nwant > 0);
    /* as the feed: exactly once needs a real Kafka's transactions */
    if (testlog_is_kafka())
        assert_int_equal(dups, 0);
    free(want);
    free(got);
}

static void feed_exactly_once_across_kills(void **state) {
    (void)state;
    char why[512];
    json_t *j = NULL;
    assert_int_equal(nt_http("PUT", "/v1/buckets/" NT_BUCKET, "{\"versioning\":\"Enabled\"}",
                             &j), 200);
    json_decref(j);
    assert_int_equal(
        nt_http("PUT", "/v1/buckets/" NT_BUCKET "/notifications",
                "{\"configurations\":[{\"id\":\"all\",\"arn\":\"arn:objlog:kafka:::" NT_FEED
                "\",\"events\":[\"s3:ObjectCreated:*\",\"s3:ObjectRemoved:*\","
                "\"s3:LifecycleExpiration:*\"]}]}", &j), 200);
    json_decref(j);
    assert_int_equal(
        nt_http("PUT", "/v1/buckets/" NT_BUCKET "/lifecycle",
                "{\"rules\":[{\"id\":\"lc\",\"status\":\"Enabled\",\"filter\":{\"prefix\":"
                "\"lc/\"},\"expiration\":{\"date\":\"2020-01-01\"}}]}", &j), 200);
    json_decref(j);
    rd_kafka_t *rk = NULL;
    for (int round = 1; round <= NT_ROUNDS; round++) {
        nt_writes(40, 1);
        if (round == 5 && testlog_is_kafka())
            nt_kill_broker();
        viewproc_kill(&T.view);
        nt_writes(20, 0);
        if (viewproc_start(&T.view, 120000, why, sizeof(why)) < 0)
            fail_msg("restart %d: %s", round, why);
        if (!rk)
            rk = nt_consumer(); /* reads while the writes and kills go on */
        nt_consume(rk, 300);
        nt_say("round %d: %d writes so far, %d records read, view restarted", round, T.nw,
               T.nrec);
    }
    nt_wait_applied();
    nt_resolve();
    int expected = 0, have = 0;
    char *feed = NULL, *view = NULL;
    for (int tries = 0; tries < 120; tries++) {
        nt_consume(rk, 500);
        have = nt_covered(&expected);
        if (have < expected)
            continue;
        /* lifecycle may still expire: compare until the two agree */
        nt_wait_applied();
        nt_consume(rk, 500);
        free(feed);
        free(view);
        char *a = nt_table_from_feed(), *b = nt_table_from_view();
        feed = nt_sort_lines(a);
        view = nt_sort_lines(b);
        free(a);
        free(b);
        if (strcmp(feed, view) == 0)
            break;
    }
    nt_releases_check(rk);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    /* exactly once: no sequencer twice */
    int dups = 0, out_of_order = 0, failed = 0, retries = 0, wrong = 0, found_bad = 0;
    char *again = calloc((size_t)T.nrec + 1, 1);
    for (int i = 0; i < T.nrec; i++)
        for (int k = i + 1; k < T.nrec; k++)
            if (!again[k] && strcmp(T.rec[i].seq, T.rec[k].seq) == 0) {
                again[k] = 1;
                dups++;
            }
    /* per key, arrival order (one feed partition) is sequencer order, for
     * the first delivery of each record */
    for (int i = 0; i < T.nrec; i++)
        for (int k = i + 1; !again[i] && k < T.nrec; k++)
            if (!again[k] && strcmp(T.rec[i].key, T.rec[k].key) == 0 &&
                T.rec[i].kp == T.rec[k].kp && strcmp(T.rec[i].seq, T.rec[k].seq) > 0)
                out_of_order++;
    free(again);
    for (int i = 0; i < T.nw; i++) {
        const nt_write *w = &T.w[i];
        const char *want = nt_expect(w);
        const nt_rec *r = nt_find(w);
        if (strcmp(w->code, "OK") != 0)
            failed++;
        if (w->out_offset != w->offset)
            retries++;
        if (want && r && strcmp(r->name, want) != 0) {
            wrong++;
            fprintf(stderr, "write %s at %d.%lld: record %s, want %s\n", w->key, w->partition,
                    (long long)w->offset, r->name, want);
        }
        if (!want && r && w->op != NT_DEL_VERSION) {
            found_bad++;
            fprintf(stderr, "write %s at %d.%lld (%s): record %s, want none\n", w->key,
                    w->partition, (long long)w->offset, w->code, r->name);
        }
    }
    nt_say("writes %d (failed %d, retries %d); records expected %d, delivered %d of them, "
           "read %d in all; duplicates %d, out of order %d, wrong name %d, for nothing %d; "
           "broker killed: %s",
           T.nw, failed, retries, expected, have, T.nrec, dups, out_of_order, wrong, found_bad,
           T.broker_killed ? "yes" : "no");
    assert_int_equal(have, expected);
    /* librdkafka's mock cluster keeps no transactional offsets and writes
     * no transaction markers: exactly once needs a real Kafka */
    if (testlog_is_kafka())
        assert_int_equal(dups, 0);
    assert_int_equal(out_of_order, 0);
    assert_int_equal(wrong, 0);
    assert_int_equal(found_bad, 0);
    assert_true(failed > 0);  /* the If-None-Match writes did fail */
    assert_true(retries > 0); /* and retries were deduplicated */
    if (strcmp(feed, view) != 0)
        fprintf(stderr, "table from the feed:\n%s\nListObjectVersions:\n%s\n", feed, view);
    assert_string_equal(feed, view);
    free(feed);
    free(view);
}

/* ---- webhooks: at least once, in order per key ---- */

#define NT_HOOK_BUCKET "hookbkt"

static proc *nt_receiver(int port, const char *out) {
    char script[600], portstr[16], line[64];
    snprintf(script, sizeof(script), "%s/notify/webhook_receiver.py", OBJLOG_TESTS_DIR);
    snprintf(portstr, sizeof(portstr), "%d", port);
    char *argv[] = {"/usr/bin/python3", script, portstr, (char *)out, "--fail-rate", "0.3",
                    "--seed", portstr, NULL};
    proc *p = proc_spawn(argv, NULL);
    if (!p || proc_wait_line(p, "READY", line, sizeof(line), 30000) < 0)
        fail_msg("webhook receiver on port %d did not start", port);
    return p;
}

/* What the receiver recorded, in arrival order: "key seq name" each. */
static int nt_received(const char *path, nt_rec **out) {
    FILE *f = fopen(path, "r");
    int n = 0, cap = 0;
    *out = NULL;
    if (!f)
        return 0;
    static char line[16384];
    while (fgets(line, sizeof(line), f)) {
        json_t *j = json_loads(line, 0, NULL);
        json_t *r = json_array_get(json_object_get(j, "Records"), 0);
        json_t *o = json_object_get(json_object_get(r, "s3"), "object");
        if (!o) {
            json_decref(j);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            *out = realloc(*out, (size_t)cap * sizeof(**out));
            assert_non_null(*out);
        }
        nt_rec *x = &(*out)[n++];
        memset(x, 0, sizeof(*x));
        snprintf(x->key, sizeof(x->key), "%s", json_string_value(json_object_get(o, "key")));
        snprintf(x->seq, sizeof(x->seq), "%s",
                 json_string_value(json_object_get(o, "sequencer")));
        snprintf(x->name, sizeof(x->name), "%s",
                 json_string_value(json_object_get(r, "eventName")));
        json_decref(j);
    }
    fclose(f);
    return n;
}

static void webhook_at_least_once_in_order(void **state) {
    (void)state;
    char out[400], arn[200], body[600];
    json_t *j = NULL;
    int port = viewproc_free_port();
    assert_true(port > 0);
    snprintf(out, sizeof(out), "%s/webhook.jsonl", T.f.root);
    proc *rcv = nt_receiver(port, out);
    snprintf(arn, sizeof(arn), "arn:objlog:webhook:::http%%3A%%2F%%2F127.0.0.1%%3A%d%%2Fhook",
             port);
    snprintf(body, sizeof(body),
             "{\"configurations\":[{\"id\":\"hook\",\"arn\":\"%s\",\"events\":"
             "[\"s3:ObjectCreated:*\",\"s3:ObjectRemoved:*\"]}]}", arn);
    assert_int_equal(nt_http("PUT", "/v1/buckets/" NT_HOOK_BUCKET, "{\"versioning\":\"Enabled\"}",
                             &j), 200);
    json_decref(j);
    assert_int_equal(nt_http("PUT", "/v1/buckets/" NT_HOOK_BUCKET "/notifications", body, &j),
                     200);
    json_decref(j);
    int first = T.nw;
    char key[32];
    for (int i = 0; i < 240; i++) {
        if (i == 80) {
            proc_kill(rcv); /* down for 10 s while the writes go on */
            rcv = NULL;
            nt_say("webhook receiver down for 10 s");
        }
        if (i == 160) {
            usleep(10 * 1000 * 1000);
            rcv = nt_receiver(port, out);
            nt_say("webhook receiver back");
        }
        snprintf(key, sizeof(key), "h%02u", nt_rand() % 12);
        objlog_object_meta m = {.size = 1, .etag = "e"};
        objlog_write_result r;
        char err[256];
        int del = nt_rand() % 4 == 0;
        int rc = del ? objlog_producer_delete_object_sync(T.logged, NT_HOOK_BUCKET, key,
                                                          strlen(key), NULL, NULL, &r, err,
                                                          sizeof(err))
                     : objlog_producer_put_object_sync(T.logged, NT_HOOK_BUCKET, key,
                                                       strlen(key), &m, NULL, &r, err,
                                                       sizeof(err));
        assert_int_equal(rc, 0);
        assert_int_equal(r.status, OBJLOG_STATUS_LOGGED);
        nt_write *w = &T.w[T.nw++];
        memset(w, 0, sizeof(*w));
        w->op = del ? NT_DEL : NT_PUT;
        snprintf(w->key, sizeof(w->key), "%s", key);
        w->partition = r.partition;
        w->offset = r.offset;
        snprintf(w->token, sizeof(w->token), "%s", r.token);
        usleep(20 * 1000);
    }
    nt_wait_applied();
    nt_resolve();
    int expected = 0, have = 0, n = 0;
    nt_rec *got = NULL;
    long long t0 = viewtest_ms();
    for (;;) {
        free(got);
        n = nt_received(out, &got);
        expected = have = 0;
        for (int i = first; i < T.nw; i++) {
            const char *want = nt_expect(&T.w[i]);
            if (!want)
                continue;
            expected++;
            char tail[32];
            snprintf(tail, sizeof(tail), "%08X%012llX", (unsigned)T.w[i].partition,
                     (unsigned long long)T.w[i].offset);
            for (int k = 0; k < n; k++) {
                size_t sl = strlen(got[k].seq);
                if (sl >= 20 && strcmp(got[k].seq + sl - 20, tail) == 0 &&
                    strcmp(got[k].name, want) == 0) {
                    have++;
                    break;
                }
            }
        }
        if (have == expected || viewtest_ms() - t0 > 120000)
            break;
        usleep(500 * 1000);
    }
    /* per key, first deliveries in sequencer order; repeats counted */
    int dups = 0, out_of_order = 0;
    for (int i = 0; i < n; i++) {
        int repeat = 0;
        for (int k = 0; k < i && !repeat; k++)
            repeat = strcmp(got[k].seq, got[i].seq) == 0;
        if (repeat) {
            dups++;
            continue;
        }
        for (int k = 0; k < i; k++)
            if (strcmp(got[k].key, got[i].key) == 0 && strcmp(got[k].seq, got[i].seq) > 0)
                out_of_order++;
    }
    json_t *st = NULL;
    assert_int_equal(nt_http("GET", "/v1/buckets/" NT_HOOK_BUCKET "/notifications/status",
                             NULL, &st), 200);
    json_t *h = json_object_get(json_object_get(st, "node"), "webhook");
    long long failures = (long long)json_integer_value(json_object_get(h, "failures"));
    nt_say("webhook: records expected %d, received %d of them, %d deliveries in all "
           "(repeats %d), out of order %d; %lld failed attempts retried", expected, have, n,
           dups, out_of_order, failures);
    json_decref(st);
    free(got);
    if (rcv)
        proc_kill(rcv);
    assert_true(expected > 150);
    assert_int_equal(have, expected);
    assert_int_equal(out_of_order, 0);
    assert_true(failures > 0); /* the 30% and the 10 s were met */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(feed_exactly_once_across_kills),
        cmocka_unit_test(webhook_at_least_once_in_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
