/* test_indexes.c: attribute indexes in the state machine (materializer/
 * indexes.c) over a real RocksDB. The oracle is a brute-force scan of the
 * `objects` view: for every index, the 'e' rows must be exactly one per key
 * (<= the cursor while building) whose current version has the field, each
 * holding that key's `objects` row, and the 'c' rows the count and byte sum
 * per value. Checked after exact scenarios in every versioning state and
 * after random put/overwrite/delete/version-delete/multipart sequences that
 * run during a backfill; replay with other batch boundaries must give a
 * byte-identical store dump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apply.h"
#include "keycodec.h"
#include "materializer.h"
#include "proc.h"
#include "rows.h"

#define NPARTS 4
#define EPOCH 1
#define T0 1700000000000LL

#define OK OBJLOG__OUTCOME_CODE__OUTCOME_OK
#define INVALID_ARG OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT
#define NO_INDEX OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_INDEX
#define IX_EXISTS OBJLOG__OUTCOME_CODE__OUTCOME_INDEX_ALREADY_EXISTS
#define TOO_MANY_IX OBJLOG__OUTCOME_CODE__OUTCOME_TOO_MANY_INDEXES
#define NO_BUCKET OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
    apply_batch *b;
    int64_t offset;
    int one_batch;       /* write only at flush() */
    int batch_every;     /* > 0: write every n events */
    /* the log so far, to replay elsewhere */
    uint8_t **log;
    size_t *log_len;
    size_t n_log;
} fixture;

static void fx_open(fixture *f) {
    char err[256];
    memset(f, 0, sizeof(*f));
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(NPARTS, EPOCH);
    f->b = apply_batch_new(f->store, f->rm);
}

static void fx_write(fixture *f) {
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(f->store), wo, apply_batch_wb(f->b), &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    apply_batch_written(f->b);
    apply_batch_clear(f->b);
}

static void fx_close(fixture *f) {
    fx_write(f);
    apply_batch_destroy(f->b);
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
    for (size_t i = 0; i < f->n_log; i++)
        free(f->log[i]);
    free(f->log);
    free(f->log_len);
}

static int part_of(fixture *f, const char *bucket) {
    keybuf kb;
    keybuf_init(&kb);
    keycodec_route_key(&kb, bucket, strlen(bucket), (const uint8_t *)"", 0);
    int p = rangemap_partition(f->rm, kb.data, kb.len);
    keybuf_free(&kb);
    return p;
}

/* Applies the packed event; returns its outcome code. */
static Objlog__OutcomeCode fx_apply_raw(fixture *f, const uint8_t *buf, size_t n) {
    char why[128], err[256];
    Objlog__Event *ev = apply_decode(buf, n, why, sizeof(why));
    assert_non_null(ev);
    Objlog__OutcomeCode code;
    int64_t off = ++f->offset;
    assert_int_equal(apply_event(f->b, part_of(f, ev->bucket), off, T0 + off * 1000, ev,
                                 &code, err, sizeof(err)), 0);
    objlog__event__free_unpacked(ev, NULL);
    if (!f->one_batch && (f->batch_every <= 1 || off % f->batch_every == 0))
        fx_write(f);
    return code;
}

static Objlog__OutcomeCode fx_apply(fixture *f, Objlog__Event *ev) {
    static uint32_t rid;
    uint8_t id[16] = {0};
    rid++;
    memcpy(id, &rid, sizeof(rid));
    ev->request_id.data = id;
    ev->request_id.len = sizeof(id);
    ev->range_epoch = EPOCH;
    size_t n = objlog__event__get_packed_size(ev);
    uint8_t *buf = malloc(n);
    objlog__event__pack(ev, buf);
    f->log = realloc(f->log, (f->n_log + 1) * sizeof(*f->log));
    f->log_len = realloc(f->log_len, (f->n_log + 1) * sizeof(*f->log_len));
    f->log[f->n_log] = buf;
    f->log_len[f->n_log++] = n;
    return fx_apply_raw(f, buf, n);
}

