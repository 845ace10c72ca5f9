/* test_checkpoint.c: a partition's checkpoint (materializer/checkpoint.h)
 * carries exactly that partition's rows from one store to another.
 *
 * Stores are built by applying real events through the state machine
 * (apply.c) over 4 partitions: buckets in every versioning state, PUTs,
 * deletes, multipart uploads and parts, retried request ids, undecodable
 * events (meta "dlq") and a small dedup bound (meta "olow", trimmed
 * outcomes). Partition p's rows are picked out of objlog_store_dump by
 * this file's own reading of the layout (row_part below, independent of
 * checkpoint.c; tests/partdump.c), and compared as text, byte for byte:
 *   - import into an empty store, and into a store holding other rows of
 *     every partition: p's rows equal the source's, every other row is
 *     unchanged; chunk sizes from 1 byte up give the same store;
 *   - every failure (a flipped byte anywhere after the header, a
 *     truncated stream, a row of another partition with a valid checksum)
 *     leaves p empty with no marker; a refused header (another log,
 *     another epoch) leaves the store untouched;
 *   - a process that dies mid-import leaves a marker; opening the store
 *     purges the partition.
 * A hand-built stream (format written from checkpoint.h's description,
 * not from checkpoint.c) pins down the format. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "apply.h"
#include "checkpoint.h"
#include "objlog.pb-c.h"
#include "keycodec.h"
#include "partdump.h"
#include "proc.h"
#include "rangemap.h"
#include "rows.h"

#define NPARTS 4
#define EPOCH 1
#define N_BUCKETS 8
#define N_KEYS 10

static const char *const key_names[N_KEYS] = {"a", "a/b", "b", "c/d", "e", "\xc3\xa9",
                                              "k\0z", "zz", "x/y/z", "q"};
static const size_t key_lens[N_KEYS] = {1, 3, 1, 3, 1, 2, 3, 2, 5, 1};

static const objlog_log_identity log_a = {"cluster-a", "0123456789abcdef0123456789abcdef", 0};
static const objlog_log_identity log_b = {"cluster-a", "fedcba9876543210fedcba9876543210", 0};

/* ---- a store applied from events ---- */

typedef struct world {
    char dir[256];
    objlog_store *store;
    rangemap *rm;
    apply_batch *batch;
    int64_t off[NPARTS];
    int touched[NPARTS];
    uint64_t rng;
    char buckets[N_BUCKETS][16];
    uint8_t last_rid[16];
    int have_rid;
} world;

static uint64_t rnd(world *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static objlog_store *open_store(const char *dir) {
    char err[512];
    objlog_store *s = objlog_store_open(dir, err, sizeof(err));
    if (!s)
        fail_msg("open %s: %s", dir, err);
    return s;
}

static void bind_store(objlog_store *s, const objlog_log_identity *id) {
    char err[512];
    assert_int_equal(objlog_store_bind_log(s, id, 0, err, sizeof(err)), OBJLOG_BIND_RECORDED);
}

static void flush(world *w) {
    for (int p = 0; p < NPARTS; p++)
        if (w->touched[p])
            apply_set_applied(w->batch, p, w->off[p]);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(w->store), wo, apply_batch_wb(w->batch), &err);
    rocksdb_writeoptions_destroy(wo);
    if (err)
        fail_msg("write: %s", err);
    apply_batch_written(w->batch);
    apply_batch_clear(w->batch);
    memset(w->touched, 0, sizeof(w->touched));
}

