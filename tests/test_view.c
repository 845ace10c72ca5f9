/* test_view.c: query/read/view.h without HTTP. Events go straight through the
 * state machine (materializer/apply.h) into a real RocksDB in a temp dir,
 * one partition, one WriteBatch per event; then view.h is asked and every
 * answer is compared exactly. Pins the edges the HTTP tests can't reach
 * cheaply: keys with NUL bytes, a key_marker inside a common prefix,
 * multi-byte delimiters, snapshot isolation, part pagination. Prefix usage
 * is checked against an S3 versioning model over random
 * workloads, for every prefix/delimiter and page shape, and page by page
 * on a small bucket. */
#define _GNU_SOURCE
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
#include "listentry.h"
#include "pagearena.h"
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
    rocksdb_write(objlog_store_db(f->store), wo, apply_batch_wb(b), &e);
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

/* ------------------------------------------------------------ prefix usage */

static void put_sized(fixture *f, const char *b, const void *key, size_t kn,
                      uint64_t size, char *vid) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutObject po = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
    Objlog__UserMeta um = OBJLOG__USER_META__INIT, *ump = &um;
    m.etag = "e";
    m.size = size;
    m.content_type = "text/plain"; /* fields the usage scan must step over */
    um.name = "owner";
    um.value = "someone";
    m.n_user_metadata = 1;
    m.user_metadata = &ump;
    po.meta = &m;
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = kn;
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &po;
    apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, vid);
}

static void del_bytes(fixture *f, const char *b, const void *key, size_t kn,
                      const char *vid_in, char *vid) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DeleteObject d = OBJLOG__DELETE_OBJECT__INIT;
    d.version_id = (char *)(vid_in ? vid_in : "");
    ev.bucket = (char *)b;
    ev.key.data = (uint8_t *)key;
    ev.key.len = kn;
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &d;
    apply(f, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK, vid);
}

/* The reference: every key ever written with its version list (newest
 * last), in an S3 versioning model independent of the view. */
#define UM_MAX_KEYS 96
#define UM_MAX_VERS 12
#define UM_KEY_MAX 32

typedef struct um_ver {
    char vid[VIEW_ID_LEN];
    uint64_t size;
    int marker;
} um_ver;

typedef struct um_key {
    uint8_t k[UM_KEY_MAX];
    size_t kn;
    um_ver v[UM_MAX_VERS];
    int nv;
} um_key;

typedef struct um_model {
    um_key keys[UM_MAX_KEYS];
    int n;
    int versioned;
} um_model;

static uint64_t um_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random keys from pieces that stress the grouping: delimiters of one and
 * two bytes, NUL, 0xFF, keys equal to a prefix or ending in a delimiter. */
static size_t um_random_key(uint64_t *s, uint8_t *out) {
    static const char *const piece[] = {"a", "b", "/", "::", "\0", "\xff", "ph", "a/"};
    static const size_t plen[] = {1, 1, 1, 2, 1, 1, 2, 2};
    size_t n = 0, parts = 1 + um_rand(s) % 6;
    for (size_t i = 0; i < parts; i++) {
        size_t p = um_rand(s) % 8;
        memcpy(out + n, piece[p], plen[p]);
        n += plen[p];
    }
    return n;
}

static um_key *um_find(um_model *m, const uint8_t *k, size_t kn) {
    for (int i = 0; i < m->n; i++)
        if (m->keys[i].kn == kn && memcmp(m->keys[i].k, k, kn) == 0)
            return &m->keys[i];
    if (m->n == UM_MAX_KEYS)
        return NULL;
    um_key *x = &m->keys[m->n++];
    memset(x, 0, sizeof(*x));
    memcpy(x->k, k, kn);
    x->kn = kn;
    return x;
}

static int um_live(const um_key *x) {
    return x->nv > 0 && !x->v[x->nv - 1].marker;
}

static void um_push(um_key *x, const char *vid, uint64_t size, int marker) {
    um_ver *v = &x->v[x->nv++];
    snprintf(v->vid, sizeof(v->vid), "%s", vid);
    v->size = size;
    v->marker = marker;
}

static void um_drop(um_key *x, int i) {
    memmove(&x->v[i], &x->v[i + 1], (size_t)(x->nv - i - 1) * sizeof(x->v[0]));
    x->nv--;
}

