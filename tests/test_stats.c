/* test_stats.c: the usage counters of the `stats` CF are exact (issue 6,
 * item 5).
 *
 * Random workloads (4 buckets over 2 tenants, every versioning state, PUTs,
 * deletes, deletes by version id, multipart create/part/complete/abort,
 * quotas, bucket purge + DeleteBucket + re-create) go through the real
 * state machine (apply.c) into a real RocksDB store, in batches of random
 * size. Every few hundred events, and at the end, the counters are
 * compared with a full recount made by scanning `buckets`, `objects`,
 * `versions` and `uploads` (stats_recount.h): every bucket's, tenant's and
 * the global row must be equal, field by field, and no other stats row
 * may exist. Then
 * again after closing and reopening the store, and after replaying the
 * same events into an empty store with other batch boundaries (whose dump
 * must also be byte-identical). Last, tampered stats rows (a counter off
 * by one, a stray row, a missing global row) must fail the check.
 * test_stats_kill.c does the same with real view processes, SIGKILLed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "keycodec.h"
#include "proc.h"
#include "rangemap.h"
#include "stats_recount.h"

#define N_EVENTS 6000
#define N_BUCKETS 4
#define N_KEYS 6
#define MAX_UPLOADS 64
#define MIB (1024ULL * 1024)

static const char *const bucket_names[N_BUCKETS] = {"bk0", "bk1", "bk2", "bk3"};
static const char *const key_names[N_KEYS] = {"a", "a/b", "b", "c/d", "e", "\xc3\xa9"};
static const char *const tenant_names[2] = {"t1", "t2"};

typedef struct upload {
    int live;
    int bucket, key;
    char id[KEYCODEC_VERSION_ID_LEN];
    int nparts;
} upload;

typedef struct logged {
    uint8_t *data;
    size_t len;
} logged;

typedef struct world {
    char dir[256];
    objlog_store *store;
    rangemap *rm;
    apply_batch *batch;
    int64_t offset;
    int in_batch;
    uint64_t rng;
    upload ups[MAX_UPLOADS];
    logged *log;
    size_t nlog;
    long ok, rejected, quota_exceeded, buckets_deleted, completes;
} world;

static uint64_t rnd(world *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* ---- driving apply.c ---- */

static void flush(world *w) {
    if (w->in_batch == 0)
        return;
    apply_set_applied(w->batch, 0, w->offset);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write_writebatch_wi(objlog_store_db(w->store), wo, apply_batch_wb(w->batch), &err);
    rocksdb_writeoptions_destroy(wo);
    if (err)
        fail_msg("write: %s", err);
    apply_batch_clear(w->batch);
    w->in_batch = 0;
}

/* Applies one packed event at w->offset into the current batch. */
static Objlog__OutcomeCode apply_packed(world *w, const uint8_t *data, size_t len) {
    char err[512];
    Objlog__OutcomeCode code;
    Objlog__Event *ev = apply_decode(data, len, err, sizeof(err));
    if (!ev)
        fail_msg("decode: %s", err);
    if (apply_event(w->batch, 0, w->offset, 1000 + w->offset, ev, &code, err, sizeof(err)) != 0)
        fail_msg("apply: %s", err);
    objlog__event__free_unpacked(ev, NULL);
    w->offset++;
    w->in_batch++;
    return code;
}

/* Packs ev (with a fresh request id), logs it, applies it. A random batch
 * boundary follows, so later events read earlier ones through the batch. */
