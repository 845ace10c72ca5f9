/* test_stats_kill.c: the usage counters stay exact when a real view
 * process is SIGKILLed while it applies, restarted on the same data
 * directory, and when a second view rebuilds them by replaying the log
 * (test_stats.c covers the same in-process).
 *
 * The log is the mock cluster of `objlogd --kafka-only` or a real 3-node
 * Kafka (testlog.h); `objlogd --brokers ... --data D1
 * --test-apply-delay-ms` is a view slowed down so that it lags. A seeded
 * random workload (printed seed; OBJLOG_TEST_SEED replays one) goes
 * through libobjlog_producer with ack=logged, so it runs ahead of the
 * view: buckets of three tenants and of none, versioning never set /
 * Enabled / toggled Enabled<->Suspended, bucket quotas (QuotaExceeded),
 * puts, overwrites, deletes, deletes of given version ids, multipart
 * create / part / complete / abort, one bucket emptied and deleted and
 * written to afterwards (NoSuchBucket). After 1/3 and after 2/3 of it the
 * view is SIGKILLed; the crashed store must have a backlog (applied below
 * what was acknowledged before the kill) and its counters must already
 * equal a recount (each WriteBatch is atomic); the view restarts on D1.
 * At the end it must apply every partition to the produced end, stop
 * cleanly, and D1's counters equal the recount with the known bucket and
 * tenant counts. A second view replays into an empty D2: its counters
 * equal its recount and D1's stats rows byte for byte (every other column
 * family too), and every write has the same outcome in both.
 *
 * Size: ~3,000 small metadata events (< 1 MB in all) against the mock
 * cluster's ~5 MB per partition (a real Kafka keeps everything), so the
 * log is never truncated and the replay starts at offset 0 (asserted: D2
 * holds the outcome of every write, the first of each partition
 * included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "keycodec.h"
#include "materializer.h"
#include "objlog_producer.h"
#include "proc.h"
#include "stats_recount.h"
#include "testlog.h"

#define SK_PARTITIONS 4
#define SK_OPS 3000           /* workload steps; a step is one write or a purge */
#define SK_MAX_WRITES (SK_OPS + 200)
#define SK_BUCKETS 6
#define SK_GONE 5             /* the bucket emptied and deleted halfway */
#define SK_KEYS 5
#define SK_MAX_UPLOADS 12
#define SK_APPLY_DELAY "20"   /* ms per applied batch: the view lags */
#define SK_EPOCH 1            /* CONTROL_DEFAULT_EPOCH: seq = epoch<<48 | offset */
#define MIB (1024ULL * 1024)

typedef enum sk_kind {
    SK_CREATE_BUCKET, SK_SET_VERSIONING, SK_PUT, SK_DELETE, SK_DELETE_VERSION,
    SK_CREATE_UPLOAD, SK_UPLOAD_PART, SK_COMPLETE, SK_ABORT, SK_DELETE_BUCKET, SK_NKINDS
} sk_kind;

static const char *const kind_names[SK_NKINDS] = {
    "create_bucket", "set_versioning", "put", "delete", "delete_version",
    "create_upload", "upload_part", "complete", "abort", "delete_bucket"};

typedef struct sk_bucket_def {
    const char *name, *tenant; /* tenant NULL: none ("") */
    objlog_versioning versioning;
    uint64_t quota_bytes, quota_objects;
} sk_bucket_def;

static const sk_bucket_def bucket_defs[SK_BUCKETS] = {
    {"sk-plain", "acme", OBJLOG_VERSIONING_UNVERSIONED, 0, 0},   /* never set */
    {"sk-ver", "acme", OBJLOG_VERSIONING_ENABLED, 0, 0},
    {"sk-susp", "beta", OBJLOG_VERSIONING_ENABLED, 0, 0},        /* toggled */
    {"sk-quota", "beta", OBJLOG_VERSIONING_UNVERSIONED, 12000, 4},
    {"sk-vquota", NULL, OBJLOG_VERSIONING_ENABLED, 60000, 0},
    {"sk-gone", "gamma", OBJLOG_VERSIONING_UNVERSIONED, 0, 0},   /* deleted */
};
/* What the workload leaves: sk-gone deleted, so gamma has no bucket. */
#define SK_END_BUCKETS 5
#define SK_END_TENANTS 3 /* acme, beta, "" */
/* With SK_PARTITIONS, the names' hashes put acme's two buckets on one
 * partition, and beta's and ""'s on the other: one stats row per tenant
 * and 2 partitions with a 'g' row. */