/* One random write into bucket b and the model: puts (overwrites),
 * deletes (markers when versioned), and deletes of one version by id. */
static void um_step(fixture *f, const char *b, um_model *m, uint64_t *s) {
    uint8_t k[UM_KEY_MAX];
    size_t kn = um_random_key(s, k);
    um_key *x = um_find(m, k, kn);
    if (!x)
        x = &m->keys[um_rand(s) % (uint64_t)m->n]; /* full: reuse a key */
    uint64_t op = um_rand(s) % 10;
    uint64_t size = um_rand(s) % 7 == 0 ? um_rand(s) % (1ULL << 40) : um_rand(s) % 5000;
    char vid[VIEW_ID_LEN];
    if (op < 6 && x->nv < UM_MAX_VERS) {
        put_sized(f, b, x->k, x->kn, size, vid);
        if (!m->versioned)
            x->nv = 0;
        um_push(x, vid, size, 0);
    } else if (op < 8 && m->versioned && x->nv < UM_MAX_VERS) {
        del_bytes(f, b, x->k, x->kn, NULL, vid);
        um_push(x, vid, 0, 1);
    } else if (op < 8 && !m->versioned && x->nv) {
        del_bytes(f, b, x->k, x->kn, NULL, NULL);
        x->nv = 0;
    } else if (m->versioned && x->nv) {
        int i = (int)(um_rand(s) % (uint64_t)x->nv);
        del_bytes(f, b, x->k, x->kn, x->v[i].vid, NULL);
        um_drop(x, i);
    }
}

static int um_key_cmp(const void *a, const void *b) {
    const um_key *x = *(um_key *const *)a, *y = *(um_key *const *)b;
    size_t m = x->kn < y->kn ? x->kn : y->kn;
    int r = m ? memcmp(x->k, y->k, m) : 0;
    return r ? r : (x->kn > y->kn) - (x->kn < y->kn);
}

/* What the walk must give: "[group]objects/bytes;..." in key order, and
 * the direct and total figures. */
typedef struct um_answer {
    char groups[16384];
    size_t len;
    uint64_t direct_objects, direct_bytes, total_objects, total_bytes;
    int n_groups;
} um_answer;

static void um_group_text(um_answer *a, const uint8_t *p, size_t pn, uint64_t objects,
                          uint64_t bytes) {
    a->len += (size_t)snprintf(a->groups + a->len, sizeof(a->groups) - a->len, "[");
    for (size_t i = 0; i < pn; i++)
        a->len += (size_t)snprintf(a->groups + a->len, sizeof(a->groups) - a->len, "%02x",
                                   p[i]);
    a->len += (size_t)snprintf(a->groups + a->len, sizeof(a->groups) - a->len,
                               "]%llu/%llu;", (unsigned long long)objects,
                               (unsigned long long)bytes);
    a->n_groups++;
}

static void um_expect(um_model *m, const uint8_t *p, size_t pn, const uint8_t *d,
                      size_t dn, um_answer *a) {
    um_key *sorted[UM_MAX_KEYS];
    int n = 0;
    memset(a, 0, sizeof(*a));
    for (int i = 0; i < m->n; i++)
        if (um_live(&m->keys[i]) && m->keys[i].kn >= pn &&
            (!pn || memcmp(m->keys[i].k, p, pn) == 0))
            sorted[n++] = &m->keys[i];
    qsort(sorted, (size_t)n, sizeof(sorted[0]), um_key_cmp);
    const uint8_t *cur = NULL;
    size_t curn = 0;
    uint64_t co = 0, cb = 0;
    for (int i = 0; i < n; i++) {
        const um_key *x = sorted[i];
        uint64_t size = x->v[x->nv - 1].size;
        const uint8_t *hit = dn && x->kn > pn ? memmem(x->k + pn, x->kn - pn, d, dn) : NULL;
        size_t cpl = hit ? (size_t)(hit - x->k) + dn : 0;
        if (cur && (cpl != curn || memcmp(x->k, cur, cpl) != 0)) {
            um_group_text(a, cur, curn, co, cb);
            cur = NULL;
        }
        if (cpl && !cur) {
            cur = x->k;
            curn = cpl;
            co = cb = 0;
        }
        if (cpl) {
            co++;
            cb += size;
        } else {
            a->direct_objects++;
            a->direct_bytes += size;
        }
        a->total_objects++;
        a->total_bytes += size;
    }
    if (cur)
        um_group_text(a, cur, curn, co, cb);
}

