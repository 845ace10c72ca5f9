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

/* ---- blob releases (materializer/blobrefs.c) ---- */

#define BL_IDS 512     /* distinct blob ids at most */
#define BL_VERSIONS 64 /* versions remembered for deletes by id */

/* The blob ids referenced in each partition, read from the version and
 * part rows themselves (not the `blobs` CF the state machine keeps): the
 * oracle the releases are checked against. ref[p][i]: id i referenced. */
typedef struct bl_refs {
    unsigned char ref[NPARTS][BL_IDS];
} bl_refs;

typedef struct bl_world {
    fixture *f;
    char ids[BL_IDS][16];
    int nids;
    int released[NPARTS][BL_IDS];    /* records seen */
    int expected[NPARTS][BL_IDS];    /* times the oracle saw the last ref go */
    char uploads[16][24];            /* upload ids in progress: bucket|key|id */
    char ubucket[16][16], ukey[16][8];
    int nuploads;
    char vers[BL_VERSIONS][40];      /* versions written to the versioned bucket */
    char vkeys[BL_VERSIONS][8];
    int nvers;
    const char *buckets[3];          /* unversioned, versioned, another partition */
} bl_world;

static int bl_index(bl_world *w, const char *id) {
    for (int i = 0; i < w->nids; i++)
        if (strcmp(w->ids[i], id) == 0)
            return i;
    fail_msg("unknown blob id %s", id);
    return -1;
}

static void bl_mark(bl_world *w, bl_refs *r, const uint8_t *k, size_t kn, const char *id) {
    if (!id || !id[0])
        return;
    int p = rangemap_partition(w->f->rm, k, kn);
    assert_true(p >= 0 && p < NPARTS);
    r->ref[p][bl_index(w, id)] = 1;
}

static void bl_oracle(bl_world *w, bl_refs *r) {
    memset(r, 0, sizeof(*r));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    static const objlog_cf cfs[] = {OBJLOG_CF_VERSIONS, OBJLOG_CF_UPLOADS};
    for (int c = 0; c < 2; c++) {
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(w->f->store), ro,
                                                            objlog_store_cf(w->f->store, cfs[c]));
        char last[512];
        size_t lastn = 0;
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kn, vn;
            const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
            const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
            if (cfs[c] == OBJLOG_CF_VERSIONS) {
                if (objlog_versions_row_is_header(k, kn))
                    continue;
                Objlog__VersionRecord *vr = objlog__version_record__unpack(NULL, vn, v);
                assert_non_null(vr);
                if (vr->meta) {
                    bl_mark(w, r, k, kn, vr->meta->blob_id);
                    for (size_t i = 0; i < vr->meta->n_parts; i++)
                        bl_mark(w, r, k, kn, vr->meta->parts[i]->blob_id);
                }
                objlog__version_record__free_unpacked(vr, NULL);
            } else if (lastn && kn == lastn + 4 && memcmp(k, last, lastn) == 0) {
                Objlog__PartRecord *pr = objlog__part_record__unpack(NULL, vn, v);
                assert_non_null(pr);
                bl_mark(w, r, k, kn, pr->blob_id);
                objlog__part_record__free_unpacked(pr, NULL);
            } else {
                assert_true(kn <= sizeof(last));
                memcpy(last, k, kn);
                lastn = kn;
            }
        }
        rocksdb_iter_destroy(it);
    }
    rocksdb_readoptions_destroy(ro);
}

typedef struct bl_scan {
    bl_world *w;
    int32_t p;
    int (*released)[BL_IDS];
} bl_scan;

static int bl_took(void *arg, int64_t off, uint16_t i, const Objlog__FeedRecord *r) {
    (void)off;
    (void)i;
    bl_scan *s = arg;
    if (strcmp(r->event_name, "BlobReleased") != 0)
        return 0;
    assert_string_equal(r->config_id, "");
    assert_int_equal(strlen(r->sequencer), FEED_SEQUENCER_LEN);
    s->released[s->p][bl_index(s->w, r->blob_id)]++;
    return 0;
}

/* Applies ev and checks it against the oracle: the ids whose last
 * reference in a partition went are exactly those the partition's
 * BlobReleased records of this event name. */
