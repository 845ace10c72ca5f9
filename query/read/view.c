/* view.c: the view's snapshot and its point reads (view.h): a bucket's
 * record, GET/HEAD of a key or of one of its versions, and the reads
 * through the snapshot that the listings (viewlist.c) and the usage
 * counters (viewstats.c) are built on (viewint.h). The view is split by
 * what a read walks: a point read here, a prefix's key range in
 * viewlist.c, the stats rows in viewstats.c.
 *
 * Invariant: every read goes through the one snapshot view_open took (the
 * view's read options, or an iterator's made from them), so no answer
 * mixes two states of the store. A key's latest version is its newest
 * version row, delete markers included: `objects` holds live versions
 * only, so it alone cannot tell a deleted key from one that never was. */
#define _GNU_SOURCE
#include "viewint.h"

#include "pagearena.h"

struct view {
    objlog_store *store;
    rocksdb_t *db;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro;
};

/* RocksDB counts every key comparison and block read of a thread in a
 * thread-local perf context unless the thread opts out; nothing here
 * reads it, and Debian's librocksdb pays a __tls_get_addr for each count.
 * A read opts its thread out as it opens its view (one TLS write). */
#define VIEW_PERF_DISABLE 1 /* rocksdb::PerfLevel::kDisable */

view *view_open(objlog_store *store) {
    rocksdb_set_perf_level(VIEW_PERF_DISABLE);
    view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->store = store;
    v->db = objlog_store_db(store);
    v->snap = rocksdb_create_snapshot(v->db);
    v->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(v->ro, v->snap);
    return v;
}

const rocksdb_snapshot_t *view_snapshot(const view *v) { return v->snap; }

objlog_store *view_store(const view *v) { return v->store; }

void view_close(view *v) {
    if (!v)
        return;
    rocksdb_readoptions_destroy(v->ro);
    rocksdb_release_snapshot(v->db, v->snap);
    free(v);
}

/* ------------------------------------------------- reads through the snapshot */

/* 1 found (*val: rocksdb_free), 0 missing, -1 error. */
int view_get(view *v, objlog_cf cf, const keybuf *k, char **val,
             size_t *vlen, char *errstr, size_t es) {
    char *err = NULL;
    *val = rocksdb_get_cf(v->db, v->ro, objlog_store_cf(v->store, cf),
                          (const char *)k->data, k->len, vlen, &err);
    if (err) {
        snprintf(errstr, es, "store read: %s", err);
        rocksdb_free(err);
        return -1;
    }
    return *val ? 1 : 0;
}

/* An iterator over cf below the upper bound hi (hi must outlive it). */
void view_iter_open(view *v, objlog_cf cf, const keybuf *hi,
                    view_iter *vi) {
    vi->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(vi->ro, v->snap);
    if (hi)
        rocksdb_readoptions_set_iterate_upper_bound(vi->ro, (const char *)hi->data,
                                                    hi->len);
    vi->it = rocksdb_create_iterator_cf(v->db, vi->ro, objlog_store_cf(v->store, cf));
}

/* Closes; -1 with errstr if the iterator stopped on an error. */
int view_iter_close(view_iter *vi, char *errstr, size_t es) {
    char *err = NULL;
    rocksdb_iter_get_error(vi->it, &err);
    rocksdb_iter_destroy(vi->it);
    rocksdb_readoptions_destroy(vi->ro);
    if (!err)
        return 0;
    snprintf(errstr, es, "store scan: %s", err);
    rocksdb_free(err);
    return -1;
}

void view_iter_seek(view_iter *vi, const keybuf *k) {
    rocksdb_iter_seek(vi->it, (const char *)k->data, k->len);
}

view_rc view_bucket_check(view *v, const char *bucket, char *errstr,
                          size_t es) {
    keybuf k;
    keybuf_init(&k);
    char *val = NULL;
    size_t vlen = 0;
    int rc = keycodec_bucket_part(&k, bucket, strlen(bucket)) < 0
                 ? -1 : view_get(v, OBJLOG_CF_BUCKETS, &k, &val, &vlen, errstr, es);
    keybuf_free(&k);
    rocksdb_free(val);
    if (rc < 0)
        return VIEW_ERROR;
    return rc == 1 ? VIEW_OK : VIEW_NO_SUCH_BUCKET;
}

/* ---------------------------------------------------------------- buckets */