#define SK_END_TENANT_ROWS 3
#define SK_END_PART_ROWS 2

static const char *const key_names[SK_KEYS] = {"a", "b/c", "b/d", "e", "f\xc3\xa9"};

/* One write: filled by the completion callback (library thread), then
 * `done` is set; the main thread reads the rest only after seeing it. */
typedef struct sk_write {
    sk_kind kind;
    int bucket, key;
    int32_t partition;
    int64_t offset;
    objlog_status status;
    atomic_int done;
} sk_write;

typedef struct sk_upload {
    int live, bucket, key, nparts;
    char id[KEYCODEC_VERSION_ID_LEN];
} sk_upload;

typedef struct sk_test {
    char root[256], data1[300], data2[300];
    char objlogd[512], boot[1024], url[128];
    testlog *log;
    proc *view;
    objlog_producer *p;
    uint64_t rng;
    sk_write *w;
    size_t nw;
    sk_upload ups[SK_MAX_UPLOADS];
    int gone_deleted;
} sk_test;

static sk_test T;

static uint64_t rnd(void) {
    T.rng ^= T.rng << 13;
    T.rng ^= T.rng >> 7;
    T.rng ^= T.rng << 17;
    return T.rng;
}

/* ---- processes ---- */

static proc *start_view(const char *data, char *url, size_t url_size) {
    char *delay[] = {"--test-apply-delay-ms", SK_APPLY_DELAY, NULL};
    proc *p = testlog_start_view(T.log, data, delay, url, url_size);
    assert_non_null(p);
    return p;
}