static Objlog__OutcomeCode emit(world *w, Objlog__Event *ev) {
    uint8_t rid[16];
    for (int i = 0; i < 16; i++)
        rid[i] = (uint8_t)rnd(w);
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    ev->range_epoch = 1;
    size_t n = objlog__event__get_packed_size(ev);
    uint8_t *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    objlog__event__pack(ev, buf);
    logged *l = realloc(w->log, (w->nlog + 1) * sizeof(*l));
    assert_non_null(l);
    w->log = l;
    w->log[w->nlog].data = buf;
    w->log[w->nlog++].len = n;
    Objlog__OutcomeCode code = apply_packed(w, buf, n);
    if (rnd(w) % 8 == 0)
        flush(w);
    if (code == OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        w->ok++;
    else
        w->rejected++;
    if (code == OBJLOG__OUTCOME_CODE__OUTCOME_QUOTA_EXCEEDED)
        w->quota_exceeded++;
    return code;
}

static void ev_init(Objlog__Event *ev, int bucket, int key) {
    Objlog__Event init = OBJLOG__EVENT__INIT;
    *ev = init;
    ev->bucket = (char *)bucket_names[bucket];
    if (key >= 0) {
        ev->key.data = (uint8_t *)key_names[key];
        ev->key.len = strlen(key_names[key]);
    }
}

static void create_bucket(world *w, int b) {
    Objlog__Event ev;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    ev_init(&ev, b, -1);
    cb.tenant = (char *)tenant_names[rnd(w) % 2];
    cb.versioning = (Objlog__Versioning)(rnd(w) % 2);
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    emit(w, &ev);
}

static void set_versioning(world *w, int b) {
    Objlog__Event ev;
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    ev_init(&ev, b, -1);
    sv.status = rnd(w) % 2 ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                           : OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
    ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
    ev.set_versioning = &sv;
    emit(w, &ev);
}

static void set_quota(world *w, int b) {
    Objlog__Event ev;
    Objlog__SetQuota sq = OBJLOG__SET_QUOTA__INIT;
    Objlog__Quota q = OBJLOG__QUOTA__INIT;
    ev_init(&ev, b, -1);
    uint64_t r = rnd(w) % 3;
    q.max_objects = r == 0 ? 0 : 2 + rnd(w) % 4;
    q.max_bytes = r == 1 ? 0 : 20000 + rnd(w) % 40000;
    if (rnd(w) % 2) /* unlimited half of the time */
        q.max_objects = q.max_bytes = 0;
    sq.quota = &q;
    ev.op_case = OBJLOG__EVENT__OP_SET_QUOTA;
    ev.set_quota = &sq;
    emit(w, &ev);
}

static void put(world *w, int b, int k) {
    Objlog__Event ev;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    ev_init(&ev, b, k);
    meta.size = rnd(w) % 5000;
    meta.etag = "0123456789abcdef0123456789abcdef";
    po.meta = &meta;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    emit(w, &ev);
}

static void delete_object(world *w, int b, int k, const char *vid) {
    Objlog__Event ev;
    Objlog__DeleteObject del = OBJLOG__DELETE_OBJECT__INIT;
    ev_init(&ev, b, k);
    del.version_id = (char *)(vid ? vid : "");
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &del;
    emit(w, &ev);
}

/* A version id the key has (or had), read from the store as it is now;
 * sometimes "null" or a made-up one. */
static void delete_some_version(world *w, int b, int k) {
    flush(w);
    keybuf rk;
    keybuf_init(&rk);
    assert_int_equal(keycodec_route_key(&rk, bucket_names[b], strlen(bucket_names[b]),
                                        (const uint8_t *)key_names[k], strlen(key_names[k])),
                     0);
    char vid[KEYCODEC_VERSION_ID_LEN] = "null";
    uint64_t pick = rnd(w) % 4;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(
        objlog_store_db(w->store), ro, objlog_store_cf(w->store, OBJLOG_CF_VERSIONS));
    for (rocksdb_iter_seek(it, (const char *)rk.data, rk.len); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *key = rocksdb_iter_key(it, &kn);
        if (kn < rk.len || memcmp(key, rk.data, rk.len))
            break;
        if (kn == rk.len)
            continue;
        const char *v = rocksdb_iter_value(it, &vn);
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (const uint8_t *)v);
        assert_non_null(r);
        snprintf(vid, sizeof(vid), "%s", r->version_id);
        objlog__version_record__free_unpacked(r, NULL);
        if (pick-- == 0)
            break;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
    delete_object(w, b, k, rnd(w) % 10 == 0 ? "00000000000000aa" : vid);
}

static upload *free_upload(world *w) {
    for (int i = 0; i < MAX_UPLOADS; i++)
        if (!w->ups[i].live)
            return &w->ups[i];
    return NULL;
}

static upload *some_upload(world *w, int b) {
    int start = (int)(rnd(w) % MAX_UPLOADS);
    for (int i = 0; i < MAX_UPLOADS; i++) {
        upload *u = &w->ups[(start + i) % MAX_UPLOADS];
        if (u->live && u->bucket == b)
            return u;
    }
    return NULL;
}

static void create_upload(world *w, int b, int k) {
    upload *u = free_upload(w);
    if (!u)
        return;
    Objlog__Event ev;
    Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
    ev_init(&ev, b, k);
    ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
    ev.create_upload = &cu;
    char id[KEYCODEC_VERSION_ID_LEN];
    keycodec_version_id(keycodec_seq(1, w->offset), id);
    if (emit(w, &ev) != OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        return;
    memset(u, 0, sizeof(*u));
    u->live = 1;
    u->bucket = b;
    u->key = k;
    snprintf(u->id, sizeof(u->id), "%s", id);
}

/* Parts are 5 MiB + a little except sometimes a small one (which makes a
 * later Complete EntityTooSmall); part numbers repeat (replacement). */
static void upload_part(world *w, upload *u) {
    Objlog__Event ev;
    Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
    ev_init(&ev, u->bucket, u->key);
    up.upload_id = u->id;
    up.part_number = (uint32_t)(1 + rnd(w) % 3);
    up.size = rnd(w) % 6 == 0 ? rnd(w) % 1000 : 5 * MIB + rnd(w) % 1000;
    up.etag = "00112233445566778899aabbccddeeff";
    ev.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
    ev.upload_part = &up;
    if (emit(w, &ev) == OBJLOG__OUTCOME_CODE__OUTCOME_OK && up.part_number > (uint32_t)u->nparts)
        u->nparts = (int)up.part_number;
}

static void complete_upload(world *w, upload *u) {
    Objlog__Event ev;
    Objlog__CompleteUpload cu = OBJLOG__COMPLETE_UPLOAD__INIT;
    Objlog__CompletedPart parts[3], *pp[3];
    ev_init(&ev, u->bucket, u->key);
    int n = u->nparts ? u->nparts : 1;
    for (int i = 0; i < n; i++) {
        Objlog__CompletedPart init = OBJLOG__COMPLETED_PART__INIT;
        parts[i] = init;
        parts[i].part_number = (uint32_t)(i + 1);
        parts[i].etag = "00112233445566778899aabbccddeeff";
        pp[i] = &parts[i];
    }
    cu.upload_id = u->id;
    cu.n_parts = (size_t)n;
    cu.parts = pp;
    ev.op_case = OBJLOG__EVENT__OP_COMPLETE_UPLOAD;
    ev.complete_upload = &cu;
    if (emit(w, &ev) == OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        u->live = 0;
        w->completes++;
    }
}

static void abort_upload(world *w, upload *u) {
    Objlog__Event ev;
    Objlog__AbortUpload au = OBJLOG__ABORT_UPLOAD__INIT;
    ev_init(&ev, u->bucket, u->key);
    au.upload_id = u->id;
    ev.op_case = OBJLOG__EVENT__OP_ABORT_UPLOAD;
    ev.abort_upload = &au;
    emit(w, &ev);
    u->live = 0;
}

/* Empties a bucket (every version by id, every upload aborted), deletes
 * it and creates it again, maybe for the other tenant. */
static void purge_bucket(world *w, int b) {
    for (int k = 0; k < N_KEYS; k++)
        for (int i = 0; i < 40; i++)
            delete_some_version(w, b, k);
    for (int i = 0; i < MAX_UPLOADS; i++)
        if (w->ups[i].live && w->ups[i].bucket == b)
            abort_upload(w, &w->ups[i]);
    Objlog__Event ev;
    Objlog__DeleteBucket db = OBJLOG__DELETE_BUCKET__INIT;
    ev_init(&ev, b, -1);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_BUCKET;
    ev.delete_bucket = &db;
    if (emit(w, &ev) == OBJLOG__OUTCOME_CODE__OUTCOME_OK)
        w->buckets_deleted++;
    if (rnd(w) % 4)
        create_bucket(w, b);
}

static void random_event(world *w) {
    int b = (int)(rnd(w) % N_BUCKETS), k = (int)(rnd(w) % N_KEYS);
    uint64_t r = rnd(w) % 100;
    upload *u;
    if (r < 2)
        create_bucket(w, b); /* mostly BucketAlreadyExists */
    else if (r < 6)
        set_versioning(w, b);
    else if (r < 8)
        set_quota(w, b);
    else if (r < 40)
        put(w, b, k);
    else if (r < 55)
        delete_object(w, b, k, NULL);
    else if (r < 67)
        delete_some_version(w, b, k);
    else if (r < 72)
        create_upload(w, b, k);
    else if (r < 84 && (u = some_upload(w, b)))
        upload_part(w, u);
    else if (r < 91 && (u = some_upload(w, b)))
        complete_upload(w, u);
    else if (r < 94 && (u = some_upload(w, b)))
        abort_upload(w, u);
    else if (r == 99 && rnd(w) % 4 == 0)
        purge_bucket(w, b);
    else
        put(w, b, k);
}

/* ---- the recount (stats_recount.c) ---- */

/* The stored counters equal the recount exactly; no stray stats rows. */
static void check_exact(objlog_store *s, const char *when) {
    char err[512];
    stats_recount_summary sum;
    if (stats_recount_check(s, &sum, err, sizeof(err)) != 0)
        fail_msg("%s: %s", when, err);
    /* The check covered something, and the global row counts exactly the
     * bucket rows it compared: 'g' + one row per bucket and tenant. */
    assert_in_range(sum.buckets, 1, N_BUCKETS);
    assert_in_range(sum.tenants, 1, 2);
    assert_int_equal(sum.global.f[STATS_BUCKETS], sum.buckets);
    assert_int_equal(sum.rows, sum.buckets + sum.tenants + 1);
}

/* ---- the check can fail ---- */

static void put_stats_row(objlog_store *s, const void *k, size_t kn, const void *v, size_t vn) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    if (v)
        rocksdb_put_cf(objlog_store_db(s), wo, objlog_store_cf(s, OBJLOG_CF_STATS), k, kn, v, vn,
                       &err);
    else
        rocksdb_delete_cf(objlog_store_db(s), wo, objlog_store_cf(s, OBJLOG_CF_STATS), k, kn,
                          &err);
    rocksdb_writeoptions_destroy(wo);
    if (err)
        fail_msg("stats row: %s", err);
}

static void expect_mismatch(objlog_store *s, const char *want) {
    char err[512] = "";
    assert_int_equal(stats_recount_check(s, NULL, err, sizeof(err)), -1);
    if (!strstr(err, want))
        fail_msg("recount error \"%s\" does not say \"%s\"", err, want);
}

/* Tampered stats rows are caught, and the error names row and field:
 * a counter off by one, a missing global row, a stray row. */
static void recount_catches_tampering(objlog_store *s) {
    keybuf k;
    stats_usage u;
    char err[256], want[96];
    keybuf_init(&k);
    const char *name = NULL;
    for (int b = 0; b < N_BUCKETS && !name; b++) {
        assert_int_equal(objlog_stats_bucket_key(&k, bucket_names[b], 3), 0);
        if (stats_recount_stored(s, &k, &u, err, sizeof(err)) == 1)
            name = bucket_names[b];
    }
    assert_non_null(name);
    size_t vn;
    char *verr = NULL;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_STATS),
                             (const char *)k.data, k.len, &vn, &verr);
    rocksdb_readoptions_destroy(ro);
    assert_null(verr);
    assert_non_null(v);
    Objlog__UsageStats *us = objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v);
    assert_non_null(us);
    us->delete_markers++;
    uint8_t buf[256];
    size_t n = objlog__usage_stats__pack(us, buf);
    snprintf(want, sizeof(want), "bucket %s: delete_markers stored %llu, recount %llu", name,
             (unsigned long long)us->delete_markers,
             (unsigned long long)us->delete_markers - 1);
    objlog__usage_stats__free_unpacked(us, NULL);
    put_stats_row(s, k.data, k.len, buf, n);
    expect_mismatch(s, want);
    put_stats_row(s, k.data, k.len, v, vn); /* restored */
    rocksdb_free(v);

    put_stats_row(s, "zz", 2, "", 0);
    expect_mismatch(s, "the stats CF holds");
    put_stats_row(s, "zz", 2, NULL, 0);

    assert_int_equal(objlog_stats_global_key(&k), 0);
    assert_int_equal(stats_recount_stored(s, &k, &u, err, sizeof(err)), 1);
    put_stats_row(s, k.data, k.len, NULL, 0);
    expect_mismatch(s, "global: ");
    keybuf_free(&k);
}