static Objlog__OutcomeCode bl_apply(bl_world *w, Objlog__Event *ev, char *out, size_t on,
                                    int upload_id) {
    bl_refs before, after;
    bl_oracle(w, &before);
    int32_t p = part_of(w->f, ev->bucket);
    int64_t off = w->f->offset[p];
    Objlog__OutcomeCode code = apply(w->f, ev, NULL, 0);
    char err[256];
    if (out) {
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(w->f->store, p, off, &o, err, sizeof(err)), 1);
        snprintf(out, on, "%s", upload_id ? o->upload_id : o->version_id);
        objlog__outcome__free_unpacked(o, NULL);
    }
    bl_oracle(w, &after);
    int got[NPARTS][BL_IDS];
    memset(got, 0, sizeof(got));
    bl_scan sc = {w, p, got};
    assert_true(objlog_store_feed_scan(w->f->store, p, off, SIZE_MAX, bl_took, &sc, err,
                                       sizeof(err)) >= 0);
    for (int q = 0; q < NPARTS; q++)
        for (int i = 0; i < w->nids; i++) {
            int want = q == p && before.ref[q][i] && !after.ref[q][i];
            if (got[q][i] != want)
                fail_msg("offset %lld of partition %d (%s): blob %s released %d times, "
                         "expected %d", (long long)off, p, ev->bucket, w->ids[i], got[q][i],
                         want);
            w->released[q][i] += got[q][i];
            w->expected[q][i] += want;
        }
    return code;
}

static const char *bl_new_id(bl_world *w) {
    assert_true(w->nids < BL_IDS);
    snprintf(w->ids[w->nids], sizeof(w->ids[0]), "blob-%04d", w->nids);
    return w->ids[w->nids++];
}

/* An id some row references now (a copy shares it), or a new one. */
static const char *bl_some_id(bl_world *w, unsigned *seed) {
    bl_refs r;
    bl_oracle(w, &r);
    int start = w->nids ? (int)(rand_r(seed) % (unsigned)w->nids) : 0;
    for (int j = 0; j < w->nids; j++) {
        int i = (start + j) % w->nids;
        for (int q = 0; q < NPARTS; q++)
            if (r.ref[q][i])
                return w->ids[i];
    }
    return bl_new_id(w);
}

static Objlog__OutcomeCode bl_put(bl_world *w, const char *bucket, const char *key,
                                  const char *blob) {
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    m.size = 3;
    m.etag = "e";
    m.blob_id = (char *)blob;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    po.meta = &m;
    po.copy_source = "";
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    char vid[40];
    Objlog__OutcomeCode c = bl_apply(w, &ev, vid, sizeof(vid), 0);
    if (c == OBJLOG__OUTCOME_CODE__OUTCOME_OK && bucket == w->buckets[1] &&
        w->nvers < BL_VERSIONS) {
        snprintf(w->vers[w->nvers], sizeof(w->vers[0]), "%s", vid);
        snprintf(w->vkeys[w->nvers++], sizeof(w->vkeys[0]), "%s", key);
    }
    return c;
}

static Objlog__OutcomeCode bl_delete(bl_world *w, const char *bucket, const char *key,
                                     const char *vid) {
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = (char *)(vid ? vid : "");
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    return bl_apply(w, &ev, NULL, 0, 0);
}