/* Walks every page of view_prefix_usage over one view; returns the pages.
 * Checks the per-page bounds and that the running total is always direct
 * plus every group so far plus the open one. */
static int um_walk(view *v, const char *b, view_usage_req rq, um_answer *got) {
    char err[256];
    view_usage_page page, prev = {0};
    view_usage_resume res;
    uint64_t group_objects = 0;
    int pages = 0;
    memset(got, 0, sizeof(*got));
    rq.resume = NULL;
    for (;;) {
        view_rc rc = view_prefix_usage(v, b, &rq, &page, err, sizeof(err));
        if (rc != VIEW_OK)
            fail_msg("page %d: rc %d %s", pages, rc, err);
        view_usage_page_free(&prev);
        pages++;
        assert_true(page.rows_scanned <= (uint64_t)rq.max_rows);
        assert_true(page.n_groups <= (size_t)rq.max_prefixes);
        for (size_t i = 0; i < page.n_groups; i++) {
            const view_usage_group *g = &page.groups[i];
            um_group_text(got, g->prefix.data, g->prefix.len, g->objects, g->bytes);
            group_objects += g->objects;
        }
        assert_int_equal(page.total_objects,
                         page.direct_objects + group_objects + page.open_objects);
        got->direct_objects = page.direct_objects;
        got->direct_bytes = page.direct_bytes;
        got->total_objects = page.total_objects;
        got->total_bytes = page.total_bytes;
        if (!page.is_truncated) {
            assert_int_equal(page.open_len, 0);
            view_usage_page_free(&page);
            return pages;
        }
        assert_true(pages < 5000);
        prev = page;
        view_usage_page_resume(&prev, &res);
        rq.resume = &res;
    }
}

static void um_assert_same(const um_answer *got, const um_answer *want, const char *what) {
    if (strcmp(got->groups, want->groups) != 0 ||
        got->direct_objects != want->direct_objects ||
        got->direct_bytes != want->direct_bytes ||
        got->total_objects != want->total_objects || got->total_bytes != want->total_bytes)
        fail_msg("%s:\n got %s direct %llu/%llu total %llu/%llu\nwant %s direct %llu/%llu "
                 "total %llu/%llu", what, got->groups,
                 (unsigned long long)got->direct_objects,
                 (unsigned long long)got->direct_bytes,
                 (unsigned long long)got->total_objects,
                 (unsigned long long)got->total_bytes, want->groups,
                 (unsigned long long)want->direct_objects,
                 (unsigned long long)want->direct_bytes,
                 (unsigned long long)want->total_objects,
                 (unsigned long long)want->total_bytes);
}

/* Random workloads in a versioned and an unversioned bucket against the
 * model: for every prefix and delimiter (empty included), every tiny page
 * shape and the defaults give the model's groups exactly, in key order,
 * each once, with exact direct and total figures. */