static uint64_t seed_from_env(void) {
    const char *s = getenv("OBJLOG_TEST_SEED");
    if (s && *s)
        return strtoull(s, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000003ULL ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
}

static int setup(void **state) {
    (void)state;
    memset(&T, 0, sizeof(T));
    T.rng = seed_from_env();
    if (!T.rng)
        T.rng = 1;
    printf("test_stats_kill: seed %llu (OBJLOG_TEST_SEED=%llu replays it)\n",
           (unsigned long long)T.rng, (unsigned long long)T.rng);
    assert_int_equal(proc_tmpdir(T.root, sizeof(T.root)), 0);
    snprintf(T.data1, sizeof(T.data1), "%s/view1", T.root);
    snprintf(T.data2, sizeof(T.data2), "%s/view2", T.root);
    proc_bin("query/objlogd", T.objlogd, sizeof(T.objlogd));
    T.log = testlog_start(SK_PARTITIONS);
    assert_non_null(T.log);
    snprintf(T.boot, sizeof(T.boot), "%s", testlog_bootstrap(T.log));
    T.view = start_view(T.data1, T.url, sizeof(T.url));
    T.w = calloc(SK_MAX_WRITES, sizeof(*T.w));
    assert_non_null(T.w);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (T.p)
        objlog_producer_destroy(T.p);
    if (T.view) {
        kill(T.view->pid, SIGCONT); /* a failure may leave it frozen (kill_view) */
        proc_stop(T.view, 10000);
    }
    testlog_stop(T.log);
    proc_rmtree(T.root);
    free(T.w);
    return 0;
}

/* ack=logged and no query.url: acks come from Kafka, never from the view
 * (which is down between a kill and its restart). */
static objlog_producer *new_producer(void) {
    char err[512];
    objlog_producer_conf *c = objlog_producer_conf_new();
    assert_int_equal(objlog_producer_conf_set(c, "bootstrap.servers", T.boot, err, sizeof(err)),
                     OBJLOG_CONF_OK);
    assert_int_equal(objlog_producer_conf_set(c, "ack", "logged", err, sizeof(err)),
                     OBJLOG_CONF_OK);
    objlog_producer *p = objlog_producer_new(c, err, sizeof(err));
    if (!p)
        fail_msg("producer: %s", err);
    return p;
}

/* ---- the workload ---- */

static void write_cb(const objlog_write_result *res, void *opaque) {
    sk_write *w = opaque;
    w->status = res->status;
    w->partition = res->partition;
    w->offset = res->offset;
    atomic_store_explicit(&w->done, 1, memory_order_release);
}

static sk_write *new_write(sk_kind kind, int bucket, int key) {
    assert_true(T.nw < SK_MAX_WRITES);
    sk_write *w = &T.w[T.nw++];
    w->kind = kind;
    w->bucket = bucket;
    w->key = key;
    w->partition = -1;
    w->offset = -1;
    return w;
}

static int is_done(sk_write *w) {
    return atomic_load_explicit(&w->done, memory_order_acquire);
}

/* The call's return code: accepted up front, or the test fails. */
static void accepted(int rc, const char *what, const char *err) {
    if (rc != 0)
        fail_msg("%s rejected up front: %s", what, err);
}

static const char *bname(int b) {
    return bucket_defs[b].name;
}

static const char *kname(int k) {
    return key_names[k];
}

static void create_bucket(int b) {
    char err[256];
    const sk_bucket_def *d = &bucket_defs[b];
    objlog_bucket_conf conf = {.tenant = d->tenant, .versioning = d->versioning,
                               .quota_max_bytes = d->quota_bytes,
                               .quota_max_objects = d->quota_objects};
    sk_write *w = new_write(SK_CREATE_BUCKET, b, -1);
    accepted(objlog_producer_create_bucket_ex(T.p, d->name, &conf, NULL, write_cb, w, err,
                                              sizeof(err)), "create_bucket", err);
}

static void put(int b, int k) {
    char err[256], etag[40];
    snprintf(etag, sizeof(etag), "%032llx", (unsigned long long)rnd());
    objlog_object_meta m = {.size = rnd() % 5000, .etag = etag, .content_type = "text/plain"};
    sk_write *w = new_write(SK_PUT, b, k);
    accepted(objlog_producer_put_object(T.p, bname(b), kname(k), strlen(kname(k)), &m, NULL,
                                        write_cb, w, err, sizeof(err)), "put", err);
}

static void delete_object(int b, int k, const char *vid) {
    char err[256];
    sk_write *w = new_write(vid ? SK_DELETE_VERSION : SK_DELETE, b, k);
    accepted(objlog_producer_delete_object(T.p, bname(b), kname(k), strlen(kname(k)), vid,
                                           NULL, write_cb, w, err, sizeof(err)), "delete", err);
}

/* A version id the key had: the seq of an earlier acknowledged put or
 * delete of it (a version, a delete marker, or nothing in an unversioned
 * or suspended bucket), sometimes "null"; it may be gone already. */
static void delete_some_version(int b, int k) {
    char vid[KEYCODEC_VERSION_ID_LEN] = "null";
    size_t cand = 0;
    uint64_t pick = rnd();
    for (size_t i = T.nw; i-- > 0 && cand < 8;) {
        sk_write *w = &T.w[i];
        if (w->bucket != b || w->key != k || (w->kind != SK_PUT && w->kind != SK_DELETE) ||
            !is_done(w) || w->offset < 0)
            continue;
        if (pick % 8 == cand++)
            keycodec_version_id(keycodec_seq(SK_EPOCH, w->offset), vid);
    }
    delete_object(b, k, vid);
}

static sk_upload *some_upload(void) {
    int start = (int)(rnd() % SK_MAX_UPLOADS);
    for (int i = 0; i < SK_MAX_UPLOADS; i++) {
        sk_upload *u = &T.ups[(start + i) % SK_MAX_UPLOADS];
        if (u->live)
            return u;
    }
    return NULL;
}

/* Synchronous: the upload id is the seq of the CreateUpload event, known
 * once Kafka acknowledged its offset. */
static void create_upload(int b, int k) {
    sk_upload *u = NULL;
    for (int i = 0; i < SK_MAX_UPLOADS && !u; i++)
        if (!T.ups[i].live)
            u = &T.ups[i];
    if (!u)
        return;
    char err[256];
    objlog_write_result res;
    objlog_object_meta m = {.content_type = "application/octet-stream"};
    sk_write *w = new_write(SK_CREATE_UPLOAD, b, k);
    accepted(objlog_producer_create_upload_sync(T.p, bname(b), kname(k), strlen(kname(k)), &m,
                                                NULL, &res, err, sizeof(err)),
             "create_upload", err);
    write_cb(&res, w);
    if (res.status != OBJLOG_STATUS_LOGGED)
        fail_msg("create_upload: %s %s", res.error_code, res.error_message);
    memset(u, 0, sizeof(*u));
    u->live = 1;
    u->bucket = b;
    u->key = k;
    keycodec_version_id(keycodec_seq(SK_EPOCH, res.offset), u->id);
}

/* Parts go 1, 2, 3 in order, sometimes replacing the last one; 5 MiB and
 * a little, or now and then too small (a later Complete: EntityTooSmall). */
static void upload_part(sk_upload *u) {
    char err[256];
    uint32_t n = (uint32_t)u->nparts;
    if (n == 0 || (n < 3 && rnd() % 3))
        n++;
    uint64_t size = rnd() % 8 == 0 ? rnd() % 1000 : 5 * MIB + rnd() % 1000;
    sk_write *w = new_write(SK_UPLOAD_PART, u->bucket, u->key);
    accepted(objlog_producer_upload_part(T.p, bname(u->bucket), kname(u->key),
                                         strlen(kname(u->key)), u->id, n, size,
                                         "00112233445566778899aabbccddeeff", NULL, NULL,
                                         write_cb, w, err, sizeof(err)), "upload_part", err);
    if ((int)n > u->nparts)
        u->nparts = (int)n;
}

static void complete_upload(sk_upload *u) {
    char err[256];
    objlog_completed_part parts[3];
    int n = u->nparts ? u->nparts : 1;
    for (int i = 0; i < n; i++)
        parts[i] = (objlog_completed_part){(uint32_t)(i + 1), "00112233445566778899aabbccddeeff"};
    sk_write *w = new_write(SK_COMPLETE, u->bucket, u->key);
    accepted(objlog_producer_complete_upload(T.p, bname(u->bucket), kname(u->key),
                                             strlen(kname(u->key)), u->id, parts, (size_t)n,
                                             NULL, write_cb, w, err, sizeof(err)),
             "complete_upload", err);
    u->live = 0;
}

static void abort_upload(sk_upload *u) {
    char err[256];
    sk_write *w = new_write(SK_ABORT, u->bucket, u->key);
    accepted(objlog_producer_abort_upload(T.p, bname(u->bucket), kname(u->key),
                                          strlen(kname(u->key)), u->id, NULL, write_cb, w,
                                          err, sizeof(err)), "abort_upload", err);
    u->live = 0;
}

static void set_versioning(int b) {
    char err[256];
    objlog_versioning v = rnd() % 2 ? OBJLOG_VERSIONING_ENABLED : OBJLOG_VERSIONING_SUSPENDED;
    sk_write *w = new_write(SK_SET_VERSIONING, b, -1);
    accepted(objlog_producer_set_versioning(T.p, bname(b), v, NULL, write_cb, w, err,
                                            sizeof(err)), "set_versioning", err);
}

/* sk-gone is unversioned and never gets uploads: deleting every key
 * leaves it empty, so its DeleteBucket (same partition, later) is OK. */
static void purge_gone(void) {
    char err[256];
    for (int k = 0; k < SK_KEYS; k++)
        delete_object(SK_GONE, k, NULL);
    sk_write *w = new_write(SK_DELETE_BUCKET, SK_GONE, -1);
    accepted(objlog_producer_delete_bucket(T.p, bname(SK_GONE), NULL, write_cb, w, err,
                                           sizeof(err)), "delete_bucket", err);
    T.gone_deleted = 1;
}

static void random_step(void) {
    /* Uploads and version toggles stay off sk-gone; until it is deleted it
     * gets puts and deletes like the others, after that rare puts only. */
    int b = (int)(rnd() % (SK_BUCKETS - 1)), k = (int)(rnd() % SK_KEYS);
    uint64_t r = rnd() % 100;
    sk_upload *u;
    if (rnd() % 6 == 0 && (!T.gone_deleted || rnd() % 8 == 0)) {
        if (!T.gone_deleted && r >= 70)
            delete_object(SK_GONE, k, NULL);
        else
            put(SK_GONE, k); /* NoSuchBucket once it is deleted */
    } else if (r < 42)
        put(b, k);
    else if (r < 56)
        delete_object(b, k, NULL);
    else if (r < 68)
        delete_some_version(b, k);
    else if (r < 72)
        create_upload(b, k);
    else if (r < 84 && (u = some_upload()))
        upload_part(u);
    else if (r < 90 && (u = some_upload()))
        complete_upload(u);
    else if (r < 93 && (u = some_upload()))
        abort_upload(u);
    else if (r < 96)
        set_versioning(2);
    else
        put(b, k);
}

/* ---- offsets, lag, catch-up ---- */

/* Per partition, 1 + the highest offset acknowledged so far (0: none). */
static void acked_ends(int64_t end[SK_PARTITIONS]) {
    memset(end, 0, SK_PARTITIONS * sizeof(end[0]));
    for (size_t i = 0; i < T.nw; i++) {
        sk_write *w = &T.w[i];
        if (!is_done(w) || w->offset < 0)
            continue;
        assert_in_range(w->partition, 0, SK_PARTITIONS - 1);
        if (w->offset + 1 > end[w->partition])
            end[w->partition] = w->offset + 1;
    }
}

static objlog_store *open_store(const char *dir) {
    char err[512];
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s)
        fail_msg("open %s: %s", dir, err);
    return s;
}

