/* test_apply_attrs.c: the state machine's rules for tags and canned ACLs
 * (materializer/applyattr.c) against a real RocksDB: SetObjectTags and
 * SetObjectAcl on the current version, an older one, the null one, a
 * delete marker, a missing key or version; the tag and ACL checks
 * (attrs.h); SetBucketTags and SetBucketAcl; CreateBucket's and
 * PutObject's ACL. Each outcome is exact (code and version id) and so is
 * the stored record after it; the same events applied in one batch leave
 * the very same rows as one batch per event (replay does not depend on
 * batch boundaries). */
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

#define NPARTS 4
#define EPOCH 1

typedef struct fixture {
    char dir[64];
    objlog_store *store;
    rangemap *rm;
    apply_batch *b;
    int64_t offset[NPARTS];      /* the next offset of each partition */
    int one_batch;               /* every event in one batch until flush */
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

static int32_t part_of(fixture *f, const char *bucket, const char *key) {
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    int p = rangemap_partition(f->rm, rk.data, rk.len);
    keybuf_free(&rk);
    return p;
}

/* Applies ev (bucket and key filled by the caller): its code, and its
 * version id into vid (when not NULL) once the batch is written. */
static Objlog__OutcomeCode apply(fixture *f, Objlog__Event *ev, char *vid, size_t vn) {
    char err[256];
    const char *key = ev->key.len ? (const char *)ev->key.data : "";
    int32_t p = part_of(f, ev->bucket, key);
    int64_t off = f->offset[p]++;
    uint8_t rid[16];
    for (int i = 0; i < 16; i++)
        rid[i] = (uint8_t)(off * 31 + p * 7 + i);
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    ev->range_epoch = EPOCH;
    Objlog__OutcomeCode code;
    assert_int_equal(apply_event(f->b, p, off, 1000 + off, ev, &code, err, sizeof(err)), 0);
    if (!f->one_batch)
        flush(f);
    if (vid) {
        if (f->one_batch)
            flush(f);
        Objlog__Outcome *o;
        assert_int_equal(objlog_store_get_outcome(f->store, p, off, &o, err, sizeof(err)), 1);
        snprintf(vid, vn, "%s", o->version_id);
        objlog__outcome__free_unpacked(o, NULL);
    }
    return code;
}

static Objlog__OutcomeCode create_bucket(fixture *f, const char *bucket, int versioned,
                                         const char *acl) {
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.versioning = versioned ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                              : OBJLOG__VERSIONING__VERSIONING_UNVERSIONED;
    cb.acl = (char *)(acl ? acl : "");
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    return apply(f, &ev, NULL, 0);
}

/* n tags "k0=v", "k1=v", ...; or the one pair given. */
typedef struct tagset {
    Objlog__UserMeta um[64];
    Objlog__UserMeta *p[64];
    char names[64][16];
    size_t n;
} tagset;

static void tags_n(tagset *t, size_t n) {
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        objlog__user_meta__init(&t->um[i]);
        snprintf(t->names[i], sizeof(t->names[i]), "k%zu", i);
        t->um[i].name = t->names[i];
        t->um[i].value = "v";
        t->p[i] = &t->um[i];
    }
}

static void tags_one(tagset *t, const char *k, const char *v) {
    t->n = 1;
    objlog__user_meta__init(&t->um[0]);
    t->um[0].name = (char *)k;
    t->um[0].value = (char *)v;
    t->p[0] = &t->um[0];
}

static Objlog__OutcomeCode put(fixture *f, const char *bucket, const char *key,
                               const char *etag, const char *acl, char *vid, size_t vn) {
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    m.size = 3;
    m.etag = (char *)etag;
    m.acl = (char *)(acl ? acl : "");
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    po.meta = &m;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    return apply(f, &ev, vid, vn);
}

static Objlog__OutcomeCode set_tags(fixture *f, const char *bucket, const char *key,
                                    const char *vid_in, tagset *t, char *vid, size_t vn) {
    Objlog__SetObjectTags st = OBJLOG__SET_OBJECT_TAGS__INIT;
    st.version_id = (char *)vid_in;
    st.n_tags = t ? t->n : 0;
    st.tags = t && t->n ? t->p : NULL;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_SET_OBJECT_TAGS;
    ev.set_object_tags = &st;
    return apply(f, &ev, vid, vn);
}