/* ---- the test ---- */

static void open_world(world *w) {
    char err[512];
    w->store = objlog_store_open(w->dir, err, sizeof(err));
    if (!w->store)
        fail_msg("%s", err);
    w->batch = apply_batch_new(w->store, w->rm);
    assert_non_null(w->batch);
}

static void close_world(world *w) {
    apply_batch_destroy(w->batch);
    w->batch = NULL;
    objlog_store_close(w->store);
    w->store = NULL;
}

static void dump_to(objlog_store *s, char *buf, size_t size) {
    FILE *f = fopen(buf, "w");
    char err[256];
    assert_non_null(f);
    (void)size;
    if (objlog_store_dump(s, f, err, sizeof(err)) != 0)
        fail_msg("dump: %s", err);
    fclose(f);
}

static int files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    assert_non_null(fa);
    assert_non_null(fb);
    int ca, cb, eq = 1;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        if (ca != cb)
            eq = 0;
    } while (eq && ca != EOF);
    fclose(fa);
    fclose(fb);
    return eq;
}

static void counters_equal_a_recount(void **state) {
    world *w = *state;
    open_world(w);
    for (int b = 0; b < N_BUCKETS; b++)
        create_bucket(w, b);
    while (w->nlog < N_EVENTS) {
        random_event(w);
        if (w->nlog % 500 == 0) {
            flush(w);
            check_exact(w->store, "during the workload");
        }
    }
    flush(w);
    check_exact(w->store, "after the workload");
    printf("stats test: %zu events, %ld ok, %ld rejected (%ld QuotaExceeded), "
           "%ld completes, %ld buckets deleted\n",
           w->nlog, w->ok, w->rejected, w->quota_exceeded, w->completes, w->buckets_deleted);
    /* the workload must really exercise what it claims to */
    assert_true(w->quota_exceeded > 0);
    assert_true(w->completes > 0);
    assert_true(w->buckets_deleted > 0);

    /* restart: close and reopen the same store */
    char dump1[300], dump2[300];
    snprintf(dump1, sizeof(dump1), "%s.dump1", w->dir);
    snprintf(dump2, sizeof(dump2), "%s.dump2", w->dir);
    close_world(w);
    open_world(w);
    check_exact(w->store, "after a restart");
    dump_to(w->store, dump1, sizeof(dump1));
    close_world(w);

    /* replay rebuild: the same events into an empty store, one batch of
     * 97 at a time (other boundaries than the first run) */
    char first[256];
    snprintf(first, sizeof(first), "%s", w->dir);
    assert_int_equal(proc_tmpdir(w->dir, sizeof(w->dir)), 0);
    open_world(w);
    w->offset = 0;
    for (size_t i = 0; i < w->nlog; i++) {
        apply_packed(w, w->log[i].data, w->log[i].len);
        if (w->in_batch == 97)
            flush(w);
    }
    flush(w);
    check_exact(w->store, "after a replay rebuild");
    dump_to(w->store, dump2, sizeof(dump2));
    recount_catches_tampering(w->store);
    close_world(w);
    assert_true(files_equal(dump1, dump2));
    remove(dump1);
    remove(dump2);
    proc_rmtree(first);
}

static int setup(void **state) {
    static world w;
    memset(&w, 0, sizeof(w));
    w.rng = 0x9E3779B97F4A7C15ULL;
    assert_int_equal(proc_tmpdir(w.dir, sizeof(w.dir)), 0);
    w.rm = rangemap_new_default(1, 1);
    *state = &w;
    return 0;
}

static int teardown(void **state) {
    world *w = *state;
    if (w->batch)
        close_world(w);
    rangemap_destroy(w->rm);
    proc_rmtree(w->dir);
    for (size_t i = 0; i < w->nlog; i++)
        free(w->log[i].data);
    free(w->log);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counters_equal_a_recount, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
