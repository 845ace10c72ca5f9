/* test_stats.c: the usage counters of the `stats` CF are exact.
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
#include "view.h"

#define N_EVENTS 6000
#define N_BUCKETS 4
#define N_KEYS 6
#define MAX_UPLOADS 64
#define MIB (1024ULL * 1024)

/* Names whose bucket hashes fall in partitions 0, 1, 2 and 3 of the
 * default 4-partition map (checked in counters_equal_a_recount), so that
 * rows of every partition exist and a tenant's buckets span several. */
#define N_PARTS 4
static const char *const bucket_names[N_BUCKETS] = {"echo", "delta", "bravo", "foxtrot"};
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
    int64_t offset[N_PARTS];     /* next offset of each partition */
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
    for (int p = 0; p < N_PARTS; p++)
        if (w->offset[p] > 0)
            apply_set_applied(w->batch, p, w->offset[p]);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(w->store), wo, apply_batch_wb(w->batch), &err);
    rocksdb_writeoptions_destroy(wo);
    if (err)
        fail_msg("write: %s", err);
    apply_batch_written(w->batch);
    apply_batch_clear(w->batch);
    w->in_batch = 0;
}

/* The partition an event goes to: its route key's (a producer's choice). */
static int32_t event_partition(const world *w, const Objlog__Event *ev) {
    keybuf rk;
    keybuf_init(&rk);
    assert_int_equal(keycodec_route_key(&rk, ev->bucket, strlen(ev->bucket), ev->key.data,
                                        ev->key.len), 0);
    int32_t p = rangemap_partition(w->rm, rk.data, rk.len);
    keybuf_free(&rk);
    return p;
}

/* Applies one packed event at its partition's next offset into the
 * current batch. */
