/* view.c: the transport-free reads of view.h over one RocksDB snapshot.
 *
 * It owns turning view.h requests into seeks over the column families of
 * materializer.h and rows back into owned structs. Every scan is bounded by
 * the prefix's key range [prefix_start, prefix_end) as the iterator's upper
 * bound, and every common prefix is left with one seek past everything
 * under it (prefix_end(prefix_start(b, cp))), never walked.
 *
 * Prefix usage is the one scan that walks under common prefixes (it sums
 * them): it reads every row of the range in order, bounded by max_rows per
 * call.
 *
 * Invariant: a listing emits at most max items (objects/versions/uploads
 * plus common prefixes) and reports is_truncated only when one more item
 * really exists after them, so a client following next markers sees every
 * item once, whatever the page size. Prefix usage keeps the same promise
 * for its groups: a group is emitted only once complete, and a page that
 * ends inside one hands it on, so each appears once with exact totals. */
#define _GNU_SOURCE
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keycodec.h"

struct view {
    objlog_store *store;
    rocksdb_t *db;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro;
};

view *view_open(objlog_store *store) {
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

/* ---------------------------------------------------------------- helpers */

static view_rc view_oom(char *errstr, size_t es) {
    snprintf(errstr, es, "out of memory");
    return VIEW_ERROR;
}

static int bytes_set(view_bytes *b, const void *p, size_t n) {
    b->data = malloc(n ? n : 1);
    if (!b->data)
        return -1;
    if (n)
        memcpy(b->data, p, n);
    b->len = n;
    return 0;
}

static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int r = m ? memcmp(a, b, m) : 0;
    return r ? r : (an > bn) - (an < bn);
}

static int keybuf_cmp(const keybuf *a, const keybuf *b) {
    return bytes_cmp(a->data, a->len, b->data, b->len);
}

static int keybuf_set(keybuf *kb, const keybuf *from) {
    keybuf_reset(kb);
    return keybuf_append(kb, from->data, from->len);
}

/* Appends one zeroed element to *arr (length *n); NULL when out of memory. */
static void *array_push(void *arr, size_t *n, size_t elem) {
    char *p = realloc(*(void **)arr, (*n + 1) * elem);
    if (!p)
        return NULL;
    *(void **)arr = p;
    memset(p + *n * elem, 0, elem);
    return p + (*n)++ * elem;
}