static int part_of(world *w, const char *bucket, const char *key, size_t kn) {
    keybuf kb;
    keybuf_init(&kb);
    assert_int_equal(keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)key, kn), 0);
    int p = rangemap_partition(w->rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

/* Applies ev at its partition's next offset; a retry reuses the last
 * request id (the dedup answers it). */
static void emit(world *w, Objlog__Event *ev, int retry) {
    uint8_t rid[16];
    for (int i = 0; i < 16; i++)
        rid[i] = (uint8_t)rnd(w);
    if (retry && w->have_rid)
        memcpy(rid, w->last_rid, 16);
    memcpy(w->last_rid, rid, 16);
    w->have_rid = 1;
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    ev->range_epoch = EPOCH;
    int p = part_of(w, ev->bucket, (const char *)ev->key.data, ev->key.len);
    char err[512];
    if (apply_event(w->batch, p, w->off[p], 1000 + w->off[p], ev, NULL, err, sizeof(err)))
        fail_msg("apply: %s", err);
    w->off[p]++;
    w->touched[p] = 1;
    if (rnd(w) % 16 == 0)
        flush(w);
}

static void ev_init(Objlog__Event *ev, int b, int k) {
    Objlog__Event init = OBJLOG__EVENT__INIT;
    *ev = init;
    (void)b;
    if (k >= 0) {
        ev->key.data = (uint8_t *)key_names[k];
        ev->key.len = key_lens[k];
    }
}

static void step(world *w) {
    int b = (int)(rnd(w) % N_BUCKETS), k = (int)(rnd(w) % N_KEYS);
    Objlog__Event ev;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    meta.size = rnd(w) % 5000;
    meta.etag = "0123456789abcdef0123456789abcdef";
    uint64_t r = rnd(w) % 100;
    if (r < 5) {
        Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
        ev_init(&ev, b, -1);
        ev.bucket = w->buckets[b];
        cb.tenant = rnd(w) % 2 ? "t1" : "t2";
        cb.versioning = (Objlog__Versioning)(rnd(w) % 3);
        ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
        ev.create_bucket = &cb;
        emit(w, &ev, 0);
    } else if (r < 60) {
        Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
        ev_init(&ev, b, k);
        ev.bucket = w->buckets[b];
        po.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
        ev.put_object = &po;
        emit(w, &ev, rnd(w) % 10 == 0);
    } else if (r < 75) {
        Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
        ev_init(&ev, b, k);
        ev.bucket = w->buckets[b];
        ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
        ev.delete_object = &d;
        emit(w, &ev, 0);
    } else if (r < 85) {
        Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
        ev_init(&ev, b, k);
        ev.bucket = w->buckets[b];
        cu.meta = &meta;
        ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev.create_upload = &cu;
        int p = part_of(w, ev.bucket, key_names[k], key_lens[k]);
        int64_t at = w->off[p];
        emit(w, &ev, 0);
        /* One part of the upload just made (its id: the event's seq). */
        char id[KEYCODEC_VERSION_ID_LEN];
        keycodec_version_id(keycodec_seq(EPOCH, at), id);
        Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
        ev_init(&ev, b, k);
        ev.bucket = w->buckets[b];
        up.upload_id = id;
        up.part_number = 1 + (uint32_t)(rnd(w) % 3);
        up.size = 5u << 20;
        up.etag = "0cc175b9c0f1b6a831c399e269772661";
        ev.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
        ev.upload_part = &up;
        emit(w, &ev, 0);
    } else if (r < 86) {
        /* An attribute index: its rows (indexes CF) go with the partition. */
        Objlog__PutIndex pi = OBJLOG__PUT_INDEX__INIT;
        ev_init(&ev, b, -1);
        ev.bucket = w->buckets[b];
        pi.name = "sc";
        pi.field = "storage_class";
        ev.op_case = OBJLOG__EVENT__OP_PUT_INDEX;
        ev.put_index = &pi;
        emit(w, &ev, 0);
    } else if (r < 88) {
        /* ... and the backfill steps that index what the bucket holds */
        Objlog__BuildIndex bi = OBJLOG__BUILD_INDEX__INIT;
        ev_init(&ev, b, -1);
        ev.bucket = w->buckets[b];
        bi.name = "sc";
        ev.op_case = OBJLOG__EVENT__OP_BUILD_INDEX;
        ev.build_index = &bi;
        emit(w, &ev, 0);
    } else if (r < 90) {
        Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
        ev_init(&ev, b, -1);
        ev.bucket = w->buckets[b];
        sv.status = rnd(w) % 2 ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                               : OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
        ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
        ev.set_versioning = &sv;
        emit(w, &ev, 0);
    } else {
        /* An undecodable message: InvalidEvent, counted in meta "dlq". */
        int p = (int)(rnd(w) % NPARTS);
        char err[512];
        if (apply_invalid(w->batch, p, w->off[p], 1000 + w->off[p], "garbage", err,
                          sizeof(err)))
            fail_msg("apply_invalid: %s", err);
        w->off[p]++;
        w->touched[p] = 1;
    }
}

/* A store in a fresh dir, bound to id, with n random events (seed). */
static void world_build(world *w, const objlog_log_identity *id, uint64_t seed, int n) {
    memset(w, 0, sizeof(*w));
    w->rng = seed;
    snprintf(w->dir, sizeof(w->dir), "/tmp/objlog-test-ckpt-XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    w->store = open_store(w->dir);
    bind_store(w->store, id);
    w->rm = rangemap_new_default(NPARTS, EPOCH);
    w->batch = apply_batch_new(w->store, w->rm);
    /* A small bound, so outcomes get trimmed and "olow" rows exist. */
    apply_batch_set_dedup_limits(w->batch, OBJLOG_DEDUP_WINDOW_MS, 150);
    /* Two buckets on each partition. FNV-1a's top bits hardly see a
     * name's last characters, so the names differ in their first ones. */
    int per[NPARTS] = {0};
    for (int b = 0, i = 0; b < N_BUCKETS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "%c%c-bkt", 'a' + i % 26, 'a' + i / 26 % 26);
        int p = part_of(w, name, "", 0);
        if (per[p] >= N_BUCKETS / NPARTS)
            continue;
        per[p]++;
        snprintf(w->buckets[b++], sizeof(w->buckets[0]), "%s", name);
    }
    for (int i = 0; i < n; i++)
        step(w);
    flush(w);
}

static void world_free(world *w) {
    apply_batch_destroy(w->batch);
    rangemap_destroy(w->rm);
    if (w->store)
        objlog_store_close(w->store);
    proc_rmtree(w->dir);
}

/* ---- streams in memory ---- */

typedef struct membuf {
    uint8_t *data;
    size_t len, cap;
} membuf;

static int membuf_write(void *opaque, const void *data, size_t n) {
    membuf *m = opaque;
    if (m->len + n > m->cap) {
        m->cap = (m->len + n) * 2;
        m->data = realloc(m->data, m->cap);
        assert_non_null(m->data);
    }
    memcpy(m->data + m->len, data, n);
    m->len += n;
    return 0;
}

static void export_part(world *w, int p, membuf *m, objlog_ckpt_info *info) {
    char err[512];
    memset(m, 0, sizeof(*m));
    int rc = objlog_ckpt_export(w->store, w->rm, p, membuf_write, m, info, err, sizeof(err));
    if (rc != 0)
        fail_msg("export %d: %d %s", p, rc, err);
    assert_int_equal(info->bytes, m->len);
}

/* Imports data[0..n) in chunks of `chunk` bytes (0: random 1..64 KiB).
 * 0 with *applied, or -1 with err. */
static int import_bytes(objlog_store *s, const rangemap *rm, int p, const uint8_t *data,
                        size_t n, size_t chunk, int64_t *applied, char *err, size_t en) {
    objlog_ckpt_import *im = objlog_ckpt_import_new(s, rm, p, err, en);
    if (!im)
        return -1;
    uint64_t r = 88172645463325252ULL;
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0;) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t c = chunk ? chunk : 1 + r % 65536;
        c = c < n - at ? c : n - at;
        rc = objlog_ckpt_import_feed(im, data + at, c, err, en);
        at += c;
    }
    if (rc == 0)
        rc = objlog_ckpt_import_finish(im, applied, err, en);
    objlog_ckpt_import_destroy(im);
    return rc;
}

static int meta_has(objlog_store *s, const uint8_t *k, size_t kn);

/* ---- tests ---- */

/* Every partition, into an empty store and into one holding other rows
 * of every partition (stale rows of p replaced exactly). */
/* The newest row of partition p in s that is its request's first
 * outcome (malloc'd copy of its request id into rid, 16 bytes): its
 * offset, or -1. */