/* ---- events ---- */

static Objlog__OutcomeCode mkb(fixture *f, const char *b, Objlog__Versioning v) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.tenant = "t";
    cb.versioning = v;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    return fx_apply(f, &ev);
}

static Objlog__OutcomeCode setv(fixture *f, const char *b, Objlog__Versioning v) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    sv.status = v;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
    ev.set_versioning = &sv;
    return fx_apply(f, &ev);
}

/* Object attributes: cust NULL = no user metadata "cust"; tier NULL = no
 * tag "tier"; ct NULL = no content type. */
typedef struct attrs {
    const char *cust, *tier, *ct, *sc;
    uint64_t size;
} attrs;

static void fill_meta(Objlog__ObjectMeta *m, Objlog__UserMeta *um, Objlog__UserMeta **ump,
                      Objlog__UserMeta *tg, Objlog__UserMeta **tgp, const attrs *a) {
    m->size = a->size;
    m->etag = "e";
    m->content_type = (char *)(a->ct ? a->ct : "");
    m->storage_class = (char *)(a->sc ? a->sc : "");
    if (a->cust) {
        um->name = "cust";
        um->value = (char *)a->cust;
        *ump = um;
        m->user_metadata = ump;
        m->n_user_metadata = 1;
    }
    if (a->tier) {
        tg->name = "tier";
        tg->value = (char *)a->tier;
        *tgp = tg;
        m->tags = tgp;
        m->n_tags = 1;
    }
}

static Objlog__OutcomeCode put(fixture *f, const char *b, const char *key, attrs a) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    Objlog__UserMeta um = OBJLOG__USER_META__INIT, tg = OBJLOG__USER_META__INIT, *ump, *tgp;
    fill_meta(&m, &um, &ump, &tg, &tgp, &a);
    po.meta = &m;
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    return fx_apply(f, &ev);
}

static Objlog__OutcomeCode del(fixture *f, const char *b, const char *key, const char *vid) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = (char *)(vid ? vid : "");
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    return fx_apply(f, &ev);
}

/* CreateUpload with attrs, one part of 1 byte ("a"), complete. */
static Objlog__OutcomeCode mpu(fixture *f, const char *b, const char *key, attrs a) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    Objlog__UserMeta um = OBJLOG__USER_META__INIT, tg = OBJLOG__USER_META__INIT, *ump, *tgp;
    fill_meta(&m, &um, &ump, &tg, &tgp, &a);
    cu.meta = &m;
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
    ev.create_upload = &cu;
    assert_int_equal(fx_apply(f, &ev), OK);
    char id[KEYCODEC_VERSION_ID_LEN];
    keycodec_version_id(keycodec_seq(EPOCH, f->offset), id);
    Objlog__Event pe = OBJLOG__EVENT__INIT;
    Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
    up.upload_id = id;
    up.part_number = 1;
    up.size = 1;
    up.etag = "0cc175b9c0f1b6a831c399e269772661";
    pe.bucket = (char *)b;
    pe.key = ev.key;
    pe.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
    pe.upload_part = &up;
    assert_int_equal(fx_apply(f, &pe), OK);
    Objlog__Event ce = OBJLOG__EVENT__INIT;
    Objlog__CompleteUpload cpl = OBJLOG__COMPLETE_UPLOAD__INIT;
    Objlog__CompletedPart cp = OBJLOG__COMPLETED_PART__INIT, *cpp = &cp;
    cp.part_number = 1;
    cp.etag = up.etag;
    cpl.upload_id = id;
    cpl.parts = &cpp;
    cpl.n_parts = 1;
    ce.bucket = (char *)b;
    ce.key = ev.key;
    ce.op_case = OBJLOG__EVENT__OP_COMPLETE_UPLOAD;
    ce.complete_upload = &cpl;
    return fx_apply(f, &ce);
}