static Objlog__OutcomeCode set_acl(fixture *f, const char *bucket, const char *key,
                                   const char *vid_in, const char *acl) {
    Objlog__SetObjectAcl sa = OBJLOG__SET_OBJECT_ACL__INIT;
    sa.version_id = (char *)vid_in;
    sa.acl = (char *)acl;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_SET_OBJECT_ACL;
    ev.set_object_acl = &sa;
    return apply(f, &ev, NULL, 0);
}

static Objlog__OutcomeCode bucket_attr(fixture *f, const char *bucket, tagset *t,
                                       const char *acl) {
    Objlog__SetBucketTags st = OBJLOG__SET_BUCKET_TAGS__INIT;
    Objlog__SetBucketAcl sa = OBJLOG__SET_BUCKET_ACL__INIT;
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = (char *)bucket;
    if (acl) {
        sa.acl = (char *)acl;
        ev.op_case = OBJLOG__EVENT__OP_SET_BUCKET_ACL;
        ev.set_bucket_acl = &sa;
    } else {
        st.n_tags = t ? t->n : 0;
        st.tags = t && t->n ? t->p : NULL;
        ev.op_case = OBJLOG__EVENT__OP_SET_BUCKET_TAGS;
        ev.set_bucket_tags = &st;
    }
    return apply(f, &ev, NULL, 0);
}

/* The stored record's tags "k=v,k=v" and ACL of a version (seq of vid)
 * or, vid NULL, of the key's `objects` row. */
static void attrs_of(fixture *f, const char *bucket, const char *key, const char *vid,
                     char *out, size_t n) {
    if (f->one_batch)
        flush(f); /* what the events so far staged, read from the store */
    keybuf rk;
    keybuf_init(&rk);
    keycodec_route_key(&rk, bucket, strlen(bucket), (const uint8_t *)key, strlen(key));
    objlog_cf cf = OBJLOG_CF_OBJECTS;
    if (vid) {
        uint64_t seq;
        assert_int_equal(keycodec_parse_version_id(vid, &seq), 0);
        keycodec_append_be64(&rk, UINT64_MAX - seq);
        cf = OBJLOG_CF_VERSIONS;
    }
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t vn;
    char *e = NULL;
    char *v = rocksdb_get_cf(objlog_store_db(f->store), ro, objlog_store_cf(f->store, cf),
                             (char *)rk.data, rk.len, &vn, &e);
    rocksdb_readoptions_destroy(ro);
    keybuf_free(&rk);
    assert_null(e);
    out[0] = '\0';
    if (!v) {
        snprintf(out, n, "(none)");
        return;
    }
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, vn, (uint8_t *)v);
    rocksdb_free(v);
    assert_non_null(r);
    size_t w = 0;
    for (size_t i = 0; r->meta && i < r->meta->n_tags; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%s=%s", i ? "," : "", r->meta->tags[i]->name,
                              r->meta->tags[i]->value);
    snprintf(out + w, n - w, "|%s|%s", r->meta && r->meta->acl ? r->meta->acl : "",
             r->meta ? r->meta->etag : "?");
    objlog__version_record__free_unpacked(r, NULL);
}

static void bucket_attrs_of(fixture *f, const char *bucket, char *out, size_t n) {
    if (f->one_batch)
        flush(f);
    Objlog__BucketRecord *r;
    char err[256];
    assert_int_equal(objlog_store_get_bucket(f->store, bucket, &r, err, sizeof(err)), 1);
    size_t w = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n_tags; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%s=%s", i ? "," : "", r->tags[i]->name,
                              r->tags[i]->value);
    snprintf(out + w, n - w, "|%s", r->acl ? r->acl : "");
    objlog__bucket_record__free_unpacked(r, NULL);
}

