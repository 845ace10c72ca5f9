/* test_apply_feed.c: the change feed as the state machine stages it
 * (materializer/feed.c, SetNotifications in apply.c) against a real
 * RocksDB. A configuration takes effect at its own log position; every
 * OK change that one matches leaves exactly one record per matching
 * configuration, with S3's event name, the key, size, etag, version id and
 * a sequencer whose string order is log order; nothing for a failed
 * event, a change that changed nothing, or a retry; the records are the
 * same whatever the batch boundaries; they go with the outcomes' trim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apply.h"
#include "batch.h"
#include "feed.h"
#include "keycodec.h"
#include "materializer.h"
#include "proc.h"

#define NPARTS 4
#define EPOCH 1
#define DAY_MS (24LL * 3600 * 1000)

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
    apply_batch *b;
    int64_t offset[NPARTS];
    int64_t now;                 /* log time of the next event */
    int one_batch;
    int reuse_rid;               /* the next event repeats the last request id */
    uint8_t rid[16];
} fixture;

static void open_fixture(fixture *f, int one_batch) {
    char err[256];
    memset(f, 0, sizeof(*f));
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, EPOCH);
    f->b = apply_batch_new(f->store, f->rm);
    f->one_batch = one_batch;
    f->now = 1000;
}

static void close_fixture(fixture *f) {
    apply_batch_destroy(f->b);
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
}

static void flush(fixture *f) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(f->store), wo, apply_batch_wb(f->b), &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    apply_batch_written(f->b);
    apply_batch_clear(f->b);
}

static int32_t part_of(fixture *f, const char *bucket) {
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, bucket, strlen(bucket), (const uint8_t *)"", 0);
    int p = rangemap_partition(f->rm, rk.data, rk.len);
    keybuf_free(&rk);
    return p;
}

/* Applies ev; its code, and its version id into vid when not NULL. Every
 * bucket of this test sits in one range, so its keys share a partition. */
static Objlog__OutcomeCode apply(fixture *f, Objlog__Event *ev, char *vid, size_t vn) {
    char err[256];
    int32_t p = part_of(f, ev->bucket);
    int64_t off = f->offset[p]++;
    if (!f->reuse_rid)
        for (int i = 0; i < 16; i++)
            f->rid[i] = (uint8_t)(off * 31 + p * 7 + i);
    f->reuse_rid = 0;
    ev->request_id.data = f->rid;
    ev->request_id.len = 16;
    ev->range_epoch = EPOCH;
    Objlog__OutcomeCode code;
    assert_int_equal(apply_event(f->b, p, off, f->now++, ev, &code, err, sizeof(err)), 0);
    apply_set_applied(f->b, p, off + 1);
    if (!f->one_batch || vid)
        flush(f);
    if (vid) {
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(f->store, p, off, &o, err, sizeof(err)), 1);
        snprintf(vid, vn, "%s", o->version_id);
        objlog__outcome__free_unpacked(o, NULL);
    }
    return code;
}

static Objlog__OutcomeCode create_bucket(fixture *f, const char *bucket, int versioned) {
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.tenant = "alice";
    cb.versioning = versioned ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                              : OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    return apply(f, &ev, NULL, 0);
}

/* Up to four configurations "id|arn|event,event|prefix|suffix". */
static Objlog__OutcomeCode set_notifications(fixture *f, const char *bucket, int n,
                                             const char *const *specs) {
    Objlog__NotifyConfig c[4], *cp[4];
    char buf[4][512];
    char *ev_names[4][8];
    for (int i = 0; i < n; i++) {
        objlog__notify_config__init(&c[i]);
        snprintf(buf[i], sizeof(buf[i]), "%s", specs[i]);
        char *save = NULL;
        char *id = strtok_r(buf[i], "|", &save), *arn = strtok_r(NULL, "|", &save);
        char *evs = strtok_r(NULL, "|", &save), *pre = strtok_r(NULL, "|", &save);
        char *suf = strtok_r(NULL, "|", &save);
        c[i].id = id;
        c[i].arn = arn;
        size_t ne = 0;
        char *s2 = NULL;
        for (char *e = strtok_r(evs, ",", &s2); e && ne < 8; e = strtok_r(NULL, ",", &s2))
            ev_names[i][ne++] = e;
        c[i].n_events = ne;
        c[i].events = ev_names[i];
        if (pre && strcmp(pre, "-") != 0)
            c[i].prefix = (ProtobufCBinaryData){strlen(pre), (uint8_t *)pre};
        if (suf && strcmp(suf, "-") != 0)
            c[i].suffix = (ProtobufCBinaryData){strlen(suf), (uint8_t *)suf};
        cp[i] = &c[i];
    }
    Objlog__SetNotifications sn = OBJLOG__SET_NOTIFICATIONS__INIT;
    sn.n_configs = (size_t)n;
    sn.configs = n ? cp : NULL;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_NOTIFICATIONS;
    ev.set_notifications = &sn;
    return apply(f, &ev, NULL, 0);
}