static Objlog__OutcomeCode put_index(fixture *f, const char *b, const char *name,
                                     const char *field, int lm) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutIndex pi = OBJLOG__PUT_INDEX__INIT;
    pi.name = (char *)name;
    pi.field = (char *)field;
    pi.with_last_modified = lm;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_PUT_INDEX;
    ev.put_index = &pi;
    return fx_apply(f, &ev);
}

static Objlog__OutcomeCode drop_index(fixture *f, const char *b, const char *name) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DropIndex di = OBJLOG__DROP_INDEX__INIT;
    di.name = (char *)name;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_DROP_INDEX;
    ev.drop_index = &di;
    return fx_apply(f, &ev);
}

static Objlog__OutcomeCode build_index(fixture *f, const char *b, const char *name,
                                       uint32_t max) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__BuildIndex bi = OBJLOG__BUILD_INDEX__INIT;
    bi.name = (char *)name;
    bi.max_keys = max;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_BUILD_INDEX;
    ev.build_index = &bi;
    return fx_apply(f, &ev);
}

/* ---- reading the store ---- */

static Objlog__BucketRecord *bucket_record(fixture *f, const char *b) {
    keybuf k;
    keybuf_init(&k);
    keycodec_bucket_part(&k, b, strlen(b));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn;
    char *v = rocksdb_get_cf(objlog_store_db(f->store), ro,
                             objlog_store_cf(f->store, OBJLOG_CF_BUCKETS), (const char *)k.data,
                             k.len, &vn, &err);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&k);
    assert_null(err);
    if (!v)
        return NULL;
    Objlog__BucketRecord *r = objlog__bucket_record__unpack(NULL, vn, (const uint8_t *)v);
    rocksdb_free(v);
    return r;
}

typedef struct row {
    keybuf k, v;
} row;

typedef struct rows {
    row *r;
    size_t n;
} rows;

static void rows_add(rows *rs, const void *k, size_t kn, const void *v, size_t vn) {
    rs->r = realloc(rs->r, (rs->n + 1) * sizeof(*rs->r));
    row *r = &rs->r[rs->n++];
    keybuf_init(&r->k);
    keybuf_init(&r->v);
    keybuf_append(&r->k, k, kn);
    keybuf_append(&r->v, v, vn);
}

static void rows_free(rows *rs) {
    for (size_t i = 0; i < rs->n; i++) {
        keybuf_free(&rs->r[i].k);
        keybuf_free(&rs->r[i].v);
    }
    free(rs->r);
    memset(rs, 0, sizeof(*rs));
}

static int row_cmp(const void *a, const void *b) {
    const row *x = a, *y = b;
    size_t m = x->k.len < y->k.len ? x->k.len : y->k.len;
    int c = memcmp(x->k.data, y->k.data, m);
    return c ? c : (x->k.len > y->k.len) - (x->k.len < y->k.len);
}