#define NO_KEY OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_KEY
#define NO_VERSION OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_VERSION
#define INVALID OBJLOG__OUTCOME_CODE__OUTCOME_INVALID_ARGUMENT
#define NOT_ALLOWED OBJLOG__OUTCOME_CODE__OUTCOME_METHOD_NOT_ALLOWED
#define OK OBJLOG__OUTCOME_CODE__OUTCOME_OK

/* The whole story, checked step by step. */
static void run_story(fixture *f) {
    char v1[32], v2[32], vid[32], marker[32], s[512];
    tagset t;
    assert_int_equal(create_bucket(f, "b", 1, "public-read"), OK);
    assert_int_equal(create_bucket(f, "bad", 1, "bogus"), INVALID);
    assert_int_equal(put(f, "b", "k", "e1", NULL, v1, sizeof(v1)), OK);
    assert_int_equal(put(f, "b", "k", "e2", "authenticated-read", v2, sizeof(v2)), OK);
    assert_int_equal(put(f, "b", "x", "e9", "everyone", NULL, 0), INVALID);
    /* the current version's tags */
    tags_one(&t, "x", "y");
    assert_int_equal(set_tags(f, "b", "k", "", &t, vid, sizeof(vid)), OK);
    assert_string_equal(vid, v2);
    attrs_of(f, "b", "k", NULL, s, sizeof(s));
    assert_string_equal(s, "x=y|authenticated-read|e2");
    attrs_of(f, "b", "k", v2, s, sizeof(s));
    assert_string_equal(s, "x=y|authenticated-read|e2");
    /* an older one's, the current one untouched */
    tags_one(&t, "old", "v");
    assert_int_equal(set_tags(f, "b", "k", v1, &t, vid, sizeof(vid)), OK);
    assert_string_equal(vid, v1);
    attrs_of(f, "b", "k", v1, s, sizeof(s));
    assert_string_equal(s, "old=v||e1");
    attrs_of(f, "b", "k", NULL, s, sizeof(s));
    assert_string_equal(s, "x=y|authenticated-read|e2");
    /* the checks: nothing changes */
    tags_n(&t, 11);
    assert_int_equal(set_tags(f, "b", "k", "", &t, NULL, 0), INVALID);
    tags_n(&t, 2);
    t.um[1].name = "k0";
    assert_int_equal(set_tags(f, "b", "k", "", &t, NULL, 0), INVALID);
    tags_one(&t, "", "v");
    assert_int_equal(set_tags(f, "b", "k", "", &t, NULL, 0), INVALID);
    assert_int_equal(set_tags(f, "b", "nope", "", NULL, NULL, 0), NO_KEY);
    assert_int_equal(set_tags(f, "b", "k", "zz", NULL, NULL, 0), INVALID);
    assert_int_equal(set_tags(f, "b", "k", "00000000000fffff", NULL, NULL, 0), NO_VERSION);
    assert_int_equal(set_tags(f, "nob", "k", "", NULL, NULL, 0),
                     OBJLOG__OUTCOME_CODE__OUTCOME_NO_SUCH_BUCKET);
    attrs_of(f, "b", "k", NULL, s, sizeof(s));
    assert_string_equal(s, "x=y|authenticated-read|e2");
    /* ACLs of versions */
    assert_int_equal(set_acl(f, "b", "k", v1, "public-read"), OK);
    assert_int_equal(set_acl(f, "b", "k", "", "bogus"), INVALID);
    assert_int_equal(set_acl(f, "b", "k", "", "private"), OK);
    attrs_of(f, "b", "k", v1, s, sizeof(s));
    assert_string_equal(s, "old=v|public-read|e1");
    attrs_of(f, "b", "k", NULL, s, sizeof(s));
    assert_string_equal(s, "x=y||e2");
    /* removed whole */
    assert_int_equal(set_tags(f, "b", "k", "", NULL, vid, sizeof(vid)), OK);
    attrs_of(f, "b", "k", NULL, s, sizeof(s));
    assert_string_equal(s, "||e2");
    /* a delete marker has none */
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = "";
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    ev.bucket = "b";
    ev.key.data = (uint8_t *)"k";
    ev.key.len = 1;
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    assert_int_equal(apply(f, &ev, marker, sizeof(marker)), OK);
    assert_int_equal(set_tags(f, "b", "k", "", NULL, NULL, 0), NO_KEY);
    assert_int_equal(set_tags(f, "b", "k", marker, NULL, NULL, 0), NOT_ALLOWED);
    assert_int_equal(set_acl(f, "b", "k", marker, "public-read"), NOT_ALLOWED);
    attrs_of(f, "b", "k", v1, s, sizeof(s));
    assert_string_equal(s, "old=v|public-read|e1");
    /* the null version of an unversioned bucket */
    assert_int_equal(create_bucket(f, "u", 0, NULL), OK);
    assert_int_equal(put(f, "u", "n", "en", NULL, NULL, 0), OK);
    tags_one(&t, "n", "1");
    assert_int_equal(set_tags(f, "u", "n", "null", &t, vid, sizeof(vid)), OK);
    assert_string_equal(vid, "null");
    attrs_of(f, "u", "n", NULL, s, sizeof(s));
    assert_string_equal(s, "n=1||en");
    /* the bucket's */
    bucket_attrs_of(f, "b", s, sizeof(s));
    assert_string_equal(s, "|public-read");
    tags_one(&t, "team", "core");
    assert_int_equal(bucket_attr(f, "b", &t, NULL), OK);
    tags_n(&t, 51);
    assert_int_equal(bucket_attr(f, "b", &t, NULL), INVALID);
    assert_int_equal(bucket_attr(f, "b", NULL, "nobody-read"), INVALID);
    bucket_attrs_of(f, "b", s, sizeof(s));
    assert_string_equal(s, "team=core|public-read");
    assert_int_equal(bucket_attr(f, "b", NULL, "private"), OK);
    tags_n(&t, 50);
    assert_int_equal(bucket_attr(f, "u", &t, NULL), OK);
    assert_int_equal(bucket_attr(f, "b", NULL, NULL), OK);
    bucket_attrs_of(f, "b", s, sizeof(s));
    assert_string_equal(s, "|");
    bucket_attrs_of(f, "u", s, sizeof(s));
    /* k0=v..k9=v (4 bytes each), k10=v..k49=v (5), 49 commas, "|" */
    assert_int_equal(strlen(s), 10 * 4 + 40 * 5 + 49 + 1);
    assert_int_equal(strncmp(s, "k0=v,k1=v,", 10), 0);
    flush(f);
}