static int64_t newest_first_outcome(objlog_store *s, int p, uint8_t rid[16],
                                    Objlog__OutcomeCode *code) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(s), ro,
                                                        objlog_store_cf(s, OBJLOG_CF_OUTCOMES));
    uint8_t pre[5] = {'o'};
    apply_put_be32(pre + 1, (uint32_t)p);
    int64_t found = -1;
    for (rocksdb_iter_seek(it, (const char *)pre, 5); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kn);
        if (kn != APPLY_OUTCOME_KEY_LEN || memcmp(k, pre, 5) != 0)
            break;
        const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vn);
        Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, v);
        assert_non_null(o);
        if (o->request_id.len == 16 && o->offset == (int64_t)apply_get_be64(k + 5)) {
            found = o->offset;
            memcpy(rid, o->request_id.data, 16);
            *code = o->code;
        }
        objlog__outcome__free_unpacked(o, NULL);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return found;
}

/* After p was imported into w, a retry of a request the checkpoint
 * brought is answered with its first outcome, although w's batch knew
 * p's request ids from before the import: the import makes the batch
 * reload them. */
static void retry_after_import(world *w, objlog_store *src, int p, int64_t next) {
    uint8_t rid[16];
    Objlog__OutcomeCode want = 0, code = 0;
    int64_t first = newest_first_outcome(src, p, rid, &want);
    assert_true(first >= 0);
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    ev.bucket = w->buckets[0];
    ev.key.data = (uint8_t *)"k";
    ev.key.len = 1;
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    ev.request_id.data = rid;
    ev.request_id.len = 16;
    ev.range_epoch = EPOCH;
    char err[512];
    if (apply_event(w->batch, p, next, 1000 + next, &ev, &code, err, sizeof(err)))
        fail_msg("apply: %s", err);
    assert_int_equal(code, want);
    uint8_t key[APPLY_OUTCOME_KEY_LEN];
    apply_outcome_key(key, p, next);
    char *v;
    size_t vn;
    assert_int_equal(apply_batch_get(w->batch, OBJLOG_CF_OUTCOMES, key, sizeof(key), &v, &vn,
                                     err, sizeof(err)), 1);
    Objlog__Outcome *o = objlog__outcome__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    assert_non_null(o);
    assert_int_equal(o->offset, first); /* a copy of the first outcome */
    objlog__outcome__free_unpacked(o, NULL);
    apply_batch_clear(w->batch); /* not written: the import stays as it was */
}

static void test_roundtrip(void **state) {
    (void)state;
    world src, dst, empty;
    world_build(&src, &log_a, 0x9e3779b97f4a7c15ULL, 4000);
    world_build(&dst, &log_a, 0x1234567ULL, 2000);
    world_build(&empty, &log_a, 1, 0);
    int with_indexes = 0; /* partitions whose checkpoint carries index rows */
    for (int p = 0; p < NPARTS; p++) {
        membuf m;
        objlog_ckpt_info info;
        export_part(&src, p, &m, &info);
        size_t nsrc = 0;
        char *want = partdump(src.store, src.rm, p, 1, &nsrc);
        assert_true(nsrc > 100);
        with_indexes += strstr(want, "\nindexes ") != NULL;
        assert_int_equal(info.rows, nsrc);
        assert_int_equal(info.applied, objlog_store_applied(src.store, p));
        assert_int_equal(info.applied, src.off[p]);

        char *others = partdump(dst.store, dst.rm, p, 0, NULL);
        size_t nstale = 0;
        free(partdump(dst.store, dst.rm, p, 1, &nstale));
        assert_true(nstale > 0);
        char err[512];
        int64_t applied = -1;
        if (import_bytes(dst.store, dst.rm, p, m.data, m.len, 0, &applied, err, sizeof(err)))
            fail_msg("import %d: %s", p, err);
        assert_int_equal(applied, src.off[p]);
        assert_int_equal(objlog_store_applied(dst.store, p), src.off[p]);
        uint8_t bk[APPLY_META_KEY_MAX];
        size_t bkn = apply_meta_key(bk, OBJLOG_CKPT_META_BASE, p);
        assert_true(meta_has(dst.store, bk, bkn)); /* applied from here on, not before */
        char *got = partdump(dst.store, dst.rm, p, 1, NULL);
        assert_string_equal(got, want);
        char *others_after = partdump(dst.store, dst.rm, p, 0, NULL);
        assert_string_equal(others_after, others);
        assert_int_equal(objlog_ckpt_importing(dst.store, p), 0);
        retry_after_import(&dst, src.store, p, src.off[p]);
        free(got);
        free(others_after);
        free(others);

        /* One-byte chunks into an empty store: the same rows. */
        if (import_bytes(empty.store, empty.rm, p, m.data, m.len, p == 0 ? 1 : 4096, &applied,
                         err, sizeof(err)))
            fail_msg("import %d: %s", p, err);
        got = partdump(empty.store, empty.rm, p, 1, NULL);
        assert_string_equal(got, want);
        free(got);
        free(want);
        free(m.data);
    }
    /* Every partition copied: the stores differ only in tenant/global
     * stats rows, which no partition owns yet. */
    char *a = partdump(src.store, src.rm, -1, 0, NULL);
    char *b = partdump(empty.store, empty.rm, -1, 0, NULL);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(with_indexes, NPARTS);
    world_free(&src);
    world_free(&dst);
    world_free(&empty);
}

/* The same export twice from an unchanged store: the same bytes. */
static void test_export_is_deterministic(void **state) {
    (void)state;
    world src;
    world_build(&src, &log_a, 77, 500);
    membuf a, b;
    objlog_ckpt_info ia, ib;
    export_part(&src, 1, &a, &ia);
    export_part(&src, 1, &b, &ib);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    free(a.data);
    free(b.data);
    world_free(&src);
}

static void test_export_never_applied(void **state) {
    (void)state;
    world w;
    world_build(&w, &log_a, 5, 0);
    membuf m = {0};
    objlog_ckpt_info info;
    char err[512];
    assert_int_equal(objlog_ckpt_export(w.store, w.rm, 2, membuf_write, &m, &info, err,
                                        sizeof(err)), OBJLOG_CKPT_NEVER_APPLIED);
    assert_string_equal(err, "partition 2 was never applied here");
    assert_int_equal(m.len, 0);
    world_free(&w);
}

/* After the header, any flipped byte fails the import and leaves the
 * partition empty, without marker; other partitions untouched. */