/* Every row of cf under prefix p, in key order. */
static void scan_prefix(fixture *f, objlog_cf cf, const keybuf *p, rows *out) {
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                                        objlog_store_cf(f->store, cf));
    for (rocksdb_iter_seek(it, (const char *)p->data, p->len); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kn, vn;
        const char *k = rocksdb_iter_key(it, &kn);
        if (kn < p->len || memcmp(k, p->data, p->len) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vn);
        rows_add(out, k, kn, v, vn);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* The brute-force oracle for index d of bucket b: expected 'e' and 'c'
 * rows from a scan of `objects`. */
static void oracle(fixture *f, const char *b, const Objlog__IndexDef *d, rows *e, rows *c) {
    keybuf bp, ek, ck;
    keybuf_init(&bp);
    keybuf_init(&ek);
    keybuf_init(&ck);
    keycodec_bucket_part(&bp, b, strlen(b));
    rows objs = {0};
    scan_prefix(f, OBJLOG_CF_OBJECTS, &bp, &objs);
    rows counts = {0};
    for (size_t i = 0; i < objs.n; i++) {
        Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, objs.r[i].v.len,
                                                                  objs.r[i].v.data);
        assert_non_null(r);
        const char *val;
        size_t vn;
        int in = !d->building ||
                 (d->cursor.len &&
                  (memcmp(r->key.data, d->cursor.data,
                          r->key.len < d->cursor.len ? r->key.len : d->cursor.len) < 0 ||
                   (memcmp(r->key.data, d->cursor.data,
                           r->key.len < d->cursor.len ? r->key.len : d->cursor.len) == 0 &&
                    r->key.len <= d->cursor.len)));
        if (in && objlog_index_value(d->field, r, &val, &vn)) {
            uint8_t lm[8];
            objlog_index_lm_put(lm, r->log_time_ms);
            objlog_index_prefix(&ek, b, 'e', d->name);
            keycodec_append_enc(&ek, (const uint8_t *)val, vn);
            if (d->with_last_modified)
                keybuf_append(&ek, lm, 8);
            keycodec_append_enc(&ek, r->key.data, r->key.len);
            rows_add(e, ek.data, ek.len, objs.r[i].v.data, objs.r[i].v.len);
            objlog_index_prefix(&ck, b, 'c', d->name);
            keycodec_append_enc(&ck, (const uint8_t *)val, vn);
            uint8_t one[16];
            put_be64(one, 1);
            put_be64(one + 8, r->meta->size);
            rows_add(&counts, ck.data, ck.len, one, 16);
        }
        objlog__version_record__free_unpacked(r, NULL);
    }
    if (e->n)
        qsort(e->r, e->n, sizeof(row), row_cmp);
    if (counts.n)
        qsort(counts.r, counts.n, sizeof(row), row_cmp);
    for (size_t i = 0; i < counts.n;) {
        uint64_t n = 0, bytes = 0;
        size_t j = i;
        for (; j < counts.n && row_cmp(&counts.r[i], &counts.r[j]) == 0; j++) {
            n++;
            bytes += apply_get_be64(counts.r[j].v.data + 8);
        }
        uint8_t v[16];
        put_be64(v, n);
        put_be64(v + 8, bytes);
        rows_add(c, counts.r[i].k.data, counts.r[i].k.len, v, 16);
        i = j;
    }
    rows_free(&counts);
    rows_free(&objs);
    keybuf_free(&bp);
    keybuf_free(&ek);
    keybuf_free(&ck);
}

static void assert_rows_equal(const rows *want, const rows *got, const char *what) {
    if (want->n != got->n)
        fail_msg("%s: %zu rows expected, %zu found", what, want->n, got->n);
    for (size_t i = 0; i < want->n; i++) {
        if (row_cmp(&want->r[i], &got->r[i]) != 0)
            fail_msg("%s: row %zu has another key", what, i);
        if (want->r[i].v.len != got->r[i].v.len ||
            memcmp(want->r[i].v.data, got->r[i].v.data, want->r[i].v.len) != 0)
            fail_msg("%s: row %zu has another value", what, i);
    }
}

/* Every index of bucket b agrees with the oracle; no row of a dropped
 * index is left. Returns how many indexes are still building. */
