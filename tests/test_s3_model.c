/* test_s3_model.c: property test of S3 semantics.
 *
 * 10,000 random operation sequences over a few keys, in every versioning
 * state, are applied through the real state machine (apply.c) into a real
 * RocksDB store, and after EVERY step the view (query/read/view.h) is compared
 * with a small reference model written here: GET of every key, a fully
 * paginated LIST with a random prefix, delimiter and page size, and a fully
 * paginated ListObjectVersions likewise. The model (s3model.h) is S3's
 * rules stated as plainly as possible: a key is a list of versions, newest
 * first; test_s3_model_wire drives it through both HTTP APIs. */
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
#include "s3model.h"
#include "view.h"

#define N_SEQUENCES 10000
#define MAX_STEPS 8

typedef struct world {
    objlog_store *store;
    rangemap *rm;
    apply_batch *batch;
    int64_t offset;
    uint64_t rng;
    char dir[256];
    long checks;
} world;

static uint64_t rnd(world *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* ---- driving the state machine ---- */

static void apply_one(world *w, Objlog__Event *ev, Objlog__OutcomeCode want) {
    char err[512];
    Objlog__OutcomeCode code;
    uint8_t rid[16];
    for (int i = 0; i < 16; i++)
        rid[i] = (uint8_t)rnd(w);
    ev->request_id.data = rid;
    ev->request_id.len = 16;
    ev->range_epoch = 1;
    if (apply_event(w->batch, 0, w->offset, 1000 + w->offset, ev, &code, err, sizeof(err)) != 0)
        fail_msg("apply: %s", err);
    apply_set_applied(w->batch, 0, w->offset + 1);
    char *werr = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_write(objlog_store_db(w->store), wo, apply_batch_wb(w->batch), &werr);
    rocksdb_writeoptions_destroy(wo);
    if (werr)
        fail_msg("write: %s", werr);
    apply_batch_written(w->batch);
    apply_batch_clear(w->batch);
    if (code != want)
        fail_msg("offset %lld: outcome %d, want %d", (long long)w->offset, code, want);
    w->offset++;
}

static void version_id_of(world *w, char out[VIEW_ID_LEN]) {
    keycodec_version_id(keycodec_seq(1, w->offset), out);
}

static void op_create_bucket(world *w, model *m, int versioning) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__CreateBucket cb = OBJLOG__CREATE_BUCKET__INIT;
    cb.versioning = versioning == 0 ? OBJLOG__VERSIONING__VERSIONING_UNVERSIONED
                                    : OBJLOG__VERSIONING__VERSIONING_ENABLED;
    ev.bucket = m->bucket;
    ev.op_case = OBJLOG__EVENT__OP_CREATE_BUCKET;
    ev.create_bucket = &cb;
    apply_one(w, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    m->versioning = versioning == 0 ? 0 : 1;
}

static void op_set_versioning(world *w, model *m, int to) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__SetVersioning sv = OBJLOG__SET_VERSIONING__INIT;
    sv.status = to == 1 ? OBJLOG__VERSIONING__VERSIONING_ENABLED : OBJLOG__VERSIONING__VERSIONING_SUSPENDED;
    ev.bucket = m->bucket;
    ev.op_case = OBJLOG__EVENT__OP_SET_VERSIONING;
    ev.set_versioning = &sv;
    apply_one(w, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    m->versioning = to;
}

static void op_put(world *w, model *m, int key) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__PutObject put = OBJLOG__PUT_OBJECT__INIT;
    Objlog__ObjectMeta meta = OBJLOG__OBJECT_META__INIT;
    char etag[24], vid[VIEW_ID_LEN];
    snprintf(etag, sizeof(etag), "e%lld", (long long)w->offset);
    version_id_of(w, vid);
    meta.etag = etag;
    meta.size = (uint64_t)w->offset;
    put.meta = &meta;
    ev.bucket = m->bucket;
    ev.key.data = (uint8_t *)s3model_keys[key];
    ev.key.len = strlen(s3model_keys[key]);
    ev.op_case = OBJLOG__EVENT__OP_PUT_OBJECT;
    ev.put_object = &put;
    apply_one(w, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    assert_int_equal(model_put(m, key, vid, etag), 0);
}

static void op_delete(world *w, model *m, int key, const char *version_id) {
    Objlog__Event ev = OBJLOG__EVENT__INIT;
    Objlog__DeleteObject del = OBJLOG__DELETE_OBJECT__INIT;
    char vid[VIEW_ID_LEN];
    version_id_of(w, vid);
    del.version_id = (char *)(version_id ? version_id : "");
    ev.bucket = m->bucket;
    ev.key.data = (uint8_t *)s3model_keys[key];
    ev.key.len = strlen(s3model_keys[key]);
    ev.op_case = OBJLOG__EVENT__OP_DELETE_OBJECT;
    ev.delete_object = &del;
    apply_one(w, &ev, OBJLOG__OUTCOME_CODE__OUTCOME_OK);
    if (version_id)
        model_delete_version(m, key, version_id);
    else
        assert_int_equal(model_delete(m, key, vid), 0);
}

/* ---- what the model says a listing is ---- */

static void bytes_text(const view_bytes *b, char *out, size_t size) {
    size_t n = b->len < size - 1 ? b->len : size - 1;
    memcpy(out, b->data, n);
    out[n] = '\0';
}

/* Merges a page's versions/objects and prefixes back into key order. */
static size_t page_items(const view_version *vs, size_t nv, const view_bytes *ps, size_t np,
                         item *out) {
    size_t i = 0, j = 0, n = 0;
    while (i < nv || j < np) {
        char vk[64] = "", pk[64] = "";
        if (i < nv)
            bytes_text(&vs[i].key, vk, sizeof(vk));
        if (j < np)
            bytes_text(&ps[j], pk, sizeof(pk));
        memset(&out[n], 0, sizeof(item));
        if (j >= np || (i < nv && strcmp(vk, pk) < 0)) {
            snprintf(out[n].key, sizeof(out[n].key), "%s", vk);
            snprintf(out[n].vid, sizeof(out[n].vid), "%s", vs[i].version_id);
            snprintf(out[n].etag, sizeof(out[n].etag), "%s", vs[i].etag);
            out[n].marker = vs[i].delete_marker;
            out[n].latest = vs[i].is_latest;
            i++;
        } else {
            snprintf(out[n].key, sizeof(out[n].key), "%s", pk);
            out[n].is_prefix = 1;
            j++;
        }
        n++;
    }
    return n;
}

static void expect_items(const char *what, const item *want, size_t nw, const item *got, size_t ng) {
    char msg[512];
    if (model_expect(what, want, nw, got, ng, msg, sizeof(msg)) < 0)
        fail_msg("%s", msg);
}

/* ---- comparisons ---- */

static void check_gets(world *w, view *v, const model *m) {
    char err[256];
    for (size_t ki = 0; ki < S3MODEL_N_KEYS; ki++) {
        const mkey *k = &m->keys[ki];
        view_version got;
        memset(&got, 0, sizeof(got));
        view_rc rc = view_get_object(v, m->bucket, (const uint8_t *)s3model_keys[ki],
                                     strlen(s3model_keys[ki]), NULL, &got, err, sizeof(err));
        if (k->n == 0) {
            if (rc != VIEW_NO_SUCH_KEY)
                fail_msg("GET %s/%s: rc %d, model: no versions", m->bucket, s3model_keys[ki], rc);
        } else {
            if (rc != VIEW_OK || got.delete_marker != k->v[0].marker ||
                strcmp(got.version_id, k->v[0].vid) || strcmp(got.etag, k->v[0].etag))
                fail_msg("GET %s/%s: rc %d marker %d vid %s etag %s; model marker %d vid %s etag %s",
                         m->bucket, s3model_keys[ki], rc, got.delete_marker, got.version_id,
                         rc == VIEW_OK ? got.etag : "", k->v[0].marker, k->v[0].vid, k->v[0].etag);
            view_version_free(&got);
        }
        w->checks++;
    }
}

static void check_list(world *w, view *v, const model *m) {
    const char *prefix = s3model_prefixes[rnd(w) % S3MODEL_N_PREFIXES];
    const char *delim = s3model_delimiters[rnd(w) % S3MODEL_N_DELIMITERS];
    int page = 1 + (int)(rnd(w) % 4);
    item want[64], got[64], pg[64];
    size_t nw = model_items(m, prefix, delim, 0, want), ng = 0;
    view_list_req req = {.prefix = (const uint8_t *)prefix, .prefix_len = strlen(prefix),
                         .delimiter = (const uint8_t *)delim, .delimiter_len = strlen(delim),
                         .after_kind = VIEW_POS_NONE, .max_keys = page};
    uint8_t after[64];
    char err[256], what[160];
    snprintf(what, sizeof(what), "LIST %s prefix=%s delimiter=%s max_keys=%d", m->bucket, prefix, delim, page);
    for (int pages = 0;; pages++) {
        view_list l;
        memset(&l, 0, sizeof(l));
        if (view_list_objects(v, m->bucket, &req, &l, err, sizeof(err)) != VIEW_OK)
            fail_msg("%s: %s", what, err);
        size_t n = page_items(l.objects, l.n_objects, l.prefixes, l.n_prefixes, pg);
        assert_true(ng + n <= 64);
        memcpy(got + ng, pg, n * sizeof(item));
        ng += n;
        int more = l.is_truncated;
        if (more) {
            if ((int)n != page)
                fail_msg("%s: truncated page %d has %zu items", what, pages, n);
            req.after_kind = l.next_kind;
            memcpy(after, l.next.data, l.next.len);
            req.after = after;
            req.after_len = l.next.len;
        }
        view_list_free(&l);
        if (!more)
            break;
        assert_true(pages < 64);
    }
    expect_items(what, want, nw, got, ng);
    w->checks++;
}

static void check_versions(world *w, view *v, const model *m) {
    const char *prefix = s3model_prefixes[rnd(w) % S3MODEL_N_PREFIXES];
    const char *delim = s3model_delimiters[rnd(w) % S3MODEL_N_DELIMITERS];
    int page = 1 + (int)(rnd(w) % 4);
    item want[256], got[256], pg[64];
    size_t nw = model_items(m, prefix, delim, 1, want), ng = 0;
    view_versions_req req = {.prefix = (const uint8_t *)prefix, .prefix_len = strlen(prefix),
                             .delimiter = (const uint8_t *)delim, .delimiter_len = strlen(delim),
                             .max_keys = page};
    uint8_t km[64];
    char vm[VIEW_ID_LEN], err[256], what[160];
    snprintf(what, sizeof(what), "VERSIONS %s prefix=%s delimiter=%s max_keys=%d", m->bucket, prefix, delim,
             page);
    for (int pages = 0;; pages++) {
        view_versions l;
        memset(&l, 0, sizeof(l));
        if (view_list_versions(v, m->bucket, &req, &l, err, sizeof(err)) != VIEW_OK)
            fail_msg("%s: %s", what, err);
        size_t n = page_items(l.versions, l.n_versions, l.prefixes, l.n_prefixes, pg);
        assert_true(ng + n <= 256);
        memcpy(got + ng, pg, n * sizeof(item));
        ng += n;
        int more = l.is_truncated;
        if (more) {
            if ((int)n != page)
                fail_msg("%s: truncated page %d has %zu items", what, pages, n);
            memcpy(km, l.next_key_marker.data, l.next_key_marker.len);
            req.key_marker = km;
            req.key_marker_len = l.next_key_marker.len;
            snprintf(vm, sizeof(vm), "%s", l.next_version_id_marker);
            req.version_id_marker = vm;
        }
        view_versions_free(&l);
        if (!more)
            break;
        assert_true(pages < 256);
    }
    expect_items(what, want, nw, got, ng);
    w->checks++;
}

static void check_all(world *w, const model *m) {
    view *v = view_open(w->store);
    assert_non_null(v);
    check_gets(w, v, m);
    check_list(w, v, m);
    check_versions(w, v, m);
    view_close(v);
}

/* ---- one random sequence ---- */

static void random_step(world *w, model *m) {
    int key = (int)(rnd(w) % S3MODEL_N_KEYS);
    unsigned r = (unsigned)(rnd(w) % 100);
    if (r < 45) {
        op_put(w, m, key);
    } else if (r < 70) {
        op_delete(w, m, key, NULL);
    } else if (r < 88) {
        mkey *k = &m->keys[key];
        if (k->n == 0) {
            op_delete(w, m, key, "0001000000000000"); /* a version that never was: no change */
        } else {
            char vid[VIEW_ID_LEN];
            snprintf(vid, sizeof(vid), "%s", k->v[rnd(w) % (uint64_t)k->n].vid);
            op_delete(w, m, key, vid);
        }
    } else if (m->versioning != 0) {
        op_set_versioning(w, m, m->versioning == 1 ? 2 : 1);
    } else {
        op_put(w, m, key);
    }
}

static void random_sequences_match_the_model(void **state) {
    world *w = *state;
    for (int s = 0; s < N_SEQUENCES; s++) {
        model m;
        memset(&m, 0, sizeof(m));
        snprintf(m.bucket, sizeof(m.bucket), "seq%05d", s);
        int start = s % 3; /* unversioned, enabled, suspended */
        op_create_bucket(w, &m, start == 0 ? 0 : 1);
        if (start == 2)
            op_set_versioning(w, &m, 2);
        check_all(w, &m);
        int steps = 1 + (int)(rnd(w) % MAX_STEPS);
        for (int i = 0; i < steps; i++) {
            random_step(w, &m);
            check_all(w, &m);
        }
    }
    printf("model test: %d sequences, %lld events, %ld checks\n", N_SEQUENCES, (long long)w->offset,
           w->checks);
}

static int setup(void **state) {
    static world w;
    char err[512];
    memset(&w, 0, sizeof(w));
    w.rng = 0x2545F4914F6CDD1DULL;
    assert_int_equal(proc_tmpdir(w.dir, sizeof(w.dir)), 0);
    w.store = objlog_store_open(w.dir, err, sizeof(err));
    if (!w.store)
        fail_msg("%s", err);
    w.rm = rangemap_new_default(1, 1);
    w.batch = apply_batch_new(w.store, w.rm);
    *state = &w;
    return 0;
}

static int teardown(void **state) {
    world *w = *state;
    apply_batch_destroy(w->batch);
    rangemap_destroy(w->rm);
    objlog_store_close(w->store);
    proc_rmtree(w->dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(random_sequences_match_the_model, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