static void check_exact(objlog_store *s, const char *when, stats_recount_summary *sum) {
    char err[512];
    rangemap *rm = rangemap_new_default(SK_PARTITIONS, 1);
    assert_non_null(rm);
    int rc = stats_recount_check(s, rm, sum, err, sizeof(err));
    rangemap_destroy(rm);
    if (rc != 0)
        fail_msg("%s: %s", when, err);
    assert_int_equal(sum->global.f[STATS_BUCKETS], sum->buckets);
    assert_int_equal(sum->rows, sum->buckets + sum->tenant_rows + sum->globals);
}

/* SIGKILL while writes keep coming and the view applies its backlog. The
 * offsets Kafka acknowledged before the kill minus what the dead view's
 * store says it applied is the backlog it died with: it must be > 0. The
 * crashed store is a prefix of WriteBatches, so its counters are exact.
 * The view is frozen (SIGSTOP) where it is, then every write issued so
 * far is flushed to an ack, then it dies: so the backlog counts the
 * writes of the last moments before the freeze, not only those whose ack
 * happened to arrive in time (a real Kafka acks after replication, which
 * leaves the mock cluster's margin of hundreds at a few dozen). A view
 * that kept up with the paced writes (a fast apply, a quiet machine)
 * would die with none: a burst of puts issued into the frozen view makes
 * sure it has a backlog to die with. */