static void test_prefix_usage_model(void **state) {
    fixture *f = *state;
    static const struct { const char *s; size_t n; } prefixes[] = {
        {"", 0}, {"a", 1}, {"a/", 2}, {"b::", 3}, {"\0", 1}, {"a\xff", 2}, {"ph/", 3}};
    static const struct { const char *s; size_t n; } delims[] = {
        {"", 0}, {"/", 1}, {"::", 2}, {"\0", 1}, {"\xff", 1}, {"a/", 2}};
    static um_model models[2];
    const char *buckets[2] = {"usev", "useu"};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int b = 0; b < 2; b++) {
        memset(&models[b], 0, sizeof(models[b]));
        models[b].versioned = b == 0;
        mk_bucket(f, buckets[b], b == 0 ? OBJLOG__VERSIONING__VERSIONING_ENABLED
                                        : OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
        for (int i = 0; i < 400; i++)
            um_step(f, buckets[b], &models[b], &seed);
    }
    view *v = view_open(f->store);
    int walks = 0;
    for (int b = 0; b < 2; b++)
        for (size_t pi = 0; pi < sizeof(prefixes) / sizeof(prefixes[0]); pi++)
            for (size_t di = 0; di < sizeof(delims) / sizeof(delims[0]); di++) {
                um_answer want, got;
                um_expect(&models[b], (const uint8_t *)prefixes[pi].s, prefixes[pi].n,
                          (const uint8_t *)delims[di].s, delims[di].n, &want);
                view_usage_req rq = {.prefix = (const uint8_t *)prefixes[pi].s,
                                     .prefix_len = prefixes[pi].n,
                                     .delimiter = (const uint8_t *)delims[di].s,
                                     .delimiter_len = delims[di].n,
                                     .max_rows = VIEW_USAGE_DEFAULT_ROWS,
                                     .max_prefixes = VIEW_USAGE_DEFAULT_PREFIXES};
                char what[128];
                snprintf(what, sizeof(what), "bucket %s prefix #%zu delimiter #%zu",
                         buckets[b], pi, di);
                assert_int_equal(um_walk(v, buckets[b], rq, &got), 1);
                um_assert_same(&got, &want, what);
                for (int mr = 1; mr <= 7; mr++)
                    for (int mp = 1; mp <= 3; mp++) {
                        rq.max_rows = mr;
                        rq.max_prefixes = mp;
                        int pages = um_walk(v, buckets[b], rq, &got);
                        um_assert_same(&got, &want, what);
                        /* every page but the last reads a row or ends a group */
                        assert_true((uint64_t)pages <=
                                    want.total_objects + (uint64_t)want.n_groups + 1);
                        walks++;
                    }
            }
    view_close(v);
    /* the workload reached every shape the test is about */
    um_answer all;
    um_expect(&models[0], NULL, 0, (const uint8_t *)"/", 1, &all);
    assert_true(all.n_groups >= 3 && all.direct_objects >= 3);
    assert_int_equal(walks, 2 * 7 * 6 * 21);
}

static void usage_dump(const view_usage_page *p, char *out, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < p->n_groups; i++)
        o += (size_t)snprintf(out + o, n - o, "%.*s=%llu/%llu;", (int)p->groups[i].prefix.len,
                              (const char *)p->groups[i].prefix.data,
                              (unsigned long long)p->groups[i].objects,
                              (unsigned long long)p->groups[i].bytes);
    snprintf(out + o, n - o, "d%llu/%llu t%llu/%llu r%llu%s%.*s|%zu",
             (unsigned long long)p->direct_objects, (unsigned long long)p->direct_bytes,
             (unsigned long long)p->total_objects, (unsigned long long)p->total_bytes,
             (unsigned long long)p->rows_scanned, p->is_truncated ? " >" : "",
             (int)p->after.len, p->after.data ? (const char *)p->after.data : "",
             p->open_len);
}

/* The page contract, step by step on a small bucket: where a page stops,
 * what it hands on, a page that only closes a group (its rest was deleted
 * between pages), and the errors. */