static int check_bucket(fixture *f, const char *b) {
    fx_write(f);
    Objlog__BucketRecord *br = bucket_record(f, b);
    assert_non_null(br);
    int building = 0;
    size_t total = 0;
    for (size_t i = 0; i < br->n_indexes; i++) {
        const Objlog__IndexDef *d = br->indexes[i];
        rows we = {0}, wc = {0}, ge = {0}, gc = {0};
        oracle(f, b, d, &we, &wc);
        keybuf p;
        keybuf_init(&p);
        objlog_index_prefix(&p, b, 'e', d->name);
        scan_prefix(f, OBJLOG_CF_INDEXES, &p, &ge);
        objlog_index_prefix(&p, b, 'c', d->name);
        scan_prefix(f, OBJLOG_CF_INDEXES, &p, &gc);
        keybuf_free(&p);
        assert_rows_equal(&we, &ge, d->name);
        assert_rows_equal(&wc, &gc, d->name);
        total += ge.n + gc.n;
        building += d->building;
        rows_free(&we);
        rows_free(&wc);
        rows_free(&ge);
        rows_free(&gc);
    }
    /* nothing else under the bucket's base: dropped indexes left no row */
    keybuf base;
    keybuf_init(&base);
    keycodec_route_key(&base, b, strlen(b), (const uint8_t *)"", 0);
    rows all = {0};
    scan_prefix(f, OBJLOG_CF_INDEXES, &base, &all);
    assert_int_equal(all.n, total);
    rows_free(&all);
    keybuf_free(&base);
    objlog__bucket_record__free_unpacked(br, NULL);
    return building;
}

/* count and bytes of value v in index name (0, 0 when no row). */
static void count_of(fixture *f, const char *b, const char *name, const char *v,
                     uint64_t *n, uint64_t *bytes) {
    keybuf k;
    keybuf_init(&k);
    objlog_index_prefix(&k, b, 'c', name);
    keycodec_append_enc(&k, (const uint8_t *)v, strlen(v));
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vn = 0;
    char *val = rocksdb_get_cf(objlog_store_db(f->store), ro,
                               objlog_store_cf(f->store, OBJLOG_CF_INDEXES),
                               (const char *)k.data, k.len, &vn, &err);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&k);
    assert_null(err);
    *n = *bytes = 0;
    if (val) {
        assert_int_equal(vn, 16);
        *n = apply_get_be64((const uint8_t *)val);
        *bytes = apply_get_be64((const uint8_t *)val + 8);
        rocksdb_free(val);
    }
}

static char *dump(fixture *f) {
    char *buf = NULL, err[256];
    size_t n = 0;
    fx_write(f);
    FILE *out = open_memstream(&buf, &n);
    assert_int_equal(objlog_store_dump(f->store, out, err, sizeof(err)), 0);
    fclose(out);
    return buf;
}

/* Replays f's log into a new store with batches of every n events (0: one
 * batch) and checks the dump is identical. */
static void assert_replay_identical(fixture *f, int every) {
    fixture g;
    fx_open(&g);
    g.one_batch = every == 0;
    g.batch_every = every;
    for (size_t i = 0; i < f->n_log; i++)
        fx_apply_raw(&g, f->log[i], f->log_len[i]);
    char *a = dump(f), *b = dump(&g);
    assert_string_equal(a, b);
    free(a);
    free(b);
    fx_close(&g);
}

static const Objlog__Versioning vstates[] = {
    OBJLOG__VERSIONING__VERSIONING_UNVERSIONED, OBJLOG__VERSIONING__VERSIONING_ENABLED,
    OBJLOG__VERSIONING__VERSIONING_SUSPENDED};

/* ---- tests ---- */

/* Exact counters after each kind of change of a key's current version,
 * in every versioning state. */