view_rc view_get_bucket(view *v, const char *bucket, view_bucket *out,
                        char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    keybuf k;
    keybuf_init(&k);
    char *val = NULL;
    size_t vlen = 0;
    memset(out, 0, sizeof(*out));
    int rc = keycodec_bucket_part(&k, bucket, strlen(bucket)) < 0
                 ? -1 : view_get(v, OBJLOG_CF_BUCKETS, &k, &val, &vlen, errstr, es);
    keybuf_free(&k);
    if (rc <= 0)
        return rc < 0 ? VIEW_ERROR : VIEW_NO_SUCH_BUCKET;
    out->record = objlog__bucket_record__unpack(NULL, vlen, (const uint8_t *)val);
    rocksdb_free(val);
    if (!out->record) {
        snprintf(errstr, es, "bucket %s: corrupt record", bucket);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

void view_bucket_free(view_bucket *b) {
    if (b->record)
        objlog__bucket_record__free_unpacked(b->record, NULL);
    b->record = NULL;
}

/* ----------------------------------------------------------------- object */

void view_version_free(view_version *ver) {
    if (!ver->in_page) {
        free(ver->key.data);
        if (ver->record)
            objlog__version_record__free_unpacked(ver->record, NULL);
    }
    memset(ver, 0, sizeof(*ver));
}

/* The key into out, from the page's arena or malloc'd. 0 or -1. */
static int view_version_key(view_version *out, const uint8_t *key, size_t kn,
                            page_arena *page) {
    if (!page)
        return bytes_set(&out->key, key, kn);
    out->key.data = page_arena_strndup(page, key, kn);
    if (!out->key.data)
        return -1;
    out->key.len = kn;
    return 0;
}

int view_version_fill(view_version *out, const uint8_t *key, size_t kn,
                             const char *val, size_t vlen) {
    return view_version_fill_in(out, key, kn, val, vlen, NULL);
}

int view_version_fill_in(view_version *out, const uint8_t *key, size_t kn, const char *val,
                         size_t vlen, page_arena *page) {
    Objlog__VersionRecord *r = objlog__version_record__unpack(
        page ? page_arena_pb(page) : NULL, vlen, (const uint8_t *)val);
    if (!r)
        return -1;
    out->in_page = page != NULL;
    if (view_version_key(out, key, kn, page) < 0) {
        if (!page)
            objlog__version_record__free_unpacked(r, NULL);
        return -1;
    }
    const Objlog__ObjectMeta *m = r->meta;
    out->record = r;
    /* (snprintf was 600 instructions a LIST entry) */
    size_t vn = r->version_id ? strnlen(r->version_id, sizeof(out->version_id) - 1) : 0;
    memcpy(out->version_id, r->version_id ? r->version_id : "", vn);
    out->version_id[vn] = '\0';
    out->seq = r->seq;
    out->delete_marker = r->delete_marker;
    out->etag = m && m->etag ? m->etag : "";
    out->size = m ? m->size : 0;
    out->storage_class = m && m->storage_class && *m->storage_class
                             ? m->storage_class : "STANDARD";
    out->last_modified_ms = r->log_time_ms;
    return 0;
}

/* The newest version row of the key (marker or not): 1 found (*out
 * filled, is_latest 1), 0 the key has no versions, -1 error. */
int view_newest_row(view *v, const keybuf *rk, const uint8_t *key,
                    size_t kn, view_version *out, char *errstr,
                    size_t es) {
    keybuf hi;
    keybuf_init(&hi);
    if (keybuf_append(&hi, rk->data, rk->len) < 0 || keycodec_prefix_end(&hi) < 0) {
        keybuf_free(&hi);
        return view_oom(errstr, es);
    }
    view_iter vi;
    view_iter_open(v, OBJLOG_CF_VERSIONS, &hi, &vi);
    int rc = 0;
    for (view_iter_seek(&vi, rk); rocksdb_iter_valid(vi.it); rocksdb_iter_next(vi.it)) {
        size_t kl, vl;
        rocksdb_iter_key(vi.it, &kl);
        if (kl != rk->len + 8)
            continue; /* the header row */
        const char *val = rocksdb_iter_value(vi.it, &vl);
        rc = view_version_fill(out, key, kn, val, vl) < 0 ? -1 : 1;
        if (rc < 0)
            snprintf(errstr, es, "corrupt version record");
        out->is_latest = 1;
        break;
    }
    if (view_iter_close(&vi, errstr, es) < 0)
        rc = -1;
    keybuf_free(&hi);
    return rc;
}

/* The key's null version seq: 1, 0 none, -1 error. From its header row;
 * a key without one has at most its null version, and `objects` shows it
 * (an Unversioned bucket's keys have no header row). */
int view_null_seq(view *v, const keybuf *rk, uint64_t *seq,
                  char *errstr, size_t es) {
    char *val = NULL;
    size_t vlen = 0;
    int rc = view_get(v, OBJLOG_CF_VERSIONS, rk, &val, &vlen, errstr, es);
    objlog_key_header h;
    if (rc == 1) {
        rc = objlog_key_header_decode(val, vlen, &h) == 0 && h.has_null ? 1 : 0;
        if (rc == 1)
            *seq = h.null_seq;
        rocksdb_free(val);
        return rc;
    }
    if (rc < 0)
        return -1;
    rc = view_get(v, OBJLOG_CF_OBJECTS, rk, &val, &vlen, errstr, es);
    if (rc != 1)
        return rc;
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vlen, (const uint8_t *)val);
    rocksdb_free(val);
    if (!r) {
        snprintf(errstr, es, "corrupt version record");
        return -1;
    }
    rc = strcmp(r->version_id, "null") == 0;
    if (rc)
        *seq = r->seq;
    objlog__version_record__free_unpacked(r, NULL);
    return rc;
}

static view_rc view_get_latest(view *v, const keybuf *rk, const uint8_t *key,
                               size_t kn, view_version *out, char *errstr,
                               size_t es) {
    char *val = NULL;
    size_t vlen = 0;
    int rc = view_get(v, OBJLOG_CF_OBJECTS, rk, &val, &vlen, errstr, es);
    if (rc == 1) {
        rc = view_version_fill(out, key, kn, val, vlen);
        rocksdb_free(val);
        if (rc < 0) {
            snprintf(errstr, es, "corrupt version record");
            return VIEW_ERROR;
        }
        out->is_latest = 1;
        return VIEW_OK;
    }
    if (rc < 0)
        return VIEW_ERROR;
    /* `objects` holds live versions only: the newest row tells a deleted
     * key (its marker) from one that never existed. */
    rc = view_newest_row(v, rk, key, kn, out, errstr, es);
    if (rc < 0)
        return VIEW_ERROR;
    if (rc == 0 || !out->delete_marker) {
        view_version_free(out);
        return VIEW_NO_SUCH_KEY;
    }
    return VIEW_OK;
}

static view_rc view_get_version(view *v, const char *bucket, const keybuf *rk,
                                const uint8_t *key, size_t kn, const char *vid,
                                view_version *out, char *errstr, size_t es) {
    uint64_t seq;
    int is_null = strcmp(vid, "null") == 0;
    if (is_null) {
        int rc = view_null_seq(v, rk, &seq, errstr, es);
        if (rc <= 0)
            return rc < 0 ? VIEW_ERROR : VIEW_NO_SUCH_VERSION;
    } else if (keycodec_parse_version_id(vid, &seq) < 0) {
        return VIEW_INVALID_ARGUMENT;
    }
    keybuf row;
    keybuf_init(&row);
    char *val = NULL;
    size_t vlen = 0;
    int rc = keycodec_version_row(&row, bucket, strlen(bucket), key, kn, seq) < 0
                 ? view_oom(errstr, es)
                 : view_get(v, OBJLOG_CF_VERSIONS, &row, &val, &vlen, errstr, es);
    keybuf_free(&row);
    if (rc <= 0)
        return rc < 0 ? VIEW_ERROR : VIEW_NO_SUCH_VERSION;
    rc = view_version_fill(out, key, kn, val, vlen);
    rocksdb_free(val);
    if (rc < 0) {
        snprintf(errstr, es, "corrupt version record");
        return VIEW_ERROR;
    }
    if (!is_null && strcmp(out->version_id, "null") == 0) {
        view_version_free(out); /* a null version is addressed only as "null" */
        return VIEW_NO_SUCH_VERSION;
    }
    view_version latest = {0};
    rc = view_newest_row(v, rk, key, kn, &latest, errstr, es);
    out->is_latest = rc == 1 && latest.seq == out->seq;
    view_version_free(&latest);
    if (rc < 0) {
        view_version_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

view_rc view_get_object(view *v, const char *bucket, const uint8_t *key,
                        size_t key_len, const char *version_id,
                        view_version *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    keybuf rk;
    keybuf_init(&rk);
    if (keycodec_route_key(&rk, bucket, strlen(bucket), key, key_len) < 0)
        rc = view_oom(errstr, es);
    else if (version_id)
        rc = view_get_version(v, bucket, &rk, key, key_len, version_id, out,
                              errstr, es);
    else
        rc = view_get_latest(v, &rk, key, key_len, out, errstr, es);
    keybuf_free(&rk);
    return rc;
}