static void kill_view(int nth) {
    int64_t before[SK_PARTITIONS];
    assert_int_equal(kill(T.view->pid, SIGSTOP), 0);
    for (int i = 0; i < 20; i++)
        put((int)(rnd() % (SK_BUCKETS - 1)), (int)(rnd() % SK_KEYS));
    assert_int_equal(objlog_producer_flush(T.p, 60000), 0);
    acked_ends(before);
    proc_kill(T.view);
    T.view = NULL;
    objlog_store *s = open_store(T.data1);
    int64_t applied = 0, backlog = 0;
    for (int p = 0; p < SK_PARTITIONS; p++) {
        int64_t a = objlog_store_applied(s, p);
        applied += a;
        backlog += before[p] > a ? before[p] - a : 0;
    }
    printf("kill %d after %zu writes: %lld events applied, backlog %lld\n", nth, T.nw,
           (long long)applied, (long long)backlog);
    assert_true(backlog > 0);
    stats_recount_summary sum;
    char when[64];
    snprintf(when, sizeof(when), "store of the view SIGKILLed (kill %d)", nth);
    check_exact(s, when, &sum);
    objlog_store_close(s);
    T.view = start_view(T.data1, T.url, sizeof(T.url));
}

static json_t *get_json(const char *url, const char *path) {
    httpc *c = httpc_new(url);
    httpc_resp resp;
    assert_int_equal(httpc_do(c, "GET", path, NULL, NULL, &resp), 0);
    if (resp.status != 200)
        fail_msg("GET %s: status %ld, body %s", path, resp.status, resp.body);
    json_t *j = json_loads(resp.body, 0, NULL);
    httpc_destroy(c);
    assert_non_null(j);
    return j;
}