static Objlog__OutcomeCode apply_packed(world *w, const uint8_t *data, size_t len) {
    char err[512];
    Objlog__OutcomeCode code;
    Objlog__Event *ev = apply_decode(data, len, err, sizeof(err));
    if (!ev)
        fail_msg("decode: %s", err);
    int32_t p = event_partition(w, ev);
    int64_t off = w->offset[p]++;
    if (apply_event(w->batch, p, off, 1000 + off, ev, &code, err, sizeof(err)) != 0)
        fail_msg("apply: %s", err);
    objlog__event__free_unpacked(ev, NULL);
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
    keycodec_version_id(keycodec_seq(1, w->offset[event_partition(w, &ev)]), id);
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
static void check_exact(objlog_store *s, const rangemap *rm, const char *when,
                        stats_recount_summary *sum) {
    char err[512];
    if (stats_recount_check(s, rm, sum, err, sizeof(err)) != 0)
        fail_msg("%s: %s", when, err);
    /* The check covered something: one row per bucket, per tenant and
     * partition it has a bucket on, per partition with a bucket; the
     * partitions' sums count exactly the buckets compared. */
    assert_in_range(sum->buckets, 1, N_BUCKETS);
    assert_in_range(sum->tenants, 1, 2);
    assert_in_range(sum->tenant_rows, sum->tenants, sum->buckets);
    assert_in_range(sum->globals, 1, sum->buckets);
    assert_int_equal(sum->global.f[STATS_BUCKETS], sum->buckets);
    assert_int_equal(sum->rows, sum->buckets + sum->tenant_rows + sum->globals);
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

static const rangemap *g_rm; /* the world's, for the checks below */

static void expect_mismatch(objlog_store *s, const char *want) {
    char err[512] = "";
    assert_int_equal(stats_recount_check(s, g_rm, NULL, err, sizeof(err)), -1);
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
        assert_int_equal(objlog_stats_bucket_key(&k, bucket_names[b], strlen(bucket_names[b])),
                         0);
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
    expect_mismatch(s, "a stats row (first byte 'z', 2 bytes) names no partition");
    put_stats_row(s, "zz", 2, NULL, 0);
    assert_int_equal(objlog_stats_tenant_key(&k, "nobody", 1), 0);
    put_stats_row(s, k.data, k.len, "", 0);
    expect_mismatch(s, "the stats CF holds");
    put_stats_row(s, k.data, k.len, NULL, 0);

    /* a row of the right kind but of another partition than its bucket's */
    int32_t gp = -1;
    for (int32_t p = 0; p < N_PARTS && gp < 0; p++) {
        assert_int_equal(objlog_stats_global_key(&k, p), 0);
        if (stats_recount_stored(s, &k, &u, err, sizeof(err)) == 1)
            gp = p;
    }
    assert_true(gp >= 0);
    put_stats_row(s, k.data, k.len, NULL, 0);
    snprintf(want, sizeof(want), "global partition %d: stats row missing", (int)gp);
    expect_mismatch(s, want);
    keybuf_free(&k);
}

/* ---- readers sum sets of partitions (view.h) ---- */

static void usage_equal(const view_usage *got, const stats_usage *want, const char *what) {
    const uint64_t g[STATS_NFIELDS] = {got->objects, got->bytes, got->versions,
                                       got->version_bytes, got->noncurrent_versions,
                                       got->noncurrent_bytes, got->delete_markers,
                                       got->uploads, got->upload_part_bytes, got->buckets};
    for (int f = 0; f < STATS_NFIELDS; f++)
        if (g[f] != want->f[f])
            fail_msg("%s: %s read %llu, recount %llu", what, stats_field_name(f),
                     (unsigned long long)g[f], (unsigned long long)want->f[f]);
}

static void usage_plus(stats_usage *to, const view_usage *u) {
    const uint64_t g[STATS_NFIELDS] = {u->objects, u->bytes, u->versions, u->version_bytes,
                                       u->noncurrent_versions, u->noncurrent_bytes,
                                       u->delete_markers, u->uploads, u->upload_part_bytes,
                                       u->buckets};
    for (int f = 0; f < STATS_NFIELDS; f++)
        to->f[f] += g[f];
}

/* The global and tenant sums over every partition equal the recount, and
 * equal the sums of the per-partition answers (what a cluster adds up);
 * the distinct tenant count of a union comes from the names. */
static void views_add_up(objlog_store *s, const rangemap *rm, const stats_recount_summary *sum) {
    char err[256];
    unsigned char all[N_PARTS], one[N_PARTS];
    memset(all, 1, sizeof(all));
    view_partset ps_all = {all, N_PARTS, rm}, ps_one = {one, N_PARTS, rm};
    view *v = view_open(s);
    assert_non_null(v);
    view_usage u;
    uint64_t tenants;
    assert_int_equal(view_global_usage(v, &ps_all, &u, &tenants, NULL, 0, err, sizeof(err)),
                     VIEW_OK);
    usage_equal(&u, &sum->global, "global, every partition");
    assert_int_equal(tenants, sum->tenants);

    /* per partition, added up; names of two halves, deduplicated */
    stats_usage g = {{0}}, t_all[2] = {{{0}}}, t_sum[2] = {{{0}}};
    char *seen[2 * N_PARTS];
    size_t nseen = 0;
    for (int p = 0; p < N_PARTS; p++) {
        memset(one, 0, sizeof(one));
        one[p] = 1;
        char **names;
        assert_int_equal(view_global_usage(v, &ps_one, &u, &tenants, &names, 2, err,
                                           sizeof(err)), VIEW_OK);
        usage_plus(&g, &u);
        for (uint64_t i = 0; i < tenants; i++) {
            int dup = 0;
            for (size_t j = 0; j < nseen; j++)
                dup |= strcmp(seen[j], names[i]) == 0;
            if (!dup)
                seen[nseen++] = strdup(names[i]);
        }
        view_names_free(names, (size_t)tenants);
        for (int t = 0; t < 2; t++) {
            assert_int_equal(view_tenant_usage(v, tenant_names[t], &ps_one, &u, err,
                                               sizeof(err)), VIEW_OK);
            usage_plus(&t_sum[t], &u);
        }
    }
    for (int f = 0; f < STATS_NFIELDS; f++)
        assert_int_equal(g.f[f], sum->global.f[f]);
    assert_int_equal(nseen, sum->tenants);
    for (size_t j = 0; j < nseen; j++)
        free(seen[j]);
    /* every bucket has tenant t1 or t2: their sums are the global sums */
    stats_usage both = {{0}};
    for (int t = 0; t < 2; t++) {
        assert_int_equal(view_tenant_usage(v, tenant_names[t], &ps_all, &u, err, sizeof(err)),
                         VIEW_OK);
        usage_plus(&t_all[t], &u);
        usage_plus(&both, &u);
        usage_equal(&u, &t_sum[t], tenant_names[t]);
    }
    for (int f = 0; f < STATS_NFIELDS; f++)
        assert_int_equal(both.f[f], sum->global.f[f]);
    /* the names are bounded: one allowed, two exist */
    char **names = NULL;
    if (sum->tenants == 2)
        assert_int_equal(view_global_usage(v, &ps_all, &u, &tenants, &names, 1, err,
                                           sizeof(err)), VIEW_TOO_MANY);
    /* top: every bucket once, over all partitions as over each */
    view_top top;
    size_t listed = 0;
    assert_int_equal(view_top_buckets(v, &ps_all, VIEW_TOP_BYTES, N_BUCKETS, &top, err,
                                      sizeof(err)), VIEW_OK);
    assert_int_equal(top.n, sum->buckets);
    view_top_free(&top);
    for (int p = 0; p < N_PARTS; p++) {
        memset(one, 0, sizeof(one));
        one[p] = 1;
        assert_int_equal(view_top_buckets(v, &ps_one, VIEW_TOP_BYTES, N_BUCKETS, &top, err,
                                          sizeof(err)), VIEW_OK);
        for (size_t i = 0; i < top.n; i++) {
            keybuf k;
            keybuf_init(&k);
            assert_int_equal(objlog_stats_bucket_key(&k, top.e[i].bucket,
                                                     strlen(top.e[i].bucket)), 0);
            assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), p);
            keybuf_free(&k);
        }
        listed += top.n;
        view_top_free(&top);
    }
    assert_int_equal(listed, sum->buckets);
    view_close(v);
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

/* ---- format 1 stores (before per-partition rows) are upgraded ---- */

static void expect_upgrade_refused(objlog_store *s, const rangemap *rm, const char *want) {
    char err[1024] = "";
    assert_int_equal(objlog_store_upgrade(s, rm, err, sizeof(err)), -1);
    if (!strstr(err, want) || !strstr(err, "start it with an empty --data"))
        fail_msg("upgrade error \"%s\" does not say \"%s\" and how to rebuild", err, want);
    assert_int_equal(objlog_store_format(s), 1);
}

/* The store as a format-1 objlogd left it (rows from the recount, not
 * from the store's own format-2 rows), reopened: it is format 1 until
 * upgraded, an old store whose rows disagree with its buckets' is
 * refused, and the upgrade leaves a store byte-identical (dump) to a
 * replay of the log into an empty store (want_dump). */
static void format1_upgrades_to_a_replay(world *w, const char *want_dump) {
    char err[1024], got_dump[300];
    stats_recount_summary sum;
    assert_int_equal(objlog_store_format(w->store), OBJLOG_STORE_FORMAT);
    if (stats_recount_write_format1(w->store, w->rm, err, sizeof(err)) != 0)
        fail_msg("format 1: %s", err);
    close_world(w);
    open_world(w);
    assert_int_equal(objlog_store_format(w->store), 1);
    assert_int_equal(stats_recount_check(w->store, w->rm, NULL, err, sizeof(err)), -1);

    /* a tenant row off by one: refused, nothing written */
    keybuf k;
    keybuf_init(&k);
    stats_usage u;
    const char *tenant = NULL;
    for (int t = 0; t < 2 && !tenant; t++) {
        assert_int_equal(objlog_stats_tenant_prefix(&k, tenant_names[t]), 0);
        if (stats_recount_stored(w->store, &k, &u, err, sizeof(err)) == 1)
            tenant = tenant_names[t];
    }
    assert_non_null(tenant);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t vn;
    char *verr = NULL;
    char *v = rocksdb_get_cf(objlog_store_db(w->store), ro,
                             objlog_store_cf(w->store, OBJLOG_CF_STATS), (const char *)k.data,
                             k.len, &vn, &verr);
    rocksdb_readoptions_destroy(ro);
    assert_non_null(v);
    Objlog__UsageStats *us = objlog__usage_stats__unpack(NULL, vn, (const uint8_t *)v);
    assert_non_null(us);
    us->objects++;
    uint8_t buf[256];
    put_stats_row(w->store, k.data, k.len, buf, objlog__usage_stats__pack(us, buf));
    objlog__usage_stats__free_unpacked(us, NULL);
    char want[96];
    snprintf(want, sizeof(want), "tenant \"%s\" row disagrees", tenant);
    expect_upgrade_refused(w->store, w->rm, want);
    put_stats_row(w->store, k.data, k.len, v, vn); /* restored */
    rocksdb_free(v);
    /* a tenant row with no bucket behind it */
    assert_int_equal(objlog_stats_tenant_prefix(&k, "gone"), 0);
    put_stats_row(w->store, k.data, k.len, "", 0);
    expect_upgrade_refused(w->store, w->rm, "tenant rows for");
    put_stats_row(w->store, k.data, k.len, NULL, 0);
    keybuf_free(&k);

    /* the upgrade: exact, once */
    assert_int_equal(objlog_store_upgrade(w->store, w->rm, err, sizeof(err)), 1);
    assert_int_equal(objlog_store_format(w->store), OBJLOG_STORE_FORMAT);
    assert_int_equal(objlog_store_upgrade(w->store, w->rm, err, sizeof(err)), 0);
    check_exact(w->store, w->rm, "after the upgrade from format 1", &sum);
    snprintf(got_dump, sizeof(got_dump), "%s.dump3", w->dir);
    dump_to(w->store, got_dump, sizeof(got_dump));
    assert_true(files_equal(want_dump, got_dump));
    remove(got_dump);
}

/* A format-2 or -3 store (a row per request id, for all partitions or
 * per partition; a header row for every key) opens as such and upgrades
 * to exactly a replay (want_dump). */
static void old_format_upgrades_to_a_replay(world *w, int fmt, const char *want_dump) {
    char err[1024], got_dump[300];
    long n = fmt == 2 ? stats_recount_write_format2(w->store, err, sizeof(err))
                      : stats_recount_write_format3(w->store, err, sizeof(err));
    if (n < 0)
        fail_msg("format %d: %s", fmt, err);
    assert_true(n > 0); /* the workload's writes carry request ids */
    close_world(w);
    open_world(w);
    assert_int_equal(objlog_store_format(w->store), fmt);
    snprintf(got_dump, sizeof(got_dump), "%s.dump4", w->dir);
    dump_to(w->store, got_dump, sizeof(got_dump));
    assert_false(files_equal(want_dump, got_dump));
    assert_int_equal(objlog_store_upgrade(w->store, w->rm, err, sizeof(err)), 1);
    assert_int_equal(objlog_store_format(w->store), OBJLOG_STORE_FORMAT);
    dump_to(w->store, got_dump, sizeof(got_dump));
    assert_true(files_equal(want_dump, got_dump));
    remove(got_dump);
}

/* A store marked with a format this build does not know is not opened. */
static void unknown_format_refused(world *w) {
    char err[1024];
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *werr = NULL;
    char later[8], says[64];
    snprintf(later, sizeof(later), "%d", OBJLOG_STORE_FORMAT + 1);
    snprintf(says, sizeof(says), "format later than %d", OBJLOG_STORE_FORMAT);
    rocksdb_put_cf(objlog_store_db(w->store), wo, objlog_store_cf(w->store, OBJLOG_CF_META),
                   "format", 6, later, strlen(later), &werr);
    rocksdb_writeoptions_destroy(wo);
    assert_null(werr);
    close_world(w);
    assert_null(objlog_store_open(w->dir, err, sizeof(err)));
    if (!strstr(err, says) || !strstr(err, "empty --data"))
        fail_msg("open error \"%s\"", err);
}

static void counters_equal_a_recount(void **state) {
    world *w = *state;
    open_world(w);
    for (int b = 0; b < N_BUCKETS; b++)
        create_bucket(w, b);
    stats_recount_summary sum;
    while (w->nlog < N_EVENTS) {
        random_event(w);
        if (w->nlog % 500 == 0) {
            flush(w);
            check_exact(w->store, w->rm, "during the workload", &sum);
        }
    }
    flush(w);
    check_exact(w->store, w->rm, "after the workload", &sum);
    views_add_up(w->store, w->rm, &sum);
    /* the rows span partitions, and a tenant's buckets sit on several */
    printf("stats rows: %zu buckets, %zu tenants in %zu tenant rows, %zu partitions\n",
           sum.buckets, sum.tenants, sum.tenant_rows, sum.globals);
    assert_true(sum.globals >= 2);
    assert_true(sum.tenant_rows > sum.tenants);
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
    check_exact(w->store, w->rm, "after a restart", &sum);
    dump_to(w->store, dump1, sizeof(dump1));
    close_world(w);

    /* replay rebuild: the same events into an empty store, one batch of
     * 97 at a time (other boundaries than the first run) */
    char first[256];
    snprintf(first, sizeof(first), "%s", w->dir);
    assert_int_equal(proc_tmpdir(w->dir, sizeof(w->dir)), 0);
    open_world(w);
    memset(w->offset, 0, sizeof(w->offset));
    for (size_t i = 0; i < w->nlog; i++) {
        apply_packed(w, w->log[i].data, w->log[i].len);
        if (w->in_batch == 97)
            flush(w);
    }
    flush(w);
    check_exact(w->store, w->rm, "after a replay rebuild", &sum);
    dump_to(w->store, dump2, sizeof(dump2));
    assert_true(files_equal(dump1, dump2));
    format1_upgrades_to_a_replay(w, dump2);
    old_format_upgrades_to_a_replay(w, 2, dump2);
    old_format_upgrades_to_a_replay(w, 3, dump2);
    g_rm = w->rm;
    recount_catches_tampering(w->store);
    unknown_format_refused(w);
    remove(dump1);
    remove(dump2);
    proc_rmtree(first);
}

/* Every stats row names its partition in its key; anything else is -1. */
static void row_partition_from_key(void **state) {
    (void)state;
    rangemap *rm = rangemap_new_default(N_PARTS, 1);
    keybuf k;
    keybuf_init(&k);
    for (int b = 0; b < N_BUCKETS; b++) {
        assert_int_equal(objlog_stats_bucket_key(&k, bucket_names[b], strlen(bucket_names[b])),
                         0);
        assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), b);
        assert_int_equal(objlog_stats_row_partition(NULL, k.data, k.len), -1);
        assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len - 1), -1);
        k.data[1] ^= 1; /* a hash that is not the name's */
        assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), -1);
        /* A stake of partition 5 (a range inside the bucket, its home
         * elsewhere): the partition is in the key, in `buckets` and in
         * `stats` alike. */
        keybuf bp, st;
        keybuf_init(&bp);
        keybuf_init(&st);
        assert_int_equal(keycodec_bucket_part(&bp, bucket_names[b], strlen(bucket_names[b])), 0);
        size_t bn = 0;
        int32_t sp = -1;
        assert_int_equal(objlog_bucket_row_kind(bp.data, bp.len, &bn, &sp), 0);
        assert_int_equal(bn, bp.len);
        assert_int_equal(objlog_bucket_stake_key(&st, bp.data, bp.len, 5), 0);
        assert_int_equal(objlog_bucket_row_kind(st.data, st.len, &bn, &sp), 1);
        assert_int_equal(bn, bp.len);
        assert_int_equal(sp, 5);
        assert_int_equal(objlog_bucket_row_kind(st.data, st.len - 1, &bn, &sp), -1);
        assert_int_equal(objlog_stats_stake_key(&k, st.data, st.len), 0);
        assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), 5);
        assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len - 1), -1);
        keybuf_free(&bp);
        keybuf_free(&st);
    }
    assert_int_equal(objlog_stats_tenant_key(&k, "t1", 3), 0);
    assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), 3);
    /* the partition is the key's, whatever the map says */
    assert_int_equal(objlog_stats_row_partition(NULL, k.data, k.len), 3);
    assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len - 1), -1);
    assert_int_equal(objlog_stats_tenant_key(&k, "", 70000), 0);
    assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), 70000);
    assert_int_equal(objlog_stats_tenant_prefix(&k, "t1"), 0); /* format 1's key */
    assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), -1);
    assert_int_equal(objlog_stats_global_key(&k, 2), 0);
    assert_int_equal(k.len, 5);
    assert_int_equal(objlog_stats_row_partition(rm, k.data, k.len), 2);
    assert_int_equal(objlog_stats_row_partition(rm, "g", 1), -1); /* format 1's */
    assert_int_equal(objlog_stats_row_partition(rm, "g\x80\0\0\0", 5), -1);
    assert_int_equal(objlog_stats_row_partition(rm, "g\0\0\0\0\0", 6), -1);
    assert_int_equal(objlog_stats_row_partition(rm, "t\0\x02\0\0\0\0", 7), -1);
    assert_int_equal(objlog_stats_row_partition(rm, "zz", 2), -1);
    assert_int_equal(objlog_stats_row_partition(rm, "", 0), -1);
    keybuf_free(&k);
    rangemap_destroy(rm);
}