static void test_rows_exact_every_versioning_state(void **state) {
    (void)state;
    for (int vs = 0; vs < 3; vs++) {
        fixture f;
        fx_open(&f);
        uint64_t n, bytes;
        assert_int_equal(mkb(&f, "bk", vstates[vs]), OK);
        assert_int_equal(put_index(&f, "bk", "cust", "user_metadata.cust", 0), OK);
        assert_int_equal(put_index(&f, "bk", "tier", "tag.tier", 1), OK);
        assert_int_equal(put_index(&f, "bk", "ct", "content_type", 0), OK);
        assert_int_equal(put_index(&f, "bk", "sc", "storage_class", 0), OK);
        assert_int_equal(check_bucket(&f, "bk"), 0); /* empty bucket: ready at once */
        assert_int_equal(put(&f, "bk", "a", (attrs){"x", "hot", "text/plain", NULL, 10}), OK);
        assert_int_equal(put(&f, "bk", "b", (attrs){"y", NULL, NULL, "GLACIER", 20}), OK);
        assert_int_equal(put(&f, "bk", "c", (attrs){NULL, "cold", NULL, NULL, 40}), OK);
        count_of(&f, "bk", "cust", "x", &n, &bytes);
        assert_true(n == 1 && bytes == 10);
        count_of(&f, "bk", "sc", "STANDARD", &n, &bytes);
        assert_true(n == 2 && bytes == 50);
        count_of(&f, "bk", "ct", "", &n, &bytes);
        assert_true(n == 0 && bytes == 0); /* sparse: no content type, no entry */
        /* overwrite moves a from x to y */
        assert_int_equal(put(&f, "bk", "a", (attrs){"y", "hot", NULL, NULL, 5}), OK);
        count_of(&f, "bk", "cust", "x", &n, &bytes);
        assert_true(n == 0 && bytes == 0);
        count_of(&f, "bk", "cust", "y", &n, &bytes);
        assert_true(n == 2 && bytes == 25);
        check_bucket(&f, "bk");
        /* delete (marker, or removal when unversioned) */
        assert_int_equal(del(&f, "bk", "b", NULL), OK);
        count_of(&f, "bk", "cust", "y", &n, &bytes);
        assert_true(n == 1 && bytes == 5);
        check_bucket(&f, "bk");
        /* multipart complete */
        assert_int_equal(mpu(&f, "bk", "m", (attrs){"z", "hot", NULL, NULL, 0}), OK);
        count_of(&f, "bk", "cust", "z", &n, &bytes);
        assert_true(n == 1 && bytes == 1);
        count_of(&f, "bk", "tier", "hot", &n, &bytes);
        assert_true(n == 2 && bytes == 6);
        check_bucket(&f, "bk");
        if (vstates[vs] == OBJLOG__VERSIONING__VERSIONING_ENABLED) {
            /* deleting the newest version by id exposes the older one */
            char vid[KEYCODEC_VERSION_ID_LEN];
            assert_int_equal(put(&f, "bk", "a", (attrs){"w", NULL, NULL, NULL, 7}), OK);
            keycodec_version_id(keycodec_seq(EPOCH, f.offset), vid);
            count_of(&f, "bk", "cust", "w", &n, &bytes);
            assert_true(n == 1 && bytes == 7);
            assert_int_equal(del(&f, "bk", "a", vid), OK);
            count_of(&f, "bk", "cust", "w", &n, &bytes);
            assert_true(n == 0);
            count_of(&f, "bk", "cust", "y", &n, &bytes);
            assert_true(n == 1 && bytes == 5);
            /* a marker on top, then removing the marker brings it back */
            assert_int_equal(del(&f, "bk", "a", NULL), OK);
            keycodec_version_id(keycodec_seq(EPOCH, f.offset), vid);
            count_of(&f, "bk", "cust", "y", &n, &bytes);
            assert_true(n == 0);
            assert_int_equal(del(&f, "bk", "a", vid), OK);
            count_of(&f, "bk", "cust", "y", &n, &bytes);
            assert_true(n == 1 && bytes == 5);
        }
        if (vstates[vs] == OBJLOG__VERSIONING__VERSIONING_SUSPENDED) {
            assert_int_equal(del(&f, "bk", "a", "null"), OK);
            count_of(&f, "bk", "cust", "y", &n, &bytes);
            assert_true(n == 0);
        }
        check_bucket(&f, "bk");
        /* drop removes every row of that index only */
        assert_int_equal(drop_index(&f, "bk", "tier"), OK);
        count_of(&f, "bk", "tier", "hot", &n, &bytes);
        assert_true(n == 0);
        check_bucket(&f, "bk");
        assert_replay_identical(&f, 0);
        assert_replay_identical(&f, 3);
        fx_close(&f);
    }
}