/* 1 found (*val: rocksdb_free), 0 missing, -1 error. */
static int view_get(view *v, objlog_cf cf, const keybuf *k, char **val,
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
typedef struct view_iter {
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it;
} view_iter;

static void view_iter_open(view *v, objlog_cf cf, const keybuf *hi,
                           view_iter *vi) {
    vi->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(vi->ro, v->snap);
    if (hi)
        rocksdb_readoptions_set_iterate_upper_bound(vi->ro, (const char *)hi->data,
                                                    hi->len);
    vi->it = rocksdb_create_iterator_cf(v->db, vi->ro, objlog_store_cf(v->store, cf));
}

/* Closes; -1 with errstr if the iterator stopped on an error. */
static int view_iter_close(view_iter *vi, char *errstr, size_t es) {
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

static void view_iter_seek(view_iter *vi, const keybuf *k) {
    rocksdb_iter_seek(vi->it, (const char *)k->data, k->len);
}

/* The prefix's range [lo, hi) in bucket b. -1 when out of memory. */
static int view_prefix_range(const char *b, const uint8_t *p, size_t pn,
                             keybuf *lo, keybuf *hi) {
    if (keycodec_prefix_start(lo, b, strlen(b), p, pn) < 0 ||
        keybuf_append(hi, lo->data, lo->len) < 0)
        return -1;
    if (keycodec_prefix_end(hi) < 0)
        return -1; /* cannot happen: a bucket part ends in 0x00 0x01 ... */
    return 0;
}

/* Sets *k to the first position after every key starting with cp. */
static int view_past_prefix(keybuf *k, const char *b, const uint8_t *cp,
                            size_t n) {
    keybuf_reset(k);
    if (keycodec_prefix_start(k, b, strlen(b), cp, n) < 0)
        return -1;
    return keycodec_prefix_end(k);
}

/* Length of the common prefix key rolls into (prefix up to and including
 * the first delimiter after it), or 0 when it rolls into none. */
static size_t view_rollup(const keybuf *key, size_t pn, const uint8_t *delim,
                          size_t dn) {
    if (!dn || key->len <= pn)
        return 0;
    const uint8_t *d = memmem(key->data + pn, key->len - pn, delim, dn);
    return d ? (size_t)(d - key->data) + dn : 0;
}

static view_rc view_bucket_check(view *v, const char *bucket, char *errstr,
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
    free(ver->key.data);
    if (ver->record)
        objlog__version_record__free_unpacked(ver->record, NULL);
    memset(ver, 0, sizeof(*ver));
}

/* Fills out from a stored VersionRecord value; -1 if corrupt or OOM. */
int view_version_fill(view_version *out, const uint8_t *key, size_t kn,
                             const char *val, size_t vlen) {
    Objlog__VersionRecord *r =
        objlog__version_record__unpack(NULL, vlen, (const uint8_t *)val);
    if (!r)
        return -1;
    if (bytes_set(&out->key, key, kn) < 0) {
        objlog__version_record__free_unpacked(r, NULL);
        return -1;
    }
    const Objlog__ObjectMeta *m = r->meta;
    out->record = r;
    snprintf(out->version_id, sizeof(out->version_id), "%s",
             r->version_id ? r->version_id : "");
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
static int view_newest_row(view *v, const keybuf *rk, const uint8_t *key,
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

/* The key's null version seq from its header row: 1, 0 none, -1 error. */
static int view_null_seq(view *v, const keybuf *rk, uint64_t *seq,
                         char *errstr, size_t es) {
    char *val = NULL;
    size_t vlen = 0;
    int rc = view_get(v, OBJLOG_CF_VERSIONS, rk, &val, &vlen, errstr, es);
    objlog_key_header h;
    if (rc == 1)
        rc = objlog_key_header_decode(val, vlen, &h) == 0 && h.has_null ? 1 : 0;
    if (rc == 1)
        *seq = h.null_seq;
    rocksdb_free(val);
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

/* -------------------------------------------------------- listing skeleton */

/* What every listing shares: the range, the cursor and the page. */
typedef struct scan {
    view *v;
    const char *bucket;
    const uint8_t *delim;
    size_t prefix_len, delim_len;
    const uint8_t *marker;       /* key marker for the rollup rule, or NULL */
    size_t marker_len;
    keybuf lo, hi, seek, tmp;
    keybuf bucket_buf, key;      /* the current row's decoded parts */
    view_iter vi;
    int max, count, truncated;
    char *errstr;
    size_t es;
} scan;

static int scan_init(scan *s, view *v, const char *bucket, const uint8_t *p,
                     size_t pn, const uint8_t *d, size_t dn, int max,
                     char *errstr, size_t es) {
    memset(s, 0, sizeof(*s));
    s->v = v;
    s->bucket = bucket;
    s->prefix_len = pn;
    s->delim = d;
    s->delim_len = dn;
    s->max = max;
    s->errstr = errstr;
    s->es = es;
    keybuf_init(&s->lo);
    keybuf_init(&s->hi);
    keybuf_init(&s->seek);
    keybuf_init(&s->tmp);
    keybuf_init(&s->bucket_buf);
    keybuf_init(&s->key);
    if (view_prefix_range(bucket, p, pn, &s->lo, &s->hi) < 0 ||
        keybuf_set(&s->seek, &s->lo) < 0)
        return -1;
    return 0;
}

static void scan_free(scan *s) {
    keybuf_free(&s->lo);
    keybuf_free(&s->hi);
    keybuf_free(&s->seek);
    keybuf_free(&s->tmp);
    keybuf_free(&s->bucket_buf);
    keybuf_free(&s->key);
}

/* Moves the start position forward to k (never backward). */
static int scan_start_at(scan *s, const keybuf *k) {
    return keybuf_cmp(k, &s->seek) > 0 ? keybuf_set(&s->seek, k) : 0;
}

/* Decodes the current row's key; returns the route key length or 0 when
 * the row is not ours (nothing we wrote: skipped). */
static size_t scan_row_key(scan *s, const uint8_t *row, size_t n) {
    size_t used = 0;
    keybuf_reset(&s->bucket_buf);
    keybuf_reset(&s->key);
    if (keycodec_parse_route_key(row, n, &s->bucket_buf, &s->key, &used) < 0)
        return 0;
    return used;
}

/* Handles a row whose key rolls into a common prefix. 0: not rolled up;
 * 1: handled (emitted or skipped, iterator moved past the prefix); 2: the
 * page is full (truncated); -1 error. emit stores the prefix. */
static int scan_rollup(scan *s, view_bytes **arr, size_t *n) {
    size_t cpl = view_rollup(&s->key, s->prefix_len, s->delim, s->delim_len);
    if (!cpl)
        return 0;
    /* A prefix at or before the marker was returned on an earlier page
     * (the marker is then inside it): skip it. */
    int seen = s->marker && bytes_cmp(s->key.data, cpl, s->marker, s->marker_len) <= 0;
    if (!seen) {
        if (s->count == s->max) {
            s->truncated = 1;
            return 2;
        }
        view_bytes *b = array_push(arr, n, sizeof(*b));
        if (!b || bytes_set(b, s->key.data, cpl) < 0)
            return -1;
        s->count++;
    }
    if (view_past_prefix(&s->tmp, s->bucket, s->key.data, cpl) < 0)
        return -1;
    view_iter_seek(&s->vi, &s->tmp);
    return 1;
}

/* ------------------------------------------------------------------- LIST */

void view_list_free(view_list *l) {
    for (size_t i = 0; i < l->n_objects; i++)
        view_version_free(&l->objects[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->objects);
    free(l->prefixes);
    free(l->next.data);
    memset(l, 0, sizeof(*l));
}

/* Sets the start after `last` (a key, or everything under a prefix). */
static int list_start_after(scan *s, view_pos_kind kind, const uint8_t *last,
                            size_t n, int *skip_equal) {
    int rc;
    if (kind == VIEW_POS_PREFIX)
        rc = view_past_prefix(&s->tmp, s->bucket, last, n);
    else
        rc = (keybuf_reset(&s->tmp),
              keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), last, n));
    if (rc < 0)
        return -1;
    if (keybuf_cmp(&s->tmp, &s->seek) > 0) {
        *skip_equal = kind == VIEW_POS_KEY;
        return keybuf_set(&s->seek, &s->tmp);
    }
    return 0;
}

static int list_scan(scan *s, view_list *out) {
    for (; rocksdb_iter_valid(s->vi.it) && s->max > 0;) {
        size_t kl, vl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        if (!scan_row_key(s, k, kl)) {
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0)
            return -1;
        if (r == 2)
            break;
        if (r == 1) {
            if (out->n_prefixes > before)
                out->next_kind = VIEW_POS_PREFIX;
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        view_version *o = array_push(&out->objects, &out->n_objects, sizeof(*o));
        const char *val = rocksdb_iter_value(s->vi.it, &vl);
        if (!o || view_version_fill(o, s->key.data, s->key.len, val, vl) < 0) {
            if (o)
                out->n_objects--;
            snprintf(s->errstr, s->es, "corrupt version record or out of memory");
            return -1;
        }
        o->is_latest = 1;
        s->count++;
        out->next_kind = VIEW_POS_KEY;
        rocksdb_iter_next(s->vi.it);
    }
    out->is_truncated = s->truncated;
    if (!s->truncated) {
        out->next_kind = VIEW_POS_NONE;
        return 0;
    }
    const view_bytes *last = out->next_kind == VIEW_POS_PREFIX
                                 ? &out->prefixes[out->n_prefixes - 1]
                                 : &out->objects[out->n_objects - 1].key;
    return bytes_set(&out->next, last->data, last->len);
}

view_rc view_list_objects(view *v, const char *bucket, const view_list_req *req,
                          view_list *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    out->next_kind = VIEW_POS_NONE;
    if (req->max_keys < 0 || req->max_keys > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    scan s;
    int skip_equal = 0;
    if (scan_init(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                  req->delimiter_len, req->max_keys, errstr, es) < 0 ||
        (req->start_after_len &&
         list_start_after(&s, VIEW_POS_KEY, req->start_after, req->start_after_len,
                          &skip_equal) < 0) ||
        (req->after_kind != VIEW_POS_NONE &&
         list_start_after(&s, req->after_kind, req->after, req->after_len,
                          &skip_equal) < 0)) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    view_iter_open(v, OBJLOG_CF_OBJECTS, &s.hi, &s.vi);
    view_iter_seek(&s.vi, &s.seek);
    if (skip_equal && rocksdb_iter_valid(s.vi.it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(s.vi.it, &kl);
        if (bytes_cmp(k, kl, s.seek.data, s.seek.len) == 0)
            rocksdb_iter_next(s.vi.it);
    }
    int r = list_scan(&s, out);
    if (view_iter_close(&s.vi, errstr, es) < 0)
        r = -1;
    else if (r < 0 && !errstr[0])
        view_oom(errstr, es);
    scan_free(&s);
    if (r < 0) {
        view_list_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ------------------------------------------------------ ListObjectVersions */

void view_versions_free(view_versions *l) {
    for (size_t i = 0; i < l->n_versions; i++)
        view_version_free(&l->versions[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->versions);
    free(l->prefixes);
    free(l->next_key_marker.data);
    memset(l, 0, sizeof(*l));
}

/* Start position from the markers. 1 ok, 0 invalid argument, -1 error. */
static int versions_start(scan *s, const view_versions_req *req, int *skip_equal) {
    const char *vid = req->version_id_marker && *req->version_id_marker
                          ? req->version_id_marker : NULL;
    int has_km = req->key_marker && req->key_marker_len;
    if (!has_km)
        return vid ? 0 : 1;
    s->marker = req->key_marker;
    s->marker_len = req->key_marker_len;
    keybuf_reset(&s->tmp);
    if (keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), req->key_marker,
                           req->key_marker_len) < 0)
        return -1;
    if (!vid) {
        /* after every row of the key: its header and all its versions */
        if (keycodec_prefix_end(&s->tmp) < 0)
            return -1;
        return scan_start_at(s, &s->tmp) < 0 ? -1 : 1;
    }
    uint64_t seq;
    if (strcmp(vid, "null") == 0) {
        int rc = view_null_seq(s->v, &s->tmp, &seq, s->errstr, s->es);
        if (rc < 0)
            return -1;
        /* The null version went (deleted while a client paged): its place
         * among the key's versions is gone with it, so the page resumes at
         * the key's first version. A version may be listed twice; none
         * that stayed is skipped (a cleanup that pages while deleting
         * would otherwise leave versions behind). */
        if (rc == 0)
            return scan_start_at(s, &s->tmp) < 0 ? -1 : 1;
    } else if (keycodec_parse_version_id(vid, &seq) < 0) {
        return 0;
    }
    if (keycodec_append_be64(&s->tmp, UINT64_MAX - seq) < 0)
        return -1;
    if (keybuf_cmp(&s->tmp, &s->seek) > 0) {
        *skip_equal = 1;
        return keybuf_set(&s->seek, &s->tmp) < 0 ? -1 : 1;
    }
    return 1;
}

/* 1 if the version row (route key rk of length rkn, seq) is its key's
 * newest: used only for the first row after seeking into a key. */
static int versions_is_newest(scan *s, const uint8_t *row, size_t rkn,
                              uint64_t seq) {
    keybuf rk;
    keybuf_init(&rk);
    view_version newest = {0};
    int rc = keybuf_append(&rk, row, rkn) < 0
                 ? -1
                 : view_newest_row(s->v, &rk, s->key.data, s->key.len, &newest,
                                   s->errstr, s->es);
    int latest = rc == 1 && newest.seq == seq;
    view_version_free(&newest);
    keybuf_free(&rk);
    return rc < 0 ? -1 : latest;
}

static int versions_scan(scan *s, view_versions *out) {
    int prev_header = 0, fresh = 1, last_is_prefix = 0;
    while (rocksdb_iter_valid(s->vi.it) && s->max > 0) {
        size_t kl, vl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        size_t rkn = scan_row_key(s, k, kl);
        if (!rkn || (rkn != kl && rkn + 8 != kl)) {
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0)
            return -1;
        if (r == 2)
            break;
        if (r == 1) {
            if (out->n_prefixes > before)
                last_is_prefix = 1;
            prev_header = 0;
            fresh = 1;
            continue;
        }
        if (objlog_versions_row_is_header(k, kl)) { /* its versions follow */
            prev_header = 1;
            fresh = 0;
            rocksdb_iter_next(s->vi.it);
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        uint64_t seq = keycodec_row_seq(k, kl);
        int latest = prev_header;
        if (!latest && fresh && (latest = versions_is_newest(s, k, rkn, seq)) < 0)
            return -1;
        view_version *o = array_push(&out->versions, &out->n_versions, sizeof(*o));
        const char *val = rocksdb_iter_value(s->vi.it, &vl);
        if (!o || view_version_fill(o, s->key.data, s->key.len, val, vl) < 0) {
            if (o)
                out->n_versions--;
            snprintf(s->errstr, s->es, "corrupt version record or out of memory");
            return -1;
        }
        o->is_latest = latest;
        s->count++;
        last_is_prefix = 0;
        prev_header = fresh = 0;
        rocksdb_iter_next(s->vi.it);
    }
    out->is_truncated = s->truncated;
    if (!s->truncated)
        return 0;
    if (last_is_prefix) {
        const view_bytes *p = &out->prefixes[out->n_prefixes - 1];
        return bytes_set(&out->next_key_marker, p->data, p->len);
    }
    const view_version *last = &out->versions[out->n_versions - 1];
    snprintf(out->next_version_id_marker, sizeof(out->next_version_id_marker), "%s",
             last->version_id);
    return bytes_set(&out->next_key_marker, last->key.data, last->key.len);
}

view_rc view_list_versions(view *v, const char *bucket,
                           const view_versions_req *req, view_versions *out,
                           char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (req->max_keys < 0 || req->max_keys > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    scan s;
    int skip_equal = 0;
    if (scan_init(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                  req->delimiter_len, req->max_keys, errstr, es) < 0) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    int st = versions_start(&s, req, &skip_equal);
    if (st <= 0) {
        scan_free(&s);
        if (st == 0)
            return VIEW_INVALID_ARGUMENT;
        return errstr[0] ? VIEW_ERROR : view_oom(errstr, es);
    }
    view_iter_open(v, OBJLOG_CF_VERSIONS, &s.hi, &s.vi);
    view_iter_seek(&s.vi, &s.seek);
    if (skip_equal && rocksdb_iter_valid(s.vi.it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(s.vi.it, &kl);
        if (bytes_cmp(k, kl, s.seek.data, s.seek.len) == 0)
            rocksdb_iter_next(s.vi.it);
    }
    int r = versions_scan(&s, out);
    if (view_iter_close(&s.vi, errstr, es) < 0)
        r = -1;
    else if (r < 0 && !errstr[0])
        view_oom(errstr, es);
    scan_free(&s);
    if (r < 0) {
        view_versions_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ---------------------------------------------------------------- uploads */

static void view_upload_free(view_upload *u) {
    free(u->key.data);
    if (u->record)
        objlog__upload_record__free_unpacked(u->record, NULL);
    memset(u, 0, sizeof(*u));
}

void view_uploads_free(view_uploads *l) {
    for (size_t i = 0; i < l->n_uploads; i++)
        view_upload_free(&l->uploads[i]);
    for (size_t i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i].data);
    free(l->uploads);
    free(l->prefixes);
    free(l->next_key_marker.data);
    memset(l, 0, sizeof(*l));
}

static int view_upload_fill(view_upload *u, const uint8_t *key, size_t kn,
                            const char *val, size_t vlen) {
    Objlog__UploadRecord *r =
        objlog__upload_record__unpack(NULL, vlen, (const uint8_t *)val);
    if (!r)
        return -1;
    if (bytes_set(&u->key, key, kn) < 0) {
        objlog__upload_record__free_unpacked(r, NULL);
        return -1;
    }
    u->record = r;
    snprintf(u->upload_id, sizeof(u->upload_id), "%s", r->upload_id ? r->upload_id : "");
    u->initiated_ms = r->initiated_ms;
    return 0;
}

/* Start position from the markers; -1 when out of memory. */
static int uploads_start(scan *s, const view_uploads_req *req) {
    if (!req->key_marker || !req->key_marker_len)
        return 0; /* upload_id_marker alone is ignored, as in S3 */
    s->marker = req->key_marker;
    s->marker_len = req->key_marker_len;
    keybuf_reset(&s->tmp);
    if (keycodec_route_key(&s->tmp, s->bucket, strlen(s->bucket), req->key_marker,
                           req->key_marker_len) < 0)
        return -1;
    const char *uid = req->upload_id_marker;
    if (uid && *uid &&
        keycodec_append_enc(&s->tmp, (const uint8_t *)uid, strlen(uid)) < 0)
        return -1;
    /* past the key (or that upload of it) and all its part rows */
    if (keycodec_prefix_end(&s->tmp) < 0)
        return -1;
    return scan_start_at(s, &s->tmp);
}

static int uploads_scan(scan *s, view_uploads *out) {
    int last_is_prefix = 0, rc = 0;
    while (rocksdb_iter_valid(s->vi.it) && s->max > 0) {
        size_t kl, vl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s->vi.it, &kl);
        if (objlog_uploads_row_kind(k, kl, NULL, NULL, NULL, NULL) !=
                OBJLOG_UPLOADS_ROW_UPLOAD ||
            !scan_row_key(s, k, kl)) {
            rocksdb_iter_next(s->vi.it); /* a part row (or not ours) */
            continue;
        }
        size_t before = out->n_prefixes;
        int r = scan_rollup(s, &out->prefixes, &out->n_prefixes);
        if (r < 0 || r == 2) {
            rc = r < 0 ? -1 : 0;
            break;
        }
        if (r == 1) {
            if (out->n_prefixes > before)
                last_is_prefix = 1;
            continue;
        }
        if (s->count == s->max) {
            s->truncated = 1;
            break;
        }
        view_upload *u = array_push(&out->uploads, &out->n_uploads, sizeof(*u));
        const char *val = rocksdb_iter_value(s->vi.it, &vl);
        if (!u || view_upload_fill(u, s->key.data, s->key.len, val, vl) < 0) {
            if (u)
                out->n_uploads--;
            snprintf(s->errstr, s->es, "corrupt upload record or out of memory");
            rc = -1;
            break;
        }
        s->count++;
        last_is_prefix = 0;
        /* past this upload's part rows with one seek */
        keybuf_reset(&s->tmp);
        if (keybuf_append(&s->tmp, k, kl) < 0 || keycodec_prefix_end(&s->tmp) < 0) {
            rc = -1;
            break;
        }
        view_iter_seek(&s->vi, &s->tmp);
    }
    out->is_truncated = s->truncated;
    if (rc < 0 || !s->truncated)
        return rc;
    if (last_is_prefix) {
        const view_bytes *p = &out->prefixes[out->n_prefixes - 1];
        return bytes_set(&out->next_key_marker, p->data, p->len);
    }
    const view_upload *last = &out->uploads[out->n_uploads - 1];
    snprintf(out->next_upload_id_marker, sizeof(out->next_upload_id_marker), "%s",
             last->upload_id);
    return bytes_set(&out->next_key_marker, last->key.data, last->key.len);
}

view_rc view_list_uploads(view *v, const char *bucket,
                          const view_uploads_req *req, view_uploads *out,
                          char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (req->max_uploads < 0 || req->max_uploads > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    scan s;
    if (scan_init(&s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                  req->delimiter_len, req->max_uploads, errstr, es) < 0 ||
        uploads_start(&s, req) < 0) {
        scan_free(&s);
        return view_oom(errstr, es);
    }
    view_iter_open(v, OBJLOG_CF_UPLOADS, &s.hi, &s.vi);
    view_iter_seek(&s.vi, &s.seek);
    int r = uploads_scan(&s, out);
    if (view_iter_close(&s.vi, errstr, es) < 0)
        r = -1;
    else if (r < 0 && !errstr[0])
        view_oom(errstr, es);
    scan_free(&s);
    if (r < 0) {
        view_uploads_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

/* ------------------------------------------------------------------ parts */

void view_parts_free(view_parts *l) {
    for (size_t i = 0; i < l->n_parts; i++)
        if (l->parts[i].record)
            objlog__part_record__free_unpacked(l->parts[i].record, NULL);
    free(l->parts);
    view_upload_free(&l->upload);
    memset(l, 0, sizeof(*l));
}

/* Parts of the upload whose row is `row`, numbers above marker. */
static int parts_scan(view *v, const char *bucket, const uint8_t *key,
                      size_t kn, const char *upload_id, const keybuf *row,
                      uint32_t marker, int max, view_parts *out, char *errstr,
                      size_t es) {
    keybuf hi, seek;
    keybuf_init(&hi);
    keybuf_init(&seek);
    uint32_t first = marker == UINT32_MAX ? marker : marker + 1;
    int rc = keybuf_append(&hi, row->data, row->len) < 0 || keycodec_prefix_end(&hi) < 0 ||
                     objlog_uploads_part_key(&seek, bucket, strlen(bucket), key, kn,
                                             upload_id, first) < 0
                 ? view_oom(errstr, es) : 0;
    view_iter vi;
    view_iter_open(v, OBJLOG_CF_UPLOADS, &hi, &vi);
    view_iter_seek(&vi, &seek);
    for (; rc == 0 && max > 0 && rocksdb_iter_valid(vi.it); rocksdb_iter_next(vi.it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(vi.it, &kl);
        if (objlog_uploads_row_kind(k, kl, NULL, NULL, NULL, NULL) !=
            OBJLOG_UPLOADS_ROW_PART)
            continue;
        if (out->n_parts == (size_t)max) {
            out->is_truncated = 1;
            break;
        }
        const char *val = rocksdb_iter_value(vi.it, &vl);
        Objlog__PartRecord *r =
            objlog__part_record__unpack(NULL, vl, (const uint8_t *)val);
        view_part *p = r ? array_push(&out->parts, &out->n_parts, sizeof(*p)) : NULL;
        if (!p) {
            if (r)
                objlog__part_record__free_unpacked(r, NULL);
            snprintf(errstr, es, "corrupt part record or out of memory");
            rc = -1;
            break;
        }
        p->record = r;
        p->part_number = r->part_number;
        p->size = r->size;
        p->etag = r->etag ? r->etag : "";
        p->last_modified_ms = r->last_modified_ms;
        out->next_part_number_marker = r->part_number;
    }
    if (view_iter_close(&vi, errstr, es) < 0)
        rc = -1;
    keybuf_free(&hi);
    keybuf_free(&seek);
    return rc;
}

view_rc view_list_parts(view *v, const char *bucket, const uint8_t *key,
                        size_t key_len, const char *upload_id,
                        uint32_t part_number_marker, int max_parts,
                        view_parts *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (max_parts < 0 || max_parts > VIEW_MAX_KEYS)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    keybuf row;
    keybuf_init(&row);
    char *val = NULL;
    size_t vlen = 0;
    int g = objlog_uploads_upload_key(&row, bucket, strlen(bucket), key, key_len,
                                      upload_id) < 0
                ? view_oom(errstr, es)
                : view_get(v, OBJLOG_CF_UPLOADS, &row, &val, &vlen, errstr, es);
    if (g == 1 && view_upload_fill(&out->upload, key, key_len, val, vlen) < 0) {
        snprintf(errstr, es, "corrupt upload record");
        g = -1;
    }
    rocksdb_free(val);
    if (g == 1 && parts_scan(v, bucket, key, key_len, upload_id, &row,
                             part_number_marker, max_parts, out, errstr, es) < 0)
        g = -1;
    keybuf_free(&row);
    if (g == 1)
        return VIEW_OK;
    view_parts_free(out);
    return g == 0 ? VIEW_NO_SUCH_UPLOAD : VIEW_ERROR;
}

/* ------------------------------------------------------------------ stats */

static void usage_from(view_usage *out, const Objlog__UsageStats *u) {
    out->objects = u->objects;
    out->bytes = u->bytes;
    out->versions = u->versions;
    out->version_bytes = u->version_bytes;
    out->noncurrent_versions = u->noncurrent_versions;
    out->noncurrent_bytes = u->noncurrent_bytes;
    out->delete_markers = u->delete_markers;
    out->uploads = u->uploads;
    out->upload_part_bytes = u->upload_part_bytes;
    out->buckets = u->buckets;
}

static int usage_decode(const char *val, size_t n, view_usage *out,
                        char *errstr, size_t es) {
    Objlog__UsageStats *u = objlog__usage_stats__unpack(NULL, n, (const uint8_t *)val);
    if (!u) {
        snprintf(errstr, es, "stats row: corrupt record");
        return -1;
    }
    usage_from(out, u);
    objlog__usage_stats__free_unpacked(u, NULL);
    return 0;
}

/* 1 found (*out filled), 0 absent (*out zero), -1 error. */
static int usage_get(view *v, const keybuf *k, view_usage *out, char *errstr,
                     size_t es) {
    char *val = NULL;
    size_t vlen = 0;
    memset(out, 0, sizeof(*out));
    int rc = view_get(v, OBJLOG_CF_STATS, k, &val, &vlen, errstr, es);
    if (rc <= 0)
        return rc;
    rc = usage_decode(val, vlen, out, errstr, es);
    rocksdb_free(val);
    return rc < 0 ? -1 : 1;
}

view_rc view_bucket_usage(view *v, const char *bucket, view_usage *out,
                          char *errstr, size_t es) {
    keybuf k;
    keybuf_init(&k);
    int rc = objlog_stats_bucket_key(&k, bucket, strlen(bucket));
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    else
        rc = usage_get(v, &k, out, errstr, es);
    keybuf_free(&k);
    if (rc < 0)
        return VIEW_ERROR;
    return rc == 1 ? VIEW_OK : VIEW_NO_SUCH_BUCKET;
}

static void usage_add(view_usage *to, const view_usage *u) {
    to->objects += u->objects;
    to->bytes += u->bytes;
    to->versions += u->versions;
    to->version_bytes += u->version_bytes;
    to->noncurrent_versions += u->noncurrent_versions;
    to->noncurrent_bytes += u->noncurrent_bytes;
    to->delete_markers += u->delete_markers;
    to->uploads += u->uploads;
    to->upload_part_bytes += u->upload_part_bytes;
    to->buckets += u->buckets;
}

/* 1 if the stats row k (a 't' or 'g' row: its partition is in its key)
 * belongs to a partition of ps. */
static int partset_has_row(const view_partset *ps, const uint8_t *k, size_t kn) {
    int p = objlog_stats_row_partition(ps->rm, k, kn);
    return p >= 0 && p < ps->n && ps->in[p];
}

/* The stats rows in [lo, hi): one pass, the sum of those of ps into *out.
 * tenants: if non-NULL, counts (and names, when *names) the distinct
 * tenants of the 't' rows summed. 0 or -1 (errstr). */
typedef struct tenant_tally {
    uint64_t count;
    keybuf last;                 /* 't' enc(name) of the last one counted */
    char **names;                /* NULL: not wanted */
    size_t max;
    int too_many;
} tenant_tally;

static int tally_tenant(tenant_tally *t, const uint8_t *k, size_t kn) {
    size_t plen = kn - 4;        /* the row minus its be32(p) */
    if (t->last.len == plen && memcmp(t->last.data, k, plen) == 0)
        return 0;
    keybuf_reset(&t->last);
    if (keybuf_append(&t->last, k, plen) < 0)
        return -1;
    if (t->names && t->count >= t->max) {
        t->too_many = 1;
        return 0;
    }
    t->count++;
    if (!t->names)
        return 0;
    keybuf name;
    size_t used;
    keybuf_init(&name);
    int rc = keycodec_decode_enc(k + 1, plen - 1, &name, &used) < 0 ||
                     keybuf_append(&name, "", 1) < 0 ? -1 : 0;
    if (rc == 0 && !(t->names[t->count - 1] = strdup((const char *)name.data)))
        rc = -1;
    keybuf_free(&name);
    return rc;
}

static int usage_sum_range(view *v, const view_partset *ps, const keybuf *lo,
                           const keybuf *hi, view_usage *out, tenant_tally *tenants,
                           char *errstr, size_t es) {
    view_iter vi;
    int rc = 0;
    view_iter_open(v, OBJLOG_CF_STATS, hi, &vi);
    for (view_iter_seek(&vi, lo); rc == 0 && rocksdb_iter_valid(vi.it);
         rocksdb_iter_next(vi.it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(vi.it, &kn);
        if (!partset_has_row(ps, k, kn))
            continue;
        view_usage u;
        const char *val = rocksdb_iter_value(vi.it, &vn);
        rc = usage_decode(val, vn, &u, errstr, es);
        if (rc == 0)
            usage_add(out, &u);
        if (rc == 0 && tenants && tally_tenant(tenants, k, kn) < 0) {
            snprintf(errstr, es, "out of memory");
            rc = -1;
        }
    }
    if (view_iter_close(&vi, rc < 0 ? NULL : errstr, rc < 0 ? 0 : es) < 0)
        rc = -1;
    return rc;
}

view_rc view_tenant_usage(view *v, const char *tenant, const view_partset *ps,
                          view_usage *out, char *errstr, size_t es) {
    keybuf lo, hi;
    static const uint8_t past[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
    memset(out, 0, sizeof(*out));
    keybuf_init(&lo);
    keybuf_init(&hi);
    /* Its rows are 't' enc(tenant) be32(p): all below prefix ‖ FF x 5. */
    int rc = objlog_stats_tenant_prefix(&lo, tenant) < 0 ||
                     keybuf_append(&hi, lo.data, lo.len) < 0 ||
                     keybuf_append(&hi, past, sizeof(past)) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    else
        rc = usage_sum_range(v, ps, &lo, &hi, out, NULL, errstr, es);
    keybuf_free(&lo);
    keybuf_free(&hi);
    return rc < 0 ? VIEW_ERROR : VIEW_OK;
}

/* Rows of the stats CF whose key starts with the one byte tag: [tag, tag+1). */
static int tag_range(char tag, keybuf *lo, keybuf *hi) {
    uint8_t a = (uint8_t)tag, b = (uint8_t)(tag + 1);
    keybuf_init(lo);
    keybuf_init(hi);
    return keybuf_append(lo, &a, 1) < 0 || keybuf_append(hi, &b, 1) < 0 ? -1 : 0;
}

void view_names_free(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

view_rc view_global_usage(view *v, const view_partset *ps, view_usage *out,
                          uint64_t *tenants, char ***names, size_t max_names,
                          char *errstr, size_t es) {
    keybuf glo, ghi, tlo, thi;
    view_usage tsum;
    tenant_tally t = {.max = max_names};
    memset(out, 0, sizeof(*out));
    memset(&tsum, 0, sizeof(tsum));
    *tenants = 0;
    keybuf_init(&t.last);
    if (names) {
        *names = NULL;
        t.names = calloc(max_names ? max_names : 1, sizeof(*t.names));
    }
    int rc = (names && !t.names) || tag_range('g', &glo, &ghi) < 0 ||
                     tag_range('t', &tlo, &thi) < 0 ? -1 : 0;
    if (rc < 0)
        snprintf(errstr, es, "out of memory");
    /* One 'g' row per partition, one 't' row per tenant and partition
     * where it has a bucket: few, next to keys. The tenant rows are summed
     * only for their count (their sums are the 'g' rows'). */
    if (rc == 0)
        rc = usage_sum_range(v, ps, &glo, &ghi, out, NULL, errstr, es);
    if (rc == 0)
        rc = usage_sum_range(v, ps, &tlo, &thi, &tsum, &t, errstr, es);
    keybuf_free(&glo);
    keybuf_free(&ghi);
    keybuf_free(&tlo);
    keybuf_free(&thi);
    keybuf_free(&t.last);
    if (rc < 0 || t.too_many) {
        view_names_free(t.names, (size_t)t.count);
        return rc < 0 ? VIEW_ERROR : VIEW_TOO_MANY;
    }
    *tenants = t.count;
    if (names)
        *names = t.names;
    return VIEW_OK;
}

static uint64_t top_metric(const view_usage *u, view_top_by by) {
    return by == VIEW_TOP_OBJECTS ? u->objects
         : by == VIEW_TOP_VERSIONS ? u->versions : u->bytes;
}

/* 1 if a ranks before b: larger metric first, then bucket name. */
static int top_before(const view_top_entry *a, const view_top_entry *b,
                      view_top_by by) {
    uint64_t x = top_metric(&a->usage, by), y = top_metric(&b->usage, by);
    if (x != y)
        return x > y;
    return strcmp(a->bucket, b->bucket) < 0;
}

/* Inserts e (taking its bucket name) into the sorted top list of at most
 * limit entries; a name that does not make it is freed. */
static void top_insert(view_top *t, size_t limit, view_top_entry *e,
                       view_top_by by) {
    size_t i = t->n;
    while (i > 0 && top_before(e, &t->e[i - 1], by))
        i--;
    if (i >= limit) {
        free(e->bucket);
        return;
    }
    if (t->n == limit) {
        free(t->e[limit - 1].bucket);
        t->n--;
    }
    memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof(*t->e));
    t->e[i] = *e;
    t->n++;
}

/* The bucket name inside a 'b' row key ('b' be16(hash) enc(name)). */
static char *top_row_bucket(const uint8_t *k, size_t kn) {
    keybuf name;
    size_t used;
    keybuf_init(&name);
    if (kn < 3 || keycodec_decode_enc(k + 3, kn - 3, &name, &used) < 0 ||
        keybuf_append(&name, "", 1) < 0) {
        keybuf_free(&name);
        return NULL;
    }
    char *s = strdup((const char *)name.data);
    keybuf_free(&name);
    return s;
}

static int top_tenants(view *v, view_top *t, char *errstr, size_t es) {
    for (size_t i = 0; i < t->n; i++) {
        view_bucket b;
        view_rc rc = view_get_bucket(v, t->e[i].bucket, &b, errstr, es);
        if (rc == VIEW_ERROR)
            return -1;
        t->e[i].tenant = strdup(rc == VIEW_OK && b.record->tenant ? b.record->tenant : "");
        view_bucket_free(&b);
        if (!t->e[i].tenant) {
            snprintf(errstr, es, "out of memory");
            return -1;
        }
    }
    return 0;
}

view_rc view_top_buckets(view *v, const view_partset *ps, view_top_by by, size_t limit,
                         view_top *out, char *errstr, size_t es) {
    keybuf lo, hi;
    memset(out, 0, sizeof(*out));
    if (limit == 0)
        return VIEW_OK;
    out->e = calloc(limit, sizeof(*out->e));
    if (!out->e || tag_range('b', &lo, &hi) < 0) {
        if (out->e)
            keybuf_free(&lo), keybuf_free(&hi);
        snprintf(errstr, es, "out of memory");
        return VIEW_ERROR;
    }
    view_iter vi;
    int rc = 0;
    view_iter_open(v, OBJLOG_CF_STATS, &hi, &vi);
    for (view_iter_seek(&vi, &lo); rc == 0 && rocksdb_iter_valid(vi.it);
         rocksdb_iter_next(vi.it)) {
        size_t kn, vn;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(vi.it, &kn);
        if (!partset_has_row(ps, k, kn))
            continue;
        const char *val = rocksdb_iter_value(vi.it, &vn);
        view_top_entry e;
        memset(&e, 0, sizeof(e));
        rc = usage_decode(val, vn, &e.usage, errstr, es);
        if (rc == 0 && !(e.bucket = top_row_bucket(k, kn))) {
            snprintf(errstr, es, "stats row: bad bucket key");
            rc = -1;
        }
        if (rc == 0)
            top_insert(out, limit, &e, by);
    }
    if (view_iter_close(&vi, rc < 0 ? NULL : errstr, rc < 0 ? 0 : es) < 0)
        rc = -1;
    keybuf_free(&lo);
    keybuf_free(&hi);
    if (rc == 0)
        rc = top_tenants(v, out, errstr, es);
    if (rc < 0) {
        view_top_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}

void view_top_free(view_top *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->e[i].bucket);
        free(t->e[i].tenant);
    }
    free(t->e);
    t->e = NULL;
    t->n = 0;
}

/* ----------------------------------------------------------- prefix usage */

/* meta.size of a stored VersionRecord (absent = 0); -1 if corrupt. */
static int view_record_size(const uint8_t *val, size_t n, uint64_t *size) {
    Objlog__VersionRecord *r = objlog__version_record__unpack(NULL, n, val);
    if (!r)
        return -1;
    *size = r->meta ? r->meta->size : 0;
    objlog__version_record__free_unpacked(r, NULL);
    return 0;
}

void view_usage_page_free(view_usage_page *page) {
    for (size_t i = 0; i < page->n_groups; i++)
        free(page->groups[i].prefix.data);
    free(page->groups);
    free(page->after.data);
    memset(page, 0, sizeof(*page));
}

void view_usage_page_resume(const view_usage_page *page, view_usage_resume *r) {
    memset(r, 0, sizeof(*r));
    r->after = page->after.data;
    r->after_len = page->after.len;
    r->open_len = page->open_len;
    r->open_objects = page->open_objects;
    r->open_bytes = page->open_bytes;
    r->direct_objects = page->direct_objects;
    r->direct_bytes = page->direct_bytes;
    r->total_objects = page->total_objects;
    r->total_bytes = page->total_bytes;
}

/* The scan of one page: the listing skeleton plus the open group. */
typedef struct usage_scan {
    scan s;
    view_usage_page *out;
    int max_rows, max_prefixes;
    keybuf open;                 /* the open group's prefix; len 0 = none */
    keybuf last;                 /* the last key read */
} usage_scan;

/* A resume state this prefix/delimiter could have produced: the last key
 * is under the prefix, and the open group is that key's own rollup. */
static int usage_resume_valid(const view_usage_req *req, const keybuf *after) {
    const view_usage_resume *r = req->resume;
    if (r->after_len < req->prefix_len ||
        (req->prefix_len && memcmp(r->after, req->prefix, req->prefix_len) != 0))
        return 0;
    if (!r->open_len)
        return r->open_objects == 0 && r->open_bytes == 0;
    return view_rollup(after, req->prefix_len, req->delimiter,
                       req->delimiter_len) == r->open_len;
}

/* Moves the open group into the page's groups. -1 when out of memory. */
static int usage_close_group(usage_scan *u) {
    view_usage_page *o = u->out;
    view_usage_group *g = array_push(&o->groups, &o->n_groups, sizeof(*g));
    if (!g || bytes_set(&g->prefix, u->open.data, u->open.len) < 0) {
        if (g)
            o->n_groups--;
        return -1;
    }
    g->objects = o->open_objects;
    g->bytes = o->open_bytes;
    o->open_objects = o->open_bytes = 0;
    keybuf_reset(&u->open);
    return 0;
}

/* Counts the current row (key in u->s.key, rolling into cpl bytes). */
static int usage_count_row(usage_scan *u, size_t cpl) {
    view_usage_page *o = u->out;
    size_t vl;
    const char *val = rocksdb_iter_value(u->s.vi.it, &vl);
    uint64_t size;
    if (view_record_size((const uint8_t *)val, vl, &size) < 0) {
        snprintf(u->s.errstr, u->s.es, "corrupt version record in objects");
        return -1;
    }
    if (cpl && !u->open.len && keybuf_append(&u->open, u->s.key.data, cpl) < 0)
        return -1;
    if (cpl) {
        o->open_objects++;
        o->open_bytes += size;
    } else {
        o->direct_objects++;
        o->direct_bytes += size;
    }
    o->total_objects++;
    o->total_bytes += size;
    o->rows_scanned++;
    return keybuf_set(&u->last, &u->s.key);
}

/* The page loop. Each row first closes the open group if it does not
 * belong to it (the scan is past it, so it is complete), then is counted
 * unless a limit is reached: both limits stop with the row unread, so
 * is_truncated means one more row really exists. */
static int usage_scan_rows(usage_scan *u) {
    view_usage_page *o = u->out;
    while (rocksdb_iter_valid(u->s.vi.it)) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(u->s.vi.it, &kl);
        if (!scan_row_key(&u->s, k, kl)) {
            rocksdb_iter_next(u->s.vi.it); /* not a route key: not ours */
            continue;
        }
        size_t cpl = view_rollup(&u->s.key, u->s.prefix_len, u->s.delim,
                                 u->s.delim_len);
        int same = u->open.len && cpl == u->open.len &&
                   memcmp(u->s.key.data, u->open.data, cpl) == 0;
        if (u->open.len && !same) {
            if (usage_close_group(u) < 0)
                return -1;
            if (o->n_groups == (size_t)u->max_prefixes) {
                o->is_truncated = 1;
                return 0;
            }
        }
        if (o->rows_scanned == (uint64_t)u->max_rows) {
            o->is_truncated = 1;
            return 0;
        }
        if (usage_count_row(u, cpl) < 0)
            return -1;
        rocksdb_iter_next(u->s.vi.it);
    }
    /* end of the range: the open group is complete too */
    return u->open.len ? usage_close_group(u) : 0;
}

/* Seeds the counters and the position from req->resume. */
static int usage_start(usage_scan *u, const view_usage_req *req) {
    const view_usage_resume *r = req->resume;
    view_usage_page *o = u->out;
    o->direct_objects = r->direct_objects;
    o->direct_bytes = r->direct_bytes;
    o->total_objects = r->total_objects;
    o->total_bytes = r->total_bytes;
    o->open_objects = r->open_objects;
    o->open_bytes = r->open_bytes;
    if (keybuf_append(&u->open, r->after, r->open_len) < 0)
        return -1;
    keybuf_reset(&u->s.tmp);
    if (keycodec_route_key(&u->s.tmp, u->s.bucket, strlen(u->s.bucket), r->after,
                           r->after_len) < 0)
        return -1;
    return scan_start_at(&u->s, &u->s.tmp);
}

static void usage_scan_free(usage_scan *u) {
    scan_free(&u->s);
    keybuf_free(&u->open);
    keybuf_free(&u->last);
}

/* Runs the page; 0, or -1 (errstr filled unless out of memory). */
static int usage_run(usage_scan *u, const view_usage_req *req) {
    int r = req->resume ? usage_start(u, req) : 0;
    if (r < 0)
        return -1;
    view_iter_open(u->s.v, OBJLOG_CF_OBJECTS, &u->s.hi, &u->s.vi);
    view_iter_seek(&u->s.vi, &u->s.seek);
    if (req->resume && rocksdb_iter_valid(u->s.vi.it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(u->s.vi.it, &kl);
        if (bytes_cmp(k, kl, u->s.seek.data, u->s.seek.len) == 0)
            rocksdb_iter_next(u->s.vi.it); /* the last key read: exclusive */
    }
    r = usage_scan_rows(u);
    if (view_iter_close(&u->s.vi, u->s.errstr, u->s.es) < 0)
        return -1;
    if (r < 0 || !u->out->is_truncated)
        return r;
    /* a page that read nothing (it only closed the open group) resumes
     * where the previous one did */
    const keybuf *last = u->out->rows_scanned ? &u->last : NULL;
    const uint8_t *a = last ? last->data : req->resume->after;
    size_t an = last ? last->len : req->resume->after_len;
    u->out->open_len = u->open.len;
    return bytes_set(&u->out->after, a, an);
}

view_rc view_prefix_usage(view *v, const char *bucket, const view_usage_req *req,
                          view_usage_page *out, char *errstr, size_t es) {
    if (es)
        errstr[0] = '\0';
    memset(out, 0, sizeof(*out));
    if (req->max_rows < 1 || req->max_rows > VIEW_USAGE_MAX_ROWS ||
        req->max_prefixes < 1 || req->max_prefixes > VIEW_USAGE_MAX_PREFIXES)
        return VIEW_INVALID_ARGUMENT;
    view_rc rc = view_bucket_check(v, bucket, errstr, es);
    if (rc != VIEW_OK)
        return rc;
    usage_scan u = {.out = out, .max_rows = req->max_rows,
                    .max_prefixes = req->max_prefixes};
    keybuf_init(&u.open);
    keybuf_init(&u.last);
    if (scan_init(&u.s, v, bucket, req->prefix, req->prefix_len, req->delimiter,
                  req->delimiter_len, 0, errstr, es) < 0) {
        usage_scan_free(&u);
        return view_oom(errstr, es);
    }
    if (req->resume) {
        keybuf after;
        keybuf_init(&after);
        int ok = keybuf_append(&after, req->resume->after, req->resume->after_len) == 0
                     ? usage_resume_valid(req, &after) : -1;
        keybuf_free(&after);
        if (ok <= 0) {
            usage_scan_free(&u);
            return ok < 0 ? view_oom(errstr, es) : VIEW_INVALID_ARGUMENT;
        }
    }
    int r = usage_run(&u, req);
    usage_scan_free(&u);
    if (r < 0) {
        if (!errstr[0])
            view_oom(errstr, es);
        view_usage_page_free(out);
        return VIEW_ERROR;
    }
    return VIEW_OK;
}