/* A new store is marked with the current format at open, and the marker
 * is in its dump (it is the log's, not local: a replay writes the same). */
static void new_store_is_current_format(void **state) {
    world *w = *state;
    open_world(w);
    assert_int_equal(objlog_store_format(w->store), OBJLOG_STORE_FORMAT);
    char path[300];
    snprintf(path, sizeof(path), "%s.dump", w->dir);
    dump_to(w->store, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256], want[64];
    int found = 0;
    /* "format" as hex, then the format's one digit as hex */
    snprintf(want, sizeof(want), "meta 666f726d6174 %02x\n", '0' + OBJLOG_STORE_FORMAT);
    while (fgets(line, sizeof(line), f))
        found |= strcmp(line, want) == 0;
    fclose(f);
    remove(path);
    assert_true(found);
    assert_false(objlog_store_meta_is_local("format", 6));
    close_world(w);
}

static int setup(void **state) {
    static world w;
    memset(&w, 0, sizeof(w));
    w.rng = 0x9E3779B97F4A7C15ULL;
    assert_int_equal(proc_tmpdir(w.dir, sizeof(w.dir)), 0);
    w.rm = rangemap_new_default(N_PARTS, 1);
    for (int b = 0; b < N_BUCKETS; b++) {
        Objlog__Event ev;
        ev_init(&ev, b, -1);
        assert_int_equal(event_partition(&w, &ev), b); /* see bucket_names */
    }
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
        cmocka_unit_test(row_partition_from_key),
        cmocka_unit_test_setup_teardown(new_store_is_current_format, setup, teardown),
        cmocka_unit_test_setup_teardown(counters_equal_a_recount, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