static void test_index_event_outcomes(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    assert_int_equal(put_index(&f, "nob", "i", "content_type", 0), NO_BUCKET);
    assert_int_equal(mkb(&f, "bk", OBJLOG__VERSIONING__VERSIONING_ENABLED), OK);
    assert_int_equal(put_index(&f, "bk", "", "content_type", 0), INVALID_ARG);
    assert_int_equal(put_index(&f, "bk", "a/b", "content_type", 0), INVALID_ARG);
    assert_int_equal(put_index(&f, "bk", "i", "size", 0), INVALID_ARG);
    assert_int_equal(put_index(&f, "bk", "i", "user_metadata.", 0), INVALID_ARG);
    assert_int_equal(put_index(&f, "bk", "i", "tag.t", 0), OK);
    assert_int_equal(put_index(&f, "bk", "i", "tag.t", 0), OK); /* same again: OK */
    assert_int_equal(put_index(&f, "bk", "i", "tag.t", 1), IX_EXISTS);
    assert_int_equal(drop_index(&f, "bk", "nope"), NO_INDEX);
    assert_int_equal(build_index(&f, "bk", "nope", 0), NO_INDEX);
    assert_int_equal(build_index(&f, "bk", "i", 0), OK); /* ready: no change */
    for (int i = 1; i < OBJLOG_INDEXES_MAX; i++) {
        char name[16];
        snprintf(name, sizeof(name), "i%d", i);
        assert_int_equal(put_index(&f, "bk", name, "content_type", 0), OK);
    }
    assert_int_equal(put_index(&f, "bk", "last", "content_type", 0), TOO_MANY_IX);
    Objlog__BucketRecord *br = bucket_record(&f, "bk");
    assert_int_equal(br->n_indexes, OBJLOG_INDEXES_MAX);
    for (size_t i = 1; i < br->n_indexes; i++) /* sorted by name */
        assert_true(strcmp(br->indexes[i - 1]->name, br->indexes[i]->name) < 0);
    objlog__bucket_record__free_unpacked(br, NULL);
    fx_close(&f);
}

/* Backfill: created on a bucket with data it is building, steps move the
 * cursor, writes on both sides of the cursor land right, and the last step
 * makes it ready and exact. */
static void test_backfill_steps(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    assert_int_equal(mkb(&f, "bk", OBJLOG__VERSIONING__VERSIONING_ENABLED), OK);
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%02d", i);
        put(&f, "bk", key, (attrs){i % 2 ? "odd" : "even", NULL, NULL, NULL, (uint64_t)i});
    }
    assert_int_equal(put_index(&f, "bk", "cust", "user_metadata.cust", 1), OK);
    Objlog__BucketRecord *br = bucket_record(&f, "bk");
    assert_true(br->indexes[0]->building);
    assert_int_equal(br->indexes[0]->cursor.len, 0);
    objlog__bucket_record__free_unpacked(br, NULL);
    assert_int_equal(check_bucket(&f, "bk"), 1);
    assert_int_equal(build_index(&f, "bk", "cust", 4), OK);
    br = bucket_record(&f, "bk");
    assert_int_equal(br->indexes[0]->scanned, 4);
    assert_memory_equal(br->indexes[0]->cursor.data, "k03", 3);
    objlog__bucket_record__free_unpacked(br, NULL);
    check_bucket(&f, "bk");
    /* below the cursor: maintained; above: left to the cursor */
    put(&f, "bk", "k01", (attrs){"even", NULL, NULL, NULL, 100});
    put(&f, "bk", "k08", (attrs){"odd", NULL, NULL, NULL, 100});
    del(&f, "bk", "k02", NULL);
    del(&f, "bk", "k09", NULL);
    check_bucket(&f, "bk");
    assert_int_equal(build_index(&f, "bk", "cust", 4), OK);
    check_bucket(&f, "bk");
    assert_int_equal(build_index(&f, "bk", "cust", 4), OK);
    assert_int_equal(check_bucket(&f, "bk"), 0);
    uint64_t n, bytes;
    count_of(&f, "bk", "cust", "odd", &n, &bytes);
    assert_true(n == 4 && bytes == 3 + 5 + 7 + 100);
    count_of(&f, "bk", "cust", "even", &n, &bytes);
    assert_true(n == 4 && bytes == 0 + 100 + 4 + 6);
    assert_replay_identical(&f, 2);
    fx_close(&f);
}

