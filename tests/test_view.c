/* test_view.c: query/view.h without HTTP. Events go straight through the
 * state machine (materializer/apply.h) into a real RocksDB in a temp dir,
 * one partition, one WriteBatch per event; then view.h is asked and every
 * answer is compared exactly. Pins the edges the HTTP tests can't reach
 * cheaply: keys with NUL bytes, a key_marker inside a common prefix,
 * multi-byte delimiters, snapshot isolation, part pagination. */
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
#include "proc.h"
#include "view.h"

#define EPOCH 1

typedef struct fixture {
    char dir[256];
    objlog_store *store;
    rangemap *rm;
    int64_t offset;            /* of the next event (partition 0) */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    char err[256];
    assert_int_equal(proc_tmpdir(f->dir, sizeof(f->dir)), 0);
    f->store = objlog_store_open(f->dir, err, sizeof(err));
    assert_non_null(f->store);
    f->rm = rangemap_new_default(1, EPOCH);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    objlog_store_close(f->store);
    rangemap_destroy(f->rm);
    proc_rmtree(f->dir);
    free(f);
    return 0;
}

/* Applies ev at the next offset in its own batch; returns its version id
 * (or upload id) in out (may be NULL) and asserts the outcome code. */
static void apply(fixture *f, Objlog__Event *ev, Objlog__OutcomeCode want, char *out) {
    uint8_t rid[16] = {0};
    char err[256];
    int64_t off = f->offset++;
    memcpy(rid, &off, sizeof(off));
    ev->request_id.data = rid;
    ev->request_id.len = sizeof(rid);
    ev->range_epoch = EPOCH;
    apply_batch *b = apply_batch_new(f->store, f->rm);
    Objlog__OutcomeCode code;
    assert_int_equal(apply_event(b, 0, off, 1700000000000 + off, ev, &code, err,
                                 sizeof(err)), 0);
    assert_int_equal(code, want);
    apply_set_applied(b, 0, off + 1);
    char *e = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write_writebatch_wi(objlog_store_db(f->store), wo, apply_batch_wb(b), &e);
    rocksdb_writeoptions_destroy(wo);
    apply_batch_destroy(b);
    assert_null(e);
    if (out) {
        Objlog__Outcome *o = NULL;
        assert_int_equal(objlog_store_get_outcome(f->store, 0, off, &o, err, sizeof(err)), 1);
        snprintf(out, VIEW_ID_LEN, "%s",
                 o->upload_id && *o->upload_id ? o->upload_id : o->version_id);
        objlog__outcome__free_unpacked(o, NULL);
    }
}

static void mk_bucket(fixture *f, const char *b, Objlog__Versioning v) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.versioning = v;
    ev.bucket = (char *)b;
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, NULL);
}

static void put(fixture *f, const char *b, const void *key, size_t kn, char *vid) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    m.etag = "e";
    m.size = 5;
    po.meta = &m;
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = kn;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, vid);
}

static void del(fixture *f, const char *b, const char *key, const char *vid_in,
                char *vid) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = (char *)(vid_in ? vid_in : "");
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = strlen(key);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, vid);
}

/* "key:vid[L][M]" items of a versions page (prefixes as "[p]"), in key
 * order; keys shown with NUL as '~'. */
static void dump_versions(const view_versions *l, char *out, size_t n) {
    size_t o = strlen(out), i = 0, j = 0;
    while (i < l->n_versions || j < l->n_prefixes) {
        const view_bytes *k = i < l->n_versions ? &l->versions[i].key : NULL;
        const view_bytes *p = j < l->n_prefixes ? &l->prefixes[j] : NULL;
        size_t m = k && p ? (k->len < p->len ? k->len : p->len) : 0;
        int key_first = k && (!p || memcmp(k->data, p->data, m) < 0 ||
                              (memcmp(k->data, p->data, m) == 0 && k->len < p->len));
        const view_bytes *s = key_first ? k : p;
        o += (size_t)snprintf(out + o, n - o, "%s%s", o ? "," : "", key_first ? "" : "[");
        for (size_t c = 0; c < s->len; c++)
            o += (size_t)snprintf(out + o, n - o, "%c", s->data[c] ? s->data[c] : '~');
        if (key_first) {
            const view_version *v = &l->versions[i++];
            o += (size_t)snprintf(out + o, n - o, ":%s%s%s", v->version_id,
                                  v->is_latest ? "L" : "", v->delete_marker ? "M" : "");
        } else {
            j++;
            o += (size_t)snprintf(out + o, n - o, "]");
        }
    }
}