static void test_prefix_usage_pages(void **state) {
    fixture *f = *state;
    char err[256], got[512];
    mk_bucket(f, "pu", OBJLOG__VERSIONING__VERSIONING_UNVERSIONED);
    put_sized(f, "pu", "photos/2024/a", 13, 10, NULL);
    put_sized(f, "pu", "photos/2024/b", 13, 20, NULL);
    put_sized(f, "pu", "photos/2025/c", 13, 5, NULL);
    put_sized(f, "pu", "photos/x", 8, 7, NULL);
    put_sized(f, "pu", "photos/", 7, 1, NULL);
    put_sized(f, "pu", "readme", 6, 100, NULL);
    view_usage_req rq = {.prefix = (const uint8_t *)"photos/", .prefix_len = 7,
                         .delimiter = (const uint8_t *)"/", .delimiter_len = 1,
                         .max_rows = 10000, .max_prefixes = 1000};
    view *v = view_open(f->store);
    view_usage_page p, q;
    view_usage_resume res;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &p, err, sizeof(err)), VIEW_OK);
    usage_dump(&p, got, sizeof(got));
    assert_string_equal(got, "photos/2024/=2/30;photos/2025/=1/5;d2/8 t5/43 r5|0");
    view_usage_page_free(&p);

    /* max_rows 2 ("photos/" itself is direct, then photos/2024/a): the page
     * ends inside photos/2024/ and hands it on */
    rq.max_rows = 2;
    rq.max_prefixes = 1;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &p, err, sizeof(err)), VIEW_OK);
    usage_dump(&p, got, sizeof(got));
    assert_string_equal(got, "d1/1 t2/11 r2 >photos/2024/a|12");
    view_close(v);

    /* photos/2024/b goes away between pages: the next page only closes
     * the open group (max_prefixes 1), reading no row */
    del_bytes(f, "pu", "photos/2024/b", 13, NULL, NULL);
    v = view_open(f->store);
    view_usage_page_resume(&p, &res);
    rq.resume = &res;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)), VIEW_OK);
    usage_dump(&q, got, sizeof(got));
    assert_string_equal(got, "photos/2024/=1/10;d1/1 t2/11 r0 >photos/2024/a|0");
    view_usage_page_free(&p);
    view_usage_page_resume(&q, &res);
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &p, err, sizeof(err)), VIEW_OK);
    usage_dump(&p, got, sizeof(got));
    /* photos/2025/ ends when photos/x is seen: complete, so returned, and
     * the page stops there (max_prefixes) before reading photos/x */
    assert_string_equal(got, "photos/2025/=1/5;d1/1 t3/16 r1 >photos/2025/c|0");
    view_usage_page_free(&q);
    view_usage_page_resume(&p, &res);
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)), VIEW_OK);
    usage_dump(&q, got, sizeof(got));
    assert_string_equal(got, "d2/8 t4/23 r1|0");
    view_usage_page_free(&q);

    /* resume states this prefix could not have produced */
    view_usage_resume bad = {.after = (const uint8_t *)"readme", .after_len = 6};
    rq.resume = &bad;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)),
                     VIEW_INVALID_ARGUMENT);
    bad.after = (const uint8_t *)"photos/2025/c";
    bad.after_len = 13;
    bad.open_len = 7; /* "photos/" is not its group */
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)),
                     VIEW_INVALID_ARGUMENT);
    bad.open_len = 0;
    bad.open_objects = 1; /* counts of an open group that is not there */
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)),
                     VIEW_INVALID_ARGUMENT);
    bad.open_objects = 0;
    bad.open_len = 12;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)), VIEW_OK);
    view_usage_page_free(&q);
    view_usage_page_free(&p);

    /* limits and a missing bucket */
    rq.resume = NULL;
    static const int limits[][2] = {{0, 1}, {100001, 1}, {-1, 1}, {1, 0}, {1, 1001}, {1, -5}};
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        rq.max_rows = limits[i][0];
        rq.max_prefixes = limits[i][1];
        assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)),
                         VIEW_INVALID_ARGUMENT);
    }
    rq.max_rows = VIEW_USAGE_MAX_ROWS;
    rq.max_prefixes = VIEW_USAGE_MAX_PREFIXES;
    assert_int_equal(view_prefix_usage(v, "pu", &rq, &q, err, sizeof(err)), VIEW_OK);
    view_usage_page_free(&q);
    assert_int_equal(view_prefix_usage(v, "nosuch", &rq, &q, err, sizeof(err)),
                     VIEW_NO_SUCH_BUCKET);
    /* an empty bucket: nothing, not truncated */
    mk_bucket(f, "pu-empty", OBJLOG__VERSIONING__VERSIONING_ENABLED);
    view_close(v);
    v = view_open(f->store);
    assert_int_equal(view_prefix_usage(v, "pu-empty", &rq, &q, err, sizeof(err)), VIEW_OK);
    usage_dump(&q, got, sizeof(got));
    assert_string_equal(got, "d0/0 t0/0 r0|0");
    view_usage_page_free(&q);
    view_close(v);
}

/* ---- a listing's lean decode ---- */

static uint64_t le_rng = 88172645463325252ULL;
static uint64_t le_rand(void) {
    le_rng ^= le_rng << 13;
    le_rng ^= le_rng >> 7;
    le_rng ^= le_rng << 17;
    return le_rng;
}

static char *le_str(char *buf, size_t max) {
    size_t n = le_rand() % max;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + le_rand() % 26);
    buf[n] = '\0';
    return buf;
}