/* Random operations on two buckets, indexes created, built in random
 * steps, dropped and re-created while writes go on; after each round every
 * index agrees with the brute-force scan; replays give the same dump. */
static void test_bruteforce_random(void **state) {
    (void)state;
    static const char *const custs[] = {"c1", "c2", "c3", NULL};
    static const char *const tiers[] = {"hot", "cold", NULL};
    static const char *const cts[] = {"text/plain", "image/png", NULL};
    static const char *const scs[] = {"GLACIER", NULL};
    static const char *const buckets[] = {"bx", "by"};
    srand(15);
    fixture f;
    fx_open(&f);
    f.batch_every = 7;
    mkb(&f, "bx", OBJLOG__VERSIONING__VERSIONING_ENABLED);
    mkb(&f, "by", OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
    put_index(&f, "bx", "cust", "user_metadata.cust", 0);
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 25; i++) {
            const char *b = buckets[rand() % 2];
            char key[8];
            snprintf(key, sizeof(key), "k%d", rand() % 30);
            attrs a = {custs[rand() % 4], tiers[rand() % 3], cts[rand() % 3],
                       scs[rand() % 2], (uint64_t)(rand() % 1000)};
            int op = rand() % 100;
            if (op < 55) {
                put(&f, b, key, a);
            } else if (op < 70) {
                del(&f, b, key, NULL);
            } else if (op < 80) {
                /* delete the version a random earlier event made */
                char vid[KEYCODEC_VERSION_ID_LEN];
                keycodec_version_id(keycodec_seq(EPOCH, 1 + rand() % f.offset), vid);
                del(&f, b, key, rand() % 4 ? vid : "null");
            } else if (op < 84) {
                mpu(&f, b, key, a);
            } else if (op < 88) {
                setv(&f, b, rand() % 2 ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                                       : OBJLOG__VERSIONING__VERSIONING_SUSPENDED);
            } else if (op < 96) {
                static const char *const names[] = {"cust", "tier", "ct", "sc"};
                static const char *const fields[] = {"user_metadata.cust", "tag.tier",
                                                     "content_type", "storage_class"};
                int x = rand() % 4;
                build_index(&f, b, names[x], 1 + rand() % 6);
                if (rand() % 3 == 0)
                    put_index(&f, b, names[x], fields[x], x % 2);
            } else {
                static const char *const names[] = {"cust", "tier", "ct", "sc"};
                drop_index(&f, b, names[rand() % 4]);
            }
        }
        check_bucket(&f, "bx");
        check_bucket(&f, "by");
    }
    /* finish every build */
    for (int i = 0; i < 2; i++) {
        static const char *const names[] = {"cust", "tier", "ct", "sc"};
        for (int x = 0; x < 4; x++)
            for (int s = 0; s < 40; s++)
                build_index(&f, buckets[i], names[x], 3);
        assert_int_equal(check_bucket(&f, buckets[i]), 0);
    }
    assert_replay_identical(&f, 0);
    assert_replay_identical(&f, 1);
    fx_close(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_exact_every_versioning_state),
        cmocka_unit_test(test_index_event_outcomes),
        cmocka_unit_test(test_backfill_steps),
        cmocka_unit_test(test_bruteforce_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