/* All pages of max_keys; items joined in out; returns the page count. */
static int walk_versions(fixture *f, const char *b, view_versions_req rq, char *out,
                         size_t n) {
    char err[256], km[256] = "", vm[VIEW_ID_LEN] = "";
    size_t kml = 0;
    int pages = 0;
    out[0] = '\0';
    for (;;) {
        view *v = view_open(f->store);
        view_versions l;
        rq.key_marker = kml ? (const uint8_t *)km : rq.key_marker;
        rq.key_marker_len = kml ? kml : rq.key_marker_len;
        rq.version_id_marker = kml ? vm : rq.version_id_marker;
        assert_int_equal(view_list_versions(v, b, &rq, &l, err, sizeof(err)), VIEW_OK);
        view_close(v);
        pages++;
        assert_true(l.n_versions + l.n_prefixes <= (size_t)rq.max_keys);
        dump_versions(&l, out, n);
        int more = l.is_truncated;
        if (more) {
            kml = l.next_key_marker.len;
            memcpy(km, l.next_key_marker.data, kml);
            snprintf(vm, sizeof(vm), "%s", l.next_version_id_marker);
        }
        view_versions_free(&l);
        if (!more)
            return pages;
        assert_true(pages < 100);
    }
}

/* Keys that differ only after a NUL byte: key_marker "a" skips exactly the
 * versions of "a", not those of "a\0" or "a\0b"; every page size gives the
 * same sequence. */
static void test_versions_nul_keys(void **state) {
    fixture *f = *state;
    char v[6][VIEW_ID_LEN], got[1024], want[1024];
    mk_bucket(f, "nul", OBJLOG__VERSIONING__VERSIONING_ENABLED);
    put(f, "nul", "a", 1, v[0]);
    put(f, "nul", "a\0", 2, v[1]);
    put(f, "nul", "a\0b", 3, v[2]);
    put(f, "nul", "ab", 2, v[3]);
    put(f, "nul", "a", 1, v[4]);
    snprintf(want, sizeof(want), "a:%sL,a:%s,a~:%sL,a~b:%sL,ab:%sL", v[4], v[0], v[1], v[2],
             v[3]);
    for (int mk = 1; mk <= 6; mk++) {
        view_versions_req rq = {.max_keys = mk};
        walk_versions(f, "nul", rq, got, sizeof(got));
        assert_string_equal(got, want);
    }
    view_versions_req rq = {.max_keys = 1000, .key_marker = (const uint8_t *)"a",
                            .key_marker_len = 1};
    walk_versions(f, "nul", rq, got, sizeof(got));
    snprintf(want, sizeof(want), "a~:%sL,a~b:%sL,ab:%sL", v[1], v[2], v[3]);
    assert_string_equal(got, want);
    /* a prefix holding a NUL */
    view_versions_req rp = {.max_keys = 1000, .prefix = (const uint8_t *)"a\0", .prefix_len = 2};
    walk_versions(f, "nul", rp, got, sizeof(got));
    snprintf(want, sizeof(want), "a~:%sL,a~b:%sL", v[1], v[2]);
    assert_string_equal(got, want);
}

/* A key_marker inside a common prefix: that prefix was returned before, so
 * the listing resumes after everything under it (S3). Multi-byte
 * delimiter. */