static void bl_upload_op(bl_world *w, unsigned *seed) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    int which = (int)(rand_r(seed) % 4);
    if (which == 0 || !w->nuploads) {
        if (w->nuploads == 16)
            return;
        const char *b = w->buckets[rand_r(seed) % 3];
        char key[8];
        snprintf(key, sizeof(key), "m%u", rand_r(seed) % 4);
        Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
        Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
        cu.meta = &m;
        ev.bucket = (char *)b;
        ev.key.data = (uint8_t *)key;
        ev.key.len = strlen(key);
        ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev.create_upload = &cu;
        int u = w->nuploads;
        assert_int_equal(bl_apply(w, &ev, w->uploads[u], sizeof(w->uploads[0]), 1),
                         OBJLOG__OUTCOME_CODE__OUTCOME_OK);
        snprintf(w->ubucket[u], sizeof(w->ubucket[0]), "%s", b);
        snprintf(w->ukey[u], sizeof(w->ukey[0]), "%s", key);
        w->nuploads++;
        return;
    }
    int u = (int)(rand_r(seed) % (unsigned)w->nuploads);
    ev.bucket = w->ubucket[u];
    ev.key.data = (uint8_t *)w->ukey[u];
    ev.key.len = strlen(w->ukey[u]);
    if (which == 1 || which == 2) {
        /* a part (1..3; sent again replaces the first), new bytes or shared */
        Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
        up.upload_id = w->uploads[u];
        up.part_number = 1 + rand_r(seed) % 3;
        up.size = 5 * 1024 * 1024;
        up.etag = "0123456789abcdef0123456789abcdef";
        up.blob_id = (char *)(rand_r(seed) % 3 ? bl_new_id(w) : bl_some_id(w, seed));
        ev.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
        ev.upload_part = &up;
        assert_int_equal(bl_apply(w, &ev, NULL, 0, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
        return;
    }
    /* complete with parts 1 and 2 (the unused part 3 goes), or abort */
    Objlog__CompletedPart cp[2] = {OBJLOG__COMPLETED_PART__INIT, OBJLOG__COMPLETED_PART__INIT};
    Objlog__CompletedPart *cpp[2] = {&cp[0], &cp[1]};
    Objlog__CompleteUpload cu = OBJLOG__COMPLETE_UPLOAD__INIT;
    Objlog__AbortUpload au = OBJLOG__ABORT_UPLOAD__INIT;
    if (rand_r(seed) % 2) {
        for (int i = 0; i < 2; i++) {
            cp[i].part_number = (uint32_t)i + 1;
            cp[i].etag = "0123456789abcdef0123456789abcdef";
        }
        cu.upload_id = w->uploads[u];
        cu.n_parts = 2;
        cu.parts = cpp;
        ev.op_case = OBJLOG__EVENT__OP_COMPLETE_UPLOAD;
        ev.complete_upload = &cu;
    } else {
        au.upload_id = w->uploads[u];
        ev.op_case = OBJLOG__EVENT__OP_ABORT_UPLOAD;
        ev.abort_upload = &au;
    }
    /* an upload without parts 1 and 2 is refused (InvalidPart): nothing goes */
    if (bl_apply(w, &ev, NULL, 0, 0) == OBJLOG__OUTCOME_CODE__OUTCOME_OK ||
        ev.op_case == OBJLOG__EVENT__OP_ABORT_UPLOAD) {
        w->nuploads--;
        memmove(w->uploads[u], w->uploads[u + 1], sizeof(w->uploads[0]) * (size_t)(w->nuploads - u));
        memmove(w->ubucket[u], w->ubucket[u + 1], sizeof(w->ubucket[0]) * (size_t)(w->nuploads - u));
        memmove(w->ukey[u], w->ukey[u + 1], sizeof(w->ukey[0]) * (size_t)(w->nuploads - u));
    }
}

/* The listing: every id once, in byte order. */
typedef struct bl_list {
    bl_world *w;
    int listed[BL_IDS];
    char last[16];
} bl_list;

static int bl_listed(void *arg, const char *id, size_t n) {
    bl_list *l = arg;
    assert_int_equal(strlen(id), n);
    assert_true(strcmp(l->last, id) < 0);
    snprintf(l->last, sizeof(l->last), "%s", id);
    l->listed[bl_index(l->w, id)]++;
    return 0;
}

static int bl_keep_all(void *arg, int32_t p) {
    (void)arg;
    return p >= 0 && p < NPARTS;
}

/* Random writes, copies (shared ids, also into another partition),
 * unversioned overwrites, deletes by version id, markers, parts sent
 * again, completes with an unused part, aborts, a bucket dropped with its
 * uploads: every event's releases equal what the rows themselves say,
 * and at the end the ids released = ids written - ids referenced
 * (objlog_store_blobs_scan), each released as often as its last reference
 * in a partition went. */
static void test_blob_releases(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 0);
    bl_world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->f = &f;
    static char names[3][16];
    int found = 0;
    for (int i = 0; i < 100 && found < 3; i++) {
        char b[16];
        snprintf(b, sizeof(b), "%02d-blobs", i); /* FNV's high bits need early bytes */
        int dup = 0;
        for (int j = 0; j < found; j++)
            dup |= part_of(&f, b) == part_of(&f, names[j]);
        if (!dup)
            snprintf(names[found++], sizeof(names[0]), "%s", b);
    }
    for (int j = 0; j < found; j++)
        w->buckets[j] = names[j];
    assert_non_null(w->buckets[2]);
    assert_int_equal(create_bucket(&f, w->buckets[0], 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(create_bucket(&f, w->buckets[1], 1), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(create_bucket(&f, w->buckets[2], 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    unsigned seed = 20261128;
    for (int step = 0; step < 400; step++) {
        const char *b = w->buckets[rand_r(&seed) % 3];
        char key[8];
        snprintf(key, sizeof(key), "k%u", rand_r(&seed) % 6);
        switch (rand_r(&seed) % 6) {
        case 0:
        case 1:
            assert_int_equal(bl_put(w, b, key, bl_new_id(w)), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
            break;
        case 2: /* a copy, or the same bytes again */
            assert_int_equal(bl_put(w, b, key, bl_some_id(w, &seed)),
                             OBJLOG__OUTCOME_CODE__OUTCOME_OK);
            break;
        case 3:
            assert_int_equal(bl_delete(w, b, key, NULL), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
            break;
        case 4:
            if (w->nvers) {
                int v = (int)(rand_r(&seed) % (unsigned)w->nvers);
                assert_int_equal(bl_delete(w, w->buckets[1], w->vkeys[v], w->vers[v]),
                                 OBJLOG__OUTCOME_CODE__OUTCOME_OK);
            }
            break;
        default:
            bl_upload_op(w, &seed);
        }
    }
    /* A bucket dropped with uploads in progress: their parts' blobs go. */
    assert_int_equal(create_bucket(&f, "bd", 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    w->buckets[0] = "bd";
    w->nuploads = 0;
    for (int i = 0; i < 3; i++)
        bl_upload_op(w, &seed);
    Objlog__Event dev = OBJLOG__EVENT__INIT;
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    dev.bucket = "bd";
    dev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
    dev.delete_bucket = &db;
    assert_int_equal(bl_apply(w, &dev, NULL, 0, 0), OBJLOG__OUTCOME_CODE__OUTCOME_OK);

    /* The end: each (partition, id) released exactly as often as its last
     * reference there went (per event above), every id nothing references
     * released, and the listing is the referenced ids, in byte order. */
    bl_refs now;
    bl_oracle(w, &now);
    char err[256];
    bl_list l = {w, {0}, ""};
    long n = objlog_store_blobs_scan(f.store, f.rm, bl_keep_all, NULL, NULL, SIZE_MAX,
                                     bl_listed, &l, err, sizeof(err));
    int released = 0, by_two = 0, still_held = 0, nrefd = 0;
    for (int i = 0; i < w->nids; i++) {
        int refd = 0, rel = 0;
        for (int q = 0; q < NPARTS; q++) {
            refd |= now.ref[q][i];
            rel += w->released[q][i] > 0;
            assert_int_equal(w->released[q][i], w->expected[q][i]);
        }
        if (!refd && !rel)
            fail_msg("blob %s: referenced nowhere, never released", w->ids[i]);
        assert_int_equal(l.listed[i], refd);
        assert_int_equal(objlog_store_blob_referenced(f.store, f.rm, bl_keep_all, NULL,
                                                      w->ids[i], err, sizeof(err)),
                         refd);
        nrefd += refd;
        released += rel > 0;
        by_two += rel > 1;
        still_held += rel > 0 && refd; /* released by one partition, held by another */
    }
    assert_int_equal(n, nrefd);
    /* A store of format 4 (no `blobs` CF) gets the same rows by upgrade. */
    flush(&f);
    char *dump1 = NULL, *dump2 = NULL;
    size_t d1n = 0, d2n = 0;
    FILE *o = open_memstream(&dump1, &d1n);
    assert_int_equal(objlog_store_dump(f.store, o, err, sizeof(err)), 0);
    fclose(o);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_delete_range_cf(wb, objlog_store_cf(f.store, OBJLOG_CF_BLOBS), "", 0,
                                       "\xff\xff\xff\xff", 4);
    rocksdb_writebatch_put_cf(wb, objlog_store_cf(f.store, OBJLOG_CF_META), "format", 6, "4", 1);
    char *werr = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(f.store), wo, wb, &werr);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_writebatch_destroy(wb);
    assert_null(werr);
    assert_int_equal(objlog_store_blob_referenced(f.store, f.rm, bl_keep_all, NULL, w->ids[0],
                                                  err, sizeof(err)), 0);
    assert_int_equal(objlog_store_upgrade(f.store, f.rm, err, sizeof(err)), 1);
    o = open_memstream(&dump2, &d2n);
    assert_int_equal(objlog_store_dump(f.store, o, err, sizeof(err)), 0);
    fclose(o);
    assert_int_equal(d1n, d2n);
    assert_memory_equal(dump1, dump2, d1n);
    free(dump1);
    free(dump2);
    /* enough happened for the test to mean something */
    assert_true(released > 50);
    assert_true(by_two > 0);
    assert_true(still_held > 0);
    assert_true(nrefd > 10);
    print_message("blob releases: %d ids written, %d released, %d referenced, %d released "
                  "by two partitions, %d released by one and held by another\n",
                  w->nids, released, nrefd, by_two, still_held);
    free(w);
    close_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unversioned),
        cmocka_unit_test(test_versioned),
        cmocka_unit_test(test_batch_boundaries),
        cmocka_unit_test(test_expiration),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_blob_releases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