/* list_entry_fill gives, for 5,000 random VersionRecords (every field
 * set or not, user metadata, tags, checksums, unknown fields of each wire
 * type appended), the fields protobuf-c's unpack gives; every truncation
 * of a record that unpack refuses, it refuses too. */
static void test_list_entry_decode(void **state) {
    (void)state;
    for (int round = 0; round < 5000; round++) {
        char etag[40], sc[16], vid[20], ct[20], cs[20], names[4][12], vals[4][12];
        Objlog__ObjectMeta m = OBJLOG__OBJECT_META__INIT;
        Objlog__UserMeta um[4], *ump[4];
        Objlog__VersionRecord r = OBJLOG__VERSION_RECORD__INIT;
        uint8_t keybytes[8] = "k\0y\xffz";
        r.key.data = keybytes;
        r.key.len = le_rand() % 6;
        r.seq = le_rand() >> (le_rand() % 64);
        r.version_id = le_rand() % 4 ? le_str(vid, 18) : NULL;
        r.delete_marker = (int)(le_rand() % 2);
        r.log_time_ms = (int64_t)(le_rand() >> 20) * (le_rand() % 5 ? 1 : -1);
        if (le_rand() % 5) {
            m.size = le_rand() >> (le_rand() % 64);
            m.etag = le_rand() % 4 ? le_str(etag, 34) : NULL;
            m.storage_class = le_rand() % 3 ? le_str(sc, 12) : NULL;
            m.content_type = le_str(ct, 16);
            m.checksum = le_str(cs, 16);
            size_t n = le_rand() % 4;
            for (size_t i = 0; i < n; i++) {
                objlog__user_meta__init(&um[i]);
                um[i].name = le_str(names[i], 10);
                um[i].value = le_str(vals[i], 10);
                ump[i] = &um[i];
            }
            m.n_user_metadata = n;
            m.user_metadata = ump;
            m.n_tags = le_rand() % 2 ? n : 0;
            m.tags = ump;
            r.meta = &m;
        }
        uint8_t buf[1024];
        size_t n = objlog__version_record__pack(&r, buf);
        if (le_rand() % 3 == 0) { /* unknown fields: 9 varint, 10 fixed64, 11 bytes, 12 fixed32 */
            static const uint8_t extra[] = {0x48, 0x96, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8,
                                            0x5a, 0x02, 'h', 'i', 0x65, 1, 2, 3, 4};
            memcpy(buf + n, extra, sizeof(extra));
            n += sizeof(extra);
        }
        page_arena *page = page_arena_new();
        assert_non_null(page);
        Objlog__VersionRecord *want = objlog__version_record__unpack(NULL, n, buf);
        assert_non_null(want);
        view_version got;
        assert_int_equal(list_entry_fill(&got, (const uint8_t *)"key", 3, (const char *)buf, n,
                                         page), 0);
        assert_int_equal(got.seq, want->seq);
        assert_string_equal(got.version_id, want->version_id ? want->version_id : "");
        assert_int_equal(got.delete_marker, want->delete_marker);
        assert_int_equal(got.last_modified_ms, want->log_time_ms);
        const Objlog__ObjectMeta *wm = want->meta;
        assert_int_equal(got.size, wm ? wm->size : 0);
        assert_string_equal(got.etag, wm && wm->etag ? wm->etag : "");
        assert_string_equal(got.storage_class,
                            wm && wm->storage_class && *wm->storage_class ? wm->storage_class
                                                                          : "STANDARD");
        assert_int_equal(got.key.len, 3);
        assert_memory_equal(got.key.data, "key", 3);
        assert_null(got.record);
        objlog__version_record__free_unpacked(want, NULL);
        for (size_t cut = 0; cut < n; cut += 1 + n / 16) {
            Objlog__VersionRecord *part = objlog__version_record__unpack(NULL, cut, buf);
            view_version pv;
            int rc = list_entry_fill(&pv, (const uint8_t *)"key", 3, (const char *)buf, cut,
                                     page);
            if (!part)
                assert_int_equal(rc, -1);
            objlog__version_record__free_unpacked(part, NULL);
        }
        page_arena_free(page);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_entry_decode),
        cmocka_unit_test_setup_teardown(test_versions_nul_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_versions_marker_in_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_object_and_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uploads_and_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_usage_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_usage_pages, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