static void test_versions_marker_in_prefix(void **state) {
    fixture *f = *state;
    char v[4][VIEW_ID_LEN], got[1024], want[1024];
    mk_bucket(f, "mip", OBJLOG__VERSIONING__VERSIONING_ENABLED);
    put(f, "mip", "d::1", 4, v[0]);
    put(f, "mip", "d::2", 4, v[1]);
    put(f, "mip", "e", 1, v[2]);
    put(f, "mip", "x::y::z", 7, v[3]);
    view_versions_req rq = {.max_keys = 1000, .delimiter = (const uint8_t *)"::",
                            .delimiter_len = 2};
    walk_versions(f, "mip", rq, got, sizeof(got));
    snprintf(want, sizeof(want), "[d::],e:%sL,[x::]", v[2]);
    assert_string_equal(got, want);
    rq.key_marker = (const uint8_t *)"d::1";
    rq.key_marker_len = 4;
    walk_versions(f, "mip", rq, got, sizeof(got));
    snprintf(want, sizeof(want), "e:%sL,[x::]", v[2]);
    assert_string_equal(got, want);
    /* with a prefix, the rollup starts after it */
    view_versions_req rp = {.max_keys = 1000, .prefix = (const uint8_t *)"x::",
                            .prefix_len = 3, .delimiter = (const uint8_t *)"::",
                            .delimiter_len = 2};
    walk_versions(f, "mip", rp, got, sizeof(got));
    assert_string_equal(got, "[x::y::]");
}

/* GET semantics of view_get_object, and one view = one snapshot. */
static void test_get_object_and_snapshot(void **state) {
    fixture *f = *state;
    char v1[VIEW_ID_LEN], m[VIEW_ID_LEN], err[256];
    view_version o;
    mk_bucket(f, "get", OBJLOG__VERSIONING__VERSIONING_ENABLED);
    put(f, "get", "k", 1, v1);
    view *before = view_open(f->store);
    del(f, "get", "k", NULL, m);
    view *v = view_open(f->store);

    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"k", 1, NULL, &o, err,
                                     sizeof(err)), VIEW_OK);
    assert_true(o.delete_marker);
    assert_true(o.is_latest);
    assert_string_equal(o.version_id, m);
    view_version_free(&o);
    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"k", 1, v1, &o, err,
                                     sizeof(err)), VIEW_OK);
    assert_false(o.delete_marker);
    assert_false(o.is_latest);
    assert_string_equal(o.etag, "e");
    assert_int_equal(o.size, 5);
    assert_string_equal(o.storage_class, "STANDARD");
    assert_int_equal(o.last_modified_ms, 1700000000000 + 1);
    view_version_free(&o);
    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"k", 1, m, &o, err,
                                     sizeof(err)), VIEW_OK);
    assert_true(o.delete_marker);
    assert_true(o.is_latest);
    view_version_free(&o);
    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"nope", 4, NULL, &o, err,
                                     sizeof(err)), VIEW_NO_SUCH_KEY);
    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"k", 1, "null", &o, err,
                                     sizeof(err)), VIEW_NO_SUCH_VERSION);
    assert_int_equal(view_get_object(v, "get", (const uint8_t *)"k", 1, "xyz", &o, err,
                                     sizeof(err)), VIEW_INVALID_ARGUMENT);
    assert_int_equal(view_get_object(v, "gone", (const uint8_t *)"k", 1, NULL, &o, err,
                                     sizeof(err)), VIEW_NO_SUCH_BUCKET);

    /* the older view still sees the live version, and LIST agrees */
    assert_int_equal(view_get_object(before, "get", (const uint8_t *)"k", 1, NULL, &o, err,
                                     sizeof(err)), VIEW_OK);
    assert_false(o.delete_marker);
    assert_string_equal(o.version_id, v1);
    view_version_free(&o);
    view_list_req lr = {.max_keys = 10, .after_kind = VIEW_POS_NONE};
    view_list l;
    assert_int_equal(view_list_objects(before, "get", &lr, &l, err, sizeof(err)), VIEW_OK);
    assert_int_equal(l.n_objects, 1);
    view_list_free(&l);
    assert_int_equal(view_list_objects(v, "get", &lr, &l, err, sizeof(err)), VIEW_OK);
    assert_int_equal(l.n_objects, 0);
    assert_false(l.is_truncated);
    view_list_free(&l);
    view_close(before);
    view_close(v);

    /* Unversioned: the single null version, addressable as "null" */
    char nv[VIEW_ID_LEN];
    mk_bucket(f, "plain", OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
    put(f, "plain", "k", 1, nv);
    assert_string_equal(nv, "null");
    v = view_open(f->store);
    assert_int_equal(view_get_object(v, "plain", (const uint8_t *)"k", 1, "null", &o, err,
                                     sizeof(err)), VIEW_OK);
    assert_true(o.is_latest);
    view_version_free(&o);
    view_bucket bk;
    assert_int_equal(view_get_bucket(v, "plain", &bk, err, sizeof(err)), VIEW_OK);
    assert_string_equal(bk.record->name, "plain");
    view_bucket_free(&bk);
    view_close(v);
}