static Objlog__OutcomeCode put_ex(fixture *f, const char *bucket, const char *key,
                                  const char *etag, uint64_t size, const char *copy_source,
                                  int if_none_match, char *vid, size_t vn) {
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    m.size = size;
    m.etag = (char *)etag;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    po.meta = &m;
    po.copy_source = (char *)(copy_source ? copy_source : "");
    Objlog__Preconditions pre = OBJLOG__PRECONDITIONS__INIT;
    pre.if_none_match = if_none_match;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.pre = &pre;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    return apply(f, &ev, vid, vn);
}

static Objlog__OutcomeCode put(fixture *f, const char *bucket, const char *key) {
    return put_ex(f, bucket, key, "e1", 7, NULL, 0, NULL, 0);
}

static Objlog__OutcomeCode del(fixture *f, const char *bucket, const char *key,
                               const char *vid_in, char *vid, size_t vn) {
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = (char *)(vid_in ? vid_in : "");
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    return apply(f, &ev, vid, vn);
}

static Objlog__OutcomeCode set_tags(fixture *f, const char *bucket, const char *key,
                                    const char *value) {
    Objlog__UserMeta um = OBJLOG__USER_META__INIT, *ump = &um;
    um.name = "t";
    um.value = (char *)value;
    Objlog__SetObjectTags st = OBJLOG__SET_OBJECT_TAGS__INIT;
    st.version_id = "";
    st.n_tags = value ? 1 : 0;
    st.tags = value ? &ump : NULL;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_SET_OBJECT_TAGS;
    ev.set_object_tags = &st;
    return apply(f, &ev, NULL, 0);
}

/* The partition's records, one line each:
 * "OFF.I CONFIG EVENT KEY SIZE ETAG VERSION", in scan order. */
typedef struct lines {
    char buf[16384];
    size_t w;
    int n;
    char last_seq[FEED_SEQUENCER_LEN + 1];
    int64_t first_off;
} lines;

static int collect(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    lines *l = arg;
    assert_int_equal(strlen(r->sequencer), FEED_SEQUENCER_LEN);
    assert_true(strcmp(l->last_seq, r->sequencer) <= 0); /* string order = log order */
    snprintf(l->last_seq, sizeof(l->last_seq), "%s", r->sequencer);
    if (l->n == 0)
        l->first_off = off;
    l->n++;
    if (l->w < sizeof(l->buf) - 256)
        l->w += (size_t)snprintf(l->buf + l->w, sizeof(l->buf) - l->w,
                                 "%lld.%u %s %s %.*s %llu %s %s\n", (long long)off, i,
                                 r->config_id, r->event_name, (int)r->key.len,
                                 (const char *)r->key.data, (unsigned long long)r->size,
                                 r->etag[0] ? r->etag : "-",
                                 r->version_id[0] ? r->version_id : "-");
    return 0;
}

static void feed_of(fixture *f, const char *bucket, lines *l) {
    char err[256] = "";
    if (f->one_batch)
        flush(f);
    memset(l, 0, sizeof(*l));
    long n = objlog_store_feed_scan(f->store, part_of(f, bucket), 0, SIZE_MAX, collect, l,
                                    err, sizeof(err));
    assert_int_equal(n, l->n);
}

static const char *const CFG_ALL[] = {
    "all|arn:objlog:kafka:::feed|s3:ObjectCreated:*,s3:ObjectRemoved:*,"
    "s3:ObjectTagging:*,s3:LifecycleExpiration:*|-|-"};

/* Configurations are validated as the edge validates them; they apply
 * from their own position; a filter picks keys; two configurations that
 * match the same change each get a record. */