/* Polls GET /v1/lag until every partition applied exactly the produced
 * end (and the log end agrees: nobody else writes), or fails at 60 s. */
static void wait_caught_up(const char *url, const int64_t end[SK_PARTITIONS]) {
    for (int tries = 0; tries < 1200; tries++) {
        json_t *j = get_json(url, "/v1/lag");
        json_t *parts = json_object_get(j, "partitions");
        assert_int_equal(json_array_size(parts), SK_PARTITIONS);
        int done = 1;
        for (int p = 0; p < SK_PARTITIONS; p++) {
            json_t *o = json_array_get(parts, (size_t)p);
            const char *state = json_string_value(json_object_get(o, "state"));
            if (!state || strcmp(state, "running") != 0)
                fail_msg("partition %d: %s", p, json_dumps(o, 0));
            json_int_t applied = json_integer_value(json_object_get(o, "applied"));
            assert_true(applied <= end[p]);
            done = done && applied == end[p] &&
                   json_integer_value(json_object_get(o, "end")) == end[p];
        }
        json_decref(j);
        if (done)
            return;
        usleep(50000);
    }
    fail_msg("view at %s did not catch up within 60 s", url);
}

/* ---- outcomes ---- */

typedef struct sk_tally {
    long ok[SK_NKINDS], rejected[SK_NKINDS];
    long quota_exceeded, no_such_bucket;
    long seq_ids; /* new versions / uploads whose id is the computed seq */
} sk_tally;

/* Version and upload ids the workload computed from offsets (version
 * deletes, upload parts) are the ids the state machine gave: a new
 * version's or upload's id is its event's seq. 1 when w made such an id. */
static int seq_id_checked(const sk_write *w, const Objlog__Outcome *o) {
    char want[KEYCODEC_VERSION_ID_LEN];
    const char *got = w->kind == SK_CREATE_UPLOAD ? o->upload_id : o->version_id;
    if (o->code != OBJLOG__OUTCOME_CODE__OUTCOME_OK || !got || !got[0] ||
        strcmp(got, "null") == 0)
        return 0;
    keycodec_version_id(keycodec_seq(SK_EPOCH, w->offset), want);
    if (strcmp(got, want) != 0)
        fail_msg("%s at %d.%lld: id %s, computed %s", kind_names[w->kind], w->partition,
                 (long long)w->offset, got, want);
    return 1;
}

/* Every write's stored outcome in s (present: the log was not truncated
 * below it and it was applied once); codes[i] gets write i's code. */
static void tally_outcomes(objlog_store *s, sk_tally *t, int *codes) {
    char err[256];
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < T.nw; i++) {
        sk_write *w = &T.w[i];
        Objlog__Outcome *o = NULL;
        int rc = objlog_store_get_outcome(s, w->partition, w->offset, &o, err, sizeof(err));
        if (rc != OBJLOG_OUTCOME_FOUND)
            fail_msg("write %zu (%s at %d.%lld): outcome lookup %d %s", i, kind_names[w->kind],
                     w->partition, (long long)w->offset, rc, rc < 0 ? err : "");
        codes[i] = (int)o->code;
        if (o->code == OBJLOG__OUTCOME_CODE__OUTCOME_OK)
            t->ok[w->kind]++;
        else
            t->rejected[w->kind]++;
        t->quota_exceeded += o->code == OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED;
        t->no_such_bucket += o->code == OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET;
        if (w->kind == SK_PUT || w->kind == SK_DELETE || w->kind == SK_CREATE_UPLOAD)
            t->seq_ids += seq_id_checked(w, o);
        objlog__outcome__free_unpacked(o, NULL);
    }
}