/* Parts paginate 10/10/5 with exact numbers; upload_id_marker alone is
 * ignored (S3); uploads of one key come in initiation order. */
static void test_uploads_and_parts(void **state) {
    fixture *f = *state;
    char id[3][VIEW_ID_LEN], err[256];
    mk_bucket(f, "mpv", OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
    for (int i = 0; i < 3; i++) {
        Objlog__Event ev = OBJLOG__EVENT__INIT;
        Objlog__CreateUpload cu = OBJLOG__CREATE_UPLOAD__INIT;
        ev.bucket = "mpv";
        ev.key.data = (uint8_t *)(i < 2 ? "k" : "l");
        ev.key.len = 1;
        ev.op_case = OBJLOG__EVENT__OP_CREATE_UPLOAD;
        ev.create_upload = &cu;
        apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, id[i]);
    }
    for (uint32_t n = 25; n >= 1; n--) {
        Objlog__Event ev = OBJLOG__EVENT__INIT;
        Objlog__UploadPart up = OBJLOG__UPLOAD_PART__INIT;
        up.upload_id = id[0];
        up.part_number = n;
        up.size = n;
        up.etag = "0cc175b9c0f1b6a831c399e269772661";
        ev.bucket = "mpv";
        ev.key.data = (uint8_t *)"k";
        ev.key.len = 1;
        ev.op_case = OBJLOG__EVENT__OP_UPLOAD_PART;
        ev.upload_part = &up;
        apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, NULL);
    }
    view *v = view_open(f->store);
    uint32_t marker = 0;
    int sizes[8], pages = 0;
    for (;;) {
        view_parts p;
        assert_int_equal(view_list_parts(v, "mpv", (const uint8_t *)"k", 1, id[0], marker,
                                         10, &p, err, sizeof(err)), VIEW_OK);
        sizes[pages++] = (int)p.n_parts;
        for (size_t i = 0; i < p.n_parts; i++) {
            assert_int_equal(p.parts[i].part_number, marker + 1 + i);
            assert_int_equal(p.parts[i].size, marker + 1 + i);
        }
        int more = p.is_truncated;
        marker = p.next_part_number_marker;
        view_parts_free(&p);
        if (!more)
            break;
    }
    assert_int_equal(pages, 3);
    assert_int_equal(sizes[0], 10);
    assert_int_equal(sizes[1], 10);
    assert_int_equal(sizes[2], 5);
    view_parts p;
    assert_int_equal(view_list_parts(v, "mpv", (const uint8_t *)"k", 1, id[1], 0, 10, &p,
                                     err, sizeof(err)), VIEW_OK);
    assert_int_equal(p.n_parts, 0);
    view_parts_free(&p);
    assert_int_equal(view_list_parts(v, "mpv", (const uint8_t *)"l", 1, id[0], 0, 10, &p,
                                     err, sizeof(err)), VIEW_NO_SUCH_UPLOAD);

    view_uploads_req rq = {.max_uploads = 1000, .upload_id_marker = id[0]};
    view_uploads u;
    assert_int_equal(view_list_uploads(v, "mpv", &rq, &u, err, sizeof(err)), VIEW_OK);
    assert_int_equal(u.n_uploads, 3);
    assert_string_equal(u.uploads[0].upload_id, id[0]);
    assert_string_equal(u.uploads[1].upload_id, id[1]);
    assert_string_equal(u.uploads[2].upload_id, id[2]);
    assert_memory_equal(u.uploads[2].key.data, "l", 1);
    view_uploads_free(&u);
    rq.max_uploads = 2;
    assert_int_equal(view_list_uploads(v, "mpv", &rq, &u, err, sizeof(err)), VIEW_OK);
    assert_true(u.is_truncated);
    assert_string_equal(u.next_upload_id_marker, id[1]);
    view_uploads_free(&u);
    view_close(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_versions_nul_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_versions_marker_in_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_object_and_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uploads_and_parts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