static void run_unversioned(fixture *f) {
    assert_int_equal(create_bucket(f, "bu", 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put(f, "bu", "before.jpg"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    const char *bad[] = {"x|arn:objlog:kafka:::t|s3:ObjectNope:*|-|-"};
    assert_int_equal(set_notifications(f, "bu", 1, bad),
                     OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT);
    const char *overlap[] = {"a|arn:objlog:kafka:::t|s3:ObjectCreated:*|img/|-",
                             "b|arn:objlog:kafka:::u|s3:ObjectCreated:Put|-|.jpg"};
    assert_int_equal(set_notifications(f, "bu", 2, overlap),
                     OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT);
    const char *two[] = {"jpg|arn:objlog:kafka:::t|s3:ObjectCreated:*|img/|.jpg",
                         "rm|arn:objlog:webhook:::http%3A%2F%2F127.0.0.1%3A1%2Fh|"
                         "s3:ObjectRemoved:*|-|-"};
    assert_int_equal(set_notifications(f, "bu", 2, two), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put(f, "bu", "img/a.jpg"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put(f, "bu", "img/a.png"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put(f, "bu", "doc/a.jpg"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    /* failed (If-None-Match on an existing key): nothing */
    assert_int_equal(put_ex(f, "bu", "img/a.jpg", "e2", 9, NULL, 1, NULL, 0),
                     OBJLOG__OUTCOME_CODE__OUTCOME_PRECONDITION_FAILED);
    assert_int_equal(put_ex(f, "bu", "img/b.jpg", "e3", 5, "bu/img/a.jpg", 0, NULL, 0),
                     OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    /* a retry of the copy: its stored outcome, no second record */
    f->reuse_rid = 1;
    assert_int_equal(put_ex(f, "bu", "img/b.jpg", "e3", 5, "bu/img/a.jpg", 0, NULL, 0),
                     OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(del(f, "bu", "img/a.png", NULL, NULL, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    /* deleting a missing key changes nothing: no record */
    assert_int_equal(del(f, "bu", "nothing", NULL, NULL, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    lines l;
    feed_of(f, "bu", &l);
    assert_string_equal(l.buf, "5.0 jpg ObjectCreated:Put img/a.jpg 7 e1 -\n"
                               "9.0 jpg ObjectCreated:Copy img/b.jpg 5 e3 -\n"
                               "11.0 rm ObjectRemoved:Delete img/a.png 0 - -\n");
    /* deleted configurations: nothing more */
    assert_int_equal(set_notifications(f, "bu", 0, NULL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put(f, "bu", "img/c.jpg"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    feed_of(f, "bu", &l);
    assert_int_equal(l.n, 3);
    Objlog__BucketRecord *r;
    char err[256];
    assert_int_equal(objlog_store_get_bucket(f->store, "bu", &r, err, sizeof(err)), 1);
    assert_int_equal(r->n_notifications, 0);
    objlog__bucket_record__free_unpacked(r, NULL);
}

static void test_unversioned(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 0);
    run_unversioned(&f);
    close_fixture(&f);
}

/* Versioned: markers, deletes by version id, tags that change or not. */
static void run_versioned(fixture *f, lines *l) {
    assert_int_equal(create_bucket(f, "bv", 1), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(set_notifications(f, "bv", 1, CFG_ALL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    char v1[40], v2[40], m1[40], gone[40];
    assert_int_equal(put_ex(f, "bv", "k", "e1", 7, NULL, 0, v1, sizeof(v1)),
                     OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(put_ex(f, "bv", "k", "e2", 8, NULL, 0, v2, sizeof(v2)),
                     OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(set_tags(f, "bv", "k", "x"), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(set_tags(f, "bv", "k", "x"), OBJLOG__OUTCOME_CODE__OUTCOME_OK); /* same */
    assert_int_equal(set_tags(f, "bv", "k", NULL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(del(f, "bv", "k", NULL, m1, sizeof(m1)), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(del(f, "bv", "k", v1, NULL, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    /* a version that is not there: OK, no change, no record */
    assert_int_equal(del(f, "bv", "k", v1, gone, sizeof(gone)), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    feed_of(f, "bv", l);
    char want[1024];
    snprintf(want, sizeof(want),
             "2.0 all ObjectCreated:Put k 7 e1 %s\n"
             "3.0 all ObjectCreated:Put k 8 e2 %s\n"
             "4.0 all ObjectTagging:Put k 8 e2 %s\n"
             "6.0 all ObjectTagging:Delete k 8 e2 %s\n"
             "7.0 all ObjectRemoved:DeleteMarkerCreated k 0 - %s\n"
             "8.0 all ObjectRemoved:Delete k 0 - %s\n",
             v1, v2, v2, v2, m1, v1);
    assert_string_equal(l->buf, want);
}

static void test_versioned(void **state) {
    (void)state;
    fixture f;
    lines l;
    open_fixture(&f, 0);
    run_versioned(&f, &l);
    close_fixture(&f);
}

/* The same events in one batch leave the same records. */
static void test_batch_boundaries(void **state) {
    (void)state;
    fixture f, g;
    lines a, b;
    open_fixture(&f, 0);
    run_versioned(&f, &a);
    close_fixture(&f);
    open_fixture(&g, 1);
    g.one_batch = 1;
    run_versioned(&g, &b);
    close_fixture(&g);
    assert_string_equal(a.buf, b.buf);
}

/* Lifecycle: what a rule expires is LifecycleExpiration:*. */
static void test_expiration(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 0);
    assert_int_equal(create_bucket(&f, "bl", 1), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(set_notifications(&f, "bl", 1, CFG_ALL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    Objlog__LifecycleRule rule = OBJLOG__LIFECYCLE_RULE__INIT, *rp = &rule;
    rule.id = "r1";
    rule.enabled = 1;
    rule.expiration_days = 1;
    rule.noncurrent_days = 1;
    Objlog__SetLifecycle sl = OBJLOG__SET_LIFECYCLE__INIT;
    sl.n_rules = 1;
    sl.rules = &rp;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "bl";
    ev.op_case = OBJLOG__EVENT__OP_SET_LIFECYCLE;
    ev.set_lifecycle = &sl;
    assert_int_equal(apply(&f, &ev, NULL, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    char v1[40], m[40];
    assert_int_equal(put_ex(&f, "bl", "k", "e1", 7, NULL, 0, v1, sizeof(v1)),
                     OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    uint64_t seq;
    assert_int_equal(keycodec_parse_version_id(v1, &seq), 0);
    f.now += 3 * DAY_MS;
    Objlog__Expire ex = OBJLOG__EXPIRE__INIT;
    ex.rule_id = "r1";
    ex.action = OBJLOG__EXPIRE_ACTION__EXPIRE_CURRENT;
    ex.version_seq = seq;
    Objlog__Event xe = OBJLOG__EVENT__INIT;
    xe.bucket = "bl";
    xe.key.data = (uint8_t *)"k";
    xe.key.len = 1;
    xe.op_case = OBJLOG__EVENT__OP_EXPIRE;
    xe.expire = &ex;
    assert_int_equal(apply(&f, &xe, m, sizeof(m)), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    f.now += 3 * DAY_MS;
    ex.action = OBJLOG__EXPIRE_ACTION__EXPIRE_NONCURRENT;
    assert_int_equal(apply(&f, &xe, NULL, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    lines l;
    feed_of(&f, "bl", &l);
    char want[512];
    snprintf(want, sizeof(want),
             "3.0 all ObjectCreated:Put k 7 e1 %s\n"
             "4.0 all LifecycleExpiration:DeleteMarkerCreated k 0 - %s\n"
             "5.0 all LifecycleExpiration:Delete k 0 - %s\n",
             v1, m, v1);
    assert_string_equal(l.buf, want);
    close_fixture(&f);
}

/* Records go with the outcomes, FEED_TRIM_STEP offsets at a time. */
static void test_trim(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 0);
    apply_batch_set_dedup_limits(f.b, 365 * DAY_MS, 100);
    f.one_batch = 1;
    assert_int_equal(create_bucket(&f, "bt", 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(set_notifications(&f, "bt", 1, CFG_ALL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    for (int i = 0; i < 2200; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i % 50);
        assert_int_equal(put(&f, "bt", k), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
        if (i % 100 == 99)
            flush(&f);
    }
    lines l;
    feed_of(&f, "bt", &l);
    int32_t p = part_of(&f, "bt");
    int64_t low = objlog_store_outcomes_low(f.store, p);
    assert_int_equal(low, 2202 - 100); /* the bound: the last 100 offsets kept */
    assert_int_equal(objlog_store_feed_low(f.store, p), 2048);
    assert_int_equal(l.first_off, 2048);
    assert_int_equal(l.n, 2202 - 2048);
    close_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unversioned),
        cmocka_unit_test(test_versioned),
        cmocka_unit_test(test_batch_boundaries),
        cmocka_unit_test(test_expiration),
        cmocka_unit_test(test_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