static void print_tally(const sk_tally *t) {
    for (int k = 0; k < SK_NKINDS; k++)
        printf("  %-15s ok %5ld  rejected %5ld\n", kind_names[k], t->ok[k], t->rejected[k]);
    printf("  QuotaExceeded %ld, NoSuchBucket %ld, ids checked %ld\n", t->quota_exceeded,
           t->no_such_bucket, t->seq_ids);
}

/* ---- store comparison ---- */

/* The two stores hold the same rows, byte for byte, in every column
 * family; rows[cf] = how many. The stats CF is named in the failure. */
static void compare_stores(objlog_store *a, objlog_store *b, size_t rows[OBJLOG_CF_COUNT]) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    for (int cf = 0; cf < OBJLOG_CF_COUNT; cf++) {
        rocksdb_iterator_t *ia =
            rocksdb_create_iterator_cf(objlog_store_db(a), ro, objlog_store_cf(a, cf));
        rocksdb_iterator_t *ib =
            rocksdb_create_iterator_cf(objlog_store_db(b), ro, objlog_store_cf(b, cf));
        size_t n = 0;
        for (rocksdb_iter_seek_to_first(ia), rocksdb_iter_seek_to_first(ib);
             rocksdb_iter_valid(ia) || rocksdb_iter_valid(ib);
             rocksdb_iter_next(ia), rocksdb_iter_next(ib), n++) {
            if (!rocksdb_iter_valid(ia) || !rocksdb_iter_valid(ib))
                fail_msg("cf %s: the %s store has only %zu rows", objlog_cf_name(cf),
                         rocksdb_iter_valid(ia) ? "replayed" : "killed", n);
            size_t kal, kbl, val, vbl;
            const char *ka = rocksdb_iter_key(ia, &kal), *kb = rocksdb_iter_key(ib, &kbl);
            const char *va = rocksdb_iter_value(ia, &val), *vb = rocksdb_iter_value(ib, &vbl);
            /* The token secret is each view's own (objlog_store_meta_is_local). */
            int local = cf == OBJLOG_CF_META && objlog_store_meta_is_local(ka, kal);
            if (kal != kbl || memcmp(ka, kb, kal) ||
                (!local && (val != vbl || memcmp(va, vb, val))))
                fail_msg("cf %s: row %zu differs between the killed and the replayed view",
                         objlog_cf_name(cf), n);
        }
        rows[cf] = n;
        rocksdb_iter_destroy(ia);
        rocksdb_iter_destroy(ib);
    }
    rocksdb_readoptions_destroy(ro);
}

/* ---- the test ---- */

static void run_workload(void) {
    for (int b = 0; b < SK_BUCKETS; b++)
        create_bucket(b);
    for (int step = 1; step <= SK_OPS; step++) {
        if (step == SK_OPS / 2)
            purge_gone();
        else
            random_step();
        /* Paced in bursts so the view applies while writes keep coming. */
        if (step % 20 == 0)
            usleep(2000);
        if (step == SK_OPS / 3)
            kill_view(1);
        if (step == 2 * SK_OPS / 3)
            kill_view(2);
    }
    assert_int_equal(objlog_producer_flush(T.p, 60000), 0);
    for (size_t i = 0; i < T.nw; i++)
        if (T.w[i].status != OBJLOG_STATUS_LOGGED)
            fail_msg("write %zu (%s) not logged: status %d", i, kind_names[T.w[i].kind],
                     (int)T.w[i].status);
}