/* Every row of every column family, as bytes. */
static char *dump(fixture *f, size_t *n) {
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    static const objlog_cf cfs[] = {OBJLOG_CF_VERSIONS, OBJLOG_CF_OBJECTS, OBJLOG_CF_BUCKETS};
    for (size_t c = 0; c < sizeof(cfs) / sizeof(cfs[0]); c++) {
        rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(objlog_store_db(f->store), ro,
                                                            objlog_store_cf(f->store, cfs[c]));
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kn, vn;
            const char *k = rocksdb_iter_key(it, &kn), *v = rocksdb_iter_value(it, &vn);
            assert_true(len + kn + vn + 2 < cap);
            memcpy(out + len, k, kn);
            len += kn;
            out[len++] = '=';
            memcpy(out + len, v, vn);
            len += vn;
            out[len++] = '\n';
        }
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
    }
    *n = len;
    return out;
}

static void test_story_per_event(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 0);
    run_story(&f);
    close_fixture(&f);
}

/* The same events, batched: the same rows, byte for byte. */
static void test_story_one_batch_same_rows(void **state) {
    (void)state;
    fixture a, b;
    open_fixture(&a, 0);
    open_fixture(&b, 1);
    run_story(&a);
    run_story(&b);
    size_t an, bn;
    char *da = dump(&a, &an), *db = dump(&b, &bn);
    assert_true(an > 0);
    assert_int_equal(an, bn);
    assert_memory_equal(da, db, an);
    free(da);
    free(db);
    close_fixture(&a);
    close_fixture(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_story_per_event),
        cmocka_unit_test(test_story_one_batch_same_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