static void test_corrupt_byte(void **state) {
    (void)state;
    world src, dst;
    world_build(&src, &log_a, 42, 1500);
    world_build(&dst, &log_a, 43, 800);
    int p = 3;
    membuf m;
    objlog_ckpt_info info;
    export_part(&src, p, &m, &info);
    char *others = partdump(dst.store, dst.rm, p, 0, NULL);
    size_t header = 8 + 4 + 4 + 2 + ((size_t)m.data[16] << 8 | m.data[17]) + 16;
    size_t positions = 0, checksum_errors = 0;
    for (size_t at = header; at < m.len; at += 1 + at % 97, positions++) {
        m.data[at] ^= 0x5a;
        char err[512];
        int64_t applied;
        assert_int_equal(import_bytes(dst.store, dst.rm, p, m.data, m.len, 0, &applied, err,
                                      sizeof(err)), -1);
        m.data[at] ^= 0x5a;
        checksum_errors += strstr(err, "checksum mismatch") != NULL;
        size_t n = 1;
        free(partdump(dst.store, dst.rm, p, 1, &n));
        if (n != 0)
            fail_msg("byte %zu: %zu rows of partition %d left (%s)", at, n, p, err);
        assert_int_equal(objlog_ckpt_importing(dst.store, p), 0);
        assert_int_equal(objlog_store_applied(dst.store, p), 0);
    }
    assert_true(positions > 100);
    assert_true(checksum_errors > positions / 2);
    char *after = partdump(dst.store, dst.rm, p, 0, NULL);
    assert_string_equal(after, others);
    free(after);
    free(others);

    /* A byte of a value: exactly the checksum. */
    size_t at = m.len - 49 - 3; /* inside the last row's value (a meta row) */
    m.data[at] ^= 1;
    char err[512];
    int64_t applied;
    assert_int_equal(import_bytes(dst.store, dst.rm, p, m.data, m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    assert_non_null(strstr(err, "import of partition 3: checkpoint checksum mismatch"));
    free(m.data);
    world_free(&src);
    world_free(&dst);
}

static void test_truncated(void **state) {
    (void)state;
    world src, dst;
    world_build(&src, &log_a, 11, 600);
    world_build(&dst, &log_a, 12, 300);
    int p = 0;
    membuf m;
    objlog_ckpt_info info;
    export_part(&src, p, &m, &info);
    size_t cuts[] = {m.len - 1, m.len - 32, m.len - 33, m.len - 49, m.len / 2, 100};
    const char *where[] = {"inside its trailer", "inside its trailer", "inside its trailer",
                           "before its trailer", NULL, NULL};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        char err[512], want[256];
        int64_t applied;
        assert_int_equal(import_bytes(dst.store, dst.rm, p, m.data, cuts[i], 0, &applied, err,
                                      sizeof(err)), -1);
        snprintf(want, sizeof(want), "import of partition 0: truncated checkpoint: the stream "
                 "ended after %zu bytes, ", cuts[i]);
        assert_memory_equal(err, want, strlen(want));
        if (where[i])
            assert_string_equal(err + strlen(want), where[i]);
        size_t n = 1;
        free(partdump(dst.store, dst.rm, p, 1, &n));
        assert_int_equal(n, 0);
        assert_int_equal(objlog_ckpt_importing(dst.store, p), 0);
    }
    free(m.data);
    world_free(&src);
    world_free(&dst);
}

/* Refused at the header: nothing in the store changes. */
static void test_refused_headers(void **state) {
    (void)state;
    world src, other, dst;
    world_build(&src, &log_a, 21, 400);
    world_build(&other, &log_b, 22, 300);
    world_build(&dst, &log_a, 23, 300);
    membuf m;
    objlog_ckpt_info info;
    export_part(&src, 1, &m, &info);
    char *before = partdump(other.store, other.rm, -1, 0, NULL);
    char err[512];
    int64_t applied;
    assert_int_equal(import_bytes(other.store, other.rm, 1, m.data, m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    assert_string_equal(err, "import of partition 1: checkpoint of another log: it was built "
                        "from \"v1 kafka 0123456789abcdef0123456789abcdef cluster-a\", this "
                        "store from \"v1 kafka fedcba9876543210fedcba9876543210 cluster-a\"");
    char *after = partdump(other.store, other.rm, -1, 0, NULL);
    assert_string_equal(after, before);
    free(before);
    free(after);

    /* Another epoch, another partition, not a checkpoint. */
    rangemap *rm2 = rangemap_new_default(NPARTS, 2);
    assert_int_equal(import_bytes(dst.store, rm2, 1, m.data, m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    assert_string_equal(err, "import of partition 1: checkpoint taken under range map epoch "
                        "1; this node uses epoch 2");
    rangemap_destroy(rm2);
    assert_int_equal(import_bytes(dst.store, dst.rm, 2, m.data, m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    assert_string_equal(err, "import of partition 2: checkpoint of partition 1, not of "
                        "partition 2");
    assert_int_equal(import_bytes(dst.store, dst.rm, 1, (const uint8_t *)"HTTP/1.1 200 OK\r\nServer: x\r\n",
                                  28, 0, &applied, err, sizeof(err)), -1);
    assert_string_equal(err, "import of partition 1: not a checkpoint (no OBJLCKPT magic at "
                        "byte 0)");
    assert_int_not_equal(objlog_store_applied(dst.store, 1), 0); /* untouched */

    /* A store bound to no log takes no checkpoint. */
    char dir[] = "/tmp/objlog-test-ckpt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    objlog_store *s = open_store(dir);
    assert_null(objlog_ckpt_import_new(s, dst.rm, 1, err, sizeof(err)));
    assert_non_null(strstr(err, "records no log identity"));
    objlog_store_close(s);
    proc_rmtree(dir);
    free(m.data);
    world_free(&src);
    world_free(&other);
    world_free(&dst);
}

/* A stream built here from checkpoint.h's description of the format. */
typedef struct builder {
    membuf m;
    uint64_t rows;
} builder;

static void b_put(builder *b, const void *p, size_t n) { membuf_write(&b->m, p, n); }

static void b_be(builder *b, uint64_t v, int bytes) {
    uint8_t x[8];
    for (int i = 0; i < bytes; i++)
        x[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    b_put(b, x, (size_t)bytes);
}

static void b_header(builder *b, const char *ident, int p, int64_t applied) {
    memset(b, 0, sizeof(*b));
    b_put(b, "OBJLCKPT", 8);
    b_be(b, OBJLOG_CKPT_VERSION, 4);
    b_be(b, 0, 4);
    b_be(b, strlen(ident), 2);
    b_put(b, ident, strlen(ident));
    b_be(b, EPOCH, 4);
    b_be(b, (uint64_t)p, 4);
    b_be(b, (uint64_t)applied, 8);
}

static void b_row(builder *b, int cf, const void *k, size_t kn, const void *v, size_t vn) {
    b_put(b, "R", 1);
    b_be(b, (uint64_t)cf, 1);
    b_be(b, kn, 4);
    b_be(b, vn, 4);
    b_put(b, k, kn);
    b_put(b, v, vn);
    b->rows++;
}

static void b_trailer(builder *b) {
    uint64_t body = b->m.len;
    b_put(b, "E", 1);
    b_be(b, b->rows, 8);
    b_be(b, body, 8);
    uint8_t sha[32];
    unsigned int n;
    EVP_Digest(b->m.data, b->m.len, sha, &n, EVP_sha256(), NULL);
    b_put(b, sha, 32);
}

static void test_format_by_hand(void **state) {
    (void)state;
    world dst;
    world_build(&dst, &log_a, 31, 0);
    const char *ident = "v1 kafka 0123456789abcdef0123456789abcdef cluster-a";
    int p = part_of(&dst, "handmade", "k", 1);
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, "handmade", 8, (const uint8_t *)"k", 1);
    uint8_t applied_key[11] = {'a', 'p', 'p', 'l', 'i', 'e', 'd', 0, 0, 0, (uint8_t)p};
    uint8_t applied_val[8] = {0, 0, 0, 0, 0, 0, 0, 42};
    builder b;
    char err[512];
    int64_t applied = 0;
    /* Version 1 carried a format-3 store's rows ('r' rows, Unversioned
     * keys' headers): refused by name. */
    b_header(&b, ident, p, 42);
    b.m.data[11] = 1;
    b_row(&b, OBJLOG_CF_OBJECTS, rk.data, rk.len, "value", 5);
    b_trailer(&b);
    assert_int_equal(import_bytes(dst.store, dst.rm, p, b.m.data, b.m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    if (!strstr(err, "checkpoint format version 1; this objlog reads 2"))
        fail_msg("version 1 refused with \"%s\"", err);
    free(b.m.data);
    b_header(&b, ident, p, 42);
    b_row(&b, OBJLOG_CF_OBJECTS, rk.data, rk.len, "value", 5);
    b_row(&b, OBJLOG_CF_META, applied_key, sizeof(applied_key), applied_val, 8);
    b_trailer(&b);
    if (import_bytes(dst.store, dst.rm, p, b.m.data, b.m.len, 0, &applied, err, sizeof(err)))
        fail_msg("hand-made stream: %s", err);
    assert_int_equal(applied, 42);
    char *got = partdump(dst.store, dst.rm, p, 1, NULL);
    char want[512], hex[256] = "";
    for (size_t i = 0; i < rk.len; i++)
        snprintf(hex + 2 * i, 3, "%02x", rk.data[i]);
    snprintf(want, sizeof(want), "objects %s 76616c7565\nmeta 6170706c696564%08x "
             "000000000000002a\n", hex, p);
    assert_string_equal(got, want);
    free(got);
    free(b.m.data);

    /* A row of another partition, checksum and all valid: refused, and
     * nothing of the other partition written. */
    int q = (p + 1) % NPARTS;
    const char *bq = NULL;
    char names[64][16];
    for (int i = 0; i < 64 && !bq; i++) {
        snprintf(names[i], sizeof(names[i]), "%c%c-other", 'a' + i % 26, 'a' + i / 26);
        if (part_of(&dst, names[i], "k", 1) == q)
            bq = names[i];
    }
    assert_non_null(bq);
    keybuf qk;
    keybuf_init(&qk);
    keycodec_route_key(&qk, bq, strlen(bq), (const uint8_t *)"k", 1);
    b_header(&b, ident, p, 43);
    b_row(&b, OBJLOG_CF_OBJECTS, qk.data, qk.len, "intruder", 8);
    b_trailer(&b);
    assert_int_equal(import_bytes(dst.store, dst.rm, p, b.m.data, b.m.len, 0, &applied, err,
                                  sizeof(err)), -1);
    assert_non_null(strstr(err, "corrupt checkpoint: row 0 (objects) belongs to another "
                                "partition"));
    size_t n = 1;
    free(partdump(dst.store, dst.rm, q, 1, &n));
    assert_int_equal(n, 0);
    free(partdump(dst.store, dst.rm, p, 1, &n));
    assert_int_equal(n, 0);
    free(b.m.data);
    keybuf_free(&qk);
    keybuf_free(&rk);
    world_free(&dst);
}

/* A process dies mid-import: the marker it left makes the next open purge
 * the partition; nothing else changes. */
/* Closes w's store, lets a child process open it and feed the first n
 * bytes of m to the import `start` makes (then exit without cleanup, as if
 * killed: 0 when the import took them and marks, `marked`, what it does),
 * and opens the store again: its open finishes the crash rule. */
typedef objlog_ckpt_import *(*import_start_fn)(objlog_store *s, void *arg);
typedef int (*import_marked_fn)(objlog_store *s, void *arg);

static void crash_mid_import(world *w, import_start_fn start, import_marked_fn marked,
                             void *arg, const membuf *m, size_t n) {
    objlog_store_close(w->store);
    w->store = NULL;
    apply_batch_destroy(w->batch);
    w->batch = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        objlog_store *s = objlog_store_open(w->dir, err, sizeof(err));
        objlog_ckpt_import *im = s ? start(s, arg) : NULL;
        _exit(!im || objlog_ckpt_import_feed(im, m->data, n, err, sizeof(err)) < 0 ||
              !marked(s, arg));
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    w->store = open_store(w->dir);
}

typedef struct part_start {
    const rangemap *rm;
    int p;
} part_start;

static objlog_ckpt_import *start_part(objlog_store *s, void *arg) {
    const part_start *a = arg;
    char err[512];
    return objlog_ckpt_import_new(s, a->rm, a->p, err, sizeof(err));
}

static int part_marked(objlog_store *s, void *arg) {
    return objlog_ckpt_importing(s, ((const part_start *)arg)->p) == 1;
}

static void test_crash_mid_import(void **state) {
    (void)state;
    world src, dst;
    world_build(&src, &log_a, 51, 1500);
    world_build(&dst, &log_a, 52, 800);
    int p = 2;
    membuf m;
    objlog_ckpt_info info;
    export_part(&src, p, &m, &info);
    char *others = partdump(dst.store, dst.rm, p, 0, NULL);
    part_start ps = {dst.rm, p};
    crash_mid_import(&dst, start_part, part_marked, &ps, &m, m.len / 2);
    assert_int_equal(objlog_ckpt_importing(dst.store, p), 0);
    assert_int_equal(objlog_store_applied(dst.store, p), 0);
    size_t n = 1;
    free(partdump(dst.store, dst.rm, p, 1, &n));
    assert_int_equal(n, 0);
    char *after = partdump(dst.store, dst.rm, p, 0, NULL);
    assert_string_equal(after, others);
    free(after);
    free(others);

    /* Whole rows of p under a marker (a crash just before the last
     * batch): purged at open too. */
    char err[512];
    int64_t applied;
    if (import_bytes(dst.store, dst.rm, p, m.data, m.len, 0, &applied, err, sizeof(err)))
        fail_msg("import: %s", err);
    uint8_t *enc = NULL, mk[16];
    size_t en = 0, mn = apply_meta_key(mk, OBJLOG_CKPT_META_IMPORTING, p);
    assert_int_equal(rangemap_encode(dst.rm, &enc, &en), 0);
    uint8_t *val = malloc(en + 4);
    memcpy(val, "\0\0\0\1", 4);
    memcpy(val + 4, enc, en);
    char *rerr = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put_cf(objlog_store_db(dst.store), wo, objlog_store_cf(dst.store, OBJLOG_CF_META),
                   (const char *)mk, mn, (const char *)val, en + 4, &rerr);
    rocksdb_writeoptions_destroy(wo);
    assert_null(rerr);
    free(enc);
    free(val);
    membuf e = {0};
    assert_int_equal(objlog_ckpt_export(dst.store, dst.rm, p, membuf_write, &e, &info, err,
                                        sizeof(err)), OBJLOG_CKPT_IMPORTING);
    free(e.data);
    objlog_store_close(dst.store);
    dst.store = open_store(dst.dir);
    assert_int_equal(objlog_store_applied(dst.store, p), 0);
    free(partdump(dst.store, dst.rm, p, 1, &n));
    assert_int_equal(n, 0);
    free(m.data);
    world_free(&src);
    world_free(&dst);
}

/* ---- a range as of its handoff ---- */

/* Applies ev at p's next offset now (its own batch): its offset. */
static int64_t apply_now(world *w, int p, Objlog__Event *ev, Objlog__OutcomeCode *code) {
    uint8_t rid[16];
    for (int i = 0; i < 16; i++)
        rid[i] = (uint8_t)rnd(w);
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    char err[512];
    int64_t off = w->off[p];
    if (apply_event(w->batch, p, off, 1000 + off, ev, code, err, sizeof(err)))
        fail_msg("apply: %s", err);
    w->off[p]++;
    w->touched[p] = 1;
    flush(w);
    return off;
}

static Objlog__RangeMap *map_msg(const rangemap *rm) {
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(rangemap_encode(rm, &buf, &n), 0);
    Objlog__RangeMap *m = objlog__range_map__unpack(NULL, n, buf);
    free(buf);
    assert_non_null(m);
    return m;
}

/* RangeOut [s, e) of partition p under next (or the RangeIn from
 * (from, from_off) when from >= 0): its offset; the outcome must be OK. */
static int64_t handoff_ev(world *w, int p, const rangemap *next, const keybuf *s,
                          const keybuf *e, int to, int from, int64_t from_off) {
    Objlog__RangeMap *mm = map_msg(next);
    Objlog__RangeOut ro = OBJLOG__RANGE_OUT__INIT;
    Objlog__RangeIn ri = OBJLOG__RANGE_IN__INIT;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "";
    ev.range_epoch = rangemap_epoch(next) - 1;
    if (from < 0) {
        ro.map = mm;
        ro.start = (ProtobufCBinaryData){s->len, s->data};
        ro.end = (ProtobufCBinaryData){e->len, e->data};
        ro.to_partition = to;
        ev.op_case = OBJLOG__EVENT__OP_RANGE_OUT;
        ev.range_out = &ro;
    } else {
        ri.map = mm;
        ri.start = (ProtobufCBinaryData){s->len, s->data};
        ri.end = (ProtobufCBinaryData){e->len, e->data};
        ri.from_partition = from;
        ri.from_offset = from_off;
        ev.op_case = OBJLOG__EVENT__OP_RANGE_IN;
        ev.range_in = &ri;
    }
    Objlog__OutcomeCode code = OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT;
    int64_t off = apply_now(w, p, &ev, &code);
    objlog__range_map__free_unpacked(mm, NULL);
    if (code != OBJLOG__OUTCOME_CODE__OUTCOME_OK) {
        Objlog__Outcome *o = NULL;
        char err[256] = "";
        objlog_store_get_outcome(w->store, p, off, &o, err, sizeof(err));
        fail_msg("handoff event on %d: %d %s", p, code, o ? o->message : err);
    }
    return off;
}

/* The lines of text that start (keep) or do not start (!keep) with pre. */
static char *lines_with(const char *text, const char *pre, int keep) {
    char *out = NULL;
    size_t on = 0;
    FILE *o = open_memstream(&out, &on);
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        if ((strncmp(l, pre, strlen(pre)) == 0) == keep)
            fwrite(l, 1, (size_t)(nl - l + 1), o);
        l = nl + 1;
    }
    fclose(o);
    return out;
}

/* What a range stream of (p, off) must carry, as dump lines: the rows the
 * map `in` (the range as partition NPARTS) gives the range, then the 'x'
 * rows of the RangeOut. */
static char *range_dump(objlog_store *s, const rangemap *in, const char *xpre, size_t *rows) {
    size_t n = 0;
    char *mine = partdump(s, in, NPARTS, 1, &n);
    char *all = partdump(s, in, NPARTS, 0, NULL);
    char *x = lines_with(all, xpre, 1);
    char *out = NULL;
    assert_true(asprintf(&out, "%s%s", mine, x) >= 0);
    for (const char *c = x; *c; c++)
        n += *c == '\n';
    if (rows)
        *rows = n;
    free(mine);
    free(all);
    free(x);
    return out;
}

/* 1 when s holds meta row k. */
static int meta_has(objlog_store *s, const uint8_t *k, size_t kn) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(objlog_store_db(s), ro, objlog_store_cf(s, OBJLOG_CF_META),
                             (const char *)k, kn, &vn, &err);
    rocksdb_readoptions_destroy(ro);
    assert_null(err);
    rocksdb_free(v);
    return v != NULL;
}

static int import_range(objlog_store *s, int p, int64_t off, uint32_t epoch, const keybuf *st,
                        const keybuf *e, const membuf *m, size_t upto, char *err, size_t en) {
    objlog_ckpt_import *im = objlog_ckpt_import_handoff_new(s, p, off, epoch, st->data, st->len,
                                                            e->data, e->len, err, en);
    if (!im)
        return -1;
    int64_t applied = -1;
    int rc = 0;
    for (size_t at = 0; at < upto && rc == 0; at += 777)
        rc = objlog_ckpt_import_feed(im, m->data + at, upto - at < 777 ? upto - at : 777, err,
                                     en);
    if (rc == 0 && upto == m->len)
        rc = objlog_ckpt_import_finish(im, &applied, err, en);
    if (rc == 0 && upto == m->len)
        assert_int_equal(applied, off);
    objlog_ckpt_import_destroy(im);
    return rc;
}

/* A range moved off partition p: its stream carries exactly its rows as
 * of the RangeOut and the RangeOut's records; imported into a store with
 * stale rows of the range, those rows are replaced and nothing else
 * changes; a header that names another handoff, range, epoch or log is
 * refused before anything is written; an export of a handoff that is
 * not there, not applied yet, or whose range came back is refused. */
typedef struct range_start {
    int p;
    int64_t x;
    const keybuf *at, *end;
} range_start;

static objlog_ckpt_import *start_range(objlog_store *s, void *arg) {
    const range_start *a = arg;
    char err[512];
    return objlog_ckpt_import_handoff_new(s, a->p, a->x, 2, a->at->data, a->at->len,
                                          a->end->data, a->end->len, err, sizeof(err));
}

/* The range import's own marker ("rimporting" be32 be64) is there. */
static int range_marked(objlog_store *s, void *arg) {
    const range_start *a = arg;
    uint8_t k[22];
    memcpy(k, "rimporting", 10);
    apply_put_be32(k + 10, (uint32_t)a->p);
    apply_put_be64(k + 14, (uint64_t)a->x);
    return meta_has(s, k, sizeof(k));
}

static void test_range_roundtrip(void **state) {
    (void)state;
    world src, dst;
    world_build(&src, &log_a, 0x51ed270b2702ef5bULL, 4000);
    world_build(&dst, &log_a, 0x77ULL, 2000);
    /* The range from the later (in key order) of partition p's two
     * buckets on: a whole bucket moves (its buckets have indexes, which
     * are not cut), the other stays. */
    int p = part_of(&src, src.buckets[0], "", 0), q = (p + 1) % NPARTS;
    keybuf at, end, other;
    keybuf_init(&at);
    keybuf_init(&end);
    keybuf_init(&other);
    for (int b = 0; b < N_BUCKETS; b++) {
        const char *name = src.buckets[b];
        if (part_of(&src, name, "", 0) != p)
            continue;
        assert_int_equal(keycodec_bucket_part(&other, name, strlen(name)), 0);
        if (!at.len || memcmp(other.data, at.data, other.len < at.len ? other.len : at.len) > 0) {
            keybuf_reset(&at);
            assert_int_equal(keybuf_append(&at, other.data, other.len), 0);
        }
    }
    keybuf_free(&other);
    const uint8_t *rs, *re;
    size_t rsn, ren;
    int part;
    rangemap_entry(src.rm, rangemap_index(src.rm, at.data, at.len), &rs, &rsn, &re, &ren, &part);
    assert_int_equal(part, p);
    assert_int_equal(keybuf_append(&end, re, ren), 0);
    char why[256];
    rangemap *next = rangemap_split(src.rm, at.data, at.len, q, NPARTS, why, sizeof(why));
    rangemap *in = rangemap_split(src.rm, at.data, at.len, NPARTS, NPARTS + 1, why, sizeof(why));
    assert_non_null(next);
    assert_non_null(in);
    int64_t x = handoff_ev(&src, p, next, &at, &end, q, -1, -1);
    char xpre[64];
    snprintf(xpre, sizeof(xpre), "outcomes 78%08x%016llx", p, (unsigned long long)x);

    membuf m = {0};
    objlog_ckpt_info info;
    char err[512];
    assert_int_equal(objlog_ckpt_export_handoff(src.store, p, x, membuf_write, &m, &info, err,
                                                sizeof(err)), 0);
    assert_int_equal(info.applied, x);
    assert_int_equal(info.bytes, m.len);
    size_t want_rows = 0;
    char *want = range_dump(src.store, in, xpre, &want_rows);
    assert_true(want_rows > 50);
    assert_int_equal(info.rows, want_rows);
    assert_non_null(strstr(want, xpre)); /* the marker rides along */

    /* Refused headers: nothing written. */
    char *before = partdump(dst.store, in, -3, 0, NULL);
    keybuf short_end;
    keybuf_init(&short_end);
    assert_int_equal(keybuf_append(&short_end, at.data, at.len), 0);
    assert_int_equal(keybuf_append(&short_end, "z", 1), 0);
    assert_int_equal(import_range(dst.store, p, x, 3, &at, &end, &m, m.len, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "map epoch 2; its RangeIn has epoch 3"));
    assert_int_equal(import_range(dst.store, p, x, 2, &at, &short_end, &m, m.len, err,
                                  sizeof(err)), -1);
    assert_non_null(strstr(err, "moves another range"));
    assert_int_equal(import_range(dst.store, p, x + 1, 2, &at, &end, &m, m.len, err,
                                  sizeof(err)), -1);
    assert_non_null(strstr(err, "the range given away at"));
    membuf pm;
    export_part(&src, p, &pm, &info);
    assert_int_equal(import_range(dst.store, p, x, 2, &at, &end, &pm, pm.len, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "a partition's checkpoint, not a range's"));
    /* A store that got p from that checkpoint (taken after x) did not
     * apply x itself: it serves no stream of x. */
    world cp;
    world_build(&cp, &log_a, 5, 0);
    int64_t cpa = -1;
    if (import_bytes(cp.store, cp.rm, p, pm.data, pm.len, 0, &cpa, err, sizeof(err)))
        fail_msg("import: %s", err);
    membuf none = {0};
    assert_int_equal(objlog_ckpt_export_handoff(cp.store, p, x, membuf_write, &none, &info,
                                                err, sizeof(err)), OBJLOG_CKPT_NO_HANDOFF);
    assert_non_null(strstr(err, "copied here from a checkpoint"));
    free(none.data);
    world_free(&cp);
    free(pm.data);
    char *after = partdump(dst.store, in, -3, 0, NULL);
    assert_string_equal(after, before);
    free(after);

    /* Into a store holding stale rows of the range. */
    size_t stale = 0;
    free(partdump(dst.store, in, NPARTS, 1, &stale));
    assert_true(stale > 0);
    char *others = partdump(dst.store, in, NPARTS, 0, NULL);
    if (import_range(dst.store, p, x, 2, &at, &end, &m, m.len, err, sizeof(err)))
        fail_msg("range import: %s", err);
    char *got = range_dump(dst.store, in, xpre, NULL);
    assert_string_equal(got, want);
    uint8_t rkey[32];
    size_t rkn = objlog_ckpt_rimported_key(rkey, p, x);
    assert_true(meta_has(dst.store, rkey, rkn)); /* the RangeIn may apply */
    char *others_now = partdump(dst.store, in, NPARTS, 0, NULL);
    char *others_now_x = lines_with(others_now, xpre, 0);
    assert_string_equal(others_now_x, others);
    free(got);
    free(others_now);
    free(others_now_x);

    /* Half a stream, abandoned: the range is empty here, no marker. */
    assert_int_equal(import_range(dst.store, p, x, 2, &at, &end, &m, m.len / 2, err,
                                  sizeof(err)), 0);
    size_t left = 1;
    free(range_dump(dst.store, in, xpre, &left));
    assert_int_equal(left, 0);
    assert_false(meta_has(dst.store, rkey, rkn));
    char *rest = partdump(dst.store, in, NPARTS, 0, NULL);
    assert_null(strstr(rest, "meta 72696d706f7274696e67")); /* "rimporting" */
    free(rest);
    /* ... and one cut off by a crash: its rows go when the store opens. */
    range_start rst = {p, x, &at, &end};
    crash_mid_import(&dst, start_range, range_marked, &rst, &m, m.len * 2 / 3);
    left = 1;
    free(range_dump(dst.store, in, xpre, &left));
    assert_int_equal(left, 0);

    /* Exports refused. */
    membuf e = {0};
    assert_int_equal(objlog_ckpt_export_handoff(src.store, p, x + 5, membuf_write, &e, &info,
                                                err, sizeof(err)), OBJLOG_CKPT_NOT_YET);
    assert_int_equal(objlog_ckpt_export_handoff(src.store, p, x - 1, membuf_write, &e, &info,
                                                err, sizeof(err)), OBJLOG_CKPT_NO_HANDOFF);
    /* The range taken by q, then given back to p: p's rows of it are not
     * those of x any more. (Here q's RangeIn takes the marker; on a node
     * that does not apply q it stays, as put back below.) */
    uint8_t mk[13] = {'x'};
    apply_put_be32(mk + 1, (uint32_t)p);
    apply_put_be64(mk + 5, (uint64_t)x);
    rocksdb_readoptions_t *rro = rocksdb_readoptions_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *rerr = NULL;
    size_t mvn = 0;
    char *mv = rocksdb_get_cf(objlog_store_db(src.store), rro,
                              objlog_store_cf(src.store, OBJLOG_CF_OUTCOMES), (const char *)mk,
                              sizeof(mk), &mvn, &rerr);
    assert_null(rerr);
    assert_non_null(mv);
    handoff_ev(&src, q, next, &at, &end, -1, p, x);
    rangemap *back = rangemap_move(next, at.data, at.len, p, NPARTS, why, sizeof(why));
    assert_non_null(back);
    int64_t y = handoff_ev(&src, q, back, &at, &end, p, -1, -1);
    handoff_ev(&src, p, back, &at, &end, -1, q, y);
    rocksdb_put_cf(objlog_store_db(src.store), wo, objlog_store_cf(src.store, OBJLOG_CF_OUTCOMES),
                   (const char *)mk, sizeof(mk), mv, mvn, &rerr);
    assert_null(rerr);
    rocksdb_free(mv);
    rocksdb_readoptions_destroy(rro);
    rocksdb_writeoptions_destroy(wo);
    assert_int_equal(objlog_ckpt_export_handoff(src.store, p, x, membuf_write, &e, &info, err,
                                                sizeof(err)), OBJLOG_CKPT_MOVED_ON);
    assert_non_null(strstr(err, "holds part of the range"));
    free(e.data);
    rangemap_destroy(back);
    rangemap_destroy(next);
    rangemap_destroy(in);
    keybuf_free(&at);
    keybuf_free(&end);
    keybuf_free(&short_end);
    free(want);
    free(before);
    free(others);
    free(m.data);
    world_free(&src);
    world_free(&dst);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_export_is_deterministic),
        cmocka_unit_test(test_export_never_applied),
        cmocka_unit_test(test_corrupt_byte),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_refused_headers),
        cmocka_unit_test(test_format_by_hand),
        cmocka_unit_test(test_crash_mid_import),
        cmocka_unit_test(test_range_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