static void counters_exact_after_kills_and_replay(void **state) {
    (void)state;
    T.p = new_producer();
    run_workload();
    objlog_producer_destroy(T.p);
    T.p = NULL;
    int64_t end[SK_PARTITIONS];
    acked_ends(end);
    /* Our writes are the whole log: offsets 0..end-1 of each partition,
     * so D2 holding all their outcomes means it replayed from offset 0. */
    size_t with_events = 0, per_part[SK_PARTITIONS] = {0};
    for (size_t i = 0; i < T.nw; i++)
        per_part[T.w[i].partition]++;
    for (int p = 0; p < SK_PARTITIONS; p++) {
        assert_int_equal(per_part[p], end[p]);
        with_events += end[p] > 0;
    }
    printf("%zu writes over %zu partitions\n", T.nw, with_events);
    assert_true(with_events > 0);

    /* The restarted view applies everything, then stops cleanly. */
    wait_caught_up(T.url, end);
    assert_int_equal(proc_stop(T.view, 20000), 0);
    T.view = NULL;
    objlog_store *s1 = open_store(T.data1);
    for (int p = 0; p < SK_PARTITIONS; p++)
        assert_int_equal(objlog_store_applied(s1, p), end[p]);
    stats_recount_summary sum1;
    check_exact(s1, "after two SIGKILLs and restarts", &sum1);
    assert_int_equal(sum1.buckets, SK_END_BUCKETS);
    assert_int_equal(sum1.tenants, SK_END_TENANTS);
    assert_int_equal(sum1.global.f[STATS_BUCKETS], SK_END_BUCKETS);
    assert_int_equal(sum1.tenant_rows, SK_END_TENANT_ROWS);
    assert_int_equal(sum1.globals, SK_END_PART_ROWS);
    int *codes1 = calloc(T.nw, sizeof(int)), *codes2 = calloc(T.nw, sizeof(int));
    assert_non_null(codes1);
    assert_non_null(codes2);
    sk_tally t1, t2;
    tally_outcomes(s1, &t1, codes1);
    print_tally(&t1);
    /* The workload exercised what it claims to. */
    assert_int_equal(t1.ok[SK_CREATE_BUCKET], SK_BUCKETS);
    assert_int_equal(t1.ok[SK_DELETE_BUCKET], 1);
    assert_true(t1.ok[SK_PUT] > 0 && t1.ok[SK_DELETE] > 0 && t1.ok[SK_SET_VERSIONING] > 0);
    /* (S3 answers a delete of a version that is not there with success.) */
    assert_true(t1.ok[SK_DELETE_VERSION] > 0 && t1.seq_ids > 0);
    assert_true(t1.ok[SK_UPLOAD_PART] > 0 && t1.ok[SK_COMPLETE] > 0 && t1.ok[SK_ABORT] > 0);
    assert_true(t1.quota_exceeded > 0 && t1.no_such_bucket > 0);
    assert_true(sum1.global.f[STATS_DELETE_MARKERS] > 0);
    assert_true(sum1.global.f[STATS_NONCURRENT_VERSIONS] > 0);

    /* Replay rebuild: a fresh view on an empty directory, from offset 0. */
    char url2[128];
    proc *view2 = start_view(T.data2, url2, sizeof(url2));
    wait_caught_up(url2, end);
    assert_int_equal(proc_stop(view2, 20000), 0);
    objlog_store *s2 = open_store(T.data2);
    stats_recount_summary sum2;
    check_exact(s2, "after a replay rebuild", &sum2);
    assert_memory_equal(&sum1, &sum2, sizeof(sum1));
    tally_outcomes(s2, &t2, codes2);
    assert_memory_equal(codes1, codes2, T.nw * sizeof(int));
    size_t rows[OBJLOG_CF_COUNT];
    compare_stores(s1, s2, rows);
    assert_int_equal(rows[OBJLOG_CF_STATS],
                     SK_END_BUCKETS + SK_END_TENANT_ROWS + SK_END_PART_ROWS);
    assert_int_equal(rows[OBJLOG_CF_BUCKETS], SK_END_BUCKETS);
    objlog_store_close(s1);
    objlog_store_close(s2);
    free(codes1);
    free(codes2);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counters_exact_after_kills_and_replay),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
